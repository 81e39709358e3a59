"""The chapters' plotting helpers: the theme, one colour per model, and the seed spreads that
seaborn computes (means, ranges, the claims' CIs), checked on the artists drawn from small
synthetic data; and the claims the figures' chapters decide."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from mone.evidence import claims, comparisons, stats, verdicts  # noqa: E402
from mone.plotting import claim_plots, legibility, plots  # noqa: E402
from mone.chapters import calibration, chapter, router_plots, speed, speed_investigations  # noqa: E402
from mone.configs.arms import Arm  # noqa: E402

# A warning on a chapter's page is a bug (test_book.py): the figures must draw without one.
pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture(autouse=True)
def default_style():
  """Each test starts from matplotlib's defaults (so that it sees whether a function applies the
  theme) and leaves the other test files' rcParams as it found them."""
  with matplotlib.rc_context():
    matplotlib.rcdefaults()
    yield
  plt.close("all")


def _rgb(c):
  return tuple(np.round(to_rgb(c), 6))


def _colors(collection):
  """The distinct RGB colours of a collection's artists (faces, or edges where there are none)."""
  rgba = collection.get_facecolor() if len(collection.get_facecolor()) else collection.get_edgecolor()
  return {tuple(np.round(c[:3], 6)) for c in rgba}


def _lines(ax, label):
  return [l for l in ax.get_lines() if l.get_label() == label]


def _bars(ax, color):
  """[x, low, high] of each error bar drawn in `color` (seaborn's bars: a LineCollection)."""
  out = []
  for c in ax.collections:
    if isinstance(c, matplotlib.collections.LineCollection) and _colors(c) == {_rgb(color)}:
      out += [[seg[0, 0], *sorted(seg[:, 1])] for seg in c.get_segments() if len(seg)]
  return sorted(out)


def _dots(ax, color):
  """The (x, y) of every dot drawn in `color` (seaborn's scatter and strip plots; a scatter
  with a hue gives each dot its own colour)."""
  out = []
  for c in ax.collections:
    if isinstance(c, matplotlib.collections.PathCollection) and len(c.get_offsets()):
      fc = c.get_facecolor()
      out += [tuple(o) for i, o in enumerate(c.get_offsets()) if _rgb(fc[i if len(fc) > 1 else 0][:3]) == _rgb(color)]
  return sorted(out)


def test_theme_sets_the_books_style():
  import seaborn as sns
  assert not matplotlib.rcParams["axes.grid"]
  plots.theme()
  rc = matplotlib.rcParams
  assert rc["axes.grid"] and rc["axes.facecolor"] == "white" and rc["font.size"] == pytest.approx(12 * 0.85)
  assert [_rgb(c) for c in rc["axes.prop_cycle"].by_key()["color"]] == [_rgb(c) for c in sns.color_palette("colorblind")]


def test_every_model_has_one_colour_whatever_a_chapter_calls_it():
  c = plots.MODEL_COLORS
  assert plots.model_color(Arm("temporal", "mone", 0.3)) == plots.model_color("mone") == plots.model_color("learned router") == c["MoNE"]
  assert plots.model_color(Arm("image", "mone", 0.3, num_routers=2)) == plots.model_color(Arm("image", "mone", 0.3, router_layer=2)) == c["MoNE"]
  assert plots.model_color(Arm("image", "mone", 0.3, router="random")) == plots.model_color("random router") == c["MoNE, random router"]
  assert plots.model_color(Arm("image", "mone", 0.2, iso_flops=True)) == c["MoNE-isoFLOPs"]
  assert plots.model_color(Arm("temporal", "mone", adaptive=True, iso_flops=True)) == plots.model_color("Train Adaptive") == c["MoNE adaptive"]
  assert plots.model_color(Arm("temporal", "mone", 0.4, allocation="mod_greedy")) == c["MoD Greedy"]
  assert plots.model_color(Arm("temporal", "mone", 0.4, allocation="greedy")) == c["Greedy"]
  assert plots.model_color(Arm("temporal", "mone", allocation="uniform")) == c["Uniform"]
  assert plots.model_color("vit") == plots.model_color(Arm("appearance", "vit")) == c["ViT"] == c["ViViT"]
  assert plots.model_color("matvit") == plots.model_color(Arm("temporal", "matvit")) == c["MatViT"] == c["MatViViT"]
  assert plots.model_color(Arm("image", "mod")) == c["MoD"]
  # the models one figure compares are told apart
  compared = ["ViT", "MatViT", "MoNE", "MoD", "MoNE-isoFLOPs", "MoNE adaptive", "MoNE, random router", "random (expected)"]
  assert len({c[m] for m in compared}) == len(compared)
  table1 = ["Proportionate", "Uniform", "Greedy", "MoD Greedy", "MoNE"]
  assert len({c[m] for m in table1}) == len(table1)
  with pytest.raises(ValueError, match="model must be a model of MODEL_COLORS, a run kind, .* or an Arm, got 'ResNet-50'"):
    plots.model_color("ResNet-50")
  with pytest.raises(ValueError, match="got 'temporal: MoNE e_c=0.3'"):
    plots.model_color("temporal: MoNE e_c=0.3")  # a label is not read back: its arm says which model it is


