"""Runs every benchmark, prints a table of medians and ratios, writes RESULTS.md.

Usage: ``make bench`` (or ``python -m benchmarks.run``). Needs the ``bench`` extra
(flax is the peer library here, never a dependency of lens). ``--quick`` runs each
benchmark once, small, to check the suite itself (the tests do this). On a lent
GPU, ``python -m benchmarks.run --accelerator`` runs issue 44's rows alone, in ~5
minutes, into RESULTS-gpu.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import pathlib
import platform
import statistics
import traceback
from typing import Any

import jax

from benchmarks import (
    compile_cache,
    core_mlp,
    displays,
    first_use,
    flax_repo,
    live_overhead,
    nn_mlp,
    nnx_mlp,
    recompiles,
    suite,
    tabulate_cost,
)

# (benchmark, numerator, denominator, target ratio); issues 8, 2 and 29's targets.
TARGETS = [
    *(
        (f"MLP depth {d}: {phase} (un-jitted)", "lens", "flax", 0.5)
        for d in nn_mlp.DEPTHS
        for phase in ("init", "apply")
    ),
    *(
        (
            f"lens.core MLP depth {core_mlp.DEPTH}: {phase} (un-jitted)",
            "lens",
            "flax",
            0.7,
        )
        for phase in ("init", "apply")
    ),
    (f"MLP depth {nn_mlp.DEPTH}: first jitted train step", "lens", "pure jax", 1.05),
    (
        f"MLP depth {nn_mlp.DEPTH}: first jitted train step, trace",
        "lens",
        "pure jax",
        1.0,
    ),
    ("transformer first jitted train step", "lens", "flax", 0.8),
    (f"MLP depth {nn_mlp.DEPTH}: steady jitted train step", "lens", "pure jax", 1.05),
    ("cold import of lens.nn / flax.linen, over import jax", "lens", "flax", 0.3),
    ("cold import of lens.nnx / flax.nnx, over import jax", "lens", "flax", 0.3),
    *(
        (
            f"lens.nnx MLP depth {d}: {what}",
            "lens",
            "pure jax",
            1.10 if what == "jitted forward" else 1.05,
        )
        for d in nnx_mlp.DEPTHS
        for what in ("jitted forward", "jitted train step")
    ),
    (live_overhead.BENCH, "lens", "pure jax", 1.02),
    # issue 41: the retrace explainer on, against off ("pure jax" here)
    (recompiles.STEP, "lens", "pure jax", 1.05),
    (recompiles.DISPATCH, "lens", "pure jax", 1.05),
]
LIBRARIES = ("lens", "flax", "pure jax")
SCAN_TARGET = 1.0
# Appended to RESULTS.md: where the time goes (profiles, by hand; not generated).
NOTES = pathlib.Path(__file__).with_name("where_the_time_goes.md")
CACHE_TARGET = 0.3


def _ms(t: float | None) -> str:
    return "" if t is None else f"{t * 1e3:.2f}"


def _spread(ratios: list[float] | None) -> str:
    if not ratios:
        return ""
    return f"min {min(ratios):.2f}, median {statistics.median(ratios):.2f} of {len(ratios)}"


def _ratio(libs: dict[str, dict], num: str, den: str) -> tuple[float, list | None]:
    """The median of the row's per-repeat ratios (when it has them), else the
    ratio of the medians; and the per-repeat ratios."""
    if num not in libs or den not in libs:
        return math.nan, None
    ratios = libs[num].get("ratios")
    if ratios:
        return statistics.median(ratios), ratios
    return libs[num]["seconds"] / libs[den]["seconds"], None


def table(rows: list[dict]) -> tuple[list[str], list[tuple]]:
    """Markdown lines of the timing table, and each target's (name, ratio, target,
    met, per-repeat ratios or None); a ratio is the median of the per-repeat ratios
    where the row has them."""
    by: dict[str, dict[str, dict]] = {}
    for r in rows:
        by.setdefault(r["bench"], {})[r["library"]] = r
    targets = {b: (num, den, t) for b, num, den, t in TARGETS}
    lines = [
        "| benchmark | lens (ms) | flax (ms) | pure jax (ms) | ratio | target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    verdicts = []
    for bench, libs in by.items():
        if bench == "HLO ops identical to pure jax":
            continue
        num, den, target = targets.get(bench, ("lens", "flax", None))
        if bench.startswith("nn.scan") and "trace + lower + compile" in bench:
            num, den = "lens", "lens"  # ratios to the fewest layers
        ratio, ratios = _ratio(libs, num, den)
        verdict = ""
        if target is not None:
            met = ratio <= target
            verdicts.append((bench, ratio, target, met, ratios))
            verdict = f"{num}/{den} <= {target}: {'met' if met else 'MISSED'}"
        if ratios:
            verdict = f"{verdict} ({_spread(ratios)})".strip()
        shown = "" if math.isnan(ratio) else f"{ratio:.2f}"
        lines.append(
            f"| {bench} | "
            + " | ".join(
                _ms(libs[lib]["seconds"] if lib in libs else None) for lib in LIBRARIES
            )
            + f" | {shown} | {verdict} |"
        )
    scan = [b for b in by if b.startswith("nn.scan") and "trace + lower" in b]
    if len(scan) > 1 and "lens" in by[scan[-1]]:
        ratios = by[scan[-1]]["lens"]["ratios"]
        ratio = statistics.median(ratios)
        name = f"lens nn.scan trace + lower + compile, {scan[-1].split()[1]} / " + (
            f"{scan[0].split()[1]} layers"
        )
        verdicts.append((name, ratio, SCAN_TARGET, ratio <= SCAN_TARGET, ratios))
    return lines, verdicts


def _cache_lines(cached: list[dict]) -> tuple[list[str], float]:
    by_case = {r["case"]: r for r in cached}
    ratios = by_case["warm"]["ratios"]
    ratio = statistics.median(ratios)
    lines = [
        "",
        "## Compilation cache (a kernel restart)",
        "",
        "First jitted Adam train step of the suite's transformer, each in a fresh "
        "process (benchmarks/compile_cache.py); medians, ms.",
        "",
        "| case | trace | lower | compile (warm: load) | first run | total |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *(
            f"| {r['case']} | "
            + " | ".join(f"{r[p] * 1e3:.1f}" for p in compile_cache.PHASES)
            + f" | {r['seconds'] * 1e3:.1f} |"
            for r in cached
        ),
        "",
        f"- lens cache warm / cold: {ratio:.2f} ({_spread(ratios)}; target <= "
        f"{CACHE_TARGET}) {'met' if ratio <= CACHE_TARGET else 'MISSED'}; warm / "
        f"flax (no cache): {by_case['warm']['seconds'] / by_case['flax']['seconds']:.2f}",
    ]
    return lines, ratio


def _display_lines(shown: list[dict]) -> list[str]:
    lines = [
        "",
        "## Displays",
        "",
        "| display | ms | KB | target |",
        "| --- | ---: | ---: | --- |",
    ]
    for r in shown:
        target = "< 200 ms, < 200 KB" if r["case"].startswith("1,000") else ""
        if r["case"].startswith("100,000"):
            target = "<= 500 ms to first paint"
        lines.append(
            f"| {r['case']} | {r['seconds'] * 1e3:.1f} | {r['bytes'] / 1024:.1f} | {target} |"
        )
    return lines


def issue_table(
    rows: list[dict], verdicts: list[tuple], cached: list[dict], shown: list[dict]
) -> list[str]:
    """Issue 29's table, row by row: lens, flax and pure JAX side by side (ms),
    the ratio the target is on (min and median over repeats) and the verdict."""
    by: dict[str, dict[str, float]] = {}
    for r in rows:
        by.setdefault(r["bench"], {})[r["library"]] = r["seconds"]
    found = {v[0]: v for v in verdicts}
    depth = nn_mlp.DEPTH
    picks = [
        (
            "cold import, lens.nn over jax vs flax.linen",
            "cold import of lens.nn / flax.linen, over import jax",
        ),
        (
            "cold import, lens.nnx over jax vs flax.nnx",
            "cold import of lens.nnx / flax.nnx, over import jax",
        ),
        (
            f"first jitted train step, MLP depth {depth} (vs pure)",
            f"MLP depth {depth}: first jitted train step",
        ),
        (
            "first jitted train step: its trace (vs pure)",
            f"MLP depth {depth}: first jitted train step, trace",
        ),
        *(
            (
                f"lens.nnx {what}, depth {d} (vs pure jax.jit)",
                f"lens.nnx MLP depth {d}: {what}",
            )
            for d in nnx_mlp.DEPTHS
            for what in ("jitted forward", "jitted train step")
        ),
    ]
    lines = [
        "",
        "## Issue 29's table",
        "",
        "| metric | lens (ms) | flax (ms) | pure jax (ms) | ratio (min / median) "
        "| target | verdict |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for label, bench in picks:
        if bench not in found:
            continue
        _, ratio, target, met, ratios = found[bench]
        libs = by[bench]
        spread = f"{min(ratios):.2f} / {ratio:.2f}" if ratios else f"{ratio:.2f}"
        lines.append(
            f"| {label} | "
            + " | ".join(_ms(libs.get(lib)) for lib in LIBRARIES)
            + f" | {spread} | <= {target} | {'met' if met else 'MISSED'} |"
        )
    scan = [v for v in verdicts if v[0].startswith("lens nn.scan")]
    for name, ratio, target, met, ratios in scan:
        lines.append(
            f"| {name} (lens / lens) | | | | {min(ratios):.2f} / {ratio:.2f} "
            f"| <= {target} | {'met' if met else 'MISSED'} |"
        )
    if cached:
        c = {r["case"]: r["seconds"] for r in cached}
        ratios = next(r["ratios"] for r in cached if r["case"] == "warm")
        ratio = statistics.median(ratios)
        lines.append(
            f"| first jitted step after a restart, transformer (warm / cold) "
            f"| {c['warm'] * 1e3:.0f} (cold {c['cold'] * 1e3:.0f}) | {c['flax'] * 1e3:.0f} "
            f"| | {min(ratios):.2f} / {ratio:.2f} | <= {CACHE_TARGET} "
            f"| {'met' if ratio <= CACHE_TARGET else 'MISSED'} |"
        )
    big = [r for r in shown if r["case"].startswith("100,000")]
    for r in big:
        lines.append(
            f"| display of a 100,000-leaf collection, first paint | "
            f"{r['seconds'] * 1e3:.0f} | | | | <= 500 ms "
            f"| {'met' if r['seconds'] <= 0.5 else 'MISSED'} |"
        )
    return lines


def _target_lines(verdicts: list[tuple]) -> list[str]:
    """The "Targets" section: each target's ratio, spread and verdict."""
    return [
        "",
        "## Targets",
        "",
        *(
            f"- {name}: {ratio:.2f} (target <= {target}) {'met' if met else 'MISSED'}"
            + (f"; {_spread(ratios)}" if ratios else "")
            for name, ratio, target, met, ratios in verdicts
        ),
    ]


