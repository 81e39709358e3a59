"""The figures of the claims themselves: a chapter's trained claims seed by seed, the landing
page's forest plot of every trained claim, and the intervals before and after of two results
folders (`pages.changes` as a picture).

Each draws the interval a verdict rests on (`stats.paired_ci`; Welch's, dashed, where the claim
is unpaired by design, `claims.PAIRING`) in the colour of its verdict. The landing figures are
drawn outside a chapter, by `python -m mone.chapters claims`, and written with `plots.save_png`;
matplotlib is imported inside the functions that draw: the book's environment, which writes the
pages, has none.
"""
import math

from mone.evidence import claims as claims_lib
from mone.evidence import stats
from mone.plotting import plots

# The verdicts' colours in a chapter's claims figure.
VERDICT_COLORS = {"reproduced": "tab:green", "not reproduced": "tab:red", "inconclusive": "tab:gray",
                  "not testable": "0.7"}



def _region(claim):
  """The interval of (MoNE - baseline) that reproduces the claim, for shading."""
  tol = claim.get("tolerance") or 0.0
  return {"matches": (-tol, tol), "no_worse": (-tol, math.inf), "beats": (0.0, math.inf)}[claim["relation"]]


def _paired_ci(values) -> tuple[float, float]:
  """The claims' 95% t-interval of a mean of paired differences (`stats.paired_ci`), as
  seaborn's errorbar: the bar is the interval the verdict rests on, not a bootstrap's."""
  return stats.paired_ci(list(values))[1:]


def claims_figure(claims: list[dict], title: str = ""):
  """One row per trained claim, paired (`claims.PAIRING`): the per-seed differences (dots, a strip
  plot), their mean and 95% CI (diamond and bar, a point plot with the claims' own t-interval, coloured by verdict)
  and the region that reproduces the claim (green band). Returns the figure, or None when no
  claim was decided from trained models."""
  import matplotlib.pyplot as plt
  import pandas as pd
  import seaborn as sns
  from matplotlib.lines import Line2D
  plots.theme()
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


LANDING_COLOURS = {"reproduced": "#029e73", "not reproduced": "#d55e00", "inconclusive": "#949494"}
WELCH_DASH = (0, (2, 1))  # an unpaired claim's interval (Welch's, from both arms): not a CI of paired differences


def _with_interval(claims: list[dict]) -> list[dict]:
  """The claims the forest figures draw: trained comparisons in points that have a 95% CI."""
  return [c for c in claims if c["kind"] == "trained" and c.get("ci95") and c.get("unit") == "points"]


# How compare_figure draws each claim's two intervals, as (line, mean marker) keyword arguments: before
# thin and faint with an open circle at its mean, after thick with a filled diamond. The two differ in
# marker shape and fill as well as in width, so that they tell apart in the legend and on a grey print.
COMPARE_STYLES = ((dict(lw=1.2, alpha=0.55), dict(marker="o", ms=5, mfc="white", mew=1.2)),
                  (dict(lw=3.0), dict(marker="D", ms=6)))


