"""Plotting helpers the chapters share: one theme, one colour per model, and the seed spreads,
with the accuracy figures drawn from them (Figures 3 to 5, Table 1, learning curves).

Every figure is drawn in one theme (`theme`: seaborn's whitegrid, colourblind palette) and gives
each model one colour in every chapter (`MODEL_COLORS`, `model_color`): MoNE vermillion, the dense
ViT (ViViT) black, MatViT (MatViViT) blue; seeds of one model are shades of its colour
(`seed_color`), Figure 5's training capacities shades of a warm ramp (`capacity_color`). The
statistics are seaborn's, from a tidy table of one row per seed and point (`points_frame`): the
mean over seeds with the seeds' range as a bar, the seeds as dots. The functions take plain data,
so they are tested without training. `flops_unit` picks an axis unit a reader need not multiply in
(the small profile's models cost ~10 MFLOPs). The routers' figures are `mone.chapters.router_plots`,
the claims' `mone.plotting.claim_plots`.
"""
import numbers
import textwrap

from mone.plotting import legibility
from mone.configs.arms import Arm
from mone.models import kinds

_UNITS = ((1.0, "GFLOPs"), (1e-3, "MFLOPs"), (1e-6, "kFLOPs"))

# seaborn.set_theme's arguments for every figure; font_scale brings the notebook context's fonts
# back to matplotlib's 10 points, the size the figures were laid out for.
THEME = dict(context="notebook", style="whitegrid", palette="colorblind", font_scale=0.85)

# One colour per model, the same in every chapter, from seaborn's colourblind palette.
MODEL_COLORS = {
    "ViT": "#000000", "ViViT": "#000000",  # the dense model, the reference of every comparison
    "MatViT": "#0173b2", "MatViViT": "#0173b2",
    "MoNE": "#d55e00",
    "MoNE-isoFLOPs": "#cc78bc",
    "MoNE adaptive": "#56b4e9",
    "MoD": "#029e73",
    "MoNE, random router": "#949494",
    "random (expected)": "#c8c8c8",  # a random choice of as many tokens: an expectation, not a model
    # Table 1's capacity allocations (MoNE's own is "MoNE"); MoD Greedy is MoD's rule, so MoD's colour.
    "Proportionate": "#ca9161", "Uniform": "#6a3d9a", "Greedy": "#de8f05", "MoD Greedy": "#029e73",
}
# A run file's kind (metrics["kind"]) as the chapters name its model.
KIND_NAMES = {name: kinds.KINDS[name, False].label for name in kinds.NAMES}
# Other names the chapters give these models: run kinds, chapter 07's routers, Figure 5's adaptive model.
_ALIASES = {**KIND_NAMES, "learned router": "MoNE", "random router": "MoNE, random router",
            "Train Adaptive": "MoNE adaptive"}
# How far seed s's colour is mixed towards white (seed s % 5): seed 0 in the model's own colour.
SEED_SHADES = (0.0, 0.3, 0.5, 0.65, 0.78)
# One colour per seed (seed s % 10), where a figure draws more seeds of one model than it has shades
# that a reader tells apart (`SEED_SHADES`: five; the dense ViT's black has no darker shade for seeds
# 5-9): matplotlib's ten-colour cycle, all ten of them readable as thin lines on white.
SEED_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                "#17becf")


def save_png(fig, path, dpi: int) -> None:
  """Writes fig to path as a PNG atomically (a temporary file in the same folder, then os.replace:
  a reader never sees half a figure) and closes it. No version stamp in the file, so it changes
  only with its data; its legibility audit in it (`mone.plotting.legibility`). For the landing
  step's figures, which `python -m mone.chapters` draws outside a chapter (`chapter.save_figure`
  writes a chapter's)."""
  import os
  from pathlib import Path
  import matplotlib.pyplot as plt
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_name(f".{path.name}.tmp.png")
  tmp.write_bytes(legibility.png(fig, dpi, tight=False)[0])
  plt.close(fig)
  os.replace(tmp, path)


def theme():
  """Applies the book's theme (`THEME`) to matplotlib's rcParams. Every plotting function here
  calls it first; a chapter that draws with matplotlib itself calls it once before."""
  import seaborn as sns
  sns.set_theme(**THEME)


