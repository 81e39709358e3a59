"""Chapter 08's verdicts: the paper's three wall-clock claims and this repository's own speed targets,
each decided from the interval over several benchmark processes (`mone.chapters.claims.timing`, `.target`).

The NeurIPS version of the paper times MoNE on a V100 (the chapter quotes it): ViViT-FE-B/16 on SSv2
at e_c = 0.3 runs with 1.97x lower latency; latency and throughput gains scale linearly with the FLOP
reduction across capacities; routing adds 0.5 ms to a 190 ms ViT-B/16 forward. Each test below was
fixed before any repeated run was measured. One benchmark process is not enough: a median on a shared
2-core machine moves by 10-15% between processes, so each claim is measured once per process, in
`mone.bench.repeats.RUNS` processes that alternate the three files, and decided from the t-interval of the mean.
"""
import numpy as np

from mone.bench import repeats
from mone.bench import targets as bench_targets
from mone.chapters import claims, stats

# The tests, stated before measuring. Latency: the paper's 1.97x at e_c = 0.3, met within 10% or
# better. Linear: least squares of latency on analytic FLOPs over the dense model and MoNE at
# every e_c timed, R^2 at least 0.95. Routing: at most the paper's 0.3% of the forward.
PAPER_LATENCY_GAIN, LATENCY_TOLERANCE = 1.97, 0.10
# The paper's row (376 against 162 GFLOPs) has 2.32x fewer FLOPs. It labels that row e_c = 0.3, yet
# in this repository's FLOP count e_c = 0.3 gives 2.88x fewer and e_c = 0.4 gives 2.28x (chapter 04
# finds the paper's 162.8 GFLOPs at e_c = 0.4): the latency claim is tested at the e_c whose FLOP
# ratio is nearest the paper's, its operating point, and the e_c = 0.3 reading is shown beside it.
PAPER_FLOP_RATIO = 376 / 162
LINEAR_R2 = 0.95
ROUTING_SHARE_PCT = 0.3
V100 = "NeurIPS version, one V100"


def repeated(profile: str, recompute: bool = False) -> dict[str, list[dict]]:
  """{'targets' | 'video' | 'routing': one benchmark per process} (`mone.bench.repeats`), measured
  first for the smoke profile (in this process), with recompute, or where a file is missing."""
  if recompute or profile == "smoke":
    repeats.measure(profile, recompute=True, in_process=profile == "smoke", log=lambda *a, **k: None)
  else:
    repeats.measure(profile)
  return repeats.load(profile)


def linear_fit(rows) -> dict:
  """Least squares of median latency (ms) on analytic GFLOPs over one process's rows: slope,
  intercept (the fixed cost at no FLOPs) and R^2."""
  x = np.array([r["gflops"] for r in rows], float)
  y = np.array([r["median_ms"] for r in rows], float)
  slope, intercept = np.polyfit(x, y, 1)
  residual = y - (slope * x + intercept)
  return {"slope_ms_per_gflop": float(slope), "intercept_ms": float(intercept),
          "r2": float(1 - residual @ residual / ((y - y.mean()) @ (y - y.mean())))}


def _mone_row(rows, e_c):
  return next(r for r in rows if r["model"] == "mone" and abs(r["e_c"] - e_c) < 1e-9)


def matched_e_c(rows) -> float:
  """The MoNE e_c of one process's video rows whose FLOP ratio to the dense model is nearest the
  paper's (`PAPER_FLOP_RATIO`)."""
  return min((r for r in rows if r["model"] == "mone"), key=lambda r: abs(r["flop_ratio"] - PAPER_FLOP_RATIO))["e_c"]


