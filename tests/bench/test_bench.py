"""The benchmark machinery on a tiny model: schema, FLOP accounting, chunking. No timing claims."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mone import capacity, flops, results
from mone.bench import cli, correctness, micro, ops, report, targets, timing, workloads
from mone.bench.groups import families, plan
from mone.bench.switches import Switch
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
  assert "--block, --matmul and --routing" in capsys.readouterr().err


@pytest.mark.slow  # a benchmark option
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


@pytest.mark.slow  # a benchmark option (--video)
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


@pytest.mark.slow  # a benchmark option
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
  checks = {c["e_c"]: c for c in targets.check_targets(rows)}
  assert np.isclose(checks[0.3]["measured"], 2.5 / 2.78) and checks[0.3]["measured"] >= 0.85
  assert np.isclose(checks[0.3]["strict"], 2.25 / 2.78) and not checks[0.3]["ok"]
  assert checks[1.0]["ok"] and np.isclose(checks[1.0]["strict"], 100 / 90)
  assert "[0.81 vs the fastest full-width model]" in targets.targets_table([checks[0.3]])
  rows[2] = row("mone", 1.0, 104.0)  # slower than dense: the dense row stands
  checks = {c["e_c"]: c for c in targets.check_targets(rows)}
  assert checks[0.3]["ok"] and checks[0.3]["strict"] == checks[0.3]["measured"]
  assert "[" not in targets.targets_table([checks[0.3]])


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
  with pytest.raises(ValueError, match="--block, --matmul and --routing time different things"):
    cli.measure(tmp_path / "x.json", block=True, matmul=True)
  with pytest.raises(ValueError, match="--video-image-size must be a positive number of pixels, got 0"):
    cli.measure(tmp_path / "x.json", video="tiny/8x2", video_image_size=0)
  assert not (tmp_path / "x.json").exists()


def test_the_command_line_refuses_block_and_matmul_together(tmp_path, capsys):
  for pair in (["--block", "--matmul"], ["--matmul", "--routing"]):
    with pytest.raises(SystemExit) as exit_info:
      cli.main([*pair, "--json", str(tmp_path / "x.json")])
    assert exit_info.value.code == 2 and "--block, --matmul and --routing time different things" in capsys.readouterr().err
  assert not (tmp_path / "x.json").exists()
  assert cli.command_line(variant="tiny/8", batch=[2], block=True, no_matvit=False) == \
      "python -m mone.bench --variant tiny/8 --batch 2 --block"


# ------------------------------------------------------------------------------------------------
# The GPU report (mone.bench.report), in its --tiny CPU mode: the machinery, never the speed.

@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
  path = tmp_path_factory.mktemp("report") / "report.json"
  # The default budget (420 s) is sized for a GPU call; here it would turn rows into "skipped: budget"
  # on a loaded CPU, and this test checks what the report computes, not how fast.
  cli.main(["--report", "--tiny", "--budget-s", "3600", "--json", str(path)])
  return results.read_json(path), path


def _has_field(name):
  return name in {f.name for f in dataclasses.fields(config.ViTConfig)}


@pytest.mark.slow
def test_tiny_report_runs_every_group_and_times_every_setting(tiny_report):
  out, path = tiny_report
  fams = families(tiny=True)
  assert out["complete"] and out["aborted"] is None and out["tiny"]
  assert out["plan"] == [g.name for g in plan(fams, tiny=True)] and set(out["plan"]) == set(out["groups"])
  for name, g in out["groups"].items():
    assert g["status"].startswith("done"), (name, g)
    assert 0 <= g["started_s"] <= g["finished_s"] <= out["elapsed_s"]
  assert {"jax", "jaxlib", "flax"} <= set(out["versions"]) and "code" in out and out["machine"]["device"]
  assert out["matmul_precision"]["float32_correctness"] == "highest"
  assert out["args"]["json"] is not None and "results/bench" not in str(path)
  switches = {s["name"]: s for s in out["switches"]}
  assert switches["fused_mlp"]["kind"] == "config" and switches["fused_mlp"]["field"] == "mlp"
  for name, field in (("attention", "attention"), ("grad_barrier", "grad_barrier"), ("fused_mlp", "mlp")):
    assert switches[name]["available"] == _has_field(field)

  rows = out["rows"]
  for group in (g for g in plan(fams, tiny=True) if g.kind == "timing"):
    sel = [r for r in rows if r["group"] == group.name]
    settings = {r["setting"] for r in sel}
    want = {"default"} | {f"{s['name']}={s['reference']}" for s in out["switches"]
                          if s["available"] and s["name"] in group.switch_names and group.mode in s["modes"]
                          and group.family in s["families"]}
    assert settings == want, group.name
    assert {(r["model"], r["e_c"]) for r in sel if r["setting"] == "default"} == set(group.contenders)
    for r in sel:
      assert r["status"] == "timed" and r["reps"] == 2 and r["median_ms"] > 0 and r["speedup"] > 0
      assert np.isclose(r["efficiency"], r["speedup"] / r["flop_ratio"])
      assert r["compile_s"] > 0 and r["lower_s"] > 0 and r["compiled_in"] in out["plan"]
      # Against the fastest dense row of the group with the same attention implementation.
      dense = [q["median_ms"] for q in sel if q["model"] == "dense" and q["attention"] == r["attention"]]
      assert np.isclose(r["baseline_ms"], min(dense)) and np.isclose(r["speedup"], min(dense) / r["median_ms"])
      # The switch's XLA options reach that compilation alone.
      off = r["setting"] == "command_buffers=off"
      assert r["compiler_options"] == (switches["command_buffers"]["options"] if off else None)
  # The scanned encoder is the video family's default (its compile time), flipped back in its groups;
  # the image rows keep the config's own default (unrolled), never flipped.
  video = [r for r in rows if r["group"].startswith("vivit-")]
  assert {r["layer_loop"] for r in video if r["setting"] == "default"} == {"scan"}
  assert {r["layer_loop"] for r in video if r["setting"] == "layer_loop=unroll"} == {"unroll"}
  assert all(r["layer_loop"] is None for r in rows if r["group"].startswith("vit-"))
  cfg = config.vit("tiny/8", depth=1)
  mone = next(r for r in rows if r["group"] == "vit-forward-2" and r["model"] == "mone" and r["setting"] == "default")
  assert np.isclose(mone["flop_ratio"], flops.gflops(cfg) / flops.gflops(cfg, "mone", 0.3))
  # The e_c sweep reuses the core group's compiled default rows instead of compiling them again.
  assert next(r for r in rows if r["group"] == "vit-forward-2-e_c" and r["model"] == "dense")["compiled_in"] == "vit-forward-2"


@pytest.mark.slow
def test_tiny_report_checks_each_fast_path_against_its_reference(tiny_report):
  out, _ = tiny_report
  checks = out["correctness"]
  for name, field in (("attention", "attention"), ("grad_barrier", "grad_barrier"), ("fused_mlp", "mlp"),
                      ("layer_loop", "layer_loop")):
    mine = [c for c in checks if c["switch"] == name]
    if not _has_field(field):  # the model configs do not have this switch yet
      assert [c["status"] for c in mine] == [f"unavailable: no config field {field!r}"]
      continue
    assert {(c["model"], c["dtype"]) for c in mine} == {(m, d) for m in ("dense", "mone") for d in ("float32", "bfloat16")}
    for c in mine:
      assert c["status"] == "checked" and c["ok"], c
      assert c["forward_rel_err"] <= correctness.TOLERANCE[c["dtype"]] and c["grad_rel_err"] <= correctness.TOLERANCE[c["dtype"]]
  assert "correctness:" in "\n".join(out["summary"])


@pytest.mark.slow
def test_tiny_report_splits_device_time_by_kind_of_operation(tiny_report):
  out, _ = tiny_report
  prof = out["op_summary"]
  assert "ProfileData" in prof["method"]
  rows = {(r["mode"], r["model"]): r for r in prof["rows"]}
  assert set(rows) == {(m, n) for m in ("forward", "train") for n in ("dense", "mone")}
  for r in rows.values():
    assert r["status"] == "measured" and r["device_ms_per_run"] > 0 and r["matched_to_hlo_fraction"] > 0.9
    assert set(r["by_kind_ms"]) == set(ops.KINDS)
    assert np.isclose(sum(r["by_kind_ms"].values()), r["device_ms_per_run"], rtol=1e-4)
    assert r["by_kind_ms"]["matmul"] > 0 and r["by_kind_ms"]["attention"] > 0
  # Routing (top-k, sorts, gathers) exists only in MoNE; a dense forward pass has none of it.
  assert rows["forward", "dense"]["by_kind_ms"]["gather/scatter/sort"] == 0
  assert rows["forward", "mone"]["by_kind_ms"]["gather/scatter/sort"] > 0


@pytest.mark.slow
def test_tiny_report_states_every_target(tiny_report):
  out, _ = tiny_report
  ids = [t.id for t in targets.report_targets(families(tiny=True))]
  assert [t["id"] for t in out["targets"]] == ids
  for t in out["targets"]:
    if t["measured"] is None:
      assert t["met"] is None and t["status"].startswith("not measured")
    else:
      assert t["met"] == (t["measured"] < t["target"] if t["metric"] == "compile_s" else t["measured"] >= t["target"])
      assert t["status"] == ("met" if t["met"] else "missed") and t["measured"] > 0
  measured = {t["id"] for t in out["targets"] if t["measured"] is not None}
  assert {"forward-e_c0.3-small", "train-e_c0.3-small", "forward-e_c1.0-2", "forward-vs-matvit-e_c0.3-2",
          "vivit-forward-e_c0.3"} <= measured
  assert out["summary"][0] == "targets:"


@pytest.mark.slow
def test_report_skips_what_the_budget_cannot_fit(tmp_path):
  path = tmp_path / "r.json"
  cli.main(["--report", "--tiny", "--budget-s", "1e-6", "--json", str(path)])
  out = results.read_json(path)
  assert out["complete"] and out["rows"] == [] and out["correctness"] == []
  assert {g["status"] for g in out["groups"].values()} == {"skipped: budget"}
  assert all(t["status"] == "not measured: group not run" for t in out["targets"])


@pytest.mark.slow
def test_report_groups_option_and_the_watchdog(tmp_path, capsys):
  path = tmp_path / "r.json"
  cli.main(["--report", "--tiny", "--groups", "op-summary", "--json", str(path)])
  out = results.read_json(path)
  assert out["groups"]["op-summary"]["status"] == "done (0 of 4 profiled)"
  assert {g["status"] for n, g in out["groups"].items() if n != "op-summary"} == {"not selected (--groups)"}
  assert all(r["status"].startswith("not measured: no compiled runner") for r in out["op_summary"]["rows"])

  # --switches with no names: the default setting alone.
  cli.main(["--report", "--tiny", "--groups", "vit-forward-2", "--switches", "--json", str(path)])
  out = results.read_json(path)
  assert [(r["model"], r["setting"], r["status"]) for r in out["rows"]] == [("dense", "default", "timed"), ("mone", "default", "timed")]
  assert out["args"]["switches"] == []

  args = cli.parser().parse_args(["--report", "--tiny", "--json", str(tmp_path / "a.json"), "--hard-limit-s", "100"])
  rep = report.Report(args, cli.machine())
  assert "command_buffers=off" in [label for label, _ in rep.settings("forward")]
  rep.disable("command_buffers", "its fast path failed")  # e.g. cuDNN attention failing every check
  assert [label for label, _ in rep.settings("forward") if label.startswith("command")] == []
  label, values = rep.settings("forward")[0]
  assert label == "default" and values["command_buffers"] == "off"  # pinned to its reference value
  # A fast path that fails to run, or runs and passes no bfloat16 check, is disabled; one that
  # passes a check, or whose checks the budget skipped, is not.
  row = lambda switch, status, ok=None, err=None: {"switch": switch, "dtype": "bfloat16", "status": status, "ok": ok,
                                                   "forward_rel_err": err, "grad_rel_err": err}
  rep.doc["correctness"] = [row("attention", "failed: XlaRuntimeError: no cuDNN"), row("attention", "failed: again"),
                            row("fused_mlp", "checked", False, 0.5), row("fused_mlp", "non-finite values"),
                            row("grad_barrier", "checked", True, 1e-3), row("grad_barrier", "checked", False, 0.5)]
  rep.doc["correctness"] += [row("x", "skipped: budget")]
  live = [s for s in rep.switches if s.name in ("attention", "fused_mlp", "grad_barrier")]
  correctness.disable_broken(rep, live + [Switch("x", "a", "b", ("forward",), "config", "")])
  why = {s["name"]: s.get("disabled") for s in rep.doc["switches"]}
  assert why["attention"].endswith("passed no bfloat16 correctness check (failed: XlaRuntimeError: no cuDNN)")
  assert "largest relative error 0.5, tolerance" in why["fused_mlp"]
  assert why["grad_barrier"] is None and "x" not in why
  rep.doc["correctness"] = []  # not rows of a real check: kept out of the summary below
  rep.activity("compiling vivit-train-2 mone e_c=0.3 default")
  codes = []
  rep.abort(exit=codes.append)
  out = results.read_json(tmp_path / "a.json")
  assert codes == [3] and not out["complete"]
  assert out["aborted"]["during"] == "compiling vivit-train-2 mone e_c=0.3 default" and out["aborted"]["at_s"] >= 0
  assert "hard limit 100.0 s reached" in capsys.readouterr().out


def test_report_refuses_bad_options(tmp_path, capsys):
  for argv, msg in ((["--report", "--block"], "does not combine with --block"),
                    (["--tiny"], "options of --report"), (["--report", "--tiny", "--budget-s", "0"], "--budget-s must be > 0")):
    with pytest.raises(SystemExit):
      cli.main([*argv, "--json", str(tmp_path / "x.json")])
    assert msg in capsys.readouterr().err
  with pytest.raises(ValueError, match=r"--groups: unknown group\(s\) \['nope'\]"):
    cli.main(["--report", "--tiny", "--groups", "nope", "--json", str(tmp_path / "x.json")])
  with pytest.raises(ValueError, match=r"--switches: unknown switch\(es\) \['fast'\]"):
    cli.main(["--report", "--tiny", "--switches", "fast", "--json", str(tmp_path / "x.json")])
  with pytest.raises(ValueError, match="the full report needs a GPU"):
    cli.main(["--report", "--json", str(tmp_path / "x.json")])
  assert not (tmp_path / "x.json").exists()


def test_hlo_classification_of_a_compiled_function():
  """parse_hlo/classify on XLA's own text: a dot, a sort and gather (top-k routing), exp inside a
  function named *attention*, and a normalisation, each lands in its kind."""
  def my_attention(a):
    return jnp.exp(a - a.max())

  def f(x, w):
    y = x @ w
    _, idx = jax.lax.top_k(y[:, 0], 3)
    return my_attention(jnp.take(y, idx, axis=0)).sum() + jax.nn.standardize(y).sum()

  compiled = jax.jit(f).lower(jnp.ones((8, 8)), jnp.ones((8, 8))).compile()
  hlo = ops.parse_hlo(compiled.as_text())
  assert hlo["module"] == "jit_f"
  kinds = {name: ops.classify(name, hlo) for name in hlo["instructions"]}
  of = lambda pick: {kinds[n] for n, r in hlo["instructions"].items() if pick(r)}
  assert of(lambda r: r["opcode"] == "dot") == {"matmul"}
  # top-k is a sort, or on the CPU a TopK custom call; the take is a gather.
  assert of(lambda r: r["opcode"] in ("sort", "gather") or "topk" in r["target"].lower()) == {"gather/scatter/sort"}
  funcs = set().union(*(r["functions"] for r in hlo["instructions"].values()))
  assert "my_attention" in funcs
  assert {kinds[n] for n, r in hlo["instructions"].items() if "my_attention" in r["functions"]} == {"attention"}
  assert {"matmul", "attention", "gather/scatter/sort", "elementwise/normalisation"} <= set(kinds.values())
  assert ops.kind_from_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32") == "matmul"
  assert ops.kind_from_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_fprop") == "attention"


def test_relative_errors_are_normwise_per_leaf():
  ref = {"a": np.array([3.0, 4.0]), "b": np.array([0.0, 0.0])}
  out = {"a": np.array([3.0, 4.5]), "b": np.array([0.0, 5e-6])}
  worst, whole = correctness.rel_errors(out, ref)
  assert np.isclose(worst, 1.0)  # b's reference is zero: measured against 1e-6 x the largest leaf norm (5)
  assert np.isclose(whole, np.hypot(0.5, 5e-6) / 5.0)
  assert correctness.rel_errors(ref, ref) == (0.0, 0.0)


def test_routing_rows_time_the_models_own_router_against_its_forward(tmp_path):
  """The routing row runs the MoNE model's own router (its parameters, Algorithm 1's counts) and
  its share is its median over the forward's, in one file written like the block rows."""
  out = cli.measure(tmp_path / "r.json", routing=True, variant="tiny/8", batch=[2], e_c=[0.3], reps=3)
  fwd, rt = out["rows"]
  assert (fwd["model"], rt["model"]) == ("mone", "routing") and fwd["share"] == 1.0
  assert rt["share"] == pytest.approx(rt["median_ms"] / fwd["median_ms"], rel=1e-4) and rt["reps"] == 3  # as written: 6 digits
  assert out["args"]["routing"] and out["workload"] == "ViT-tiny/8 routing"


