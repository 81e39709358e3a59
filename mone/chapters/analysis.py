"""What the figure notebooks compute from run files: shared run configs, curve summaries, tables.

* Runs shared between notebooks. Every image notebook builds its MoNE configs with
  `mone_config`, which evaluates each run on the same grid of inference capacities, so the
  run at e_c=0.4 is trained once and reused (through `mone.runs.experiments.run`'s cache) by
  Figures 1, 3, 5 and 7.
* Accuracy-vs-FLOPs curves: `points` turns a run's metrics into plot points, `mean_curves`
  averages them over seeds, and `adaptation_summary` Fig. 5's curves into drops. (Claims and their
  verdicts: `mone.evidence.claims`; what trained routers do: `mone.chapters.routers`.)
"""
import csv
import dataclasses
import io
import math

import numpy as np

from mone import results
from mone.evidence import claims, declarations
from mone.runs import experiments
from mone.data.moving_digits import temporal_factors
from mone.models import kinds

# A run whose training loss never fell below this fraction of ln K (K classes; ln K is the
# loss of a uniform guess) never left the initial plateau (see `left_plateau`).
PLATEAU_FRACTION = 0.9


def points(metrics: dict, all_capacities: bool = False) -> list[dict]:
  """Plot points {label, kind, e_c, width_index, gflops, accuracy_pct} of one finished run.

  MatViT gives one point per nested width; a fixed-capacity MoNE run gives its training
  capacity only, unless all_capacities (every evaluated e_c, as Fig. 5 needs; an adaptive
  run always gives all); ViT and MoD give their one model. Accuracy is in percent.
  """
  cfg, learned = _config_dict(metrics), left_plateau(metrics)
  evals = metrics["evals"]
  if kinds.of_run(metrics).routed and not cfg["adaptive"] and not all_capacities:
    evals = [ev for ev in evals if ev["e_c"] == cfg["e_c"]]
  return [{"kind": metrics["kind"], "variant": cfg["model"]["name"], "train_e_c": cfg["e_c"],
           "adaptive": cfg["adaptive"], "iso_flops": cfg["iso_flops"], "e_c": ev["e_c"],
           "width_index": ev["width_index"], "gflops": ev["gflops"],
           "accuracy_pct": 100.0 * ev["accuracy"], "learned": learned} for ev in evals]


def mean_curves(by_seed: dict) -> dict:
  """{(panel, model): points} averaged over the seeds that trained each point (`by_seed`: {seed:
  {(panel, model): points}}, as `mone.evidence.comparisons` takes them): per point (the same e_c
  and width), accuracy_pct is the mean over seeds, with accuracy_min, accuracy_max and n_seeds
  beside it. A point's FLOPs do not depend on the seed; the lowest seed's point gives the rest."""
  grouped = {}
  for seed in sorted(by_seed):
    for key, pts in by_seed[seed].items():
      for p in pts:
        grouped.setdefault(key, {}).setdefault((p["e_c"], p["width_index"]), []).append(p)
  out = {}
  for key, at in grouped.items():
    out[key] = []
    for ps in at.values():
      acc = [p["accuracy_pct"] for p in ps]
      out[key].append({**ps[0], "accuracy_pct": sum(acc) / len(acc), "accuracy_min": min(acc),
                       "accuracy_max": max(acc), "n_seeds": len(acc),
                       "learned": all(p["learned"] is not False for p in ps)})
  return out


def _config_dict(metrics: dict) -> dict:
  cfg = metrics["config"]
  return cfg if isinstance(cfg, dict) else dataclasses.asdict(cfg)  # straight from loop.train


def plateau_exit(metrics: dict) -> int | None:
  """The first logged step whose training loss is below PLATEAU_FRACTION * ln K, the loss of
  a uniform guess over K classes (None: never, or no history).

  Small ViViTs on the temporal video task with a zero-initialised classifier sit at ln K for
  a long and run-dependent number of steps before they start to learn (the same config left
  it after ~1,000 steps in one run and never in 3,000 in another; see notebook 04)."""
  num_classes = _config_dict(metrics)["model"]["num_classes"]
  return next((step for step, loss in metrics.get("history") or ()
               if loss < PLATEAU_FRACTION * math.log(num_classes)), None)


def left_plateau(metrics: dict) -> bool | None:
  """Whether a run's training loss ever left the plateau (plateau_exit; None: no history).
  A run that ends on it says nothing about the method it trained: comparisons with it are
  inconclusive."""
  if not metrics.get("history"):
    return None
  return plateau_exit(metrics) is not None


