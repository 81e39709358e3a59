"""The training-throughput benchmark (mone.bench.training): what it times, its rows' arithmetic and its
errors. No timing claims: speed is read from its JSON, never asserted in a test."""
import dataclasses
import json
import re

import numpy as np
import pytest

from mone import flops, results
from mone.bench import cli, training
from mone.configs import profiles


def test_the_arms_are_the_ten_seed_plans_arms():
  """Every arm is a config of the ten-seed plan: at the plan's seeds, the arms' run files are the
  plan's, one for one (the benchmark times what the plan trains)."""
  plan = results.read_json(results.REPO / "results" / "seed_plan_10.json")
  planned = {r["run_file"] for r in plan["runs"]}
  timed = set()
  for arm in training.arms():
    cfg = arm.config()
    for seed in plan["seeds"]:
      c = dataclasses.replace(cfg, seed=seed)
      timed.add(f"{c.name}-{c.kind}-{results.config_hash(c)}.json")
  assert timed == planned
  assert len({a.name for a in training.arms()}) == len(training.arms())


def test_an_unknown_arm_is_refused_with_the_arms_listed():
  with pytest.raises(ValueError, match=r"unknown arm\(s\) \['image:nope'\].*image:vit"):
    training.select(["image:nope"])
  assert [a.name for a in training.select(["temporal:vit", "image:vit"])] == ["temporal:vit", "image:vit"]


def test_training_options_are_refused_where_they_do_not_apply(capsys):
  with pytest.raises(SystemExit):
    cli.main(["--arms", "image:vit"])
  assert "--arms, --pair, --base and --attention are options of --training" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    cli.main(["--training", "--block"])
  assert "--training times the training steps alone" in capsys.readouterr().err


def test_base_overrides_come_before_the_pairs_and_are_recorded_apart(monkeypatch):
  """--base times every arm with its overrides, the pair's variant with the pair's after them; a row's
  `overrides` stay the pair's alone (the comparisons of --training files tell reference from variant by
  them), its `base` the rest. A bad override in either is a one-line error naming its flag."""
  timed = []

  class Fake:
    def __init__(self, arm, **_):
      self.arm, self.cfg, self.compile_s = arm, arm.config(), 0.0
      timed.append(self)

    def run(self, n):
      pass

  monkeypatch.setattr(training, "Timed", Fake)
  monkeypatch.setattr(training, "matmul_rate", lambda: 50.0)
  monkeypatch.setattr(training, "row", lambda t, rate: {"arm": t.arm.name, "overrides": list(t.arm.overrides), "label": "ViViT",
                                                        "step_ms": 1.0, "gflop_per_s": 1.0, "matmul_fraction": 0.1,
                                                        "run": {"estimated_wall_s": 1.0, "outside_share": 0.0}})
  monkeypatch.setattr(training, "summary", lambda rows: {})
  base, pair = ("model.weight_grad=direct",), ("model.tubelet_embed=matmul",)
  out = training.measure(["temporal:vit"], rounds=1, steps_per_round=1, pair=pair, base=base, log=lambda *_: None)
  assert [t.arm.overrides for t in timed] == [base, base + pair]
  assert [t.cfg.model.tubelet_embed for t in timed] == ["conv", "matmul"]
  assert [(r["base"], r["overrides"]) for r in out["rows"]] == [(list(base), []), (list(base), list(pair))]
  for flag, kw in (("--base", {"base": ("model.weight_grad=fast",)}), ("--pair", {"pair": ("model.tubelet_embed=fft",)})):
    with pytest.raises(ValueError, match=f"^{flag}: .*must be one of"):
      training.measure(["temporal:vit"], **kw)


