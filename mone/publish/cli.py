"""The chapters' command line: `python -m mone.chapters COMMAND ...`, one subcommand per page or
file written outside a notebook::

  claims OUT [--tables PAGE] [--figures] [--readme README]   the landing page, every claim's table,
                                                            the landing figure, README's answer
  claims OUT --compare OLD_RESULTS [--kind K] [--compare-figure PNG --labels BEFORE AFTER]
                                                            the verdicts that changed between two results folders
  devices OUT                                               the device-effect page (book/devices.md)
  throughput OUT                                            the training-throughput page (book/training_throughput.md)
  recalibration-page OUT [--replaced PAGE]                  the next profile's calibration page (book/calibration.md)
                                                            and the calibrations it replaced (book/calibration_replaced.md)
  speed OUT [--results DIR]                                 chapter 08's measurements in full (book/speed_investigations.md)
  readout OUT --plan PLAN [--figure PNG]                    a seed plan's frozen claims: as planned, as
                                                            expected and as its seeds decide them
  headlines                                                 every headline claim of the finished runs
  calibration [--name NAME] [--kind KIND] [--figure]        the calibration tables of a config's runs
  seed-plan OUT [--amend | --ten]                           a pre-registered seed plan, as JSON

Each command reads the committed results (or $MONE_RESULTS_DIR, or --results) and rewrites a file
only where its text changes. Nothing here imports a training stack: the book's environment has none.
"""
import argparse
import json
import os
from pathlib import Path

from mone import results
from mone.evidence import claims, preregistration, seed_plans, significance, verdicts
from mone.plotting import claim_plots
from mone.chapters import calibration, chapter, devices, headlines, speed_investigations, training_speed
from mone.publish import pages, plan_readout, recalibration_page
from mone.runs import plan, recalibration
from mone.models import kinds


def _write_if_changed(path: Path, text: str) -> None:
  """Writes text atomically where it differs from the file: a rerun leaves every file untouched."""
  if not path.exists() or path.read_text() != text:
    results.atomic_write_text(path, text)


def claims_command(args) -> None:
  """The landing page (`pages.landing`) and, as asked, every claim's table (`pages.tables_page`),
  the landing figure (`claim_plots.landing_figure`) and README's answer (`pages.readme_block`),
  after each chapter's claims.json is rewritten with the family-wise verdicts and p-values of
  them all; or, with --compare, the table of verdict changes between two results folders
  (`pages.changes`) and its figure (`claim_plots.compare_figure`)."""
  if args.compare_figure and not args.compare:
    args.parser.error("--compare-figure draws a comparison: give --compare OLD_RESULTS too")
  if args.compare:
    if not any(Path(args.compare).glob("*/claims.json")):
      raise SystemExit(f"--compare: no */claims.json under {args.compare}")
    # Annotated anew, so that both columns' p-values and seeds for 80% power come from today's code.
    old, new = significance.annotate(claims.load(args.compare)), significance.annotate(claims.load(args.results))
    if args.kind:
      old, new = claims.of_kind(old, args.kind), claims.of_kind(new, args.kind)
    _write_if_changed(Path(args.out), pages.changes(old, new))
    if args.compare_figure:
      claim_plots.compare_figure(old, new, args.compare_figure, *args.labels)
    return
  root = Path(args.results) if args.results else results.results_root()
  if problems := preregistration.check_plans(root):  # before any page is written from a claim a plan froze
    raise SystemExit("\n".join(problems))
  # Holm needs every chapter's claims: the family-wise verdicts and p-values go back into each file.
  for chapter, cs in significance.annotate(claims.load(root)).items():
    _write_if_changed(root / chapter / "claims.json",
                      json.dumps(results.rounded(results.jsonable(claims.rounded(cs))), indent=1, sort_keys=True) + "\n")
  if args.figures:
    claim_plots.landing_figure([c for cs in claims.load(root).values() for c in cs], root / pages.LANDING_FIGURE)
  figure = os.path.relpath(root / pages.LANDING_FIGURE, Path(args.out).resolve().parent)
  tables = Path(args.tables).stem if args.tables else "claims"
  _write_if_changed(Path(args.out), pages.landing(root, figure if (root / pages.LANDING_FIGURE).exists() else None, tables))
  if args.tables:
    _write_if_changed(Path(args.tables), pages.tables_page(root))
  if args.readme and Path(args.readme).exists():
    _write_if_changed(Path(args.readme), pages.replace_block(Path(args.readme).read_text(), pages.readme_block(root)))


