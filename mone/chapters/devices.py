"""Does the device a run trained on move its accuracy? Twins of committed runs, retrained elsewhere.

The small profile's paired comparisons cross devices: some arms trained on the 2-core CPU
(float32 matmuls in full float32), others on an H100 or H200 (JAX's default float32 matmul
precision there may use TF32). A *twin* is a committed run retrained with the same config and
seed on another device; its run file has the same name under `results/device_twins/<device>/runs/`.
Twins share the seed's initialisation and data order, so their difference holds what the device
changes: a systematic shift (a bias that would tilt every cross-device comparison) plus the
chaotic divergence that any change of numerics starts, which is noise of the same kind as a
seed's. The verdict weighs the mean twin difference against that noise: its 95% CI, and the
spread of twin differences beside the spread of the same arm across seeds.

    .venv/bin/python -m mone.chapters devices book/devices.md    # the book's page, from the run files
"""
import json
import os
from pathlib import Path

import numpy as np

from mone import results
from mone.evidence import stats
from mone.plotting import plots
from mone.runs import plan
from mone.configs.arms import Arm
from mone.models import kinds
from mone.configs import schema

TWINS = "device_twins"


def twins(root: Path | None = None) -> list[dict]:
  """Every twin pair under root/device_twins/<device>/runs/ whose original is in root/runs/: rows
  {run, label, kind, e_c, seed, original (device name), twin (device name), original_acc,
  twin_acc, diff (twin - original, points)}, test accuracy at the run's training e_c."""
  root = Path(root or results.results_root())
  rows = []
  for path in sorted((root / TWINS).glob("*/runs/*.json")):
    original = root / "runs" / path.name
    if not original.is_file():
      continue
    a, b = results.read_json(original), results.read_json(path)
    if a.get("config_hash") != b.get("config_hash"):
      raise ValueError(f"twin {path} has config hash {b.get('config_hash')}, its original {a.get('config_hash')}")
    rows.append({"run": path.stem, "kind": a["kind"], "e_c": a.get("e_c"), "seed": a["seed"],
                 "router": a["config"]["model"].get("router", "learned"),
                 "router_layer": a["config"]["model"].get("router_layer", 0),
                 "num_routers": a["config"]["model"].get("num_routers", 1),
                 "original": results.trained_where(a), "twin": results.trained_where(b),
                 "original_acc": 100 * a["accuracy"], "twin_acc": 100 * b["accuracy"],
                 "diff": 100 * (b["accuracy"] - a["accuracy"])})
  return rows


def same_arm_spread(rows: list[dict], root: Path | None = None) -> float | None:
  """The standard deviation of the differences between two seeds of one arm (test accuracy,
  points), over every pair of committed seeds of the twins' arms: what two runs of the same
  config differ by when their seed differs. None with fewer than two such differences."""
  return _spread(same_arm_differences(rows, root))


def _spread(diffs: list[float]) -> float | None:
  return float(np.std(diffs, ddof=1)) if len(diffs) >= 2 else None


def same_arm_differences(rows: list[dict], root: Path | None = None, seeds=None) -> list[float]:
  """Every difference between two committed seeds of one of the twins' arms (test accuracy,
  points; each pair once, the file first in name order minus the other, as `same_arm_spread` pools
  them: the sign carries no meaning, the spread does), between CPU runs only: a run trained on a
  GPU is read as its CPU twin where it has one, else left out, so that the spread between seeds
  holds no device difference of its own. seeds: only runs of these seeds (None: all), so that the page
  reads the seeds the chapters read (`plan.seeds`), not runs of a plan still training."""
  root = Path(root or results.results_root())
  arms = {_arm(results.read_json(root / "runs" / f"{r['run']}.json")) for r in rows}
  by_arm: dict[str, list[float]] = {}
  for path in sorted((root / "runs").glob("*.json")):
    cpu_twin = root / TWINS / "cpu" / "runs" / path.name
    m = results.read_json(cpu_twin if cpu_twin.is_file() else path)
    if "config" in m and not plan.gpu_trained(m) and (seeds is None or m["seed"] in seeds) and (key := _arm(m)) in arms:
      by_arm.setdefault(key, []).append(100 * m["accuracy"])
  return [a - b for accs in by_arm.values() for i, a in enumerate(accs) for b in accs[i + 1:]]


# Config fields that name where and how often a run reports, not what it computes.
_NOT_THE_ARM = ("seed", "data_dir", "log_every", "eval_every", "checkpoint_every", "keep_checkpoints")


def _arm(m: dict) -> str:
  """A run file's arm: its config without the seed (and without what does not change a result),
  read as its hash reads it: a field added after some runs trained, still at its default, is left
  out, so that runs written before and after it (seeds 0-2 and the seed plan's 3-4) are one arm."""
  config = results.jsonable(schema.from_json(m["config"]), for_hash=True)
  return json.dumps({k: v for k, v in config.items() if k not in _NOT_THE_ARM}, sort_keys=True)


