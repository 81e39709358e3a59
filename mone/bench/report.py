"""The GPU report: every GPU speed path of MoNE checked against its reference and timed, in one
process that fits one call of a lent GPU machine (8 minutes on an H100, compilation included).

  python -m mone.bench --report [--tiny] [--json PATH] [--budget-s 420] [--groups NAME ...] [--switches NAME ...]
  make gpu-report                       # on the lent GPU machine, with its own python3:
  make gpu-report PY_REPORT=python3 REPORT_ARGS="--json $OUT/gpu-report.json"

What it does, most important first (`plan`), one group at a time:

1. correctness: each GPU-specific path against the reference path it replaces, on forward outputs
   and on every parameter gradient, in float32 (matmuls at precision 'highest': JAX's GPU default
   may use TF32) and in bfloat16, for the dense ViT and MoNE at e_c 0.3 (a 2-layer model of the
   timed geometry: the paths act per layer). The paths are the `switches`: the attention
   implementation ('cudnn' on a GPU, 'dot_product' elsewhere, against 'xla', today's reference
   attention), the gradient barrier ('off' against 'on', today's `layers.materialize_grad`
   conditional in every block's backward) and the fused nested-MLP kernel (config mlp 'pallas',
   `mone.models.fused_mlp`, against 'xla') and the scanned encoder (config layer_loop 'scan',
   `mone.models.layers.run_blocks`, against 'unroll'). A fast path that fails to run, or passes no bfloat16
   check, is timed no further: later groups use its reference value (the switch is marked 'disabled').
2. timing: ViT-B/16 forward at batch 256 and 64 and its training step at 64 and 256, dense vs
   MoNE e_c 0.3, in the default setting (every switch at its GPU value) and with each switch
   turned back to its reference value alone (XLA's command buffers are a compiler option of one
   compilation: `.lower(...).compile(compiler_options)`); then the per-operation summary; then MoNE
   at e_c 0.5 and 1.0 and MatViT's sub-models of the nearest FLOPs (default setting); then
   ViViT-B/16x2 (16 frames, batch 8) forward and its training step, by default with its encoder
   scanned (the unrolled training step outlasted 200 s of compilation) and with it unrolled
   (the scan is the video family's default alone: `Switch.families`). bfloat16, whole batches,
   contenders of a group timed round-robin (`timing.time_round_robin`), medians of --reps (10).
   A row's speed-up is against the fastest dense row of its group with the same attention
   implementation. Every compiled function's lower and compile times are recorded.
3. the per-operation summary (dense and MoNE e_c 0.3, forward and training step at the small
   batch): a `jax.profiler` trace of a few runs, read in-process with `jax.profiler.ProfileData`
   (no TensorBoard), every device event matched to its HLO instruction in the compiled module and
   classified by what it computes (`KINDS`; `classify`).
4. targets (`target_specs`) and a short summary, measured / met / missed.

Budget: before each group and each compilation the elapsed time is checked against --budget-s;
work that would not fit is recorded as "skipped: budget" instead of being started. A watchdog
ends the process at --hard-limit-s (default budget + 30 s; both count from the report's start,
after imports), recording what it was doing (e.g. a compilation that never finished). The JSON
is written atomically after every group, so a killed run still leaves everything it measured.
One progress line per group goes to stdout; the summary is printed last.

--tiny runs the same code paths on the CPU with tiny one-layer models (ViT tiny/8 at batch 2, a two-layer
4-frame tiny ViViT forward; no large-batch groups, training sweep or ViViT training step, which
repeat those paths), 2 repetitions: a check of the machinery, not a measurement. --groups runs a
subset (e.g. what a first call had to skip), --switches flips only the switches named.

The JSON (default results/bench/gpu-report-<device>.json; .cache/bench/ with --tiny):
machine, versions (jax, jaxlib, flax, ...), code (git commit, '+dirty'), matmul_precision,
switches (each with whether and how it is switchable here), plan and groups (status and
elapsed seconds of each), correctness, rows (one per timed or skipped contender), op_summary,
targets, summary, complete, elapsed_s, aborted.
"""
import dataclasses
import glob
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from mone import results
from mone.bench import timing, workloads
from mone.models import config

# ------------------------------------------------------------------------------------------------
# The speed switches.

@dataclasses.dataclass(frozen=True)
class Switch:
  """One speed path: its value in the default (fast) setting and the reference value it is
  compared against. kind: 'config' (a field of the model config), 'compiler' (XLA options of
  one compilation) or 'none' (the path does not exist yet: listed, never timed)."""
  name: str
  fast: str | None
  reference: str | None
  modes: tuple        # the modes it can change ('train' only: a backward-pass path)
  kind: str
  note: str
  field: str | None = None  # kind 'config': the model config field it sets, if not its name
  # The families whose default setting takes `fast` (elsewhere the config's own default stays,
  # and the switch is never flipped there).
  families: tuple = ("check", "image", "video")

  @property
  def config_field(self) -> str:
    return self.field or self.name


