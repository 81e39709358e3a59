"""Adopts a finished run under the config a profile asks for, when the two differ only in what
does not change the computation: the config's `name` (a label), and `num_devices` 0 ("all local
devices") against 1 on a run whose machine had one device. A calibration run started by hand
(`scripts/train_run.py` uses the recipe's num_devices=0) thus becomes the profile's run without
retraining; the run file keeps where it came from in `adopted_from`.

  .venv/bin/python scripts/adopt_run.py results/runs/OLD.json moving_temporal kind=matvit num_devices=1
  .venv/bin/python scripts/adopt_run.py ... --apply

Prints what it would do; --apply renames the run file (its config and config_hash rewritten)
and the run's workdir under .cache/workdirs/, if present. Refuses any other difference.
"""
import argparse
import json
import os
import sys
from pathlib import Path

from mone import results
from mone.runs import experiments
from mone.configs import recipes, schema

LABELS = ("name",)  # fields that only label a run


def differences(old: schema.TrainConfig, new: schema.TrainConfig, device_count: int) -> list[str]:
  """The fields in which old and new differ that adoption cannot ignore (empty: adoptable)."""
  a, b = results.jsonable(old), results.jsonable(new)
  bad = []
  for key in sorted(set(a) | set(b)):
    if a.get(key) == b.get(key) or key in LABELS:
      continue
    if key == "num_devices" and device_count == 1 and {a[key], b[key]} <= {0, 1}:
      continue  # 0 = all local devices = 1 on a one-device machine: the same mesh, the same numbers
    bad.append(f"{key}: {a.get(key)!r} -> {b.get(key)!r}")
  return bad


def adopt(run_file: Path, target: schema.TrainConfig, apply: bool) -> Path:
  """Moves run_file (and its workdir) to target's name; returns the new run file's path."""
  m = json.loads(run_file.read_text())
  old = schema.from_json(m["config"])
  bad = differences(old, target, m["device"]["count"])
  if bad:
    raise SystemExit(f"{run_file.name} cannot be adopted as {target.name} ({target.kind}): {'; '.join(bad)}")
  new_path = experiments.run_path(target)
  old_wd, new_wd = experiments.workdir(old), experiments.workdir(target)
  print(f"{run_file} -> {new_path}" + (f"\n{old_wd} -> {new_wd}" if old_wd.exists() else ""))
  if new_path.exists() or new_wd.exists():
    raise SystemExit(f"{new_path.name} or its workdir exists already: nothing to adopt it into")
  if apply:
    note = (f"trained as {run_file.stem} ({'; '.join(f'{k}={getattr(old, k)!r}' for k in ('name', 'num_devices'))}) "
            f"on a {m['device']['count']}-device machine, the same computation as this config; adopted under its hash")
    adopted = {**m, "name": target.name, "config": results.jsonable(target), "config_hash": results.config_hash(target),
               "adopted_from": note}
    results.atomic_write_json(new_path, adopted)
    os.remove(run_file)
    if old_wd.exists():
      os.rename(old_wd, new_wd)
      results.atomic_write_json(new_wd / "config.json", {"config": target, "config_hash": results.config_hash(target)})
  return new_path


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("run_file", type=Path)
  ap.add_argument("config", help=f"the target's recipe, one of {sorted(recipes.CONFIGS)}")
  ap.add_argument("overrides", nargs="*", help="key=value overrides of the target config")
  ap.add_argument("--apply", action="store_true", help="rename (default: print what it would do)")
  args = ap.parse_args(argv)
  if not args.run_file.is_file():
    ap.error(f"run_file {args.run_file} is not a file")
  adopt(args.run_file, recipes.get_config(args.config, args.overrides), args.apply)


if __name__ == "__main__":
  main(sys.argv[1:])
