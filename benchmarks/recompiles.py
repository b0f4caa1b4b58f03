"""The retrace explainer (issue 41): what it explains, beside JAX's own, and its cost.

1. **Explained.** The seeded cases of ``tests/instruments/retrace_cases.py`` (each a
   small training loop whose last call traces again for one known cause, under
   ``jax.jit``, ``nn.jit`` or ``nnx.jit``) run twice: under ``lens.recompiles``,
   and under JAX's ``jax_explain_cache_misses`` with its log captured. lens
   explains a case when its last retrace names the case's cause and path (the
   tests' check). JAX explains it when one of its "TRACING CACHE MISS" messages
   during the case holds every one of the case's words: what changed, as JAX
   would write it (``batch`` and ``f32[5,4]``, ``mask``, ``length 3``,
   ``never seen``, ``features = 16``); init then apply has no such words.
2. **Cost.** A ~10 ms jitted train step (the live view benchmark's) and a small
   ``nnx.jit`` forward (dispatch-bound, ~100 us), timed with the explainer never
   switched on ("off") and switched on ("on"), alternating. The explainer runs
   only when a function is traced, so a cached step runs the same code either way.
"""

from __future__ import annotations

import logging
import statistics
import time

import jax
import jax.numpy as jnp

from benchmarks._timing import block

EXPLAINED = "seeded retrace causes explained"
STEP = "retrace explainer on: ~10 ms jitted train step"
DISPATCH = "retrace explainer on: nnx.jit forward dispatch"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "TRACING CACHE MISS" in text:
            self.messages.append(text)


def _jax_explains(case) -> tuple[bool, str]:
    """Whether JAX's own explanation of the case's last retrace holds its words."""
    capture = _Capture()
    logger = logging.getLogger("jax")
    logger.addHandler(capture)
    jax.clear_caches()
    try:
        with jax.explain_cache_misses(True):
            case.run()
    finally:
        logger.removeHandler(capture)
    # any of the case's messages may be the one about its function (lens's own
    # jitted helpers log theirs too)
    hits = [m for m in capture.messages if all(w in m for w in case.jax_words)]
    ok = bool(case.jax_words) and bool(hits)
    return ok, (hits or capture.messages or [""])[-1]


def _lens_explains(case) -> tuple[bool, str]:
    import lens
    from lens._instruments import recompiles

    jax.clear_caches()
    recompiles.history_clear()
    with lens.recompiles() as log:
        case.run()
    if not log.retraces:
        return False, ""
    last = log.retraces[-1]
    ok = last.jit == case.jit and last.cause == case.cause
    if case.path is not None:
        ok = ok and case.path in [c.path for c in last.changes if c.cause == case.cause]
    return ok, last.text()


def explained() -> list[dict]:
    from tests.instruments.retrace_cases import CASES

    rows = []
    for case in CASES:
        lens_ok, lens_text = _lens_explains(case)
        jax_ok, jax_text = _jax_explains(case)
        rows.append(
            {
                "case": case.name,
                "jit": case.jit,
                "cause": case.cause,
                "lens": lens_ok,
                "jax": jax_ok,
                "lens_text": lens_text,
                "jax_text": jax_text,
            }
        )
    return rows


def _per_call(fn, args, number: int) -> float:
    block(fn(*args))
    start = time.perf_counter()
    for _ in range(number):
        out = fn(*args)
    block(out)
    return (time.perf_counter() - start) / number


def cost(repeats: int = 5, number: int = 50, dispatches: int = 2000) -> list[dict]:
    """Rows (bench, library, seconds): "lens" with the explainer on, "pure jax"
    the same step with it off (never switched on in this process before)."""
    import lens
    from benchmarks import live_overhead
    from lens import nnx

    batch = live_overhead._calibrate()
    params, opt, step = live_overhead._problem(batch)
    step_args = (params, opt)

    model = nnx.Sequential(*[nnx.Linear(64, 64, rngs=nnx.Rngs(i)) for i in range(4)])
    forward = nnx.jit(lambda m, x: m(x))
    x = jnp.ones((8, 64))

    samples: dict[tuple[str, str], list[float]] = {}
    for r in range(repeats):
        for on in (False, True) if r % 2 else (True, False):
            log = lens.recompiles(on)
            try:
                t_step = _per_call(step, step_args, max(3, number // 10))
                # a dispatch-bound call takes ~10 us: many, for a sample above noise
                t_fwd = _per_call(forward, (model, x), dispatches)
            finally:
                lens.recompiles(False)
            name = "lens" if on else "pure jax"
            samples.setdefault((STEP, name), []).append(t_step)
            samples.setdefault((DISPATCH, name), []).append(t_fwd)
            del log
    rows = []
    for bench in (STEP, DISPATCH):
        on, off = samples[(bench, "lens")], samples[(bench, "pure jax")]
        ratios = [a / b for a, b in zip(on, off, strict=True)]
        rows.append(
            {
                "bench": bench,
                "library": "lens",
                "seconds": statistics.median(on),
                "ratios": ratios,
            }
        )
        rows.append(
            {"bench": bench, "library": "pure jax", "seconds": statistics.median(off)}
        )
    return rows


def lines(rows: list[dict]) -> list[str]:
    """RESULTS.md's section: per case, who explains it; the fractions."""
    n = len(rows)
    by_lens = sum(r["lens"] for r in rows)
    by_jax = sum(r["jax"] for r in rows)
    out = [
        "",
        "## Retrace explainer (issue 41)",
        "",
        f"{n} seeded retrace causes (tests/instruments/retrace_cases.py), each a "
        "training loop whose last call traces again. lens: `lens.recompiles` names "
        "the cause and the path; JAX: `jax_explain_cache_misses`'s last message holds "
        "the argument's path and what changed.",
        "",
        f"- explained by lens: {by_lens} of {n} ({by_lens / n:.0%})",
        f"- explained by jax_explain_cache_misses: {by_jax} of {n} ({by_jax / n:.0%})",
        "",
        "| case | jit | cause | lens | JAX |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r['case']} | {r['jit']} | {r['cause']} | "
            f"{'yes' if r['lens'] else 'no'} | {'yes' if r['jax'] else 'no'} |"
        )
    return out


if __name__ == "__main__":  # python -m benchmarks.recompiles: the cases, with texts
    import os

    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    rows = explained()
    for row in rows:
        print(f"== {row['case']} ({row['jit']}): lens {row['lens']}, jax {row['jax']}")
        print(row["lens_text"])
        print("-- jax:", row["jax_text"][-400:])
    print("\n".join(lines(rows)))
