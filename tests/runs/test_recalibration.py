"""mone.runs.recalibration: the next profile's calibration, frozen before its runs; its rules on
made-up learning curves, and the order in which candidates and stages train."""
import numpy as np
import pytest

from mone import results
from mone.runs import recalibration as rc
from mone.runs import plan
from mone.configs import arms, schema
from mone.runs import calibrations
from mone.train import loop

CANDIDATES = rc.CURRENT.candidates


def _run_file(final: float, early: float = 0.5, steps: int = 6000, every: int = 250, slope: float = 0.0,
              classes: int = 8) -> dict:
  """A run file with a validation curve: `early` up to 10% of the steps, a ramp to `final`, and over
  the last quarter a line of `slope` (accuracy per quarter) ending at `final`."""
  curve = []
  for step in range(every, steps + every, every):
    if step <= 0.1 * steps:
      val = early
    elif step < 0.75 * steps:
      val = final - slope
    else:
      val = final - slope * (steps - step) / (0.25 * steps)
    curve.append({"step": step, "val_accuracy": val, "train_accuracy": val})
  code = {"commit": "0" * 40, "dirty": False, "xla_flags": "", "jax": "0", "jaxlib": "0", "cpu_model": "x86", "isa": "AVX2"}
  return {"train_steps": steps, "curve": curve, "config": {"model": {"num_classes": classes}}, "code": code}


def test_the_committed_files_are_the_frozen_documents():
  for cal in rc.ALL:
    assert results.read_json(results.RESULTS / cal.file) == rc.document(cal), cal.file
  assert rc.write(results.RESULTS) is False  # unchanged: nothing written


def test_each_later_calibration_keeps_the_replaced_ones_rules_and_reads_enough_of_each_last_quarter():
  assert rc.CURRENT is calibrations.V5 and rc.ALL == (calibrations.V3, calibrations.V4, calibrations.V5)
  for older, later in zip(rc.ALL, rc.ALL[1:]):
    old, new = rc.document(older), rc.document(later)
    for same in ("rules", "seeds", "stage_a_arms", "stage_b_arms", "isa_twin", "every_run", "order", "purpose"):
      assert old[same] == new[same], (later.version, same)
    assert new["supersedes"]["file"] == older.file
  assert "supersedes" not in rc.document(calibrations.V3)
  for cal in rc.ALL[1:]:
    for task, name in [(t, name) for t, cands in cal.candidates.items() for name, _ in cands]:
      cfg = rc.Run(task, name, calibrations.STAGE_A[task][0], 100, cal=cal).config()
      due = [s for s in range(1, cfg.steps + 1) if loop.curve_point_due(cfg, s, cfg.steps)]
      assert sum(4 * s >= 3 * cfg.steps for s in due) >= 50, name  # rule (a)'s points
      assert sum(s <= 0.1 * cfg.steps for s in due) >= 2, name      # rule (b)'s first part's
  # Measured again: v3's last temporal candidate is the same training (same run id), read from more
  # points, in its own folder (and workdirs, `rc.queue`), so neither calibration's file stands in for the other's.
  v3, v4 = (rc.Run("temporal", "temporal-9k-warmup10-lr5e-4", "table1:uniform", 100, cal=c) for c in rc.ALL[:2])
  assert v3.config().tail_eval_every == 0 and v4.config().tail_eval_every == 45
  assert results.run_id(v3.config()) == results.run_id(v4.config())
  assert v3.run_path(results.RESULTS).name == v4.run_path(results.RESULTS).name
  assert "/calibration_v3/runs/" in str(v3.run_path(results.RESULTS)) and "/calibration_v4/runs/" in str(v4.run_path(results.RESULTS))


