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

import mone

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"


def results_root() -> Path:
  """Where results are read and written: results/ of the repository, or $MONE_RESULTS_DIR
  (the smoke profile and the tests write elsewhere)."""
  return Path(os.environ.get("MONE_RESULTS_DIR", RESULTS))


def is_local(path) -> bool:
  """Whether path is on this machine's file system (not gs://... or another etils.epath scheme)."""
  return "://" not in str(path)


def as_path(path):
  """A pathlib.Path for a local path, an etils.epath.Path for any other (gs://bucket/run)."""
  if is_local(path):
    return Path(path)
  from etils import epath
  return epath.Path(path)


def make_dir(path, name: str) -> None:
  """Creates a local folder (and its parents), or says in one line, naming the parameter `name`
  that gave it, why it cannot be; a remote one (gs://...) needs no creating (objects have no
  folders; the checkpointer writes there)."""
  if not is_local(path):
    return
  try:
    os.makedirs(path, exist_ok=True)
  except OSError as e:
    raise ValueError(f"{name} {str(path)!r} cannot be created: {e.strerror or e}") from None


def atomic_write_text(path, text: str) -> None:
  """Writes via a temporary file in the same folder and os.replace: a reader (or a run killed
  mid-write) sees either the old file or the complete new one, never half of one. (An object
  store such as gs:// writes each object whole: there the file is written directly.)"""
  if not is_local(path):
    as_path(path).write_text(text)
    return
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


def jsonable(x, for_hash: bool = False):
  """x as plain JSON types (dataclasses as dicts, tuples as lists, scalars as Python numbers), as
  run files and config hashes store it. for_hash leaves out fields added later that still hold
  their old default (config._added), so a new field renames no committed run file, and fields
  marked `hash_omit` (what a run reports, not what it computes)."""
  def hashed(f):
    return not (f.metadata.get("hash_omit") or
                (f.metadata.get("hash_omit_default") and getattr(x, f.name) == f.default))
  if dataclasses.is_dataclass(x):
    return {f.name: jsonable(getattr(x, f.name), for_hash) for f in dataclasses.fields(x)
            if not for_hash or hashed(f)}
  if isinstance(x, dict):
    return {str(k): jsonable(v, for_hash) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v, for_hash) for v in x]
  if hasattr(x, "item") and getattr(x, "ndim", 1) == 0:  # numpy / jax scalars
    return x.item()
  if hasattr(x, "tolist"):
    return x.tolist()
  return x


SIGNIFICANT_DIGITS = 6  # every float a results file holds


def rounded(x):
  """x with every float rounded to SIGNIFICANT_DIGITS significant digits. Far more than any claim
  needs (accuracies are counts over at most 10^4 examples), and few enough that the last-bit
  differences between processors (XLA's CPU code, SLSQP's capacities) do not reach the files."""
  if isinstance(x, float):
    return float(f"{x:.{SIGNIFICANT_DIGITS}g}")
  if isinstance(x, dict):
    return {k: rounded(v) for k, v in x.items()}
  if isinstance(x, list):
    return [rounded(v) for v in x]
  return x


def atomic_write_json(path, obj) -> None:
  """obj as JSON (floats `rounded`), written atomically."""
  atomic_write_text(path, json.dumps(rounded(jsonable(obj)), indent=1, sort_keys=True) + "\n")


def read_json(path):
  with open(path) as f:
    return json.load(f)


def config_hash(config) -> str:
  """A short stable hash of a config's content (field names and values)."""
  blob = json.dumps(jsonable(config, for_hash=True), sort_keys=True).encode()
  return hashlib.sha256(blob).hexdigest()[:12]


def provenance() -> dict:
  """Package versions and the device, recorded in every results file."""
  import jax
  import flax
  import optax
  import numpy
  dev = jax.devices()[0]
  return {
      "versions": {"mone": mone.__version__, "jax": jax.__version__, "flax": flax.__version__,
                   "optax": optax.__version__, "numpy": numpy.__version__,
                   "python": platform.python_version()},
      "device": {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count(),
                 "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                 "cores_used": usable_cores()},
  }


def device_name(m: dict) -> str:
  """Where a run file's run trained (its `provenance`): the device kind, with the host's cores for
  a CPU, and how many of them the run used where it was pinned to fewer ('cpu, 2 cores',
  'cpu, 1 of 2 cores', 'NVIDIA H200')."""
  d = m.get("device") or {}
  kind = d.get("kind", "unrecorded device")
  if kind != "cpu" or not d.get("cores"):
    return kind
  used = d.get("cores_used") or d["cores"]
  return f"cpu, {used} of {d['cores']} cores" if used < d["cores"] else f"cpu, {d['cores']} cores"


def trained_where(m: dict) -> str:
  """Where a run file's run trained: each device of its `trained_on` parts in order, joined by
  ' then ' ('NVIDIA H100 80GB HBM3 then cpu, 1 of 2 cores'), else its `device` (`device_name`:
  the process that wrote the file)."""
  names = []
  for part in m.get("trained_on") or []:
    d = part.get("device")
    name = device_name({"device": d}) if isinstance(d, dict) else str(d)
    if names and names[-1].startswith("cpu") and name.startswith("cpu"):
      names[-1] = name  # parts on the CPU: the one that records its cores says it best
    elif not names or names[-1] != name:
      names.append(name)
  return " then ".join(names) if names else device_name(m)


def usable_cores() -> int | None:
  """The cores this process may run on (its affinity, e.g. one under `train_queue.py --pin-cores`):
  XLA:CPU sizes its thread pool by them, and the thread count changes a CPU run's last bits."""
  try:
    return len(os.sched_getaffinity(0))
  except (AttributeError, OSError):  # not Linux
    return os.cpu_count()


def peak_rss_mib() -> float:
  """This process's peak resident memory. /proc's VmHWM, not ru_maxrss: Linux carries
  ru_maxrss over from the launching process through fork and exec."""
  try:
    with open("/proc/self/status") as f:
      return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
  except (OSError, StopIteration, ValueError, IndexError):
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
