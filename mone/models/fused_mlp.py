"""The nested MLP as one Pallas kernel: a block's MLP with its [tokens, 4D] hidden layer kept on chip.

`nested_mlp` computes a d-wide nested expert's MLP in `mone.models.layers.Block`, gelu(x @ w1 + b1)
@ w2 + b2 with w1 = mlp1_kernel[:d, :], w2 = mlp2_kernel[:, :d], hidden width M = 4D for every d
(Sec. 3.1) and the exact erf `gelu` defined here. XLA writes each token's M hidden activations to
device memory and reads them back, M/d times the token's own traffic (4 at full width, 32 at
d = D/8); the kernel loops over the hidden layer in chunks per tile of tokens, adding each chunk's
share of the out-projection into a float32 [tile, d] accumulator: the hidden layer stays on chip.

Triton lowers it on a CUDA GPU (how its constraints are met: the comments at `_segments`, `_erf`,
`_precision` and `_forward`); the CPU runs it in interpret mode, slowly, for tests. The gradient is
the XLA expression's (`_fused_bwd`). Unmeasured: reading all of w1 and w2 per tile, it is likelier
to pay off for narrow experts than for the full-width one; `mone.bench.report` times it ('fused_mlp').
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton


_MIN_DOT = 16  # Triton's tl.dot: every operand dimension >= 16


def gelu(x):
  """Exact (erf) GELU, the MLP's activation in `mone.models.layers.Block` and here.
  jax.nn.gelu(approximate=False) evaluates the same function through erfc, whose two-branch
  polynomial costs twice as much on the CPU; GELU runs on every token at the full MLP width
  4D, so this is a fixed cost the dense model and MoNE share (differences are < 1e-6
  absolute, in the far negative tail)."""
  return 0.5 * x * (1.0 + jax.lax.erf(x * float(1 / np.sqrt(2))))


def reference(x, w1, b1, w2, b2):
  """The block's MLP as XLA runs it (`mone.models.layers.Block`): what `nested_mlp` computes."""
  return gelu(x @ w1 + b1) @ w2 + b2


# lax.erf has no Triton lowering in JAX 0.10 (NotImplementedError), so the kernel evaluates erf as
# XLA's float32 erf (xla/codegen/emitters/transforms/expand_float_ops.cc, RewriteErf32Pattern; the
# same in Eigen's generic_fast_erf_float): x P(x^2) / Q(x^2) on [-c, c], c = erfinv(1 - 2^-23).
_ERF_ALPHA = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861,
              0.18520832239976145, 1.128379143519084)
_ERF_BETA = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885,
             0.014070470171167667, 0.11098505178285362, 0.49746925110067538, 1.0)
_ERF_CLAMP = 3.7439211627767994


def _erf(x):
  """erf in float32 from multiplies, adds and one divide (Triton lowers these; not lax.erf).
  3e-7 from the true erf, as lax.erf is, and within 5e-7 of lax.erf on the CPU."""
  x = jnp.clip(x, -_ERF_CLAMP, _ERF_CLAMP)
  x2 = x * x
  p = jnp.full_like(x, _ERF_ALPHA[0])
  for c in _ERF_ALPHA[1:]:
    p = p * x2 + c
  q = jnp.full_like(x, _ERF_BETA[0])
  for c in _ERF_BETA[1:]:
    q = q * x2 + c
  return x * p / q


def _gelu(x):
  """`gelu` with `_erf`: the kernel's GELU, in float32."""
  return 0.5 * x * (1.0 + _erf(x * float(1 / np.sqrt(2))))


def _pow2_floor(n: int) -> int:
  return 1 << (max(int(n), 1).bit_length() - 1)


