"""Is a run trained to a plateau, without memorising? Read from its learning curve.

A run with `eval_every` records `curve` points (`mone.train.loop.Curve`). The small profile is
calibrated so that the dense ViT meets both criteria on the validation split:
it gains at most PLATEAU_GAIN over its last quarter of steps (it has stopped improving), and
its accuracy on training images is at most MEMORISATION_GAP above its validation accuracy
(it generalises rather than memorises).

A task discriminates between widths when the quarter-width sub-model of a MatViT (MatViViT)
run scores at least SUBMODEL_GAP below the dense model on the validation split
(`discrimination`): if every width scores alike, the task cannot show what routing tokens to
narrow experts costs or saves. Validation, because choosing the task is calibration: the test
split reports the chapters' results and must not choose what they are measured on.

`python -m mone.chapters calibration` prints the calibration tables of a config's committed runs.
"""
import json

from mone import results
from mone.plotting import plots
from mone.chapters import analysis
from mone.configs import recipes, schema
from mone.models import kinds

PLATEAU_GAIN = 0.015       # validation accuracy gained over the last quarter of steps
MEMORISATION_GAP = 0.10    # final training accuracy minus final validation accuracy
SUBMODEL_GAP = 0.05        # dense validation accuracy minus the D/4 sub-model's, for a task that discriminates
# Accuracies are counts over a few thousand examples, so a difference that meets a threshold
# exactly (0.721 - 0.706: 30 of 2,000 clips, 1.5 points) can land an ulp beyond it in floats.
ROUNDING = 1e-9


def check(metrics: dict) -> dict:
  """The two criteria for a finished run with a validation curve: last_quarter_gain (final
  validation accuracy minus that at the last point at or before 3/4 of the steps),
  train_val_gap (final training minus validation accuracy), and whether each holds."""
  curve = metrics.get("curve")
  if not curve or curve[-1].get("val_accuracy") is None:
    raise ValueError(f"run {metrics.get('name')!r} ({metrics.get('kind')}) has no validation curve; "
                     "train it with eval_every > 0 and num_val > 0")
  total = metrics["train_steps"]
  if curve[-1]["step"] != total:
    raise ValueError(f"the curve ends at step {curve[-1]['step']}, before the run's {total} steps")
  quarter = [p for p in curve if p["step"] <= 0.75 * total]
  if not quarter:
    raise ValueError(f"the curve has no point in the first three quarters of {total} steps")
  last = curve[-1]
  gain = last["val_accuracy"] - quarter[-1]["val_accuracy"]
  gap = last["train_accuracy"] - last["val_accuracy"]
  return {"steps": total, "lr": metrics["config"]["lr"], "val_accuracy": last["val_accuracy"],
          "train_accuracy": last["train_accuracy"], "from_step": quarter[-1]["step"],
          "last_quarter_gain": gain, "train_val_gap": gap,
          "plateau": gain <= PLATEAU_GAIN + ROUNDING, "not_memorised": gap <= MEMORISATION_GAP + ROUNDING}


def run_name(m: dict) -> str:
  """A run file's stem, '<name>-<kind>-<config hash>': what validation records are keyed by."""
  return f"{m['name']}-{m['kind']}-{m['config_hash']}"


def validation_records(root=None) -> dict:
  """The validation records by width of MatViT runs from before `val_evals`
  (results/calibration/<run>-errors.json, written by `scripts/temporal_errors.py`), keyed by run
  (`run_name`); root: the results folder (default `results.results_root()`)."""
  root = results.results_root() if root is None else root
  return {r["run"]: r for r in (json.loads(p.read_text()) for p in sorted((root / "calibration").glob("*-errors.json")))}


