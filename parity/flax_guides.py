"""Flax's NNX guide notebooks, run on real flax and on lens; a per-page table.

``make flax-guides`` (or ``python -m parity.flax_guides``) takes the notebooks under
``docs_nnx/`` of the flax sdist (the archive that ``parity.flax_tests`` keeps in
``parity/.cache``), and runs every page's code cells in order, each page in a fresh
process: once with the installed flax (the oracle; its results are cached per flax
version, ``--rerun-flax`` runs it again) and once with ``flax`` resolved to lens
(``lens.alias_flax``). A page runs in a Jupyter kernel through nbclient when nbclient
and ipykernel are installed, otherwise by ``exec`` of its cells in one namespace
with IPython magics and shell lines taken out. Either way a page stops at its first
failing cell, or after ``--timeout`` seconds (120 by default).

Each run records, per cell, the text a reader sees (stdout and the ``text/plain``
of cell results; stderr, where warnings go, and displays such as ``nnx.display``'s,
renderings rather than values, are left out of the comparison) and the error a
cell raised. The two runs are compared cell by cell: numbers within a tolerance,
memory addresses and terminal colours ignored, and the outputs of ``%%time`` and
``%%timeit`` cells not compared at all. ``docs/flax-guides.md`` gets the table.

Pages that need the network, data sets, an accelerator or a package that is not
installed are skipped, with the reason written into the table. matplotlib, when it
is not installed, is replaced by a stand-in whose every call does nothing: plots are
not compared anyway.

Example:
    python -m parity.flax_guides --page guides/randomness.ipynb
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import datetime
import importlib.util
import io
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Sequence

from parity.flax_tests import CACHE, FLAX_VERSION, REPO, _commit, sdist_root

DEFAULT_OUT = REPO / "docs" / "flax-guides.md"
BACKENDS = ("flax", "lens")
PAGE_TIMEOUT = 120.0
RTOL = 1e-3
ATOL = 1e-5

# Pages that cannot run here whatever is installed (the examples download data
# sets or weights; the rest of docs_nnx runs when its imports are there).
SKIP = {
    "examples/digits_diffusion_model.ipynb": "trains a diffusion model for minutes "
    "(sklearn, diffrax)",
    "examples/gemma.ipynb": "network: clones flax and downloads Gemma weights "
    "(kagglehub)",
    "examples/image_segmentation.ipynb": "network: downloads the Oxford pets data "
    "set (grain, cv2, albumentations)",
    "examples/machine_translation.ipynb": "network: downloads a data set "
    "(grain, tiktoken)",
    "examples/minigpt.ipynb": "network: downloads TinyStories (grain, tiktoken, "
    "tensorboard)",
    "examples/object_detection_detr.ipynb": "network: downloads images and "
    "weights (torch)",
    "examples/vit_training.ipynb": "network: Hugging Face data sets and weights "
    "(torch, transformers)",
    "guides/data_loaders.ipynb": "network: downloads MNIST (tensorflow, torch, "
    "grain, datasets)",
    "mnist_tutorial.ipynb": "network: downloads MNIST (datasets, tensorflow, "
    "orbax.export)",
}

# Modules a page may import that stand in for nothing lens provides; a missing one
# (other than these) skips the page.
STUBBED = ("matplotlib",)
_STUB_SOURCE = '''"""Stand-in for matplotlib (not installed): every call does nothing."""


class _Nothing:
    def __call__(self, *args, **kwargs):
        return _Nothing()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Nothing()

    def __getitem__(self, key):
        return _Nothing()

    def __iter__(self):
        return iter((_Nothing(), _Nothing()))

    def __repr__(self):
        return "<matplotlib stand-in>"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Nothing()
'''

_LENS_SETUP = (
    "import lens\nlens.alias_flax()\nimport flax\n"
    "import flax.nnx\nassert flax.nnx.__name__ == 'lens.nnx', flax.nnx.__name__\n"
)
_FLAX_SETUP = "pass\n"


# --------------------------------------------------------------------------- cells


@dataclasses.dataclass
class Cell:
    """One code cell of a page: its source and whether an error there is expected."""

    source: str
    raises: bool = False


def code_cells(notebook: dict) -> list[Cell]:
    """The code cells of a notebook (nbformat 4 JSON), in order; empty ones left out.

    Example:
        >>> nb = {"cells": [{"cell_type": "markdown", "source": "# hi"},
        ...                 {"cell_type": "code", "source": ["x = 1\\n", "x"]}]}
        >>> code_cells(nb)
        [Cell(source='x = 1\\nx', raises=False)]
    """
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        if not source.strip():
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        cells.append(Cell(source, "raises-exception" in tags))
    return cells


def is_timing(source: str) -> bool:
    """Whether a cell's output is a timing (``%%time``, ``%%timeit``), not a value."""
    return source.lstrip().startswith(("%%time", "%time"))


