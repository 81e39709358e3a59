"""Host memory on the CPU: keep XLA's per-step temporaries in glibc's heap.

XLA:CPU allocates one block for a compiled program's temporaries at every call and frees it
afterwards: about 160 MB for a digits64 training step at batch 64. glibc serves a block that large
with a fresh `mmap` (it is above the largest mmap threshold, 32 MB, and above what a thread's own
arena can hold, 64 MB) and returns it with `munmap`, so the kernel zero-fills all of its pages
again at every step. On the 2-core CPU a digits64 training step spent about a quarter of its time
in the kernel, at 115,000 page faults a second. With one arena, no mmap and no trimming the block
stays in the heap and is reused: at most steps no page faults, and the same arithmetic. (Now and
then the heap grows by one more block, when a step asks for its block before the runtime has freed
the last one; how often depends on the load: a few steps in a hundred here.)

Measured on the 2-core CPU, digits64 at batch 64, one process per setting, in turn. The training
loop (`python -m mone.train`, MoNE e_c=0.4, steps 50-300): 322 and 323 ms a step against 394 and
375 without, 0.82x and 0.86x. Steps on a fixed batch, waiting for each (medians of 60): 0.77,
0.82 and 0.74x for MoNE e_c=0.4, 0.65, 0.81 and 0.69x for the dense ViT; not waiting (means of
80): 0.79 and 0.84x, and 0.77 and 0.77x. The parameters after the steps were bit-identical.
tests/train/test_hostmem.py counts the page faults.
The price is resident memory: the heap keeps its high-water mark (the training queue's process held
3.8 GB instead of 2.8 GB), which glibc would otherwise hand back to the system.

glibc reads GLIBC_TUNABLES only when a program starts, so the training commands (and `python -m
mone.bench`, which times the models as they train) restart themselves with it
(`reexec_with_tunables`); the Makefile exports the same value for the notebooks and tests. A
GLIBC_TUNABLES already set, even empty, is left alone: `GLIBC_TUNABLES=` keeps glibc's defaults.
Other C libraries ignore the variable.
"""
import os
import sys

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
