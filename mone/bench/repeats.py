"""The benchmark processes chapter 08 repeats: one plan of five files per profile, measured `RUNS`
times in separate processes, so that a verdict rests on the spread between processes rather than
on one process's medians (a median on a shared 2-core machine moves by 10-15% between processes).

  python -m mone.bench.repeats [--profile small] [--runs 3] [--recompute]

writes results/bench/repeats/{targets,video,routing,throughput,image}-<i>.json (each atomically, after
every group; a complete file is kept, so a killed run, or one started after files were added to the
plan, measures only the files not yet complete). What is decided from them, and the tests fixed before
measuring: `mone.chapters.speed_claims`.
"""
import argparse
import contextlib
import io
import subprocess
import sys

from mone import results
from mone.bench import cli, workloads

RUNS = 3  # benchmark processes per file: the least from which a 95% interval decides anything

_TARGETS = dict(variant="S/16", batch=[8, 32], train_batch=[8, 32], e_c=[0.3, 0.5, 1.0], no_matvit=True,
                no_masked=True, reps=5)
# The paper's timed clip: ViViT-FE-B/16x2 on SSv2, 32 frames of 256 px (376 GFLOPs by its count), one clip.
_VIDEO = dict(video="B/16x2", video_only=True, video_frames=32, video_image_size=256, video_batch=[1],
              video_e_c=list(workloads.E_CS), mode=["forward"], reps=5)
_ROUTING = dict(routing=True, variant="B/16", batch=[8], e_c=[0.3], reps=15)
# The paper's throughput rows (clips/s, images/s) are measured on batches, its latency on one clip.
# Video: the same clip, 2 at a time (the least batch that is one; a ViViT-B forward of 2 clips is
# 1.5 TFLOPs, seconds on this CPU), at e_c = 0.4, the e_c whose FLOP ratio is the paper's 2.32x
# (`speed_claims.matched_e_c`), and 0.3, the e_c the paper labels its row with. One chunk of 2: the
# batch is processed whole, as a batch and not as two latencies.
_THROUGHPUT = dict(video="B/16x2", video_only=True, video_frames=32, video_image_size=256, video_batch=[2],
                   video_e_c=[0.3, 0.4], mode=["forward"], reps=5)
# Images: ViT-Ti/16 at 224 px, as the paper's appendix Table 3, 32 images at a time (each model in its
# fastest chunk), at e_c = 0.5 and 0.6, whose FLOP ratios (1.72x, 1.51x) bracket the paper's 1.3 / 0.8
# GFLOPs (`speed_claims.image_throughput_claim` tests the nearer, shows the other).
_IMAGE = dict(variant="Ti/16", batch=[32], e_c=[0.5, 0.6], mode=["forward"], no_matvit=True, no_masked=True, reps=5)
# Per profile, the options of each file (`mone.bench.cli.measure`): this repository's speed targets
# (ViT-S/16), the paper's video clip at every e_c, routing's share of a ViT-B/16 forward, and the
# paper's two throughput rows (the clip on a batch, ViT-Ti/16 on a batch).
PLANS = {
    "smoke": {"targets": dict(variant="tiny/8", batch=[2], e_c=[0.3, 0.5, 1.0], mode=["forward"], chunk="2",
                              no_matvit=True, no_masked=True, reps=2),
              "video": dict(video="tiny/8x2", video_only=True, video_frames=2, video_batch=[1], video_e_c=[0.3, 1.0],
                            mode=["forward"], reps=2),
              "routing": dict(routing=True, variant="tiny/8", batch=[2], e_c=[0.3], reps=2),
              "throughput": dict(video="tiny/8x2", video_only=True, video_frames=2, video_batch=[2],
                                 video_e_c=[0.3], mode=["forward"], reps=2),
              "image": dict(variant="tiny/8", batch=[4], e_c=[0.5, 0.6], mode=["forward"], chunk="2",
                            no_matvit=True, no_masked=True, reps=2)},
    "small": {"targets": _TARGETS, "video": _VIDEO, "routing": _ROUTING, "throughput": _THROUGHPUT, "image": _IMAGE},
    "paper": {"targets": _TARGETS, "video": _VIDEO, "routing": _ROUTING, "throughput": _THROUGHPUT, "image": _IMAGE},
}
# Files added to the plans after the first three were measured and committed: `load` leaves out one
# whose processes are not all complete (its claims are then not testable) where it raises for the
# others, and the chapter does not start measuring them (`python -m mone.bench.repeats` does).
LATER = ("throughput", "image")


