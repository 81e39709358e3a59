"""Trains one run of a profile into results/runs/ (as the notebooks would, through
`mone.chapters.experiments.run`), for long runs started by hand in the background:

  .venv/bin/python scripts/train_run.py digits64 kind=mone e_c=0.4 seed=1

The run file is named by the config's hash, so the chapters find it; its checkpoints go to
.cache/workdirs/, so a killed run resumes when the same command is run again.
"""
import sys

if __name__ == "__main__":  # first, before JAX starts: glibc reads its tunables only at start-up
  from mone.train import hostmem
  hostmem.reexec_with_tunables()

import logging

from mone.chapters import experiments
from mone.train import recipes


def main(argv):
  if not argv or "=" in argv[0]:
    raise SystemExit(f"usage: train_run.py CONFIG [key=value ...]; CONFIG in {sorted(recipes.CONFIGS)}")
  cfg = recipes.get_config(argv[0], argv[1:])
  logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
  path = experiments.run_path(cfg)
  m = experiments.run(cfg, progress=False)
  print(f"{path}: accuracy {100 * m['accuracy']:.2f}% after {m['train_steps']} steps, {m['wall_time_s']:.0f} s")


if __name__ == "__main__":
  main(sys.argv[1:])
