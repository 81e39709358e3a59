"""The next profile's recipe, chosen by rules fixed before any of its runs (results/calibration_<version>.json,
the current one and those it replaced: `mone.runs.calibrations` says what each froze and why).

The ten-seed small profile showed three faults (book/ten_seed_readout.md): dense ViT runs still
improving when training stops, temporal runs that stall at chance or at the half-way plateau (5 of 35
at seeds 5-9, all baselines), and MoNE not monotone in e_c. This module states how the next recipe is
chosen, so that the choice cannot follow the results it is meant to produce:

- Calibration seeds (`SEEDS`) that no plan trains, and the validation split only: the rules read a
  run's validation curve (`curve[*].val_accuracy`), never its test accuracy, and never which arm wins.
- Candidates per task (each calibration's own, `Calibration.candidates`), in the order they are
  tried (cheapest first). The first whose runs meet every rule in every arm is the task's recipe; a
  later candidate trains only where every earlier one failed.
- Stage A trains a few arms per task (`STAGE_A`: the dense model, MatViT, MoNE at its lowest e_c,
  and on the temporal task the Table 1 baseline that never left chance) at every calibration seed,
  plus one twin of each (seed `SEEDS[0]`) compiled for another instruction set (`ISA_TWIN_FLAGS`):
  the same arithmetic in a different order, so a recipe whose outcome is decided by last-bit noise
  shows it. Stage B then trains the task's other arms with the candidate stage A chose.
- The rules (`check_run`, `check_arm`, `choose`): (a) plateau: the validation accuracy's least-squares
  slope over the last quarter of steps, times a quarter, is below PLATEAU_GAIN (0.3 points); a fitted
  slope, not two end points, since one evaluation of 1,000-5,000 examples moves by about a point
  between neighbouring checkpoints. (b) No stall: every run is above chance by LEFT_CHANCE by 10% of
  its steps, and ends within OUTLIER of its arm's median over the seeds; the ISA twin's final
  validation accuracy is within the arm's seed range (max - min, at least TWIN_FLOOR) of its own
  seed's. (c) The recipe is chosen by (a) and (b) alone (`choose`).
  A stage fails as soon as one of its runs fails (a) or (b)'s first part, which read that run
  alone: its remaining runs are not trained (`failed_already`).

Every function takes the calibration it reads (`cal`, the current one, `CURRENT`, by default): the
queue trains the current one's runs; the page shows every calibration's. `python -m mone.chapters
recalibration` writes the files (refusing to change a frozen one) and prints where each run stands.
"""
import dataclasses
import math
import os
from pathlib import Path

import numpy as np

from mone import results
from mone.runs import experiments, run_times
from mone.runs.calibrations import (ALL, CURRENT, FASTER, ISA_TWIN_FLAGS, SEEDS, STAGE_A, STAGE_B, TASKS,  # noqa: F401
                                    Calibration)
from mone.configs import arms, schema
from mone.configs.figures import EXTRA_SEEDS, SEEDS_TO_TEN
from mone.configs.figures import SEEDS as FIRST_SEEDS

PLAN_SEEDS = FIRST_SEEDS + EXTRA_SEEDS + SEEDS_TO_TEN  # the ten seeds a plan trains every headline arm at

PLATEAU_GAIN = 0.003   # fitted validation accuracy gain over the last quarter of steps
LEFT_CHANCE = 0.10     # above chance (1 / classes) by 10% of the steps
EARLY = 0.10           # ... the share of steps by which a run must have left chance
OUTLIER = 0.05         # a run ending further than this below its arm's median has stalled
TWIN_FLOOR = 0.01      # the smallest seed range a twin is held to


