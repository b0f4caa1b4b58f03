"""One run of one of the flax repository's benchmark scripts, in this process.

``python benchmarks/_flax_repo_child.py LIB KIND SCRIPT [ARG ...]`` (what
benchmarks/flax_repo.py starts, a fresh interpreter each time): ``LIB`` is ``flax``
or ``lens`` (then ``lens.alias_flax()`` runs first, so the script's ``import flax``
gives lens). ``flax.examples`` and ``flax.benchmarks`` resolve to the copies in
benchmarks/flax_repo/ (the Flax repository's own layout; neither is in a flax
wheel, nor in lens). The script itself is not changed:

- ``KIND=main``: the script runs as ``__main__`` with ``ARG``s as its flags; its
  printed output is passed through for the parent to parse.
- ``KIND=tracing``: the script is imported (not run as ``__main__``), with a
  stand-in ``google_benchmark`` module whose ``register`` collects the benchmark
  functions (``test_flax_<x>_trace`` and ``..._lower``); each is then called with
  a ``State`` that times each iteration as google_benchmark would, less the time
  between ``pause_timing`` and ``resume_timing`` (tracing_benchmark.py's
  ``jax.clear_caches()``). ``ARG``s: the iterations of each. The last line printed
  is JSON: ``{benchmark name: [seconds per iteration, ...]}``.

This file imports neither flax nor lens before ``LIB`` is chosen.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import pathlib
import runpy
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().with_name("flax_repo")
SUBPACKAGES = ("examples", "benchmarks")  # flax.examples, flax.benchmarks


class RepoFinder(importlib.abc.MetaPathFinder):
    """``flax.examples[.*]`` and ``flax.benchmarks[.*]`` from ROOT's folders, ahead
    of lens's alias finder (which would look for ``lens.examples``)."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if len(parts) < 2 or parts[0] != "flax" or parts[1] not in SUBPACKAGES:
            return None
        if len(parts) == 2:
            path = [str(ROOT)]
        return importlib.machinery.PathFinder.find_spec(fullname, path)


class State:
    """google_benchmark's ``State``, as far as tracing_benchmark.py uses it: truth
    starts the next timed iteration (``number`` of them); paused time is left out."""

    def __init__(self, number: int):
        self.left = number
        self.times: list[float] = []
        self._t0: float | None = None
        self._paused = 0.0

    def _stop(self) -> None:
        if self._t0 is not None:
            self.times.append(time.perf_counter() - self._t0 - self._paused)
            self._t0 = None

    def __bool__(self) -> bool:
        self._stop()
        if self.left == 0:
            return False
        self.left -= 1
        self._paused = 0.0
        self._t0 = time.perf_counter()
        return True

    def pause_timing(self) -> None:
        self._pause_t0 = time.perf_counter()

    def resume_timing(self) -> None:
        self._paused += time.perf_counter() - self._pause_t0


def stand_in_google_benchmark() -> list:
    registered: list = []
    gb = types.ModuleType("google_benchmark")
    gb.kMillisecond = "ms"

    def register(fn):
        registered.append(fn)
        return fn

    gb.register = register
    gb.option = types.SimpleNamespace(unit=lambda unit: lambda fn: fn)
    gb.main = lambda: None
    sys.modules["google_benchmark"] = gb
    return registered


def main(argv: list[str]) -> None:
    lib, kind, script, *args = argv
    if lib == "lens":
        import lens

        lens.alias_flax()
    sys.meta_path.insert(0, RepoFinder())
    path = str(ROOT / script)
    if kind == "main":
        sys.argv = [path, *args]
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:  # absl's app.run exits when main returns
            if e.code not in (None, 0):
                raise
        return
    registered = stand_in_google_benchmark()
    from absl import flags

    # What tracing_benchmark.run_benchmarks does before google_benchmark.main.
    number = int(args[0]) if args else 5
    runpy.run_path(path, run_name="flax_repo_benchmark")
    flags.FLAGS([path], known_only=True)
    flags.FLAGS.mark_as_parsed()
    out = {}
    for fn in registered:
        state = State(number)
        fn(state)
        out[fn.__name__] = state.times
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
