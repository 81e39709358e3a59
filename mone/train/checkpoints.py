"""Orbax checkpoints of a run: save through a manager, restore the newest good one, read params.

Checkpoints are synchronous: a run killed mid-save leaves an incomplete step that
`restore_latest` skips in favour of the previous one."""
import logging
import sys

from mone import results
from mone.configs.schema import TrainConfig

log = logging.getLogger("mone.train")


def _folder(workdir):
  """WORKDIR/checkpoints, absolute where local (orbax wants absolute paths), else as given (gs://)."""
  path = results.as_path(workdir) / "checkpoints"
  return path.absolute() if results.is_local(path) else path


def manager(workdir, cfg: TrainConfig):
  """Every process of a multi-process run calls this with the same (shared) workdir: orbax
  saves each process's part and lets process 0 finalise the checkpoint."""
  import orbax.checkpoint as ocp
  return ocp.CheckpointManager(
      _folder(workdir),
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
  path = _folder(workdir)
  mngr = ocp.CheckpointManager(path, options=ocp.CheckpointManagerOptions(read_only=True))
  if mngr.latest_step() is None:
    raise FileNotFoundError(f"init_from={workdir!s}: no checkpoint under {path}")
  restored = mngr.restore(mngr.latest_step(), args=ocp.args.Composite(state=ocp.args.StandardRestore()))
  return restored.state["params"]
