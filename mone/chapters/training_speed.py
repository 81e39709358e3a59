"""Training throughput on one CPU core (the book's page on it, `python -m mone.chapters throughput`): the
committed `python -m mone.bench --training` files (`mone.bench.training`), read as committed and never
rewritten by any profile, as tables, a figure and the checks of the throughput targets.

A file measured with `--pair` holds every arm twice, timed in turns in one process: as the small
profile trained it (the reference) and with the pair's config overrides (the faster settings a new
profile can take). Its reference rows are the baseline the targets are measured against.
"""
import os
from pathlib import Path

import numpy as np

from mone import results
from mone.plotting import plots
from mone.models import kinds

FILE = "cpu-training.json"
ALLOCATORS = "cpu-training-tcmalloc.json"  # `python -m mone.bench --allocators`: tcmalloc against glibc
VERSIONS = "cpu-training-versions.json"  # `python -m mone.bench --versions`: this code against the baseline's
VERSIONS_VIDEO = "cpu-training-versions-video.json"  # the same on the video arms, tubelet embedding as one matmul
VERSIONS_IMAGES_AVX2 = "cpu-training-versions-images-avx2.json"  # the image arms again, on the video arms' machine
# The comparisons run again elsewhere: (file, the paragraph's title, why it was run, the heading of its targets).
AGAIN = ((VERSIONS_VIDEO, "The video arms with the tubelet embedding as one matmul.",
          "`model.tubelet_embed` exists only for ViViT, so the video arms were compared again, on their own, with it "
          "among this code's faster settings, on another machine",
          "The video arms with the tubelet embedding as one matmul, on their machine:"),
         (VERSIONS_IMAGES_AVX2, "The image arms on the video arms' machine.",
          "The image arms' comparison above ran on a machine with AVX-512; the same comparison on the machine that "
          "timed the video arms, which has AVX2 only, puts every kind on one machine",
          "The image arms on the video arms' machine:"))
ATTENTION = "cpu-training-attention.json"  # `python -m mone.bench --training --attention`: attention's share of a step
TUBELET = "cpu-training-tubelet.json"  # `--base <the calibration's settings> --pair model.tubelet_embed=matmul`
HEADLINE_RUN = "headline-run-image-vit.json"  # a full image run's own metrics: `python -m mone.train` on one core
TARGET_STEP_SPEEDUP = 2.0      # every kind's step, GFLOP/s against its reference
TARGET_MONE_OVER_DENSE = 0.8   # MoNE's GFLOP/s per core over the dense model's on the same recipe
TARGET_IMAGE_RUN_S = 25 * 60   # a full headline image run (8,000 steps) on one core


def throughput(name: str = FILE) -> dict | None:
  """The committed benchmark file results/bench/<name>, or None where none is committed."""
  path = results.RESULTS / "bench" / name
  return results.read_json(path) if path.exists() else None


def split(doc: dict) -> tuple[list[dict], list[dict]]:
  """(reference rows, rows with the pair's overrides) of a file; the second is empty without --pair."""
  rows = doc["rows"]
  return [r for r in rows if not r.get("overrides")], [r for r in rows if r.get("overrides")]


def header(doc: dict) -> list[str]:
  """Where and how the file was measured, in a few lines."""
  m, args = doc["machine"], doc["args"]
  pair = " ".join(args.get("pair") or [])
  cmd = "python -m mone.bench --training" + (f" --pair {pair}" if pair else "") + \
      f" --rounds {args['rounds']} --steps {args['steps']}"
  mm = doc["matmul_gflop_per_s"]
  return [f"measured on {m['date'][:10]} on one core ({m.get('cores_used') or m['cores']} of {m['cores']}, pinned) "
          f"of an {m['cpu_model']}, jax {m['jax']}: `taskset -c 0 {cmd}`",
          f"float32 matmul ({2048}^3, timed before and after the steps): {mm['before']:.1f} and {mm['after']:.1f} "
          f"GFLOP/s; rates below are fractions of {mm['used']:.1f} (FLOPs counted as multiply-accumulates, "
          f"as mone.flops and the paper count them)"]


def _cells(r: dict) -> list[str]:
  return [f"{r['step_ms']:.0f}", f"{r['gflop_per_s']:.1f}", f"{100 * r['matmul_fraction']:.0f}%",
          f"{100 * r['run']['outside_share']:.0f}%", f"{r['run']['estimated_wall_s'] / 60:.0f}"]


COLUMNS = ["ms per step", "GFLOP/s", "share of the matmul rate", "run outside the step", "run, minutes"]


