"""One input pipeline for in-memory arrays and prepared TFDS datasets.

A *source* has `__len__()` and `__getitem__(i) -> dict[str, np.ndarray]` (one example),
optionally `get_batch(indices[, epoch]) -> dict` for speed. `train_batches` and
`eval_batches` turn any source into batches of `image` float32 [B, H, W, 3] in [-1, 1],
`label` int32 [B] (and `mask` bool [B, H, W] where the source has one).

Training batches are a pure function of (seed, step): epoch e visits the examples in the
order `default_rng([seed, e]).permutation(n)`, so a run resumed at step k sees exactly the
batches an uninterrupted run would have seen from step k on. The TFDS images' crops and
RandAugment are in `augment`; batches are prepared ahead in a thread by `prefetch.Prefetch`.
"""
import glob
import inspect
import io
import os
from concurrent import futures

import numpy as np
from PIL import Image

from mone.data import augment
from mone.data import digits as digits_lib
from mone.data.prefetch import Prefetch

_MIXUP_TAG = 0x6D6978  # 'mix': keeps the mixup stream apart from other [seed, ...] streams


# ---------------------------------------------------------------- sources ---

class ArraySource:
  """Random access over in-memory arrays that share their leading dimension."""

  def __init__(self, arrays: dict[str, np.ndarray]):
    lengths = {k: len(v) for k, v in arrays.items()}
    if not arrays or len(set(lengths.values())) != 1:
      raise ValueError(f"arrays must be non-empty and of one length, got lengths {lengths}")
    for k, v in arrays.items():  # NaN/Inf inputs would train and evaluate silently wrong
      if np.issubdtype(np.asarray(v).dtype, np.floating) and not np.isfinite(v).all():
        raise ValueError(f"arrays[{k!r}] has {int(np.size(v) - np.isfinite(v).sum())} NaN or Inf "
                         "values; inputs must be finite")
    self.arrays = dict(arrays)

  def __len__(self):
    return len(next(iter(self.arrays.values())))

  def __getitem__(self, i: int) -> dict[str, np.ndarray]:
    return {k: v[i] for k, v in self.arrays.items()}

  def get_batch(self, indices: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[indices] for k, v in self.arrays.items()}


class Subset:
  """The first `num` examples of a source (e.g. the fixed training images a learning curve
  scores), with the source's own preprocessing (epoch 0's for a TFDS training source)."""

  def __init__(self, source, num: int):
    if not 1 <= num:
      raise ValueError(f"num must be >= 1, got {num}")
    self.source, self.num = source, min(num, len(source))

  def __len__(self):
    return self.num

  def __getitem__(self, i: int) -> dict[str, np.ndarray]:
    if not 0 <= i < self.num:
      raise IndexError(f"index {i} out of range [0, {self.num})")
    return self.source[i]

  def get_batch(self, indices: np.ndarray) -> dict[str, np.ndarray]:
    return _get_batch(self.source, np.asarray(indices), epoch=0)


def digits_sources(image_size: int = 48, num_train: int = 10000, num_test: int = 2000,
                   seed: int = 0, holdout_val: bool = False) -> tuple[ArraySource, ArraySource]:
  """(train, test) sources of the embedded cluttered-digits dataset (`mone.data.digits`);
  holdout_val=True leaves the validation digits out of the training images."""
  return (digits_source("train", num_train, image_size, seed, holdout_val),
          digits_source("test", num_test, image_size, seed))


def digits_source(split: str, num: int, image_size: int = 48, seed: int = 0, holdout_val: bool = False) -> ArraySource:
  """One split of the cluttered digits ('train', 'val' or 'test'), as `digits_sources` builds it."""
  return ArraySource(digits_lib.make_digits(split, num, image_size, seed, holdout_val))