def discrimination(dense: dict, matvit: dict, val: dict | None = None, width_index: int = 1) -> dict:
  """Whether a task discriminates between widths, on the validation split: the dense run's final
  validation accuracy (its curve's last point) against the MatViT run's sub-model `width_index`
  (1: D/4 of four nested widths) on the same clips. Those come from the run's `val_evals`, or for
  a run file from before them, from `val`: its validation record by width
  (`scripts/temporal_errors.py` writes it: results/calibration/<run>-errors.json). The test
  accuracies and their gap are returned beside them, for reference only."""
  if not (kinds.is_dense(kinds.of_run(dense)) and isinstance(kinds.of_run(matvit), kinds.MatViT)):
    raise ValueError(f"discrimination compares a dense (vit) run with a matvit run; got kinds "
                     f"{dense.get('kind')!r} and {matvit.get('kind')!r}")
  if dense["name"] != matvit["name"]:
    raise ValueError(f"the runs are of different tasks: {dense['name']!r} and {matvit['name']!r}")
  run = run_name(matvit)
  if "val_evals" in matvit:
    by_width = {e["width_index"]: e["accuracy"] for e in matvit["val_evals"]}
  elif val is None:
    raise ValueError(f"run {run!r} has no val_evals (it predates them): pass val, its validation record "
                     "(scripts/temporal_errors.py)")
  elif val.get("run") != run or val.get("split") != "val":
    raise ValueError(f"val must be the validation record of run {run!r} (scripts/temporal_errors.py), "
                     f"got run {val.get('run')!r} on split {val.get('split')!r}")
  else:
    by_width = {r["width_index"]: 1 - r["error_pct"] / 100 for r in val["rows"]}
  curve = dense.get("curve") or [{}]
  if curve[-1].get("step") != dense["train_steps"] or curve[-1].get("val_accuracy") is None:
    raise ValueError(f"the dense run {dense.get('config_hash')!r} has no validation point at its last step "
                     f"{dense['train_steps']}")
  sub = [e for e in matvit["evals"] if e.get("width_index") == width_index]
  if not sub or width_index not in by_width:
    widths = sorted(e.get("width_index") for e in matvit["evals"])
    raise ValueError(f"width_index must be one of the MatViT run's evaluated widths {widths}, got {width_index}")
  dense_val, sub_model = curve[-1]["val_accuracy"], by_width[width_index]
  gap = dense_val - sub_model
  return {"dense": dense_val, "sub_model": sub_model, "width_index": width_index,
          "by_width": [by_width[j] for j in sorted(by_width)], "gap": gap,
          "discriminates": gap >= SUBMODEL_GAP - ROUNDING,
          "test": {"dense": dense["accuracy"], "sub_model": sub[0]["accuracy"], "gap": dense["accuracy"] - sub[0]["accuracy"]}}


def table(runs: list[dict]) -> str:
  """A Markdown table of calibration runs (finished run files with a validation curve): what
  each candidate changed, its validation curve, test accuracy and both criteria."""
  video = any(is_video(m["config"]) for m in runs)  # clips, and their pixel noise
  head = (f"| seed | steps | lr | weight decay | training {'clips | noise' if video else 'images'} "
          "| validation accuracy by step (%) | test (%) | last-quarter gain | train - val | verdict |\n"
          f"|---|---|---|---|---|{'---|' if video else ''}---|---|---|---|---|\n")
  rows = []
  for m in runs:
    c, cfg = check(m), m["config"]
    curve = " / ".join(f"{p['step']}: {100 * p['val_accuracy']:.1f}" for p in m["curve"] if p["step"] % 1000 == 0)
    verdict = ("meets both" if c["plateau"] and c["not_memorised"] else
               " and ".join(w for w, ok in (("not a plateau", c["plateau"]), ("memorises", c["not_memorised"])) if not ok))
    noise = f" | {cfg.get('video_noise', 0.0):g}" if video else ""
    rows.append(f"| {cfg['seed']} | {c['steps']} | {cfg['lr']:g} | {cfg['weight_decay']:g} | {cfg['num_train']:,}{noise} | {curve} "
                f"| {100 * m['accuracy']:.1f} | {100 * c['last_quarter_gain']:+.2f} | {100 * c['train_val_gap']:.2f} | {verdict} |")
  return head + "\n".join(rows) + "\n"