def table(rows: list[dict], reference: list[dict] | None = None) -> list[str]:
  """A Markdown table, one row per arm: its step and estimated run; given the reference rows (the
  same arms as the profile trains them), also the speed-ups over them. Two tables, not one side by
  side: the page's column holds about eight columns at 1,400 px."""
  head = ["arm", *COLUMNS] + (["step speed-up", "run speed-up"] if reference else [])
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for i, r in enumerate(rows):
    cells = [r["arm"], *_cells(r)]
    if reference:
      a = reference[i]
      cells += [f"{r['gflop_per_s'] / a['gflop_per_s']:.2f}x",
                f"{a['run']['estimated_wall_s'] / r['run']['estimated_wall_s']:.2f}x"]
    lines.append("| " + " | ".join(cells) + " |")
  return lines


def outside_line(doc: dict) -> str:
  """What 'outside the step' is made of, for the arm where it weighs most."""
  ref, _ = split(doc)
  worst = max(ref, key=lambda r: r["run"]["outside_share"])
  parts = ", ".join(f"{k[:-2].replace('_', ' ')} {v / 60:.1f} min" for k, v in worst["run"]["outside_s"].items())
  return (f"Outside the step weighs most in {worst['arm']} ({100 * worst['run']['outside_share']:.0f}% of its "
          f"run as the profile trains it): {parts}.")


def _dense(row: dict) -> bool:
  """Whether a row times the dense model (ViT, ViViT): the base kind, which the others extend."""
  return type(kinds.of_run(row)) is kinds.Kind


def allocator_table(alloc: dict) -> list[str]:
  """tcmalloc's step rate over glibc's by kind (`mone.bench.training.allocators`): as the profile
  trains, with the faster settings, and both together over the profile's training."""
  kinds_ = list(alloc["cumulative"]["by_kind"])
  head = ["", "as the profile trains", "with the faster settings", "tcmalloc and the faster settings over the profile"]
  rows = [[k, *(f"{alloc[s]['by_kind'][k]:.2f}x" for s in ("reference", "with_overrides", "cumulative"))] for k in kinds_]
  return ["| " + " | ".join(head) + " |", "| --- | ---: | ---: | ---: |"] + ["| " + " | ".join(r) + " |" for r in rows]


def targets(doc: dict, alloc: dict | None = None) -> list[str]:
  """The throughput targets, each measured (medians over the recipe mix): the pair in one sitting,
  or where `alloc` (the allocator comparison) is given, tcmalloc with the faster settings over glibc
  as the profile trains, in sittings of a process per core and allocator."""
  ref, fast = split(doc)
  now = fast or ref
  out = []
  if fast:
    by = {k: v["step_speedup"] for k, v in doc["paired"]["by_kind"].items()}
    if alloc is not None:
      by = alloc["cumulative"]["by_kind"]
    worst = min(by, key=by.get)
    ok = all(v >= TARGET_STEP_SPEEDUP for v in by.values())
    out.append(f"every kind's step >= {TARGET_STEP_SPEEDUP:g}x its reference GFLOP/s: {'met' if ok else 'not met'} ("
               + ", ".join(f"{k} {v:.2f}x" for k, v in by.items()) + f"; lowest {worst})")
  ratios = doc["summary_with_overrides" if fast else "summary"]["mone_over_dense"]  # `mone.bench.training.summary`
  if alloc is not None:  # the median over the sittings of tcmalloc's files
    ratios = {k: float(np.median([r[k] for r in alloc["mone_over_dense_tcmalloc"]])) for k in ratios}
  ok = all(v >= TARGET_MONE_OVER_DENSE for v in ratios.values())
  out.append(f"MoNE's GFLOP/s within {TARGET_MONE_OVER_DENSE:g}x of the dense model's on its recipe: "
             f"{'met' if ok else 'not met'} (" + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()) + ")")
  image = [r for r in now if r["recipe"] == "digits64" and (_dense(r) or kinds.of_run(r).routed)]
  slowest = max(image, key=lambda r: r["run"]["estimated_wall_s"], default=None)
  if slowest:
    wall = estimated = slowest["run"]["estimated_wall_s"]
    detail = f"{estimated / 60:.0f} min estimated"
    if alloc is not None:
      wall = estimated / alloc["with_overrides"]["per_arm"][slowest["arm"]]
      detail += f" with glibc, {wall / 60:.0f} with tcmalloc"
    ok = wall <= TARGET_IMAGE_RUN_S
    out.append(f"a full image run (8,000 steps) under {TARGET_IMAGE_RUN_S // 60} minutes on one core: "
               f"{'met' if ok else 'not met'} (slowest ViT/MoNE arm {slowest['arm']}: {detail})")
  return out


