"""``import flax`` resolving to lens, on request (:func:`alias_flax`).

A finder at the front of ``sys.meta_path`` answers every ``flax`` and ``flax.*``
import with the lens module at the same path (``flax.linen`` is ``lens.nn``,
``flax.linen.X`` is ``lens.nn.X``, otherwise ``flax.X`` is ``lens.X``). The module
objects are lens's own, so ``flax.nnx.Module is lens.nnx.Module``. Two are thin
facades instead: ``flax`` and ``flax.version`` read through to ``lens`` and
``lens.version`` but report ``__version__`` as the Flax release whose API lens
follows (``lens.version.flax_version``), since projects check it at import
(``flax.__version__ >= "0.10.6"``); ``lens.__version__`` stays lens's own. For the
same reason ``importlib.metadata.version("flax")`` answers that release. A flax module
that lens lacks raises ``ModuleNotFoundError`` naming the lens path looked for;
nothing falls back to a parent package or to the real flax.

This module imports nothing but the standard library and ``lens.version``, so ``import lens`` stays
cheap when ``LENS_AS_FLAX=1`` turns the alias on.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from lens.version import flax_version

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


class FlaxFacade(ModuleType):
    """``flax`` or ``flax.version`` under the alias: ``target``'s attributes, read
    through, with ``__version__`` set to the Flax release lens follows.

    Submodules imported as ``flax.X`` are set on the facade by the import system,
    as on any package; every other name is looked up on ``target`` (lazily loaded
    lens submodules included), so ``flax.nnx is lens.nnx``.
    """

    def __init__(self, name: str, target: ModuleType):
        super().__init__(name, target.__doc__)
        self.__dict__["_lens_target"] = target
        self.__dict__["__version__"] = flax_version
        for attr in ("__file__", "__path__"):
            if hasattr(target, attr):
                self.__dict__[attr] = getattr(target, attr)
        if hasattr(target, "flax_version"):
            self.__dict__["flax_version"] = flax_version

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_lens_target"], name)

    def __dir__(self) -> list[str]:
        own = {n for n in self.__dict__ if not n.startswith("_lens")}
        return sorted(own | set(dir(self.__dict__["_lens_target"])))


# The flax modules that are facades over lens's rather than lens's own objects.
_FACADES = ("flax", "flax.version")


class _FacadeLoader(importlib.abc.Loader):
    def __init__(self, facade: FlaxFacade):
        self._facade = facade

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self._facade

    def exec_module(self, module: ModuleType) -> None:
        pass


class _FlaxDistribution(importlib.metadata.Distribution):
    """What ``importlib.metadata`` reports for ``flax`` under the alias."""

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: flax\nVersion: {flax_version}\n"
        return None

    def locate_file(self, path: Any) -> Any:
        return None


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
        loader: importlib.abc.Loader = _LensModuleLoader(module)
        if fullname in _FACADES:
            loader = _FacadeLoader(FlaxFacade(fullname, module))
        return importlib.machinery.ModuleSpec(
            fullname,
            loader,
            origin=getattr(module, "__file__", None),
            is_package=is_package,
        )

    def find_distributions(
        self, context: Any = importlib.metadata.DistributionFinder.Context()
    ) -> Iterator[importlib.metadata.Distribution]:
        name = getattr(context, "name", None)
        if name is not None and name.lower().replace("_", "-") == "flax":
            yield _FlaxDistribution()


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
