"""What the figure notebooks compute: shared run configs, curve summaries and router analysis.

Three groups of functions:

* Runs shared between notebooks. Every image notebook builds its MoNE configs with
  `mone_config`, which evaluates each run on the same grid of inference capacities, so the
  run at e_c=0.4 is trained once and reused (through `mone.experiments.run`'s cache) by
  Figures 1, 3, 5 and 7.
* Accuracy-vs-FLOPs curves: `points` turns a run's metrics into plot points, and
  `adaptation_summary` Fig. 5's curves into drops. (Claims and their verdicts: `mone.claims`.)
* Router analysis: the full expert's router probability per token (`router_importance`),
  the tokens above a threshold on it (Fig. 1), and how well a token selection overlaps the
  ground-truth object tokens of the cluttered digits (`overlap`), against the exact
  expectation for a router that picks the same number of tokens at random
  (`random_router_baseline`; the paper's Fig. 6c / 7 comparison, as a number).

Tokens are always in patch order (row-major over the patch grid), as the models' `aux`.
"""
import csv
import dataclasses
import io
import math

import numpy as np
import scipy.stats

from mone import experiments, results

# Inference capacities every MoNE run is evaluated at (Fig. 5's grid). It must contain every
# training e_c the notebooks use, so that each model is evaluated at the others' capacities;
# smoke trains and evaluates at 0.3 and 0.4 only, so that CI compiles few programs.
EVAL_GRID = {"smoke": (0.3, 0.4),
             "small": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
             "paper": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)}

# A token is an object token if at least this fraction of its pixels are the labelled
# digit's own stroke pixels (`mone.digits` masks strokes, not a bounding box): 2 of the 16
# pixels of a 4x4 patch. About 19% of the small profile's tokens qualify.
OBJECT_FRACTION = 0.125

# A run whose training loss never fell below this fraction of ln K (K classes; ln K is the
# loss of a uniform guess) never left the initial plateau (see `left_plateau`).
PLATEAU_FRACTION = 0.9


# ------------------------------------------------------------- shared runs ---


def mone_config(profile: str, e_c: float | None, data_dir: str = "", task: str | None = None,
                **overrides):
  """The MoNE config of a profile at training capacity e_c (None with adaptive=True),
  evaluated on EVAL_GRID[profile]: on images, or on the video `task` ('temporal' or
  'appearance'). Notebooks that agree on (profile, task, e_c, overrides) share one run."""
  experiments.check_profile(profile)
  base = experiments.image_config if task is None else (
      lambda *a, **kw: experiments.video_config(a[0], task, *a[1:], **kw))
  return base(profile, data_dir, kind="mone", e_c=e_c, eval_e_c=EVAL_GRID[profile], **overrides)


def points(metrics: dict, all_capacities: bool = False) -> list[dict]:
  """Plot points {label, kind, e_c, width_index, gflops, accuracy_pct} of one finished run.

  MatViT gives one point per nested width; a fixed-capacity MoNE run gives its training
  capacity only, unless all_capacities (every evaluated e_c, as Fig. 5 needs; an adaptive
  run always gives all); ViT and MoD give their one model. Accuracy is in percent.
  """
  cfg, learned = _config_dict(metrics), left_plateau(metrics)
  evals = metrics["evals"]
  if metrics["kind"] == "mone" and not cfg["adaptive"] and not all_capacities:
    evals = [ev for ev in evals if ev["e_c"] == cfg["e_c"]]
  return [{"kind": metrics["kind"], "variant": cfg["model"]["name"], "train_e_c": cfg["e_c"],
           "adaptive": cfg["adaptive"], "iso_flops": cfg["iso_flops"], "e_c": ev["e_c"],
           "width_index": ev["width_index"], "gflops": ev["gflops"],
           "accuracy_pct": 100.0 * ev["accuracy"], "learned": learned} for ev in evals]


