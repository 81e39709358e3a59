import dataclasses
import json
import shutil
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from mone import flops, results
from mone.models import kinds
from mone.data import sources
from mone.configs import recipes, schema
from mone.train import checkpoints, evaluation, loop, steps

from helpers import REPO, tiny, train_cli, train_command


@pytest.mark.parametrize("overrides", [  # make test-fast trains each kind; make test each MoNE variant too
    {"kind": "vit"}, {"kind": "matvit"}, {"kind": "mod"}, {"kind": "mone", "e_c": 0.3},
    *(pytest.param(o, marks=pytest.mark.slow) for o in (
        {"kind": "mone", "adaptive": True, "eval_e_c": (0.2, 0.6)},
        {"kind": "mone", "model.router": "random"}, {"kind": "mone", "allocation": "mod_greedy"},
        {"kind": "mone", "model.num_routers": 2, "model.router_layer": 0}))])
def test_every_model_trains_with_the_same_loop(tmp_path, overrides):
  cfg = tiny(**overrides)
  m = loop.train(cfg, tmp_path, progress=False)
  assert m["train_steps"] == cfg.steps and len(m["history"]) == cfg.steps // 2
  assert all(np.isfinite(l) for _, l in m["history"])
  assert len(m["evals"]) == len(evaluation.eval_points(cfg)) and all(0 <= e["accuracy"] <= 1 for e in m["evals"])
  if cfg.kind == "matvit":
    assert [e["width_index"] for e in m["evals"]] == [0, 1, 2, 3]
    assert m["evals"][0]["gflops"] < m["evals"][3]["gflops"]
  saved = json.loads((tmp_path / "metrics.json").read_text())
  assert saved["config_hash"] == m["config_hash"] and "versions" in saved and "device" in saved


def test_a_bounded_alpha_mone_run_trains_its_router(tmp_path):
  # Eq. 1's factor is the router's only gradient path and alpha starts at 0, its bound: with a plain
  # clip this run's alpha went below 0 and stuck, and its router moved by weight decay alone (3e-6;
  # so did every first digits64 MoNE run's). With `nested.bounded_alpha` it moves by about 0.04.
  cfg = schema.apply_overrides(recipes.smoke(), {"kind": "mone", "num_devices": 1})
  assert cfg.model.alpha_bounded
  model = steps.build_model(cfg)
  before = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))["router_0"]["kernel"]
  loop.train(cfg, tmp_path, progress=False)
  after = checkpoints.load_params(tmp_path)["router_0"]["kernel"]
  decay_only = np.linalg.norm(before) * cfg.lr * cfg.weight_decay * cfg.steps  # an upper bound
  assert np.linalg.norm(np.asarray(after) - np.asarray(before)) > 100 * decay_only


def test_iso_flops_trains_longer_by_the_flop_ratio():
  cfg = tiny(kind="mone", e_c=0.3, iso_flops=True)
  ratio = flops.gflops(cfg.model, "vit") / flops.gflops(cfg.model, "mone", 0.3)
  assert flops.num_train_steps(cfg) == int(np.ceil(cfg.steps * ratio))
  assert flops.num_train_steps(dataclasses.replace(cfg, iso_flops=False)) == cfg.steps


def test_mone_finetunes_from_matvit(tmp_path):
  loop.train(tiny(kind="matvit"), tmp_path / "matvit", progress=False)
  loaded = checkpoints.load_params(tmp_path / "matvit")
  cfg = tiny(kind="mone", init_from=str(tmp_path / "matvit"), steps=2)
  model = kinds.build(cfg.model, "mone")
  params = steps.init_params(cfg, model, np.zeros((1, 32, 32, 3), np.float32))
  np.testing.assert_array_equal(params["block_0"]["qkv_kernel"], loaded["block_0"]["qkv_kernel"])
  assert float(params["alpha"]) == 0.0 and "router_0" in params


