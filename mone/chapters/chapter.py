"""One chapter's setting, from its papermill parameters: the one call each notebook starts with.

A chapter reads its profile, seed, recompute and data_dir as papermill parameters. `setup` checks
them, quiets the messages that would print local paths, applies the book's theme, and returns what
the chapter's code needs: the seeds it reads, whether it trains, and where it writes. What a chapter
writes under results/<notebook>/, its figures (`save_figure`: PNG, with the legibility audit a page's
check reads, and SVG) and metrics (`save_metrics`), is written whole or not at all.
"""
import dataclasses
import os
from pathlib import Path

from mone import results
from mone.plotting import legibility, plots
from mone.chapters import analysis
from mone.runs import experiments, plan

INLINE_DPI = 100  # the inline backend's: a chapter's figures keep the pixel size they had


@dataclasses.dataclass(frozen=True)
class Chapter:
  name: str  # the notebook's name, e.g. "03_figure3_images": its results go to results/<name>/
  profile: str  # smoke | small | paper (mone.runs.experiments.PROFILES)
  seed: int
  recompute: bool  # retrain (or re-measure) even where a committed result exists
  data_dir: str  # the paper profile's prepared TFDS folder
  seeds: tuple  # the seeds the chapter reads (mone.runs.plan.seeds)
  train: bool  # whether the chapter trains its runs (mone.runs.plan.trains)

  def show(self, fig, name: str) -> None:
    """Saves a figure under results/<chapter>/ (PNG and SVG) and shows it in the notebook."""
    save_figure(fig, self.name, name)
    display(fig)


def display(fig) -> None:
  """Shows a figure in the notebook as the inline backend would (a PNG at INLINE_DPI, tight bounding
  box), with its legibility audit in the PNG (`mone.plotting.legibility`) for the book's check, and
  closes it."""
  import IPython.display as ipd
  import matplotlib.pyplot as plt  # here: the book's environment imports this module (the chapters CLI) without it
  data, _ = legibility.png(fig, INLINE_DPI)
  plt.close(fig)
  ipd.display(ipd.Image(data))


def setup(namespace: dict, name: str) -> Chapter:
  """Checks a chapter's parameters (an undeclared one raises: papermill only warns) and returns
  its setting. Call it first, with the notebook's globals, before any other name is defined."""
  experiments.check_parameters(namespace)  # the profile too
  profile = namespace["profile"]
  analysis.quiet_notebook()
  plots.theme()
  seed, recompute = namespace["seed"], namespace["recompute"]
  return Chapter(name, profile, seed, recompute, namespace["data_dir"], plan.seeds(profile, seed),
                 plan.trains(profile, recompute))


def save_figure(fig, notebook: str, name: str) -> list[Path]:
  """Writes fig as PNG and SVG under results/<notebook>/ and returns the paths."""
  import matplotlib  # as in `display`
  out = results.results_root() / notebook
  out.mkdir(parents=True, exist_ok=True)
  paths = []
  for ext in ("png", "svg"):
    p = out / f"{name}.{ext}"
    tmp = p.with_suffix(f".tmp.{ext}")
    if ext == "png":  # with its legibility audit, read where a page shows it (scripts/check_book.py)
      tmp.write_bytes(legibility.png(fig, 150)[0])
    else:  # a fixed hash salt makes the SVG's element ids, and so the file, the same on every run
      with matplotlib.rc_context({"svg.hashsalt": "mone"}):
        fig.savefig(tmp, dpi=150, bbox_inches="tight", metadata={"Date": None})
    os.replace(tmp, p)
    paths.append(p)
  return paths


def save_metrics(obj: dict, notebook: str, name: str = "metrics") -> Path:
  """Writes obj, plus the package versions and device, to results/<notebook>/<name>.json.
  (Each training run's own file under results/runs/ records its seed and config hash.)"""
  path = results.results_root() / notebook / f"{name}.json"
  results.atomic_write_json(path, {**obj, "provenance": results.provenance()})
  return path