def label(m: dict) -> str:
  """What a calibration run changed, for legends: '8000 steps, 100k images, wd 0.0001' (videos:
  clips, and the pixel noise where there is any)."""
  cfg = m["config"]
  noise = cfg.get("video_noise", 0.0)  # run files from before the field have none: noise 0
  return (f"{m['train_steps']} steps, {cfg['num_train'] // 1000}k {'clips' if is_video(cfg) else 'images'}, "
          f"wd {cfg['weight_decay']:g}" + (f", noise {noise:g}" if noise else ""))


def is_video(cfg: dict) -> bool:
  """Whether a run file's config trains on clips (the calibration tables then count clips and noise)."""
  return cfg.get("dataset") in schema.VIDEO_DATASETS


# Config fields a dense run and a MatViT run of one setup may differ in: the model kind, MoNE's
# capacities (unused by both) and how a run reports (unhashed).
_NOT_SETUP = ("kind", "e_c", "eval_e_c", "log_every", "eval_every", "checkpoint_every", "keep_checkpoints", "data_dir")


def pairs(runs: list[dict]) -> list[tuple[dict, dict]]:
  """(dense, matvit) run pairs of the same setup (data, noise, schedule, seed, model size)."""
  setup = lambda m: {"video_noise": 0.0, **{k: v for k, v in m["config"].items() if k not in _NOT_SETUP}}
  dense = [m for m in runs if kinds.is_dense(kinds.of_run(m))]
  return [(d, m) for d in dense for m in runs if isinstance(kinds.of_run(m), kinds.MatViT) and setup(m) == setup(d)]


def discrimination_table(runs: list[dict], records: dict) -> str:
  """A Markdown table of every (dense, MatViT) pair among runs (`pairs`): validation accuracy of
  the dense run and of each nested width, the D/4 sub-model's gap and the verdict
  (`discrimination`), with the test gap beside it. records: validation records by run
  (results/calibration/<run>-errors.json, keyed by their 'run') for MatViT runs from before
  `val_evals`; a pair with neither says so."""
  head = ("| setup | dense: validation (run) | MatViT validation: D/8 / D/4 / D/2 / D (run) "
          "| D/4 below dense: validation (test) | verdict |\n|---|---|---|---|---|\n")
  rows, gaps = [], {}  # gaps: the validation results of each setup's seeds, for their mean
  for dense, matvit in pairs(runs):
    setup = f"| {label(dense)}, seed {dense['config']['seed']} "
    run = run_name(matvit)
    if run not in records and "val_evals" not in matvit:
      rows.append(f"{setup}| ({dense['config_hash']}) | ({matvit['config_hash']}) | - "
                  f"| no validation record: scripts/temporal_errors.py |")
      continue
    d = discrimination(dense, matvit, records.get(run))
    widths = " / ".join(f"{100 * a:.1f}" for a in d["by_width"])
    rows.append(f"{setup}| {100 * d['dense']:.1f} ({dense['config_hash']}) | {widths} ({matvit['config_hash']}) "
                f"| {100 * d['gap']:.1f} ({100 * d['test']['gap']:.1f}) points "
                f"| {'discriminates' if d['discriminates'] else 'does not discriminate'} |")
    gaps.setdefault(label(dense), []).append(d)
  for name, ds in gaps.items():  # a task is judged by its mean over seeds, where it has several
    if len(ds) > 1:
      m = mean_discrimination(ds)
      rows.append(f"| {name}, mean of {len(ds)} seeds | {100 * m['dense']:.1f} | "
                  f"{' / '.join(f'{100 * a:.1f}' for a in m['by_width'])} | {100 * m['gap']:.1f} ({100 * m['test_gap']:.1f}) points "
                  f"| {'discriminates' if m['discriminates'] else 'does not discriminate'} |")
  return head + "\n".join(rows) + "\n"


