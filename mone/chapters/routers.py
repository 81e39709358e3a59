"""What trained routers do (Figures 1, 6c and 7): router outputs on test examples, thresholds,
and how well a token selection overlaps the objects.

The full expert's router logit or probability per token (`router_importance`), the tokens above a
threshold on it (Fig. 1), and how well a token selection overlaps the ground-truth object tokens
of the cluttered digits (`overlap`), against the exact expectation for a router that picks the
same number of tokens at random (`random_router_baseline`; the paper's Fig. 6c / 7 comparison,
as a number). Tokens are always in patch order (row-major over the patch grid), as the models' `aux`.
"""
import scipy.stats

import numpy as np

# A token is an object token if at least this fraction of its pixels are the labelled
# digit's own stroke pixels (`mone.data.digits` masks strokes, not a bounding box): 2 of the 16
# pixels of a 4x4 patch. About 19% of the small profile's tokens qualify.
OBJECT_FRACTION = 0.125


def eval_examples(cfg, num: int) -> dict:
  """The first `num` test examples of cfg's dataset as stored: uint8 'image' [n, H, W, 3],
  'label' and, for the embedded digits, the object 'mask' [n, H, W]."""
  # The data and model stacks (skimage, PIL, JAX) are imported where they are used: the claims
  # command imports this module (`preregistration` reads OBJECT_FRACTION) in the book's
  # environment, which has neither.
  from mone.data import sources
  source = sources.source(cfg, "test")
  return dict(source.get_batch(np.arange(min(num, len(source)))))


def _model_input(images):
  images = np.asarray(images)
  if images.dtype == np.uint8:  # as the input pipeline normalises
    return images.astype(np.float32) / np.float32(127.5) - 1
  return images.astype(np.float32)


def router_outputs(params, cfg, images, e_c: float | None = None, batch_size: int = 256, logits: bool = False):
  """First router of a MoNE model on images (uint8, or float in [-1, 1]):
  (router_probs float32 [n, N, E], assignment int32 [n, N]), tokens in patch order and
  experts from 0 (smallest) to E-1 (the full model). The assignment is EPR's at inference
  capacity e_c (default: the training e_c); the probabilities do not depend on e_c. logits: also
  return the router's logits [n, N, E] (before the softmax over experts), third."""
  import jax

  from mone.train import steps  # the model stack: see `eval_examples`
  e_c = cfg.e_c if e_c is None else e_c
  if e_c is None:
    raise ValueError("e_c is needed for an adaptively trained model (cfg.e_c is None)")
  budget = cfg.budget(e_c)
  model = steps.build_model(cfg)

  @jax.jit
  def forward(params, x, key):
    _, aux = model.apply({"params": params}, x, budget.capacities, drop_smallest=budget.drop_smallest,
                         rngs={"routing": key})
    return aux["router_probs"], aux["assignment"], aux["router_logits"]

  x = _model_input(images)
  key = jax.random.key(cfg.seed + 2)  # as mone.train.evaluation.evaluate: the random router's draw
  probs, assignment, raw = [], [], []
  for i in range(0, len(x), batch_size):
    chunk = x[i:i + batch_size]
    pad = batch_size - len(chunk) if len(x) > batch_size else 0  # one static shape per call
    p, a, l = forward(params, np.concatenate([chunk, np.repeat(chunk[:1], pad, 0)]), key)
    probs.append(np.asarray(p)[:len(chunk)])
    assignment.append(np.asarray(a)[:len(chunk)])
    raw.append(np.asarray(l)[:len(chunk)])
  out = np.concatenate(probs), np.concatenate(assignment)
  return (*out, np.concatenate(raw)) if logits else out


# What Figure 1 ranks tokens by: the paper thresholds "MoNE's router logits" (the full expert's
# logit); Expert Preferred Routing fills the full expert by its probability, a softmax over the
# experts' logits, whose order can differ. Chapter 01 decides its claim on the paper's score and
# shows the other beside it.
SCORES = ("logit", "probability")


