"""Table 1 and Sec. 4.3 (chapter 02): how the capacity is distributed over the nested experts,
and how Eq. 3's distribution compares with the paper's alternative allocations.

Eq. 3's distributions across e_c need no training (`distributions`). The six Table 1 models are
trained on the temporal video task, this repository's stand-in for SSv2 (`planned`); `table`
reads each run at its training allocation, and `chapter_claims` decides the chapter's claims:
the static allocations' budgets (arithmetic) and the accuracy comparisons over paired seeds
(`headlines.table1_claims`, which the landing page's headlines share).
"""
import numpy as np

from mone import capacity
from mone.evidence import claims
from mone.chapters import analysis, calibration, headlines
from mone.evidence.declarations import ACCURACY, SAME_SEED, Chapter, Claim
from mone.configs import figures
from mone.configs.arms import Arm

E = 4  # nested experts: D/8, D/4, D/2 and D, as in the paper
# (label, allocation, e_c or None for a static allocation, the paper's SSv2 accuracy, the plan's arm) of
# each row of Table 1 (`headlines.TABLE1_ARMS`), from its arm: the label is its curve's model, "MoNE" or
# the allocation's name, and the paper gives MoNE's accuracy by e_c
TABLE = tuple((a.curve, a.allocation, a.e_c, headlines.PAPER_SSV2[a.e_c if a.allocation == capacity.EQ3 else a.curve], a)
              for a in headlines.TABLE1_ARMS)
# The paper's static budgets (Sec. 6): (allocation, label, e_c)
BUDGETS = (("proportionate", "Proportionate", 0.27), ("uniform", "Uniform", 0.47))
COLUMNS = ["distribution", "budget", "seed", "e_c", "gflops", "accuracy_pct", "stderr_pct", "paper_ssv2_pct", "learned"]
# MoNE against each other allocation of `headlines.TABLE1`, the arms paired by seed.
CHAPTER = Chapter("Table 1", "table1.", "Accuracy per FLOP", (
    Claim("table1.", ("paired", f"MoNE under other capacity allocations on one video task: {SAME_SEED}")),
    *(Claim(headlines.table1_id(arm, e_c), metric=ACCURACY, arms=(Arm("temporal", "mone", e_c), arm),
            rule=headlines.table1_rule(arm)) for arm, e_c in headlines.TABLE1),
    *(Claim(f"table1.{name}_budget") for name, _, _ in BUDGETS),  # arithmetic (`budget_claims`)
))
CAVEAT = "Table 1's accuracy comparisons (`table1.mone*`), trained on it, compare allocations that it barely separates"


def widths(experts: int = E) -> list[str]:
  """The experts' widths, smallest first: D/8, D/4, D/2, D for four."""
  return [f"D/{2 ** (experts - 1 - i)}" if i < experts - 1 else "D" for i in range(experts)]


def distributions(experts: int = E, grid=None) -> tuple:
  """Eq. 3's distributions (beta = 10, delta = 2) at each e_c of grid (0.15 to 1 by 0.05):
  (grid, one distribution per row, the experts' widths, table rows with the e_c each
  distribution gives back, `check_e_c`, so the table shows that the constraint holds)."""
  grid = np.round(np.arange(0.15, 1.0001, 0.05), 2) if grid is None else np.asarray(grid)
  dist = np.array([capacity.capacity_distribution(e, experts) for e in grid])
  names = widths(experts)
  rows = [{"e_c": float(e), **{f"c_{i + 1} ({w})": float(c[i]) for i, w in enumerate(names)},
           "check_e_c": capacity.effective_capacity(c)} for e, c in zip(grid, dist)]
  return grid, dist, names, rows


def alternatives(experts: int = E) -> list[str]:
  """One line per Table 1 model: its distribution over the experts and the e_c it gives (MoD
  Greedy's first entry is the fraction of dropped tokens, which cost nothing)."""
  out = []
  for label, name, e_c, _, _ in TABLE:
    c = capacity.allocation(name, e_c, experts)
    out.append(f"{label:14s} e_c={capacity.effective_capacity(c, drop_smallest=name == 'mod_greedy'):.3f}  c = ["
               + ", ".join(f"{x:.3f}" for x in c) + "]")
  return out


def planned(profile: str, seeds, data_dir: str = "") -> list:
  """(label, config) of the Table 1 runs of the video plan (`figures.video_runs`) at `seeds`."""
  wanted = {arm for *_, arm in TABLE}
  return [r for r in figures.video_runs(profile, seeds, data_dir) if r.arm in wanted]


