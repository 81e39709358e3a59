"""A seed plan read against what its seeds gave (book/ten_seeds.md).

A plan that freezes its claims (`preregistration.frozen`) records, before any of its runs train,
where each claim stands and an estimate of how often its interval will decide at the seeds the
plan adds. Once the chapters read those seeds, `table` sets the three side by side for every
frozen claim: as planned, as expected, as measured with the frozen definition, each with its
family-wise verdict (Holm over the plan's claims as it froze them: `decided`). Until then
it says how many of the plan's runs have landed and reads nothing from them: a verdict is never
taken on a subset of a plan's seeds.
"""
from pathlib import Path

from mone.evidence import claims as claims_lib
from mone.evidence import preregistration, significance, stats, verdicts


def planned_claims(plan: dict) -> dict[str, list[dict]]:
  """The plan's claims as they stood when it was fixed, as claims ({chapter: [claim]}, what
  `claims.load` returns) that `claim_plots.compare_figure` can draw: verdict, mean, CI, seeds,
  test, relation and tolerance. A plan stores differences in points only."""
  out: dict[str, list[dict]] = {}
  for cid, f in plan["claims"].items():
    now = f["now"]
    out.setdefault(f["chapter"], []).append(
        {"id": cid, "kind": "trained", "unit": "points", "verdict": now["verdict"], "measured": now["mean"],
         "ci95": now["ci95"], "n_seeds": now["n_seeds"], "test": f["definition"]["test"],
         "relation": f["definition"]["relation"], "tolerance": f["definition"]["tolerance"],
         "verdict_familywise": now.get("verdict_familywise")})
  return out


def landed(plan: dict, root) -> tuple[int, int, int]:
  """(run files, weights files, runs planned): how many of the plan's runs have committed their
  run file and their final parameters under the results folder `root`."""
  runs = plan["runs"]
  root = Path(root)
  return (sum((root / "runs" / r["run_file"]).exists() for r in runs),
          sum((root / "weights" / r["weights_file"]).exists() for r in runs if "weights_file" in r), len(runs))


def read(plan: dict, chapters: dict[str, list[dict]]) -> dict[str, dict]:
  """{claim id: claim} of every claim the plan froze, once the chapters decide each of them at
  every seed the plan decides them at (`decided_at`); empty until then, also while a chapter not
  yet re-executed still decides at the seeds before: never a subset."""
  n = len(plan["decided_at"])
  at_n = {c["id"]: c for cs in chapters.values() for c in cs if c["id"] in plan["claims"] and c.get("n_seeds") == n}
  return at_n if len(at_n) == len(plan["claims"]) else {}


def decided(plan: dict, chapters: dict[str, list[dict]], plan_name: str) -> dict[str, dict]:
  """{claim id: result} of `read`, each claim decided as the plan froze it: the chapter's claim
  where its definition still hashes to the plan's, else the plan's result its chapter sets beside
  the change (`plan_deviation` naming this plan). Each gets `verdict_familywise` from Holm's
  correction over these results' own p-values, so that it always rests on the test beside it:
  the book's tallies (`significance.annotate`) hold a claim changed after the five-seed plan to
  that plan's test, which this plan no longer froze. Empty until `read` reads the plan."""
  out = {}
  for cid, c in read(plan, chapters).items():
    dev = c.get("plan_deviation") or {}
    if preregistration.matches_frozen(c, plan["claims"][cid]):
      out[cid] = dict(c)
    elif dev.get("plan") == plan_name:
      out[cid] = {**dev["preregistered"], "id": cid}
    else:
      raise ValueError(f"{cid}: its definition changed since {plan_name} and its chapter computes no result with "
                       "the frozen one beside it (plan_deviation); restore the definition, or record the change "
                       "(mone.evidence.preregistration.DEVIATIONS) and compute the frozen one too")
  kept = stats.holm({cid: r["p_value"] for cid, r in out.items()}) if out else {}
  for cid, r in out.items():
    r["verdict_familywise"] = r["verdict"] if kept[cid] and r["verdict"] != "inconclusive" else "inconclusive"
  return out


def by_chapter(plan: dict, results: dict[str, dict]) -> dict[str, list[dict]]:
  """{claim id: result} (`decided`) as claims by chapter ({chapter: [claim]}, as `claims.load`
  returns), for `claim_plots.compare_figure`."""
  out: dict[str, list[dict]] = {}
  for cid, r in results.items():
    out.setdefault(plan["claims"][cid]["chapter"], []).append(r)
  return out


