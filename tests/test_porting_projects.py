"""What real projects built on Flax did that lens did not take (parity/projects.py).

Each test is one behaviour a third-party project's own test suite relied on, found by
running that suite with ``flax`` resolved to lens; see docs/porting.md, "Real
projects".
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import types
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.core import Tracer
from jax.sharding import PartitionSpec as P

import lens
from lens import nnx


@pytest.fixture
def always_shard_off():
    old = lens.config.flax_always_shard_variable
    lens.config.update("flax_always_shard_variable", False)
    try:
        yield
    finally:
        lens.config.update("flax_always_shard_variable", old)


def test_always_shard_variable_off_keeps_sharding_as_metadata(always_shard_off):
    # A training library's tests annotate params for a ('tp', 'fsdp') mesh and
    # run them on one CPU with no mesh: the option turns eager sharding off.
    p = nnx.Param(jnp.ones((2, 4)), sharding=P("tp", "fsdp"))
    assert nnx.using_eager_sharding() is False
    assert p.get_metadata()["out_sharding"] == P("tp", "fsdp")
    assert p.get_metadata()["eager_sharding"] is False
    assert jnp.array_equal(p[...], jnp.ones((2, 4)))


def test_use_eager_sharding_overrides_the_option(always_shard_off):
    with nnx.use_eager_sharding(True):
        assert nnx.using_eager_sharding() is True
        with pytest.raises(ValueError, match="An auto mesh context or metadata"):
            nnx.Param(jnp.ones((2, 4)), sharding=P("tp", "fsdp"))
    assert nnx.using_eager_sharding() is False


def test_eager_sharding_is_on_by_default():
    assert lens.config.flax_always_shard_variable is True
    assert nnx.using_eager_sharding() is True
    with pytest.raises(ValueError, match="An auto mesh context or metadata"):
        nnx.Param(jnp.ones((2, 4)), sharding=P("tp", "fsdp"))
    mesh = jax.make_mesh((1, 1), ("tp", "fsdp"))
    with jax.set_mesh(mesh):
        p = nnx.Param(jnp.ones((2, 4)), sharding=P("tp", "fsdp"))
    assert p[...].sharding.spec == P("tp", "fsdp")


def test_nnx_nn_dtypes_by_attribute_path_in_a_fresh_process():
    # A quantization library resolves 'flax.nnx.nn.dtypes.promote_dtype' with
    # getattr from sys.modules['flax'] to intercept it: no import of the module.
    code = (
        "import sys, lens; lens.alias_flax(); from flax import nnx; "
        "f = sys.modules['flax'].nnx.nn.dtypes.promote_dtype; "
        "import lens.nnx.nn.dtypes as d; assert f is d.promote_dtype; print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_variable_state_is_the_variable_class():
    # isinstance(x, nnx.Variable | nnx.VariableState): flax.nnx keeps the old name.
    assert nnx.VariableState is nnx.Variable
    assert isinstance(nnx.Param(jnp.ones(2)), nnx.Variable | nnx.VariableState)


def test_sharding_names_reads_out_sharding_with_a_deprecation_warning():
    p = nnx.Param(jnp.ones((2, 3)), out_sharding=("fsdp", None), eager_sharding=False)
    with pytest.warns(DeprecationWarning, match="'sharding_names' is deprecated"):
        assert p.sharding_names == ("fsdp", None)
    with pytest.warns(DeprecationWarning):
        assert nnx.Param(jnp.ones(2)).sharding_names is None


_SPY = """
CALLS = []
ORIGINAL = None


def trampoline(*args, **kwargs):
    import lens_test_dot_spy as spy

    spy.CALLS.append(args[0])
    return spy.ORIGINAL(*args, **kwargs)
