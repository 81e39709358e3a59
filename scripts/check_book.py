"""Opens every chapter of the built book in headless Chromium and checks what a reader sees.

  python scripts/check_book.py            # after `make book`; `make book-check` does both

Each page book/_toc.yml lists is served from book/_build/html by a loopback server this script
starts, every other host unresolvable, so the check sees what an offline reader sees. A page must
have a <title> and an <h1>; point at and request nothing outside 127.0.0.1 (its HTML, the CSS under
_static, Chromium's network log); get every request answered; show every <img> as a valid image at
no less than MIN_FIGURE_SCALE of its pixel width (a notebook chapter as many as its notebook's image
outputs); typeset every formula (MathJax) with no JavaScript error or MathJax complaint; and, for a
chapter, open with its verdict table, before any code cell, showing no stderr output.

What a reader must be able to read (measured, not eyeballed): every figure's smallest text at least
MIN_TEXT_PX screen pixels at the width the browser shows it (from the legibility audit each figure
carries in its PNG, `mone.plotting.legibility`), no legend over data, no two legend entries drawn
alike; no table header that wraps inside a word; no page taller than MAX_PAGE_HEIGHT; no words of
the project's working history or internal hashes in any page's text, and no module names in a
chapter's prose (`book_pages.process_words`, `book_pages.internal_names`).

Then it screenshots the landing page to results/book_landing.png. Needs PyYAML and Chromium
(`apt-get install chromium`, or $CHROMIUM); exits 1 listing every failure, 2 if it cannot run.
"""
import argparse
import functools
import os
import pathlib
import sys
import urllib.parse

# Its modules sit beside it: importable when run as a script and when loaded by path (tests).
# book_pages holds the checks of the HTML files, book_browser the server and Chromium.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import book_browser  # noqa: E402
import book_pages  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mone.evidence import claims  # noqa: E402  (the claims' ids)
from mone.plotting import legibility  # noqa: E402  (a figure's audit: no matplotlib)
MIN_FIGURE_SCALE = 0.3  # a figure shown below this fraction of its pixel width is unreadable
WINDOW = (1400, 900)  # the reader's window, as wide as a laptop's
MAX_LANDING_HEIGHT = 6000  # px at WINDOW's width: the answer, not every table, on the landing page
MAX_PAGE_HEIGHT = 9000  # px at WINDOW's width: a longer page is two topics (the API reference excepted)
MIN_TEXT_PX = 9  # screen pixels of a figure's smallest text, at the width the page shows it
CODE_PAGES = ("api",)  # pages about the code itself: module names and hashes are their subject
# Pages whose length is their purpose: every claim's table on one page (the README links it as such).
LONG_PAGES = CODE_PAGES + ("claims",)
PAGE_TIMEOUT_S = 90  # real seconds for one page to load and report; 2-5 s is normal on 2 cores

LANDING_PAGE, LANDING_FIGURE = "intro", "landing.png"  # the book's root page leads with this figure


def landing_figure_rendered(imgs: list[dict]) -> bool:
  """Whether the browser's report of a page's images (`src`, `loaded`, `natural`, `shown`) holds the
  landing figure (Sphinx copies it to _images/ under its own name), decoded and shown."""
  return any(LANDING_FIGURE.split(".")[0] in (i.get("src") or "") and i.get("loaded") and i.get("natural", 0) > 0
             and i.get("shown", 0) > 0 for i in imgs)


def check_page(docname, html_dir, book_dir, server, chromium, failures):
  """Checks one page, its HTML file first, then what the browser shows; returns the probe's report
  (None if the page is missing or the probe sent none)."""
  page = f"{docname}.html"
  file = html_dir / page
  if not file.is_file():
    failures.add(page, "not built (listed in the toc, missing from the HTML output)")
    return None
  book_pages.check_html(docname, file, book_dir, failures)
  check_words(docname, file.read_text(encoding="utf-8"), failures)
  report = book_browser.load_page(page, server, chromium, WINDOW, PAGE_TIMEOUT_S, failures)
  if report is None:
    return None
  if "error" in report:
    failures.add(page, report["error"])
    return None
  check_report(docname, report, failures)
  check_figures(docname, report["imgs"], html_dir, failures)
  return report


def check_words(docname, text, failures):
  """Process words and hashes on every page but the code's own; module names in a chapter's prose."""
  if docname in CODE_PAGES:
    return
  page = f"{docname}.html"
  for hit in book_pages.process_words(text):
    failures.add(page, f"process word or internal hash in the text: {hit}")
  if docname.startswith("notebooks/") or docname == LANDING_PAGE:
    for name in book_pages.internal_names(text, *_code_names()):
      failures.add(page, f"a module's name in the prose: `{name}` (say what it is)")


@functools.cache
def _code_names():
  """(the package's module and subpackage names, every claim id of results/*/claims.json): read once
  for all pages. A claim id looks like a module's attribute and is how the tables name a claim."""
  modules = {p.stem for p in (ROOT / "mone").rglob("*.py") if p.stem != "__init__"}
  modules |= {p.name for p in (ROOT / "mone").rglob("*") if p.is_dir() and (p / "__init__.py").exists()}
  return modules, {c["id"] for chapter in claims.load(ROOT / "results").values() for c in chapter}


