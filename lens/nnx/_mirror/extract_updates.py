"""flax.nnx's ``extract`` helpers for the Variable updates of tree-mode
transforms (exported by :mod:`lens.nnx.extract`).

A transform in tree mode copies its arguments' pytree structure
(:func:`snapshot`: the current Variables, and copies of them), calls the
function, collects the Variables whose value changed (:func:`get_updates`, one
:class:`Updates` per prefix) and writes them back into the caller's Variables
(:func:`apply_updates`). :func:`check_no_aliases` refuses a Variable reached
twice among the inputs and outputs (tree mode has no shared references).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

import jax

from lens import errors
from lens._facades import show_at_flax_paths
from lens.nnx._mirror.extract_prefix import Mask, broadcast_prefix_map, labeled
from lens.nnx._variables.variable import Variable

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])

KeepFn = Callable[[tuple, Any, Variable, Variable], bool]


def _is_variable(x: Any) -> bool:
    return isinstance(x, Variable)


def snapshot(args: A) -> tuple[A, A]:
    """``(current, snapshot)``: ``args`` with its containers copied and its
    Variables kept, and ``args`` with its Variables copied too (their values as
    they are now)."""
    current = jax.tree.map(lambda x: x, args, is_leaf=_is_variable)
    return current, jax.tree.map(lambda x: x, args)


def copy_var_structure(tree: A) -> A:
    """``tree`` with its containers copied and its Variables kept."""
    return jax.tree.map(lambda x: x, tree, is_leaf=_is_variable)


def variable_changed(post: Variable, pre: Variable) -> bool:
    """Whether ``post`` differs from its snapshot ``pre``: another type or
    metadata, or another value object."""
    post_leaves, post_def = jax.tree.flatten(post)
    pre_leaves, pre_def = jax.tree.flatten(pre)
    return post_def != pre_def or any(
        a is not b for a, b in zip(post_leaves, pre_leaves, strict=False)
    )


@dataclasses.dataclass(slots=True)
class Updates(
    typing.Sequence[tuple[jax.tree_util.KeyPath, Variable]],  # noqa: UP006
):
    """``(key path, Variable)`` pairs: the Variables a transform changed (a
    pytree of the Variables, the paths static). ``u[i]`` is a pair, ``u[path]``
    the Variable at ``path``."""

    _keys: list[Any] = dataclasses.field(default_factory=list)
    _values: list[Variable] = dataclasses.field(default_factory=list)

    @classmethod
    def create(
        cls, items: Iterable[tuple[jax.tree_util.KeyPath, Variable]] = ()
    ) -> Updates:
        out = cls()
        for key, value in items:
            out.append(key, value)
        return out

    def append(self, key: Any, value: Variable) -> None:
        self._keys.append(key)
        self._values.append(value)

    @property
    def paths(self) -> list[jax.tree_util.KeyPath]:
        return self._keys

    @property
    def leaves(self) -> list[Variable]:
        return self._values

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, int):
            return self._keys[key], self._values[key]
        if isinstance(key, slice):
            return list(zip(self._keys[key], self._values[key], strict=True))
        try:
            return self._values[self._keys.index(key)]
        except ValueError:
            raise ValueError(
                f"{key!r} is not in list\nThese Updates have no Variable at "
                f"{_keystr(key)}; their paths are {[_keystr(k) for k in self._keys]}."
            ) from None

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[Any, Variable]]:
        return zip(self._keys, self._values, strict=True)

    def __repr__(self) -> str:
        if not self._keys:
            return "Updates({})"
        rows = ",\n".join(
            f"  {_keystr(k)}: " + repr(v).replace("\n", "\n  ") for k, v in self
        )
        return "Updates({\n" + rows + "\n})"


def _keystr(key: Any) -> str:
    try:
        return jax.tree_util.keystr(tuple(key))
    except (TypeError, AttributeError):
        return repr(key)


jax.tree_util.register_dataclass(
    Updates, data_fields=["_values"], meta_fields=["_keys"]
)


def get_updates(
    current_tree: A,
    snapshot_tree: A,
    *,
    prefix: Any = None,
    keep_fn: KeepFn | None = None,
    known_prefixes: Iterable[Any] = (None,),
) -> list[Updates]:
    """The Variables of ``current_tree`` that changed since ``snapshot_tree`` (a
    :func:`snapshot`), one :class:`Updates` per entry of ``known_prefixes``: each
    Variable goes to the Updates of its prefix leaf in ``prefix``. ``keep_fn(path,
    prefix, current, snapshot)`` decides instead of :func:`variable_changed`.

    Raises:
        KeyError: a Variable's prefix is not one of ``known_prefixes``.
    """
    keep = keep_fn or (lambda _p, _x, cur, snap: variable_changed(cur, snap))
    updates: dict[Hashable, Updates] = {p: Updates() for p in known_prefixes}

    def collect(path: Any, p: Any, current: Any, snap: Any) -> None:
        if not isinstance(current, Variable) or current.hijax or current.ref:
            return
        if not keep(path, p, current, snap):
            return
        if p not in updates:
            raise KeyError(
                f"{p!r}: the prefix of the Variable at {jax.tree_util.keystr(path)} "
                f"is not one of known_prefixes {list(updates)}.\nList every prefix "
                "leaf of `prefix` in known_prefixes."
            )
        updates[p].append(path, current)

    broadcast_prefix_map(
        collect,
        prefix,
        current_tree,
        snapshot_tree,
        is_leaf=_is_variable,
        prefix_leaf=lambda x: x is None,
    )
    return list(updates.values())


def apply_updates(
    variables: dict[jax.tree_util.KeyPath, Variable], updates: list[Updates]
) -> None:
    """Writes each update into the Variable of ``variables`` at its path.

    Raises:
        RuntimeError: an update's path is not in ``variables``.
    """
    for flat in updates:
        for path, update in flat:
            variable = variables.get(path)
            if not isinstance(variable, Variable):
                raise RuntimeError(
                    f"Variable not found at path {jax.tree_util.keystr(path)}. "
                    f"Variable: {update}\nThe updates must come from get_updates "
                    "on the tree check_no_aliases returned these variables for."
                )
            variable.update_from_state(update)


def to_masked(tree: Any, all_updates: list[Updates]) -> Any:
    """``tree`` with each leaf replaced by the update at its path (None where
    there is none)."""
    combined: dict[Any, Any] = {}
    for updates in all_updates:
        combined.update(updates)
    return jax.tree.map_with_path(
        lambda path, _: combined.get(path), tree, is_leaf=lambda x: x is None
    )


def _duplicate(fn_name: str, v: Variable, first: str, second: str) -> ValueError:
    return ValueError(
        f"Duplicate {v}\nfound at paths:\n\n  - {first}\n  - {second}\n\n"
        f"nnx.{fn_name} with graph_updates=False does not support Variable "
        "aliasing (duplicate inputs, duplicate outputs, or input Variables "
        "returned as outputs).\nRemove the duplicate Variables, pass copies made "
        f"with nnx.clone(), or use nnx.{fn_name}(..., graph=True, "
        f"graph_updates=True) (or nnx.compat.{fn_name})."
    )


def check_no_aliases(
    fn_name: str, /, *, check: Iterable[str] = (), **kwargs: Any
) -> dict[jax.tree_util.KeyPath, Variable]:
    """Every Variable of the ``kwargs`` trees by key path (starting with the
    keyword's ``GetAttrKey``), each met once. Variables under a keyword in
    ``check`` must not be captured from outside the transform.

    Raises:
        ValueError: a Variable is reached twice.
        CapturedOutputError: (a ValueError) a Variable under ``check`` was
            made outside the nnx or JAX transform running now.
    """
    check = set(check)
    seen: dict[int, jax.tree_util.KeyPath] = {}
    found: dict[jax.tree_util.KeyPath, Variable] = {}
    tree = labeled(**kwargs)
    for path, leaf in jax.tree.leaves_with_path(tree, is_leaf=_is_variable):
        if not isinstance(leaf, Variable):
            continue
        if path[0].name in check and not leaf._can_update:
            raise errors.CapturedOutputError(
                f"Cannot return captured Variable of type {type(leaf).__name__} from "
                f"nnx.{fn_name}.\nFound at path: {jax.tree_util.keystr(path)}. Pass "
                "its object as an argument, or create it inside the function."
            )
        first = seen.setdefault(id(leaf), path)
        if first is not path:
            keystr = jax.tree_util.keystr
            raise _duplicate(fn_name, leaf, keystr(first), keystr(path))
        found[path] = leaf
    return found


def treemap_copy_args(f: F) -> F:
    """``f`` called with copies of its arguments' pytrees (new containers and
    Variables, the same arrays)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = jax.tree.map(lambda x: x, (args, kwargs))
        return f(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def check_same_variables(inputs: Any, outputs: Any, transform_name: str = "") -> None:
    """Each Variable of ``inputs`` is the same object at its place in ``outputs``
    (a loop's carry).

    Raises:
        ValueError: a Variable was replaced by another object, or ``outputs`` has
            another structure.
    """

    def same(in_leaf: Any, out_leaf: Any) -> None:
        if isinstance(in_leaf, Variable) and in_leaf is not out_leaf:
            raise ValueError(
                f"{transform_name} Variable identity must be preserved across "
                f"iterations.\nA {type(in_leaf).__name__} of the carry came back as "
                f"{type(out_leaf).__name__}: update it in place (v[...] = x) "
                "instead of replacing it."
            )

    jax.tree.map(
        same, inputs, outputs, is_leaf=lambda x: isinstance(x, Mask | Variable)
    )


def update_carry_variables(init_val: Any, val_out: Any) -> Any:
    """``val_out`` with each Variable of ``init_val`` updated from the one at its
    place in ``val_out`` and put there (the caller's Variables come back)."""

    def update(in_leaf: Any, out_leaf: Any) -> Any:
        if isinstance(in_leaf, Variable):
            in_leaf.update_from_state(out_leaf)
            return in_leaf
        return out_leaf

    return jax.tree.map(update, init_val, val_out, is_leaf=_is_variable)


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
