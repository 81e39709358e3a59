"""The calibration criteria of the small profile: plateau and memorisation."""
import pytest

from mone.chapters import calibration


def run(vals, trains, steps=8000, every=1000):
  curve = [{"step": every * (i + 1), "train_loss": 1.0, "train_accuracy": t, "val_accuracy": v}
           for i, (v, t) in enumerate(zip(vals, trains))]
  return {"name": "digits64", "kind": "vit", "train_steps": steps, "curve": curve, "accuracy": vals[-1],
          "config_hash": "abc", "config": {"lr": 1e-3, "weight_decay": 0.1, "num_train": 50_000, "seed": 0}}


def test_check_measures_the_last_quarter_and_the_final_gap():
  m = run([0.5, 0.7, 0.8, 0.85, 0.86, 0.87, 0.875, 0.88], [0.5, 0.7, 0.8, 0.9, 0.92, 0.95, 0.97, 0.985])
  c = calibration.check(m)
  assert c["from_step"] == 6000 and c["last_quarter_gain"] == pytest.approx(0.01)
  assert c["train_val_gap"] == pytest.approx(0.105)
  assert c["plateau"] and not c["not_memorised"]
  c = calibration.check(run([0.5, 0.6, 0.7, 0.75], [0.5, 0.6, 0.7, 0.76], steps=4000))
  assert c["from_step"] == 3000 and c["last_quarter_gain"] == pytest.approx(0.05)
  assert not c["plateau"] and c["not_memorised"]
  # A row names its run by seed and settings, never by its config hash (abc).
  assert "\n| 0 | 4000 |" in (t := calibration.table([run([0.5, 0.6, 0.7, 0.75], [0.5, 0.6, 0.7, 0.76], steps=4000)])) and "not a plateau" in t and "abc" not in t


def test_a_gain_or_gap_exactly_at_its_threshold_meets_it_despite_float_rounding():
  # 1,412 then 1,442 of 2,000 validation clips: +1.5 points, which floats compute as 0.015000000000000013
  assert 0.721 - 0.706 > calibration.PLATEAU_GAIN
  c = calibration.check(run([0.5, 0.6, 0.706, 0.721], [0.5, 0.6, 0.7, 0.821], steps=4000))
  assert c["plateau"] and c["not_memorised"]  # train - val: 0.821 - 0.721, exactly 10 points
  assert not calibration.check(run([0.5, 0.6, 0.706, 0.7215], [0.5, 0.6, 0.7, 0.8], steps=4000))["plateau"]
  assert not calibration.check(run([0.5, 0.6, 0.7, 0.72], [0.5, 0.6, 0.7, 0.8205], steps=4000))["not_memorised"]


def test_check_refuses_runs_it_cannot_judge():
  with pytest.raises(ValueError, match="no validation curve"):
    calibration.check({"name": "x", "kind": "vit", "curve": []})
  with pytest.raises(ValueError, match="ends at step 7000"):
    calibration.check(run([0.5] * 7, [0.5] * 7))
  with pytest.raises(ValueError, match="no point in the first three quarters"):
    calibration.check(run([0.5], [0.5], steps=1000))


def val_record(run, accuracies):
  """scripts/temporal_errors.py's validation record of a run, by width."""
  return {"run": run, "split": "val", "rows": [{"width_index": i, "e_c": None, "error_pct": round(100 * (1 - a), 4)}
                                               for i, a in enumerate(accuracies)]}


