"""The speed targets this repository set MoNE against the dense model, and the checks that read
them off measured rows. Two sets, for two machines, kept in one place so that a threshold is stated
once: the benchmark's (`BENCHMARK`, `python -m mone.bench`: ViT-S/16 on the 2-core CPU, checked at
every batch measured; chapter 08 makes its claims from them) and the GPU report's (`report_targets`:
ViT-B/16 and ViViT-B/16x2, each read off the default-setting row of one report group).
"""
import dataclasses

from mone.bench import contenders
from mone.bench.contenders import DENSE, FULL, MATVIT, MONE


@dataclasses.dataclass(frozen=True)
class Target:
  """MoNE's `metric` at `e_c`, in `mode` ('forward' or 'train'), reaches `need`: measured >= need
  (for 'compile_s', lower + compile seconds, measured < need)."""
  mode: str
  e_c: float
  metric: str            # 'speedup', 'efficiency' (speed-up / FLOP ratio), 'efficiency_vs_matvit', 'compile_s'
  need: float
  id: str = ""           # the GPU report's name for it, in its JSON
  group: str = ""        # the GPU report's group whose default row it reads
  description: str = ""


# The benchmark's targets, all measured in one run: forward efficiency at e_c 0.3 and 0.5, a 2x
# training step at e_c 0.3, and MoNE at e_c 1.0 (the dense work plus routing) within 5% of dense.
BENCHMARK = (Target("forward", 0.3, "efficiency", 0.85), Target("forward", 0.5, "efficiency", 0.9),
             Target("train", 0.3, "speedup", 2.0), Target("forward", 1.0, "speedup", 0.95),
             Target("train", 1.0, "speedup", 0.95))


def report_targets(fams: dict) -> list:
  """The GPU report's targets; group names follow its plan's batch sizes (`mone.bench.groups`;
  tiny ones with --tiny)."""
  big, small = fams["image"].batches
  (vb,) = fams["video"].batches
  iv, vv = fams["image"].variant, fams["video"].variant
  step = lambda m: "forward" if m == "forward" else "training step"
  return [
      Target("forward", 0.3, "speedup", 2.0, "forward-e_c0.3-big", f"vit-forward-{big}",
             f"ViT-{iv} forward at e_c 0.3, batch {big}: speed-up >= 2.0x"),
      Target("forward", 0.3, "speedup", 1.6, "forward-e_c0.3-small", f"vit-forward-{small}",
             f"ViT-{iv} forward at e_c 0.3, batch {small}: speed-up >= 1.6x"),
      Target("forward", 0.5, "speedup", 1.5, "forward-e_c0.5-big", f"vit-forward-{big}-e_c",
             f"ViT-{iv} forward at e_c 0.5, batch {big}: speed-up >= 1.5x"),
      Target("train", 0.3, "speedup", 1.5, "train-e_c0.3-small", f"vit-train-{small}",
             f"ViT-{iv} training step at e_c 0.3, batch {small}: speed-up >= 1.5x"),
      Target("train", 0.3, "speedup", 1.5, "train-e_c0.3-big", f"vit-train-{big}",
             f"ViT-{iv} training step at e_c 0.3, batch {big}: speed-up >= 1.5x"),
      *[Target(m, 1.0, "speedup", 0.95, f"{m}-e_c1.0-{b}", f"vit-{m}-{b}-e_c",
               f"ViT-{iv} {step(m)} at e_c 1.0, batch {b}: within 5% of dense")
        for m, b in (("forward", big), ("forward", small), ("train", small))],
      *[Target(m, e, "efficiency_vs_matvit", 1.0, f"{m}-vs-matvit-e_c{e}-{b}", f"vit-{m}-{b}-e_c",
               f"ViT-{iv} {m} batch {b}: MoNE e_c {e} at least as efficient (speed-up / FLOP ratio) as MatViT's nearest-FLOP sub-model")
        for m, b in (("forward", big), ("forward", small), ("train", small)) for e in (0.3, 0.5)],
      Target("forward", 0.3, "speedup", 1.9, "vivit-forward-e_c0.3", f"vivit-forward-{vb}",
             f"ViViT-{vv} forward at e_c 0.3, batch {vb}: speed-up >= 1.9x"),
      Target("train", 0.3, "compile_s", 90.0, "vivit-train-compile", f"vivit-train-{vb}",
             f"ViViT-{vv} MoNE (e_c 0.3) training step compiled (lower + compile) in under 90 s"),
  ]


