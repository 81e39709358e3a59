"""python -m mone.bench: see mone.bench.cli."""
if __name__ == "__main__":  # first, before JAX starts: time the models as the training commands run them
  from mone.train import hostmem
  hostmem.reexec_with_tunables()

from mone.bench import cli

cli.main()
