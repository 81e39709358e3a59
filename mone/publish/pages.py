"""The book's generated pages: the landing answer and the README's, every claim's table, and the
verdicts that changed between two results folders.

A reader comes to the landing page with one question: does MoNE buy accuracy per FLOP, as the
paper says? So the page answers by family of claims, the paper's central question first
(`FAMILIES`): what reproduces, what is open and which way the open claims point; then the
context a skeptic needs beside the headline (on this profile more training helps every model,
`training_context`), a glossary, the forest plot and one compact table. The full tables, chapter
by chapter, are their own page (`tables_page`, book/claims.md); `changes` sets two results
folders' verdicts side by side (book/first_profile_changes.md, book/seed_plan_changes.md).

Everything here is computed from results/<chapter>/claims.json (`claims.load`, annotated by
`significance.annotate`) and the chapter files named below; nothing is typed.
"""
import json
import re
from pathlib import Path

import numpy as np

from mone import results
from mone.evidence import claims as claims_lib
from mone.evidence import declarations, significance, verdicts
from mone.configs.arms import Arm

LANDING_FIGURE = "landing.png"  # under the results folder: `claim_plots.landing_figure`

def __getattr__(name):
  """`FAMILIES`: {family: (claim-id prefixes, where the paper shows it)}, the paper's three questions
  by claim id prefix, the central one first, generated from the chapters' declarations."""
  if name == "FAMILIES":
    return declarations.families()
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
  return next((name for name, (prefixes, _) in declarations.families().items() if claim_id.startswith(prefixes)), None)


def _ids(cs) -> str:
  return ", ".join(f"`{c['id']}`" for c in cs)


def family_lines(trained: list[dict]) -> list[str]:
  """One plain line per family: how many of its trained claims reproduce, are ruled out or are
  open (counted with the pre-registered verdict, `claims.counted_verdict`), and which way each
  open claim with an interval points (`claims.would_decide`: its mean's side)."""
  lines = []
  for name, (prefixes, where) in declarations.families().items():
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


def wall_clock_line(claims: list[dict], doc_prefix: str = "notebooks/", gpu: dict | None = None) -> str:
  """One line on speed (kind 'timing'): the paper's wall-clock claims as tested on this repository's
  machine, each with its mean, interval and verdict, then what the committed GPU runs show (`gpu`:
  chapter 08's `speed.gpu_ranges`, in its metrics.json) and where they are read. Empty where no
  chapter tested one."""
  ts = [c for c in claims if c["kind"] == "timing"]
  if not ts:
    return ""
  each = "; ".join(f"`{c['id']}` {verdicts.fmt_value(c['measured'], c.get('unit', ''))} {verdicts.fmt_ci(c)}: "
                   f"{c['verdict']}" if c.get("measured") is not None else f"`{c['id']}`: {c['verdict']} (not measured yet)"
                   for c in ts)
  chapter = next((c["chapter"] for c in ts if c.get("chapter")), None)
  span = lambda lo_hi: f"{lo_hi[0]:.2f}-{lo_hi[1]:.2f}x"
  where = ""
  if gpu and "forward" in gpu:
    where = (f" On {' and '.join(d.removeprefix('1 x NVIDIA ').split(' ')[0] for d in gpu['devices'])} GPUs (one process "
             f"each): MoNE's forward at {span(gpu['forward']['speedup'])} the dense speed with "
             f"{span(gpu['forward']['flop_ratio'])} fewer FLOPs"
             + (f", its training step at {span(gpu['train']['speedup'])}" if "train" in gpu else "") + ".")
  if chapter:
    where += f" [Chapter 08]({doc_prefix}{chapter}.ipynb) reads both."
  return (f"**Wall-clock** (the paper's V100 timings, tested on a 2-core CPU over three benchmark processes): "
          f"{verdicts.counts(ts)}. {each}.{where}")


