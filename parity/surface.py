"""Flax's public surface looked up in lens: modules, names, kinds, generics, parameters.

Walks the installed flax (the test oracle, 0.12.8): every module with no ``_``
path component and no tests, and the names a user's import sees in it:

- a package: its attributes after ``import flax.pkg`` in a fresh interpreter, one
  for each flax package, the union (:mod:`parity.fresh_attributes`): the flax
  submodules among them included (``flax.nnx.object``; ``flax.training.train_state``,
  which ``import flax.nnx`` binds), but not the ones ``import flax.a.b`` binds on
  its own parents (``b`` on ``flax.a``);
- a module: its ``__all__`` (what ``from flax.X import *`` gives), the names its
  source defines, the names it re-exports with ``from M import *`` (M's own public
  names), and the values whose home is the module or that have none (a constant,
  a registry dict: ``graphlib.JAX_PYTREE_REGISTRY``).

Each is looked up in lens at the same path. ``lens.alias_flax()`` hands out lens's
module objects for flax's paths (``flax.linen`` is ``lens.nn``, otherwise ``flax.X``
is ``lens.X``), so the walk imports lens's modules directly, by that mapping, except
for the submodule attributes of a package: those are read, as on flax's side, from
fresh imports under the alias, and one that the lens package's ``__getattr__``
loads on first use counts. The gaps reported:

- a missing module, or one that fails to import;
- a missing name, one in flax's ``__all__`` that lens's star import does not give,
  or a submodule attribute that is another module in lens, lacking names of flax's;
- a class in flax that is no class in lens;
- a class that is subscriptable in flax (``X[int]`` works) and not in lens;
- a function or class whose parameters lack flax's names (or take them in another
  position), or that takes no argument where flax passes any on.

Deliberate gaps are listed, each with its reason, in ``surface_exclusions.toml``
beside this file. ``make api-diff`` prints the table (``python -m parity.surface``);
``tests/test_flax_surface.py`` fails on any gap that is not excluded.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import json
import os
import pathlib
import pkgutil
import subprocess
import sys
import tomllib
import typing
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from lens._flax_alias import lens_module_name

EXCLUSIONS_FILE = pathlib.Path(__file__).with_name("surface_exclusions.toml")
FRESH_ATTRIBUTES = pathlib.Path(__file__).with_name("fresh_attributes.py")


def exclusions() -> dict[str, str]:
    """``{flax path: reason}``: ``flax.a.b`` (a module) or ``flax.a.b:Name``."""
    data = tomllib.loads(EXCLUSIONS_FILE.read_text())
    return {entry["path"]: entry["reason"] for entry in data.get("exclude", [])}


def _is_public(name: str) -> bool:
    parts = name.split(".")
    return not any(p.startswith("_") or "test" in p for p in parts)


def _walk_flax() -> list[pkgutil.ModuleInfo]:
    flax = importlib.import_module("flax")
    return [
        info
        for info in pkgutil.walk_packages(
            flax.__path__, "flax.", onerror=lambda _: None
        )
        if _is_public(info.name)
    ]


def flax_modules() -> list[str]:
    """The public module paths of the installed flax, sorted."""
    return sorted({"flax"} | {info.name for info in _walk_flax()})


def flax_packages() -> list[str]:
    """The public packages of the installed flax, sorted."""
    return sorted({"flax"} | {info.name for info in _walk_flax() if info.ispkg})


@functools.cache
def fresh_package_attributes(alias: bool = False) -> dict[str, dict[str, str | None]]:
    """``{flax package: {public attribute: module name or None}}`` after fresh
    imports of flax's packages, one interpreter state each (the union of them);
    with ``alias``, the same imports under ``lens.alias_flax()`` (lens's packages,
    keyed by their flax paths). See :mod:`parity.fresh_attributes`."""
    root = str(FRESH_ATTRIBUTES.parent.parent)
    env = {k: v for k, v in os.environ.items() if k != "LENS_AS_FLAX"}
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    args = [sys.executable, str(FRESH_ATTRIBUTES), *(["--alias"] if alias else [])]
    done = subprocess.run(
        [*args, *flax_packages()],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{FRESH_ATTRIBUTES.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _star_imports(tree: ast.Module) -> list[str]:
    """The modules a source re-exports whole (``from M import *``)."""
    return [
        node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and node.module
        and not node.level
        and any(alias.name == "*" for alias in node.names)
    ]


def _own_definitions(module: ModuleType) -> list[str]:
    """Top-level names a module's source defines itself (defs, classes,
    assignments), and the public names of the modules it star-imports."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return []
    names: list[str] = []
    stack: list[ast.stmt] = list(tree.body)
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
    for source in _star_imports(tree):
        names += public_names(importlib.import_module(source))
    return list(dict.fromkeys(names))


