"""ViT, MatViT, MoNE-ViT and the Mixture-of-Depths baseline, in Flax.

References: Jain et al., "Mixture of Nested Experts" (2024), Sec. 3-4, Algorithm 1, Eq. 1,
appendix Eqs. 4-8; Dosovitskiy et al. (2021) for ViT; Raposo et al. (2024) for MoD.

All four share one parameter layout (MoNE adds `router_*` and `alpha`, MoD adds
`mod_router_*`), so a MatViT checkpoint initialises MoNE directly.

How MoNE runs fast: the router decides once (per router), capacities are static, so after
EPR the tokens are permuted into expert order once and stay in that order through every
layer of the segment. Expert j's tokens then form one static slice [B, n_j, D], and
because a nested expert only ever reads and writes the first d_j features of its tokens,
each group carries just those d_j features ([B, n_j, d_j]); the untouched tail is set
aside and re-attached at the end. Every projection is a plain matmul per group with a
sliced weight, and no masking, padding or scatter happens inside the layers.
Global average pooling is permutation invariant, so the final order needs no undoing.
"""
import jax
import jax.numpy as jnp
import flax.linen as nn
import numpy as np

from mone import routing
from mone.config import ViTConfig

KINDS = ("vit", "matvit", "mod", "mone")


def layer_norm(x, scale, bias, eps=1e-6):
  """LayerNorm over the last axis with (sliced) scale and bias: a d-wide nested expert
  normalises only the d features it owns, so sub-models are self-contained."""
  mean = jnp.mean(x, axis=-1, keepdims=True)
  # E[x^2] - E[x]^2 (flax's default): both sums come from one pass over x.
  var = jnp.maximum(jnp.mean(jnp.square(x), axis=-1, keepdims=True) - jnp.square(mean), 0.0)
  return (x - mean) * jax.lax.rsqrt(var + eps) * scale + bias


def gelu(x):
  """Exact (erf) GELU. jax.nn.gelu(approximate=False) evaluates the same function through
  erfc, whose two-branch polynomial costs twice as much on the CPU; GELU runs on every
  token at the full MLP width 4D, so this is a fixed cost the dense model and MoNE share
  (differences are < 1e-6 absolute, in the far negative tail)."""
  return 0.5 * x * (1.0 + jax.lax.erf(x * float(1 / np.sqrt(2))))


def attention(q, k, v):
  """Scaled dot-product attention, heads-major: q, k, v [B, H, N, c] -> [B, H, N, c].

  Heads-major is the layout XLA:CPU's batched matmuls take without transposing (the usual
  [B, N, H, c] einsum ran attention at half speed). Normalising after the AV product
  divides N c values instead of N^2 probabilities, and XLA fuses the whole function into
  one kernel; together about 3x faster than the textbook form on the CPU. Attention stays
  at full width in MoNE, so its speed caps MoNE's speed-up.
  """
  logits = jnp.einsum("bhqc,bhkc->bhqk", q * float(q.shape[-1] ** -0.5), k)
  # Softmax is shift invariant: the max only guards exp() and needs no gradient.
  p = jnp.exp(logits - jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True)))
  return jnp.einsum("bhqk,bhkc->bhqc", p, v) / jnp.sum(p, axis=-1, keepdims=True)


@jax.custom_vjp
def materialize_grad(tree):
  """Identity on a pytree of arrays whose cotangent XLA computes once and keeps in memory.

  The gradient of the residual stream is a chain of cheap elementwise sums, one link per
  block. XLA:CPU fuses such chains into each consumer instead of storing them, so every
  block's backward recomputes the chain from the top layer down: quadratic in depth (a
  ViT-S/16 gradient took 2.6 s instead of 1.8 s; found by profiling, tested in
  tests/test_models.py). XLA never fuses a conditional, so routing the cotangent through
  one at each block's output stores it once. Both branches are the identity (XLA drops the
  barrier after it has kept the two branches distinct); the predicate only has to be
  unknown at compile time. The forward pass is untouched.
  """
  return tree


