"""The paper's claims as data, and the one place their verdicts are decided.

Each chapter writes its claims, one JSON object each, to `results/<chapter>/claims.json` (`write`,
`load`); the book's pages are rendered from those files (`mone.evidence.verdicts`, `.pages`), so no
verdict is typed twice. One function decides each kind of evidence: `trained` (a t-based 95%
interval of MoNE minus the baseline over seeds, judged by `stats.decide`; inconclusive below
`MIN_SEEDS`), `arithmetic` (a computed number against the paper's, within a tolerance), `timing`
(one of the paper's wall-clock claims, from the interval over `MIN_RUNS` or more benchmark processes)
and `target` (a speed target this repository set itself, from the same kind of interval: met, missed or
within noise; never counted as a reproduction). `not_testable`
records a claim this profile cannot test; `at_flops` reads a baseline's accuracy-FLOPs curve at
MoNE's FLOPs, interpolating only where the curve brackets them.

The interval is paired by seed or Welch's as the claim's family is designed (`PAIRING`, with the
premises), never as the numbers would decide; `trained` records the test, its reason and the arms'
correlation, which decides nothing.
"""
import json
import math
from pathlib import Path

import numpy as np

from mone import results
from mone.evidence import declarations, stats

KINDS = ("trained", "arithmetic", "timing", "target")
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not testable")
TARGET_VERDICTS = ("met", "missed", "within noise")  # a target of this repository's is not the paper's
MIN_SEEDS = 3  # fewer seeds than this: a trained comparison is inconclusive
MIN_RUNS = 3   # fewer benchmark processes than this: a timing is inconclusive, a target within noise
FIELDS = ("id", "claim", "paper", "measured", "kind", "n_seeds", "ci95", "tolerance", "verdict")
HEADLINE = "fig3.mone_matches_vit"  # the paper's headline: MoNE matches the dense ViT at about half the FLOPs
_DIGITS = 4  # significant digits kept in claims.json: enough for every comparison made here


def rounded(x, digits: int = _DIGITS):
  """x at `digits` significant digits (floats only), so that claims.json does not carry the
  17th digit of a number that varies across machines in the 9th."""
  if isinstance(x, float) and math.isfinite(x) and x != 0:
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))
  if isinstance(x, (list, tuple)):
    return [rounded(v, digits) for v in x]
  if isinstance(x, dict):
    return {k: rounded(v, digits) for k, v in x.items()}
  return x


def verdicts_of(kind: str) -> tuple[str, ...]:
  """The verdicts a claim of `kind` can have: a target's are met / missed / within noise."""
  return TARGET_VERDICTS if kind == "target" else VERDICTS


def _claim(id, claim, paper, measured, kind, n_seeds, ci95, tolerance, verdict, **extra) -> dict:
  if kind not in KINDS:
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
  if verdict not in verdicts_of(kind):
    raise ValueError(f"verdict must be one of {verdicts_of(kind)}, got {verdict!r}")
  if not isinstance(id, str) or not id or " " in id:
    raise ValueError(f"id must be a non-empty string without spaces, got {id!r}")
  return rounded({"id": id, "claim": claim, "paper": paper, "measured": measured, "kind": kind,
                  "n_seeds": n_seeds, "ci95": ci95, "tolerance": tolerance, "verdict": verdict, **extra})


# Paired or Welch, per claim or family of claims (the longest id prefix that matches), by design: each
# chapter declares it beside its claims (`mone.evidence.declarations`, where the premises are explained).
# A claim of no family is paired: its caller pairs the seeds (a test checks that every chapter's claims
# belong to a family).
def __getattr__(name):
  """`PAIRING`: {claim id or prefix: (test, why)}, generated from the chapters' declarations."""
  if name == "PAIRING":
    return declarations.pairing()
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PAIRING_DEFAULT = ("paired", "the caller pairs the seeds")


def pairing(claim_id: str) -> tuple[str, str]:
  """(test, why) of a claim's family in `PAIRING` (the longest matching id prefix), else
  `PAIRING_DEFAULT`."""
  table = declarations.pairing()
  family = max((p for p in table if claim_id.startswith(p)), key=len, default=None)
  return table[family] if family else PAIRING_DEFAULT


