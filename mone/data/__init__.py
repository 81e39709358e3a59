"""The data: the embedded datasets (`mnist`, `digits`, `moving_digits`), sources and batching
(`pipeline`), the TFDS images' augmentation (`augment`), prefetching (`prefetch`), video sources
(`video`), and the (train, test) sources a training config names (`sources`). Every batch is a
pure function of (seed, step)."""
