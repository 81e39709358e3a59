"""The video chapters run end to end with the smoke profile: a file of their own, so that
pytest-xdist runs them beside the image chapters (see notebook_util)."""
import pytest
from notebook_util import NOTEBOOKS, VIDEO_CHAPTERS, check_smoke_run

pytest.importorskip("papermill")


def test_the_video_chapters_exist():
  assert sorted(p.stem for p in NOTEBOOKS if p.stem in VIDEO_CHAPTERS) == sorted(VIDEO_CHAPTERS)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", [p for p in NOTEBOOKS if p.stem in VIDEO_CHAPTERS], ids=lambda p: p.stem)
def test_video_chapter_runs_with_the_smoke_profile(notebook, smoke_env):
  check_smoke_run(notebook, smoke_env)
