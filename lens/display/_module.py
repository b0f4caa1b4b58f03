"""Modules (bound and unbound), scopes, and axis-metadata boxes.

Displays never run ``setup`` or a model: they read construction attributes, the
scope's public state and the variables only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from lens.display._base import View, e
from lens.display._glossary import Gloss, gloss
from lens.display._leaf import human_count, iter_leaves, make_leaf
from lens.display._variables import OPEN_ALL, VariablesView, _stats_str

OPEN_VARIABLES = OPEN_ALL
"""A bound module with at most this many arrays shows them open; more: collapsed."""


def _is_default(f: dataclasses.Field, value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        return False
    if value is default:
        return True
    try:
        return bool(type(value) is type(default) and value == default)
    except Exception:  # noqa: BLE001 - arrays and odd types: show them
        return False


def _attributes(module: Any) -> dict[str, Any]:
    """Construction attributes that differ from their defaults (and the name)."""
    d = object.__getattribute__(module, "__dict__")
    return {
        f.name: d.get(f.name)
        for f in dataclasses.fields(module)
        if f.init and f.name != "parent" and not _is_default(f, d.get(f.name))
    }


def _short(value: Any) -> str:
    from lens.nn import Module

    if isinstance(value, Module):
        return f"{type(value).__name__}(...)"
    r = repr(value)
    if callable(value) and not isinstance(value, type):
        r = (
            getattr(value, "__qualname__", None)
            or getattr(value, "__name__", None)
            or r
        )
    return r if len(r) <= 60 else r[:57] + "..."


def _filter_str(f: Any) -> str:
    from lens.core import DenyList

    if f is True:
        return "all"
    if f is False:
        return "none"
    if isinstance(f, DenyList):
        return f"all but {_filter_str(f.deny)}"
    if isinstance(f, str):
        return f
    return ", ".join(sorted(f))


def _submodules(variables: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Child name -> {collection: value count} from the variable tree."""
    out: dict[str, dict[str, int]] = {}
    for col, tree in variables.items():
        for name, sub in tree.items():
            if isinstance(sub, Mapping):
                n = sum(x.count for x in iter_leaves({col: sub}, with_stats=False))
                out.setdefault(name, {})[col] = n
    return out


class ModuleView(View):
    """A bound module: class, attributes, submodules, variables, scope; or unbound."""

    def __init__(self, module: Any):
        self.module = module
        d = object.__getattribute__(module, "__dict__")
        self.scope = d.get("scope")
        self.cls = type(module).__name__
        self.attrs = _attributes(module)
        if self.scope is not None and not self.scope.invalid:
            self.variables = self.scope.variables()
        else:
            self.variables = None

    def _lines(self) -> list[str]:
        head = f"{self.cls}({', '.join(f'{k}={_short(v)}' for k, v in self.attrs.items())})"
        if self.scope is None:
            return [
                head,
                "unbound: no variables. Bind it (m.bind(variables)) or use init/apply.",
            ]
        if self.variables is None:
            return [
                head,
                f"bound at {self.scope.path_text}, but its init/apply has returned.",
            ]
        lines = [
            head,
            f"bound at {self.scope.path_text} · mutable: {_filter_str(self.scope.mutable)} · "
            f"rngs: {', '.join(sorted(self.scope.rngs)) or 'none'}",
        ]
        for name, counts in _submodules(self.variables).items():
            lines.append(
                f"  {name}: "
                + ", ".join(f"{c} {human_count(n)}" for c, n in counts.items())
            )
        return lines

    def text(self) -> str:
        """Plain text: header, scope facts, submodules, then the variables."""
        lines = self._lines()
        if self.variables:
            lines.append(
                VariablesView(self.variables, title="variables", stats=False).text()
            )
        return "\n".join(lines)

    def html_body(self) -> str:
        """HTML with the variables collapsible."""
        lines = self._lines()
        out = [f"<div><span class='c'>{e(lines[0])}</span></div>"]
        g = Gloss()
        for line in lines[1:]:
            cls = "hint" if self.scope is None else "m"
            out.append(f"<div class='{cls}'>{g(line)}</div>")
        if self.variables:
            # a small module's variables are what one binds it to see: open
            n = sum(1 for _ in iter_leaves(self.variables))
            shown = " open" if n <= OPEN_VARIABLES else ""
            out.append(
                f"<details{shown}><summary>variables "
                f"<span class=m>· {n} array{'s' if n != 1 else ''}</span></summary>"
            )
            out.append(VariablesView(self.variables, stats=True).html_body())
            out.append("</details>")
        return "".join(out)

    def rich(self) -> Any:
        """A ``rich`` tree."""
        from rich.markup import escape
        from rich.tree import Tree

        lines = self._lines()
        tree = Tree(f"[bold]{escape(lines[0])}[/]")
        for line in lines[1:]:
            tree.add(escape(line))
        if self.variables:
            tree.add(VariablesView(self.variables, stats=False).rich())
        return tree

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from treescope import repr_lib

        # The module's own type and construction attributes (real attributes).
        return repr_lib.render_object_constructor(
            object_type=type(self.module),
            attributes=self.attrs,
            path=path,
            subtree_renderer=subtree_renderer,
        )


