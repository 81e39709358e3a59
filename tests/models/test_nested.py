"""The drop-in nested-expert encoder: in a user's own model, equal to the dense layers at full
capacity, with the parameter layout of a dense ViT's blocks, and refusing bad input."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mone import capacity
from mone.models import config, kinds, nested, routing, vit

D, DEPTH, HEADS, MLP, N = 32, 3, 2, 64, 16
X = jax.random.normal(jax.random.key(1), (2, N, D))


class UserModel(nn.Module):
  """A model of a user's own: an embedding of their choice, the nested encoder, a pooling head."""
  router_layers: tuple = (0,)

  @nn.compact
  def __call__(self, x, capacities=None, full=None):
    x = nn.Dense(D, name="my_embedding")(x)
    x, cls, aux = nested.NestedEncoder(D, DEPTH, HEADS, MLP, router_layers=self.router_layers, name="encoder")(
        x, capacities, full=full)
    return nn.Dense(10, name="my_head")(x.mean(axis=1)), cls, aux


def test_full_capacity_equals_the_dense_encoder():
  model = UserModel()
  full = (0.0, 0.0, 0.0, 1.0)  # every token to the full expert: e_c = 1
  params = model.init(jax.random.key(0), X, full)["params"]
  assert sorted(params["encoder"]) == ["alpha", *(f"block_{l}" for l in range(DEPTH)), "router_0"]
  routed, _, aux = model.apply({"params": params}, X, full)
  assert (np.asarray(aux["assignment"]) == 3).all() and aux["router_probs"].shape == (2, N, 4)
  dense_params = {**params, "encoder": {k: v for k, v in params["encoder"].items() if k.startswith("block_")}}
  dense, _, aux_dense = model.apply({"params": dense_params}, X)  # no capacities: the dense layers
  assert aux_dense == {}
  np.testing.assert_allclose(np.asarray(routed), np.asarray(dense), rtol=1e-5, atol=1e-6)


def test_a_full_width_token_is_not_routed_and_matches_the_dense_path():
  model = UserModel()
  cls = jax.random.normal(jax.random.key(2), (2, 1, D))
  full = (0.0, 0.0, 0.0, 1.0)
  params = model.init(jax.random.key(0), X, full, cls)["params"]
  _, cls_routed, aux = model.apply({"params": params}, X, full, cls)
  assert aux["assignment"].shape == (2, N)  # the router saw only the N sequence tokens
  dense_params = {**params, "encoder": {k: v for k, v in params["encoder"].items() if k.startswith("block_")}}
  _, cls_dense, _ = model.apply({"params": dense_params}, X, None, cls)
  np.testing.assert_allclose(np.asarray(cls_routed), np.asarray(cls_dense), rtol=1e-5, atol=1e-6)


def test_low_capacity_routes_each_expert_its_share_and_keeps_patch_order():
  model = UserModel(router_layers=(1,))
  b = capacity.budget("mone", 0.3)
  params = model.init(jax.random.key(0), X, b.capacities)["params"]
  logits, _, aux = model.apply({"params": params}, X, b.capacities)
  counts = np.bincount(np.asarray(aux["assignment"][0]), minlength=4)
  assert tuple(counts) == tuple(routing.expert_counts(b.capacities, N))
  assert logits.shape == (2, 10) and np.isfinite(np.asarray(logits)).all()
  # patch_order=False returns the same tokens, only permuted into expert order.
  enc = nested.NestedEncoder(D, DEPTH, HEADS, MLP)
  p = enc.init(jax.random.key(0), X, b.capacities)["params"]
  y, _, a = enc.apply({"params": p}, X, b.capacities)
  y_expert_order, _, _ = enc.apply({"params": p}, X, b.capacities, patch_order=False)
  np.testing.assert_allclose(np.sort(np.asarray(y).ravel()), np.sort(np.asarray(y_expert_order).ravel()), rtol=1e-6)


def test_the_image_model_runs_its_transformer_through_the_same_code():
  cfg = config.vit("tiny/8", num_classes=10)
  images = jax.random.normal(jax.random.key(3), (2, cfg.image_size, cfg.image_size, 3))
  caps = capacity.budget("mone", 0.4, cfg.num_experts).capacities
  model = kinds.build(cfg, "mone")
  params = model.init({"params": jax.random.key(0)}, images, caps)["params"]
  want, want_aux = model.apply({"params": params}, images, caps)

  class Same(nn.Module):  # the encoder as a submodule, fed the ViT's own embedding and head
    @nn.compact
    def __call__(self, images):
      x = vit.PatchEmbed(cfg, name="embed")(images)
      x, _, aux = nested.NestedEncoder(**nested.fields(cfg), name="encoder")(x, caps, patch_order=False)
      return vit.Head(cfg.num_classes, cfg.head_zeroinit, name="head")(x), aux

  moved = {"embed": params["embed"], "head": params["head"],
           "encoder": {k: v for k, v in params.items() if k not in ("embed", "head")}}
  got, aux = Same().apply({"params": moved}, images)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  np.testing.assert_array_equal(np.asarray(aux["assignment"]), np.asarray(want_aux["assignment"]))


