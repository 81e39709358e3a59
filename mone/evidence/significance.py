"""How strong each trained verdict is: its p-value, a family-wise verdict over every trained
claim, and how many seeds would decide it.

Each p-value is that of the test the claim's 95% t-interval performs (`interval`: paired, or Welch's
as `claims.PAIRING` says; `stats.interval_p_value`), so p < 0.05 exactly when the interval gives the
verdict. Twenty-odd claims at 95% each would hold about one false verdict by chance, so `annotate`
controls the family-wise error at 5% over every trained claim with a p-value (Holm's step-down,
`stats.holm`): `verdict_familywise` keeps a verdict where Holm keeps its test, else it is
inconclusive; the book shows both.

`seeds_to_decide` estimates power: the fewest paired seeds (per arm for Welch's; 3 to MAX_SEEDS, else
None) at which that interval decides the claim the way its mean points (`claims.would_decide`) with
probability POWER (80%), simulating seeds from the mean and spread it shows (`power`).
"""
import functools
import json
import math

import numpy as np
import scipy.stats

from mone.evidence import claims as claims_lib
from mone.evidence import stats

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
      return stats.welch(a, b)
    return (float(a.mean() - b.mean()),
            *stats.welch_se_df(float(a.var(ddof=1)), n, float(b.var(ddof=1)), n))  # n seeds per arm
  d = np.asarray(c["per_seed"], float)
  n = n or len(d)
  return float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n), n - 1.0


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
    reproduced, ruled_out = stats.decided(c["relation"], mean - half, mean + half, c["tolerance"])
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


def _p_value(c: dict) -> float:
  """The p-value of the test behind a trained claim's verdict, at claims.json's precision."""
  return claims_lib.rounded(stats.interval_p_value(*interval(c), c["relation"], c["tolerance"], c["verdict"]))


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
        c["p_value"] = _p_value(c)
        c["seeds_to_decide"] = claim_seeds_to_decide(c) if len(d) >= claims_lib.MIN_SEEDS else None
        if (dev := c.get("plan_deviation")) is not None:  # the family holds the plan's test, not the changed one
          pre = dev["preregistered"] = dict(dev["preregistered"])
          pre["p_value"] = _p_value(pre)
        if len(d) >= claims_lib.MIN_SEEDS and not c.get("exploratory"):  # fewer seeds decide nothing; an exploratory claim is no test
          ps[c["id"]] = c["plan_deviation"]["preregistered"]["p_value"] if "plan_deviation" in c else c["p_value"]
      out[chapter].append(c)
  kept = stats.holm(ps) if ps else {}
  for rows in out.values():
    for c in rows:
      if c["id"] in kept:
        verdict = claims_lib.counted_verdict(c)
        undecided = verdict == "inconclusive" or not kept[c["id"]]
        c["verdict_familywise"] = "inconclusive" if undecided else verdict
  return out


def tally(claims: list[dict]) -> dict[str, int]:
  """The book's one family-wise tally: {'reproduced', 'not reproduced', 'inconclusive'} counts over the
  claims in Holm's family (those `annotate` gave a `verdict_familywise`), each claim counted once,
  by the definition registered first (`claims.counted_verdict`: a claim changed after a plan is held
  to that plan's test). The landing page, the claims tables and the seed-plan readouts all count
  with it."""
  fw = [c["verdict_familywise"] for c in claims if "verdict_familywise" in c]
  r, x = fw.count("reproduced"), fw.count("not reproduced")
  return {"reproduced": r, "not reproduced": x, "inconclusive": len(fw) - r - x}


def tally_text(t: dict[str, int]) -> str:
  """'7 reproduced, 1 not reproduced, 13 inconclusive' of `tally`."""
  return f"{t['reproduced']} reproduced, {t['not reproduced']} not reproduced, {t['inconclusive']} inconclusive"