def _gpu(root: Path) -> dict | None:
  """Chapter 08's summary of the committed GPU runs (`speed.gpu_ranges`), None where it has none."""
  path = root / "08_wallclock_speed" / "metrics.json"
  return json.loads(path.read_text()).get("gpu") if path.exists() else None


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
  full = [r for r in m["against_dense"] if r["label"] == Arm("image", "matvit").curve]
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
  label = verdicts.VERDICT_LABEL
  # Every trained difference is in points: the header says so once, and each cell stays short
  # enough not to wrap in the page's narrow column.
  out = ["| Claim | Paper | MoNE minus baseline, points [95% CI], seeds | Verdict (family-wise) |", "|---|---|---|---|"]
  for name in declarations.families():
    for c in trained:
      if family(c["id"]) != name:
        continue
      shown = claims_lib.counted(c)
      diff = verdicts.fmt_value(shown["measured"], shown.get("unit", "")).removesuffix(" points") \
          + (f" {verdicts.fmt_ci(shown)}" if shown.get("ci95") else "")
      verdict = label[claims_lib.counted_verdict(c)] + (" (pre-registered)" if "plan_deviation" in c else "") \
          + (" (exploratory)" if c.get("exploratory") else "")
      link = f"[`{c['id']}`]({doc_prefix}{c['chapter']}.ipynb)" if c.get("chapter") else f"`{c['id']}`"
      fw = c.get("verdict_familywise")
      cells = [link, str(c["paper"]), f"{diff}, {c['n_seeds'] or '-'}", verdict + (f" ({fw})" if fw else "")]
      out.append("| " + " | ".join(s.replace("|", "\\|").replace("\n", " ") for s in cells) + " |")
  return "\n".join(out) + "\n"


def _answer(root: Path) -> tuple[list[dict], list[dict], dict | None]:
  """(every claim of root's chapters, each with its chapter and significance; the trained ones; the
  headline claim or None): what the landing page and the README answer with."""
  chapters = significance.annotate(claims_lib.load(root))
  everything = [{**c, "chapter": chapter} for chapter, cs in chapters.items() for c in cs]
  trained = [c for c in everything if c["kind"] == "trained"]
  return everything, trained, next((c for c in trained if c["id"] == claims_lib.HEADLINE), None)


def _answer_lines(everything: list[dict], root: Path, doc_prefix: str) -> list[str]:
  """The families' lines and the wall-clock line, with links to the chapters under doc_prefix."""
  trained = [c for c in everything if c["kind"] == "trained"]
  return [line for line in family_lines(trained) + [wall_clock_line(everything, doc_prefix, _gpu(root))] if line]


def landing(root: Path | None = None, figure: str | None = None, tables: str = "claims") -> str:
  """The landing page's answer (book/verdicts.md, included by the book's root page): the headline,
  the families' lines, the headline's training context, a glossary, the forest plot at `figure` (a path
  relative to the page), the compact table, the deviations from the plan, and a link to the full
  tables (the page `tables`)."""
  root = Path(root) if root is not None else results.results_root()
  everything, trained, head = _answer(root)
  out = []
  if head and head.get("ci95"):  # first, so that the page's first screen answers the paper's headline
    n = head.get("seeds_to_decide")
    out.append(f"**The headline**, \"{head['claim']}\": {verdicts.fmt_value(head['measured'], 'points')} "
               f"(95% CI {verdicts.fmt_ci(head)}, {head['n_seeds']} seeds), {head['verdict']}"
               + (f"; about {n} seeds would decide it with 80% power at this mean and spread.\n" if n else ".\n"))
  out += [line + "\n" for line in _answer_lines(everything, root, "notebooks/")]
  if context := training_context(root):
    out.append(context + "\n")
  out.append("**Words used below.** " + "; ".join(f"*{term}*: {meaning}" for term, meaning in GLOSSARY) + ".\n")
  if figure:
    out.append(f"![The trained claims: mean difference and 95% CI, by verdict]({figure})\n")
  out.append(compact_table(trained))
  out.append(f"{verdicts.counts_by_kind(everything)} Every claim with its p-value, the seeds for 80% power and its "
             f"chapter's caveats, chapter by chapter: [every claim]({tables}.md).\n")
  if changed := [c for c in everything if "plan_deviation" in c]:
    out.append(f"**Deviations from the plan.** {len(changed)} planned claim{'s' * (len(changed) != 1)} "
               f"({_ids(changed)}) changed {'their' if len(changed) != 1 else 'its'} definition after the plan fixed it: "
               f"the table shows and counts the plan's result (marked *pre-registered*); [every claim]({tables}.md) sets "
               "the changed result beside it, with what changed, why and when.\n")
  return "\n".join(out)


