"""One chapter's setting, from its papermill parameters: the one call each notebook starts with.

A chapter reads its profile, seed, recompute and data_dir as papermill parameters. `setup` checks
them, quiets the messages that would print local paths, applies the book's theme, and returns what
the chapter's code needs: the seeds it reads, whether it trains, and where it writes.
"""
import dataclasses

import matplotlib.pyplot as plt

from mone.chapters import analysis, experiments, legibility, plan, plots

INLINE_DPI = 100  # the inline backend's: a chapter's figures keep the pixel size they had


@dataclasses.dataclass(frozen=True)
class Chapter:
  name: str  # the notebook's name, e.g. "03_figure3_images": its results go to results/<name>/
  profile: str  # smoke | small | paper (mone.chapters.experiments.PROFILES)
  seed: int
  recompute: bool  # retrain (or re-measure) even where a committed result exists
  data_dir: str  # the paper profile's prepared TFDS folder
  seeds: tuple  # the seeds the chapter reads (mone.chapters.plan.seeds)
  train: bool  # whether the chapter trains its runs (mone.chapters.plan.trains)

  def show(self, fig, name: str) -> None:
    """Saves a figure under results/<chapter>/ (PNG and SVG) and shows it in the notebook."""
    experiments.save_figure(fig, self.name, name)
    display(fig)


def display(fig) -> None:
  """Shows a figure in the notebook as the inline backend would (a PNG at INLINE_DPI, tight bounding
  box), with its legibility audit in the PNG (`mone.chapters.legibility`) for the book's check, and
  closes it."""
  import IPython.display as ipd
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
