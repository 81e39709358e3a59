"""Where results live and how they are written: atomically, with provenance.

Every metrics file records the config, its hash, the seed, package versions and the
device, so a number in the book can always be traced to the run that produced it.
"""
import dataclasses
import hashlib
import json
import os
import platform
import resource
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"


def results_root() -> Path:
  """Where results are read and written: results/ of the repository, or $MONE_RESULTS_DIR
  (the smoke profile and the tests write elsewhere)."""
  return Path(os.environ.get("MONE_RESULTS_DIR", RESULTS))


def atomic_write_text(path, text: str) -> None:
  """Writes via a temporary file in the same folder and os.replace: a reader (or a run killed
  mid-write) sees either the old file or the complete new one, never half of one."""
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
  try:
    with os.fdopen(fd, "w") as f:
      f.write(text)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.unlink(tmp)
    raise


def _jsonable(x, for_hash: bool = False):
  """Plain JSON types. for_hash leaves out fields added later that still hold their old
  default (config._added), so a new field renames no committed run file."""
  if dataclasses.is_dataclass(x):
    return {f.name: _jsonable(getattr(x, f.name), for_hash) for f in dataclasses.fields(x)
            if not (for_hash and f.metadata.get("hash_omit_default") and getattr(x, f.name) == f.default)}
  if isinstance(x, dict):
    return {str(k): _jsonable(v, for_hash) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_jsonable(v, for_hash) for v in x]
  if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:  # numpy / jax scalars
    return x.item()
  if hasattr(x, "tolist"):
    return x.tolist()
  return x


def atomic_write_json(path, obj) -> None:
  atomic_write_text(path, json.dumps(_jsonable(obj), indent=1, sort_keys=True) + "\n")


def read_json(path):
  with open(path) as f:
    return json.load(f)


def config_hash(config) -> str:
  """A short stable hash of a config's content (field names and values)."""
  blob = json.dumps(_jsonable(config, for_hash=True), sort_keys=True).encode()
  return hashlib.sha256(blob).hexdigest()[:12]


def provenance() -> dict:
  """Package versions and the device, recorded in every results file."""
  import jax
  import flax
  import optax
  import numpy
  import mone
  dev = jax.devices()[0]
  return {
      "versions": {"mone": mone.__version__, "jax": jax.__version__, "flax": flax.__version__,
                   "optax": optax.__version__, "numpy": numpy.__version__,
                   "python": platform.python_version()},
      "device": {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count(),
                 "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
  }


def peak_rss_mib() -> float:
  """This process's peak resident memory. /proc's VmHWM, not ru_maxrss: Linux carries
  ru_maxrss over from the launching process through fork and exec."""
  try:
    with open("/proc/self/status") as f:
      return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
  except (OSError, StopIteration, ValueError, IndexError):
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
