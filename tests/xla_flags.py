"""The XLA flags every test process compiles with: conftest.py, the notebook kernels and the
training processes the tests start. Compiling is most of the suite's time on a fresh clone, and the
tests check behaviour, never speed (speed is measured by `python -m mone.bench` with XLA's defaults).

- The lowest backend optimisation level: LLVM optimises less, about 1.5x faster to compile.
- XLA:CPU's loop emitters instead of its newer fusion emitters: a tiny model's training step
  compiles in 2.6 s instead of 5.6 s at that level.

Both change the machine code, not XLA's graph, and the last bits of some results with it: a test
that compares two computations compares them under the same flags, and no test compares a number
against one computed with other flags except through a tolerance or an argmax. XLA aborts on a flag
it does not know: these are the pinned jaxlib's (requirements/lock.txt), checked by every test run.
"""
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"


def with_devices(n: int) -> str:
  """FAST_COMPILE with n virtual CPU devices: the data-parallel tests build a real mesh on them."""
  return f"--xla_force_host_platform_device_count={n} {FAST_COMPILE}"
