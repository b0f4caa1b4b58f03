"""Module-level lifted transforms: ``nn.vmap``, ``nn.scan``, ``nn.jit``, ...

Each takes a Module class (returning a new class, e.g. ``VmapMLP``) or a method
(as a decorator), or for the function transforms (``vjp``, ``cond``, ...) functions
of a bound module, and lifts them with the matching ``lens.core.lift`` transform.
Keyword arguments of the transformed methods pass through every transform.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import jax

from lens._argnums import argnums
from lens._facades import show_at_flax_paths
from lens._frozen_dict import FrozenDict
from lens.core import Filter, lift
from lens.core import meta as _meta
from lens.nn._lifting import (
    decorator_lift_transform,
    lift_direct_transform,
    lift_transform,
    lift_transform_cached,
)
from lens.nn._module import Module
from lens.nn._module_support import _get_fn_name

TransformTarget = type[Module] | Callable[..., Any]
"""What a lifted transform takes: a Module class or a function of a module."""
Target = TypeVar("Target", bound=TransformTarget)
C = TypeVar("C")
ModuleT = TypeVar("ModuleT", bound=Module)


def vmap(
    target: Target,
    variable_axes: Mapping[Filter, Any] = FrozenDict(),
    split_rngs: Mapping[Filter, bool] = FrozenDict(),
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: str | None = None,
    spmd_axis_name: str | None = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006 - read only
    methods: Any = None,
) -> Target:
    """A lifted ``jax.vmap`` of a Module class or method.

    Args:
      target: a Module class or a method.
      variable_axes: collection filter -> axis of its variables (``None``
        broadcasts; ``nn.In``/``nn.Out`` for one direction only).
      split_rngs: rng filter -> whether each element gets its own key.
      in_axes, out_axes, axis_size, axis_name, spmd_axis_name: as in
        ``jax.vmap`` (``in_axes`` covers the arguments after the module).
      metadata_params: passed to the boxes' ``add_axis``/``remove_axis``.
      methods: the methods of a class to transform (default ``__call__``).

    Example::

        VmapMLP = nn.vmap(MLP, variable_axes={"params": 0},
                          split_rngs={"params": True}, in_axes=0)
    """
    return lift_transform(
        lift.vmap,
        target,
        variable_axes,
        split_rngs,
        methods=methods,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_size=axis_size,
        axis_name=axis_name,
        metadata_params=metadata_params,
        spmd_axis_name=spmd_axis_name,
    )


def jit(
    target: Target,
    variables: Filter = True,
    rngs: Filter = True,
    static_argnums: int | Iterable[int] = (),
    static_argnames: str | Iterable[str] = (),
    donate_argnums: int | Iterable[int] = (),
    device: Any = None,
    backend: str | None = None,
    methods: Any = None,
) -> Target:
    """A lifted ``jax.jit``: one compiled function per module structure and shapes.

    Repeated ``apply`` calls of the same module with the same shapes never
    retrace; the cache keys on static data only (a hash of the module's fields),
    so it keeps no variables alive. ``static_argnums`` and ``donate_argnums`` count
    ``self`` as 0. Like Flax, the rng streams inside are fresh keys drawn with
    ``make_rng`` (the same as ``nn.fold_rngs``).
    """
    return lift_transform_cached(
        lift.jit,
        target,
        variables=variables,
        rngs=rngs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        device=device,
        backend=backend,
        methods=methods,
    )


def checkpoint(
    target: Target,
    variables: Filter = True,
    rngs: Filter = True,
    concrete: bool = False,
    prevent_cse: bool = True,
    static_argnums: int | tuple[int, ...] = (),
    policy: Callable[..., bool] | None = None,
    methods: Any = None,
) -> Target:
    """A lifted ``jax.checkpoint`` (rematerialisation): recompute on the backward pass.

    ``static_argnums`` count ``self`` as 0 (a ``train`` flag at position 2 of
    ``__call__(self, x, train)`` is ``static_argnums=(2,)``).
    """
    static_argnums = argnums(static_argnums, "nn.checkpoint: static_argnums")
    for i in static_argnums:
        if i < 1:
            raise ValueError(
                f"nn.checkpoint: static_argnums={tuple(static_argnums)} counts self as "
                "0, so static arguments start at 1."
            )
    static = tuple(i - 1 for i in static_argnums)
    return lift_transform(
        lift.checkpoint,
        target,
        variables=variables,
        rngs=rngs,
        concrete=concrete,
        static_argnums=static,
        prevent_cse=prevent_cse,
        policy=policy,
        methods=methods,
    )


remat = checkpoint


def remat_scan(
    target: Target,
    lengths: Sequence[int] | None = (),
    policy: Callable[..., bool] | None = None,
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    variable_axes: Mapping[Filter, Any] = FrozenDict({True: 0}),
    split_rngs: Mapping[Filter, bool] = FrozenDict({True: True}),
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006 - read only
) -> Target:
    """Nested ``remat(scan)``: ``prod(lengths)`` layers with memory ~ ``sum(lengths)``.

    The module's ``__call__(self, x) -> x``. ``metadata_params`` (lens) names
    each added axis for ``AxisMetadata`` boxes.
    """
    return lift_transform(
        lift.remat_scan,
        target,
        lengths=lengths,
        variable_broadcast=variable_broadcast,
        variable_carry=variable_carry,
        variable_axes=variable_axes,
        split_rngs=split_rngs,
        policy=policy,
        metadata_params=metadata_params,
    )


def scan(
    target: Target,
    variable_axes: Mapping[Filter, Any] = FrozenDict(),
    variable_broadcast: Filter = False,
    variable_carry: Filter = False,
    split_rngs: Mapping[Filter, bool] = FrozenDict(),
    in_axes: Any = 0,
    out_axes: Any = 0,
    length: int | None = None,
    reverse: bool = False,
    unroll: int = 1,
    data_transform: Callable[..., Any] | None = None,
    metadata_params: Mapping[Any, Any] = {},  # noqa: B006 - read only
    methods: Any = None,
    _split_transpose: bool = False,
    check_constancy_invariants: bool = True,
) -> Target:
    """A lifted ``jax.lax.scan``: the method is ``f(self, carry, *xs) -> (carry, ys)``.

    See :func:`lens.core.lift.scan` for the variable options. The canonical use,
    an RNN cell over time with shared parameters::

        nn.scan(nn.LSTMCell, variable_broadcast="params",
                split_rngs={"params": False}, in_axes=1, out_axes=1)
    """
    return lift_transform(
        lift.scan,
        target,
        variable_axes=variable_axes,
        variable_broadcast=variable_broadcast,
        variable_carry=variable_carry,
        split_rngs=split_rngs,
        in_axes=in_axes,
        out_axes=out_axes,
        length=length,
        reverse=reverse,
        unroll=unroll,
        _split_transpose=_split_transpose,
        data_transform=data_transform,
        metadata_params=metadata_params,
        methods=methods,
        check_constancy_invariants=check_constancy_invariants,
    )


def map_variables(
    target: Target,
    mapped_collections: Filter = True,
    trans_in_fn: Callable[..., Any] = lift.id_fn,
    trans_out_fn: Callable[..., Any] = lift.id_fn,
    init: bool = False,
    mutable: bool = False,
    rngs: Filter = True,
    variables: Filter = True,
    methods: Any = None,
) -> Target:
    """Maps collections on their way into (and out of) a module or method.

    Example: tied weights,
    ``nn.map_variables(nn.Dense, "params", transpose, transpose, init=True)``.
    """
    return lift_transform(
        lift.map_variables,
        target,
        mapped_collections,
        trans_in_fn,
        trans_out_fn,
        init,
        mutable,
        rngs,
        variables,
        methods=methods,
    )


def vjp(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: Any = (),
    vjp_variables: Filter = "params",
    variables: Filter = True,
    rngs: Filter = True,
    multi_scope: bool = False,
) -> tuple[Any, ...]:
    """A lifted ``jax.vjp`` of ``fn(mdl, *primals)``.

    Returns ``(y, vjp_fn)`` (``(y, vjp_fn, aux)`` with ``has_aux``);
    ``vjp_fn(dy)`` returns ``(variables_grad, *primals_grad)``.
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    return lift_direct_transform(
        lift.vjp,
        (fn,),
        mdl,
        *primals,
        multi_scope=multi_scope,
        has_aux=has_aux,
        vjp_variables=vjp_variables,
        variables=variables,
        rngs=rngs,
    )


def value_and_grad(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: Any = (),
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.value_and_grad`` of ``fn(mdl, *primals)`` w.r.t. the primals.

    Returns ``(y, grads)`` (``((y, aux), grads)`` with ``has_aux``).

    Raises:
      ValueError: if the output is not a scalar.
    """
    if reduce_axes:
        raise NotImplementedError(
            "reduce_axes argument to value_and_grad is deprecated"
        )
    res = lift_direct_transform(
        lift.value_and_grad,
        (fn,),
        mdl,
        *primals,
        has_aux=has_aux,
        variables=variables,
        rngs=rngs,
    )
    out = res[0]
    if getattr(out, "shape", ()) != ():
        raise ValueError(
            f"grad can only work on functions with scalar-valued outputs. out "
            f"shape={out.shape}\nReduce the output (e.g. .sum() or .mean()) first."
        )
    if has_aux:
        out, aux, grads = res
        return (out, aux), grads
    return res


def grad(
    fn: Callable[..., Any],
    mdl: Module,
    *primals: Any,
    has_aux: bool = False,
    reduce_axes: Any = (),
    variables: Filter = True,
    rngs: Filter = True,
) -> Any:
    """A lifted ``jax.grad``: the gradients w.r.t. the primals (and ``aux``)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to grad is deprecated")
    value, grads = value_and_grad(
        fn, mdl, *primals, has_aux=has_aux, variables=variables, rngs=rngs
    )
    if has_aux:
        return grads, value[1]
    return grads


def jvp(
    fn: Callable[..., Any],
    mdl: Module,
    primals: Any,
    tangents: Any,
    variable_tangents: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> tuple[Any, Any]:
    """A lifted ``jax.jvp`` of ``fn(mdl, *primals)``; returns ``(y, y_tangent)``.

    ``variable_tangents`` gives tangents for collections, e.g. ``{"params": t}``.
    """
    return lift_direct_transform(
        lift.jvp,
        (fn,),
        mdl,
        primals,
        tangents,
        variable_tangents,
        multi_scope=False,
        variables=variables,
        rngs=rngs,
    )


def while_loop(
    cond_fn: Callable[[ModuleT, C], bool],
    body_fn: Callable[[ModuleT, C], C],
    mdl: ModuleT,
    init: C,
    carry_variables: Filter = False,
    broadcast_variables: Filter = True,
    split_rngs: Mapping[Filter, bool] = FrozenDict(),
) -> C:
    """A lifted ``jax.lax.while_loop``: ``cond_fn(mdl, c)``, ``body_fn(mdl, c) -> c``."""
    return lift_direct_transform(
        lift.while_loop,
        (cond_fn, body_fn),
        mdl,
        init,
        carry_variables,
        broadcast_variables,
        split_rngs,
    )


def _cond_wrapper(
    t_fn: Any, f_fn: Any, scope: Any, pred: Any, *ops: Any, variables: Any, rngs: Any
) -> Any:
    return lift.cond(pred, t_fn, f_fn, scope, *ops, variables=variables, rngs=rngs)


_cond_wrapper.__name__ = "cond"


def cond(
    pred: Any,
    true_fun: Callable[..., C],
    false_fun: Callable[..., C],
    mdl: Module,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> C:
    """A lifted ``jax.lax.cond``: ``true_fun(mdl, *operands)`` or ``false_fun(...)``.

    Both branches are traced and must create and update the same variables.
    """
    return lift_direct_transform(
        _cond_wrapper,
        (true_fun, false_fun),
        mdl,
        pred,
        *operands,
        variables=variables,
        rngs=rngs,
    )


def _switch_wrapper(*args: Any, variables: Any, rngs: Any, n_branches: int) -> Any:
    branches = args[:n_branches]
    scope, index, *operands = args[n_branches:]
    return lift.switch(
        index, branches, scope, *operands, variables=variables, rngs=rngs
    )


_switch_wrapper.__name__ = "switch"


def switch(
    index: Any,
    branches: Sequence[Callable[..., C]],
    mdl: Module,
    *operands: Any,
    variables: Filter = True,
    rngs: Filter = True,
) -> C:
    """A lifted ``jax.lax.switch``: ``branches[index](mdl, *operands)``."""
    return lift_direct_transform(
        _switch_wrapper,
        tuple(branches),
        mdl,
        index,
        *operands,
        variables=variables,
        rngs=rngs,
        n_branches=len(branches),
    )


def _custom_vjp_single_scope_fn(
    fn: Callable[..., Any],
    backward_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    nodiff_fn = functools.partial(fn, needs_residual=False)
    forward_fn = functools.partial(fn, needs_residual=True)
    return lift.custom_vjp(
        nodiff_fn, forward_fn, backward_fn, grad_vars, nondiff_argnums
    )


def custom_vjp(
    fn: Callable[..., Any],
    forward_fn: Callable[..., Any],
    backward_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_vjp``; returns ``f(mdl, *args)``.

    ``forward_fn(mdl, *args) -> (y, res)``; ``backward_fn(*nondiff, res, dy) ->
    (variables_grad, *args_grad)``.
    """

    def shared_forward_fn(*args: Any, needs_residual: bool, **kwargs: Any) -> Any:
        if needs_residual:
            return forward_fn(*args, **kwargs)
        return fn(*args, **kwargs)

    shared_forward_fn.__name__ = getattr(fn, "__name__", "custom_vjp")
    return decorator_lift_transform(
        _custom_vjp_single_scope_fn,
        shared_forward_fn,
        backward_fn=backward_fn,
        grad_vars=grad_vars,
        nondiff_argnums=nondiff_argnums,
        multi_scope=False,
    )


def custom_jvp(
    fn: Callable[..., Any],
    jvp_fn: Callable[..., Any],
    grad_vars: Filter = "params",
    nondiff_argnums: Sequence[int] = (),
) -> Callable[..., Any]:
    """A lifted ``jax.custom_jvp`` (lens; Flax has none); returns ``f(mdl, *args)``.

    ``jvp_fn(mdl, primals, tangents, variable_tangents) -> (y, y_tangent)``.
    """

    def shared_fn(*args: Any, as_jvp: bool, **kwargs: Any) -> Any:
        return jvp_fn(*args, **kwargs) if as_jvp else fn(*args, **kwargs)

    def core(shared: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
        return lift.custom_jvp(
            functools.partial(shared, as_jvp=False),
            functools.partial(shared, as_jvp=True),
            grad_vars,
            nondiff_argnums,
        )

    shared_fn.__name__ = getattr(fn, "__name__", "custom_jvp")
    return decorator_lift_transform(core, shared_fn, multi_scope=False)


def named_call(class_fn: Callable[..., Any], force: bool = True) -> Callable[..., Any]:
    """Labels a method's operations with ``Class.method`` in profiles."""
    from lens.nn import _context

    @functools.wraps(class_fn)
    def wrapped_fn(self: Module, *args: Any, **kwargs: Any) -> Any:
        if (not force and not _context.use_named_call()) or self._state.in_setup:
            return class_fn(self, *args, **kwargs)
        name = _get_fn_name(class_fn)
        suffix = f".{name}" if name != "__call__" else ""
        full = f"{self.name or type(self).__name__}{suffix}"
        return jax.named_call(class_fn, name=full)(self, *args, **kwargs)

    return wrapped_fn


def add_metadata_axis(
    target: Target,
    variable_axes: Mapping[Filter, Any] = FrozenDict(),
    metadata_params: dict[Any, Any] = {},  # noqa: B006 - read only
) -> Target:
    """Adds an axis to the metadata of boxes without a transform adding one.

    For modules whose variables are stacked by hand (e.g. an ensemble created with
    ``jax.vmap`` of ``init``) so their boxes name the stacked axis.
    """

    def add_fn(axis: int) -> Callable[[Any], Any]:
        return lambda x: _meta.add_axis(x, axis, metadata_params)

    def remove_fn(axis: int) -> Callable[[Any], Any]:
        return lambda x: _meta.remove_axis(x, axis, metadata_params)

    for col, axis in variable_axes.items():
        target = map_variables(
            target,
            col,
            trans_in_fn=remove_fn(axis),
            trans_out_fn=add_fn(axis),
            mutable=True,
        )
    return target


def fold_rngs(target: Target, variables: Filter = True, rngs: Filter = True) -> Target:
    """Runs a module with fresh rng streams from ``make_rng`` (as ``nn.jit`` does)."""
    return lift_transform_cached(lift.fold_rngs, target, variables=variables, rngs=rngs)


show_at_flax_paths(__name__)
