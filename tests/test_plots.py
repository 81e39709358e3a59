"""The chapters' plotting helpers: readable FLOPs units, token outlines, the claims figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mone.chapters import claims, comparisons, plots, speed  # noqa: E402


def test_flops_unit_avoids_offsets():
  assert plots.flops_unit([0.0091, 0.0149]) == (1e-3, "MFLOPs")
  assert plots.flops_unit([4.6, 17.6]) == (1.0, "GFLOPs")
  assert plots.flops_unit([2e-6]) == (1e-6, "kFLOPs")
  with pytest.raises(ValueError, match="gflops"):
    plots.flops_unit([0.0])
  fig, ax = plt.subplots()
  assert plots.flops_axis(ax, [0.01], per="clip") == 1e-3 and ax.get_xlabel() == "inference MFLOPs per clip"
  plt.close(fig)


def test_outline_tokens_draws_one_square_per_selected_token():
  fig, ax = plt.subplots()
  ax.imshow(np.zeros((8, 8)))
  sel = np.array([True, False, False, True])
  assert plots.outline_tokens(ax, sel, patch=4, grid=2) == 2
  corners = sorted((p.get_x(), p.get_y()) for p in ax.patches)
  assert corners == [(-0.5, -0.5), (3.5, 3.5)]  # tokens 0 and 3 of the 2 x 2 grid
  plt.close(fig)


def test_claims_figure_draws_every_seed_of_the_trained_claims():
  cs = [claims.trained("a.x", "c", "p", {0: 1.0, 1: 2.0, 2: 3.0}, relation="beats", tolerance=0.0),
        claims.trained("a.y", "c", "p", {0: -1.0}, relation="matches", tolerance=1.0),
        claims.arithmetic("a.z", "c", 1.0, 1.0)]
  fig = plots.claims_figure(cs)
  ax = fig.axes[0]
  assert [t.get_text() for t in ax.get_yticklabels()] == ["a.y", "a.x"]  # trained only, first on top
  dots = [line for line in ax.lines if line.get_marker() == "o"]
  assert sum(len(d.get_xdata()) for d in dots) == 4  # 3 + 1 seeds
  plt.close(fig)
  assert plots.claims_figure([cs[2]]) is None


def _point(gflops, acc, e_c=None, learned=True):
  return {"gflops": gflops, "accuracy_pct": acc, "e_c": e_c, "learned": learned, "train_e_c": e_c}


def test_accuracy_flops_figure_draws_one_panel_per_key_with_the_dense_line():
  curves = {("a", "ViT"): [_point(0.02, 60)], ("a", "MoNE"): [_point(0.01, 58, 0.4), _point(0.008, 55, 0.3)],
            ("b", "ViT"): [_point(0.02, 70)], ("b", "MatViT"): [_point(0.005, 50), _point(0.02, 70)]}
  fig = plots.accuracy_flops_figure(curves, {"a": "A", "b": "B"}, "ViT", per="clip")
  a, b = fig.axes
  assert [a.get_title(), b.get_title()] == ["A", "B"] and a.get_xlabel() == "inference MFLOPs per clip"
  assert [l.get_label() for l in a.get_lines() if not l.get_label().startswith("_")] == ["ViT", "MoNE"]
  mone = next(l for l in a.get_lines() if l.get_label() == "MoNE")
  np.testing.assert_allclose(mone.get_xdata(), [8, 10])  # sorted by FLOPs, in MFLOPs
  assert any(l.get_linestyle() == ":" and l.get_ydata()[0] == 70 for l in b.get_lines())  # the dense line
  plt.close(fig)


def test_accuracy_flops_figure_draws_the_seed_range_of_mean_curves():
  mean = lambda g, acc, lo, hi: {**_point(g, acc), "accuracy_min": lo, "accuracy_max": hi, "n_seeds": 3}
  curves = {("a", "ViT"): [mean(0.02, 60, 59, 61)], ("a", "MoNE"): [mean(0.01, 58, 55, 60)]}
  fig = plots.accuracy_flops_figure(curves, {"a": "A"}, "ViT")
  bars = [c for c in fig.axes[0].collections]
  assert len(bars) == 2
  np.testing.assert_allclose(sorted(seg[:, 1].tolist() for b in bars for seg in b.get_segments()), [[55, 60], [59, 61]])
  plt.close(fig)


def test_seeds_and_adaptation_figures_plot_every_value():
  study = {"ViT": {"accuracy_pct": [60, 62, 61], "mean": 61, "gflops": 0.02},
           "MoNE": {"accuracy_pct": [59, 63, 60], "mean": 60.67, "gflops": 0.01}}
  fig = plots.seeds_figure(study, "t")
  assert sum(len(l.get_xdata()) for l in fig.axes[0].get_lines() if l.get_marker() == "o") == 6
  plt.close(fig)
  curves = {"Train e_c=0.4": [_point(0.01, 50, 0.3) | {"train_e_c": 0.4}, _point(0.012, 55, 0.4)],
            "Train Adaptive": [_point(0.01, 52, 0.3) | {"train_e_c": None}, _point(0.012, 54, 0.4) | {"train_e_c": None}]}
  fig = plots.adaptation_figure(curves, "t")
  stars = [l for l in fig.axes[0].get_lines() if l.get_marker() == "*"]
  assert [len(s.get_xdata()) for s in stars] == [1, 0]  # the star at the training e_c; none for adaptive
  plt.close(fig)


def test_token_figures_show_what_is_selected():
  images = np.zeros((4, 8, 8, 3), np.uint8)
  sel = {"learned": np.ones((4, 4), bool), "random": np.zeros((4, 4), bool)}
  fig = plots.token_grid(images, sel, patch=4, masks=np.zeros((4, 8, 8)), title="t")
  assert len(fig.axes) == 8 and fig.axes[0].get_ylabel() == "learned" and fig.axes[4].get_ylabel() == "random"
  plt.close(fig)
  video, full = np.zeros((2, 4, 8, 8, 3), np.uint8), np.zeros((2, 2, 4), bool)
  full[0, 1, 2] = True
  fig = plots.video_tokens_figure(video, full, tubelet=2, patch=4, labels=[3, 5], title="t")
  assert len(fig.axes) == 4 and sum(len(ax.patches) for ax in fig.axes) == 1 and "label 5" in fig.axes[2].get_ylabel()
  plt.close(fig)
  rows = [{"router": r, "precision": p, "recall": 0.5, "iou": 0.3} for r, p in (("a", 0.6), ("b", 0.4), ("c", 0.2))]
  fig = plots.overlap_figure(rows, "t")
  assert len(fig.axes[0].patches) == 9
  plt.close(fig)


def _curves(mone_acc, vit_acc, matvit=((0.005, 40.0), (0.02, 60.0)), mod=(0.009, 50.0)):
  return {("v", "ViT"): [_point(0.02, vit_acc)],
          ("v", "MoNE"): [_point(0.008, mone_acc - 2, 0.3), _point(0.01, mone_acc, 0.4)],
          ("v", "MatViT"): [_point(g, a) for g, a in matvit], ("v", "MoD"): [_point(*mod)]}


def test_figure3_claims_pair_the_seeds_that_trained_both_arms_and_interpolate_the_baselines():
  # seeds 1 and 2 trained ViT and MoNE only (a seed study): they decide the match, not MatViT/MoD
  by_seed = {0: _curves(60.0, 60.0), 1: {("v", "ViT"): [_point(0.02, 61.0)], ("v", "MoNE"): [_point(0.01, 61.2, 0.4)]},
             2: {("v", "ViT"): [_point(0.02, 62.0)], ("v", "MoNE"): [_point(0.01, 61.9, 0.4)]}}
  out = {c["id"]: c for c in comparisons.figure3(by_seed, "v", 1.0)}
  assert out["fig3.mone_matches_vit"]["n_seeds"] == 3 and out["fig3.mone_matches_vit"]["verdict"] == "reproduced"
  assert out["fig3.mone_matches_vit"]["per_seed"] == pytest.approx([0.0, 0.2, -0.1])
  assert out["fig3.flops_reduction"]["measured"] == pytest.approx(2.0)
  # MatViT interpolated at MoNE's cheapest point (8 MFLOPs): 40 + 20 * 3/15 = 44; MoNE 58 there
  assert out["fig3.mone_beats_matvit"]["measured"] == pytest.approx(14.0) and out["fig3.mone_beats_matvit"]["n_seeds"] == 1
  assert out["fig3.mone_beats_mod"]["measured"] == pytest.approx(59.0 - 50.0)
  assert {c["verdict"] for k, c in out.items() if k in ("fig3.mone_beats_matvit", "fig3.mone_beats_mod")} == {"inconclusive"}
  # Every model at three seeds: MatViT and MoD are decided too, each seed against its own baseline.
  full = {s: _curves(60.0 + s, 60.0, matvit=((0.005, 40.0 + s), (0.02, 60.0)), mod=(0.009, 50.0 - s)) for s in (0, 1, 2)}
  out = {c["id"]: c for c in comparisons.figure3(full, "v", 1.0)}
  assert out["fig3.mone_beats_matvit"]["per_seed"] == pytest.approx([14.0, 58.0 + 1 - (41.0 + 19 * 3 / 15), 58.0 + 2 - (42.0 + 18 * 3 / 15)])
  assert out["fig3.mone_beats_matvit"]["verdict"] == "reproduced"
  assert out["fig3.mone_beats_mod"]["per_seed"] == pytest.approx([9.0, 11.0, 13.0]) and out["fig3.mone_beats_mod"]["verdict"] == "reproduced"
  assert out["fig3.mone_matches_vit"]["verdict"] == "inconclusive"  # +0, +1, +2: the CI reaches past 1 point
  # One seed decides nothing; outside MatViT's range: not testable.
  single = {c["id"]: c for c in comparisons.figure3({0: _curves(60.0, 60.0, matvit=((0.015, 40.0), (0.02, 60.0)))}, "v", 1.0)}
  assert single["fig3.mone_matches_vit"]["verdict"] == "inconclusive"
  assert single["fig3.mone_beats_matvit"]["verdict"] == "not testable"


def test_figure4_claims_pair_seeds_and_are_inconclusive_when_a_run_stayed_on_the_plateau():
  video = lambda curves: {("temporal", k.replace("ViT", "ViViT").replace("MatViT", "MatViViT")): v for (_, k), v in curves.items()}
  seed_only = lambda vit, mone: {("temporal", "ViViT"): [_point(0.02, vit)], ("temporal", "MoNE"): [_point(0.01, mone, 0.4)]}
  by_seed = {0: video(_curves(60.5, 60.0)), 1: seed_only(61.0, 61.4), 2: seed_only(62.0, 62.6),
             3: {("appearance", "ViViT"): [_point(0.02, 10.0, learned=False)]}}  # another task's plateau is not this one's
  out = {c["id"]: c for c in comparisons.figure4(by_seed, "temporal", "SSv2", 1.0, 1.95)}
  assert out["fig4.temporal.mone_no_drop"]["verdict"] == "reproduced" and out["fig4.temporal.mone_no_drop"]["n_seeds"] == 3
  assert out["fig4.temporal.mone_no_drop"]["per_seed"] == pytest.approx([0.5, 0.4, 0.6])
  assert out["fig4.temporal.flops_reduction"]["verdict"] == "reproduced"
  assert out["fig4.temporal.mone_beats_matvivit"]["n_seeds"] == 1  # MatViViT at seed 0 only
  by_seed[1][("temporal", "MoNE")] = [_point(0.01, 61.4, 0.4, learned=False)]
  out = {c["id"]: c for c in comparisons.figure4(by_seed, "temporal", "SSv2", 1.0, 1.95)}
  assert out["fig4.temporal.mone_no_drop"]["verdict"] == "inconclusive"
  assert out["fig4.temporal.mone_no_drop"]["why"] == "a compared run never left the chance plateau"


def test_the_speed_chapter_draws_the_committed_benchmark_files():
  """The chapter's figures and summaries, from the committed measurements of results/bench/."""
  import json
  from mone import results
  bench = results.RESULTS / "bench"
  full, block, matmul = (json.loads((bench / n).read_text()) for n in ("cpu.json", "cpu-block.json", "cpu-matmul.json"))
  fig = speed.speedup_figure(full["rows"], full["machine"])
  assert len([ax for ax in fig.axes if ax.get_visible()]) == len(speed.groups(full["rows"], "workload", "mode"))
  plt.close(fig)
  for path in sorted(bench.glob("gpu-*.json")):  # the GPU files: panels per (workload, mode), titled by the GPU
    gpu = json.loads(path.read_text())
    fig = speed.speedup_figure(gpu["rows"], gpu["machine"])
    assert len([ax for ax in fig.axes if ax.get_visible()]) == len(speed.groups(gpu["rows"], "workload", "mode"))
    assert gpu["machine"]["device"] in fig._suptitle.get_text()
    plt.close(fig)
  fig = speed.blocks_figure(block["rows"])
  assert len(fig.axes) == len(speed.groups(block["rows"], "batch", "mode"))
  plt.close(fig)
  fig = speed.matmuls_figure(matmul["rows"])
  assert len(fig.axes) == len(speed.groups(matmul["rows"], "model", "e_c"))
  plt.close(fig)
  assert speed.block_summary(block["rows"]) and speed.matmul_summary(matmul["rows"]) and speed.masked_summary(full["rows"])
  check = {"workload": "w", "mode": "forward", "batch": 8, "e_c": 0.3, "metric": "efficiency", "target": 0.85,
           "measured": 0.9, "strict": 0.7, "ok": False}
  near = dict(check, batch=32, strict=0.8)  # 6% short of the target: inside one run's noise
  claim, close = speed.target_claims([check, near])
  assert claim["id"] == "speed.forward.efficiency.ec03.batch8" and claim["measured"] == 0.7 and claim["verdict"] == "not reproduced"
  assert "reaches an efficiency of at least 0.85" in claim["claim"]
  assert close["verdict"] == "inconclusive" and close["margin"] == speed.ONE_RUN_MARGIN
  # The GPU summary names each MatViT sub-model by its width: two MoNE capacities can share one.
  h100 = json.loads((bench / "gpu-h100.json").read_text())
  (line,) = speed.speedup_summary([r for r in h100["rows"] if r["mode"] == "forward"])
  assert "1.18x at e_c=0.3 (batch 64, FLOP ratio 3.04)" in line
  assert "width 192 1.42x (batch 64, FLOP ratio 3.50)" in line and "width 384 1.38x (batch 256, FLOP ratio 1.91)" in line
  assert speed.command("small", "cpu-block.json") == "python -m mone.bench --variant S/16 --batch 8 32 --e-c 0.3 0.5 1.0 --reps 15 --block"


