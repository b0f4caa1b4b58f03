"""The retrace explainer's view: each retrace, its cause, before → after, the fix.

Data: :mod:`lens._instruments.recompiles`. Script-free HTML with inline styles,
so it reads the same trusted or not, in nbconvert and on GitHub; lines wrap in a
narrow cell instead of scrolling. Each cause carries its meaning as hover text.
"""

from __future__ import annotations

from typing import Any

from lens._instruments.recompiles import (
    CAUSES,
    Recompiles,
    Retrace,
    recompiles,
    subscribe,
)
from lens.display._base import View, e

# what each cause means, on hover (the glossary of docs/recompiles.md)
MEANING = {
    "new function": "jax.jit caches compiled code per function object; this call "
    "brought a new object (a lambda, a nested function, a bound method, a jit "
    "built in a loop), so the cache was empty for it",
    "init vs apply": "init creates the variables and apply reads them: two "
    "programs, each traced once",
    "structure": "the arguments' pytree (dict keys, list length, None-ness, "
    "container types) differs, and jit keys on it",
    "new": "a part of the arguments (a submodule, variable, dict key) that the "
    "earlier trace did not have",
    "gone": "a part of the arguments that the earlier trace had",
    "static value": "a value jit reads in Python (a static argument, a Module's "
    "hyperparameter or flag) changed; each value compiles once",
    "module type": "a Module of another class sits at this path",
    "shape": "an array's shape changed; jit compiles once per shape",
    "dtype": "an array's element type changed",
    "weak type": "a Python scalar is 'weakly typed' (it takes the type of what it "
    "meets); an array of the same dtype is not, and jit tells them apart",
    "sharding": "the array is laid out over the devices differently",
    "unknown": "no argument changed: JAX's context did (a config option, a mesh, "
    "cleared caches)",
}

CAUSE_STYLE = (
    "background:rgba(178,106,0,.18);border-radius:2px;padding:0 3px;"
    "white-space:nowrap;cursor:help"
)
LOOP_STYLE = (
    "background:rgba(198,40,40,.22);border-radius:2px;padding:0 3px;"
    "font-weight:bold;cursor:help"
)


class RecompilesView(View):
    """A :class:`~lens._instruments.recompiles.Recompiles` log, drawn."""

    def __init__(self, log: Recompiles | list[Retrace]):
        self.traces = list(log.traces if isinstance(log, Recompiles) else log)

    @property
    def retraces(self) -> list[Retrace]:
        return [t for t in self.traces if not t.first]

    def _summary(self) -> str:
        rs = self.retraces
        if not rs:
            n = len(self.traces)
            return f"Recompiles: none ({n} first trace{'s' * (n != 1)})"
        functions = {(r.function, r.location) for r in rs}
        loops = sorted({r.function for r in rs if r.loop})
        text = (
            f"Recompiles: {len(rs)} retrace{'s' * (len(rs) != 1)} of "
            f"{len(functions)} function{'s' * (len(functions) != 1)}"
        )
        if loops:
            text += f" · in a loop: {', '.join(loops)}"
        return text

    def text(self) -> str:
        lines = [self._summary()]
        for r in self.retraces:
            lines += r.lines()
        return "\n".join(lines)

    def html_body(self) -> str:
        parts = [f"<div class='c'>{e(self._summary())}</div>"]
        for r in self.retraces:
            parts.append(_retrace_html(r))
        return "".join(parts)

    def rich(self) -> Any:
        from rich.text import Text

        out = Text(self._summary() + "\n", style="bold")
        for r in self.retraces:
            out.append(r.headline() + "\n", style="bold")
            if r.new_function:
                out.append(f"  the function object is new: {r.new_function}\n")
            for c in r.changes[:8]:
                out.append(f"  {c.path}", style="bold")
                out.append(f" ({c.what}): ")
                out.append(c.cause, style="yellow")
                if c.before or c.after:
                    out.append(f" {c.before}", style="red")
                    out.append(" → ")
                    out.append(f"{c.after}", style="green")
                out.append("\n")
            out.append(f"  fix: {r.fix}\n", style="italic dim")
        return out


