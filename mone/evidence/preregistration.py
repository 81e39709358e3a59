"""What each trained claim measures, frozen by a seed plan before its runs train.

A trained claim is defined by five things: the quantity each seed contributes (`metric`), the
runs it compares (`arms`), and how its interval decides it (`relation`, `tolerance`, `test`,
recorded by `claims.trained` in claims.json). A seed plan stores every planned claim's
definition and a hash of it before any of its runs train. `check` holds the chapters to it:
`make figures` fails when a planned claim no longer hashes to its plan, unless the change is
recorded in `DEVIATIONS` with what changed and why, so that the book can show the plan's result
beside the changed one. A claim whose definition moves after its data are seen is the easiest way
for a reproduction to fool itself; this makes such a move loud.

`DEFINITIONS` is declared by each chapter beside the code that decides its claims
(`mone.evidence.declarations`): it cannot see a change of what a chapter computes unless the two change
together, which review can check in one place.
"""
import hashlib
import json
from pathlib import Path

import numpy as np

from mone.evidence import claims as claims_lib
from mone.evidence import declarations, significance

# What a seed contributes to each trained claim (metric) and what it compares (arms: the plan's run
# labels without ", seed N"; "expected at random" is an arm computed from the first one), declared by each
# chapter beside the code that decides the claim (`mone.evidence.declarations`).
def __getattr__(name):
  """`DEFINITIONS`: {claim id: {"metric", "arms"}}, generated from the chapters' declarations."""
  if name == "DEFINITIONS":
    return declarations.definitions()
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A planned claim whose definition changed after its plan: {plan file: {claim id: {"what", "why",
# "when"}}}. `check` accepts the change only when it is recorded here; the book shows the plan's
# result beside the changed one.
DEVIATIONS: dict[str, dict[str, dict]] = {"seed_plan_10.json": {}}


def definition(c: dict) -> dict:
  """A trained claim's definition: its `DEFINITIONS` entry (metric, arms) with the relation,
  tolerance and test its claims.json records."""
  table = declarations.definitions()
  if c["id"] not in table:
    raise KeyError(f"claim {c['id']!r} declares no frozen definition (metric, arms; mone.evidence.declarations)")
  return {**table[c["id"]], "relation": c["relation"], "tolerance": float(c["tolerance"]), "test": c["test"]}


def definition_hash(d: dict) -> str:
  """A short hash of a definition, independent of key order."""
  return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


def matches_frozen(c: dict, frozen_claim: dict) -> bool:
  """Whether a chapter's claim still has the definition a plan froze for it (`frozen`): the
  one test behind a plan's check, its readout and the result each claim is decided by."""
  return definition_hash(definition(c)) == frozen_claim["definition_hash"]


def planned(chapters: dict[str, list[dict]]) -> dict[str, tuple[str, dict]]:
  """{claim id: (chapter, claim)} of the trained claims a seed plan freezes: those with an
  interval (a single-seed study has none, and more seeds of the headline runs do not give it one),
  but exploratory ones (added after their data were seen: no plan can pre-register them)."""
  return {c["id"]: (chapter, c) for chapter, rows in chapters.items() for c in rows
          if c["kind"] == "trained" and c.get("ci95") is not None and not c.get("exploratory")}


PLAN_SIMS = 20_000  # simulated sets of seeds behind a plan's expected power (standard error under 0.004)


def expected_power(c: dict, n: int) -> dict:
  """An estimate of how a claim's interval decides at n seeds, if the mean and spread it shows now
  were the truth: the shares of simulated sets of n seeds that reproduce it and rule it out
  (`significance.simulated_verdicts`, PLAN_SIMS of them), and their sum."""
  reproduced, ruled_out = significance.simulated_verdicts(c, n, sims=PLAN_SIMS)
  share = {"reproduced": round(reproduced, 3), "not reproduced": round(ruled_out, 3)}
  return {**share, "decided": round(share["reproduced"] + share["not reproduced"], 3)}


def frozen(chapters: dict[str, list[dict]], n: int) -> dict:
  """Every planned claim (`planned`) as a plan freezes it: its definition and hash, where it
  stands now (mean, CI, SD of the per-seed differences, seeds, verdict, family-wise verdict) and
  its `expected_power` at n seeds."""
  out = {}
  for cid, (chapter, c) in sorted(planned(chapters).items()):
    d = definition(c)
    out[cid] = {"chapter": chapter, "definition": d, "definition_hash": definition_hash(d),
                "now": {"mean": c["measured"], "ci95": c["ci95"], "n_seeds": c["n_seeds"],
                        "sd": claims_lib.rounded(float(np.std(c["per_seed"], ddof=1))),
                        "verdict": c["verdict"], "verdict_familywise": c.get("verdict_familywise")},
                f"expected_at_{n}_seeds": expected_power(c, n)}
  return out


def check(plan: dict, plan_name: str, chapters: dict[str, list[dict]]) -> list[str]:
  """What keeps the chapters from matching a plan's frozen definitions, one line each (empty:
  they match): a planned claim that is missing, or whose definition no longer hashes to the
  plan's without a deviation recorded in `DEVIATIONS[plan_name]`."""
  now, recorded, problems = planned(chapters), DEVIATIONS.get(plan_name, {}), []
  for cid, frozen_claim in plan["claims"].items():
    if cid not in now:
      problems.append(f"{cid}: planned in {plan_name} but no chapter decides it with an interval")
      continue
    if not matches_frozen(now[cid][1], frozen_claim) and cid not in recorded:
      d = definition(now[cid][1])
      changed = sorted(k for k in d if d[k] != frozen_claim["definition"].get(k))
      problems.append(f"{cid}: its definition changed since {plan_name} ({', '.join(changed)}); restore it, or record "
                      "the change in mone.evidence.preregistration.DEVIATIONS with what changed and why")
  return problems


def freezes_definitions(plan: dict) -> bool:
  """Whether a seed plan freezes its claims' definitions (`frozen`), as the ten-seed plan does and
  the five-seed plan, written before definitions were frozen, does not."""
  return any("definition_hash" in c for c in plan.get("claims", {}).values())


def check_plans(root) -> list[str]:
  """`check` of every seed plan under the results folder `root` that freezes definitions
  (seed_plan*.json), one line per problem: empty where the chapters match them all."""
  problems = []
  for path in sorted(Path(root).glob("seed_plan*.json")):
    plan = json.loads(path.read_text())
    if freezes_definitions(plan):
      problems += check(plan, path.name, claims_lib.load(root))
  return problems


# Claims whose definition changed after the five-seed plan (results/seed_plan.json, committed
# 2026-11-28 06:42 UTC) fixed them. Their chapters compute the plan's definition beside the changed
# one (`deviation`); the tallies count the plan's verdict (`claims.counted_verdict`).
FIVE_SEED_PLAN = "seed_plan.json"
FIVE_SEED_DEVIATIONS = {
    "fig1.top_tokens_on_object": {
        "what": "tokens ranked by the full expert's router logit instead of its router probability",
        "why": "the paper's Figure 1 thresholds 'MoNE's router logits'; the probability after the softmax also depends "
               "on the other experts' logits",
        "when": "2026-11-28, after the five-seed plan was committed and before any run of seeds 3-4 was committed; the "
                "results of seeds 0-2 had been seen"},
    "fig5.video_gentler_than_images": {
        "what": "Welch's unpaired interval of images minus video instead of the paired interval over seeds",
        "why": "image and video models share nothing through a seed number, so the arms are independent samples "
               "(claims.PAIRING)",
        "when": "2026-11-28, after the five-seed plan was committed and before any run of seeds 3-4 was committed; the "
                "results of seeds 0-2 had been seen"},
}
# What a pre-registered result keeps of the claim the plan's definition gives.
_KEPT = ("measured", "ci95", "n_seeds", "seeds", "per_seed", "per_seed_mone", "per_seed_baseline", "verdict",
         "relation", "tolerance", "test", "unit", "why")


def deviation(published: dict, preregistered: dict) -> dict:
  """`published` (a trained claim decided with a definition changed after its plan, one of
  `FIVE_SEED_DEVIATIONS`) with `plan_deviation`: the plan, what changed, why and when, and the
  `preregistered` result: the same claim decided with the plan's definition on the same seeds."""
  cid = published["id"]
  if cid not in FIVE_SEED_DEVIATIONS:
    raise KeyError(f"claim {cid!r} has no recorded deviation in preregistration.FIVE_SEED_DEVIATIONS")
  if preregistered["id"] != cid:
    raise ValueError(f"the pre-registered claim is {preregistered['id']!r}, the published one {cid!r}")
  kept = {k: preregistered[k] for k in _KEPT if k in preregistered}
  return {**published, "plan_deviation": {"plan": FIVE_SEED_PLAN, **FIVE_SEED_DEVIATIONS[cid], "preregistered": kept}}
