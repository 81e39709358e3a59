"""The repeated benchmark processes: their order, resuming, and a clear error where one is missing."""
import pytest

from mone.bench import repeats


def test_processes_alternate_the_files_and_a_rerun_resumes(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  names = [n for n, _ in repeats.commands("small")]
  assert names[:4] == ["targets-1.json", "video-1.json", "routing-1.json", "targets-2.json"]
  assert len(names) == 3 * repeats.RUNS
  argv = dict(repeats.commands("small"))["video-1.json"]
  assert argv[1:3] == ["-m", "mone.bench"] and argv[-2:] == ["--json", str(repeats.directory("small") / "video-1.json")]
  assert argv[argv.index("--video-frames") + 1] == "32" and argv[argv.index("--video-image-size") + 1] == "256"
  with pytest.raises(FileNotFoundError, match="python -m mone.bench.repeats --profile small"):
    repeats.load("small")
  ran = []  # the processes are not started: only which ones would be
  monkeypatch.setattr(repeats.subprocess, "run", lambda argv, **kw: ran.append(argv[-1]))
  repeats.directory("small").mkdir(parents=True)
  (repeats.directory("small") / "targets-1.json").write_text('{"complete": true}')
  (repeats.directory("small") / "video-1.json").write_text('{"complete": false}')  # killed after a group
  repeats.measure("small", log=lambda *a, **k: None)
  assert len(ran) == 3 * repeats.RUNS - 1 and not any(p.endswith("targets-1.json") for p in ran)
  assert any(p.endswith("video-1.json") for p in ran)
  ran.clear()
  repeats.measure("small", recompute=True, log=lambda *a, **k: None)
  assert len(ran) == 3 * repeats.RUNS


def test_bad_profile_and_runs_are_refused_by_name(capsys):
  with pytest.raises(ValueError, match="profile must be one of \\['paper', 'small', 'smoke'\\], got 'tiny'"):
    repeats.directory("tiny")
  with pytest.raises(ValueError, match="runs must be >= 1, got 0"):
    repeats.commands("small", 0)
  with pytest.raises(SystemExit):
    repeats.main(["--runs", "0"])
  assert "--runs must be >= 1, got 0" in capsys.readouterr().err