def switches(backend: str) -> tuple:
  """The speed switches, in the order their variants are compiled (most telling first)."""
  gpu = backend == "gpu"
  return (
      Switch("attention", "cudnn" if gpu else "dot_product", "xla", ("forward", "train"), "config",
             "attention implementation: jax.nn.dot_product_attention (cuDNN's fused kernel on a GPU) "
             "against the reference attention (layers.attention)"),
      Switch("grad_barrier", "off", "on", ("train",), "config",
             "layers.materialize_grad's conditional in every block's backward: 'on' (the CPU's "
             "default) or none"),
      # XLA:CPU accepts the option and has no command buffers: off a GPU it is compiled in forward
      # groups only, to exercise the path, and changes nothing.
      Switch("command_buffers", "on", "off", ("forward", "train") if gpu else ("forward",), "compiler",
             "XLA:GPU command buffers (CUDA graphs) for the compiled step; 'off' passes "
             "COMMAND_BUFFERS_OFF as compiler options of that compilation alone"
             + ("" if gpu else " (no effect on this backend)")),
      # Triton on a GPU; Pallas's interpret mode on the CPU (slow: exercises the path only).
      Switch("fused_mlp", "pallas", "xla", ("forward", "train"), "config",
             "each group's MLP as one Pallas kernel keeping the 4D-wide hidden layer on chip "
             "(mone.models.fused_mlp; model config mlp='pallas') against the XLA expression ('xla')"
             + ("" if gpu else " (interpret mode on this backend)"), field="mlp"),
      # Compile time: the ViViT training step outlasted 200 s unrolled. Scanned only where that
      # is the problem (and in the correctness check), until its run-time cost is measured.
      Switch("layer_loop", "scan", "unroll", ("forward", "train"), "config",
             "the encoder's blocks as one jax.lax.scan over their stacked weights (one block compiled; "
             "mone.models.layers.run_blocks) against one traced block per layer", families=("check", "video")),
  )


# Ways to turn XLA's command buffers off for one compilation, tried in order: the first that
# the installed JAX and XLA accept is used (`probe_command_buffers`).
COMMAND_BUFFERS_OFF = ({"xla_gpu_enable_command_buffer": ""}, {"xla_gpu_graph_min_graph_size": 1 << 30})


def probe_command_buffers() -> dict:
  """Whether command buffers can be switched per compilation here: compiles a tiny function
  with each candidate of COMMAND_BUFFERS_OFF. Returns {'available', 'options', 'errors'}."""
  lowered = jax.jit(lambda x: jnp.sin(x) + 1).lower(jnp.ones(4))
  errors = []
  for options in COMMAND_BUFFERS_OFF:
    try:
      lowered.compile(options)
      return {"available": True, "options": options, "errors": errors}
    except Exception as e:  # an older JAX without compiler_options, or XLA without the flag
      errors.append(f"{options}: {type(e).__name__}: {str(e)[:200]}")
  return {"available": False, "options": None, "errors": errors}


def config_fields(family: str) -> set:
  return {f.name for f in dataclasses.fields(config.ViViTConfig if family == "video" else config.ViTConfig)}


# ------------------------------------------------------------------------------------------------
# What is run: workloads and the plan.

@dataclasses.dataclass(frozen=True)
class Family:
  """A model family of the report: how to build its workload and its batch sizes."""
  name: str             # 'image', 'video' or 'check' (the correctness model)
  variant: str
  batches: tuple        # (large, small) for images
  overrides: tuple = ()  # extra config fields, as (key, value) pairs
  num_frames: int = 0


def families(tiny: bool) -> dict:
  if tiny:  # one layer each (two for the video's scanned encoder): compiling is nearly all of a tiny run's time
    one = (("depth", 1),)
    out = [Family("image", "tiny/8", (4, 2), one), Family("video", "tiny/8x2", (2,), (("depth", 2),), num_frames=4),
           Family("check", "tiny/8", (2,), one + (("head_zeroinit", False),))]
  else:
    # The correctness model: ViT-B/16's geometry (width, heads, tokens) at depth 2, classifier
    # not zero-initialised (a zero classifier gives every layer below it a zero gradient).
    out = [Family("image", "B/16", (256, 64)), Family("video", "B/16x2", (8,), num_frames=16),
           Family("check", "B/16", (2,), (("depth", 2), ("head_zeroinit", False)))]
  return {f.name: f for f in out}


@dataclasses.dataclass(frozen=True)
class Group:
  """One unit of the report, timed and saved as a whole. contenders: (model, e_c) pairs timed
  in the default setting; switched: those also timed with each of `switch_names` flipped."""
  name: str
  kind: str                  # 'correctness', 'timing' or 'op_summary'
  family: str = ""
  mode: str = ""
  batch: int = 0
  contenders: tuple = ()
  switched: tuple = ()
  switch_names: tuple = ()
  sources: tuple = ()        # op_summary: the (group, model, e_c) runners it profiles


CORE = (("dense", None), ("mone", 0.3))
E_C_SWEEP = (("dense", None), ("mone", 0.3), ("mone", 0.5), ("mone", 1.0), ("matvit", 0.3), ("matvit", 0.5))
ALL_SWITCHES = ("attention", "grad_barrier", "command_buffers", "fused_mlp", "layer_loop")


