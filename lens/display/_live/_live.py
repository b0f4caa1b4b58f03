"""``Live``: what a training loop reports to, and the thread that draws it.

The loop's side is cheap: ``log`` queues ``(step, value)`` pairs as they are
(device arrays stay on the device), ``layers`` dispatches one small reduction now
and then, a watched function marks when a call starts and ends. A daemon drawer
thread wakes ``per_second`` times a second, fetches what is queued (waiting for the
device there, never in the loop), and redraws the sink when something changed.
Every method takes a lock, so the loop may run on any thread; the view a ``with``
block opened is the context's current one (``Live.current()``, a ``ContextVar``).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import itertools
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from lens._instruments.recompiles import (
    Retrace,
    explain_here,
    ordinal,
    restore,
    subscribe,
)
from lens.display._live._frame import Frame
from lens.display._live._layers import Layers
from lens.display._live._series import Store, check_scalar, check_step
from lens.display._live._sinks import Sink, TextSink, bundle, pick
from lens.display._live._view import FrameView
from lens.display._safe import DisplayWarning

_CURRENT: contextvars.ContextVar[Live | None] = contextvars.ContextVar(
    "lens_live_current", default=None
)
RUNNING_AFTER = 1.0
"""A watched call (not the first) in flight this long shows as running."""
RECOMPILE_AFTER = 0.05
"""A later call that grew a jax.jit cache and took this long counts as a compile."""
DRAW_SHARE = 0.01
"""The share of one core the drawer may spend drawing (it then draws less often)."""
RATE_WINDOW = 5.0
"""Seconds of recent progress the steps/s figure averages over."""


class Live:
    """A live view of a training loop: curves, per-layer statistics, progress.

    Make one with :func:`lens.display.live`. Report scalars with :meth:`log`
    (``split='eval'`` for evaluation curves), parameters and gradients with
    :meth:`layers`, and wrap the jitted step with :meth:`watch` to see its compile.
    Use it as a context manager (or call :meth:`close`): the final picture is then
    drawn once, statically.

    Example:
        >>> import lens
        >>> with lens.display.live("fit", total=3, sink="none") as live:
        ...     for step in range(3):
        ...         live.log(step, loss=1.0 / (step + 1))
        >>> live.frame().done
        3
    """

    def __init__(
        self,
        title: str = "training",
        *,
        total: int | None = None,
        sink: str | Sink = "auto",
        per_second: float = 4.0,
        layer_every: int | None = None,
        smooth: float = 0.0,
        recompiles: bool = True,
    ) -> None:
        _check_options(title, total, per_second, layer_every, smooth)
        self.title = title
        self.smooth = float(smooth)
        self.total = total
        self.interval = 1.0 / per_second
        self._lock = threading.Lock()
        self._store = Store()
        self._layers = Layers(layer_every, per_second)
        self._calls = 0
        self._last_step: Any = None
        self._start = time.perf_counter()
        self._ticks: list[tuple[float, int]] = []
        self._last_log: float | None = None
        self._inflight: dict[int, tuple[str, bool, float]] = {}
        self._tokens = itertools.count()
        self._compiles: list[tuple[str, float]] = []
        self._retraces: list[tuple[str, str]] = []
        self._retrace_count = 0
        self._explain_token: Any = None
        self._unsubscribe = subscribe(self._on_retrace) if recompiles else None
        self._status = "running"
        self._closed = False
        self._final: Frame | None = None
        self._failed = False
        self._sink = pick(sink)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lens-live-{title}", daemon=True
        )
        self._thread.start()
        _RUNNING.add(self)

    # --- the loop's side -------------------------------------------------------

    def log(self, step: Any, *, split: str = "train", **scalars: Any) -> None:
        """Records scalars at ``step`` (no device sync: arrays are fetched later).

        Args:
          step: the step number (an int, or an integer scalar such as
            ``TrainState.step``).
          split: which curve: ``'train'`` (the default, counted as progress),
            ``'eval'``, or any name; each split of a metric is one colour.
          **scalars: name=value, each a float, an int or a scalar array.

        Raises:
          TypeError: a value that is not a number, a tracer (called inside jit),
            or a step that is not an integer.
          ValueError: a value that is not a scalar.
        """
        check_step(step)
        self._check_open("log")
        if not isinstance(split, str) or not split:
            raise TypeError(
                f"live.log: split={split!r} must be a non-empty string "
                "such as 'train' or 'eval'."
            )
        for name, value in scalars.items():
            check_scalar(name, value)
        now = time.perf_counter()
        with self._lock:
            if split == "train" and not _same_step(step, self._last_step):
                self._calls += 1
                self._last_step = step
                self._last_log = now
        self._store.log(step, split, scalars)

    def layers(self, step: Any, params: Any, grads: Any = None) -> None:
        """Samples per-layer RMS of ``params`` (and ``grads``) at ``step``.

        A sample dispatches one small jitted reduction (per slice for a scanned or
        vmapped stack) and waits for nothing; it is taken every ``layer_every``
        calls, or at most ``per_second`` times a second. ``params`` is any pytree
        (a params dict, ``TrainState.params``, an ``nnx.State``); ``grads`` has
        the same structure.
        """
        check_step(step)
        self._check_open("layers")
        self._layers.sample(step, params, grads)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(
                f"live.{what}: the view {self.title!r} is closed (its with block "
                "ended or close() was called); make a new one with "
                "lens.display.live(...)."
            )

    def watch(self, fn: Callable[..., Any], name: str | None = None) -> Any:
        """``fn`` wrapped so the view shows its compile: ``compiling name: 12 s``.

        Works for ``jax.jit``, ``lens.nnx.jit`` or any callable: the first call
        (and any call that grows a ``jax.jit`` cache) counts as a compile; a later
        call in flight for over a second shows as running. Attributes of ``fn``
        (``lower``, ...) stay reachable.
        """
        if not callable(fn):
            raise TypeError(
                f"live.watch: expected a function (for example a jax.jit or "
                f"nnx.jit function), got a {type(fn).__name__}."
            )
        return _Watched(self, fn, name or getattr(fn, "__name__", None) or "call")

    @contextlib.contextmanager
    def compiling(self, name: str) -> Iterator[None]:
        """Marks a block as a compile (``with live.compiling('train_step'): ...``)."""
        token = self._begin(name, True)
        try:
            yield
        finally:
            self._end(token, True)

    # No lock on a watched call's path: one dict store or pop and one list append
    # are atomic in CPython, and readers copy the dict in one step (``_frame``).
    def _begin(self, name: str, first: bool) -> int:
        token = next(self._tokens)
        self._inflight[token] = (name, first, time.perf_counter())
        return token

    def _elapsed(self, token: int) -> float:
        return time.perf_counter() - self._inflight[token][2]

    def _end(self, token: int, compiled: bool) -> None:
        name, _, t0 = self._inflight.pop(token)
        if compiled:
            self._compiles.append((name, time.perf_counter() - t0))

    # --- the picture -------------------------------------------------------------

    def frame(self) -> Frame:
        """What is known now, as a :class:`Frame` (host values; fetches pending)."""
        self._store.drain()
        self._layers.drain()
        return self._frame()

    def _frame(self) -> Frame:
        now = time.perf_counter()
        with self._lock:
            busy = []
            for name, first, t0 in dict(self._inflight).values():
                if first:
                    busy.append((name, "compiling", now - t0))
                elif now - t0 > RUNNING_AFTER:
                    busy.append((name, "running", now - t0))
            calls, step, status = self._calls, self._last_step, self._status
            rate = self._rate(now)
            compiles = list(self._compiles)
            retraces = list(self._retraces)
        groups, samples = self._layers.snapshot()
        return Frame(
            title=self.title,
            status=status,
            step=_host_step(step),
            calls=calls,
            total=self.total,
            elapsed=now - self._start,
            rate=rate,
            busy=busy,
            compiles=compiles,
            retraces=retraces,
            series=self._store.snapshot(),
            groups=groups,
            samples=samples,
            smooth=self.smooth,
        )

    def _rate(self, now: float) -> float | None:
        """Steps per second: over the recent window, or the whole run once closed
        (from the view's start, so a compile counts)."""
        if self._status != "running" or len(self._ticks) < 2:
            # overall: every step over the time from the view's start (compiles too)
            if not self._calls or self._last_log is None:
                return None
            span = self._last_log - self._start
            return self._calls / span if span > 0 else None
        (t0, n0), (t1, n1) = self._ticks[0], self._ticks[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 and n1 > n0 else None

    # --- the drawer thread -------------------------------------------------------

    def _run(self) -> None:
        seen, pending, next_draw = None, False, 0.0
        while not self._stop.wait(self.interval):
            try:
                got = self._store.drain() + self._layers.drain()
                now = time.perf_counter()
                with self._lock:
                    self._ticks.append((now, self._calls))
                    while self._ticks and now - self._ticks[0][0] > RATE_WINDOW:
                        self._ticks.pop(0)
                    busy = bool(self._inflight)
                    state = (self._calls, len(self._compiles))
                pending = pending or bool(got) or busy or state != seen
                if pending and now >= next_draw:
                    seen, pending = state, False
                    cpu = time.thread_time()
                    self._draw(self._frame())
                    # a slow picture is drawn less often: the drawer keeps to
                    # DRAW_SHARE of a core, whatever the frame holds
                    cost = time.thread_time() - cpu
                    next_draw = now + cost / DRAW_SHARE
            except Exception as e:  # noqa: BLE001 - the drawer must never die loudly
                self._fail(e)

    def _draw(self, frame: Frame) -> None:
        try:
            self._sink.update(frame)
        except Exception as e:  # noqa: BLE001 - fall back to text, keep going
            self._fail(e)

    def _fail(self, error: BaseException) -> None:
        """Warns once and falls back to plain text."""
        if self._failed:
            return
        self._failed = True
        warnings.warn(
            f"lens live view {self.title!r} could not draw "
            f"({type(error).__name__}: {error}); falling back to plain text.",
            DisplayWarning,
            stacklevel=2,
        )
        self._sink = TextSink()

    # --- closing -----------------------------------------------------------------

    def _on_retrace(self, trace: Retrace) -> None:
        """A retrace lens.recompiles explained while this view is open: a row."""
        if trace.first or self._closed:
            return
        with self._lock:
            step = _host_step(self._last_step)
            self._retrace_count += 1
            at = f" at step {int(step)}" if step is not None else ""
            why = (
                "the function object is new"
                if trace.new_function
                else trace.changes[0].line()
                if trace.changes
                else "JAX's context changed"
            )
            loop = " · in a loop" if trace.loop else ""
            line = f"retraced {trace.function}{at} ({ordinal(trace.count)} trace{loop}): {why}"
            self._retraces.append((line, trace.fix))
            del self._retraces[:-3]

    def close(self, status: str = "done") -> Frame:
        """Stops the drawer and draws the final frame once; returns it.

        Idempotent: a second call returns the final frame again.
        """
        with self._lock:
            if self._closed:
                return self._final or self._frame()
            self._closed = True
            self._status = status
        self._stop.set()
        _RUNNING.discard(self)
        if self._unsubscribe is not None:
            self._unsubscribe()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5.0)
        try:
            frame = self.frame()
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            frame = self._frame()
        self._final = frame
        try:
            self._sink.close(frame)
        except Exception as e:  # noqa: BLE001
            self._fail(e)
            self._sink.close(frame)
        return frame

    def __enter__(self) -> Live:
        self._token = _CURRENT.set(self)
        if self._unsubscribe is not None:  # explain the block's retraces
            self._explain_token = explain_here()
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        try:
            _CURRENT.reset(self._token)
            if self._explain_token is not None:
                restore(self._explain_token)
        except ValueError:  # exited in another context (a thread): leave it
            pass
        if kind is None:
            self.close("done")
        elif issubclass(kind, KeyboardInterrupt):
            self.close("interrupted")
        else:
            self.close(f"failed: {kind.__name__}")

    @staticmethod
    def current() -> Live | None:
        """The view the innermost ``with`` block of this context opened, or None."""
        return _CURRENT.get()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> Any:
        return bundle(self._final or self.frame())

    def __repr__(self) -> str:
        return repr(FrameView(self._final or self.frame()))


# Views whose drawer still runs. At exit their drawers are stopped before the
# interpreter tears down: a daemon thread inside a device transfer then would
# abort the process.
_RUNNING: weakref.WeakSet[Live] = weakref.WeakSet()


@atexit.register
def _stop_drawers() -> None:
    for live in list(_RUNNING):
        live._stop.set()
    for live in list(_RUNNING):
        live._thread.join(timeout=1.0)


class _Watched:
    """A function the view watches (see :meth:`Live.watch`)."""

    def __init__(self, live: Live, fn: Callable[..., Any], name: str) -> None:
        self._live, self._fn, self._name = live, fn, name
        self._calls = 0
        size = getattr(fn, "_cache_size", None)
        self._size = size if callable(size) else None
        with contextlib.suppress(AttributeError, TypeError):
            functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        first = self._calls == 0
        self._calls += 1
        before = self._size() if self._size is not None else None
        token = self._live._begin(self._name, first)
        compiled = first
        try:
            return self._fn(*args, **kwargs)
        finally:
            if before is not None and self._size is not None and not first:
                # a new cache entry that took a while: a retrace and compile (a new
                # entry can also reuse a compiled program, in microseconds)
                grew = self._size() != before
                compiled = grew and self._live._elapsed(token) > RECOMPILE_AFTER
            self._live._end(token, compiled)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)