def devices_command(args) -> None:
  """The device-effect page (`devices.write_page`); with the repository's results (or
  $MONE_RESULTS_DIR), also where every arm trained and where the seed plan stands, over the seeds
  the chapters read (`plan.seeds`)."""
  if args.results is None:
    landed, seeds, note = headlines.landed(), plan.seeds("small"), plan.progress_note(plan.progress())
  else:
    landed, seeds, note = None, None, ""
  devices.write_page(args.out, args.results, landed, seeds, note)


def readout_command(args) -> None:
  """The readout of a seed plan that freezes its claims (`plan_readout.table`) and, once the
  chapters decide them at the plan's seeds, each claim's interval as planned and as decided
  (`claim_plots.compare_figure`)."""
  root = Path(args.results) if args.results else results.results_root()
  plan_path = Path(args.plan)
  if not plan_path.is_file():
    raise SystemExit(f"--plan: no seed plan at {plan_path}")
  frozen = results.read_json(plan_path)
  if not preregistration.freezes_definitions(frozen):
    raise SystemExit(f"--plan: {plan_path} freezes no claim's definition (a plan written by `seed-plan --ten` does)")
  chapters = significance.annotate(claims.load(root))
  try:
    text = plan_readout.table(frozen, chapters, plan_readout.landed(frozen, root), plan_path.name)
    decided = plan_readout.decided(frozen, chapters, plan_path.name)
  except ValueError as e:  # a frozen claim changed, unrecorded: nothing is written
    raise SystemExit(f"--plan: {e}") from None
  if args.figure and decided:
    before, after = plan_readout.labels(frozen)
    claim_plots.compare_figure(plan_readout.planned_claims(frozen), plan_readout.by_chapter(frozen, decided),
                               args.figure, before, after,
                               title=f"Every claim {plan_path.name} froze: {before} as planned and {after}")
    figure = os.path.relpath(Path(args.figure).resolve(), Path(args.out).resolve().parent)
    text += (f"\n![Each frozen claim's mean and 95% CI as planned and as decided]({figure})\n")
  _write_if_changed(Path(args.out), text)


def headlines_command(args) -> None:
  """Every headline claim (`headlines.headline_claims`) at the seeds the chapters read
  (`plan.seeds`: the extra seeds only once all have landed)."""
  every = headlines.landed()
  runs = [r for r in every if r[1] in plan.seeds("small")]
  print(f"{len(every)} of {len(plan.runs())} planned runs landed; claims over the seeds the chapters read "
        f"({', '.join(map(str, plan.seeds('small')))}) that trained both arms:\n")
  print(verdicts.markdown_table(headlines.headline_claims(runs)))


def calibration_command(args) -> None:
  """`calibration.table` for the committed calibration runs of a config (default digits64's dense
  ViT), `calibration.discrimination_table` where MatViT runs of the same setups are committed, and,
  with --figure, their learning curves in results/calibration/<name>-<kind>.png/.svg."""
  runs_dir = results.results_root() / "runs"
  paths = results.run_files(runs_dir, args.name, args.kind)
  runs = [m for m in (json.loads(p.read_text()) for p in paths)
          if m.get("curve") and m["curve"][-1].get("val_accuracy") is not None]
  if not runs:
    raise SystemExit(f"no finished {args.name} ({args.kind}) run with a validation curve under {runs_dir}")
  runs = sorted(runs, key=lambda m: (m["train_steps"], m["config"]["num_train"], m["config"]["weight_decay"],
                                     m["config"].get("video_noise", 0.0)))
  print(calibration.table(runs))
  matvit_kind = next(k.name for k in kinds.KINDS.values() if isinstance(k, kinds.MatViT))
  matvit = [json.loads(p.read_text()) for p in results.run_files(runs_dir, args.name, matvit_kind)]
  if kinds.is_dense(kinds.of_run({"kind": args.kind})) and calibration.is_video(runs[0]["config"]) and calibration.pairs(runs + matvit):
    print(calibration.discrimination_table(runs + matvit, calibration.validation_records()))  # the temporal task's question
  if args.figure:
    fig = calibration.figure(runs, f"Calibration of {args.name} ({args.kind}): validation (solid) and training images (dashed)")
    for path in chapter.save_figure(fig, "calibration", f"{args.name}-{args.kind}"):
      print(f"wrote {path}")


