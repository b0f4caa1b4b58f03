"""lens.sharding: bytes per device as the shards hold them, each array's layout,
replicated arrays worth sharding, and every seeded mistake reported before
anything compiles, with its module path."""

from __future__ import annotations

import dataclasses
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lens import nn, nnx, sharding
from lens._instruments.sharding import ShardingReport
from lens.display import DisplayWarning, ShardingView
from tests.helpers import count_compiles, visible_text
from tests.instruments.sharding_cases import CASES, MLP, RULES, Case, X, mesh

# -- the seeded mistakes


def _reported(c: Case) -> tuple[ShardingReport, list]:
    tree, m, rules = c.build()
    with count_compiles() as compiles:
        report = sharding(tree, m, rules)
    assert compiles[0] == 0, f"{c.name}: lens.sharding compiled something"
    found = [p for p in report.problems if p.kind == c.kind and p.path == c.path]
    return report, found


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.build.__name__)
def test_each_mistake_is_reported_before_compiling(c: Case):
    report, found = _reported(c)
    assert found, f"{c.name}: got {[(p.kind, p.path) for p in report.problems]}"
    p = found[0]
    assert p.module == c.module
    assert c.path in p.message and "fix:" in p.message
    if c.what:
        assert c.what in f"{p.axis} {p.rule} {p.message}"
    assert len(p.message.splitlines()) <= 4


def test_the_suite_is_at_least_ten_mistakes_linen_and_nnx_all_reported():
    assert len(CASES) >= 10
    assert sum(c.framework == "nn" for c in CASES) >= 4
    assert sum(c.framework == "nnx" for c in CASES) >= 4
    reported = sum(bool(_reported(c)[1]) for c in CASES)
    assert reported / len(CASES) == 1.0


def test_the_compile_counter_sees_a_compile():
    """(So that 'nothing compiled' above can fail.)"""
    with count_compiles() as compiles:
        jax.jit(lambda x: x * 3 + 1)(jnp.arange(5.0))
    assert compiles[0] > 0


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.build.__name__)
def test_each_mistake_is_real_without_lens(c: Case):
    """JAX raises when the tree is placed (without the path), or lens lays it out
    otherwise than the user meant, silently."""
    what = c.without_lens()
    assert what.startswith(("raises", "silently", "runs;")), what


def test_a_correct_model_has_no_problems():
    abstract = jax.eval_shape(MLP().init, jax.random.key(0), X)
    report = sharding(abstract, mesh(), RULES)
    assert report.problems == ()
    kernel = next(a for a in report.arrays if a.path == "params/Dense_0/kernel")
    assert kernel.spec == "P(None, 'model')"
    assert kernel.axes == ((), ("model",))
    assert kernel.shard_shape == (16, 8)
    assert kernel.replicas == 2 and kernel.devices == 8 and not kernel.replicated
    assert kernel.state == "annotated"


def test_no_rules_at_all_is_one_problem_and_like_problems_group():
    abstract = jax.eval_shape(MLP().init, jax.random.key(0), X)
    report = sharding(abstract, mesh(), ())
    assert report.kinds() == ["no-rule"]
    assert "and 1 more annotated array" in report.problems[0].message
    typo = sharding(abstract, mesh(), (("embed", None), ("mpl", "model")))
    assert typo.kinds() == ["no-rule", "no-rule"]
    ((first, same),) = typo.problem_groups()
    assert first.path == "params/Dense_0/kernel"
    assert [p.path for p in same] == ["params/Dense_1/kernel"]
    assert "the same for 1 more: params/Dense_1/kernel" in typo.text()
    assert "the same for 1 more array" in visible_text(ShardingView(typo).html())


def test_rules_in_effect_are_the_default():
    abstract = jax.eval_shape(MLP().init, jax.random.key(0), X)
    with nn.logical_axis_rules(RULES):
        report = sharding(abstract, mesh())
    assert report.problems == ()
    assert report.rules == RULES


def test_linen_resolution_is_flaxs():
    """The spec lens reports for a logical box, conflicts and missing rules
    included, is the one flax.linen resolves (lens replicates as Flax does)."""
    flax_nn = pytest.importorskip("flax.linen")
    rules = (("embed", None), ("heads", "model"), ("kv", "model"))
    names = ("embed", "heads", "kv", "nothing")
    value = jax.ShapeDtypeStruct((4, 4, 8, 2), jnp.float32)
    box = nn.LogicallyPartitioned(value, names)
    report = sharding({"params": {"w": box}}, mesh(), rules)
    theirs = flax_nn.logical_to_mesh_axes(names, rules)
    assert report.arrays[0].spec == repr(theirs)
    assert sorted(report.kinds()) == ["axis-conflict", "no-rule"]


