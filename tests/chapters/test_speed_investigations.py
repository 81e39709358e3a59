"""The page of chapter 08's measurements in full (`python -m mone.chapters speed`,
mone.chapters.speed_investigations): its sections, its figures (readable where the book shows them),
and a rerun that changes no byte, from copies of the committed benchmark files."""
import shutil

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from mone import results  # noqa: E402
from mone.plotting import legibility, plots
from mone.chapters import speed, speed_investigations
from mone.publish import cli  # noqa: E402

BENCH = results.RESULTS / "bench"
# One file of each kind the page reads: the block and matmul benchmarks, a GPU run, a GPU report.
FILES = ("cpu-block.json", "cpu-matmul.json", "gpu-h200.json", "gpu-report-h200-vit64.json")
BOOK_WIDTH_PX, MIN_TEXT_PX = 784, 9  # a figure's column at a 1,400 px window, and the book's smallest text


def _results(tmp_path):
  (tmp_path / "bench").mkdir()
  for name in FILES:
    shutil.copy(BENCH / name, tmp_path / "bench" / name)
  return tmp_path


def _readable(audit: dict) -> bool:
  """Whether a figure's smallest text is at least MIN_TEXT_PX where the book shows it, and no two
  legend entries look alike (scripts/check_book.py's checks)."""
  shown = audit["min_text_px"] * min(1, BOOK_WIDTH_PX / audit["width_px"])
  return shown >= MIN_TEXT_PX and not audit["alike"] and not audit["covers_data"]


def test_the_page_writes_its_sections_and_figures_and_a_rerun_changes_nothing(tmp_path):
  root = _results(tmp_path)
  out = tmp_path / "book" / "speed_investigations.md"
  out.parent.mkdir()
  cli.main(["speed", str(out), "--results", str(root)])
  text = out.read_text()
  assert text.startswith("# Wall-clock speed: the measurements in full\n")
  assert "{doc}`notebooks/08_wallclock_speed`" in text
  headings = [line for line in text.splitlines() if line.startswith("#")]
  assert headings == ["# Wall-clock speed: the measurements in full", "## Where the time goes", "## One matmul at a time",
                      "## On a GPU", "### gpu-h200.json", "### Over every file", "## The GPU report",
                      "## What bounds MoNE on this CPU"]
  figures = root / speed_investigations.FIGURES
  pngs = sorted(p.name for p in figures.iterdir())
  assert pngs == ["cpu-block.png", "cpu-matmul.png", "gpu-h200.png"]
  for name in pngs:  # linked relative to the page, each with its legibility audit, readable in the book
    assert f"](../{speed_investigations.FIGURES}/{name})" in text
    assert _readable(legibility.read((figures / name).read_bytes())), name
  # the summaries are the chapter's own, the raw tables folded under them
  block = results.read_json(root / "bench" / "cpu-block.json")
  assert "".join(f"- {line}\n" for line in speed_investigations.block_summary(block["rows"])) in text
  assert "::::{dropdown} The block benchmark's tables (cpu-block.json)\n```text\n" in text
  assert "::::{dropdown} The report gpu-report-h200-vit64.json, whole" in text
  assert "->" in text.split("## The GPU report")[1]  # each target a report measured
  for word in ("loan", "lent", "session", "landed"):
    assert word not in text.lower()
  page_time, png_bytes = out.stat().st_mtime_ns, {p: p.read_bytes() for p in figures.iterdir()}
  cli.main(["speed", str(out), "--results", str(root)])
  assert out.stat().st_mtime_ns == page_time and out.read_text() == text  # the page is not rewritten
  assert {p: p.read_bytes() for p in figures.iterdir()} == png_bytes  # the same files draw the same bytes


def test_without_benchmark_files_the_page_says_what_is_missing(tmp_path):
  out = tmp_path / "speed_investigations.md"
  speed_investigations.write_page(out, tmp_path)
  text = out.read_text()
  assert "No file is committed (`results/bench/cpu-block.json`)" in text
  assert "No file is committed (`results/bench/cpu-matmul.json`)" in text
  assert "No GPU measurement is committed" in text and "No GPU report is committed" in text
  assert "![" not in text and not (tmp_path / speed_investigations.FIGURES).exists()


def test_the_speedup_figure_gives_each_batch_size_its_own_marker_in_every_panel():
  """Panels with different batch sizes (ViT at 8 and 32, ViViT at 4): no two legend entries look
  alike, and a batch keeps one marker across the panels."""
  plots.theme()
  data = results.read_json(BENCH / "cpu.json")
  fig = speed.speedup_figure(data["rows"], data["machine"])
  markers = {}
  for ax in fig.axes:
    for line in ax.lines:
      if line.get_label().startswith("MoNE, batch"):
        markers.setdefault(line.get_label(), set()).add(line.get_marker())
  assert len(markers) == len({r["batch"] for r in data["rows"]}) and all(len(m) == 1 for m in markers.values())
  assert len({m for ms in markers.values() for m in ms}) == len(markers)
  assert _readable(legibility.audit(fig, 100))
  plt.close(fig)


def test_the_matmul_figure_is_readable_at_the_books_width():
  plots.theme()
  fig = speed_investigations.matmuls_figure(results.read_json(BENCH / "cpu-matmul.json")["rows"])
  assert _readable(legibility.audit(fig, 100))
  plt.close(fig)
