"""mone.train.hostmem: the training commands restart once with glibc's heap settings, which keep
XLA's per-step temporaries from being mapped and zero-filled anew at every call, and with tcmalloc
preloaded where it is installed, which computes the same numbers."""
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from mone import results
from mone.train import checkpoints, hostmem

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc tunables: Linux only")


def _run(code: str, tunables: str | None, args: tuple = (), **extra) -> str:
  """Runs python -c code (or, with args and no code, python *args) in the repository, with
  GLIBC_TUNABLES unset (None) or set to tunables, glibc's malloc unless `extra` (more environment
  variables) says otherwise; returns its stdout."""
  env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD", "MONE_MALLOC")}
  env.update(MONE_MALLOC="glibc", **extra)
  if tunables is not None:
    env["GLIBC_TUNABLES"] = tunables
  argv = [sys.executable, *(args or ("-c", code))]
  out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=results.REPO)
  assert out.returncode == 0, out.stderr
  return out.stdout


def test_the_makefile_exports_the_same_tunables():
  lines = re.findall(r"^export GLIBC_TUNABLES \?= (\S+)$", (results.REPO / "Makefile").read_text(), re.M)
  assert lines == [hostmem.TUNABLES]


@linux
def test_reexec_restarts_once_with_the_tunables_and_respects_a_set_value():
  code = ("import os; print('start', flush=True); from mone.train import hostmem; "
          "hostmem.reexec_with_tunables(); print('value', repr(os.environ['GLIBC_TUNABLES']))")
  # Unset: the program starts twice (once restarted), then runs on with the tunables.
  assert _run(code, None).split("\n") == ["start", "start", f"value {hostmem.TUNABLES!r}", ""]
  # Set, even empty: the caller's choice stands and nothing restarts.
  assert _run(code, "").split("\n") == ["start", "value ''", ""]
  assert _run(code, "glibc.malloc.arena_max=2").split("\n") == ["start", "value 'glibc.malloc.arena_max=2'", ""]


def test_the_environment_adds_what_is_missing_and_keeps_what_is_set(monkeypatch):
  lib = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
  monkeypatch.setattr(hostmem, "tcmalloc", lambda: lib)
  quiet = {"TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": str(1 << 40)}
  assert hostmem.environment({"A": "1"}) == {"A": "1", "GLIBC_TUNABLES": hostmem.TUNABLES, "LD_PRELOAD": lib, **quiet}
  # A preload or tunables the caller set stand; MONE_MALLOC=glibc keeps glibc's malloc.
  assert hostmem.environment({"LD_PRELOAD": "x.so"}) == {"LD_PRELOAD": "x.so", "GLIBC_TUNABLES": hostmem.TUNABLES}
  assert hostmem.environment({"GLIBC_TUNABLES": "", "MONE_MALLOC": "glibc"}) == {"GLIBC_TUNABLES": "", "MONE_MALLOC": "glibc"}
  # Without tcmalloc installed, only the tunables.
  monkeypatch.setattr(hostmem, "tcmalloc", lambda: None)
  assert hostmem.environment({}) == {"GLIBC_TUNABLES": hostmem.TUNABLES}
  with pytest.raises(ValueError, match=r"^MONE_MALLOC must be 'tcmalloc' or 'glibc', got 'jemalloc'$"):
    hostmem.environment({"MONE_MALLOC": "jemalloc"})


def test_tcmalloc_is_found_where_installed(monkeypatch):
  monkeypatch.setattr(hostmem, "TCMALLOC_PATHS", ("/nonexistent/libtcmalloc.so", __file__))
  assert hostmem.tcmalloc() == __file__
  monkeypatch.setattr(hostmem, "TCMALLOC_PATHS", ("/nonexistent/libtcmalloc.so",))
  assert hostmem.tcmalloc() is None


@linux
def test_a_bad_allocator_choice_stops_in_one_line():
  code = "from mone.train import hostmem; hostmem.reexec_with_tunables(); print('ran')"
  env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD")}
  out = subprocess.run([sys.executable, "-c", code], env={**env, "MONE_MALLOC": "jemalloc"},
                       capture_output=True, text=True, timeout=120, cwd=results.REPO)
  assert out.returncode == 1 and out.stdout == ""
  assert out.stderr == "error: MONE_MALLOC must be 'tcmalloc' or 'glibc', got 'jemalloc'\n"


needs_tcmalloc = pytest.mark.skipif(hostmem.tcmalloc() is None,
                                    reason="tcmalloc not installed (.ci/run installs libtcmalloc-minimal4)")


@linux
@needs_tcmalloc
def test_the_restart_preloads_tcmalloc_and_the_process_reports_it():
  code = ("import os; print('start', flush=True); from mone.train import hostmem; hostmem.reexec_with_tunables(); "
          "from mone import results; print(os.environ['LD_PRELOAD'], results.allocator())")
  env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD", "MONE_MALLOC")}
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                       cwd=results.REPO)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split("\n") == ["start", "start", f"{hostmem.tcmalloc()} tcmalloc", ""]