class TFDSImageSource:
  """A prepared array_record TFDS image dataset with AugReg-style preprocessing.

  Train: Inception crop (random area and aspect ratio), horizontal flip and optional
  RandAugment(num_ops, magnitude); eval: resize the shorter side to image_size / 0.875,
  then central crop (224 from 256, as in big_vision). Needs no TensorFlow: images are read
  as encoded bytes and decoded with PIL. The randomness of example i in epoch e is drawn
  from `default_rng([seed, e, i])`, so it does not depend on batching or threads.
  """

  def __init__(self, name: str, split: str, data_dir: str, image_size: int, train: bool,
               seed: int = 0, randaugment: tuple[int, int] | None = None,
               area_range: tuple[float, float] = (0.05, 1.0), num_threads: int | None = None):
    # Checked here because tfds.data_source on a missing dataset tries to *build* it.
    base, _, version = name.partition(":")
    info = os.path.join(data_dir or "", base, version or "*", "dataset_info.json")
    local = "://" not in (data_dir or "")  # a gs://... data_dir is left to TFDS to check
    if not data_dir or local and (not os.path.isdir(data_dir) or not glob.glob(info)):
      raise FileNotFoundError(
          f"no prepared TFDS dataset {name!r} in data_dir={data_dir!r} (looked for {info}); "
          f"prepare it with file_format='array_record' (e.g. `tfds build {base} "
          f"--data_dir={data_dir or '...'} --file_format=array_record`)")
    import tensorflow_datasets as tfds
    try:
      self._ds = tfds.data_source(name, split=split, data_dir=data_dir, download=False,
                                  decoders={"image": tfds.decode.SkipDecoding()})
    except Exception as e:  # Re-raised with the arguments a user can fix.
      raise ValueError(f"cannot open TFDS dataset {name!r} split {split!r} in "
                       f"data_dir={data_dir!r}: {e}") from e
    self.num_classes = self._ds.dataset_info.features["label"].num_classes
    self.image_size, self.train, self.seed = image_size, train, seed
    self.randaugment, self.area_range = randaugment, area_range
    self._pool = futures.ThreadPoolExecutor(num_threads or min(8, os.cpu_count() or 1))

  def __len__(self):
    return len(self._ds)

  def _process(self, record: dict, index: int, epoch: int) -> dict[str, np.ndarray]:
    img = Image.open(io.BytesIO(record["image"])).convert("RGB")
    if self.train:
      rng = np.random.default_rng([self.seed, epoch, index])
      img = augment.inception_crop(img, self.image_size, rng, self.area_range)
      if rng.random() < 0.5:
        img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
      if self.randaugment:
        img = augment.randaugment(img, *self.randaugment, rng)
    else:
      img = augment.resize_and_central_crop(img, self.image_size)
    return {"image": np.asarray(img, np.uint8), "label": np.int32(record["label"])}

  def __getitem__(self, i: int) -> dict[str, np.ndarray]:
    return self._process(self._ds[int(i)], int(i), 0)

  def get_batch(self, indices: np.ndarray, epoch: int = 0) -> dict[str, np.ndarray]:
    indices = [int(i) for i in indices]
    get_many = getattr(self._ds, "__getitems__", None)  # array_record reads in parallel
    records = get_many(indices) if get_many else [self._ds[i] for i in indices]
    # PIL releases the GIL while decoding and resizing, so threads do help here.
    examples = list(self._pool.map(self._process, records, indices, [epoch] * len(indices)))
    return {k: np.stack([ex[k] for ex in examples]) for k in examples[0]}


# ---------------------------------------------------------------- batches ---

# uint8 pixel p -> p / 127.5 - 1 in [-1, 1], as numpy computes it (correctly rounded). A table,
# so the device maps pixels to exactly these values: XLA:CPU's division rounds 205 of the 256
# differently (by 1 ulp), which would change every run trained from host-normalised pixels.
PIXEL_VALUES = np.arange(256, dtype=np.float32) / np.float32(127.5) - 1


def to_unit_range(x):
  """Model input in [-1, 1] from uint8 pixels (a jax or numpy array; floats pass unchanged)."""
  if x.dtype != np.uint8:
    return x
  import jax.numpy as jnp
  return jnp.asarray(PIXEL_VALUES)[x]


def _get_batch(source, indices: np.ndarray, epoch: int) -> dict[str, np.ndarray]:
  """Fetches examples as numpy arrays with the dtypes every consumer expects."""
  get = getattr(source, "get_batch", None)
  if get is None:
    examples = [source[int(i)] for i in indices]
    batch = {k: np.stack([ex[k] for ex in examples]) for k in examples[0]}
  elif "epoch" in inspect.signature(get).parameters:
    batch = dict(get(indices, epoch=epoch))
  else:
    batch = dict(get(indices))
  if "video" in batch:  # uint8 until the device (to_unit_range in the step): 4x fewer bytes
    if batch["video"].dtype != np.uint8:  # sources that yield floats are trusted to be in [-1, 1]
      batch["video"] = batch["video"].astype(np.float32)
  elif batch["image"].dtype == np.uint8:  # images are float on the host: mixup mixes them there
    batch["image"] = PIXEL_VALUES[batch["image"]]
  else:
    batch["image"] = batch["image"].astype(np.float32)
  batch["label"] = batch["label"].astype(np.int32)
  if "mask" in batch:
    batch["mask"] = batch["mask"].astype(bool)
  return batch


