"""lens.nnx.training.metrics: flax.nnx's behaviour, and lens's promises on bad input."""

import jax.numpy as jnp
import numpy as np
import pytest

from lens import nnx

LOGITS = jnp.array([[-1.0, 1.0], [-1.0, 1.0], [1.0, -1.0]])
LABELS = jnp.array([1, 0, 0])


def _values(metrics):
    return {k: np.asarray(v) for k, v in nnx.state(metrics).flat_state()}


def test_multimetric_update_is_all_or_nothing():
    metrics = nnx.MultiMetric(
        loss=nnx.metrics.Average("loss"), accuracy=nnx.metrics.Accuracy()
    )
    metrics.update(loss=jnp.array([1.0, 3.0]), logits=LOGITS, labels=LABELS)
    before = _values(metrics)
    # loss updates first; accuracy then fails on its labels' dtype
    with pytest.raises(ValueError, match="Expected labels.dtype==jnp.int32"):
        metrics.update(loss=jnp.array([5.0]), logits=LOGITS, labels=LABELS > 0)
    after = _values(metrics)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    assert float(metrics.compute()["loss"]) == 2.0


def test_multimetric_mask_per_metric():
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average(), acc=nnx.metrics.Accuracy())
    mask = jnp.array([True, True, False])
    metrics.update(
        values=jnp.array([1.0, 2.0, 9.0]),
        logits=LOGITS,
        labels=LABELS,
        mask={"loss": mask},
    )
    out = metrics.compute()
    assert float(out["loss"]) == 1.5  # masked
    assert float(out["acc"]) == pytest.approx(2 / 3)  # unmasked


@pytest.mark.parametrize(
    "make, error, first",
    [
        (
            lambda: nnx.metrics.Average().update(values=2.0, mask=jnp.ones(1)),
            ValueError,
            "If mask is provided, values should be a jax array",
        ),
        (
            lambda: nnx.metrics.Average("loss").update(values=1.0),
            TypeError,
            "Expected keyword argument 'loss'",
        ),
        (
            lambda: nnx.metrics.Accuracy(threshold=1),
            TypeError,
            "Expected threshold to be a float",
        ),
        (
            lambda: nnx.metrics.Accuracy().update(logits=LABELS, labels=LABELS),
            ValueError,
            "For multi-class classification, expected",
        ),
        (
            lambda: nnx.metrics.Accuracy(0.5).update(logits=LOGITS, labels=LABELS),
            ValueError,
            "For binary classification, expected",
        ),
        (lambda: nnx.MultiMetric(a=3), TypeError, "MultiMetric: a=3 is not a Metric"),
    ],
)
def test_errors_start_with_flax_first_sentence(make, error, first):
    with pytest.raises(error) as info:
        make()
    assert str(info.value).startswith(first)
    assert "\n" in str(info.value)  # then lens's how-to-fix line


def test_welford_matches_numpy():
    values = jnp.arange(10.0).reshape(5, 2)
    w = nnx.metrics.Welford()
    w.update(values=values[:2])
    w.update(values=values[2:])
    stats = w.compute()
    np.testing.assert_allclose(stats.mean, np.mean(values), rtol=1e-6)
    np.testing.assert_allclose(stats.standard_deviation, np.std(values), rtol=1e-6)


def test_split_returns_graphdef_and_state():
    acc = nnx.metrics.Accuracy()
    acc.update(logits=LOGITS, labels=LABELS)
    graphdef, state = acc.split()
    assert float(nnx.merge(graphdef, state).compute()) == pytest.approx(2 / 3)
