"""The image runs of the recalibrated small profile (issue 24), in the order to train them.

Retraining the small profile is tens of CPU-hours on 2 cores (a dense `digits64` run of 8,000
steps takes about an hour), so it spans sessions: `scripts/train_queue.py` trains these runs
one at a time in this order, skipping finished ones and resuming a killed one from its
checkpoints. Two runs side by side are no faster in total on 2 cores (each takes all of them).

The order puts the headline comparisons first, one seed at a time (seed 0's runs give every
headline figure a first, single-seed answer; seeds 1 and 2 then make the claims decidable);
single-seed studies come last, the costliest (isoFLOPs) at the very end.

The configs are those the chapters will ask for once `experiments.image_config('small')`
starts from `recipes.digits64` (a test checks that they stay the same).
"""
from mone.chapters import experiments
from mone.train import recipes

SEEDS = (0, 1, 2)   # paired seeds of every headline comparison
RECIPE = "digits64"


def image(**overrides) -> recipes.TrainConfig:
  """A small-profile image config: the recipe on one device (so that a run computes the same
  on any machine's device count), with overrides."""
  return recipes.apply_overrides(recipes.CONFIGS[RECIPE](), {"num_devices": 1, **overrides})


def mone(e_c, **overrides) -> recipes.TrainConfig:
  """A MoNE run at training capacity e_c, evaluated at every capacity of Figure 5's grid."""
  return image(kind="mone", e_c=e_c, eval_e_c=experiments.grid("small").eval_e_c, **overrides)


def image_runs() -> list[tuple[str, recipes.TrainConfig]]:
  """(label, config) of every image run, in training order."""
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
  ]
  runs = [(f"{label}, seed {s}", make(s)) for s in SEEDS for label, make in headline]
  runs += [  # seed 0 only: Figures 3 (isoFLOPs), 5, 6a/6b/6c and 7
      ("MoNE e_c=0.3, router before block 1, seed 0", mone(0.3, **{"model.router_layer": 1})),
      ("MoNE e_c=0.3, router before block 2, seed 0", mone(0.3, **{"model.router_layer": 2})),
      ("MoNE e_c=0.3, 2 routers, seed 0", mone(0.3, **{"model.num_routers": 2})),
      ("MoNE e_c=0.3, 4 routers, seed 0", mone(0.3, **{"model.num_routers": 4})),
      ("MoNE e_c=0.3, random router, seed 0", mone(0.3, **{"model.router": "random"})),  # and Figure 7
      ("MoNE e_c=0.4, random router, seed 0", mone(0.4, **{"model.router": "random"})),
      ("MoNE adaptive, isoFLOPs, seed 0", mone(None, adaptive=True, iso_flops=True)),
      ("MoNE e_c=0.2, isoFLOPs, seed 0", mone(0.2, iso_flops=True)),
  ]
  return runs
