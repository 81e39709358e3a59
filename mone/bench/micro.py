"""Where a step's time goes: one transformer block, each of its projection matmuls, and routing, alone."""
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from mone import capacity, flops
from mone.bench import workloads
from mone.bench.contenders import ATTENTION, DENSE, MONE, ROUTING
from mone.bench.timing import make_runner, table, time_round_robin
from mone.models import config, layers, nested, routing

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
      return DENSE, (n,), (d_model,), False, "dense block, all tokens at width D"
    counts = routing.expert_counts(capacity.budget(capacity.EQ3, e_c, cfg.num_experts).capacities, n)
    live = [g for g in range(cfg.num_experts) if counts[g]]
    return (MONE, tuple(counts[g] for g in live), tuple(cfg.expert_widths[g] for g in live), True,
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
  add(ATTENTION, None, layers.attention, tuple(qkv), qkv[0], 2 * n * n * d_model,
      "attention alone, the same in both blocks")
  for r in runners:
    r()  # compile
  load_start = os.getloadavg()[0]
  times = time_round_robin(runners, reps, warm=True)
  load_end = os.getloadavg()[0]
  rows = []
  for mode in ("block forward", "block backward"):
    base = float(np.median(next(t for (m, name, *_), t in zip(meta, times) if m == mode and name == DENSE)))
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
  contenders = [(DENSE, None, [(n, d_model)])]
  for e_c in e_cs:
    counts = routing.expert_counts(capacity.budget(capacity.EQ3, e_c, cfg.num_experts).capacities, n)
    contenders.append((MONE, e_c, [(c, w) for c, w in zip(counts, cfg.expert_widths) if c]))
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
  dense_rate = {r["projection"]: r["gflops_per_s"] for r in rows if r["model"] == DENSE}
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
# Routing alone: what Expert Preferred Routing adds to a MoNE forward.

def routing_rows(variant: str, e_c: float, batch: int, reps: int = 15, seed: int = 0, log=print, **overrides):
  """Two rows: the whole MoNE ViT forward at e_c on `batch` examples at once, and its router
  alone on tokens of the same shape, timed round-robin with the same parameters.

  'routing' is everything the router adds to the dense work (`mone.models.nested.route`): Eq. 1's
  projection and softmax, Algorithm 1, the sort into expert order and the gather of each group with
  its Eq. 1 factor. Its row's `share` is its median over the forward's: the quantity of the paper's
  "routing adds 0.5 ms to a 190 ms ViT-B/16 forward". Each call is timed with its dispatch, which
  weighs more on the small routing call, so the share errs high."""
  cfg = config.vit(variant, **overrides)
  wl = workloads.image_workload(variant, [e_c], with_matvit=False, with_masked=False, seed=seed, **overrides)
  mone = wl.contenders[1]
  caps = capacity.budget(capacity.EQ3, e_c, cfg.num_experts).capacities
  counts = routing.expert_counts(caps, cfg.num_tokens)

  class Router(nn.Module):  # the model's first router, in the scope its parameters have in the model
    @nn.compact
    def __call__(self, x):
      alpha = nested.eq1_alpha(self.param("alpha", nn.initializers.zeros, ()), cfg.alpha_bounded)
      _, _, assignment, _, groups, mults, _ = nested.route(x, 0, cfg.num_experts, cfg.router, caps, counts,
                                                           alpha, lambda: self.make_rng("routing"))
      return assignment, groups, mults

  inputs, labels = wl.make_inputs(batch)
  tokens = jax.random.normal(jax.random.key(seed + 2), (batch, cfg.num_tokens, cfg.width))
  route = jax.jit(Router().apply)
  v = {"params": {k: mone.params[k] for k in ("router_0", "alpha")}}
  runners = [make_runner(mone, "forward", inputs, labels, batch),
             lambda: jax.block_until_ready(route(v, tokens))]
  runners[1]()  # compile
  load_start = os.getloadavg()[0]
  times = time_round_robin(runners, reps)
  load_end = os.getloadavg()[0]
  fwd, rt = (float(np.median(t)) for t in times)
  rows = [dict(workload=f"ViT-{variant} routing", mode="forward", batch=batch, model=name, e_c=e_c,
               median_ms=med * 1e3, p25_ms=float(np.percentile(t, 25)) * 1e3, p75_ms=float(np.percentile(t, 75)) * 1e3,
               reps=len(t), share=med / fwd, load_1m=[load_start, load_end], note=note)
          for name, med, t, note in ((MONE, fwd, times[0], "the whole MoNE forward, batch at once"),
                                     (ROUTING, rt, times[1], "router, EPR, sort and gather alone"))]
  log(routing_table(rows))
  return rows


def routing_table(rows) -> str:
  """The routing rows (`routing_rows`), one line each, then the load average."""
  lines = [f"{r['workload']} e_c={r['e_c']:g} batch {r['batch']}: {r['model']:8s} {r['median_ms']:10.3f} ms "
           f"(p25-p75 {r['p25_ms']:.3f}-{r['p75_ms']:.3f}), {r['share']:.3%} of the forward; {r['note']}"
           for r in rows]
  return "\n".join(lines + [f"load average (1 min) {rows[0]['load_1m'][0]:.2f} -> {rows[0]['load_1m'][1]:.2f}"])
