"""Per-device memory of one training step, data parallel vs FSDP, from XLA's compiled program
(`memory_analysis`: what the step holds per device for its arguments, i.e. parameters, optimizer
state and batch, and for its temporaries). Nothing is trained; the step is only compiled.

  XLA_FLAGS=--xla_force_host_platform_device_count=8 .venv/bin/python scripts/fsdp_memory.py \\
      --config imagenet21k model=B/16 batch_size=64
"""
import argparse

import jax
import jax.numpy as jnp

from mone import flops
from mone.configs import recipes
from mone.train import sharding, steps


def step_memory(cfg) -> dict:
  mesh = sharding.make_mesh(cfg)
  model = steps.build_model(cfg)
  tx = steps.make_optimizer(cfg, flops.num_train_steps(cfg))
  x = jax.ShapeDtypeStruct(steps.input_shape(cfg, cfg.batch_size), jnp.float32)
  state = jax.eval_shape(lambda: (lambda p: {"params": p, "opt_state": tx.init(p), "step": jnp.int32(0)})(
      steps.init_params(cfg, model, jnp.zeros(steps.input_shape(cfg)))))
  state_sh = sharding.shardings(mesh, state, cfg.sharding)
  state = jax.tree_util.tree_map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), state, state_sh)
  batch_sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
  batch = {"image": jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=batch_sh),
           "soft_label": jax.ShapeDtypeStruct((cfg.batch_size, cfg.model.num_classes), jnp.float32, sharding=batch_sh)}
  compiled = steps.make_train_step(cfg, model, tx, state_sh).lower(state, batch, steps.train_budget(cfg, 0)).compile()
  m = compiled.memory_analysis()
  gib = lambda b: round(b / 2**30, 3)
  return {"sharding": cfg.sharding, "devices": mesh.devices.size, "arguments_gib": gib(m.argument_size_in_bytes),
          "temporaries_gib": gib(m.temp_size_in_bytes), "outputs_gib": gib(m.output_size_in_bytes)}


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--config", default="imagenet21k")
  ap.add_argument("overrides", nargs="*")
  args = ap.parse_args()
  for mode in ("data", "fsdp"):
    cfg = recipes.get_config(args.config, [*args.overrides, f"sharding={mode}"])
    print(cfg.name, cfg.model.name, cfg.kind, step_memory(cfg))


if __name__ == "__main__":
  main()
