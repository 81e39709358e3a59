"""The GPU report: every GPU speed path of MoNE checked against its reference and timed, in one
process that fits one call of a lent GPU machine (8 minutes on an H100, compilation included).

  python -m mone.bench --report [--tiny] [--json PATH] [--budget-s 420] [--groups NAME ...] [--switches NAME ...]
  make gpu-report                       # on the lent GPU machine, with its own python3:
  make gpu-report PY_REPORT=python3 REPORT_ARGS="--json $OUT/gpu-report.json"

This module is the runner: it runs the plan (`mone.bench.groups`) a group at a time (`correctness`,
the timing `rows`, the per-operation `ops`), reads the `targets` and writes the `summary`. Work that
would not fit --budget-s is recorded as "skipped: budget"; a watchdog ends the process at
--hard-limit-s, recording what it was doing. The JSON (results/bench/gpu-report-<device>.json) is
written atomically after every group, so a killed run keeps all it measured. --tiny runs the same
code on the CPU with tiny models: a check of the machinery, not a measurement.
"""
import dataclasses
import os
import re
import sys
import threading
import time
from pathlib import Path

import flax
import jax
import jax.numpy as jnp
import jaxlib

from mone import results
from mone.bench import correctness, ops, rows, summary, workloads
from mone.bench.groups import COMPILE_GUESS_S, Group, families, plan
from mone.bench.switches import ALL_SWITCHES, describe, probe_command_buffers, switches
from mone.bench.targets import check_report, find_row


def device_slug(kind: str) -> str:
  s = re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")
  return s.removeprefix("nvidia-") or "device"


def default_json(tiny: bool):
  slug = device_slug(jax.devices()[0].device_kind)
  if tiny:
    return results.REPO / ".cache" / "bench" / f"gpu-report-tiny-{slug}.json"
  return results.results_root() / "bench" / f"gpu-report-{slug}.json"


