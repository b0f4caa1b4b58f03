"""Metrics as eager objects: ``update`` in place (inside ``nnx.jit`` too, where the
updates come back out), ``compute`` the value, ``reset`` to start over.

>>> import jax.numpy as jnp
>>> from lens import nnx
>>> m = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
>>> m.update(logits=jnp.array([[0.1, 0.9], [0.8, 0.2]]), labels=jnp.array([1, 1]), loss=2.0)
>>> {k: float(v) for k, v in m.compute().items()}
{'accuracy': 0.5, 'loss': 2.0}
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lens import struct
from lens.nnx._graph import ops as graph_ops
from lens.nnx._objects.object import Pytree
from lens.nnx._variables import state as statelib
from lens.nnx._variables.variable import Variable


class MetricState(Variable):
    """The state of a metric (totals, counts, running moments)."""


class Metric(Pytree):
    """Base class: subclasses define ``reset``, ``update`` and ``compute``."""

    def reset(self) -> None:
        """Resets the metric in place."""
        raise NotImplementedError(f"{type(self).__name__}.reset")

    def update(self, **kwargs: Any) -> None:
        """Updates the metric in place."""
        raise NotImplementedError(f"{type(self).__name__}.update")

    def compute(self) -> Any:
        """The metric's value."""
        raise NotImplementedError(f"{type(self).__name__}.compute")

    def split(self, *filters: Any) -> Any:
        """``nnx.split(self, *filters)``: the graph definition and the state."""
        return graph_ops.split(self, *filters)


def _values(metric: Any, kwargs: dict[str, Any]) -> Any:
    if metric.argname not in kwargs:
        raise TypeError(
            f"Expected keyword argument '{metric.argname}'\n"
            f"{type(metric).__name__}.update got {sorted(kwargs)}: pass "
            f"{metric.argname}=..., or build the metric with argname= the name "
            "you update it with."
        )
    return kwargs[metric.argname]


class Average(Metric):
    """The mean of every value passed as ``argname`` (default ``values``) so far.

    Example:
        >>> import jax.numpy as jnp
        >>> from lens import nnx
        >>> m = nnx.metrics.Average()
        >>> m.update(values=jnp.array([1, 2, 3, 4]))
        >>> m.compute()
        Array(2.5, dtype=float32)
    """

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        """Sets the total and the count back to zero."""
        self.total[...] = jnp.array(0, dtype=jnp.float32)
        self.count[...] = jnp.array(0, dtype=jnp.int32)

    def update(self, mask: jax.Array | None = None, **kwargs: Any) -> None:
        """Adds ``kwargs[argname]`` (where ``mask`` is true, when given)."""
        values = _values(self, kwargs)
        if isinstance(values, int | float):
            if mask is not None:
                raise ValueError(
                    f"If mask is provided, {self.argname} should be a jax array\n"
                    f"Got the number {values!r}: pass jnp.asarray(...) to mask it, "
                    "or drop the mask."
                )
            self.total[...] += values
            self.count[...] += 1
        elif mask is None:
            self.total[...] += values.sum()
            self.count[...] += values.size
        else:
            self.total[...] += (values * mask.astype(values.dtype)).sum()
            self.count[...] += mask.sum().astype(self.count.dtype)

    def compute(self) -> jax.Array:
        """The mean so far (NaN before any update)."""
        return self.total[...] / self.count[...]


@struct.dataclass
class Statistics:
    """What :class:`Welford` computes."""

    mean: jax.Array
    standard_error_of_mean: jax.Array
    standard_deviation: jax.Array


class Welford(Metric):
    """Running mean and variance (Welford's algorithm) of ``argname``'s values."""

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))
        self.mean = MetricState(jnp.array(0, dtype=jnp.float32))
        self.m2 = MetricState(jnp.array(0, dtype=jnp.float32))

    def reset(self) -> None:
        """Forgets every value seen."""
        self.count[...] = jnp.array(0, dtype=jnp.int32)
        self.mean[...] = jnp.array(0, dtype=jnp.float32)
        self.m2[...] = jnp.array(0, dtype=jnp.float32)

    def update(self, **kwargs: Any) -> None:
        """Merges the batch ``kwargs[argname]`` into the running moments."""
        values = _values(self, kwargs)
        scalar = isinstance(values, int | float)
        count = 1 if scalar else values.size
        before = self.count[...]
        self.count[...] += count
        delta = (values if scalar else values.mean()) - self.mean[...]
        self.mean[...] += delta * count / self.count[...]
        m2 = 0.0 if scalar else values.var() * count
        self.m2[...] += m2 + delta * delta * count * before / self.count[...]

    def compute(self) -> Statistics:
        """The mean, its standard error and the standard deviation."""
        variance = self.m2[...] / self.count[...]
        standard_deviation = variance**0.5
        return Statistics(
            mean=self.mean[...],
            standard_error_of_mean=standard_deviation / (self.count[...] ** 0.5),
            standard_deviation=standard_deviation,
        )


