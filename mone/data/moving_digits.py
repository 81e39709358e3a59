"""Moving-digit clips: the embedded, offline stand-ins for Kinetics-400 and SSv2 (Sec. 5).

* 'appearance' (Kinetics-400-like): one whole handwritten digit bounces around the canvas among
  moving clutter (fragments of other digits); the label is its class: any single frame answers it,
  and only the digit's tokens matter.
* 'temporal' (SSv2-like): two digits, each in a fixed window in its own half of the canvas, scroll
  vertically through their windows like film strips, one during the first half of the clip, then
  the other. Label = which side scrolls first x its direction x the second's direction (8 classes).
  Each digit scrolls through its whole window, from a uniformly random start, in half the clip, so
  every label gives the same multiset of frames: only their order carries it (`_temporal_clips`).

Train, test and validation clips draw every digit and clutter fragment from `mnist_pool('train')`,
`mnist_pool('test')` and `mnist_pool('val')`; holdout_val=True keeps validation digits out of training.
"""
import functools

import numpy as np

from mone.data.mnist import mnist_pool

NUM_CLASSES = {"appearance": 10, "temporal": 8}
CLASS_NAMES = {
    "appearance": tuple(str(d) for d in range(10)),
    "temporal": tuple(f"{a} scrolls {d1}, then {b} {d2}"
                      for a, b in (("left", "right"), ("right", "left"))
                      for d1 in ("down", "up") for d2 in ("down", "up")),
}
NUM_CLUTTER = {"appearance": 3, "temporal": 2}  # fragments of other digits
# Digit (and 'temporal' window) size as a fraction of image_size. 'temporal' windows fill
# half the width each, so a digit scrolls 4 px per frame at T = 8: with 12 px windows (3 px
# steps) a tiny ViViT stayed at chance for 1,600 steps; with 16 px it reached ~92%.
DIGIT_SIZE = {"appearance": 1 / 2, "temporal": 1 / 2}
_SPLIT_IDS = {"train": 0, "test": 1, "val": 2}  # rng stream per split (train, test: as before val existed)
_NOISE_STREAM = 7  # the pixel noise's own rng stream: noise=0 leaves every clip as it was
INK = 0.3  # sprite intensity (of 1) above which a pixel counts as part of the object


def _resize_matrix(n_in: int, n_out: int) -> np.ndarray:
  """[n_out, n_in] box-filter (area) resampling, so downscaled strokes don't alias."""
  edges = np.linspace(0, n_in, n_out + 1)
  j = np.arange(n_in)[None]
  overlap = np.clip(np.minimum(edges[1:, None], j + 1) - np.maximum(edges[:-1, None], j), 0, None)
  return overlap / overlap.sum(1, keepdims=True)


def _sprites(split: str, size: int, holdout_val: bool = False) -> tuple[np.ndarray, np.ndarray]:
  """The split's digits as float32 [n, size, size] in [0, 1], and their labels."""
  x, y = mnist_pool(split, holdout_val)
  w = _resize_matrix(x.shape[1], size)
  return (w @ (x.astype(np.float32) / 255) @ w.T).astype(np.float32), y


def _colours(rng, n: int) -> np.ndarray:
  """Random RGB colours with a full-intensity brightest channel, [n, 3]."""
  c = rng.uniform(0.15, 1.0, (n, 3))
  return c / c.max(1, keepdims=True)


def _bounce(rng, n: int, num_frames: int, span: int, speed: tuple[float, float]) -> np.ndarray:
  """Integer top-left corners [n, T, 2] of straight motion reflected at walls 0 and span."""
  p0 = rng.uniform(0, span, (n, 2))
  angle = rng.uniform(0, 2 * np.pi, n)
  v = rng.uniform(*speed, n)[:, None] * np.stack([np.sin(angle), np.cos(angle)], -1)
  p = p0[:, None] + v[:, None] * np.arange(num_frames)[None, :, None]
  p = span - np.abs(np.mod(p, 2 * span) - span)  # closed-form reflection (a triangle wave)
  return np.rint(p).astype(np.int64)


def _crop(rng, sprites: np.ndarray, size: int) -> np.ndarray:
  """A random size x size window of each sprite, away from the (empty) border."""
  n, s = sprites.shape[:2]
  lo, hi = s // 8, s - size - s // 8
  oy, ox = (rng.integers(lo, hi + 1, n)[:, None] + np.arange(size) for _ in range(2))
  return sprites[np.arange(n)[:, None, None], oy[:, :, None], ox[:, None, :]]


