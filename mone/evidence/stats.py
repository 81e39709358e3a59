"""The statistics behind every trained verdict: t-based confidence intervals (paired, or Welch's
for independent arms), the verdict an interval gives against a tolerance region, the p-value of
the test it performs, and Holm's family-wise procedure. Plain numbers in, plain numbers out: claim
records are `mone.evidence.claims`, the book's p-values and power `mone.evidence.significance`.

An interval of MoNE minus the baseline is judged by one of three relations (`RELATIONS`, `decide`):
"matches" is reproduced when the CI lies inside [-tolerance, +tolerance], "no_worse" when it lies
above -tolerance ("without any accuracy drop"), "beats" when it excludes 0 in MoNE's favour. Not
reproduced when the CI rules the claim out (lies wholly outside the region; for "beats", rules out
any advantage larger than the tolerance), inconclusive otherwise. `interval_p_value` is the p of the
test the interval performs (each one-sided test at twice its tail; "matches" two of them), so that
p < 0.05 exactly when the 95% interval gives the verdict: a claim not reproduced gets the p of the
test that ruled it out, any other the p of the test that would reproduce it.
"""
import math

import numpy as np
import scipy.stats

RELATIONS = ("matches", "no_worse", "beats")
FAMILY_ALPHA = 0.05


def paired_ci(diffs, level: float = 0.95) -> tuple[float, float, float]:
  """(mean, low, high) of the t-based confidence interval of the mean of paired differences.
  With one difference the interval is unbounded (NaN); with identical ones it is a point."""
  d = np.asarray(list(diffs), float)
  if d.ndim != 1 or not len(d):
    raise ValueError(f"diffs must be a non-empty list of numbers, got {diffs!r}")
  if not 0 < level < 1:
    raise ValueError(f"level must be in (0, 1), got {level}")
  mean = float(d.mean())
  if len(d) < 2:
    return mean, float("nan"), float("nan")
  half = float(scipy.stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d)))
  return mean, mean - half, mean + half


def welch_se_df(var_a: float, n_a: int, var_b: float, n_b: int) -> tuple[float, float]:
  """(standard error, Welch-Satterthwaite degrees of freedom) of a difference of two independent
  means, from each arm's sample variance and count (at least 2). No spread in either arm:
  standard error 0, degrees of freedom n_a + n_b - 2 (the interval is then a point). `welch` calls
  it with the arms' own counts; the power estimate (`significance.interval`) with n seeds per arm."""
  if min(n_a, n_b) < 2:
    raise ValueError(f"n_a and n_b must be at least 2, got {n_a} and {n_b}")
  va, vb = var_a / n_a, var_b / n_b
  se = math.sqrt(va + vb)
  df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1)) if se > 0 else n_a + n_b - 2.0
  return se, float(df)


def welch(a, b) -> tuple[float, float, float]:
  """(mean(a) - mean(b), its standard error, Welch-Satterthwaite degrees of freedom) of two
  independent samples of at least 2 values each (`welch_se_df`)."""
  a, b = np.asarray(list(a), float), np.asarray(list(b), float)
  if a.ndim != 1 or b.ndim != 1 or min(len(a), len(b)) < 2:
    raise ValueError(f"a and b must be lists of at least 2 numbers, got {len(a)} and {len(b)} values")
  se, df = welch_se_df(float(a.var(ddof=1)), len(a), float(b.var(ddof=1)), len(b))
  return float(a.mean() - b.mean()), se, df


def welch_ci(a, b, level: float = 0.95) -> tuple[float, float, float]:
  """(mean, low, high) of Welch's t-based confidence interval of mean(a) - mean(b), for two
  independent samples (unpaired); with fewer than 2 values in an arm the interval is unbounded (NaN)."""
  if not 0 < level < 1:
    raise ValueError(f"level must be in (0, 1), got {level}")
  a, b = list(a), list(b)
  if not a or not b:
    raise ValueError(f"a and b must be non-empty lists of numbers, got {a!r} and {b!r}")
  if min(len(a), len(b)) < 2:
    return float(np.mean(a) - np.mean(b)), float("nan"), float("nan")
  mean, se, df = welch(a, b)
  half = float(scipy.stats.t.ppf(0.5 + level / 2, df) * se)
  return mean, mean - half, mean + half


def arm_correlation(a, b) -> float | None:
  """Pearson's correlation of the two arms' values across seeds: what pairing gains (a paired
  interval is narrower than Welch's where it is positive). None with fewer than 3 seeds (two
  points always correlate fully) or an arm that does not vary. For information only."""
  a, b = np.asarray(a, float), np.asarray(b, float)
  if len(a) < 3 or a.std() == 0 or b.std() == 0:
    return None
  return float(np.corrcoef(a, b)[0, 1])


def decide(relation: str, low: float, high: float, tolerance: float) -> str:
  """The verdict of a CI [low, high] of (MoNE - baseline) for a relation (see the module doc)."""
  if relation not in RELATIONS:
    raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
  if not tolerance >= 0:
    raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
  if relation == "matches":
    if -tolerance <= low and high <= tolerance:
      return "reproduced"
    return "not reproduced" if high < -tolerance or low > tolerance else "inconclusive"
  if relation == "no_worse":
    return "reproduced" if low >= -tolerance else "not reproduced" if high < -tolerance else "inconclusive"
  return "reproduced" if low > 0 else "not reproduced" if high <= tolerance else "inconclusive"


