"""The figures of what trained routers do and where they sit: the tokens they send to the full
expert (Figures 1 and 7, on images and clips), how those overlap the objects, which expert gets
the object tokens, and Figure 6's router placement, count and learned-or-random studies.

Drawn in the book's theme and model colours (`mone.plotting.plots`) from plain data: router
outputs and their overlaps (`mone.chapters.routers`), or accuracies by seed.
"""
import numpy as np

from mone.plotting import plots
from mone.chapters import routers


def outline_tokens(ax, selected, patch: int, grid: int, color: str = "yellow", lw: float = 1.6) -> int:
  """Draws a square around every selected token (bool [grid * grid], patch order) of an image
  shown with ax.imshow; readable on dark frames, where fading or tinting tokens is not.
  Returns the number of tokens outlined."""
  from matplotlib.patches import Rectangle
  sel = np.asarray(selected, bool).reshape(grid, grid)
  for r, c in zip(*np.nonzero(sel)):
    ax.add_patch(Rectangle((c * patch - 0.5, r * patch - 0.5), patch, patch, fill=False, edgecolor=color, lw=lw))
  return int(sel.sum())


def token_grid(images, selected: dict, patch: int, masks=None, title: str = "", cols: int = 4):
  """One row per key of `selected` (bool [n, N]: the tokens shown in full; the rest are dimmed)
  over the first `cols` images, the object's outline in red where `masks` are given."""
  import matplotlib.pyplot as plt
  plots.theme()
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
  plots.theme()
  metrics = {"precision": "precision", "recall": "recall", "iou": "IoU"}
  df = pd.DataFrame([{"router": r["router"], "metric": name, "pct": 100 * r[m]} for r in rows for m, name in metrics.items()])
  names = [r["router"] for r in rows]
  fig, ax = plt.subplots(figsize=(5.5, 3.2))
  sns.barplot(df, x="metric", y="pct", hue="router", order=list(metrics.values()), hue_order=names,
              palette={r: plots.model_color(r) for r in names}, errorbar=None, saturation=1, ax=ax)
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
  plots.theme()
  df = pd.DataFrame(share).assign(run=lambda d: [f"seed {s}" for s in d["seed"]])
  seeds = list(dict.fromkeys(df["seed"]))
  fig, ax = plt.subplots(figsize=(6.0, 3.4))
  sns.barplot(df, x="width", y="object_share_pct", hue="run", order=names, hue_order=[f"seed {s}" for s in seeds],
              palette={f"seed {s}": plots.seed_color("MoNE", s) for s in seeds}, errorbar=None, saturation=1, ax=ax)
  first = df[df["seed"] == seeds[0]].set_index("width")
  ax.axhline(first["object_pct"].iloc[0], color="k", ls="--", lw=1, label="base rate (blind router)")
  ax.set_xticks(range(len(names)), [f"{n}\n{first.loc[n, 'tokens_pct']:.0f}% of tokens" for n in names])
  ax.set(xlabel="", ylabel="object tokens among the expert's (%)", title=title)
  ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # beside the bars, not over them
  fig.tight_layout()
  return fig


