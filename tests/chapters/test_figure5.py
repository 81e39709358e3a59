"""Chapter 05's module (`mone.chapters.figure5`): its runs read into curves and summaries, and the
claims decided from them, on small synthetic runs (no training, no notebook)."""
import math

import pytest

from mone.chapters import analysis, calibration, figure5


def _metrics(train_e_c, accuracy: dict, stuck: bool = False) -> dict:
  """A finished MoNE run's metrics (what `analysis.points` reads): trained at train_e_c (None:
  adaptively), evaluated at each e_c of `accuracy` ({e_c: accuracy in %}); stuck: its training
  loss never left the chance plateau."""
  config = {"adaptive": train_e_c is None, "e_c": train_e_c, "iso_flops": train_e_c is None,
            "model": {"name": "tiny/8", "num_classes": 10}}
  return {"kind": "mone", "config": config, "history": [(100, math.log(10) if stuck else 0.5)],
          "evals": [{"e_c": e, "width_index": None, "gflops": e, "accuracy": a / 100} for e, a in accuracy.items()]}


def _summary(table: dict, adaptive: dict | None = None) -> dict:
  """`analysis.adaptation_summary` of models trained at the keys of table ({t: {e: accuracy}})."""
  rows = [{"adaptive": False, "train_e_c": t, "e_c": e, "accuracy_pct": a} for t, accs in table.items() for e, a in accs.items()]
  rows += [{"adaptive": True, "train_e_c": None, "e_c": e, "accuracy_pct": a} for e, a in (adaptive or {}).items()]
  return analysis.adaptation_summary(rows, tuple(table))


def _domain(drop: float, e_cs) -> dict:
  """A summary whose model trained at 0.4 loses `drop` at 0.2 and drop / 2 at 0.3: `drop / 0.2`
  points per unit of shift on the (0.4, 0.2) and (0.4, 0.3) pairs; the other model (at e_cs[0])
  shares no pair with the other domain."""
  return _summary({e_cs[0]: {e_cs[0]: 50.0, 0.4: 52.0}, 0.4: {0.2: 60.0 - drop, 0.3: 60.0 - drop / 2, 0.4: 60.0}})


def test_labels_name_each_domain_s_planned_runs():
  assert figure5.labels("images", (0.2, 0.4)) == {"MoNE e_c=0.2": "Train e_c=0.2", "MoNE e_c=0.4": "Train e_c=0.4",
                                                  "MoNE adaptive, isoFLOPs": "Train Adaptive"}
  assert figure5.labels("video", (0.3,)) == {"temporal: MoNE e_c=0.3": "Train e_c=0.3",
                                             "temporal: MoNE adaptive, isoFLOPs": "Train Adaptive"}
  for call in (lambda: figure5.labels("audio", (0.3,)), lambda: figure5.load("small", (0,), "", "audio")):
    with pytest.raises(ValueError, match="domain must be one of"):
      call()


def test_runs_become_curves_rows_and_summaries_per_seed():
  landed = [("MoNE e_c=0.4", 0, _metrics(0.4, {0.4: 60.0, 0.2: 50.0})),
            ("MoNE e_c=0.4", 1, _metrics(0.4, {0.2: 40.0, 0.4: 70.0})),
            ("MoNE adaptive, isoFLOPs", 0, _metrics(None, {0.2: 49.0, 0.4: 59.0}))]
  runs = figure5.by_seed(landed, figure5.labels("images", (0.4,)).get)
  assert [p["e_c"] for p in runs[0]["Train e_c=0.4"]] == [0.2, 0.4]  # by e_c, whatever the evaluation order
  assert set(runs[0]) == {"Train e_c=0.4", "Train Adaptive"} and set(runs[1]) == {"Train e_c=0.4"}
  curves = figure5.mean_curves(runs)
  assert [(p["e_c"], p["accuracy_pct"], p["n_seeds"]) for p in curves["Train e_c=0.4"]] == [
      (0.2, pytest.approx(45.0), 2), (0.4, pytest.approx(65.0), 2)]
  s = figure5.summaries(runs, (0.2, 0.4))  # 0.2 never trained: left out
  assert list(s) == [0, 1] and s[0]["drops"] == {(0.4, 0.2): pytest.approx(10.0)}
  assert s[0]["adaptive"] == {0.4: pytest.approx(-1.0)} and s[1]["adaptive"] == {}
  d = figure5.Domain("images", (0.4,), "tiny/8", runs, [], curves, s)
  assert [(r["seed"], r["model"], r["e_c"]) for r in d.rows] == [
      (0, "Train e_c=0.4", 0.2), (0, "Train e_c=0.4", 0.4), (0, "Train Adaptive", 0.2), (0, "Train Adaptive", 0.4),
      (1, "Train e_c=0.4", 0.2), (1, "Train e_c=0.4", 0.4)]


