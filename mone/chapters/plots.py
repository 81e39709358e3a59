"""Plotting helpers the chapters share: one theme, one colour per model, and the seed spreads.

Every figure of the book is drawn in one theme (`theme`: seaborn's whitegrid on its colourblind
palette) and gives each model one colour in every chapter (`MODEL_COLORS`, looked up by
`model_color` from the labels the chapters use): MoNE is always vermillion, the dense ViT (ViViT)
black, MatViT (MatViViT) blue. Where seeds of one model are told apart, each is a shade of the
model's colour (`seed_color`); Figure 5's MoNE models, one per training capacity, are shades of a
warm ramp (`capacity_color`).

The statistics are seaborn's, drawn from a tidy table with one row per seed and point
(`points_frame`): a mean over seeds with the seeds' range as a bar, the seeds themselves as dots,
a claim's paired differences with the t-interval its verdict rests on (`claims.paired_ci`). The
functions take plain data (dicts, lists of dicts), so they are tested without training.

The small profile's models cost around 10 MFLOPs per image, so an axis in GFLOPs gets a `1e-2`
offset that a reader has to multiply in; `flops_unit` picks the unit that makes the numbers
readable.
"""
import math
import numbers
import textwrap

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
KIND_NAMES = {"vit": "ViT", "matvit": "MatViT", "mone": "MoNE", "mod": "MoD"}
# Other names the chapters give these models: run kinds, chapter 07's routers, Figure 5's adaptive model.
_ALIASES = {**KIND_NAMES, "learned router": "MoNE", "random router": "MoNE, random router",
            "MoNE adaptive, isoFLOPs": "MoNE adaptive", "Train Adaptive": "MoNE adaptive"}
# How far seed s's colour is mixed towards white (seed s % 5): seed 0 in the model's own colour.
SEED_SHADES = (0.0, 0.3, 0.5, 0.65, 0.78)
# The verdicts' colours in the claims figure.
VERDICT_COLORS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:gray",
                  "not testable": "0.7"}


def save_png(fig, path, dpi: int) -> None:
  """Writes fig to path as a PNG atomically (a temporary file in the same folder, then os.replace:
  a reader never sees half a figure) and closes it. No version stamp in the file, so it changes
  only with its data. For the landing step's figures, which `claims.main` draws outside a chapter
  (`experiments.save_figure` writes a chapter's)."""
  import os
  from pathlib import Path
  import matplotlib.pyplot as plt
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_name(f".{path.name}.tmp.png")
  fig.savefig(tmp, dpi=dpi, metadata={"Software": None})
  plt.close(fig)
  os.replace(tmp, path)


def theme():
  """Applies the book's theme (`THEME`) to matplotlib's rcParams. Every plotting function here
  calls it first; a chapter that draws with matplotlib itself calls it once before."""
  import seaborn as sns
  sns.set_theme(**THEME)


def model_color(label: str) -> str:
  """The colour of the model a label names (`MODEL_COLORS`): a model ('MatViT'), a run kind
  ('mone'), or a chapter's run label ('temporal: MoNE e_c=0.3', 'MoNE e_c=0.3, random router',
  'Table 1: Greedy e_c=0.4'), whose task prefix and capacity are not the model."""
  name = label.rpartition(": ")[2]
  name = _ALIASES.get(name, name)
  if name in MODEL_COLORS:
    return MODEL_COLORS[name]
  for suffix, model in ((", random router", "MoNE, random router"), (", isoFLOPs", "MoNE-isoFLOPs")):
    if name.endswith(suffix):
      return MODEL_COLORS[model]
  base = name.partition(" e_c=")[0]  # 'MoNE e_c=0.3, 2 routers' is MoNE
  if base in MODEL_COLORS:
    return MODEL_COLORS[base]
  raise ValueError(f"label must name a model of MODEL_COLORS (or a run kind or run label of one), got {label!r}")


def _mix(color, towards, amount: float) -> tuple:
  from matplotlib.colors import to_rgb
  return tuple(c + (t - c) * amount for c, t in zip(to_rgb(color), to_rgb(towards)))


