"""Verdicts from synthetic seeds: a clear win, a tie within tolerance, a difference inside the
noise, too few seeds; the claims file format; the generated landing page."""
import json

import math

import numpy as np
import pytest
import scipy.stats

from mone.evidence import claims, declarations, significance, stats, verdicts
from mone.plotting import claim_plots, legibility
from mone.publish import cli, pages


def _seeds(values):
  return dict(enumerate(values))


def test_paired_ci_is_the_t_interval():
  d = [1.0, 2.0, 4.0, 3.0]
  mean, lo, hi = stats.paired_ci(d)
  half = scipy.stats.t.ppf(0.975, 3) * np.std(d, ddof=1) / 2
  assert mean == pytest.approx(2.5) and lo == pytest.approx(2.5 - half) and hi == pytest.approx(2.5 + half)
  assert np.isnan(stats.paired_ci([1.0])[1])
  with pytest.raises(ValueError, match="diffs"):
    stats.paired_ci([])


def test_a_clear_win_is_reproduced_for_beats():
  mone, base = _seeds([60.0, 61.0, 62.0]), _seeds([55.0, 55.5, 57.0])
  c = claims.trained("x.win", "MoNE beats B", "better", mone, base, relation="beats", tolerance=1.0)
  assert c["verdict"] == "reproduced" and c["n_seeds"] == 3 and c["ci95"][0] > 0
  assert c["measured"] == pytest.approx(np.mean([5.0, 5.5, 5.0]), abs=1e-3)
  # The same data read as "matches within 1 point" is ruled out.
  assert claims.trained("x.m", "c", "p", mone, base, relation="matches", tolerance=1.0)["verdict"] == "not reproduced"


def test_a_tie_within_tolerance_matches_and_does_not_beat():
  mone, base = _seeds([70.1, 69.9, 70.0, 70.05]), _seeds([70.0, 70.0, 70.1, 69.95])
  for relation, verdict in (("matches", "reproduced"), ("no_worse", "reproduced"), ("beats", "not reproduced")):
    assert claims.trained("x.t", "c", "p", mone, base, relation=relation, tolerance=1.0)["verdict"] == verdict, relation


def test_a_difference_inside_the_noise_is_inconclusive():
  # Mean gap +2 with a seed spread of 8 points: the CI is far wider than the tolerance.
  mone, base = _seeds([60.0, 52.0, 58.0]), _seeds([54.0, 56.0, 54.0])
  for relation in stats.RELATIONS:
    c = claims.trained("x.n", "c", "p", mone, base, relation=relation, tolerance=1.0)
    assert c["verdict"] == "inconclusive", relation
    assert c["ci95"][0] < -1 and c["ci95"][1] > 1


def test_too_few_seeds_is_inconclusive_whatever_the_gap():
  for n in (1, 2):
    mone, base = _seeds([90.0] * n), _seeds([10.0 + i for i in range(n)])
    c = claims.trained("x.f", "c", "p", mone, base, relation="beats", tolerance=1.0)
    assert c["verdict"] == "inconclusive" and c["n_seeds"] == n and "seed" in c["why"]
  assert claims.trained("x.f", "c", "p", {0: 5.0}, relation="beats", tolerance=0)["ci95"] is None


def test_only_paired_seeds_count():
  c = claims.trained("x.p", "c", "p", {0: 1.0, 1: 2.0, 2: 3.0, 7: 9.0}, {0: 0.0, 1: 0.0, 2: 0.0, 5: 0.0},
                     relation="beats", tolerance=0.0)
  assert c["seeds"] == [0, 1, 2] and c["per_seed"] == [1.0, 2.0, 3.0]
  with pytest.raises(ValueError, match="no seed in common"):
    claims.trained("x.p", "c", "p", {0: 1.0}, {1: 1.0}, relation="beats", tolerance=0.0)


def test_a_run_that_never_learned_makes_the_claim_inconclusive():
  c = claims.trained("x.l", "c", "p", _seeds([90.0, 91, 92]), _seeds([10.0, 11, 12]), relation="beats",
                     tolerance=1.0, learned=False)
  assert c["verdict"] == "inconclusive" and "plateau" in c["why"]


def test_no_worse_and_matches_differ_on_a_clear_gain():
  mone, base = _seeds([75.0, 76.0, 75.5]), _seeds([70.0, 70.0, 70.5])
  assert claims.trained("a", "c", "p", mone, base, relation="no_worse", tolerance=1.0)["verdict"] == "reproduced"
  assert claims.trained("a", "c", "p", mone, base, relation="matches", tolerance=1.0)["verdict"] == "not reproduced"


def test_decide_rejects_bad_input():
  with pytest.raises(ValueError, match="relation must be one of"):
    stats.decide("equals", -1, 1, 1)
  with pytest.raises(ValueError, match="tolerance must be >= 0"):
    stats.decide("beats", -1, 1, -0.5)


def test_arithmetic():
  assert claims.arithmetic("a.f", "c", 376.3, 376.29, tolerance=0.1)["verdict"] == "reproduced"
  assert claims.arithmetic("a.f", "c", 376.3, 380.0, tolerance=0.005, relative=True)["verdict"] == "not reproduced"
  assert claims.arithmetic("a.r", "c", "about 2x", 2.08, at_least=1.8)["verdict"] == "reproduced"


