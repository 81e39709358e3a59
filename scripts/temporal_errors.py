"""Where trained temporal-task models err (`analysis.temporal_errors`), on the validation clips:
which side moved first, each digit's direction, and direction errors by digit class, for every
nested width of a MatViViT run (or the one model of another run). Calibration of the temporal
task reads it: errors that every width makes point at the task, errors only the narrow
widths make at capacity. Writes results/calibration/<run>-errors.json.

  MONE_CACHE_DIR=$HOME/mone-cache .venv/bin/python scripts/temporal_errors.py "temporal: MatViViT, seed 0"

Labels are `mone.runs.plan`'s. The run's checkpoint is read from the cache (a run without one
is retrained first: `experiments.trained_params`).
"""
import argparse

from mone import results
from mone.chapters import analysis
from mone.runs import experiments, plan
from mone.data import sources
from mone.train import evaluation, steps


def errors(label: str) -> dict:
  runs = dict(plan.runs())
  if label not in runs:
    raise SystemExit(f"unknown run {label!r}; the temporal runs are {[l for l in runs if l.startswith('temporal')]}")
  cfg = runs[label]
  if cfg.dataset != "moving_digits" or cfg.video_task != "temporal":
    raise SystemExit(f"{label!r} is not a temporal-task run")
  params, model = experiments.trained_params(cfg), steps.build_model(cfg)
  val = sources.validation_source(cfg)  # its clips carry the digits' classes: val.arrays["digit"]
  rows = []
  for e_c, width in evaluation.eval_points(cfg):
    pred = evaluation.predict(cfg, model, params, val, e_c=e_c, width_index=width)
    rows.append({"e_c": e_c, "width_index": width, **analysis.temporal_errors(pred, val.arrays["label"], val.arrays["digit"])})
  return {"run": experiments.run_path(cfg).stem, "label": label, "split": "val", "num_clips": cfg.num_val, "rows": rows}


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("labels", nargs="+", help="plan labels of temporal-task runs")
  args = ap.parse_args()
  for label in args.labels:
    out = errors(label)
    path = results.results_root() / "calibration" / f"{out['run']}-errors.json"
    results.atomic_write_json(path, out)
    print(f"{label} ({out['run']}), {out['num_clips']} validation clips; direction errors by digit class 0-9 (%):")
    for r in out["rows"]:
      by_digit = " ".join(f"{x:4.1f}" for x in r["direction_error_pct_by_digit"])
      print(f"  width {r['width_index']} e_c {r['e_c']}: error {r['error_pct']:.1f}%, order {r['order_error_pct']:.1f}, "
            f"first direction {r['first_direction_error_pct']:.1f}, second {r['second_direction_error_pct']:.1f} | {by_digit}")
    print(f"wrote {path}")


if __name__ == "__main__":
  main()
