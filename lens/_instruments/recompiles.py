"""Why a jitted function was traced again: the retrace explainer.

``jax.jit`` traces a function again, and compiles it again, whenever a call's
signature (:mod:`lens._instruments.signature`) is one it has not seen, or when
the function object itself is new. JAX can log a line per miss
(``jax_explain_cache_misses``) naming an argument position; lens names the
argument, the Module path and the attribute, against the *nearest* earlier trace
of the same function (the one with the fewest differences), and says what to do.

How it sees a trace: JAX reports the start of every top-level trace for ``jit``
to :mod:`jax.monitoring` listeners (``/jax/core/compile/jaxpr_trace_duration``),
from inside the function that traces (``pjit._trace_for_jit``), whose frame
holds the function and the call's arguments. lens reads them there. For lens's
own jits the function JAX traces is lens's (``nn.jit``'s body, ``nnx.jit``'s pure
function), and it says how to read its arguments as the user's call
(``__lens_describe_trace__``). The listener runs only when a function is
traced, never on a cached call, so the explainer costs nothing per step, on or
off. It never raises into the traced code: on an error it warns once.

Turn it on for the process with ``lens.recompiles()`` (or ``%lens_recompiles``
in a notebook after ``%load_ext lens``), or for one block::

    with lens.recompiles() as log:
        for batch in data:
            state = train_step(state, batch)
    log            # each retrace: the function, the cause, before -> after, the fix
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

from lens._instruments.signature import (
    Fact,
    Signature,
    argument_facts,
    call_signature,
    describe_array,
    static_fact,
)
from lens._views import Displayable

_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
_HISTORY = 64  # traces kept per function (code location)
LOOP = 3  # this many traces of one function with the same cause: a loop

logger = logging.getLogger("lens.recompiles")

# -- on and off

# None: follow the process flag; True/False: this context's (a `with` block).
_override: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "lens_recompiles", default=None
)
# The logs of the `with` blocks this context runs in (innermost last).
_block_logs: contextvars.ContextVar[tuple[Recompiles, ...]] = contextvars.ContextVar(
    "lens_recompiles_logs", default=()
)


class _Process:
    """The process's switch and logs (a flag and a registry, not per-call state)."""

    def __init__(self) -> None:
        self.on = False
        self.listening = False
        self.logs: weakref.WeakSet[Recompiles] = weakref.WeakSet()
        self.history = _History()
        self.lock = threading.Lock()
        self.warned = False
        self.subscribers: list[Callable[[Retrace], None]] = []
        self.showing = 0  # subscribers that show each retrace (a notebook)


def enabled() -> bool:
    """Whether retraces are explained for the code running now."""
    override = _override.get()
    return _process.on if override is None else override


def _listen() -> None:
    """Registers the trace listener once (it only runs when something is traced)."""
    with _process.lock:
        if not _process.listening:
            import jax

            jax.monitoring.register_scalar_listener(_on_event)
            _process.listening = True


# -- the records


@dataclasses.dataclass(frozen=True)
class Change:
    """One difference between a trace and the nearest earlier one."""

    path: str  # "batch", "model/dropout/rate", "state.params/Dense_0/kernel"
    what: str  # "Param", "attribute", "field", "static argument", "leaf", ...
    cause: str  # see CAUSES
    before: str
    after: str

    def line(self) -> str:
        if self.cause == "init vs apply":
            return f"{self.path}: {self.before} → {self.after} (separate programs)"
        if self.cause in ("new", "gone"):
            verb = "new" if self.cause == "new" else "gone:"
            return (
                f"{self.path}: {verb} {self.what} {self.after or self.before}".rstrip()
            )
        return f"{self.path} ({self.what}): {self.cause} {self.before} → {self.after}"


CAUSES = {
    "new function": "the function object is new",
    "init vs apply": "init and apply are separate programs",
    "structure": "pytree structure",
    "new": "a new part",
    "gone": "a part gone",
    "static value": "a static value",
    "module type": "a module's type",
    "shape": "shape",
    "dtype": "dtype",
    "weak type": "weak type",
    "sharding": "sharding",
    "jax context": "JAX's tracing context",
    "unknown": "nothing lens can see",
}
_ORDER = list(CAUSES)


