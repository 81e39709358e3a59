"""Train and evaluate ViT, MatViT, MoD and MoNE with one loop.

  python -m mone.train --config smoke --workdir /tmp/smoke
  python -m mone.train --config digits --workdir /tmp/mone04 kind=mone e_c=0.4
  python -m mone.train --config imagenet21k --workdir gs://... model.name=B/16 data_dir=...

The run writes WORKDIR/metrics.json atomically at the end and checkpoints to
WORKDIR/checkpoints; rerunning the same command resumes from the last good checkpoint
and ends with the same metrics an uninterrupted run would have (data order, dropout-free
model and per-step RNG are all functions of (seed, step)).
"""
import argparse
import dataclasses
import functools
import logging
import math
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tqdm import tqdm  # plain: tqdm.auto warns (with local paths) in notebooks lacking ipywidgets

from mone import configs, flops, models, results
from mone.config import ViViTConfig
from mone.configs import TrainConfig

log = logging.getLogger("mone.train")

# ---------------------------------------------------------------- input pipeline ---


def check_data(cfg: TrainConfig):
  """A clear error, before anything is written, if a TFDS config has no usable data_dir."""
  if cfg.dataset in ("tfds", "tfds_video"):
    if not cfg.data_dir:
      raise ValueError(f"config {cfg.name!r}: dataset={cfg.dataset} ({cfg.tfds_name}) reads a prepared "
                       "TFDS data_dir; set data_dir=PATH")
    if not Path(cfg.data_dir).is_dir():
      raise ValueError(f"config {cfg.name!r}: data_dir={cfg.data_dir!r} is not a directory")


def data_sources(cfg: TrainConfig):
  """(train, test) sources for the config's dataset."""
  from mone import input_pipeline
  check_data(cfg)
  m = cfg.model
  if cfg.dataset == "digits":
    return input_pipeline.digits_sources(m.image_size, cfg.num_train, cfg.num_test, cfg.data_seed)
  if cfg.dataset == "tfds":
    mk = functools.partial(input_pipeline.TFDSImageSource, cfg.tfds_name, data_dir=cfg.data_dir,
                           image_size=m.image_size, seed=cfg.seed)
    return (mk(cfg.train_split, train=True, randaugment=cfg.randaugment),
            mk(cfg.eval_split, train=False))
  from mone import video_data
  if cfg.dataset == "moving_digits":
    return video_data.moving_digits_sources(cfg.video_task, m.num_frames, m.image_size,
                                            cfg.num_train, cfg.num_test, cfg.data_seed)
  if cfg.dataset == "tfds_video":
    mk = functools.partial(video_data.TFDSVideoSource, cfg.tfds_name, data_dir=cfg.data_dir,
                           num_frames=m.num_frames, stride=cfg.frame_stride, image_size=m.image_size,
                           seed=cfg.seed, flip=cfg.flip)
    return mk(cfg.train_split, train=True), mk(cfg.eval_split, train=False, num_clips=cfg.num_clips)
  raise ValueError(f"dataset must be one of {configs.DATASETS}, got {cfg.dataset!r}")


def build_model(cfg: TrainConfig):
  """The Flax module of the config's kind: ViT-family for images, ViViT-FE for videos."""
  if isinstance(cfg.model, ViViTConfig):
    from mone import vivit
    return vivit.make_video_model(cfg.model, cfg.kind)
  return models.make_model(cfg.model, cfg.kind)


def input_shape(cfg: TrainConfig, batch: int = 1) -> tuple:
  m = cfg.model
  frames = (m.num_frames,) if isinstance(m, ViViTConfig) else ()
  return (batch, *frames, m.image_size, m.image_size, m.channels)


def inputs(batch: dict):
  """The model input of a batch: 'video' for video sources, 'image' for image ones."""
  return batch["video"] if "video" in batch else batch["image"]


# ------------------------------------------------------------------------ model ---


def train_budget(cfg: TrainConfig, step: int):
  """This step's budget (`capacity.Budget`, static under jit): the config's e_c, or (adaptive)
  one drawn from ADAPTIVE_E_C; None for a model without routing."""
  if cfg.kind != "mone":
    return None
  e_c = cfg.e_c
  if cfg.adaptive:
    rng = np.random.default_rng([cfg.seed, step, 7])
    e_c = float(rng.choice(configs.ADAPTIVE_E_C))
  return cfg.budget(e_c)


def forward_gflops(cfg: TrainConfig, e_c: float | None = None, width_index: int | None = None) -> float:
  """Inference GFLOPs per example of the config's model at the given capacity."""
  m = cfg.model
  if cfg.kind == "mone":
    b = cfg.budget(e_c)
    return flops.gflops(m, "mone", capacities=b.capacities, drop_smallest=b.drop_smallest)
  if cfg.kind == "matvit" and width_index is not None:
    return flops.gflops(m, "matvit", m.expert_widths[width_index] / m.width)
  return flops.gflops(m, "mod" if cfg.kind == "mod" else "vit")