def paper_claims(rep: dict) -> list[dict]:
  """The paper's three wall-clock claims from the repeated files (`repeated`)."""
  video = [b["rows"] for b in rep["video"]]
  clip = video[0][0]["workload"]
  e_c = matched_e_c(video[0])
  at = [_mone_row(rows, e_c) for rows in video]
  at03 = [_mone_row(rows, 0.3)["speedup"] for rows in video]
  mean03, lo03, hi03 = stats.paired_ci(at03)
  ratio03 = _mone_row(video[0], 0.3)["flop_ratio"]
  routing = [next(r for r in b["rows"] if r["model"] == "routing") for b in rep["routing"]]
  e_cs = ", ".join(f"{r['e_c']:g}" for r in video[0] if r["model"] == "mone")
  return [
      claims.timing("speed.paper.video_latency_gain",
                    f"{clip}, one clip: MoNE at e_c = {e_c:g}, where its FLOPs are {at[0]['flop_ratio']:.2f}x fewer than "
                    f"the dense model's (the paper's row: {PAPER_FLOP_RATIO:.2f}x), runs with about 2x lower latency "
                    f"(at least {PAPER_LATENCY_GAIN * (1 - LATENCY_TOLERANCE):.2f}x: the paper's {PAPER_LATENCY_GAIN}x "
                    f"within {LATENCY_TOLERANCE:.0%})",
                    f"1.97x lower latency (1.94x throughput) at 2.32x fewer FLOPs ({V100})", [r["speedup"] for r in at],
                    threshold=PAPER_LATENCY_GAIN * (1 - LATENCY_TOLERANCE), unit="x",
                    note=(f"The paper labels its row e_c = 0.3; here e_c = 0.3 has {ratio03:.2f}x fewer FLOPs, more than "
                          f"the paper's {PAPER_FLOP_RATIO:.2f}x, so the claim is tested at e_c = {e_c:g}, the same FLOP "
                          f"ratio. At e_c = 0.3, as this claim was tested before: {mean03:.2f}x, 95% CI "
                          f"[{lo03:.2f}, {hi03:.2f}] over the same processes.")),
      claims.timing("speed.paper.latency_linear_in_flops",
                    f"{clip}: latency is linear in FLOPs across the dense model and MoNE at e_c = {e_cs} "
                    f"(R^2 of a least-squares line at least {LINEAR_R2})",
                    f"gains scale linearly with the FLOP reduction (Fig. 6, {V100})",
                    [linear_fit(rows)["r2"] for rows in video], threshold=LINEAR_R2),
      claims.timing("speed.paper.routing_share",
                    f"{rep['routing'][0]['rows'][0]['workload'].replace(' routing', '')} MoNE forward at e_c = "
                    f"{routing[0]['e_c']:g}, batch {routing[0]['batch']}: routing (router, Algorithm 1, sort and gather) "
                    f"takes at most {ROUTING_SHARE_PCT}% of it",
                    f"0.5 ms of a 190 ms ViT-B/16 forward, under 0.3% ({V100})", [100 * r["share"] for r in routing],
                    threshold=ROUTING_SHARE_PCT, at_most=True, unit="%"),
  ]


def target_values(rep: dict) -> list[dict]:
  """Per (target, batch) of `mone.bench.targets.BENCHMARK`: the value each process measured, on the
  stricter of its two readings (against the dense model and against the fastest full-width one)."""
  per = [bench_targets.check_targets(b["rows"]) for b in rep["targets"]]
  key = lambda c: (c["workload"], c["mode"], c["batch"], c["e_c"], c["metric"])
  if len({tuple(map(key, checks)) for checks in per}) != 1:
    raise ValueError("the repeated target files measured different groups; measure them with one plan")
  return [{**same[0], "values": [min(c["measured"], c["strict"]) for c in same]} for same in zip(*per)]


