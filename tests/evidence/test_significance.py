"""p-values, the family-wise view and the power estimate of trained claims (`mone.evidence.significance`)."""
import numpy as np
import pytest
import scipy.stats

from mone.evidence import claims, declarations, significance, stats, verdicts


def test_holm_keeps_only_what_the_step_down_procedure_keeps():
  kept = stats.holm({"a": 0.01, "b": 0.02, "c": 0.03, "d": 0.2})
  assert kept == {"a": True, "b": False, "c": False, "d": False}  # 0.01 <= 0.05/4; 0.02 > 0.05/3
  assert stats.holm({"a": 0.001, "b": 0.02, "c": 0.04}) == {"a": True, "b": True, "c": True}  # 0.02 <= 0.025, 0.04 <= 0.05
  with pytest.raises(ValueError, match="alpha must be in"):
    stats.holm({"a": 0.1}, alpha=1.5)


@pytest.mark.parametrize("relation,tolerance", [("beats", 0.0), ("no_worse", 1.0), ("matches", 1.0)])
def test_p_below_005_exactly_when_the_ci_decides_the_verdict(relation, tolerance):
  rng = np.random.default_rng(0)
  checked = {"reproduced": 0, "not reproduced": 0, "inconclusive": 0}
  for _ in range(600):
    n = int(rng.integers(3, 7))
    d = rng.normal(rng.normal(0, 2), rng.uniform(0.2, 3), n)
    _, low, high = stats.paired_ci(d)
    verdict = stats.decide(relation, low, high, tolerance)
    if relation == "beats" and verdict == "not reproduced" and high >= tolerance - 1e-9:
      continue  # a 'beats' claim is ruled out at high <= tolerance: the boundary itself has measure zero
    p = stats.p_value(d, relation, tolerance, verdict)
    assert (p < 0.05) == (verdict != "inconclusive"), (relation, verdict, p, low, high)
    checked[verdict] += 1
  assert all(checked.values()), checked  # every verdict was exercised


def test_beats_p_is_the_doubled_one_sided_t_test():
  d = [1.0, 2.0, 3.5, 2.2]
  t = np.mean(d) / (np.std(d, ddof=1) / 2)
  assert stats.p_value(d, "beats", 0.0, "reproduced") == pytest.approx(2 * scipy.stats.t.sf(t, 3))
  assert stats.p_value([1.0], "beats", 0.0, "inconclusive") is None


def test_seeds_to_decide_is_the_fewest_seeds_with_80_percent_power_by_the_noncentral_t():
  def nct_seeds(mean, sd, threshold):  # one-sided: decided when (mean - threshold) / se clears t(0.975, n-1)
    return next(n for n in range(3, 101) if 1 - scipy.stats.nct.cdf(scipy.stats.t.ppf(0.975, n - 1), n - 1,
                                                                     abs(mean - threshold) * np.sqrt(n) / sd) >= 0.8)
  assert abs(significance.seeds_to_decide(2.12, 1.14, "beats", 0.0) - nct_seeds(2.12, 1.14, 0.0)) <= 1
  assert abs(significance.seeds_to_decide(-0.38, 0.71, "no_worse", 1.0) - nct_seeds(-0.38, 0.71, -1.0)) <= 1
  assert significance.seeds_to_decide(30.0, 1.0, "beats", 0.0) == 3
  assert significance.seeds_to_decide(-0.75, 2.80, "matches", 1.0) is None  # within ±1 at this spread: past 100 seeds


