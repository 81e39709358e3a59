"""The fused nested-MLP kernel (`mone.models.fused_mlp`) and the blocks' opt-in 'mlp' path: the kernel
(Pallas interpret mode on the CPU) against the reference expression, forward and gradients; a whole
MoNE ViT with mlp="pallas" against "xla"; the selection logic; and the Triton program lowered here
for CUDA (StableHLO with the serialised Triton kernel; nothing is compiled, no GPU needed)."""
import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import randomize
from jax.ad_checkpoint import print_saved_residuals

from mone.models import config, fused_mlp, kinds, layers, nested
from mone.configs import recipes, schema

SMOKE = recipes.smoke()
X = jax.random.normal(jax.random.key(1), (2, SMOKE.model.image_size, SMOKE.model.image_size, 3))
CAPS = SMOKE.budget(0.3).capacities  # every expert gets tokens: all four widths (4, 8, 16, 32) run
TRITON = "__gpu$xla.gpu.triton"


def _rel(a, b):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  return np.linalg.norm(a - b) / np.linalg.norm(b)


def _mlp(shape, d, m, dtype=jnp.float32, seed=0):
  """x of `shape` (last axis d) and the MLP's weights, biases not small (so their gradients count)."""
  k = jax.random.split(jax.random.key(seed), 5)
  return (jax.random.normal(k[0], shape, dtype), (jax.random.normal(k[1], (d, m)) / np.sqrt(d)).astype(dtype),
          (0.5 * jax.random.normal(k[2], (m,))).astype(dtype), (jax.random.normal(k[3], (m, d)) / np.sqrt(m)).astype(dtype),
          (0.5 * jax.random.normal(k[4], (d,))).astype(dtype))


# (tokens shape, d, M, block_tokens, block_hidden): 37 tokens are never a whole number of tiles; d 16
# and 32 as asked, 8 (padded to 16: Triton's dot minimum) and 48 (two power-of-two segments, 32 + 16)
# as MoNE's nested widths are; tiles of 16 tokens and chunks of 32 hidden units give several of each.
CASES = [((37, 16), 16, 64, None, None), ((37, 32), 32, 128, 16, 32), ((37, 8), 8, 64, 16, 16),
         ((2, 19, 48), 48, 128, 16, 64), ((37, 16), 16, 64, 32, 16)]


@pytest.mark.parametrize("shape,d,m,bt,bh", CASES)
def test_the_kernel_computes_the_blocks_mlp_and_its_gradients(shape, d, m, bt, bh):
  args = _mlp(shape, d, m)
  kernel = jax.jit(lambda *a: fused_mlp.nested_mlp(*a, interpret=True, block_tokens=bt, block_hidden=bh))
  ref = fused_mlp.reference(*args)
  got = kernel(*args)
  assert got.shape == ref.shape == shape and got.dtype == ref.dtype
  assert _rel(got, ref) <= 1e-5, _rel(got, ref)

  ct = jax.random.normal(jax.random.key(9), shape)  # every output's gradient counts
  grad = lambda f: jax.jit(jax.grad(lambda *a: jnp.sum(f(*a) * ct), argnums=range(5)))(*args)
  got_g, ref_g = grad(lambda *a: fused_mlp.nested_mlp(*a, interpret=True, block_tokens=bt, block_hidden=bh)), \
      grad(fused_mlp.reference)
  errs = [_rel(a, b) for a, b in zip(got_g, ref_g)]  # x, w1, b1, w2, b2
  assert max(errs) <= 1e-5, errs


def test_the_kernels_erf_is_xlas():
  """lax.erf has no Triton lowering; the kernel's rational approximation stays within 5e-7 of it."""
  x = jnp.linspace(-6.0, 6.0, 4001)
  assert float(jnp.max(jnp.abs(fused_mlp._erf(x) - jax.lax.erf(x)))) <= 5e-7


def test_the_backward_pass_keeps_only_the_inputs(capsys):
  """No [T, M] hidden layer is saved by the forward pass: the backward recomputes it."""
  x, w1, b1, w2, b2 = _mlp((64, 16), 16, 256)
  print_saved_residuals(lambda x: fused_mlp.nested_mlp(x, w1, b1, w2, b2, interpret=True), x)
  saved = capsys.readouterr().out
  assert "f32[64,16]" in saved and "[64,256]" not in saved, saved
  print_saved_residuals(lambda x: fused_mlp.reference(x, w1, b1, w2, b2), x)
  assert "f32[64,256]" in capsys.readouterr().out  # XLA's expression keeps it


def test_bad_tiles_are_refused():
  args = _mlp((4, 16), 16, 64)
  for kw in ({"block_tokens": 24}, {"block_hidden": 8}):
    with pytest.raises(ValueError, match="must be a power of two >= 16"):
      fused_mlp.nested_mlp(*args, interpret=True, **kw)


# ------------------------------------------------------------------------------------------------
# The block's opt-in path.

def _loss(backend=None, **paths):
  model = kinds.build(dataclasses.replace(SMOKE.model, **paths), "mone", backend=backend)
  return lambda p, x: jnp.sum(jnp.tanh(model.apply({"params": p}, x, CAPS)[0]))


def _params():
  return randomize(kinds.build(SMOKE.model, "mone").init(jax.random.key(0), X, CAPS))["params"]


@pytest.mark.slow  # a GPU path, a whole model in interpret mode; make test-fast checks the kernel alone
def test_a_mone_vit_with_the_kernel_computes_what_it_computes_without():
  """mlp="pallas" (interpret mode on the CPU) against "xla": the same loss and gradients of every
  parameter and of the input, each within 1e-5 relative (its norm)."""
  params = _params()
  grad = lambda loss: jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(params, X)
  ref, got = jax.tree.leaves(grad(_loss(mlp="xla"))), jax.tree.leaves(grad(_loss(mlp="pallas")))
  assert min(np.linalg.norm(np.asarray(a, np.float64)) for a in ref) > 0  # every gradient is a real one
  errs = [_rel(a, b) for a, b in zip(got, ref)]
  assert max(errs) <= 1e-5, max(errs)


