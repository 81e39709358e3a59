"""Figure 7: the tokens MoNE routes to the full model at a low capacity, on images and on clips,
and whether they are the object's.

The paper shows Figure 7 without a number. The cluttered digits and the temporal task's clips come
with object masks, so chapter 07 measures how many of the full model's tokens are object tokens
(`routers.overlap`) for the learned router, for a MoNE trained with the random router, and for the
exact expectation of a random choice of as many (`routers.overlap_rows`), per seed, and
`chapter_claims` decides the paper's claims from those precisions. The notebook loads the runs
with `image_runs` and `video_runs`, calls these functions, and plots and prints what they return.
"""
from mone.evidence import claims
from mone.chapters import analysis, headlines, routers
from mone.runs import experiments, plan
from mone.evidence.declarations import BEATS, SAME_SEED, WITHIN, Chapter, Claim
from mone.configs import figures, reads

E_C = reads.FIGURE7_E_C  # a low capacity: the full expert gets floor(0.071 N) tokens, 4 of 64 in the small profile
ROUTERS = reads.FIGURE7_ROUTERS  # name: arm
VIDEO = reads.FIGURE7_VIDEO  # Figure 4's arm on the temporal task
EXAMPLES, CLIPS = 2000, 500  # test images and clips scored
COLUMNS = ["seed", "router", "precision", "recall", "iou", "selected_fraction", "object_fraction"]  # of the overlap tables
EXPECTED = "random (expected)"  # the row of `routers.overlap_rows` for a random choice of as many tokens
IMAGE_CLAIMS = [
    ("fig7.images.full_tokens_on_object", f"At e_c = {E_C}, the learned router's full-model tokens are object tokens "
     "more often than a random choice of as many (precision, points)", "correlate well with the regions of interest (Fig. 7a)"),
    ("fig7.images.learned_beats_random_router", f"At e_c = {E_C}, the learned router's full-model tokens are object tokens "
     "more often than the trained random router's (precision, points)", "why the learned router beats a random one (Sec. 6)")]
VIDEO_CLAIM = ("fig7.video.full_tokens_track_motion", f"Temporal task, e_c = {E_C}: the full model's tokens are on the moving "
               "digits more often than a random choice of as many per temporal index (precision, points)",
               "consistently track the regions of motion (Fig. 7b)")
_OBJECT = ("precision (points) of the tokens the full expert processes against the object tokens "
           f"(at least {100 * routers.OBJECT_FRACTION:g}% of a token's pixels on the digit); 2,000 test images")
CHAPTER = Chapter("Figure 7", "fig7.", "Routing", (
    Claim(IMAGE_CLAIMS[0][0], WITHIN, metric=_OBJECT,
          arms=(ROUTERS["learned router"], "a random choice of as many tokens (expected)"), rule=BEATS),
    Claim(IMAGE_CLAIMS[1][0], ("paired", f"MoNE with a learned and with a random router: {SAME_SEED}"), metric=_OBJECT,
          arms=(ROUTERS["learned router"], ROUTERS["random router"]), rule=BEATS),
    Claim("fig7.video.", WITHIN),
    Claim(VIDEO_CLAIM[0], metric="per temporal index, precision (points) of the full expert's tokens against the moving "
                                 "digits' tokens minus a random choice's of as many; 500 test clips",
          arms=(VIDEO, "a random choice of as many tokens per temporal index (expected)"), rule=BEATS),
))


def image_runs(ch) -> tuple[dict, list[str]]:
  """The image runs of both routers at `E_C` over a chapter's seeds (ch: `chapter.Chapter`):
  ({(run label, seed): (metrics, config)} of the runs whose run file exists, trained here where
  the chapter trains; the labels of the planned runs not trained yet)."""
  return headlines.with_configs([r for r in figures.image_runs(ch.profile, ch.seeds, ch.data_dir)
                                 if r.arm in ROUTERS.values()], ch.train, ch.recompute)


def video_runs(ch) -> tuple[dict, list[str]]:
  """The temporal task's MoNE at `E_C` over a chapter's seeds: ({seed: (metrics, config)},
  the labels of the planned runs not trained yet), as `image_runs`."""
  runs, pending = headlines.with_configs([r for r in figures.video_runs(ch.profile, ch.seeds, ch.data_dir)
                                          if r.arm == VIDEO], ch.train, ch.recompute)
  return {s: run for (_, s), run in runs.items()}, pending


def full_tokens(params, cfg, inputs):
  """bool [n, N] (images) or [n, T', N] (clips): the tokens Expert Preferred Routing gives the
  full expert at the training capacity, from a run's committed router weights (`params`)."""
  _, assignment = routers.router_outputs(params, cfg, inputs)
  return assignment == cfg.model.num_experts - 1


def image_full_tokens(runs: dict, images, recompute: bool = False) -> dict:
  """{(router name, seed): bool [n, N]} of `full_tokens` on images, for every run of `image_runs`,
  router by router in `ROUTERS` order and seed by seed."""
  return {(name, s): full_tokens(experiments.router_params(cfg, recompute, read=plan.reading), cfg, images)
          for name, arm in ROUTERS.items() for (b, s), (m, cfg) in runs.items() if b == arm.label}


def video_full_tokens(runs: dict, clips, recompute: bool = False) -> dict:
  """{seed: bool [n, T', N]} of `full_tokens` on clips, for every run of `video_runs`."""
  return {s: full_tokens(experiments.router_params(cfg, recompute, read=plan.reading), cfg, clips) for s, (m, cfg) in runs.items()}


