"""Chapter 08's modules (`mone.chapters.speed`, `.speed_claims`): the wall-clock claims and targets
decided from repeated benchmark files, and what the chapter prints of each benchmark file (synthetic
rows and the committed files; no benchmark is run)."""
from pathlib import Path

import pytest

from mone import results
from mone.bench import micro
from mone.chapters import speed, speed_claims


def _row(workload="ViT-S/16", mode="forward", batch=8, model="mone", e_c=0.3, median_ms=100.0, flop_ratio=3.0,
         speedup=2.7, load=(0.5, 0.6)) -> dict:
  """One benchmark row, as `mone.bench.timing.bench` writes it."""
  return {"workload": workload, "mode": mode, "batch": batch, "model": model, "e_c": e_c, "gflops": 1.0, "chunk": 4,
          "median_ms": median_ms, "p25_ms": median_ms - 1, "p75_ms": median_ms + 1, "speedup": speedup,
          "flop_ratio": flop_ratio, "efficiency": speedup / flop_ratio, "note": "", "load_1m": list(load)}


def _repeated(speedups=(3.0, 2.9, 3.1), full_ms=(310.0, 290.0, 305.0), shares=(0.001, 0.0012, 0.0011)) -> dict:
  """Three processes' files as `mone.bench.repeats` writes them: ViT targets, the video clip at
  three capacities (latency exactly linear in FLOPs) and routing's share."""
  def targets_rows(speedup, full):
    return [_row(model="dense", e_c=None, median_ms=300.0, flop_ratio=1.0, speedup=1.0),
            _row(e_c=1.0, median_ms=full, flop_ratio=1.0, speedup=300 / full),
            _row(e_c=0.3, median_ms=300 / speedup, flop_ratio=3.0, speedup=speedup)]

  def video_rows(k):
    rows = []
    for model, e_c, gflops in (("dense", None, 300.0), ("mone", 0.3, 100.0), ("mone", 0.4, 130.0), ("mone", 1.0, 300.0)):
      r = _row(workload="ViViT-B/16x2 32x256px", model=model, e_c=e_c, median_ms=k * (5 + gflops), flop_ratio=300 / gflops)
      rows.append({**r, "gflops": gflops, "speedup": (5 + 300) / (5 + gflops)})
    return rows

  return {"targets": [{"rows": targets_rows(s, f), "machine": {"date": "2026-12-01T10:00"}} for s, f in zip(speedups, full_ms)],
          "video": [{"rows": video_rows(k), "machine": {"date": "2026-12-01T10:00", "load_avg": [0.1]}} for k in (1.0, 1.1, 0.9)],
          "routing": [{"rows": [{"workload": "ViT-B/16 routing", "model": "mone", "e_c": 0.3, "batch": 8, "median_ms": 500.0, "share": 1.0},
                                {"workload": "ViT-B/16 routing", "model": "routing", "e_c": 0.3, "batch": 8, "median_ms": 500 * s, "share": s}]}
                      for s in shares]}


def test_the_papers_three_wall_clock_claims_from_three_processes():
  video, linear, share = speed_claims.paper_claims(_repeated())
  assert [c["kind"] for c in (video, linear, share)] == ["timing"] * 3
  # Tested at e_c 0.4, whose FLOP ratio (300 / 130 = 2.31) is the paper's 2.32: speed-up 305 / 135 = 2.259 in every
  # process, above 1.97 x 0.9; e_c 0.3 (3.00x fewer FLOPs, 305 / 105 = 2.905) is shown beside it.
  assert video["verdict"] == "reproduced" and video["measured"] == pytest.approx(2.259, abs=1e-3)
  assert "MoNE at e_c = 0.4, where its FLOPs are 2.31x fewer than the dense model's (the paper's row: 2.32x)" in video["claim"]
  assert video["threshold"] == pytest.approx(1.773)
  assert "here e_c = 0.3 has 3.00x fewer FLOPs" in video["note"] and "tested before: 2.90x, 95% CI [2.90, 2.90]" in video["note"]
  assert linear["verdict"] == "reproduced" and linear["per_run"] == pytest.approx([1.0] * 3)
  assert speed_claims.linear_fit(_repeated()["video"][1]["rows"]) == pytest.approx(
      {"slope_ms_per_gflop": 1.1, "intercept_ms": 5.5, "r2": 1.0})
  assert share["unit"] == "%" and share["per_run"] == pytest.approx([0.1, 0.12, 0.11]) and share["verdict"] == "reproduced"
  assert share["relation"] == "at most" and "ViT-B/16 MoNE forward at e_c = 0.3, batch 8" in share["claim"]


