"""Figure 1: the tokens MoNE's router keeps for the full model as a threshold on its scores rises,
and whether they are the object's.

The paper shows Figure 1 on a few images, without a number. The cluttered digits come with object
masks, so chapter 01 also measures how many of the kept tokens are object tokens against a random
choice of as many (`routers.overlap`, `routers.random_router_baseline`), at each threshold and
seed, and `chapter_claims` decides the paper's claim from those margins. The notebook loads the
runs with `landed`, calls these functions, and plots and prints what they return.
"""
from mone.evidence import claims, preregistration
from mone.plotting import plots
from mone.chapters import analysis, headlines, routers
from mone.runs import experiments, plan
from mone.evidence.declarations import BEATS, WITHIN, Chapter, Claim
from mone.configs import figures, reads

MODEL = reads.FIGURE1_MODEL  # Figure 3's MoNE at the paper's e_c
KEEP = (1.0, 0.5, 0.25, 0.125)  # fraction of tokens the full model processes, left to right
EXAMPLES = 2000  # test images scored
CLAIM = ("fig1.top_tokens_on_object", "At every threshold, more of the tokens the router keeps for the full model "
         "are object tokens than in a random choice of as many (precision, points)", "shown qualitatively (Fig. 1)")
CHAPTER = Chapter("Figure 1", "fig1.", "Routing", (
    Claim("fig1.", WITHIN),
    Claim(CLAIM[0], metric="per seed, the smallest over the thresholds top 50%, 25%, 12.5% (tokens ranked by the full "
                           "expert's router logit) of the kept tokens' precision on object tokens minus a random choice's "
                           "expected precision (points; 2,000 test images)",
          arms=(MODEL, "a random choice of as many tokens (expected)"), rule=BEATS),
))


def landed(ch) -> tuple[dict, list[str]]:
  """Figure 3's MoNE at e_c = 0.4 over a chapter's seeds (ch: `chapter.Chapter`):
  ({seed: (metrics, config)} of the runs whose run file exists, trained here where the chapter
  trains; the labels of the planned runs not trained yet)."""
  planned = [r for r in figures.image_runs(ch.profile, ch.seeds, ch.data_dir) if r.arm == MODEL]
  runs, pending = headlines.with_configs(planned, ch.train, ch.recompute)
  return {s: run for (_, s), run in runs.items()}, pending


def examples(runs: dict) -> dict:
  """The first `EXAMPLES` test examples of the runs' dataset (`routers.eval_examples`)."""
  if not runs:
    raise ValueError("no run of Figure 3's MoNE at e_c=0.4 has been trained yet: train it first")
  return routers.eval_examples(next(iter(runs.values()))[1], EXAMPLES)


def router_scores(runs: dict, images, recompute: bool = False) -> tuple[dict, dict]:
  """Each seed's first router on images, at the training e_c: ({seed: (probabilities,
  assignment, logits)} as `routers.router_outputs`, {score: {seed: float [n, N]}}).

  The two scores of a token's importance (`routers.SCORES`): 'logit', the full expert's logit,
  which the paper thresholds and the claim is decided on, and 'probability', its softmax over the
  experts, the order in which Expert Preferred Routing fills the full expert (shown beside it)."""
  outputs = {s: routers.router_outputs(experiments.router_params(cfg, recompute, read=plan.reading), cfg, images, logits=True)
             for s, (m, cfg) in runs.items()}
  scores = {"logit": {s: logits[..., -1] for s, (_, _, logits) in outputs.items()},
            "probability": {s: probs[..., -1] for s, (probs, _, _) in outputs.items()}}
  return outputs, scores


def describe(runs: dict, num_images: int, num_tokens: int, pending: list[str]) -> str:
  """What the chapter reads: each seed's run, the test images, and the runs not trained yet."""
  lines = [f"seed {s}: MoNE {cfg.model.name} trained at e_c=0.4, top-1 {100 * m['accuracy']:.1f}% "
           f"(trained on {m['device']['kind']})" for s, (m, cfg) in runs.items()]
  return "\n".join(lines + [f"{num_images} test images, {num_tokens} tokens each"
                            + (f"; not trained yet: {'; '.join(pending)}" if pending else "")])


def token_figure(images, masks, importance, patch: int, seed: int, keep=KEEP):
  """Figure 1: four test images (rows) with the tokens above a rising threshold on `importance`
  (float [n, N]) shown in full, the top `keep` fraction of each image's tokens (columns), and the
  object's outline in red where `masks` are given."""
  import matplotlib.pyplot as plt
  plots.theme()
  fig, axes = plt.subplots(4, len(keep), figsize=(1.9 * len(keep), 7.8), squeeze=False)
  for i, row in enumerate(axes):
    for k, ax in zip(keep, row):
      kept = routers.tokens_above_threshold(importance[i], 1 - k)
      ax.imshow(routers.highlight_tokens(images[i], kept, patch))
      if masks is not None:
        ax.contour(masks[i], levels=[0.5], colors="red", linewidths=0.6)
      ax.set_xticks([]), ax.set_yticks([])
      if i == 0:
        ax.set_title("all tokens" if k == 1 else f"top {100 * k:g}%")
  fig.suptitle(f"Tokens sent to the full model at increasing thresholds on the router (seed {seed})")
  fig.tight_layout()
  return fig


