"""ViT, MatViT, MoNE-ViT and the Mixture-of-Depths baseline, in Flax.

References: Jain et al., "Mixture of Nested Experts" (2024), Sec. 3-4, Algorithm 1, Eq. 1,
appendix Eqs. 4-8; Dosovitskiy et al. (2021) for ViT; Raposo et al. (2024) for MoD.

All four share one parameter layout (MoNE adds `router_*` and `alpha`, MoD adds
`mod_router_*`), so a MatViT checkpoint initialises MoNE directly. ViT, MatViT and MoNE run
their transformer through `mone.models.nested.encode`, the drop-in nested-expert encoder (how MoNE
runs fast is described there); the blocks are `mone.models.layers.Block`. Which module each
model kind builds, and how it is applied, is in `mone.models.kinds`.
"""
import flax.linen as nn
import jax
import jax.numpy as jnp

from mone.models import nested
from mone.models.config import ViTConfig, mod_tokens
from mone.models.layers import Head, PatchConv, block_class


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
    x = PatchConv(cfg.width, cfg.patch_size, cfg.weight_grad, name="conv")(images)  # [B, N, D], row-major patch order
    pos = self.param("pos_embedding", nn.initializers.normal(stddev=cfg.width ** -0.5),
                     (1, cfg.num_tokens, cfg.width))
    return x + pos


class ViT(nn.Module):
  """Dense ViT, its MatViT sub-models, and MoNE-ViT (routed=True).

  __call__(images, capacities=None, width_index=None, drop_smallest=False) -> (logits, aux)
    - routed=False, width_index=None: the dense ViT.
    - routed=False, width_index=j: MatViT sub-model j (every token at width d_j).
    - routed=True, capacities=c: MoNE. EPR assigns tokens with the static capacities c
      (smallest expert first); aux holds 'router_probs' [B, N, E] and 'assignment' [B, N]
      (expert index per token in the original patch order) of the first router.
      drop_smallest=True runs the smallest expert at width 0 (MoD-greedy, Table 1).

  The random router (config.router='random') needs rngs={'routing': key}. remat=True
  rematerialises every block in the backward pass (`mone.models.layers.block_class`). backend:
  what the config's "auto" attention, grad_barrier and mlp resolve for (None: the backend jax runs
  on; "cuda" to export a GPU program from a CPU host; see `mone.models.layers`).
  """
  config: ViTConfig
  routed: bool = False
  remat: bool = False
  backend: str | None = None

  @nn.compact
  def __call__(self, images, capacities=None, *, width_index=None, drop_smallest=False):
    cfg = self.config
    x = PatchEmbed(cfg, name="embed")(images)
    if not self.routed and capacities is not None:
      raise ValueError("capacities are for routed (MoNE) models; use width_index for MatViT")
    if self.routed and capacities is None:
      raise ValueError("a routed (MoNE) model needs capacities, e.g. "
                       "mone.capacity.budget('mone', e_c, num_experts).capacities")
    # The transformer is the drop-in nested encoder, its parameters in this module's scope.
    # Pooling is permutation invariant: the tokens may stay in expert order (patch_order=False).
    x, _, aux = nested.encode(self, x, capacities, width_index=width_index, drop_smallest=drop_smallest,
                              patch_order=False, remat=self.remat, backend=self.backend, **nested.fields(cfg))
    return Head(cfg.num_classes, cfg.head_zeroinit, name="head")(x), aux


class MoD(nn.Module):
  """Mixture-of-Depths baseline (Raposo et al., 2024) with the paper's setting: every
  other layer processes only the top `mod_capacity` (12.5%) of tokens chosen by a
  per-layer router; the rest skip the layer. The block's update is scaled by the
  router weight, as in MoD, so the router receives gradients."""
  config: ViTConfig
  remat: bool = False  # as ViT's
  backend: str | None = None  # as ViT's

  @nn.compact
  def __call__(self, images):
    cfg = self.config
    x = PatchEmbed(cfg, name="embed")(images)
    k = mod_tokens(cfg)
    aux = {"selected": []}
    for l in range(cfg.depth):
      block = block_class(self.remat, cfg.attention, cfg.grad_barrier, self.backend, cfg.mlp, cfg.weight_grad)(
          cfg.width, cfg.num_heads, cfg.mlp_dim, name=f"block_{l}")
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

