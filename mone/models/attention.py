"""Attention over heads-major or token-major q, k, v: the reference every committed run trained with
(`attention`), the same function with its backward written out for XLA:CPU (manual_grad=True, a block's
attention="xla_vjp"), and jax's fused implementations (`dot_product_attention`). `mone.models.layers.Block`
picks one by name (`layers.resolve_attention`).
"""
import jax
import jax.numpy as jnp


def attention(q, k, v, manual_grad: bool = False):
  """Scaled dot-product attention, heads-major: q, k, v [B, H, N, c] -> [B, H, N, c].

  Heads-major is the layout XLA:CPU's batched matmuls take without transposing (the usual
  [B, N, H, c] einsum ran attention at half speed). Normalising after the AV product
  divides N c values instead of N^2 probabilities, and XLA fuses the whole function into
  one kernel; together about 3x faster than the textbook form on the CPU. Attention stays
  at full width in MoNE, so its speed caps MoNE's speed-up.

  manual_grad=True: the same function with its backward written out (`_attention_manual`), whose
  sums are ordered differently (the last bits of the gradients differ; attention="xla_vjp").
  """
  if manual_grad:
    return _attention_manual(q, k, v)
  p, s = _weights(q, k)
  return jnp.einsum("bhqk,bhkc->bhqc", p, v) / s


def _weights(q, k):
  """The attention weights before normalisation, exp(logits - their row max), and their row sums."""
  logits = jnp.einsum("bhqc,bhkc->bhqk", q * float(q.shape[-1] ** -0.5), k)
  # Softmax is shift invariant: the max only guards exp() and needs no gradient.
  p = jnp.exp(logits - jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True)))
  return p, jnp.sum(p, axis=-1, keepdims=True)


@jax.custom_vjp
def _attention_manual(q, k, v):
  """`attention`, differentiated by `_manual_bwd`: autodiff's backward contracts the query axis of the
  [N, N] probabilities (for dV) and of the logits' cotangent (for dK), a dot whose first operand is
  contracted on its rows, which XLA:CPU runs on a slow path (2.2 ms for a temporal layer's [65, 65] by
  [65, 16] products, against 1.4 ms through `_rows_dot`). A temporal training step (16-wide heads) runs
  1.11x (ViViT) and 1.13x (MoNE e_c 0.3) faster, an image step (32-wide heads) 1.00-1.05x (weight_grad
  narrow_first, both programs at once on an AMD EPYC's two cores, two rounds with the cores swapped).
  The written-out backward alone, without `_rows_dot`, was no faster."""
  return attention(q, k, v)


def _manual_fwd(q, k, v):
  p, s = _weights(q, k)
  o = jnp.einsum("bhqk,bhkc->bhqc", p, v) / s
  return o, (q, k, v, p, s, o)


def _manual_bwd(res, do):
  q, k, v, p, s, o = res  # p unnormalised: the probabilities are p / s
  scale = float(q.shape[-1] ** -0.5)
  dp = jnp.einsum("bhqc,bhkc->bhqk", do, v)
  ds = p * ((dp - jnp.sum(do * o, axis=-1, keepdims=True)) / s)  # the logits' cotangent (softmax's Jacobian)
  return (ds @ k) * scale, _rows_dot(ds, q) * scale, _rows_dot(p, do / s)


_attention_manual.defvjp(_manual_fwd, _manual_bwd)


def _rows_dot(a, b):
  """a^T b over the last two axes (a [..., n, m], b [..., n, c], contracting n), computed as (b^T a)^T
  with both transposes stored (the barriers keep XLA from folding them back into the dot): the small
  [c, n] operand goes first, contracted on its columns, the layout XLA:CPU's fast dot takes."""
  bt = jax.lax.optimization_barrier(jnp.swapaxes(b, -1, -2))
  return jnp.swapaxes(jax.lax.optimization_barrier(bt @ a), -1, -2)


def dot_product_attention(q, k, v, implementation=None):
  """Attention through jax.nn.dot_product_attention, token-major: q, k, v [B, N, H, c] -> [B, N, H, c].

  The function `attention` computes, in the layout jax's takes ('BTNH'), which is the qkv
  projection's own: a block hands it slices of its [B, N, 3, H, c] projection and reshapes its
  output to [B, N, D] without a transpose. implementation="cudnn" is cuDNN's flash attention on
  an NVIDIA GPU: one fused kernel, so the [B, H, N, N] logits and probabilities never reach
  device memory, forward or backward. None is XLA's implementation, on any backend, so the CPU
  tests the call the GPU makes."""
  return jax.nn.dot_product_attention(q, k, v, implementation=implementation)
