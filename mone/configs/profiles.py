"""What each profile trains: its base image and video configs (`image_config`, `video_config`),
the MoNE and Table 1 configs the chapters share (`mone_config`, `table1_config`), and the grids of
budgets and router settings its chapters train and evaluate at (`grid`).

Profiles: smoke (tiny models, a check that every chapter runs, minutes), small (the committed
results: about a hundred CPU-hours, trained once by scripts/train_queue.py) and paper (ImageNet-21k,
SSv2 and Kinetics-400 from a prepared TFDS data_dir: a cluster's budget per run).
"""
import dataclasses

from mone import capacity
from mone.configs import recipes, schema

PROFILES = ("smoke", "small", "paper")


def check_profile(profile: str) -> str:
  if profile not in PROFILES:
    raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
  return profile


@dataclasses.dataclass(frozen=True)
class Grid:
  """What a profile's chapters train and evaluate at: every grid of budgets (e_c) and router
  settings, defined once here rather than in the notebooks. A notebook reads `grid(profile)`."""
  eval_e_c: tuple           # every MoNE run is evaluated at these (Figure 5's grid); it holds every
                            # training e_c below, so each model is evaluated at the others' budgets
  image_e_c: tuple          # Figure 3's MoNE curve on images (Figure 6 compares against it)
  video_e_c: dict           # Figure 4's, per video task
  adapt_image_e_c: tuple    # Figure 5a's models trained at one e_c
  adapt_video_e_c: tuple    # Figure 5b's
  random_router_e_c: tuple  # Figure 6c: learned against random router
  router_layers: tuple      # Figure 6a: the layer the router sits before
  router_counts: tuple      # Figure 6b: routers, evenly spaced from layer 0


# smoke trains and evaluates at 0.3 and 0.4 only, so that CI compiles few programs.
GRIDS = {
    "smoke": Grid(eval_e_c=(0.3, 0.4), image_e_c=(0.3, 0.4), video_e_c={"appearance": (0.4,), "temporal": (0.3, 0.4)},
                  adapt_image_e_c=(0.3, 0.4), adapt_video_e_c=(0.3, 0.4), random_router_e_c=(0.3, 0.4),
                  router_layers=(0, 1), router_counts=(1, 2)),
    "small": Grid(eval_e_c=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), image_e_c=(0.2, 0.3, 0.4, 0.6),
                  video_e_c={"appearance": (0.4,), "temporal": (0.3, 0.4)}, adapt_image_e_c=(0.2, 0.4, 0.6),
                  adapt_video_e_c=(0.3, 0.4), random_router_e_c=(0.2, 0.3, 0.4),
                  router_layers=(0, 1, 2), router_counts=(1, 2, 4)),
    "paper": Grid(eval_e_c=(0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), image_e_c=(0.2, 0.3, 0.4, 0.6),
                  video_e_c={"appearance": (0.3, 0.4, 0.5), "temporal": (0.3, 0.4, 0.5)},
                  adapt_image_e_c=(0.2, 0.4, 0.6), adapt_video_e_c=(0.3, 0.4, 0.5),
                  random_router_e_c=(0.2, 0.3, 0.4, 0.6), router_layers=(0, 1, 2, 3, 4),
                  router_counts=(1, 2, 3, 6, 12)),
}


def grid(profile: str) -> Grid:
  """The grids of a profile (see `Grid`)."""
  return GRIDS[check_profile(profile)]


# An adaptive smoke run samples two budgets, not nine: each distinct budget compiles a train step.
SMOKE_ADAPTIVE = {"adaptive_e_c": (0.3, 0.4)}


def image_config(profile: str, data_dir: str = "", **overrides) -> schema.TrainConfig:
  """The image-classification base config of a profile, with overrides (e.g. kind, e_c)."""
  check_profile(profile)
  if profile == "smoke":
    base = recipes.smoke()
    overrides = {"steps": 8, "log_every": 4, "checkpoint_every": 8, "num_train": 256,
                 "num_test": 128, **SMOKE_ADAPTIVE, **overrides}
  elif profile == "small":  # the recalibrated profile: `mone.runs.plan` lists its runs
    base = recipes.digits64()
  else:
    base = schema.apply_overrides(recipes.imagenet21k(), {"data_dir": data_dir})
  return schema.apply_overrides(base, {"num_devices": 1, **overrides} if profile != "paper" else overrides)


TASKS = ("temporal", "appearance")  # the embedded video tasks: SSv2's and Kinetics-400's stand-ins


def video_config(profile: str, task: str, data_dir: str = "", **overrides) -> schema.TrainConfig:
  """The video-classification base config of a profile and task, with overrides.

  small: XS/4x2 ViViT on the embedded moving digits ('temporal': motion order, as SSv2;
  'appearance': which digit, as Kinetics-400), the recalibrated recipes `recipes.moving_temporal`
  and `recipes.moving_appearance`; smoke: a tiny ViViT on a few clips of the first recipes;
  paper: ViViT-B/16x2 on SSv2 / Kinetics-400."""
  check_profile(profile)
  if task not in TASKS:
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")
  if profile == "paper":
    base = {"temporal": recipes.ssv2, "appearance": recipes.kinetics400}[task]()
    return schema.apply_overrides(base, {"data_dir": data_dir, **overrides})
  if profile == "small":
    return schema.apply_overrides({"temporal": recipes.moving_temporal, "appearance": recipes.moving_appearance}[task](),
                                   {"num_devices": 1, **overrides})
  base = {"temporal": recipes.video_temporal, "appearance": recipes.video_appearance}[task]()
  if profile == "smoke":
    overrides = {"name": f"smoke_{base.name}", "model": "tiny/8x2", "model.num_frames": 6,
                 "steps": 8, "log_every": 4, "checkpoint_every": 8, "num_train": 128,
                 "num_test": 64, "batch_size": 16, "eval_batch_size": 64, **SMOKE_ADAPTIVE, **overrides}
  return schema.apply_overrides(base, {"num_devices": 1, **overrides})


def mone_config(profile: str, e_c: float | None, data_dir: str = "", task: str | None = None,
                **overrides):
  """The MoNE config of a profile at training capacity e_c (None with adaptive=True),
  evaluated on `grid(profile).eval_e_c`: on images, or on the video `task` ('temporal' or
  'appearance'). Notebooks that agree on (profile, task, e_c, overrides) share one run."""
  check_profile(profile)
  base = image_config if task is None else (
      lambda *a, **kw: video_config(a[0], task, *a[1:], **kw))
  return base(profile, data_dir, kind="mone", e_c=e_c, eval_e_c=grid(profile).eval_e_c, **overrides)


def table1_config(profile: str, allocation: str, e_c: float | None, data_dir: str = "", **overrides):
  """A Table 1 model on the temporal video task: MoNE (`allocation='mone'`, the run Figures 4
  and 5 share) or another allocation at e_c; e_c=None for a static allocation, which fixes its
  own e_c (rounded to 4 decimals, so that the config hash does not hang on the 16th)."""
  if allocation == capacity.EQ3:
    return mone_config(profile, e_c, data_dir, task="temporal", **overrides)
  if e_c is None:
    e_c = round(capacity.effective_capacity(capacity.allocation(allocation)), 4)
  return video_config(profile, "temporal", data_dir, kind="mone", e_c=e_c, allocation=allocation, **overrides)
