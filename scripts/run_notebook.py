"""Executes one notebook with papermill, as `make figures` does, and keeps its cell ids stable.

  python scripts/run_notebook.py notebooks/03_figure3_images.ipynb book/notebooks/03_figure3_images.ipynb small [seed=1 data_dir=...]

papermill gives the cell it injects (the parameters) a new random id on every run, so every rerun
would change every executed notebook in git even when nothing else did. Here that cell's id is the
fixed 'injected-parameters', and it is tagged 'remove-cell' (the book shows the chapter's verdicts
first, not a cell of parameters); and the timestamps and durations of the run are removed. The
rest is papermill's output, unchanged: a rerun that computes the same outputs leaves the executed
notebook byte for byte as it was.

papermill saves the output notebook after every cell; here it saves into a temporary file beside
the output, which replaces the output only once every cell has run. A chapter that fails or is
killed leaves the executed notebook as it was (and older than what Make compares it with, so the
next `make figures` reruns it); a failure removes the temporary file.
"""
import os
import sys
from pathlib import Path

import nbformat
import papermill

INJECTED_ID = "injected-parameters"


# When each cell ran and for how long: rewritten by every run, so a rerun that changed no output
# would still change every executed notebook in git. The book shows none of it.
TIMINGS = ("start_time", "end_time", "duration")


def strip_timings(nb) -> None:
  """Removes the kernel's and papermill's timestamps and durations from an executed notebook."""
  for key in TIMINGS:
    nb.metadata.get("papermill", {}).pop(key, None)
  for c in nb.cells:
    c.metadata.pop("execution", None)
    for key in TIMINGS:
      c.metadata.get("papermill", {}).pop(key, None)


def merge_streams(nb) -> None:
  """Joins each cell's consecutive outputs to the same stream (stdout, stderr) into one. How the
  kernel splits a cell's printing into messages depends on timing (a busy machine flushes a print
  on its own), so two runs that print the same text would otherwise store it differently."""
  for c in nb.cells:
    merged = []
    for o in c.get("outputs", []):
      if merged and o.get("output_type") == "stream" and merged[-1].get("output_type") == "stream" \
          and merged[-1].get("name") == o.get("name"):
        merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(o["text"])
      else:
        merged.append(o)
    if "outputs" in c:
      c.outputs = merged


def execute(src: str, out: str, profile: str, progress_bar: bool = True, cwd: str | None = None, **params):
  """papermill.execute_notebook with parameters {'profile': profile, **params} and the python3
  kernel. Only parameters given are injected: a default run's executed notebook stays the same,
  and its timings are stripped (`strip_timings`), so a rerun that computes the same outputs
  leaves it byte for byte as it was."""
  out = Path(out)
  out.parent.mkdir(parents=True, exist_ok=True)
  partial = out.with_name(f".{out.stem}.partial{out.suffix}")  # hidden: the book and git ignore it
  try:
    nb = papermill.execute_notebook(src, str(partial), parameters={"profile": profile, **params},
                                    kernel_name="python3", progress_bar=progress_bar, cwd=cwd)
    for c in nb.cells:
      if "injected-parameters" in c.metadata.get("tags", []):
        c.id = INJECTED_ID
        if "remove-cell" not in c.metadata.tags:
          c.metadata.tags.append("remove-cell")
    strip_timings(nb)
    merge_streams(nb)
    nb.metadata.get("papermill", {})["output_path"] = str(out)  # where it is kept, not where it ran
    nbformat.write(nb, str(partial))
    os.replace(partial, out)
  finally:
    partial.unlink(missing_ok=True)
  return nb


def parse_params(words) -> dict:
  """key=value words: seed as an integer, data_dir as a string (the notebooks' parameters)."""
  params = {}
  for w in words:
    key, sep, value = w.partition("=")
    if not sep or key not in ("seed", "data_dir"):
      sys.exit(f"parameters are seed=INT and data_dir=PATH, got {w!r}")
    params[key] = int(value) if key == "seed" else value
  return params


if __name__ == "__main__":
  if len(sys.argv) < 4:
    sys.exit(f"usage: {sys.argv[0]} NOTEBOOK OUTPUT PROFILE [seed=INT] [data_dir=PATH]")
  execute(*sys.argv[1:4], **parse_params(sys.argv[4:]))
