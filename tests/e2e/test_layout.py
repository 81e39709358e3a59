"""The package's shape stays one a maintainer can read: the limits below are measured from the
source by scripts/layout.py (which also prints the graph between packages)."""
import importlib.util

import pytest

from helpers import REPO as ROOT
_spec = importlib.util.spec_from_file_location("layout", ROOT / "scripts" / "layout.py")
layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layout)


def test_no_import_cycle():
  assert layout.cycles(layout.import_graph()) == []


def test_cycle_finder_finds_a_circle(tmp_path):
  # The check above must be able to fail: two modules importing each other are one component.
  pkg = tmp_path / "mone"
  pkg.mkdir()
  (pkg / "__init__.py").write_text("")
  (pkg / "a.py").write_text("from mone import b\n")
  (pkg / "b.py").write_text("def f():\n  from mone import a\n")
  graph = layout.import_graph(tmp_path)
  assert layout.cycles(graph) == [["mone.a", "mone.b"]]
  assert layout.local_imports(tmp_path) == [("mone/b.py", 2)]


def test_no_module_over_400_lines():
  assert {p: n for p, n in layout.line_counts().items() if n > 400} == {}


def test_model_kinds_switch_in_one_place():
  switches = layout.kind_switches()
  assert switches == [], f"compare kinds through mone.models.kinds, not by name: {switches}"


def test_kind_switch_finder(tmp_path):
  (tmp_path / "mone").mkdir()
  (tmp_path / "scripts").mkdir()
  (tmp_path / "mone" / "x.py").write_text(
      "a = cfg.kind == 'mone'\nb = m['kind'] in ('vit', 'matvit')\nc = kind == 'config'\nd = 'mod' != kind\n"
      "e = cfg.allocation == 'mone'\n")
  assert layout.kind_switches(tmp_path) == [("mone/x.py", 1), ("mone/x.py", 2), ("mone/x.py", 4)]


def test_few_function_local_imports():
  found = layout.local_imports()
  assert len(found) <= 10, f"an import inside a function hides a layering problem: {found}"


@pytest.mark.parametrize("name", sorted(layout.notebook_code_lines()))
def test_notebooks_are_thin(name):
  assert layout.notebook_code_lines()[name] <= 60


def test_notebooks_decide_no_claim():
  assert layout.notebook_decisions() == []


def test_training_imports_no_chapter_code():
  # The queue trains from the run plan (mone.runs) and the training stack alone: a change to the
  # book's analysis cannot stop or slow a training run, and training needs none of its dependencies.
  assert layout.below_chapters() == {}


def test_the_books_layers_import_only_downwards():
  # Claims and statistics, then plotting, then the chapters, then the pages: a claim's decision never
  # depends on a figure or a chapter, and a chapter never on the pages that publish it.
  assert layout.layer_violations() == {}


def test_the_layer_check_sees_an_import_upwards(tmp_path):
  for d in ("mone", "mone/evidence", "mone/chapters"):
    (tmp_path / d).mkdir()
    (tmp_path / d / "__init__.py").write_text("")
  (tmp_path / "mone" / "chapters" / "figure1.py").write_text("")
  (tmp_path / "mone" / "chapters" / "__main__.py").write_text("from mone.publish import cli\n")
  (tmp_path / "mone" / "evidence" / "claims.py").write_text("from mone.chapters import figure1\n")
  assert layout.layer_violations(tmp_path) == {"mone.evidence.claims": ["mone.chapters", "mone.chapters.figure1"]}


def test_the_chapter_reach_finder_sees_a_path_through_another_module(tmp_path):
  # The check above must be able to fail: training code reaching a chapter through a module between.
  for d in ("mone", "mone/chapters", "mone/runs", "scripts"):
    (tmp_path / d).mkdir()
    if d != "scripts":
      (tmp_path / d / "__init__.py").write_text("")
  (tmp_path / "mone" / "chapters" / "pages.py").write_text("")
  (tmp_path / "mone" / "runs" / "plan.py").write_text("from mone.chapters import pages\n")
  (tmp_path / "scripts" / "train_queue.py").write_text("from mone.runs import plan\n")
  (tmp_path / "scripts" / "train_run.py").write_text("import mone.runs\n")
  assert layout.below_chapters(tmp_path) == {"mone.runs.plan": ["mone.chapters", "mone.chapters.pages"],
                                             "scripts/train_queue.py": ["mone.chapters", "mone.chapters.pages"]}