def readme_block(root: Path | None = None) -> str:
  """The README's answer, between its `<!-- answer:start -->` and `<!-- answer:end -->` lines: the
  headline in words first, then the figure and the families' lines, every claim id a link to its
  chapter, and a link to the full tables, a page of plain Markdown tables."""
  root = Path(root) if root is not None else results.results_root()
  everything, _, head = _answer(root)
  prefix = "book/notebooks/"
  lines = "\n\n".join(linked_ids(line, everything, prefix) for line in _answer_lines(everything, root, prefix))
  headline = (f"**The headline.** The paper: \"{head['claim']}\". This profile: "
              f"{verdicts.fmt_value(head['measured'], 'points')} (95% CI {verdicts.fmt_ci(head)}, {head['n_seeds']} seeds), "
              f"{head['verdict']}.\n\n" if head and head.get("ci95") else "")
  return (f"{headline}![The trained claims: mean difference and 95% CI, by verdict](results/{LANDING_FIGURE})\n\n"
          f"{lines}\n\nEvery claim, with its CI and chapter: [book/claims.md](book/claims.md).\n")


def linked_ids(text: str, claims: list[dict], prefix: str) -> str:
  """text with each claim id in backticks made a link to its chapter (`prefix<chapter>.ipynb`): a
  reader meets an id only as a way to the claim."""
  chapter = {c["id"]: c["chapter"] for c in claims if "chapter" in c}
  return re.sub(r"`([\w.]+)`", lambda m: f"[`{m.group(1)}`]({prefix}{chapter[m.group(1)]}.ipynb)"
                if m.group(1) in chapter else m.group(0), text)


def _title(chapter: str) -> str:
  """A chapter's title: the first heading of notebooks/<chapter>.ipynb, else its name."""
  path = results.REPO / "notebooks" / f"{chapter}.ipynb"
  if path.exists():
    first = "".join(json.loads(path.read_text())["cells"][0]["source"]).splitlines()[0]
    if first.startswith("# "):
      return first[2:].strip()
  return chapter


# Where p-values appear: which test each relation's p-value is, and what `seeds_to_decide` estimates.
P_VALUE_SENTENCE = (
    "Each p-value is that of the test the interval performs: for \"beats\" a t-test against 0 (against the tolerance "
    "where the claim is ruled out), for \"no worse\" a t-test against minus the tolerance, for \"matches\" the larger of "
    "two one-sided tests against ±tolerance (TOST); so a \"matches\" or \"no worse\" claim far from its band can show "
    "p = 1. \"About N seeds for 80% power\" is the number of paired seeds at which the interval would decide the claim "
    "the way its mean points in 80% of simulated repetitions, if its mean and spread were the truth.")


def answer(claims: list[dict]) -> str:
  """Two or three sentences that answer 'does MoNE hold up on this profile?', generated from
  the claims (with their family-wise verdicts, `significance.annotate`): how many trained
  comparisons are reproduced, ruled out and open, and what the headline comparison shows."""
  trained = [c for c in claims if c["kind"] == "trained"]
  n = {v: sum(claims_lib.counted_verdict(c) == v for c in trained) for v in claims_lib.VERDICTS}
  fw = sum(c.get("verdict_familywise") == "reproduced" for c in trained)
  untestable = f", {n['not testable']} of them not testable yet" if n["not testable"] else ""
  out = (f"Of the paper's {len(trained)} claims that need trained models, this profile reproduces {n['reproduced']}, "
         f"rules out {n['not reproduced']} and leaves {n['inconclusive'] + n['not testable']} open{untestable}; "
         f"counted family-wise (Holm over the claims with 3 or more seeds), {fw} {'holds' if fw == 1 else 'hold'}.")
  head = next((c for c in trained if c["id"] == claims_lib.HEADLINE), None)
  if head and head.get("ci95"):
    out += (f" The headline claim, \"{head['claim']}\", measures {verdicts.fmt_value(head['measured'], 'points')} "
            f"(95% CI {verdicts.fmt_ci(head)}, {head['n_seeds']} seeds): {head['verdict']}. " + (head.get("note") or ""))
  return out.strip()


