"""Plotting helpers the chapters share: readable FLOPs axes and a picture of each claim's seeds.

The small profile's models cost around 10 MFLOPs per image, so an axis in GFLOPs gets a
`1e-2` offset that a reader has to multiply in; `flops_unit` picks the unit that makes the
numbers readable. `claims_figure` draws every trained claim of a chapter: the per-seed
differences (MoNE minus baseline), their mean with the 95% CI, and the region the claim needs,
so that the seed spread behind a verdict is visible, not only printed.
"""
import math

_UNITS = ((1.0, "GFLOPs"), (1e-3, "MFLOPs"), (1e-6, "kFLOPs"))

VERDICT_COLORS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:gray",
                  "not testable": "0.7"}


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


def _region(claim):
  """The interval of (MoNE - baseline) that reproduces the claim, for shading."""
  tol = claim.get("tolerance") or 0.0
  return {"matches": (-tol, tol), "no_worse": (-tol, math.inf), "beats": (0.0, math.inf)}[claim["relation"]]


def claims_figure(claims: list[dict], title: str = ""):
  """One row per trained claim: the per-seed differences (dots), their mean and 95% CI (bar,
  coloured by verdict) and the region that reproduces the claim (green band). Returns the
  figure, or None when no claim was decided from trained models."""
  import matplotlib.pyplot as plt
  rows = [c for c in claims if c["kind"] == "trained" and c.get("per_seed")]
  if not rows:
    return None
  fig, ax = plt.subplots(figsize=(7.5, 0.75 * len(rows) + 1.3))
  values = [v for c in rows for v in c["per_seed"] + (c["ci95"] or [])]
  lo, hi = min(values + [0.0]), max(values + [0.0])
  pad = 0.1 * (hi - lo or 1.0)
  lo, hi = lo - pad, hi + pad
  for i, c in enumerate(rows):
    y = len(rows) - 1 - i
    a, b = _region(c)
    ax.fill_betweenx([y - 0.35, y + 0.35], max(a, lo), min(b, hi), color="tab:green", alpha=0.12, lw=0)
    ax.plot(c["per_seed"], [y] * len(c["per_seed"]), "o", color="k", ms=4, alpha=0.7,
            label="one seed" if i == 0 else None)
    color = VERDICT_COLORS[c["verdict"]]
    if c["ci95"]:
      ax.plot(c["ci95"], [y, y], color=color, lw=3, solid_capstyle="butt")
    ax.plot([c["measured"]], [y], "D", color=color, ms=7)
    ax.annotate(f"{c['verdict']} ({c['n_seeds']} seed{'s' * (c['n_seeds'] != 1)})", (hi, y), xytext=(4, 0),
                textcoords="offset points", va="center", fontsize=8, color=color, annotation_clip=False)
  ax.axvline(0, color="k", lw=0.6)
  ax.set_yticks(range(len(rows)), [c["id"] for c in rows][::-1], fontsize=8)
  ax.set_xlim(lo, hi)
  ax.set_ylim(-0.6, len(rows) - 0.4)
  ax.set_xlabel("MoNE minus baseline (accuracy points; diamond: mean, bar: 95% CI, band: what the claim needs)", fontsize=8)
  ax.grid(alpha=0.3, axis="x")
  ax.set_title(title or "The trained claims, seed by seed", fontsize=10)
  ax.legend(fontsize=8, loc="lower left")
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


# Figures 3 and 4: accuracy against inference FLOPs, one panel per model size or task.
CURVE_STYLE = {"MatViT": dict(marker="s", color="tab:blue"), "MatViViT": dict(marker="s", color="tab:blue"),
               "ViT": dict(marker="*", ms=14, ls="none", color="k"), "ViViT": dict(marker="*", ms=14, ls="none", color="k"),
               "MoD": dict(marker="^", ms=9, ls="none", color="tab:green"), "MoNE": dict(marker="o", color="tab:red"),
               "MoNE-isoFLOPs": dict(marker="D", ls="none", color="tab:purple")}


def accuracy_flops_figure(curves: dict, titles: dict, dense: str, per: str = "image"):
  """One panel per key of `titles` (a model variant or a task): each curve `curves[key, label]`
  (points with 'gflops' and 'accuracy_pct') in `CURVE_STYLE[label]`, and a dotted line at the
  dense model's (label `dense`) accuracy. Means over seeds (`analysis.mean_curves`) show each
  point's range over the seeds as a bar."""
  import matplotlib.pyplot as plt
  fig, axes = plt.subplots(1, len(titles), figsize=(max(4.8 * len(titles), 9.6 if len(titles) > 1 else 4.8), 3.8),
                           squeeze=False)
  for (key, title), ax in zip(titles.items(), axes[0]):
    unit = flops_axis(ax, [p["gflops"] for (k, _), pts in curves.items() if k == key for p in pts], per=per)
    for label, style in CURVE_STYLE.items():
      pts = sorted(curves.get((key, label), []), key=lambda p: p["gflops"])
      if pts:
        ax.plot([p["gflops"] / unit for p in pts], [p["accuracy_pct"] for p in pts], label=label, **style)
      if pts and "accuracy_min" in pts[0]:  # means over seeds (`analysis.mean_curves`): their range
        ax.vlines([p["gflops"] / unit for p in pts], [p["accuracy_min"] for p in pts], [p["accuracy_max"] for p in pts],
                  color=style["color"], alpha=0.5, lw=2.5)
    ax.axhline(curves[key, dense][0]["accuracy_pct"], color="k", lw=0.6, ls=":")
    ax.set(title=title, ylabel="top-1 accuracy (%)")
    ax.grid(alpha=0.3)
  axes[0, 0].legend(fontsize=9)
  fig.tight_layout()
  return fig