def plan(fams: dict, tiny: bool = False) -> list:
  """The groups, most important first. tiny: one group of each kind (the same code paths, a
  fraction of the compilations): no large-batch groups, no training sweep, no ViViT training."""
  big, small = fams["image"].batches
  (vb,) = fams["video"].batches
  g = lambda mode, b, suffix="": f"vit-{mode}-{b}{suffix}"
  core = lambda mode, b: Group(g(mode, b), "timing", "image", mode, b, CORE, CORE, ALL_SWITCHES)
  sweep = lambda mode, b: Group(g(mode, b, "-e_c"), "timing", "image", mode, b, E_C_SWEEP)
  groups = [
      Group("correctness", "correctness", "check"),
      core("forward", big), core("forward", small), core("train", small),
      Group("op-summary", "op_summary", "image", batch=small,
            sources=tuple((g(m, small), model, e_c) for m in ("forward", "train") for model, e_c in CORE)),
      core("train", big),
      sweep("forward", big), sweep("forward", small), sweep("train", small),
      Group(f"vivit-forward-{vb}", "timing", "video", "forward", vb,
            (("dense", None), ("mone", 0.3), ("mone", 0.5), ("mone", 1.0)), CORE, ("attention", "layer_loop")),
      Group(f"vivit-train-{vb}", "timing", "video", "train", vb, CORE, CORE, ("layer_loop",)),
  ]
  if tiny:
    large = {f"vit-forward-{big}", f"vit-train-{big}", f"vit-forward-{big}-e_c", f"vit-train-{small}-e_c",
             f"vivit-train-{vb}"}
    groups = [g for g in groups if g.name not in large]
  return groups


# Compile-time guesses (seconds) for a kind of function not compiled yet in this run; after the
# first, the longest seen of its kind is used. The ViViT training step outlasted 200 s on an H100
# before (book/speed_notes.md), so its guess is the target it should meet.
COMPILE_GUESS_S = {("check", "train"): 10, ("image", "forward"): 20, ("image", "train"): 60,
                   ("video", "forward"): 30, ("video", "train"): 90}


# ------------------------------------------------------------------------------------------------
# The per-operation summary: a profiler trace, read in-process, classified from the HLO.

KINDS = ("matmul", "attention", "gather/scatter/sort", "elementwise/normalisation", "other")
# Python functions whose operations count as routing (mone.models.routing, nested.route/ungroup).
ROUTING_FUNCTIONS = {"route", "ungroup", "expert_preferred_routing", "group_permutation", "random_router_probs"}
DATA_MOVEMENT = {"copy", "transpose", "concatenate", "slice", "dynamic-slice", "dynamic-update-slice", "pad",
                 "reshape", "bitcast", "broadcast", "tuple", "get-tuple-element", "parameter", "constant",
                 "copy-start", "copy-done", "iota", "reverse"}
OP_SUMMARY_METHOD = (
    "jax.profiler trace of {runs} runs of each compiled function of the default setting (XLA runs it without "
    "command buffers while profiling: xla_enable_command_buffers_during_profiling is false by default), read in-process with jax.profiler.ProfileData (no TensorBoard); each device event's HLO "
    "instruction (its 'hlo_op' statistic) is classified from the compiled module's HLO text: cuDNN "
    "attention calls and every operation traced inside a function named *attention* -> attention; "
    "fusions holding a dot or a cuBLAS/cuDNN GEMM, and Triton calls (the fused MLP kernel) -> matmul; gather, scatter, sort, top-k and the "
    "routing functions (route, ungroup, expert_preferred_routing, group_permutation) -> "
    "gather/scatter/sort; pure data movement (copies, transposes, slices, concatenations), loops, "
    "conditionals and unmatched events -> other; the rest -> elementwise/normalisation. Events "
    "without an HLO instruction are classified by kernel name (gemm/xmma/cutlass: matmul; fmha/flash: "
    "attention; sort/gather/scatter: gather/scatter/sort).")

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition|true_computation|false_computation|"
                    r"branch_computations)=\{?([%\w.\-, ]+)\}?")


def _opcode(rhs: str) -> str:
  """The opcode of an HLO instruction's right-hand side ('bf16[2,3]{1,0} fusion(...), ...')."""
  if rhs.startswith("("):  # a tuple shape: skip to its closing parenthesis
    depth = 0
    for i, ch in enumerate(rhs):
      depth += (ch == "(") - (ch == ")")
      if depth == 0:
        rhs = rhs[i + 1:]
        break
  else:
    rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
  m = re.match(r"\s*([\w\-]+)\(", rhs)
  return m.group(1) if m else ""


def parse_hlo(text: str) -> dict:
  """A compiled module's HLO text -> {'module', 'instructions': {name: record}, 'computations'}.
  A record: opcode, computation, called computations, custom-call target, whether a dot has
  batch dimensions, and the Python functions on its stack (the module's StackFrames table)."""
  module = re.match(r"HloModule\s+([\w.\-]+)", text)
  tables, section = {"FunctionNames": {}, "FileLocations": {}, "StackFrames": {}}, None
  comps, instrs, comp = {}, {}, None
  for line in text.splitlines():
    if line in tables:
      section = line
      continue
    if section:
      m = re.match(r"^(\d+)\s+(.*)$", line)
      if m:
        tables[section][int(m.group(1))] = m.group(2)
        continue
      section = None
    if not line.strip():
      continue
    if not line[0].isspace() and line.rstrip().endswith("{") and " = " not in line:
      m = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)", line)
      comp = m.group(1) if m else None
      comps[comp] = []
      continue
    if line.strip() == "}":
      comp = None
      continue
    m = _INSTR.match(line) if comp else None
    if not m:
      continue
    name, rhs = m.groups()
    calls = [c.strip().lstrip("%") for grp in _CALLS.findall(rhs) for c in grp.split(",") if c.strip()]
    target = re.search(r'custom_call_target="([^"]*)"', rhs)
    frame = re.search(r"stack_frame_id=(\d+)", rhs)
    op_name = re.search(r'op_name="([^"]*)"', rhs)
    instrs[name] = {"opcode": _opcode(rhs), "computation": comp, "calls": calls,
                    "target": target.group(1) if target else "",
                    "batched_dot": bool(re.search(r"lhs_batch_dims=\{\d|\"lhs_batch_dimensions\":\[\"", rhs)),
                    "frame": int(frame.group(1)) if frame else None, "op_name": op_name.group(1) if op_name else ""}
    comps[comp].append(name)

  def field(s, key):
    m = re.search(rf"\b{key}=(\d+)", s)
    return int(m.group(1)) if m else None
  functions = {i: s.strip().strip('"') for i, s in tables["FunctionNames"].items()}
  location_function = {i: functions.get(field(s, "function_name_id")) for i, s in tables["FileLocations"].items()}
  frames = {i: (location_function.get(field(s, "file_location_id")), field(s, "parent_frame_id"))
            for i, s in tables["StackFrames"].items()}
  stacks = {}
  for rec in instrs.values():
    names, f, seen = set(), rec["frame"], set()
    while f in frames and f not in seen:  # walk to the outermost frame (guarding against cycles)
      seen.add(f)
      fn, f = frames[f]
      if fn:  # 'f.<locals>.my_attention' -> 'my_attention', 'Block.__call__' -> '__call__'
        names.add(fn.split(".")[-1])
    rec["functions"] = names
  return {"module": module.group(1) if module else "", "instructions": instrs, "computations": comps}


