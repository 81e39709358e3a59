"""The device-effect check (`mone.chapters.devices`): twins of committed runs, retrained elsewhere."""
import json

import numpy as np
import pytest

from mone.chapters import devices
from mone.publish import cli


def _run(root, sub, name, acc, seed=0, device="cpu", e_c=0.4, config_hash="abc", **config):
  path = root / sub / f"{name}.json"
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"accuracy": acc, "kind": "mone", "e_c": e_c, "seed": seed, "config_hash": config_hash,
                              "config": {"name": "digits64", "seed": seed, "model": {"router": "learned", "num_classes": 10}, "steps": 8,
                                         **config},
                              "device": {"kind": device, "platform": "gpu" if device != "cpu" else "cpu"}}))


def test_twins_pair_runs_by_file_name_and_report_twin_minus_original(tmp_path):
  _run(tmp_path, "runs", "a", 0.90, device="NVIDIA H100")
  _run(tmp_path, "runs", "b", 0.80, device="NVIDIA H100", seed=1)
  _run(tmp_path, "device_twins/cpu/runs", "a", 0.88)
  _run(tmp_path, "device_twins/cpu/runs", "orphan", 0.5)  # no original: left out
  rows = devices.twins(tmp_path)
  assert [r["run"] for r in rows] == ["a"]
  assert rows[0]["diff"] == pytest.approx(-2.0) and rows[0]["original"] == "NVIDIA H100" and rows[0]["twin"] == "cpu"
  assert (rows[0]["router_layer"], rows[0]["num_routers"]) == (0, 1)  # the defaults, where a run file predates them


def test_a_twin_of_another_config_is_refused(tmp_path):
  _run(tmp_path, "runs", "a", 0.90)
  _run(tmp_path, "device_twins/cpu/runs", "a", 0.88, config_hash="other")
  with pytest.raises(ValueError, match="config hash"):
    devices.twins(tmp_path)


def test_summary_calls_a_shift_an_effect_only_when_its_ci_excludes_zero():
  rows = [{"diff": d} for d in (-1.0, -1.2, -0.9, -1.1)]
  s = devices.summary(rows, None)
  assert s["verdict"] == "device effect" and s["ci95"][1] < 0
  s = devices.summary([{"diff": d} for d in (-1.0, 1.5, 0.2)], 2.0)
  assert s["verdict"].startswith("no device effect detected") and s["ci95"][0] < 0 < s["ci95"][1]
  assert s["same_arm_seed_sd"] == 2.0
  assert devices.summary([{"diff": 1.0}], None)["verdict"].startswith("too few")


def test_same_arm_spread_pools_every_pair_of_seeds_of_the_twins_arms(tmp_path):
  for seed, acc in enumerate((0.90, 0.86, 0.88)):
    _run(tmp_path, "runs", f"m{seed}", acc, seed=seed)
  _run(tmp_path, "runs", "other", 0.10, steps=16)  # another arm: not pooled
  _run(tmp_path, "runs", "m3", 0.50, seed=3, device="NVIDIA H100")  # a GPU run without a CPU twin: left out
  _run(tmp_path, "device_twins/cpu/runs", "m0", 0.89)  # seed 0 is read as its CPU twin
  rows = devices.twins(tmp_path)
  import numpy as np
  assert devices.same_arm_spread(rows, tmp_path) == pytest.approx(np.std([3.0, 1.0, -2.0], ddof=1))
  assert devices.same_arm_differences(rows, tmp_path, seeds=(0, 1)) == pytest.approx([3.0])  # only the seeds read


def test_the_summary_shows_the_twins_without_their_largest_difference_with_median_and_signs():
  diffs = (-0.3, -2.4, -0.5, 0.5, 10.4, -1.2)
  s = devices.summary([{"diff": d} for d in diffs], 2.6)
  assert s["median"] == pytest.approx(-0.4) and s["signs"] == [2, 4]
  w = s["without_largest"]
  assert w["dropped"] == 10.4 and w["n"] == 5 and w["mean"] == pytest.approx(np.mean([-0.3, -2.4, -0.5, 0.5, -1.2]))
  assert w["signs"] == [1, 4]
  page = devices.markdown([{"run": "r", "kind": "vit", "e_c": None, "router": "learned", "seed": 0,
                                                                  "original": "H100", "original_acc": 90.0, "twin": "cpu",
                                                                  "twin_acc": 90.0 + d, "diff": d} for d in diffs], s)
  assert "Without the largest difference** (+10.40 points): over 5 twins" in page and "a smaller one is not" in page


def test_no_comparison_the_chapters_read_crosses_devices():
  """Every run the chapters read (a GPU-trained run read as its CPU twin) trained on the CPU, but
  Figure 6's study arms whose CPU twins have not landed yet (`plan.study_twin_runs`)."""
  from mone import results
  from mone.chapters import headlines
  from mone.runs import experiments, plan
  pending = {experiments.run_path(cfg).name for _, cfg in plan.study_twin_runs()
             if not plan.twin_path(experiments.run_path(cfg)).exists()}
  crossing = [f"{label}, seed {seed}: {results.trained_where(m)}" for label, seed, m in headlines.landed()
              if plan.gpu_trained(m) and f"{m['name']}-{m['kind']}-{m['config_hash']}.json" not in pending]
  assert crossing == []


