"""Train and evaluate ViT, MatViT, MoD and MoNE with one loop.

  python -m mone.train --config smoke --workdir /tmp/smoke
  python -m mone.train --config digits --workdir /tmp/mone04 kind=mone e_c=0.4
  python -m mone.train --config imagenet21k --workdir /ckpt/run1 model=B/16 data_dir=...
  python -m mone.train --config path/to/my_config.py --workdir /tmp/run   # defines get_config()

The run writes WORKDIR/metrics.json atomically at the end and checkpoints to WORKDIR/checkpoints;
rerunning the same command resumes from the last good checkpoint and ends with the same metrics an
uninterrupted run would have (data order, dropout-free model and per-step RNG are all functions of
(seed, step)). Beside `device` and `versions` (`results.provenance`), metrics.json records where the
run trained, outside the config hash: `trained_on`, one {"device", "matmul_precision", "code",
"from_step", "to_step"} part per process that trained steps (from_step, to_step], kept in the
checkpoints across resumes, and `matmul_precision`, this process's (`_where`; MONE_MATMUL_PRECISION
sets it). `code` (`results.code_provenance`: git commit, whether mone/ had uncommitted changes,
XLA_FLAGS, jax and jaxlib versions, CPU model, the instruction set XLA:CPU compiled for) is at the
top level for the process that wrote the file, and in each part for the process that trained it:
a retrained run is only compared with runs of its own code, and a resumed run can span code
versions and machines. Parts and run files written before it was recorded have no `code`.
"""
import json
import logging
import math
import shutil
import subprocess
import time

import jax
import jax.numpy as jnp
from tqdm import (
  tqdm,  # plain: tqdm.auto warns (with local paths) in notebooks lacking ipywidgets
)

from mone import flops, results
from mone.data import pipeline, sources
from mone.models import kinds
from mone.train import checkpoints, evaluation, sharding, steps
from mone.configs.schema import TrainConfig

log = logging.getLogger("mone.train")
# The learning curve's accuracies go to a logger of their own, so that a caller can keep them out
# of its log: the training queue does for a seed plan's runs, read only all together.
CURVE_LOG = "mone.train.curve"
curve_log = logging.getLogger(CURVE_LOG)


