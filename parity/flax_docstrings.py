"""Flax's docstring examples, run with flax and with lens: what each documents.

Flax's CI runs its docstrings' examples (``pytest flax --doctest-modules`` in its
tests/run_all_tests.sh, with ``doctest_optionflags = NUMBER ELLIPSIS``): they are
behaviour Flax documents. ``python -m parity.flax_docstrings`` takes every module of
the installed flax whose source holds ``>>>`` examples, and runs each docstring's
examples as pytest does (one test per docstring, ``NUMBER`` and ``ELLIPSIS``), in a
fresh process per module and backend: once with flax, once with ``flax`` resolved to
lens (``lens.alias_flax``). The namespace an example sees is built the same way for
both: the module's own top-level imports run under the backend, and the names the
module defines, looked up on the backend's module at that path.

It prints, per module, the docstrings that pass under flax and the ones of those
that fail under lens, with lens's first failure; ``--out FILE`` writes that as a
Markdown page. Example:
    python -m parity.flax_docstrings --module flax.nnx.graphlib
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import subprocess
import sys
from collections.abc import Iterator

from parity.flax_tests import CACHE, REPO

SKIP_DIRS = ("examples",)  # what Flax's CI leaves out (--ignore=flax/nnx/examples)
TIMEOUT = 300.0
KEPT = CACHE / "flax-docstrings.json"  # the last run's rows (--report-only)

# Docstrings whose examples fail on lens on purpose, with the reason (the
# differences are described in docs/porting.md and the modules' own docstrings).
ON_PURPOSE: dict[str, str] = {
    "flax.linen.kw_only_dataclasses": (
        "the signature: both refuse a keyword-only field given by position, but "
        "Flax's wrapper shows it as positional; lens's signature says `*, name=''`."
    ),
    "flax.nnx.graphlib.iter_graph": (
        "graph internals (docs/porting.md): lens's objects have no private "
        "`_pytree__nodes`/`_pytree__state` entries to list."
    ),
    "flax.nnx.rnglib.Rngs": (
        "error messages: Flax's first sentence, then lens's (the streams there are, "
        "and how to add the missing one) on the same first line."
    ),
}


def flax_root() -> pathlib.Path:
    """The installed flax package's folder (the oracle's sources)."""
    import importlib.util

    spec = importlib.util.find_spec("flax")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("flax is not installed: pip install -e '.[oracle]'")
    return pathlib.Path(next(iter(spec.submodule_search_locations)))


def modules_with_examples(root: pathlib.Path) -> list[str]:
    """``flax.x.y`` for every source file under ``root`` holding ``>>>`` examples."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        if any(part in SKIP_DIRS for part in rel.parts) or path.name.endswith(
            "_test.py"
        ):
            continue
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


def docstrings(tree: ast.Module, module: str) -> Iterator[tuple[str, str, int]]:
    """``(qualified name, docstring, line)`` of the module, its classes, functions
    and methods, in source order (what doctest's finder collects)."""
    doc = ast.get_docstring(tree, clean=False)
    if doc:
        yield module, doc, 1

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, str, int]]:
        for node in body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}.{node.name}"
                d = ast.get_docstring(node, clean=False)
                if d and ">>>" in d:
                    yield name, d, node.lineno
                if isinstance(node, ast.ClassDef):
                    yield from walk(node.body, name)

    yield from walk(tree.body, module)


# The child: runs one module's docstrings under one backend, prints JSON.
CHILD = r"""
import ast, doctest, importlib, json, sys, types
backend, module, source = sys.argv[1], sys.argv[2], sys.argv[3]
if backend == "lens":
    import lens
    lens.alias_flax()
from _pytest.doctest import _get_checker, get_optionflags
from parity.flax_docstrings import docstrings

text = open(source, encoding="utf-8").read()
tree = ast.parse(text)
package = module if source.endswith("__init__.py") else module.rpartition(".")[0]
base = {"__name__": module}
problems = []
for node in tree.body:  # the module's own imports, under this backend, a name each
    if isinstance(node, ast.Import):
        singles = [ast.Import(names=[a]) for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        name = node.module
        if node.level:
            parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            name = f"{parent}.{node.module}" if node.module else parent
        singles = [ast.ImportFrom(module=name, names=[a], level=0) for a in node.names]
    else:
        continue
    for single in singles:
        tree_one = ast.fix_missing_locations(ast.Module([single], []))
        try:
            exec(compile(tree_one, source, "exec"), base)
        except Exception as e:  # a private name lens lacks: the others still come
            problems.append(f"{ast.unparse(single)}: {type(e).__name__}: {e}")
try:
    mod = importlib.import_module(module)
except Exception as e:
    mod = None
    problems.append(f"import {module}: {type(e).__name__}: {e}")
defined = set()
for node in tree.body:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        defined.add(node.name)
    elif isinstance(node, ast.Assign):
        defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        defined.add(node.target.id)
for name in sorted(defined):
    if mod is not None and hasattr(mod, name):
        base[name] = getattr(mod, name)


class Config:  # what get_optionflags reads: Flax's doctest_optionflags
    def getini(self, name):
        return ["NUMBER", "ELLIPSIS"]


flags = get_optionflags(Config())
parser = doctest.DocTestParser()
results = []
for name, doc, line in docstrings(tree, module):
    test = parser.get_doctest(doc, dict(base), name, source, line)
    if not test.examples:
        continue
    report = []
    runner = doctest.DocTestRunner(checker=_get_checker(), optionflags=flags)

    def out(s, report=report):
        report.append(s)

    runner.run(test, out=out, clear_globs=True)
    chunks = [c.strip() for c in "".join(report).split("*" * 70)]
    first = next((c for c in chunks if c), "")
    results.append(
        {"name": name, "examples": len(test.examples),
         "failed": runner.failures, "first": first[-1500:]}
    )
print(json.dumps({"problems": problems, "results": results}))
"""


