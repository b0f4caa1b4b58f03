"""The pieces of the Module system around the class itself: the lifecycle state,
the method and descriptor wrappers, ``@compact``/``@nowrap``/``@compact_name_scope``,
method interceptors and unique ids.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import inspect
import threading
import types
import typing
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from lens import errors
from lens._facades import show_at_flax_paths
from lens.ids import ModuleId as ModuleId
from lens.ids import uuid as uuid
from lens.nn import _context
from lens.nn._module_base import ModuleBase as ModuleBase
from lens.nn._module_base import module_field as module_field

F = TypeVar("F", bound=Callable[..., Any])

# ------------------------------------------------------------ parent sentinel


class _Sentinel:
    """The default of ``parent``: take it from the module whose method is running."""

    def __copy__(self) -> _Sentinel:
        return self

    def __deepcopy__(self, memo: Any) -> _Sentinel:
        return self

    def __reduce__(self) -> tuple[Any, tuple]:
        return _get_unspecified_parent, ()

    def __repr__(self) -> str:
        return "_unspecified_parent"


def _get_unspecified_parent() -> _Sentinel:
    return _unspecified_parent


_unspecified_parent = _Sentinel()


# ----------------------------------------------------------------------- state


class SetupState(enum.IntEnum):
    """Whether ``setup`` ran: not yet, only outside a transform, or here."""

    NEW = 0
    TRANSFORMED = 1
    DONE = 2


@dataclasses.dataclass
class _ModuleInternalState:
    """The ephemeral state of a module instance: naming cursors and phases.

    ``export``/``reimport`` carry it across a transform boundary, so a module
    rebuilt inside a transform continues the naming where the outer one stands.
    """

    in_compact_method: bool = False
    in_setup: bool = False
    setup_called: SetupState = SetupState.NEW
    is_initialized: bool = False
    autoname_cursor: dict[str, int] = dataclasses.field(default_factory=dict)
    children: dict[str, Any] = dataclasses.field(default_factory=dict)
    in_declare: bool = False
    # The outermost @compact method running now, and which one first made each
    # auto-named submodule: two compact methods that would share one by its
    # auto name (Dense_0) raise MultipleMethodsCompactError instead.
    compact_method: str | None = None
    autoname_owner: dict[str, str] = dataclasses.field(default_factory=dict)

    def reset(self) -> None:
        """Resets what belongs to one method call."""
        self.in_compact_method = False
        self.in_setup = False
        self.autoname_cursor = {}
        self.compact_method = None

    def export(self) -> _ModuleInternalState:
        """A copy to hand to the module rebuilt inside a transform."""
        return _ModuleInternalState(
            in_compact_method=self.in_compact_method,
            in_setup=self.in_setup,
            setup_called=(
                SetupState.TRANSFORMED if self.setup_called else SetupState.NEW
            ),
            is_initialized=self.is_initialized,
            autoname_cursor=dict(self.autoname_cursor),
            compact_method=self.compact_method,
            autoname_owner=dict(self.autoname_owner),
        )

    def reimport(self, other: _ModuleInternalState) -> None:
        """Takes back the naming state of the module used inside a transform."""
        self.in_compact_method = other.in_compact_method
        self.in_setup = other.in_setup
        self.is_initialized = other.is_initialized
        self.autoname_cursor = dict(other.autoname_cursor)
        self.autoname_owner.update(other.autoname_owner)


_uninitialized_module_internal_state = _ModuleInternalState()


class ParentDescriptor:
    """Stores ``parent`` as a weak reference when it is a module (no ref cycles)."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return None
        parent = object.__getattribute__(obj, "_parent_ref")
        return parent() if isinstance(parent, weakref.ReferenceType) else parent

    def __set__(self, obj: Any, value: Any) -> None:
        ref = weakref.ref(value) if isinstance(value, ModuleBase) else value
        object.__setattr__(obj, "_parent_ref", ref)


# ------------------------------------------------------------------- wrapping


def _get_fn_name(fn: Any) -> str:
    if isinstance(fn, functools.partial):
        return _get_fn_name(fn.func)
    return getattr(fn, "__name__", "unnamed_function")


