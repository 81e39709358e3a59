"""The model kinds, one object each: ViT, MatViT, MoD and MoNE for images, ViViT, MatViViT and
MoNE for videos (Sec. 4.4; MoD is image-only, as in the paper).

A training config names its kind (`TrainConfig.kind`: "vit", "matvit", "mod", "mone") and its
model (a ViTConfig, or a ViViTConfig for videos); `lookup` finds the object for that pair (`KINDS`),
once per config: `TrainConfig.model_kind`. What the kinds do differently is written here and nowhere
else: the Flax module a kind builds, how it is applied (MoNE under a capacity budget, MatViT at a nested width), its
training loss (MatViT's is the mean over its widths), the budget an e_c gives, the points a
finished run is evaluated at, and which tokens each encoder block processes at which width
(`layers`, what `mone.flops` counts). The trainer, the evaluation and the FLOP counts look
the kind up once and ask it.

This module imports neither JAX nor Flax, because the training configs and the FLOP counts
look kinds up and load without them: a kind imports its model module when it builds a model.
"""
import dataclasses
import functools
from typing import ClassVar

import numpy as np

from mone import capacity as capacity_lib
from mone.models.config import ViViTConfig, mod_tokens


@dataclasses.dataclass(frozen=True)
class Layer:
  """One encoder block as `mone.flops` counts it: the (tokens, width) groups it projects, all
  of which attend to each other at full width, and the MACs of the router beside it (0: none)."""
  groups: tuple[tuple[int, int], ...]
  router: int = 0


def _dense_layers(model, width: int) -> tuple[Layer, ...]:
  """Every block with all N patch tokens at `width`."""
  return (Layer(((model.num_tokens, width),)),) * model.depth


@dataclasses.dataclass(frozen=True)
class Kind:
  """A model kind for images or (video=True) videos. This base class is the dense model (ViT,
  ViViT): no budget, one width, one evaluation point; the other kinds override what differs.

  A point where a model runs is (budget, width_index): a `capacity.Budget` for MoNE, a nested
  width's index for a MatViT sub-model, None for what a kind does not take."""
  name: str    # TrainConfig.kind
  label: str   # what the book calls it: "ViT", "MatViViT", ...
  video: bool = False  # built for a ViViTConfig (`mone.models.vivit`), else a ViTConfig (`mone.models.vit`)

  routed: ClassVar[bool] = False  # runs under a capacity budget (MoNE)

  def __reduce__(self):
    # A kind is one object of the registry: a config sent to another process finds the same one.
    return named, (self.name, self.video)

  # ------------------------------------------------------------------ the model ---

  def build(self, model, remat: bool = False, backend: str | None = None):
    """The Flax module for `model` (its config); remat and backend as `mone.models.vit.ViT` takes them."""
    from mone.models import vit, vivit  # Flax: imported only to build (see the module docstring)
    self._check_model(model)
    return self._module(vit, vivit)(model, remat=remat, backend=backend)

  def _module(self, vit, vivit):
    """The Flax module class this kind builds, given the image and video model modules."""
    return functools.partial(vivit.ViViT if self.video else vit.ViT, routed=self.routed)

  def _check_model(self, model) -> None:
    if isinstance(model, ViViTConfig) != self.video:
      want = "ViViTConfig (mone.models.config.vivit(...))" if self.video else "ViTConfig (mone.models.config.vit(...))"
      raise ValueError(f"config must be a {want}, got {type(model).__name__}")

  def init(self, module, rngs, x, budget=None):
    """The module's variables, initialised on inputs x (at `budget`, for a routed kind)."""
    return module.init(rngs, x)

  def apply(self, module, variables, x, budget=None, width_index=None, rng=None):
    """(logits, aux) of the module on x at the point (budget, width_index); rng: the random router's."""
    return module.apply(variables, x)

  def loss(self, model, loss_at):
    """The training loss of a batch, from loss_at(width_index): the loss of one forward pass."""
    return loss_at(None)

  # ------------------------------------------------------------------ budgets ---

  def budget(self, cfg, e_c: float | None = None):
    """The budget a training config's model runs under at e_c (default: the config's own),
    static under jit; None for a kind without one. The one place the trainer and the
    evaluation turn an e_c into capacities (through `TrainConfig.budget`)."""
    return None

  def train_budget(self, cfg, step: int):
    """The budget of training step `step` (None for a kind without one)."""
    return None

  def recorded_e_c(self, cfg):
    """The e_c a run file records as its training budget: None for a kind without one."""
    return None

  def check(self, cfg, need) -> None:
    """Validates a training config's budget fields; need(ok, message) raises for the config."""
    need(not cfg.adaptive, "adaptive=True needs kind=mone")

  # --------------------------------------------------------------- evaluation ---

  def eval_points(self, cfg) -> list:
    """The (e_c, width_index) pairs a finished run reports."""
    return [(None, None)]

  def curve_point(self, cfg) -> tuple:
    """The (e_c, width_index) a learning curve follows."""
    return (None, None)

  # -------------------------------------------------------------------- FLOPs ---

  def train_cost(self, cfg, cost_at) -> float:
    """The forward cost of one training example, averaged over steps, from cost_at(e_c,
    width_index): the cost of one forward pass at an evaluation point."""
    return cost_at(None, None)

  def point(self, model, e_c=None, capacities=None, drop_smallest: bool = False) -> tuple:
    """The point (budget, width_index) that `mone.flops.gflops`'s e_c, capacities and
    drop_smallest name (for the dense model and MoD: none; they are ignored)."""
    return None, None

  def layers(self, model, budget=None, width_index=None) -> tuple[Layer, ...]:
    """The encoder blocks at a point, as `mone.flops` counts them (for a ViViTConfig: one
    temporal index of its spatial transformer, the CLS token left out)."""
    return _dense_layers(model, model.width)


