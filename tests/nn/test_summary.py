"""tabulate: rows per module call, variables per collection, totals, HTML form."""

import re

import jax
import jax.numpy as jnp

from lens import nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.Dense(8)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        return nn.Dense(2)(nn.relu(x))


def test_tabulate_rows_totals_and_html():
    text = MLP().tabulate(
        jax.random.key(0), jnp.ones((4, 3)), console_kwargs={"width": 120}
    )
    assert isinstance(text, str)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # Flax's table has ANSI styles
    for needle in (
        "Dense_0",
        "BatchNorm_0",
        "float32[4,3]",
        "float32[4,2]",
        "kernel: float32[3,8]",
        "mean: float32[8]",
    ):
        assert needle in plain
    assert "Total Parameters: 82 (328 B)" in plain  # 32 + 16 + 18 params, 16 stats
    html = text._repr_html_()
    assert html.startswith("<div><b>MLP Summary</b>") and "BatchNorm_0" in html
    assert "Total Parameters: 82 (328 B)" in html


def test_tabulate_depth_collapses_submodules():
    text = nn.tabulate(MLP(), jax.random.key(0), depth=0)(jnp.ones((4, 3)))
    assert "Dense_0" not in text and "Total Parameters: 82" in text


def test_tabulate_escapes_user_names_in_html():
    class Evil(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2, name="<img src=x onerror=alert(1)>")(x)

    html = Evil().tabulate(jax.random.key(0), jnp.ones((1, 2)))._repr_html_()
    assert "<img" not in html and "&lt;img" in html


def test_layers_list_one_row_per_call_not_their_helpers():
    # A layer's internal helpers are functions, not methods: tabulate lists every
    # method call of a module, so a helper method would add a row (as in Flax).
    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3,), padding="CIRCULAR")(x)
            x = nn.ConvLocal(2, (2,))(x)
            return nn.MultiHeadDotProductAttention(num_heads=2, decode=False)(x)

    table_fn = nn.summary._get_module_table(
        Net(),
        depth=None,
        show_repeated=False,
        compute_flops=False,
        compute_vjp_flops=False,
    )
    rows = table_fn({"params": jax.random.key(0)}, jnp.ones((1, 6, 3)))
    assert [(r.path, r.method) for r in rows][:3] == [
        ((), "__call__"),
        (("Conv_0",), "__call__"),
        (("ConvLocal_0",), "__call__"),
    ]
    assert {r.method for r in rows} == {"__call__"}
