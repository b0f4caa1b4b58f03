"""``nnx.Module``: the base of eager layers, with sowing, capture and views.

``Module.sow`` records intermediate values and ``nnx.capture`` collects them as a
State; ``Module.perturb`` adds a zero you can take gradients of. ``nnx.view``
makes a copy of a model with some attributes changed (``deterministic=True``)
whose variables are the original's, and ``iter_modules`` / ``iter_children``
walk the module tree.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar, cast

import jax
import jax.numpy as jnp

from lens._facades import show_at_flax_paths
from lens.nnx._graph import update as graphupdate
from lens.nnx._graph.ops import clone, iter_graph
from lens.nnx._graph.walk import Path
from lens.nnx._objects.object import ObjectMeta, Pytree
from lens.nnx._variables.filters import to_predicate
from lens.nnx._variables.names import variable_type_from_name
from lens.nnx._variables.state import State
from lens.nnx._variables.variable import Perturbation, Variable
from lens.nnx.tracers import structure_changed
from lens.traceback_util import api_boundary

A = TypeVar("A")


_CAPTURES = "__captures__"


StateMapping = Mapping[Path, Any]
"""A mapping of paths to state values."""

P = ParamSpec("P")


def tuple_reduce(xs: tuple, x: Any) -> tuple:
    """``sow``'s default accumulation: ``xs`` with ``x`` appended."""
    return (*xs, x)


def tuple_init() -> tuple:
    """``sow``'s default initial value: the empty tuple."""
    return ()


class ModuleMeta(ObjectMeta):
    """The metaclass of :class:`Module` (flax.nnx's): an :class:`ObjectMeta`
    (subclass it to wrap how modules are constructed)."""


def first_from(*args: A | None, error_msg: str) -> A:
    """The first argument that is not ``None``.

    Raises:
        ValueError: every argument is ``None`` (with ``error_msg``).
    """
    for arg in args:
        if arg is not None:
            return arg
    raise ValueError(error_msg)


def _var_type(t: Any) -> type[Variable]:
    if isinstance(t, str):
        return variable_type_from_name(t, allow_register=True)
    return t