def test_a_timed_arm_gives_a_row_whose_numbers_agree(monkeypatch):
  """A smoke-profile ViT and MoNE through the benchmark's code: the rates follow from the step time
  and the FLOPs, the run estimate from its parts, and the summary from the rows."""
  monkeypatch.setattr(training, "RENDER_EXAMPLES", 64)
  arms = [training.Arm("image", "vit"), training.Arm("image", "mone", 0.4)]
  timed = [training.Timed(a, num_batches=2, arm_index=i, profile="smoke") for i, a in enumerate(arms)]
  assert [t.cfg for t in timed] == [profiles.image_config("smoke", kind="vit"), profiles.mone_config("smoke", 0.4)]
  for t in timed:
    t.run(3)
    assert len(t.times) == 3 and t.compile_s > 0 and t.data_s > 0
  rows = [training.row(t, matmul_gflops=50.0) for t in timed]
  for r in rows:
    assert np.isclose(r["gflop_per_s"], r["gflop_per_step"] / (r["step_ms"] / 1e3), rtol=1e-2)
    assert np.isclose(r["matmul_fraction"], r["gflop_per_s"] / 50.0, atol=2e-3)
    parts = r["run"]["outside_s"]
    assert set(parts) == {"render_s", "compile_s", "data_s", "curve_eval_s", "final_eval_s", "checkpoint_s"}
    assert all(v >= 0 for v in parts.values()) and parts["compile_s"] > 0
    assert np.isclose(r["run"]["estimated_wall_s"], r["run"]["train_step_s"] + sum(parts.values()), atol=0.2)
    assert 0 < r["run"]["outside_share"] < 1
  assert [(r["kind"], r["label"], r["e_c"]) for r in rows] == [("vit", "ViT", None), ("mone", "MoNE", 0.4)]
  s = training.summary(rows)
  assert s["by_kind"]["MoNE"]["gflop_per_s"] == rows[1]["gflop_per_s"]
  assert s["mone_over_dense"][rows[0]["recipe"]] == round(rows[1]["gflop_per_s"] / rows[0]["gflop_per_s"], 3)
  json.dumps(rows)  # the rows go into the JSON as they are


