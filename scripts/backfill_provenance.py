"""Adds `trained_on` and `matmul_precision` to run files written before the training loop recorded
them (`mone.train.loop`, whose docstring defines both), from what is known of where each run
trained. Only adds keys, in the format `results.atomic_write_json` wrote (indent 1, sorted keys), so
a file's diff is the added lines; a file that has them is left as it is. Idempotent:

  .venv/bin/python scripts/backfill_provenance.py            # every results/**/runs/*.json

Sources, per case:
- No run set JAX's float32 matmul precision before the loop recorded it: "default" everywhere
  (the CPU computes full float32 at the default; a GPU may use TF32).
- A run not resumed (`resumed_from_step` 0 or absent) trained in one process: its `device`.
- A resumed run that finished on a GPU trained both parts on that same GPU: the lent GPUs trained
  digits64 runs in two calls of one session, the second resuming the first's checkpoints (commit
  ad1e656 on one H200: "resumed once from step 7500-8000 when the first call's time ran out", and
  README at 7b3876f: seed 0's MoNE, MatViT and MoD runs "took about 5 minutes of training together"
  on one H200; those are digits64-matvit-726f9fee4bb4, resumed at 7,750, and digits64-mone-b10f6ab119e8
  and digits64-mod-b237e4df839f, resumed at 8,000; commit aaa29b0 on one H100, 8 processes sharing it).
- A resumed run that finished on the CPU trained its earlier part on the CPU too (GPUs trained only
  the digits64 runs of those two commits), on one of the 2-core machines of that time, whose cores
  used are not recorded: {"kind": "cpu", "platform": "cpu"}.
A part that only evaluated (resumed at its last step) is no part: the run has one, and `device`
names the process that evaluated (the loop does the same).
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