def mean_discrimination(ds: list[dict]) -> dict:
  """The mean over seeds of `discrimination` results of one setup (one per seed): a task is
  judged by its mean validation gap, since one seed's, on 1,000 clips, is a few points noisy."""
  if not ds:
    raise ValueError("mean_discrimination needs at least one discrimination result")
  mean = lambda f: sum(f(d) for d in ds) / len(ds)
  gap = mean(lambda d: d["gap"])
  return {"seeds": len(ds), "dense": mean(lambda d: d["dense"]), "gap": gap, "test_gap": mean(lambda d: d["test"]["gap"]),
          "by_width": [mean(lambda d: d["by_width"][j]) for j in range(len(ds[0]["by_width"]))],
          "discriminates": gap >= SUBMODEL_GAP - ROUNDING}


def seed_discrimination(runs: list[tuple[str, int, dict]], dense: str = "temporal: ViViT",
                        nested: str = "temporal: MatViViT") -> dict[int, dict]:
  """`discrimination` per seed from a chapter's landed runs ((label, seed, metrics), as
  `headlines.landed`): the `dense` run against the `nested` one of the same seed, for every seed
  that trained both and has their validation accuracies (a MatViT run's by width in its run file,
  or for an older one in its validation record)."""
  records = validation_records()
  d = {s: m for base, s, m in runs if base == dense}
  n = {s: m for base, s, m in runs if base == nested}
  has_val = lambda m: bool(m.get("curve")) and m["curve"][-1].get("val_accuracy") is not None
  return {s: discrimination(d[s], n[s], records.get(run_name(n[s]))) for s in sorted(set(d) & set(n))
          if has_val(d[s]) and ("val_evals" in n[s] or run_name(n[s]) in records)}


def caveats(mean: dict | None, what: str) -> list[str]:
  """The caveat (`claims.write_caveats`) of a chapter whose claims rest on a task that falls short of
  the discrimination bar, from `mean_discrimination`'s result (None: unmeasured, no caveat); `what`
  names those claims and ends the sentence."""
  if not mean or mean["discriminates"]:
    return []
  seeds = mean["seeds"]
  return [f"The temporal task does not discriminate between widths: MatViViT's quarter-width sub-model scores "
          f"{100 * mean['gap']:.1f} points below the dense ViViT on the validation clips (mean of {seeds} "
          f"seed{'s' * (seeds != 1)}; the bar is {100 * SUBMODEL_GAP:.0f}), so {what}."]


# The temporal task's pixel noise (`recipes.moving_temporal`'s video_noise) was chosen among the
# levels of these (dense ViViT, MatViViT) run pairs, trained for the choice at seed 0, 3,000 steps:
# noise 0 and 0.15. It was chosen by the quarter-width sub-model's gap on the *test* clips, which
# report the chapters' results and should not choose the task; `noise_choice` makes it again on
# the validation clips.
NOISE_CANDIDATES = (("a8e8065f8cc9", "0148de7919ea"), ("8df62ac99789", "2df1aedcb0a3"))


def noise_choice(root=None) -> dict:
  """The temporal task's noise level chosen on the validation clips, from the candidates'
  run files (`NOISE_CANDIDATES`): the level whose quarter-width sub-model falls furthest below
  the dense ViViT (`discrimination`: the task that best separates widths, the aim of adding
  noise), with every level's validation and test gaps, and whether it is the level the
  recipe trains (`recipes.moving_temporal`). If it is not, the temporal runs would need
  retraining."""
  root = results.results_root() if root is None else root
  records, levels = validation_records(root), []
  for dense_hash, matvit_hash in NOISE_CANDIDATES:
    dense = results.read_json(root / "runs" / f"moving_temporal-vit-{dense_hash}.json")
    matvit = results.read_json(root / "runs" / f"moving_temporal-matvit-{matvit_hash}.json")
    d = discrimination(dense, matvit, records.get(run_name(matvit)))
    levels.append({"noise": dense["config"].get("video_noise", 0.0), "val_gap": d["gap"], "test_gap": d["test"]["gap"]})
  chosen = max(levels, key=lambda l: l["val_gap"])
  on_test = max(levels, key=lambda l: l["test_gap"])
  return {"levels": levels, "chosen_on_validation": chosen["noise"], "chosen_on_test": on_test["noise"],
          "trained": recipes.moving_temporal().video_noise,
          "meets_bar": chosen["val_gap"] >= SUBMODEL_GAP - ROUNDING}


