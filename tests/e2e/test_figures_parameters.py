"""`make figures` with bad parameters: one line naming the parameter, exit status 2, nothing run or
deleted; and a chapter that fails leaves its executed notebook as it was."""
import importlib.util
import subprocess

import nbformat
import pytest

from mone.configs import profiles

from helpers import REPO


def _script():
  spec = importlib.util.spec_from_file_location("figures_parameters", REPO / "scripts" / "figures_parameters.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


params = _script()


def _status() -> str:
  return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                        text=True, check=True).stdout


@pytest.mark.parametrize("args, names", [
    (["PROFILE=bogus"], ("PROFILE", "'bogus'", "smoke, small, paper")),
    (["SEED=abc"], ("SEED", "'abc'", "non-negative integer")),
    (["SEED=-1"], ("SEED", "'-1'", "non-negative integer")),
    (["PROFILE=paper"], ("DATA_DIR", "PROFILE=paper", "imagenet21k")),
    (["PROFILE=paper", "DATA_DIR=/nonexistent/tfds"], ("DATA_DIR", "'/nonexistent/tfds'", "not a directory")),
    (["DEVICE=tpu"], ("DEVICE", "'tpu'", "auto, cpu or gpu")),
])
def test_a_bad_parameter_to_make_figures_is_one_line_and_changes_nothing(args, names):
  import os
  before = _status()
  # as a reader types it: not a sub-make of `make test` (which would announce its directory on stdout)
  env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
  out = subprocess.run(["make", "figures", *args], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
  assert out.returncode == 2, out
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1 and "Traceback" not in out.stderr and not out.stdout.strip(), out
  assert all(n in lines[0] for n in names), lines[0]
  assert _status() == before


def test_a_data_dir_without_a_dataset_the_paper_profile_reads_names_the_missing_one(tmp_path):
  for name in params.PAPER_DATASETS[:2]:
    (tmp_path / name).mkdir()
  line = params.problem("paper", "", str(tmp_path))
  assert "kinetics400" in line and "imagenet21k" not in line and line.startswith("DATA_DIR")
  (tmp_path / "kinetics400").mkdir()
  assert params.problem("paper", "3", str(tmp_path)) is None
  assert params.problem("small", "", "") is None and params.problem("smoke", "12", "/nonexistent") is None


def test_the_checks_lists_are_the_packages():
  assert params.PROFILES == profiles.PROFILES
  tfds = {profiles.image_config("paper", "/d").tfds_name} | {profiles.video_config("paper", t, "/d").tfds_name
                                                                for t in profiles.TASKS}
  assert set(params.PAPER_DATASETS) == tfds


@pytest.mark.slow
def test_a_chapter_that_fails_leaves_its_executed_notebook_as_it_was(tmp_path):
  from notebook_util import run_notebook
  src = tmp_path / "fails.ipynb"
  nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
                                          "language_info": {"name": "python"}})
  nb.cells = [nbformat.v4.new_code_cell('profile = "small"', metadata={"tags": ["parameters"]}),
              nbformat.v4.new_code_cell("print('first cell ran')"), nbformat.v4.new_code_cell("raise RuntimeError('boom')")]
  nbformat.write(nb, str(src))
  out = tmp_path / "executed" / "fails.ipynb"
  out.parent.mkdir()
  out.write_text("the committed chapter")
  with pytest.raises(Exception, match="boom"):
    run_notebook.execute(str(src), str(out), "small", progress_bar=False, cwd=str(tmp_path))
  assert out.read_text() == "the committed chapter"
  assert sorted(p.name for p in out.parent.iterdir()) == ["fails.ipynb"]  # no partial file left behind
  nb.cells.pop()  # the same chapter, fixed: now it replaces the executed copy
  nbformat.write(nb, str(src))
  run_notebook.execute(str(src), str(out), "small", progress_bar=False, cwd=str(tmp_path))
  assert "first cell ran" in out.read_text() and sorted(p.name for p in out.parent.iterdir()) == ["fails.ipynb"]


@pytest.mark.slow
def test_a_chapter_killed_mid_run_leaves_its_executed_notebook_and_a_rerun_finishes_it(tmp_path):
  import os
  import signal
  import sys
  import time
  src = tmp_path / "slow.ipynb"
  nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
                                          "language_info": {"name": "python"}})
  flag = tmp_path / "started"
  nb.cells = [nbformat.v4.new_code_cell('profile = "small"\nslow = True', metadata={"tags": ["parameters"]}),
              nbformat.v4.new_code_cell(f"open({str(flag)!r}, 'w').close()\nimport time\nif slow: time.sleep(600)"),
              nbformat.v4.new_code_cell("print('done')")]
  nbformat.write(nb, str(src))
  out = tmp_path / "executed" / "slow.ipynb"
  out.parent.mkdir()
  out.write_text("the committed chapter")
  # as Make runs it: its own process, here killed while the second cell runs (papermill has saved the first by then)
  proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_notebook.py"), str(src), str(out), "small"],
                          cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 120
  while not flag.exists() and time.time() < deadline:
    time.sleep(0.2)
  assert flag.exists()
  os.killpg(proc.pid, signal.SIGKILL)
  proc.wait(timeout=60)
  assert out.read_text() == "the committed chapter"
  nb.cells[0].source = 'profile = "small"\nslow = False'
  nbformat.write(nb, str(src))
  subprocess.run([sys.executable, str(REPO / "scripts" / "run_notebook.py"), str(src), str(out), "small"], cwd=tmp_path,
                 check=True, capture_output=True, timeout=300)
  assert "done" in out.read_text() and sorted(p.name for p in out.parent.iterdir()) == ["slow.ipynb"]


def test_a_cells_printing_is_stored_the_same_however_the_kernel_split_it():
  from notebook_util import run_notebook
  split = nbformat.v4.new_notebook()
  split.cells = [nbformat.v4.new_code_cell("x", outputs=[
      nbformat.v4.new_output("stream", name="stdout", text="a\n"), nbformat.v4.new_output("stream", name="stdout", text="b\n"),
      nbformat.v4.new_output("stream", name="stderr", text="w\n"), nbformat.v4.new_output("stream", name="stdout", text="c\n")])]
  whole = nbformat.v4.new_notebook()
  whole.cells = [nbformat.v4.new_code_cell("x", outputs=[
      nbformat.v4.new_output("stream", name="stdout", text="a\nb\n"), nbformat.v4.new_output("stream", name="stderr", text="w\n"),
      nbformat.v4.new_output("stream", name="stdout", text="c\n")])]
  run_notebook.merge_streams(split)
  assert split.cells[0].outputs == whole.cells[0].outputs
