"""Claims as a reader sees them: a chapter's table of verdicts, the tallies, and a notebook's
closing summary.

Each trained claim's row shows its verdict, the family-wise verdict (`mone.evidence.significance`),
the paper's number and ours: the difference with its 95% CI, the seeds and the p-value, or why the
claim is undecided. A chapter calls `show` at its end: it prints `summary` and records the table,
hidden, for the chapter's opening cell to paste, so the verdicts open the page although they are
computed at its end.
"""
import os
from pathlib import Path

from mone import results
from mone.evidence import claims as claims_lib
from mone.evidence import significance, stats

VERDICT_LABEL = {"reproduced": "**reproduced**", "not reproduced": "**not reproduced**",
                 "inconclusive": "inconclusive", "not testable": "not testable",
                 "met": "**met**", "missed": "**missed**", "within noise": "within noise"}


def fmt_value(x, unit: str = "") -> str:
  """A measured value as the tables print it: a difference in points with its sign, a ratio with
  an 'x', anything else at 4 significant digits; '-' for none."""
  if x is None:
    return "-"
  if isinstance(x, float):
    s = f"{x:+.2f}" if unit == "points" else f"{x:.4g}"
    return s + (" points" if unit == "points" else "x" if unit == "x" else unit and f" {unit}")
  return str(x)


def fmt_ci(c) -> str:
  """A claim's 95% CI as '[low, high]' (in points with their sign; a timing's or a target's at 3
  significant digits), '-' where it has none."""
  if not c.get("ci95"):
    return "-"
  lo, hi = c["ci95"]
  if c.get("kind") in ("timing", "target"):
    return f"[{lo:.3g}, {hi:.3g}]"
  return f"[{lo:+.2f}, {hi:+.2f}]"


def caveat_lines(caveats: list[str]) -> str:
  """Caveats as Markdown quotes, one paragraph each, to print above a table of claims."""
  return "".join(f"> **Caveat.** {c}\n\n" for c in caveats)


def _deviation_cell(c: dict) -> str:
  """What a changed claim's table row adds: the pre-registered result beside the published one."""
  pre = c["plan_deviation"]["preregistered"]
  p = p_cell(pre["p_value"], c["relation"], c["tolerance"], pre["verdict"]) if pre.get("p_value") is not None else ""
  return (f"Pre-registered ({c['plan_deviation']['plan']}): {VERDICT_LABEL[pre['verdict']]}, "
          f"{fmt_value(pre['measured'], pre.get('unit', ''))}, 95% CI {fmt_ci(pre)}, {pre['n_seeds']} seeds{p}. As changed after the plan "
          f"({c['plan_deviation']['what']}): ")


def p_tests(relation: str, tolerance: float, verdict: str) -> str:
  """What a verdict's p-value tests, in words (`stats.interval_p_value`): the side of the tolerance
  the interval is tested to lie on. A p-value of 1 then reads as what it is: the data point the
  other way, not 'no evidence'."""
  t = f"{tolerance:g}"
  ruled_out = verdict == "not reproduced"
  return {("beats", False): "above 0", ("beats", True): f"below +{t}" if tolerance else "below 0",
          ("no_worse", False): f"above -{t}", ("no_worse", True): f"below -{t}",
          ("matches", False): f"within ±{t}", ("matches", True): f"outside ±{t}"}[relation, ruled_out]


def p_cell(p: float, relation: str, tolerance: float, verdict: str) -> str:
  """', p = 0.077 (one-sided: above 0)': a p-value with the direction it tests."""
  return f", p = {p:.2g} (one-sided: {p_tests(relation, tolerance, verdict)})"


