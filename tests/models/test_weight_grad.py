"""model.weight_grad="direct" and "narrow_first" (`mone.models.linear.linear`) compute the gradient
autodiff does: per projection, per model kind, and along a few hundred training steps. The default stays
autodiff's, the program every committed run trained with."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mone import results
from mone.configs import profiles
from mone.models import config
from mone.models.linear import linear
from mone.train import steps

from helpers import assert_parameter_gradients_agree, first_batches, smoke_kind, train_on


@pytest.mark.parametrize("how", ["direct", "narrow_first"])
@pytest.mark.parametrize("k,n", [(16, 24), (24, 16)])  # narrow_first reorders the dot where n < k
def test_linear_gradients_are_autodiffs(how, k, n):
  x = jax.random.normal(jax.random.key(0), (3, 7, k))
  w = jax.random.normal(jax.random.key(1), (k, n))
  g = jax.random.normal(jax.random.key(2), (3, 7, n))
  loss = lambda how: (lambda x, w: jnp.sum(linear(x, w, how) * g))
  ref = jax.grad(loss("autodiff"), argnums=(0, 1))(x, w)
  got = jax.grad(loss(how), argnums=(0, 1))(x, w)
  np.testing.assert_array_equal(linear(x, w, how), x @ w)  # the forward is the same program
  for r, d in zip(ref, got):
    assert r.shape == d.shape and r.dtype == d.dtype
    np.testing.assert_allclose(d, r, rtol=1e-5, atol=1e-5)
  bf = jax.grad(lambda x, w: jnp.sum(linear(x, w, how)), argnums=(0, 1))(
      x.astype(jnp.bfloat16), w.astype(jnp.bfloat16))
  assert [a.dtype for a in bf] == [jnp.bfloat16, jnp.bfloat16]


def test_narrow_first_contracts_the_tokens_with_the_narrower_operand_first():
  """The weight gradient's dot as the program states it: [T, k] first under "direct", the cotangent
  [T, n] first under "narrow_first" where n < k, its [n, k] product then transposed."""
  x, w = jnp.ones((5, 32)), jnp.ones((32, 8))
  program = lambda how: str(jax.make_jaxpr(jax.grad(lambda w: jnp.sum(linear(x, w, how))))(w))
  direct, narrow = program("direct"), program("narrow_first")
  assert "f32[32,8] = dot_general" in direct and "f32[8,32] = dot_general" not in direct
  assert "f32[8,32] = dot_general" in narrow and "optimization_barrier" in narrow and "transpose" in narrow


def test_a_bad_weight_grad_is_refused_naming_it():
  with pytest.raises(ValueError, match=r"weight_grad must be one of \('autodiff', 'direct', 'narrow_first'\), got 'fast'"):
    config.vit("tiny/8", weight_grad="fast")
  with pytest.raises(ValueError, match="weight_grad must be one of"):
    linear(jnp.ones((2, 3)), jnp.ones((3, 4)), "fast")


def test_the_default_leaves_every_config_hash_as_it_was():
  """weight_grad is left out of the config hash at its default, so committed run files keep their names."""
  cfg = profiles.image_config("small", kind="vit", seed=5)
  assert f"{cfg.name}-{cfg.kind}-{results.config_hash(cfg)}" == "digits64-vit-ceb2cc9c6c85"
  direct = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, weight_grad="direct"))
  assert results.config_hash(direct) != results.config_hash(cfg)


CASES = [("image", "vit", None), ("image", "matvit", None), ("image", "mod", None), ("image", "mone", 0.4),
         ("video", "vit", None), ("video", "mone", 0.3)]


def _config(where, kind, e_c, weight_grad, **more):
  return smoke_kind(where, kind, e_c, **{"model.weight_grad": weight_grad}, **more)


# make test-fast checks direct, the one the calibration trains with (calibrations.FASTER); make test both
@pytest.mark.parametrize("how", ["direct", pytest.param("narrow_first", marks=pytest.mark.slow)])
@pytest.mark.parametrize("where,kind,e_c", CASES)
def test_every_kinds_parameter_gradients_are_autodiffs(where, kind, e_c, how):
  assert_parameter_gradients_agree(*(_config(where, kind, e_c, w) for w in ("autodiff", how)))


@pytest.mark.slow  # two 300-step runs
@pytest.mark.parametrize("how", ["direct", "narrow_first"])
def test_a_dense_run_with_direct_weight_gradients_follows_the_reference(how):
  """300 steps of the ViT from one initialisation on the same batches: the loss curves agree to float
  tolerance at every step (the sums are reordered, never changed), and so do the trained models'
  logits. (Parameters are compared through the function they compute: the key projection's bias has
  no gradient but rounding noise, which Adam scales up to full-size steps either way.)"""
  n = 300
  cfgs = [_config("image", "vit", None, w, steps=n, warmup_steps=20, lr=1e-3) for w in ("autodiff", how)]
  batches = first_batches(cfgs[0], n)
  (ref, model, p_ref), (got, _, p_got) = (train_on(c, batches) for c in cfgs)
  assert ref[-20:].mean() < ref[:20].mean() - 0.1  # it learned: the comparison is not of two flat lines
  np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
  x = batches[0]["image"]
  logits = [steps.logits(cfgs[0], model, p, x, None, jax.random.key(0))[0] for p in (p_ref, p_got)]
  np.testing.assert_allclose(logits[1], logits[0], rtol=1e-3, atol=1e-3)


@pytest.mark.slow  # two 300-step runs
def test_a_mone_run_with_direct_weight_gradients_follows_the_reference_until_a_routing_flips():
  """MoNE's routing is discrete: once rounding moves one token's router score past another's, EPR
  sends it to another expert and the two runs take trajectories of their own, as the same run does on
  another CPU. Until then (the first 40 of 300 steps here) the loss curves agree to float tolerance;
  over the last 100 steps the two runs train alike (mean loss within 0.03)."""
  n = 300
  cfgs = [_config("image", "mone", 0.4, w, steps=n, warmup_steps=20, lr=1e-3) for w in ("autodiff", "direct")]
  batches = first_batches(cfgs[0], n)
  (ref, _, _), (got, _, _) = (train_on(c, batches) for c in cfgs)
  assert ref[-20:].mean() < ref[:20].mean() - 0.1
  np.testing.assert_allclose(got[:40], ref[:40], rtol=2e-4, atol=2e-4)
  assert abs(got[-100:].mean() - ref[-100:].mean()) < 0.03
