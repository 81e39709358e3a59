"""Figure 7's chapter logic (`mone.chapters.figure7`): the runs it reads, the overlap of the full
model's tokens with the object on images and clips, and its three claims, each decided over the
seeds that have their arms."""
import dataclasses
import math

import numpy as np

from mone import results
from mone.chapters import chapter, figure7
from mone.runs import experiments
from mone.configs import profiles


def _metrics(learned=True, accuracy=0.85):
  """What the chapter reads of a run file: its accuracy, device and loss history."""
  loss = math.log(10) * (0.5 if learned else 0.95)
  return {"config": {"model": {"num_classes": 10}}, "history": [[100, loss]], "accuracy": accuracy, "device": {"kind": "cpu"}}


def _rows(precisions: dict) -> list[dict]:
  """Overlap rows from {router: {seed: precision (a fraction)}}."""
  return [{"seed": s, "router": router, "precision": p} for router, by_seed in precisions.items() for s, p in by_seed.items()]


def test_the_image_claims_compare_the_learned_router_with_a_random_choice_and_the_random_router():
  rows = _rows({"learned router": {0: 0.40, 1: 0.42, 2: 0.44}, "random router": {0: 0.17, 1: 0.18, 2: 0.17},
                figure7.EXPECTED: {0: 0.18, 1: 0.18, 2: 0.18}})
  chance, random_router, video = figure7.chapter_claims(rows, [], {})
  assert [c["id"] for c in (chance, random_router, video)] == [c[0] for c in figure7.IMAGE_CLAIMS] + [figure7.VIDEO_CLAIM[0]]
  assert chance["verdict"] == "reproduced" and chance["per_seed"] == [22.0, 24.0, 26.0] and chance["measured"] == 24.0
  assert chance["per_seed_baseline"] == [18.0, 18.0, 18.0] and chance["test"] == "paired"
  assert random_router["verdict"] == "reproduced" and random_router["per_seed"] == [23.0, 24.0, 27.0]
  assert video["verdict"] == "not testable" and video["why"] == "no run has been trained yet"
  assert figure7.image_summary(rows, "small") == (
      "profile='small', e_c=0.3: precision of the full model's tokens (%), by seed: learned router 40 (seed 0), 42 (seed 1), "
      "44 (seed 2); random router 17 (seed 0), 18 (seed 1), 17 (seed 2); expected at random 18 (seed 0), 18 (seed 1), 18 (seed 2)")


def test_image_claims_without_both_arms_or_masks_are_not_testable_and_two_seeds_are_inconclusive():
  rows = _rows({"learned router": {0: 0.40, 1: 0.42}, figure7.EXPECTED: {0: 0.18, 1: 0.18}})
  chance, random_router, _ = figure7.chapter_claims(rows, [], {})
  assert chance["verdict"] == "inconclusive" and chance["n_seeds"] == 2
  assert random_router["verdict"] == "not testable" and random_router["why"] == "no seed has both routers' runs landed"
  claims = figure7.chapter_claims([], [], {0: (_metrics(), None)})
  assert [c["verdict"] for c in claims] == ["not testable"] * 3
  assert {c["why"] for c in claims} == {"no object masks for this dataset"}


def test_the_video_claim_is_the_lift_over_a_random_choice_and_a_stuck_run_makes_it_inconclusive():
  video_rows = _rows({"learned router": {0: 0.60, 1: 0.65, 2: 0.70}, figure7.EXPECTED: {0: 0.25, 1: 0.25, 2: 0.25}})
  video_rows.sort(key=lambda r: r["seed"])  # as video_overlap_rows: seed by seed
  assert figure7.video_lift(video_rows) == {0: 35.0, 1: 40.0, 2: 45.0}
  runs = {s: (_metrics(), None) for s in (0, 1, 2)}
  video = figure7.chapter_claims([], video_rows, runs)[-1]
  assert video["verdict"] == "reproduced" and video["per_seed"] == [35.0, 40.0, 45.0] and "per_seed_baseline" not in video
  assert figure7.video_summary(video_rows, "small") == (
      "profile='small', e_c=0.3, temporal task: precision of the full model's tokens minus a random choice's, by seed: "
      "+35.0 (seed 0), +40.0 (seed 1), +45.0 (seed 2) points")
  runs[1] = (_metrics(learned=False), None)
  video = figure7.chapter_claims([], video_rows, runs)[-1]
  assert video["verdict"] == "inconclusive" and "plateau" in video["why"]


