"""``freeze``/``unfreeze`` for code ported from Flax.

lens variables are plain dicts, so there is no ``FrozenDict``: both functions return
a fresh plain nested dict (leaves shared). ``unfreeze`` is the common call in ported
code (``params = unfreeze(params)``) and does what it always did; ``freeze`` exists so
that such code keeps running.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def unfreeze(x: Any) -> Any:
    """Returns a fresh plain nested dict with the same leaves.

    Example:
        >>> unfreeze({"params": {"w": 1}})
        {'params': {'w': 1}}
    """
    if isinstance(x, Mapping):
        return {k: unfreeze(v) for k, v in x.items()}
    return x


def freeze(x: Any) -> Any:
    """Returns a fresh plain nested dict (lens has no FrozenDict)."""
    return unfreeze(x)
