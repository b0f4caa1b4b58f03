"""``nnx.jit``: ``jax.jit`` for functions of eager objects, with a cached graph walk.

The call recipe is the one of :mod:`lens.nnx._transforms.recipe`. On top of it, each jitted
function keeps its last call's walk of the arguments (:mod:`~lens.nnx._transforms.jit_cache`) and
reuses it while nothing changed structure, and its compiled program returns only
the state the function changed.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, Generic, ParamSpec, TypeVar

import jax

from lens._argnums import out_of_range
from lens._facades import show_at_flax_paths
from lens.core import pack_trace as _trace
from lens.nnx._graph.walk import Walker
from lens.nnx._transforms.branches import eval_shape
from lens.nnx._transforms.jit_args import NOT_PASSED, ArgSpecs, JitCall, check_static
from lens.nnx._transforms.jit_cache import (
    CachedWalk,
    JitSkeleton,
    Tag,
    Unchanged,
    cached_walk,
    call_cached,
    store_walk,
    tagged,
    with_fast_path,
    write_changed,
)
from lens.nnx._transforms.jit_refs import mark_refs, unmark_refs
from lens.nnx._transforms.jit_shardings import (
    place_inputs,
    place_outputs,
    replace_updates,
)
from lens.nnx._transforms.jit_stages import (
    Compiled,
    Lowered,
    SimplePartialTraced,
    SimpleTraced,
    Traced,
)
from lens.nnx._transforms.modes import (
    TransformMode,
    active_mode,
    check_no_aliases,
    check_prefix,
    transform_mode,
)
from lens.nnx._transforms.pack_trace import Picture
from lens.nnx._transforms.recipe import (
    apply_graph_updates,
    changed_structure,
    merge_outputs,
    rebuild,
    split_args,
    split_outputs,
)
from lens.nnx._variables.static import StaticValue
from lens.nnx.tracers import frame, structure_epoch

P = ParamSpec("P")
R = TypeVar("R")
Specs = Any


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    in_shardings: Any = None,
    out_shardings: Any = None,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    device: Any = None,
    backend: Any = None,
    inline: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> Any:
    """``jax.jit`` for functions of objects: updates to argument objects come back.

    Takes ``jax.jit``'s options: ``static_argnums``/``static_argnames`` (hashable
    values, part of the cache key), ``donate_argnums``/``donate_argnames`` (the
    argument's arrays, objects' variables included, may be reused for the
    outputs). The compiled function is cached on the objects' graph structure, so
    calling it again with the same model does not retrace. Returns a
    :class:`JitWrapped` (flax.nnx's): call it as the function; ``jitted_fn`` is the
    underlying ``jax.jit`` function, and ``lower``/``trace``/``eval_shape`` work as
    on it.
    """
    mode = transform_mode("jit", fun, graph, graph_updates)
    options = dict(
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        donate_argnames=donate_argnames,
        keep_unused=keep_unused,
        device=device,
        backend=backend,
        inline=inline,
    )
    if fun is None:
        return functools.partial(
            jit, **options, graph=graph, graph_updates=graph_updates
        )
    check_prefix(in_shardings, "in_shardings", mode)
    check_prefix(out_shardings, "out_shardings", mode)
    return JitWrapped(fun, **options, _mode=mode)


class JitWrapped(Generic[P, R]):
    """What ``nnx.jit(f)`` returns (flax.nnx's ``JitWrapped``): call it as ``f``.

    ``jitted_fn`` is the ``jax.jit`` of ``f``'s pure state function
    (``jitted_fn._cache_size()`` counts its compilations); ``lower``, ``trace`` and
    ``eval_shape`` take ``f``'s arguments. As a class attribute it binds like a
    method (``@nnx.jit`` on ``def __call__(self, x)``).
    """

    def __init__(
        self,
        fun: Callable[P, R],
        in_shardings: Any = None,
        out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None,
        keep_unused: bool = False,
        device: Any = None,
        backend: Any = None,
        inline: bool = False,
        *,
        _mode: TransformMode | None = None,
    ):
        mode = _mode or transform_mode("jit", fun, None, None)
        options = dict(
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            keep_unused=keep_unused,
            device=device,
            backend=backend,
            inline=inline,
        )
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.mode = mode
        self.options = options
        self.specs = ArgSpecs.of(fun, options)
        self.pass_through = {
            k: v
            for k, v in options.items()
            if k not in NOT_PASSED and v not in (None, False)
        }
        self.jitted_fn = jax.jit(
            self._pure, static_argnums=0, donate_argnums=1, **self.pass_through
        )
        # The last call's graph walk, reused while nothing changed structure.
        self._cache: dict[str, CachedWalk] = {}

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"nnx.jit({getattr(self.fun, '__qualname__', self.fun)!r})"

    # -- calling

    @with_fast_path
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        in_shardings = self.options["in_shardings"]
        out_shardings = self.options["out_shardings"]
        stat = self.specs.positions(self.specs.static, len(args))
        if in_shardings is not None:
            args, _ = place_inputs(in_shardings, args, stat)
        call = self._split_call(args, kwargs)
        if self.mode.simple:
            self.mode.check_inputs(args=args, kwargs=kwargs)
        if _trace.active():  # traced again, so that nested transforms are recorded
            with active_mode(self.mode):
                out = self._traced_call(call)
        else:
            hit = cached_walk(self._cache, call.all_args, call.stat, call.signature)
            per_arg = None if hit is None else hit.inputs(call.all_args)
            if hit is not None and per_arg is not None:
                out = call_cached(hit, per_arg, self.jitted_fn)
            else:
                with active_mode(self.mode):  # the outputs are checked as traced
                    out = self._slow_call(call, self.jitted_fn)
        self.mode.check_outputs((args, kwargs), out)
        if in_shardings is not None:
            replace_updates(in_shardings, args, stat)
        if out_shardings is not None:
            out = place_outputs(out_shardings, out)
        return out

    def _split_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> JitCall:
        specs, n = self.specs, len(args)
        if out_of_range(specs.static - specs.named, n):
            raise ValueError(
                f"Jitted function has static_argnums={tuple(sorted(specs.static))}, "
                f"but was called with only {n} positional arguments."
            )
        stat = specs.positions(specs.static, n)
        for i in stat:
            check_static(args[i], f"positional argument {i}")
        static_kw = []
        dyn_kw = {}
        for k, v in kwargs.items():
            if k in specs.static_names:
                check_static(v, f"keyword argument {k!r}")
                static_kw.append((k, v))
            else:
                dyn_kw[k] = v
        return JitCall(
            (*args, *dyn_kw.values()), stat, n, tuple(dyn_kw), tuple(static_kw)
        )

    def _donated_of(self, call: JitCall) -> tuple[int, ...]:
        n, specs = call.n, self.specs
        return tuple(
            sorted(
                specs.positions(specs.donate, n)
                | {
                    n + j
                    for j, k in enumerate(call.kw_names)
                    if k in specs.donate_names
                }
            )
        )

    def _pure(
        self, statics: StaticValue, donated: list[list[Any]], kept: list[list[Any]]
    ) -> dict[Tag, list[Any]]:
        """The function jax.jit compiles. Arguments travel as plain lists of leaves
        and the result as a :func:`tagged` dict (JAX flattens and rebuilds those in
        C++; a custom pytree node would cost a Python call per argument per call)."""
        skel, static_kw, kw_names, donated_args = statics.value
        by_arg = dict(zip(donated_args, donated, strict=True))
        rest = iter(kept)
        values = []
        for i in range(skel.n_args):
            values += by_arg[i] if i in by_arg else next(rest)
        table: dict[int, Any] = {}
        with frame("jit") as fr:
            args = rebuild(skel.skeleton, values, table)
            n_pos = len(args) - len(kw_names)
            kw = dict(zip(kw_names, args[n_pos:], strict=True))
            fun: Callable[..., Any] = self.fun
            out = fun(*args[:n_pos], **kw, **dict(static_kw))
            walker = Walker(transform="jit")
            after, entries = split_args(args, (None,) * len(args), walker, skel.static)
            # A changed structure (a new attribute or submodule) is applied
            # outside: it goes out as static data, with which old node each new
            # node is, so the caller's objects are updated in place.
            changed = changed_structure(skel.skeleton, after, table, walker.nodes)
            walker.frame = fr
            outs = split_outputs(out, None, walker)
        if changed is not None:
            # refs leave as RefOuts: the arguments' (in a new structure) too
            graph_values = [e.value for e in entries if e.leaf is not None]
            marked, _ = mark_refs([graph_values, outs], values)
            return tagged(marked, changed)
        # refs returned, or held by objects made inside (their carriers)
        outs, refs = mark_refs(outs, values)
        # Only the state the function changed leaves the compiled program: an
        # unchanged variable would be copied to a new buffer on every call. A
        # donated argument's state always leaves it: its input buffers are gone.
        gone = frozenset(donated_args)
        pairs = [(e, v) for e, v in zip(entries, values, strict=True) if e.leaf]
        same = tuple(e.value is v and e.arg not in gone for e, v in pairs)
        graph_values = [e.value for (e, _), s in zip(pairs, same) if not s]
        return tagged([graph_values, outs], Unchanged(same, refs))

    def __lens_describe_trace__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[str, Any, dict[str, Any], set[str]]:
        """The call that ``_pure`` is being traced for, as the user wrote it (for
        lens.recompiles): ("nnx.jit", the function, {name: value}, static names).
        The arguments are rebuilt from the skeleton and leaves, as ``_pure`` does."""
        from lens._instruments.signature import parameter_names

        statics, donated, kept = args
        skel, static_kw, kw_names, donated_args = statics.value
        by_arg = dict(zip(donated_args, donated, strict=True))
        rest = iter(kept)
        values: list[Any] = []
        for i in range(skel.n_args):
            values += by_arg[i] if i in by_arg else next(rest)
        rebuilt = rebuild(skel.skeleton, values, {})
        n_pos = len(rebuilt) - len(kw_names)
        names = parameter_names(self.fun, n_pos)
        named = dict(zip(names, rebuilt[:n_pos], strict=True))
        named.update(zip(kw_names, rebuilt[n_pos:], strict=True))
        named.update(static_kw)
        static = {names[i] for i in skel.static if i < n_pos} | {
            k for k, _ in static_kw
        }
        return "nnx.jit", self.fun, named, static

    def _traced_call(self, call: JitCall) -> Any:
        """An uncached call that records a pack-trace record (and its children)."""
        options = {
            "static_argnums": tuple(sorted(self.specs.static)),
            "donate_argnums": tuple(sorted(self.specs.donate)),
        }
        with Picture("jit", options, self.fun) as picture:
            # A new function: jax.jit's cache is keyed on it, and the body must run.
            fresh = jax.jit(
                lambda *a: self._pure(*a),
                static_argnums=0,
                donate_argnums=1,
                **self.pass_through,
            )
            return self._slow_call(call, fresh, picture, cache=False)

    def _inputs(self, call: JitCall) -> tuple[Any, ...]:
        """The walk of ``call``'s arguments and what ``jitted_fn`` takes for them."""
        total = len(call.all_args)
        walker = Walker(transform="jit")
        skel, entries = split_args(call.all_args, (None,) * total, walker, call.stat)
        per_arg: list[list[Any]] = [[] for _ in range(total)]
        for e in entries:
            per_arg[e.arg].append(e.value)
        donated_args = self._donated_of(call)
        donated = [per_arg[i] for i in donated_args]
        kept = [per_arg[i] for i in range(total) if i not in donated_args]
        key = StaticValue(
            (
                JitSkeleton(skel, call.stat, total),
                call.static_kw,
                call.kw_names,
                donated_args,
            )
        )
        return walker, entries, key, donated, kept, donated_args

    def _slow_call(
        self,
        call: JitCall,
        jitted: Callable[..., Any],
        picture: Picture | None = None,
        cache: bool = True,
    ) -> Any:
        epoch = structure_epoch()
        walker, entries, key, donated, kept, donated_args = self._inputs(call)
        if picture is not None:
            picture.inputs(entries, ["all"] * len(entries), lambda e, v: v)
        try:
            [(tag, (new_values, outs))] = jitted(key, donated, kept).items()
        except TypeError as e:
            _name_the_user_function(e, self.fun)
            raise
        aux = tag.aux
        if not isinstance(aux, Unchanged):
            inputs = [e.value for e in entries]
            new_values, outs = unmark_refs([new_values, outs], inputs)
        elif aux.refs:
            outs = unmark_refs(outs, [e.value for e in entries])
        if not isinstance(aux, Unchanged):
            nodes = apply_graph_updates([], new_values, aux, walker.nodes)
            return merge_outputs(outs, nodes)
        write_changed(entries, aux.same, new_values)
        if picture is not None:
            it = iter(new_values)
            olds = [e.value for e in entries if e.leaf is not None]
            picture.outputs(
                [o if same else next(it) for o, same in zip(olds, aux.same)]
            )
        if cache:
            store_walk(
                self._cache,
                epoch,
                call.all_args,
                call.stat,
                call.signature,
                entries,
                walker,
                key,
                donated_args,
            )
        return merge_outputs(outs, walker.nodes)

    # -- jax.jit's stages

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """``jitted_fn.lower`` for these arguments (objects' state included); its
        ``compile()`` is called as this function is."""
        _, _, key, donated, kept, _ = self._inputs(self._split_call(args, kwargs))
        return Lowered(self.jitted_fn.lower(key, donated, kept), self)

    def call_with(self, jitted: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """A call of ``jitted`` (a compiled stage of ``jitted_fn``) as a call of
        this function: the objects' state in, their updates back."""
        call = self._split_call(args, kwargs)
        if self.mode.simple:
            self.mode.check_inputs(args=args, kwargs=kwargs)
        with active_mode(self.mode):
            out = self._slow_call(call, jitted, cache=False)
        self.mode.check_outputs((args, kwargs), out)
        return out

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """``jitted_fn.trace`` for these arguments (objects' state included)."""
        _, _, key, donated, kept, _ = self._inputs(self._split_call(args, kwargs))
        return Traced(self.jitted_fn.trace(key, donated, kept), self)

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        """The outputs' shapes and dtypes (objects with ``ShapeDtypeStruct``
        values), computing nothing and leaving the arguments unchanged."""
        return eval_shape(self.fun, *args, **kwargs)


def jit_partial(
    fun: Callable[..., Any],
    *partial_args: Any,
    in_shardings: Any = None,
    out_shardings: Any = None,
    static_argnums: int | Sequence[int] | None = None,
    static_argnames: str | Sequence[str] | None = None,
    donate_argnums: int | Sequence[int] | None = None,
    donate_argnames: str | Sequence[str] | None = None,
    keep_unused: bool = False,
    device: Any = None,
    backend: Any = None,
    inline: bool = False,
    graph: bool | None = None,
    graph_updates: bool | None = None,
) -> SimpleJitPartialWrapped[..., Any]:
    """``nnx.jit(fun)`` with its first arguments bound (flax.nnx's ``jit_partial``).

    ``jit_partial(train_step, model, optimizer)(x, y)`` is
    ``nnx.jit(train_step)(model, optimizer, x, y)``: the bound objects' updates come
    back into them after each call, and changing their values does not retrace.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens import nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> forward = nnx.jit_partial(lambda m, x: m(x), model)
        >>> forward(jnp.ones((1, 2))).shape
        (1, 3)
    """
    g = _current_graph_mode(graph)
    if not g:  # tree mode: the bound arguments may not share Variables
        check_no_aliases("jit_partial", partial_args=partial_args)
    if graph_updates and g:
        raise ValueError(
            "`graph_updates` not supported by `jit_partial`.\nLeave graph_updates "
            "unset (or False); nnx.jit(f) takes graph_updates=True."
        )
    mode = transform_mode("jit", fun, graph, bool(graph_updates))
    check_prefix(in_shardings, "in_shardings", mode)
    check_prefix(out_shardings, "out_shardings", mode)
    return SimpleJitPartialWrapped(
        fun,
        in_shardings,
        out_shardings,
        static_argnums,
        static_argnames,
        donate_argnums,
        donate_argnames,
        keep_unused,
        device,
        backend,
        inline,
        partial_args,
        g,
        (),
        _mode=mode,
    )


def _current_graph_mode(graph: bool | None) -> bool:
    return transform_mode("jit_partial", None, graph, None).graph


class SimpleJitWrapped(JitWrapped[P, R]):
    """flax.nnx's tree-mode ``JitWrapped`` (``graph_updates=False``), with its
    arguments: a :class:`JitWrapped` whose calls, ``lower``, ``trace`` and
    ``eval_shape`` take the arguments after ``partial_args``.

    ``update_shardings`` are flax's shardings of the updated Variables; lens
    gives an updated Variable its argument's ``in_shardings`` entry, so they
    are kept as given, for reading.
    """

    def __init__(
        self,
        fun: Callable[P, R],
        in_shardings: Any = None,
        out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None,
        keep_unused: bool = False,
        device: Any = None,
        backend: Any = None,
        inline: bool = False,
        partial_args: Sequence[Any] = (),
        graph: bool = True,
        update_shardings: Sequence[Any] = (),
        *,
        _mode: TransformMode | None = None,
    ):
        super().__init__(
            fun,
            in_shardings,
            out_shardings,
            static_argnums,
            static_argnames,
            donate_argnums,
            donate_argnames,
            keep_unused,
            device,
            backend,
            inline,
            _mode=_mode or transform_mode("jit", fun, graph, False),
        )
        self.partial_args = tuple(partial_args)
        self.graph = graph
        self.update_shardings = tuple(update_shardings)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(*self.partial_args, *args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        low = super().lower(*self.partial_args, *args, **kwargs)
        return Lowered(low.lowered, self, self.partial_args)

    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        traced = super().trace(*self.partial_args, *args, **kwargs)
        return self._traced(traced.traced, self, self.partial_args)

    _traced = SimpleTraced

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        return super().eval_shape(*self.partial_args, *args, **kwargs)


class SimpleJitPartialWrapped(SimpleJitWrapped[P, R]):
    """What :func:`jit_partial` returns (flax.nnx's ``SimpleJitPartialWrapped``):
    the jitted function with its first arguments (``partial_args``) bound; their
    updates come back into them after each call."""

    _traced = SimplePartialTraced


JitPartial = SimpleJitPartialWrapped  # lens's earlier name


# flax.nnx's tree-mode stages: lens has one stage of each kind for every mode
SimpleLowered = SimplePartialLowered = Lowered
SimpleCompiled = SimplePartialCompiled = Compiled


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)


_OWN_FUNCTION = re.compile(
    r"function \S+ at " + re.escape(__file__.removesuffix("c")) + r":\d+"
)
_OWN_OUTPUT = re.compile(r"at output component \[Tag\(.*?\)\]\[1\]((?:\[[^\]]*\])*)")


def _name_the_user_function(error: TypeError, fun: Any) -> None:
    """JAX's error about what the traced function returned (``function _pure at
    .../jit.py:246 traced for jit returned a value of type <class 'str'> at output
    component [Tag(...)][1]``) as about the user's function and its result."""
    if not error.args or not isinstance(error.args[0], str):
        return
    message = error.args[0]
    if not _OWN_FUNCTION.search(message):
        return
    user = fun
    while isinstance(user, functools.partial):
        user = user.func
    user = inspect.unwrap(user)
    code = getattr(user, "__code__", None)
    where = (
        f"function {user.__name__} at {code.co_filename}:{code.co_firstlineno}"
        if code is not None
        else f"function {getattr(user, '__qualname__', user)!r}"
    )
    message = _OWN_FUNCTION.sub(lambda _: where, message, count=1)
    message = _OWN_OUTPUT.sub(
        lambda m: (
            f"at output component {m.group(1)}" if m.group(1) else "as its result"
        ),
        message,
        count=1,
    )
    error.args = (message, *error.args[1:])
