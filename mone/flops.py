"""Analytic forward FLOPs, counting one multiply-accumulate as one FLOP (as the paper does).

Counted: patch embedding, every projection (QKV, attention output, MLP in/out), the two attention
matmuls (QK^T and AV, always at full width D over all N tokens), routers and the classifier. Not
counted: LayerNorm, softmax, GELU, biases and residual adds (O(N D) each, under 2% of the total for
the paper's models). With these rules ViT-S/16, B/16 and L/16 at 224 px with a 21,843-way head come
to 4.6, 17.5 and 61.3 GFLOPs (paper: 4.6, 17.6, 61.7), ViViT-B/16x2 FE on SSv2 to 374.0 (paper:
376.3); `_vivit_macs` explains the video numbers.

For MoNE the token counts per expert are the exact static counts EPR uses
(`mone.capacity.expert_counts`); which tokens each block processes, at which width, is the model
kind's to say (`mone.models.kinds.Kind.layers`). A video's numbers are per clip ("8x1" evaluation
costs 8x).

A training config's FLOPs (`forward_gflops`, `train_gflops`, ...) sum these over a run: what a run file
records, and what the run-time estimates scale by (`mone.runs.run_times`).
"""
import math

from mone.models import kinds
from mone.models.config import ViTConfig, ViViTConfig


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


def _layer_macs(layer: kinds.Layer, width: int, mlp_dim: int, full=()) -> int:
  """One block of `kinds.Layer` plus its router; `full`: groups every block adds (ViViT's CLS token)."""
  groups = tuple(full) + layer.groups
  return block_macs([n for n, _ in groups], [d for _, d in groups], width, mlp_dim) + layer.router


def _embed_head_macs(cfg: ViTConfig):
  return cfg.num_tokens * cfg.patch_size ** 2 * cfg.channels * cfg.width + cfg.width * cfg.num_classes


# ViViT-B/16x2 FE, 32 frames: 283.3 GFLOPs at 224 px / 400 classes (Kinetics-400), 374.0 at 256 px /
# 174 classes (SSv2; paper 376.3, -0.6%); MoNE on SSv2 at Table 1's e_c = 0.4: 164.1 (paper 162.8,
# +0.8%). EPR's integer token counts make the cost a step function of e_c (162.4 on [0.394, 0.396],
# 164.1 on [0.397, 0.400]), so 162.8 falls between two steps and 0.4 is the paper's setting. The
# spatial transformer is 98% of the dense clip, the CLS token 1.4 GFLOPs, the embedding 4.8. Blocks
# are counted whole, the published convention, though JAX drops the last spatial block's
# patch-token out-projection and MLP as dead code (21.7 GFLOPs of the dense SSv2 clip, 8.6 of MoNE's
# at e_c = 0.4): without them the dense clip would be 352.3, 6% under the paper's 376.3.
def _vivit_macs(cfg: ViViTConfig, layers) -> int:
  """One clip of the ViViT factorised encoder: T' spatial passes over N + 1 tokens (the
  spatial CLS token always at width D), one temporal pass over T' + 1 tokens at D."""
  n, nt, D, M = cfg.num_tokens, cfg.num_temporal, cfg.width, cfg.mlp_dim
  embed = nt * n * cfg.tubelet_size * cfg.patch_size ** 2 * cfg.channels * D  # 3-D conv
  temporal = cfg.temporal_depth * block_macs([nt + 1], [D], D, M)
  head = D * cfg.num_classes
  spatial = sum(_layer_macs(layer, D, M, full=((1, D),)) for layer in layers)  # one temporal index
  return embed + nt * spatial + temporal + head


def macs_at(config: ViTConfig | ViViTConfig, kind, budget=None, width_index=None) -> int:
  """Forward multiply-accumulates of one example (one clip for a ViViTConfig) of kind `kind`
  (a name or a `kinds.Kind`) at a point as the models take it: a `capacity.Budget` (MoNE) or
  a nested width's index (a MatViT sub-model; None: the full model)."""
  layers = kinds.lookup(kind, config).layers(config, budget, width_index)
  if isinstance(config, ViViTConfig):
    return _vivit_macs(config, layers)
  return _embed_head_macs(config) + sum(_layer_macs(layer, config.width, config.mlp_dim) for layer in layers)


def gflops_at(config: ViTConfig | ViViTConfig, kind, budget=None, width_index=None) -> float:
  """`macs_at` in GFLOPs (1 MAC = 1 FLOP)."""
  return macs_at(config, kind, budget, width_index) / 1e9


def macs(config: ViTConfig | ViViTConfig, kind="vit", e_c: float | None = None, *,
         capacities=None, drop_smallest: bool = False) -> int:
  """Forward multiply-accumulates of one example (one clip for a ViViTConfig). See `gflops`."""
  k = kinds.lookup(kind, config)
  return macs_at(config, k, *k.point(config, e_c, capacities, drop_smallest))


def gflops(config: ViTConfig | ViViTConfig, kind="vit", e_c: float | None = None, **kwargs) -> float:
  """Analytic GFLOPs (1 MAC = 1 FLOP) of one forward pass of one example (a ViViTConfig:
  of one clip).

  kind: a name or a `mone.models.kinds.Kind`: 'vit' (dense), 'matvit' (e_c = the sub-model's
  width fraction, e.g. 0.25; without one the full model), 'mod' (12.5% of tokens every other
  layer; images only), 'mone' (e_c, or capacities=... and drop_smallest=... directly).
  """
  return macs(config, kind, e_c, **kwargs) / 1e9


# ------------------------------------------------------------- a training config's FLOPs ---
# cfg is a `mone.configs.schema.TrainConfig`, asked only for its fields and kind: importing the schema
# here would make the FLOP counter depend on the datasets the schema validates against.


def forward_gflops(cfg, e_c: float | None = None, width_index: int | None = None) -> float:
  """Inference GFLOPs per example of the config's model at the given capacity."""
  kind = cfg.model_kind
  return gflops_at(cfg.model, kind, kind.budget(cfg, e_c), width_index)


def train_step_gflops(cfg) -> float:
  """Forward GFLOPs per training example, averaged over steps (adaptive e_c varies; MatViT's
  joint loss runs every nested width forward)."""
  return cfg.model_kind.train_cost(cfg, lambda e_c, width_index: forward_gflops(cfg, e_c, width_index))


def train_gflops(cfg) -> float:
  """A whole run's training GFLOPs: forward and backward (3x the forward) of every example."""
  return 3 * train_step_gflops(cfg) * cfg.batch_size * num_train_steps(cfg)


def num_train_steps(cfg) -> int:
  """cfg.steps, or with iso_flops the steps that spend the dense ViT's training FLOPs."""
  if not cfg.iso_flops:
    return cfg.steps
  dense = gflops(cfg.model)  # the dense ViT's
  return int(math.ceil(cfg.steps * dense / train_step_gflops(cfg)))
