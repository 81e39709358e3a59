"""Trains the recalibrated small profile's runs (`mone.chapters.plan.runs`) one at a time, in
plan order, skipping those whose run file exists; a killed queue resumes its current run from
its checkpoints when started again. Commit each finished run file as it lands, and the router
weights it saves under results/weights/ (`plan.keeps_router_weights`).

  .venv/bin/python scripts/train_queue.py --list        # status of every run, trains nothing
  mkdir -p $HOME/mone-cache && MONE_CACHE_DIR=$HOME/mone-cache nohup .venv/bin/python scripts/train_queue.py >> $HOME/mone-cache/queue.log 2>&1 &
  .venv/bin/python scripts/train_queue.py --max-runs 1  # the next run only
"""
import argparse
import json
import logging
import time

from mone.chapters import experiments, plan


def status(cfg) -> str:
  """'done', 'at step K' (a workdir with checkpoints/metrics) or 'to do'."""
  if experiments.run_path(cfg).exists():
    return "done"
  lines = (experiments.workdir(cfg) / "metrics.jsonl")
  if lines.exists():
    steps = [json.loads(l).get("step", 0) for l in lines.read_text().splitlines() if l.strip()]
    return f"at step {max(steps, default=0)}"
  return "to do"


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--list", action="store_true", help="print every run's status and exit")
  ap.add_argument("--max-runs", type=int, default=0, help="stop after training this many runs (0: all)")
  args = ap.parse_args()
  if args.max_runs < 0:
    ap.error(f"--max-runs must be >= 0, got {args.max_runs}")
  runs = plan.runs()
  if args.list:
    finished = [json.loads(p.read_text()) for p in sorted((experiments.results_root() / "runs").glob("*.json"))]
    left, unknown, todo = 0.0, 0, 0
    for i, (label, cfg) in enumerate(runs):
      state, estimate = status(cfg), plan.estimate_seconds(cfg, finished)
      if state != "done":
        todo += 1
        left += estimate or 0.0
        unknown += estimate is None
      when = "" if state == "done" else f"~{estimate / 3600:.1f} h" if estimate else "? h"
      print(f"{i:2d} {state:14s} {when:>7s} {experiments.run_path(cfg).name:42s} {label}")
    print(f"{len(runs) - todo} of {len(runs)} done; about {left / 3600:.0f} h of training left for {todo - unknown} runs "
          f"(from the finished runs of each config name and kind on a CPU; {unknown} more without such a run yet)")
    return
  logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
  trained = 0
  for i, (label, cfg) in enumerate(runs):
    if experiments.run_path(cfg).exists():
      continue
    if args.max_runs and trained == args.max_runs:
      break
    logging.info("run %d of %d: %s (%s)", i + 1, len(runs), label, experiments.run_path(cfg).name)
    start = time.time()
    m = experiments.run(cfg, progress=False)
    trained += 1
    if plan.keeps_router_weights(cfg) and not experiments.weights_path(cfg).exists():
      experiments.router_params(cfg)  # from the checkpoint the run just wrote
      logging.info("saved %s", experiments.weights_path(cfg))
    logging.info("finished %s: accuracy %.2f%% after %d steps, %.0f s", label, 100 * m["accuracy"],
                 m["train_steps"], time.time() - start)
  left = sum(not experiments.run_path(c).exists() for _, c in runs)
  logging.info("queue stops: %d of %d runs left", left, len(runs))


if __name__ == "__main__":
  main()
