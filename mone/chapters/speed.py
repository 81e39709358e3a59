"""Chapter 08 (wall-clock speed): which benchmark each profile reads, and its figures and claims.

The benchmark is a measurement of a machine, made once on a quiet one and committed under
results/bench/ (`python -m mone.bench`, see `mone.bench`); the chapter reads those files. It
measures anew only for the smoke profile (tiny models, to check that the chapter runs), with
`recompute=True` (about 50 minutes on 2 cores), or where no file is committed.
"""
import contextlib
import io
from pathlib import Path

import numpy as np

from mone import results
from mone.bench import contenders, micro, timing
from mone.bench.contenders import DENSE, MASKED, MATVIT, MONE
from mone.bench.rows import report_table
from mone.plotting import plots
from mone.runs import experiments
from mone.configs import profiles

_FULL = dict(variant="S/16", batch=[8, 32], train_batch=[8, 32], reps=7, video="B/16x2")
_BLOCK = dict(variant="S/16", batch=[8, 32], e_c=[0.3, 0.5, 1.0], reps=15, block=True)
_MATMUL = dict(variant="S/16", batch=[4], e_c=[0.3, 0.5], reps=15, matmul=True)
# Per profile, the options of each benchmark file the chapter reads (`mone.bench.cli.measure`).
SETTINGS = {
    "smoke": {"cpu.json": dict(variant="tiny/8", batch=[4], e_c=[0.3, 1.0], mode=["forward"], reps=2,
                               video="tiny/8x2", video_frames=2, video_batch=[2], video_e_c=[0.3]),
              "cpu-block.json": dict(variant="tiny/8", batch=[2], e_c=[0.3], reps=2, block=True),
              "cpu-matmul.json": dict(variant="tiny/8", batch=[2], e_c=[0.3], reps=2, matmul=True)},
    "small": {"cpu.json": _FULL, "cpu-block.json": _BLOCK, "cpu-matmul.json": _MATMUL},
    "paper": {"cpu.json": _FULL, "cpu-block.json": _BLOCK, "cpu-matmul.json": _MATMUL},
}
MODEL_STYLE = {MONE: dict(color=plots.MODEL_COLORS["MoNE"], label="MoNE"),  # every chapter's colours
               MATVIT: dict(color=plots.MODEL_COLORS["MatViT"], label="MatViT sub-model"),
               MASKED: dict(color="k", label="naive masked MoNE")}
# The speed-up figure's marker per batch size, smallest first: a model is its colour, a batch its
# marker, so that no two of the legend's series look alike (`mone.plotting.legibility`).
BATCH_MARKERS = ("o", "s", "^", "D", "v", "P")
def bench_dir(profile: str):
  """Where a profile's benchmark files are: results/bench/ (smoke: results/smoke_bench/)."""
  return experiments.results_root() / ("smoke_bench" if profiles.check_profile(profile) == "smoke" else "bench")


def measured(profile: str, name: str, recompute: bool = False) -> dict:
  """The benchmark file `name` of a profile ('cpu.json', 'cpu-block.json' or 'cpu-matmul.json'),
  measured first for the smoke profile, with recompute, or where none is at hand. The
  benchmark's own tables are silenced: the chapter prints them from the file."""
  path = bench_dir(profile) / name
  if recompute or profile == "smoke" or not path.exists():
    from mone.bench import cli  # here, as in `command`
    with contextlib.redirect_stdout(io.StringIO()):
      cli.measure(path, **SETTINGS[profile][name])
  return results.read_json(path)


def command(profile: str, name: str) -> str:
  """The command line that measures the file `name` of a profile."""
  # Imported here: the benchmark's CLI brings the data pipeline (PIL), which the book's environment, where
  # the chapters' command line runs, lacks.
  from mone.bench import cli
  return cli.command_line(**SETTINGS[profile][name])


def groups(rows, *keys):
  """The distinct values of `keys` in rows, in order of appearance."""
  return list(dict.fromkeys(tuple(r[k] for k in keys) for r in rows))


