"""Reliability: properties over random inputs, faults injected into training, bad inputs.

Every fault and bad input here has a test that states what happens: a clear error naming the
parameter (and nothing written), or a documented guard.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import REPO, randomize, set_alpha, tiny, train_cli, train_command
from hypothesis import strategies as st

from mone import capacity
from mone.data import pipeline, sources
from mone.models import config, kinds, routing
from mone.configs import recipes
from mone.train import loop

PROPS = hypothesis.settings(max_examples=40, deadline=None, derandomize=True)


# ------------------------------------------------------------ property tests ---


@st.composite
def distributions(draw, max_experts=5):
  """Random capacity distributions (some entries exactly 0) over 1..max_experts experts."""
  e = draw(st.integers(1, max_experts))
  w = np.array(draw(st.lists(st.sampled_from([0.0, 0.05, 0.3, 1.0, 2.5]), min_size=e, max_size=e)))
  if w.sum() == 0:
    w[-1] = 1.0
  return tuple(w / w.sum())


@PROPS
@hypothesis.given(caps=distributions(), n=st.integers(1, 37), batch=st.integers(1, 3),
                  nan_frac=st.sampled_from([0.0, 0.0, 0.2, 1.0]), seed=st.integers(0, 2 ** 16))
def test_epr_exact_counts_each_token_once_by_preference(caps, n, batch, nan_frac, seed):
  rng = np.random.default_rng(seed)
  e = len(caps)
  # Coarse scores make ties common; some tokens get NaN/Inf scores (the guard case).
  probs = rng.integers(0, 4, size=(batch, n, e)).astype(np.float32) / 4
  bad = rng.random((batch, n)) < nan_frac
  probs[bad] = rng.choice([np.nan, np.inf, -np.inf], size=(bad.sum(), e))
  a = np.asarray(routing.expert_preferred_routing(jnp.asarray(probs), caps))
  counts = routing.expert_counts(caps, n)
  assert a.shape == (batch, n) and a.dtype == np.int32
  for b in range(batch):
    assert np.bincount(a[b], minlength=e).tolist() == list(counts)  # exact, each token once
    for j in range(e - 1, 0, -1):  # expert j took the best k_j of the tokens still free
      free = a[b] <= j
      score = np.where(bad[b], -np.inf, probs[b, :, j])  # the guard: non-finite = least preferred
      took, left = score[free & (a[b] == j)], score[free & (a[b] < j)]
      if len(took) and len(left):
        assert took.min() >= left.max()
      # A non-finite token is only taken when too few finite tokens were free.
      assert (bad[b] & (a[b] == j)).sum() <= max(0, counts[j] - (free & ~bad[b]).sum())


@PROPS
@hypothesis.given(e=st.integers(1, 5), u=st.floats(0, 1))
def test_solver_meets_the_constraints_anywhere_in_the_feasible_range(e, u):
  lo = 2.0 ** -(e - 1)
  e_c = lo + u * (1 - lo)
  c = capacity.capacity_distribution(e_c, e)
  assert c.shape == (e,) and np.all(c >= -1e-9) and np.all(c <= 1 + 1e-9)
  np.testing.assert_allclose([c.sum(), capacity.effective_capacity(c)], [1.0, e_c], atol=1e-7)


@PROPS
@hypothesis.given(e=st.integers(2, 5), u=st.floats(0.0, 0.999))
def test_solver_rejects_infeasible_e_c_with_the_range(e, u):
  e_c = u * 2.0 ** -(e - 1)  # below the smallest expert's cost: no distribution reaches it
  with pytest.raises(ValueError, match="e_c") as err:
    capacity.capacity_distribution(e_c, e)
  if e_c > 0:  # the message gives the feasible range
    assert f"[{2.0 ** -(e - 1)}, 1]" in str(err.value)


@hypothesis.settings(max_examples=4, deadline=None, derandomize=True)
@hypothesis.given(e=st.integers(1, 4), heads=st.sampled_from([1, 2]), mult=st.integers(1, 2),
                  depth=st.integers(1, 3), router_layer=st.integers(0, 2), seed=st.integers(0, 99))
def test_full_width_routing_equals_the_dense_vit(e, heads, mult, depth, router_layer, seed):
  width = heads * 2 ** (e - 1) * 4 * mult  # every nested width a multiple of the head count
  cfg = config.vit("tiny/8", width=width, num_heads=heads, num_experts=e, depth=depth,
                   router_layer=min(router_layer, depth - 1))
  x = jax.random.normal(jax.random.key(seed), (2, 32, 32, 3))
  full = (0.0,) * (e - 1) + (1.0,)
  mone = kinds.build(cfg, "mone")
  v = set_alpha(randomize(mone.init(jax.random.key(seed), x, full), seed), 0.0)
  dense_params = {k: p for k, p in v["params"].items() if not k.startswith("router") and k != "alpha"}
  got = mone.apply(v, x, full)[0]
  want = kinds.build(cfg, "vit").apply({"params": dense_params}, x)[0]
  assert np.abs(np.asarray(want)).max() > 0.05
  np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


# ---------------------------------------------------------------- determinism ---


VOLATILE = ("wall_time_s", "peak_rss_mib")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """One finished tiny run (checkpoints at steps 3 and 6): (metrics, workdir)."""
  work = tmp_path_factory.mktemp("finished")
  return loop.train(tiny(), work, progress=False), work


@pytest.mark.slow
def test_same_config_and_seed_give_identical_metrics(tmp_path, finished):
  a = finished[0]
  b = loop.train(tiny(), tmp_path / "b", progress=False)
  strip = lambda m: json.loads(json.dumps({k: v for k, v in m.items() if k not in VOLATILE}, default=str))
  assert strip(a) == strip(b)  # bit for bit: every loss, every accuracy
  assert a["history"] != loop.train(tiny(seed=1), tmp_path / "c", progress=False)["history"]
  # Every results file records what produced it.
  assert {"seed", "config_hash", "versions", "device"} <= set(a)
  assert {"jax", "flax", "optax", "numpy", "mone", "python"} <= set(a["versions"])
  assert a["device"]["platform"] == "cpu" and a["peak_rss_mib"] > 0


# ------------------------------------------------------------ fault injection ---


def _cli(workdir, *extra):
  return train_command(workdir, "steps=40", "checkpoint_every=5", *extra)


def _check_nothing_half_written(work: Path):
  if (work / "metrics.json").exists():
    json.loads((work / "metrics.json").read_text())  # complete JSON or absent, never half
  assert not list(work.glob("*.tmp*")), list(work.glob("*.tmp*"))


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_matches_an_uninterrupted_run(tmp_path):
  """Three SIGKILLs at random moments (seeded): while compiling, between and during checkpoint
  saves. Each restart resumes from the newest good checkpoint; the end is bit-identical."""
  env = {**os.environ, "PYTHONUNBUFFERED": "1"}
  ref = subprocess.run(_cli(tmp_path / "ref"), env=env, capture_output=True, text=True, cwd=REPO)
  assert ref.returncode == 0, ref.stderr[-2000:]
  # The run's own peak (RUSAGE_CHILDREN would also count the notebook kernels of other tests).
  a = json.loads((tmp_path / "ref" / "metrics.json").read_text())
  peak_mib = a["peak_rss_mib"]
  assert 0 < peak_mib < 4096, f"the smoke run peaked at {peak_mib:.0f} MiB"  # documented in book/reference.md
  # The overrides on both sides of --quiet applied (smoke's own: num_devices=0, checkpoint_every=20).
  assert a["config"]["num_devices"] == 1 and a["config"]["checkpoint_every"] == 5
  # One process trained it all, at JAX's default matmul precision, on the code its run file names.
  assert a["trained_on"] == [{"device": a["device"], "matmul_precision": "default", "code": a["code"],
                              "from_step": 0, "to_step": 40}]
  work, rng = tmp_path / "killed", random.Random(0)
  kills = []
  for target in sorted(rng.sample(range(5, 40, 5), 3)):
    proc = subprocess.Popen(_cli(work), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    deadline = time.time() + 300
    ckpt = work / "checkpoints" / str(target)
    while not ckpt.exists() and proc.poll() is None and time.time() < deadline:
      time.sleep(0.01)
    time.sleep(rng.uniform(0, 0.2))  # land anywhere: mid-save, mid-step, mid-eval
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kills.append((target, proc.returncode))
    _check_nothing_half_written(work)
  assert all(rc == -signal.SIGKILL for _, rc in kills), kills  # every kill landed before the end
  again = subprocess.run(_cli(work), env=env, capture_output=True, text=True, cwd=REPO)
  assert again.returncode == 0, again.stderr[-2000:]
  b = json.loads((work / "metrics.json").read_text())
  assert b["resumed_from_step"] >= kills[-1][0]
  assert a["history"] == b["history"] and a["evals"] == b["evals"]  # bit for bit
  # Every process that got to a checkpoint is a part, contiguous up to the checkpoint the next
  # one resumed from (a process killed before its first checkpoint left nothing to resume: no part).
  parts = b["trained_on"]
  assert 2 <= len(parts) <= len(kills) + 1 and parts[-1]["from_step"] == b["resumed_from_step"]
  assert [p["from_step"] for p in parts] == [0] + [p["to_step"] for p in parts[:-1]] and parts[-1]["to_step"] == 40
  assert all(p["from_step"] < p["to_step"] and p["to_step"] % 5 == 0 and p["device"] == b["device"] for p in parts)
  # (A rerun of a finished run only reloads: test_train.py::test_rerun_of_finished_run_does_no_training.)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete"])
def test_damaged_latest_checkpoint_falls_back_to_the_previous_good_one(tmp_path, capsys, finished, damage):
  ref, done = finished
  work = tmp_path / "w"
  shutil.copytree(done, work)
  (work / "metrics.json").unlink()  # as if killed after the last save
  files = [p for p in (work / "checkpoints" / "6").rglob("*") if p.is_file() and p.stat().st_size > 0]
  assert files
  for p in files:
    if damage == "truncate":
      p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    elif damage == "garbage":
      p.write_bytes(b"\x00garbage" * 16)
    else:
      p.unlink()
  got = loop.train(tiny(), work, progress=False)
  assert "checkpoint at step 6 is corrupt or incomplete" in capsys.readouterr().err
  assert got["resumed_from_step"] == 3
  assert got["history"] == ref["history"] and got["evals"] == ref["evals"]


def test_diverging_training_stops_with_a_clear_error_and_no_metrics(tmp_path):
  with pytest.raises(FloatingPointError, match="loss became .* at step"):
    loop.train(tiny(lr=1e30, grad_clip=1e30, steps=12, log_every=1), tmp_path, progress=False)
  assert not (tmp_path / "metrics.json").exists()


# ------------------------------------------------------------------ bad input ---


def test_nan_or_inf_inputs_are_rejected_by_the_source():
  x = np.zeros((4, 8, 8, 3), np.float32)
  x[1, 2, 3, 0] = np.nan
  x[2, 0, 0, 1] = np.inf
  with pytest.raises(ValueError, match=r"arrays\['image'\] has 2 NaN or Inf values"):
    pipeline.ArraySource({"image": x, "label": np.zeros(4, np.int32)})


def test_nan_inputs_route_the_finite_tokens_as_before():
  """The documented guard: a token whose router scores are NaN (from a NaN pixel) becomes the
  least preferred; every other token keeps the routing it had."""
  cfg = config.vit("tiny/8")
  m = kinds.build(cfg, "mone")
  x = jax.random.normal(jax.random.key(0), (1, 32, 32, 3))
  v = randomize(m.init(jax.random.key(0), x, (0.25,) * 4))
  caps = (0.25, 0.25, 0.25, 0.25)
  clean = np.asarray(m.apply(v, x, caps)[1]["assignment"])[0]
  top = int(np.flatnonzero(clean == 3)[0])  # a token the full expert took
  row, col = divmod(top, cfg.image_size // cfg.patch_size)
  p = cfg.patch_size
  dirty = x.at[0, row * p, col * p, 0].set(jnp.nan)
  logits, aux = m.apply(v, dirty, caps)
  got = np.asarray(aux["assignment"])[0]
  assert got[top] == 0  # the NaN token drops to the smallest expert
  assert np.bincount(got, minlength=4).tolist() == np.bincount(clean, minlength=4).tolist()
  assert np.isnan(np.asarray(logits)).all()  # the NaN is not hidden: the loss will stop training


@pytest.mark.parametrize("shape,match", [((2, 32, 32, 1), "images must have shape"),
                                          ((2, 32, 32), "images must have shape"),
                                          ((2, 16, 16, 3), "images must have shape")])
def test_images_of_the_wrong_size_or_channels(shape, match):
  cfg = config.vit("tiny/8")
  m = kinds.build(cfg, "vit")
  with pytest.raises(ValueError, match=match):
    m.init(jax.random.key(0), jnp.zeros(shape))


@pytest.mark.parametrize("args,message", [
    (["e_c=0"], "e_c must be in"), (["e_c=-0.5"], "e_c must be in"),
    (["model.num_experts=0"], "num_experts must be >= 1"),
    (["model.width=36"], "divisible"), (["model.num_routers=9"], "num_routers must be in"),
    (["model.router_layer=-1"], "router_layer must be in"),
    (["dataset=tfds", "tfds_name=imagenet2012"], "reads a prepared TFDS data_dir"),
    (["dataset=tfds", "tfds_name=imagenet2012", "data_dir=/nonexistent/tfds"], "is not a directory")])
def test_cli_rejects_bad_values_before_writing(tmp_path, args, message, capsys):
  work = tmp_path / "w"
  out = train_cli(_cli(work, *args), capsys, own_process=args == ["e_c=0"])
  assert message in _one_line_error(out)
  assert not work.exists()


def _one_line_error(out) -> str:
  """The command's error, checked for what every bad input must give: exit status 2 and one line
  on stderr (no traceback, no usage)."""
  assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]
  assert out.stderr.startswith("python -m mone.train: error: ")
  return out.stderr.strip()


def test_cli_more_devices_than_the_machine_has_is_one_line_and_writes_nothing(tmp_path, capsys):
  work, n = tmp_path / "w", jax.device_count()  # the command sees the devices the tests see (conftest)
  out = train_cli(_cli(work, f"num_devices={n + 1}"), capsys)
  assert _one_line_error(out).endswith(f"num_devices must be in [0, {n}] on this machine (0: all devices), got {n + 1}")
  assert not work.exists()


@pytest.mark.parametrize("where", ["under_a_file", "/proc/mone-workdir"])
def test_cli_a_workdir_that_cannot_be_created_is_one_line(tmp_path, where, capsys):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  work = blocker / "run" if where == "under_a_file" else Path(where)
  out = train_cli(_cli(work), capsys)
  line = _one_line_error(out)
  assert f"--workdir {str(work)!r} cannot be created: " in line
  assert line.endswith("Not a directory") or where != "under_a_file"  # the OS's reason (ENOTDIR)
  assert blocker.read_text() == "" and not work.exists()


def test_cli_an_unknown_matmul_precision_is_one_line(tmp_path):
  work = tmp_path / "w"
  out = subprocess.run(_cli(work), capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "MONE_MATMUL_PRECISION": "fastest"})
  assert "MONE_MATMUL_PRECISION must be one of 'default', 'high', 'highest'" in _one_line_error(out)
  assert not work.exists()


def test_data_dir_without_the_dataset_names_it(tmp_path):
  cfg = recipes.get_config("imagenet21k", [f"data_dir={tmp_path}"])
  with pytest.raises(Exception, match="imagenet21k|data_dir|not found|No such"):
    sources.data_sources(cfg)


def test_paper_configs_build_without_data_dir_and_fail_clearly_at_data():
  for name in ("imagenet21k", "imagenet1k", "ssv2", "kinetics400"):
    cfg = recipes.get_config(name)
    with pytest.raises(ValueError, match="set data_dir=PATH"):
      sources.check_data(cfg)
