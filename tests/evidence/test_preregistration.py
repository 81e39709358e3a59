"""Claim definitions frozen by a seed plan (`mone.evidence.preregistration`): the check that holds
the chapters to them, the power estimate, and the pre-registered result of a changed claim."""
import copy

import numpy as np
import pytest

from mone.evidence import claims, preregistration, significance, verdicts
from mone.publish import cli, pages


def _claim(cid="fig3.mone_beats_matvit", diffs=(-1.0, -2.5, 0.5, -1.5, -2.0), **recorded):
  """A claim as the chapter decides it, with `recorded` fields as a claims.json written under another
  definition would hold them."""
  return {**claims.trained(cid, "text", "paper", dict(enumerate(diffs))), **recorded}


def test_a_changed_definition_stops_the_check_unless_a_deviation_is_recorded(monkeypatch):
  chapters = {"03_figure3_images": [_claim(), _claim("fig3.mone_matches_vit")]}
  plan = {"claims": preregistration.frozen(chapters, 10)}
  assert preregistration.check(plan, "seed_plan_10.json", chapters) == []
  changed = copy.deepcopy(chapters)
  changed["03_figure3_images"][1] = _claim("fig3.mone_matches_vit", tolerance=2.0)  # a wider tolerance
  problems = preregistration.check(plan, "seed_plan_10.json", changed)
  assert len(problems) == 1 and problems[0].startswith("fig3.mone_matches_vit: its definition changed") and "(tolerance)" in problems[0]
  monkeypatch.setitem(preregistration.DEFINITIONS, "fig3.mone_beats_matvit",
                      {**preregistration.DEFINITIONS["fig3.mone_beats_matvit"], "metric": "another score"})
  assert any("(metric)" in p for p in preregistration.check(plan, "seed_plan_10.json", chapters))
  monkeypatch.setitem(preregistration.DEVIATIONS, "seed_plan_10.json", {"fig3.mone_beats_matvit": {"what": "m", "why": "w", "when": "t"}})
  assert preregistration.check(plan, "seed_plan_10.json", chapters) == []
  gone = {"03_figure3_images": chapters["03_figure3_images"][1:]}
  assert "no chapter decides it" in preregistration.check(plan, "seed_plan_10.json", gone)[0]


def test_a_claim_without_a_definition_is_refused():
  with pytest.raises(KeyError, match="fig9.unknown"):
    preregistration.definition(claims.trained("fig9.unknown", "text", "paper", {0: 1.0}, relation="beats", tolerance=0.0))


def test_the_make_figures_check_stops_on_a_changed_planned_claim(tmp_path):
  import json
  chapters = {"03_figure3_images": [_claim()]}
  (tmp_path / "03_figure3_images").mkdir()
  (tmp_path / "03_figure3_images" / "claims.json").write_text(json.dumps(chapters["03_figure3_images"]))
  plan = {"claims": preregistration.frozen(chapters, 10)}
  plan["claims"]["fig3.mone_beats_matvit"]["definition_hash"] = "0" * 12
  (tmp_path / "seed_plan_10.json").write_text(json.dumps(plan))
  with pytest.raises(SystemExit, match="fig3.mone_beats_matvit: its definition changed since seed_plan_10.json"):
    cli.main(["claims", str(tmp_path / "verdicts.md"), "--results", str(tmp_path)])
  assert not (tmp_path / "verdicts.md").exists()  # nothing written from claims that break their plan


def test_expected_power_agrees_with_the_noncentral_t():
  import scipy.stats
  c = _claim(diffs=(-1.0, -2.5, 0.5, -1.5, -2.0))
  d = np.asarray(c["per_seed"])
  n, mean, sd = 10, d.mean(), d.std(ddof=1)
  # "beats" is ruled out when the CI's upper end lies at or below 0: T <= -t_crit, T noncentral t
  nc = mean / (sd / np.sqrt(n))
  exact = scipy.stats.nct.cdf(-scipy.stats.t.ppf(0.975, n - 1), n - 1, nc)
  got = preregistration.expected_power(c, n)
  assert got["not reproduced"] == pytest.approx(exact, abs=0.01) and got["reproduced"] < 0.001
  assert got == preregistration.expected_power(c, n)  # the same on every call


def test_a_deviated_claim_is_counted_and_held_to_holm_with_its_pre_registered_result():
  plan_way = _claim("fig1.top_tokens_on_object", diffs=(-10.0, -12.0, -9.0, -11.5, -10.5))
  changed = _claim("fig1.top_tokens_on_object", diffs=(-2.0, 3.0, -6.0, 1.0, -5.0))
  c = preregistration.deviation(changed, plan_way)
  assert c["verdict"] == "inconclusive" and c["plan_deviation"]["preregistered"]["verdict"] == "not reproduced"
  assert claims.counted_verdict(c) == "not reproduced" and verdicts.counts([c]) == "1 not reproduced"
  annotated = significance.annotate({"01": [c]})["01"][0]
  assert annotated["verdict_familywise"] == "not reproduced"  # a family of one: Holm keeps the plan's test
  table = verdicts.markdown_table([annotated])
  assert "**not reproduced** (pre-registered; as changed: inconclusive)" in table and "Pre-registered (seed_plan.json)" in table
  assert "`fig1.top_tokens_on_object`" in pages.deviations_table([annotated])
  with pytest.raises(KeyError, match="no recorded deviation"):
    preregistration.deviation(_claim(), _claim())