def test_a_changed_definition_is_refused_and_leaves_the_file(tmp_path, monkeypatch):
  assert rc.write(tmp_path) is True and all((tmp_path / cal.file).exists() for cal in rc.ALL)
  doc = rc.document()
  doc["seeds"] = [100]
  results.atomic_write_json(tmp_path / rc.CURRENT.file, doc)
  with pytest.raises(ValueError, match="is frozen and differs"):
    rc.write(tmp_path)
  assert results.read_json(tmp_path / rc.CURRENT.file)["seeds"] == [100]
  # The command line stops on it in one line, naming the file (`python -m mone.chapters recalibration`).
  from mone.publish import cli
  monkeypatch.setattr(rc.results, "RESULTS", tmp_path)
  with pytest.raises(SystemExit, match=rf"^error: {tmp_path / rc.CURRENT.file} is frozen and differs"):
    cli.main(["recalibration"])
  assert results.read_json(tmp_path / rc.CURRENT.file)["seeds"] == [100]


def test_calibration_seeds_are_no_plans_and_every_arm_is_a_plan_arm():
  assert not set(rc.SEEDS) & set(range(10))
  assert not set(rc.SEEDS) & (set(plan.SEEDS_TO_TEN) | set(plan.EXTRA_SEEDS))
  names = {a.name for a in arms.arms()}
  staged = [a for t in rc.TASKS for a in rc.STAGE_A[t] + rc.STAGE_B[t]]
  assert len(staged) == len(set(staged)) and set(staged) == names  # every arm once, in one stage


def test_a_run_config_is_its_arm_with_the_candidate_the_faster_step_and_its_seed():
  run = rc.Run("temporal", "temporal-18k-warmup10-lr5e-4", "table1:uniform", 101)
  cfg, base = run.config(), arms.select(["table1:uniform"])[0].config()
  assert (cfg.steps, cfg.warmup_steps, cfg.eval_every, cfg.lr, cfg.seed) == (18_000, 1800, 750, 5e-4, 101)
  assert (cfg.model.weight_grad, cfg.eval_batch_size) == ("direct", 100)
  assert (cfg.name, cfg.kind, cfg.allocation, cfg.e_c) == (base.name, base.kind, base.allocation, base.e_c)
  twin = rc.Run("temporal", run.candidate, run.arm, 101, twin=True)
  assert twin.config() == cfg and twin.run_path(results.RESULTS) != run.run_path(results.RESULTS)
  assert f"/{rc.CURRENT.twin_folder}/runs/" in str(twin.run_path(results.RESULTS)) and rc.CURRENT.twin_folder.endswith("/avx2")


def test_the_fitted_gain_reads_a_line_through_noise():
  m = _run_file(0.9, slope=0.01)
  assert rc.fitted_gain(m["curve"], 6000) == pytest.approx(0.01)
  # One noisy end point does not decide it: +-1 point alternating on a flat curve fits ~0.
  for i, p in enumerate(m["curve"]):
    if p["step"] >= 4500:
      p["val_accuracy"] = 0.9 + (0.01 if i % 2 else -0.01)
  assert abs(rc.fitted_gain(m["curve"], 6000)) < 0.008
  with pytest.raises(ValueError, match="needs at least 3"):
    rc.fitted_gain(_run_file(0.9, every=1000)["curve"], 6000)


def test_the_fitted_gains_noise_is_the_scatter_about_its_line():
  steps = 8000
  line = [{"step": s, "val_accuracy": 0.8 + 1e-6 * s} for s in range(1000, steps + 1, 1000)]
  assert rc.gain_noise(line, steps) == pytest.approx(0.0, abs=1e-12)
  # three evaluations in the last quarter (6000, 7000, 8000), the middle one off its line by e: the
  # residuals are (e/3, -2e/3, e/3), their SD (1 degree of freedom) e sqrt(2/3); the slope's error
  # that over sqrt(2 * 1000^2), times a quarter of the steps
  e = 0.01
  bumped = [dict(p, val_accuracy=p["val_accuracy"] + (e if p["step"] == 7000 else 0.0)) for p in line]
  assert rc.gain_noise(bumped, steps) == pytest.approx(e * (2 / 3) ** 0.5 / (2 ** 0.5 * 1000) * 2000)
  # Points alternating about the line scatter independently or less (negative lag-one correlation);
  # a slow wave about it moves neighbours together (positive): the error is then larger than it says.
  tail = range(6000, steps + 1, 100)
  zigzag = [{"step": s, "val_accuracy": 0.8 + (0.002 if i % 2 else -0.002)} for i, s in enumerate(tail)]
  wave = [{"step": s, "val_accuracy": 0.8 + 0.002 * np.sin(s / 300)} for s in tail]
  assert rc.residual_correlation(zigzag, steps) == pytest.approx(-1.0, abs=0.05)
  assert rc.residual_correlation(wave, steps) > 0.8
  # a gain that errs by a normal noise of PLATEAU_GAIN / 1.6449 stays below PLATEAU_GAIN 95% of the time
  one, every = rc.pass_chance(rc.PLATEAU_GAIN / 1.6448536, 2)
  assert (one, every) == (pytest.approx(0.95), pytest.approx(0.95 ** 2))
  assert rc.pass_chance(0.0, 5) == (1.0, 1.0)


