"""The data: the embedded datasets (`mnist`, `digits`, `moving_digits`), batching, augmentation
and prefetching (`pipeline`), video sources (`video`), and the (train, test) sources a training
config names (`sources`). Every batch is a pure function of (seed, step)."""
