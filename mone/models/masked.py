"""The naive "compute at full width, then mask" MoNE forward.

Every token runs through every projection at width D; its inputs are zeroed beyond its
expert's width d (the sliced in-projection) and its outputs zeroed beyond d (the padded
out-projection). It spends the dense model's FLOPs, so it exists only as the test oracle
for `mone.models.vit.ViT(routed=True)` and as the naive baseline in `mone.bench`. It is
written independently of the grouped implementation: original token order, no
permutation, no splitting.
"""
import jax
import jax.numpy as jnp
import numpy as np

from mone.models import layers, nested, routing, vit
from mone.models.config import ViTConfig


def _masked_layer_norm(x, mask, count, scale, bias, eps=1e-6):
  mean = jnp.sum(x * mask, -1, keepdims=True) / count
  var = jnp.sum(jnp.square((x - mean) * mask), -1, keepdims=True) / count
  return ((x - mean) * jax.lax.rsqrt(var + eps) * scale + bias) * mask


def _masked_block(p, x, d_tok, mult, num_heads, key_valid):
  """One block with per-token widths d_tok [B, N] (0 = token skips the layer)."""
  D = x.shape[-1]
  mask = (jnp.arange(D) < d_tok[..., None]).astype(x.dtype)  # [B, N, D]
  count = jnp.maximum(d_tok[..., None], 1).astype(x.dtype)
  h = _masked_layer_norm(x, mask, count, p["ln1_scale"], p["ln1_bias"])
  q, k, v = jnp.split(h @ p["qkv_kernel"] + p["qkv_bias"], 3, axis=-1)
  b, n, _ = q.shape
  q, k, v = (t.reshape(b, n, num_heads, D // num_heads) for t in (q, k, v))
  logits = jnp.einsum("bqhc,bkhc->bhqk", q, k) / np.sqrt(D // num_heads)
  logits = jnp.where(key_valid[:, None, None, :], logits, -jnp.inf)  # dropped tokens are not keys
  att = jnp.einsum("bhqk,bkhc->bqhc", jax.nn.softmax(logits, -1), v).reshape(b, n, D)
  z = x + (att @ p["out_kernel"] + p["out_bias"]) * mask
  h = _masked_layer_norm(z, mask, count, p["ln2_scale"], p["ln2_bias"])
  y = jax.nn.gelu(h @ p["mlp1_kernel"] + p["mlp1_bias"], approximate=False)
  y = (y @ p["mlp2_kernel"] + p["mlp2_bias"]) * mask * mult[..., None]
  return z + y


def masked_apply(variables, config: ViTConfig, images, capacities, drop_smallest=False, rng=None):
  """Same contract as `ViT(config, routed=True).apply(variables, images, capacities)`."""
  p = variables["params"]
  cfg = config
  x = vit.PatchEmbed(cfg).apply({"params": p["embed"]}, images)
  b, n, _ = x.shape
  widths = jnp.array(cfg.expert_widths)
  if drop_smallest:
    widths = widths.at[0].set(0)
  caps = routing.capacity_lib.check_capacities(capacities, cfg.num_experts)
  full = jnp.full((b, n), cfg.width)
  ones, all_valid = jnp.ones((b, n), x.dtype), jnp.ones((b, n), bool)
  d_tok, mult, valid, aux = full, ones, all_valid, {}
  starts = cfg.router_layers
  for l in range(cfg.depth):
    if l in starts:
      r = starts.index(l)
      rp = p[f"router_{r}"]
      probs = jax.nn.softmax(x @ rp["kernel"] + rp["bias"], axis=-1)
      scores = probs if cfg.router == "learned" else routing.random_router_probs(rng, probs.shape)
      assignment = routing.expert_preferred_routing(scores, caps)
      if r == 0:
        aux = {"router_probs": probs, "assignment": assignment}
      d_tok = widths[assignment]
      valid = d_tok > 0
      if cfg.router == "learned":
        mult = nested.eq1_alpha(p["alpha"], cfg.alpha_bounded) * jnp.take_along_axis(probs, assignment[..., None], -1)[..., 0] + 1.0
    x = _masked_block(p[f"block_{l}"], x, d_tok, mult, cfg.num_heads, valid)
  logits = layers.Head(cfg.num_classes).apply({"params": p["head"]}, x)
  return logits, aux
