"""Moving-digit clips (both tasks) and the TFDS video source on a tiny dataset built here."""
import functools
import io
import json
import re
import shutil

import numpy as np
import pytest

from mone.data import mnist
from mone.data import moving_digits as md
from mone.data import video as video_data

TASKS = tuple(md.NUM_CLASSES)


@pytest.fixture
def fresh_cache():
  md.make_moving_digits.cache_clear()
  yield
  md.make_moving_digits.cache_clear()


# ------------------------------------------------------------------------------
# Moving digits.
# ------------------------------------------------------------------------------
@pytest.mark.parametrize("task", TASKS)
def test_shapes_dtypes_and_balanced_labels(task):
  d = md.make_moving_digits("train", 80, task, num_frames=8, image_size=32)
  assert d["video"].shape == (80, 8, 32, 32, 3) and d["video"].dtype == np.uint8
  assert d["mask"].shape == (80, 8, 32, 32) and d["mask"].dtype == bool
  assert d["label"].shape == (80,) and d["label"].dtype == np.int32
  counts = np.bincount(d["label"], minlength=md.NUM_CLASSES[task])
  assert len(counts) == md.NUM_CLASSES[task] and counts.min() == counts.max()
  assert len(md.CLASS_NAMES[task]) == md.NUM_CLASSES[task]
  # The relevant object is visible in every frame, and drawn wherever its mask is.
  assert d["mask"].any((2, 3)).all()
  assert (d["video"].max(-1)[d["mask"]] > 0).all()
  assert not d["video"].flags.writeable  # cached arrays are shared: keep them intact


@pytest.mark.parametrize("task", TASKS)
def test_deterministic_per_seed(task, fresh_cache):
  a = md.make_moving_digits("test", 40, task, seed=3)
  md.make_moving_digits.cache_clear()  # regenerate rather than hit the cache
  b = md.make_moving_digits("test", 40, task, seed=3)
  c = md.make_moving_digits("test", 40, task, seed=4)
  for k in a:
    np.testing.assert_array_equal(a[k], b[k])
  assert not np.array_equal(a["video"], c["video"])
  # The train split is not the test split under another name.
  assert not np.array_equal(md.make_moving_digits("train", 40, task, seed=3)["video"], a["video"])


@pytest.mark.parametrize("task", TASKS)
def test_each_split_renders_only_its_own_pool(task, monkeypatch, fresh_cache):
  """Blanking one pool's digits must blank that split's clips entirely (digits and clutter)."""
  real = mnist.mnist_pool
  for blank, other in [("train", "test"), ("test", "train"), ("val", "train"), ("train", "val")]:
    monkeypatch.setattr(md, "mnist_pool", lambda split, holdout=False, blank=blank: (
        np.zeros_like(real(split, holdout)[0]) if split == blank else real(split, holdout)[0],
        real(split, holdout)[1]))
    md.make_moving_digits.cache_clear()
    assert md.make_moving_digits(blank, 30, task)["video"].max() == 0
    assert md.make_moving_digits(other, 30, task)["video"].max((1, 2, 3, 4)).min() > 0


def test_temporal_clips_name_the_class_of_each_scrolling_digit(monkeypatch, fresh_cache):
  """'digit' [n, 2] is the class of the left and right digit: with ink in class-3 digits only,
  a window's digit is drawn (its mask is set) exactly where 'digit' says 3."""
  real = mnist.mnist_pool
  def only_threes(split, holdout=False):
    x, y = real(split, holdout)
    return np.where((y == 3)[:, None, None], x, 0).astype(x.dtype), y
  monkeypatch.setattr(md, "mnist_pool", only_threes)
  d = md.make_moving_digits("train", 200, "temporal")
  assert d["digit"].shape == (200, 2) and d["digit"].dtype == np.int32
  half = d["mask"].shape[-1] // 2
  drawn = np.stack([d["mask"][..., :half].any((1, 2, 3)), d["mask"][..., half:].any((1, 2, 3))], -1)
  np.testing.assert_array_equal(drawn, d["digit"] == 3)
  assert 0 < drawn.mean() < 0.5
  assert "digit" not in md.make_moving_digits("train", 20, "appearance")  # there the label is the digit