@dataclasses.dataclass(frozen=True)
class Run:
  """One calibration run: its task, candidate, arm (a `mone.bench.training` arm name), seed, and
  whether it is the instruction-set twin."""
  task: str
  candidate: str
  arm: str
  seed: int
  twin: bool = False
  cal: Calibration = CURRENT

  @property
  def label(self) -> str:
    return f"{self.candidate}: {self.arm}, seed {self.seed}" + (" (AVX2)" if self.twin else "")

  def config(self) -> schema.TrainConfig:
    overrides = {**FASTER, **dict(self.cal.candidates[self.task])[self.candidate], "seed": self.seed}
    return schema.apply_overrides(arms.select([self.arm])[0].config(), [f"{k}={v}" for k, v in overrides.items()])

  def run_path(self, root) -> Path:
    """Where its run file lands under the results folder `root` (the twin's under its own folder)."""
    folder = self.cal.twin_folder if self.twin else self.cal.folder
    return root / folder / "runs" / experiments.run_path(self.config()).name


def runs(task: str, candidate: str, stage: str, cal: Calibration = CURRENT) -> list[Run]:
  """Stage 'A' (its arms at every seed, then their twins) or 'B' of one candidate of one task."""
  arms = STAGE_A[task] if stage == "A" else STAGE_B[task]
  out = [Run(task, candidate, arm, seed, cal=cal) for seed in SEEDS for arm in arms]
  return out + ([Run(task, candidate, arm, SEEDS[0], twin=True, cal=cal) for arm in arms] if stage == "A" else [])


def document(cal: Calibration = CURRENT) -> dict:
  """What results/calibration_<version>.json freezes: seeds, candidates, arms, rules and their thresholds."""
  return {
      "purpose": "choose the next small profile's recipe (steps, warmup, peak learning rate) per task by rules fixed "
                 "before any calibration run, on seeds no plan uses and on the validation split only",
      "fixed_on": cal.fixed_on,
      "seeds": list(SEEDS),
      "every_run": {"overrides": FASTER, "device": "CPU, one pinned core per run, float32 matmuls in full precision"},
      "candidates": {t: [{"name": n, "overrides": o} for n, o in c] for t, c in cal.candidates.items()},
      "stage_a_arms": {t: list(a) for t, a in STAGE_A.items()},
      "stage_b_arms": {t: list(a) for t, a in STAGE_B.items()},
      "isa_twin": {"seed": SEEDS[0], "xla_flags": ISA_TWIN_FLAGS},
      "rules": {
          "a_plateau": f"every run's validation accuracy, fitted by least squares over the evaluations at or after 3/4 of "
                       f"its steps, gains less than {100 * PLATEAU_GAIN:g} points over a quarter of its steps",
          "b_left_chance": f"every run's validation accuracy exceeds chance (1 / classes) by {100 * LEFT_CHANCE:g} points "
                           f"at an evaluation at or before {100 * EARLY:g}% of its steps",
          "b_no_outlier": f"every run's final validation accuracy is at most {100 * OUTLIER:g} points below the median "
                          "of its arm's runs at the calibration seeds",
          "b_isa_twin": f"each stage-A arm's twin (seed {SEEDS[0]}, XLA_FLAGS={ISA_TWIN_FLAGS}) ends within the arm's "
                        f"seed range (max - min of final validation accuracy, at least {100 * TWIN_FLOOR:g} point) "
                        "of the same seed's run",
          "c_choice": "per task, candidates are tried in the listed order; stage A trains the stage-A arms, stage B "
                      "the task's other arms with a candidate that passed stage A; the first candidate whose runs "
                      "pass every rule in both stages is the recipe. A later candidate trains only after every "
                      "earlier one failed. Test accuracy and which arm scores higher are never read.",
      },
      "order": list(TASKS),
      **({"supersedes": cal.supersedes} if cal.supersedes else {}),
  }


def write(root=None) -> bool:
  """Writes each calibration's file (`ALL`) that is missing; True if one was written. A file that exists
  must equal its `document()`: the rules are frozen, and a change is a new file with the old one's
  results beside it."""
  root = results.RESULTS if root is None else root
  for cal in ALL:
    path, doc = root / cal.file, document(cal)
    if path.exists() and results.read_json(path) != doc:
      raise ValueError(f"{path} is frozen and differs from mone.runs.recalibration.document(); "
                       "a changed calibration is a new file, its runs and verdicts beside this one's")
  missing = [cal for cal in ALL if not (root / cal.file).exists()]
  for cal in missing:
    results.atomic_write_json(root / cal.file, document(cal))
  return bool(missing)


