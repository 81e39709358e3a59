"""The runs each figure and table reads, as (label, config) lists per profile and seeds: the image
runs (`image_runs`: Figures 1, 3, 5a, 6, 7a) and the video runs (`video_runs`: Table 1, Figures 4,
5b, 7b), in the order the small profile trains them (`mone.chapters.plan` reads them). The small
profile builds them from its recipes on one device; another profile asks for the same runs from its
own base configs (`builders`, `video_builders`).
"""
from mone import capacity
from mone.configs import profiles, recipes, schema

SEEDS = (0, 1, 2)   # paired seeds of every headline comparison
# Two more paired seeds of every headline run, fixed on 2026-11-28 before any of them trained, with
# the claims they are for and the rule that reads them (`seed_plans.seed_plan`, committed as
# results/seed_plan.json). Three seeds left most trained claims inconclusive for want of seeds:
# their CIs' half-widths shrink by t(0.975, n-1) / sqrt(n), from 2.48 s at n = 3 to 1.24 s at n = 5.
EXTRA_SEEDS = (3, 4)
# Five more paired seeds of every headline run, fixed on 2026-12-01 before any of them trained, with
# every planned claim's definition frozen (`seed_plans.ten_seed_plan`, committed as results/seed_plan_10.json;
# `mone.chapters.preregistration`). From 5 to 10 paired seeds a 95% t-interval's half-width shrinks
# by (t(0.975, 9) / sqrt(10)) / (t(0.975, 4) / sqrt(5)) = 0.58.
SEEDS_TO_TEN = (5, 6, 7, 8, 9)
RECIPE = "digits64"


def image(**overrides) -> schema.TrainConfig:
  """A small-profile image config: the recipe on one device (so that a run computes the same
  on any machine's device count), with overrides."""
  return schema.apply_overrides(recipes.CONFIGS[RECIPE](), {"num_devices": 1, **overrides})


def mone(e_c, **overrides) -> schema.TrainConfig:
  """A MoNE run at training capacity e_c, evaluated at every capacity of Figure 5's grid."""
  return image(kind="mone", e_c=e_c, eval_e_c=profiles.grid("small").eval_e_c, **overrides)


def builders(profile: str, data_dir: str = "", **common):
  """(image, mone): a profile's config builders with the signatures of `image` and `mone`, so
  that another profile's chapters ask for the same runs as this plan (smoke: tiny models
  trained in the notebooks; paper: ImageNet-21k from data_dir). common: overrides of every run
  (e.g. the paper profile's model)."""
  if profile == "small":
    return (lambda **ov: image(**common, **ov)), (lambda e_c, **ov: mone(e_c, **common, **ov))
  return ((lambda **ov: profiles.image_config(profile, data_dir, **common, **ov)),
          (lambda e_c, **ov: profiles.mone_config(profile, e_c, data_dir, **common, **ov)))


def image_runs(profile: str = "small", seeds=SEEDS, data_dir: str = "", **common) -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of every image run, in training order ("ViT, seed 0", ...): the plan's
  own with the defaults; with another profile, the same runs at `seeds` (`builders`)."""
  image, mone = builders(profile, data_dir, **common)
  headline = [  # each over SEEDS: Figure 3 (ViT vs MoNE, MoNE vs MatViT/MoD at equal FLOPs), Figure 6c
      ("ViT", lambda s: image(kind="vit", seed=s)),
      ("MoNE e_c=0.4", lambda s: mone(0.4, seed=s)),
      ("MatViT", lambda s: image(kind="matvit", seed=s)),
      ("MoD", lambda s: image(kind="mod", seed=s)),
      ("MoNE e_c=0.3", lambda s: mone(0.3, seed=s)),
      ("MoNE e_c=0.2", lambda s: mone(0.2, seed=s)),
      # Figure 6c's claim is at the lowest e_c, where the paper's random router degrades most
      ("MoNE e_c=0.2, random router", lambda s: mone(0.2, seed=s, **{"model.router": "random"})),
      # last: Figure 3's curve at every seed (mean and spread at each of its points)
      ("MoNE e_c=0.6", lambda s: mone(0.6, seed=s)),
      # Figure 7's learned-vs-random-router claim is at e_c 0.3 (at 0.2 Eq. 3 gives the full model
      # no token of 64), so its random router needs every seed too; also Figure 6c's curve
      ("MoNE e_c=0.3, random router", lambda s: mone(0.3, seed=s, **{"model.router": "random"})),
  ]
  runs = [(f"{label}, seed {s}", make(s)) for s in seeds for label, make in headline]
  depth = image().model.depth  # a smaller model (smoke) has fewer router positions and counts
  runs += [  # seed 0 only: Figures 3 (isoFLOPs), 5, 6a/6b/6c
      *[(f"MoNE e_c=0.3, router before block {l}, seed 0", mone(0.3, **{"model.router_layer": l})) for l in (1, 2) if l < depth],
      *[(f"MoNE e_c=0.3, {n} routers, seed 0", mone(0.3, **{"model.num_routers": n})) for n in (2, 4) if n <= depth],
      ("MoNE e_c=0.4, random router, seed 0", mone(0.4, **{"model.router": "random"})),
      ("MoNE adaptive, isoFLOPs, seed 0", mone(None, adaptive=True, iso_flops=True)),
      ("MoNE e_c=0.2, isoFLOPs, seed 0", mone(0.2, iso_flops=True)),
  ]
  return runs


def video(task: str, **overrides) -> schema.TrainConfig:
  """A small-profile video config: `recipes.moving_<task>` on one device, with overrides."""
  if task not in profiles.TASKS:
    raise ValueError(f"task must be one of {profiles.TASKS}, got {task!r}")
  return schema.apply_overrides(recipes.CONFIGS[f"moving_{task}"](), {"num_devices": 1, **overrides})


def video_mone(task: str, e_c, **overrides) -> schema.TrainConfig:
  """A video MoNE run at training capacity e_c, evaluated at every capacity of Figure 5's grid."""
  return video(task, kind="mone", e_c=e_c, eval_e_c=profiles.grid("small").eval_e_c, **overrides)


