"""A run and its files, as the notebooks and the queue ask for them: the notebooks' parameters, a cache of
finished runs, checkpoints and committed weights (a chapter's figures and metrics: `mone.chapters.chapter`).

A notebook asks for a `TrainConfig` per curve point and calls `run(cfg)`. A run whose
config hash already has a metrics file under `results/runs/` is reused (unless
`recompute=True`), so rerunning `make figures` retrains nothing that is already done.
Checkpoints go to `.cache/workdirs/<hash>` (not in git); notebooks that need trained
weights (router visualisations) call `trained_params(cfg)`, which retrains if needed.

Profiles:

- smoke: a handful of steps on tiny models; CI executes every notebook with it.
- small: the default, on the embedded datasets. On 2 CPU cores an image run takes 3-17 min,
  a video run 15-27 min (the committed appearance-task runs were trained on a GPU; see book/small_profile.md).
- paper: the paper's models and datasets through TFDS (set data_dir; needs accelerators).
"""
import os
from pathlib import Path

from mone import results
from mone.models import kinds
from mone.configs import profiles, schema

PARAMETERS = ("profile", "seed", "recompute", "data_dir")  # every notebook's papermill parameters
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def check_parameters(namespace: dict) -> None:
  """Raises on a papermill parameter the notebooks do not declare (papermill itself only
  warns, so `-p profle paper` would silently run the default profile). Call it right after a
  notebook's imports: it reads the kernel's globals, where imported modules are ignored."""
  import types
  unknown = sorted(k for k, v in namespace.items() if not k.startswith("_") and k not in _KERNEL_NAMES
                   and k not in PARAMETERS and not isinstance(v, types.ModuleType))
  if unknown:
    raise ValueError(f"unknown notebook parameter(s) {unknown}; the parameters are {list(PARAMETERS)}")
  profiles.check_profile(namespace.get("profile"))


results_root = results.results_root  # results/, or $MONE_RESULTS_DIR (CI's smoke runs write elsewhere)


def cache_root() -> Path:
  return Path(os.environ.get("MONE_CACHE_DIR", results.REPO / ".cache"))


def workdir(cfg: schema.TrainConfig) -> Path:
  return cache_root() / "workdirs" / results.run_id(cfg)


def run(cfg: schema.TrainConfig, recompute: bool = False, progress: bool = True) -> dict:
  """Metrics of a finished run of cfg: from results/runs/ if there, else trains it."""
  # The training stack (JAX, optax, orbax, tqdm) is imported where a run trains or a model is
  # built: the book's environment (requirements/book.txt) imports this module without it.
  from mone.train import loop
  path = run_path(cfg)
  if path.exists() and not recompute:
    return results.read_json(path)
  wd = workdir(cfg)
  if recompute and (wd / "metrics.json").exists():
    import shutil
    shutil.rmtree(wd)
  metrics = loop.train(cfg, wd, progress=progress)
  results.atomic_write_json(path, metrics)
  return results.read_json(path)


def run_path(cfg: schema.TrainConfig) -> Path:
  """The metrics file of cfg's finished run (committed for the small profile)."""
  return results_root() / "runs" / f"{results.run_id(cfg)}.json"


def trained_params(cfg: schema.TrainConfig, recompute: bool = False):
  """Final parameters of cfg's run, training it first if no checkpoint is at hand.

  Run files are committed, checkpoints are not: on a fresh clone the weights are retrained
  here, possibly on another kind of device than the run file's, and training is only
  reproducible bit for bit on one device. If the retrained accuracy differs from the run
  file's, a note says so: figures drawn from these weights describe this retraining."""
  from mone.train import checkpoints, loop  # the training stack: see `run`
  wd = workdir(cfg)
  if recompute or not (wd / "metrics.json").exists():
    fresh = loop.train(cfg, wd, progress=True)
    path = run_path(cfg)
    if path.exists() and (old := results.read_json(path))["accuracy"] != results.rounded(fresh["accuracy"]):
      print(f"note: {cfg.name} ({cfg.kind}) was retrained on {fresh['device']['kind']} for its weights: "
            f"{100 * fresh['accuracy']:.1f}% accuracy, vs {100 * old['accuracy']:.1f}% in {path.name} "
            f"(trained on {old.get('device', {}).get('kind', 'an unrecorded device')})")
  return checkpoints.load_params(wd)


def weights_path(cfg: schema.TrainConfig) -> Path:
  """The committed weights of cfg's run (`stored_params`)."""
  return results_root() / "weights" / f"{results.run_id(cfg)}.npz"


def stored_params(cfg: schema.TrainConfig, keys: tuple | None = None, recompute: bool = False, read=None) -> dict:
  """Parameters of cfg's trained run as committed in results/weights/: the top-level entries
  `keys` (None: all of them) of the trained run, every other parameter at its initialisation.
  Without a committed file (or with recompute) the trained weights are read (`trained_params`:
  retrained if no checkpoint is at hand) and the file is written, so the figures always come
  from exactly the parameters a fresh clone reads, on any machine. read: the file to read for a
  committed one (a chapter passes `plan.reading`: its CPU twin's once the single-device reading
  holds); by default the committed file itself."""
  import jax
  import numpy as np
  from flax import traverse_util

  from mone.train import steps  # the model stack: see `run`
  path = weights_path(cfg)
  if path.exists() and not recompute and read is not None:
    path = read(path)
  if recompute or not path.exists():
    trained = jax.device_get(trained_params(cfg, recompute))
    flat = traverse_util.flatten_dict({k: trained[k] for k in (trained if keys is None else keys)}, sep="/")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **flat)
    os.replace(tmp, path)
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  params = traverse_util.flatten_dict(jax.device_get(params), sep="/")
  with np.load(path) as saved:
    wanted = saved.files if keys is None else [n for n in saved.files if n.split("/")[0] in keys]
    if keys is None and set(wanted) != set(params) or not wanted:
      raise ValueError(f"{path} does not hold the parameters asked for ({'all' if keys is None else keys}); "
                       f"rewrite it with recompute=True")
    for name in wanted:
      if params[name].shape != saved[name].shape:
        raise ValueError(f"{path}: {name} has shape {saved[name].shape}, the model {params[name].shape}")
      params[name] = saved[name]
  return traverse_util.unflatten_dict(params, sep="/")


# What a router before layer 0 reads: the token embedding and the router itself. The router
# figures (1, 7) depend on nothing else, so these few parameters are all that must be committed
# for a fresh clone to draw them without retraining (and so on any machine draw the same).
ROUTER_INPUTS = ("embed", "router_0")


def router_params(cfg: schema.TrainConfig, recompute: bool = False, read=None) -> dict:
  """Parameters for the router figures: `stored_params` with the `ROUTER_INPUTS` of cfg's
  trained run, every other parameter at its initialisation (the first router, before layer 0,
  never reads them; a test checks that its outputs are those of the full trained model). read:
  as `stored_params`."""
  if not cfg.model_kind.routed or cfg.model.router_layers[0] != 0:
    raise ValueError(f"router_params is for a MoNE run whose first router is before layer 0; got kind="
                     f"{cfg.kind!r}, router_layers={getattr(cfg.model, 'router_layers', None)}")
  return stored_params(cfg, ROUTER_INPUTS, recompute, read)
