"""The book's sources: the API page documents every module, without Flax's plumbing."""
import importlib.util
import re

from mone import results

BOOK = results.REPO / "book"


def test_api_page_documents_every_module():
  modules = sorted(p.stem for p in (results.REPO / "mone").glob("*.py") if p.stem != "__init__")
  documented = re.findall(r"^\.\. automodule:: mone\.(\w+)$", (BOOK / "api.md").read_text(), re.M)
  assert sorted(documented) == modules


def _ext():
  spec = importlib.util.spec_from_file_location("mone_autodoc", BOOK / "_ext" / "mone_autodoc.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_flax_signatures_lose_parent_and_name():
  ext = _ext()
  sig = ("(config: mone.config.ViTConfig, sizes: tuple[int, int] = (1, 2), parent: flax.linen.module.Module | "
         "flax.core.scope.Scope | flax.linen.module._Sentinel | None = <flax.linen.module._Sentinel object>, "
         "name: str | None = None)")
  assert ext.strip_flax_plumbing(sig) == "(config: mone.config.ViTConfig, sizes: tuple[int, int] = (1, 2))"
  assert ext.strip_flax_plumbing("(x, y=1)") == "(x, y=1)"
  # Applied to a real Flax module's autodoc signature, leaves other objects alone.
  from mone import models
  import inspect
  out = ext._process(None, "class", "mone.models.ViT", models.ViT, {}, str(inspect.signature(models.ViT)), None)
  assert "parent" not in out[0] and "name" not in out[0] and "config" in out[0]
  assert ext._process(None, "function", "f", len, {}, "(parent)", None) is None
