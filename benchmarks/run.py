"""Runs every benchmark, prints a table of medians and ratios, writes RESULTS.md.

Usage: ``make bench`` (or ``python -m benchmarks.run``). Needs the ``bench`` extra
(flax is the peer library here, never a dependency of lens).
"""

from __future__ import annotations

import datetime
import pathlib
import platform

import jax

from benchmarks import core_mlp, displays, nn_mlp, suite

TARGETS = {
    ("core depth-16 MLP", "init"): ("lens/flax", 0.7),
    ("core depth-16 MLP", "apply"): ("lens/flax", 0.7),
    ("nn depth-16 MLP", "apply (un-jitted)"): ("lens/flax", 0.5),
    ("nn depth-16 MLP", "first jitted train step"): ("lens/flax", 0.8),
    ("nn depth-16 MLP", "steady jitted train step"): ("lens/pure jax", 1.05),
}


def main() -> None:
    results = [("core depth-16 MLP", core_mlp.run()), ("nn depth-16 MLP", nn_mlp.run())]
    lines = [
        "# Benchmark results",
        "",
        f"- date: {datetime.date.today()}",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{jax.devices()[0].platform} x{jax.device_count()}",
        f"- python {platform.python_version()}, jax {jax.__version__}",
        "",
        "| benchmark | phase | lens (ms) | peer | peer (ms) | ratio | target |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for bench, rows in results:
        by = {(r["library"], r["phase"]): r["seconds"] for r in rows}
        for (b, phase), (kind, target) in TARGETS.items():
            if b != bench:
                continue
            peer = kind.split("/")[1]
            lens_t, peer_t = by[("lens", phase)], by[(peer, phase)]
            ratio = lens_t / peer_t
            ok = "met" if ratio <= target else "MISSED"
            lines.append(
                f"| {bench} | {phase} | {lens_t * 1e3:.3f} | {peer} | {peer_t * 1e3:.3f} | "
                f"{ratio:.2f} | <= {target} ({ok}) |"
            )
    nn_rows = {(r["library"], r["phase"]): r["seconds"] for r in results[1][1]}
    floor = (
        nn_rows[("pure jax", "first jitted train step")]
        / nn_rows[("flax", "first jitted train step")]
    )
    lines += [
        "",
        f"First jitted call, hand-written pure JAX / flax: {floor:.2f} (the floor for any library).",
    ]
    same = bool(nn_rows[("lens", "HLO ops identical to pure jax")])
    lines += [
        "",
        f"The compiled train step of lens has the same XLA ops as the pure-JAX one: {same}.",
    ]
    rows = suite.run()
    by = {(r["bench"], r["library"]): r["seconds"] for r in rows}
    lines += ["", "| benchmark | library | ms |", "| --- | --- | --- |"]
    lines += [
        f"| {r['bench']} | {r['library']} | {r['seconds'] * 1e3:.2f} |" for r in rows
    ]
    t = (
        by[("transformer first jitted train step", "lens")]
        / by[("transformer first jitted train step", "flax")]
    )
    s = (
        by[("nn.scan 128 layers: compile", "lens")]
        / by[("nn.scan 8 layers: compile", "lens")]
    )
    imp = by[("cold import", "lens")] / by[("cold import", "flax")]
    imp_nn = by[("cold import", "lens (lens.nn)")] / by[("cold import", "flax")]
    lines += [
        "",
        f"- transformer first jitted step, lens/flax: {t:.2f} (target <= 0.8)",
        f"- scan compile, 128 layers / 8 layers: {s:.2f} (target <= 1.5)",
        f"- cold import, lens / flax.linen: {imp:.2f}; lens.nn / flax.linen: {imp_nn:.2f} (target <= 1.0)",
    ]
    lines += ["", "| display | ms | KB | target |", "| --- | --- | --- | --- |"]
    for r in displays.run():
        target = "< 200 ms, < 200 KB" if r["case"].startswith("1,000") else ""
        lines.append(
            f"| {r['case']} | {r['seconds'] * 1e3:.1f} | {r['bytes'] / 1024:.1f} | {target} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    import flax

    text += f"\nflax {flax.__version__} (peer).\n"
    pathlib.Path(__file__).with_name("RESULTS.md").write_text(text)


if __name__ == "__main__":
    main()
