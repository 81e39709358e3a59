"""The paper's claims as data, and the one place their verdicts are decided.

Every chapter tests a few of the paper's claims and writes them, one JSON object each, to
`results/<chapter>/claims.json`. The book's landing page and each chapter's opening table are
rendered from those files (`markdown_table`, `tables_page`, `mone.chapters.pages`), so no verdict is typed twice.

A claim is decided by one of three functions, one per kind of evidence:

* `trained`: a comparison between trained models over seeds: a t-based 95% confidence
  interval of MoNE minus the baseline, and with fewer than `MIN_SEEDS` seeds the verdict is
  "inconclusive", whatever the point estimate. The interval is paired (the per-seed
  differences, `paired_ci`) or unpaired (Welch's, `welch_ci`) as the claim's family is
  designed (`PAIRING`, below), never as the numbers would decide it. Three relations:

  - "matches": reproduced when the CI lies inside [-tolerance, +tolerance];
  - "no_worse": reproduced when the CI lies above -tolerance ("without any accuracy drop");
  - "beats": reproduced when the CI excludes 0 in MoNE's favour.

  Not reproduced when the CI rules the claim out (it lies entirely outside the region; for
  "beats", when it rules out any advantage larger than the tolerance), inconclusive otherwise.

* `arithmetic`: a number computed without training (a FLOP count, a capacity), compared with
  the paper's within a tolerance.
* `timing`: a wall-clock measurement against a target, inconclusive within the run-to-run
  noise (`margin`) of one benchmark run.

Paired or unpaired, by design. Pairing by seed is justified where a seed gives both arms what
they share: the same data order (`mone.data.pipeline.train_batches` draws batches from the seed
and the step alone) and the same initial weights for every parameter both have (a Flax model
draws a parameter from the seed and its path), or where both quantities are measured on the same
trained model. A paired interval is valid whatever the arms' correlation; it gains where they
correlate. Welch's interval assumes independent arms, which holds only where a seed shares
nothing between them. `PAIRING` states the choice and its reason for each family of claims (an
id prefix), and `trained` records both (`test`, `test_why`) with, where it has both arms, their
values per seed and their correlation across seeds (`arm_correlation`, for information: it
decides nothing). tests/test_claims.py and tests/test_significance.py check the premises: the
initial weights of every pair of model kinds compared, and the batch order. A pair trained on
two devices keeps both premises but not the arithmetic: a run retrained on another device
differs from its original about as much as a run at another seed (`mone.chapters.devices`), so
there pairing gains little, though the paired interval stays valid; `plan.reading` reads a run's
CPU twin where the single-device reading is in force.

`not_testable` records a claim this profile cannot test, with the reason. Baselines with an
accuracy-FLOPs curve are compared at MoNE's FLOPs with `at_flops`, which interpolates only
where the curve brackets the point (no extrapolation).
"""
import json
import math
from pathlib import Path

KINDS = ("trained", "arithmetic", "timing")
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not testable")
RELATIONS = ("matches", "no_worse", "beats")
MIN_SEEDS = 3  # fewer seeds than this: a trained comparison is inconclusive
FIELDS = ("id", "claim", "paper", "measured", "kind", "n_seeds", "ci95", "tolerance", "verdict")
_DIGITS = 4  # significant digits kept in claims.json: enough for every comparison made here


def _round(x, digits: int = _DIGITS):
  """x at `digits` significant digits (floats only), so that claims.json does not carry the
  17th digit of a number that varies across machines in the 9th."""
  if isinstance(x, float) and math.isfinite(x) and x != 0:
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))
  if isinstance(x, (list, tuple)):
    return [_round(v, digits) for v in x]
  if isinstance(x, dict):
    return {k: _round(v, digits) for k, v in x.items()}
  return x


def _claim(id, claim, paper, measured, kind, n_seeds, ci95, tolerance, verdict, **extra) -> dict:
  if kind not in KINDS:
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
  if verdict not in VERDICTS:
    raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
  if not isinstance(id, str) or not id or " " in id:
    raise ValueError(f"id must be a non-empty string without spaces, got {id!r}")
  return _round({"id": id, "claim": claim, "paper": paper, "measured": measured, "kind": kind,
                 "n_seeds": n_seeds, "ci95": ci95, "tolerance": tolerance, "verdict": verdict, **extra})


def paired_ci(diffs, level: float = 0.95) -> tuple[float, float, float]:
  """(mean, low, high) of the t-based confidence interval of the mean of paired differences.
  With one difference the interval is unbounded (NaN); with identical ones it is a point."""
  import numpy as np
  import scipy.stats
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
  import numpy as np
  a, b = np.asarray(list(a), float), np.asarray(list(b), float)
  if a.ndim != 1 or b.ndim != 1 or min(len(a), len(b)) < 2:
    raise ValueError(f"a and b must be lists of at least 2 numbers, got {len(a)} and {len(b)} values")
  se, df = welch_se_df(float(a.var(ddof=1)), len(a), float(b.var(ddof=1)), len(b))
  return float(a.mean() - b.mean()), se, df


def welch_ci(a, b, level: float = 0.95) -> tuple[float, float, float]:
  """(mean, low, high) of Welch's t-based confidence interval of mean(a) - mean(b), for two
  independent samples (unpaired); with fewer than 2 values in an arm the interval is unbounded (NaN)."""
  import numpy as np
  import scipy.stats
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


# Paired or Welch, per family of claims (the longest id prefix that matches), by design; see the
# module doc. A claim of no family here is paired: its caller pairs the seeds (a test checks that
# every chapter's claims belong to a family).
_SAME_SEED = ("the same seed gives both arms the same data order and identical initial weights for every "
              "parameter they share (tested)")