class Report:
  """State of one report run: the JSON document, compiled runners kept for later groups, timing."""

  def __init__(self, args, machine: dict, log=print):
    self.args, self.log, self.t0 = args, log, time.monotonic()
    self.tiny = bool(args.tiny)
    self.backend = jax.default_backend()
    if not self.tiny and self.backend != "gpu":
      raise ValueError(f"the full report needs a GPU (JAX backend is {self.backend!r}); pass --tiny for the CPU check")
    self.budget_s = float(args.budget_s)
    if self.budget_s <= 0:
      raise ValueError(f"--budget-s must be > 0 seconds, got {args.budget_s}")
    # The budget and the hard limit both count from the report's start, after imports.
    self.hard_limit_s = args.hard_limit_s if args.hard_limit_s is not None else (None if self.tiny else self.budget_s + 30)
    self.reps = args.reps if args.reps is not None else (2 if self.tiny else 10)
    self.dtype = jnp.bfloat16
    self.fams = families(self.tiny)
    self.groups = plan(self.fams, self.tiny)
    names = [g.name for g in self.groups]
    unknown = sorted(set(args.groups or ()) - set(names))
    if unknown:
      raise ValueError(f"--groups: unknown group(s) {unknown}; the groups are {names}")
    self.selected = set(args.groups or names)
    self.switches = switches(self.backend)
    flip = getattr(args, "switches", None)
    if flip is not None and not set(flip) <= set(ALL_SWITCHES):
      raise ValueError(f"--switches: unknown switch(es) {sorted(set(flip) - set(ALL_SWITCHES))}; the switches are {list(ALL_SWITCHES)}")
    self.flip = set(ALL_SWITCHES if flip is None else flip)
    self.cmdbuf = probe_command_buffers()
    self.lock = threading.Lock()
    self.workloads, self.inputs, self.runners, self.compiles = {}, {}, {}, []
    self.path = str(args.json or default_json(self.tiny))
    prov = results.provenance()
    self.doc = {
        "report": "mone GPU report (mone.bench.report)", "tiny": self.tiny, "complete": False,
        "args": recorded_args(args),
        "machine": machine, **prov, "versions": {**prov["versions"], "jaxlib": jaxlib.__version__, "flax": flax.__version__},
        "code": machine.get("code"), "budget_s": self.budget_s, "hard_limit_s": self.hard_limit_s,
        "reps": self.reps, "dtype": "bfloat16",
        "matmul_precision": {"float32_correctness": "highest",
                             "timing": str(jax.config.jax_default_matmul_precision or "default")},
        "compilation_cache_dir": jax.config.jax_compilation_cache_dir or None,
        "switches": [describe(s, self.cmdbuf) for s in self.switches],
        "families": {k: dataclasses.asdict(f) for k, f in self.fams.items()},
        "plan": names, "groups": {n: {"status": "pending" if n in self.selected else "not selected (--groups)"} for n in names},
        "correctness": [], "rows": [], "op_summary": {"method": ops.OP_SUMMARY_METHOD.format(runs=3), "rows": []},
        "targets": [], "summary": [], "elapsed_s": 0.0, "aborted": None,
    }

  # -- bookkeeping

  def elapsed(self) -> float:
    return time.monotonic() - self.t0

  def left(self) -> float:
    return self.budget_s - self.elapsed()

  def save(self, complete=False):
    with self.lock:
      self.doc["elapsed_s"] = self.elapsed()
      self.doc["complete"] = complete
      self.doc["targets"] = check_report(self.doc["rows"], self.fams)
      self.doc["summary"] = summary.lines(self.doc)
      self.doc["machine"]["peak_rss_mib"] = results.peak_rss_mib()
      results.atomic_write_json(self.path, self.doc)

  def available(self, name: str) -> bool:
    return any(s["name"] == name and s["available"] and not s.get("disabled") for s in self.doc["switches"])

  def disable(self, name: str, why: str):
    """Times every later group with switch `name` at its reference value (its fast path broke)."""
    for s in self.doc["switches"]:
      if s["name"] == name:
        s["disabled"] = why
    self.log(f"switch {name} disabled for timing: {why}")

  def settings(self, mode: str, names=ALL_SWITCHES, family: str = "image") -> list:
    """(label, values) of the default setting and of each available switch in `names` (and in
    --switches) flipped alone, for one mode of one family. values: switch name -> value, for the
    available switches of the family (a disabled one at its reference value)."""
    mine = [s for s in self.switches if family in s.families]
    live = [s for s in mine if self.available(s.name)]
    disabled = [s for s in mine if any(d["name"] == s.name and d.get("disabled") for d in self.doc["switches"])]
    # A disabled switch stays at its reference value (left out, a config field would be 'auto': the fast path).
    default = {s.name: s.fast for s in live} | {s.name: s.reference for s in disabled}
    out = [("default", default)]
    for s in live:
      if s.name in names and s.name in self.flip and mode in s.modes:
        out.append((f"{s.name}={s.reference}", {**default, s.name: s.reference}))
    return out

  def workload(self, family: str, values: dict):
    """The family's workload (float32) with the config switches of `values`, sharing parameters."""
    fam = self.fams[family]
    fields = tuple(sorted((s.config_field, values[s.name]) for s in self.switches
                          if s.kind == "config" and s.name in values))
    key = (family, fields)
    if key not in self.workloads:
      base = next((w for (f, _), w in self.workloads.items() if f == family), None)
      kw = dict(fam.overrides) | dict(fields) | {"params": base.params if base else None}
      if family == "video":
        self.workloads[key] = workloads.video_workload(fam.variant, (0.3, 0.5, 1.0), fam.num_frames, **kw)
      else:
        self.workloads[key] = workloads.image_workload(fam.variant, (0.3, 0.5, 1.0), with_masked=False, **kw)
    return self.workloads[key]

  def batch_inputs(self, family: str, batch: int):
    if (family, batch) not in self.inputs:
      x, y = self.workload(family, {}).make_inputs(batch)
      self.inputs[family, batch] = (x.astype(self.dtype), y)
    return self.inputs[family, batch]

  def predict_compile(self, family: str, mode: str) -> float:
    seen = [c["lower_s"] + c["compile_s"] for c in self.compiles if (c["family"], c["mode"]) == (family, mode)]
    if seen:
      return max(seen)
    return 0.0 if self.tiny else COMPILE_GUESS_S.get((family, mode), 60)

  # -- the watchdog

  def start_watchdog(self):
    if self.hard_limit_s is None:
      return None
    timer = threading.Timer(max(self.hard_limit_s - self.elapsed(), 0.0), self.abort)
    timer.daemon = True
    timer.start()
    return timer

  def abort(self, exit=os._exit):
    """At the hard limit: records what was running, writes the JSON, ends the process."""
    with self.lock:
      self.doc["aborted"] = {"at_s": self.elapsed(), "during": self.doc.get("activity"),
                             "activity_s": self.elapsed() - self.doc.get("activity_since", 0.0)}
    self.log(f"[{self.elapsed():7.1f} s] hard limit {self.hard_limit_s} s reached during {self.doc.get('activity')}: "
             f"stopping (JSON written)")
    self.save()
    sys.stdout.flush()
    exit(3)

  def activity(self, what: str):
    with self.lock:
      self.doc["activity"], self.doc["activity_since"] = what, self.elapsed()

  # -- groups

  def run(self):
    watchdog = self.start_watchdog()
    self.log(f"GPU report on {self.doc['machine']['device']} (jax {jax.__version__}, code {self.doc['code']}), "
             f"budget {self.budget_s:.0f} s, {self.reps} reps -> {self.path}")
    self.log("switches: " + "; ".join(f"{s['name']}: {s['how']}" for s in self.doc["switches"]))
    self.save()
    for i, g in enumerate(self.groups):
      if g.name not in self.selected:
        continue
      status = self.doc["groups"][g.name]
      status["started_s"] = self.elapsed()
      if self.left() <= 0:
        status["status"] = "skipped: budget"
      else:
        try:
          run = {"correctness": correctness.check, "timing": rows.time_group, "op_summary": Report.op_summary}[g.kind]
          status["status"] = run(self, g)
        except Exception as e:  # one broken path must not cost the rest of the call
          status["status"] = f"failed: {type(e).__name__}: {str(e)[:500]}"
      status["finished_s"] = self.elapsed()
      self.evict(i)
      self.activity("between groups")
      self.save()
      self.log(f"[{self.elapsed():7.1f} s] {g.name}: {status['status']}")
    if watchdog:
      watchdog.cancel()
    self.save(complete=True)
    self.log("\n".join(self.doc["summary"]))
    self.log(f"wrote {self.path}")
    return self.doc

  def needs(self, g: Group) -> set:
    """The runner keys (family, mode, batch, model, e_c, setting) a group uses."""
    if g.kind == "timing":
      return {(g.family, g.mode, g.batch, m, e, label) for m, e, label, _ in rows.entries(self, g)}
    if g.kind == "op_summary":
      src = {h.name: h for h in self.groups}
      return {(src[n].family, src[n].mode, src[n].batch, m, e, "default") for n, m, e in g.sources}
    return set()

  def evict(self, i: int):
    """Drops the compiled runners no later selected group reuses (their device memory)."""
    keep = set().union(*(self.needs(g) for g in self.groups[i + 1:] if g.name in self.selected))
    for key in list(self.runners):
      if key not in keep:
        del self.runners[key]

  def contender(self, family, model, e_c, values, dtype):
    wl = self.workload(family, values)
    c = next((c for c in wl.contenders if c.name == model and c.e_c == e_c), None)
    if c is None:
      raise ValueError(f"{wl.name} has no contender {model} at e_c={e_c}")
    return workloads.cast_contender(c, dtype)

  def op_summary(self, g: Group) -> str:
    """The op-summary group: profiles the default-setting runners of its sources (`ops.op_summary`)."""
    out = self.doc["op_summary"]["rows"]
    src = {h.name: h for h in self.groups}
    for name, model, e_c in g.sources:
      h = src[name]
      entry = self.runners.get((h.family, h.mode, h.batch, model, e_c, "default"))
      row = {"group": name, "mode": h.mode, "batch": h.batch, "model": model, "e_c": e_c, "setting": "default"}
      if entry is None:
        row["status"] = "not measured: no compiled runner (its group was skipped, failed or not selected)"
      elif self.left() <= 0:
        row["status"] = "skipped: budget"
      else:
        self.activity(f"profiling {name} {model} e_c={e_c}")
        try:
          row.update(ops.op_summary(entry[0], entry[1]["compiled"]), status="measured")
          timed = find_row(self.doc["rows"], name, model, e_c)
          row["wall_median_ms"] = timed.get("median_ms") if timed else None
        except Exception as e:
          row["status"] = f"failed: {type(e).__name__}: {str(e)[:300]}"
      out.append(row)
      self.save()
    self.log(ops.op_table(out))
    return f"done ({sum(r['status'] == 'measured' for r in out)} of {len(out)} profiled)"


def recorded_args(args) -> dict:
  """The command-line arguments as the JSON records them (a path in the repository relative to it)."""
  out = {k: v for k, v in vars(args).items()
         if k in ("report", "tiny", "json", "budget_s", "hard_limit_s", "groups", "switches", "reps")}
  try:
    out["json"] = str(Path(args.json).resolve().relative_to(results.REPO)) if args.json else None
  except ValueError:
    pass
  return out


def run(args, machine: dict, log=print) -> dict:
  """The report of parsed command-line arguments (mone.bench.cli)."""
  return Report(args, machine, log).run()