"""


@contextlib.contextmanager
def dot_general_code_patched(folder):
    # qwix's way: lax.dot_general keeps its identity and runs other code, so every
    # alias of it (a layer's default argument) calls the patch.
    (folder / "lens_test_dot_spy.py").write_text(_SPY)
    sys.path.insert(0, str(folder))
    import lens_test_dot_spy as spy  # pyright: ignore[reportMissingImports]

    fn = jax.lax.dot_general
    code = fn.__code__
    spy.ORIGINAL = types.FunctionType(
        code, fn.__globals__, fn.__name__, fn.__defaults__
    )
    spy.ORIGINAL.__kwdefaults__ = fn.__kwdefaults__
    fn.__code__ = spy.trampoline.__code__
    try:
        yield spy.CALLS
    finally:
        fn.__code__ = code
        sys.path.remove(str(folder))
        sys.modules.pop("lens_test_dot_spy", None)


def test_layers_call_a_code_patched_dot_general_eagerly_every_call(tmp_path):
    # qwix's LoRA creates its parameters inside the patched dot_general: under a
    # jitted layer they leaked as tracers, and a cached trace skipped the patch.
    from lens._kernels.intercept import intercepted

    x = jnp.ones((2, 3))
    linear = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    dense = lens.nn.Dense(4)
    params = dense.init(jax.random.key(0), x)
    want = (linear(x), dense.apply(params, x))  # jitted: traces are cached now
    assert intercepted() is False
    with dot_general_code_patched(tmp_path) as calls:
        assert intercepted() is True
        got = (linear(x), linear(x), dense.apply(params, x))
    assert intercepted() is False
    assert len(calls) == 3  # once per call: no cached trace skips the patch
    assert not any(isinstance(a, Tracer) for a in calls)
    for g, w in zip(got, (want[0], want[0], want[1]), strict=True):
        assert jnp.allclose(g, w, atol=1e-6)


def test_layers_call_a_swapped_dot_general_eagerly(monkeypatch):
    calls = []
    original = jax.lax.dot_general

    def spy(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    x = jnp.ones((2, 3))
    dense = lens.nn.Dense(4)
    params = dense.init(jax.random.key(0), x)
    want = dense.apply(params, x)
    monkeypatch.setattr(jax.lax, "dot_general", spy)
    got = dense.apply(params, x)
    assert len(calls) == 1 and not isinstance(calls[0], Tracer)
    assert jnp.allclose(got, want, atol=1e-6)


def test_assigning_over_a_variable_replaces_it_as_flax_nnx():
    # qwix's PTQ swaps a Linear's kernel Param for a pytree holding Params.
    linear = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    kernel = linear.kernel
    quantized = (nnx.Param(jnp.zeros((2, 3), jnp.int8)), nnx.Param(jnp.ones(3)))
    linear.kernel = quantized  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(linear.kernel, tuple)
    assert linear.kernel[0][...].dtype == jnp.int8
    assert jnp.array_equal(kernel[...], kernel[...])  # the old Param is untouched
    assert len(nnx.state(linear, nnx.Param)) == 2  # kernel (a tuple node) and bias
    linear.bias = jnp.zeros(3)  # pyright: ignore[reportAttributeAccessIssue]
    assert not isinstance(linear.bias, nnx.Variable)


def test_scope_collection_of_a_missing_collection_is_empty():
    # qwix's find_param iterates module.scope._collection('params').items().
    seen = []

    class Probe(lens.nn.Module):
        @lens.nn.compact
        def __call__(self, x):
            assert self.scope is not None
            seen.append(sorted(self.scope._collection("params").items()))
            return lens.nn.Dense(2, name="inner")(x)

    x = jnp.ones((1, 3))
    variables = Probe().init(jax.random.key(0), x)
    Probe().apply(variables, x)
    assert seen[0] == []  # init: nothing yet
    assert [k for k, _ in seen[1]] == ["inner"]
    out = Probe().apply({}, x, method=lambda m, x: m.scope._collection("params"))
    assert dict(out) == {}


def test_pop_walks_plain_lists_and_dicts_of_submodules():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            y = self.lin(x)
            self.sow(nnx.Intermediate, "y", y)
            return y

    class Model(nnx.Module, pytree=False):  # plain containers allowed
        def __init__(self, rngs):
            self.layers = [Block(rngs), Block(rngs)]
            self.heads = {"a": Block(rngs)}

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.heads["a"](x)

    model = Model(nnx.Rngs(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # sow outside capture
        model(jnp.ones((1, 2)))
    want = nnx.to_pure_dict(nnx.state(model, nnx.Intermediate))
    popped = nnx.to_pure_dict(nnx.pop(model, nnx.Intermediate))
    assert set(popped) == {"layers", "heads"} and set(popped["layers"]) == {0, 1}
    assert jnp.array_equal(popped["heads"]["a"]["y"][0], want["heads"]["a"]["y"][0])
    assert nnx.to_pure_dict(nnx.state(model, nnx.Intermediate)) == {}
    assert len(nnx.state(model, nnx.Param)) == 2  # params stay


def _written_over(nn_mod, struct_mod, meta_mod, case):
    """``{"s": {"x": ...}}`` after a Linen variable whose initial value is
    ``case``'s first tree is written with its second (``v.value = ...``)."""
    arr = jnp.arange(2.0)

    @struct_mod.dataclass
    class Pair:  # a pytree dataclass holding boxes, as AQT's Freezer stores
        a: Any
        b: Any

    box = lambda x, n="a": meta_mod.Partitioned(x, (n,))  # noqa: E731
    initial, written = {
        "box, array": (box(arr), arr + 1),
        "box, dict": (box(arr), {"k": arr + 1}),
        "box, None": (box(arr), None),
        "dataclass of boxes": (
            Pair(box(arr), [box(arr, "b"), arr]),
            Pair(arr + 1, [arr + 2, arr + 3]),
        ),
        "dict of boxes": ({"w": box(arr), "n": arr}, {"w": arr + 1, "n": arr + 2}),
        "dict, other keys": ({"w": box(arr)}, {"v": arr + 1}),
        "plain array": (arr, arr + 1),
    }[case]

    class M(nn_mod.Module):
        @nn_mod.compact
        def __call__(self):
            v = self.variable("s", "x", lambda: initial)
            v.value = written

    _, variables = M().init_with_output(jax.random.key(0))
    is_box = lambda x: isinstance(x, meta_mod.AxisMetadata)  # noqa: E731

    def described(tree):  # [(path, what is there)], boxes opened one level
        return [
            (
                jax.tree_util.keystr(path),
                ("box", leaf.names, described(leaf.value))
                if is_box(leaf)
                else (type(leaf).__name__, jnp.asarray(leaf).tolist()),
            )
            for path, leaf in jax.tree_util.tree_flatten_with_path(
                tree, is_leaf=is_box
            )[0]
        ]

    return described(dict(variables["s"]))