def test_a_run_passes_on_a_plateau_that_left_chance_early():
  ok = rc.check_run(_run_file(0.9, early=0.5, slope=0.002))
  assert ok["plateau"] and ok["left_chance"]
  assert not rc.check_run(_run_file(0.9, slope=0.004))["plateau"]
  # Chance is 1/8 = 12.5%: 22.5% is 10 points above it, not more.
  assert not rc.check_run(_run_file(0.9, early=0.225))["left_chance"]
  assert rc.check_run(_run_file(0.9, early=0.23))["left_chance"]


def test_an_arm_fails_on_an_outlier_seed_or_a_twin_outside_the_seed_range():
  seeds = {100: _run_file(0.90), 101: _run_file(0.92), 102: _run_file(0.91)}
  arm = rc.check_arm(seeds, twin=_run_file(0.915))
  assert arm["passes"] and arm["seed_range"] == pytest.approx(0.02)
  assert not rc.check_arm(seeds, twin=_run_file(0.935))["twin_within"]  # 3.5 points from seed 100's, range 2
  assert rc.check_arm(seeds | {101: _run_file(0.90)}, twin=_run_file(0.909))["twin_within"]  # floor: 1 point
  stalled = rc.check_arm(seeds | {102: _run_file(0.5)})
  assert not stalled["no_outlier"] and not stalled["passes"]
  assert "twin_within" not in stalled  # stage B has no twin
  # a twin whose curve equals its seed run's is marked: it tested no last-bit noise
  assert rc.check_arm(seeds, twin=seeds[100])["twin_identical"] and not arm["twin_identical"]


def test_candidates_are_chosen_in_order_by_both_stages():
  arms_of = lambda stage, ok: {a: {"passes": ok} for a in (rc.STAGE_A if stage == "A" else rc.STAGE_B)["image"]}
  first, second = (n for n, _ in CANDIDATES["image"])
  assert rc.choose("image", {}) is None
  assert rc.choose("image", {first: {"A": arms_of("A", True)}}) is None  # stage B not yet trained
  both = {"A": arms_of("A", True), "B": arms_of("B", True)}
  assert rc.choose("image", {first: both}) == first
  assert rc.choose("image", {first: {"A": arms_of("A", False)}, second: both}) == second
  # A task without stage-B arms is decided by stage A.
  assert rc.choose("appearance", {CANDIDATES["appearance"][0][0]: {"A": {a: {"passes": True} for a in rc.STAGE_A["appearance"]}, "B": {}}}) \
      == CANDIDATES["appearance"][0][0]


def test_the_queue_walks_stages_then_candidates(tmp_path):
  task = "temporal"
  first, second = CANDIDATES[task][0][0], CANDIDATES[task][1][0]
  _, todo, chosen = rc.progress(task, tmp_path)
  assert chosen is None and todo == rc.runs(task, first, "A") and sum(r.twin for r in todo) == len(rc.STAGE_A[task])

  def land(run_list, final):
    for r in run_list:
      steps = dict(CANDIDATES[task])[r.candidate]["steps"]
      every = dict(CANDIDATES[task])[r.candidate]["eval_every"]
      results.atomic_write_json(r.run_path(tmp_path), _run_file(final(r), steps=steps, every=every))
  # Stage A passes: stage B of the same candidate is next.
  land(rc.runs(task, first, "A"), lambda r: 0.90)
  _, todo, _ = rc.progress(task, tmp_path)
  assert todo == rc.runs(task, first, "B")
  # One stage-B run stalls: the candidate fails, the next one's stage A is next.
  land(rc.runs(task, first, "B"), lambda r: 0.5 if (r.arm, r.seed) == ("table1:uniform", 102) or
       (r.arm, r.seed) == ("temporal:mone:0.4", 102) else 0.9)
  outcomes, todo, chosen = rc.progress(task, tmp_path)
  assert chosen is None and todo == rc.runs(task, second, "A")
  assert not outcomes[first]["B"]["temporal:mone:0.4"]["passes"]
  # The second passes both stages: chosen, nothing more to train, the third never trains.
  land(rc.runs(task, second, "A") + rc.runs(task, second, "B"), lambda r: 0.9)
  assert rc.progress(task, tmp_path)[1:] == ([], second)
  assert f"chosen: {second}" in rc.status(tmp_path)