def tables(rows, *keys, named: bool = False) -> list[str]:
  """Per group of rows by `keys` (`groups`), a blank line and its table (`timing.table`); named:
  the group's first key (its workload) precedes the table's load line, which would not say."""
  out = []
  for key in groups(rows, *keys):
    table = timing.table([r for r in rows if tuple(r[k] for k in keys) == key])
    out += ["", table.replace("\nload", f"\n{key[0]}; load") if named else table]
  return out


def benchmark_report(profile: str, data: dict) -> list[str]:
  """What the chapter prints of a profile's benchmark (cpu.json, `measured`): whether the run was
  cut, its command, the machine, each workload's baseline, and a table per (workload, mode, batch)."""
  m = data["machine"]
  note = [] if data.get("complete", True) else ["NOTE: this benchmark run was stopped before the end; only the groups below were measured."]
  head = [command(profile, "cpu.json"), f"measured {m['date'][:10]} on {m['cpu_model']} ({m['cores']} cores, {m['backend']}), "
          f"jax {m['jax']}, code {m.get('code')}, load average {m['load_avg'][0]:.2f} at the start"]
  bases = [f"baseline of {name}: {base}" for name, base in data.get("baselines", {data["workload"]: data["baseline"]}).items()]
  return note + head + bases + tables(data["rows"], "workload", "mode", "batch", named=True)


def block_report(profile: str, data: dict) -> list[str]:
  """What the chapter prints of the `--block` benchmark (cpu-block.json): its command, when and
  with which code it ran, and a table per (batch, mode)."""
  m = data["machine"]
  return [command(profile, "cpu-block.json"), f"measured {m['date'][:10]}, code {m.get('code')}, jax {m['jax']}"
          ] + tables(data["rows"], "batch", "mode")


def matmul_report(profile: str, data: dict) -> list[str]:
  """What the chapter prints of the `--matmul` benchmark (cpu-matmul.json): its command, the
  machine, and its table (`micro.matmul_table`)."""
  m = data["machine"]
  return [command(profile, "cpu-matmul.json"), f"measured {m['date'][:10]} on {m['cpu_model']}, code {m.get('code')}, "
          f"jax {m['jax']}", micro.matmul_table(data["rows"])]


# The GPU report (`make gpu-report`, mone/bench/report.py) writes its own format, with targets,
# correctness checks and rows that were skipped: its files have their own reader (`gpu_reports`).
GPU_REPORT_PREFIX = "gpu-report-"


def gpu_benchmarks(folder=None) -> dict:
  """{path: benchmark} of the GPU benchmark runs (`python -m mone.bench`) committed as
  `results/bench/gpu-*.json` (or in `folder`), by name, the GPU reports left out: measured on GPU
  machines available for minutes, read as committed and never rewritten by any profile."""
  paths = sorted(Path(folder or results.RESULTS / "bench").glob("gpu-*.json"))
  return {path: results.read_json(path) for path in paths if not path.name.startswith(GPU_REPORT_PREFIX)}


def gpu_reports(folder=None) -> dict:
  """{path: report} of the GPU reports committed as `results/bench/gpu-report-*.json` (or in
  `folder`), in the order they were measured (a report cut short is often followed by one that
  times what it skipped)."""
  docs = {path: results.read_json(path) for path in Path(folder or results.RESULTS / "bench").glob(f"{GPU_REPORT_PREFIX}*.json")}
  return dict(sorted(docs.items(), key=lambda kv: (kv[1]["machine"]["date"], kv[0].name)))


def report_command(args: dict) -> str:
  """The command line a GPU report recorded (its 'args'), the options left at their defaults omitted."""
  cmd = "python -m mone.bench --report"
  if args.get("groups"):
    cmd += " --groups " + " ".join(args["groups"])
  if args.get("switches") is not None:
    cmd += " --switches" + "".join(f" {s}" for s in args["switches"])
  return cmd + f" --budget-s {args['budget_s']:g}"


