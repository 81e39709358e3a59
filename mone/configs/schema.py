"""The training config: one frozen dataclass (`TrainConfig`) whose fields are checked when it is
made, and the `key=value` overrides that change it (`model.depth=4` reaches into the model config,
`model=B/16` swaps the variant). Unknown keys and out-of-range values are rejected with an error
naming them before anything is written. The named starting points are `mone.configs.recipes`.
"""
import ast
import dataclasses
import types
import typing

from mone import capacity as capacity_lib
from mone.data.moving_digits import NUM_CLASSES
from mone.models import config as model_config
from mone.models import kinds
from mone.models.config import ViTConfig, ViViTConfig

# Adaptive training samples e_c uniformly from these each step (paper Sec. 5).
ADAPTIVE_E_C = (0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95)
DATASETS = ("digits", "tfds", "moving_digits", "tfds_video")
VIDEO_DATASETS = ("moving_digits", "tfds_video")
SHARDINGS = ("data", "fsdp")
DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """One training run's config. Beside its fields, `model_kind`: the `mone.models.kinds.Kind` that
  `kind` names for `model`'s modality, resolved once when the config is made."""
  name: str
  model: ViTConfig | ViViTConfig
  kind: str = "mone"          # vit | matvit | mod | mone (`mone.models.kinds`)
  e_c: float | None = 0.4     # MoNE's training capacity (ignored with adaptive)
  adaptive: bool = False      # MoNE: sample e_c from adaptive_e_c every step
  # The budgets adaptive training samples from (paper: ADAPTIVE_E_C). Fewer distinct budgets
  # compile fewer train steps (the smoke profile uses two). Left out of the config hash at
  # its default, so adding the field renamed no run file.
  adaptive_e_c: tuple = dataclasses.field(default=ADAPTIVE_E_C, metadata={"hash_omit_default": True})
  allocation: str = capacity_lib.EQ3  # capacity allocation across experts (Table 1); "mone" = Eq. 3
  eval_e_c: tuple = ()        # further inference capacities to evaluate (Fig. 5)
  dataset: str = "digits"     # images: "digits" (embedded) | "tfds"; videos: "moving_digits" | "tfds_video"
  video_task: str = "temporal"  # moving_digits: "appearance" (~Kinetics) | "temporal" (~SSv2)
  # moving_digits: i.i.d. Gaussian pixel noise in every frame (standard deviation, fraction of the
  # pixel range): a difficulty knob for calibrating the temporal task. Unhashed at its default 0.
  video_noise: float = dataclasses.field(default=0.0, metadata={"hash_omit_default": True})
  num_clips: int = 1          # eval clips per video (the paper's "8x1" is 8)
  frame_stride: int = 2       # tfds_video: frames skipped between sampled frames
  flip: bool = True           # tfds_video: random horizontal flips (False for SSv2: labels say left/right)
  tfds_name: str = ""
  data_dir: str = dataclasses.field(default="", metadata={"hash_omit": True})  # where, not what: unhashed
  train_split: str = "train"
  eval_split: str = "validation"
  num_train: int = 10000      # embedded dataset sizes
  num_test: int = 2000
  # digits, moving_digits: validation images (clips), from MNIST digits the training set then
  # leaves out (`mone.data.mnist.mnist_pool`); 0 = no validation split (the first profiles).
  num_val: int = dataclasses.field(default=0, metadata={"hash_omit_default": True})
  data_seed: int = 0          # the embedded dataset is a function of this seed
  batch_size: int = 128
  eval_batch_size: int = 256
  steps: int = 1500           # with iso_flops: the dense baseline's steps
  iso_flops: bool = False     # train until the dense ViT's training FLOPs are spent (Sec. 5)
  lr: float = 1e-3
  weight_decay: float = 1e-4
  warmup_steps: int = 100
  label_smoothing: float = 0.0
  grad_clip: float = 1.0
  mixup_alpha: float = 0.0
  randaugment: tuple | None = None  # (num_ops, magnitude) for TFDS images
  seed: int = 0
  init_from: str = ""         # workdir of a finished run to initialise from (MatViT -> MoNE)
  num_devices: int = 0        # data-parallel devices; 0 = all local devices
  # How parameters and optimizer state are laid out over the devices: "data" (replicated) or
  # "fsdp" (each array split over the data axis along its largest divisible dimension, as
  # big_vision's fsdp rule; XLA gathers them where the step needs them).
  sharding: str = dataclasses.field(default="data", metadata={"hash_omit_default": True})
  # Gradient accumulation: each step averages the gradients of grad_accum micro-batches of
  # batch_size / grad_accum examples (the same update with less activation memory).
  grad_accum: int = dataclasses.field(default=1, metadata={"hash_omit_default": True})
  # The compute dtype: "bfloat16" runs the model's matmuls and activations in bfloat16 (fast
  # on GPUs and TPUs) on a bfloat16 copy of the float32 parameters, made inside the step; the
  # parameters, their gradients, the optimizer state and the loss stay float32.
  dtype: str = dataclasses.field(default="float32", metadata={"hash_omit_default": True})
  # Rematerialise every transformer block: its activations are recomputed in the backward
  # pass instead of stored (less memory per example, about one more forward of compute).
  remat: bool = dataclasses.field(default=False, metadata={"hash_omit_default": True})
  # How a run reports and checkpoints, not what it computes: none of these is hashed, so a run
  # trained elsewhere (another data_dir, log interval or checkpoint cadence) is found by its hash.
  log_every: int = dataclasses.field(default=25, metadata={"hash_omit": True})
  # Every eval_every steps (0: never) the run records a learning-curve point (`curve` in its
  # metrics): mean training loss since the last point, accuracy on a fixed subset of training
  # images and on the validation split. Reporting only, like log_every.
  eval_every: int = dataclasses.field(default=0, metadata={"hash_omit": True})
  # In the last quarter of the steps, a learning-curve point every tail_eval_every steps as well (0:
  # eval_every's alone): a plateau read as the slope of that quarter's points errs less with more of
  # them (`mone.runs.recalibration`). Reporting only: every point is drawn after the step it follows.
  tail_eval_every: int = dataclasses.field(default=0, metadata={"hash_omit": True})
  checkpoint_every: int = dataclasses.field(default=250, metadata={"hash_omit": True})
  keep_checkpoints: int = dataclasses.field(default=2, metadata={"hash_omit": True})

  def __post_init__(self):
    def need(ok, msg):
      if not ok:
        raise ValueError(f"config {self.name!r}: {msg}")
    try:
      kind = kinds.lookup(self.kind, self.model)  # for the model's modality: MoD is image-only
    except ValueError as e:
      raise ValueError(f"config {self.name!r}: {e}") from None
    # Resolved once, here, and passed down with the config (`model_kind`): not a field, so it is not
    # hashed, compared or recorded; dataclasses.replace resolves it again for the new config.
    object.__setattr__(self, "model_kind", kind)
    need(self.allocation in capacity_lib.ALLOCATIONS,
         f"allocation must be one of {capacity_lib.ALLOCATIONS}, got {self.allocation!r}")
    kind.check(self, need)  # e_c, adaptive and their budgets
    for f in ("batch_size", "eval_batch_size", "steps", "log_every", "checkpoint_every",
              "keep_checkpoints", "num_train", "num_test"):
      need(isinstance(getattr(self, f), int) and getattr(self, f) >= 1,
           f"{f} must be an integer >= 1, got {getattr(self, f)!r}")
    need(self.lr > 0, f"lr must be > 0, got {self.lr}")
    need(self.weight_decay >= 0, f"weight_decay must be >= 0, got {self.weight_decay}")
    need(0 <= self.label_smoothing < 1, f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
    need(self.grad_clip > 0, f"grad_clip must be > 0, got {self.grad_clip}")
    need(self.mixup_alpha >= 0, f"mixup_alpha must be >= 0, got {self.mixup_alpha}")
    need(self.warmup_steps >= 0, f"warmup_steps must be >= 0, got {self.warmup_steps}")
    need(self.num_devices >= 0, f"num_devices must be >= 0, got {self.num_devices}")
    need(self.sharding in SHARDINGS, f"sharding must be one of {SHARDINGS}, got {self.sharding!r}")
    need(self.dtype in DTYPES, f"dtype must be one of {DTYPES}, got {self.dtype!r}")
    need(isinstance(self.remat, bool), f"remat must be True or False, got {self.remat!r}")
    need(isinstance(self.grad_accum, int) and self.grad_accum >= 1 and self.batch_size % self.grad_accum == 0,
         f"grad_accum must be an integer >= 1 dividing batch_size={self.batch_size}, got {self.grad_accum!r}")
    for f in ("num_val", "eval_every", "tail_eval_every"):
      need(isinstance(getattr(self, f), int) and getattr(self, f) >= 0,
           f"{f} must be an integer >= 0, got {getattr(self, f)!r}")
    need(self.tail_eval_every == 0 or self.eval_every > 0,
         f"tail_eval_every adds learning-curve points to eval_every's; set eval_every > 0, got {self.eval_every}")
    need(self.num_val == 0 or self.dataset in ("digits", "moving_digits"),
         f"num_val (a validation split) is for the embedded datasets (digits, moving_digits), "
         f"got dataset={self.dataset}")
    need(self.dataset in DATASETS, f"dataset must be one of {DATASETS}, got {self.dataset!r}")
    need(isinstance(self.video_noise, (int, float)) and 0 <= self.video_noise <= 1,
         f"video_noise must be in [0, 1], got {self.video_noise!r}")
    need(self.video_noise == 0 or self.dataset == "moving_digits",
         f"video_noise is for the moving_digits dataset, got dataset={self.dataset}")
    video = self.dataset in VIDEO_DATASETS
    need(isinstance(self.model, ViViTConfig) == video,
         f"dataset={self.dataset} needs a {'ViViTConfig (config.vivit)' if video else 'ViTConfig (config.vit)'}")
    need(not video or self.mixup_alpha == 0, "mixup_alpha is for image datasets")
    need(self.num_clips >= 1 and self.frame_stride >= 1, "num_clips and frame_stride must be >= 1")
    if self.dataset == "digits":
      need(self.model.num_classes == 10, f"the digits dataset has 10 classes; model.num_classes="
           f"{self.model.num_classes}")
    elif self.dataset == "moving_digits":
      need(self.video_task in NUM_CLASSES, f"video_task must be one of {sorted(NUM_CLASSES)}, "
           f"got {self.video_task!r}")
      need(self.model.num_classes == NUM_CLASSES[self.video_task],
           f"moving_digits/{self.video_task} has {NUM_CLASSES[self.video_task]} classes; "
           f"model.num_classes={self.model.num_classes}")
    else:
      # data_dir is checked where the data is opened (train.check_data): a paper config must be
      # buildable without one, to be completed by an override.
      need(bool(self.tfds_name), f"dataset={self.dataset} needs tfds_name")
    need(self.randaugment is None or (len(self.randaugment) == 2 and self.randaugment[0] >= 0),
         f"randaugment must be None or (num_ops, magnitude), got {self.randaugment!r}")

  def budget(self, e_c: float | None = None) -> capacity_lib.Budget:
    """This config's allocation at e_c (default: its training e_c), as `capacity.budget`
    makes it: the capacities and whether the smallest expert is dropped."""
    return capacity_lib.budget(self.allocation, self.e_c if e_c is None else e_c, self.model.num_experts)


# --------------------------------------------------------------------- overrides ---


def _parse_value(key: str, raw: str, typ):
  if raw in ("None", "none", "null"):
    value = None
  elif raw.lower() in ("true", "false"):
    value = raw.lower() == "true"
  else:
    try:
      value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
      value = raw  # a plain string
  allowed = typing.get_args(typ) if isinstance(typ, types.UnionType) or typing.get_origin(typ) else (typ,)
  allowed = tuple(typing.get_origin(a) or a for a in allowed)
  if isinstance(value, list):
    value = tuple(value)
  if float in allowed and isinstance(value, int) and not isinstance(value, bool):
    value = float(value)
  if tuple in allowed and isinstance(value, (int, float)):
    value = (value,)
  if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
    names = " or ".join(getattr(a, "__name__", str(a)) for a in allowed)
    raise ValueError(f"{key} must be {names}, got {raw!r}")
  return value


def apply_overrides(cfg: TrainConfig, overrides) -> TrainConfig:
  """Applies 'key=value' strings (or a dict) to a TrainConfig, validating as it goes."""
  items = overrides.items() if isinstance(overrides, dict) else [_split(o) for o in overrides]
  top = {f.name: f for f in dataclasses.fields(TrainConfig)}
  mfields = {f.name: f for f in dataclasses.fields(type(cfg.model))}
  changes, model_changes, variant = {}, {}, None
  for key, raw in items:
    if key == "model":
      variant = str(raw)
    elif key.startswith("model."):
      sub = key[len("model."):]
      if sub == "name":  # a label: changing it alone would call an S/16 a B/16
        raise ValueError(f"model.name is the variant's label, not an override; to change the model's "
                         f"size use model=VARIANT (e.g. model=B/16), got {key}={raw}")
      if sub not in mfields:
        raise ValueError(f"unknown config key {key!r}; model keys: {sorted(mfields)}")
      model_changes[sub] = _parse_value(key, raw, mfields[sub].type) if isinstance(raw, str) else raw
    elif key in top:
      changes[key] = _parse_value(key, raw, top[key].type) if isinstance(raw, str) else raw
    else:
      raise ValueError(f"unknown config key {key!r}; known keys: {sorted(set(top) - {'model'})} "
                       f"and model.<{'|'.join(sorted(mfields))}>")
  model = cfg.model
  if variant is not None:
    # A new size keeps what the recipe fixed about the data and the classifier: its classes,
    # resolution, frames and classifier init (`--config ssv2 model=L/16x2` keeps 174 classes at
    # 256 px). Set them with model.<key>=... after the variant to change them too.
    video = isinstance(model, ViViTConfig)
    keep = {k: getattr(model, k) for k in ("num_classes", "image_size", "head_zeroinit") + (("num_frames",) if video else ())}
    make = model_config.vivit if video else model_config.vit
    model = make(variant, **keep)
  if model_changes:
    model = dataclasses.replace(model, **model_changes)
  return dataclasses.replace(cfg, model=model, **changes)


def _split(item: str):
  key, sep, value = item.partition("=")
  if not sep or not key:
    raise ValueError(f"overrides must look like key=value, got {item!r}")
  return key.strip(), value.strip()


def from_json(d: dict) -> TrainConfig:
  """The TrainConfig a run file records (its "config", as `mone.results` writes it). Fields a
  run file predates take their defaults, which is what those runs trained with (`_added`)."""
  def tuples(v):
    return tuple(tuples(x) for x in v) if isinstance(v, list) else v
  fields = {k: tuples(v) for k, v in d.items()}
  video = fields.get("dataset", "digits") in VIDEO_DATASETS
  model = (ViViTConfig if video else ViTConfig)(**{k: tuples(v) for k, v in fields.pop("model").items()})
  return TrainConfig(model=model, **fields)
