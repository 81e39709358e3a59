"""A training state parked on one machine resumes on the next as from its own checkpoint."""
import shutil
import tarfile

import pytest

from mone.train import handover, loop

from helpers import tiny


@pytest.mark.slow
def test_a_parked_state_resumes_in_a_fresh_workdir_to_the_uninterrupted_runs_numbers(tmp_path):
  cfg = tiny(kind="mone", e_c=0.3, eval_every=3)
  whole = loop.train(cfg, tmp_path / "whole", progress=False)
  # The first machine: its run stopped after step 3's checkpoint (its later work was lost with it).
  first = tmp_path / "first"
  shutil.copytree(tmp_path / "whole", first)
  shutil.rmtree(first / "checkpoints" / "6")
  (first / "metrics.json").unlink()
  assert handover.pack(first, tmp_path / "parked" / "run.tar.gz") == 3
  assert handover.parked_step(tmp_path / "parked" / "run.tar.gz") == 3
  # The next machine has none of the first one's files, only the parked state.
  assert handover.unpack(tmp_path / "parked" / "run.tar.gz", tmp_path / "next") == 3
  assert handover.steps(tmp_path / "next") == [3] and (tmp_path / "next" / "metrics.jsonl").exists()
  again = loop.train(cfg, tmp_path / "next", progress=False)
  assert again["resumed_from_step"] == 3
  assert again["history"] == whole["history"] and again["curve"] == whole["curve"] and again["evals"] == whole["evals"]
  assert [(s["from_step"], s["to_step"]) for s in again["trained_on"]] == [(0, 3), (3, 6)]


def test_packing_is_the_same_bytes_for_the_same_checkpoint_and_keeps_newer_training(tmp_path):
  cfg = tiny(kind="vit")
  loop.train(cfg, tmp_path / "run", progress=False)
  a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
  assert handover.pack(tmp_path / "run", a) == 6 and handover.pack(tmp_path / "run", b) == 6
  assert a.read_bytes() == b.read_bytes() and not list(tmp_path.glob("*.partial"))
  # A workdir that trained as far or further is left as it is.
  assert handover.unpack(a, tmp_path / "run") is None
  # A workdir without a checkpoint packs nothing and writes no file.
  (tmp_path / "empty").mkdir()
  assert handover.pack(tmp_path / "empty", tmp_path / "none.tar.gz") is None and not (tmp_path / "none.tar.gz").exists()


@pytest.mark.parametrize("name", ["../outside", "/etc/passwd", "elsewhere/file"])
def test_a_parked_file_with_a_member_outside_its_two_folders_is_refused(tmp_path, name):
  (tmp_path / "payload").write_text("x")
  bad = tmp_path / "bad.tar.gz"
  with tarfile.open(bad, "w:gz") as tar:
    tar.add(tmp_path / "payload", arcname="checkpoints/5/state")
    tar.add(tmp_path / "payload", arcname=name)
  with pytest.raises(ValueError, match="a parked training state holds only checkpoints/<step>/ and metrics.jsonl"):
    handover.unpack(bad, tmp_path / "workdir")
  assert not (tmp_path / "workdir").exists()