def strip_magics(source: str) -> str | None:
    """A cell's source as plain Python, for running it without IPython.

    ``%%time``/``%%timeit`` cells run their body once; any other cell magic drops the
    whole cell (``None``); ``%line`` magics and ``!shell`` lines are taken out.

    Example:
        >>> strip_magics("%%timeit\\nf(x)")
        'f(x)'
        >>> strip_magics("!pip install flax\\nimport jax\\n  %matplotlib inline")
        'import jax\\n  pass'
        >>> strip_magics("%%bash\\nls") is None
        True
    """
    lines = source.splitlines()
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        if first.split()[0] not in ("%%time", "%%timeit"):
            return None
        lines = lines[1:]
    out = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            # Keep the indentation valid where a magic sat in a block.
            indent = line[: len(line) - len(stripped)]
            if indent:
                out.append(indent + "pass")
            continue
        out.append(line)
    return "\n".join(out)


def imported_modules(cells: Sequence[Cell]) -> set[str]:
    """The top-level modules a page's cells import (cells that do not parse skipped)."""
    names: set[str] = set()
    for cell in cells:
        source = strip_magics(cell.source)
        if source is None:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


# --------------------------------------------------------------------------- outputs


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
# Where IPython keeps a cell's code (tracebacks, jit names): differs per kernel.
_IPYKERNEL_FILE = re.compile(r"ipykernel_\d+/\d+\.py")
# lens's module names, read as the flax names they stand for (``<class 'lens.X'>``).
_LENS_LINEN = re.compile(r"(?<![\w.])lens\.nn\.")
_LENS = re.compile(r"(?<![\w.])lens\.")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")


def normalize(text: str) -> str:
    """Output text without terminal colours, memory addresses or trailing spaces.

    ``lens.nn.X`` reads as ``flax.linen.X`` and ``lens.X`` as ``flax.X`` (module
    names in reprs).

    Example:
        >>> normalize("<class 'lens.nn.Dense'> at 0x7f3a2b1c  \\n")
        "<class 'flax.linen.Dense'> at 0x?"
    """
    text = _ANSI.sub("", text)
    text = _ADDRESS.sub("0x?", text)
    text = _IPYKERNEL_FILE.sub("ipykernel_?/?.py", text)
    text = _LENS.sub("flax.", _LENS_LINEN.sub("flax.linen.", text))
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _split(text: str) -> tuple[list[str], list[str]]:
    parts = _NUMBER.split(text)
    numbers = _NUMBER.findall(text)
    return [" ".join(p.split()) for p in parts], numbers


def compare_text(
    expected: str, actual: str, rtol: float = RTOL, atol: float = ATOL
) -> str | None:
    """``None`` when two outputs agree, else a short description of the first gap.

    The texts are normalized (:func:`normalize`); the text around the numbers must
    match up to whitespace, the numbers within ``rtol``/``atol``.

    Example:
        >>> compare_text("loss 0.500001 at 0x7f00ab12", "loss 0.5 at 0x7e11cd34")
        >>> compare_text("loss 0.5", "loss 0.6")
        'number 1: 0.5 vs 0.6'
        >>> compare_text("Linear(3)", "Dense(3)")
        "text: 'Linear(' vs 'Dense('"
    """
    a, b = normalize(expected), normalize(actual)
    if a == b:
        return None
    text_a, nums_a = _split(a)
    text_b, nums_b = _split(b)
    for x, y in zip(text_a, text_b):
        if x != y:
            return f"text: {_clip(x)!r} vs {_clip(y)!r}"
    if len(text_a) != len(text_b):
        return f"{len(nums_a)} numbers vs {len(nums_b)}"
    for k, (x, y) in enumerate(zip(nums_a, nums_b)):
        fx, fy = float(x), float(y)
        if not math.isclose(fx, fy, rel_tol=rtol, abs_tol=atol):
            return f"number {k + 1}: {x} vs {y}"
    return None


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- runs


@dataclasses.dataclass
class CellResult:
    """What one cell printed, and the error it raised (type, first line)."""

    index: int
    text: str = ""
    error: tuple[str, str] | None = None
    displays: str = ""  # rich displays' text/plain, kept but not compared


