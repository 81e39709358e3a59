"""scripts/adopt_run.py: a run is adopted under another config only if nothing computed differs."""
import importlib.util
import json

import pytest

from mone import results
from mone.runs import experiments
from mone.configs import recipes, schema

_spec = importlib.util.spec_from_file_location("adopt_run", results.REPO / "scripts" / "adopt_run.py")
adopt_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(adopt_run)


def _run_file(cfg, device_count=1):
  path = experiments.run_path(cfg)
  results.atomic_write_json(path, {"name": cfg.name, "kind": cfg.kind, "accuracy": 0.5, "config": results.jsonable(cfg),
                                   "config_hash": results.config_hash(cfg), "device": {"count": device_count}})
  return path


def test_a_run_is_adopted_under_a_new_name_and_one_device(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  old = schema.apply_overrides(recipes.smoke(), {"name": "calibration", "num_devices": 0})
  new = schema.apply_overrides(recipes.smoke(), {"num_devices": 1})
  path = _run_file(old)
  (experiments.workdir(old) / "checkpoints").mkdir(parents=True)
  assert adopt_run.adopt(path, new, apply=False) == experiments.run_path(new) and path.exists()  # a dry run moves nothing
  adopt_run.adopt(path, new, apply=True)
  m = json.loads(experiments.run_path(new).read_text())
  assert not path.exists() and m["config_hash"] == results.config_hash(new) and m["name"] == "smoke"
  assert schema.from_json(m["config"]) == new and "trained as calibration-mone-" in m["adopted_from"]
  assert (experiments.workdir(new) / "checkpoints").is_dir() and not experiments.workdir(old).exists()
  assert json.loads((experiments.workdir(new) / "config.json").read_text())["config_hash"] == results.config_hash(new)


@pytest.mark.parametrize("change, devices, refused", [({"steps": 41}, 1, "steps: 40 -> 41"),
                                                       ({"num_devices": 1}, 2, "num_devices: 0 -> 1")])
def test_anything_that_changes_the_computation_is_refused(tmp_path, monkeypatch, change, devices, refused):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  old = schema.apply_overrides(recipes.smoke(), {"num_devices": 0})
  path = _run_file(old, devices)
  with pytest.raises(SystemExit, match=refused):
    adopt_run.adopt(path, schema.apply_overrides(old, change), apply=True)
  assert path.exists()
