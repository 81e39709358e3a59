"""Trains one run of a profile into results/runs/ (as the notebooks would, through
`mone.runs.experiments.run`), for long runs started by hand in the background:

  .venv/bin/python scripts/train_run.py digits64 kind=mone e_c=0.4 seed=1

The run file is named by the config's hash, so the chapters find it; its checkpoints go to
.cache/workdirs/, so a killed run resumes when the same command is run again.
MONE_MATMUL_PRECISION=highest sets JAX's float32 matmul precision for the run (a GPU's default
may use TF32); the run file records it (`mone.train.loop`).
"""
import sys

if __name__ == "__main__":  # first, before JAX starts: glibc reads its tunables only at start-up
  from mone.train import hostmem
  hostmem.reexec_with_tunables()

import logging

import jax

from mone import results
from mone.runs import experiments
from mone.data import sources
from mone.configs import recipes
from mone.train import loop, sharding


def main(argv):
  if not argv or "=" in argv[0] or argv[0].startswith("-"):
    raise SystemExit(f"usage: train_run.py CONFIG [key=value ...]; CONFIG in {sorted(recipes.CONFIGS)}")
  try:  # bad input is one line naming the parameter, before anything is written or computed
    loop.apply_matmul_precision()
    cfg = recipes.get_config(argv[0], argv[1:])
    sources.check_data(cfg)
    sharding.check_devices(cfg.num_devices, jax.device_count())
    if not experiments.run_path(cfg).exists():  # both folders before hours of training (a finished run is only read)
      results.make_dir(experiments.workdir(cfg), "the run's workdir (under MONE_CACHE_DIR)")
      results.make_dir(experiments.run_path(cfg).parent, "the run file's folder (under MONE_RESULTS_DIR)")
  except ValueError as e:
    raise SystemExit(f"train_run.py: error: {e}") from None
  logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
  path = experiments.run_path(cfg)
  m = experiments.run(cfg, progress=False)
  print(f"{path}: accuracy {100 * m['accuracy']:.2f}% after {m['train_steps']} steps, {m['wall_time_s']:.0f} s")


if __name__ == "__main__":
  main(sys.argv[1:])
