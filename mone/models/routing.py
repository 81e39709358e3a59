"""Expert Preferred Routing (paper Sec. 4.2, Algorithm 1) and the random router (Sec. 6).

Expert indices run from 0 (smallest nested expert, width D/2^(E-1)) to E-1 (the full
model). Capacities are static Python floats, so every expert's token count is known at
trace time and the routed model has static shapes under jit.
"""
import jax
import jax.numpy as jnp

from mone import capacity as capacity_lib
from mone.capacity import (
  expert_counts,  # re-exported: the token counts EPR fills per expert
)


def expert_preferred_routing(router_probs: jax.Array, capacities) -> jax.Array:
  """Algorithm 1: assigns every token to exactly one nested expert.

  Args:
    router_probs: [..., N, E] router predictions (any real scores work; higher = preferred).
    capacities: E static fractions summing to 1, smallest expert first.
  Returns:
    int32 [..., N] expert index per token. Experts are visited from the largest down:
    expert j takes the k_j = floor(c_j N) still-unassigned tokens it scores highest;
    whatever remains (integer packing) goes to expert 0, the smallest.

  Non-finite scores (NaN or +-inf, e.g. from NaN inputs) are a guard case, not an error
  (this runs under jit): such a token counts as the least preferred of the unassigned ones,
  so the counts stay exact, every token is assigned once, and the finite tokens are routed
  exactly as without it. The NaN still reaches the loss, where `mone.train` stops.
  """
  *batch, n, e = router_probs.shape
  c = capacity_lib.check_capacities(capacities, e)
  counts = expert_counts(c, n)
  assignment = jnp.zeros((*batch, n), jnp.int32)
  taken = jnp.zeros((*batch, n), bool)
  lowest = jnp.finfo(router_probs.dtype).min if jnp.issubdtype(router_probs.dtype, jnp.floating) else None
  for j in range(e - 1, 0, -1):
    if counts[j] == 0:
      continue
    scores = router_probs[..., j]
    if lowest is not None:  # below every finite score, above every taken token
      scores = jnp.where(jnp.isfinite(scores), scores, lowest)
    # -inf rather than the paper's 0 so an assigned token can never win a tie.
    scores = jnp.where(taken, -jnp.inf, scores)
    _, idx = jax.lax.top_k(scores, counts[j])
    chosen = jnp.zeros((*batch, n), bool)
    chosen = jnp.put_along_axis(chosen, idx, True, axis=-1, inplace=False)
    assignment = jnp.where(chosen, j, assignment)
    taken = taken | chosen
  return assignment


def random_router_probs(rng: jax.Array, shape) -> jax.Array:
  """Scores for the random router: uniform noise, so EPR picks tokens at random under the
  same per-expert capacities as the learned router (Sec. 6, Fig. 6c)."""
  return jax.random.uniform(rng, shape)


def group_permutation(assignment: jax.Array) -> jax.Array:
  """Permutation [..., N] that sorts tokens by expert (smallest first), stable in position.

  Because counts are static, after this permutation expert j's tokens form one contiguous,
  statically sized slice: every projection becomes a dense matmul per group.
  """
  return jnp.argsort(assignment, axis=-1, stable=True)
