"""Figure 6, router analysis: the router's position, the number of routers, and a learned against
a random router. The chapter's runs, studies and claims (notebooks/06_figure6_router.ipynb loads,
plots and prints them).

Every study runs MoNE at `E_C` unless it varies e_c; its default arm (router before layer 0, one
router, learned) is Figure 3's run. The claims are decided by `comparisons.figure6` over the seeds
that trained both arms of each; a run that never left the chance plateau tests no router, so it
makes every decided trained claim inconclusive.
"""
from mone.evidence import comparisons
from mone.chapters import analysis, headlines
from mone.evidence.declarations import ACCURACY, BEATS, SAME_SEED, Chapter, Claim
from mone.configs import figures, profiles, reads
from mone.configs.arms import Arm

E_C = reads.FIGURE6_E_C  # the capacity of the router position and count studies
# The claims `comparisons.figure6` decides (and `headlines` per e_c of the learned-or-random study).
CHAPTER = Chapter("Figure 6", "fig6.", "Routing", (
    Claim("fig6.", ("paired", f"MoNE against MoNE (router placement, count, learned or random): {SAME_SEED}")),
    Claim("fig6.learned_beats_random", metric=ACCURACY,
          arms=(Arm("image", "mone", 0.2), Arm("image", "mone", 0.2, router="random")), rule=BEATS),
    Claim("fig6.first_layer_router_best", rule=BEATS),
    Claim("fig6.more_routers_lower_accuracy", rule=BEATS),
    Claim("fig6.random_degrades_at_low_capacity", rule=BEATS),
))
ROW_COLUMNS = ["study", "value", "seed", "e_c", "gflops", "accuracy_pct"]


def labels(profile: str, e_c: float = E_C) -> dict:
  """{(study, value): run label without its seed} of every point the chapter reads (`arms`)."""
  return {key: arm.label for key, arm in arms(profile, e_c).items()}


arms = reads.figure6_arms  # {(study, value): arm} of every point the chapter reads


def load(ch) -> tuple[dict, list[str]]:
  """The planned runs of Figure 6 for a chapter setting `ch` (`chapter.setup`): (point, pending).
  point: {(label, seed): the run's first point (`analysis.points`) with 'learned' (whether it left
  the chance plateau, `analysis.left_plateau`)}; pending: the planned runs not trained yet."""
  wanted = set(arms(ch.profile).values())
  planned = [r for r in figures.image_runs(ch.profile, ch.seeds, ch.data_dir) if r.arm in wanted]
  landed = headlines.landed(planned, train=ch.train, recompute=ch.recompute)
  point = {(base, s): {**analysis.points(m)[0], "learned": analysis.left_plateau(m)} for base, s, m in landed}
  return point, headlines.pending(planned, ch.train)


def studies(point: dict, profile: str, seeds) -> dict:
  """{study: {value: {seed: point}}}: the points each study has at each of `seeds`."""
  study = {}
  for (name, value), label in labels(profile).items():
    study.setdefault(name, {})[value] = {s: point[label, s] for s in seeds if (label, s) in point}
  return study


def rows(study: dict) -> list[dict]:
  """One row per study, value and seed (the default curve left out): results/06_figure6_router/points.csv."""
  return [{"study": name, "value": value, "seed": s, **p} for name, by_value in study.items() if name != "curve"
          for value, by_seed in by_value.items() for s, p in by_seed.items()]


def default_curve(study: dict, seeds) -> dict:
  """{seed: points in FLOPs order} of MoNE with its router before layer 0, over the image e_c grid,
  at the seeds that have any."""
  curve = {s: sorted((p for by_seed in study["curve"].values() for t, p in by_seed.items() if t == s), key=lambda p: p["gflops"])
           for s in seeds}
  return {s: pts for s, pts in curve.items() if pts}


def title(point: dict, profile: str) -> str:
  """The figure's title: the model the runs trained, the data and the profile."""
  variant = next(iter(point.values()))["variant"]
  return f"Router analysis, {variant} on the cluttered digits ({profile} profile; bars: range over seeds; the paper: SSv2)"


def accuracy(study: dict, name: str) -> dict:
  """{value: {seed: accuracy_pct}} of one study."""
  return {v: {s: p["accuracy_pct"] for s, p in by_seed.items()} for v, by_seed in study[name].items()}


PLATEAU = "a compared run never left the chance plateau"


def decide(study: dict, curve: dict, point: dict, e_c: float = E_C) -> list[dict]:
  """Figure 6's claims (`comparisons.figure6`): (a) the layer-0 curve against each later router,
  (b) one router against the most, (c) the learned router against a random one, and the
  exploratory other half of (c). If any run read (`point`) never left the chance plateau, every
  decided trained claim is inconclusive (`PLATEAU`): such a run tests no router."""
  later = {l: by_seed for l, by_seed in study["router position"].items() if l}
  out = comparisons.figure6(curve, later, accuracy(study, "number of routers"), accuracy(study, "learned router"),
                            accuracy(study, "random router"), e_c)
  if any(p["learned"] is False for p in point.values()):
    out = [{**c, "verdict": "inconclusive", "why": PLATEAU} if c["kind"] == "trained" and c["verdict"] != "not testable" else c
           for c in out]
  return out


def lines(decided: list[dict], study: dict, profile: str) -> str:
  """What each study measured, one line each: (a) the note of the router position claim (the
  first of `decide`), (b) every seed's accuracy by number of routers, (c) learned minus random
  router by e_c, at the seeds with both."""
  routers, learned, random = (accuracy(study, n) for n in ("number of routers", "learned router", "random router"))
  a = f"profile={profile!r}: (a) layer-0 curve minus later routers: " + (decided[0].get("note") or "none inside the curve")
  b = "  (b) accuracy by number of routers: " + "; ".join(f"{n}: " + ", ".join(f"{x:.1f}% (seed {s})" for s, x in by_seed.items())
                                                       for n, by_seed in routers.items() if by_seed)
  c = "  (c) learned minus random router, by e_c: " + "; ".join(
      f"e_c={e}: " + ", ".join(f"{l[s] - random[e][s]:+.1f} (seed {s})" for s in l if s in random[e])
      for e, l in learned.items() if set(l) & set(random[e])) + " points"
  return "\n".join([a, b, c])