_WITHIN = ("paired", "both quantities are measured on the same trained model and evaluation data of each seed")
PAIRING = {
    "fig1.": _WITHIN,
    "fig3.": ("paired", f"image models (ViT, MatViT, MoD, MoNE): {_SAME_SEED}"),
    "fig4.": ("paired", "video models (ViViT, MatViViT, MoNE): the same seed gives both arms the same data order and "
              "identical initial weights for every parameter they share but the temporal position embedding, which "
              "MoNE's extra parameter alpha moves to the next random draw (tested); sharing the rest, the arms are not "
              "the independent samples Welch's interval assumes, and a paired interval holds whatever their correlation"),
    "fig5.": ("paired", "a contrast within the same trained models of each seed (their drops at other budgets), or the "
              f"adaptive MoNE against the fixed one: {_SAME_SEED}"),
    "fig5.video_gentler_than_images": ("welch", "image and video models are trained on other data with other "
                                       "architectures: a seed number shares nothing between them, so the arms are "
                                       "independent samples"),
    "fig6.": ("paired", f"MoNE against MoNE (router placement, count, learned or random): {_SAME_SEED}"),
    "fig7.images.full_tokens_on_object": _WITHIN,
    "fig7.images.learned_beats_random_router": ("paired", f"MoNE with a learned and with a random router: {_SAME_SEED}"),
    "fig7.video.": _WITHIN,
    "table1.": ("paired", f"MoNE under other capacity allocations on one video task: {_SAME_SEED}"),
}
PAIRING_DEFAULT = ("paired", "the caller pairs the seeds")


def pairing(claim_id: str) -> tuple[str, str]:
  """(test, why) of a claim's family in `PAIRING` (the longest matching id prefix), else
  `PAIRING_DEFAULT`."""
  family = max((p for p in PAIRING if claim_id.startswith(p)), key=len, default=None)
  return PAIRING[family] if family else PAIRING_DEFAULT


def interval_test(claim_id: str, both_arms: bool = True) -> tuple[str, str]:
  """(test, why) of the interval that decides a claim: its family's (`pairing`), except that
  Welch's needs both arms' values, so a claim given only per-seed differences is still decided
  paired, and says so."""
  test, why = pairing(claim_id)
  if test == "welch" and not both_arms:
    return "paired", (f"{why}: the design calls for Welch's unpaired interval, but the chapter gives only the "
                      "per-seed differences, so it is still decided paired")
  return test, why


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


def trained(id: str, claim: str, paper, mone: dict, baseline: dict | None = None, *,
            relation: str, tolerance: float, unit: str = "points", learned: bool = True,
            note: str = "") -> dict:
  """A claim comparing trained models over seeds (paired or not: `PAIRING`).

  mone, baseline: {seed: value} for the two arms (e.g. accuracy in %), over the seeds both
  have; the difference is mone[s] - baseline[s]. baseline=None: `mone` already holds the
  per-seed differences (for claims whose quantity is itself a contrast, e.g. a drop); a family
  compared unpaired (`PAIRING`) needs both arms: given only differences, it is still decided
  paired, and `test_why` says so. learned=False: some compared run never left the
  chance plateau; the claim is then inconclusive whatever the numbers (a model that learned
  nothing tests no method). measured is the mean difference, in `unit`.
  """
  if not isinstance(mone, dict) or not mone:
    raise ValueError(f"mone must be a non-empty {{seed: value}} dict, got {mone!r}")
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
    arms = {"per_seed_mone": a, "per_seed_baseline": b, "arm_correlation": arm_correlation(a, b)}
  # Welch over the seeds both arms have, as the paired interval: one set of seeds per claim.
  mean, low, high = welch_ci(arms["per_seed_mone"], arms["per_seed_baseline"]) if test == "welch" else paired_ci(diffs)
  ci = None if math.isnan(low) else [low, high]
  if not learned:
    verdict, why = "inconclusive", "a compared run never left the chance plateau"
  elif len(seeds) < MIN_SEEDS:
    verdict, why = "inconclusive", f"a verdict needs at least {MIN_SEEDS} seeds"
  else:
    verdict, why = decide(relation, low, high, tolerance), ""
  return _claim(id, claim, paper, mean, "trained", len(seeds), ci, tolerance, verdict, relation=relation,
                unit=unit, seeds=seeds, per_seed=diffs, why=why, note=note, test=test, test_why=test_why, **arms)


def arm_correlation(a, b) -> float | None:
  """Pearson's correlation of the two arms' values across seeds: what pairing gains (a paired
  interval is narrower than Welch's where it is positive). None with fewer than 3 seeds (two
  points always correlate fully) or an arm that does not vary. For information only."""
  import numpy as np
  a, b = np.asarray(a, float), np.asarray(b, float)
  if len(a) < 3 or a.std() == 0 or b.std() == 0:
    return None
  return float(np.corrcoef(a, b)[0, 1])


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


def timing(id: str, claim: str, paper, measured: float, *, target: float, margin: float = 0.0, unit: str = "",
           note: str = "") -> dict:
  """A wall-clock measurement against a target (reproduced when measured >= target). One
  benchmark run: its noise is the machine's. margin: the relative run-to-run noise of such a
  run; a measurement within margin * target of the target is inconclusive, since one run
  cannot tell on which side it lies."""
  if not target > 0:
    raise ValueError(f"target must be > 0, got {target!r}")
  if not 0 <= margin < 1:
    raise ValueError(f"margin must be in [0, 1), got {margin!r}")
  if abs(measured - target) < margin * target:
    verdict, why = "inconclusive", f"within {margin:.0%} of the target: one run cannot settle it"
  else:
    verdict, why = ("reproduced" if measured >= target else "not reproduced"), ""
  return _claim(id, claim, paper, float(measured), "timing", None, None, None, verdict, target=target,
                margin=margin, unit=unit, why=why, note=note)


