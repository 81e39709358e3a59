"""Adds `trained_on` and `matmul_precision` to run files written before the training loop recorded
them (`mone.train.loop` defines both), from what is known of where each run trained. It only adds
keys, in `results.atomic_write_json`'s format, so a file's diff is the added lines; a file that has
them is left alone, so it is idempotent:

  .venv/bin/python scripts/backfill_provenance.py            # every results/**/runs/*.json

Sources: no such run set JAX's float32 matmul precision: "default" everywhere. A run not resumed
trained in one process, its `device`. A resumed run that finished on a GPU trained both parts on
that GPU, in two calls, the second resuming the first's checkpoints (digits64-matvit-726f9fee4bb4 at
step 7,750, digits64-mone-b10f6ab119e8 and digits64-mod-b237e4df839f at 8,000 on one H200; the rest
on one H100 shared by 8 processes). GPUs trained no other runs, so one that finished on the CPU
trained its earlier part on a 2-core CPU whose cores are unrecorded. A run resumed at its last step
only evaluated then: one part, as the loop records it.
"""
import json
from pathlib import Path

from mone import results


def segments(m: dict) -> list[dict]:
  """The `trained_on` of an old run file (see the module doc)."""
  steps, resumed, device = m["train_steps"], m.get("resumed_from_step") or 0, m.get("device") or {}
  last = {"device": device, "matmul_precision": "default"}
  first = last if device.get("platform") != "cpu" else {"device": {"kind": "cpu", "platform": "cpu"}, "matmul_precision": "default"}
  if not resumed:
    return [{**last, "from_step": 0, "to_step": steps}]
  if resumed >= steps:
    return [{**first, "from_step": 0, "to_step": steps}]
  return [{**first, "from_step": 0, "to_step": resumed}, {**last, "from_step": resumed, "to_step": steps}]


def main(root=results.RESULTS) -> int:
  """Backfills every run file under root (results/: each profile's runs/ and the device twins')."""
  changed = 0
  for path in sorted(Path(root).glob("**/runs/*.json")):
    m = results.read_json(path)
    if "trained_on" in m or "train_steps" not in m:
      continue
    # As the file was written (indent 1, sorted keys), with the two keys added: no other line changes.
    m = {**m, "trained_on": segments(m), "matmul_precision": "default"}
    results.atomic_write_text(path, json.dumps(m, indent=1, sort_keys=True) + "\n")
    changed += 1
  print(f"added trained_on and matmul_precision to {changed} run files")
  return changed


if __name__ == "__main__":
  main()
