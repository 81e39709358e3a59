"""Trains the small profile's runs (`mone.runs.plan.runs`; --order: the order they start in), skipping finished
ones and resuming a killed one from its checkpoints. Commit each run file as it lands, with its weights (results/weights/).

  .venv/bin/python scripts/train_queue.py --list        # status of every run, trains nothing
  mkdir -p $HOME/mone-cache && MONE_CACHE_DIR=$HOME/mone-cache nohup .venv/bin/python scripts/train_queue.py >> $HOME/mone-cache/queue.log 2>&1 &
  .venv/bin/python scripts/train_queue.py --max-runs 1  # the next run only
  .venv/bin/python scripts/train_queue.py --workers 2 --pin-cores [--twins]  # a worker a core; --twins: CPU twins (plan.TWINS)
  .venv/bin/python scripts/train_queue.py --workers 2 --pin-cores --order longest --finish-within 2.3  # what fits in 2.3 h
  .venv/bin/python scripts/train_queue.py --calibration --workers 2 --pin-cores  # the next profile's calibration, its AVX2 twins
                                                                 # where no other run is left ([--isa-twins]: the twins alone)
  .venv/bin/python scripts/train_queue.py --calibration [--isa-twins] --park  # queue stopped: states to commit for the next machine
  MONE_RESULTS_DIR=/tmp/gpu-results XLA_PYTHON_CLIENT_PREALLOCATE=false \\
      XLA_FLAGS=--xla_gpu_deterministic_ops=true python3 scripts/train_queue.py --only digits64- --workers 8

Workers (one by default on a CPU) share a GPU or a CPU's cores, each taking the next free run
(`claim`) in a process of its own, started again for the next run and after a crash (`supervise`).
On a GPU float32 matmuls run at "highest" (`matmul_precision`), and the seed plan, which trains on
the CPU, is refused without --allow-gpu; a results folder of one's own (MONE_RESULTS_DIR, as above)
trains anywhere.
"""
import sys

if __name__ == "__main__":  # first, before JAX starts: glibc reads its tunables only at start-up
  from mone.train import hostmem
  hostmem.reexec_with_tunables()

import argparse
import json
import logging
import os
import subprocess
import threading
import time

from mone import flops, results
from mone.runs import experiments, plan, recalibration, run_times
from mone.runs.run_times import MARGIN, finishes_in_time, last_step, longest_first, seconds_left, shortest_first
from mone.train import handover, loop


def claim(cfg):
  """This process's lock on cfg's run (an open file: training holds it, closing it frees the run), or None where
  another live process holds it. Workers take the next free run as they finish one, so a long run never keeps a
  worker's later runs waiting while another worker idles; the kernel drops a killed process's lock (flock), so a
  half-trained run resumes with the next queue. Two queues started at once with one cache (MONE_CACHE_DIR) share runs too."""
  import fcntl
  lock = experiments.workdir(cfg).parent / f"{experiments.workdir(cfg).name}.lock"
  lock.parent.mkdir(parents=True, exist_ok=True)
  f = open(lock, "w")
  try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    f.close()
    return None
  return f


def next_run(runs: list, fits=lambda cfg: True):
  """The first of `runs` ((label, config) pairs) without a run file, that `fits` (the time left:
  `finishes_in_time`) and free to claim, with its lock (`claim`); None where none is left. Its run
  file is looked for again once claimed: another worker may have finished it meanwhile."""
  for label, cfg in runs:
    if experiments.run_path(cfg).exists() or not fits(cfg) or (lock := claim(cfg)) is None:
      continue
    if experiments.run_path(cfg).exists():
      lock.close()
      continue
    return (label, cfg), lock
  return None


def save_weights(cfg) -> None:
  """Writes the weights the queue commits for cfg's finished run, from the checkpoint it just wrote:
  every final parameter (`plan.keeps_weights`) or only the router's inputs (`plan.keeps_router_weights`).
  Nothing where the file exists or neither applies."""
  if experiments.weights_path(cfg).exists():
    return
  if plan.keeps_weights(cfg):
    experiments.stored_params(cfg)
  elif plan.keeps_router_weights(cfg):
    experiments.router_params(cfg)
  else:
    return
  logging.info("saved %s", experiments.weights_path(cfg))