# ------------------------------------------------------------------------------- the rules ---


def _last_quarter(curve: list[dict], steps: int) -> tuple[np.ndarray, np.ndarray]:
  """(steps, validation accuracies) of the evaluations at or after 3/4 of `steps`: what rule (a) fits."""
  tail = [p for p in curve if p["step"] >= 0.75 * steps and p.get("val_accuracy") is not None]
  if len(tail) < 3:
    raise ValueError(f"the curve has {len(tail)} validation points in its last quarter of {steps} steps; "
                     "a fitted gain needs at least 3 (set eval_every to at most steps / 8)")
  return np.array([p["step"] for p in tail], float), np.array([p["val_accuracy"] for p in tail], float)


def fitted_gain(curve: list[dict], steps: int) -> float:
  """Least-squares slope of validation accuracy over the evaluations at or after 3/4 of `steps`,
  times steps / 4: what the run gained over its last quarter, with one evaluation's noise averaged."""
  x, y = _last_quarter(curve, steps)
  return float(np.polyfit(x, y, 1)[0] * steps / 4)


def gain_noise(curve: list[dict], steps: int) -> float:
  """The standard error of `fitted_gain` that the evaluations' scatter about the fitted line implies
  (their residual standard deviation, propagated through the least-squares slope). Neighbouring
  evaluations are not independent, so the true error is larger: this is a lower bound."""
  x, y = _last_quarter(curve, steps)
  resid = y - np.polyval(np.polyfit(x, y, 1), x)
  return float(resid.std(ddof=2) * steps / 4 / np.sqrt(((x - x.mean()) ** 2).sum()))


def residual_correlation(curve: list[dict], steps: int) -> float:
  """The lag-one correlation of the last quarter's residuals about the fitted line: near zero or below
  (a line's residuals of independent points lean negative), `gain_noise` holds; well above zero,
  neighbouring evaluations move together and the fitted gain errs more than it says."""
  x, y = _last_quarter(curve, steps)
  resid = y - np.polyval(np.polyfit(x, y, 1), x)
  before, after = resid[:-1], resid[1:]
  if before.std() < 1e-12 or after.std() < 1e-12:
    return 0.0  # points on their line: nothing scatters, nothing moves together
  return float(np.corrcoef(before, after)[0, 1])


def pass_chance(noise: float, runs: int) -> tuple[float, float]:
  """(one run, all `runs` runs): the chance that runs whose accuracy has stopped rising (a true gain of
  0) each fit a gain below PLATEAU_GAIN, if each fitted gain errs normally by `noise`: how often rule
  (a) would pass a recipe that meets it."""
  one = 0.5 * (1 + math.erf(PLATEAU_GAIN / noise / math.sqrt(2))) if noise > 0 else 1.0  # no noise: always
  return one, one ** runs


def check_run(m: dict) -> dict:
  """Rules (a) and (b)'s first part for one finished run file (validation only)."""
  steps, curve = m["train_steps"], m["curve"]
  classes = m["config"]["model"]["num_classes"]
  early = [p["val_accuracy"] for p in curve if p["step"] <= EARLY * steps]
  if not early:
    raise ValueError(f"the curve has no validation point in the first {100 * EARLY:g}% of {steps} steps")
  gain = fitted_gain(curve, steps)
  return {"final_val": curve[-1]["val_accuracy"], "fitted_gain": gain, "gain_noise": gain_noise(curve, steps),
          "plateau": gain < PLATEAU_GAIN,
          "early_val": max(early), "left_chance": max(early) > 1 / classes + LEFT_CHANCE}


def passes_alone(reading: dict) -> bool:
  """Whether one run's readings (`check_run`) pass the rules that read that run alone: (a) and (b)'s
  first part. A run that fails them fails its arm whatever the other runs give (`failed_already`)."""
  return reading["plateau"] and reading["left_chance"]