def test_targets_are_decided_over_processes_on_their_stricter_reading():
  by_id = {c["id"]: c for c in speed_claims.target_claims(_repeated())}
  eff = by_id["speed.forward.efficiency.ec03.batch8"]
  assert eff["kind"] == "target" and eff["verdict"] == "met" and eff["per_run"] == pytest.approx([1.0, 290 / (300 / 2.9) / 3, 1.0333], abs=1e-3)
  # against the fastest full-width model: MoNE at e_c = 1.0 beat the dense row in process 2 (290 < 300 ms)
  full = by_id["speed.forward.speedup.ec1.batch8"]
  assert full["per_run"] == pytest.approx([300 / 310, 300 / 290, 300 / 305], abs=1e-3) and full["verdict"] == "within noise"
  slow = {c["id"]: c for c in speed_claims.target_claims(_repeated(speedups=(2.0, 2.1, 1.9)))}
  assert slow["speed.forward.efficiency.ec03.batch8"]["verdict"] == "missed"
  m = speed_claims.metrics(_repeated(), list(by_id.values()))
  assert m["runs"] == 3 and m["all_targets_met"] is False and [c["id"] for c in m["claims"]] == list(by_id)
  with pytest.raises(ValueError, match="measured different groups"):
    rep = _repeated()
    rep["targets"][2]["rows"] = rep["targets"][2]["rows"][:2]
    speed_claims.target_values(rep)


def test_tables_are_one_per_group_in_order_of_appearance():
  rows = [_row(batch=8), _row(batch=32), _row(batch=8, model="dense", e_c=None), _row(workload="ViViT", batch=2)]
  out = speed.tables(rows, "workload", "batch")
  assert out[0::2] == ["", "", ""] and [t.count("\n") for t in out[1::2]] == [4, 3, 3]  # head, rule, rows, load
  assert out[1].splitlines()[-1] == "load average (1 min) 0.50 -> 0.60"
  named = speed.tables(rows, "workload", "batch", named=True)
  assert [t.splitlines()[-1] for t in named[1::2]] == ["ViT-S/16; load average (1 min) 0.50 -> 0.60"] * 2 + [
      "ViViT; load average (1 min) 0.50 -> 0.60"]
  assert speed.tables([], "workload") == []


def test_the_benchmark_report_says_what_was_measured_where():
  machine = {"date": "2026-11-28T10:00:00", "cpu_model": "Xeon", "cores": 2, "backend": "cpu", "jax": "0.4", "code": "abc",
             "load_avg": [0.25, 0.3, 0.3]}
  data = {"machine": machine, "rows": [_row(), _row(workload="ViViT")], "workload": "ViT-S/16", "baseline": "dense"}
  lines = speed.benchmark_report("small", data)
  assert lines[:3] == [speed.command("small", "cpu.json"),
                       "measured 2026-11-28 on Xeon (2 cores, cpu), jax 0.4, code abc, load average 0.25 at the start",
                       "baseline of ViT-S/16: dense"]
  assert lines[3::2] == ["", ""] and lines[4].endswith("ViT-S/16; load average (1 min) 0.50 -> 0.60")
  cut = speed.benchmark_report("small", {**data, "complete": False, "baselines": {"a": "x", "b": "y"}})
  assert cut[0].startswith("NOTE: this benchmark run was stopped") and cut[2:5] == [
      lines[1], "baseline of a: x", "baseline of b: y"]


def test_the_committed_block_matmul_and_gpu_files_are_reported():
  bench = results.RESULTS / "bench"
  block, matmul = (results.read_json(bench / n) for n in ("cpu-block.json", "cpu-matmul.json"))
  lines = speed.block_report("small", block)
  assert lines[0] == speed.command("small", "cpu-block.json") and lines[1].startswith("measured 20")
  assert len(lines) == 2 + 2 * len(speed.groups(block["rows"], "batch", "mode"))
  lines = speed.matmul_report("small", matmul)
  assert lines[0] == speed.command("small", "cpu-matmul.json") and lines[2] == micro.matmul_table(matmul["rows"])
  assert matmul["machine"]["cpu_model"] in lines[1]
  gpus = speed.gpu_benchmarks()
  assert list(gpus) == [p for p in sorted(bench.glob("gpu-*.json")) if not p.name.startswith("gpu-report-")]
  assert gpus and all(isinstance(p, Path) for p in gpus)
  for path, gpu in gpus.items():
    head, *tables = speed.gpu_report(path, gpu)
    assert head.startswith(f"{path.name}: ") and gpu["machine"]["device"] in head and head.endswith(f"complete: {gpu['complete']}")
    assert len(tables) == 2 * len(speed.groups(gpu["rows"], "workload", "mode", "batch"))