def seed_color(label: str, seed: int) -> tuple:
  """Seed `seed`'s shade of the model's colour (`model_color`), for figures that tell the seeds
  of one model apart: seed 0 in the model's colour, later seeds lighter (`SEED_SHADES`)."""
  if not isinstance(seed, numbers.Integral) or seed < 0:
    raise ValueError(f"seed must be an int >= 0, got {seed!r}")
  return _mix(model_color(label), "white", SEED_SHADES[int(seed) % len(SEED_SHADES)])


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


def _mean_and_seeds(ax, df, x: str, color, label: str | None, dots: bool = True, **line):
  """A curve of the mean over seeds at each x with the seeds' range as a bar (seaborn's
  percentile interval at 100: from the lowest seed to the highest) and, with dots, each seed."""
  import seaborn as sns
  line = {"marker": "o", **line}
  sns.lineplot(df, x=x, y="accuracy_pct", estimator="mean", errorbar=("pi", 100), err_style="bars", color=color,
               label=label, err_kws={"ecolor": _light(color), "elinewidth": 2.5}, ax=ax, **line)
  if dots:
    sns.scatterplot(df, x=x, y="accuracy_pct", color=color, s=10, alpha=0.5, linewidth=0, legend=False, ax=ax)


def _region(claim):
  """The interval of (MoNE - baseline) that reproduces the claim, for shading."""
  tol = claim.get("tolerance") or 0.0
  return {"matches": (-tol, tol), "no_worse": (-tol, math.inf), "beats": (0.0, math.inf)}[claim["relation"]]


def _paired_ci(values) -> tuple[float, float]:
  """The claims' 95% t-interval of a mean of paired differences (`claims.paired_ci`), as
  seaborn's errorbar: the bar is the interval the verdict rests on, not a bootstrap's."""
  from mone.chapters import claims
  return claims.paired_ci(list(values))[1:]


