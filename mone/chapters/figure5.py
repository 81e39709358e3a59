"""Chapter 05 (Figure 5, capacity adaptation at inference): its runs, their numbers and its claims.

Each model of Figure 5 is trained at one capacity (or adaptively, at a capacity drawn at every step)
and evaluated on a grid of inference capacities. `load` reads a domain's runs (images: Fig. 5a;
video, the temporal task: Fig. 5b) into curves and the per-seed drops of `analysis.adaptation_summary`;
`chapter_claims` decides the chapter's claims from them: the three of `analysis.adaptation_claims` per
domain, and whether video degrades more gracefully than images.
"""
import dataclasses

from mone.evidence import claims, preregistration
from mone.chapters import analysis, calibration, headlines
from mone.evidence.declarations import BEATS, SAME_SEED, Chapter, Claim
from mone.configs import figures, profiles, reads

DOMAINS = ("images", "video")
ADAPTIVE = "Train Adaptive"  # the label of the adaptively trained model in every table and figure
GENTLER = ("fig5.video_gentler_than_images", "Video degrades more gracefully than images: the mean own drop per unit of shift, "
           "on the (train, eval) pairs both have, is smaller (images minus video, points per unit)", "more graceful on video")
# The claims `analysis.adaptation_claims` decides per domain, and `GENTLER` across them.
_DROP = ("a model's own accuracy drop (points): accuracy at an inference e_c minus at its training e_c, "
         "on the grid of Figure 5")
_GROWS = f"{_DROP}, mean at the largest shift |t - e| minus mean at the smallest"
_STEEPER = f"{_DROP}, mean from a higher training e_c to a lower one minus from lower to higher, at equal shifts"
_IMAGES, _VIDEO = "MoNE e_c=0.2, 0.4, 0.6", "temporal: MoNE e_c=0.3, 0.4"
ADAPTIVE_TOLERANCE = 1.0  # points: the paper's "adapts extremely well", as far as this profile can resolve
CHAPTER = Chapter("Figure 5", "fig5.", "Adaptation", (
    Claim("fig5.", ("paired", "a contrast within the same trained models of each seed (their drops at other budgets), or the "
                    f"adaptive MoNE against the fixed one: {SAME_SEED}")),
    *(Claim(f"fig5.{domain}.{claim}", metric=metric, arms=(f"{arms} evaluated at every e_c of the grid",), rule=BEATS)
      for domain, arms in zip(DOMAINS, (_IMAGES, _VIDEO)) for claim, metric in (("drop_grows_with_shift", _GROWS),
                                                                                ("steeper_high_to_low", _STEEPER))),
    # one adaptive model against the model trained at each capacity: at most ADAPTIVE_TOLERANCE points below
    *(Claim(f"fig5.{domain}.adaptive_serves_every_budget", rule=("no_worse", ADAPTIVE_TOLERANCE)) for domain in DOMAINS),
    Claim(GENTLER[0], ("welch", "image and video models are trained on other data with other architectures: a seed "
                       "number shares nothing between them, so the arms are independent samples"),
          metric=f"{_DROP} per unit of shift, mean over the (train, eval) pairs both domains have",
          arms=(f"{_IMAGES} (images)", f"{_VIDEO} (video)"), rule=BEATS),
))


@dataclasses.dataclass(frozen=True)
class Domain:
  """One domain's share of Figure 5, as `load` reads it."""
  domain: str  # 'images' or 'video'
  train_e_c: tuple  # the capacities its fixed-capacity models are trained at
  variant: str | None  # the model variant its runs train (the first planned run's)
  runs: dict  # {seed: {model label: points at every evaluated e_c, by e_c}} of the landed runs
  pending: list  # the labels of the planned runs still to land
  curves: dict  # {model label: points}, the means over seeds (`mean_curves`)
  summaries: dict  # {seed: `analysis.adaptation_summary`} over the training capacities landed at that seed

  @property
  def rows(self) -> list[dict]:
    """Every landed point, one row per (seed, model, inference e_c): the chapter's csv table."""
    return [{"seed": s, "model": label, **p} for s, c in self.runs.items() for label, pts in c.items() for p in pts]


def labels(domain: str, train_e_c) -> dict:
  """{planned run label without its seed: the model's label in Figure 5} of a domain: a model per
  training capacity, and the adaptive one (trained isoFLOPs) (`arms`)."""
  return {arm.label: name for arm, name in arms(domain, train_e_c).items()}