def show_curve(cfg) -> None:
  """Lets cfg's learning curve (train and validation accuracy every few hundred steps) into the log,
  except for a run of a plan read only all together (`plan.keeps_weights`): the log then shows its
  steps and losses, and none of its accuracies. Its workdir's metrics.jsonl keeps the curve."""
  logging.getLogger(loop.CURVE_LOG).setLevel(logging.WARNING if plan.keeps_weights(cfg) else logging.NOTSET)


def missing_weights(runs: list) -> list:
  """The finished runs of `runs` whose weights the queue keeps but has not written (a queue killed
  between a run file and its weights), with a checkpoint at hand to write them from."""
  return [cfg for _, cfg in runs if experiments.run_path(cfg).exists() and not experiments.weights_path(cfg).exists()
          and (plan.keeps_weights(cfg) or plan.keeps_router_weights(cfg)) and (experiments.workdir(cfg) / "metrics.json").exists()]


def parked(cfg):
  """Where the queue parks cfg's training state for the next machine (`handover`; --park), beside the run files."""
  return experiments.results_root() / "parked" / f"{results.run_id(cfg)}.tar.gz"


def resumable(cfg) -> bool:
  """Whether cfg's run resumes from a checkpoint: in its workdir or parked by an earlier machine."""
  return handover.has_checkpoint(experiments.workdir(cfg)) or parked(cfg).exists()


def park(runs: list) -> None:
  """Packs the newest checkpoint of every unfinished run of `runs` into its `parked` file, to commit:
  the next machine resumes there. A run a live worker holds is left alone (stop the queue first)."""
  for _, cfg in runs:
    if not experiments.run_path(cfg).exists() and handover.has_checkpoint(experiments.workdir(cfg)):
      if (lock := claim(cfg)) is None:
        print(f"{experiments.run_path(cfg).name}: a worker is training it; stop the queue, then --park again")
        continue
      with lock:
        print(f"{parked(cfg)}: step {handover.pack(experiments.workdir(cfg), parked(cfg))}")


# On a small CPU one worker per core trains more steps than one on all cores: XLA:CPU splits these
# small ops poorly across threads. On the 2-core CPU (digits64, batch 64) two pinned workers took 505
# and 521 ms a step for MoNE e_c=0.4 against 346 ms for one process on both cores (1.35x the steps
# together), 702 and 749 ms against 429 for the dense ViT (1.18x). A run's last bits depend on its
# thread count, as on another machine; each run file records its cores (`device.cores_used`).
def start_worker(command: list[str], core: int | None, **popen) -> subprocess.Popen:
  """Starts a worker process, on CPU core `core` alone when given: the affinity is set before the
  worker starts, so XLA:CPU sizes its thread pool by it."""
  pin = None if core is None else (lambda: os.sched_setaffinity(0, {core}))
  return subprocess.Popen(command, preexec_fn=pin, **popen)


# A worker trains one run per process, and the queue starts a fresh one for the next run. glibc
# keeps a process's heap at its high-water mark (`hostmem.TUNABLES`), so a worker that trained run
# after run held the largest heap of any of them: on the 2-core CPU with 23 GiB, two workers that had
# trained digits64 MoNE and started a temporal ViViT run held 12.8 and 11.4 GB, and the kernel's OOM
# killer stopped one (its run resumed later from a checkpoint; its core idled meanwhile). A fresh
# process holds what its own run needs: a temporal ViViT run about 7 GB.
ONE_RUN_DONE = 3  # a worker's exit status after the one run it was started for: more may be left
CRASHES_IN_A_ROW = 3  # a worker that stops this often in a row without finishing a run is not restarted
FINISH_FROM = 0.9  # a calibration run this far through its steps finishes even once no rule reads it
DECIDED_POLL_S = 60  # how often a calibration worker checks that its run is still wanted


