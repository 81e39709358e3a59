"""Is a run trained to a plateau, without memorising? Read from its learning curve.

A run with `eval_every` records `curve` points (`mone.train.loop.Curve`). The small profile is
calibrated so that the dense ViT meets both criteria of issue 24 on the validation split:
it gains at most PLATEAU_GAIN over its last quarter of steps (it has stopped improving), and
its accuracy on training images is at most MEMORISATION_GAP above its validation accuracy
(it generalises rather than memorises).
"""
PLATEAU_GAIN = 0.015       # validation accuracy gained over the last quarter of steps
MEMORISATION_GAP = 0.10    # final training accuracy minus final validation accuracy


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
          "plateau": gain <= PLATEAU_GAIN, "not_memorised": gap <= MEMORISATION_GAP}


def table(runs: list[dict]) -> str:
  """A Markdown table of calibration runs (finished run files with a validation curve): what
  each candidate changed, its validation curve, test accuracy and both criteria."""
  head = ("| run | steps | lr | weight decay | training images | validation accuracy by step (%) | test (%) "
          "| last-quarter gain | train - val | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n")
  rows = []
  for m in runs:
    c, cfg = check(m), m["config"]
    curve = " / ".join(f"{p['step']}: {100 * p['val_accuracy']:.1f}" for p in m["curve"] if p["step"] % 1000 == 0)
    verdict = ("meets both" if c["plateau"] and c["not_memorised"] else
               " and ".join(w for w, ok in (("not a plateau", c["plateau"]), ("memorises", c["not_memorised"])) if not ok))
    rows.append(f"| {m['config_hash']} | {c['steps']} | {cfg['lr']:g} | {cfg['weight_decay']:g} | {cfg['num_train']:,} | {curve} "
                f"| {100 * m['accuracy']:.1f} | {100 * c['last_quarter_gain']:+.2f} | {100 * c['train_val_gap']:.2f} | {verdict} |")
  return head + "\n".join(rows) + "\n"


def main(argv=None):
  """Prints `table` for the committed calibration runs of a config (default digits64's dense ViT)."""
  import argparse
  import json

  from mone import results
  ap = argparse.ArgumentParser(description="The calibration table of a profile's dense runs (results/runs/).")
  ap.add_argument("--name", default="digits64", help="config name of the runs (default: digits64)")
  ap.add_argument("--kind", default="vit", help="model kind (default: vit)")
  args = ap.parse_args(argv)
  paths = sorted((results.results_root() / "runs").glob(f"{args.name}-{args.kind}-*.json"))
  runs = [m for m in (json.loads(p.read_text()) for p in paths) if m.get("curve") and m["curve"][-1].get("val_accuracy") is not None]
  if not runs:
    raise SystemExit(f"no finished {args.name} ({args.kind}) run with a validation curve under {results.results_root() / 'runs'}")
  print(table(sorted(runs, key=lambda m: (m["train_steps"], m["config"]["num_train"], m["config"]["weight_decay"]))))


if __name__ == "__main__":
  main()
