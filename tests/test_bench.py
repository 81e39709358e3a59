"""The benchmark machinery on a tiny model: schema, FLOP accounting, chunking. No timing claims."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mone import capacity, flops, results
from mone.bench import cli, micro, timing, workloads
from mone.models import config, routing

KEYS = {"workload", "mode", "batch", "model", "e_c", "median_ms", "p25_ms", "p75_ms", "reps",
        "speedup", "flop_ratio", "efficiency", "gflops", "chunk", "load_1m", "note"}


def test_bench_writes_rows_with_analytic_flop_ratios(tmp_path, monkeypatch):
  monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
  path = tmp_path / "bench.json"
  cli.main(["--variant", "tiny/8", "--batch", "2", "--e-c", "0.3", "--mode", "forward", "train",
              "--reps", "1", "--chunk", "1", "--json", str(path)])
  out = results.read_json(path)
  assert {"cpu_model", "cores", "jax", "load_avg", "date", "code"} <= set(out["machine"])
  assert out["machine"]["glibc_tunables"] == "glibc.malloc.arena_max=1"  # the heap settings it ran with
  assert "dense" in out["baseline"]
  rows = out["rows"]
  for mode in ("forward", "train"):
    models = [(r["model"], r["e_c"]) for r in rows if r["mode"] == mode]
    assert models == [("dense", None), ("mone", 0.3), ("matvit", 0.3), ("masked", 0.3)]
  cfg = config.vit("tiny/8")
  dense = flops.gflops(cfg)
  for r in rows:
    assert KEYS <= set(r)
    assert r["median_ms"] > 0 and r["reps"] == 1 and r["chunk"] == 1
    assert np.isclose(r["efficiency"], r["speedup"] / r["flop_ratio"])
    if r["model"] == "dense":
      assert r["speedup"] == 1.0 and r["flop_ratio"] == 1.0
    if r["model"] == "mone":
      assert np.isclose(r["flop_ratio"], dense / flops.gflops(cfg, "mone", r["e_c"]))
    if r["model"] == "matvit":  # the sub-model with the FLOPs closest to MoNE at e_c = 0.3
      assert np.isclose(r["flop_ratio"], dense / flops.gflops(cfg, "matvit", 0.25))


def test_block_mode_times_one_blocks_forward_and_backward_apart(tmp_path):
  path = tmp_path / "block.json"
  cli.main(["--variant", "tiny/8", "--batch", "2", "--e-c", "0.3", "1.0", "--block", "--reps", "1",
              "--json", str(path)])
  out = results.read_json(path)
  rows = out["rows"]
  assert out["complete"] and {"cpu_model", "cores", "jax"} <= set(out["machine"])
  for mode in ("block forward", "block backward"):
    assert [(r["model"], r["e_c"]) for r in rows if r["mode"] == mode] == [
        ("dense", None), ("mone", 0.3), ("mone", 1.0), ("attention", None)]
  cfg = config.vit("tiny/8")
  n, d, m = cfg.num_tokens, cfg.width, cfg.mlp_dim
  counts = routing.expert_counts(capacity.capacity_distribution(0.3, cfg.num_experts), n)
  ratio = flops.block_macs([n], [d], d, m) / flops.block_macs(counts, cfg.expert_widths, d, m)
  for r in rows:
    assert KEYS <= set(r) and r["median_ms"] > 0 and r["reps"] == 1 and r["batch"] == 2
    assert np.isclose(r["efficiency"], r["speedup"] / r["flop_ratio"])
    if r["model"] == "dense":
      assert r["speedup"] == 1.0 and r["flop_ratio"] == 1.0
    elif r["model"] == "attention":  # QK^T and AV: 2 N^2 D of the block's MACs
      assert np.isclose(r["flop_ratio"], flops.block_macs([n], [d], d, m) / (2 * n * n * d))
    else:
      assert np.isclose(r["flop_ratio"], ratio if r["e_c"] == 0.3 else 1.0), r


def test_matmul_mode_times_every_projection_of_every_group(tmp_path, capsys):
  path = tmp_path / "matmul.json"
  cli.main(["--variant", "tiny/8", "--batch", "2", "--e-c", "0.3", "--matmul", "--reps", "1", "--json", str(path)])
  rows = results.read_json(path)["rows"]
  cfg = config.vit("tiny/8")
  n, d, m = cfg.num_tokens, cfg.width, cfg.mlp_dim
  counts = routing.expert_counts(capacity.capacity_distribution(0.3, cfg.num_experts), n)
  live = [w for c, w in zip(counts, cfg.expert_widths) if c]
  for model, widths, groups in (("dense", [d], [n]), ("mone", live, [c for c in counts if c])):
    sel = [r for r in rows if r["model"] == model and r["projection"] != "total"]
    assert [(r["width"], r["projection"]) for r in sel] == [(w, p) for w in widths for p in micro.PROJECTIONS]
    # The shapes Block multiplies: their MACs are the block's, less attention, for 2 examples.
    block = flops.block_macs(groups, widths, d, m) - 2 * n * n * d
    assert sum(np.prod(r["shape"]) for r in sel) == 2 * block
    (total,) = [r for r in rows if r["model"] == model and r["projection"] == "total"]
    assert np.isclose(total["median_us"], sum(r["median_us"] for r in sel))
    for r in sel:
      assert r["median_us"] > 0 and r["batch"] == 2
      assert np.isclose(r["gflops_per_s"], 2 * np.prod(r["shape"]) / r["median_us"] / 1e3)
  assert all(np.isclose(r["rate"], 1.0) for r in rows if r["model"] == "dense")
  assert "rate" in capsys.readouterr().out
  with pytest.raises(SystemExit):
    cli.main(["--variant", "tiny/8", "--block", "--matmul"])
  assert "--block and --matmul" in capsys.readouterr().err


def test_chunking_changes_nothing_but_speed():
  wl = workloads.image_workload("tiny/8", [0.3], with_matvit=False, with_masked=False)
  x, y = wl.make_inputs(4)
  mone = wl.contenders[1]
  v = timing.prepare(mone)
  whole = timing.forward_fn(mone, 4, 4)(v, x)
  chunked = timing.forward_fn(mone, 2, 4)(v, x)
  np.testing.assert_allclose(chunked, whole, rtol=1e-5, atol=1e-5)

  tx = optax.sgd(1.0)  # the update is the gradient itself: accumulating over chunks is exact
  new = [timing.train_fn(mone, c, 4, tx)((jax.tree.map(jnp.copy, mone.params), tx.init(mone.params)), x, y)[0]
         for c in (4, 1)]
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), *new)


def test_video_rows_and_targets(tmp_path):
  path = tmp_path / "bench.json"
  cli.main(["--variant", "tiny/8", "--batch", "2", "--e-c", "0.3", "1.0", "--mode", "forward",
              "--reps", "1", "--chunk", "1", "--no-matvit", "--no-masked", "--video", "tiny/8x2",
              "--video-frames", "2", "--video-batch", "2", "--video-e-c", "0.3", "--json", str(path)])
  out = results.read_json(path)
  video = [r for r in out["rows"] if r["workload"].startswith("ViViT")]
  assert [(r["model"], r["e_c"]) for r in video] == [("dense", None), ("mone", 0.3)]
  cfg = config.vivit("tiny/8x2", num_frames=2)
  assert np.isclose(video[1]["flop_ratio"], flops.gflops(cfg) / flops.gflops(cfg, "mone", 0.3))
  assert set(out["baselines"]) == {r["workload"] for r in out["rows"]}
  # Targets are checked on the image workload only, for what was run (no train mode here).
  assert {(t["mode"], t["e_c"]) for t in out["targets"]} == {("forward", 0.3), ("forward", 1.0)}
  for t in out["targets"]:
    # ok also needs the target against the fastest full-width model (`strict`, check_targets): with
    # one rep each, MoNE at e_c=1.0 can time faster than the dense row.
    assert t["workload"].startswith("ViT") and t["ok"] == (min(t["measured"], t["strict"]) >= t["target"])


def test_video_only_times_the_video_workload_alone(tmp_path):
  path = tmp_path / "bench.json"
  cli.main(["--video-only", "--video", "tiny/8x2", "--video-frames", "2", "--video-batch", "2", "--video-e-c", "0.3",
            "--mode", "train", "--reps", "1", "--chunk", "1", "--json", str(path)])
  out = results.read_json(path)
  assert {r["workload"] for r in out["rows"]} == {out["workload"]} == set(out["baselines"])
  assert out["workload"].startswith("ViViT") and out["complete"] and out["targets"] == []
  assert [(r["mode"], r["model"], r["e_c"]) for r in out["rows"]] == [("train", "dense", None), ("train", "mone", 0.3)]
  with pytest.raises(ValueError, match="--video-only needs --video"):
    cli.measure(tmp_path / "x.json", video_only=True)


def test_bfloat16_workload_computes_in_bfloat16():
  """--dtype bfloat16 (GPU runs): parameters, inputs and every contender's logits are bf16,
  i.e. no constant in the model code silently promotes the computation back to float32."""
  wl = workloads.cast(workloads.image_workload("tiny/8", [0.3], with_matvit=True, with_masked=False), jnp.bfloat16)
  x, y = wl.make_inputs(2)
  assert x.dtype == jnp.bfloat16 and y.dtype == jnp.int32
  for c in wl.contenders:
    assert {l.dtype for l in jax.tree.leaves(c.params)} == {jnp.dtype(jnp.bfloat16)}, c.name
    logits = timing.forward_fn(c, chunk=2, batch=2)(timing.prepare(c), x)
    assert logits.dtype == jnp.bfloat16 and bool(jnp.isfinite(logits).all()), c.name
  assert "bfloat16" in wl.baseline and "float32" not in wl.baseline
  assert workloads.cast(wl, jnp.float32) is wl


def test_targets_hold_only_against_the_fastest_full_width_model():
  """MoNE at e_c = 1.0 does the dense model's work plus routing: when it is faster than the
  dense row, the dense median is the noisy one, and a target must hold against the faster."""
  def row(model, e_c, ms, ratio=1.0):
    return {"workload": "ViT", "mode": "forward", "batch": 8, "model": model, "e_c": e_c, "median_ms": ms,
            "flop_ratio": ratio, "speedup": 100.0 / ms, "efficiency": 100.0 / ms / ratio}
  rows = [row("dense", None, 100.0), row("mone", 0.3, 40.0, 2.78), row("mone", 1.0, 90.0)]
  checks = {c["e_c"]: c for c in timing.check_targets(rows)}
  assert np.isclose(checks[0.3]["measured"], 2.5 / 2.78) and checks[0.3]["measured"] >= 0.85
  assert np.isclose(checks[0.3]["strict"], 2.25 / 2.78) and not checks[0.3]["ok"]
  assert checks[1.0]["ok"] and np.isclose(checks[1.0]["strict"], 100 / 90)
  assert "[0.81 vs the fastest full-width model]" in timing.targets_table([checks[0.3]])
  rows[2] = row("mone", 1.0, 104.0)  # slower than dense: the dense row stands
  checks = {c["e_c"]: c for c in timing.check_targets(rows)}
  assert checks[0.3]["ok"] and checks[0.3]["strict"] == checks[0.3]["measured"]
  assert "[" not in timing.targets_table([checks[0.3]])


def test_code_version_is_dirty_only_for_uncommitted_package_code(tmp_path, monkeypatch):
  """A benchmark writes results while it runs; only changes to mone/ change what it times."""
  import subprocess
  git = lambda *a: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *a], cwd=tmp_path,
                                  check=True, capture_output=True, text=True).stdout.strip()
  (tmp_path / "mone").mkdir()
  (tmp_path / "mone" / "models.py").write_text("a = 1\n")
  (tmp_path / "notes.json").write_text("{}\n")
  git("init", "-q")
  git("add", ".")
  git("commit", "-q", "-m", "init")
  monkeypatch.setattr(results, "REPO", tmp_path)
  head = git("rev-parse", "--short=12", "HEAD")
  assert cli.code_version() == head
  (tmp_path / "notes.json").write_text('{"rows": []}\n')
  assert cli.code_version() == head
  (tmp_path / "mone" / "models.py").write_text("a = 2\n")
  assert cli.code_version() == head + "+dirty"


def test_measure_runs_what_the_command_line_runs_and_refuses_unknown_options(tmp_path):
  out = cli.measure(tmp_path / "m.json", variant="tiny/8", batch=[2], e_c=[0.3], reps=1, matmul=True)
  assert out["complete"] and {r["projection"] for r in out["rows"]} == {*micro.PROJECTIONS, "total"}
  assert out["args"]["matmul"] and out["args"]["batch"] == [2]
  with pytest.raises(ValueError, match="unknown benchmark option.*'batches'"):
    cli.measure(tmp_path / "x.json", batches=[2])
  with pytest.raises(ValueError, match="--block and --matmul time different things"):
    cli.measure(tmp_path / "x.json", block=True, matmul=True)
  assert not (tmp_path / "x.json").exists()


def test_the_command_line_refuses_block_and_matmul_together(tmp_path, capsys):
  with pytest.raises(SystemExit) as exit_info:
    cli.main(["--block", "--matmul", "--json", str(tmp_path / "x.json")])
  assert exit_info.value.code == 2 and "--block and --matmul time different things" in capsys.readouterr().err
  assert not (tmp_path / "x.json").exists()
  assert cli.command_line(variant="tiny/8", batch=[2], block=True, no_matvit=False) == \
      "python -m mone.bench --variant tiny/8 --batch 2 --block"
