import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import assert_parameter_gradients_agree, hlo_matmul_macs, randomize, set_alpha, smoke_kind

from mone import capacity, flops, results
from mone.configs import profiles
from mone.models import config, kinds, masked, routing, vivit

CFG = config.vivit("tiny/8x2")  # 4 temporal indices x 16 tokens, width 32, 2 + 1 layers
X = jax.random.normal(jax.random.key(0), (2, 8, 32, 32, 3))
TOL = dict(rtol=2e-5, atol=2e-5)
CAPS = tuple(capacity.capacity_distribution(0.4))


def init(cfg=CFG, seed=0):
  """Randomised MoNE parameters (a superset of the dense ViViT's); only their shapes come
  from the model, so nothing is compiled."""
  m = kinds.build(cfg, "mone")
  caps = tuple(capacity.capacity_distribution(0.4, cfg.num_experts))
  return randomize(jax.eval_shape(lambda k: m.init(k, X, caps), jax.random.key(seed)), seed)


def dense_part(v):
  return {"params": {k: p for k, p in v["params"].items() if not k.startswith("router") and k != "alpha"}}


def apply(cfg, kind, v, x=X, capacities=None, **kw):
  # Eagerly, not jitted: the op-by-op executables are shared by every test, where each
  # distinct capacity tuple would otherwise compile a whole new forward.
  m = kinds.build(cfg, kind)
  return m.apply(v, x, *(() if capacities is None else (capacities,)), **kw)


@functools.cache
def variables():
  """The shared parameters, made on first use: at import, every pytest worker would pay for them."""
  return init()


# ------------------------------------------------------------------------------
# Config.
# ------------------------------------------------------------------------------
def test_variants():
  ssv2 = config.vivit("B/16x2", num_frames=32, image_size=256, num_classes=174)
  assert (ssv2.width, ssv2.depth, ssv2.temporal_depth, ssv2.num_heads) == (768, 12, 4, 12)
  assert (ssv2.num_tokens, ssv2.num_temporal, ssv2.mlp_dim) == (256, 16, 3072)
  k400 = config.vivit("B/16x2")
  assert (k400.image_size, k400.num_frames, k400.num_classes, k400.num_tokens) == (224, 32, 400, 196)
  xs = config.vivit("XS/4x2")
  assert (xs.width, xs.depth, xs.temporal_depth, xs.num_heads) == (64, 4, 2, 4)
  assert (xs.num_frames, xs.image_size, xs.num_temporal, xs.num_tokens) == (8, 32, 4, 64)
  assert xs.expert_widths == (8, 16, 32, 64) and xs.router_layers == (0,)
  assert config.vivit("XS/4x2", num_routers=2).router_layers == (0, 2)


@pytest.mark.parametrize("kw,match", [
    ({"widht": 3}, r"unknown config key\(s\) \['widht'\]"),
    ({"num_frames": 7}, "num_frames=7 must be divisible by tubelet_size=2"),
    ({"image_size": 30}, "image_size=30 must be divisible by patch_size=4"),
    ({"num_heads": 3}, "width=64 must be divisible by num_heads=3"),
    ({"num_experts": 8}, "divisible by 2\\^\\(num_experts-1\\)"),
    ({"router_layer": 4}, r"router_layer must be in \[0, 3\] \(spatial depth=4\)"),
    ({"num_routers": 5}, "num_routers must be in"),
    ({"router": "oracle"}, "router must be one of"),
    ({"temporal_depth": 0}, "temporal_depth must be a positive integer"),
    ({"head_zeroinit": "no"}, "head_zeroinit must be True or False"),
    ({"tubelet_embed": "fft"}, r"tubelet_embed must be one of \('conv', 'matmul'\), got 'fft'")])
def test_bad_configs_name_the_parameter(kw, match):
  with pytest.raises(ValueError, match=match):
    config.vivit("XS/4x2", **kw)


