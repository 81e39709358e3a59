"""scripts/train_queue.py: how workers take the plan's runs, and its errors on bad options."""
import importlib.util
import json
import logging
import os
import subprocess
import sys
import threading

import pytest

from mone import results
from mone.runs import plan, recalibration
from mone.train import loop

_spec = importlib.util.spec_from_file_location("train_queue", results.REPO / "scripts" / "train_queue.py")
train_queue = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_queue)


def _two_runs(tmp_path, monkeypatch):
  """Two of the plan's runs, with run files and checkpoints under tmp_path."""
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  (tmp_path / "results" / "runs").mkdir(parents=True)
  return plan.runs()[:2]


def test_a_run_is_held_by_one_process_until_it_closes_its_lock_or_dies(tmp_path, monkeypatch):
  from mone.runs import experiments
  (_, cfg), _ = _two_runs(tmp_path, monkeypatch)
  lock = train_queue.claim(cfg)
  assert lock is not None and train_queue.claim(cfg) is None  # a second open file of the same run: refused
  lock.close()
  lock = train_queue.claim(cfg)
  assert lock is not None
  lock.close()
  # Another process holds it, then is killed: the kernel frees the run for the next queue.
  path = experiments.workdir(cfg).parent / f"{experiments.workdir(cfg).name}.lock"
  holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'w'); "
                             "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(300)", str(path)],
                            stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    assert train_queue.claim(cfg) is None
  finally:
    holder.kill()
    holder.wait()
  lock = train_queue.claim(cfg)
  assert lock is not None
  lock.close()


def test_a_worker_takes_the_first_run_neither_finished_nor_held(tmp_path, monkeypatch):
  from mone.runs import experiments
  runs = _two_runs(tmp_path, monkeypatch)
  first, second = runs
  held = train_queue.claim(first[1])  # another worker trains the first run
  taken, lock = train_queue.next_run(runs)
  assert taken == second
  assert train_queue.next_run(runs) is None  # both held
  lock.close()
  experiments.run_path(second[1]).write_text("{}")  # the second run lands
  assert train_queue.next_run(runs) is None
  held.close()
  taken, lock = train_queue.next_run(runs)  # its worker died: the first run is free again
  assert taken == first
  lock.close()
  experiments.run_path(first[1]).write_text("{}")
  assert train_queue.next_run(runs) is None


def test_a_run_starts_only_where_its_estimate_with_the_margin_ends_before_the_deadline():
  margin = train_queue.MARGIN
  assert margin > 1
  assert train_queue.finishes_in_time(10 ** 9, now=0.0, deadline=None)  # no deadline: everything starts
  assert train_queue.finishes_in_time(None, now=0.0, deadline=None)
  assert not train_queue.finishes_in_time(None, now=0.0, deadline=10 ** 9)  # no estimate: it might not finish
  assert train_queue.finishes_in_time(100.0, now=50.0, deadline=50.0 + margin * 100.0)
  assert not train_queue.finishes_in_time(100.0, now=50.0, deadline=50.0 + margin * 100.0 - 1)
  assert not train_queue.finishes_in_time(100.0, now=50.0, deadline=150.0)  # fits only without the margin


def test_a_worker_passes_over_a_run_that_does_not_fit_and_leaves_it_free(tmp_path, monkeypatch):
  runs = _two_runs(tmp_path, monkeypatch)
  first, second = runs
  taken, lock = train_queue.next_run(runs, fits=lambda cfg: cfg is not first[1])
  assert taken == second
  other = train_queue.claim(first[1])  # not claimed on the way: another queue with time for it takes it
  assert other is not None
  other.close()
  lock.close()
  assert train_queue.next_run(runs, fits=lambda cfg: False) is None