def model_color(model) -> str:
  """The colour of a model (`MODEL_COLORS`): its name in the book ('MatViT', 'Greedy'), a run kind
  ('mone'), another name a chapter gives it (`_ALIASES`: 'random router'), or an `Arm`, whose fields
  say which model it is (a Table 1 allocation, a random router, isoFLOPs or adaptive training, else its
  kind). A run's label is never read back: pass its arm."""
  if isinstance(model, Arm):
    model = model.curve
  name = _ALIASES.get(model, model)
  if name in MODEL_COLORS:
    return MODEL_COLORS[name]
  raise ValueError(f"model must be a model of MODEL_COLORS, a run kind, one of {sorted(set(_ALIASES) - set(KIND_NAMES))} "
                   f"or an Arm, got {model!r}")


def _mix(color, towards, amount: float) -> tuple:
  from matplotlib.colors import to_rgb
  return tuple(c + (t - c) * amount for c, t in zip(to_rgb(color), to_rgb(towards)))


def seed_color(label: str, seed: int) -> tuple:
  """Seed `seed`'s shade of the model's colour (`model_color`), for figures that tell the seeds
  of one model apart: seed 0 in the model's colour, seeds 1-4 lighter (`SEED_SHADES`), seeds 5-9
  darker, and so on alternately. A model drawn in black (the dense ViT) has no darker shade: its
  seeds 5-9 are black like seed 0, so a figure of more of its seeds gives each its own colour
  (`SEED_PALETTE`, as `mone.chapters.calibration.figure` does)."""
  if not isinstance(seed, numbers.Integral) or seed < 0:
    raise ValueError(f"seed must be an int >= 0, got {seed!r}")
  shade = SEED_SHADES[int(seed) % len(SEED_SHADES)]
  if (int(seed) // len(SEED_SHADES)) % 2:  # seeds 5-9: towards black, so that no two of ten seeds of a colour look alike
    return _mix(model_color(label), "black", 0.15 + 0.6 * shade)
  return _mix(model_color(label), "white", shade)


def capacity_color(e_c: float) -> tuple:
  """The colour of MoNE trained at capacity e_c in (0, 1] (Figure 5: one model per training
  capacity), on seaborn's 'flare' ramp: light orange at low capacity, dark purple at full."""
  import seaborn as sns
  if not 0 < e_c <= 1:
    raise ValueError(f"e_c must be in (0, 1], got {e_c!r}")
  return tuple(sns.color_palette("flare", as_cmap=True)(min(1.0, max(0.0, (e_c - 0.1) / 0.8)))[:3])


def _light(color) -> tuple:
  """A model's colour mixed halfway to white: its seed-range bars, under the mean's marker."""
  return _mix(color, "white", 0.5)


def flops_unit(gflops) -> tuple[float, str]:
  """(factor, unit) such that gflops / factor reads in `unit` with values of at least about 1:
  (1e-3, 'MFLOPs') for the small profile's 0.009 GFLOPs."""
  vals = [abs(float(g)) for g in gflops if g]
  if not vals:
    raise ValueError("gflops must hold at least one non-zero value")
  top = max(vals)
  return next(((f, u) for f, u in _UNITS if top >= f), _UNITS[-1])


def flops_axis(ax, gflops, per: str = "image") -> float:
  """Labels ax's x axis in the unit `flops_unit` picks for gflops ('MFLOPs per image') and
  returns the factor to divide GFLOPs by before plotting."""
  factor, unit = flops_unit(gflops)
  ax.set_xlabel(f"inference {unit} per {per}")
  return factor


def points_frame(by_seed: dict):
  """The tidy table of plot points over seeds: one row per (seed, curve, point) of `by_seed`
  ({seed: {key: points}}, as `headlines.curves_by_seed` gives them, or Figure 5's curves by
  seed), a key being (panel, model) or a model alone (panel None). Columns: seed, panel, model
  and the points' own (gflops, accuracy_pct, e_c, width_index, ...). A point's FLOPs do not
  depend on the seed, so every seed's copy of a point (same e_c and width) takes the first
  seed's FLOPs: seaborn groups the seeds of a point by its x."""
  import pandas as pd
  rows = [{**p, "seed": seed, "panel": key[0] if isinstance(key, tuple) else None,
           "model": key[1] if isinstance(key, tuple) else key}
          for seed in sorted(by_seed) for key, pts in by_seed[seed].items() for p in pts]
  df = pd.DataFrame(rows, columns=list(dict.fromkeys(["seed", "panel", "model", "gflops", "accuracy_pct",
                                                      *(k for r in rows for k in r)])))
  point = [k for k in ("panel", "model", "e_c", "width_index") if k in df]
  if len(df):
    df["gflops"] = df.groupby(point, dropna=False, sort=False)["gflops"].transform("first")
  return df


def mean_and_seeds(ax, df, x: str, color, label: str | None, dots: bool = True, **line):
  """A curve of the mean over seeds at each x with the seeds' range as a bar (seaborn's
  percentile interval at 100: from the lowest seed to the highest) and, with dots, each seed."""
  import seaborn as sns
  line = {"marker": "o", **line}
  sns.lineplot(df, x=x, y="accuracy_pct", estimator="mean", errorbar=("pi", 100), err_style="bars", color=color,
               label=label, err_kws={"ecolor": _light(color), "elinewidth": 2.5}, ax=ax, **line)
  if dots:
    sns.scatterplot(df, x=x, y="accuracy_pct", color=color, s=10, alpha=0.5, linewidth=0, legend=False, ax=ax)
# Figures 3 and 4: accuracy against inference FLOPs, one panel per model size or task. The
# colours are MODEL_COLORS'; these are the markers and lines (the single-model points unjoined).
CURVE_STYLE = {"MatViT": dict(marker="s"), "MatViViT": dict(marker="s"),
               "ViT": dict(marker="*", markersize=14, linestyle="none"), "ViViT": dict(marker="*", markersize=14, linestyle="none"),
               "MoD": dict(marker="^", markersize=9, linestyle="none"), "MoNE": dict(marker="o"),
               "MoNE-isoFLOPs": dict(marker="D", linestyle="none")}


def accuracy_flops_figure(by_seed: dict, titles: dict, dense: str, per: str = "image"):
  """One panel per key of `titles` (a model variant or a task): each model of `by_seed`
  ({seed: {(key, model): points with 'gflops' and 'accuracy_pct'}}, as
  `headlines.curves_by_seed`) as its mean over seeds (a line in `CURVE_STYLE`, the colour of
  `MODEL_COLORS`), the seeds' range at each point (a bar) and each seed (a dot), and a dotted
  line at the dense model's (`dense`) mean accuracy."""
  import matplotlib.pyplot as plt
  theme()
  df = points_frame(by_seed)
  fig, axes = plt.subplots(1, len(titles), figsize=(max(4.8 * len(titles), 9.6 if len(titles) > 1 else 4.8), 3.8),
                           squeeze=False)
  for (key, title), ax in zip(titles.items(), axes[0]):
    panel = df[df["panel"] == key]
    unit = flops_axis(ax, panel["gflops"], per=per)
    panel = panel.assign(flops=panel["gflops"] / unit)
    for label, style in CURVE_STYLE.items():
      pts = panel[panel["model"] == label]
      if len(pts):
        mean_and_seeds(ax, pts, "flops", model_color(label), label, **style)
    ax.axhline(panel.loc[panel["model"] == dense, "accuracy_pct"].mean(), color=model_color(dense), lw=0.6, ls=":")
    ax.set(title=textwrap.fill(title, 60), ylabel="top-1 accuracy (%)")  # side by side, long titles ran into each other
  axes[0, 0].legend(fontsize=9)
  for ax in axes[0, 1:]:
    if ax.get_legend():
      ax.get_legend().remove()
  fig.tight_layout()
  return fig


def _seeds_and_mean(ax, df, cat: str, value: str, order, palette: dict, horizontal: bool = False, mean_size: float = 22):
  """Each category's seeds (dots, a strip plot) and their mean (a bar across the dots), in the
  categories' colours (palette: category -> colour)."""
  import seaborn as sns
  xy = dict(x=value, y=cat) if horizontal else dict(x=cat, y=value)
  sns.stripplot(df, **xy, order=order, hue=cat, hue_order=order, palette=palette, size=5, alpha=0.6, jitter=False,
                legend=False, ax=ax)
  sns.pointplot(df, **xy, order=order, hue=cat, hue_order=order, palette=palette, estimator="mean", errorbar=None,
                markers="|" if horizontal else "_", markersize=mean_size, markeredgewidth=2.5, linestyles="none",
                legend=False, ax=ax)


# Eq. 3's SLSQP capacities differ by up to 5e-9 between OPENBLAS_CORETYPE values on one machine;
# at 4 decimals (finer than the chapter's table, 3, and than a pixel) a difference that small
# changes a rounded value only where it straddles a rounding boundary: about 1 value in 20,000.
CAPACITY_DECIMALS = 4


def capacity_distribution_figure(e_c, dist, widths: list[str]):
  """Eq. 3's capacity distribution across e_c: each expert's fraction of tokens (`dist[k][i]`, at
  `e_c[k]`, smallest expert first), stacked. Drawn from the fractions rounded to CAPACITY_DECIMALS,
  because the solver's last bits depend on the BLAS kernels a machine selects: unrounded, they moved
  the SVG's coordinates (and its path ids) from machine to machine."""
  import matplotlib.pyplot as plt
  import numpy as np
  theme()
  e_c, dist = np.round(np.asarray(e_c, float), CAPACITY_DECIMALS), np.round(np.asarray(dist, float), CAPACITY_DECIMALS)
  fig, ax = plt.subplots(figsize=(6, 3.6))
  ax.stackplot(e_c, dist.T, labels=[f"expert {i + 1} ({w})" for i, w in enumerate(widths)], alpha=0.85)
  ax.set(xlabel="effective capacity $e_c$", ylabel="fraction of tokens $c_i$", xlim=(e_c[0], e_c[-1]), ylim=(0, 1),
         title="Capacity distribution of Eq. 3 across $e_c$")
  ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)  # beside the areas, not over them
  fig.tight_layout()
  return fig


