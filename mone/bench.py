"""Wall-clock speed of MoNE against the dense ViT it saves FLOPs on, on this machine.

  python -m mone.bench --variant S/16 --batch 8 32 --train-batch 8 32 --reps 7 --video B/16x2 --json results/bench/cpu.json

For every (mode, batch) it builds the dense ViT, MoNE at each e_c, the MatViT sub-model with
the FLOPs closest to each MoNE, and the naive masked MoNE (`mone.masked`), all from one set of
parameters; jit-compiles them; warms them up; then times them round-robin (A B C ... A B C ...),
so that a change in machine load hits every contender alike, and reports medians.
speed-up = dense median / median, flop_ratio = dense FLOPs / FLOPs (analytic, `mone.flops`),
efficiency = speed-up / flop_ratio: 1.0 means a model turns every saved FLOP into time.

Both sides run the same code with the same tricks: the models share `mone.layers.Block`
(heads-major attention, erf GELU, single-pass LayerNorm), and every model processes a batch
in chunks (a `lax.map`; training sums the gradient over chunks), each at the chunk size that
is fastest for it (`--chunk auto`; on the 2-core CPU a chunked dense forward is ~1.2x faster
than a whole-batch one, so a whole-batch baseline would flatter MoNE). Nested models read
their weight slices (`layers.nested_weights`) from variables made outside the chunk loop:
for a forward row once, before timing, as a deployed model keeps them (`prepare`; for MoNE
they hold 0.875x the blocks' projection weights again); for a training row once per step.
Timings only mean something on an otherwise idle machine: every row records the load average.

A workload is a list of `Contender`s and an input maker: `image_workload` (ViT) and
`video_workload` (the ViViT factorised encoder, MoNE on its spatial transformer).
`check_targets` turns the rows into the issue's pass/fail targets. Where the time goes:
`block_rows` (--block) times one transformer block's forward and backward apart, `matmul_rows`
(--matmul) each of its projection matmuls alone.
"""
import argparse
import dataclasses
import datetime
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mone import capacity, config, flops, layers, masked, models, results, routing, vivit

E_CS = (0.2, 0.3, 0.4, 0.5, 0.6, 1.0)


def _params_only(p):
  return {"params": p}


@dataclasses.dataclass
class Contender:
  name: str          # 'dense', 'mone', 'matvit' or 'masked'
  e_c: float | None  # the MoNE e_c this row belongs to (None for the dense baseline)
  macs: int          # analytic forward MACs per example (mone.flops)
  apply: Callable    # (variables, inputs) -> logits
  params: dict
  note: str = ""
  # params -> the variables `apply` takes, made once per step, outside the loop over chunks:
  # nested models take their weight slices here (see layers.nested_weights).
  variables: Callable = _params_only


@dataclasses.dataclass
class Workload:
  name: str
  make_inputs: Callable  # batch -> (inputs, integer labels)
  contenders: list       # contenders[0] is the dense baseline
  baseline: str


def _shared_params(mone, shape, num_experts: int, seed: int):
  """MoNE's parameters, and the dense model's: the same ones without the router and alpha."""
  probe = jnp.zeros((1, *shape))
  p = jax.jit(lambda k: mone.init(k, probe, (0.25,) * num_experts))(jax.random.key(seed))["params"]
  return p, {k: v for k, v in p.items() if not k.startswith("router") and k != "alpha"}


def _random_inputs(shape, num_classes: int, seed: int):
  """batch -> (Gaussian inputs [batch, *shape], integer labels): timing needs no real data."""
  def make_inputs(batch):
    kx, ky = jax.random.split(jax.random.key(seed + 1))
    return (jax.random.normal(kx, (batch, *shape)), jax.random.randint(ky, (batch,), 0, num_classes))
  return make_inputs