def test_seed_shades_and_capacity_colours():
  mone = np.array(to_rgb(plots.MODEL_COLORS["MoNE"]))
  shades = [np.array(plots.seed_color("MoNE", s)) for s in range(5)]
  np.testing.assert_allclose(shades[0], mone)
  for a, b in zip(shades, shades[1:]):  # each later seed lighter, towards white, in the same hue
    assert (b >= a - 1e-12).all() and b.sum() > a.sum()
  dark = [np.array(plots.seed_color("MoNE", s)) for s in range(5, 10)]
  for a, b in zip(dark, dark[1:]):  # seeds 5-9 darker, towards black, each darker than the one before
    assert (b <= a + 1e-12).all() and b.sum() < a.sum()
  assert dark[0].sum() < mone.sum()  # so no two of ten seeds share a colour
  np.testing.assert_allclose(plots.seed_color("MoNE", 10), shades[0])  # then the shades cycle
  assert plots.seed_color("MoNE", np.int64(1)) == plots.seed_color("MoNE", 1)
  with pytest.raises(ValueError, match="seed must be an int >= 0"):
    plots.seed_color("MoNE", -1)
  lum = [np.dot(plots.capacity_color(e), [0.299, 0.587, 0.114]) for e in (0.2, 0.3, 0.4, 0.6, 0.9)]
  assert lum == sorted(lum, reverse=True)  # darker at higher capacity
  with pytest.raises(ValueError, match=r"e_c must be in \(0, 1\]"):
    plots.capacity_color(0.0)


def test_flops_unit_avoids_offsets():
  assert plots.flops_unit([0.0091, 0.0149]) == (1e-3, "MFLOPs")
  assert plots.flops_unit([4.6, 17.6]) == (1.0, "GFLOPs")
  assert plots.flops_unit([2e-6]) == (1e-6, "kFLOPs")
  with pytest.raises(ValueError, match="gflops"):
    plots.flops_unit([0.0])
  fig, ax = plt.subplots()
  assert plots.flops_axis(ax, [0.01], per="clip") == 1e-3 and ax.get_xlabel() == "inference MFLOPs per clip"


def test_outline_tokens_draws_one_square_per_selected_token():
  fig, ax = plt.subplots()
  ax.imshow(np.zeros((8, 8)))
  sel = np.array([True, False, False, True])
  assert router_plots.outline_tokens(ax, sel, patch=4, grid=2) == 2
  corners = sorted((p.get_x(), p.get_y()) for p in ax.patches)
  assert corners == [(-0.5, -0.5), (3.5, 3.5)]  # tokens 0 and 3 of the 2 x 2 grid


def test_claims_figure_draws_every_seed_and_the_ci_the_verdict_rests_on():
  cs = [claims.trained("a.x", "c", "p", {0: 1.0, 1: 2.5, 2: 3.0}, relation="beats", tolerance=0.0),
        claims.trained("a.y", "c", "p", {0: -1.0}, relation="matches", tolerance=1.0),
        claims.arithmetic("a.z", "c", 1.0, 1.0)]
  fig = claim_plots.claims_figure(cs)
  ax = fig.axes[0]
  assert matplotlib.rcParams["axes.grid"]  # the theme
  # trained claims only, the first on top (a categorical y axis runs downwards)
  assert [t.get_text() for t in ax.get_yticklabels()] == ["a.x", "a.y"] and ax.yaxis_inverted()
  assert _dots(ax, "k") == [(-1.0, 1), (1.0, 0), (2.5, 0), (3.0, 0)]  # one dot per seed, on its claim's row
  VERDICT = claim_plots.VERDICT_COLORS
  diamonds = [l for l in ax.get_lines() if l.get_marker() == "D" and np.isfinite(l.get_xdata()).any()]
  got = {_rgb(l.get_color()): float(np.nanmax(l.get_xdata())) for l in diamonds}
  assert got == {_rgb(VERDICT[cs[0]["verdict"]]): pytest.approx(cs[0]["measured"]),
                 _rgb(VERDICT[cs[1]["verdict"]]): pytest.approx(cs[1]["measured"])}
  # the bar spans the claim's own 95% t-interval (stats.paired_ci), not a bootstrap's
  ci = [l for l in ax.get_lines() if l.get_marker() in ("None", "") and np.isfinite(l.get_xdata()).all() and len(l.get_xdata()) == 2
        and l.get_ydata()[0] == 0 and _rgb(l.get_color()) == _rgb(VERDICT[cs[0]["verdict"]])]
  assert len(ci) == 1
  np.testing.assert_allclose(sorted(ci[0].get_xdata()), cs[0]["ci95"], rtol=1e-4)
  np.testing.assert_allclose(sorted(ci[0].get_xdata()), stats.paired_ci([1.0, 2.5, 3.0])[1:])
  assert cs[1]["ci95"] is None and not any(np.isfinite(l.get_xdata()).all() and l.get_ydata()[0] == 1
                                           for l in ax.get_lines() if len(l.get_xdata()) == 2)  # one seed: no CI
  assert claim_plots.claims_figure([cs[2]]) is None
  welch = claims.trained("fig5.video_gentler_than_images", "c", "p", {0: 1.0, 1: 3.0, 2: 2.0}, {0: 0.0, 1: 0.5, 2: 2.0},
                         relation="beats", tolerance=0.0)
  with pytest.raises(ValueError, match=r"unpaired \(Welch\): \['fig5.video_gentler_than_images'\]"):
    claim_plots.claims_figure([cs[0], welch])