def check_arm(seeds: dict, twin: dict | None = None) -> dict:
  """The rules for one arm: seeds maps seed -> run file (all of `SEEDS`), twin is the ISA twin's run
  file (stage A) or None (stage B)."""
  per_seed = {s: check_run(m) for s, m in sorted(seeds.items())}
  finals = np.array([r["final_val"] for r in per_seed.values()])
  median, spread = float(np.median(finals)), float(finals.max() - finals.min())
  out = {"runs": per_seed, "median_val": median, "seed_range": spread,
         "no_outlier": bool((finals >= median - OUTLIER).all())}
  if twin is not None:
    diff = abs(twin["curve"][-1]["val_accuracy"] - per_seed[SEEDS[0]]["final_val"])
    # A twin whose every logged number equals its seed's run tested nothing: on some hosts the AVX2
    # build computes the same bits for some arms (measured on an AVX-512 AMD EPYC: a temporal MoNE's
    # parameters after 20 steps equal, an image ViT's after 30 not). The rule reads it as it reads any
    # twin; the page says so.
    out.update(twin_diff=diff, twin_within=diff <= max(spread, TWIN_FLOOR),
               twin_identical=twin["curve"] == seeds[SEEDS[0]]["curve"])
  out["passes"] = (all(map(passes_alone, per_seed.values())) and out["no_outlier"]
                   and out.get("twin_within", True))
  return out


def choose(task: str, outcomes: dict, cal: Calibration = CURRENT) -> str | None:
  """The recipe for one task: outcomes maps candidate name -> {'A': {arm: check_arm(...)}, 'B': {...}}
  for the candidates trained so far; the first in `cal.candidates` order whose every stage-A and stage-B
  arm is there and passes, or None (the next candidate trains, or this one's stage B)."""
  for name, _ in cal.candidates[task]:
    stages = outcomes.get(name, {})
    if all(set(stages.get(stage, {})) == set(wanted) and all(a["passes"] for a in stages[stage].values())
           for stage, wanted in (("A", STAGE_A[task]), ("B", STAGE_B[task]))):
      return name
  return None


# ------------------------------------------------------------------------- where it stands ---


def _read(path):
  """A calibration run file, None while it is missing; one that does not record its code is refused."""
  return results.require_provenance(results.read_json(path), path) if path.exists() else None


def stage_outcome(task: str, candidate: str, stage: str, root, cal: Calibration = CURRENT) -> dict | None:
  """{arm: check_arm(...)} for one stage of one candidate, or None while any of its runs is missing."""
  files = {r: _read(r.run_path(root)) for r in runs(task, candidate, stage, cal)}
  if any(m is None for m in files.values()):
    return None
  wanted = STAGE_A[task] if stage == "A" else STAGE_B[task]
  return {arm: check_arm({r.seed: m for r, m in files.items() if r.arm == arm and not r.twin},
                         next((m for r, m in files.items() if r.arm == arm and r.twin), None))
          for arm in wanted}


def failed_already(task: str, candidate: str, stage: str, root, cal: Calibration = CURRENT) -> dict:
  """{arm: {"passes": False, "failed": {seed: check_run(...)}}} of the stage's arms with a finished run
  (at a calibration seed) that fails rule (a) or rule (b)'s first part, or {} if none. Both rules read
  one run alone, so no run still to train can undo the failure: by rule (c) the candidate has failed,
  and its stage's other runs (its instruction-set twins too) would only cost core-hours."""
  out = {}
  for r in runs(task, candidate, stage, cal):
    m = None if r.twin else _read(r.run_path(root))
    reading = check_run(m) if m is not None else None
    if reading is not None and not passes_alone(reading):
      out.setdefault(r.arm, {"passes": False, "failed": {}})["failed"][r.seed] = reading
  return out


def progress(task: str, root, cal: Calibration = CURRENT) -> tuple[dict, list[Run], str | None]:
  """(outcomes so far by candidate and stage, the runs to train next, the chosen candidate or None).
  Candidates are walked in order: the first stage that is not complete is what trains next; a
  stage that fails moves on to the next candidate, as soon as one of its finished runs fails a rule
  of its own (`failed_already`: the outcome then lists only the arms that failed); a task whose
  candidates all failed trains nothing more (a new calibration file adds candidates)."""
  outcomes = {}
  for name, _ in cal.candidates[task]:
    for stage in ("A", "B"):
      outcome = stage_outcome(task, name, stage, root, cal)
      if outcome is None:
        outcome = failed_already(task, name, stage, root, cal)
        if not outcome:
          return outcomes, [r for r in runs(task, name, stage, cal) if not r.run_path(root).exists()], None
      outcomes.setdefault(name, {})[stage] = outcome
      if not all(a["passes"] for a in outcome.values()):
        break
    if (chosen := choose(task, outcomes, cal)) is not None:
      return outcomes, [], chosen
  return outcomes, [], None


