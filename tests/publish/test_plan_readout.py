"""A seed plan read against what its seeds gave (`mone.publish.plan_readout`): nothing is read
before the chapters decide every frozen claim at the plan's seeds, then each claim is shown as
planned, as expected and as decided."""
import json

import pytest

from mone.evidence import claims, declarations, preregistration, significance
from mone.publish import cli, plan_readout

FIVE = (-1.0, -2.5, 0.5, -1.5, -2.0)
TEN = FIVE + (-1.2, -2.2, -0.8, -1.9, -1.4)


def _chapters(diffs_beats, diffs_matches):
  return significance.annotate({"03_figure3_images": [
      claims.trained("fig3.mone_matches_vit", "text", "paper", dict(enumerate(diffs_matches)), relation="matches",
                     tolerance=1.0),
      claims.trained("fig3.mone_beats_matvit", "text", "paper", dict(enumerate(diffs_beats)), relation="beats",
                     tolerance=0.0)]})


def _plan(chapters):
  return {"fixed_on": "2026-12-01", "seeds": [5, 6, 7, 8, 9], "decided_at": list(range(10)),
          "claims": preregistration.frozen(chapters, 10),
          "runs": [{"run_file": f"r{i}.json", "weights_file": f"r{i}.npz"} for i in range(3)]}


def _row(text, cid):
  return next(line for line in text.splitlines() if line.startswith(f"| `{cid}`"))


def test_nothing_is_read_until_the_chapters_decide_every_claim_at_the_plans_seeds():
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  text = plan_readout.table(plan, five, (2, 1, 3), "seed_plan_10.json")
  assert plan_readout.read(plan, five) == {}
  assert "**At 10 seeds: not read yet.** 2 of the 3 runs of seeds 5-9 have committed their run file (1 their final" in text
  row = _row(text, "fig3.mone_beats_matvit")
  assert "inconclusive" in row and "-1.30, 95% CI" in row and "| not read yet | as frozen |" in row
  # the plan's estimate, as the plan stored it
  e = plan["claims"]["fig3.mone_beats_matvit"]["expected_at_10_seeds"]
  assert f"reproduces {100 * e['reproduced']:.0f}%, rules out {100 * e['not reproduced']:.0f}%" in row
  total = sum(c["expected_at_10_seeds"]["decided"] for c in plan["claims"].values())
  assert f"about {total:.1f} of the 2 decided" in text


def test_once_read_each_claim_shows_its_plan_and_its_ten_seeds_with_the_family_wise_verdicts():
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  ten = _chapters(TEN, (0.3, -0.2, 0.1, 0.4, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2))
  decided = {c["id"]: c for c in ten["03_figure3_images"]}
  assert set(plan_readout.read(plan, ten)) == set(plan["claims"])
  text = plan_readout.table(plan, ten, (3, 3, 3), "seed_plan_10.json")
  assert "not read yet" not in text
  beats = decided["fig3.mone_beats_matvit"]
  assert beats["verdict"] == "not reproduced"  # ten seeds rule it out; five left it open
  row = _row(text, "fig3.mone_beats_matvit")
  lo, hi = beats["ci95"]
  assert f"**not reproduced** (family-wise: **{beats['verdict_familywise']}**): {beats['measured']:+.2f}, " \
         f"95% CI [{lo:+.2f}, {hi:+.2f}], 10 seeds, p = {beats['p_value']:.2g}" in row
  assert row.index("inconclusive") < row.index("**not reproduced**")  # planned from, then decided
  assert "- **At 10 seeds:** 1 reproduced, 1 not reproduced, 0 inconclusive (family-wise: 1 reproduced, 1 not reproduced, 0 inconclusive)." in text
  assert "The book counts every claim once" not in text  # no claim counted by another plan's definition
  # one claim still at five seeds (a chapter not re-executed): the readout does not call the plan read
  mixed = {"03_figure3_images": [ten["03_figure3_images"][0], five["03_figure3_images"][1]]}
  assert plan_readout.read(plan, mixed) == {}
  text = plan_readout.table(plan, mixed, (3, 3, 3), "seed_plan_10.json")
  assert "not read yet" in text and "10 seeds, p =" not in text  # no claim shown at ten seeds alone