def _point(gflops, acc, e_c=None, width=None, train_e_c="own", learned=True):
  return {"gflops": gflops, "accuracy_pct": acc, "e_c": e_c, "width_index": width, "learned": learned,
          "train_e_c": e_c if train_e_c == "own" else train_e_c}


def _figure3_seeds():
  """Three seeds of a panel 'a' (ViT, MatViT at two widths, MoNE at two e_c) and a panel 'b' (ViT only)."""
  return {s: {("a", "ViT"): [_point(0.02, 60 + s)],
              ("a", "MatViT"): [_point(0.005, 40 + 2 * s, width=0), _point(0.02, 61 - s, width=1)],
              ("a", "MoNE"): [_point(0.01 + 1e-12 * s, 58 + s, 0.4), _point(0.008, 55 - 3 * s, 0.3)],
              ("b", "ViT"): [_point(0.02, 70 + s)]} for s in (0, 1, 2)}


def test_points_frame_is_one_row_per_seed_and_point_with_the_first_seeds_flops():
  df = plots.points_frame(_figure3_seeds())
  assert len(df) == 3 * 6 and set(df["seed"]) == {0, 1, 2}
  assert sorted(df.loc[df["panel"] == "a", "model"].unique()) == ["MatViT", "MoNE", "ViT"]
  mone = df[(df["model"] == "MoNE") & (df["e_c"] == 0.4)]
  assert list(mone["gflops"]) == [0.01, 0.01, 0.01]  # a rounding difference between seeds does not split a point
  assert plots.points_frame({0: {"Train e_c=0.4": [_point(0.01, 50, 0.4)]}})["model"].tolist() == ["Train e_c=0.4"]


def test_accuracy_flops_figure_draws_each_model_in_its_colour_with_the_seeds_range():
  by_seed = _figure3_seeds()
  fig = plots.accuracy_flops_figure(by_seed, {"a": "A", "b": "B"}, "ViT", per="clip")
  a, b = fig.axes
  assert [a.get_title(), b.get_title()] == ["A", "B"] and a.get_xlabel() == "inference MFLOPs per clip"
  assert a.get_ylabel() == "top-1 accuracy (%)" and matplotlib.rcParams["axes.grid"]
  assert [t.get_text() for t in a.get_legend().get_texts()] == ["MatViT", "ViT", "MoNE"] and b.get_legend() is None
  for model in ("ViT", "MatViT", "MoNE"):
    color = plots.MODEL_COLORS[model]
    (line,) = _lines(a, model)
    assert _rgb(line.get_color()) == _rgb(color)
    pts = {}  # x in MFLOPs -> the seeds' accuracies
    for s in by_seed:
      for p in by_seed[s]["a", model]:
        pts.setdefault(round(p["gflops"] * 1e3, 6), []).append(p["accuracy_pct"])
    xs = sorted(pts)
    np.testing.assert_allclose(line.get_xdata(), xs)  # sorted by FLOPs, in MFLOPs
    np.testing.assert_allclose(line.get_ydata(), [np.mean(pts[x]) for x in xs])  # the mean over seeds
    np.testing.assert_allclose(_bars(a, plots._light(color)), [[x, min(pts[x]), max(pts[x])] for x in xs])  # their range
    assert len(_dots(a, color)) == sum(map(len, pts.values()))  # one dot per seed and point
  assert any(l.get_linestyle() == ":" and l.get_ydata()[0] == pytest.approx(71) for l in b.get_lines())  # the dense mean


def test_table1_figure_draws_every_seed_and_the_mean_in_the_models_colour():
  rows = [{"arm": arm, "model": model, "seed": s, "accuracy_pct": acc}
          for arm, model, accs in (("Uniform\ne_c=0.47", "Uniform", (60, 61)), ("MoNE\ne_c=0.30", "MoNE", (62, 64, 63)),
                                   ("MoNE\ne_c=0.40", "MoNE", (65,))) for s, acc in enumerate(accs)]
  order = ["Uniform\ne_c=0.47", "Greedy\ne_c=0.40", "MoNE\ne_c=0.30", "MoNE\ne_c=0.40"]  # Greedy has not landed
  ax = plots.table1_figure(rows, order, "t").axes[0]
  assert [t.get_text() for t in ax.get_xticklabels()] == order
  assert _dots(ax, plots.MODEL_COLORS["Uniform"]) == [(0, 60), (0, 61)]
  assert _dots(ax, plots.MODEL_COLORS["MoNE"]) == [(2, 62), (2, 63), (2, 64), (3, 65)]
  means = sorted((i, float(y)) for l in ax.get_lines() if l.get_marker() == "_" for i, y in enumerate(l.get_ydata()) if np.isfinite(y))
  assert means == [(0, 60.5), (2, 63.0), (3, 65.0)]
  assert plots.table1_figure([], order, "nothing landed").axes[0].get_xlim() == (-0.5, 3.5)


