"""Early stopping on a metric (``lens.training.early_stopping``).

Example:
    >>> es = EarlyStopping(min_delta=0.0, patience=1)
    >>> for loss in [3.0, 2.0, 2.5, 2.6]:
    ...     es = es.update(loss)
    >>> es.should_stop, es.best_metric
    (True, 2.0)
"""

from __future__ import annotations

import math

from lens import struct

__all__ = ["EarlyStopping"]


class EarlyStopping(struct.PyTreeNode):
    """Stops when a (lower-is-better) metric has not improved for ``patience`` steps.

    Attributes:
      min_delta: the smallest decrease that counts as an improvement.
      patience: how many steps without improvement are tolerated.
      best_metric: the best value seen.
      patience_count: steps since the last improvement.
      should_stop: whether to stop.
      has_improved: whether the last update improved the metric.
    """

    min_delta: float = 0
    patience: int = 0
    best_metric: float = float("inf")
    patience_count: int = 0
    should_stop: bool = False
    has_improved: bool = False

    def reset(self) -> EarlyStopping:
        """The state before any update (same ``min_delta`` and ``patience``)."""
        return self.replace(
            best_metric=float("inf"),
            patience_count=0,
            should_stop=False,
            has_improved=False,
        )

    def update(self, metric: float) -> EarlyStopping:
        """The state after seeing ``metric``."""
        if math.isinf(self.best_metric) or self.best_metric - metric > self.min_delta:
            return self.replace(best_metric=metric, patience_count=0, has_improved=True)
        should_stop = self.patience_count >= self.patience or self.should_stop
        return self.replace(
            patience_count=self.patience_count + 1,
            should_stop=should_stop,
            has_improved=False,
        )
