"""How modules are run: ``init``, ``apply``, ``bind`` (methods and functions).

``init`` is ``apply`` with no variables, every collection but ``intermediates``
mutable and an ``initializing`` flag. Each clones the module (deeply, keeping
shared submodules shared) and binds the clone to a fresh root scope, so the
module the user holds never changes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lens import errors
from lens._facades import show_at_flax_paths
from lens._views import Displayable
from lens.core import DenyList, Filter, union_filters
from lens.core import apply as core_apply
from lens.core import bind as core_bind
from lens.core import init as core_init
from lens.core import is_valid_rng as _is_valid_rng
from lens.nn import _context
from lens.nn._module_base import ModuleBase
from lens.nn._module_support import _get_unbound_fn, capture_call_intermediates
from lens.traceback_util import api_boundary

M = TypeVar("M", bound="ModuleEntryPoints")


def _capture_filter(capture: Any) -> Any:
    return capture_call_intermediates if capture is True else capture


def _scope_fn(
    fn: Callable[..., Any], module: ModuleBase, capture: Any
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def scope_fn(scope: Any, *args: Any, **kwargs: Any) -> Any:
        token = _context.push(_context._capture_stack, capture)
        try:
            return fn(module.clone(parent=scope, _deep_clone=True), *args, **kwargs)
        finally:
            _context.pop(_context._capture_stack, token)

    return scope_fn


@api_boundary
def apply(
    fn: Callable[..., Any],
    module: ModuleBase,
    mutable: Filter = False,
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., Any]:
    """``wrapper(variables, *args, rngs=None, **kw)`` running ``fn(bound_module, *args)``.

    Like ``Module.apply`` for a function of the module (several methods, or a
    submodule's method).
    """
    capture = _capture_filter(capture_intermediates)
    if capture:
        mutable = union_filters(mutable, "intermediates")
    return core_apply(_scope_fn(fn, module, capture), mutable=mutable)


@api_boundary
def init_with_output(
    fn: Callable[..., Any],
    module: ModuleBase,
    mutable: Filter = DenyList("intermediates"),
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., tuple[Any, dict[str, Any]]]:
    """``wrapper(rngs, *args, **kw)`` returning ``(fn(bound_module, *args), variables)``."""
    capture = _capture_filter(capture_intermediates)
    if capture:
        mutable = union_filters(mutable, "intermediates")
    return core_init(_scope_fn(fn, module, capture), mutable=mutable)


@api_boundary
def init(
    fn: Callable[..., Any],
    module: ModuleBase,
    mutable: Filter = DenyList("intermediates"),
    capture_intermediates: bool | Callable[..., bool] = False,
) -> Callable[..., dict[str, Any]]:
    """``wrapper(rngs, *args, **kw)`` returning the variables ``fn(bound_module)`` makes."""
    init_fn = init_with_output(fn, module, mutable, capture_intermediates)

    @functools.wraps(init_fn)
    def init_wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return init_fn(*args, **kwargs)[1]

    return init_wrapper


def _module_checks(module: Any) -> None:
    if not isinstance(module, ModuleBase):
        raise errors.InvalidInstanceModuleError()
    module._module_checks()


def _check_rngs(module: Any, rngs: Any) -> Any:
    if rngs is not None and not isinstance(rngs, dict):
        if not _is_valid_rng(rngs):
            raise errors.InvalidRngError(
                f"RNGs should be of shape (2,) or PRNGKey in Module "
                f"{type(module).__name__}, but rngs are: {rngs}\nPass "
                'jax.random.key(0) or a dict such as {"params": jax.random.key(0)}.'
            )
        rngs = {"params": rngs}
    return rngs


def _resolve_method(module: Any, method: Any, for_apply: bool) -> Callable[..., Any]:
    if isinstance(method, str):
        attribute_name = method
        method = getattr(module, attribute_name)
        if not callable(method):
            raise TypeError(
                f"'{type(module).__name__}.{attribute_name}' must be a callable, got "
                f"{type(method)}."
            )
        if for_apply and isinstance(method, ModuleBase):
            return lambda self, *args, **kwargs: getattr(self, attribute_name)(
                *args, **kwargs
            )
    elif method is None:
        method = module.__call__
    owner = getattr(method, "__self__", None)
    if inspect.ismethod(method) and owner is not module and _is_module(owner):
        path = _find_submodule(module, owner)
        if path is not None:
            func = method.__func__
            return lambda bound, *a, **k: func(_follow(bound, path), *a, **k)
    return _get_unbound_fn(method)


def _is_module(x: Any) -> bool:
    return isinstance(x, ModuleBase)


def _attributes(m: Any) -> list[tuple[str, Any]]:
    import dataclasses

    names = [
        f.name
        for f in dataclasses.fields(m)
        if f.init and f.name not in ("parent", "name")
    ]
    names += [
        k
        for k in m.__dict__
        if not k.startswith("_") and k not in names and k != "scope"
    ]
    return [(k, m.__dict__.get(k)) for k in names]


def _find_submodule(root: Any, target: Any) -> tuple[Any, ...] | None:
    """The attribute path from ``root`` to ``target`` (fields, declare()/setup attributes)."""
    seen: set[int] = set()

    def visit(m: Any, path: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if id(m) in seen:
            return None
        seen.add(id(m))
        for k, v in _attributes(m):
            items = (
                list(enumerate(v))
                if isinstance(v, list | tuple)
                else list(v.items())
                if isinstance(v, Mapping)
                else [(None, v)]
            )
            for i, x in items:
                step = (("attr", k),) if i is None else (("attr", k), ("item", i))
                sub = path + step
                if x is target:
                    return sub
                if _is_module(x):
                    found = visit(x, sub)
                    if found is not None:
                        return found
        return None

    return visit(root, ())


def _follow(module: Any, path: tuple[Any, ...]) -> Any:
    x = module
    for kind, key in path:
        x = getattr(x, key) if kind == "attr" else x[key]
    return x


class ModuleEntryPoints(Displayable, ModuleBase):
    """The ways to run a module: ``init``, ``apply``, ``bind`` and friends."""

    __lens_view__ = "linen module"  # drawn by lens.display

    @api_boundary
    def bind(
        self: M,
        variables: Mapping[str, Any],
        *args: Any,
        rngs: Any = None,
        mutable: Filter = False,
    ) -> M:
        """A bound clone with an unlimited lifetime (for notebooks and debugging).

        It cannot be combined with JAX transforms or optax (it is not a pytree).
        """
        _module_checks(self)
        del args
        scope = core_bind(variables, rngs=rngs, mutable=mutable)
        return self.clone(parent=scope, _deep_clone=True)  # type: ignore[attr-defined]

    def unbind(self: M) -> tuple[M, Mapping[str, Any]]:
        """``(an unbound copy, its variables)`` of a bound module.

        Raises:
          CallUnbindOnUnboundModuleError: if the module is not bound.
        """
        _module_checks(self)
        if self.scope is None:  # type: ignore[attr-defined]
            raise errors.CallUnbindOnUnboundModuleError()
        variables = self.variables  # type: ignore[attr-defined]
        module = self.clone(_deep_clone=True, _reset_names=True, name=None)  # type: ignore[attr-defined]
        return module, variables

    @api_boundary
    def apply(
        self,
        variables: Mapping[str, Any],
        *args: Any,
        rngs: Any = None,
        method: Callable[..., Any] | str | None = None,
        mutable: Filter = False,
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> Any:
        """Runs ``method`` (default ``__call__``) with ``variables``.

        Args:
          variables: ``{collection: tree}`` as returned by ``init``.
          *args, **kwargs: passed to the method.
          rngs: a key (the ``"params"`` stream) or ``{stream: key}``.
          method: a method, a method name, a submodule's name or method, or a
            function ``f(module, *args)``.
          mutable: the collections that may change; they are returned.
          capture_intermediates: store the outputs of every ``__call__`` (or of
            the methods a ``filter(module, method_name)`` picks) in
            ``"intermediates"``.

        Returns:
          The output, or ``(output, mutated_collections)`` when ``mutable``.
        """
        _module_checks(self)
        rngs = _check_rngs(self, rngs)
        fn = _resolve_method(self, method, for_apply=True)
        # apply(fn, self, mutable, capture_intermediates)(...) without its
        # api_boundary (this method has one) and _scope_fn's functools.wraps
        capture = _capture_filter(capture_intermediates)
        if capture:
            mutable = union_filters(mutable, "intermediates")
        module = self

        def scope_fn(scope: Any, *args: Any, **kwargs: Any) -> Any:
            token = _context.push(_context._capture_stack, capture)
            try:
                return fn(module.clone(parent=scope, _deep_clone=True), *args, **kwargs)
            finally:
                _context.pop(_context._capture_stack, token)

        return core_apply(scope_fn, mutable=mutable)(
            variables, *args, **kwargs, rngs=rngs
        )

    @api_boundary
    def init_with_output(
        self,
        rngs: Any,
        *args: Any,
        method: Callable[..., Any] | str | None = None,
        mutable: Filter = DenyList("intermediates"),
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> tuple[Any, dict[str, Any]]:
        """Initializes the variables and returns ``(output, variables)``."""
        _module_checks(self)
        rngs = _check_rngs(self, rngs)
        fn = _resolve_method(self, method, for_apply=False)
        return init_with_output(
            fn,
            self,
            mutable=mutable,
            capture_intermediates=capture_intermediates,  # type: ignore[arg-type]
        )(rngs, *args, **kwargs)

    @api_boundary
    def init(
        self,
        rngs: Any,
        *args: Any,
        method: Callable[..., Any] | str | None = None,
        mutable: Filter = DenyList("intermediates"),
        capture_intermediates: bool | Callable[..., bool] = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Initializes and returns the variables ``{collection: tree}``.

        ``rngs`` is a key (the ``"params"`` stream) or a dict of keys; every
        collection but ``"intermediates"`` is mutable.
        """
        _module_checks(self)
        _, v = self.init_with_output(
            rngs,
            *args,
            method=method,
            mutable=mutable,
            capture_intermediates=capture_intermediates,
            **kwargs,
        )
        return v

    @api_boundary
    def lazy_init(
        self,
        rngs: Any,
        *args: Any,
        method: Callable[..., Any] | None = None,
        mutable: Filter = DenyList("intermediates"),
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Initializes without computing on the inputs.

        Pass inputs as ``jax.ShapeDtypeStruct``: only the variables are computed;
        an initial value that needs an input's value raises ``LazyInitError``.
        """
        from lens.core.partial_eval import lazy_init

        _module_checks(self)

        def lazy_wrapper(rngs: Any, *args: Any, **kwargs: Any) -> Any:
            return self.init(rngs, *args, method=method, mutable=mutable, **kwargs)

        return lazy_init(lazy_wrapper)(rngs, *args, **kwargs)

    def tabulate(
        self,
        rngs: Any,
        *args: Any,
        depth: int | None = None,
        show_repeated: bool = False,
        mutable: Filter = DenyList("intermediates"),
        console_kwargs: Mapping[str, Any] | None = None,
        table_kwargs: Mapping[str, Any] = {},  # noqa: B006 - read only
        column_kwargs: Mapping[str, Any] = {},  # noqa: B006 - read only
        compute_flops: bool = False,
        compute_vjp_flops: bool = False,
        compute_cost: bool = False,
        **kwargs: Any,
    ) -> str:
        """A table of the module calls: path, module, inputs, outputs, variables.

        Returns a ``str`` (print it; in notebooks it also renders as HTML). The
        options are :func:`lens.nn.tabulate`'s (``compute_cost`` is lens's: bytes
        accessed, parameter and activation bytes per call, with units and totals).
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
            compute_cost=compute_cost,
        )(*args, **kwargs)

    def module_paths(
        self,
        rngs: Any,
        *args: Any,
        show_repeated: bool = False,
        mutable: Filter = DenyList("intermediates"),
        **kwargs: Any,
    ) -> dict[str, ModuleBase]:
        """``{path: unbound copy of the module}`` for every module called.

        Runs ``init`` abstractly (``jax.eval_shape``): no compute, no memory.
        """
        from lens.nn._summary import _get_module_table

        table = _get_module_table(
            self,
            depth=None,
            show_repeated=show_repeated,
            compute_flops=False,
            compute_vjp_flops=False,
        )(rngs, *args, **kwargs, mutable=mutable)
        return {"/".join(row.path): row.module_copy for row in table}


# Modules display through lens.display (registered there; loaded when shown);
# each protocol is guarded: an error becomes a DisplayWarning and the plain repr.

show_at_flax_paths(__name__)