def _config_dict(metrics: dict) -> dict:
  cfg = metrics["config"]
  return cfg if isinstance(cfg, dict) else dataclasses.asdict(cfg)  # straight from train.train


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


def adaptation_claims(summary: dict, domain: str, seed: int, learned: bool = True) -> list[dict]:
  """Fig. 5's three claims for one domain ('images' or 'video') from `adaptation_summary`:
  a model's own drop grows with the shift, is steeper from high to low capacity (at the
  shifts both directions have), and one adaptive model is within 1 point of the model trained
  at each capacity. One seed per model: `mone.claims` decides them over seeds."""
  from mone import claims
  by_shift, out = summary["by_shift"], []
  grows = (f"fig5.{domain}.drop_grows_with_shift", f"{domain}: a model's own accuracy drop is larger at the largest "
           "shift of its budget than at the smallest (points)", "declines with extreme shifts")
  out.append(claims.trained(*grows, {seed: by_shift[max(by_shift)] - by_shift[min(by_shift)]}, relation="beats",
                            tolerance=0.0, learned=learned) if len(by_shift) > 1 else
             claims.not_testable(*grows, "trained", "one shift size"))
  steeper = (f"fig5.{domain}.steeper_high_to_low", f"{domain}: the drop is larger from high to low capacity than from low "
             "to high, at equal shifts (points)", "degradation steeper from high to low capacity")
  out.append(claims.trained(*steeper, {seed: summary["down"] - summary["up"]}, relation="beats", tolerance=0.0, learned=learned)
             if summary["matched_shifts"] else claims.not_testable(*steeper, "trained", "no shift in both directions"))
  adaptive = (f"fig5.{domain}.adaptive_serves_every_budget", f"{domain}: one adaptively trained model is at most 1 point less "
              "accurate than the model trained at each capacity (the worst capacity)", "adapts extremely well (Fig. 5b)")
  out.append(claims.trained(*adaptive, {seed: min(summary["adaptive"].values())}, relation="no_worse", tolerance=1.0,
                            learned=learned) if summary["adaptive"] else
             claims.not_testable(*adaptive, "trained", "no adaptive model"))
  return out


def save_table(rows: list[dict], notebook: str, name: str):
  """Writes rows (dicts with the same keys) as results/<notebook>/<name>.csv."""
  buf = io.StringIO()
  writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
  writer.writeheader()
  writer.writerows(rows)
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
  markdown = "\n".join([md_row(columns), "|" + "---|" * len(columns)] + [md_row(r) for r in cells[1:]]) + "\n"
  return Table(text, markdown)


def quiet_notebook():
  """Silences two messages that would land in every executed notebook, with local paths in
  them: tqdm's "IProgress not found" warning (`mone.train` imports tqdm.auto, and the
  environment has no ipywidgets) and orbax's warnings on opening a checkpoint read-only."""
  import logging
  import warnings
  warnings.filterwarnings("ignore", message="IProgress not found")
  logging.getLogger("absl").setLevel(logging.ERROR)


# ------------------------------------------------------------ router outputs ---


def eval_examples(cfg, num: int) -> dict:
  """The first `num` test examples of cfg's dataset as stored: uint8 'image' [n, H, W, 3],
  'label' and, for the embedded digits, the object 'mask' [n, H, W]."""
  from mone import train
  source = train.data_sources(cfg)[1]
  return dict(source.get_batch(np.arange(min(num, len(source)))))


def _model_input(images):
  images = np.asarray(images)
  if images.dtype == np.uint8:  # as the input pipeline normalises
    return images.astype(np.float32) / np.float32(127.5) - 1
  return images.astype(np.float32)


