"""How the benchmark times: compiled forward passes and training steps, timed round-robin
(A B C ... A B C ...) so that a change in machine load hits every contender alike; medians."""
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mone.bench.workloads import Contender, Workload

def _chunks(x, chunk):
  return x.reshape(x.shape[0] // chunk, chunk, *x.shape[1:])


def prepare(c: Contender):
  """The variables `c.apply` takes, made once: inference weights as a deployed model keeps
  them (MoNE's nested weight slices are computed at load time, not on every call)."""
  return jax.block_until_ready(jax.jit(c.variables)(c.params))


def forward_fn(c: Contender, chunk: int, batch: int):
  """(variables from `prepare`, inputs) -> logits of a batch, `chunk` examples at a time:
  a chunk's activations stay in cache."""
  def f(v, x):
    if chunk >= batch:
      return c.apply(v, x)
    return jax.lax.map(lambda xc: c.apply(v, xc), _chunks(x, chunk)).reshape(batch, -1)
  return jax.jit(f)


def train_fn(c: Contender, chunk: int, batch: int, tx):
  """One optimizer step on the mean cross-entropy; the gradient is summed over chunks."""
  def loss(v, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(c.apply(v, x), y).sum() / batch

  def step(state, x, y):
    p, opt = state
    v, pullback = jax.vjp(c.variables, p)  # weight slices once per step, not per chunk
    if chunk >= batch:
      g = jax.grad(loss)(v, x, y)
    else:
      def acc(g, xy):
        return jax.tree.map(jnp.add, g, jax.grad(loss)(v, *xy)), None
      g, _ = jax.lax.scan(acc, jax.tree.map(jnp.zeros_like, v), (_chunks(x, chunk), _chunks(y, chunk)))
    (g,) = pullback(g)
    updates, opt = tx.update(g, opt, p)
    return optax.apply_updates(p, updates), opt

  return jax.jit(step, donate_argnums=0)


def optimizer():
  return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-4, weight_decay=1e-4))


def make_runner(c: Contender, mode: str, inputs, labels, chunk: int):
  """A no-argument callable that runs one batch to completion; compiled on creation."""
  batch = inputs.shape[0]
  if mode == "forward":
    f, v = forward_fn(c, chunk, batch), prepare(c)
    run = lambda: jax.block_until_ready(f(v, inputs))
  else:
    tx = optimizer()
    f = train_fn(c, chunk, batch, tx)
    state = [(jax.tree.map(jnp.copy, c.params), tx.init(c.params))]

    def run():  # the step donates its state, so keep the new one
      state[0] = jax.block_until_ready(f(state[0], inputs, labels))
  run()  # compile
  return run


def compiled_runner(c: Contender, mode: str, inputs, labels, chunk: int | None = None, compiler_options=None):
  """`make_runner` with the compilation done explicitly and timed: (run, info).

  The function is lowered and compiled with `.lower(...).compile(compiler_options)`, so that XLA
  options (e.g. command buffers off) apply to this compilation alone, in the same process as
  the others. info: lower_s and compile_s (the two steps), prepare_s (a forward row's
  inference variables, `prepare`, its own small compilation included), first_run_s (the first
  call: buffer allocation, autotuning left over) and `compiled`, the executable (its HLO:
  `compiled.as_text()`). chunk=None: the whole batch at once."""
  batch = inputs.shape[0]
  chunk = batch if chunk is None else chunk
  info = {"prepare_s": 0.0}
  if mode == "forward":
    t0 = time.perf_counter()
    v = prepare(c)
    info["prepare_s"] = time.perf_counter() - t0
    f, args = forward_fn(c, chunk, batch), (v, inputs)
  elif mode == "train":
    tx = optimizer()
    f = train_fn(c, chunk, batch, tx)
    state = [(jax.tree.map(jnp.copy, c.params), tx.init(c.params))]
    args = (state[0], inputs, labels)
  else:
    raise ValueError(f"mode must be 'forward' or 'train', got {mode!r}")
  t0 = time.perf_counter()
  lowered = f.lower(*args)
  t1 = time.perf_counter()
  compiled = lowered.compile(compiler_options) if compiler_options else lowered.compile()
  info.update(lower_s=t1 - t0, compile_s=time.perf_counter() - t1, compiled=compiled)
  if mode == "forward":
    run = lambda: jax.block_until_ready(compiled(v, inputs))
  else:
    def run():  # the step donates its state, so keep the new one
      state[0] = jax.block_until_ready(compiled(state[0], inputs, labels))
  t0 = time.perf_counter()
  run()
  info["first_run_s"] = time.perf_counter() - t0
  return run, info