def classify(name: str, hlo: dict) -> str:
  """The KIND of one launched HLO instruction, from itself and the computations it fuses."""
  instrs, comps = hlo["instructions"], hlo["computations"]
  rec = instrs[name]
  members, todo = [rec], list(rec["calls"]) if rec["opcode"] in ("fusion", "custom-call") else []
  while todo:
    c = todo.pop()
    for n in comps.get(c, []):
      members.append(instrs[n])
      todo += instrs[n]["calls"]
  ops = {m["opcode"] for m in members}
  targets = " ".join(m["target"].lower() for m in members)
  functions = set().union(*(m["functions"] for m in members))
  if any(s in targets for s in ("fmha", "flash", "sdpa")) or any("attention" in f.lower() for f in functions):
    return "attention"
  # A Triton custom call is the fused MLP kernel (mone.models.fused_mlp), the model's only one: matmuls.
  if ops & {"dot", "convolution"} or any(s in targets for s in ("gemm", "cublas", "matmul", "conv", "triton")):
    return "matmul"
  if ops & {"gather", "scatter", "sort"} or "topk" in targets or functions & ROUTING_FUNCTIONS:
    return "gather/scatter/sort"
  if ops <= DATA_MOVEMENT or rec["opcode"] in ("while", "conditional", "call", "custom-call"):
    return "other"
  return "elementwise/normalisation"


def kind_from_kernel_name(name: str) -> str:
  n = name.lower()
  if any(s in n for s in ("fmha", "flash", "sdpa")):
    return "attention"
  if any(s in n for s in ("gemm", "xmma", "cutlass", "cublas", "matmul", "wgmma")):
    return "matmul"
  if any(s in n for s in ("sort", "gather", "scatter", "topk")):
    return "gather/scatter/sort"
  return "other"


def device_events(profile, module: str):
  """(hlo_op or None, event name, duration in ns) of the device's events for `module`: the GPU
  planes' kernels (the 'XLA Ops' line where the trace has one), or on the CPU the host threads'
  events that name an HLO op."""
  planes = list(profile.planes)
  gpu = [p for p in planes if p.name.startswith("/device:GPU")]
  out = []
  for plane in gpu or [p for p in planes if p.name.startswith("/host:CPU")]:
    lines = list(plane.lines)
    if gpu:
      ops = [l for l in lines if l.name == "XLA Ops"]
      streams = [l for l in lines if l.name.startswith("Stream")]
      # Never the lines that span whole executions or steps: they would count every kernel twice.
      lines = ops or streams or [l for l in lines if l.name not in ("XLA Modules", "Steps", "XLA TraceMe")]
    for line in lines:
      for e in line.events:
        stats = dict(e.stats)
        op = stats.get("hlo_op")
        if op is None:
          m = re.search(r"hlo_op=([^,#\s]+)", " ".join(str(v) for v in stats.values()))
          op = m.group(1) if m else (e.name if line.name == "XLA Ops" else None)
        if not gpu and op is None:
          continue  # host bookkeeping (Python, thread pools), not the program's work
        mod = stats.get("hlo_module")
        if mod is not None and module and str(mod) != module:
          continue
        out.append((op, e.name, float(e.duration_ns)))
  return out


def op_summary(run, compiled, runs: int = 3, top: int = 10) -> dict:
  """Device time per KIND of one compiled function, from a profiler trace of `runs` calls."""
  from jax.profiler import ProfileData
  hlo = parse_hlo(compiled.as_text())
  run()  # warm, outside the trace
  with tempfile.TemporaryDirectory() as d:
    jax.profiler.start_trace(d)
    try:
      for _ in range(runs):
        run()
    finally:
      jax.profiler.stop_trace()
    (path,) = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
    events = device_events(ProfileData.from_file(path), hlo["module"])
  by_kind, by_op, matched, total = dict.fromkeys(KINDS, 0.0), {}, 0.0, 0.0
  for op, kernel, ns in events:
    op = op if op in hlo["instructions"] else None
    kind = classify(op, hlo) if op else kind_from_kernel_name(kernel)
    ms = ns / 1e6 / runs
    by_kind[kind] += ms
    key = op or kernel
    by_op.setdefault(key, [kind, 0.0])[1] += ms
    total += ms
    matched += ms if op else 0.0
  tops = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:top]
  return {"device_ms_per_run": total, "by_kind_ms": by_kind,
          "by_kind_fraction": {k: (v / total if total else None) for k, v in by_kind.items()},
          "matched_to_hlo_fraction": matched / total if total else None, "events": len(events),
          "top_ops": [{"op": k, "kind": kind, "ms_per_run": ms} for k, (kind, ms) in tops]}


