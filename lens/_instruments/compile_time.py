"""Where a jitted call's compile time goes: stages, cache, equations per module.

``lens.compile_time(fn, *args, **kwargs)`` traces, lowers and compiles one call
of ``fn`` through JAX's ahead-of-time stages (``fn.trace(...)``, ``.lower()``,
``.compile()``), timing each, and returns a :class:`CompileTime` record:

- the three stage times, beside JAX's own timers for them (the
  ``/jax/core/compile/*_duration`` events of :mod:`jax.monitoring`);
- whether JAX's persistent compilation cache was off, hit or missed;
- the jaxpr's equations per module path, sub-jaxprs included (scan, while,
  cond, jit, custom_jvp/vjp, remat bodies), so the counts sum to the jaxpr's;
- the unrolled repeats: sibling modules that differ only in an index
  (``layers_0`` .. ``layers_23``, ``blocks/3``) whose equations are the same,
  which ``nn.scan`` / ``nnx.scan`` would trace once.

The trace is fresh: it runs in a trace context no earlier call used (a
never-matching ``jax_hlo_source_file_canonicalization_regex``, which only edits
source-file names in HLO metadata, and which the persistent cache's key leaves
out), so JAX's in-memory caches cannot answer it, and a function already
called is measured as a new process would compile it. The persistent cache still
answers, as it would in that process. While it traces, modules name their paths
in JAX's name stack (:mod:`lens._instruments.module_scopes`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import itertools
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import jax

from lens import errors
from lens._instruments import module_scopes
from lens._views import Displayable

OUTSIDE = "(outside modules)"
"""Where equations that no module made are counted."""

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_STAGE_EVENTS = {"trace": TRACE_EVENT, "lower": LOWER_EVENT, "compile": COMPILE_EVENT}
_CACHE_USED = "/jax/compilation_cache/compile_requests_use_cache"
_CACHE_HIT = "/jax/compilation_cache/cache_hits"
_CACHE_STORED = "/jax/compilation_cache/cache_misses"  # JAX counts a write as a miss
_CACHE_SAVED = "/jax/compilation_cache/compile_time_saved_sec"

_FRESH = itertools.count()

# -- the record


@dataclasses.dataclass(frozen=True)
class ModuleEquations:
    """The equations one module made: its own (``equations``, not counting its
    submodules') and with its submodules (``subtree``)."""

    path: str  # "/blocks/Dense_3", "/layers/0/linear", "/" (the root), OUTSIDE
    equations: int
    subtree: int


@dataclasses.dataclass(frozen=True)
class Repeat:
    """Sibling modules, differing only in an index, that made the same equations."""

    pattern: str  # "/layers_*", "/blocks/*"
    paths: tuple[str, ...]
    equations: int  # per block
    transform: str  # "nn.scan" or "nnx.scan"
    siblings: int  # the modules at the pattern, identical or not

    @property
    def count(self) -> int:
        return len(self.paths)

    def line(self) -> str:
        """``24 identical blocks at /layers_*: nn.scan would trace one (24 × 57
        equations)``."""
        which = (
            f", {self.paths[0]} … {self.paths[-1]}"
            if self.count < self.siblings
            else ""
        )
        return (
            f"{self.count} identical blocks at {self.pattern}: {self.transform} "
            f"would trace one ({self.count} × {self.equations:,} equations{which})"
        )


@dataclasses.dataclass(frozen=True)
class CompileTime(Displayable):
    """One call's compile time: the stages, the cache, the equations per module.

    Times are seconds. ``trace_s``, ``lower_s`` and ``compile_s`` are lens's
    clocks around JAX's stages (``.trace()``, ``.lower()``, ``.compile()``);
    ``jax_trace_s``, ``jax_lower_s`` and ``jax_compile_s`` are JAX's own timers
    for the same stages (its ``jax.monitoring`` duration events, None where
    JAX reported none). ``modules`` is sorted by equations, most first, and its
    counts sum to ``equations``, the jaxpr's equations, sub-jaxprs included.
    """

    __lens_view__ = "compile time"  # drawn by lens.display
    __lens_protocols__ = ("bundle", "rich")

    function: str
    jit: str  # "jax.jit", "nnx.jit", "jax.jit (applied by lens.compile_time)"
    location: str  # "train.py:12"
    trace_s: float
    lower_s: float
    compile_s: float
    jax_trace_s: float | None
    jax_lower_s: float | None
    jax_compile_s: float | None
    cache: str  # "off" | "hit" | "miss"
    cache_detail: str
    equations: int
    modules: tuple[ModuleEquations, ...]
    repeats: tuple[Repeat, ...]
    fresh: bool = True  # traced in a context JAX's in-memory caches had not seen

    @property
    def total_s(self) -> float:
        """Trace, lower and compile together (lens's clocks)."""
        return self.trace_s + self.lower_s + self.compile_s

    @property
    def jax_total_s(self) -> float | None:
        """JAX's own timers of the three stages together (None if one is missing)."""
        parts = (self.jax_trace_s, self.jax_lower_s, self.jax_compile_s)
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    def stages(self) -> list[tuple[str, float, float | None]]:
        """``[(stage, lens seconds, JAX seconds)]`` for trace, lower and compile."""
        return [
            ("trace", self.trace_s, self.jax_trace_s),
            ("lower", self.lower_s, self.jax_lower_s),
            ("compile", self.compile_s, self.jax_compile_s),
        ]

    def equations_at(self, path: str) -> int:
        """The equations the module at ``path`` made itself (0 if none)."""
        return next((m.equations for m in self.modules if m.path == path), 0)

    def cache_line(self) -> str:
        """``persistent cache: off`` / ``hit`` / ``miss``, with what that meant."""
        detail = f" ({self.cache_detail})" if self.cache_detail else ""
        return f"persistent cache: {self.cache}{detail}"

    def headline(self) -> str:
        """``mlp_step (jax.jit): 2.61 s to compile · 1,234 equations``."""
        return (
            f"{self.function} ({self.jit}): {seconds(self.total_s)} to compile · "
            f"{self.equations:,} equations"
        )

    def stage_line(self) -> str:
        """``trace 17.7 ms · lower 10.9 ms · compile 2.58 s (JAX's timers: …)``."""
        ours = " · ".join(f"{s} {seconds(t)}" for s, t, _ in self.stages())
        theirs = self.jax_total_s
        if theirs is None:
            return ours
        return f"{ours} (JAX's own timers: {seconds(theirs)} in all)"

    def text(self, rows: int = 24) -> str:
        """Plain text: the stages, the cache, the repeats, equations per module."""
        lines = [f"Compile time of {self.headline()}", f"  {self.stage_line()}"]
        lines.append(f"  {self.cache_line()}")
        if not self.fresh:
            lines.append(
                "  note: JAX may have answered from its in-memory caches (this JAX "
                "has no trace context lens can make fresh)"
            )
        lines += [f"  {r.line()}" for r in self.repeats]
        lines.append("  equations per module (own, not counting submodules):")
        top = max((m.equations for m in self.modules), default=0)
        width = max((len(m.path) for m in self.modules[:rows]), default=0)
        for m in self.modules[:rows]:
            bar = "█" * max(1, round(20 * m.equations / top)) if top else ""
            lines.append(f"    {m.path:<{width}}  {m.equations:>8,}  {bar}")
        rest = self.modules[rows:]
        if rest:
            n = sum(m.equations for m in rest)
            lines.append(f"    … {len(rest)} more modules: {n:,} equations")
        return "\n".join(lines)

    def __repr__(self) -> str:
        stages = ", ".join(f"{s} {seconds(t)}" for s, t, _ in self.stages())
        return (
            f"CompileTime({self.function}: {stages}; {self.equations:,} equations; "
            f"persistent cache: {self.cache})"
        )


def seconds(s: float) -> str:
    """``850 µs``, ``17.7 ms``, ``2.61 s``."""
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


# -- measuring


def compile_time(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> CompileTime:
    """Traces, lowers and compiles ``fn(*args, **kwargs)`` once, and says where
    the time went.

    ``fn`` is a ``jax.jit`` or ``nnx.jit`` function, or a plain callable (a
    Linen ``model.apply``, with or without ``nn.jit`` inside), which lens jits
    with ``jax.jit``. Nothing runs on the device and ``fn``'s own caches are
    left as they were: the trace is fresh (see the module docstring).

    Returns:
        A :class:`CompileTime` record; in a notebook it shows as a bar picture
        of the equations per module path.

    Raises:
        CompileTimeTargetError: ``fn`` is not callable.
        CompileTimeStageError: tracing, lowering or compiling the call failed
            (the function's own error is chained).

    Example:
        >>> import jax, jax.numpy as jnp, lens
        >>> record = lens.compile_time(jax.jit(lambda x: jnp.sin(x) * 2), jnp.ones(3))
        >>> record.equations, record.modules[0].path
        (2, '(outside modules)')
    """
    if not callable(fn):
        raise errors.CompileTimeTargetError(_short(fn), type(fn).__name__)
    target = _target(fn, args, kwargs)
    tagged = _tag_nnx_modules(_roots(fn, target, args, kwargs))
    patched = module_scopes.patch_calls(tagged)
    events = _Events()
    fresh_context, fresh = _fresh_trace_context()
    try:
        with events, fresh_context, _not_a_retrace():
            events.stage = "trace"
            token = module_scopes.TRACING.set(True)
            start = time.perf_counter()
            try:
                traced = target.trace(*target.args, **kwargs)
            except Exception as e:
                raise _stage_error(target, "trace", e, args, kwargs) from e
            finally:
                module_scopes.TRACING.reset(token)
            trace_s = time.perf_counter() - start
            events.stage = "lower"
            start = time.perf_counter()
            try:
                lowered = traced.lower()
            except Exception as e:
                raise _stage_error(target, "lower", e, args, kwargs) from e
            lower_s = time.perf_counter() - start
            events.stage = "compile"
            start = time.perf_counter()
            try:
                lowered.compile()
            except Exception as e:
                raise _stage_error(target, "compile", e, args, kwargs) from e
            compile_s = time.perf_counter() - start
    finally:
        _untag(tagged)
        module_scopes.unpatch_calls(patched)
    counts = equations_by_module(traced.jaxpr)
    return CompileTime(
        function=target.name,
        jit=target.kind,
        location=target.location,
        trace_s=trace_s,
        lower_s=lower_s,
        compile_s=compile_s,
        jax_trace_s=events.seconds("trace"),
        jax_lower_s=events.seconds("lower"),
        jax_compile_s=events.seconds("compile"),
        cache=events.cache(),
        cache_detail=events.cache_detail(compile_s),
        equations=counts.total,
        modules=counts.modules(),
        repeats=counts.repeats(),
        fresh=fresh,
    )


@dataclasses.dataclass
class _Target:
    """What compile_time traces: ``trace(*args, **kwargs)`` gives JAX's Traced."""

    trace: Callable[..., Any]
    args: tuple[Any, ...]
    kind: str
    name: str
    location: str
    user_fn: Any  # the user's Python function (for argument names, closures)
    bound: tuple[Any, ...] = ()  # arguments bound before args (a method's self)


def _target(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Target:
    compilation = sys.modules.get("lens.nnx._transforms.jit")
    nnx_module = sys.modules.get("lens.nnx._objects.module")
    jit_wrapped: Any = getattr(compilation, "JitWrapped", None)
    if jit_wrapped is not None and isinstance(fn, jit_wrapped):
        wrapped: Any = fn
        return _named(wrapped.trace, args, "nnx.jit", wrapped.fun)
    inner: Any = getattr(fn, "func", None)
    if (
        jit_wrapped is not None
        and isinstance(fn, functools.partial)
        and isinstance(inner, jit_wrapped)
    ):  # an nnx.jit method, bound: partial(jit_wrapped, module)
        trace = functools.partial(inner.trace, *fn.args, **fn.keywords)
        return _named(trace, args, "nnx.jit", inner.fun, bound=fn.args)
    stage = getattr(fn, "trace", None)
    if callable(stage) and callable(getattr(fn, "lower", None)):
        user = getattr(fn, "__wrapped__", fn)
        return _named(stage, args, "jax.jit", user)
    if nnx_module is not None and isinstance(fn, nnx_module.Module):
        # a module itself: its state enters as an argument, not as constants
        from lens import nnx

        call = nnx.jit(lambda module, *a, **k: module(*a, **k))
        target = _named(call.trace, (fn, *args), "nnx.jit", type(fn).__call__)
        target.name = type(fn).__name__
        return target
    try:
        jitted = jax.jit(fn)
    except Exception as e:  # a callable jax.jit refuses
        raise errors.CompileTimeTargetError(
            f"{_short(fn)} ({type(e).__name__}: {e})", type(fn).__name__
        ) from e
    return _named(jitted.trace, args, "jax.jit, applied by lens.compile_time", fn)


def _named(
    trace: Callable[..., Any],
    args: tuple[Any, ...],
    kind: str,
    user_fn: Any,
    bound: tuple[Any, ...] = (),
) -> _Target:
    return _Target(
        trace, args, kind, _name(user_fn), _location(user_fn), user_fn, bound
    )


def _name(fn: Any) -> str:
    if inspect.ismethod(fn):  # model.apply: "MLP.apply"
        return f"{type(fn.__self__).__name__}.{fn.__func__.__name__}"
    fn = inspect.unwrap(fn) if callable(fn) else fn
    if isinstance(fn, functools.partial):
        return f"partial({_name(fn.func)})"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    # a function defined in a function: "step", not "main.<locals>.step"
    return name.rpartition("<locals>.")[2] if name else type(fn).__name__


def _location(fn: Any) -> str:
    try:
        code = inspect.unwrap(fn).__code__
    except (AttributeError, ValueError):
        return ""
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"


def _short(x: Any, limit: int = 80) -> str:
    try:
        text = " ".join(repr(x).split())
    except Exception:  # noqa: BLE001 - a failing repr says nothing useful
        text = f"<{type(x).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _stage_error(
    target: _Target,
    stage: str,
    error: Exception,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> errors.CompileTimeStageError:
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return errors.CompileTimeStageError(
        target.name,
        stage,
        target.location,
        f"{type(error).__name__}: {first}",
        _arguments_text(args, kwargs),
    )


def _arguments_text(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    def one(x: Any) -> str:
        leaves = jax.tree_util.tree_leaves(x)
        if len(leaves) == 1 and leaves[0] is x and hasattr(x, "shape"):
            return f"{getattr(x.dtype, 'name', x.dtype)}{list(x.shape)}"
        if hasattr(x, "shape") or not leaves:
            return _short(x, 40)
        return f"{type(x).__name__} of {len(leaves)} leaves"

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    return text if len(text) <= 160 else text[:159] + "…"


# -- the module paths of lens.nnx objects


def _roots(
    fn: Any, target: _Target, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    """The values the call's nnx modules are reached from, each with a name:
    its arguments, a bound method's object, and the function's closure."""
    roots: list[tuple[str, Any]] = []
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        roots.append(("self", owner))
    call_args = (*target.bound, *target.args)
    roots += _argument_names(target.user_fn, call_args, kwargs)
    user = inspect.unwrap(target.user_fn)
    code = getattr(user, "__code__", None)
    if code is None:
        return roots
    cells = getattr(user, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, cells):
        with contextlib.suppress(ValueError):  # an empty cell
            roots.append((name, cell.cell_contents))
    # a notebook's `lambda x: model(x)` reads the model as a global
    space = getattr(user, "__globals__", {})
    for name in code.co_names:
        value = space.get(name)
        if _is_nnx_object(value):
            roots.append((name, value))
    return roots


def _is_nnx_object(x: Any) -> bool:
    pytreelib = sys.modules.get("lens.nnx._objects.object")
    return pytreelib is not None and isinstance(x, pytreelib.Pytree)


def _argument_names(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    named: list[tuple[str, Any]] = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


def _tag_nnx_modules(roots: list[tuple[str, Any]]) -> list[Any]:
    """Writes each reachable nnx module's path into it (module_scopes.NNX_PATH).

    Paths are relative to the one argument that holds modules
    (``/layers/0/linear``), or start with the argument's name when several do
    (``/model/layers/0``). Returns the modules written, for :func:`_untag`.
    """
    nnx_module = sys.modules.get("lens.nnx._objects.module")
    if nnx_module is None:  # no lens.nnx object exists
        return []
    holders = []
    for name, value in roots:
        found = list(nnx_module.iter_modules(value))
        if found:
            holders.append((name, found))
    tagged: list[Any] = []
    for name, found in holders:
        prefix = (name,) if len(holders) > 1 else ()
        for path, module in found:
            if module_scopes.NNX_PATH in vars(module):
                continue  # shared: the first path found names it
            text = "/" + "/".join(str(p) for p in (*prefix, *path))
            object.__setattr__(module, module_scopes.NNX_PATH, text)
            tagged.append(module)
    return tagged


def _untag(modules: list[Any]) -> None:
    for module in modules:
        if module_scopes.NNX_PATH in vars(module):
            object.__delattr__(module, module_scopes.NNX_PATH)


# -- JAX's timers and the persistent cache


class _Events:
    """JAX's ``jax.monitoring`` events of this thread while it is entered, each
    under the stage that was running (``stage``)."""

    def __init__(self) -> None:
        self.stage = ""
        self.thread = threading.get_ident()
        self.durations: list[tuple[str, str, float]] = []  # (stage, event, secs)
        self.counts: Counter[str] = Counter()

    def _duration(self, event: str, duration_secs: float, **kwargs: Any) -> None:
        if threading.get_ident() == self.thread:
            self.durations.append((self.stage, event, duration_secs))

    def _event(self, event: str, **kwargs: Any) -> None:
        if threading.get_ident() == self.thread:
            self.counts[event] += 1

    def __enter__(self) -> _Events:
        jax.monitoring.register_event_duration_secs_listener(self._duration)
        jax.monitoring.register_event_listener(self._event)
        return self

    def __exit__(self, *exc: Any) -> None:
        jax.monitoring.unregister_event_duration_listener(self._duration)
        jax.monitoring.unregister_event_listener(self._event)

    def seconds(self, stage: str) -> float | None:
        """JAX's own time for ``stage``: its event's durations during the stage."""
        found = [
            d
            for s, event, d in self.durations
            if s == stage and event == _STAGE_EVENTS[stage]
        ]
        return sum(found) if found else None

    def cache(self) -> str:
        if not _persistent_cache_folder() or not self.counts[_CACHE_USED]:
            return "off"
        return "hit" if self.counts[_CACHE_HIT] else "miss"

    def cache_detail(self, compile_s: float) -> str:
        cache = self.cache()
        if cache == "off":
            if not _persistent_cache_folder():
                return "no jax_compilation_cache_dir; %load_ext lens turns it on"
            return "JAX did not consult it for this backend"
        if cache == "hit":
            saved = [d for _, e, d in self.durations if e == _CACHE_SAVED]
            if not saved:
                return "loaded, not compiled"
            if saved[0] >= 0:
                return f"loaded, not compiled: {seconds(saved[0])} saved"
            return (
                f"loaded, not compiled; loading took {seconds(-saved[0])} more "
                "than compiling had"
            )
        if self.counts[_CACHE_STORED]:
            return "compiled, and stored for the next process"
        least = jax.config.values["jax_persistent_cache_min_compile_time_secs"]
        if compile_s < least:
            return (
                "compiled, not stored: faster than "
                f"jax_persistent_cache_min_compile_time_secs = {seconds(least)}"
            )
        return "compiled, not stored: under jax_persistent_cache_min_entry_size_bytes"


def _persistent_cache_folder() -> str | None:
    if not jax.config.values["jax_enable_compilation_cache"]:
        return None
    return jax.config.values["jax_compilation_cache_dir"] or None


def _fresh_trace_context() -> tuple[contextlib.AbstractContextManager[Any], bool]:
    """A trace context no earlier call used, so that JAX traces, lowers and
    compiles afresh (see the module docstring), and whether JAX offers one."""
    try:
        from jax._src import config as jax_config

        state = jax_config.hlo_source_file_canonicalization_regex
        current = state.value
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        return contextlib.nullcontext(), False
    never = f"(?!)lens-compile-time-{next(_FRESH)}"  # matches no file name
    return state(f"(?:{current})|{never}" if current else never), True


@contextlib.contextmanager
def _not_a_retrace() -> Iterator[None]:
    """lens.recompiles does not report the trace compile_time makes."""
    from lens._instruments.recompiles import recompiles

    with recompiles(False):
        yield


# -- equations per module


_INDEXED = re.compile(r"^(?:(?P<stem>.*?)_)?(?P<index>\d+)$")


@dataclasses.dataclass
class _Counts:
    """The jaxpr's equations by the module that made them (innermost), each
    with a signature (primitive, input and output types) for finding repeats."""

    total: int = 0
    own: Counter[str] = dataclasses.field(default_factory=Counter)
    framework: dict[str, str] = dataclasses.field(default_factory=dict)
    sequence: dict[str, list[tuple[str, ...]]] = dataclasses.field(
        default_factory=dict
    )  # an indexed path (and its submodules): its equations' signatures

    def add(self, path: str, framework: str, signature: tuple[str, ...]) -> None:
        self.total += 1
        self.own[path] += 1
        if framework:
            self.framework.setdefault(path, framework)
        if path == OUTSIDE:
            return
        prefix = ""
        for part in path.strip("/").split("/"):
            prefix = f"{prefix}/{part}"
            if _INDEXED.match(part):
                self.sequence.setdefault(prefix, []).append(signature)

    def modules(self) -> tuple[ModuleEquations, ...]:
        subtree: Counter[str] = Counter()
        for path, n in self.own.items():
            if path == OUTSIDE:
                subtree[path] += n
                continue
            parts = [p for p in path.split("/") if p]
            for i in range(len(parts) + 1):  # "/", "/a", "/a/b", ... the path
                subtree["/" + "/".join(parts[:i])] += n
        return tuple(
            ModuleEquations(path, n, subtree[path])
            for path, n in sorted(self.own.items(), key=_most_first)
        )

    def repeats(self) -> tuple[Repeat, ...]:
        groups: dict[tuple[str, str], list[str]] = {}
        for path in self.sequence:
            parent, _, last = path.rpartition("/")
            m = _INDEXED.match(last)
            assert m is not None
            stem = m.group("stem")
            pattern = f"{parent}/{stem}_*" if stem is not None else f"{parent}/*"
            groups.setdefault((pattern, parent), []).append(path)
        found: list[Repeat] = []
        # outermost first: a repeat inside a repeated block is not named again
        for (pattern, parent), paths in sorted(groups.items(), key=_depth):
            if any(_inside(parent, p) for r in found for p in r.paths):
                continue
            by_sequence: dict[tuple[Any, ...], list[str]] = {}
            for p in sorted(paths, key=_index):
                by_sequence.setdefault(tuple(self.sequence[p]), []).append(p)
            for sequence, same in by_sequence.items():
                if len(same) >= 2 and sequence:
                    framework = self._framework_of(same[0])
                    found.append(
                        Repeat(
                            pattern,
                            tuple(same),
                            len(sequence),
                            "nnx.scan" if framework == "nnx" else "nn.scan",
                            len(paths),
                        )
                    )
        return tuple(sorted(found, key=lambda r: -r.count * r.equations))

    def _framework_of(self, path: str) -> str:
        for p, framework in self.framework.items():
            if p == path or _inside(path, p):
                return framework
        return "nn"


def _most_first(item: tuple[str, int]) -> tuple[Any, ...]:
    """Most equations first; ties in path order, numbers as numbers (layers_2
    before layers_10)."""
    path, n = item
    parts = re.split(r"(\d+)", path)
    return (-n, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts))


def _depth(item: tuple[tuple[str, str], list[str]]) -> tuple[int, str]:
    (pattern, _), _ = item
    return pattern.count("/"), pattern


def _index(path: str) -> tuple[int, str]:
    m = _INDEXED.match(path.rpartition("/")[2])
    return (int(m.group("index")) if m else 0, path)


def _inside(parent: str, path: str) -> bool:
    """Whether ``path`` is ``parent`` or below it."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def equations_by_module(closed_jaxpr: Any) -> _Counts:
    """Every equation of ``closed_jaxpr`` and its sub-jaxprs, by the innermost
    module scope in its name stack; an equation of a sub-jaxpr outside any
    module scope belongs where the equation holding the sub-jaxpr does (JAX's
    name stacks inside sub-jaxprs start afresh)."""
    from jax.extend.core import jaxprs_in_params

    counts = _Counts()

    def walk(jaxpr: Any, outer: tuple[str, str]) -> None:
        for eqn in jaxpr.eqns:
            found = module_scopes.module_path(eqn.source_info.name_stack)
            framework, path = found if found is not None else outer
            signature = (
                eqn.primitive.name,
                *(str(getattr(v, "aval", "")) for v in eqn.invars),
                "->",
                *(str(getattr(v, "aval", "")) for v in eqn.outvars),
            )
            counts.add(path, framework, signature)
            for sub in jaxprs_in_params(eqn.params):
                walk(sub, (framework, path))

    jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
    walk(jaxpr, ("", OUTSIDE))
    return counts


__all__ = ["CompileTime", "ModuleEquations", "Repeat", "compile_time"]
