"""Chapter 08's module (`mone.chapters.speed`): the timing claims it decides from the target checks,
its metrics, and what it prints of each benchmark file (synthetic rows and the committed files; no
benchmark is run)."""
from pathlib import Path

import pytest

from mone import results
from mone.bench import micro, targets
from mone.chapters import speed


def _row(workload="ViT-S/16", mode="forward", batch=8, model="mone", e_c=0.3, median_ms=100.0, flop_ratio=3.0,
         speedup=2.7, load=(0.5, 0.6)) -> dict:
  """One benchmark row, as `mone.bench.timing.bench` writes it."""
  return {"workload": workload, "mode": mode, "batch": batch, "model": model, "e_c": e_c, "gflops": 1.0, "chunk": 4,
          "median_ms": median_ms, "p25_ms": median_ms - 1, "p75_ms": median_ms + 1, "speedup": speedup,
          "flop_ratio": flop_ratio, "efficiency": speedup / flop_ratio, "note": "", "load_1m": list(load)}


def _check(**kw) -> dict:
  """One target check (`mone.bench.targets.check_targets`)."""
  return {"workload": "ViT-S/16", "mode": "forward", "batch": 8, "e_c": 0.3, "metric": "efficiency", "target": 0.85,
          "measured": 0.95, "strict": 0.95, "ok": True, **kw}


def test_a_target_is_a_timing_claim_decided_on_its_stricter_reading():
  met, missed, near, train = speed.target_claims([
      _check(), _check(batch=32, measured=0.9, strict=0.6, ok=False), _check(e_c=0.5, measured=0.82, strict=0.82, ok=False),
      _check(mode="train", e_c=1.0, metric="speedup", target=0.95, measured=1.2, strict=1.2)])
  assert [c["kind"] for c in (met, missed, near, train)] == ["timing"] * 4
  assert met["id"] == "speed.forward.efficiency.ec03.batch8" and met["verdict"] == "reproduced" and met["measured"] == 0.95
  # against the fastest full-width model the efficiency is 0.6, whatever the dense row gave
  assert missed["measured"] == 0.6 and missed["verdict"] == "not reproduced"
  # 3.5% short of the target: inside one run's noise
  assert near["id"] == "speed.forward.efficiency.ec05.batch8" and near["verdict"] == "inconclusive"
  assert near["margin"] == speed.ONE_RUN_MARGIN and "one run cannot settle it" in near["why"]
  assert train["id"] == "speed.train.speedup.ec1.batch8" and "reaches a speedup of at least 0.95" in train["claim"]
  assert "reaches an efficiency of at least 0.85" in met["claim"] and met["paper"] == speed.PAPER_SPEED
  assert speed.target_claims([_check(measured=0.8, strict=0.8)], margin=0.0)[0]["verdict"] == "not reproduced"
  assert speed.target_claims([]) == []


def test_targets_from_benchmark_rows_become_claims():
  dense = _row(model="dense", e_c=None, median_ms=300.0, flop_ratio=1.0, speedup=1.0)
  full = _row(e_c=1.0, median_ms=310.0, flop_ratio=1.0, speedup=300 / 310)
  mone = _row(e_c=0.3, median_ms=100.0, flop_ratio=3.0, speedup=3.0)  # efficiency 1.0
  checks = targets.check_targets([dense, full, mone], "ViT-S/16")
  by_id = {c["id"]: c for c in speed.target_claims(checks)}
  assert by_id["speed.forward.efficiency.ec03.batch8"]["verdict"] == "reproduced"
  assert by_id["speed.forward.speedup.ec1.batch8"]["verdict"] == "inconclusive"  # 0.968 against 0.95: within 10%


def test_metrics_record_the_file_read_and_whether_every_target_was_met():
  data = {"machine": {"cpu_model": "x"}}
  m = speed.metrics("small", data, [_check(), _check(batch=32)])
  assert m == {"source": "bench/cpu.json", "machine": {"cpu_model": "x"}, "targets": [_check(), _check(batch=32)],
               "all_met": True}
  assert speed.metrics("smoke", data, [_check(), _check(ok=False)])["source"] == "smoke_bench/cpu.json"
  assert speed.metrics("smoke", data, [_check(), _check(ok=False)])["all_met"] is False
  assert speed.metrics("small", data, [])["all_met"] is False  # nothing checked is nothing met
  with pytest.raises(ValueError, match="profile"):
    speed.metrics("huge", data, [])


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
  assert list(gpus) == sorted(bench.glob("gpu-*.json")) and all(isinstance(p, Path) for p in gpus)
  for path, gpu in gpus.items():
    head, *tables = speed.gpu_report(path, gpu)
    assert head.startswith(f"{path.name}: ") and gpu["machine"]["device"] in head and head.endswith(f"complete: {gpu['complete']}")
    assert len(tables) == 2 * len(speed.groups(gpu["rows"], "workload", "mode", "batch"))