# ------------------------------------------------------------------------------------------------
# Correctness.

def rel_errors(out, ref) -> tuple:
  """(max over leaves of norm(out - ref) / norm(ref) (2-norms; a leaf whose reference is zero is
  measured against the largest leaf norm), the same over all leaves together)."""
  a = [np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(out)]
  b = [np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(ref)]
  norms = [np.linalg.norm(y) for y in b]
  floor = max(max(norms, default=0.0) * 1e-6, 1e-30)
  per_leaf = [np.linalg.norm(x - y) / max(n, floor) for x, y, n in zip(a, b, norms)]
  whole = np.linalg.norm(np.concatenate(a) - np.concatenate(b)) / max(np.linalg.norm(np.concatenate(b)), 1e-30)
  return float(max(per_leaf)), float(whole)


# Largest relative error that passes: float32 at 'highest' matmul precision differs only in the
# order of sums; bfloat16 keeps 8 bits of mantissa, and a different attention kernel rounds at
# different places (on the CPU, tiny models: float32 ~2e-7, bfloat16 ~5e-3).
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}


# ------------------------------------------------------------------------------------------------
# Targets: (id, group, model, e_c, metric, threshold, description), read off the default setting's
# rows by `targets`; group names follow the plan's batch sizes (tiny ones with --tiny).

def target_specs(fams: dict) -> list:
  big, small = fams["image"].batches
  (vb,) = fams["video"].batches
  iv, vv = fams["image"].variant, fams["video"].variant
  return [
      ("forward-e_c0.3-big", f"vit-forward-{big}", "mone", 0.3, "speedup", 2.0,
       f"ViT-{iv} forward at e_c 0.3, batch {big}: speed-up >= 2.0x"),
      ("forward-e_c0.3-small", f"vit-forward-{small}", "mone", 0.3, "speedup", 1.6,
       f"ViT-{iv} forward at e_c 0.3, batch {small}: speed-up >= 1.6x"),
      ("forward-e_c0.5-big", f"vit-forward-{big}-e_c", "mone", 0.5, "speedup", 1.5,
       f"ViT-{iv} forward at e_c 0.5, batch {big}: speed-up >= 1.5x"),
      ("train-e_c0.3-small", f"vit-train-{small}", "mone", 0.3, "speedup", 1.5,
       f"ViT-{iv} training step at e_c 0.3, batch {small}: speed-up >= 1.5x"),
      ("train-e_c0.3-big", f"vit-train-{big}", "mone", 0.3, "speedup", 1.5,
       f"ViT-{iv} training step at e_c 0.3, batch {big}: speed-up >= 1.5x"),
      *[(f"{m}-e_c1.0-{b}", f"vit-{m}-{b}-e_c", "mone", 1.0, "speedup", 0.95,
         f"ViT-{iv} {'forward' if m == 'forward' else 'training step'} at e_c 1.0, batch {b}: within 5% of dense")
        for m, b in (("forward", big), ("forward", small), ("train", small))],
      *[(f"{m}-vs-matvit-e_c{e}-{b}", f"vit-{m}-{b}-e_c", "mone", e, "efficiency_vs_matvit", 1.0,
         f"ViT-{iv} {m} batch {b}: MoNE e_c {e} at least as efficient (speed-up / FLOP ratio) as MatViT's nearest-FLOP sub-model")
        for m, b in (("forward", big), ("forward", small), ("train", small)) for e in (0.3, 0.5)],
      ("vivit-forward-e_c0.3", f"vivit-forward-{vb}", "mone", 0.3, "speedup", 1.9,
       f"ViViT-{vv} forward at e_c 0.3, batch {vb}: speed-up >= 1.9x"),
      ("vivit-train-compile", f"vivit-train-{vb}", "mone", 0.3, "compile_s", 90.0,
       f"ViViT-{vv} MoNE (e_c 0.3) training step compiled (lower + compile) in under 90 s"),
  ]