def test_discrimination_decides_on_validation_and_reports_test_beside_it():
  dense = {"name": "moving_temporal", "kind": "vit", "accuracy": 0.90, "train_steps": 3000, "config_hash": "d",
           "curve": [{"step": 3000, "val_accuracy": 0.92}]}
  evals = [{"width_index": i, "accuracy": a} for i, a in enumerate((0.70, 0.84, 0.88, 0.89))]
  matvit = {"name": "moving_temporal", "kind": "matvit", "evals": evals, "config_hash": "m"}
  val = val_record("moving_temporal-matvit-m", (0.75, 0.88, 0.90, 0.91))
  d = calibration.discrimination(dense, matvit, val)
  # test: 6 points below dense, validation: 4; validation decides
  assert d["dense"] == 0.92 and d["sub_model"] == pytest.approx(0.88) and d["gap"] == pytest.approx(0.04)
  assert d["test"]["gap"] == pytest.approx(0.06) and not d["discriminates"]
  assert d["by_width"] == pytest.approx([0.75, 0.88, 0.90, 0.91])
  assert calibration.discrimination(dense, matvit, val, width_index=0)["discriminates"]
  with pytest.raises(ValueError, match="width_index must be one of"):
    calibration.discrimination(dense, matvit, val, width_index=4)
  with pytest.raises(ValueError, match="different tasks"):
    calibration.discrimination({**dense, "name": "moving_appearance"}, matvit, val)
  with pytest.raises(ValueError, match="kinds"):
    calibration.discrimination(matvit, dense, val)
  with pytest.raises(ValueError, match="validation record of run 'moving_temporal-matvit-m'"):
    calibration.discrimination(dense, matvit, {**val, "run": "moving_temporal-matvit-x"})
  with pytest.raises(ValueError, match="on split 'test'"):
    calibration.discrimination(dense, matvit, {**val, "split": "test"})
  with pytest.raises(ValueError, match="no validation point at its last step 3000"):
    calibration.discrimination({**dense, "curve": [{"step": 2500, "val_accuracy": 0.9}]}, matvit, val)
  with pytest.raises(ValueError, match="has no val_evals"):
    calibration.discrimination(dense, matvit)
  # A run file with val_evals (the loop writes them) needs no record, and ignores one
  newer = {**matvit, "val_evals": [{"width_index": i, "accuracy": a} for i, a in enumerate((0.8, 0.86, 0.9, 0.91))]}
  d = calibration.discrimination(dense, newer)
  assert d["gap"] == pytest.approx(0.06) and d["discriminates"] and d["by_width"] == [0.8, 0.86, 0.9, 0.91]
  assert calibration.discrimination(dense, newer, val) == d


def test_figure_draws_validation_and_training_curves_of_every_run():
  import matplotlib
  matplotlib.use("Agg")
  runs = [run([0.5, 0.7, 0.8, 0.85], [0.5, 0.72, 0.85, 0.9], steps=4000),
          run([0.5, 0.6, 0.7, 0.75], [0.5, 0.6, 0.7, 0.76], steps=4000)]
  runs[1]["config"] = {**runs[1]["config"], "num_train": 100_000}
  fig = calibration.figure(runs)
  acc, loss = fig.axes
  # Each run: validation (solid) and training images (dashed) in its colour, named once below.
  assert [(l.get_color(), l.get_linestyle()) for l in acc.get_lines()] == [
      ("C0", "-"), ("C0", "--"), ("C1", "-"), ("C1", "--")]
  assert [t.get_text() for t in acc.get_legend().get_texts()] == ["validation", "training images"]
  names = ["4000 steps, 50k images, wd 0.1", "4000 steps, 100k images, wd 0.1"]
  assert [t.get_text() for t in fig.legends[0].get_texts()] == names
  assert [l.get_color() for l in loss.get_lines()] == ["C0", "C1"]
  assert list(acc.get_lines()[1].get_ydata()) == [50, 72, 85, 90] and len(loss.get_lines()) == 2
  # the same setup at another seed: its own curve, in its setup's colour and named once with its count of seeds
  runs.append({**runs[1], "config": {**runs[1]["config"], "seed": 1},
               "curve": [{**p, "val_accuracy": p["val_accuracy"] - 0.01} for p in runs[1]["curve"]]})
  runs[1]["config"] = {**runs[1]["config"], "seed": 0}
  fig = calibration.figure(runs)
  acc, loss = fig.axes
  assert [(l.get_label(), l.get_color()) for l in loss.get_lines()] == [
      ("4000 steps, 50k images, wd 0.1", "C0"), ("4000 steps, 100k images, wd 0.1 (2 seeds)", "C1"),
      ("_4000 steps, 100k images, wd 0.1 (2 seeds)", "C1")]
  assert [t.get_text() for t in fig.legends[0].get_texts()] == ["4000 steps, 50k images, wd 0.1", "4000 steps, 100k images, wd 0.1 (2 seeds)"]
  assert [list(l.get_ydata()) for l in acc.get_lines() if l.get_linestyle() == "-"] == [
      [50, 70, 80, 85], [50, 60, 70, 75], [49, 59, 69, 74]]
  # ... thinner and fainter than a single run, which it would hide
  assert [(l.get_linewidth(), l.get_alpha()) for l in loss.get_lines()][1:] == [(1.0, 0.6)] * 2
  assert loss.get_lines()[0].get_alpha() is None
  from mone.plotting import legibility
  assert legibility.audit(fig, 150)["alike"] == []