def train(cfg: TrainConfig, workdir, *, progress: bool = True) -> dict:
  """Trains (resuming from workdir if it holds checkpoints), evaluates, writes metrics.json."""
  workdir = results.as_path(workdir)  # local, or any etils.epath location (gs://...)
  apply_matmul_precision()
  t0 = time.time()
  lead = jax.process_index() == 0  # in a multi-process run, only process 0 writes files and logs
  mesh = sharding.make_mesh(cfg)
  n_dev = mesh.devices.size
  if cfg.batch_size % (n_dev * cfg.grad_accum) or cfg.eval_batch_size % n_dev:
    raise ValueError(f"batch_size={cfg.batch_size} must be divisible by the number of devices ({n_dev}) times "
                     f"grad_accum ({cfg.grad_accum}), and eval_batch_size={cfg.eval_batch_size} by the devices")
  train_src, test_src = sources.data_sources(cfg)
  model = steps.build_model(cfg)
  total_steps = flops.num_train_steps(cfg)
  tx = steps.make_optimizer(cfg, total_steps)
  sample = jnp.zeros(steps.input_shape(cfg))
  params = steps.init_params(cfg, model, sample)
  state = sharding.place(mesh, {"params": params, "opt_state": tx.init(params), "step": jnp.int32(0)}, cfg.sharding)
  history, curve = [], []

  workdir.mkdir(parents=True, exist_ok=True)
  if lead:
    results.atomic_write_json(workdir / "config.json", {"config": cfg, "config_hash": results.config_hash(cfg)})
  mngr = checkpoints.manager(workdir, cfg)
  restored, start = checkpoints.restore_latest(mngr, {"state": state})
  # Wall time of the earlier parts of a resumed run, up to their last checkpoint (work redone after
  # a kill counts once, in the part that redoes it). Checkpoints of older code did not keep it:
  # then wall_time_s counts from `timed_from_step`, the step this part resumed from.
  elapsed_before, timed_from = 0.0, 0
  # Every process that trained part of the run: its device and float32 matmul precision, and its
  # steps (a part ends at the last checkpoint the next part resumed from: later work was redone).
  # A checkpoint of older code keeps no list: its part is "unrecorded"; one written before parts
  # recorded their `code` keeps its parts without it. Git is read once, here: this part and the run
  # file's `code` say the same, even if a commit lands while this process trains.
  code = results.code_provenance()
  segment = {**_where(), "code": code, "from_step": start, "to_step": start}
  trained_on = [segment]
  if restored is not None:
    before = restored["history"].get("trained_on") or [{"device": "unrecorded", "matmul_precision": "unrecorded", "from_step": 0}]
    # A process resumed at the last step trains nothing: it is `device`, not a part.
    trained_on = [*before[:-1], {**before[-1], "to_step": start}] + ([segment] if start < total_steps else [])
    state = sharding.place(mesh, restored["state"], cfg.sharding)
    history = [tuple(h) for h in restored["history"]["history"]]
    curve = list(restored["history"].get("curve", []))
    if restored["history"].get("elapsed_s") is None:
      timed_from = start
    else:
      elapsed_before = restored["history"]["elapsed_s"]
    log.info("resumed %s from step %d", workdir, start)

  import orbax.checkpoint as ocp
  step_fn = steps.make_train_step(cfg, model, tx, sharding.shardings(mesh, state, cfg.sharding))
  batches = pipeline.train_batches(train_src, cfg.batch_size, cfg.seed, start_step=start,
                                   num_steps=total_steps, mixup_alpha=cfg.mixup_alpha,
                                   num_classes=cfg.model.num_classes, process_index=jax.process_index(),
                                   process_count=jax.process_count())
  watch = Progress(workdir / "metrics.jsonl", cfg, total_steps, start, write=lead)
  eval_step = evaluation.eval_step_fn(cfg, model)  # one jitted step for every evaluation of the run
  learning_curve = Curve(cfg, model, train_src, mesh, eval_step) if cfg.eval_every else None
  bar = tqdm(total=total_steps, initial=start, desc=f"{cfg.name}:{cfg.kind}", disable=not (progress and lead),
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
      if learning_curve and curve_point_due(cfg, done, total_steps):
        curve.append(learning_curve.point(done, state["params"], history, curve))
        watch.log_point(curve[-1])
      bar.update(1)
      if done % cfg.checkpoint_every == 0 or done == total_steps:
        segment["to_step"] = done
        mngr.save(done, args=ocp.args.Composite(state=ocp.args.StandardSave(state), history=ocp.args.JsonSave(
            {"history": history, **({"curve": curve} if learning_curve else {}),
             "elapsed_s": elapsed_before + time.time() - t0, "trained_on": trained_on})))
  finally:
    batches.close()
    bar.close()
    watch.close()
  mngr.wait_until_finished()

  evals = [evaluation.evaluate(cfg, model, state["params"], test_src, e_c=e, width_index=w, mesh=mesh,
                               step_fn=eval_step)
           for e, w in evaluation.eval_points(cfg)]
  # The same points on the validation split, where there is one: what calibration reads (e.g. a
  # MatViT run's widths in calibration.discrimination), so that the test split only reports.
  val_src = sources.validation_source(cfg)
  val_evals = None if val_src is None else [
      evaluation.evaluate(cfg, model, state["params"], val_src, e_c=e, width_index=w, mesh=mesh, step_fn=eval_step)
      for e, w in evaluation.eval_points(cfg)]
  metrics = {
      "name": cfg.name, "kind": cfg.kind, "seed": cfg.seed, "config": cfg,
      "config_hash": results.config_hash(cfg), "e_c": cfg.model_kind.recorded_e_c(cfg),
      "accuracy": evals[0]["accuracy"], "gflops": evals[0]["gflops"], "evals": evals,
      **({"val_evals": val_evals} if val_evals else {}),
      "train_steps": total_steps, "train_gflops": flops.train_gflops(cfg),
      "final_loss": history[-1][1] if history else None, "history": history,
      **({"curve": curve} if learning_curve else {}),
      "wall_time_s": round(elapsed_before + time.time() - t0, 1), "timed_from_step": timed_from,
      "resumed_from_step": start, "trained_on": trained_on, "matmul_precision": segment["matmul_precision"],
      "peak_rss_mib": round(results.peak_rss_mib(), 1), "code": code,
      **results.provenance()}
  if lead:
    results.atomic_write_json(workdir / "metrics.json", metrics)
  return metrics


def _where() -> dict:
  """This process's device (`results.provenance`) and float32 matmul precision: JAX's
  `jax_default_matmul_precision`, "default" where unset. At the default the CPU computes float32
  matmuls in full float32, while a GPU may use TF32; MONE_MATMUL_PRECISION (e.g. "highest") sets it
  for a training command (`apply_matmul_precision`)."""
  return {"device": results.provenance()["device"],
          "matmul_precision": str(jax.config.jax_default_matmul_precision or "default")}


def apply_matmul_precision() -> None:
  """Sets JAX's default float32 matmul precision from $MONE_MATMUL_PRECISION, where set (the
  training commands call it before anything computes: the small profile trains a GPU at
  "highest", as the CPU computes). A value JAX does not know is a one-line ValueError."""
  import os
  if value := os.environ.get("MONE_MATMUL_PRECISION"):
    try:
      jax.config.update("jax_default_matmul_precision", value)
    except ValueError:
      raise ValueError(f"MONE_MATMUL_PRECISION must be one of 'default', 'high', 'highest' (or another "
                       f"jax_default_matmul_precision value, e.g. 'tensorfloat32'), got {value!r}") from None


def gpu_present() -> bool:
  """Whether this machine has an NVIDIA GPU (`nvidia-smi -L` lists one), asked without starting JAX:
  the process that starts the workers must not take the GPU's memory itself."""
  if not shutil.which("nvidia-smi"):
    return False
  return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def jax_may_use_gpu(environ) -> bool:
  """Whether JAX in a worker would train on this machine's GPU: one is present and $JAX_PLATFORMS
  (where set) allows CUDA."""
  platforms = environ.get("JAX_PLATFORMS", "")
  return gpu_present() and (not platforms or any(p in platforms for p in ("cuda", "gpu")))


def matmul_precision(environ, gpu: bool) -> str | None:
  """The float32 matmul precision the queue's runs train at: the user's $MONE_MATMUL_PRECISION where
  set; else "highest" on a GPU (float32 matmuls in full float32, as the CPU computes them: JAX's GPU
  default may use TF32); else None, JAX's default (on the CPU already full float32)."""
  return environ.get("MONE_MATMUL_PRECISION") or ("highest" if gpu else None)


def curve_point_due(cfg: TrainConfig, done: int, total_steps: int) -> bool:
  """Whether the learning curve gets a point after step `done`: every eval_every steps, at the last
  step, and in the last quarter (from 3/4 of total_steps on) every tail_eval_every steps as well."""
  tail = cfg.tail_eval_every and 4 * done >= 3 * total_steps and done % cfg.tail_eval_every == 0
  return bool(cfg.eval_every) and (done % cfg.eval_every == 0 or done == total_steps or bool(tail))


CURVE_TRAIN_EXAMPLES = 2000  # the fixed training images a learning curve scores


class Curve:
  """Learning-curve points (`TrainConfig.eval_every`): {step, train_loss, train_accuracy,
  val_accuracy}. train_loss is the mean of the losses logged (every log_every steps) since the
  previous point, which checkpoints hold, so a resumed run's curve equals an uninterrupted one's;
  train_accuracy is on the first CURVE_TRAIN_EXAMPLES training images; val_accuracy on the
  validation split (None without one). Both at `evaluation.curve_point` (the training budget)."""

  def __init__(self, cfg: TrainConfig, model, train_src, mesh, step_fn):
    self.cfg, self.model, self.mesh = cfg, model, mesh
    self.sources = {"train_accuracy": pipeline.Subset(train_src, CURVE_TRAIN_EXAMPLES),
                    "val_accuracy": sources.validation_source(cfg)}
    self.e_c, self.width_index = evaluation.curve_point(cfg)
    self.step_fn = step_fn  # the run's `evaluation.eval_step_fn`, shared with its final evaluations

  def point(self, step: int, params, history: list, curve: list) -> dict:
    since = curve[-1]["step"] if curve else 0
    losses = [loss for s, loss in history if since < s <= step]
    out = {"step": step, "train_loss": sum(losses) / len(losses) if losses else None}
    for key, src in self.sources.items():
      out[key] = None if src is None else evaluation.evaluate(
          self.cfg, self.model, params, src, e_c=self.e_c, width_index=self.width_index, mesh=self.mesh,
          step_fn=self.step_fn)["accuracy"]
    return out


class Progress:
  """What a long run reports as it goes, every `log_every` steps: a log line (step, loss,
  learning rate, examples/s, ETA) and the same as one JSON line appended to WORKDIR/metrics.jsonl,
  so a run can be watched (`tail -f`) or plotted before it ends. A resumed run appends after the
  lines its first attempt wrote; a step logged twice (between the last checkpoint and a kill) is
  read from its last line. Where tensorboardX is installed (it needs no TensorFlow), every
  number of those lines also goes to TensorBoard event files in WORKDIR/tensorboard
  (`tensorboard --logdir WORKDIR`). An object store (gs://) cannot append: there the file is
  read once, kept in memory and rewritten at most every REMOTE_FLUSH_S seconds and at the end
  (one write per logged line would send the whole file, again and again, over the network)."""

  REMOTE_FLUSH_S = 60.0

  def __init__(self, path, cfg: TrainConfig, total_steps: int, start: int, write: bool = True):
    self.path, self.cfg, self.total, self.write = path, cfg, total_steps, write
    self.lr = steps.learning_rate(cfg, total_steps)
    self.last_step, self.last_time = start, time.time()
    self.board = _tensorboard(path.parent / "tensorboard") if write else None
    self.remote = None  # an object store's file text, written by _flush
    if write and not results.is_local(path):
      self.remote = path.read_text() if path.exists() else ""
      self.flushed_text, self.flushed_at = self.remote, time.time()

  def log(self, step: int, loss: float) -> dict:
    now = time.time()
    rate = (step - self.last_step) * self.cfg.batch_size / max(now - self.last_time, 1e-9)
    eta = (self.total - step) * self.cfg.batch_size / rate if rate > 0 else None
    line = {"step": step, "train_loss": loss, "lr": float(self.lr(step)), "examples_per_s": round(rate, 1),
            "eta_s": None if eta is None else round(eta, 1), "time": round(now, 3)}
    self._append(line)
    log.info("step %d/%d: loss %.4f, lr %.3g, %.0f examples/s, ETA %s", step, self.total, loss, line["lr"], rate,
             "-" if eta is None else f"{eta / 60:.1f} min")
    self.last_step, self.last_time = step, now
    return line

  def _append(self, line: dict) -> None:
    if not self.write:  # not process 0 of a multi-process run
      return
    if self.board is not None:
      for key, value in line.items():
        if key not in ("step", "time") and isinstance(value, (int, float)):
          self.board.add_scalar(key, value, line["step"], walltime=line["time"])
    text = json.dumps(line) + "\n"
    if self.remote is None:
      with open(self.path, "a") as f:
        f.write(text)
    else:
      self.remote += text
      if time.time() - self.flushed_at >= self.REMOTE_FLUSH_S:
        self._flush()

  def _flush(self) -> None:
    if self.remote is not None and self.remote != self.flushed_text:
      self.path.write_text(self.remote)
      self.flushed_text, self.flushed_at = self.remote, time.time()

  def log_point(self, point: dict) -> None:
    """A learning-curve point (`Curve`), as one more line of metrics.jsonl and of the log."""
    self._append({**point, "time": round(time.time(), 3)})
    fmt = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    curve_log.info("step %d: train accuracy %s, validation accuracy %s", point["step"],
                   fmt(point["train_accuracy"]), fmt(point["val_accuracy"]))

  def close(self) -> None:
    self._flush()
    if self.board is not None:
      self.board.close()  # flushes the event file


def _tensorboard(logdir):
  """A tensorboardX SummaryWriter on logdir, or None where tensorboardX is not installed."""
  try:
    from tensorboardX import SummaryWriter
  except ImportError:
    return None
  return SummaryWriter(str(logdir))
