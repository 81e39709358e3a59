"""The benchmark rows' vocabulary: every committed row names its contender by one of `contenders.NAMES`,
and the row tests pick rows as the chapters need."""
import json
from pathlib import Path

import pytest

from mone.bench import contenders
from mone.bench.contenders import DENSE, MATVIT, MONE

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _rows(doc):
  """Every benchmark row (a dict with a "model") under a committed file's "rows" lists, at any depth."""
  if isinstance(doc, dict):
    for r in doc.get("rows", []) if isinstance(doc.get("rows"), list) else []:
      if isinstance(r, dict) and "model" in r:
        yield r
    for v in doc.values():
      yield from _rows(v)
  elif isinstance(doc, list):
    for v in doc:
      yield from _rows(v)


def test_committed_rows_use_the_vocabulary():
  files = sorted((RESULTS / "bench").rglob("*.json"))
  models = {r["model"] for f in files for r in _rows(json.loads(f.read_text()))}
  assert {DENSE, MONE, MATVIT} <= models  # the committed files hold rows at all
  assert models <= set(contenders.NAMES)


def test_is_matches_model_and_e_c():
  mone03, dense, matvit = {"model": MONE, "e_c": 0.3}, {"model": DENSE, "e_c": None}, {"model": MATVIT, "e_c": 0.3}
  assert contenders.is_(mone03, MONE) and contenders.is_(mone03, MONE, 0.1 + 0.2)  # e_c to 1e-9
  assert not contenders.is_(mone03, MONE, 0.4) and not contenders.is_(mone03, MATVIT)
  assert contenders.is_(dense, DENSE) and not contenders.is_(dense, DENSE, 0.3)  # a row without an e_c has none
  assert contenders.is_(matvit, MATVIT, 0.3)


def test_saves_is_mone_below_full_capacity():
  assert contenders.saves({"model": MONE, "e_c": 0.3})
  assert not contenders.saves({"model": MONE, "e_c": contenders.FULL})
  assert not contenders.saves({"model": MATVIT, "e_c": 0.3}) and not contenders.saves({"model": DENSE, "e_c": None})


def test_unknown_contender_is_refused():
  with pytest.raises(ValueError, match=r"model must be one of \('dense', 'mone'"):
    contenders.is_({"model": "vit", "e_c": None}, "vit")
