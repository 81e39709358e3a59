"""Training throughput: each arm of the small profile's training step against this machine's own
float32 matmul rate, and where a whole run's wall time goes besides the step.

  python -m mone.bench --training                          # every arm, results/bench/cpu-training.json
  python -m mone.bench --training --arms image:vit image:mone:0.4 --rounds 3 --json /tmp/t.json
  python -m mone.bench --training --attention --arms image:vit image:mone:0.3   # attention's share too

Run it on one pinned core (`taskset -c 0`), as the training queue's workers train, on an idle machine.

What is timed, in one process, so that every number shares the machine's state:

- the step: the jitted update (forward, backward, optimizer) of `mone.train.steps.make_train_step`
  on batches from the arm's real input pipeline, waited for step by step; the arms take turns,
  `--rounds` times `--steps` steps each, so that a change in the machine's load hits all of them.
  Its rate is GFLOP/s as the package counts FLOPs (`mone.flops`: one multiply-accumulate is one
  FLOP, the paper's convention), and as a fraction of the matmul rate counted the same way.
- the matmul rate: a 2048 x 2048 x 2048 float32 matmul (2048^3 multiply-accumulates), timed beside
  the steps, once before them and once after; the rate is the faster median of the two.
- what a run does outside the step, each part measured here and scaled to the arm's full run
  (`outside`): rendering the dataset (timed on RENDER_EXAMPLES examples, scaled by the run's
  training, validation and test examples), compiling the step, producing a batch (the pipeline's
  host work, which shares the core with the step), learning-curve evaluations (every eval_every
  steps: CURVE_TRAIN_EXAMPLES training images and the validation split), the final evaluation at
  every evaluation point on the test and validation splits (per-example time measured at the curve
  point, scaled to each point by its forward FLOPs), and checkpoints (every checkpoint_every steps).
- with `--attention`, the step's attention alone (`attention_program`): forward and backward of
  `mone.models.layers.attention` at every shape the step calls it with, one jitted program, timed in
  the same turns as the step. MoNE runs attention at full width, as the dense model does, so this
  time does not shrink with e_c: the summary's `mone_over_dense_bound` is the rate MoNE would reach
  against the dense model if the rest of its step ran at the dense step's rate per FLOP
  (`attention_bound`), the ceiling that attention alone puts on that ratio.

The rows are estimates of a run from measured parts, not a run.
"""
import contextlib
import dataclasses
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from mone.configs.arms import Arm, arms, select  # noqa: F401 (the arms it times)
from mone import flops
from mone.data import pipeline, sources
from mone.bench.attention_share import attention_bound, attention_program, recording_attention
from mone.models import kinds
from mone.train import checkpoints, evaluation, loop, sharding, steps

RENDER_EXAMPLES = 1024  # examples rendered to time a dataset's rendering per example
UNUSED_DATA_SEED = 10_000  # + the arm's index: the data seeds rendering is timed with
MATMUL_N = 2048


def _median_s(fn, reps: int) -> float:
  times = []
  for _ in range(reps):
    t = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t)
  return float(np.median(times))


def matmul_rate(n: int = MATMUL_N, reps: int = 7) -> float:
  """GFLOP/s of an n x n x n float32 matmul, counting a multiply-accumulate as one FLOP (as
  `mone.flops` counts the models): the machine's own rate for the arithmetic the step is made of."""
  a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
  b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
  f = jax.jit(jnp.matmul)
  f(a, b).block_until_ready()
  return n ** 3 / _median_s(lambda: f(a, b), reps) / 1e9


