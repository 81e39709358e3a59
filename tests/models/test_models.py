import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import randomize, set_alpha

from mone import capacity
from mone.models import config, kinds, layers, masked

CFG = config.vit("tiny/8", depth=3)
X = jax.random.normal(jax.random.key(0), (2, 32, 32, 3))
TOL = dict(rtol=2e-5, atol=2e-5)


def init(cfg=CFG, kind="mone", seed=0):
  m = kinds.build(cfg, kind)
  args = (tuple(capacity.uniform(cfg.num_experts)),) if kind == "mone" else ()
  return m, randomize(m.init(jax.random.key(seed), X, *args), seed)


def dense_part(v):
  return {"params": {k: p for k, p in v["params"].items() if not k.startswith("router") and k != "alpha"}}


def test_full_capacity_equals_dense_vit():
  mone, v = init()
  v = set_alpha(v, 0.0)
  got, aux = mone.apply(v, X, (0.0, 0.0, 0.0, 1.0))
  want, _ = kinds.build(CFG, "vit").apply(dense_part(v), X)
  assert np.abs(np.asarray(want)).max() > 0.1  # a real, non-trivial output
  np.testing.assert_allclose(got, want, **TOL)
  assert np.all(np.asarray(aux["assignment"]) == 3)


@pytest.mark.parametrize("j", range(4))
def test_all_tokens_on_expert_j_equals_matvit_submodel(j):
  mone, v = init()
  v = set_alpha(v, 0.0)
  got, _ = mone.apply(v, X, tuple(np.eye(4)[j]))
  want, _ = kinds.build(CFG, "matvit").apply(dense_part(v), X, width_index=j)
  np.testing.assert_allclose(got, want, **TOL)


def test_submodels_differ():
  model, v = init(kind="vit")
  outs = [np.asarray(model.apply(v, X, width_index=j)[0]) for j in range(4)]
  assert all(np.abs(outs[i] - outs[i + 1]).max() > 1e-3 for i in range(3))


@pytest.mark.parametrize("overrides,e_c,drop", [
    ({}, 0.3, False), ({}, 0.6, False), ({"router_layer": 1}, 0.4, False),
    ({"num_routers": 3}, 0.4, False), ({"router_layer": 1, "num_routers": 2}, 0.25, False),
    ({}, 0.4, True), ({"num_experts": 3}, 0.5, False), ({"num_experts": 1}, 1.0, False)])
def test_grouped_mone_equals_masked_reference(overrides, e_c, drop):
  """The fast grouped model equals the naive masked one token for token (alpha != 0)."""
  cfg = config.vit("tiny/8", depth=3, **overrides)
  mone, v = init(cfg)
  v = set_alpha(v, 0.7)
  caps = tuple(capacity.mod_greedy(e_c, cfg.num_experts) if drop else
               capacity.capacity_distribution(e_c, cfg.num_experts))
  got, aux = mone.apply(v, X, caps, drop_smallest=drop)
  want, aux_ref = masked.masked_apply(v, cfg, X, caps, drop_smallest=drop)
  np.testing.assert_array_equal(aux["assignment"], aux_ref["assignment"])
  np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("e_c", [0.3, 0.6])
def test_grouped_mone_gradients_equal_masked_reference(e_c):
  """Backward too: every parameter's gradient, router and alpha included, matches the naive
  masked model's (the grouped model's layout changes and gradient fences are identities)."""
  mone, v = init()
  v = set_alpha(v, 0.7)
  caps = tuple(capacity.capacity_distribution(e_c, CFG.num_experts))
  labels = jnp.arange(X.shape[0]) % CFG.num_classes

  def loss(apply):
    return lambda p: optax.softmax_cross_entropy_with_integer_labels(apply(p), labels).mean()

  # Jitted, as training takes them: one traced program, not the backward pass op by op (half the time).
  got = jax.jit(jax.grad(loss(lambda p: mone.apply({"params": p}, X, caps)[0])))(v["params"])
  want = jax.jit(jax.grad(loss(lambda p: masked.masked_apply({"params": p}, CFG, X, caps)[0])))(v["params"])
  assert float(jnp.abs(got["block_0"]["qkv_kernel"]).max()) > 1e-3  # a real, non-trivial gradient
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), got, want)


def test_backward_moves_the_qkv_cotangent_out_of_heads_layout_once():
  """The grouped block's backward transposes the heads-major qkv cotangent [3, B, H, N, c]
  back to token order once, over all N tokens, as the dense block does; never per group,
  where XLA:CPU repeats each group's strided copy in every consumer (12 copies for 4 groups
  without the fence in Block; see its comment)."""
  import re
  cfg = config.vit("tiny/8")
  blk = layers.Block(cfg.width, cfg.num_heads, cfg.mlp_dim)
  counts, widths = (cfg.num_tokens - 12, 4, 4, 4), cfg.expert_widths
  x = jax.random.normal(jax.random.key(0), (2, cfg.num_tokens, cfg.width))
  p = blk.init(jax.random.key(1), [x], (cfg.width,))["params"]

  def loss(p, x):
    hs = [h[..., :d] for h, d in zip(layers.split_groups(x, counts), widths)]
    return sum(jnp.sum(o ** 2) for o in blk.apply({"params": p}, hs, widths))

  hlo = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(p, x).compile().as_text()
  c = cfg.width // cfg.num_heads
  to_tokens = re.findall(rf"= f32\[2,(\d+),3,{cfg.num_heads},{c}\]\{{[\d,]*\}} transpose\(", hlo)
  assert to_tokens and all(int(n) == cfg.num_tokens for n in to_tokens), to_tokens


