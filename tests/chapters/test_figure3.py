"""Figure 3's chapter module: its runs, the MatViT diagnostics and the claims it decides, on small
synthetic curves (no training, no notebook)."""
import types

import pytest

from mone.chapters import analysis, chapter, figure3

V = "mini/8"  # the small profile's image model


def _pt(gflops, acc, e_c=None, width=None, learned=True):
  return {"gflops": gflops, "accuracy_pct": acc, "e_c": e_c, "width_index": width, "learned": learned}


def _by_seed(seeds=(0, 1, 2), mone04=(-0.2, -0.1, -0.3), learned=True):
  """Every model of the figure at `seeds`: ViT at 20 MFLOPs, MatViT at 5 and 20, MoD at 9, MoNE at
  e_c 0.2 (6 MFLOPs) and 0.4 (10 MFLOPs, mone04[s] points from the ViT)."""
  return {s: {(V, "ViT"): [_pt(0.02, 90.0 + s)],
              (V, "MatViT"): [_pt(0.005, 80.0 + s, width=0), _pt(0.02, 91.0 + s, width=1)],
              (V, "MoD"): [_pt(0.009, 84.0 + s)],
              (V, "MoNE"): [_pt(0.006, 82.0 + s, 0.2, learned=learned), _pt(0.01, 90.0 + s + mone04[i], 0.4)]}
          for i, s in enumerate(seeds)}


def test_the_profiles_models_and_iso_flops_run():
  assert figure3.variants("small") == [V] and figure3.variants("paper") == ["S/16", "B/16", "L/16"]
  assert {a.label for a in figure3.models("small")} == {"ViT", "MatViT", "MoD", "MoNE e_c=0.2", "MoNE e_c=0.3", "MoNE e_c=0.4", "MoNE e_c=0.6"}
  assert figure3.iso_arm("small").label == "MoNE e_c=0.2, isoFLOPs"
  assert figure3.iso_arm("smoke").label == "MoNE e_c=0.3, isoFLOPs"  # the lowest e_c of the profile's grid
  with pytest.raises(ValueError, match="profile must be one of"):
    figure3.variants("huge")


def test_the_claims_pair_the_seeds_and_decide_the_match_the_reduction_and_the_baselines():
  out = {c["id"]: c for c in figure3.decide(_by_seed(), "small", [])}
  assert list(out) == ["fig3.mone_matches_vit", "fig3.flops_reduction", "fig3.mone_beats_matvit", "fig3.mone_beats_mod"]
  match = out["fig3.mone_matches_vit"]
  assert match["n_seeds"] == 3 and match["per_seed"] == pytest.approx([-0.2, -0.1, -0.3])
  assert match["verdict"] == "reproduced" and match["tolerance"] == figure3.TOLERANCE
  assert out["fig3.flops_reduction"]["measured"] == pytest.approx(2.0) and out["fig3.flops_reduction"]["verdict"] == "reproduced"
  # MoNE's cheapest point (6 MFLOPs) against MatViT interpolated there: 80 + 11/15 points, every seed
  assert out["fig3.mone_beats_matvit"]["per_seed"] == pytest.approx([2.0 - 11 / 15] * 3, abs=1e-3)  # claims keep 4 digits
  assert out["fig3.mone_beats_matvit"]["verdict"] == "reproduced"
  # MoNE at MoD's 9 MFLOPs: 82 + (89.8 - 82) * 3/4 (seed 0) against MoD's 84
  assert out["fig3.mone_beats_mod"]["per_seed"][0] == pytest.approx(82.0 + 7.8 * 0.75 - 84.0, abs=1e-3)
  # A run left on the chance plateau makes the trained claims inconclusive, whatever the numbers.
  stuck = {c["id"]: c for c in figure3.decide(_by_seed(learned=False), "small", [])}
  assert stuck["fig3.mone_matches_vit"]["verdict"] == "inconclusive"
  assert stuck["fig3.mone_matches_vit"]["why"] == "a compared run never left the chance plateau"
  # Fewer than three seeds: inconclusive, whatever the point estimate.
  one = {c["id"]: c for c in figure3.decide(_by_seed(seeds=(0,)), "small", [])}
  assert one["fig3.mone_matches_vit"]["verdict"] == "inconclusive" and one["fig3.mone_matches_vit"]["n_seeds"] == 1


