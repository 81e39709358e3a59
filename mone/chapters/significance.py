"""How strong each trained verdict is: its p-value, a family-wise verdict over every trained
claim, and how many paired seeds would decide it.

`mone.chapters.claims` decides a trained claim from the two-sided 95% t-interval of its paired
differences (n - 1 degrees of freedom). Each p-value here is the one of the test that interval
performs, so that p < 0.05 exactly when the interval gives the verdict (T is Student's t with
n - 1 degrees of freedom, t(x) = (mean - x) / (s / sqrt(n))):

* "beats" (reproduced when the CI lies above 0): p = 2 P(T >= t(0)); ruled out (not
  reproduced) when the CI lies below the tolerance: p = 2 P(T <= t(tolerance)).
* "no_worse" (reproduced when the CI lies above -tolerance): p = 2 P(T >= t(-tolerance)); ruled
  out when it lies below: p = 2 P(T <= t(-tolerance)).
* "matches" (reproduced when the CI lies inside ±tolerance): two one-sided tests, p = the larger
  of 2 P(T >= t(-tolerance)) and 2 P(T <= t(tolerance)); ruled out when the CI lies wholly outside:
  the smaller of 2 P(T <= t(-tolerance)) and 2 P(T >= t(tolerance)).

A claim that is not reproduced gets the p of the test that ruled it out; any other (reproduced,
or inconclusive) the p of the test that would reproduce it. The factor 2 makes each one-sided
test one half of the two-sided 95% interval, as the verdicts use it.

Twenty-odd trained claims tested at 95% each would hold about one false verdict by chance.
`holm` controls the family-wise error at 5% over every trained claim of every chapter with a
p-value (Holm's step-down: the k-th smallest p is compared with 0.05 / (m - k + 1) until one
fails); `verdict_familywise` keeps a claim's verdict where Holm keeps its test, else it is
inconclusive. The per-claim verdicts are unchanged: the book shows both.

`seeds_to_decide` is a power estimate: the fewest paired seeds (from 3 to 20) at which the same
t-interval would decide the claim if its mean and paired standard deviation held; None past 20.
"""
import math

import numpy as np
import scipy.stats

from mone.chapters import claims as claims_lib

# Paired or unpaired, decided by the design, once for every family of claims, never per claim by
# which one decides. Every trained claim here compares arms trained with the same seed, and a seed
# fixes both what pairing needs: the data order (batches are a function of seed and step,
# `mone.data.pipeline.train_batches`) and the initialisation of every parameter the arms share (the
# same key initialises a ViT, MatViT, MoD and MoNE, learned or random router, to identical shared
# weights: tested). So every family is paired, but one (UNPAIRED_BY_DESIGN). A pair trained on two devices loses that: a run
# retrained on another device differs from its original about as much as a run at another seed
# (`mone.chapters.devices`), which is why the seed plan keeps every pair on one device.
TEST = "paired"
TEST_WHY = ("the same seed gives both arms the same data order and identical initial weights for every "
            "parameter they share (tested), so each seed is a pair")
# One claim's arms share nothing through their seed: the image and the video models of Figure 5's
# cross-domain comparison train on other data with other architectures. Its design calls for
# Welch's unpaired interval; claims.json keeps only its per-seed differences, so it is still decided
# paired here, and says so.
UNPAIRED_BY_DESIGN = {
    "fig5.video_gentler_than_images": ("image and video models train on other data with other architectures: a seed "
                                       "number shares nothing between them, so the design calls for Welch's unpaired "
                                       "interval; it is still decided paired (its per-arm values are not recorded yet)"),
}

FAMILY_ALPHA = 0.05
MAX_SEEDS = 20


def _t(mean: float, sd: float, n: int, x: float) -> float:
  """The t statistic of mean against x; +-inf where the differences are all equal."""
  se = sd / math.sqrt(n)
  if se == 0:
    return math.inf if mean > x else -math.inf if mean < x else 0.0
  return (mean - x) / se


def p_value(diffs, relation: str, tolerance: float, verdict: str) -> float | None:
  """The p-value of the test behind a trained claim's verdict (see the module doc); None with
  fewer than 2 differences."""
  d = np.asarray(list(diffs), float)
  if len(d) < 2:
    return None
  if relation not in claims_lib.RELATIONS:
    raise ValueError(f"relation must be one of {claims_lib.RELATIONS}, got {relation!r}")
  mean, sd, n = float(d.mean()), float(d.std(ddof=1)), len(d)
  T = scipy.stats.t(n - 1)
  above = lambda x: min(1.0, 2 * float(T.sf(_t(mean, sd, n, x))))   # the CI lies above x
  below = lambda x: min(1.0, 2 * float(T.cdf(_t(mean, sd, n, x))))  # the CI lies below x
  ruled_out = verdict == "not reproduced"
  if relation == "beats":
    return below(tolerance) if ruled_out else above(0.0)
  if relation == "no_worse":
    return below(-tolerance) if ruled_out else above(-tolerance)
  if ruled_out:
    return min(below(-tolerance), above(tolerance))
  return max(above(-tolerance), below(tolerance))


