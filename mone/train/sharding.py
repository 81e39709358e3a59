"""How arrays are laid out over devices: a 1-D data-parallel mesh, batches split over it."""
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mone.train.recipes import TrainConfig


def make_mesh(cfg: TrainConfig) -> Mesh:
  """A 1-D data-parallel mesh over cfg.num_devices devices (0 = all of them). In a multi-process
  run (`jax.distributed`) it spans every process's devices: num_devices must be 0 or all."""
  devices = jax.devices()
  n = cfg.num_devices or len(devices)
  if n > len(devices):
    raise ValueError(f"num_devices={n} but only {len(devices)} devices are available")
  if jax.process_count() > 1 and n != len(devices):
    raise ValueError(f"num_devices={cfg.num_devices}: a multi-process run uses every process's devices "
                     f"(num_devices=0 or {len(devices)})")
  return Mesh(np.array(devices[:n]), ("data",))


def shard(mesh: Mesh, x):
  """Splits the batch axis over the mesh; parameters stay replicated."""
  sharding = NamedSharding(mesh, P("data"))
  if jax.process_count() > 1:  # each host feeds its own slice of the global batch
    return jax.make_array_from_process_local_data(sharding, x)
  return jax.device_put(x, sharding)



def replicate(mesh: Mesh, tree):
  """tree (parameters, optimizer state) as arrays replicated over the mesh. In a multi-process
  run every process holds the same host values (same seed, or the same checkpoint), and each
  puts them on its own devices."""
  sharding = NamedSharding(mesh, P())
  if jax.process_count() == 1:
    return jax.device_put(tree, sharding)
  def put(x):
    x = np.asarray(x) if not isinstance(x, jax.Array) or x.is_fully_addressable else x
    if isinstance(x, jax.Array):  # already global (restored by orbax onto the mesh)
      return jax.device_put(x, sharding)
    return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])
  return jax.tree_util.tree_map(put, tree)
