"""What the benchmark times: the dense model and its nested contenders, from one set of parameters."""
import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from mone import capacity, flops
from mone.bench.contenders import DENSE, MASKED, MATVIT, MONE
from mone.models import config, layers, masked, vit, vivit

E_CS = (0.2, 0.3, 0.4, 0.5, 0.6, 1.0)


def _params_only(p):
  return {"params": p}


@dataclasses.dataclass
class Contender:
  name: str          # one of `contenders.NAMES`
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
  # (MoNE's parameters, the dense model's): pass as `params=` to build the same workload with other
  # config fields (e.g. the attention implementation) without initialising it again.
  params: tuple | None = None


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
                   seed=0, params=None, **overrides) -> Workload:
  """Dense ViT, MoNE at each e_c, MatViT at the closest FLOPs and the masked MoNE.
  params: another image workload's `params` of the same shapes, reused instead of a new init."""
  cfg = config.vit(variant, **overrides)
  shape = (cfg.image_size, cfg.image_size, cfg.channels)
  mone, dense = vit.ViT(cfg, routed=True), vit.ViT(cfg)
  p, p_dense = params or _shared_params(mone, shape, cfg.num_experts, seed)

  def nested(widths):
    return lambda p: {"params": p, "nested": layers.nested_weights(p, widths)}

  dense_macs = flops.macs(cfg, "vit")
  out = [Contender(DENSE, None, dense_macs, lambda v, x: dense.apply(v, x)[0], p_dense,
                   "ViT, all tokens at width D")]
  rel = [w / cfg.width for w in cfg.expert_widths]
  matvit_macs = [flops.macs(cfg, "matvit", r) for r in rel]
  for e_c in e_cs:
    caps = capacity.budget(capacity.EQ3, e_c, cfg.num_experts).capacities
    out.append(Contender(MONE, e_c, flops.macs(cfg, "mone", capacities=caps),
                         lambda v, x, caps=caps: mone.apply(v, x, caps)[0], p,
                         "capacities " + ", ".join(f"{c:.3f}" for c in caps), nested(cfg.expert_widths)))
    j = int(np.argmin([abs(m - out[-1].macs) for m in matvit_macs]))
    # The largest sub-model is the dense ViT itself; a sub-model closest to several e_c is timed once.
    if with_matvit and j < cfg.num_experts - 1 and not any(c.name == MATVIT and c.macs == matvit_macs[j] for c in out):
      out.append(Contender(MATVIT, e_c, matvit_macs[j],
                           lambda v, x, j=j: dense.apply(v, x, width_index=j)[0], p_dense,
                           f"sub-model width {cfg.expert_widths[j]} (width_index={j})",
                           nested(cfg.expert_widths[j:j + 1])))
    if with_masked and abs(e_c - masked_e_c) < 1e-9:
      router_macs = cfg.num_routers * cfg.num_tokens * cfg.width * cfg.num_experts
      out.append(Contender(MASKED, e_c, dense_macs + router_macs,
                           lambda v, x, caps=caps: masked.masked_apply(v, cfg, x, caps)[0], p,
                           "naive MoNE: every token at width D, masked (mone.models.masked)"))

  return Workload(f"ViT-{variant} {cfg.image_size}px", _random_inputs(shape, cfg.num_classes, seed), out,
                  f"dense ViT-{variant} ({flops.gflops(cfg):.2f} GFLOPs/example), the same Block code "
                  "as MoNE (heads-major attention, erf GELU), float32, jit", (p, p_dense))


def video_workload(variant: str, e_cs, num_frames: int = 4, seed=0, params=None, **overrides) -> Workload:
  """Dense ViViT-FE against MoNE-ViViT at each e_c (MoNE routes the spatial transformer only,
  so the temporal transformer and the per-frame CLS tokens cost the same on both sides).
  params: as image_workload's."""
  cfg = config.vivit(variant, num_frames=num_frames, **overrides)
  shape = (cfg.num_frames, cfg.image_size, cfg.image_size, cfg.channels)
  mone, dense = vivit.ViViT(cfg, routed=True), vivit.ViViT(cfg)
  p, p_dense = params or _shared_params(mone, shape, cfg.num_experts, seed)
  out = [Contender(DENSE, None, flops.macs(cfg, "vit"), lambda v, x: dense.apply(v, x)[0], p_dense,
                   "ViViT-FE, all tokens at width D")]
  for e_c in e_cs:
    caps = capacity.budget(capacity.EQ3, e_c, cfg.num_experts).capacities
    out.append(Contender(MONE, e_c, flops.macs(cfg, "mone", capacities=caps),
                         lambda v, x, caps=caps: mone.apply(v, x, caps)[0], p,
                         "capacities " + ", ".join(f"{c:.3f}" for c in caps),
                         lambda p: {"params": p, "nested": layers.nested_weights(p, cfg.expert_widths)}))

  return Workload(f"ViViT-{variant} {cfg.num_frames}x{cfg.image_size}px",
                  _random_inputs(shape, cfg.num_classes, seed), out,
                  f"dense ViViT-{variant} FE ({flops.gflops(cfg):.2f} GFLOPs/clip of {cfg.num_frames} frames), "
                  "the same Block code as MoNE, float32, jit", (p, p_dense))


def cast(workload: Workload, dtype) -> Workload:
  """The workload with floating parameters and inputs in `dtype` (e.g. bfloat16 on a GPU):
  every contender then computes in it, since the models follow their inputs' dtype."""
  if jnp.dtype(dtype) == jnp.float32:
    return workload

  def make_inputs(batch, make=workload.make_inputs):
    x, y = make(batch)
    return x.astype(dtype), y
  return dataclasses.replace(workload, make_inputs=make_inputs,
                             contenders=[cast_contender(c, dtype) for c in workload.contenders],
                             baseline=workload.baseline.replace("float32", jnp.dtype(dtype).name))


def cast_contender(c: Contender, dtype) -> Contender:
  """One contender with its floating parameters in `dtype` (`cast` does every contender)."""
  return dataclasses.replace(c, params=layers.cast_floating(c.params, dtype))