def drop_when_decided(cfg, isa_twins: bool, poll_s: float = DECIDED_POLL_S) -> threading.Event:
  """Calibration: checks every poll_s seconds, until the returned event is set (the run has finished),
  that cfg's run is still pending. Once another run has decided its stage without it (a run failing a
  rule that reads that run alone: `recalibration.failed_already`), no rule will read it: the worker
  ends as after a finished run (ONE_RUN_DONE), and its slot takes the next pending run instead of
  training this one for hours. The run's checkpoints stay in its work folder. A run past FINISH_FROM of
  its steps trains to its end instead: the little it still costs buys one more curve for the book."""
  name, done, near_end = experiments.run_path(cfg).name, threading.Event(), FINISH_FROM * flops.num_train_steps(cfg)

  def wanted():
    return any(r.twin == isa_twins and r.run_path(results.RESULTS).name == name for r in recalibration.pending())

  def watch():
    while not done.wait(poll_s):
      if not wanted() and (last_step(cfg) or 0) < near_end:
        logging.info("dropping %s: its stage was decided without it; %s", name, recalibration.status().replace("\n", "; "))
        logging.shutdown()
        os._exit(ONE_RUN_DONE)  # from this thread: the training step holds the main one
        return
  threading.Thread(target=watch, daemon=True).start()
  return done


def supervise(name: str, command: list[str], core: int | None, max_runs: int, fallback: list[str] | None = None) -> int:
  """Keeps one worker slot training: starts `command` with --max-runs 1 (`start_worker`), then again
  after each run it finishes (exit status ONE_RUN_DONE), until it finds no run left to take (status 0)
  or the slot has trained `max_runs` runs (0: no limit). With a fallback (the calibration's ISA twins),
  a slot whose command finds nothing left starts the fallback instead, and the command again after each
  run the fallback finishes (a twin can complete a stage whose next runs are the command's); it stops
  when both find nothing. A worker that dies (the OOM killer, a crash) is started again, its run
  resuming from its last checkpoint, up to CRASHES_IN_A_ROW times in a row. Returns 0, or 1 where the
  slot gave up on a failing worker."""
  commands = [command] + ([fallback] if fallback else [])
  trained = crashes = idle = which = 0  # idle: commands in a row that found nothing to take
  while not max_runs or trained < max_runs:
    status = start_worker(commands[which] + ["--max-runs", "1"], core).wait()
    if status == 0:
      idle += 1
      if idle == len(commands):
        return 0
      which = (which + 1) % len(commands)
      continue
    if status == ONE_RUN_DONE:
      trained, crashes, idle, which = trained + 1, 0, 0, 0
      continue
    crashes += 1
    why = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
    again = crashes < CRASHES_IN_A_ROW
    logging.warning("%s stopped (%s%s); %s", name, why, ", as the kernel's OOM killer does" if status == -9 else "",
                    "starting it again: its run resumes from its last checkpoint" if again
                    else f"not starting it again after {crashes} failures in a row")
    if not again:
      return 1
  return 0


