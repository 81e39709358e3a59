"""The static side of scripts/check_book.py: what the built HTML and the book's sources say,
read without a browser.

The pages a toc lists, the images a notebook promises, every resource a page's HTML or CSS
references (none may come from the internet), whether an image file decodes, and what a chapter
page shows before its first code cell.
"""
import json
import re
import struct
import urllib.parse
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import yaml

IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
# myst-nb renders one mime type per output, preferring these over any image.
RICHER_MIMES = ("application/vnd.jupyter.widget-view+json", "application/javascript", "text/html")
HIDDEN_TAGS = {"remove-cell", "remove-output", "remove_cell", "remove_output"}
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)  # http://, https://, //host
# Words of the project's working history, which a reader does not have ("landed", a GPU "lent" for
# a "loan", numbered issues and sessions), and the names that only the code or git knows: a 12-digit
# run or definition hash, a commit with its +dirty flag. A page names the thing itself ("the run of
# seed 4", "the GPU report").
PROCESS_WORDS = re.compile(
    r"\b(?:landed|loan|lent|(?:issue|session)s?\s+#?\d+|sessions?)\b"
    r"|\b[0-9a-f]{7,40}\+dirty\b|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12}\b", re.I)


class Failures(list):
  """Every problem found, as "page: message", in the order the checks found them."""

  def add(self, page, msg):
    self.append(f"{page}: {msg}")


def toc_docnames(toc_path):
  """Root first, then every `file:` entry of a jb-book toc, in order."""
  toc = yaml.safe_load(toc_path.read_text())
  names = [toc["root"]]

  def walk(node):
    if isinstance(node, dict):
      if "file" in node:
        names.append(node["file"])
      for value in node.values():
        walk(value)
    elif isinstance(node, list):
      for item in node:
        walk(item)

  walk({k: v for k, v in toc.items() if k != "root"})
  return [re.sub(r"\.(md|ipynb|rst)$", "", n) for n in names]


def notebook_image_outputs(nb_path):
  """How many outputs myst-nb will render as an <img> (0 if the page is not a notebook)."""
  if not nb_path.exists():
    return 0
  nb = json.loads(nb_path.read_text())
  count = 0
  for cell in nb.get("cells", []):
    if cell.get("cell_type") != "code":
      continue
    if HIDDEN_TAGS & set(cell.get("metadata", {}).get("tags", [])):
      continue
    for out in cell.get("outputs", []):
      data = out.get("data", {})
      if any(m in data for m in IMAGE_MIMES) and not any(m in data for m in RICHER_MIMES):
        count += 1
  return count


def reader_text(page_html, quotes=True):
  """(prose, code spans) of a page as a reader sees them: its text outside <script>, <style> and
  <pre> (code cells and their outputs' listings), and the text of each inline <code> span in it.
  quotes=False leaves out the text of pull-quotes (`<blockquote class="pull-quote">`), where a page
  quotes a frozen file as written."""
  prose, spans = [], []

  class Parser(HTMLParser):
    skip, code, quote = 0, None, []  # quote: for each open <blockquote>, whether it is skipped

    def handle_starttag(self, tag, attrs):
      if tag == "blockquote":
        skipped = not quotes and "pull-quote" in (dict(attrs).get("class") or "").split()
        self.quote.append(skipped)
        self.skip += skipped
      elif tag in ("script", "style", "pre"):
        self.skip += 1
      elif tag == "code" and not self.skip:
        self.code = []

    def handle_endtag(self, tag):
      if tag == "blockquote" and self.quote:
        self.skip -= self.quote.pop()
      elif tag in ("script", "style", "pre"):
        self.skip = max(0, self.skip - 1)
      elif tag == "code" and self.code is not None:
        spans.append("".join(self.code).strip())
        self.code = None

    def handle_data(self, data):
      if not self.skip:
        prose.append(data)
        if self.code is not None:
          self.code.append(data)

  Parser().feed(page_html)
  return " ".join(prose), spans


def process_words(page_html):
  """Each distinct process word or internal hash (`PROCESS_WORDS`) a reader sees on the page, with
  a few words around it; a frozen file quoted as written (a pull-quote) is history, not the page's prose."""
  prose, _ = reader_text(page_html, quotes=False)
  prose = re.sub(r"\s+", " ", prose)
  return sorted({f"{m.group(0)!r} in '...{prose[max(0, m.start() - 30):m.end() + 20].strip()}...'"
                 for m in PROCESS_WORDS.finditer(prose)})


FILE_SUFFIX = re.compile(r"\.(?:json|csv|png|svg|py|ipynb|md|yml|txt)$")


