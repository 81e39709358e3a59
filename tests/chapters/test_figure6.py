"""Figure 6's chapter module: its studies and the claims it decides, on small synthetic run points
(no training, no notebook)."""
import types

import pytest

from mone.chapters import chapter, figure6


def _pt(gflops, acc, e_c=0.3, learned=True):
  return {"variant": "mini/8", "gflops": gflops, "accuracy_pct": acc, "e_c": e_c, "width_index": None, "learned": learned}


def _points(seeds=(0, 1, 2)):
  """{(label, seed): point} as `figure6.load` reads them, small profile: MoNE's curve over e_c
  (10 MFLOPs per unit of e_c, 80 + 20 e_c + seed points), the random router 10 points below at
  e_c 0.2 and 5 below at 0.3 (every seed) and 0.4 (seed 0), and seed 0's router position and count
  studies."""
  out = {}
  for s in seeds:
    for e in (0.2, 0.3, 0.4, 0.6):
      out[f"MoNE e_c={e}", s] = _pt(10 * e, 80 + 20 * e + s, e)
    for e, drop in ((0.2, 10.0), (0.3, 5.0)):
      out[f"MoNE e_c={e}, random router", s] = _pt(10 * e, 80 + 20 * e + s - drop, e)
  if 0 in seeds:
    out["MoNE e_c=0.4, random router", 0] = _pt(4.0, 80.0)
    out["MoNE e_c=0.3, router before block 1", 0] = _pt(4.0, 86.0)  # the curve at 4 MFLOPs: 88
    out["MoNE e_c=0.3, router before block 2", 0] = _pt(5.0, 87.0)  # the curve at 5 MFLOPs: 90
    out["MoNE e_c=0.3, 2 routers", 0] = _pt(3.0, 85.0)
    out["MoNE e_c=0.3, 4 routers", 0] = _pt(3.0, 84.0)
  return out


def _decided(points, seeds=(0, 1, 2)):
  study = figure6.studies(points, "small", seeds)
  return study, figure6.decide(study, figure6.default_curve(study, seeds), points)


def test_the_labels_name_every_studys_runs():
  labels = figure6.labels("small")
  assert labels["curve", 0.6] == "MoNE e_c=0.6"
  assert labels["router position", 0] == labels["number of routers", 1] == labels["learned router", 0.3] == "MoNE e_c=0.3"
  assert labels["router position", 2] == "MoNE e_c=0.3, router before block 2"
  assert labels["number of routers", 4] == "MoNE e_c=0.3, 4 routers"
  assert labels["random router", 0.2] == "MoNE e_c=0.2, random router"
  assert sorted({name for name, _ in labels}) == ["curve", "learned router", "number of routers", "random router", "router position"]
  with pytest.raises(ValueError, match="profile must be one of"):
    figure6.labels("huge")


def test_the_studies_rows_and_default_curve():
  points = _points()
  study = figure6.studies(points, "small", (0, 1, 2))
  assert study["router position"][1] == {0: points["MoNE e_c=0.3, router before block 1", 0]}
  assert study["random router"][0.4] == {0: points["MoNE e_c=0.4, random router", 0]}
  assert set(study["learned router"][0.2]) == {0, 1, 2}
  rows = figure6.rows(study)
  assert {r["study"] for r in rows} == {"router position", "number of routers", "learned router", "random router"}
  assert rows[0] == {"study": "router position", "value": 0, "seed": 0, **points["MoNE e_c=0.3", 0]}
  curve = figure6.default_curve(study, (2, 0, 1, 5))  # seed 5 has no run: left out; seeds in the order given
  assert list(curve) == [2, 0, 1] and [p["e_c"] for p in curve[0]] == [0.2, 0.3, 0.4, 0.6]
  assert figure6.title(points, "small").startswith("Router analysis, mini/8 on the cluttered digits (small profile;")


