"""The runs each figure and table reads, as (label, config) lists per profile and seeds: the image
runs (`image_runs`: Figures 1, 3, 5a, 6, 7a) and the video runs (`video_runs`: Table 1, Figures 4,
5b, 7b), in the order the small profile trains them (`mone.runs.plan` reads them). Each run is
an arm (`mone.configs.arms.Arm`) at a seed, its label made from the arm. The plan is generated from
what the chapters declare they read (`mone.configs.reads`): a profile plans exactly the arms its
chapters read under its grids, each from its own base configs (`Arm.config`).
"""
import functools

from mone.configs import profiles, reads, schema
from mone.configs.arms import Arm
from mone.models import kinds

SEEDS = (0, 1, 2)   # paired seeds of every headline comparison
# Two more paired seeds of every headline run, fixed on 2026-11-28 before any of them trained, with
# the claims they are for and the rule that reads them (`seed_plans.seed_plan`, committed as
# results/seed_plan.json). Three seeds left most trained claims inconclusive for want of seeds:
# their CIs' half-widths shrink by t(0.975, n-1) / sqrt(n), from 2.48 s at n = 3 to 1.24 s at n = 5.
EXTRA_SEEDS = (3, 4)
# Five more paired seeds of every headline run, fixed on 2026-12-01 before any of them trained, with
# every planned claim's definition frozen (`seed_plans.ten_seed_plan`, committed as results/seed_plan_10.json;
# `mone.evidence.preregistration`). From 5 to 10 paired seeds a 95% t-interval's half-width shrinks
# by (t(0.975, 9) / sqrt(10)) / (t(0.975, 4) / sqrt(5)) = 0.58.
SEEDS_TO_TEN = (5, 6, 7, 8, 9)


class Run(tuple):
  """A planned run: the (label, config) pair that the plan, the queue and the chapters unpack, with the
  `arm` it is a seed of beside it. Its label is made from the arm and the config's seed ("MoNE e_c=0.3,
  random router, seed 2"); a chapter picks its runs by their arms, never by reading the label."""

  def __new__(cls, arm: Arm, config: schema.TrainConfig):
    run = super().__new__(cls, (f"{arm.label}, seed {config.seed}", config))
    run.arm = arm
    return run


# The order the small profile's runs trained in (its queue, its seed plans and their run lists follow
# it): the plan lists the declared arms in this order, and an arm no earlier plan had after them, in
# book order. Within a seed the headline arms go first (seed 0 gives every headline figure a first
# answer), the single-seed studies last, the costliest (isoFLOPs) at the very end. It orders; it
# adds nothing: what is planned is what the chapters read (`mone.configs.reads`).
TRAINING_ORDER = (
    Arm("image", "vit"), Arm("image", "mone", 0.4), Arm("image", "matvit"), Arm("image", "mod"),
    Arm("image", "mone", 0.3), Arm("image", "mone", 0.2),
    # Figure 6c's claim is at the lowest e_c, where the paper's random router degrades most
    Arm("image", "mone", 0.2, router="random"),
    # last: Figure 3's curve at every seed (mean and spread at each of its points)
    Arm("image", "mone", 0.6),
    # Figure 7's learned-vs-random-router claim is at e_c 0.3 (at 0.2 Eq. 3 gives the full model
    # no token of 64), so its random router needs every seed too; also Figure 6c's curve
    Arm("image", "mone", 0.3, router="random"),
    # the image studies
    Arm("image", "mone", 0.3, router_layer=1), Arm("image", "mone", 0.3, router_layer=2),
    Arm("image", "mone", 0.3, num_routers=2), Arm("image", "mone", 0.3, num_routers=4),
    Arm("image", "mone", 0.4, router="random"),
    Arm("image", "mone", adaptive=True, iso_flops=True), Arm("image", "mone", 0.2, iso_flops=True),
    # the short video runs: the temporal task's ViViT and MoNE, and Table 1's other allocations
    Arm("temporal", "vit"), Arm("temporal", "mone", 0.4), Arm("temporal", "mone", 0.3),
    Arm("temporal", "mone", allocation="proportionate"), Arm("temporal", "mone", allocation="uniform"),
    Arm("temporal", "mone", 0.4, allocation="mod_greedy"), Arm("temporal", "mone", 0.4, allocation="greedy"),
    # the long ones
    Arm("temporal", "matvit"), Arm("appearance", "vit"), Arm("appearance", "mone", 0.4), Arm("appearance", "matvit"),
    Arm("temporal", "mone", adaptive=True, iso_flops=True),
)


