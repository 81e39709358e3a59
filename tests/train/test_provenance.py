"""Every new run file names the code and machine that trained it (`results.code_provenance`), so a
retrained run is only compared with runs of its own code; the chapters' `results.provenance` stays
as it was, so their committed results do not change."""
import json
import os
import shutil
import subprocess

import jax
import jaxlib
import pytest

from mone import results
from mone.train import loop

from helpers import REPO, tiny

KEYS = {"commit", "dirty", "xla_flags", "jax", "jaxlib", "cpu_model", "isa", "allocator"}


def _git(*args) -> str:
  return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def test_a_run_file_records_the_commit_flags_and_machine_that_trained_it(tmp_path):
  m = loop.train(tiny(steps=4, log_every=2, checkpoint_every=4), tmp_path, progress=False)
  saved = json.loads((tmp_path / "metrics.json").read_text())
  code = saved["code"]
  assert code == m["code"] and set(code) == KEYS
  assert code["commit"] == _git("rev-parse", "HEAD") and len(code["commit"]) == 40
  assert isinstance(code["dirty"], bool)
  assert code["dirty"] == bool(_git("status", "--porcelain", "--untracked-files=no", "--", "mone"))
  assert code["xla_flags"] == os.environ.get("XLA_FLAGS", "")  # conftest.py sets the tests' flags
  assert (code["jax"], code["jaxlib"]) == (jax.__version__, jaxlib.__version__)
  assert code["cpu_model"] == results.cpu_model() and code["cpu_model"]
  assert code["isa"] == results.xla_cpu_isa()  # the tests' flags name no ISA: the host's, or None
  assert code["isa"] is None or code["isa"].endswith(" (host)")
  # The malloc library this process runs with (the training commands preload tcmalloc; pytest does not).
  preloaded = "tcmalloc" in os.environ.get("LD_PRELOAD", "")
  assert code["allocator"] == results.allocator() == ("tcmalloc" if preloaded else "glibc")
  # The one process that trained it is its one part, with the same code.
  assert saved["trained_on"] == [{"device": saved["device"], "matmul_precision": "default", "code": code,
                                  "from_step": 0, "to_step": 4}]
  # What the chapters' results files record is unchanged: no code there.
  assert set(results.provenance()) == {"versions", "device"}


def test_the_isa_is_the_one_xla_flags_name_else_the_hosts_best(monkeypatch):
  monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=AVX2")
  assert results.xla_cpu_isa() == "AVX2"
  code = results.code_provenance()
  assert code["isa"] == "AVX2" and code["xla_flags"] == "--xla_force_host_platform_device_count=2 --xla_cpu_max_isa=AVX2"
  monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX512 --xla_cpu_max_isa=SSE4_2")
  assert results.xla_cpu_isa() == "SSE4_2"  # the last one given
  monkeypatch.delenv("XLA_FLAGS")
  assert results.code_provenance()["xla_flags"] == ""
  monkeypatch.setattr(results, "_host_cpu_flags", lambda: frozenset({"fpu", "sse4_2", "avx", "avx2", "fma"}))
  assert results.xla_cpu_isa() == "AVX2 (host)"
  monkeypatch.setattr(results, "_host_cpu_flags", lambda: frozenset({"neon", "asimd"}))  # not x86
  assert results.xla_cpu_isa() is None
  assert results.best_isa({"avx512f", "amx_tile", "avx2"}) == "AMX"
  assert results.best_isa({"avx512f", "avx2", "avx", "sse4_2"}) == "AVX512"


def test_outside_a_git_checkout_commit_and_dirty_are_none(tmp_path, monkeypatch):
  monkeypatch.setattr(results, "REPO", tmp_path)  # an installed package: no .git beside it
  assert results.git_state() == (None, None)
  code = results.code_provenance()
  assert code["commit"] is None and code["dirty"] is None and code["jax"] == jax.__version__


@pytest.mark.slow  # it resumes a run
def test_a_resumed_run_keeps_each_parts_own_code(tmp_path, monkeypatch):
  """A run resumed on other code records both: its first part keeps the code that trained it
  (kept in the checkpoints), the second and the run file name this process's. A checkpoint of
  code that recorded no `code` resumes with its parts as they were."""
  cfg = tiny(steps=4, log_every=2, checkpoint_every=2)
  earlier = {"commit": "0" * 40, "dirty": True, "xla_flags": "--xla_cpu_max_isa=AVX2", "jax": "0.4.30",
             "jaxlib": "0.4.30", "cpu_model": "another CPU", "isa": "AVX2"}
  with monkeypatch.context() as mp:
    mp.setattr(results, "code_provenance", lambda: dict(earlier))
    first = loop.train(cfg, tmp_path, progress=False)
  assert first["code"] == earlier and first["trained_on"][0]["code"] == earlier

  def resume():
    shutil.rmtree(tmp_path / "checkpoints" / "4")  # killed after step 2's checkpoint
    (tmp_path / "metrics.json").unlink()
    return loop.train(cfg, tmp_path, progress=False)

  m = resume()
  assert m["resumed_from_step"] == 2 and m["code"]["commit"] == _git("rev-parse", "HEAD")
  assert [(p["from_step"], p["to_step"]) for p in m["trained_on"]] == [(0, 2), (2, 4)]
  assert m["trained_on"][0]["code"] == earlier and m["trained_on"][1]["code"] == m["code"] != earlier
  assert json.loads((tmp_path / "metrics.json").read_text())["trained_on"][0]["code"] == earlier
  # As a checkpoint written before parts recorded their code holds them.
  saved = tmp_path / "checkpoints" / "2" / "history" / "metadata"  # orbax's JsonSave of the loop's history
  history = json.loads(saved.read_text())
  history["trained_on"] = [{k: v for k, v in p.items() if k != "code"} for p in history["trained_on"]]
  saved.write_text(json.dumps(history))
  old = resume()
  assert "code" not in old["trained_on"][0] and old["trained_on"][0]["to_step"] == 2
  assert old["trained_on"][1]["code"] == old["code"] == m["code"]
