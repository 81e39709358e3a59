"""Where results live and how they are written: atomically, with provenance.

Every metrics file records the config, its hash, the seed, package versions and the
device, so a number in the book can always be traced to the run that produced it. A training
run's file also records the code and machine that trained it (`code_provenance`).
"""
import dataclasses
import functools
import hashlib
import json
import os
import platform
import re
import resource
import subprocess
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


def run_id(config) -> str:
  """The name of a training config's run: '<recipe>-<kind>-<config hash>', the stem of its run file,
  weights and work folder, so that every reader and writer of run files names a run alike."""
  return f"{config.name}-{config.kind}-{config_hash(config)}"


def run_files(folder, name: str, kind: str) -> list:
  """The run files under `folder` of every config of recipe `name` and `kind` (`run_id`), sorted."""
  return sorted(Path(folder).glob(f"{name}-{kind}-*.json"))


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


def code_provenance() -> dict:
  """The code and machine this process computes with, as a training run records them (the loop's
  `trained_on` parts and its run file's `code`): a retrained run's numbers are only comparable with
  runs of the same code, compiled the same way. `provenance` leaves it out: the chapters' results
  files it goes into must stay byte-identical when their notebooks rerun on other commits.

  commit: the full git commit, dirty: whether the package's code (mone/) had uncommitted changes
  (`git_state`; both None outside a git checkout); xla_flags: $XLA_FLAGS ("" if unset); the jax and
  jaxlib versions; cpu_model: the host's CPU (`cpu_model`); isa: the instruction set XLA:CPU
  compiles for (`xla_cpu_isa`); allocator: the malloc behind XLA's buffers (`allocator`). Git and $XLA_FLAGS are read on every call (a commit can land while
  a process lives; the training loop calls this once per run); the CPU, which cannot change, once
  per process."""
  import jax
  import jaxlib
  commit, dirty = git_state()
  return {"commit": commit, "dirty": dirty, "xla_flags": os.environ.get("XLA_FLAGS", ""),
          "jax": jax.__version__, "jaxlib": jaxlib.__version__, "cpu_model": cpu_model(), "isa": xla_cpu_isa(),
          "allocator": allocator()}


PROVENANCE_KEYS = ("commit", "dirty", "xla_flags", "jax", "jaxlib", "cpu_model", "isa")


def require_provenance(metrics: dict, path) -> dict:
  """metrics, if its run file records the code and machine that trained it (`code_provenance`:
  every key of PROVENANCE_KEYS, a commit among them); else a one-line ValueError naming the file.
  The next profile reads only such runs: a run is compared with runs of its own code version."""
  code = metrics.get("code") or {}
  if missing := [k for k in PROVENANCE_KEYS if k not in code or (k == "commit" and not code[k])]:
    raise ValueError(f"{Path(path).name}: the run file does not record {', '.join(missing)} of the code that "
                     "trained it (code provenance); retrain it with this code to use it in the next profile")
  return metrics


def allocator() -> str:
  """The allocator this process's malloc calls reach: 'tcmalloc' or 'jemalloc' where such a library
  is loaded (read from /proc/self/maps; `mone.train.hostmem` preloads tcmalloc), else 'glibc';
  'unknown' where /proc cannot say (not Linux)."""
  try:
    maps = Path("/proc/self/maps").read_text()
  except OSError:
    return "unknown"
  return next((name for name in ("tcmalloc", "jemalloc") if f"lib{name}" in maps), "glibc")


def git_state() -> tuple[str | None, bool | None]:
  """(the full commit checked out in REPO, whether `git status` shows uncommitted changes to tracked
  files under mone/), or (None, None) where REPO is no git checkout (an installed package) or git
  cannot say. Changes elsewhere (results a run is writing, notebooks) do not change what a run
  computes. Untracked files do not count, as in `python -m mone.bench`'s code version: a new module
  not yet added to git leaves the flag False. REPO must hold .git itself (a folder, or a worktree's
  file): a package installed inside another repository's tree would otherwise record that
  repository's commit."""
  if not (REPO / ".git").exists():
    return None, None
  try:
    run = lambda *a: subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True, timeout=10)
    head = run("rev-parse", "HEAD")
    if head.returncode:
      return None, None
    status = run("status", "--porcelain", "--untracked-files=no", "--", "mone")
    return head.stdout.strip(), (bool(status.stdout.strip()) if status.returncode == 0 else None)
  except (OSError, subprocess.SubprocessError):
    return None, None


@functools.lru_cache(maxsize=None)
def cpu_model() -> str:
  """The host CPU's name: /proc/cpuinfo's first "model name" (Linux on x86), else
  platform.processor() or platform.machine() ('arm64', 'x86_64')."""
  try:
    with open("/proc/cpuinfo") as f:
      return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
  except (OSError, StopIteration):
    return platform.processor() or platform.machine()


# The instruction sets XLA:CPU's --xla_cpu_max_isa names that a run record tells apart, best first,
# each with the /proc/cpuinfo flag that shows the host has it.
HOST_ISAS = (("AMX", "amx_tile"), ("AVX512", "avx512f"), ("AVX2", "avx2"), ("AVX", "avx"), ("SSE4_2", "sse4_2"))


def xla_cpu_isa() -> str | None:
  """The instruction set XLA:CPU compiles for: the value of --xla_cpu_max_isa in $XLA_FLAGS where
  given (the last one given, e.g. "AVX2"), else the host's best of HOST_ISAS followed by
  " (host)" ("AVX512 (host)"): XLA:CPU compiles for the CPU it runs on. The same program can round
  its last bits differently under another ISA (other vector widths, fused multiply-adds). None
  where the host shows none of them (not x86, or no /proc/cpuinfo). XLA reads $XLA_FLAGS once,
  when its backend starts: this reads it now, as the run's xla_flags do."""
  given = re.findall(r"--xla_cpu_max_isa=(\S+)", os.environ.get("XLA_FLAGS", ""))
  if given:
    return given[-1]
  host = best_isa(_host_cpu_flags())
  return host and f"{host} (host)"


def best_isa(flags) -> str | None:
  """The best of HOST_ISAS whose /proc/cpuinfo flag is among flags, or None."""
  return next((isa for isa, flag in HOST_ISAS if flag in flags), None)


@functools.lru_cache(maxsize=None)
def _host_cpu_flags() -> frozenset:
  """The first CPU's flags in /proc/cpuinfo (empty where there is none)."""
  try:
    with open("/proc/cpuinfo") as f:
      return frozenset(next(l.split(":", 1)[1].split() for l in f if l.startswith("flags")))
  except (OSError, StopIteration):
    return frozenset()


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