def _ordered(arms: list[Arm]) -> list[Arm]:
  """arms in `TRAINING_ORDER`, those it does not list after them in the order given (book order)."""
  rank = {a: i for i, a in enumerate(TRAINING_ORDER)}
  return sorted(arms, key=lambda a: rank.get(a, len(rank)))  # stable: the rest stay in book order


def image_arms(profile: str = "small", **common) -> tuple[list[Arm], list[Arm]]:
  """(headline, studies): the image arms the profile's chapters read (`reads.planned`), in training
  order. The headline arms train at every seed (some chapter compares them over seeds: Figures 1, 3,
  6c and 7); the studies at the config's seed only (Figures 3's isoFLOPs, 5, 6a/6b/6c). common: as
  `image_runs` (a model with fewer blocks has fewer router placements and counts: those it cannot
  have are left out)."""
  depth = Arm("image", "vit").config(profile, **common).model.depth
  fits = lambda a: a.task == "image" and (a.router_layer or 0) < depth and (a.num_routers or 1) <= depth
  every, one = reads.planned(profile)
  return _ordered([a for a in every if fits(a)]), _ordered([a for a in one if fits(a)])


def image_runs(profile: str = "small", seeds=SEEDS, data_dir: str = "", **common) -> list[Run]:
  """(label, config) of every image run, in training order ("ViT, seed 0", ...): the headline arms
  at each of `seeds`, then the studies at seed 0 (`image_arms`). common: overrides of every run (e.g.
  the paper profile's model)."""
  headline, studies = image_arms(profile, **common)
  runs = [Run(a, a.config(profile, s, data_dir, **common)) for s in seeds for a in headline]
  return runs + [Run(a, a.config(profile, None, data_dir, **common)) for a in studies]


def video_arms(profile: str = "small") -> tuple[list[Arm], list[Arm], list[Arm]]:
  """(short, long, studies): the video arms the profile's chapters read (`reads.planned`), in training
  order; the long ones (MatViViT and the appearance task, 2-4 hours a run on one core) apart."""
  every, one = reads.planned(profile)
  long = lambda a: a.task == "appearance" or isinstance(a.model_kind, kinds.MatViT)
  video = [a for a in every if a.task != "image"]
  return (_ordered([a for a in video if not long(a)]), _ordered([a for a in video if long(a)]),
          _ordered([a for a in one if a.task != "image"]))


def video_runs(profile: str = "small", seeds=SEEDS, data_dir: str = "") -> list[Run]:
  """(label, config) of every video run, in training order: per seed the temporal task's ViViT
  and MoNE (Figures 4, 5b and 7b) and Table 1's other allocations, then per seed the long runs
  (MatViViT, the appearance task), then the studies at the config's seed (the adaptive model). The
  short runs go first because they decide the temporal and Table 1 claims for all seeds in about 40
  minutes each on one core, while a MatViViT or appearance run takes 2-4 hours. The plan's own with
  the defaults; with another profile, what its chapters read under its grids, at `seeds`."""
  short, long, studies = video_arms(profile)
  runs = [Run(a, a.config(profile, s, data_dir)) for group in (short, long) for s in seeds for a in group]
  return runs + [Run(a, a.config(profile, None, data_dir)) for a in studies]


def arm(label: str) -> Arm:
  """The declared arm whose label is `label` (without its seed): what a chapter asks of a run it
  reads by its label. A label no arm has is a KeyError naming it."""
  every = _arms_by_label()
  if label not in every:
    raise KeyError(f"no declared arm is labelled {label!r}")
  return every[label]


@functools.cache
def _arms_by_label() -> dict[str, Arm]:
  every = [a for p in profiles.PROFILES for a in sum(reads.planned(p), [])]
  return {a.label: a for a in every}
