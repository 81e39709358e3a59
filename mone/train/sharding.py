"""How arrays are laid out over devices: a 1-D data-parallel mesh, batches split over it."""
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mone.configs.schema import TrainConfig


def check_devices(num_devices: int, available: int) -> None:
  """A config's num_devices against the devices this run has (0: all of them): the training
  commands check it before they write anything."""
  if not 0 <= num_devices <= available:
    raise ValueError(f"num_devices must be in [0, {available}] on this machine (0: all devices), got {num_devices}")


def make_mesh(cfg: TrainConfig) -> Mesh:
  """A 1-D data-parallel mesh over cfg.num_devices devices (0 = all of them). In a multi-process
  run (`jax.distributed`) it spans every process's devices: num_devices must be 0 or all."""
  devices = jax.devices()
  check_devices(cfg.num_devices, len(devices))
  n = cfg.num_devices or len(devices)
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



def spec(shape, mesh: Mesh, mode: str) -> P:
  """Where an array of this shape lives: replicated ("data"), or ("fsdp") split over the data
  axis along its largest dimension that the number of devices divides (replicated if none does:
  biases of odd sizes, scalars)."""
  if mode not in ("data", "fsdp"):  # checked first: on one device every mode would replicate
    raise ValueError(f"sharding must be 'data' or 'fsdp', got {mode!r}")
  n = mesh.shape["data"]
  if mode == "data" or n == 1:
    return P()
  for axis in sorted(range(len(shape)), key=lambda a: -shape[a]):
    if shape[axis] % n == 0:
      return P(*(["data" if a == axis else None for a in range(len(shape))]))
  return P()


def shardings(mesh: Mesh, tree, mode: str = "data"):
  """The NamedSharding of every array of tree (parameters, optimizer state) under `spec`."""
  return jax.tree_util.tree_map(lambda x: NamedSharding(mesh, spec(np.shape(x), mesh, mode)), tree)


def place(mesh: Mesh, tree, mode: str = "data"):
  """tree on the mesh as `shardings` lays it out. In a multi-process run every process holds the
  same host values (same seed, or the same checkpoint) and puts its own parts on its devices."""
  target = shardings(mesh, tree, mode)
  if jax.process_count() == 1:
    return jax.device_put(tree, target)
  def put(x, sh):
    if isinstance(x, jax.Array) and not x.is_fully_addressable:  # already global (restored by orbax)
      return jax.device_put(x, sh)
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sh, lambda idx: x[idx])
  return jax.tree_util.tree_map(put, tree, target)
