"""Use lens.nn (Linen) modules in lens.nnx models and the other way round.

- :class:`ToNNX` wraps a Linen module as an eager module: ``lazy_init(x)`` runs
  its ``init``, and its variables become nnx Variables (``params`` -> ``Param``,
  ``batch_stats`` -> ``BatchStat``, other collections by name) on the wrapper.
- :class:`ToLinen` (or :func:`to_linen`) wraps an nnx module class as a Linen
  module: it is built inside ``init`` from the Linen rng streams, and its state
  is kept in the Linen variable collections.

The same seeds give the same parameters as flax.nnx's bridge.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

import jax

from lens import nn as linen
from lens._frozen_dict import FrozenDict
from lens.core import AxisMetadata
from lens.nn import module as linen_context
from lens.nnx._graph.ops import ApplyCaller, GraphDef, iter_graph, split, state
from lens.nnx._graph.update import update
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx._objects.state import PytreeState
from lens.nnx._variables.filters import Not
from lens.nnx._variables.names import variable_name_from_type
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import RngState, Variable
from lens.nnx.bridge._context import current_module
from lens.nnx.bridge.variables import (
    linen_vars_to_nnx_attrs,
    nnx_attrs_to_linen_vars,
    to_linen_var,
)

M = TypeVar("M", bound=Module)


def lazy_init(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Calls ``fn`` (an nnx module, or one of its methods) once so that every
    :class:`ToNNX` inside it initializes its variables; returns ``fn``."""
    bound = fn.func if isinstance(fn, functools.partial) else fn  # ToNNX(...).dot
    owner = getattr(bound, "__self__", None)
    if isinstance(fn, Module):
        module = fn
    elif isinstance(owner, Module):
        module = owner
    else:
        raise ValueError(
            f"fn = {fn!r} needs to be a method of an NNX Module.\nPass the module "
            "(or a bound method of it) to lazy_init."
        )
    set_initializing(module, True)
    try:
        cast(Any, fn)(*args, **kwargs)
    finally:
        set_initializing(module, False)
    return fn


@dataclasses.dataclass
class Functional(Generic[M]):
    """An nnx module class with its constructor arguments, used functionally:
    ``init(rngs=...)`` builds it and returns its State (keeping the GraphDef);
    ``apply(*states)(*args)`` calls a rebuilt copy and returns ``(output,
    (graphdef, state))``."""

    module_type: Callable[..., M]
    graphdef: GraphDef | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def init(self, *, rngs: Rngs | None = None) -> State:
        kwargs = dict(self.kwargs) if rngs is None else {**self.kwargs, "rngs": rngs}
        self.graphdef, state = split(self.module_type(*self.args, **kwargs))
        return state

    def apply(self, *states: Any) -> ApplyCaller:
        if self.graphdef is None:
            raise ValueError(
                f"Functional({getattr(self.module_type, '__name__', self.module_type)})"
                ".apply called before init.\nCall init(rngs=...) first: it builds "
                "the module and keeps its graph definition."
            )
        return ApplyCaller(self.graphdef, states)


def functional(cls: Callable[..., M]) -> Callable[..., Functional[M]]:
    """``functional(nnx.Linear)(32, 64)``: a :class:`Functional` of that class
    and those constructor arguments."""

    def _functional_constructor(*args: Any, **kwargs: Any) -> Functional[M]:
        return Functional(cls, None, args, kwargs)

    return _functional_constructor


# A static attribute of each ToNNX, so the copies a transform makes (lazy_init
# through nnx.vmap) see it too.
_INIT_FLAG = "_to_nnx_initializing"


def set_initializing(module: Any, initializing: bool) -> None:
    """Marks every :class:`ToNNX` in ``module``'s graph: its calls run the Linen
    ``init`` (``True``: what ``lazy_init`` and, inside a bridge module's
    ``init``, ``bridge.linen_in_bridge_mdl`` do) or ``apply``."""
    for _, m in iter_graph(module, graph=True):
        state = getattr(m, "__dict__", {}).get("_pytree__state")
        if isinstance(state, PytreeState):  # every object, as flax.nnx's
            state.set_initializing(initializing)
        if isinstance(m, ToNNX) and vars(m).get(_INIT_FLAG, False) != initializing:
            setattr(m, _INIT_FLAG, initializing)


