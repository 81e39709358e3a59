"""The runs of the recalibrated small profile, in the order to train them, and which of them the
chapters read.

Retraining the small profile takes about a hundred CPU-hours on 2 cores (a dense `digits64` run of
8,000 steps about an hour), so it spans restarts: `scripts/train_queue.py` trains these runs in this
order, skipping finished ones and resuming a killed one. Headline comparisons come first, one seed
at a time (seed 0 gives every headline figure a first answer; seeds 1 and 2 make the claims
decidable, the seed plan's EXTRA_SEEDS decide them from five); single-seed studies come last, the
costliest (isoFLOPs) at the very end.

The configs are those the chapters ask for (`profiles.image_config('small')`, `video_config('small',
task)`; a test checks that they agree). The seed plans, as written before their runs trained, are
`mone.evidence.seed_plans`; how long the runs take, `mone.runs.run_times`.
"""
import functools
from pathlib import Path

from mone import capacity, results
from mone.runs import experiments
from mone.models import kinds
from mone.configs import figures, profiles, schema
from mone.configs.arms import Arm
from mone.configs.figures import EXTRA_SEEDS, SEEDS, SEEDS_TO_TEN

def seeds(profile: str, seed: int = 0) -> tuple[int, ...]:
  """The seeds a chapter reads: the plan's for the small profile; two for smoke, so that its
  tests run the chapters' over-seeds code; the one given for paper (`-p seed N`), where each
  run is a machine's budget.

  The small profile's chapters read EXTRA_SEEDS only once every run planned for them has landed
  (`extra_landed`): a claim is decided at the seeds fixed in advance, never on the subset that
  happened to finish first (which would let the order of training choose a verdict)."""
  profiles.check_profile(profile)
  if profile == "small":
    if not single_device():
      return SEEDS
    return SEEDS + EXTRA_SEEDS + (SEEDS_TO_TEN if ten_seeds_landed() else ())
  return {"smoke": (0, 1), "paper": (seed,)}[profile]


# Amendment, fixed on 2026-11-28 before any run of EXTRA_SEEDS trained (results/seed_plan.json,
# "amendment"): the first device twins (MoNE runs of H100, retrained on the CPU at the same seed)
# differ from their originals by -2.2 to +0.9 points, with a mean of -1.1 (95% CI [-3.3, +1.1]) over
# four: the device changes a run's trajectory, and a systematic shift of a few points is not ruled
# out (`mone.chapters.devices`). A comparison between an arm trained on a GPU and one trained on the
# CPU would carry it. So no comparison crosses devices: every headline run of SEEDS that trained on
# a GPU, wholly or in part, is retrained on the CPU as its twin (results/device_twins/cpu/), and the
# chapters read the twin in its place, and the extra seeds, together, once all of them have landed.
# The device effect is then measured on all twins (`devices.summary`). New runs train on the CPU.
TWINS = "device_twins/cpu"


def _built_once(fn):
  """fn() computed once per process: the plan is a constant of the code, and building its configs
  validates each (the queue and the chapters ask for the plan once per run they look at). Kept per
  pair of figure builders, so that a test that swaps `figures.image_runs` for its own gets a plan of
  its own, never one cached before or after it."""
  cached = functools.lru_cache(maxsize=None)(lambda image_runs, video_runs: fn())
  return functools.wraps(fn)(lambda: cached(figures.image_runs, figures.video_runs))


def gpu_trained(m: dict) -> bool:
  """Whether a run file's run trained on a GPU or TPU in any part (its `trained_on` segments, else
  its `device`)."""
  segments = m.get("trained_on") or [{"device": m.get("device") or {}}]
  return any(isinstance(s.get("device"), dict) and s["device"].get("platform") not in (None, "cpu")
             or isinstance(s.get("device"), str) and s["device"] != "unrecorded" and not s["device"].startswith("cpu")
             for s in segments)