def test_nnx_module_and_state_give_the_same_report():
    from tests.instruments.sharding_cases import _abstract_stack

    model = _abstract_stack(("mlp", "embed"))
    a = sharding(model, mesh(), RULES)
    b = sharding(nnx.state(model), mesh(), RULES)
    assert a == b
    assert [x.path for x in a.arrays][:2] == [
        "/layers/0/linear/bias",
        "/layers/0/linear/kernel",
    ]


# -- bytes per device


def _placed_tree() -> dict:
    m = mesh()

    def put(shape, spec, dtype=np.float32):
        x = np.arange(math.prod(shape), dtype=dtype).reshape(shape)
        return jax.device_put(x, NamedSharding(m, spec))

    return {
        "both": put((8, 16), P("data", "model")),
        "model": put((8, 16), P(None, "model")),
        "replicated": put((4, 4), P()),
        "flat": put((32,), P(("data", "model"))),
        "int8": put((8, 12), P("data"), np.int8),
        "bf16": put((8, 8), P("model"), jnp.bfloat16),
        "one": jax.device_put(np.ones(10, np.float32), jax.devices()[3]),
    }


def test_bytes_per_device_equal_the_addressable_shards():
    tree = _placed_tree()
    expected: dict[int, int] = {}
    for x in jax.tree.leaves(tree):
        for shard in x.addressable_shards:
            expected[shard.device.id] = (
                expected.get(shard.device.id, 0) + shard.data.nbytes
            )
    report = sharding(tree)
    assert report.bytes_per_device() == expected
    assert report.total_bytes == sum(x.nbytes for x in jax.tree.leaves(tree))
    arrays = {d.id: d.arrays for d in report.devices}
    assert arrays[3] == 7 and arrays[0] == 6  # "one" is on device 3 only


def test_abstract_bytes_come_from_the_shard_shape():
    m = mesh()
    shardings = {
        "a": NamedSharding(m, P("data", "model")),
        "b": NamedSharding(m, P(None, "data")),
        "c": NamedSharding(m, P()),
    }
    tree = {
        k: jax.ShapeDtypeStruct((16, 32), jnp.float32, sharding=s)
        for k, s in shardings.items()
    }
    with count_compiles() as compiles:
        report = sharding(tree)
    assert compiles[0] == 0
    expected = {d.id: 0 for d in m.devices.flat}
    for s in shardings.values():
        for d in s.device_set:
            expected[d.id] += math.prod(s.shard_shape((16, 32))) * 4
    assert report.bytes_per_device() == expected
    assert {a.state for a in report.arrays} == {"abstract"}


def test_annotated_bytes_are_what_placing_gives():
    """An abstract Linen tree laid out by its annotations holds, per device, what
    the tree placed with those shardings holds."""
    m = mesh()
    model = MLP()
    abstract = jax.eval_shape(model.init, jax.random.key(0), X)
    with nn.logical_axis_rules(RULES):
        planned = sharding(abstract, m)
        shardings = nn.get_sharding(abstract, m)
        placed = jax.jit(model.init, out_shardings=shardings)(jax.random.key(0), X)
        actual = sharding(placed, m)
    assert actual.problems == ()
    assert planned.bytes_per_device() == actual.bytes_per_device()
    assert [a.spec for a in planned.arrays] == [a.spec for a in actual.arrays]


# -- replicated arrays above the threshold


def test_replicated_arrays_above_the_threshold_are_flagged():
    m = mesh()
    rep = NamedSharding(m, P())
    tree = {
        "big": jax.ShapeDtypeStruct((1024, 512), jnp.float32, sharding=rep),  # 2 MiB
        "small": jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=rep),
        "sharded": jax.ShapeDtypeStruct(
            (1024, 512), jnp.float32, sharding=NamedSharding(m, P("model"))
        ),
        "odd": jax.ShapeDtypeStruct((3, 5), jnp.float32, sharding=rep),
    }
    report = sharding(tree)
    assert [f.path for f in report.flagged] == ["big"]
    big = report.flagged[0]
    assert (big.axis, big.dim, big.devices) == ("model", 0, 8)
    assert big.saved == (2 << 20) - (2 << 20) // 4
    lower = sharding(tree, threshold=16)
    assert [f.path for f in lower.flagged] == ["big", "small", "odd"]
    odd = lower.flagged[-1]
    assert odd.axis is None and odd.saved == 0
    assert "no mesh axis divides" in lower.text()


# -- the views


def test_text_names_problems_devices_and_arrays():
    tree, m, rules = CASES[0].build()
    report = sharding(tree, m, rules)
    text = report.text()
    assert repr(report) == text
    assert text.startswith("Sharding of 4 arrays")
    assert "no-rule: params/Dense_0/kernel" in text
    assert re.search(r"^  d7 ", text, re.M)
    assert "params/Dense_1/kernel" in text


