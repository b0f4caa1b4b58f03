"""Module-level lifted transforms: ``nn.vmap``, ``nn.scan``, ``nn.jit``, ...

Each takes a Module class (returning a new class, e.g. ``VmapMLP``) or a function
``f(module, *args)`` and lifts it with the matching ``lens.core.lift`` transform.
Keyword arguments pass through every transform.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from lens import errors
from lens.core import lift as core_lift
from lens.core._filters import Filter
from lens.nn._lifting import _check_no_module, _Lifted, module_transform
from lens.nn._module import Module

Target = Any


def vmap(
    target: Target,
    variable_axes: Mapping[Filter, int | None] = {},  # noqa: B006 - read only
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    spmd_axis_name: Any = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006
    methods: Sequence[str] | None = None,
) -> Target:
    """A lifted ``jax.vmap`` over a Module class or method (see :func:`lens.core.lift.vmap`).

    ``in_axes`` covers the arguments after the module. Example::

        VmapMLP = nn.vmap(MLP, variable_axes={"params": 0},
                          split_rngs={"params": True}, in_axes=0)
    """
    return module_transform(
        "vmap",
        target,
        lambda f: core_lift.vmap(
            f,
            variable_axes,
            split_rngs,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_size=axis_size,
            axis_name=axis_name,
            spmd_axis_name=spmd_axis_name,
            metadata_params=metadata_params,
        ),
        methods,
    )


def scan(
    target: Target,
    variable_axes: Mapping[Filter, int] = {},  # noqa: B006
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006
    in_axes: Any = 0,
    out_axes: Any = 0,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    data_transform: Any = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006
    methods: Sequence[str] | None = None,
) -> Target:
    """A lifted ``jax.lax.scan``: the method is ``f(self, carry, *xs) -> (carry, ys)``.

    See :func:`lens.core.lift.scan` for the variable options.
    """
    del data_transform
    return module_transform(
        "scan",
        target,
        lambda f: core_lift.scan(
            f,
            variable_axes=variable_axes,
            variable_broadcast=variable_broadcast,
            variable_carry=variable_carry,
            split_rngs=split_rngs,
            in_axes=in_axes,
            out_axes=out_axes,
            length=length,
            reverse=reverse,
            unroll=unroll,
            metadata_params=metadata_params,
        ),
        methods,
    )


def checkpoint(
    target: Target,
    variables: Filter = True,
    rngs: Filter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
    methods: Sequence[str] | None = None,
) -> Target:
    """A lifted ``jax.checkpoint`` (rematerialisation). ``static_argnums`` counts ``self`` as 0."""
    return module_transform(
        "checkpoint",
        target,
        lambda f: core_lift.checkpoint(
            f,
            variables=variables,
            rngs=rngs,
            concrete=concrete,
            prevent_cse=prevent_cse,
            static_argnums=static_argnums,
            policy=policy,
        ),
        methods,
    )


remat = checkpoint


class _ModuleKey:
    """Hashable, structural description of the lifted modules (a jit cache key)."""

    __slots__ = ("lifted", "key")

    def __init__(self, lifted: _Lifted):
        self.lifted = lifted
        self.key = tuple(_structure(m) for m in lifted.modules)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ModuleKey) and other.key == self.key


def _structure(value: Any) -> Any:
    if isinstance(value, Module):
        import dataclasses

        return (
            type(value),
            tuple(
                (f.name, _structure(getattr(value, f.name)))
                for f in dataclasses.fields(value)
                if f.init and f.name != "parent"
            ),
        )
    if isinstance(value, list | tuple):
        return (type(value), tuple(_structure(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _structure(v)) for k, v in value.items())))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def jit(
    target: Target,
    variables: Filter = True,
    rngs: Filter = True,
    static_argnums: int | tuple[int, ...] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | tuple[int, ...] = (),
    device: Any = None,
    backend: str | None = None,
    methods: Sequence[str] | None = None,
) -> Target:
    """A lifted ``jax.jit``; the same module structure and shapes never retrace.

    ``static_argnums`` and ``donate_argnums`` count ``self`` as 0.
    """

    def core_fn(
        scopes: list[Any],
        *args: Any,
        _lens_modules: _ModuleKey,
        _lens_fun: Any,
        **kwargs: Any,
    ) -> Any:
        module, args, kwargs = _lens_modules.lifted.rebuild(scopes, args, kwargs)
        return _check_no_module(_lens_fun.fun(module, *args, **kwargs), "nn.jit")

    jitted = core_lift.jit(
        core_fn,
        variables=variables,
        rngs=rngs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
    )

    def call(fun: Callable[..., Any], self: Module, args: tuple, kwargs: dict) -> Any:
        if self.scope is None:
            raise errors.CallCompactUnboundModuleError(type(self).__name__, "jit")
        lifted = _Lifted(self, args, kwargs)
        return jitted(
            lifted.scopes,
            *lifted.args,
            _lens_modules=_ModuleKey(lifted),
            _lens_fun=_Fun(fun),
            **lifted.kwargs,
        )

    return _custom_module_transform("jit", target, call, methods)


class _Fun:
    """A function compared by identity but usable as a static jit argument."""

    __slots__ = ("fun",)

    def __init__(self, fun: Callable[..., Any]):
        self.fun = fun

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Fun) and other.fun is self.fun


def _custom_module_transform(
    transform: str,
    target: Target,
    call: Callable[..., Any],
    methods: Sequence[str] | None,
) -> Target:
    from lens.nn._lifting import _check_target

    _check_target(target, transform)
    if isinstance(target, type):
        attrs: dict[str, Any] = {"__module__": target.__module__}
        for m in list(methods or ["__call__"]):
            orig = getattr(target, m)

            def method(
                self: Module, *args: Any, _orig: Any = orig, **kwargs: Any
            ) -> Any:
                return call(_orig, self, args, kwargs)

            functools.update_wrapper(method, orig)
            method._lens_wrapped = True  # type: ignore[attr-defined]
            attrs[m] = method
        name = transform.capitalize() + target.__name__
        attrs["__qualname__"] = name
        return type(name, (target,), attrs)

    @functools.wraps(target)
    def wrapper(module: Module, *args: Any, **kwargs: Any) -> Any:
        return call(target, module, args, kwargs)

    return wrapper


def map_variables(
    target: Target,
    mapped_collections: Filter = True,
    trans_in_fn: Callable[[Any], Any] = lambda x: x,
    trans_out_fn: Callable[[Any], Any] = lambda x: x,
    init: bool = False,
    mutable: bool = False,
    rngs: Filter = True,
    variables: Filter = True,
    methods: Sequence[str] | None = None,
) -> Target:
    """Maps collections on their way into (and out of) a module or method.

    Example: tied weights, ``nn.map_variables(nn.Dense, "params", transpose,
    transpose)``.
    """
    return module_transform(
        "map_variables",
        target,
        lambda f: core_lift.map_variables(
            f,
            mapped_collections,
            trans_in_fn,
            trans_out_fn,
            init,
            mutable,
            rngs,
            variables,
        ),
        methods,
    )


# ------------------------------------------------------------- function forms


def _on_modules(lifted: _Lifted, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``core_fn(scopes, *args)`` calling ``fn`` on the modules rebuilt inside."""

    def core_fn(scopes: list[Any], *args: Any) -> Any:
        module, args, _ = lifted.rebuild(scopes, args, {})
        return fn(module, *args)

    return core_fn


