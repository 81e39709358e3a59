"""Whether a figure can be read where the book shows it: its smallest text, legends over data, and
legend entries that look alike.

`audit(fig, dpi)` measures a drawn matplotlib figure: the smallest text a reader must read (tick
labels, axis labels, titles, legends, annotations) in pixels of the PNG that `savefig(dpi=dpi,
bbox_inches="tight")` writes; every legend that covers a data point, bar, band or annotation; and
every legend whose entries share one style (two series a reader cannot tell apart). `png(fig, dpi)`
writes the PNG with that audit in a text chunk (`KEY`), and `read(data)` reads it back from the PNG's bytes, so that
scripts/check_book.py can scale it by the width the browser shows the image at: text under 9
pixels on screen is unreadable, whatever its size in points.
"""
import io
import json
import struct
import zlib

KEY = "mone-legibility"  # the PNG text chunk that holds a figure's audit


def _visible_texts(fig):
  """Every text the figure draws: visible and non-empty, with no hidden artist (an invisible legend
  or axes) above it."""
  from matplotlib.text import Text
  stack = [fig]
  while stack:
    artist = stack.pop()
    if not artist.get_visible():
      continue
    if isinstance(artist, Text) and artist.get_text().strip():
      yield artist
    stack.extend(artist.get_children())


def _data_points(ax):
  """Display coordinates of the data an axes draws: line vertices (in data coordinates only: a
  reference line such as axhline spans the axes, and is not data a legend hides), scatter and
  error-bar points, band outlines, and the corners and centre of every bar and text box."""
  import numpy as np
  from matplotlib.collections import LineCollection, PathCollection, PolyCollection
  from matplotlib.patches import Rectangle
  points, boxes = [], []
  for line in ax.lines:
    if line.get_visible() and line.get_transform() == ax.transData:
      xy = np.column_stack(line.get_data()).astype(float)
      p = ax.transData.transform(xy[np.isfinite(xy).all(axis=1)])
      points.append(_along(p) if line.get_linestyle() not in ("None", "", " ") else p)
  for coll in ax.collections:
    if not coll.get_visible():
      continue
    if isinstance(coll, PathCollection):
      points.append(coll.get_offset_transform().transform(coll.get_offsets()))
    elif isinstance(coll, (LineCollection, PolyCollection)):
      for path in coll.get_paths():
        points.append(coll.get_transform().transform(path.vertices))
  for patch in ax.patches:
    if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_width() and patch.get_height():
      boxes.append(patch.get_window_extent())
  for text in ax.texts:
    if text.get_visible() and text.get_text().strip():
      boxes.append(text.get_window_extent())
  return [p for p in points if len(p)], boxes


def _along(p):
  """Points every 2 pixels along a polyline's segments (display coordinates): a legend that hides
  a line's middle hides data too, though no vertex lies under it."""
  import numpy as np
  if len(p) < 2:
    return p
  out = [p[:1]]
  for a, b in zip(p[:-1], p[1:]):
    n = int(min(np.ceil(np.hypot(*(b - a)) / 2), 2000))
    out.append(a + (b - a) * np.linspace(0, 1, max(n, 1) + 1)[1:, None])
  return np.concatenate(out)


def _covered(legend_box, points, boxes) -> int:
  """How many data points and boxes a legend's box covers (shrunk by a pixel: touching is not covering)."""
  import numpy as np
  x0, y0, x1, y1 = legend_box.x0 + 1, legend_box.y0 + 1, legend_box.x1 - 1, legend_box.y1 - 1
  n = 0
  for p in points:
    p = p[np.isfinite(p).all(axis=1)]
    n += int(((p[:, 0] > x0) & (p[:, 0] < x1) & (p[:, 1] > y0) & (p[:, 1] < y1)).sum())
  for b in boxes:
    n += int(min(b.x1, x1) > max(b.x0, x0) and min(b.y1, y1) > max(b.y0, y0))
  return n


