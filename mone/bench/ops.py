"""Where a compiled function's device time goes, by kind of operation: a `jax.profiler` trace of a
few runs, read in-process with `jax.profiler.ProfileData` (no TensorBoard), every device event
matched to its HLO instruction in the compiled module and classified by what it computes (`KINDS`,
`classify`). The GPU report's per-operation summary, and the HLO counts of each switch's path, come
from here: they say whether a saved FLOP was lost to matmuls, attention, routing or data movement.
"""
import glob
import os
import re
import tempfile

from jax import profiler

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
  hlo = parse_hlo(compiled.as_text())
  run()  # warm, outside the trace
  with tempfile.TemporaryDirectory() as d:
    profiler.start_trace(d)
    try:
      for _ in range(runs):
        run()
    finally:
      profiler.stop_trace()
    (path,) = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
    events = device_events(profiler.ProfileData.from_file(path), hlo["module"])
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


def hlo_counts(text: str) -> dict:
  """What a compiled module holds of each switch's path: command buffers (their outlined
  computations), cuDNN attention calls, Triton kernels (the fused MLP's), conditionals (the
  gradient barrier's), custom calls."""
  return {"command_buffer": len(re.findall(r"command_buffer", text)),
          "cudnn_attention": len(re.findall(r'custom_call_target="__cudnn\$fmha', text)),
          "triton": len(re.findall(r'custom_call_target="__gpu\$xla\.gpu\.triton"', text)),
          "conditional": len(re.findall(r"\sconditional\(", text)),
          "custom_call": len(re.findall(r"\scustom-call\(", text)), "fusion": len(re.findall(r"\sfusion\(", text))}


def op_table(rows) -> str:
  """The per-operation summary's rows: device time per run, and per KIND."""
  lines = [f"{'group':22s}{'model':8s}{'device ms':>10s}  " + "".join(f"{k.split('/')[0][:10]:>11s}" for k in KINDS)]
  for r in rows:
    if r.get("status") != "measured":
      lines.append(f"{r['group']:22s}{r['model']:8s}  {r['status']}")
      continue
    lines.append(f"{r['group']:22s}{r['model']:8s}{r['device_ms_per_run']:10.2f}  " +
                 "".join(f"{r['by_kind_ms'][k]:11.2f}" for k in KINDS))
  return "\n".join(lines)
