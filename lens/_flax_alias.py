"""``import flax`` resolving to lens, on request (:func:`alias_flax`).

A finder at the front of ``sys.meta_path`` answers every ``flax`` and ``flax.*``
import with the lens module at the same path (``flax.linen`` is ``lens.nn``,
``flax.linen.X`` is ``lens.nn.X``, otherwise ``flax.X`` is ``lens.X``). The module
objects are lens's own, so ``flax.nnx.Module is lens.nnx.Module``. A flax module
that lens lacks raises ``ModuleNotFoundError`` naming the lens path looked for;
nothing falls back to a parent package or to the real flax.

This module imports nothing but the standard library, so ``import lens`` stays
cheap when ``LENS_AS_FLAX=1`` turns the alias on.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType

ENV_VAR = "LENS_AS_FLAX"


def lens_module_name(flax_name: str) -> str:
    """The lens module that stands for the flax module ``flax_name``.

    Example:
        >>> lens_module_name("flax.linen.linear")
        'lens.nn.linear'
        >>> lens_module_name("flax.nnx.nn.linear")
        'lens.nnx.nn.linear'
        >>> lens_module_name("flax")
        'lens'
    """
    head, _, rest = flax_name.partition(".")
    if head != "flax":
        raise ValueError(f"{flax_name!r} is not a flax module name")
    if rest == "linen" or rest.startswith("linen."):
        rest = "nn" + rest[len("linen") :]
    return f"lens.{rest}" if rest else "lens"


def _is_flax_name(name: str) -> bool:
    return name == "flax" or name.startswith("flax.")


class _LensModuleLoader(importlib.abc.Loader):
    """Hands back an already imported lens module as the flax module asked for.

    The import system writes the flax spec onto the module it gets; ``exec_module``
    puts the lens module's own spec back, so lens's relative imports, ``reload``
    and pickling keep seeing lens's names.
    """

    def __init__(self, module: ModuleType):
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


class LensAsFlaxFinder(importlib.abc.MetaPathFinder):
    """The ``sys.meta_path`` entry that :func:`alias_flax` installs."""

    def find_spec(
        self,
        fullname: str,
        path: object = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not _is_flax_name(fullname):
            return None
        lens_name = lens_module_name(fullname)
        try:
            module = importlib.import_module(lens_name)
        except ModuleNotFoundError as e:
            if e.name is not None and e.name != lens_name:
                if not lens_name.startswith(e.name + "."):
                    raise  # a module that lens itself imports is missing
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: flax resolves to lens "
                f"(lens.alias_flax), and lens has no module {lens_name!r}.",
                name=fullname,
            ) from None
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(
            fullname,
            _LensModuleLoader(module),
            origin=getattr(module, "__file__", None),
            is_package=is_package,
        )


def _real_flax_modules() -> list[str]:
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if _is_flax_name(name)
        and module is not None
        and not (getattr(module, "__name__", "") or "").startswith("lens")
    )


def alias_flax() -> None:
    """Makes ``import flax`` (and every ``flax.*``) give lens's modules, from now on.

    ``flax.linen`` is ``lens.nn``, ``flax.linen.X`` is ``lens.nn.X`` and every other
    ``flax.X`` is ``lens.X``: the same module objects, so libraries that import flax
    themselves (quantization, LoRA, trainers) work on lens models. A flax module lens
    lacks raises ``ModuleNotFoundError`` naming the lens path. Calling it again does
    nothing. Setting the environment variable ``LENS_AS_FLAX=1`` before ``import
    lens`` does the same.

    Raises:
        ImportError: the real flax is already imported in this process (call this
            before anything imports flax).

    Example:
        >>> import lens
        >>> lens.alias_flax()  # doctest: +SKIP
        >>> from flax import nnx  # doctest: +SKIP
        >>> nnx is lens.nnx  # doctest: +SKIP
        True
    """
    if any(isinstance(f, LensAsFlaxFinder) for f in sys.meta_path):
        return
    real = _real_flax_modules()
    if real:
        where = getattr(sys.modules[real[0]], "__file__", None)
        raise ImportError(
            f"flax is already imported in this process ({real[0]} from {where}), "
            "so it cannot resolve to lens any more. Call lens.alias_flax() (or set "
            f"{ENV_VAR}=1 and import lens) before anything imports flax."
        )
    sys.meta_path.insert(0, LensAsFlaxFinder())


def alias_flax_if_requested() -> None:
    """Calls :func:`alias_flax` when ``LENS_AS_FLAX`` is set to a true value."""
    if os.environ.get(ENV_VAR, "").strip().lower() in {"1", "true", "yes", "on"}:
        alias_flax()