class Timed:
  """One arm made ready to time: its config, model, state, jitted step and a few real batches; with
  attention=True also its step's attention alone (`attention_program`)."""

  def __init__(self, arm: Arm, num_batches: int, arm_index: int = 0, profile: str = "small", attention: bool = False):
    self.arm, cfg = arm, arm.config(profile)
    self.cfg = cfg
    # Rendering, timed on a few examples (the pipeline's work per batch does not depend on how many
    # the set holds) of a data seed no run uses, so that no arm reads a set an earlier arm rendered
    # (the renderers keep their sets in memory).
    # The test examples evaluation is timed on: whole evaluation batches, so that no padding counts.
    evals = min(cfg.num_test, cfg.eval_batch_size * max(1, RENDER_EXAMPLES // cfg.eval_batch_size))
    small = dataclasses.replace(cfg, num_train=max(RENDER_EXAMPLES, cfg.batch_size), num_test=evals,
                                num_val=min(cfg.num_val, RENDER_EXAMPLES))
    t = time.perf_counter()
    sources.source(dataclasses.replace(small, data_seed=UNUSED_DATA_SEED + arm_index), "train")
    self.render_s_per_example = (time.perf_counter() - t) / small.num_train
    train_src = sources.source(small, "train")
    self.test_src = sources.source(small, "test")
    self.mesh = sharding.make_mesh(cfg)
    self.model = steps.build_model(cfg)
    self.total_steps = flops.num_train_steps(cfg)
    tx = steps.make_optimizer(cfg, self.total_steps)
    params = steps.init_params(cfg, self.model, jnp.zeros(steps.input_shape(cfg)))
    self.state = sharding.place(self.mesh, {"params": params, "opt_state": tx.init(params), "step": jnp.int32(0)},
                                cfg.sharding)
    self.step_fn = steps.make_train_step(cfg, self.model, tx, sharding.shardings(self.mesh, self.state, cfg.sharding))
    # The batches the steps are timed on, from the pipeline as the loop runs it.
    batches = pipeline.train_batches(train_src, cfg.batch_size, cfg.seed, num_steps=num_batches,
                                     num_classes=cfg.model.num_classes, prefetch=1)
    self.feeds, host = [], []
    for step, batch in batches:
      t = time.perf_counter()
      self.feeds.append((step, {"image": sharding.shard(self.mesh, sources.inputs(batch)),
                                "soft_label": sharding.shard(self.mesh, batch["soft_label"])}))
      host.append(time.perf_counter() - t)
    batches.close()
    self.data_s = self._batch_s(train_src) + float(np.median(host))
    t = time.perf_counter()
    with recording_attention() if attention else contextlib.nullcontext([]) as calls:  # traced at the first step
      self.state, loss = self.step_fn(self.state, self.feeds[0][1], steps.train_budget(cfg, self.feeds[0][0]))
    jax.block_until_ready(loss)
    self.compile_s = time.perf_counter() - t
    self.times = []
    self.attention_calls, self.attention_times = list(calls), []
    self.attention, self.attention_macs = attention_program(calls) if attention else (None, 0)
    self.eval_step = evaluation.eval_step_fn(cfg, self.model)

  def _batch_s(self, src) -> float:
    """Median host seconds of one training batch: the pipeline drained with nothing else running,
    so that its prefetch thread (one batch ahead) is the bottleneck and each batch waits for it."""
    gen = pipeline.train_batches(src, self.cfg.batch_size, self.cfg.seed + 1, num_steps=9,
                                 num_classes=self.cfg.model.num_classes, prefetch=1)
    times, it = [], iter(gen)
    for _ in range(9):
      t = time.perf_counter()
      next(it)
      times.append(time.perf_counter() - t)
    gen.close()
    return float(np.median(times[1:]))

  def run(self, n: int) -> None:
    """n steps on the arm's batches in turn, each waited for."""
    for i in range(n):
      step, feed = self.feeds[i % len(self.feeds)]
      t = time.perf_counter()
      self.state, loss = self.step_fn(self.state, feed, steps.train_budget(self.cfg, step))
      jax.block_until_ready(loss)
      self.times.append(time.perf_counter() - t)
    for _ in range(n if self.attention else 0):  # the same turn: the same machine state as the steps
      t = time.perf_counter()
      jax.block_until_ready(self.attention())
      self.attention_times.append(time.perf_counter() - t)

  def outside(self) -> dict:
    """Seconds of a full run spent outside the step, by part (see the module docstring)."""
    cfg = self.cfg
    e_c, width = evaluation.curve_point(cfg)
    evaluate = lambda: evaluation.evaluate(cfg, self.model, self.state["params"], self.test_src, e_c=e_c,
                                           width_index=width, mesh=self.mesh, step_fn=self.eval_step)
    t = time.perf_counter()
    evaluate()
    eval_compile_s = time.perf_counter() - t
    t = time.perf_counter()
    evaluate()
    per_example = (time.perf_counter() - t) / len(self.test_src)
    curve_gflops = flops.forward_gflops(cfg, e_c, width)
    points = evaluation.eval_points(cfg)
    final_examples = cfg.num_test + cfg.num_val
    final = sum(per_example * flops.forward_gflops(cfg, e, w) / curve_gflops * final_examples for e, w in points)
    curves = sum(loop.curve_point_due(cfg, done, self.total_steps) for done in range(1, self.total_steps + 1))
    curve = curves * per_example * (min(loop.CURVE_TRAIN_EXAMPLES, cfg.num_train) + cfg.num_val)
    return {
        "render_s": round(self.render_s_per_example * (cfg.num_train + cfg.num_val + cfg.num_test), 1),
        "compile_s": round(self.compile_s + eval_compile_s * len({e for e, _ in points}), 1),
        "data_s": round(self.data_s * self.total_steps, 1),
        "curve_eval_s": round(curve, 1),
        "final_eval_s": round(final, 1),
        "checkpoint_s": round(self._checkpoint_s() * (self.total_steps // cfg.checkpoint_every), 1),
    }

  def _checkpoint_s(self) -> float:
    """Seconds of one synchronous save of the state, as the loop saves it (the second of two saves)."""
    with tempfile.TemporaryDirectory() as d:
      mngr = checkpoints.manager(d, self.cfg)
      took = []
      for step in (1, 2):
        t = time.perf_counter()
        mngr.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(self.state),
                                                history=ocp.args.JsonSave({"history": []})))
        mngr.wait_until_finished()
        took.append(time.perf_counter() - t)
      mngr.close()
    return took[-1]


def row(timed: Timed, matmul_gflops: float) -> dict:
  """The arm's JSON row: its step, its rate, and its estimated run (see the module docstring)."""
  cfg = timed.cfg
  step_s = float(np.median(timed.times))
  gflop = 3 * flops.train_step_gflops(cfg) * cfg.batch_size  # forward + backward, as train_gflops counts
  outside = timed.outside()
  train_s = step_s * timed.total_steps
  kind = cfg.model_kind
  out = {
      "arm": timed.arm.name, "overrides": list(timed.arm.overrides), "recipe": cfg.name, "kind": cfg.kind, "label": kind.label,
      "e_c": kind.recorded_e_c(cfg), "routed": kind.routed, "dense": type(kind) is kinds.Kind,
      "allocation": getattr(cfg, "allocation", None),
      "router": cfg.model.router, "batch": cfg.batch_size, "steps": timed.total_steps,
      "step_ms": round(1e3 * step_s, 2), "step_ms_iqr": [round(1e3 * float(q), 2) for q in np.percentile(timed.times, [25, 75])],
      "timed_steps": len(timed.times), "gflop_per_step": round(gflop, 6),
      "gflop_per_s": round(gflop / step_s, 2), "matmul_fraction": round(gflop / step_s / matmul_gflops, 3),
      "run": {"train_step_s": round(train_s, 1), "outside_s": outside,
              "outside_share": round(sum(outside.values()) / (train_s + sum(outside.values())), 3),
              "estimated_wall_s": round(train_s + sum(outside.values()), 1)},
  }
  if timed.attention:
    att_s = float(np.median(timed.attention_times))
    out["attention"] = {"calls": [[*shape, str(dtype)] + (["manual_grad"] if manual else []) for shape, dtype, manual in timed.attention_calls],
                        "ms": round(1e3 * att_s, 2), "share": round(att_s / step_s, 3),
                        "gflop_per_step": round(timed.attention_macs / 1e9, 6)}
  return out


def summary(rows: list[dict]) -> dict:
  """Per kind (label), the median over its arms of GFLOP/s, matmul fraction and outside share;
  and MoNE's rate over the dense model's, per recipe. Rows of one set of overrides only
  (`paired` compares two)."""
  if len({tuple(r["overrides"]) for r in rows}) > 1:
    raise ValueError("summary takes the rows of one set of overrides; split them first")
  out = {}
  for label in dict.fromkeys(r["label"] for r in rows):
    mine = [r for r in rows if r["label"] == label]
    out[label] = {"arms": len(mine), "gflop_per_s": round(float(np.median([r["gflop_per_s"] for r in mine])), 2),
                  "matmul_fraction": round(float(np.median([r["matmul_fraction"] for r in mine])), 3),
                  "outside_share": round(float(np.median([r["run"]["outside_share"] for r in mine])), 3)}
  ratios, bounds = {}, {}
  for recipe in dict.fromkeys(r["recipe"] for r in rows):
    dense = [r for r in rows if r["recipe"] == recipe and r["dense"]]
    mone = [r for r in rows if r["recipe"] == recipe and r["routed"]]
    if dense and mone:
      ratios[recipe] = round(float(np.median([r["gflop_per_s"] for r in mone])) / dense[0]["gflop_per_s"], 3)
      timed = [r for r in mone if "attention" in r]
      if "attention" in dense[0] and timed:
        bounds[recipe] = round(float(np.median([attention_bound(dense[0], r) for r in timed])), 3)
  out = {"by_kind": out, "mone_over_dense": ratios}
  return out | ({"mone_over_dense_bound": bounds} if bounds else {})


def paired(reference: list[dict], variant: list[dict]) -> dict:
  """Each arm's variant over its reference, timed side by side: the ratio of their step rates
  (GFLOP/s; > 1: the variant is faster) and of their estimated runs' wall time, per arm and as
  medians per kind."""
  per_arm = {}
  for a, b in zip(reference, variant):
    assert a["arm"] == b["arm"]
    per_arm[a["arm"]] = {"label": a["label"], "step_speedup": round(b["gflop_per_s"] / a["gflop_per_s"], 3),
                         "run_speedup": round(a["run"]["estimated_wall_s"] / b["run"]["estimated_wall_s"], 3)}
  by_kind = {}
  for label in dict.fromkeys(v["label"] for v in per_arm.values()):
    mine = [v for v in per_arm.values() if v["label"] == label]
    by_kind[label] = {k: round(float(np.median([v[k] for v in mine])), 3) for k in ("step_speedup", "run_speedup")}
  return {"per_arm": per_arm, "by_kind": by_kind}


def allocators(sittings: list[tuple[dict, dict]]) -> dict:
  """glibc's malloc against tcmalloc (`mone.train.hostmem`), which a process chooses once, at start.
  sittings: (glibc's file, tcmalloc's file) of `measure` with the same arms and `pair`, each pair
  run at once, one process pinned to each core, the cores swapped from one sitting to the next, so
  that both allocators share each sitting's load and each core serves both.
  Per arm and setting (the reference, and with the pair's overrides), tcmalloc's step rate over glibc's
  (> 1: faster), the geometric mean over the sittings; per kind, the median over its arms; and
  `cumulative`: tcmalloc with the overrides over glibc's reference, what the next profile's runs
  gain on the profile's. MoNE's rate over the dense model's is read from tcmalloc's files."""
  for glibc, tcm in sittings:
    if (glibc["machine"].get("allocator"), tcm["machine"].get("allocator")) != ("glibc", "tcmalloc"):
      raise ValueError("each sitting is (glibc's benchmark file, tcmalloc's); got allocators "
                       f"{glibc['machine'].get('allocator')!r} and {tcm['machine'].get('allocator')!r}")
  out = _sittings(sittings)
  out["mone_over_dense_tcmalloc"] = out.pop("mone_over_dense_after")
  return out


def versions(sittings: list[tuple[dict, dict]]) -> dict:
  """An earlier commit of this code against a later one, each as its own training command ran it
  (allocator included), in sittings as `allocators` takes them: (the earlier commit's file, the
  later's), both measured with the same arms and `pair`, at once, one process per core, the cores
  swapped between sittings. The two files come from one machine, so their ratio is the code's (and
  allocator's) gain there, free of the machine's: `cumulative` (the later code with the pair's
  overrides over the earlier code as the profile trained) is what the throughput targets measure.
  Each file may pair its own overrides (`overrides_before`, `overrides`): the later code's fastest
  settings may not exist in the earlier."""
  for before, after in sittings:
    codes = (before["machine"].get("code"), after["machine"].get("code"))
    if codes[0] == codes[1]:
      raise ValueError(f"each sitting is (an earlier commit's benchmark file, a later one's); both ran {codes[0]!r}")
    if before["machine"].get("cpu_model") != after["machine"].get("cpu_model"):
      raise ValueError("a sitting's two files come from one machine; got "
                       f"{before['machine'].get('cpu_model')!r} and {after['machine'].get('cpu_model')!r}")
  out = _sittings(sittings)
  # Each code with its own faster settings: the earlier commit may predate the later one's.
  out["overrides_before"] = next((r["overrides"] for r in sittings[0][0]["rows"] if r["overrides"]), [])
  # The later code's estimated runs with the overrides, per sitting: what a run of that code takes there.
  fast = [[r for r in after["rows"] if r["overrides"]] for _, after in sittings]
  out["run_s_after"] = [{r["arm"]: r["run"]["estimated_wall_s"] for r in rows} for rows in fast]
  out["arms"] = {r["arm"]: {"kind": r["kind"], "recipe": r["recipe"]} for r in fast[0]}
  # Each sitting's matmul rates (earlier, later file): the ratios are the machine's own; these say which machine.
  out["matmul_gflop_per_s"] = [[f["matmul_gflop_per_s"]["used"] for f in pair] for pair in sittings]
  return out


def _sittings(sittings: list[tuple[dict, dict]]) -> dict:
  """Per arm and setting, the second file's step rate over the first's, the geometric mean over the
  sittings, and per kind the median over its arms (`allocators`, `versions`)."""
  def rows(f, overrides):
    return [r for r in f["rows"] if bool(r["overrides"]) == overrides]
  def ratios(num, den):
    return {a["arm"]: b["gflop_per_s"] / a["gflop_per_s"] for a, b in zip(den, num, strict=True) if a["arm"] == b["arm"]}
  settings = {"reference": [ratios(rows(t, False), rows(g, False)) for g, t in sittings],
              "with_overrides": [ratios(rows(t, True), rows(g, True)) for g, t in sittings],
              "cumulative": [ratios(rows(t, True), rows(g, False)) for g, t in sittings]}
  labels = {r["arm"]: r["label"] for r in sittings[0][0]["rows"]}
  out = {"sittings": len(sittings), "overrides": next((r["overrides"] for r in sittings[0][1]["rows"] if r["overrides"]), [])}
  for name, per_sitting in settings.items():
    per_arm = {arm: round(float(np.exp(np.mean([np.log(s[arm]) for s in per_sitting]))), 3) for arm in per_sitting[0]}
    by_kind = {label: round(float(np.median([v for a, v in per_arm.items() if labels[a] == label])), 3)
               for label in dict.fromkeys(labels[a] for a in per_arm)}
    out[name] = {"per_arm": per_arm, "by_kind": by_kind}
  out["mone_over_dense_after"] = [t["summary_with_overrides"]["mone_over_dense"] for _, t in sittings]
  return out


def measure(names=(), rounds: int = 5, steps_per_round: int = 4, pair=(), log=print, attention: bool = False,
            base=()) -> dict:
  """Times the arms named (all by default) as the module docstring says; returns rows, summary
  and the matmul rates. pair: 'key=value' overrides (e.g. eval_batch_size=100): every arm is then
  timed twice, as it is and with them, in turns, and `paired` compares the two. base: overrides
  every arm is timed with, pair's applied after them (a setting timed against the faster step
  rather than the profile's). attention: time each step's attention alone beside it (the rows'
  "attention", the summary's mone_over_dense_bound)."""
  chosen = tuple(dataclasses.replace(a, overrides=tuple(base)) for a in select(names))
  if pair:
    chosen = tuple(x for a in chosen for x in (a, dataclasses.replace(a, overrides=tuple(base) + tuple(pair))))
  for flag, given in (("--base", base), ("--pair", pair)):  # a bad override: one line, before anything is timed
    try:
      for arm in chosen if given else ():
        arm.config()
    except ValueError as e:
      raise ValueError(f"{flag}: {e}") from None
  if rounds < 1 or steps_per_round < 1:
    raise ValueError(f"--rounds and --steps must be >= 1, got {rounds} and {steps_per_round}")
  before = matmul_rate()
  log(f"matmul: {before:.1f} GFLOP/s (multiply-accumulates, {MATMUL_N}^3 float32)")
  ready = []
  for i, arm in enumerate(chosen):
    ready.append(Timed(arm, num_batches=min(steps_per_round, 8), arm_index=i, attention=attention))
    log(f"{arm.name}: compiled in {ready[-1].compile_s:.1f} s")
  for r in range(rounds):
    for timed in ready:
      timed.run(steps_per_round)
    log(f"round {r + 1}/{rounds} done")
  after = matmul_rate()
  rate = max(before, after)
  rows = [row(t, rate) for t in ready]
  for x in rows if base else ():  # a row's overrides stay the pair's, as the comparisons of files read them
    x["base"], x["overrides"] = list(base), x["overrides"][len(base):]
  for x in rows:
    log(f"{x['arm'] + (' *' if x['overrides'] else ''):26s} {x['step_ms']:8.1f} ms/step {x['gflop_per_s']:6.1f} GFLOP/s "
        f"({100 * x['matmul_fraction']:.0f}% of matmul), outside the step {100 * x['run']['outside_share']:.0f}% of a run"
        + (f", attention {x['attention']['ms']:.1f} ms ({100 * x['attention']['share']:.0f}%)" if "attention" in x else ""))
  out = {"matmul_gflop_per_s": {"before": round(before, 2), "after": round(after, 2), "used": round(rate, 2)}, "rows": rows}
  if pair:
    reference, variant = rows[0::2], rows[1::2]
    out |= {"summary": summary(reference), "summary_with_overrides": summary(variant), "paired": paired(reference, variant)}
  else:
    out["summary"] = summary(rows)
  # The ceiling of the fastest code timed: with the pair's overrides where there are any.
  for recipe, bound in out["summary_with_overrides" if pair else "summary"].get("mone_over_dense_bound", {}).items():
    log(f"{recipe}: MoNE's rate over the dense model's is at most {bound:.2f}{' with ' + ' '.join(pair) if pair else ''}, "
        "attention taking the time it does")
  for label, v in out.get("paired", {}).get("by_kind", {}).items():
    log(f"{label}: step {v['step_speedup']:.2f}x, run {v['run_speedup']:.2f}x with {' '.join(pair)} (medians over arms)")
  return out
