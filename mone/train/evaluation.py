"""Top-1 accuracy of a trained model, at any capacity (MoNE) or nested width (MatViT)."""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from mone.data import pipeline, sources
from mone.models import vivit
from mone.train import sharding, steps
from mone.train.recipes import TrainConfig


def evaluate(cfg: TrainConfig, model, params, source, *, e_c=None, width_index=None,
             batch_size=None, keep_assignment=False, mesh=None):
  """Top-1 accuracy (precision@1) on a source, at inference capacity e_c (MoNE) or
  nested width width_index (MatViT). Returns a dict with accuracy, gflops and optionally
  the per-token expert assignment (MoNE) for visualisation."""
  caps = cfg.budget(e_c) if cfg.kind == "mone" else None
  mesh = mesh or sharding.make_mesh(cfg)
  bs = batch_size or cfg.eval_batch_size

  @functools.partial(jax.jit, static_argnames="caps")
  def eval_step(params, images, caps):
    rng = jax.random.key(cfg.seed + 2)
    if images.ndim == 6:  # [B, K clips, T, H, W, C]: the paper's multi-clip ("8x1") evaluation
      fn = lambda clip: steps.logits(cfg, model, params, clip, caps, rng, width_index)[0]
      return jnp.argmax(vivit.multiclip_logits(fn, images), -1), None
    logits, aux = steps.logits(cfg, model, params, images, caps, rng, width_index)
    return jnp.argmax(logits, -1), aux.get("assignment")

  correct, total, assignments = 0, 0, []
  for batch in pipeline.eval_batches(source, bs):
    images = sharding.shard(mesh, sources.inputs(batch))
    pred, assignment = eval_step(params, images, caps)
    valid = batch["valid"]
    correct += int(np.sum((np.asarray(pred) == batch["label"]) & valid))
    total += int(valid.sum())
    if keep_assignment and assignment is not None:
      assignments.append(np.asarray(assignment)[valid])
  out = {"e_c": e_c, "width_index": width_index, "accuracy": correct / total,
         "gflops": steps.forward_gflops(cfg, e_c, width_index), "num_examples": total}
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
