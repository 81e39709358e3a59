"""What each calibration of the next profile froze before its runs: its candidates per task, the day
it was fixed, and, for a later one, why it replaced the earlier (`mone.runs.recalibration` applies the
rules; each calibration's file is results/calibration_<version>.json, its runs under
results/calibration_<version>/).

Every calibration shares the seeds, arms and rules; they differ in their candidates and in how
densely a run's last quarter is evaluated, which is what rule (a) reads:

- v3 (2026-12-05): seven validation points in each run's last quarter. Its runs showed that a fitted
  gain then errs by about 0.26 points (one evaluation scatters by 0.23 points about the fitted line,
  the median over its 40 runs), so runs that no longer gain would all pass the 0.3-point threshold at
  the 27 runs of a task's two stages with a chance of about 3%: the rule, as measured, could hardly
  pass any recipe. Its results stay on the calibration page: every temporal candidate failed, the
  first image and appearance candidates failed.
- v4 (2026-12-07): the same rules, read from about 55 points in each run's last quarter
  (`tail_eval_every`: about 50 more evaluations a run). If evaluations scatter as independently as
  v3's (their residuals' lag-one correlation was negative in 32 of 40 runs, as independent points
  about a fitted line give), the fitted gain errs by about 0.11 points, and runs that no longer gain pass together with
  about 94%. Candidates: v3's untried ones (image-16k, appearance-24k), a longer fallback each, and on
  the temporal task v3's last candidate measured again (the same seeds and steps: the same training,
  more evaluations; v3 failed it by 0.02 points on a 0.27-point error) and then a longer one.
- v5 (2026-12-07): the same rules and evaluation density as v4, longer candidates. Every v4 candidate it
  tried failed rule (a) on its first runs, each with a run still gaining in its last quarter by more than
  the reading's error (images: MoNE e_c 0.2 +1.01 and +0.79 points at 16,000 steps, +0.35 and +0.34 at
  24,000; temporal, peak rate 5e-4: +0.49 and +0.37 at 9,000 steps, -0.15 and +0.47 at 12,000;
  appearance: ViViT +0.69 and +0.94 at 24,000; errors 0.06-0.16). Rule (a) holds every run of a task
  below 0.3 points, so a candidate must bring the largest gain there, not the median: its lengths follow
  how the gain shrank with the steps in every committed run (the calibration page's table by recipe),
  with room for the spread between seeds. v4's appearance-36k was not trained: at the shrinkage seen
  (the image MoNE's gain about halved for each 1.5x of steps), a largest gain of +0.94 at 24,000 steps
  leaves about +0.5 at 36,000.
"""
import dataclasses

# Shared by every calibration: seeds no plan uses, the faster step of the training benchmark
# (results/bench/cpu-training.json: same mathematics, what the next profile trains with), and the
# instruction set the twins compile for.
SEEDS = (100, 101, 102)
FASTER = {"model.weight_grad": "direct", "eval_batch_size": 100}
ISA_TWIN_FLAGS = "--xla_cpu_max_isa=AVX2"
# The arms of the ten-seed plan (`mone.configs.arms`) by task; stage A's first.
STAGE_A = {"temporal": ("temporal:vit", "temporal:matvit", "temporal:mone:0.3", "table1:uniform"),
           "image": ("image:vit", "image:matvit", "image:mod", "image:mone:0.2"),
           "appearance": ("appearance:vit", "appearance:matvit", "appearance:mone:0.4")}
STAGE_B = {"temporal": ("temporal:mone:0.4", "table1:proportionate", "table1:greedy:0.4", "table1:mod_greedy:0.4"),
           "image": ("image:mone:0.3", "image:mone:0.4", "image:mone:0.6", "image:mone:0.2:random",
                     "image:mone:0.3:random"),
           "appearance": ()}
TASKS = tuple(STAGE_A)  # the order the queue trains them in: the cheapest runs and the worst fault first


@dataclasses.dataclass(frozen=True, eq=False)  # each is one object, compared and hashed by identity
class Calibration:
  """One calibration: candidates per task (name, overrides of the profile's recipe), tried in order."""
  version: str
  fixed_on: str
  candidates: dict
  supersedes: dict | None = None  # {"file", "why"}: the calibration it replaced and the measured reason

  @property
  def file(self) -> str:
    return f"calibration_{self.version}.json"

  @property
  def folder(self) -> str:
    return f"calibration_{self.version}"

  @property
  def twin_folder(self) -> str:
    return f"calibration_{self.version}/avx2"


# Why v3's candidates: the dense image runs were still improving at 8,000 steps (3 of 10 seeds), so
# more steps at the same peak rate and a warmup of the same share; the temporal runs stall at a
# 50-step warmup (0.8% of the steps), so a warmup of 10%, then more steps, then a lower peak rate; the
# appearance dense run gained 1.5 points over its last quarter at 12,000 steps, so more steps.
# Validation points every eval_every steps: seven in the last quarter, two in the first tenth.
V3 = Calibration("v3", "2026-12-05", {
    "image": (("image-12k", {"steps": 12_000, "warmup_steps": 300, "eval_every": 500}),
              ("image-16k", {"steps": 16_000, "warmup_steps": 400, "eval_every": 500})),
    "temporal": (("temporal-6k-warmup10", {"steps": 6000, "warmup_steps": 600, "eval_every": 250}),
                 ("temporal-9k-warmup10", {"steps": 9000, "warmup_steps": 900, "eval_every": 375}),
                 ("temporal-9k-warmup10-lr5e-4", {"steps": 9000, "warmup_steps": 900, "eval_every": 375, "lr": 5e-4})),
    "appearance": (("appearance-18k", {"steps": 18_000, "warmup_steps": 900, "eval_every": 750}),
                   ("appearance-24k", {"steps": 24_000, "warmup_steps": 1200, "eval_every": 1000})),
})

