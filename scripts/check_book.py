"""Opens every chapter of the built book in headless Chromium and checks what a reader sees.

  python scripts/check_book.py            # after `make book`; `make book-check` does both

For each page that book/_toc.yml lists, served from book/_build/html by a loopback HTTP server
that this script starts and stops:
  - it has a <title> and an <h1>;
  - nothing in it points at the internet (<script src>, <link href>, <img src>, ... and the CSS
    under _static), and at view time Chromium requests nothing outside 127.0.0.1 (its network
    log is read back; any other host is also made unresolvable, so the check sees what an
    offline reader sees);
  - every request the page made to the server succeeded (a 404 is a missing asset);
  - every <img> loaded in the browser (decoded, naturalWidth > 0) and its file is a valid
    PNG/SVG/JPEG/GIF; a notebook chapter shows at least as many images as its executed
    notebook has image outputs;
  - where the page has math, MathJax typeset every formula, with no TeX error;
  - the browser console shows no uncaught JavaScript error and no MathJax complaint;
  - a chapter opens with its verdict table, before any code cell, and shows no stderr output;
  - every figure is shown at no less than MIN_FIGURE_SCALE of its pixel width (readable at page size).
Then it screenshots the landing page to results/book_landing.png.

Uses the standard library, PyYAML (in both venvs) and a Chromium binary (`apt-get install
chromium`; override with $CHROMIUM). Exits 1 listing every failure, 2 if it cannot run at all.
"""
import argparse
import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROBE_QUERY = "__bookcheck=1"  # the server adds the probe script to pages asked for with it
REPORT_PATH = "/__bookcheck_report"  # where the probe POSTs what it found
MIN_FIGURE_SCALE = 0.3  # a figure shown below this fraction of its pixel width is unreadable
WINDOW = (1400, 900)  # the reader's window, as wide as a laptop's
MAX_LANDING_HEIGHT = 6000  # px at WINDOW's width: the answer, not every table, on the landing page
PAGE_TIMEOUT_S = 90  # real seconds for one page to load and report; 2-5 s is normal on 2 cores
SCREENSHOT_TIMEOUT_S = 120
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
    # Every host but the loopback server fails to resolve: what an offline reader gets.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]

# Added before </body>. After `load`, once every image has decoded (or failed) and MathJax has
# typeset, it POSTs its findings to the server and closes the window (which ends Chromium).
PROBE_JS = r"""
<script>
window.addEventListener('load', function () {
  function report(problems) {
    var imgs = Array.prototype.map.call(document.images, function (im) {
      return {src: im.getAttribute('src'), loaded: im.complete && im.naturalWidth > 0,
              natural: im.naturalWidth, shown: im.getBoundingClientRect().width};
    });
    var maths = document.querySelectorAll('.math');
    var typeset = 0;
    maths.forEach(function (m) { if (m.querySelector('mjx-container')) typeset += 1; });
    var errors = document.querySelectorAll('mjx-merror, [data-mml-node="merror"]');
    return {imgs: imgs, math: maths.length, typeset: typeset,
            tex_errors: Array.prototype.map.call(errors, function (e) {
              return (e.getAttribute('data-mjx-error') || e.textContent || '').slice(0, 200);
            }),
            mathjax: !!(window.MathJax && window.MathJax.startup), problems: problems,
            height: document.documentElement.scrollHeight,
            wide_tables: Array.prototype.filter.call(document.querySelectorAll('article table'), function (t) {
              var box = t.parentElement;  // the theme wraps a table in a scrolling container
              return t.getBoundingClientRect().width > box.clientWidth + 2 || box.scrollWidth > box.clientWidth + 2;
            }).map(function (t) { return (t.querySelector('th') || t).textContent.trim().slice(0, 60); })};
  }
  // Images below the fold may be lazy: load them all, then wait for each to decode.
  var decoded = Array.prototype.map.call(document.images, function (im) {
    im.loading = 'eager';
    return im.decode().then(function () { return null; },
                            function () { return 'image does not decode: ' + im.getAttribute('src'); });
  });
  var typeset = (window.MathJax && MathJax.startup && MathJax.startup.promise)
      ? MathJax.startup.promise.then(function () { return null; },
                                     function (e) { return 'MathJax failed: ' + e; })
      : Promise.resolve(null);
  Promise.all(decoded.concat([typeset])).then(function (r) {
    var body;
    try { body = report(r.filter(function (x) { return x; })); }
    catch (e) { body = {error: 'probe failed: ' + e}; }
    fetch('""" + REPORT_PATH + r"""?page=' + encodeURIComponent(location.pathname),
          {method: 'POST', body: JSON.stringify(body)})
      .finally(function () { window.close(); });
  });
});
</script>
"""

IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
# myst-nb renders one mime type per output, preferring these over any image.
RICHER_MIMES = ("application/vnd.jupyter.widget-view+json", "application/javascript", "text/html")
HIDDEN_TAGS = {"remove-cell", "remove-output", "remove_cell", "remove_output"}
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)  # http://, https://, //host


class Failures(list):

  def add(self, page, msg):
    self.append(f"{page}: {msg}")


# ---------------------------------------------------------------------------------------------
# The pages and what their sources promise
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Loopback server and Chromium
# ---------------------------------------------------------------------------------------------

class Server:
  """Serves html_dir on 127.0.0.1 (a free port) and records every request and its status."""

  def __init__(self, html_dir):
    self.requests = []  # (path, status)
    self.reports = {}  # URL path of a page -> what its probe found
    self.reported = threading.Condition()
    server = self

    class Handler(http.server.SimpleHTTPRequestHandler):

      def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/favicon.ico":  # asked for by the browser, not by the book
          self.send_response(204)
          self.end_headers()
          return
        if url.query == PROBE_QUERY and url.path.endswith(".html"):
          # Adds the probe to the page: the same page, plus a script that reports back.
          file = html_dir / urllib.parse.unquote(url.path).lstrip("/")
          if file.is_file():
            body = file.read_text(encoding="utf-8")
            body = body.replace("</body>", PROBE_JS + "</body>", 1).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

      def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != REPORT_PATH:
          self.send_error(404)
          return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        page = urllib.parse.parse_qs(url.query).get("page", ["?"])[0]
        self.send_response(204)
        self.end_headers()
        with server.reported:
          server.reports[page] = json.loads(body)
          server.reported.notify_all()

      def log_request(self, code="-", size="-"):
        server.requests.append((self.path, int(code) if str(code).isdigit() else 0))

      def log_message(self, *args):  # quiet: failures are reported at the end
        pass

    class HTTPServer(http.server.ThreadingHTTPServer):

      def handle_error(self, request, client_address):
        # A page that closes itself may hang up on a response: not the book's problem.
        if not isinstance(sys.exc_info()[1], ConnectionError):
          super().handle_error(request, client_address)

    handler = functools.partial(Handler, directory=str(html_dir))
    self.httpd = HTTPServer(("127.0.0.1", 0), handler)
    self.port = self.httpd.server_address[1]
    self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

  def url(self, path):
    return f"http://127.0.0.1:{self.port}/{path}"

  def wait_report(self, page_path, timeout):
    with self.reported:
      self.reported.wait_for(lambda: page_path in self.reports, timeout=timeout)
      return self.reports.get(page_path)

  def __enter__(self):
    self.thread.start()
    return self

  def __exit__(self, *exc):
    self.httpd.shutdown()
    self.httpd.server_close()
    self.thread.join(timeout=10)


def find_chromium():
  for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
    if name and shutil.which(name):
      return shutil.which(name)
  return None


