"""What each chapter of the book reads: its arms, declared once per chapter as a function of the
profile (`CHAPTERS`, in book order). The plan is generated from these declarations
(`mone.configs.figures`): it trains their union, an arm that some chapter reads at every seed at
every seed of the plan, a study at the config's own seed only; and each chapter picks its runs from
the plan by the same arms. A chapter's claims name arms it reads at every seed
(`mone.evidence.declarations` checks).

This module imports no chapter code: the training queue plans from it without the book's analysis
layer. A new baseline is one more arm in the reads of the chapters that show it; a new chapter, one
more entry of `CHAPTERS` (and its claims, in its own module).
"""
import dataclasses

from mone.configs import profiles
from mone.configs.arms import Arm


@dataclasses.dataclass(frozen=True)
class Reads:
  """The arms one chapter reads under a profile. every_seed: compared over the plan's seeds (each
  trains at every seed); one_seed: studies read at the config's own seed."""
  every_seed: tuple[Arm, ...]
  one_seed: tuple[Arm, ...] = ()


# Figure 1: Figure 3's MoNE at the paper's e_c
FIGURE1_MODEL = Arm("image", "mone", 0.4)
# Table 1's rows, in its order: the other allocations, then MoNE (Eq. 3) at the two capacities they meet
TABLE1_ARMS = (Arm("temporal", "mone", allocation="proportionate"), Arm("temporal", "mone", allocation="uniform"),
               Arm("temporal", "mone", 0.4, allocation="mod_greedy"), Arm("temporal", "mone", 0.4, allocation="greedy"),
               Arm("temporal", "mone", 0.3), Arm("temporal", "mone", 0.4))
# Figure 4's tasks, in its order: ours -> the paper's dataset they stand in for
FIGURE4_TASKS = {"appearance": "Kinetics-400", "temporal": "Something-Something-v2"}
# Figure 6's studies of router placement and count are at one e_c
FIGURE6_E_C = 0.3
# Figure 7: a low capacity, where the full expert gets floor(0.071 N) tokens, 4 of 64 in the small profile
FIGURE7_E_C = 0.3
FIGURE7_ROUTERS = {"learned router": Arm("image", "mone", FIGURE7_E_C),
                   "random router": Arm("image", "mone", FIGURE7_E_C, router="random")}  # name: arm
FIGURE7_VIDEO = Arm("temporal", "mone", FIGURE7_E_C)  # Figure 4's arm on the temporal task


def figure3_models(profile: str) -> set[Arm]:
  """Figure 3's models: the dense ViT, MatViT, MoD and MoNE at every e_c of the profile's image grid."""
  return set(_figure3_models(profile))


def _figure3_models(profile: str) -> list[Arm]:
  return [Arm("image", "vit"), Arm("image", "matvit"), Arm("image", "mod"),
          *(Arm("image", "mone", e) for e in profiles.grid(profile).image_e_c)]


def figure3_iso(profile: str) -> Arm:
  """Figure 3's isoFLOPs arm: as in the paper, on the smallest model at the lowest e_c only."""
  return Arm("image", "mone", min(profiles.grid(profile).image_e_c), iso_flops=True)


def figure4_arms(profile: str) -> set[Arm]:
  """Figure 4's arms: per video task ViViT, MatViViT and MoNE at each e_c of the profile's grid."""
  return set(_figure4_arms(profile))


def _figure4_arms(profile: str) -> list[Arm]:
  e_c = profiles.grid(profile).video_e_c
  return [a for t in FIGURE4_TASKS for a in (Arm(t, "vit"), Arm(t, "matvit"), *(Arm(t, "mone", e) for e in e_c[t]))]


def figure5_arms(domain: str, train_e_c) -> tuple[Arm, ...]:
  """Figure 5's arms of a domain ('images' or 'video', the temporal task): MoNE trained at each of
  train_e_c, then the adaptive MoNE (trained isoFLOPs)."""
  task = "image" if domain == "images" else "temporal"
  return (*(Arm(task, "mone", e) for e in train_e_c), Arm(task, "mone", adaptive=True, iso_flops=True))


def figure6_arms(profile: str, e_c: float = FIGURE6_E_C) -> dict:
  """{(study, value): arm} of every point Figure 6 reads: 'curve' (MoNE over the image e_c grid, router
  before layer 0), 'router position' (the layer the router sits before), 'number of routers', and
  'learned router' / 'random router' (over e_c)."""
  g, one = profiles.grid(profile), Arm("image", "mone", e_c)
  return {**{("curve", e): Arm("image", "mone", e) for e in g.image_e_c},
          **{("router position", l): one if l == 0 else Arm("image", "mone", e_c, router_layer=l) for l in g.router_layers},
          **{("number of routers", n): one if n == 1 else Arm("image", "mone", e_c, num_routers=n) for n in g.router_counts},
          **{("learned router", e): Arm("image", "mone", e) for e in g.random_router_e_c},
          **{("random router", e): Arm("image", "mone", e, router="random") for e in g.random_router_e_c}}


def figure1(profile: str) -> Reads:
  return Reads((FIGURE1_MODEL,))


def table1(profile: str) -> Reads:
  return Reads(TABLE1_ARMS)


def figure3(profile: str) -> Reads:
  return Reads(tuple(_figure3_models(profile)), (figure3_iso(profile),))


def figure4(profile: str) -> Reads:
  return Reads(tuple(_figure4_arms(profile)))


def figure5(profile: str) -> Reads:
  """The models trained at one capacity are compared over seeds; the adaptive ones are studies."""
  g = profiles.grid(profile)
  arms = figure5_arms("images", g.adapt_image_e_c) + figure5_arms("video", g.adapt_video_e_c)
  return Reads(tuple(a for a in arms if not a.adaptive), tuple(a for a in arms if a.adaptive))


def figure6(profile: str) -> Reads:
  """Figure 6c's claim compares the learned and random routers over seeds at the grid's lowest e_c,
  where the paper's random router degrades most; the other points are studies."""
  points = figure6_arms(profile)
  low = min(profiles.grid(profile).random_router_e_c)
  every = [a for (study, e), a in points.items() if study == "curve" or study.endswith("router") and e == low]
  return Reads(tuple(dict.fromkeys(every)), tuple(a for a in dict.fromkeys(points.values()) if a not in every))


def figure7(profile: str) -> Reads:
  return Reads((*FIGURE7_ROUTERS.values(), FIGURE7_VIDEO))


# Book order; the keys are the chapter modules' names (`mone.evidence.declarations.MODULES`). The
# wall-clock chapter reads no trained arm.
CHAPTERS = {"figure1": figure1, "table1": table1, "figure3": figure3, "figure4": figure4, "figure5": figure5,
            "figure6": figure6, "figure7": figure7}


def planned(profile: str) -> tuple[list[Arm], list[Arm]]:
  """(every_seed, one_seed): the union of every chapter's reads under a profile, in book order; an arm
  one chapter reads at every seed and another at one is read at every seed."""
  profiles.check_profile(profile)
  every, one = {}, {}
  for read in CHAPTERS.values():
    r = read(profile)
    every.update(dict.fromkeys(r.every_seed))
    one.update(dict.fromkeys(r.one_seed))
  return list(every), [a for a in one if a not in every]