def against_paper(c: dict) -> str | None:
  """A plain sentence where a trained claim's difference (MoNE minus the baseline, or the quantity
  the paper says is positive) lies on the side against the paper, with its two-sided 95% interval: wholly below 0 ('measurably below'), or below
  0 on its mean with the one-sided p-value of that direction; for 'matches', wholly on one side of 0.
  None where neither holds (or the claim has no interval). The verdicts stay one-sided; this names
  evidence that they, testing the paper's direction, cannot show."""
  if c.get("kind") != "trained" or not c.get("ci95") or c.get("measured") is None:
    return None
  lo, hi = c["ci95"]
  mean, tol, unit = c["measured"], c["tolerance"], c.get("unit", "")
  shown = f"{fmt_value(mean, unit)}, two-sided 95% CI {fmt_ci(c)}"
  if c["relation"] == "matches":
    if lo > 0 or hi < 0:
      side = "above" if lo > 0 else "below"
      within = f"; within the ±{tol:g} tolerance is not ruled out" if -tol < lo and hi < tol else ""
      return f"Measurably {side} 0: {shown}{within}."
    return None
  if hi < 0:
    within = (f"; a drop within the {tol:g}-point tolerance is not ruled out"
              if c["relation"] == "no_worse" and hi > -tol else "")
    return f"Against the paper: measurably below 0, {shown}{within}."
  if mean < 0:
    seeds = c.get("per_seed_mone") if c.get("test") == "welch" else c.get("per_seed")
    below = stats.interval_p_value(*significance.interval(c), "beats", 0.0, "not reproduced") if seeds and len(seeds) > 1 else None
    p = f" (one-sided p = {below:.2g} for 'below 0')" if below is not None else ""
    return f"Leans against the paper: below 0 on average, {shown}; 0 is not ruled out{p}."
  return None


def robust_text(c: dict) -> str:
  """'Exploratory, robust to single runs, over 9 seeds: median +0.10, Hodges-Lehmann +0.05 points,
  95% CI [-1.20, +1.40]' of a claim's `robust` summaries ('' where it has none)."""
  r = c.get("robust")
  if not r:
    return ""
  ci = "" if r["hl_ci95"][0] is None else f", 95% CI [{r['hl_ci95'][0]:+.2f}, {r['hl_ci95'][1]:+.2f}] (Wilcoxon)"
  return (f"Exploratory, robust to single runs, over {r['n']} seeds: median {r['median']:+.2f}, "
          f"Hodges-Lehmann {r['hodges_lehmann']:+.2f} points{ci}")


def measured_cell(c) -> str:
  """The measured cell: value, CI and seeds (with the p-value and the seeds that would decide it,
  `mone.evidence.significance`), or why the claim is undecided. A claim with a run that never left
  chance (`never_left_chance`) shows no number computed from it as a measurement: only the frozen
  p-value, which Holm's family keeps, and the exploratory summaries over the other seeds."""
  if seeds := c.get("never_left_chance"):
    p = "" if c.get("p_value") is None else (f" The frozen analysis keeps its p-value ({c['p_value']:.2g}) in Holm's "
                                             "family, which can only make the other claims' correction stricter.")
    listed = ", ".join(map(str, seeds))
    return (f"Not a measurement: the compared run{'s' * (len(seeds) > 1)} of seed{'s' * (len(seeds) > 1)} {listed} never "
            f"left the chance plateau, so the mean over all {c['n_seeds']} seeds is no effect size.{p}"
            + (f" {robust_text(c)}." if c.get("robust") else ""))
  out = fmt_value(c["measured"], c.get("unit", ""))
  if c.get("ci95"):
    out += f", 95% CI {fmt_ci(c)}" + (" (Welch, unpaired)" if c.get("test") == "welch" else "")
  if c["n_seeds"]:
    out += f", {c['n_seeds']} seed{'s' * (c['n_seeds'] != 1)}"
  if c.get("n_runs"):
    out += f", {c['n_runs']} benchmark processes, {c['relation']} {c['threshold']:g} needed"
  if c.get("p_value") is not None:
    out += p_cell(c["p_value"], c["relation"], c["tolerance"], c["verdict"])
  if "seeds_to_decide" in c and c["verdict"] == "inconclusive" and c["n_seeds"] >= claims_lib.MIN_SEEDS:
    n = c["seeds_to_decide"]
    way = {"reproduced": "reproduce it", "not reproduced": "rule it out"}[claims_lib.would_decide(c)]
    out += (f"; about {n} seeds for 80% power to {way}" if n
            else "; more than 100 seeds for 80% power at this mean and spread")
  if c.get("why") and c["verdict"] in ("inconclusive", "not testable"):
    out += f" ({c['why']})"
  if (plain := against_paper(c)) and c["verdict"] != "not testable":
    out = _sentence(out, plain)
  if robust := robust_text(c):
    out = _sentence(out, robust)
  if c.get("kind") == "timing" and c.get("note"):  # how the timing was read (e.g. at which operating point)
    out = _sentence(out, c["note"])
  return out


