"""The benchmark processes chapter 08 repeats: one plan of three files per profile, measured `RUNS`
times in separate processes, so that a verdict rests on the spread between processes rather than
on one process's medians (a median on a shared 2-core machine moves by 10-15% between processes).

  python -m mone.bench.repeats [--profile small] [--runs 3] [--recompute]

writes results/bench/repeats/{targets,video,routing}-<i>.json (each atomically, after every group; a
complete file is kept, so a killed run resumes with the file it was measuring). What is decided from them, and the
tests fixed before measuring: `mone.chapters.speed_claims`.
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
# Per profile, the options of each file (`mone.bench.cli.measure`): this repository's speed targets
# (ViT-S/16), the paper's video clip at every e_c, and routing's share of a ViT-B/16 forward.
PLANS = {
    "smoke": {"targets": dict(variant="tiny/8", batch=[2], e_c=[0.3, 0.5, 1.0], mode=["forward"], chunk="2",
                              no_matvit=True, no_masked=True, reps=2),
              "video": dict(video="tiny/8x2", video_only=True, video_frames=2, video_batch=[1], video_e_c=[0.3, 1.0],
                            mode=["forward"], reps=2),
              "routing": dict(routing=True, variant="tiny/8", batch=[2], e_c=[0.3], reps=2)},
    "small": {"targets": _TARGETS, "video": _VIDEO, "routing": _ROUTING},
    "paper": {"targets": _TARGETS, "video": _VIDEO, "routing": _ROUTING},
}


def directory(profile: str):
  """results/bench/repeats/ (smoke: results/smoke_bench/repeats/), under $MONE_RESULTS_DIR if set."""
  if profile not in PLANS:
    raise ValueError(f"profile must be one of {sorted(PLANS)}, got {profile!r}")
  return results.results_root() / ("smoke_bench" if profile == "smoke" else "bench") / "repeats"


def commands(profile: str, runs: int = RUNS) -> list[tuple[str, list[str]]]:
  """(file name, argv) of every process, in the order they run: the files alternate (targets-1,
  video-1, routing-1, targets-2, ...), so that a slow drift of the machine spreads over all three."""
  if runs < 1:
    raise ValueError(f"runs must be >= 1, got {runs}")
  out = []
  for i in range(1, runs + 1):
    for name, options in PLANS[profile].items():
      path = directory(profile) / f"{name}-{i}.json"
      out.append((path.name, [sys.executable, "-m", "mone.bench", *cli.arguments(**options),
                              "--json", str(path)]))
  return out


def complete(path) -> bool:
  """Whether a benchmark file is there and was written to its end (the benchmark saves a partial
  one after every group)."""
  return path.exists() and bool(results.read_json(path).get("complete"))


def measure(profile: str, runs: int = RUNS, recompute: bool = False, in_process: bool = False, log=print) -> None:
  """Runs every process whose file is not complete (every one with recompute). in_process: in
  this process instead, tables silenced (the smoke profile's tiny models, where starting a process
  would take longer than measuring)."""
  for name, argv in commands(profile, runs):
    if complete(directory(profile) / name) and not recompute:
      continue
    log(f"measuring {name}: python {' '.join(argv[1:])}", flush=True)
    if in_process:
      with contextlib.redirect_stdout(io.StringIO()):
        cli.main(argv[3:])
    else:
      subprocess.run(argv, check=True, cwd=results.REPO)


def load(profile: str, runs: int = RUNS) -> dict[str, list[dict]]:
  """{'targets' | 'video' | 'routing': the benchmark of each process}; raises where one is missing
  or incomplete."""
  files = {n: directory(profile) / n for n, _ in commands(profile, runs)}
  read = {n: results.read_json(p) for n, p in files.items() if p.exists()}
  missing = [n for n in files if not read.get(n, {}).get("complete")]
  if missing:
    raise FileNotFoundError(f"no repeated benchmark {missing} under {directory(profile)}: run "
                            f"python -m mone.bench.repeats --profile {profile}")
  return {name: [read[f"{name}-{i}.json"] for i in range(1, runs + 1)] for name in PLANS[profile]}


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