def finished_runs(twins: bool, calibration: bool = False) -> tuple[dict, list[dict]]:
  """(this folder's run files by file name, the run files that time the queue's runs): the latter
  are the other folders' first (the CPU twins time the configs that first trained on a GPU, and MoD
  has no other CPU run; the profile's and the earlier calibrations' runs time a calibration's), then this folder's, so
  that a config's own run here wins where both have one (`run_times.estimate_seconds`). Each file is
  read once."""
  def read(folder):
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
  if calibration:
    others = [results.RESULTS / "runs"] + [results.RESULTS / c.folder / "runs" for c in recalibration.ALL if c is not recalibration.CURRENT]
  else:
    others = [results.RESULTS / "runs" if twins else experiments.results_root() / plan.TWINS / "runs"]
  own = read(experiments.results_root() / "runs")
  return own, [m for folder in others for m in read(folder).values()] + list(own.values())


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--list", action="store_true", help="print every run's status and exit")
  ap.add_argument("--park", action="store_true", help="pack each unfinished run's newest checkpoint into "
                  "<results>/parked/ to commit, for the next machine to resume from (handover), and exit")
  ap.add_argument("--max-runs", type=int, default=0, help="stop after training this many runs (0: all)")
  ap.add_argument("--only", default="", metavar="TEXT", help="only the runs whose run file's name contains TEXT")
  ap.add_argument("--twins", action="store_true",
                  help="train the CPU twins of the GPU-trained runs (plan.twin_runs, plan.study_twin_runs) into results/device_twins/cpu "
                       "instead of the plan")
  ap.add_argument("--calibration", action="store_true", help="train the next profile's calibration runs "
                  "(recalibration.pending) into results/calibration_<version>/runs instead of the plan")
  ap.add_argument("--isa-twins", action="store_true", help="with --calibration: its AVX2 twins (recalibration.queue)")
  ap.add_argument("--workers", type=int, default=None,
                  help="processes training at once, each taking the next free run as it finishes one (default: 8 on "
                       "a GPU, where one tiny run leaves the chip mostly idle, else 1)")
  ap.add_argument("--order", choices=("plan", "longest", "shortest"), default=None,
                  help="the order runs start in: the plan's (seed 0's runs before seed 1's); the longest estimated training "
                       "left first, after the runs that resume from a checkpoint (finishes sooner on several workers); or "
                       "the shortest first (run_times.shortest_first). Default: shortest with --calibration, else plan")
  ap.add_argument("--pin-cores", action="store_true",
                  help="run worker k on CPU core k alone (Linux; --workers at most the cores this process may use)")
  ap.add_argument("--finish-within", type=float, default=None, metavar="HOURS",
                  help="start only the runs that the estimate (run_times.estimate_seconds, with a margin) says finish "
                       "within HOURS of the queue's start; a worker stops when none is left that would")
  ap.add_argument("--allow-gpu", action="store_true",
                  help="train on this machine's GPU even where the seed plan says CPU (plan.trains_on); its paired "
                       "differences then cross devices")
  ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)  # set for the processes it starts
  ap.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)  # --finish-within, for them
  args = ap.parse_args()
  gpu = loop.jax_may_use_gpu(os.environ)
  # Tiny runs leave a GPU mostly idle: on one H200 (16 host cores) each of 8 workers trains a digits64
  # run at about 2,700 examples/s (one alone: 7,600), eight 8,000-step runs in about 6 minutes together.
  if args.workers is None:
    args.workers = 8 if gpu else 1
  if precision := loop.matmul_precision(os.environ, gpu):
    os.environ["MONE_MATMUL_PRECISION"] = precision  # the workers inherit it; every run file records it
    try:
      loop.apply_matmul_precision()  # a value JAX does not know stops the queue here, in one line
    except ValueError as e:
      ap.error(str(e))
  if args.max_runs < 0:
    ap.error(f"--max-runs must be >= 0, got {args.max_runs}")
  if args.workers < 1:
    ap.error(f"--workers must be >= 1, got {args.workers}")
  if args.finish_within is not None and not args.finish_within > 0:
    ap.error(f"--finish-within must be > 0 hours, got {args.finish_within}")
  if args.finish_within is not None and args.deadline is None:
    args.deadline = time.time() + 3600 * args.finish_within
  cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
  if args.pin_cores and args.worker is None and not args.list and not 1 <= args.workers <= len(cores):
    ap.error(f"--pin-cores needs --workers in [1, {len(cores)}] (the cores this process may use), got {args.workers}")
  if args.isa_twins and not args.calibration:
    ap.error("--isa-twins is an option of --calibration")
  args.order = args.order or ("shortest" if args.calibration else "plan")
  if args.calibration and args.twins:
    ap.error("--calibration and --twins train different runs; pass one")
  if args.calibration:  # frozen: a changed definition stops the queue here
    candidates = recalibration.queue(args.isa_twins, freeze=args.worker is None and not args.list)
  elif args.twins:  # the committed runs name the twins; the twins' files go under results/device_twins/cpu
    os.environ["MONE_RESULTS_DIR"] = str(results.RESULTS)
    candidates = plan.twin_runs() + plan.study_twin_runs()
    os.environ["MONE_RESULTS_DIR"] = str(results.RESULTS / plan.TWINS)
  else:
    candidates = plan.runs()
  # The seed plan's amendment keeps every paired difference on the CPU: a planned run trained on a
  # GPU would cross devices again. A worker inherits the check from the queue that started it.
  cpu_only = args.twins or args.calibration or plan.trains_on(experiments.results_root()) == "cpu"
  if cpu_only and gpu and args.worker is None and not (args.list or args.allow_gpu):
    ap.error("this machine has a GPU, and the seed plan trains its runs on the CPU (results/seed_plan.json's "
             "amendment: every paired difference between two CPU runs): set JAX_PLATFORMS=cpu, train into a "
             "results folder of one's own (MONE_RESULTS_DIR), or pass --allow-gpu")
  runs = [r for r in candidates if args.only in experiments.run_path(r[1]).name]
  if not runs and args.calibration:
    print("nothing to train: " + recalibration.status().replace("\n", "; "))
    return
  if not runs:
    ap.error(f"no run's file name contains --only {args.only!r}")
  if args.park:
    return park(runs)
  if args.worker is None and not args.list:
    # Each process reads the plan itself; they never train the same run. One worker too trains each
    # run in a process of its own: the heap of a process that trained run after run keeps the
    # largest run's high-water mark. One thread per worker slot, each waiting on its worker's
    # processes in turn (`supervise`).
    from concurrent.futures import ThreadPoolExecutor
    logging.basicConfig(level=logging.INFO, format="%(asctime)s queue: %(message)s")

    def slot(k):
      command = ([sys.executable, __file__, "--only", args.only, "--workers", str(args.workers), "--worker", str(k),
                  "--order", args.order] + (["--twins"] if args.twins else [])
                 + (["--calibration"] if args.calibration else []) + (["--isa-twins"] if args.isa_twins else [])
                 + ([] if args.deadline is None else ["--deadline", repr(args.deadline)]))
      # A calibration queue's slots train the AVX2 twins where no other run is left to take: each worker
      # process sets the twins' XLA flags and folders itself before JAX starts (`recalibration.queue`).
      twins = command + ["--isa-twins"] if args.calibration and not args.isa_twins else None
      return supervise(f"worker {k}", command, cores[k] if args.pin_cores else None, args.max_runs, twins)
    with ThreadPoolExecutor(args.workers) as pool:
      sys.exit(max(pool.map(slot, range(args.workers))))
  if args.list:
    by_name, finished = finished_runs(args.twins, args.calibration)
    left, unknown, done = 0.0, 0, []
    for i, (label, cfg) in enumerate(runs):
      if experiments.run_path(cfg).exists():
        state = "done"
        done.append(by_name[experiments.run_path(cfg).name])
        when = results.trained_where(done[-1])  # where it trained
      else:  # 'at step K' where its workdir logged steps, else 'to do'
        step = last_step(cfg)
        if step is None and parked(cfg).exists():  # resumes where an earlier machine stopped
          step = handover.parked_step(parked(cfg))
        state = "to do" if step is None else f"at step {step}"
        estimate = seconds_left(cfg, run_times.estimate_seconds(cfg, finished), step)
        left += estimate or 0.0
        unknown += estimate is None
        when = "? h" if estimate is None else f"~{estimate / 3600:.1f} h" + ("" if step is None else " left")
      print(f"{i:2d} {state:14s} {when:>16s} {experiments.run_path(cfg).name:42s} {label}")
    todo = len(runs) - len(done)
    if args.calibration:  # it lists only what its open stages still need: its committed files are counted apart
      print(f"{recalibration.committed(args.isa_twins)} calibration run files committed; {len(runs)} runs pending:\n{recalibration.status()}")
    print(f"{len(done)} of {len(runs)} done; about {left / 3600:.0f} h of training left for {todo - unknown} runs "
          f"(from finished CPU runs of the same config at another seed, else of its name and kind: run_times.estimate_seconds; "
          f"{unknown} more without such a run yet)")
    print("\nWhere the finished runs trained:\n" + run_times.device_table(done))
    full = run_times.recompute_seconds(runs, finished)
    total = full["measured"] + full["estimated"]
    print(f"Retraining all {len(runs)} on this CPU (-p recompute True, or this queue from scratch): about {total / 3600:.0f} h of "
          f"training, most of it timed on one core per run (about {total / 7200:.0f} h of wall time on two workers, "
          f"--workers 2 --pin-cores): {full['measured'] / 3600:.1f} h measured by the "
          f"{full['runs_measured']} runs trained here on the CPU, {full['estimated'] / 3600:.1f} h estimated for the "
          f"{full['runs_estimated']} others (run_times.recompute_seconds)" + (f"; {full['runs_unknown']} without an estimate" if full["runs_unknown"] else ""))
    return
  # From here on this process is worker `args.worker`, started by a queue (`supervise`).
  logging.basicConfig(level=logging.INFO, format=f"%(asctime)s worker {args.worker}: %(message)s")
  if args.worker == 0:  # one process writes what a killed queue left unwritten
    for cfg in missing_weights(runs):
      save_weights(cfg)
  runs = [r for r in runs if not experiments.run_path(r[1]).exists()]  # every worker reads the same list
  _, finished = finished_runs(args.twins, args.calibration)

  def left(cfg):  # seconds of training cfg's run still needs, from where its workdir stopped
    return seconds_left(cfg, run_times.estimate_seconds(cfg, finished), last_step(cfg))
  if args.order != "plan":
    seconds = [left(c) for _, c in runs]
    runs = longest_first(runs, seconds, [resumable(c) for _, c in runs]) if args.order == "longest" else shortest_first(runs, seconds)
  # Without a deadline every run fits: no estimate is computed for the runs a worker passes over.
  fits = (lambda cfg: True) if args.deadline is None else (lambda cfg: finishes_in_time(left(cfg), time.time(), args.deadline))
  trained = 0
  while not args.max_runs or trained < args.max_runs:
    if (taken := next_run(runs, fits)) is None:
      break
    (label, cfg), lock = taken
    with lock:  # held until the run and its router weights are written
      logging.info("run %d of %d: %s (%s)", runs.index((label, cfg)) + 1, len(runs), label, experiments.run_path(cfg).name)
      start = time.time()
      show_curve(cfg)
      if parked(cfg).exists() and (step := handover.unpack(parked(cfg), experiments.workdir(cfg))) is not None:
        logging.info("resuming from the state an earlier machine parked at step %d (%s)", step, parked(cfg).name)
      finished = drop_when_decided(cfg, args.isa_twins) if args.calibration else threading.Event()
      m = experiments.run(cfg, progress=False)
      finished.set()
      trained += 1
      save_weights(cfg)
      parked(cfg).unlink(missing_ok=True)  # the run file replaces it: commit both
    # A run of a plan still training is read by no one until the whole plan has landed: the log keeps its
    # accuracy out of sight too (its curve's: `show_curve`), so that nothing is decided on the runs that
    # finish first; a calibration run's test accuracy too, since its rules read validation accuracy alone.
    shown = "" if plan.keeps_weights(cfg) or args.calibration else f"accuracy {100 * m['accuracy']:.2f}% "
    logging.info("finished %s: %safter %d steps, %.0f s", label, shown, m["train_steps"], time.time() - start)
  if args.max_runs and trained == args.max_runs:
    sys.exit(ONE_RUN_DONE)  # the queue starts a fresh worker for the next run, if one is left (`supervise`)
  todo = [c for _, c in runs if not experiments.run_path(c).exists()]
  why = ""
  if args.deadline is not None and (late := [c for c in todo if not finishes_in_time(left(c), time.time(), args.deadline)]):
    why = (f", {len(late)} of them too long for the {max(0.0, args.deadline - time.time()) / 3600:.1f} h left "
           f"(--finish-within; estimates with a margin of {MARGIN})")
  logging.info("queue stops: %d of %d runs left%s", len(todo), len(runs), why)


if __name__ == "__main__":
  main()
