"""The GPU report's timing groups: every (contender, setting) of a group compiled once (lower and
compile seconds recorded; a switch's XLA options apply to that compilation alone), reused by later
groups of the same mode and batch, then timed round-robin in bfloat16 on whole batches, medians of
--reps, when the budget allows. A row's speed-up is against the fastest dense row of its group with
the same attention implementation.
"""
import os
import time

import numpy as np

from mone.bench import contenders, ops, timing, workloads
from mone.bench.contenders import DENSE
from mone.bench.switches import ALL_SWITCHES


def time_group(rep, g) -> str:
  """The timing group `g` of the report `rep` (a `mone.bench.report.Report`): compiles what the
  group needs (reusing earlier groups' runners), then times it round-robin; rows go to
  rep.doc['rows']."""
  inputs, labels = rep.batch_inputs(g.family, g.batch)
  rows, runners = [], []
  for model, e_c, label, values in entries(rep, g):
    wl = rep.workload(g.family, values)
    c = next((c for c in wl.contenders if c.name == model and c.e_c == e_c), None)
    row = {"group": g.name, "workload": wl.name, "mode": g.mode, "batch": g.batch, "model": model, "e_c": e_c,
           "setting": label, **{k: values.get(k) for k in ALL_SWITCHES}}
    rows.append(row)
    if c is None:
      row["status"] = "failed: no such contender"
      continue
    row.update(gflops=c.macs / 1e9, flop_ratio=wl.contenders[0].macs / c.macs, note=c.note)
    run = runner(rep, g, c, label, values, inputs, labels, row)
    if run:
      runners.append((row, run))
  if runners:
    time_rows(rep, g, runners)
  speedups(rows)
  rep.doc["rows"] += rows
  rep.log(report_table(rows))
  return f"done ({sum(r.get('status') == 'timed' for r in rows)} of {len(rows)} rows timed)"


def entries(rep, g) -> list:
  """(model, e_c, setting label, switch values) of every row of a timing group."""
  out = []
  for label, values in rep.settings(g.mode, g.switch_names, g.family):
    out += [(model, e_c, label, values) for model, e_c in (g.contenders if label == "default" else g.switched)]
  return out


def runner(rep, g, c, label, values, inputs, labels, row):
  """The compiled runner of (contender, setting) at the group's mode and batch: an earlier
  group's, or compiled now if the budget allows; None if skipped or failed (row['status'])."""
  key = (g.family, g.mode, g.batch, c.name, c.e_c, label)
  if key in rep.runners:
    run, info = rep.runners[key]
    row.update({k: v for k, v in info.items() if k != "compiled"})
    return run
  need = rep.predict_compile(g.family, g.mode)
  if need > rep.left():
    row["status"] = f"skipped: budget (compile predicted {need:.0f} s, {max(rep.left(), 0):.0f} s left)"
    return None
  options = rep.cmdbuf["options"] if values.get("command_buffers") == "off" else None
  rep.activity(f"compiling {g.name} {c.name} e_c={c.e_c} {label}")
  try:
    run, info = timing.compiled_runner(workloads.cast_contender(c, rep.dtype), g.mode, inputs, labels,
                                       compiler_options=options)
  except Exception as e:
    row["status"] = f"failed: {type(e).__name__}: {str(e)[:500]}"
    return None
  info.update(hlo_counts=ops.hlo_counts(info["compiled"].as_text()), compiled_in=g.name, compiler_options=options)
  rep.compiles.append({"family": g.family, "mode": g.mode, "lower_s": info["lower_s"], "compile_s": info["compile_s"]})
  row.update({k: v for k, v in info.items() if k != "compiled"})
  rep.runners[key] = (run, info)
  return run


def time_rows(rep, g, runners):
  """Times (row, runner) pairs round-robin, after one warm round that says whether --reps rounds
  fit the budget; fills each row's medians and quartiles, or marks it skipped."""
  rep.activity(f"timing {g.name}")
  t0 = time.perf_counter()
  for _, r in runners:  # one warm round, which also says how long a round takes
    r()
  round_s = time.perf_counter() - t0
  if rep.reps * round_s > rep.left():
    for row, _ in runners:
      row["status"] = f"skipped: budget ({rep.reps} rounds of {round_s:.2f} s, {max(rep.left(), 0):.0f} s left)"
    return
  load = os.getloadavg()[0]
  times = timing.time_round_robin([r for _, r in runners], rep.reps, warmup=0)
  for (row, _), t in zip(runners, times):
    row.update(status="timed", median_ms=float(np.median(t)) * 1e3, p25_ms=float(np.percentile(t, 25)) * 1e3,
               p75_ms=float(np.percentile(t, 75)) * 1e3, reps=len(t), load_1m=[load, os.getloadavg()[0]])


def speedups(rows):
  """speedup = the fastest timed dense row of the group with the same attention / the row's
  median; efficiency = speedup / flop_ratio."""
  for r in rows:
    if r.get("status") != "timed":
      continue
    dense = [q["median_ms"] for q in rows if contenders.is_(q, DENSE) and q.get("status") == "timed"
             and q.get("attention") == r.get("attention")]
    base = min(dense) if dense else None
    r["baseline_ms"] = base
    r["speedup"] = base / r["median_ms"] if base else None
    r["efficiency"] = r["speedup"] / r["flop_ratio"] if base else None


def report_table(rows) -> str:
  """The report's rows of one group, one line each (the benchmark's rows: `timing.table`)."""
  lines = [f"{'group':22s}{'model':8s}{'e_c':>5s}  {'setting':24s}{'median ms':>10s}{'speed-up':>9s}"
           f"{'FLOP ratio':>11s}{'compile s':>10s}  status"]
  for r in rows:
    e_c = "" if r["e_c"] is None else f"{r['e_c']:.1f}"
    ms = f"{r['median_ms']:10.2f}" if r.get("median_ms") is not None else f"{'':10s}"
    sp = f"{r['speedup']:9.2f}" if r.get("speedup") is not None else f"{'':9s}"
    fr = f"{r['flop_ratio']:11.2f}" if r.get("flop_ratio") is not None else f"{'':11s}"
    cs = r.get("lower_s", 0) + r.get("compile_s", 0)
    comp = f"{cs:10.1f}" if "compile_s" in r else f"{'':10s}"
    lines.append(f"{r['group']:22s}{r['model']:8s}{e_c:>5s}  {r['setting']:24s}{ms}{sp}{fr}{comp}  {r.get('status', '')[:60]}")
  return "\n".join(lines)
