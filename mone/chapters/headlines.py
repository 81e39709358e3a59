"""Where the small profile's headline claims stand, from the run files landed so far.

The small profile's runs (`mone.runs.plan`) are trained by `scripts/train_queue.py` over
several days and committed as they land. This module answers, from the committed run files
alone, how each headline comparison of the recalibrated profile is decided today: Figure 3 (ViT vs MoNE, MoNE vs
MatViT and MoD at equal FLOPs), Figure 4 per video task, Figure 6c (learned vs random router) and
Table 1 (MoNE vs the other allocations), each over the paired seeds that trained both arms
(`mone.evidence.claims`: fewer than 3 is inconclusive). A run that has not landed is left out,
never trained here (`landed`; the chapters read their runs with it too).

  .venv/bin/python -m mone.chapters headlines      # every claim, its seeds and 95% CI

The chapters build their claims with the same functions (`comparisons.figure3`, `figure4`,
`table1_claims`), so what this prints is what they say.
"""
from mone import capacity, results
from mone.evidence import claims, comparisons, stats
from mone.chapters import analysis, calibration
from mone.runs import experiments, plan
from mone.configs import figures, reads
from mone.configs.arms import Arm

VARIANT = "mini/8"  # the image model of `recipes.digits64` (a test checks it)
TOLERANCE = 1.0     # "matches" / "no drop": within this many accuracy points (as chapters 03-04)


def temporal_discrimination(profile: str, seeds, data_dir: str = "") -> dict | None:
  """How well the temporal task separates widths (`calibration.mean_discrimination`) over the dense
  ViViT and MatViViT runs landed at `seeds`; None where no seed has both. Every chapter whose claims
  are trained on the task qualifies them with it (`calibration.caveats`)."""
  widths = [r for r in figures.video_runs(profile, seeds, data_dir) if r.arm in (Arm("temporal", "vit"), Arm("temporal", "matvit"))]
  gaps = calibration.seed_discrimination(landed(widths))
  return calibration.mean_discrimination(list(gaps.values())) if gaps else None


def landed(runs=None, train: bool = False, recompute: bool = False) -> list[tuple[str, int, dict]]:
  """(label without its seed, seed, metrics) of every planned run whose run file exists, in
  plan order (runs: (label, config) pairs, plan.runs() by default). train: every run instead,
  trained where missing (`experiments.run`; recompute: retrained), as the smoke and paper
  profiles' chapters do; the small profile's are trained by `scripts/train_queue.py`."""
  out = []
  for label, cfg in plan.runs() if runs is None else runs:
    path, seed = experiments.run_path(cfg), f", seed {cfg.seed}"
    if not label.endswith(seed):
      raise ValueError(f"a planned run's label ends with its config's seed ({seed!r}), got {label!r}")
    if train:
      metrics = experiments.run(cfg, recompute, progress=False)
    elif path.exists():
      metrics = results.read_json(plan.reading(path))  # its CPU twin once the single-device reading holds
    else:
      continue
    out.append((label.removesuffix(seed), cfg.seed, metrics))
  return out


def pending(runs=None, train: bool = False) -> list[str]:
  """The labels of the planned runs (runs: as `landed`) whose run file does not exist yet; none
  where the chapter trains its runs (train, as `landed`), since it trains the missing ones."""
  if train:
    return []
  return [label for label, cfg in (plan.runs() if runs is None else runs) if not experiments.run_path(cfg).exists()]


def with_configs(planned, train: bool = False, recompute: bool = False) -> tuple[dict, list[str]]:
  """`landed` and `pending` of the planned runs (label, config), each finished run with its
  config: ({(label without its seed, seed): (metrics, config)}, the labels not trained yet)."""
  cfgs = dict(planned)
  runs = {(base, s): (m, cfgs[f"{base}, seed {s}"]) for base, s, m in landed(planned, train=train, recompute=recompute)}
  return runs, pending(planned, train)


def _key(base: str, variant: str) -> tuple[str, str] | None:
  """The (panel, model) curve a planned run belongs to (None: a single-seed study or Table 1); an image
  run's panel is its model `variant`, a video run's its task. The arm (`figures.arm`) says which."""
  arm = figures.arm(base)
  if arm.allocation != capacity.EQ3 or arm.adaptive or arm.router_layer is not None or arm.num_routers is not None:
    return None
  return (variant if arm.task == "image" else arm.task), arm.curve