def test_discrimination_table_pairs_dense_and_matvit_runs_of_the_same_setup_only():
  cfg = {"name": "moving_temporal", "dataset": "moving_digits", "seed": 0, "num_train": 40_000, "weight_decay": 1e-4,
         "lr": 1e-3, "steps": 3000, "e_c": 0.4, "eval_e_c": [], "log_every": 25}
  evals = [{"width_index": i, "accuracy": a} for i, a in enumerate((0.80, 0.85, 0.90, 0.92))]
  def make(kind, h, val=0.93, **over):
    m = {"name": "moving_temporal", "kind": kind, "accuracy": 0.93, "train_steps": 3000, "config_hash": h,
         "config": {**cfg, "kind": kind, **over}, "curve": [{"step": 3000, "val_accuracy": val}]}
    return {**m, "evals": evals} if kind == "matvit" else m
  clean = make("vit", "d0")   # no video_noise field: a run file from before it, noise 0
  noisy = make("vit", "d1", video_noise=0.15)
  runs = [clean, noisy, make("matvit", "m0", video_noise=0.0, log_every=50), make("matvit", "m1", video_noise=0.15),
          make("matvit", "m2", video_noise=0.15, seed=1)]
  assert [(d["config_hash"], m["config_hash"]) for d, m in calibration.pairs(runs)] == [("d0", "m0"), ("d1", "m1")]
  records = {"moving_temporal-matvit-m1": val_record("moving_temporal-matvit-m1", (0.82, 0.86, 0.90, 0.92))}
  text = calibration.discrimination_table(runs, records)
  assert ("| 3000 steps, 40k clips, wd 0.0001, noise 0.15, seed 0 | 93.0 (d1) | 82.0 / 86.0 / 90.0 / 92.0 (m1) "
          "| 7.0 (8.0) points | discriminates |") in text
  # a pair without a validation record is listed, undecided
  assert "40k clips, wd 0.0001, seed 0 | (d0) | (m0) | - | no validation record: scripts/temporal_errors.py |" in text
  assert text.count("discriminates |") == 1 and "mean of" not in text
  # a second seed of the noisy setup: its own row, and the verdict of the mean over both seeds
  runs.append(make("vit", "d2", val=0.90, video_noise=0.15, seed=1))
  records["moving_temporal-matvit-m2"] = val_record("moving_temporal-matvit-m2", (0.82, 0.88, 0.90, 0.92))
  text = calibration.discrimination_table(runs, records)
  assert "noise 0.15, seed 1 | 90.0 (d2) | 82.0 / 88.0 / 90.0 / 92.0 (m2) | 2.0 (8.0) points | does not discriminate |" in text
  assert ("| 3000 steps, 40k clips, wd 0.0001, noise 0.15, mean of 2 seeds | 91.5 | 82.0 / 87.0 / 90.0 / 92.0 "
          "| 4.5 (8.0) points | does not discriminate |") in text
  m = calibration.mean_discrimination([calibration.discrimination(d, mv, records.get(f"moving_temporal-matvit-{mv['config_hash']}"))
                                       for d, mv in calibration.pairs(runs) if d["config"].get("video_noise")])
  assert m["seeds"] == 2 and m["gap"] == pytest.approx(0.045) and not m["discriminates"]
  with pytest.raises(ValueError, match="at least one"):
    calibration.mean_discrimination([])
  assert "| noise |" in calibration.table([{**run([0.5, 0.6, 0.7, 0.7], [0.5, 0.6, 0.7, 0.7], steps=4000),
                                             "config": {**cfg, "video_noise": 0.15}}])


def test_validation_records_are_keyed_by_the_run_file_they_describe(tmp_path):
  from mone import results
  rec = {"run": "moving_temporal-matvit-abc", "split": "val", "rows": []}
  results.atomic_write_json(tmp_path / "calibration" / "moving_temporal-matvit-abc-errors.json", rec)
  assert calibration.validation_records(tmp_path) == {"moving_temporal-matvit-abc": rec}
  assert calibration.validation_records(tmp_path / "none") == {}
  assert calibration.run_name({"name": "moving_temporal", "kind": "matvit", "config_hash": "abc"}) == rec["run"]


