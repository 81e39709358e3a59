import os

# Tests run on the CPU; 8 virtual devices let the data-parallel tests build a real mesh.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
