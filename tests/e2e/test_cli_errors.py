"""The training command's answers to bad input: one line naming the parameter, nothing written."""
import importlib

import pytest

cli = importlib.import_module("mone.train.__main__")


def _error(capsys, argv) -> str:
  with pytest.raises(SystemExit) as e:
    cli.main(argv)
  assert e.value.code == 2
  err = capsys.readouterr().err
  assert "Traceback" not in err
  return err.strip().splitlines()[-1]


def test_more_devices_than_the_machine_has_is_one_line_and_writes_nothing(tmp_path, capsys):
  import jax
  wd = tmp_path / "run"
  err = _error(capsys, ["--config", "smoke", "--workdir", str(wd), f"num_devices={jax.device_count() + 1}"])
  assert err.endswith(f"num_devices must be in [0, {jax.device_count()}] on this machine (0: all devices), got {jax.device_count() + 1}")
  assert not wd.exists()


def test_a_workdir_that_cannot_be_created_is_one_line(tmp_path, capsys):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  err = _error(capsys, ["--config", "smoke", "--workdir", str(blocker / "run")])
  assert "--workdir" in err and "cannot be created" in err
  assert blocker.read_text() == ""


def test_overrides_on_both_sides_of_an_option_all_apply(tmp_path, monkeypatch):
  seen = {}

  def fake_train(cfg, workdir, progress):  # the command's parsing only: no training
    seen.update(cfg=cfg, progress=progress)
    return {"evals": []}

  monkeypatch.setattr(cli.loop, "train", fake_train)
  cli.main(["--config", "smoke", "--workdir", str(tmp_path / "run"), "steps=40", "--quiet", "sharding=fsdp"])
  assert seen["cfg"].steps == 40 and seen["cfg"].sharding == "fsdp" and seen["progress"] is False


def test_check_devices_and_make_workdir_name_their_parameter(tmp_path):
  cli.check_devices(0, 1), cli.check_devices(1, 1)
  with pytest.raises(ValueError, match=r"num_devices must be in \[0, 1\]"):
    cli.check_devices(-1, 1)
  cli.make_workdir("gs://bucket/run")  # remote: the checkpointer creates it
  cli.make_workdir(str(tmp_path / "a" / "b"))
  assert (tmp_path / "a" / "b").is_dir()