def object_tokens(ex: dict, patch: int):
  """Each token's object coverage, float [n, N] (`routers.token_mask`), of examples with object
  masks (the embedded digits); None for a dataset without them (TFDS images)."""
  return routers.token_mask(ex["mask"], patch) if "mask" in ex else None


def overlap_rows(scores: dict, object_mask, keep=KEEP) -> list[dict]:
  """For each score, seed and threshold below 100%: precision, recall and IoU (in %) of the tokens
  kept for the full model against the object tokens, for the router ('router_*') and for a random
  choice of as many tokens ('random_*', exact). scores: as `router_scores`; object_mask as
  `routers.overlap`."""
  rows = []
  for score, by_seed in scores.items():
    for s, imp in by_seed.items():
      for k in keep[1:]:
        kept = routers.tokens_above_threshold(imp, 1 - k)
        learned, rnd = routers.overlap(kept, object_mask), routers.random_router_baseline(object_mask, kept.sum(-1))
        rows.append({"score": score, "seed": s, "keep": k, **{f"{name}_{m}": 100 * r[m]
                                                             for name, r in (("router", learned), ("random", rnd))
                                                             for m in ("precision", "recall", "iou")}})
  return rows


def metrics(runs: dict, rows: list[dict], pending: list[str]) -> dict:
  """The chapter's metrics.json: each seed's run (config hash) and accuracy, the overlap rows,
  the object-token threshold and the runs not trained yet."""
  return {"runs": {s: m["config_hash"] for s, (m, _) in runs.items()}, "accuracy": {s: m["accuracy"] for s, (m, _) in runs.items()},
          "object_fraction": routers.OBJECT_FRACTION, "overlap": rows, "pending": pending}


def expert_share(outputs: dict, object_mask, widths) -> tuple[list[dict], list[str]]:
  """Where EPR sends the object tokens at the training capacity, per seed
  (`routers.expert_object_share`, with 'seed' and the expert's name 'width' first), and the experts'
  names by width ('D/8', ..., 'D'). outputs: as `router_scores`; widths: the experts' widths."""
  names = [f"D/{widths[-1] // w}" if w < widths[-1] else "D" for w in widths]
  share = [{"seed": s, "width": names[r["expert"]], **r} for s, (_, a, _) in outputs.items()
           for r in routers.expert_object_share(a, object_mask, len(widths))]
  return share, names


def share_summary(share: list[dict]) -> str:
  """One line per seed of `expert_share`: the expert with the largest object share, and the
  full expert's share and part of the object tokens."""
  lines = []
  for s in dict.fromkeys(r["seed"] for r in share):
    mine = [r for r in share if r["seed"] == s]
    top = max(mine, key=lambda r: r["object_share_pct"])
    lines.append(f"seed {s}: the object's largest share is in expert {top['width']} ({top['object_share_pct']:.1f}% of its tokens, "
                 f"base rate {top['object_pct']:.1f}%); the full expert's: {mine[-1]['object_share_pct']:.1f}%, "
                 f"and it receives {mine[-1]['gets_object_pct']:.1f}% of the object tokens")
  return "\n".join(lines)


def margins(rows: list[dict], score: str) -> dict:
  """{(seed, keep): router precision minus random precision, in points} of one score's rows."""
  return {(r["seed"], r["keep"]): r["router_precision"] - r["random_precision"] for r in rows if r["score"] == score}


def smallest_margins(rows: list[dict], score: str) -> dict:
  """{seed: the smallest margin over the thresholds} of one score's rows (`margins`)."""
  lift = margins(rows, score)
  return {s: min(v for (t, _), v in lift.items() if t == s) for s in dict.fromkeys(s for s, _ in lift)}


def chapter_claims(rows: list[dict], runs: dict) -> list[dict]:
  """The chapter's claim, decided over the seeds (`claims.trained`, paired; fewer than three seeds
  are inconclusive): each seed's smallest margin (`smallest_margins`) of the full expert's logit,
  the paper's score, is one paired difference, beating zero. The five-seed plan decided it on the
  probability's ranking, so that result stands beside it (`preregistration.deviation`). A run
  that never left the chance plateau makes it inconclusive; no rows (no object masks, or no run)
  make it not testable. rows: `overlap_rows`; runs: as `landed`."""
  if not rows:
    why = "no object masks for this dataset" if runs else "no run has been trained yet"
    return [claims.not_testable(*CLAIM, "trained", why)]
  lift = margins(rows, "logit")
  seeds = list(dict.fromkeys(s for s, _ in lift))
  learned = all(analysis.left_plateau(m) is not False for m, _ in runs.values())
  note = "; ".join(f"seed {s}: " + ", ".join(f"top {100 * k:g}%: {v:+.1f}" for (t, k), v in lift.items() if t == s)
                   for s in seeds)
  published = claims.trained(*CLAIM, smallest_margins(rows, "logit"), learned=learned,
                             note=note)
  return [preregistration.deviation(published, claims.trained(*CLAIM, smallest_margins(rows, "probability"), learned=learned))]


def summary(rows: list[dict], profile: str, claim: dict) -> str:
  """The margins behind the claim: the smallest by the probability's ranking, then every
  threshold's by the logit's (the claim's note)."""
  return ("ranked by the full expert's probability instead, the smallest margins are " +
          ", ".join(f"{v:+.1f} (seed {s})" for s, v in smallest_margins(rows, "probability").items()) + " points\n"
          f"profile={profile!r}: router precision minus random, by seed and threshold: {claim['note']} points")
