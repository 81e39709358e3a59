"""Train and evaluate ViT, MatViT, MoD and MoNE with one loop.

  python -m mone.train --config smoke --workdir /tmp/smoke
  python -m mone.train --config digits --workdir /tmp/mone04 kind=mone e_c=0.4
  python -m mone.train --config imagenet21k --workdir /ckpt/run1 model=B/16 data_dir=...
  python -m mone.train --config path/to/my_config.py --workdir /tmp/run   # defines get_config()

The run writes WORKDIR/metrics.json atomically at the end and checkpoints to
WORKDIR/checkpoints; rerunning the same command resumes from the last good checkpoint
and ends with the same metrics an uninterrupted run would have (data order, dropout-free
model and per-step RNG are all functions of (seed, step)).
"""
import json
import logging
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from tqdm import (
  tqdm,  # plain: tqdm.auto warns (with local paths) in notebooks lacking ipywidgets
)

from mone import results
from mone.data import pipeline, sources
from mone.train import checkpoints, evaluation, sharding, steps
from mone.train.recipes import TrainConfig

log = logging.getLogger("mone.train")


def train(cfg: TrainConfig, workdir, *, progress: bool = True) -> dict:
  """Trains (resuming from workdir if it holds checkpoints), evaluates, writes metrics.json."""
  workdir = Path(workdir)
  t0 = time.time()
  mesh = sharding.make_mesh(cfg)
  n_dev = mesh.devices.size
  if cfg.batch_size % n_dev or cfg.eval_batch_size % n_dev:
    raise ValueError(f"batch_size={cfg.batch_size} and eval_batch_size={cfg.eval_batch_size} must be "
                     f"divisible by the number of devices ({n_dev})")
  train_src, test_src = sources.data_sources(cfg)
  model = steps.build_model(cfg)
  total_steps = steps.num_train_steps(cfg)
  tx = steps.make_optimizer(cfg, total_steps)
  sample = jnp.zeros(steps.input_shape(cfg))
  params = steps.init_params(cfg, model, sample)
  replicated = NamedSharding(mesh, P())
  state = jax.device_put({"params": params, "opt_state": tx.init(params), "step": jnp.int32(0)}, replicated)
  history = []

  workdir.mkdir(parents=True, exist_ok=True)
  results.atomic_write_json(workdir / "config.json", {"config": cfg, "config_hash": results.config_hash(cfg)})
  mngr = checkpoints.manager(workdir, cfg)
  restored, start = checkpoints.restore_latest(mngr, {"state": state})
  if restored is not None:
    state = jax.device_put(restored["state"], replicated)
    history = [tuple(h) for h in restored["history"]["history"]]
    log.info("resumed %s from step %d", workdir, start)

  import orbax.checkpoint as ocp
  step_fn = steps.make_train_step(cfg, model, tx)
  batches = pipeline.train_batches(train_src, cfg.batch_size, cfg.seed, start_step=start,
                                   num_steps=total_steps, mixup_alpha=cfg.mixup_alpha,
                                   num_classes=cfg.model.num_classes)
  watch = Progress(workdir / "metrics.jsonl", cfg, total_steps, start)
  bar = tqdm(total=total_steps, initial=start, desc=f"{cfg.name}:{cfg.kind}", disable=not progress,
             dynamic_ncols=True, leave=False)
  try:
    for step, batch in batches:
      feed = {"image": sharding.shard(mesh, sources.inputs(batch)),
              "soft_label": sharding.shard(mesh, batch["soft_label"])}
      state, loss = step_fn(state, feed, steps.train_budget(cfg, step))
      done = step + 1
      if done % cfg.log_every == 0 or done == total_steps:
        loss = float(loss)
        if not math.isfinite(loss):
          raise FloatingPointError(f"loss became {loss} at step {done}; stopping (last good "
                                   f"checkpoint: step {mngr.latest_step()})")
        history.append((done, loss))
        bar.set_postfix(loss=f"{loss:.3f}")
        watch.log(done, loss)
      bar.update(1)
      if done % cfg.checkpoint_every == 0 or done == total_steps:
        mngr.save(done, args=ocp.args.Composite(state=ocp.args.StandardSave(state),
                                                history=ocp.args.JsonSave({"history": history})))
  finally:
    batches.close()
    bar.close()
  mngr.wait_until_finished()

  evals = [evaluation.evaluate(cfg, model, state["params"], test_src, e_c=e, width_index=w, mesh=mesh)
           for e, w in evaluation.eval_points(cfg)]
  metrics = {
      "name": cfg.name, "kind": cfg.kind, "seed": cfg.seed, "config": cfg,
      "config_hash": results.config_hash(cfg), "e_c": cfg.e_c if cfg.kind == "mone" else None,
      "accuracy": evals[0]["accuracy"], "gflops": evals[0]["gflops"], "evals": evals,
      "train_steps": total_steps, "train_gflops": 3 * steps.train_step_gflops(cfg) * cfg.batch_size * total_steps,
      "final_loss": history[-1][1] if history else None, "history": history,
      "wall_time_s": round(time.time() - t0, 1), "resumed_from_step": start,
      "peak_rss_mib": round(results.peak_rss_mib(), 1),
      **results.provenance()}
  results.atomic_write_json(workdir / "metrics.json", metrics)
  return metrics


class Progress:
  """What a long run reports as it goes, every `log_every` steps: a log line (step, loss,
  learning rate, examples/s, ETA) and the same as one JSON line appended to WORKDIR/metrics.jsonl,
  so a run can be watched (`tail -f`) or plotted before it ends. A resumed run appends after the
  lines its first attempt wrote; a step logged twice (between the last checkpoint and a kill) is
  read from its last line."""

  def __init__(self, path, cfg: TrainConfig, total_steps: int, start: int):
    self.path, self.cfg, self.total = Path(path), cfg, total_steps
    self.lr = steps.learning_rate(cfg, total_steps)
    self.last_step, self.last_time = start, time.time()

  def log(self, step: int, loss: float) -> dict:
    now = time.time()
    rate = (step - self.last_step) * self.cfg.batch_size / max(now - self.last_time, 1e-9)
    eta = (self.total - step) * self.cfg.batch_size / rate if rate > 0 else None
    line = {"step": step, "train_loss": loss, "lr": float(self.lr(step)), "examples_per_s": round(rate, 1),
            "eta_s": None if eta is None else round(eta, 1), "time": round(now, 3)}
    with open(self.path, "a") as f:
      f.write(json.dumps(line) + "\n")
    log.info("step %d/%d: loss %.4f, lr %.3g, %.0f examples/s, ETA %s", step, self.total, loss, line["lr"], rate,
             "-" if eta is None else f"{eta / 60:.1f} min")
    self.last_step, self.last_time = step, now
    return line
