"""The transformer pieces every model here is built from, and why each looks the way it does.

`Block` is one pre-LN transformer block over groups of tokens with nested widths (Eqs. 1, 4-8):
MoNE's routed groups, a MatViT sub-model's narrow group and the dense model's full-width group all
run through it, so the dense baseline and MoNE share every line of compute. `attention`,
`layer_norm`, `materialize_grad`, `PatchConv` and `nested_weights` are CPU speed-ups, each explained
where it is defined (`attention` lives in `mone.models.attention`, `gelu` with `mone.models.fused_mlp`).

Where the CPU's choice is wrong for a GPU, a block picks by name, from a `ViTConfig` field:
`resolve_attention` (cuDNN flash attention), `resolve_barrier` (the CPU-only `materialize_grad`),
`resolve_mlp` (a fused Pallas MLP), `run_blocks` (scanned layers). "auto" resolves at trace time for
`Block.backend` (default: jax's backend; pass backend="cuda" to export for CUDA from a CPU host),
and on the CPU is the code every committed run trained with, bit for bit.
"""
import functools
import jax
import jax.numpy as jnp
import flax.linen as nn
import numpy as np

from mone.models.config import ATTENTIONS, BARRIERS, LAYER_LOOPS, MLPS
from mone.models.attention import attention, dot_product_attention
from mone.models.fused_mlp import gelu, nested_mlp
from mone.models.linear import linear


def layer_norm(x, scale, bias, eps=1e-6):
  """LayerNorm over the last axis with (sliced) scale and bias: a d-wide nested expert
  normalises only the d features it owns, so sub-models are self-contained. The statistics
  are computed in at least float32: E[x^2] - E[x]^2 in bfloat16 cancels to noise."""
  dtype, x = x.dtype, x.astype(jnp.promote_types(x.dtype, jnp.float32))  # no-op for float32
  mean = jnp.mean(x, axis=-1, keepdims=True)
  # E[x^2] - E[x]^2 (flax's default): both sums come from one pass over x.
  var = jnp.maximum(jnp.mean(jnp.square(x), axis=-1, keepdims=True) - jnp.square(mean), 0.0)
  return ((x - mean) * jax.lax.rsqrt(var + eps)).astype(dtype) * scale + bias


CUDA = ("gpu", "cuda")  # backends with cuDNN: "gpu" is jax's name for any GPU; `default_backend` names ROCm


def default_backend() -> str:
  """The backend jax runs on, as `resolve_attention` and `resolve_barrier` read it: jax's own name
  ("cpu", "tpu"), except that a GPU is "cuda" or "rocm" (jax calls both "gpu"; cuDNN is CUDA's)."""
  backend = jax.default_backend()
  if backend == "gpu":
    from jax.extend.backend import get_backend
    return "rocm" if "rocm" in get_backend().platform_version.lower() else "cuda"
  return backend


def resolve_attention(name: str, backend: str, dtype, head_dim: int) -> str:
  """The attention a block runs: `name` itself, or for "auto" "cudnn" where cuDNN's flash attention
  applies, else "xla" (`attention`, the code every committed run trained with). "xla_vjp" is `attention`
  with its backward written out (manual_grad=True): opt-in, as its gradients' last bits differ.

  cuDNN's flash attention takes float16/bfloat16 only (float32 is refused) and a head dimension
  that is a multiple of 8 up to 128 (up to 256 from Hopper on; 128 is the bound on every GPU,
  and ViT's heads are 64 wide), checked by jax._src.cudnn.fused_attention_stablehlo. "cudnn" on
  another backend is refused here, with a message, rather than left to fail inside jax."""
  if name not in ATTENTIONS:
    raise ValueError(f"attention must be one of {ATTENTIONS}, got {name!r}")
  if name == "cudnn" and backend not in CUDA:
    raise ValueError(f"attention='cudnn' needs a CUDA GPU; this backend is {backend!r} (use 'auto', 'xla' or 'dot_product')")
  if name == "auto":
    fits = jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16) and head_dim % 8 == 0 and head_dim <= 128
    return "cudnn" if backend in CUDA and fits else "xla"
  return name


