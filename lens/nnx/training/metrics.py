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

from lens import struct
from lens.nnx.pytreelib import Object
from lens.nnx.variablelib import Variable


class MetricState(Variable):
    """The state of a metric (totals, counts, running moments)."""


class Metric(Object):
    """Base class: subclasses define ``reset``, ``update`` and ``compute``."""

    def reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.reset")

    def update(self, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__}.update")

    def compute(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.compute")


def _argument(metric: Metric, kwargs: dict[str, Any], name: str) -> Any:
    if name not in kwargs:
        raise TypeError(
            f"{type(metric).__name__}.update needs the keyword argument {name!r} "
            f"(got {sorted(kwargs)}); pass it, or build the metric with "
            f"argname= the name you update it with."
        )
    return kwargs[name]


class Average(Metric):
    """The mean of every value passed as ``argname`` (default ``values``) so far."""

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        self.total.value = jnp.array(0, dtype=jnp.float32)
        self.count.value = jnp.array(0, dtype=jnp.int32)

    def update(self, *, mask: Any = None, **kwargs: Any) -> None:
        values = jnp.asarray(_argument(self, kwargs, self.argname), jnp.float32)
        if mask is not None:
            mask = jnp.broadcast_to(jnp.asarray(mask, bool), values.shape)
            total = jnp.sum(jnp.where(mask, values, 0.0))
            count = jnp.sum(mask, dtype=jnp.int32)
        else:
            total = jnp.sum(values)
            count = jnp.array(values.size, dtype=jnp.int32)
        self.total.value = self.total.value + total
        self.count.value = self.count.value + count

    def compute(self) -> jax.Array:
        return self.total.value / self.count.value


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
        self.count.value = jnp.array(0, dtype=jnp.int32)
        self.mean.value = jnp.array(0, dtype=jnp.float32)
        self.m2.value = jnp.array(0, dtype=jnp.float32)

    def update(self, **kwargs: Any) -> None:
        values = jnp.asarray(_argument(self, kwargs, self.argname), jnp.float32)
        values = values.reshape(-1)
        n_b = values.size
        mean_b = jnp.mean(values) if n_b else jnp.float32(0)
        m2_b = jnp.sum((values - mean_b) ** 2)
        n_a = self.count.value
        n = n_a + n_b
        delta = mean_b - self.mean.value
        safe_n = jnp.maximum(n, 1)
        self.mean.value = self.mean.value + delta * n_b / safe_n
        self.m2.value = self.m2.value + m2_b + delta**2 * n_a * n_b / safe_n
        self.count.value = n

    def compute(self) -> Statistics:
        var = self.m2.value / self.count.value
        std = jnp.sqrt(var)
        return Statistics(self.mean.value, std / jnp.sqrt(self.count.value), std)


class Accuracy(Average):
    """The fraction of ``argmax(logits) == labels`` (with ``threshold``, of
    ``(logits > threshold) == labels`` for binary logits)."""

    def __init__(self, threshold: float | None = None, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.threshold = threshold

    def update(  # type: ignore[override]
        self, *, logits: Any, labels: Any, mask: Any = None, **_: Any
    ) -> None:
        logits, labels = jnp.asarray(logits), jnp.asarray(labels)
        if self.threshold is not None:
            pred = (logits > self.threshold).astype(labels.dtype)
            if pred.shape != labels.shape:
                raise ValueError(
                    f"Accuracy(threshold=...): logits {pred.shape} and labels "
                    f"{labels.shape} must have the same shape."
                )
        else:
            if logits.ndim != labels.ndim + 1:
                raise ValueError(
                    f"Accuracy: logits must have one more axis than labels (got "
                    f"logits {logits.shape}, labels {labels.shape}); for binary "
                    "logits give Accuracy(threshold=...)."
                )
            if not jnp.issubdtype(labels.dtype, jnp.integer):
                raise TypeError(
                    f"Accuracy: labels must be integers, got {labels.dtype}."
                )
            pred = jnp.argmax(logits, axis=-1)
        super().update(values=(pred == labels), mask=mask)


class MultiMetric(Metric):
    """Several metrics updated together: ``update(**kwargs)`` passes every keyword
    to each metric; ``compute()`` returns ``{name: value}``."""

    def __init__(self, **metrics: Metric):
        for name, metric in metrics.items():
            if not isinstance(metric, Metric):
                raise TypeError(f"MultiMetric: {name}={metric!r} is not a Metric.")
            setattr(self, name, metric)
        self._metric_names = tuple(metrics)

    def _metrics(self) -> dict[str, Metric]:
        return {n: getattr(self, n) for n in self._metric_names}

    def reset(self) -> None:
        for m in self._metrics().values():
            m.reset()

    def update(self, **updates: Any) -> None:
        for m in self._metrics().values():
            m.update(**updates)

    def compute(self) -> dict[str, Any]:
        return {n: m.compute() for n, m in self._metrics().items()}
