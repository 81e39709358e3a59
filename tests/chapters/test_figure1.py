"""Figure 1's chapter logic (`mone.chapters.figure1`): the runs it reads, the overlap of the tokens
kept at each threshold with the object, and its claim, decided on the logit's margins over seeds
with the probability's (pre-registered) result beside it."""
import dataclasses
import math

import numpy as np
import pytest

from mone import results
from mone.chapters import chapter, figure1, routers
from mone.runs import experiments
from mone.configs import profiles


def _metrics(learned=True, accuracy=0.85):
  """What the claim reads of a run file: its loss history (left the chance plateau or not)."""
  loss = math.log(10) * (0.5 if learned else 0.95)
  return {"config": {"model": {"num_classes": 10}}, "history": [[100, loss]], "accuracy": accuracy,
          "device": {"kind": "cpu"}, "config_hash": "abc"}


def _runs(seeds, stuck=()):
  return {s: (_metrics(learned=s not in stuck), None) for s in seeds}


def _rows(logit, probability):
  """Overlap rows with router precision = random precision + margin, {seed: {keep: margin}} per score."""
  return [{"score": score, "seed": s, "keep": k, "router_precision": 20.0 + m, "random_precision": 20.0}
          for score, by_seed in (("logit", logit), ("probability", probability)) for s, ms in by_seed.items()
          for k, m in ms.items()]


def test_the_claim_is_decided_on_each_seeds_smallest_logit_margin_with_the_probabilitys_beside_it():
  logit = {s: {0.5: 2.0 + s / 2, 0.25: 5.0, 0.125: 9.0} for s in (0, 1, 2)}
  probability = {s: {0.5: -3.0 - s / 2, 0.25: 1.0, 0.125: 2.0} for s in (0, 1, 2)}
  rows = _rows(logit, probability)
  assert figure1.smallest_margins(rows, "logit") == {0: 2.0, 1: 2.5, 2: 3.0}
  [c] = figure1.chapter_claims(rows, _runs((0, 1, 2)))
  assert c["id"] == figure1.CLAIM[0] and c["kind"] == "trained" and c["relation"] == "beats"
  assert c["verdict"] == "reproduced" and c["seeds"] == [0, 1, 2] and c["per_seed"] == [2.0, 2.5, 3.0]
  assert c["measured"] == 2.5 and c["test"] == "paired"
  assert c["note"].startswith("seed 0: top 50%: +2.0, top 25%: +5.0, top 12.5%: +9.0; seed 1: top 50%: +2.5")
  pre = c["plan_deviation"]["preregistered"]
  assert pre["per_seed"] == [-3.0, -3.5, -4.0] and pre["verdict"] == "not reproduced"
  text = figure1.summary(rows, "small", c)
  assert text.splitlines()[0] == ("ranked by the full expert's probability instead, the smallest margins are "
                                  "-3.0 (seed 0), -3.5 (seed 1), -4.0 (seed 2) points")
  assert text.splitlines()[1] == f"profile='small': router precision minus random, by seed and threshold: {c['note']} points"


def test_few_seeds_or_a_stuck_run_are_inconclusive_and_no_rows_are_not_testable():
  rows = _rows({s: {0.5: 10.0} for s in (0, 1)}, {s: {0.5: 10.0} for s in (0, 1)})
  [c] = figure1.chapter_claims(rows, _runs((0, 1)))
  assert c["verdict"] == "inconclusive" and c["n_seeds"] == 2 and "3 seeds" in c["why"]
  rows = _rows({s: {0.5: 10.0 + s} for s in (0, 1, 2)}, {s: {0.5: 10.0 + s} for s in (0, 1, 2)})
  [c] = figure1.chapter_claims(rows, _runs((0, 1, 2), stuck=(1,)))
  assert c["verdict"] == "inconclusive" and "plateau" in c["why"]
  [c] = figure1.chapter_claims([], _runs((0, 1, 2)))
  assert c["verdict"] == "not testable" and c["why"] == "no object masks for this dataset"
  [c] = figure1.chapter_claims([], {})
  assert c["verdict"] == "not testable" and c["why"] == "no run has been trained yet"