def test_timing_is_decided_from_the_interval_over_benchmark_processes():
  """t-interval of the mean of one value per process (3 values: t = 4.303): reproduced wholly at or
  above the threshold, not reproduced wholly below, inconclusive across it or below MIN_RUNS."""
  hi = claims.timing("t.h", "c", "-", [2.0, 2.1, 2.2], threshold=1.77)
  assert hi["verdict"] == "reproduced" and hi["kind"] == "timing" and hi["n_runs"] == 3
  assert hi["ci95"] == pytest.approx([2.1 - 4.303 * 0.1 / 3 ** 0.5, 2.1 + 4.303 * 0.1 / 3 ** 0.5], abs=1e-3)
  assert claims.timing("t.l", "c", "-", [1.5, 1.6, 1.55], threshold=1.77)["verdict"] == "not reproduced"
  across = claims.timing("t.a", "c", "-", [1.6, 2.0, 1.8], threshold=1.77)
  assert across["verdict"] == "inconclusive" and "contains the threshold 1.77" in across["why"]
  two = claims.timing("t.2", "c", "-", [2.5, 2.6], threshold=1.77)
  assert two["verdict"] == "inconclusive" and two["ci95"] is None and "at least 3 are needed" in two["why"]
  # at_most: a share of the time that must stay below the threshold
  assert claims.timing("t.s", "c", "-", [0.1, 0.12, 0.11], threshold=0.3, at_most=True)["verdict"] == "reproduced"
  assert claims.timing("t.s", "c", "-", [0.5, 0.52, 0.51], threshold=0.3, at_most=True)["verdict"] == "not reproduced"
  assert "3 benchmark processes, at least 1.77 needed" in verdicts.markdown_table([hi])
  with pytest.raises(ValueError, match="threshold must be > 0"):
    claims.timing("t.x", "c", "-", [1.0, 1.0, 1.0], threshold=0.0)
  with pytest.raises(ValueError, match="values must be finite measurements, one per benchmark process"):
    claims.timing("t.x", "c", "-", [1.0, float("nan"), 1.0], threshold=1.0)


def test_a_target_is_met_missed_or_within_noise_and_never_counted_as_a_reproduction():
  met = claims.target("s.m", "c", [1.0, 1.02, 0.98], need=0.95)
  missed = claims.target("s.x", "c", [0.7, 0.72, 0.71], need=0.85)
  noise = claims.target("s.n", "c", [0.9, 1.0, 0.95], need=0.95)
  assert [c["verdict"] for c in (met, missed, noise)] == ["met", "missed", "within noise"]
  assert met["kind"] == "target" and met["paper"] == "-"
  with pytest.raises(ValueError, match="verdict must be one of \\('met', 'missed', 'within noise'\\)"):
    claims._claim("s.y", "c", "-", 1.0, "target", None, None, None, "reproduced")
  trained = claims.arithmetic("a.f", "c", 1.0, 1.0)
  assert verdicts.counts_by_kind([met, missed, trained]) == "Arithmetic checks (1; they hold by construction: FLOPs, budgets): 1 reproduced."
  table = verdicts.markdown_table([trained, met, missed, noise])
  assert table.count("| Verdict | Family-wise |") == 1 and "This repository's own speed targets** (not the paper's; 1 met, 1 missed, 1 within noise)" in table
  assert "| **met** | c (`s.m`) | 1, [0.95, 1.05] | 1, 1.02, 0.98 |" in table


def test_claims_keep_four_significant_digits():
  c = claims.arithmetic("a.d", "c", 1.0, 1.0000000012345, tolerance=0.1)
  assert c["measured"] == 1.0
  assert claims.rounded(0.012345678) == 0.01235 and claims.rounded([123456.7]) == [123500.0]


def test_at_flops_interpolates_only_inside_the_curve():
  curve = [{"gflops": 1.0, "accuracy_pct": 50.0}, {"gflops": 3.0, "accuracy_pct": 70.0}]
  assert claims.at_flops(curve, 2.0) == pytest.approx(60.0)
  assert np.isnan(claims.at_flops(curve, 0.5)) and np.isnan(claims.at_flops(curve, 3.5))


