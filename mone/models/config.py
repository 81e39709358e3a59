"""Model configurations: frozen, typed, validated.

`vit("S/16")` gives the paper's ViT-S/16 (ImageNet-21k head); `vit("XS/4")` the CPU model
the small profile trains on the embedded digits; `vit("tiny/8")` is for tests. Any field
can be overridden by keyword; an unknown keyword is an error that names it.
"""
import dataclasses

import numpy as np

from mone import capacity as capacity_lib

# name: (width D, depth, heads). S/B/L follow ViT (Dosovitskiy et al., 2021); Ti is DeiT's ViT-Ti
# (Touvron et al., 2021), the model of the paper's appendix throughput table.
SIZES = {
    "tiny": (32, 2, 2),   # unit tests
    "XS": (64, 4, 4),     # the first CPU profile (its smallest expert is 8 wide)
    "mini": (128, 4, 4),  # the recalibrated CPU profile: smallest expert 16 wide
    "Ti": (192, 12, 3),
    "S": (384, 12, 6),
    "B": (768, 12, 12),
    "L": (1024, 24, 16),
}
PAPER_SIZES = ("Ti", "S", "B", "L")
ROUTERS = ("learned", "random")
# Sizes whose committed runs were trained with Eq. 1's alpha unconstrained; every other size
# gets the paper's alpha in [0, 1) (see `alpha_bounded`).
UNBOUNDED_ALPHA_SIZES = ("XS",)


# The blocks' implementations (`mone.models.layers.resolve_attention`, `resolve_barrier`, `resolve_mlp`).
ATTENTIONS = ("auto", "xla", "xla_vjp", "dot_product", "cudnn")
BARRIERS = ("auto", "on", "off")
MLPS = ("auto", "xla", "pallas")
LAYER_LOOPS = ("unroll", "scan")  # `mone.models.layers.run_blocks`
WEIGHT_GRADS = ("autodiff", "direct", "narrow_first")  # `mone.models.linear.linear`
TUBELET_EMBEDS = ("conv", "matmul")  # `mone.models.vivit.TubeletEmbed`


def _check_paths(cfg) -> None:
  if cfg.attention not in ATTENTIONS:
    raise ValueError(f"attention must be one of {ATTENTIONS}, got {cfg.attention!r}")
  if cfg.grad_barrier not in BARRIERS:
    raise ValueError(f"grad_barrier must be one of {BARRIERS}, got {cfg.grad_barrier!r}")
  if cfg.mlp not in MLPS:
    raise ValueError(f"mlp must be one of {MLPS}, got {cfg.mlp!r}")
  if cfg.layer_loop not in LAYER_LOOPS:
    raise ValueError(f"layer_loop must be one of {LAYER_LOOPS}, got {cfg.layer_loop!r}")
  if cfg.weight_grad not in WEIGHT_GRADS:
    raise ValueError(f"weight_grad must be one of {WEIGHT_GRADS}, got {cfg.weight_grad!r}")


def _added(default):
  """A field added after run files were committed. `results.config_hash` leaves it out while it
  holds `default` (the behaviour from before it existed), so those files keep their names."""
  return dataclasses.field(default=default, metadata={"hash_omit_default": True})


def _check_common(cfg, positive, depth_name: str):
  """Validates the fields ViTConfig and ViViTConfig share (the integers in `positive`, patching,
  heads, experts, routers, classifier init); returns the `need(ok, msg)` that raises a
  ValueError naming the config, for the class's own checks."""
  def need(ok, msg):
    if not ok:
      raise ValueError(f"{cfg.name}: {msg}")
  for f in positive:
    need(isinstance(getattr(cfg, f), int) and getattr(cfg, f) >= 1,
         f"{f} must be a positive integer, got {getattr(cfg, f)!r}")
  need(cfg.image_size % cfg.patch_size == 0,
       f"image_size={cfg.image_size} must be divisible by patch_size={cfg.patch_size}")
  need(cfg.width % cfg.num_heads == 0, f"width={cfg.width} must be divisible by num_heads={cfg.num_heads}")
  capacity_lib.expert_widths(cfg.width, cfg.num_experts)  # raises a clear ValueError
  need(0 <= cfg.router_layer < cfg.depth,
       f"router_layer must be in [0, {cfg.depth - 1}] ({depth_name}={cfg.depth}), got {cfg.router_layer}")
  need(1 <= cfg.num_routers <= cfg.depth - cfg.router_layer,
       f"num_routers must be in [1, {cfg.depth - cfg.router_layer}] for router_layer="
       f"{cfg.router_layer} and {depth_name}={cfg.depth}, got {cfg.num_routers}")
  need(cfg.router in ROUTERS, f"router must be one of {ROUTERS}, got {cfg.router!r}")
  need(isinstance(cfg.head_zeroinit, bool), f"head_zeroinit must be True or False, got {cfg.head_zeroinit!r}")
  need(isinstance(cfg.alpha_bounded, bool), f"alpha_bounded must be True or False, got {cfg.alpha_bounded!r}")
  return need