def _same_step(step: Any, last: Any) -> bool:
    """Whether ``step`` repeats the last train step (more metrics at one step)."""
    if step is last:
        return True
    return isinstance(step, int) and isinstance(last, int) and step == last


def _host_step(step: Any) -> float | None:
    """The last step as a number, if it is one on the host already."""
    if step is None:
        return None
    if isinstance(step, (int, float)):
        return float(step)
    try:  # a device scalar: its step was done long ago when the drawer asks
        return float(step)
    except Exception:  # noqa: BLE001
        return None


def _check_options(
    title: Any, total: Any, per_second: Any, layer_every: Any, smooth: Any
) -> None:
    if not isinstance(title, str):
        raise TypeError(f"lens.display.live: title={title!r} must be a string.")
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, int) or total < 1
    ):
        raise ValueError(
            f"lens.display.live: total={total!r} must be a positive int (the number "
            "of steps the loop will run) or None."
        )
    if (
        isinstance(per_second, bool)
        or not isinstance(per_second, (int, float))
        or not (0 < per_second <= 30)
    ):
        raise ValueError(
            f"lens.display.live: per_second={per_second!r} must be a number in "
            "(0, 30]: how many times a second the view redraws (default 4)."
        )
    if layer_every is not None and (
        isinstance(layer_every, bool)
        or not isinstance(layer_every, int)
        or layer_every < 1
    ):
        raise ValueError(
            f"lens.display.live: layer_every={layer_every!r} must be a positive int "
            "(sample layers every that many calls) or None (at most per_second a "
            "second)."
        )
    if (
        isinstance(smooth, bool)
        or not isinstance(smooth, (int, float))
        or not (0 <= smooth < 1)
    ):
        raise ValueError(
            f"lens.display.live: smooth={smooth!r} must be a number in [0, 1): the "
            "weight of the curves' moving average (0.9 smooths a lot; 0: none)."
        )
