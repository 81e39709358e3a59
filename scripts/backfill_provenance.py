"""Adds `trained_on` and `matmul_precision` to run files written before the training loop recorded
them (`mone.train.loop`), from what is known of where each run trained. Only adds keys; a file that
has them is left as it is. Idempotent:

  .venv/bin/python scripts/backfill_provenance.py

Sources, per case:
- No run set JAX's float32 matmul precision before the loop recorded it: "default" everywhere
  (the CPU computes full float32 at the default; a GPU may use TF32).
- A run not resumed (`resumed_from_step` 0 or absent) trained in one process: its `device`.
- The seed-0 digits64 runs MatViT (726f9fee4bb4), MoD (b237e4df839f) and MoNE e_c=0.2 with a random
  router (b10f6ab119e8) resumed at step 7,750-8,000, on the same H200: commit ad1e656 ("trained on one
  H200, 8 at once; resumed once from step 7500-8000 when the first call's time ran out").
- Any other resumed run: its first part's device is not recorded ("unrecorded").
"""
import json
from pathlib import Path

from mone import results

SAME_DEVICE_RESUMED = {"digits64-matvit-726f9fee4bb4", "digits64-mod-b237e4df839f", "digits64-mone-b10f6ab119e8"}


def segments(name: str, m: dict) -> list[dict]:
  """The `trained_on` of an old run file (see the module doc). A run resumed at its last step
  only evaluated after the resume: its training is one part."""
  steps, resumed, device = m["train_steps"], m.get("resumed_from_step") or 0, m.get("device") or {}
  known = {"device": device, "matmul_precision": "default"}
  unknown = {"device": "unrecorded", "matmul_precision": "unrecorded"}
  if not resumed:
    return [{**known, "from_step": 0, "to_step": steps}]
  first = known if name in SAME_DEVICE_RESUMED else unknown
  if resumed >= steps:
    return [{**first, "from_step": 0, "to_step": steps}]
  return [{**first, "from_step": 0, "to_step": resumed}, {**known, "from_step": resumed, "to_step": steps}]


def main():
  changed = 0
  for path in sorted(Path(results.RESULTS).glob("**/runs/*.json")):
    m = results.read_json(path)
    if "trained_on" in m or "train_steps" not in m:
      continue
    # As the file was written (indent 1, sorted keys), with the two keys added: no other line changes.
    m = {**m, "trained_on": segments(path.stem, m), "matmul_precision": "default"}
    results.atomic_write_text(path, json.dumps(m, indent=1, sort_keys=True) + "\n")
    changed += 1
  print(f"added trained_on and matmul_precision to {changed} run files")


if __name__ == "__main__":
  main()