def interval_test(claim_id: str, both_arms: bool = True) -> tuple[str, str]:
  """(test, why) of the interval that decides a claim: its family's (`pairing`), except that
  Welch's needs both arms' values, so a claim given only per-seed differences is still decided
  paired, and says so."""
  test, why = pairing(claim_id)
  if test == "welch" and not both_arms:
    return "paired", (f"{why}: the design calls for Welch's unpaired interval, but the chapter gives only the "
                      "per-seed differences, so it is still decided paired")
  return test, why


def trained(id: str, claim: str, paper, mone: dict, baseline: dict | None = None, *,
            relation: str | None = None, tolerance: float | None = None, unit: str = "points",
            learned: bool = True, note: str = "") -> dict:
  """A claim comparing trained models over seeds (paired or not: `PAIRING`).

  mone, baseline: {seed: value} for the two arms (e.g. accuracy in %), over the seeds both
  have; the difference is mone[s] - baseline[s]. baseline=None: `mone` already holds the
  per-seed differences (for claims whose quantity is itself a contrast, e.g. a drop); a family
  compared unpaired (`PAIRING`) needs both arms: given only differences, it is still decided
  paired, and `test_why` says so. learned=False: some compared run never left the
  chance plateau; the claim is then inconclusive whatever the numbers (a model that learned
  nothing tests no method). measured is the mean difference, in `unit`. relation, tolerance: how
  the interval decides (`stats.decide`), as the claim's chapter declares it (`declarations.rule`);
  given here only for a claim no chapter declares, and never other than its declaration.
  """
  if not isinstance(mone, dict) or not mone:
    raise ValueError(f"mone must be a non-empty {{seed: value}} dict, got {mone!r}")
  relation, tolerance = decision_rule(id, relation, tolerance)
  test, test_why = interval_test(id, both_arms=baseline is not None)
  arms = {}
  if baseline is None:
    seeds = sorted(mone)
    diffs = [float(mone[s]) for s in seeds]
  else:
    seeds = sorted(set(mone) & set(baseline))
    if not seeds:
      raise ValueError(f"no seed in common: mone has {sorted(mone)}, baseline {sorted(baseline)}")
    a, b = [float(mone[s]) for s in seeds], [float(baseline[s]) for s in seeds]
    diffs = [x - y for x, y in zip(a, b)]
    arms = {"per_seed_mone": a, "per_seed_baseline": b, "arm_correlation": stats.arm_correlation(a, b)}
  # Welch over the seeds both arms have, as the paired interval: one set of seeds per claim.
  mean, low, high = (stats.welch_ci(arms["per_seed_mone"], arms["per_seed_baseline"]) if test == "welch"
                     else stats.paired_ci(diffs))
  ci = None if math.isnan(low) else [low, high]
  if not learned:
    verdict, why = "inconclusive", "a compared run never left the chance plateau"
  elif len(seeds) < MIN_SEEDS:
    verdict, why = "inconclusive", f"a verdict needs at least {MIN_SEEDS} seeds"
  else:
    verdict, why = stats.decide(relation, low, high, tolerance), ""
  return _claim(id, claim, paper, mean, "trained", len(seeds), ci, tolerance, verdict, relation=relation,
                unit=unit, seeds=seeds, per_seed=diffs, why=why, note=note, test=test, test_why=test_why, **arms)


def decision_rule(id: str, relation: str | None = None, tolerance: float | None = None) -> tuple[str, float]:
  """(relation, tolerance) that decides claim `id`: its chapter's declaration (`declarations.rule`);
  for a claim no chapter declares, the relation and tolerance given. Given values that differ from
  the declaration, or none where there is no declaration, are a ValueError naming the claim."""
  declared = declarations.rule(id)
  if declared is None:
    if relation is None or tolerance is None:
      raise ValueError(f"claim {id!r}: no chapter declares its rule (declarations.Claim.rule), so relation and "
                       f"tolerance must be given, got relation={relation!r}, tolerance={tolerance!r}")
    return relation, tolerance
  if (relation is not None and relation != declared[0]) or (tolerance is not None and tolerance != declared[1]):
    raise ValueError(f"claim {id!r}: relation={relation!r}, tolerance={tolerance!r} differ from its declared "
                     f"rule {declared} (declarations.Claim.rule)")
  return declared


