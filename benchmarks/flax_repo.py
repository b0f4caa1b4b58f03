"""Issue 44: the google/flax repository's own benchmarks, flax against lens.

The scripts are copied, unchanged, into benchmarks/flax_repo/ (see its README.md
for the commit); each run is a fresh interpreter (benchmarks/_flax_repo_child.py)
that imports the real flax, or lens after ``lens.alias_flax()`` so that the
script's ``import flax`` gives lens. ``flax.examples`` and ``flax.benchmarks``
resolve to the copies (the runner's import set-up, in the child only).

1. ``benchmarks/nnx_graph_overhead.py`` (an empty step: the call overhead alone)
   and ``benchmarks/nnx_simple_training.py`` (an SGD step of a depth-5 MLP with
   BatchNorm), each in its modes ``nnx`` (``nnx.jit``), ``jit_partial``
   (``nnx.jit_partial``, tree mode) and ``jax`` (a plain ``jax.jit`` over
   ``nnx.split``'s state): the script's printed "time per step" (µs). The script's
   timer starts before the first call, so its number includes the first call's
   trace and compile spread over ``--total_steps`` steps (a flag the runner sets:
   2,000 and 5,000 here, against the scripts' 100 and 10,000). Target: lens's
   ``nnx`` mode <= 1.05x the script's plain-``jax`` mode, taken with the real flax
   (the pure jax column: flax's ``State`` pytree in a ``jax.jit``, the limit the
   flax repository measures); lens's own ``jax`` mode is a row of its own.
2. ``benchmarks/tracing/<model>.py``: the trace (``apply_fn.trace(*args)``) and the
   lowering (``traced.lower(lowering_platforms=('tpu',))``) of each model's train
   step, ``jax.clear_caches()`` between iterations (outside the time), timed by
   tracing_benchmark.py's own loops with a stand-in ``google_benchmark`` whose
   ``State`` counts the iterations; each child reports the median of its
   iterations. Target: lens's trace, and trace + lower, <= 0.8 of flax's. Models
   that run here: mnist (nnx), lm1b, seq2seq, vae, imagenet, nlp_seq, sst2, wmt,
   ogbg_molpcba (Linen); ppo and gemma do not (see benchmarks/flax_repo/README.md).
   ``make bench`` leaves wmt out (its eager init alone takes ~1.5 min a child
   here); ``python -m benchmarks.flax_repo --models wmt`` runs it.

Children alternate flax and lens (the first rotating) within each repeat; each
repeat's lens / reference ratio is kept, and cells show min / median over repeats
(``first_use._row``'s format). ``python -m benchmarks.flax_repo`` prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

from benchmarks.first_use import _row, row_lines

HERE = pathlib.Path(__file__).resolve().parent
CHILD = HERE / "_flax_repo_child.py"
ROOT = HERE.parent
LIBS = ("flax", "lens")
MODES = ("nnx", "jit_partial", "jax")
# script: --total_steps (full run, quick run)
STEP_SCRIPTS = {
    "nnx_graph_overhead.py": (2000, 200),
    "nnx_simple_training.py": (5000, None),  # None: left out of the quick run
}
MODELS = (
    "mnist",
    "lm1b",
    "seq2seq",
    "vae",
    "imagenet",
    "nlp_seq",
    "sst2",
    "wmt",
    "ogbg_molpcba",
)
# make bench leaves wmt out: its eager init (a 6+6-layer, 32k-vocabulary
# Transformer) takes ~1.5 min per child on 2 cores; `--models wmt` runs it.
DEFAULT_MODELS = tuple(m for m in MODELS if m != "wmt")
WHAT = {
    "nnx": "nnx.jit step",
    "jit_partial": "nnx.jit_partial step",
    "jax": "jax.jit over nnx.split's state",
}
PER_STEP = re.compile(r"time per step: ([0-9.]+) µs")


def _child(lib: str, kind: str, script: str, *args: str, timeout: float = 600) -> str:
    """The child's stdout; RuntimeError with the end of its stderr if it fails."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        ),
        PYTHONIOENCODING="utf-8",
    )
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(CHILD), lib, kind, script, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )
    took = time.perf_counter() - t0
    print(f"flax_repo: {lib} {script} {' '.join(args)}: {took:.1f} s", file=sys.stderr)
    if out.returncode:
        lines = [x for x in out.stderr.strip().splitlines() if x.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit status {out.returncode}")
    return out.stdout


def _failed(metric: str, unit: str, error: dict[str, str]) -> dict:
    return _row(
        metric,
        unit,
        {},
        den=None,
        verdict="FAILED: " + "; ".join(f"{lib}: {e}" for lib, e in error.items()),
    )


def step_rows(repeats: int = 3, quick: bool = False) -> list[dict]:
    """Part 1: µs per step of each step script in each mode, flax and lens."""
    rows = []
    for script, (steps, quick_steps) in STEP_SCRIPTS.items():
        if quick:
            if quick_steps is None:
                continue
            steps = quick_steps
        path = f"benchmarks/{script}"
        got: dict[tuple[str, str], list[float]] = {}
        errors: dict[str, dict[str, str]] = {}
        for r in range(repeats):
            for mode in MODES:
                for lib in LIBS if r % 2 == 0 else LIBS[::-1]:
                    if lib in errors.get(mode, {}):
                        continue
                    try:
                        out = _child(
                            lib,
                            "main",
                            path,
                            f"--mode={mode}",
                            f"--total_steps={steps}",
                        )
                        got.setdefault((mode, lib), []).append(
                            float(PER_STEP.findall(out)[-1])
                        )
                    except (RuntimeError, IndexError, subprocess.TimeoutExpired) as e:
                        errors.setdefault(mode, {})[lib] = str(e) or type(e).__name__
        name = script.removesuffix(".py")
        for mode in MODES:
            metric = f"{name} --mode={mode}: {WHAT[mode]}, {steps} steps"
            if mode in errors:
                rows.append(_failed(metric, "µs/step", errors[mode]))
                continue
            cols = {"lens": (mode, "lens"), "flax": (mode, "flax")}
            if mode != "jax":  # the limit: the jax mode, with the real flax
                cols["pure jax"] = ("jax", "flax")
            s = {col: got[key] for col, key in cols.items() if key in got}
            if mode == "nnx":
                rows.append(_row(metric, "µs/step", s, target=1.05))
            else:
                rows.append(
                    _row(metric, "µs/step", s, den="flax", verdict="informational")
                )
    return rows


def trace_rows(
    repeats: int = 3, number: int = 5, models: tuple[str, ...] = DEFAULT_MODELS
) -> list[dict]:
    """Part 2: ms to trace, and to lower, each model's train step, flax and lens."""
    rows = []
    for model in models:
        got: dict[str, dict[str, list[float]]] = {"trace": {}, "lower": {}}
        error: dict[str, str] = {}
        for r in range(repeats):
            for lib in LIBS if r % 2 == 0 else LIBS[::-1]:
                if lib in error:
                    continue
                try:
                    out = _child(
                        lib, "tracing", f"benchmarks/tracing/{model}.py", str(number)
                    )
                    times = json.loads(out.strip().splitlines()[-1])
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                    error[lib] = str(e) or type(e).__name__
                    continue
                for phase in ("trace", "lower"):
                    (t,) = [v for k, v in times.items() if k.endswith(f"_{phase}")]
                    got[phase].setdefault(lib, []).append(statistics.median(t) * 1e3)
        metric = f"tracing/{model}.py: train step"
        if error:
            rows.append(_failed(f"{metric}, trace", "ms", error))
            continue
        both = {
            lib: [
                a + b for a, b in zip(got["trace"][lib], got["lower"][lib], strict=True)
            ]
            for lib in LIBS
        }
        rows.append(
            _row(f"{metric}, trace", "ms", got["trace"], den="flax", target=0.8)
        )
        rows.append(
            _row(
                f"{metric}, lower",
                "ms",
                got["lower"],
                den="flax",
                verdict="informational",
            )
        )
        rows.append(
            _row(f"{metric}, trace + lower", "ms", both, den="flax", target=0.8)
        )
    return rows


def run(
    quick: bool = False,
    repeats: int = 3,
    number: int = 5,
    models: tuple[str, ...] = ("steps", *DEFAULT_MODELS),
) -> list[dict]:
    """Every row (``quick``: one small run: nnx_graph_overhead and mnist only)."""
    t0 = time.perf_counter()
    if quick:
        rows = step_rows(repeats=1, quick=True)
        rows += trace_rows(repeats=1, number=2, models=("mnist",))
    else:
        rows = step_rows(repeats) if "steps" in models else []
        rows += trace_rows(repeats, number, tuple(m for m in models if m in MODELS))
    print(f"flax_repo: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return rows


def lines(rows: list[dict]) -> list[str]:
    """The markdown section: first_use's table format, under its own heading."""
    return [
        "",
        "## The flax repository's own benchmarks",
        "",
        "google/flax's benchmarks/ scripts, unchanged (benchmarks/flax_repo.py; "
        "benchmarks/flax_repo/README.md), each run in a fresh process with the real "
        "flax and with lens as flax. Step scripts: the script's printed time per "
        "step (its first call's trace and compile included); pure jax: the script's "
        "jax mode with the real flax. Tracing scripts: median of each child's "
        "iterations, caches cleared between. Cells are min / median over "
        "interleaved repeats; the ratio is lens over the named reference, min / "
        "median of each repeat's ratio.",
        "",
        *row_lines(rows),
    ]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one small run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--models",
        nargs="+",
        default=("steps", *DEFAULT_MODELS),
        choices=("steps", *MODELS),
        help="what to run: 'steps' (the two step scripts) and tracing models",
    )
    args = parser.parse_args(argv)
    rows = run(quick=args.quick, repeats=args.repeats, models=tuple(args.models))
    text = "\n".join(lines(rows))
    print(text)
    return text


if __name__ == "__main__":
    main()