def adaptation_summary(rows: list[dict], train_e_cs) -> dict:
  """Fig. 5's claims as numbers, from `points(..., all_capacities=True)` rows of models trained
  at each of train_e_cs plus one adaptive model (if present).

  With a(t, e) the accuracy of the model trained at t evaluated at e, a model's own drop
  d(t, e) = a(t, t) - a(t, e) is what moving its budget from t to e costs it: the paper's
  Fig. 5 reads each curve against its own star. (Scoring a(e, e) - a(t, e) instead compares two
  different models, and their gap at e mixes adaptation with how well each trained.) Every
  evaluated e counts, not only the training capacities. Returns the drops {(t, e): d}, the
  mean drop by shift abs(t - e) ('by_shift'), 'down' (e < t) and 'up' (e > t) as means over
  the shifts both directions have, so that neither side is favoured by larger shifts, the
  mean drop per unit of shift ('per_unit'), and 'adaptive': a_adaptive(t) - a(t, t) at
  each training t (negative: the adaptive model is behind)."""
  acc = {("adaptive" if p["adaptive"] else p["train_e_c"], p["e_c"]): p["accuracy_pct"] for p in rows}
  grid = sorted({e for (t, e) in acc})
  drops = {(t, e): acc[t, t] - acc[t, e] for t in train_e_cs for e in grid if e != t and (t, e) in acc}
  shift = lambda t, e: round(abs(t - e), 6)
  mean = lambda xs: float(np.mean(xs)) if len(xs) else float("nan")
  by_shift = {d: mean([v for (t, e), v in drops.items() if shift(t, e) == d])
              for d in sorted({shift(t, e) for t, e in drops})}
  side = lambda down, d: [v for (t, e), v in drops.items() if shift(t, e) == d and (e < t) == down]
  both = [d for d in by_shift if side(True, d) and side(False, d)]
  return {"drops": drops, "by_shift": by_shift,
          "down": mean([mean(side(True, d)) for d in both]), "up": mean([mean(side(False, d)) for d in both]),
          "matched_shifts": both, "per_unit": mean([v / shift(t, e) for (t, e), v in drops.items()]),
          "adaptive": {t: acc["adaptive", t] - acc[t, t] for t in train_e_cs if ("adaptive", t) in acc}}


def adaptation_claims(summaries: dict, domain: str, learned: bool = True) -> list[dict]:
  """Fig. 5's three claims for one domain ('images' or 'video') from `adaptation_summary` at each
  seed ({seed: summary}), each decided over the seeds that have its numbers
  (`mone.evidence.claims`): a model's own drop grows with the shift, is steeper from high to low
  capacity (at the shifts both directions have), and one adaptive model is within 1 point of the
  model trained at each capacity (seeds with an adaptive model only)."""
  out = []
  grows = (f"fig5.{domain}.drop_grows_with_shift", f"{domain}: a model's own accuracy drop is larger at the largest "
           "shift of its budget than at the smallest (points)", "declines with extreme shifts")
  by_shift = {s: m["by_shift"] for s, m in summaries.items() if len(m["by_shift"]) > 1}
  out.append(claims.trained(*grows, {s: b[max(b)] - b[min(b)] for s, b in by_shift.items()}, learned=learned) if by_shift else
             claims.not_testable(*grows, "trained", "one shift size" if summaries else "no run has been trained yet"))
  steeper = (f"fig5.{domain}.steeper_high_to_low", f"{domain}: the drop is larger from high to low capacity than from low "
             "to high, at equal shifts (points)", "degradation steeper from high to low capacity")
  matched = {s: m["down"] - m["up"] for s, m in summaries.items() if m["matched_shifts"]}
  out.append(claims.trained(*steeper, matched, learned=learned)
             if matched else claims.not_testable(*steeper, "trained", "no shift in both directions" if summaries else "no run has been trained yet"))
  adaptive_id = f"fig5.{domain}.adaptive_serves_every_budget"
  adaptive = (adaptive_id, f"{domain}: one adaptively trained model is at most {declarations.rule(adaptive_id)[1]:g} point less "
              "accurate than the model trained at each capacity (the worst capacity)",
              "adapts extremely well (Fig. 5b)" if domain == "video" else "shown on SSv2 only (Fig. 5b: 'adapts extremely well')")
  worst = {s: min(m["adaptive"].values()) for s, m in summaries.items() if m["adaptive"]}
  out.append(claims.trained(*adaptive, worst, learned=learned) if worst else
             claims.not_testable(*adaptive, "trained", "no adaptive model"))
  return out