def tables_page(root: Path | None = None, doc_prefix: str = "notebooks/", figure: str | None = None) -> str:
  """The page of every claim (book/claims.md; the landing page answers first, `landing`):
  the answer (`answer`, and the figure at `figure`, a path relative to the page, where given), the
  tally by kind of claim, then every claim of every chapter, grouped by chapter (under the heading,
  the chapter's caveats, `claims.write_caveats`), each id linking to its chapter in plain Markdown, so
  that the page reads on a code host too. Generated, never typed: `python -m mone.chapters claims
  book/verdicts.md --tables book/claims.md`."""
  chapters, caveats = significance.annotate(claims_lib.load(root)), claims_lib.load_caveats(root)
  everything = [c for cs in chapters.values() for c in cs]
  out = ["# Every claim, chapter by chapter\n"]
  if figure:
    out.append(f"![Every trained claim: mean difference and 95% CI, by verdict]({figure})\n")
  out.append(answer(everything) + "\n")
  out.append(f"{verdicts.counts_by_kind(everything)}\n")
  if table := deviations_table(everything):
    out.append("**Deviations from the plan.** A planned claim whose definition changed after its plan was fixed is "
               "counted with the plan's definition; its result as changed stands beside it.\n\n" + table)
  out.append(f"Generated from the {len(chapters)} chapters' `results/<chapter>/claims.json` ({len(everything)} claims). "
             f"A trained comparison is decided from its seeds (the 95% CI of MoNE minus the baseline); with fewer than "
             f"{claims_lib.MIN_SEEDS} seeds it is inconclusive. {pairing_sentence(everything)} The family-wise verdict keeps a "
             "verdict only where Holm's procedure over every trained claim keeps its test (`mone.evidence.significance`). "
             f"{P_VALUE_SENTENCE}\n")
  for chapter, cs in chapters.items():
    out.append(f"\n**[{_title(chapter)}]({doc_prefix}{chapter}.ipynb)**: {verdicts.chapter_counts(cs)}\n")
    if caveats.get(chapter):
      out.append(verdicts.caveat_lines(caveats[chapter]).rstrip("\n") + "\n")
    out.append(verdicts.markdown_table(cs, link=f"{doc_prefix}{chapter}"))
  return "\n".join(out)


def deviations_table(claims: list[dict]) -> str:
  """A Markdown table of every claim whose definition changed after its plan (`plan_deviation`):
  what changed, why, when relative to the data, and its result with the plan's definition beside
  its result as changed. Empty where none did."""
  rows = [c for c in claims if "plan_deviation" in c]
  if not rows:
    return ""
  out = ["| Claim | What changed, why, when | Pre-registered | As changed |", "| --- | --- | --- | --- |"]
  for c in rows:
    d, pre = c["plan_deviation"], c["plan_deviation"]["preregistered"]
    cell = lambda x: (f"{verdicts.VERDICT_LABEL[x['verdict']]}: {verdicts.fmt_value(x['measured'], x.get('unit', ''))}, "
                      f"95% CI {verdicts.fmt_ci(x)}, {x['n_seeds']} seeds")
    out.append("| " + " | ".join(s.replace("|", "\\|") for s in (
        f"`{c['id']}`", f"{d['what']} ({d['plan']}). Why: {d['why']}. When: {d['when']}.", cell(pre), cell(c))) + " |")
  return "\n".join(out) + "\n"