def versions_text(v: dict, file: str = VERSIONS, title: str = "This code against the baseline's, on one machine.",
                  why: str = "The file above and this code ran on different machines, so the code's own gain is "
                             "measured apart") -> str:
  """The later code against the baseline's (`mone.bench.training.versions`, results/bench/<file>), timed on
  one machine: where and how, and the speed-ups by kind; title and why lead the paragraph."""
  before, after = v["machines"][0], v["machines"][1]
  arms = list(v["cumulative"]["per_arm"])
  head = ["", "as the profile trains", "each with its faster settings", "this code, faster settings, over the baseline as the profile trained"]
  rows = [[k, *(f"{v[s]['by_kind'][k]:.2f}x" for s in ("reference", "with_overrides", "cumulative"))]
          for k in v["cumulative"]["by_kind"]]
  table = ["| " + " | ".join(head) + " |", "| --- | ---: | ---: | ---: |"] + ["| " + " | ".join(r) + " |" for r in rows]
  rates = [r for pair in v.get("matmul_gflop_per_s", []) for r in pair]
  matmul = f" (matmul {np.median(rates):.0f} GFLOP/s, the median over the processes)" if rates else ""
  return (f"\n**{title}** {why}: the benchmark at the commit that measured the "
          f"file above (as it trained: {before.get('allocator') or 'glibc'}) and at this code "
          f"({after.get('allocator') or 'glibc'}), two processes at once, one per core of an {after['cpu_model']}{matmul}, "
          f"{v['sittings']} sittings with the cores swapped (`python -m mone.bench --versions`, `results/bench/{file}`), "
          f"on {len(arms)} arms ({', '.join(arms)}). The faster settings: `{' '.join(v['overrides'])}` for this code, "
          f"`{' '.join(v.get('overrides_before', v['overrides']))}` for the baseline's. The later code's step rate over "
          "the baseline's, by kind (medians over the arms of the geometric means over the sittings):\n\n"
          + "\n".join(table) + "\n")


def versions_targets(v: dict) -> list[str]:
  """The throughput targets read from the comparison of code versions on one machine (`versions_text`)."""
  by = v["cumulative"]["by_kind"]
  ok = all(x >= TARGET_STEP_SPEEDUP for x in by.values())
  out = [f"every kind's step >= {TARGET_STEP_SPEEDUP:g}x the baseline's: {'met' if ok else 'not met'} ("
         + ", ".join(f"{k} {x:.2f}x" for k, x in by.items()) + f"; lowest {min(by, key=by.get)})"]
  ratios = {k: float(np.median([r[k] for r in v["mone_over_dense_after"]])) for k in v["mone_over_dense_after"][0]}
  ok = all(x >= TARGET_MONE_OVER_DENSE for x in ratios.values())
  out.append(f"MoNE's GFLOP/s within {TARGET_MONE_OVER_DENSE:g}x of the dense model's on its recipe: "
             f"{'met' if ok else 'not met'} (" + ", ".join(f"{k} {x:.2f}x" for k, x in ratios.items()) + ")")
  runs = {a: float(np.median([s[a] for s in v["run_s_after"]])) for a in v["run_s_after"][0]}
  image = [a for a, r in v["arms"].items() if r["recipe"] == "digits64" and (_dense(r) or kinds.of_run(r).routed)]
  if image:
    slowest = max(image, key=runs.get)
    ok = runs[slowest] <= TARGET_IMAGE_RUN_S
    out.append(f"a full image run (8,000 steps) under {TARGET_IMAGE_RUN_S // 60} minutes on one core: "
               f"{'met' if ok else 'not met'} (slowest ViT/MoNE arm timed, {slowest}: {runs[slowest] / 60:.1f} min "
               "estimated, the median over the sittings)")
  return out


