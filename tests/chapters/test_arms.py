"""Arms are typed values: labels and names are made from their fields, and every planned run carries its arm."""
import numpy as np
import pytest

from mone.plotting import plots
from mone.configs import figures, profiles, reads
from mone.configs.arms import Arm, arms
from mone import flops
from mone.models import kinds
from mone.train import steps


@pytest.mark.parametrize("arm, label, name, curve", [
    (Arm("image", "vit"), "ViT", "image:vit", "ViT"),
    (Arm("temporal", "matvit"), "temporal: MatViViT", "temporal:matvit", "MatViViT"),
    (Arm("image", "mone", 0.2, router="random"), "MoNE e_c=0.2, random router", "image:mone:0.2:random", "MoNE, random router"),
    (Arm("image", "mone", 0.3, router_layer=2), "MoNE e_c=0.3, router before block 2", "image:mone:0.3:router_layer2", "MoNE"),
    (Arm("image", "mone", 0.3, num_routers=4), "MoNE e_c=0.3, 4 routers", "image:mone:0.3:routers4", "MoNE"),
    (Arm("image", "mone", 0.2, iso_flops=True), "MoNE e_c=0.2, isoFLOPs", "image:mone:0.2:iso_flops", "MoNE-isoFLOPs"),
    (Arm("temporal", "mone", adaptive=True, iso_flops=True), "temporal: MoNE adaptive, isoFLOPs", "temporal:mone:adaptive:iso_flops",
     "MoNE adaptive"),
    (Arm("temporal", "mone", allocation="uniform"), "Table 1: Uniform", "table1:uniform", "Uniform"),
    (Arm("temporal", "mone", 0.4, allocation="mod_greedy"), "Table 1: MoD Greedy e_c=0.4", "table1:mod_greedy:0.4", "MoD Greedy"),
])
def test_an_arms_label_name_and_curve_are_made_from_its_fields(arm, label, name, curve):
  assert (arm.label, arm.name, arm.curve) == (label, name, curve)
  assert plots.model_color(arm) == plots.MODEL_COLORS[curve]  # the curve's model is a coloured one
  assert figures.arm(label) == arm  # every one of these is declared by a chapter


@pytest.mark.parametrize("profile", ["small", "smoke"])
def test_every_planned_run_is_its_arm_at_its_configs_seed(profile):
  runs = figures.image_runs(profile, (0, 1)) + figures.video_runs(profile, (0, 1))
  for run in runs:
    label, cfg = run
    assert label == f"{run.arm.label}, seed {cfg.seed}" and cfg == run.arm.config(profile, cfg.seed)
    assert figures.arm(run.arm.label) == run.arm
  assert len({r[0] for r in runs}) == len(runs)


def test_the_benchmarks_arms_have_one_name_each_and_are_planned():
  names = [a.name for a in arms()]
  assert len(set(names)) == len(names)
  planned = {r.arm for r in figures.image_runs() + figures.video_runs()}
  assert set(arms()) <= planned
  # the headline arms: exactly those some chapter compares over the small profile's seeds
  assert set(arms()) == set(reads.planned("small")[0])


@pytest.mark.parametrize("make, message", [
    (lambda: Arm("audio", "vit"), "task must be one of ('image', 'temporal', 'appearance'), got 'audio'"),
    (lambda: Arm("temporal", "mod"), "kind must be one of ('vit', 'matvit', 'mone') for videos (a ViViTConfig), got 'mod' "
                                     "(MoD is image-only, as in the paper)"),
    (lambda: Arm("image", "moe"), "kind must be one of ('vit', 'matvit', 'mod', 'mone') for images, got 'moe'"),
    (lambda: Arm("temporal", "mone", allocation="random"), "allocation must be 'mone' or one of"),
    (lambda: figures.arm("MoNE e_c=0.5"), "no declared arm is labelled 'MoNE e_c=0.5'"),
])
def test_a_bad_arm_is_refused_in_one_line_naming_what_is_allowed(make, message):
  with pytest.raises((ValueError, KeyError), match=message.replace("(", r"\(").replace(")", r"\)")):
    make()


def test_an_arm_config_is_the_profiles_config_with_the_arms_overrides():
  arm = Arm("image", "mone", 0.3, router="random", overrides=("steps=10",))
  cfg = arm.config("small", seed=4)
  assert cfg == profiles.mone_config("small", 0.3, seed=4, steps=10, **{"model.router": "random"})
  assert Arm("temporal", "mone", allocation="proportionate").config("small").allocation == "proportionate"


def test_a_new_baseline_kind_is_one_registry_entry_and_one_colour(monkeypatch):
  """A dense baseline of its own (here the ViT's module under another name) reaches a config, an arm, the
  training step and the figures' colours through `kinds.KINDS` and `plots.MODEL_COLORS` alone; its runs
  join the plan by one arm in the reads of the chapter that shows it (`mone.configs.reads`), and a claim
  about it by one `Claim` in that chapter."""
  class Wide(kinds.Kind):  # what differs from the dense model would be overridden here
    pass

  toy = Wide("wide", "WideViT")
  monkeypatch.setitem(kinds.KINDS, ("wide", False), toy)
  monkeypatch.setitem(plots.MODEL_COLORS, "WideViT", "#abcdef")
  arm = Arm("image", "wide")
  cfg = arm.config("smoke", seed=1)
  assert cfg.model_kind is toy and cfg.kind == "wide" and cfg.seed == 1
  assert (arm.label, arm.name) == ("WideViT", "image:wide")
  assert plots.model_color(arm) == "#abcdef"
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  logits, _ = toy.apply(model, {"params": params}, np.zeros(steps.input_shape(cfg, 2), np.float32))
  assert logits.shape == (2, cfg.model.num_classes)
  assert flops.forward_gflops(cfg) == flops.forward_gflops(Arm("image", "vit").config("smoke", seed=1))
  with pytest.raises(ValueError, match="kind must be one of .* got 'wider'"):
    Arm("image", "wider")
  figure3 = reads.CHAPTERS["figure3"]
  monkeypatch.setitem(reads.CHAPTERS, "figure3", lambda p: reads.Reads(figure3(p).every_seed + (arm,), figure3(p).one_seed))
  assert [l for l, _ in figures.image_runs("smoke", seeds=(0, 1)) if "Wide" in l] == ["WideViT, seed 0", "WideViT, seed 1"]
