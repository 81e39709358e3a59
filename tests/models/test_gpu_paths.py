"""The blocks' implementations chosen by backend (`mone.models.layers.resolve_attention`,
`resolve_barrier`): each against the reference path on the CPU, the selection logic, the
committed runs' code and hashes left as they were, and the GPU program lowered here for CUDA."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import randomize

from mone import capacity, results
from mone.models import config, kinds, layers, nested
from mone.configs import recipes, schema

SMOKE = recipes.smoke()
X = jax.random.normal(jax.random.key(1), (2, SMOKE.model.image_size, SMOKE.model.image_size, 3))
CAPS = SMOKE.budget(0.3).capacities  # every expert gets tokens: all four widths run
PATHS = ({"attention": "dot_product"}, {"grad_barrier": "off"}, {"attention": "dot_product", "grad_barrier": "off"})


def _loss(kind, dtype=jnp.float32, backend=None, **paths):
  """A scalar of the model's logits in `dtype` (parameters and images cast, as the train step
  does), with the paths in `paths`."""
  model = kinds.build(dataclasses.replace(SMOKE.model, **paths), kind, backend=backend)
  caps = (CAPS,) if kind == "mone" else ()

  def loss(p, x):
    p, x = layers.cast_floating((p, x), dtype)
    return jnp.sum(jnp.tanh(model.apply({"params": p}, x, *caps)[0].astype(jnp.float32)))
  return loss


def _params(kind):
  caps = (CAPS,) if kind == "mone" else ()
  # Random parameters: the zero-initialised head would make every logit 0 and every gradient below it 0.
  return randomize(kinds.build(SMOKE.model, kind).init(jax.random.key(0), X, *caps))["params"]


def _rel(a, b):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("kind,dtype,tol", [  # make test-fast: MoNE in float32 and the ViT in bfloat16
    pytest.param("vit", jnp.float32, 1e-5, marks=pytest.mark.slow), ("mone", jnp.float32, 1e-5),
    ("vit", jnp.bfloat16, 5e-2), pytest.param("mone", jnp.bfloat16, 5e-2, marks=pytest.mark.slow)])
def test_every_path_computes_what_the_reference_computes(kind, dtype, tol):
  """jax's attention (the call cuDNN's flash attention goes through, with XLA's implementation)
  and the blocks without the gradient barrier give the reference's value and gradients (of the
  parameters and the input), each array within `tol` relative (its norm): float32 rounding, or
  bfloat16's (8 bits of mantissa, a different order of sums in the softmax)."""
  params = _params(kind)
  grad = lambda loss: jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(params, X)
  ref = grad(_loss(kind, dtype))  # auto on the CPU: the reference (xla attention, barrier on)
  leaves = jax.tree.leaves(ref)
  assert min(np.linalg.norm(np.asarray(a, np.float64)) for a in leaves) > 0  # every gradient is a real one
  for paths in PATHS:
    got = jax.tree.leaves(grad(_loss(kind, dtype, **paths)))
    errs = [_rel(a, b) for a, b in zip(got, leaves)]
    assert max(errs) <= tol, (paths, max(errs))


def test_auto_on_the_cpu_is_the_code_the_committed_runs_trained_with():
  """On the CPU "auto" lowers to the same program as the reference paths named explicitly, so
  committed runs reproduce bit for bit; and it is not the program without the barrier."""
  params = _params("mone")
  text = lambda **kw: jax.jit(jax.grad(_loss("mone", **kw))).lower(params, X).as_text(debug_info=False)
  auto = text()
  assert auto == text(attention="xla", grad_barrier="on") == text(backend="cpu")
  assert auto != text(grad_barrier="off")
  assert layers.default_backend() == "cpu"


def test_auto_picks_flash_attention_only_where_cudnn_takes_it_and_the_barrier_only_on_the_cpu():
  for backend in ("gpu", "cuda"):  # jax's name for a GPU, and `default_backend`'s for an NVIDIA one
    assert layers.resolve_attention("auto", backend, jnp.bfloat16, 64) == "cudnn"
    assert layers.resolve_attention("auto", backend, jnp.float16, 128) == "cudnn"
  assert layers.resolve_attention("auto", "cuda", jnp.float32, 64) == "xla"  # cuDNN's flash attention: 16-bit only
  assert layers.resolve_attention("auto", "cuda", jnp.bfloat16, 136) == "xla"  # head dim above 128
  assert layers.resolve_attention("auto", "cuda", jnp.bfloat16, 60) == "xla"  # not a multiple of 8
  for backend in ("cpu", "tpu", "rocm"):
    assert layers.resolve_attention("auto", backend, jnp.bfloat16, 64) == "xla"
  assert layers.resolve_attention("dot_product", "cpu", jnp.float32, 64) == "dot_product"
  assert layers.resolve_attention("xla", "cuda", jnp.bfloat16, 64) == "xla"
  with pytest.raises(ValueError, match="attention must be one of"):
    layers.resolve_attention("flash", "cuda", jnp.bfloat16, 64)
  assert layers.resolve_barrier("auto", "cpu")
  assert not any(layers.resolve_barrier("auto", b) for b in ("gpu", "cuda", "rocm", "tpu"))
  assert layers.resolve_barrier("on", "cuda") and not layers.resolve_barrier("off", "cpu")
  with pytest.raises(ValueError, match="grad_barrier must be one of"):
    layers.resolve_barrier("maybe", "cpu")