def test_adaptation_figure_draws_each_training_capacity_with_its_seeds_range():
  pt = lambda g, a, e, t: _point(g, a, e, train_e_c=t)
  by_seed = {s: {"Train e_c=0.4": [pt(0.008, 50 + s, 0.3, 0.4), pt(0.01, 55 + 2 * s, 0.4, 0.4)],
                 "Train Adaptive": [pt(0.008, 52 - s, 0.3, None), pt(0.01, 54, 0.4, None)]} for s in (0, 1)}
  ax = plots.adaptation_figure(by_seed, "t").axes[0]
  (fixed,) = _lines(ax, "Train e_c=0.4")
  (adaptive,) = _lines(ax, "Train Adaptive")
  assert _rgb(fixed.get_color()) == _rgb(plots.capacity_color(0.4)) and fixed.get_linestyle() == "-"
  assert _rgb(adaptive.get_color()) == _rgb(plots.MODEL_COLORS["MoNE adaptive"]) and adaptive.get_linestyle() == "--"
  np.testing.assert_allclose(fixed.get_ydata(), [50.5, 56])
  np.testing.assert_allclose(_bars(ax, plots._light(plots.capacity_color(0.4))), [[8, 50, 51], [10, 55, 57]])
  stars = [l for l in ax.get_lines() if l.get_marker() == "*"]
  assert [(list(s.get_xdata()), list(s.get_ydata())) for s in stars] == [([pytest.approx(10)], [56]), ([], [])]  # at the training e_c; none adaptive
  top = next(c for c in ax.child_axes)  # the budgets of the adaptive model on the top axis
  assert [t.get_text() for t in top.get_xticklabels()] == ["0.3", "0.4"]


def _run(seed, vals, kind="vit"):
  curve = [{"step": 1000 * (i + 1), "train_loss": 1.0 - v, "train_accuracy": v + 0.05, "val_accuracy": v} for i, v in enumerate(vals)]
  return {"name": "digits64", "kind": kind, "train_steps": 1000 * len(vals), "curve": curve, "accuracy": vals[-1],
          "config_hash": f"h{seed}", "config": {"lr": 1e-3, "weight_decay": 0.1, "num_train": 50_000, "seed": seed}}


def test_learning_curves_of_one_setup_by_seed_are_shades_of_the_models_colour():
  runs = [_run(s, [0.5, 0.6 + 0.01 * s, 0.7]) for s in (2, 0, 1)]
  fig = calibration.figure(runs, "t")
  acc, loss = fig.axes
  # named by seed (in seed order), under the recipe they share: not the recipe again on every entry
  assert [l.get_label() for l in loss.get_lines()] == ["seed 0", "seed 1", "seed 2"]
  (legend,) = fig.legends
  assert legend.get_title().get_text() == "3000 steps, 50k images, wd 0.1"
  assert [t.get_text() for t in legend.get_texts()] == ["seed 0", "seed 1", "seed 2"]
  for s, line in enumerate(loss.get_lines()):
    assert _rgb(line.get_color()) == _rgb(plots.seed_color("ViT", s))
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.4 - 0.01 * s, 0.3])
  assert [(_rgb(l.get_color()), l.get_linestyle()) for l in acc.get_lines()] == [
      (_rgb(plots.seed_color("vit", s)), ls) for s in (0, 1, 2) for ls in ("-", "--")]
  assert matplotlib.rcParams["axes.grid"]
  report = legibility.audit(fig, 100)
  assert report["alike"] == [] and report["covers_data"] == []
  # runs of several setups keep the theme's cycle, one colour each
  other = {**_run(0, [0.5, 0.6, 0.7]), "train_steps": 2000}
  other["curve"] = other["curve"][:2]
  fig = calibration.figure([runs[0], other])
  assert [l.get_color() for l in fig.axes[1].get_lines()] == ["C0", "C1"]


def test_ten_seeds_of_the_dense_vit_each_get_a_colour_of_their_own():
  # The dense ViT is black: its seeds 5-9 have no darker shade (seed_color gives black again), so ten
  # seeds of it were drawn in six blacks that the audit read as one. Each seed now has its own colour.
  assert {_rgb(plots.seed_color("ViT", s)) for s in (0, 5, 6, 7, 8, 9)} == {(0.0, 0.0, 0.0)}
  runs = [_run(s, [0.5, 0.6 + 0.01 * s, 0.7]) for s in range(10)]
  fig = calibration.figure(runs, "t")
  acc, loss = fig.axes
  colours = [_rgb(l.get_color()) for l in loss.get_lines()]
  assert colours == [_rgb(c) for c in plots.SEED_PALETTE] and len(set(colours)) == 10
  assert [(_rgb(l.get_color()), l.get_linestyle()) for l in acc.get_lines()] == [
      (_rgb(plots.SEED_PALETTE[s]), ls) for s in range(10) for ls in ("-", "--")]
  (legend,) = fig.legends
  assert [t.get_text() for t in legend.get_texts()] == [f"seed {s}" for s in range(10)]
  assert legend.get_title().get_text() == "3000 steps, 50k images, wd 0.1" and legend._ncols == 10  # one row, below
  report = legibility.audit(fig, 100)
  assert report["alike"] == [] and report["covers_data"] == []
  box, panels = legend.get_window_extent(), [ax.get_window_extent() for ax in fig.axes]
  assert all(box.y1 < p.y0 for p in panels)  # beside (below) the panels, over none of them