def allocation(name: str, e_c, **overrides) -> schema.TrainConfig:
  """A Table 1 run on the temporal task with another allocation than MoNE's (Eq. 3) at e_c; a
  static allocation (e_c None) fixes its own e_c, rounded to 4 decimals (`profiles.table1_config`)."""
  if e_c is None:
    e_c = round(capacity.effective_capacity(capacity.allocation(name)), 4)
  return video("temporal", kind="mone", e_c=e_c, allocation=name, **overrides)


def video_builders(profile: str, data_dir: str = ""):
  """(video, video_mone, allocation): a profile's video config builders with the signatures of
  this module's, so that another profile's chapters ask for the same runs (`builders`)."""
  if profile == "small":
    return video, video_mone, allocation
  return ((lambda task, **ov: profiles.video_config(profile, task, data_dir, **ov)),
          (lambda task, e_c, **ov: profiles.mone_config(profile, e_c, data_dir, task=task, **ov)),
          (lambda name, e_c, **ov: profiles.table1_config(profile, name, e_c, data_dir, **ov)))


def video_runs(profile: str = "small", seeds=SEEDS, data_dir: str = "") -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of every video run, in training order: per seed the temporal task's ViViT
  and MoNE (Figures 4, 5b and 7b) and Table 1's other allocations, then per seed the long runs
  (MatViViT, the appearance task), then the adaptive model. The short runs go first because
  they decide the temporal and Table 1 claims for all seeds in about 40 minutes each on one
  core, while a MatViViT or appearance run takes 2-4 hours. The plan's own with the defaults;
  with another profile, the same runs at `seeds`."""
  video, video_mone, allocation = video_builders(profile, data_dir)
  short = [
      ("temporal: ViViT", lambda s: video("temporal", kind="vit", seed=s)),
      ("temporal: MoNE e_c=0.4", lambda s: video_mone("temporal", 0.4, seed=s)),
      ("temporal: MoNE e_c=0.3", lambda s: video_mone("temporal", 0.3, seed=s)),
      ("Table 1: Proportionate", lambda s: allocation("proportionate", None, seed=s)),
      ("Table 1: Uniform", lambda s: allocation("uniform", None, seed=s)),
      ("Table 1: MoD Greedy e_c=0.4", lambda s: allocation("mod_greedy", 0.4, seed=s)),
      ("Table 1: Greedy e_c=0.4", lambda s: allocation("greedy", 0.4, seed=s)),
  ]
  long = [
      ("temporal: MatViViT", lambda s: video("temporal", kind="matvit", seed=s)),
      ("appearance: ViViT", lambda s: video("appearance", kind="vit", seed=s)),
      ("appearance: MoNE e_c=0.4", lambda s: video_mone("appearance", 0.4, seed=s)),
      ("appearance: MatViViT", lambda s: video("appearance", kind="matvit", seed=s)),
  ]
  runs = [(f"{label}, seed {s}", make(s)) for group in (short, long) for s in seeds for label, make in group]
  runs.append(("temporal: MoNE adaptive, isoFLOPs, seed 0", video_mone("temporal", None, adaptive=True, iso_flops=True)))
  return runs
