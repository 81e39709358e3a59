"""mone.evidence.verdicts: a p-value always says which direction it tests, and a difference on the
side against the paper is named in words with its two-sided interval."""
import numpy as np
import pytest

from mone.evidence import stats, verdicts


def _claim(per_seed, relation="no_worse", tolerance=1.0, verdict="inconclusive"):
  d = np.asarray(per_seed, float)
  mean, se, df = float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d))), len(d) - 1.0
  half = stats.scipy.stats.t(df).ppf(0.975) * se
  return {"kind": "trained", "relation": relation, "tolerance": tolerance, "verdict": verdict, "unit": "points",
          "measured": mean, "ci95": [mean - half, mean + half], "per_seed": list(d), "n_seeds": len(d)}


@pytest.mark.parametrize("relation, verdict, tests", [
    ("beats", "inconclusive", "above 0"), ("beats", "not reproduced", "below +1"),
    ("no_worse", "reproduced", "above -1"), ("no_worse", "not reproduced", "below -1"),
    ("matches", "inconclusive", "within ±1"), ("matches", "not reproduced", "outside ±1")])
def test_every_p_value_names_the_direction_it_tests(relation, verdict, tests):
  assert verdicts.p_cell(1.0, relation, 1.0, verdict) == f", p = 1 (one-sided: {tests})"
  assert verdicts.p_tests("beats", 0.0, "not reproduced") == "below 0"


def test_an_interval_wholly_below_zero_is_named_against_the_paper():
  # A drop is measured, yet within the tolerance it is not ruled out: no_worse stays inconclusive.
  c = _claim([-0.2, -3.5, -1.0, -4.0, -0.5, -2.6, -0.8, -3.4, -0.3, -1.9])
  assert c["ci95"][0] < -1 < c["ci95"][1] < 0
  text = verdicts.against_paper(c)
  assert text.startswith("Against the paper: measurably below 0, -1.82 points, two-sided 95% CI [")
  # Wholly below the tolerance too: no room left inside it.
  far = _claim([-2.0, -2.5, -1.5, -2.2])
  assert far["ci95"][1] < -1 and verdicts.against_paper(far).endswith(f"{verdicts.fmt_ci(far)}.")
  assert text.endswith("; a drop within the 1-point tolerance is not ruled out.")
  c["p_value"] = stats.p_value(c["per_seed"], "no_worse", 1.0, "inconclusive")
  cell = verdicts.measured_cell(c)
  assert "p = 1 (one-sided: above -1)" in cell and cell.endswith(text)


def test_a_mean_below_zero_leans_against_the_paper_with_the_reverse_p_value():
  c = _claim([-2.0, 0.9, -1.5, 0.5, -2.5, 0.6, -1.0, -1.8, 0.4, -1.6], relation="beats", tolerance=0.0)
  assert c["ci95"][0] < 0 < c["ci95"][1] and c["measured"] < 0
  reverse = stats.p_value(c["per_seed"], "beats", 0.0, "not reproduced")
  assert 0 < reverse < 0.1
  assert verdicts.against_paper(c) == (f"Leans against the paper: below 0 on average, {c['measured']:+.2f} points, "
                                       f"two-sided 95% CI {verdicts.fmt_ci(c)}; 0 is not ruled out "
                                       f"(one-sided p = {reverse:.2g} for 'below 0').")
  # The sentences after it follow with one full stop between them, not two.
  c["robust"] = {"n": 10, "median": -1.2, "hodges_lehmann": -0.9, "hl_ci95": [-2.0, 0.3]}
  cell = verdicts.measured_cell(c)
  assert f"for 'below 0'). Exploratory, robust to single runs, over 10 seeds" in cell and ".." not in cell
  del c["robust"]
  row = verdicts.markdown_table([{**c, "id": "fig.x", "claim": "x", "paper": "y", "exploratory": "added after the data were seen"}]).splitlines()[-1]
  assert "for 'below 0'). Exploratory: added after the data were seen |" in row and ".." not in row


def test_nothing_is_said_where_the_data_lean_the_paper_s_way_or_a_match_straddles_zero():
  assert verdicts.against_paper(_claim([0.5, 1.5, 1.0, 2.0], relation="beats", tolerance=0.0)) is None
  assert verdicts.against_paper(_claim([-0.5, 0.5, 0.2, -0.1], relation="matches")) is None
  above = verdicts.against_paper(_claim([0.4, 0.5, 0.6, 0.5], relation="matches"))
  assert above.startswith("Measurably above 0") and above.endswith("within the ±1 tolerance is not ruled out.")
  assert verdicts.against_paper({"kind": "timing", "ci95": [-2, -1], "measured": -1.5}) is None


def test_hodges_lehmann_inverts_the_wilcoxon_test_and_one_wild_seed_moves_it_by_a_rank():
  d = [1.05, -3.1, -1.2, -0.1, -2.65, 1.6, 0.1, 1.55, 78.3, -2.55]  # one seed far off
  hl, lo, hi = stats.hodges_lehmann(d)
  assert abs(hl) < 0.5 and np.mean(d) > 7  # the mean follows the wild seed; the estimate does not
  # The interval is the shifts the exact two-sided signed-rank test does not reject at 5%.
  p = lambda shift: stats.scipy.stats.wilcoxon(np.asarray(d) - shift, method="exact").pvalue
  assert p(lo + 1e-6) >= 0.05 and p(hi - 1e-6) >= 0.05
  assert p(lo - 1e-3) < 0.05 and p(hi + 1e-3) < 0.05
  assert stats.signed_rank_cdf(10)[8] == pytest.approx(25 / 1024)  # P(W+ <= 8) for n = 10: the 5% critical value
  assert np.isnan(stats.hodges_lehmann([1.0, 2.0, 3.0])[1])  # too few seeds for a 95% interval