def test_cudnn_attention_asked_for_off_a_cuda_gpu_is_refused_with_a_message():
  """No silent fallback: a config that names "cudnn" means to measure cuDNN; "auto" is the
  setting that falls back."""
  with pytest.raises(ValueError, match="attention='cudnn' needs a CUDA GPU; this backend is 'cpu'"):
    layers.resolve_attention("cudnn", "cpu", jnp.bfloat16, 64)
  with pytest.raises(ValueError, match="attention='cudnn' needs a CUDA GPU; this backend is 'cpu'"):
    _loss("vit", jnp.bfloat16, attention="cudnn")(_params("vit"), X)


@pytest.mark.slow  # a GPU path
def test_a_model_built_for_cuda_hands_the_qkv_projection_to_cudnn_token_major(monkeypatch):
  """backend="cuda" reaches every block: in bfloat16 "auto" calls jax's attention with cuDNN's
  implementation, on [B, N, H, c] slices of the projection. (cuDNN itself needs a GPU: the
  recorder runs XLA's implementation in its place and the result is the "dot_product" path's.)
  In float32 "auto" keeps the reference."""
  calls, xla = [], jax.nn.dot_product_attention

  def recorder(q, k, v, implementation=None):
    calls.append((implementation, q.shape, k.shape, v.shape))
    return xla(q, k, v, implementation=None)

  params = _params("mone")
  want = _loss("mone", jnp.bfloat16, attention="dot_product")(params, X)
  monkeypatch.setattr(layers.jax.nn, "dot_product_attention", recorder)
  got = _loss("mone", jnp.bfloat16, backend="cuda")(params, X)
  m = SMOKE.model
  shape = (X.shape[0], m.num_tokens, m.num_heads, m.width // m.num_heads)
  assert calls == [("cudnn", shape, shape, shape)] * m.depth
  assert got == want
  calls.clear()
  _loss("mone", jnp.float32, backend="cuda")(params, X)
  assert calls == []


def test_a_config_refuses_an_unknown_path_and_keeps_committed_hashes_at_the_defaults():
  """The fields are `config._added`: at "auto" they are left out of the hash, so every committed
  run keeps its name (test_config checks every run file); a path named explicitly is a new config."""
  with pytest.raises(ValueError, match=r"attention must be one of \('auto', 'xla', 'xla_vjp', 'dot_product', 'cudnn'\)"):
    dataclasses.replace(recipes.digits64().model, attention="flash")
  with pytest.raises(ValueError, match=r"grad_barrier must be one of \('auto', 'on', 'off'\)"):
    config.vit("S/16", grad_barrier="sometimes")
  with pytest.raises(ValueError, match="attention must be one of"):
    config.vivit("tiny/8x2", attention="flash")
  runs = sorted((results.RESULTS / "runs").glob("*.json"))
  # The first dense and MoNE run of an image, a 64 px image and a video profile.
  picked = [next(p for p in runs if p.name.startswith(f"{name}-{kind}-"))
            for name in ("digits", "digits64", "moving_temporal") for kind in ("vit", "mone")]
  for path in picked:
    run = results.read_json(path)
    cfg = schema.from_json(run["config"])
    assert (cfg.model.attention, cfg.model.grad_barrier) == ("auto", "auto")
    assert results.config_hash(cfg) == run["config_hash"], path.name
    explicit = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, attention="xla"))
    assert results.config_hash(explicit) != run["config_hash"]


def _exported_grad(kind, backend, dtype=jnp.float32, **paths):
  loss = _loss(kind, dtype, backend=backend, **paths)
  return jax.export.export(jax.jit(jax.grad(loss)), platforms=("cuda",))(_params(kind), X).mlir_module()


