import os
from pathlib import Path

import pytest
from xla_flags import with_devices

# Tests run on the CPU; 8 virtual devices let the data-parallel tests build a real mesh. XLA
# compiles for speed of compiling, not of the code (xla_flags.py says why).
os.environ.setdefault("XLA_FLAGS", with_devices(8))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA's persistent compilation cache, shared by every test, the subprocesses they start and the
# notebook kernels (notebook_util): many tests compile the same small programs (every restart in
# the SIGKILL test compiles the run again: 141 -> 86 CPU-seconds with the cache, cold). Kept
# between local runs in .cache/; a fresh clone starts it empty. Only programs that took 0.2 s or more
# to compile: an operation run eagerly (thousands in the suite) compiles in about 2 ms and took 13-15
# ms to read from the cache or write to it (make test-fast: 373 -> 363 CPU-seconds, 208 -> 203 s).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(__file__).resolve().parent.parent / ".cache" / "jax_compilation"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")


@pytest.fixture(scope="module")
def smoke_env(tmp_path_factory):
  """A results and cache folder shared by the notebooks of one test file, with the environment
  their kernels inherit (notebook_util.smoke_environment)."""
  from notebook_util import smoke_environment
  root = tmp_path_factory.mktemp("notebooks")
  with pytest.MonkeyPatch.context() as mp:
    smoke_environment(root, mp)
    yield root


def pytest_collection_modifyitems(config, items):
  """The notebook smoke files first: each is a chain of several minutes, and pytest-xdist's
  loadfile hands files out in collection order, so starting them last left one worker running
  a notebook chain alone at the end of the suite."""
  first = ("test_notebooks.py", "test_notebooks_video.py")
  items.sort(key=lambda item: item.path.name not in first)  # stable: the rest keep their order