def _mixup(batch, alpha: float, num_classes: int, rng, eye=None):
  """Mixes every example with its neighbour (batch rolled by one), as in big_vision.

  The original example always keeps the larger weight, so its `label` and `mask` still
  describe the dominant image; `soft_label` carries the exact mixture.
  """
  lam = rng.beta(alpha, alpha)
  lam = np.float32(max(lam, 1 - lam))
  onehot = (np.eye(num_classes, dtype=np.float32) if eye is None else eye)[batch["label"]]
  batch["image"] = lam * batch["image"] + (1 - lam) * np.roll(batch["image"], 1, axis=0)
  batch["soft_label"] = lam * onehot + (1 - lam) * np.roll(onehot, 1, axis=0)
  return batch


def _check_process(batch_size: int, process_index: int, process_count: int) -> int:
  """The rows of a global batch of batch_size that one of process_count processes loads."""
  if process_count < 1 or not 0 <= process_index < process_count:
    raise ValueError(f"process_index must be in [0, process_count={process_count}), got {process_index}")
  if batch_size % process_count:
    raise ValueError(f"batch_size={batch_size} (the global batch) must be divisible by the number of "
                     f"processes ({process_count})")
  return batch_size // process_count


def train_batches(source, batch_size: int, seed: int, start_step: int = 0,
                  num_steps: int | None = None, mixup_alpha: float = 0.0,
                  num_classes: int | None = None, prefetch: int = 2,
                  process_index: int = 0, process_count: int = 1):
  """Yields (step, batch) for step = start_step, ..., num_steps - 1 (forever if None).

  `num_steps` is the total length of training, not a count from start_step, so a resumed
  run stops where an uninterrupted one would. Each epoch drops its last incomplete batch.
  With num_classes, batches carry `soft_label` float32 [B, num_classes] (one-hot, or the
  mixup mixture when mixup_alpha > 0).
  Multi-process: batch_size is the global batch; process i of n loads only rows
  [i B/n, (i+1) B/n) of each (the global batches stay a function of (seed, step), so the
  processes' shards, concatenated in process order, are the single-process batch). Mixup then
  pairs examples within a process's rows.
  """
  n = len(source)
  steps_per_epoch = n // batch_size if batch_size >= 1 else 0
  if steps_per_epoch < 1:
    raise ValueError(f"batch_size must be in [1, len(source)={n}], got {batch_size}")
  if start_step < 0:
    raise ValueError(f"start_step must be >= 0, got {start_step}")
  if mixup_alpha < 0:
    raise ValueError(f"mixup_alpha must be >= 0, got {mixup_alpha}")
  if mixup_alpha > 0 and num_classes is None:
    raise ValueError("num_classes is required when mixup_alpha > 0")
  if num_classes is not None and num_classes < 1:
    raise ValueError(f"num_classes must be >= 1, got {num_classes}")

  local = _check_process(batch_size, process_index, process_count)
  first = process_index * local

  # One-hot rows of one identity built per run, not per step: ImageNet-21k's is 21,843^2
  # float32, 1.8 GiB.
  eye = np.eye(num_classes, dtype=np.float32) if num_classes is not None else None

  def batches():
    step, perm, perm_epoch = start_step, None, None
    while num_steps is None or step < num_steps:
      epoch, offset = divmod(step, steps_per_epoch)
      if epoch != perm_epoch:
        perm, perm_epoch = np.random.default_rng([seed, epoch]).permutation(n), epoch
      rows = perm[offset * batch_size:(offset + 1) * batch_size][first:first + local]
      batch = _get_batch(source, rows, epoch)
      if mixup_alpha > 0:
        rng = np.random.default_rng([seed, epoch, offset, _MIXUP_TAG])
        batch = _mixup(batch, mixup_alpha, num_classes, rng, eye)
      elif num_classes is not None:
        batch["soft_label"] = eye[batch["label"]]
      yield step, batch
      step += 1

  return Prefetch(batches(), prefetch)


def eval_batches(source, batch_size: int, prefetch: int = 2, process_index: int = 0, process_count: int = 1):
  """Yields every example once, in order, in batches padded to batch_size.

  Padding repeats example 0 and is marked by `valid` bool [B] = False, so a jitted eval step
  sees one static shape and the metrics can ignore the padding. Multi-process: process i of n
  loads rows [i B/n, (i+1) B/n) of each global batch, so every process runs the same number
  of batches (some of them padding only) and the evaluation is split evenly.
  """
  n = len(source)
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  local = _check_process(batch_size, process_index, process_count)
  rows = slice(process_index * local, (process_index + 1) * local)

  def batches():
    for start in range(0, n, batch_size):
      idx = np.arange(start, min(start + batch_size, n))
      valid = (np.arange(batch_size) < len(idx))[rows]
      batch = _get_batch(source, np.pad(idx, (0, batch_size - len(idx)))[rows], epoch=0)
      batch["valid"] = valid
      yield batch

  return Prefetch(batches(), prefetch)