@dataclasses.dataclass(frozen=True)
class Retrace:
    """One trace of a jitted function, explained against its nearest earlier trace."""

    function: str  # the user's function, by qualified name
    location: str  # "file.py:12"
    jit: str  # "jax.jit", "nn.jit" or "nnx.jit"
    count: int  # this function's traces so far, this one included
    changes: tuple[Change, ...]  # empty on a first trace
    new_function: str | None  # why the function object is new, if it is
    fix: str
    loop: bool  # the same cause for the last LOOP traces
    seconds: float  # time.time() of the trace
    first: bool = False

    @property
    def cause(self) -> str:
        if self.first:
            return "first trace"
        if self.new_function:
            return "new function"
        return self.changes[0].cause if self.changes else "unknown"

    def headline(self) -> str:
        if self.first:
            return f"{self.function} ({self.jit}, {self.location}): first trace"
        nth = ordinal(self.count)
        loop = (
            f" · traced {self.count} times, each for this reason: a loop"
            if self.loop
            else ""
        )
        return f"{self.function} ({self.jit}, {self.location}) traced again ({nth} trace){loop}"

    def lines(self) -> list[str]:
        out = [self.headline()]
        if self.first:
            return out
        if self.new_function:
            out.append(f"  the function object is new: {self.new_function}")
        out += [f"  {c.line()}" for c in self.changes[:8]]
        if len(self.changes) > 8:
            out.append(f"  … and {len(self.changes) - 8} more differences")
        out.append(f"  fix: {self.fix}")
        return out

    def text(self) -> str:
        return "\n".join(self.lines())