@pytest.mark.slow  # a benchmark option
def test_the_attention_timed_is_the_steps_own(monkeypatch):
  """With attention=True an arm records the attention its step traced: the dense ViT's and MoNE's are
  the same calls (full width, every token, every block), counted as `mone.flops` counts them; the row
  and the summary carry the time and the bound."""
  monkeypatch.setattr(training, "RENDER_EXAMPLES", 64)
  arms = [training.Arm("image", "vit"), training.Arm("image", "mone", 0.4)]
  timed = [training.Timed(a, num_batches=2, arm_index=i, profile="smoke", attention=True) for i, a in enumerate(arms)]
  cfg = timed[0].cfg
  m = cfg.model
  call = ((cfg.batch_size, m.num_heads, m.num_tokens, m.width // m.num_heads), np.dtype("float32"), False)
  assert timed[0].attention_calls == timed[1].attention_calls == [call] * m.depth
  attention_macs = 3 * cfg.batch_size * m.depth * flops.block_macs([m.num_tokens], [0], m.width, m.mlp_dim)
  assert timed[0].attention_macs == timed[1].attention_macs == attention_macs
  for t in timed:
    t.run(2)
    assert len(t.attention_times) == 2
  rows = [training.row(t, matmul_gflops=50.0) for t in timed]
  for r in rows:
    assert r["attention"]["gflop_per_step"] == round(attention_macs / 1e9, 6) and 0 < r["attention"]["share"]
  bound = training.summary(rows)["mone_over_dense_bound"][cfg.name]
  assert bound == round(training.attention_bound(*rows), 3)
  untimed = [{k: v for k, v in r.items() if k != "attention"} for r in rows]  # rows timed without attention
  assert "mone_over_dense_bound" not in training.summary(untimed)


def test_the_attention_bound_is_the_rate_at_the_dense_rate_outside_attention():
  """Dense: 10 GFLOP in 10 ms, attention 2 GFLOP in 4 ms, so 8 GFLOP in 6 ms outside it. MoNE: 5 GFLOP,
  attention the same; at the dense rate its other 3 GFLOP take 2.25 ms: 5 GFLOP in 6.25 ms, 0.8x the
  dense rate, whatever MoNE's own step time; a MoNE step that fast measures that ratio itself."""
  dense = {"gflop_per_step": 10.0, "step_ms": 10.0, "attention": {"gflop_per_step": 2.0, "ms": 4.0}}
  mone = {"gflop_per_step": 5.0, "step_ms": 9.0, "attention": {"gflop_per_step": 2.0, "ms": 4.0}}
  assert np.isclose(training.attention_bound(dense, mone), 0.8)
  assert np.isclose(training.attention_bound(dense, {**mone, "step_ms": 1.0}), 0.8)
  assert np.isclose(training.attention_bound(dense, dense), 1.0)


def test_the_matmul_rate_counts_multiply_accumulates():
  """n^3 multiply-accumulates over the median time: a rate of the same unit as `mone.flops`'s."""
  rate = training.matmul_rate(n=256, reps=3)
  assert 0.1 < rate < 1e4


def _bench_file(allocator, rates):
  """A --training --pair file: per arm, its reference rate and its rate with the overrides."""
  rows = []
  for arm, label, ref, fast in rates:
    rows += [{"arm": arm, "label": label, "overrides": [], "gflop_per_s": ref},
             {"arm": arm, "label": label, "overrides": ["model.weight_grad=direct"], "gflop_per_s": fast}]
  return {"machine": {"allocator": allocator}, "rows": rows,
          "summary_with_overrides": {"mone_over_dense": {"digits64": rates[1][3] / rates[0][3]}}}


def _written(folder, files):
  """The benchmark files written under folder, in order, as the comparison commands read them."""
  paths = [folder / f"{i}.json" for i in range(len(files))]
  for path, f in zip(paths, files):
    results.atomic_write_json(path, f)
  return paths


def test_allocators_pair_tcmalloc_with_glibc_per_sitting_and_combine_the_sittings(tmp_path):
  # Sitting 1: tcmalloc 1.1x on ViT, 1.2x on MoNE; sitting 2: 1.0x and 1.3x (the cores swapped).
  s1 = (_bench_file("glibc", [("image:vit", "ViT", 20, 30), ("image:mone:0.4", "MoNE", 10, 12)]),
        _bench_file("tcmalloc", [("image:vit", "ViT", 22, 33), ("image:mone:0.4", "MoNE", 12, 14.4)]))
  s2 = (_bench_file("glibc", [("image:vit", "ViT", 21, 30), ("image:mone:0.4", "MoNE", 10, 11)]),
        _bench_file("tcmalloc", [("image:vit", "ViT", 21, 30), ("image:mone:0.4", "MoNE", 13, 14.3)]))
  out = training.allocators([s1, s2])
  assert out["with_overrides"]["per_arm"] == {"image:vit": round(float(np.sqrt(1.1 * 1.0)), 3),
                                              "image:mone:0.4": round(float(np.sqrt(1.2 * 1.3)), 3)}
  assert out["reference"]["by_kind"]["MoNE"] == round(float(np.sqrt(1.2 * 1.3)), 3)
  # tcmalloc with the overrides over glibc as the profile trains: 33/20 and 30/21 for ViT.
  assert out["cumulative"]["by_kind"]["ViT"] == round(float(np.sqrt(33 / 20 * 30 / 21)), 3)
  assert out["mone_over_dense_tcmalloc"] == [{"digits64": 14.4 / 33}, {"digits64": 14.3 / 30}]
  with pytest.raises(ValueError, match="each sitting is"):
    training.allocators([(s1[1], s1[0])])
  # The command: files in pairs, written where --json says.
  paths = _written(tmp_path, s1 + s2)
  cli.main(["--allocators", *map(str, paths), "--json", str(tmp_path / "out.json")])
  assert results.read_json(tmp_path / "out.json")["cumulative"] == out["cumulative"]
  with pytest.raises(ValueError, match="in pairs"):
    cli.run(cli.parser().parse_args(["--allocators", str(paths[0])]))


def _versioned(code, rates, cpu="a CPU", matmul=40.0):
  """_bench_file's file as a commit's benchmark ran it (its code and machine, its matmul rate), with a
  kind, a recipe and an estimated run per row."""
  f = _bench_file(None, rates)
  f["machine"] = {"code": code, "cpu_model": cpu}
  f["matmul_gflop_per_s"] = {"before": matmul, "after": matmul, "used": matmul}
  for r in f["rows"]:
    r.update(kind={"ViT": "vit", "MoNE": "mone"}[r["label"]], recipe="digits64",
             run={"estimated_wall_s": 36000 / r["gflop_per_s"]})
  return f


def test_versions_pair_an_earlier_commit_with_a_later_one_on_one_machine(tmp_path):
  # The later code with its overrides over the earlier as the profile trained: ViT 2.0x in sitting 1, 1.8x in 2.
  s1 = (_versioned("aaa", [("image:vit", "ViT", 20, 30), ("image:mone:0.4", "MoNE", 10, 12)]),
        _versioned("bbb", [("image:vit", "ViT", 22, 40), ("image:mone:0.4", "MoNE", 12, 24)]))
  s2 = (_versioned("aaa", [("image:vit", "ViT", 21, 30), ("image:mone:0.4", "MoNE", 10, 11)]),
        _versioned("bbb", [("image:vit", "ViT", 21, 37.8), ("image:mone:0.4", "MoNE", 13, 22)], matmul=42.5))
  out = training.versions([s1, s2])
  assert out["matmul_gflop_per_s"] == [[40.0, 40.0], [40.0, 42.5]]  # which machine: each sitting's two rates
  assert out["cumulative"]["per_arm"]["image:vit"] == round(float(np.sqrt(40 / 20 * 37.8 / 21)), 3)
  assert out["reference"]["by_kind"]["MoNE"] == round(float(np.sqrt(1.2 * 1.3)), 3)
  assert out["mone_over_dense_after"] == [{"digits64": 24 / 40}, {"digits64": 22 / 37.8}]
  assert out["run_s_after"][0] == {"image:vit": 36000 / 40, "image:mone:0.4": 36000 / 24}
  assert out["overrides"] == out["overrides_before"] == ["model.weight_grad=direct"]
  assert out["arms"] == {"image:vit": {"kind": "vit", "recipe": "digits64"}, "image:mone:0.4": {"kind": "mone", "recipe": "digits64"}}
  with pytest.raises(ValueError, match="both ran 'aaa'"):
    training.versions([(s1[0], s1[0])])
  with pytest.raises(ValueError, match="from one machine"):
    training.versions([(s1[0], _versioned("bbb", [("image:vit", "ViT", 1, 2), ("image:mone:0.4", "MoNE", 1, 2)], cpu="another CPU"))])
  paths = _written(tmp_path, s1 + s2)
  cli.main(["--versions", *map(str, paths), "--json", str(tmp_path / "out.json")])
  written = results.read_json(tmp_path / "out.json")
  assert written["cumulative"] == out["cumulative"] and [m["code"] for m in written["machines"]] == ["aaa", "bbb"] * 2
  with pytest.raises(ValueError, match=r"^--versions takes files in pairs \(before, after\); got 3$"):
    cli.run(cli.parser().parse_args(["--versions", *map(str, paths[:3])]))
  # On the command line, one line each, before anything is read or written.
  for argv, message in ((paths[:3], "--versions takes files in pairs; got 3"),
                        ([paths[0], tmp_path / "missing.json"], f"--versions: no such file '{tmp_path / 'missing.json'}'")):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
      cli.check(cli.parser().parse_args(["--versions", *map(str, argv)]))


def test_a_benchmark_file_names_the_instruction_set_its_machine_compiled_for(monkeypatch):
  monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2")
  assert cli.machine()["isa"] == "AVX2"
  monkeypatch.delenv("XLA_FLAGS")
  assert cli.machine()["isa"] == results.xla_cpu_isa()