def _materialize_bwd(_, g):
  leaves = [t for t in jax.tree_util.tree_leaves(g) if t.size]
  if not leaves:
    return (g,)
  return (jax.lax.cond(jnp.isnan(leaves[0].ravel()[0]), lambda t: t, jax.lax.optimization_barrier, g),)


materialize_grad.defvjp(lambda tree: (tree, None), _materialize_bwd)


def _split(x, counts):
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

  @nn.compact
  def __call__(self, hs, widths, mults=None):
    D, M = self.width, self.mlp_dim
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
    # The groups' [B, n_g, 3D] are joined token-major and moved into the heads-major layout by
    # one transpose, as in the dense model. With several groups, both layout changes store
    # their cotangent once (materialize_grad): otherwise XLA:CPU fuses the transpose into each
    # group's three consumers (weight-gradient dot, data-gradient dot, bias sum) as a slow
    # strided copy per consumer. Same values, ~10% off a MoNE training step (ViT-S/16, CPU).
    fence = materialize_grad if len(hs) > 1 else (lambda t: t)
    qkv = fence(jnp.concatenate([layer_norm(h, ln1_s[:d], ln1_b[:d]) @ nested("qkv_kernel", w_qkv, d, 0) + b_qkv
                                 for h, d in zip(hs, widths)], axis=1))  # [B, N, 3D]
    q, k, v = jnp.transpose(qkv.reshape(*qkv.shape[:2], 3, self.num_heads, -1), (2, 0, 3, 1, 4))
    att = attention(q, k, v)  # [B, H, N, c]
    att = fence(jnp.swapaxes(att, 1, 2).reshape(att.shape[0], -1, D))  # [B, N, D]
    zs = [h + a @ nested("out_kernel", w_o, d, 1) + b_o[:d]
          for h, a, d in zip(hs, _split(att, [h.shape[1] for h in hs]), widths)]

    # MLP: hidden width is always M = 4D; only the in- and out-projections are sliced.
    outs = []
    for g, (z, d) in enumerate(zip(zs, widths)):
      y = gelu(layer_norm(z, ln2_s[:d], ln2_b[:d]) @ nested("mlp1_kernel", w1, d, 0) + b1)
      y = y @ nested("mlp2_kernel", w2, d, 1) + b2[:d]
      if mults is not None:
        y = y * mults[g][..., None]
      outs.append(z + y)
    return materialize_grad(outs)


def route(x, r, config, caps, counts, alpha, make_rng, drop_smallest=False):
  """Router r of a routed model (Sec. 4.2, Eq. 1), called inside the model's compact method.

  x: tokens [B, N, D] in patch order. Returns (probs [B, N, E], assignment [B, N] (EPR, expert
  per token), perm [B, N] (the tokens in expert order), groups (one [B, n_j, D] slice per
  expert), mults (the per-group Eq. 1 factors alpha r + 1, or None for the random router,
  which has no probabilities to scale with), live (the experts whose tokens run the layers:
  the non-empty ones, minus the smallest with drop_smallest)). make_rng() is called only by
  the random router."""
  probs = jax.nn.softmax(nn.Dense(config.num_experts, name=f"router_{r}")(x), axis=-1)
  scores = probs if config.router == "learned" else routing.random_router_probs(make_rng(), probs.shape)
  assignment = routing.expert_preferred_routing(scores, caps)
  perm = routing.group_permutation(assignment)
  groups = _split(jnp.take_along_axis(x, perm[..., None], axis=1), counts)
  mults = None
  if config.router == "learned":
    r_assigned = jnp.take_along_axis(probs, assignment[..., None], axis=-1)[..., 0]
    mults = _split(alpha * jnp.take_along_axis(r_assigned, perm, axis=1) + 1.0, counts)
  live = [g for g in range(config.num_experts) if counts[g] and not (drop_smallest and g == 0)]
  return probs, assignment, perm, groups, mults, live