_NO_HOME = object()


def _homed_here(module: ModuleType, value: Any) -> bool:
    """Whether ``value`` names ``module`` as its home, or has none (a constant, a
    dict): either way a user can only know it as this module's name."""
    home = getattr(value, "__module__", _NO_HOME)
    return home is _NO_HOME or home == module.__name__


def _is_api(value: Any) -> bool:
    """A TypeVar and a ``from __future__`` feature name no API."""
    return not (
        isinstance(value, typing.TypeVar) or type(value).__module__ == "__future__"
    )


def _is_flax_module(module_name: str) -> bool:
    return module_name == "flax" or module_name.startswith("flax.")


def package_submodules(package: ModuleType) -> dict[str, str]:
    """``{attribute: flax module name}``: the flax modules that fresh imports leave
    as attributes of ``package`` (``flax.nnx``'s ``object`` is ``flax.nnx.pytreelib``)."""
    attrs = fresh_package_attributes().get(package.__name__, {})
    return {
        name: module
        for name, module in attrs.items()
        if module is not None and _is_flax_module(module) and not name.startswith("_")
    }


def public_names(module: ModuleType) -> list[str]:
    """The names a user's import of the flax module ``module`` sees (module
    docstring): for a package, its attributes after fresh imports, the flax
    submodules among them; for a module, its ``__all__``, its own definitions and
    the values at home in it. Other modules (``jax``, ``np``), TypeVars and
    ``from __future__`` features are left out.
    """
    declared = list(getattr(module, "__all__", ()))
    if hasattr(module, "__path__"):
        attrs = fresh_package_attributes().get(module.__name__)
        candidates = list(vars(module) if attrs is None else attrs)
        submodules = package_submodules(module)
    else:
        candidates = _own_definitions(module) + [
            name
            for name, value in vars(module).items()
            if not inspect.ismodule(value) and _homed_here(module, value)
        ]
        submodules = {}
    out = set()
    for name in declared + candidates:
        if name.startswith("_") or not hasattr(module, name) and name not in submodules:
            continue
        if name in submodules:
            out.add(name)
            continue
        value = getattr(module, name)
        if inspect.ismodule(value) or not _is_api(value):
            continue
        out.add(name)
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
    """A class that takes type arguments: ``obj[int]`` works (``AxisMetadata[int]``,
    a NamedTuple, a ``Mapping`` subclass), with one ``int`` per open parameter.

    A subclass of a generic class that does not re-declare its parameters has
    ``__class_getitem__`` too, but subscripting it is a TypeError.
    """
    if not inspect.isclass(obj):
        return False
    params = getattr(obj, "__parameters__", ())
    args = tuple(int for _ in params) if isinstance(params, tuple) else ()
    generic: Any = obj
    try:
        generic[args if len(args) > 1 else int]
    except Exception:  # noqa: BLE001 - any failure means "not subscriptable"
        return False
    return True


def _kind(obj: Any) -> str:
    """``class``, ``module`` or ``other``. A class in flax must be one in lens
    (users subclass it, test ``isinstance``); lens may give a class where flax has
    a function or a type alias (``collections.abc.Hashable`` for ``typing.Hashable``)."""
    if inspect.isclass(obj):
        return "class"
    return "module" if inspect.ismodule(obj) else "other"


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


_P = inspect.Parameter


# Linen Modules: flax's dataclass transform leaves ``parent`` and ``name`` last and
# positional; lens makes them keyword-only (nobody passes them by position).
LINEN_KEYWORD_ONLY = frozenset({"parent", "name"})


def _passes_arguments_on(obj: Any) -> bool:
    """Whether a ``(*args, **kwargs)`` signature hands its arguments to something:
    a function's, or a class's own ``__init__`` (``HijaxVariable``'s re-runs its
    Variable's). A class whose ``__new__`` takes and drops them (a deprecation
    warning) or a typing alias does not."""
    if inspect.isclass(obj):
        return obj.__init__ is not object.__init__
    return inspect.isfunction(obj)


