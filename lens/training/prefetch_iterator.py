"""A background-thread prefetching iterator (``lens.training.prefetch_iterator``).

Deprecated in Flax (use your data pipeline's prefetch); kept for ported code.

Example:
    >>> import warnings
    >>> warnings.simplefilter("ignore", DeprecationWarning)
    >>> it = PrefetchIterator(iter(range(3)), buffer_size=2)
    >>> list(it)
    [0, 1, 2]
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["PrefetchIterator"]


class PrefetchIterator:
    """Reads ``data_iter`` ahead, up to ``buffer_size`` items, in a daemon thread.

    An exception of the underlying iterator is raised by ``next`` once the
    buffered items are consumed. :meth:`close` stops the thread.
    """

    def __init__(self, data_iter: Iterator[Any], buffer_size: int = 1):
        warnings.warn(
            "PrefetchIterator is deprecated. Use the standard `tf.data` prefetch "
            "method (or your data loader's) instead",
            DeprecationWarning,
            stacklevel=2,
        )
        self._data_iter = data_iter
        self.buffer_size = buffer_size
        self._cond = threading.Condition()
        self._buffer: list[Any] = []
        self._active = True
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._prefetch_loop, daemon=True)
        self._thread.start()

    def __iter__(self) -> PrefetchIterator:
        return self

    def __next__(self) -> Any:
        with self._cond:
            self._cond.wait_for(lambda: self._buffer or not self._active)
            if self._buffer:
                item = self._buffer.pop(0)
                self._cond.notify_all()
                return item
            if self._error is not None:
                raise self._error
            raise StopIteration()

    def close(self) -> None:
        """Stops prefetching."""
        with self._cond:
            self._active = False
            self._cond.notify_all()

    def _prefetch_loop(self) -> None:
        def room() -> bool:
            return len(self._buffer) < self.buffer_size or not self._active

        while True:
            try:
                item = next(self._data_iter)
            except Exception as e:  # noqa: BLE001 - handed to the consumer
                with self._cond:
                    self._error = None if isinstance(e, StopIteration) else e
                    self._active = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._buffer.append(item)
                self._cond.notify_all()
                self._cond.wait_for(room)
                if not self._active:
                    return