@pytest.mark.slow  # a benchmark option
def test_the_video_frame_size_reaches_the_video_workload(tmp_path):
  """--video-image-size sets the clip's frames (the paper's SSv2 clip is 256 px); without it the
  variant's own size stays (tiny/8x2: 32 px)."""
  base = dict(video="tiny/8x2", video_only=True, video_frames=2, video_batch=[1], video_e_c=[0.3], mode=["forward"], reps=1)
  small = cli.measure(tmp_path / "a.json", **base)
  big = cli.measure(tmp_path / "b.json", **base, video_image_size=64)
  assert small["workload"].endswith("2x32px") and big["workload"].endswith("2x64px")
  assert big["rows"][0]["gflops"] > 3.9 * small["rows"][0]["gflops"]  # 4x the tokens per frame


def test_a_fast_path_is_not_checked_in_a_dtype_it_has_no_kernel_for(tmp_path, monkeypatch):
  """cuDNN's fused attention has no float32 kernel: its float32 check is recorded as not applicable
  and nothing is compiled for it, while its bfloat16 check and the other switches' checks run."""
  args = cli.parser().parse_args(["--report", "--tiny", "--json", str(tmp_path / "r.json")])
  rep = report.Report(args, cli.machine())
  gpu_like = Switch("attention", "cudnn", "xla", ("forward", "train"), "config", "", dtypes=("float16", "bfloat16"))
  grad = next(s for s in rep.switches if s.name == "grad_barrier")
  rep.switches = (gpu_like, grad)
  calls = []

  def fake_check(rep, model, e_c, values, dtype, x):  # the compile-and-run step, recorded
    calls.append((model, dtype, values["attention"], values["grad_barrier"]))
    return (np.ones(3), {"w": np.ones(2)}, 0.0), None

  monkeypatch.setattr(correctness, "check_values", fake_check)
  group = next(g for g in plan(rep.fams, tiny=True) if g.name == "correctness")
  assert correctness.check(rep, group) == "done (6 comparisons)"
  rows = {(c["model"], c["dtype"], c["switch"]): c for c in rep.doc["correctness"]}
  for model in ("dense", "mone"):
    assert rows[(model, "float32", "attention")]["status"] == "not applicable: attention=cudnn computes in float16 or bfloat16 only"
    assert "ok" not in rows[(model, "float32", "attention")]
    assert rows[(model, "bfloat16", "attention")]["ok"] and rows[(model, "float32", "grad_barrier")]["ok"]
    assert (model, "float32", "cudnn", "on") not in calls and (model, "bfloat16", "cudnn", "on") in calls
  assert len(calls) == 4 + 6  # a reference per (model, dtype), then each applicable variant
  assert not any(s.get("disabled") for s in rep.doc["switches"])