def test_router_figure_draws_the_three_studies_by_seed():
  pt = lambda g, a: {"gflops": g, "accuracy_pct": a}
  study = {"curve": {0.2: {s: pt(0.006, 80 + s) for s in (0, 1, 2)}, 0.3: {s: pt(0.008, 84 + s) for s in (0, 1, 2)}},
           "router position": {0: {s: pt(0.008, 84 + s) for s in (0, 1, 2)}, 2: {0: pt(0.0085, 83.0), 1: pt(0.0085, 86.0)}},
           "number of routers": {1: {0: 84.0, 1: 85.0}, 4: {0: 83.0}},
           "learned router": {0.2: {s: pt(0.006, 80 + s) for s in (0, 1)}, 0.3: {0: pt(0.008, 84.0)}},
           "random router": {0.2: {s: pt(0.006, 70 + 2 * s) for s in (0, 1)}}}
  study["number of routers"] = {n: {s: pt(0.008, a) for s, a in by_seed.items()} for n, by_seed in study["number of routers"].items()}
  fig = router_plots.router_figure(study, 0.3, (1, 2, 4), "t")
  a, b, c = fig.axes[:3]
  mone, rnd = plots.MODEL_COLORS["MoNE"], plots.MODEL_COLORS["MoNE, random router"]
  (curve,) = _lines(a, "layer 0, $e_c$ sweep (seed mean)")
  np.testing.assert_allclose(curve.get_ydata(), [81, 85])
  np.testing.assert_allclose(_bars(a, plots._light(mone)), [[6, 80, 82], [8, 84, 86]])
  # the later router: one point per seed, in the seed's shade of MoNE's colour (seed 0's is MoNE's own, as the curve's seeds)
  curve_seeds = [(x, 80.0 + 4 * (x == 8) + s) for x in (6.0, 8.0) for s in (0, 1, 2)]
  assert _dots(a, plots.seed_color("MoNE", 0)) == sorted(curve_seeds + [(8.5, 83.0)])
  assert _dots(a, plots.seed_color("MoNE", 1)) == [(8.5, 86.0)]
  # (b) each seed's line over the number of routers
  assert {_rgb(l.get_color()): list(l.get_ydata()) for l in b.get_lines() if len(l.get_xdata())} == {
      _rgb(plots.seed_color("MoNE", 0)): [84.0, 83.0], _rgb(plots.seed_color("MoNE", 1)): [85.0]}
  assert list(b.get_xticks()) == [1, 2, 4]
  # (c) learned and random router: means over seeds with their range
  (learned,) = _lines(c, "MoNE, learned router (seed mean)")
  (random,) = _lines(c, "MoNE, random router (seed mean)")
  assert _rgb(learned.get_color()) == _rgb(mone) and _rgb(random.get_color()) == _rgb(rnd) and random.get_linestyle() == "--"
  np.testing.assert_allclose(random.get_ydata(), [71])
  np.testing.assert_allclose(_bars(c, plots._light(rnd)), [[6, 70, 72]])
  assert fig._suptitle.get_text() == "t"
  # Every panel's legend stands in the empty fourth cell, one under the other: none over a panel's
  # points (the audit reads them all), none over another legend
  assert [ax.get_legend() for ax in (a, b, c)] == [None, None, None]
  assert [leg.get_title().get_text() for leg in fig.legends] == ["(a)", "(b)", "(c)"]
  assert [t.get_text() for t in fig.legends[2].get_texts()] == ["MoNE, learned router (seed mean)", "MoNE, random router (seed mean)"]
  assert [t.get_text() for t in fig.legends[1].get_texts()] == ["seed 0", "seed 1"]
  report = legibility.audit(fig, 100)
  assert report["covers_data"] == [] and report["alike"] == []
  boxes = [leg.get_window_extent() for leg in fig.legends]
  cell = fig.axes[3].get_window_extent()
  for upper, lower in zip(boxes, boxes[1:]):
    assert lower.y1 < upper.y0  # stacked, not overlapping
  assert all(cell.x0 - 1 <= bx.x0 and bx.x1 <= cell.x1 + 1 and bx.y1 <= cell.y1 + 1 for bx in boxes)


def test_token_figures_show_what_is_selected():
  images = np.zeros((4, 8, 8, 3), np.uint8)
  sel = {"learned": np.ones((4, 4), bool), "random": np.zeros((4, 4), bool)}
  fig = router_plots.token_grid(images, sel, patch=4, masks=np.zeros((4, 8, 8)), title="t")
  assert len(fig.axes) == 8 and fig.axes[0].get_ylabel() == "learned" and fig.axes[4].get_ylabel() == "random"
  video, full = np.zeros((2, 4, 8, 8, 3), np.uint8), np.zeros((2, 2, 4), bool)
  full[0, 1, 2] = True
  fig = router_plots.video_tokens_figure(video, full, tubelet=2, patch=4, labels=[3, 5], title="t")
  assert len(fig.axes) == 4 and sum(len(ax.patches) for ax in fig.axes) == 1 and "label 5" in fig.axes[2].get_ylabel()


