"""Figure 3, image classification: accuracy against inference FLOPs. The chapter's runs, tables,
MatViT diagnostics and claims (notebooks/03_figure3_images.ipynb loads, plots and prints them).

The chapter reads every model of the paper's figure (dense ViT, MatViT, MoD, MoNE over its e_c
grid, MoNE-isoFLOPs at the lowest e_c) at the seeds of the profile's plan, as `headlines.landed`
reads them, and decides its claims with `comparisons.figure3` over the seeds that trained both
arms of each.
"""
from mone.evidence import claims, comparisons
from mone.chapters import calibration, headlines
from mone.evidence.declarations import ACCURACY, BEATS, SAME_SEED, Chapter, Claim
from mone.configs import figures, profiles, reads
from mone.configs.arms import Arm

# The model sizes of each profile's figure; the first is the one the claims are decided on.
VARIANTS = {"smoke": ["tiny/8"], "small": [headlines.VARIANT], "paper": ["S/16", "B/16", "L/16"]}
TOLERANCE = headlines.TOLERANCE  # "comparable": MoNE within this many accuracy points of ViT
# The usual FLOPs of the paper's dense ViTs at 224 px (its text states none): a scale for the reader.
PAPER_VIT_GFLOPS = {"S/16": 4.6, "B/16": 17.6, "L/16": 61.7}
# The columns of the table of mean points the chapter shows.
# The claims `comparisons.figure3` decides; the image models trained at one seed are paired by it.
_CURVE = "MoNE e_c=0.2, 0.3, 0.4, 0.6"  # every e_c of the small profile's image grid
CHAPTER = Chapter("Figure 3", "fig3.", "Accuracy per FLOP", (
    Claim("fig3.", ("paired", f"image models (ViT, MatViT, MoD, MoNE): {SAME_SEED}")),
    Claim("fig3.mone_matches_vit", metric=ACCURACY, arms=(Arm("image", "mone", 0.4), Arm("image", "vit")),
          rule=("matches", TOLERANCE)),
    Claim("fig3.mone_beats_matvit", arms=(_CURVE, Arm("image", "matvit")),
          metric=f"{ACCURACY} of MoNE at its cheapest e_c inside MatViT's FLOPs range (chosen on the lowest "
                 "seed) minus MatViT's accuracy interpolated linearly at the same inference FLOPs", rule=BEATS),
    Claim("fig3.mone_beats_mod", arms=(_CURVE, Arm("image", "mod")),
          metric=f"MoNE's {ACCURACY} interpolated linearly over its e_c curve at MoD's inference FLOPs, minus MoD's",
          rule=BEATS),
    Claim("fig3.iso_flops_helps", rule=BEATS),
    Claim("fig3.flops_reduction"),  # arithmetic
))
POINT_COLUMNS = ["variant", "label", "e_c", "width_index", "gflops", "accuracy_pct", "accuracy_min", "accuracy_max", "n_seeds"]


def variants(profile: str) -> list[str]:
  """The model sizes of a profile's Figure 3, the claims' own first."""
  return VARIANTS[profiles.check_profile(profile)]


models = reads.figure3_models  # the dense ViT, MatViT, MoD and MoNE at every e_c of the image grid
iso_arm = reads.figure3_iso  # MoNE-isoFLOPs at the grid's lowest e_c


def load(ch) -> tuple[dict, dict, list[str]]:
  """Figure 3's runs for a chapter setting `ch` (`chapter.setup`): (by_seed, runs, pending).
  by_seed: {seed: {(variant, model): points}} (`headlines.curves_by_seed`); runs: {variant: its
  runs read, (label, seed, metrics) as `headlines.landed` gives them}; pending: the planned runs
  not trained yet (none where the chapter trains its runs). The isoFLOPs run belongs to the first
  variant only."""
  by_seed, runs, pending = {}, {}, []
  names = variants(ch.profile)
  for v in names:
    wanted = models(ch.profile) | ({iso_arm(ch.profile)} if v == names[0] else set())
    sized = {"model": v} if ch.profile == "paper" else {}
    planned = [r for r in figures.image_runs(ch.profile, ch.seeds, ch.data_dir, **sized) if r.arm in wanted]
    pending += headlines.pending(planned, ch.train)
    runs[v] = headlines.landed(planned, train=ch.train, recompute=ch.recompute)
    for s, c in headlines.curves_by_seed(runs[v]).items():
      by_seed.setdefault(s, {}).update(c)
  return by_seed, runs, pending


def runs_line(runs: dict, pending: list[str]) -> str:
  """How many runs were read, and which planned ones have not trained yet."""
  n = sum(map(len, runs.values()))
  return f"{n} runs" + (f"; not trained yet ({len(pending)}): " + "; ".join(pending) if pending else ", all trained")


def seed_points(by_seed: dict) -> list[dict]:
  """Every seed's points, one row each (results/03_figure3_images/points.csv)."""
  return [{"seed": s, "label": label, **p} for s, c in sorted(by_seed.items()) for (v, label), pts in c.items() for p in pts]