def _blocks(d: int, m: int, block_tokens, block_hidden) -> tuple[int, int]:
  """(token tile, hidden chunk): the ones given, or guesses that keep the float32 [tile, d]
  accumulator near 16K values (64 KiB of registers) and a [d, chunk] weight chunk near 8K (the
  chunk no wider than M needs).
  Unmeasured: a GPU run should sweep them. Both powers of two, >= 16."""
  bt = block_tokens or max(_MIN_DOT, min(64, _pow2_floor(16384 // d)))
  bh = block_hidden or max(_MIN_DOT, min(128, _pow2_floor(8192 // d), 1 << (m - 1).bit_length()))
  for name, v in (("block_tokens", bt), ("block_hidden", bh)):
    if v < _MIN_DOT or v & (v - 1):
      raise ValueError(f"{name} must be a power of two >= {_MIN_DOT} (Triton), got {v}")
  return bt, bh


# Triton wants every array it loads, computes or stores to have a power-of-two number of elements.
# The paper's widths are 3 x 2^k (96, ..., 768 for ViT-B), so d is cut into power-of-two column
# segments, each its own slice of x, w1, w2 and the output: no FLOP is spent on padding.
def _segments(d: int) -> tuple[tuple[int, int], ...]:
  """(offset, size) of the power-of-two column segments of a width d (a multiple of 16), largest
  first: 96 -> ((0, 64), (64, 32))."""
  out, offset = [], 0
  for bit in reversed(range(d.bit_length())):
    if d >> bit & 1:
      out.append((offset, 1 << bit))
      offset += 1 << bit
  return tuple(out)


def _precision(dtype):
  """The kernel's dot precision: HIGHEST for float32 where jax.default_matmul_precision asks for
  float32 (Triton's default for float32 is TF32), else the default (bfloat16 in, float32 out)."""
  want = jax.config.jax_default_matmul_precision
  if jnp.dtype(dtype) == jnp.float32 and str(want).lower() in ("highest", "float32"):
    return jax.lax.Precision.HIGHEST
  return None


def _kernel(x_ref, w1_ref, b1_ref, w2_ref, b2_ref, o_ref, *, chunk, segments, precision):
  """One token tile: o = gelu(x w1 + b1) w2 + b2, looping over the hidden layer in chunks.
  x_ref, o_ref [tile, d]; w1_ref [d, M], b1_ref [M], w2_ref [M, d], b2_ref [d] (whole)."""
  dot = functools.partial(jnp.dot, preferred_element_type=jnp.float32, precision=precision)
  # The tile's input is loaded once, one power-of-two segment of its columns at a time.
  xs = [x_ref[:, o:o + s] for o, s in segments]

  def body(j, accs):
    cols = pl.ds(pl.multiple_of(j * chunk, chunk), chunk)
    h = b1_ref[cols].astype(jnp.float32)[None, :]
    for x, (o, s) in zip(xs, segments):
      h = h + dot(x, w1_ref[o:o + s, cols])  # [tile, chunk], float32
    g = _gelu(h).astype(w2_ref.dtype)  # the matmul's input dtype, as the reference rounds it
    return tuple(acc + dot(g, w2_ref[cols, o:o + s]) for acc, (o, s) in zip(accs, segments))

  accs = tuple(jnp.zeros((x_ref.shape[0], s), jnp.float32) for _, s in segments)
  accs = jax.lax.fori_loop(0, w1_ref.shape[1] // chunk, body, accs)
  for acc, (o, s) in zip(accs, segments):
    o_ref[:, o:o + s] = (acc + b2_ref[o:o + s].astype(jnp.float32)[None, :]).astype(o_ref.dtype)


def _forward(x, w1, b1, w2, b2, cfg):
  """The kernel on x [T, d]: pads what Triton's shapes need, slices the result back."""
  interpret, block_tokens, block_hidden, num_warps, num_stages = cfg
  (t, d), m = x.shape, w1.shape[1]
  if t == 0:
    return jnp.zeros((0, d), x.dtype)
  bt, bh = _blocks(d, m, block_tokens, block_hidden)
  dp, tp, mp = -(-d // _MIN_DOT) * _MIN_DOT, -(-t // bt) * bt, -(-m // bh) * bh
  # Zero padding (a no-op where the shapes already fit; the tokens' is one [T, d] copy; d pads to a
  # multiple of 16 only in the tests' tiny models): padded tokens are sliced off, padded input
  # features meet zero w1 rows, padded hidden units are gelu(0) = 0 times zero w2 rows, padded
  # output features are sliced off.
  x = jnp.pad(x, ((0, tp - t), (0, dp - d)))
  w1, b1 = jnp.pad(w1, ((0, dp - d), (0, mp - m))), jnp.pad(b1, (0, mp - m))
  w2, b2 = jnp.pad(w2, ((0, mp - m), (0, dp - d))), jnp.pad(b2, (0, dp - d))
  whole = lambda a: pl.BlockSpec(a.shape, lambda i: (0,) * a.ndim)  # every tile reads all of it
  tile = pl.BlockSpec((bt, dp), lambda i: (i, 0))
  out = pl.pallas_call(
      functools.partial(_kernel, chunk=bh, segments=_segments(dp), precision=_precision(x.dtype)),
      out_shape=jax.ShapeDtypeStruct((tp, dp), x.dtype),
      grid=(tp // bt,),
      in_specs=[tile, whole(w1), whole(b1), whole(w2), whole(b2)],
      out_specs=tile,
      # Triton's parameters also select the Triton lowering (JAX 0.10's default is Mosaic GPU).
      compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
      interpret=interpret,
      name="nested_mlp",
  )(x, w1, b1, w2, b2)
  return out[:t, :d]


@functools.partial(jax.custom_vjp, nondiff_argnums=(5,))
def _fused(x, w1, b1, w2, b2, cfg):
  return _forward(x, w1, b1, w2, b2, cfg)


def _fused_fwd(x, w1, b1, w2, b2, cfg):
  # The inputs are the only residuals: no [T, M] hidden layer is kept for the backward pass.
  return _forward(x, w1, b1, w2, b2, cfg), (x, w1, b1, w2, b2)


def _fused_bwd(cfg, res, dy):
  # Recomputes the hidden layer (XLA) and differentiates the reference expression: the XLA path's
  # gradients. A fused backward (per token tile: recompute the hidden chunk, dh = (dy @ w2_chunk^T) *
  # gelu'(h) on chip, accumulate dx; dw1 = x^T dh and dw2 = gelu(h)^T dy summed over tiles) would
  # remove the backward's [T, M] traffic too, twice the forward's; not written until the forward is
  # measured.
  _, vjp = jax.vjp(reference, *res)
  return vjp(dy)


_fused.defvjp(_fused_fwd, _fused_bwd)


def nested_mlp(x, w1, b1, w2, b2, *, interpret=False, block_tokens=None, block_hidden=None,
               num_warps=4, num_stages=2):
  """gelu(x @ w1 + b1) @ w2 + b2 as one Pallas kernel (see the module docstring).

  x [..., d] (any leading shape, flattened to tokens), w1 [d, M], b1 [M], w2 [M, d], b2 [d], one
  floating dtype. interpret: run in Pallas's interpret mode (the CPU; tests); else the Triton
  lowering (a CUDA GPU). block_tokens, block_hidden: the token tile and the hidden chunk, powers
  of two >= 16 (None: `_blocks`'s guesses). num_warps, num_stages: Triton's (untuned).
  Differentiable: the backward pass recomputes the hidden layer with XLA."""
  d, m = w1.shape
  if x.shape[-1] != d or b1.shape != (m,) or w2.shape != (m, d) or b2.shape != (d,):
    raise ValueError(f"nested_mlp: shapes must be x [..., d], w1 [d, M], b1 [M], w2 [M, d], b2 [d]; got "
                     f"x {x.shape}, w1 {w1.shape}, b1 {b1.shape}, w2 {w2.shape}, b2 {b2.shape}")
  cfg = (bool(interpret), block_tokens, block_hidden, num_warps, num_stages)
  _blocks(d, m, block_tokens, block_hidden)  # refuses a bad tile before tracing the kernel
  return _fused(x.reshape(-1, d), w1, b1, w2, b2, cfg).reshape(x.shape)