def test_temporal_factors_decode_the_class_names():
  first_right, first_up, second_up = md.temporal_factors(np.arange(8))
  for k, name in enumerate(md.CLASS_NAMES["temporal"]):
    first, rest = name.split(" scrolls ")
    assert (first == "right") == bool(first_right[k])
    assert rest.startswith("up") == bool(first_up[k]) and name.endswith("up") == bool(second_up[k])


@pytest.mark.parametrize("task", TASKS)
def test_validation_clips_use_digits_that_a_held_out_training_set_never_shows(task, monkeypatch, fresh_cache):
  """holdout_val=True asks for the train pool without the validation digits; 'val' asks for
  those digits only; and adding a validation split leaves the test clips as they were."""
  asked, real = [], mnist.mnist_pool
  monkeypatch.setattr(md, "mnist_pool", lambda split, holdout=False: asked.append((split, holdout)) or real(split, holdout))
  test_before = md.make_moving_digits("test", 20, task)["video"]
  md.make_moving_digits("train", 20, task, holdout_val=True)
  md.make_moving_digits("val", 20, task)
  assert asked == [("test", False), ("train", True), ("val", False)]
  md.make_moving_digits.cache_clear()
  np.testing.assert_array_equal(video_data.moving_digits_sources(task, num_train=8, num_test=20,
                                                                 holdout_val=True)[1].get_batch(np.arange(20))["video"],
                                test_before)
  val = video_data.moving_digits_val(task, 12)
  assert len(val) == 12 and val.get_batch(np.arange(12))["video"].max() > 0
  with pytest.raises(ValueError, match="holdout_val=True is for split='train'"):
    md.make_moving_digits("test", 4, task, holdout_val=True)


def test_source_pools_are_disjoint():
  train, test = (mnist.mnist_pool(s)[0].reshape(-1, 28 * 28) for s in ("train", "test"))
  assert not {r.tobytes() for r in train} & {r.tobytes() for r in test}


def test_appearance_mask_is_the_digit_translated_frame_by_frame():
  mask = md.make_moving_digits("test", 60, "appearance")["mask"]
  moved = np.zeros(len(mask), bool)
  for n in range(len(mask)):
    corners = [np.argwhere(m).min(0) for m in mask[n]]  # top-left of the digit's ink
    for t in range(mask.shape[1] - 1):
      shift = corners[t + 1] - corners[t]
      np.testing.assert_array_equal(np.roll(mask[n, t], shift, (0, 1)), mask[n, t + 1])
      moved[n] |= shift.any()
  assert moved.all()


S = int(round(32 * md.DIGIT_SIZE["temporal"]))  # window (digit) size at image_size 32


