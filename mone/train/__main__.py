"""The training command line: python -m mone.train --config NAME --workdir DIR [key=value ...]."""
if __name__ == "__main__":  # first, before JAX starts: glibc reads its tunables only at start-up
  from mone.train import hostmem
  hostmem.reexec_with_tunables()

import argparse
import logging

import jax

from mone import results
from mone.data import sources
from mone.configs import recipes
from mone.train import loop
from mone.train.sharding import check_devices


def make_workdir(workdir: str) -> None:
  """Creates a local workdir, or says in one line why it cannot be (`results.make_dir`)."""
  results.make_dir(workdir, "--workdir")


def refuse(parser: argparse.ArgumentParser, error: ValueError):
  """Bad input (an override, the devices, the workdir): exit status 2 and one line naming the
  parameter, without argparse's usage (the command line parsed; a value in it is wrong)."""
  parser.exit(2, f"{parser.prog}: error: {error}\n")


def main(argv=None):
  parser = argparse.ArgumentParser(prog="python -m mone.train", description=loop.__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--config", required=True,
                      help=f"one of {sorted(recipes.CONFIGS)}, or a path/to/config.py defining get_config()")
  parser.add_argument("--workdir", required=True, help="checkpoints and metrics.json go here")
  parser.add_argument("--distributed", action="store_true",
                      help="multi-process: jax.distributed.initialize() from the cluster's environment "
                           "(SLURM, Open MPI, TPU pods, Kubernetes are detected)")
  parser.add_argument("--coordinator", metavar="HOST:PORT",
                      help="multi-process, set explicitly: process 0's address (with --num-processes, --process-id)")
  parser.add_argument("--num-processes", type=int, metavar="N")
  parser.add_argument("--process-id", type=int, metavar="I", help="this process, in [0, N)")
  parser.add_argument("--quiet", action="store_true", help="no progress bar")
  parser.add_argument("overrides", nargs="*", metavar="key=value",
                      help="config overrides, e.g. kind=mone e_c=0.4 model.depth=4")
  # Intermixed: overrides may sit on both sides of an option (`steps=40 --quiet sharding=fsdp`).
  args = parser.parse_intermixed_args(argv)
  explicit = (args.coordinator, args.num_processes, args.process_id)
  try:  # validate everything before touching the workdir
    loop.apply_matmul_precision()  # before anything computes
    cfg = recipes.get_config(args.config, args.overrides)
    sources.check_data(cfg)
    if any(v is not None for v in explicit):
      if any(v is None for v in explicit):
        raise ValueError("--coordinator, --num-processes and --process-id go together")
      if args.num_processes < 1 or not 0 <= args.process_id < args.num_processes:
        raise ValueError(f"--process-id must be in [0, --num-processes={args.num_processes}), got {args.process_id}")
  except ValueError as e:
    refuse(parser, e)
  if any(v is not None for v in explicit):
    jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
  elif args.distributed:
    jax.distributed.initialize()
  try:  # what needs the devices (after a multi-process start, which sets them): still before any write
    check_devices(cfg.num_devices, jax.device_count())
    make_workdir(args.workdir)
  except ValueError as e:
    refuse(parser, e)
  logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
  logging.getLogger("absl").setLevel(logging.WARNING)  # orbax logs every save at INFO
  metrics = loop.train(cfg, args.workdir, progress=not args.quiet)
  if jax.process_index() != 0:
    return
  for ev in metrics["evals"]:
    where = f"e_c={ev['e_c']}" if ev["e_c"] is not None else (
        f"width_index={ev['width_index']}" if ev["width_index"] is not None else cfg.kind)
    print(f"{cfg.name} {cfg.kind} {where}: accuracy={ev['accuracy']:.4f} gflops={ev['gflops']:.5f}")
  print(f"wrote {args.workdir.rstrip('/')}/metrics.json")


if __name__ == "__main__":
  main()
