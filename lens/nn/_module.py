"""``Module``: the Linen module lifecycle.

A module is a dataclass that describes a computation; it holds no variables until
it is *bound* to a :class:`~lens.core.Scope` (by ``init``/``apply``/``bind``, or by
being created inside a bound parent). ``setup`` runs lazily on a bound module;
``@compact`` methods create submodules inline. Submodules are named
``ClassName_N`` in compact methods and after their attribute in ``setup``.
Construction, naming, adoption of modules passed as attributes, cloning and the
errors follow ``flax.linen.Module``.

Beyond Linen, ``declare()`` runs on construction, before binding, and may only
create submodules: they are inspectable (and applicable) on an unbound module, e.g.
``autoencoder.decoder.apply(decoder_variables, z)``. ``setup`` keeps its meaning.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.core import trace_ctx as _trace_ctx

from lens import _strict, errors
from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict
from lens._instruments import module_scopes
from lens.configurations import config
from lens.core import Scope
from lens.nn import _context, kw_only_dataclasses
from lens.nn import _module_strict as module_strict
from lens.nn._hyperparameters import check_hyperparameters, class_rules
from lens.nn._module_class import (
    check_single_compact_owner,
    compact_name_scope_methods,
    make_dataclass,
    wrap_module_attributes,
)
from lens.nn._module_entry import ModuleEntryPoints
from lens.nn._module_support import (
    ParentDescriptor,
    SetupState,
    _get_fn_name,
    _ModuleInternalState,
    _uninitialized_module_internal_state,
    _unspecified_parent,
    compact,
    run_interceptors,
    uuid,
    wrap_method_once,
)
from lens.nn._module_tree import (
    _freeze_attr,
    _map_over_modules_in_tree,
    module_repr,
)
from lens.nn._module_vars import ModuleVariables

T = TypeVar("T")
K = TypeVar("K")
M = TypeVar("M", bound="Module")

_UNDEFINED_COPY_PICKLE_METHODS = (
    "__getstate__",
    "__setstate__",
    "__getnewargs_ex__",
    "__reduce__",
    "__reduce_ex__",
    "__copy__",
    "__deepcopy__",
)

# Per root scope: the clones made when adopting modules passed from outside, by
# the outside module's id, so that one shared module stays one module.
_caches: weakref.WeakKeyDictionary[Scope, weakref.WeakValueDictionary[Any, Module]] = (
    weakref.WeakKeyDictionary()
)


class TestScope(Scope):
    """A scope whose ``make_rng`` needs no stream (used to dry-run ``setup``)."""

    __slots__ = ()

    def make_rng(self, name: str = "params") -> Any:
        return jax.random.key(0)


# Attribute values that cannot hold a module or a container to freeze: most
# dataclass fields (features, dtypes, initializers), skipped without a tree walk.
_PLAIN_LEAVES = frozenset(
    {
        int,
        float,
        bool,
        str,
        bytes,
        complex,
        type(None),
        type,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        functools.partial,
        np.dtype,
        type(jnp.float32),
        jax.custom_jvp,
        jax.custom_vjp,
    }
)


def _is_declared(cls: type) -> bool:
    # Module.declare itself is never wrapped; a subclass's (or a mixin's) is
    # another function: the class attribute tells without walking the MRO.
    return cls.declare is not _MODULE_DECLARE  # type: ignore[attr-defined]


def _strict_on() -> bool:
    """``_strict.enabled()``, inlined into the hot paths below."""
    override = _strict_override.get()
    return bool(config._values["lens_strict"]) if override is None else override


_strict_override = _strict._override


class _ClassInfo:
    """What every instance of one Module class shares, computed once per class
    (and again if its dataclass fields are rebuilt): the construction fields to
    register, whether their values can be read from ``__dict__`` directly, and
    the hyperparameter rules of the class and its bases."""

    __slots__ = ("cls", "fields", "init_fields", "direct", "hyper")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.fields = cls.__dict__.get("__dataclass_fields__")
        self.init_fields = tuple(
            f.name
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.name not in ("parent", "name") and f.init
        )
        # Reading a field from the instance __dict__ is what getattr does unless
        # a data descriptor or __getattribute__ intervenes; writing it back
        # unchanged is a no-op unless __setattr__ is overridden.
        self.direct = (
            cls.__getattribute__ is object.__getattribute__  # type: ignore[comparison-overlap]
            and cls.__setattr__ is Module.__setattr__  # type: ignore[comparison-overlap]
            and not any(_data_descriptor(cls, n) for n in self.init_fields)
        )
        self.hyper = class_rules(cls)


def _data_descriptor(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            kind = type(klass.__dict__[name])
            return hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    return False


def _class_info(cls: type) -> _ClassInfo:
    info = cls.__dict__.get("_lens_class_info")
    if info is None or info.fields is not cls.__dict__.get("__dataclass_fields__"):
        info = _ClassInfo(cls)
        type.__setattr__(cls, "_lens_class_info", info)
    return info


_MISSING = object()


def _top_level() -> bool:
    """No trace is running: calls execute eagerly (``core.trace_ctx``)."""
    return _trace_ctx.is_top_level()


# What setup stores for a class without @compact_name_scope methods (immutable).
_EMPTY_SCOPES = FrozenDict()


@typing.dataclass_transform(field_specifiers=(kw_only_dataclasses.field,))
class _DataclassModule(ModuleEntryPoints, ModuleVariables):
    """Tells type checkers that modules are dataclasses (PEP 681).

    ``Module`` derives from it, so its ``name`` and ``parent`` below are
    keyword-only fields of every module's ``__init__`` for pyright and mypy.
    At run time ``Module.__init_subclass__`` makes each subclass a dataclass.
    """


class Module(_DataclassModule):
    """Base class of all modules (``flax.linen.Module``).

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
        name: str | None = kw_only_dataclasses.field(kw_only=True, default=None)
        parent: Module | Scope | None = kw_only_dataclasses.field(
            kw_only=True, default=None
        )
        scope: Scope | None = kw_only_dataclasses.field(init=False, default=None)
        _state: _ModuleInternalState = kw_only_dataclasses.field(init=False)

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    # ------------------------------------------------------------ class creation

    def __init_subclass__(cls, kw_only: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        make_dataclass(cls, kw_only, Module.__setattr__)
        cls._compact_name_scope_methods = compact_name_scope_methods(cls)
        wrap_module_attributes(cls)
        cls._state = _uninitialized_module_internal_state  # type: ignore[assignment]
        cls.scope = None  # type: ignore[assignment]
        cls._parent_ref = None  # type: ignore[attr-defined]
        cls.parent = ParentDescriptor()  # type: ignore[assignment]

    # ------------------------------------------------------------- method calls

    def _call_wrapped_method(
        self, fun: Callable[..., Any], args: tuple, kwargs: dict
    ) -> Any:
        is_compact = hasattr(fun, "compact")
        fun_name = (
            fun.__name__ if type(fun) is types.FunctionType else _get_fn_name(fun)
        )
        is_setup = fun_name == "setup"
        call_info = _context._call_info.get()
        add_call_info = not is_setup and bool(call_info)
        state = self._state
        scope = self.scope
        is_recurrent = False
        if is_setup:
            if scope is None:
                raise errors.CallSetupUnboundModuleError()
            is_recurrent = state.in_setup
            state.in_setup = True
        elif (
            scope is not None
            and not state.in_setup
            and state.setup_called != SetupState.DONE
        ):  # what _try_setup checks first
            self._try_setup()
            scope = self.scope
        if is_compact:
            if scope is None:
                raise errors.CallCompactUnboundModuleError(
                    type(self).__name__, fun_name
                )
            is_recurrent = state.in_compact_method
            state.in_compact_method = True
            if not is_recurrent:
                state.compact_method = fun_name
        stack = _context._module_stack
        token = stack.set(stack.get() + (self,))
        index = 0
        try:
            if add_call_info:
                index = call_info[-1].get_call_index()
            run = (
                functools.partial(run_interceptors, fun)
                if _context._interceptors.get()
                else fun
            )
            # lens.compile_time names the module's path (module_scopes.TRACING)
            marked = module_scopes.TRACING.get() and self.scope is not None
            named = _context._named_call.get()
            if named is None:  # _context.use_named_call()
                named = config._values["flax_profile"]
            # A name scope only names what is staged out (a trace's equations):
            # outside any trace (an eager notebook call) it would change nothing.
            # jax.jit resets the name stack when it traces, so a jit called here
            # eagerly sees none either way.
            if named and _top_level():
                named = False
            if marked or named:
                with jax.named_scope(
                    module_scopes.nn_scope(self.scope.path)  # type: ignore[union-attr]
                    if marked
                    else _profiling_name(self, fun)
                ):
                    y = run(self, *args, **kwargs)
            else:
                y = run(self, *args, **kwargs)
            capture = _context._capture_stack.get()
            if capture:
                filter_fn = capture[-1]
                if filter_fn and filter_fn(self, fun_name):
                    self.sow("intermediates", fun_name, y)
            if add_call_info:
                from lens.nn._summary import record_call

                record_call(call_info[-1], index, self, fun, args, kwargs, y)
            return y
        finally:
            stack.reset(token)
            if is_compact:
                object.__setattr__(self, "scope", self.scope.rewound())  # type: ignore[union-attr]
            if (is_compact or is_setup) and not is_recurrent:
                state.reset()

    # ---------------------------------------------------------- attributes

    def __setattr__(self, name: str, val: Any) -> None:
        """Assigning in ``setup`` names submodules after the attribute."""
        state = self._state
        if state is _uninitialized_module_internal_state:
            # The dataclass __init__ (before __post_init__ gives the module a
            # state): the branch below, without its flag reads.
            if _strict_on() and not name.startswith("__"):
                module_strict.check_unbound_setattr(self, name, val)
            object.__setattr__(self, name, val)
            return
        if state.in_declare:
            object.__setattr__(self, name, val)
            return
        if not state.in_setup:
            if not state.is_initialized or name.startswith("__"):
                if _strict_on() and not name.startswith("__"):
                    module_strict.check_unbound_setattr(self, name, val)
                object.__setattr__(self, name, val)
                return
            raise errors.SetAttributeFrozenModuleError(type(self).__name__, name, val)
        fields = self.__dataclass_fields__  # type: ignore[attr-defined]
        if name in fields and fields[name].init:
            raise errors.SetAttributeInModuleSetupError()
        self._register_submodules(name, val)
        if _strict_on():
            module_strict.note_setup_submodule(self, name, val)

    def __getattr__(self, name: str) -> Any:
        """Runs ``setup`` (lazily) before looking up an attribute it may define."""
        if name in _UNDEFINED_COPY_PICKLE_METHODS:
            raise AttributeError(name)
        # Display protocols (IPython's _repr_html_, ...) never run user code.
        if not (name.startswith(("_repr_", "_ipython_")) or name.startswith("__")):
            self._try_setup()
            if name in self.__dict__:
                return self.__dict__[name]
        msg = f'"{type(self).__name__}" object has no attribute "{name}".'
        if self.scope is None:
            msg += (
                f" If \"{name}\" is defined in '.setup()', remember these fields are "
                "only accessible from inside 'init' or 'apply'."
            )
            if not name.startswith("_"):
                msg += (
                    " (lens: assign submodules in declare() to inspect them on an "
                    "unbound module, or bind it: m.bind(variables).)"
                )
        raise AttributeError(msg)

    def __dir__(self) -> list[str]:
        self._try_setup()
        return list(object.__dir__(self))

    # -------------------------------------------------------------- creation

    def __post_init__(self) -> None:
        cls = type(self)
        info = _class_info(cls)
        if info.hyper:
            check_hyperparameters(self, info.hyper)
        object.__setattr__(self, "_id", uuid())
        state = _ModuleInternalState()
        object.__setattr__(self, "_state", state)
        parent = self.parent
        if parent is _unspecified_parent:
            parent = _context._module_stack.get()[-1]
            object.__setattr__(self, "parent", parent)  # ParentDescriptor
        if parent is None:
            # Top level (or orphaned until adopted): bound later by init/apply/bind.
            if cls.declare is not _MODULE_DECLARE:  # type: ignore[attr-defined] # _is_declared
                self._run_declare()
            return
        if isinstance(parent, Module):
            pstate = parent._state
            if pstate.in_declare:
                # Created in an unbound parent's declare(): stays unbound until the
                # parent is bound (then declare() runs again as part of setup).
                object.__setattr__(self, "parent", None)
                return
            in_setup = pstate.in_setup
            if in_setup and self.name is None:
                return  # named when assigned to an attribute in setup
            if not (
                not pstate.is_initialized or in_setup or pstate.in_compact_method
            ):  # parent._initialization_allowed
                raise errors.AssignSubModuleError(
                    cls.__name__, parent=type(parent).__name__
                )
            if pstate.in_compact_method and not in_setup and _strict_on():
                module_strict.check_compact_child(parent, self)
            name = self.name
            if name is None:
                prefix = cls.__name__
                cursor = pstate.autoname_cursor.get(prefix, 0)
                name = f"{prefix}_{cursor}"
                if info.direct:  # what __setattr__ does here (strict: a no-op)
                    object.__setattr__(self, "name", name)
                else:
                    self.name = name
                    name = self.name
                pstate.autoname_cursor[prefix] = cursor + 1
                method = pstate.compact_method
                if (
                    method is not None
                    and pstate.autoname_owner.setdefault(name, method) != method
                ):
                    check_single_compact_owner(parent, name)  # raises
            reuse = in_setup and pstate.setup_called == SetupState.TRANSFORMED
            pscope = parent.scope
            assert pscope is not None  # what parent._name_taken asserts
            if not reuse and pscope.name_reserved(name, None):  # parent._name_taken
                raise errors.NameInUseError(
                    "submodule",
                    name,
                    type(parent).__name__,
                    path=pscope.debug_path,
                )
            pstate.children[name] = self
            object.__setattr__(self, "scope", pscope.push(name, reuse=reuse))
        elif isinstance(parent, Scope):
            object.__setattr__(self, "scope", parent)
        else:
            raise ValueError(
                f"parent must be None, Module or Scope, got {type(parent).__name__}.\n"
                f"Pass parent=None (a top-level {cls.__name__}) or leave it out."
            )
        if self.scope is not None:
            self._register_fields(info)
        state.is_initialized = True

    def __repr__(self) -> str:
        return module_repr(self, depth=config.flax_max_repr_depth)

    def setup(self) -> None:
        """Creates submodules and variables; runs lazily once the module is bound.

        It runs on first use: before a method, or when an attribute it defines is
        read. Assigning a module to an attribute here names it after the attribute.
        """

    def declare(self) -> None:
        """Declares submodules at construction, before the module is bound (lens).

        Unlike ``setup``, it runs on unbound modules too, so its submodules can be
        inspected (``autoencoder.decoder``) and applied on their own. It may only
        create submodules and plain attributes, not variables. Once bound it runs
        again, just before ``setup``, and its submodules are named as in setup.
        """

    def _run_declare(self) -> None:
        state = self._state
        state.in_declare = True
        token = _context.push(_context._module_stack, self)
        try:
            type(self).declare(self)
        finally:
            _context.pop(_context._module_stack, token)
            state.in_declare = False

    def _register_fields(self, info: _ClassInfo) -> None:
        """``_register_submodules`` for each construction field.

        A plain leaf (see ``_PLAIN_LEAVES``) already in ``__dict__`` is skipped:
        registering it would write the same value back.
        """
        if info.direct:
            d = self.__dict__
            try:  # the common case, all plain leaves, checked in one C loop
                if _PLAIN_LEAVES.issuperset(
                    map(type, map(d.__getitem__, info.init_fields))
                ):
                    return
            except KeyError:  # a field not in __dict__ (a class with its own __init__)
                pass
            for name in info.init_fields:
                val = d.get(name, _MISSING)
                if type(val) in _PLAIN_LEAVES:
                    continue
                self._register_submodules(name, getattr(self, name))
        else:
            for name in info.init_fields:
                self._register_submodules(name, getattr(self, name))

    def _register_submodules(self, name: str, val: Any) -> None:
        """Binds the modules in ``val`` as children named after ``name``."""
        assert self.scope is not None, "Trying to register submodules on unbound scope."
        if type(val) in _PLAIN_LEAVES:  # no module inside, nothing to freeze
            object.__setattr__(self, name, val)
            return
        root = self.scope.root
        cache = _caches.get(root)
        if cache is None:
            cache = _caches[root] = weakref.WeakValueDictionary()
        queue: list[Module] = []
        preserve = getattr(
            type(self), "preserve_adopted_names", config.flax_preserve_adopted_names
        )

        def adopt(suffix: str, sub: Any) -> Any:
            if isinstance(sub, Module):
                current_name = sub.name
                adopted_name = None
                if sub.parent is None:
                    key = sub._id
                    if preserve:
                        adopted_name = object.__getattribute__(sub, "name")
                    hit = cache.get(key)
                    if hit is not None:
                        sub = hit
                    else:
                        sub = sub.clone(name=None)
                        cache[key] = sub
                if sub.name is None:
                    object.__setattr__(sub, "parent", self)
                    if adopted_name is None:
                        adopted_name = (
                            f"{name}{suffix}"
                            if not isinstance(sub, CompactNameScope)
                            else current_name
                        )
                    object.__setattr__(sub, "name", adopted_name)
                    queue.append(sub)
            return sub

        val = _freeze_attr(_map_over_modules_in_tree(adopt, val))
        object.__setattr__(self, name, val)
        for sub in queue:
            sub.__post_init__()

    def _try_setup(self, shallow: bool = False) -> None:
        """Runs ``setup`` once, if the module is bound and setup has not run."""
        state = self._state
        if (
            self.scope is None
            or state.in_setup
            or state.setup_called == SetupState.DONE
        ):
            return
        cls = type(self)
        try:
            state.in_setup = True
            info = _class_info(cls)
            self._register_fields(info)
            if not shallow:
                if cls.declare is not _MODULE_DECLARE:  # type: ignore[attr-defined] # _is_declared
                    cls.declare(self)  # type: ignore[attr-defined]
                self.setup()
                # Adopted like attributes assigned in setup, named after the method.
                methods = self._compact_name_scope_methods  # type: ignore[attr-defined]
                if (
                    methods
                    or not info.direct
                    or "_compact_name_scope_modules" in info.fields  # type: ignore[operator]
                ):
                    self._compact_name_scope_modules = {
                        name: CompactNameScope(
                            getattr(cls, name).inner_fun,
                            _module_ref(self),
                            parent=None,
                            name=name,
                        )
                        for name in methods
                    }
                else:  # what assigning {} in setup stores, without the tree walk
                    object.__setattr__(
                        self, "_compact_name_scope_modules", _EMPTY_SCOPES
                    )
            elif state.setup_called == SetupState.NEW:
                # Before a transform: check setup abstractly for naming errors.
                self._validate_setup()
        finally:
            state.in_setup = False
            if not shallow:
                state.setup_called = SetupState.DONE

    def _validate_setup(self) -> None:
        """Runs setup on shapes only, to raise naming errors before a transform."""

        def run_setup_only(x: Any) -> Any:
            wrapped_id = wrap_method_once(lambda m, x: x)
            with TestScope({}, rngs={}, mutable=True).temporary() as root:
                return wrapped_id(self.clone(parent=root), x)

        jax.eval_shape(run_setup_only, 0)

    def _name_taken(
        self, name: str, reuse_scopes: bool = False, collection: str | None = None
    ) -> bool:
        assert self.scope is not None
        if reuse_scopes:
            return False
        return self.scope.name_reserved(name, collection)

    @property
    def _initialization_allowed(self) -> bool:
        state = self._state
        return not state.is_initialized or state.in_setup or state.in_compact_method

    @property
    def path(self) -> tuple[str, ...]:
        """The path of this module from the root module, e.g. ``('Dense_0',)``.

        Raises:
          ValueError: on an unbound module.
        """
        if self.scope is None:
            raise ValueError("Can't access module paths on unbound modules.")
        return self.scope.path

    # ----------------------------------------------------------------- cloning

    def clone(
        self: M,
        *,
        parent: Any = None,
        _deep_clone: bool | weakref.WeakValueDictionary = False,
        _reset_names: bool = False,
        **updates: Any,
    ) -> M:
        """A new module from this one's construction attributes (with ``updates``).

        Args:
          parent: the clone's parent (default: none, a top-level module).
          _deep_clone: also clone submodules held in attributes (sharing kept).
          _reset_names: with a deep clone, also drop the submodules' names.
          **updates: attribute updates.
        """
        attrs = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if f.init
        }
        attrs.update(parent=parent, **updates)
        if _deep_clone is not False:
            cache = (
                weakref.WeakValueDictionary()
                if isinstance(_deep_clone, bool)
                else _deep_clone
            )

            def clone_fn(m: Any) -> Any:
                key = getattr(m, "_id", None)
                if key is None:
                    return m
                hit = cache.get(key)
                if hit is None:
                    if _reset_names:
                        hit = m.clone(_deep_clone=cache, _reset_names=True, name=None)
                    else:
                        hit = m.clone(_deep_clone=cache)
                    cache[key] = hit
                return hit

            for k, v in attrs.items():
                if k != "parent" and type(v) not in _PLAIN_LEAVES:  # else: v itself
                    attrs[k] = _map_submodules(clone_fn, v)
        return type(self)(**attrs)

    def copy(
        self: M,
        *,
        parent: Any = _unspecified_parent,
        name: str | None = None,
        **updates: Any,
    ) -> M:
        """A copy of this module (a deep clone) with ``updates``.

        By default its parent is the module whose method is running, and it gets a
        new automatic name.
        """
        return self.clone(
            parent=parent, name=name, _deep_clone=True, _reset_names=False, **updates
        )

    # --------------------------------------------------------------- checks

    def _module_checks(self) -> None:
        if not isinstance(self, Module):
            raise errors.InvalidInstanceModuleError()
        overridden = type(self).__post_init__ is not Module.__post_init__
        if overridden and "_id" not in self.__dict__:
            raise errors.IncorrectPostInitOverrideError()


_MODULE_DECLARE = Module.declare


def _profiling_name(module: Module, fn: Any) -> str:
    fn_name = _get_fn_name(fn)
    suffix = f".{fn_name}" if fn_name != "__call__" else ""
    return f"{module.name or type(module).__name__}{suffix}"


def _map_submodules(fn: Callable[[Module], Any], tree: Any) -> Any:
    return _freeze_attr(
        _map_over_modules_in_tree(
            lambda _, x: fn(x) if isinstance(x, Module) else x, tree
        )
    )


def _module_ref(module: Module) -> Callable[[], Module]:
    ref = weakref.ref(module)
    return lambda: ref()  # type: ignore[return-value]


class CompactNameScope(Module):
    """Runs ``fn(module, ...)`` as a compact method in its own name scope."""

    fn: Callable[..., Any]
    module_fn: Callable[[], Module]

    @compact
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(self.module_fn(), *args, **kwargs)


show_at_flax_paths(__name__)
