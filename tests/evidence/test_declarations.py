"""Chapter declarations: a claim declared once in its chapter's module reaches every registry keyed by
claim id (pairing, frozen definitions, the landing page's families); bad declarations stop in one line."""
import sys
import types

import pytest

from mone.evidence import claims, declarations, preregistration
from mone.publish import pages
from mone.configs import figures, reads
from mone.configs.arms import Arm
from mone.configs.figures import EXTRA_SEEDS, SEEDS, SEEDS_TO_TEN
from mone.runs import plan


def _toy_chapter(monkeypatch, chapter: declarations.Chapter, name: str = "toy_chapter_for_tests", arms=()):
  """Adds a chapter module holding `chapter` after the book's chapters, reading `arms` at every seed, as
  a new chapter would be added: its claims in its module, what it reads in `mone.configs.reads`."""
  module = types.ModuleType(name)
  module.CHAPTER = chapter
  monkeypatch.setitem(sys.modules, name, module)
  monkeypatch.setattr(declarations, "MODULES", [*declarations.MODULES, name])
  monkeypatch.setitem(reads.CHAPTERS, name, lambda profile: reads.Reads(tuple(arms)))


def test_the_books_chapters_declare_every_registry_entry():
  chapters = declarations.declared()
  assert [ch.prefix for ch in chapters] == ["fig1.", "table1.", "fig3.", "fig4.", "fig5.", "fig6.", "fig7.", "speed."]
  # Every frozen definition is a claim of its chapter, and every chapter of trained claims (a family of
  # the paper's questions; not the timings) has its pairing.
  for ch in (ch for ch in chapters if ch.family):
    assert ch.prefix in claims.PAIRING or any(p.startswith(ch.prefix) for p in claims.PAIRING), ch.title
  assert set(preregistration.DEFINITIONS) == {c.id for ch in chapters for c in ch.claims if c.metric}
  assert list(pages.FAMILIES) == ["Accuracy per FLOP", "Adaptation", "Routing"]
  assert pages.FAMILIES["Accuracy per FLOP"] == (("table1.", "fig3.", "fig4."), "Figures 3, 4 and Table 1")
  assert pages.FAMILIES["Routing"] == (("fig1.", "fig6.", "fig7."), "Figures 1, 6 and 7")


def test_every_arm_a_claim_declares_is_planned_at_every_seed_it_is_decided_at():
  # A declared arm the plan does not train would leave its claim "not testable" without a word: the
  # declarations and the plan (below the chapters, `mone.configs.figures`) must name the same arms.
  seeds = {}
  for run in plan.runs():
    seeds.setdefault(run.arm, set()).add(run[1].seed)
  declared = [(c.id, a) for ch in declarations.declared() for c in ch.claims for a in c.arms if isinstance(a, Arm)]
  assert len(declared) >= 20
  ten = set(SEEDS + EXTRA_SEEDS + SEEDS_TO_TEN)
  assert [(cid, a.label) for cid, a in declared if not ten <= seeds.get(a, set())] == []


def test_a_definitions_arms_are_the_book_labels_of_its_arms():
  d = preregistration.DEFINITIONS["fig6.learned_beats_random"]
  assert d == {"metric": declarations.ACCURACY, "arms": ["MoNE e_c=0.2", "MoNE e_c=0.2, random router"]}
  assert preregistration.DEFINITIONS is preregistration.DEFINITIONS  # one dict: a patch holds


def test_a_new_chapter_reaches_every_registry(monkeypatch):
  arms = (Arm("image", "mone", 0.4), Arm("image", "vit"))
  _toy_chapter(monkeypatch, declarations.Chapter("Figure 9", "fig9.", "Speed", (
      declarations.Claim("fig9.", ("welch", "two devices share nothing")),
      declarations.Claim("fig9.fast.within", declarations.WITHIN, metric="steps per second", arms=arms),
      declarations.Claim("fig9.fast.other", metric="images per second", arms=(arms[0], "a dense model (words)")),
  )), arms=arms)
  assert claims.pairing("fig9.anything") == ("welch", "two devices share nothing")
  assert claims.pairing("fig9.fast.within") == declarations.WITHIN  # the longest declared prefix wins
  assert claims.pairing("fig9.fast.other") == ("welch", "two devices share nothing")  # inherited
  c = {"id": "fig9.fast.other", "relation": "beats", "tolerance": 0, "test": "welch"}
  assert preregistration.definition(c) == {"metric": "images per second", "arms": ["MoNE e_c=0.4", "a dense model (words)"],
                                           "relation": "beats", "tolerance": 0.0, "test": "welch"}
  # A family the paper's three questions do not name comes after them; a claim of it finds it.
  assert list(pages.FAMILIES) == ["Accuracy per FLOP", "Adaptation", "Routing", "Speed"]
  assert pages.FAMILIES["Speed"] == (("fig9.",), "Figure 9")
  assert pages.family("fig9.fast.within") == "Speed"
  # The book's own chapters are untouched by the addition.
  assert claims.pairing("fig6.learned_beats_random")[0] == "paired"