def run_module(backend: str, module: str, source: pathlib.Path) -> dict:
    """One module's docstrings under one backend (a fresh process)."""
    env_path = str(REPO)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, backend, module, str(source)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env={**_env(), "PYTHONPATH": env_path},
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return {"problems": [f"stopped after {TIMEOUT:.0f} s"], "results": []}
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if not lines:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"problems": [f"crashed: {tail[0]}"], "results": []}
    return json.loads(lines[-1])


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env.pop("LENS_AS_FLAX", None)
    return env


def compare(modules: list[str], root: pathlib.Path) -> list[dict]:
    """Per module: the docstrings that pass under flax, and those failing on lens."""
    rows = []
    for module in modules:
        rel = pathlib.Path(*module.split("."))
        source = root.parent / rel.with_suffix(".py")
        if not source.exists():
            source = root.parent / rel / "__init__.py"
        got = {b: run_module(b, module, source) for b in ("flax", "lens")}
        flax_ok = {r["name"] for r in got["flax"]["results"] if not r["failed"]}
        lens = {r["name"]: r for r in got["lens"]["results"]}
        failing = [
            {"name": n, "first": lens[n]["first"] if n in lens else "not run"}
            for n in sorted(flax_ok)
            if n not in lens or lens[n]["failed"]
        ]
        rows.append(
            {
                "module": module,
                "docstrings": len(got["flax"]["results"]),
                "flax": len(flax_ok),
                "lens": len(flax_ok) - len(failing),
                "failing": failing,
                "problems": got["lens"]["problems"],
            }
        )
        print(
            f"[flax-docstrings] {module}: flax {len(flax_ok)}, "
            f"lens {len(flax_ok) - len(failing)}",
            flush=True,
        )
    return rows


def markdown(rows: list[dict]) -> str:
    total_flax = sum(r["flax"] for r in rows)
    total_lens = sum(r["lens"] for r in rows)
    out = [
        "# Flax's docstring examples on lens",
        "",
        "Every docstring of the installed flax with `>>>` examples, run as Flax's CI "
        "runs them (`pytest flax --doctest-modules`, `NUMBER ELLIPSIS`): once with "
        "flax, once with `flax` resolved to lens. Generated by `python -m "
        "parity.flax_docstrings --out docs/flax-docstrings.md`.",
        "",
        f"**{total_lens} of the {total_flax} docstrings whose examples pass under "
        "flax pass under lens.**",
        "",
        "| module | docstrings with examples | pass under flax | pass under lens |",
        "| --- | ---: | ---: | ---: |",
    ]
    out += [
        f"| `{r['module']}` | {r['docstrings']} | {r['flax']} | {r['lens']} |"
        for r in rows
    ]
    failing = [f for r in rows for f in r["failing"]]
    on_purpose = [f for f in failing if f["name"] in ON_PURPOSE]
    to_fix = [f for f in failing if f["name"] not in ON_PURPOSE]
    if on_purpose:
        out += ["", "## Failing on lens on purpose", ""]
        out += [f"- `{f['name']}`: {ON_PURPOSE[f['name']]}" for f in on_purpose]
    if to_fix:
        out += ["", "## Failing on lens, still to fix", ""]
        for f in to_fix:
            first = f["first"].replace("```", "'''")
            out += [f"### `{f['name']}`", "", "```text", first, "```", ""]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", help="flax.x.y (repeatable)")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument(
        "--report-only", action="store_true", help="write the page from the last run"
    )
    args = parser.parse_args(argv)
    if args.report_only:
        rows = json.loads(KEPT.read_text())
    else:
        root = flax_root()
        modules = args.module or modules_with_examples(root)
        rows = compare(modules, root)
        if not args.module:  # a whole run: kept for --report-only
            KEPT.parent.mkdir(parents=True, exist_ok=True)
            KEPT.write_text(json.dumps(rows, indent=1))
    if args.out:
        args.out.write_text(markdown(rows), encoding="utf-8")
    for r in rows:
        for f in r["failing"]:
            why = ON_PURPOSE.get(f["name"])
            print(f"ON PURPOSE {f['name']}: {why}" if why else f"FAIL {f['name']}")
            if not why:
                print(f"{f['first'][-800:]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
