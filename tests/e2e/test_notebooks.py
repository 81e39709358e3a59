"""Every notebook follows the house layout, refuses bad parameters, and the image chapters run end
to end with the smoke profile (the video chapters: test_notebooks_video.py; see notebook_util)."""
import json

import nbformat
import pytest
from notebook_util import NOTEBOOKS, REPO, VIDEO_CHAPTERS, check_smoke_run, execute

papermill = pytest.importorskip("papermill")


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
  # The chapter opens with its verdicts, before any code: pasted from the table verdicts.show glues.
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
  assert "chapter.save_metrics(" in code
  # One setup call checks the parameters and the profile before anything is trained or measured.
  setup = code.find(f'ch = chapter.setup(globals(), "{notebook.stem}")')
  work = [i for i in (code.find("experiments.run("), code.find("headlines.landed("), code.find("speed.measured("),
                      code.find(".load(")) if i >= 0]
  assert 0 <= setup < min(work, default=len(code))
  assert "check_parameters(" not in code.replace("chapter.setup(", ""), "chapter.setup checks the parameters"
  assert "pip install" not in code
  # Ends with the verdict: a markdown cell asking the question, a code cell showing the answer.
  last_code = [i for i, c in enumerate(cells) if c.cell_type == "code"][-1]
  assert cells[last_code - 1].cell_type == "markdown" and "reproduce" in cells[last_code - 1].source
  assert "claims.write(chapter_claims, ch.name)" in cells[last_code].source
  assert "verdicts.show(chapter_claims, ch.name)" in cells[last_code].source
  assert "REPRODUCED" not in code, "verdicts are decided by mone.evidence.claims, not printed by hand"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", [p for p in NOTEBOOKS if p.stem not in VIDEO_CHAPTERS], ids=lambda p: p.stem)
def test_image_chapter_runs_with_the_smoke_profile(notebook, smoke_env):
  check_smoke_run(notebook, smoke_env)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS[:1], ids=lambda p: p.stem)
def test_unknown_profile_fails_with_an_error_naming_profile(notebook, smoke_env, tmp_path):
  with pytest.raises(papermill.PapermillExecutionError, match="profile must be one of") as e:
    execute(notebook, tmp_path / notebook.name, "huge")
  assert "'huge'" in str(e.value)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS[:1], ids=lambda p: p.stem)
def test_unknown_parameter_fails_with_an_error_naming_it(notebook, smoke_env, tmp_path):
  """papermill only warns about an undeclared parameter; the notebooks refuse it, so that a
  typo such as `-p profle paper` cannot silently run the default profile."""
  with pytest.raises(papermill.PapermillExecutionError, match="unknown notebook parameter") as e:
    papermill.execute_notebook(str(notebook.relative_to(REPO)), str(tmp_path / notebook.name),
                               parameters={"profile": "smoke", "profle": "paper"}, kernel_name="python3",
                               cwd=str(REPO), progress_bar=False)
  assert "'profle'" in str(e.value)
