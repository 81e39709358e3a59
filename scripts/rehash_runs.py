"""Renames committed run files after a change to what the config hash covers (never retrain for a
rename): each results/runs/<name>-<kind>-<hash>.json gets its config's current hash, in its name
and its "config_hash"; every other results file, executed chapter and local workdir
(.cache/workdirs/) that names the old hash is rewritten to the new one.

  .venv/bin/python scripts/rehash_runs.py          # prints what it would do
  .venv/bin/python scripts/rehash_runs.py --apply

A run's config is rebuilt from the file (`schema.from_json`); the script refuses to touch
anything unless every rebuilt config, hashed by the previous rule (`--previous-fields`: the fields
the change stopped hashing, with the values the run used), gives the hash in the file's name.
"""
import argparse
import hashlib
import json
import os
from pathlib import Path

from mone import results
from mone.configs import schema

REPO = Path(__file__).resolve().parent.parent


def previous_hash(cfg, fields) -> str:
  """cfg's hash with `fields` hashed again, as before they were left out."""
  d = results.jsonable(cfg, for_hash=True)
  d.update({f: results.jsonable(getattr(cfg, f)) for f in fields})
  return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]


def plan(fields) -> dict:
  """{old hash: new hash} over committed run files and local workdirs; raises on any config
  that does not rebuild to the hash in its name."""
  mapping, problems = {}, []
  found = [(p, json.loads(p.read_text())["config"]) for p in sorted((REPO / "results" / "runs").glob("*.json"))]
  found += [(p.parent, json.loads(p.read_text())["config"])
            for p in sorted((REPO / ".cache" / "workdirs").glob("*/config.json"))]
  for path, config in found:
    old = path.stem.rsplit("-", 1)[-1] if path.suffix == ".json" else path.name.rsplit("-", 1)[-1]
    cfg = schema.from_json(config)
    if previous_hash(cfg, fields) != old:
      problems.append(f"{path.relative_to(REPO)}: its config rebuilds to {previous_hash(cfg, fields)}, not {old}")
    elif results.config_hash(cfg) != old:
      mapping[old] = results.config_hash(cfg)
  if problems:
    raise SystemExit("nothing renamed; configs that do not rebuild:\n  " + "\n  ".join(problems))
  return mapping


def apply(mapping: dict) -> list[str]:
  changed = []
  for root, pattern in (("results", "**/*.json"), ("book/notebooks", "*.ipynb"), (".cache/workdirs", "*/*.json")):
    for p in sorted((REPO / root).glob(pattern)):
      text = new = p.read_text()
      for old, h in mapping.items():
        new = new.replace(old, h)
      if new != text:
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(new)
        os.replace(tmp, p)
        changed.append(str(p.relative_to(REPO)))
  for folder in (REPO / "results" / "runs", REPO / ".cache" / "workdirs"):
    for p in sorted(folder.glob("*")):
      stem, _, h = p.name.removesuffix(".json").rpartition("-")
      if h in mapping:
        p.rename(p.with_name(p.name.replace(h, mapping[h])))
        changed.append(f"{p.relative_to(REPO)} -> {mapping[h]}")
  return changed


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--previous-fields", nargs="*", default=["data_dir", "log_every", "checkpoint_every",
                                                           "keep_checkpoints"])
  ap.add_argument("--apply", action="store_true")
  args = ap.parse_args()
  mapping = plan(args.previous_fields)
  for old, new in mapping.items():
    print(f"{old} -> {new}")
  if args.apply:
    print("\n".join(apply(mapping)))
  else:
    print(f"{len(mapping)} hashes would change; rerun with --apply")


if __name__ == "__main__":
  main()
