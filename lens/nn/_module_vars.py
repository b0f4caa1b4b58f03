"""What a bound module does with its scope: declare variables and params, read and
write them, draw rngs, sow intermediates and add perturbations.

A mixin of :class:`~lens.nn.Module` (the names and behaviour are Flax Linen's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import jax
import jax.numpy as jnp

from lens import errors
from lens.core import Scope, Variable
from lens.nn._module_base import ModuleBase
from lens.nn._module_support import tuple_init, tuple_reduce

T = TypeVar("T")


class ModuleVariables(ModuleBase):
    """Variables, parameters and rng streams of a module."""

    if TYPE_CHECKING:  # provided by Module
        scope: Scope | None
        _state: Any

        @property
        def _initialization_allowed(self) -> bool: ...

        def _name_taken(
            self, name: str, reuse_scopes: bool = False, collection: str | None = None
        ) -> bool: ...

    def variable(
        self,
        col: str,
        name: str,
        init_fn: Callable[..., T] | None = None,
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> Variable[T]:
        """Declares and returns variable ``name`` of collection ``col``.

        ``init_fn(*init_args, **init_kwargs)`` makes its first value.

        Raises:
          ValueError: outside ``setup`` and compact methods.
          NameInUseError: if the name is taken in this module.
        """
        if not self._initialization_allowed:
            raise ValueError(
                "Variables must be initialized in `setup()` or in a method wrapped in "
                f'`@compact` (variable "{name}" of {type(self).__name__}).'
            )
        if self._name_taken(name, collection=col):
            raise errors.NameInUseError(
                "variable",
                name,
                type(self).__name__,
                path=self.scope.debug_path,  # type: ignore[union-attr]
            )
        assert self.scope is not None
        v = self.scope.variable(
            col, name, init_fn, *init_args, unbox=unbox, **init_kwargs
        )
        self._state.children[name] = col
        return v

    def param(
        self,
        name: str,
        init_fn: Callable[..., T],
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> T:
        """Declares and returns parameter ``name`` (collection ``"params"``).

        ``init_fn(key, *init_args, **init_kwargs)`` makes its first value, with a key
        from the ``"params"`` stream.

        Raises:
          ValueError: outside ``setup`` and compact methods.
          NameInUseError: if the name is taken in this module.
        """
        state = self._state
        if not (
            not state.is_initialized or state.in_setup or state.in_compact_method
        ):  # self._initialization_allowed
            raise ValueError(
                "Parameters must be initialized in `setup()` or in a method wrapped in "
                f'`@compact` (param "{name}" of {type(self).__name__}).'
            )
        scope = self.scope
        assert scope is not None  # what self._name_taken asserts
        if scope.name_reserved(name, "params"):  # self._name_taken
            raise errors.NameInUseError(
                "param",
                name,
                type(self).__name__,
                path=scope.debug_path,
            )
        v = scope.param(name, init_fn, *init_args, unbox=unbox, **init_kwargs)
        state.children[name] = "params"
        return v

    def _require(self, what: str) -> Scope:
        if self.scope is None:
            raise ValueError(f"Can't {what} on unbound modules")
        return self.scope

    def has_variable(self, col: str, name: str) -> bool:
        """Whether variable ``name`` of collection ``col`` exists in this module."""
        return self._require("access variables").has_variable(col, name)

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written."""
        return self._require("check mutability").is_mutable_collection(col)

    def has_rng(self, name: str) -> bool:
        """Whether rng stream ``name`` is available."""
        return self._require("query for RNGs").has_rng(name)

    def make_rng(self, name: str = "params") -> Any:
        """A new key from rng stream ``name`` (falls back to ``"params"``)."""
        return self._require("use RNGs").make_rng(name)

    def is_initializing(self) -> bool:
        """True inside ``init`` (or ``nn.init``)."""
        return bool(
            self._require("check if running under init()").get_flag(
                "initializing", False
            )
        )

    @property
    def variables(self) -> Mapping[str, Any]:
        """The variables of this module, ``{collection: tree}``."""
        return self._require("access variables").variables()

    def get_variable(
        self, col: str, name: str, default: T | None = None, unbox: bool = False
    ) -> T:
        """The stored value of a variable, or ``default`` if it does not exist.

        Args:
          col: the collection.
          name: the variable name.
          default: returned when the variable does not exist.
          unbox: strip :class:`~lens.core.meta.AxisMetadata` boxes (seed 002 gives
            ``unbox`` to ``param``, ``variable`` and ``get_variable``). Off by
            default here, as in Flax, whose code reads the stored box from
            ``get_variable``; ``param`` and ``variable`` unbox by default.
        """
        return self._require("access variables").get_variable(
            col, name, default, unbox=unbox
        )

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Writes a variable (its collection must be mutable)."""
        self._require("access variables").put_variable(col, name, value)

    def sow(
        self,
        col: str,
        name: str,
        value: Any,
        reduce_fn: Callable[[Any, Any], Any] = tuple_reduce,
        init_fn: Callable[[], Any] = tuple_init,
    ) -> bool:
        """Stores ``value`` in collection ``col`` (by default appended to a tuple).

        Returns False (and stores nothing) when ``col`` is not mutable.
        """
        scope = self._require("store variables")
        if not scope.is_mutable_collection(col):
            return False
        if scope.has_variable(col, name):
            xs = scope.get_variable(col, name)
        else:
            scope.reserve(name, col)
            self._state.children[name] = col
            xs = init_fn()
        scope.put_variable(col, name, reduce_fn(xs, value))
        return True

    def perturb(self, name: str, value: T, collection: str = "perturbations") -> T:
        """Adds a zero "perturbation" variable to ``value``.

        Its gradient is the gradient of ``value``: pass the ``perturbations``
        collection to ``apply`` and differentiate with respect to it. Without it,
        ``perturb`` does nothing.
        """
        scope = self._require("store variables")
        if self.is_mutable_collection(collection):
            if not scope.has_variable(collection, name):
                scope.reserve(name, collection)
                self._state.children[name] = collection
                scope.put_variable(
                    collection, name, jax.tree.map(jnp.zeros_like, value)
                )
        if collection in scope.root._variables:
            if scope.has_variable(collection, name):
                old = scope.get_variable(collection, name)
                value = jax.tree.map(jnp.add, value, old)
            else:
                raise ValueError(
                    f"Perturbation collection {collection} present, but missing "
                    f"perturbation variable {name}\nat {scope.path_text}: pass the "
                    f'"{collection}" returned by init, or leave the collection out.'
                )
        return value