def compare_figure(old: dict[str, list[dict]], new: dict[str, list[dict]], path, before: str, after: str,
                   title: str | None = None) -> None:
  """`pages.changes` as a picture: for every trained claim with an interval in both sets ({chapter:
  claims}), its mean and 95% CI before (thin line, open circle, above) and after (thick line, filled
  diamond, below: `COMPARE_STYLES`), coloured by each verdict, so that a reader sees which intervals
  shrank, which means moved and which crossed zero; the band a 'matches' claim must lie in behind it. Two panels on their own axes, as on the
  landing figure: the accuracy comparisons (a few points) would be unreadable beside the trends
  (`TREND_PREFIXES`, tens of points). `before` and `after` name the two sets in the legend.
  matplotlib is imported here only."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  ids = lambda sets: {c["id"]: c for c in _with_interval([c for cs in sets.values() for c in cs])}
  a, b = ids(old), ids(new)
  shared = [i for i in b if i in a]
  if not shared:
    raise ValueError("compare_figure: no trained claim has an interval in both sets")
  panels = [("Accuracy: MoNE minus the baseline (points)", [i for i in shared if not i.startswith(TREND_PREFIXES)]),
            ("Drops and token precision (points)", [i for i in shared if i.startswith(TREND_PREFIXES)])]
  panels = [(t, p) for t, p in panels if p]
  fig, axes = plt.subplots(len(panels), 1, figsize=(8.5, 0.42 * len(shared) + 0.8 * len(panels) + 1.2), squeeze=False,
                           gridspec_kw={"height_ratios": [len(p) + 1 for _, p in panels]})
  for ax, (panel_title, pids) in zip(axes[:, 0], panels):
    for y, ident in enumerate(reversed(pids)):
      if b[ident].get("relation") == "matches":
        tol = b[ident]["tolerance"]
        ax.fill_betweenx([y - 0.4, y + 0.4], -tol, tol, color="#56b4e9", alpha=0.25, lw=0)
      for c, dy, (line, mean) in ((a[ident], 0.17, COMPARE_STYLES[0]), (b[ident], -0.12, COMPARE_STYLES[1])):
        col = LANDING_COLOURS[c["verdict"]]
        ax.plot(c["ci95"], [y + dy] * 2, color=col, solid_capstyle="butt", ls=WELCH_DASH if c.get("test") == "welch" else "-",
                **line)
        ax.plot(c["measured"], y + dy, color=col, ls="none", **line, **mean)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(pids)), [i + (" (unpaired)" if b[i].get("test") == "welch" else "") for i in reversed(pids)],
                  fontsize=9)
    ax.set_ylim(-0.7, len(pids) - 0.3)
    ax.set_title(panel_title, fontsize=10, loc="left")
    ax.grid(alpha=0.3, axis="x")
  top = axes[0, 0]
  top.plot([], [], color="0.4", **COMPARE_STYLES[0][0], **COMPARE_STYLES[0][1], label=f"{before} (thin line, open circle, above)")
  top.plot([], [], color="0.4", **COMPARE_STYLES[1][0], **COMPARE_STYLES[1][1], label=f"{after} (thick line, filled diamond, below)")
  for v, col in LANDING_COLOURS.items():
    top.plot([], [], "s", color=col, label=v)
  if any(b[i].get("relation") == "matches" for i in shared):
    top.fill_between([], [], color="#56b4e9", alpha=0.25, label="where 'matches' must lie")
  fig.suptitle(title or f"Every trained claim with an interval: {before} and {after}", fontsize=11)
  fig.legend(*top.get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=3, frameon=False,
             handlelength=1.5, columnspacing=1.0)  # below the panels: no claim's interval is hidden under it
  axes[-1, 0].set_xlabel("mean and 95% CI over seeds (points)")
  fig.tight_layout(rect=(0, 0.06, 1, 1))
  plots.save_png(fig, path, dpi=110)


# Claims about drops and token precision, whose differences run to tens of points: drawn in a panel
# of their own, so that the accuracy claims' intervals (a few points) stay readable on theirs.
TREND_PREFIXES = ("fig1.", "fig5.", "fig7.")


# The words of a claim id's parts, where a part is not already a word: model names as the book
# writes them, e_c values, the paper's figure and table numbers.
_WORDS = {"mone": "MoNE", "vit": "ViT", "matvit": "MatViT", "matvivit": "MatViViT", "mod": "MoD", "iso": "isoFLOPs",
          "flops": "", "mone03": "MoNE e_c 0.3", "mone04": "MoNE e_c 0.4", "vs": "vs", "greedy": "Greedy",
          "proportionate": "Proportionate", "uniform": "Uniform"}


def row_label(claim_id: str) -> str:
  """A claim id in words, for a figure's rows: 'fig4.temporal.mone_no_drop' is 'Fig. 4, temporal:
  MoNE no drop', 'table1.mone04_vs_mod_greedy' is 'Table 1: MoNE e_c 0.4 vs MoD Greedy'."""
  head, *middle, last = claim_id.split(".")
  where = f"Fig. {head[3:]}" if head.startswith("fig") else f"Table {head[5:]}" if head.startswith("table") else head
  words = " ".join(w for w in (_WORDS.get(t, t) for t in last.split("_")) if w)
  topic = "".join(f", {m.replace('_', ' ')}" for m in middle)
  return f"{where}{topic}: {words}"