def video_tokens_figure(video, full, tubelet: int, patch: int, masks=None, labels=None, title: str = "", clips: int = 2):
  """For the first `clips` clips (rows), the first frame of every temporal index (columns) with
  the tokens the full model processes outlined (`full`: bool [n, T', N]) and, where `masks` are
  given, the moving objects in white edged with black (red vanished on the magenta digits)."""
  import matplotlib.patheffects as effects
  import matplotlib.pyplot as plt
  plots.theme()
  nt = full.shape[1]
  fig, axes = plt.subplots(clips, nt, figsize=(2.2 * nt, 2.5 * clips), squeeze=False)
  for i, row in enumerate(axes):
    for t, ax in enumerate(row):
      ax.imshow(video[i, t * tubelet])
      if masks is not None:
        edge = ax.contour(masks[i, t * tubelet], levels=[0.5], colors="white", linewidths=1.0)
        edge.set_path_effects([effects.Stroke(linewidth=2.4, foreground="black"), effects.Normal()])
      outline_tokens(ax, full[i, t], patch, video.shape[2] // patch)
      ax.set_xticks([]), ax.set_yticks([])
      if i == 0:
        ax.set_title(f"temporal index {t}\n(frame {t * tubelet})", fontsize=10)
    row[0].set_ylabel(f"test clip {i + 1}" + ("" if labels is None else f"\n(label {labels[i]})"), fontsize=10)
  fig.suptitle(title, fontsize=11)
  fig.tight_layout()
  return fig


def _stack_legends(keys, panels) -> list:
  """Each panel's legend entries (panels: (title, axes)) moved into the empty axes `keys`, one
  legend per panel under the one before (measured, so that none runs into the next; more than five
  entries in two columns); a panel's own legend is removed. Figure legends, so that the legibility
  audit (`mone.plotting.legibility`) checks every one of them against every panel's data. Returns
  the legends placed."""
  from matplotlib.transforms import ScaledTranslation
  fig = keys.figure
  renderer = fig.canvas.get_renderer()
  placed, drop = [], 0.0  # inches below the top of `keys`
  for title, ax in panels:
    if ax.get_legend():
      ax.get_legend().remove()
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
      continue
    at = keys.transAxes + ScaledTranslation(0, -drop, fig.dpi_scale_trans)
    leg = fig.legend(handles, labels, title=title, fontsize=9, title_fontsize=9, loc="upper left", bbox_to_anchor=(0, 1),
                     bbox_transform=at, frameon=False, ncol=2 if len(handles) > 5 else 1, alignment="left")
    drop += leg.get_window_extent(renderer).height / fig.dpi + 0.1
    placed.append(leg)
  return placed


def router_figure(study: dict, e_c: float, router_counts, title: str):
  """Figure 6 (`study`: {study: {value: {seed: point}}} for 'curve' (MoNE over e_c, router at
  layer 0), 'router position', 'number of routers', 'learned router' and 'random router'):
  (a) the layer-0 curve as a mean over seeds with the seeds' range, and each seed's run with the
  router later (marker: layer, shade: seed); (b) each seed's accuracy by number of routers;
  (c) the learned and the random router over e_c, means with the seeds' range. The three panels'
  legends stand in the grid's fourth cell, one under the other (`_stack_legends`), off the data."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  plots.theme()
  frame = lambda name: pd.DataFrame([{"value": v, "seed": s, **p} for v, by_seed in study.get(name, {}).items()
                                     for s, p in by_seed.items()], columns=["value", "seed", "gflops", "accuracy_pct"])
  curve, later = frame("curve"), frame("router position")
  later = later[later["value"] != 0]  # layer 0 is the curve's own run at this e_c
  # Two by two, about as wide as the book's column (shown near its own size, its text stays readable);
  # the fourth cell holds the legends of (a), (b) and (c), which over their panels would cover points.
  fig, grid = plt.subplots(2, 2, figsize=(8.2, 7.8), layout="constrained")  # the FLOPs axes need it
  axes, keys = [grid[0, 0], grid[0, 1], grid[1, 0]], grid[1, 1]
  keys.axis("off")
  ax = axes[0]
  unit = plots.flops_axis(ax, list(curve["gflops"]) + list(later["gflops"]))
  if len(curve):
    plots.mean_and_seeds(ax, curve.assign(flops=curve["gflops"] / unit), "flops", plots.model_color("MoNE"),
                    "layer 0, $e_c$ sweep (seed mean)")
  if len(later):  # each seed's run with the router later: marker by layer, shade by seed, one legend entry each
    later = later.assign(flops=later["gflops"] / unit, run=[f"seed {s}" for s in later["seed"]])
    marker = dict(zip(dict.fromkeys(later["value"]), "s^DvP<>"))
    sns.scatterplot(later, x="flops", y="accuracy_pct", hue="run", style="value", s=70, markers=marker, legend=False,
                    palette={f"seed {s}": plots.seed_color("MoNE", s) for s in later["seed"]}, ax=ax)
    for layer, s in zip(later["value"], later["seed"]):
      ax.plot([], [], ls="none", marker=marker[layer], ms=8, color=plots.seed_color("MoNE", s), label=f"layer {layer}, $e_c$={e_c}, seed {s}")
  ax.set(title="(a) router position", ylabel="top-1 accuracy (%)")
  ax = axes[1]
  counts = frame("number of routers")
  if len(counts):
    counts = counts.assign(run=[f"seed {s}" for s in counts["seed"]])
    sns.lineplot(counts, x="value", y="accuracy_pct", hue="run", estimator=None, marker="o",
                 palette={f"seed {s}": plots.seed_color("MoNE", s) for s in counts["seed"]}, ax=ax)
  ax.set(title=f"(b) number of routers, $e_c$={e_c}", xlabel="routers (evenly spaced from layer 0)",
         ylabel="top-1 accuracy (%)", xticks=list(router_counts))
  ax = axes[2]
  both = pd.concat([frame("learned router").assign(model="MoNE"), frame("random router").assign(model="MoNE, random router")])
  unit = plots.flops_axis(ax, list(both["gflops"]) or list(curve["gflops"]))
  for model, name, style in (("MoNE", "learned router", dict(marker="o")), ("MoNE, random router", "random router",
                                                                          dict(marker="s", linestyle="--"))):
    pts = both[both["model"] == model]
    if len(pts):
      plots.mean_and_seeds(ax, pts.assign(flops=pts["gflops"] / unit), "flops", plots.model_color(model), f"MoNE, {name} (seed mean)", **style)
  ax.set(title="(c) learned vs random router", ylabel="top-1 accuracy (%)")
  _stack_legends(keys, [(title, ax) for title, ax in zip(("(a)", "(b)", "(c)"), axes)])
  for ax in axes:
    for item in [ax.title, ax.xaxis.label, ax.yaxis.label] + ax.get_xticklabels() + ax.get_yticklabels():
      item.set_fontsize(10)
  fig.suptitle(title, fontsize=12)
  return fig