def claims_figure(claims: list[dict], title: str = ""):
  """One row per trained claim, paired (`claims.PAIRING`): the per-seed differences (dots, a strip plot), their mean and
  95% CI (diamond and bar, a point plot with the claims' own t-interval, coloured by verdict)
  and the region that reproduces the claim (green band). Returns the figure, or None when no
  claim was decided from trained models."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  from matplotlib.lines import Line2D
  theme()
  rows = [c for c in claims if c["kind"] == "trained" and c.get("per_seed")]
  if not rows:
    return None
  if unpaired := [c["id"] for c in rows if c.get("test") == "welch"]:
    # Its per-seed differences pair nothing, and its interval is Welch's, not the one drawn here.
    raise ValueError(f"claims_figure draws paired differences; these claims are unpaired (Welch): {unpaired}")
  df = pd.DataFrame([{"claim": c["id"], "difference": v} for c in rows for v in c["per_seed"]])
  order = [c["id"] for c in rows]  # first on top: seaborn puts a categorical y axis's first level there
  fig, ax = plt.subplots(figsize=(7.5, 0.75 * len(rows) + 1.3))
  values = [v for c in rows for v in c["per_seed"] + (c["ci95"] or [])]
  lo, hi = min(values + [0.0]), max(values + [0.0])
  pad = 0.1 * (hi - lo or 1.0)
  lo, hi = lo - pad, hi + pad
  for y, c in enumerate(rows):
    a, b = _region(c)
    ax.fill_betweenx([y - 0.35, y + 0.35], max(a, lo), min(b, hi), color="tab:green", alpha=0.12, lw=0)
  palette = {c["id"]: VERDICT_COLORS[c["verdict"]] for c in rows}
  sns.pointplot(df, x="difference", y="claim", order=order, hue="claim", hue_order=order, palette=palette, estimator="mean",
                errorbar=_paired_ci, markers="D", markersize=7, linestyles="none", err_kws={"linewidth": 3},
                legend=False, ax=ax)
  sns.stripplot(df, x="difference", y="claim", order=order, color="k", size=4, alpha=0.7, jitter=False, zorder=3, ax=ax)
  for y, c in enumerate(rows):
    ax.annotate(f"{c['verdict']} ({c['n_seeds']} seed{'s' * (c['n_seeds'] != 1)})", (hi, y), xytext=(4, 0),
                textcoords="offset points", va="center", fontsize=8, color=palette[c["id"]], annotation_clip=False)
  ax.axvline(0, color="k", lw=0.6)
  ax.tick_params(axis="y", labelsize=8)
  ax.set_xlim(lo, hi)
  ax.set_xlabel("MoNE minus baseline (accuracy points; diamond: mean, bar: 95% CI, band: what the claim needs)", fontsize=8)
  ax.set_ylabel("")
  ax.set_title(title or "The trained claims, seed by seed", fontsize=10)
  ax.legend([Line2D([], [], ls="none", marker="o", color="k", ms=4, alpha=0.7)], ["one seed"], fontsize=8, loc="lower left")
  fig.tight_layout()
  return fig


def outline_tokens(ax, selected, patch: int, grid: int, color: str = "yellow", lw: float = 1.6) -> int:
  """Draws a square around every selected token (bool [grid * grid], patch order) of an image
  shown with ax.imshow; readable on dark frames, where fading or tinting tokens is not.
  Returns the number of tokens outlined."""
  from matplotlib.patches import Rectangle
  import numpy as np
  sel = np.asarray(selected, bool).reshape(grid, grid)
  for r, c in zip(*np.nonzero(sel)):
    ax.add_patch(Rectangle((c * patch - 0.5, r * patch - 0.5), patch, patch, fill=False, edgecolor=color, lw=lw))
  return int(sel.sum())


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
        _mean_and_seeds(ax, pts, "flops", model_color(label), label, **style)
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


def seeds_figure(study: dict, title: str):
  """Each model of a seed study (`analysis.seed_study`) on its own row: its seeds' accuracies
  (dots) and their mean (bar), in the model's colour, so that the spread behind each mean is
  visible."""
  import matplotlib.pyplot as plt
  import pandas as pd
  theme()
  df = pd.DataFrame([{"model": label, "accuracy_pct": a} for label, r in study.items() for a in r["accuracy_pct"]])
  fig, ax = plt.subplots(figsize=(6.4, 0.6 * len(study) + 1.2))
  _seeds_and_mean(ax, df, "model", "accuracy_pct", list(study), {k: model_color(k) for k in study}, horizontal=True, mean_size=18)
  ax.set_yticks(range(len(study)), [f"{k}\n({v['gflops'] * 1e3:.1f} MFLOPs)" for k, v in study.items()], fontsize=8)
  ax.set(xlabel="top-1 accuracy (%)", ylabel="", title=title)
  fig.tight_layout()
  return fig


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
  ax.legend(loc="upper left", fontsize=8)
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


def token_grid(images, selected: dict, patch: int, masks=None, title: str = "", cols: int = 4):
  """One row per key of `selected` (bool [n, N]: the tokens shown in full; the rest are dimmed)
  over the first `cols` images, the object's outline in red where `masks` are given."""
  import matplotlib.pyplot as plt
  from mone.chapters import routers
  theme()
  fig, axes = plt.subplots(len(selected), cols, figsize=(1.9 * cols, 2 * len(selected) + 0.4), squeeze=False)
  for row, (name, sel) in zip(axes, selected.items()):
    for i, ax in enumerate(row):
      ax.imshow(routers.highlight_tokens(images[i], sel[i], patch))
      if masks is not None:
        ax.contour(masks[i], levels=[0.5], colors="red", linewidths=0.6)
      ax.set_xticks([]), ax.set_yticks([])
    row[0].set_ylabel(name)
  fig.suptitle(title)
  fig.tight_layout()
  return fig


