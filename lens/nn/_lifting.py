"""How module methods and classes are lifted through ``lens.core.lift`` transforms.

A transformed method receives bound modules (``self``, and any module found in its
arguments, such as the seed's ``Partial(fn, [dense])``). Their scopes are lifted
together by ``pack`` (children of ``self`` are de-duplicated and rebuilt by path);
inside the transform each module is replaced by a clone bound to its inner scope.
Modules never cross the JAX transform as values: they travel as empty pytree
placeholders.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax

from lens import errors
from lens.nn._module import Module, _map_submodules


@jax.tree_util.register_pytree_node_class
class _ModuleRef:
    """An empty pytree standing in for a lifted module inside a transform."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def tree_flatten(self) -> tuple[tuple, int]:
        return (), self.index

    @classmethod
    def tree_unflatten(cls, index: int, children: tuple) -> _ModuleRef:
        return cls(index)

    def __repr__(self) -> str:
        return f"_ModuleRef({self.index})"


def _is_module(x: Any) -> bool:
    return isinstance(x, Module)


def _is_module_or_ref(x: Any) -> bool:
    return isinstance(x, Module | _ModuleRef)


class _Lifted:
    """The bound modules of one transformed call and how to rebuild them inside."""

    def __init__(self, self_module: Module, args: tuple, kwargs: dict):
        self.modules: list[Module] = [self_module]
        # Bound modules held in self's fields are lifted too (they may be used inside).
        self.field_refs: dict[str, Any] = {}
        for f in dataclasses.fields(self_module):
            if not f.init or f.name in ("parent", "name"):
                continue
            value = getattr(self_module, f.name)
            if any(
                isinstance(m, Module) and m.scope is not None
                for m in _flat_modules(value)
            ):
                self.field_refs[f.name] = _map_submodules(
                    value, lambda m, _: self._ref(m), f.name
                )
        self.args, self.kwargs = jax.tree_util.tree_map(
            lambda x: self._ref(x) if isinstance(x, Module) else x,
            (args, kwargs),
            is_leaf=_is_module,
        )

    def _ref(self, m: Module) -> Any:
        if m.scope is None:
            return m  # unbound modules are plain values (they will bind inside)
        for i, other in enumerate(self.modules):
            if other is m:
                return _ModuleRef(i)
        self.modules.append(m)
        return _ModuleRef(len(self.modules) - 1)

    @property
    def scopes(self) -> list[Any]:
        return [m.scope for m in self.modules]

    def rebuild(
        self, scopes: Sequence[Any], args: tuple, kwargs: dict
    ) -> tuple[Module, tuple, dict]:
        """Clones bound to the inner ``scopes``; placeholders in args replaced."""
        clones: list[Module | None] = [None] * len(self.modules)

        def restore(x: Any) -> Any:
            return clones[x.index] if isinstance(x, _ModuleRef) else x

        for i in range(len(self.modules) - 1, 0, -1):
            clones[i] = self.modules[i].clone(parent=scopes[i])
        fields = {
            k: jax.tree_util.tree_map(restore, v, is_leaf=_is_module_or_ref)
            for k, v in self.field_refs.items()
        }
        clones[0] = self.modules[0].clone(parent=scopes[0], **fields)
        args, kwargs = jax.tree_util.tree_map(
            restore, (args, kwargs), is_leaf=_is_module_or_ref
        )
        return clones[0], args, kwargs  # type: ignore[return-value]


def _flat_modules(value: Any) -> list[Module]:
    found: list[Module] = []
    _map_submodules(value, lambda m, _: found.append(m) or m, "")
    return found


def _check_no_module(y: Any, what: str) -> Any:
    for leaf in jax.tree_util.tree_leaves(y, is_leaf=_is_module):
        if isinstance(leaf, Module):
            raise errors.TransformedMethodReturnValueError(
                f"{what} returned the module {type(leaf).__name__}; modules cannot be "
                "returned from a transformed method.\nReturn arrays (e.g. the module's "
                "output) instead."
            )
    return y


def lift_call(
    core_transform: Callable[..., Callable[..., Any]],
    fun: Callable[..., Any],
    self: Module,
    args: tuple,
    kwargs: dict,
    what: str,
) -> Any:
    """Calls ``fun(self, *args, **kwargs)`` through ``core_transform``.

    ``core_transform(core_fn)`` must return a function of ``(scopes, *args, **kw)``.
    """
    if self.scope is None:
        raise errors.CallCompactUnboundModuleError(type(self).__name__, what)
    lifted = _Lifted(self, args, kwargs)

    def core_fn(scopes: list[Any], *args: Any, **kwargs: Any) -> Any:
        module, args, kwargs = lifted.rebuild(scopes, args, kwargs)
        return _check_no_module(fun(module, *args, **kwargs), what)

    return core_transform(core_fn)(lifted.scopes, *lifted.args, **lifted.kwargs)


def _check_target(target: Any, transform: str) -> None:
    if isinstance(target, Module):
        raise errors.TransformTargetError(
            f"nn.{transform} got a module instance, {type(target).__name__}(...); it "
            f"transforms a Module class or a method.\nWrite nn.{transform}("
            f"{type(target).__name__}, ...)(<attributes>) instead."
        )
    if not (isinstance(target, type) and issubclass(target, Module)) and not callable(
        target
    ):
        raise errors.TransformTargetError(
            f"nn.{transform} transforms a Module class or a method, got {target!r}."
        )


def module_transform(
    transform: str,
    target: Any,
    make_core: Callable[[Callable[..., Any]], Callable[..., Any]],
    methods: Sequence[str] | None = None,
) -> Any:
    """Applies a core transform to a Module class (a new class) or to a method.

    Args:
      transform: the transform's name (``'vmap'``); the new class is called
        ``Vmap<Class>``.
      target: a Module subclass or a function ``f(module, *args)``.
      make_core: ``make_core(core_fn)`` returns the core-lifted function.
      methods: the methods of a class to transform (default ``['__call__']``).
    """
    _check_target(target, transform)
    if isinstance(target, type):
        methods = list(methods or ["__call__"])
        attrs: dict[str, Any] = {"__module__": target.__module__, "__qualname__": ""}
        for m in methods:
            orig = getattr(target, m, None)
            if orig is None:
                raise errors.TransformTargetError(
                    f"nn.{transform}: {target.__name__} has no method {m!r}."
                )
            attrs[m] = _transformed_method(
                transform, make_core, orig, f"{target.__name__}.{m}"
            )
        name = transform.capitalize() + target.__name__
        attrs["__qualname__"] = name
        return type(name, (target,), attrs)
    return _transformed_function(transform, make_core, target)


def _transformed_method(
    transform: str, make_core: Callable[..., Any], orig: Callable[..., Any], what: str
) -> Callable[..., Any]:
    @functools.wraps(orig)
    def method(self: Module, *args: Any, **kwargs: Any) -> Any:
        return lift_call(make_core, orig, self, args, kwargs, what)

    method._lens_wrapped = True  # type: ignore[attr-defined]  # no lifecycle wrapper
    return method


def _transformed_function(
    transform: str, make_core: Callable[..., Any], fun: Callable[..., Any]
) -> Callable[..., Any]:
    what = f"nn.{transform}({getattr(fun, '__qualname__', fun)!s})"

    @functools.wraps(fun)
    def wrapper(module: Module, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(module, Module):
            raise errors.TransformTargetError(
                f"{what} must be called with a bound module as its first argument, got {module!r}."
            )
        return lift_call(make_core, fun, module, args, kwargs, what)

    return wrapper