def twin_runs() -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of the headline runs of SEEDS whose committed run trained on a GPU: each is
  retrained on the CPU into `twin_path` (`scripts/train_queue.py --twins`)."""
  out = []
  for run in runs():
    path = experiments.run_path(cfg := run[1])
    if cfg.seed in SEEDS and run.arm in _headline_arms() and path.exists() and gpu_trained(results.read_json(path)):
      out.append(run)
  return out


def study_twin_runs() -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of the single-seed studies (seed 0, not headline runs) whose committed run
  trained on a GPU: Figure 6's router placement and count arms, compared with MoNE at e_c = 0.3,
  whose run the chapters read as its CPU twin. Each is retrained on the CPU into `twin_path` too
  (`scripts/train_queue.py --twins`), so that no comparison crosses devices; the chapters read them
  as they land (`reading`), and `single_device` does not wait for them (they decide no planned claim)."""
  headline = _headline_arms()
  return [run for run in runs() if run.arm not in headline
          and (path := experiments.run_path(run[1])).exists() and gpu_trained(results.read_json(path))]


def twin_path(path) -> Path:
  """Where the CPU twin of a committed results file (a run file or router weights) lives."""
  path = Path(path)
  return experiments.results_root() / TWINS / path.parent.name / path.name


def single_device() -> bool:
  """Whether the chapters read the CPU twins and EXTRA_SEEDS: once every planned extra run and
  every twin (`twin_runs`) has landed. Answered once per results folder and process (a chapter
  asks for every file it reads; a run that lands mid-chapter waits for the next execution)."""
  return _single_device(str(experiments.results_root()))


@functools.lru_cache(maxsize=None)
def _single_device(root: str) -> bool:
  landed, planned = extra_landed()
  return landed == planned and all(twin_path(experiments.run_path(cfg)).exists() for _, cfg in twin_runs())


def reading(path):
  """The file a chapter reads for committed results file `path`: its CPU twin where the
  single-device reading is in force (`single_device`) and the twin exists, else path itself."""
  twin = twin_path(path)
  return twin if twin.exists() and single_device() else path


def progress() -> dict:
  """Where the plan stands: {'twins': (landed, planned) of `twin_runs`, 'extra': (landed,
  planned) of `extra_runs`, 'single_device': whether the chapters read them yet}."""
  twins = twin_runs()
  landed = sum(twin_path(experiments.run_path(cfg)).exists() for _, cfg in twins)
  ten = ten_seed_runs()
  return {"twins": (landed, len(twins)), "extra": extra_landed(), "single_device": single_device(),
          "ten": (sum(experiments.run_path(cfg).exists() for _, cfg in ten), len(ten))}


def progress_note(p: dict) -> str:
  """`progress` in a reader's words (the devices page)."""
  (tl, tp), (el, ep) = p["twins"], p["extra"]
  seeds = f"{EXTRA_SEEDS[0]}-{EXTRA_SEEDS[-1]}"
  if p["single_device"]:
    out = (f"All {tp} CPU twins and all {ep} runs of seeds {seeds} have been committed: the chapters read the twins in place "
           f"of their GPU originals and decide every planned claim at {len(SEEDS + EXTRA_SEEDS)} seeds, on one device.")
    if "ten" in p:
      (nl, npl), ten = p["ten"], f"{SEEDS_TO_TEN[0]}-{SEEDS_TO_TEN[-1]}"
      out += (f" {nl} of the {npl} runs of seeds {ten} (`results/seed_plan_10.json`, fixed before any of them trained) "
              + ("have been committed: the chapters decide every planned claim at 10 seeds." if nl == npl else
                 "have been committed; the chapters read them only once all have (`mone.runs.plan.seeds`)."))
    return out
  return (f"{tl} of {tp} CPU twins and {el} of {ep} runs of seeds {seeds} have been committed. Until all have, the chapters read "
          f"seeds {SEEDS[0]}-{SEEDS[-1]} as they trained, GPU runs included; then the twins replace their GPU originals and "
          f"every planned claim is decided at {len(SEEDS + EXTRA_SEEDS)} seeds on one device (`mone.runs.plan.seeds`, "
          "fixed in `results/seed_plan.json` before any of those runs trained).")