def not_testable(id: str, claim: str, paper, kind: str, why: str) -> dict:
  """A claim this profile cannot test, and why."""
  return _claim(id, claim, paper, None, kind, None, None, None, "not testable", why=why)


def at_flops(curve: list[dict], gflops: float) -> float:
  """A baseline's accuracy at gflops, linear between the points of its accuracy-FLOPs curve
  ({'gflops', 'accuracy_pct'} dicts) that bracket it; NaN where none do (no extrapolation)."""
  import numpy as np
  pts = sorted(curve, key=lambda p: p["gflops"])
  xs = np.array([p["gflops"] for p in pts], float)
  if len(xs) < 1 or gflops < xs[0] * (1 - 1e-9) or gflops > xs[-1] * (1 + 1e-9):
    return float("nan")
  return float(np.interp(gflops, xs, [p["accuracy_pct"] for p in pts]))


# ------------------------------------------------------------ files and pages ---


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
    if c["kind"] not in KINDS or c["verdict"] not in VERDICTS:
      raise ValueError(f"claim {c['id']!r}: kind {c['kind']!r} / verdict {c['verdict']!r} not in {KINDS} / {VERDICTS}")
    if c["kind"] == "trained" and c["verdict"] in ("reproduced", "not reproduced") and (c["n_seeds"] or 0) < MIN_SEEDS:
      raise ValueError(f"claim {c['id']!r} is decided from {c['n_seeds']} seed(s); at least {MIN_SEEDS} are needed")
  return claims


def write(claims: list[dict], notebook: str) -> Path:
  """Writes results/<notebook>/claims.json (atomically) and returns its path."""
  from mone import results
  path = results.results_root() / notebook / "claims.json"
  results.atomic_write_json(path, check(claims))
  return path


def load(root: Path | None = None) -> dict[str, list[dict]]:
  """Every chapter's claims under root (default: `results.results_root()`), {chapter: claims},
  in chapter order."""
  from mone import results
  root = Path(root) if root is not None else results.results_root()
  return {p.parent.name: check(json.loads(p.read_text())) for p in sorted(root.glob("*/claims.json"))}


def write_caveats(caveats: list[str], notebook: str) -> Path:
  """Writes results/<notebook>/caveats.json (atomically): sentences, generated from measurements,
  that qualify every claim of the chapter, such as a task that does not separate the models it
  compares. The landing page prints them under the chapter's heading, so a reader of the table
  sees them beside the verdicts. An empty list writes an empty file: the caveat no longer holds."""
  from mone import results
  if not isinstance(caveats, list) or not all(isinstance(c, str) and c.strip() for c in caveats):
    raise ValueError(f"caveats must be a list of non-empty sentences, got {caveats!r}")
  path = results.results_root() / notebook / "caveats.json"
  results.atomic_write_json(path, caveats)
  return path


def load_caveats(root: Path | None = None) -> dict[str, list[str]]:
  """Every chapter's caveats under root (default: `results.results_root()`), {chapter: sentences}."""
  from mone import results
  root = Path(root) if root is not None else results.results_root()
  return {p.parent.name: json.loads(p.read_text()) for p in sorted(root.glob("*/caveats.json"))}


def _caveat_lines(caveats: list[str]) -> str:
  """Caveats as Markdown quotes, one paragraph each, to print above a table of claims."""
  return "".join(f"> **Caveat.** {c}\n\n" for c in caveats)


def _fmt(x, unit: str = "") -> str:
  if x is None:
    return "-"
  if isinstance(x, float):
    s = f"{x:+.2f}" if unit == "points" else f"{x:.4g}"
    return s + (" points" if unit == "points" else "x" if unit == "x" else unit and f" {unit}")
  return str(x)


def _ci(c) -> str:
  if not c.get("ci95"):
    return "-"
  lo, hi = c["ci95"]
  return f"[{lo:+.2f}, {hi:+.2f}]"


VERDICT_LABEL = {"reproduced": "**reproduced**", "not reproduced": "**not reproduced**",
                 "inconclusive": "inconclusive", "not testable": "not testable"}


def counted(c: dict) -> dict:
  """The result a tally counts and the figures draw: the pre-registered one where the claim's
  definition changed after its plan (`plan_deviation`, `mone.chapters.preregistration`), else the
  claim itself."""
  return c["plan_deviation"]["preregistered"] if "plan_deviation" in c else c


def counted_verdict(c: dict) -> str:
  """The verdict of `counted`."""
  return counted(c)["verdict"]


def _deviation_cell(c: dict) -> str:
  """What a changed claim's table row adds: the pre-registered result beside the published one."""
  pre = c["plan_deviation"]["preregistered"]
  p = f", p = {pre['p_value']:.2g}" if pre.get("p_value") is not None else ""
  return (f"Pre-registered ({c['plan_deviation']['plan']}): {VERDICT_LABEL[pre['verdict']]}, {_fmt(pre['measured'], pre.get('unit', ''))}"
          f", 95% CI {_ci(pre)}, {pre['n_seeds']} seeds{p}. As changed after the plan "
          f"({c['plan_deviation']['what']}): ")


# Where p-values appear: which test each relation's p-value is, and what `seeds_to_decide` estimates.
P_VALUE_SENTENCE = (
    "Each p-value is that of the test the interval performs: for \"beats\" a t-test against 0 (against the tolerance "
    "where the claim is ruled out), for \"no worse\" a t-test against minus the tolerance, for \"matches\" the larger of "
    "two one-sided tests against ±tolerance (TOST); so a \"matches\" or \"no worse\" claim far from its band can show "
    "p = 1. \"About N seeds for 80% power\" is the number of paired seeds at which the interval would decide the claim "
    "the way its mean points in 80% of simulated repetitions, if its mean and spread were the truth.")