def internal_names(page_html, modules, claim_ids=()):
  """The inline code spans of a page's prose that name a module of the package or one of its
  attributes (`claims.PAIRING`, `mone.chapters.analysis.left_plateau`): code talk in a reader's text.
  A file's name (`claims.json`) and a claim's id (`table1.mone04_vs_uniform`, how the tables name
  a claim) are not code talk."""
  _, spans = reader_text(page_html)
  name = re.compile(r"^(?:mone\.)?(?:[a-z_]+\.)*(?:" + "|".join(map(re.escape, sorted(modules))) + r")(?:\.\w+)+$")
  return sorted({s for s in spans if name.match(s) and not FILE_SUFFIX.search(s) and s not in set(claim_ids)})


def static_refs(page_html):
  """(tag, attribute, url) of every resource reference in the page's HTML."""
  refs = []

  class Parser(HTMLParser):

    def handle_starttag(self, tag, attrs):
      a = dict(attrs)
      if tag in ("script", "img", "iframe", "embed", "source", "audio", "video", "track"):
        if a.get("src"):
          refs.append((tag, "src", a["src"]))
      if tag == "link" and a.get("href"):
        rel = (a.get("rel") or "").lower()
        # Resources the browser fetches; canonical/next/prev are navigation, not loads.
        if any(r in rel for r in ("stylesheet", "preload", "prefetch", "icon", "modulepreload",
                                  "preconnect", "dns-prefetch", "manifest")):
          refs.append((tag, "href", a["href"]))
      if tag == "object" and a.get("data"):
        refs.append((tag, "data", a["data"]))
      if a.get("srcset"):
        for part in a["srcset"].split(","):
          if part.strip():
            refs.append((tag, "srcset", part.strip().split()[0]))

  Parser().feed(page_html)
  return refs


def image_problem(path):
  """None if `path` is a decodable-looking image file, else what is wrong with it."""
  if not path.is_file():
    return "missing file"
  data = path.read_bytes()
  if data.startswith(b"\x89PNG\r\n\x1a\n"):
    if len(data) < 24 or data[12:16] != b"IHDR":
      return "PNG without IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return None if w > 0 and h > 0 else f"PNG of size {w}x{h}"
  if data.startswith(b"\xff\xd8\xff") or data[:6] in (b"GIF87a", b"GIF89a"):
    return None
  if path.suffix.lower() == ".svg":
    try:
      root = ET.fromstring(data)
    except ET.ParseError as e:
      return f"SVG does not parse: {e}"
    return None if root.tag.endswith("svg") else f"root element is <{root.tag}>, not <svg>"
  return "not a PNG, JPEG, GIF or SVG file"


def check_static(html_dir, failures):
  """CSS can pull fonts or stylesheets from the internet too."""
  for css in sorted((html_dir / "_static").rglob("*.css")):
    text = css.read_text(errors="replace")
    for m in re.finditer(r"""(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)""", text):
      failures.add(css.relative_to(html_dir), f"CSS loads {m.group(1)} from the internet")


def check_html(docname, file, book_dir, failures):
  """The checks of a built page's HTML file, before any browser opens it."""
  page = f"{docname}.html"
  text = file.read_text(encoding="utf-8")

  title = re.search(r"<title>(.*?)</title>", text, re.S)
  if not title or not title.group(1).strip() or "&lt;no title&gt;" in title.group(1):
    failures.add(page, "no <title>")
  if not re.search(r"<h1[\s>]", text):
    failures.add(page, "no <h1>: the page has no heading")

  imgs_static = []
  for tag, attr, ref in static_refs(text):
    if EXTERNAL.match(ref):
      failures.add(page, f"<{tag} {attr}> loads {ref} from the internet")
      continue
    if tag == "img" and attr == "src":
      imgs_static.append(ref)
      if not ref.startswith("data:"):
        local = (file.parent / urllib.parse.unquote(ref.split("?")[0].split("#")[0])).resolve()
        problem = image_problem(local)
        if problem:
          failures.add(page, f"image {ref}: {problem}")

  if docname.startswith("notebooks/"):
    # A chapter opens with its verdicts (pasted from verdicts.show's glued table) before any code
    # cell, and shows no warning that a reader has to scroll past.
    table, cell = text.find("<table"), text.find('class="cell ')
    if table < 0 or ">Verdict<" not in text[table:text.find("</table>", table)]:
      failures.add(page, "no verdict table (the chapter's claims.json, glued by verdicts.show)")
    elif 0 <= cell < table:
      failures.add(page, "a code cell comes before the verdict table")
    if 'class="output stderr"' in text:
      failures.add(page, "shows stderr output (a warning) to the reader")

  expected = notebook_image_outputs(book_dir / f"{docname}.ipynb")
  shown = sum("_images/" in ref for ref in imgs_static)
  if shown < expected:
    failures.add(page, f"shows {shown} output image(s), its notebook has {expected}")
