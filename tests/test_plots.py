"""The chapters' plotting helpers: readable FLOPs units, token outlines, the claims figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mone import claims, plots  # noqa: E402


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