def would_decide(c) -> str:
  """Which way more seeds would decide an inconclusive claim if its mean held: the verdict of the
  interval shrunk to its mean ("reproduced", or "not reproduced": the mean lies where the claim is
  ruled out, e.g. MoNE behind a baseline it should beat)."""
  return decide(c["relation"], c["measured"], c["measured"], c["tolerance"])


def _ours(c) -> str:
  """The measured cell: value, CI and seeds (with the p-value and the seeds that would decide it,
  `mone.chapters.significance`), or why the claim is undecided."""
  out = _fmt(c["measured"], c.get("unit", ""))
  if c.get("ci95"):
    out += f", 95% CI {_ci(c)}" + (" (Welch, unpaired)" if c.get("test") == "welch" else "")
  if c["n_seeds"]:
    out += f", {c['n_seeds']} seed{'s' * (c['n_seeds'] != 1)}"
  if c.get("p_value") is not None:
    out += f", p = {c['p_value']:.2g}"
  if "seeds_to_decide" in c and c["verdict"] == "inconclusive" and c["n_seeds"] >= MIN_SEEDS:
    n = c["seeds_to_decide"]
    way = {"reproduced": "reproduce it", "not reproduced": "rule it out"}[would_decide(c)]
    out += (f"; about {n} seeds for 80% power to {way}" if n
            else f"; more than 100 seeds for 80% power at this mean and spread")
  if c.get("why") and c["verdict"] in ("inconclusive", "not testable"):
    out += f" ({c['why']})"
  return out


def markdown_table(claims: list[dict], link: str | None = None) -> str:
  """A Markdown (MyST) table of claims, the verdict first: verdict, family-wise verdict (Holm over
  every trained claim, `mone.chapters.significance`), claim (with its id), the paper's number,
  ours (with the 95% CI of the difference, the seeds and the p-value). link: the chapter's document path, for the landing page (each
  id then links to its chapter with a {doc} role)."""
  head = "| Verdict | Family-wise | Claim | Paper | Ours |\n| --- | --- | --- | --- | --- |\n"
  rows = []
  for c in claims:
    ident = f"[`{c['id']}`]({link}.ipynb)" if link else f"`{c['id']}`"
    familywise = VERDICT_LABEL[c["verdict_familywise"]] if "verdict_familywise" in c else "-"
    verdict = VERDICT_LABEL[counted_verdict(c)]
    ours = _ours(c)
    if "plan_deviation" in c:
      verdict += f" (pre-registered; as changed: {c['verdict']})"
      ours = _deviation_cell(c) + ours
    if c.get("exploratory"):
      verdict += " (exploratory)"
      ours += f". Exploratory: {c['exploratory']}"
    cells = [verdict, familywise, f"{c['claim']} ({ident})", str(c["paper"]), ours]
    rows.append("| " + " | ".join(s.replace("|", "\\|").replace("\n", " ") for s in cells) + " |")
  return head + "\n".join(rows) + "\n"


# Each kind of claim, as the tallies name it: (label, an aside after its count)
KIND_LABEL = {"trained": ("Trained comparisons", ""),
              "arithmetic": ("Arithmetic checks", "; they hold by construction: FLOPs, budgets"),
              "timing": ("Timing targets", "; set by this repository, not by the paper")}


def counts_by_kind(claims: list[dict]) -> str:
  """'Trained comparisons (26): 4 reproduced, ... Arithmetic checks (...): ...': the tally of each
  kind of claim apart, trained claims first (with their family-wise tally), since a check that
  holds by construction or a target of our own says nothing about the paper."""
  parts = []
  for kind in KINDS:
    cs = [c for c in claims if c["kind"] == kind]
    if not cs:
      continue
    label, aside = KIND_LABEL[kind]
    line = f"{label} ({len(cs)}{aside}): {counts(cs)}"
    fw = [c for c in cs if "verdict_familywise" in c]
    if fw:
      n = {v: sum(c["verdict_familywise"] == v for c in fw) for v in VERDICTS}
      line += (f"; family-wise over the {len(fw)} with 3 or more seeds (Holm, 5%): "
               + ", ".join(f"{k} {v}" for v, k in n.items() if k))
    parts.append(line + ".")
  return " ".join(parts)


def chapter_counts(claims: list[dict]) -> str:
  """A chapter's tally by kind of claim, short, trained claims first: 'trained: 2 reproduced,
  1 inconclusive; arithmetic: 2 reproduced' (a chapter heading's line on the landing page)."""
  return "; ".join(f"{KIND_LABEL[k][0].split()[0].lower()}: {counts(cs)}"
                   for k in KINDS if (cs := [c for c in claims if c["kind"] == k]))


def counts(claims: list[dict]) -> str:
  """'3 reproduced, 1 not reproduced, ...' over claims, in VERDICTS order."""
  n = {v: sum(counted_verdict(c) == v for c in claims) for v in VERDICTS}
  return ", ".join(f"{k} {v}" for v, k in n.items() if k)


def _title(chapter: str) -> str:
  """A chapter's title: the first heading of notebooks/<chapter>.ipynb, else its name."""
  from mone import results
  path = results.REPO / "notebooks" / f"{chapter}.ipynb"
  if path.exists():
    first = "".join(json.loads(path.read_text())["cells"][0]["source"]).splitlines()[0]
    if first.startswith("# "):
      return first[2:].strip()
  return chapter


HEADLINE = "fig3.mone_matches_vit"  # the paper's headline: MoNE matches the dense ViT at about half the FLOPs
LANDING_FIGURE = "landing.png"     # under the results folder: `landing_figure`


