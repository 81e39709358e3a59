"""How strong each trained verdict is: its p-value, a family-wise verdict over every trained
claim, and how many seeds would decide it.

`mone.chapters.claims` decides a trained claim from a two-sided 95% t-interval of MoNE minus the
baseline: paired (the per-seed differences: standard error s / sqrt(n), n - 1 degrees of freedom)
or, where the claim's family is unpaired by design (`claims.PAIRING`), Welch's (the two arms'
standard errors, Welch-Satterthwaite degrees of freedom); `interval` gives either. Each p-value
here is the one of the test that interval performs, so that p < 0.05 exactly when the interval
gives the verdict (T is Student's t with the interval's degrees of freedom, t(x) = (mean - x) / se):

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

`seeds_to_decide` is a power estimate: the fewest seeds (from 3 to 20) at which the same
t-interval would decide the claim if its mean and spread held; None past 20.
"""
import math

import numpy as np
import scipy.stats

from mone.chapters import claims as claims_lib

FAMILY_ALPHA = 0.05
MAX_SEEDS = 20


def interval(c: dict, n: int | None = None) -> tuple[float, float, float]:
  """(mean, standard error, degrees of freedom) of the t-interval behind a trained claim's verdict:
  Welch's where the claim records it (`test` "welch", from its arms `per_seed_mone` and
  `per_seed_baseline`), else the paired one (its `per_seed` differences). n: the same at n seeds
  (per arm) if today's spread held (`seeds_to_decide`, `power_figure`)."""
  if c.get("test") == "welch":
    a, b = np.asarray(c["per_seed_mone"], float), np.asarray(c["per_seed_baseline"], float)
    if n is None:
      return claims_lib.welch(a, b)
    return (float(a.mean() - b.mean()),
            *claims_lib.welch_se_df(float(a.var(ddof=1)), n, float(b.var(ddof=1)), n))  # n seeds per arm
  d = np.asarray(c["per_seed"], float)
  n = n or len(d)
  return float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), n - 1.0


def _t(mean: float, se: float, x: float) -> float:
  """The t statistic of mean against x; +-inf where there is no spread."""
  if se == 0:
    return math.inf if mean > x else -math.inf if mean < x else 0.0
  return (mean - x) / se


def p_value(diffs, relation: str, tolerance: float, verdict: str) -> float | None:
  """The p-value of the test behind a trained claim's verdict from its paired differences (see the
  module doc); None with fewer than 2 differences."""
  d = list(diffs)
  if len(d) < 2:
    return None
  return interval_p_value(*interval({"per_seed": d}), relation, tolerance, verdict)


def interval_p_value(mean: float, se: float, df: float, relation: str, tolerance: float, verdict: str) -> float:
  """The p-value of the test a t-interval (mean, se, df: `interval`) performs for a verdict."""
  if relation not in claims_lib.RELATIONS:
    raise ValueError(f"relation must be one of {claims_lib.RELATIONS}, got {relation!r}")
  T = scipy.stats.t(df)
  above = lambda x: min(1.0, 2 * float(T.sf(_t(mean, se, x))))   # the CI lies above x
  below = lambda x: min(1.0, 2 * float(T.cdf(_t(mean, se, x))))  # the CI lies below x
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
  return _first_deciding(relation, tolerance, lambda n: (mean, sd / math.sqrt(n), n - 1.0))


def claim_seeds_to_decide(c: dict) -> int | None:
  """`seeds_to_decide` for a claim from its own interval at n seeds, paired or Welch's (`interval`)."""
  return _first_deciding(c["relation"], c["tolerance"], lambda n: interval(c, n))


def _first_deciding(relation: str, tolerance: float, at) -> int | None:
  """The fewest n in [MIN_SEEDS, MAX_SEEDS] whose t-interval, at(n) -> (mean, se, df), decides."""
  for n in range(claims_lib.MIN_SEEDS, MAX_SEEDS + 1):
    mean, se, df = at(n)
    half = float(scipy.stats.t.ppf(0.975, df)) * se
    if claims_lib.decide(relation, mean - half, mean + half, tolerance) != "inconclusive":
      return n
  return None


