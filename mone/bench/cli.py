"""The benchmark's command line: python -m mone.bench [--block | --matmul | --report] ... --json PATH
(the package's docstring says what is timed and how; mone.bench.report says what --report does)."""
import argparse
import datetime
import os
from pathlib import Path

import jax

import mone.bench
from mone import results
from mone.bench import micro, report, targets, timing, training, workloads

def machine() -> dict:
  dev = jax.devices()[0]
  return {"cpu_model": results.cpu_model(), "cores": os.cpu_count(), "jax": jax.__version__, "code": code_version(),
          "backend": jax.default_backend(), "device": f"{len(jax.devices())} x {dev.device_kind}",
          "xla_flags": os.environ.get("XLA_FLAGS", ""),
          # glibc's heap settings (mone.train.hostmem) change a CPU step's time, both arms alike;
          # None: unset, glibc's defaults (every committed CPU file before 2026-11-26).
          "glibc_tunables": os.environ.get("GLIBC_TUNABLES"),
          # the malloc behind XLA's buffers: tcmalloc where the restart preloaded it (mone.train.hostmem).
          "allocator": results.allocator(),
          # what XLA:CPU compiles for ("AVX512 (host)", "AVX2 (host)"): hosts of one CPU name differ in it, and
          # their matmul rates and the speed-ups measured on them with it (2.4x apart between two AMD EPYCs)
          "isa": results.xla_cpu_isa(),
          "load_avg": list(os.getloadavg()), "date": datetime.datetime.now().astimezone().isoformat()}


def code_version() -> str | None:
  """The git commit the benchmark ran on (12 digits), '+dirty' if the package's code (mone/) had
  uncommitted changes (`results.git_state`); None outside a git checkout. A timing is only
  comparable with one of the same code."""
  commit, dirty = results.git_state()
  return None if commit is None else commit[:12] + ("+dirty" if dirty else "")