@pytest.mark.parametrize("kind,per_block", [("mone", 3), pytest.param("vit", 2, marks=pytest.mark.slow)])
def test_the_gpu_program_has_no_conditional_unless_the_barrier_is_forced(kind, per_block):
  """Lowered for CUDA here, without a GPU (StableHLO; nothing is compiled). The barrier is a
  `case` per fence: three per routed block (qkv, attention output, block output), two per dense
  block (qkv, block output). A model built for backend "cuda" leaves it out at "auto"; one built on the CPU's default
  keeps the CPU's choice even when exported for CUDA, which is why the models take a backend.
  (cuDNN's attention does not lower without cuDNN installed, so these use float32, where "auto"
  is the reference attention on a GPU too.)"""
  depth = SMOKE.model.depth
  count = lambda text: (text.count("stablehlo.case"), text.count("stablehlo.optimization_barrier"))
  assert count(_exported_grad(kind, "cuda")) == (0, 0)
  assert count(_exported_grad(kind, "cuda", grad_barrier="on")) == (per_block * depth,) * 2
  assert count(_exported_grad(kind, None)) == (per_block * depth,) * 2  # the CPU's default


def test_every_model_passes_its_backend_to_every_block():
  """The image models, MoD, ViViT (spatial and temporal blocks) and the drop-in encoder: built for
  "cuda", no block of their gradient holds the barrier's conditional; built for the CPU, every
  block does (traced only)."""
  video_cfg = config.vivit("tiny/8x2")
  video = jax.random.normal(jax.random.key(2), (1, video_cfg.num_frames, 32, 32, 3))
  tokens = jax.random.normal(jax.random.key(3), (2, 16, 32))
  models = {  # name: (make(backend), input, capacities or None, the CPU's conditionals: 3 a routed block, 2 a dense)
      "mone": (lambda b: kinds.build(SMOKE.model, "mone", backend=b), X, CAPS, 3 * SMOKE.model.depth),
      "mod": (lambda b: kinds.build(SMOKE.model, "mod", backend=b), X, None, 2 * SMOKE.model.depth),
      "vivit-mone": (lambda b: kinds.build(video_cfg, "mone", backend=b), video, CAPS,
                     3 * video_cfg.depth + 2 * video_cfg.temporal_depth),
      "encoder": (lambda b: nested.NestedEncoder(32, 2, 2, 64, backend=b), tokens, CAPS, 3 * 2),
  }
  for name, (make, x, caps, cpu_conds) in models.items():
    args = (x,) if caps is None else (x, caps)
    params = jax.eval_shape(lambda: make(None).init(jax.random.key(0), *args)["params"])

    def conds(backend):
      f = lambda p: jnp.sum(jax.tree.leaves(make(backend).apply({"params": p}, *args))[0])
      return str(jax.make_jaxpr(jax.grad(f))(params)).count(" cond[")
    assert (conds("cuda"), conds(None)) == (0, cpu_conds), name


# The scanned encoder (`layers.run_blocks`, layer_loop="scan"): the models where a stack of
# blocks has a shape of its own: the dense, MatViT and MoNE image models (two routers, after two
# dense blocks: three stacks, one of a single block, which stays unrolled), the video models
# (a full-width CLS group beside the routed ones, temporal blocks unrolled, every block
# rematerialised), and the weight slices a benchmark passes in as the 'nested' collection.
SCAN_CASES = {
    "vit": ("image", "vit", {}, {}),
    "matvit": ("image", "matvit", {}, {"width_index": 1}),
    "mone, 2 routers after 2 dense blocks": ("image", "mone", {"depth": 5, "router_layer": 2, "num_routers": 2}, {}),
    "vivit": ("video", "vit", {}, {}),
    "mone vivit, remat": ("video", "mone", {"remat": True}, {}),
    "mone, nested weight slices": ("image", "mone", {"nested": True}, {}),
}


def _scan_case(name, loop):
  """(loss of the parameters, parameters) of a SCAN_CASES model with layer_loop=loop."""
  family, kind, opts, call = SCAN_CASES[name]
  opts = dict(opts)
  remat, slices = opts.pop("remat", False), opts.pop("nested", False)
  if family == "image":
    cfg = config.vit("tiny/8", depth=opts.pop("depth", 3), head_zeroinit=False, layer_loop=loop, **opts)
    model, x = kinds.build(cfg, kind, remat=remat), X
  else:
    cfg = config.vivit("tiny/8x2", depth=3, num_frames=4, head_zeroinit=False, layer_loop=loop)
    model = kinds.build(cfg, kind, remat=remat)
    x = jax.random.normal(jax.random.key(2), (2, 4, cfg.image_size, cfg.image_size, 3))
  caps = (capacity.budget("mone", 0.3, cfg.num_experts).capacities,) if kind == "mone" else ()
  params = randomize(model.init(jax.random.key(0), x, *caps, **call))["params"]
  extra = lambda p: {"nested": layers.nested_weights(p, cfg.expert_widths)} if slices else {}
  return (lambda p: jnp.sum(jnp.tanh(model.apply({"params": p, **extra(p)}, x, *caps, **call)[0]))), params


