"""Flax's public surface looked up in lens: modules, names, generics, parameter names.

Walks the installed flax (the test oracle, 0.12.8): every module with no ``_``
path component and no tests, and its public names (a package: the names in it; a
module: its own top-level definitions). Each is looked up in lens at the same path
(``flax.linen`` is ``lens.nn``, otherwise ``flax.X`` is ``lens.X``) and the gaps are
reported:

- a missing module, or one that fails to import;
- a missing name;
- a class that is subscriptable in flax (``Generic``) and not in lens;
- a function or class whose parameters lack flax's names (or take them in another
  position).

Deliberate gaps are listed, each with its reason, in ``surface_exclusions.toml``
beside this file. ``make api-diff`` prints the table (``python -m compat.surface``);
``tests/test_flax_surface.py`` fails on any gap that is not excluded.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import pathlib
import pkgutil
import sys
import tomllib
import typing
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from lens._flax_alias import lens_module_name

EXCLUSIONS_FILE = pathlib.Path(__file__).with_name("surface_exclusions.toml")


def exclusions() -> dict[str, str]:
    """``{flax path: reason}``: ``flax.a.b`` (a module) or ``flax.a.b:Name``."""
    data = tomllib.loads(EXCLUSIONS_FILE.read_text())
    return {entry["path"]: entry["reason"] for entry in data.get("exclude", [])}


def _is_public(name: str) -> bool:
    parts = name.split(".")
    return not any(p.startswith("_") or "test" in p for p in parts)


def flax_modules() -> list[str]:
    """The public module paths of the installed flax, sorted."""
    flax = importlib.import_module("flax")
    names = {"flax"}
    for info in pkgutil.walk_packages(flax.__path__, "flax.", onerror=lambda _: None):
        if _is_public(info.name):
            names.add(info.name)
    return sorted(names)


def _own_definitions(module: ModuleType) -> list[str]:
    """Top-level names a module's source defines itself (defs, classes, assignments)."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return []
    names: list[str] = []
    stack: list[ast.stmt] = list(ast.parse(source).body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                stack += handler.body
    return list(dict.fromkeys(names))


def public_names(module: ModuleType) -> list[str]:
    """A package's public names, or a module's own public definitions.

    Submodules, TypeVars and ``from __future__`` features are left out: modules are
    walked on their own, and a TypeVar is no API.
    """
    if hasattr(module, "__path__"):
        candidates = list(vars(module))
    else:
        candidates = _own_definitions(module)
    out = []
    for name in candidates:
        if name.startswith("_") or not hasattr(module, name):
            continue
        obj = getattr(module, name)
        if inspect.ismodule(obj) or isinstance(obj, typing.TypeVar):
            continue
        if type(obj).__module__ == "__future__":
            continue
        out.append(name)
    return sorted(out)


@dataclasses.dataclass
class Gap:
    """One difference: ``kind`` is module, name, generic or signature."""

    flax_path: str
    kind: str
    detail: str

    @property
    def key(self) -> str:
        """The exclusion key that would cover this gap."""
        return self.flax_path


def _subscriptable(obj: Any) -> bool:
    """A generic class with type parameters left open (``AxisMetadata[jax.Array]``).

    A subclass of a generic class that does not re-declare its parameters has
    ``__class_getitem__`` too, but subscripting it is a TypeError.
    """
    return inspect.isclass(obj) and bool(getattr(obj, "__parameters__", ()))


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


_P = inspect.Parameter


# Linen Modules: flax's dataclass transform leaves ``parent`` and ``name`` last and
# positional; lens makes them keyword-only (nobody passes them by position).
LINEN_KEYWORD_ONLY = frozenset({"parent", "name"})


def signature_gaps(
    flax_obj: Any, lens_obj: Any, keyword_only_ok: frozenset[str] = frozenset()
) -> list[str]:
    """How lens's parameters fail to take flax's (by name and by position).

    Every flax parameter must be accepted by lens the way flax takes it: a
    positional one at the same position with the same name (positional-only ones
    by position alone), a keyword one by name or through lens's ``**kwargs``.
    Extra lens parameters are allowed, and so are the names in
    ``keyword_only_ok`` taken by keyword only. A flax signature of only
    ``(*args, **kwargs)`` names nothing and is not compared.
    """
    fsig, lsig = _signature(flax_obj), _signature(lens_obj)
    if fsig is None or lsig is None:
        return []
    kinds = [p.kind for p in fsig.parameters.values()]
    if kinds == [_P.VAR_POSITIONAL, _P.VAR_KEYWORD]:
        return []
    lparams = list(lsig.parameters.values())
    by_name = {p.name: p for p in lparams}
    positional = [
        p for p in lparams if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
    ]
    var_pos = any(p.kind is _P.VAR_POSITIONAL for p in lparams)
    var_kw = any(p.kind is _P.VAR_KEYWORD for p in lparams)
    out = []
    fpositional = 0
    for p in fsig.parameters.values():
        if p.kind is _P.VAR_POSITIONAL:
            out += [] if var_pos else [f"*{p.name}"]
        elif p.kind is _P.VAR_KEYWORD:
            out += [] if var_kw else [f"**{p.name}"]
        elif p.kind is _P.KEYWORD_ONLY:
            lp = by_name.get(p.name)
            if lp is None and not var_kw:
                out.append(p.name)
            elif lp is not None and lp.kind is _P.POSITIONAL_ONLY:
                out.append(f"{p.name} (positional-only in lens)")
        else:  # positional (and, unless positional-only, keyword)
            lp = positional[fpositional] if fpositional < len(positional) else None
            fpositional += 1
            by_keyword = p.kind is _P.POSITIONAL_OR_KEYWORD
            if p.name in keyword_only_ok and p.name in by_name:
                continue
            if lp is None:
                named = by_name.get(p.name)
                keyword_ok = not by_keyword or var_kw or named is not None
                if not (var_pos and keyword_ok):
                    where = " (keyword-only in lens)" if named is not None else ""
                    out.append(p.name + where)
            elif by_keyword and lp.name != p.name:
                out.append(f"{p.name} (lens: {lp.name})")
            elif by_keyword and lp.kind is _P.POSITIONAL_ONLY:
                out.append(f"{p.name} (positional-only in lens)")
    return out


def _import(name: str) -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module(name), ""
    except Exception as e:  # noqa: BLE001 - any failure to import is the finding
        return None, f"{type(e).__name__}: {e}"


def check_module(flax_name: str, excluded: dict[str, str] | None = None) -> list[Gap]:
    """The gaps of one flax module in lens, less the excluded ones."""
    excluded = exclusions() if excluded is None else excluded
    if flax_name in excluded:
        return []
    fmod, error = _import(flax_name)
    if fmod is None:
        return [Gap(flax_name, "flax", f"flax itself fails to import it: {error}")]
    lens_name = lens_module_name(flax_name)
    lmod, error = _import(lens_name)
    if lmod is None:
        return [Gap(flax_name, "module", f"{lens_name}: {error}")]
    linen_module = importlib.import_module("flax.linen").Module
    gaps = []
    for name in public_names(fmod):
        path = f"{flax_name}:{name}"
        if path in excluded:
            continue
        if not hasattr(lmod, name):
            gaps.append(Gap(path, "name", f"{lens_name} has no {name}"))
            continue
        fobj, lobj = getattr(fmod, name), getattr(lmod, name)
        if _subscriptable(fobj) and not _subscriptable(lobj):
            gaps.append(
                Gap(path, "generic", f"{lens_name}.{name} is not subscriptable")
            )
        if callable(fobj) and callable(lobj):
            is_linen = inspect.isclass(fobj) and issubclass(fobj, linen_module)
            ok = LINEN_KEYWORD_ONLY if is_linen else frozenset()
            missing = signature_gaps(fobj, lobj, ok)
            if missing:
                gaps.append(
                    Gap(
                        path,
                        "signature",
                        f"{lens_name}.{name} lacks {', '.join(missing)}",
                    )
                )
    return gaps


def check_all(modules: Sequence[str] | None = None) -> Iterator[tuple[str, list[Gap]]]:
    """``(flax module, its gaps)`` for every public flax module."""
    excluded = exclusions()
    for name in modules or flax_modules():
        yield name, check_module(name, excluded)


def render(results: Sequence[tuple[str, list[Gap]]]) -> str:
    """The gap table as markdown, with a summary line per kind."""
    lines = ["| flax module | lens module | gaps |", "| --- | --- | --- |"]
    counts: dict[str, int] = {}
    for name, gaps in results:
        for g in gaps:
            counts[g.kind] = counts.get(g.kind, 0) + 1
        if not gaps:
            continue
        if gaps[0].kind == "module":
            text = "**missing module**: " + gaps[0].detail
        else:
            text = "; ".join(
                f"{g.kind}: {g.flax_path.partition(':')[2] or g.flax_path}"
                + (
                    f" ({g.detail.split(' lacks ')[1]})"
                    if g.kind == "signature"
                    else ""
                )
                for g in gaps
            )
        lines.append(f"| `{name}` | `{lens_module_name(name)}` | {text} |")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no gaps"
    return (
        f"{len(results)} flax modules checked ({len(exclusions())} exclusions in "
        f"{EXCLUSIONS_FILE.name}): {summary}\n\n" + "\n".join(lines)
    )


KNOWN_GAPS_FILE = pathlib.Path(__file__).with_name("surface_known_gaps.txt")


def gap_line(g: Gap) -> str:
    """One gap as a line of :data:`KNOWN_GAPS_FILE`."""
    return f"{g.flax_path} | {g.kind} | {g.detail}"


def known_gaps() -> dict[str, set[str]]:
    """The gaps lens still has and knows of, per flax module: the work list.

    Not exclusions: each is something to build. The surface test fails on a gap
    not listed here (a regression) and on a listed gap that is gone (so the list
    only shrinks); ``python -m compat.surface --write-known-gaps`` rewrites it.
    """
    out: dict[str, set[str]] = {}
    if not KNOWN_GAPS_FILE.exists():
        return out
    for line in KNOWN_GAPS_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        path, _, _ = line.partition(" | ")
        out.setdefault(path.split(":")[0], set()).add(line)
    return out


def write_known_gaps(results: list[tuple[str, list[Gap]]]) -> int:
    lines = sorted(gap_line(g) for module, gaps in results for g in gaps)
    header = (
        "# flax 0.12.8 public surface lens does not have yet (python -m "
        "compat.surface --write-known-gaps).\n# A work list, not exclusions: "
        "tests/test_flax_surface.py fails on a gap not here and on a line here\n"
        "# that no longer holds, so the list only shrinks.\n"
    )
    KNOWN_GAPS_FILE.write_text(header + "".join(line + "\n" for line in lines))
    return len(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the table; exit status 1 when there are gaps."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="flax modules (default: all)")
    parser.add_argument(
        "--prefix", help="only flax modules under this path, e.g. flax.nnx"
    )
    parser.add_argument(
        "--write-known-gaps",
        action="store_true",
        help=f"write every gap found to {KNOWN_GAPS_FILE.name} (the work list)",
    )
    args = parser.parse_args(argv)
    modules = args.modules or flax_modules()
    if args.prefix:
        modules = [
            m for m in modules if m == args.prefix or m.startswith(args.prefix + ".")
        ]
    results = list(check_all(modules))
    if args.write_known_gaps:
        print(f"{write_known_gaps(results)} gaps written to {KNOWN_GAPS_FILE}")
        return 0
    print(render(results))
    return int(any(gaps for _, gaps in results))


if __name__ == "__main__":
    sys.exit(main())