def parser() -> argparse.ArgumentParser:
  ap = argparse.ArgumentParser(prog="python -m mone.bench", description=mone.bench.__doc__.split("\n\n")[0])
  ap.add_argument("--variant", default="S/16")
  ap.add_argument("--batch", type=int, nargs="+", default=[8, 32])
  ap.add_argument("--train-batch", type=int, nargs="+", default=None,
                  help="batch sizes of the training rows (default: --batch)")
  ap.add_argument("--e-c", type=float, nargs="+", default=list(workloads.E_CS))
  ap.add_argument("--mode", nargs="+", choices=("forward", "train"), default=["forward", "train"])
  ap.add_argument("--reps", type=int, default=None,
                  help="timed rounds after one warm-up round (default 7; --report: 10, 2 with --tiny)")
  ap.add_argument("--chunk", default="auto",
                  help="examples per chunk, or 'auto': each model's fastest of the three largest of 16, 8, 4, 2 dividing the batch")
  ap.add_argument("--tune-reps", type=int, default=2, help="timed runs per chunk size when choosing it")
  ap.add_argument("--video", default="", metavar="VARIANT",
                  help="also time a ViViT-FE workload, e.g. B/16x2 (MoNE vs dense ViViT only)")
  ap.add_argument("--video-only", action="store_true",
                  help="time the --video workload alone (e.g. to finish a run whose image groups are measured)")
  ap.add_argument("--video-frames", type=int, default=4, help="frames per clip of the video workload")
  ap.add_argument("--video-image-size", type=int, default=None,
                  help="frame size of the video workload in pixels (default: the variant's; B/16x2: 224 as "
                       "Kinetics-400, 256 as SSv2, the paper's timed clip)")
  ap.add_argument("--video-batch", type=int, nargs="+", default=[4])
  ap.add_argument("--video-e-c", type=float, nargs="+", default=[0.3, 0.5, 1.0])
  ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                  help="parameters, inputs and compute (bfloat16 for GPUs)")
  ap.add_argument("--no-matvit", action="store_true")
  ap.add_argument("--no-masked", action="store_true")
  ap.add_argument("--block", action="store_true",
                  help="time one transformer block's forward and backward apart (dense vs MoNE at each "
                       "--e-c, each --batch) instead of whole models; see block_rows")
  ap.add_argument("--matmul", action="store_true",
                  help="time each projection matmul of one block alone (dense vs MoNE's groups at each --e-c) "
                       "with --batch examples' tokens; see matmul_rows")
  ap.add_argument("--routing", action="store_true",
                  help="time Expert Preferred Routing alone against the whole MoNE forward (its share of it) at "
                       "each --e-c and --batch; see micro.routing_rows")
  ap.add_argument("--json", default=None,
                  help="where to write the rows (default results/bench/cpu.json, under $MONE_RESULTS_DIR if set; cpu-block.json with --block, "
                       "cpu-matmul.json with --matmul, cpu-routing.json with --routing, gpu-report-<device>.json with --report)")
  tr = ap.add_argument_group("training throughput (--training; mone.bench.training)")
  tr.add_argument("--training", action="store_true",
                  help="time every small-profile arm's training step against a float32 matmul timed beside it, "
                       "and estimate the share of each run spent outside the step; the model options above do not apply")
  tr.add_argument("--arms", nargs="+", default=None, metavar="ARM",
                  help="only these arms (e.g. image:vit image:mone:0.4; default: all of mone.bench.training.arms())")
  tr.add_argument("--pair", nargs="+", default=None, metavar="KEY=VALUE",
                  help="time every arm also with these config overrides, in turns with the arm as it is, and "
                       "compare the two (e.g. eval_batch_size=100 model.weight_grad=direct)")
  tr.add_argument("--base", nargs="+", default=None, metavar="KEY=VALUE",
                  help="config overrides every arm is timed with, --pair's before its own (e.g. the calibration's "
                       "model.weight_grad=direct eval_batch_size=100, to time one more setting against it)")
  tr.add_argument("--attention", action="store_true",
                  help="also time each step's attention alone, in the same turns, and bound MoNE's rate over the dense "
                       "model's by it (attention_share.attention_bound); default --json results/bench/cpu-training-attention.json")
  tr.add_argument("--rounds", type=int, default=5, help="turns each arm takes (--training)")
  tr.add_argument("--steps", type=int, default=4, help="steps each arm runs per turn (--training)")
  tr.add_argument("--allocators", nargs="+", default=None, metavar="FILE",
                  help="compare glibc's malloc with tcmalloc from --training files (with --pair) run in sittings: "
                       "GLIBC TCMALLOC [GLIBC TCMALLOC ...], each pair at once on the two cores (training.allocators); "
                       "writes --json (default results/bench/cpu-training-tcmalloc.json)")
  tr.add_argument("--versions", nargs="+", default=None, metavar="FILE",
                  help="compare an earlier commit's --training files (with --pair) with a later one's, run in sittings on "
                       "one machine: BEFORE AFTER [BEFORE AFTER ...], each pair at once on the two cores "
                       "(training.versions); writes --json (default results/bench/cpu-training-versions.json)")
  rep = ap.add_argument_group("the GPU report (--report; mone.bench.report)")
  rep.add_argument("--report", action="store_true",
                   help="check every GPU speed path against its reference and time it (ViT-B/16, ViViT-B/16x2) "
                        "within --budget-s, in one process; the other options above do not apply")
  rep.add_argument("--tiny", action="store_true", help="--report's code paths on tiny models (the CPU check)")
  rep.add_argument("--budget-s", type=float, default=420.0,
                   help="seconds the report may spend: work that would not fit is recorded as skipped")
  rep.add_argument("--hard-limit-s", type=float, default=None,
                   help="seconds after which a watchdog ends the report, JSON written (default: budget + 30; none with --tiny)")
  rep.add_argument("--groups", nargs="+", default=None, metavar="GROUP",
                   help="run only these report groups (names as in the JSON's 'plan')")
  rep.add_argument("--switches", nargs="*", default=None, metavar="SWITCH",
                   help="flip only these speed switches in the timing groups (default: all; none: defaults only)")
  return ap


