"""Top-1 accuracy of a trained model, at any capacity (MoNE) or nested width (MatViT)."""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mone import flops
from mone.data import pipeline, sources
from mone.models import kinds, vivit
from mone.train import sharding, steps
from mone.configs.schema import TrainConfig


def _predict(cfg: TrainConfig, model, params, images, budget, width_index):
  """(predicted class [B], expert assignment or None) of a batch: the logits of `steps.logits`,
  averaged over clips for [B, K clips, T, H, W, C] videos (the paper's multi-clip "8x1")."""
  rng = jax.random.key(cfg.seed + 2)
  if images.ndim == 6:
    fn = lambda clip: steps.logits(cfg, model, params, clip, budget, rng, width_index)[0]
    return jnp.argmax(vivit.multiclip_logits(fn, images), -1), None
  logits, aux = steps.logits(cfg, model, params, images, budget, rng, width_index)
  return jnp.argmax(logits, -1), aux.get("assignment")


def eval_step_fn(cfg: TrainConfig, model):
  """The jitted eval step (params, images, labels, valid, budget, width_index) -> (number of
  correct valid examples, expert assignment or None). The count is reduced on device, so it is
  the global count on every process of a multi-process run. Build the step once and pass it to
  every `evaluate` of a run: each new one compiles again."""
  @functools.partial(jax.jit, static_argnames=("budget", "width_index"))
  def eval_step(params, images, labels, valid, budget, width_index):
    pred, assignment = _predict(cfg, model, params, images, budget, width_index)
    return jnp.sum((pred == labels) & valid), assignment
  return eval_step


@functools.lru_cache(maxsize=8)
def _predict_step(cfg: TrainConfig, model):
  """The jitted `_predict` of a (config, model), built once: each new jit compiles again."""
  return jax.jit(functools.partial(_predict, cfg, model), static_argnames=("budget", "width_index"))


def predict(cfg: TrainConfig, model, params, source, *, e_c=None, width_index=None,
            batch_size=None) -> np.ndarray:
  """The predicted class (int32 [len(source)]) of every example of a source, at inference
  capacity e_c (MoNE) or nested width width_index (MatViT), for error analyses; one process."""
  if jax.process_count() > 1:
    raise ValueError("predict gathers every example's prediction on one host: run it in one process")
  budget = cfg.model_kind.budget(cfg, e_c)
  step = _predict_step(cfg, model)
  preds = [np.asarray(step(params, sources.inputs(batch), budget=budget, width_index=width_index)[0])[batch["valid"]]
           for batch in pipeline.eval_batches(source, batch_size or cfg.eval_batch_size)]
  return np.concatenate(preds).astype(np.int32)


def evaluate(cfg: TrainConfig, model, params, source, *, e_c=None, width_index=None,
             batch_size=None, keep_assignment=False, mesh=None, step_fn=None):
  """Top-1 accuracy (precision@1) on a source, at inference capacity e_c (MoNE) or
  nested width width_index (MatViT). Returns a dict with accuracy, gflops and optionally
  the per-token expert assignment (MoNE) for visualisation. step_fn: from `eval_step_fn`.
  In a multi-process run every process loads its share of each batch (`pipeline.eval_batches`)
  and gets the same, global, result."""
  budget = cfg.model_kind.budget(cfg, e_c)
  mesh = mesh or sharding.make_mesh(cfg)
  bs = batch_size or cfg.eval_batch_size
  eval_step = step_fn or eval_step_fn(cfg, model)
  if keep_assignment and jax.process_count() > 1:
    raise ValueError("keep_assignment=True gathers every token's expert on one host: run it in one process")

  correct, assignments = 0, []
  for batch in pipeline.eval_batches(source, bs, process_index=jax.process_index(),
                                     process_count=jax.process_count()):
    feed = [sharding.shard(mesh, x) for x in (sources.inputs(batch), batch["label"], batch["valid"])]
    num_correct, assignment = eval_step(params, *feed, budget, width_index)
    correct += int(num_correct)
    if keep_assignment and assignment is not None:
      assignments.append(np.asarray(assignment)[batch["valid"]])
  total = len(source)  # every example once, over all processes
  out = {"e_c": e_c, "width_index": width_index, "accuracy": correct / total,
         "gflops": flops.forward_gflops(cfg, e_c, width_index), "num_examples": total}
  if keep_assignment:
    out["assignment"] = np.concatenate(assignments) if assignments else None
  return out


def curve_point(cfg: TrainConfig):
  """The (e_c, width_index) a learning curve follows: the training budget (MoNE), the full
  width (MatViT), or the model itself."""
  return cfg.model_kind.curve_point(cfg)


def eval_points(cfg: TrainConfig):
  """The (e_c, width_index) pairs a finished run reports."""
  return cfg.model_kind.eval_points(cfg)
