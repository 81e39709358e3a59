import hashlib
import json

import pytest

from mone.models import config

from helpers import REPO


def test_variants():
  s = config.vit("S/16")
  assert (s.width, s.depth, s.num_heads, s.num_tokens, s.num_classes) == (384, 12, 6, 196, 21843)
  assert s.expert_widths == (48, 96, 192, 384)
  b, l = config.vit("B/16"), config.vit("L/16")
  assert (b.width, b.depth, l.width, l.depth) == (768, 12, 1024, 24)
  xs = config.vit("XS/4")
  assert (xs.image_size, xs.num_tokens, xs.num_classes, xs.depth) == (32, 64, 10, 4)


def test_overrides_and_router_layers():
  c = config.vit("S/16", num_classes=1000, num_routers=3)
  assert c.num_classes == 1000 and c.router_layers == (0, 4, 8)
  assert config.vit("S/16", router_layer=2, num_routers=2).router_layers == (2, 7)
  assert config.vit("S/16", num_routers=12).router_layers == tuple(range(12))
  with pytest.raises(AttributeError):
    c.width = 3  # frozen


@pytest.mark.parametrize("kw,match", [
    ({"widht": 3}, r"unknown config key\(s\) \['widht'\]"),
    ({"router_layer": 12}, "router_layer must be in"),
    ({"num_routers": 0}, "num_routers must be in"),
    ({"router": "oracle"}, "router must be one of"),
    ({"width": 100}, "divisible"),
    ({"image_size": 100}, "image_size=100 must be divisible by patch_size=16"),
    ({"num_experts": 0}, "num_experts must be >= 1"),
    ({"mod_capacity": 0}, "mod_capacity"),
    ({"head_zeroinit": 0}, "head_zeroinit must be True or False, got 0")])
def test_bad_configs_name_the_parameter(kw, match):
  with pytest.raises(ValueError, match=match):
    config.vit("S/16", **kw)


def test_bad_variant():
  with pytest.raises(ValueError, match="variant"):
    config.vit("H/14")


def test_fields_added_later_keep_old_hashes():
  """A field added after run files were committed changes no hash while it holds its default,
  so `results/runs/<name>-<kind>-<hash>.json` still names the run; any other value does."""
  import dataclasses

  from mone import results
  from mone.configs import recipes, schema
  cfg = recipes.video_appearance()  # the zero head: the field at its default
  assert cfg.model.head_zeroinit is True
  legacy = results.jsonable(cfg)
  del legacy["model"]["head_zeroinit"]  # the config as hashed before these fields existed
  del legacy["model"]["alpha_bounded"]
  del legacy["model"]["attention"], legacy["model"]["grad_barrier"], legacy["model"]["mlp"]  # how the blocks compute, at "auto"
  del legacy["model"]["layer_loop"]  # how the blocks are traced, at "unroll"
  del legacy["model"]["weight_grad"]  # how the weight gradients are computed, at "autodiff"
  del legacy["model"]["tubelet_embed"]  # how the tubelets are embedded, at "conv"
  del legacy["adaptive_e_c"], legacy["num_val"], legacy["sharding"], legacy["grad_accum"], legacy["dtype"]
  del legacy["remat"], legacy["video_noise"]
  for reporting in ("data_dir", "log_every", "eval_every", "tail_eval_every", "checkpoint_every", "keep_checkpoints"):
    del legacy[reporting]  # never hashed (see the next test)
  blob = json.dumps(legacy, sort_keys=True).encode()
  assert results.config_hash(cfg) == hashlib.sha256(blob).hexdigest()[:12]
  changed = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, head_zeroinit=False))
  assert results.config_hash(changed) != results.config_hash(cfg)
  assert schema.apply_overrides(cfg, ["model.head_zeroinit=false"]) == changed
  fewer = schema.apply_overrides(cfg, ["adaptive_e_c=(0.3, 0.4)"])
  assert fewer.adaptive_e_c == (0.3, 0.4) and results.config_hash(fewer) != results.config_hash(cfg)
  noisy = schema.apply_overrides(cfg, ["video_noise=0.1"])
  assert noisy.video_noise == 0.1 and results.config_hash(noisy) != results.config_hash(cfg)


def test_what_a_run_reports_is_not_hashed_but_its_validation_split_is():
  """Where the data lives, how often a run logs, evaluates its curve or checkpoints: the same
  run, the same hash (a run trained elsewhere is found). num_val moves digits out of the
  training pool: another run."""
  from mone import results
  from mone.configs import recipes, schema
  cfg = recipes.digits64()
  for reporting in ({"eval_every": 7}, {"eval_every": 7, "tail_eval_every": 2}, {"log_every": 3}, {"checkpoint_every": 9}, {"keep_checkpoints": 5}):
    assert results.config_hash(schema.apply_overrides(cfg, reporting)) == results.config_hash(cfg)
  paper = recipes.imagenet21k()
  assert results.config_hash(schema.apply_overrides(paper, {"data_dir": "gs://bucket/tfds"})) == \
      results.config_hash(paper)
  assert results.config_hash(schema.apply_overrides(cfg, {"num_val": 100})) != results.config_hash(cfg)
  for bad, match in (({"num_val": -1}, "num_val must be an integer >= 0"),
                     ({"eval_every": 1.5}, "eval_every must be an integer >= 0"),
                     ({"tail_eval_every": -2}, "tail_eval_every must be an integer >= 0"),
                     ({"eval_every": 0, "tail_eval_every": 50}, r"tail_eval_every adds learning-curve points to eval_every's; "
                                               r"set eval_every > 0, got 0")):
    with pytest.raises(ValueError, match=match):
      schema.apply_overrides(cfg, bad)
  with pytest.raises(ValueError, match=r"num_val \(a validation split\) is for the embedded datasets"):
    schema.apply_overrides(recipes.ssv2(), {"num_val": 100})
  assert schema.apply_overrides(recipes.video_temporal(), {"num_val": 100}).num_val == 100


