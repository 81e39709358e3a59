"""The model kinds (`mone.models.kinds`): one object per kind and modality, looked up by a
config's kind and model, that builds, applies, trains, budgets and counts its model."""
import dataclasses
import pickle
import subprocess
import sys

import jax
import numpy as np
import pytest

from mone import flops
from mone.models import config, kinds
from mone.configs import recipes, schema
from mone.train import steps


def tiny(kind, video=False, **overrides):
  base = schema.apply_overrides(recipes.video_temporal(), {"model": "tiny/8x2"}) if video else recipes.smoke()
  return schema.apply_overrides(base, {"kind": kind, **overrides})


def test_a_config_finds_the_form_of_its_kind_for_its_model():
  assert tiny("mone").model_kind is kinds.KINDS["mone", False]
  assert tiny("mone", video=True).model_kind is kinds.KINDS["mone", True]
  assert tiny("matvit", video=True).model_kind.label == "MatViViT"
  assert kinds.NAMES == ("vit", "matvit", "mod", "mone") and kinds.names(video=True) == ("vit", "matvit", "mone")
  # a Kind object of the other modality names its own counterpart
  assert kinds.lookup(kinds.KINDS["vit", False], config.vivit("tiny/8x2")) is kinds.KINDS["vit", True]
  with pytest.raises(ValueError, match=r"kind must be one of .* got 'mod' \(MoD is image-only"):
    kinds.lookup("mod", config.vivit("tiny/8x2"))
  with pytest.raises(ValueError, match="kind must be one of"):
    kinds.lookup("moe", config.vit("tiny/8"))
  with pytest.raises(ValueError, match="config must be a ViTConfig"):
    kinds.KINDS["mod", False].build(config.vivit("tiny/8x2"))


@pytest.mark.parametrize("name,video", sorted(kinds.KINDS), ids=lambda v: str(v))
def test_every_kind_builds_its_model_and_runs_it_at_every_evaluation_point(name, video):
  cfg = tiny(name, video, eval_e_c=(0.6,)) if name == "mone" else tiny(name, video)
  kind = cfg.model_kind
  model = kind.build(cfg.model)
  x = jax.random.uniform(jax.random.key(0), steps.input_shape(cfg, 2))
  variables = kind.init(model, {"params": jax.random.key(1)}, x, kind.train_budget(cfg, 0))
  for e_c, width_index in kind.eval_points(cfg):
    budget = kind.budget(cfg, e_c)
    logits, _ = kind.apply(model, variables, x, budget, width_index, jax.random.key(2))
    assert logits.shape == (2, cfg.model.num_classes)
    if budget is not None:  # MoNE: what the module computes at the config's capacities
      want, _ = model.apply(variables, x, cfg.budget(e_c).capacities, rngs={"routing": jax.random.key(2)})
      np.testing.assert_array_equal(logits, want)
    # the FLOPs of the point, by value and as the models take it
    assert flops.gflops_at(cfg.model, kind, budget, width_index) == flops.forward_gflops(cfg, e_c, width_index)


def test_budgets_and_the_points_a_run_reports():
  mone, vit, matvit = tiny("mone", eval_e_c=(0.3, 0.4)), tiny("vit"), tiny("matvit")
  assert mone.model_kind.budget(mone, 0.3) == mone.budget(0.3)
  assert mone.model_kind.budget(mone) == mone.budget()  # the training e_c
  assert vit.model_kind.budget(vit, 0.3) is None and vit.model_kind.train_budget(vit, 5) is None
  assert mone.model_kind.eval_points(mone) == [(0.4, None), (0.3, None)]  # training e_c first, once
  assert matvit.model_kind.eval_points(matvit) == [(None, j) for j in range(4)]
  assert matvit.model_kind.curve_point(matvit) == (None, 3)
  assert vit.model_kind.eval_points(vit) == [(None, None)] == [vit.model_kind.curve_point(vit)]
  adaptive = tiny("mone", adaptive=True, e_c=None, adaptive_e_c=(0.3, 0.5, 0.7))
  assert adaptive.model_kind.curve_point(adaptive) == (0.5, None) and adaptive.model_kind.recorded_e_c(adaptive) is None
  with pytest.raises(ValueError, match="adaptive=True needs kind=mone"):
    tiny("vit", adaptive=True)


def test_the_training_loss_and_cost_of_matvit_cover_every_width():
  matvit, mone = tiny("matvit"), tiny("mone")
  assert matvit.model_kind.loss(matvit.model, lambda j: float(j)) == 1.5  # mean over widths 0..3
  assert mone.model_kind.loss(mone.model, lambda j: j) is None  # one forward pass, no width
  cost = lambda e_c, width_index: (e_c, width_index)
  assert mone.model_kind.train_cost(mone, cost) == (0.4, None)
  assert matvit.model_kind.train_cost(matvit, lambda e, j: 10.0 ** j) == 1111.0


def test_the_layers_a_kind_runs_are_what_flops_counts():
  cfg = config.vit("tiny/8", router_layer=1)
  mone = kinds.KINDS["mone", False]
  layers = mone.layers(cfg, *mone.point(cfg, 0.4))
  assert layers[0] == kinds.Layer(((cfg.num_tokens, cfg.width),))  # dense before the first router
  assert sum(n for n, _ in layers[1].groups) == cfg.num_tokens and layers[1].router > 0
  mod = kinds.KINDS["mod", False].layers(cfg)
  assert [l.groups[0][0] for l in mod] == [cfg.num_tokens, config.mod_tokens(cfg)]  # every other layer routed
  with pytest.raises(ValueError, match="nested width"):
    kinds.KINDS["matvit", False].point(cfg, 0.3)


def test_the_registry_flops_and_configs_import_without_jax():
  code = ("import sys, mone.models.kinds, mone.flops, mone.configs.recipes; "
          "assert not [m for m in sys.modules if m.split('.')[0] in ('jax', 'flax')]")
  subprocess.run([sys.executable, "-c", code], check=True)


def test_a_config_resolves_its_kind_once_and_keeps_it_across_processes():
  mone = tiny("mone")
  assert mone.model_kind is kinds.lookup("mone", mone.model)
  assert dataclasses.replace(mone, kind="vit").model_kind is kinds.KINDS["vit", False]  # resolved again
  assert pickle.loads(pickle.dumps(mone)).model_kind is mone.model_kind  # the registry's own object
  assert "model_kind" not in {f.name for f in dataclasses.fields(mone)}  # not hashed, compared or recorded