def noise_caveat(choice: dict) -> list[str]:
  """The chapter's sentence on how the temporal task's noise was chosen (`noise_choice`)."""
  gaps = ", ".join(f"noise {l['noise']:g}: {100 * l['val_gap']:.1f} points on validation ({100 * l['test_gap']:.1f} on test)"
                   for l in choice["levels"])
  same = choice["chosen_on_validation"] == choice["trained"]
  return [f"The temporal task's pixel noise ({choice['trained']:g}) was first chosen on the test clips, which report "
          f"these verdicts. Chosen again on the validation clips, by how far MatViViT's quarter-width sub-model falls below "
          f"the dense ViViT (seed 0, 3,000 steps; {gaps}), the choice is "
          + ("the same, so no run was retrained" if same else
             f"noise {choice['chosen_on_validation']:g}, not the {choice['trained']:g} the runs trained with: the temporal "
             f"verdicts rest on a task chosen on the test clips")
          + (", although no level reaches the 5-point bar." if not choice["meets_bar"] else ".")]


def standing(runs: list[tuple[str, int, dict]]) -> list[dict]:
  """Where each run of a chapter stands, one row per (label, seed, metrics) of
  `headlines.landed`: its device, test accuracy (a MatViT run's full width, as its curve), and,
  where it has a validation curve, its final validation accuracy, what it gained over its last
  quarter of steps and how far its training accuracy is above validation (`check`), in points."""
  rows = []
  for label, seed, m in runs:
    has_val = bool(m.get("curve")) and m["curve"][-1].get("val_accuracy") is not None
    c = check(m) if has_val else {}
    rows.append({"run": label, "seed": seed, "device": m["device"]["kind"], "test_pct": analysis.points(m)[-1]["accuracy_pct"],
                 "val_pct": 100 * c["val_accuracy"] if c else None,
                 "last_quarter_gain": 100 * c["last_quarter_gain"] if c else None,
                 "train_minus_val": 100 * c["train_val_gap"] if c else None})
  return rows


def figure(runs: list[dict], title: str = ""):
  """The learning curves of calibration runs (`plots.learning_curves_figure`). Runs of one setup
  (`label`) and model, at several seeds: one curve and colour per seed, named 'seed 0', 'seed 1', ...
  under the setup they share; in shades of their model's colour (`plots.seed_color`) while the seeds
  are 0-4, each in a colour of its own (`plots.SEED_PALETTE`) beyond (ten shades of one colour, the
  dense ViT's black, do not tell apart). Runs of several setups: one colour per setup from the
  theme's cycle, a setup's seeds all in its colour and named once ('8000 steps, 100k images, wd
  0.0001 (10 seeds)': a bundle of curves, not ten colours no reader tells apart), the model
  prefixed where the runs are of several."""
  kinds = {m["kind"] for m in runs}
  setup = lambda m: label(m) if len(kinds) == 1 else f"{plots.KIND_NAMES.get(m['kind'], m['kind'])}: {label(m)}"
  setups = {}
  for m in runs:
    setups.setdefault(setup(m), []).append(m)
  if len(runs) > 1 and len(setups) == 1:  # one setup by seed
    (name, ms), = setups.items()
    ms = sorted(ms, key=lambda m: m["config"]["seed"])  # the legend in seed order
    seeds = [m["config"]["seed"] for m in ms]
    shaded = max(seeds) < len(plots.SEED_SHADES)
    colors = {f"seed {s}": plots.seed_color(ms[0]["kind"], s) if shaded else plots.SEED_PALETTE[s % len(plots.SEED_PALETTE)]
              for s in seeds}
    return plots.learning_curves_figure({f"seed {s}": m for s, m in zip(seeds, ms)}, title, colors, legend_title=name)
  names = {}
  for name, ms in setups.items():
    key = name if len(ms) == 1 else f"{name} ({len(ms)} seeds)"
    names[key] = ms if len(ms) > 1 else ms[0]
  return plots.learning_curves_figure(names, title)