def test_overlap_and_expert_share_bars_are_in_the_routers_and_seeds_colours():
  rows = [{"router": r, "precision": p, "recall": 0.5, "iou": 0.3}
          for r, p in (("learned router", 0.6), ("random (expected)", 0.4), ("random router", 0.2))]
  ax = router_plots.overlap_figure(rows, "t").axes[0]
  assert [t.get_text() for t in ax.get_xticklabels()] == ["precision", "recall", "IoU"]
  for r, bars in zip(rows, ax.containers):
    np.testing.assert_allclose([b.get_height() for b in bars], [100 * r["precision"], 50, 30])
    assert {_rgb(b.get_facecolor()) for b in bars} == {_rgb(plots.model_color(r["router"]))}
  names = ["D/4", "D/2", "D"]
  share = [{"seed": s, "width": n, "expert": e, "object_share_pct": 10.0 * (e + 1) + s, "tokens_pct": 100 / 3, "object_pct": 15.0}
           for s in (0, 2) for e, n in enumerate(names)]
  ax = router_plots.expert_share_figure(share, names, "t").axes[0]
  for s, bars in zip((0, 2), ax.containers):
    np.testing.assert_allclose([b.get_height() for b in bars], [10 + s, 20 + s, 30 + s])
    assert {_rgb(b.get_facecolor()) for b in bars} == {_rgb(plots.seed_color("MoNE", s))}
  assert [t.get_text() for t in ax.get_legend().get_texts()] == ["seed 0", "seed 2", "base rate (blind router)"]
  assert [t.get_text() for t in ax.get_xticklabels()] == [f"{n}\n33% of tokens" for n in names]