def target_claims(rep: dict) -> list[dict]:
  """Each of this repository's speed targets, met / missed / within noise over the processes."""
  return [claims.target(f"speed.{t['mode']}.{t['metric']}.ec{t['e_c']:g}.batch{t['batch']}".replace("ec0.", "ec0"),
                        f"{t['workload']}, {t['mode']}, batch {t['batch']}: MoNE at e_c = {t['e_c']:g} reaches "
                        f"{'an' if t['metric'][0] in 'aeiou' else 'a'} {t['metric']} of at least {t['target']:.2f}",
                        t["values"], need=t["target"], unit="x" if t["metric"] == "speedup" else "")
          for t in target_values(rep)]


def video_figure(rep: dict):
  """Latency against analytic GFLOPs of the repeated video files, one colour per process, with each
  process's least-squares line: the linearity the paper states, and the fixed cost where the line
  meets zero FLOPs."""
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(6.4, 4.4))
  for i, b in enumerate(rep["video"], 1):
    rows = b["rows"]
    fit = linear_fit(rows)
    x = np.array([0, max(r["gflops"] for r in rows)])
    line, = ax.plot(x, fit["slope_ms_per_gflop"] * x + fit["intercept_ms"], lw=1, alpha=0.7,
                    label=f"process {i}: R$^2$ = {fit['r2']:.3f}")
    ax.plot([r["gflops"] for r in rows], [r["median_ms"] for r in rows], "o", color=line.get_color(), ms=6)
  for r in rep["video"][0]["rows"]:
    if r["model"] == "mone" and r["e_c"] == 1.0:
      continue  # the dense model's FLOPs: one label for both
    label = "dense and 1" if r["model"] == "dense" else f"{r['e_c']:g}"
    ax.annotate(label, (r["gflops"], r["median_ms"]), xytext=(-6, 7), textcoords="offset points", ha="right", fontsize=10)
  ax.set(xlim=(0, None), ylim=(0, None), xlabel="analytic GFLOPs per clip (multiply-adds)", ylabel="median latency (ms)",
         title=f"{rep['video'][0]['rows'][0]['workload']}: latency against FLOPs\n(labels: $e_c$; lines: least squares per process)")
  ax.grid(alpha=0.3)
  ax.legend(loc="upper left", fontsize=10, frameon=False)
  fig.tight_layout()
  return fig


def report(rep: dict) -> list[str]:
  """What the chapter prints of the repeated files: per process, when and on what it ran, the
  ViViT latencies with the linear fit, and routing's share."""
  lines = []
  for i, (t, v, r) in enumerate(zip(rep["targets"], rep["video"], rep["routing"]), 1):
    m = v["machine"]
    fit = linear_fit(v["rows"])
    lat = ", ".join(f"{'dense' if x['model'] == 'dense' else x['e_c']} {x['median_ms']:.0f} ms" for x in v["rows"])
    share = next(x for x in r["rows"] if x["model"] == "routing")
    lines.append(f"process {i} ({m['date'][:16]}, code {m.get('code')}, load {m['load_avg'][0]:.2f}): {lat}; "
                 f"fit {fit['slope_ms_per_gflop']:.2f} ms/GFLOP + {fit['intercept_ms']:.0f} ms, R^2 {fit['r2']:.4f}; "
                 f"routing {share['median_ms']:.2f} ms = {share['share']:.3%} of the forward")
  return lines


def metrics(rep: dict, cs: list[dict], gpu: dict | None = None) -> dict:
  """The chapter's metrics.json: the repeated files read, each process's machine, every claim's and
  target's mean, interval, values per process and verdict, and the GPU runs in a few numbers
  (`speed.gpu_ranges`, which the landing page's line on speed reads)."""
  return {"source": "bench/repeats/", "runs": len(rep["targets"]), "gpu": gpu,
          "machines": [b["machine"] for b in rep["targets"]],
          "claims": [{k: c[k] for k in ("id", "kind", "measured", "ci95", "per_run", "threshold", "relation", "verdict")}
                     for c in cs],
          "all_targets_met": bool(ts := [c for c in cs if c["kind"] == "target"]) and all(c["verdict"] == "met" for c in ts)}
