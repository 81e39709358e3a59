"""The implementations chosen by backend (`mone.models.layers.resolve_attention`, `resolve_barrier`):
each against the reference path on the CPU, the selection logic, and the GPU program lowered here."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mone.models import layers
from mone.train import recipes, steps


def _model_and_loss(kind, **paths):
  cfg = recipes.apply_overrides(recipes.smoke(), {"kind": kind, **({"e_c": 0.3} if kind == "mone" else {})})
  cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **paths))
  model = steps.build_model(cfg)
  x = jax.random.normal(jax.random.key(1), steps.input_shape(cfg), jnp.float32)
  params = steps.init_params(cfg, model, x)
  budget = cfg.budget(cfg.e_c) if kind == "mone" else None

  def loss(p, x):
    out = model.apply({"params": p}, x, budget.capacities) if budget else model.apply({"params": p}, x)
    logits = out[0] if isinstance(out, tuple) else out
    return jnp.sum(jnp.tanh(logits))
  return params, x, loss


@pytest.mark.parametrize("kind", ["vit", "mone"])
def test_every_path_computes_what_the_reference_computes(kind):
  params, x, loss = _model_and_loss(kind)  # auto on the CPU: the reference (xla attention, barrier on)
  ref_value, (ref_gp, ref_gx) = jax.value_and_grad(loss, argnums=(0, 1))(params, x)
  for paths in ({"attention": "dot_product"}, {"grad_barrier": "off"}, {"attention": "dot_product", "grad_barrier": "off"}):
    _, _, other = _model_and_loss(kind, **paths)
    value, (gp, gx) = jax.value_and_grad(other, argnums=(0, 1))(params, x)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-4, atol=1e-6)
    for a, b in zip(jax.tree.leaves(gp), jax.tree.leaves(ref_gp)):
      np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_auto_picks_flash_attention_only_on_a_cuda_gpu_where_it_applies_and_the_barrier_only_on_the_cpu():
  assert layers.resolve_attention("auto", "gpu", jnp.bfloat16, 64) == "cudnn"
  assert layers.resolve_attention("auto", "cpu", jnp.bfloat16, 64) == "xla"
  assert layers.resolve_attention("auto", "gpu", jnp.float32, 64) == "xla"  # cuDNN's flash attention: 16-bit only
  assert layers.resolve_attention("auto", "gpu", jnp.bfloat16, 256) == "xla"
  assert layers.resolve_attention("auto", "tpu", jnp.bfloat16, 64) == "xla"
  assert layers.resolve_attention("dot_product", "cpu", jnp.float32, 64) == "dot_product"
  with pytest.raises(ValueError, match="attention='cudnn' needs a CUDA GPU"):
    layers.resolve_attention("cudnn", "cpu", jnp.bfloat16, 64)
  with pytest.raises(ValueError, match="attention must be one of"):
    layers.resolve_attention("flash", "gpu", jnp.bfloat16, 64)
  assert layers.resolve_barrier("auto", "cpu") and not layers.resolve_barrier("auto", "gpu")
  assert layers.resolve_barrier("on", "gpu") and not layers.resolve_barrier("off", "cpu")
  with pytest.raises(ValueError, match="grad_barrier must be one of"):
    layers.resolve_barrier("maybe", "cpu")


def test_a_config_refuses_an_unknown_path_and_keeps_its_hash_at_the_defaults():
  from mone import results
  from mone.models import config
  cfg = recipes.digits64()
  with pytest.raises(ValueError, match="attention must be one of"):
    dataclasses.replace(cfg.model, attention="flash")
  with pytest.raises(ValueError, match="grad_barrier must be one of"):
    config.vit("S/16", grad_barrier="sometimes")
  committed = results.read_json(results.RESULTS / "runs" / "digits64-vit-c866f09e75ca.json")
  assert results.config_hash(recipes.apply_overrides(cfg, {"kind": "vit", "num_devices": 1})) == committed["config_hash"]


def test_the_gpu_program_without_the_barrier_has_no_conditional():
  # Lowered for CUDA here, without a GPU: the gradient barrier is a `case` per fence, three per
  # routed block (qkv, attention output, block output), none with grad_barrier off.
  counts = {}
  for barrier in ("on", "off"):
    params, x, loss = _model_and_loss("mone", grad_barrier=barrier)
    exported = jax.export.export(jax.jit(jax.grad(loss)), platforms=("cuda",))(params, x)
    counts[barrier] = exported.mlir_module().count("stablehlo.case")
  depth = recipes.smoke().model.depth
  assert counts == {"on": 3 * depth, "off": 0}