@dataclasses.dataclass
class PageRun:
    """One page under one backend: the cells that ran and how the run ended.

    ``status`` is ``ok`` (every cell ran), ``error`` (stopped at a cell that
    raised), ``timeout``, ``crash`` (the kernel or the worker died) or ``skipped``.
    """

    status: str
    cells: list[CellResult] = dataclasses.field(default_factory=list)
    stop: int | None = None  # the cell the run stopped at
    reason: str = ""  # the error (type: first line), or why it stopped / skipped
    seconds: float = 0.0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> PageRun:
        cells = [
            CellResult(
                c["index"],
                c["text"],
                tuple(c["error"]) if c["error"] else None,
                c.get("displays", ""),
            )
            for c in data.get("cells", [])
        ]
        fields = {k: v for k, v in data.items() if k != "cells"}
        return cls(cells=cells, **fields)


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return _clip(line.strip(), 200)
    return ""


def _emit(out: io.TextIOBase, record: dict) -> None:
    out.write(json.dumps(record) + "\n")
    out.flush()


def run_cells_exec(cells: Sequence[Cell], out: io.TextIOBase, setup: str) -> None:
    """Runs cells in one namespace in this process (no IPython), one record a cell.

    The value of a cell's last expression is shown as IPython would (its ``repr``
    unless ``None``). A cell that raises ends the run unless it is tagged
    ``raises-exception``.
    """
    namespace: dict = {"__name__": "__main__"}
    exec(compile(setup, "<setup>", "exec"), namespace)
    for index, cell in enumerate(cells):
        source = strip_magics(cell.source)
        buffer = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(buffer):
                if source is not None:
                    _exec_cell(source, index, namespace, buffer)
        except BaseException as e:  # noqa: BLE001 - a cell's error is a result
            if isinstance(e, KeyboardInterrupt):
                raise
            error = (type(e).__name__, _first_line(str(e)))
        _emit(
            out,
            {
                "cell": index,
                "text": buffer.getvalue(),
                "error": error,
                "expected": cell.raises,
            },
        )
        if error and not cell.raises:
            return


def _exec_cell(source: str, index: int, namespace: dict, buffer: io.StringIO) -> None:
    tree = ast.parse(source, f"<cell {index}>")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, f"<cell {index}>", "exec"), namespace)
    if last is not None:
        value = eval(compile(last, f"<cell {index}>", "eval"), namespace)
        if value is not None:
            buffer.write(repr(value) + "\n")


