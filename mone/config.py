"""Model configurations: frozen, typed, validated.

`vit("S/16")` gives the paper's ViT-S/16 (ImageNet-21k head); `vit("XS/6")` the CPU model
the small profile trains on the embedded digits; `vit("tiny/8")` is for tests. Any field
can be overridden by keyword; an unknown keyword is an error that names it.
"""
import dataclasses

from mone import capacity as capacity_lib

# name: (width D, depth, heads). S/B/L follow ViT (Dosovitskiy et al., 2021).
SIZES = {
    "tiny": (32, 2, 2),   # unit tests
    "XS": (64, 6, 4),     # default CPU profile
    "S": (384, 12, 6),
    "B": (768, 12, 12),
    "L": (1024, 24, 16),
}
PAPER_SIZES = ("S", "B", "L")
ROUTERS = ("learned", "random")


@dataclasses.dataclass(frozen=True)
class ViTConfig:
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

  def __post_init__(self):
    def need(ok, msg):
      if not ok:
        raise ValueError(f"{self.name}: {msg}")
    for f in ("image_size", "patch_size", "channels", "width", "depth", "num_heads",
              "mlp_ratio", "num_classes"):
      need(isinstance(getattr(self, f), int) and getattr(self, f) >= 1,
           f"{f} must be a positive integer, got {getattr(self, f)!r}")
    need(self.image_size % self.patch_size == 0,
         f"image_size={self.image_size} must be divisible by patch_size={self.patch_size}")
    need(self.width % self.num_heads == 0,
         f"width={self.width} must be divisible by num_heads={self.num_heads}")
    capacity_lib.expert_widths(self.width, self.num_experts)  # raises a clear ValueError
    need(0 <= self.router_layer < self.depth,
         f"router_layer must be in [0, {self.depth - 1}] (depth={self.depth}), got {self.router_layer}")
    need(1 <= self.num_routers <= self.depth - self.router_layer,
         f"num_routers must be in [1, {self.depth - self.router_layer}] for router_layer="
         f"{self.router_layer} and depth={self.depth}, got {self.num_routers}")
    need(self.router in ROUTERS, f"router must be one of {ROUTERS}, got {self.router!r}")
    need(0 < self.mod_capacity <= 1, f"mod_capacity must be in (0, 1], got {self.mod_capacity}")

  @property
  def num_tokens(self) -> int:
    return (self.image_size // self.patch_size) ** 2

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
  """A ViT config: 'S/16', 'B/16', 'L/16' (224 px, 21,843 classes) or 'XS/6', 'tiny/8' (CPU).

  The small sizes default to the embedded digits dataset: 48 px images, 10 classes.
  """
  size, patch = _parse_variant(variant)
  width, depth, heads = SIZES[size]
  base = dict(name=variant, patch_size=patch, width=width, depth=depth, num_heads=heads)
  if size not in PAPER_SIZES:
    base.update(image_size=48 if size == "XS" else 32, num_classes=10)
  return _build(ViTConfig, base, overrides)