def table(runs: list[tuple[str, int, dict]], seeds) -> list[dict]:
  """One row per Table 1 model and seed trained (runs: `headlines.landed`), in table order:
  its accuracy at its training allocation, the binomial standard error of that one run's test
  accuracy (test-set noise alone, not the seed's), the paper's SSv2 accuracy, and whether its
  training loss left the chance plateau (`analysis.left_plateau`)."""
  got = {(base, s): m for base, s, m in runs}
  out = []
  for label, name, e_c, paper, arm in TABLE:
    for s in seeds:
      if (m := got.get((arm.label, s))) is None:
        continue
      cfg_e_c = analysis._config_dict(m)["e_c"]
      ev = next(ev for ev in m["evals"] if ev["e_c"] == cfg_e_c)
      out.append({"distribution": label, "allocation": name, "budget": "static" if e_c is None else "dynamic", "seed": s,
                  "e_c": cfg_e_c, "gflops": ev["gflops"], "accuracy_pct": 100 * ev["accuracy"],
                  "stderr_pct": 100 * np.sqrt(ev["accuracy"] * (1 - ev["accuracy"]) / ev["num_examples"]),
                  "paper_ssv2_pct": paper, "learned": analysis.left_plateau(m)})
  return out


def budget(name: str, e_c: float | None, experts: int = E) -> float:
  """The e_c a Table 1 model runs at: its own for a static allocation (e_c None), else e_c."""
  return e_c or capacity.effective_capacity(capacity.allocation(name, None, experts))


def by_arm(rows: list[dict]) -> tuple[list[dict], list[str]]:
  """Table 1's rows (`table`) per arm of its figure (`plots.table1_figure`): (one row per arm
  and seed, the arms in table order), each arm named by its model and budget."""
  arm = lambda label, name, e_c: f"{label}\ne_c={budget(name, e_c):.2f}"
  arms = [arm(label, name, e_c) for label, name, e_c, _, _ in TABLE]
  out = [{"arm": arm(label, name, e_c), "model": label, "seed": r["seed"], "accuracy_pct": r["accuracy_pct"]}
         for label, name, e_c, _, _ in TABLE
         for r in rows if r["distribution"] == label and (r["budget"] == "static" or r["e_c"] == e_c)]
  return out, arms


def budget_claims(experts: int = E) -> list[dict]:
  """The static allocations' budgets against the paper's (arithmetic, within 0.005)."""
  return [claims.arithmetic(f"table1.{name}_budget", f"{label}'s static allocation has e_c = {paper} (within 0.005)",
                            paper, capacity.effective_capacity(capacity.allocation(name, None, experts)), tolerance=0.005)
          for name, label, paper in BUDGETS]


def chapter_claims(runs: list[tuple[str, int, dict]]) -> list[dict]:
  """Chapter 02's claims: the static budgets (`budget_claims`), then the accuracy comparisons
  over the seeds that trained both arms (`headlines.table1_claims`: MoNE at least as accurate as
  each static allocation within `headlines.TOLERANCE` points, more accurate than each greedy one)."""
  return budget_claims() + headlines.table1_claims(runs)


FAR_BELOW = 5.0  # points under its arm's median: a run that stalled for much of its training


def far_below(rows: list[dict], gap: float = FAR_BELOW) -> list[dict]:
  """The runs of `table`'s rows that ended more than `gap` points below the median of their arm
  (model and budget) over the seeds: the ones a mean over seeds follows rather than the arm."""
  out = []
  for label, name, e_c, _, _ in TABLE:
    arm = [r for r in rows if r["distribution"] == label and (r["budget"] == "static" or r["e_c"] == e_c)]
    median = float(np.median([r["accuracy_pct"] for r in arm])) if arm else 0.0
    out += [{**r, "arm_median_pct": median} for r in arm if r["accuracy_pct"] < median - gap]
  return out


def far_below_text(rows: list[dict], gap: float = FAR_BELOW) -> str:
  """What `far_below` finds, in words: each run with its accuracy and its arm's median, whether it
  ever left the chance plateau, and how many are baselines (not MoNE)."""
  runs = far_below(rows, gap)
  if not runs:
    return f"No run ended more than {gap:g} points below its arm's median."
  name = lambda r: r["distribution"] + (f" e_c={r['e_c']:g}" if r["budget"] == "dynamic" else "")
  listed = "; ".join(f"{name(r)} seed {r['seed']}: {r['accuracy_pct']:.1f}% (its arm's median "
                     f"{r['arm_median_pct']:.1f}%{', never left chance' if r['learned'] is False else ''})" for r in runs)
  baselines = sum(r["allocation"] != capacity.EQ3 for r in runs)
  return (f"{len(runs)} of {len(rows)} runs ended more than {gap:g} points below their arm's median, "
          f"{baselines} of them in baseline arms: {listed}.")


def mone_means(rows: list[dict]) -> str:
  """MoNE's mean accuracy at e_c 0.4 and 0.3 over the seeds trained, beside the paper's (nan: none)."""
  mean = lambda e: np.mean([r["accuracy_pct"] for r in rows if r["allocation"] == capacity.EQ3 and r["e_c"] == e] or [np.nan])
  return f"MoNE e_c=0.4 {mean(0.4):.1f}% (paper 64.6), e_c=0.3 {mean(0.3):.1f}% (paper 64.2), means over the seeds trained"


def caveats(profile: str, seeds, data_dir: str = "") -> list[str]:
  """The chapter's caveat: Table 1 is trained on the temporal task, so while that task does not
  separate the widths (chapter 04: `headlines.temporal_discrimination`), the same caveat qualifies it."""
  return calibration.caveats(headlines.temporal_discrimination(profile, seeds, data_dir), CAVEAT)