# ------------------------------------------------------------------------------------------------
# The report.

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
    import flax
    import jaxlib
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
        "switches": [self._switch_doc(s) for s in self.switches],
        "families": {k: dataclasses.asdict(f) for k, f in self.fams.items()},
        "plan": names, "groups": {n: {"status": "pending" if n in self.selected else "not selected (--groups)"} for n in names},
        "correctness": [], "rows": [], "op_summary": {"method": OP_SUMMARY_METHOD.format(runs=3), "rows": []},
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
      self.doc["targets"] = targets(self.doc["rows"], self.fams)
      self.doc["summary"] = summary(self.doc, self.fams)
      self.doc["machine"]["peak_rss_mib"] = results.peak_rss_mib()
      results.atomic_write_json(self.path, self.doc)

  def _switch_doc(self, s: Switch) -> dict:
    d = dataclasses.asdict(s)
    if s.kind == "config":
      have = {f: s.config_field in config_fields(f) for f in ("image", "video")}
      d["available"] = all(have.values())
      d["how"] = (f"model config field {s.config_field!r} (dataclasses.replace / config overrides)" if d["available"] else
                  f"unavailable: the model configs have no field {s.config_field!r} yet ({have})")
    elif s.kind == "compiler":
      d["available"], d["options"] = self.cmdbuf["available"], self.cmdbuf["options"]
      d["how"] = (f"compiler options {self.cmdbuf['options']} of one .lower(...).compile(...)" if d["available"]
                  else "not switchable in-process: " + "; ".join(self.cmdbuf["errors"]))
    else:
      d["available"], d["how"] = False, "not implemented"
    return d

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
          status["status"] = {"correctness": self.correctness, "timing": self.timing,
                              "op_summary": self.op_summary}[g.kind](g)
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

  def entries(self, g: Group) -> list:
    """(model, e_c, setting label, switch values) of every row of a timing group."""
    out = []
    for label, values in self.settings(g.mode, g.switch_names, g.family):
      out += [(model, e_c, label, values) for model, e_c in (g.contenders if label == "default" else g.switched)]
    return out

  def needs(self, g: Group) -> set:
    """The runner keys (family, mode, batch, model, e_c, setting) a group uses."""
    if g.kind == "timing":
      return {(g.family, g.mode, g.batch, m, e, label) for m, e, label, _ in self.entries(g)}
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

  def correctness(self, g: Group) -> str:
    """Each switch's fast value against its reference, forward outputs and gradients."""
    fam = self.fams["check"]
    (batch,) = fam.batches
    live = [s for s in self.switches if s.kind == "config" and self.available(s.name) and "check" in s.families]
    for s in self.switches:
      if s.kind == "config" and not self.available(s.name):
        self.doc["correctness"].append({"switch": s.name, "status": f"unavailable: no config field {s.config_field!r}"})
    if not live:
      return "done (no switchable path to check)"
    reference = {s.name: s.reference for s in live}
    variants = [(s.name, {**reference, s.name: s.fast}) for s in live]
    x, _ = self.workload("check", {}).make_inputs(batch)
    n = 0
    for model, e_c in CORE:
      for dtype in ("float32", "bfloat16"):
        ref, ref_err = self.check_values(model, e_c, reference, dtype, x)
        for name, values in variants:
          row = {"model": model, "e_c": e_c, "dtype": dtype, "switch": name, "value": values[name],
                 "reference_value": reference[name], "batch": batch, "tolerance": TOLERANCE[dtype],
                 "matmul_precision": "highest" if dtype == "float32" else "default"}
          out, err = (None, f"reference {ref_err}") if ref_err else self.check_values(model, e_c, values, dtype, x)
          if err:
            row["status"] = err
          else:
            (fwd, _), (grad, grad_all) = rel_errors(out[0], ref[0]), rel_errors(out[1], ref[1])
            finite = bool(np.isfinite([fwd, grad]).all())
            row.update(forward_rel_err=fwd if finite else None, grad_rel_err=grad if finite else None,
                       grad_rel_err_all_leaves=grad_all if finite else None, compile_s=out[2],
                       ok=finite and max(fwd, grad) <= TOLERANCE[dtype],
                       status="checked" if finite else "non-finite values")
            n += 1
          self.doc["correctness"].append(row)
        self.save()
    self.disable_broken(live)
    return f"done ({n} comparisons)"

  def disable_broken(self, live) -> None:
    """Disables (`disable`) each switch of `live` whose fast path cannot run in any bfloat16
    correctness check, or runs and passes none: a broken or wrong path must not fill the default
    rows that the targets read."""
    for s in live:
      tried = [c for c in self.doc["correctness"] if c["switch"] == s.name and c.get("dtype") == "bfloat16"
               and not c["status"].startswith("skipped")]  # a check the budget skipped says nothing
      if not tried or any(c.get("ok") for c in tried):
        continue
      checked = [max(c["forward_rel_err"], c["grad_rel_err"]) for c in tried if c["status"] == "checked"]
      why = (f"largest relative error {max(checked):.3g}, tolerance {TOLERANCE['bfloat16']}" if checked
             else tried[0]["status"][:200])
      self.disable(s.name, f"{s.name}={s.fast} passed no bfloat16 correctness check ({why})")

  def check_values(self, model, e_c, values, dtype, x):
    """((logits, parameter gradients, compile seconds), None) of one contender of the check
    family in one setting, or (None, 'skipped: ...' / 'failed: ...'). The gradient is that of a
    random-cotangent-weighted sum of the logits, so that every logit's gradient counts."""
    need = self.predict_compile("check", "train")
    if need > self.left():
      return None, f"skipped: budget (compile predicted {need:.0f} s, {max(self.left(), 0):.0f} s left)"
    self.activity(f"correctness {model} e_c={e_c} {dtype} {values}")
    try:
      c = self.contender("check", model, e_c, values, dtype)
      xc = x.astype(dtype)
      out = jax.eval_shape(lambda p: c.apply(c.variables(p), xc), c.params)
      ct = jax.random.normal(jax.random.key(7), out.shape, jnp.float32)

      def loss(p):
        logits = c.apply(c.variables(p), xc)
        return jnp.sum(logits.astype(jnp.float32) * ct), logits

      f = jax.jit(jax.value_and_grad(loss, has_aux=True))
      t0 = time.perf_counter()
      if dtype == "float32":  # JAX's default on a GPU may multiply float32 in TF32
        with jax.default_matmul_precision("highest"):
          compiled = f.lower(c.params).compile()
      else:
        compiled = f.lower(c.params).compile()
      compile_s = time.perf_counter() - t0
      self.compiles.append({"family": "check", "mode": "train", "lower_s": 0.0, "compile_s": compile_s})
      (_, logits), grads = compiled(c.params)
      return (jax.device_get(logits), jax.device_get(grads), compile_s), None
    except Exception as e:
      return None, f"failed: {type(e).__name__}: {str(e)[:300]}"

  def contender(self, family, model, e_c, values, dtype):
    wl = self.workload(family, values)
    c = next((c for c in wl.contenders if c.name == model and c.e_c == e_c), None)
    if c is None:
      raise ValueError(f"{wl.name} has no contender {model} at e_c={e_c}")
    return workloads.cast_contender(c, dtype)

  def timing(self, g: Group) -> str:
    """Compiles what the group needs (reusing earlier groups' runners), then times it round-robin."""
    inputs, labels = self.batch_inputs(g.family, g.batch)
    rows, runners = [], []
    for model, e_c, label, values in self.entries(g):
      wl = self.workload(g.family, values)
      c = next((c for c in wl.contenders if c.name == model and c.e_c == e_c), None)
      row = {"group": g.name, "workload": wl.name, "mode": g.mode, "batch": g.batch, "model": model, "e_c": e_c,
             "setting": label, **{k: values.get(k) for k in ALL_SWITCHES}}
      rows.append(row)
      if c is None:
        row["status"] = "failed: no such contender"
        continue
      row.update(gflops=c.macs / 1e9, flop_ratio=wl.contenders[0].macs / c.macs, note=c.note)
      runner = self.runner(g, c, label, values, inputs, labels, row)
      if runner:
        runners.append((row, runner))
    if runners:
      self.time_rows(g, runners)
    speedups(rows)
    self.doc["rows"] += rows
    self.log(table(rows))
    return f"done ({sum(r.get('status') == 'timed' for r in rows)} of {len(rows)} rows timed)"

  def runner(self, g, c, label, values, inputs, labels, row):
    """The compiled runner of (contender, setting) at the group's mode and batch: an earlier
    group's, or compiled now if the budget allows; None if skipped or failed (row['status'])."""
    key = (g.family, g.mode, g.batch, c.name, c.e_c, label)
    if key in self.runners:
      run, info = self.runners[key]
      row.update({k: v for k, v in info.items() if k != "compiled"})
      return run
    need = self.predict_compile(g.family, g.mode)
    if need > self.left():
      row["status"] = f"skipped: budget (compile predicted {need:.0f} s, {max(self.left(), 0):.0f} s left)"
      return None
    options = self.cmdbuf["options"] if values.get("command_buffers") == "off" else None
    self.activity(f"compiling {g.name} {c.name} e_c={c.e_c} {label}")
    try:
      run, info = timing.compiled_runner(workloads.cast_contender(c, self.dtype), g.mode, inputs, labels,
                                         compiler_options=options)
    except Exception as e:
      row["status"] = f"failed: {type(e).__name__}: {str(e)[:500]}"
      return None
    info.update(hlo_counts=hlo_counts(info["compiled"].as_text()), compiled_in=g.name, compiler_options=options)
    self.compiles.append({"family": g.family, "mode": g.mode, "lower_s": info["lower_s"], "compile_s": info["compile_s"]})
    row.update({k: v for k, v in info.items() if k != "compiled"})
    self.runners[key] = (run, info)
    return run

  def time_rows(self, g, runners):
    self.activity(f"timing {g.name}")
    t0 = time.perf_counter()
    for _, r in runners:  # one warm round, which also says how long a round takes
      r()
    round_s = time.perf_counter() - t0
    if self.reps * round_s > self.left():
      for row, _ in runners:
        row["status"] = f"skipped: budget ({self.reps} rounds of {round_s:.2f} s, {max(self.left(), 0):.0f} s left)"
      return
    load = os.getloadavg()[0]
    times = timing.time_round_robin([r for _, r in runners], self.reps, warmup=0)
    for (row, _), t in zip(runners, times):
      row.update(status="timed", median_ms=float(np.median(t)) * 1e3, p25_ms=float(np.percentile(t, 25)) * 1e3,
                 p75_ms=float(np.percentile(t, 75)) * 1e3, reps=len(t), load_1m=[load, os.getloadavg()[0]])

  def op_summary(self, g: Group) -> str:
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
          row.update(op_summary(entry[0], entry[1]["compiled"]), status="measured")
          timed = _find(self.doc["rows"], name, model, e_c)
          row["wall_median_ms"] = timed.get("median_ms") if timed else None
        except Exception as e:
          row["status"] = f"failed: {type(e).__name__}: {str(e)[:300]}"
      out.append(row)
      self.save()
    self.log(op_table(out))
    return f"done ({sum(r['status'] == 'measured' for r in out)} of {len(out)} profiled)"