def _paste(video, mask, sprites, pos, colours):
  """Max-composites sprites [n, T or 1, s, s] at top-left corners pos [n, T, 2], in place.

  video: uint8 [n, T, H, W, 3]; mask: bool [n, T, H, W] or None (clutter). No two
  pixels of one sprite share an index, so a gather-max-scatter needs no np.maximum.at;
  one flat index (rather than four broadcast ones) makes it several times faster.
  """
  n, t, h, w = video.shape[:4]
  r = np.arange(sprites.shape[-1])
  rows = (np.arange(n)[:, None] * t + np.arange(t)) * h + pos[..., 0]  # [n, T]
  flat = (rows[..., None, None] + r[:, None]) * w + (pos[..., 1, None, None] + r)  # [n, T, s, s]
  ink = np.rint(255 * sprites[..., None] * colours[:, None, None, None]).astype(np.uint8)
  pixels = video.reshape(-1, 3)  # views, so the writes land in video and mask
  pixels[flat] = np.maximum(pixels[flat], ink)
  if mask is not None:
    mask.reshape(-1)[flat] |= sprites > INK


def _balanced_labels(rng, num: int, num_classes: int) -> np.ndarray:
  return rng.permutation(np.arange(num) % num_classes).astype(np.int32)


def _appearance_clips(rng, sprites, digit_labels, num, num_frames, image_size):
  labels = _balanced_labels(rng, num, 10)
  # A random pool digit of each clip's class.
  order = np.argsort(digit_labels, kind="stable")
  start = np.searchsorted(digit_labels[order], labels)
  count = np.bincount(digit_labels, minlength=10)[labels]
  digit = order[start + (rng.random(num) * count).astype(np.int64)]

  s = sprites.shape[-1]
  speed = (image_size / 32, 3 * image_size / 32)  # 1-3 px/frame on a 32 px canvas
  video = np.zeros((num, num_frames, image_size, image_size, 3), np.uint8)
  mask = np.zeros(video.shape[:-1], bool)
  f = s * 3 // 8  # fragment size: a few strokes, too little to read as a digit
  for _ in range(NUM_CLUTTER["appearance"]):
    frag = _crop(rng, sprites[rng.integers(0, len(sprites), num)], f)
    _paste(video, None, frag[:, None], _bounce(rng, num, num_frames, image_size - f, speed),
           _colours(rng, num))
  _paste(video, mask, sprites[digit, None], _bounce(rng, num, num_frames, image_size - s, speed),
         _colours(rng, num))
  return video, labels, mask


def temporal_factors(label):
  """(first_right, first_up, second_up) of 'temporal' labels (int arrays): whether the right
  digit scrolls first, and whether the first / second one scrolls up (`CLASS_NAMES`' order)."""
  label = np.asarray(label)
  return label // 4, label // 2 % 2, label % 2