def test_the_tubelet_matmul_initialises_and_computes_as_the_convolution():
  """tubelet_embed="matmul" is nn.Conv's tubelet embedding as one matmul: the same parameters, drawn
  alike from the same key (so a checkpoint of either loads in the other), and the same outputs; only
  the order of the sums differs."""
  mm = dataclasses.replace(CFG, tubelet_embed="matmul")
  init_with = lambda cfg: kinds.build(cfg, "mone").init(jax.random.key(1), X, CAPS)
  ref, got = init_with(CFG), init_with(mm)
  assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(ref)
  for r, g in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got)):
    np.testing.assert_array_equal(g, r)
  v = variables()
  for kind, kw in (("vit", {}), ("mone", {"capacities": CAPS}), ("matvit", {"width_index": 1})):
    vk = v if kind == "mone" else dense_part(v)
    want, got = apply(CFG, kind, vk, **kw)[0], apply(mm, kind, vk, **kw)[0]
    assert np.abs(np.asarray(want)).max() > 0.1
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("kind,e_c", [  # make test-fast keeps MoNE's: the same embedding under routing
    pytest.param("vit", None, marks=pytest.mark.slow), pytest.param("matvit", None, marks=pytest.mark.slow), ("mone", 0.3)])
def test_the_tubelet_matmuls_gradients_are_the_convolutions(kind, e_c):
  """Every parameter's gradient, to float32 rounding: atol 1e-4 because the spatial CLS token's gradient
  sums to entries of 10-30 here, where a reordered sum moves an entry near 0 by about 3e-5."""
  assert_parameter_gradients_agree(smoke_kind("video", kind, e_c),
                                   smoke_kind("video", kind, e_c, **{"model.tubelet_embed": "matmul"}), atol=1e-4)


def test_the_tubelet_convolution_leaves_every_config_hash_as_it_was():
  cfg = profiles.video_config("small", "temporal", kind="vit", seed=5)
  mm = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, tubelet_embed="matmul"))
  assert "tubelet_embed" not in results.jsonable(cfg, for_hash=True)["model"]
  assert results.config_hash(mm) != results.config_hash(cfg)


@pytest.mark.parametrize("variant", ["B/16", "H/16x2", "B/16x", "B/x2"])
def test_bad_variant(variant):
  with pytest.raises(ValueError, match="variant"):
    config.vivit(variant)


# ------------------------------------------------------------------------------
# Model.
# ------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["tiny/8x2", "XS/4x2"])
def test_parameter_count(variant):
  """Tubelet conv + spatial pos + spatial CLS, spatial blocks, router + alpha, spatial
  norm, temporal CLS + pos, temporal blocks, head; nested experts add no parameters."""
  cfg = config.vivit(variant)
  D, M, E, n, nt = cfg.width, cfg.mlp_dim, cfg.num_experts, cfg.num_tokens, cfg.num_temporal
  block = 4 * D + 3 * D * D + 3 * D + D * D + D + 2 * D * M + M + D
  want = (cfg.tubelet_size * cfg.patch_size ** 2 * cfg.channels * D + D + n * D + D
          + cfg.depth * block + D * E + E + 1 + 2 * D + D + (nt + 1) * D
          + cfg.temporal_depth * block + 2 * D + D * cfg.num_classes + cfg.num_classes)
  shapes = jax.eval_shape(lambda k: kinds.build(cfg, "mone").init(
      k, jnp.zeros((1, 8, 32, 32, 3)), CAPS), jax.random.key(0))
  assert sum(int(np.prod(l.shape)) for l in jax.tree_util.tree_leaves(shapes)) == want
  assert {"tiny/8x2": 51_759, "XS/4x2": 311_823}[variant] == want


@pytest.mark.parametrize("kind,kw", [("vit", {}), ("matvit", {"width_index": 1}),
                                     ("mone", {"capacities": CAPS})])
def test_shapes(kind, kw):
  v = variables() if kind == "mone" else dense_part(variables())
  logits, aux = apply(CFG, kind, v, **kw)
  assert logits.shape == (2, CFG.num_classes) and np.all(np.isfinite(logits))
  if kind == "mone":
    assert aux["router_probs"].shape == (2, 4, 16, 4) and aux["assignment"].shape == (2, 4, 16)
  else:
    assert aux == {}


def test_routing_is_per_temporal_index():
  """Every temporal index gets exactly the static per-expert counts, and its assignment
  depends only on its own tubelets."""
  _, aux = apply(CFG, "mone", variables(), capacities=CAPS)
  np.testing.assert_allclose(np.asarray(aux["router_probs"]).sum(-1), 1.0, rtol=1e-6)
  want = routing.expert_counts(CAPS, CFG.num_tokens)
  for frame in np.asarray(aux["assignment"]).reshape(-1, CFG.num_tokens):
    np.testing.assert_array_equal(np.bincount(frame, minlength=4), want)
  x2 = X.at[:, 2:4].set(jax.random.normal(jax.random.key(9), X[:, 2:4].shape))  # index 1 only
  _, aux2 = apply(CFG, "mone", variables(), x2, capacities=CAPS)
  a, a2 = np.asarray(aux["assignment"]), np.asarray(aux2["assignment"])
  np.testing.assert_array_equal(np.delete(a, 1, axis=1), np.delete(a2, 1, axis=1))
  assert not np.array_equal(a[:, 1], a2[:, 1])