def answer(claims: list[dict]) -> str:
  """Two or three sentences that answer 'does MoNE hold up on this profile?', generated from
  the claims (with their family-wise verdicts, `significance.annotate`): how many trained
  comparisons are reproduced, ruled out and open, and what the headline comparison shows."""
  trained = [c for c in claims if c["kind"] == "trained"]
  n = {v: sum(counted_verdict(c) == v for c in trained) for v in VERDICTS}
  fw = sum(c.get("verdict_familywise") == "reproduced" for c in trained)
  untestable = f", {n['not testable']} of them not testable yet" if n["not testable"] else ""
  out = (f"Of the paper's {len(trained)} claims that need trained models, this profile reproduces {n['reproduced']}, "
         f"rules out {n['not reproduced']} and leaves {n['inconclusive'] + n['not testable']} open{untestable}; "
         f"counted family-wise (Holm over the claims with 3 or more seeds), {fw} {'holds' if fw == 1 else 'hold'}.")
  head = next((c for c in trained if c["id"] == HEADLINE), None)
  if head and head.get("ci95"):
    out += (f" The headline claim, \"{head['claim']}\", measures {_fmt(head['measured'], 'points')} "
            f"(95% CI {_ci(head)}, {head['n_seeds']} seeds): {head['verdict']}. " + (head.get("note") or ""))
  return out.strip()


LANDING_COLOURS = {"reproduced": "#029e73", "not reproduced": "#d55e00", "inconclusive": "#949494"}
WELCH_DASH = (0, (2, 1))  # an unpaired claim's interval (Welch's, from both arms): not a CI of paired differences
DIFFERENCE_AXIS = "MoNE minus the baseline (points), mean and 95% CI over seeds"


def _with_interval(claims: list[dict]) -> list[dict]:
  """The claims the forest figures draw: trained comparisons in points that have a 95% CI."""
  return [c for c in claims if c["kind"] == "trained" and c.get("ci95") and c.get("unit") == "points"]


def compare_figure(old: dict[str, list[dict]], new: dict[str, list[dict]], path, before: str, after: str) -> None:
  """`changes` as a picture: for every trained claim with an interval in both sets ({chapter:
  claims}), its mean and 95% CI before (thin, above) and after (thick, below), coloured by each
  verdict, so that a reader sees which intervals shrank, which means moved and which crossed
  zero. `before` and `after` name the two sets in the legend. matplotlib is imported here only."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  ids = lambda sets: {c["id"]: c for c in _with_interval([c for cs in sets.values() for c in cs])}
  a, b = ids(old), ids(new)
  shared = [i for i in b if i in a]
  if not shared:
    raise ValueError("compare_figure: no trained claim has an interval in both sets")
  fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(shared) + 1.4))
  for y, ident in enumerate(reversed(shared)):
    for c, dy, lw, ms in ((a[ident], 0.17, 1.2, 3.5), (b[ident], -0.12, 3.0, 5.5)):
      col = LANDING_COLOURS[c["verdict"]]
      ax.plot(c["ci95"], [y + dy] * 2, color=col, lw=lw, solid_capstyle="butt", alpha=0.55 if dy > 0 else 1.0,
              ls=WELCH_DASH if c.get("test") == "welch" else "-")
      ax.plot(c["measured"], y + dy, "o", color=col, ms=ms, alpha=0.55 if dy > 0 else 1.0)
  ax.axvline(0, color="k", lw=0.8)
  ax.set_yticks(range(len(shared)), [i + (" (unpaired)" if b[i].get("test") == "welch" else "") for i in reversed(shared)],
                fontsize=8)
  ax.plot([], [], color="0.4", lw=1.2, alpha=0.55, label=f"{before} (thin, above)")
  ax.plot([], [], color="0.4", lw=3.0, label=f"{after} (thick, below)")
  for v, col in LANDING_COLOURS.items():
    ax.plot([], [], "s", color=col, label=v)
  ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False, handlelength=1.5,
            columnspacing=1.0)  # above the axes: no claim's interval is hidden under it
  ax.set_xlabel(DIFFERENCE_AXIS)
  ax.set_title(f"Every trained claim with an interval: {before} and {after}", fontsize=10, pad=36)
  ax.grid(alpha=0.3, axis="x")
  fig.tight_layout()
  from mone.chapters import plots
  plots.save_png(fig, path, dpi=110)


# Claims about drops and token precision, whose differences run to tens of points: drawn in a panel
# of their own, so that the accuracy claims' intervals (a few points) stay readable on theirs.
TREND_PREFIXES = ("fig1.", "fig5.", "fig7.")


def landing_figure(claims: list[dict], path) -> None:
  """The landing page's figure: every trained comparison's mean difference (MoNE minus
  the baseline, in points) with its 95% CI (paired; dashed where the claim is unpaired by
  design, `PAIRING`), coloured by the verdict a tally counts (`counted_verdict`; the mean hollow
  where the family-wise verdict, `significance.annotate`, does not keep it), and the band or
  threshold its claim must clear. Two panels on their own axes: the accuracy comparisons
  (Figures 3, 4, 6, Table 1), then the trends (`TREND_PREFIXES`). matplotlib is imported here
  only: the book's environment has none and only references the committed figure."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.lines
  import matplotlib.patches
  import matplotlib.pyplot as plt
  cs = _with_interval(claims)
  panels = [("Accuracy: MoNE minus the baseline (points)", [c for c in cs if not c["id"].startswith(TREND_PREFIXES)]),
            ("Drops and token precision (points)", [c for c in cs if c["id"].startswith(TREND_PREFIXES)])]
  panels = [(t, p) for t, p in panels if p]
  if not panels:
    return
  colour = LANDING_COLOURS
  fig, axes = plt.subplots(len(panels), 1, figsize=(10.0, 0.25 * len(cs) + 0.8 * len(panels) + 0.6), squeeze=False,
                           gridspec_kw={"height_ratios": [len(p) + 1.5 for _, p in panels]})
  for ax, (title, pcs) in zip(axes[:, 0], panels):
    for y, c in enumerate(reversed(pcs)):
      v = counted_verdict(c)
      shown = counted(c)
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
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(pcs)), [c["id"] + (" (pre-registered)" if "plan_deviation" in c else "")
                                   + (" (unpaired)" if counted(c).get("test") == "welch" else "")
                                   + (" (exploratory)" if c.get("exploratory") else "") for c in reversed(pcs)], fontsize=10)
    ax.set_ylim(-0.7, len(pcs) - 0.3)
    ax.set_title(title, fontsize=11, loc="left")
    ax.tick_params(axis="x", labelsize=10)
    ax.grid(alpha=0.3, axis="x")
  handles = [matplotlib.lines.Line2D([], [], color=col, lw=2.5, label=v) for v, col in colour.items()]
  if any(c.get("test") == "welch" for c in cs):
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", lw=2.5, ls=WELCH_DASH, label="unpaired: Welch's CI"))
  if any(c.get("verdict_familywise", counted_verdict(c)) != counted_verdict(c) for c in cs):
    handles.append(matplotlib.lines.Line2D([], [], marker="o", color="0.3", mfc="white", ls="", label="not kept family-wise"))
  handles.append(matplotlib.patches.Patch(color="#56b4e9", alpha=0.25, label="where 'matches' / 'no worse' must lie"))
  # below the panels, off the data
  fig.legend(handles=handles, fontsize=10, loc="lower center", ncol=3, frameon=False)
  fig.tight_layout(rect=(0, 0.08, 1, 1))
  from mone.chapters import plots
  plots.save_png(fig, path, dpi=110)