def test_a_queue_with_too_little_time_trains_nothing_and_says_why(tmp_path, monkeypatch, caplog):
  """With no finished run to time them by, no run has an estimate: under --finish-within none starts
  (the worker the queue starts, here in this process)."""
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  monkeypatch.setattr(sys, "argv", ["train_queue.py", "--only", "digits64-vit-", "--finish-within", "2",
                                    "--workers", "1", "--worker", "0"])
  with caplog.at_level("INFO"):
    train_queue.main()
  assert not list((tmp_path / "results").rglob("*.json")) and not (tmp_path / "cache").exists()
  from mone.runs import experiments, plan
  n = sum("digits64-vit-" in experiments.run_path(cfg).name for _, cfg in plan.runs())
  stops = [r.getMessage() for r in caplog.records if "queue stops" in r.getMessage()]
  assert n > 0 and stops == [f"queue stops: {n} of {n} runs left, {n} of them too long for the 2.0 h left "
                             f"(--finish-within; estimates with a margin of {train_queue.MARGIN})"]


def test_longest_first_puts_runs_without_an_estimate_first_and_keeps_plan_order_for_ties():
  runs = ["a", "b", "c", "d", "e"]
  assert train_queue.longest_first(runs, [1.0, 4.0, None, 1.0, 2.5]) == ["c", "b", "e", "a", "d"]
  assert train_queue.longest_first(runs, [None] * 5) == runs


def test_shortest_first_puts_runs_without_an_estimate_last_and_keeps_plan_order_for_ties():
  runs = ["a", "b", "c", "d", "e"]
  assert train_queue.shortest_first(runs, [1.0, 4.0, None, 1.0, 2.5]) == ["a", "d", "e", "b", "c"]
  assert train_queue.shortest_first(runs, [None] * 5) == runs


def test_longest_first_resumes_the_runs_with_a_checkpoint_before_the_others(tmp_path, monkeypatch):
  from mone.runs import experiments, plan
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path))
  cfgs = [cfg for _, cfg in plan.runs()[:3]]
  (experiments.workdir(cfgs[0]) / "checkpoints" / "8000.orbax-checkpoint-tmp-17").mkdir(parents=True)  # unfinished
  (experiments.workdir(cfgs[1]) / "checkpoints" / "250").mkdir(parents=True)
  assert [train_queue.resumable(c) for c in cfgs] == [False, True, False]
  runs = ["a", "b", "c", "d"]
  assert train_queue.longest_first(runs, [1.0, 4.0, 2.0, 3.0], [False, False, True, True]) == ["d", "c", "b", "a"]


@pytest.mark.parametrize("flags, message", [(["--only", "no-such-run"], "no run's file name contains --only"),
                                            (["--workers", "0"], "--workers must be >= 1, got 0"),
                                            (["--finish-within", "0"], "--finish-within must be > 0 hours, got 0.0"),
                                            (["--finish-within", "-1.5"], "--finish-within must be > 0 hours, got -1.5"),
                                            (["--order", "fastest"], "argument --order: invalid choice: 'fastest'"),
                                            (["--workers", "999", "--pin-cores"], "--pin-cores needs --workers in [1, "),
                                            (["--isa-twins"], "--isa-twins is an option of --calibration"),
                                            (["--calibration", "--twins"], "--calibration and --twins train different runs")])