def ungroup(groups, hs, live, widths, perm=None):
  """The tokens after a routed segment: each live group's processed d_j features (hs) with its
  untouched tail re-attached, in expert order, or back in patch order if perm is given."""
  groups = list(groups)
  for g, h in zip(live, hs):
    groups[g] = jnp.concatenate([h, groups[g][..., widths[g]:]], axis=-1)
  xp = jnp.concatenate([g for g in groups if g.shape[1]], axis=1)
  return xp if perm is None else jnp.take_along_axis(xp, jnp.argsort(perm, axis=1)[..., None], axis=1)


_NESTED = (("qkv_kernel", 0), ("out_kernel", 1), ("mlp1_kernel", 0), ("mlp2_kernel", 1))  # (weight, sliced axis)


def nested_weights(params, widths):
  """Every block's projection weights sliced to each width in `widths` below D: the
  'nested' collection `Block` reads instead of slicing (see Block)."""
  return {name: {f"{k}_{d}": jax.lax.slice_in_dim(blk[k], 0, d, axis=axis)
                 for k, axis in _NESTED for d in widths if d < blk[k].shape[axis]}
          for name, blk in params.items() if name.startswith("block_")}


class _PatchConv(nn.Module):
  """nn.Conv's parameters (kernel [p, p, C, D], bias) for a p x p, stride p convolution,
  computed as what it is, one matmul over flattened patches: ~1.3x faster on the CPU."""
  features: int
  patch: int

  @nn.compact
  def __call__(self, images):
    b, h, w, c = images.shape
    p = self.patch
    kernel = self.param("kernel", nn.initializers.lecun_normal(), (p, p, c, self.features))
    bias = self.param("bias", nn.initializers.zeros, (self.features,))
    x = images.reshape(b, h // p, p, w // p, p, c).transpose(0, 1, 3, 2, 4, 5)  # [B, h, w, p, p, C]
    return x.reshape(b, -1, p * p * c) @ kernel.reshape(-1, self.features) + bias


class PatchEmbed(nn.Module):
  """Non-overlapping p x p patches -> D features, plus learned position embeddings."""
  config: ViTConfig

  @nn.compact
  def __call__(self, images):
    cfg = self.config
    want = (cfg.image_size, cfg.image_size, cfg.channels)
    if images.ndim != 4 or tuple(images.shape[1:]) != want:
      raise ValueError(f"images must have shape [batch, {want[0]}, {want[1]}, {want[2]}] for "
                       f"config {cfg.name} (image_size={cfg.image_size}, channels={cfg.channels}); "
                       f"got {tuple(images.shape)}")
    x = _PatchConv(cfg.width, cfg.patch_size, name="conv")(images)  # [B, N, D], row-major patch order
    pos = self.param("pos_embedding", nn.initializers.normal(stddev=cfg.width ** -0.5),
                     (1, cfg.num_tokens, cfg.width))
    return x + pos


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


class ViT(nn.Module):
  """Dense ViT, its MatViT sub-models, and MoNE-ViT (routed=True).

  __call__(images, capacities=None, width_index=None, drop_smallest=False) -> (logits, aux)
    - routed=False, width_index=None: the dense ViT.
    - routed=False, width_index=j: MatViT sub-model j (every token at width d_j).
    - routed=True, capacities=c: MoNE. EPR assigns tokens with the static capacities c
      (smallest expert first); aux holds 'router_probs' [B, N, E] and 'assignment' [B, N]
      (expert index per token in the original patch order) of the first router.
      drop_smallest=True runs the smallest expert at width 0 (MoD-greedy, Table 1).

  The random router (config.router='random') needs rngs={'routing': key}.
  """
  config: ViTConfig
  routed: bool = False

  @nn.compact
  def __call__(self, images, capacities=None, *, width_index=None, drop_smallest=False):
    cfg = self.config
    widths = cfg.expert_widths
    x = PatchEmbed(cfg, name="embed")(images)
    blocks = [Block(cfg.width, cfg.num_heads, cfg.mlp_dim, name=f"block_{l}") for l in range(cfg.depth)]
    aux = {}
    if not self.routed:
      if capacities is not None:
        raise ValueError("capacities are for routed (MoNE) models; use width_index for MatViT")
      d = cfg.width if width_index is None else widths[width_index]
      h = x[..., :d]
      for block in blocks:
        (h,) = block([h], (d,))
      x = jnp.concatenate([h, x[..., d:]], axis=-1)
      return Head(cfg.num_classes, cfg.head_zeroinit, name="head")(x), aux

    if capacities is None:
      raise ValueError("a routed (MoNE) model needs capacities, e.g. "
                       "mone.capacity.capacity_distribution(e_c, num_experts)")
    if width_index is not None:
      raise ValueError("width_index selects a MatViT sub-model; a routed model takes capacities")
    caps = routing.capacity_lib.check_capacities(capacities, cfg.num_experts)
    counts = routing.expert_counts(caps, cfg.num_tokens)
    alpha = self.param("alpha", nn.initializers.zeros, ())  # Eq. 1; 0 keeps the start stable

    for block in blocks[:cfg.router_layer]:  # before the first router: dense
      (x,) = block([x], (cfg.width,))
    starts = cfg.router_layers
    for r, (lo, hi) in enumerate(zip(starts, starts[1:] + (cfg.depth,))):
      probs, assignment, perm, groups, mults, live = route(
          x, r, cfg, caps, counts, alpha, lambda: self.make_rng("routing"), drop_smallest)
      if r == 0:
        aux = {"router_probs": probs, "assignment": assignment}
      hs = [groups[g][..., :widths[g]] for g in live]
      for block in blocks[lo:hi]:
        hs = block(hs, tuple(widths[g] for g in live), [mults[g] for g in live] if mults else None)
      # The next router needs tokens in patch order; pooling after the last one does not.
      x = ungroup(groups, hs, live, widths, None if hi == cfg.depth else perm)
    return Head(cfg.num_classes, cfg.head_zeroinit, name="head")(x), aux


class MoD(nn.Module):
  """Mixture-of-Depths baseline (Raposo et al., 2024) with the paper's setting: every
  other layer processes only the top `mod_capacity` (12.5%) of tokens chosen by a
  per-layer router; the rest skip the layer. The block's update is scaled by the
  router weight, as in MoD, so the router receives gradients."""
  config: ViTConfig

  @nn.compact
  def __call__(self, images):
    cfg = self.config
    x = PatchEmbed(cfg, name="embed")(images)
    k = mod_tokens(cfg)
    aux = {"selected": []}
    for l in range(cfg.depth):
      block = Block(cfg.width, cfg.num_heads, cfg.mlp_dim, name=f"block_{l}")
      if l % 2 == 0:
        (x,) = block([x], (cfg.width,))
        continue
      w = nn.Dense(1, name=f"mod_router_{l}")(x)[..., 0]  # [B, N]
      w_top, idx = jax.lax.top_k(w, k)
      x_top = jnp.take_along_axis(x, idx[..., None], axis=1)
      (y_top,) = block([x_top], (cfg.width,))
      update = (y_top - x_top) * w_top[..., None]
      x = x + jax.vmap(lambda u, i: jnp.zeros_like(x[0]).at[i].set(u))(update, idx)
      aux["selected"].append(idx)
    return Head(cfg.num_classes, cfg.head_zeroinit, name="head")(x), aux


def mod_tokens(cfg: ViTConfig) -> int:
  """Tokens a MoD routed layer processes."""
  return max(1, int(np.floor(cfg.mod_capacity * cfg.num_tokens + 1e-6)))


def make_model(config: ViTConfig, kind: str) -> nn.Module:
  """The Flax module for kind 'vit', 'matvit' (same as vit; pick width_index), 'mone', 'mod'."""
  if kind in ("vit", "matvit"):
    return ViT(config)
  if kind == "mone":
    return ViT(config, routed=True)
  if kind == "mod":
    return MoD(config)
  raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