def _header(title: str) -> list[str]:
    import flax

    device = jax.devices()[0]
    return [
        title,
        "",
        f"- date: {datetime.date.today()}",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{device.platform} x{jax.device_count()} ({device.device_kind}), "
        f"{os.cpu_count()} cores",
        f"- python {platform.python_version()}, jax {jax.__version__}, "
        f"flax {flax.__version__} (peer)",
        "",
        "Medians over interleaved repeats (the libraries alternate, so machine noise",
        "hits each alike). Ratios are lens over the peer named in the target column;",
        "where each repeat gives its own ratio, the table shows their median (and min).",
        "",
    ]


def accelerator(out: pathlib.Path | None = None, quick: bool = False) -> str:
    """Issue 44's rows on a lent accelerator, sized to run in ~5 minutes there
    (a lease is minutes): the first-use and steady-step table with fewer repeats,
    the transformer's first step, issue 29's jitted nnx rows, and the flax
    repository's step scripts. The tracing rows are left out: tracing is Python
    on the host, the same work as on the CPU. Writes RESULTS-<platform>.md."""
    import time

    t0 = time.perf_counter()
    failed: list[str] = []

    def attempt(name: str, fn: Any, **kwargs: Any) -> list[dict]:
        # a lease is minutes: one part failing on a foreign machine (another JAX
        # or flax there) must not lose the others' rows
        try:
            return fn(**kwargs)
        except Exception as e:  # noqa: BLE001 - reported in the results
            traceback.print_exc()
            failed.append(f"- `benchmarks.{name}` failed: {e!r}")
            return []

    if quick:
        first = attempt("first_use.run", first_use.run, quick=True)
        rows = attempt(
            "suite.transformer_rows", suite.transformer_rows, first_steps=1, blocks=1
        )
        rows += attempt("nnx_mlp.run", nnx_mlp.run, repeats=1, depths=(16,), number=2)
        repo = attempt(
            "flax_repo.step_rows", flax_repo.step_rows, repeats=1, quick=True
        )
    else:
        first = attempt(
            "first_use.run", first_use.run, fresh_repeats=3, repeats=7, step_repeats=11
        )
        rows = attempt("suite.transformer_rows", suite.transformer_rows, first_steps=3)
        rows += attempt("nnx_mlp.run", nnx_mlp.run, repeats=3)
        repo = attempt("flax_repo.step_rows", flax_repo.step_rows, repeats=1)
    platform_name = jax.devices()[0].platform
    lines = _header(f"# Benchmark results on {jax.devices()[0].device_kind}")
    lines += [
        f"`python -m benchmarks.run --accelerator` ({time.perf_counter() - t0:.0f} s): "
        "issue 44's rows with fewer repeats than `make bench`'s CPU run "
        "(benchmarks/RESULTS.md), which also has the tracing, scan, import and "
        "display rows this run leaves out.",
        *(["", *failed] if failed else []),
    ]
    body, verdicts = table(rows)
    lines += first_use.lines(first)
    lines += flax_repo.lines(repo)
    lines += ["", "## Transformer first step, jitted nnx MLP", ""]
    lines += body
    lines += _target_lines(verdicts)
    text = "\n".join(lines) + "\n"
    print(text)
    if out is None and not quick:
        out = pathlib.Path(__file__).with_name(f"RESULTS-{platform_name}.md")
    if out is not None:
        out.write_text(text)
    return text


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument(
        "--accelerator",
        action="store_true",
        help="issue 44's rows alone, sized for a lent GPU's minutes "
        "(writes RESULTS-<platform>.md)",
    )
    args = parser.parse_args(argv)
    if args.accelerator:
        return accelerator(args.out, quick=args.quick)
    if args.quick:
        rows = core_mlp.run(repeats=1)
        rows += nn_mlp.run(repeats=1, compiles=1, depths=(4,))
        rows += suite.run(first_steps=1, scan_layers=(8, 16), repeats=1, blocks=1)
        rows += nnx_mlp.run(repeats=1, depths=(16,), number=2)
        rows += live_overhead.run(steps=30, repeats=1)
        rows += recompiles.cost(repeats=1, number=5, dispatches=20)
        first = first_use.run(quick=True)
        repo = flax_repo.run(quick=True)
        shown = displays.run()
        tabulated = tabulate_cost.run(repeats=1, peer=False)
        cached = compile_cache.run(repeats=1, blocks=1, fill_is_cold=True)
    else:
        rows = core_mlp.run() + nn_mlp.run() + suite.run() + nnx_mlp.run()
        rows += live_overhead.run()
        rows += recompiles.cost()
        first = first_use.run()  # issue 44's table: rows of its own (units vary)
        repo = flax_repo.run()  # issue 44: the flax repository's own benchmarks
        shown = displays.run()
        tabulated = tabulate_cost.run()
        cached = compile_cache.run()
    lines = _header("# Benchmark results")
    body, verdicts = table(rows)
    lines += issue_table(rows, verdicts, cached, shown)
    lines += first_use.lines(first)
    lines += flax_repo.lines(repo)
    lines += ["", "## Every benchmark", ""]
    lines += body
    lines += _target_lines(verdicts)
    by = {(r["bench"], r["library"]): r["seconds"] for r in rows}
    first = f"MLP depth {nn_mlp.DEPTH}: first jitted train step"
    floor = by[(first, "pure jax")] / by[(first, "flax")]
    same = bool(by[("HLO ops identical to pure jax", "lens")])
    lines += [
        "",
        f"- first jitted train step, hand-written pure JAX / flax: {floor:.2f} "
        "(what no library can go below by tracing faster: the rest is XLA).",
        "- lens's compiled train step has the same XLA ops as pure JAX's "
        f"(bitcasts aside): {same}.",
    ]
    lines += recompiles.lines(recompiles.explained())
    lines += _display_lines(shown)
    lines += tabulate_cost.lines(tabulated)
    lines += _cache_lines(cached)[0]
    if NOTES.exists():  # the hand-written analysis: where the time goes
        lines += ["", NOTES.read_text().rstrip()]
    text = "\n".join(lines) + "\n"
    print(text)
    out = args.out or (
        None if args.quick else pathlib.Path(__file__).with_name("RESULTS.md")
    )
    if out is not None:
        out.write_text(text)
    return text


if __name__ == "__main__":
    main()
