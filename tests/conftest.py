"""Test set-up: 8 virtual CPU devices, XLA tuned to compile fast, shared helpers."""

import mmap
import os
import pathlib
from importlib.util import find_spec


def _xla_knows(flag: str) -> bool:
    """Whether the installed jaxlib's XLA has ``flag`` (XLA aborts on an unknown
    flag, and the flags below are newer than the oldest jax lens supports)."""
    spec = find_spec("jaxlib")
    if spec is None or spec.origin is None:
        return False
    for lib in pathlib.Path(spec.origin).parent.glob("*.so"):
        with open(lib, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data.find(flag.encode()) >= 0:
                    return True
    return False


# 8 virtual CPU devices; and XLA tuned for compiling hundreds of small programs that
# each run once (compiling is most of the suite's time). XLA's LLVM backend at -O0
# halves it; the classic elemental emitters instead of XLA:CPU's newer MLIR fusion
# emitters take another third off. XLA's own (HLO) passes still run and both
# emitters implement the same HLO semantics, so the programs compute the same values;
# only their machine code is less tuned.
_FLAGS = [
    "--xla_force_host_platform_device_count=8",
    "--xla_backend_optimization_level=0",
]
if _xla_knows("xla_cpu_use_fusion_emitters"):
    _FLAGS.append("--xla_cpu_use_fusion_emitters=false")
for _flag in _FLAGS:
    if _flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
        flags = os.environ.get("XLA_FLAGS", "") + " " + _flag
        os.environ["XLA_FLAGS"] = flags.strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# `%load_ext lens` turns on JAX's persistent compilation cache in a per-user folder;
# tests (and the notebook kernels nbval starts, which inherit this environment) use
# a folder of their own instead of the user's, removed when the process that made it
# exits (pytest-xdist's workers inherit the main process's).
if "LENS_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="lens-jax-cache-")
    os.environ["LENS_COMPILATION_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