@pytest.mark.slow
def test_one_device_eight_devices_and_fsdp_agree(tmp_path):
  """Data parallel over 8 devices, and FSDP (parameters and optimizer state split over them),
  train as one device does."""
  assert jax.device_count() == 8, "conftest forces 8 CPU devices"
  one = loop.train(tiny(num_devices=1, batch_size=32, steps=8), tmp_path / "one", progress=False)
  eight = loop.train(tiny(num_devices=8, batch_size=32, steps=8), tmp_path / "eight", progress=False)
  fsdp = loop.train(tiny(num_devices=8, batch_size=32, steps=8, sharding="fsdp"), tmp_path / "fsdp", progress=False)
  for other in (eight, fsdp):
    np.testing.assert_allclose([l for _, l in other["history"]], [l for _, l in one["history"]], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose([l for _, l in fsdp["history"]], [l for _, l in eight["history"]], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_gradient_accumulation_and_bfloat16_take_the_plain_steps(tmp_path, kind="mone"):
  """Two micro-batches of 8 give the update of one batch of 16 (learned router: per-image
  routing); bfloat16 compute follows the float32 run within bfloat16's precision (8 bits of
  mantissa: ~0.4% per rounding) and keeps float32 parameters. (remat: the next test.)"""
  whole = loop.train(tiny(kind=kind, batch_size=16), tmp_path / "whole", progress=False)
  losses = lambda m: [l for _, l in m["history"]]
  accum = loop.train(tiny(kind=kind, batch_size=16, grad_accum=2), tmp_path / "accum", progress=False)
  np.testing.assert_allclose(losses(accum), losses(whole), rtol=2e-5, atol=1e-6)
  bf16 = loop.train(tiny(kind=kind, batch_size=16, dtype="bfloat16"), tmp_path / "bf16", progress=False)
  np.testing.assert_allclose(losses(bf16), losses(whole), rtol=0, atol=0.03)
  assert losses(bf16) != losses(whole)  # it really computed in bfloat16
  assert abs(bf16["evals"][0]["accuracy"] - whole["evals"][0]["accuracy"]) <= 0.1
  assert all(a.dtype == np.float32 for a in jax.tree.leaves(checkpoints.load_params(tmp_path / "bf16")))
  with pytest.raises(ValueError, match="grad_accum must be an integer >= 1 dividing batch_size=16"):
    tiny(batch_size=16, grad_accum=3)
  with pytest.raises(ValueError, match="times grad_accum"):  # each device's rows must split evenly
    loop.train(tiny(batch_size=16, grad_accum=4, num_devices=8), tmp_path / "bad", progress=False)


@pytest.mark.slow  # options no profile on the CPU trains with
def test_remat_and_bfloat16_change_how_the_step_computes():
  """remat=True puts every block under jax.checkpoint with unchanged gradients; bfloat16 runs
  the matmuls in bfloat16 while the gradients stay float32 and close to float32's."""
  cfg = tiny(kind="mone")
  x = jax.random.normal(jax.random.key(1), steps.input_shape(cfg, 4))
  params = steps.init_params(cfg, steps.build_model(cfg), x)

  def grads(c):
    f = lambda p: steps.logits(c, steps.build_model(c), p, x, steps.train_budget(c, 0), jax.random.key(2))[0].std()
    return jax.make_jaxpr(jax.grad(f))(params), jax.jit(jax.value_and_grad(f))(params)
  (plain_jaxpr, (l0, g0)), (remat_jaxpr, (l1, g1)) = grads(cfg), grads(dataclasses.replace(cfg, remat=True))
  assert "remat" not in str(plain_jaxpr) and str(remat_jaxpr).count("remat") >= cfg.model.depth
  np.testing.assert_allclose(l1, l0, rtol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), g1, g0)
  bf16_jaxpr, (l2, g2) = grads(dataclasses.replace(cfg, dtype="bfloat16"))
  assert "bf16[" in str(bf16_jaxpr) and "bf16[" not in str(plain_jaxpr)
  assert all(g.dtype == np.float32 for g in jax.tree.leaves(g2)) and l2.dtype == np.float32
  np.testing.assert_allclose(l2, l0, rtol=0.02)
  with pytest.raises(ValueError, match="dtype must be one of"):
    tiny(dtype="float16")


def test_fsdp_splits_each_array_along_a_dimension_the_devices_divide():
  from mone.train import sharding
  cfg = tiny(kind="mone", batch_size=32, sharding="fsdp", num_devices=8)
  mesh = sharding.make_mesh(cfg)
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  placed = sharding.place(mesh, params, "fsdp")
  qkv = placed["block_0"]["qkv_kernel"]  # [D, 3D] = [32, 96]: split along the 96
  assert qkv.sharding.spec == jax.sharding.PartitionSpec(None, "data")
  assert {s.data.shape for s in qkv.addressable_shards} == {(32, 12)}
  assert placed["alpha"].sharding.spec == jax.sharding.PartitionSpec()  # a scalar stays whole
  assert sharding.spec((5, 3), mesh, "fsdp") == jax.sharding.PartitionSpec()  # nothing divides: replicated
  assert sharding.spec((32, 96), mesh, "data") == jax.sharding.PartitionSpec()
  for m in (mesh, sharding.make_mesh(tiny(num_devices=1))):  # refused on one device too
    with pytest.raises(ValueError, match="sharding must be 'data' or 'fsdp', got 'zero3'"):
      sharding.spec((32, 96), m, "zero3")
  with pytest.raises(ValueError, match="sharding must be one of"):
    tiny(sharding="zero3")


def _cli(workdir, *extra):
  return train_command(workdir, "checkpoint_every=10", *extra)


@pytest.mark.slow
def test_rerun_of_finished_run_does_no_training(tmp_path):
  cfg = tiny()
  first = loop.train(cfg, tmp_path, progress=False)
  second = loop.train(cfg, tmp_path, progress=False)
  assert second["resumed_from_step"] == cfg.steps
  assert first["accuracy"] == second["accuracy"] and first["history"] == second["history"]
  # The second process only evaluated: it is the run file's `device`, not a part of trained_on.
  assert second["trained_on"] == first["trained_on"] and len(first["trained_on"]) == 1


@pytest.mark.parametrize("args,message", [
    (["e_c=1.5"], "e_c must be in"), (["lerning_rate=3"], "unknown config key 'lerning_rate'"),
    (["model.widht=3"], "unknown config key 'model.widht'"), (["kind=moe"], "kind must be one of"),
    (["batch_size=0"], "batch_size must be an integer >= 1"), (["steps=ten"], "steps must be int"),
    (["model.router_layer=5"], "router_layer must be in"), (["e_c"], "key=value")])
def test_cli_rejects_bad_overrides_before_writing(tmp_path, args, message, capsys):
  work = tmp_path / "w"
  out = train_cli(_cli(work, *args), capsys, own_process=args == ["e_c=1.5"])
  assert out.returncode == 2 and message in out.stderr, out.stderr[-1000:]
  assert len(out.stderr.strip().splitlines()) == 1  # one line: no traceback, no usage
  assert not work.exists()


def test_unknown_config_name():
  with pytest.raises(ValueError, match="unknown config 'smok'"):
    recipes.get_config("smok")


def tiny_video(**overrides):
  base = dict(steps=4, num_train=64, num_test=32, batch_size=16, eval_batch_size=32, warmup_steps=1,
              log_every=2, checkpoint_every=4, num_devices=1, **{"model": "tiny/8x2"})
  return schema.apply_overrides(recipes.video_temporal(), {**base, **overrides})


@pytest.mark.parametrize("kind", ["vit", "matvit", "mone"])
def test_video_models_train_with_the_same_loop(tmp_path, kind):
  cfg = tiny_video(kind=kind)
  assert cfg.model.num_classes == 8 and cfg.model.name == "tiny/8x2"
  m = loop.train(cfg, tmp_path, progress=False)
  assert len(m["evals"]) == len(evaluation.eval_points(cfg)) and np.isfinite(m["final_loss"])
  want = {"vit": flops.gflops(cfg.model, "vit"), "mone": flops.gflops(cfg.model, "mone", cfg.e_c),
          "matvit": flops.gflops(cfg.model, "matvit", 1 / 8)}[kind]  # MatViT reports width 0 first
  assert m["gflops"] == pytest.approx(want)


def test_video_stays_uint8_to_the_device_with_the_values_of_host_normalisation():
  """A video batch reaches the step as uint8; mapped there to [-1, 1], it gives bit for bit the
  logits of the float32 input normalised by numpy on the host (how the committed runs trained)."""
  from mone.data import pipeline
  cfg = tiny_video(kind="mone")
  train_src, _ = sources.data_sources(cfg)
  _, batch = next(iter(pipeline.train_batches(train_src, 4, seed=0, num_steps=1, num_classes=8)))
  assert batch["video"].dtype == np.uint8
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  run = jax.jit(lambda v: steps.logits(cfg, model, params, v, steps.train_budget(cfg, 0), jax.random.key(0))[0])
  on_host = batch["video"].astype(np.float32) / np.float32(127.5) - 1
  np.testing.assert_array_equal(run(batch["video"]), run(on_host))


def test_multiclip_evaluation_averages_clips():
  from mone.data import video
  from mone.train import evaluation, steps
  cfg = tiny_video(kind="mone")
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  clips = np.random.default_rng(0).integers(0, 255, (8, 3, 8, 32, 32, 3), dtype=np.uint8)
  labels = np.arange(8, dtype=np.int32) % 8
  multi = evaluation.evaluate(cfg, model, params, video.ClipArraySource({"video": clips, "label": labels}),
                         e_c=0.4, batch_size=8)
  single = evaluation.evaluate(cfg, model, params, video.ClipArraySource({"video": clips[:, 0], "label": labels}),
                          e_c=0.4, batch_size=8)
  assert multi["num_examples"] == single["num_examples"] == 8
  assert multi["gflops"] == single["gflops"]  # FLOPs are per clip


@pytest.mark.parametrize("kind, point", [("mone", {"e_c": 0.3}), pytest.param("matvit", {"width_index": 1}, marks=pytest.mark.slow)])
def test_predictions_are_what_the_accuracy_counts(kind, point):
  """evaluation.predict: one class per example (padding dropped), right exactly as often as
  `evaluate` counts; at another capacity (or width) the model predicts differently."""
  from mone.data import video
  from mone.train import evaluation, steps
  cfg = tiny_video(kind=kind)
  model = steps.build_model(cfg)
  params = steps.init_params(cfg, model, np.zeros(steps.input_shape(cfg), np.float32))
  rng = np.random.default_rng(0)
  src = video.ClipArraySource({"video": rng.integers(0, 255, (37, 8, 32, 32, 3), dtype=np.uint8),
                               "label": rng.integers(0, 8, 37).astype(np.int32)})
  pred = evaluation.predict(cfg, model, params, src, batch_size=16, **point)
  assert pred.shape == (37,) and pred.dtype == np.int32 and pred.min() >= 0 and pred.max() < 8
  acc = evaluation.evaluate(cfg, model, params, src, batch_size=16, **point)["accuracy"]
  assert np.mean(pred == src.arrays["label"]) == acc
  logits = steps.logits(cfg, model, params, src.arrays["video"][:5], cfg.budget(point.get("e_c")) if kind == "mone" else None,
                        jax.random.key(cfg.seed + 2), point.get("width_index"))[0]
  np.testing.assert_array_equal(pred[:5], np.argmax(logits, -1))


def test_video_config_checks():
  with pytest.raises(ValueError, match="dataset=digits needs a ViTConfig"):
    schema.apply_overrides(recipes.video_temporal(), {"model": "XS/4x2", "dataset": "digits"})
  with pytest.raises(ValueError, match="image-only"):
    tiny_video(kind="mod")
  with pytest.raises(ValueError, match="8 classes"):
    tiny_video(**{"model.num_classes": 10})


@pytest.mark.slow
def test_trained_params_notes_a_retraining_that_differs_from_the_run_file(tmp_path, monkeypatch, capsys):
  """A fresh clone has the committed run file but no checkpoint: the weights are retrained,
  and if they differ from the run file's (another device), the notebook output says so."""
  from mone import results
  from mone.runs import experiments
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  cfg = tiny(kind="vit")
  m = experiments.run(cfg, progress=False)
  assert experiments.run_path(cfg).exists() and experiments.trained_params(cfg) is not None
  assert "note:" not in capsys.readouterr().out  # its own checkpoint: nothing retrained
  import shutil
  shutil.rmtree(experiments.workdir(cfg))  # what a fresh clone lacks
  params = experiments.trained_params(cfg)  # the same device retrains bit-identically
  assert "note:" not in capsys.readouterr().out and jax.tree.leaves(params)
  shutil.rmtree(experiments.workdir(cfg))
  results.atomic_write_json(experiments.run_path(cfg), {**m, "accuracy": m["accuracy"] + 0.25,
                                                       "device": {"kind": "NVIDIA H100 80GB HBM3"}})
  experiments.trained_params(cfg)
  out = capsys.readouterr().out
  assert "note: smoke (vit) was retrained on cpu" in out and "NVIDIA H100" in out


@pytest.mark.parametrize("make", [  # make test-fast: the image model's
    pytest.param(lambda: tiny(kind="mone", e_c=0.3), id="image"),
    pytest.param(lambda: tiny_video(kind="mone", e_c=0.3), id="video", marks=pytest.mark.slow),
    pytest.param(lambda: tiny(kind="mone", **{"model.router": "random"}), id="random", marks=pytest.mark.slow)])
def test_committed_router_weights_give_the_trained_routers_outputs_without_retraining(tmp_path, monkeypatch, make):
  """The router figures read only the embedding and the first router (results/weights/): with
  every other parameter at its initialisation the router's outputs equal the trained model's
  exactly, and once the file exists no checkpoint (and no training) is needed."""
  import numpy as np

  from mone.chapters import routers
  from mone.runs import experiments
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  cfg = make()
  experiments.run(cfg, progress=False)
  ex = routers.eval_examples(cfg, 32)
  images = ex["video" if "video" in ex else "image"]
  trained = experiments.trained_params(cfg)
  full = routers.router_outputs(trained, cfg, images)
  experiments.router_params(cfg)  # writes the file from the trained weights
  saved = np.load(experiments.weights_path(cfg))
  assert sorted(saved.files) == ["embed/conv/bias", "embed/conv/kernel", "embed/pos_embedding",
                                 "router_0/bias", "router_0/kernel"]
  import shutil
  shutil.rmtree(experiments.workdir(cfg))  # a fresh clone: the committed weights, no checkpoint
  params = experiments.router_params(cfg)
  assert not experiments.workdir(cfg).exists()  # nothing retrained
  for got, want in zip(routers.router_outputs(params, cfg, images), full):
    np.testing.assert_array_equal(got, want)
  # the rest is the initialisation, not the trained weights
  assert not np.array_equal(params["block_0"]["qkv_kernel"], np.asarray(trained["block_0"]["qkv_kernel"]))
  with pytest.raises(ValueError, match="first router is before layer 0"):
    experiments.router_params(tiny(kind="mone", **{"model.router_layer": 1}))
  with pytest.raises(ValueError, match="kind='vit'"):
    experiments.router_params(tiny(kind="vit"))


@pytest.mark.slow
def test_stored_params_keep_a_whole_trained_model(tmp_path, monkeypatch):
  """stored_params(cfg) with every parameter: the committed file alone gives the trained model's
  predictions, with no checkpoint; a file holding only the router's inputs is refused for the whole."""
  import shutil

  import numpy as np

  from mone.runs import experiments
  from mone.data import sources
  from mone.train import evaluation
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache"))
  cfg = tiny(kind="mone", e_c=0.3)
  experiments.run(cfg, progress=False)
  model, test = steps.build_model(cfg), sources.source(cfg, "test")
  want = evaluation.predict(cfg, model, experiments.trained_params(cfg), test, e_c=0.3)
  experiments.router_params(cfg)  # a file with the router's inputs only
  with pytest.raises(ValueError, match="does not hold the parameters asked for"):
    experiments.stored_params(cfg)
  experiments.stored_params(cfg, recompute=True)  # rewritten with every parameter
  shutil.rmtree(experiments.workdir(cfg))
  np.testing.assert_array_equal(evaluation.predict(cfg, model, experiments.stored_params(cfg), test, e_c=0.3), want)
  assert not experiments.workdir(cfg).exists()  # nothing retrained


@pytest.mark.slow
def test_a_learning_curve_is_recorded_and_survives_a_resume(tmp_path):
  cfg = tiny(kind="vit", eval_every=2, log_every=1, num_val=32)
  m = loop.train(cfg, tmp_path / "run", progress=False)
  curve = m["curve"]
  assert [p["step"] for p in curve] == [2, 4, 6]
  # One process trained it all: one segment, on this device and code, at JAX's default matmul precision.
  assert m["trained_on"] == [{"device": m["device"], "matmul_precision": "default", "code": m["code"],
                              "from_step": 0, "to_step": 6}]
  assert m["matmul_precision"] == "default"
  assert curve[1]["train_loss"] == pytest.approx(np.mean([loss for s, loss in m["history"] if s in (3, 4)]))
  assert all(0 <= p[k] <= 1 for p in curve for k in ("train_accuracy", "val_accuracy"))
  # The curve's points are evaluations of the model as it was at their step: the last equals
  # a fresh evaluation of the final weights on the same images.
  src = sources.validation_source(cfg)
  model = steps.build_model(cfg)
  assert curve[-1]["val_accuracy"] == evaluation.evaluate(cfg, model, checkpoints.load_params(tmp_path / "run"),
                                                          src)["accuracy"]
  lines = [json.loads(l) for l in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
  assert [l["step"] for l in lines if "val_accuracy" in l] == [2, 4, 6]
  # The final evaluations are repeated on the validation split: the same points as on test
  assert [(e["e_c"], e["width_index"]) for e in m["val_evals"]] == [(e["e_c"], e["width_index"]) for e in m["evals"]]
  assert m["val_evals"][0]["accuracy"] == curve[-1]["val_accuracy"] and m["val_evals"][0]["num_examples"] == 32
  # Killed after step 3's checkpoint: the resumed run's curve is the uninterrupted one.
  import shutil
  shutil.rmtree(tmp_path / "run" / "checkpoints" / "6")
  (tmp_path / "run" / "metrics.json").unlink()
  began = time.time()
  again = loop.train(cfg, tmp_path / "run", progress=False)
  assert again["resumed_from_step"] == 3 and again["curve"] == curve
  # Two processes trained it: the first up to the checkpoint the second resumed from.
  assert [(s["from_step"], s["to_step"]) for s in again["trained_on"]] == [(0, 3), (3, 6)]
  assert all(s["device"] == again["device"] for s in again["trained_on"])
  # Its wall time also counts the first part, up to the checkpoint it resumed from.
  assert again["timed_from_step"] == 0 and again["wall_time_s"] > time.time() - began + 0.1
  # Without a validation split the curve still tracks training; without eval_every there is none.
  no_val = loop.train(tiny(kind="vit", eval_every=3), tmp_path / "no_val", progress=False)
  assert [p["val_accuracy"] for p in no_val["curve"]] == [None, None] and "val_evals" not in no_val
  assert "curve" not in loop.train(tiny(kind="vit"), tmp_path / "plain", progress=False)
  # tail_eval_every adds points in the last quarter (from step 4.5 of 6) and changes nothing else:
  # the points both curves have score the same model the same.
  every3 = loop.train(tiny(kind="vit", eval_every=3, num_val=32), tmp_path / "every3", progress=False)
  tail = loop.train(tiny(kind="vit", eval_every=3, tail_eval_every=1, num_val=32), tmp_path / "tail", progress=False)
  assert [p["step"] for p in every3["curve"]] == [3, 6] and [p["step"] for p in tail["curve"]] == [3, 5, 6]
  assert [tail["curve"][i]["val_accuracy"] for i in (0, 2)] == [p["val_accuracy"] for p in every3["curve"]]
  assert tail["history"] == every3["history"]


def test_a_curve_point_is_due_every_eval_every_steps_and_in_the_last_quarter_every_tail_eval_every():
  cfg = tiny(kind="vit", eval_every=500, tail_eval_every=80)
  due = [s for s in range(1, 16_001) if loop.curve_point_due(cfg, s, 16_000)]
  assert due[:3] == [500, 1000, 1500] and 11_920 not in due and due[23:26] == [12_000, 12_080, 12_160]
  # 23 points before the last quarter; in it, 51 every 80 steps (12,000 to 16,000) and the 6 multiples
  # of 500 that are not multiples of 80 (12,500, 13,000, 13,500, 14,500, 15,000, 15,500).
  assert len(due) == 23 + 51 + 6 and due[-1] == 16_000
  assert [s for s in range(1, 8) if loop.curve_point_due(tiny(kind="vit", eval_every=3), s, 7)] == [3, 6, 7]
  assert not any(loop.curve_point_due(tiny(kind="vit"), s, 7) for s in range(1, 8))


@pytest.mark.slow
def test_a_checkpoint_of_older_code_resumes_with_an_unrecorded_first_part(tmp_path):
  cfg = tiny(kind="vit")
  loop.train(cfg, tmp_path, progress=False)
  shutil.rmtree(tmp_path / "checkpoints" / "6")
  (tmp_path / "metrics.json").unlink()
  saved = tmp_path / "checkpoints" / "3" / "history" / "metadata"  # orbax's JsonSave of the loop's history
  history = json.loads(saved.read_text())
  assert history["trained_on"][0]["from_step"] == 0 and history["trained_on"][0]["to_step"] == 3
  saved.write_text(json.dumps({k: v for k, v in history.items() if k != "trained_on"}))  # as older code saved it
  m = loop.train(cfg, tmp_path, progress=False)
  assert m["trained_on"] == [
      {"device": "unrecorded", "matmul_precision": "unrecorded", "from_step": 0, "to_step": 3},
      {"device": m["device"], "matmul_precision": "default", "code": m["code"], "from_step": 3, "to_step": 6}]


@pytest.mark.slow
def test_mone_matmul_precision_sets_jax_precision_and_is_recorded(tmp_path, monkeypatch):
  """MONE_MATMUL_PRECISION reaches the compiled matmuls and the run file; on the CPU "highest"
  trains the same bits as the default (XLA:CPU computes float32 matmuls in full float32)."""
  cfg = tiny(kind="mone", steps=4, log_every=1, checkpoint_every=4, lr=1e-2)
  default = loop.train(cfg, tmp_path / "default", progress=False)
  monkeypatch.setenv("MONE_MATMUL_PRECISION", "highest")
  try:
    m = loop.train(cfg, tmp_path / "highest", progress=False)
    lowered = jax.jit(lambda a: a @ a).lower(np.ones((4, 4), np.float32)).as_text()
  finally:
    jax.config.update("jax_default_matmul_precision", None)
  assert "HIGHEST" in lowered and "HIGHEST" not in jax.jit(lambda a: a @ a).lower(np.ones((4, 4), np.float32)).as_text()
  assert m["matmul_precision"] == "highest" and m["trained_on"][0]["matmul_precision"] == "highest"
  assert default["matmul_precision"] == "default" and default["trained_on"][0]["matmul_precision"] == "default"
  assert len({loss for _, loss in m["history"]}) > 1  # training moved: the comparison sees the updates
  assert m["history"] == default["history"] and m["evals"] == default["evals"]
  for a, b in zip(jax.tree.leaves(checkpoints.load_params(tmp_path / "default")),
                  jax.tree.leaves(checkpoints.load_params(tmp_path / "highest"))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert results.config_hash(m["config"]) == results.config_hash(default["config"])  # not part of the config
  monkeypatch.setenv("MONE_MATMUL_PRECISION", "fastest")
  with pytest.raises(ValueError, match=r"MONE_MATMUL_PRECISION must be one of 'default', 'high', 'highest' .* got 'fastest'"):
    loop.apply_matmul_precision()


def _tensorboard_scalars(logdir) -> dict:
  """{tag: [(step, value), ...]} from the TFRecord event files in logdir (each record: 8-byte
  length, 4-byte CRC, an Event proto, 4-byte CRC), read with tensorboardX's own protos."""
  from tensorboardX.proto import event_pb2
  out = {}
  for path in sorted(Path(logdir).glob("events.out.tfevents.*")):
    data, pos = path.read_bytes(), 0
    while pos < len(data):
      n = int.from_bytes(data[pos:pos + 8], "little")
      event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + n])
      pos += 16 + n
      for v in event.summary.value:
        out.setdefault(v.tag, []).append((event.step, v.simple_value))
  return out


class _ObjectStoreFile:
  """A gs://-like file for Progress: no append, and every read and write counted."""

  def __init__(self, text=None):
    self.text, self.reads, self.writes = text, 0, 0
    self.parent = self

  def __str__(self):
    return "mem://bucket/run/metrics.jsonl"

  def __truediv__(self, name):
    return self

  def exists(self):
    return self.text is not None

  def read_text(self):
    self.reads += 1
    return self.text

  def write_text(self, text):
    self.writes += 1
    self.text = text


def test_progress_on_an_object_store_reads_once_and_writes_in_bursts(monkeypatch):
  monkeypatch.setattr(loop, "_tensorboard", lambda logdir: None)
  cfg = tiny(kind="vit")
  resumed = _ObjectStoreFile('{"step": 2, "train_loss": 2.0}\n')  # a killed first attempt's line
  watch = loop.Progress(resumed, cfg, 10, 2)
  for step in (4, 6, 8):
    watch.log(step, 1.0)
  assert (resumed.reads, resumed.writes) == (1, 0)  # within REMOTE_FLUSH_S: nothing sent yet
  watch.close()
  assert resumed.writes == 1 and [json.loads(l)["step"] for l in resumed.text.splitlines()] == [2, 4, 6, 8]
  watch.close()  # nothing new: no second write
  assert resumed.writes == 1
  # Past REMOTE_FLUSH_S every line goes out as it comes; a new file is not read.
  monkeypatch.setattr(loop.Progress, "REMOTE_FLUSH_S", 0.0)
  fresh = _ObjectStoreFile()
  watch = loop.Progress(fresh, cfg, 10, 0)
  watch.log(2, 1.5)
  watch.log_point({"step": 2, "train_loss": 1.5, "train_accuracy": 0.5, "val_accuracy": None})
  assert (fresh.reads, fresh.writes) == (0, 2) and len(fresh.text.splitlines()) == 2


@pytest.mark.slow
def test_a_run_streams_its_progress_to_metrics_jsonl(tmp_path):
  cfg = tiny(kind="vit")
  m = loop.train(cfg, tmp_path / "run", progress=False)
  lines = [json.loads(l) for l in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
  assert [l["step"] for l in lines] == [s for s, _ in m["history"]] == [2, 4, 6]
  assert [l["train_loss"] for l in lines] == [loss for _, loss in m["history"]]
  schedule = steps.learning_rate(cfg, m["train_steps"])
  assert [l["lr"] for l in lines] == pytest.approx([float(schedule(s)) for s in (2, 4, 6)])
  assert all(l["examples_per_s"] > 0 for l in lines) and lines[-1]["eta_s"] == 0
  # The same numbers as TensorBoard scalars (tensorboardX is in requirements/lock.txt).
  board = _tensorboard_scalars(tmp_path / "run" / "tensorboard")
  assert [s for s, _ in board["train_loss"]] == [2, 4, 6] == [s for s, _ in board["lr"]]
  assert [v for _, v in board["train_loss"]] == pytest.approx([l for _, l in m["history"]], rel=1e-6)
  assert [v for _, v in board["lr"]] == pytest.approx([l["lr"] for l in lines], rel=1e-6)
  # A finished run rerun resumes at its end: nothing trained, nothing appended.
  loop.train(cfg, tmp_path / "run", progress=False)
  assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 3


def _script(name: str):
  """scripts/NAME.py as a module (the scripts are not a package)."""
  import importlib.util
  spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


PRECISIONS = {"default", "high", "highest", "bfloat16", "tensorfloat32", "float32"}  # jax_default_matmul_precision's


def test_every_committed_run_file_says_where_each_of_its_steps_trained():
  paths = sorted(results.RESULTS.glob("**/runs/*.json"))
  assert len(paths) > 100
  for path in paths:
    text = path.read_text()
    m = json.loads(text)
    parts = m["trained_on"]
    # Contiguous parts from step 0 to the last, each training at least one step.
    assert [p["from_step"] for p in parts] == [0] + [p["to_step"] for p in parts[:-1]], path.name
    assert parts[-1]["to_step"] == m["train_steps"] and all(p["from_step"] < p["to_step"] for p in parts), path.name
    assert m["matmul_precision"] in PRECISIONS and all(p["matmul_precision"] in PRECISIONS | {"unrecorded"} for p in parts)
    assert all(isinstance(p["device"], dict) and p["device"].get("kind") or p["device"] == "unrecorded" for p in parts)
    # As results.atomic_write_json writes it, so that a backfill's diff is only the lines it adds.
    assert text == json.dumps(m, indent=1, sort_keys=True) + "\n", path.name


@pytest.mark.parametrize("name, resumed", [("digits64-matvit-726f9fee4bb4", 7750), ("digits64-mone-b10f6ab119e8", 8000),
                                           ("digits64-mod-b237e4df839f", 8000), ("digits64-vit-27beb9d7c460", 750),
                                           ("digits64-mone-2ec095e22619", 8000), ("digits-vit-1770936882a0", 0)])
def test_the_backfill_adds_only_its_two_keys_and_reproduces_the_committed_files(tmp_path, name, resumed):
  """Each committed run file without trained_on and matmul_precision, as it was before the
  backfill, gets them back from scripts/backfill_provenance.py byte for byte (its sources: that
  script's docstring); its config hash is unchanged."""
  committed = results.RESULTS / "runs" / f"{name}.json"
  m = results.read_json(committed)
  assert m.get("resumed_from_step") == resumed and m["config_hash"] == results.config_hash(schema.from_json(m["config"]))
  old = {k: v for k, v in m.items() if k not in ("trained_on", "matmul_precision")}
  (tmp_path / "runs").mkdir()
  (tmp_path / "runs" / committed.name).write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
  backfill = _script("backfill_provenance")
  assert backfill.main(tmp_path) == 1 and backfill.main(tmp_path) == 0  # idempotent
  assert (tmp_path / "runs" / committed.name).read_text() == committed.read_text()
  here = {"device": m["device"], "matmul_precision": "default"}
  if m["device"]["platform"] == "gpu":  # both parts on the GPU that finished it (commits ad1e656, aaa29b0)
    first = here
  else:  # an earlier part on a CPU whose cores are unrecorded
    first = {"device": {"kind": "cpu", "platform": "cpu"}, "matmul_precision": "default"}
  steps = m["train_steps"]
  if not resumed:
    want = [{**here, "from_step": 0, "to_step": steps}]
  elif resumed == steps:  # the resumed process only evaluated: `device`, no part
    want = [{**first, "from_step": 0, "to_step": steps}]
  else:
    want = [{**first, "from_step": 0, "to_step": resumed}, {**here, "from_step": resumed, "to_step": steps}]
  assert m["trained_on"] == want and m["matmul_precision"] == "default"


def test_train_run_answers_bad_input_in_one_line_and_writes_nothing(tmp_path, monkeypatch):
  train_run = _script("train_run")
  cache = tmp_path / "cache"
  monkeypatch.setenv("MONE_CACHE_DIR", str(cache))
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "results"))

  def error(*argv) -> str:
    with pytest.raises(SystemExit) as e:
      train_run.main(list(argv))
    assert isinstance(e.value.code, str) and "\n" not in e.value.code  # one line on stderr, exit status 1
    return e.value.code

  n = jax.device_count()
  assert error("smoke", f"num_devices={n + 1}") == \
      f"train_run.py: error: num_devices must be in [0, {n}] on this machine (0: all devices), got {n + 1}"
  assert "e_c must be in" in error("smoke", "e_c=1.5")
  monkeypatch.setenv("MONE_MATMUL_PRECISION", "fastest")
  assert "MONE_MATMUL_PRECISION must be one of" in error("smoke")
  monkeypatch.delenv("MONE_MATMUL_PRECISION")
  assert not cache.exists() and not (tmp_path / "results").exists()
  cache.write_text("")  # a file where the cache folder should be
  msg = error("smoke")
  assert msg.startswith("train_run.py: error: the run's workdir (under MONE_CACHE_DIR)") and "cannot be created" in msg
  assert cache.read_text() == "" and not (tmp_path / "results").exists()
  monkeypatch.setenv("MONE_CACHE_DIR", str(tmp_path / "cache2"))
  (tmp_path / "results").write_text("")  # the run file could not be written after training: refused before
  msg = error("smoke")
  assert msg.startswith("train_run.py: error: the run file's folder (under MONE_RESULTS_DIR)") and "cannot be created" in msg
  assert (tmp_path / "results").read_text() == ""