def mean_points(curves: dict) -> list[dict]:
  """The rows of the mean curves (`analysis.mean_curves`): one per model and point."""
  return [{"label": label, **p} for (v, label), pts in curves.items() for p in pts]


def titles(profile: str, seeds) -> dict:
  """Each panel's title in the figure: its variant, the profile, and what the bars show."""
  return {v: f"{v} ({profile} profile): mean over up to {len(seeds)} seeds, bars: their range" for v in variants(profile)}


def standing(runs: dict) -> list[dict]:
  """Where each run stands (`calibration.standing`), with its variant."""
  return [{"variant": v, **row} for v, rs in runs.items() for row in calibration.standing(rs)]


def dense_runs(runs: list[tuple[str, int, dict]]) -> list[dict]:
  """The metrics of the dense ViT's runs that have a validation curve (the calibration criteria
  need one), in run order."""
  return [m for base, s, m in runs if base == Arm("image", "vit").label and m.get("curve") and m["curve"][-1].get("val_accuracy") is not None]


def matvit(by_seed: dict, runs: dict, profile: str) -> dict | None:
  """The MatViT diagnostics on the first variant: every point against the dense ViT
  (`comparisons.against_dense`), each model's training compute (`comparisons.training_compute`),
  and per seed the isoFLOPs run minus MatViT interpolated at its FLOPs. None without MatViT."""
  v = variants(profile)[0]
  if not any((v, "MatViT") in c for c in by_seed.values()):
    return None
  figure = {a.label for a in models(profile) | {iso_arm(profile)}}
  compute = comparisons.training_compute([r for r in runs[v] if r[0] in figure])
  iso_minus = {s: p["accuracy_pct"] - claims.at_flops(c[v, "MatViT"], p["gflops"])
               for s, c in by_seed.items() if (v, "MoNE-isoFLOPs") in c and (v, "MatViT") in c for p in c[v, "MoNE-isoFLOPs"]}
  return {"against_dense": comparisons.against_dense(by_seed, v), "training_compute": compute, "iso_minus_matvit": iso_minus}


def _line(r: dict) -> str:
  ci = "" if r["n_seeds"] < 2 else f", 95% CI [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]"
  return f"{r['minus_dense']:+.2f} points{ci}, {r['n_seeds']} seeds, at {r['gflops'] * 1e3:.1f} MFLOPs"


def matvit_lines(m: dict, profile: str) -> list[str]:
  """What the MatViT diagnostics (`matvit`) say, one line each: MatViT's full and narrowest
  widths and MoNE's cheapest point minus the dense ViT, the training FLOPs of MatViT and that MoNE,
  and each seed's isoFLOPs run minus MatViT."""
  iso = iso_arm(profile).label
  matvit_rows = [r for r in m["against_dense"] if r["label"] == Arm("image", "matvit").curve]
  cheapest = min((r for r in m["against_dense"] if r["label"] == Arm("image", "mone").curve), key=lambda r: r["gflops"])
  cheapest_label = f"MoNE e_c={cheapest['e_c']}"
  times = {r["label"]: r["x_dense"] for r in m["training_compute"]}
  out = [f"MatViT at full width minus the dense ViT: {_line(matvit_rows[-1])}",
         f"MatViT's narrowest width minus the dense ViT: {_line(matvit_rows[0])}",
         f"MoNE's cheapest point ({cheapest_label}) minus the dense ViT: {_line(cheapest)}",
         f"training FLOPs as a multiple of the dense ViT's: MatViT {times['MatViT']:.2f}x, {cheapest_label} {times[cheapest_label]:.2f}x"]
  return out + [f"seed {s}: {iso} ({times[iso]:.2f}x the dense ViT's training FLOPs) minus MatViT "
                f"interpolated at its FLOPs: {d:+.2f} points" for s, d in m["iso_minus_matvit"].items()]


def decide(by_seed: dict, profile: str, pending: list[str]) -> list[dict]:
  """Figure 3's claims on the first variant (`comparisons.figure3`, within `TOLERANCE`): the
  isoFLOPs claim is not testable while its planned run is pending, and absent where the profile
  plans none."""
  iso = f"{iso_arm(profile).label}, seed "
  return comparisons.figure3(by_seed, variants(profile)[0], iso_planned=any(label.startswith(iso) for label in pending))


def summary(curves: dict, profile: str, pending: list[str]) -> str:
  """The dense ViT's FLOPs and mean accuracy on the first variant against the paper's ViTs, and
  whether the claims use every planned seed."""
  v = variants(profile)[0]
  vit = curves[v, "ViT"][0]
  out = (f"profile={profile!r}, {v}: dense ViT {vit['gflops'] * 1e3:.2f} MFLOPs, {vit['accuracy_pct']:.1f}% (mean of {vit['n_seeds']} seeds) "
         f"(the paper's ViT-S/16, B/16, L/16 at 224 px: about {', '.join(map(str, PAPER_VIT_GFLOPS.values()))} GFLOPs)")
  if pending:
    out += f"\n{len(pending)} runs of this chapter have not been trained yet: its claims use the seeds trained so far"
  return out