def train_step_gflops(cfg: TrainConfig) -> float:
  """Forward GFLOPs per training example, averaged over steps (adaptive e_c varies)."""
  if cfg.kind == "matvit":  # joint loss: every nested width runs forward
    return sum(forward_gflops(cfg, width_index=j) for j in range(cfg.model.num_experts))
  if cfg.kind == "mone" and cfg.adaptive:
    return float(np.mean([forward_gflops(cfg, e) for e in configs.ADAPTIVE_E_C]))
  return forward_gflops(cfg, cfg.e_c)


def num_train_steps(cfg: TrainConfig) -> int:
  """cfg.steps, or with iso_flops the steps that spend the dense ViT's training FLOPs."""
  if not cfg.iso_flops:
    return cfg.steps
  dense = flops.gflops(cfg.model, "vit")
  return int(math.ceil(cfg.steps * dense / train_step_gflops(cfg)))


def init_params(cfg: TrainConfig, model, sample_images):
  args = (train_budget(cfg, 0).capacities,) if cfg.kind == "mone" else ()
  rngs = {"params": jax.random.key(cfg.seed), "routing": jax.random.key(cfg.seed + 1)}
  # jit: run op by op, init would compile hundreds of tiny programs (seconds per process).
  params = jax.jit(lambda r, x: model.init(r, x, *args))(rngs, sample_images)["params"]
  if cfg.init_from:  # e.g. MoNE from a MatViT checkpoint: shared weights load, router/alpha stay fresh
    loaded = load_params(cfg.init_from)
    missing = sorted(set(params) - set(loaded))
    params = {k: loaded.get(k, v) for k, v in params.items()}
    log.info("initialised from %s; fresh: %s", cfg.init_from, missing)
  return params


def make_optimizer(cfg: TrainConfig, total_steps: int):
  schedule = optax.warmup_cosine_decay_schedule(
      0.0, cfg.lr, min(cfg.warmup_steps, max(total_steps - 1, 1)), max(total_steps, 2), cfg.lr * 0.01)
  decay_mask = lambda params: jax.tree_util.tree_map(lambda p: p.ndim >= 2, params)  # kernels only
  return optax.chain(optax.clip_by_global_norm(cfg.grad_clip),
                     optax.adamw(schedule, b1=0.9, b2=0.999, weight_decay=cfg.weight_decay,
                                 mask=decay_mask))


# ------------------------------------------------------------------ update step ---


def _logits(cfg, model, params, images, budget, rng, width_index=None):
  if cfg.kind == "mone":
    return model.apply({"params": params}, images, budget.capacities, drop_smallest=budget.drop_smallest,
                       rngs={"routing": rng})
  if cfg.kind == "matvit":
    return model.apply({"params": params}, images, width_index=width_index)
  return model.apply({"params": params}, images)


def make_train_step(cfg: TrainConfig, model, tx):
  def loss_fn(params, batch, rng, caps):
    targets = optax.smooth_labels(batch["soft_label"], cfg.label_smoothing)
    if cfg.kind == "matvit":  # MatFormer joint training: equal-weight loss over nested widths
      losses = [optax.softmax_cross_entropy(_logits(cfg, model, params, batch["image"], None, rng, j)[0],
                                            targets).mean() for j in range(cfg.model.num_experts)]
      return sum(losses) / len(losses)
    logits, _ = _logits(cfg, model, params, batch["image"], caps, rng)
    return optax.softmax_cross_entropy(logits, targets).mean()

  @functools.partial(jax.jit, static_argnames="caps", donate_argnums=0)
  def step(state, batch, caps):
    rng = jax.random.fold_in(jax.random.key(cfg.seed), state["step"])
    loss, grads = jax.value_and_grad(loss_fn)(state["params"], batch, rng, caps)
    updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    return {"params": params, "opt_state": opt_state, "step": state["step"] + 1}, loss

  return step


# ------------------------------------------------------------------- evaluation ---