def test_a_figure_is_written_under_its_chapters_folder(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  fig = plots.accuracy_flops_figure(_figure3_seeds(), {"a": "A"}, "ViT")
  paths = chapter.save_figure(fig, "03_figure3_images", "figure3")
  assert paths == [tmp_path / "03_figure3_images" / "figure3.png", tmp_path / "03_figure3_images" / "figure3.svg"]
  assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in paths[1].read_bytes()[:1000]


def _curves(mone_acc, vit_acc, matvit=((0.005, 40.0), (0.02, 60.0)), mod=(0.009, 50.0)):
  return {("v", "ViT"): [_point(0.02, vit_acc)],
          ("v", "MoNE"): [_point(0.008, mone_acc - 2, 0.3), _point(0.01, mone_acc, 0.4)],
          ("v", "MatViT"): [_point(g, a) for g, a in matvit], ("v", "MoD"): [_point(*mod)]}


def test_figure3_claims_pair_the_seeds_that_trained_both_arms_and_interpolate_the_baselines():
  # seeds 1 and 2 trained ViT and MoNE only (a seed study): they decide the match, not MatViT/MoD
  by_seed = {0: _curves(60.0, 60.0), 1: {("v", "ViT"): [_point(0.02, 61.0)], ("v", "MoNE"): [_point(0.01, 61.2, 0.4)]},
             2: {("v", "ViT"): [_point(0.02, 62.0)], ("v", "MoNE"): [_point(0.01, 61.9, 0.4)]}}
  out = {c["id"]: c for c in comparisons.figure3(by_seed, "v")}
  assert out["fig3.mone_matches_vit"]["n_seeds"] == 3 and out["fig3.mone_matches_vit"]["verdict"] == "reproduced"
  assert out["fig3.mone_matches_vit"]["per_seed"] == pytest.approx([0.0, 0.2, -0.1])
  assert out["fig3.flops_reduction"]["measured"] == pytest.approx(2.0)
  # MatViT interpolated at MoNE's cheapest point (8 MFLOPs): 40 + 20 * 3/15 = 44; MoNE 58 there
  assert out["fig3.mone_beats_matvit"]["measured"] == pytest.approx(14.0) and out["fig3.mone_beats_matvit"]["n_seeds"] == 1
  assert out["fig3.mone_beats_mod"]["measured"] == pytest.approx(59.0 - 50.0)
  assert {c["verdict"] for k, c in out.items() if k in ("fig3.mone_beats_matvit", "fig3.mone_beats_mod")} == {"inconclusive"}
  # Every model at three seeds: MatViT and MoD are decided too, each seed against its own baseline.
  full = {s: _curves(60.0 + s, 60.0, matvit=((0.005, 40.0 + s), (0.02, 60.0)), mod=(0.009, 50.0 - s)) for s in (0, 1, 2)}
  out = {c["id"]: c for c in comparisons.figure3(full, "v")}
  assert out["fig3.mone_beats_matvit"]["per_seed"] == pytest.approx([14.0, 58.0 + 1 - (41.0 + 19 * 3 / 15), 58.0 + 2 - (42.0 + 18 * 3 / 15)])
  assert out["fig3.mone_beats_matvit"]["verdict"] == "reproduced"
  assert out["fig3.mone_beats_mod"]["per_seed"] == pytest.approx([9.0, 11.0, 13.0]) and out["fig3.mone_beats_mod"]["verdict"] == "reproduced"
  assert out["fig3.mone_matches_vit"]["verdict"] == "inconclusive"  # +0, +1, +2: the CI reaches past 1 point
  # One seed decides nothing; outside MatViT's range: not testable.
  single = {c["id"]: c for c in comparisons.figure3({0: _curves(60.0, 60.0, matvit=((0.015, 40.0), (0.02, 60.0)))}, "v")}
  assert single["fig3.mone_matches_vit"]["verdict"] == "inconclusive"
  assert single["fig3.mone_beats_matvit"]["verdict"] == "not testable"


def test_figure4_claims_pair_seeds_and_are_inconclusive_when_a_run_stayed_on_the_plateau():
  video = lambda curves: {("temporal", k.replace("ViT", "ViViT").replace("MatViT", "MatViViT")): v for (_, k), v in curves.items()}
  seed_only = lambda vit, mone: {("temporal", "ViViT"): [_point(0.02, vit)], ("temporal", "MoNE"): [_point(0.01, mone, 0.4)]}
  by_seed = {0: video(_curves(60.5, 60.0)), 1: seed_only(61.0, 61.4), 2: seed_only(62.0, 62.6),
             3: {("appearance", "ViViT"): [_point(0.02, 10.0, learned=False)]}}  # another task's plateau is not this one's
  out = {c["id"]: c for c in comparisons.figure4(by_seed, "temporal", "SSv2", 1.95)}
  assert out["fig4.temporal.mone_no_drop"]["verdict"] == "reproduced" and out["fig4.temporal.mone_no_drop"]["n_seeds"] == 3
  assert out["fig4.temporal.mone_no_drop"]["per_seed"] == pytest.approx([0.5, 0.4, 0.6])
  assert out["fig4.temporal.flops_reduction"]["verdict"] == "reproduced"
  assert out["fig4.temporal.mone_beats_matvivit"]["n_seeds"] == 1  # MatViViT at seed 0 only
  by_seed[1][("temporal", "MoNE")] = [_point(0.01, 61.4, 0.4, learned=False)]
  out = {c["id"]: c for c in comparisons.figure4(by_seed, "temporal", "SSv2", 1.95)}
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
  gpus = speed.gpu_benchmarks()  # the GPU benchmark files (not the reports): panels per (workload, mode), titled by the GPU
  assert gpus
  for gpu in gpus.values():
    fig = speed.speedup_figure(gpu["rows"], gpu["machine"])
    assert len([ax for ax in fig.axes if ax.get_visible()]) == len(speed.groups(gpu["rows"], "workload", "mode"))
    assert gpu["machine"]["device"] in fig._suptitle.get_text()
    plt.close(fig)
  fig = speed_investigations.blocks_figure(block["rows"])
  assert len(fig.axes) == len(speed.groups(block["rows"], "batch", "mode"))
  plt.close(fig)
  fig = speed_investigations.matmuls_figure(matmul["rows"])
  assert len(fig.axes) == len(speed.groups(matmul["rows"], "model", "e_c"))
  plt.close(fig)
  assert speed_investigations.block_summary(block["rows"]) and speed_investigations.matmul_summary(matmul["rows"]) and speed.masked_summary(full["rows"])
  # The GPU runs summed up per model and mode, over every committed file
  gpus = speed.gpu_benchmarks()
  findings = speed.gpu_findings(gpus)
  assert len(findings) == len({(r["workload"], r["mode"]) for g in gpus.values() for r in g["rows"]})
  forward = next(line for line in findings if line.startswith("ViT-B/16 224px, forward ("))
  mone = lambda workload: [r["speedup"] for g in gpus.values() for r in g["rows"] if (r["mode"], r["model"]) == ("forward", "mone")
                            and r["e_c"] != 1.0 and workload in (None, r["workload"])]
  assert f"MoNE's speed-up over the dense model {min(mone('ViT-B/16 224px')):.2f}-" in forward and "MatViT's sub-models'" in forward
  ranges = speed.gpu_ranges(gpus)  # what the landing page's line on speed reads: every workload's rows
  assert ranges["forward"]["speedup"] == [min(mone(None)), max(mone(None))] and set(ranges) == {"devices", "forward", "train"}
  assert ranges["train"]["speedup"][1] < 1 and all("NVIDIA" in d for d in ranges["devices"])
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
  a, b, c, d = comparisons.figure6(curve, later, routers, learned, random, 0.3)
  assert a["id"] == "fig6.first_layer_router_best" and a["seeds"] == [0] and a["measured"] == -1.0  # 85 - 86 at layer 2
  assert a["verdict"] == "inconclusive" and "layer 2: -1.0" in a["note"]
  assert "layer 3: 2500.0 MFLOPs, outside the curve, not judged" in a["note"]  # said, not silently dropped
  assert b["seeds"] == [0] and b["measured"] == 1.0
  assert c["seeds"] == [0, 1, 2] and c["verdict"] == "reproduced" and "0.2" in c["claim"]
  # the other half of Fig. 6c, exploratory: the gap at 0.2 minus at 0.3, over the seed with both (0)
  assert d["id"] == "fig6.random_degrades_at_low_capacity" and d["seeds"] == [0] and d["measured"] == 5.0 and d["exploratory"]
  none = comparisons.figure6(curve, {}, {1: routers[1]}, {0.2: {}}, {0.2: {0: 70.0}}, 0.3)
  assert [x["verdict"] for x in none] == ["not testable"] * 4


def test_the_exploratory_router_claim_takes_the_capacity_most_seeds_have_and_stays_outside_holm():
  from mone.evidence import significance
  learned = {0.2: {0: 80.0, 1: 81.0, 2: 80.5}, 0.3: {0: 88.0, 1: 89.0, 2: 89.5}, 0.4: {0: 90.0, 1: 90.5, 2: 91.0}}
  random = {0.2: {0: 70.0, 1: 72.0, 2: 71.0}, 0.3: {0: 79.0, 1: 80.0, 2: 81.0}, 0.4: {0: 80.0}}
  c = comparisons.random_degrades(learned, random)
  assert "than at 0.3" in c["claim"] and c["seeds"] == [0, 1, 2]  # 0.4's random router has one seed
  assert c["per_seed"] == [(80.0 - 70.0) - (88.0 - 79.0), (81.0 - 72.0) - (89.0 - 80.0), (80.5 - 71.0) - (89.5 - 81.0)]
  decided = claims.trained("fig3.x", "t", "p", {0: 2.0, 1: 3.0, 2: 2.5}, relation="beats", tolerance=0.0)
  got = {x["id"]: x for x in significance.annotate({"06": [c, decided]})["06"]}
  assert "verdict_familywise" not in got[c["id"]] and "p_value" in got[c["id"]]
  assert got["fig3.x"]["verdict_familywise"] == "reproduced"  # a family of one: the exploratory claim is not in it
  assert "(exploratory)" in verdicts.markdown_table([got[c["id"]]])


def test_figure4_claims_are_not_testable_until_a_seed_has_both_arms():
  pt = lambda g, a, e_c=None, w=None: {"gflops": g, "accuracy_pct": a, "e_c": e_c, "width_index": w, "learned": True}
  only_dense = {2: {("temporal", "ViViT"): [pt(2.0, 95.0)]}}
  got = comparisons.figure4(only_dense, "temporal", "SSv2", 1.95)
  assert [c["verdict"] for c in got] == ["not testable"] * 3
  assert [c["id"] for c in got] == ["fig4.temporal.mone_no_drop", "fig4.temporal.flops_reduction", "fig4.temporal.mone_beats_matvivit"]
  both = {2: {**only_dense[2], ("temporal", "MoNE"): [pt(1.0, 94.5, 0.4)]}}
  no_drop, reduction, _ = comparisons.figure4(both, "temporal", "SSv2", 1.95)
  assert no_drop["n_seeds"] == 1 and no_drop["verdict"] == "inconclusive" and reduction["measured"] == 2.0


def test_figure3_says_a_planned_iso_flops_run_is_not_testable_until_it_lands():
  pt = lambda g, a, e_c=None: {"gflops": g, "accuracy_pct": a, "e_c": e_c, "width_index": None, "learned": True}
  by_seed = {0: {("v", "ViT"): [pt(2.0, 88.0)], ("v", "MoNE"): [pt(0.5, 84.0, 0.2), pt(0.9, 87.0, 0.4)]}}
  ids = lambda out: {c["id"]: c["verdict"] for c in out}
  assert "fig3.iso_flops_helps" not in ids(comparisons.figure3(by_seed, "v"))
  assert ids(comparisons.figure3(by_seed, "v", iso_planned=True))["fig3.iso_flops_helps"] == "not testable"
  by_seed[0]["v", "MoNE-isoFLOPs"] = [pt(0.5, 85.0, 0.2)]
  assert ids(comparisons.figure3(by_seed, "v", iso_planned=True))["fig3.iso_flops_helps"] == "inconclusive"


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


def _capacity_figure_bytes(root, dist, monkeypatch) -> list[bytes]:
  monkeypatch.setenv("MONE_RESULTS_DIR", str(root))
  grid = np.round(np.arange(0.15, 1.0001, 0.05), 2)
  fig = plots.capacity_distribution_figure(grid, dist, ["D/8", "D/4", "D/2", "D"])
  paths = chapter.save_figure(fig, "02_table1_capacity", "distributions")
  plt.close(fig)
  return [p.read_bytes() for p in paths]


def test_the_capacity_distribution_figure_is_byte_identical_when_the_solver_differs_in_its_last_bits(tmp_path, monkeypatch):
  """Eq. 3's solver gives capacities that differ by up to 5e-9 between the BLAS kernels a machine
  selects (OPENBLAS_CORETYPE): the written SVG and PNG must not differ."""
  from mone import capacity
  dist = np.array([capacity.capacity_distribution(e, 4) for e in np.round(np.arange(0.15, 1.0001, 0.05), 2)])
  rng = np.random.default_rng(0)
  first = _capacity_figure_bytes(tmp_path / "0", dist, monkeypatch)
  for k in range(1, 4):
    noisy = dist + rng.uniform(-5e-9, 5e-9, dist.shape)
    assert _capacity_figure_bytes(tmp_path / str(k), noisy, monkeypatch) == first
  # unrounded, a difference of that size moves the SVG's coordinates: the rounding is what holds it
  monkeypatch.setattr(plots, "CAPACITY_DECIMALS", 15)
  assert _capacity_figure_bytes(tmp_path / "raw", dist + 5e-9, monkeypatch)[1] != _capacity_figure_bytes(tmp_path / "raw0", dist, monkeypatch)[1]


def test_the_capacity_distribution_figure_is_the_same_under_other_blas_kernels(tmp_path, monkeypatch):
  """The capacities computed in subprocesses under two OPENBLAS_CORETYPE values draw the same files."""
  import os
  import subprocess
  import sys
  code = ("import sys, numpy as np; from mone import capacity; "
          "np.save(sys.argv[1], [capacity.capacity_distribution(e, 4) for e in np.round(np.arange(0.15, 1.0001, 0.05), 2)])")
  written = []
  for coretype in ("Sandybridge", "Haswell"):
    out = tmp_path / f"{coretype}.npy"
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, env={**os.environ, "OPENBLAS_CORETYPE": coretype})
    written.append(_capacity_figure_bytes(tmp_path / coretype, np.load(out), monkeypatch))
  assert written[0] == written[1]
