"""lens's modules import each other without cycles.

Every import counts: at module level, inside functions, under ``TYPE_CHECKING``,
and ``importlib.import_module("lens.…")`` with a literal name. An import inside a
function only postpones the cycle to the first call; the rooms still lean on each
other. What two modules share belongs in a lower module that both import.

One documented exception: the display registry. ``lens/_views.py`` (imported by
core, nn and nnx objects) loads ``lens.display`` by name on the first display, and
lens.display registers its views in ``lens._views`` when it loads. That one edge
is what lets the core know nothing of its renderers (see docs/design/display.md).
"""

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).parent.parent / "lens"

# (importer, imported): the registry's by-name load of lens.display.
ALLOWED = {
    ("lens._views", "lens.display"),
    ("lens._views", "lens.display._safe"),
}


@functools.cache
def _nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of ``source``'s syntax tree (parsed once for all the tests)."""
    return tuple(ast.walk(ast.parse(source)))


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _imports(
    source: str,
    name: str,
    is_package: bool,
    mods: set[str],
    allowed: set[tuple[str, str]] = ALLOWED,
) -> set[str]:
    """The lens modules that module ``name`` (source text ``source``) imports
    anywhere in its body, less the ``allowed`` edges."""
    package = name if is_package else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in _nodes(source):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = {f"{module}.{a.name}" for a in node.names} & mods
            out |= subs
            if len(subs) < len(node.names):
                out.add(module)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("importlib.import_module", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.add(str(node.args[0].value))
    return {m for m in out if m in mods and m != name and (name, m) not in allowed}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {
        name: _imports(path.read_text(), name, path.name == "__init__.py", set(mods))
        for name, path in mods.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _in_nnx(cycle: list[str]) -> bool:
    return all(m == "lens.nnx" or m.startswith("lens.nnx.") for m in cycle)


def test_no_import_cycles_outside_nnx():
    graph = _graph()
    # the walk found imports at module level and inside functions
    assert "lens.core" in graph["lens.nn._module"]
    assert "lens.nn._summary" in graph["lens.nn._module"]  # inside a method
    assert [c for c in _cycles(graph) if not _in_nnx(c)] == []


def test_no_import_cycles_inside_nnx():
    assert [c for c in _cycles(_graph()) if _in_nnx(c)] == []


def test_the_import_walk_sees_every_kind_of_import():
    source = """
import importlib
from typing import TYPE_CHECKING
from lens import a
if TYPE_CHECKING:
    from lens.b import X
def f():
    from .c import Y
    importlib.import_module("lens.d")
"""
    mods = {"lens", "lens.a", "lens.b", "lens.c", "lens.d", "lens.e"}
    assert _imports(source, "lens.e", False, mods) == {
        "lens.a",
        "lens.b",
        "lens.c",
        "lens.d",
    }


def test_the_allowed_exception_is_still_needed():
    """The exception names edges that exist, closing the one cycle it excuses:
    drop it when the import goes."""
    mods = _modules()
    views = _imports(
        mods["lens._views"].read_text(), "lens._views", False, set(mods), set()
    )
    assert views == {target for _, target in ALLOWED}
    assert "lens._views" in _graph()["lens.display"]


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_core_nn_and_nnx_know_nothing_of_display():
    """Layering: lens.display renders lens.core/nn/nnx objects through the one
    registry in lens/_views.py; none of those layers imports lens.display, not
    even inside a function."""
    offenders = []
    for layer in ("core", "nn", "nnx"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in _nodes(path.read_text()):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [
                        f"{node.module}.{a.name}" for a in node.names
                    ]
                if any(
                    n == "lens.display" or n.startswith("lens.display.") for n in names
                ):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# Rooms are packages (lens.core with lift, lens.nn, lens.display, lens.nnx._graph,
# lens.nnx._objects, lens.nnx.transforms, ...); a module directly in lens/nnx (a
# flax.nnx path) is a room of its own. The folders are the rooms: no table here.


def _room(module: str) -> str:
    parts = module.split(".")
    if parts[:2] != ["lens", "nnx"] or len(parts) < 3:
        return ".".join(parts[:2])
    if (ROOT / "nnx" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return module


def _private_imports(mods: dict[str, pathlib.Path]) -> list[str]:
    """``importer: from X import y`` for each private name or module (a ``_``
    component after ``lens``) that a module imports from outside the package it
    is private to and from another room."""
    found = []
    for name, path in sorted(mods.items()):
        if "labextension" in path.parts:
            continue
        for node in _nodes(path.read_text()):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("lens"):
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}".split(".")
                private = [
                    i for i, p in enumerate(full) if i and p.startswith("_")
                    and not p.startswith("__")
                ]  # fmt: skip
                if not private:
                    continue
                package = ".".join(full[: private[0]])  # what the name is private to
                if name == package or name.startswith(package + "."):
                    continue
                owner = ".".join(full[: private[0] + 1])  # the private module or name
                owner = owner if owner in mods else package
                if _room(owner) != _room(name):
                    found.append(f"{name}: from {node.module} import {alias.name}")
    return found


def test_no_private_name_is_imported_across_rooms():
    """What rooms share has a public name (lens.core's facades: scope, meta,
    frozen_dict, variables, pack_trace, ...); a ``_`` name stays in its room."""
    assert _private_imports(_modules()) == []


def test_the_room_check_finds_a_private_import(tmp_path):
    # a package is a room: its modules share their private names
    assert _room("lens.nnx._graph.ops") == _room("lens.nnx._graph.walk")
    assert _room("lens.nnx._graph.ops") == "lens.nnx._graph"
    assert _room("lens.nnx._mirror.extract_tree") == "lens.nnx._mirror"
    assert _room("lens.nnx.graphlib") == "lens.nnx.graphlib"  # a flat module alone
    assert _room("lens.core.lift._pack") == "lens.core"
    assert _room("lens.nnx.transforms.general") == "lens.nnx.transforms"
    mods = _modules()
    probe = tmp_path / "_probe_private.py"
    probe.write_text("from lens.core._scope import Scope\n")
    found = _private_imports({**mods, "lens.nn._probe_private": probe})
    assert found == ["lens.nn._probe_private: from lens.core._scope import Scope"]
