"""The recalibrated small profile's run plan (`mone.runs.plan`)."""
import collections
import dataclasses

import pytest

from mone import capacity, flops, results
from mone.evidence import seed_plans
from mone.runs import experiments, plan, run_times
from mone.configs import figures, profiles, reads
pass


def test_every_planned_run_is_distinct_and_the_headlines_have_every_seed():
  runs = plan.runs()
  hashes = [results.config_hash(cfg) for _, cfg in runs]
  assert len(set(hashes)) == len(runs)
  seeds = collections.defaultdict(set)
  for label, cfg in runs:
    base, _, seed = label.rpartition(", seed ")
    assert int(seed) == cfg.seed
    seeds[base].add(cfg.seed)
  for base in ("ViT", "MoNE e_c=0.4", "MatViT", "MoD", "MoNE e_c=0.3", "MoNE e_c=0.2", "MoNE e_c=0.2, random router",
               "MoNE e_c=0.6", "MoNE e_c=0.3, random router") + tuple(f"{task}: {m}" for task in ("temporal", "appearance") for m in ("ViViT", "MoNE e_c=0.4", "MatViViT")) \
      + ("temporal: MoNE e_c=0.3", "Table 1: Proportionate", "Table 1: Uniform", "Table 1: MoD Greedy e_c=0.4", "Table 1: Greedy e_c=0.4"):
    assert seeds[base] == set(plan.SEEDS + plan.EXTRA_SEEDS + plan.SEEDS_TO_TEN), base
  assert len(plan.SEEDS) >= 3 and not set(plan.SEEDS) & set(plan.EXTRA_SEEDS)


def test_a_run_is_named_alike_by_its_run_file_weights_and_work_folder():
  # One name per run (`results.run_id`): every committed run file is named by the config it records.
  label, cfg = plan.runs()[0]
  names = {experiments.run_path(cfg).stem, experiments.weights_path(cfg).stem, experiments.workdir(cfg).name}
  assert names == {results.run_id(cfg)} and results.run_id(cfg).endswith("-" + results.config_hash(cfg))
  committed = sorted((results.RESULTS / "runs").glob("*.json"))[:20]
  assert committed and all(p.stem == "-".join([(m := results.read_json(p))["name"], m["kind"], m["config_hash"]])
                           for p in committed)
  # and its readers find a recipe's runs of a kind by the same name: digits64's MoD runs, not its MoNE's
  mod = results.run_files(results.RESULTS / "runs", "digits64", "mod")
  assert mod and {results.read_json(p)["kind"] for p in mod} == {"mod"}
  assert len(mod) == sum(1 for p in (results.RESULTS / "runs").glob("*.json")
                         if (m := results.read_json(p))["name"] == "digits64" and m["kind"] == "mod")