def test_the_page_is_written_only_when_it_changes(tmp_path):
  _run(tmp_path, "runs", "a", 0.90)
  _run(tmp_path, "device_twins/cpu/runs", "a", 0.88)
  out = tmp_path / "devices.md"
  cli.main(["devices", str(out), "--results", str(tmp_path)])
  first = out.stat().st_mtime_ns
  assert "\n| MoNE e_c=0.4 | 0 |" in out.read_text() and "too few twins" in out.read_text()
  cli.main(["devices", str(out), "--results", str(tmp_path)])
  assert out.stat().st_mtime_ns == first


def test_device_matrix_shows_each_arm_per_seed_and_every_device_a_resumed_run_trained_on():
  cpu = {"device": {"kind": "cpu", "cores": 2, "cores_used": 1}}
  gpu = {"device": {"kind": "NVIDIA H100 80GB HBM3"}}
  resumed = {"device": {"kind": "NVIDIA H200"}, "trained_on": [
      {"device": "cpu, 1 of 2 cores", "from_step": 0, "to_step": 7750}, {"device": {"kind": "NVIDIA H200"}, "from_step": 7750, "to_step": 8000}]}
  landed = [("ViT", 0, cpu), ("ViT", 1, cpu), ("MoNE", 0, resumed), ("MoNE", 1, gpu), ("study", 0, cpu)]
  rows = devices.device_matrix(landed).splitlines()
  assert rows[0] == "| arm | seed 0 | seed 1 |"
  assert rows[2] == "| ViT | CPU (1 core) | CPU (1 core) |"
  assert rows[3] == "| MoNE | CPU (1 core) then H200 | H100 |"
  assert len(rows) == 4  # a single-seed study has no pairs to cross
  assert devices.device_matrix([("study", 0, cpu)]).startswith("No arm")


def test_the_page_says_where_the_seed_plan_stands_after_the_arms():
  page = devices.markdown([], {"verdict": "too few twins"}, "| arm |\n", "3 of 13 CPU twins have landed.")
  assert page.index("## Where every arm trained") < page.index("## Where the seed plan stands\n\n3 of 13 CPU twins have landed.")
  assert "Where the seed plan stands" not in devices.markdown([], {"verdict": "too few twins"}, "| arm |\n")


def test_the_page_names_each_model_as_the_chapters_do():
  row = {"run": "r", "e_c": None, "seed": 1, "router": "learned", "original": "NVIDIA H100", "twin": "cpu",
         "original_acc": 80.0, "twin_acc": 81.0, "diff": 1.0}
  page = devices.markdown([{**row, "kind": k} for k in ("matvit", "mod", "vit")], {"verdict": "too few twins"})
  assert "\n| MatViT | 1 |" in page and "\n| MoD | 1 |" in page and "\n| ViT | 1 |" in page
  page = devices.markdown([{**row, "kind": "mone", "e_c": 0.3, "router": "random"}], {"verdict": "too few twins"})
  assert "\n| MoNE e_c=0.3, random router | 1 |" in page
  # Figure 6's router placement and count arms, as the plan labels them
  page = devices.markdown([{**row, "kind": "mone", "e_c": 0.3, "router_layer": 2},
                           {**row, "kind": "mone", "e_c": 0.3, "num_routers": 4}], {"verdict": "too few twins"})
  assert "\n| MoNE e_c=0.3, router before block 2 | 1 |" in page and "\n| MoNE e_c=0.3, 4 routers | 1 |" in page


def test_a_field_added_later_at_its_default_leaves_a_run_in_its_arm(tmp_path):
  # Runs written after the blocks gained `attention` and `mlp` record them at "auto"; their hash, and
  # their arm, leave them out, so later seeds pool with earlier ones. At another value they are another arm.
  later = {"router": "learned", "num_classes": 10, "attention": "auto", "mlp": "auto"}
  for seed, acc in enumerate((0.90, 0.86)):
    _run(tmp_path, "runs", f"m{seed}", acc, seed=seed)
  _run(tmp_path, "runs", "m2", 0.88, seed=2, model=later)
  _run(tmp_path, "runs", "m3", 0.10, seed=3, model={**later, "attention": "xla"})
  _run(tmp_path, "device_twins/cpu/runs", "m0", 0.89)
  diffs = devices.same_arm_differences(devices.twins(tmp_path), tmp_path)
  assert diffs == pytest.approx([3.0, 1.0, -2.0])  # seed 0 read as its CPU twin (0.89)


def test_the_page_shows_the_twins_beside_the_seeds_in_a_figure_it_writes(tmp_path):
  for seed, (acc, twin) in enumerate(((0.90, 0.88), (0.86, 0.87), (0.88, 0.85))):
    _run(tmp_path, "runs", f"m{seed}", acc, seed=seed, device="NVIDIA H100")
    _run(tmp_path, "device_twins/cpu/runs", f"m{seed}", twin, seed=seed)
  out = tmp_path / "book" / "devices.md"
  out.parent.mkdir()
  cli.main(["devices", str(out), "--results", str(tmp_path)])
  png = tmp_path / devices.FIGURE
  assert png.read_bytes().startswith(b"\x89PNG")
  assert f"]({'../' + devices.FIGURE})" in out.read_text()  # relative to the page
  first = png.read_bytes()
  cli.main(["devices", str(out), "--results", str(tmp_path)])
  assert png.read_bytes() == first  # the same data draw the same bytes
