"""The browser side of scripts/check_book.py: a loopback HTTP server for the built book and one
headless Chromium run per page.

The server adds a probe script to the pages it is asked for with PROBE_QUERY; once a page has
loaded, the probe POSTs what the reader's browser shows (images, formulas, page height, tables
wider than their column, header cells that wrap inside a word) back to the server. Chromium's network log and console are read back
after it exits, so a page that reaches for the internet, or throws, is caught.
"""
import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.parse

PROBE_QUERY = "__bookcheck=1"  # the server adds the probe script to pages asked for with it
REPORT_PATH = "/__bookcheck_report"  # where the probe POSTs what it found
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
    var height = document.documentElement.scrollHeight;  // as a reader first sees it: dropdowns folded
    // Then every dropdown open: a figure or table folded into one is checked as a reader who opens it sees it.
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
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
            height: height,
            // A header cell whose word the browser wrapped inside it ("varian / t"): one word, two lines.
            broken_headers: Array.prototype.filter.call(document.querySelectorAll('article th'), function (th) {
              var walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT), node;
              while ((node = walker.nextNode())) {
                var re = /[^\s\-\/]{2,}/g, m;  // a break after a hyphen or slash is between words
                while ((m = re.exec(node.data))) {
                  var range = document.createRange();
                  range.setStart(node, m.index);
                  range.setEnd(node, m.index + m[0].length);
                  var tops = Array.prototype.map.call(range.getClientRects(), function (r) { return Math.round(r.top); });
                  if (new Set(tops).size > 1) return true;
                }
              }
              return false;
            }).map(function (th) { return th.textContent.trim().slice(0, 60); }),
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


def load_page(page, server, chromium, window, timeout, failures):
  """Opens `page` (a path under the server) with the probe in a fresh Chromium of `window` size;
  returns the probe's report, None if none came within `timeout` seconds. Adds to `failures` what
  the page asked of the internet, the console's errors and every request the server failed."""
  first_request = len(server.requests)
  url_path = urllib.parse.urlsplit(server.url(page)).path
  browser = Chromium(chromium, server.url(f"{page}?{PROBE_QUERY}"), f"--window-size={window[0]},{window[1]}")
  try:
    report = server.wait_report(url_path, timeout)
    if report is not None:
      browser.wait(10)  # the probe closes the window; give Chromium a moment to exit
    else:
      failures.add(page, f"did not finish loading within {timeout} s (no probe report); "
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
  return report


def take_screenshot(chromium, url, out, failures):
  """Saves a 1280 x 900 screenshot of `url` to `out`, once MathJax has typeset it."""
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