def attention_text(att: dict) -> str:
  """Each arm's step beside its full-width attention alone, timed in the same turns (with the pair's
  overrides where the file has them), and what that attention leaves MoNE's rate over the dense
  model's at best (`mone.bench.training.attention_bound`)."""
  ref, fast = split(att)
  rows, summary = (fast, att["summary_with_overrides"]) if fast else (ref, att["summary"])
  lines = ["| arm | ms per step | attention alone, ms | attention's share |", "|---|---:|---:|---:|"]
  lines += [f"| {r['arm']} | {r['step_ms']:.0f} | {r['attention']['ms']:.0f} | {100 * r['attention']['share']:.0f}% |"
            for r in rows]
  m = att["machine"]
  bounds = "; ".join(f"{recipe}: {summary['mone_over_dense'][recipe]:.2f}x measured, at most {b:.2f}x"
                     for recipe, b in summary["mone_over_dense_bound"].items())
  return (f"\n**Attention's share.** MoNE runs attention at full width over every token, as the dense model does, so "
          "its time does not shrink with e_c. Timed alone (forward and backward of the step's own attention calls, "
          "one program, in the same turns as the steps) on one core of an "
          f"{m['cpu_model']} on {m['date'][:10]}" + (f", with `{' '.join(fast[0]['overrides'])}`" if fast else "")
          + f" (`python -m mone.bench --training --attention`, `results/bench/{ATTENTION}`):\n\n" + "\n".join(lines)
          + "\n\nIf everything else in MoNE's step ran at the dense step's rate per FLOP, attention taking the time "
          f"it takes, MoNE's rate over the dense model's would be at most: {bounds}. Below that ceiling, MoNE's "
          "narrow matmuls and its routing cost the rest.\n")


def attention_targets(att: dict) -> list[str]:
  """What attention alone leaves of the MoNE-over-dense target (`attention_text`)."""
  _, fast = split(att)
  bounds = att["summary_with_overrides" if fast else "summary"]["mone_over_dense_bound"]
  out = []
  for recipe, b in bounds.items():
    out.append(f"{recipe}: attention alone caps MoNE's GFLOP/s at {b:.2f}x the dense model's, "
               + (f"below the {TARGET_MONE_OVER_DENSE:g}x target: no change outside attention can meet it there"
                  if b < TARGET_MONE_OVER_DENSE else
                  f"above the {TARGET_MONE_OVER_DENSE:g}x target: the rest of MoNE's step is what falls short"))
  return out


def tubelet_text(doc: dict) -> str:
  """ViViT's tubelet embedding as one matmul (`model.tubelet_embed=matmul`) against the 3-D convolution,
  every arm with the file's --base settings (the calibration's step), timed in turns: per arm, by kind."""
  ref, fast = split(doc)
  m, mm = doc["machine"], doc["matmul_gflop_per_s"]
  base = " ".join(doc["args"].get("base") or [])
  lines = ["| arm | ms per step, convolution | ms per step, one matmul | step speed-up |", "|---|---:|---:|---:|"]
  lines += [f"| {a['arm']} | {a['step_ms']:.0f} | {b['step_ms']:.0f} | {a['step_ms'] / b['step_ms']:.2f}x |"
            for a, b in zip(ref, fast)]
  by_kind = "; ".join(f"{k} {v['step_speedup']:.2f}x" for k, v in doc["paired"]["by_kind"].items())
  return (f"\n**The tubelet embedding as one matmul.** ViViT embeds t x p x p tubelets with a 3-D convolution whose "
          "stride is its kernel; XLA:CPU runs it, and above all its weight gradient, far below its matmul rate. "
          f"`{fast[0]['overrides'][0]}` computes the same function with the same parameters as one matmul over "
          "flattened tubelets (`mone.models.vivit.TubeletEmbed`), as the image models' patch embedding already "
          "does; the sums run in another order, so it is opt-in and part of a run's config "
          "(tests/models/test_vivit.py). Timed in turns with the convolution, every arm with "
          f"`{base}`, on one core of an {m['cpu_model']} on {m['date'][:10]} (load average "
          f"{m['load_avg'][0]:.1f} at the start, matmul {mm['used']:.0f} GFLOP/s; `python -m mone.bench --training "
          f"--base {base} --pair {fast[0]['overrides'][0]}`, `results/bench/{TUBELET}`):\n\n" + "\n".join(lines)
          + f"\n\nBy kind (medians over the arms): {by_kind}.\n")


def headline_run_line(m: dict) -> str:
  """The image-run target read off a real run (the metrics file of `mone.train`): its wall time, from
  the process's start (rendering the data, compiling) to its last evaluation."""
  cfg, code = m["config"], m["code"]
  settings = f"model.weight_grad={cfg['model']['weight_grad']} eval_batch_size={cfg['eval_batch_size']}"
  ok = m["wall_time_s"] <= TARGET_IMAGE_RUN_S
  return (f"a full image run ({m['train_steps']:,} steps) under {TARGET_IMAGE_RUN_S // 60} minutes on one core, "
          f"trained: {'met' if ok else 'not met'} ({kinds.of_run(m).label} on {cfg['name']}, with "
          f"`{settings}`: {m['wall_time_s'] / 60:.1f} min, data, compilation and every evaluation included, on "
          f"{m['device']['cores_used']} pinned core of an {code['cpu_model']}, {code['allocator']}; test accuracy "
          f"{100 * m['accuracy']:.1f}%; `results/bench/{HEADLINE_RUN}`)")


