"""Host memory on the CPU: keep XLA's per-step temporaries in glibc's heap.

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


def reexec_with_tunables() -> None:
  """Restarts this Python program, same interpreter and arguments, with GLIBC_TUNABLES=TUNABLES,
  unless GLIBC_TUNABLES is set (then it returns; so does the restarted program) or this is not
  Linux. Call it first thing in a command's `if __name__ == "__main__":` block, never from code a
  test or notebook imports: it replaces the running process."""
  if not sys.platform.startswith("linux") or "GLIBC_TUNABLES" in os.environ:
    return
  sys.stdout.flush()
  sys.stderr.flush()
  os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "GLIBC_TUNABLES": TUNABLES})
