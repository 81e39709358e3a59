"""The package's shape, measured from its source: import graph and cycles, module sizes, model-kind
string switches, function-local imports and notebook code lines. `tests/e2e/test_layout.py` holds the
limits; `python scripts/layout.py` prints the measurements and the graph between packages.

Standard library only (ast): it reads the source, it never imports `mone`.
"""
import ast
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from chapter_inputs import node_imports  # noqa: E402  (the chapters' dependency tracking reads imports the same way)

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL_KINDS = {"vit", "matvit", "mod", "mone"}
KIND_HOME = "mone/models/kinds.py"  # the one module allowed to switch on a kind's name


def modules(root=ROOT) -> dict:
  """{dotted name: path} of every module of `mone`."""
  out = {}
  for path in sorted((root / "mone").rglob("*.py")):
    parts = path.relative_to(root).with_suffix("").parts
    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
  return out


def _imports(name: str, path: pathlib.Path, tree, known):
  """(node, targets) for every import in a module's syntax tree that names a module of `known`."""
  package = name if path.name == "__init__.py" else name.rpartition(".")[0]
  for node in ast.walk(tree):
    targets = sorted({t for t in node_imports(node, package) if t in known and t != name})
    if targets:
      yield node, targets


def import_graph(root=ROOT) -> dict:
  """{module: sorted modules of `mone` it imports}, wherever in the module the import sits."""
  mods = modules(root)
  graph = {}
  for name, path in mods.items():
    graph[name] = sorted({t for _, ts in _imports(name, path, ast.parse(path.read_text()), mods) for t in ts})
  return graph


def cycles(graph: dict) -> list:
  """The strongly connected components of more than one module (Tarjan), each sorted."""
  index, low, stack, on, out = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in graph.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        out.append(sorted(component))

  sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
  for v in sorted(graph):
    if v not in index:
      visit(v)
  return sorted(out)


def script_imports(path: pathlib.Path, root=ROOT) -> set:
  """The modules of `mone` a script imports, wherever in it the import sits."""
  mods = modules(root)
  return {t for node in ast.walk(ast.parse(path.read_text())) for t in node_imports(node) if t in mods}


def reach(graph: dict, starts) -> set:
  """Every module `starts` import, directly or through others (`starts` included)."""
  seen, todo = set(), list(starts)
  while todo:
    m = todo.pop()
    if m not in seen:
      seen.add(m)
      todo += graph.get(m, ())
  return seen


# The book's layers, lowest first: a layer imports those below it, never those above; everything else
# in `mone` (models, training, data, configs, run planning, benchmarks) is below them all.
BOOK_LAYERS = ("mone.evidence", "mone.plotting", "mone.chapters", "mone.publish")


def _layer(module: str) -> int:
  """The book layer a module is in (its index in BOOK_LAYERS), or -1 below them."""
  return next((i for i, l in enumerate(BOOK_LAYERS) if module == l or module.startswith(l + ".")), -1)


def below_chapters(root=ROOT) -> dict:
  """{module or script: the book modules it reaches} for the training side (`mone/` outside the book's
  layers, and the scripts that train), which must reach none: training does not depend on the book's
  claims, figures, chapters or pages."""
  graph = import_graph(root)
  starts = {m: {m} for m in graph if _layer(m) < 0}
  for script in TRAINING_SCRIPTS:
    starts[script] = script_imports(root / script, root)
  out = {}
  for name, s in starts.items():
    book = sorted(m for m in reach(graph, s) if _layer(m) >= 0)
    if book:
      out[name] = book
  return out


def layer_violations(root=ROOT) -> dict:
  """{module: the modules of a higher book layer it imports}: none may (`BOOK_LAYERS`). A package's
  `__main__`, an entry point, is exempt (`python -m mone.chapters` runs the publishing command line)."""
  out = {}
  for name, targets in import_graph(root).items():
    if name.endswith(".__main__"):
      continue
    up = [t for t in targets if _layer(t) > _layer(name)]
    if up:
      out[name] = up
  return out


TRAINING_SCRIPTS = ("scripts/train_queue.py", "scripts/train_run.py")