def figure(doc: dict):
  """Each arm's training-step GFLOP/s, as the profile trains and with the pair's overrides, against
  the matmul rate (the dashed line): how much of the machine's arithmetic a step turns into training."""
  import matplotlib.pyplot as plt
  ref, fast = split(doc)
  y = np.arange(len(ref))
  fig, ax = plt.subplots(figsize=(9, 0.36 * len(ref) + 2.4))
  h = 0.4 if fast else 0.7
  ax.barh(y - (h / 2 if fast else 0), [r["gflop_per_s"] for r in ref], height=h, color="0.6",
          label="as the small profile trains")
  if fast:
    ax.barh(y + h / 2, [r["gflop_per_s"] for r in fast], height=h, color="tab:blue",
            label="with " + " ".join(fast[0]["overrides"]))
  rate = doc["matmul_gflop_per_s"]["used"]
  ax.axvline(rate, color="k", ls="--", lw=1, label=f"a float32 matmul: {rate:.0f} GFLOP/s")
  ax.set_yticks(y, [r["arm"] for r in ref], fontsize=11)
  ax.invert_yaxis()
  ax.set_xlabel("training step, GFLOP/s on one core (multiply-accumulates)", fontsize=12)
  ax.tick_params(axis="x", labelsize=11)
  ax.grid(alpha=0.3, axis="x")
  ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), fontsize=11, frameon=False)  # below: over no bar
  fig.tight_layout()
  return fig


FIGURE = "training_throughput.png"  # under the results folder, beside the book's other generated figures


def page(doc: dict | None, image: str | None, alloc: dict | None = None, versions: dict | None = None,
         attention: dict | None = None, run: dict | None = None, tubelet: dict | None = None,
         video: dict | None = None, images_avx2: dict | None = None) -> str:
  """The book's page on training throughput (Markdown), from a benchmark file (None: none committed);
  video, images_avx2: the comparisons of code versions run again elsewhere (`AGAIN`)."""
  again = [(d, *a) for d, a in zip((video, images_avx2), AGAIN) if d is not None]
  title = "# Training throughput on one CPU core\n\n"
  if doc is None:
    return title + f"No training-throughput file is committed (results/bench/{FILE}).\n"
  ref, fast = split(doc)
  intro = (
      "Every run of the small profile trains on one pinned CPU core, so how much training a core-hour buys "
      "decides how many seeds, and how many steps per run, the profile can afford. This page times the training "
      "step of each arm of the ten-seed plan in one process, the arms taking turns, beside a large float32 matmul: "
      "the step's rate is the FLOPs it trains per second, also as a share of the matmul rate, the fastest this "
      "core multiplies. Each arm's full run is estimated from measured parts beside the step: rendering its data, "
      "compiling, preparing batches, the learning curve's evaluations, the final evaluation at every point it "
      "reports, and checkpoints (`mone.bench.training`). Generated by `python -m mone.chapters throughput` from "
      f"`results/bench/{FILE}`.\n\n")
  body = "".join(f"- {line}\n" for line in header(doc))
  body += "\n**As the small profile trains.**\n\n" + "\n".join(table(ref)) + "\n"
  if fast:
    body += (f"\n**With the faster settings** `{' '.join(fast[0]['overrides'])}`, timed in turns with the arms "
             "above, and the speed-ups over them.\n\n" + "\n".join(table(fast, ref)) + "\n")
  if alloc is not None:
    body += (f"\n**With tcmalloc.** A process picks its malloc when it starts, so the allocators are timed in "
             f"{alloc['sittings']} sittings of two processes at once, one per core and allocator, the cores swapped "
             "between sittings (`python -m mone.bench --allocators`, "
             f"`results/bench/{ALLOCATORS}`). tcmalloc's step rate over glibc's, by kind (medians over the arms of "
             "the geometric means over the sittings); the last column is what the next profile's runs gain over "
             "the profile's:\n\n" + "\n".join(allocator_table(alloc)) + "\n")
  if versions is not None:
    body += versions_text(versions)
  if attention is not None:
    body += attention_text(attention)
  if tubelet is not None:
    body += tubelet_text(tubelet)
  for d, file, what, why, _ in again:
    body += versions_text(d, file, what, why)
  body += "\n" + outside_line(doc) + "\n\n## The targets\n\n"
  body += "".join(f"- {line}\n" for line in targets(doc, alloc))
  if versions is not None:
    body += (f"\nOn the {versions['machines'][1]['cpu_model']}, this code against the baseline's (the arms timed "
             "there):\n\n" + "".join(f"- {line}\n" for line in versions_targets(versions)))
  for d, *_, heading in again:
    body += f"\n{heading}\n\n" + "".join(f"- {line}\n" for line in versions_targets(d))
  if run is not None or attention is not None:
    extra = ([headline_run_line(run)] if run is not None else []) + (attention_targets(attention) if attention else [])
    body += "\nMeasured apart:\n\n" + "".join(f"- {line}\n" for line in extra)
  if image:
    body += f"\n![Each arm's training step against the matmul rate]({image})\n"
  return title + intro + body + "\n" + BOUNDS + (ALLOCATOR_NOTE if alloc is not None else "")