def test_overlap_rows_score_the_kept_tokens_against_the_object_and_a_random_choice():
  # 2 images of 8 tokens; the object is tokens 0-1; the score ranks token i by -i, so the top
  # 50% (tokens 0-3) hold the object and top 25% (tokens 0-1) are exactly it.
  obj = np.zeros((2, 8), np.float32)
  obj[:, :2] = 1.0
  imp = np.tile(-np.arange(8, dtype=np.float32), (2, 1))
  rows = figure1.overlap_rows({"logit": {0: imp}, "probability": {0: imp[:, ::-1]}}, obj, keep=(1.0, 0.5, 0.25))
  assert [(r["score"], r["seed"], r["keep"]) for r in rows] == [("logit", 0, 0.5), ("logit", 0, 0.25),
                                                                ("probability", 0, 0.5), ("probability", 0, 0.25)]
  assert list(rows[0]) == ["score", "seed", "keep", "router_precision", "router_recall", "router_iou",
                           "random_precision", "random_recall", "random_iou"]
  assert rows[0]["router_precision"] == 50.0 and rows[0]["router_recall"] == 100.0 and rows[1]["router_iou"] == 100.0
  assert rows[1]["random_precision"] == 25.0 and rows[1]["random_recall"] == 25.0  # m / N and k / N
  assert rows[3]["router_precision"] == 0.0  # the reversed score keeps the background
  assert figure1.margins(rows, "logit") == {(0, 0.5): 25.0, (0, 0.25): 75.0}


def test_expert_share_names_the_experts_by_width_and_summarises_each_seed():
  # 1 image of 4 tokens, 4 experts; the object (tokens 0-1) sits in expert 1 and the full expert 3
  assignment = np.array([[1, 3, 0, 2]])
  obj = np.array([[1.0, 1.0, 0.0, 0.0]])
  share, names = figure1.expert_share({0: (None, assignment, None), 1: (None, assignment, None)}, obj, (8, 16, 32, 64))
  assert names == ["D/8", "D/4", "D/2", "D"] and [r["width"] for r in share[:4]] == names
  assert [r["seed"] for r in share] == [0] * 4 + [1] * 4 and list(share[0])[:3] == ["seed", "width", "expert"]
  lines = figure1.share_summary(share).splitlines()
  assert len(lines) == 2 and lines[0].startswith("seed 0: the object's largest share is in expert D/4 (100.0% of its tokens, "
                                                 "base rate 50.0%); the full expert's: 100.0%")
  assert lines[0].endswith("it receives 50.0% of the object tokens")


def test_describe_and_metrics_say_what_the_chapter_read():
  cfg = profiles.mone_config("small", 0.4)
  runs = {0: (_metrics(accuracy=0.851), cfg), 1: (_metrics(accuracy=0.877), cfg)}
  text = figure1.describe(runs, 2000, 64, ["MoNE e_c=0.4, seed 2"])
  assert text.splitlines() == [f"seed 0: MoNE {cfg.model.name} trained at e_c=0.4, top-1 85.1% (trained on cpu)",
                               f"seed 1: MoNE {cfg.model.name} trained at e_c=0.4, top-1 87.7% (trained on cpu)",
                               "2000 test images, 64 tokens each; not trained yet: MoNE e_c=0.4, seed 2"]
  m = figure1.metrics(runs, [], [])
  assert m == {"runs": {0: "abc", 1: "abc"}, "accuracy": {0: 0.851, 1: 0.877}, "object_fraction": routers.OBJECT_FRACTION,
               "overlap": [], "pending": []}


def test_landed_reads_the_mone_runs_at_e_c_04_that_exist(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  ch = chapter.Chapter("01_figure1_token_importance", "small", 0, False, "", (0, 1, 2), False)
  assert figure1.landed(ch) == ({}, [f"MoNE e_c=0.4, seed {s}" for s in (0, 1, 2)])
  with pytest.raises(ValueError, match="no run of Figure 3's MoNE"):
    figure1.examples({})
  for s in (0, 2):
    cfg = profiles.mone_config("small", 0.4, seed=s)
    results.atomic_write_json(experiments.run_path(cfg), {"kind": "mone", "config": dataclasses.asdict(cfg), "accuracy": 0.8 + s / 100})
  results.atomic_write_json(experiments.run_path(profiles.mone_config("small", 0.3, seed=1)), {"kind": "mone", "accuracy": 0.5})  # not Figure 1's
  runs, pending = figure1.landed(ch)
  assert sorted(runs) == [0, 2] and pending == ["MoNE e_c=0.4, seed 1"]
  assert runs[2][0]["accuracy"] == 0.82 and runs[2][1] == profiles.mone_config("small", 0.4, seed=2)