def test_the_committed_gpu_reports_are_read_apart_from_the_benchmarks_and_printed_whole():
  bench = results.RESULTS / "bench"
  reports = speed.gpu_reports()
  assert reports and set(reports) == set(bench.glob("gpu-report-*.json"))
  assert not set(reports) & set(speed.gpu_benchmarks())
  dates = [doc["machine"]["date"] for doc in reports.values()]
  assert dates == sorted(dates)
  for path, doc in reports.items():
    defaults = speed.default_settings(doc)
    head, machine, *rest = speed.gpu_report_lines(path, doc)
    assert rest[:len(defaults)] == defaults and defaults  # every committed report timed a default row
    table, *summary = rest[len(defaults):]
    assert head.startswith(f"{path.name}: python -m mone.bench --report") and head.endswith(f"--budget-s {doc['budget_s']:g}")
    assert doc["machine"]["device"] in machine and doc["dtype"] in machine
    assert ("ran to the end" in machine) == doc["complete"]
    timed = [r for r in doc["rows"] if r.get("status") == "timed"]
    assert len(table.splitlines()) == 1 + len(timed)
    assert summary == doc["summary"] and summary[0] == "targets:"


def test_a_gpu_report_cut_before_any_row_was_timed_says_so_and_where_it_stopped():
  args = {"budget_s": 250.0, "groups": ["vit-train-64"], "switches": [], "report": True}
  doc = {"args": args, "machine": {"date": "2026-01-02T03:04:05", "device": "1 x GPU", "jax": "0.0", "code": "abc"},
         "dtype": "bfloat16", "complete": False, "elapsed_s": 280.0,
         "aborted": {"at_s": 280.0, "during": "compiling vit-train-64 mone e_c=0.3 default"},
         "switches": [{"name": "attention"}],
         "rows": [{"group": "vit-train-64", "model": "dense", "e_c": None, "setting": "default", "status": "pending",
                   "attention": "cudnn"}],
         "summary": ["targets:", "  a target: -> not measured: group not run"]}
  assert speed.report_command(args) == "python -m mone.bench --report --groups vit-train-64 --switches --budget-s 250"
  assert speed.report_command({"budget_s": 420.0, "groups": None, "switches": None}) == "python -m mone.bench --report --budget-s 420"
  lines = speed.gpu_report_lines(Path("gpu-report-x.json"), doc)
  assert lines == ["gpu-report-x.json: " + speed.report_command(args),
                   "measured 2026-01-02 on 1 x GPU in bfloat16, jax 0.0, code abc; stopped at 280 s, while compiling "
                   "vit-train-64 mone e_c=0.3 default", "no row timed", *doc["summary"]]


def test_gpu_report_targets_lists_each_measured_target_with_its_report_and_counts_the_rest():
  def target(id_, measured=None, status="not measured: group not run"):
    return {"id": id_, "description": f"target {id_}", "measured": measured, "status": status}
  reports = {Path("gpu-report-a.json"): {"targets": [target("x", 1.371, "missed"), target("y"), target("z")]},
             Path("gpu-report-b.json"): {"targets": [target("x"), target("y", 1.6, "met"), target("z")]}}
  assert speed.gpu_report_targets(reports) == ["target x: 1.37 -> missed (gpu-report-a.json)",
                                               "target y: 1.60 -> met (gpu-report-b.json)",
                                               "1 of 3 targets not measured by any report"]


def test_default_settings_names_what_default_meant_in_each_group_of_a_gpu_report():
  """The second of two reports in one loan ran no correctness group, so its default rows kept a path
  on that the first report's had turned off: the chapter must show it."""
  row = lambda group, setting="default", status="timed", **values: {"group": group, "setting": setting, "status": status,
                                                                     "model": "dense", "e_c": None, **values}
  doc = {"switches": [{"name": "attention"}, {"name": "fused_mlp"}, {"name": "layer_loop"}],
         "rows": [row("vit-forward-256", attention="cudnn", fused_mlp="xla", layer_loop=None),
                  row("vit-forward-256-e_c", attention="cudnn", fused_mlp="xla", layer_loop=None),
                  row("vit-forward-256", "attention=xla", attention="xla", fused_mlp="xla", layer_loop=None),
                  row("vit-train-64", status="skipped: budget", attention="cudnn", fused_mlp="pallas", layer_loop=None),
                  row("vivit-forward-8", attention="cudnn", fused_mlp="pallas", layer_loop="scan")]}
  assert speed.default_settings(doc) == [
      "default setting of vit-forward-256, vit-forward-256-e_c: attention=cudnn, fused_mlp=xla",
      "default setting of vivit-forward-8: attention=cudnn, fused_mlp=pallas, layer_loop=scan"]