def test_the_iso_flops_claim_is_not_testable_while_its_run_is_pending_and_absent_where_none_is_planned():
  ids = lambda out: {c["id"]: c["verdict"] for c in out}
  by_seed = _by_seed()
  assert "fig3.iso_flops_helps" not in ids(figure3.decide(by_seed, "small", []))
  assert "fig3.iso_flops_helps" not in ids(figure3.decide(by_seed, "small", ["MoNE e_c=0.3, 2 routers, seed 0"]))
  assert ids(figure3.decide(by_seed, "small", ["MoNE e_c=0.2, isoFLOPs, seed 0"]))["fig3.iso_flops_helps"] == "not testable"
  by_seed[0][V, "MoNE-isoFLOPs"] = [_pt(0.006, 85.0, 0.2)]
  (iso,) = [c for c in figure3.decide(by_seed, "small", []) if c["id"] == "fig3.iso_flops_helps"]
  assert iso["verdict"] == "inconclusive" and iso["per_seed"] == [3.0] and "(0.2)" in iso["claim"]  # one seed


def test_the_headline_note_says_what_the_seeds_rule_out():
  decided = figure3.decide(_by_seed(), "small", [])
  note = figure3.headline_note(decided)
  assert note.startswith("**What the seeds rule out** (`fig3.mone_matches_vit`). The 3 seeds rule out MoNE more than")
  assert figure3.headline_note([c for c in decided if c["id"] != "fig3.mone_matches_vit"]) == ""
  assert figure3.headline_note(figure3.decide(_by_seed(seeds=(0,)), "small", [])) == ""  # one seed: no CI, no note


def _runs():
  flops = {"ViT": 100.0, "MatViT": 200.0, "MoD": 90.0, "MoNE e_c=0.2": 40.0, "MoNE e_c=0.4": 60.0,
           "MoNE e_c=0.2, random router": 40.0}
  runs = [(label, s, {"train_gflops": g, "train_steps": 8000}) for s in (0, 1, 2) for label, g in flops.items()]
  return {V: runs + [("MoNE e_c=0.2, isoFLOPs", 0, {"train_gflops": 100.0, "train_steps": 20000})]}


def test_the_matvit_diagnostics_put_every_point_against_the_dense_vit_with_its_training_compute():
  by_seed = _by_seed(mone04=(-1.0, -1.0, -1.0))
  by_seed[0][V, "MoNE-isoFLOPs"] = [_pt(0.006, 85.0, 0.2)]
  m = figure3.matvit(by_seed, _runs(), "small")
  assert [(r["label"], r["gflops"]) for r in m["against_dense"]] == [
      ("MatViT", 0.005), ("MoNE", 0.006), ("MoNE-isoFLOPs", 0.006), ("MoD", 0.009), ("MoNE", 0.01), ("MatViT", 0.02)]
  assert {r["label"]: r["x_dense"] for r in m["training_compute"]} == pytest.approx(
      {"ViT": 1.0, "MatViT": 2.0, "MoD": 0.9, "MoNE e_c=0.2": 0.4, "MoNE e_c=0.4": 0.6, "MoNE e_c=0.2, isoFLOPs": 1.0})
  assert m["iso_minus_matvit"] == pytest.approx({0: 85.0 - (80.0 + 11 / 15)})  # MatViT interpolated at 6 MFLOPs
  assert figure3.matvit_lines(m, "small") == [
      "MatViT at full width minus the dense ViT: +1.00 points, 95% CI [+1.00, +1.00], 3 seeds, at 20.0 MFLOPs",
      "MatViT's narrowest width minus the dense ViT: -10.00 points, 95% CI [-10.00, -10.00], 3 seeds, at 5.0 MFLOPs",
      "MoNE's cheapest point (MoNE e_c=0.2) minus the dense ViT: -8.00 points, 95% CI [-8.00, -8.00], 3 seeds, at 6.0 MFLOPs",
      "training FLOPs as a multiple of the dense ViT's: MatViT 2.00x, MoNE e_c=0.2 0.40x",
      "seed 0: MoNE e_c=0.2, isoFLOPs (1.00x the dense ViT's training FLOPs) minus MatViT interpolated at its FLOPs: +4.27 points"]
  no_matvit = {s: {k: v for k, v in c.items() if k[1] != "MatViT"} for s, c in by_seed.items()}
  assert figure3.matvit(no_matvit, _runs(), "small") is None


def test_the_tables_and_the_summary_lines():
  by_seed = _by_seed(seeds=(1, 0))
  rows = figure3.seed_points(by_seed)
  assert [r["seed"] for r in rows] == [0] * 6 + [1] * 6 and rows[0]["label"] == "ViT"
  curves = analysis.mean_curves(by_seed)
  means = figure3.mean_points(curves)
  assert means[0]["label"] == "ViT" and means[0]["accuracy_pct"] == pytest.approx(90.5)
  assert set(figure3.POINT_COLUMNS) <= set(means[0]) | {"variant"}
  summary = figure3.summary(curves, "small", [])
  assert summary.startswith(f"profile='small', {V}: dense ViT 20.00 MFLOPs, 90.5% (mean of 2 seeds)") and "\n" not in summary
  assert "about 4.6, 17.6, 61.7 GFLOPs" in summary
  assert figure3.summary(curves, "small", ["a", "b"]).endswith(
      "\n2 runs of this chapter have not been trained yet: its claims use the seeds trained so far")
  assert figure3.runs_line({V: [("ViT", 0, {})] * 3}, []) == "3 runs, all trained"
  assert figure3.runs_line({V: [("ViT", 0, {})]}, ["MoD, seed 1"]) == "1 runs; not trained yet (1): MoD, seed 1"
  assert figure3.titles("small", (0, 1, 2)) == {V: f"{V} (small profile): mean over up to 3 seeds, bars: their range"}