def pending(root=None) -> list[Run]:
  """Every run of the current calibration to train next, task by task in `TASKS` order (`progress`)."""
  root = results.RESULTS if root is None else root
  return [r for task in TASKS for r in progress(task, root)[1]]


def queue(isa_twins: bool, freeze: bool) -> list[tuple[str, schema.TrainConfig]]:
  """The training queue's runs (`scripts/train_queue.py --calibration [--isa-twins]`): (label, config)
  of every pending run (`pending`), the twins alone or none of them. Points this process and the workers
  it starts at the calibration's folder (MONE_RESULTS_DIR) and workdirs of its own (MONE_CACHE_DIR:
  an earlier calibration's run of the same config drew its curve at other steps, and its checkpoints
  must not finish this one's); the twins also compile for AVX2 (XLA_FLAGS), in workdirs of their own.
  Both are set before JAX starts. freeze: write the files first (`write`), which stops on a changed
  definition."""
  if freeze:
    write(results.RESULTS)
  chosen = [(r.label, r.config()) for r in pending() if r.twin == isa_twins]
  # The workers it starts inherit these and call this again: each is set once.
  workdirs = Path(CURRENT.twin_folder if isa_twins else CURRENT.folder)
  if not experiments.cache_root().as_posix().endswith(workdirs.as_posix()):
    os.environ["MONE_CACHE_DIR"] = str(experiments.cache_root() / workdirs)
  if isa_twins and ISA_TWIN_FLAGS not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(f for f in (os.environ.get("XLA_FLAGS", ""), ISA_TWIN_FLAGS) if f)
  os.environ["MONE_RESULTS_DIR"] = str(results.RESULTS / (CURRENT.twin_folder if isa_twins else CURRENT.folder))
  return chosen


def plan_hours(task: str, overrides: dict, finished: list[dict]) -> float | None:
  """About how many core-hours the ten-seed plan's runs of the task (`arms.arms()` at the plan's ten
  seeds) take with the calibration's settings (`FASTER`) and a recipe's overrides (a candidate's, or {}
  for the profile's own), from the time per training FLOP of the `finished` run files
  (`run_times.estimate_seconds`): what a candidate's plateau would cost before it is chosen. None where
  an arm has no finished run of its name and kind to time it from."""
  seconds = [run_times.estimate_seconds(schema.apply_overrides(
      arm.config(), [f"{k}={v}" for k, v in {**FASTER, **overrides}.items()]), finished)
      for arm in arms.arms() if arm.task == task]
  if any(s is None for s in seconds):
    return None
  return len(PLAN_SEEDS) * sum(seconds) / 3600


def committed(twins: bool = False, root=None, cal: Calibration = CURRENT) -> int:
  """How many of cal's run files (the AVX2 twins' with twins) are under the results folder."""
  root = results.RESULTS if root is None else root
  return len(list((root / (cal.twin_folder if twins else cal.folder) / "runs").glob("*.json")))


def status(root=None, cal: Calibration = CURRENT) -> str:
  """Where each task of a calibration stands, in a few lines."""
  root = results.RESULTS if root is None else root
  lines = []
  for task in TASKS:
    outcomes, todo, chosen = progress(task, root, cal)
    done = {n: {st: all(a["passes"] for a in o.values()) for st, o in stages.items()} for n, stages in outcomes.items()}
    state = f"chosen: {chosen}" if chosen else (f"{len(todo)} runs to train ({todo[0].candidate}, stage "
                                                f"{'A' if todo[0].arm in STAGE_A[task] else 'B'})" if todo else
                                                "every candidate failed")
    lines.append(f"{task} ({cal.version}): {state}; stages decided {done or 'none'}")
  return "\n".join(lines)