def local_imports(root=ROOT) -> list:
  """(path, line) of every import of a `mone` module inside a function: an import placed there to
  dodge import order is a sign of a circle in the layering."""
  mods, out = modules(root), []
  for name, path in mods.items():
    tree = ast.parse(path.read_text())
    mone_imports = {id(node) for node, _ in _imports(name, path, tree, mods)}
    for fn in ast.walk(tree):
      if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out += [(str(path.relative_to(root)), n.lineno) for n in ast.walk(fn) if id(n) in mone_imports]
  return sorted(set(out))


def _is_kind_literal(node) -> bool:
  if isinstance(node, ast.Constant):
    return node.value in MODEL_KINDS
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return bool(node.elts) and all(isinstance(e, ast.Constant) and e.value in MODEL_KINDS for e in node.elts)
  return False


def kind_switches(root=ROOT) -> list:
  """(path, line) of every comparison of a kind (`cfg.kind`, `m["kind"]`, `kind`) against a model
  kind's name ('mone', ('vit', 'matvit'), ...) outside the kind registry, in `mone/` and `scripts/`.
  Comparisons of other fields that happen to share a name (Table 1's allocation "mone", a
  benchmark row's contender) are not switches on a kind."""
  out = []
  for path in sorted([*(root / "mone").rglob("*.py"), *(root / "scripts").glob("*.py")]):
    rel = str(path.relative_to(root))
    if rel == KIND_HOME:
      continue
    for node in ast.walk(ast.parse(path.read_text())):
      if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
        sides = [node.left, *node.comparators]
        if any(map(_is_kind_literal, sides)) and any("kind" in ast.unparse(s) for s in sides if not _is_kind_literal(s)):
          out.append((rel, node.lineno))
  return out


def line_counts(root=ROOT) -> dict:
  """{path: lines} of every module of `mone/` and `scripts/`."""
  paths = [*(root / "mone").rglob("*.py"), *(root / "scripts").glob("*.py")]
  return {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in sorted(paths)}


def notebook_code_lines(root=ROOT) -> dict:
  """{notebook: non-blank code lines} of the source notebooks."""
  out = {}
  for path in sorted((root / "notebooks").glob("*.ipynb")):
    cells = json.loads(path.read_text())["cells"]
    out[path.name] = sum(1 for c in cells if c["cell_type"] == "code"
                         for line in "".join(c["source"]).splitlines() if line.strip())
  return out


DECIDING = ("claims.trained(", "claims.arithmetic(", "claims.timing(", "claims.target(", "claims.not_testable(")


def notebook_decisions(root=ROOT) -> list:
  """(notebook, call) for every claim a source notebook decides itself: a chapter's claims are
  decided in a tested `mone.chapters` function, and the notebook only shows them."""
  out = []
  for path in sorted((root / "notebooks").glob("*.ipynb")):
    source = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    out += [(path.name, call) for call in DECIDING if call in source]
  return out


def package_graph(graph: dict) -> dict:
  """The import graph between `mone`'s subpackages and top-level modules."""
  out = {}
  for a, targets in graph.items():
    pa = ".".join(a.split(".")[:2])
    for b in targets:
      pb = ".".join(b.split(".")[:2])
      if pa != pb and pb != "mone":
        out.setdefault(pa, set()).add(pb)
  return {k: sorted(v) for k, v in sorted(out.items())}


def main():
  graph = import_graph()
  print("import cycles:", cycles(graph) or "none")
  print("function-local imports of mone modules:", len(local_imports()))
  switches = kind_switches()
  print(f"model-kind string switches outside {KIND_HOME}:", len(switches))
  over = {p: n for p, n in line_counts().items() if n > 400}
  print("modules over 400 lines:", over or "none")
  print("notebook code lines:", notebook_code_lines())
  print("claims decided in notebooks:", notebook_decisions() or "none")
  print("training code reaching the book's modules:", below_chapters() or "none")
  print("imports up the book's layers:", layer_violations() or "none")
  print("graph between packages:")
  for a, targets in package_graph(graph).items():
    print(f"  {a} -> {', '.join(targets)}")


if __name__ == "__main__":
  main()