def test_html_is_script_free_and_names_what_the_text_does():
    tree, m, rules = CASES[1].build()
    report = sharding(tree, m, rules)
    bundle = report._repr_mimebundle_()
    html = bundle["text/html"]
    assert bundle["text/plain"] == report.text()
    for tag in ("<script", "<style", "<svg", "javascript:", "var(--"):
        assert tag not in html.lower()
    seen = visible_text(html)
    assert "axis-conflict" in seen and "params/query/kernel" in seen
    assert "bytes per device" in seen and "d7" in seen


def test_picture_cells_are_the_blocks_coloured_by_device():
    x = _placed_tree()["both"]  # 8 x 16 on data x model: 2 x 4 blocks
    report = sharding({"x": x})
    layout = report.arrays[0]
    assert len(layout.blocks) == 8 and layout.shard_shape == (4, 4)
    pic = ShardingView(report).picture(layout)
    cells = re.findall(r"<span title='([^']*)'", pic)
    assert len(cells) == 8
    assert "[0:4, 0:4] on d0" in cells and "[4:8, 12:16] on d7" in cells
    backgrounds = set(re.findall(r"background:(rgba\([^)]*\))", pic))
    assert len(backgrounds) == 8


def test_a_replicated_block_lists_its_devices():
    x = _placed_tree()["model"]  # split by model only: each block on 2 devices
    view = ShardingView(sharding({"x": x}))
    pic = view.picture(view.report.arrays[0])
    assert "[:, 0:4] on d0,4" in pic


def test_several_processes_name_each_process_device():
    report = sharding({"x": _placed_tree()["both"]})
    devices = tuple(
        dataclasses.replace(d, process=d.id // 4, addressable=d.id < 4)
        for d in report.devices
    )
    two = dataclasses.replace(report, devices=devices, processes=2)
    text = two.text()
    assert "p0:d0" in text and "p1:d7" in text
    html = ShardingView(two).html()
    assert "p1:d7" in visible_text(html)


def test_many_devices_share_rows():
    report = sharding({"x": _placed_tree()["replicated"]})
    assert len(report.device_groups()) == 8
    groups = report.device_groups(limit=4)
    assert len(groups) == 1 and groups[0].name(1) == "d0-7"


def test_rich_renders():
    from rich.console import Console

    tree, m, rules = CASES[0].build()
    console = Console(record=True, width=100)
    console.print(sharding(tree, m, rules))
    out = console.export_text()
    assert "no-rule" in out and "bytes per device" in out


def test_a_failing_view_warns_and_falls_back_to_text():
    report = sharding({"x": _placed_tree()["both"]})
    broken = dataclasses.replace(report, arrays=(object(),))  # type: ignore[arg-type]
    with pytest.warns(DisplayWarning):
        html = ShardingView(broken).html()
    assert html.startswith("<pre>")


def test_host_arrays_and_an_empty_tree():
    report = sharding({"w": np.zeros((4, 4), np.float32)})
    assert report.arrays[0].state == "host" and report.devices == ()
    assert "not on any device" in report.text()
    empty = sharding({})
    assert empty.arrays == () and "Sharding of 0 arrays" in empty.text()
    assert "<script" not in ShardingView(empty).html()


def test_a_donated_array_keeps_its_layout_and_frees_its_bytes():
    m = mesh()
    kept = jax.device_put(jnp.ones((8, 16)), NamedSharding(m, P("data", "model")))
    donated = jax.device_put(jnp.ones((8, 16)), NamedSharding(m, P("data", "model")))
    donated.delete()  # what jax.jit(step, donate_argnums=0) leaves behind
    report = sharding({"kept": kept, "old": donated})
    states = {a.path: a.state for a in report.arrays}
    assert states == {"kept": "placed", "old": "deleted"}
    assert report.bytes_per_device() == sharding({"kept": kept}).bytes_per_device()
    assert re.search(r"old +f32\[8,16\]  P\('data', 'model'\)", report.text())
    assert "deleted (donated?): its bytes are freed" in report.text()
    assert "donated to a jitted call" in ShardingView(report).html()


def test_the_docs_example_prints_what_the_page_shows(capsys):
    """docs/memory.md's sharding example, run as pasted, prints its printed block."""
    import pathlib
    import re

    page = (pathlib.Path(__file__).parents[2] / "docs" / "memory.md").read_text()
    section = page.split("## How it is sharded", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    shown = re.findall(r"prints\n\n```text\n(.*?)```", section, re.S)[0]
    exec(compile(code, "<docs>", "exec"), {})
    assert capsys.readouterr().out.strip() == shown.strip()