def _lift_fn(
    mdl: Module, args: tuple, kwargs: dict, what: str, run: Callable[..., Any]
) -> Any:
    """Runs ``run(scopes, rebuild)`` for function-style transforms (jvp, vjp, ...)."""
    if not isinstance(mdl, Module):
        raise errors.TransformTargetError(
            f"{what} expects a bound module as its module argument, got {mdl!r}."
        )
    if mdl.scope is None:
        raise errors.CallCompactUnboundModuleError(type(mdl).__name__, what)
    lifted = _Lifted(mdl, args, kwargs)
    return run(lifted)


def jvp(
    fn: Callable[..., Any],
    mdl: Module,
    primals: tuple,
    tangents: tuple,
    variable_tangents: Mapping[str, Any],
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.jvp`` of ``fn(mdl, *primals)``; returns ``(y, y_tangent)``."""

    def run(lifted: _Lifted) -> Any:
        core_fn = _on_modules(lifted, fn)

        return core_lift.jvp(
            core_fn,
            lifted.scopes,
            tuple(lifted.args),
            tangents,
            variable_tangents,
            variables,
            rngs,
        )

    return _lift_fn(mdl, tuple(primals), {}, "nn.jvp", run)


def vjp(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: tuple = (),
    vjp_variables: Filter = "params",
    variables: Filter = True,
    rngs: Filter = True,
    multi_scope: bool = False,
) -> tuple[Any, ...]:
    """A lifted ``jax.vjp``: ``(y, vjp_fn)``; ``vjp_fn(dy) = (params_grad, *primals_grad)``."""
    del multi_scope

    def run(lifted: _Lifted) -> Any:
        core_fn = _on_modules(lifted, fn)

        return core_lift.vjp(
            core_fn,
            lifted.scopes,
            *lifted.args,
            has_aux=has_aux,
            reduce_axes=reduce_axes,
            vjp_variables=vjp_variables,
            variables=variables,
            rngs=rngs,
        )

    return _lift_fn(mdl, primals, {}, "nn.vjp", run)


def value_and_grad(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: tuple = (),
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.value_and_grad``: ``(y, (params_grad, *primals_grad))``."""

    def run(lifted: _Lifted) -> Any:
        core_fn = _on_modules(lifted, fn)

        return core_lift.value_and_grad(
            core_fn,
            lifted.scopes,
            *lifted.args,
            has_aux=has_aux,
            reduce_axes=reduce_axes,
            variables=variables,
            rngs=rngs,
        )

    return _lift_fn(mdl, primals, {}, "nn.value_and_grad", run)


def grad(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: tuple = (),
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.grad``: ``(params_grad, *primals_grad)`` (and ``aux`` if ``has_aux``)."""
    value, grads = value_and_grad(
        fn,
        mdl,
        *primals,
        has_aux=has_aux,
        reduce_axes=reduce_axes,
        variables=variables,
        rngs=rngs,
    )
    if has_aux:
        return grads, value[1]
    return grads


def custom_vjp(
    fn: Callable[..., Any],
    forward_fn: Callable[..., Any],
    backward_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_vjp``; returns ``f(mdl, *args)``.

    ``forward_fn(mdl, *args) -> (y, res)``; ``backward_fn(*nondiff, res, dy) ->
    (params_grad, *args_grad)``.
    """

    def call(mdl: Module, *args: Any) -> Any:
        def run(lifted: _Lifted) -> Any:
            def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
                return _on_modules(lifted, f)

            return core_lift.custom_vjp(
                wrap(fn), wrap(forward_fn), backward_fn, grad_vars, nondiff_argnums
            )(lifted.scopes, *lifted.args)

        return _lift_fn(mdl, args, {}, "nn.custom_vjp", run)

    return call


def custom_jvp(
    fn: Callable[..., Any],
    jvp_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_jvp`` (lens only); ``jvp_fn(mdl, primals, tangents, var_tangents)``."""

    def call(mdl: Module, *args: Any) -> Any:
        def run(lifted: _Lifted) -> Any:
            core_fn = _on_modules(lifted, fn)

            def core_jvp(
                scopes: list[Any], primals: tuple, tangents: tuple, var_t: Any
            ) -> Any:
                m, primals, _ = lifted.rebuild(scopes, primals, {})
                return jvp_fn(m, tuple(primals), tangents, var_t)

            return core_lift.custom_jvp(core_fn, core_jvp, grad_vars, nondiff_argnums)(
                lifted.scopes, *lifted.args
            )

        return _lift_fn(mdl, args, {}, "nn.custom_jvp", run)

    return call


def while_loop(
    cond_fn: Callable[..., Any],
    body_fn: Callable[..., Any],
    mdl: Module,
    init: Any,
    carry_variables: Filter = False,
    broadcast_variables: Filter = True,
    split_rngs: Mapping[Filter, bool] = {},  # noqa: B006
) -> Any:
    """A lifted ``jax.lax.while_loop``: ``cond_fn(mdl, c)``, ``body_fn(mdl, c) -> c``."""

    def run(lifted: _Lifted) -> Any:
        def core_cond(scopes: list[Any], c: Any) -> Any:
            return cond_fn(lifted.rebuild(scopes, (), {})[0], c)

        def core_body(scopes: list[Any], c: Any) -> Any:
            return body_fn(lifted.rebuild(scopes, (), {})[0], c)

        return core_lift.while_loop(
            core_cond,
            core_body,
            lifted.scopes,
            init,
            carry_variables,
            broadcast_variables,
            split_rngs,
        )

    return _lift_fn(mdl, (), {}, "nn.while_loop", run)


def cond(
    pred: Any,
    true_fun: Callable[..., Any],
    false_fun: Callable[..., Any],
    mdl: Module,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.lax.cond``: ``true_fun(mdl, *operands)`` or ``false_fun(...)``."""

    def run(lifted: _Lifted) -> Any:
        def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
            return _on_modules(lifted, f)

        return core_lift.cond(
            pred,
            wrap(true_fun),
            wrap(false_fun),
            lifted.scopes,
            *lifted.args,
            variables=variables,
            rngs=rngs,
        )

    return _lift_fn(mdl, operands, {}, "nn.cond", run)


def switch(
    index: Any,
    branches: Sequence[Callable[..., Any]],
    mdl: Module,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.lax.switch``: ``branches[index](mdl, *operands)``."""

    def run(lifted: _Lifted) -> Any:
        def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
            return _on_modules(lifted, f)

        return core_lift.switch(
            index,
            [wrap(b) for b in branches],
            lifted.scopes,
            *lifted.args,
            variables=variables,
            rngs=rngs,
        )

    return _lift_fn(mdl, operands, {}, "nn.switch", run)


def remat_scan(
    target: Target,
    lengths: Sequence[int] = (),
    policy: Callable[..., bool] | None = None,
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    variable_axes: Mapping[Filter, int] = {True: 0},  # noqa: B006
    split_rngs: Mapping[Filter, bool] = {True: True},  # noqa: B006
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006
) -> Target:
    """Nested ``remat(scan)``: ``prod(lengths)`` layers with memory ~ ``sum(lengths)``.

    The module's ``__call__(self, x) -> x``. ``metadata_params`` names each added
    axis for ``AxisMetadata`` boxes (lens; Flax lacks it).
    """
    if not (isinstance(target, type) and issubclass(target, Module)):
        raise errors.TransformTargetError("nn.remat_scan transforms a Module class.")

    def make_core(f: Callable[..., Any]) -> Callable[..., Any]:
        def body(scopes: Any, c: Any) -> Any:
            return f(scopes, c), None

        fn: Callable[..., Any] = body
        for n in reversed(tuple(lengths)):
            inner = fn

            def step(scopes: Any, c: Any, _: Any, inner: Any = inner) -> Any:
                return inner(scopes, c)[0], None

            fn = core_lift.scan(
                core_lift.checkpoint(step, policy=policy, prevent_cse=False),
                variable_axes=variable_axes,
                variable_broadcast=variable_broadcast,
                variable_carry=variable_carry,
                split_rngs=split_rngs,
                length=n,
                metadata_params=metadata_params,
            )
            fn = _drop_xs(fn)
        return lambda scopes, x: fn(scopes, x)[0]

    return module_transform("remat_scan", target, make_core, ["__call__"])


def _drop_xs(scanned: Callable[..., Any]) -> Callable[..., Any]:
    return lambda scopes, c: scanned(scopes, c, None)


def named_call(class_fn: Callable[..., Any], force: bool = True) -> Callable[..., Any]:
    """Wraps a method so it shows as ``ClassName.method`` in profiles (``jax.named_scope``)."""
    del force

    @functools.wraps(class_fn)
    def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
        with jax.named_scope(
            f"{type(self).__name__}.{getattr(class_fn, '__name__', 'call')}"
        ):
            return class_fn(self, *args, **kwargs)

    return wrapped
