"""nbval runs the notebooks in notebooks/ as another CPU would.

(At the repository's root so that it reaches notebooks/ without putting tooling
there: JupyterLab's file browser on notebooks/ shows notebooks only.)

The stored outputs were saved on one machine (``tests/notebook_outputs.py``, XLA's default
code generation for that CPU). nbval's kernels here get XLA's CPU code generation
changed the way another machine would change it: an older instruction set (other
vector widths, so other reduction orders) and reassociating fast math (other
rounding in every sum and transcendental). Every stored output must still match: a
notebook may store shapes, names, counts and verdicts, but no digit that float
rounding decides. So one nbval run checks both that the notebooks run and that what
they store holds on other CPUs.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib.util
import os
from collections.abc import Iterator

import pytest

# lens modules that import an optional package at import, as Flax's do: their
# doctests are collected where it is installed (tests/test_metrics_tensorboard.py
# and tests/test_fresh_imports.py check what they say where it is not).
OPTIONAL_DEPENDENCIES = {"lens/metrics/tensorboard.py": "tensorflow"}
collect_ignore = [
    path
    for path, package in OPTIONAL_DEPENDENCIES.items()
    if importlib.util.find_spec(package) is None
]

OTHER_CPU = "--xla_cpu_max_isa=SSE4_2 --xla_cpu_enable_fast_math=true"
KERNEL_ENV = {
    "JAX_PLATFORMS": "cpu",
    # 8 CPU devices, as the notebooks were built with; no other flag of this
    # process (the test suite's compile-speed flags among them) reaches the kernel.
    "XLA_FLAGS": f"--xla_force_host_platform_device_count=8 {OTHER_CPU}",
}


@contextlib.contextmanager
def other_cpu_environment() -> Iterator[None]:
    """``KERNEL_ENV`` in ``os.environ`` (which a kernel started now inherits),
    then the environment as it was."""
    saved = {k: os.environ.get(k) for k in KERNEL_ENV}
    os.environ.update(KERNEL_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    # nbval starts a notebook's kernel in its first cell's setup; other tests'
    # fixtures (a JupyterLab server, say) keep this process's environment.
    if not type(item).__module__.startswith("nbval"):
        return (yield)
    with other_cpu_environment():
        return (yield)


# lens's classes and functions show the Flax path a facade serves them at
# (``__module__``; lens/_facades.py), where doctest would look for their examples:
# in the facade, whose globals hold only what was loaded by then, and whose file
# has no source for them. They keep their home (``__lens_home__``), so their
# examples run there, once, with the home's globals and line numbers.
_from_module = doctest.DocTestFinder._from_module


def _from_home(self, module, object):  # noqa: A002 - doctest's own signature
    # its own (a subclass defined elsewhere inherits the attribute, not the home)
    home = vars(object).get("__lens_home__") if hasattr(object, "__dict__") else None
    if home is not None and module is not None:
        return module.__name__ == home
    return _from_module(self, module, object)


doctest.DocTestFinder._from_module = _from_home