@pytest.mark.parametrize("name", list(SCAN_CASES))
@pytest.mark.slow
def test_a_scanned_encoder_computes_what_the_unrolled_one_computes(name):
  """The same parameters (layer_loop does not change the tree or the initialisation), the same
  value and gradients, every array within float32 rounding (1e-5 relative)."""
  with jax.default_matmul_precision("highest"):
    loss_u, params = _scan_case(name, "unroll")
    loss_s, params_s = _scan_case(name, "scan")
    assert jax.tree.structure(params_s) == jax.tree.structure(params)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params_s), jax.tree.leaves(params)))
    ref = jax.jit(jax.value_and_grad(loss_u))(params)
    got = jax.jit(jax.value_and_grad(loss_s))(params)
  leaves = jax.tree.leaves(ref)
  assert min(np.linalg.norm(np.asarray(a, np.float64)) for a in leaves) > 0  # every gradient is a real one
  errs = [_rel(a, b) for a, b in zip(jax.tree.leaves(got), leaves)]
  assert max(errs) <= 1e-5, max(errs)


@pytest.mark.slow  # bfloat16, for the GPU (the float32 comparison above is slow too: it compiles every case)
@pytest.mark.parametrize("kind", ["vit", "mone"])
def test_a_scanned_encoder_in_bfloat16_is_as_close_to_float32_as_the_unrolled_one(kind):
  """In bfloat16 the loop sums some gradients in another order (Eq. 1's alpha gathers one term
  per block: in the loop's carry, in bfloat16), so scan and unroll differ by bfloat16 rounding.
  Measured against the float32 reference, each array is as close under scan as under unroll
  (within twice its error, plus 1% relative)."""
  params = _params(kind)
  grad = lambda loss: jax.tree.leaves(jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(params, X))
  with jax.default_matmul_precision("highest"):
    truth = grad(_loss(kind))
  unrolled, scanned = grad(_loss(kind, jnp.bfloat16)), grad(_loss(kind, jnp.bfloat16, layer_loop="scan"))
  for i, (u, s, t) in enumerate(zip(unrolled, scanned, truth)):
    assert _rel(s, t) <= 2 * _rel(u, t) + 1e-2, (i, _rel(s, t), _rel(u, t))


@pytest.mark.slow  # layer_loop="scan", for deep models on the GPU
def test_a_scanned_encoder_compiles_one_block_whatever_its_depth():
  """What layer_loop="scan" is for: the program holds one block's matmuls inside a loop, so it
  does not grow with depth, while the unrolled one grows by a block's worth per layer (the MoNE
  training step, lowered here; XLA's compile time follows the program's size)."""
  def dots(depth, loop):
    cfg = dataclasses.replace(SMOKE.model, depth=depth, layer_loop=loop)
    model = kinds.build(cfg, "mone")
    params = model.init(jax.random.key(0), X, CAPS)["params"]
    loss = lambda p: jnp.sum(model.apply({"params": p}, X, CAPS)[0])
    text = jax.jit(jax.grad(loss)).lower(params).as_text()
    return text.count("stablehlo.dot_general"), text.count("stablehlo.while")
  (u2, _), (u6, _) = dots(2, "unroll"), dots(6, "unroll")
  (s2, w2), (s6, w6) = dots(2, "scan"), dots(6, "scan")
  per_block = (u6 - u2) // 4
  assert per_block > 0 and u6 == u2 + 4 * per_block
  assert s6 == s2 and (w2, w6) == (2, 2)  # one loop forward, one backward, at any depth
  assert s6 < u6 - 3 * per_block


def test_an_unknown_layer_loop_is_refused_and_the_default_keeps_every_hash():
  with pytest.raises(ValueError, match=r"layer_loop must be one of \('unroll', 'scan'\), got 'while'"):
    config.vit("S/16", layer_loop="while")
  with pytest.raises(ValueError, match="layer_loop must be one of"):
    config.vivit("tiny/8x2", layer_loop="while")
  cfg = recipes.digits64()
  assert results.config_hash(dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, layer_loop="unroll"))) == \
      results.config_hash(cfg)
  assert results.config_hash(dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, layer_loop="scan"))) != \
      results.config_hash(cfg)
  with pytest.raises(ValueError, match="layer_loop must be one of"):
    nested.NestedEncoder(width=32, depth=2, num_heads=2, mlp_dim=128, layer_loop="while").init(
        jax.random.key(0), jnp.zeros((1, 4, 32)))
