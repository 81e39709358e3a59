"""Chapter 04's tables, printed lines and claims (`mone.chapters.figure4`), from curves over seeds
built here: the SSv2 FLOP counts, the per-task comparisons, and whether the temporal task
separates the nested widths."""
import pytest

from mone.evidence import declarations
from mone.chapters import calibration, figure4
from mone.runs import experiments


def _point(gflops, acc, e_c=None, width=None, learned=True):
  return {"gflops": gflops, "accuracy_pct": acc, "e_c": e_c, "width_index": width, "learned": learned, "train_e_c": e_c}


def _seed(task, vit, mone, matvit=(40.0, 50.0, 58.0, 60.0)):
  """One seed's curves of a task: the dense ViViT (0.02 GFLOPs), MoNE at e_c 0.4 (0.01) and
  MatViViT's four nested widths (0.002 to 0.02 GFLOPs)."""
  return {(task, "ViViT"): [_point(0.02, vit)], (task, "MoNE"): [_point(0.01, mone, 0.4)],
          (task, "MatViViT"): [_point(g, a, width=i) for i, (g, a) in enumerate(zip((0.002, 0.005, 0.01, 0.02), matvit))]}


def test_ssv2_flops_are_the_papers_within_one_percent():
  g = figure4.ssv2_gflops()
  assert g["vivit"] == pytest.approx(376.3, rel=0.01) and g["mone_0.4"] == pytest.approx(162.8, rel=0.01)
  assert figure4.ssv2_line() == (f"SSv2 GFLOPs per clip: dense ViViT {g['vivit']:.1f} (paper 376.3), MoNE at e_c=0.4 "
                                 f"{g['mone_0.4']:.1f} (paper 162.8); see mone.flops for the accounting")


def test_claims_without_runs_are_not_testable_but_the_flop_counts_are_decided():
  got = figure4.chapter_claims({})
  assert [c["id"] for c in got] == ["fig4.ssv2_vivit_gflops", "fig4.ssv2_mone_gflops",
                                    *(f"fig4.{t}.{c}" for t in ("appearance", "temporal")
                                      for c in ("mone_no_drop", "flops_reduction", "mone_beats_matvivit"))]
  assert [c["verdict"] for c in got] == ["reproduced"] * 2 + ["not testable"] * 6
  assert got[0]["kind"] == "arithmetic" and got[0]["paper"] == 376.3 and got[0]["unit"] == "GFLOPs"


def test_claims_compare_mone_with_vivit_and_matvivit_over_paired_seeds(monkeypatch):
  # temporal: MoNE 0.5 below ViViT at every seed (no drop within 1 point), 3 to 4 above MatViViT's D/2 at equal FLOPs;
  # appearance: 5 points below ViViT at seeds 0-1 only
  by_seed = {s: {**_seed("temporal", 60.0 + s, 59.5 + s, matvit=(40.0, 50.0, 56.0 + s / 2, 60.0)),
                 **(_seed("appearance", 80.0, 75.0) if s < 2 else {})} for s in (0, 1, 2)}
  got = {c["id"]: c for c in figure4.chapter_claims(by_seed)}
  assert got["fig4.temporal.mone_no_drop"]["verdict"] == "reproduced"
  assert got["fig4.temporal.mone_no_drop"]["per_seed"] == pytest.approx([-0.5, -0.5, -0.5])
  assert got["fig4.temporal.flops_reduction"]["measured"] == pytest.approx(2.0) and got["fig4.temporal.flops_reduction"]["verdict"] == "reproduced"
  assert got["fig4.temporal.mone_beats_matvivit"]["verdict"] == "reproduced"
  assert got["fig4.temporal.mone_beats_matvivit"]["per_seed"] == pytest.approx([3.5, 4.0, 4.5])
  assert got["fig4.appearance.mone_no_drop"]["n_seeds"] == 2 and got["fig4.appearance.mone_no_drop"]["verdict"] == "inconclusive"
  # a tighter declared "no drop" fails the temporal task: 0.5 points below is more than 0.25
  declared = declarations.rule
  monkeypatch.setattr(declarations, "rule", lambda cid: ("no_worse", 0.25) if cid.endswith("mone_no_drop") else declared(cid))
  strict = {c["id"]: c for c in figure4.chapter_claims(by_seed)}
  assert strict["fig4.temporal.mone_no_drop"]["verdict"] == "not reproduced"


def test_a_run_on_the_chance_plateau_makes_its_tasks_claims_inconclusive():
  by_seed = {s: _seed("temporal", 60.0, 59.5) for s in (0, 1, 2)}
  by_seed[1]["temporal", "ViViT"] = [_point(0.02, 60.0, learned=False)]
  got = {c["id"]: c for c in figure4.chapter_claims(by_seed)}
  assert got["fig4.temporal.mone_no_drop"]["verdict"] == "inconclusive"
  assert got["fig4.temporal.flops_reduction"]["verdict"] == "reproduced"  # arithmetic: the plateau does not change FLOPs


