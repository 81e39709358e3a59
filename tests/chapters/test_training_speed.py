"""The training-throughput page (mone.chapters.training_speed): its table, its targets and its figure,
from a paired benchmark file built here, so that every number on the page can be checked against it."""
import matplotlib

matplotlib.use("Agg")

from mone.chapters import training_speed  # noqa: E402


def _row(arm, recipe, kind, label, gflops, step_ms, wall_s, overrides=()):
  return {"arm": arm, "recipe": recipe, "kind": kind, "label": label, "overrides": list(overrides),
          "step_ms": step_ms, "gflop_per_s": gflops, "matmul_fraction": gflops / 70.0,
          "run": {"outside_share": 0.1, "estimated_wall_s": wall_s,
                  "outside_s": {"render_s": 6.0, "compile_s": 30.0, "data_s": 12.0, "curve_eval_s": 60.0,
                                "final_eval_s": 90.0, "checkpoint_s": 6.0}}}


def _doc():
  fast = ("model.weight_grad=direct",)
  ref = [_row("image:vit", "digits64", "vit", "ViT", 25.0, 400, 3600),
         _row("image:mone:0.4", "digits64", "mone", "MoNE", 15.0, 300, 2700)]
  new = [_row("image:vit", "digits64", "vit", "ViT", 52.0, 190, 1400, fast),
         _row("image:mone:0.4", "digits64", "mone", "MoNE", 43.0, 105, 1200, fast)]
  return {"machine": {"date": "2026-12-05T08:00:00", "cores": 2, "cores_used": 1, "cpu_model": "a CPU", "jax": "0.10.2"},
          "args": {"pair": list(fast), "rounds": 5, "steps": 4},
          "matmul_gflop_per_s": {"before": 70.0, "after": 69.0, "used": 70.0},
          "rows": [ref[0], new[0], ref[1], new[1]],
          "summary": {"mone_over_dense": {"digits64": 15.0 / 25.0}},
          "summary_with_overrides": {"mone_over_dense": {"digits64": 43.0 / 52.0}},
          "paired": {"by_kind": {"ViT": {"step_speedup": 2.08, "run_speedup": 2.57},
                                 "MoNE": {"step_speedup": 2.87, "run_speedup": 2.25}}}}


def test_the_tables_give_each_arm_as_trained_and_with_its_faster_settings():
  ref, fast = training_speed.split(_doc())
  lines, faster = training_speed.table(ref), training_speed.table(fast, ref)
  assert len(lines) == len(faster) == 2 + 2  # header, rule, one row per arm
  assert lines[2].split(" | ")[:3] == ["| image:vit", "400", "25.0"]
  assert faster[2].split(" | ")[:3] == ["| image:vit", "190", "52.0"]
  assert faster[2].endswith("| 2.08x | 2.57x |")  # 52/25 and 3600/1400


def test_the_targets_are_checked_on_the_measured_numbers():
  met = training_speed.targets(_doc())
  assert met[0].startswith("every kind's step >= 2x its reference GFLOP/s: met (ViT 2.08x, MoNE 2.87x")
  assert "within 0.8x of the dense model's on its recipe: met (digits64 0.83x)" in met[1]  # 43/52
  assert met[2].startswith("a full image run (8,000 steps) under 25 minutes on one core: met")  # 1400 s
  doc = _doc()
  doc["paired"]["by_kind"]["ViT"]["step_speedup"] = 1.4
  doc["summary_with_overrides"]["mone_over_dense"]["digits64"] = 30.0 / 52.0
  doc["rows"][1]["run"]["estimated_wall_s"] = 2000
  missed = training_speed.targets(doc)
  assert missed[0].startswith("every kind's step >= 2x its reference GFLOP/s: not met (ViT 1.40x") and "lowest ViT" in missed[0]
  assert "not met (digits64 0.58x)" in missed[1]
  assert "not met (slowest ViT/MoNE arm image:vit: 33 min estimated)" in missed[2]


def test_the_page_says_where_and_how_it_was_measured_and_draws_the_figure(tmp_path):
  text = training_speed.page(_doc(), "fig.png")
  assert text.startswith("# Training throughput on one CPU core")
  assert "`taskset -c 0 python -m mone.bench --training --pair model.weight_grad=direct --rounds 5 --steps 4`" in text
  assert "![Each arm's training step against the matmul rate](fig.png)" in text
  assert "Outside the step weighs most in image:vit" in text
  assert training_speed.page(None, None).startswith("# Training throughput on one CPU core\n\nNo training-throughput")
  fig = training_speed.figure(_doc())
  assert len(fig.axes[0].patches) == 4  # a bar per arm and setting
  fig.savefig(tmp_path / "f.png")


