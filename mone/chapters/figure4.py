"""Figure 4 (chapter 04): video classification, accuracy against FLOPs per clip.

The embedded moving-digits tasks stand in for the paper's datasets (`TASKS`): on each, the dense
ViViT, MatViViT and MoNE are trained at every seed of the plan (`planned`). This module builds the
chapter's tables and printed lines from the runs, says whether the temporal task separates the
nested widths enough to test what MoNE's narrow experts cost (`standing_lines`, `caveats`), and
decides the chapter's claims (`chapter_claims`): the paper's SSv2 FLOP accounting, recomputed by
`mone.flops` (arithmetic), and per task the comparisons of `comparisons.figure4`.
"""
from mone import flops
from mone.configs import figures, profiles, reads, schema
from mone.configs.arms import Arm
from mone.evidence import claims, comparisons
from mone.chapters import calibration, headlines
from mone.runs import experiments
from mone.evidence.declarations import ACCURACY, BEATS, Chapter, Claim
from mone.models import config, kinds

TASKS = reads.FIGURE4_TASKS  # ours -> the paper's
PAPER_GFLOPS = {"vivit": 376.3, "mone_0.4": 162.8}  # SSv2, per clip (Fig. 4)
COLUMNS = ["task", "label", "e_c", "width_index", "gflops", "accuracy_pct", "accuracy_min", "accuracy_max", "n_seeds"]
# The claims `comparisons.figure4` decides on each task.
_CHEAPEST = (f"{ACCURACY} of MoNE at its cheapest e_c inside MatViViT's FLOPs range minus MatViViT's "
             "interpolated at the same FLOPs")
CHAPTER = Chapter("Figure 4", "fig4.", "Accuracy per FLOP", (
    Claim("fig4.", ("paired", "video models (ViViT, MatViViT, MoNE): the same seed gives both arms the same data order and "
                    "identical initial weights for every parameter they share but the temporal position embedding, which "
                    "MoNE's extra parameter alpha moves to the next random draw (tested); sharing the rest, the arms are not "
                    "the independent samples Welch's interval assumes, and a paired interval holds whatever their correlation")),
    Claim("fig4.appearance.mone_no_drop", metric=ACCURACY, arms=(Arm("appearance", "mone", 0.4), Arm("appearance", "vit")),
          rule=("no_worse", headlines.TOLERANCE)),
    Claim("fig4.appearance.mone_beats_matvivit", metric=_CHEAPEST,
          arms=(Arm("appearance", "mone", 0.4), Arm("appearance", "matvit")), rule=BEATS),
    Claim("fig4.temporal.mone_no_drop", metric=ACCURACY, arms=(Arm("temporal", "mone", 0.4), Arm("temporal", "vit")),
          rule=("no_worse", headlines.TOLERANCE)),
    Claim("fig4.temporal.mone_beats_matvivit", metric=_CHEAPEST,
          arms=("temporal: MoNE e_c=0.3, 0.4", Arm("temporal", "matvit")), rule=BEATS),
    # arithmetic: the paper's SSv2 GFLOPs recomputed, each task's FLOP reduction
    Claim("fig4.ssv2_vivit_gflops"), Claim("fig4.ssv2_mone_gflops"),
    *(Claim(f"fig4.{task}.flops_reduction") for task in TASKS),
))
CAVEAT = "the temporal claims (`fig4.temporal.*`) compare models that this task barely separates"


def ssv2_gflops() -> dict:
  """GFLOPs per clip of the paper's SSv2 models, by `mone.flops`' count (no training): ViViT-B/16x2
  FE (32 frames, 256 px, 174 classes), dense and MoNE at e_c = 0.4."""
  ssv2 = config.vivit("B/16x2", image_size=256, num_classes=174)
  return {"vivit": flops.gflops(ssv2, "vit"), "mone_0.4": flops.gflops(ssv2, "mone", 0.4)}


def ssv2_line() -> str:
  """`ssv2_gflops` beside the paper's numbers, as the chapter prints them."""
  g = ssv2_gflops()
  return (f"SSv2 GFLOPs per clip: dense ViViT {g['vivit']:.1f} (paper {PAPER_GFLOPS['vivit']}), "
          f"MoNE at e_c=0.4 {g['mone_0.4']:.1f} (paper {PAPER_GFLOPS['mone_0.4']}); see mone.flops for the accounting")


arms = reads.figure4_arms  # per task ViViT, MatViViT and MoNE at each e_c of the profile's grid


def planned(profile: str, seeds, data_dir: str = "") -> list:
  """(label, config) of Figure 4's runs of the video plan (`figures.video_runs`) at `seeds`. The
  paper profile fine-tunes MoNE from the MatViViT run of its task and seed with isoFLOPs
  training, as the paper does (Sec. 5); the others train MoNE from scratch."""
  wanted = arms(profile)
  out = [r for r in figures.video_runs(profile, seeds, data_dir) if r.arm in wanted]
  if profile != "paper":
    return out
  # Keyed by the arm's task, not cfg.video_task: every paper dataset trains the temporal task,
  # and keying by it fine-tuned SSv2's MoNE from the Kinetics-400 MatViViT.
  matvit = {(r.arm.task, r[1].seed): r[1] for r in out if isinstance(r.arm.model_kind, kinds.MatViT)}
  init = lambda r: {"init_from": str(experiments.workdir(matvit[r.arm.task, r[1].seed])), "iso_flops": True}
  return [(r[0], schema.apply_overrides(r[1], init(r)) if r.arm.model_kind.routed else r[1]) for r in out]


