"""How arrays are laid out over devices: a 1-D data-parallel mesh, batches split over it."""
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mone.train.recipes import TrainConfig


def make_mesh(cfg: TrainConfig) -> Mesh:
  """A 1-D data-parallel mesh over cfg.num_devices local devices (0 = all of them)."""
  devices = jax.devices()
  n = cfg.num_devices or len(devices)
  if n > len(devices):
    raise ValueError(f"num_devices={n} but only {len(devices)} devices are available")
  return Mesh(np.array(devices[:n]), ("data",))


def shard(mesh: Mesh, x):
  """Splits the batch axis over the mesh; parameters stay replicated."""
  sharding = NamedSharding(mesh, P("data"))
  if jax.process_count() > 1:  # each host feeds its own slice of the global batch
    return jax.make_array_from_process_local_data(sharding, x)
  return jax.device_put(x, sharding)
