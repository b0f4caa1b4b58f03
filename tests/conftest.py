"""Test set-up: 8 virtual CPU devices, and shared helpers."""

import os

_flag = "--xla_force_host_platform_device_count=8"
if _flag not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# `%load_ext lens` turns on JAX's persistent compilation cache in a per-user folder;
# tests (and the notebook kernels nbval starts, which inherit this environment) use
# a folder of their own instead of the user's.
if "LENS_COMPILATION_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["LENS_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(
        prefix="lens-jax-cache-"
    )
