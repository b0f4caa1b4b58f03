"""lens's modules import each other without cycles: the module-level imports
(what runs when a module loads; imports inside functions and TYPE_CHECKING blocks
are not followed) form a graph with no strongly connected component of more than
one module."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).parent.parent / "lens"


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _imports(path: pathlib.Path, name: str, mods: dict[str, pathlib.Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    body = ast.parse(path.read_text()).body
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Try | ast.If):
            stack += node.body + getattr(node, "orelse", [])
            for h in getattr(node, "handlers", []):
                stack += h.body
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = {f"{module}.{a.name}" for a in node.names} & set(mods)
            out |= subs
            if len(subs) < len(node.names):
                out.add(module)
    return {m for m in out if m in mods and m != name}


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


def test_no_module_level_import_cycles():
    mods = _modules()
    graph = {name: _imports(path, name, mods) for name, path in mods.items()}
    assert len(graph) > 100 and graph["lens.nnx._jit"]  # the walk found the imports
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_core_nn_and_nnx_know_nothing_of_display():
    """Layering: lens.display renders lens.core/nn/nnx objects through the one
    registry in lens/_views.py; none of those layers imports lens.display, not
    even inside a function."""
    offenders = []
    for layer in ("core", "nn", "nnx"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
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
