"""Every notebook runs end to end with the smoke profile and writes its figures and metrics.

Each notebook runs in a fresh kernel under papermill, in file order as `make figures` runs
them, with MONE_RESULTS_DIR and MONE_CACHE_DIR in a temporary folder (the kernel inherits
the environment), so the committed results/ are never touched. The notebooks share that
folder, so a run one trains (MoNE at e_c=0.4 in 01) is reused by the next ones, as in
`make figures`. Compiling dominates the smoke runs, so XLA's persistent compilation cache
(.cache/jax_compilation, or $JAX_COMPILATION_CACHE_DIR) is shared between the kernels and
kept between sessions.
"""
import importlib.util
import json
import os
from pathlib import Path

import nbformat
import pytest

from mone import claims

papermill = pytest.importorskip("papermill")

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))


@pytest.fixture(scope="module")
def smoke_env(tmp_path_factory):
  root = tmp_path_factory.mktemp("notebooks")
  env = {"MONE_RESULTS_DIR": str(root / "results"), "MONE_CACHE_DIR": str(root / "cache"),
         "JAX_COMPILATION_CACHE_DIR": os.environ.get("JAX_COMPILATION_CACHE_DIR",
                                                     str(REPO / ".cache" / "jax_compilation")),
         "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
         "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1", "JAX_PLATFORMS": "cpu"}
  with pytest.MonkeyPatch.context() as mp:
    for k, v in env.items():
      mp.setenv(k, v)
    mp.delenv("XLA_FLAGS", raising=False)  # one CPU device, as under `make figures`
    yield root


def _runner():
  spec = importlib.util.spec_from_file_location("run_notebook", REPO / "scripts" / "run_notebook.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


run_notebook = _runner()  # what `make figures` runs


def _execute(notebook: Path, out: Path, profile: str):
  # Relative input path and cwd = repository root, exactly as the Makefile runs them.
  return run_notebook.execute(str(notebook.relative_to(REPO)), str(out), profile, progress_bar=False, cwd=str(REPO))


def test_there_are_notebooks():
  assert len(NOTEBOOKS) >= 4, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_follows_the_house_layout(notebook):
  raw = json.loads(notebook.read_text())
  # nbformat gives a cell without an id a random one when it reads it, so an executed copy would
  # change on every run: every committed cell carries its own.
  assert all("id" in c for c in raw["cells"]), [c["source"][:1] for c in raw["cells"] if "id" not in c]
  nb = nbformat.read(notebook, as_version=4)
  cells = nb.cells
  assert cells[0].cell_type == "markdown" and "claim" in cells[0].source.lower()
  # The chapter opens with its verdicts, before any code: pasted from the table claims.show glues.
  assert cells[1].cell_type == "markdown" and cells[1].id == "verdicts"
  assert "```{glue:md} verdicts\n:format: myst\n```" in cells[1].source
  # Code is folded in the book; the parameters cell is not shown at all.
  assert all("hide-input" in c.metadata.get("tags", []) for c in cells if c.cell_type == "code"
             and "parameters" not in c.metadata.get("tags", []))
  params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
  assert len(params) == 1, "exactly one cell tagged 'parameters'"
  for name in ('profile = "small"', "seed = 0", "recompute = False", 'data_dir = ""'):
    assert name in params[0].source
  assert all(not c.get("outputs") for c in cells if c.cell_type == "code"), "commit sources without outputs"
  code = "\n".join(c.source for c in cells if c.cell_type == "code")
  assert "experiments.save_figure(" in code and "experiments.save_metrics(" in code
  # The profile is checked before anything is trained or measured.
  work = [i for i in (code.find("experiments.run("), code.find("bench.main(")) if i >= 0]
  assert work and 0 <= code.find("experiments.check_profile(profile)") < min(work)
  assert "pip install" not in code
  # Ends with the verdict: a markdown cell asking the question, a code cell computing the answer.
  last_code = [i for i, c in enumerate(cells) if c.cell_type == "code"][-1]
  assert cells[last_code - 1].cell_type == "markdown" and "reproduce" in cells[last_code - 1].source
  assert "claims.write(chapter_claims, NB)" in cells[last_code].source and "claims.show(chapter_claims, NB)" in cells[last_code].source
  assert "REPRODUCED" not in code, "verdicts are decided by mone.claims, not printed by hand"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_with_the_smoke_profile(notebook, smoke_env):
  out = smoke_env / "executed" / notebook.name
  out.parent.mkdir(exist_ok=True)
  _execute(notebook, out, "smoke")
  results = smoke_env / "results" / notebook.stem
  png, svg = ({p.stem for p in results.glob(f"*.{ext}")} for ext in ("png", "svg"))
  assert png and png == svg, f"figures as PNG and SVG in {results}: {png} vs {svg}"
  assert all((results / f"{name}.png").stat().st_size > 5000 for name in png)
  metrics = json.loads((results / "metrics.json").read_text())
  assert metrics
  assert list((smoke_env / "results" / "runs").glob("smoke*.json")), "runs are cached in the tmp folder"
  # The book publishes the outputs: no local paths, no errors, and the verdict is printed.
  executed = nbformat.read(out, as_version=4)
  # Stable cell ids: a rerun changes an executed notebook only where its outputs change.
  source_ids = [c.id for c in nbformat.read(notebook, as_version=4).cells]
  assert [c.id for c in executed.cells if c.id != run_notebook.INJECTED_ID] == source_ids
  assert run_notebook.INJECTED_ID in [c.id for c in executed.cells]
  outputs = json.dumps([c.get("outputs", []) for c in executed.cells])
  for private in {str(REPO), str(smoke_env), str(Path.home())} - {"/"}:
    assert private not in outputs, f"{private} leaks into the outputs of {notebook.name}"
  assert '"output_type": "error"' not in outputs
  # The claims file is written and valid, and its table is glued (hidden) for the opening cell.
  chapter_claims = claims.check(json.loads((results / "claims.json").read_text()))
  assert chapter_claims and {c["verdict"] for c in chapter_claims} <= set(claims.VERDICTS)
  glued = [o for c in executed.cells for o in c.get("outputs", []) if o.get("metadata", {}).get("scrapbook", {}).get("name") == "verdicts"]
  assert len(glued) == 1 and all(c["id"] in glued[0]["data"][claims.GLUE_PREFIX + "text/markdown"] for c in chapter_claims)
  assert "remove-cell" in next(c for c in executed.cells if c.id == run_notebook.INJECTED_ID).metadata.tags


@pytest.mark.parametrize("notebook", NOTEBOOKS[:1], ids=lambda p: p.stem)
def test_unknown_profile_fails_with_an_error_naming_profile(notebook, smoke_env, tmp_path):
  with pytest.raises(papermill.PapermillExecutionError, match="profile must be one of") as e:
    _execute(notebook, tmp_path / notebook.name, "huge")
  assert "'huge'" in str(e.value)


@pytest.mark.parametrize("notebook", NOTEBOOKS[:1], ids=lambda p: p.stem)
def test_unknown_parameter_fails_with_an_error_naming_it(notebook, smoke_env, tmp_path):
  """papermill only warns about an undeclared parameter; the notebooks refuse it, so that a
  typo such as `-p profle paper` cannot silently run the default profile."""
  with pytest.raises(papermill.PapermillExecutionError, match="unknown notebook parameter") as e:
    papermill.execute_notebook(str(notebook.relative_to(REPO)), str(tmp_path / notebook.name),
                               parameters={"profile": "smoke", "profle": "paper"}, kernel_name="python3",
                               cwd=str(REPO), progress_bar=False)
  assert "'profle'" in str(e.value)