def _alloc(vit=1.05, mone=1.2):
  """An allocator comparison (`mone.bench.training.allocators`) over _doc's arms."""
  by = lambda v, m: {"per_arm": {"image:vit": v, "image:mone:0.4": m}, "by_kind": {"ViT": v, "MoNE": m}}
  return {"sittings": 2, "reference": by(vit, mone), "with_overrides": by(vit, mone),
          "cumulative": by(2.08 * vit, 2.87 * mone), "mone_over_dense_tcmalloc": [{"digits64": 0.9}, {"digits64": 0.8}]}


def test_with_tcmalloc_the_targets_read_the_allocators_sittings():
  doc = _doc()
  doc["rows"][1]["run"]["estimated_wall_s"] = 1800  # 30 min with glibc
  text = training_speed.targets(doc, _alloc(vit=1.25))
  assert text[0].startswith("every kind's step >= 2x its reference GFLOP/s: met (ViT 2.60x, MoNE 3.44x")
  assert "met (digits64 0.85x)" in text[1]  # the median of the sittings' tcmalloc files
  assert text[2] == ("a full image run (8,000 steps) under 25 minutes on one core: met (slowest ViT/MoNE arm image:vit: "
                     "30 min estimated with glibc, 24 with tcmalloc)")  # 1800 / 1.25
  page = training_speed.page(doc, None, _alloc())
  assert "**With tcmalloc.**" in page and "| ViT | 1.05x | 1.05x | 2.18x |" in page and "**The allocator.**" in page
  assert "**With tcmalloc.**" not in training_speed.page(doc, None)


def _versions(vit=2.1, mone=1.7, wall_s=(1400, 1600)):
  """A comparison of code versions (`mone.bench.training.versions`) over _doc's arms."""
  by = lambda v, m: {"per_arm": {"image:vit": v, "image:mone:0.4": m}, "by_kind": {"ViT": v, "MoNE": m}}
  return {"sittings": 2, "machines": [{"code": "aaa", "cpu_model": "AMD EPYC"}, {"code": "bbb", "cpu_model": "AMD EPYC", "allocator": "tcmalloc"}] * 2,
          "reference": by(1.1, 1.3), "with_overrides": by(1.2, 1.4), "cumulative": by(vit, mone),
          "overrides": ["model.weight_grad=narrow_first"], "overrides_before": ["model.weight_grad=direct"],
          "mone_over_dense_after": [{"digits64": 0.7}, {"digits64": 0.68}],
          "run_s_after": [{"image:vit": w, "image:mone:0.4": 900} for w in wall_s],
          "arms": {"image:vit": {"kind": "vit", "recipe": "digits64"}, "image:mone:0.4": {"kind": "mone", "recipe": "digits64"}}}


def test_the_code_against_the_baselines_is_read_on_its_own_machine():
  lines = training_speed.versions_targets(_versions())
  assert lines[0] == "every kind's step >= 2x the baseline's: not met (ViT 2.10x, MoNE 1.70x; lowest MoNE)"
  assert lines[1].endswith("not met (digits64 0.69x)")  # the median of the sittings' later files
  assert lines[2] == ("a full image run (8,000 steps) under 25 minutes on one core: met (slowest ViT/MoNE arm timed, "
                      "image:vit: 25.0 min estimated, the median over the sittings)")  # (1400 + 1600) / 2 s
  assert training_speed.versions_targets(_versions(wall_s=(1600, 1700)))[2].startswith(
      "a full image run (8,000 steps) under 25 minutes on one core: not met")
  page = training_speed.page(_doc(), None, None, _versions())
  assert "**This code against the baseline's, on one machine.**" in page and "| ViT | 1.10x | 1.20x | 2.10x |" in page
  assert "the file above (as it trained: glibc) and at this code (tcmalloc)" in page and "On the AMD EPYC, this code" in page
  assert "aaa" not in page and "bbb" not in page  # the book names no commit hash
  assert "`model.weight_grad=narrow_first` for this code, `model.weight_grad=direct` for the baseline's" in page
  assert "**This code against the baseline's" not in training_speed.page(_doc(), None)
  # The video arms' own comparison (a setting only ViViT has), on its machine, named by its matmul rate.
  video = _versions() | {"matmul_gflop_per_s": [[40.0, 44.0], [42.0, 43.0]]}
  page = training_speed.page(_doc(), None, None, _versions(), video=video)
  said = page[page.index("**The video arms with the tubelet embedding as one matmul.**"):]
  assert "one per core of an AMD EPYC (matmul 42 GFLOP/s, the median over the processes)" in said  # (42 + 43) / 2
  assert "`results/bench/cpu-training-versions-video.json`" in said and "| ViT | 1.10x | 1.20x | 2.10x |" in said
  assert ("The video arms with the tubelet embedding as one matmul, on their machine:\n\n- every kind's step >= 2x "
          "the baseline's: not met") in page
  assert "(matmul" not in page[:page.index("**The video arms")]  # a comparison that recorded no rate names none
  # The image arms again on the video arms' machine: their own paragraph and targets, after the video arms'.
  page = training_speed.page(_doc(), None, None, _versions(), video=video, images_avx2=_versions(wall_s=(1600, 1700)))
  said = page[page.index("**The image arms on the video arms' machine.**"):]
  assert "`results/bench/cpu-training-versions-images-avx2.json`" in said and page.index("**The video arms") < page.index(
      "**The image arms on")
  assert ("The image arms on the video arms' machine:\n\n- every kind's step >= 2x the baseline's: not met" in said
          and "a full image run (8,000 steps) under 25 minutes on one core: not met" in said)