def recalibration_pages_command(args) -> None:
  """The calibration page and, on a page of its own, the calibrations it replaced."""
  replaced = recalibration_page.replaced_path(args.out, args.replaced)
  _write_if_changed(Path(args.out), recalibration_page.page(out=args.out, replaced=replaced))
  _write_if_changed(replaced, recalibration_page.replaced_page(out=replaced))


def recalibration_command(args) -> None:
  """Writes each calibration's file (results/calibration_v*.json) where it is missing (a frozen one
  must be unchanged) and prints where each task of the current calibration stands."""
  try:
    written = recalibration.write()
  except ValueError as e:
    raise SystemExit(f"error: {e}") from None
  print(("wrote the missing ones of" if written else "unchanged:") + " "
        + ", ".join(str(results.RESULTS / cal.file) for cal in recalibration.ALL))
  print(recalibration.status())


def seed_plan_command(args) -> None:
  """The five-seed plan (`seed_plans.seed_plan`), its device amendment (--amend:
  `seed_plans.amendment`, added to the plan as written) or the ten-seed plan (--ten:
  `seed_plans.ten_seed_plan`), as JSON."""
  if args.ten:
    results.atomic_write_json(args.out, seed_plans.ten_seed_plan(significance.annotate(claims.load())))
    print(f"wrote {args.out}: {len(plan.ten_seed_runs())} runs at seeds {list(plan.SEEDS_TO_TEN)}")
  elif args.amend:
    rows = devices.twins()
    written = results.read_json(args.out)
    amendment = seed_plans.amendment({"twins": rows, **devices.summary(rows, None)})
    results.atomic_write_json(args.out, {**written, "amendment": amendment})
    print(f"amended {args.out}: {len(plan.twin_runs())} CPU twins")
  else:
    results.atomic_write_json(args.out, seed_plans.seed_plan(claims.load()))
    print(f"wrote {args.out}: {len(plan.extra_runs())} runs at seeds {list(plan.EXTRA_SEEDS)}")


