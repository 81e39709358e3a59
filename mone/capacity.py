"""Capacity distributions over nested experts (paper Sec. 4.3, Eq. 3, and Table 1).

Experts are ordered from the smallest (width D / 2^(E-1)) to the full model (width D).
A capacity distribution c gives the fraction of tokens each expert processes; its
effective capacity e_c = sum_i c_i d_i / D is the fraction of the dense model's
projection compute that MoNE spends (Sec. 4.3).
"""
import dataclasses
import functools

import numpy as np


def expert_widths(width: int, num_experts: int) -> tuple[int, ...]:
  """Nested model dimensions (D/2^(E-1), ..., D/2, D), smallest first."""
  if num_experts < 1:
    raise ValueError(f"num_experts must be >= 1, got {num_experts}")
  if width % 2 ** (num_experts - 1):
    raise ValueError(
        f"width={width} must be divisible by 2^(num_experts-1)={2 ** (num_experts - 1)} "
        f"so that every nested expert (D/2^(E-1), ..., D) has an integer width")
  return tuple(width // 2 ** (num_experts - 1 - i) for i in range(num_experts))


def _relative_widths(num_experts: int) -> np.ndarray:
  if num_experts < 1:
    raise ValueError(f"num_experts must be >= 1, got {num_experts}")
  return 2.0 ** (np.arange(num_experts) - (num_experts - 1))  # d_i / D


def effective_capacity(c, drop_smallest: bool = False) -> float:
  """e_c = sum_i c_i d_i / D for a distribution c ordered smallest expert first.
  drop_smallest: c_1 marks dropped tokens, which cost nothing (MoD-greedy, `mod_greedy`)."""
  c = np.asarray(c, np.float64)
  w = _relative_widths(len(c))
  return float(np.sum((c * w)[1:] if drop_smallest else c * w))


def check_capacities(c, num_experts: int | None = None) -> tuple[float, ...]:
  """Validates a capacity distribution; returns it as a hashable tuple of floats."""
  c = np.asarray(c, np.float64)
  if c.ndim != 1 or (num_experts is not None and len(c) != num_experts):
    raise ValueError(f"capacities must be a 1-D sequence of {num_experts} fractions, got {c.tolist()}")
  if np.any(c < -1e-9) or np.any(c > 1 + 1e-9) or not np.all(np.isfinite(c)):
    raise ValueError(f"capacities must lie in [0, 1], got {c.tolist()}")
  if abs(c.sum() - 1.0) > 1e-6:
    raise ValueError(f"capacities must sum to 1 (every token goes to exactly one expert), "
                     f"got sum {c.sum():.6f} for {c.tolist()}")
  return tuple(float(x) for x in np.clip(c, 0.0, 1.0))


def expert_counts(capacities, num_tokens: int) -> tuple[int, ...]:
  """Tokens per expert under EPR: k_j = floor(c_j N) for j >= 1, leftovers to expert 0."""
  c = check_capacities(capacities)
  # The epsilon keeps floor() from losing a token to float error (0.3 * 10 = 2.9999...).
  k = [int(np.floor(cj * num_tokens + 1e-6)) for cj in c]
  k[0] = num_tokens - sum(k[1:])
  return tuple(k)


def _check_e_c(e_c: float, num_experts: int) -> float:
  lo = float(_relative_widths(num_experts)[0])
  if not np.isfinite(e_c) or not 0.0 < e_c <= 1.0:
    raise ValueError(f"e_c must be in (0, 1], got {e_c}")
  if e_c < lo - 1e-12:
    raise ValueError(
        f"e_c={e_c} is below {lo} = 1/2^(num_experts-1), the cost of sending every token to the "
        f"smallest of {num_experts} experts; use e_c in [{lo}, 1] (or more experts)")
  return float(e_c)


@functools.lru_cache(maxsize=None)
def _solve(e_c: float, num_experts: int, delta: float, beta: float) -> tuple[float, ...]:
  import scipy.optimize  # deferred: it costs seconds at import, and most callers never solve
  rel = _relative_widths(num_experts)
  if abs(e_c - 1.0) < 1e-12:  # only feasible point: all tokens to the full model
    return tuple(float(x) for x in np.eye(num_experts)[-1])
  if abs(e_c - rel[0]) < 1e-12:  # only feasible point: all tokens to the smallest
    return tuple(float(x) for x in np.eye(num_experts)[0])
  bonus = delta ** np.arange(num_experts)  # delta^(i-1): rewards larger experts

  def neg_objective(c):
    c_safe = np.clip(c, 1e-12, None)
    return -(np.sum(c * bonus) - beta * np.sum(c * np.log(c_safe)))

  constraints = [{"type": "eq", "fun": lambda c: np.sum(c) - 1.0},
                 {"type": "eq", "fun": lambda c: np.sum(c * rel) - e_c}]
  x0 = np.full(num_experts, 1.0 / num_experts)
  res = scipy.optimize.minimize(neg_objective, x0, method="SLSQP", bounds=[(0.0, 1.0)] * num_experts,
                                constraints=constraints, options={"ftol": 1e-12, "maxiter": 500})
  c = np.clip(res.x, 0.0, 1.0)
  if abs(c.sum() - 1) > 1e-6 or abs(np.sum(c * rel) - e_c) > 1e-6:
    raise RuntimeError(f"SLSQP did not satisfy Eq. 3's constraints for e_c={e_c}: {res.message}")
  return tuple(float(x) for x in c)


def capacity_distribution(e_c: float, num_experts: int = 4, delta: float = 2.0,
                          beta: float = 10.0) -> np.ndarray:
  """Solves Eq. 3 with SLSQP: the capacity fractions c, smallest expert first.

  maximise sum_i c_i delta^(i-1) - beta sum_i c_i log c_i
  s.t. sum_i c_i = 1, sum_i c_i / 2^(E-i) = e_c, 0 <= c_i <= 1.
  The first term pushes tokens to larger experts, the entropy term spreads them.
  """
  if num_experts < 1:
    raise ValueError(f"num_experts must be >= 1, got {num_experts}")
  if not delta > 1:
    raise ValueError(f"delta must be > 1, got {delta}")
  if not beta > 0:
    raise ValueError(f"beta must be > 0, got {beta}")
  e_c = _check_e_c(e_c, num_experts)
  return np.array(_solve(round(e_c, 12), num_experts, float(delta), float(beta)))


# Alternative allocations compared in Table 1.

def proportionate(num_experts: int = 4) -> np.ndarray:
  """c_i proportional to 1/d_i: each expert gets the same share of compute (e_c=4/15 for E=4)."""
  inv = 1.0 / _relative_widths(num_experts)
  return inv / inv.sum()


def uniform(num_experts: int = 4) -> np.ndarray:
  """Equal token fractions for all experts (e_c=0.47 for E=4)."""
  return np.full(num_experts, 1.0 / num_experts)


def greedy(e_c: float, num_experts: int = 4) -> np.ndarray:
  """The full model takes as many tokens as the budget allows; the rest go to the smallest."""
  e_c = _check_e_c(e_c, num_experts)
  lo = _relative_widths(num_experts)[0]
  c = np.zeros(num_experts)
  c[-1] = (e_c - lo) / (1.0 - lo) if num_experts > 1 else 1.0
  c[0] += 1.0 - c[-1]
  return c


def mod_greedy(e_c: float, num_experts: int = 4) -> np.ndarray:
  """MoD-style: the full model takes a fraction e_c, all other tokens are *dropped*.

  Returned as a distribution over the experts where the smallest expert's share marks
  the dropped tokens; models run it with `drop_smallest=True` (width 0: no compute).
  """
  if not 0.0 < e_c <= 1.0:
    raise ValueError(f"e_c must be in (0, 1], got {e_c}")
  c = np.zeros(num_experts)
  c[-1] = e_c
  c[0] += 1.0 - e_c
  return c


# Eq. 3's allocation, the method's own: a config names it "mone" (`TrainConfig.allocation`), as it names
# the model kind "mone" (`TrainConfig.kind`); the two are different things, so code compares with EQ3.
EQ3 = "mone"
ALLOCATIONS = ("proportionate", "uniform", "mod_greedy", "greedy", EQ3)


def allocation(name: str, e_c: float | None = None, num_experts: int = 4) -> np.ndarray:
  """Table 1's capacity allocations by name; static ones ignore e_c."""
  if name == "proportionate":
    return proportionate(num_experts)
  if name == "uniform":
    return uniform(num_experts)
  if e_c is None:
    raise ValueError(f"allocation {name!r} needs e_c")
  if name == "mod_greedy":
    return mod_greedy(e_c, num_experts)
  if name == "greedy":
    return greedy(e_c, num_experts)
  if name == EQ3:
    return capacity_distribution(e_c, num_experts)
  raise ValueError(f"unknown allocation {name!r}; choose one of {ALLOCATIONS}")


@dataclasses.dataclass(frozen=True)
class Budget:
  """What a MoNE forward needs from a compute budget: the fraction of tokens per expert
  (smallest first) and whether the smallest expert's tokens skip the blocks (MoD Greedy).
  Hashable, so a jitted function can take it as a static argument."""
  allocation: str
  e_c: float | None  # the budget asked for; None for a static allocation without one
  capacities: tuple[float, ...]
  drop_smallest: bool

  @property
  def effective(self) -> float:
    """The effective capacity these capacities spend (sum_i c_i d_i / D)."""
    return effective_capacity(self.capacities, self.drop_smallest)


def budget(allocation_name: str, e_c: float | None, num_experts: int = 4) -> Budget:
  """The one place a budget becomes what the model needs: Table 1's allocation
  `allocation_name` at effective capacity e_c (ignored by the static allocations) over
  num_experts nested experts. Every caller (training, evaluation, FLOP counts, benchmarks,
  router analysis) goes through here; raises a ValueError naming e_c when it is infeasible."""
  caps = tuple(float(c) for c in allocation(allocation_name, e_c, num_experts))
  return Budget(allocation_name, e_c, caps, allocation_name == "mod_greedy")