def gpu_report_lines(path, doc: dict) -> list[str]:
  """What the chapter prints of one GPU report: its command, the machine, whether it ran to the end
  (the machine's time limit stops a report, its JSON kept), what its default setting was
  (`default_settings`), the rows it timed (`mone.bench.rows.report_table`), then the report's own
  summary: each target met, missed or not measured, the correctness checks, compile times and what
  was not done."""
  m = doc["machine"]
  ended = (f"ran to the end in {doc['elapsed_s']:.0f} s" if doc["complete"] else
           f"stopped at {doc['aborted']['at_s']:.0f} s, while {doc['aborted']['during']}")
  head = [f"{path.name}: {report_command(doc['args'])}",
          f"measured {m['date'][:10]} on {m['device']} in {doc['dtype']}, jax {m['jax']}, code {m.get('code')}; {ended}"]
  timed = [r for r in doc["rows"] if r.get("status") == "timed"]
  return head + default_settings(doc) + [report_table(timed) if timed else "no row timed"] + doc["summary"]


def default_settings(doc: dict) -> list[str]:
  """One line per distinct value of the speed switches in a GPU report's timed default rows, naming
  their groups: what 'default' meant there. A report that ran no correctness group keeps every fast
  path on; one whose checks failed or were skipped times those paths at their reference values."""
  names = [s["name"] for s in doc["switches"]]
  seen: dict[str, list[str]] = {}
  for r in doc["rows"]:
    if r.get("status") == "timed" and r["setting"] == "default":
      key = ", ".join(f"{n}={r[n]}" for n in names if r.get(n) is not None)
      seen.setdefault(key, []).append(r["group"])
  return [f"default setting of {', '.join(dict.fromkeys(groups))}: {key}" for key, groups in seen.items()]


def gpu_report_targets(reports: dict) -> list[str]:
  """Over every committed GPU report (`gpu_reports`): each speed target some report measured, with its
  value, met or missed, and the report; then how many targets no report has measured yet."""
  seen, lines = set(), []
  for path, doc in reports.items():
    for t in doc["targets"]:
      if t["measured"] is not None:
        seen.add(t["id"])
        lines.append(f"{t['description']}: {t['measured']:.2f} -> {t['status']} ({path.name})")
  ids = {t["id"] for doc in reports.values() for t in doc["targets"]}
  return lines + [f"{len(ids - seen)} of {len(ids)} targets not measured by any report"]


def gpu_report(path, data: dict) -> list[str]:
  """What the chapter prints of one GPU benchmark: the workloads measured, its dtype, the device,
  whether the machine's time limit cut it, and a table per (workload, mode, batch)."""
  m, rows = data["machine"], data["rows"]
  measured = ", ".join(dict.fromkeys(r["workload"] for r in rows))  # the args' variant is unused with --video-only
  return [f"{path.name}: {measured} in {data['args']['dtype']}; measured {m['date'][:10]} on {m['device']}, "
          f"jax {m['jax']}, code {m.get('code')}; complete: {data['complete']}"] + tables(rows, "workload", "mode", "batch")