def test_full_capacity_equals_dense_vivit():
  v = set_alpha(variables(), 0.0)
  got, aux = apply(CFG, "mone", v, capacities=(0.0, 0.0, 0.0, 1.0))
  want, _ = apply(CFG, "vit", dense_part(v))
  assert np.abs(np.asarray(want)).max() > 0.1  # a real, non-trivial output
  np.testing.assert_allclose(got, want, **TOL)
  assert np.all(np.asarray(aux["assignment"]) == 3)


@pytest.mark.parametrize("j", range(4))
def test_all_tokens_on_expert_j_equals_matvivit_submodel(j):
  v = set_alpha(variables(), 0.0)
  got, _ = apply(CFG, "mone", v, capacities=tuple(np.eye(4)[j]))
  want, _ = apply(CFG, "matvit", dense_part(v), width_index=j)
  np.testing.assert_allclose(got, want, **TOL)
  full, _ = apply(CFG, "vit", dense_part(v))
  assert (np.abs(np.asarray(want) - np.asarray(full)).max() > 1e-3) == (j < 3)  # j = 3 is the full model


def masked_reference(v, cfg, video, caps, drop_smallest=False):
  """The naive MoNE-ViViT: full-width compute with per-token masks (mone.models.masked's block),
  original token order, the spatial CLS token at index 0 with width D."""
  p = v["params"]
  x = vivit.TubeletEmbed(cfg).apply({"params": p["embed"]}, video)  # [B T', N, D]
  bt, n, D = x.shape
  x = jnp.concatenate([jnp.broadcast_to(p["spatial_cls"], (bt, 1, D)), x], axis=1)  # [B T', 1 + N, D]
  widths = jnp.array(cfg.expert_widths).at[0].set(0 if drop_smallest else cfg.expert_widths[0])
  d_tok, mult, valid = jnp.full((bt, n + 1), D), jnp.ones((bt, n + 1)), jnp.ones((bt, n + 1), bool)
  for l in range(cfg.depth):
    if l in cfg.router_layers:
      rp = p[f"router_{cfg.router_layers.index(l)}"]
      probs = jax.nn.softmax(x[:, 1:] @ rp["kernel"] + rp["bias"], axis=-1)
      assignment = routing.expert_preferred_routing(probs, caps)
      d_tok = d_tok.at[:, 1:].set(widths[assignment])
      valid = d_tok > 0
      r = jnp.take_along_axis(probs, assignment[..., None], -1)[..., 0]
      mult = mult.at[:, 1:].set(p["alpha"] * r + 1.0)
    x = masked._masked_block(p[f"block_{l}"], x, d_tok, mult, cfg.num_heads, valid)
  frames = nn.LayerNorm(epsilon=1e-6).apply({"params": p["spatial_norm"]}, x[:, 0])
  h = jnp.concatenate([jnp.broadcast_to(p["temporal_cls"], (video.shape[0], 1, D)),
                       frames.reshape(video.shape[0], -1, D)], axis=1) + p["temporal_pos_embedding"]
  full = jnp.full(h.shape[:2], D)
  for l in range(cfg.temporal_depth):
    h = masked._masked_block(p[f"temporal_block_{l}"], h, full, jnp.ones(h.shape[:2]),
                             cfg.num_heads, full > 0)
  return vivit.ClsHead(cfg.num_classes).apply({"params": p["head"]}, h)


@pytest.mark.parametrize("overrides,e_c,drop", [
    ({}, 0.4, False), ({"depth": 3, "router_layer": 1, "num_routers": 2}, 0.3, False),
    ({}, 0.4, True)])
def test_grouped_mone_equals_masked_reference(overrides, e_c, drop):
  """The fast grouped model equals the naive masked one (alpha != 0)."""
  cfg = config.vivit("tiny/8x2", **overrides)
  v = set_alpha(init(cfg, seed=1), 0.7)
  caps = tuple(capacity.mod_greedy(e_c) if drop else capacity.capacity_distribution(e_c))
  got, aux = apply(cfg, "mone", v, capacities=caps, drop_smallest=drop)
  want = masked_reference(v, cfg, X, caps, drop)
  np.testing.assert_allclose(got, want, **TOL)