def holm(p_values: dict, alpha: float = FAMILY_ALPHA) -> dict:
  """{key: kept} for {key: p}: Holm's step-down procedure at family-wise error alpha."""
  if not 0 < alpha < 1:
    raise ValueError(f"alpha must be in (0, 1), got {alpha}")
  order = sorted(p_values, key=lambda k: p_values[k])
  m, kept, going = len(order), {}, True
  for k, key in enumerate(order):
    going = going and p_values[key] <= alpha / (m - k)
    kept[key] = going
  return kept


def seeds_to_decide(mean: float, sd: float, relation: str, tolerance: float) -> int | None:
  """The fewest paired seeds n in [MIN_SEEDS, MAX_SEEDS] at which mean ± t(0.975, n-1) sd / sqrt(n)
  decides the claim (`claims.decide`), if the mean and sd held; None if none does."""
  for n in range(claims_lib.MIN_SEEDS, MAX_SEEDS + 1):
    half = float(scipy.stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    if claims_lib.decide(relation, mean - half, mean + half, tolerance) != "inconclusive":
      return n
  return None


def annotate(chapters: dict[str, list[dict]]) -> dict[str, list[dict]]:
  """Every chapter's claims ({chapter: claims}, as `claims.load` returns) with, on each trained
  claim that has per-seed differences, `p_value` (2 or more seeds), `seeds_to_decide` (3 or more)
  and `verdict_familywise` (Holm over all of them). Other claims are returned unchanged."""
  out, ps = {}, {}
  for chapter, rows in chapters.items():
    out[chapter] = []
    for c in rows:
      c = dict(c)
      d = c.get("per_seed") or []
      if c["kind"] == "trained" and c["verdict"] != "not testable" and len(d) >= 2:
        c["p_value"] = claims_lib._round(p_value(d, c["relation"], c["tolerance"], c["verdict"]))  # as claims.json keeps it
        c["test"], c["test_why"] = TEST, UNPAIRED_BY_DESIGN.get(c["id"], TEST_WHY)
        c["seeds_to_decide"] = (seeds_to_decide(float(np.mean(d)), float(np.std(d, ddof=1)), c["relation"], c["tolerance"])
                                if len(d) >= claims_lib.MIN_SEEDS else None)
        if len(d) >= claims_lib.MIN_SEEDS:  # fewer seeds decide nothing: not part of the family
          ps[c["id"]] = c["p_value"]
      out[chapter].append(c)
  kept = holm(ps) if ps else {}
  for rows in out.values():
    for c in rows:
      if c["id"] in kept:
        undecided = c["verdict"] == "inconclusive" or not kept[c["id"]]
        c["verdict_familywise"] = "inconclusive" if undecided else c["verdict"]
  return out


POWER_FIGURE = "power.png"  # under the results folder: `power_figure`


def power_figure(claims: list[dict], path) -> None:
  """Per trained claim with 3 or more seeds, the 95% CI's half-width against the number of paired
  seeds (2 to MAX_SEEDS) at its observed spread, with the half-width that would decide it if its
  mean held (the distance from its mean to the edge it must clear); where a curve crosses its
  line is `seeds_to_decide`. matplotlib is imported here only (the book's environment has none)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  import matplotlib.ticker
  from pathlib import Path
  cs = [c for c in claims if c["kind"] == "trained" and len(c.get("per_seed") or []) >= claims_lib.MIN_SEEDS]
  cols = 4
  rows = max(1, math.ceil(len(cs) / cols))
  fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols, 2.2 * rows), squeeze=False, sharex=True)
  n = np.arange(2, MAX_SEEDS + 1)
  for ax, c in zip(axes.flat, cs):
    d = np.asarray(c["per_seed"], float)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = scipy.stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    ax.plot(n, half, color="#0173b2", lw=1.5)
    need = _room(mean, c["relation"], c["tolerance"])
    if need > 0:
      ax.axhline(need, color="#d55e00", lw=1, ls="--")
    ax.axvline(len(d), color="0.6", lw=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # decades only: readable at this size
    ax.set_title(c["id"], fontsize=7)
    ax.tick_params(labelsize=7)
  for ax in list(axes.flat)[len(cs):]:
    ax.axis("off")
  fig.supxlabel("paired seeds n (grey: today's)", fontsize=8)
  fig.supylabel("95% CI half-width (points); dashed: what decides it", fontsize=8)
  fig.tight_layout()
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  tmp = path.with_name(f".{path.name}.tmp.png")
  fig.savefig(tmp, dpi=90, metadata={"Software": None})
  plt.close(fig)
  import os
  os.replace(tmp, path)


def _room(mean: float, relation: str, tolerance: float) -> float:
  """The half-width below which the CI around `mean` decides the claim (either way): the distance
  from the mean to the nearest edge that decides it."""
  if relation == "beats":
    return max(abs(mean), abs(mean - tolerance)) if mean > 0 or mean < tolerance else 0.0
  if relation == "no_worse":
    return abs(mean + tolerance)
  return max(tolerance - abs(mean), abs(mean) - tolerance)