def per_seed(by_seed: dict) -> list[dict]:
  """Every point of every seed's curves (`headlines.curves_by_seed`), one row each, by seed."""
  return [{"seed": s, "task": task, "label": label, **p} for s, c in sorted(by_seed.items())
          for (task, label), pts in c.items() for p in pts]


def rows(curves: dict) -> list[dict]:
  """Every point of the curves averaged over seeds (`analysis.mean_curves`), one row each."""
  return [{"task": task, "label": label, **p} for (task, label), pts in curves.items() for p in pts]


def titles(curves: dict, seeds: int) -> dict:
  """The figure's panel titles, one per task with a dense ViViT curve."""
  return {t: f"{t} task (for {name}): mean over up to {seeds} seeds, bars: their range"
          for t, name in TASKS.items() if (t, "ViViT") in curves}


def _below(gap: float) -> str:
  return f"{abs(100 * gap):.1f} points {'below' if gap >= 0 else 'above'}"


def standing_lines(status: list[dict], gaps: dict, mean: dict | None, profile: str) -> list[str]:
  """What the chapter prints below the runs' standing (`calibration.standing`): per task, each
  model's training minus validation accuracy by seed (memorisation), then per seed how far
  MatViViT's quarter-width sub-model falls below the dense ViViT (`calibration.seed_discrimination`:
  gaps), and the mean over seeds (`calibration.mean_discrimination`: mean, None without a seed)."""
  out = []
  gap = {(r["run"], r["seed"]): r["train_minus_val"] for r in status if r["train_minus_val"] is not None}
  for task in ("appearance", "temporal"):
    models = sorted({run for run, _ in gap if run.startswith(f"{task}: ")})
    if models:
      out.append(f"{task} task, accuracy on training clips minus validation, by seed (points): " + "; ".join(
          f"{run.split(': ')[1]} " + " / ".join(f"{gap[run, s]:.2f}" for s in sorted(s for r, s in gap if r == run)) for run in models))
  for s, d in gaps.items():
    out.append(f"seed {s}: dense ViViT {100 * d['dense']:.1f}%, MatViViT D/8, D/4, D/2, D {' / '.join(f'{100 * a:.1f}' for a in d['by_width'])}% "
               f"on validation: D/4 is {_below(d['gap'])} ({_below(d['test']['gap'])} on the test clips)")
  if not mean:
    return out + [f"no seed has a dense and a MatViViT run with validation clips ({profile} profile)"]
  verdict = "discriminates" if mean["discriminates"] else "discriminates less than the 5-point bar asks"
  return out + [f"mean over {mean['seeds']} seed(s): D/4 {100 * mean['gap']:.1f} points below the dense ViViT on validation "
                f"({100 * mean['test_gap']:.1f} on test): the temporal task {verdict}"
                + (f" ({len(gaps)} of 3 seeds: a first reading)" if len(gaps) < 3 else "")]


def caveats(mean: dict | None, profile: str) -> list[str]:
  """The chapter's caveats: a temporal task that does not separate the widths qualifies every
  temporal claim (`calibration.caveats`), and on the small profile, how its noise level was
  chosen on validation (`calibration.noise_caveat`: it was first chosen on the test clips)."""
  noise = calibration.noise_caveat(calibration.noise_choice()) if profile == "small" else []
  return calibration.caveats(mean, CAVEAT) + noise


def chapter_claims(by_seed: dict) -> list[dict]:
  """Chapter 04's claims: the paper's SSv2 GFLOPs recomputed by `mone.flops` (within 1%), then per
  task (`comparisons.figure4`, over the seeds that trained both arms) MoNE at e_c = 0.4 with no
  accuracy drop against the dense ViViT (within `headlines.TOLERANCE` points, as declared), with 2x fewer FLOPs per
  clip, and more accurate than MatViViT at equal FLOPs."""
  g = ssv2_gflops()
  out = [claims.arithmetic("fig4.ssv2_vivit_gflops", "ViViT-B/16x2 FE on SSv2 clips (32 frames, 256 px) costs the paper's "
                           "GFLOPs by this repository's analytic FLOP count (within 1%)", PAPER_GFLOPS["vivit"],
                           g["vivit"], tolerance=0.01, relative=True, unit="GFLOPs"),
         claims.arithmetic("fig4.ssv2_mone_gflops", "MoNE at e_c = 0.4 on the same clips costs the paper's GFLOPs (within 1%)",
                           PAPER_GFLOPS["mone_0.4"], g["mone_0.4"], tolerance=0.01, relative=True, unit="GFLOPs")]
  for task, paper_name in TASKS.items():
    out += comparisons.figure4(by_seed, task, paper_name, comparisons.VIDEO_MIN_REDUCTION)
  return out


def summary_lines(curves: dict, profile: str, pending: list[str]) -> list[str]:
  """Per task, the dense ViViT's cost and mean accuracy; then how many runs have not trained yet."""
  out = []
  for task, paper_name in TASKS.items():
    if (task, "ViViT") in curves:
      vit = curves[task, "ViViT"][0]
      out.append(f"profile={profile!r}, {task} task (for {paper_name}): ViViT {vit['gflops'] * 1e3:.2f} MFLOPs/clip, "
                 f"{vit['accuracy_pct']:.1f}% (mean of {vit['n_seeds']} seed{'s' * (vit['n_seeds'] != 1)})")
  if pending:
    out.append(f"{len(pending)} runs of this chapter have not been trained yet: its claims use the seeds trained so far")
  return out


def metrics(rows: list[dict], pending: list[str], tolerance: float = headlines.TOLERANCE) -> dict:
  """The chapter's metrics.json (`chapter.save_metrics` adds the provenance)."""
  return {"points": rows, "tolerance_points": tolerance, "pending": pending, "ssv2_gflops": ssv2_gflops()}