def _cell_text(outputs: Sequence[dict]) -> tuple[str, str, tuple[str, str] | None]:
    """A kernel cell's compared text, its rich displays' text and its error.

    stdout and the ``text/plain`` of results are compared. A ``display_data``
    (``nnx.display``: treescope's HTML under flax, lens's own view, or plain text,
    under lens) is a rendering, not a value: its ``text/plain`` is kept apart and
    not compared.
    """
    parts, displays, error = [], [], None
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream" and output.get("name") == "stdout":
            parts.append(output.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            text = data.get("text/plain")
            if text is None:
                continue
            text = (text if isinstance(text, str) else "".join(text)) + "\n"
            if kind == "display_data":
                displays.append(text)
            else:
                parts.append(text)
        elif kind == "error":
            error = (output.get("ename", "?"), _first_line(output.get("evalue", "")))
    return "".join(parts), "".join(displays), error


def run_cells_kernel(
    cells: Sequence[Cell], out: io.TextIOBase, setup: str, timeout: float, cwd: str
) -> None:
    """Runs cells in a fresh Jupyter kernel (nbclient), one record a cell."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    deadline = time.monotonic() + timeout
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(setup)]
    for cell in cells:
        tags = ["raises-exception"] if cell.raises else []
        nb.cells.append(nbformat.v4.new_code_cell(cell.source, metadata={"tags": tags}))
    client = NotebookClient(
        nb,
        timeout=int(timeout),
        kernel_name="python3",
        resources={"metadata": {"path": cwd}},
    )
    with client.setup_kernel():
        pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
        _emit(out, {"kernel_pid": pid})
        client.execute_cell(nb.cells[0], 0)
        for index, cell in enumerate(cells):
            client.timeout = max(1, int(deadline - time.monotonic()))
            nb_cell = nb.cells[index + 1]
            try:
                client.execute_cell(nb_cell, index + 1)
            except CellTimeoutError:
                _emit(out, {"timeout": index})
                return
            except CellExecutionError:
                pass  # the error output is in the cell
            text, displays, error = _cell_text(nb_cell.outputs)
            record = {"cell": index, "text": text, "error": error}
            _emit(out, {**record, "expected": cell.raises, "displays": displays})
            if error and not cell.raises:
                return


def _kernel_available() -> bool:
    return all(importlib.util.find_spec(m) for m in ("nbclient", "ipykernel"))


def worker(page: pathlib.Path, backend: str, results: pathlib.Path, timeout: float):
    """Runs one page under one backend in this (fresh) process; see ``--worker``."""
    cells = code_cells(json.loads(page.read_text()))
    setup = _LENS_SETUP if backend == "lens" else _FLAX_SETUP
    with results.open("w") as out:
        try:
            if _kernel_available():
                run_cells_kernel(cells, out, setup, timeout, os.getcwd())
            else:
                run_cells_exec(cells, out, setup)
        except Exception:  # noqa: BLE001 - the tool's own failure, recorded
            _emit(out, {"crash": _first_line(traceback.format_exc().splitlines()[-1])})
            raise
        _emit(out, {"done": True})


def read_results(records: Sequence[dict], n_cells: int, seconds: float) -> PageRun:
    """A :class:`PageRun` from a worker's records (see :func:`run_cells_exec`).

    Example:
        >>> recs = [{"cell": 0, "text": "1\\n", "error": None},
        ...         {"cell": 1, "text": "", "error": ["ValueError", "bad"]}]
        >>> run = read_results(recs, n_cells=3, seconds=1.0)
        >>> run.status, run.stop, run.reason
        ('error', 1, 'ValueError: bad')
    """
    run = PageRun("crash", seconds=seconds)
    for record in records:
        if "cell" in record:
            error = tuple(record["error"]) if record.get("error") else None
            displays = record.get("displays", "")
            run.cells.append(
                CellResult(record["cell"], record["text"], error, displays)
            )
            if error and not record.get("expected"):
                run.status, run.stop = "error", record["cell"]
                run.reason = f"{error[0]}: {error[1]}"
                return run
        elif "timeout" in record:
            run.status, run.stop, run.reason = "timeout", record["timeout"], "timed out"
            return run
        elif "crash" in record:
            run.reason = f"tool: {record['crash']}"
        elif "done" in record and len(run.cells) == n_cells:
            run.status = "ok"
            return run
    run.stop = len(run.cells)
    run.reason = run.reason or "the kernel or the worker died"
    return run


# --------------------------------------------------------------------------- pages


def guides_root(version: str = FLAX_VERSION) -> pathlib.Path:
    """The unpacked ``docs_nnx/`` notebooks of the flax sdist (unpacked once)."""
    root = CACHE / f"flax-{version}" / "docs_nnx"
    if root.is_dir():
        return root
    sdist_root(version)  # downloads the archive if it is not there yet
    prefix = f"flax-{version}/docs_nnx/"
    with tarfile.open(CACHE / f"flax-{version}.tar.gz") as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name.startswith(prefix) and m.name.endswith(".ipynb")
        ]
        tar.extractall(CACHE, members=members, filter="data")
    return root


def pages(root: pathlib.Path) -> list[str]:
    """Every notebook under ``docs_nnx/``, relative to it, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.ipynb"))


def skip_reason(page: str, cells: Sequence[Cell]) -> str | None:
    """Why a page is not run here, or ``None``."""
    if page in SKIP:
        return SKIP[page]
    missing = sorted(
        m
        for m in imported_modules(cells)
        if m not in ("flax", *STUBBED) and importlib.util.find_spec(m) is None
    )
    if missing:
        return f"needs {', '.join(missing)} (not installed)"
    return None


def _stub_dir() -> pathlib.Path | None:
    missing = [m for m in STUBBED if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    stubs = CACHE / "guide-stubs"
    for module in missing:
        package = stubs / module
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(_STUB_SOURCE)
        (package / "pyplot.py").write_text("from . import *  # noqa\n" + _STUB_SOURCE)
    return stubs


def results_path(page: str, backend: str, version: str = FLAX_VERSION) -> pathlib.Path:
    """Where one page's run under one backend is kept (JSON)."""
    name = page.replace("/", "__").removesuffix(".ipynb")
    return CACHE / f"results-{version}" / "guides" / f"{name}-{backend}.json"


def run_page(root: pathlib.Path, page: str, backend: str, timeout: float) -> PageRun:
    """Runs one page under one backend in a fresh worker process."""
    cells = code_cells(json.loads((root / page).read_text()))
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("LENS_AS_FLAX", None)
    env.pop("XLA_FLAGS", None)
    paths = [str(REPO)]
    stubs = _stub_dir()
    if stubs:
        paths.append(str(stubs))
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).strip(
        os.pathsep
    )
    with tempfile.TemporaryDirectory(prefix="flax-guide-") as work:
        records_file = pathlib.Path(work) / "records.jsonl"
        cmd = [sys.executable, "-m", "parity.flax_guides", "--worker", str(root / page)]
        cmd += ["--backend", backend, "--records", str(records_file)]
        cmd += ["--timeout", str(timeout)]
        start = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                cwd=work,
                env=env,
                timeout=timeout + 60,
                capture_output=True,
                text=True,
                check=False,
            )
            tail = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
        except subprocess.TimeoutExpired:
            tail = ["the worker did not stop"]
        seconds = time.monotonic() - start
        records = []
        if records_file.exists():
            records = [
                json.loads(line) for line in records_file.read_text().splitlines()
            ]
        _kill_kernel(records)
    run = read_results(records, len(cells), seconds)
    if run.status == "crash" and tail and not run.reason.startswith("tool"):
        run.reason = f"{run.reason}; worker: {_clip(tail[0], 160)}"
    return run