def wrap_method_once(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a module method with the lifecycle handler (once).

    The handler runs ``setup`` lazily, names compact submodules, runs
    interceptors, records intermediates and call information.
    """
    if hasattr(fun, "method_handler_wrapped"):
        return fun

    @functools.wraps(fun)
    def wrapped_module_method(*args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], ModuleBase):
            self, args = args[0], args[1:]
            return self._call_wrapped_method(fun, args, kwargs)
        return fun(*args, **kwargs)

    wrapped_module_method.method_handler_wrapped = True  # type: ignore[attr-defined]
    return wrapped_module_method


class DescriptorWrapper:
    """Base of wrapped descriptors (properties of modules)."""


def create_descriptor_wrapper(descriptor: Any) -> DescriptorWrapper:
    """Wraps ``descriptor`` so an ``AttributeError`` inside it is reported as such.

    Without it, a property that reads a missing attribute looks like the property
    itself is missing.
    """

    class _DescriptorWrapper(DescriptorWrapper):
        if hasattr(descriptor, "__isabstractmethod__"):
            __isabstractmethod__ = descriptor.__isabstractmethod__

        def __init__(self, wrapped: Any):
            self.wrapped = wrapped

        if hasattr(descriptor, "__get__"):

            def __get__(self, *args: Any, **kwargs: Any) -> Any:
                try:
                    return self.wrapped.__get__(*args, **kwargs)
                except AttributeError as e:
                    raise errors.DescriptorAttributeError() from e

        if hasattr(descriptor, "__set__"):

            def __set__(self, *args: Any, **kwargs: Any) -> Any:
                return self.wrapped.__set__(*args, **kwargs)

        if hasattr(descriptor, "__delete__"):

            def __delete__(self, *args: Any, **kwargs: Any) -> Any:
                return self.wrapped.__delete__(*args, **kwargs)

        if hasattr(descriptor, "__set_name__"):

            def __set_name__(self, *args: Any, **kwargs: Any) -> None:
                self.wrapped.__set_name__(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            if "wrapped" not in vars(self):
                raise AttributeError(name)
            return getattr(self.wrapped, name)

    return _DescriptorWrapper(descriptor)


def wrap_descriptor_once(descriptor: Any) -> DescriptorWrapper:
    """Wraps a descriptor with :func:`create_descriptor_wrapper` (once)."""
    if isinstance(descriptor, DescriptorWrapper):
        return descriptor
    return create_descriptor_wrapper(descriptor)


def _wrap_hash(hash_fn: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(hash_fn)
    def wrapped(self: Any) -> int:
        if self.scope is not None:
            raise TypeError("Can't call __hash__ on modules that hold variables.")
        try:
            return hash_fn(self)
        except TypeError as exc:
            raise TypeError(
                "Failed to hash Flax Module.  The module probably contains unhashable "
                f"attributes.  Module={self}"
            ) from exc

    return wrapped


def _get_unbound_fn(method_or_fn: Any) -> Callable[..., Any]:
    """The function behind ``method_or_fn`` that takes the module first."""
    if inspect.ismethod(method_or_fn) and isinstance(method_or_fn.__self__, ModuleBase):
        method_or_fn = method_or_fn.__func__
    if not callable(method_or_fn):
        raise errors.ApplyModuleInvalidMethodError(method_or_fn)
    if type(method_or_fn) is types.FunctionType:
        if method_or_fn in _TAKES_MODULE:
            return method_or_fn
        checked = method_or_fn
    else:
        checked = None
    try:
        params = inspect.signature(method_or_fn).parameters
    except (TypeError, ValueError):
        return method_or_fn
    if len(params) < 1:
        raise errors.ApplyModuleInvalidMethodError(
            method_or_fn,
            detail="The function takes no arguments; it must take the module first, "
            "e.g. lambda module, x: module.encode(x).",
        )
    if checked is not None:
        _TAKES_MODULE.add(checked)
    return method_or_fn


# The functions whose signature takes an argument (the module): inspect.signature
# once per function, not once per apply.
_TAKES_MODULE: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()


# ----------------------------------------------------------------- decorators


def compact(fun: F) -> F:
    """Marks a method in which submodules and variables may be defined inline.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> class Foo(nn.Module):
        ...     @nn.compact
        ...     def __call__(self, x):
        ...         return nn.Dense(2)(x)            # named Dense_0
        >>> v = Foo().init(jax.random.key(0), jnp.ones((1, 3)))
        >>> list(v["params"])
        ['Dense_0']
    """
    fun.compact = True  # type: ignore[attr-defined]
    return fun


def nowrap(fun: F) -> F:
    """Marks a method that is not wrapped by the lifecycle handler.

    For helpers that build submodules from construction arguments, or overrides of
    ``Module.param`` and friends.
    """
    fun.nowrap = True  # type: ignore[attr-defined]
    return fun


def compact_name_scope(fun: F) -> F:
    """Runs a method as a compact method in its own name scope (named after it).

    Its submodules are named under the method name (``up/Dense_0``); the method can
    be called from ``apply(..., method="up")`` too.
    """

    @functools.wraps(fun)
    def compact_name_scope_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = fun.__name__
        modules = self.__dict__.get("_compact_name_scope_modules")
        if modules is None:
            self._try_setup()
            modules = self.__dict__.get("_compact_name_scope_modules")
        if modules is None:
            raise ValueError(
                f"Cannot call compact_name_scope method {name!r} on a Module that has "
                f"not been setup. This is likely because you are calling {name!r} "
                "from outside of init or apply."
            )
        return modules[name](*args, **kwargs)

    compact_name_scope_wrapper.compact_name_scope = True  # type: ignore[attr-defined]
    compact_name_scope_wrapper.inner_fun = fun  # type: ignore[attr-defined]
    compact_name_scope_wrapper.nowrap = True  # type: ignore[attr-defined]
    return compact_name_scope_wrapper  # type: ignore[return-value]


# --------------------------------------------------------------- interceptors


@dataclasses.dataclass(frozen=True)
class InterceptorContext:
    """What an interceptor is told about the call it intercepts.

    Attributes:
      module: the module whose method is called.
      method_name: the method's name.
      orig_method: the method itself; calling it skips the other interceptors.
    """

    module: Any
    method_name: str
    orig_method: Callable[..., Any]


Args = tuple[Any]
"""The positional arguments an interceptor sees."""
Kwargs = dict[str, Any]
"""The keyword arguments an interceptor sees."""
NextGetter = Callable[..., Any]
"""What an interceptor calls to run the method (or the next interceptor)."""
Interceptor = Callable[[NextGetter, Args, Kwargs, InterceptorContext], Any]
"""A function given to :func:`intercept_methods`."""


@contextlib.contextmanager
def intercept_methods(interceptor: Callable[..., Any]) -> Iterator[None]:
    """Registers ``interceptor(next_fun, args, kwargs, context)`` for module methods.

    Interceptors nest: the one registered first runs first (outermost). Methods
    marked ``@nowrap``, dunder methods, fields and descriptors are not intercepted.
    The registration belongs to this thread and context.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens import nn
        >>> class Foo(nn.Module):
        ...     def __call__(self, x):
        ...         return x
        >>> def double(next_fun, args, kwargs, context):
        ...     return 2 * next_fun(*args, **kwargs)
        >>> with nn.intercept_methods(double):
        ...     Foo()(3)
        6
    """
    with _context.pushed(_context._interceptors, interceptor):
        yield


def run_interceptors(
    orig_method: Callable[..., Any], module: Any, *args: Any, **kwargs: Any
) -> Any:
    """Calls ``orig_method(module, *args, **kwargs)`` through the interceptors."""
    fun: Callable[..., Any] = functools.partial(orig_method, module)
    context = InterceptorContext(module, _get_fn_name(orig_method), fun)

    def wrap(interceptor: Callable[..., Any], nxt: Callable[..., Any]) -> Any:
        @functools.wraps(nxt)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return interceptor(nxt, args, kwargs, context)

        return wrapped

    # The innermost interceptor is the last registered, next to the method.
    for interceptor in reversed(_context._interceptors.get()):
        fun = wrap(interceptor, fun)
    return fun(*args, **kwargs)


tuple_reduce = lambda xs, x: xs + (x,)  # noqa: E731
tuple_init = lambda: ()  # noqa: E731
capture_call_intermediates = lambda _, method_name: method_name == "__call__"  # noqa: E731


# ------------------------------------------------- names Flax's module exposes


class ThreadLocalStack(threading.local):
    """A stack private to each thread (lens keeps its own context in contextvars)."""

    def __init__(self) -> None:
        self._storage: list[Any] = []

    def push(self, elem: Any) -> None:
        self._storage.append(elem)

    def pop(self) -> Any:
        return self._storage.pop()

    def __iter__(self) -> Iterator[Any]:
        return iter(reversed(self._storage))

    def __len__(self) -> int:
        return len(self._storage)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._storage})"


@typing.runtime_checkable
class Descriptor(typing.Protocol):
    """The descriptor protocol (properties and the like on a Module)."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any: ...


show_at_flax_paths(__name__)