def tables_page(root: Path | None = None, doc_prefix: str = "notebooks/", figure: str | None = None) -> str:
  """The page of every claim (book/claims.md; the landing page answers first, `pages.landing`):
  the answer (`answer`, and the figure at `figure`, a path relative to the page, where given), the
  tally by kind of claim, then every claim of every chapter, grouped by chapter (under the heading,
  the chapter's caveats, `write_caveats`), each id linking to its chapter in plain Markdown, so that
  the page reads on a code host too. Generated, never typed: `python -m mone.chapters.claims
  book/verdicts.md --tables book/claims.md`."""
  from mone.chapters import significance
  chapters, caveats = significance.annotate(load(root)), load_caveats(root)
  everything = [c for cs in chapters.values() for c in cs]
  out = ["# Every claim, chapter by chapter\n"]
  if figure:
    out.append(f"![Every trained claim: mean difference and 95% CI, by verdict]({figure})\n")
  out.append(answer(everything) + "\n")
  out.append(f"{counts_by_kind(everything)}\n")
  if table := deviations_table(everything):
    out.append("**Deviations from the plan.** A planned claim whose definition changed after its plan was fixed is "
               "counted with the plan's definition; its result as changed stands beside it.\n\n" + table)
  out.append(f"Generated from the {len(chapters)} chapters' `results/<chapter>/claims.json` ({len(everything)} claims). "
             f"A trained comparison is decided from its seeds (the 95% CI of MoNE minus the baseline); with fewer than "
             f"{MIN_SEEDS} seeds it is inconclusive. {pairing_sentence(everything)} The family-wise verdict keeps a "
             "verdict only where Holm's procedure over every trained claim keeps its test (`mone.chapters.significance`). "
             f"{P_VALUE_SENTENCE}\n")
  for chapter, cs in chapters.items():
    out.append(f"\n**[{_title(chapter)}]({doc_prefix}{chapter}.ipynb)**: {chapter_counts(cs)}\n")
    if caveats.get(chapter):
      out.append(_caveat_lines(caveats[chapter]).rstrip("\n") + "\n")
    out.append(markdown_table(cs, link=f"{doc_prefix}{chapter}"))
  return "\n".join(out)


def deviations_table(claims: list[dict]) -> str:
  """A Markdown table of every claim whose definition changed after its plan (`plan_deviation`):
  what changed, why, when relative to the data, and its result with the plan's definition beside
  its result as changed. Empty where none did."""
  rows = [c for c in claims if "plan_deviation" in c]
  if not rows:
    return ""
  out = ["| Claim | What changed, why, when | Pre-registered | As changed |", "| --- | --- | --- | --- |"]
  for c in rows:
    d, pre = c["plan_deviation"], c["plan_deviation"]["preregistered"]
    cell = lambda x: f"{VERDICT_LABEL[x['verdict']]}: {_fmt(x['measured'], x.get('unit', ''))}, 95% CI {_ci(x)}, {x['n_seeds']} seeds"
    out.append("| " + " | ".join(s.replace("|", "\\|") for s in (
        f"`{c['id']}`", f"{d['what']} ({d['plan']}). Why: {d['why']}. When: {d['when']}.", cell(pre), cell(c))) + " |")
  return "\n".join(out) + "\n"