def resolve_mlp(name: str, backend: str) -> str:
  """The MLP a block runs: "xla" (the reference expression, every committed run's) or "pallas"
  (`mone.models.fused_mlp.nested_mlp`: Triton on a CUDA GPU, interpret mode on the CPU, slow, for
  tests). "auto" is "xla" on every backend: the kernel is unmeasured, and "auto" switches to it on
  a GPU only after a GPU report (`mone.bench.report`, switch 'fused_mlp') measures it faster.
  "pallas" elsewhere (a TPU, ROCm: untested) is refused here, with a message."""
  if name not in MLPS:
    raise ValueError(f"mlp must be one of {MLPS}, got {name!r}")
  if name == "pallas" and backend != "cpu" and backend not in CUDA:
    raise ValueError(f"mlp='pallas' needs a CUDA GPU (Triton) or the CPU (interpret mode); this backend is {backend!r}")
  return "xla" if name == "auto" else name


# The barrier changes only what XLA:CPU stores, never a value: "off" computes the same numbers.
def resolve_barrier(name: str, backend: str) -> bool:
  """Whether blocks store the residual stream's cotangent behind a conditional (`materialize_grad`):
  "auto" does on the CPU, where XLA:CPU otherwise recomputes it in every block (measured), and not
  on a GPU or TPU, where it was never measured to help and a conditional may wait on the host."""
  if name not in BARRIERS:
    raise ValueError(f"grad_barrier must be one of {BARRIERS}, got {name!r}")
  return name == "on" or (name == "auto" and backend == "cpu")


@jax.custom_vjp
def materialize_grad(tree):
  """Identity on a pytree of arrays whose cotangent XLA computes once and keeps in memory.

  The gradient of the residual stream is a chain of cheap elementwise sums, one link per
  block. XLA:CPU fuses such chains into each consumer instead of storing them, so every
  block's backward recomputes the chain from the top layer down: quadratic in depth (a
  ViT-S/16 gradient took 2.6 s instead of 1.8 s; found by profiling, tested in
  tests/models/test_models.py). XLA never fuses a conditional, so routing the cotangent through
  one at each block's output stores it once. Both branches are the identity (XLA drops the
  barrier after it has kept the two branches distinct); the predicate only has to be
  unknown at compile time. The forward pass is untouched.
  """
  return tree


def _stored(f, tree):
  """f(tree), computed inside a conditional XLA cannot fuse through (see `materialize_grad`)."""
  first = [t for t in jax.tree_util.tree_leaves(tree) if t.size][0]
  return jax.lax.cond(jnp.isnan(first.ravel()[0]), f, lambda t: jax.lax.optimization_barrier(f(t)), tree)


def _materialize_bwd(_, g):
  return (_stored(lambda t: t, g),) if any(t.size for t in jax.tree_util.tree_leaves(g)) else (g,)


materialize_grad.defvjp(lambda tree: (tree, None), _materialize_bwd)


def split_groups(x, counts):
  """x [B, N, ...] split along tokens into consecutive groups of counts[g] tokens."""
  return jnp.split(x, np.cumsum(counts)[:-1], axis=1)


def _qkv_init(key, shape, dtype=jnp.float32):
  # Xavier-uniform per projection, as three separate D x D Dense layers would get.
  d = shape[0]
  return jnp.concatenate([nn.initializers.xavier_uniform()(k, (d, d), dtype)
                          for k in jax.random.split(key, 3)], axis=1)


