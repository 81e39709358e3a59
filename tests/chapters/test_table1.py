"""Chapter 02's tables and claims (`mone.chapters.table1`), from run metrics built here: Eq. 3's
distributions, the Table 1 rows of each landed run, and the verdicts over paired seeds."""
import dataclasses
import math

import numpy as np
import pytest

from mone import results
from mone.evidence import declarations, stats, verdicts
from mone.chapters import table1
from mone.runs import experiments, plan
from mone.configs import profiles


def _metrics(e_c, accuracy, *, gflops=0.03, learned=True, num_examples=2000):
  """A Table 1 run's metrics (what the chapter reads): one evaluation at its training e_c."""
  loss = math.log(8) * (0.5 if learned else 0.95)
  return {"kind": "mone", "config": {"e_c": e_c, "adaptive": False, "iso_flops": False,
                                     "model": {"name": "XS/4x2", "num_classes": 8}},
          "evals": [{"e_c": e_c, "width_index": None, "gflops": gflops, "accuracy": accuracy, "num_examples": num_examples}],
          "history": [[100, loss]]}


def _runs(seeds=(0, 1, 2), **accuracy):
  """(label, seed, metrics) as `headlines.landed` gives them: each model of `accuracy` (keyword:
  its run label's key below) at every seed, at accuracy + 0.001 * seed."""
  runs = {"mone03": ("temporal: MoNE e_c=0.3", 0.3, 0.026), "mone04": ("temporal: MoNE e_c=0.4", 0.4, 0.031),
          "proportionate": ("Table 1: Proportionate", 0.2667, 0.025), "uniform": ("Table 1: Uniform", 0.4688, 0.036),
          "mod_greedy": ("Table 1: MoD Greedy e_c=0.4", 0.4, 0.024), "greedy": ("Table 1: Greedy e_c=0.4", 0.4, 0.032)}
  return [(runs[k][0], s, _metrics(runs[k][1], a + 0.001 * s, gflops=runs[k][2])) for k, a in accuracy.items() for s in seeds]


def test_eq3_distributions_meet_their_budget_and_sum_to_one():
  grid, dist, widths, rows = table1.distributions()
  assert widths == ["D/8", "D/4", "D/2", "D"] and grid[0] == 0.15 and grid[-1] == 1.0 and len(grid) == 18
  assert np.allclose(dist.sum(axis=1), 1.0, atol=1e-6)
  assert [r["check_e_c"] for r in rows] == pytest.approx(list(grid), abs=1e-4)
  assert list(rows[0]) == ["e_c", "c_1 (D/8)", "c_2 (D/4)", "c_3 (D/2)", "c_4 (D)", "check_e_c"]
  assert table1.widths(2) == ["D/2", "D"]


def test_alternatives_give_each_model_its_budget():
  lines = table1.alternatives()
  assert len(lines) == len(table1.TABLE) == 6
  assert lines[0] == "Proportionate  e_c=0.267  c = [0.533, 0.267, 0.133, 0.067]"
  assert lines[2].startswith("MoD Greedy     e_c=0.400  c = [0.600, 0.000, 0.000, 0.400]")  # dropped tokens cost nothing
  assert lines[5].startswith("MoNE           e_c=0.400")


def test_budget_claims_check_the_static_allocations_against_the_paper():
  got = {c["id"]: c for c in table1.budget_claims()}
  assert got["table1.proportionate_budget"]["measured"] == pytest.approx(0.2667, abs=1e-4)
  assert got["table1.uniform_budget"]["measured"] == pytest.approx(0.4688, abs=1e-4)
  assert all(c["verdict"] == "reproduced" and c["kind"] == "arithmetic" for c in got.values())


def test_table_reads_each_run_at_its_training_allocation_in_table_order():
  runs = _runs(seeds=(0, 1), mone04=0.90, proportionate=0.93)
  runs[0][2]["evals"].insert(0, {"e_c": 0.2, "width_index": None, "gflops": 0.01, "accuracy": 0.5, "num_examples": 2000})
  rows = table1.table(runs, seeds=(0, 1, 2))  # seed 2 has not landed: left out
  assert [(r["distribution"], r["seed"]) for r in rows] == [("Proportionate", 0), ("Proportionate", 1), ("MoNE", 0), ("MoNE", 1)]
  mone = rows[2]
  assert mone["e_c"] == 0.4 and mone["accuracy_pct"] == pytest.approx(90.0) and mone["budget"] == "dynamic"
  assert mone["stderr_pct"] == pytest.approx(100 * math.sqrt(0.9 * 0.1 / 2000))
  assert rows[0]["budget"] == "static" and rows[0]["paper_ssv2_pct"] == 64.3 and rows[0]["learned"] is True
  assert list(rows[0]) == ["distribution", "allocation", *table1.COLUMNS[1:]]
  assert table1.mone_means(rows).startswith("MoNE e_c=0.4 90.1% (paper 64.6), e_c=0.3 nan% (paper 64.2)")