def test_alpha_is_bounded_except_in_the_sizes_trained_before_the_bound():
  assert config.vit("mini/8").alpha_bounded and config.vit("S/16").alpha_bounded
  assert config.vivit("B/16x2").alpha_bounded and config.vit("tiny/8").alpha_bounded
  assert not config.vit("XS/4").alpha_bounded and not config.vivit("XS/4x2").alpha_bounded
  assert config.vit("mini/8").expert_widths == (16, 32, 64, 128)
  with pytest.raises(ValueError, match="alpha_bounded must be True or False"):
    config.vit("mini/8", alpha_bounded=1)


def test_a_new_model_size_keeps_the_recipes_classifier_init():
  """The temporal task's recipe is a lecun_normal classifier (its zero head plateaus, notebook 04):
  switching the model variant, as the smoke profile does, must not bring the zero head back."""
  from mone.configs import recipes, schema
  cfg = recipes.video_temporal()
  assert cfg.model.head_zeroinit is False
  small = schema.apply_overrides(cfg, {"model": "tiny/8x2"})
  assert (small.model.head_zeroinit, small.model.num_classes, small.model.width) == (False, 8, config.vivit("tiny/8x2").width)
  assert schema.apply_overrides(recipes.video_appearance(), {"model": "tiny/8x2"}).model.head_zeroinit is True


def test_the_flop_counter_the_budget_and_the_training_config_import_without_flax():
  """They are arithmetic: a user (or the book's build) can use them without the model stack."""
  import subprocess
  import sys
  code = ("import sys, mone.flops, mone.capacity, mone.configs.recipes, mone.evidence.claims; "
          "assert 'flax' not in sys.modules, sorted(m for m in sys.modules if m.startswith('flax'))")
  subprocess.run([sys.executable, "-c", code], check=True)


def test_adaptive_training_draws_only_the_configured_budgets():
  from mone.configs import recipes, schema
  from mone.train import steps
  cfg = schema.apply_overrides(recipes.smoke(), {"adaptive": True, "e_c": None, "adaptive_e_c": (0.3, 0.4)})
  assert {steps.train_budget(cfg, s).capacities for s in range(50)} == {cfg.budget(0.3).capacities, cfg.budget(0.4).capacities}
  paper = schema.apply_overrides(recipes.smoke(), {"adaptive": True, "e_c": None})
  assert paper.adaptive_e_c == schema.ADAPTIVE_E_C  # the paper's nine budgets by default
  with pytest.raises(ValueError, match="adaptive_e_c"):
    schema.apply_overrides(cfg, {"adaptive_e_c": ()})


def test_swapping_the_variant_keeps_the_recipes_classes_resolution_and_frames():
  """Config traps: `--config imagenet1k model=B/16` once trained a 21,843-class head, and
  `--config ssv2 model=L/16x2` dropped SSv2's 174 classes and 256 px."""
  from mone.configs import recipes
  b16 = recipes.get_config("imagenet1k", ["model=B/16"])
  assert (b16.model.name, b16.model.width, b16.model.num_classes, b16.model.image_size) == ("B/16", 768, 1000, 224)
  ssv2 = recipes.get_config("ssv2")
  l16 = recipes.get_config("ssv2", ["model=L/16x2"])
  assert (l16.model.width, l16.model.num_classes, l16.model.image_size, l16.model.num_frames) == (
      1024, 174, ssv2.model.image_size, ssv2.model.num_frames)
  assert recipes.get_config("ssv2", ["model=L/16x2", "model.image_size=224"]).model.image_size == 224


def test_model_name_is_not_an_override():
  from mone.configs import recipes
  with pytest.raises(ValueError, match="model.name is the variant's label.*model=B/16"):
    recipes.get_config("imagenet21k", ["model.name=B/16"])


def test_a_config_can_come_from_a_python_file(tmp_path):
  from mone.configs import recipes
  path = tmp_path / "my_config.py"
  path.write_text("from mone.configs import recipes, schema\n\n"
                  "def get_config():\n  return schema.apply_overrides(recipes.smoke(), {'steps': 3, 'name': 'mine'})\n")
  cfg = recipes.get_config(str(path), ["lr=0.01"])
  assert (cfg.name, cfg.steps, cfg.lr) == ("mine", 3, 0.01)
  (tmp_path / "bad.py").write_text("def get_config():\n  return 3\n")
  with pytest.raises(ValueError, match="not a TrainConfig"):
    recipes.get_config(str(tmp_path / "bad.py"))
  with pytest.raises(ValueError, match="does not exist"):
    recipes.get_config(str(tmp_path / "missing.py"))


def test_every_committed_run_file_is_named_by_the_hash_of_its_config():
  """A change to what the hash covers must rename the committed runs (scripts/rehash_runs.py),
  or the chapters would silently stop finding them."""
  from mone import results
  from mone.configs import schema
  runs = sorted((REPO / "results" / "runs").glob("*.json"))
  assert len(runs) >= 40
  for path in runs:
    run = json.loads(path.read_text())
    h = results.config_hash(schema.from_json(run["config"]))
    assert path.name == f"{run['name']}-{run['kind']}-{h}.json" and run["config_hash"] == h, path.name