def arithmetic(id: str, claim: str, paper, measured: float, *, tolerance: float = 0.0,
               relative: bool = False, at_least: float | None = None, unit: str = "", note: str = "") -> dict:
  """A number computed without training. Reproduced when abs(measured - paper) <= tolerance
  (relative: tolerance is a fraction of abs(paper)), or, with at_least, when measured >= at_least
  (for claims such as "about 2x fewer FLOPs", where `paper` is prose)."""
  if at_least is not None:
    ok = measured >= at_least
  else:
    bound = tolerance * abs(paper) if relative else tolerance
    ok = abs(measured - paper) <= bound + 1e-12
  return _claim(id, claim, paper, float(measured), "arithmetic", None, None, tolerance,
                "reproduced" if ok else "not reproduced", unit=unit, at_least=at_least, relative=relative, note=note)


def _runs_interval(values, threshold: float, at_most: bool) -> tuple[float, list | None, str]:
  """(mean, 95% t-interval over benchmark processes or None below MIN_RUNS, side): side is 'holds'
  where the interval lies wholly on the claim's side of threshold (>= it, or <= with at_most),
  'fails' where wholly on the other, 'open' otherwise."""
  if not threshold > 0:
    raise ValueError(f"threshold must be > 0, got {threshold!r}")
  v = [float(x) for x in values]
  if not v or not all(math.isfinite(x) for x in v):
    raise ValueError(f"values must be finite measurements, one per benchmark process, got {values!r}")
  mean, lo, hi = stats.paired_ci(v)
  if len(v) < MIN_RUNS:
    return mean, None, "open"
  if at_most:
    side = "holds" if hi <= threshold else "fails" if lo > threshold else "open"
  else:
    side = "holds" if lo >= threshold else "fails" if hi < threshold else "open"
  return mean, [lo, hi], side


def timing(id: str, claim: str, paper, values, *, threshold: float, at_most: bool = False, unit: str = "",
           note: str = "") -> dict:
  """One of the paper's wall-clock claims, measured once per benchmark process (`values`, at least
  MIN_RUNS). Reproduced when the 95% interval of their mean lies wholly at or above threshold (at or
  below with at_most), not reproduced when wholly on the other side, else inconclusive."""
  mean, ci, side = _runs_interval(values, threshold, at_most)
  verdict = {"holds": "reproduced", "fails": "not reproduced", "open": "inconclusive"}[side]
  why = (f"{len(values)} benchmark process(es); at least {MIN_RUNS} are needed" if ci is None else
         f"the interval contains the threshold {threshold:g}" if side == "open" else "")
  return _claim(id, claim, paper, mean, "timing", None, ci, None, verdict, threshold=threshold,
                relation="at most" if at_most else "at least", n_runs=len(values), per_run=[float(x) for x in values],
                unit=unit, why=why, note=note)


def target(id: str, claim: str, values, *, need: float, at_most: bool = False, unit: str = "", note: str = "") -> dict:
  """A speed target this repository set itself (not the paper's), from one value per benchmark
  process: met / missed when the 95% interval lies wholly on one side of `need`, else within noise."""
  mean, ci, side = _runs_interval(values, need, at_most)
  verdict = {"holds": "met", "fails": "missed", "open": "within noise"}[side]
  return _claim(id, claim, "-", mean, "target", None, ci, None, verdict, threshold=need,
                relation="at most" if at_most else "at least", n_runs=len(values),
                per_run=[float(x) for x in values], unit=unit, note=note)


def not_testable(id: str, claim: str, paper, kind: str, why: str) -> dict:
  """A claim this profile cannot test, and why."""
  return _claim(id, claim, paper, None, kind, None, None, None, "not testable", why=why)


def at_flops(curve: list[dict], gflops: float) -> float:
  """A baseline's accuracy at gflops, linear between the points of its accuracy-FLOPs curve
  ({'gflops', 'accuracy_pct'} dicts) that bracket it; NaN where none do (no extrapolation)."""
  pts = sorted(curve, key=lambda p: p["gflops"])
  xs = np.array([p["gflops"] for p in pts], float)
  if len(xs) < 1 or gflops < xs[0] * (1 - 1e-9) or gflops > xs[-1] * (1 + 1e-9):
    return float("nan")
  return float(np.interp(gflops, xs, [p["accuracy_pct"] for p in pts]))