def test_bad_options_name_the_flag_and_train_nothing(flags, message, monkeypatch, capsys):
  monkeypatch.setattr(sys, "argv", ["train_queue.py", *flags])
  with pytest.raises(SystemExit) as exit_info:
    train_queue.main()
  assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_the_calibration_queue_lists_its_pending_runs_apart_from_their_twins(monkeypatch, capsys):
  # Nothing trains with --list; what it lists is recalibration.pending(), twins in a queue of their own.
  for flags, twins in ((["--calibration"], False), (["--calibration", "--isa-twins"], True)):
    for var in ("MONE_RESULTS_DIR", "MONE_CACHE_DIR", "XLA_FLAGS"):  # restored after the test, set or not
      monkeypatch.setenv(var, "")
      monkeypatch.delenv(var)
    monkeypatch.setattr(sys, "argv", ["train_queue.py", *flags, "--list"])
    train_queue.main()
    out = capsys.readouterr().out
    listed = [line.split()[-1] for line in out.splitlines() if "seed 10" in line]
    expected = [r for r in recalibration.pending() if r.twin == twins]
    assert listed and len(listed) == len(expected)
    # every arm of the current calibration has a committed run of its name and kind to be timed from
    assert " ? h " not in out, out
    # the files already committed are counted apart from the pending runs the list shows
    assert f"{recalibration.committed(twins)} calibration run files committed; {len(expected)} runs pending" in out
    for cal in recalibration.ALL:
      runs = list((results.RESULTS / cal.folder / "runs").glob("*.json"))
      assert recalibration.committed(cal=cal) == len(runs) and (runs or cal is recalibration.CURRENT)
    folder = recalibration.CURRENT.twin_folder if twins else recalibration.CURRENT.folder
    assert os.environ["MONE_RESULTS_DIR"].endswith(folder)
    assert (os.environ.get("XLA_FLAGS") == recalibration.ISA_TWIN_FLAGS) == twins
    # Workdirs of its own: an earlier calibration's run of the same config must not finish this one's.
    # The workers the queue starts inherit its cache folder and ask again: it stays the same.
    cache = os.environ["MONE_CACHE_DIR"]
    assert cache.endswith(f"/.cache/{folder}")
    recalibration.queue(isa_twins=twins, freeze=False)
    assert os.environ["MONE_CACHE_DIR"] == cache
    assert (os.environ.get("XLA_FLAGS") == recalibration.ISA_TWIN_FLAGS) == twins


@pytest.mark.slow
@pytest.mark.parametrize("order", ["plan", "longest"])
def test_workers_start_as_processes_and_skip_finished_runs(order, tmp_path):
  """--workers 2 starts two processes that read the plan and train nothing when every selected run
  has its run file, in either order."""
  from mone.runs import experiments, plan
  selected = [cfg for _, cfg in plan.runs() if "digits64-vit-" in experiments.run_path(cfg).name]
  (tmp_path / "runs").mkdir()
  for cfg in selected:
    (tmp_path / "runs" / experiments.run_path(cfg).name).write_text("{}")
  env = {**os.environ, "MONE_RESULTS_DIR": str(tmp_path)}
  out = subprocess.run([sys.executable, str(results.REPO / "scripts" / "train_queue.py"), "--only", "digits64-vit-",
                        "--workers", "2", "--order", order], capture_output=True, text=True, timeout=300, env=env)
  assert out.returncode == 0, out.stderr
  assert out.stderr.count("queue stops: 0 of 0 runs left") == 2  # each worker finds none left


@pytest.mark.slow
def test_every_worker_keeps_the_queues_deadline(tmp_path):
  """--finish-within reaches the workers as one deadline: with no finished run to time the runs by,
  neither starts one, and each says why."""
  from mone.runs import experiments, plan
  n = sum("digits64-vit-" in experiments.run_path(cfg).name for _, cfg in plan.runs())
  env = {**os.environ, "MONE_RESULTS_DIR": str(tmp_path / "results"), "MONE_CACHE_DIR": str(tmp_path / "cache")}
  out = subprocess.run([sys.executable, str(results.REPO / "scripts" / "train_queue.py"), "--only", "digits64-vit-",
                        "--workers", "2", "--finish-within", "1"], capture_output=True, text=True, timeout=300, env=env)
  assert out.returncode == 0, out.stderr
  assert out.stderr.count(f"queue stops: {n} of {n} runs left, {n} of them too long for the ") == 2, out.stderr
  assert not (tmp_path / "cache").exists()


class _Exits:
  """Stands in for `start_worker`: workers that end with `statuses`, one after the other."""
  def __init__(self, statuses):
    self.statuses, self.commands = list(statuses), []

  def __call__(self, command, core, **popen):
    self.commands.append(command)
    status = self.statuses.pop(0)
    return type("Worker", (), {"wait": lambda self: status})()


ONE = train_queue.ONE_RUN_DONE