def _retrace_html(r: Retrace) -> str:
    head = (
        f"<b>{e(r.function)}</b> <span class='m'>{e(r.jit)} · {e(r.location)} · "
        f"trace {r.count}</span>"
    )
    if r.loop:
        head += (
            f" <span style='{LOOP_STYLE}' title='{e(_loop_title(r))}'>"
            "retraced in a loop</span>"
        )
    rows = []
    if r.new_function:
        rows.append(f"<div>{_cause('new function')} {e(r.new_function)}</div>")
    for c in r.changes[:8]:
        change = ""
        if c.before or c.after:
            change = (
                f" <span class='del'>{e(c.before or '—')}</span> → "
                f"<span class='add'>{e(c.after or '—')}</span>"
            )
        rows.append(
            f"<div><b>{e(c.path)}</b> <span class='m'>{e(c.what)}</span> "
            f"{_cause(c.cause)}{change}</div>"
        )
    if len(r.changes) > 8:
        rows.append(f"<div class='m'>… and {len(r.changes) - 8} more differences</div>")
    rows.append(f"<div class='hint'>fix: {e(r.fix)}</div>")
    return (
        "<div style='margin:6px 0 0 0;overflow-wrap:anywhere'>"
        f"<div>{head}</div>"
        f"<div style='margin-left:16px'>{''.join(rows)}</div></div>"
    )


def _cause(cause: str) -> str:
    label = CAUSES.get(cause, cause)
    return (
        f"<span style='{CAUSE_STYLE}' title='{e(MEANING.get(cause, label))}'>"
        f"{e(label)}</span>"
    )


def _loop_title(r: Retrace) -> str:
    return (
        f"{r.function} was traced {r.count} times, each time for the same reason; "
        "every trace compiles again"
    )


# -- %lens_recompiles: each cell's retraces shown under it


class _CellWatcher:
    """Collects the retraces made while a cell runs and shows them after it."""

    def __init__(self, ipython: Any) -> None:
        import threading

        self.ipython = ipython
        self.pending: list[Retrace] = []
        self.lock = threading.Lock()
        self.unsubscribe = subscribe(self._add, shows=True)
        self.log = recompiles(True)
        ipython.events.register("post_run_cell", self.show)

    def _add(self, trace: Retrace) -> None:
        with self.lock:
            self.pending.append(trace)

    def show(self, result: Any = None) -> None:
        with self.lock:
            traces, self.pending = self.pending, []
        if any(not t.first for t in traces):
            from IPython.display import display

            display(RecompilesView(traces))

    def stop(self) -> None:
        self.unsubscribe()
        try:
            self.ipython.events.unregister("post_run_cell", self.show)
        except ValueError:
            pass
        recompiles(False)


_watchers: dict[int, _CellWatcher] = {}  # per IPython shell (one per kernel)


def lens_recompiles_magic(line: str = "") -> None:
    """``%lens_recompiles [on|off]``: explain every retrace in this kernel, shown
    under the cell that caused it; without an argument, says whether it is on."""
    from IPython import get_ipython

    ipython = get_ipython()
    arg = line.strip().lower()
    key = id(ipython)
    if arg == "":
        on = key in _watchers
        print(f"lens.recompiles is {'on' if on else 'off'}.")
    elif arg in ("on", "true", "1", "yes"):
        if key not in _watchers:
            _watchers[key] = _CellWatcher(ipython)
        print("lens.recompiles is on: each cell's retraces are shown under it.")
    elif arg in ("off", "false", "0", "no"):
        watcher = _watchers.pop(key, None)
        if watcher is not None:
            watcher.stop()
        print("lens.recompiles is off.")
    else:
        raise ValueError(
            f"%lens_recompiles takes on or off, got {line.strip()!r}.\n"
            "%lens_recompiles on explains each retrace under the cell that caused "
            "it; %lens_recompiles off stops."
        )


def load_magic(ipython: Any) -> None:
    """Registers ``%lens_recompiles`` in ``ipython``."""
    ipython.register_magic_function(lens_recompiles_magic, "line", "lens_recompiles")


def unload_magic(ipython: Any) -> None:
    """Removes ``%lens_recompiles`` (and stops it) in ``ipython``."""
    watcher = _watchers.pop(id(ipython), None)
    if watcher is not None:
        watcher.stop()
    manager = getattr(ipython, "magics_manager", None)
    if manager is not None:
        manager.magics.get("line", {}).pop("lens_recompiles", None)