@pytest.mark.slow
@linux
@needs_tcmalloc
def test_a_run_trained_with_tcmalloc_equals_the_run_trained_with_glibc(tmp_path):
  # The allocator decides where buffers live; every loss, accuracy and parameter must be the same.
  runs = {}
  for choice in ("glibc", "tcmalloc"):
    work = tmp_path / choice
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD")}
    out = subprocess.run([sys.executable, "-m", "mone.train", "--config", "smoke", "--workdir", str(work), "steps=60",
                          "checkpoint_every=60"], env={**env, "MONE_MALLOC": choice},
                         capture_output=True, text=True, timeout=600, cwd=results.REPO)
    assert out.returncode == 0, out.stderr
    runs[choice] = results.read_json(work / "metrics.json")
  glibc, tcm = runs["glibc"], runs["tcmalloc"]
  assert (glibc["code"]["allocator"], tcm["code"]["allocator"]) == ("glibc", "tcmalloc")
  # What the machine measures (time, memory, the process's own record) differs; nothing else may.
  measured = ("wall_time_s", "peak_rss_mib", "code", "trained_on")
  same = lambda m: {k: v for k, v in m.items() if k not in measured}
  assert same(glibc) == same(tcm)
  assert glibc["history"] and glibc["accuracy"] == tcm["accuracy"]
  # The final parameters, bit for bit.
  a, b = (checkpoints.load_params(tmp_path / c) for c in runs)
  assert jax.tree.structure(a) == jax.tree.structure(b)
  assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.slow
@linux
def test_the_benchmark_command_runs_with_the_tunables_and_records_them(tmp_path):
  # `python -m mone.bench` times the models as the training commands run them: with the heap settings.
  path = tmp_path / "bench.json"
  _run("", None, ("-m", "mone.bench", "--variant", "tiny/8", "--batch", "2", "--e-c", "0.3", "--mode", "forward",
                  "--reps", "1", "--no-matvit", "--no-masked", "--json", str(path)))
  assert results.read_json(path)["machine"]["glibc_tunables"] == hostmem.TUNABLES


def _faults(code: str) -> tuple[list[int], list[int]]:
  """The page faults `code` prints, run once with glibc's defaults and once with the tunables."""
  return tuple([int(f) for f in _run(code, tunables).split()] for tunables in ("", hostmem.TUNABLES))


def _huge_pages_always() -> bool:
  """Where transparent huge pages are always on, the kernel faults fresh memory in 2 MB pages, so a
  fresh block's fault count says little and the defaults' arm is not checked."""
  thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
  return thp.exists() and "[always]" in thp.read_text()


# glibc alone, one thread: malloc a 96 MB block (24,576 pages, above every mmap threshold), write
# every page, free it; ten times after one. Prints the page faults of each of the ten.
_MALLOC = """
import ctypes, resource
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
faults = []
for _ in range(11):
  before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  p = libc.malloc(96 << 20)
  ctypes.memset(p, 1, 96 << 20)
  libc.free(p)
  faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(*faults[1:])
"""


@linux
def test_with_the_tunables_glibc_reuses_a_freed_large_block():
  default, tuned = _faults(_MALLOC)
  if not _huge_pages_always():
    assert min(default) > 20_000, default  # a fresh mmap, zero-filled page by page, every time
  assert max(tuned) < 100, tuned  # the same heap memory every time


# A jitted program whose temporary (sin(x), 96 MB) is as large as a digits64 training step's.
# Prints the page faults of each of 20 calls after 10. The calls are 0.1 s apart: the runtime can
# free a call's temporary just after its result is ready, and a call started at once then finds the
# block still taken and grows the heap by another. Even so, under load the heap now and then grows
# once more (measured: a few calls in a hundred on this machine, half of ten on a busy 2-core CI
# runner), so the test asks only what decides whether the settings reach XLA at all.
_FAULTS = """
import resource, time, jax, jax.numpy as jnp
x, w = jnp.ones((6144, 4096)), jnp.ones((4096, 8))
f = jax.jit(lambda x, w: jnp.sin(x) @ w)
for _ in range(10):
  f(x, w).block_until_ready()
faults = []
for _ in range(20):
  time.sleep(0.1)
  before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
  f(x, w).block_until_ready()
  faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(*faults)
"""


@linux
@pytest.mark.slow
def test_the_tunables_reach_the_temporaries_of_a_jitted_program():
  default, tuned = _faults(_FAULTS)
  # With glibc's defaults XLA's temporary is mapped afresh at every call. With the tunables, calls
  # that reuse it fault (almost) no page; a runtime with its own allocator would fault the whole
  # block in at every call in both arms.
  if not _huge_pages_always():
    assert min(default) > 20_000, default
  assert min(tuned) < 1_000, tuned
