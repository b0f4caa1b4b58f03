"""``bridge.Module``: a Linen-style module API on nnx objects (flax.nnx's
``bridge.module``).

A ``bridge.Module`` is a dataclass like a Linen module, with ``setup`` or
``@bridge.compact`` methods that make submodules and ``self.param(...)`` /
``self.variable(...)``; ``init`` and ``apply`` take and return Linen variable
dicts. Underneath it is an ``nnx.Module``: its submodules and Variables are
attributes, so every nnx API (``split``, ``state``, the transforms) works on it.

``apply`` works on a clone: the variables are loaded into it (a submodule not
made yet keeps its variables in a hidden :class:`ModuleState` until ``setup`` or
a compact method creates it), every module gets a :class:`Scope` (rngs, mutable
collections, whether initializing) for the call, and the clone's variables are
returned as Linen collections.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

import jax
import numpy as np

from lens import errors
from lens._frozen_dict import FrozenDict
from lens.core import AxisMetadata
from lens.nnx._graph.ops import clone, iter_graph, state
from lens.nnx._objects import module as nnx_module
from lens.nnx._objects.object import Pytree, register_data_type
from lens.nnx._objects.rngs import Rngs
from lens.nnx._variables.hooks import VariableMetadata
from lens.nnx._variables.names import variable_name_from_type, variable_type_from_name
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Param, RngState, Variable
from lens.nnx.bridge._context import MODULE_CONTEXT as MODULE_CONTEXT
from lens.nnx.bridge._context import ModuleContext as ModuleContext
from lens.nnx.bridge._context import (
    ModuleStackEntry,
    auto_submodule_name,
    current_context,
    entered,
)
from lens.nnx.bridge._context import current_module as current_module
from lens.nnx.bridge.variables import to_linen_var, to_nnx_var
from lens.nnx.traversals import unflatten_mapping

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])


class ModuleState(State):
    """Variables loaded for a submodule that is not made yet: stored under its
    name, invisible to attribute access, and loaded into the submodule when
    ``setup`` or a compact method assigns it."""


register_data_type(ModuleState)  # a pytree by State.__init_subclass__


class Scope(Pytree):
    """What a bound module uses during ``init``/``apply``: the rng streams, the
    mutable collections, and whether it is initializing."""

    def __init__(self, rngs: Rngs, mutable: Any, initializing: bool = False):
        self.rngs = rngs
        self.mutable = mutable
        self.initializing = initializing

    def copy(self) -> Scope:
        return Scope(self.rngs, self.mutable, self.initializing)


class AttrPriority(enum.IntEnum):
    """Order of attributes in the graph walk (lower first): the first path to a
    shared submodule names its variables."""

    HIGH = 0
    INIT_PARENT = 20
    DEFAULT = 50
    LOW = 100


_SETUP_DONE = "_bridge_setup_done"


class ModuleBase:
    """What a bridge ``Module`` has besides an nnx Module's (flax's typing base):
    its ``scope`` (None until bound) and the ``attr_priorities`` of its fields."""

    if TYPE_CHECKING:
        scope: Scope | None
        attr_priorities: dict[str, AttrPriority]


def has_setup(x: Any) -> bool:
    """Whether ``x`` defines ``setup`` (it is run before a bridge module's first use)."""
    return hasattr(x, "setup")


def _maybe_call_setup(module: Module) -> None:
    if not hasattr(type(module), "setup") or vars(module).get(_SETUP_DONE):
        return
    with entered(module, in_compact=False):
        cast(Any, module).setup()
    object.__setattr__(module, _SETUP_DONE, True)


def _bind_module(parent: Module, module: Module) -> None:
    """Gives ``module`` (and the unbound modules inside it) the parent's scope,
    then runs their ``setup``."""
    scope = vars(parent)["scope"]
    for _, value in reversed(list(iter_graph(module, graph=True))):
        if isinstance(value, Module):
            if vars(value).get("scope") is None:
                object.__setattr__(value, "scope", scope.copy())
            _maybe_call_setup(value)


def _parent_and_name(cls: type, kwargs: dict[str, Any]) -> tuple[Any, str | None]:
    """Where a module made inside a running bridge module is attached."""
    parent_ctx = current_context()
    fields = getattr(cls, "__dataclass_fields__", {})
    parent = kwargs.pop("parent") if "parent" in kwargs else parent_ctx
    if parent_ctx is None:
        return None, None
    if isinstance(parent, ModuleStackEntry):
        parent = parent_ctx.module
    elif parent_ctx.in_compact and parent is not None:
        raise ValueError(
            f"'parent' can only be set to None, got {type(parent).__name__}\n"
            f"{cls.__name__} is made inside a @compact method, which attaches it to "
            "the running module; pass parent=None to keep it unattached."
        )
    if "name" in kwargs:
        name = kwargs["name"] if "name" in fields else kwargs.pop("name")
        if not isinstance(name, str):
            raise ValueError(
                f"'name' must be a 'str', got {type(name).__name__}\n"
                f"Name the {cls.__name__} submodule with a string."
            )
        return parent, name
    if parent_ctx.in_compact:
        return parent, auto_submodule_name(parent_ctx, cls)
    return parent, None


class ModuleMeta(nnx_module.ModuleMeta):
    """Makes a bridge module made inside a running one its submodule: named
    ``name=...`` or, in a compact method, ``ClassName_<n>``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        parent, name = _parent_and_name(cls, kwargs)
        module = cast(Any, cls).__new__(cls, *args, **kwargs)
        object.__setattr__(module, "scope", None)
        object.__setattr__(module, "attr_priorities", {})
        module.__init__(*args, **kwargs)
        if parent is not None and name is not None:
            if vars(parent).get("scope") is None:
                raise ValueError(
                    f"{cls.__name__} named {name!r} is made inside an unbound "
                    f"{type(parent).__name__}.\nMake submodules in setup() or a "
                    "@compact method, which run inside init/apply."
                )
            setattr(parent, name, module)
            parent.set_attr_priority(name, AttrPriority.INIT_PARENT)
        return module


def _load(node: Any, values: Mapping[Any, Any]) -> None:
    """Loads ``values`` (nested, Variables at the leaves) into ``node``: into its
    Variables and submodules where they exist; missing ones are added (to a
    bridge module as hidden :class:`ModuleState`)."""
    for key, value in values.items():
        if isinstance(node, list | tuple):
            _load_item(node[int(key)], value, key)
            continue
        current = node.get(key) if isinstance(node, dict) else vars(node).get(key)
        if current is None or isinstance(current, ModuleState):
            new = value
            if isinstance(value, Mapping) and not isinstance(value, Variable):
                if isinstance(current, ModuleState):
                    new = _merged(current, value)
                new = ModuleState(new) if isinstance(node, Module) else _plain(new)
            if isinstance(node, dict):
                node[key] = new
            else:
                object.__setattr__(node, key, new)
        else:
            _load_item(current, value, key)


def _load_item(current: Any, value: Any, key: Any) -> None:
    if isinstance(current, Variable):
        raw = value.value if isinstance(value, Variable) else value
        if np.shape(raw) != np.shape(current.value):
            raise errors.ScopeParamShapeError(
                str(key), "", np.shape(raw), np.shape(current.value)
            )
        current.value = raw
    elif isinstance(value, Mapping):
        _load(current, value)


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping) and not isinstance(x, Variable):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _merged(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> dict[Any, Any]:
    out = _plain(a)
    for k, v in b.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merged(out[k], v)
        else:
            out[k] = v
    return out


def _as_variables(variables: Mapping[str, Any]) -> dict[Any, Any]:
    """Linen collections as one nested mapping of nnx Variables."""
    merged: dict[Any, Any] = {}
    for col, tree in variables.items():
        tree = jax.tree.map(
            functools.partial(to_nnx_var, col),
            _plain(tree),
            is_leaf=lambda x: isinstance(x, AxisMetadata),
        )
        merged = _merged(merged, tree)
    return merged


def _as_rngs(rngs: Any) -> Rngs:
    if rngs is None or (isinstance(rngs, Mapping) and not rngs):
        return Rngs.__new__(Rngs)  # no streams, as flax's Rngs()
    if isinstance(rngs, Rngs):
        return rngs
    if isinstance(rngs, Mapping):
        return Rngs(**rngs)
    return Rngs(rngs)


def _unbound_fn(module: Module, method: Callable[..., Any] | str) -> Callable:
    if isinstance(method, str):
        fn = getattr(module, method)
        if not callable(fn):
            raise TypeError(
                f"'{type(module).__name__}.{method}' must be a callable, got "
                f"{type(fn)}.\nPass the name of a method of the module."
            )
        if isinstance(fn, Module):  # a submodule: call it
            return lambda m, *a, **k: getattr(m, method)(*a, **k)
        method = fn
    if inspect.ismethod(method) and isinstance(method.__self__, Module):
        method = method.__func__
    if not callable(method) or len(inspect.signature(method).parameters) < 1:
        raise errors.ApplyModuleInvalidMethodError(method)
    return method


def _check_shape(name: str, value: Any, abstract: Any) -> None:
    for val, abs_val in zip(jax.tree.leaves(value), jax.tree.leaves(abstract)):
        if np.shape(val) != np.shape(abs_val):
            raise errors.ScopeParamShapeError(
                name, "", np.shape(val), np.shape(abs_val)
            )


def _abstract(init: Callable[[], Any]) -> tuple[Any, dict[str, Any] | None]:
    """The shapes ``init()`` would make, and its variable metadata (None when it
    returns a plain value)."""
    found: list[dict[str, Any]] = []

    def value() -> Any:
        out = init()
        if isinstance(out, VariableMetadata):
            found.append(dict(out.metadata))
            return out.raw_value
        return out

    abstract = jax.eval_shape(value)
    return abstract, (found[0] if found else None)


def _existing_value(name: str, value: Any, init: Callable[[], Any]) -> Any:
    """An attribute set to a raw value where a variable is declared: checked
    against the initializer's shape, keeping its metadata."""
    abstract, metadata = _abstract(init)
    _check_shape(name, value, abstract)
    return value if metadata is None else VariableMetadata(value, metadata=metadata)


@dataclass_transform(field_specifiers=(dataclasses.field,))
class Module(nnx_module.Module, ModuleBase, pytree=False, metaclass=ModuleMeta):
    """A Linen-style module on nnx: a dataclass with ``setup`` or ``@compact``
    methods, ``self.param``/``self.variable``, and ``init``/``apply`` that take
    and return Linen variable dicts.

    >>> import jax, jax.numpy as jnp
    >>> from lens.nnx import bridge
    >>> class Dense(bridge.Module):
    ...     features: int
    ...     @bridge.compact
    ...     def __call__(self, x):
    ...         w = self.param("w", jax.nn.initializers.ones, (x.shape[-1], self.features))
    ...         return x @ w
    >>> variables = Dense(3).init(0, jnp.ones((1, 2)))
    >>> variables["params"]["w"].shape
    (2, 3)
    """

    if TYPE_CHECKING:
        scope: Scope | None
        attr_priorities: dict[str, AttrPriority]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        kwargs.pop("pytree", None)
        super().__init_subclass__(pytree=False, **kwargs)
        dataclasses.dataclass(repr=False)(cls)
        cls.__hash__ = object.__hash__  # type: ignore[method-assign]

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if type(value) is ModuleState:
            raise AttributeError(
                f"{type(self).__name__}.{name} holds the variables of a submodule "
                "that is not made yet; setup() or a @compact method makes it."
            )
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if vars(self).get("scope") is not None:
            pending = vars(self).get(name)
            if isinstance(pending, ModuleState):
                _load(value, pending)
            for leaf in jax.tree.leaves(value, is_leaf=_is_node):
                if isinstance(leaf, Module):
                    _bind_module(self, leaf)
        super().__setattr__(name, value)

    def _graph_items(self) -> list[tuple[Any, Any]]:
        priorities = vars(self).get("attr_priorities") or {}
        items = [(k, v) for k, v in super()._graph_items() if k != _SETUP_DONE]
        return sorted(
            items, key=lambda kv: (priorities.get(kv[0], AttrPriority.DEFAULT), kv[0])
        )

    def set_attr_priority(self, name: str, value: AttrPriority) -> None:
        """Where attribute ``name`` comes in the graph walk (lower first)."""
        self.attr_priorities[name] = value

    def is_initializing(self) -> bool:
        """True inside ``init`` / ``init_with_output``."""
        scope = vars(self).get("scope")
        return bool(scope is not None and scope.initializing)

    def make_rng(self, name: str = "default") -> jax.Array:
        """A new key from the ``name`` stream of this call's rngs."""
        scope = vars(self).get("scope")
        if scope is None:
            raise ValueError(
                "Can't use RNGs on unbound modules\nCall make_rng in setup() or a "
                "method run by init/apply."
            )
        return scope.rngs[name]()

    def param(
        self,
        name: str,
        init_fn: Callable[..., A],
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> Param[A]:
        """The Param ``name``: the one loaded by ``apply`` or made earlier, else
        ``init_fn(make_rng('params'), *init_args, **init_kwargs)``."""
        if vars(self).get("scope") is None:
            raise ValueError(
                "Parameters must be initialized in `setup()` or in a method "
                f"wrapped in `@compact`\n{type(self).__name__}.param({name!r}) ran "
                "outside init/apply."
            )
        if hasattr(self, name):
            value = getattr(self, name)
            if isinstance(value, Variable):
                if not isinstance(value, Param):
                    raise ValueError(
                        f"Expected '{name}' to be a Param, got {type(value).__name__}"
                        f"\n{type(self).__name__}.{name} is another kind of variable;"
                        " use another name for the parameter."
                    )
                abstract, _ = _abstract(
                    lambda: init_fn(jax.random.key(0), *init_args, **init_kwargs)
                )
                _check_shape(name, value.value, abstract)
                return value
            value = _existing_value(
                name,
                value,
                lambda: init_fn(jax.random.key(0), *init_args, **init_kwargs),
            )
        else:
            value = init_fn(self.make_rng("params"), *init_args, **init_kwargs)
        variable = Param(value)
        setattr(self, name, variable)
        return variable

    def variable(
        self,
        col: str,
        name: str,
        init_fn: Callable[..., A] | None = None,
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> Variable[A]:
        """The variable ``name`` of collection ``col``: the one loaded by
        ``apply`` or made earlier, else ``init_fn(*init_args, **init_kwargs)``."""
        variable_type = variable_type_from_name(col, allow_register=True)
        if vars(self).get("scope") is None:
            raise ValueError(
                "Variables must be initialized in `setup()` or in a method "
                f"wrapped in `@compact`\n{type(self).__name__}.variable({col!r}, "
                f"{name!r}) ran outside init/apply."
            )
        value = getattr(self, name) if hasattr(self, name) else _MISSING
        if isinstance(value, Variable):
            return value
        if init_fn is None:
            raise ValueError(
                "Expected 'init_fn' to be a callable, got None\nGive "
                f"{type(self).__name__}.variable({col!r}, {name!r}, init_fn) a "
                "function that makes the initial value."
            )
        fn = cast(Callable[..., A], init_fn)
        if value is _MISSING:
            value = fn(*init_args, **init_kwargs)
        else:
            value = _existing_value(name, value, lambda: fn(*init_args, **init_kwargs))
        variable = variable_type(value)
        setattr(self, name, variable)
        return variable

    def _get_variables(self) -> dict[str, Any]:
        by_col: dict[str, dict[tuple, Any]] = {}
        for path, v in state(self, graph=True).flat_state():
            if isinstance(v, RngState):  # Linen has no rng collections
                continue
            try:
                col = variable_name_from_type(type(v))
            except ValueError:
                col = type(v).__name__
            by_col.setdefault(col, {})[tuple(path)] = to_linen_var(v)
        return {col: unflatten_mapping(flat) for col, flat in by_col.items()}

    @property
    def variables(self) -> FrozenDict:
        """This module's variables as Linen collections."""
        return FrozenDict(self._get_variables())

    def apply(
        self,
        variables: Mapping[str, Any],
        *args: Any,
        rngs: Any = None,
        method: Callable[..., Any] | str = "__call__",
        mutable: Any = False,
        _initialize: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Runs ``method`` on a copy of this module holding ``variables``; returns
        its output, and the variables after the call when ``mutable`` is set."""
        module = clone(self, graph=True)
        _load(module, _as_variables(variables))
        scope = Scope(_as_rngs(rngs), mutable, _initialize)
        fn = _unbound_fn(module, method)
        modules = [
            m for _, m in iter_graph(module, graph=True) if isinstance(m, Module)
        ]
        try:
            for m in modules:
                object.__setattr__(m, "scope", scope.copy())
            for m in modules:
                _maybe_call_setup(m)
            with entered(module, in_compact=False):
                out = fn(module, *args, **kwargs)
        finally:
            for _, m in iter_graph(module, graph=True):
                if isinstance(m, Module):
                    object.__setattr__(m, "scope", None)
        if mutable is False:
            return out
        return out, module._get_variables()

    def init(
        self,
        rngs: Any = None,
        *args: Any,
        method: Callable[..., Any] | str = "__call__",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The variables ``method`` makes when run on these inputs."""
        return self.init_with_output(rngs, *args, method=method, **kwargs)[1]

    def init_with_output(
        self,
        rngs: Any = None,
        *args: Any,
        method: Callable[..., Any] | str = "__call__",
        mutable: Any = False,
        **kwargs: Any,
    ) -> tuple[Any, dict[str, Any]]:
        """``(output, variables)`` of ``method`` run for initialization."""
        return self.apply(
            {},
            *args,
            rngs=rngs,
            method=method,
            mutable=True,
            _initialize=True,
            **kwargs,
        )


_MISSING: Any = object()


def _is_node(x: Any) -> bool:
    return isinstance(x, Pytree | Variable)


def compact(f: F) -> F:
    """Marks a method that makes submodules and variables inline: those made
    in it are attached to ``self`` (``Dense_0``, ``Dense_1``, ... or ``name=``)."""

    @functools.wraps(f)
    def compact_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, Module):
            raise ValueError(
                "Expected 'self' to be a nnx.bridge.Module, got "
                f"{type(self).__name__}\n@bridge.compact is for methods of "
                "bridge.Module subclasses."
            )
        with entered(self, in_compact=True):
            return f(self, *args, **kwargs)

    return compact_wrapper  # type: ignore[return-value]