def test_write_load_and_render(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  a = [claims.trained("fig9.a", "MoNE | wins", "yes", _seeds([3.0, 4.0, 5.0]), relation="beats", tolerance=0.0),
       claims.not_testable("fig9.b", "c", "p", "trained", "no data")]
  path = claims.write(a, "09_figure9")
  assert path == tmp_path / "09_figure9" / "claims.json"
  loaded = claims.load()
  assert list(loaded) == ["09_figure9"] and [c["id"] for c in loaded["09_figure9"]] == ["fig9.a", "fig9.b"]
  for field in claims.FIELDS:
    assert field in loaded["09_figure9"][0]
  page = pages.tables_page()
  assert "[`fig9.a`](notebooks/09_figure9.ipynb)" in page and "[`fig9.b`](notebooks/09_figure9.ipynb)" in page  # plain Markdown
  assert "MoNE \\| wins" in page  # a pipe in a claim does not break the table
  assert "1 reproduced, 1 not testable" in page


def test_caveats_print_under_their_chapter_on_the_landing_page(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  claims.write([claims.arithmetic("fig8.a", "c", 1.0, 1.0)], "08_figure8")
  claims.write([claims.arithmetic("fig9.a", "c", 1.0, 1.0)], "09_figure9")
  path = claims.write_caveats(["The task does not separate the widths (1.7 points, the bar is 5)."], "09_figure9")
  assert path == tmp_path / "09_figure9" / "caveats.json"
  assert claims.load_caveats() == {"09_figure9": ["The task does not separate the widths (1.7 points, the bar is 5)."]}
  page = pages.tables_page()
  caveat = "> **Caveat.** The task does not separate the widths (1.7 points, the bar is 5).\n"
  assert page.count("> **Caveat.**") == 1
  # Under its own chapter's heading, above that chapter's table, not under the other chapter.
  assert page.index("09_figure9.ipynb)**") < page.index(caveat) < page.index("[`fig9.a`]")
  assert page.index("[`fig8.a`]") < page.index("09_figure9.ipynb)**")
  claims.write_caveats([], "09_figure9")  # the caveat no longer holds: it leaves the page
  assert "Caveat" not in pages.tables_page()
  for bad in ("one sentence", [""], [3]):
    with pytest.raises(ValueError, match="caveats must be a list of non-empty sentences"):
      claims.write_caveats(bad, "09_figure9")
  assert claims.load_caveats() == {"09_figure9": []}  # a refused write leaves the file as it was


def test_the_chapters_glued_table_opens_with_its_caveats(tmp_path, monkeypatch):
  import IPython.display
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  glued = []
  monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: glued.append(obj))
  cs = [claims.arithmetic("fig9.a", "c", 1.0, 1.0)]
  verdicts.show(cs, "09_figure9")
  claims.write_caveats(["Barely separated."], "09_figure9")
  verdicts.show(cs, "09_figure9")
  (before,), (after,) = ([v for k, v in g.items() if k.endswith("text/markdown")] for g in glued)
  assert "Caveat" not in before and after.startswith("> **Caveat.** Barely separated.\n\n| Verdict |")


def test_check_refuses_malformed_claims():
  good = claims.arithmetic("a.b", "c", 1.0, 1.0)
  with pytest.raises(ValueError, match="unique"):
    claims.check([good, good])
  with pytest.raises(ValueError, match="lacks"):
    claims.check([{k: v for k, v in good.items() if k != "ci95"}])
  bad = {**claims.trained("a.c", "c", "p", _seeds([1.0, 2.0]), relation="beats", tolerance=0), "verdict": "reproduced"}
  with pytest.raises(ValueError, match="at least 3 are needed"):
    claims.check([bad])
  with pytest.raises(ValueError, match="kind must be one of"):
    claims.arithmetic("a.b", "c", 1.0, 1.0) | claims._claim("a", "c", "p", 1, "guess", None, None, 0, "reproduced")


def test_committed_landing_page_is_generated_from_the_committed_claims():
  from mone import results
  page = results.REPO / "book" / "verdicts.md"
  figure = "../results/landing.png" if (results.RESULTS / pages.LANDING_FIGURE).exists() else None
  assert page.read_text() == pages.landing(results.RESULTS, figure), "run `python -m mone.chapters claims book/verdicts.md`"
  # the paper's headline, in words, is the answer's first line: it is on the landing's first screen
  assert page.read_text().startswith('**The headline**, "MoNE at e_c = 0.4 matches the dense ViT')
  assert (results.REPO / "book" / "claims.md").read_text() == pages.tables_page(results.RESULTS), \
      "run `python -m mone.chapters claims book/verdicts.md --tables book/claims.md`"
  # The claims files carry the family-wise view of every chapter together (written by that command).
  assert claims.load(results.RESULTS) == significance.annotate(claims.load(results.RESULTS))
  # Every chapter of the book has its claims.
  chapters = sorted(p.stem for p in (results.REPO / "notebooks").glob("[0-9]*.ipynb"))
  assert sorted(claims.load(results.RESULTS)) == chapters
  # The book's page of verdict changes since the first small profile is generated too, and that
  # profile's claims cover the same chapters.
  first = results.RESULTS / "first_profile"
  assert sorted(claims.load(first)) == chapters
  changes = (results.REPO / "book" / "first_profile_changes.md").read_text()
  annotated = lambda root: significance.annotate(claims.load(root))  # as the page's command reads them
  assert changes == pages.changes(annotated(first), annotated(results.RESULTS)), \
      "run `python -m mone.chapters claims book/first_profile_changes.md --compare results/first_profile`"
  # So is the page of verdicts at three seeds beside five, over the trained claims, from the claims
  # kept in results/three_seeds/ and results/five_seeds/. Until a seed plan's runs are read, the
  # chapters decide from the seeds before it and the kept claims are theirs: a claim's test or wording
  # changed before then is changed there too.
  three = claims.of_kind(annotated(results.RESULTS / "three_seeds"), "trained")
  five = claims.of_kind(annotated(results.RESULTS / "five_seeds"), "trained")
  assert (results.REPO / "book" / "seed_plan_changes.md").read_text() == pages.changes(three, five), \
      "run `python -m mone.chapters claims book/seed_plan_changes.md --results results/five_seeds --compare results/three_seeds --kind trained`"
  from mone.runs import plan
  if not plan.single_device():
    assert claims.load(results.RESULTS / "three_seeds") == claims.load(results.RESULTS), "the chapters still read seeds 0-2: copy results/<chapter>/claims.json into results/three_seeds/"
  if not plan.ten_seeds_landed():
    kept = claims.load(results.RESULTS / "five_seeds")
    assert kept == {k: v for k, v in claims.load(results.RESULTS).items() if k in kept}, "the chapters still read seeds 0-4: copy results/<chapter>/claims.json into results/five_seeds/"
  for chapter, cs in claims.load(results.RESULTS).items():
    assert cs and all(c["id"].split(".")[0] for c in cs), chapter
    json.dumps(cs)


def test_downloads_link_every_file_of_the_chapter_from_the_book_pages(tmp_path, monkeypatch):
  from mone import results
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path / "elsewhere"))
  assert verdicts.downloads("03_fig") == ""  # smoke runs and tests: no links, no private paths
  monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
  monkeypatch.delenv("MONE_RESULTS_DIR")
  (tmp_path / "results" / "03_fig").mkdir(parents=True)
  for name in ("points.csv", "claims.json", ".claims.json.tmp"):
    (tmp_path / "results" / "03_fig" / name).write_text("x")
  line = verdicts.downloads("03_fig", book_dir=tmp_path / "book" / "notebooks")
  assert line == ("Files of this chapter (`results/03_fig/`): {download}`claims.json <../../results/03_fig/claims.json>`"
                  " · {download}`points.csv <../../results/03_fig/points.csv>`\n")
  assert verdicts.downloads("nothing_here") == ""