@dataclasses.dataclass(frozen=True)
class MatViT(Kind):
  """MatViT (MatViViT): the dense model whose nested widths are sub-models, trained jointly
  with an equal-weight loss over the widths (MatFormer) and evaluated at each."""

  def apply(self, module, variables, x, budget=None, width_index=None, rng=None):
    return module.apply(variables, x, width_index=width_index)

  def loss(self, model, loss_at):
    losses = [loss_at(j) for j in range(model.num_experts)]
    return sum(losses) / len(losses)

  def eval_points(self, cfg) -> list:
    return [(None, j) for j in range(cfg.model.num_experts)]

  def curve_point(self, cfg) -> tuple:
    return (None, cfg.model.num_experts - 1)  # the full width

  def train_cost(self, cfg, cost_at) -> float:
    return sum(cost_at(None, j) for j in range(cfg.model.num_experts))  # every width runs forward

  def point(self, model, e_c=None, capacities=None, drop_smallest: bool = False) -> tuple:
    """e_c: the sub-model's width fraction d_j / D (None: the full model)."""
    if e_c is None:
      return None, None
    rel = [w / model.width for w in model.expert_widths]
    if not any(abs(e_c - r) < 1e-9 for r in rel):
      raise ValueError(f"matvit needs e_c equal to a nested width fraction {rel}, got {e_c}")
    return None, int(np.argmin([abs(e_c - r) for r in rel]))

  def layers(self, model, budget=None, width_index=None) -> tuple[Layer, ...]:
    if width_index is not None and width_index not in range(model.num_experts):
      raise ValueError(f"width_index must be in [0, {model.num_experts - 1}], got {width_index!r}")
    return _dense_layers(model, model.width if width_index is None else model.expert_widths[width_index])


@dataclasses.dataclass(frozen=True)
class MoD(Kind):
  """The Mixture-of-Depths baseline (images only): every other block processes the top
  `mod_capacity` of the tokens its own router picks (`mone.models.vit.MoD`)."""

  def _module(self, vit, vivit):
    return vit.MoD

  def layers(self, model, budget=None, width_index=None) -> tuple[Layer, ...]:
    n, D, k = model.num_tokens, model.width, mod_tokens(model)
    dense, routed = Layer(((n, D),)), Layer(((k, D),), router=n * D)
    return tuple(routed if l % 2 else dense for l in range(model.depth))  # layers 1, 3, 5, ... are routed