def evaluate(cfg: TrainConfig, model, params, source, *, e_c=None, width_index=None,
             batch_size=None, keep_assignment=False, mesh=None):
  """Top-1 accuracy (precision@1) on a source, at inference capacity e_c (MoNE) or
  nested width width_index (MatViT). Returns a dict with accuracy, gflops and optionally
  the per-token expert assignment (MoNE) for visualisation."""
  from mone import input_pipeline
  caps = cfg.budget(e_c) if cfg.kind == "mone" else None
  mesh = mesh or make_mesh(cfg)
  bs = batch_size or cfg.eval_batch_size

  @functools.partial(jax.jit, static_argnames="caps")
  def eval_step(params, images, caps):
    rng = jax.random.key(cfg.seed + 2)
    if images.ndim == 6:  # [B, K clips, T, H, W, C]: the paper's multi-clip ("8x1") evaluation
      from mone import vivit
      fn = lambda clip: _logits(cfg, model, params, clip, caps, rng, width_index)[0]
      return jnp.argmax(vivit.multiclip_logits(fn, images), -1), None
    logits, aux = _logits(cfg, model, params, images, caps, rng, width_index)
    return jnp.argmax(logits, -1), aux.get("assignment")

  correct, total, assignments = 0, 0, []
  for batch in input_pipeline.eval_batches(source, bs):
    images = shard(mesh, inputs(batch))
    pred, assignment = eval_step(params, images, caps)
    valid = batch["valid"]
    correct += int(np.sum((np.asarray(pred) == batch["label"]) & valid))
    total += int(valid.sum())
    if keep_assignment and assignment is not None:
      assignments.append(np.asarray(assignment)[valid])
  out = {"e_c": e_c, "width_index": width_index, "accuracy": correct / total,
         "gflops": forward_gflops(cfg, e_c, width_index), "num_examples": total}
  if keep_assignment:
    out["assignment"] = np.concatenate(assignments) if assignments else None
  return out


def eval_points(cfg: TrainConfig):
  """The (e_c, width_index) pairs a finished run reports."""
  if cfg.kind == "matvit":
    return [(None, j) for j in range(cfg.model.num_experts)]
  if cfg.kind == "mone":
    train_e_c = () if cfg.adaptive else (cfg.e_c,)
    return [(e, None) for e in dict.fromkeys(train_e_c + tuple(cfg.eval_e_c))]
  return [(None, None)]


# ---------------------------------------------------------------- checkpointing ---


def _manager(workdir: Path, cfg: TrainConfig):
  import orbax.checkpoint as ocp
  return ocp.CheckpointManager(
      (workdir / "checkpoints").absolute(),
      options=ocp.CheckpointManagerOptions(max_to_keep=cfg.keep_checkpoints, create=True,
                                           enable_async_checkpointing=False))


def restore_latest(mngr, target):
  """Restores the newest checkpoint that reads back; a corrupt or truncated one is reported
  and skipped in favour of the previous good one. Returns (state or None, step)."""
  import orbax.checkpoint as ocp
  for step in sorted(mngr.all_steps(), reverse=True):
    try:
      state = mngr.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(target["state"]), history=ocp.args.JsonRestore()))
      return {"state": state.state, "history": state.history}, step
    except Exception as e:  # orbax raises many types for damaged files
      log.warning("checkpoint at step %d is unreadable (%s: %s); trying an older one",
                  step, type(e).__name__, str(e)[:200])
      print(f"mone.train: checkpoint at step {step} is corrupt or incomplete "
            f"({type(e).__name__}); falling back to an older one", file=sys.stderr)
  return None, 0


def load_params(workdir) -> dict:
  """Final parameters of a finished (or checkpointed) run in workdir."""
  import orbax.checkpoint as ocp
  path = (Path(workdir) / "checkpoints").absolute()
  mngr = ocp.CheckpointManager(path, options=ocp.CheckpointManagerOptions(read_only=True))
  if mngr.latest_step() is None:
    raise FileNotFoundError(f"init_from={workdir!s}: no checkpoint under {path}")
  restored = mngr.restore(mngr.latest_step(), args=ocp.args.Composite(state=ocp.args.StandardRestore()))
  return restored.state["params"]


# ------------------------------------------------------------------- multi-device ---


def make_mesh(cfg: TrainConfig) -> Mesh:
  """A 1-D data-parallel mesh over cfg.num_devices local devices (0 = all of them)."""
  devices = jax.devices()
  n = cfg.num_devices or len(devices)
  if n > len(devices):
    raise ValueError(f"num_devices={n} but only {len(devices)} devices are available")
  return Mesh(np.array(devices[:n]), ("data",))


def shard(mesh: Mesh, x):
  """Splits the batch axis over the mesh; parameters stay replicated."""
  sharding = NamedSharding(mesh, P("data"))
  if jax.process_count() > 1:  # each host feeds its own slice of the global batch
    return jax.make_array_from_process_local_data(sharding, x)
  return jax.device_put(x, sharding)


# -------------------------------------------------------------------- train loop ---


