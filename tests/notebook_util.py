"""Running the notebooks under test: each in a fresh kernel under papermill, in file order as
`make figures` runs them, with MONE_RESULTS_DIR and MONE_CACHE_DIR in a temporary folder (the
kernel inherits the environment), so the committed results/ are never touched.

The notebooks of one test file share that folder, so a run one trains (MoNE at e_c=0.4 in 01) is
reused by the next ones, as in `make figures`. The smoke runs are split over two files (image
chapters and video chapters, each a chain of shared runs) so that pytest-xdist runs them on two
workers. Compiling dominates the smoke runs, so XLA's persistent compilation cache
(.cache/jax_compilation, or $JAX_COMPILATION_CACHE_DIR) is shared between the kernels and kept
between sessions, and the kernels compile with the tests' fast-compiling flags (xla_flags.py).
"""
import importlib.util
import json
from pathlib import Path

import nbformat

from mone.evidence import claims, verdicts
from xla_flags import FAST_COMPILE

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
# The chapters whose smoke runs share video runs (05 shares its image runs with the others too,
# and retrains those two); every other chapter is an image chapter.
VIDEO_CHAPTERS = ("02_table1_capacity", "04_figure4_video", "05_figure5_adaptation")


def smoke_environment(root: Path, mp) -> None:
  # The kernels inherit this process's environment, so the compilation cache conftest.py sets up.
  env = {"MONE_RESULTS_DIR": str(root / "results"), "MONE_CACHE_DIR": str(root / "cache"), "JAX_PLATFORMS": "cpu",
         # one CPU device, as under `make figures`; compiled as fast as the tests (xla_flags.py)
         "XLA_FLAGS": FAST_COMPILE}
  for k, v in env.items():
    mp.setenv(k, v)


def _runner():
  spec = importlib.util.spec_from_file_location("run_notebook", REPO / "scripts" / "run_notebook.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


run_notebook = _runner()  # what `make figures` runs


def execute(notebook: Path, out: Path, profile: str):
  # Relative input path and cwd = repository root, exactly as the Makefile runs them.
  return run_notebook.execute(str(notebook.relative_to(REPO)), str(out), profile, progress_bar=False, cwd=str(REPO))


def check_smoke_run(notebook: Path, smoke_env: Path):
  """Executes notebook with the smoke profile in smoke_env and checks what it wrote and published."""
  out = smoke_env / "executed" / notebook.name
  out.parent.mkdir(exist_ok=True)
  execute(notebook, out, "smoke")
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
  # No timings: a rerun with the same outputs leaves the executed notebook unchanged in git.
  assert not any("execution" in c.metadata or set(run_notebook.TIMINGS) & set(c.metadata.get("papermill", {}))
                 for c in executed.cells) and not set(run_notebook.TIMINGS) & set(executed.metadata.get("papermill", {}))
  outputs = json.dumps([c.get("outputs", []) for c in executed.cells])
  for private in {str(REPO), str(smoke_env), str(Path.home())} - {"/"}:
    assert private not in outputs, f"{private} leaks into the outputs of {notebook.name}"
  assert '"output_type": "error"' not in outputs
  # The claims file is written and valid, and its table is glued (hidden) for the opening cell.
  chapter_claims = claims.check(json.loads((results / "claims.json").read_text()))
  assert chapter_claims and all(c["verdict"] in claims.verdicts_of(c["kind"]) for c in chapter_claims)
  glued = [o for c in executed.cells for o in c.get("outputs", []) if o.get("metadata", {}).get("scrapbook", {}).get("name") == "verdicts"]
  assert len(glued) == 1 and all(c["id"] in glued[0]["data"][verdicts.GLUE_PREFIX + "text/markdown"] for c in chapter_claims)
  assert "remove-cell" in next(c for c in executed.cells if c.id == run_notebook.INJECTED_ID).metadata.tags