def arms(domain: str, train_e_c) -> dict:
  """{arm: the model's label in Figure 5} of a domain: MoNE at each training capacity, and the
  adaptive one (trained isoFLOPs), on images or on the temporal task."""
  if domain not in DOMAINS:
    raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
  return {a: ADAPTIVE if a.adaptive else f"Train e_c={a.e_c}" for a in reads.figure5_arms(domain, train_e_c)}


def by_seed(landed, label_of) -> dict:
  """{seed: {model label: points at every evaluated e_c, by e_c}} of landed runs ((label, seed,
  metrics) as `headlines.landed` gives them); label_of maps a run's label to the model's."""
  out = {}
  for base, s, m in landed:
    out.setdefault(s, {})[label_of(base)] = sorted(analysis.points(m, all_capacities=True), key=lambda p: p["e_c"])
  return out


def summaries(runs: dict, train_e_c) -> dict:
  """Per seed, Fig. 5's numbers (`analysis.adaptation_summary`) over the training capacities
  landed at that seed (and the adaptive model, where it has landed)."""
  return {s: analysis.adaptation_summary([p for pts in c.values() for p in pts],
                                         [t for t in train_e_c if f"Train e_c={t}" in c]) for s, c in sorted(runs.items())}


def mean_curves(runs: dict) -> dict:
  """{model label: points, by e_c}: the means over the seeds trained (`analysis.mean_curves`)."""
  return {label: sorted(pts, key=lambda p: p["e_c"]) for label, pts in analysis.mean_curves(runs).items()}


def load(profile: str, seeds, data_dir: str, domain: str, train: bool = False, recompute: bool = False) -> Domain:
  """A domain's runs of Figure 5 at `seeds`, read where landed (train: trained where missing,
  `headlines.landed`), with their mean curves and per-seed summaries."""
  if domain not in DOMAINS:
    raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
  g = profiles.grid(profile)
  train_e_c = g.adapt_image_e_c if domain == "images" else g.adapt_video_e_c
  names, wanted = labels(domain, train_e_c), arms(domain, train_e_c)
  planned_runs = figures.image_runs if domain == "images" else figures.video_runs
  planned = [r for r in planned_runs(profile, seeds, data_dir) if r.arm in wanted]
  runs = by_seed(headlines.landed(planned, train=train, recompute=recompute), names.get)
  return Domain(domain, train_e_c, planned[0][1].model.name if planned else None, runs, headlines.pending(planned, train), mean_curves(runs),
                summaries(runs, train_e_c))


def curve_table(curves: dict, name: str) -> tuple[str, analysis.Table | None]:
  """The heading and the table (None: no run yet) of a domain's mean curves: top-1 accuracy by
  inference e_c, one row per model (`name`: the domain as the chapter prints it)."""
  if not curves:
    return f"{name}: no run has been trained yet", None
  grid = sorted({p["e_c"] for pts in curves.values() for p in pts})
  heading = f"{name}: top-1 accuracy (%) by inference e_c, mean over the seeds trained (paper: a plot, no numbers given)"
  return heading, analysis.format_table([{"model": label, "seeds": pts[0]["n_seeds"], **{f"{p['e_c']:g}": p["accuracy_pct"] for p in pts}}
                                         for label, pts in curves.items()], ["model", "seeds"] + [f"{e:g}" for e in grid])


def summary_lines(summaries: dict, domain: str, profile: str) -> list[str]:
  """One line per seed of a domain's summaries: the mean own drop by shift, high to low against
  low to high, and the adaptive model against each fixed one."""
  lines = []
  for s, m in summaries.items():
    if domain == "images":
      head, matched = "mean own drop by shift |t - e|: ", f" (mean over shifts {m['matched_shifts']})"
    else:
      head, matched = "mean own drop by shift: ", ""
    lines.append(f"profile={profile!r}, {domain}, seed {s}: {head}" + ", ".join(f"{d:g}: {r:+.1f}" for d, r in m["by_shift"].items())
                 + f" points; high -> low {m['down']:+.1f}, low -> high {m['up']:+.1f}{matched}"
                 + ("; adaptive minus fixed at each training e_c: " + ", ".join(f"{t}: {r:+.1f}" for t, r in m["adaptive"].items())
                    if m["adaptive"] else ""))
  return lines