def headline_note(decided: list[dict]) -> str:
  """What the seeds of the headline claim rule out (`comparisons.equivalence_note`), as a
  Markdown paragraph; empty where the claim has no note."""
  headline = next((c for c in decided if c["id"] == claims.HEADLINE), None)
  if not headline or not headline.get("note"):
    return ""
  return f"**What the seeds rule out** (`{headline['id']}`). {headline['note']}"


def as_it_looks(by_seed: dict, dense: list[dict], profile: str) -> str:
  """What the figure shows that no frozen claim decides, said plainly as Markdown bullets, all
  exploratory: how far MatViT's curve lies above each MoNE point (MatViT interpolated at that
  point's FLOPs, minus MoNE, the mean over the seeds that trained both; only the cheapest point is a
  tested claim), each e_c whose mean accuracy is below a smaller e_c's, and the dense ViT seeds whose
  validation accuracy was still rising when training stopped (`calibration.check`). dense: the
  dense ViT's run metrics (`dense_runs`)."""
  import numpy as np
  v = variants(profile)[0]
  mone = sorted({p["e_c"] for c in by_seed.values() for p in c.get((v, "MoNE"), [])})
  out = []
  gaps = {}
  for e in mone:
    d = [claims.at_flops(c[v, "MatViT"], p["gflops"]) - p["accuracy_pct"]
         for c in by_seed.values() if (v, "MatViT") in c for p in c.get((v, "MoNE"), []) if p["e_c"] == e]
    d = [x for x in d if np.isfinite(x)]
    if d:
      gaps[e] = (float(np.mean(d)), len(d))
  if gaps:
    cheapest = min(gaps)
    above = all(g > 0 for g, _ in gaps.values())
    out.append(f"- **MatViT {'lies above MoNE at every' if above else 'against MoNE at each'} e_c.** MatViT's curve, read "
               "at the FLOPs of each MoNE point, minus MoNE (mean over the paired seeds): "
               + ", ".join(f"$e_c = {e}$: {g:+.1f} points ({n} seeds)" for e, (g, n) in gaps.items())
               + f". Only the cheapest point ($e_c = {cheapest}$) is a tested claim (MoNE beats MatViT, in the verdicts "
               "above); the others are untested: what the figure shows, not verdicts.")
  acc = {}
  for e in mone:
    a = [p["accuracy_pct"] for c in by_seed.values() for p in c.get((v, "MoNE"), []) if p["e_c"] == e]
    acc[e] = (float(np.mean(a)), len(a))
  drops = [(hi, lo) for i, hi in enumerate(mone) for lo in mone[:i] if acc[hi][0] < acc[lo][0]]
  if drops:
    below = {}
    for hi, lo in drops:
      below.setdefault(hi, []).append(lo)
    out.append("- **MoNE is not monotone in $e_c$.** " + "; ".join(
        f"$e_c = {hi}$ ({acc[hi][0]:.2f}%) is below " + " and ".join(f"$e_c = {lo}$ ({acc[lo][0]:.2f}%)" for lo in los)
        for hi, los in below.items())
        + ", means over the seeds, though a larger $e_c$ gives the tokens more compute. The method does not predict this; "
          "the next profile, which trains every arm to its plateau, tests whether it remains.")
  rising = [m["config"]["seed"] for m in dense if not calibration.check(m)["plateau"]]
  if rising:
    out.append(f"- **The dense ViT is not at a plateau at every seed.** At seed{'s' if len(rising) > 1 else ''} "
               + ", ".join(map(str, rising)) + f" of {len(dense)} its validation accuracy rose by more than "
               f"{calibration.PLATEAU_GAIN * 100:g} points over the last quarter of training: more steps would likely lift "
               "the baseline every comparison is made against.")
  return "\n".join(out)


def standing_summary(status: list[dict]) -> list[dict]:
  """`standing`'s rows summed up per model (the page stays short; every run's row is in the chapter's
  calibration.json): its seeds, the median and range of final validation accuracy, the median gain
  over the last quarter, and the seeds still rising by more than the plateau bar at the end."""
  import numpy as np
  out = {}
  for r in status:
    out.setdefault((r["variant"], r["run"]), []).append(r)
  rows = []
  for (variant, run), rs in out.items():
    val = [r["val_pct"] for r in rs if r["val_pct"] is not None]
    gain = {r["seed"]: r["last_quarter_gain"] for r in rs if r["last_quarter_gain"] is not None}
    rising = [s for s, g in gain.items() if g > 100 * calibration.PLATEAU_GAIN + 1e-9]
    rows.append({"variant": variant, "model": run, "seeds": len(rs),
                 "validation (%), median [range]": f"{np.median(val):.1f} [{min(val):.1f}, {max(val):.1f}]" if val else "-",
                 "last-quarter gain, median": f"{np.median(list(gain.values())):+.2f}" if gain else "-",
                 "seeds still rising": ", ".join(map(str, rising)) or "none"})
  return rows