def test_a_changed_definition_is_shown_with_what_the_plan_records(monkeypatch):
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  wider = {"03_figure3_images": [{**claims.trained("fig3.mone_matches_vit", "text", "paper", {0: 0.3, 1: -0.2, 2: 0.1}),
                                  "tolerance": 2.0}, five["03_figure3_images"][1]]}  # as a wider rule records it
  assert "| **changed**, not recorded |" in _row(plan_readout.table(plan, wider, (0, 0, 3), "seed_plan_10.json"),
                                                   "fig3.mone_matches_vit")
  monkeypatch.setitem(preregistration.DEVIATIONS, "seed_plan_10.json",
                      {"fig3.mone_matches_vit": {"what": "a tolerance of 2 points", "why": "a reason", "when": "t"}})
  row = _row(plan_readout.table(plan, wider, (0, 0, 3), "seed_plan_10.json"), "fig3.mone_matches_vit")
  assert "**changed after the plan**: a tolerance of 2 points (a reason)" in row
  assert _row(plan_readout.table(plan, wider, (0, 0, 3), "seed_plan_10.json"), "fig3.mone_beats_matvit").endswith("| as frozen |")


def _results(tmp_path, chapters, plan, landed=()):
  for chapter, cs in chapters.items():
    (tmp_path / chapter).mkdir(exist_ok=True)
    (tmp_path / chapter / "claims.json").write_text(json.dumps(cs))
  (tmp_path / "seed_plan_10.json").write_text(json.dumps(plan))
  (tmp_path / "runs").mkdir(exist_ok=True)
  for name in landed:
    (tmp_path / "runs" / name).write_text("{}")


def test_the_command_counts_the_landed_runs_and_draws_the_figure_only_once_read(tmp_path):
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  _results(tmp_path, five, plan, landed=("r0.json",))
  out, png = tmp_path / "readout.md", tmp_path / "ten.png"
  argv = ["readout", str(out), "--plan", str(tmp_path / "seed_plan_10.json"), "--figure", str(png), "--results", str(tmp_path)]
  cli.main(argv)
  assert "1 of the 3 runs of seeds 5-9 have committed their run file (0 their final parameters)" in out.read_text()
  assert not png.exists()
  ten = _chapters(TEN, (0.3, -0.2, 0.1, 0.4, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2))
  _results(tmp_path, ten, plan, landed=("r1.json", "r2.json"))
  cli.main(argv)
  assert png.stat().st_size > 0 and "![Each frozen claim's mean and 95% CI as planned and as decided](ten.png)" in out.read_text()


def test_the_command_refuses_a_plan_that_freezes_no_definition(tmp_path):
  (tmp_path / "seed_plan.json").write_text(json.dumps({"claims": {"fig3.mone_matches_vit": {"verdict_now": "inconclusive"}}}))
  with pytest.raises(SystemExit, match="freezes no claim's definition"):
    cli.main(["readout", str(tmp_path / "r.md"), "--plan", str(tmp_path / "seed_plan.json"), "--results", str(tmp_path)])
  with pytest.raises(SystemExit, match="--plan: no seed plan at"):
    cli.main(["readout", str(tmp_path / "r.md"), "--plan", str(tmp_path / "missing.json"), "--results", str(tmp_path)])
  assert not (tmp_path / "r.md").exists()


def test_the_committed_readout_is_what_the_command_writes_from_the_committed_plan():
  from mone import results
  plan = results.read_json(results.RESULTS / "seed_plan_10.json")
  chapters = significance.annotate(claims.load(results.RESULTS))
  expected = plan_readout.table(plan, chapters, plan_readout.landed(plan, results.RESULTS), "seed_plan_10.json")
  committed = (results.REPO / "book" / "ten_seed_readout.md").read_text()
  assert committed.split("\n![")[0] == expected, \
      "run `python -m mone.chapters readout book/ten_seed_readout.md --plan results/seed_plan_10.json --figure results/ten_seeds.png`"
  assert set(plan["claims"]) == set(preregistration.planned(chapters))  # every claim the plan froze, and only those


MATCHES_TEN = (0.3, -0.2, 0.1, 0.4, -0.5, 0.2, 0.0, -0.1, 0.3, -0.2)
OPEN_TEN = (-1.0, 2.5, 0.5, -1.5, -2.0, 1.2, -2.2, 0.8, -1.9, 1.4)


def _beats(diffs, **kw):
  return claims.trained("fig3.mone_beats_matvit", "text", "paper", dict(enumerate(diffs)), **kw)


def _as_preregistered(c):
  return {k: c[k] for k in preregistration._KEPT if k in c}


