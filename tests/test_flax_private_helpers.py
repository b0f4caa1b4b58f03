"""Flax's private helpers that real projects import, at Flax's paths, against flax.

Projects write their own layers with ``flax.linen.linear._conv_dimension_numbers``,
``flax.linen.normalization._compute_stats`` / ``_normalize`` / ``_canonicalize_axes``
(RL agents' custom norms, scico, aqt, gemma's LoRA with ``_canonicalize_tuple``), and
etils checks ``isinstance(x, flax.linen.summary._ArrayRepresentation)`` on every
array once flax.linen is imported. Each is served at its Flax path and compared
with flax's here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.nn as lnn

flax_linen = pytest.importorskip("flax.linen")
fnnx = pytest.importorskip("flax.nnx")

import flax.linen.linear as flinear  # noqa: E402
import flax.linen.normalization as fnorm  # noqa: E402
import flax.linen.recurrent as frecurrent  # noqa: E402
import flax.linen.summary as fsummary  # noqa: E402
import flax.nnx.nn.linear as fnnx_linear  # noqa: E402
import flax.nnx.nn.normalization as fnnx_norm  # noqa: E402
import flax.nnx.nn.recurrent as fnnx_recurrent  # noqa: E402

import lens.nn.linear as llinear  # noqa: E402
import lens.nn.normalization as lnorm  # noqa: E402
import lens.nn.recurrent as lrecurrent  # noqa: E402
import lens.nn.summary as lsummary  # noqa: E402
import lens.nnx.nn.linear as lnnx_linear  # noqa: E402
import lens.nnx.nn.normalization as lnnx_norm  # noqa: E402
import lens.nnx.nn.recurrent as lnnx_recurrent  # noqa: E402

X = jax.random.normal(jax.random.key(0), (2, 3, 5))


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"), [(llinear, flinear), (lnnx_linear, fnnx_linear)]
)
def test_linear_helpers(lens_mod, flax_mod):
    for x in (3, (1, 2), [4]):
        assert lens_mod._canonicalize_tuple(x) == flax_mod._canonicalize_tuple(x)
    for axes in ((-1, 0), (2, -2), ()):
        assert lens_mod._normalize_axes(axes, 3) == flax_mod._normalize_axes(axes, 3)
    for shape in ((1, 8, 3), (2, 8, 8, 3), (1, 4, 4, 4, 2)):
        got = lens_mod._conv_dimension_numbers(shape)
        assert got == flax_mod._conv_dimension_numbers(shape)
    kernel = jnp.ones((3, 3, 3, 4))
    dims = llinear._conv_dimension_numbers((2, 8, 8, 3))
    y = jax.lax.conv_general_dilated(
        jnp.ones((2, 8, 8, 3)), kernel, (1, 1), "SAME", dimension_numbers=dims
    )
    assert y.shape == (2, 8, 8, 4)


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"), [(lnorm, fnorm), (lnnx_norm, fnnx_norm)]
)
def test_statistics_helpers(lens_mod, flax_mod):
    for axes in (-1, (0, -1), [2, 2, -1]):
        assert lens_mod._canonicalize_axes(3, axes) == tuple(
            sorted(flax_mod._canonicalize_axes(3, axes))
        )
    z = X + 1j * X[::-1]
    np.testing.assert_allclose(lens_mod._abs_sq(z), flax_mod._abs_sq(z), rtol=1e-6)
    mask = X > -0.5
    cases = [
        dict(axes=-1, dtype=None),
        dict(axes=(1, 2), dtype=jnp.bfloat16),
        dict(axes=(0, 2), dtype=None, use_mean=False),
        dict(axes=-1, dtype=None, use_fast_variance=False),
        dict(axes=-1, dtype=None, mask=mask),
    ]
    for case in cases:
        got = lens_mod._compute_stats(X, **case)
        want = flax_mod._compute_stats(X, **case)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, case
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if lens_mod is lnorm:  # Linen's also takes force_float32_reductions
        half = X.astype(jnp.bfloat16)
        got = lnorm._compute_stats(half, -1, None, force_float32_reductions=False)
        want = fnorm._compute_stats(half, -1, None, force_float32_reductions=False)
        assert got[1].dtype == want[1].dtype == jnp.bfloat16


def test_l2_normalize():
    np.testing.assert_allclose(
        lnnx_norm._l2_normalize(X, axis=-1),
        fnnx_norm._l2_normalize(X, axis=-1),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        lnorm._l2_normalize(X), fnorm._l2_normalize(X), rtol=1e-6
    )


def _custom_norm(nn, norm_mod):
    """A Linen norm written as projects write theirs: the private helpers."""

    class CustomNorm(nn.Module):
        use_bias: bool = True

        @nn.compact
        def __call__(self, x):
            mean, var = norm_mod._compute_stats(x, (1, 2), None)
            return norm_mod._normalize(
                self,
                x,
                mean,
                var,
                (1, 2),
                -1,
                None,
                jnp.float32,
                1e-6,
                self.use_bias,
                True,
                nn.initializers.zeros,
                nn.initializers.ones,
            )

    return CustomNorm


@pytest.mark.parametrize("use_bias", [True, False])
def test_a_linen_norm_written_with_the_helpers(use_bias):
    got_vars = _custom_norm(lnn, lnorm)(use_bias).init(jax.random.key(0), X)
    want_vars = _custom_norm(flax_linen, fnorm)(use_bias).init(jax.random.key(0), X)
    assert jax.tree.map(jnp.shape, dict(got_vars)) == jax.tree.map(
        jnp.shape, dict(want_vars)
    )
    params = jax.tree.map(lambda v: v + 0.5, dict(want_vars))
    got = _custom_norm(lnn, lnorm)(use_bias).apply(params, X)
    want = _custom_norm(flax_linen, fnorm)(use_bias).apply(params, X)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nnx_normalize():
    mean, var = fnnx_norm._compute_stats(X, -1, None)
    scale, bias = jnp.full((5,), 2.0), jnp.full((5,), 0.5)
    for s, b in ((scale, bias), (None, bias), (scale, None), (None, None)):
        got = lnnx_norm._normalize(X, mean, var, s, b, -1, -1, None, 1e-6)
        want = fnnx_norm._normalize(X, mean, var, s, b, -1, -1, None, 1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("lens_mod", "flax_mod"),
    [(lrecurrent, frecurrent), (lnnx_recurrent, fnnx_recurrent)],
)
def test_recurrent_helpers(lens_mod, flax_mod):
    carries = {"h": jnp.arange(24.0).reshape(4, 3, 2)}  # (time, batch, features)
    lengths = jnp.array([1, 4, 2])
    got = lens_mod._select_last_carry(carries, lengths)
    np.testing.assert_array_equal(
        got["h"], flax_mod._select_last_carry(carries, lengths)["h"]
    )
    assert (
        lens_mod._expand_dims_like(jnp.ones(3), X).shape
        == flax_mod._expand_dims_like(jnp.ones(3), X).shape
    )
    np.testing.assert_array_equal(
        lens_mod._concatenate(X, X), flax_mod._concatenate(X, X)
    )


def test_summary_representations_render_as_flaxs():
    for x in (X, jnp.ones((), jnp.int8)):
        got = lsummary._ArrayRepresentation.from_array(x)
        want = fsummary._ArrayRepresentation.from_array(x)
        assert (tuple(got.shape), got.dtype) == (tuple(want.shape), want.dtype)
        assert got.render() == want.render()
        assert isinstance(got, lsummary._ValueRepresentation)
    boxed = lnn.Partitioned(X, ("a", "b", None))
    got = lsummary._PartitionedArrayRepresentation.from_partitioned(boxed)
    want = fsummary._PartitionedArrayRepresentation.from_partitioned(
        flax_linen.Partitioned(X, ("a", "b", None))
    )
    assert got.render() == want.render()
    for n in (0, 512, 3 * 1024**2):
        assert lsummary._bytes_repr(n) == fsummary._bytes_repr(n)
    assert lsummary._size_and_bytes_repr(6, 24) == fsummary._size_and_bytes_repr(6, 24)


def test_nnx_and_linen_names_are_one_object():
    # one implementation behind both paths, served lazily by the facades
    assert lnorm._compute_stats is lnnx_norm._compute_stats
    assert llinear._conv_dimension_numbers is lnnx_linear._conv_dimension_numbers


def test_pmap_device_order_is_the_local_devices():
    import flax.jax_utils

    import lens.jax_utils

    assert lens.jax_utils._pmap_device_order() == flax.jax_utils._pmap_device_order()


def test_empty_node_class_at_nnx_traversals():
    import flax.nnx.traversals

    import lens.nnx.traversals

    assert isinstance(lens.nnx.traversals.empty_node, lens.nnx.traversals._EmptyNode)
    assert isinstance(flax.nnx.traversals.empty_node, flax.nnx.traversals._EmptyNode)


def _walk_calls(nn, module_lib, summary_lib):
    """What maxdiffusion's ``calculate_model_tflops`` and hand-made tabulates do
    with Flax's internals: record every call under ``_tabulate_context``, read
    them from ``_context.call_info_stack[-1].calls``, and cost each one."""

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.relu(nn.Dense(4)(x))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = Block()(x)
            return nn.Dense(2)(Block()(x))

    with module_lib._tabulate_context():
        jax.eval_shape(Model().init, jax.random.key(0), jnp.ones((3, 5)))
        calls = module_lib._context.call_info_stack[-1].calls
        calls.sort(key=lambda c: c.index)
    assert not module_lib._context.call_info_stack  # popped on leaving
    rows = []
    for c in calls:
        assert isinstance(c, module_lib._CallInfo)
        inputs = summary_lib._process_inputs(c.args, c.kwargs)
        flops, vjp_flops = summary_lib._get_call_flops(c, True, True)
        rows.append(
            (c.index, c.path, c.method, type(c.module).__name__, inputs.shape)
            + (flops, vjp_flops, summary_lib._get_call_flops(c, False, False))
        )
    return rows


def test_tabulate_context_walk_and_call_flops_match_flax():
    import flax.linen.module as fmodule

    import lens.nn.module as lmodule

    got = _walk_calls(lnn, lmodule, lsummary)
    want = _walk_calls(flax_linen, fmodule, fsummary)
    assert [r[:5] for r in got] == [r[:5] for r in want]
    assert len(got) == 6 and got[0][1] == () and got[-1][1] == ("Dense_0",)
    assert all(r[7] == (-1, -1) for r in got)
    # XLA's counts of the same programs (the model's dense is lens's own kernel,
    # so the counts agree within the few ops either adds)
    for g, w in zip(got, want):
        assert g[5] > 0 and g[6] > g[5]
        np.testing.assert_allclose(g[5:7], w[5:7], rtol=0.2)
    x = jnp.ones((4, 8))
    assert lsummary._get_flops(jnp.dot, x, x.T) == fsummary._get_flops(jnp.dot, x, x.T)


def test_context_stacks_are_written_through():
    import lens.nn.module as lmodule

    stack = lmodule._context.call_info_stack
    assert len(stack) == 0 and stack == []
    ctx = lmodule._CallInfoContext(0, [])
    stack.append(ctx)
    try:
        assert lmodule._context.call_info_stack[-1] is ctx
        # calls made now are recorded, as under flax's own tabulate
        lnn.Dense(2).init(jax.random.key(0), jnp.ones((1, 3)))
        assert [c.path for c in ctx.calls] == [()]
        assert ctx.get_call_index() == 1
    finally:
        assert lmodule._context.call_info_stack.pop() is ctx
    assert not lmodule._context.call_info_stack


def test_parent_sentinel_and_names():
    import copy
    import functools
    import pickle

    import flax.linen.module as fmodule

    import lens.nn.module as lmodule

    sentinel = lmodule._unspecified_parent
    assert isinstance(sentinel, lmodule._Sentinel)
    assert lmodule._get_unspecified_parent() is sentinel
    assert copy.deepcopy(sentinel) is sentinel
    assert pickle.loads(pickle.dumps(sentinel)) is sentinel
    assert lnn.Dense.__dataclass_fields__["parent"].default is sentinel
    flax_default = flax_linen.Dense.__dataclass_fields__["parent"].default
    assert isinstance(flax_default, fmodule._Sentinel)

    def method(x):
        return x

    for fn in (method, functools.partial(method, 1), object()):
        assert lmodule._get_fn_name(fn) == fmodule._get_fn_name(fn)
    for name in (None, "enc"):
        for fn in (method, lnn.Dense.__call__):
            got = lmodule._derive_profiling_name(lnn.Dense(2, name=name), fn)
            want = fmodule._derive_profiling_name(flax_linen.Dense(2, name=name), fn)
            assert got == want


def test_unfreeze_variables_unfreezes_only_the_mutable_collections():
    import flax.core.scope as fscope
    from flax.core.frozen_dict import freeze as flax_freeze

    import lens.core.scope as lscope
    from lens.core import freeze

    for mutable in (False, True, "stats", ["params"]):
        got = lscope._unfreeze_variables(
            {"params": freeze({"w": 1}), "stats": freeze({"m": 2})}, mutable
        )
        want = fscope._unfreeze_variables(
            {"params": flax_freeze({"w": 1}), "stats": flax_freeze({"m": 2})},
            mutable,
        )
        assert {k: type(v).__name__ for k, v in got.items()} == {
            k: type(v).__name__ for k, v in want.items()
        }
        assert got == want


def test_msgpack_files_read_by_hand(monkeypatch):
    # NNX projects load Flax's msgpack weights with
    # msgpack.unpackb(data, ext_hook=_msgpack_ext_unpack), then unchunk
    import flax.serialization as fser
    import msgpack

    import lens.serialization as lser

    monkeypatch.setattr(fser, "MAX_CHUNK_SIZE", 64)
    monkeypatch.setattr(lser, "MAX_CHUNK_SIZE", 64)
    tree = {
        "w": np.arange(40, dtype=np.float32).reshape(4, 10),
        "b": np.float32(2.5),
        "c": 1 + 2j,
        "nested": {"k": np.ones((3,), np.int8)},
    }
    for write in (fser.to_bytes, lser.to_bytes):
        data = write(tree)
        got = lser._unchunk_array_leaves_in_place(
            msgpack.unpackb(data, ext_hook=lser._msgpack_ext_unpack, raw=False)
        )
        want = fser._unchunk_array_leaves_in_place(
            msgpack.unpackb(data, ext_hook=fser._msgpack_ext_unpack, raw=False)
        )
        jax.tree_util.tree_map(np.testing.assert_array_equal, got, want)
        np.testing.assert_array_equal(got["w"], tree["w"])
    d = {"a": jnp.ones(2), "b": {"c": jnp.zeros(1)}, "d": [jnp.ones(1)]}
    got = lser._np_convert_in_place(dict(d, b=dict(d["b"])))
    want = fser._np_convert_in_place(dict(d, b=dict(d["b"])))
    assert jax.tree_util.tree_map(type, got) == jax.tree_util.tree_map(type, want)
    assert lser._tuple_to_dict((4, 5)) == fser._tuple_to_dict((4, 5))
    assert lser._dict_to_tuple({"0": 4, "1": 5}) == fser._dict_to_tuple(
        {"0": 4, "1": 5}
    )


def test_params_dict_helpers():
    import flax.traverse_util as ftu
    from flax.core.frozen_dict import freeze as flax_freeze

    import lens.traverse_util as ltu
    from lens.core import freeze

    params = {"b": {"k": 1}, "a": {"k": 2}}
    got = ltu._get_params_dict(freeze(params))
    assert type(got) is dict and got == ftu._get_params_dict(flax_freeze(params))
    assert ltu._sorted_items(params) == ftu._sorted_items(params)
    with pytest.raises(ValueError, match="Can only traverse a flax Model instance"):
        ltu._get_params_dict([1])
    with pytest.raises(ValueError, match="Can only traverse a flax Model instance"):
        ftu._get_params_dict([1])