# What bounds the step: the mechanisms; the measured numbers are in the table above.
BOUNDS = """## What bounds the step

**The faster settings.** `model.weight_grad=direct` computes each projection's weight gradient as one dot
contracting the tokens (`mone.models.linear.linear`); the gradient JAX derives reaches XLA:CPU as a dot with both
operands transposed, which XLA:CPU runs on a slow path. The function is the same and only the last bits of the
sums differ (tests/models/test_weight_grad.py), so the setting changes a run's identity (its config hash) and is
left off in the profile the chapters read: its runs keep their numbers. `model.weight_grad=narrow_first` goes one
step further: XLA:CPU still has Eigen copy the first operand of that dot in a strided walk, so the narrower of the
two goes first and the small product is transposed; it rounds differently again, so it is opt-in (the calibration
trains with `direct`). `model.attention=xla_vjp` writes attention's backward out (`mone.models.layers.attention`):
autodiff's takes two products over the query axis of the [N, N] probabilities, which XLA:CPU also runs on a slow
path; computed through stored transposes they run at the speed of the forward's products, which matters where
heads are narrow (the video recipes' 16) and not at the images' 32. Its gradients round differently, so it is
opt-in too. `eval_batch_size=100` evaluates in batches
whose activations stay closer to the core; every evaluation split of the profile is a multiple of 100, so no
example is padded.

**What is left.** A dense step keeps most of its time in matmuls and in the elementwise work between them
(LayerNorm, GELU, softmax, residuals), which reads and writes activations larger than the core's cache. MoNE's
nested experts are narrow matmuls (an inner dimension of 16, 32 or 64 in the small profile) that run far below
the wide ones' rate per FLOP, and its routing, the gathers into expert order, the attention at full width and
the MLP's activation (GELU over the full hidden width 4D for every token, whatever its expert: the nested
experts slice only the MLP's in- and out-projections) cost time that does not shrink with e_c: that is why MoNE
trains fewer FLOPs per second than the dense model on every recipe.
"""


ALLOCATOR_NOTE = """
**The allocator.** XLA:CPU's kernels allocate and free small scratch buffers at every call of every operation,
and glibc's malloc took 7-9% of a MoNE step's time on this core (perf). tcmalloc serves them from per-thread
caches. The training commands preload it where it is installed (`mone.train.hostmem`; `MONE_MALLOC=glibc` keeps
glibc's), and every run file records which one trained it. The allocator decides where buffers live, not what is
computed: a run trained under each gives the same losses and parameters bit for bit (tests/train/test_hostmem.py).
"""


def page_at(out, name: str = FILE) -> str:
  """The page to be written at `out`, its figure drawn under results/ (`plots.save_png`) first."""
  doc, alloc, versions = throughput(name), throughput(ALLOCATORS), throughput(VERSIONS)
  attention, run = throughput(ATTENTION), throughput(HEADLINE_RUN)
  image = None
  if doc is not None:
    png = results.RESULTS / FIGURE
    plots.theme()
    plots.save_png(figure(doc), png, dpi=110)
    image = os.path.relpath(png.resolve(), Path(out).resolve().parent)
  return page(doc, image, alloc, versions, attention, run, throughput(TUBELET), throughput(VERSIONS_VIDEO),
              throughput(VERSIONS_IMAGES_AVX2))