def test_changes_lists_every_claim_before_and_after_and_flags_changed_verdicts(tmp_path):
  old = {"03_figure3": [claims.trained("fig3.a", "c", "p", _seeds([1.0]), relation="beats", tolerance=0.0),
                        claims.arithmetic("fig3.b", "c", "p", 2.0, at_least=1.8)],
         "06_figure6": [claims.trained("fig6.gone", "c", "p", _seeds([1.0]), relation="beats", tolerance=0.0)]}
  new = {"03_figure3": [claims.trained("fig3.a", "c", "p", _seeds([3.0, 4.0, 5.0]), relation="beats", tolerance=0.0),
                        claims.arithmetic("fig3.b", "c", "p", 2.1, at_least=1.8),
                        claims.trained("fig3.new", "c", "p", _seeds([-3.0, -4.0, -5.0]), relation="beats", tolerance=0.0)]}
  table = pages.changes(old, new)
  assert table.startswith("4 claims, 3 with a different verdict.")
  rows = {line.split(" | ")[0][3:-1]: line for line in table.splitlines() if line.startswith("| `")}
  assert list(rows) == ["fig3.a", "fig3.b", "fig3.new", "fig6.gone"]
  assert "inconclusive: +1.00 points, 1 seed (a verdict needs at least 3 seeds) | **reproduced**: +4.00 points, 95% CI" in rows["fig3.a"]
  assert rows["fig3.a"].endswith("| **changed** |") and rows["fig3.b"].endswith("| same |")
  assert "| (no such claim) | **not reproduced**" in rows["fig3.new"] and "| (no such claim) | **changed** |" in rows["fig6.gone"]
  with pytest.raises(ValueError, match="more than one chapter"):
    pages.changes({**old, "07_figure7": old["03_figure3"]}, {})
  # A verdict that changed because the claim's test changed (here a timing's threshold) says so; a reworded claim too.
  retest = pages.changes({"08": [claims.timing("s.t", "c", "p", [0.94] * 3, threshold=0.95)]},
                          {"08": [claims.timing("s.t", "c", "p", [0.94] * 3, threshold=0.9)]})
  assert retest.startswith("1 claims, 1 with a different verdict, 1 of them because the claim's test changed.")
  assert retest.splitlines()[-1].endswith("| **changed** (the test changed) |")
  reword = pages.changes({"08": [claims.timing("s.t", "c", "p", [1.0] * 3, threshold=0.95)]},
                          {"08": [claims.timing("s.t", "c2", "p", [1.0] * 3, threshold=0.95)]})
  assert reword.startswith("1 claims, 0 with a different verdict.") and reword.splitlines()[-1].endswith("| same (reworded) |")
  # the command line, between two results folders
  for root, chapters in (("old", old), ("new", new)):
    for chapter, cs in chapters.items():
      (tmp_path / root / chapter).mkdir(parents=True)
      (tmp_path / root / chapter / "claims.json").write_text(json.dumps(cs))
  cli.main(["claims", str(tmp_path / "changes.md"), "--results", str(tmp_path / "new"), "--compare", str(tmp_path / "old")])
  assert (tmp_path / "changes.md").read_text() == pages.changes(significance.annotate(old), significance.annotate(new))
  with pytest.raises(SystemExit, match="no \\*/claims.json"):
    cli.main(["claims", str(tmp_path / "x.md"), "--compare", str(tmp_path / "nowhere")])


