import jax
import numpy as np
import pytest

from mone import capacity
from mone.models import routing


def epr_numpy(r, c):
  """Plain transcription of Algorithm 1 for one example. r: [E, N]; experts 0 = smallest."""
  e, n = r.shape
  r = r.copy()
  m = np.zeros(n, int)  # line 1: default to the smallest model
  for j in range(e - 1, -1, -1):  # line 2: largest to smallest
    k = int(np.floor(c[j] * n + 1e-6))
    idx = np.argsort(-r[j], kind="stable")[:k]  # line 4
    m[idx] = j  # line 5
    r[:, idx] = -np.inf  # line 6 (the paper nulls to 0; -inf avoids ties with real zeros)
  return m


CAPS = [capacity.capacity_distribution(e) for e in (0.2, 0.4, 0.6, 0.9)] + [
    capacity.proportionate(), capacity.uniform(), np.eye(4)[3], np.eye(4)[0]]


@pytest.mark.parametrize("caps", CAPS)
@pytest.mark.parametrize("n", [7, 64, 197])
def test_matches_algorithm_1(caps, n):
  probs = jax.nn.softmax(jax.random.normal(jax.random.key(n), (5, n, 4)), -1)
  got = np.asarray(routing.expert_preferred_routing(probs, tuple(caps)))
  want = np.stack([epr_numpy(np.asarray(p).T, caps) for p in probs])
  np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("caps", CAPS)
def test_exact_counts_and_preference_order(caps):
  n = 50
  probs = np.asarray(jax.random.uniform(jax.random.key(1), (3, n, 4)))
  got = np.asarray(routing.expert_preferred_routing(probs, tuple(caps)))
  counts = routing.expert_counts(caps, n)
  for b in range(3):
    np.testing.assert_array_equal(np.bincount(got[b], minlength=4), counts)  # each token once
    free = np.ones(n, bool)
    for j in range(3, 0, -1):  # expert j got exactly its favourite still-free tokens
      chosen = got[b] == j
      if chosen.any() and (free & ~chosen).any():
        assert probs[b, chosen, j].min() >= probs[b, free & ~chosen, j].max()
      free &= ~chosen


def test_counts_floor_and_leftovers_to_smallest():
  assert routing.expert_counts((0.3, 0.3, 0.2, 0.2), 10) == (3, 3, 2, 2)
  assert routing.expert_counts((0.25, 0.25, 0.25, 0.25), 7) == (4, 1, 1, 1)
  with pytest.raises(ValueError, match="sum to 1"):
    routing.expert_counts((0.5, 0.6), 10)


def test_jit_and_batch_shapes():
  caps = tuple(capacity.capacity_distribution(0.5))
  f = jax.jit(routing.expert_preferred_routing, static_argnums=1)
  out = f(jax.random.uniform(jax.random.key(0), (2, 3, 16, 4)), caps)
  assert out.shape == (2, 3, 16) and out.dtype == np.int32


def test_random_router_respects_capacities_and_varies():
  caps = tuple(capacity.capacity_distribution(0.3))
  a = routing.expert_preferred_routing(routing.random_router_probs(jax.random.key(0), (1, 64, 4)), caps)
  b = routing.expert_preferred_routing(routing.random_router_probs(jax.random.key(1), (1, 64, 4)), caps)
  np.testing.assert_array_equal(np.bincount(np.asarray(a[0]), minlength=4), routing.expert_counts(caps, 64))
  assert not np.array_equal(a, b)


def test_group_permutation_makes_contiguous_groups():
  assignment = np.array([[3, 0, 2, 0, 1, 3]])
  perm = np.asarray(routing.group_permutation(assignment))
  np.testing.assert_array_equal(assignment[0, perm[0]], [0, 0, 1, 2, 3, 3])
  np.testing.assert_array_equal(perm[0], [1, 3, 4, 2, 0, 5])
