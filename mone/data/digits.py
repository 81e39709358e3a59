"""Cluttered digits: the embedded default image dataset (no download, seconds to make).

Each image is a real MNIST digit (the label) drawn at a random scale (ink 45-65% of the
canvas side), position near the centre and colour on a crop of a public-domain/CC0 photograph or texture
that scikit-image ships, at reduced contrast, over up to 2 distractor fragments (10x10
crops of other digits, i.e. partial strokes, never a whole digit). As in natural images,
only some tokens carry the label and many are background or clutter: the setting in
which routing tokens to nested experts of different sizes can pay off. `mask` marks the
labelled digit's own pixels, so one can score which tokens a router sends to the full
expert (`token_mask`). Train and test images draw digits (labelled and distractor) only
from the disjoint `mnist_pool('train')` and `mnist_pool('test')` pools respectively; a validation
split draws from `mnist_pool('val')`, which the training pool then leaves out.
"""
import functools

import numpy as np
import skimage.data
from PIL import Image

from mone.data.mnist import mnist_pool

# skimage.data images that ship in the wheel (no fetch): CC0 or public domain.
_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
           "brick", "grass", "gravel")
_BG_ZOOMS = (2, 4)  # photo's shorter side is this many canvas sides: scenes and close-ups
_BG_CONTRAST = (0.15, 0.35)  # background contrast kept, so the digit stands out
_BG_MEAN = (30, 100)  # background brightness after dimming; digits are drawn at 165-255
_DIGIT_SIDE = (0.45, 0.65)  # labelled digit's ink box (MNIST's central 20x20) / canvas side
_JITTER = 0.12  # max offset of the digit from the centre / canvas side: a tiny ViT cannot
# learn full translation invariance from 10k images in a CPU budget (35% vs 77% in calibration)
_MAX_FRAGMENTS = 2  # distractor slots per image, each used with probability _P_FRAGMENT
_P_FRAGMENT = 0.5
_FRAGMENT = 10  # side of a distractor crop in MNIST pixels: half a digit, never a whole one
_CHUNK = 256  # images per rng stream: bounds memory and makes smaller sets prefixes of larger
_SPLIT_IDS = {"train": 0, "test": 1, "val": 2}


@functools.lru_cache(maxsize=None)
def _backgrounds(image_size: int) -> tuple[np.ndarray, ...]:
  """Photos as float32 [h, w, 3] arrays whose shorter side is a multiple of image_size."""
  bank = []
  for name in _PHOTOS:
    img = Image.fromarray(getattr(skimage.data, name)()).convert("RGB")
    for zoom in _BG_ZOOMS:
      s = zoom * image_size / min(img.size)
      size = (max(image_size, round(img.size[0] * s)), max(image_size, round(img.size[1] * s)))
      img_z = img.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
      bank.append(np.asarray(img_z, np.float32))
  return tuple(bank)


def _resample(n_out: int, n_src: int, start: np.ndarray, scale: np.ndarray) -> np.ndarray:
  """Bilinear weights [n, n_out, n_src] that place a source axis at `start` with `scale`.

  Scaling plus translation is separable, so drawing n digits at n different scales is two
  batched matmuls instead of n image resizes. Source pixels outside the axis weigh 0.
  """
  start = np.asarray(start, np.float32)[:, None]
  scale = np.asarray(scale, np.float32)[:, None]
  u = (np.arange(n_out, dtype=np.float32) + 0.5 - start) / scale - 0.5  # [n, n_out]
  return np.maximum(0, 1 - np.abs(u[:, :, None] - np.arange(n_src, dtype=np.float32)))


def _draw(src: np.ndarray, top, left, scale, size: int) -> np.ndarray:
  """Alpha maps [n, size, size] in [0, 1] of uint8 sprites src [n, h, w] scaled and placed."""
  rows = _resample(size, src.shape[1], top, scale)
  cols = _resample(size, src.shape[2], left, scale)
  return np.clip(rows @ (src / np.float32(255)) @ cols.transpose(0, 2, 1), 0, 1)


def _bright_colour(rng, n: int) -> np.ndarray:
  """Random bright RGB [n, 3] colours. Backgrounds are dimmed, so ink is always the brighter
  side: with both polarities a tiny ViT's linear patch embedding learned far more slowly."""
  return (165 + rng.uniform(0, 90, (n, 3))).astype(np.float32)


def _composite(image: np.ndarray, alpha: np.ndarray, colour: np.ndarray):
  """Paints layers of solid colour [n, L, 3] with alpha [n, L, S, S] over image, in order.

  Done as one weighted sum (weight of a layer = its alpha times the transparency of the
  layers above it) because painting layer by layer over [n, S, S, 3] is several times slower.
  """
  weight, clear = np.empty_like(alpha), np.ones_like(alpha[:, 0])
  for k in reversed(range(alpha.shape[1])):
    weight[:, k] = alpha[:, k] * clear
    clear *= 1 - alpha[:, k]
  image *= clear[..., None]
  image += weight.transpose(0, 2, 3, 1) @ colour[:, None]  # [n, S, S, L] @ [n, 1, L, 3]


