"""Video sources: Kinetics-400 / SSv2 prepared with tensorflow-datasets, and moving digits.

Sources follow the input pipeline's protocol: `__len__()`, `__getitem__(i) -> dict`
and a vectorised `get_batch(indices) -> dict`, with 'video' uint8 (1 byte per pixel through
the host and the host-to-device copy, 4x less than float32; the train and eval steps map it
to [-1, 1] on the device, `mone.data.pipeline.to_unit_range`).

Video sampling follows ViViT (Arnab et al., 2021), whose recipe the paper inherits
(Sec. 5): `num_frames` frames `stride` apart; training takes one random temporal
window with a random resized crop (and an optional flip); evaluation takes
`num_clips` evenly spaced windows with one central crop each and the model averages
its predictions over them ("8x1" = 8 temporal clips x 1 spatial crop, Sec. 5).
"""
import contextlib
import functools
import io
import os
from concurrent import futures

import numpy as np
from PIL import Image

from mone.data import moving_digits

CROP_AREA = (0.3, 1.0)  # random resized crop: fraction of the frame's area kept
CROP_ASPECT = (3 / 4, 4 / 3)


# ------------------------------------------------------------------------------
# Kinetics-400 / Something-Something-v2 through tensorflow-datasets.
# ------------------------------------------------------------------------------
def _raw_records(name: str, split: str, data_dir: str):
  """Random access to a split's serialized tf.train.Example records (TensorFlow-free)."""
  import tensorflow_datasets as tfds  # optional dependency ('data' extra)
  from etils import epath

  missing = FileNotFoundError(
      f"No prepared TFDS dataset {name!r} in data_dir={data_dir!r}: prepare it there first "
      f"(array_record format), or pass the data_dir that holds it.")
  if not data_dir or not (epath.Path(data_dir) / name.split(":")[0]).exists():
    raise missing
  try:
    # tfds prints a banner to stdout whenever it fails to import TensorFlow.
    with contextlib.redirect_stdout(io.StringIO()):
      return tfds.data_source(name, split=split, data_dir=data_dir, download=False,
                              deserialize_method=tfds.decode.DeserializeMethod.RAW_BYTES)
  except tfds.core.DatasetNotFoundError as e:
    raise missing from e
  except ModuleNotFoundError as e:
    # tfds (4.9) cannot even rebuild a `tfds.features.Video` description without
    # TensorFlow (its constructor calls tf.dtypes.as_dtype), although the records are
    # plain tf.train.Example protos. Read the split's array_record shards directly.
    if e.name != "tensorflow":
      raise
    return _array_record_shards(name, split, data_dir)


def _array_record_shards(name: str, split: str, data_dir: str):
  from array_record.python import array_record_data_source
  from etils import epath

  base, _, version = name.partition(":")
  root = epath.Path(data_dir) / base
  if not version:  # the newest prepared version, as tfds would pick
    versions = [p.name for p in root.iterdir() if (p / "dataset_info.json").exists()]
    if not versions:
      raise FileNotFoundError(f"No prepared version of {name!r} in data_dir={data_dir!r}")
    version = max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
  files = sorted(str(p) for p in (root / version).glob(f"*-{split}.array_record-*"))
  if not files:
    raise FileNotFoundError(
        f"No array_record shards of split {split!r} of {name!r} in data_dir={data_dir!r} "
        f"(split slicing such as 'train[:10%]' needs TensorFlow for Video features)")
  return array_record_data_source.ArrayRecordDataSource(files)


