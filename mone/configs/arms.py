"""The arms of the experiments, each one typed value: a task, a model kind, its capacity and what sets
it apart (a random router, another allocation, a router placement or count, isoFLOPs or adaptive
training). An arm makes its config for any profile and seed (`Arm.config`), its label in the book
("MoNE e_c=0.3, random router"; the kind's own name, `kinds.Kind.label`) and its name on the command
line ("image:mone:0.3:random"). Labels and names are made from the fields and never read back: code
that needs to know what an arm is asks its fields.

`arms()` lists the small profile's headline arms, as its ten-seed plan trains them: the training
benchmark times them (`python -m mone.bench --training --arms NAME ...`) and the next profile's
calibration trains them (`mone.runs.recalibration`). `mone.configs.reads` declares every arm
each chapter reads, and `mone.configs.figures` plans them.
"""
import dataclasses

from mone import capacity
from mone.configs import profiles, schema
from mone.models import kinds

TASKS = ("image", "temporal", "appearance")
# Table 1's allocations other than MoNE's own (Eq. 3), as the book names them
ALLOCATION_NAMES = {"proportionate": "Proportionate", "uniform": "Uniform", "mod_greedy": "MoD Greedy", "greedy": "Greedy"}


@dataclasses.dataclass(frozen=True)
class Arm:
  """One arm. task: 'image' or a video task of `profiles.TASKS`; kind: a `kinds.NAMES` name; e_c: the
  training capacity of a routed kind (None: adaptive, or a static allocation's own); allocation:
  'mone' (Eq. 3) or one of ALLOCATION_NAMES (Table 1, on the temporal task); router, router_layer and
  num_routers: the router as Figure 6 varies it (None: the config's); iso_flops, adaptive: the training
  variants of Figures 3 and 5; overrides: 'key=value' strings applied last (the benchmark's --pair)."""
  task: str
  kind: str
  e_c: float | None = None
  allocation: str = capacity.EQ3
  router: str = "learned"
  router_layer: int | None = None
  num_routers: int | None = None
  iso_flops: bool = False
  adaptive: bool = False
  overrides: tuple = ()

  def __post_init__(self):
    if self.task not in TASKS:
      raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
    if self.allocation != capacity.EQ3 and self.allocation not in ALLOCATION_NAMES:
      raise ValueError(f"allocation must be 'mone' or one of {tuple(ALLOCATION_NAMES)}, got {self.allocation!r}")
    self.model_kind  # an unknown kind, or one the task's modality lacks, stops here

  @property
  def model_kind(self) -> kinds.Kind:
    return kinds.named(self.kind, video=self.task != "image")

  @property
  def model(self) -> str:
    """The model as the book calls it, without its task: 'ViT', 'MatViViT', 'MoNE e_c=0.3, random
    router', 'MoNE adaptive, isoFLOPs', 'Greedy e_c=0.4', 'Proportionate'."""
    kind = self.model_kind
    if self.allocation != capacity.EQ3:
      return ALLOCATION_NAMES[self.allocation] + ("" if self.e_c is None else f" e_c={self.e_c}")
    if not kind.routed:
      return kind.label
    out = f"{kind.label} adaptive" if self.adaptive else f"{kind.label} e_c={self.e_c}"
    if self.router == "random":
      out += ", random router"
    if self.router_layer is not None:
      out += f", router before block {self.router_layer}"
    if self.num_routers is not None:
      out += f", {self.num_routers} routers"
    return out + (", isoFLOPs" if self.iso_flops else "")

  @property
  def curve(self) -> str:
    """The model whose accuracy-FLOPs curve the arm's runs lie on (its e_c one point of it), as the
    chapters and their colours name it: 'ViT', 'MoNE', 'MoNE, random router', 'MoNE-isoFLOPs',
    'MoNE adaptive', or another allocation's name ('Greedy'). A router placement or count study lies
    on its kind's curve."""
    if self.allocation != capacity.EQ3:
      return ALLOCATION_NAMES[self.allocation]
    label = self.model_kind.label
    if not self.model_kind.routed:
      return label
    if self.router == "random":
      return f"{label}, random router"
    if self.adaptive:
      return f"{label} adaptive"
    return f"{label}-isoFLOPs" if self.iso_flops else label

  @property
  def label(self) -> str:
    """The arm in the book: its model, after its task for a video ('temporal: ViViT') and after
    'Table 1: ' for another allocation ('Table 1: Uniform')."""
    if self.allocation != capacity.EQ3:
      return f"Table 1: {self.model}"
    return self.model if self.task == "image" else f"{self.task}: {self.model}"

  @property
  def name(self) -> str:
    """The arm on the command line: 'image:vit', 'temporal:mone:0.3', 'image:mone:0.2:random',
    'table1:greedy:0.4'."""
    if self.allocation != capacity.EQ3:
      parts = ["table1", self.allocation] + ([] if self.e_c is None else [str(self.e_c)])
    else:
      parts = [self.task, self.kind] + ([str(self.e_c)] if self.e_c is not None else [])
      parts += (["adaptive"] if self.adaptive else []) + (["random"] if self.router == "random" else [])
      parts += [] if self.router_layer is None else [f"router_layer{self.router_layer}"]
      parts += [] if self.num_routers is None else [f"routers{self.num_routers}"]
      parts += ["iso_flops"] if self.iso_flops else []
    return ":".join(parts)

  def config(self, profile: str = "small", seed: int | None = None, data_dir: str = "", **common) -> schema.TrainConfig:
    """The arm's training config in `profile` at `seed` (None: the config's default), with `common`
    overrides (e.g. the paper profile's model), then the arm's own `overrides`."""
    ov = dict(common)
    ov |= {} if seed is None else {"seed": seed}
    ov |= {"model.router": self.router} if self.router != "learned" else {}
    ov |= {} if self.router_layer is None else {"model.router_layer": self.router_layer}
    ov |= {} if self.num_routers is None else {"model.num_routers": self.num_routers}
    ov |= ({"adaptive": True} if self.adaptive else {}) | ({"iso_flops": True} if self.iso_flops else {})
    video = None if self.task == "image" else self.task
    if self.allocation != capacity.EQ3:
      cfg = profiles.table1_config(profile, self.allocation, self.e_c, data_dir, **ov)
    elif self.model_kind.routed:
      cfg = profiles.mone_config(profile, self.e_c, data_dir, task=video, **ov)
    elif video:
      cfg = profiles.video_config(profile, video, data_dir, kind=self.kind, **ov)
    else:
      cfg = profiles.image_config(profile, data_dir, kind=self.kind, **ov)
    return schema.apply_overrides(cfg, list(self.overrides)) if self.overrides else cfg