def check_figures(docname, imgs, html_dir, failures):
  """Each figure's legibility audit (`mone.plotting.legibility`, in its PNG), scaled to the width
  the browser shows it at: its smallest text in screen pixels, legends over data, alike entries."""
  page = f"{docname}.html"
  for img in imgs:
    src = img.get("src") or ""
    if "_images/" not in src or not src.endswith(".png") or not img.get("loaded") or not img.get("shown"):
      continue
    file = pathlib.Path(os.path.normpath((html_dir / docname).parent / urllib.parse.unquote(src)))
    audit = legibility.read(file.read_bytes()) if file.is_file() else None
    name = src.rsplit("/", 1)[-1]
    if audit is None:
      failures.add(page, f"figure {name} carries no legibility audit (draw it with Chapter.show or plots.save_png)")
      continue
    if audit["min_text_px"] is not None:
      shown_px = audit["min_text_px"] * img["shown"] / img["natural"]
      if shown_px < MIN_TEXT_PX:
        failures.add(page, f"figure {name}: its smallest text ({audit['min_text']!r}) is {shown_px:.1f} px "
                           f"on screen, shown at {img['shown']:.0f} of {img['natural']} px; at least {MIN_TEXT_PX}")
    for problem in audit["covers_data"] + audit["alike"]:
      failures.add(page, f"figure {name}: {problem}")


def check_report(docname, report, failures):
  """What the probe saw in the browser: images, figure sizes, tables, page height and formulas."""
  page = f"{docname}.html"
  if docname == LANDING_PAGE and not landing_figure_rendered(report["imgs"]):
    failures.add(page, f"the landing page's figure ({LANDING_FIGURE}, the answer above the verdicts) is missing or did not render")
  for img in report["imgs"]:
    if not img["loaded"]:
      failures.add(page, f"image {img['src']} did not load in the browser")
    elif "_images/" in (img["src"] or "") and img.get("natural", 0) > 0 and img.get("shown", 0) > 0 \
        and img["shown"] / img["natural"] < MIN_FIGURE_SCALE:
      # Figures are saved at 150 dpi; shown at less than this fraction of their pixels, a 9 pt
      # label falls under ~6 screen pixels: split the figure into a grid instead.
      failures.add(page, f"figure {img['src']} is shown at {img['shown'] / img['natural']:.0%} of its "
                         f"{img['natural']} px width: too small to read at page size")
  for problem in report["problems"]:
    failures.add(page, problem)
  for table in report.get("wide_tables", []):
    failures.add(page, f"a table is wider than its column at {WINDOW[0]} px (clipped or scrolling): it starts {table!r}")
  if docname == LANDING_PAGE and report.get("height", 0) > MAX_LANDING_HEIGHT:
    failures.add(page, f"the landing page is {report['height']} px tall at {WINDOW[0]} px wide; at most {MAX_LANDING_HEIGHT}")
  elif docname not in LONG_PAGES and report.get("height", 0) > MAX_PAGE_HEIGHT:
    failures.add(page, f"{report['height']} px tall at {WINDOW[0]} px wide; at most {MAX_PAGE_HEIGHT} (split it)")
  for header in report.get("broken_headers", []):
    failures.add(page, f"a table header wraps inside a word: {header!r}")
  if report["math"]:
    if not report["mathjax"]:
      failures.add(page, f"{report['math']} formula(s) but MathJax did not start")
    elif report["typeset"] < report["math"]:
      failures.add(page, f"MathJax typeset {report['typeset']} of {report['math']} formula(s)")
    for err in report["tex_errors"]:
      failures.add(page, f"MathJax error: {err!r}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--book", type=pathlib.Path, default=ROOT / "book",
                      help="book source folder (with _toc.yml)")
  parser.add_argument("--html", type=pathlib.Path, default=None,
                      help="built HTML (default: BOOK/_build/html)")
  parser.add_argument("--screenshot", type=pathlib.Path,
                      default=ROOT / "results" / "book_landing.png")
  args = parser.parse_args()
  book_dir = args.book.resolve()
  html_dir = (args.html or book_dir / "_build" / "html").resolve()

  chromium = book_browser.find_chromium()
  if not chromium:
    print("check_book: no Chromium found: `apt-get install -y chromium`, or set $CHROMIUM",
          file=sys.stderr)
    sys.exit(2)
  if not (html_dir / "index.html").is_file():
    print(f"check_book: no built book at {html_dir}: run `make book` first", file=sys.stderr)
    sys.exit(2)

  failures = book_pages.Failures()
  docnames = book_pages.toc_docnames(book_dir / "_toc.yml")
  book_pages.check_static(html_dir, failures)
  with book_browser.Server(html_dir) as server:
    print(f"check_book: {len(docnames)} pages from {html_dir}, served on {server.url('')}")
    try:
      for docname in docnames:
        report = check_page(docname, html_dir, book_dir, server, chromium, failures)
        if report:
          print(f"  {docname + '.html':<48} {report.get('height', 0):>6} px, {len(report['imgs'])} image(s), "
                f"{report['typeset']}/{report['math']} formula(s) typeset")
      book_browser.take_screenshot(chromium, server.url(f"{docnames[0]}.html"), args.screenshot, failures)
    except RuntimeError as e:
      failures.add("chromium", str(e))
  problem = book_pages.image_problem(args.screenshot) if args.screenshot.exists() else "not written"
  if problem:
    failures.add(str(args.screenshot), f"landing page screenshot: {problem}")
  else:
    print(f"check_book: screenshot of {docnames[0]}.html -> {args.screenshot}")

  if failures:
    print(f"check_book: FAILED, {len(failures)} problem(s):", file=sys.stderr)
    for f in failures:
      print(f"  - {f}", file=sys.stderr)
    sys.exit(1)
  print(f"check_book: OK, {len(docnames)} pages render offline")


if __name__ == "__main__":
  main()