def image_workload(variant: str, e_cs, with_matvit=True, with_masked=True, masked_e_c=0.3,
                   seed=0, **overrides) -> Workload:
  """Dense ViT, MoNE at each e_c, MatViT at the closest FLOPs and the masked MoNE."""
  cfg = config.vit(variant, **overrides)
  shape = (cfg.image_size, cfg.image_size, cfg.channels)
  mone, vit = models.ViT(cfg, routed=True), models.ViT(cfg)
  p, p_dense = _shared_params(mone, shape, cfg.num_experts, seed)

  def nested(widths):
    return lambda p: {"params": p, "nested": layers.nested_weights(p, widths)}

  dense_macs = flops.macs(cfg, "vit")
  out = [Contender("dense", None, dense_macs, lambda v, x: vit.apply(v, x)[0], p_dense,
                   "ViT, all tokens at width D")]
  rel = [w / cfg.width for w in cfg.expert_widths]
  matvit_macs = [flops.macs(cfg, "matvit", r) for r in rel]
  for e_c in e_cs:
    caps = capacity.budget("mone", e_c, cfg.num_experts).capacities
    out.append(Contender("mone", e_c, flops.macs(cfg, "mone", capacities=caps),
                         lambda v, x, caps=caps: mone.apply(v, x, caps)[0], p,
                         "capacities " + ", ".join(f"{c:.3f}" for c in caps), nested(cfg.expert_widths)))
    j = int(np.argmin([abs(m - out[-1].macs) for m in matvit_macs]))
    # The largest sub-model is the dense ViT itself; a sub-model closest to several e_c is timed once.
    if with_matvit and j < cfg.num_experts - 1 and not any(c.name == "matvit" and c.macs == matvit_macs[j] for c in out):
      out.append(Contender("matvit", e_c, matvit_macs[j],
                           lambda v, x, j=j: vit.apply(v, x, width_index=j)[0], p_dense,
                           f"sub-model width {cfg.expert_widths[j]} (width_index={j})",
                           nested(cfg.expert_widths[j:j + 1])))
    if with_masked and abs(e_c - masked_e_c) < 1e-9:
      router_macs = cfg.num_routers * cfg.num_tokens * cfg.width * cfg.num_experts
      out.append(Contender("masked", e_c, dense_macs + router_macs,
                           lambda v, x, caps=caps: masked.masked_apply(v, cfg, x, caps)[0], p,
                           "naive MoNE: every token at width D, masked (mone.masked)"))

  return Workload(f"ViT-{variant} {cfg.image_size}px", _random_inputs(shape, cfg.num_classes, seed), out,
                  f"dense ViT-{variant} ({flops.gflops(cfg):.2f} GFLOPs/example), the same Block code "
                  "as MoNE (heads-major attention, erf GELU), float32, jit")


def video_workload(variant: str, e_cs, num_frames: int = 4, seed=0, **overrides) -> Workload:
  """Dense ViViT-FE against MoNE-ViViT at each e_c (MoNE routes the spatial transformer only,
  so the temporal transformer and the per-frame CLS tokens cost the same on both sides)."""
  cfg = config.vivit(variant, num_frames=num_frames, **overrides)
  shape = (cfg.num_frames, cfg.image_size, cfg.image_size, cfg.channels)
  mone, dense = vivit.ViViT(cfg, routed=True), vivit.ViViT(cfg)
  p, p_dense = _shared_params(mone, shape, cfg.num_experts, seed)
  out = [Contender("dense", None, flops.macs(cfg, "vit"), lambda v, x: dense.apply(v, x)[0], p_dense,
                   "ViViT-FE, all tokens at width D")]
  for e_c in e_cs:
    caps = capacity.budget("mone", e_c, cfg.num_experts).capacities
    out.append(Contender("mone", e_c, flops.macs(cfg, "mone", capacities=caps),
                         lambda v, x, caps=caps: mone.apply(v, x, caps)[0], p,
                         "capacities " + ", ".join(f"{c:.3f}" for c in caps),
                         lambda p: {"params": p, "nested": layers.nested_weights(p, cfg.expert_widths)}))

  return Workload(f"ViViT-{variant} {cfg.num_frames}x{cfg.image_size}px",
                  _random_inputs(shape, cfg.num_classes, seed), out,
                  f"dense ViViT-{variant} FE ({flops.gflops(cfg):.2f} GFLOPs/clip of {cfg.num_frames} frames), "
                  "the same Block code as MoNE, float32, jit")