def signature_gaps(
    flax_obj: Any, lens_obj: Any, keyword_only_ok: frozenset[str] = frozenset()
) -> list[str]:
    """How lens's parameters fail to take flax's (by name and by position).

    Every flax parameter must be accepted by lens the way flax takes it: a
    positional one at the same position with the same name (a positional-only
    one too, so ``help()`` and ``inspect.signature`` read the same), a keyword
    one by name or through lens's ``**kwargs``. Extra lens parameters are
    allowed, and so are the names in ``keyword_only_ok`` taken by keyword only.
    A flax signature of only ``(*args, **kwargs)`` names nothing: lens need only
    take some argument, where flax passes them on (:func:`_passes_arguments_on`).
    """
    fsig, lsig = _signature(flax_obj), _signature(lens_obj)
    if fsig is None or lsig is None:
        return []
    kinds = [p.kind for p in fsig.parameters.values()]
    if kinds == [_P.VAR_POSITIONAL, _P.VAR_KEYWORD]:
        takes = not lsig.parameters and _passes_arguments_on(flax_obj)
        return [str(fsig).strip("()")] if takes else []
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
            elif lp.name != p.name:
                out.append(f"{p.name} (lens: {lp.name})")
            elif by_keyword and lp.kind is _P.POSITIONAL_ONLY:
                out.append(f"{p.name} (positional-only in lens)")
    return out


def _import(name: str) -> tuple[ModuleType | None, str]:
    try:
        return importlib.import_module(name), ""
    except Exception as e:  # noqa: BLE001 - any failure to import is the finding
        return None, f"{type(e).__name__}: {e}"


def _lens_submodule(flax_package: str, lens_package: ModuleType, name: str) -> Any:
    """The module lens's package has as ``name`` after the same fresh imports
    (under the alias), or loads for it on first use (its ``__getattr__``); None
    when it has no module there."""
    found = fresh_package_attributes(alias=True).get(flax_package, {}).get(name)
    if found is not None:
        return importlib.import_module(found)
    lazy = vars(lens_package).get("__getattr__")
    if lazy is None:
        return None
    try:
        value = lazy(name)
    except AttributeError:
        return None
    return value if inspect.ismodule(value) else None


def _star_gives(module: ModuleType, name: str) -> bool:
    """Whether ``from module import *`` binds ``name``."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return name in declared
    return not name.startswith("_") and name in vars(module)


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
    submodules = package_submodules(fmod) if hasattr(fmod, "__path__") else {}
    gaps = []
    for name in public_names(fmod):
        path = f"{flax_name}:{name}"
        if path in excluded:
            continue
        if name in submodules:
            want = lens_module_name(submodules[name])
            got = _lens_submodule(flax_name, lmod, name)
            if got is None:
                gaps.append(Gap(path, "name", f"{lens_name} has no module {name}"))
            elif got.__name__ != want:
                # another module will do if it has the names (lens.core may not
                # import lens.nn, so lens.core.nn.initializers is its own)
                fsub = importlib.import_module(submodules[name])
                lacking = [n for n in public_names(fsub) if not hasattr(got, n)]
                if lacking:
                    detail = (
                        f"{lens_name}.{name} is {got.__name__}, not {want}, and "
                        f"lacks {', '.join(lacking)}"
                    )
                    gaps.append(Gap(path, "kind", detail))
            continue
        if not hasattr(lmod, name):
            gaps.append(Gap(path, "name", f"{lens_name} has no {name}"))
            continue
        if name in getattr(fmod, "__all__", ()) and not _star_gives(lmod, name):
            detail = f"from {lens_name} import * does not give {name}"
            gaps.append(Gap(path, "name", detail))
        fobj, lobj = getattr(fmod, name), getattr(lmod, name)
        if _kind(fobj) == "class" and _kind(lobj) != "class":
            detail = f"{lens_name}.{name} is no class (flax's is)"
            gaps.append(Gap(path, "kind", detail))
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
    only shrinks); ``python -m parity.surface --write-known-gaps`` rewrites it.
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
        "parity.surface --write-known-gaps).\n# A work list, not exclusions: "
        "tests/test_flax_surface.py fails on a gap not here and on a line here\n"
        "# that no longer holds, so the list only shrinks.\n"
    )
    KNOWN_GAPS_FILE.write_text(header + "".join(line + "\n" for line in lines))
    return len(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the table; exit status 1 when there are gaps."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
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
