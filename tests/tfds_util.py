"""A tiny array_record TFDS image dataset, built offline and without TensorFlow.

TFDS encodes numpy images with TensorFlow, so the generator yields JPEG bytes (encoded
with PIL) instead, exactly as ImageNet's builder yields its JPEG files.
"""
import io

import numpy as np
import tensorflow_datasets as tfds
from PIL import Image

NAME = "mone_tiny_images"  # the registered name of TinyImages
NUM_CLASSES = 3
SPLITS = {"train": 12, "test": 5}


def colour(label: int) -> tuple[int, int, int]:
  """The solid colour of every image of a class, so tests can check image-label pairing."""
  return ((40, 200, 90), (220, 60, 30), (70, 90, 230))[label]


class MoneTinyImages(tfds.core.GeneratorBasedBuilder):
  """Solid-colour JPEGs of varying sizes and aspect ratios, coloured by class."""

  VERSION = tfds.core.Version("1.0.0")

  def _info(self):
    return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict({
        "image": tfds.features.Image(shape=(None, None, 3), encoding_format="jpeg"),
        "label": tfds.features.ClassLabel(num_classes=NUM_CLASSES)}))

  def _split_generators(self, dl_manager):
    del dl_manager  # nothing to download
    return {split: self._generate_examples(n, seed) for seed, (split, n) in
            enumerate(SPLITS.items())}

  def _generate_examples(self, num, seed):
    rng = np.random.default_rng(seed)
    for i in range(num):
      label = i % NUM_CLASSES
      h, w = rng.integers(24, 64, size=2)
      buf = io.BytesIO()
      Image.new("RGB", (int(w), int(h)), colour(label)).save(buf, "JPEG", quality=95)
      yield i, {"image": buf.getvalue(), "label": label}


assert MoneTinyImages.name == NAME


def build(data_dir: str) -> str:
  """Prepares the dataset in data_dir (array_record) and returns its TFDS name."""
  MoneTinyImages(data_dir=data_dir, file_format="array_record").download_and_prepare()
  return NAME