def table1_figure(rows: list[dict], order: list[str], title: str):
  """Table 1 as a figure: for each arm of `order` (an allocation at its e_c, the tick label), its
  seeds' accuracies (dots) and their mean (bar) in the allocation's colour. rows: one per seed
  and arm, with 'arm', 'model' (the allocation's name in MODEL_COLORS) and 'accuracy_pct'."""
  import matplotlib.pyplot as plt
  import pandas as pd
  theme()
  df = pd.DataFrame(rows, columns=["arm", "model", "accuracy_pct"])
  model = dict(zip(df["arm"], df["model"]))
  fig, ax = plt.subplots(figsize=(6.4, 3.4))
  if len(df):
    _seeds_and_mean(ax, df, "arm", "accuracy_pct", order, {a: model_color(model.get(a, "MoNE")) for a in order})
  ax.set_xticks(range(len(order)), labels=order, fontsize=8)
  ax.set(xlabel="", ylabel="top-1 accuracy (%)", title=title, xlim=(-0.5, len(order) - 0.5))
  fig.tight_layout()
  return fig


def adaptation_figure(by_seed: dict, title: str, per: str = "image"):
  """Figure 5: each model's accuracy over the inference budgets it was evaluated at, the mean
  over seeds with the seeds' range as a bar (`by_seed`: {seed: {label: points}}; a model trained
  at one e_c in `capacity_color`, the adaptive model, label 'Train Adaptive', dashed), a star at
  each model's training e_c, and the budgets on the top axis (the adaptive model's, if there is one)."""
  import matplotlib.pyplot as plt
  theme()
  df = points_frame(by_seed)
  fig, ax = plt.subplots(figsize=(6, 4.2))
  unit = flops_axis(ax, df["gflops"], per=per)
  df = df.assign(flops=df["gflops"] / unit)
  labels = sorted(dict.fromkeys(df["model"]), key=lambda l: (l == "Train Adaptive", df.loc[df["model"] == l, "train_e_c"].min()))
  for label in labels:  # by training capacity, the adaptive model last
    pts = df[df["model"] == label]
    adaptive = label == "Train Adaptive"
    color = model_color(label) if adaptive else capacity_color(pts["train_e_c"].iloc[0])
    mean_and_seeds(ax, pts, "flops", color, label, dots=False, markersize=4, linestyle="--" if adaptive else "-")
    star = pts[pts["e_c"] == pts["train_e_c"]].groupby("flops")["accuracy_pct"].mean()
    ax.plot(star.index, star.values, "*", ms=16, color=color)
  top = ax.secondary_xaxis("top")  # the budgets of the adaptive model's curve (or, before it exists, the longest)
  ref = df[df["model"] == "Train Adaptive"]
  if not len(ref):
    ref = df[df["model"] == df.groupby("model", sort=False)["e_c"].nunique().idxmax()]
  budgets = ref.drop_duplicates("e_c").sort_values("e_c")
  top.set_xticks(list(budgets["flops"]), labels=[f"{e:g}" for e in budgets["e_c"]])
  top.set_xlabel("inference $e_c$")
  ax.set(ylabel="top-1 accuracy (%)", title=title)
  ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # beside the curves, not over them
  fig.tight_layout()
  return fig


