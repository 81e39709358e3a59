"""How long the small profile's runs take on this CPU, from the wall times of finished runs: what
`scripts/train_queue.py --list` shows, and the order `--order longest` trains in.
"""
import dataclasses

from mone import results
from mone.configs import schema
from mone.train import steps


def estimate_seconds(cfg: schema.TrainConfig, finished: list[dict]) -> float | None:
  """About how long cfg's run takes on the machine that trained the `finished` run files: its
  training GFLOPs at the fewest seconds per training GFLOP of the finished CPU runs of the same
  config at another seed or, without one, of the same config name and model kind; None without
  either. The fewest, because a wall time also counts the evaluations and any other program that
  shared the CPU; a run's wall time counts from its `timed_from_step` (0, or where a run of older
  code resumed: its last part only). Scaled from another config, a MoNE run at a lower e_c is
  underestimated: it spends more time per FLOP (narrower matmuls)."""
  timed = [m for m in finished if m["name"] == cfg.name and m["kind"] == cfg.kind
           and m.get("device", {}).get("kind") == "cpu" and _timed_from(m) < m["train_steps"]]
  twins = [m for m in timed if "seed" in m and m.get("config_hash") == results.config_hash(dataclasses.replace(cfg, seed=m["seed"]))]
  rates = [m["wall_time_s"] / (m["train_gflops"] * (1 - _timed_from(m) / m["train_steps"])) for m in twins or timed]
  return min(rates) * steps.train_gflops(cfg) if rates else None


def _timed_from(m: dict) -> int:
  """The step a run file's wall time counts from (0, or where a run of older code resumed)."""
  return m.get("timed_from_step", m.get("resumed_from_step", 0))


def recompute_seconds(runs, finished: list[dict]) -> dict:
  """How long retraining every planned run (`runs`: (label, config) pairs, as `plan.runs()`) takes on
  this CPU, as `-p recompute True` or the queue from scratch would: a run trained on the CPU and
  timed from step 0 counts its recorded wall time ('measured'); any other run (trained on a GPU,
  resumed by older code, or not trained yet) its `estimate_seconds` ('estimated'), or nothing where
  there is none ('unknown'). Wall times are as recorded: most runs had one of two cores."""
  by_hash = {m.get("config_hash"): m for m in finished}
  out = {"measured": 0.0, "estimated": 0.0, "runs_measured": 0, "runs_estimated": 0, "runs_unknown": 0}
  for _, cfg in runs:
    m = by_hash.get(results.config_hash(cfg))
    if m and (m.get("device") or {}).get("kind") == "cpu" and _timed_from(m) == 0 and m.get("wall_time_s"):
      out["measured"] += m["wall_time_s"]
      out["runs_measured"] += 1
    elif (estimate := estimate_seconds(cfg, finished)) is not None:
      out["estimated"] += estimate
      out["runs_estimated"] += 1
    else:
      out["runs_unknown"] += 1
  return out


def device_table(finished: list[dict]) -> str:
  """A Markdown table of where the finished runs were trained (`results.trained_where`: a run
  resumed on another device is its own row, 'H100 then cpu'): per device, the number of runs,
  their wall time in hours (as recorded: runs resumed by older code count their last part only)
  and the JAX versions, so a reader sees which comparisons cross devices."""
  if not finished:
    return "No run has finished yet.\n"
  rows = {}
  for m in finished:
    r = rows.setdefault(results.trained_where(m), {"runs": 0, "seconds": 0.0, "jax": set()})
    r["runs"] += 1
    r["seconds"] += m.get("wall_time_s") or 0.0
    r["jax"].add(m.get("versions", {}).get("jax", "?"))
  lines = ["| device | runs | wall time (h) | JAX |", "|---|---|---|---|"]
  lines += [f"| {name} | {r['runs']} | {r['seconds'] / 3600:.1f} | {', '.join(sorted(r['jax']))} |"
            for name, r in sorted(rows.items(), key=lambda kv: -kv[1]["runs"])]
  return "\n".join(lines) + "\n"