def pairing_sentence(claims: list[dict]) -> str:
  """How the trained claims' intervals pair their seeds (`PAIRING`): the rule, the claims whose
  interval is unpaired (`test` 'welch') and why, those whose design calls for it but whose chapter
  gave only differences, and the arms' median correlation across seeds where claims record it."""
  welch, pending = {}, []  # as the claims record it: the interval each claim's verdict rests on
  for c in claims:
    if c["kind"] == "trained" and c.get("test") == "welch":
      welch.setdefault(c["test_why"], []).append(f"`{c['id']}`")
    elif c["kind"] == "trained" and pairing(c["id"])[0] == "welch":
      pending.append(f"`{c['id']}`")
  out = ("Paired or unpaired is decided by the design of each family of claims, never by which interval decides "
         "(`claims.PAIRING`): paired where a seed gives both arms the same data order and identical initial weights "
         "for the parameters they share, or where both quantities come from one trained model")
  out += "; " + "; ".join(f"Welch's unpaired interval for {', '.join(v)}, since {why}" for why, v in welch.items()) if welch else ""
  if pending:
    out += (f". The design of {', '.join(pending)} calls for Welch's unpaired interval (its arms share nothing through "
            "their seed), but its chapter records only the per-seed differences: it is still decided paired")
  rs = [c["arm_correlation"] for c in claims if c.get("arm_correlation") is not None]
  if rs:
    import numpy as np
    out += (f". For information, the arms correlate across seeds with a median r of {float(np.median(rs)):+.2f} over the "
            f"{len(rs)} claims whose chapters record both arms (`arm_correlation` in claims.json)")
  return out + "."


def replace_block(text: str, block: str, start: str = "<!-- answer:start -->", end: str = "<!-- answer:end -->") -> str:
  """text with what lies between the lines `start` and `end` replaced by block; text unchanged
  where it lacks either marker."""
  i, j = text.find(start), text.find(end)
  if i < 0 or j < i:
    return text
  return text[:i + len(start)] + "\n" + block.rstrip("\n") + "\n" + text[j:]


def changes(old: dict[str, list[dict]], new: dict[str, list[dict]]) -> str:
  """A Markdown table of every claim in either set ({chapter: claims}, as `load` returns), in
  chapter order: its verdict and measurement (CI, seeds) in `old` and in `new`, and whether the
  verdict changed, and whether the claim's test changed (its relation, tolerance or margin: a
  verdict can then change without any new measurement) or only its wording. For comparing two
  profiles' results (`main --compare`): a reader sees where a retraining turned a verdict,
  whichever way, and what it rests on."""
  test = lambda c: (c.get("relation"), c.get("tolerance"), c.get("margin", 0.0))
  rows, seen, changed, retested = [], set(), 0, 0
  for chapter in sorted(set(old) | set(new)):
    before = {c["id"]: c for c in old.get(chapter, [])}
    after = {c["id"]: c for c in new.get(chapter, [])}
    for ident in list(before) + [i for i in after if i not in before]:
      if ident in seen:
        raise ValueError(f"claim id {ident!r} appears in more than one chapter")
      seen.add(ident)
      a, b = before.get(ident), after.get(ident)
      cell = lambda c: f"{VERDICT_LABEL[c['verdict']]}: {_ours(c)}".replace("|", "\\|") if c else "(no such claim)"
      both = a is not None and b is not None
      same = both and a["verdict"] == b["verdict"]
      retest = both and test(a) != test(b)
      why = " (the test changed)" if retest else " (reworded)" if both and a["claim"] != b["claim"] else ""
      changed, retested = changed + (not same), retested + (retest and not same)
      rows.append(f"| `{ident}` | {cell(a)} | {cell(b)} | {'same' if same else '**changed**'}{why} |".replace("\n", " "))
  head = (f"{len(rows)} claims, {changed} with a different verdict"
          + (f", {retested} of them because the claim's test changed" if retested else "") + ".\n\n"
          "| Claim | Before | After | Verdict |\n| --- | --- | --- | --- |\n")
  return head + "\n".join(rows) + "\n"


def of_kind(chapters: dict[str, list[dict]], kind: str) -> dict[str, list[dict]]:
  """{chapter: claims} (as `load` returns) keeping only the claims of `kind`, and only the
  chapters that have one."""
  if kind not in KINDS:
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
  kept = {chapter: [c for c in cs if c["kind"] == kind] for chapter, cs in chapters.items()}
  return {chapter: cs for chapter, cs in kept.items() if cs}


def summary(claims: list[dict]) -> str:
  """One line per claim, for a notebook's closing cell: verdict, id, the measured value with
  its CI and seeds, or why it is inconclusive or not testable."""
  lines = []
  for c in claims:
    detail = _fmt(c["measured"], c.get("unit", ""))
    if c.get("ci95"):
      detail += f", 95% CI {_ci(c)}"
    if c.get("per_seed"):
      detail += f", per seed ({', '.join(map(str, c['seeds']))}): {', '.join(f'{d:+.2f}' for d in c['per_seed'])}"
    if c.get("arm_correlation") is not None:
      detail += f", arms' correlation across seeds r = {c['arm_correlation']:+.2f}"
    if c.get("why"):
      detail += f"; {c['why']}"
    lines.append(f"{c['verdict'].upper():15s} {c['id']}: {detail}")
  return "\n".join(lines)


GLUE_PREFIX = "application/papermill.record/"  # myst_nb.glue's prefix for a hidden glued output


def downloads(notebook: str, book_dir: Path | None = None) -> str:
  """A line of MyST {download} links to every file the chapter wrote under
  results/<notebook>/ (claims, metrics, CSV tables, figures), relative to the book's chapter
  pages (book/notebooks/), so that a reader can take the numbers behind a page with them.
  Empty where results go elsewhere ($MONE_RESULTS_DIR: the smoke profile, the tests), whose
  files the book does not render and whose paths must not reach a page."""
  import os
  from mone import results
  if results.results_root().resolve() != Path(results.RESULTS).resolve():
    return ""
  folder = results.results_root() / notebook
  book_dir = Path(book_dir) if book_dir is not None else results.REPO / "book" / "notebooks"
  files = sorted(p for p in folder.glob("*") if p.is_file() and not p.name.startswith("."))
  links = [f"{{download}}`{p.name} <{os.path.relpath(p, book_dir)}>`" for p in files]
  return f"Files of this chapter (`results/{notebook}/`): " + " · ".join(links) + "\n" if links else ""