def test_by_arm_names_each_arm_by_its_budget_and_keeps_mone_apart_by_e_c():
  rows = table1.table(_runs(seeds=(0,), mone03=0.89, mone04=0.90, uniform=0.91), seeds=(0,))
  arm_rows, arms = table1.by_arm(rows)
  assert arms == ["Proportionate\ne_c=0.27", "Uniform\ne_c=0.47", "MoD Greedy\ne_c=0.40", "Greedy\ne_c=0.40",
                  "MoNE\ne_c=0.30", "MoNE\ne_c=0.40"]
  assert [(r["arm"], r["accuracy_pct"]) for r in arm_rows] == [("Uniform\ne_c=0.47", pytest.approx(91.0)),
                                                               ("MoNE\ne_c=0.30", pytest.approx(89.0)),
                                                               ("MoNE\ne_c=0.40", pytest.approx(90.0))]


def test_claims_without_runs_are_not_testable_but_the_budgets_are_decided():
  got = table1.chapter_claims([])
  assert [c["id"] for c in got] == ["table1.proportionate_budget", "table1.uniform_budget", "table1.mone03_vs_proportionate",
                                    "table1.mone04_vs_uniform", "table1.mone04_vs_mod_greedy", "table1.mone04_vs_greedy"]
  assert [c["verdict"] for c in got] == ["reproduced"] * 2 + ["not testable"] * 4


def test_claims_compare_mone_with_each_allocation_over_paired_seeds(monkeypatch):
  runs = _runs(mone03=0.90, mone04=0.92, proportionate=0.905, uniform=0.95, mod_greedy=0.88, greedy=0.915)
  got = {c["id"]: c for c in table1.chapter_claims(runs)}
  # within 1 point below Proportionate: "at least as accurate"
  assert got["table1.mone03_vs_proportionate"]["verdict"] == "reproduced"
  assert got["table1.mone03_vs_proportionate"]["measured"] == pytest.approx(-0.5)
  assert got["table1.mone04_vs_uniform"]["verdict"] == "not reproduced"  # 3 points below
  assert got["table1.mone04_vs_mod_greedy"]["verdict"] == "reproduced"  # 4 points above
  assert got["table1.mone04_vs_greedy"]["measured"] == pytest.approx(0.5) and got["table1.mone04_vs_greedy"]["n_seeds"] == 3
  # two seeds decide nothing; the tolerance is the declared one
  two = {c["id"]: c for c in table1.chapter_claims([r for r in runs if r[1] < 2])}
  assert two["table1.mone03_vs_proportionate"]["verdict"] == "inconclusive"
  declared = declarations.rule
  monkeypatch.setattr(declarations, "rule", lambda cid: ("no_worse", 0.25) if cid.endswith("_vs_proportionate") else declared(cid))
  strict = {c["id"]: c for c in table1.chapter_claims(runs)}
  assert strict["table1.mone03_vs_proportionate"]["verdict"] == "not reproduced"


def test_a_run_on_the_chance_plateau_makes_its_comparison_inconclusive():
  runs = _runs(mone04=0.92, greedy=0.10)
  runs = [(b, s, _metrics(0.4, 0.10, learned=False)) if b.startswith("Table 1") else (b, s, m) for b, s, m in runs]
  assert table1.table(runs, (0,))[0]["learned"] is False
  got = {c["id"]: c for c in table1.chapter_claims(runs)}
  assert got["table1.mone04_vs_greedy"]["verdict"] == "inconclusive" and "never left" in got["table1.mone04_vs_greedy"]["why"]