def _sentence(text: str, then: str) -> str:
  """text, then the next sentence: one full stop between them, whether or not text ends with one."""
  return f"{text} {then}" if text.endswith(".") else f"{text}. {then}"


def markdown_table(claims: list[dict], link: str | None = None) -> str:
  """A Markdown (MyST) table of claims, the verdict first: verdict, family-wise verdict (Holm over
  every trained claim, `mone.evidence.significance`), claim (with its id), the paper's number,
  ours (with the 95% CI of the difference, the seeds and the p-value). link: the chapter's document path, for the landing page (each
  id then links to its chapter with a {doc} role). This repository's own speed targets (kind
  'target') are no claims of the paper: they follow in a table of their own (`target_table`)."""
  targets = [c for c in claims if c["kind"] == "target"]
  head = "| Verdict | Family-wise | Claim | Paper | Ours |\n| --- | --- | --- | --- | --- |\n"
  rows = []
  for c in (c for c in claims if c["kind"] != "target"):
    ident = f"[`{c['id']}`]({link}.ipynb)" if link else f"`{c['id']}`"
    familywise = VERDICT_LABEL[c["verdict_familywise"]] if "verdict_familywise" in c else "-"
    verdict = VERDICT_LABEL[claims_lib.counted_verdict(c)]
    ours = measured_cell(c)
    if "plan_deviation" in c:
      verdict += f" (pre-registered; as changed: {c['verdict']})"
      ours = _deviation_cell(c) + ours
    if c.get("exploratory"):
      verdict += " (exploratory)"
      ours = _sentence(ours, f"Exploratory: {c['exploratory']}")
    cells = [verdict, familywise, f"{c['claim']} ({ident})", str(c["paper"]), ours]
    rows.append(_row(cells))
  paper = head + "\n".join(rows) + "\n" if rows or not targets else ""
  return paper + ("\n" * bool(paper) + target_table(targets) if targets else "")


def _row(cells) -> str:
  return "| " + " | ".join(s.replace("|", "\\|").replace("\n", " ") for s in cells) + " |"


def target_table(targets: list[dict]) -> str:
  """This repository's speed targets (kind 'target'), apart from the paper's claims: each with its
  mean over benchmark processes, the 95% CI, every process's value, and met / missed / within noise."""
  head = (f"**This repository's own speed targets** (not the paper's; {counts(targets)}):\n\n"
          "| Verdict | Target | Mean, 95% CI | Per benchmark process |\n| --- | --- | --- | --- |\n")
  return head + "\n".join(_row([VERDICT_LABEL[c["verdict"]], f"{c['claim']} (`{c['id']}`)",
                                 f"{c['measured']:.3g}, {fmt_ci(c)}", ", ".join(f"{v:.3g}" for v in c["per_run"])])
                            for c in targets) + "\n"


# Each kind of claim the tallies count, as they name it: (label, an aside after its count). This
# repository's speed targets (kind 'target') are not the paper's claims: no tally counts them.
KIND_LABEL = {"trained": ("Trained comparisons", ""),
              "arithmetic": ("Arithmetic checks", "; they hold by construction: FLOPs, budgets"),
              "timing": ("Wall-clock claims", "; the paper's timings, measured on this repository's machine")}


def counts_by_kind(claims: list[dict]) -> str:
  """'Trained comparisons (26): 4 reproduced, ... Arithmetic checks (...): ...': the tally of each
  kind of claim apart, trained claims first (with their family-wise tally), since a check that
  holds by construction or a target of our own says nothing about the paper."""
  parts = []
  for kind in KIND_LABEL:
    cs = [c for c in claims if c["kind"] == kind]
    if not cs:
      continue
    label, aside = KIND_LABEL[kind]
    line = f"{label} ({len(cs)}{aside}): {counts(cs)}"
    if fw := significance.tally(cs):
      if n := sum(fw.values()):
        line += f"; family-wise over the {n} with 3 or more seeds (Holm, 5%): {significance.tally_text(fw)}"
        line += "".join(f" (`{c['id']}` counted by `{c['plan_deviation']['plan']}`'s definition, the one registered "
                        f"first; as changed after it, {c['plan_deviation']['what']}: {c['verdict']}, in its row)"
                        for c in cs if "plan_deviation" in c and "verdict_familywise" in c)
    parts.append(line + ".")
  return " ".join(parts)


