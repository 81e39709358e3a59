"""The step's attention alone, for the training benchmark (`mone.bench.training`, `--attention`): which
attention calls a training step makes, read off the step as it is traced (`recording_attention`), one program
that runs exactly those calls forward and backward (`attention_program`), and the ceiling their time puts on
MoNE's rate over the dense model's (`attention_bound`). MoNE runs attention at full width over every token, as
the dense model does, so this time does not shrink with e_c.
"""
import contextlib

import jax
import jax.numpy as jnp

from mone.models import layers


@contextlib.contextmanager
def recording_attention():
  """The (shape, dtype, manual_grad) of every call of `mone.models.layers.attention` traced inside (q's
  shape and dtype), in call order: what a step's attention is, read off the step itself (its blocks
  look the function up in their module at trace time, so a stand-in there sees every call; values are
  untouched)."""
  calls, original = [], layers.attention

  def record(q, k, v, manual_grad=False):
    calls.append((tuple(q.shape), q.dtype, manual_grad))
    return original(q, k, v, manual_grad)

  layers.attention = record
  try:
    yield calls
  finally:
    layers.attention = original


def attention_program(calls, seed: int = 0):
  """A function that runs forward and backward of `layers.attention` once at each (shape, dtype,
  manual_grad) of `calls` ([B, H, N, c] heads-major, as `recording_attention` gives them), on random inputs and
  cotangents, as one jitted program (compiled here), and its MACs per run counted as `mone.flops`
  counts a training step's: 3x the forward's two [N, N] products per head."""
  keys = jax.random.split(jax.random.key(seed), 4 * len(calls))
  args = [tuple(jax.random.normal(keys[4 * i + j], shape, dtype) for j in range(4)) for i, (shape, dtype, _) in enumerate(calls)]
  qkv, cotangents = [a[:3] for a in args], [a[3] for a in args]

  def pulled(qkv):  # the step's backward receives a cotangent per attention output, as this does
    return sum(jnp.vdot(layers.attention(*x, manual), g) for x, g, (*_, manual) in zip(qkv, cotangents, calls))

  f = jax.jit(jax.grad(pulled))
  jax.block_until_ready(f(qkv))
  macs = sum(3 * 2 * b * h * n * n * c for (b, h, n, c), *_ in calls)
  return (lambda: f(qkv)), macs


def attention_bound(dense: dict, mone: dict) -> float:
  """MoNE's step rate over the dense model's (GFLOP/s, as `summary`'s mone_over_dense) if everything
  but attention ran in MoNE's step at the dense step's rate per FLOP, attention taking the time
  measured for it (rows of `row` with their "attention"). Attention is full width in both, so its
  time stays; where MoNE's other work already runs at the dense rate, this is the measured ratio."""
  def parts(r):
    total, att = r["gflop_per_step"], r["attention"]["gflop_per_step"]
    return total, att, r["step_ms"], r["attention"]["ms"]
  f_d, a_d, t_d, s_d = parts(dense)
  f_m, a_m, _, s_m = parts(mone)
  rest_rate = (f_d - a_d) / (t_d - s_d)  # GFLOP per ms of the dense step outside attention
  return (f_m / (s_m + (f_m - a_m) / rest_rate)) / (f_d / t_d)
