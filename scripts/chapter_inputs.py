"""Prints what an executed chapter depends on, so that Make reruns a chapter only when that changed.

  python scripts/chapter_inputs.py notebooks/05_figure5_adaptation.ipynb small [seed=1 data_dir=...]

One line per input: the SHA-256 of the notebook, of every module of `mone` it imports,
directly or through other modules (imports inside functions count: the chapters import
lazily), and of every file under the results it reads (`READS`), then the parameters. Make
keeps the output in .cache/figures/ and touches it only when it changes (content, not file
times: a fresh clone gives every file the same time).
"""
import ast
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The folders of `mone.results.results_root()` (results/, or $MONE_RESULTS_DIR) that chapters
# read and do not write: run files, router weights, validation records, benchmarks, CPU twins. A run that
# lands (from the training queue, or trained by an earlier chapter) reruns the chapters after it,
# which would otherwise keep verdicts from the runs they saw before. Each chapter writes only its
# own results/<chapter>/ folder, so no chapter's output is another's input here.
READS = ("runs", "weights", "calibration", "bench", "device_twins")  # device_twins: a GPU run's CPU twin, read in its place


def module_path(name: str) -> Path | None:
  """The source file of a `mone` module (a package: its __init__.py), None if there is none."""
  base = REPO.joinpath(*name.split("."))
  for p in (base.with_suffix(".py"), base / "__init__.py"):
    if p.is_file():
      return p
  return None


def node_imports(node, package: str = "") -> set[str]:
  """The `mone` names one import statement names (`import mone.x`; `from mone.x import y` gives
  mone.x and mone.x.y, as y may be a module; relative imports resolved inside `package`); an
  empty set for any other node."""
  if isinstance(node, ast.Import):
    return {a.name for a in node.names if a.name.split(".")[0] == "mone"}
  if isinstance(node, ast.ImportFrom):
    base = node.module or ""
    if node.level:
      base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
    if base.split(".")[0] == "mone":
      return {base} | {f"{base}.{a.name}" for a in node.names}
  return set()


def imported(source: str, package: str = "") -> set[str]:
  """The `mone` modules a piece of source imports (`node_imports` of each statement)."""
  out = set().union(*(node_imports(node, package) for node in ast.walk(ast.parse(source))))
  # a package imports its parents' __init__ too
  return {".".join(n.split(".")[:i]) for n in out for i in range(1, n.count(".") + 2)}


def closure(names: set[str]) -> dict[str, Path]:
  todo, seen = set(names), {}
  while todo:
    name = todo.pop()
    path = module_path(name)
    if name in seen or path is None:
      continue
    seen[name] = path
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    todo |= imported(path.read_text(), package) - set(seen)
  return seen


def read_results(root: Path) -> list[Path]:
  """Every file under root's `READS` folders, in a fixed order."""
  return sorted(p for d in READS for p in (root / d).rglob("*") if p.is_file())


def main(argv):
  if len(argv) < 2:
    sys.exit(f"usage: {sys.argv[0]} NOTEBOOK PROFILE [key=value ...]")
  notebook, params = Path(argv[0]), argv[1:]
  code = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code")
  code = "\n".join(l for l in code.splitlines() if not l.lstrip().startswith(("%", "!")))  # IPython magics
  digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
  print(f"{digest(notebook)}  {notebook.as_posix()}")
  for name, path in sorted(closure(imported(code)).items()):
    print(f"{digest(path)}  {path.relative_to(REPO).as_posix()}")
  sys.path.insert(0, str(REPO))  # run as a script: the checkout's mone, even where it is not installed
  from mone import results
  root = results.results_root()
  for path in read_results(root):
    print(f"{digest(path)}  results/{path.relative_to(root).as_posix()}")
  print("parameters: " + " ".join(params))


if __name__ == "__main__":
  main(sys.argv[1:])