def test_figure6_claims_pair_seeds_per_study_and_are_not_testable_without_runs():
  pt = lambda g, a: {"gflops": g, "accuracy_pct": a, "e_c": None, "learned": True}
  curve = {s: [pt(1.0, 80.0 + s), pt(2.0, 90.0 + s)] for s in (0, 1, 2)}
  later = {1: {0: pt(1.5, 83.0)}, 2: {0: pt(1.5, 86.0)}, 3: {0: pt(2.5, 95.0)}}  # layer 3: beyond the curve
  routers = {1: {0: 85.0, 1: 86.0, 2: 85.5}, 4: {0: 84.0}}
  learned = {0.2: {0: 80.0, 1: 81.0, 2: 80.5}, 0.3: {0: 85.0}}
  random = {0.2: {0: 70.0, 1: 72.0, 2: 71.0}, 0.3: {0: 80.0}}
  a, b, c = comparisons.figure6(curve, later, routers, learned, random, 0.3)
  assert a["id"] == "fig6.first_layer_router_best" and a["seeds"] == [0] and a["measured"] == -1.0  # 85 - 86 at layer 2
  assert a["verdict"] == "inconclusive" and "layer 2: -1.0" in a["note"]
  assert "layer 3: 2500.0 MFLOPs, outside the curve, not judged" in a["note"]  # said, not silently dropped
  assert b["seeds"] == [0] and b["measured"] == 1.0
  assert c["seeds"] == [0, 1, 2] and c["verdict"] == "reproduced" and "0.2" in c["claim"]
  none = comparisons.figure6(curve, {}, {1: routers[1]}, {0.2: {}}, {0.2: {0: 70.0}}, 0.3)
  assert [x["verdict"] for x in none] == ["not testable"] * 3


