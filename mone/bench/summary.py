"""What the GPU report says to a reader at the end, in a few lines: each target measured / met /
missed, each switch's effect on time, the correctness checks, compile times per group, and what
was not done. The same lines go into the JSON ('summary'), rewritten after every group.
"""
from mone.bench.targets import find_row


def lines(doc) -> list:
  """The summary of a report's JSON document so far."""
  out = ["targets:"]
  for t in doc["targets"]:
    val = "" if t["measured"] is None else f" {t['measured']:.2f}"
    best = f" (best over switch settings {t['best']:.2f})" if t.get("best") not in (None, t["measured"]) else ""
    out.append(f"  {t['description']}:{val}{best} -> {t['status']}")
  effects = []
  for r in doc["rows"]:
    if r["setting"] == "default" or r.get("status") != "timed":
      continue
    d = find_row(doc["rows"], r["group"], r["model"], r["e_c"])
    if d and d.get("status") == "timed":
      effects.append(f"  {r['group']} {r['model']}{'' if r['e_c'] is None else ' ' + str(r['e_c'])}: "
                     f"{r['setting']} takes {r['median_ms'] / d['median_ms']:.2f}x the default's time")
  if effects:
    out += ["switches (time with the switch at its reference value / time in the default setting):", *effects]
  bad = [c for c in doc["correctness"] if c.get("ok") is False]
  checked = [c for c in doc["correctness"] if "ok" in c]
  out.append(f"correctness: {len(checked) - len(bad)} of {len(checked)} comparisons within tolerance"
             + "".join(f"\n  OUT OF TOLERANCE: {c['model']} {c['dtype']} {c['switch']}={c['value']}: forward "
                       f"{c['forward_rel_err']}, gradient {c['grad_rel_err']}" for c in bad))
  compiled = {}
  for r in doc["rows"]:
    if "compile_s" in r and r.get("compiled_in", r["group"]) == r["group"]:
      compiled.setdefault(r["group"], []).append(r["lower_s"] + r["compile_s"])
  if compiled:
    out.append("compilation (lower + compile) per group:")
    out += [f"  {g}: {len(t)} functions, {sum(t):.1f} s, longest {max(t):.1f} s" for g, t in compiled.items()]
  unchecked = [c for c in doc["correctness"] if "ok" not in c]
  out += [f"  not checked: {c.get('model', '')} {c.get('dtype', '')} {c['switch']}: {c['status'][:160]}" for c in unchecked]
  out += [f"switch {s['name']} disabled: {s['disabled']}" for s in doc["switches"] if s.get("disabled")]
  skipped = [n for n, g in doc["groups"].items() if not str(g.get("status", "")).startswith("done")]
  if skipped:
    out.append("not done: " + ", ".join(f"{n} ({doc['groups'][n].get('status')})" for n in skipped))
  return out