@pytest.mark.parametrize("statuses, max_runs, starts, status", [
    ([ONE, ONE, 0], 0, 3, 0),        # a fresh process for each run, until one finds none left
    ([ONE, -9, ONE, 0], 0, 4, 0),    # a worker the OOM killer stopped starts again
    ([ONE] * 5, 2, 2, 0),            # --max-runs counts the slot's runs
    ([-9, 1, ONE, -9, -9, -9], 0, 6, 1),  # three failures in a row, not three in all, end the slot
])
def test_a_worker_slot_starts_a_process_per_run_and_again_after_a_crash(statuses, max_runs, starts, status,
                                                                         monkeypatch, caplog):
  fake = _Exits(statuses)
  monkeypatch.setattr(train_queue, "start_worker", fake)
  with caplog.at_level(logging.WARNING):
    assert train_queue.supervise("worker 1", ["train"], 1, max_runs) == status
  assert fake.commands == [["train", "--max-runs", "1"]] * starts
  crashes = [r.getMessage() for r in caplog.records]
  assert len(crashes) == sum(s not in (0, ONE) for s in statuses[:starts])
  if -9 in statuses:
    assert crashes[0] == ("worker 1 stopped (killed by signal 9, as the kernel's OOM killer does); "
                          "starting it again: its run resumes from its last checkpoint")
  if status:
    assert crashes[-1].endswith("; not starting it again after 3 failures in a row")


def test_a_calibration_slot_trains_the_twins_where_no_other_run_is_left(monkeypatch):
  # host: 1 run then none; twins: 1 run (which may open the host's next stage), then none on both
  fake = _Exits([ONE, 0, ONE, 0, 0])
  monkeypatch.setattr(train_queue, "start_worker", fake)
  assert train_queue.supervise("worker 0", ["host"], 0, 0, ["twin"]) == 0
  assert [c[0] for c in fake.commands] == ["host", "host", "twin", "host", "twin"]
  # the calibration queue gives its slots the twins to fall back on; a twins' queue has none
  run = recalibration.pending()[0]
  monkeypatch.setattr(train_queue.recalibration, "queue", lambda isa_twins, freeze: [(run.label, run.config())])
  for flags, commands in (([], [[], ["--isa-twins"]]), (["--isa-twins"], [["--isa-twins"]])):
    fake = _Exits([0, 0])
    monkeypatch.setattr(train_queue, "start_worker", fake)
    monkeypatch.setattr(sys, "argv", ["train_queue.py", "--calibration", "--workers", "1"] + flags)
    with pytest.raises(SystemExit) as exit_info:
      train_queue.main()
    assert exit_info.value.code == 0
    assert [c[c.index("--order") + 2:-2] for c in fake.commands] == [["--calibration"] + f for f in commands]
    # the cheapest runs first: they decide a failing stage before the long ones spend their hours
    assert all(c[c.index("--order") + 1] == "shortest" for c in fake.commands)
  # without a fallback a slot stops at the first worker that finds nothing
  fake = _Exits([ONE, 0])
  monkeypatch.setattr(train_queue, "start_worker", fake)
  assert train_queue.supervise("worker 0", ["host"], 0, 0) == 0 and len(fake.commands) == 2


def test_a_worker_stops_after_its_one_run_with_the_status_that_starts_the_next(tmp_path, monkeypatch):
  """A worker the queue started (--worker) trains one run and says more may be left (ONE_RUN_DONE);
  one that finds none left ends with 0 (`supervise` then stops its slot)."""
  from mone.runs import experiments
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  trained = []

  def run(cfg, progress):
    trained.append(experiments.run_path(cfg).name)
    experiments.run_path(cfg).parent.mkdir(parents=True, exist_ok=True)
    experiments.run_path(cfg).write_text("{}")
    return {"accuracy": 0.5, "train_steps": 1}
  monkeypatch.setattr(train_queue.experiments, "run", run)
  monkeypatch.setattr(train_queue, "save_weights", lambda cfg: None)
  monkeypatch.setattr(sys, "argv", ["train_queue.py", "--only", "digits64-vit-", "--workers", "2", "--worker", "1",
                                    "--max-runs", "1"])
  with pytest.raises(SystemExit) as exit_info:
    train_queue.main()
  assert exit_info.value.code == ONE and len(trained) == 1
  for _, cfg in plan.runs():  # every other run finished meanwhile
    if "digits64-vit-" in experiments.run_path(cfg).name:
      experiments.run_path(cfg).write_text("{}")
  assert train_queue.main() is None and len(trained) == 1  # ends normally: exit status 0