@pytest.mark.parametrize(
    "case",
    [
        "box, array",
        "box, dict",
        "box, None",
        "dataclass of boxes",
        "dict of boxes",
        "dict, other keys",
        "plain array",
    ],
)
def test_a_variable_written_over_keeps_its_boxes_as_flax(case):
    """AQT's Freezer keeps a pytree dataclass whose fields are AxisMetadata
    boxes and writes the raw arrays over it: flax puts each into its box (when the
    written value has the stored one's structure, boxes counted as leaves) and
    stores anything else as given; lens only did this for a single box."""
    flax_linen = pytest.importorskip("flax.linen")
    import flax.struct

    from lens import nn, struct
    from lens.core import meta

    ours = _written_over(nn, struct, meta, case)
    import flax.core.meta

    theirs = _written_over(flax_linen, flax.struct, flax.core.meta, case)
    assert ours == theirs


def test_a_box_written_over_a_box_replaces_it():
    """Flax puts a box written over a box inside the old one (boxed twice, so
    ``names`` stacks); lens replaces it (docs/porting.md)."""
    from lens import nn

    class M(nn.Module):
        @nn.compact
        def __call__(self):
            v = self.variable("s", "x", lambda: nn.Partitioned(jnp.zeros(2), ("a",)))
            v.value = nn.Partitioned(jnp.ones(2), ("b",))
            return v.value

    out, variables = M().init_with_output(jax.random.key(0))
    stored = variables["s"]["x"]
    assert isinstance(stored, nn.Partitioned) and stored.names == ("b",)
    assert not isinstance(stored.value, nn.Partitioned)
    assert out.tolist() == [1.0, 1.0]