def test_bad_input_is_refused_with_the_parameter_named():
  enc = nested.NestedEncoder(D, DEPTH, HEADS, MLP)
  with pytest.raises(ValueError, match=r"x must have shape \[batch, tokens, 32\]"):
    enc.init(jax.random.key(0), jnp.zeros((2, N, 16)))
  with pytest.raises(ValueError, match="router_layers must be increasing"):
    nested.NestedEncoder(D, DEPTH, HEADS, MLP, router_layers=(3,)).init(jax.random.key(0), X, (0.0, 0, 0, 1))
  with pytest.raises(ValueError, match="router must be one of"):
    nested.NestedEncoder(D, DEPTH, HEADS, MLP, router="smart").init(jax.random.key(0), X, (0.0, 0, 0, 1))
  with pytest.raises(ValueError, match="width_index must be in"):
    enc.init(jax.random.key(0), X, width_index=4)
  with pytest.raises(ValueError, match="capacities"):
    enc.init(jax.random.key(0), X, (0.5, 0.5))


def test_bounded_alpha_leaves_zero_when_its_gradient_turns_after_pushing_it_below():
  # Adam on alpha, whose loss first wants it below 0 (target -1), then at 0.5: a plain clip left the
  # parameter below 0, where it has no gradient, and alpha at 0 for good (what froze the routers of
  # the first digits64 MoNE runs); the bound's gradient brings it back.
  def train(alpha_fn):
    tx = optax.adam(0.05)
    raw, state = jnp.float32(0.0), None
    state = tx.init(raw)
    for step in range(300):
      target = -1.0 if step < 100 else 0.5
      g = jax.grad(lambda r: (alpha_fn(r) - target) ** 2)(raw)
      updates, state = tx.update(g, state)
      raw = optax.apply_updates(raw, updates)
    return float(alpha_fn(raw))
  assert train(lambda r: jnp.clip(r, 0.0, nested.ALPHA_MAX)) == 0.0
  assert train(nested.eq1_alpha) == pytest.approx(0.5, abs=0.02)


def test_eq1_alpha_stays_in_the_papers_range_and_learns_from_zero():
  raw = jnp.array([-2.0, 0.0, 0.3, 1.0, 5.0])
  np.testing.assert_array_equal(np.asarray(nested.eq1_alpha(raw)), [0, 0, np.float32(0.3), nested.ALPHA_MAX,
                                                                     nested.ALPHA_MAX])
  assert nested.ALPHA_MAX < 1 and np.float32(nested.ALPHA_MAX) < 1
  np.testing.assert_array_equal(np.asarray(nested.eq1_alpha(raw, bounded=False)), np.asarray(raw))
  # The gradient passes inside the bounds, and at or beyond one only towards the inside: at its
  # initial value 0 a loss that wants alpha larger moves it, one that wants it smaller does not.
  grad = lambda sign, a: float(jax.grad(lambda a: sign * nested.eq1_alpha(a))(jnp.float32(a)))
  assert [grad(-1.0, a) for a in (-0.5, 0.0, 0.3, 1.0, 5.0)] == [-1.0, -1.0, -1.0, 0.0, 0.0]
  assert [grad(+1.0, a) for a in (-0.5, 0.0, 0.3, 1.0, 5.0)] == [0.0, 0.0, 1.0, 1.0, 1.0]
  assert float(jax.grad(lambda a: nested.eq1_alpha(a, bounded=False))(-3.0)) == 1.0
  # In the encoder: a raw alpha far outside [0, 1) acts as the bound's edge.
  model = UserModel(router_layers=(1,))
  b = capacity.budget("mone", 0.3)
  params = model.init(jax.random.key(0), X, b.capacities)["params"]
  out = lambda a: np.asarray(model.apply({"params": {**params, "encoder": {**params["encoder"], "alpha": a}}},
                                         X, b.capacities)[0])
  np.testing.assert_array_equal(out(jnp.float32(-3.0)), out(jnp.float32(0.0)))
  np.testing.assert_array_equal(out(jnp.float32(7.0)), out(jnp.float32(nested.ALPHA_MAX)))
  assert not np.array_equal(out(jnp.float32(0.0)), out(jnp.float32(0.5)))
