"""Linen collection names of Variable types (flax.nnx's registry):
``variable_type_from_name("params")`` is ``Param`` and back. ``lens.nnx.bridge``
uses it to carry Linen collections as Variables.
"""

from __future__ import annotations

import functools
from typing import Any

from lens._facades import show_at_flax_paths

_MISSING: Any = object()
Variable = Any  # this module sits below variablelib (which sets ``base``'s default)

# name -> Variable type; module-level because it is a registry (types are
# registered once, as classes are made), not per-call context.
VariableTypeCache: dict[str, type[Variable]] = {}


def register_variable_name(
    name: str, typ: Any = _MISSING, *, overwrite: bool = False
) -> Any:
    """Links a Linen collection name to a Variable type (a decorator without ``typ``)."""
    if typ is _MISSING:
        return functools.partial(register_variable_name, name, overwrite=overwrite)
    if not overwrite and name in VariableTypeCache:
        raise ValueError(
            f"Name {name} already mapped to type {VariableTypeCache[name]}. To overwrite, "
            "call register_variable_name() with `overwrite=True`."
        )
    VariableTypeCache[name] = typ
    return typ


def variable_type_from_name(
    name: str,
    /,
    *,
    base: type[Variable] | None = None,
    allow_register: bool = False,
) -> type[Variable]:
    """The Variable type of a Linen collection name (made, a subclass of ``base``,
    when ``allow_register``). ``base``'s default is ``Variable``: variablelib sets
    it once Variable exists (this module cannot import variablelib)."""
    if name not in VariableTypeCache:
        if not allow_register:
            raise ValueError(
                f"Name {name} is not registered in the registry. To register a new "
                "name, use register_variable_name() or set allow_register=True."
            )
        if base is None:
            raise TypeError(
                "variable_type_from_name: base must be a Variable type, got None."
            )
        # made here, shown where Flax makes it: flax.nnx.variablelib.<name>
        VariableTypeCache[name] = type(
            name, (base,), {"__module__": "lens.nnx.variablelib"}
        )
    return VariableTypeCache[name]


def variable_name_from_type(
    typ: type[Variable], /, *, allow_register: bool = False
) -> str:
    """The Linen collection name of a Variable type (the inverse of the above)."""
    for name, t in VariableTypeCache.items():
        if t is typ:
            return name
    if not allow_register:
        raise ValueError(
            f"Type {typ} is not registered in the registry. To register a new type, "
            "use register_variable_name() or set allow_register=True."
        )
    name = typ.__name__
    if name in VariableTypeCache:
        raise ValueError(
            f"Name {name} is already registered in the registry as "
            f"{VariableTypeCache[name]}. It cannot be linked with this type {typ}."
        )
    register_variable_name(name, typ)
    return name


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