def test_the_claims_pair_the_seeds_of_each_study():
  study, (a, b, c, d) = _decided(_points())
  assert a["id"] == "fig6.first_layer_router_best" and a["seeds"] == [0]
  assert a["measured"] == pytest.approx(2.0) and a["verdict"] == "inconclusive"  # one seed: the smallest margin, 88 - 86
  assert "layer 1: +2.0" in a["note"] and "layer 2: +3.0" in a["note"]
  assert b["id"] == "fig6.more_routers_lower_accuracy" and b["measured"] == pytest.approx(86.0 - 84.0) and b["n_seeds"] == 1
  assert c["id"] == "fig6.learned_beats_random" and c["seeds"] == [0, 1, 2] and c["per_seed"] == pytest.approx([10.0] * 3)
  assert c["verdict"] == "reproduced" and "(0.2)" in c["claim"]
  assert d["id"] == "fig6.random_degrades_at_low_capacity" and d["exploratory"]
  assert d["per_seed"] == pytest.approx([5.0] * 3)  # a lead of 10 at e_c 0.2, 5 at 0.3
  lines = figure6.lines([a, b, c, d], study, "small").split("\n")
  assert lines[0] == f"profile='small': (a) layer-0 curve minus later routers: {a['note']}"
  assert lines[1] == "  (b) accuracy by number of routers: 1: 86.0% (seed 0), 87.0% (seed 1), 88.0% (seed 2); 2: 85.0% (seed 0); 4: 84.0% (seed 0)"
  assert lines[2] == ("  (c) learned minus random router, by e_c: e_c=0.2: +10.0 (seed 0), +10.0 (seed 1), +10.0 (seed 2); "
                      "e_c=0.3: +5.0 (seed 0), +5.0 (seed 1), +5.0 (seed 2); e_c=0.4: +8.0 (seed 0) points")


def test_a_run_on_the_chance_plateau_makes_every_decided_trained_claim_inconclusive():
  points = _points()
  points["MoNE e_c=0.3, 4 routers", 0] = _pt(3.0, 10.0, learned=False)
  _, out = _decided(points)
  assert [x["verdict"] for x in out] == ["inconclusive"] * 4
  assert all(x["why"] == figure6.PLATEAU for x in out)
  assert out[2]["measured"] == pytest.approx(10.0)  # the numbers stay; only the verdict changes
  # A claim that was not testable stays so: here no later router lies inside the curve.
  points = {k: v for k, v in points.items() if "router before block" not in k[0]}
  _, out = _decided(points)
  assert out[0]["verdict"] == "not testable" and out[0].get("why") != figure6.PLATEAU
  assert [x["verdict"] for x in out[1:]] == ["inconclusive"] * 3


def test_the_claims_are_not_testable_without_runs():
  _, out = _decided({}, seeds=(0, 1, 2))
  assert [x["verdict"] for x in out] == ["not testable"] * 4
  assert figure6.lines(out, figure6.studies({}, "small", (0,)), "small").split("\n") == [
      "profile='small': (a) layer-0 curve minus later routers: none inside the curve",
      "  (b) accuracy by number of routers: ", "  (c) learned minus random router, by e_c:  points"]


def test_load_reads_the_studies_runs_only(monkeypatch):
  labels = ["MoNE e_c=0.3", "MoNE e_c=0.3, 2 routers", "MoD", "MoNE e_c=0.2, isoFLOPs", "MoNE e_c=0.2, random router"]
  run = lambda l, s: figure6.figures.Run(figure6.figures.arm(l), types.SimpleNamespace(seed=s))
  monkeypatch.setattr(figure6.figures, "image_runs", lambda profile, seeds, data_dir: [run(l, s) for s in seeds for l in labels])
  read = []
  monkeypatch.setattr(figure6.headlines, "landed", lambda planned, train, recompute: read.append(planned) or [])
  monkeypatch.setattr(figure6.headlines, "pending", lambda planned, train: [label for label, _ in planned])
  point, pending = figure6.load(chapter.Chapter("06_figure6_router", "small", 0, False, "", (0, 1), False))
  assert point == {}
  assert pending == [f"{l}, seed {s}" for s in (0, 1) for l in ("MoNE e_c=0.3", "MoNE e_c=0.3, 2 routers", "MoNE e_c=0.2, random router")]
  assert [label for label, _ in read[0]] == pending