def at_chance(runs: dict) -> list[str]:
  """The models (labels, sorted) of which some run never left the chance plateau
  (`analysis.left_plateau`): claims on them are inconclusive."""
  return sorted({label for c in runs.values() for label, pts in c.items() if any(p["learned"] is False for p in pts)})


def shared_per_unit(images: dict, video: dict) -> tuple[dict, dict]:
  """Per seed that has both domains' drops at a shared (train, eval) pair, the mean own drop per
  unit of shift on those pairs (`analysis.shared_per_unit`): ({seed: images}, {seed: video})."""
  img, vid = {}, {}
  for s in sorted(set(images) & set(video)):
    if set(images[s]["drops"]) & set(video[s]["drops"]):
      img[s], vid[s] = analysis.shared_per_unit(images[s], video[s])
  return img, vid


def gentler_lines(images: dict, video: dict) -> list[str]:
  """One line per seed of `shared_per_unit`: images, video, and images minus video."""
  img, vid = shared_per_unit(images, video)
  return [f"  seed {s}: own drop per unit of shift on the shared pairs: images {img[s]:+.1f}, video {vid[s]:+.1f}, "
          f"images minus video {img[s] - vid[s]:+.1f} points" for s in img]


def gentler_claim(images: dict, video: dict, learned: bool = True) -> dict:
  """Whether video degrades more gracefully than images: the mean own drop per unit of shift on
  the pairs both have is larger on images (`images`, `video`: {seed: `adaptation_summary`}).
  Images and video are separate samples (a seed shares nothing between them): the claim takes both
  arms, and its family's design decides it with Welch's unpaired interval (`claims.PAIRING`); the
  five-seed plan decided it paired over seeds, and that result stands beside Welch's
  (`preregistration.deviation`). learned=False: a video run never left the chance plateau."""
  img, vid = shared_per_unit(images, video)
  if not img:
    return claims.not_testable(*GENTLER, "trained", "no seed has both domains' runs at a shared capacity")
  paired = {s: img[s] - vid[s] for s in img}
  return preregistration.deviation(claims.trained(*GENTLER, img, vid, learned=learned),
                                   claims.trained(*GENTLER, paired, learned=learned))


def chapter_claims(images: dict, video: dict, stuck=()) -> list[dict]:
  """The chapter's claims from each domain's summaries ({seed: `adaptation_summary`}): Fig. 5's
  three per domain (`analysis.adaptation_claims`), then video against images (`gentler_claim`).
  stuck: the video models that never left the chance plateau (`at_chance`), whose claims are
  inconclusive."""
  return (analysis.adaptation_claims(images, "images") + analysis.adaptation_claims(video, "video", learned=not stuck)
          + [gentler_claim(images, video, learned=not stuck)])


def metrics(images: Domain, video: Domain, stuck) -> dict:
  """The chapter's metrics.json: every point, the runs still to land, each domain's summaries
  per seed (drops as rows) and the video models at chance."""
  drop_table = lambda m: [{"train_e_c": t, "eval_e_c": e, "drop": d} for (t, e), d in m["drops"].items()]
  return {"points": images.rows, "points_video": video.rows, "pending": images.pending + video.pending,
          "images": {s: {**m, "drops": drop_table(m)} for s, m in images.summaries.items()},
          "video": {s: {**m, "drops": drop_table(m)} for s, m in video.summaries.items()}, "at_chance": stuck}


def caveats(discrimination: dict | None, video: Domain) -> list[str]:
  """The chapter's caveat (`calibration.caveats`): the video claims are trained on the temporal
  task, and where it barely separates widths (`headlines.temporal_discrimination`, chapter 04)
  they measure drops near its ceiling, which compresses them."""
  ceiling = min((p["accuracy_pct"] for t in video.train_e_c for p in video.curves.get(f"Train e_c={t}", []) if p["e_c"] == t),
                default=None)
  lo, hi = min(video.train_e_c), max(video.train_e_c)
  return calibration.caveats(discrimination, "Figure 5's video claims (`fig5.video*`), trained on it, measure drops on a task near its ceiling"
                             + (f" (MoNE at {lo}-{hi} scores at least {ceiling:.1f}% at its training capacity)" if ceiling else "")
                             + ", where a drop is compressed")