# ------------------------------------------------------------------------------------------------
# The benchmark's rows (mone.bench.timing.bench).

def check_targets(rows, workload=None) -> list[dict]:
  """One entry per (target of `BENCHMARK`, batch) found in rows: the measured value and whether
  it holds. speed-up >= 0.95 at e_c = 1.0 is "no more than 5% slower than the dense model".

  A target below e_c = 1.0 holds only if it also holds against the fastest full-width model
  of its group (`strict`): MoNE at e_c = 1.0 does the dense model's work plus routing, so when
  its median beats the dense row's, the dense median was inflated by noise or a worse chunk
  choice, and a ratio taken against it would flatter MoNE."""
  out = []
  for t in BENCHMARK:
    for r in rows:
      if (contenders.is_(r, MONE, t.e_c) and r["mode"] == t.mode
          and (workload is None or r["workload"] == workload)):
        strict = r[t.metric]
        if t.e_c < 1.0:
          same = [q for q in rows if (q["workload"], q["mode"], q["batch"]) == (r["workload"], t.mode, r["batch"])]
          full = min(q["median_ms"] for q in same if contenders.is_(q, DENSE) or contenders.is_(q, MONE, FULL))
          strict = full / r["median_ms"] / (r["flop_ratio"] if t.metric == "efficiency" else 1.0)
        out.append({"workload": r["workload"], "mode": t.mode, "batch": r["batch"], "e_c": t.e_c, "metric": t.metric,
                    "target": t.need, "measured": r[t.metric], "strict": strict,
                    "ok": bool(min(r[t.metric], strict) >= t.need)})
  return out


def targets_table(checks) -> str:
  """One line per target; where the fastest full-width model was faster than the dense row,
  the value against it follows in brackets."""
  def value(c):
    strict = c.get("strict", c["measured"])
    return f"{c['measured']:.2f}" + (f" [{strict:.2f} vs the fastest full-width model]" if strict < c["measured"] - 5e-3 else "")
  return "\n".join(f"{c['workload']:18s} {c['mode']:8s} batch {c['batch']:3d} e_c={c['e_c']:.1f}: {c['metric']} "
                   f"{value(c)} (target >= {c['target']:.2f}) {'OK' if c['ok'] else 'MISSED'}"
                   for c in checks)


# ------------------------------------------------------------------------------------------------
# The GPU report's rows (mone.bench.report): one per (group, model, e_c, setting).

def find_row(rows, group, model, e_c, setting="default"):
  """The report row of (group, model, e_c, setting), or None."""
  for r in rows:
    if (r["group"], r["model"], r["e_c"], r["setting"]) == (group, model, e_c, setting):
      return r
  return None


def check_report(rows, fams) -> list:
  """Every target of `report_targets`: measured value (default setting), met / missed, or why
  it was not measured; 'best' is the best value over the switch settings timed."""
  out = []
  for spec in report_targets(fams):
    group, e_c, metric, need = spec.group, spec.e_c, spec.metric, spec.need
    r = find_row(rows, group, MONE, e_c)
    t = {"id": spec.id, "description": spec.description, "group": group, "metric": metric, "target": need,
         "measured": None, "met": None}
    if r is None:
      t["status"] = "not measured: group not run"
    elif metric == "compile_s":
      if "compile_s" in r:
        t["measured"] = r["lower_s"] + r["compile_s"]
        t["met"] = t["measured"] < need
      else:
        t["status"] = f"not measured: {r.get('status')}"
    elif r.get("status") != "timed":
      t["status"] = f"not measured: {r.get('status')}"
    elif metric == "efficiency_vs_matvit":
      m = find_row(rows, group, MATVIT, e_c)
      if m is None or m.get("status") != "timed":
        t["status"] = "not measured: no timed MatViT row"
      else:
        t["measured"] = r["efficiency"] / m["efficiency"]
        t.update(mone_efficiency=r["efficiency"], matvit_efficiency=m["efficiency"], met=t["measured"] >= need)
    else:
      t["measured"] = r[metric]
      t["met"] = t["measured"] >= need
      others = [q[metric] for q in rows if (q["group"], q["model"], q["e_c"]) == (group, MONE, e_c)
                and q.get("status") == "timed" and q.get(metric) is not None]
      t["best"] = max(others) if others else None
    if t["met"] is not None:
      t["status"] = "met" if t["met"] else "missed"
    out.append(t)
  return out