def _style(handle) -> tuple:
  """What a reader sees of a legend entry's handle: colours, marker, line and hatch."""
  from matplotlib.colors import to_hex
  from matplotlib.lines import Line2D
  from matplotlib.patches import Patch

  def colour(c):
    try:
      return to_hex(c, keep_alpha=True)
    except (ValueError, TypeError):
      import numpy as np
      c = np.asarray(c)
      return to_hex(c[0], keep_alpha=True) if c.ndim == 2 and len(c) else "none"
  if isinstance(handle, Line2D):
    return ("line", colour(handle.get_color()), str(handle.get_marker()), str(handle.get_linestyle()),
            colour(handle.get_markerfacecolor()), colour(handle.get_markeredgecolor()))
  if isinstance(handle, Patch):
    return ("patch", colour(handle.get_facecolor()), colour(handle.get_edgecolor()), str(handle.get_hatch()))
  if hasattr(handle, "get_facecolor"):  # a scatter's collection
    paths = [p.vertices.round(3).tobytes() for p in getattr(handle, "get_paths", list)()]
    return ("collection", colour(handle.get_facecolor()), colour(handle.get_edgecolor()), hash(tuple(paths)))
  if isinstance(handle, tuple) or hasattr(handle, "lines"):  # an errorbar container or handle tuple
    return ("container",) + tuple(_style(h) for h in (handle if isinstance(handle, tuple) else handle.lines[:1]))
  return (type(handle).__name__, id(handle))


def _legends(fig):
  """(legend, axes it sits over or None for a figure legend) of every visible legend."""
  for ax in fig.axes:
    leg = ax.get_legend()
    if leg is not None and leg.get_visible():
      yield leg, ax
  for leg in fig.legends:
    if leg.get_visible():
      yield leg, None


def _where(ax) -> str:
  title = ax.get_title() if ax is not None else ""
  return f"panel {title!r}" if title else ("the figure" if ax is None else "an untitled panel")


def audit(fig, dpi: float, tight: bool = True) -> dict:
  """The figure's legibility in the PNG `savefig(dpi=dpi)` writes, with a tight bounding box
  (`bbox_inches="tight"`) or the figure's own size: `min_text_px`, the smallest text's font size in that PNG's pixels, and `min_text`, the
  text it is; `width_px`, the PNG's width; `covers_data`, each legend that covers data (where, and
  how many points or boxes); `alike`, each legend's entries that share one style."""
  fig.canvas.draw()
  renderer = fig.canvas.get_renderer()
  smallest = min(((t.get_fontsize(), t.get_text()) for t in _visible_texts(fig)), default=(None, ""))
  covers, alike = [], []
  for leg, ax in _legends(fig):
    box = leg.get_window_extent(renderer)
    n = 0
    for data_ax in ([ax] if ax is not None else fig.axes):
      points, boxes = _data_points(data_ax)
      n += _covered(box, points, boxes)
    if n:
      covers.append(f"{_where(ax)}: the legend covers data ({n} points of lines and markers, bars or labels)")
    labels = [t.get_text() for t in leg.get_texts()]
    seen = {}
    for label, handle in zip(labels, leg.legend_handles):
      seen.setdefault(_style(handle), []).append(label)
    alike += [f"{_where(ax)}: legend entries {', '.join(map(repr, v))} look the same"
              for v in seen.values() if len(set(v)) > 1]
  width_in = fig.get_tightbbox(renderer).width + 2 * 0.1 if tight else fig.get_figwidth()  # pad_inches 0.1
  return {"min_text_px": None if smallest[0] is None else round(smallest[0] * dpi / 72, 2),
          "min_text": smallest[1][:40], "width_px": round(width_in * dpi), "covers_data": covers, "alike": alike}


def png(fig, dpi: float, tight: bool = True) -> tuple[bytes, dict]:
  """The figure as PNG bytes (no version stamp) with its audit (`audit`) in a text chunk, and the audit."""
  report = audit(fig, dpi, tight)
  buf = io.BytesIO()
  fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight" if tight else None,
              metadata={"Software": None, KEY: json.dumps(report, sort_keys=True)})
  return buf.getvalue(), report


def read(data: bytes) -> dict | None:
  """The audit a PNG's bytes carry (`png`), or None if it has none."""
  pos = 8
  while pos + 8 <= len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"tEXt" and body.startswith(KEY.encode() + b"\0"):
      return json.loads(body[len(KEY) + 1:].decode("latin-1"))
    if kind == b"zTXt" and body.startswith(KEY.encode() + b"\0"):
      return json.loads(zlib.decompress(body[len(KEY) + 2:]).decode("latin-1"))
    if kind == b"IEND":
      break
    pos += 12 + length
  return None