def router_outputs(params, cfg, images, e_c: float | None = None, batch_size: int = 256):
  """First router of a MoNE model on images (uint8, or float in [-1, 1]):
  (router_probs float32 [n, N, E], assignment int32 [n, N]), tokens in patch order and
  experts from 0 (smallest) to E-1 (the full model). The assignment is EPR's at inference
  capacity e_c (default: the training e_c); the probabilities do not depend on e_c."""
  import jax
  from mone import train
  e_c = cfg.e_c if e_c is None else e_c
  if e_c is None:
    raise ValueError("e_c is needed for an adaptively trained model (cfg.e_c is None)")
  budget = cfg.budget(e_c)
  model = train.build_model(cfg)

  @jax.jit
  def forward(params, x, key):
    _, aux = model.apply({"params": params}, x, budget.capacities, drop_smallest=budget.drop_smallest,
                         rngs={"routing": key})
    return aux["router_probs"], aux["assignment"]

  x = _model_input(images)
  key = jax.random.key(cfg.seed + 2)  # as mone.train.evaluate: the random router's draw
  probs, assignment = [], []
  for i in range(0, len(x), batch_size):
    chunk = x[i:i + batch_size]
    pad = batch_size - len(chunk) if len(x) > batch_size else 0  # one static shape per call
    p, a = forward(params, np.concatenate([chunk, np.repeat(chunk[:1], pad, 0)]), key)
    probs.append(np.asarray(p)[:len(chunk)])
    assignment.append(np.asarray(a)[:len(chunk)])
  return np.concatenate(probs), np.concatenate(assignment)


def router_importance(params, cfg, images) -> np.ndarray:
  """Per-token importance [n, N] as MoNE perceives it: the router's probability for the full
  expert, the score by which EPR fills the full expert first (Algorithm 1; Fig. 1)."""
  probs, _ = router_outputs(params, cfg, images)
  return probs[..., -1]


def tokens_above_threshold(importance, q: float) -> np.ndarray:
  """Tokens whose importance is above the per-image q-quantile: bool [..., N] with exactly
  round((1 - q) N) tokens per image, the highest-scoring (ties to the earlier patch).

  Raising q processes fewer tokens with the full model (Fig. 1, left to right); the tokens
  kept at q are what EPR gives the full expert at capacity c_E = 1 - q.
  """
  if not 0 <= q <= 1:
    raise ValueError(f"q must be in [0, 1], got {q}")
  importance = np.asarray(importance)
  n = importance.shape[-1]
  k = int(round((1 - q) * n))
  rank = np.argsort(np.argsort(-importance, axis=-1, kind="stable"), axis=-1, kind="stable")
  return rank < k


def video_token_mask(mask, tubelet: int, patch: int) -> np.ndarray:
  """Per-token object coverage of clips: float32 [n, T', N] from per-frame masks
  bool [n, T, H, W], a tubelet token's coverage being the mean over its `tubelet` frames (as
  `mone.digits.token_mask` per frame). Index [:, t] matches the routing of temporal index t."""
  from mone import digits
  mask = np.asarray(mask)
  n, t, h, w = mask.shape
  if tubelet < 1 or t % tubelet:
    raise ValueError(f"tubelet must divide the number of frames {t}, got {tubelet!r}")
  per_frame = digits.token_mask(mask.reshape(n * t, h, w), patch).reshape(n, t // tubelet, tubelet, -1)
  return per_frame.mean(axis=2)


def object_tokens(object_mask, min_fraction: float = OBJECT_FRACTION) -> np.ndarray:
  """bool [n, N] object tokens from per-token object coverage (`mone.digits.token_mask`);
  a bool mask passes through unchanged."""
  object_mask = np.asarray(object_mask)
  if object_mask.dtype == bool:
    return object_mask
  if not 0 < min_fraction <= 1:
    raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction}")
  return object_mask >= min_fraction


def _ratio(num, den):
  num, den = np.asarray(num, float), np.asarray(den, float)
  return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den > 0)


def _mean(x) -> float:
  x = np.asarray(x, float)
  return float(np.nanmean(x)) if np.any(np.isfinite(x)) else float("nan")


