"""Analytic forward FLOPs, counting one multiply-accumulate as one FLOP (as the paper does).

Counted: patch embedding, every projection (QKV, attention output, MLP in/out), the two
attention matmuls (QK^T and AV, always at full width D over all N tokens), routers and the
classifier. Not counted: LayerNorm, softmax, GELU, biases and residual adds (O(N D) each,
under 2% of the total for the paper's models). With these rules ViT-S/16, B/16 and L/16
at 224 px with a 21,843-way head come to 4.6, 17.5 and 61.3 GFLOPs (paper: 4.6, 17.6, 61.7).

For MoNE the token counts per expert are the exact static counts EPR uses
(`mone.capacity.expert_counts`), so the number is what the model really executes.

Videos (a `ViViTConfig`, `mone.models.vivit`; numbers are per clip, so "8x1" evaluation costs 8x):
the t x p x p tubelet embedding, T' spatial passes of `depth` blocks over N + 1 tokens
(the spatial CLS token is one extra token at full width D, also under MoNE and MatViViT;
attention over all N + 1), T' x N x D x E per router, `temporal_depth` dense blocks over
T' + 1 tokens, and the classifier on the temporal CLS token. ViViT-B/16x2 FE with 32
frames comes to 283.3 GFLOPs at 224 px / 400 classes (Kinetics-400) and 374.0 at 256 px /
174 classes (SSv2; paper: 376.3, -0.6%). MoNE on SSv2 at Table 1's e_c = 0.4 comes to
164.1 (paper: 162.8, +0.8%). EPR's integer token counts make the cost a step function of
e_c: e_c in [0.394, 0.396] gives 162.4 and [0.397, 0.400] gives 164.1, so 162.8 falls
between two steps and e_c = 0.4 is the paper's setting. The spatial transformer is 98%
of the dense clip; the CLS token adds 1.4 GFLOPs per clip, the embedding 4.8.
Blocks are counted whole, although only the spatial CLS token leaves the spatial
transformer: JAX drops the last spatial block's patch-token attention-output projection
and MLP as dead code (21.7 GFLOPs of the dense SSv2 clip, 8.6 of MoNE at e_c = 0.4), so
the executed work is that much lower. Whole blocks are the published convention: without
them the dense clip would be 352.3, 6% under the paper's 376.3.
"""
import numpy as np

from mone import capacity as capacity_lib
from mone.models.config import KINDS, VIDEO_KINDS, ViTConfig, ViViTConfig, mod_tokens


def block_macs(num_tokens_per_group, widths, width: int, mlp_dim: int, attended: int | None = None):
  """MACs of one nested block: group g has n_g tokens at width d_g; attention over `attended` tokens."""
  n_total = sum(num_tokens_per_group) if attended is None else attended
  macs = 0
  for n, d in zip(num_tokens_per_group, widths):
    macs += n * d * 3 * width      # sliced QKV in-projection
    macs += n * width * d          # attention output projection, first d outputs
    macs += n * d * mlp_dim        # MLP in-projection
    macs += n * mlp_dim * d        # MLP out-projection, first d outputs
  macs += 2 * n_total * n_total * width  # QK^T and AV at full width
  return macs


def _embed_head_macs(cfg: ViTConfig):
  return cfg.num_tokens * cfg.patch_size ** 2 * cfg.channels * cfg.width + cfg.width * cfg.num_classes


