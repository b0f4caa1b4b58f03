"""What a package's namespace holds right after one ``import`` in a fresh interpreter.

``python parity/fresh_attributes.py [--alias] flax.a flax.b ...`` prints, as JSON,
``{package: {public attribute: module name or null}}`` for every ``flax`` package
loaded by any of the imports, each import made in a process of its own: a
submodule that a package's import loads becomes an attribute of its package (and
``import flax.nnx`` makes ``train_state`` an attribute of ``flax.training``), and
the union over the imports is what a user can reach as ``flax.pkg.name``. What an
import binds on the packages above its own (``import flax.a.b`` binds ``b`` on
``flax.a``) is left out: it holds after that import in any library.

With ``--alias`` the imports go through ``lens.alias_flax()``, so the packages
are lens's. Each import runs in a child forked from one process that has already
imported the heavy third-party libraries (JAX, optax) and no ``flax`` or ``lens``
module, so each child starts from a fresh flax state at the cost of flax's own
import. Standard library only: :mod:`parity.surface` runs this file as a script.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import warnings
from types import ModuleType

# Third-party libraries flax and lens import: loaded once, before the forks.
_WARM = ("jax", "jax.numpy", "numpy", "optax", "msgpack")


def _attributes(package: ModuleType) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, value in list(vars(package).items()):
        if not name.startswith("_"):
            module_name = value.__name__ if isinstance(value, ModuleType) else None
            out[name] = module_name
    return out


def _child(package: str, alias: bool) -> dict[str, dict[str, str | None]]:
    warnings.simplefilter("ignore")
    if alias:
        importlib.import_module("lens").alias_flax()
    importlib.import_module(package)
    found = {
        name: _attributes(module)
        for name, module in list(sys.modules.items())
        if (name == "flax" or name.startswith("flax."))
        and isinstance(module, ModuleType)
        and hasattr(module, "__path__")
    }
    # `import flax.a.b` itself binds b on flax.a and a on flax: that says nothing
    # of what the packages' own imports bind
    parts = package.split(".")
    for depth in range(1, len(parts)):
        found.get(".".join(parts[:depth]), {}).pop(parts[depth], None)
    return found


def _in_fork(package: str, alias: bool) -> dict[str, dict[str, str | None]]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: import, report, exit without cleanup
        os.close(read)
        try:
            result = json.dumps(_child(package, alias))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            result = json.dumps({"__error__": f"{type(e).__name__}: {e}"})
        with os.fdopen(write, "w") as f:
            f.write(result)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    found = json.loads(text or "{}")
    if "__error__" in found:
        raise ImportError(f"import {package}: {found['__error__']}")
    return found


def fresh_attributes(
    packages: list[str], alias: bool
) -> dict[str, dict[str, str | None]]:
    """``{package: {name: module name or None}}``, the union over fresh imports."""
    warnings.simplefilter("ignore")
    for name in _WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    union: dict[str, dict[str, str | None]] = {}
    for package in packages:
        for name, attrs in _in_fork(package, alias).items():
            union.setdefault(name, {}).update(attrs)
    return union


if __name__ == "__main__":
    args = sys.argv[1:]
    alias = "--alias" in args
    found = fresh_attributes([a for a in args if a != "--alias"], alias)
    print(json.dumps(found, sort_keys=True))