def check(args):
  """Raises ValueError on options that cannot go together."""
  if args.training and (args.block or args.matmul or args.routing or args.report or args.video_only):
    raise ValueError("--training times the training steps alone; it does not combine with --block, --matmul, "
                     "--routing, --report or --video-only")
  if not args.training and (args.arms or args.pair or args.base or args.attention):
    raise ValueError("--arms, --pair, --base and --attention are options of --training")
  if args.block + args.matmul + args.routing > 1:
    raise ValueError("--block, --matmul and --routing time different things; pass one of them")
  if args.video_only and not args.video:
    raise ValueError("--video-only needs --video VARIANT (e.g. --video B/16x2)")
  if args.report and (args.block or args.matmul or args.routing or args.video_only):
    raise ValueError("--report runs its own groups; it does not combine with --block, --matmul, --routing or --video-only")
  if not args.report and (args.tiny or args.groups or args.switches is not None or args.hard_limit_s is not None):
    raise ValueError("--tiny, --groups, --switches and --hard-limit-s are options of --report")
  if args.video_image_size is not None and args.video_image_size < 1:
    raise ValueError(f"--video-image-size must be a positive number of pixels, got {args.video_image_size}")
  if args.budget_s <= 0:
    raise ValueError(f"--budget-s must be > 0 seconds, got {args.budget_s}")
  for flag in ("allocators", "versions"):  # files compared in pairs: stopped here, before anything is written
    given = getattr(args, flag) or ()
    if len(given) % 2:
      raise ValueError(f"--{flag} takes files in pairs; got {len(given)}")
    missing = [f for f in given if not os.path.isfile(f)]
    if missing:
      raise ValueError(f"--{flag}: no such file {missing[0]!r}")


def main(argv=None):
  ap = parser()
  args = ap.parse_args(argv)
  try:
    check(args)
  except ValueError as e:
    ap.error(str(e))
  return run(args)


def measure(json_path, **options) -> dict:
  """Runs the benchmark as `python -m mone.bench` would with these options (the command line's
  names with underscores: variant="S/16", batch=[8], block=True, ...), writes json_path and
  returns what it wrote. Its tables go to stdout as the command line's do."""
  args = parser().parse_args([])
  unknown = sorted(set(options) - set(vars(args)))
  if unknown:
    raise ValueError(f"unknown benchmark option(s) {unknown}; the options are {sorted(vars(args))}")
  for k, v in options.items():
    setattr(args, k, v)
  check(args)
  args.json = str(json_path)
  run(args)
  return results.read_json(json_path)


def command_line(**options) -> str:
  """The `python -m mone.bench ...` command that `measure(..., **options)` runs."""
  return " ".join(["python -m mone.bench", *arguments(**options)])


def arguments(**options) -> list[str]:
  """The command-line arguments of `measure(..., **options)`, one word each."""
  words = []
  for k, v in options.items():
    flag = "--" + k.replace("_", "-")
    if v is True:
      words.append(flag)
    elif v not in (False, None):
      words += [flag, *map(str, v if isinstance(v, (list, tuple)) else [v])]
  return words


