"""The pre-registered seed plans, written before any of their runs trained and committed beside
the results: the five-seed plan (`seed_plan`, results/seed_plan.json) with its device amendment
(`amendment`), and the ten-seed plan (`ten_seed_plan`, results/seed_plan_10.json) that freezes
every planned claim's definition (`mone.evidence.preregistration`).

The runs each plan adds and the rule by which the chapters read them are `mone.runs.plan`'s;
`python -m mone.chapters seed-plan` writes a plan.
"""
from pathlib import Path

from mone.evidence import preregistration
from mone.runs import experiments, plan


def seed_plan(chapters: dict[str, list[dict]]) -> dict:
  """The pre-registered plan for `plan.EXTRA_SEEDS`, from the chapters' claims as they stand before
  any of its runs trained (`claims.load()`): every trained claim and the seeds it will be decided
  at, with its verdict and CI now (so the verdicts after can be set beside them), the runs, and
  the rule that reads them (`plan.seeds`). Written once, committed before the runs; a test holds the
  plan's runs to it."""
  planned = {}
  for chapter, rows in chapters.items():
    for c in rows:
      if c["kind"] != "trained":
        continue
      at_three = c["n_seeds"] == len(plan.SEEDS)
      planned[c["id"]] = {
          "chapter": chapter, "seeds_now": c["n_seeds"], "verdict_now": c["verdict"],
          "measured_now": c["measured"], "ci95_now": c["ci95"],
          "seeds_planned": len(plan.SEEDS + plan.EXTRA_SEEDS) if at_three else c["n_seeds"],
          **({} if at_three else {"why_not_more": "a single-seed study (one run per arm at seed 0): "
                                                  "not part of the headline runs given more seeds"})}
  return {
      "fixed_on": "2026-11-28",
      "seeds": list(plan.SEEDS + plan.EXTRA_SEEDS),
      "rule": ("Every headline run (the image runs of Figures 3, 6 and 7, the temporal and Table 1 runs, "
               "the MatViViT and appearance runs) trains at seeds 3 and 4, so that every trained claim now "
               "decided from 3 paired seeds is decided from 5. The chapters read seeds 3 and 4 only when all "
               f"{len(plan.extra_runs())} runs have landed (mone.runs.plan.seeds): no verdict is taken on a "
               "subset, and training does not stop on a result."),
      "claims": planned,
      "runs": [{"label": label, "run_file": experiments.run_path(cfg).name} for label, cfg in plan.extra_runs()],
  }


def ten_seed_plan(chapters: dict[str, list[dict]]) -> dict:
  """The pre-registered plan for `plan.SEEDS_TO_TEN`, from the chapters' claims as they stand at five
  seeds, before any of its runs trained (`claims.load()`, with the family-wise verdicts): its
  runs (each with the weights file it commits), the rule that reads them, and every trained claim
  with an interval frozen (`preregistration.frozen`: definition, its hash, where it stands, and its
  expected power at 10 seeds). Written once and committed before the runs; `make figures` holds the
  chapters to its definitions (`preregistration.check`)."""
  n = len(plan.SEEDS + plan.EXTRA_SEEDS + plan.SEEDS_TO_TEN)
  ten = f"{plan.SEEDS_TO_TEN[0]}-{plan.SEEDS_TO_TEN[-1]}"
  return {
      "fixed_on": "2026-12-01",
      "seeds": list(plan.SEEDS_TO_TEN),
      "decided_at": list(plan.SEEDS + plan.EXTRA_SEEDS + plan.SEEDS_TO_TEN),
      "rule": (f"Every headline run of the five-seed plan trains at seeds {ten} with the "
               "same config, only its seed changed, on the CPU (one pinned core per run, float32 matmuls in full "
               "precision), as seeds 3 and 4 did, and commits its run file and its final parameters. The chapters read "
               f"seeds {ten} only when all {len(plan.ten_seed_runs())} runs have been committed "
               "(mone.runs.plan.seeds); until then they read seeds 0-4. No run is added or dropped, and training "
               f"does not stop on a result. Every claim below is then decided at {n} paired seeds with the definition "
               "frozen here; make figures fails on a definition that no longer hashes to it unless the change is "
               "recorded as a deviation (mone.evidence.preregistration), and the book then shows this definition's "
               "result beside the changed one."),
      "power_note": (f"expected_at_{n}_seeds is an estimate, not a promise: the share of simulated sets of {n} paired "
                     "seeds whose 95% t-interval decides the claim each way, if the mean and spread it shows at five seeds "
                     "were the truth (preregistration.expected_power). Those are themselves noisy estimates from five "
                     "seeds."),
      "notes": {"fig1.top_tokens_on_object": (
          "The five-seed plan decided this claim on the full expert's router probability; the chapter changed to its "
          "logit (the paper's Figure 1 score) after that plan and before any run of seeds 3-4 landed. This plan freezes "
          "the logit, and the chapter computes the probability's margins beside it, so the five-seed plan's definition "
          "can be shown at ten seeds too.")},
      "claims": preregistration.frozen(chapters, n),
      "runs": [{"label": label, "run_file": experiments.run_path(cfg).name,
                "weights_file": experiments.weights_path(cfg).name} for label, cfg in plan.ten_seed_runs()],
  }


def amendment(twins_so_far: dict) -> dict:
  """The plan's amendment for the device effect (see `plan.TWINS`), recorded beside the plan it amends,
  with the device twins it was decided on (`devices.summary` of them) and the twins it adds."""
  return {"fixed_on": "2026-11-28",
          "before_any_run_of_seeds": list(plan.EXTRA_SEEDS),
          "why": "Twins of GPU-trained runs retrained on the CPU at the same seed differ from their originals: the "
                 "device changes a run's trajectory, and a systematic shift of a few points is not ruled out by the "
                 "twins so far, so a comparison between arms trained on different devices could measure it.",
          "decided_on": twins_so_far,
          "rule": ("Every headline run of seeds 0-2 that trained on a GPU is retrained on the CPU "
                   "(results/device_twins/cpu/). The chapters read those CPU twins in place of the GPU runs, "
                   "together with seeds 3 and 4, once all of them have landed (mone.runs.plan.single_device); "
                   "every paired difference is then between two CPU runs. New runs of the profile train on the CPU. "
                   "The device effect is measured on all twins once they have landed (mone.chapters.devices)."),
          "twin_runs": [{"label": label, "run_file": experiments.run_path(cfg).name}
                        for label, cfg in plan.twin_runs()]}