def test_the_family_wise_verdict_at_the_plans_seeds_rests_on_the_test_the_plan_froze():
  # A claim changed after an earlier plan: the book's one tally holds it to that plan's test (here
  # ruled out), this plan froze the changed one (open). Its row keeps this plan's verdicts; the
  # summary counts the book's tally and says, beside it, what this plan's definitions would count.
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  plan["notes"] = {"fig3.mone_beats_matvit": "an earlier plan decided it with another metric."}
  beats = _beats(OPEN_TEN)
  beats["plan_deviation"] = {"plan": "seed_plan.json", "what": "w", "why": "y", "when": "t",
                             "preregistered": _as_preregistered(_beats(TEN))}
  matches = claims.trained("fig3.mone_matches_vit", "text", "paper", dict(enumerate(MATCHES_TEN)), relation="matches",
                           tolerance=1.0)
  ten = significance.annotate({"03_figure3_images": [matches, beats]})
  book = {c["id"]: c for c in ten["03_figure3_images"]}
  assert book["fig3.mone_beats_matvit"]["verdict"] == "inconclusive"
  assert book["fig3.mone_beats_matvit"]["verdict_familywise"] == "not reproduced"  # the earlier plan's test
  results = plan_readout.decided(plan, ten, "seed_plan_10.json")
  assert results["fig3.mone_beats_matvit"]["verdict_familywise"] == "inconclusive"
  assert results["fig3.mone_matches_vit"]["verdict_familywise"] == "reproduced"
  text = plan_readout.table(plan, ten, (3, 3, 3), "seed_plan_10.json")
  # the plan's notes are quoted as frozen, in a pull-quote of their own
  assert text.endswith("```{pull-quote}\n- `fig3.mone_beats_matvit`: an earlier plan decided it with another metric.\n```\n")
  row = _row(text, "fig3.mone_beats_matvit")
  assert "| inconclusive (family-wise: inconclusive): " in row and row.endswith("| as frozen |")
  assert ("- **At 10 seeds:** 1 reproduced, 1 not reproduced, 0 inconclusive (family-wise: 1 reproduced, 1 not reproduced, "
          "0 inconclusive).") in text
  assert significance.tally(list(book.values())) == {"reproduced": 1, "not reproduced": 1, "inconclusive": 0}
  assert ("- The book counts every claim once, by the definition registered first: `fig3.mone_beats_matvit` by "
          "`seed_plan.json`'s, since the change after it (w) came once that plan's first seeds had been seen: "
          "**not reproduced** (family-wise: **not reproduced**). Beside it, by the definition this plan froze: inconclusive "
          "(family-wise: inconclusive); counted that way, this plan's claims are family-wise 1 reproduced, "
          "0 not reproduced, 1 inconclusive.") in text
  assert "Holm's correction at 5% over these 2 claims" in text
  assert "- `fig3.mone_beats_matvit`: an earlier plan decided it with another metric." in text


def test_a_claim_changed_after_this_plan_is_counted_with_the_frozen_definition(monkeypatch, tmp_path):
  five = _chapters(FIVE, (0.3, -0.2, 0.1, 0.4, -0.5))
  plan = _plan(five)
  frozen = _beats(TEN)  # ruled out with the frozen tolerance
  with monkeypatch.context() as m:  # decided under another declared rule than the plan froze
    m.setattr(declarations, "rule", lambda cid: ("matches", 3.0))
    changed = claims.trained("fig3.mone_beats_matvit", "text", "paper", dict(enumerate(TEN)))
  matches = claims.trained("fig3.mone_matches_vit", "text", "paper", dict(enumerate(MATCHES_TEN)))
  # changed and not recorded, with no result under the frozen definition: refused, nothing written
  _results(tmp_path, significance.annotate({"03_figure3_images": [matches, changed]}), plan)
  out = tmp_path / "readout.md"
  with pytest.raises(SystemExit, match="--plan: fig3.mone_beats_matvit: its definition changed since seed_plan_10.json"):
    cli.main(["readout", str(out), "--plan", str(tmp_path / "seed_plan_10.json"), "--results", str(tmp_path)])
  assert not out.exists()
  # recorded, with the frozen definition's result beside it: the readout counts the frozen one
  monkeypatch.setitem(preregistration.DEVIATIONS, "seed_plan_10.json",
                      {"fig3.mone_beats_matvit": {"what": "matches within 3 points", "why": "a reason", "when": "t"}})
  changed["plan_deviation"] = {"plan": "seed_plan_10.json", "what": "w", "why": "y", "when": "t",
                               "preregistered": _as_preregistered(frozen)}
  ten = significance.annotate({"03_figure3_images": [matches, changed]})
  assert {c["id"]: c for c in ten["03_figure3_images"]}["fig3.mone_beats_matvit"]["verdict"] == "reproduced"
  row = _row(plan_readout.table(plan, ten, (3, 3, 3), "seed_plan_10.json"), "fig3.mone_beats_matvit")
  assert frozen["verdict"] == "not reproduced"
  assert f"| **not reproduced** (family-wise: **not reproduced**): {frozen['measured']:+.2f}, " in row
  assert f"**changed after the plan**: matches within 3 points (a reason); as changed: **reproduced**, {frozen['measured']:+.2f}" in row