def ordinal(n: int) -> str:
    suffix = (
        "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    )
    return f"{n}{suffix}"


class Recompiles(Displayable):
    """The retraces seen while it was listening: ``lens.recompiles()`` returns one.

    Called, ``lens.recompiles()`` turns the explainer on for the process and the
    log collects every retrace from then on; used as ``with lens.recompiles() as
    log:``, the explainer is on for the block only and the log holds its
    retraces. ``log.retraces`` lists them (first traces are in ``log.traces``);
    in a notebook the log shows as a table, ``log.text()`` as text.
    """

    __lens_view__ = "recompiles"  # drawn by lens.display
    __lens_protocols__ = ("bundle", "rich")

    def __init__(self, on: bool = True) -> None:
        self.traces: list[Retrace] = []
        self._token: contextvars.Token[bool | None] | None = None
        self._logs_token: contextvars.Token[tuple[Recompiles, ...]] | None = None
        self._was_on = _process.on
        if on:
            _listen()
            _process.on = True
            _process.logs.add(self)
        else:
            _process.on = False

    @property
    def retraces(self) -> list[Retrace]:
        return [t for t in self.traces if not t.first]

    def clear(self) -> None:
        self.traces.clear()

    def add(self, trace: Retrace) -> None:
        self.traces.append(trace)

    def __enter__(self) -> Recompiles:
        # The call switched the process; as a block, only this context is switched.
        on = self in _process.logs
        _process.on = self._was_on
        _process.logs.discard(self)
        self._token = _override.set(on)
        if on:
            self._logs_token = _block_logs.set((*_block_logs.get(), self))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._logs_token is not None:
            _block_logs.reset(self._logs_token)
            self._logs_token = None
        if self._token is not None:
            _override.reset(self._token)
            self._token = None

    def summary(self) -> list[tuple[str, int, str]]:
        """Per function: (name, traces, last cause), most traced first."""
        seen: dict[str, tuple[int, str]] = {}
        for t in self.traces:
            seen[t.function] = (t.count, t.cause)
        return sorted(((f, n, c) for f, (n, c) in seen.items()), key=lambda r: -r[1])

    def text(self) -> str:
        rs = self.retraces
        if not rs:
            n = len(self.traces)
            return f"Recompiles: none ({n} first trace{'s' * (n != 1)})"
        head = f"Recompiles: {len(rs)} retrace{'s' * (len(rs) != 1)}"
        return "\n".join([head, *(line for r in rs for line in r.lines())])

    def __repr__(self) -> str:
        return self.text()


def recompiles(on: bool = True) -> Recompiles:
    """Explains each retrace of a jitted function (``jax.jit``, ``nn.jit``, ``nnx.jit``).

    ``lens.recompiles()`` turns the explainer on for the process and returns a
    :class:`Recompiles` log that collects every retrace from then on;
    ``lens.recompiles(False)`` turns it off. ``with lens.recompiles() as log:``
    explains the block's retraces only (this thread and context). Outside a
    block each retrace is also logged (logger ``lens.recompiles``, level
    WARNING), unless a notebook shows it (``%lens_recompiles``).
    """
    return Recompiles(on)


def explain_here() -> contextvars.Token[bool | None]:
    """Turns the explainer on for the calling context (a ``with`` block's worth,
    as ``lens.display.live`` does for its loop); :func:`restore` undoes it."""
    _listen()
    return _override.set(True)


def restore(token: contextvars.Token[bool | None]) -> None:
    """Undoes :func:`explain_here` (in the context that called it)."""
    _override.reset(token)


def subscribe(
    callback: Callable[[Retrace], None], shows: bool = False
) -> Callable[[], None]:
    """Calls ``callback`` with each explained trace; returns the unsubscriber.
    ``shows``: the callback shows every retrace to the user (a notebook's cells),
    so they are not logged as well."""
    _listen()
    with _process.lock:
        _process.subscribers.append(callback)
        _process.showing += shows

    def unsubscribe() -> None:
        with _process.lock:
            if callback in _process.subscribers:
                _process.subscribers.remove(callback)
                _process.showing -= shows

    return unsubscribe


# -- the history of traces


@dataclasses.dataclass
class _Seen:
    owner: Any  # a weak reference to the function object (or a strong id)
    signature: Signature
    cause: str


class _History:
    """Per function (by code location), its recent traces' signatures."""

    def __init__(self) -> None:
        self.by_location: dict[str, list[_Seen]] = {}
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def record(
        self, location: str, owner: Any, signature: Signature
    ) -> tuple[int, list[Change] | None, str | None, bool]:
        """Files a trace: (count, changes against the nearest, new-function reason, loop)."""
        with self.lock:
            seen = self.by_location.setdefault(location, [])
            count = self.counts[location] = self.counts.get(location, 0) + 1
            if not seen:
                seen.append(_Seen(_ref(owner), signature, "first trace"))
                return count, None, None, False
            same_owner = [s for s in seen if _alive(s.owner) is owner]
            pool = same_owner or seen
            raw = [_raw_differences(s.signature, signature) for s in pool]
            best = min(range(len(pool)), key=lambda i: (_distance(raw[i]), -i))
            changes = _tidy(raw[best])
            new_function = None if same_owner else _why_new(owner)
            cause = (
                "new function"
                if new_function
                else (f"{changes[0].cause} {changes[0].path}" if changes else "unknown")
            )
            mode = signature.get("initializing")  # nn.jit: init and apply apart
            seen.append(_Seen(_ref(owner), signature, cause))
            del seen[:-_HISTORY]
            # a loop: the last LOOP - 1 retraces of this mode had one cause at one
            # path (that is, at least LOOP traces), one that does not settle
            recent = [
                s.cause
                for s in seen
                if s.cause != "first trace" and s.signature.get("initializing") == mode
            ][-(LOOP - 1) :]
            loop = (
                len(recent) == LOOP - 1
                and len(set(recent)) == 1
                and not recent[0].startswith("init vs apply")
            )
            return count, changes, new_function, loop


def _ref(x: Any) -> Any:
    try:
        return weakref.ref(x)
    except TypeError:
        return ("id", id(x))


def _alive(ref: Any) -> Any:
    if isinstance(ref, weakref.ref):
        return ref()
    return None


def _why_new(fn: Any) -> str:
    name = getattr(fn, "__qualname__", "") or ""
    if getattr(fn, "__self__", None) is not None and not isinstance(fn.__self__, type):
        return (
            "a bound method is a new object on each attribute access "
            f"({name}); jit it once (jax.jit(obj.method) outside the loop)"
        )
    if name.endswith("<lambda>"):
        return "a lambda made anew each time; define and jit it once, outside the loop"
    if "<locals>" in name:
        return (
            "a function defined inside another function (or a compact method) is a "
            "new object each time that runs; jit it once, outside"
        )
    return "a new function object from the same code (jit built inside a loop?)"


# -- differences between two signatures


def _within(path: str, parent: str) -> bool:
    return path.startswith(parent) and path[len(parent) : len(parent) + 1] in (
        "/",
        ".",
        "[",
    )


def differences(old: Signature, new: Signature) -> list[Change]:
    """What changed from ``old`` to ``new``, the most telling first."""
    return _tidy(_raw_differences(old, new))


def _distance(changes: list[Change]) -> int:
    """How far apart two traces are: init and apply are far (each is compared
    with its own kind first), any other difference counts one."""
    return sum(100 if c.path == "initializing" else 1 for c in changes)


def _raw_differences(old: Signature, new: Signature) -> list[Change]:
    out: list[Change] = []
    added = sorted(set(new) - set(old))
    gone = sorted(set(old) - set(new))
    covered: list[str] = []
    for path in added:
        if any(_within(path, c) for c in covered):
            continue
        fact = new[path]
        out.append(Change(path, _noun(fact), "new", "", _value_text(fact)))
        covered.append(path)
    covered = []
    for path in gone:
        if any(_within(path, c) for c in covered):
            continue
        fact = old[path]
        out.append(Change(path, _noun(fact), "gone", _value_text(fact), ""))
        covered.append(path)
    for path in sorted(set(old) & set(new)):
        a, b = old[path], new[path]
        if a == b:
            continue
        out += _changed(path, a, b)
    # the most telling cause first; within one, the user's arguments before
    # nn.jit's scope facts (which follow from them)
    out.sort(
        key=lambda c: (
            _ORDER.index(c.cause) if c.cause in _ORDER else 99,
            c.path in _SCOPE_KEYS,
        )
    )
    return out


def _tidy(changes: list[Change]) -> list[Change]:
    """Drops what another change already says."""
    by_path = {c.path: c for c in changes}
    init = by_path.get("initializing")
    if init is not None:
        # init and apply are different programs (init creates the variables): the
        # scope's other facts and the collections that appeared follow from it
        before = "init" if init.before == "True" else "apply"
        after = "init" if init.after == "True" else "apply"
        first = Change("self", "module", "init vs apply", before, after)
        rest = [
            c
            for c in changes
            if c.path not in _SCOPE_KEYS and c.cause not in ("new", "gone")
        ]
        return [first, *rest]
    # the scope's structure holds its mutable collections and flags: said once
    if any(c.path in _SCOPE_KEYS - {"scope structure"} for c in changes):
        changes = [c for c in changes if c.path != "scope structure"]
    # a pytree's structure line adds nothing when its new or gone leaves are named
    named = [c.path for c in changes if c.cause in ("new", "gone")]
    return [
        c
        for c in changes
        if not (c.cause == "structure" and any(_within(p, c.path) for p in named))
    ]


def _noun(fact: Fact) -> str:
    if fact.kind == "node":
        return f"{fact.value[0]}" if fact.what == "module" else fact.what
    return fact.what


def _value_text(fact: Fact) -> str:
    if fact.kind == "array":
        return describe_array(fact.value)
    if fact.kind == "static":
        return fact.value[1]
    return ""


def _changed(path: str, a: Fact, b: Fact) -> list[Change]:
    if a.kind != b.kind:
        return [Change(path, b.what, "structure", _kind_text(a), _kind_text(b))]
    if a.kind == "node":
        cause = "module type" if a.what == "module" else "structure"
        return [Change(path, b.what, cause, str(a.value[0]), str(b.value[0]))]
    if a.kind == "static" and a.what == "JAX config":
        return [Change(path, b.what, "jax context", a.value[1], b.value[1])]
    if a.kind == "static":
        if a.value[0] != b.value[0]:
            return [Change(path, b.what, "static value", _typed(a), _typed(b))]
        return [Change(path, b.what, "static value", *_around(a.value[1], b.value[1]))]
    (s0, d0, w0, h0), (s1, d1, w1, h1) = a.value, b.value
    out = []
    if s0 != s1:
        out.append(
            Change(
                path, b.what, "shape", describe_array(a.value), describe_array(b.value)
            )
        )
    elif d0 != d1:
        out.append(
            Change(
                path, b.what, "dtype", describe_array(a.value), describe_array(b.value)
            )
        )
    elif w0 != w1:
        out.append(Change(path, b.what, "weak type", _weak(a), _weak(b)))
    elif h0 != h1:
        out.append(
            Change(path, b.what, "sharding", h0 or "one device", h1 or "one device")
        )
    return out


def _around(a: str, b: str, width: int = 48) -> tuple[str, str]:
    """Two long reprs cut to where they differ (``…`` for what they share)."""
    if len(a) <= width and len(b) <= width:
        return a, b
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    start = max(0, start - 12)
    cut = [("…" if start else "") + x[start : start + width] for x in (a, b)]
    return tuple(
        c + ("…" if start + width < len(x) else "") for c, x in zip(cut, (a, b))
    )  # type: ignore[return-value]


def _typed(f: Fact) -> str:
    return f"{f.value[1]} ({f.value[0]})"


def _weak(f: Fact) -> str:
    shape, dtype, weak, _ = f.value
    return (
        f"{describe_array((shape, dtype, False, None))} {'weak' if weak else 'strong'}"
    )


def _kind_text(f: Fact) -> str:
    return {"array": "an array", "static": "a static value", "node": "a container"}[
        f.kind
    ]


# -- the fix for each cause

_MODES = ("deterministic", "use_running_average", "training", "train", "is_training")


def fix_for(changes: list[Change], new_function: str | None, jit: str) -> str:
    if new_function:
        return (
            "create the jitted function once, outside the loop, and call that one "
            "(JAX caches compiled code per function object)"
        )
    if not changes:
        return (
            "nothing lens sees changed: the compiled code was dropped (jax.clear_caches(), "
            "a function garbage collected) or JAX keyed on something else"
        )
    c = changes[0]
    if c.cause == "jax context":
        return (
            "a JAX config option or context manager (precision, x64, a mesh) "
            "differs from the earlier trace: set it once, around the whole loop"
        )
    if c.cause == "init vs apply":
        return (
            "none needed: init and apply each trace once (init creates the "
            "variables, apply reads them); only a second apply trace is a cost"
        )
    leaf = c.path.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    if c.cause == "shape":
        return (
            "keep shapes fixed: pad the last, smaller batch (or drop it), or bucket "
            "variable lengths to a few sizes; each new shape compiles once"
        )
    if c.cause == "dtype":
        return "cast to one dtype before the call (e.g. x.astype(jnp.float32))"
    if c.cause == "weak type":
        return (
            "a Python scalar is weakly typed, an array is not: pass the same kind "
            "each time (jnp.asarray(x, jnp.float32))"
        )
    if c.cause == "sharding":
        return (
            "place the argument the same way each call "
            "(jax.device_put(x, sharding) before the loop)"
        )
    if c.cause in ("static value", "module type") and leaf in _MODES:
        return (
            f"{leaf} switches between train and eval: one compile per mode is "
            "expected (model.train()/model.eval() toggle it); pass it as a call "
            "argument or keep a jitted function per mode"
        )
    if c.cause == "static value" and c.what == "static field":
        return (
            "a pytree's static field (a TrainState's apply_fn and tx) is part of "
            "the cache key: make the model and optimizer once and update the state "
            "with state.replace(params=...) instead of building a new one"
        )
    if c.cause == "static value" and c.what in ("attribute", "field"):
        return (
            "a Module's hyperparameter is part of the compiled program: change it "
            "rarely, or make it an array (a Variable or a call argument) if it varies"
        )
    if c.cause == "static value":
        return (
            "a static argument is part of the cache key: each new value compiles "
            "once; pass it as an array argument if it varies"
        )
    if c.cause in ("new", "gone", "structure"):
        what = (
            "module"
            if c.what not in ("leaf", "pytree", "dict", "argument")
            else "pytree"
        )
        if what == "module":
            return (
                "adding or removing a submodule or variable changes the program; "
                "build the whole model before the loop"
            )
        return (
            "keep the arguments' structure fixed (the same dict keys, list lengths "
            "and None-ness on every call)"
        )
    return "keep the call's arguments identical in structure, shapes and dtypes"


# -- the listener


def _on_event(event: str, value: float, **kwargs: Any) -> None:
    if event != _TRACE_EVENT or not enabled():
        return
    try:
        _explain_current_trace()
    except Exception as error:  # never break the user's trace
        if not _process.warned:
            _process.warned = True
            warnings.warn(
                f"lens.recompiles could not read a trace ({type(error).__name__}: "
                f"{error}); retraces are not explained. Please report it.",
                RuntimeWarning,
                stacklevel=3,
            )


def _jit_frame() -> Any:
    """The frame of JAX's function that traces for ``jit`` (holds fun and args)."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return None
        if frame.f_code.co_name == "_trace_for_jit":
            return frame
        frame = frame.f_back
    return None


def _explain_current_trace() -> None:
    from lens.core import pack_trace

    if pack_trace.active():  # lens.trace() retraces on purpose, to record packs
        return
    frame = _jit_frame()
    if frame is None:
        raise RuntimeError("JAX's jit trace frame was not found")
    loc = frame.f_locals
    fun, ji, args, kwargs = loc["fun"], loc["ji"], loc["args"], loc["kwargs"]
    call = _user_call(fun, args, kwargs, ji)
    if call is None:
        return
    jit, owner, user_fn, signature = call
    signature.update(_jax_context())
    location = _location(user_fn)
    count, changes, new_function, loop = _process.history.record(
        location, owner, signature
    )
    first = changes is None
    trace = Retrace(
        function=_name(user_fn),
        location=location.rsplit("::", 1)[0],
        jit=jit,
        count=count,
        changes=tuple(changes or ()),
        new_function=new_function,
        fix="" if first else fix_for(changes or [], new_function, jit),
        loop=loop,
        seconds=time.time(),
        first=first,
    )
    _publish(trace)


_SCOPE_KEYS = frozenset(
    {"initializing", "scope structure", "mutable collections", "rng counters"}
)


def _collections_of(named: dict[str, Any]) -> list[str]:
    """The names that are variable collections in nn.jit's described call: those
    after ``self`` and before the method's own arguments (dicts of variables)."""
    keys = list(named)
    out = []
    for k in keys[1:]:
        if not isinstance(named[k], dict):
            break
        out.append(k)
    return out


_LIBRARIES = frozenset({"jax", "jaxlib", "lens", "optax", "flax", "numpy"})


def _user_call(
    fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ji: Any
) -> tuple[str, Any, Any, Signature] | None:
    # lens's own jits trace functions of their own, which say how to read their
    # arguments as the user's call: nn.jit's body, nnx.jit's pure function
    describe = getattr(fun, "__lens_describe_trace__", None) or getattr(
        getattr(fun, "__self__", None), "__lens_describe_trace__", None
    )
    module = getattr(fun, "__module__", "") or ""
    if describe is not None:
        jit, user_fn, named, statics = describe(args, kwargs)
        sig: Signature = {}
        collections = set(_collections_of(named)) if jit == "nn.jit" else set()
        for name, value in named.items():
            what = (
                "scope"
                if jit == "nn.jit" and name in _SCOPE_KEYS
                else "variable"
                if name in collections
                else "leaf"
            )
            argument_facts(sig, name, value, name in statics, what)
        return jit, getattr(fun, "__self__", fun), user_fn, sig
    if module.split(".")[0] in _LIBRARIES:
        return None  # JAX's own jitted helpers (jnp ops), lens's internals
    return (
        "jax.jit",
        fun,
        fun,
        call_signature(
            fun, args, kwargs, tuple(ji.static_argnums), tuple(ji.static_argnames)
        ),
    )


def _jax_context() -> Signature:
    """JAX's tracing context (config options and context managers a trace keys
    on), as facts; empty where this JAX does not name them."""
    try:
        from jax._src import config as jax_config

        names = jax_config.trace_context_names()
        values = jax_config.trace_context()
    except Exception:  # another JAX: the context goes unexplained, not wrong
        return {}
    if len(names) != len(values):
        return {}
    out: Signature = {}
    for name, value in zip(names, values, strict=True):
        fact = static_fact(value, "JAX config")
        if " at 0x" not in fact.value[1]:  # an object without a readable value
            out[f"JAX's {name.removeprefix('jax_')}"] = fact
    return out


def _unwrap(fn: Any) -> Any:
    for _ in range(8):
        inner = getattr(fn, "func", None) or getattr(fn, "__func__", None)
        if inner is None or inner is fn:
            break
        fn = inner
    return fn


def _name(fn: Any) -> str:
    """The function's name as its code reads: ``step``, ``MLP.__call__``,
    ``<lambda>`` (without the functions it is defined in)."""
    fn = _unwrap(fn)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name.rsplit("<locals>.", 1)[-1] if name else repr(fn)


def _location(fn: Any) -> str:
    inner = _unwrap(fn)
    inner = getattr(inner, "__wrapped__", inner)
    code = getattr(inner, "__code__", None)
    name = _name(fn)
    if code is None:
        return f"{type(fn).__name__}::{name}"
    path = code.co_filename
    short = path.rsplit("/", 1)[-1]
    if short.startswith("<ipython-input") or "ipykernel" in path:
        short = "notebook cell"
    return f"{short}:{code.co_firstlineno}::{name}@{path}"


def _publish(trace: Retrace) -> None:
    blocks = _block_logs.get()
    for log in blocks:
        log.add(trace)
    if not blocks:
        for log in list(_process.logs):
            log.add(trace)
    for callback in list(_process.subscribers):
        try:
            callback(trace)
        except Exception:  # a view's error must not break the trace
            logger.debug("a recompiles subscriber failed", exc_info=True)
    if not trace.first and not blocks and not _process.showing:
        logger.warning(trace.text())


def history_clear() -> None:
    """Forgets every function's earlier traces (tests; a fresh start)."""
    with _process.history.lock:
        _process.history.by_location.clear()
        _process.history.counts.clear()


_process = _Process()
