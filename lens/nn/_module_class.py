"""How a ``Module`` subclass is made (``Module.__init_subclass__``'s steps): a
dataclass with Flax's ``parent`` and ``name`` fields, at most one ``@compact``
method, its ``@compact_name_scope`` methods found and its methods wrapped.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

from lens import errors
from lens.nn import kw_only_dataclasses
from lens.nn._module_support import (
    _unspecified_parent,
    _wrap_hash,
    wrap_descriptor_once,
    wrap_method_once,
)
from lens.nn._module_tree import _get_local_descriptor_names, _get_local_method_names


def make_dataclass(cls: type, kw_only: bool, module_setattr: Any = None) -> None:
    """Makes ``cls`` a dataclass with Flax's keyword-only ``parent`` and ``name``.

    With ``module_setattr`` (``Module.__setattr__``), the ``__init__`` then stores
    the fields as :func:`direct_init` says.
    """
    own_init = "__init__" in cls.__dict__
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    if "parent" in annotations or annotations.get("name", str) not in (
        "str",
        str,
        typing.Optional[str],  # noqa: UP045 - the spelling users write
        "str | None",
        str | None,
    ):
        raise errors.ReservedModuleAttributeError(annotations)
    # Fields not set by the constructor are only set in setup: keep them out
    # of comparisons, hashes and reprs (they do not exist before setup).
    for name in annotations:
        meta = getattr(cls, name, None)
        if isinstance(meta, dataclasses.Field) and not meta.init:
            meta.compare = False
            meta.hash = False
            meta.repr = False
    extra_fields = [
        (
            "parent",
            Any,
            kw_only_dataclasses.field(
                repr=False, default=_unspecified_parent, kw_only=True
            ),
        ),
        (
            "name",
            typing.Optional[str],  # noqa: UP045 - as Flax declares it
            kw_only_dataclasses.field(default=None, kw_only=True),
        ),
    ]
    if kw_only:
        for name, annotation, default in extra_fields:
            setattr(cls, name, default)
            cls.__annotations__[name] = annotation
        dataclasses.dataclass(  # type: ignore[call-overload]
            cls,
            unsafe_hash="__hash__" not in cls.__dict__,
            repr=False,
            kw_only=True,
        )
    else:
        kw_only_dataclasses.dataclass(
            cls,
            unsafe_hash="__hash__" not in cls.__dict__,
            repr=False,
            extra_fields=extra_fields,
        )
    cls.__hash__ = _wrap_hash(cls.__hash__)  # type: ignore[method-assign]
    if module_setattr is not None and not own_init:
        direct_init(cls, module_setattr)


def direct_init(cls: type, module_setattr: Any) -> None:
    """Gives ``cls`` the ``__init__`` dataclasses writes for a frozen dataclass:
    the same signature and body, storing each field with ``object.__setattr__``.

    The generated ``__init__`` of a (non-frozen) dataclass assigns ``self.x = x``,
    a call of ``Module.__setattr__`` per field; during ``__init__`` the module has
    no state yet and that call stores the value with ``object.__setattr__`` (in
    strict mode after a check that returns at once inside ``__init__``). Kept as
    dataclasses made it: a class with its own ``__setattr__``, ``InitVar`` or
    ``ClassVar`` pseudo-fields or a field named ``self``, or where the new
    signature differs from the old one in any way.
    """
    if cls.__setattr__ is not module_setattr:  # type: ignore[comparison-overlap]
        return
    old = cls.__dict__.get("__init__")
    all_fields = cls.__dict__.get("__dataclass_fields__", {})
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if old is None or len(fields) != len(all_fields) or "self" in all_fields:
        return
    specs = [
        (
            f.name,
            f.type,
            dataclasses.field(  # type: ignore[call-overload]
                default=f.default,
                default_factory=f.default_factory,
                init=f.init,
                repr=False,
                hash=None,
                compare=False,
                metadata=f.metadata,
                kw_only=f.kw_only,
            ),
        )
        for f in fields
    ]
    try:
        shadow = dataclasses.make_dataclass(
            cls.__name__,
            specs,
            namespace={
                "__module__": cls.__module__,
                "__post_init__": _post_init_marker,
            },
            repr=False,
            eq=False,
            frozen=True,
            match_args=False,
        )
        new = shadow.__dict__["__init__"]
        new.__qualname__ = old.__qualname__
        new.__module__ = old.__module__
        new.__annotations__ = dict(old.__annotations__)
        if inspect.signature(new) != inspect.signature(old):
            return
    except Exception:  # noqa: BLE001 - keep the __init__ dataclasses made
        return
    type.__setattr__(cls, "__init__", new)


def _post_init_marker(self: Any) -> None:
    """Tells dataclasses that the shadow class has a ``__post_init__`` (the
    generated ``__init__`` calls ``self.__post_init__()``, the module's own)."""


def check_single_compact_owner(parent: Any, name: str) -> None:
    """Two ``@compact`` methods of one module may not make the same auto-named
    submodule (``Dense_0``): each top-level call restarts the names, so the
    second method would silently reuse the first one's submodule and its
    parameters. Flax accepts two compact methods (it documents
    MultipleMethodsCompactError but never raises it); lens accepts them too and
    raises it when that sharing would happen."""
    state = parent._state
    method = state.compact_method
    if method is None:
        return
    owner = state.autoname_owner.setdefault(name, method)
    if owner != method:
        raise errors.MultipleMethodsCompactError(
            f"{type(parent).__name__}.{method} makes the submodule {name!r} that "
            f"{type(parent).__name__}.{owner} made: both are @compact, so the "
            f"auto name would share it (and its parameters) between them.\nName "
            "the submodules (nn.Dense(2, name='encode_dense')), define them in "
            "setup(), or keep @compact on one method."
        )


def compact_name_scope_methods(cls: type) -> tuple[str, ...]:
    """The names of ``cls``'s ``@compact_name_scope`` methods."""
    return tuple(
        name
        for name in dir(cls)
        if hasattr(getattr(cls, name, None), "compact_name_scope")
    )


def wrap_module_attributes(cls: type) -> None:
    """Wraps ``cls``'s own methods and descriptors so calls run in module context."""
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    exclude = fields + [
        "__eq__",
        "__repr__",
        "__init__",
        "__hash__",
        "__post_init__",
    ]
    for key in _get_local_method_names(cls, exclude=exclude):
        method = getattr(cls, key)
        if hasattr(method, "nowrap"):
            continue
        setattr(cls, key, wrap_method_once(method))
    for key in _get_local_descriptor_names(cls, fields + ["parent", "__dict__"]):
        descriptor = cls.__dict__[key]
        if hasattr(descriptor, "nowrap"):
            continue
        setattr(cls, key, wrap_descriptor_once(descriptor))