def speedup_panel(ax, rows, title: str, batches=None):
  """Measured speed-up against the analytic FLOP ratio of the non-dense `rows`: a colour per model
  (`MODEL_STYLE`), a marker per batch size (`BATCH_MARKERS`, in the order of `batches`, every batch
  size of the figure: a batch keeps its marker in every panel; default: those of `rows`). Each
  MoNE capacity is labelled once, above its highest point: the batches of one e_c share a FLOP
  ratio, and a label per point overlapped."""
  batches = sorted(batches or {r["batch"] for r in rows})
  if len(batches) > len(BATCH_MARKERS):
    raise ValueError(f"{len(batches)} batch sizes, markers for {len(BATCH_MARKERS)}")
  top = max(max(r["flop_ratio"] for r in rows), max(r["speedup"] for r in rows)) * 1.1
  ax.plot([0, top], [0, top], color="gray", lw=1, ls="--", label="ideal: speed-up = FLOP ratio")
  ax.axhline(1, color="gray", lw=0.6)
  for b, marker in zip(batches, BATCH_MARKERS):
    for model, style in MODEL_STYLE.items():
      pts = [r for r in rows if r["model"] == model and r["batch"] == b]
      if pts:
        ax.plot([r["flop_ratio"] for r in pts], [r["speedup"] for r in pts], ls="none", ms=8, marker=marker,
                color=style["color"], label=f"{style['label']}, batch {b}")
  for e_c in dict.fromkeys(r["e_c"] for r in rows if contenders.is_(r, MONE)):
    high = max((r for r in rows if contenders.is_(r, MONE, e_c)), key=lambda r: r["speedup"])
    ax.annotate(f"{e_c:g}", (high["flop_ratio"], high["speedup"]), fontsize=11, xytext=(0, 8),
                textcoords="offset points", ha="center")
  ax.set(xlim=(0, top), ylim=(0, top), xlabel="analytic FLOP ratio (dense / model)", ylabel="measured speed-up", title=title)
  ax.grid(alpha=0.3)


def figure_legend(fig, axes, ncol: int, key=None) -> None:
  """One legend for every panel, below them: inside a panel it covered points and bars, and at
  the size a panel allows its text was too small to read in the book. The figure grows by the
  legend's height (and to its width, where the legend is wider) and the panels are laid out above
  it, so that the legend lies inside the figure: a PNG of the figure's own size (`plots.save_png`)
  holds it whole, as a tight one does. key: sorts the entries by label (default: as drawn)."""
  entries = {}
  for ax in axes:
    for handle, label in zip(*ax.get_legend_handles_labels()):
      entries.setdefault(label, handle)
  labels = sorted(entries, key=key) if key else list(entries)
  legend = fig.legend([entries[label] for label in labels], labels, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                      ncol=ncol, fontsize=11, frameon=False)
  box = legend.get_window_extent(fig.canvas.get_renderer())
  foot = box.height / fig.dpi + 0.05  # inches
  width, height = fig.get_size_inches()
  fig.set_size_inches(max(width, box.width / fig.dpi + 0.2), height + foot)
  fig.tight_layout(rect=(0, foot / (height + foot), 1, 1))


def speedup_figure(rows, machine: dict):
  """One speed-up panel per (workload, mode), two a row, and one legend below (`speedup_panel`: a
  colour per model, a marker per batch size)."""
  import matplotlib.pyplot as plt
  panels = groups(rows, "workload", "mode")
  ncols = min(2, len(panels))
  nrows = -(-len(panels) // ncols)
  fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 4.4 * nrows), squeeze=False)
  batches = sorted({r["batch"] for r in rows if not contenders.is_(r, DENSE)})  # one marker per batch size, in every panel
  for (wl, mode), ax in zip(panels, axes.flat):
    speedup_panel(ax, [r for r in rows if (r["workload"], r["mode"]) == (wl, mode) and not contenders.is_(r, DENSE)],
                  f"{wl}, {mode}", batches)
  for ax in axes.flat[len(panels):]:
    ax.set_visible(False)
  where = (machine["device"] if machine.get("backend") == "gpu"
           else f"{machine['cpu_model']}, {machine['cores']} cores")
  fig.suptitle(f"Wall-clock speed-up against FLOP ratio (labels: $e_c$)\non {where}")
  figure_legend(fig, axes.flat[:len(panels)], ncol=2, key=_by_model_and_batch)  # a panel alone widens to it
  return fig


def _by_model_and_batch(label: str) -> tuple:
  """The speed-up legend's order: the ideal line, then each model (`MODEL_STYLE`) by batch size."""
  names = [style["label"] for style in MODEL_STYLE.values()]
  model, _, batch = label.rpartition(", batch ")
  return (names.index(model), int(batch)) if model in names else (-1, 0)


