"""What the GPU report runs: its model families and its plan, a list of groups, most important
first, so that a call cut short by its budget still has the measurements that matter most.

A group is the unit the report runs and saves whole: the correctness check, a timing group (one
mode and batch of one family, its contenders timed round-robin in the default setting and with
each of its switches turned back alone), or the per-operation summary of earlier groups' runners.
The timing groups: ViT-B/16 forward at batch 256 and 64 and its training step at 64 and 256, dense
vs MoNE e_c 0.3; then the e_c sweep (MoNE at 0.5 and 1.0, MatViT's sub-models of the nearest
FLOPs); then ViViT-B/16x2 (16 frames, batch 8) forward and training step. --tiny keeps one group
of each kind on tiny models: the same code paths, a fraction of the compilations.
"""
import dataclasses

from mone.bench.contenders import DENSE, MATVIT, MONE
from mone.bench.switches import ALL_SWITCHES


@dataclasses.dataclass(frozen=True)
class Family:
  """A model family of the report: how to build its workload and its batch sizes."""
  name: str             # 'image', 'video' or 'check' (the correctness model)
  variant: str
  batches: tuple        # (large, small) for images
  overrides: tuple = ()  # extra config fields, as (key, value) pairs
  num_frames: int = 0


def families(tiny: bool) -> dict:
  if tiny:  # one layer each (two for the video's scanned encoder): compiling is nearly all of a tiny run's time
    one = (("depth", 1),)
    out = [Family("image", "tiny/8", (4, 2), one), Family("video", "tiny/8x2", (2,), (("depth", 2),), num_frames=4),
           Family("check", "tiny/8", (2,), one + (("head_zeroinit", False),))]
  else:
    # The correctness model: ViT-B/16's geometry (width, heads, tokens) at depth 2, classifier
    # not zero-initialised (a zero classifier gives every layer below it a zero gradient).
    out = [Family("image", "B/16", (256, 64)), Family("video", "B/16x2", (8,), num_frames=16),
           Family("check", "B/16", (2,), (("depth", 2), ("head_zeroinit", False)))]
  return {f.name: f for f in out}


@dataclasses.dataclass(frozen=True)
class Group:
  """One unit of the report, timed and saved as a whole. contenders: (model, e_c) pairs timed
  in the default setting; switched: those also timed with each of `switch_names` flipped."""
  name: str
  kind: str                  # 'correctness', 'timing' or 'op_summary'
  family: str = ""
  mode: str = ""
  batch: int = 0
  contenders: tuple = ()
  switched: tuple = ()
  switch_names: tuple = ()
  sources: tuple = ()        # op_summary: the (group, model, e_c) runners it profiles


CORE = ((DENSE, None), (MONE, 0.3))
E_C_SWEEP = ((DENSE, None), (MONE, 0.3), (MONE, 0.5), (MONE, 1.0), (MATVIT, 0.3), (MATVIT, 0.5))


def plan(fams: dict, tiny: bool = False) -> list:
  """The groups, most important first. tiny: one group of each kind (the same code paths, a
  fraction of the compilations): no large-batch groups, no training sweep, no ViViT training."""
  big, small = fams["image"].batches
  (vb,) = fams["video"].batches
  g = lambda mode, b, suffix="": f"vit-{mode}-{b}{suffix}"
  core = lambda mode, b: Group(g(mode, b), "timing", "image", mode, b, CORE, CORE, ALL_SWITCHES)
  sweep = lambda mode, b: Group(g(mode, b, "-e_c"), "timing", "image", mode, b, E_C_SWEEP)
  groups = [
      Group("correctness", "correctness", "check"),
      core("forward", big), core("forward", small), core("train", small),
      Group("op-summary", "op_summary", "image", batch=small,
            sources=tuple((g(m, small), model, e_c) for m in ("forward", "train") for model, e_c in CORE)),
      core("train", big),
      sweep("forward", big), sweep("forward", small), sweep("train", small),
      Group(f"vivit-forward-{vb}", "timing", "video", "forward", vb,
            ((DENSE, None), (MONE, 0.3), (MONE, 0.5), (MONE, 1.0)), CORE, ("attention", "layer_loop")),
      Group(f"vivit-train-{vb}", "timing", "video", "train", vb, CORE, CORE, ("layer_loop",)),
  ]
  if tiny:
    large = {f"vit-forward-{big}", f"vit-train-{big}", f"vit-forward-{big}-e_c", f"vit-train-{small}-e_c",
             f"vivit-train-{vb}"}
    groups = [g for g in groups if g.name not in large]
  return groups


# Compile-time guesses (seconds) for a kind of function not compiled yet in this run; after the
# first, the longest seen of its kind is used. The ViViT training step outlasted 200 s on an H100
# before (book/speed_notes.md), so its guess is the target it should meet.
COMPILE_GUESS_S = {("check", "train"): 10, ("image", "forward"): 20, ("image", "train"): 60,
                   ("video", "forward"): 30, ("video", "train"): 90}