def describe(runs: dict, full: dict, pending: list[str]) -> str:
  """What the image half reads: each run's accuracy and how many tokens its full model processes."""
  lines = []
  for (name, s), sel in full.items():
    m = runs[ROUTERS[name].label, s][0]
    lines.append(f"{name}, seed {s}: top-1 {100 * m['accuracy']:.1f}% at e_c={E_C} (trained on {m['device']['kind']}); "
                 f"the full model processes {sel.sum(-1).mean():.0f} of {sel.shape[1]} tokens per image")
  return "\n".join(lines + ([f"not trained yet: {'; '.join(pending)}"] if pending else []))


def describe_video(runs: dict, full: dict) -> str:
  """What the video half reads: each run's accuracy and how many tokens per temporal index its full model processes."""
  return "\n".join(f"temporal task, seed {s}: top-1 {100 * runs[s][0]['accuracy']:.1f}% at e_c={E_C}; per temporal index "
                   f"the full model processes {sel.sum(-1).mean():.0f} of {sel.shape[-1]} tokens" for s, sel in full.items())


def overlap_rows(full: dict, object_mask) -> list[dict]:
  """`routers.overlap_rows` of each seed with a learned router's run: both routers' full-model
  tokens against the object tokens, and the expectation of a random choice of as many tokens as
  the learned router's, with 'seed' first. full: as `image_full_tokens`; object_mask as
  `routers.overlap`."""
  rows = []
  for s in [s for name, s in full if name == "learned router"]:
    sel = {name: full[name, s] for name in ROUTERS if (name, s) in full}
    rows += [{"seed": s, **r} for r in routers.overlap_rows(sel, object_mask)]
  return rows


def video_overlap_rows(full: dict, masks, tubelet: int, patch: int) -> list[dict]:
  """`routers.overlap_rows` of each seed's full-model tokens on clips against the moving digits,
  pooled over the temporal indices (a tubelet token's coverage averaged over its frames,
  `routers.video_token_mask`). full: as `video_full_tokens`; masks: bool [n, T, H, W]."""
  n_tok = next(iter(full.values())).shape[-1]
  obj = routers.video_token_mask(masks, tubelet, patch).reshape(-1, n_tok)  # [n T', N]
  return [{"seed": s, **r} for s, sel in full.items() for r in routers.overlap_rows({"learned router": sel.reshape(-1, n_tok)}, obj)]


def precision(rows: list[dict], router: str) -> dict:
  """{seed: precision in %} of one router's overlap rows."""
  return {r["seed"]: 100 * r["precision"] for r in rows if r["router"] == router}


def video_lift(rows: list[dict]) -> dict:
  """{seed: the learned router's precision minus a random choice's, in points} of `video_overlap_rows`."""
  learned, expected = precision(rows, "learned router"), precision(rows, EXPECTED)
  return {s: learned[s] - expected[s] for s in learned}


def image_summary(rows: list[dict], profile: str) -> str:
  """Each router's precision by seed, and a random choice's: the numbers behind the image claims."""
  arms = (("learned router", "learned router"), ("random router", "random router"), ("expected at random", EXPECTED))
  return (f"profile={profile!r}, e_c={E_C}: precision of the full model's tokens (%), by seed: " + "; ".join(
      f"{label} " + ", ".join(f"{a:.0f} (seed {s})" for s, a in precision(rows, router).items()) for label, router in arms))


def video_summary(rows: list[dict], profile: str) -> str:
  """The learned router's lift over a random choice by seed: the numbers behind the video claim."""
  return (f"profile={profile!r}, e_c={E_C}, temporal task: precision of the full model's tokens minus a random choice's, "
          "by seed: " + ", ".join(f"{d:+.1f} (seed {s})" for s, d in video_lift(rows).items()) + " points")


def chapter_claims(rows: list[dict], video_rows: list[dict], video_runs: dict) -> list[dict]:
  """The chapter's three claims, each decided over the seeds (`claims.trained`, paired; fewer than
  three seeds are inconclusive). Images (rows: `overlap_rows`): the learned router's precision
  beats a random choice's (the exact expectation) and the trained random router's, over the seeds
  with both; not testable without object masks (no rows) or without a seed that has both routers'
  runs. Video (video_rows: `video_overlap_rows`; video_runs: as `video_runs`): the learned
  router's lift over a random choice beats zero, inconclusive if a run never left the chance
  plateau; not testable without masks or without a run."""
  if rows:
    learned = precision(rows, "learned router")
    versus = [precision(rows, EXPECTED), precision(rows, "random router")]
    out = [claims.trained(*c, learned, other) if set(learned) & set(other)
           else claims.not_testable(*c, "trained", "no seed has both routers' runs landed")
           for c, other in zip(IMAGE_CLAIMS, versus)]
  else:
    out = [claims.not_testable(*c, "trained", "no object masks for this dataset") for c in IMAGE_CLAIMS]
  if video_rows:
    return out + [claims.trained(*VIDEO_CLAIM, video_lift(video_rows),
                                 learned=all(analysis.left_plateau(m) is not False for m, _ in video_runs.values()))]
  why = "no object masks for this dataset" if video_runs else "no run has been trained yet"
  return out + [claims.not_testable(*VIDEO_CLAIM, "trained", why)]
