"""Image preprocessing of the TFDS image sources, as AugReg (big_vision) does it: an Inception
crop and RandAugment for training, a resize and central crop for evaluation.

Every function takes a PIL image and, where it is random, a numpy Generator, so the caller
decides where the randomness comes from (`TFDSImageSource` draws it per example and epoch).
"""
import numpy as np
from PIL import Image, ImageEnhance, ImageOps


def inception_crop(img, size: int, rng, area_range):
  """Random crop of area_range of the area, aspect ratio in [3/4, 4/3], resized to size.

  As in Inception (Szegedy et al. 2015); big_vision's `inception_crop` (AugReg) defaults to
  5% minimum area rather than torchvision's 8%. Falls back to the whole image.
  """
  w, h = img.size
  for _ in range(10):
    area = w * h * rng.uniform(*area_range)
    ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
    cw, ch = round(np.sqrt(area * ratio)), round(np.sqrt(area / ratio))
    if 0 < cw <= w and 0 < ch <= h:
      x, y = rng.integers(w - cw + 1), rng.integers(h - ch + 1)
      return img.resize((size, size), Image.Resampling.BILINEAR, box=(x, y, x + cw, y + ch))
  return img.resize((size, size), Image.Resampling.BILINEAR)


def resize_and_central_crop(img, size: int, crop_fraction: float = 0.875):
  """The shorter side resized to size / crop_fraction, then the central size x size crop."""
  w, h = img.size
  s = size / crop_fraction / min(w, h)
  nw, nh = max(size, round(w * s)), max(size, round(h * s))
  x, y = (nw - size) // 2, (nh - size) // 2
  return img.resize((nw, nh), Image.Resampling.BILINEAR).crop((x, y, x + size, y + size))


RANDAUGMENT_OPS = ("identity", "autocontrast", "equalize", "rotate", "solarize", "color",
                   "posterize", "contrast", "brightness", "sharpness", "shear_x", "shear_y",
                   "translate_x", "translate_y")


def randaugment(img, num_ops: int, magnitude: float, rng):
  """RandAugment (Cubuk et al. 2020): num_ops ops drawn uniformly, all at one magnitude."""
  for _ in range(num_ops):
    op = RANDAUGMENT_OPS[rng.integers(len(RANDAUGMENT_OPS))]
    img = augment_op(img, op, magnitude / 10, sign=1 if rng.random() < 0.5 else -1)
  return img


def augment_op(img, op: str, level: float, sign: int = 1):
  """One RandAugment op at strength `level` (magnitude / 10), as TF/big_vision scales them.

  AugReg's magnitude 15 is thus beyond the nominal maximum 10 (e.g. rotations up to 45
  degrees). Geometric ops fill the uncovered area with grey (128).
  """
  fill, (w, h) = (128, 128, 128), img.size
  if op == "identity":
    return img
  if op == "autocontrast":
    return ImageOps.autocontrast(img)
  if op == "equalize":
    return ImageOps.equalize(img)
  if op == "rotate":
    return img.rotate(sign * 30 * level, fillcolor=fill)
  if op == "solarize":  # inverts pixels >= threshold; a threshold above 255 does nothing
    return ImageOps.solarize(img, int(256 * level))
  if op == "posterize":  # TF keeps int(4 * level) bits; at least 1 so it never blanks the image
    return ImageOps.posterize(img, int(np.clip(4 * level, 1, 8)))
  enhancers = {"color": ImageEnhance.Color, "contrast": ImageEnhance.Contrast,
               "brightness": ImageEnhance.Brightness, "sharpness": ImageEnhance.Sharpness}
  if op in enhancers:
    return enhancers[op](img).enhance(1.8 * level + 0.1)
  shift = sign * level * 100 / 224  # TF translates up to 100 px at 224 px: scaled to size
  shear = sign * 0.3 * level
  affine = {"shear_x": (1, shear, 0, 0, 1, 0), "shear_y": (1, 0, 0, shear, 1, 0),
            "translate_x": (1, 0, shift * w, 0, 1, 0),
            "translate_y": (1, 0, 0, 0, 1, shift * h)}
  if op in affine:
    return img.transform(img.size, Image.Transform.AFFINE, affine[op], fillcolor=fill)
  raise ValueError(f"op must be one of {RANDAUGMENT_OPS}, got {op!r}")