def test_assignment_has_exact_counts_and_aux():
  mone, v = init()
  caps = tuple(capacity.capacity_distribution(0.4))
  _, aux = mone.apply(v, X, caps)
  assert aux["router_probs"].shape == (2, CFG.num_tokens, 4)
  np.testing.assert_allclose(np.asarray(aux["router_probs"]).sum(-1), 1.0, rtol=1e-6)
  from mone.models.routing import expert_counts
  for a in np.asarray(aux["assignment"]):
    np.testing.assert_array_equal(np.bincount(a, minlength=4), expert_counts(caps, CFG.num_tokens))


def test_router_gets_gradients_once_alpha_moves():
  """Eq. 1 with alpha = 0: the block output is scaled by exactly 1, so dL/dW_r = 0 at the
  very first step; dL/dalpha = r * B_FFN is not (here it asks alpha to grow, which the bound
  [0, 1) lets through at 0: `nested.bounded_alpha`), and after one update W_r learns."""
  mone = kinds.build(CFG, "mone")
  v = mone.init(jax.random.key(0), X, (0.25,) * 4)
  v = {"params": {**randomize(v)["params"], "alpha": jnp.float32(0.0)}}
  caps = tuple(capacity.capacity_distribution(0.4))
  labels = jnp.array([1, 2])

  def loss(p):
    logits, _ = mone.apply({"params": p}, X, caps)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

  grad = jax.jit(jax.grad(loss))  # traced once, taken twice
  g = grad(v["params"])
  assert float(jnp.abs(g["alpha"])) > 0
  assert float(jnp.abs(g["router_0"]["kernel"]).max()) == 0.0
  p = jax.tree_util.tree_map(lambda w, d: w - 0.1 * d, v["params"], g)
  g2 = grad(p)
  assert float(jnp.abs(g2["router_0"]["kernel"]).max()) > 1e-6


def test_random_router_needs_and_uses_rng():
  cfg = config.vit("tiny/8", depth=2, router="random")
  mone, v = init(cfg)
  caps = tuple(capacity.capacity_distribution(0.4))
  _, a1 = mone.apply(v, X, caps, rngs={"routing": jax.random.key(1)})
  _, a2 = mone.apply(v, X, caps, rngs={"routing": jax.random.key(2)})
  _, a1b = mone.apply(v, X, caps, rngs={"routing": jax.random.key(1)})
  np.testing.assert_array_equal(a1["assignment"], a1b["assignment"])
  assert not np.array_equal(a1["assignment"], a2["assignment"])


def test_mod_processes_top_k_every_other_layer():
  cfg = config.vit("tiny/8", depth=4, mod_capacity=0.25)
  mod, v = init(cfg, "mod")
  logits, aux = mod.apply(v, X)
  assert logits.shape == (2, 10)
  assert len(aux["selected"]) == 2 and aux["selected"][0].shape == (2, 4)
  g = jax.grad(lambda p: mod.apply({"params": p}, X)[0].sum())(v["params"])
  assert float(jnp.abs(g["mod_router_1"]["kernel"]).max()) > 0


def test_bad_inputs_are_rejected():
  mone, v = init()
  with pytest.raises(ValueError, match="images must have shape"):
    mone.apply(v, jnp.ones((2, 28, 28, 3)), (0.25,) * 4)
  with pytest.raises(ValueError, match="needs capacities"):
    mone.apply(v, X)
  with pytest.raises(ValueError, match="sum to 1"):
    mone.apply(v, X, (0.5, 0.5, 0.5, 0.5))
  with pytest.raises(ValueError, match="kind"):
    kinds.build(CFG, "moe")


@pytest.mark.parametrize("kind", [pytest.param("vit", marks=pytest.mark.slow), "mone"])  # make test-fast: MoNE's
def test_backward_code_grows_linearly_with_depth(kind, monkeypatch):
  """Each block's backward must read the stored residual-stream gradient, not fuse in and
  recompute the elementwise chain of every block above it, which XLA:CPU otherwise does
  (quadratic in depth; see layers.materialize_grad). Measured on the compiled HLO: the
  instructions inside fusions grow ~1.9x from 3 to 6 blocks (2.9x without the fence)."""
  import re
  caps = (tuple(capacity.capacity_distribution(0.4)),) if kind == "mone" else ()

  def compiled_grad(depth):
    m, v = init(config.vit("tiny/8", depth=depth), kind)
    grad = jax.jit(jax.grad(lambda p: m.apply({"params": p}, X, *caps)[0].sum()))
    return grad.lower(v["params"]).compile(), v["params"]

  def fused_instructions(grad):
    bodies = [b.split("\n}\n")[0] for b in re.split(r"\n(?=%?fused_computation)", grad.as_text())[1:]]
    return sum(len(re.findall(r"\n\s+%?\S+ = ", b)) for b in bodies)

  (g3, p3), (g6, _) = compiled_grad(3), compiled_grad(6)
  n3, n6 = fused_instructions(g3), fused_instructions(g6)
  assert n3 > 1000 and n6 / n3 < 2.2, (n3, n6)
  # The fence is the identity: the gradient is the one taken without it.
  monkeypatch.setattr(layers, "materialize_grad", lambda tree: tree)
  g, p = compiled_grad(3)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), g3(p3), g(p))
