"""big_vision ViT checkpoints into mone: a checkpoint this test writes itself, in big_vision's
names and layout, gives the same logits through mone's ViT; MoNE at full capacity starts as
that ViT; position embeddings follow a new resolution; unsupported layouts are refused."""
import flax.linen as nn
import flax.traverse_util
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mone import capacity
from mone.models import config, kinds, pretrained

CFG = config.vit("tiny/8", num_classes=10)  # 32 px, 8 px patches: 16 tokens
IMAGES = jax.random.normal(jax.random.key(1), (2, CFG.image_size, CFG.image_size, 3))


class MlpBlock(nn.Module):
  exact_gelu: bool

  @nn.compact
  def __call__(self, y):
    init = nn.initializers.normal(0.5)  # non-trivial biases: a mix-up would show
    y = nn.gelu(nn.Dense(CFG.mlp_dim, bias_init=init)(y), approximate=not self.exact_gelu)
    return nn.Dense(CFG.width, bias_init=init)(y)


class Encoder1DBlock(nn.Module):
  exact_gelu: bool

  @nn.compact
  def __call__(self, x):
    y = nn.LayerNorm()(x)
    x = x + nn.MultiHeadDotProductAttention(num_heads=CFG.num_heads)(y, y)
    return x + MlpBlock(self.exact_gelu, name="MlpBlock_0")(nn.LayerNorm()(x))


class Encoder(nn.Module):
  exact_gelu: bool

  @nn.compact
  def __call__(self, x):
    for l in range(CFG.depth):
      x = Encoder1DBlock(self.exact_gelu, name=f"encoderblock_{l}")(x)
    return nn.LayerNorm(name="encoder_norm")(x)


class BigVisionViT(nn.Module):
  """big_vision's ViT (pool_type='gap', learned position embeddings), with its module names."""
  exact_gelu: bool = True  # big_vision uses flax's default, the tanh approximation

  @nn.compact
  def __call__(self, image):
    D, p = CFG.width, CFG.patch_size
    x = nn.Conv(D, (p, p), strides=(p, p), padding="VALID", name="embedding")(image)
    n, h, w, c = x.shape
    x = x.reshape(n, h * w, c)
    x = x + self.param("pos_embedding", nn.initializers.normal(stddev=D ** -0.5), (1, h * w, c))
    x = Encoder(self.exact_gelu, name="Transformer")(x)
    return nn.Dense(CFG.num_classes, kernel_init=nn.initializers.normal(0.1), name="head")(x.mean(axis=1))


def _checkpoint(tmp_path, exact_gelu=True, scanned=False):
  bv = BigVisionViT(exact_gelu)
  params = bv.init(jax.random.key(7), IMAGES)["params"]
  flat = {"/".join(k): np.asarray(v) for k, v in flax.traverse_util.flatten_dict(params).items()}
  if scanned:  # big_vision's scan layout: one array per name, layers stacked on axis 0
    blocks = [k for k in flat if k.startswith("Transformer/encoderblock_0/")]
    for k in blocks:
      rest = k.split("/", 2)[2]
      flat[f"Transformer/encoderblock/{rest}"] = np.stack([flat.pop(f"Transformer/encoderblock_{l}/{rest}")
                                                           for l in range(CFG.depth)])
  path = tmp_path / "vit.npz"
  np.savez(path, **flat)
  return path, bv.apply({"params": params}, IMAGES)


@pytest.mark.parametrize("scanned", [False, True], ids=["per-layer", "scanned"])
def test_converted_vit_gives_the_checkpoints_logits(tmp_path, scanned):
  path, want = _checkpoint(tmp_path, scanned=scanned)
  model = kinds.build(CFG, "vit")
  params = pretrained.load_big_vision(path, model.init(jax.random.key(0), IMAGES)["params"])
  got, _ = model.apply({"params": params}, IMAGES)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_big_visions_tanh_gelu_is_the_only_difference(tmp_path):
  path, want = _checkpoint(tmp_path, exact_gelu=False)
  model = kinds.build(CFG, "vit")
  got, _ = model.apply({"params": pretrained.load_big_vision(path, model.init(jax.random.key(0), IMAGES)["params"])}, IMAGES)
  err = float(jnp.max(jnp.abs(got - want)) / jnp.max(jnp.abs(want)))
  assert 0 < err < 1e-2, err


def test_mone_starts_from_the_checkpoint_and_equals_it_at_full_capacity(tmp_path):
  path, want = _checkpoint(tmp_path)
  mone = kinds.build(CFG, "mone")
  full = (0.0, 0.0, 0.0, 1.0)
  init = mone.init(jax.random.key(0), IMAGES, full)["params"]
  params = pretrained.load_big_vision(path, init)
  np.testing.assert_array_equal(params["router_0"]["kernel"], init["router_0"]["kernel"])  # from init
  assert float(params["alpha"]) == 0.0
  got, _ = mone.apply({"params": params}, IMAGES, full)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)
  low, aux = mone.apply({"params": params}, IMAGES, capacity.budget("mone", 0.3).capacities)
  assert low.shape == want.shape and aux["assignment"].shape == (2, CFG.num_tokens)


def test_another_resolution_resamples_the_position_embeddings_and_other_classes_keep_the_head(tmp_path):
  path, _ = _checkpoint(tmp_path)
  big = config.vit("tiny/8", num_classes=5, image_size=64)  # 8 x 8 tokens instead of 4 x 4
  model = kinds.build(big, "vit")
  x = jnp.zeros((1, 64, 64, 3))
  init = model.init(jax.random.key(0), x)["params"]
  params = pretrained.load_big_vision(path, init)
  assert params["embed"]["pos_embedding"].shape == (1, 64, CFG.width)
  np.testing.assert_array_equal(params["head"]["dense"]["kernel"], init["head"]["dense"]["kernel"])
  assert np.isfinite(np.asarray(model.apply({"params": params}, x)[0])).all()
  # A constant embedding stays constant under bilinear resampling; the corners are kept.
  pe = np.arange(16 * 3, dtype=np.float32).reshape(1, 16, 3)
  out = pretrained.resample_posemb(pe, 64).reshape(8, 8, 3)
  np.testing.assert_allclose(out[0, 0], pe[0, 0])
  np.testing.assert_allclose(out[-1, -1], pe[0, -1])
  np.testing.assert_array_equal(pretrained.resample_posemb(np.ones((1, 4, 2)), 9), np.ones((1, 9, 2)))


def test_unsupported_checkpoints_are_refused_by_name(tmp_path):
  path, _ = _checkpoint(tmp_path)
  arrays = pretrained.read_npz(path)
  init = kinds.build(CFG, "vit").init(jax.random.key(0), IMAGES)["params"]
  with pytest.raises(ValueError, match="class token"):
    pretrained.load_big_vision({**arrays, "cls": np.zeros((1, 1, CFG.width))}, init)
  with pytest.raises(ValueError, match="missing"):
    pretrained.load_big_vision({k: v for k, v in arrays.items() if k != "pos_embedding"}, init)
  deeper = kinds.build(config.vit("tiny/8", num_classes=10, depth=3), "vit").init(jax.random.key(0), IMAGES)["params"]
  with pytest.raises(ValueError, match="blocks"):
    pretrained.load_big_vision(arrays, deeper)
  wider = kinds.build(config.vit("tiny/8", num_classes=10, width=64, num_heads=2), "vit")
  with pytest.raises(ValueError, match="does not match"):
    pretrained.load_big_vision(arrays, wider.init(jax.random.key(0), IMAGES)["params"])
