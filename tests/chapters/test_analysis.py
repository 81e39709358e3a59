import jax
import numpy as np
import pytest

from mone import capacity, results
from mone.chapters import analysis, routers
from mone.configs import profiles
from mone.data import digits
from mone.models import kinds, routing

# ------------------------------------------------------------------- overlap ---


def test_perfect_selection_scores_one_and_disjoint_scores_zero():
  obj = np.array([[0.0, 0.5, 1.0, 0.0], [1.0, 0.0, 0.0, 0.2]], np.float32)  # coverage
  tokens = obj >= routers.OBJECT_FRACTION
  assert routers.overlap(tokens, obj) == pytest.approx(
      {"iou": 1.0, "precision": 1.0, "recall": 1.0, "selected_fraction": 0.5, "object_fraction": 0.5})
  none = routers.overlap(~tokens, obj)
  assert none["iou"] == 0 and none["precision"] == 0 and none["recall"] == 0


def test_overlap_by_hand():
  sel = np.array([[1, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], bool)
  obj = np.array([[1, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]], bool)
  out = routers.overlap(sel, obj)
  # image 0: inter 1, union 4, |S| 2, |O| 3; image 1: inter 1, union 2, |S| 1, |O| 2
  assert out["iou"] == pytest.approx((1 / 4 + 1 / 2) / 2)
  assert out["precision"] == pytest.approx((1 / 2 + 1) / 2)
  assert out["recall"] == pytest.approx((1 / 3 + 1 / 2) / 2)


def test_overlap_thresholds_coverage_and_skips_undefined_images():
  cov = np.array([[0.1, 0.2, 0.0], [0.0, 0.0, 0.0]])
  sel = np.array([[True, True, False], [True, False, False]])
  out = routers.overlap(sel, cov, min_fraction=0.15)  # token 1 only is object in image 0
  assert out["recall"] == 1.0  # image 1 has no object tokens: recall 0/0 is left out
  assert out["precision"] == pytest.approx((0.5 + 0.0) / 2)
  with pytest.raises(ValueError, match="same shape"):
    routers.overlap(sel[:, :2], cov)


def test_expert_object_share_by_hand():
  assignment = np.array([[0, 0, 1, 3], [3, 1, 0, 0]])
  obj = np.array([[False, False, True, True], [False, True, False, False]])
  rows = routers.expert_object_share(assignment, obj, 4)
  assert [r["tokens_pct"] for r in rows] == pytest.approx([50.0, 25.0, 0.0, 25.0])
  # expert 1 holds 2 tokens, both object; expert 3 holds 2, one object; expert 2 holds none (NaN)
  assert [r["object_share_pct"] for r in rows][:2] == pytest.approx([0.0, 100.0]) and np.isnan(rows[2]["object_share_pct"])
  assert rows[3]["object_share_pct"] == pytest.approx(50.0)
  assert [r["gets_object_pct"] for r in rows] == pytest.approx([0.0, 200 / 3, 0.0, 100 / 3])
  assert {r["object_pct"] for r in rows} == {37.5}
  with pytest.raises(ValueError, match=r"experts in \[0, 2\]"):
    routers.expert_object_share(assignment, obj, 3)
  with pytest.raises(ValueError, match="same shape"):
    routers.expert_object_share(assignment[:, :3], obj, 4)


# ------------------------------------------------------------ random baseline ---


def _random_object_masks(rng, n=40, tokens=16):
  return rng.random((n, tokens)) < rng.uniform(0.1, 0.5, (n, 1))


def test_random_router_expected_precision_is_the_object_fraction_and_recall_k_over_n():
  obj = _random_object_masks(np.random.default_rng(0))
  for k in (1, 5, 16):
    base = routers.random_router_baseline(obj, k)
    assert base["precision"] == pytest.approx(obj.mean())  # every image has N tokens
    assert base["recall"] == pytest.approx(k / obj.shape[1])


def test_random_router_baseline_matches_sampled_random_selections():
  rng = np.random.default_rng(1)
  obj = _random_object_masks(rng)
  k = 5
  draws = [routers.overlap(np.argsort(rng.random(obj.shape), axis=1) < k, obj) for _ in range(3000)]
  base = routers.random_router_baseline(obj, k)
  for key in ("iou", "precision", "recall"):
    assert np.mean([d[key] for d in draws]) == pytest.approx(base[key], abs=3e-3), key


def test_random_router_baseline_edge_cases():
  obj = np.array([[True, True, False, False]])
  assert routers.random_router_baseline(obj, 4)["iou"] == pytest.approx(0.5)  # all tokens: 2/4
  assert routers.random_router_baseline(obj, 0)["iou"] == 0.0
  with pytest.raises(ValueError, match="num_selected"):
    routers.random_router_baseline(obj, 5)


# ----------------------------------------------------------------- thresholds ---


def test_tokens_above_threshold_keeps_the_top_fraction_and_nests():
  imp = np.random.default_rng(2).random((3, 64))
  prev = np.ones_like(imp, bool)
  for q in (0.0, 0.25, 0.5, 0.9, 1.0):
    sel = routers.tokens_above_threshold(imp, q)
    k = round((1 - q) * 64)
    assert (sel.sum(-1) == k).all()
    if 0 < k < 64:  # everything kept scores above everything dropped
      assert (np.where(sel, imp, np.inf).min(-1) > np.where(sel, -np.inf, imp).max(-1)).all()
    assert not (sel & ~prev).any()  # a higher threshold keeps a subset
    prev = sel
  with pytest.raises(ValueError, match="q must be"):
    routers.tokens_above_threshold(imp, 1.5)


def test_upsample_token_map_inverts_token_mask():
  tokens = np.random.default_rng(3).random((2, 16)) < 0.5
  pixels = routers.upsample_token_map(tokens, 32, 8)
  assert pixels.shape == (2, 32, 32)
  np.testing.assert_array_equal(digits.token_mask(pixels, 8), tokens.astype(np.float32))
  assert routers.upsample_token_map(np.arange(4), 4, 2)[1, 2] == 1  # row 0 of patches, column 1
  with pytest.raises(ValueError, match="tokens"):
    routers.upsample_token_map(np.zeros(15), 32, 8)


def test_highlight_tokens_keeps_selected_pixels_and_fades_the_rest():
  img = np.full((8, 8, 3), 51, np.uint8)
  sel = np.array([True, False, False, False])
  out = routers.highlight_tokens(img, sel, 4)
  np.testing.assert_allclose(out[:4, :4], 0.2)
  assert (out[4:, 4:] > 0.7).all() and out.max() <= 1

  white = routers.highlight_tokens(np.full((8, 8, 3), 255, np.uint8), np.zeros(4, bool), 4, dim=0.3)
  assert white.max() <= 1.0  # float rounding of 0.3 + 0.7 stays in imshow's range


# -------------------------------------------------------------------- curves ---


def _metrics(kind, evals, e_c=None, adaptive=False):
  return {"kind": kind, "config": {"e_c": e_c, "adaptive": adaptive, "iso_flops": False,
                                   "model": {"name": "XS/4"}},
          "evals": [{"e_c": e, "width_index": w, "gflops": g, "accuracy": a} for e, w, g, a in evals]}


def test_left_plateau_reads_the_training_loss_against_ln_k():
  run = lambda history: {"config": {"model": {"num_classes": 10}}, "history": history}
  assert analysis.left_plateau(run([(25, 2.31), (50, 2.2), (75, 2.08)])) is False  # ln 10 = 2.303
  assert analysis.left_plateau(run([(25, 2.31), (50, 2.0), (75, 2.3)])) is True  # once is enough
  assert analysis.left_plateau({"config": {"model": {"num_classes": 10}}}) is None
  assert analysis.plateau_exit(run([(25, 2.31), (50, 2.0), (75, 2.3), (100, 1.0)])) == 50  # the first step below
  assert analysis.plateau_exit(run([(25, 2.31), (50, 2.2)])) is None
  assert analysis.points(_metrics("vit", [(None, None, 1.0, 0.5)]))[0]["learned"] is None


def test_points():
  mone = _metrics("mone", [(0.4, None, 2.0, 0.60), (0.2, None, 1.0, 0.40), (0.6, None, 3.0, 0.65)], e_c=0.4)
  assert [p["e_c"] for p in analysis.points(mone)] == [0.4]
  assert len(analysis.points(mone, all_capacities=True)) == 3
  assert len(analysis.points(_metrics("mone", [(0.2, None, 1, .5), (0.4, None, 2, .6)], adaptive=True))) == 2
  dense = analysis.points(_metrics("vit", [(None, None, 4.0, 0.66)]))[0]
  assert dense["accuracy_pct"] == pytest.approx(66)


def test_mean_curves_average_each_point_over_the_seeds_that_trained_it():
  pt = lambda e_c, acc, learned=True: {"e_c": e_c, "width_index": None, "gflops": e_c, "accuracy_pct": acc, "learned": learned}
  by_seed = {0: {("v", "MoNE"): [pt(0.2, 80.0), pt(0.4, 84.0)], ("v", "ViT"): [pt(None, 88.0)]},
             1: {("v", "MoNE"): [pt(0.4, 86.0, learned=False)], ("v", "ViT"): [pt(None, 87.0)]}}
  mean = analysis.mean_curves(by_seed)
  at = {p["e_c"]: p for p in mean["v", "MoNE"]}
  assert (at[0.4]["accuracy_pct"], at[0.4]["accuracy_min"], at[0.4]["accuracy_max"], at[0.4]["n_seeds"]) == (85.0, 84.0, 86.0, 2)
  assert at[0.4]["learned"] is False and at[0.2]["learned"] is True
  assert (at[0.2]["accuracy_pct"], at[0.2]["n_seeds"]) == (80.0, 1)
  assert mean["v", "ViT"][0]["accuracy_pct"] == 87.5


def _adaptation_rows(table, adaptive=None):
  rows = [{"adaptive": False, "train_e_c": t, "e_c": e, "accuracy_pct": a} for t, accs in table.items() for e, a in accs.items()]
  return rows + [{"adaptive": True, "train_e_c": None, "e_c": e, "accuracy_pct": a} for e, a in (adaptive or {}).items()]


def test_adaptation_summary_scores_each_model_against_its_own_capacity():
  # The model trained at 0.2 is much worse everywhere than the one trained at 0.4. Against its
  # own star, the 0.4 model loses 10 points going down to 0.2 and 2 going up to 0.6; the 0.2 model
  # gains going up (negative drop). Scored against the other model (the old regret), the
  # 0.2 model's low accuracy would make "up" look costly.
  table = {0.2: {0.2: 40.0, 0.4: 45.0, 0.6: 46.0}, 0.4: {0.2: 50.0, 0.4: 60.0, 0.6: 58.0}}
  s = analysis.adaptation_summary(_adaptation_rows(table, {0.2: 39.0, 0.4: 59.5, 0.6: 57.0}), (0.2, 0.4))
  assert s["drops"] == {(0.2, 0.4): -5.0, (0.2, 0.6): -6.0, (0.4, 0.2): 10.0, (0.4, 0.6): 2.0}
  assert s["by_shift"] == {0.2: pytest.approx((-5 + 10 + 2) / 3), 0.4: -6.0}
  assert s["matched_shifts"] == [0.2]  # 0.4 only goes up: left out of down/up
  assert s["down"] == pytest.approx(10.0) and s["up"] == pytest.approx((-5 + 2) / 2)
  assert s["adaptive"] == {0.2: pytest.approx(-1.0), 0.4: pytest.approx(-0.5)}
  assert s["per_unit"] == pytest.approx(np.mean([-5 / 0.2, -6 / 0.4, 10 / 0.2, 2 / 0.2]))


def test_mone_configs_are_shared_between_notebooks():
  a = profiles.mone_config("smoke", 0.4)
  assert a.kind == "mone" and a.e_c == 0.4 and a.eval_e_c == profiles.grid("smoke").eval_e_c
  same = profiles.mone_config("smoke", 0.4, seed=0, model="tiny/8")
  assert results.config_hash(a) == results.config_hash(same)
  assert profiles.mone_config("smoke", None, adaptive=True).adaptive
  with pytest.raises(ValueError, match="profile"):
    profiles.mone_config("tiny", 0.4)
  for profile, g in profiles.GRIDS.items():
    # Each model is evaluated at every budget any chapter trains at (Figure 5 needs it) ...
    trained = {*g.image_e_c, *g.adapt_image_e_c, *g.adapt_video_e_c, *g.random_router_e_c,
               *(e for task in g.video_e_c.values() for e in task)}
    assert trained <= set(g.eval_e_c), (profile, sorted(trained - set(g.eval_e_c)))
    for e in g.eval_e_c:  # ... and every one of them is feasible for E = 4
      capacity.capacity_distribution(e, 4)
  with pytest.raises(ValueError, match="profile must be one of"):
    profiles.grid("tiny")


# --------------------------------------------------------------------- router ---


@pytest.fixture(scope="module")
def tiny_mone():
  cfg = profiles.image_config("smoke", kind="mone", e_c=0.4)
  model = kinds.build(cfg.model, "mone")
  caps = tuple(capacity.capacity_distribution(0.4, 4))
  x = np.zeros((1, 32, 32, 3), np.float32)
  # Random parameters of the right shapes: eval_shape traces init without compiling it.
  shapes = jax.eval_shape(lambda k: model.init({"params": k, "routing": k}, x, caps), jax.random.key(0))
  rng = np.random.default_rng(0)
  params = jax.tree_util.tree_map(lambda s: (0.3 * rng.standard_normal(s.shape)).astype(s.dtype),
                                  shapes["params"])
  return cfg, params


def test_router_importance_is_what_epr_gives_the_full_expert(tiny_mone):
  cfg, params = tiny_mone
  images = (np.random.default_rng(4).random((5, 32, 32, 3)) * 255).astype(np.uint8)
  probs, assignment = routers.router_outputs(params, cfg, images, batch_size=2)  # batches padded
  probs_1, assignment_1 = routers.router_outputs(params, cfg, images)
  np.testing.assert_allclose(probs, probs_1, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(assignment, assignment_1)
  assert probs.shape == (5, 16, 4) and assignment.shape == (5, 16)
  np.testing.assert_allclose(probs.sum(-1), 1, rtol=1e-5)
  imp = routers.router_importance(params, cfg, images, score="probability")
  np.testing.assert_allclose(imp, probs_1[..., -1], rtol=1e-6)
  # The paper's score, the full expert's logit: the probabilities are its softmax over experts.
  _, _, logits = routers.router_outputs(params, cfg, images, logits=True)
  np.testing.assert_allclose(routers.router_importance(params, cfg, images), logits[..., -1], rtol=1e-6)
  np.testing.assert_allclose(jax.nn.softmax(logits, axis=-1), probs_1, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="score must be one of"):
    routers.router_importance(params, cfg, images, score="rank")
  counts = routing.expert_counts(capacity.capacity_distribution(0.4, 4), 16)
  full = routers.tokens_above_threshold(imp, 1 - counts[-1] / 16)
  np.testing.assert_array_equal(assignment == 3, full)
  assert ((assignment[:, None, :] == np.arange(4)[:, None]).sum(-1) == counts).all()


def test_adaptation_claims_are_inconclusive_from_one_seed_and_named_by_domain():
  table = {0.2: {0.2: 40.0, 0.4: 45.0, 0.6: 46.0}, 0.4: {0.2: 50.0, 0.4: 60.0, 0.6: 58.0}}
  s = analysis.adaptation_summary(_adaptation_rows(table, {0.2: 39.0, 0.4: 59.5, 0.6: 57.0}), (0.2, 0.4))
  cs = analysis.adaptation_claims({0: s}, "images")
  assert [c["id"] for c in cs] == ["fig5.images.drop_grows_with_shift", "fig5.images.steeper_high_to_low",
                                   "fig5.images.adaptive_serves_every_budget"]
  assert [c["measured"] for c in cs] == [pytest.approx(-6.0 - 7 / 3, abs=1e-3), pytest.approx(10.0 + 1.5), pytest.approx(-1.0)]
  assert {c["verdict"] for c in cs} == {"inconclusive"} and all(c["n_seeds"] == 1 for c in cs)
  no_adaptive = analysis.adaptation_summary(_adaptation_rows(table), (0.2, 0.4))
  assert analysis.adaptation_claims({0: no_adaptive}, "video")[2]["verdict"] == "not testable"
  # over seeds: each claim pairs the seeds that have its numbers (the adaptive model: seed 0 only)
  cs = analysis.adaptation_claims({0: s, 1: no_adaptive, 2: no_adaptive}, "images")
  assert [c["n_seeds"] for c in cs] == [3, 3, 1] and cs[1]["verdict"] == "reproduced"


def test_shared_per_unit_compares_two_domains_on_the_pairs_both_have():
  images = analysis.adaptation_summary(_adaptation_rows({0.2: {0.2: 50.0, 0.4: 60.0}, 0.4: {0.2: 40.0, 0.3: 45.0, 0.4: 60.0}}), (0.2, 0.4))
  video = analysis.adaptation_summary(_adaptation_rows({0.3: {0.3: 50.0, 0.4: 49.0}, 0.4: {0.2: 55.0, 0.3: 58.0, 0.4: 60.0}}), (0.3, 0.4))
  a, b = analysis.shared_per_unit(images, video)  # shared: (0.4, 0.2) and (0.4, 0.3)
  assert a == pytest.approx((20 / 0.2 + 15 / 0.1) / 2) and b == pytest.approx((5 / 0.2 + 2 / 0.1) / 2)
  with pytest.raises(ValueError, match="share no"):
    analysis.shared_per_unit(images, analysis.adaptation_summary(_adaptation_rows({0.6: {0.6: 1.0, 0.9: 2.0}}), (0.6,)))


def test_format_table_is_text_when_printed_and_a_table_when_displayed():
  t = analysis.format_table([{"a": 1.23456, "b": "x|y"}, {"a": 2.0, "b": "z"}], ["a", "b"], 3)
  assert str(t).splitlines() == ["   a    b", "1.23  x|y", "   2    z"] and repr(t) == str(t)
  assert t._repr_markdown_() == "| a | b |\n|---|---|\n| 1.23 | x\\|y |\n| 2 | z |\n"


def test_temporal_errors_split_the_label_into_its_factors():
  # label 0: left scrolls down first, then right down; label 6: right up first, then left down
  label = np.array([0, 0, 0, 0, 6, 6, 6, 6])
  digit = np.array([[3, 1], [3, 5], [1, 3], [7, 7], [3, 1], [1, 3], [5, 5], [2, 3]])  # (left, right) classes
  pred = label.copy()
  pred[0] = 2  # 0 -> 2: the first mover's (left, a 3) direction wrong
  pred[4] = 5  # 6 -> 5: the first mover's (right, a 1) direction and the second's (left, a 3) wrong
  pred[7] = 2  # 6 -> 2: order wrong (and the first's direction kept)
  out = analysis.temporal_errors(pred, label, digit)
  assert out["error_pct"] == pytest.approx(37.5) and out["order_error_pct"] == pytest.approx(12.5)
  assert out["first_direction_error_pct"] == pytest.approx(25.0) and out["second_direction_error_pct"] == pytest.approx(12.5)
  by_digit = out["direction_error_pct_by_digit"]
  # 3 moves in clips 0, 1, 2, 4, 5, 7: wrong in clip 0 (first) and clip 4 (second) -> 2 of 6
  assert by_digit[3] == pytest.approx(100 * 2 / 6)
  assert by_digit[1] == pytest.approx(100 * 1 / 4)  # clips 0, 2, 4 (wrong, first), 5
  assert by_digit[7] == 0 and np.isnan(by_digit[0])
  with pytest.raises(ValueError, match="digit \\[n, 2\\]"):
    analysis.temporal_errors(pred, label, digit[:, 0])


def test_save_table_writes_floats_at_the_results_precision(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  path = analysis.save_table([{"label": "MoNE", "accuracy_pct": 100 * 0.849, "e_c": None}], "nb", "points")
  assert path.read_text() == "label,accuracy_pct,e_c\nMoNE,84.9,\n"
