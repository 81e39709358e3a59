"""The (train, test) sources a training config names, and the model input of a batch.

A config here is any object with a training config's data fields (`mone.configs.schema.TrainConfig`
is the one the package uses): the data layer reads those fields and imports nothing from training.
"""
import functools
from pathlib import Path

from mone import results
from mone.data import pipeline, video

# What data_sources builds: the datasets a config may name (`mone.configs.schema.DATASETS`, the same).
DATASETS = ("digits", "tfds", "moving_digits", "tfds_video")


def check_data(cfg):
  """A clear error, before anything is written, if a TFDS config has no usable data_dir."""
  if cfg.dataset in ("tfds", "tfds_video"):
    if not cfg.data_dir:
      raise ValueError(f"config {cfg.name!r}: dataset={cfg.dataset} ({cfg.tfds_name}) reads a prepared "
                       "TFDS data_dir; set data_dir=PATH")
    if results.is_local(cfg.data_dir) and not Path(cfg.data_dir).is_dir():  # gs://...: TFDS checks it
      raise ValueError(f"config {cfg.name!r}: data_dir={cfg.data_dir!r} is not a directory")


def data_sources(cfg):
  """(train, test) sources for the config's dataset."""
  return source(cfg, "train"), source(cfg, "test")


def source(cfg, split: str):
  """The config's 'train' or 'test' source alone: evaluating stored parameters builds no training
  set (digits64's is 100,000 rendered images)."""
  if split not in ("train", "test"):
    raise ValueError(f"split must be 'train' or 'test', got {split!r}")
  check_data(cfg)
  m, train = cfg.model, split == "train"
  num, holdout = (cfg.num_train, cfg.num_val > 0) if train else (cfg.num_test, False)
  if cfg.dataset == "digits":
    return pipeline.digits_source(split, num, m.image_size, cfg.data_seed, holdout_val=holdout)
  if cfg.dataset == "tfds":
    mk = functools.partial(pipeline.TFDSImageSource, cfg.tfds_name, data_dir=cfg.data_dir,
                           image_size=m.image_size, seed=cfg.seed)
    return mk(cfg.train_split, train=True, randaugment=cfg.randaugment) if train else mk(cfg.eval_split, train=False)
  if cfg.dataset == "moving_digits":
    return video.moving_digits_source(split, num, cfg.video_task, m.num_frames, m.image_size, cfg.data_seed,
                                      noise=cfg.video_noise, holdout_val=holdout)
  if cfg.dataset == "tfds_video":
    mk = functools.partial(video.TFDSVideoSource, cfg.tfds_name, data_dir=cfg.data_dir,
                           num_frames=m.num_frames, stride=cfg.frame_stride, image_size=m.image_size,
                           seed=cfg.seed, flip=cfg.flip)
    return mk(cfg.train_split, train=True) if train else mk(cfg.eval_split, train=False, num_clips=cfg.num_clips)
  raise ValueError(f"dataset must be one of {DATASETS}, got {cfg.dataset!r}")


def validation_source(cfg):
  """The validation split of a config with one (num_val > 0; embedded datasets only), else None."""
  if cfg.num_val == 0:
    return None
  if cfg.dataset == "moving_digits":
    return video.moving_digits_val(cfg.video_task, cfg.num_val, cfg.model.num_frames,
                                   cfg.model.image_size, cfg.data_seed, noise=cfg.video_noise)
  return pipeline.digits_source("val", cfg.num_val, cfg.model.image_size, cfg.data_seed)


def inputs(batch: dict):
  """The model input of a batch: 'video' for video sources, 'image' for image ones."""
  return batch["video"] if "video" in batch else batch["image"]