def test_the_comparison_figure_draws_the_claims_with_an_interval_in_both_sets(tmp_path, monkeypatch):
  three = {"03": [claims.trained("fig3.a", "c", "p", _seeds([1.0, 3.0, -0.5]), relation="beats", tolerance=0.0),
                  claims.trained("fig3.one", "c", "p", _seeds([1.0]), relation="beats", tolerance=0.0)]}
  five = {"03": [claims.trained("fig3.a", "c", "p", _seeds([1.0, 3.0, -0.5, 2.0, 1.5]), relation="beats", tolerance=0.0),
                 claims.trained("fig3.one", "c", "p", _seeds([1.2]), relation="beats", tolerance=0.0)]}
  for root, chapters in (("old", three), ("new", five)):
    (tmp_path / root / "03").mkdir(parents=True)
    (tmp_path / root / "03" / "claims.json").write_text(json.dumps(chapters["03"]))
  png = tmp_path / "changes.png"
  argv = [str(tmp_path / "changes.md"), "--results", str(tmp_path / "new"), "--compare", str(tmp_path / "old"),
          "--compare-figure", str(png), "--labels", "3 seeds", "5 seeds"]
  cli.main(["claims", *argv])
  first = png.read_bytes()
  assert first.startswith(b"\x89PNG") and (tmp_path / "changes.md").read_text() == pages.changes(
      significance.annotate(three), significance.annotate(five))
  cli.main(["claims", *argv])
  assert png.read_bytes() == first  # the same claims draw the same bytes
  # The two sets tell apart in the legend by marker and line, not by width alone (which the audit,
  # like a reader of a small figure, does not see), and the legend, below the panels, covers no interval.
  audit = legibility.read(first)
  assert audit["alike"] == [] and audit["covers_data"] == [] and audit["min_text_px"] >= 12
  drawn = []
  monkeypatch.setattr(claim_plots.plots, "save_png", lambda fig, path, dpi: drawn.append(fig))
  claim_plots.compare_figure(three, five, png, "3 seeds", "5 seeds")
  (legend,) = drawn[0].legends
  handles = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles))
  before, after = handles["3 seeds (thin line, open circle, above)"], handles["5 seeds (thick line, filled diamond, below)"]
  assert (before.get_marker(), after.get_marker()) == ("o", "D") and before.get_linewidth() < after.get_linewidth()
  top = drawn[0].axes[0]  # the intervals and means drawn as the legend says
  means = [l for l in top.get_lines() if l.get_linestyle() == "None" and len(l.get_xdata())]
  assert [l.get_marker() for l in means] == ["o", "D"]  # fig3.a: before, then after
  assert means[0].get_markerfacecolor() == "white" and means[1].get_markerfacecolor() == means[1].get_color()
  with pytest.raises(ValueError, match="no trained claim has an interval in both"):  # one seed: no interval
    claim_plots.compare_figure({"03": three["03"][1:]}, {"03": five["03"][1:]}, png, "a", "b")
  with pytest.raises(SystemExit):
    cli.main(["claims", str(tmp_path / "x.md"), "--compare-figure", str(png)])


def test_the_landing_answer_counts_kinds_apart_and_leads_with_the_headline():
  trained = [claims.trained("fig3.mone_matches_vit", "MoNE matches ViT", "p", {0: 80.0, 1: 81.0, 2: 79.0}, {0: 80.5, 1: 80.0, 2: 80.2},
                            relation="matches", tolerance=1.0),
             claims.trained("b", "beats", "p", {0: 5.0, 1: 5.2, 2: 4.9}, relation="beats", tolerance=0.0)]
  other = [claims.arithmetic("c", "flops", 2.0, 2.2, at_least=1.8),
           claims.timing("d", "fast", 2.0, [1.0] * 3, threshold=2.0)]
  everything = [c for cs in significance.annotate({"ch": trained + other}).values() for c in cs]
  tally = verdicts.counts_by_kind(everything)
  assert tally.startswith("Trained comparisons (2): 1 reproduced, 1 inconclusive; family-wise over the 2")
  assert "Arithmetic checks" in tally and tally.index("Trained") < tally.index("Arithmetic")
  text = pages.answer(everything)
  assert text.startswith("Of the paper's 2 claims that need trained models, this profile reproduces 1, rules out 0 and leaves 1 open")
  assert '"MoNE matches ViT"' in text and "95% CI" in text


def test_replace_block_rewrites_only_between_the_markers(tmp_path):
  text = "# T\n<!-- answer:start -->\nold\n<!-- answer:end -->\nrest\n"
  assert pages.replace_block(text, "new\n") == "# T\n<!-- answer:start -->\nnew\n<!-- answer:end -->\nrest\n"
  assert pages.replace_block("no markers\n", "new") == "no markers\n"
  readme = tmp_path / "README.md"
  readme.write_text(text)
  from mone import results
  import shutil
  shutil.copytree(results.RESULTS, tmp_path / "results", ignore=shutil.ignore_patterns("runs", "weights", "*.png", "*.svg", "bench", "device_twins"))
  cli.main(["claims", str(tmp_path / "v.md"), "--results", str(tmp_path / "results"), "--readme", str(readme)])
  got = readme.read_text()
  assert got.startswith("# T\n<!-- answer:start -->\n**The headline.** The paper: \"") and got.endswith("<!-- answer:end -->\nrest\n")
  # the headline in words comes before the figure, and the families' lines after it
  assert got.index("**The headline.**") < got.index("![The trained claims") < got.index("**Accuracy per FLOP**")
  assert "[book/claims.md](book/claims.md)" in got and "{doc}" not in got
  page = (tmp_path / "v.md").read_text()
  before = page
  cli.main(["claims", str(tmp_path / "v.md"), "--results", str(tmp_path / "results"), "--readme", str(readme)])
  assert (tmp_path / "v.md").read_text() == before  # a rerun changes nothing


def test_the_landing_answers_by_family_and_says_which_way_the_open_claims_point(tmp_path):
  cs = [claims.trained("fig3.mone_beats_matvit", "c", "p", _seeds([-1.0, -2.5, 0.4, -1.5, -2.0]), relation="beats", tolerance=0.0),
        claims.trained("table1.mone04_vs_greedy", "c", "p", _seeds([2.0, 3.0, 1.0, 2.5, 1.5]), relation="beats", tolerance=0.0),
        claims.trained("fig5.images.x", "c", "p", _seeds([40.0, 44.0, 48.0]), relation="beats", tolerance=0.0)]
  lines = pages.family_lines(significance.annotate({"ch": cs})["ch"])
  assert lines[0].startswith("**Accuracy per FLOP** (Figures 3, 4 and Table 1; 2 trained claims): 1 reproduced "
                             "(`table1.mone04_vs_greedy`), none ruled out, 1 open.")
  assert "the mean lies on the paper's side for 0 and against it for 1 (`fig3.mone_beats_matvit`)" in lines[0]
  assert lines[1].startswith("**Adaptation** (Figure 5; 1 trained claims): 1 reproduced") and len(lines) == 2
  assert pages.family("fig7.video.x") == "Routing" and pages.family("speed.x") is None