def test_curve_table_and_printed_lines():
  curves = figure5.mean_curves({0: {"Train e_c=0.4": [{**p, "learned": True} for p in analysis.points(
      _metrics(0.4, {0.2: 50.0, 0.4: 60.0}), all_capacities=True)]}})
  heading, table = figure5.curve_table(curves, "images")
  assert heading.startswith("images: top-1 accuracy (%) by inference e_c")
  assert str(table).splitlines() == ["        model  seeds  0.2  0.4", "Train e_c=0.4      1   50   60"]
  assert figure5.curve_table({}, "temporal task") == ("temporal task: no run has been trained yet", None)
  s = {0: _summary({0.2: {0.2: 50.0, 0.4: 52.0}, 0.4: {0.2: 40.0, 0.4: 60.0}}, {0.2: 49.0, 0.4: 58.0})}
  image_line, = figure5.summary_lines(s, "images", "small")
  assert image_line == ("profile='small', images, seed 0: mean own drop by shift |t - e|: 0.2: +9.0 points; "
                        "high -> low +20.0, low -> high -2.0 (mean over shifts [0.2]); "
                        "adaptive minus fixed at each training e_c: 0.2: -1.0, 0.4: -2.0")
  video_line, = figure5.summary_lines({0: _summary({0.3: {0.3: 50.0, 0.4: 49.0}})}, "video", "small")
  assert video_line == "profile='small', video, seed 0: mean own drop by shift: 0.1: +1.0 points; high -> low +nan, low -> high +nan"


def test_at_chance_names_the_models_of_a_stuck_run():
  runs = figure5.by_seed([("temporal: MoNE e_c=0.3", 0, _metrics(0.3, {0.3: 10.0}, stuck=True)),
                          ("temporal: MoNE e_c=0.4", 0, _metrics(0.4, {0.4: 90.0}))],
                         figure5.labels("video", (0.3, 0.4)).get)
  assert figure5.at_chance(runs) == ["Train e_c=0.3"]
  assert figure5.at_chance({}) == []


def test_video_gentler_than_images_is_decided_unpaired_with_the_plan_s_paired_result_beside_it():
  images = {s: _domain(d, (0.2,)) for s, d in enumerate((10.0, 11.0, 12.0))}  # 50, 55, 60 points per unit
  video = {s: _domain(d, (0.3,)) for s, d in enumerate((4.0, 5.0, 3.0))}  # 20, 25, 15
  img, vid = figure5.shared_per_unit(images, video)
  assert img == pytest.approx({0: 50.0, 1: 55.0, 2: 60.0}) and vid == pytest.approx({0: 20.0, 1: 25.0, 2: 15.0})
  assert figure5.gentler_lines(images, video)[0] == ("  seed 0: own drop per unit of shift on the shared pairs: "
                                                     "images +50.0, video +20.0, images minus video +30.0 points")
  c = figure5.gentler_claim(images, video)
  assert c["id"] == figure5.GENTLER[0] and c["test"] == "welch" and c["verdict"] == "reproduced"
  assert c["measured"] == pytest.approx(35.0) and c["n_seeds"] == 3
  pre = c["plan_deviation"]["preregistered"]
  assert pre["test"] == "paired" and pre["per_seed"] == pytest.approx([30.0, 30.0, 45.0]) and pre["verdict"] == "reproduced"
  # a video run at chance decides nothing; two seeds are too few
  assert figure5.gentler_claim(images, video, learned=False)["verdict"] == "inconclusive"
  assert figure5.gentler_claim({0: images[0], 1: images[1]}, video)["verdict"] == "inconclusive"