def macs(config: ViTConfig | ViViTConfig, kind: str = "vit", e_c: float | None = None, *,
         capacities=None, drop_smallest: bool = False) -> int:
  """Forward multiply-accumulates of one example (one clip for a ViViTConfig). See `gflops`."""
  if isinstance(config, ViViTConfig):
    return _vivit_macs(config, kind, e_c, capacities, drop_smallest)
  cfg, n, D, M = config, config.num_tokens, config.width, config.mlp_dim
  widths = cfg.expert_widths
  total = _embed_head_macs(cfg)
  if kind == "vit":
    return total + cfg.depth * block_macs([n], [D], D, M)
  if kind == "matvit":
    rel = [w / D for w in widths]
    if e_c is None or not any(abs(e_c - r) < 1e-9 for r in rel):
      raise ValueError(f"matvit needs e_c equal to a nested width fraction {rel}, got {e_c}")
    d = widths[int(np.argmin([abs(e_c - r) for r in rel]))]
    return total + cfg.depth * block_macs([n], [d], D, M)
  if kind == "mod":
    k = mod_tokens(cfg)
    routed_layers = cfg.depth // 2  # layers 1, 3, 5, ...
    return (total + (cfg.depth - routed_layers) * block_macs([n], [D], D, M)
            + routed_layers * (block_macs([k], [D], D, M) + n * D))  # + the per-layer router
  if kind == "mone":
    if (e_c is None) == (capacities is None):
      raise ValueError("mone needs exactly one of e_c or capacities")
    caps = capacity_lib.budget("mone", e_c, cfg.num_experts).capacities if capacities is None else capacities
    counts = capacity_lib.expert_counts(caps, n)
    live = [(c, w) for g, (c, w) in enumerate(zip(counts, widths)) if c and not (drop_smallest and g == 0)]
    routed = block_macs([c for c, _ in live], [w for _, w in live], D, M, sum(c for c, _ in live))
    dense_layers = cfg.router_layer
    return (total + dense_layers * block_macs([n], [D], D, M)
            + (cfg.depth - dense_layers) * routed + cfg.num_routers * n * D * cfg.num_experts)
  raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _vivit_macs(cfg: ViViTConfig, kind, e_c, capacities, drop_smallest) -> int:
  """One clip of the ViViT factorised encoder: T' spatial passes over N + 1 tokens (the
  spatial CLS token always at width D), one temporal pass over T' + 1 tokens at D."""
  n, nt, D, M = cfg.num_tokens, cfg.num_temporal, cfg.width, cfg.mlp_dim
  widths = cfg.expert_widths
  embed = nt * n * cfg.tubelet_size * cfg.patch_size ** 2 * cfg.channels * D  # 3-D conv
  temporal = cfg.temporal_depth * block_macs([nt + 1], [D], D, M)
  head = D * cfg.num_classes
  dense = block_macs([1, n], [D, D], D, M)  # one spatial block, one temporal index
  if kind == "vit":
    spatial = cfg.depth * dense
  elif kind == "matvit":
    rel = [w / D for w in widths]
    if e_c is None or not any(abs(e_c - r) < 1e-9 for r in rel):
      raise ValueError(f"matvit needs e_c equal to a nested width fraction {rel}, got {e_c}")
    d = widths[int(np.argmin([abs(e_c - r) for r in rel]))]
    spatial = cfg.depth * block_macs([1, n], [D, d], D, M)
  elif kind == "mone":
    if (e_c is None) == (capacities is None):
      raise ValueError("mone needs exactly one of e_c or capacities")
    caps = capacity_lib.budget("mone", e_c, cfg.num_experts).capacities if capacities is None else capacities
    counts = capacity_lib.expert_counts(caps, n)
    live = [(c, w) for g, (c, w) in enumerate(zip(counts, widths)) if c and not (drop_smallest and g == 0)]
    routed = block_macs([1] + [c for c, _ in live], [D] + [w for _, w in live], D, M)
    spatial = (cfg.router_layer * dense + (cfg.depth - cfg.router_layer) * routed
               + cfg.num_routers * n * D * cfg.num_experts)
  else:
    raise ValueError(f"kind must be one of {VIDEO_KINDS} for a ViViTConfig, got {kind!r}")
  return embed + nt * spatial + temporal + head


def gflops(config: ViTConfig | ViViTConfig, kind: str = "vit", e_c: float | None = None, **kwargs) -> float:
  """Analytic GFLOPs (1 MAC = 1 FLOP) of one forward pass of one example (a ViViTConfig:
  of one clip).

  kind: 'vit' (dense), 'matvit' (e_c = the sub-model's width fraction, e.g. 0.25),
  'mod' (12.5% of tokens every other layer; images only), 'mone' (e_c, or
  capacities=... directly).
  """
  return macs(config, kind, e_c, **kwargs) / 1e9
