"""nnx.tabulate's costs: Flax's FLOPs (the same numbers as flax.nnx's), lens's
compute_cost columns with units and a total equal to XLA's analysis of the whole
call, one lowering per distinct call, and clear errors."""

import jax
import jax.numpy as jnp
import pytest

from lens import errors
from lens import nnx as lnnx
from lens._instruments.call_cost import fmt_flops, fmt_size
from tests.helpers import count_lowerings, tabulate

fnnx = pytest.importorskip("flax.nnx")
PLAIN = {"force_terminal": False, "no_color": True, "width": 300}
ALL = {"compute_flops": True, "compute_vjp_flops": True}


def _mlp(nnx, n=2, width=16):
    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.first = nnx.Linear(8, width, rngs=rngs)
            self.layers = nnx.List(  # initializers made apart: the same cost
                [
                    nnx.Linear(
                        width,
                        width,
                        kernel_init=nnx.initializers.normal(0.02),
                        rngs=rngs,
                    )
                    for _ in range(n)
                ]
            )
            self.out = nnx.Linear(width, 4, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.first(x))
            for layer in self.layers:
                x = nnx.gelu(layer(x))
            return self.out(x)

    return MLP(nnx.Rngs(0)), jnp.ones((4, 8))


def _rows(nnx, model, x, **kwargs):
    """The rows nnx.tabulate made (its row_filter sees each, costs included)."""
    rows = []
    text = tabulate(
        nnx, model, x, console_kwargs=PLAIN,
        row_filter=lambda r: rows.append(r) or True, **kwargs,
    )  # fmt: skip
    return rows, text


def test_flops_are_flax_nnxs_row_by_row():
    ours, _ = _rows(lnnx, *_mlp(lnnx), compute_cost=True, **ALL)
    theirs, _ = _rows(fnnx, *_mlp(fnnx), **ALL)
    assert [(r.path, r.flops, r.vjp_flops) for r in ours] == [
        (r.path, r.flops, r.vjp_flops) for r in theirs
    ]
    assert all(r.cost.flops == r.flops for r in ours)


def test_total_is_xlas_analysis_of_the_whole_call():
    model, x = _mlp(lnnx)
    rows, text = _rows(lnnx, model, x, compute_cost=True, **ALL)
    top = rows[0].cost
    graphdef, state = lnnx.split(model)
    lowered = jax.jit(lambda s, x: lnnx.merge(graphdef, s)(x)).lower(state, x)
    lowered_cost, compiled_cost = (
        lowered.cost_analysis(),
        lowered.compile().cost_analysis(),
    )
    assert top.flops == pytest.approx(lowered_cost["flops"], rel=0.01)
    assert top.flops == pytest.approx(compiled_cost["flops"], rel=0.01)
    assert top.bytes_accessed == pytest.approx(lowered_cost["bytes accessed"], rel=0.01)
    assert top.param_bytes == sum(p.nbytes for p in jax.tree.leaves(state))
    # the footer shows the top call's costs; activations: the four Linear outputs
    footer = next(line for line in text.splitlines() if "Total" in line)
    cells = [c.strip() for c in footer.split("│")]
    assert cells[5:11] == [
        fmt_flops(top.flops), fmt_flops(top.vjp_flops), fmt_size(top.bytes_accessed),
        fmt_size(top.vjp_bytes_accessed), fmt_size(top.param_bytes),
        fmt_size(3 * 4 * 16 * 4 + 4 * 4 * 4),
    ]  # fmt: skip


def test_one_lowering_per_distinct_call_not_per_module():
    counts = []
    for n in (2, 24):
        model, x = _mlp(lnnx, n)
        with count_lowerings() as lowered:
            rows, _ = _rows(lnnx, model, x, compute_cost=True, **ALL)
        counts.append(lowered[0])
        assert len(rows) == n + 3
    # the model, first, the layers, out: forward and VJP each
    assert counts == [8, 8]


def test_hidden_rows_are_not_lowered_but_the_total_is():
    model, x = _mlp(lnnx, 3)
    with count_lowerings() as lowered:
        rows, text = _rows(lnnx, model, x, depth=0, compute_flops=True)
    assert [r.path for r in rows] == [()] and lowered[0] == 1


def test_compute_cost_columns_and_the_flax_columns_without_it():
    model, x = _mlp(lnnx)
    _, text = _rows(lnnx, model, x, compute_flops=True, compute_cost=True)
    header = next(line for line in text.splitlines() if "┃ path" in line)
    names = [c.strip() for c in header.split("┃") if c.strip()]
    assert names == [
        "path", "type", "inputs", "outputs", "flops", "bytes accessed",
        "param bytes", "activation bytes", "Param",
    ]  # fmt: skip
    assert "kFLOP" in text and "KiB" in text and "Costs: XLA's cost analysis" in text
    _, flax_like = _rows(lnnx, model, x, compute_flops=True)
    assert "kFLOP" not in flax_like and "bytes accessed" not in flax_like


def test_a_cost_option_that_is_not_a_bool_is_a_clear_error():
    model, x = _mlp(lnnx)
    with pytest.raises(errors.TabulateOptionError, match="compute_flops must be True"):
        lnnx.tabulate(model, x, compute_flops="yes")


def test_a_call_jax_cannot_differentiate_names_its_path_and_the_fix():
    class Loop(lnnx.Module):
        def __init__(self):
            self.w = lnnx.Param(jnp.ones((3,)))

        def __call__(self, x):
            body = lambda c: (c[0] * self.w[...], c[1] + 1)  # noqa: E731
            return jax.lax.while_loop(lambda c: c[1] < 3, body, (x, 0))[0]

    class Net(lnnx.Module):
        def __init__(self):
            self.loop = Loop()

        def __call__(self, x):
            return self.loop(x)

    with pytest.raises(errors.TabulateCostError, match=r"the call / \(Net\)") as info:
        lnnx.tabulate(Net(), jnp.ones((2, 3)), compute_vjp_flops=True)
    assert "compute_vjp_flops=False" in str(info.value)
    text = lnnx.tabulate(Net(), jnp.ones((2, 3)), compute_flops=True, compute_cost=True)
    assert "loop" in text