def summary(rows: list[dict], spread: float | None) -> dict:
  """The mean twin difference with its t-based 95% CI, the twins' spread, and a verdict: a
  'device effect' where the CI excludes 0, else 'no device effect detected' with the largest
  systematic shift the twins allow (the CI's end farthest from 0)."""
  d = [r["diff"] for r in rows]
  if len(d) < 2:
    return {"n": len(d), "verdict": "too few twins (at least 2)"}
  mean, lo, hi = stats.paired_ci(d)
  out = {"n": len(d), "mean": mean, "ci95": [lo, hi], "twin_sd": float(np.std(d, ddof=1)),
         "same_arm_seed_sd": spread}
  out["verdict"] = ("device effect" if lo > 0 or hi < 0 else
                    f"no device effect detected: a systematic shift larger than {max(abs(lo), abs(hi)):.1f} points is ruled out")
  out["median"] = float(np.median(d))
  out["signs"] = [sum(x > 0 for x in d), sum(x < 0 for x in d)]
  if len(d) >= 3:  # one twin can carry the mean: the same without the largest difference
    rest = sorted(d, key=abs)[:-1]
    m, l, h = stats.paired_ci(rest)
    out["without_largest"] = {"dropped": max(d, key=abs), "n": len(rest), "mean": m, "ci95": [l, h],
                              "twin_sd": float(np.std(rest, ddof=1)), "median": float(np.median(rest)),
                              "signs": [sum(x > 0 for x in rest), sum(x < 0 for x in rest)]}
  return out


FIGURE = "devices.png"  # under the results folder, beside the book's other generated figures


