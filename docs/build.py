"""Builds the documentation: ``make docs`` (or ``python docs/build.py [outdir]``).

Generates the API reference (every public name of lens's public modules, from
docstrings) and the error reference (every error class, with its wrong and right
code), and renders them with the guide to HTML in ``docs/_build/``.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import sys

DOCS = pathlib.Path(__file__).parent
PUBLIC = [
    "lens.core",
    "lens.core.lift",
    "lens.core.meta",
    "lens.core.nn",
    "lens.nn",
    "lens.nn.initializers",
    "lens.nnx",
    "lens.display",
    "lens.struct",
    "lens.serialization",
]


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""


def api_reference() -> str:
    out = ["# API reference", "", "Generated from the docstrings by `make docs`.", ""]
    for modname in PUBLIC:
        mod = importlib.import_module(modname)
        out += [f"## `{modname}`", "", inspect.getdoc(mod) or "", ""]
        for name in sorted(n for n in dir(mod) if not n.startswith("_")):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
                continue
            if not (getattr(obj, "__module__", "") or "").startswith("lens"):
                out += [
                    f"### `{modname}.{name}`",
                    "",
                    f"Re-exported from `{getattr(obj, '__module__', '?')}`.",
                    "",
                ]
                continue
            kind = "class" if inspect.isclass(obj) else "def"
            out += [
                f"### `{modname}.{name}`",
                "",
                f"```python\n{kind} {name}{_signature(obj)}\n```",
                "",
                inspect.getdoc(obj) or "",
                "",
            ]
    return "\n".join(out)


def error_reference() -> str:
    import lens.errors as errors
    from lens.errors import _base as errors_base

    out = ["# Error reference", "", inspect.getdoc(errors) or "", ""]
    for name, cls in sorted(vars(errors).items()):
        if (
            inspect.isclass(cls)
            and issubclass(cls, errors.LensError)
            and cls is not errors.LensError
        ):
            bases = ", ".join(b.__name__ for b in cls.__bases__)
            anchor = errors_base.doc_anchor(cls)
            out += [
                # the anchor every message's pointer names (GitHub's own for the
                # heading is the lowercased name; Flax's classes take Flax's)
                *([f'<a id="{anchor}"></a>', ""] if anchor != name.lower() else []),
                f"## `{name}`",
                "",
                f"Subclass of {bases}.",
                "",
                inspect.getdoc(cls) or "",
                "",
            ]
    return "\n".join(out)


ERRORS = DOCS / "errors.md"
"""Committed, so that the link in every error message resolves on GitHub and in a
checkout; ``make docs`` rewrites it and tests/test_docs.py checks it is current."""


def write_error_reference() -> bool:
    """Writes docs/errors.md from the error classes; whether it changed."""
    text = error_reference() + "\n"
    if ERRORS.exists() and ERRORS.read_text() == text:
        return False
    ERRORS.write_text(text)
    return True


def render(outdir: pathlib.Path) -> list[pathlib.Path]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    generated = {"api.md": api_reference()}
    write_error_reference()
    pages = [
        (p.relative_to(DOCS), p.read_text())
        for p in sorted(DOCS.rglob("*.md"))
        if "_build" not in p.parts
    ]
    pages += [(pathlib.Path(name), text) for name, text in generated.items()]
    written = []
    for rel_md, text in pages:
        rel = rel_md.with_suffix(".html")
        body = md.render(text).replace('.md"', '.html"')
        target = outdir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"<!doctype html><meta charset=utf-8><title>lens: {rel.stem}</title>"
            f"<style>body{{max-width:52em;margin:2em auto;font-family:sans-serif}}"
            f"pre{{background:#f6f6f6;padding:.5em}}td,th{{border:1px solid #ddd;padding:2px 6px}}"
            f"table{{border-collapse:collapse}}</style>{body}"
        )
        written.append(target)
    return written


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS / "_build"
    pages = render(out)
    print(f"wrote {len(pages)} pages to {out}")