def _attention(bound=0.79):
  doc = _doc()
  for r, att in zip(doc["rows"], (30.0, 25.0, 28.0, 24.0)):
    r["attention"] = {"ms": att, "share": att / r["step_ms"], "gflop_per_step": 1.0}
  doc["summary_with_overrides"]["mone_over_dense_bound"] = {"digits64": bound}
  return doc


def test_attentions_share_and_the_ceiling_it_puts_on_mone_are_read_off_the_file():
  text = training_speed.attention_text(_attention())
  assert "| image:vit | 190 | 25 | 13% |" in text and "| image:mone:0.4 | 105 | 24 | 23% |" in text  # the faster settings' rows
  assert "digits64: 0.83x measured, at most 0.79x" in text  # 43/52, and the file's bound
  below, above = training_speed.attention_targets(_attention(0.79)), training_speed.attention_targets(_attention(0.9))
  assert "caps MoNE's GFLOP/s at 0.79x" in below[0] and "no change outside attention can meet it" in below[0]
  assert "the rest of MoNE's step is what falls short" in above[0]


def test_the_image_run_target_is_read_off_a_real_run():
  run = {"kind": "vit", "config": {"kind": "vit", "name": "digits64", "eval_batch_size": 100, "model": {"weight_grad": "narrow_first"}},
         "code": {"cpu_model": "a CPU", "allocator": "tcmalloc"}, "device": {"cores_used": 1},
         "train_steps": 8000, "wall_time_s": 1390.6, "accuracy": 0.8758}
  line = training_speed.headline_run_line(run)
  assert line.startswith("a full image run (8,000 steps) under 25 minutes on one core, trained: met")
  assert "(ViT on digits64, with" in line and "23.2 min" in line and "87.6%" in line and "model.weight_grad=narrow_first eval_batch_size=100" in line
  assert ": not met" in training_speed.headline_run_line({**run, "wall_time_s": 25 * 60 + 1})
  page = training_speed.page(_doc(), None, attention=_attention(), run=run)
  assert "Measured apart:" in page and "23.2 min" in page and "**Attention's share.**" in page


def test_the_tubelet_matmul_is_read_against_the_convolution_with_the_files_base_settings():
  base, pair = ["model.weight_grad=direct", "eval_batch_size=100"], ["model.tubelet_embed=matmul"]
  conv = _row("temporal:vit", "moving_temporal", "vit", "ViViT", 16.0, 360, 3000)
  mm = _row("temporal:vit", "moving_temporal", "vit", "ViViT", 18.0, 320, 2700, pair)
  doc = {**_doc(), "args": {"pair": pair, "base": base, "rounds": 5, "steps": 4}, "rows": [conv, mm],
         "machine": {**_doc()["machine"], "load_avg": [1.02, 1.0, 1.0]},
         "paired": {"by_kind": {"ViViT": {"step_speedup": 1.125, "run_speedup": 1.11}}}}
  text = training_speed.tubelet_text(doc)
  assert "| temporal:vit | 360 | 320 | 1.12x |" in text  # 360 / 320 = 1.125, the same FLOPs per step
  assert "every arm with `model.weight_grad=direct eval_batch_size=100`" in text and "load average 1.0 at the start" in text
  assert "--base model.weight_grad=direct eval_batch_size=100 --pair model.tubelet_embed=matmul" in text
  assert text.rstrip().endswith("By kind (medians over the arms): ViViT 1.12x.")
  assert "**The tubelet embedding as one matmul.**" in training_speed.page(_doc(), None, tubelet=doc)