def test_the_chapters_read_the_extra_seeds_only_once_every_planned_run_has_landed(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  extra = plan.extra_runs()
  assert extra and {cfg.seed for _, cfg in extra} == set(plan.EXTRA_SEEDS)
  assert plan.seeds("small") == plan.SEEDS and plan.extra_landed() == (0, len(extra))
  (tmp_path / "runs").mkdir()
  for _, cfg in extra[:-1]:
    experiments.run_path(cfg).write_text("{}")
  plan._single_device.cache_clear()  # answered once per process: here files land between questions
  assert plan.seeds("small") == plan.SEEDS  # one run short: still the first three
  assert plan.extra_landed() == (len(extra) - 1, len(extra))
  experiments.run_path(extra[-1][1]).write_text("{}")
  plan._single_device.cache_clear()
  assert plan.seeds("small") == plan.SEEDS + plan.EXTRA_SEEDS  # no GPU-trained run here: no twin to wait for
  assert plan.seeds("smoke") == (0, 1) and plan.seeds("paper", 7) == (7,)


def test_gpu_trained_runs_get_cpu_twins_and_the_chapters_read_them_only_with_the_extra_seeds(tmp_path, monkeypatch):
  import json
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  (tmp_path / "runs").mkdir()
  by_label = dict(plan.runs())
  gpu = {"device": {"kind": "NVIDIA H100", "platform": "gpu"}, "accuracy": 0.9}
  cpu = {"device": {"kind": "cpu", "platform": "cpu"}, "accuracy": 0.8}
  vit, mone = experiments.run_path(by_label["ViT, seed 0"]), experiments.run_path(by_label["MoNE e_c=0.4, seed 1"])
  study = experiments.run_path(by_label["MoNE e_c=0.3, 2 routers, seed 0"])
  vit.write_text(json.dumps(cpu)), mone.write_text(json.dumps(gpu)), study.write_text(json.dumps(gpu))
  assert [label for label, _ in plan.twin_runs()] == ["MoNE e_c=0.4, seed 1"]  # the headline runs'
  assert [label for label, _ in plan.study_twin_runs()] == ["MoNE e_c=0.3, 2 routers, seed 0"]  # and a study's, apart
  resumed = {"device": {"kind": "NVIDIA H200", "platform": "gpu"},
             "trained_on": [{"device": "unrecorded", "from_step": 0, "to_step": 7750}, {"device": gpu["device"], "from_step": 7750, "to_step": 8000}]}
  assert plan.gpu_trained(gpu) and not plan.gpu_trained(cpu) and plan.gpu_trained(resumed)
  assert not plan.gpu_trained({"trained_on": [{"device": "cpu, 1 of 2 cores"}], "device": gpu["device"]})
  twin = plan.twin_path(mone)
  assert twin == tmp_path / "device_twins" / "cpu" / "runs" / mone.name
  twin.parent.mkdir(parents=True)
  twin.write_text(json.dumps(cpu))
  plan._single_device.cache_clear()
  assert plan.reading(mone) == mone  # the extra seeds have not landed: the committed run, as before
  n = len(plan.extra_runs())
  assert plan.progress() == {"twins": (1, 1), "extra": (0, n), "single_device": False, "ten": (0, 100)}
  assert plan.progress_note(plan.progress()).startswith(f"1 of 1 CPU twins and 0 of {n} runs of seeds 3-4 have been committed. Until all")
  for _, cfg in plan.extra_runs():
    experiments.run_path(cfg).write_text(json.dumps(cpu))
  plan._single_device.cache_clear()
  assert plan.reading(mone) == twin and plan.reading(vit) == vit and plan.seeds("small") == plan.SEEDS + plan.EXTRA_SEEDS
  assert plan.progress_note(plan.progress()).startswith(f"All 1 CPU twins and all {n} runs of seeds 3-4 have been committed")
  assert "0 of the 100 runs of seeds 5-9" in plan.progress_note(plan.progress())


def test_the_committed_seed_plan_names_the_runs_the_queue_trains():
  # The plan was fixed before its runs trained: the queue must train exactly what it lists.
  committed = results.read_json(results.RESULTS / "seed_plan.json")
  assert [r["run_file"] for r in committed["runs"]] == [experiments.run_path(cfg).name for _, cfg in plan.extra_runs()]
  assert committed["seeds"] == list(plan.SEEDS + plan.EXTRA_SEEDS)
  # its amendment: the CPU twins of every GPU-trained headline run of the first seeds
  assert [r["run_file"] for r in committed["amendment"]["twin_runs"]] == [experiments.run_path(cfg).name for _, cfg in plan.twin_runs()]
  three = [c for c in committed["claims"].values() if c["seeds_now"] == len(plan.SEEDS)]
  assert three and all(c["seeds_planned"] == 5 for c in three)


def test_seed_plan_plans_five_seeds_for_three_seed_claims_and_keeps_single_seed_studies():
  chapters = {"03": [{"id": "a", "kind": "trained", "n_seeds": 3, "verdict": "inconclusive", "measured": 1.0, "ci95": [-1, 3]},
                     {"id": "b", "kind": "trained", "n_seeds": 1, "verdict": "inconclusive", "measured": 2.0, "ci95": None},
                     {"id": "c", "kind": "arithmetic", "n_seeds": None, "verdict": "reproduced", "measured": 2.2, "ci95": None}]}
  got = seed_plans.seed_plan(chapters)["claims"]
  assert set(got) == {"a", "b"}
  assert got["a"]["seeds_planned"] == 5 and got["a"]["verdict_now"] == "inconclusive" and got["a"]["ci95_now"] == [-1, 3]
  assert got["b"]["seeds_planned"] == 1 and "why_not_more" in got["b"]


def test_planned_runs_have_wide_experts_a_validation_split_and_one_device():
  for label, cfg in figures.image_runs():
    assert capacity.expert_widths(cfg.model.width, cfg.model.num_experts)[0] >= 16, label
    assert cfg.num_val > 0 and cfg.eval_every > 0 and cfg.num_test >= 5000, label
    assert cfg.num_devices == 1, label
    if cfg.kind == "mone":
      assert cfg.eval_e_c == profiles.grid("small").eval_e_c, label
      assert cfg.model.alpha_bounded, label  # Eq. 1's alpha in [0, 1), as the paper


def test_the_adaptive_and_iso_flops_runs_spend_the_dense_runs_training_flops():
  by_label = dict(figures.image_runs())
  vit = by_label["ViT, seed 0"]
  for label in ("MoNE adaptive, isoFLOPs, seed 0", "MoNE e_c=0.2, isoFLOPs, seed 0"):
    cfg = by_label[label]
    spent = flops.num_train_steps(cfg) * flops.train_step_gflops(cfg)
    dense = flops.num_train_steps(vit) * flops.train_step_gflops(vit)
    assert flops.num_train_steps(cfg) > vit.steps
    assert abs(spent / dense - 1) < 0.01, (label, spent / dense)


def test_planned_video_runs_have_a_validation_split_and_the_papers_alpha():
  from mone.data.moving_digits import NUM_CLASSES
  for label, cfg in figures.video_runs():
    assert cfg.dataset == "moving_digits" and cfg.num_val > 0 and cfg.eval_every > 0 and cfg.num_test >= 2000, label
    assert cfg.num_devices == 1 and cfg.model.alpha_bounded and not cfg.model.head_zeroinit, label
    assert cfg.model.num_classes == NUM_CLASSES[cfg.video_task], label
    if cfg.kind == "mone" and cfg.allocation == "mone":
      assert cfg.eval_e_c == profiles.grid("small").eval_e_c, label
  static = {cfg.allocation: cfg.e_c for label, cfg in figures.video_runs() if label.startswith("Table 1") and cfg.seed == 0}
  assert static["proportionate"] == pytest.approx(0.27, abs=0.005) and static["uniform"] == pytest.approx(0.47, abs=0.005)
  with pytest.raises(ValueError, match="task must be one of"):
    profiles.video_config("small", "kinetics")


def test_the_queue_keeps_the_router_figures_weights_within_a_few_megabytes():
  import jax
  import numpy as np

  from mone.train import steps
  labels = {label for label, cfg in plan.runs() if plan.keeps_router_weights(cfg)}
  # Figure 1 (MoNE e_c = 0.4) and Figure 7 (e_c = 0.3, learned and random router, image and video)
  assert {"MoNE e_c=0.4, seed 0", "MoNE e_c=0.3, seed 0", "MoNE e_c=0.3, random router, seed 0",
          "temporal: MoNE e_c=0.3, seed 0"} <= labels
  assert not any(l.startswith(("ViT", "MatViT", "MoD")) or "router before block" in l or "adaptive" in l or "Table 1" in l for l in labels)
  total, full, shapes_of = 0, 0, {}  # the shapes hang on the model and its kind, not on the seed
  for label, cfg in plan.runs():
    if plan.keeps_router_weights(cfg) or plan.keeps_weights(cfg):
      if (cfg.kind, cfg.model) not in shapes_of:
        shapes_of[cfg.kind, cfg.model] = jax.eval_shape(
            lambda: steps.init_params(cfg, steps.build_model(cfg), np.zeros(steps.input_shape(cfg), np.float32)))
      shapes = shapes_of[cfg.kind, cfg.model]
      if plan.keeps_weights(cfg):  # every parameter, which holds the router's inputs too
        full += sum(4 * np.prod(a.shape) for a in jax.tree.leaves(shapes))
      else:
        total += sum(4 * np.prod(a.shape) for k in experiments.ROUTER_INPUTS for a in jax.tree.leaves(shapes[k]))
  assert total < 8 * 2**20, f"{total / 2**20:.1f} MiB of router weights"  # five seeds: about 5 MiB
  # the ten-seed plan's 100 runs, every parameter in float32: about 200 MiB before compression
  assert full < 256 * 2**20, f"{full / 2**20:.1f} MiB of the ten-seed plan's weights"


def test_the_ten_seed_plan_keeps_every_parameter_of_each_of_its_runs_and_reads_them_only_all_together(tmp_path, monkeypatch):
  ten = plan.ten_seed_runs()
  assert len(ten) == 100 and {cfg.seed for _, cfg in ten} == set(plan.SEEDS_TO_TEN)
  assert all(plan.keeps_weights(cfg) for _, cfg in ten)
  assert not any(plan.keeps_weights(cfg) for _, cfg in plan.runs() if cfg.seed not in plan.SEEDS_TO_TEN)
  # the same configs as seeds 0-4 but the seed
  earlier = {(label.rpartition(", seed ")[0], results.config_hash(dataclasses.replace(cfg, seed=0))) for label, cfg in plan.runs()
             if cfg.seed in plan.SEEDS}
  assert all((label.rpartition(", seed ")[0], results.config_hash(dataclasses.replace(cfg, seed=0))) in earlier for label, cfg in ten)
  # a results folder with every earlier run landed reads seeds 5-9 only once all 100 have landed
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  monkeypatch.setattr(plan, "single_device", lambda: True)
  for _, cfg in plan.runs():
    if cfg.seed not in plan.SEEDS_TO_TEN:
      experiments.run_path(cfg).parent.mkdir(parents=True, exist_ok=True)
      experiments.run_path(cfg).write_text("{}")
  for i, (_, cfg) in enumerate(ten):
    assert plan.seeds("small") == plan.SEEDS + plan.EXTRA_SEEDS
    plan._ten_seeds_landed.cache_clear()
    experiments.run_path(cfg).write_text("{}")
    plan._ten_seeds_landed.cache_clear()
  assert plan.seeds("small") == plan.SEEDS + plan.EXTRA_SEEDS + plan.SEEDS_TO_TEN


def test_the_committed_ten_seed_plan_names_the_queues_runs_and_freezes_every_claim_with_an_interval():
  from mone.evidence import claims, preregistration
  frozen = results.read_json(results.RESULTS / "seed_plan_10.json")
  assert [r["run_file"] for r in frozen["runs"]] == [experiments.run_path(cfg).name for _, cfg in plan.ten_seed_runs()]
  assert [r["weights_file"] for r in frozen["runs"]] == [experiments.weights_path(cfg).name for _, cfg in plan.ten_seed_runs()]
  assert set(frozen["claims"]) == set(preregistration.planned(claims.load(results.RESULTS)))
  assert preregistration.check(frozen, "seed_plan_10.json", claims.load(results.RESULTS)) == []


def test_estimate_seconds_scales_the_fastest_finished_run_of_the_same_name_and_kind_by_flops():
  vit = profiles.image_config("small", kind="vit")
  gflops = flops.train_gflops(vit)
  finished = [{"name": vit.name, "kind": "vit", "device": {"kind": "cpu"}, "train_steps": 8000, "train_gflops": gflops,
               "wall_time_s": 4000.0, "resumed_from_step": 0},
              # resumed half-way: 2,000 s for the last half, the faster rate
              {"name": vit.name, "kind": "vit", "device": {"kind": "cpu"}, "train_steps": 8000, "train_gflops": gflops,
               "wall_time_s": 1500.0, "resumed_from_step": 4000},
              {"name": vit.name, "kind": "vit", "device": {"kind": "gpu"}, "train_steps": 8000, "train_gflops": gflops,
               "wall_time_s": 10.0, "resumed_from_step": 0}]
  assert run_times.estimate_seconds(profiles.image_config("small", kind="vit", seed=1), finished) == pytest.approx(3000.0)
  assert run_times.estimate_seconds(profiles.image_config("small", kind="vit", steps=4000), finished) == pytest.approx(1500.0)
  # resumed half-way, but timed from step 0 (newer code keeps the earlier parts' time): 2,900 s in all
  finished.append({"name": vit.name, "kind": "vit", "device": {"kind": "cpu"}, "train_steps": 8000,
                   "train_gflops": gflops, "wall_time_s": 2900.0, "resumed_from_step": 4000, "timed_from_step": 0})
  assert run_times.estimate_seconds(profiles.image_config("small", kind="vit", seed=1), finished) == pytest.approx(2900.0)
  assert run_times.estimate_seconds(profiles.mone_config("small", 0.4), finished) is None  # no finished MoNE run
  # The same config at another seed is the estimate, even where another config runs faster per FLOP
  # (a MoNE run at a lower e_c runs slower per FLOP)
  mone_run = lambda c, wall: {"name": c.name, "kind": "mone", "seed": c.seed, "config_hash": results.config_hash(c),
                              "device": {"kind": "cpu"}, "train_steps": c.steps, "train_gflops": flops.train_gflops(c),
                              "wall_time_s": wall, "timed_from_step": 0}
  finished += [mone_run(profiles.mone_config("small", 0.4), 1000.0), mone_run(profiles.mone_config("small", 0.2), 900.0)]
  assert run_times.estimate_seconds(profiles.mone_config("small", 0.2, seed=2), finished) == pytest.approx(900.0)
  assert run_times.estimate_seconds(profiles.mone_config("small", 0.4, seed=1), finished) == pytest.approx(1000.0)
  fastest = min(1000.0 / flops.train_gflops(profiles.mone_config("small", 0.4)), 900.0 / flops.train_gflops(profiles.mone_config("small", 0.2)))
  assert run_times.estimate_seconds(profiles.mone_config("small", 0.3), finished) == pytest.approx(fastest * flops.train_gflops(profiles.mone_config("small", 0.3)))
  assert run_times.estimate_seconds(profiles.video_config("small", "temporal", kind="vit"), finished) is None


def test_recompute_seconds_counts_cpu_runs_as_measured_and_estimates_the_others():
  vit0, vit1, vit2, mone0 = profiles.image_config("small", kind="vit"), profiles.image_config("small", kind="vit", seed=1), profiles.image_config("small", kind="vit", seed=2), profiles.mone_config("small", 0.4)
  run = lambda c, device, wall, **kw: {"name": c.name, "kind": c.kind, "seed": c.seed, "config_hash": results.config_hash(c),
                                       "device": {"kind": device}, "train_steps": c.steps, "train_gflops": flops.train_gflops(c),
                                       "wall_time_s": wall, "timed_from_step": 0, **kw}
  finished = [run(vit0, "cpu", 3600.0), run(vit1, "NVIDIA H100", 60.0), run(vit2, "cpu", 1800.0, timed_from_step=4000)]
  got = run_times.recompute_seconds([("a", vit0), ("b", vit1), ("c", vit2), ("d", mone0)], finished)
  # vit0 measured; vit1 (GPU) and vit2 (timed from step 4000 only) estimated from vit0's rate per FLOP... or vit2's
  # last half (1800 s for 4000 steps: 3600 s for the whole); mone0 has no CPU run of its name and kind
  assert got["runs_measured"] == 1 and got["measured"] == 3600.0
  assert got["runs_estimated"] == 2 and got["estimated"] == pytest.approx(2 * 3600.0)
  assert got["runs_unknown"] == 1


def test_the_plan_still_names_the_committed_runs():
  # A change to the recipes, or to how the plan builds its configs, would rename the planned runs
  # (config hashes) and silently orphan the trained ones: these run files are committed.
  planned = {label: experiments.run_path(cfg).name for label, cfg in plan.runs()}
  committed = {"ViT, seed 0": "digits64-vit-c866f09e75ca.json",
               "temporal: ViViT, seed 2": "moving_temporal-vit-ebdde1b3a364.json",
               "appearance: ViViT, seed 0": "moving_appearance-vit-29d4f66e7b79.json"}
  for label, name in committed.items():
    assert planned[label] == name, label
    assert (results.RESULTS / "runs" / name).is_file(), name


def test_device_table_counts_runs_hours_and_jax_versions_per_device():
  cpu = {"device": {"kind": "cpu", "platform": "cpu", "cores": 2}, "versions": {"jax": "0.10.2"}}
  gpu = {"device": {"kind": "NVIDIA H200", "platform": "gpu", "cores": 16}, "versions": {"jax": "0.11.2"}}
  finished = [{**cpu, "wall_time_s": 5400.0}, {**cpu, "wall_time_s": 1800.0},
              {**gpu, "wall_time_s": 60.0}, {**gpu, "wall_time_s": 120.0, "versions": {"jax": "0.11.3"}}, {**gpu, "wall_time_s": 0.0}]
  assert [results.device_name(m) for m in (cpu, gpu, {})] == ["cpu, 2 cores", "NVIDIA H200", "unrecorded device"]
  pinned = {"device": {**cpu["device"], "cores_used": 1}}
  assert results.device_name(pinned) == "cpu, 1 of 2 cores"  # a --pin-cores worker's run
  assert results.device_name({"device": {**cpu["device"], "cores_used": 2}}) == "cpu, 2 cores"
  rows = run_times.device_table(finished).splitlines()
  assert rows[2:] == ["| NVIDIA H200 | 3 | 0.1 | 0.11.2, 0.11.3 |", "| cpu, 2 cores | 2 | 2.0 | 0.10.2 |"]
  assert run_times.device_table([]) == "No run has finished yet.\n"
  # A run resumed on another device is its own row, named by every device of its trained_on.
  resumed = {**cpu, "wall_time_s": 3600.0, "trained_on": [{"device": gpu["device"], "from_step": 0, "to_step": 10},
                                                          {"device": pinned["device"], "from_step": 10, "to_step": 20}]}
  assert results.trained_where(resumed) == "NVIDIA H200 then cpu, 1 of 2 cores"
  assert "| NVIDIA H200 then cpu, 1 of 2 cores | 1 | 1.0 | 0.10.2 |" in run_times.device_table(finished + [resumed])


def test_each_profile_plans_exactly_what_its_chapters_read():
  for profile in ("smoke", "small", "paper"):
    every, one = reads.planned(profile)
    common = {"model": "S/16"} if profile == "paper" else {}
    runs = figures.image_runs(profile, seeds=(0, 1), **common) + figures.video_runs(profile, seeds=(0, 1))
    assert {r.arm for r in runs} == set(every) | set(one), profile
    assert {r.arm for r in runs if r[1].seed == 1} == set(every), profile  # studies train at one seed
  # The smoke grid's lowest image e_c is 0.3: its Figure 3 reads (and so its plan trains) isoFLOPs there.
  assert "MoNE e_c=0.3, isoFLOPs, seed 0" in dict(figures.image_runs("smoke", seeds=(0,)))
  # The paper's grid has more router placements, counts and video capacities than the small one.
  paper = {r.arm.label for r in figures.image_runs("paper", seeds=(0,), model="S/16") + figures.video_runs("paper", seeds=(0,))}
  assert {"MoNE e_c=0.3, router before block 4", "MoNE e_c=0.3, 12 routers", "appearance: MoNE e_c=0.5"} <= paper


def test_the_small_profiles_plan_is_the_order_it_trained_in():
  # Generated from the chapters' reads, the small profile's plan lists its arms as its runs trained
  # (`figures.TRAINING_ORDER`) and no other: its seed plans' run lists stay what was committed.
  headline, studies = figures.image_arms()
  short, long, video_studies = figures.video_arms()
  assert headline + studies + short + long + video_studies == list(figures.TRAINING_ORDER)
  assert [a.label for a in long] == ["temporal: MatViViT", "appearance: ViViT", "appearance: MoNE e_c=0.4", "appearance: MatViViT"]


def test_another_profile_asks_for_the_same_runs_with_its_own_configs():
  small, smoke = figures.image_runs(), figures.image_runs("smoke", seeds=(0, 1))
  by_label = dict(smoke)
  # every smoke run is a small one made from the smoke profile's configs, in the same order
  order = [l for l, _ in small]
  assert [l for l, _ in smoke if l in order] == sorted((l for l, _ in smoke if l in order), key=order.index)
  assert [l for l in by_label if l not in order] == ["MoNE e_c=0.3, isoFLOPs, seed 0"]
  for label, cfg in small:
    if label in by_label:
      other = by_label[label]
      assert (other.kind, other.e_c, other.seed, other.adaptive, other.iso_flops) == (cfg.kind, cfg.e_c, cfg.seed, cfg.adaptive, cfg.iso_flops), label
      assert (other.model.router, other.model.router_layer, other.model.num_routers) == (cfg.model.router, cfg.model.router_layer, cfg.model.num_routers), label
      assert other.name == profiles.image_config("smoke").name and other.steps == 8
  assert figures.image_runs("smoke", seeds=(0,), model="tiny/8")[0][1].model.name == "tiny/8"


def test_another_profile_asks_for_the_same_video_runs_with_its_own_configs():
  small, smoke = figures.video_runs(), figures.video_runs("smoke", seeds=(0, 1))
  by_label = dict(smoke)
  assert [l for l, _ in smoke] == [l for l, _ in small if not l.endswith(", seed 2")]
  for label, cfg in small:
    if label in by_label:
      other = by_label[label]
      assert (other.kind, other.e_c, other.seed, other.allocation, other.video_task, other.adaptive) == \
          (cfg.kind, cfg.e_c, cfg.seed, cfg.allocation, cfg.video_task, cfg.adaptive), label
      assert other.name.startswith("smoke_") and other.steps == 8, label


def test_chapters_read_the_plans_seeds_and_train_only_off_the_small_profile():
  # The extra seeds join only once the plan's runs and twins have all landed (`single_device`),
  # seeds 5-9 only once every run of the ten-seed plan has too.
  extra = plan.EXTRA_SEEDS + (plan.SEEDS_TO_TEN if plan.ten_seeds_landed() else ())
  assert plan.seeds("small", seed=7) == plan.SEEDS + (extra if plan.single_device() else ())
  assert len(plan.SEEDS) >= 3
  assert plan.seeds("smoke") == (0, 1) and plan.seeds("paper", seed=7) == (7,)
  assert not plan.trains("small") and plan.trains("small", recompute=True)
  assert plan.trains("smoke") and plan.trains("paper")
  for bad in (lambda: plan.seeds("tiny"), lambda: plan.trains("tiny")):
    with pytest.raises(ValueError, match="profile"):
      bad()