def extra_runs() -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of the runs planned for EXTRA_SEEDS, in training order."""
  return [r for r in runs() if r[1].seed in EXTRA_SEEDS]


def extra_landed() -> tuple[int, int]:
  """(landed, planned): how many of `extra_runs` have a run file."""
  planned = extra_runs()
  return sum(experiments.run_path(cfg).exists() for _, cfg in planned), len(planned)


def ten_seed_runs() -> list[tuple[str, schema.TrainConfig]]:
  """(label, config) of the ten-seed plan's runs, in training order: every headline run (the
  labels trained at every seed of the five-seed plan) at SEEDS_TO_TEN, with the same config but
  its seed; the image runs first, then the short video runs, then the long ones (`video_runs`)."""
  return list(_ten_seed_runs())


@_built_once
def _ten_seed_runs() -> tuple:
  headline = _headline_arms()
  return tuple(r for r in figures.image_runs(seeds=SEEDS_TO_TEN) + figures.video_runs(seeds=SEEDS_TO_TEN)
               if r[1].seed in SEEDS_TO_TEN and r.arm in headline)


def ten_seeds_landed() -> bool:
  """Whether every run of `ten_seed_runs` has its run file (the chapters read seeds 5-9 only then:
  a claim is decided at the seeds fixed in advance, never on the runs that finished first).
  Answered once per results folder and process, as `single_device`."""
  return _ten_seeds_landed(str(experiments.results_root()))


@functools.lru_cache(maxsize=None)
def _ten_seeds_landed(root: str) -> bool:
  return all(experiments.run_path(cfg).exists() for _, cfg in ten_seed_runs())


def keeps_weights(cfg: schema.TrainConfig) -> bool:
  """Whether the queue commits every final parameter of cfg's run under results/weights/ (the run
  file's name, .npz): every run of the ten-seed plan, so that later analyses evaluate them without
  retraining (`experiments.stored_params` reads them back)."""
  return cfg.seed in SEEDS_TO_TEN


def trains(profile: str, recompute: bool = False) -> bool:
  """Whether a chapter trains its runs: the small profile's are trained by
  `scripts/train_queue.py` and committed, so its chapters only read them (unless recompute);
  the smoke and paper profiles' chapters train theirs (`headlines.landed(train=True)`)."""
  profiles.check_profile(profile)
  return profile != "small" or recompute


@_built_once
def _headline_arms() -> frozenset:
  """The arms trained at every seed: the headline runs."""
  return frozenset(r.arm for r in figures.image_runs() + figures.video_runs() if r[1].seed == SEEDS[-1])


# The video runs that decide the video recipes (is the dense appearance model at a plateau? is the
# temporal task's quarter-width sub-model 5 points below the dense ViViT, `calibration.discrimination`?)
# go first: the others hang on them.
CALIBRATION = (Arm("appearance", "vit"), Arm("temporal", "matvit"), Arm("temporal", "vit"))  # at seed 0


def keeps_router_weights(cfg: schema.TrainConfig) -> bool:
  """Whether the queue commits cfg's router weights (`experiments.router_params`) when it has
  trained it: every MoNE run of Eq. 3's allocation at a fixed e_c, learned or random router,
  whose first router is before layer 0, at every seed. The router figures (1 and 7) read some of
  them, and claims about what a router selects can then be decided over seeds; checkpoints are
  not committed, so these are saved while the run's checkpoint is at hand (about 100 KB each)."""
  return (cfg.model_kind.routed and cfg.allocation == capacity.EQ3 and not cfg.adaptive
          and cfg.model.router_layers[0] == 0)


def runs() -> list[tuple[str, schema.TrainConfig]]:
  """Every run of the profile, in training order: the video calibration runs, the
  images, then the other videos; then the ten-seed plan's runs (`ten_seed_runs`)."""
  return list(_runs())


@_built_once
def _runs() -> tuple:
  every = SEEDS + EXTRA_SEEDS
  videos = figures.video_runs(seeds=every)
  first = lambda r: r.arm in CALIBRATION and r[1].seed == 0
  return tuple([r for r in videos if first(r)] + figures.image_runs(seeds=every) + [r for r in videos if not first(r)]
               + ten_seed_runs())


def trains_on(root) -> str | None:
  """The device a planned run that has not landed must train on: "cpu" where `root` holds the seed
  plan with its device amendment (`mone.evidence.seed_plans.amendment`: every paired difference the chapters read is between
  two CPU runs, so a run trained elsewhere would cross devices again), else None, any device (a
  results folder of one's own, e.g. the whole profile retrained on one GPU)."""
  path = Path(root) / "seed_plan.json"
  return "cpu" if path.is_file() and "amendment" in results.read_json(path) else None
