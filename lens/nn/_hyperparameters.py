"""Impossible layer hyperparameters fail when the layer is built.

``Dense(features=-1)``, ``Dropout(rate=1.5)`` or ``MultiHeadDotProductAttention(
num_heads=0)`` describe no layer. Flax accepts them and fails later inside JAX
(a negative shape, a division by zero) or, for rates, not at all: dropout with
``rate=1.5`` scales activations by a negative number. lens raises
:class:`~lens.errors.InvalidHyperparameterError` (a ``ValueError``) at
construction, naming the layer, the field and a value that works.

A layer class declares its rules as a class attribute, which subclasses inherit::

    class Dense(Module):
        _hyperparameters = {"features": SIZE}

Only concrete numbers are checked: ``None`` (unset), arrays under a transform and
other objects pass through, so programs that set fields in unusual ways keep
working.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from lens import errors

SIZE = "size"
"""A positive integer (a feature count, a number of heads)."""
SIZES = "sizes"
"""A positive integer or a sequence of them (kernel sizes, strides, shapes)."""
RATE = "rate"
"""A probability: a number in [0, 1]."""
NON_NEGATIVE = "non_negative"
"""A number >= 0 (an epsilon)."""

_WANTED = {
    SIZE: "a positive integer",
    SIZES: "a positive integer or a tuple of positive integers",
    RATE: "a number in [0, 1]",
    NON_NEGATIVE: "a number >= 0",
}
_INT_KINDS = (SIZE, SIZES)
_EXAMPLE = {SIZE: "16", SIZES: "(3, 3)", RATE: "0.1", NON_NEGATIVE: "1e-6"}
_FIELD_EXAMPLE = {
    "strides": "1",
    "input_dilation": "1",
    "kernel_dilation": "1",
    "feature_group_count": "1",
    "num_heads": "8",
    "num_embeddings": "1000",
}


def class_rules(cls: type) -> tuple[dict[str, str], ...]:
    """The non-empty ``_hyperparameters`` dicts of ``cls`` and its bases, in MRO
    order."""
    return tuple(
        rules
        for klass in cls.__mro__
        if (rules := klass.__dict__.get("_hyperparameters"))
    )


def check_hyperparameters(
    module: Any, rules_by_class: tuple[dict[str, str], ...] | None = None
) -> None:
    """Raises if a field of ``module`` breaks a rule its class (or a base) declares.

    Args:
      module: the module.
      rules_by_class: ``class_rules(type(module))``, if the caller has it.

    Raises:
      InvalidHyperparameterError: naming the class, the field and the value.
    """
    if rules_by_class is None:
        rules_by_class = class_rules(type(module))
    for rules in rules_by_class:
        for field, kind in rules.items():
            value = getattr(module, field, None)
            if type(value) is int and kind in _INT_KINDS:
                if value > 0:
                    continue  # the common case, as _valid decides it
            if value is not None and not _valid(kind, value):
                raise errors.InvalidHyperparameterError(
                    type(module).__name__,
                    field,
                    value,
                    _WANTED[kind],
                    f"{type(module).__name__}({field}="
                    f"{_FIELD_EXAMPLE.get(field, _EXAMPLE[kind])}, ...)",
                )


def _number(value: Any) -> float | None:
    """``value`` as a float if it is a concrete real number (bools excluded)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def _valid(kind: str, value: Any) -> bool:
    if kind == SIZES and isinstance(value, tuple | list):
        return all(_valid(SIZE, v) for v in value)
    x = _number(value)
    if x is None:  # not a plain number: an array, a tracer, an object; not ours
        return True
    if kind in (SIZE, SIZES):
        return isinstance(value, numbers.Integral) and x > 0
    if kind == RATE:
        return 0.0 <= x <= 1.0
    return x >= 0.0 and not math.isnan(x)