def arms() -> tuple[Arm, ...]:
  """The small profile's headline arms, as its ten-seed plan trains them: the images (Figure 3's ViT,
  MatViT, MoD, MoNE at each e_c and the random router), the temporal and appearance videos
  (Figure 4) and Table 1's allocations."""
  grid = profiles.grid("small")
  out = [Arm("image", "vit"), Arm("image", "matvit"), Arm("image", "mod")]
  out += [Arm("image", "mone", e) for e in grid.image_e_c]
  out += [Arm("image", "mone", e, router="random") for e in (0.2, 0.3)]
  for task in ("temporal", "appearance"):
    out += [Arm(task, "vit"), Arm(task, "matvit")] + [Arm(task, "mone", e) for e in grid.video_e_c[task]]
  out += [Arm("temporal", "mone", allocation="proportionate"), Arm("temporal", "mone", allocation="uniform"),
          Arm("temporal", "mone", 0.4, allocation="greedy"), Arm("temporal", "mone", 0.4, allocation="mod_greedy")]
  return tuple(out)


def select(names) -> tuple[Arm, ...]:
  """The arms named (all where names is empty); an unknown name is a ValueError listing them."""
  every = arms()
  if not names:
    return every
  known = {a.name: a for a in every}
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f"--arms: unknown arm(s) {unknown}; the arms are {sorted(known)}")
  return tuple(known[n] for n in names)