def test_figure4_claims_are_not_testable_until_a_seed_has_both_arms():
  pt = lambda g, a, e_c=None, w=None: {"gflops": g, "accuracy_pct": a, "e_c": e_c, "width_index": w, "learned": True}
  only_dense = {2: {("temporal", "ViViT"): [pt(2.0, 95.0)]}}
  got = comparisons.figure4(only_dense, "temporal", "SSv2", 1.0, 1.95)
  assert [c["verdict"] for c in got] == ["not testable"] * 3
  assert [c["id"] for c in got] == ["fig4.temporal.mone_no_drop", "fig4.temporal.flops_reduction", "fig4.temporal.mone_beats_matvivit"]
  both = {2: {**only_dense[2], ("temporal", "MoNE"): [pt(1.0, 94.5, 0.4)]}}
  no_drop, reduction, _ = comparisons.figure4(both, "temporal", "SSv2", 1.0, 1.95)
  assert no_drop["n_seeds"] == 1 and no_drop["verdict"] == "inconclusive" and reduction["measured"] == 2.0


def test_figure3_says_a_planned_iso_flops_run_is_not_testable_until_it_lands():
  pt = lambda g, a, e_c=None: {"gflops": g, "accuracy_pct": a, "e_c": e_c, "width_index": None, "learned": True}
  by_seed = {0: {("v", "ViT"): [pt(2.0, 88.0)], ("v", "MoNE"): [pt(0.5, 84.0, 0.2), pt(0.9, 87.0, 0.4)]}}
  ids = lambda out: {c["id"]: c["verdict"] for c in out}
  assert "fig3.iso_flops_helps" not in ids(comparisons.figure3(by_seed, "v", 1.0))
  assert ids(comparisons.figure3(by_seed, "v", 1.0, iso_planned=True))["fig3.iso_flops_helps"] == "not testable"
  by_seed[0]["v", "MoNE-isoFLOPs"] = [pt(0.5, 85.0, 0.2)]
  assert ids(comparisons.figure3(by_seed, "v", 1.0, iso_planned=True))["fig3.iso_flops_helps"] == "inconclusive"