@pytest.mark.slow
@pytest.mark.parametrize("relation,tolerance", [("beats", 0.0), ("matches", 1.0)])
def test_an_unpaired_claims_p_and_seeds_come_from_welchs_interval(relation, tolerance, monkeypatch):
  # A family unpaired by design: p < 0.05 exactly when Welch's interval decides the verdict, the
  # p-value is scipy's Welch test, and the seeds that decide it are Welch's too.
  monkeypatch.setattr(declarations, "rule", lambda cid: (relation, tolerance))  # the rule under test, as if declared
  rng = np.random.default_rng(2)
  checked = {"reproduced": 0, "not reproduced": 0, "inconclusive": 0}
  for _ in range(100):  # each draw bisects Welch's simulated power for its seeds: about 0.1 s
    n = int(rng.integers(3, 7))
    spread_a, spread_b = np.exp(rng.uniform(np.log(0.05), np.log(3), 2))  # log-uniform: every verdict occurs
    a, b = rng.normal(rng.normal(0, 2), spread_a, n), rng.normal(0, spread_b, n)
    a, b = np.round(a, 2), np.round(b, 2)  # as accuracies in points: claims.json keeps them exactly (4 digits)
    c = claims.trained("fig5.video_gentler_than_images", "c", "p", dict(enumerate(a)), dict(enumerate(b)))
    assert c["test"] == "welch"
    mean, se, df = significance.interval(c)
    assert (mean, se, df) == stats.welch(a, b)  # the verdict's own interval, to the last bit
    assert significance.interval(c, n) == pytest.approx((mean, se, df), rel=1e-12)  # today's seeds, as n
    if c["verdict"] == "not reproduced" and relation == "beats":
      continue  # ruled out at high <= tolerance, tested paired above
    (got,) = significance.annotate({"05": [c]})["05"]
    assert (got["p_value"] < 0.05) == (c["verdict"] != "inconclusive"), (c["verdict"], got["p_value"], c["ci95"])
    if relation == "beats" and c["verdict"] == "reproduced":
      assert got["p_value"] == pytest.approx(2 * scipy.stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue, rel=1e-3)
    if got["seeds_to_decide"] is not None:  # Welch's interval, simulated with n seeds per arm
      assert significance.power(got, got["seeds_to_decide"]) >= significance.POWER
    checked[c["verdict"]] += 1
  assert checked["reproduced"] and checked["inconclusive"], checked  # 'not reproduced' is skipped for 'beats'


def test_annotate_adds_p_seeds_and_a_familywise_verdict_to_trained_claims_only():
  strong = claims.trained("a", "beats", "p", {0: 5.0, 1: 5.2, 2: 4.9, 3: 5.1}, relation="beats", tolerance=0.0)
  weak = claims.trained("b", "beats", "p", {0: 1.0, 1: 3.0, 2: 0.5}, relation="beats", tolerance=0.0)
  two = claims.trained("c", "beats", "p", {0: 1.0, 1: 3.0}, relation="beats", tolerance=0.0)
  flops = claims.arithmetic("d", "flops", 2.0, 2.2, at_least=1.8)
  got = {c["id"]: c for cs in significance.annotate({"ch": [strong, weak, two, flops]}).values() for c in cs}
  assert got["a"]["verdict"] == "reproduced" and got["a"]["verdict_familywise"] == "reproduced"
  assert got["b"]["verdict_familywise"] == "inconclusive" and got["b"]["seeds_to_decide"] is not None
  assert "p_value" in got["c"] and got["c"]["seeds_to_decide"] is None and "verdict_familywise" not in got["c"]
  assert "p_value" not in got["d"] and "verdict_familywise" not in got["d"]


def test_a_seed_pairs_every_arm_by_design_same_initial_shared_weights_and_data_order():
  # What makes the image families of claims paired (`claims.PAIRING`): for one seed, every model kind
  # starts from the same weights wherever its parameters are the dense ViT's, and sees the same batches.
  import jax.numpy as jnp
  from flax import traverse_util

  from mone.data import pipeline, sources
  from mone.configs import recipes, schema
  from mone.train import steps

  def init(kind, **overrides):
    cfg = schema.apply_overrides(recipes.smoke(), {"kind": kind, **overrides})
    params = steps.init_params(cfg, steps.build_model(cfg), jnp.zeros(steps.input_shape(cfg)))
    return traverse_util.flatten_dict(params, sep="/")
  vit = init("vit")
  for kind, overrides in (("mone", {"e_c": 0.4}), ("mone", {"e_c": 0.2, "model.router": "random"}), ("matvit", {}), ("mod", {})):
    other = init(kind, **overrides)
    assert set(vit) <= set(other), kind
    assert all(np.array_equal(vit[k], other[k]) for k in vit), (kind, overrides)
  assert not all(np.array_equal(vit[k], v) for k, v in init("vit", seed=1).items())  # another seed: other weights
  cfg = recipes.smoke()
  src = sources.data_sources(cfg)[0]
  first = lambda seed: next(iter(pipeline.train_batches(src, cfg.batch_size, seed, start_step=0, num_steps=2)))[1]["label"]
  np.testing.assert_array_equal(first(0), first(0))
  assert not np.array_equal(first(0), first(1))