def landing_figure(claims: list[dict], path) -> None:
  """The landing page's figure: every trained comparison's mean difference (MoNE minus
  the baseline, in points) with its 95% CI (paired; dashed where the claim is unpaired by
  design, `claims.PAIRING`), coloured by the verdict a tally counts (`claims.counted_verdict`;
  the mean hollow where the family-wise verdict, `significance.annotate`, does not keep it), and
  the band or threshold its claim must clear. Two panels on their own axes: the accuracy comparisons
  (Figures 3, 4, 6), Table 1's on an axis of its own (a stalled run's difference of tens of points
  widens its intervals, which would shrink the others to a few pixels; its exploratory Hodges-Lehmann
  estimates beside them), then the trends (`TREND_PREFIXES`). matplotlib is imported here
  only: the book's environment has none and only references the committed figure."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.lines
  import matplotlib.patches
  import matplotlib.pyplot as plt
  cs = _with_interval(claims)
  table1 = lambda c: c["id"].startswith("table1.")
  panels = [("Accuracy: MoNE minus the baseline (points)",
             [c for c in cs if not c["id"].startswith(TREND_PREFIXES) and not table1(c)]),
            ("Table 1: MoNE minus each allocation (points); stalled runs drive the means",
             [c for c in cs if table1(c)]),
            ("Drops and token precision (points)", [c for c in cs if c["id"].startswith(TREND_PREFIXES)])]
  panels = [(t, p) for t, p in panels if p]
  if not panels:
    return
  colour = LANDING_COLOURS
  fig, axes = plt.subplots(len(panels), 1, figsize=(10.0, 0.25 * len(cs) + 0.8 * len(panels) + 0.6), squeeze=False,
                           gridspec_kw={"height_ratios": [len(p) + 1.5 for _, p in panels]})
  for ax, (title, pcs) in zip(axes[:, 0], panels):
    for y, c in enumerate(reversed(pcs)):
      v = claims_lib.counted_verdict(c)
      shown = claims_lib.counted(c)
      lo, hi = shown["ci95"]
      ax.plot([lo, hi], [y, y], color=colour[v], lw=2.5, solid_capstyle="butt",
              ls=WELCH_DASH if shown.get("test") == "welch" else "-")
      lost = c.get("verdict_familywise", v) != v  # decided alone, not family-wise
      ax.plot(shown["measured"], y, "o", color=colour[v], ms=6 if lost else 5, mfc="white" if lost else None)
      tol = c["tolerance"]
      if c["relation"] == "matches":
        ax.fill_betweenx([y - 0.4, y + 0.4], -tol, tol, color="#56b4e9", alpha=0.25, lw=0)
      elif c["relation"] == "no_worse":
        ax.plot([-tol, -tol], [y - 0.4, y + 0.4], color="#56b4e9", lw=1.5)
      if (r := c.get("robust")) and r["hodges_lehmann"] is not None:  # exploratory, beside the frozen interval
        ax.plot(r["hodges_lehmann"], y - 0.25, "D", color="k", ms=4)
        if r["hl_ci95"][0] is not None:
          ax.plot(r["hl_ci95"], [y - 0.25, y - 0.25], color="k", lw=1)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(pcs)), [row_label(c["id"]) + (" (pre-registered)" if "plan_deviation" in c else "")
                                   + (" (unpaired)" if claims_lib.counted(c).get("test") == "welch" else "")
                                   + (" (exploratory)" if c.get("exploratory") else "") for c in reversed(pcs)], fontsize=10)
    ax.set_ylim(-0.7, len(pcs) - 0.3)
    ax.set_title(title, fontsize=11, loc="left")
    ax.tick_params(axis="x", labelsize=10)
    ax.grid(alpha=0.3, axis="x")
  handles = [matplotlib.lines.Line2D([], [], color=col, lw=2.5, label=v) for v, col in colour.items()]
  if any(c.get("test") == "welch" for c in cs):
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", lw=2.5, ls=WELCH_DASH, label="unpaired: Welch's CI"))
  if any(c.get("verdict_familywise", claims_lib.counted_verdict(c)) != claims_lib.counted_verdict(c) for c in cs):
    handles.append(matplotlib.lines.Line2D([], [], marker="o", color="0.3", mfc="white", ls="", label="not kept family-wise"))
  handles.append(matplotlib.patches.Patch(color="#56b4e9", alpha=0.25, label="where 'matches' / 'no worse' must lie"))
  if any(c.get("robust") for c in cs):
    handles.append(matplotlib.lines.Line2D([], [], marker="D", color="k", lw=1, ms=4,
                                           label="Hodges-Lehmann, 95% CI (exploratory)"))
  # below the panels, off the data
  fig.legend(handles=handles, fontsize=10, loc="lower center", ncol=3, frameon=False)
  fig.tight_layout(rect=(0, 0.08, 1, 1))
  plots.save_png(fig, path, dpi=110)