def _chunk(rng, digits, labels, index, image_size):
  """One chunk of images for labelled digits digits[index]."""
  n, s, f, k = len(index), image_size, _FRAGMENT, _MAX_FRAGMENTS
  bank = _backgrounds(s)
  # Background: a random crop of a random photo, mirrored half the time, contrast reduced.
  which = rng.integers(len(bank), size=n)
  flip = rng.random(n) < 0.5
  r = np.arange(s)
  cols = np.where(flip[:, None], r[::-1], r)[:, None, :]  # [n, 1, s]
  image = np.empty((n, s, s, 3), np.float32)
  for b in np.unique(which):
    sel = np.flatnonzero(which == b)
    h, w, _ = bank[b].shape
    y = rng.integers(h - s + 1, size=(len(sel), 1, 1))
    x = rng.integers(w - s + 1, size=(len(sel), 1, 1))
    image[sel] = bank[b][y + r[:, None], x + cols[sel]]
  mean = image.mean(axis=(1, 2, 3), keepdims=True)
  image -= mean
  image *= rng.uniform(*_BG_CONTRAST, (n, 1, 1, 1)).astype(np.float32)
  image += rng.uniform(*_BG_MEAN, (n, 1, 1, 1)).astype(np.float32)  # dimmed photo

  # One scale per image for digit and fragments, so that stroke widths match.
  ink = rng.uniform(*_DIGIT_SIDE, n) * s  # side of the 20x20 ink box, in canvas pixels
  scale = ink / 20
  # Distractors: f x f crops of other digits, offset within MNIST's 20x20 ink box so that
  # most of them do contain strokes.
  other = rng.integers(len(digits), size=(n, k, 1, 1))
  oy, ox = rng.integers(4, 24 - f + 1, size=(2, n, k, 1, 1))
  crops = digits[other, oy + np.arange(f)[:, None], ox + np.arange(f)]  # [n, k, f, f]
  top, left = rng.uniform(0, s - f * scale[:, None], (2, n, k))
  frag = _draw(crops.reshape(n * k, f, f), top.ravel(), left.ravel(), np.repeat(scale, k), s)
  frag = frag.reshape(n, k, s, s) * (rng.random((n, k, 1, 1)) < _P_FRAGMENT)
  # The labelled digit goes on top: its 28x28 frame starts 4 MNIST pixels before the ink box.
  centre = (s - ink) / 2
  top, left = centre + rng.uniform(-1, 1, (2, n)) * np.minimum(centre, _JITTER * s)
  alpha = _draw(digits[index], top - 4 * scale, left - 4 * scale, scale, s)
  colour = _bright_colour(rng, n * (k + 1)).reshape(n, k + 1, 3)
  _composite(image, np.concatenate([frag, alpha[:, None]], axis=1), colour)
  return np.clip(np.round(image), 0, 255).astype(np.uint8), labels[index], alpha >= 0.5


@functools.lru_cache(maxsize=16)
def make_digits(split: str, num: int, image_size: int = 48, seed: int = 0, holdout_val: bool = False) -> dict:
  """Returns {'image': uint8 [num, S, S, 3], 'label': int32 [num], 'mask': bool [num, S, S]}.

  split: 'train', 'val' or 'test', each drawing digits from its own MNIST pool; with
  holdout_val=True the train split leaves out the validation pool's digits (`mnist_pool`).
  Deterministic in its arguments; make_digits(split, n) is a prefix of make_digits(split, m)
  for n <= m. The arrays are cached and read-only: copy before modifying.
  """
  if split not in _SPLIT_IDS:
    raise ValueError(f"split must be one of {sorted(_SPLIT_IDS)}, got {split!r}")
  for name, value, low in (("num", num, 1), ("image_size", image_size, 28), ("seed", seed, 0)):
    if not isinstance(value, (int, np.integer)) or value < low:
      raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
  digits, labels = mnist_pool(split, holdout_val)
  # Labelled digits in concatenated permutations of the pool: classes stay balanced.
  order_rng = np.random.default_rng([seed, _SPLIT_IDS[split]])
  chunks = -(-num // _CHUNK)  # whole chunks, truncated at the end: prefixes stay stable
  reps = -(-chunks * _CHUNK // len(digits))
  order = np.concatenate([order_rng.permutation(len(digits)) for _ in range(reps)])
  parts = [_chunk(np.random.default_rng([seed, _SPLIT_IDS[split], c]), digits, labels,
                  order[c * _CHUNK:(c + 1) * _CHUNK], image_size) for c in range(chunks)]
  out = {k: np.concatenate(v)[:num] for k, v in zip(("image", "label", "mask"), zip(*parts))}
  for v in out.values():
    v.flags.writeable = False  # protects the lru_cache entry from in-place edits
  return out


def token_mask(mask: np.ndarray, patch_size: int) -> np.ndarray:
  """Fraction of each patch covered by the object: float32 [num, N], patches row-major."""
  n, h, w = mask.shape
  if patch_size < 1 or h % patch_size or w % patch_size:
    raise ValueError(f"patch_size must divide the image size {h}x{w}, got {patch_size!r}")
  p = patch_size
  m = mask.reshape(n, h // p, p, w // p, p).astype(np.float32).mean(axis=(2, 4))
  return m.reshape(n, -1)
