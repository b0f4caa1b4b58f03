"""How module methods and classes are lifted through ``lens.core.lift`` transforms.

One code path serves every form: a transformed class (``nn.vmap(MLP, ...)``), a
transformed method (``@nn.scan`` on ``__call__``) and a function of a module
(``nn.vjp(fn, mdl, x)``). :func:`lifted_call` finds the scopes of the module (and
of modules and variables in its fields and arguments), runs the core transform on
them, and inside rebuilds the module bound to the lifted scopes with the naming
state the outer module had, so compact names continue where they stand.

Modules and variables never cross the JAX transform as values: they travel as
placeholders with static data only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax

from lens import errors, struct
from lens._facades import show_at_flax_paths
from lens.core import LazyRng, Scope, Variable
from lens.nn._module import Module
from lens.nn._module_hash import _HashableProxy
from lens.nn._module_support import _get_unbound_fn, wrap_method_once


@struct.dataclass
class VariablePlaceholder:
    """Stands for a ``Variable`` argument inside a transform."""

    collection: str = struct.field(pytree_node=False)
    name: str = struct.field(pytree_node=False)
    unbox: bool = struct.field(pytree_node=False)
    id: int = struct.field(pytree_node=False)


@struct.dataclass
class InstancePlaceholder:
    """Stands for a bound module argument inside a transform."""

    cls: type = struct.field(pytree_node=False)
    attrs: Any = struct.field(pytree_node=False)
    id: Any = struct.field(pytree_node=False)


def _memoize_by_id(
    fn: Callable[[Any], Any], refs: dict[Any, Any]
) -> Callable[[Any], Any]:
    """Applies ``fn`` once per module/variable (aliases map to one result)."""

    @functools.wraps(fn)
    def wrapped(x: Any) -> Any:
        if isinstance(x, VariablePlaceholder | InstancePlaceholder):
            key = x.id
        elif isinstance(x, Module):
            key = x._id
        elif isinstance(x, Variable):
            key = ("var", id(x))
        else:
            return fn(x)
        if key not in refs:
            refs[key] = fn(x)
        return refs[key]

    return wrapped


def _init_attrs(m: Module) -> dict[str, Any]:
    return {
        f.name: getattr(m, f.name)
        for f in dataclasses.fields(m)  # type: ignore[arg-type]
        if f.name != "parent" and f.init
    }


def get_module_scopes(
    module: Module, args: Any = None, kwargs: Any = None
) -> tuple[list[Scope], Any, Any]:
    """The scopes of ``module``, of modules/variables in its fields and arguments.

    Returns ``(scopes, args, kwargs)`` with bound modules and variables in the
    arguments replaced by placeholders.
    """
    scopes: list[Scope] = []
    refs: dict[Any, Any] = {}

    def get_arg_scope(x: Any) -> Any:
        if isinstance(x, Variable) and isinstance(x.scope, Scope):
            scopes.append(x.scope)
            return VariablePlaceholder(x.collection, x.name, x.unbox, id(x))
        if isinstance(x, Module) and isinstance(x.scope, Scope):
            x._try_setup(shallow=True)
            scopes.append(x.scope)
            attrs = jax.tree_util.tree_map(memo_arg, _init_attrs(x))
            return InstancePlaceholder(type(x), attrs, x._id)
        return x

    memo_arg = _memoize_by_id(get_arg_scope, refs)
    new_args, new_kwargs = jax.tree_util.tree_map(memo_arg, (args, kwargs))

    def get_scopes(m: Module) -> None:
        m._try_setup(shallow=True)
        for leaf in jax.tree_util.tree_leaves(_init_attrs(m)):
            if isinstance(leaf, Module) and isinstance(leaf.scope, Scope):
                memo_scopes(leaf)
            elif isinstance(leaf, Variable) and isinstance(leaf.scope, Scope):
                scopes.append(leaf.scope)
        scopes.append(m.scope)  # type: ignore[arg-type]

    memo_scopes = _memoize_by_id(get_scopes, refs)
    memo_scopes(module)
    return scopes, new_args, new_kwargs


def set_module_scopes(
    module: Module, args: Any, kwargs: Any, scopes: Sequence[Scope]
) -> tuple[Module, Any, Any]:
    """The inverse of :func:`get_module_scopes` with the lifted ``scopes``."""
    idx = 0
    refs: dict[Any, Any] = {}

    def set_arg_scope(x: Any) -> Any:
        nonlocal idx
        if isinstance(x, VariablePlaceholder):
            v = Variable(scopes[idx], x.collection, x.name, unbox=x.unbox)
            idx += 1
            return v
        if isinstance(x, InstancePlaceholder):
            scope = scopes[idx]
            idx += 1
            attrs = jax.tree_util.tree_map(memo_arg, x.attrs, is_leaf=_is_placeholder)
            return x.cls(parent=scope, **attrs)
        return x

    memo_arg = _memoize_by_id(set_arg_scope, refs)
    new_args, new_kwargs = jax.tree_util.tree_map(
        memo_arg, (args, kwargs), is_leaf=_is_placeholder
    )

    def set_scopes(m: Module) -> Module:
        nonlocal idx

        def inner(x: Any) -> Any:
            nonlocal idx
            if isinstance(x, Module) and isinstance(x.scope, Scope):
                return memo_scopes(x)
            if isinstance(x, Variable) and isinstance(x.scope, Scope):
                v = Variable(scopes[idx], x.collection, x.name, unbox=x.unbox)
                idx += 1
                return v
            return x

        new_attrs = jax.tree_util.tree_map(inner, _init_attrs(m))
        new = m.clone(parent=scopes[idx], **new_attrs)
        idx += 1
        return new

    memo_scopes = _memoize_by_id(set_scopes, refs)
    new_module = memo_scopes(module)
    if idx != len(scopes):
        raise AssertionError(f"scope list mismatch {len(scopes)} != {idx}")
    return new_module, new_args, new_kwargs


def _is_placeholder(x: Any) -> bool:
    return isinstance(x, VariablePlaceholder | InstancePlaceholder)


def _test_transformed_return_values(tree: Any, method_name: Any) -> None:
    for leaf in jax.tree_util.tree_leaves(
        tree, is_leaf=lambda x: isinstance(x, Module | Variable)
    ):
        if isinstance(leaf, Module | Variable):
            raise errors.TransformedMethodReturnValueError(method_name)


def fork_rngs_of(module: Module) -> tuple[Scope | None, Any]:
    """Replaces the module scope's streams by fresh keys from ``make_rng``.

    Returns what :func:`restore_rngs` needs to undo it.
    """
    scope = module.scope
    if scope is None:
        return None, None
    old = (scope._rng_roots, scope._rng_depth)
    fresh = {name: LazyRng(scope.make_rng(name), ()) for name in scope._rng_roots}
    scope._rng_roots = fresh
    scope._rng_depth = len(scope.path)
    return scope, old


def restore_rngs(scope: Scope | None, old: Any) -> None:
    if scope is not None:
        scope._rng_roots, scope._rng_depth = old


# ------------------------------------------------------------------ lifting


def lifted_call(
    transform: Callable[..., Callable[..., Any]],
    fns: Sequence[Callable[..., Any]],
    self: Module,
    args: tuple,
    kwargs: dict,
    *,
    clone_class: type | None = None,
    multi_scope: bool = True,
    cached: dict[str, Any] | None = None,
    names: Sequence[Any] = (),
) -> Any:
    """Calls ``fns[0](self, *args, **kwargs)`` (or the transform of several ``fns``).

    Args:
      transform: ``transform(*core_fns)`` returns ``f(scopes, *args, **kwargs)``.
      fns: module functions ``fn(module, *args)``, already state-managed.
      self: the bound module.
      clone_class: the class to rebuild inside (a transformed class rebuilds its
        untransformed base); default ``type(self)``.
      multi_scope: lift all the scopes found (else only ``self``'s).
      cached: a dict holding the transformed function across calls (``nn.jit``):
        the core functions then take the module from a hashable proxy argument.
      names: a name per function, for errors.
    """
    state = self._state.export()

    def rebuild(
        module: Module, state: Any, scopes: Any, a: Any, k: Any
    ) -> tuple[Module, Any, Any]:
        if not multi_scope:
            scopes = [scopes]
        if clone_class is not None:
            base = clone_class(parent=None, **_init_attrs(module))
        else:
            base = module
        cloned, a, k = set_module_scopes(base, a, k, scopes)
        object.__setattr__(cloned, "_state", state.export())
        return cloned, a, k

    def make_core(fn: Callable[..., Any], name: Any) -> Callable[..., Any]:

        def run(outer: Module, state: Any, scopes: Any, a: Any, k: Any) -> Any:
            cloned, a, k = rebuild(outer, state, scopes, a, k)
            res = fn(cloned, *a, **k)
            outer._state.reimport(cloned._state)
            _test_transformed_return_values(res, name)
            return res

        def hashed_core_fn(scopes: Any, module_hash: Any, *a: Any, **k: Any) -> Any:
            return run(module_hash.module, module_hash.state, scopes, a, k)

        def core_fn(scopes: Any, *a: Any, **k: Any) -> Any:
            return run(self, state, scopes, a, k)

        return functools.wraps(fn)(hashed_core_fn if cached is not None else core_fn)

    names = list(names) or [getattr(f, "__name__", None) for f in fns]
    if cached is not None:
        scope, old = fork_rngs_of(self)
        try:
            trafo = cached.get("fn")
            if trafo is None:
                trafo = cached["fn"] = transform(
                    *[make_core(f, n) for f, n in zip(fns, names)]
                )
            scopes, args, kwargs = get_module_scopes(self, args, kwargs)
            if not multi_scope:
                scopes = _single_scope(scopes)
            proxy = _HashableProxy.from_module(self, state)
            return trafo(scopes, proxy, *args, **kwargs)
        finally:
            restore_rngs(scope, old)
    trafo = transform(*[make_core(f, n) for f, n in zip(fns, names)])
    scopes, args, kwargs = get_module_scopes(self, args, kwargs)
    if not multi_scope:
        scopes = _single_scope(scopes)
    return trafo(scopes, *args, **kwargs)


def _single_scope(scopes: list[Scope]) -> Scope:
    if len(scopes) != 1:
        raise NotImplementedError(
            "This transform does not yet support Modules that include other Modules "
            "passed as arguments.\nlens: pass the inner modules as fields of the "
            "module the transform lifts, or use a transform that lifts several "
            "scopes (vmap, scan, jit, remat, map_variables)."
        )
    return scopes[0]


def _is_module_class(target: Any) -> bool:
    return (inspect.isclass(target) and issubclass(target, Module)) or (
        isinstance(target, functools.partial) and _is_module_class(target.func)
    )


def module_class_lift_transform(
    transform: Callable[..., Any],
    module_class: Any,
    *trafo_args: Any,
    methods: Any = None,
    cached: bool = False,
    **trafo_kwargs: Any,
) -> Any:
    """A subclass of ``module_class`` whose ``methods`` are lifted by ``transform``.

    With ``cached`` (``nn.jit``), equal arguments give the same class, so a class
    built per call (``nn.jit(Inner)()`` in a compact method or in ``setup``) shares
    one compiled function across ``apply`` calls instead of retracing each time.
    """
    if not cached:
        return _lifted_class(
            transform, module_class, trafo_args, methods, False, trafo_kwargs
        )
    partial_object = None
    if isinstance(module_class, functools.partial):
        partial_object, module_class = module_class, module_class.func
    key = _static_key((transform, methods, trafo_args, trafo_kwargs))
    built = module_class.__dict__.get(_LIFTED_CLASSES)
    cls = None if key is None or built is None else built.get(key)
    if cls is None:
        cls = _lifted_class(
            transform, module_class, trafo_args, methods, True, trafo_kwargs
        )
        if key is not None:
            if built is None:
                built = {}
                setattr(module_class, _LIFTED_CLASSES, built)
            built[key] = cls
    if partial_object is not None:
        return functools.partial(cls, *partial_object.args, **partial_object.keywords)
    return cls


# Where a module class keeps the jit-lifted classes built from it (in its own
# ``__dict__``, so they live and die with the class, and subclasses do not share).
_LIFTED_CLASSES = "_lens_lifted_classes"


def _static_key(x: Any) -> Any:
    """``x`` as a hashable key (lists become tuples, dicts sorted items); None if
    some part cannot be hashed (the caller then builds without caching)."""
    try:
        return _frozen(x)
    except TypeError:
        return None


def _frozen(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return (type(x).__name__, tuple(_frozen(v) for v in x))
    if isinstance(x, dict):
        items = [(k, _frozen(v)) for k, v in x.items()]
        return ("dict", tuple(sorted(items, key=lambda kv: repr(kv[0]))))
    hash(x)  # TypeError if it cannot be a key
    return x


def _lifted_class(
    transform: Callable[..., Any],
    module_class: Any,
    trafo_args: tuple,
    methods: Any,
    cached: bool,
    trafo_kwargs: dict[str, Any],
) -> Any:
    """Builds the subclass of :func:`module_class_lift_transform`."""
    if methods is None:
        per_method = {"__call__": (trafo_args, trafo_kwargs)}
    elif isinstance(methods, list | tuple):
        per_method = {m: (trafo_args, trafo_kwargs) for m in methods}
    elif isinstance(methods, dict):
        per_method = {k: ((), v) for k, v in methods.items()}
    else:
        raise ValueError(
            "transform methods argument must be None, tuple, list, or dict."
        )
    partial_object = None
    if isinstance(module_class, functools.partial):
        partial_object, module_class = module_class, module_class.func

    def create_trans_fn(fn_name: str, fn_args: tuple) -> Callable[..., Any]:
        fn = getattr(module_class, fn_name, None)
        if fn is None:  # Flax's getattr fails the same way
            raise AttributeError(
                f"type object {module_class.__name__!r} has no attribute "
                f"{fn_name!r}\n{module_class.__name__} has no method {fn_name!r} to "
                "transform: name its methods in methods=[...] (e.g. '__call__')."
            )
        t_args, t_kwargs = fn_args
        cache: dict[str, Any] | None = {} if cached else None

        @functools.wraps(fn)
        def wrapped_fn(self: Module, *args: Any, **kwargs: Any) -> Any:
            return lifted_call(
                lambda *core: transform(*core, *t_args, **t_kwargs),
                (fn,),
                self,
                args,
                kwargs,
                clone_class=module_class,
                cached=cache,
                names=(fn_name,),
            )

        return wrapped_fn

    fns = {name: create_trans_fn(name, a) for name, a in per_method.items()}
    cls = type(
        transform.__name__.capitalize() + module_class.__name__, (module_class,), fns
    )
    if partial_object is not None:
        return functools.partial(cls, *partial_object.args, **partial_object.keywords)
    return cls


def decorator_lift_transform(
    transform: Callable[..., Any],
    class_fn: Any,
    *trafo_args: Any,
    multi_scope: bool = True,
    cached: bool = False,
    **trafo_kwargs: Any,
) -> Callable[..., Any]:
    """A module method (or functions of a module) lifted by ``transform``."""
    class_fns = class_fn if isinstance(class_fn, tuple) else (class_fn,)
    prewrapped = tuple(wrap_method_once(f) for f in class_fns)
    cache: dict[str, Any] | None = {} if cached else None

    @functools.wraps(prewrapped[0])
    def wrapped_fn(self: Module, *args: Any, **kwargs: Any) -> Any:
        return lifted_call(
            lambda *core: transform(*core, *trafo_args, **trafo_kwargs),
            prewrapped,
            self,
            args,
            kwargs,
            multi_scope=multi_scope,
            cached=cache,
            names=[getattr(f, "__name__", None) for f in class_fns],
        )

    return wrapped_fn


def lift_transform(
    transform: Callable[..., Any],
    target: Any,
    *trafo_args: Any,
    methods: Any = None,
    **trafo_kwargs: Any,
) -> Any:
    """Applies ``transform`` to a Module class, or as a decorator of a method."""
    if _is_module_class(target):
        return module_class_lift_transform(
            transform, target, *trafo_args, methods=methods, **trafo_kwargs
        )
    if callable(target) and not isinstance(target, Module):
        return decorator_lift_transform(transform, target, *trafo_args, **trafo_kwargs)
    raise errors.TransformTargetError(
        target,
        detail=(
            f"Got an instance of {type(target).__name__}: transform the class, "
            f"nn.{transform.__name__}({type(target).__name__}, ...)(...)."
            if isinstance(target, Module)
            else ""
        ),
    )


def lift_transform_cached(
    transform: Callable[..., Any],
    target: Any,
    *trafo_args: Any,
    methods: Any = None,
    **trafo_kwargs: Any,
) -> Any:
    """Like :func:`lift_transform`, reusing one transformed function across calls."""
    if _is_module_class(target):
        return module_class_lift_transform(
            transform, target, *trafo_args, methods=methods, cached=True, **trafo_kwargs
        )
    if callable(target) and not isinstance(target, Module):
        return decorator_lift_transform(
            transform, target, *trafo_args, cached=True, **trafo_kwargs
        )
    raise errors.TransformTargetError(target)


def lift_direct_transform(
    transform: Callable[..., Any],
    targets: tuple[Callable[..., Any], ...],
    mdl: Module,
    *args: Any,
    multi_scope: bool = True,
    **kwargs: Any,
) -> Any:
    """Calls ``transform`` on functions of a module (``nn.vjp(fn, mdl, ...)``)."""
    for target in targets:
        if _is_module_class(target):
            raise ValueError(
                f"The {transform.__name__} transform can only be applied on a Module "
                "method. That is function that takes a Module instance as its first "
                "arg."
            )
        if not callable(target):
            raise ValueError("transform target must be callable")
    if not isinstance(mdl, Module):
        raise errors.TransformTargetError(
            mdl,
            detail=f"nn.{transform.__name__} takes a bound module after the function(s).",
        )
    targets = tuple(_get_unbound_fn(t) for t in targets)

    def aug_transform(*fns: Any) -> Any:
        return functools.partial(transform, *fns)

    return decorator_lift_transform(aug_transform, targets, multi_scope=multi_scope)(
        mdl, *args, **kwargs
    )


@contextlib.contextmanager
def fork_rngs(module: Module) -> Iterator[None]:
    """Inside the ``with``, the module's streams are fresh keys from ``make_rng``."""
    scope, old = fork_rngs_of(module)
    try:
        yield
    finally:
        restore_rngs(scope, old)


def clean_clone(x: Any) -> Any:
    """``x`` (a module) with its scope and its children's scopes removed."""
    if isinstance(x, Module):
        children = {k: clean_clone(v) for k, v in x._state.children.items()}
        x._state.children.clear()
        x._state.children.update(children)
        object.__setattr__(x, "scope", None)
    return x


def decorator_lift_transform_cached(
    transform: Callable[..., Any], class_fn: Any, **trafo_kwargs: Any
) -> Any:
    """:func:`decorator_lift_transform` reusing one transformed function (for jit)."""
    return decorator_lift_transform(transform, class_fn, cached=True, **trafo_kwargs)


def module_class_lift_transform_cached(
    transform: Callable[..., Any],
    module_class: Any,
    methods: Any = None,
    **trafo_kwargs: Any,
) -> Any:
    """:func:`module_class_lift_transform` reusing one transformed function (for jit)."""
    return module_class_lift_transform(
        transform, module_class, methods=methods, cached=True, **trafo_kwargs
    )


show_at_flax_paths(__name__)