def test_auto_is_the_reference_mlp_on_the_cpu_bit_for_bit():
  """At "auto" (the default) and "xla" a block lowers to the same program as before the option
  existed (committed runs reproduce); "pallas" is another program."""
  params = _params()
  text = lambda **kw: jax.jit(jax.grad(_loss(**kw))).lower(params, X).as_text(debug_info=False)
  auto = text()
  assert auto == text(mlp="xla") == text(mlp="auto", attention="xla", grad_barrier="on")
  assert auto != text(mlp="pallas")


def test_auto_is_xla_everywhere_and_an_unknown_mlp_is_refused():
  for backend in ("cpu", "cuda", "gpu", "rocm", "tpu"):
    assert layers.resolve_mlp("auto", backend) == "xla"
    assert layers.resolve_mlp("xla", backend) == "xla"
  assert layers.resolve_mlp("pallas", "cpu") == layers.resolve_mlp("pallas", "cuda") == "pallas"
  with pytest.raises(ValueError, match=r"^mlp must be one of \('auto', 'xla', 'pallas'\), got 'triton'$"):
    layers.resolve_mlp("triton", "cpu")
  with pytest.raises(ValueError, match=r"^mlp must be one of \('auto', 'xla', 'pallas'\), got 'fused'$"):
    config.vit("tiny/8", mlp="fused")
  with pytest.raises(ValueError, match="mlp must be one of"):
    schema.apply_overrides(SMOKE, {"model.mlp": "fused"})
  with pytest.raises(ValueError, match="mlp must be one of"):
    config.vivit("tiny/8x2", mlp="fused")
  with pytest.raises(ValueError, match="mlp='pallas' needs a CUDA GPU"):
    layers.resolve_mlp("pallas", "tpu")
  assert schema.apply_overrides(SMOKE, {"model.mlp": "pallas"}).model.mlp == "pallas"


# ------------------------------------------------------------------------------------------------
# The program a CUDA GPU would run, lowered here.

def _export_cuda(f, *args):
  return jax.export.export(jax.jit(f), platforms=("cuda",),
                           disabled_checks=[jax.export.DisabledSafetyCheck.custom_call(TRITON)])(*args).mlir_module()


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_the_kernel_lowers_to_triton_at_vit_b_widths(dtype):
  """Triton takes power-of-two arrays only and lax.erf not at all; ViT-B's widths are 3 x 2^k
  (96 ... 768) and its hidden layer 3072: each lowers, forward and gradient, to one Triton call."""
  for d in (96, 768):
    s = lambda *shape: jax.ShapeDtypeStruct(shape, dtype)
    loss = lambda *a: jnp.sum(fused_mlp.nested_mlp(*a).astype(jnp.float32))
    text = _export_cuda(jax.value_and_grad(loss, argnums=range(5)), s(2, 37, d), s(d, 3072), s(3072), s(3072, d), s(d))
    assert len(re.findall(re.escape(f"custom_call @{TRITON}"), text)) == 1, d


@pytest.mark.slow  # a GPU path
def test_a_mone_vit_built_for_cuda_runs_every_groups_mlp_through_triton():
  """backend="cuda", mlp="pallas": one Triton kernel per group and block in the training step's
  program (the backward pass is XLA's), none at "auto"."""
  params = jax.eval_shape(_params)
  count = lambda **kw: len(re.findall(re.escape(f"custom_call @{TRITON}"),
                                      _export_cuda(jax.grad(_loss(backend="cuda", **kw)), params, X)))
  assert count(mlp="pallas") == SMOKE.model.depth * SMOKE.model.num_experts
  assert count() == 0


def test_every_model_passes_its_mlp_to_every_block():
  """The image models, MoD, ViViT (spatial and temporal blocks) and the drop-in encoder: with
  mlp="pallas" every group of every block calls the kernel, at "auto" none does (traced only)."""
  video_cfg = config.vivit("tiny/8x2")
  video = jax.random.normal(jax.random.key(2), (1, video_cfg.num_frames, 32, 32, 3))
  tokens = jax.random.normal(jax.random.key(3), (2, 16, 32))
  depth, experts = SMOKE.model.depth, SMOKE.model.num_experts
  models = {  # name: (make(mlp), input, capacities or None, kernels per call: one per group and block)
      "mone": (lambda m: kinds.build(dataclasses.replace(SMOKE.model, mlp=m), "mone"), X, CAPS, depth * experts),
      "mod": (lambda m: kinds.build(dataclasses.replace(SMOKE.model, mlp=m), "mod"), X, None, depth),
      "vivit-mone": (lambda m: kinds.build(dataclasses.replace(video_cfg, mlp=m), "mone"), video, CAPS,
                     video_cfg.depth * (1 + experts) + video_cfg.temporal_depth),  # + the CLS group; temporal
      "encoder": (lambda m: nested.NestedEncoder(32, 2, 2, 128, mlp=m), tokens, CAPS, 2 * experts),
  }
  for name, (make, x, caps, kernels) in models.items():
    args = (x,) if caps is None else (x, caps)
    params = jax.eval_shape(lambda: make("auto").init(jax.random.key(0), *args)["params"])
    calls = lambda m: str(jax.make_jaxpr(lambda p: make(m).apply({"params": p}, *args))(params)).count("pallas_call[")
    assert (calls("pallas"), calls("auto")) == (kernels, 0), name