def pairing_sentence(claims: list[dict]) -> str:
  """How the trained claims' intervals pair their seeds (`claims.PAIRING`): the rule, the claims whose
  interval is unpaired (`test` 'welch') and why, those whose design calls for it but whose chapter
  gave only differences, and the arms' median correlation across seeds where claims record it."""
  welch, pending = {}, []  # as the claims record it: the interval each claim's verdict rests on
  for c in claims:
    if c["kind"] == "trained" and c.get("test") == "welch":
      welch.setdefault(c["test_why"], []).append(f"`{c['id']}`")
    elif c["kind"] == "trained" and claims_lib.pairing(c["id"])[0] == "welch":
      pending.append(f"`{c['id']}`")
  out = ("Paired or unpaired is decided by the design of each family of claims, never by which interval decides "
         "(`claims.PAIRING`): paired where a seed gives both arms the same data order and identical initial weights "
         "for the parameters they share, or where both quantities come from one trained model")
  out += "; " + "; ".join(f"Welch's unpaired interval for {', '.join(v)}, since {why}" for why, v in welch.items()) if welch else ""
  if pending:
    out += (f". The design of {', '.join(pending)} calls for Welch's unpaired interval (its arms share nothing through "
            "their seed), but its chapter records only the per-seed differences: it is still decided paired")
  rs = [c["arm_correlation"] for c in claims if c.get("arm_correlation") is not None]
  if rs:
    out += (f". For information, the arms correlate across seeds with a median r of {float(np.median(rs)):+.2f} over the "
            f"{len(rs)} claims whose chapters record both arms (`arm_correlation` in claims.json)")
  return out + "."


def replace_block(text: str, block: str, start: str = "<!-- answer:start -->", end: str = "<!-- answer:end -->") -> str:
  """text with what lies between the lines `start` and `end` replaced by block; text unchanged
  where it lacks either marker."""
  i, j = text.find(start), text.find(end)
  if i < 0 or j < i:
    return text
  return text[:i + len(start)] + "\n" + block.rstrip("\n") + "\n" + text[j:]


def changes(old: dict[str, list[dict]], new: dict[str, list[dict]]) -> str:
  """A Markdown table of every claim in either set ({chapter: claims}, as `claims.load` returns), in
  chapter order: its verdict and measurement (CI, seeds) in `old` and in `new`, and whether the
  verdict changed, and whether the claim's test changed (its relation, tolerance, margin or threshold: a
  verdict can then change without any new measurement) or only its wording. For comparing two
  profiles' results (`python -m mone.chapters claims --compare`): a reader sees where a retraining turned a verdict,
  whichever way, and what it rests on."""
  test = lambda c: (c.get("relation"), c.get("tolerance"), c.get("margin", 0.0), c.get("threshold"))
  rows, seen, changed, retested = [], set(), 0, 0
  for chapter in sorted(set(old) | set(new)):
    before = {c["id"]: c for c in old.get(chapter, [])}
    after = {c["id"]: c for c in new.get(chapter, [])}
    for ident in list(before) + [i for i in after if i not in before]:
      if ident in seen:
        raise ValueError(f"claim id {ident!r} appears in more than one chapter")
      seen.add(ident)
      a, b = before.get(ident), after.get(ident)
      cell = lambda c: (f"{verdicts.VERDICT_LABEL[c['verdict']]}: {verdicts.measured_cell(c)}".replace("|", "\\|")
                        if c else "(no such claim)")
      both = a is not None and b is not None
      same = both and a["verdict"] == b["verdict"]
      retest = both and test(a) != test(b)
      why = " (the test changed)" if retest else " (reworded)" if both and a["claim"] != b["claim"] else ""
      changed, retested = changed + (not same), retested + (retest and not same)
      rows.append(f"| `{ident}` | {cell(a)} | {cell(b)} | {'same' if same else '**changed**'}{why} |".replace("\n", " "))
  head = (f"{len(rows)} claims, {changed} with a different verdict"
          + (f", {retested} of them because the claim's test changed" if retested else "") + ".\n\n"
          "| Claim | Before | After | Verdict |\n| --- | --- | --- | --- |\n")
  return head + "\n".join(rows) + "\n"
