"""What one training step needs: the model of a config, its budget at a step, FLOPs,
parameters, the optimizer and the jitted update. What differs between the model kinds is
asked of the config's kind (`TrainConfig.model_kind`, resolved once per config)."""
import logging

import jax
import jax.numpy as jnp
import optax

from mone.data import pipeline
from mone.models import kinds, layers
from mone.models.config import ViViTConfig
from mone.train import checkpoints
from mone.configs.schema import TrainConfig

log = logging.getLogger("mone.train")


def build_model(cfg: TrainConfig):
  """The Flax module of the config's kind: ViT-family for images, ViViT-FE for videos."""
  return cfg.model_kind.build(cfg.model, remat=cfg.remat)


def input_shape(cfg: TrainConfig, batch: int = 1) -> tuple:
  m = cfg.model
  frames = (m.num_frames,) if isinstance(m, ViViTConfig) else ()
  return (batch, *frames, m.image_size, m.image_size, m.channels)


def train_budget(cfg: TrainConfig, step: int):
  """This step's budget (`capacity.Budget`, static under jit): the config's e_c, or (adaptive)
  one drawn from cfg.adaptive_e_c; None for a model without routing."""
  return cfg.model_kind.train_budget(cfg, step)


def init_params(cfg: TrainConfig, model, sample_images):
  kind, budget = cfg.model_kind, train_budget(cfg, 0)
  rngs = {"params": jax.random.key(cfg.seed), "routing": jax.random.key(cfg.seed + 1)}
  # jit: run op by op, init would compile hundreds of tiny programs (seconds per process).
  params = jax.jit(lambda r, x: kind.init(model, r, x, budget))(rngs, sample_images)["params"]
  if cfg.init_from:  # e.g. MoNE from a MatViT checkpoint: shared weights load, router/alpha stay fresh
    loaded = checkpoints.load_params(cfg.init_from)
    missing = sorted(set(params) - set(loaded))
    params = {k: loaded.get(k, v) for k, v in params.items()}
    log.info("initialised from %s; fresh: %s", cfg.init_from, missing)
  return params


def learning_rate(cfg: TrainConfig, total_steps: int):
  """The schedule (step -> learning rate): linear warmup, then cosine decay to 1% of cfg.lr."""
  return optax.warmup_cosine_decay_schedule(
      0.0, cfg.lr, min(cfg.warmup_steps, max(total_steps - 1, 1)), max(total_steps, 2), cfg.lr * 0.01)


def make_optimizer(cfg: TrainConfig, total_steps: int):
  schedule = learning_rate(cfg, total_steps)
  decay_mask = lambda params: jax.tree_util.tree_map(lambda p: p.ndim >= 2, params)  # kernels only
  return optax.chain(optax.clip_by_global_norm(cfg.grad_clip),
                     optax.adamw(schedule, b1=0.9, b2=0.999, weight_decay=cfg.weight_decay,
                                 mask=decay_mask))


def to_compute_dtype(cfg: TrainConfig, tree):
  """The floating arrays of `tree` in the config's compute dtype (a no-op for float32)."""
  return layers.cast_floating(tree, cfg.dtype)


def logits(cfg, model, params, images, budget, rng, width_index=None):
  """(logits [B, classes] in float32, aux) of the model at (budget, width_index), computed in
  cfg.dtype: the models follow their inputs' dtype, so parameters and images are cast, and the
  logits cast back for a float32 loss and argmax. uint8 inputs (videos, kept uint8 up to the
  device) are mapped to [-1, 1] first."""
  params, images = to_compute_dtype(cfg, (params, pipeline.to_unit_range(images)))
  out, aux = cfg.model_kind.apply(model, {"params": params}, images, budget, width_index, rng)
  return out.astype(jnp.float32), aux


def make_train_step(cfg: TrainConfig, model, tx, state_shardings=None):
  """The jitted update (state, batch, budget) -> (state, loss). state_shardings (from
  `sharding.shardings`) keeps the updated state laid out as the input (fsdp stays sharded)."""
  kind = cfg.model_kind

  def loss_fn(params, batch, rng, budget):
    targets = optax.smooth_labels(batch["soft_label"], cfg.label_smoothing)

    def loss_at(width_index):  # one forward pass; MatViT's loss averages one per nested width
      out, _ = logits(cfg, model, params, batch["image"], budget, rng, width_index)
      return optax.softmax_cross_entropy(out, targets).mean()
    return kind.loss(cfg.model, loss_at)

  def loss_and_grads(params, batch, rng, budget):
    if cfg.grad_accum == 1:
      return jax.value_and_grad(loss_fn)(params, batch, rng, budget)
    # Micro-batch j takes rows j, j + k, j + 2k, ...: every device keeps its own rows (the batch is
    # split over devices in contiguous blocks), and equal micro-batches average to the batch mean.
    k = cfg.grad_accum
    micro = jax.tree_util.tree_map(lambda x: x.reshape(x.shape[0] // k, k, *x.shape[1:]).swapaxes(0, 1), batch)

    def add(total, j_batch):
      j, mb = j_batch
      loss, grads = jax.value_and_grad(loss_fn)(params, mb, jax.random.fold_in(rng, j), budget)
      return jax.tree_util.tree_map(jnp.add, total, (loss, grads)), None

    zero = (jnp.zeros((), jnp.float32), jax.tree_util.tree_map(jnp.zeros_like, params))
    (loss, grads), _ = jax.lax.scan(add, zero, (jnp.arange(k), micro))
    return loss / k, jax.tree_util.tree_map(lambda g: g / k, grads)

  def step(state, batch, budget):
    rng = jax.random.fold_in(jax.random.key(cfg.seed), state["step"])
    loss, grads = loss_and_grads(state["params"], batch, rng, budget)
    updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    return {"params": params, "opt_state": opt_state, "step": state["step"] + 1}, loss

  out = {} if state_shardings is None else {"out_shardings": (state_shardings, None)}
  return jax.jit(step, static_argnames="budget", donate_argnums=0, **out)