def _temporal_clips(rng, sprites, labels, num_frames, image_size, phase0=None):
  """Renders 'temporal' clips of the given labels; rng draws only label-free nuisance.

  phase0: optional int [num, 2] start phases (left, right digit) in [0, num_frames/2).
  Returns (video, mask, digits): digits int [num, 2] indexes the sprites drawn (left, right).
  """
  num, h, s = len(labels), num_frames // 2, sprites.shape[-1]
  digits = rng.integers(0, len(sprites), (num, 2))
  colours = _colours(rng, 2 * num).reshape(num, 2, 3)
  x = rng.integers(0, image_size // 2 - s + 1, (num, 2)) + [0, image_size // 2]  # own half each
  y = rng.integers(0, image_size - s + 1, (num, 2))
  offset = rng.uniform(0, s / h, (num, 2))
  if phase0 is None:
    phase0 = rng.integers(0, h, (num, 2))
  clutter_digits = rng.integers(0, len(sprites), (NUM_CLUTTER["temporal"], num))
  clutter_pos = rng.integers(0, image_size - s // 2 + 1, (NUM_CLUTTER["temporal"], num, 1, 2))
  clutter_colours = _colours(rng, NUM_CLUTTER["temporal"] * num)

  # Why no single frame, nor any bag of frames, answers 'temporal': a digit scrolls s / h rows a frame,
  # so the first is back at its start when the other sets off. With uniformly random start offsets
  # every frame shows both digits at uniformly random offsets whatever the label, and each digit runs
  # through the same h offsets, up or down, while the other waits: given the nuisance (digits,
  # windows, colours, offsets, clutter) the multiset of frames is the same for all 8 labels. Moving
  # clutter would act as a clock; moving the digits across a bounded canvas would give direction away
  # near its edges, and wrapping them round the whole canvas takes steps too large for a tubelet. A
  # 2-frame tubelet sees one step (that digit's direction), but a bag of tubelets cannot tell which
  # side moved first (chance, 1/2).
  first_right, up1, up2 = temporal_factors(labels)
  t = np.arange(num_frames)
  steps1 = np.minimum(t, h)[None] * (1 - 2 * up1[:, None])  # [num, T]; back at start at t = h
  steps2 = np.maximum(t - h, 0)[None] * (1 - 2 * up2[:, None])
  steps = np.where(first_right[:, None, None] == np.arange(2),  # [num, T, 2] (left, right)
                   steps1[..., None], steps2[..., None])
  scroll = np.rint(offset[:, None] + (phase0[:, None] + steps) * s / h).astype(np.int64)

  video = np.zeros((num, num_frames, image_size, image_size, 3), np.uint8)
  mask = np.zeros(video.shape[:-1], bool)
  for k in range(NUM_CLUTTER["temporal"]):  # static, so it cannot serve as a clock
    frag = _crop(rng, sprites[clutter_digits[k]], s // 2)
    _paste(video, None, frag[:, None], np.repeat(clutter_pos[k], num_frames, 1),
           clutter_colours[k * num:(k + 1) * num])
  r = np.arange(s)
  for d in range(2):  # frame t shows the digit rolled down by scroll[:, t, d] rows in its window
    rows = (r - scroll[:, :, d, None]) % s  # [num, T, s]
    film = sprites[digits[:, d, None, None, None], rows[..., None], r]  # [num, T, s, s]
    corner = np.broadcast_to(np.stack([y[:, d], x[:, d]], -1)[:, None], (num, num_frames, 2))
    _paste(video, mask, film, corner, colours[:, d])
  return video, mask, digits


def _add_noise(video, std: float, rng, chunk: int = 1024):
  """Adds i.i.d. Gaussian noise of standard deviation std (of the 0-255 range) to every pixel of
  every frame, rounded and clipped to uint8, in place and in chunks of clips (float32 noise for
  a whole 40,000-clip set would take 4 GB). Noise drawn afresh for each frame carries no
  information about frame order, so the temporal task's argument still holds."""
  for i in range(0, len(video), chunk):
    part = video[i:i + chunk]
    noisy = part + rng.normal(0.0, 255.0 * std, part.shape).astype(np.float32)
    part[...] = np.clip(np.rint(noisy), 0, 255).astype(np.uint8)


def _check(name, value, allowed):
  if value not in allowed:
    raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")


@functools.lru_cache(maxsize=4)  # a 4000-clip set is ~130 MB
def make_moving_digits(split: str, num: int, task: str, num_frames: int = 8,
                       image_size: int = 32, seed: int = 0, holdout_val: bool = False,
                       noise: float = 0.0) -> dict:
  """Returns {'video': uint8 [num, T, H, W, 3], 'label': int32 [num], 'mask': bool [num, T, H, W]},
  and for 'temporal' 'digit': int32 [num, 2], the class of the left and right scrolling digit
  (a nuisance the label ignores, kept for error analysis: `mone.chapters.analysis.temporal_errors`).

  mask marks the task-relevant object(s) frame by frame: the labelled digit
  ('appearance') or both orbiting digits ('temporal'), not the clutter. Labels are
  balanced (counts differ by at most one). Cached, so the arrays are read-only.
  split: 'train', 'val' or 'test'; holdout_val=True (train only) leaves the validation
  pool's digits out of a training set that has a validation split beside it.
  noise: standard deviation, as a fraction of the 0-255 range, of i.i.d. Gaussian pixel noise
  added to every frame (a difficulty knob; drawn from its own rng stream, so labels, masks and
  the noiseless picture are those of noise=0).
  """
  _check("split", split, set(_SPLIT_IDS))
  if holdout_val and split != "train":
    raise ValueError(f"holdout_val=True is for split='train' (it keeps validation digits out of "
                     f"training), got split={split!r}")
  _check("task", task, set(NUM_CLASSES))
  if not isinstance(num, (int, np.integer)) or num < 1:
    raise ValueError(f"num must be a positive int, got {num!r}")
  if not isinstance(image_size, (int, np.integer)) or image_size < 16:
    raise ValueError(f"image_size must be an int >= 16, got {image_size!r}")
  if task == "temporal" and (num_frames < 6 or num_frames % 2):
    raise ValueError(f"num_frames must be even and >= 6 for task='temporal' (a digit scrolls "
                     f"round in num_frames/2 steps; in 2, up = down), got {num_frames!r}")
  if not isinstance(num_frames, (int, np.integer)) or num_frames < 1:
    raise ValueError(f"num_frames must be a positive int, got {num_frames!r}")
  if not (isinstance(noise, (int, float)) and 0 <= noise <= 1):
    raise ValueError(f"noise must be a number in [0, 1] (a fraction of the pixel range), got {noise!r}")

  # Separate streams per (split, task) so that changing one never changes another.
  rng = np.random.default_rng([seed, _SPLIT_IDS[split], int(task == "temporal")])
  sprites, digit_labels = _sprites(split, int(round(image_size * DIGIT_SIZE[task])), holdout_val)
  if task == "appearance":
    video, label, mask = _appearance_clips(rng, sprites, digit_labels, num, num_frames, image_size)
  else:
    label = _balanced_labels(rng, num, NUM_CLASSES["temporal"])
    video, mask, digits = _temporal_clips(rng, sprites, label, num_frames, image_size)
  if noise > 0:
    _add_noise(video, noise, np.random.default_rng([seed, _SPLIT_IDS[split], int(task == "temporal"), _NOISE_STREAM]))
  out = {"video": video, "label": label, "mask": mask}
  if task == "temporal":
    out["digit"] = digit_labels[digits].astype(np.int32)
  for v in out.values():
    v.flags.writeable = False
  return out