class Block(nn.Module):
  """A pre-LN transformer block over groups of tokens with nested widths (Eqs. 1, 4-8).

  Group g holds [B, n_g, d_g]: the first d_g features of its tokens. Its in-projections use
  the first d_g rows of each weight (the paper's sliced in-projection), attention runs over
  all tokens at full width D, and its out-projections produce only the first d_g features
  (the paper's out-projection followed by zero padding, without materialising the zeros).
  `mults` ([B, n_g] per group) scale the MLP output: Eq. 1's (alpha r + 1).

  XLA materialises every weight slice as a copy. A caller that applies the model many
  times per parameter update (a batch in chunks, see mone.bench) can pass the slices, made
  once, as the 'nested' collection: `apply({"params": p, "nested": nested_weights(p, widths)}, ...)`.
  """
  width: int
  num_heads: int
  mlp_dim: int
  attention: str = "auto"     # `resolve_attention`
  grad_barrier: str = "auto"  # `resolve_barrier`
  backend: str | None = None  # what "auto" resolves for; None: `default_backend()` when traced
  mlp: str = "auto"           # `resolve_mlp`
  weight_grad: str = "autodiff"  # `linear`

  @nn.compact
  def __call__(self, hs, widths, mults=None):
    D, M, H = self.width, self.mlp_dim, self.num_heads
    backend = self.backend or default_backend()
    barrier = resolve_barrier(self.grad_barrier, backend)
    impl = resolve_attention(self.attention, backend, hs[-1].dtype, D // H)
    mlp = resolve_mlp(self.mlp, backend)
    p = lambda name, init, shape: self.param(name, init, shape)
    ln1_s, ln1_b = p("ln1_scale", nn.initializers.ones, (D,)), p("ln1_bias", nn.initializers.zeros, (D,))
    w_qkv, b_qkv = p("qkv_kernel", _qkv_init, (D, 3 * D)), p("qkv_bias", nn.initializers.zeros, (3 * D,))
    w_o, b_o = p("out_kernel", nn.initializers.xavier_uniform(), (D, D)), p("out_bias", nn.initializers.zeros, (D,))
    ln2_s, ln2_b = p("ln2_scale", nn.initializers.ones, (D,)), p("ln2_bias", nn.initializers.zeros, (D,))
    w1, b1 = p("mlp1_kernel", nn.initializers.xavier_uniform(), (D, M)), p("mlp1_bias", nn.initializers.normal(1e-6), (M,))
    w2, b2 = p("mlp2_kernel", nn.initializers.xavier_uniform(), (M, D)), p("mlp2_bias", nn.initializers.normal(1e-6), (D,))

    def nested(name, w, d, axis):  # w[:d] along axis
      if d == w.shape[axis]:
        return w
      if self.has_variable("nested", f"{name}_{d}"):
        return self.get_variable("nested", f"{name}_{d}")
      return jax.lax.slice_in_dim(w, 0, d, axis=axis)

    # Self-attention: sliced in-projection per group, attention over all N tokens at width D.
    # The groups' [B, n_g, 3D] are joined token-major. The reference ("xla") moves them into the
    # heads-major layout by one transpose, as in the dense model; jax's attention ("cudnn",
    # "dot_product") takes them token-major as they are. With several groups, both layout
    # changes store their cotangent once (materialize_grad): otherwise XLA:CPU fuses the
    # transpose into each group's three consumers (weight-gradient dot, data-gradient dot, bias
    # sum) as a slow strided copy per consumer. Same values, ~10% off a MoNE training step
    # (ViT-S/16, CPU). Index-free, the reference's cotangent turns token-major inside that store
    # (`heads_stored`), for one group too: a small-profile training step writes 565 MB, not 657
    # (image MoNE), 552 not 594 (ViT), 1826 not 1994 (MatViT); 1.00-1.15x its step time
    # (MatViT 1.03x, ViT 1.00-1.02x), bit-identical on the CPU.
    fence = materialize_grad if len(hs) > 1 and barrier else (lambda t: t)
    mm = lambda x, w: linear(x, w, self.weight_grad)
    qkv = jnp.concatenate([mm(layer_norm(h, ln1_s[:d], ln1_b[:d]), nested("qkv_kernel", w_qkv, d, 0)) + b_qkv
                           for h, d in zip(hs, widths)], axis=1)  # [B, N, 3D]
    if impl in ("xla", "xla_vjp"):
      q, k, v = heads_stored(qkv, H) if barrier else _heads(qkv, H)  # [B, H, N, c] each
      att = jnp.swapaxes(attention(q, k, v, manual_grad=impl == "xla_vjp"), 1, 2)  # [B, N, H, c]
    else:
      qkv = fence(qkv).reshape(*qkv.shape[:2], 3, H, D // H)  # [B, N, 3, H, c]
      q, k, v = (qkv[:, :, i] for i in range(3))  # [B, N, H, c] each: slices, no transpose
      att = dot_product_attention(q, k, v, "cudnn" if impl == "cudnn" else None)
    att = fence(att.reshape(*att.shape[:2], D))  # [B, N, D]
    zs = [h + mm(a, nested("out_kernel", w_o, d, 1)) + b_o[:d]
          for h, a, d in zip(hs, split_groups(att, [h.shape[1] for h in hs]), widths)]

    # MLP: hidden width is always M = 4D; only the in- and out-projections are sliced.
    outs = []
    for g, (z, d) in enumerate(zip(zs, widths)):
      if mlp == "pallas":  # the same function as one kernel (`mone.models.fused_mlp`)
        y = nested_mlp(layer_norm(z, ln2_s[:d], ln2_b[:d]), nested("mlp1_kernel", w1, d, 0), b1,
                       nested("mlp2_kernel", w2, d, 1), b2[:d], interpret=backend == "cpu")
      else:
        y = gelu(mm(layer_norm(z, ln2_s[:d], ln2_b[:d]), nested("mlp1_kernel", w1, d, 0)) + b1)
        y = mm(y, nested("mlp2_kernel", w2, d, 1)) + b2[:d]
      if mults is not None:
        y = y * mults[g][..., None]
      outs.append(z + y)
    return materialize_grad(outs) if barrier else outs


def _heads(qkv, num_heads):
  """[B, N, 3D] token-major -> q, k, v, each [B, H, N, D/H] heads-major."""
  t = jnp.transpose(qkv.reshape(*qkv.shape[:2], 3, num_heads, -1), (2, 0, 3, 1, 4))
  return tuple(x[0] for x in jnp.split(t, 3))


def _tokens(qkv):
  """The inverse of `_heads`: q, k, v [B, H, N, c] -> [B, N, 3Hc]."""
  B, H, N, c = qkv[0].shape
  return jnp.transpose(jnp.stack(qkv), (1, 3, 0, 2, 4)).reshape(B, N, 3 * H * c)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def heads_stored(qkv, num_heads):
  """`_heads`, whose gradient (the inverse layout change) is computed inside `materialize_grad`'s
  conditional: stored once, in the layout its consumers read, with no copy of it beside."""
  return _heads(qkv, num_heads)


heads_stored.defvjp(lambda qkv, num_heads: (_heads(qkv, num_heads), None), lambda _, __, g: (_stored(_tokens, g),))


def cast_floating(tree, dtype):
  """The floating arrays of `tree` in `dtype` (integer arrays, e.g. uint8 pixels or labels,
  unchanged); the tree itself where dtype is float32. Under jit and grad the cast's gradient
  carries a bfloat16 cotangent back into float32 parameters."""
  if jnp.dtype(dtype) == jnp.float32:
    return tree
  return jax.tree_util.tree_map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)


def block_class(remat: bool = False, attention: str = "auto", grad_barrier: str = "auto", backend: str | None = None,
                mlp: str = "auto", weight_grad: str = "autodiff"):
  """`Block`, or (remat=True) `Block` rematerialised: its activations are recomputed in the
  backward pass instead of kept from the forward one, so a training step holds one block's
  activations at a time rather than every block's (more compute, less memory). The widths
  (argument 2, counting self) are static: they decide the slicing. Parameters are unchanged.
  attention, grad_barrier, mlp: the block's implementations (`resolve_attention`, `resolve_barrier`,
  `resolve_mlp`), "auto" resolved for `backend` (None: the one jax runs on, `default_backend`);
  weight_grad: how its projections' weight gradients are computed (`linear`)."""
  cls = nn.remat(Block, static_argnums=(2,)) if remat else Block
  return lambda *args, **kw: cls(*args, attention=attention, grad_barrier=grad_barrier, backend=backend, mlp=mlp,
                                 weight_grad=weight_grad, **kw)


# "scan" compiles one block instead of `depth` (big_vision scans its encoder for the same reason);
# configs default to "unroll" until a GPU report measures what the loop costs at run time.
def run_blocks(scope: nn.Module, blocks: list, hs, widths, mults=None, loop: str = "unroll"):
  """hs through `blocks` in turn: submodules of `scope` (defined in its compact method) of one
  class and shape, each called as block(hs, widths, mults).

  loop="scan" runs them as one jax.lax.scan over their weights, stacked at each call from the
  blocks' own variables ('params', and 'nested' where given), so the parameter tree, every
  checkpoint and the initialisation stay exactly as with "unroll"; XLA then compiles one block,
  not len(blocks). Same function, not the same program: float32 results agree to rounding
  (tested), not bit for bit. Initialisation always unrolls (it creates the variables)."""
  if loop not in LAYER_LOOPS:
    raise ValueError(f"layer_loop must be one of {LAYER_LOOPS}, got {loop!r}")
  if loop == "unroll" or len(blocks) < 2 or scope.is_initializing():
    for block in blocks:
      hs = block(hs, widths, mults)
    return hs
  names = [b.name for b in blocks]
  stacked = {c: jax.tree.map(lambda *a: jnp.stack(a), *[v[n] for n in names])
             for c, v in scope.variables.items() if all(n in v for n in names)}
  template = blocks[0].clone(parent=None, name=None)  # unbound: applied to each block's weights in turn

  def step(h, variables):
    return template.apply(variables, h, widths, mults), None

  hs, _ = jax.lax.scan(step, hs, stacked)
  return hs


_NESTED = (("qkv_kernel", 0), ("out_kernel", 1), ("mlp1_kernel", 0), ("mlp2_kernel", 1))  # (weight, sliced axis)


def nested_weights(params, widths):
  """Every block's projection weights sliced to each width in `widths` below D: the
  'nested' collection `Block` reads instead of slicing (see Block)."""
  return {name: {f"{k}_{d}": jax.lax.slice_in_dim(blk[k], 0, d, axis=axis)
                 for k, axis in _NESTED for d in widths if d < blk[k].shape[axis]}
          for name, blk in params.items() if name.startswith("block_")}


class PatchConv(nn.Module):
  """nn.Conv's parameters (kernel [p, p, C, D] or [t, p, p, C, D], bias) for a convolution whose stride is its kernel
  (p x p image patches, or t x p x p video tubelets: patch=(t, p, p)), computed as what it is, one
  matmul over flattened patches, in nn.Conv's row-major patch order. XLA:CPU runs such a
  convolution, and above all its weight gradient, far below its matmul rate: ~1.3x faster here on
  images; on the video recipes the 3-D convolution took 6-9% of a training step (jax.profiler)."""
  features: int
  patch: int | tuple[int, ...]
  weight_grad: str = "autodiff"  # `linear`

  @nn.compact
  def __call__(self, x):  # [B, *S, C] -> [B, prod(S / patch), D]
    b, *s, c = x.shape
    ps = (self.patch,) * len(s) if isinstance(self.patch, int) else tuple(self.patch)
    kernel = self.param("kernel", nn.initializers.lecun_normal(), (*ps, c, self.features))
    bias = self.param("bias", nn.initializers.zeros, (self.features,))
    n = len(s)
    x = x.reshape(b, *(d for size, p in zip(s, ps) for d in (size // p, p)), c)
    x = x.transpose(0, *range(1, 2 * n, 2), *range(2, 2 * n + 1, 2), 2 * n + 1)  # [B, S0/p0, ..., p0, ..., C]
    return linear(x.reshape(b, -1, int(np.prod(ps)) * c), kernel.reshape(-1, self.features), self.weight_grad) + bias


def head_kernel_init(zero: bool):
  """The classifier's kernel initialiser: zeros (ViT, big_vision), or Dense's lecun_normal.

  A zero kernel gives the layers below it no gradient until the kernel itself has grown, and
  it grows only along features that already separate the classes. Where no feature of the
  initial network does (a label that depends on the order of frames), training waits on a
  plateau at the loss of a uniform guess for a run-dependent time (notebook 04)."""
  return nn.initializers.zeros if zero else nn.initializers.lecun_normal()


class Head(nn.Module):
  """Final LayerNorm, global average pooling over tokens (Sec. 4.1), linear classifier."""
  num_classes: int
  zero_init: bool = True

  @nn.compact
  def __call__(self, x):
    x = nn.LayerNorm(epsilon=1e-6, name="norm")(x)
    return nn.Dense(self.num_classes, kernel_init=head_kernel_init(self.zero_init), name="dense")(x.mean(axis=1))