def test_the_tallies_count_each_kind_of_claim_apart_on_the_landing_page_and_in_each_chapter(tmp_path, monkeypatch):
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  cs = [claims.trained("fig9.a", "c", "p", _seeds([3.0, 4.0, 5.0]), relation="beats", tolerance=0.0),
        claims.trained("fig9.b", "c", "p", _seeds([3.0, -4.0, 5.0]), relation="beats", tolerance=0.0),
        claims.arithmetic("fig9.c", "c", 1.0, 1.0), claims.timing("fig9.d", "c", "-", [0.5] * 3, threshold=0.9),
        claims.target("fig9.e", "c", [0.5] * 3, need=0.9)]  # this repository's own target: no tally counts it
  assert verdicts.chapter_counts(cs) == "trained: 1 reproduced, 1 inconclusive; arithmetic: 1 reproduced; wall-clock: 1 not reproduced"
  assert verdicts.chapter_counts(cs[2:]) == "arithmetic: 1 reproduced; wall-clock: 1 not reproduced"  # kinds it lacks: left out
  tally = verdicts.counts_by_kind(cs)
  assert tally == ("Trained comparisons (2): 1 reproduced, 1 inconclusive. "
                   "Arithmetic checks (1; they hold by construction: FLOPs, budgets): 1 reproduced. "
                   "Wall-clock claims (1; the paper's timings, measured on this repository's machine): 1 not reproduced.")
  claims.write(cs, "09_figure9")
  page = pages.tables_page()
  assert "09_figure9.ipynb)**: trained: 1 reproduced, 1 inconclusive; arithmetic: 1 reproduced; wall-clock: 1 not reproduced\n" in page
  assert "speed targets** (not the paper's; 1 missed)" in page
  assert "Trained comparisons (2): 1 reproduced, 1 inconclusive; family-wise over the 2 with 3 or more seeds" in page


def test_the_wall_clock_line_names_each_timing_claim_with_its_interval():
  fast = {**claims.timing("speed.paper.gain", "c", "p", [2.0, 2.1, 2.2], threshold=1.77, unit="x"), "chapter": "08_speed"}
  line = pages.wall_clock_line([fast, claims.arithmetic("a", "c", 1.0, 1.0)])
  assert line.startswith("**Wall-clock** (the paper's V100 timings, tested on a 2-core CPU over three benchmark processes): "
                         "1 reproduced. `speed.paper.gain` 2.1x [1.85, 2.35]: reproduced.")
  assert line.endswith("[Chapter 08](notebooks/08_speed.ipynb) reads both.")
  gpu = {"devices": ["1 x NVIDIA H100 80GB HBM3", "1 x NVIDIA H200"], "forward": {"speedup": [1.01, 1.43], "flop_ratio": [1.9, 4.2]},
         "train": {"speedup": [0.78, 0.9], "flop_ratio": [1.9, 3.0]}}
  assert (" On H100 and H200 GPUs (one process each): MoNE's forward at 1.01-1.43x the dense speed with "
          "1.90-4.20x fewer FLOPs, its training step at 0.78-0.90x. [Chapter 08]") in pages.wall_clock_line([fast], gpu=gpu)
  assert pages.wall_clock_line([claims.arithmetic("a", "c", 1.0, 1.0)]) == ""


def test_welch_ci_is_scipys_unpaired_interval():
  rng = np.random.default_rng(1)
  for na, nb in ((3, 3), (4, 7), (2, 5)):
    a, b = rng.normal(70, 2, na), rng.normal(68, 5, nb)
    mean, low, high = stats.welch_ci(a, b)
    ref = scipy.stats.ttest_ind(a, b, equal_var=False)
    assert mean == pytest.approx(a.mean() - b.mean())
    assert (low, high) == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert stats.welch(a, b)[2] == pytest.approx(ref.df)
    assert stats.welch_ci(a, b, level=0.9)[1:] == pytest.approx(tuple(ref.confidence_interval(0.9)))
  assert stats.welch_ci([1.0, 1.0], [0.0, 0.0]) == (1.0, 1.0, 1.0)  # no spread: a point
  assert np.isnan(stats.welch_ci([1.0], [0.0, 2.0])[1])
  with pytest.raises(ValueError, match="a and b must be non-empty"):
    stats.welch_ci([], [1.0])
  with pytest.raises(ValueError, match="at least 2 numbers"):
    stats.welch([1.0], [1.0, 2.0])


def test_welch_se_df_from_variances_and_counts():
  # With n values per arm the Welch-Satterthwaite df is (n - 1)(va + vb)^2 / (va^2 + vb^2): between
  # n - 1 (one arm holds all the spread) and 2n - 2 (equal spreads).
  se, df = stats.welch_se_df(4.0, 5, 1.0, 5)
  assert se == pytest.approx(math.sqrt(5 / 5))
  assert df == pytest.approx(4 * 25 / 17)
  assert stats.welch_se_df(2.0, 6, 2.0, 6)[1] == pytest.approx(10.0)
  assert stats.welch_se_df(3.0, 6, 0.0, 6)[1] == pytest.approx(5.0)
  assert stats.welch_se_df(0.0, 3, 0.0, 4) == (0.0, 5.0)
  with pytest.raises(ValueError, match="n_a and n_b must be at least 2, got 1 and 3"):
    stats.welch_se_df(1.0, 1, 1.0, 3)