def decided(relation: str, low, high, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
  """(reproduced, ruled out): `decide` over arrays of CIs [low, high] at once (tested against it)."""
  if relation == "matches":
    return (-tolerance <= low) & (high <= tolerance), (high < -tolerance) | (low > tolerance)
  if relation == "no_worse":
    return low >= -tolerance, high < -tolerance
  if relation == "beats":  # a CI above 0 and below the tolerance is reproduced, as in `decide`
    return low > 0, (high <= tolerance) & ~(low > 0)
  raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")


def _t(mean: float, se: float, x: float) -> float:
  """The t statistic of mean against x; +-inf where there is no spread."""
  if se == 0:
    return math.inf if mean > x else -math.inf if mean < x else 0.0
  return (mean - x) / se


def interval_p_value(mean: float, se: float, df: float, relation: str, tolerance: float, verdict: str) -> float:
  """The p-value of the test a t-interval (mean, standard error, degrees of freedom) performs for
  a verdict (see the module doc)."""
  if relation not in RELATIONS:
    raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
  # T: Student's t with the interval's df; t(x) = (mean - x) / se. "beats": 2 P(T >= t(0)), ruled out
  # 2 P(T <= t(tol)); "no_worse": 2 P(T >= t(-tol)), ruled out 2 P(T <= t(-tol)); "matches": two
  # one-sided tests, the larger of 2 P(T >= t(-tol)) and 2 P(T <= t(tol)), ruled out the smaller of
  # 2 P(T <= t(-tol)) and 2 P(T >= t(tol)). The 2 makes each one half of the two-sided 95% interval.
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


def p_value(diffs, relation: str, tolerance: float, verdict: str) -> float | None:
  """The p-value of the test behind a verdict from paired differences (the paired t-interval:
  standard error s / sqrt(n), n - 1 degrees of freedom); None with fewer than 2 differences."""
  d = np.asarray(list(diffs), float)
  if len(d) < 2:
    return None
  return interval_p_value(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(len(d)), len(d) - 1.0,
                          relation, tolerance, verdict)


def holm(p_values: dict, alpha: float = FAMILY_ALPHA) -> dict:
  """{key: kept} for {key: p}: Holm's step-down procedure at family-wise error alpha (the k-th
  smallest p is compared with alpha / (m - k + 1) until one fails)."""
  if not 0 < alpha < 1:
    raise ValueError(f"alpha must be in (0, 1), got {alpha}")
  order = sorted(p_values, key=lambda k: p_values[k])
  m, kept, going = len(order), {}, True
  for k, key in enumerate(order):
    going = going and p_values[key] <= alpha / (m - k)
    kept[key] = going
  return kept


def signed_rank_cdf(n: int) -> np.ndarray:
  """P(W+ <= w) for w = 0 .. n(n+1)/2, W+ the Wilcoxon signed-rank statistic of n differences
  under the null (each rank's sign a fair coin), exact: the count of subsets of {1..n} by sum."""
  counts = np.zeros(n * (n + 1) // 2 + 1)
  counts[0] = 1
  for r in range(1, n + 1):
    counts[r:] = counts[r:] + counts[:-r].copy()
  return np.cumsum(counts) / 2.0 ** n


def hodges_lehmann(diffs, level: float = 0.95) -> tuple[float, float, float]:
  """(estimate, low, high): the Hodges-Lehmann estimate of the centre of paired differences (the
  median of their Walsh averages, (d_i + d_j) / 2 for i <= j) with its exact distribution-free
  interval, the Walsh averages of ranks k and M + 1 - k (M of them; k - 1 the largest w with
  P(W+ <= w) <= (1 - level) / 2). One run far off (a run stuck at chance) moves it by one rank, not
  by its size. With too few differences for the level (n < 6 at 95%) the interval is unbounded (NaN)."""
  d = np.asarray(list(diffs), float)
  if d.ndim != 1 or not len(d):
    raise ValueError(f"diffs must be a non-empty list of numbers, got {diffs!r}")
  walsh = np.sort([(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))])
  below = np.nonzero(signed_rank_cdf(len(d)) <= (1 - level) / 2)[0]
  if not len(below):
    return float(np.median(walsh)), math.nan, math.nan
  k = int(below[-1]) + 1  # the rank (1-based) of the interval's low end
  return float(np.median(walsh)), float(walsh[k - 1]), float(walsh[len(walsh) - k])


def robust(diffs) -> dict:
  """Summaries of paired differences that one outlying seed cannot drive: their median, and the
  Hodges-Lehmann estimate with its 95% interval (`hodges_lehmann`); rounded as claims are."""
  hl, lo, hi = hodges_lehmann(diffs)
  r = lambda x: None if math.isnan(x) else round(x, 4)
  return {"n": len(list(diffs)), "median": r(float(np.median(list(diffs)))), "hodges_lehmann": r(hl),
          "hl_ci95": [r(lo), r(hi)]}
