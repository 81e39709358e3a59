"""ViViT factorised encoder, its MatViViT sub-models and MoNE-ViViT (paper Sec. 4.4), in Flax.

References: Jain et al., "Mixture of Nested Experts" (2024), Sec. 4.4 and 5 (videos);
Arnab et al., "ViViT: A Video Vision Transformer" (2021), Model 2 (factorised encoder).

A 3-D convolution embeds t x p x p tubelets; a spatial transformer runs over the N tokens of each
of the T' = T/t temporal indices (folded into the batch: [B T', N, D]); a temporal transformer runs
over each index's spatial CLS token plus its own CLS token, which feeds a linear classifier as in
ViViT (not the image models' average pooling). MoNE lives in the spatial transformer only
(`mone.models.nested.encode`, as in `mone.models.vit.ViT`), so the router and EPR act per temporal
index with the same static capacities. The spatial CLS token is all the full-width temporal
transformer reads from a frame, so it is never routed: it runs at full width in every block, in
MatViViT too (MoNE with every token on expert j is exactly MatViViT j), at 0.4% of a spatial
block's projections for N = 256 (`mone.flops`).
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from mone.models import nested
from mone.models.config import ViViTConfig
from mone.models.layers import PatchConv, block_class, head_kernel_init


class TubeletEmbed(nn.Module):
  """Non-overlapping t x p x p tubelets -> D features (ViViT's tubelet embedding), plus
  learned spatial position embeddings shared by every temporal index (the temporal
  transformer adds its own). Returns [B T', N, D], temporal indices folded into the batch.
  config.tubelet_embed: "conv", the 3-D convolution every committed run trained with, or "matmul",
  the same parameters and function as one matmul over flattened tubelets (`layers.PatchConv`),
  summed in another order: the last bits differ, so it is part of a run's config (its hash)."""
  config: ViViTConfig

  @nn.compact
  def __call__(self, video):
    cfg = self.config
    want = (cfg.num_frames, cfg.image_size, cfg.image_size, cfg.channels)
    if video.ndim != 5 or tuple(video.shape[1:]) != want:
      raise ValueError(f"video must have shape [batch, {', '.join(map(str, want))}] "
                       f"(batch, num_frames, image_size, image_size, channels) for config "
                       f"{cfg.name}; got {tuple(video.shape)}")
    kernel = (cfg.tubelet_size, cfg.patch_size, cfg.patch_size)
    if cfg.tubelet_embed == "matmul":
      x = PatchConv(cfg.width, kernel, cfg.weight_grad, name="conv")(video)  # [B, T' h w, D]
    else:
      x = nn.Conv(cfg.width, kernel, strides=kernel, padding="VALID", name="conv")(video)  # [B, T', h, w, D]
    x = x.reshape(-1, cfg.num_tokens, cfg.width)  # [B T', N, D], row-major patch order
    pos = self.param("pos_embedding", nn.initializers.normal(stddev=cfg.width ** -0.5),
                     (1, cfg.num_tokens, cfg.width))
    return x + pos


class ClsHead(nn.Module):
  """Final LayerNorm and linear classifier on the CLS token (ViViT's 'token' classifier);
  zero-initialised unless config.head_zeroinit is False (see layers.head_kernel_init)."""
  num_classes: int
  zero_init: bool = True

  @nn.compact
  def __call__(self, x):  # [B, 1 + T', D]
    x = nn.LayerNorm(epsilon=1e-6, name="norm")(x[:, 0])
    return nn.Dense(self.num_classes, kernel_init=head_kernel_init(self.zero_init), name="dense")(x)


class ViViT(nn.Module):
  """Dense ViViT-FE, its MatViViT sub-models, and MoNE-ViViT (routed=True).

  ``__call__(video [B, T, H, W, C], capacities=None, *, width_index=None, drop_smallest=False)
  -> (logits [B, num_classes], aux)``:

    - routed=False, width_index=None: the dense ViViT.
    - routed=False, width_index=j: MatViViT sub-model j (spatial patch tokens at width d_j;
      the spatial CLS token and the temporal transformer at D).
    - routed=True, capacities=c: MoNE. EPR assigns each temporal index's N tokens with the
      static capacities c; aux holds 'router_logits', 'router_probs' [B, T', N, E] and 'assignment'
      [B, T', N] (patch order) of the first router. drop_smallest=True runs the smallest
      expert at width 0 (MoD-greedy, Table 1).

  Parameter names follow `mone.models.vit.ViT` where the roles match ('block_l', 'router_r',
  'alpha'), so a MatViViT checkpoint initialises MoNE-ViViT directly. The random router
  (config.router='random') needs rngs={'routing': key}. remat=True rematerialises every
  block, spatial and temporal (`mone.models.layers.block_class`). backend: as
  `mone.models.vit.ViT`'s.
  """
  config: ViViTConfig
  routed: bool = False
  remat: bool = False
  backend: str | None = None

  @nn.compact
  def __call__(self, video, capacities=None, *, width_index=None, drop_smallest=False):
    cfg = self.config
    D, n, nt = cfg.width, cfg.num_tokens, cfg.num_temporal
    x = TubeletEmbed(cfg, name="embed")(video)  # [B T', N, D]
    cls = self.param("spatial_cls", nn.initializers.zeros, (1, 1, D))
    cls = jnp.broadcast_to(cls, (x.shape[0], 1, D))  # one per temporal index, shared weights
    if not self.routed and capacities is not None:
      raise ValueError("capacities are for routed (MoNE) models; use width_index for MatViViT")
    if self.routed and capacities is None:
      raise ValueError("a routed (MoNE) model needs capacities, e.g. "
                       "mone.capacity.budget('mone', e_c, num_experts).capacities")
    # The spatial transformer is the drop-in nested encoder, its parameters in this module's scope;
    # the CLS token of each temporal index runs at full width and is not routed. Only CLS is read
    # after it, so the tokens may stay in expert order.
    _, cls, aux = nested.encode(self, x, capacities, full=cls, width_index=width_index, drop_smallest=drop_smallest,
                                patch_order=False, remat=self.remat, backend=self.backend, **nested.fields(cfg))
    if aux:  # one routing per temporal index: [B T', N, ...] -> [B, T', N, ...]
      aux = {"router_logits": aux["router_logits"].reshape(-1, nt, n, cfg.num_experts),
             "router_probs": aux["router_probs"].reshape(-1, nt, n, cfg.num_experts),
             "assignment": aux["assignment"].reshape(-1, nt, n)}

    # Temporal transformer over the frame summaries, always dense (Sec. 4.4).
    frames = nn.LayerNorm(epsilon=1e-6, name="spatial_norm")(cls[:, 0]).reshape(-1, nt, D)  # [B, T', D]
    t_cls = self.param("temporal_cls", nn.initializers.zeros, (1, 1, D))
    t_pos = self.param("temporal_pos_embedding", nn.initializers.normal(stddev=D ** -0.5),
                       (1, nt + 1, D))
    h = jnp.concatenate([jnp.broadcast_to(t_cls, (frames.shape[0], 1, D)), frames], axis=1) + t_pos
    for l in range(cfg.temporal_depth):
      (h,) = block_class(self.remat, cfg.attention, cfg.grad_barrier, self.backend, cfg.mlp, cfg.weight_grad)(
          D, cfg.num_heads, cfg.mlp_dim, name=f"temporal_block_{l}")([h], (D,))
    return ClsHead(cfg.num_classes, cfg.head_zeroinit, name="head")(h), aux  # [B, num_classes]


def multiclip_logits(logits_fn, clips):
  """Multi-view ("8x1") evaluation: average the predictions over K clips per example.

  Args:
    logits_fn: video [B, T, H, W, C] -> logits [B, num_classes], e.g.
      `lambda v: model.apply(variables, v, caps)[0]`.
    clips: [B, K, T, H, W, C], K temporal clips of each example.
  Returns:
    [B, num_classes]: log of the mean of the K clips' softmax probabilities. Probabilities
    rather than raw logits are averaged so that one over-confident clip cannot outvote the
    others by logit scale alone; returning their log keeps the result a drop-in for logits
    (softmax gives back the average, argmax is unchanged, cross-entropy works as is).
    The clips run one at a time (lax.map), so memory is that of a single clip batch; the
    FLOPs per clip are `mone.flops.gflops(config, ...)`, K times that per example.
  """
  if clips.ndim != 6 or clips.shape[1] < 1:
    raise ValueError(f"clips must have shape [batch, num_clips >= 1, num_frames, height, width, "
                     f"channels]; got {tuple(clips.shape)}")
  k = clips.shape[1]
  log_probs = jax.lax.map(lambda c: jax.nn.log_softmax(logits_fn(c), axis=-1),
                          jnp.swapaxes(clips, 0, 1))  # [K, B, num_classes]
  return jax.nn.logsumexp(log_probs, axis=0) - np.log(k)  # log mean_k p_k, computed stably