def test_the_vectorised_decision_is_claims_decide():
  rng = np.random.default_rng(0)
  low = rng.normal(0, 2, 2000)
  high = low + rng.exponential(2, 2000)
  for relation, tol in (("beats", 0.0), ("beats", 0.5), ("no_worse", 1.0), ("matches", 1.0)):
    reproduced, ruled_out = stats.decided(relation, low, high, tol)
    want = [stats.decide(relation, lo, hi, tol) for lo, hi in zip(low, high)]
    assert list(reproduced) == [w == "reproduced" for w in want] and list(ruled_out) == [w == "not reproduced" for w in want]


def test_power_agrees_with_the_noncentral_t_and_seeds_to_decide_is_where_it_reaches_80_percent():
  # paired "beats": reproduced when T = mean / se > t(0.975, n-1), T noncentral t with nc = mu sqrt(n) / sigma
  c = claims.trained("fig3.x", "beats", "p", {0: 1.0, 1: 2.5, 2: -0.4, 3: 1.5, 4: 0.2}, relation="beats", tolerance=0.0)
  d = np.asarray(c["per_seed"])
  for n in (5, 10, 20):
    exact = 1 - scipy.stats.nct.cdf(scipy.stats.t.ppf(0.975, n - 1), n - 1, d.mean() * np.sqrt(n) / d.std(ddof=1))
    assert significance.power(c, n) == pytest.approx(exact, abs=0.015)
  n = significance.claim_seeds_to_decide(c)
  assert significance.power(c, n) >= 0.8 > significance.power(c, n - 1)
  # a "matches" claim whose mean lies outside its band points to ruled out
  far = claims.trained("fig3.y", "matches", "p", {0: 3.0, 1: 2.5, 2: 4.0}, relation="matches", tolerance=1.0)
  assert claims.would_decide(far) == "not reproduced" and significance.power(far, significance.claim_seeds_to_decide(far)) >= 0.8
  assert significance.claim_seeds_to_decide(claims.trained("fig3.z", "beats", "p", {0: 1.0, 1: -1.0, 2: 0.01}, relation="beats",
                                                           tolerance=0.0)) is None  # no power within 100 seeds


def test_the_cross_domain_claim_says_its_design_calls_for_an_unpaired_interval():
  c = claims.trained("fig5.video_gentler_than_images", "gentler", "p", {0: 5.0, 1: 9.0, 2: 7.0}, relation="beats", tolerance=0.0)
  (got,) = significance.annotate({"05": [c]})["05"]
  assert got["test"] == "paired" and "Welch" in got["test_why"] and "still decided paired" in got["test_why"]


def test_the_table_says_which_way_more_seeds_would_decide_an_open_claim():
  # MoNE behind a baseline it should beat: more seeds at this mean would rule the claim out, not reproduce it.
  behind = claims.trained("b", "beats", "p", {0: -1.0, 1: -2.5, 2: 0.4}, relation="beats", tolerance=0.0)
  ahead = claims.trained("a", "beats", "p", {0: 1.0, 1: 2.5, 2: -0.4}, relation="beats", tolerance=0.0)
  outside = claims.trained("m", "matches", "p", {0: 3.0, 1: 0.5, 2: 4.0}, relation="matches", tolerance=1.0)
  got = {c["id"]: c for c in significance.annotate({"ch": [behind, ahead, outside]})["ch"]}
  assert all(c["verdict"] == "inconclusive" and c["seeds_to_decide"] for c in got.values())
  assert [claims.would_decide(got[k]) for k in "bam"] == ["not reproduced", "reproduced", "not reproduced"]
  table = verdicts.markdown_table(list(got.values()))
  for k, way in zip("bam", ("rule it out", "reproduce it", "rule it out")):
    assert f"about {got[k]['seeds_to_decide']} seeds for 80% power to {way}" in table
  assert "if the mean held" not in table
  # At seeds_to_decide the claim is decided its mean's way in at least 80% of simulated repetitions.
  for c in got.values():
    assert significance.power(c, c["seeds_to_decide"]) >= significance.POWER