class Chromium:
  """One headless Chromium run, in its own process group so that all of it can be stopped."""

  def __init__(self, binary, url, *args):
    self.origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
    self.tmp = tempfile.TemporaryDirectory(prefix="check_book_")
    self.netlog = pathlib.Path(self.tmp.name) / "netlog.json"
    self.stderr = open(pathlib.Path(self.tmp.name) / "stderr.txt", "w+")
    cmd = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.tmp.name}/profile",
           f"--log-net-log={self.netlog}", "--enable-logging=stderr", "--v=0", *args, url]
    self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                 start_new_session=True)

  def wait(self, timeout):
    """True if Chromium exited by itself within timeout seconds."""
    try:
      self.proc.wait(timeout=timeout)
      return True
    except subprocess.TimeoutExpired:
      return False

  def stop(self):
    """Ends this Chromium (its process group); returns (page's URLs, console errors)."""
    if self.proc.poll() is None:
      os.killpg(self.proc.pid, signal.SIGTERM)  # lets it finish writing the network log
      if not self.wait(10):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
    self.stderr.seek(0)
    log = self.stderr.read()
    self.stderr.close()
    try:
      urls = page_requests(self.netlog, self.origin)
    finally:
      self.tmp.cleanup()
    return urls, console_errors(log)

  def log_tail(self, n=15):
    self.stderr.seek(0)
    return "\n".join(self.stderr.read().strip().splitlines()[-n:])


def page_requests(netlog, origin):
  """URLs that the page (not the browser's own updater, clock or sign-in) asked for."""
  if not netlog.exists():
    raise RuntimeError("Chromium wrote no network log")
  text = netlog.read_text(errors="replace")
  try:
    log = json.loads(text)
  except json.JSONDecodeError:
    # A log cut short at exit ends inside the events list: keep its complete events (one a line).
    text = text[:text.rfind("},\n") + 1] if "},\n" in text else text
    log = json.loads(text + "]}")
  start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
  host = urllib.parse.urlsplit(origin).hostname
  urls = set()
  for event in log.get("events", []):
    params = event.get("params", {})
    if event.get("type") == start_job and "url" in params:
      # The browser's background requests have no page origin as initiator or network
      # partition; anything the page loads, navigation included, has the server's.
      if params.get("initiator", "").startswith(origin) or host in params.get(
          "network_isolation_key", ""):
        urls.add(params["url"])
  return urls


def console_errors(stderr):
  """Uncaught JavaScript errors and MathJax complaints from Chromium's console log."""
  errors = []
  for line in stderr.splitlines():
    m = re.search(r":CONSOLE(?::\d+|\(\d+\))\] (.*)", line)
    if m and re.match(r'"(Uncaught|MathJax)', m.group(1)):
      errors.append(m.group(1)[:300])
  return errors


def is_local(url):
  u = urllib.parse.urlsplit(url)
  if u.scheme in ("data", "blob", "about", "chrome", "file", "devtools", ""):
    return True
  return u.hostname in ("127.0.0.1", "localhost", "::1")


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

LANDING_PAGE, LANDING_FIGURE = "intro", "landing.png"  # the book's root page leads with this figure


def landing_figure_rendered(imgs: list[dict]) -> bool:
  """Whether the browser's report of a page's images (`src`, `loaded`, `natural`, `shown`) holds the
  landing figure (Sphinx copies it to _images/ under its own name), decoded and shown."""
  return any(LANDING_FIGURE.split(".")[0] in (i.get("src") or "") and i.get("loaded") and i.get("natural", 0) > 0
             and i.get("shown", 0) > 0 for i in imgs)