def labels(plan: dict) -> tuple[str, str]:
  """('5 seeds', '10 seeds'): the seeds a plan's claims were planned from, and decided at."""
  return f"{max(f['now']['n_seeds'] for f in plan['claims'].values())} seeds", f"{len(plan['decided_at'])} seeds"


def _verdicts(verdict: str, familywise: str | None) -> str:
  fw = f" (family-wise: {verdicts.VERDICT_LABEL[familywise]})" if familywise else ""
  return verdicts.VERDICT_LABEL[verdict] + fw


def _interval(mean: float, ci95, n: int, test: str, m: dict | None = None) -> str:
  """The interval as a cell; m: the claim as decided, whose p-value is shown with the direction it
  tests, and its plain statement where it lies against the paper (`verdicts.against_paper`)."""
  welch = " (Welch, unpaired)" if test == "welch" else ""
  p_text = ""
  if m is not None and m.get("p_value") is not None:
    p_text = verdicts.p_cell(m["p_value"], m["relation"], m["tolerance"], m["verdict"])
  if m is not None and (plain := verdicts.against_paper(m)):
    p_text += f". {plain}"
  return f"{mean:+.2f}, 95% CI [{ci95[0]:+.2f}, {ci95[1]:+.2f}]{welch}, {n} seeds{p_text}"


def _definition_cell(cid: str, frozen: dict, now: dict | None, plan_name: str) -> str:
  """'as frozen' where the chapter's definition hashes to the plan's; else what changed, as
  `preregistration.DEVIATIONS` records it, and the changed definition's result where the chapter
  also computes the plan's (the column before shows the plan's: `decided`)."""
  if now is None or preregistration.matches_frozen(now, frozen):
    return "as frozen"
  recorded = preregistration.DEVIATIONS.get(plan_name, {}).get(cid)
  out = f"**changed after the plan**: {recorded['what']} ({recorded['why']})" if recorded else "**changed**, not recorded"
  dev = now.get("plan_deviation")
  if dev and dev.get("plan") == plan_name:
    out += f"; as changed: {_verdicts(now['verdict'], None)}, {_interval(now['measured'], now['ci95'], now['n_seeds'], now.get('test', ''))}"
  return out


def _count(verdicts_: list[str]) -> str:
  """'2 reproduced, 1 not reproduced, 18 inconclusive' of a list of verdicts."""
  r, x = verdicts_.count("reproduced"), verdicts_.count("not reproduced")
  return f"{r} reproduced, {x} not reproduced, {len(verdicts_) - r - x} inconclusive"


def _tally(rows: list[tuple[str, str | None]]) -> str:
  """'2 reproduced, 1 not reproduced, 18 inconclusive (family-wise: ...)' of (verdict, family-wise verdict) pairs."""
  return f"{_count([v for v, _ in rows])} (family-wise: {_count([f or 'inconclusive' for _, f in rows])})"


def _counted_by(plan_name: str, measured: dict, book: dict, ids: list) -> list[str]:
  """Where the book's one tally (`significance.tally`) counts a claim by another definition than the
  one this plan froze: a sentence per such claim, with the count this plan's definitions would give."""
  changed = [i for i in ids if "plan_deviation" in book[i] and book[i]["plan_deviation"].get("plan") != plan_name
             and (measured[i]["verdict"], measured[i]["verdict_familywise"])
             != (claims_lib.counted_verdict(book[i]), book[i].get("verdict_familywise"))]
  if not changed:
    return []
  own = significance.tally_text(significance.tally([measured[i] for i in ids]))
  out = []
  for i in changed:
    dev = book[i]["plan_deviation"]
    out.append(f"- The book counts every claim once, by the definition registered first: `{i}` by "
               f"`{dev['plan']}`'s, since the change after it ({dev['what']}) came once that plan's first seeds had "
               f"been seen: {verdicts.VERDICT_LABEL[claims_lib.counted_verdict(book[i])]} "
               f"(family-wise: {verdicts.VERDICT_LABEL[book[i]['verdict_familywise']]}). Beside it, by the "
               f"definition this plan froze: {verdicts.VERDICT_LABEL[measured[i]['verdict']]} (family-wise: "
               f"{verdicts.VERDICT_LABEL[measured[i]['verdict_familywise']]}); counted that way, this plan's claims "
               f"are family-wise {own}.")
  return out


