"""Every public lens module imports as the first lens import of a fresh process.

(``import lens.typing`` alone, which is what ``from flax.typing import Array``
becomes under ``lens.alias_flax``, used to fail with a circular import.) One
interpreter imports JAX, NumPy and the other third-party modules lens's modules
import (``THIRD_PARTY``: only to save each child their import), then forks a child
per module, so each child starts with no lens module loaded.
"""

import importlib.util
import os
import pathlib

from benchmarks._fork import forked
from conftest import OPTIONAL_DEPENDENCIES

ROOT = pathlib.Path(__file__).parent.parent / "lens"


def public_modules() -> list[str]:
    """lens's modules with no ``_`` path component."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "labextension" in parts:
            continue
        out.append(".".join(parts))
    return out


THIRD_PARTY = (
    "jax.numpy numpy optax msgpack absl.logging jax.extend jax.flatten_util "
    "jax.experimental.shard_map jax.experimental.layout jax.scipy.special "
    "jax.scipy.stats"
)
"""What importing every public lens module loads besides lens (a missing one is
only imported by its child)."""

# The forking parent (benchmarks/_fork.py) loads only third-party modules; each child
# imports one lens module and reports its traceback if that fails.
PREAMBLE = f"""
import importlib, traceback
import jax  # third-party only: no lens module is loaded
for name in {THIRD_PARTY!r}.split():
    try:
        importlib.import_module(name)
    except ImportError:
        pass


def job(name):
    try:
        __import__(name)
    except BaseException:
        return name + ":\\n" + traceback.format_exc(limit=-3)
"""


def test_public_modules_are_found():
    mods = public_modules()
    assert {"lens", "lens.typing", "lens.training.dynamic_scale", "lens.nn"} <= set(
        mods
    )


def test_every_public_module_imports_first_in_a_fresh_process():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("LENS_AS_FLAX", None)
    modules = public_modules()
    failed = []
    for name, error in zip(modules, forked(PREAMBLE, modules, env, 600), strict=True):
        path = name.replace(".", "/") + ".py"
        package = OPTIONAL_DEPENDENCIES.get(path)
        if package and importlib.util.find_spec(package) is None:
            # without its optional package, the import says what to install
            if not (
                error and "ModuleNotFoundError" in error and "pip install" in error
            ):
                failed.append(f"{name} without {package}:\n{error}")
        elif error:
            failed.append(error)
    assert not failed, "failed as a first import:\n" + "\n".join(failed)