def check_page(docname, html_dir, book_dir, server, chromium, failures):
  page = f"{docname}.html"
  file = html_dir / page
  if not file.is_file():
    failures.add(page, "not built (listed in the toc, missing from the HTML output)")
    return None
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
    # A chapter opens with its verdicts (pasted from claims.show's glued table) before any code
    # cell, and shows no warning that a reader has to scroll past.
    table, cell = text.find("<table"), text.find('class="cell ')
    if table < 0 or ">Verdict<" not in text[table:text.find("</table>", table)]:
      failures.add(page, "no verdict table (the chapter's claims.json, glued by claims.show)")
    elif 0 <= cell < table:
      failures.add(page, "a code cell comes before the verdict table")
    if 'class="output stderr"' in text:
      failures.add(page, "shows stderr output (a warning) to the reader")

  expected = notebook_image_outputs(book_dir / f"{docname}.ipynb")
  shown = sum("_images/" in ref for ref in imgs_static)
  if shown < expected:
    failures.add(page, f"shows {shown} output image(s), its notebook has {expected}")

  first_request = len(server.requests)
  url_path = urllib.parse.urlsplit(server.url(page)).path
  browser = Chromium(chromium, server.url(f"{page}?{PROBE_QUERY}"), f"--window-size={WINDOW[0]},{WINDOW[1]}")
  try:
    report = server.wait_report(url_path, PAGE_TIMEOUT_S)
    if report is not None:
      browser.wait(10)  # the probe closes the window; give Chromium a moment to exit
    else:
      failures.add(page, f"did not finish loading within {PAGE_TIMEOUT_S} s (no probe report); "
                         f"Chromium's log ends:\n{browser.log_tail()}")
  finally:
    urls, console = browser.stop()
  for url in sorted(urls):
    if not is_local(url):
      failures.add(page, f"the page requested {url} from the internet")
  for error in console:
    failures.add(page, f"browser console: {error}")
  for path, status in server.requests[first_request:]:
    if status >= 400:
      failures.add(page, f"GET {path} -> {status} (missing asset)")
  if report is None:
    return None
  if "error" in report:
    failures.add(page, report["error"])
    return None
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
  if report["math"]:
    if not report["mathjax"]:
      failures.add(page, f"{report['math']} formula(s) but MathJax did not start")
    elif report["typeset"] < report["math"]:
      failures.add(page, f"MathJax typeset {report['typeset']} of {report['math']} formula(s)")
    for err in report["tex_errors"]:
      failures.add(page, f"MathJax error: {err!r}")
  return report


def take_screenshot(chromium, url, out, failures):
  out.parent.mkdir(parents=True, exist_ok=True)
  out.unlink(missing_ok=True)  # a stale screenshot must not pass for a new one
  # Virtual time lets MathJax finish before the picture is taken; Chromium then exits.
  browser = Chromium(chromium, url, f"--screenshot={out.resolve()}", "--window-size=1280,900",
                     "--virtual-time-budget=10000")
  try:
    if not browser.wait(SCREENSHOT_TIMEOUT_S):
      failures.add(url, f"no screenshot within {SCREENSHOT_TIMEOUT_S} s:\n{browser.log_tail()}")
  finally:
    browser.stop()


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

  chromium = find_chromium()
  if not chromium:
    print("check_book: no Chromium found: `apt-get install -y chromium`, or set $CHROMIUM",
          file=sys.stderr)
    sys.exit(2)
  if not (html_dir / "index.html").is_file():
    print(f"check_book: no built book at {html_dir}: run `make book` first", file=sys.stderr)
    sys.exit(2)

  failures = Failures()
  docnames = toc_docnames(book_dir / "_toc.yml")
  check_static(html_dir, failures)
  with Server(html_dir) as server:
    print(f"check_book: {len(docnames)} pages from {html_dir}, served on {server.url('')}")
    try:
      for docname in docnames:
        report = check_page(docname, html_dir, book_dir, server, chromium, failures)
        if report:
          print(f"  {docname + '.html':<48} {report.get('height', 0):>6} px, {len(report['imgs'])} image(s), "
                f"{report['typeset']}/{report['math']} formula(s) typeset")
      take_screenshot(chromium, server.url(f"{docnames[0]}.html"), args.screenshot, failures)
    except RuntimeError as e:
      failures.add("chromium", str(e))
  problem = image_problem(args.screenshot) if args.screenshot.exists() else "not written"
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
