"""The book's landing answer and the README's, generated from the chapters' claims.

A reader comes to the landing page with one question: does MoNE buy accuracy per FLOP, as the
paper says? So the page answers by family of claims, the paper's central question first
(`FAMILIES`): what reproduces, what is open and which way the open claims point; then the
context a skeptic needs beside the headline (on this profile more training helps every model,
`training_context`), a glossary, the forest plot and one compact table. The full tables, chapter
by chapter, are their own page (`claims.tables_page`, book/claims.md).

Everything here is computed from results/<chapter>/claims.json (`claims.load`, annotated by
`significance.annotate`) and the chapter files named below; nothing is typed.
"""
import json
from pathlib import Path

from mone import results
from mone.chapters import claims as claims_lib
from mone.chapters import significance

# The paper's three questions, by claim id prefix, the central one first.
FAMILIES = {
    "Accuracy per FLOP": (("fig3.", "fig4.", "table1."), "Figures 3, 4 and Table 1"),
    "Adaptation": (("fig5.",), "Figure 5"),
    "Routing": (("fig1.", "fig6.", "fig7."), "Figures 1, 6 and 7"),
}

GLOSSARY = [
    ("$e_c$", "effective capacity: the share of the dense model's compute MoNE spends (0.4: 40%)"),
    ("MatViT / MatViViT", "nested sub-models of one ViT (ViViT), each used alone at a fixed width: the baseline MoNE must beat at equal FLOPs"),
    ("MoD", "Mixture-of-Depths: tokens skip whole blocks instead of running at a smaller width"),
    ("isoFLOPs", "trained for as many FLOPs as the dense model, so for more steps"),
    ("arm", "one model setting of a comparison, trained at every seed"),
    ("paired seeds", "both arms trained at the same seed: the same data order and the same initial weights"),
    ("twin", "a run retrained with the same config and seed on another device"),
    ("plateau", "a run whose training loss stayed near chance: it tests no method"),
    ("family-wise", "Holm's correction over every trained claim with 3 or more seeds, at 5%"),
]


def family(claim_id: str) -> str | None:
  """The family (`FAMILIES`) a claim id belongs to, None for none (arithmetic or timing ids)."""
  return next((name for name, (prefixes, _) in FAMILIES.items() if claim_id.startswith(prefixes)), None)


def _ids(cs) -> str:
  return ", ".join(f"`{c['id']}`" for c in cs)


def family_lines(trained: list[dict]) -> list[str]:
  """One plain line per family: how many of its trained claims reproduce, are ruled out or are
  open (counted with the pre-registered verdict, `claims.counted_verdict`), and which way each
  open claim with an interval points (`claims.would_decide`: its mean's side)."""
  lines = []
  for name, (prefixes, where) in FAMILIES.items():
    cs = [c for c in trained if c["id"].startswith(prefixes)]
    if not cs:
      continue
    by = {v: [c for c in cs if claims_lib.counted_verdict(c) == v] for v in claims_lib.VERDICTS}
    openly = by["inconclusive"] + by["not testable"]
    toward = [c for c in openly if c.get("ci95") and claims_lib.would_decide(c) == "reproduced"]
    against = [c for c in openly if c.get("ci95") and claims_lib.would_decide(c) == "not reproduced"]
    parts = [f"**{name}** ({where}; {len(cs)} trained claims): "
             + (f"{len(by['reproduced'])} reproduced ({_ids(by['reproduced'])})" if by["reproduced"] else "none reproduced")
             + (f", {len(by['not reproduced'])} ruled out ({_ids(by['not reproduced'])})" if by["not reproduced"] else ", none ruled out")
             + f", {len(openly)} open."]
    if toward or against:
      parts.append("Of the open ones with an interval, the mean lies on the paper's side for " + " and against it for ".join(
          (f"{len(toward)}", f"{len(against)} ({_ids(against)})")) + ".")
    lines.append(" ".join(parts))
  return lines


def training_context(root: Path) -> str:
  """What a reader needs beside the headline: it compares models at equal training steps, as the
  paper does, while on this profile more training helps every model (chapter 03's files: MatViT
  at full width against the dense ViT, and the isoFLOPs MoNE run). Empty where chapter 03 has not
  written them."""
  path = root / "03_figure3_images" / "matvit.json"
  metrics = root / "03_figure3_images" / "metrics.json"
  if not path.is_file() or not metrics.is_file():
    return ""
  m = json.loads(path.read_text())
  full = [r for r in m["against_dense"] if r["label"] == "MatViT"]
  times = {r["label"]: r["x_dense"] for r in m["training_compute"]}
  points = {r["label"]: r for r in json.loads(metrics.read_text())["points"] if r.get("e_c") in (None, 0.2)}
  out = "The headline compares models trained for the same number of steps, as the paper does; on this profile more training helps every model:"
  if full and full[-1].get("ci_low") is not None:
    r = full[-1]
    out += (f" MatViT at full width, trained with {times.get('MatViT', float('nan')):.1f}x the dense ViT's FLOPs, is "
            f"{r['minus_dense']:+.2f} points above it (95% CI [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}], {r['n_seeds']} seeds)")
  iso, vit = points.get("MoNE-isoFLOPs"), points.get("ViT")
  if iso and vit:
    out += (f"; MoNE at $e_c$ = {iso['e_c']} trained isoFLOPs (as many training FLOPs as the dense ViT, so more steps) "
            f"reaches {iso['accuracy_pct']:.1f}% against the dense ViT's {vit['accuracy_pct']:.1f}% ({iso['n_seeds']} seed)")
  return out + ". So an equal-step comparison favours the models that compute more per step."


