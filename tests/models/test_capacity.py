import numpy as np
import pytest

from mone import capacity

E_C_GRID = np.concatenate([[0.125, 0.13], np.linspace(0.15, 0.95, 17), [0.99, 1.0]])


@pytest.mark.parametrize("e_c", E_C_GRID)
def test_eq3_constraints_hold(e_c):
  c = capacity.capacity_distribution(e_c)
  assert c.shape == (4,)
  assert np.all(c >= 0) and np.all(c <= 1)
  np.testing.assert_allclose(c.sum(), 1.0, atol=1e-8)
  np.testing.assert_allclose(capacity.effective_capacity(c), e_c, atol=1e-8)


def test_more_budget_goes_to_the_full_model():
  full_share = [capacity.capacity_distribution(e)[-1] for e in np.linspace(0.2, 0.9, 8)]
  assert np.all(np.diff(full_share) > 0)


def test_solution_is_the_optimum_of_eq3():
  # Any feasible perturbation (in the null space of both constraints) lowers the objective.
  e_c, delta, beta = 0.4, 2.0, 10.0
  c = capacity.capacity_distribution(e_c)
  obj = lambda c: np.sum(c * delta ** np.arange(4)) - beta * np.sum(c * np.log(c))
  a = np.stack([np.ones(4), 2.0 ** (np.arange(4) - 3)])
  null = np.linalg.svd(a)[2][2:]  # directions keeping both constraints
  rng = np.random.default_rng(0)
  for _ in range(20):
    step = 1e-3 * rng.normal(size=2) @ null
    assert obj(c + step) < obj(c) + 1e-12


@pytest.mark.parametrize("num_experts", [1, 2, 3, 5])
def test_other_expert_counts(num_experts):
  lo = 2.0 ** -(num_experts - 1)
  for e_c in np.linspace(lo, 1.0, 5):
    c = capacity.capacity_distribution(e_c, num_experts)
    np.testing.assert_allclose([c.sum(), capacity.effective_capacity(c)], [1.0, e_c], atol=1e-7)


@pytest.mark.parametrize("e_c", [0.0, -0.1, 1.01, float("nan"), 0.1])
def test_bad_e_c_is_rejected(e_c):
  with pytest.raises(ValueError, match="e_c"):
    capacity.capacity_distribution(e_c)


def test_bad_arguments_are_rejected():
  with pytest.raises(ValueError, match="num_experts"):
    capacity.capacity_distribution(0.5, num_experts=0)
  with pytest.raises(ValueError, match="delta"):
    capacity.capacity_distribution(0.5, delta=1.0)
  with pytest.raises(ValueError, match="beta"):
    capacity.capacity_distribution(0.5, beta=0.0)
  with pytest.raises(ValueError, match="divisible"):
    capacity.expert_widths(100, 4)
  with pytest.raises(ValueError, match="sum to 1"):
    capacity.check_capacities([0.5, 0.2, 0.2, 0.2])


def test_table1_alternatives():
  # The paper's Table 1 lists e_c 0.27 (proportionate) and 0.47 (uniform).
  assert capacity.effective_capacity(capacity.proportionate()) == pytest.approx(4 / 15)
  assert capacity.effective_capacity(capacity.uniform()) == pytest.approx(0.46875)
  g = capacity.greedy(0.4)
  assert g[1] == g[2] == 0 and capacity.effective_capacity(g) == pytest.approx(0.4)
  m = capacity.mod_greedy(0.4)
  assert m[-1] == pytest.approx(0.4) and m.sum() == pytest.approx(1.0)
  for name in capacity.ALLOCATIONS:
    assert capacity.allocation(name, 0.4).sum() == pytest.approx(1.0)
  with pytest.raises(ValueError, match="unknown allocation"):
    capacity.allocation("fair", 0.4)


def test_budget_is_the_one_conversion_of_a_budget():
  b = capacity.budget("mone", 0.4)
  assert b.capacities == tuple(capacity.capacity_distribution(0.4, 4)) and not b.drop_smallest
  assert b.effective == pytest.approx(0.4) and all(type(c) is float for c in b.capacities)
  mod = capacity.budget("mod_greedy", 0.4)
  assert mod.drop_smallest and mod.effective == pytest.approx(0.4)
  assert capacity.budget("uniform", None).capacities == (0.25,) * 4  # static: no e_c needed
  assert hash(b) == hash(capacity.budget("mone", 0.4))  # usable as a static jit argument
  with pytest.raises(ValueError, match="e_c"):
    capacity.budget("mone", 1.5)
  with pytest.raises(ValueError, match="needs e_c"):
    capacity.budget("greedy", None)


def test_train_config_budget_defaults_to_its_training_e_c():
  from mone.configs import recipes, schema
  cfg = schema.apply_overrides(recipes.smoke(), {"kind": "mone", "e_c": 0.3, "allocation": "mod_greedy"})
  assert cfg.budget() == capacity.budget("mod_greedy", 0.3, cfg.model.num_experts)
  assert cfg.budget(0.5).e_c == 0.5 and cfg.budget(0.5).drop_smallest