class Accuracy(Average):
    """The fraction of ``argmax(logits) == labels``; with ``threshold`` (binary
    classification), of ``(logits >= threshold) == (labels > 0)``."""

    def __init__(self, threshold: float | None = None, *args: Any, **kwargs: Any):
        if threshold is not None and not isinstance(threshold, float):
            raise TypeError(
                f"Expected threshold to be a float, got {type(threshold)}\n"
                f"Give Accuracy(threshold={float(threshold)!r}) for a threshold "
                "(binary classification), or leave it out (multi-class)."
            )
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def update(  # type: ignore[override]
        self, *, logits: jax.Array, labels: jax.Array, mask: Any = None, **_: Any
    ) -> None:
        """Adds the batch's correct predictions (where ``mask``, when given)."""
        self._check_shapes(logits, labels)
        if labels.dtype in (jnp.int64, np.int32, np.int64):
            labels = jnp.astype(labels, jnp.int32)
        elif labels.dtype != jnp.int32:
            raise ValueError(
                f"Expected labels.dtype==jnp.int32, got {labels.dtype}\n"
                "Accuracy compares integer class ids: pass labels.astype(jnp.int32)."
            )
        if self.threshold is not None:
            correct = (logits >= self.threshold) == (labels > 0)
        else:
            correct = logits.argmax(axis=-1) == labels
        super().update(values=correct, mask=mask)

    def _check_shapes(self, logits: jax.Array, labels: jax.Array) -> None:
        if self.threshold is not None and logits.ndim != labels.ndim:
            raise ValueError(
                "For binary classification, expected logits.ndim==labels.ndim, got "
                f"{logits.ndim} and {labels.ndim}\n"
                f"logits {logits.shape}, labels {labels.shape}: give one logit per "
                "label, or leave threshold out for multi-class logits."
            )
        if self.threshold is None and logits.ndim != labels.ndim + 1:
            raise ValueError(
                "For multi-class classification, expected "
                f"logits.ndim==labels.ndim+1, got {logits.ndim} and {labels.ndim}\n"
                f"logits {logits.shape}, labels {labels.shape}: logits need one more "
                "axis (the classes), or use Accuracy(threshold=0.5) for binary logits."
            )


_METHODS = ("reset", "update", "compute")


class MultiMetric(Metric):
    """Several metrics updated together: ``update(**kwargs)`` passes every keyword
    to each metric; ``compute()`` returns ``{name: value}``.

    ``mask`` is passed to every metric, or, as a dict, ``mask[name]`` to the metric
    ``name`` only. An update is all or nothing: if one metric's update raises, every
    metric keeps the state it had before the call.
    """

    def __init__(self, **metrics: Metric):
        for name, metric in metrics.items():
            if not all(callable(getattr(metric, m, None)) for m in _METHODS):
                raise TypeError(
                    f"MultiMetric: {name}={metric!r} is not a Metric (it lacks "
                    "reset, update or compute).\nGive nnx.metrics.Average(), "
                    "nnx.metrics.Accuracy() or a Metric subclass."
                )
        self._metric_names = tuple(metrics)
        for name, metric in metrics.items():
            setattr(self, name, metric)

    def reset(self) -> None:
        """Resets every metric."""
        for name in self._metric_names:
            getattr(self, name).reset()

    def update(self, **updates: Any) -> None:
        """Updates every metric with ``updates`` (all or nothing)."""
        mask = updates.pop("mask", None)
        saved = [
            (variable, variable.get_value())
            for _, variable in statelib.to_flat_state(graph_ops.state(self))
        ]
        try:
            for name in self._metric_names:
                metric_mask = mask.get(name) if isinstance(mask, dict) else mask
                extra = {} if metric_mask is None else {"mask": metric_mask}
                getattr(self, name).update(**(updates | extra))
        except BaseException:
            for variable, value in saved:
                variable.set_value(value)
            raise

    def compute(self) -> dict[str, Any]:
        """``{name: metric.compute()}`` in the order the metrics were given."""
        return {name: getattr(self, name).compute() for name in self._metric_names}
