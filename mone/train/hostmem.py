"""Host memory on the CPU: keep XLA's per-step temporaries in the heap, and serve its small
allocations from a thread-caching allocator where one is installed.

XLA:CPU allocates one block for a compiled program's temporaries at every call and frees it
afterwards (about 160 MB for a digits64 training step at batch 64). glibc serves a block that large
with a fresh `mmap` and returns it with `munmap`, so the kernel zero-fills its pages again at every
step: about a quarter of a step's time on the 2-core CPU. With one arena, no mmap and no trimming
(`TUNABLES`, measured there) the block stays in the heap and is reused: steps take 0.65x to 0.86x
as long, with bit-identical results; the price is resident memory (the heap keeps its high-water mark).

glibc reads GLIBC_TUNABLES only at start-up, so the training commands and `python -m mone.bench`
(which times models as they train) restart with it (`reexec_with_tunables`); the Makefile exports it
for the notebooks and tests. A GLIBC_TUNABLES already set, even empty (glibc's defaults), is left
alone; other C libraries ignore the variable.

Beyond that block, XLA:CPU's kernels (YNNPACK's and XNNPACK's scratch buffers among them) allocate
and free small buffers at every call of every operation; glibc's malloc takes 7-9% of a MoNE step
there (perf, one pinned core). Where gperftools' tcmalloc is installed (Debian's
libtcmalloc-minimal4), the restart also preloads it (`tcmalloc`), unless LD_PRELOAD is set already
or MONE_MALLOC=glibc asks for glibc. The allocator changes where buffers live, never what is computed
(tests/train/test_hostmem.py trains a run under both and compares every number); a run file records
which one trained it (`mone.results.code_provenance`'s allocator).
"""
import os
import sys

# The block is above glibc's largest mmap threshold (32 MB) and what a thread's arena holds (64 MB):
# without these settings a digits64 step on the 2-core CPU ran at 115,000 page faults a second.
# Measured there (digits64, batch 64, one process per setting in turn): the training loop (MoNE
# e_c=0.4, steps 50-300) at 322 and 323 ms a step against 394 and 375 without (0.82x, 0.86x); steps
# on a fixed batch, waited for (medians of 60), 0.77, 0.82, 0.74x for MoNE and 0.65, 0.81, 0.69x for
# the dense ViT, not waited for (means of 80) 0.79, 0.84x and 0.77, 0.77x; parameters bit-identical.
# The training queue's process held 3.8 GB instead of 2.8 GB. Now and then the heap grows by one more
# block, when a step asks for its block before the last is freed (a few steps in a hundred).
# tests/train/test_hostmem.py counts the page faults.
TUNABLES = "glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"


# Where Debian (and Fedora) put gperftools' tcmalloc; the first that exists is preloaded.
# Measured on one pinned core of the 2-core Xeon (training steps on real batches, medians, one process
# per allocator in turn): MoNE's digits64 step 1.12-1.24x faster, the temporal video MoNE's 1.2-1.27x,
# the dense ViT's 1.0-1.07x; jemalloc was slower than glibc with TUNABLES. The benchmark in
# results/bench/cpu-training-tcmalloc.json pairs them.
TCMALLOC_PATHS = ("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                  "/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
                  "/usr/lib64/libtcmalloc_minimal.so.4")
# tcmalloc reports every allocation above 1 GB on stderr; the profile's rendered training sets are
# that large, and the report says nothing a user needs.
_QUIET = {"TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": str(1 << 40)}


def tcmalloc() -> str | None:
  """The path of the installed tcmalloc library (`TCMALLOC_PATHS`), or None."""
  return next((p for p in TCMALLOC_PATHS if os.path.exists(p)), None)


def environment(env: dict) -> dict:
  """The environment a training command runs in, from `env`: GLIBC_TUNABLES=TUNABLES unless set
  (even empty), and tcmalloc preloaded where installed, unless LD_PRELOAD is set or
  MONE_MALLOC=glibc. Any other value of MONE_MALLOC is an error."""
  choice = env.get("MONE_MALLOC", "tcmalloc")
  if choice not in ("tcmalloc", "glibc"):
    raise ValueError(f"MONE_MALLOC must be 'tcmalloc' or 'glibc', got {choice!r}")
  out = dict(env)
  out.setdefault("GLIBC_TUNABLES", TUNABLES)
  lib = tcmalloc()
  if choice == "tcmalloc" and lib and "LD_PRELOAD" not in env:
    out.update(LD_PRELOAD=lib, **{k: v for k, v in _QUIET.items() if k not in env})
  return out


def reexec_with_tunables() -> None:
  """Restarts this Python program, same interpreter and arguments, in `environment(os.environ)`,
  unless that is the environment it has (then it returns; so does the restarted program) or this is
  not Linux. Call it first thing in a command's `if __name__ == "__main__":` block, never from code
  a test or notebook imports: it replaces the running process."""
  if not sys.platform.startswith("linux"):
    return
  try:
    env = environment(dict(os.environ))
  except ValueError as e:
    sys.exit(f"error: {e}")
  if env == dict(os.environ):
    return
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)