def chapter_counts(claims: list[dict]) -> str:
  """A chapter's tally by kind of claim, short, trained claims first: 'trained: 2 reproduced,
  1 inconclusive; arithmetic: 2 reproduced' (a chapter heading's line on the landing page)."""
  return "; ".join(f"{KIND_LABEL[k][0].split()[0].lower()}: {counts(cs)}"
                   for k in KIND_LABEL if (cs := [c for c in claims if c["kind"] == k]))


def counts(claims: list[dict]) -> str:
  """'3 reproduced, 1 not reproduced, ...' over claims, in `claims.VERDICTS` order (targets': met,
  missed, within noise)."""
  n = {v: sum(claims_lib.counted_verdict(c) == v for c in claims) for v in claims_lib.VERDICTS + claims_lib.TARGET_VERDICTS}
  return ", ".join(f"{k} {v}" for v, k in n.items() if k)


def summary(claims: list[dict]) -> str:
  """One line per claim, for a notebook's closing cell: verdict, id, the measured value with
  its CI and seeds, or why it is inconclusive or not testable."""
  lines = []
  for c in claims:
    detail = fmt_value(c["measured"], c.get("unit", ""))
    if c.get("ci95"):
      detail += f", 95% CI {fmt_ci(c)}"
    if c.get("per_seed"):
      detail += f", per seed ({', '.join(map(str, c['seeds']))}): {', '.join(f'{d:+.2f}' for d in c['per_seed'])}"
    if c.get("arm_correlation") is not None:
      detail += f", arms' correlation across seeds r = {c['arm_correlation']:+.2f}"
    if c.get("why"):
      detail += f"; {c['why']}"
    lines.append(f"{c['verdict'].upper():15s} {c['id']}: {detail}")
  return "\n".join(lines)


GLUE_PREFIX = "application/papermill.record/"  # myst_nb.glue's prefix for a hidden glued output


def downloads(notebook: str, book_dir: Path | None = None) -> str:
  """A line of MyST {download} links to every file the chapter wrote under
  results/<notebook>/ (claims, metrics, CSV tables, figures), relative to the book's chapter
  pages (book/notebooks/), so that a reader can take the numbers behind a page with them.
  Empty where results go elsewhere ($MONE_RESULTS_DIR: the smoke profile, the tests), whose
  files the book does not render and whose paths must not reach a page."""
  if results.results_root().resolve() != Path(results.RESULTS).resolve():
    return ""
  folder = results.results_root() / notebook
  book_dir = Path(book_dir) if book_dir is not None else results.REPO / "book" / "notebooks"
  files = sorted(p for p in folder.glob("*") if p.is_file() and not p.name.startswith("."))
  links = [f"{{download}}`{p.name} <{os.path.relpath(p, book_dir)}>`" for p in files]
  return f"Files of this chapter (`results/{notebook}/`): " + " · ".join(links) + "\n" if links else ""


def show(claims: list[dict], notebook: str | None = None, key: str = "verdicts") -> None:
  """Prints `summary(claims)` and records their Markdown table under `key`, hidden, so that the
  chapter's opening cell can paste it (```{glue:md} verdicts``` with `:format: myst`). With
  notebook, the chapter's caveats (`claims.write_caveats`) go above the table and links to its files
  below: call it after the chapter has written them. The output is the one
  `myst_nb.glue(key, Markdown(table), display=False)` writes; myst-nb itself is not needed in
  the kernel, and the book (myst-nb) collects every glued key of a page before rendering it, so
  the table can open the page although it is computed at its end."""
  from IPython.display import display
  print(summary(claims))
  caveats = claims_lib.load_caveats().get(notebook, []) if notebook else []
  if notebook:  # with the other chapters' claims as they stand: the family-wise view needs them all
    claims = significance.annotate({**claims_lib.load(), notebook: claims})[notebook]
  md = caveat_lines(caveats) + markdown_table(claims) + ("\n" + downloads(notebook) if notebook else "")
  display({GLUE_PREFIX + "text/markdown": md, GLUE_PREFIX + "text/plain": md}, raw=True,
          metadata={"scrapbook": {"name": key, "mime_prefix": GLUE_PREFIX}})