def masked_summary(rows) -> list[str]:
  """The naive masked MoNE's speed-up beside the FLOP ratio of the MoNE it computes."""
  lines = []
  for r in (r for r in rows if contenders.is_(r, MASKED)):
    ratio = next(m["flop_ratio"] for m in rows if contenders.is_(m, MONE) and (m["mode"], m["batch"], m["e_c"]) ==
                 (r["mode"], r["batch"], r["e_c"]))
    lines.append(f"naive masked MoNE, {r['mode']} batch {r['batch']} at e_c={r['e_c']}: speed-up {r['speedup']:.2f} "
                 f"(FLOP ratio of this MoNE: {ratio:.2f})")
  return lines


def speedup_summary(rows) -> list[str]:
  """One line per (workload, mode) of a benchmark: MoNE's speed-up at each e_c below 1 and batch,
  beside its FLOP ratio, then each MatViT sub-model's (the one nearest in FLOPs to a MoNE row; its
  width and FLOP ratio name it, since two MoNE capacities can share one)."""
  lines = []
  for wl, mode in groups(rows, "workload", "mode"):
    group = [r for r in rows if (r["workload"], r["mode"]) == (wl, mode)]
    at = lambda r: f"(batch {r['batch']}, FLOP ratio {r['flop_ratio']:.2f})"
    line = f"{wl}, {mode}: MoNE's speed-up " + ", ".join(f"{r['speedup']:.2f}x at e_c={r['e_c']:g} {at(r)}" for r in group
                                                         if contenders.saves(r))
    nested = [f"{r['note'].split(' (')[0].removeprefix('sub-model ')} {r['speedup']:.2f}x {at(r)}"
              for r in group if contenders.is_(r, MATVIT)]
    lines.append(line + (f"; MatViT's sub-models nearest in FLOPs: {', '.join(nested)}" if nested else ""))
  return lines


def gpu_findings(gpus: dict) -> list[str]:
  """One line per (workload, mode) over every committed GPU file (`gpu_benchmarks`): the range of
  MoNE's speed-ups below e_c = 1 beside the range of its FLOP ratios, and MatViT's sub-models' speed-ups
  at theirs: the numbers behind the chapter's reading of the GPU runs."""
  rows = [{**r, "file": p.name} for p, g in gpus.items() for r in g["rows"] if r.get("speedup") is not None]
  lines = []
  span = lambda xs: f"{min(xs):.2f}-{max(xs):.2f}" if min(xs) != max(xs) else f"{xs[0]:.2f}"
  for wl, mode in groups(rows, "workload", "mode"):
    sel = [r for r in rows if (r["workload"], r["mode"]) == (wl, mode)]
    mone = [r for r in sel if contenders.saves(r)]
    nested = [r for r in sel if contenders.is_(r, MATVIT)]
    files = ", ".join(dict.fromkeys(r["file"] for r in sel))
    line = (f"{wl}, {mode} ({files}): MoNE's speed-up over the dense model {span([r['speedup'] for r in mone])}x "
            f"at {span([r['flop_ratio'] for r in mone])}x fewer FLOPs")
    if nested:
      line += (f"; MatViT's sub-models' {span([r['speedup'] for r in nested])}x at "
               f"{span([r['flop_ratio'] for r in nested])}x fewer FLOPs")
    lines.append(line)
  return lines


def gpu_ranges(gpus: dict) -> dict:
  """The committed GPU runs in a few numbers, for the landing page's line on speed: the devices, and
  per mode the range of MoNE's speed-ups below e_c = 1 and of their FLOP ratios, over every file."""
  rows = [r for g in gpus.values() for r in g["rows"]
          if contenders.saves(r) and r.get("speedup") is not None]
  span = lambda xs: [min(xs), max(xs)]
  return {"devices": sorted({g["machine"]["device"] for g in gpus.values()}),
          **{mode: {"speedup": span([r["speedup"] for r in sel]), "flop_ratio": span([r["flop_ratio"] for r in sel])}
             for mode in ("forward", "train") if (sel := [r for r in rows if r["mode"] == mode])}}