def test_a_new_chapters_arms_reach_the_plan_and_its_claims_must_compare_them(monkeypatch):
  new = Arm("image", "mone", 0.5)
  before = [label for label, _ in figures.image_runs()]
  _toy_chapter(monkeypatch, declarations.Chapter("Figure 9", "fig9.", None, (
      declarations.Claim("fig9.beats", ("paired", "same seed"), metric="accuracy", arms=(new, Arm("image", "vit"))),)),
      arms=(new, Arm("image", "vit")))
  after = [label for label, _ in figures.image_runs()]
  # The plan trains the new arm at every seed, after the arms it had, and nothing else changes.
  assert [l for l in after if l not in before] == [f"MoNE e_c=0.5, seed {s}" for s in SEEDS]
  assert [l for l in after if l in before] == before
  assert declarations.definitions()["fig9.beats"]["arms"] == ["MoNE e_c=0.5", "ViT"]
  # A claim comparing an arm its chapter does not read is refused, naming the arm and where to declare it.
  _toy_chapter(monkeypatch, declarations.Chapter("Figure 9", "fig9.", None, (
      declarations.Claim("fig9.unread", ("paired", "same seed"), metric="accuracy", arms=(new, Arm("image", "vit"))),)),
      name="toy_chapter_reading_less", arms=(Arm("image", "vit"),))
  with pytest.raises(ValueError, match=r"claim 'fig9.unread' compares \['MoNE e_c=0.5'\], which Figure 9 does not read at "
                                       r"every seed: declare them in mone.configs.reads.toy_chapter_reading_less"):
    declarations.declared()


def test_removing_the_new_chapter_removes_its_claims(monkeypatch):
  with monkeypatch.context() as m:
    _toy_chapter(m, declarations.Chapter("Figure 9", "fig9.", None, (declarations.Claim("fig9.", ("welch", "w")),)))
    assert claims.pairing("fig9.x")[0] == "welch"
    assert pages.family("fig9.x") is None  # no family: arithmetic or timing
  assert claims.pairing("fig9.x") == claims.PAIRING_DEFAULT


def test_a_claim_id_declared_twice_is_refused(monkeypatch):
  _toy_chapter(monkeypatch, declarations.Chapter("Figure 6 again", "fig6.", None, (
      declarations.Claim("fig6.learned_beats_random", metric="m", arms=("a",)),)))
  with pytest.raises(ValueError, match=r"declared more than once: \['fig6.learned_beats_random'\]"):
    declarations.declared()


def test_a_claim_without_its_definition_raises_a_named_error():
  with pytest.raises(KeyError, match="'fig9.none' declares no frozen definition"):
    preregistration.definition({"id": "fig9.none", "relation": "beats", "tolerance": 0, "test": "paired"})


@pytest.mark.parametrize("kwargs, match", [
    ({"id": ""}, "Claim.id must be a non-empty claim id"),
    ({"id": "fig9 x"}, "without spaces"),
    ({"id": "fig9.x", "pairing": ("bootstrap", "why")}, r"test one of \('paired', 'welch'\)"),
    ({"id": "fig9.x", "pairing": ("paired",)}, "must be \\(test, why\\)"),
    ({"id": "fig9.x", "metric": "accuracy"}, "needs both metric and arms"),
    ({"id": "fig9.x", "arms": ("a",)}, "needs both metric and arms"),
])
def test_a_bad_claim_stops_in_one_line(kwargs, match):
  with pytest.raises(ValueError, match=match) as e:
    declarations.Claim(**kwargs)
  assert "\n" not in str(e.value)


def test_a_bad_chapter_stops_in_one_line():
  with pytest.raises(ValueError, match="Chapter.prefix must end with '.', got 'fig9'"):
    declarations.Chapter("Figure 9", "fig9", None, ())
  with pytest.raises(ValueError, match=r"Figure 9: claim ids \['fig3.x'\] do not start with its prefix 'fig9.'"):
    declarations.Chapter("Figure 9", "fig9.", None, (declarations.Claim("fig3.x", ("paired", "w")),))


@pytest.mark.parametrize("titles, phrase", [
    (["Figure 5"], "Figure 5"),
    (["Table 1"], "Table 1"),
    (["Table 1", "Figure 4", "Figure 3"], "Figures 3, 4 and Table 1"),
    (["Figure 7", "Figure 1", "Figure 6"], "Figures 1, 6 and 7"),
    (["Figure 10", "Figure 9"], "Figures 9 and 10"),
    (["Table 2", "Figure 2", "Table 1"], "Figure 2, Table 1 and Table 2"),
])
def test_where_names_figures_before_tables_in_number_order(titles, phrase):
  assert declarations.where(titles) == phrase


def test_every_committed_claim_is_declared_by_its_chapter_and_every_declared_claim_is_decided():
  from mone import results
  written = {c["id"]: folder for folder, cs in claims.load(results.RESULTS).items() for c in cs}
  assert len(written) > 40
  undeclared = sorted(i for i in written if declarations.declaring(i) is None)
  assert undeclared == []
  # and declared by the chapter of its own prefix: one chapter per results folder
  owner = {i: next(ch.title for ch in declarations.declared() if i.startswith(ch.prefix)) for i in written}
  assert all(len({owner[i] for i in written if written[i] == f}) == 1 for f in set(written.values()))
  # a declared claim (not a family) that no chapter writes would be a stale declaration
  exact = [c.id for ch in declarations.declared() for c in ch.claims if not c.id.endswith(".")]
  assert [i for i in exact if not any(w == i or w.startswith(i + ".") for w in written)] == []
  assert declarations.declaring("fig6.learned_beats_random.e_c03").id == "fig6.learned_beats_random"
  assert declarations.declaring("speed.train.speedup.ec03.batch8").id == "speed.train."
  assert declarations.declaring("fig9.nothing") is None