class Module(Pytree, metaclass=ModuleMeta):
    """Base class of eager modules: set attributes in ``__init__``, compute in
    ``__call__``. Submodules, variables and lists of them are found by attribute."""

    def sow(
        self,
        variable_type: type[Variable] | str,
        name: str,
        value: Any,
        reduce_fn: Callable[[Any, Any], Any] = tuple_reduce,
        init_fn: Callable[[], Any] = tuple_init,
    ) -> bool:
        """Records ``value`` under ``name`` for :func:`capture` (appended to a tuple
        by default; ``reduce_fn``/``init_fn`` choose another accumulation).

        Outside ``nnx.capture`` it stores into a ``variable_type`` attribute
        ``name`` of this module (deprecated in flax.nnx, kept working)."""
        variable_type = _var_type(variable_type)
        captures = self.__dict__.get(_CAPTURES)
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    store = dict(var.value)
                    store[name] = reduce_fn(
                        store[name] if name in store else init_fn(), value
                    )
                    var.value = store
                    return True
            return False
        if hasattr(self, name):
            variable = getattr(self, name)
            if not isinstance(variable, Variable):
                raise ValueError(
                    f"Expected '{name}' to be a Variable, got {type(variable).__name__}"
                    f"\n{type(self).__name__}.sow({name!r}) would overwrite an "
                    "attribute; sow under another name."
                )
            if type(variable) is not variable_type:
                raise ValueError(
                    f"Expected '{name}' to be of type '{variable_type.__name__}', "
                    f"got '{type(variable).__name__}'"
                )
            variable.value = reduce_fn(variable.value, value)
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        warnings.warn(
            "Using 'Module.sow()' outside of 'nnx.capture()' is deprecated in "
            "flax.nnx; wrap the call in nnx.capture(model, nnx.Intermediate).",
            DeprecationWarning,
            stacklevel=2,
        )
        return True

    def perturb(
        self,
        name: str,
        value: Any,
        variable_type: type[Variable] | str = Perturbation,
    ) -> Any:
        """``value`` plus a perturbation stored under ``name`` (zeros first): the
        gradient with respect to the perturbation is the gradient at ``value``."""
        variable_type = _var_type(variable_type)
        captures = self.__dict__.get(_CAPTURES)
        if captures is not None:
            for var in captures:
                if type(var) is variable_type:
                    if name not in var.value:
                        var.value = {
                            **var.value,
                            name: jax.tree.map(jnp.zeros_like, value),
                        }
                    return var.value[name] + value
            return value
        if hasattr(self, name):
            var = getattr(self, name)
            if not isinstance(var, variable_type):
                raise ValueError(
                    f"Expected '{name}' to be of type '{variable_type.__name__}', "
                    f"got '{type(var).__name__}'"
                )
            old = var.value
        else:
            old = jax.tree.map(jnp.zeros_like, value)
            setattr(self, name, variable_type(old))
        warnings.warn(
            "Using 'Module.perturb()' outside of 'nnx.capture()' is deprecated in "
            "flax.nnx; use nnx.capture(model, nnx.Perturbation).",
            DeprecationWarning,
            stacklevel=2,
        )
        return old + value

    def set_attributes(
        self,
        *filters: Any,
        raise_if_not_found: bool = True,
        graph: bool | None = None,
        **attributes: Any,
    ) -> None:
        """Sets ``attributes`` on every submodule that has them (``self``
        included), or only on those matching one of ``filters``; ``graph``
        chooses how the modules are walked (see :func:`iter_modules`).

        Raises:
            ValueError: with ``raise_if_not_found``, an attribute no selected
                module has.
        """
        predicates = [to_predicate(f) for f in filters] or [lambda *_: True]
        found = set()
        for path, node in iter_modules(self, graph=graph):
            if not any(p(path, node) for p in predicates):
                continue
            for name, value in attributes.items():
                if hasattr(node, name):
                    setattr(node, name, value)
                    found.add(name)
        if found:  # a jit that cached a walk of these modules must walk again
            structure_changed()
        missing = set(attributes) - found
        if raise_if_not_found and missing:
            raise ValueError(
                f"Could not find at least one instance of the following attributes: "
                f"{sorted(missing)}\nNo submodule of {type(self).__name__} has them; "
                "pass raise_if_not_found=False to allow that."
            )

    def train(self, **attributes: Any) -> None:
        """Training mode: dropout on, batch statistics from the batch."""
        self.set_attributes(
            deterministic=False,
            use_running_average=False,
            raise_if_not_found=False,
            **attributes,
        )

    def eval(self, **attributes: Any) -> None:
        """Evaluation mode: dropout off, running batch statistics."""
        self.set_attributes(
            deterministic=True,
            use_running_average=True,
            raise_if_not_found=False,
            **attributes,
        )

    def iter_modules(self) -> Iterator[tuple[Path, Module]]:
        """Yields ``(path, module)`` for every submodule and this module (last)."""
        return iter_modules(self)

    def iter_children(self) -> Iterator[tuple[Any, Module]]:
        """Yields ``(name, module)`` for the direct submodules (deprecated in
        flax.nnx for the ``nnx.iter_children(module)`` function)."""
        warnings.warn(
            "The 'm.iter_children()' method is deprecated; use the "
            "'nnx.iter_children(m)' function instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        yield from iter_children(self)


def iter_modules(
    module: Any, /, *, graph: bool | None = None
) -> Iterator[tuple[Path, Any]]:
    """Yields ``(path, module)`` for every Module in ``module`` (itself included,
    last), each once; children come before their parent."""
    for path, value in iter_graph(module, graph=graph):
        if isinstance(value, Module):
            yield path, value


# flax.nnx.module's names for the graph room's children walk: every graph node
# one level down (Variables included), or only the sub-objects.
iter_children = graphupdate.iter_children
iter_module_children = graphupdate.iter_module_children


def capture(
    fn: Any,
    *var_types: type[Variable],
    init: State | None = None,
    method_outputs: type[Variable] | None = None,
) -> Any:
    """Wraps ``fn`` so that calling it returns ``(result, intermediates)``: a State
    of what the modules ``sow`` (or ``perturb``) during the call, per type.

    ``fn`` is a module (its ``__call__``), a bound method, or a function whose
    first argument is the module; ``capture(nnx.Intermediate)`` used alone is a
    decorator. ``init`` seeds perturbations; ``method_outputs`` sows every public
    method's output under its name.

    >>> from lens import nnx
    >>> import jax.numpy as jnp
    >>> class Foo(nnx.Module):
    ...     def __call__(self, x):
    ...         self.sow(nnx.Intermediate, "features", x * 2)
    ...         return x
    >>> y, inter = nnx.capture(Foo(), nnx.Intermediate)(jnp.ones(2))
    >>> inter["features"].value[0].tolist()
    [2.0, 2.0]
    """
    if isinstance(fn, type) and issubclass(fn, Variable):
        types = (fn, *var_types)
        return lambda actual: capture(
            actual, *types, init=init, method_outputs=method_outputs
        )
    bound = None
    if inspect.ismethod(fn) and isinstance(fn.__self__, Module):
        bound = fn.__self__
    elif isinstance(fn, Module):
        bound = fn
    target: Callable[..., Any] = cast(Any, fn)  # a module: through its __call__
    all_types = tuple(var_types) + (
        (method_outputs,) if method_outputs and method_outputs not in var_types else ()
    )

    @functools.wraps(target)
    @api_boundary
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        module = bound if bound is not None else args[0]
        seeds = _state_by_path(init) if init is not None else {}
        modules = list(iter_modules(module))
        for path, m in modules:
            stores: dict[type, dict[str, Any]] = {t: {} for t in all_types}
            for name, var in seeds.get(path, {}).items():
                stores.setdefault(type(var), {})[name] = var.value
            object.__setattr__(
                m, _CAPTURES, tuple(t(store) for t, store in stores.items())
            )
        patched = []
        if method_outputs is not None:
            for _, m in modules:
                patched += _add_capturing(type(m), method_outputs)
        try:
            result = target(*args, **kwargs)
        finally:
            for cls, name, original in patched:
                setattr(cls, name, original)
            out = _extract_captures(module, set(var_types))
        if not var_types:
            return result
        parts = [_filter_state(out, t) for t in var_types]
        return (result, parts[0]) if len(parts) == 1 else (result, *parts)

    return wrapper


def _state_by_path(state: Any) -> dict[Path, dict[str, Variable]]:
    found: dict[Path, dict[str, Variable]] = {}

    def go(s: Any, path: Path) -> None:
        for key, value in s.items():
            if isinstance(value, Variable):
                found.setdefault(path, {})[key] = value
            elif hasattr(value, "items"):
                go(value, path + (key,))

    go(state, ())
    return found


def _extract_captures(module: Any, types: set[type]) -> dict[Path, Any]:
    flat: dict[Path, Any] = {}
    for path, m in iter_modules(module):
        captures = m.__dict__.get(_CAPTURES)
        if captures is None:
            continue
        for var in captures:
            if type(var) in types:
                for key, value in var.value.items():
                    flat[path + (key,)] = type(var)(value)
        object.__delattr__(m, _CAPTURES)
    return flat


def _filter_state(flat: dict[Path, Any], t: type) -> State:
    from lens.nnx._variables.state import from_flat_state

    return from_flat_state({p: v for p, v in flat.items() if type(v) is t})


def _add_capturing(cls: type, variable_type: type[Variable]) -> list[tuple]:
    """Wraps ``cls``'s own public methods (and ``__call__``) to sow their output."""
    patched = []
    for name, method in list(vars(cls).items()):
        if not callable(method) or (name.startswith("_") and name != "__call__"):
            continue
        if getattr(method, "_lens_captures", False):
            continue

        def make(name: str, method: Any) -> Any:
            @functools.wraps(method)
            def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
                result = method(self, *args, **kwargs)
                self.sow(variable_type, name, result)
                return result

            wrapped._lens_captures = True  # type: ignore[attr-defined]
            return wrapped

        setattr(cls, name, make(name, method))
        patched.append((cls, name, method))
    return patched


def _copy_structure(node: A) -> A:
    """A new object graph with the same structure whose variables are the
    original's (so a view's updates are the model's)."""
    return clone(node, variables=False)


def view(
    node: A,
    /,
    *,
    only: Any = ...,
    raise_if_not_found: bool = True,
    graph: bool | None = None,
    **kwargs: Any,
) -> A:
    """A copy of ``node`` whose modules have ``kwargs`` set through their
    ``set_view`` (e.g. ``deterministic=True``), sharing ``node``'s variables.

    ``only`` filters the modules set. A keyword no module takes raises
    ValueError unless ``raise_if_not_found=False``.
    """
    predicate = to_predicate(only)
    out = _copy_structure(node)
    remaining = set(kwargs)
    for path, m in iter_graph(out):
        set_view = getattr(m, "set_view", None)
        if not isinstance(m, Pytree) or set_view is None or not predicate(path, m):
            continue
        params = inspect.signature(set_view).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            set_view(**kwargs)
            remaining.clear()
            continue
        names = {
            p.name
            for p in params
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        set_view(**{k: v for k, v in kwargs.items() if k in names})
        remaining -= names
    if raise_if_not_found and remaining:
        raise ValueError(
            f"Unused keys found in nnx.view: {sorted(remaining)}\nNo module of "
            f"{type(node).__name__} takes them in its set_view; see "
            "nnx.view_info(model)."
        )
    return out


def view_info(node: Any, /, *, only: Any = ..., graph: bool | None = None) -> str:
    """The ``set_view`` keywords each module type of ``node`` takes, with their
    documentation: what :func:`view` accepts."""
    predicate = to_predicate(only)
    seen: dict[str, str] = {}
    for path, m in iter_graph(node):
        set_view = getattr(m, "set_view", None)
        name = type(m).__qualname__
        if set_view is None or name in seen or not predicate(path, m):
            continue
        doc = inspect.getdoc(set_view) or ""
        args_doc = _args_section(doc)
        lines = [f"{name}:"]
        for p in inspect.signature(set_view).parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            ann = (
                p.annotation
                if isinstance(p.annotation, str)
                else getattr(p.annotation, "__name__", str(p.annotation))
            )
            lines.append(f"  {p.name}: {ann} = {p.default!r}")
            for text in args_doc.get(p.name, []):
                lines.append(f"    {text}")
        seen[name] = "\n".join(lines)
    return "\n".join(seen[k] for k in sorted(seen))


def _args_section(doc: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "Args:":
            in_args = True
            continue
        if not in_args:
            continue
        if stripped and ":" in stripped and not line.startswith("      "):
            name, _, rest = stripped.partition(":")
            current = name.strip()
            out[current] = [rest.strip()] if rest.strip() else []
        elif stripped and current:
            out[current].append(stripped)
        elif not stripped and current:
            current = None
    return out


def with_attributes(
    node: A,
    /,
    *,
    only: Any = ...,
    raise_if_not_found: bool = True,
    graph: bool | None = None,
    **attributes: Any,
) -> A:
    """A copy of ``node`` (sharing its variables) with ``attributes`` set on
    every module that has them (those matching ``only``)."""
    predicate = to_predicate(only)
    out = _copy_structure(node)
    found: set[str] = set()
    for path, m in iter_graph(out):
        if isinstance(m, Module) and predicate(path, m):
            for k, v in attributes.items():
                if k in vars(m):
                    object.__setattr__(m, k, v)
                    found.add(k)
    missing = set(attributes) - found
    if raise_if_not_found and missing:
        raise ValueError(
            f"Could not find at least one instance of the following attributes: "
            f"{sorted(missing)}\nNo module of {type(node).__name__} has them."
        )
    return out


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
