"""Chapter 08's modules (`mone.chapters.speed`, `.speed_claims`): the wall-clock claims and targets
decided from repeated benchmark files, and what the chapter prints of each benchmark file (synthetic
rows and the committed files; no benchmark is run)."""
import shutil
from pathlib import Path

import pytest

from mone import capacity, flops, results
from mone.bench import micro, repeats, workloads
from mone.evidence import claims
from mone.chapters import speed, speed_claims
from mone.models import config


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


def _batched(gains, workload, batch, e_cs, flop_ratios, tested) -> list[dict]:
  """A throughput file per process: the dense model at 1000 ms per batch and MoNE at each e_c, the
  one at `tested` running `gain` times faster, the others 1.5x."""
  out = []
  for gain in gains:
    rows = [{**_row(workload=workload, batch=batch, model="dense", e_c=None, median_ms=1000.0, flop_ratio=1.0,
                    speedup=1.0)}]
    for e_c, ratio in zip(e_cs, flop_ratios):
      g = gain if e_c == tested else 1.5
      rows.append(_row(workload=workload, batch=batch, e_c=e_c, median_ms=1000.0 / g, flop_ratio=ratio, speedup=g))
    out.append({"rows": rows, "machine": {"date": "2026-12-06T10:00"}, "complete": True})
  return out


def _with_throughput(clips=(2.0, 2.1, 1.9), images=(1.3, 1.35, 1.25)) -> dict:
  """`_repeated` with the two throughput files: ViViT at e_c 0.3 and 0.4 on batches of 2 clips, and
  ViT-Ti/16 at e_c 0.5 (1.72x fewer FLOPs) and 0.6 (1.51x) on batches of 32 images."""
  return {**_repeated(),
          "throughput": _batched(clips, "ViViT-B/16x2 32x256px", 2, (0.3, 0.4), (300 / 100, 300 / 130), 0.4),
          "image": _batched(images, "ViT-Ti/16 224px", 32, (0.5, 0.6), (1.72, 1.51), 0.5)}


def test_the_papers_wall_clock_claims_from_three_processes():
  video, linear, share, clips, images = speed_claims.paper_claims(_repeated())
  assert [c["kind"] for c in (video, linear, share, clips, images)] == ["timing"] * 5
  # the throughput files are not measured: their claims say so, and the rest is decided as before
  assert clips["verdict"] == images["verdict"] == "not testable" and clips["measured"] is None
  assert "not measured yet" in clips["why"] and "python -m mone.bench.repeats" in images["why"]
  assert "MoNE at e_c = 0.4 (the latency claim's e_c" in clips["claim"] and "15.8 clips/s" in clips["paper"]
  assert "nearest the paper's 1.3 / 0.8 = 1.625x" in images["claim"] and "3410 images/s" in images["paper"]
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


def test_the_papers_throughputs_are_decided_at_their_operating_points():
  *_, clips, images = speed_claims.paper_claims(_with_throughput())
  # video: the latency claim's e_c (0.4: 2.31x fewer FLOPs, the paper's 2.32x), 2.0x mean over 1.746x needed
  assert clips["id"] == "speed.paper.video_throughput_gain" and clips["verdict"] == "reproduced"
  assert clips["per_run"] == pytest.approx([2.0, 2.1, 1.9]) and clips["threshold"] == pytest.approx(1.94 * 0.9)
  assert clips["relation"] == "at least" and clips["unit"] == "x" and clips["ci95"][0] > 1.746
  assert "ViViT-B/16x2 32x256px, batches of 2 clips: MoNE at e_c = 0.4" in clips["claim"]
  assert "at least 1.75x the clips per second" in clips["claim"] and "1.94x within 10%" in clips["claim"]
  assert "30.7 clips/s: 1.94x throughput at 2.32x fewer FLOPs" in clips["paper"]
  # the note: the operating point, clips per second (2 clips in 1 s dense, in 0.5 s MoNE), e_c 0.3 beside
  assert ("Operating point: e_c = 0.4, 2.31x fewer FLOPs than the dense model, batches of 2: 4 clips/s against "
          "2 dense") in clips["note"]
  assert "At e_c = 0.3 (3.00x fewer FLOPs): 1.50x, 95% CI [1.50, 1.50]" in clips["note"]
  # images: e_c 0.5 (1.72x) is nearer the paper's 1.3 / 0.8 = 1.625x than 0.6 (1.51x); 1.30x over 1.143x needed
  assert images["id"] == "speed.paper.image_throughput_gain" and images["verdict"] == "reproduced"
  assert images["per_run"] == pytest.approx([1.3, 1.35, 1.25]) and images["threshold"] == pytest.approx(1.27 * 0.9)
  assert ("ViT-Ti/16 224px, batches of 32 images: MoNE at e_c = 0.5, where its FLOPs are 1.72x fewer than the dense "
          "model's (the nearest to the paper's 1.3 / 0.8 = 1.625x), processes at least 1.14x the images per second") in images["claim"]
  assert "ViT 1.3 GFLOPs 3410 images/s, MoNE 0.8 GFLOPs 4333 images/s: 1.27x throughput" in images["paper"]
  assert "e_c = 0.5, 1.72x fewer FLOPs" in images["note"] and "41.6 images/s against 32 dense" in images["note"]
  assert "At e_c = 0.6 (1.51x fewer FLOPs): 1.50x" in images["note"]
  # below the thresholds in every process: not reproduced; straddling one: inconclusive
  *_, slow_clips, slow_images = speed_claims.paper_claims(_with_throughput(clips=(1.5, 1.6, 1.55), images=(1.0, 1.02, 1.01)))
  assert slow_clips["verdict"] == slow_images["verdict"] == "not reproduced"
  *_, open_clips, _ = speed_claims.paper_claims(_with_throughput(clips=(1.6, 1.9, 1.75)))
  assert open_clips["verdict"] == "inconclusive" and "contains the threshold" in open_clips["why"]
  # a file that did not time the operating point decides nothing
  rep = _with_throughput()
  rep["throughput"] = _batched((2.0, 2.1, 1.9), "ViViT", 2, (0.3,), (3.0,), 0.3)
  assert speed_claims.paper_claims(rep)[3]["verdict"] == "not testable"
  assert "did not time MoNE at e_c = 0.4" in speed_claims.paper_claims(rep)[3]["why"]
  m = speed_claims.metrics(rep, speed_claims.paper_claims(rep))
  assert [c["verdict"] for c in m["claims"]][3:] == ["not testable", "reproduced"] and m["claims"][3]["per_run"] is None
  for rep in (_with_throughput(), _repeated()):  # well-formed claims, testable or not
    claims.check(speed_claims.paper_claims(rep))