def _kill_kernel(records: Sequence[dict]) -> None:
    for record in records:
        pid = record.get("kernel_pid")
        if pid and not any("done" in r for r in records):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


# --------------------------------------------------------------------------- report


@dataclasses.dataclass
class Difference:
    """A cell whose output differs between flax and lens."""

    index: int
    what: str
    flax: str
    lens: str


def differences(
    flax: PageRun, lens: PageRun, cells: Sequence[Cell]
) -> list[Difference]:
    """The cells that ran under both backends and printed different things."""
    by_index = {c.index: c for c in lens.cells}
    out = []
    for f in flax.cells:
        lo = by_index.get(f.index)
        if lo is None or is_timing(cells[f.index].source):
            continue
        if f.error or lo.error:
            # Where a run stopped is reported as such; errors both runs raised in a
            # cell tagged raises-exception are compared by their type.
            if not (cells[f.index].raises and f.error and lo.error):
                continue
        what = compare_text(f.text, lo.text)
        if what is None and f.error and lo.error and f.error[0] != lo.error[0]:
            what = f"error: {f.error[0]} vs {lo.error[0]}"
        if what is not None:
            out.append(Difference(f.index, what, normalize(f.text), normalize(lo.text)))
    return out


def _status(run: PageRun) -> str:
    if run.status == "ok":
        return "ok"
    if run.status == "skipped":
        return "skipped"
    return f"{run.status} at cell {run.stop}"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(source: str, limit: int = 12) -> list[str]:
    lines = source.rstrip().splitlines()
    shown = lines[:limit] + (["# …"] if len(lines) > limit else [])
    return ["```python", *shown, "```"]


