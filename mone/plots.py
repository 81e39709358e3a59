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