def overlap_figure(rows: list[dict], title: str):
  """Precision, recall and IoU (in %) of each row of `routers.overlap` results, grouped bars in
  each router's colour (the learned router is MoNE's)."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  theme()
  metrics = {"precision": "precision", "recall": "recall", "iou": "IoU"}
  df = pd.DataFrame([{"router": r["router"], "metric": name, "pct": 100 * r[m]} for r in rows for m, name in metrics.items()])
  routers = [r["router"] for r in rows]
  fig, ax = plt.subplots(figsize=(5.5, 3.2))
  sns.barplot(df, x="metric", y="pct", hue="router", order=list(metrics.values()), hue_order=routers,
              palette={r: model_color(r) for r in routers}, errorbar=None, saturation=1, ax=ax)
  ax.set(xlabel="", ylabel="% (mean over test images)", title=title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def expert_share_figure(share: list[dict], names: list[str], title: str):
  """Where EPR sends the object tokens (`routers.expert_object_share` rows, with 'seed' and the
  expert's name 'width'): the share of object tokens among each expert's, one bar per seed in
  the seed's shade of MoNE's colour, and the base rate a router blind to the object gives."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  theme()
  df = pd.DataFrame(share).assign(run=lambda d: [f"seed {s}" for s in d["seed"]])
  seeds = list(dict.fromkeys(df["seed"]))
  fig, ax = plt.subplots(figsize=(6.0, 3.4))
  sns.barplot(df, x="width", y="object_share_pct", hue="run", order=names, hue_order=[f"seed {s}" for s in seeds],
              palette={f"seed {s}": seed_color("MoNE", s) for s in seeds}, errorbar=None, saturation=1, ax=ax)
  first = df[df["seed"] == seeds[0]].set_index("width")
  ax.axhline(first["object_pct"].iloc[0], color="k", ls="--", lw=1, label="base rate (blind router)")
  ax.set_xticks(range(len(names)), [f"{n}\n{first.loc[n, 'tokens_pct']:.0f}% of tokens" for n in names])
  ax.set(xlabel="", ylabel="object tokens among the expert's (%)", title=title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def video_tokens_figure(video, full, tubelet: int, patch: int, masks=None, labels=None, title: str = "", clips: int = 2):
  """For the first `clips` clips (rows), the first frame of every temporal index (columns) with
  the tokens the full model processes outlined (`full`: bool [n, T', N]) and, where `masks` are
  given, the moving objects in red."""
  import matplotlib.pyplot as plt
  theme()
  nt = full.shape[1]
  fig, axes = plt.subplots(clips, nt, figsize=(2.2 * nt, 2.5 * clips), squeeze=False)
  for i, row in enumerate(axes):
    for t, ax in enumerate(row):
      ax.imshow(video[i, t * tubelet])
      if masks is not None:
        ax.contour(masks[i, t * tubelet], levels=[0.5], colors="red", linewidths=0.8)
      outline_tokens(ax, full[i, t], patch, video.shape[2] // patch)
      ax.set_xticks([]), ax.set_yticks([])
      if i == 0:
        ax.set_title(f"temporal index {t}\n(frame {t * tubelet})", fontsize=10)
    row[0].set_ylabel(f"test clip {i + 1}" + ("" if labels is None else f"\n(label {labels[i]})"), fontsize=10)
  fig.suptitle(title, fontsize=11)
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
    _mean_and_seeds(ax, pts, "flops", color, label, dots=False, markersize=4, linestyle="--" if adaptive else "-")
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
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def learning_curves_figure(runs: dict, title: str = "", colors: dict | None = None):
  """Learning curves of finished runs ({label: metrics with `curve`}): accuracy on validation
  (solid) and on the fixed training images (dashed) per step, and the training loss, so a reader
  sees whether each run has stopped improving and how far training runs ahead of validation.
  colors: label -> colour (the seeds of one model: `seed_color`); by default the theme's cycle.
  Each run is drawn as it was logged (no statistic over runs), so with matplotlib's own lines."""
  import matplotlib.pyplot as plt
  from matplotlib.lines import Line2D
  theme()
  colors = colors or {label: f"C{i}" for i, label in enumerate(runs)}
  fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"wspace": 0.25})
  for label, m in runs.items():
    curve, color = m["curve"], colors[label]
    step = [p["step"] for p in curve]
    if curve[0]["val_accuracy"] is not None:
      acc.plot(step, [100 * p["val_accuracy"] for p in curve], "-o", ms=3, color=color)
    acc.plot(step, [100 * p["train_accuracy"] for p in curve], "--", color=color)
    loss.plot(step, [p["train_loss"] for p in curve], "-", color=color, label=label)
  acc.set(xlabel="training step", ylabel="top-1 accuracy (%)", title="accuracy")
  loss.set(xlabel="training step", ylabel="training loss (mean since the previous point)", title="loss")
  # Line styles in the accuracy panel, runs (colours) once below both: a legend per curve hid them.
  acc.legend([Line2D([], [], color="0.3", ls="-", marker="o", ms=3), Line2D([], [], color="0.3", ls="--")],
             ["validation", "training images"], fontsize=8, loc="lower right")
  fig.legend(*loss.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
             ncol=2, fontsize=8, frameon=False)
  if title:
    fig.suptitle(title, y=1.02)
  return fig


def router_figure(study: dict, e_c: float, router_counts, title: str):
  """Figure 6 (`study`: {study: {value: {seed: point}}} for 'curve' (MoNE over e_c, router at
  layer 0), 'router position', 'number of routers', 'learned router' and 'random router'):
  (a) the layer-0 curve as a mean over seeds with the seeds' range, and each seed's run with the
  router later (marker: layer, shade: seed); (b) each seed's accuracy by number of routers;
  (c) the learned and the random router over e_c, means with the seeds' range."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  theme()
  frame = lambda name: pd.DataFrame([{"value": v, "seed": s, **p} for v, by_seed in study.get(name, {}).items()
                                     for s, p in by_seed.items()], columns=["value", "seed", "gflops", "accuracy_pct"])
  curve, later = frame("curve"), frame("router position")
  later = later[later["value"] != 0]  # layer 0 is the curve's own run at this e_c
  fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")  # the FLOPs axes need it
  ax = axes[0]
  unit = flops_axis(ax, list(curve["gflops"]) + list(later["gflops"]))
  if len(curve):
    _mean_and_seeds(ax, curve.assign(flops=curve["gflops"] / unit), "flops", model_color("MoNE"),
                    "layer 0, $e_c$ sweep (seed mean)")
  if len(later):  # each seed's run with the router later: marker by layer, shade by seed, one legend entry each
    later = later.assign(flops=later["gflops"] / unit, run=[f"seed {s}" for s in later["seed"]])
    marker = dict(zip(dict.fromkeys(later["value"]), "s^DvP<>"))
    sns.scatterplot(later, x="flops", y="accuracy_pct", hue="run", style="value", s=70, markers=marker, legend=False,
                    palette={f"seed {s}": seed_color("MoNE", s) for s in later["seed"]}, ax=ax)
    for layer, s in zip(later["value"], later["seed"]):
      ax.plot([], [], ls="none", marker=marker[layer], ms=8, color=seed_color("MoNE", s), label=f"layer {layer}, $e_c$={e_c}, seed {s}")
  ax.set(title="(a) router position", ylabel="top-1 accuracy (%)")
  ax.legend(fontsize=9)
  ax = axes[1]
  counts = frame("number of routers")
  if len(counts):
    counts = counts.assign(run=[f"seed {s}" for s in counts["seed"]])
    sns.lineplot(counts, x="value", y="accuracy_pct", hue="run", estimator=None, marker="o",
                 palette={f"seed {s}": seed_color("MoNE", s) for s in counts["seed"]}, ax=ax)
  ax.set(title=f"(b) number of routers, $e_c$={e_c}", xlabel="routers (evenly spaced from layer 0)",
         ylabel="top-1 accuracy (%)", xticks=list(router_counts))
  if ax.get_legend():
    ax.legend(fontsize=9)
  ax = axes[2]
  both = pd.concat([frame("learned router").assign(model="MoNE"), frame("random router").assign(model="MoNE, random router")])
  unit = flops_axis(ax, list(both["gflops"]) or list(curve["gflops"]))
  for model, name, style in (("MoNE", "learned router", dict(marker="o")), ("MoNE, random router", "random router",
                                                                          dict(marker="s", linestyle="--"))):
    pts = both[both["model"] == model]
    if len(pts):
      _mean_and_seeds(ax, pts.assign(flops=pts["gflops"] / unit), "flops", model_color(model), f"MoNE, {name} (seed mean)", **style)
  ax.set(title="(c) learned vs random router", ylabel="top-1 accuracy (%)")
  ax.legend(fontsize=10)
  for ax in axes:
    for item in [ax.title, ax.xaxis.label, ax.yaxis.label] + ax.get_xticklabels() + ax.get_yticklabels():
      item.set_fontsize(11)
  fig.suptitle(title, fontsize=13)
  return fig
