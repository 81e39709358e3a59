"""The legibility audit a figure carries in its PNG: its smallest text in pixels, legends over data,
legend entries drawn alike, and the round trip through the PNG's text chunk."""
import struct

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mone.plotting import legibility  # noqa: E402


def _figure(legend_loc="upper left", fontsize=10, alike=False):
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.plot([0, 1, 2], [0, 1, 2], "o-", color="k", label="rising")
  ax.plot([0, 1, 2], [2, 1.5, 0.1], "s-" if not alike else "o-", color="C1" if not alike else "k", label="falling")
  ax.tick_params(labelsize=fontsize)
  ax.set_title("panel", fontsize=12)
  ax.legend(loc=legend_loc, fontsize=11)
  return fig


def test_the_smallest_text_is_measured_in_pixels_of_the_png():
  fig = _figure(fontsize=7.2)
  report = legibility.audit(fig, dpi=100)
  assert report["min_text_px"] == 10.0  # 7.2 pt at 100 dpi: 7.2 * 100 / 72
  assert legibility.audit(fig, dpi=150)["min_text_px"] == 15.0
  plt.close(fig)


def test_a_legend_over_data_is_found_and_one_clear_of_it_is_not():
  fig = _figure(legend_loc="center")  # the middle point (1, 1) and (1, 1.5) lie under it
  assert any("covers" in c for c in legibility.audit(fig, 100)["covers_data"])
  plt.close(fig)
  fig = _figure()
  fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the axes
  assert legibility.audit(fig, 100)["covers_data"] == []
  plt.close(fig)


def test_bars_under_a_legend_count_as_covered():
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.bar([0, 1, 2], [3, 3, 3], label="bars")
  ax.legend(loc="upper center")
  assert legibility.audit(fig, 100)["covers_data"]
  plt.close(fig)


def test_legend_entries_drawn_alike_are_reported():
  fig = _figure(alike=True)
  fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.02, 1))
  assert legibility.audit(fig, 100)["alike"] == ["panel 'panel': legend entries 'rising', 'falling' look the same"]
  plt.close(fig)
  fig = _figure()
  assert legibility.audit(fig, 100)["alike"] == []
  plt.close(fig)


def test_the_png_carries_its_audit_and_its_width():
  fig = _figure()
  data, report = legibility.png(fig, 100)
  plt.close(fig)
  assert legibility.read(data) == report
  width = struct.unpack(">I", data[16:20])[0]
  assert abs(width - report["width_px"]) <= 2  # the tight box's width, as savefig writes it
  assert legibility.read(b"\x89PNG\r\n\x1a\n") is None


def test_hidden_text_is_not_read():
  fig = _figure()
  fig.axes[0].text(0.5, 0.5, "tiny", fontsize=2, visible=False)
  assert legibility.audit(fig, 100)["min_text"] != "tiny"
  plt.close(fig)



def test_entries_that_differ_only_in_line_width_look_the_same_and_a_marker_tells_them_apart():
  # What a reader of a figure shown smaller than its own size sees: two widths of one grey are one
  # style (the seed-plan comparison's '3 seeds (thin)' / '5 seeds (thick)'); an open circle against a
  # filled diamond is not.
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.plot([0, 1], [0, 1], color="0.4", lw=1.2, label="thin")
  ax.plot([0, 1], [1, 0], color="0.4", lw=3.0, label="thick")
  fig.legend(loc="lower center", bbox_to_anchor=(0.5, -0.2))
  assert legibility.audit(fig, 100)["alike"] == ["the figure: legend entries 'thin', 'thick' look the same"]
  plt.close(fig)
  fig, ax = plt.subplots(figsize=(4, 3))
  ax.plot([0, 1], [0, 1], color="0.4", lw=1.2, marker="o", mfc="white", label="thin")
  ax.plot([0, 1], [1, 0], color="0.4", lw=3.0, marker="D", label="thick")
  fig.legend(loc="lower center", bbox_to_anchor=(0.5, -0.2))
  assert legibility.audit(fig, 100)["alike"] == []
  plt.close(fig)
