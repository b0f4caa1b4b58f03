"""A graph's Variables swapped: :func:`with_vars` (copies with other modes) and
:func:`as_pure` (raw values instead of Variables), as flax.nnx's ``graphlib`` has
them; ``vars_as`` and ``pure`` are their deprecated names.
"""

from __future__ import annotations

from typing import Any, TypeVar

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._graph.ops import find_duplicates
from lens.nnx._graph.ops import map as graph_map
from lens.nnx._variables import filters as filterlib
from lens.nnx._variables.variable import Variable
from lens.nnx.deprecations import deprecated

A = TypeVar("A")

_DEFAULTS = {"hijax": False, "ref": False, "mutable": True}


def with_vars(
    node: A,
    /,
    *,
    hijax: bool | None = None,
    ref: bool | None = None,
    mutable: bool | None = None,
    only: Any = ...,
    allow_duplicates: bool = False,
) -> A:
    """A copy of ``node`` whose Variables (those ``only`` selects) are copies with
    the given ``hijax``/``ref``/``mutable`` settings; Variables that already have
    them are kept as they are (shared with ``node``).

    lens Variables are plain Python boxes: ``hijax=True`` or ``ref=True`` raises
    NotImplementedError (there is no such mode to switch to).

    Raises:
        ValueError: a selected Variable is reachable at two paths (a copy would
            split the sharing) and ``allow_duplicates`` is False.
    """
    new = {
        k: v
        for k, v in (("hijax", hijax), ("ref", ref), ("mutable", mutable))
        if v is not None
    }

    def different(path: Any, x: Any) -> bool:
        return isinstance(x, Variable) and any(_flag(x, k) != v for k, v in new.items())

    selected = filterlib.All(different, only)
    if not allow_duplicates and (groups := find_duplicates(node, only=selected)):
        lines = "\n  ---".join(
            "".join(f"\n  {'/'.join(map(str, p))}" for p in group) for group in groups
        )
        raise ValueError(
            f"Found duplicate at paths:\n  ---{lines}\n  ---\nEach copy would "
            "break the sharing: pass allow_duplicates=True to copy anyway."
        )

    def swap(path: Any, x: Any) -> Any:
        return x.copy(**new) if selected(path, x) else x

    return graph_map(swap, node, recreate_variables=False)


def _flag(v: Variable, name: str) -> Any:
    try:
        return getattr(v, name)
    except AttributeError:
        return _DEFAULTS[name]


def as_pure(tree: A) -> A:
    """``tree`` with every Variable replaced by its raw value (metadata dropped), for
    serialising or exporting.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nnx
        >>> state = nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> jax.tree.map(jnp.shape, nnx.as_pure(state))
        State({
          'bias': (3,),
          'kernel': (2, 3)
        })
    """

    def pure_leaf(x: Any) -> Any:
        return as_pure(x.get_raw_value()) if isinstance(x, Variable) else x

    return jax.tree.map(pure_leaf, tree, is_leaf=lambda x: isinstance(x, Variable))


vars_as = deprecated(with_vars)
pure = deprecated(as_pure)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