def test_the_dense_runs_are_the_vits_with_a_validation_curve():
  with_val = {"curve": [{"val_accuracy": 0.5}]}
  runs = [("ViT", 0, with_val), ("ViT", 1, {"curve": [{"val_accuracy": None}]}), ("ViT", 2, {}), ("MoD", 0, with_val)]
  assert figure3.dense_runs(runs) == [with_val]


def test_load_reads_each_variants_models_and_the_iso_flops_run_of_the_first_only(monkeypatch):
  labels = ["ViT", "MatViT", "MoD", "MoNE e_c=0.2", "MoNE e_c=0.2, isoFLOPs", "MoNE e_c=0.2, random router", "MoNE adaptive, isoFLOPs"]
  monkeypatch.setattr(figure3.figures, "image_runs",
                      lambda profile, seeds, data_dir, **kw: [figure3.figures.Run(figure3.figures.arm(l), types.SimpleNamespace(seed=s, model=kw["model"]))
                                                              for s in seeds for l in labels])
  read = []
  monkeypatch.setattr(figure3.headlines, "landed", lambda planned, train, recompute: read.append(planned) or [])
  monkeypatch.setattr(figure3.headlines, "pending", lambda planned, train: [label for label, _ in planned][:1])
  ch = chapter.Chapter("03_figure3_images", "paper", 0, False, "", (0, 1), False)
  by_seed, runs, pending = figure3.load(ch)
  assert by_seed == {} and list(runs) == ["S/16", "B/16", "L/16"]
  assert pending == ["ViT, seed 0"] * 3
  first, second, _ = read
  assert [label for label, _ in first] == [f"{l}, seed {s}" for s in (0, 1) for l in labels[:5]]
  assert [label for label, _ in second] == [f"{l}, seed {s}" for s in (0, 1) for l in labels[:4]]
  assert {cfg.model for _, cfg in second} == {"B/16"}


def test_figure3_sums_up_where_each_models_runs_stand():
  row = lambda run, seed, val, gain: {"variant": "mini/8", "run": run, "seed": seed, "device": "cpu", "test_pct": val,
                                      "val_pct": val, "last_quarter_gain": gain, "train_minus_val": 3.0}
  status = [row("ViT", 0, 88.0, 1.0), row("ViT", 1, 86.0, 1.7), row("ViT", 2, 87.0, 1.5), row("MoD", 0, 80.0, 0.2)]
  vit, mod = figure3.standing_summary(status)
  assert vit["seeds"] == 3 and vit["validation (%), median [range]"] == "87.0 [86.0, 88.0]"
  assert vit["seeds still rising"] == "1"  # 1.5 points meets the plateau bar; 1.7 does not
  assert vit["last-quarter gain, median"] == "+1.50" and mod["seeds still rising"] == "none"


def test_what_the_figure_shows_names_the_gaps_to_matvit_and_a_non_monotone_e_c():
  v = figure3.variants("small")[0]
  matvit = [{"gflops": 0.01, "accuracy_pct": 80.0}, {"gflops": 0.05, "accuracy_pct": 90.0}]
  mone = lambda a, b: [{"e_c": 0.2, "gflops": 0.02, "accuracy_pct": a}, {"e_c": 0.4, "gflops": 0.03, "accuracy_pct": b}]
  by_seed = {0: {(v, "MatViT"): matvit, (v, "MoNE"): mone(81.5, 80.0)}, 1: {(v, "MatViT"): matvit, (v, "MoNE"): mone(82.5, 81.0)}}
  text = figure3.as_it_looks(by_seed, [], "small")
  # MatViT at 0.02 GFLOPs reads 82.5, at 0.03 reads 85.0: +0.5 and +4.5 points on average over the two seeds
  assert "$e_c = 0.2$: +0.5 points (2 seeds), $e_c = 0.4$: +4.5 points (2 seeds)" in text and "lies above MoNE" in text
  assert "$e_c = 0.4$ (80.50%) is below $e_c = 0.2$ (82.00%)" in text
  assert "plateau" in text and "not at a plateau" not in text  # no dense runs given: nothing said of them