def test_standing_reads_each_runs_curve_and_its_full_width():
  curve = [{"step": 50, "val_accuracy": 0.5, "train_accuracy": 0.5}, {"step": 100, "val_accuracy": 0.8, "train_accuracy": 0.9}]
  cfg = {"model": {"name": "m", "num_classes": 10}, "adaptive": False, "e_c": None, "iso_flops": False, "lr": 1e-3}
  matvit = {"kind": "matvit", "config": cfg, "train_steps": 100, "curve": curve, "device": {"kind": "cpu"},
            "evals": [{"e_c": None, "width_index": i, "gflops": i + 1.0, "accuracy": a} for i, a in enumerate((0.4, 0.7))]}
  rows = calibration.standing([("MatViT", 2, matvit), ("ViT", 0, {**matvit, "kind": "vit", "curve": None,
                                                                   "evals": [{"e_c": None, "width_index": None, "gflops": 2.0, "accuracy": 0.81}]})])
  assert rows[0]["test_pct"] == 70.0 and rows[0]["seed"] == 2
  assert (round(rows[0]["val_pct"], 6), round(rows[0]["last_quarter_gain"], 6), round(rows[0]["train_minus_val"], 6)) == (80.0, 30.0, 10.0)
  assert rows[1]["val_pct"] is None and rows[1]["test_pct"] == 81.0


def test_seed_discrimination_pairs_a_chapters_runs_by_seed_and_the_caveat_follows_the_bar(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))  # no validation records: every MatViT run has val_evals
  dense = lambda val: {"name": "moving_temporal", "kind": "vit", "accuracy": 0.9, "train_steps": 10, "config_hash": "d",
                       "curve": [{"step": 10, "val_accuracy": val}]}
  nested = lambda quarter: {"name": "moving_temporal", "kind": "matvit", "config_hash": "m",
                            "evals": [{"width_index": i, "accuracy": 0.8} for i in range(4)],
                            "val_evals": [{"width_index": i, "accuracy": a} for i, a in enumerate((0.5, quarter, 0.9, 0.9))]}
  runs = [("temporal: ViViT", 0, dense(0.92)), ("temporal: MatViViT", 0, nested(0.90)),
          ("temporal: ViViT", 1, dense(0.94)), ("temporal: MatViViT", 1, nested(0.90)),
          ("temporal: ViViT", 2, dense(0.95)),  # no MatViViT run at seed 2: not paired
          ("temporal: MoNE e_c=0.4", 0, dense(0.5))]
  gaps = calibration.seed_discrimination(runs)
  assert sorted(gaps) == [0, 1] and gaps[1]["gap"] == pytest.approx(0.04)
  mean = calibration.mean_discrimination(list(gaps.values()))
  (caveat,) = calibration.caveats(mean, "the claims X compare little")
  assert "3.0 points below the dense ViViT" in caveat and "mean of 2 seeds" in caveat and caveat.endswith("so the claims X compare little.")
  assert calibration.caveats(None, "x") == [] and calibration.caveats({**mean, "discriminates": True}, "x") == []


def test_the_temporal_noise_chosen_again_on_validation_is_the_one_trained():
  # The noise level was first chosen on the test clips; on validation the same level separates
  # the widths most, so the trained runs stand (and the caveat says how it was chosen).
  choice = calibration.noise_choice()
  assert [l["noise"] for l in choice["levels"]] == [0.0, 0.15]
  assert choice["chosen_on_validation"] == choice["chosen_on_test"] == choice["trained"] == 0.15
  assert not choice["meets_bar"]  # 4.1 points on validation, below the 5-point bar
  (text,) = calibration.noise_caveat(choice)
  assert "first chosen on the test clips" in text and "the same, so no run was retrained" in text and "4.1 points" in text


def test_a_different_choice_on_validation_says_the_verdicts_rest_on_a_task_chosen_on_test():
  choice = {"levels": [{"noise": 0.0, "val_gap": 0.06, "test_gap": 0.02}, {"noise": 0.15, "val_gap": 0.04, "test_gap": 0.059}],
            "chosen_on_validation": 0.0, "chosen_on_test": 0.15, "trained": 0.15, "meets_bar": True}
  (text,) = calibration.noise_caveat(choice)
  assert "noise 0, not the 0.15 the runs trained with" in text and "bar" not in text