def parser() -> argparse.ArgumentParser:
  ap = argparse.ArgumentParser(prog="python -m mone.chapters", description=__doc__.split("\n\n")[0],
                               formatter_class=argparse.RawDescriptionHelpFormatter)
  sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
  results_help = "results folder (default: the repository's, or $MONE_RESULTS_DIR)"

  p = sub.add_parser("claims", help="the landing page from results/*/claims.json, or the verdicts that changed",
                     description="Writes the landing page's verdict table from results/*/claims.json "
                                 "(or, with --compare, the verdicts that changed between two results folders).")
  p.add_argument("out", help="Markdown file to write (book/verdicts.md)")
  p.add_argument("--results", default=None, help=results_help)
  p.add_argument("--compare", metavar="OLD_RESULTS", default=None,
                 help="write instead the table of verdict changes from OLD_RESULTS' claims to --results' (`pages.changes`)")
  p.add_argument("--kind", choices=claims.KINDS, default=None,
                 help="with --compare: only the claims of this kind (e.g. trained: what more seeds can move)")
  p.add_argument("--compare-figure", metavar="PNG", default=None,
                 help="with --compare: also draw each claim's interval before and after (`claim_plots.compare_figure`; "
                      "needs matplotlib)")
  p.add_argument("--labels", nargs=2, metavar=("BEFORE", "AFTER"), default=("before", "after"),
                 help="with --compare-figure: what the two results folders are, for its legend")
  p.add_argument("--figures", action="store_true",
                 help=f"also draw the landing figure (results/{pages.LANDING_FIGURE}; needs matplotlib)")
  p.add_argument("--tables", metavar="PAGE", default=None,
                 help="also write every claim's table, chapter by chapter (`pages.tables_page`), e.g. book/claims.md")
  p.add_argument("--readme", metavar="README", default=None,
                 help="also rewrite the answer between README's <!-- answer:start --> and <!-- answer:end --> lines")
  p.set_defaults(run=claims_command, parser=p)

  p = sub.add_parser("devices", help="the device-effect page, from the twin run files",
                     description="The device-effect page, from the twin run files.")
  p.add_argument("out", help="the Markdown page to write, e.g. book/devices.md")
  p.add_argument("--results", default=None, help=results_help)
  p.set_defaults(run=devices_command)

  p = sub.add_parser("throughput", help="the training-throughput page, from results/bench/cpu-training.json",
                     description="The training-throughput page, from the committed benchmark file.")
  p.add_argument("out", help="the Markdown page to write, e.g. book/training_throughput.md")
  p.set_defaults(run=lambda args: _write_if_changed(Path(args.out), training_speed.page_at(args.out)))

  p = sub.add_parser("recalibration-page", help="the next profile's calibration: every candidate's validation curves "
                     "and its runs against the frozen rules", description=recalibration_page.__doc__.split("\n\n")[0])
  p.add_argument("out", help="the Markdown page to write, e.g. book/calibration.md")
  p.add_argument("--replaced", metavar="PAGE", default=None,
                 help=f"the page of the calibrations it replaced (default: {recalibration_page.REPLACED_PAGE} beside OUT)")
  p.set_defaults(run=recalibration_pages_command)

  p = sub.add_parser("speed", help="chapter 08's measurements in full, from results/bench/",
                     description=speed_investigations.__doc__.split("\n\n")[0])
  p.add_argument("out", help="the Markdown page to write, e.g. book/speed_investigations.md")
  p.add_argument("--results", default=None, help=results_help)
  p.set_defaults(run=lambda args: speed_investigations.write_page(args.out, args.results))

  p = sub.add_parser("readout", help="a seed plan's frozen claims: as planned, as expected, as decided",
                     description=plan_readout.__doc__.split("\n\n")[0])
  p.add_argument("out", help="the Markdown table to write, e.g. book/ten_seed_readout.md")
  p.add_argument("--plan", required=True, help="a seed plan that freezes its claims, e.g. results/seed_plan_10.json")
  p.add_argument("--figure", metavar="PNG", default=None,
                 help="once the chapters read the plan's seeds, also draw each claim's interval as planned and as "
                      "decided (needs matplotlib)")
  p.add_argument("--results", default=None, help=results_help)
  p.set_defaults(run=readout_command)

  p = sub.add_parser("headlines", help="where the headline claims stand, from the landed run files",
                     description=headlines.__doc__.split("\n\n")[0])
  p.set_defaults(run=headlines_command)

  p = sub.add_parser("calibration", help="the calibration tables of a config's committed runs",
                     description="The calibration table of a profile's dense runs (results/runs/).")
  p.add_argument("--name", default="digits64", help="config name of the runs (default: digits64)")
  p.add_argument("--kind", default="vit", choices=kinds.NAMES, help="model kind (default: vit)")
  p.add_argument("--figure", action="store_true", help="also draw the runs' learning curves under results/calibration/")
  p.set_defaults(run=calibration_command)

  p = sub.add_parser("recalibration", help="freeze the next profile's calibrations (results/calibration_v*.json) "
                                            "and show where its runs stand",
                     description=recalibration.__doc__.split("\n\n")[0])
  p.set_defaults(run=recalibration_command)

  p = sub.add_parser("seed-plan", help="write a pre-registered seed plan as JSON",
                     description="Write the pre-registered seed plan (seed_plans.seed_plan) as JSON; --amend adds "
                                 "the device amendment to an existing plan, leaving the rest as written.")
  p.add_argument("out", help="where to write it, e.g. results/seed_plan.json")
  p.add_argument("--amend", action="store_true")
  p.add_argument("--ten", action="store_true", help="write the ten-seed plan (seed_plans.ten_seed_plan) instead")
  p.set_defaults(run=seed_plan_command)
  return ap


def main(argv=None) -> None:
  args = parser().parse_args(argv)
  args.run(args)
