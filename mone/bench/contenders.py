"""The benchmark rows' one vocabulary: the contender a row times, by the name its "model" field records,
and the test every reader of the rows picks them by.

A contender is a program timed against the dense model on the same inputs and parameters
(`mone.bench.workloads.Contender`), or a part of one that a micro-benchmark times alone; every committed
benchmark file names it by one of `NAMES`. The names
are the rows' schema, not the model kinds' (`mone.models.kinds`): "dense" is the ViT or ViViT every row's
speed-up is measured against, and "masked" is no kind at all. Code that writes or reads rows names them
through the constants below, never as strings of its own.
"""

DENSE = "dense"    # the dense ViT (ViViT), all tokens at width D: every row's baseline
MONE = "mone"      # MoNE at an e_c (1.0: every token at full width, routed)
MATVIT = "matvit"  # a MatViT sub-model, at the FLOPs closest to an e_c's MoNE
MASKED = "masked"  # MoNE's routing with every token at width D, masked: routing without its savings
# Parts of a MoNE forward the micro-benchmarks time alone (`mone.bench.micro`): full-width attention,
# and the router with EPR, sort and gather.
ATTENTION, ROUTING = "attention", "routing"
NAMES = (DENSE, MONE, MATVIT, MASKED, ATTENTION, ROUTING)
FULL = 1.0  # the e_c at which MoNE runs every token at full width (its speed-up is routing's cost alone)


def is_(row: dict, model: str, e_c: float | None = None) -> bool:
  """Whether `row` times contender `model` (one of `NAMES`), at `e_c` where given (to 1e-9)."""
  if model not in NAMES:
    raise ValueError(f"model must be one of {NAMES}, got {model!r}")
  return row["model"] == model and (e_c is None or row["e_c"] is not None and abs(row["e_c"] - e_c) < 1e-9)


def saves(row: dict) -> bool:
  """Whether `row` times MoNE below full capacity: a row whose speed-up the method claims."""
  return is_(row, MONE) and row["e_c"] != FULL