def test_random_router_needs_and_uses_rng():
  cfg = config.vivit("tiny/8x2", router="random")
  m = kinds.build(cfg, "mone")
  f = lambda key: m.apply(variables(), X, CAPS, rngs={"routing": key})[1]["assignment"]
  a1, a2 = np.asarray(f(jax.random.key(1))), np.asarray(f(jax.random.key(2)))
  assert not np.array_equal(a1, a2)
  np.testing.assert_array_equal(a1, f(jax.random.key(1)))
  for frame in a1.reshape(-1, cfg.num_tokens):
    np.testing.assert_array_equal(np.bincount(frame, minlength=4), routing.expert_counts(CAPS, 16))


def test_bad_inputs_are_rejected():
  m = kinds.build(CFG, "mone")
  with pytest.raises(ValueError, match=r"video must have shape \[batch, 8, 32, 32, 3\]"):
    m.apply(variables(), jnp.ones((2, 6, 32, 32, 3)), CAPS)
  with pytest.raises(ValueError, match="video must have shape"):
    m.apply(variables(), jnp.ones((8, 32, 32, 3)), CAPS)
  with pytest.raises(ValueError, match="needs capacities"):
    m.apply(variables(), X)
  with pytest.raises(ValueError, match="sum to 1"):
    m.apply(variables(), X, (0.5, 0.5, 0.5, 0.5))
  with pytest.raises(ValueError, match="width_index must be in"):
    kinds.build(CFG, "matvit").apply(dense_part(variables()), X, width_index=4)
  with pytest.raises(ValueError, match="capacities are for routed"):
    kinds.build(CFG, "vit").apply(dense_part(variables()), X, CAPS)
  with pytest.raises(ValueError, match="kind must be one of"):
    kinds.build(CFG, "mod")
  with pytest.raises(ValueError, match="config must be a ViViTConfig"):
    kinds.KINDS["vit", True].build(config.vit("tiny/8"))
  with pytest.raises(ValueError, match=r"clips must have shape \[batch, num_clips >= 1"):
    vivit.multiclip_logits(lambda v: v, X)


# ------------------------------------------------------------------------------
# Multi-clip ("8x1") evaluation.
# ------------------------------------------------------------------------------
def test_multiclip_averages_probabilities():
  clips = jax.random.normal(jax.random.key(3), (2, 3, 4, 5, 5, 6))  # [B, K, T, H, W, C]
  fn = lambda v: 4.0 * v.mean(axis=(1, 2, 3))  # [B, C] logits
  got = vivit.multiclip_logits(fn, clips)
  probs = np.stack([np.asarray(jax.nn.softmax(fn(clips[:, k]))) for k in range(3)], 1)
  np.testing.assert_allclose(jax.nn.softmax(got), probs.mean(1), rtol=1e-5)
  np.testing.assert_allclose(got, np.log(probs.mean(1)), rtol=1e-5, atol=1e-6)