class TFDSVideoSource:
  """Clips of a TFDS video dataset (e.g. Kinetics-400, SSv2) in array_record format.

  Expects features `video_key` (a `tfds.features.Video`, or a Sequence of Images:
  one encoded PNG/JPEG per frame) and `label_key` (a ClassLabel). Only the sampled
  frames are decoded. Item i: {'video': uint8 [T, S, S, 3] (train) or
  [num_clips, T, S, S, 3] (eval), 'label': int32 []}.

  The augmentation of example i in epoch e is drawn from default_rng([seed, e, i]),
  so it depends neither on batching nor on threads (`get_batch(indices, epoch)`).
  flip: random horizontal flips in training. Must be False for SSv2, whose labels
  name directions ("pushing something from left to right").
  """

  def __init__(self, name: str, split: str, data_dir: str, num_frames: int, stride: int,
               image_size: int, train: bool, num_clips: int = 1, seed: int = 0,
               flip: bool = True, video_key: str = "video", label_key: str = "label",
               num_threads: int | None = None):
    for arg, value in [("num_frames", num_frames), ("stride", stride),
                       ("image_size", image_size), ("num_clips", num_clips)]:
      if value < 1:
        raise ValueError(f"{arg} must be >= 1, got {value}")
    if train and num_clips != 1:
      raise ValueError(f"num_clips must be 1 when train=True (one random clip), got {num_clips}")
    self.num_frames, self.stride, self.image_size = num_frames, stride, image_size
    self.train, self.num_clips, self.seed, self.flip = train, num_clips, seed, flip
    self.video_key, self.label_key = video_key, label_key
    self._records = _raw_records(name, split, data_dir)
    self._pool = futures.ThreadPoolExecutor(num_threads or min(8, os.cpu_count() or 1))

  def __len__(self) -> int:
    return len(self._records)

  def __getitem__(self, i: int) -> dict:
    return self._process(self._records[int(i)], int(i), 0)

  def get_batch(self, indices, epoch: int = 0) -> dict:
    indices = [int(i) for i in np.asarray(indices).reshape(-1)]
    get_many = getattr(self._records, "__getitems__", None)  # array_record reads in parallel
    records = get_many(indices) if get_many else [self._records[i] for i in indices]
    # PIL releases the GIL while decoding and resizing, so threads do help.
    items = list(self._pool.map(self._process, records, indices, [epoch] * len(indices)))
    return {k: np.stack([it[k] for it in items]) for k in items[0]}

  def _process(self, record: bytes, i: int, epoch: int) -> dict:
    from tensorflow_datasets.proto import tf_example_pb2  # TF-free tf.train.Example

    feature = tf_example_pb2.Example.FromString(record).features.feature
    for key in (self.video_key, self.label_key):
      if key not in feature:
        raise KeyError(f"feature {key!r} not in the dataset's examples: {sorted(feature)}")
    frames = feature[self.video_key].bytes_list.value
    label = np.int32(feature[self.label_key].int64_list.value[0])
    rng = np.random.default_rng([self.seed, epoch, i])

    n, span = len(frames), (self.num_frames - 1) * self.stride + 1
    if not n:
      raise ValueError(f"example {i} has no frames in feature {self.video_key!r}")
    if self.train:
      starts = rng.integers(0, max(n - span, 0) + 1, size=1)
    else:
      starts = np.rint(np.linspace(0, max(n - span, 0), self.num_clips)).astype(np.int64)
    # Videos shorter than the window loop around, as DMVR (ViViT's input pipeline) does.
    idx = (starts[:, None] + self.stride * np.arange(self.num_frames)) % n  # [clips, T]
    unique, inverse = np.unique(idx, return_inverse=True)
    images = [Image.open(io.BytesIO(frames[j])).convert("RGB") for j in unique]

    w, h = images[0].size
    if self.train:  # one box and flip for the whole clip, so motion stays consistent
      area = rng.uniform(*CROP_AREA) * w * h
      aspect = np.exp(rng.uniform(*np.log(CROP_ASPECT)))
      cw, ch = min(w, np.sqrt(area * aspect)), min(h, np.sqrt(area / aspect))
      x0, y0 = rng.uniform(0, w - cw), rng.uniform(0, h - ch)
      flip = self.flip and rng.random() < 0.5
    else:  # central square crop: the "x1" of "8x1"
      cw = ch = min(w, h)
      x0, y0, flip = (w - cw) / 2, (h - ch) / 2, False
    size = (self.image_size, self.image_size)
    out = np.stack([np.asarray(im.resize(size, Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch)))
                    for im in images])[inverse.reshape(idx.shape)]  # [clips, T, S, S, 3]
    if flip:
      out = out[..., ::-1, :]
    video = np.ascontiguousarray(out)
    return {"video": video[0] if self.train else video, "label": label}


# ------------------------------------------------------------------------------
# Moving digits: the embedded default (see mone/moving_digits.py).
# ------------------------------------------------------------------------------
class ClipArraySource:
  """In-memory clips (uint8 video: a source costs 1 byte per pixel)."""

  def __init__(self, arrays: dict):
    self.arrays = arrays

  def __len__(self) -> int:
    return len(self.arrays["label"])

  def __getitem__(self, i: int) -> dict:
    return {k: v[i] for k, v in self.arrays.items()}

  def get_batch(self, indices) -> dict:
    indices = np.asarray(indices)
    return {k: v[indices] for k, v in self.arrays.items()}


def moving_digits_sources(task: str, num_frames: int = 8, image_size: int = 32,
                          num_train: int = 4000, num_test: int = 1000, seed: int = 0,
                          holdout_val: bool = False, noise: float = 0.0):
  """(train, test) ClipArraySources of moving-digit clips: 'video', 'label', 'mask'.
  holdout_val=True: the training clips leave out the validation pool's digits
  (`moving_digits_val`). noise: pixel noise of every split (`make_moving_digits`).

  No augmentation: a flip would change 'temporal' labels (left/right, orbit sense).
  """
  make = functools.partial(moving_digits_source, task=task, num_frames=num_frames, image_size=image_size,
                           seed=seed, noise=noise)
  return make("train", num_train, holdout_val=holdout_val), make("test", num_test)


def moving_digits_source(split: str, num: int, task: str, num_frames: int = 8, image_size: int = 32,
                         seed: int = 0, noise: float = 0.0, holdout_val: bool = False):
  """One split of the moving digits ('train', 'val' or 'test'), as `moving_digits_sources` builds it."""
  return ClipArraySource(moving_digits.make_moving_digits(split, num, task, num_frames=num_frames, image_size=image_size,
                                                          seed=seed, noise=noise, holdout_val=holdout_val))


def moving_digits_val(task: str, num: int, num_frames: int = 8, image_size: int = 32, seed: int = 0,
                      noise: float = 0.0):
  """The validation ClipArraySource: clips of the validation pool's digits, which choose
  lr and steps so that the test clips stay untouched."""
  return moving_digits_source("val", num, task, num_frames, image_size, seed, noise=noise)
