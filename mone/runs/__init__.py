"""Run planning, below the chapters: which runs the profile trains and in what order (`plan`), the next
profile's calibration (`recalibration`), where a run's file, checkpoints and weights live and how a run is
trained or its finished file reused (`experiments`), and how long runs take (`run_times`).

The training queue (`scripts/train_queue.py`) needs only these and the training stack: nothing here
imports the book's layers (`mone.evidence`, `mone.plotting`, `mone.chapters`, `mone.publish`;
tests/e2e/test_layout.py checks it).
"""
