"""How long the small profile's runs take on this CPU, from the wall times of finished runs: what
`scripts/train_queue.py --list` shows, the order `--order longest` trains in (`longest_first`), and
whether a run still fits before a deadline (`finishes_in_time`).
"""
import dataclasses
import json

from mone import flops, results
from mone.runs import experiments
from mone.configs import schema


def estimate_seconds(cfg: schema.TrainConfig, finished: list[dict]) -> float | None:
  """About how long cfg's run takes on the machine that trained the `finished` run files: its
  training GFLOPs at the fewest seconds per training GFLOP of the finished CPU runs of the same
  config at another seed or, without one, of the same config name and model kind; None without
  either. The fewest, because a wall time also counts the evaluations and any other program that
  shared the CPU; a run's wall time counts from its `timed_from_step` (0, or where a run of older
  code resumed: its last part only). Scaled from another config, a MoNE run at a lower e_c is
  underestimated: it spends more time per FLOP (narrower matmuls)."""
  timed = [m for m in finished if m.get("name") == cfg.name and m.get("kind") == cfg.kind
           and m.get("device", {}).get("kind") == "cpu" and _timed_from(m) < m["train_steps"]]
  twins = [m for m in timed if "seed" in m and m.get("config_hash") == results.config_hash(dataclasses.replace(cfg, seed=m["seed"]))]
  rates = [m["wall_time_s"] / (m["train_gflops"] * (1 - _timed_from(m) / m["train_steps"])) for m in twins or timed]
  return min(rates) * flops.train_gflops(cfg) if rates else None


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


def seconds_left(cfg, estimate: float | None, step: int | None) -> float | None:
  """The part of a run's `estimate` (its whole training) still to train: the share of its steps
  after `step`, the last one its workdir logged (`last_step`; None: not started). It resumes from
  its last checkpoint, at most checkpoint_every steps before that, so this can fall short by that much."""
  if estimate is None or step is None:
    return estimate
  return estimate * max(0.0, 1 - step / flops.num_train_steps(cfg))


# The estimates (`run_times.estimate_seconds`) take the fastest finished run of the config; the
# slower of two seeds trained alone took up to 1.09x as long (MatViT, seeds 3 and 4). Tests or a book
# build on the same CPU slow a run by a fifth and more: leave them room in --finish-within.
MARGIN = 1.1


def finishes_in_time(seconds: float | None, now: float, deadline: float | None) -> bool:
  """Whether a run with `seconds` of training left (None: no estimate) started at `now` finishes by
  `deadline` (seconds since the epoch; None: no deadline) with MARGIN to spare. A run that cannot
  finish is not started: a checkpoint outlives its machine only where the cache does, and a worker
  that stops in time leaves its core to what has to run at the end (the tests, the figures)."""
  if deadline is None:
    return True
  return seconds is not None and now + MARGIN * seconds <= deadline


def longest_first(runs: list, seconds: list, resumable: list | None = None) -> list:
  """`runs` in the order of their `seconds` of training left (same order; None: no estimate),
  longest first, those without an estimate before them and ties in plan order. With several
  workers the long runs then start first and the short ones fill in around them, instead of one
  long run starting last while the other workers have nothing left. Runs that resume from a
  checkpoint (`resumable`, same order) come before all others: the training a stopped queue left
  in its cache is then finished first, and the least of it is lost where a later machine comes
  without that cache."""
  key = [float("inf") if s is None else s for s in seconds]
  resumable = resumable or [False] * len(runs)
  return [runs[i] for i in sorted(range(len(runs)), key=lambda i: (not resumable[i], -key[i]))]


def shortest_first(runs: list, seconds: list) -> list:
  """`runs` in the order of their `seconds` of training left (same order; None: no estimate), the
  shortest first, those without an estimate after them and ties in plan order. The calibration's
  order: a stage fails at its first run that fails a rule of its own, so the cheap runs decide a
  failing stage before the long ones have spent their hours (a run its workdir has taken part of the
  way needs fewer seconds, and so moves up)."""
  key = [float("inf") if s is None else s for s in seconds]
  return [runs[i] for i in sorted(range(len(runs)), key=lambda i: key[i])]


def last_step(cfg) -> int | None:
  """The last step cfg's workdir logged (metrics.jsonl), or None where it has none."""
  lines = experiments.workdir(cfg) / "metrics.jsonl"
  return max((json.loads(l).get("step", 0) for l in lines.read_text().splitlines() if l.strip()), default=0) \
      if lines.exists() else None
