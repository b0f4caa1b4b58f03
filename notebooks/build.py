"""Builds the tour notebooks from their cell sources and runs them to fill outputs.

Usage: ``make notebooks`` (or ``python notebooks/build.py [name ...]``). The
notebooks are committed with their outputs; ``make test`` re-runs them with nbval
and compares every output (random ids are sanitised by ``sanitize.cfg``).
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from cells import NOTEBOOKS  # noqa: E402


def build(name: str, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, source in cells:
        source = source.strip("\n")
        nb.cells.append(nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"  # stable ids and no timestamps keep diffs small
        cell.metadata.pop("execution", None)
    nbformat.write(nb, HERE / f"{name}.ipynb")
    print(f"wrote {name}.ipynb")


if __name__ == "__main__":
    wanted = sys.argv[1:] or list(NOTEBOOKS)
    for name in wanted:
        build(name, NOTEBOOKS[name])