def test_overlap_rows_pair_both_routers_per_seed_and_skip_a_seed_without_the_learned_router():
  obj = np.zeros((2, 8), np.float32)
  obj[:, :2] = 1.0  # tokens 0-1 are the object
  on, off = np.zeros((2, 8), bool), np.zeros((2, 8), bool)
  on[:, :2], off[:, 6:] = True, True
  full = {("learned router", 0): on, ("learned router", 1): off, ("random router", 0): off, ("random router", 2): on}
  rows = figure7.overlap_rows(full, obj)
  assert [(r["seed"], r["router"]) for r in rows] == [(0, "learned router"), (0, "random router"), (0, figure7.EXPECTED),
                                                      (1, "learned router"), (1, figure7.EXPECTED)]
  assert [r["precision"] for r in rows] == [1.0, 0.0, 0.25, 0.0, 0.25]
  assert set(figure7.COLUMNS) <= set(rows[0])


def test_video_overlap_rows_pool_the_temporal_indices_against_the_moving_digits():
  # 1 clip of 4 frames of 8x8 px, tubelets of 2 frames and 4x4 patches: 2 temporal indices of 4 tokens
  masks = np.zeros((1, 4, 8, 8), bool)
  masks[0, :2, :4, :4] = True  # the digit in token 0 during index 0
  masks[0, 2:, 4:, 4:] = True  # and in token 3 during index 1
  full = {0: np.array([[[True, False, False, False], [False, False, False, True]]]),
          1: np.array([[[False, True, False, False], [False, False, False, True]]])}
  rows = figure7.video_overlap_rows(full, masks, tubelet=2, patch=4)
  assert [(r["seed"], r["router"]) for r in rows] == [(0, "learned router"), (0, figure7.EXPECTED),
                                                      (1, "learned router"), (1, figure7.EXPECTED)]
  assert [r["precision"] for r in rows] == [1.0, 0.25, 0.5, 0.25]
  assert figure7.video_lift(rows) == {0: 75.0, 1: 25.0}


def test_describe_says_what_each_run_routes_to_the_full_model():
  sel = np.zeros((3, 64), bool)
  sel[:, :4] = True
  runs = {(figure7.ROUTERS["learned router"].label, 0): (_metrics(accuracy=0.837), None),
          (figure7.ROUTERS["random router"].label, 0): (_metrics(accuracy=0.787), None)}
  text = figure7.describe(runs, {("learned router", 0): sel, ("random router", 0): sel}, ["MoNE e_c=0.3, seed 1"])
  assert text.splitlines() == [
      "learned router, seed 0: top-1 83.7% at e_c=0.3 (trained on cpu); the full model processes 4 of 64 tokens per image",
      "random router, seed 0: top-1 78.7% at e_c=0.3 (trained on cpu); the full model processes 4 of 64 tokens per image",
      "not trained yet: MoNE e_c=0.3, seed 1"]
  assert figure7.describe_video({2: (_metrics(accuracy=0.951), None)}, {2: sel.reshape(1, 3, 64)}) == (
      "temporal task, seed 2: top-1 95.1% at e_c=0.3; per temporal index the full model processes 4 of 64 tokens")


def test_image_and_video_runs_read_the_runs_that_exist(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  ch = chapter.Chapter("07_figure7_routed_tokens", "small", 0, False, "", (0, 1, 2), False)
  land = lambda cfg: results.atomic_write_json(experiments.run_path(cfg), {"kind": cfg.kind, "config": dataclasses.asdict(cfg)})
  land(profiles.mone_config("small", 0.3, seed=0))
  land(profiles.mone_config("small", 0.3, seed=0, **{"model.router": "random"}))
  land(profiles.mone_config("small", 0.3, seed=2))
  land(profiles.mone_config("small", 0.4, seed=1))  # not Figure 7's
  land(profiles.mone_config("small", 0.3, task="temporal", seed=1))
  runs, pending = figure7.image_runs(ch)
  assert sorted(runs) == [("MoNE e_c=0.3", 0), ("MoNE e_c=0.3", 2), ("MoNE e_c=0.3, random router", 0)]
  assert sorted(pending) == ["MoNE e_c=0.3, random router, seed 1", "MoNE e_c=0.3, random router, seed 2", "MoNE e_c=0.3, seed 1"]
  assert runs["MoNE e_c=0.3, random router", 0][1].model.router == "random"
  vruns, vpending = figure7.video_runs(ch)
  assert list(vruns) == [1] and vruns[1][1] == profiles.mone_config("small", 0.3, task="temporal", seed=1)
  assert vpending == ["temporal: MoNE e_c=0.3, seed 0", "temporal: MoNE e_c=0.3, seed 2"]
