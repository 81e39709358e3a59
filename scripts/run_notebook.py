"""Executes one notebook with papermill, as `make figures` does, and keeps its cell ids stable.

  python scripts/run_notebook.py notebooks/03_figure3_images.ipynb book/notebooks/03_figure3_images.ipynb small

papermill gives the cell it injects (the parameters) a new random id on every run, so every rerun
would change every executed notebook in git even when nothing else did. Here that cell's id is the
fixed 'injected-parameters', and it is tagged 'remove-cell' (the book shows the chapter's verdicts
first, not a cell of parameters); everything else is papermill's output, unchanged.
"""
import sys

import nbformat
import papermill

INJECTED_ID = "injected-parameters"


def execute(src: str, out: str, profile: str, progress_bar: bool = True, cwd: str | None = None):
  """papermill.execute_notebook with parameters {'profile': profile} and the python3 kernel."""
  nb = papermill.execute_notebook(src, out, parameters={"profile": profile}, kernel_name="python3",
                                  progress_bar=progress_bar, cwd=cwd)
  injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
  for c in injected:
    c.id = INJECTED_ID
    if "remove-cell" not in c.metadata.tags:
      c.metadata.tags.append("remove-cell")
  if injected:
    nbformat.write(nb, out)
  return nb


if __name__ == "__main__":
  if len(sys.argv) != 4:
    sys.exit(f"usage: {sys.argv[0]} NOTEBOOK OUTPUT PROFILE")
  execute(*sys.argv[1:])