def compact_table(trained: list[dict], doc_prefix: str = "notebooks/") -> str:
  """One row per trained claim, by family: the claim (its id, linking to its chapter), the paper's
  words, the difference with its 95% CI and seeds, and the verdict (pre-registered where the claim's
  definition changed after its plan) with the family-wise verdict."""
  label = claims_lib.VERDICT_LABEL
  out = ["| Claim | Paper | MoNE minus baseline [95% CI], seeds | Verdict (family-wise) |", "|---|---|---|---|"]
  for name in FAMILIES:
    for c in trained:
      if family(c["id"]) != name:
        continue
      shown = claims_lib.counted(c)
      diff = claims_lib._fmt(shown["measured"], shown.get("unit", "")) + (f" {claims_lib._ci(shown)}" if shown.get("ci95") else "")
      verdict = label[claims_lib.counted_verdict(c)] + (" (pre-registered)" if "plan_deviation" in c else "") \
          + (" (exploratory)" if c.get("exploratory") else "")
      link = f"[`{c['id']}`]({doc_prefix}{c['chapter']}.ipynb)" if c.get("chapter") else f"`{c['id']}`"
      fw = c.get("verdict_familywise")
      cells = [link, str(c["paper"]), f"{diff}, {c['n_seeds'] or '-'}", verdict + (f" ({fw})" if fw else "")]
      out.append("| " + " | ".join(s.replace("|", "\\|").replace("\n", " ") for s in cells) + " |")
  return "\n".join(out) + "\n"


def landing(root: Path | None = None, figure: str | None = None, tables: str = "claims") -> str:
  """The landing page's answer (book/verdicts.md, included by the book's root page): the families'
  lines, the headline with its training context, a glossary, the forest plot at `figure` (a path
  relative to the page), the compact table, the deviations from the plan, and a link to the full
  tables (the page `tables`)."""
  root = Path(root) if root is not None else results.results_root()
  chapters = significance.annotate(claims_lib.load(root))
  everything = [{**c, "chapter": chapter} for chapter, cs in chapters.items() for c in cs]
  trained = [c for c in everything if c["kind"] == "trained"]
  out = [line + "\n" for line in family_lines(trained)]
  head = next((c for c in trained if c["id"] == claims_lib.HEADLINE), None)
  if head and head.get("ci95"):
    n = head.get("seeds_to_decide")
    out.append(f"**The headline**, \"{head['claim']}\": {claims_lib._fmt(head['measured'], 'points')} "
               f"(95% CI {claims_lib._ci(head)}, {head['n_seeds']} seeds), {head['verdict']}"
               + (f"; about {n} seeds would decide it with 80% power at this mean and spread.\n" if n else ".\n"))
  if context := training_context(root):
    out.append(context + "\n")
  out.append("**Words used below.** " + "; ".join(f"*{term}*: {meaning}" for term, meaning in GLOSSARY) + ".\n")
  if figure:
    out.append(f"![The trained claims: mean difference and 95% CI, by verdict]({figure})\n")
  out.append(compact_table(trained))
  out.append(f"{claims_lib.counts_by_kind(everything)} Every claim with its p-value, the seeds for 80% power and its "
             f"chapter's caveats, chapter by chapter: [every claim]({tables}.md).\n")
  if changed := [c for c in everything if "plan_deviation" in c]:
    out.append(f"**Deviations from the plan.** {len(changed)} planned claim{'s' * (len(changed) != 1)} "
               f"({_ids(changed)}) changed {'their' if len(changed) != 1 else 'its'} definition after the plan fixed it: "
               f"the table shows and counts the plan's result (marked *pre-registered*); [every claim]({tables}.md) sets "
               "the changed result beside it, with what changed, why and when.\n")
  return "\n".join(out)


def readme_block(root: Path | None = None) -> str:
  """The README's answer, between its `<!-- answer:start -->` and `<!-- answer:end -->` lines: the
  families' lines and the headline, linking to the full tables, a page of plain Markdown tables."""
  root = Path(root) if root is not None else results.results_root()
  trained = [c for cs in significance.annotate(claims_lib.load(root)).values() for c in cs if c["kind"] == "trained"]
  lines = "\n\n".join(family_lines(trained))
  head = next((c for c in trained if c["id"] == claims_lib.HEADLINE), None)
  headline = (f"\n\nThe headline, \"{head['claim']}\": {claims_lib._fmt(head['measured'], 'points')} (95% CI "
              f"{claims_lib._ci(head)}, {head['n_seeds']} seeds), {head['verdict']}." if head and head.get("ci95") else "")
  return (f"![The trained claims: mean difference and 95% CI, by verdict](results/{claims_lib.LANDING_FIGURE})\n\n"
          f"{lines}{headline} Every claim, with its CI and chapter: [book/claims.md](book/claims.md).\n")