# --------------------------------------------------------------------- files ---


def check(claims: list[dict]) -> list[dict]:
  """Raises on a malformed claims list: a missing field, an unknown kind or verdict, a
  duplicate id, or a reproduced trained claim with fewer than MIN_SEEDS seeds."""
  ids = [c.get("id") for c in claims]
  if len(set(ids)) != len(ids):
    raise ValueError(f"claim ids must be unique, got {ids}")
  for c in claims:
    missing = [f for f in FIELDS if f not in c]
    if missing:
      raise ValueError(f"claim {c.get('id')!r} lacks {missing}")
    if c["kind"] not in KINDS or c["verdict"] not in verdicts_of(c["kind"]):
      raise ValueError(f"claim {c['id']!r}: kind {c['kind']!r} / verdict {c['verdict']!r} not in "
                       f"{KINDS} / {verdicts_of(c['kind']) if c['kind'] in KINDS else VERDICTS}")
    if c["kind"] == "trained" and c["verdict"] in ("reproduced", "not reproduced") and (c["n_seeds"] or 0) < MIN_SEEDS:
      raise ValueError(f"claim {c['id']!r} is decided from {c['n_seeds']} seed(s); at least {MIN_SEEDS} are needed")
  return claims


def write(claims: list[dict], notebook: str) -> Path:
  """Writes results/<notebook>/claims.json (atomically) and returns its path."""
  path = results.results_root() / notebook / "claims.json"
  results.atomic_write_json(path, check(claims))
  return path


def load(root: Path | None = None) -> dict[str, list[dict]]:
  """Every chapter's claims under root (default: `results.results_root()`), {chapter: claims},
  in chapter order."""
  root = Path(root) if root is not None else results.results_root()
  return {p.parent.name: check(json.loads(p.read_text())) for p in sorted(root.glob("*/claims.json"))}


def write_caveats(caveats: list[str], notebook: str) -> Path:
  """Writes results/<notebook>/caveats.json (atomically): sentences, generated from measurements,
  that qualify every claim of the chapter, such as a task that does not separate the models it
  compares. The landing page prints them under the chapter's heading, so a reader of the table
  sees them beside the verdicts. An empty list writes an empty file: the caveat no longer holds."""
  if not isinstance(caveats, list) or not all(isinstance(c, str) and c.strip() for c in caveats):
    raise ValueError(f"caveats must be a list of non-empty sentences, got {caveats!r}")
  path = results.results_root() / notebook / "caveats.json"
  results.atomic_write_json(path, caveats)
  return path


def load_caveats(root: Path | None = None) -> dict[str, list[str]]:
  """Every chapter's caveats under root (default: `results.results_root()`), {chapter: sentences}."""
  root = Path(root) if root is not None else results.results_root()
  return {p.parent.name: json.loads(p.read_text()) for p in sorted(root.glob("*/caveats.json"))}


def counted(c: dict) -> dict:
  """The result a tally counts and the figures draw: the pre-registered one where the claim's
  definition changed after its plan (`plan_deviation`, `mone.evidence.preregistration`), else the
  claim itself."""
  return c["plan_deviation"]["preregistered"] if "plan_deviation" in c else c


def counted_verdict(c: dict) -> str:
  """The verdict of `counted`."""
  return counted(c)["verdict"]


def would_decide(c) -> str:
  """Which way more seeds would decide an inconclusive claim if its mean held: the verdict of the
  interval shrunk to its mean ("reproduced", or "not reproduced": the mean lies where the claim is
  ruled out, e.g. MoNE behind a baseline it should beat)."""
  return stats.decide(c["relation"], c["measured"], c["measured"], c["tolerance"])


def of_kind(chapters: dict[str, list[dict]], kind: str) -> dict[str, list[dict]]:
  """{chapter: claims} (as `load` returns) keeping only the claims of `kind`, and only the
  chapters that have one."""
  if kind not in KINDS:
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
  kept = {chapter: [c for c in cs if c["kind"] == kind] for chapter, cs in chapters.items()}
  return {chapter: cs for chapter, cs in kept.items() if cs}