def train(cfg: TrainConfig, workdir, *, progress: bool = True) -> dict:
  """Trains (resuming from workdir if it holds checkpoints), evaluates, writes metrics.json."""
  workdir = Path(workdir)
  t0 = time.time()
  mesh = make_mesh(cfg)
  n_dev = mesh.devices.size
  if cfg.batch_size % n_dev or cfg.eval_batch_size % n_dev:
    raise ValueError(f"batch_size={cfg.batch_size} and eval_batch_size={cfg.eval_batch_size} must be "
                     f"divisible by the number of devices ({n_dev})")
  from mone import input_pipeline
  train_src, test_src = data_sources(cfg)
  model = build_model(cfg)
  total_steps = num_train_steps(cfg)
  tx = make_optimizer(cfg, total_steps)
  sample = jnp.zeros(input_shape(cfg))
  params = init_params(cfg, model, sample)
  replicated = NamedSharding(mesh, P())
  state = jax.device_put({"params": params, "opt_state": tx.init(params), "step": jnp.int32(0)}, replicated)
  history = []

  workdir.mkdir(parents=True, exist_ok=True)
  results.atomic_write_json(workdir / "config.json", {"config": cfg, "config_hash": results.config_hash(cfg)})
  mngr = _manager(workdir, cfg)
  restored, start = restore_latest(mngr, {"state": state})
  if restored is not None:
    state = jax.device_put(restored["state"], replicated)
    history = [tuple(h) for h in restored["history"]["history"]]
    log.info("resumed %s from step %d", workdir, start)

  import orbax.checkpoint as ocp
  step_fn = make_train_step(cfg, model, tx)
  batches = input_pipeline.train_batches(train_src, cfg.batch_size, cfg.seed, start_step=start,
                                         num_steps=total_steps, mixup_alpha=cfg.mixup_alpha,
                                         num_classes=cfg.model.num_classes)
  bar = tqdm(total=total_steps, initial=start, desc=f"{cfg.name}:{cfg.kind}", disable=not progress,
             dynamic_ncols=True, leave=False)
  try:
    for step, batch in batches:
      feed = {"image": shard(mesh, inputs(batch)), "soft_label": shard(mesh, batch["soft_label"])}
      state, loss = step_fn(state, feed, train_budget(cfg, step))
      done = step + 1
      if done % cfg.log_every == 0 or done == total_steps:
        loss = float(loss)
        if not math.isfinite(loss):
          raise FloatingPointError(f"loss became {loss} at step {done}; stopping (last good "
                                   f"checkpoint: step {mngr.latest_step()})")
        history.append((done, loss))
        bar.set_postfix(loss=f"{loss:.3f}")
      bar.update(1)
      if done % cfg.checkpoint_every == 0 or done == total_steps:
        mngr.save(done, args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                history=ocp.args.JsonSave({"history": history})))
  finally:
    batches.close()
    bar.close()
  mngr.wait_until_finished()

  evals = [evaluate(cfg, model, state["params"], test_src, e_c=e, width_index=w, mesh=mesh)
           for e, w in eval_points(cfg)]
  metrics = {
      "name": cfg.name, "kind": cfg.kind, "seed": cfg.seed, "config": cfg,
      "config_hash": results.config_hash(cfg), "e_c": cfg.e_c if cfg.kind == "mone" else None,
      "accuracy": evals[0]["accuracy"], "gflops": evals[0]["gflops"], "evals": evals,
      "train_steps": total_steps, "train_gflops": 3 * train_step_gflops(cfg) * cfg.batch_size * total_steps,
      "final_loss": history[-1][1] if history else None, "history": history,
      "wall_time_s": round(time.time() - t0, 1), "resumed_from_step": start,
      "peak_rss_mib": round(results.peak_rss_mib(), 1),
      **results.provenance()}
  results.atomic_write_json(workdir / "metrics.json", metrics)
  return metrics


# --------------------------------------------------------------------------- CLI ---


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m mone.train", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--config", required=True, help=f"one of {sorted(configs.CONFIGS)}")
  parser.add_argument("--workdir", required=True, help="checkpoints and metrics.json go here")
  parser.add_argument("--distributed", action="store_true", help="call jax.distributed.initialize()")
  parser.add_argument("--quiet", action="store_true", help="no progress bar")
  parser.add_argument("overrides", nargs="*", metavar="key=value",
                      help="config overrides, e.g. kind=mone e_c=0.4 model.depth=4")
  args = parser.parse_args(argv)
  try:  # validate everything before touching the workdir
    cfg = configs.get_config(args.config, args.overrides)
    check_data(cfg)
  except ValueError as e:
    parser.error(str(e))
  if args.distributed:
    jax.distributed.initialize()
  logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
  logging.getLogger("absl").setLevel(logging.WARNING)  # orbax logs every save at INFO
  metrics = train(cfg, args.workdir, progress=not args.quiet)
  for ev in metrics["evals"]:
    where = f"e_c={ev['e_c']}" if ev["e_c"] is not None else (
        f"width_index={ev['width_index']}" if ev["width_index"] is not None else cfg.kind)
    print(f"{cfg.name} {cfg.kind} {where}: accuracy={ev['accuracy']:.4f} gflops={ev['gflops']:.5f}")
  print(f"wrote {Path(args.workdir) / 'metrics.json'}")


if __name__ == "__main__":
  main()