def test_video_gentler_than_images_is_not_testable_without_a_shared_pair():
  images = {0: _summary({0.6: {0.6: 50.0, 0.9: 40.0}})}
  video = {0: _domain(4.0, (0.3,)), 1: _domain(4.0, (0.3,))}
  for img in (images, {}):
    c = figure5.gentler_claim(img, video)
    assert c["verdict"] == "not testable" and c["why"] == "no seed has both domains' runs at a shared capacity"
  assert figure5.gentler_lines(images, video) == []


def test_chapter_claims_are_both_domains_then_video_against_images():
  images = {s: _domain(d, (0.2,)) for s, d in enumerate((10.0, 11.0, 12.0))}
  video = {s: _domain(d, (0.3,)) for s, d in enumerate((4.0, 5.0, 3.0))}
  cs = figure5.chapter_claims(images, video)
  assert [c["id"] for c in cs] == [f"fig5.{d}.{c}" for d in ("images", "video") for c in
                                   ("drop_grows_with_shift", "steeper_high_to_low", "adaptive_serves_every_budget")
                                   ] + ["fig5.video_gentler_than_images"]
  assert cs[1]["verdict"] == "reproduced" and cs[2]["verdict"] == "not testable"  # no adaptive model
  stuck = figure5.chapter_claims(images, video, ["Train e_c=0.3"])
  assert [c["verdict"] for c in stuck[:3]] == [c["verdict"] for c in cs[:3]]  # images are not qualified
  assert stuck[4]["verdict"] == stuck[6]["verdict"] == "inconclusive" and stuck[6]["why"].endswith("chance plateau")
  assert [c["verdict"] for c in figure5.chapter_claims({}, {})] == ["not testable"] * 7


def test_metrics_hold_every_point_and_the_drops_as_rows():
  runs = {0: {"Train e_c=0.4": [{"e_c": 0.2, "accuracy_pct": 50.0}, {"e_c": 0.4, "accuracy_pct": 60.0}]}}
  s = {0: _summary({0.4: {0.2: 50.0, 0.4: 60.0}})}
  images = figure5.Domain("images", (0.4,), "tiny/8", runs, ["MoNE e_c=0.2, seed 0"], {}, s)
  video = figure5.Domain("video", (0.3,), "tiny/8x2", {}, ["temporal: MoNE e_c=0.3, seed 0"], {}, {})
  m = figure5.metrics(images, video, [])
  assert list(m) == ["points", "points_video", "pending", "images", "video", "at_chance"]
  assert m["points"] == [{"seed": 0, "model": "Train e_c=0.4", "e_c": 0.2, "accuracy_pct": 50.0},
                         {"seed": 0, "model": "Train e_c=0.4", "e_c": 0.4, "accuracy_pct": 60.0}]
  assert m["pending"] == ["MoNE e_c=0.2, seed 0", "temporal: MoNE e_c=0.3, seed 0"] and m["video"] == {}
  assert m["images"][0]["drops"] == [{"train_e_c": 0.4, "eval_e_c": 0.2, "drop": 10.0}]


def test_caveat_names_the_video_ceiling_only_where_the_task_does_not_discriminate():
  curves = {"Train e_c=0.3": [{"e_c": 0.3, "accuracy_pct": 97.5}, {"e_c": 0.4, "accuracy_pct": 99.0}],
            "Train e_c=0.4": [{"e_c": 0.4, "accuracy_pct": 98.0}]}
  video = figure5.Domain("video", (0.3, 0.4), "tiny/8x2", {}, [], curves, {})
  poor = {"discriminates": False, "gap": 0.01, "seeds": 3}
  caveat, = figure5.caveats(poor, video)
  assert "(MoNE at 0.3-0.4 scores at least 97.5% at its training capacity), where a drop is compressed." in caveat
  assert f"the bar is {100 * calibration.SUBMODEL_GAP:.0f}" in caveat
  unlanded, = figure5.caveats(poor, figure5.Domain("video", (0.3, 0.4), None, {}, [], {}, {}))
  assert "scores at least" not in unlanded and unlanded.endswith("near its ceiling, where a drop is compressed.")
  assert figure5.caveats(None, video) == [] and figure5.caveats({**poor, "discriminates": True}, video) == []