def test_the_image_claims_e_c_is_the_one_nearest_the_papers_flop_ratio():
  rows = lambda ratios: [_row(model="dense", e_c=None, flop_ratio=1.0)] + [
      _row(e_c=e_c, flop_ratio=r) for e_c, r in ratios.items()]
  assert speed_claims.PAPER_IMAGE_FLOP_RATIO == pytest.approx(1.625)
  assert speed_claims.matched_e_c(rows({0.4: 2.0, 0.5: 1.72, 0.6: 1.51}), speed_claims.PAPER_IMAGE_FLOP_RATIO) == 0.5
  assert speed_claims.matched_e_c(rows({0.5: 1.9, 0.6: 1.6}), speed_claims.PAPER_IMAGE_FLOP_RATIO) == 0.6
  assert speed_claims.matched_e_c(rows({0.3: 2.88, 0.4: 2.28})) == 0.4  # the video default: the paper's 2.32x
  # the plans time each claim's operating point: in the analytic FLOP count of ViT-Ti/16 at 224 px and of the
  # paper's clip, the e_c of workloads.E_CS nearest each paper ratio is among the e_c the file times
  def nearest(cfg, ratio):
    dense = flops.macs(cfg, "vit")
    ratios = {e: dense / flops.macs(cfg, "mone", capacities=capacity.budget("mone", e, cfg.num_experts).capacities)
              for e in workloads.E_CS if e < 1}
    return min(ratios, key=lambda e: abs(ratios[e] - ratio)), ratios
  ti = config.vit("Ti/16")
  assert (ti.image_size, ti.width, ti.depth, ti.num_heads, ti.patch_size) == (224, 192, 12, 3, 16)
  assert flops.gflops(ti) == pytest.approx(1.25, abs=0.01)  # the paper's "1.3 GFLOPs"
  e_c, ratios = nearest(ti, speed_claims.PAPER_IMAGE_FLOP_RATIO)
  assert e_c == 0.5 and ratios[0.5] == pytest.approx(1.72, abs=0.01) and ratios[0.6] == pytest.approx(1.51, abs=0.01)
  for profile in ("small", "paper"):
    image, clips = repeats.PLANS[profile]["image"], repeats.PLANS[profile]["throughput"]
    assert image["variant"] == "Ti/16" and image["batch"][0] > 1 and e_c in image["e_c"]
    clip = config.vivit(clips["video"], num_frames=clips["video_frames"], image_size=clips["video_image_size"])
    assert clips["video_batch"][0] > 1 and nearest(clip, speed_claims.PAPER_FLOP_RATIO)[0] in clips["video_e_c"]


def test_the_committed_files_still_decide_the_first_three_claims_and_leave_the_throughputs_untestable(
    tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  folder = repeats.directory("small")
  folder.mkdir(parents=True)
  for name in ("targets", "video", "routing"):  # the files committed before the throughput files joined the plan
    for i in range(1, repeats.RUNS + 1):
      shutil.copy(results.RESULTS / "bench" / "repeats" / f"{name}-{i}.json", folder)
  rep = repeats.load("small")
  assert set(rep) == {"targets", "video", "routing"}
  cs = speed_claims.paper_claims(rep) + speed_claims.target_claims(rep)
  assert [c["verdict"] for c in cs[:5]][3:] == ["not testable"] * 2
  assert all(c["verdict"] != "not testable" for c in cs[:3] + cs[5:])
  assert "e_c = 0.4" in cs[3]["claim"] and speed_claims.metrics(rep, cs)["claims"][4]["verdict"] == "not testable"
  speed_claims.report(rep)


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