def hlo_counts(text: str) -> dict:
  """What a compiled module holds of each switch's path: command buffers (their outlined
  computations), cuDNN attention calls, Triton kernels (the fused MLP's), conditionals (the
  gradient barrier's), custom calls."""
  return {"command_buffer": len(re.findall(r"command_buffer", text)),
          "cudnn_attention": len(re.findall(r'custom_call_target="__cudnn\$fmha', text)),
          "triton": len(re.findall(r'custom_call_target="__gpu\$xla\.gpu\.triton"', text)),
          "conditional": len(re.findall(r"\sconditional\(", text)),
          "custom_call": len(re.findall(r"\scustom-call\(", text)), "fusion": len(re.findall(r"\sfusion\(", text))}


def speedups(rows):
  """speedup = the fastest timed dense row of the group with the same attention / the row's
  median; efficiency = speedup / flop_ratio."""
  for r in rows:
    if r.get("status") != "timed":
      continue
    dense = [q["median_ms"] for q in rows if q["model"] == "dense" and q.get("status") == "timed"
             and q.get("attention") == r.get("attention")]
    base = min(dense) if dense else None
    r["baseline_ms"] = base
    r["speedup"] = base / r["median_ms"] if base else None
    r["efficiency"] = r["speedup"] / r["flop_ratio"] if base else None