def test_against_dense_pairs_each_point_with_its_own_seed_and_training_compute_is_relative_to_dense():
  by_seed = {s: {("v", "ViT"): [_point(0.02, 60.0 + s)],
                 ("v", "MatViT"): [{**_point(0.005, 50.0 + 2 * s), "width_index": 0}, {**_point(0.02, 62.0 + s), "width_index": 1}],
                 ("v", "MoNE"): [_point(0.01, 58.0, 0.4)]} for s in (0, 1, 2)}
  del by_seed[2]["v", "MoNE"]  # MoNE trained at seeds 0 and 1 only
  rows = comparisons.against_dense(by_seed, "v")
  assert [(r["label"], r["gflops"]) for r in rows] == [("MatViT", 0.005), ("MoNE", 0.01), ("MatViT", 0.02)]
  narrow, mone, full = rows
  assert narrow["minus_dense"] == pytest.approx(-9.0) and narrow["ci_low"] < -9.0 < narrow["ci_high"]  # -10, -9, -8
  assert full["minus_dense"] == pytest.approx(2.0) and full["ci_low"] == full["ci_high"] == pytest.approx(2.0)
  assert mone["n_seeds"] == 2 and mone["minus_dense"] == pytest.approx(-2.5)  # 58 - 60, 58 - 61
  del by_seed[1]["v", "MoNE"]
  alone = next(r for r in comparisons.against_dense(by_seed, "v") if r["label"] == "MoNE")
  assert alone["n_seeds"] == 1 and alone["ci_low"] is None and alone["ci_high"] is None
  with pytest.raises(ValueError, match="dense model 'ViViT'"):
    comparisons.against_dense(by_seed, "v", dense="ViViT")
  runs = [("ViT", s, {"train_gflops": 100.0 + s, "train_steps": 8000}) for s in (0, 1, 2)]
  runs += [("MatViT", 0, {"train_gflops": 202.0, "train_steps": 8000})]
  rows = {r["label"]: r for r in comparisons.training_compute(runs)}
  assert rows["ViT"]["x_dense"] == pytest.approx(1.0) and rows["ViT"]["n_seeds"] == 3
  assert rows["MatViT"]["x_dense"] == pytest.approx(2.0) and rows["MatViT"]["train_tflops"] == pytest.approx(0.202)
  with pytest.raises(ValueError, match="dense model 'ViViT'"):
    comparisons.training_compute(runs, dense="ViViT")
