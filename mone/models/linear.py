"""A projection x @ w and how its weight gradient is computed (`ViTConfig.weight_grad`).

Every projection of a block (`mone.models.layers.Block`) and the patch embedding go through `linear`.
The forward is the same program under every choice; the weight gradient is the same function summed in
another order, so float32 results differ in the last bits only (tests/models/test_weight_grad.py), and
the choice is part of a run's config (its hash).
"""
import functools

import jax

from mone.models.config import WEIGHT_GRADS


def linear(x, w, weight_grad: str = "autodiff"):
  """x @ w for tokens x [..., k] and a weight w [k, n].

  weight_grad="autodiff" leaves the gradient to JAX's transpose rule, the code every committed run
  trained with. Its weight gradient reaches XLA:CPU as a dot whose both operands are transposed
  (the tokens contracted on the left of one and the right of the other, [n, k] out, then
  transposed), which XLA:CPU hands to Eigen, whose packing of such operands took 22% of a digits64
  ViT step (perf, one core). "direct" writes the weight gradient as one dot contracting the tokens
  of x [T, k] and of the output's cotangent [T, n], giving [k, n] as it is stored: training steps on
  one core 1.2-1.4x faster (`python -m mone.bench --training --pair model.weight_grad=direct`).

  "narrow_first" is "direct" with the narrower of the two operands first. XLA:CPU still hands a dot
  contracting the leading axis of both to Eigen, which packs its first operand in a strided copy
  (12-13% of a calibration run's time under "direct", perf on an AMD EPYC): [T, n] first where n < k
  packs k / n times less (an MLP's second projection: 4x in the dense block, up to 32x for MoNE's
  narrowest expert), and the small [n, k] product is then transposed. Training steps 1.04-1.11x faster
  than "direct" by arm (small profile, both on one AMD EPYC's two cores at once, cores swapped); the
  last bits differ from "direct" where the sum over tokens is blocked differently."""
  if weight_grad not in WEIGHT_GRADS:
    raise ValueError(f"weight_grad must be one of {WEIGHT_GRADS}, got {weight_grad!r}")
  return x @ w if weight_grad == "autodiff" else _direct(x, w, weight_grad == "narrow_first")


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _direct(x, w, narrow_first):
  return x @ w


def _direct_fwd(x, w, narrow_first):
  return x @ w, (x, w)


def _direct_bwd(narrow_first, res, g):
  x, w = res
  k, n = w.shape
  x, g2 = x.reshape(-1, k), g.reshape(-1, n)
  tokens = (((0,), (0,)), ((), ()))  # contract the tokens of both: [T, k] x [T, n] -> [k, n]
  if narrow_first and n < k:
    # The barrier keeps XLA from folding the transpose back into the dot (as [T, k] first).
    dw = jax.lax.optimization_barrier(jax.lax.dot_general(g2, x, tokens)).T
  else:
    dw = jax.lax.dot_general(x, g2, tokens)
  return (g @ w.T).astype(res[0].dtype), dw.astype(w.dtype)


_direct.defvjp(_direct_fwd, _direct_bwd)