def table(rows) -> str:
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


def op_table(rows) -> str:
  lines = [f"{'group':22s}{'model':8s}{'device ms':>10s}  " + "".join(f"{k.split('/')[0][:10]:>11s}" for k in KINDS)]
  for r in rows:
    if r.get("status") != "measured":
      lines.append(f"{r['group']:22s}{r['model']:8s}  {r['status']}")
      continue
    lines.append(f"{r['group']:22s}{r['model']:8s}{r['device_ms_per_run']:10.2f}  " +
                 "".join(f"{r['by_kind_ms'][k]:11.2f}" for k in KINDS))
  return "\n".join(lines)


def _find(rows, group, model, e_c, setting="default"):
  for r in rows:
    if (r["group"], r["model"], r["e_c"], r["setting"]) == (group, model, e_c, setting):
      return r
  return None


def targets(rows, fams) -> list:
  """Every target of `target_specs`: measured value (default setting), met / missed, or why
  it was not measured; 'best' is the best value over the switch settings timed."""
  out = []
  for tid, group, model, e_c, metric, need, text in target_specs(fams):
    r = _find(rows, group, model, e_c)
    t = {"id": tid, "description": text, "group": group, "metric": metric, "target": need,
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
      m = _find(rows, group, "matvit", e_c)
      if m is None or m.get("status") != "timed":
        t["status"] = "not measured: no timed MatViT row"
      else:
        t["measured"] = r["efficiency"] / m["efficiency"]
        t.update(mone_efficiency=r["efficiency"], matvit_efficiency=m["efficiency"], met=t["measured"] >= need)
    else:
      t["measured"] = r[metric]
      t["met"] = t["measured"] >= need
      others = [q[metric] for q in rows if (q["group"], q["model"], q["e_c"]) == (group, model, e_c)
                and q.get("status") == "timed" and q.get(metric) is not None]
      t["best"] = max(others) if others else None
    if t["met"] is not None:
      t["status"] = "met" if t["met"] else "missed"
    out.append(t)
  return out


def summary(doc, fams) -> list:
  """A few lines for a reader: targets, each switch's effect, correctness, what was skipped."""
  lines = ["targets:"]
  for t in doc["targets"]:
    val = "" if t["measured"] is None else f" {t['measured']:.2f}"
    best = f" (best over switch settings {t['best']:.2f})" if t.get("best") not in (None, t["measured"]) else ""
    lines.append(f"  {t['description']}:{val}{best} -> {t['status']}")
  effects = []
  for r in doc["rows"]:
    if r["setting"] == "default" or r.get("status") != "timed":
      continue
    d = _find(doc["rows"], r["group"], r["model"], r["e_c"])
    if d and d.get("status") == "timed":
      effects.append(f"  {r['group']} {r['model']}{'' if r['e_c'] is None else ' ' + str(r['e_c'])}: "
                     f"{r['setting']} takes {r['median_ms'] / d['median_ms']:.2f}x the default's time")
  if effects:
    lines += ["switches (time with the switch at its reference value / time in the default setting):", *effects]
  bad = [c for c in doc["correctness"] if c.get("ok") is False]
  checked = [c for c in doc["correctness"] if "ok" in c]
  lines.append(f"correctness: {len(checked) - len(bad)} of {len(checked)} comparisons within tolerance"
               + "".join(f"\n  OUT OF TOLERANCE: {c['model']} {c['dtype']} {c['switch']}={c['value']}: forward "
                         f"{c['forward_rel_err']}, gradient {c['grad_rel_err']}" for c in bad))
  compiled = {}
  for r in doc["rows"]:
    if "compile_s" in r and r.get("compiled_in", r["group"]) == r["group"]:
      compiled.setdefault(r["group"], []).append(r["lower_s"] + r["compile_s"])
  if compiled:
    lines.append("compilation (lower + compile) per group:")
    lines += [f"  {g}: {len(t)} functions, {sum(t):.1f} s, longest {max(t):.1f} s" for g, t in compiled.items()]
  unchecked = [c for c in doc["correctness"] if "ok" not in c]
  lines += [f"  not checked: {c.get('model', '')} {c.get('dtype', '')} {c['switch']}: {c['status'][:160]}" for c in unchecked]
  lines += [f"switch {s['name']} disabled: {s['disabled']}" for s in doc["switches"] if s.get("disabled")]
  skipped = [n for n, g in doc["groups"].items() if not str(g.get("status", "")).startswith("done")]
  if skipped:
    lines.append("not done: " + ", ".join(f"{n} ({doc['groups'][n].get('status')})" for n in skipped))
  return lines


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