@pytest.mark.parametrize("pin", [False, True])
def test_one_worker_too_trains_each_run_in_a_process_of_its_own(pin, monkeypatch):
  """The default on a CPU, one worker, is a slot like any other (`supervise`): a fresh process per run,
  on the first core this process may use where --pin-cores asks."""
  if pin and not hasattr(os, "sched_setaffinity"):
    pytest.skip("CPU affinity: Linux only")
  fake = _Exits([ONE, ONE, 0])
  cores = []
  monkeypatch.setattr(train_queue, "start_worker", lambda command, core, **popen: cores.append(core) or fake(command, core))
  monkeypatch.setattr(sys, "argv", ["train_queue.py", "--only", "digits64-vit-"] + (["--pin-cores"] if pin else []))
  with pytest.raises(SystemExit) as exit_info:
    train_queue.main()
  assert exit_info.value.code == 0 and len(fake.commands) == 3
  command = fake.commands[0]
  assert command[command.index("--workers") + 1] == "1" and command[command.index("--worker") + 1] == "0"
  assert command[-2:] == ["--max-runs", "1"]
  assert cores == [min(os.sched_getaffinity(0)) if pin else None] * 3


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity: Linux only")
def test_a_pinned_worker_runs_on_its_core_alone():
  core = max(os.sched_getaffinity(0))
  # What the worker may use, and what its run files would record (`device.cores_used`).
  show = [sys.executable, "-c", "import os; from mone import results; "
          "print(sorted(os.sched_getaffinity(0)), results.provenance()['device']['cores_used'])"]
  pinned = train_queue.start_worker(show, core, stdout=subprocess.PIPE, text=True)
  free = train_queue.start_worker(show, None, stdout=subprocess.PIPE, text=True)
  assert pinned.communicate(timeout=120)[0].strip() == f"[{core}] 1"
  mine = sorted(os.sched_getaffinity(0))  # unpinned: every core this test may use
  assert free.communicate(timeout=120)[0].strip() == f"{mine} {len(mine)}"