def annotate(chapters: dict[str, list[dict]]) -> dict[str, list[dict]]:
  """Every chapter's claims ({chapter: claims}, as `claims.load` returns) with, on each trained
  claim that has per-seed differences, `p_value` (2 or more seeds), `seeds_to_decide` (3 or more)
  and `verdict_familywise` (Holm over all of them), each from the claim's own interval (`test`,
  paired or Welch's: `claims.trained` records it; a claims.json from before it did gets its
  family's, `claims.interval_test`). Other claims are returned unchanged."""
  out, ps = {}, {}
  for chapter, rows in chapters.items():
    out[chapter] = []
    for c in rows:
      c = dict(c)
      d = c.get("per_seed") or []
      if c["kind"] == "trained" and c["verdict"] != "not testable" and len(d) >= 2:
        if "test" not in c:
          c["test"], c["test_why"] = claims_lib.interval_test(c["id"], both_arms="per_seed_baseline" in c)
        c["p_value"] = claims_lib._round(interval_p_value(*interval(c), c["relation"], c["tolerance"], c["verdict"]))
        c["seeds_to_decide"] = claim_seeds_to_decide(c) if len(d) >= claims_lib.MIN_SEEDS else None
        if (dev := c.get("plan_deviation")) is not None:  # the family holds the plan's test, not the changed one
          pre = dev["preregistered"] = dict(dev["preregistered"])
          pre["p_value"] = claims_lib._round(interval_p_value(*interval(pre), pre["relation"], pre["tolerance"], pre["verdict"]))
        if len(d) >= claims_lib.MIN_SEEDS:  # fewer seeds decide nothing: not part of the family
          ps[c["id"]] = c["plan_deviation"]["preregistered"]["p_value"] if "plan_deviation" in c else c["p_value"]
      out[chapter].append(c)
  kept = holm(ps) if ps else {}
  for rows in out.values():
    for c in rows:
      if c["id"] in kept:
        verdict = claims_lib.counted_verdict(c)
        undecided = verdict == "inconclusive" or not kept[c["id"]]
        c["verdict_familywise"] = "inconclusive" if undecided else verdict
  return out


POWER_FIGURE = "power.png"  # under the results folder: `power_figure`


def power_figure(claims: list[dict], path) -> None:
  """Per trained claim with 3 or more seeds, the 95% CI's half-width against the number of seeds
  (2 to MAX_SEEDS, per arm) at its observed spread (paired or Welch's: `interval`), with the half-width that would decide it if its
  mean held (the distance from its mean to the edge it must clear); where a curve crosses its
  line is `seeds_to_decide`. matplotlib is imported here only (the book's environment has none)."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  import matplotlib.ticker
  cs = [c for c in claims if c["kind"] == "trained" and len(c.get("per_seed") or []) >= claims_lib.MIN_SEEDS]
  cols = 4
  rows = max(1, math.ceil(len(cs) / cols))
  fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols, 2.2 * rows), squeeze=False, sharex=True)
  n = np.arange(2, MAX_SEEDS + 1)
  for ax, c in zip(axes.flat, cs):
    stats = [interval(c, int(k)) for k in n]
    half = np.array([scipy.stats.t.ppf(0.975, df) * se for _, se, df in stats])
    mean = stats[0][0]
    ax.plot(n, half, color="#0173b2", lw=1.5)
    need = _room(mean, c["relation"], c["tolerance"])
    if need > 0:
      ax.axhline(need, color="#d55e00", lw=1, ls="--")
    ax.axvline(len(c["per_seed"]), color="0.6", lw=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # decades only: readable at this size
    ax.set_title(c["id"], fontsize=7)
    ax.tick_params(labelsize=7)
  for ax in list(axes.flat)[len(cs):]:
    ax.axis("off")
  fig.supxlabel("seeds n (grey: today's)", fontsize=8)
  fig.supylabel("95% CI half-width (points); dashed: what decides it", fontsize=8)
  fig.tight_layout()
  from mone.chapters import plots
  plots.save_png(fig, path, dpi=90)


def _room(mean: float, relation: str, tolerance: float) -> float:
  """The half-width below which the CI around `mean` decides the claim (either way): the distance
  from the mean to the nearest edge that decides it."""
  if relation == "beats":
    return max(abs(mean), abs(mean - tolerance)) if mean > 0 or mean < tolerance else 0.0
  if relation == "no_worse":
    return abs(mean + tolerance)
  return max(tolerance - abs(mean), abs(mean) - tolerance)
