"""Runs every benchmark, prints a table of medians and ratios, writes RESULTS.md.

Usage: ``make bench`` (or ``python -m benchmarks.run``). Needs the ``bench`` extra
(flax is the peer library here, never a dependency of lens). ``--quick`` runs each
benchmark once, small, to check the suite itself (the tests do this).
"""

from __future__ import annotations

import argparse
import datetime
import math
import pathlib
import platform

import jax

from benchmarks import compile_cache, core_mlp, displays, nn_mlp, nnx_mlp, suite

# (benchmark, numerator, denominator, target ratio); the targets.
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
    (f"MLP depth {nn_mlp.DEPTH}: first jitted train step", "lens", "flax", 0.8),
    ("transformer first jitted train step", "lens", "flax", 0.8),
    (f"MLP depth {nn_mlp.DEPTH}: steady jitted train step", "lens", "pure jax", 1.05),
    ("cold import of lens.nn / flax.linen", "lens", "flax", 1.0),
    *(
        (f"lens.nnx MLP depth {d}: {what}", "lens", "pure jax", 1.5)
        for d in nnx_mlp.DEPTHS
        for what in ("jitted forward", "jitted train step")
    ),
]
LIBRARIES = ("lens", "flax", "pure jax")


def _ms(t: float | None) -> str:
    return "" if t is None else f"{t * 1e3:.2f}"


def table(rows: list[dict]) -> tuple[list[str], list[tuple[str, float, float, bool]]]:
    """Markdown lines of the timing table, and each target's (name, ratio, target, met)."""
    by: dict[str, dict[str, float]] = {}
    for r in rows:
        by.setdefault(r["bench"], {})[r["library"]] = r["seconds"]
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
        ratio = libs[num] / libs[den] if num in libs and den in libs else math.nan
        verdict = ""
        if target is not None:
            met = ratio <= target
            verdicts.append((bench, ratio, target, met))
            verdict = f"{num}/{den} <= {target}: {'met' if met else 'MISSED'}"
        shown = "" if math.isnan(ratio) else f"{ratio:.2f}"
        lines.append(
            f"| {bench} | "
            + " | ".join(_ms(libs.get(lib)) for lib in LIBRARIES)
            + f" | {shown} | {verdict} |"
        )
    scan = [by.get(f"nn.scan {n} layers: compile", {}).get("lens") for n in (8, 128)]
    if None not in scan:
        ratio = scan[1] / scan[0]
        verdicts.append(
            ("lens nn.scan compile, 128 / 8 layers", ratio, 1.5, ratio <= 1.5)
        )
    return lines, verdicts


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one small run of each")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        rows = core_mlp.run(repeats=1)
        rows += nn_mlp.run(repeats=1, compiles=1, depths=(4,))
        rows += suite.run(first_steps=1, scan_layers=(8,), repeats=1)
        rows += nnx_mlp.run(repeats=1, depths=(16,), number=2)
        shown = displays.run()
        cached = compile_cache.run(repeats=1, depth=2)
    else:
        rows = core_mlp.run() + nn_mlp.run() + suite.run() + nnx_mlp.run()
        shown = displays.run()
        cached = compile_cache.run()
    import flax

    lines = [
        "# Benchmark results",
        "",
        f"- date: {datetime.date.today()}",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{jax.devices()[0].platform} x{jax.device_count()}",
        f"- python {platform.python_version()}, jax {jax.__version__}, "
        f"flax {flax.__version__} (peer)",
        "",
        "Medians over interleaved repeats (the libraries alternate, so machine noise",
        "hits each alike). Ratios are lens over the peer named in the target column.",
        "",
    ]
    body, verdicts = table(rows)
    lines += body
    lines += ["", "## Targets", ""]
    lines += [
        f"- {name}: {ratio:.2f} (target <= {target}) {'met' if met else 'MISSED'}"
        for name, ratio, target, met in verdicts
    ]
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
    lines += [
        "",
        "## Displays",
        "",
        "| display | ms | KB | target |",
        "| --- | ---: | ---: | --- |",
    ]
    for r in shown:
        target = "< 200 ms, < 200 KB" if r["case"].startswith("1,000") else ""
        lines.append(
            f"| {r['case']} | {r['seconds'] * 1e3:.1f} | {r['bytes'] / 1024:.1f} | {target} |"
        )
    by_case = {r["case"]: r["seconds"] for r in cached}
    ratio = by_case["warm"] / by_case["cold"]
    lines += [
        "",
        "## Compilation cache (a kernel restart)",
        "",
        f"First jitted Adam train step of a depth-{cached[0]['depth']} MLP, each in a "
        "fresh process (benchmarks/compile_cache.py).",
        "",
        "| case | ms |",
        "| --- | ---: |",
        *(f"| {r['case']} | {r['seconds'] * 1e3:.1f} |" for r in cached),
        "",
        f"- lens cache warm / cold: {ratio:.2f} (target <= 0.2) "
        f"{'met' if ratio <= 0.2 else 'MISSED'}; warm / flax (no cache): "
        f"{by_case['warm'] / by_case['flax']:.2f}",
    ]
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