class _Derived:
  """What ViTConfig and ViViTConfig derive alike from width, depth, experts and routers (for
  ViViT: of its spatial transformer, the one MoNE routes)."""

  @property
  def mlp_dim(self) -> int:
    return self.mlp_ratio * self.width

  @property
  def expert_widths(self) -> tuple[int, ...]:
    return capacity_lib.expert_widths(self.width, self.num_experts)

  @property
  def router_layers(self) -> tuple[int, ...]:
    """Layers where a router re-decides the assignment, evenly spaced from router_layer."""
    span = self.depth - self.router_layer
    return tuple(self.router_layer + (r * span) // self.num_routers for r in range(self.num_routers))


@dataclasses.dataclass(frozen=True)
class ViTConfig(_Derived):
  """A ViT whose blocks contain E nested experts of widths D/2^(E-1), ..., D/2, D."""
  name: str = "S/16"
  image_size: int = 224     # H = W in pixels
  patch_size: int = 16
  channels: int = 3
  width: int = 384          # D: residual stream and attention width, for every expert
  depth: int = 12
  num_heads: int = 6
  mlp_ratio: int = 4        # MLP hidden is 4D for every expert (Sec. 3.1), only in/out are sliced
  num_classes: int = 21843  # ImageNet-21k
  num_experts: int = 4      # E; widths (D/8, D/4, D/2, D) for E = 4
  router_layer: int = 0     # layer of the first router; layers before it run dense (Sec. 6)
  num_routers: int = 1      # routers spread evenly from router_layer; a decision holds until the next
  router: str = "learned"   # "learned": softmax(W_r x + b_r); "random": same capacities, random tokens
  mod_capacity: float = 0.125  # MoD baseline: fraction of tokens its routed layers process
  head_zeroinit: bool = _added(True)  # classifier kernel: zeros (ViT, big_vision) or lecun_normal
  # Eq. 1's alpha: True keeps it in [0, 1) as the paper states (`mone.models.nested.eq1_alpha`);
  # False leaves it unconstrained, as the XS runs committed before the bound were trained.
  alpha_bounded: bool = _added(False)
  # How the blocks compute, not what: each selects an implementation by backend ("auto": cuDNN's
  # flash attention and no gradient barrier on a CUDA GPU; on the CPU the reference attention and
  # the barrier, the code every committed run trained with), or names one to compare paths
  # (`mone.models.layers.resolve_attention`, `resolve_barrier`, `resolve_mlp`; the backend is the
  # model's `backend` argument, by default the one jax runs on). Same function, so not part of a
  # run's identity when left at "auto".
  attention: str = _added("auto")     # auto | xla | xla_vjp | dot_product | cudnn
  grad_barrier: str = _added("auto")  # auto | on | off
  mlp: str = _added("auto")           # auto | xla | pallas (`mone.models.fused_mlp`; "auto" is "xla")
  # unroll | scan: the encoder's blocks traced one by one, or as one loop over stacked weights
  # (`mone.models.layers.run_blocks`): the same parameters and function, one block to compile.
  layer_loop: str = _added("unroll")
  # autodiff | direct | narrow_first: how a projection's weight gradient is computed
  # (`mone.models.linear.linear`): JAX's transpose rule (every committed run's), or one dot contracting
  # the tokens, which XLA:CPU runs faster ("narrow_first": its narrower operand first, faster still).
  # The same function, not the same program: each rounds the last bits differently.
  weight_grad: str = _added("autodiff")

  def __post_init__(self):
    need = _check_common(self, ("image_size", "patch_size", "channels", "width", "depth", "num_heads",
                                "mlp_ratio", "num_classes"), "depth")
    _check_paths(self)
    need(0 < self.mod_capacity <= 1, f"mod_capacity must be in (0, 1], got {self.mod_capacity}")

  @property
  def num_tokens(self) -> int:
    return (self.image_size // self.patch_size) ** 2



def _build(cls, base: dict, overrides: dict):
  known = {f.name for f in dataclasses.fields(cls)}
  unknown = sorted(set(overrides) - known)
  if unknown:
    raise ValueError(f"unknown config key(s) {unknown} for {cls.__name__}; "
                     f"known keys: {sorted(known)}")
  return cls(**{**base, **overrides})


def _parse_variant(variant: str) -> tuple[str, int]:
  size, sep, patch = variant.partition("/")
  if size not in SIZES or not sep or not patch.isdigit():
    raise ValueError(f"variant must look like '<size>/<patch>' with size in {list(SIZES)}, "
                     f"e.g. 'S/16'; got {variant!r}")
  return size, int(patch)


def vit(variant: str = "S/16", **overrides) -> ViTConfig:
  """A ViT config: 'Ti/16', 'S/16', 'B/16', 'L/16' (224 px, 21,843 classes) or 'XS/4', 'tiny/8' (CPU).

  The small sizes default to the embedded digits dataset: 32 px images, 10 classes.
  """
  size, patch = _parse_variant(variant)
  width, depth, heads = SIZES[size]
  base = dict(name=variant, patch_size=patch, width=width, depth=depth, num_heads=heads,
              alpha_bounded=size not in UNBOUNDED_ALPHA_SIZES)
  if size not in PAPER_SIZES:
    base.update(image_size=32, num_classes=10)
  return _build(ViTConfig, base, overrides)


# ------------------------------------------------------------------------------
# Video: ViViT factorised encoder (Arnab et al., 2021, "Model 2"; paper Sec. 4.4).
# ------------------------------------------------------------------------------
# Temporal transformer depth per size; the spatial one is SIZES' depth. B and L follow
# ViViT-B/L FE (12 + 4 and 24 + 4 layers).
TEMPORAL_DEPTHS = {"tiny": 1, "XS": 2, "mini": 2, "S": 4, "B": 4, "L": 4}


@dataclasses.dataclass(frozen=True)
class ViViTConfig(_Derived):
  """A ViViT factorised encoder whose *spatial* blocks hold E nested experts (Sec. 4.4).

  The temporal transformer has the same width, heads and MLP ratio as the spatial one and
  always runs at full width. `depth`, `router_layer` and `num_routers` refer to the spatial
  transformer, so routing code written for ViTConfig reads them the same way.
  """
  name: str = "B/16x2"
  num_frames: int = 32      # T input frames per clip
  tubelet_size: int = 2     # t: frames per tubelet; T' = T / t temporal indices
  image_size: int = 224     # H = W; 224 for Kinetics-400, 256 for SSv2
  patch_size: int = 16      # p: tubelets are t x p x p (a 3-D convolution)
  channels: int = 3
  width: int = 768          # D, shared by the spatial and temporal transformers
  depth: int = 12           # L_s spatial blocks (MoNE lives here)
  temporal_depth: int = 4   # L_t temporal blocks (always dense)
  num_heads: int = 12
  mlp_ratio: int = 4
  num_classes: int = 400    # Kinetics-400; SSv2 has 174
  num_experts: int = 4
  router_layer: int = 0     # spatial layer of the first router
  num_routers: int = 1
  router: str = "learned"
  head_zeroinit: bool = _added(True)  # classifier kernel: zeros, or lecun_normal (see vivit.ClsHead)
  alpha_bounded: bool = _added(False)  # Eq. 1's alpha in [0, 1) (paper) or unconstrained (see ViTConfig)
  attention: str = _added("auto")     # as ViTConfig's
  grad_barrier: str = _added("auto")
  mlp: str = _added("auto")
  layer_loop: str = _added("unroll")  # the spatial encoder's; the 4 temporal blocks stay unrolled
  weight_grad: str = _added("autodiff")  # as ViTConfig's (every block's projections, spatial and temporal)
  tubelet_embed: str = _added("conv")  # "matmul": the same embedding as one matmul (vivit.TubeletEmbed)

  def __post_init__(self):
    _check_paths(self)
    need = _check_common(self, ("num_frames", "tubelet_size", "image_size", "patch_size", "channels",
                                "width", "depth", "temporal_depth", "num_heads", "mlp_ratio",
                                "num_classes"), "spatial depth")
    need(self.tubelet_embed in TUBELET_EMBEDS,
         f"tubelet_embed must be one of {TUBELET_EMBEDS}, got {self.tubelet_embed!r}")
    need(self.num_frames % self.tubelet_size == 0,
         f"num_frames={self.num_frames} must be divisible by tubelet_size={self.tubelet_size}")

  @property
  def num_tokens(self) -> int:
    """N: spatial tokens per temporal index (the spatial CLS token not included)."""
    return (self.image_size // self.patch_size) ** 2

  @property
  def num_temporal(self) -> int:
    """T': temporal indices, each a spatial transformer pass of N tokens."""
    return self.num_frames // self.tubelet_size



def vivit(variant: str = "B/16x2", **overrides) -> ViViTConfig:
  """A ViViT factorised-encoder config, '<size>/<patch>x<tubelet frames>'.

  'B/16x2': ViViT-B/16x2 FE, 32 frames; Kinetics-400 by default (224 px, 400 classes),
  SSv2 with `vivit("B/16x2", image_size=256, num_classes=174)`. The small sizes ('XS/4x2',
  'tiny/8x2') default to the embedded moving digits: 8 frames of 32 px, 10 classes.
  """
  size, sep, rest = variant.partition("/")
  patch, x, tubelet = rest.partition("x")
  if size not in SIZES or not sep or not x or not patch.isdigit() or not tubelet.isdigit():
    raise ValueError(f"variant must look like '<size>/<patch>x<tubelet>' with size in "
                     f"{list(SIZES)}, e.g. 'B/16x2'; got {variant!r}")
  width, depth, heads = SIZES[size]
  base = dict(name=variant, patch_size=int(patch), tubelet_size=int(tubelet), width=width,
              depth=depth, temporal_depth=TEMPORAL_DEPTHS[size], num_heads=heads,
              alpha_bounded=size not in UNBOUNDED_ALPHA_SIZES)
  if size not in PAPER_SIZES:
    base.update(num_frames=8, image_size=32, num_classes=10)
  return _build(ViViTConfig, base, overrides)


def mod_tokens(cfg: ViTConfig) -> int:
  """Tokens a MoD routed layer processes."""
  return max(1, int(np.floor(cfg.mod_capacity * cfg.num_tokens + 1e-6)))