def seeds_figure(study: dict, title: str):
  """Each model of a seed study (`analysis.seed_study`) on its own row: its seeds' accuracies
  (dots) and their mean (red tick), so that the spread behind each mean is visible."""
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(6.4, 0.6 * len(study) + 1.2))
  for i, (label, r) in enumerate(study.items()):
    ax.plot(r["accuracy_pct"], [i] * len(r["accuracy_pct"]), "o", color="k", alpha=0.6, label="one seed" if i == 0 else None)
    ax.plot([r["mean"]], [i], "|", ms=18, mew=2.5, color="tab:red", label="mean" if i == 0 else None)
  ax.set_yticks(range(len(study)), [f"{k}\n({v['gflops'] * 1e3:.1f} MFLOPs)" for k, v in study.items()], fontsize=8)
  ax.set(xlabel="top-1 accuracy (%)", title=title, ylim=(-0.6, len(study) - 0.4))
  ax.grid(alpha=0.3, axis="x")
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def token_grid(images, selected: dict, patch: int, masks=None, title: str = "", cols: int = 4):
  """One row per key of `selected` (bool [n, N]: the tokens shown in full; the rest are dimmed)
  over the first `cols` images, the object's outline in red where `masks` are given."""
  import matplotlib.pyplot as plt
  from mone.chapters import routers
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
  """Precision, recall and IoU (in %) of each row of `routers.overlap` results, grouped bars."""
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(5.5, 3.2))
  width = 0.27
  for j, r in enumerate(rows):
    ax.bar([k + width * (j - (len(rows) - 1) / 2) for k in range(3)], [100 * r[m] for m in ("precision", "recall", "iou")],
           width, label=r["router"])
  ax.set_xticks(range(3), labels=["precision", "recall", "IoU"])
  ax.set(ylabel="% (mean over test images)", title=title)
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def video_tokens_figure(video, full, tubelet: int, patch: int, masks=None, labels=None, title: str = "", clips: int = 2):
  """For the first `clips` clips (rows), the first frame of every temporal index (columns) with
  the tokens the full model processes outlined (`full`: bool [n, T', N]) and, where `masks` are
  given, the moving objects in red."""
  import matplotlib.pyplot as plt
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


def adaptation_figure(curves: dict, title: str, per: str = "image"):
  """Figure 5: each model's accuracy over the inference budgets it was evaluated at (`curves`:
  label -> points sorted by e_c; the adaptive model, label 'Train Adaptive', dashed), a star at
  each model's training e_c, and the budgets on the top axis (the adaptive model's, if there is one)."""
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(6, 4.2))
  unit = flops_axis(ax, [p["gflops"] for pts in curves.values() for p in pts], per=per)
  for label, pts in curves.items():
    (line,) = ax.plot([p["gflops"] / unit for p in pts], [p["accuracy_pct"] for p in pts], marker="o", ms=3,
                      ls="--" if label == "Train Adaptive" else "-", label=label)
    star = [p for p in pts if p["e_c"] == p["train_e_c"]]
    ax.plot([p["gflops"] / unit for p in star], [p["accuracy_pct"] for p in star], "*", ms=16, color=line.get_color())
  top = ax.secondary_xaxis("top")  # the budgets of the adaptive model's curve (or, before it exists, the longest)
  ref = curves.get("Train Adaptive") or max(curves.values(), key=len)
  top.set_xticks([p["gflops"] / unit for p in ref], labels=[f"{p['e_c']:g}" for p in ref])
  top.set_xlabel("inference $e_c$")
  ax.set(ylabel="top-1 accuracy (%)", title=title)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  fig.tight_layout()
  return fig


def learning_curves_figure(runs: dict, title: str = ""):
  """Learning curves of finished runs ({label: metrics with `curve`}): accuracy on validation
  (solid) and on the fixed training images (dashed) per step, and the training loss, so a reader
  sees whether each run has stopped improving and how far training runs ahead of validation."""
  import matplotlib.pyplot as plt
  from matplotlib.lines import Line2D
  fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"wspace": 0.25})
  for i, (label, m) in enumerate(runs.items()):
    curve, color = m["curve"], f"C{i}"
    step = [p["step"] for p in curve]
    if curve[0]["val_accuracy"] is not None:
      acc.plot(step, [100 * p["val_accuracy"] for p in curve], "-o", ms=3, color=color)
    acc.plot(step, [100 * p["train_accuracy"] for p in curve], "--", color=color)
    loss.plot(step, [p["train_loss"] for p in curve], "-", color=color, label=label)
  acc.set(xlabel="training step", ylabel="top-1 accuracy (%)", title="accuracy")
  loss.set(xlabel="training step", ylabel="training loss (mean since the previous point)", title="loss")
  for ax in (acc, loss):
    ax.grid(alpha=0.3)
  # Line styles in the accuracy panel, runs (colours) once below both: a legend per curve hid them.
  acc.legend([Line2D([], [], color="0.3", ls="-", marker="o", ms=3), Line2D([], [], color="0.3", ls="--")],
             ["validation", "training images"], fontsize=8, loc="lower right")
  fig.legend(*loss.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0),
             ncol=2, fontsize=8, frameon=False)
  if title:
    fig.suptitle(title, y=1.02)
  return fig