def learning_curves_figure(runs: dict, title: str = "", colors: dict | None = None, legend_title: str | None = None):
  """Learning curves of finished runs ({label: metrics with `curve`, or a list of them: the seeds
  of one setup, drawn alike, thinner and fainter, and named once}): accuracy on validation (solid)
  and on the fixed training images (dashed) per step, and the training loss, so a reader sees
  whether each run has stopped improving and how far training runs ahead of validation. colors:
  label -> colour (the seeds of one model: `seed_color` or `SEED_PALETTE`); by default the theme's
  cycle. The labels are named once, below both panels, under `legend_title` (what every label
  shares, e.g. the recipe of seeds named 'seed 0', 'seed 1': up to ten in one row where the labels
  are that short). Each run is drawn as it was logged (no statistic over runs), so with
  matplotlib's own lines."""
  import matplotlib.pyplot as plt
  from matplotlib.lines import Line2D
  theme()
  colors = colors or {label: f"C{i}" for i, label in enumerate(runs)}
  fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"wspace": 0.25})
  for label, ms in runs.items():
    # a setup's seeds thinner and fainter, under the single runs: a bundle of ten would hide them
    bundle = dict(lw=1.0, alpha=0.6, zorder=1.5) if isinstance(ms, list) else dict(zorder=2.5)
    for i, m in enumerate(ms if isinstance(ms, list) else [ms]):
      curve, color = m["curve"], colors[label]
      step = [p["step"] for p in curve]
      if curve[0]["val_accuracy"] is not None:
        acc.plot(step, [100 * p["val_accuracy"] for p in curve], "-o", ms=2 if isinstance(ms, list) else 3, color=color, **bundle)
      acc.plot(step, [100 * p["train_accuracy"] for p in curve], "--", color=color, **bundle)
      loss.plot(step, [p["train_loss"] for p in curve], "-", color=color, label=label if i == 0 else "_" + label, **bundle)
  acc.set(xlabel="training step", ylabel="top-1 accuracy (%)", title="accuracy")
  loss.set(xlabel="training step", ylabel="training loss (mean since the previous point)", title="loss")
  # Line styles in the accuracy panel, runs (colours) once below both: a legend per curve hid them.
  acc.legend([Line2D([], [], color="0.3", ls="-", marker="o", ms=3), Line2D([], [], color="0.3", ls="--")],
             ["validation", "training images"], fontsize=8, loc="lower right")
  short = len(runs) <= 10 and all(len(label) <= 12 for label in runs)  # 'seed 0' ... 'seed 9': one row
  fig.legend(*loss.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
             ncol=len(runs) if short else 2, fontsize=8, title=legend_title, title_fontsize=8, frameon=False,
             **(dict(handlelength=1.6, columnspacing=1.2) if short else {}))
  if title:
    fig.suptitle(title, y=1.02)
  return fig
