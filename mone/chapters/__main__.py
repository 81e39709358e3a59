"""python -m mone.chapters: see mone.publish.cli."""
from mone.publish import cli

cli.main()