def shared_per_unit(a: dict, b: dict) -> tuple[float, float]:
  """The mean own drop per unit of shift of two `adaptation_summary` results (e.g. images and
  video) over the (train, eval) capacity pairs both have: the domains' grids differ (images are
  trained at 0.2, 0.4, 0.6, video at 0.3, 0.4), and a drop per unit over each domain's own pairs
  would compare different shifts, upward ones (which can gain accuracy) in different shares."""
  shared = sorted(set(a["drops"]) & set(b["drops"]))
  if not shared:
    raise ValueError(f"the summaries share no (train, eval) pair: {sorted(a['drops'])} and {sorted(b['drops'])}")
  per_unit = lambda s: float(np.mean([s["drops"][t, e] / abs(t - e) for t, e in shared]))
  return per_unit(a), per_unit(b)


def temporal_errors(pred, label, digit) -> dict:
  """Where a model errs on the 'temporal' task, from its predictions on clips with labels
  `label` and scrolling digits of classes `digit` [n, 2] (left, right; `make_moving_digits`):
  the error rate (%) of each factor of the label (which side scrolls first, the first digit's
  direction, the second's) and, per digit class, of the directions of digits of that class."""
  pred, label, digit = np.asarray(pred), np.asarray(label), np.asarray(digit)
  if not (pred.shape == label.shape == digit.shape[:1] and digit.shape[1:] == (2,)):
    raise ValueError(f"pred and label must be [n] and digit [n, 2], got {pred.shape}, {label.shape}, {digit.shape}")
  true, guess = temporal_factors(label), temporal_factors(pred)
  wrong = [t != g for t, g in zip(true, guess)]  # order, first direction, second direction
  rows = np.arange(len(label))
  mover = np.stack([digit[rows, true[0]], digit[rows, 1 - true[0]]])  # [2 (first, second), n] classes
  by_digit = [100 * float(np.mean(np.concatenate([wrong[1 + k][mover[k] == c] for k in (0, 1)])))
              if np.any(mover == c) else float("nan") for c in range(10)]
  return {"error_pct": 100 * float(np.mean(pred != label)), "order_error_pct": 100 * float(np.mean(wrong[0])),
          "first_direction_error_pct": 100 * float(np.mean(wrong[1])),
          "second_direction_error_pct": 100 * float(np.mean(wrong[2])), "direction_error_pct_by_digit": by_digit}


def save_table(rows: list[dict], notebook: str, name: str):
  """Writes rows (dicts with the same keys) as results/<notebook>/<name>.csv, floats at the
  precision of every results file (`results.rounded`: 84.9, not a sum's 84.89999999999999)."""
  buf = io.StringIO()
  writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
  writer.writeheader()
  writer.writerows(results.rounded(rows))
  path = experiments.results_root() / notebook / f"{name}.csv"
  results.atomic_write_text(path, buf.getvalue())
  return path


class Table(str):
  """A table that is plain text where text is shown (print, a terminal, an email) and an HTML
  table where a notebook or the book renders it (`display(table)`: its Markdown form)."""

  def __new__(cls, text: str, markdown: str):
    self = super().__new__(cls, text)
    self.markdown = markdown
    return self

  def __repr__(self):
    return str(self)

  def _repr_markdown_(self):
    return self.markdown


def format_table(rows: list[dict], columns: list[str], digits: int = 4) -> Table:
  """rows as a table of the given columns (floats to `digits` significant digits): a `Table`,
  fixed-width text that a notebook displays as an HTML table."""
  def fmt(v):
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)
  cells = [columns] + [[fmt(r.get(c, "")) for c in columns] for r in rows]
  widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
  text = "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)
  md_row = lambda row: "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
  # Headed in words (router_precision: "router precision"), so a narrow column wraps between words.
  markdown = "\n".join([md_row([c.replace("_", " ") for c in columns]), "|" + "---|" * len(columns)]
                       + [md_row(r) for r in cells[1:]]) + "\n"
  return Table(text, markdown)


def quiet_notebook():
  """Silences two messages that would land in every executed notebook, with local paths in
  them: tqdm's "IProgress not found" warning (`mone.train` imports tqdm.auto, and the
  environment has no ipywidgets) and orbax's warnings on opening a checkpoint read-only."""
  import logging
  import warnings
  warnings.filterwarnings("ignore", message="IProgress not found")
  logging.getLogger("absl").setLevel(logging.ERROR)