def test_each_family_of_claims_is_paired_or_not_by_its_design():
  assert claims.pairing("fig5.video_gentler_than_images")[0] == "welch"
  assert claims.pairing("fig5.video.steeper_high_to_low")[0] == "paired"  # the longest prefix wins
  assert claims.pairing("fig4.temporal.mone_no_drop")[1].startswith("video models")
  assert claims.pairing("nofamily.x") == claims.PAIRING_DEFAULT
  # Every trained claim of every chapter belongs to a family that states its design.
  from mone import results
  ids = [c["id"] for cs in claims.load(results.RESULTS).values() for c in cs if c["kind"] == "trained"]
  assert ids and [i for i in ids if not any(i.startswith(p) for p in claims.PAIRING)] == []


def test_a_claim_records_its_interval_its_arms_and_their_correlation():
  mone, base = _seeds([71.0, 69.0, 72.5, 70.0]), _seeds([70.2, 68.5, 71.0, 69.9])
  c = claims.trained("fig3.x", "c", "p", mone, base, relation="matches", tolerance=1.0)
  assert c["test"] == "paired" and c["test_why"] == claims.pairing("fig3.x")[1]
  assert c["per_seed_mone"] == list(mone.values()) and c["per_seed_baseline"] == list(base.values())
  assert c["arm_correlation"] == pytest.approx(np.corrcoef(list(mone.values()), list(base.values()))[0, 1], abs=1e-4)
  assert c["ci95"] == pytest.approx(list(stats.paired_ci(np.subtract(list(mone.values()), list(base.values())))[1:]), abs=1e-3)
  # The unpaired family: Welch's interval over the same seeds, and the verdict it gives.
  w = claims.trained("fig5.video_gentler_than_images", "c", "p", mone, base)  # its declared rule: beats
  _, low, high = stats.welch_ci(list(mone.values()), list(base.values()))
  assert w["test"] == "welch" and w["ci95"] == pytest.approx([low, high], abs=1e-3)
  assert w["verdict"] == stats.decide("beats", low, high, 0.0) and w["measured"] == pytest.approx(c["measured"])
  assert "(Welch, unpaired)" in verdicts.markdown_table([w]) and "(Welch" not in verdicts.markdown_table([c])
  # Given only its differences, the unpaired family is decided paired, and says so.
  d = claims.trained("fig5.video_gentler_than_images", "c", "p", _seeds([1.0, 2.0, 3.0]))
  assert d["test"] == "paired" and "still decided paired" in d["test_why"] and d["ci95"] == pytest.approx(
      list(stats.paired_ci([1.0, 2.0, 3.0])[1:]), abs=1e-3)
  # Differences alone carry no arms; fewer than 3 seeds or an arm that does not vary: no correlation.
  assert "arm_correlation" not in claims.trained("fig3.y", "c", "p", _seeds([1.0, 2.0, 3.0]), relation="beats", tolerance=0.0)
  assert stats.arm_correlation([1.0, 2.0], [2.0, 1.0]) is None and stats.arm_correlation([1.0, 2.0, 3.0], [5.0] * 3) is None
  assert stats.arm_correlation([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
  # The landing page says which claims are unpaired, and why, and the arms' median correlation.
  text = pages.pairing_sentence([c, w])
  assert "Welch's unpaired interval for `fig5.video_gentler_than_images`, since image and video models" in text
  assert f"median r of {np.median([c['arm_correlation'], w['arm_correlation']]):+.2f} over the 2 claims" in text
  assert "still decided paired" not in text and "still decided paired" in pages.pairing_sentence([c, d])


def test_a_seed_pairs_the_video_arms_and_the_router_variants_too():
  # The premise of `claims.PAIRING` for the video families (Figure 4, Table 1) and Figure 6's router
  # variants: for one seed, the arms start from the same weights wherever they share a parameter,
  # with one exception that the fig4 family's reason names (MoNE-ViViT's alpha takes the draw
  # before the temporal position embedding). Small models: what is compared is how keys are drawn.
  import jax.numpy as jnp
  from flax import traverse_util

  from mone.configs import recipes, schema
  from mone.train import steps

  def init(base, **overrides):
    cfg = schema.apply_overrides(base, overrides)
    params = steps.init_params(cfg, steps.build_model(cfg), jnp.zeros(steps.input_shape(cfg)))
    return traverse_util.flatten_dict(params, sep="/")

  def differ(a, b):
    assert set(a) <= set(b) or set(b) <= set(a)
    return sorted(k for k in set(a) & set(b) if not np.array_equal(a[k], b[k]))

  small = {"model.depth": 2, "model.temporal_depth": 1}
  video = recipes.moving_temporal()
  vivit = init(video, kind="vit", **small)
  mone = init(video, kind="mone", e_c=0.4, **small)
  assert differ(vivit, init(video, kind="matvit", **small)) == []
  assert differ(vivit, mone) == ["temporal_pos_embedding"]
  for overrides in ({"model.router": "random"}, {"allocation": "greedy"}, {"allocation": "proportionate"}):
    assert differ(mone, init(video, kind="mone", e_c=0.4, **small, **overrides)) == [], overrides
  assert differ(vivit, init(video, kind="vit", seed=1, **small)) != []  # another seed: other weights
  image = recipes.smoke()
  first = init(image, kind="mone", e_c=0.3)
  for overrides in ({"model.router_layer": 1}, {"model.num_routers": 2}):
    assert differ(first, init(image, kind="mone", e_c=0.3, **overrides)) == [], overrides


def test_the_readme_is_left_alone_without_its_markers(tmp_path, capsys):
  from mone import results
  for path in results.RESULTS.glob("*/claims.json"):  # the committed claims, all the landing step reads
    (tmp_path / "results" / path.parent.name).mkdir(parents=True)
    (tmp_path / "results" / path.parent.name / "claims.json").write_text(path.read_text())
  readme = tmp_path / "README.md"
  readme.write_text("# MoNE\n\nNo answer block here.\n")
  stamp = readme.stat().st_mtime_ns
  cli.main(["claims", str(tmp_path / "v.md"), "--results", str(tmp_path / "results"), "--readme", str(readme)])
  assert readme.read_text() == "# MoNE\n\nNo answer block here.\n" and readme.stat().st_mtime_ns == stamp
  assert capsys.readouterr() == ("", "")
  cli.main(["claims", str(tmp_path / "v.md"), "--results", str(tmp_path / "results"), "--readme", str(tmp_path / "missing.md")])
  assert not (tmp_path / "missing.md").exists()


def test_the_landing_figure_marks_the_unpaired_claim_apart(tmp_path, monkeypatch):
  # The unpaired (Welch) interval shares the axis with paired ones: it must be told apart, dashed
  # and named, and only it.
  import matplotlib
  matplotlib.use("Agg")
  from mone.plotting import plots
  rng = np.random.default_rng(3)
  arm = lambda mu: {s: float(v) for s, v in enumerate(rng.normal(mu, 2, 3))}
  cs = [claims.trained("fig5.video_gentler_than_images", "gentler", "p", arm(80), arm(70), relation="beats", tolerance=0),
        claims.trained("fig3.mone_beats_mod", "beats MoD", "p", arm(80), arm(79), relation="beats", tolerance=0)]
  drawn = {}
  monkeypatch.setattr(plots, "save_png", lambda fig, path, dpi: drawn.update(fig=fig))
  claim_plots.landing_figure(cs, tmp_path / "landing.png")
  accuracy, trends = drawn["fig"].axes  # the accuracy claims, then the trends on an axis of their own
  # rows are labelled in words (`claim_plots.row_label`), the unpaired one named so
  assert [t.get_text() for t in accuracy.get_yticklabels()] == ["Fig. 3: MoNE beats MoD"]
  assert [t.get_text() for t in trends.get_yticklabels()] == [claim_plots.row_label("fig5.video_gentler_than_images") + " (unpaired)"]
  style = lambda ax: [l.get_linestyle() for l in ax.lines if len(l.get_xdata()) == 2 and l.get_ydata()[0] == l.get_ydata()[1]
                      and l.get_label()[0] == "_"][0]
  assert style(accuracy) == "-" and style(trends) != "-"
  assert "unpaired: Welch's CI" in [t.get_text() for t in drawn["fig"].legends[0].get_texts()]


def test_of_kind_keeps_one_kind_of_claim_and_the_chapters_that_have_it():
  t = claims.trained("fig3.x", "c", "p", {0: 1.0, 1: 2.0, 2: 3.0}, {0: 0.0, 1: 0.0, 2: 0.0}, relation="beats", tolerance=0)
  a = claims.arithmetic("fig3.flops", "c", 2.0, 2.0, tolerance=0.1)
  chapters = {"03": [t, a], "08": [a]}
  assert claims.of_kind(chapters, "trained") == {"03": [t]}
  assert claims.of_kind(chapters, "arithmetic") == {"03": [a], "08": [a]}
  assert claims.of_kind(chapters, "timing") == {}
  with pytest.raises(ValueError, match="kind must be one of"):
    claims.of_kind(chapters, "trainer")


def test_a_declared_claim_is_decided_by_its_declared_rule_and_no_call_can_change_it():
  mone, base = _seeds([71.0, 69.0, 72.5, 70.0]), _seeds([70.2, 68.5, 71.0, 69.9])
  c = claims.trained("fig3.mone_matches_vit", "c", "p", mone, base)
  assert (c["relation"], c["tolerance"]) == declarations.rule("fig3.mone_matches_vit") == ("matches", 1.0)
  # an id continuing a declared one after a "." (one claim per e_c) has its rule; a longer word does not
  assert declarations.rule("fig6.learned_beats_random.e_c03") == ("beats", 0.0)
  assert declarations.rule("fig6.learned_beats_randomly") is None
  assert claims.trained("fig3.mone_matches_vit", "c", "p", mone, base, relation="matches", tolerance=1.0) == c
  with pytest.raises(ValueError, match=r"claim 'fig3.mone_matches_vit': relation='beats', tolerance=None differ from its declared rule"):
    claims.trained("fig3.mone_matches_vit", "c", "p", mone, base, relation="beats")
  with pytest.raises(ValueError, match="claim 'x.undeclared': no chapter declares its rule"):
    claims.trained("x.undeclared", "c", "p", mone, base, relation="beats")
  with pytest.raises(ValueError, match=r"Claim.rule must be \(relation, tolerance\) with relation one of"):
    declarations.Claim("x.y", rule=("better", 0.0))
  with pytest.raises(ValueError, match="tolerance >= 0"):
    declarations.Claim("x.y", rule=("matches", -1.0))


def test_every_committed_trained_claim_was_decided_by_its_declared_rule():
  from mone import results
  trained = [c for cs in claims.load(results.RESULTS).values() for c in cs if c["kind"] == "trained"]
  assert len(trained) > 20
  assert [c["id"] for c in trained if (c["relation"], c["tolerance"]) != declarations.rule(c["id"])] == []
