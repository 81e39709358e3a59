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

`seeds_to_decide` is a power estimate: the fewest paired seeds (per arm for Welch's; from 3 to
MAX_SEEDS) at which the same 95% t-interval decides the claim the way its mean points
(`claims.would_decide`) with probability POWER (80%), if the mean and spread it shows were the
truth: estimated by simulating sets of seeds (`power`); None past MAX_SEEDS.
"""
import functools
import json
import math

import numpy as np
import scipy.stats

from mone.chapters import claims as claims_lib

FAMILY_ALPHA = 0.05
POWER = 0.8        # the power `seeds_to_decide` asks for
MAX_SEEDS = 100    # past this many seeds, `seeds_to_decide` is None
POWER_SIMS = 10_000  # simulated sets of seeds per estimate: its standard error is under 0.005


def interval(c: dict, n: int | None = None) -> tuple[float, float, float]:
  """(mean, standard error, degrees of freedom) of the t-interval behind a trained claim's verdict:
  Welch's where the claim records it (`test` "welch", from its arms `per_seed_mone` and
  `per_seed_baseline`), else the paired one (its `per_seed` differences). n: the same at n seeds
  (per arm) if today's spread held."""
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


def decided(relation: str, low, high, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
  """(reproduced, ruled out): `claims.decide` over arrays of CIs [low, high] at once (tested against it)."""
  if relation == "matches":
    return (-tolerance <= low) & (high <= tolerance), (high < -tolerance) | (low > tolerance)
  if relation == "no_worse":
    return low >= -tolerance, high < -tolerance
  if relation == "beats":  # a CI above 0 and below the tolerance is reproduced, as in `claims.decide`
    return low > 0, (high <= tolerance) & ~(low > 0)
  raise ValueError(f"relation must be one of {claims_lib.RELATIONS}, got {relation!r}")


def simulated_verdicts(c: dict, n: int, sims: int = POWER_SIMS, seed: int = 0) -> tuple[float, float]:
  """(share reproduced, share ruled out) of `sims` simulated sets of n seeds of a trained claim,
  each decided by its 95% t-interval: normal per-seed differences with the claim's mean and sample
  SD (Welch's: each arm normal with its own, n per arm), as if those were the truth. Fixed-seed, so
  the same on every machine."""
  rng = np.random.default_rng(seed)
  if c.get("test") == "welch":
    a, b = np.asarray(c["per_seed_mone"], float), np.asarray(c["per_seed_baseline"], float)
    xa = rng.normal(a.mean(), a.std(ddof=1), (sims, n))
    xb = rng.normal(b.mean(), b.std(ddof=1), (sims, n))
    va, vb = xa.var(axis=1, ddof=1) / n, xb.var(axis=1, ddof=1) / n
    mean, se = xa.mean(1) - xb.mean(1), np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n - 1))
  else:
    d = np.asarray(c["per_seed"], float)
    x = rng.normal(d.mean(), d.std(ddof=1), (sims, n))
    mean, se, df = x.mean(1), x.std(axis=1, ddof=1) / math.sqrt(n), np.full(sims, n - 1.0)
  half = scipy.stats.t.ppf(0.975, df) * se
  with np.errstate(invalid="ignore"):  # no spread at all: a zero-width interval
    reproduced, ruled_out = decided(c["relation"], mean - half, mean + half, c["tolerance"])
  return float(reproduced.mean()), float(ruled_out.mean())


def power(c: dict, n: int) -> float:
  """The estimated probability that n seeds decide the claim the way its mean points
  (`claims.would_decide`), if its mean and spread were the truth (`simulated_verdicts`)."""
  reproduced, ruled_out = simulated_verdicts(c, n)
  return reproduced if claims_lib.would_decide(c) == "reproduced" else ruled_out


def claim_seeds_to_decide(c: dict) -> int | None:
  """The fewest seeds in [MIN_SEEDS, MAX_SEEDS] with `power` of at least POWER, or None. Found by
  bisection: power grows with n (up to the simulation's noise, under 0.005). Remembered per claim
  and process: every chapter's page annotates every claim again."""
  keys = ("per_seed", "per_seed_mone", "per_seed_baseline", "relation", "tolerance", "test", "measured")
  return _seeds_to_decide(json.dumps({k: c.get(k) for k in keys}, sort_keys=True))


@functools.lru_cache(maxsize=None)
def _seeds_to_decide(key: str) -> int | None:
  c = json.loads(key)
  if len(c.get("per_seed") or []) < 2 or power(c, MAX_SEEDS) < POWER:
    return None
  lo, hi = claims_lib.MIN_SEEDS, MAX_SEEDS  # power(hi) >= POWER throughout
  if power(c, lo) >= POWER:
    return lo
  while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (lo, mid) if power(c, mid) >= POWER else (mid, hi)
  return hi


def seeds_to_decide(mean: float, sd: float, relation: str, tolerance: float) -> int | None:
  """`claim_seeds_to_decide` of a paired claim with this mean and per-seed SD."""
  d = mean + sd * np.array([-1.0, 1.0]) / math.sqrt(2)  # two differences with exactly this mean and SD
  return claim_seeds_to_decide({"per_seed": list(d), "relation": relation, "tolerance": tolerance, "measured": mean})


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
        if len(d) >= claims_lib.MIN_SEEDS and not c.get("exploratory"):  # fewer seeds decide nothing; an exploratory claim is no test
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
