"""Test set-up: 8 virtual CPU devices, XLA tuned to compile fast, shared helpers."""

import atexit
import os
import subprocess
import sys

import pytest


def _xla_knows(flag: str) -> bool:
    """Whether the installed jaxlib's XLA takes ``flag``. XLA aborts the process
    on an unknown flag, and the flags below are newer than the oldest jax lens
    supports, or dropped by newer ones (jaxlib 0.11.2 aborts on
    xla_cpu_use_fusion_emitters, though its binary still holds the name). So a
    child process tries it, once: the answer is kept in the environment, which
    pytest-xdist's workers and nbval's kernels inherit."""
    key = "LENS_TEST_XLA_KNOWS_" + flag.split("=")[0].strip("-").upper()
    if key not in os.environ:
        tried = subprocess.run(
            [
                sys.executable,
                "-c",
                "import jax; jax.numpy.zeros(1).block_until_ready()",
            ],
            env={**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"},
            capture_output=True,
            timeout=300,
        )
        os.environ[key] = "1" if tried.returncode == 0 else "0"
    return os.environ[key] == "1"


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
if _xla_knows("--xla_cpu_use_fusion_emitters=false"):
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


# pytest-xdist (`make test` runs `-n 2 --dist loadfile`): each test file is one unit of
# work, and xdist starts the files with the most tests first, so the slowest files
# (one long test each: a benchmark run, a notebook re-run, a browser) started last and
# one worker idled while the other finished them. Here the files start slowest first:
# by the seconds each took in the last run (kept in pytest's cache), else by the
# estimates below, else by their number of tests. The live-view and trust browser
# tests share the extension test's JupyterLab server (tests/e2e/conftest.py), so the
# three run as one unit on one worker.
SHARED_UNITS = {
    "tests/e2e/test_live_browser.py": "tests/e2e/test_extension_browser.py",
    "tests/e2e/test_trust_browser.py": "tests/e2e/test_extension_browser.py",
    "tests/e2e/test_open_clean_browser.py": "tests/e2e/test_extension_browser.py",
    "tests/e2e/test_tables_browser.py": "tests/e2e/test_extension_browser.py",
}
SECONDS_ESTIMATE = {  # seconds in a fresh clone's `make test` on a 2-core machine
    "tests/test_benchmarks.py": 72,
    "tests/e2e/test_extension_browser.py": 63,  # with the live and trust tests
    "notebooks/06_nnx.ipynb": 21,
    "tests/nnx/test_flax_nnx_layers.py": 21,
    "tests/nn/test_flax_zoo_transforms.py": 17,
    "notebooks/03_scan_and_vmap_axes.ipynb": 13,
    "tests/test_multiprocess.py": 10,
    "tests/nn/test_flax_zoo_recurrent.py": 8,
    "tests/nn/test_flax_zoo_layers.py": 7,
    "tests/test_fresh_imports.py": 7,
    "tests/nn/test_flax_zoo_attention_conv.py": 7,
    "tests/nnx/test_transforms.py": 6,
    "tests/kernels/test_fp8.py": 6,
    "tests/display/test_live.py": 5,
}

_CACHE_KEY = "lens/seconds_per_unit"
_unit_seconds: dict[str, float] = {}


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(path, path)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    internals = ("_assign_work_unit", "_pending_of", "_reschedule", "_split_scope")
    if not all(hasattr(LoadFileScheduling, name) for name in internals):
        return None  # another xdist: its own loadfile order (slower, same tests)
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    known = {**SECONDS_ESTIMATE, **(cache.get(_CACHE_KEY, {}) if cache else {})}

    class SlowestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_sorted", False):  # the first call: all units known
                self._sorted = True
                self.cost = {
                    u: known.get(u, 0.3 * len(t)) for u, t in self.workqueue.items()
                }
                units = sorted(self.workqueue.items(), key=lambda kv: -self.cost[kv[0]])
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            # xdist sends a worker its next file while two of its tests are left,
            # which ties a second file to a worker busy with a long test; send it
            # when one is left (a worker waits with its last test until it knows
            # what comes next).
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
            elif self._pending_of(self.assigned_work[node]) <= 1:
                # A worker about to run a long last test gets the cheapest file next.
                left = [
                    u
                    for u, t in self.assigned_work[node].items()
                    if not all(t.values())
                ]
                if left and self.cost[left[0]] >= 10:
                    self.workqueue.move_to_end(
                        next(reversed(self.workqueue)), last=False
                    )
                self._assign_work_unit(node)

    return SlowestFirst(config, log)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    unit = _unit(report.nodeid)
    _unit_seconds[unit] = _unit_seconds.get(unit, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    cache = getattr(config, "cache", None)
    if hasattr(config, "workerinput") or cache is None or not _unit_seconds:
        return  # an xdist worker (the main process records), or no cache
    cache.set(_CACHE_KEY, {**cache.get(_CACHE_KEY, {}), **_unit_seconds})


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def pytest_unconfigure(config: pytest.Config) -> None:
    # A pytest-xdist worker has sent every result by now, and its process only exits
    # once the controller has ended the session. Ending it normally takes seconds
    # (JAX frees each of the thousands of programs the worker compiled, then the
    # interpreter frees its modules) while the controller waits for it; the OS frees
    # all of it at once. Registered last, this handler runs first. Not while
    # coverage is measuring the worker: it writes its data at exit.
    if not hasattr(config, "workerinput"):
        return
    coverage = sys.modules.get("coverage")
    if coverage is not None and coverage.Coverage.current() is not None:
        return
    atexit.register(_exit_now)
