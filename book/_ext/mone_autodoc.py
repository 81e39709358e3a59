"""Sphinx extension for the API page: drops `parent` and `name` from Flax modules' signatures.

Every flax.linen.Module is a dataclass whose generated __init__ ends with `parent` (a sentinel
object whose repr is an address) and `name`: framework plumbing that hides a module's own fields.
"""


def _split_top_level(params: str) -> list[str]:
  """Splits a parameter list at the commas that are not inside brackets or quotes."""
  out, depth, quote, cur = [], 0, None, ""
  for ch in params:
    if quote:
      quote = None if ch == quote else quote
    elif ch in "'\"":
      quote = ch
    elif ch in "([{<":
      depth += 1
    elif ch in ")]}>":
      depth -= 1
    elif ch == "," and depth == 0:
      out.append(cur.strip())
      cur = ""
      continue
    cur += ch
  if cur.strip():
    out.append(cur.strip())
  return out


def strip_flax_plumbing(signature: str) -> str:
  if not signature or not signature.startswith("(") or "parent" not in signature:
    return signature
  params = _split_top_level(signature[1:-1])
  kept = [p for p in params if p.split(":")[0].split("=")[0].strip() not in ("parent", "name")]
  return "(" + ", ".join(kept) + ")"


def _process(app, what, name, obj, options, signature, return_annotation):
  try:
    import flax.linen as nn
    is_module = isinstance(obj, type) and issubclass(obj, nn.Module)
  except ImportError:
    is_module = False
  if is_module:
    return strip_flax_plumbing(signature), return_annotation
  return None


def setup(app):
  app.connect("autodoc-process-signature", _process)
  return {"parallel_read_safe": True}