def curves_by_seed(runs: list[tuple[str, int, dict]]) -> dict:
  """{seed: {(panel, model): points}} of the landed runs (`landed`), as `comparisons` takes
  them: panel VARIANT for images ('ViT', 'MatViT', 'MoD', 'MoNE' over its e_c, 'MoNE-isoFLOPs',
  'MoNE, random router'; VARIANT in this profile) and the task for videos ('ViViT', 'MoNE', 'MatViViT'); MoNE's points
  are its training capacities, in e_c order."""
  out = {}
  for base, seed, m in runs:
    key = _key(base, m["config"]["model"]["name"])
    if key is not None:
      out.setdefault(seed, {}).setdefault(key, []).extend(analysis.points(m))
  for curves in out.values():
    for pts in curves.values():
      pts.sort(key=lambda p: (p["e_c"] if p["e_c"] is not None else 1.0, p["width_index"] or 0))
  return out


def router_claims(by_seed: dict, variant: str = VARIANT) -> list[dict]:
  """Figure 6c: at each e_c with a random-router run, the learned router against the random one
  (paired seeds); the paper's claim is at the lowest capacity, where random routing degrades most."""
  learned = {s: {p["e_c"]: p["accuracy_pct"] for p in c.get((variant, "MoNE"), [])} for s, c in by_seed.items()}
  random = {s: {p["e_c"]: p["accuracy_pct"] for p in c.get((variant, "MoNE, random router"), [])} for s, c in by_seed.items()}
  out = []
  for e_c in sorted({e for r in random.values() for e in r}):
    mine = {s: a[e_c] for s, a in learned.items() if e_c in a}
    theirs = {s: a[e_c] for s, a in random.items() if e_c in a}
    if set(mine) & set(theirs):
      out.append(claims.trained(f"fig6.learned_beats_random.e_c{str(e_c).replace('.', '')}",
                                f"At e_c = {e_c}, the learned router is more accurate than a random one",
                                "the random router degrades at low capacity, the learned one holds (Fig. 6c)",
                                mine, theirs))
  return out


# Table 1's rows, in its order: the other allocations, then MoNE (Eq. 3) at the two capacities they meet
TABLE1_ARMS = reads.TABLE1_ARMS
# Each other allocation and the MoNE capacity it is compared with (as chapter 02)
TABLE1 = tuple(zip(TABLE1_ARMS[:4], (0.3, 0.4, 0.4, 0.4)))
# The paper's SSv2 accuracy (%) of each allocation, and of MoNE at e_c 0.3 and 0.4 (Table 1)
PAPER_SSV2 = {"Proportionate": 64.3, "Uniform": 64.6, "MoD Greedy": 63.9, "Greedy": 64.2, 0.3: 64.2, 0.4: 64.6}


def table1_id(arm: Arm, mone_e_c: float) -> str:
  """The id of the Table 1 claim comparing MoNE at mone_e_c with another allocation's arm of `TABLE1`."""
  return f"table1.mone{str(mone_e_c).replace('.', '')}_vs_{arm.allocation}"


def table1_rule(arm: Arm) -> tuple[str, float]:
  """The rule of `table1_claims`' comparison with `arm` (Table 1's chapter declares it): a static
  allocation (its own e_c) MoNE must be no worse than, within `TOLERANCE`; a greedy one it must beat."""
  return ("no_worse", TOLERANCE) if arm.e_c is None else ("beats", 0.0)