def show(claims: list[dict], notebook: str | None = None, key: str = "verdicts") -> None:
  """Prints `summary(claims)` and records their Markdown table under `key`, hidden, so that the
  chapter's opening cell can paste it (```{glue:md} verdicts``` with `:format: myst`). With
  notebook, the chapter's caveats (`write_caveats`) go above the table and links to its files
  below: call it after the chapter has written them. The output is the one
  `myst_nb.glue(key, Markdown(table), display=False)` writes; myst-nb itself is not needed in
  the kernel, and the book (myst-nb) collects every glued key of a page before rendering it, so
  the table can open the page although it is computed at its end."""
  from IPython.display import display
  print(summary(claims))
  caveats = load_caveats().get(notebook, []) if notebook else []
  if notebook:  # with the other chapters' claims as they stand: the family-wise view needs them all
    from mone.chapters import significance
    claims = significance.annotate({**load(), notebook: claims})[notebook]
  md = _caveat_lines(caveats) + markdown_table(claims) + ("\n" + downloads(notebook) if notebook else "")
  display({GLUE_PREFIX + "text/markdown": md, GLUE_PREFIX + "text/plain": md}, raw=True,
          metadata={"scrapbook": {"name": key, "mime_prefix": GLUE_PREFIX}})


def main(argv=None):
  import argparse
  ap = argparse.ArgumentParser(description="Writes the landing page's verdict table from results/*/claims.json "
                               "(or, with --compare, the verdicts that changed between two results folders).")
  ap.add_argument("out", help="Markdown file to write (book/verdicts.md)")
  ap.add_argument("--results", default=None, help="results folder (default: the repository's, or $MONE_RESULTS_DIR)")
  ap.add_argument("--compare", metavar="OLD_RESULTS", default=None,
                  help="write instead the table of verdict changes from OLD_RESULTS' claims to --results' (`changes`)")
  ap.add_argument("--kind", choices=KINDS, default=None,
                  help="with --compare: only the claims of this kind (e.g. trained: what more seeds can move)")
  ap.add_argument("--compare-figure", metavar="PNG", default=None,
                  help="with --compare: also draw each claim's interval before and after (`compare_figure`; needs matplotlib)")
  ap.add_argument("--labels", nargs=2, metavar=("BEFORE", "AFTER"), default=("before", "after"),
                  help="with --compare-figure: what the two results folders are, for its legend")
  ap.add_argument("--figures", action="store_true", help=f"also draw the landing figure (results/{LANDING_FIGURE}; needs matplotlib)")
  ap.add_argument("--tables", metavar="PAGE", default=None,
                  help="also write every claim's table, chapter by chapter (`tables_page`), e.g. book/claims.md")
  ap.add_argument("--readme", metavar="README", default=None,
                  help="also rewrite the answer between README's <!-- answer:start --> and <!-- answer:end --> lines")
  args = ap.parse_args(argv)
  if args.compare_figure and not args.compare:
    ap.error("--compare-figure draws a comparison: give --compare OLD_RESULTS too")
  from mone import results
  from mone.chapters import significance
  if args.compare:
    if not any(Path(args.compare).glob("*/claims.json")):
      raise SystemExit(f"--compare: no */claims.json under {args.compare}")
    # Annotated anew, so that both columns' p-values and seeds for 80% power come from today's code.
    old, new = significance.annotate(load(args.compare)), significance.annotate(load(args.results))
    if args.kind:
      old, new = of_kind(old, args.kind), of_kind(new, args.kind)
    _write_if_changed(Path(args.out), changes(old, new), results)
    if args.compare_figure:
      compare_figure(old, new, args.compare_figure, *args.labels)
    return
  root = Path(args.results) if args.results else results.results_root()
  check_plans(root)
  # Holm needs every chapter's claims: the family-wise verdicts and p-values go back into each file.
  for chapter, cs in significance.annotate(load(root)).items():
    _write_if_changed(root / chapter / "claims.json",
                      json.dumps(results.rounded(results.jsonable(_round(cs))), indent=1, sort_keys=True) + "\n", results)
  if args.figures:
    landing_figure([c for cs in load(root).values() for c in cs], root / LANDING_FIGURE)
  import os
  figure = os.path.relpath(root / LANDING_FIGURE, Path(args.out).resolve().parent)
  from mone.chapters import pages
  tables = Path(args.tables).stem if args.tables else "claims"
  _write_if_changed(Path(args.out), pages.landing(root, figure if (root / LANDING_FIGURE).exists() else None, tables), results)
  if args.tables:
    _write_if_changed(Path(args.tables), tables_page(root), results)
  if args.readme and Path(args.readme).exists():
    _write_if_changed(Path(args.readme), replace_block(Path(args.readme).read_text(), pages.readme_block(root)), results)


def check_plans(root: Path) -> None:
  """Stops (SystemExit, one line per claim) where a chapter's claim no longer matches the definition
  a seed plan under root froze (`preregistration.check`), before any page is written from it."""
  from mone.chapters import preregistration
  for path in sorted(root.glob("seed_plan*.json")):
    plan = json.loads(path.read_text())
    if any("definition_hash" in c for c in plan.get("claims", {}).values()):
      if problems := preregistration.check(plan, path.name, load(root)):
        raise SystemExit("\n".join(problems))


def _write_if_changed(path: Path, text: str, results) -> None:
  """Writes text atomically where it differs from the file: a rerun leaves every file untouched."""
  if not path.exists() or path.read_text() != text:
    results.atomic_write_text(path, text)


if __name__ == "__main__":
  main()