def table(plan: dict, chapters: dict[str, list[dict]], counts: tuple[int, int, int], plan_name: str) -> str:
  """The readout of a plan that freezes its claims, as Markdown: a summary, then one row per
  frozen claim, in chapter order: where it stood when the plan was fixed, the power the plan
  expected (an estimate), what the chapters measure at the plan's seeds with the frozen definition
  (once they read them: `decided`) and whether its definition is still the frozen one; then the
  plan's notes on its claims. `counts` is `landed`'s."""
  n_planned = len(plan["decided_at"])
  before, after = labels(plan)
  measured = decided(plan, chapters, plan_name)
  current = {c["id"]: c for cs in chapters.values() for c in cs}
  order = {c["id"]: i for i, c in enumerate(c for _, cs in sorted(chapters.items()) for c in cs)}
  ids = sorted(plan["claims"], key=lambda i: (plan["claims"][i]["chapter"], order.get(i, len(order)), i))
  expected_key = f"expected_at_{n_planned}_seeds"
  runs, weights, total = counts
  seeds = plan["seeds"]
  lines = [f"{len(ids)} claims frozen by `{plan_name}` (fixed on {plan['fixed_on']}, before any of its runs trained), "
           f"each to be decided at {n_planned} seeds. "
           "Every value is a difference in points, as the claim's frozen metric defines it.", ""]
  lines.append(f"- **At {before}, when the plan was fixed:** "
               + _tally([(plan["claims"][i]["now"]["verdict"], plan["claims"][i]["now"].get("verdict_familywise")) for i in ids])
               + ".")
  lines.append(f"- **Expected at {after}** (an estimate, claim by claim, as if each claim's mean and spread at {before} "
               f"were the truth): about {sum(plan['claims'][i][expected_key]['decided'] for i in ids):.1f} of the {len(ids)} decided, "
               "the sum of the claims' estimated chances to be decided.")
  if measured:
    book = {c["id"]: c for cs in chapters.values() for c in cs if c["id"] in measured}
    verdict_counts = _count([claims_lib.counted_verdict(book[i]) for i in ids])
    lines.append(f"- **At {after}:** {verdict_counts} (family-wise: "
                 f"{significance.tally_text(significance.tally([book[i] for i in ids]))}).")
    lines += _counted_by(plan_name, measured, book, ids)
  else:
    lines.append(f"- **At {after}: not read yet.** {runs} of the {total} runs of seeds {seeds[0]}-{seeds[-1]} have committed "
                 f"their run file ({weights} their final parameters). The chapters read those seeds only once all "
                 f"{total} have (`mone.runs.plan.seeds`); until then this column stays empty, so that no verdict is "
                 "taken on a subset.")
  lines += ["", f"| Claim | At {before} (planned from) | Expected at {after} (estimate) | At {after} | Definition |",
            "| --- | --- | --- | --- | --- |"]
  for cid in ids:
    f = plan["claims"][cid]
    now, e = f["now"], f[expected_key]
    m = measured.get(cid)
    at_ten = (f"{_verdicts(m['verdict'], m.get('verdict_familywise'))}: "
              f"{_interval(m['measured'], m['ci95'], m['n_seeds'], m.get('test', ''), m)}" if m else "not read yet")
    cells = [f"`{cid}`",
             f"{_verdicts(now['verdict'], now.get('verdict_familywise'))}: {_interval(now['mean'], now['ci95'], now['n_seeds'], f['definition']['test'])}",
             f"reproduces {100 * e['reproduced']:.0f}%, rules out {100 * e['not reproduced']:.0f}%",
             at_ten, _definition_cell(cid, f, current.get(cid), plan_name)]
    lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
  if measured:
    lines += ["", f"Family-wise verdicts at {after}: Holm's correction at 5% over these {len(ids)} claims, each with its "
              "p-value under the definition this plan froze."]
  if notes := {cid: plan.get("notes", {})[cid] for cid in ids if cid in plan.get("notes", {})}:
    # Quoted as the plan froze them, in a pull-quote: the book's checks read a quotation as written.
    lines += ["", f"The plan's notes, quoted as frozen in `{plan_name}`:", "", "```{pull-quote}"]
    lines += [f"- `{cid}`: {text}" for cid, text in notes.items()] + ["```"]
  return "\n".join(lines) + "\n"

