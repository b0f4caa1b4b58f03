"""Display speed (issue 5): a 1,000-leaf collection renders in < 200 ms, < 200 KB of HTML.

Also: a 100,000-leaf collection reaches first paint (its whole MIME bundle, built
from the raw dict) in <= 0.5 s (issue 29), a 64-layer MLP's variables (HTML and
text) and a pack trace of a scan. A row may carry its own ``target``.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np


def _time(fn, repeats: int = 5) -> float:
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t0)
    return sorted(best)[len(best) // 2]


def run() -> list[dict]:
    """Rows of (case, seconds, html bytes)."""
    import lens
    from lens import nn
    from lens.display import PackTraceView, VariablesView

    rows = []
    thousand = {
        "params": {
            f"layer_{i}": {"kernel": np.ones((16, 16), np.float32)} for i in range(1000)
        }
    }
    t = _time(lambda: VariablesView(thousand).html())
    rows.append(
        {
            "case": "1,000-leaf collection, HTML (incl. stats)",
            "seconds": t,
            "bytes": len(VariablesView(thousand).html().encode()),
        }
    )
    t = _time(lambda: VariablesView(thousand).text())
    rows.append(
        {
            "case": "1,000-leaf collection, text",
            "seconds": t,
            "bytes": len(VariablesView(thousand).text()),
        }
    )

    hundred_k = {
        "params": {
            f"layer_{i}": {"kernel": np.ones((4,), np.float32)} for i in range(100_000)
        }
    }
    t = _time(lambda: VariablesView(hundred_k)._repr_mimebundle_(), repeats=3)
    rows.append(
        {
            "case": "100,000-leaf collection, first paint (text + HTML)",
            "seconds": t,
            "bytes": len(VariablesView(hundred_k).html().encode()),
            "target": "<= 500 ms, expandable",
        }
    )

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(64):
                x = nn.relu(nn.Dense(32)(x))
            return x

    v = MLP().init(jax.random.key(0), jnp.ones((1, 32)))
    rows.append(
        {
            "case": "64-layer MLP variables, HTML",
            "seconds": _time(lambda: VariablesView(v).html()),
            "bytes": len(VariablesView(v).html().encode()),
        }
    )
    rows.append(
        {
            "case": "64-layer MLP variables, text",
            "seconds": _time(lambda: VariablesView(v).text()),
            "bytes": len(VariablesView(v).text()),
        }
    )

    class Block(nn.Module):
        @nn.compact
        def __call__(self, c, _):
            return nn.relu(nn.Dense(32)(c)), None

    class Deep(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.scan(
                Block,
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=64,
            )()(x, None)[0]

    trace = lens.show_lifting(Deep(), jnp.ones((1, 32)))
    rows.append(
        {
            "case": "pack trace of a 64-layer scan, HTML",
            "seconds": _time(lambda: PackTraceView(trace).html()),
            "bytes": len(PackTraceView(trace).html().encode()),
        }
    )
    return rows


if __name__ == "__main__":
    for r in run():
        print(
            f"{r['case']:52s} {r['seconds'] * 1e3:8.1f} ms {r['bytes'] / 1024:8.1f} KB "
            f"{r.get('target', '')}"
        )