def test_multiclip_with_the_model():
  m = kinds.build(CFG, "mone")
  params = variables()  # made here, not first inside multiclip_logits' scan, where it would hold tracers
  fn = lambda v: m.apply(params, v, CAPS)[0]
  clips = jnp.stack([X, X[:, ::-1]], axis=1)  # K = 2 clips per example
  got = vivit.multiclip_logits(fn, clips)
  p = (jax.nn.softmax(fn(X)) + jax.nn.softmax(fn(X[:, ::-1]))) / 2
  np.testing.assert_allclose(jax.nn.softmax(got), p, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------
# FLOPs.
# ------------------------------------------------------------------------------
def _hlo_macs(cfg, kind, capacities=None, **kw):
  """Dot/conv MACs of the jitted forward, from shapes alone (nothing is run)."""
  m = kinds.build(cfg, kind)
  x = jax.ShapeDtypeStruct((1, cfg.num_frames, cfg.image_size, cfg.image_size, cfg.channels), jnp.float32)
  args = () if capacities is None else (capacities,)
  v = jax.eval_shape(lambda x: m.init(jax.random.key(0), x, *args, **kw), x)
  lowered = jax.jit(lambda v, x: m.apply(v, x, *args, **kw)[0]).lower(v, x)
  return hlo_matmul_macs(lowered.as_text(dialect="hlo"))


@pytest.mark.parametrize("overrides,kind,kw,flop_kw", [
    ({}, "vit", {}, {}),
    ({}, "matvit", {"width_index": 1}, {"e_c": 0.25}),
    ({}, "mone", {"capacities": tuple(capacity.capacity_distribution(0.3))}, {}),
    ({"router_layer": 1}, "mone", {"capacities": tuple(capacity.capacity_distribution(0.7))}, {}),
    ({"num_routers": 2, "num_classes": 7}, "mone", {"capacities": CAPS}, {}),
    ({}, "mone", {"capacities": tuple(capacity.mod_greedy(0.4)), "drop_smallest": True}, {})])
def test_macs_match_xla(overrides, kind, kw, flop_kw):
  """Every dot and (3-D) convolution in XLA's HLO is counted, exactly, except the work JAX
  drops as dead code: only the spatial CLS token leaves the spatial transformer, so the
  patch tokens' attention-output projection and MLP in its last block are never read.
  `flops` counts full blocks, the convention of the published ViViT/MoNE numbers."""
  cfg = config.vivit("tiny/8x2", **overrides)
  want = flops.macs(cfg, kind, **flop_kw, **{k: v for k, v in kw.items() if k != "width_index"})
  D, M, n = cfg.width, cfg.mlp_dim, cfg.num_tokens
  if kind == "mone":
    counts = routing.expert_counts(kw["capacities"], n)
    live = [(c, w) for g, (c, w) in enumerate(zip(counts, cfg.expert_widths))
            if not (kw.get("drop_smallest") and g == 0)]
  else:
    live = [(n, D if kind == "vit" else cfg.expert_widths[kw["width_index"]])]
  dead = cfg.num_temporal * sum(c * (D * w + 2 * w * M) for c, w in live)
  assert _hlo_macs(cfg, kind, **kw) == want - dead


def test_paper_gflops():
  ssv2 = config.vivit("B/16x2", num_frames=32, image_size=256, num_classes=174)
  dense = flops.gflops(ssv2)
  assert dense == pytest.approx(376.3, rel=0.01)  # Sec. 5
  mone = flops.gflops(ssv2, "mone", 0.4)  # Table 1's e_c
  assert mone == pytest.approx(162.8, rel=0.01)
  assert flops.gflops(ssv2, "mone", 1.0) == pytest.approx(dense, rel=1e-4)  # + the router only
  assert flops.gflops(ssv2, "matvit", 1.0) == dense
  assert flops.gflops(ssv2, "matvit", 0.125) < flops.gflops(ssv2, "matvit", 0.25) < dense


def test_bad_flop_requests():
  with pytest.raises(ValueError, match="kind must be one of"):
    flops.gflops(CFG, "mod")
  with pytest.raises(ValueError, match="nested width"):
    flops.gflops(CFG, "matvit", 0.3)
  with pytest.raises(ValueError, match="exactly one of e_c or capacities"):
    flops.gflops(CFG, "mone")


@pytest.mark.parametrize("video", [False, True])
def test_zero_head_gives_the_backbone_no_gradient_at_init(video):
  """Why head_zeroinit=False exists: with the zero classifier every gradient below it is
  exactly zero at step 0 (the plateau of notebook 04); lecun_normal gives them one. Only the
  head kernel's initialisation differs between the two."""
  cfg, x = (CFG, X[:, :, :16, :16]) if video else (config.vit("tiny/8", depth=2), X[:, 0, :16, :16])
  cfg = dataclasses.replace(cfg, image_size=16)
  labels = jnp.arange(2)
  grads, params = {}, {}
  for zero in (True, False):
    c = dataclasses.replace(cfg, head_zeroinit=zero)
    m = kinds.build(c, "vit")
    p = m.init(jax.random.key(0), x)["params"]
    loss = lambda p: optax.softmax_cross_entropy_with_integer_labels(m.apply({"params": p}, x)[0], labels).mean()
    params[zero], grads[zero] = p, jax.jit(jax.grad(loss))(p)
  kernel = params[False]["head"]["dense"]["kernel"]
  assert not np.any(params[True]["head"]["dense"]["kernel"])
  assert np.std(kernel) == pytest.approx(cfg.width ** -0.5, rel=0.3)  # lecun_normal
  rest = lambda p: {k: v for k, v in p.items() if k != "head"}
  jax.tree.map(np.testing.assert_array_equal, rest(params[True]), rest(params[False]))
  block = lambda g: jax.tree_util.tree_leaves(g["block_0"])
  assert all(not np.any(g) for g in block(grads[True]))
  assert max(np.abs(g).max() for g in block(grads[False])) > 1e-4