def directory(profile: str):
  """results/bench/repeats/ (smoke: results/smoke_bench/repeats/), under $MONE_RESULTS_DIR if set."""
  if profile not in PLANS:
    raise ValueError(f"profile must be one of {sorted(PLANS)}, got {profile!r}")
  return results.results_root() / ("smoke_bench" if profile == "smoke" else "bench") / "repeats"


def commands(profile: str, runs: int = RUNS, names=None) -> list[tuple[str, list[str]]]:
  """(file name, argv) of every process, in the order they run: the files alternate (targets-1,
  video-1, routing-1, throughput-1, image-1, targets-2, ...), so that a slow drift of the machine
  spreads over all of them. names: only these files of the plan (default: all)."""
  if runs < 1:
    raise ValueError(f"runs must be >= 1, got {runs}")
  unknown = sorted(set(names or ()) - set(PLANS[profile]))
  if unknown:
    raise ValueError(f"no file {unknown} in the plan; its files are {list(PLANS[profile])}")
  out = []
  for i in range(1, runs + 1):
    for name, options in PLANS[profile].items():
      if names is not None and name not in names:
        continue
      path = directory(profile) / f"{name}-{i}.json"
      out.append((path.name, [sys.executable, "-m", "mone.bench", *cli.arguments(**options),
                              "--json", str(path)]))
  return out


def complete(path) -> bool:
  """Whether a benchmark file is there and was written to its end (the benchmark saves a partial
  one after every group)."""
  return path.exists() and bool(results.read_json(path).get("complete"))


def measure(profile: str, runs: int = RUNS, recompute: bool = False, in_process: bool = False, log=print,
            names=None) -> None:
  """Runs every process whose file is not complete (every one with recompute). in_process: in
  this process instead, tables silenced (the smoke profile's tiny models, where starting a process
  would take longer than measuring). names: only these files of the plan (default: all)."""
  for name, argv in commands(profile, runs, names):
    if complete(directory(profile) / name) and not recompute:
      continue
    log(f"measuring {name}: python {' '.join(argv[1:])}", flush=True)
    if in_process:
      with contextlib.redirect_stdout(io.StringIO()):
        cli.main(argv[3:])
    else:
      subprocess.run(argv, check=True, cwd=results.REPO)


def load(profile: str, runs: int = RUNS) -> dict[str, list[dict]]:
  """{file of the plan: the benchmark of each process}; raises where a process of 'targets',
  'video' or 'routing' is missing or incomplete, and leaves out a file of `LATER` unless all its
  processes are complete."""
  files = {n: directory(profile) / n for n, _ in commands(profile, runs)}
  read = {n: results.read_json(p) for n, p in files.items() if p.exists()}
  done = lambda name: all(read.get(f"{name}-{i}.json", {}).get("complete") for i in range(1, runs + 1))
  missing = [n for n in files if not read.get(n, {}).get("complete") and n.rsplit("-", 1)[0] not in LATER]
  if missing:
    raise FileNotFoundError(f"no repeated benchmark {missing} under {directory(profile)}: run "
                            f"python -m mone.bench.repeats --profile {profile}")
  return {name: [read[f"{name}-{i}.json"] for i in range(1, runs + 1)]
          for name in PLANS[profile] if name not in LATER or done(name)}


def main(argv=None) -> None:
  ap = argparse.ArgumentParser(prog="python -m mone.bench.repeats", description=__doc__.split("\n\n")[0])
  ap.add_argument("--profile", default="small", choices=sorted(PLANS))
  ap.add_argument("--runs", type=int, default=RUNS, help=f"processes per file (default {RUNS})")
  ap.add_argument("--recompute", action="store_true", help="measure every file again, also those already written")
  args = ap.parse_args(argv)
  if args.runs < 1:
    ap.error(f"--runs must be >= 1, got {args.runs}")
  measure(args.profile, args.runs, args.recompute)


if __name__ == "__main__":
  main()
