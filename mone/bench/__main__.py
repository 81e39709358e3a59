"""python -m mone.bench: see mone.bench.cli."""
from mone.bench import cli

cli.main()
