"""``Module``: the Linen-compatible module lifecycle.

A module is a dataclass that describes a computation; it holds no variables until it
is *bound* to a :class:`~lens.core.Scope` (by ``init``/``apply``/``bind``, or by
being created inside a bound parent). ``setup`` runs lazily on a bound module;
``@compact`` methods create submodules inline. Submodules are named ``ClassName_N``
in compact methods and by attribute name in ``setup``.

Beyond Linen, ``declare()`` runs on construction, before binding, and may only
create submodules: they are inspectable (and applicable) on an unbound module, e.g.
``autoencoder.decoder.apply(decoder_variables, z)``. ``setup`` keeps its meaning.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import jax

from lens import errors
from lens.core import _meta
from lens.core._filters import DenyList, Filter
from lens.core._scope import Scope, Variable
from lens.core._scope import apply as core_apply
from lens.core._scope import bind as core_bind

T = TypeVar("T")
M = TypeVar("M", bound="Module")

RESERVED = {"parent", "name", "scope", "variables", "path", "setup", "declare"}


class _Unspecified:
    def __repr__(self) -> str:
        return "_unspecified_parent"


_unspecified_parent: Any = _Unspecified()


# ---------------------------------------------------------------------- context


class _Context(threading.local):
    def __init__(self) -> None:
        self.module_stack: list[Module | None] = [None]
        self.interceptors: list[Callable[..., Any]] = []


_context = _Context()


@dataclasses.dataclass
class InterceptorContext:
    """What an interceptor of :func:`intercept_methods` is told about a call."""

    module: Module
    method_name: str
    orig_method: Callable[..., Any]


@typing.no_type_check
def intercept_methods(interceptor: Callable[..., Any]) -> Any:
    """Registers ``interceptor(next_fun, args, kwargs, context)`` for module method calls.

    Use as a context manager. Interceptors nest; the innermost runs first.
    """
    import contextlib

    @contextlib.contextmanager
    def manager() -> Iterator[None]:
        _context.interceptors.append(interceptor)
        try:
            yield
        finally:
            _context.interceptors.remove(interceptor)

    return manager()


# -------------------------------------------------------------------- decorators


def compact(fun: Callable[..., T]) -> Callable[..., T]:
    """Marks the method in which submodules and variables may be defined inline."""
    fun.compact = True  # type: ignore[attr-defined]
    return fun


def nowrap(fun: Callable[..., T]) -> Callable[..., T]:
    """Marks a method that lens should not wrap (helpers called from setup, ...)."""
    fun.nowrap = True  # type: ignore[attr-defined]
    return fun


# ------------------------------------------------------------------------ state


class _State:
    __slots__ = (
        "in_setup",
        "setup_called",
        "in_compact",
        "cursor",
        "children",
        "declared",
        "adopted",
    )

    def __init__(self) -> None:
        self.in_setup = False
        self.setup_called = False
        self.in_compact = False
        self.cursor: dict[str, int] = {}
        self.children: dict[str, Any] = {}
        self.declared: dict[str, Any] | None = None
        self.adopted: dict[int, Module] = {}


def _map_submodules(
    value: Any, fn: Callable[[Module, str], Module], prefix: str
) -> Any:
    """Applies ``fn(module, name)`` to modules in ``value`` (module/list/tuple/dict)."""
    if isinstance(value, Module):
        return fn(value, prefix)
    if isinstance(value, list | tuple) and any(isinstance(v, Module) for v in value):
        out = [_map_submodules(v, fn, f"{prefix}_{i}") for i, v in enumerate(value)]
        return (
            type(value)(out)
            if isinstance(value, tuple) and not hasattr(value, "_fields")
            else out
        )
    if isinstance(value, dict) and any(isinstance(v, Module) for v in value.values()):
        return {k: _map_submodules(v, fn, f"{prefix}_{k}") for k, v in value.items()}
    return value


def _wrap_method(name: str, fun: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fun)
    def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
        if _context.interceptors:
            return _intercepted(self, name, fun, args, kwargs)
        return self._call_wrapped(name, fun, args, kwargs)

    wrapped._lens_wrapped = True  # type: ignore[attr-defined]
    wrapped._lens_orig = fun  # type: ignore[attr-defined]
    return wrapped


def _intercepted(
    self: Module, name: str, fun: Callable[..., Any], args: tuple, kwargs: dict
) -> Any:
    chain = list(_context.interceptors)

    def run(i: int, args: tuple, kwargs: dict) -> Any:
        if i < 0:
            return self._call_wrapped(name, fun, args, kwargs)
        ctx = InterceptorContext(self, name, fun)
        return chain[i](lambda *a, **k: run(i - 1, a, k), args, kwargs, ctx)

    return run(len(chain) - 1, args, kwargs)


# ----------------------------------------------------------------------- Module


@typing.dataclass_transform(field_specifiers=(dataclasses.field,))
class Module:
    """Base class of all modules (like ``flax.linen.Module``).

    Subclasses are dataclasses: annotated class attributes are construction
    attributes, followed by the keyword-only ``parent`` and ``name``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> class MLP(nn.Module):
        ...     hidden: int
        ...     @nn.compact
        ...     def __call__(self, x):
        ...         h = nn.relu(nn.Dense(self.hidden)(x))  # Dense_0
        ...         return nn.Dense(1)(h)                  # Dense_1
        >>> variables = MLP(4).init(jax.random.key(0), jnp.ones((1, 2)))
        >>> jax.tree.map(jnp.shape, variables)["params"]["Dense_0"]
        {'bias': (4,), 'kernel': (2, 4)}
    """

    if typing.TYPE_CHECKING:
        parent: Module | Scope | None
        name: str | None
        scope: Scope | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        bad = RESERVED & set(own)
        if bad:
            raise errors.ReservedModuleAttributeError(
                f"{cls.__name__} declares field(s) {sorted(bad)}, which lens reserves.\n"
                "Rename them (e.g. name -> label)."
            )
        compacts = [n for n, f in _own_methods(cls) if getattr(f, "compact", False)]
        inherited = [n for n in _compact_names(cls) if n not in compacts]
        if len(compacts) + len(inherited) > 1:
            raise errors.MultipleMethodsCompactError(
                f"{cls.__name__} has more than one @compact method: {compacts + inherited}.\n"
                "Only one method may be @compact; move the others' submodules into it or setup()."
            )
        if (compacts or inherited) and _defines_setup(cls):
            raise errors.MultipleMethodsCompactError(
                f"{cls.__name__} has both setup() and a @compact method ({(compacts + inherited)[0]}).\n"
                "Define submodules either in setup() or inline in one @compact method."
            )
        # Keyword-only parent and name come after the user's fields.
        annotations = dict(own)
        if "parent" not in _all_field_names(cls):
            annotations["parent"] = Any
            annotations["name"] = Any
            cls.parent = dataclasses.field(
                default=_unspecified_parent, kw_only=True, repr=False, compare=False
            )  # type: ignore[assignment]
            cls.name = dataclasses.field(default=None, kw_only=True)  # type: ignore[assignment]
        cls.__annotations__ = annotations
        dataclasses.dataclass(
            cls, eq=True, unsafe_hash="__hash__" not in cls.__dict__, repr=False
        )  # type: ignore[call-overload]
        for name, fun in _own_methods(cls):
            if getattr(fun, "nowrap", False) or getattr(fun, "_lens_wrapped", False):
                continue
            setattr(cls, name, _wrap_method(name, fun))

    # ------------------------------------------------------------- construction

    def __post_init__(self) -> None:
        object.__setattr__(self, "_state", _State())
        object.__setattr__(self, "scope", None)
        if self.parent is _unspecified_parent:
            object.__setattr__(self, "parent", _context.module_stack[-1])
        parent = self.parent
        if isinstance(parent, Scope):
            object.__setattr__(self, "scope", parent)
        elif isinstance(parent, Module):
            if parent.scope is None:
                # Created inside an unbound module (declare(), or a dataclass field):
                # stays unbound, adopted when the parent binds.
                object.__setattr__(self, "parent", None)
            elif parent._state.in_setup:
                if self.name is not None:
                    parent._bind_child(self, self.name)
            elif parent._state.in_compact:
                if self.name is None:
                    prefix = type(self).__name__
                    n = parent._state.cursor.get(prefix, 0)
                    parent._state.cursor[prefix] = n + 1
                    object.__setattr__(self, "name", f"{prefix}_{n}")
                parent._bind_child(self, self.name)
            else:
                raise errors.AssignSubModuleError(
                    type(self).__name__, type(parent).__name__
                )
        declare = type(self).declare
        if declare is not Module.declare and self.scope is None:
            self._run_declare()

    def _bind_child(self, child: Module, name: str) -> None:
        """Binds ``child`` under ``name`` in this (bound) module."""
        scope = self.scope
        assert scope is not None
        if name in self._state.children:
            raise errors.NameInUseError("submodule", name, scope.path)
        object.__setattr__(child, "parent", self)
        object.__setattr__(child, "name", name)
        object.__setattr__(child, "scope", scope.push(name))
        self._state.children[name] = child
        child._adopt_fields()

    def _adopt(self, value: Any, attr: str) -> Any:
        """Binds the unbound modules found in ``value`` as children named after ``attr``."""

        def adopt(m: Module, name: str) -> Module:
            if m.scope is not None:
                return m  # already bound elsewhere: shared
            key = id(m)
            hit = self._state.adopted.get(key)
            if hit is not None:
                return hit
            if m.parent is self and m.name is None:
                clone = m
            else:
                clone = m.clone(parent=None, name=None)
                object.__setattr__(clone, "parent", self)
            self._bind_child(clone, name)
            self._state.adopted[key] = clone
            return clone

        return _map_submodules(value, adopt, attr)

    def _adopt_fields(self) -> None:
        for f in dataclasses.fields(self):
            if f.name in ("parent", "name") or not f.init:
                continue
            value = getattr(self, f.name)
            new = self._adopt(value, f.name)
            if new is not value:
                object.__setattr__(self, f.name, new)

    # ----------------------------------------------------------- declare/setup

    def declare(self) -> None:
        """Declares submodules at construction, before the module is bound.

        Unlike ``setup``, it runs on unbound modules, so its submodules can be
        inspected (``autoencoder.decoder``) and applied on their own. It may only
        create submodules and plain attributes, not variables.
        """

    def setup(self) -> None:
        """Creates submodules and variables; runs lazily once the module is bound."""

    def _run_declare(self) -> None:
        state = self._state
        state.declared = {}
        state.in_setup = True
        _context.module_stack.append(self)
        try:
            self.declare()
        finally:
            _context.module_stack.pop()
            state.in_setup = False

    def _try_setup(self) -> None:
        state = self._state
        if state.setup_called or state.in_setup or self.scope is None:
            return
        state.in_setup = True
        _context.module_stack.append(self)
        try:
            self._adopt_fields()
            if type(self).declare is not Module.declare:
                self.declare()  # bound now: its submodules are adopted as in setup
            self.setup()
        finally:
            _context.module_stack.pop()
            state.in_setup = False
        state.setup_called = True

    def __setattr__(self, attr: str, value: Any) -> None:
        state = self.__dict__.get("_state")
        if state is None or attr.startswith("_lens"):
            object.__setattr__(self, attr, value)
            return
        if not state.in_setup:
            raise errors.SetAttributeFrozenModuleError(
                type(self).__name__, attr, self._path_text()
            )
        if self.scope is None:
            if state.declared is None:
                raise errors.SetAttributeFrozenModuleError(
                    type(self).__name__, attr, self._path_text()
                )
            state.declared[attr] = value
            object.__setattr__(self, attr, value)
            return
        object.__setattr__(self, attr, self._adopt(value, attr))

    def __getattr__(self, attr: str) -> Any:
        # Only called when normal lookup fails: run setup lazily, then look again.
        # Protocol lookups (IPython's _repr_html_, _ipython_display_, ...) must never
        # run setup: displays do not run user code.
        if attr.startswith(("__", "_repr_", "_ipython_")) or attr in (
            "_state",
            "scope",
        ):
            raise AttributeError(attr)
        state = self.__dict__.get("_state")
        if (
            state is not None
            and self.__dict__.get("scope") is not None
            and not state.setup_called
        ):
            self._try_setup()
            if attr in self.__dict__:
                return self.__dict__[attr]
        msg = f"{type(self).__name__!r} object has no attribute {attr!r}"
        if self.__dict__.get("scope") is None and _defines_setup(type(self)):
            msg += (
                ". The module is unbound, so setup() has not run; bind it "
                "(m.bind(variables)) or use init/apply, or assign submodules in "
                "declare() to inspect them unbound."
            )
        raise AttributeError(msg)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.__dict__))

    # ------------------------------------------------------------- method calls

    def _call_wrapped(
        self, name: str, fun: Callable[..., Any], args: tuple, kwargs: dict
    ) -> Any:
        is_compact = getattr(fun, "compact", False)
        scope = self.scope
        if scope is None:
            if is_compact or _defines_setup(type(self)):
                raise errors.CallCompactUnboundModuleError(type(self).__name__, name)
            return fun(self, *args, **kwargs)
        state = self._state
        if not state.setup_called:
            self._try_setup()
        outer = is_compact and not state.in_compact
        if outer:
            state.in_compact = True
            state.cursor = {}
            state.children = {}
            object.__setattr__(self, "scope", scope.rewound())
        _context.module_stack.append(self)
        try:
            y = fun(self, *args, **kwargs)
        finally:
            _context.module_stack.pop()
            if outer:
                state.in_compact = False
        capture = self.scope.get_flag("capture_intermediates", False)  # type: ignore[union-attr]
        if capture and (
            capture is True
            and name == "__call__"
            or callable(capture)
            and capture(self, name)
        ):
            self.sow("intermediates", name, y)
        return y

    # --------------------------------------------------------------- variables

    def _require_scope(self, what: str) -> Scope:
        if self.scope is None:
            raise errors.CallCompactUnboundModuleError(type(self).__name__, what)
        return self.scope

    def param(
        self,
        name: str,
        init_fn: Callable[..., T],
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> T:
        """Declares and returns parameter ``name`` (see :meth:`lens.core.Scope.param`)."""
        scope = self._require_scope("param")
        return scope.param(name, init_fn, *init_args, unbox=unbox, **init_kwargs)

    def variable(
        self,
        col: str,
        name: str,
        init_fn: Callable[..., T] | None = None,
        *init_args: Any,
        unbox: bool = True,
        **init_kwargs: Any,
    ) -> Variable[T]:
        """Declares and returns variable ``name`` of collection ``col``."""
        scope = self._require_scope("variable")
        return scope.variable(
            col, name, init_fn, *init_args, unbox=unbox, **init_kwargs
        )

    def get_variable(
        self, col: str, name: str, default: Any = None, unbox: bool = True
    ) -> Any:
        """The value of a variable, or ``default``."""
        return self._require_scope("get_variable").get_variable(
            col, name, default, unbox=unbox
        )

    def put_variable(self, col: str, name: str, value: Any) -> None:
        """Writes a variable (its collection must be mutable)."""
        self._require_scope("put_variable").put_variable(col, name, value)

    def has_variable(self, col: str, name: str) -> bool:
        """Whether a variable exists."""
        return self._require_scope("has_variable").has_variable(col, name)

    def make_rng(self, name: str = "params") -> Any:
        """A new key from rng stream ``name``."""
        return self._require_scope("make_rng").make_rng(name)

    def has_rng(self, name: str) -> bool:
        """Whether rng stream ``name`` is available."""
        return self._require_scope("has_rng").has_rng(name)

    def is_mutable_collection(self, col: str) -> bool:
        """Whether collection ``col`` may be written."""
        return self._require_scope("is_mutable_collection").is_mutable_collection(col)

    def is_initializing(self) -> bool:
        """True inside ``init``."""
        return bool(
            self._require_scope("is_initializing").get_flag("initializing", False)
        )

    def sow(
        self,
        col: str,
        name: str,
        value: Any,
        reduce_fn: Callable[[Any, Any], Any] = lambda xs, x: xs + (x,),
        init_fn: Callable[[], Any] = lambda: (),
    ) -> bool:
        """Stores ``value`` in collection ``col`` (by default appending to a tuple).

        Returns False (and stores nothing) when ``col`` is not mutable.
        """
        scope = self._require_scope("sow")
        if not scope.is_mutable_collection(col):
            return False
        if scope.has_variable(col, name):
            xs = scope.get_variable(col, name, unbox=False)
        else:
            scope.reserve(name, col)
            xs = init_fn()
        scope.put_variable(col, name, reduce_fn(xs, value))
        return True

    def perturb(self, name: str, value: Any, collection: str = "perturbations") -> Any:
        """Adds a zero "perturbation" variable to ``value`` (its gradient is ``dvalue``)."""
        scope = self._require_scope("perturb")
        if scope.is_mutable_collection(collection) or scope.has_variable(
            collection, name
        ):
            z = self.variable(
                collection, name, lambda: jax.numpy.zeros_like(value)
            ).value
            return value + z
        return value

    @property
    def variables(self) -> dict[str, Any]:
        """The variables of this module, ``{collection: tree}`` (a copy)."""
        scope = self._require_scope("variables")
        return {c: _meta_copy(d) for c, d in scope.variables().items()}

    @property
    def path(self) -> tuple[str, ...]:
        """The scope path of this (bound) module."""
        return self._require_scope("path").path

    def _path_text(self) -> str:
        scope = self.__dict__.get("scope")
        return scope.path_text if scope is not None else "(unbound)"

    # ----------------------------------------------------------------- cloning

    def clone(
        self: M, *, parent: Any = None, _deep_clone: bool | dict = False, **updates: Any
    ) -> M:
        """A new module from this one's construction attributes (with ``updates``)."""
        attrs = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.init and f.name != "parent"
        }
        if _deep_clone is not False:
            # One clone per distinct instance: a module shared by fields stays shared.
            memo: dict[int, Module] = (
                _deep_clone if isinstance(_deep_clone, dict) else {}
            )

            def deep(m: Module, _: str) -> Module:
                if m.scope is not None:
                    return m
                if id(m) not in memo:
                    memo[id(m)] = m.clone(_deep_clone=memo)
                return memo[id(m)]

            for k, v in attrs.items():
                attrs[k] = _map_submodules(v, deep, k)
        attrs.update(updates)
        return type(self)(parent=parent, **attrs)

    def __copy__(self: M) -> M:
        return self.clone(parent=self.parent)

    # ------------------------------------------------------------ init / apply

    def _resolve_method(self, method: Any) -> Callable[..., Any]:
        if method is None:
            method = "__call__"
        if isinstance(method, str):
            fun = getattr(type(self), method, None)
            if fun is None or not callable(fun):
                raise errors.ApplyModuleInvalidMethodError(
                    f'{type(self).__name__} has no method "{method}".\nPass the name of a '
                    "method, a function f(module, *args), or a method of a submodule."
                )
            return fun
        if inspect.ismethod(method) and isinstance(method.__self__, Module):
            owner, func = method.__self__, method.__func__
            if owner is self:
                return func
            path = _find_submodule(self, owner)
            if path is None:
                raise errors.ApplyModuleInvalidMethodError(
                    f"method= is a method of {type(owner).__name__}, which is not a submodule "
                    f"of {type(self).__name__} reachable unbound (declare() or fields).\nPass "
                    "lambda m, *a: m.<submodule>.<method>(*a) instead."
                )
            return lambda bound, *a, **k: func(_follow(bound, path), *a, **k)
        if callable(method):
            return method
        raise errors.ApplyModuleInvalidMethodError(
            f"method= must be a method name, a function or a bound method, got {method!r}."
        )

    def init_with_output(
        self,
        rngs: Any,
        *args: Any,
        method: Any = None,
        mutable: Filter = DenyList("intermediates"),
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> tuple[Any, dict[str, Any]]:
        """Initializes the variables and returns ``(output, variables)``."""
        from lens.core._scope import _check_rngs

        rngs = _check_rngs(rngs)
        if "params" not in rngs:
            raise errors.InvalidRngError(
                "params", (), 'init needs a "params" key: init(jax.random.key(0), ...).'
            )
        fun = self._resolve_method(method)
        flags = {"initializing": True, "capture_intermediates": capture_intermediates}

        def scope_fn(scope: Scope, *args: Any, **kwargs: Any) -> Any:
            return fun(self.clone(parent=scope, _deep_clone=True), *args, **kwargs)

        return core_apply(scope_fn, mutable=mutable, flags=flags)(
            {}, *args, rngs=rngs, **kwargs
        )

    def init(
        self,
        rngs: Any,
        *args: Any,
        method: Any = None,
        mutable: Filter = DenyList("intermediates"),
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Initializes and returns the variables ``{collection: tree}``.

        ``rngs`` is a key (the ``'params'`` stream) or a dict of keys.
        """
        _, v = self.init_with_output(
            rngs,
            *args,
            method=method,
            mutable=mutable,
            capture_intermediates=capture_intermediates,
            **kwargs,
        )
        return v

    def lazy_init(
        self,
        rngs: Any,
        *args: Any,
        method: Any = None,
        mutable: Filter = DenyList("intermediates"),
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The variables' shapes and dtypes (``jax.ShapeDtypeStruct``), without computing.

        Arguments may be ``jax.ShapeDtypeStruct``; keyword arguments are static.
        """

        def f(rngs: Any, *args: Any) -> Any:
            return self.init(rngs, *args, method=method, mutable=mutable, **kwargs)

        return jax.eval_shape(f, rngs, *args)

    def apply(
        self,
        variables: Mapping[str, Any],
        *args: Any,
        rngs: Any = None,
        method: Any = None,
        mutable: Filter = False,
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> Any:
        """Runs ``method`` (``__call__``) with ``variables``.

        Returns the output, or ``(output, mutated_collections)`` when ``mutable``.
        """
        fun = self._resolve_method(method)
        flags = (
            {"capture_intermediates": capture_intermediates}
            if capture_intermediates
            else None
        )

        def scope_fn(scope: Scope, *args: Any, **kwargs: Any) -> Any:
            return fun(self.clone(parent=scope, _deep_clone=True), *args, **kwargs)

        return core_apply(scope_fn, mutable=mutable, flags=flags)(
            variables, *args, rngs=rngs, **kwargs
        )

    def bind(
        self: M,
        variables: Mapping[str, Any],
        *args: Any,
        rngs: Any = None,
        mutable: Filter = False,
    ) -> M:
        """A bound clone with an unlimited lifetime (for notebooks and debugging)."""
        del args
        scope = core_bind(variables, rngs=rngs, mutable=mutable)
        return self.clone(parent=scope, _deep_clone=True)

    def unbind(self: M) -> tuple[M, dict[str, Any]]:
        """Returns ``(unbound clone, variables)`` of a bound module."""
        variables = self.variables
        return self.clone(parent=None, _deep_clone=True), variables

    # -------------------------------------------------------------- displays

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        from lens.display import ModuleView

        return ModuleView(self)._repr_mimebundle_()

    def __rich__(self) -> Any:
        from lens.display import ModuleView

        return ModuleView(self).__rich__()

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from lens.display import ModuleView

        return ModuleView(self).__treescope_repr__(path, subtree_renderer)

    # ------------------------------------------------------------------ repr

    def __repr__(self) -> str:
        fields = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if f.repr
            and f.name != "parent"
            and not (f.name == "name" and self.name is None)
        ]
        return f"{type(self).__name__}({', '.join(fields)})"

    def tabulate(
        self,
        rngs: Any,
        *args: Any,
        depth: int | None = None,
        show_repeated: bool = False,
        mutable: Filter = DenyList("intermediates"),
        console_kwargs: Mapping[str, Any] | None = None,
        table_kwargs: Mapping[str, Any] | None = None,
        column_kwargs: Mapping[str, Any] | None = None,
        compute_flops: bool = False,
        compute_vjp_flops: bool = False,
        **kwargs: Any,
    ) -> str:
        """A table of submodules, input/output shapes and variables per collection.

        Returns a ``str`` (print it) that renders as an HTML table in notebooks.
        """
        from lens.nn._summary import tabulate

        return tabulate(
            self,
            rngs,
            depth=depth,
            show_repeated=show_repeated,
            mutable=mutable,
            console_kwargs=console_kwargs,
            table_kwargs=table_kwargs,
            column_kwargs=column_kwargs,
            compute_flops=compute_flops,
            compute_vjp_flops=compute_vjp_flops,
        )(*args, **kwargs)


# ---------------------------------------------------------------------- helpers


def _meta_copy(d: Any) -> Any:
    if isinstance(d, Mapping):
        return {k: _meta_copy(v) for k, v in d.items()}
    return d


def _own_methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for name, value in cls.__dict__.items():
        if not inspect.isfunction(value):
            continue
        if name.startswith("__") and name != "__call__":
            continue
        if name in ("setup", "declare") or name.startswith("_lens"):
            continue
        out.append((name, value))
    return out


def _compact_names(cls: type) -> list[str]:
    names = []
    for klass in cls.__mro__[1:]:
        if klass is Module or not issubclass(klass, Module):
            continue
        for name, value in klass.__dict__.items():
            orig = getattr(value, "_lens_orig", value)
            if (
                getattr(orig, "compact", False)
                and name not in names
                and name not in cls.__dict__
            ):
                names.append(name)
    return names


def _defines_setup(cls: type) -> bool:
    return any(
        "setup" in k.__dict__
        for k in cls.__mro__
        if k is not Module and issubclass(k, Module)
    )


def _all_field_names(cls: type) -> set[str]:
    return {f.name for f in getattr(cls, "__dataclass_fields__", {}).values()}


def _find_submodule(root: Module, target: Module) -> tuple[str, ...] | None:
    """Attribute path from ``root`` to ``target`` through fields and declare()."""
    seen: set[int] = set()

    def visit(m: Module, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if id(m) in seen:
            return None
        seen.add(id(m))
        attrs = {
            f.name: getattr(m, f.name)
            for f in dataclasses.fields(m)
            if f.init and f.name not in ("parent", "name")
        }
        attrs.update(m._state.declared or {})
        for k, v in attrs.items():
            if v is target:
                return path + (k,)
            if isinstance(v, Module):
                p = visit(v, path + (k,))
                if p is not None:
                    return p
        return None

    return visit(root, ())


def _follow(module: Module, path: tuple[str, ...]) -> Module:
    for p in path:
        module = getattr(module, p)
    return module


def share_scope(module: Module, other: Module) -> None:
    """Makes ``other`` use ``module``'s scope, so they share variables.

    Call it in ``setup`` (or a compact method) of the parent of both.
    """
    if module.scope is None or other.scope is None:
        raise errors.CallCompactUnboundModuleError(type(other).__name__, "share_scope")
    object.__setattr__(other, "scope", module.scope)


def _unbox_if(value: Any, unbox: bool) -> Any:
    return _meta.unbox(value) if unbox else value
