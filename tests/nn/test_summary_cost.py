"""nn.tabulate's costs: Flax's FLOPs columns (the same numbers as Flax's), lens's
compute_cost columns (bytes accessed, parameter and activation bytes, units and
totals), totals equal to XLA's analysis of the whole call, one lowering per
distinct call, the HTML form, and clear errors."""

import re

import jax
import jax.numpy as jnp
import pytest

from lens import errors, nn
from lens._instruments.call_cost import fmt_flops, fmt_size
from tests.helpers import count_lowerings

fnn = pytest.importorskip("flax.linen")
PLAIN = {"force_terminal": False, "no_color": True, "width": 300}
KEY = jax.random.key(0)


def _mlp(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.Dense(32)(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.Dense(32)(nn.relu(x))
            return nn.Dense(4)(nn.gelu(x))

    return MLP(), jnp.ones((8, 16))


def _cnn(nn):
    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(8, (3, 3))(x))
            x = nn.avg_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.Conv(16, (3, 3))(x))
            return nn.Dense(10)(x.reshape((x.shape[0], -1)))

    return CNN(), jnp.ones((2, 16, 16, 3))


def _deep(n: int):
    class Deep(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(16)(x)  # a different input shape: its own lowering
            for _ in range(n):  # an initializer made per layer: the same cost
                init = nn.initializers.normal(0.02)
                x = nn.relu(nn.Dense(16, kernel_init=init)(x))
            return x

    return Deep(), jnp.ones((4, 8))


def _table(model, x, **flags):
    options = {"compute_flops": True, "compute_vjp_flops": True, **flags}
    return nn.summary._get_module_table(
        model,
        depth=flags.pop("depth", None),
        show_repeated=False,
        compute_flops=options["compute_flops"],
        compute_vjp_flops=options["compute_vjp_flops"],
        compute_cost=options.get("compute_cost", True),
    )({"params": KEY}, x)


MODELS = {"mlp": _mlp, "cnn": _cnn}


@pytest.mark.parametrize("name", MODELS)
def test_flops_are_flaxs_row_by_row(name):
    ours = _table(*MODELS[name](nn))
    theirs = fnn.summary._get_module_table(
        MODELS[name](fnn)[0],
        depth=None,
        show_repeated=False,
        compute_flops=True,
        compute_vjp_flops=True,
    )({"params": KEY}, MODELS[name](fnn)[1])
    assert [(r.path, r.flops, r.vjp_flops) for r in ours] == [
        (r.path, r.flops, r.vjp_flops) for r in theirs
    ]
    assert all(r.cost is not None and r.cost.flops == r.flops for r in ours)


@pytest.mark.parametrize("name", MODELS)
def test_total_is_xlas_analysis_of_the_whole_call(name):
    model, x = MODELS[name](nn)
    total = _table(model, x).total
    variables = model.init(KEY, x)
    lowered = jax.jit(lambda v, x: model.apply(v, x)).lower(variables, x)
    lowered_cost, compiled_cost = (
        lowered.cost_analysis(),
        lowered.compile().cost_analysis(),
    )
    assert total.flops == pytest.approx(lowered_cost["flops"], rel=0.01)
    assert total.flops == pytest.approx(compiled_cost["flops"], rel=0.01)
    # bytes accessed: the unfused HLO's (the compiled call's fuses, far fewer)
    assert total.bytes_accessed == pytest.approx(
        lowered_cost["bytes accessed"], rel=0.01
    )
    assert total.bytes_accessed > compiled_cost["bytes accessed"]
    params = jax.tree.leaves(variables["params"])
    assert total.param_bytes == sum(p.nbytes for p in params)


def test_rows_add_up_to_the_total_and_activations_are_the_leaf_outputs():
    model, x = _cnn(nn)
    rows = _table(model, x)
    top, layers = rows[0], rows[1:]
    # the top call is its layers and its own ops (relu, pooling): more, not less
    assert (
        sum(r.flops for r in layers) < top.flops < 1.05 * sum(r.flops for r in layers)
    )
    assert [r.cost.activation_bytes for r in layers] == [
        2 * 16 * 16 * 8 * 4,
        2 * 8 * 8 * 16 * 4,
        2 * 10 * 4,
    ]
    assert rows.total.activation_bytes == sum(r.cost.activation_bytes for r in layers)
    assert top.cost.activation_bytes == 2 * 10 * 4  # the top row: its own outputs
    assert sum(r.cost.param_bytes for r in layers) == top.cost.param_bytes


def test_one_lowering_per_distinct_call_not_per_module():
    counts = []
    for n in (3, 30):
        model, x = _deep(n)
        with count_lowerings() as lowered:
            table = _table(model, x)
        counts.append((lowered[0], table.lowerings))
        assert len(table) == n + 2
    # the model, its first Dense (on 8 features), the rest (on 16): forward and VJP
    assert counts == [(6, 6), (6, 6)]


def test_hidden_rows_are_not_lowered():
    model, x = _deep(5)
    with count_lowerings() as lowered:
        table = _table(model, x, depth=0)
    assert [r.path for r in table] == [()] and lowered[0] == 2  # the model only


def test_options_off_print_flaxs_table_unchanged():
    model, x = _cnn(nn)
    for flags in ({}, {"compute_flops": True, "compute_vjp_flops": True}):
        ours = nn.tabulate(model, KEY, console_kwargs=PLAIN, **flags)(x)
        theirs = fnn.tabulate(_cnn(fnn)[0], KEY, console_kwargs=PLAIN, **flags)(x)
        assert ours == theirs


def _cells(text: str, header: str) -> list[str]:
    """The cells of the column ``header`` of a rich table printed as text."""
    lines = text.splitlines()
    head = next(line for line in lines if f" {header} " in line and "┃" in line)
    index = [c.strip() for c in head.split("┃")].index(header)
    return [
        line.split("│")[index].strip()
        for line in lines
        if line.startswith("│") and line.split("│")[index].strip()
    ]


def test_compute_cost_columns_read_with_units_and_a_total():
    model, x = _cnn(nn)
    table = _table(model, x)
    text = model.tabulate(
        KEY,
        x,
        compute_flops=True,
        compute_vjp_flops=True,
        compute_cost=True,
        console_kwargs=PLAIN,
    )
    header = next(line for line in text.splitlines() if "┃ path" in line)
    names = [c.strip() for c in header.split("┃") if c.strip()]
    assert names == [
        "path", "module", "inputs", "outputs", "flops", "vjp_flops",
        "bytes accessed", "vjp bytes accessed", "param bytes", "activation bytes",
        "params",
    ]  # fmt: skip
    flops = _cells(text, "flops")
    assert flops == [fmt_flops(r.flops) for r in table] + [fmt_flops(table.total.flops)]
    assert flops[0] == "508 kFLOP" and flops[1] == "207 kFLOP"
    assert _cells(text, "param bytes")[-1] == fmt_size(table.total.param_bytes)
    assert _cells(text, "activation bytes")[-1] == "24.1 KiB"
    assert all(
        re.fullmatch(r"[\d.]+ (B|KiB|MiB)", c) for c in _cells(text, "bytes accessed")
    )
    assert "Costs: XLA's cost analysis of each call lowered alone" in text
    assert "Total Parameters: 11,642 (46.6 KB)" in text


def test_a_narrow_console_folds_cost_cells_never_cuts_them():
    model, x = _mlp(nn)
    text = model.tabulate(
        KEY, x, compute_flops=True, compute_cost=True,
        console_kwargs={**PLAIN, "width": 90},
    )  # fmt: skip
    assert max(len(line) for line in text.splitlines()) <= 90
    costs = "".join(_cells_between(text, 5, 9))
    assert "…" not in costs and "kFLOP" in costs.replace(" ", "")


def _cells_between(text: str, first: int, last: int) -> list[str]:
    return [
        "".join(line.split("│")[first:last])
        for line in text.splitlines()
        if line.startswith("│")
    ]


def test_html_has_a_cost_table_that_fits_beside_flaxs():
    model, x = _mlp(nn)
    page = model.tabulate(KEY, x, compute_flops=True, compute_cost=True)._repr_html_()
    summary, costs = page.split("MLP Cost")
    assert "<th" in costs and "bytes accessed" in costs and "kFLOP" in costs
    assert "kFLOP" not in summary  # Flax's columns alone in the first table
    assert page.count("overflow-x:auto") == 2  # each table scrolls, never clips
    assert "white-space:pre;" not in page  # cells wrap at spaces
    plain = nn.tabulate(model, KEY, compute_flops=True)(x)._repr_html_()
    assert "MLP Cost" in plain and "bytes accessed" not in plain


def test_a_cost_option_that_is_not_a_bool_is_a_clear_error():
    model, x = _mlp(nn)
    with pytest.raises(
        errors.TabulateOptionError,
        match="compute_cost must be True or False, got 'bytes'",
    ):
        model.tabulate(KEY, x, compute_cost="bytes")
    with pytest.raises(TypeError, match="compute_vjp_flops"):
        nn.tabulate(model, KEY, compute_vjp_flops=None)


class Loop(nn.Module):
    @nn.compact
    def __call__(self, x):
        w = self.param("w", nn.initializers.ones, (x.shape[-1],))
        return jax.lax.while_loop(
            lambda c: c[1] < 3, lambda c: (c[0] * w, c[1] + 1), (x, 0)
        )[0]


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        return Loop()(nn.Dense(4)(x))


def test_a_call_jax_cannot_differentiate_names_its_path_and_the_fix():
    with pytest.raises(errors.TabulateCostError) as info:
        Net().tabulate(KEY, jnp.ones((2, 3)), compute_vjp_flops=True)
    message = str(info.value)
    assert "could not differentiate and lower the call / (Net.__call__)" in message
    assert "compute_vjp_flops=False" in message
    assert "while_loop" in str(info.value.__cause__)
    # the forward costs still work
    text = Net().tabulate(KEY, jnp.ones((2, 3)), compute_flops=True, compute_cost=True)
    assert "Loop_0" in text


def test_the_docs_example_runs_and_prints_what_the_page_says(capsys):
    import pathlib

    page = pathlib.Path(__file__).parents[2] / "docs" / "cost.md"
    (block,) = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    exec(block, {})
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    total = next(line for line in out.splitlines() if "Total " in line)
    for number in ("3.26 MFLOP", "9.82 MFLOP", "384.8 KiB", "198.8 KiB", "9.2 KiB"):
        assert number in total  # the page's numbers
    assert "float32[32,784]" in out  # at 160 columns, nothing is cut


def test_cost_columns_narrow_before_flaxs_columns_are_cut():
    model, x = _cnn(nn)
    options = {"compute_flops": True, "compute_vjp_flops": True, "compute_cost": True}
    wide = model.tabulate(KEY, x, console_kwargs=PLAIN, **options)
    assert "┃ bytes accessed ┃" in wide and "│  508 kFLOP │" in wide  # one line each
    # at 150 columns the costs fit only as a number over its unit: Flax's
    # shapes stay whole (rich would cut them to float32[2,16,…)
    mid = model.tabulate(KEY, x, console_kwargs={**PLAIN, "width": 150}, **options)
    assert "float32[2,16,16,3]" in mid and "…" not in mid
    assert "│    508 │" in mid and "│  kFLOP │" in mid