def figure(rows: list[dict], seed_diffs: list[float], s: dict, path) -> None:
  """The page's picture of its verdict: each twin's difference (same seed, other device) beside
  every difference between two seeds of the same arms, on one axis, with the twins' mean and its
  95% CI (`summary` of at least two twins). A device effect would shift the twins' dots as a group; noise of a seed's kind spreads
  them as widely as the seeds'. matplotlib is imported here only."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  plots.theme()
  fig, ax = plt.subplots(figsize=(7.0, 2.6))
  groups = [("two seeds of one arm\n(committed runs)", seed_diffs, "0.55"),
            ("twin minus original\n(same seed, other device)", [r["diff"] for r in rows], "#0173b2")]
  jitter = np.random.default_rng(0)  # fixed: the figure changes only with its data
  for y, (_, values, color) in enumerate(groups):
    ax.scatter(values, y + jitter.uniform(-0.15, 0.15, len(values)), s=18, color=color, alpha=0.75, lw=0)
  ax.errorbar([s["mean"]], [1.35], xerr=[[s["mean"] - s["ci95"][0]], [s["ci95"][1] - s["mean"]]], fmt="o",
              color="#0173b2", capsize=4, ms=5)
  ax.annotate(f"mean {s['mean']:+.2f}, 95% CI [{s['ci95'][0]:+.2f}, {s['ci95'][1]:+.2f}]", (s["ci95"][1], 1.35),
              xytext=(6, -3), textcoords="offset points", fontsize=8)
  ax.axvline(0, color="0.3", lw=0.8)
  ax.set_yticks(range(len(groups)), [g[0] for g in groups], fontsize=8)
  ax.set_ylim(-0.5, 1.7)
  ax.set(xlabel="difference in test accuracy (points)", title="Does the device move a run more than its seed does?")
  fig.tight_layout()
  plots.save_png(fig, path, dpi=110)


def device_matrix(landed: list[tuple[str, int, dict]]) -> str:
  """A Markdown table of where every multi-seed arm trained, one row per arm and one column per
  seed (`headlines.landed`'s (label, seed, metrics)): a claim's paired difference at a seed crosses
  devices where its two arms' cells differ there. A run resumed on another machine shows every
  device it trained on (`trained_on`), first to last."""
  seeds, cells = sorted({s for _, s, _ in landed}), {}
  for label, seed, m in landed:
    cells.setdefault(label, {})[seed] = results.trained_where(m)
  arms = [a for a in cells if len(cells[a]) > 1]
  if not arms:
    return "No arm has been trained at more than one seed.\n"
  short = lambda d: d.replace("NVIDIA ", "").replace(" 80GB HBM3", "").replace("cpu, 1 of 2 cores", "CPU (1 core)").replace("cpu, 2 cores", "CPU (2 cores)")
  out = ["| arm | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|" + "---|" * len(seeds)]
  out += [f"| {a} | " + " | ".join(short(cells[a].get(s, "")) for s in seeds) + " |" for a in arms]
  return "\n".join(out) + "\n"


def markdown(rows: list[dict], s: dict, matrix: str = "", plan_note: str = "", image: str = "") -> str:
  """The book's page on the device effect: the twins, their verdict (with `figure`'s picture at
  `image`, a path relative to the page, where given), where every arm trained (`device_matrix`)
  and where the seed plan stands (`plan.progress_note`)."""
  out = ["# Does the device change a run's accuracy?", "",
         "Generated by `python -m mone.chapters devices book/devices.md` from the run files: each row is a committed "
         "run and its twin, the same config and seed retrained on another device "
         "(`results/device_twins/<device>/runs/`, `mone.chapters.devices`). Test accuracy at the run's "
         "training capacity; the difference is twin minus original, in points.", ""]
  where = ["## Where every arm trained", "",
           "A claim compares two arms at each seed; its paired difference crosses devices where the arms' cells differ "
           "in that seed's column.", "", matrix] if matrix else []
  where += ["## Where the seed plan stands", "", plan_note, ""] if plan_note else []
  if not rows:
    return "\n".join(out + ["No twin has been trained yet.", ""] + where)
  out += ["| model | seed | original: device | accuracy | twin: device | accuracy | difference |",
          "|---|---|---|---|---|---|---|"]
  for r in rows:
    # the arm as the plan labels it (`mone.configs.arms.Arm`): a router before block 0 and one router are the default
    arm = Arm("image", r["kind"]) if not kinds.of_run(r).routed else Arm(
        "image", r["kind"], r["e_c"], router=r["router"], router_layer=r.get("router_layer") or None,
        num_routers=None if r.get("num_routers", 1) == 1 else r["num_routers"])
    model = arm.model
    out.append(f"| {model} | {r['seed']} | {r['original']} | {r['original_acc']:.2f} | {r['twin']} | "
               f"{r['twin_acc']:.2f} | {r['diff']:+.2f} |")
  out.append("")
  if "mean" in s:
    spread = (f"; two seeds of the same arm differ with a standard deviation of {s['same_arm_seed_sd']:.2f} points "
              "(every pair of seeds of these arms, CPU runs only: a GPU run read as its CPU twin)" if s.get("same_arm_seed_sd") else "")
    out += [f"**{s['verdict'][0].upper()}{s['verdict'][1:]}.** Over {s['n']} twins the mean difference is "
            f"{s['mean']:+.2f} points, 95% CI [{s['ci95'][0]:+.2f}, {s['ci95'][1]:+.2f}] (median {s['median']:+.2f}; "
            f"{s['signs'][0]} twins above their original, {s['signs'][1]} below); the twins differ with a standard "
            f"deviation of {s['twin_sd']:.2f} points{spread}.", ""]
    if (w := s.get("without_largest")) is not None:
      lo, hi = w["ci95"]
      out += [f"**Without the largest difference** ({w['dropped']:+.2f} points): over {w['n']} twins the mean is "
              f"{w['mean']:+.2f} points, 95% CI [{lo:+.2f}, {hi:+.2f}] (median {w['median']:+.2f}; {w['signs'][0]} above, "
              f"{w['signs'][1]} below), standard deviation {w['twin_sd']:.2f}. "
              + (f"A systematic shift larger than {max(abs(lo), abs(hi)):.1f} points is ruled out either way; a smaller "
                 "one is not, and a comparison between devices could carry it. So every comparison the chapters make is "
                 "between runs of one device." if lo <= 0 <= hi else
                 "Without it the interval excludes 0: a systematic shift between the devices is likely. So every "
                 "comparison the chapters make is between runs of one device."), ""]
    if image:
      out += [f"![Each twin's difference beside every difference between two seeds of the same arms]({image})", ""]
  else:
    out += [f"{s['verdict']}.", ""]
  return "\n".join(out + where)


def write_page(out, root=None, landed=None, seeds=None, plan_note: str = "") -> None:
  """Writes the page (`markdown`) to `out`, leaving the file untouched where it would not change,
  with `figure`'s picture under the results folder where at least two twins give a mean. root: the
  results folder of the twins (default: the repository's, or $MONE_RESULTS_DIR); landed: the
  planned runs (`headlines.landed`) for `device_matrix`, None for no matrix; seeds: only runs of
  these seeds count in the spread between seeds (`same_arm_differences`; None: all); plan_note:
  where the seed plan stands (`plan.progress_note`)."""
  rows = twins(root)
  matrix = device_matrix(landed) if landed is not None else ""
  seed_diffs = same_arm_differences(rows, root, seeds) if rows else []
  s = summary(rows, _spread(seed_diffs))
  path, image = Path(out), ""
  if "mean" in s:  # the picture beside the page's verdict, under the results folder it was read from
    png = Path(root or results.results_root()) / FIGURE
    figure(rows, seed_diffs, s, png)
    image = os.path.relpath(png.resolve(), path.resolve().parent)
  text = markdown(rows, s, matrix, plan_note, image)
  if not path.exists() or path.read_text() != text:
    results.atomic_write_text(path, text)
