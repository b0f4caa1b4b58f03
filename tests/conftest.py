"""Test set-up: 8 virtual CPU devices, and shared helpers."""

import os

# 8 virtual CPU devices; and XLA's LLVM backend at -O0: compiling hundreds of small
# programs that each run once is most of the suite's time, and -O0 halves it. XLA's
# own (HLO) passes still run, so the programs compute the same values; only their
# machine code is less tuned.
for _flag in (
    "--xla_force_host_platform_device_count=8",
    "--xla_backend_optimization_level=0",
):
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        flags = os.environ.get("XLA_FLAGS", "") + " " + _flag
        os.environ["XLA_FLAGS"] = flags.strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# `%load_ext lens` turns on JAX's persistent compilation cache in a per-user folder;
# tests (and the notebook kernels nbval starts, which inherit this environment) use
# a folder of their own instead of the user's.
if "LENS_COMPILATION_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["LENS_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(
        prefix="lens-jax-cache-"
    )