def test_tables_and_titles_from_the_curves():
  by_seed = {1: _seed("temporal", 60.0, 59.0), 0: {("temporal", "ViViT"): [_point(0.02, 61.0)]}}
  rows = figure4.per_seed(by_seed)
  assert [r["seed"] for r in rows] == [0] + [1] * 6 and rows[0] == {"seed": 0, "task": "temporal", "label": "ViViT", **_point(0.02, 61.0)}
  curves = {("temporal", "ViViT"): [{**_point(0.02, 60.5), "n_seeds": 2}]}
  assert figure4.rows(curves) == [{"task": "temporal", "label": "ViViT", **curves["temporal", "ViViT"][0]}]
  assert figure4.titles(curves, 5) == {"temporal": "temporal task (for Something-Something-v2): mean over up to 5 seeds, bars: their range"}
  assert figure4.summary_lines(curves, "small", []) == [
      "profile='small', temporal task (for Something-Something-v2): ViViT 20.00 MFLOPs/clip, 60.5% (mean of 2 seeds)"]
  assert figure4.summary_lines({}, "smoke", ["a", "b"]) == [
      "2 runs of this chapter have not been trained yet: its claims use the seeds trained so far"]
  m = figure4.metrics([{"x": 1}], ["a"])
  assert list(m) == ["points", "tolerance_points", "pending", "ssv2_gflops"] and m["tolerance_points"] == 1.0


def test_planned_runs_are_figure4s_and_the_paper_profile_fine_tunes_mone_from_matvivit():
  small = figure4.planned("small", (0, 1))
  assert {r.arm for r in small} == figure4.arms("small") and all(r[0].startswith(r.arm.label) for r in small)
  named = {a.label for a in figure4.arms("small")}
  assert "temporal: MoNE e_c=0.3" in named and "appearance: MoNE e_c=0.3" not in named
  assert all(not cfg.iso_flops and not cfg.init_from for _, cfg in small)
  paper = dict(figure4.planned("paper", (0,), "/data"))
  assert paper["temporal: MoNE e_c=0.4, seed 0"].iso_flops and paper["temporal: MoNE e_c=0.4, seed 0"].init_from
  assert paper["temporal: MoNE e_c=0.4, seed 0"].init_from.startswith(str(experiments.cache_root()))
  assert not paper["temporal: ViViT, seed 0"].iso_flops and not paper["temporal: MatViViT, seed 0"].init_from
  # Each dataset's MoNE starts from its own dataset's MatViViT (SSv2 from SSv2, Kinetics-400 from Kinetics-400).
  for label, cfg in paper.items():
    if ": MoNE" in label:
      task = label.partition(": ")[0]
      assert cfg.init_from == str(experiments.workdir(paper[f"{task}: MatViViT, seed 0"])), label


def _discrimination(dense, quarter, test_gap):
  return {"dense": dense, "sub_model": quarter, "width_index": 1, "by_width": [0.5, quarter, 0.9, 0.92], "gap": dense - quarter,
          "discriminates": dense - quarter >= calibration.SUBMODEL_GAP, "test": {"gap": test_gap}}


def test_standing_lines_say_how_far_the_quarter_width_falls_below_the_dense_model():
  status = [{"run": "temporal: ViViT", "seed": 0, "train_minus_val": 1.15}, {"run": "temporal: ViViT", "seed": 1, "train_minus_val": 0.5},
            {"run": "temporal: MatViViT", "seed": 0, "train_minus_val": 2.0}, {"run": "appearance: ViViT", "seed": 0, "train_minus_val": None}]
  gaps = {0: _discrimination(0.967, 0.927, 0.023), 1: _discrimination(0.939, 0.945, -0.017)}
  mean = calibration.mean_discrimination(list(gaps.values()))
  lines = figure4.standing_lines(status, gaps, mean, "small")
  assert lines[0] == "temporal task, accuracy on training clips minus validation, by seed (points): MatViViT 2.00; ViViT 1.15 / 0.50"
  assert lines[1] == ("seed 0: dense ViViT 96.7%, MatViViT D/8, D/4, D/2, D 50.0 / 92.7 / 90.0 / 92.0% on validation: "
                      "D/4 is 4.0 points below (2.3 points below on the test clips)")
  assert lines[2].endswith("D/4 is 0.6 points above (1.7 points above on the test clips)")
  assert lines[3] == ("mean over 2 seed(s): D/4 1.7 points below the dense ViViT on validation (0.3 on test): "
                      "the temporal task discriminates less than the 5-point bar asks (2 of 3 seeds: a first reading)")
  assert figure4.standing_lines([], {}, None, "smoke") == [
      "no seed has a dense and a MatViViT run with validation clips (smoke profile)"]


def test_caveats_qualify_the_temporal_claims_while_the_task_does_not_discriminate():
  short = calibration.mean_discrimination([_discrimination(0.95, 0.93, 0.01)] * 3)
  (caveat,) = figure4.caveats(short, "smoke")
  assert "2.0 points below the dense ViViT" in caveat and caveat.endswith(figure4.CAVEAT + ".")
  assert figure4.caveats(calibration.mean_discrimination([_discrimination(0.95, 0.85, 0.1)]), "smoke") == []
  assert figure4.caveats(None, "paper") == []


def test_the_small_profile_also_says_how_the_noise_level_was_chosen():
  # reads the committed calibration runs (results/runs/), as the chapter does
  got = figure4.caveats(None, "small")
  assert got == calibration.noise_caveat(calibration.noise_choice()) and "pixel noise" in got[0]