def test_a_stage_fails_at_its_first_run_that_fails_a_rule_of_its_own(tmp_path):
  task = "image"
  first, second = CANDIDATES[task][0][0], CANDIDATES[task][1][0]
  steps, every = (dict(CANDIDATES[task])[first][k] for k in ("steps", "eval_every"))
  stage = rc.runs(task, first, "A")
  # Runs on a plateau, and an outlier (rule (b)'s second part, read over the arm's seeds): undecided.
  _land(tmp_path, task, first, "A", "image:vit", {100: _run_file(0.9, steps=steps, every=every),
                                                  101: _run_file(0.6, steps=steps, every=every)})
  outcomes, todo, _ = rc.progress(task, tmp_path)
  assert first not in outcomes and todo == [r for r in stage if not r.run_path(tmp_path).exists()] and todo[0] == stage[1]
  # A twin still climbing decides nothing (the twin is held to the seed range only).
  _land(tmp_path, task, first, "A", "image:mod", {"twin": _run_file(0.9, steps=steps, every=every, slope=0.02)})
  assert rc.progress(task, tmp_path)[1][0] == stage[1]
  # One run still climbing in its last quarter (rule (a)): the candidate has failed whatever the rest
  # give, so the next candidate's stage A trains, and the first's twins never do.
  _land(tmp_path, task, first, "A", "image:matvit", {102: _run_file(0.9, steps=steps, every=every, slope=0.01)})
  outcomes, todo, chosen = rc.progress(task, tmp_path)
  assert chosen is None and todo == rc.runs(task, second, "A")
  assert list(outcomes[first]["A"]) == ["image:matvit"] and not outcomes[first]["A"]["image:matvit"]["passes"]
  assert outcomes[first]["A"]["image:matvit"]["failed"][102]["fitted_gain"] == pytest.approx(0.01, abs=1e-6)
  assert f"{first}': {{'A': False}}" in rc.status(tmp_path)
  # A run that never left chance fails its stage the same way.
  steps, every = (dict(CANDIDATES[task])[second][k] for k in ("steps", "eval_every"))
  _land(tmp_path, task, second, "A", "image:vit", {101: _run_file(0.9, early=0.1, steps=steps, every=every)})
  assert rc.progress(task, tmp_path)[1:] == ([], None) and "every candidate failed" in rc.status(tmp_path)


def test_a_run_file_without_its_code_version_is_refused(tmp_path):
  # The next profile compares a run only with runs of its own code: one that does not say which code
  # trained it stops the calibration's readout in one line, and is left as it was.
  task = "temporal"
  r = rc.runs(task, CANDIDATES[task][0][0], "A")[0]
  old = _run_file(0.9)
  del old["code"]["commit"]
  results.atomic_write_json(r.run_path(tmp_path), old)
  before = r.run_path(tmp_path).read_bytes()
  with pytest.raises(ValueError, match=r"does not record commit of the code that trained it"):
    rc.progress(task, tmp_path)
  assert r.run_path(tmp_path).read_bytes() == before
  # Every committed calibration run records it.
  committed = [p for cal in rc.ALL for p in sorted((results.RESULTS / cal.folder / "runs").glob("*.json"))]
  assert committed and all(results.require_provenance(results.read_json(p), p) for p in committed)


