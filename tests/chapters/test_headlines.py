"""Where the recalibrated profile's headline claims stand (`mone.chapters.headlines`), from
run files written here: only landed runs count, and each claim pairs the seeds of both arms."""
import dataclasses
import math

from mone import results
from mone.chapters import headlines
from mone.publish import cli
from mone.runs import experiments, plan
from mone.configs import figures, profiles


def _land(cfg, accuracy, *, gflops=1.0, widths=None, learned=True):
  """A run file for cfg, as `loop.train` writes one (only what the chapters read)."""
  if cfg.kind == "matvit":
    evals = [{"e_c": None, "width_index": i, "gflops": gflops * (i + 1) / 4, "accuracy": a} for i, a in enumerate(widths)]
  else:
    evals = [{"e_c": cfg.e_c, "width_index": None, "gflops": gflops, "accuracy": accuracy}]
  loss = math.log(cfg.model.num_classes) * (0.95 if not learned else 0.5)
  results.atomic_write_json(experiments.run_path(cfg), {
      "kind": cfg.kind, "config": dataclasses.asdict(cfg), "evals": evals, "history": [[100, loss]],
      "device": {"kind": "cpu"}})


def test_image_claims_pair_the_landed_seeds_and_skip_the_missing_runs(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  assert headlines.landed() == [] and headlines.headline_claims([]) == []
  assert profiles.image_config("small").model.name == headlines.VARIANT
  for s, (vit, mone) in enumerate([(0.880, 0.878), (0.870, 0.871), (0.875, 0.873)]):
    _land(profiles.image_config("small", kind="vit", seed=s), vit, gflops=2.0)
    _land(profiles.mone_config("small", 0.4, seed=s), mone, gflops=0.9)
    _land(profiles.mone_config("small", 0.2, seed=s), mone - 0.01, gflops=0.5)
    _land(profiles.mone_config("small", 0.2, seed=s, **{"model.router": "random"}), mone - 0.10 - 0.01 * s, gflops=0.5)
  _land(profiles.image_config("small", kind="matvit"), None, gflops=2.0, widths=[0.5, 0.8, 0.85, 0.88])  # seed 0 only
  runs = headlines.landed()
  planned = figures.image_runs()
  missing = headlines.pending(planned)  # MatViT at seeds 1-2 among them; a chapter that trains has none
  assert "MatViT, seed 1" in missing and "ViT, seed 0" not in missing and headlines.pending(planned, train=True) == []
  assert len(missing) == len(planned) - 13
  assert len(runs) == 13 and {b for b, _, _ in runs} >= {"ViT", "MoNE e_c=0.4", "MatViT"}
  by_seed = headlines.curves_by_seed(runs)
  assert [p["e_c"] for p in by_seed[1][headlines.VARIANT, "MoNE"]] == [0.2, 0.4]
  got = {c["id"]: c for c in headlines.headline_claims(runs)}
  assert got["fig3.mone_matches_vit"]["verdict"] == "reproduced" and got["fig3.mone_matches_vit"]["seeds"] == [0, 1, 2]
  assert got["fig3.mone_matches_vit"]["measured"] == -0.1
  assert got["fig3.flops_reduction"]["measured"] == round(2.0 / 0.9, 3)
  # MatViT landed at seed 0 only: one paired seed, inconclusive whatever the gap
  assert got["fig3.mone_beats_matvit"]["n_seeds"] == 1 and got["fig3.mone_beats_matvit"]["verdict"] == "inconclusive"
  assert got["fig6.learned_beats_random.e_c02"]["verdict"] == "reproduced"
  assert not any(i.startswith("fig4.") for i in got)  # no video run landed
  assert all(c["verdict"] == "not testable" for i, c in got.items() if i.startswith("table1."))


def test_table1_compares_mone_with_each_allocation_over_paired_seeds_and_flags_a_stuck_run(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  for s in plan.SEEDS:
    _land(profiles.mone_config("small", 0.4, task="temporal", seed=s), 0.90)
    _land(profiles.video_config("small", "temporal", kind="vit", seed=s), 0.91, gflops=2.0)
  for s in (0, 1):
    _land(profiles.table1_config("small", "uniform", None, seed=s), 0.95)
  _land(profiles.table1_config("small", "greedy", 0.4, seed=0), 0.10, learned=False)
  for s, acc in zip(plan.SEEDS, (0.885, 0.880, 0.889)):
    _land(profiles.table1_config("small", "mod_greedy", 0.4, seed=s), acc)
  got = {c["id"]: c for c in headlines.headline_claims(headlines.landed())}
  assert got["table1.mone04_vs_uniform"]["seeds"] == [0, 1] and got["table1.mone04_vs_uniform"]["verdict"] == "inconclusive"
  assert math.isclose(got["table1.mone04_vs_uniform"]["measured"], -5.0)
  assert "never left" in got["table1.mone04_vs_greedy"]["why"]
  # The paper finds the greedy allocations inferior: MoNE must be more accurate, not only as accurate.
  mod = got["table1.mone04_vs_mod_greedy"]
  assert mod["relation"] == "beats" and mod["verdict"] == "reproduced" and "more accurate than MoD Greedy" in mod["claim"]
  assert got["table1.mone04_vs_uniform"]["relation"] == "no_worse"
  assert got["table1.mone03_vs_proportionate"]["verdict"] == "not testable"  # neither arm landed
  assert "e_c = 0.27" in got["table1.mone03_vs_proportionate"]["claim"]
  assert got["fig4.temporal.mone_no_drop"]["verdict"] == "reproduced"  # -1 point, no worse within 1
  assert got["fig4.temporal.flops_reduction"]["verdict"] == "reproduced"
  assert not any(i.startswith("fig4.appearance") for i in got)


def test_table1_notes_say_when_an_allocation_costs_other_flops_than_mone():
  from mone.chapters import headlines
  assert headlines._flops_note("Greedy", 0.03094, 0.03163, 0.4).endswith("about equal.")
  note = headlines._flops_note("MoD Greedy", 0.03094, 0.02397, 0.4)
  assert "23.97 MFLOPs" in note and "(0.77x)" in note and "costlier" in note
  assert "cheaper" in headlines._flops_note("Uniform", 0.03094, 0.03517, 0.4)
  assert headlines._flops_note("Uniform", None, 0.03517, 0.4) == ""


def test_the_summary_command_reads_only_the_seeds_the_chapters_read(tmp_path, monkeypatch, capsys):
  # A run of the extra seeds that lands before the rest must not move a claim (plan.seeds).
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  plan._single_device.cache_clear()
  for s, (vit, mone) in enumerate([(0.880, 0.878), (0.870, 0.871), (0.875, 0.873), (0.5, 0.9)]):
    _land(profiles.image_config("small", kind="vit", seed=s), vit, gflops=2.0)
    _land(profiles.mone_config("small", 0.4, seed=s), mone, gflops=0.9)
  cli.main(["headlines"])
  out = capsys.readouterr().out
  assert out.startswith(f"8 of {len(plan.runs())} planned runs landed; claims over the seeds the chapters read (0, 1, 2)")
  assert "-0.10 points, 95% CI" in out and "3 seeds" in out  # seed 3's +40 points left out