# ---------------------------------------------------------------------------------------------
# The timed functions: one forward pass, or one training step (forward, backward, AdamW).

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


# ---------------------------------------------------------------------------------------------
# One block, forward and backward timed apart: where a training step's time goes.

def block_rows(variant: str, e_cs, batch: int, reps: int = 15, seed: int = 0, log=print, **overrides):
  """Rows timing one transformer block alone: the dense block and MoNE's grouped block at each
  e_c (tokens already in expert order, as after the router), with the same parameters.

  Each timed call follows an untimed one of the same function (`time_round_robin(warm=True)`):
  timed cold, straight after the other contenders' calls, the dense block's forward took 1.3x
  and the attention's 1.4x longer (ViT-S/16, batch 8) than inside a model, where a block's
  activations arrive in cache from the block before.
  'block forward' times the forward pass; 'block backward' times only the pullback of a
  forward whose residuals are already stored (`jax.vjp`), to the parameters, their nested
  slices and the inputs. A training step is about one forward and one backward, so the two
  speed-ups bracket the step's. The FLOP ratio is the block's (`flops.block_macs`; a backward
  costs twice its forward on both sides, so the ratio is the same).

  A last row per mode, model 'attention', times the block's attention alone (QK^T, softmax,
  AV at full width over all tokens): the same work in the dense block and in MoNE's, so it
  bounds what MoNE can save. Its 'efficiency' is its MAC rate relative to the dense block's."""
  cfg = config.vit(variant, **overrides)
  n, d_model = cfg.num_tokens, cfg.width
  blk = layers.Block(d_model, cfg.num_heads, cfg.mlp_dim)
  kp, kx, kc = jax.random.split(jax.random.key(seed), 3)
  params = blk.init(kp, [jnp.zeros((1, n, d_model))], (d_model,))["params"]
  x, ct = jax.random.normal(kx, (batch, n, d_model)), jax.random.normal(kc, (batch, n, d_model))
  dense_macs = flops.block_macs([n], [d_model], d_model, cfg.mlp_dim)

  def contender(e_c):
    if e_c is None:  # the dense block: one group at full width, no Eq. 1 factor
      return "dense", (n,), (d_model,), False, "dense block, all tokens at width D"
    counts = routing.expert_counts(capacity.budget("mone", e_c, cfg.num_experts).capacities, n)
    live = [g for g in range(cfg.num_experts) if counts[g]]
    return ("mone", tuple(counts[g] for g in live), tuple(cfg.expert_widths[g] for g in live), True,
            "tokens per expert " + ", ".join(map(str, counts)))

  runners, meta = [], []

  def add(name, e_c, f, args, cotangent, macs, note):  # forward and pullback runners of f(*args)
    f = jax.jit(f)
    _, pullback = jax.vjp(f, *args)
    b = jax.jit(lambda pb, ct: pb(ct))
    runners.extend([lambda: jax.block_until_ready(f(*args)), lambda: jax.block_until_ready(b(pullback, cotangent))])
    meta.extend([("block forward", name, e_c, macs, note), ("block backward", name, e_c, macs, note)])

  for e_c in (None, *e_cs):
    name, counts, widths, with_mults, note = contender(e_c)
    v = {"params": params, "nested": layers.nested_weights({"block_0": params}, widths)["block_0"]}
    mults = [jnp.ones((batch, c)) for c in counts] if with_mults else None

    def fwd(v, x, counts=counts, widths=widths, mults=mults):
      return blk.apply(v, [h[..., :w] for h, w in zip(layers.split_groups(x, counts), widths)], widths, mults)

    cts = [c[..., :w] for c, w in zip(layers.split_groups(ct, counts), widths)]
    add(name, e_c, fwd, (v, x), cts, flops.block_macs(counts, widths, d_model, cfg.mlp_dim), note)
  qkv = jax.random.normal(kc, (3, batch, cfg.num_heads, n, d_model // cfg.num_heads))
  add("attention", None, layers.attention, tuple(qkv), qkv[0], 2 * n * n * d_model,
      "attention alone, the same in both blocks")
  for r in runners:
    r()  # compile
  load_start = os.getloadavg()[0]
  times = time_round_robin(runners, reps, warm=True)
  load_end = os.getloadavg()[0]
  rows = []
  for mode in ("block forward", "block backward"):
    base = float(np.median(next(t for (m, name, *_), t in zip(meta, times) if m == mode and name == "dense")))
    for (m, name, e_c, macs, note), t in zip(meta, times):
      if m != mode:
        continue
      med = float(np.median(t))
      rows.append(dict(
          workload=f"ViT-{variant} block", mode=mode, batch=batch, model=name, e_c=e_c,
          median_ms=med * 1e3, p25_ms=float(np.percentile(t, 25)) * 1e3, p75_ms=float(np.percentile(t, 75)) * 1e3,
          reps=len(t), speedup=base / med, flop_ratio=dense_macs / macs, efficiency=base / med / (dense_macs / macs),
          gflops=macs / 1e9, chunk=batch, ms_by_chunk={}, load_1m=[load_start, load_end], note=note))
    log(table([r for r in rows if r["mode"] == mode]))
  return rows


# ---------------------------------------------------------------------------------------------
# One projection matmul at a time: how fast this machine multiplies the shapes a nested block makes.

PROJECTIONS = ("qkv", "out", "mlp1", "mlp2")


def projection_shapes(tokens: int, d: int, d_model: int, mlp_dim: int):
  """(projection, M, K, N) of the four matmuls of a group of `tokens` tokens at width d (Eqs. 4-8):
  in-projections read d features (K = d), out-projections write d (N = d)."""
  return (("qkv", tokens, d, 3 * d_model), ("out", tokens, d_model, d),
          ("mlp1", tokens, d, mlp_dim), ("mlp2", tokens, mlp_dim, d))


def matmul_rows(variant: str, e_cs, chunk: int, reps: int = 15, repeat: int = 16, seed: int = 0,
                log=print, **overrides):
  """Rows timing each projection matmul of one block on its own, for the dense block and for
  each MoNE group at each e_c, with `chunk` examples' tokens (the chunk a model runs at).

  A block's time beyond attention is these matmuls plus cheap elementwise work, so their
  speed per FLOP says where a nested block loses against the dense one. Each timed call runs
  `repeat` matmuls of one shape inside one jit (`lax.map` over distinct inputs), so that
  dispatch costs little even for the smallest shapes; rows hold the time of one.
  A row's 'rate' is its GFLOP/s relative to the dense block's same projection. One 'total' row
  per contender sums its matmuls; its rate is theirs relative to all the dense ones: the
  efficiency of MoNE's matmuls (the time they would take at the dense speed per FLOP over the
  time they take)."""
  cfg = config.vit(variant, **overrides)
  n, d_model, m = cfg.num_tokens, cfg.width, cfg.mlp_dim
  contenders = [("dense", None, [(n, d_model)])]
  for e_c in e_cs:
    counts = routing.expert_counts(capacity.budget("mone", e_c, cfg.num_experts).capacities, n)
    contenders.append(("mone", e_c, [(c, w) for c, w in zip(counts, cfg.expert_widths) if c]))
  key = jax.random.key(seed)
  mm = jax.jit(lambda xs, w: jax.lax.map(lambda x: x @ w, xs))
  runners, meta = [], []
  for name, e_c, groups in contenders:
    for tokens, d in groups:
      for proj, mdim, kdim, ndim in projection_shapes(chunk * tokens, d, d_model, m):
        kx, kw, key = jax.random.split(key, 3)
        xs, w = jax.random.normal(kx, (repeat, mdim, kdim)), jax.random.normal(kw, (kdim, ndim))
        runners.append(lambda xs=xs, w=w: jax.block_until_ready(mm(xs, w)))
        meta.append((name, e_c, d, proj, (mdim, kdim, ndim)))
  for r in runners:
    r()  # compile
  load_start = os.getloadavg()[0]
  times = time_round_robin(runners, reps)
  load_end = os.getloadavg()[0]
  rows = []
  for (name, e_c, d, proj, shape), t in zip(meta, times):
    med = float(np.median(t)) / repeat
    rows.append(dict(workload=f"ViT-{variant} matmuls", mode="matmul", batch=chunk, model=name, e_c=e_c,
                     width=d, projection=proj, shape=list(shape), median_us=med * 1e6,
                     gflops_per_s=2 * np.prod(shape) / med / 1e9, reps=len(t), load_1m=[load_start, load_end]))
  for name, e_c, _ in contenders:
    sel = [r for r in rows if (r["model"], r["e_c"]) == (name, e_c)]
    total, fl = sum(r["median_us"] for r in sel), sum(2 * np.prod(r["shape"]) for r in sel)
    rows.append(dict(workload=sel[0]["workload"], mode="matmul", batch=chunk, model=name, e_c=e_c, width=None,
                     projection="total", shape=None, median_us=total, gflops_per_s=fl / total / 1e3,
                     reps=reps, load_1m=[load_start, load_end]))
  dense_rate = {r["projection"]: r["gflops_per_s"] for r in rows if r["model"] == "dense"}
  for r in rows:  # a total's rate is against the dense total: the efficiency of the matmuls
    r["rate"] = r["gflops_per_s"] / dense_rate[r["projection"]]
  log(matmul_table(rows))
  return rows


def matmul_table(rows) -> str:
  head = f"{'model':6s}{'e_c':>5s}{'width':>6s}  {'matmul':7s}{'M x K x N':>18s}{'us':>9s}{'GFLOP/s':>9s}{'rate':>7s}"
  lines = [head, "-" * len(head)]
  for r in rows:
    e_c = "" if r["e_c"] is None else f"{r['e_c']:.1f}"
    shape = "" if r["shape"] is None else " x ".join(map(str, r["shape"]))
    width = "" if r["width"] is None else str(r["width"])
    lines.append(f"{r['model']:6s}{e_c:>5s}{width:>6s}  {r['projection']:7s}{shape:>18s}{r['median_us']:9.0f}"
                 f"{r['gflops_per_s']:9.1f}{r['rate']:7.2f}")
  lines.append(f"rate: GFLOP/s relative to the dense block's matmul of the same projection "
               f"(total: of all its matmuls); load average (1 min) {rows[0]['load_1m'][0]:.2f} -> {rows[0]['load_1m'][1]:.2f}")
  return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Running, reporting.

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


# The targets for MoNE against the dense model, measured in one run (ViT-S/16 on CPU).
TARGETS = (("forward", 0.3, "efficiency", 0.85), ("forward", 0.5, "efficiency", 0.9),
           ("train", 0.3, "speedup", 2.0), ("forward", 1.0, "speedup", 0.95), ("train", 1.0, "speedup", 0.95))


def check_targets(rows, workload=None) -> list[dict]:
  """One entry per (target, batch) found in rows: the measured value and whether it holds.
  speed-up >= 0.95 at e_c = 1.0 is "no more than 5% slower than the dense model".

  A target below e_c = 1.0 holds only if it also holds against the fastest full-width model
  of its group (`strict`): MoNE at e_c = 1.0 does the dense model's work plus routing, so when
  its median beats the dense row's, the dense median was inflated by noise or a worse chunk
  choice, and a ratio taken against it would flatter MoNE."""
  out = []
  for mode, e_c, key, need in TARGETS:
    for r in rows:
      if (r["model"] == "mone" and r["mode"] == mode and r["e_c"] is not None and abs(r["e_c"] - e_c) < 1e-9
          and (workload is None or r["workload"] == workload)):
        strict = r[key]
        if e_c < 1.0:
          same = [q for q in rows if (q["workload"], q["mode"], q["batch"]) == (r["workload"], mode, r["batch"])]
          full = min(q["median_ms"] for q in same if q["model"] == "dense" or (q["model"] == "mone" and q["e_c"] == 1.0))
          strict = full / r["median_ms"] / (r["flop_ratio"] if key == "efficiency" else 1.0)
        out.append({"workload": r["workload"], "mode": mode, "batch": r["batch"], "e_c": e_c, "metric": key,
                    "target": need, "measured": r[key], "strict": strict, "ok": bool(min(r[key], strict) >= need)})
  return out


def targets_table(checks) -> str:
  """One line per target; where the fastest full-width model was faster than the dense row,
  the value against it follows in brackets."""
  def value(c):
    strict = c.get("strict", c["measured"])
    return f"{c['measured']:.2f}" + (f" [{strict:.2f} vs the fastest full-width model]" if strict < c["measured"] - 5e-3 else "")
  return "\n".join(f"{c['workload']:18s} {c['mode']:8s} batch {c['batch']:3d} e_c={c['e_c']:.1f}: {c['metric']} "
                   f"{value(c)} (target >= {c['target']:.2f}) {'OK' if c['ok'] else 'MISSED'}"
                   for c in checks)


def machine() -> dict:
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
  except (OSError, StopIteration):
    pass
  dev = jax.devices()[0]
  return {"cpu_model": cpu, "cores": os.cpu_count(), "jax": jax.__version__, "code": code_version(),
          "backend": jax.default_backend(), "device": f"{len(jax.devices())} x {dev.device_kind}",
          "xla_flags": os.environ.get("XLA_FLAGS", ""),
          "load_avg": list(os.getloadavg()), "date": datetime.datetime.now().astimezone().isoformat()}


def code_version() -> str | None:
  """The git commit the benchmark ran on, '+dirty' if the package's code (mone/) had uncommitted
  changes; None outside a git checkout. A timing is only comparable with one of the same code.
  Changes elsewhere (results a run is writing, notebooks) do not change what is timed."""
  try:
    run = lambda *a: subprocess.run(["git", *a], cwd=results.REPO, capture_output=True, text=True, timeout=10)
    head = run("rev-parse", "--short=12", "HEAD")
    if head.returncode:
      return None
    dirty = run("status", "--porcelain", "--untracked-files=no", "--", "mone").stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")
  except (OSError, subprocess.SubprocessError):
    return None


def cast(workload: Workload, dtype) -> Workload:
  """The workload with floating parameters and inputs in `dtype` (e.g. bfloat16 on a GPU):
  every contender then computes in it, since the models follow their inputs' dtype."""
  if jnp.dtype(dtype) == jnp.float32:
    return workload
  to = lambda t: jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, t)

  def make_inputs(batch, make=workload.make_inputs):
    x, y = make(batch)
    return x.astype(dtype), y
  return dataclasses.replace(workload, make_inputs=make_inputs,
                             contenders=[dataclasses.replace(c, params=to(c.params)) for c in workload.contenders],
                             baseline=workload.baseline.replace("float32", jnp.dtype(dtype).name))


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--variant", default="S/16")
  ap.add_argument("--batch", type=int, nargs="+", default=[8, 32])
  ap.add_argument("--train-batch", type=int, nargs="+", default=None,
                  help="batch sizes of the training rows (default: --batch)")
  ap.add_argument("--e-c", type=float, nargs="+", default=list(E_CS))
  ap.add_argument("--mode", nargs="+", choices=("forward", "train"), default=["forward", "train"])
  ap.add_argument("--reps", type=int, default=7, help="timed rounds after one warm-up round")
  ap.add_argument("--chunk", default="auto",
                  help="examples per chunk, or 'auto': each model's fastest of the three largest of 16, 8, 4, 2 dividing the batch")
  ap.add_argument("--tune-reps", type=int, default=2, help="timed runs per chunk size when choosing it")
  ap.add_argument("--video", default="", metavar="VARIANT",
                  help="also time a ViViT-FE workload, e.g. B/16x2 (MoNE vs dense ViViT only)")
  ap.add_argument("--video-frames", type=int, default=4, help="frames per clip of the video workload")
  ap.add_argument("--video-batch", type=int, nargs="+", default=[4])
  ap.add_argument("--video-e-c", type=float, nargs="+", default=[0.3, 0.5, 1.0])
  ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                  help="parameters, inputs and compute (bfloat16 for GPUs)")
  ap.add_argument("--no-matvit", action="store_true")
  ap.add_argument("--no-masked", action="store_true")
  ap.add_argument("--block", action="store_true",
                  help="time one transformer block's forward and backward apart (dense vs MoNE at each "
                       "--e-c, each --batch) instead of whole models; see block_rows")
  ap.add_argument("--matmul", action="store_true",
                  help="time each projection matmul of one block alone (dense vs MoNE's groups at each --e-c) "
                       "with --batch examples' tokens; see matmul_rows")
  ap.add_argument("--json", default=None,
                  help="where to write the rows (default results/bench/cpu.json; cpu-block.json with --block, "
                       "cpu-matmul.json with --matmul)")
  args = ap.parse_args(argv)
  if args.block and args.matmul:
    ap.error("--block and --matmul time different things; pass one of them")
  if args.json is None:
    name = "cpu-block.json" if args.block else "cpu-matmul.json" if args.matmul else "cpu.json"
    args.json = str(results.RESULTS / "bench" / name)
  if args.block or args.matmul:
    return main_block(args)

  wl = cast(image_workload(args.variant, args.e_c, with_matvit=not args.no_matvit,
                           with_masked=not args.no_masked,
                           masked_e_c=0.3 if 0.3 in args.e_c else args.e_c[0]), args.dtype)
  meta = machine()
  print(f"{wl.name} on {meta['device']} / {meta['cpu_model']} ({meta['cores']} cores), jax {meta['jax']}, "
        f"load average {meta['load_avg'][0]:.2f}\nbaseline: {wl.baseline}")
  baselines = {wl.name: wl.baseline}

  def save(rows, complete=False):  # after every (mode, batch): a kill loses one group at most
    if args.json:
      results.atomic_write_json(args.json, {
          "machine": {**meta, "load_avg_end": list(os.getloadavg()),
                      "peak_rss_mib": results.peak_rss_mib()},
          "baseline": wl.baseline, "baselines": baselines, "workload": wl.name, "args": _recorded(args),
          "complete": complete, "rows": rows, "targets": check_targets(rows, wl.name), **results.provenance()})

  rows = bench(wl, args.mode, args.batch, args.reps, args.chunk, args.tune_reps, on_group=save,
               train_batches=args.train_batch)
  if args.video:
    vwl = cast(video_workload(args.video, args.video_e_c, args.video_frames), args.dtype)
    print(f"baseline: {vwl.baseline}")
    baselines[vwl.name] = vwl.baseline
    bench(vwl, args.mode, args.video_batch, args.reps, args.chunk, args.tune_reps, on_group=save, rows=rows)
  checks = check_targets(rows, wl.name)
  if checks:
    print("targets:\n" + targets_table(checks))
  if args.json:
    save(rows, complete=True)
    print(f"wrote {args.json}")
  return rows