def router_importance(params, cfg, images, score: str = "logit") -> np.ndarray:
  """Per-token importance [n, N] as MoNE perceives it: the first router's score for the full
  expert, its logit (the paper's Fig. 1) or its probability (the score by which EPR fills the
  full expert first, Algorithm 1)."""
  if score not in SCORES:
    raise ValueError(f"score must be one of {SCORES}, got {score!r}")
  probs, _, logits = router_outputs(params, cfg, images, logits=True)
  return (logits if score == "logit" else probs)[..., -1]


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


def token_mask(mask, patch: int) -> np.ndarray:
  """Per-token object coverage of images: float32 [n, N] from masks bool [n, H, W]
  (`mone.data.digits.token_mask`)."""
  from mone.data import digits  # the data stack: see `eval_examples`
  return digits.token_mask(np.asarray(mask), patch)


def video_token_mask(mask, tubelet: int, patch: int) -> np.ndarray:
  """Per-token object coverage of clips: float32 [n, T', N] from per-frame masks
  bool [n, T, H, W], a tubelet token's coverage being the mean over its `tubelet` frames (as
  `token_mask` per frame). Index [:, t] matches the routing of temporal index t."""
  mask = np.asarray(mask)
  n, t, h, w = mask.shape
  if tubelet < 1 or t % tubelet:
    raise ValueError(f"tubelet must divide the number of frames {t}, got {tubelet!r}")
  per_frame = token_mask(mask.reshape(n * t, h, w), patch).reshape(n, t // tubelet, tubelet, -1)
  return per_frame.mean(axis=2)


def object_tokens(object_mask, min_fraction: float = OBJECT_FRACTION) -> np.ndarray:
  """bool [n, N] object tokens from per-token object coverage (`mone.data.digits.token_mask`);
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

  object_mask: per-token object coverage float [n, N] (`mone.data.digits.token_mask`; a token
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


def overlap_rows(selected: dict, object_tokens) -> list[dict]:
  """`overlap` of each router's selection (name -> bool [n, N]) with the object tokens, and a
  last row 'random (expected)': a random choice of as many tokens as the first router's."""
  rows = [{"router": name, **overlap(sel, object_tokens)} for name, sel in selected.items()]
  first = next(iter(selected.values()))
  return rows + [{"router": "random (expected)", **random_router_baseline(object_tokens, first.sum(-1))}]


def expert_object_share(assignment, object_mask, num_experts: int, min_fraction: float = OBJECT_FRACTION) -> list[dict]:
  """Where a router sends the object tokens, pooled over images: for each nested expert (0 =
  the smallest), the percentage of all tokens it processes ('tokens_pct'), the percentage of its
  tokens that are object tokens ('object_share_pct': a router blind to the object gives every
  expert the base rate, 'object_pct'), and the percentage of all object tokens it receives
  ('gets_object_pct').

  Figure 1 ranks tokens by the full expert's probability alone; this says whether a router that
  does not put the object there separates it at all, and in which experts.
  assignment: int [n, N], EPR's expert per token (`router_outputs`); object_mask as `overlap`."""
  a = np.asarray(assignment)
  o = object_tokens(object_mask, min_fraction)
  if a.shape != o.shape:
    raise ValueError(f"assignment {a.shape} and object_mask {o.shape} must have the same shape")
  if not isinstance(num_experts, int) or num_experts < 1:
    raise ValueError(f"num_experts must be a positive int, got {num_experts!r}")
  if a.size and (a.min() < 0 or a.max() >= num_experts):
    raise ValueError(f"assignment must hold experts in [0, {num_experts - 1}], got [{a.min()}, {a.max()}]")
  rows = []
  for e in range(num_experts):
    mine = a == e
    rows.append({"expert": e, "tokens_pct": 100 * float(mine.mean()),
                 "object_share_pct": 100 * float(_ratio(o[mine].sum(), mine.sum())),
                 "gets_object_pct": 100 * float(_ratio(o[mine].sum(), o.sum())), "object_pct": 100 * float(o.mean())})
  return rows


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