def run(args):
  """The benchmark of parsed arguments (see `parser`)."""
  if args.report:
    return report.run(args, machine())
  for flag, names, gain, compare, default in (
      ("allocators", "glibc's, tcmalloc's", "tcmalloc over glibc", training.allocators, "cpu-training-tcmalloc.json"),
      ("versions", "before, after", "the later code over the earlier", training.versions, "cpu-training-versions.json")):
    given = getattr(args, flag)
    if not given:
      continue
    if len(given) % 2:
      raise ValueError(f"--{flag} takes files in pairs ({names}); got {len(given)}")
    files = [results.read_json(f) for f in given]
    out = compare(list(zip(files[::2], files[1::2])))
    path = args.json or str(results.results_root() / "bench" / default)
    results.atomic_write_json(path, {"files": given, "machines": [f["machine"] for f in files], **out})
    print(f"wrote {path}: {gain}, faster settings over the reference, by kind {out['cumulative']['by_kind']}")
    return out
  if args.training:
    return main_training(args)
  if args.reps is None:
    args.reps = 7
  if args.json is None:
    name = ("cpu-training.json" if args.training else "cpu-block.json" if args.block else "cpu-matmul.json" if args.matmul
            else "cpu-routing.json" if args.routing else "cpu.json")
    args.json = str(results.results_root() / "bench" / name)
  if args.block or args.matmul or args.routing:
    return main_block(args)

  image = None if args.video_only else workloads.cast(workloads.image_workload(
      args.variant, args.e_c, with_matvit=not args.no_matvit, with_masked=not args.no_masked,
      masked_e_c=0.3 if 0.3 in args.e_c else args.e_c[0]), args.dtype)
  size = {} if args.video_image_size is None else {"image_size": args.video_image_size}
  video = (workloads.cast(workloads.video_workload(args.video, args.video_e_c, args.video_frames, **size), args.dtype)
           if args.video else None)
  first = image or video  # the file's workload and baseline
  meta = machine()
  print(f"{first.name} on {meta['device']} / {meta['cpu_model']} ({meta['cores']} cores), jax {meta['jax']}, "
        f"load average {meta['load_avg'][0]:.2f}\nbaseline: {first.baseline}")
  baselines = {first.name: first.baseline}
  checked = lambda rows: targets.check_targets(rows, image.name) if image else []  # the image workload's only

  def save(rows, complete=False):  # after every (mode, batch): a kill loses one group at most
    if args.json:
      results.atomic_write_json(args.json, {
          "machine": {**meta, "load_avg_end": list(os.getloadavg()),
                      "peak_rss_mib": results.peak_rss_mib()},
          "baseline": first.baseline, "baselines": baselines, "workload": first.name, "args": _recorded(args),
          "complete": complete, "rows": rows, "targets": checked(rows), **results.provenance()})

  rows = []
  if image:
    timing.bench(image, args.mode, args.batch, args.reps, args.chunk, args.tune_reps, on_group=save,
                 rows=rows, train_batches=args.train_batch)
  if video:
    if image:
      print(f"baseline: {video.baseline}")
      baselines[video.name] = video.baseline
    timing.bench(video, args.mode, args.video_batch, args.reps, args.chunk, args.tune_reps, on_group=save, rows=rows)
  checks = checked(rows)
  if checks:
    print("targets:\n" + targets.targets_table(checks))
  if args.json:
    save(rows, complete=True)
    print(f"wrote {args.json}")
  return rows


def _recorded(args) -> dict:
  """The command-line arguments as the JSON records them: a path inside the repository relative
  to it, so that no local path is committed."""
  out = vars(args).copy()
  try:
    out["json"] = str(Path(args.json).resolve().relative_to(results.REPO))
  except ValueError:
    pass
  return out


def main_block(args):
  """--block (block_rows), --matmul (matmul_rows) or --routing (routing_rows, at each e_c) for each
  batch, written like the model rows (no targets apply)."""
  meta = machine()
  what = "one block's matmuls" if args.matmul else "routing alone" if args.routing else "one block"
  print(f"ViT-{args.variant}, {what}, on {meta['device']} / {meta['cpu_model']} ({meta['cores']} cores), "
        f"jax {meta['jax']}, load average {meta['load_avg'][0]:.2f}")
  rows = []
  for batch in args.batch:
    if args.routing:
      rows += [r for e_c in args.e_c for r in micro.routing_rows(args.variant, e_c, batch, args.reps)]
    else:
      rows += (micro.matmul_rows if args.matmul else micro.block_rows)(args.variant, args.e_c, batch, args.reps)
  if args.json:
    results.atomic_write_json(args.json, {
        "machine": {**meta, "load_avg_end": list(os.getloadavg()), "peak_rss_mib": results.peak_rss_mib()},
        "workload": rows[0]["workload"], "args": _recorded(args), "complete": True, "rows": rows, **results.provenance()})
    print(f"wrote {args.json}")
  return rows




def main_training(args):
  """--training: `mone.bench.training.measure`, written with the machine it ran on."""
  if args.json is None:
    args.json = str(results.results_root() / "bench" / ("cpu-training-attention.json" if args.attention else "cpu-training.json"))
  meta = machine()
  print(f"training throughput on {meta['device']} / {meta['cpu_model']} ({results.usable_cores()} of "
        f"{meta['cores']} cores usable), jax {meta['jax']}, code {meta['code']}, load average {meta['load_avg'][0]:.2f}")
  out = training.measure(args.arms or (), rounds=args.rounds, steps_per_round=args.steps, pair=args.pair or (),
                         base=args.base or (), attention=args.attention)
  results.atomic_write_json(args.json, {
      "machine": {**meta, "cores_used": results.usable_cores(), "load_avg_end": list(os.getloadavg()),
                  "peak_rss_mib": results.peak_rss_mib()},
      "args": _recorded(args), "complete": True, **out, **results.provenance()})
  print(f"wrote {args.json}")
  return out["rows"]
