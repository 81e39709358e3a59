import jax
import jax.numpy as jnp
import pytest
from helpers import hlo_matmul_macs

from mone import capacity, flops
from mone.models import config, kinds


@pytest.mark.parametrize("variant,paper", [("S/16", 4.6), ("B/16", 17.6), ("L/16", 61.7)])
def test_published_vit_gflops(variant, paper):
  assert flops.gflops(config.vit(variant)) == pytest.approx(paper, rel=0.012)


def _xla(cfg, kind, **kw):
  m = kinds.build(cfg, kind)
  x = jnp.zeros((1, cfg.image_size, cfg.image_size, cfg.channels))
  args = (kw["capacities"],) if "capacities" in kw else ()
  call_kw = {k: v for k, v in kw.items() if k in ("width_index", "drop_smallest")}
  v = m.init(jax.random.key(0), x, *args, **call_kw)
  lowered = jax.jit(lambda v, x: m.apply(v, x, *args, **call_kw)[0]).lower(v, x)
  cost = lowered.compile().cost_analysis()
  cost = cost[0] if isinstance(cost, list) else cost
  return hlo_matmul_macs(lowered.as_text(dialect="hlo")), cost["flops"] / 2


CFG = config.vit("tiny/8", width=64, num_heads=4, image_size=48, depth=4)
CASES = [("vit", {}, {}), ("mod", {}, {}), ("matvit", {"width_index": 1}, {"e_c": 0.25}),
         ("mone", {"capacities": tuple(capacity.capacity_distribution(0.3))}, {}),
         ("mone", {"capacities": tuple(capacity.capacity_distribution(0.7))}, {}),
         ("mone", {"capacities": tuple(capacity.mod_greedy(0.4)), "drop_smallest": True}, {})]


@pytest.mark.parametrize("kind,kw,flop_kw", CASES)
def test_matches_xla(kind, kw, flop_kw):
  """Every dot/conv XLA runs is counted, exactly. XLA's total also counts elementwise work
  (softmax, GELU, LayerNorm: large relative to matmuls at these tiny widths), so it can only
  be higher."""
  want = flops.macs(CFG, kind, **flop_kw, **{k: v for k, v in kw.items() if k != "width_index"})
  hlo_macs, xla_total = _xla(CFG, kind, **kw)
  assert hlo_macs == want
  assert xla_total >= want


@pytest.mark.parametrize("overrides", [{"router_layer": 2}, {"num_routers": 2}, {"num_experts": 3}])
def test_router_options_match_xla(overrides):
  cfg = config.vit("tiny/8", width=64, num_heads=4, image_size=48, depth=4, **overrides)
  caps = tuple(capacity.capacity_distribution(0.4, cfg.num_experts))
  assert _xla(cfg, "mone", capacities=caps)[0] == flops.macs(cfg, "mone", capacities=caps)


def test_mone_saves_what_the_paper_says():
  s16 = config.vit("S/16")
  ratio = flops.gflops(s16) / flops.gflops(s16, "mone", 0.3)
  assert 2.6 < ratio < 2.9  # attention at full width caps the saving below 1/e_c
  assert flops.gflops(s16, "mone", 1.0) == pytest.approx(flops.gflops(s16), rel=1e-3)
  with pytest.raises(ValueError, match="nested width"):
    flops.gflops(s16, "matvit", 0.3)