def _land(root, task, candidate, stage, arm, files, cal=rc.CURRENT):
  """Writes run files {seed or 'twin': run file} of one arm of `cal` under the results folder `root`."""
  for key, m in files.items():
    run = rc.Run(task, candidate, arm, rc.SEEDS[0] if key == "twin" else key, twin=key == "twin", cal=cal)
    path = run.run_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    results.atomic_write_json(path, {**m, "test_accuracy": 0.123456})


def test_the_calibration_page_shows_each_run_against_the_rules_and_never_test_accuracy(tmp_path, monkeypatch):
  from mone.publish import recalibration_page
  monkeypatch.setattr(results, "RESULTS", tmp_path)  # the figures land under the same folder
  first = CANDIDATES["temporal"][0][0]
  passing = {s: _run_file(0.95 - 0.01 * i) for i, s in enumerate(rc.SEEDS)} | {"twin": _run_file(0.95)}
  _land(tmp_path, "temporal", first, "A", "temporal:vit", passing)
  stalled = {rc.SEEDS[0]: _run_file(0.9, early=0.13), rc.SEEDS[1]: _run_file(0.9, slope=0.01)}
  _land(tmp_path, "temporal", first, "A", "temporal:matvit", stalled)
  out = tmp_path / "book" / "calibration.md"
  page = recalibration_page.page(tmp_path, out)
  rows = [line for line in page.splitlines() if line.startswith("| temporal:")]
  assert len(rows) == 4 + 2
  verdict = rc.check_arm({s: passing[s] for s in rc.SEEDS}, passing["twin"])
  assert verdict["passes"] and "| temporal:vit | 100 | 50.0 | yes | +0.00 | yes | 95.0 | **passes** (median 94.0%" in page
  # an arm with seeds to come is not judged; its runs' readings are shown, the stalled ones marked
  # a run failing a rule of its own fails its arm, and its stage, before the arm's other seeds train
  assert "| temporal:matvit | 100 | 13.0 | **no** | +0.00 | yes | 90.0 | **fails** on a run alone (2 of 4 runs trained) |" in page
  assert "| temporal:matvit | 101 | 50.0 | yes | +1.00 | **no** | 90.0 |  |" in page
  assert "12.3" not in page and "test accuracy" in page  # said never shown, and not shown
  assert "Rule (a)'s own noise on these runs: a fitted gain errs by at least 0.00 points" in page  # exact lines
  assert f"**{CANDIDATES['temporal'][1][0]}** (" in page and "no run yet" in page
  png = tmp_path / recalibration_page.figures() / f"{first}.png"
  assert png.exists() and f"](../{recalibration_page.figures()}/{first}.png)" in page
  second = CANDIDATES["temporal"][1][0]
  assert f"- **temporal**: failed the rules: {first} (stage A); {second}, stage A, has 16 runs to train." in page
  # the failed candidate folds away, its curves and readings one click away
  assert f"::::{{dropdown}} {rc.CURRENT.version} {first}: failed the rules (stage A); its curves and readings" in page and f"### {first}" not in page
  assert "Rule (a)'s own noise on these runs: a fitted gain errs by at least 0.00 points (the median over the runs, " \
         "from the evaluations' scatter about the fitted line; their residuals' lag-one correlation, median +0.00," in page
  assert [recalibration_page._share(p) for p in (0.9965, 0.99981, 1.0, 0.934, 0.026)] == ["99.7", "99.98", "100", "93", "3"]
  # Why the current one replaced the one before it, and a link to the replaced ones' own page, where they
  # follow the latest first, as they stood: why each replaced its own predecessor, its candidates folded,
  # what it would have trained next.
  assert f"This calibration replaced `results/{rc.ALL[-2].file}`: {rc.CURRENT.supersedes['why'][0].upper()}" in page
  assert "results are on [their own page](calibration_replaced.md)" in page and "## The replaced" not in page
  assert "](history/old.md)" in recalibration_page.page(tmp_path, out, replaced=tmp_path / "book" / "history" / "old.md")
  assert "results are on [their own page](calibration_replaced.md)" in recalibration_page.page(tmp_path)  # no page file
  old = recalibration_page.replaced_page(tmp_path, tmp_path / "book" / "calibration_replaced.md")
  assert old.startswith("# The replaced calibrations\n") and "12.3" not in old
  assert old.index("## The replaced calibration (v4)") < old.index("## The replaced calibration (v3)")
  assert "It replaced `results/calibration_v3.json`: Rule (a) read seven validation points per run" in old
  replaced = old[old.index("## The replaced calibration (v3)"):]
  assert "Fixed in `results/calibration_v3.json` on 2026-12-05" in replaced and "## The" not in replaced[5:]
  assert "- **temporal**: temporal-6k-warmup10, stage A, had 16 runs to train." in replaced
  # A replaced calibration's candidate with runs folds even while undecided.
  _land(tmp_path, "image", "image-12k", "A", "image:vit", {100: _run_file(0.9, steps=12_000, every=500)}, rc.ALL[0])
  replaced = recalibration_page.replaced_page(tmp_path, out).split("## The replaced calibration (v3)")[1]
  assert "::::{dropdown} v3 image-12k: 1 run, undecided; its curves and readings" in replaced
  assert f"](../{recalibration_page.figures(rc.ALL[0])}/image-12k.png)" in replaced
  assert (tmp_path / recalibration_page.figures(rc.ALL[0]) / "image-12k.png").exists()