@dataclasses.dataclass(frozen=True)
class MoNE(Kind):
  """MoNE: routers and Expert Preferred Routing send each token to one nested expert, under a
  capacity budget (a fixed e_c, or with adaptive training one drawn every step)."""

  routed: ClassVar[bool] = True

  def init(self, module, rngs, x, budget=None):
    return module.init(rngs, x, budget.capacities)

  def apply(self, module, variables, x, budget=None, width_index=None, rng=None):
    return module.apply(variables, x, budget.capacities, drop_smallest=budget.drop_smallest, rngs={"routing": rng})

  def budget(self, cfg, e_c: float | None = None):
    # From the config's fields, as `TrainConfig.budget` gives it: the schema imports this module, so
    # a kind never calls back into it.
    return capacity_lib.budget(cfg.allocation, cfg.e_c if e_c is None else e_c, cfg.model.num_experts)

  def train_budget(self, cfg, step: int):
    """The config's e_c, or (adaptive) one drawn from cfg.adaptive_e_c: a function of (seed, step)."""
    e_c = cfg.e_c
    if cfg.adaptive:
      e_c = float(np.random.default_rng([cfg.seed, step, 7]).choice(cfg.adaptive_e_c))
    return self.budget(cfg, e_c)

  def recorded_e_c(self, cfg):
    return cfg.e_c

  def check(self, cfg, need) -> None:
    need(not cfg.adaptive or len(cfg.adaptive_e_c) >= 1, "adaptive=True needs at least one adaptive_e_c")
    for e_c in (tuple(cfg.adaptive_e_c) if cfg.adaptive else (cfg.e_c,)) + tuple(cfg.eval_e_c):
      need(e_c is not None, "kind=mone needs e_c (or adaptive=True)")
      self.budget(cfg, e_c)  # raises a ValueError naming e_c
    need(cfg.adaptive or cfg.e_c is not None, "kind=mone needs e_c")

  def eval_points(self, cfg) -> list:
    train_e_c = () if cfg.adaptive else (cfg.e_c,)
    return [(e, None) for e in dict.fromkeys(train_e_c + tuple(cfg.eval_e_c))]

  def curve_point(self, cfg) -> tuple:
    """The training budget; for adaptive training the first evaluation budget, or without one
    the middle of the adaptive budgets."""
    points = self.eval_points(cfg)
    if points:
      return points[0]
    return (sorted(cfg.adaptive_e_c)[len(cfg.adaptive_e_c) // 2], None)

  def train_cost(self, cfg, cost_at) -> float:
    if cfg.adaptive:
      return float(np.mean([cost_at(e, None) for e in cfg.adaptive_e_c]))
    return cost_at(cfg.e_c, None)

  def point(self, model, e_c=None, capacities=None, drop_smallest: bool = False) -> tuple:
    """e_c: the budget of Eq. 3's allocation ("mone"); or capacities (and drop_smallest) directly."""
    if (e_c is None) == (capacities is None):
      raise ValueError("mone needs exactly one of e_c or capacities")
    if capacities is None:
      capacities = capacity_lib.budget("mone", e_c, model.num_experts).capacities
    return capacity_lib.Budget(None, e_c, tuple(capacities), drop_smallest), None  # allocation None: given

  def layers(self, model, budget=None, width_index=None) -> tuple[Layer, ...]:
    """Blocks before the first router run dense; the others process each expert's tokens
    (EPR's exact counts) at its width, the smallest expert's dropped with drop_smallest."""
    n, D = model.num_tokens, model.width
    counts = capacity_lib.expert_counts(budget.capacities, n)
    live = tuple((c, w) for g, (c, w) in enumerate(zip(counts, model.expert_widths))
                 if c and not (budget.drop_smallest and g == 0))
    router = n * D * model.num_experts
    return tuple(Layer(((n, D),)) if l < model.router_layer else Layer(live, router if l in model.router_layers else 0)
                 for l in range(model.depth))


KINDS = {(k.name, k.video): k for k in (
    Kind("vit", "ViT"), MatViT("matvit", "MatViT"), MoD("mod", "MoD"), MoNE("mone", "MoNE"),
    Kind("vit", "ViViT", video=True), MatViT("matvit", "MatViViT", video=True), MoNE("mone", "MoNE", video=True))}
NAMES = tuple(dict.fromkeys(name for name, _ in KINDS))  # every TrainConfig.kind: vit, matvit, mod, mone


def names(video: bool) -> tuple[str, ...]:
  """The kinds there are for images (video=False) or for videos."""
  return tuple(name for name, v in KINDS if v == video)


def named(name: str, video: bool) -> Kind:
  """The kind named `name` for images or (video=True) videos. Raises a ValueError naming the kinds
  there are."""
  found = KINDS.get((name, video))
  if found is None:
    only = f" ({KINDS[name, False].label} is image-only, as in the paper)" if video and (name, False) in KINDS else ""
    raise ValueError(f"kind must be one of {names(video)} for {'videos (a ViViTConfig)' if video else 'images'}, "
                     f"got {name!r}{only}")
  return found


def lookup(kind, model) -> Kind:
  """The kind named `kind` (a name, or a Kind of either modality) for the model config `model`:
  its image form for a ViTConfig, its video form for a ViViTConfig (`named`)."""
  return named(kind.name if isinstance(kind, Kind) else kind, isinstance(model, ViViTConfig))


def of_run(metrics: dict) -> Kind:
  """The image form of a run file's kind (metrics["kind"]): what a routed run is and what the book
  calls it do not depend on the modality, and a run file's config is a dict."""
  return KINDS[metrics["kind"], False]


def is_dense(kind: Kind) -> bool:
  """Whether a kind is the dense model (ViT, ViViT): the base class itself, no kind that overrides it."""
  return type(kind) is Kind


def build(model, kind, remat: bool = False, backend: str | None = None):
  """The Flax module of kind `kind` (a name or a Kind) for the model config `model`: ViT, MatViT
  (the same module as ViT; pick width_index), MoD or MoNE for a ViTConfig, their ViViT forms
  for a ViViTConfig. remat=True rematerialises every block; backend: see `mone.models.vit.ViT`."""
  return lookup(kind, model).build(model, remat=remat, backend=backend)