def overlap(selected, object_mask, min_fraction: float = OBJECT_FRACTION) -> dict:
  """How well selected tokens (bool [n, N]) cover the object tokens.

  object_mask: per-token object coverage float [n, N] (`mone.digits.token_mask`; a token
  is an object token if coverage >= min_fraction) or bool object tokens.
  With #X the number of tokens in X, returns the means over images of IoU = #(S and O) / #(S or O),
  precision = #(S and O) / #S and recall = #(S and O) / #O (an image where a ratio is 0/0 is left out of that mean), and the
  mean fractions of tokens selected and of object tokens.
  """
  s = np.asarray(selected, bool)
  o = object_tokens(object_mask, min_fraction)
  if s.shape != o.shape:
    raise ValueError(f"selected {s.shape} and object_mask {o.shape} must have the same shape")
  inter, union = (s & o).sum(-1), (s | o).sum(-1)
  return {"iou": _mean(_ratio(inter, union)), "precision": _mean(_ratio(inter, s.sum(-1))),
          "recall": _mean(_ratio(inter, o.sum(-1))), "selected_fraction": float(s.mean()),
          "object_fraction": float(o.mean())}


def random_router_baseline(object_mask, num_selected, min_fraction: float = OBJECT_FRACTION) -> dict:
  """Expected `overlap` scores of a router that picks num_selected tokens per image uniformly
  at random (the random router of Sec. 6 under the same capacities), computed exactly.

  With N tokens, m object tokens and k selected, the overlap X is hypergeometric(N, m, k):
  E[precision] = m / N, E[recall] = k / N and E[IoU] = sum_x P(X = x) x / (k + m - x).
  num_selected: an int or one count per image.
  """
  o = object_tokens(object_mask, min_fraction)
  n_img, n_tok = o.shape
  m = o.sum(-1)
  k = np.broadcast_to(np.asarray(num_selected, int), (n_img,))
  if np.any(k < 0) or np.any(k > n_tok):
    raise ValueError(f"num_selected must be in [0, {n_tok}], got {num_selected!r}")
  iou = np.full(n_img, np.nan)
  for i in range(n_img):
    if k[i] + m[i] == 0:
      continue
    x = np.arange(min(k[i], m[i]) + 1)
    pmf = scipy.stats.hypergeom.pmf(x, n_tok, m[i], k[i])
    iou[i] = np.sum(pmf * x / (k[i] + m[i] - x))
  return {"iou": _mean(iou), "precision": _mean(np.where(k > 0, m / n_tok, np.nan)),
          "recall": _mean(_ratio(k * (m > 0), n_tok * (m > 0))),
          "selected_fraction": float(k.mean() / n_tok), "object_fraction": float(o.mean())}


# ----------------------------------------------------------------- overlays ---


def upsample_token_map(values, image_size: int, patch: int) -> np.ndarray:
  """Per-token values [..., N] (patch order) -> per-pixel [..., image_size, image_size]."""
  values = np.asarray(values)
  g = image_size // patch
  if image_size % patch or values.shape[-1] != g * g:
    raise ValueError(f"values must have {g * g} tokens for image_size={image_size} and "
                     f"patch={patch}, got shape {values.shape}")
  grid = values.reshape(*values.shape[:-1], g, g)
  return np.repeat(np.repeat(grid, patch, axis=-2), patch, axis=-1)


def highlight_tokens(image, selected, patch: int, dim: float = 0.35) -> np.ndarray:
  """image (uint8 [H, W, 3]) as float in [0, 1] with unselected tokens (bool [N]) faded
  towards white, as in the paper's Figs. 1 and 7. Clipped to [0, 1]: float rounding would
  otherwise put a faded white pixel a hair above 1, and matplotlib warns on every such image."""
  img = np.asarray(image, np.float32) / (255.0 if np.asarray(image).dtype == np.uint8 else 1.0)
  keep = upsample_token_map(np.asarray(selected, np.float32), img.shape[0], patch)[..., None]
  return np.clip(img * (keep + (1 - keep) * dim) + (1 - keep) * (1 - dim), 0.0, 1.0)