def _flatten(tree: Mapping, prefix: tuple = ()) -> dict[tuple, Any]:
    out: dict[tuple, Any] = {}
    for k, v in tree.items():
        if isinstance(v, Mapping) and not isinstance(v, State):
            out.update(_flatten(v, prefix + (k,)))
        else:
            out[prefix + (k,)] = v
    return out


def _unflatten(flat: Mapping[tuple, Any]) -> dict[Any, Any]:
    root: dict[Any, Any] = {}
    for path, v in flat.items():
        d = root
        for k in path[:-1]:
            d = d.setdefault(k, {})
        d[path[-1]] = v
    return root


class ToNNX(Module):
    """A Linen module as an eager module.

    >>> import jax.numpy as jnp
    >>> from lens import nn, nnx
    >>> model = nnx.bridge.ToNNX(nn.Dense(4), rngs=nnx.Rngs(0)).lazy_init(jnp.ones((1, 3)))
    >>> model.kernel.shape
    (3, 4)
    """

    def __init__(self, module: linen.Module, rngs: Rngs | jax.Array | None = None):
        self.to_nnx__module = module
        if isinstance(rngs, jax.Array):
            rngs = Rngs(params=rngs)
        elif isinstance(rngs, Rngs):
            rngs = rngs.fork()
        self.to_nnx__rngs = rngs

    def lazy_init(self, *args: Any, **kwargs: Any) -> ToNNX:
        """Runs the Linen ``init`` on these inputs; returns this module."""
        return lazy_init(self, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name.startswith("to_nnx__"):
            raise AttributeError(name)
        method = getattr(type(self.to_nnx__module), name, None)
        if callable(method):
            return functools.partial(self.__call__, method=method)
        raise AttributeError(
            f"{type(self).__name__} wrapping {type(self.to_nnx__module).__name__} "
            f"has no attribute {name!r}"
        )

    def _is_initializing(self) -> bool:
        return bool(vars(self).get(_INIT_FLAG))

    def _linen_variables(self) -> dict[str, Any]:
        return nnx_attrs_to_linen_vars(
            {
                k: v
                for k, v in vars(self).items()
                if not (k.startswith("to_nnx__") or k.startswith("_"))
            }
        )

    def __call__(
        self,
        *args: Any,
        rngs: Rngs | jax.Array | None = None,
        method: Callable[..., Any] | str | None = None,
        mutable: Any = None,
        **kwargs: Any,
    ) -> Any:
        rngs = self.to_nnx__rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            keys = {name: stream() for name, stream in rngs.items()}
        elif isinstance(rngs, jax.Array):
            keys = {"params": rngs}
        else:
            keys = {}
        if "params" not in keys and "default" in keys:
            keys["params"] = keys.pop("default")
        module = self.to_nnx__module
        if self._is_initializing():
            out, updates = module.init_with_output(keys, *args, method=method, **kwargs)
        else:
            mutable = _default_mutable() if mutable is None else mutable
            out = module.apply(
                self._linen_variables(),
                *args,
                rngs=keys,
                method=method,
                mutable=mutable,
                **kwargs,
            )
            out, updates = out if mutable is not False else (out, None)
        if updates:
            self._set_collections(updates)
        return out

    def _set_collections(self, updates: Mapping[str, Any]) -> None:
        for attr, value in linen_vars_to_nnx_attrs(updates).items():
            current = vars(self).get(attr)
            if isinstance(current, dict) and isinstance(value, dict):
                merged = _flatten(current)
                merged.update(_flatten(value))
                value = _unflatten(merged)
            setattr(self, attr, value)


def current_linen_module() -> linen.Module | None:
    """The Linen module whose method is running now (None outside any)."""
    return linen_context.current_module()


def _default_mutable() -> Any:
    """The collections a ToNNX call may change when not told: those of the
    bridge module, else of the Linen module, whose apply runs (none outside)."""
    running = current_module()
    scope = None if running is None else vars(running).get("scope")
    if scope is None:
        running = current_linen_module()
        scope = None if running is None else running.scope
    return False if scope is None else scope.mutable


def linen_rngs_dict(
    linen_module: linen.Module, add_default: bool = False
) -> dict[str, Any]:
    """One new key from each rng stream of ``linen_module``'s scope
    (``{name: key}``, the ``Rngs`` an nnx module built in it gets);
    ``add_default`` adds a ``default`` stream (seed 0) when there is none.

    Raises:
        ValueError: ``linen_module`` is not bound (no scope: outside init/apply).
    """
    if linen_module.scope is None:
        raise ValueError(
            "linen_rngs_dict() must be called inside a Linen module.\n"
            f"{type(linen_module).__name__} is unbound: call it from a method that "
            "runs under init or apply."
        )
    keys: dict[str, Any] = {
        name: linen_module.make_rng(name) for name in linen_module.scope.rngs
    }
    if add_default and "default" not in keys:
        keys["default"] = 0
    return keys


def _method(module: Any, method: Callable[..., Any] | str | None) -> Callable[..., Any]:
    name = method or "__call__"
    fn = getattr(type(module), name) if isinstance(name, str) else name
    if not callable(fn):
        raise TypeError(
            f"'{type(module).__name__}.{name}' must be a callable, got {type(fn)}."
        )
    return fn


class ToLinen(linen.Module):
    """An nnx module class as a Linen module: built in ``init`` (from the Linen
    rng streams), its state kept in the Linen collections.

    >>> import jax, jax.numpy as jnp
    >>> from lens import nn, nnx
    >>> layer = nnx.bridge.ToLinen(nnx.Linear, args=(3, 4))
    >>> variables = layer.init(jax.random.key(0), jnp.ones((1, 3)))
    >>> variables["params"]["kernel"].shape
    (3, 4)
    """

    nnx_class: Callable[..., Module]
    args: Any = ()
    kwargs: Mapping[str, Any] = FrozenDict({})
    skip_rng: bool = False
    metadata_fn: Callable[[Variable], Any] | None = to_linen_var

    @linen.compact
    def __call__(
        self,
        *args: Any,
        nnx_method: Callable[..., Any] | str | None = None,
        **kwargs: Any,
    ) -> Any:
        module_kwargs = dict(self.kwargs)
        if not self.skip_rng:
            module_kwargs["rngs"] = Rngs(
                **linen_rngs_dict(self, add_default=not self.is_initializing())
            )
        module = self.nnx_class(*self.args, **module_kwargs)
        if self.is_initializing():
            self._update_variables(module)
            return _method(module, nnx_method)(module, *args, **kwargs)
        states = [
            jax.tree.map(
                lambda x: x.unbox() if isinstance(x, AxisMetadata) else x,
                dict(tree),
                is_leaf=lambda x: isinstance(x, AxisMetadata),
            )
            for tree in self.variables.values()
        ]
        flat: dict[tuple, Any] = {}
        for tree in states:
            flat.update(_flatten(tree))
        current = dict(state(module).flat_state())
        unknown = [p for p in flat if p not in current]
        if unknown:
            warnings.warn(
                "Found unknown module paths in incoming state:"
                + "".join(f"\n  - {'/'.join(map(str, p))}" for p in unknown),
                stacklevel=2,
            )
        update(
            module,
            State.from_flat_state({p: v for p, v in flat.items() if p in current}),
        )
        out = _method(module, nnx_method)(module, *args, **kwargs)
        self._update_variables(module)
        return out

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("_"):
                raise
            kwargs = self.__dict__.get("kwargs") or {}
            if name in kwargs:
                return kwargs[name]
            method = getattr(self.__dict__.get("nnx_class"), name, None)
            if not callable(method):
                raise
            # another method of the nnx module: ``to_linen(nnx.Embed, ...).attend``
            return functools.partial(self.__call__, nnx_method=method)

    def _update_variables(self, module: Module) -> None:
        by_col: dict[str, dict[tuple, Any]] = {}
        for path, v in state(module, Not(RngState)).flat_state():
            col = variable_name_from_type(type(v), allow_register=True)
            value = self.metadata_fn(v) if self.metadata_fn is not None else v.value
            by_col.setdefault(col, {})[path] = value
        for col, flat in by_col.items():
            if self.is_mutable_collection(col):
                for k, v in _unflatten(flat).items():
                    self.put_variable(col, k, v)


def to_linen(
    nnx_class: Callable[..., Module],
    *args: Any,
    metadata_fn: Callable[[Variable], Any] | None = to_linen_var,
    name: str | None = None,
    skip_rng: bool = False,
    abstract_init: bool = True,
    **kwargs: Any,
) -> ToLinen:
    """``ToLinen(nnx_class, args=args, kwargs=kwargs)``."""
    return ToLinen(
        nnx_class,
        args=args,
        kwargs=FrozenDict(kwargs),
        metadata_fn=metadata_fn,
        skip_rng=skip_rng,
        name=name,
    )


class _Missing:
    """An argument not given (``name``/``parent`` keep the Linen defaults)."""


_MISSING = _Missing()


def _partial_init(
    base_nnx_class: type[Module],
    base_metadata_fn: Callable[[Variable], Any] | None,
    base_skip_rng: bool,
    partial_kwargs: Mapping[str, Any],
) -> Callable[..., None]:
    def __init__(  # noqa: N807 - becomes the class's __init__
        self: ToLinen,
        args: Any = None,
        kwargs: Mapping[str, Any] | None = None,
        nnx_class: Callable[..., Module] | None = None,
        skip_rng: bool | None = None,
        metadata_fn: Callable[[Variable], Any] | None = None,
        name: Any = _MISSING,
        parent: Any = _MISSING,
        **other_kwargs: Any,
    ) -> None:
        linen_kwargs = {
            k: v for k, v in (("name", name), ("parent", parent)) if v is not _MISSING
        }
        ToLinen.__init__(
            self,
            nnx_class=nnx_class or base_nnx_class,
            args=args or (),
            kwargs=FrozenDict({**partial_kwargs, **(kwargs or {}), **other_kwargs}),
            skip_rng=skip_rng or base_skip_rng,
            metadata_fn=metadata_fn or base_metadata_fn,
            **linen_kwargs,
        )

    return __init__


def to_linen_class(
    base_nnx_class: type[M],
    base_metadata_fn: Callable[[Variable], Any] | None = to_linen_var,
    base_skip_rng: bool = False,
    **partial_kwargs: Any,
) -> type[ToLinen]:
    """A Linen module class wrapping ``base_nnx_class``: its instances (and
    those of its subclasses) take the nnx module's constructor keywords
    directly, over ``partial_kwargs``; ``args``, ``kwargs``, ``skip_rng``,
    ``metadata_fn``, ``name`` and ``parent`` are :class:`ToLinen`'s.

    (flax.nnx's instances only accept them in a subclass of the class.)

    >>> import jax, jax.numpy as jnp
    >>> from lens import nnx
    >>> from lens.nnx.bridge.wrappers import to_linen_class
    >>> LinenLinear = to_linen_class(nnx.Linear, in_features=3)
    >>> layer = LinenLinear(out_features=4)
    >>> layer.init(jax.random.key(0), jnp.ones((1, 3)))["params"]["kernel"].shape
    (3, 4)
    """
    init = _partial_init(
        base_nnx_class, base_metadata_fn, base_skip_rng, partial_kwargs
    )

    class ToLinenPartial(ToLinen):
        """A :class:`ToLinen` of one nnx module class with default constructor
        keywords, made by :func:`to_linen_class`."""

        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)
            cls.__init__ = init  # type: ignore[method-assign]

    ToLinenPartial.__init__ = init  # type: ignore[method-assign]
    return ToLinenPartial
