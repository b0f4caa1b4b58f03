"""How a ``Module`` subclass is made (``Module.__init_subclass__``'s steps): a
dataclass with Flax's ``parent`` and ``name`` fields, at most one ``@compact``
method, its ``@compact_name_scope`` methods found and its methods wrapped.
"""

from __future__ import annotations

import dataclasses
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


def make_dataclass(cls: type, kw_only: bool) -> None:
    """Makes ``cls`` a dataclass with Flax's keyword-only ``parent`` and ``name``."""
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