def test_twins_lists_the_cpu_twins_of_the_gpu_trained_runs_from_the_committed_files():
  from mone.runs import experiments, plan
  out = subprocess.run([sys.executable, str(results.REPO / "scripts" / "train_queue.py"), "--twins", "--list"],
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  names = [experiments.run_path(cfg).name for _, cfg in plan.twin_runs() + plan.study_twin_runs()]
  assert len(plan.study_twin_runs()) == 4  # Figure 6's router placement and count arms, trained on an H100
  assert names and all(n in out.stdout for n in names)
  assert f"of {len(names)} done" in out.stdout


def test_the_queue_trains_a_gpu_at_highest_matmul_precision_unless_told_otherwise():
  pick = loop.matmul_precision
  assert pick({}, gpu=True) == "highest" and pick({}, gpu=False) is None  # the CPU's default is full float32
  assert pick({"MONE_MATMUL_PRECISION": "default"}, gpu=True) == "default"  # the user's choice stands
  assert pick({"MONE_MATMUL_PRECISION": "high"}, gpu=False) == "high"


class _Done:  # a worker that has finished
  def wait(self):
    return 0


def _fake_gpu(monkeypatch, argv, environ=None):
  """Runs the queue's main as on a machine with a GPU, starting no real worker: the (command,
  matmul precision) of each worker it would start."""
  started = []

  def start(command, core, **popen):
    started.append((command, os.environ.get("MONE_MATMUL_PRECISION")))
    return _Done()

  monkeypatch.setenv("MONE_MATMUL_PRECISION", "")  # unset for the queue; restored after the test
  monkeypatch.delenv("JAX_PLATFORMS", raising=False)
  # --twins points MONE_RESULTS_DIR at the twins' folder in this process: recorded here, so that the
  # tests after this one read the repository's results again.
  # (delenv of an unset name records nothing: setenv first records that it was unset.)
  original = os.environ.get("MONE_RESULTS_DIR")
  monkeypatch.setenv("MONE_RESULTS_DIR", original or "")
  if original is None:
    monkeypatch.delenv("MONE_RESULTS_DIR")
  for k, v in (environ or {}).items():
    monkeypatch.setenv(k, v)
  monkeypatch.setattr(loop, "gpu_present", lambda: True)
  monkeypatch.setattr(train_queue, "start_worker", start)
  monkeypatch.setattr(sys, "argv", ["train_queue.py", *argv])
  return started


def test_the_repositorys_seed_plan_trains_on_the_cpu_not_on_a_gpu(monkeypatch, capsys):
  assert plan.trains_on(results.RESULTS) == "cpu"  # the committed plan has its device amendment
  for argv in (["--only", "digits64-"], ["--twins"]):
    started = _fake_gpu(monkeypatch, argv)
    with pytest.raises(SystemExit) as exit_info:
      train_queue.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and not started
    assert "the seed plan trains its runs on the CPU" in err and "set JAX_PLATFORMS=cpu" in err
  # JAX kept on the CPU of a GPU machine: the plan trains there, one worker, CPU numerics.
  started = _fake_gpu(monkeypatch, ["--only", "digits64-", "--workers", "2"], {"JAX_PLATFORMS": "cpu"})
  with pytest.raises(SystemExit) as exit_info:
    train_queue.main()
  assert exit_info.value.code == 0 and [p for _, p in started] == ["", ""]


def test_the_plan_names_its_device_only_where_its_amendment_is(tmp_path):
  assert plan.trains_on(tmp_path) is None  # a results folder of one's own: any device
  results.atomic_write_json(tmp_path / "seed_plan.json", {"seeds": [0, 1, 2, 3, 4]})
  assert plan.trains_on(tmp_path) is None
  results.atomic_write_json(tmp_path / "seed_plan.json", {"seeds": [0, 1, 2, 3, 4], "amendment": {}})
  assert plan.trains_on(tmp_path) == "cpu"


@pytest.mark.parametrize("how", ["allow-gpu", "own results"])
def test_on_a_gpu_the_workers_start_with_highest_precision_and_eight_of_them(how, monkeypatch, tmp_path):
  if how == "allow-gpu":
    started = _fake_gpu(monkeypatch, ["--only", "digits64-", "--allow-gpu"])
  else:
    started = _fake_gpu(monkeypatch, ["--only", "digits64-"], {"MONE_RESULTS_DIR": str(tmp_path)})
  import jax
  try:
    with pytest.raises(SystemExit) as exit_info:
      train_queue.main()
    assert jax.config.jax_default_matmul_precision == "highest"  # this process validated and set it
  finally:
    jax.config.update("jax_default_matmul_precision", None)
  assert exit_info.value.code == 0
  assert [p for _, p in started] == ["highest"] * 8
  assert [c[c.index("--worker") + 1] for c, _ in started] == [str(k) for k in range(8)]


def test_an_unknown_matmul_precision_stops_the_queue_in_one_line(monkeypatch, capsys):
  monkeypatch.setenv("MONE_MATMUL_PRECISION", "fastest")
  monkeypatch.setattr(sys, "argv", ["train_queue.py", "--list"])
  with pytest.raises(SystemExit) as exit_info:
    train_queue.main()
  err = capsys.readouterr().err
  assert exit_info.value.code == 2 and "Traceback" not in err
  assert err.strip().splitlines()[-1].endswith("MONE_MATMUL_PRECISION must be one of 'default', 'high', 'highest' "
                                               "(or another jax_default_matmul_precision value, e.g. 'tensorfloat32'), "
                                               "got 'fastest'")


def test_the_list_times_a_config_from_its_cpu_twin_when_no_other_cpu_run_has_it(tmp_path, monkeypatch):
  # MoD trained on GPUs only; its CPU twins are the only CPU runs that time it.
  from mone.runs import experiments, plan
  from mone import flops
  mod = [cfg for label, cfg in plan.runs() if label.startswith("MoD, seed ")]
  env = {**os.environ, "MONE_RESULTS_DIR": str(tmp_path), "MONE_CACHE_DIR": str(tmp_path / "cache")}
  cmd = [sys.executable, str(results.REPO / "scripts" / "train_queue.py"), "--list", "--only", "digits64-mod-"]
  rows = lambda out: [line for line in out.splitlines() if "digits64-mod-" in line]
  before = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
  assert before.returncode == 0, before.stderr
  assert len(rows(before.stdout)) == len(mod) and all("? h" in r for r in rows(before.stdout))
  twin = tmp_path / plan.TWINS / "runs" / experiments.run_path(mod[0]).name
  twin.parent.mkdir(parents=True)
  twin.write_text(json.dumps({"name": mod[0].name, "kind": mod[0].kind, "seed": mod[0].seed,
                              "config_hash": results.config_hash(mod[0]), "device": {"kind": "cpu"},
                              "train_steps": 8000, "wall_time_s": 7200.0,
                              "train_gflops": flops.train_gflops(mod[0])}))
  # A run in progress is listed with the part of it left: seed 1 logged step 6000 of 8000.
  assert flops.num_train_steps(mod[1]) == 8000
  with monkeypatch.context() as m:
    m.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
    log = experiments.workdir(mod[1]) / "metrics.jsonl"
  log.parent.mkdir(parents=True)
  log.write_text(json.dumps({"step": 5975}) + "\n" + json.dumps({"step": 6000}) + "\n")
  after = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
  assert after.returncode == 0, after.stderr
  found = rows(after.stdout)
  assert "at step 6000" in found[1] and "~0.5 h left" in found[1], found
  assert all("~2.0 h" in r and "left" not in r for i, r in enumerate(found) if i != 1), found  # the same config's rate


def test_the_log_shows_no_accuracy_of_a_run_the_ten_seed_plan_reads_all_together(tmp_path, caplog):
  from mone.train import loop
  ten, first = plan.ten_seed_runs()[0][1], plan.runs()[0][1]
  assert plan.keeps_weights(ten) and not plan.keeps_weights(first)
  point = {"step": 500, "train_accuracy": 0.5, "val_accuracy": 0.25}
  writer = loop.Progress(tmp_path / "metrics.jsonl", first, 1000, 0)
  try:
    with caplog.at_level(logging.INFO):
      train_queue.show_curve(ten)
      writer.log_point(point)
      assert "validation accuracy" not in caplog.text
      train_queue.show_curve(first)
      writer.log_point(point)
      assert "step 500: train accuracy 50.0%, validation accuracy 25.0%" in caplog.text
  finally:
    writer.close()
    logging.getLogger(loop.CURVE_LOG).setLevel(logging.NOTSET)
  assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2  # the workdir keeps both


def test_park_packs_each_unfinished_runs_checkpoint_for_the_next_machine(tmp_path, monkeypatch, capsys):
  import shutil
  from mone.runs import experiments, plan
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  cfgs = [cfg for _, cfg in plan.runs()[:3]]
  for cfg in cfgs[:2]:
    (experiments.workdir(cfg) / "checkpoints" / "250").mkdir(parents=True)
    (experiments.workdir(cfg) / "checkpoints" / "250" / "state").write_text("the state")
  held = train_queue.claim(cfgs[1])  # a live worker trains it: --park leaves it alone
  train_queue.park([("", cfg) for cfg in cfgs])
  held.close()
  assert [train_queue.parked(cfg).exists() for cfg in cfgs] == [True, False, False]
  assert "a worker is training it; stop the queue, then --park again" in capsys.readouterr().out
  shutil.rmtree(tmp_path / "cache")  # the next machine comes without the cache
  assert [train_queue.resumable(cfg) for cfg in cfgs] == [True, False, False]


def test_a_calibration_worker_logs_no_test_accuracy(tmp_path, monkeypatch, caplog):
  """The calibration's rules read validation accuracy alone: its queue's log shows no test accuracy."""
  from mone.runs import experiments
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  run = recalibration.pending()[0]
  monkeypatch.setattr(train_queue.recalibration, "queue", lambda isa_twins, freeze: [(run.label, run.config())])

  def train(cfg, progress):
    experiments.run_path(cfg).parent.mkdir(parents=True, exist_ok=True)
    experiments.run_path(cfg).write_text("{}")
    return {"accuracy": 0.8731, "train_steps": 12000}
  monkeypatch.setattr(train_queue.experiments, "run", train)
  monkeypatch.setattr(train_queue, "save_weights", lambda cfg: None)
  monkeypatch.setattr(sys, "argv", ["train_queue.py", "--calibration", "--workers", "1", "--worker", "0", "--max-runs", "1"])
  with caplog.at_level("INFO"), pytest.raises(SystemExit):
    train_queue.main()
  finished = [r.getMessage() for r in caplog.records if r.getMessage().startswith("finished ")]
  assert finished == [f"finished {run.label}: after 12000 steps, {finished[0].rsplit(', ', 1)[1]}"]
  assert "87.3" not in caplog.text


def test_a_calibration_worker_drops_its_run_once_its_stage_is_decided_without_it(monkeypatch):
  run = recalibration.pending()[0]
  pending = [run]
  monkeypatch.setattr(train_queue.recalibration, "pending", lambda: list(pending))
  exits, ended = [], threading.Event()
  monkeypatch.setattr(train_queue.os, "_exit", lambda status: (exits.append(status), ended.set()))
  monkeypatch.setattr(train_queue.logging, "shutdown", lambda: None)
  finished = train_queue.drop_when_decided(run.config(), isa_twins=False, poll_s=0.01)
  assert not ended.wait(0.2) and exits == []  # still pending: it trains on
  pending.clear()  # another run failed a rule of its own: this one is no longer wanted
  assert ended.wait(5) and exits == [train_queue.ONE_RUN_DONE]
  finished.set()
  # A run that finishes stops its watch: nothing ends the worker afterwards.
  exits.clear()
  ended.clear()
  pending.append(run)
  finished = train_queue.drop_when_decided(run.config(), isa_twins=False, poll_s=0.01)
  finished.set()
  pending.clear()
  assert not ended.wait(0.2) and exits == []
  # The twin of a pending run is another run: a twin worker drops it.
  pending.append(run)
  train_queue.drop_when_decided(run.config(), isa_twins=True, poll_s=0.01)
  assert ended.wait(5) and exits == [train_queue.ONE_RUN_DONE]


def test_a_calibration_run_near_its_end_trains_on_once_its_stage_is_decided(monkeypatch):
  run = recalibration.pending()[0]
  steps = train_queue.flops.num_train_steps(run.config())
  logged = [int(train_queue.FINISH_FROM * steps) - 1]  # the last step its workdir logged
  monkeypatch.setattr(train_queue.recalibration, "pending", lambda: [])  # decided without it
  monkeypatch.setattr(train_queue, "last_step", lambda cfg: logged[0])
  exits, ended = [], threading.Event()
  monkeypatch.setattr(train_queue.os, "_exit", lambda status: (exits.append(status), ended.set()))
  monkeypatch.setattr(train_queue.logging, "shutdown", lambda: None)
  finished = train_queue.drop_when_decided(run.config(), isa_twins=False, poll_s=0.01)
  assert ended.wait(5) and exits == [train_queue.ONE_RUN_DONE]  # just short of FINISH_FROM: dropped
  finished.set()
  exits.clear()
  ended.clear()
  logged[0] = int(train_queue.FINISH_FROM * steps) + 1
  finished = train_queue.drop_when_decided(run.config(), isa_twins=False, poll_s=0.01)
  assert not ended.wait(0.2) and exits == []  # past it: the run finishes
  finished.set()
