"""Re-runs the notebooks in notebooks/ and stores their outputs in place.

Usage: ``make notebooks`` (or ``python tests/notebook_outputs.py [name ...]``,
names without ``.ipynb``). The notebooks are their own source: edit one in
JupyterLab (or any notebook editor), save it, then run this to refresh every output
from a fresh kernel in order. ``make test`` re-runs them with nbval and compares
every output (random ids and float digits are blurred by ``tests/nbval_sanitize.cfg``;
the kernels get another CPU's code generation, see the root ``conftest.py``).

Stored as JupyterLab stores them, so that opening one does not mark it modified:
the python3 kernel's own kernelspec, nbformat 4.5 cell ids (stable, ``cell-N``,
to keep diffs small), no execution timestamps.
"""

from __future__ import annotations

import pathlib
import sys

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


def kernelspec() -> dict[str, str]:
    """The python3 kernel's metadata as JupyterLab writes it into a notebook."""
    spec = KernelSpecManager().get_kernel_spec("python3")
    return {
        "display_name": spec.display_name,
        "language": spec.language,
        "name": "python3",
    }


def refresh(path: pathlib.Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = kernelspec()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        # as JupyterLab saves by default: no widget state, so that where no widget
        # script runs (nbconvert offline, GitHub) a widget's text/html shows
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"wrote {path.name}")


if __name__ == "__main__":
    names = sys.argv[1:]
    paths = (
        [NOTEBOOKS / f"{n}.ipynb" for n in names]
        if names
        else sorted(NOTEBOOKS.glob("*.ipynb"))
    )
    for p in paths:
        refresh(p)