def time_round_robin(runners, reps: int, warmup: int = 1, warm: bool = False):
  """Per-runner times in seconds, measured A B C ... A B C ... after `warmup` rounds.
  warm=True runs each runner once, untimed, right before its timed call: its data then
  starts in cache, as a block's activations do inside a model (for one-block timings)."""
  for _ in range(warmup):
    for r in runners:
      r()
  times = [[] for _ in runners]
  for _ in range(reps):
    for r, t in zip(runners, times):
      if warm:
        r()
      t0 = time.perf_counter()
      r()
      t.append(time.perf_counter() - t0)
  return times


def tune_chunk(c: Contender, mode, inputs, labels, candidates, reps: int):
  """The fastest chunk size for one contender: (chunk, its compiled runner, ms by chunk).

  Every model gets its own best chunk, the dense baseline included, so that neither side is
  handicapped: the dense ViT gains most from chunking (its big matmuls leave the cache),
  MoNE's small per-expert matmuls gain less."""
  runners = {ch: make_runner(c, mode, inputs, labels, ch) for ch in candidates}
  if len(runners) == 1:
    return candidates[0], runners[candidates[0]], {}
  med = {ch: float(np.median(t)) * 1e3
         for ch, t in zip(runners, time_round_robin(list(runners.values()), reps, warmup=0))}
  best = min(med, key=med.get)
  return best, runners[best], med


def chunk_candidates(batch: int, chunk: str):
  if chunk != "auto":
    return [min(int(chunk), batch)]
  # Whole batches of 32 were never fastest for a ViT-S/16 on the 2-core CPU; 2-16 examples
  # were (a dense training step at batch 8 was fastest in chunks of 2 or 4).
  return [c for c in (16, 8, 4, 2) if c <= batch and batch % c == 0][:3] or [batch]


def bench(workload: Workload, modes, batches, reps=7, chunk="auto", tune_reps=2, log=print,
          on_group=None, rows=None, train_batches=None):
  """Times every contender of workload for each (mode, batch); returns the rows, appended to
  `rows` if given. on_group(rows) runs after each (mode, batch), e.g. to save progress.
  train_batches: the batch sizes of mode 'train' (default: batches)."""
  rows = [] if rows is None else rows
  dense = workload.contenders[0]
  for mode in modes:
    for batch in (train_batches or batches) if mode == "train" else batches:
      inputs, labels = workload.make_inputs(batch)
      cands = chunk_candidates(batch, chunk)
      load_start = os.getloadavg()[0]
      tuned = [tune_chunk(c, mode, inputs, labels, cands, tune_reps) for c in workload.contenders]
      times = time_round_robin([r for _, r, _ in tuned], reps)
      load_end = os.getloadavg()[0]
      base = float(np.median(times[0]))
      for c, (ch, _, tried), t in zip(workload.contenders, tuned, times):
        med = float(np.median(t))
        flop_ratio = dense.macs / c.macs
        rows.append(dict(
            workload=workload.name, mode=mode, batch=batch, model=c.name, e_c=c.e_c,
            median_ms=med * 1e3, p25_ms=float(np.percentile(t, 25)) * 1e3,
            p75_ms=float(np.percentile(t, 75)) * 1e3, reps=len(t), speedup=base / med,
            flop_ratio=flop_ratio, efficiency=base / med / flop_ratio, gflops=c.macs / 1e9,
            chunk=ch, ms_by_chunk=tried, load_1m=[load_start, load_end], note=c.note))
      log(table([r for r in rows if r["mode"] == mode and r["batch"] == batch and r["workload"] == workload.name]))
      if on_group:
        on_group(rows)
  return rows


def table(rows) -> str:
  """The benchmark's rows of one group (`bench`, `micro.block_rows`), one line each, then the
  load average (the GPU report's rows: `rows.report_table`)."""
  mw = max(8, *(len(r["mode"]) + 1 for r in rows))
  head = (f"{'mode':{mw}s}{'batch':>6s}  {'model':8s}{'e_c':>5s}{'GFLOPs':>8s}{'chunk':>6s}{'median ms':>11s}"
          f"{'p25-p75':>14s}{'speed-up':>10s}{'FLOP ratio':>11s}{'effic.':>8s}  note")
  lines = [head, "-" * len(head)]
  for r in rows:
    e_c = "" if r["e_c"] is None else f"{r['e_c']:.1f}"
    lines.append(f"{r['mode']:{mw}s}{r['batch']:6d}  {r['model']:8s}{e_c:>5s}{r['gflops']:8.2f}{r['chunk']:6d}"
                 f"{r['median_ms']:11.1f}{r['p25_ms']:7.0f}-{r['p75_ms']:<6.0f}{r['speedup']:10.2f}"
                 f"{r['flop_ratio']:11.2f}{r['efficiency']:8.2f}  {r['note']}")
  r0 = rows[0]
  lines.append(f"load average (1 min) {r0['load_1m'][0]:.2f} -> {r0['load_1m'][1]:.2f}")
  return "\n".join(lines)
