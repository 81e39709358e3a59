"""python -m mone.chapters: see mone.chapters.cli."""
from mone.chapters import cli

cli.main()
