"""attention="xla_vjp" (`mone.models.layers.attention` with manual_grad=True): the reference attention's
forward, bit for bit, with a written-out backward that computes autodiff's gradient up to the order of
its sums: per call, per model kind and along a few hundred training steps. "auto" stays the reference."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mone import results
from mone.configs import profiles
from mone.models import layers

from helpers import assert_parameter_gradients_agree, first_batches, smoke_kind, train_on


@pytest.mark.parametrize("shape", [(2, 3, 7, 4), (2, 4, 65, 16), (1, 2, 64, 32)])
def test_the_manual_backward_is_autodiffs(shape):
  q, k, v, g = (jax.random.normal(key, shape) for key in jax.random.split(jax.random.key(0), 4))
  f = lambda manual: jax.jit(lambda q, k, v: layers.attention(q, k, v, manual))
  np.testing.assert_array_equal(f(True)(q, k, v), f(False)(q, k, v))  # the forward is the reference's
  pulled = lambda manual: jax.jit(jax.value_and_grad(lambda q, k, v: jnp.vdot(layers.attention(q, k, v, manual), g),
                                                     argnums=(0, 1, 2)))(q, k, v)
  (loss_ref, ref), (loss, got) = pulled(False), pulled(True)
  assert loss == loss_ref  # the forward under differentiation too
  for r, d in zip(ref, got):
    assert r.shape == d.shape and r.dtype == d.dtype
    np.testing.assert_allclose(d, r, rtol=1e-5, atol=1e-5 * float(jnp.max(jnp.abs(r))))
  bf = jax.grad(lambda q, k, v: jnp.sum(layers.attention(q, k, v, True)), argnums=(0, 1, 2))(
      *(x.astype(jnp.bfloat16) for x in (q, k, v)))
  assert [x.dtype for x in bf] == [jnp.bfloat16] * 3


def test_the_manual_backward_stores_both_transposes_of_its_row_contractions():
  """dV and dK contract the query axis: each is computed as (b^T a)^T behind two barriers (`_rows_dot`),
  so that no dot takes its first operand contracted on its rows."""
  q = jnp.ones((1, 2, 8, 4))
  program = lambda manual: str(jax.make_jaxpr(jax.grad(lambda q: jnp.sum(layers.attention(q, q, q, manual))))(q))
  assert program(True).count("optimization_barrier") == 4 and "optimization_barrier" not in program(False)


def test_xla_vjp_is_opt_in_and_changes_the_config_hash():
  cfg = profiles.image_config("small", kind="vit", seed=5)
  assert f"{cfg.name}-{cfg.kind}-{results.config_hash(cfg)}" == "digits64-vit-ceb2cc9c6c85"
  assert layers.resolve_attention(cfg.model.attention, "cpu", jnp.float32, 32) == "xla"
  manual = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, attention="xla_vjp"))
  assert results.config_hash(manual) != results.config_hash(cfg)
  assert layers.resolve_attention("xla_vjp", "cuda", jnp.bfloat16, 64) == "xla_vjp"  # a name is taken as given


def _config(where, kind, e_c, attention, **more):
  return smoke_kind(where, kind, e_c, **{"model.attention": attention}, **more)


@pytest.mark.parametrize("where,kind,e_c", [  # make test-fast keeps MoNE's, whose blocks are the others' and more
    pytest.param("image", "vit", None, marks=pytest.mark.slow), ("image", "mone", 0.4),
    pytest.param("image", "matvit", None, marks=pytest.mark.slow), pytest.param("video", "vit", None, marks=pytest.mark.slow),
    ("video", "mone", 0.3)])
def test_every_kinds_parameter_gradients_are_the_references(where, kind, e_c):
  assert_parameter_gradients_agree(*(_config(where, kind, e_c, a) for a in ("xla", "xla_vjp")))


@pytest.mark.slow  # two 300-step runs
def test_a_video_run_with_the_manual_backward_follows_the_reference():
  """300 steps of the smoke ViViT from one initialisation on the same batches: the loss curves agree to
  float tolerance at every step (autodiff's sums reordered, never changed)."""
  n = 300
  cfgs = [_config("video", "vit", None, a, steps=n, warmup_steps=20, lr=1e-3) for a in ("xla", "xla_vjp")]
  batches = first_batches(cfgs[0], n)
  (ref, _, _), (got, _, _) = (train_on(c, batches) for c in cfgs)
  assert ref[-20:].mean() < ref[:20].mean() - 0.1  # it learned: the comparison is not of two flat lines
  np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)
