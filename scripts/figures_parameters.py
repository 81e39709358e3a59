"""Checks `make figures`' parameters before any notebook runs: prints one line naming the first
bad one, its value and what is allowed (exit status 2), or nothing (exit status 0).

  python3 scripts/figures_parameters.py PROFILE SEED DATA_DIR

The Makefile calls it while it reads itself, with the system's python3, before .venv exists: so
it uses the standard library only. A bad parameter then stops Make before it has run, built or
deleted anything (a notebook that failed half-way used to cost the reader a committed chapter).
"""
import os
import sys

PROFILES = ("smoke", "small", "paper")  # mone.runs.experiments.PROFILES (a test keeps them equal)
# The prepared TFDS datasets the paper profile's chapters read: ImageNet-21k for the image chapters,
# SSv2 and Kinetics-400 for the video ones (the recipes' tfds_name; a test keeps them equal).
PAPER_DATASETS = ("imagenet21k", "something_something_v2", "kinetics400")


def problem(profile: str, seed: str, data_dir: str) -> str | None:
  """What is wrong with the parameters, in one line; None where nothing is."""
  if profile not in PROFILES:
    return f"PROFILE must be one of {', '.join(PROFILES)}; got {profile!r}"
  if seed and not (seed.isascii() and seed.isdigit()):
    return f"SEED must be a non-negative integer (or unset: the profile's seeds); got {seed!r}"
  if profile != "paper":
    return None
  if not data_dir:
    return ("DATA_DIR must be set with PROFILE=paper: a folder of prepared TFDS datasets "
            f"({', '.join(PAPER_DATASETS)}), e.g. DATA_DIR=/data/tfds")
  if "://" in data_dir:  # gs://...: left to TFDS to check, as the data sources do
    return None
  if not os.path.isdir(data_dir):
    return f"DATA_DIR must be a folder of prepared TFDS datasets; {data_dir!r} is not a directory"
  missing = [d for d in PAPER_DATASETS if not os.path.isdir(os.path.join(data_dir, d))]
  if missing:
    return (f"DATA_DIR {data_dir!r} lacks the prepared TFDS dataset{'s' * (len(missing) > 1)} {', '.join(missing)} "
            f"that PROFILE=paper reads (prepare with `tfds build {missing[0]} --data_dir={data_dir} "
            "--file_format=array_record`)")
  return None


if __name__ == "__main__":
  if len(sys.argv) != 4:
    sys.exit(f"usage: {sys.argv[0]} PROFILE SEED DATA_DIR (SEED and DATA_DIR may be empty)")
  if (line := problem(*sys.argv[1:])) is not None:
    print(line)
    sys.exit(2)
