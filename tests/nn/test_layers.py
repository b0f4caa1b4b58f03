"""Standard layers: options off the default path, and their jitted arithmetic.

Dense, DenseGeneral and the normalisation layers run their arithmetic as one jitted
function per shape; these tests pin that it behaves as inline code would: under
``jax.disable_jit``, ``vmap`` and ``grad``, with a user ``dot_general`` and with
unhashable options.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lens.nn as nn


def _reference_layer_norm(x, eps=1e-6):
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def test_two_pass_variance_is_accurate_where_the_fast_one_is_not():
    # A large mean and a small spread: E[x^2] - E[x]^2 cancels catastrophically in
    # float32, the two-pass variance does not.
    x = 1e4 + jax.random.normal(jax.random.key(0), (4, 64))
    want = _reference_layer_norm(x)
    slow = nn.LayerNorm(use_fast_variance=False)
    fast = nn.LayerNorm()
    v = slow.init(jax.random.key(1), x)
    err_slow = np.abs(np.asarray(slow.apply(v, x)) - want).max()
    err_fast = np.abs(np.asarray(fast.apply(v, x)) - want).max()
    assert err_slow < 1e-2  # float32 rounding of the mean itself
    assert err_fast > 100 * err_slow


@pytest.mark.parametrize(
    "layer",
    [
        lambda: nn.Dense(3),
        lambda: nn.DenseGeneral((2, 3), axis=-1),
        lambda: nn.LayerNorm(),
        lambda: nn.RMSNorm(),
        lambda: nn.GroupNorm(num_groups=2),
    ],
)
def test_same_result_with_jit_disabled_under_vmap_and_under_grad(layer):
    x = jax.random.normal(jax.random.key(0), (5, 4))
    m = layer()
    v = m.init(jax.random.key(1), x)
    y = m.apply(v, x)
    with jax.disable_jit():
        np.testing.assert_allclose(m.apply(v, x), y, rtol=1e-6, atol=1e-6)
    per_row = jax.vmap(lambda r: m.apply(v, r[None])[0])(x)
    np.testing.assert_allclose(per_row, y, rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda v: jnp.sum(m.apply(v, x) ** 2))(v)
    assert jax.tree.structure(g) == jax.tree.structure(v)
    assert all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in jax.tree.leaves(g))


def test_dense_calls_a_user_dot_general():
    calls = []

    def dot_general(lhs, rhs, dims, precision=None):
        calls.append((lhs.shape, rhs.shape))
        return jax.lax.dot_general(lhs, rhs, dims, precision=precision)

    x = jnp.ones((2, 3))
    m = nn.Dense(4, dot_general=dot_general)
    v = m.init(jax.random.key(0), x)
    calls.clear()
    y = m.apply(v, x)
    assert calls == [((2, 3), (3, 4))]
    np.testing.assert_allclose(
        y, x @ v["params"]["kernel"] + v["params"]["bias"], rtol=1e-6
    )


def test_a_list_of_precisions_is_accepted():
    x = jnp.ones((2, 3))
    m = nn.Dense(4, precision=["highest", "highest"])
    y = m.apply(m.init(jax.random.key(0), x), x)
    assert y.shape == (2, 4)


def test_dense_general_bias_broadcasts_over_batch_and_free_axes():
    x = jax.random.normal(jax.random.key(0), (2, 3, 4))
    m = nn.DenseGeneral((5,), axis=-1, batch_dims=(0,))
    v = m.init(jax.random.key(1), x)
    kernel, bias = v["params"]["kernel"], v["params"]["bias"]
    assert kernel.shape == (2, 4, 5) and bias.shape == (2, 5)
    bias = bias + jnp.arange(10.0).reshape(2, 5)  # a bias that differs per batch row
    y = m.apply({"params": {"kernel": kernel, "bias": bias}}, x)
    want = jnp.einsum("bfi,bio->bfo", x, kernel) + bias[:, None, :]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_bfloat16_compute_keeps_float32_params():
    x = jnp.ones((2, 3))
    m = nn.Dense(4, dtype=jnp.bfloat16)
    v = m.init(jax.random.key(0), x)
    assert v["params"]["kernel"].dtype == jnp.float32
    assert m.apply(v, x).dtype == jnp.bfloat16


def test_layer_norm_over_a_mapped_axis_still_averages_across_it():
    # With axis_name the statistics cross the vmapped axis (no jitted shortcut).
    x = jax.random.normal(jax.random.key(0), (4, 3, 6))
    m = nn.LayerNorm(axis_name="batch", use_scale=False, use_bias=False)
    # Like Flax, the axis must be bound at init too.
    v = jax.vmap(lambda r: m.init(jax.random.key(1), r), axis_name="batch")(x)
    v = jax.tree.map(lambda a: a[0], v)
    y = jax.vmap(lambda r: m.apply(v, r), axis_name="batch")(x)
    flat = np.asarray(x).transpose(1, 0, 2).reshape(3, -1)
    mean = flat.mean(-1)[None, :, None]
    var = flat.var(-1)[None, :, None]
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-6), atol=1e-5)


@pytest.mark.parametrize("name", ["zeros", "ones"])
@pytest.mark.parametrize("dtype", [None, jnp.float32, jnp.bfloat16, "int32"])
@pytest.mark.parametrize("shape", [3, (2, 3), [4]])
def test_constant_initializers_match_jax_silently(name, dtype, shape):
    import warnings

    from lens.nn import initializers

    ours, theirs = getattr(initializers, name), getattr(jax.nn.initializers, name)
    args = (jax.random.key(0), shape) + (() if dtype is None else (dtype,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default float_ must not warn about x64
        a = ours(*args)
    b = theirs(*args)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