class ScopeView(View):
    """A scope, including one seen from inside a lifted transform."""

    def __init__(self, scope: Any):
        self.scope = scope

    def _lines(self) -> list[str]:
        s = self.scope
        alive = not s.invalid
        lines = [
            f"Scope {s.path_text}"
            + ("" if alive else " (dead: its init/apply returned)")
        ]
        lines.append(f"mutable: {_filter_str(s.mutable)}")
        for info in s.lifts:
            groups = (
                ", ".join(f"{_filter_str(f)}: {label}" for f, label in info.groups)
                or "none"
            )
            rngs = (
                ", ".join(f"{_filter_str(f)}: {label}" for f, label in info.rng_groups)
                or "none"
            )
            lines.append(
                f"inside {info.transform} at /{'/'.join(info.path)} · collections {groups} · rngs {rngs}"
            )
        if alive:
            cols = s.variables()
            for col, tree in cols.items():
                n = sum(x.count for x in iter_leaves({col: tree}, with_stats=False))
                lines.append(f"collection {col}: {human_count(n)} values")
        lines.append(f"rng streams: {', '.join(sorted(s.rngs)) or 'none'}")
        return lines

    def text(self) -> str:
        """Plain text."""
        return "\n".join(self._lines())

    def html_body(self) -> str:
        """HTML."""
        lines = self._lines()
        g = Gloss()
        return f"<div class='c'>{e(lines[0])}</div>" + "".join(
            f"<div>{g(x)}</div>" for x in lines[1:]
        )


_VARIABLE_DEFAULTS = {"hijax": False, "ref": False, "eager_sharding": True}
"""Metadata every Variable carries at these values: shown only when set otherwise."""


def _is_variable(box: Any) -> bool:
    """A lens.nnx Variable (its metadata is a dict, not dataclass fields)."""
    return callable(getattr(box, "get_metadata", None)) and hasattr(box, "get_value")


def _box_fields(box: Any) -> dict[str, Any]:
    """What a box holds beside its value: a Variable's metadata, else its attributes."""
    if _is_variable(box):
        return {
            k: v
            for k, v in dict(box.get_metadata()).items()
            if v is not None and _VARIABLE_DEFAULTS.get(k, ...) != v
        }
    if hasattr(box, "__dict__"):
        return {k: v for k, v in vars(box).items() if k != "value"}
    return {}


class BoxView(View):
    """An axis-metadata box: ``Partitioned``, ``LogicallyPartitioned``, a user box,
    or a lens.nnx Variable (``Param f32[8,4] · 32 values · mean 0.01 ...``)."""

    def __init__(self, box: Any):
        self.box = box
        value = box.get_value() if _is_variable(box) else box
        self.leaf = make_leaf("", (), type(box).__name__, value)

    def text(self) -> str:
        """``Partitioned f32[4,8] (None,'data') → P(None, 'data')``."""
        x = self.leaf
        parts = [x.box or type(self.box).__name__, x.type_str]
        if x.axes_str:
            parts.append(x.axes_str)
        else:
            fields = _box_fields(self.box)
            if fields:
                parts.append(", ".join(f"{k}={_short(v)}" for k, v in fields.items()))
        if _is_variable(self.box) and x.values is not None:
            parts.append(f"= {x.values}")  # a small array or a Python value: itself
        elif _is_variable(self.box):
            # an nnx Variable: how many values, and their statistics
            parts.append(f"· {human_count(x.count)} value{'s' if x.count != 1 else ''}")
            if x.stats is not None:
                parts.append(f"· {_stats_str(x)}")
        spec = getattr(self.box, "get_partition_spec", None)
        if spec is not None:
            try:
                parts.append(f"→ {spec()}")
            except Exception:  # noqa: BLE001 - rules may be missing; the box still shows
                pass
        if x.sharding:
            parts.append(f"sharded {x.sharding}")
        return " ".join(parts)

    def html_body(self) -> str:
        """HTML."""
        return f"<span>{gloss(self.text())}</span>"

    def treescope_attributes(self) -> dict[str, Any]:
        """The dataclass fields of the box."""
        if dataclasses.is_dataclass(self.box):
            return {
                f.name: getattr(self.box, f.name) for f in dataclasses.fields(self.box)
            }
        return {"value": self.box.unbox()}