def test_the_page_tabulates_and_draws_rule_a_on_every_committed_run_by_recipe_and_kind(tmp_path, monkeypatch):
  from mone.publish import recalibration_page
  def run(kind, steps, lr, slope):
    m = _run_file(0.9, steps=steps, every=steps // 24, slope=slope)
    m["config"].update(name="moving_temporal", steps=steps, warmup_steps=steps // 10, lr=lr)
    return {**m, "kind": kind}
  files = {tmp_path / "runs" / "moving_temporal-vit-a.json": run("vit", 6000, 1e-3, 0.01),
           tmp_path / "runs" / "moving_temporal-vit-b.json": run("vit", 6000, 1e-3, 0.02),
           tmp_path / "runs" / "moving_temporal-mone-c.json": run("mone", 6000, 1e-3, 0.004),
           tmp_path / "calibration_v4" / "runs" / "moving_temporal-mone-d.json": run("mone", 9000, 5e-4, 0.002),
           tmp_path / "runs" / "digits64-vit-e.json": run("vit", 8000, 1e-3, 0.05)}  # another task's name: not read
  files[tmp_path / "runs" / "digits64-vit-e.json"]["config"]["name"] = "digits64"
  for path, m in files.items():
    path.parent.mkdir(parents=True, exist_ok=True)
    results.atomic_write_json(path, m)
  assert recalibration_page.gains_by_recipe(*recalibration_page.gains("temporal", tmp_path)) == [
      "| trained in | steps | warmup | peak rate | ViViT | MoNE |", "|---|---|---|---|---|---|",
      "| previous profile | 6,000 | 600 | 0.001 | +1.50 (2; largest +2.00) | +0.40 (1) |",
      "| calibration v4 | 9,000 | 900 | 0.0005 |  | +0.20 (1) |"]
  assert recalibration_page.gains_by_recipe(*recalibration_page.gains("appearance", tmp_path)) == []
  # The same readings drawn against the steps, a stalled run's gain at the figure's edge.
  found, labels = recalibration_page.gains("temporal", tmp_path)
  assert list(found) == [("previous profile", 6000, 600, 1e-3), ("calibration v4", 9000, 900, 5e-4)]
  assert found[("calibration v4", 9000, 900, 5e-4)]["mone"] == [pytest.approx((0.2, 90.0), abs=1e-3)]
  found[("previous profile", 6000, 600, 1e-3)]["vit"].append((25.0, 12.5))  # a run that stalled
  fig = recalibration_page.gains_figure("temporal", found, labels)
  def drawn(ax):
    return sorted((round(x), round(y, 2)) for c in ax.collections for x, y in c.get_offsets())
  assert drawn(fig.axes[0]) == [(6, 0.4), (6, 1.0), (6, 2.0), (6, recalibration_page.GAIN_SCALE[1]), (9, 0.2)]
  assert [line.get_ydata()[0] for line in fig.axes[0].lines] == [100 * rc.PLATEAU_GAIN, 0]
  floor = 90.0 - recalibration_page.FINAL_FLOOR  # below the calibration run's final accuracy
  assert drawn(fig.axes[1]) == [(6, floor), (6, 90.0), (6, 90.0), (6, 90.0), (9, 90.0)]
  monkeypatch.setattr(results, "RESULTS", tmp_path)  # the page draws its figures under the same folder
  page = recalibration_page.page(tmp_path, tmp_path / "book" / "calibration.md")
  png = tmp_path / recalibration_page.figures() / "gains-temporal.png"
  assert png.exists() and f"](../{recalibration_page.figures()}/gains-temporal.png)" in page
  assert "gains-appearance.png" not in page  # no run of that task: nothing drawn


def _timed_runs(task: str) -> list[dict]:
  """One finished CPU run file per headline arm of the task, at seed 7, at 2 seconds per training GFLOP."""
  from mone import flops
  return [{"name": c.name, "kind": c.kind, "seed": 7, "device": {"kind": "cpu"}, "train_steps": c.steps,
           "train_gflops": flops.train_gflops(c), "wall_time_s": 2 * flops.train_gflops(c),
           "config_hash": results.config_hash(c)} for c in (a.config(seed=7) for a in arms.arms() if a.task == task)]


def test_plan_hours_times_every_headline_arm_of_the_task_at_the_ten_seeds_from_finished_runs():
  from mone import flops
  appearance = [a for a in arms.arms() if a.task == "appearance"]
  finished = _timed_runs("appearance")
  overrides = {"steps": 24_000, "warmup_steps": 1200}
  cfgs = [schema.apply_overrides(a.config(), [f"{k}={v}" for k, v in {**rc.FASTER, **overrides}.items()])
          for a in appearance]
  expected = 10 * sum(2 * flops.train_gflops(c) for c in cfgs) / 3600
  assert rc.PLAN_SEEDS == tuple(range(10))
  assert rc.plan_hours("appearance", overrides, finished) == pytest.approx(expected)
  assert rc.plan_hours("appearance", {"steps": 48_000, "warmup_steps": 1200}, finished) == pytest.approx(2 * expected, rel=1e-3)
  assert rc.plan_hours("appearance", overrides, finished[:2]) is None  # MoNE has no run to time it from
  assert rc.plan_hours("image", overrides, finished) is None


def test_the_page_says_what_the_plan_would_cost_at_each_candidate():
  from mone.publish import recalibration_page
  finished = _timed_runs("appearance")
  hours = [rc.plan_hours("appearance", o, finished) for o in [{}] + [o for _, o in CANDIDATES["appearance"]]]
  said = recalibration_page.plan_cost("appearance", finished)
  assert said.startswith("What a plateau costs: the ten-seed plan's 3 arms of this task at 10 seeds (30 runs, ")
  assert f"{hours[0]:,.0f} core-hours at the previous profile's recipe, " in said
  for (name, _), h in zip(CANDIDATES["appearance"], hours[1:]):
    assert f"{h:,.0f} core-hours at {name}" in said
  assert recalibration_page.plan_cost("appearance", finished[1:]) == ""  # an arm without a timed run: nothing said


def test_the_page_command_writes_the_calibration_page_and_the_replaced_ones_beside_it(tmp_path, monkeypatch):
  from mone.publish import cli
  monkeypatch.setattr(results, "RESULTS", tmp_path)  # no run committed: every candidate listed, none drawn
  cli.main(["recalibration-page", str(tmp_path / "book" / "calibration.md")])
  current = (tmp_path / "book" / "calibration.md").read_text()
  assert current.startswith("# The next profile's calibration") and "](calibration_replaced.md)" in current
  assert (tmp_path / "book" / "calibration_replaced.md").read_text().startswith("# The replaced calibrations")
  cli.main(["recalibration-page", str(tmp_path / "book" / "calibration.md"), "--replaced", str(tmp_path / "old.md")])
  assert "](../old.md)" in (tmp_path / "book" / "calibration.md").read_text() and (tmp_path / "old.md").exists()