def test_a_run_that_never_left_chance_is_no_measurement_and_robust_summaries_leave_it_out():
  # Seed 3's Greedy run never left chance (MoNE at 92%, Greedy at 10%); seeds 0-2 and 4 learned.
  seeds = (0, 1, 2, 3, 4)
  runs = _runs(seeds, mone04=0.92, greedy=0.90, uniform=0.91)
  runs = [(b, s, _metrics(0.4, 0.10, learned=False)) if (b, s) == ("Table 1: Greedy e_c=0.4", 3) else (b, s, m)
          for b, s, m in runs]
  got = {c["id"]: c for c in table1.chapter_claims(runs)}
  greedy, uniform = got["table1.mone04_vs_greedy"], got["table1.mone04_vs_uniform"]
  assert greedy["never_left_chance"] == [3] and greedy["verdict"] == "inconclusive"
  kept = [d for s, d in zip(greedy["seeds"], greedy["per_seed"]) if s != 3]
  assert greedy["robust"] == stats.robust(kept) and greedy["robust"]["n"] == 4
  assert max(greedy["per_seed"]) > 80 and greedy["robust"]["hodges_lehmann"] == pytest.approx(2.0)  # 92 - 90 points
  cell = verdicts.measured_cell(greedy)
  assert cell.startswith("Not a measurement: the compared run of seed 3 never left the chance plateau, so the mean "
                         "over all 5 seeds is no effect size.")
  assert "Exploratory, robust to single runs, over 4 seeds: median +2.00, Hodges-Lehmann +2.00 points" in cell
  assert "95% CI [" not in cell.split("Hodges-Lehmann")[0] and "+83" not in cell  # no number from seed 3's run
  # A comparison whose runs all learned shows its frozen interval and the robust summaries beside it.
  assert "never_left_chance" not in uniform and uniform["robust"]["n"] == 5
  assert verdicts.measured_cell(uniform).endswith(verdicts.robust_text(uniform))


def _land_widths(seed, dense_val, quarter_val):
  """The temporal task's dense ViViT and MatViViT run files at seed, with their validation accuracies."""
  for cfg, extra in ((profiles.video_config("small", "temporal", kind="vit", seed=seed), {"accuracy": dense_val, "curve": [
      {"step": 10, "val_accuracy": dense_val, "train_accuracy": dense_val}]}),
                     (profiles.video_config("small", "temporal", kind="matvit", seed=seed), {"accuracy": dense_val, "val_evals": [
                         {"width_index": i, "accuracy": a} for i, a in enumerate((0.5, quarter_val, 0.9, dense_val))]})):
    results.atomic_write_json(experiments.run_path(cfg), {
        "name": "moving_temporal", "kind": cfg.kind, "config_hash": f"h{seed}{cfg.kind}", "config": dataclasses.asdict(cfg),
        "train_steps": 10, "evals": [{"e_c": None, "width_index": i, "gflops": 0.01, "accuracy": 0.9} for i in range(4)],
        "history": [[10, 0.1]], "device": {"kind": "cpu"}, **extra})


def test_the_caveat_follows_how_well_the_temporal_task_separates_widths(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  seeds = plan.seeds("small", 0)
  assert table1.caveats("small", seeds) == []  # no width runs: unmeasured, no caveat
  for s in seeds[:3]:
    _land_widths(s, 0.95, 0.93)
  (caveat,) = table1.caveats("small", seeds)
  assert "2.0 points below the dense ViViT" in caveat and "mean of 3 seeds" in caveat and table1.CAVEAT in caveat
  for s in seeds[:3]:
    _land_widths(s, 0.95, 0.85)
  assert table1.caveats("small", seeds) == []  # 10 points: the task discriminates


def test_far_below_names_the_runs_a_mean_follows_and_counts_the_baselines():
  seeds = (0, 1, 2, 3, 4)
  runs = _runs(seeds, mone04=0.92, uniform=0.91)
  runs = [(b, s, _metrics(0.4688, 0.14, learned=False, gflops=0.036)) if (b, s) == ("Table 1: Uniform", 2)
          else (b, s, _metrics(0.4, 0.80, gflops=0.031)) if (b, s) == ("temporal: MoNE e_c=0.4", 4) else (b, s, m)
          for b, s, m in runs]
  rows = table1.table(runs, seeds)
  assert [(r["distribution"], r["seed"]) for r in table1.far_below(rows)] == [("Uniform", 2), ("MoNE", 4)]
  assert table1.far_below_text(rows) == (
      "2 of 10 runs ended more than 5 points below their arm's median, 1 of them in baseline arms: Uniform seed 2: "
      "14.0% (its arm's median 91.1%, never left chance); MoNE e_c=0.4 seed 4: 80.0% (its arm's median 92.1%).")
  assert table1.far_below_text(table1.table(_runs(seeds, mone04=0.92), seeds)).startswith("No run ended")
