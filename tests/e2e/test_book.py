"""The book's sources: the API page documents every module, without Flax's plumbing."""
import importlib.util
import re
import subprocess
import sys

from mone import results

BOOK = results.REPO / "book"


def test_api_page_documents_every_module():
  root = results.REPO / "mone"
  # Every module and package under mone/ (a package by its __init__'s docstring); __main__ is a
  # command, documented by the module it calls.
  modules = sorted(".".join(("mone", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
                   for p in root.rglob("*.py") if p.stem != "__main__" and p != root / "__init__.py")
  documented = re.findall(r"^\.\. automodule:: (mone(?:\.\w+)+)$", (BOOK / "api.md").read_text(), re.M)
  assert sorted(documented) == modules


def _ext():
  spec = importlib.util.spec_from_file_location("mone_autodoc", BOOK / "_ext" / "mone_autodoc.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_flax_signatures_lose_parent_and_name():
  ext = _ext()
  sig = ("(config: mone.models.config.ViTConfig, sizes: tuple[int, int] = (1, 2), parent: flax.linen.module.Module | "
         "flax.core.scope.Scope | flax.linen.module._Sentinel | None = <flax.linen.module._Sentinel object>, "
         "name: str | None = None)")
  assert ext.strip_flax_plumbing(sig) == "(config: mone.models.config.ViTConfig, sizes: tuple[int, int] = (1, 2))"
  assert ext.strip_flax_plumbing("(x, y=1)") == "(x, y=1)"
  # Applied to a real Flax module's autodoc signature, leaves other objects alone.
  import inspect

  from mone.models import vit
  out = ext._process(None, "class", "mone.models.vit.ViT", vit.ViT, {}, str(inspect.signature(vit.ViT)), None)
  assert "parent" not in out[0] and "name" not in out[0] and "config" in out[0]
  assert ext._process(None, "function", "f", len, {}, "(parent)", None) is None


def _chapter_inputs():
  spec = importlib.util.spec_from_file_location("chapter_inputs", results.REPO / "scripts" / "chapter_inputs.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_a_chapter_depends_on_the_modules_it_imports_and_no_others(capsys):
  """What Make reruns a chapter for (scripts/chapter_inputs.py): its notebook, every mone module
  it reaches through imports, lazy ones inside functions included, and its parameters."""
  ci = _chapter_inputs()
  assert ci.imported("from mone.evidence import claims\nfrom mone.chapters import speed\nimport mone.flops") >= {
      "mone.evidence.claims", "mone.chapters.speed", "mone.flops", "mone.evidence", "mone.chapters", "mone"}
  speed = set(ci.closure({"mone.chapters.speed"}))
  assert "mone.bench.cli" in speed  # imported inside a function
  # mone.flops asks the model kinds (mone.models.kinds), which import the models when they build one
  assert set(ci.closure({"mone.flops"})) == {"mone", "mone.flops", "mone.capacity", "mone.models", "mone.models.config",
                                             "mone.models.kinds", "mone.models.vit", "mone.models.vivit",
                                             "mone.models.nested", "mone.models.routing", "mone.models.layers",
                                             "mone.models.fused_mlp", "mone.models.linear", "mone.models.attention"}
  ci.main(["notebooks/05_figure5_adaptation.ipynb", "small", "seed=1"])
  lines = capsys.readouterr().out.splitlines()
  files = [l.split("  ", 1)[1] for l in lines[:-1]]
  assert files[0] == "notebooks/05_figure5_adaptation.ipynb" and "mone/train/loop.py" in files
  assert "mone/bench/cli.py" not in files and lines[-1] == "parameters: small seed=1"


def test_a_chapter_reruns_when_a_run_it_may_read_lands(tmp_path, monkeypatch, capsys):
  """The committed results the chapters read are inputs too, so a run file that lands (or
  changes) reruns the chapters; a chapter's own outputs are not (they would rerun it forever)."""
  ci = _chapter_inputs()
  monkeypatch.setenv("MONE_RESULTS_DIR", str(tmp_path))
  (tmp_path / "04_figure4_video").mkdir()
  (tmp_path / "04_figure4_video" / "claims.json").write_text("{}")

  def inputs():
    ci.main(["notebooks/04_figure4_video.ipynb", "small"])
    return capsys.readouterr().out

  before = inputs()
  (tmp_path / "runs").mkdir()
  (tmp_path / "runs" / "a-vit-0.json").write_text('{"accuracy": 0.5}')
  landed = inputs()
  assert landed != before and "  results/runs/a-vit-0.json\n" in landed
  (tmp_path / "runs" / "a-vit-0.json").write_text('{"accuracy": 0.6}')
  assert inputs() != landed
  assert "04_figure4_video" not in landed.replace("notebooks/04_figure4_video.ipynb", "")


def test_published_chapters_print_no_warnings():
  """The executed chapters the book renders carry no stderr output (warnings, tracebacks): a
  warning on a page is fixed at its cause (as the clipped video frames and tight_layout were)."""
  import json
  chapters = sorted((BOOK / "notebooks").glob("[0-9]*.ipynb"))
  assert chapters
  for path in chapters:
    cells = json.loads(path.read_text())["cells"]
    stderr = ["".join(o["text"])[:200] for c in cells for o in c.get("outputs", []) if o.get("name") == "stderr"]
    assert not stderr, f"{path.name} prints to stderr: {stderr}"


def test_the_publishing_workflow_runs_only_make_targets_that_make_book_runs():
  # The workflow must build with the Makefile's own commands, those `make book` exercises here.
  import yaml
  workflow = yaml.safe_load((results.REPO / ".github" / "workflows" / "book.yml").read_text())
  runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
  assert runs == ["make book-html"]
  makefile = (results.REPO / "Makefile").read_text()
  book_recipe = re.search(r"^book: .*\n((?:\t.*\n)+)", makefile, re.M).group(1)
  assert "$(MAKE) book-html" in book_recipe and re.search(r"^book-html:", makefile, re.M)
  uses = [step["uses"].split("@")[0] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]
  assert "actions/upload-pages-artifact" in uses and "actions/deploy-pages" in uses
  assert workflow[True]["push"]["branches"] == ["main"]  # YAML reads the key `on` as True


def test_no_internal_tracker_or_session_numbers_reach_a_reader():
  # A reader has no issue tracker and no sessions: text names the thing itself.
  # Numbered, or placed in the project's working history by a word such as "later" before it.
  pattern = re.compile(r"(issue|session)s? #?[0-9]+|\b(an? |the )?(earlier|later|previous|next|this|that|some) sessions?\b", re.I)
  roots = [results.REPO / d for d in ("mone", "scripts", "tests", "notebooks", "book")] + [results.REPO / "README.md"]
  found = []
  for root in roots:
    for path in ([root] if root.is_file() else root.rglob("*")):
      if path.suffix not in (".py", ".md", ".ipynb", ".yml") or "_build" in path.parts:
        continue
      found += [f"{path.relative_to(results.REPO)}: {m.group(0)}" for m in pattern.finditer(path.read_text())]
  assert not found, found


def test_book_check_knows_the_landing_figure_when_it_renders():
  spec = importlib.util.spec_from_file_location("check_book", results.REPO / "scripts" / "check_book.py")
  check_book = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(check_book)
  shown = {"src": "_images/landing.png", "loaded": True, "natural": 900, "shown": 700}
  assert check_book.landing_figure_rendered([{"src": "_images/other.png", "loaded": True, "natural": 10, "shown": 10}, shown])
  assert not check_book.landing_figure_rendered([{**shown, "loaded": False}])
  assert not check_book.landing_figure_rendered([{**shown, "natural": 0}])
  assert not check_book.landing_figure_rendered([])


def _script(name):
  spec = importlib.util.spec_from_file_location(name, results.REPO / "scripts" / f"{name}.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_book_check_finds_process_words_hashes_and_module_names_in_prose_only():
  pages = _script("book_pages")
  html = ("<p>Seeds 5-9 have landed; the GPU was lent for a loan. Run moving_temporal-mone-2fc8d1d7cc65 at "
          "5a852484da9a+dirty.</p><p>The landing page, the e_c grid of 0.3 and a 12-letter word: deadbeefcafe.</p>"
          "<pre>landed = plan_readout.landed(x)</pre><script>var lent = 1;</script>"
          '<blockquote class="epigraph pull-quote"><p>before any run landed</p></blockquote>'
          "<blockquote><p>no run of it was lent</p></blockquote>")
  found = {hit.split("'")[1] for hit in pages.process_words(html)}
  # Not "landing", not a 12-letter word of hex letters, not code (<pre>) or scripts, not a frozen file
  # quoted as written (a pull-quote); a plain blockquote is the page's own prose.
  assert found == {"landed", "lent", "loan", "2fc8d1d7cc65", "5a852484da9a+dirty"}
  hits = pages.process_words(html)
  assert any("no run of it was lent" in hit for hit in hits) and not any("before any run" in hit for hit in hits)
  prose = ('<p>By <code class="x"><span class="pre">claims.PAIRING</span></code> and <code>python -m mone.bench</code>'
           ' or <code>mone.chapters.analysis.left_plateau</code>.</p><pre><code>claims.write(x)</code></pre>')
  assert pages.internal_names(prose, {"claims", "analysis", "bench"}) == ["claims.PAIRING", "mone.chapters.analysis.left_plateau"]


def test_book_check_measures_a_figures_text_where_the_page_shows_it(tmp_path):
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  from mone.plotting import legibility
  check_book = _script("check_book")
  fig, ax = plt.subplots(figsize=(8, 3))
  ax.plot([0, 1], [0, 1], "o-", label="a")
  ax.plot([0, 1], [1, 0], "o-", label="b", color=ax.lines[0].get_color())
  ax.tick_params(labelsize=9)  # 12.5 px at 100 dpi
  ax.legend(loc="center")
  data, report = legibility.png(fig, 100)
  plt.close(fig)
  (tmp_path / "_images").mkdir()
  (tmp_path / "_images" / "f.png").write_bytes(data)
  (tmp_path / "_images" / "bare.png").write_bytes(data[:33] + data[-12:])  # IHDR and IEND only: no audit
  natural = report["width_px"]
  img = {"src": "../_images/f.png", "loaded": True, "natural": natural}
  failures = []
  fails = type("F", (list,), {"add": lambda self, page, msg: self.append(msg)})
  failures = fails()
  check_book.check_figures("notebooks/x", [{**img, "shown": natural}], tmp_path, failures)
  assert not any("smallest text" in f for f in failures)  # 12.5 px at full width
  assert any("covers" in f for f in failures) and any("look the same" in f for f in failures)
  failures = fails()
  check_book.check_figures("notebooks/x", [{**img, "shown": natural * 0.6},
                                           {**img, "src": "../_images/bare.png", "shown": 100}], tmp_path, failures)
  assert any("smallest text" in f and "7.5 px" in f for f in failures)  # 12.5 px shown at 60%
  assert any("bare.png carries no legibility audit" in f for f in failures)


def test_the_chapters_cli_runs_in_the_books_environment():
  # `make book-html` runs `python -m mone.chapters claims` in the book's environment (.venv-book), which
  # lacks the drawing and data libraries (the API page mocks them: book/_config.yml's
  # autodoc_mock_imports); the CLI reads every chapter's declarations, so no chapter module may import
  # them at its top.
  missing = re.search(r"autodoc_mock_imports: \[(.*)\]", (BOOK / "_config.yml").read_text()).group(1).split(", ")
  assert "matplotlib" in missing and "skimage" in missing
  code = (f"import sys; sys.modules.update(dict.fromkeys({missing!r})); import mone.publish.cli; "
          "from mone.evidence import declarations; declarations.declared()")
  done = subprocess.run([sys.executable, "-c", code], cwd=results.REPO, capture_output=True, text=True)
  assert done.returncode == 0, done.stderr[-2000:]