def table1_claims(runs: list[tuple[str, int, dict]]) -> list[dict]:
  """Table 1 on the temporal task, over paired seeds: MoNE (Eq. 3) at least as accurate as each
  static allocation, within `TOLERANCE` (`table1_rule`; the paper: they "show promising results"; MoNE at 0.3
  against Proportionate, whose static e_c is 0.27, at 0.4 against Uniform), and more accurate
  than each greedy one at e_c = 0.4 (the paper: they "exhibit inferior performance"); not
  testable where no seed has both runs yet."""
  mone, stuck, gflops = {}, set(), {}  # stuck: (MoNE capacity, seed) of a run that never left the chance plateau
  other = {}
  for base, seed, m in runs:
    arm = figures.arm(base)
    if arm.allocation != capacity.EQ3:
      other.setdefault(arm, {})[seed] = (analysis.points(m)[0], analysis.left_plateau(m))
    elif arm.task == "temporal" and arm.model_kind.routed and arm.e_c is not None and not arm.adaptive:
      mone.setdefault(arm.e_c, {})[seed] = analysis.points(m)[0]["accuracy_pct"]
      gflops[arm.e_c] = analysis.points(m)[0]["gflops"]
      if analysis.left_plateau(m) is False:
        stuck.add((arm.e_c, seed))
  out = []
  for arm, mone_e_c in TABLE1:
    allocation, short = arm.allocation, arm.curve
    static = arm.e_c is None  # a static allocation fixes its own e_c
    e_c = capacity.effective_capacity(capacity.allocation(allocation)) if static else mone_e_c
    ref, by_seed = mone.get(mone_e_c, {}), other.get(arm, {})
    claim = (f"is at least as accurate as {short} (e_c = {e_c:.2f}), within {table1_rule(arm)[1]:g} point" if static
             else f"is more accurate than {short} (e_c = {e_c:.2f})")
    args = (table1_id(arm, mone_e_c), f"MoNE at e_c = {mone_e_c} {claim}",
            f"{PAPER_SSV2[mone_e_c]} vs {PAPER_SSV2[short]} on SSv2")
    if not set(ref) & set(by_seed):
      out.append(claims.not_testable(*args, "trained", "no seed has both runs yet"))
      continue
    stalled = sorted(s for s in set(ref) & set(by_seed) if (mone_e_c, s) in stuck or by_seed[s][1] is False)
    c = claims.trained(*args, ref, {s: p["accuracy_pct"] for s, (p, _) in by_seed.items()}, learned=not stalled,
                       note=_flops_note(short, gflops.get(mone_e_c), next(iter(by_seed.values()))[0]["gflops"], mone_e_c))
    out.append(robust_beside(c, stalled))
  return out


def robust_beside(c: dict, stalled: list[int]) -> dict:
  """A Table 1 claim with, beside its frozen verdict, exploratory summaries that a run stuck at chance
  cannot drive (`stats.robust`: median, Hodges-Lehmann with its interval), over the seeds whose
  compared runs both left the chance plateau; `never_left_chance` names the others. A run that never left
  chance is no measurement of its arm, so no number shown as an effect comes from it."""
  if c["verdict"] == "not testable" or len(c.get("per_seed") or []) < claims.MIN_SEEDS:
    return c
  kept = [d for s, d in zip(c["seeds"], c["per_seed"]) if s not in stalled]
  return {**c, **({"robust": stats.robust(kept)} if kept else {}), **({"never_left_chance": stalled} if stalled else {})}


def _flops_note(short: str, mone_gflops: float | None, other_gflops: float, mone_e_c: float) -> str:
  """What an allocation's inference cost means for its comparison with MoNE: Table 1 compares
  allocations at (about) equal e_c, and e_c counts the compute of nested widths, not of dropped
  tokens or of the attention every token still joins, so equal e_c need not be equal FLOPs."""
  if mone_gflops is None:
    return ""
  ratio = other_gflops / mone_gflops
  costs = f"{short} costs {1e3 * other_gflops:.2f} MFLOPs per clip, MoNE e_c = {mone_e_c} {1e3 * mone_gflops:.2f}"
  if abs(ratio - 1) < 0.03:
    return f"{costs}: about equal."
  return (f"{costs} ({ratio:.2f}x): Table 1 pairs allocations by e_c, not by FLOPs, and here " +
          ("MoNE's arm is the costlier, so part of any advantage may be its extra compute." if ratio < 1 else
           "MoNE's arm is the cheaper one."))


def headline_claims(runs: list[tuple[str, int, dict]]) -> list[dict]:
  """Every headline claim that the landed runs can decide (or show as inconclusive)."""
  by_seed = curves_by_seed(runs)
  # a figure's claims need a seed with its dense model and MoNE at e_c = 0.4 (the FLOPs ratio)
  paired = lambda panel, dense: any((panel, dense) in c and any(p["e_c"] == 0.4 for p in c.get((panel, "MoNE"), []))
                                    for c in by_seed.values())
  out = comparisons.figure3(by_seed, VARIANT, iso_planned=True) if paired(VARIANT, "ViT") else []
  for task, paper in (("temporal", "SSv2"), ("appearance", "Kinetics-400")):
    if paired(task, "ViViT"):
      out += comparisons.figure4(by_seed, task, paper, comparisons.VIDEO_MIN_REDUCTION)
  table1 = any((a := figures.arm(base)).allocation != capacity.EQ3 or a.task == "temporal" and a.model_kind.routed for base, _, _ in runs)
  return out + router_claims(by_seed) + (table1_claims(runs) if table1 else [])

