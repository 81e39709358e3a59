"""The GPU report's correctness group: each speed switch's fast path against the reference path it
replaces, on forward outputs and on every parameter gradient, in float32 (matmuls at precision
'highest': JAX's GPU default may use TF32) and in bfloat16, for the dense ViT and MoNE at e_c 0.3 (a
2-layer model of the timed geometry: the paths act per layer). A fast path that fails to run, or
passes no bfloat16 check, is disabled: later groups time its reference value, so that a broken or
wrong path never fills the rows that the targets read.
"""
import time

import jax
import jax.numpy as jnp
import numpy as np

from mone.bench.groups import CORE


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


def check(rep, g) -> str:
  """The correctness group `g` of the report `rep` (a `mone.bench.report.Report`): each config
  switch's fast value against its reference, forward outputs and gradients; rows go to
  rep.doc['correctness']."""
  (batch,) = rep.fams["check"].batches
  live = [s for s in rep.switches if s.kind == "config" and rep.available(s.name) and "check" in s.families]
  for s in rep.switches:
    if s.kind == "config" and not rep.available(s.name):
      rep.doc["correctness"].append({"switch": s.name, "status": f"unavailable: no config field {s.config_field!r}"})
  if not live:
    return "done (no switchable path to check)"
  reference = {s.name: s.reference for s in live}
  variants = [(s, {**reference, s.name: s.fast}) for s in live]
  x, _ = rep.workload("check", {}).make_inputs(batch)
  n = 0
  for model, e_c in CORE:
    for dtype in ("float32", "bfloat16"):
      ref, ref_err = check_values(rep, model, e_c, reference, dtype, x)
      for s, values in variants:
        row = {"model": model, "e_c": e_c, "dtype": dtype, "switch": s.name, "value": values[s.name],
               "reference_value": reference[s.name], "batch": batch, "tolerance": TOLERANCE[dtype],
               "matmul_precision": "highest" if dtype == "float32" else "default"}
        if s.dtypes is not None and dtype not in s.dtypes:  # nothing to compile: recorded, not a failure
          rep.doc["correctness"].append({**row, "status": f"not applicable: {s.name}={s.fast} computes in "
                                                          f"{' or '.join(s.dtypes)} only"})
          continue
        out, err = (None, f"reference {ref_err}") if ref_err else check_values(rep, model, e_c, values, dtype, x)
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
        rep.doc["correctness"].append(row)
      rep.save()
  disable_broken(rep, live)
  return f"done ({n} comparisons)"


def disable_broken(rep, live) -> None:
  """Disables (`Report.disable`) each switch of `live` whose fast path cannot run in any bfloat16
  correctness check, or runs and passes none: a broken or wrong path must not fill the default
  rows that the targets read."""
  for s in live:
    tried = [c for c in rep.doc["correctness"] if c["switch"] == s.name and c.get("dtype") == "bfloat16"
             and not c["status"].startswith("skipped")]  # a check the budget skipped says nothing
    if not tried or any(c.get("ok") for c in tried):
      continue
    checked = [max(c["forward_rel_err"], c["grad_rel_err"]) for c in tried if c["status"] == "checked"]
    why = (f"largest relative error {max(checked):.3g}, tolerance {TOLERANCE['bfloat16']}" if checked
           else tried[0]["status"][:200])
    rep.disable(s.name, f"{s.name}={s.fast} passed no bfloat16 correctness check ({why})")


def check_values(rep, model, e_c, values, dtype, x):
  """((logits, parameter gradients, compile seconds), None) of one contender of the check
  family in one setting, or (None, 'skipped: ...' / 'failed: ...'). The gradient is that of a
  random-cotangent-weighted sum of the logits, so that every logit's gradient counts."""
  need = rep.predict_compile("check", "train")
  if need > rep.left():
    return None, f"skipped: budget (compile predicted {need:.0f} s, {max(rep.left(), 0):.0f} s left)"
  rep.activity(f"correctness {model} e_c={e_c} {dtype} {values}")
  try:
    c = rep.contender("check", model, e_c, values, dtype)
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
    rep.compiles.append({"family": "check", "mode": "train", "lower_s": 0.0, "compile_s": compile_s})
    (_, logits), grads = compiled(c.params)
    return (jax.device_get(logits), jax.device_get(grads), compile_s), None
  except Exception as e:
    return None, f"failed: {type(e).__name__}: {str(e)[:300]}"