def _scroll_steps(mask, s=S):
  """[n, T-1, 2]: how many rows the left/right digit scrolls down its s-row window per frame."""
  n, t, h, w = mask.shape
  steps = np.zeros((n, t - 1, 2), np.int64)
  for i, side in np.ndindex(n, 2):
    m = mask[i, :, :, side * w // 2:(side + 1) * w // 2]  # [T, H, W/2]
    ink = np.flatnonzero(m.any((0, 2)))
    for y0 in range(max(ink[-1] - s + 1, 0), min(ink[0], h - s) + 1):  # windows holding all ink
      win = m[:, y0:y0 + s]
      # fits[d, k]: frame k+1 is frame k rolled down by d rows within the window.
      fits = (np.stack([np.roll(win[:-1], d, 1) for d in range(s)]) == win[1:]).all((2, 3))
      if fits.any(0).all():
        steps[i, :, side] = (fits.argmax(0) + s // 2) % s - s // 2
        break
    else:
      raise AssertionError(f"clip {i}: the digit on side {side} does not scroll in a window")
  return steps


def _decode_temporal(mask):
  """Reads the label off the ordered masks: who moves first, then each mover's direction."""
  steps = _scroll_steps(mask)
  assert ((steps != 0).sum(-1) == 1).all()  # exactly one digit moves at every step ...
  mover = (steps[..., 1] != 0).astype(np.int64)  # [n, T-1]: 1 where the right digit moves
  assert (np.diff(mover, axis=1) != 0).sum(1).max() == 1  # ... first one side, then the other
  rows = np.arange(len(mask))
  up1, up2 = steps[rows, 0, mover[:, 0]] < 0, steps[rows, -1, mover[:, -1]] < 0
  return (4 * mover[:, 0] + 2 * up1 + up2).astype(np.int32), mover


@pytest.mark.parametrize("num_frames", [8, 12])
def test_temporal_ordered_clip_determines_label_and_reversal_changes_it(num_frames):
  d = md.make_moving_digits("test", 200, "temporal", num_frames=num_frames)
  label = d["label"]
  decoded, mover = _decode_temporal(d["mask"])
  np.testing.assert_array_equal(decoded, label)
  # The first mover scrolls during the first num_frames/2 steps (full circle), then the other.
  assert (mover[:, :num_frames // 2] == (label // 4)[:, None]).all()
  # Played backwards, the other digit moves first, both directions flip: always another class.
  reversed_label = 4 * (1 - label // 4) + 2 * (1 - label % 2) + (1 - label // 2 % 2)
  np.testing.assert_array_equal(_decode_temporal(d["mask"][:, ::-1])[0], reversed_label)
  assert (reversed_label != label).all()


@functools.lru_cache(maxsize=1)
def _test_sprites():
  return md._sprites("test", S)[0]


def _temporal(label, num, seed=0, phase0=None):
  video, _, _ = md._temporal_clips(np.random.default_rng(seed), _test_sprites(), np.full(num, label),
                                8, 32, phase0=phase0)
  return video


def _multiset(frames):
  return sorted(f.tobytes() for f in frames)


def test_temporal_bag_of_frames_is_the_same_for_every_label():
  """Same nuisance, any label: the same frames in another order (bag-of-frames is at chance)."""
  videos = [_temporal(c, num=20) for c in range(md.NUM_CLASSES["temporal"])]
  for n in range(20):
    bags = [_multiset(v[n]) for v in videos]
    assert all(b == bags[0] for b in bags[1:])
  assert not all(np.array_equal(v, videos[0]) for v in videos[1:])  # yet the clips differ


def test_temporal_single_frame_is_independent_of_the_label():
  """Over the uniformly drawn start phases, frame t has the same distribution for every label."""
  h = 4
  phases = np.stack(np.meshgrid(np.arange(h), np.arange(h)), -1).reshape(-1, 1, 2)
  for seed in range(2):  # two nuisance draws (digits, centres, colours, clutter)
    frames = np.stack([np.concatenate([_temporal(c, 1, seed, p) for p in phases])
                       for c in range(md.NUM_CLASSES["temporal"])])  # [labels, h*h, T, H, W, 3]
    for t in range(2 * h):
      per_label = [_multiset(frames[c, :, t]) for c in range(len(frames))]
      assert all(m == per_label[0] for m in per_label[1:])


@pytest.mark.parametrize("kwargs, name", [
    (dict(split="validation"), "split"), (dict(task="kinetics"), "task"), (dict(num=0), "num"),
    (dict(image_size=8), "image_size"), (dict(num_frames=0, task="appearance"), "num_frames"),
    (dict(num_frames=7), "num_frames"), (dict(num_frames=4), "num_frames"),
])
def test_bad_arguments_name_the_parameter(kwargs, name):
  args = dict(split="train", num=4, task="temporal") | kwargs
  with pytest.raises(ValueError, match=f"^{name} "):
    md.make_moving_digits(**args)


@pytest.mark.parametrize("task", TASKS)
def test_noise_changes_only_the_pixels_and_differs_frame_by_frame(task, fresh_cache):
  clean = md.make_moving_digits("test", 30, task)
  noisy = md.make_moving_digits("test", 30, task, noise=0.1)
  np.testing.assert_array_equal(md.make_moving_digits("test", 30, task, noise=0.0)["video"], clean["video"])
  for k in clean:
    if k != "video":
      np.testing.assert_array_equal(noisy[k], clean[k])  # labels, masks, digits: untouched
  diff = noisy["video"].astype(np.float32) - clean["video"]
  inside = (clean["video"] > 60) & (clean["video"] < 195)  # where +-2.5 std is rarely clipped
  background = clean["video"] == 0  # clipped at 0: only the positive half of the noise shows
  assert abs(diff[inside].std() / 25.5 - 1) < 0.1 and abs(diff[inside].mean()) < 1.5
  assert 0.4 < (diff[background] > 0).mean() < 0.6
  # Drawn afresh for every frame: consecutive frames' noise is uncorrelated.
  d = diff[..., 0][background[..., 0] & np.roll(background[..., 0], -1, axis=1)]
  later = np.roll(diff[..., 0], -1, axis=1)[background[..., 0] & np.roll(background[..., 0], -1, axis=1)]
  assert abs(np.corrcoef(d, later)[0, 1]) < 0.05
  md.make_moving_digits.cache_clear()
  np.testing.assert_array_equal(md.make_moving_digits("test", 30, task, noise=0.1)["video"], noisy["video"])
  with pytest.raises(ValueError, match="^noise must be a number in"):
    md.make_moving_digits("test", 30, task, noise=1.5)


def test_video_noise_reaches_every_split_of_a_config():
  from mone.data import sources
  from mone.configs import recipes, schema
  cfg = schema.apply_overrides(recipes.moving_temporal(), {"num_train": 16, "num_test": 8, "num_val": 8, "video_noise": 0.2})
  train, test = sources.data_sources(cfg)
  val = sources.validation_source(cfg)
  for src, split in ((train, "train"), (test, "test"), (val, "val")):
    np.testing.assert_array_equal(src.arrays["video"], md.make_moving_digits(
        split, len(src), "temporal", seed=cfg.data_seed, holdout_val=split == "train", noise=0.2)["video"])
  with pytest.raises(ValueError, match="video_noise must be in"):
    schema.apply_overrides(cfg, {"video_noise": -0.1})
  with pytest.raises(ValueError, match="video_noise is for the moving_digits dataset"):
    schema.apply_overrides(recipes.digits64(), {"video_noise": 0.1})


def test_moving_digits_sources():
  train, test = video_data.moving_digits_sources("temporal", num_train=64, num_test=16)
  assert (len(train), len(test)) == (64, 16)
  batch = train.get_batch(np.array([3, 5]))
  assert batch["video"].shape == (2, 8, 32, 32, 3) and batch["video"].dtype == np.uint8  # 1 byte per pixel
  assert batch["video"].max() > 0
  assert batch["mask"].shape == (2, 8, 32, 32) and batch["label"].dtype == np.int32
  item = train[5]
  for k in batch:
    np.testing.assert_array_equal(item[k], batch[k][1])


# ------------------------------------------------------------------------------
# TFDS: a tiny array_record video dataset, prepared without TensorFlow.
# ------------------------------------------------------------------------------
NUM_VIDEO_FRAMES = {"train": (20, 13, 5, 16), "test": (9, 20)}  # 5 < a clip's span: loops
FRAME_H, FRAME_W = 24, 32


def _frame(k, label):
  """R codes the frame index, G is a left-to-right ramp (shows flips), B codes the label."""
  f = np.empty((FRAME_H, FRAME_W, 3), np.uint8)
  f[..., 0], f[..., 2] = 8 * k, 60 * label
  f[..., 1] = np.linspace(0, 248, FRAME_W).astype(np.uint8)
  return f


@pytest.fixture(scope="module")
def tiny_tfds(tmp_path_factory):
  """Returns data_dir holding 'tiny_video' in array_record format, built with no TensorFlow.

  tfds.features.Video needs TensorFlow even to be constructed, so the builder stores the
  same thing (one encoded PNG per frame) as a Sequence of Images and encodes with PIL.
  """
  tfds = pytest.importorskip("tensorflow_datasets")
  from PIL import Image

  def png(a):
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()

  class TinyVideo(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
      return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict({
          "video": tfds.features.Sequence(tfds.features.Image(shape=(FRAME_H, FRAME_W, 3))),
          "label": tfds.features.ClassLabel(num_classes=4)}))

    def _split_generators(self, dl_manager):
      return {split: self._generate_examples(split) for split in NUM_VIDEO_FRAMES}

    def _generate_examples(self, split):
      for i, n in enumerate(NUM_VIDEO_FRAMES[split]):
        label = i % 4
        yield f"{split}{i}", {"video": [png(_frame(k, label)) for k in range(n)], "label": label}

  data_dir = tmp_path_factory.mktemp("tfds")
  TinyVideo(data_dir=str(data_dir), file_format="array_record").download_and_prepare()
  return data_dir


def _decoded(video):
  """(frame indices, label, ramp increases left to right) of a uint8 [..., T, S, S, 3] clip."""
  u8 = video.astype(np.float64)
  return (u8[..., 0].mean((-2, -1)) / 8, u8[..., 2].mean((-3, -2, -1)) / 60,
          u8[..., 0, -1, 1] > u8[..., 0, 0, 1])


def test_tfds_train_clips(tiny_tfds):
  src = video_data.TFDSVideoSource("tiny_video", "train", str(tiny_tfds), num_frames=4, stride=2,
                                   image_size=16, train=True, seed=1)
  assert len(src) == 4
  flips = []
  for epoch, i in np.ndindex(3, len(src)):
    item = {k: v[0] for k, v in src.get_batch(np.array([i]), epoch=epoch).items()}
    assert item["video"].shape == (4, 16, 16, 3) and item["video"].dtype == np.uint8
    assert item["label"].dtype == np.int32
    idx, label, increasing = _decoded(item["video"])
    assert label == item["label"]
    # 4 frames 2 apart from a random start; the 5-frame video is shorter than that and loops.
    n = NUM_VIDEO_FRAMES["train"][item["label"]]
    starts = range(max(n - 6, 1))
    assert any(np.array_equal(idx, (start + 2 * np.arange(4)) % n) for start in starts)
    assert (increasing == increasing[0]).all()  # one flip decision for the whole clip
    flips.append(not increasing[0])
  assert any(flips) and not all(flips)
  # Deterministic per (seed, epoch, index), whatever the batch; other epochs, other crops.
  batch = src.get_batch(np.array([2, 0, 1]), epoch=1)
  assert batch["video"].shape == (3, 4, 16, 16, 3) and batch["label"].shape == (3,)
  alone = lambda i, epoch: src.get_batch(np.array([i]), epoch=epoch)["video"][0]
  np.testing.assert_array_equal(batch["video"][1], alone(0, 1))
  np.testing.assert_array_equal(src[0]["video"], alone(0, 0))
  assert not np.array_equal(batch["video"][1], src[0]["video"])
  # SSv2 must not flip: with flip=False every clip keeps left on the left.
  no_flip = video_data.TFDSVideoSource("tiny_video", "train", str(tiny_tfds), 4, 2, 16, True,
                                       seed=1, flip=False)
  assert _decoded(no_flip.get_batch(np.arange(4), epoch=0)["video"])[2].all()
  assert _decoded(no_flip.get_batch(np.arange(4), epoch=1)["video"])[2].all()


def test_tfds_multi_clip_eval(tiny_tfds):
  src = video_data.TFDSVideoSource("tiny_video", "test", str(tiny_tfds), num_frames=3, stride=2,
                                   image_size=12, train=False, num_clips=4)
  items = [src[i] for i in range(len(src))]
  for item in items:
    assert item["video"].shape == (4, 3, 12, 12, 3) and item["label"].shape == ()
    idx, label, increasing = _decoded(item["video"])
    n = NUM_VIDEO_FRAMES["test"][item["label"]]
    # 4 evenly spaced windows of 5 frames (3 frames 2 apart), one central crop each.
    starts = np.rint(np.linspace(0, n - 5, 4))
    np.testing.assert_array_equal(idx, starts[:, None] + 2 * np.arange(3))
    assert increasing.all() and (label == item["label"]).all()
    # Central square crop of the 24 x 32 frame: the ramp is centred on its middle value.
    green = item["video"][..., 1].astype(np.float64)
    assert abs(green.mean() - 124) < 4
  assert src.get_batch(np.arange(2))["video"].shape == (2, 4, 3, 12, 12, 3)


def test_tfds_video_feature_is_read_without_tensorflow(tiny_tfds, tmp_path):
  """A Kinetics/SSv2 prepared with TensorFlow declares tfds.features.Video in features.json."""
  tfds = pytest.importorskip("tensorflow_datasets")
  shutil.copytree(tiny_tfds, tmp_path, dirs_exist_ok=True)
  path = tmp_path / "tiny_video" / "1.0.0" / "features.json"
  features = json.loads(path.read_text())
  features["featuresDict"]["features"]["video"] = {
      "pythonClassName": "tensorflow_datasets.core.features.video_feature.Video",
      "video": {"shape": {"dimensions": ["-1", str(FRAME_H), str(FRAME_W), "3"]},
                "dtype": "uint8", "encodingFormat": "png"}}
  path.write_text(json.dumps(features))
  try:
    import tensorflow  # noqa: F401  pylint: disable=unused-import
  except ModuleNotFoundError:  # the reason for the fallback: tfds itself cannot open it
    with pytest.raises(ModuleNotFoundError):
      tfds.data_source("tiny_video", split="test", data_dir=str(tmp_path), download=False)
  kwargs = dict(num_frames=3, stride=2, image_size=12, train=False, num_clips=2)
  a = video_data.TFDSVideoSource("tiny_video", "test", str(tmp_path), **kwargs)
  b = video_data.TFDSVideoSource("tiny_video", "test", str(tiny_tfds), **kwargs)
  assert len(a) == len(b) == 2
  for i in range(2):
    np.testing.assert_array_equal(a[i]["video"], b[i]["video"])
    assert a[i]["label"] == b[i]["label"]


def test_tfds_missing_dataset_names_data_dir_and_dataset(tiny_tfds, tmp_path):
  for name, data_dir in [("kinetics400", str(tiny_tfds)), ("tiny_video", str(tmp_path)),
                         ("tiny_video", "")]:
    with pytest.raises(FileNotFoundError, match=re.escape(f"{name!r} in data_dir={data_dir!r}")):
      video_data.TFDSVideoSource(name, "train", data_dir, 4, 2, 16, train=True)


def test_tfds_bad_arguments(tiny_tfds):
  with pytest.raises(ValueError, match="num_clips"):
    video_data.TFDSVideoSource("tiny_video", "train", str(tiny_tfds), 4, 2, 16, True, num_clips=2)
  with pytest.raises(ValueError, match="stride"):
    video_data.TFDSVideoSource("tiny_video", "train", str(tiny_tfds), 4, 0, 16, True)