def report(root: pathlib.Path, page_names: Sequence[str]) -> str:
    """``docs/flax-guides.md`` from the kept runs of the given pages."""
    rows, details, skipped = [], [], []
    counts = {"pages": 0, "flax": 0, "lens": 0, "same": 0}
    for page in page_names:
        cells = code_cells(json.loads((root / page).read_text()))
        reason = skip_reason(page, cells)
        if reason:
            skipped.append(f"| `{page}` | {_md(reason)} |")
            continue
        runs = {}
        for backend in BACKENDS:
            path = results_path(page, backend)
            if path.exists():
                runs[backend] = PageRun.from_json(json.loads(path.read_text()))
        if len(runs) < 2:
            continue
        flax, lens = runs["flax"], runs["lens"]
        diffs = differences(flax, lens, cells)
        counts["pages"] += 1
        counts["flax"] += flax.status == "ok"
        counts["lens"] += lens.status == "ok"
        counts["same"] += flax.status == lens.status == "ok" and not diffs
        failure = ""
        lens_behind = lens.status != "ok" and (
            flax.status == "ok" or (lens.stop or 0) < (flax.stop or 0)
        )
        if lens.status != "ok":
            failure = f"cell {lens.stop}: {_md(_clip(lens.reason, 120))}"
        cells_cell = f"{len(cells)}"
        flax_cell = _status(flax)
        lens_cell = _status(lens)
        if lens_behind:
            lens_cell = f"**{lens_cell}**"
        differs = ", ".join(str(d.index) for d in diffs) or "-"
        rows.append(
            f"| `{page}` | {cells_cell} | {flax_cell} | {lens_cell} | {failure} | "
            f"{differs} | {flax.seconds:.0f} / {lens.seconds:.0f} |"
        )
        if lens.status != "ok" or flax.status != "ok" or diffs:
            details += [f"### `{page}`", ""]
            if flax.status != "ok":
                details += [f"flax stops at cell {flax.stop}: {flax.reason}", ""]
                if flax.stop is not None and flax.stop < len(cells):
                    details += _code(cells[flax.stop].source) + [""]
            if lens.status != "ok":
                details += [f"lens stops at cell {lens.stop}: `{lens.reason}`", ""]
                if lens.stop is not None and lens.stop < len(cells):
                    details += _code(cells[lens.stop].source) + [""]
            for d in diffs:
                details += [
                    f"Cell {d.index} prints something else ({d.what}):",
                    "",
                    "```text",
                    "flax: " + _clip(d.flax.replace("\n", "⏎"), 300),
                    "lens: " + _clip(d.lens.replace("\n", "⏎"), 300),
                    "```",
                    "",
                ]
    parts = [
        "# Flax's NNX guides on lens",
        "",
        f"The notebooks under `docs_nnx/` in the flax {FLAX_VERSION} sdist, each page's "
        "code cells run in order in a fresh Jupyter kernel: once with flax (the "
        "oracle) and once with `flax` resolved to lens (`lens.alias_flax`). A run "
        "stops at the first cell that raises (cells are counted from 0, code cells "
        f"only) or after {PAGE_TIMEOUT:.0f} s. *outputs differ* lists the cells that "
        "ran under both and printed something else: stdout and the `text/plain` of "
        "cell results (displays, such as `nnx.display`'s, are renderings and are not "
        "compared), numbers compared with "
        f"rtol={RTOL:g}, atol={ATOL:g}, memory addresses and terminal colours "
        "ignored, `%%time`/`%%timeit` cells not compared. A **bold** lens status "
        "is a page that gets less far on lens than on flax.",
        "",
        f"Generated by `make flax-guides` (`python -m parity.flax_guides`) on "
        f"{datetime.date.today().isoformat()}, lens at {_commit()}. "
        f"JAX_PLATFORMS=cpu.",
        "",
        f"**{counts['pages']} pages run; flax runs {counts['flax']} to the end, lens "
        f"{counts['lens']}; {counts['same']} run to the end on both with the same "
        "outputs.**",
        "",
        "| page | code cells | flax | lens | first lens failure | outputs differ "
        "(cells) | seconds (flax / lens) |",
        "| --- | ---: | --- | --- | --- | --- | ---: |",
        *rows,
        "",
    ]
    if details:
        parts += ["## Failures and differences", "", *details]
    if skipped:
        parts += ["## Pages not run", "", "| page | why |", "| --- | --- |", *skipped]
        parts += [""]
    if _stub_dir() is not None:
        parts += [
            "matplotlib is not installed: the pages that plot get a stand-in whose "
            "every call does nothing (plots are not compared).",
            "",
        ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the pages asked for and writes the report; returns its text."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page", action="append", help="docs_nnx-relative path")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--timeout", type=float, default=PAGE_TIMEOUT)
    parser.add_argument(
        "--rerun-flax", action="store_true", help="run the oracle again"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the table from kept runs"
    )
    parser.add_argument("--worker", type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument("--backend", choices=BACKENDS, help=argparse.SUPPRESS)
    parser.add_argument("--records", type=pathlib.Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.backend, args.records, args.timeout)
        return ""
    root = guides_root()
    all_pages = pages(root)
    chosen = args.page or all_pages
    if not args.report_only:
        for page in chosen:
            cells = code_cells(json.loads((root / page).read_text()))
            reason = skip_reason(page, cells)
            if reason:
                print(f"[flax-guides] {page}: skipped ({reason})", flush=True)
                continue
            for backend in BACKENDS:
                path = results_path(page, backend)
                if backend == "flax" and path.exists() and not args.rerun_flax:
                    continue
                run = run_page(root, page, backend, args.timeout)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(run.to_json()))
                print(
                    f"[flax-guides] {page} {backend}: {_status(run)} "
                    f"{run.reason} ({run.seconds:.0f} s)",
                    flush=True,
                )
    text = report(root, all_pages)
    args.out.write_text(text)
    if not args.worker:
        print(text)
    return text


if __name__ == "__main__":
    main()
