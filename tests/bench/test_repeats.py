"""The repeated benchmark processes: their order, resuming, and a clear error where one is missing."""
import pytest

from mone.bench import repeats


def test_processes_alternate_the_files_and_a_rerun_resumes(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  names = [n for n, _ in repeats.commands("small")]
  assert names[:6] == ["targets-1.json", "video-1.json", "routing-1.json", "throughput-1.json", "image-1.json",
                       "targets-2.json"]
  files = len(repeats.PLANS["small"])
  assert files == 5 and len(names) == files * repeats.RUNS
  argv = dict(repeats.commands("small"))["video-1.json"]
  assert argv[1:3] == ["-m", "mone.bench"] and argv[-2:] == ["--json", str(repeats.directory("small") / "video-1.json")]
  assert argv[argv.index("--video-frames") + 1] == "32" and argv[argv.index("--video-image-size") + 1] == "256"
  # the throughput file times the same clip as the video file, on a batch of 2 clips
  clips = dict(repeats.commands("small"))["throughput-2.json"]
  assert clips[clips.index("--video-frames") + 1] == "32" and clips[clips.index("--video-batch") + 1] == "2"
  image = dict(repeats.commands("small"))["image-3.json"]
  assert image[image.index("--variant") + 1] == "Ti/16" and image[image.index("--batch") + 1] == "32"
  with pytest.raises(FileNotFoundError, match="python -m mone.bench.repeats --profile small"):
    repeats.load("small")
  ran = []  # the processes are not started: only which ones would be
  monkeypatch.setattr(repeats.subprocess, "run", lambda argv, **kw: ran.append(argv[-1]))
  repeats.directory("small").mkdir(parents=True)
  (repeats.directory("small") / "targets-1.json").write_text('{"complete": true}')
  (repeats.directory("small") / "video-1.json").write_text('{"complete": false}')  # killed after a group
  repeats.measure("small", log=lambda *a, **k: None)
  assert len(ran) == files * repeats.RUNS - 1 and not any(p.endswith("targets-1.json") for p in ran)
  assert any(p.endswith("video-1.json") for p in ran)
  ran.clear()
  repeats.measure("small", recompute=True, log=lambda *a, **k: None)
  assert len(ran) == files * repeats.RUNS
  ran.clear()
  repeats.measure("small", recompute=True, log=lambda *a, **k: None, names=["image", "throughput"])
  assert [p.rsplit("/", 1)[1] for p in ran] == [f"{n}-{i}.json" for i in (1, 2, 3) for n in ("throughput", "image")]
  with pytest.raises(ValueError, match="no file \\['clips'\\] in the plan"):
    repeats.commands("small", names=["clips"])


def test_files_added_later_are_left_out_until_every_process_of_theirs_is_complete(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  folder = repeats.directory("small")
  folder.mkdir(parents=True)
  write = lambda name, i, complete=True: (folder / f"{name}-{i}.json").write_text(
      f'{{"complete": {str(complete).lower()}, "i": {i}}}')
  for name in ("targets", "video", "routing"):
    for i in (1, 2, 3):
      write(name, i)
  assert repeats.LATER == ("throughput", "image")
  rep = repeats.load("small")
  assert list(rep) == ["targets", "video", "routing"] and [b["i"] for b in rep["video"]] == [1, 2, 3]
  write("throughput", 1), write("throughput", 2), write("throughput", 3, complete=False), write("image", 1)
  assert list(repeats.load("small")) == ["targets", "video", "routing"]  # no file of theirs is half-read
  write("throughput", 3)
  assert list(repeats.load("small")) == ["targets", "video", "routing", "throughput"]
  (folder / "routing-2.json").unlink()  # a file of the first three is still required
  with pytest.raises(FileNotFoundError, match="routing-2.json"):
    repeats.load("small")


def test_bad_profile_and_runs_are_refused_by_name(capsys):
  with pytest.raises(ValueError, match="profile must be one of \\['paper', 'small', 'smoke'\\], got 'tiny'"):
    repeats.directory("tiny")
  with pytest.raises(ValueError, match="runs must be >= 1, got 0"):
    repeats.commands("small", 0)
  with pytest.raises(SystemExit):
    repeats.main(["--runs", "0"])
  assert "--runs must be >= 1, got 0" in capsys.readouterr().err
