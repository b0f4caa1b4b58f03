"""Dataclasses whose keyword-only fields come last (``lens.nn.kw_only_dataclasses``).

Modules are dataclasses whose ``parent`` and ``name`` fields come after every field
a subclass adds, even when the base class gave them defaults. Fields marked
``kw_only`` are moved to the end of the field list and made keyword-only in
``__init__``, so a subclass may add required fields after a base class's defaults.
(Flax enforces the same with a wrapper whose ``inspect.signature`` shows them as
positional; lens's signature says what a call may do: ``*, name=''``.)

Example:
    >>> @dataclass
    ... class Parent:
    ...     name: str = field(default="", kw_only=True)
    >>> @dataclass
    ... class Child(Parent):
    ...     size: float
    >>> [f.name for f in dataclasses.fields(Child)]
    ['size', 'name']
"""

from __future__ import annotations

import dataclasses
import typing
from types import MappingProxyType
from typing import Any, TypeVar

M = TypeVar("M")
FieldName = str
Annotation = Any
Default = Any


class _KwOnlyType:
    """The ``KW_ONLY`` marker type."""

    def __repr__(self) -> str:
        return "KW_ONLY"


KW_ONLY = _KwOnlyType()
"""Annotate a pseudo-field with it: the fields after it are keyword-only."""


def field(
    *, metadata: Any = None, kw_only: Any = dataclasses.MISSING, **kwargs: Any
) -> Any:
    """``dataclasses.field`` with ``kw_only``: the field moves to the end.

    Raises:
      ValueError: for a keyword-only field without a default.
    """
    if kw_only is not dataclasses.MISSING and kw_only:
        if (
            kwargs.get("default", dataclasses.MISSING) is dataclasses.MISSING
            and kwargs.get("default_factory", dataclasses.MISSING)
            is dataclasses.MISSING
        ):
            raise ValueError("Keyword-only fields with no default are not supported.")
        metadata = dict(metadata or {})
        metadata[KW_ONLY] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def _is_kw_only(f: Any) -> bool:
    return isinstance(f, dataclasses.Field) and bool(f.metadata.get(KW_ONLY))


@typing.dataclass_transform(field_specifiers=(field,))
def dataclass(
    cls: type[M] | None = None,
    extra_fields: list[tuple[str, Any, dataclasses.Field]] | None = None,
    **kwargs: Any,
) -> Any:
    """``dataclasses.dataclass`` that puts keyword-only fields last.

    Args:
      cls: the class (or None, to use as ``@dataclass(...)``).
      extra_fields: ``(name, type, field)`` triples to add (Modules add ``parent``
        and ``name`` this way, because ``Module`` itself is not a dataclass).
      **kwargs: passed to ``dataclasses.dataclass``.
    """

    def wrap(c: type[M]) -> type[M]:
        return _process_class(c, extra_fields or [], **kwargs)

    return wrap if cls is None else wrap(cls)


def _own_annotations(cls: type) -> dict[str, Any]:
    if "__annotations__" not in cls.__dict__:
        cls.__annotations__ = {}
    return cls.__dict__["__annotations__"]


def _process_class(
    cls: type[M], extra_fields: list[tuple[str, Any, dataclasses.Field]], **kwargs: Any
) -> type[M]:
    annotations = _own_annotations(cls)
    # Fields after a KW_ONLY marker are keyword-only.
    marker = None
    for name, annotation in list(annotations.items()):
        if annotation is KW_ONLY:
            if marker is not None:
                raise TypeError("Multiple KW_ONLY markers")
            marker = name
        elif marker is not None:
            if not hasattr(cls, name):
                raise ValueError(
                    "Keyword-only fields with no default are not supported."
                )
            default = getattr(cls, name)
            if isinstance(default, dataclasses.Field):
                default.metadata = MappingProxyType({**default.metadata, KW_ONLY: True})
            else:
                default = field(default=default, kw_only=True)
            setattr(cls, name, default)
    if marker is not None:
        del annotations[marker]
    for name, annotation, default in extra_fields:
        if not (isinstance(name, str) and isinstance(default, dataclasses.Field)):
            raise ValueError(
                "Expected extra_fields to a be a list of (name, type, Field) tuples."
            )
        setattr(cls, name, default)
        annotations[name] = annotation

    # Hide the keyword-only fields of base dataclasses while this class is built,
    # then re-add them after this class's own fields.
    kw_only: dict[str, tuple[Any, Any]] = {}
    saved: dict[type, dict[str, Any]] = {}
    for base in reversed(cls.__mro__[1:]):
        if not dataclasses.is_dataclass(base):
            continue
        saved[base] = dict(base.__dict__.get("__dataclass_fields__", {}))
        base_ann = base.__dict__.get("__annotations__", {})
        for f in list(dataclasses.fields(base)):
            if _is_kw_only(f) or f.name in kw_only:
                kw_only[f.name] = (base_ann.get(f.name, f.type), f)
                del base.__dataclass_fields__[f.name]  # type: ignore[attr-defined]
    for name, annotation in list(annotations.items()):
        value = getattr(cls, name, None)
        if _is_kw_only(value) or name in kw_only:
            del annotations[name]
            kw_only[name] = (annotation, value)
    for name, (annotation, default) in kw_only.items():
        if isinstance(default, dataclasses.Field):
            # A fresh copy: the base's Field object must keep describing the base.
            default = _copy_field(default)
        setattr(cls, name, default)
        annotations[name] = annotation
    try:
        out = dataclasses.dataclass(cls, **kwargs)  # type: ignore[call-overload]
    finally:
        for base, fields in saved.items():
            base.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    return out


def _copy_field(f: dataclasses.Field) -> dataclasses.Field:
    kw = dict(
        default=f.default,
        default_factory=f.default_factory,
        init=f.init,
        repr=f.repr,
        hash=f.hash,
        compare=f.compare,
        metadata=f.metadata,
    )
    kw["kw_only"] = True
    return dataclasses.field(**kw)  # type: ignore[call-overload]
