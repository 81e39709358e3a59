"""Nested experts as a layer: route a token sequence, run it through nested-width blocks.

`NestedEncoder` is the drop-in module: transformer layers in which a router and Expert Preferred
Routing (Algorithm 1) send each token of a [B, N, D] sequence to one of E nested experts, the first
D/2^(E-1), ..., D/2, D features of the same weights (unrouted full-width tokens, a CLS, go in `full`).
Capacities are static, so after a router the tokens are permuted into expert order once and expert
j's group carries only [B, n_j, d_j] until the next (`ungroup`): every projection is a plain matmul
on a sliced weight, with no masking or scatter. ViT and ViViT share its code (`encode`); so can yours::

  class MyModel(nn.Module):
    @nn.compact
    def __call__(self, x, capacities):  # x [B, N, 256]; capacities = mone.capacity.budget("mone", 0.4).capacities
      x, _, aux = NestedEncoder(width=256, depth=6, num_heads=4, mlp_dim=1024)(x, capacities)
      return nn.Dense(10)(x.mean(axis=1)), aux  # aux['assignment']: expert per token
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from mone import capacity as capacity_lib
from mone.models import routing
from mone.models.layers import block_class, run_blocks, split_groups

ROUTERS = ("learned", "random")


def route(x, r, num_experts, router, caps, counts, alpha, make_rng, drop_smallest=False):
  """Router r (Sec. 4.2, Eq. 1), called inside a compact method: creates Dense 'router_{r}'.

  x: tokens [B, N, D] in patch order. Returns (logits [B, N, E], probs (their softmax), assignment [B, N] (EPR, expert
  per token), perm [B, N] (the tokens in expert order), groups (one [B, n_j, D] slice per
  expert), mults (the per-group Eq. 1 factors alpha r + 1, or None for the random router,
  which has no probabilities to scale with), live (the experts whose tokens run the layers:
  the non-empty ones, minus the smallest with drop_smallest)). make_rng() is called only by
  the random router."""
  logits = nn.Dense(num_experts, name=f"router_{r}")(x)
  probs = jax.nn.softmax(logits, axis=-1)
  scores = probs if router == "learned" else routing.random_router_probs(make_rng(), probs.shape)
  assignment = routing.expert_preferred_routing(scores, caps)
  perm = routing.group_permutation(assignment)
  groups = split_groups(jnp.take_along_axis(x, perm[..., None], axis=1), counts)
  mults = None
  if router == "learned":
    r_assigned = jnp.take_along_axis(probs, assignment[..., None], axis=-1)[..., 0]
    mults = split_groups(alpha * jnp.take_along_axis(r_assigned, perm, axis=1) + 1.0, counts)
  live = [g for g in range(num_experts) if counts[g] and not (drop_smallest and g == 0)]
  return logits, probs, assignment, perm, groups, mults, live


def ungroup(groups, hs, live, widths, perm=None):
  """The tokens after a routed segment: each live group's processed d_j features (hs) with its
  untouched tail re-attached, in expert order, or back in patch order if perm is given."""
  groups = list(groups)
  for g, h in zip(live, hs):
    groups[g] = jnp.concatenate([h, groups[g][..., widths[g]:]], axis=-1)
  xp = jnp.concatenate([g for g in groups if g.shape[1]], axis=1)
  return xp if perm is None else jnp.take_along_axis(xp, jnp.argsort(perm, axis=1)[..., None], axis=1)


def eq1_alpha(raw, bounded: bool = True):
  """Eq. 1's alpha from its parameter: the paper's alpha in [0, 1) (`bounded_alpha`), or
  (bounded=False) the raw value, as the first XS runs were trained."""
  return bounded_alpha(raw) if bounded else raw


ALPHA_MAX = float(np.nextafter(np.float32(1), np.float32(0)))  # the largest float32 below 1


@jax.custom_vjp
def bounded_alpha(raw):
  """raw clipped to [0, ALPHA_MAX], with a gradient that never traps it outside.

  Eq. 1's factor alpha r + 1 is the router's only gradient path, and alpha starts at 0, the
  bound's edge. A plain clip has no gradient outside [0, 1): once one update took the parameter
  below 0, alpha stayed 0 for good and the router never learned (the first digits64
  MoNE runs, since withdrawn: router weights unchanged but for weight decay; alpha's gradient points below 0
  within the first steps). Here the gradient passes inside the bounds, and at or beyond a bound
  only when a descent step leads back inside (at or below 0: a negative gradient, which raises
  the parameter), so alpha leaves 0 whenever its gradient asks it to, as if projected."""
  return jnp.clip(raw, 0.0, ALPHA_MAX)


def _bounded_alpha_fwd(raw):
  return bounded_alpha(raw), raw


def _bounded_alpha_bwd(raw, g):
  inside = (raw > 0.0) & (raw < ALPHA_MAX)
  back = ((raw <= 0.0) & (g < 0)) | ((raw >= ALPHA_MAX) & (g > 0))
  return (jnp.where(inside | back, g, jnp.zeros_like(g)),)


bounded_alpha.defvjp(_bounded_alpha_fwd, _bounded_alpha_bwd)


def encode(module: nn.Module, x, capacities=None, *, full=None, width_index=None, drop_smallest=False,
           patch_order=True, width, depth, num_heads, mlp_dim, num_experts=4, router_layers=(0,),
           router="learned", alpha_bounded=True, remat=False, attention="auto", grad_barrier="auto",
           backend=None, mlp="auto", layer_loop="unroll", weight_grad="autodiff"):
  """The nested-expert layers, run inside `module`'s compact method: its parameters
  ('block_{l}', 'router_{r}', 'alpha') are created in `module`'s own scope, which keeps the
  models' parameter names (and every committed checkpoint) as they were.

  x: [B, N, D] tokens. full: None or [B, F, D] tokens every layer runs at full width D, unrouted
  (CLS); they come first in attention order, as if concatenated before x.
  capacities=None: dense layers, or with width_index=j every token of x at width d_j (a MatViT
  sub-model; full stays at D). capacities=c (fractions of x's tokens per expert, smallest first,
  `mone.capacity.budget(...).capacities`): MoNE with routers before layers router_layers
  (layers before the first are dense), EPR and Eq. 1; drop_smallest=True gives the smallest
  expert width 0 (its tokens skip every layer: MoD Greedy, Table 1).
  patch_order=False returns x in the last router's expert order, which saves a gather before a
  permutation-invariant pooling. remat=True rematerialises every block (`layers.block_class`).
  attention, grad_barrier, mlp: the blocks' implementations, "auto" resolved for backend (None:
  the one jax runs on; see `mone.models.layers`); weight_grad: how the blocks' weight gradients are
  computed (`mone.models.linear.linear`). layer_loop: "unroll" or "scan" the blocks
  between two routers (`layers.run_blocks`: the same parameters, one block compiled).
  Returns (x [B, N, D], full [B, F, D] or None, aux): aux holds the first router's
  'router_logits' and 'router_probs' (their softmax over experts) [B, N, E] and 'assignment' [B, N] (expert per token, patch order).
  """
  if router not in ROUTERS:
    raise ValueError(f"router must be one of {ROUTERS}, got {router!r}")
  D, widths = width, capacity_lib.expert_widths(width, num_experts)
  blocks = [block_class(remat, attention, grad_barrier, backend, mlp, weight_grad)(D, num_heads, mlp_dim, name=f"block_{l}")
            for l in range(depth)]
  pre, pre_w = ([], ()) if full is None else ([full], (D,))
  if capacities is None:
    if width_index is not None and width_index not in range(num_experts):
      raise ValueError(f"width_index must be in [0, {num_experts - 1}] (one per nested expert, smallest "
                       f"first), got {width_index!r}")
    d = D if width_index is None else widths[width_index]
    hs = run_blocks(module, blocks, pre + [x[..., :d]], pre_w + (d,), loop=layer_loop)
    return jnp.concatenate([hs[-1], x[..., d:]], axis=-1), (hs[0] if pre else None), {}

  if width_index is not None:
    raise ValueError("width_index selects a MatViT sub-model; a routed model takes capacities")
  caps = capacity_lib.check_capacities(capacities, num_experts)
  counts = routing.expert_counts(caps, x.shape[1])
  # Eq. 1; alpha = 0 at the start keeps every token's factor at 1, a stable start.
  alpha = eq1_alpha(module.param("alpha", nn.initializers.zeros, ()), alpha_bounded)
  ones = [] if full is None else [jnp.ones(full.shape[:2], x.dtype)]  # full's Eq. 1 factor: unrouted
  *pre, x = run_blocks(module, blocks[:router_layers[0]], pre + [x], pre_w + (D,), loop=layer_loop)  # dense
  aux = {}
  for r, (lo, hi) in enumerate(zip(router_layers, router_layers[1:] + (depth,))):
    logits, probs, assignment, perm, groups, mults, live = route(
        x, r, num_experts, router, caps, counts, alpha, lambda: module.make_rng("routing"), drop_smallest)
    if r == 0:
      aux = {"router_logits": logits, "router_probs": probs, "assignment": assignment}
    hs = pre + [groups[g][..., :widths[g]] for g in live]
    ws = pre_w + tuple(widths[g] for g in live)
    ms = ones + [mults[g] for g in live] if mults else None
    hs = run_blocks(module, blocks[lo:hi], hs, ws, ms, loop=layer_loop)
    pre = hs[:len(pre)]
    # The next router needs tokens in patch order; a caller that pools may not.
    x = ungroup(groups, hs[len(pre):], live, widths, perm if hi < depth or patch_order else None)
  return x, (pre[0] if pre else None), aux


def fields(cfg) -> dict:
  """The `encode` / `NestedEncoder` fields of a `mone.models.config` ViT or ViViT config (for a
  ViViT, its spatial transformer)."""
  return dict(width=cfg.width, depth=cfg.depth, num_heads=cfg.num_heads, mlp_dim=cfg.mlp_dim,
              num_experts=cfg.num_experts, router_layers=cfg.router_layers, router=cfg.router,
              alpha_bounded=cfg.alpha_bounded, attention=cfg.attention, grad_barrier=cfg.grad_barrier,
              mlp=cfg.mlp, layer_loop=cfg.layer_loop, weight_grad=cfg.weight_grad)


class NestedEncoder(nn.Module):
  """Nested-expert transformer layers over a [batch, tokens, D] sequence: the MoNE encoder
  (Sec. 4) as a module to put into your own model. See `encode` for the call.

  Parameters: 'block_{l}' (one `mone.models.layers.Block` per layer, the same layout as a dense ViT's,
  so a dense checkpoint's blocks load as they are), 'router_{r}' (Dense D -> E per router) and
  'alpha' (Eq. 1) once routed. With capacities=(0, ..., 0, 1) every token runs at full width,
  and the output equals the dense layers' (Eq. 1's factor aside, which is 1 at alpha = 0).
  The random router (router='random') needs rngs={'routing': key}.
  """
  width: int
  depth: int
  num_heads: int
  mlp_dim: int
  num_experts: int = 4
  router_layers: tuple[int, ...] = (0,)
  router: str = "learned"
  alpha_bounded: bool = True  # Eq. 1's alpha in [0, 1), as the paper states
  remat: bool = False  # rematerialise every block: less activation memory, more compute
  attention: str = "auto"     # the blocks' attention, gradient barrier and MLP (`mone.models.layers`),
  grad_barrier: str = "auto"  # "auto" resolved for backend (None: the one jax runs on)
  backend: str | None = None
  mlp: str = "auto"
  layer_loop: str = "unroll"  # or "scan": one block compiled (`mone.models.layers.run_blocks`)
  weight_grad: str = "autodiff"  # or "direct", "narrow_first" (`mone.models.linear.linear`)

  @nn.compact
  def __call__(self, x, capacities=None, *, full=None, width_index=None, drop_smallest=False, patch_order=True):
    if x.ndim != 3 or x.shape[-1] != self.width:
      raise ValueError(f"x must have shape [batch, tokens, {self.width}] (width={self.width}), got {tuple(x.shape)}")
    if not self.router_layers or list(self.router_layers) != sorted(set(self.router_layers)) or not (
        0 <= self.router_layers[0] and self.router_layers[-1] < self.depth):
      raise ValueError(f"router_layers must be increasing layer indices in [0, {self.depth - 1}], got {self.router_layers!r}")
    return encode(self, x, capacities, full=full, width_index=width_index, drop_smallest=drop_smallest,
                  patch_order=patch_order, width=self.width, depth=self.depth, num_heads=self.num_heads,
                  mlp_dim=self.mlp_dim, num_experts=self.num_experts, router_layers=tuple(self.router_layers),
                  router=self.router, alpha_bounded=self.alpha_bounded, remat=self.remat,
                  attention=self.attention, grad_barrier=self.grad_barrier, backend=self.backend, mlp=self.mlp,
                  layer_loop=self.layer_loop, weight_grad=self.weight_grad)