def _recorded(args) -> dict:
  """The command-line arguments as the JSON records them: a path inside the repository relative
  to it, so that no local path is committed."""
  out = vars(args).copy()
  try:
    out["json"] = str(Path(args.json).resolve().relative_to(results.REPO))
  except ValueError:
    pass
  return out


def main_block(args):
  """--block (block_rows) or --matmul (matmul_rows) for each batch, written like the model rows
  (no targets apply)."""
  meta = machine()
  what = "one block's matmuls" if args.matmul else "one block"
  print(f"ViT-{args.variant}, {what}, on {meta['device']} / {meta['cpu_model']} ({meta['cores']} cores), "
        f"jax {meta['jax']}, load average {meta['load_avg'][0]:.2f}")
  rows = []
  for batch in args.batch:
    rows += (matmul_rows if args.matmul else block_rows)(args.variant, args.e_c, batch, args.reps)
  if args.json:
    results.atomic_write_json(args.json, {
        "machine": {**meta, "load_avg_end": list(os.getloadavg()), "peak_rss_mib": results.peak_rss_mib()},
        "workload": rows[0]["workload"], "args": _recorded(args), "complete": True, "rows": rows, **results.provenance()})
    print(f"wrote {args.json}")
  return rows


if __name__ == "__main__":
  main()