# v4: 50 more validation points in the last quarter (every steps / 200), the same warmup shares and
# eval_every as v3 (two points in the first tenth), then a longer fallback per task.
V4 = Calibration("v4", "2026-12-07", {
    "image": (("image-16k", {"steps": 16_000, "warmup_steps": 400, "eval_every": 500, "tail_eval_every": 80}),
              ("image-24k", {"steps": 24_000, "warmup_steps": 600, "eval_every": 1000, "tail_eval_every": 120})),
    "temporal": (("temporal-9k-warmup10-lr5e-4", {"steps": 9000, "warmup_steps": 900, "eval_every": 375,
                                                   "tail_eval_every": 45, "lr": 5e-4}),
                 ("temporal-12k-warmup10-lr5e-4", {"steps": 12_000, "warmup_steps": 1200, "eval_every": 500,
                                                    "tail_eval_every": 60, "lr": 5e-4})),
    "appearance": (("appearance-24k", {"steps": 24_000, "warmup_steps": 1200, "eval_every": 1000, "tail_eval_every": 120}),
                   ("appearance-36k", {"steps": 36_000, "warmup_steps": 1800, "eval_every": 1500, "tail_eval_every": 180})),
}, supersedes={
    "file": V3.file,
    "why": "rule (a) read seven validation points per run: on v3's 40 runs one evaluation scatters by 0.23 points "
           "about the fitted line (median), so a fitted gain errs by about 0.26 points, and runs that no longer gain "
           "pass the 0.3-point threshold all together (27 runs a task) with about 3%. v4 keeps every rule and reads "
           "about 55 points per last quarter (tail_eval_every): about 0.11 points, about 94% together, if the "
           "evaluations scatter as independently as v3's. v3's runs and verdicts stay in results/calibration_v3.",
})

# v5: v4's rules and density (every steps / 200 in the last quarter, two points in the first tenth, the
# same warmup shares and peak rates), longer candidates. Images: the image MoNE's gain fell from +0.90
# (median, 16,000 steps) to +0.34 (24,000), the dense ViT's stayed near +1 from 8,000 to 12,000, so
# 36,000 steps and then 48,000. Temporal, at v4's peak rate of 5e-4: the largest gain stayed near +0.5
# from 9,000 to 12,000 steps, so 18,000 and then 24,000. Appearance: the ViViT's largest gain was +0.94 at
# 24,000 steps, so 72,000 and then 96,000 (the rule fixed before those runs landed: a largest gain above
# 0.9 at 24,000 steps gives these two; 0.45-0.9, 48,000 and 72,000; below 0.45, 36,000 and 48,000).
V5 = Calibration("v5", "2026-12-07", {
    "image": (("image-36k", {"steps": 36_000, "warmup_steps": 900, "eval_every": 1500, "tail_eval_every": 180}),
              ("image-48k", {"steps": 48_000, "warmup_steps": 1200, "eval_every": 2000, "tail_eval_every": 240})),
    "temporal": (("temporal-18k-warmup10-lr5e-4", {"steps": 18_000, "warmup_steps": 1800, "eval_every": 750,
                                                    "tail_eval_every": 90, "lr": 5e-4}),
                 ("temporal-24k-warmup10-lr5e-4", {"steps": 24_000, "warmup_steps": 2400, "eval_every": 1000,
                                                    "tail_eval_every": 120, "lr": 5e-4})),
    "appearance": (("appearance-72k", {"steps": 72_000, "warmup_steps": 3600, "eval_every": 3000, "tail_eval_every": 360}),
                   ("appearance-96k", {"steps": 96_000, "warmup_steps": 4800, "eval_every": 4000, "tail_eval_every": 480})),
}, supersedes={
    "file": V4.file,
    "why": "every v4 candidate that trained failed rule (a) on its first runs, each with a run still gaining in its "
           "last quarter by more than the reading's error (images, MoNE e_c 0.2: +1.01 and +0.79 points at 16,000 steps, "
           "+0.35 and +0.34 at 24,000; temporal, peak rate 5e-4: +0.49 and +0.37 at 9,000 steps, -0.15 and +0.47 at "
           "12,000; appearance, ViViT: +0.69 and +0.94 at 24,000; errors 0.06-0.16 points), and its last appearance "
           "candidate (36,000 steps) would leave about +0.5 at the shrinkage seen. v5 keeps every rule and v4's "
           "density of evaluations and tries longer recipes, chosen from how the gain shrank with the steps in every "
           "committed run. v4's runs and verdicts stay in results/calibration_v4.",
})

CURRENT = V5        # what the queue trains and `status` reports
ALL = (V3, V4, V5)  # every calibration, oldest first: each file stays frozen, each result stays on the page
