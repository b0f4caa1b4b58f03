"""lens.core.axes_scan, checked against flax.core.axes_scan on the same bodies."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lens import errors
from lens.core import axes_scan
from tests.helpers import assert_tree_allclose

faxes = pytest.importorskip("flax.core.axes_scan")


def _both(body, *call_args, **scan_kwargs):
    def run(mod):
        kw = dict(scan_kwargs)
        for key in ("in_axes", "out_axes"):
            kw[key] = jax.tree_util.tree_map(
                lambda a: mod.broadcast if a is axes_scan.broadcast else a,
                kw[key],
                is_leaf=lambda a: a is axes_scan.broadcast,
            )
        return mod.scan(body, **kw)(*call_args)

    return run(axes_scan), run(faxes)


def test_scanned_and_broadcast_arguments_match_flax():
    def body(b, c, x, w):
        return b, c + x.sum() * w, (x * w, c)

    xs = jnp.arange(12.0).reshape(3, 4)
    ours, theirs = _both(
        body, 1.0, 0.0, xs, 2.0, in_axes=(1, axes_scan.broadcast), out_axes=(1, 0)
    )
    assert_tree_allclose(ours, theirs)
    assert ours[2][0].shape == (3, 4)  # stacked back on axis 1


@pytest.mark.parametrize("reverse", [False, True])
def test_reverse_and_unroll_match_flax(reverse):
    def body(b, c, x):
        return b, c * 2 + x, c

    xs = jnp.arange(5.0)
    ours, theirs = _both(
        body, None, 1.0, xs, in_axes=0, out_axes=0, reverse=reverse, unroll=2
    )
    assert_tree_allclose(ours, theirs)


def test_broadcast_out_is_computed_once_before_the_loop():
    # broadcast_out is computed from broadcast_in before the loop; every
    # iteration reads it; a broadcast output is computed once, not stacked.
    def body(b, c, x):
        return b + 1.0, c + b * x, (x, b * 3)

    xs = jnp.arange(4.0)
    ours, theirs = _both(
        body, 2.0, 0.0, xs, in_axes=0, out_axes=(0, axes_scan.broadcast)
    )
    assert_tree_allclose(ours, theirs)
    b, c, (ys, once) = ours
    assert float(b) == 3.0 and float(c) == 3.0 * xs.sum()
    assert np.shape(once) == ()


def test_length_without_scanned_arguments_matches_flax():
    def body(b, c):
        return b, c + 1, c

    ours, theirs = _both(body, None, 0, in_axes=(), out_axes=0, length=3)
    assert_tree_allclose(ours, theirs)
    assert ours[2].tolist() == [0, 1, 2]


def test_broadcast_out_that_depends_on_the_loop_is_an_error():
    def body(b, c, x):
        return x * 2, c, x

    with pytest.raises(errors.LoopBroadcastDependenceError):
        axes_scan.scan(body, in_axes=0, out_axes=0)(None, 0.0, jnp.arange(3.0))
    # without the check the first iteration's value is kept
    b, _, _ = axes_scan.scan(
        body, in_axes=0, out_axes=0, check_constancy_invariants=False
    )(None, 0.0, jnp.arange(1.0, 4.0))
    assert float(b) == 2.0


def test_inconsistent_or_unknown_lengths_are_errors():
    body = lambda b, c, *xs: (b, c, ())  # noqa: E731
    loop = axes_scan.scan(body, in_axes=0, out_axes=0)
    with pytest.raises(ValueError, match="inconsistent scan lengths"):
        loop(None, 0, jnp.zeros(3), jnp.zeros(4))
    with pytest.raises(ValueError, match="Pass length=N"):
        axes_scan.scan(body, in_axes=(), out_axes=0)(None, 0)


def test_build_shaped_array_matches_flax():
    x = jnp.ones((3, 4), jnp.bfloat16)
    for batch_dim in (False, True):
        ours = axes_scan.build_shaped_array(x, batch_dim)
        theirs = faxes.build_shaped_array(x, batch_dim)
        assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)
    assert axes_scan.build_shaped_array(x, True).shape == (4,)
