"""``Sequential``: apply layers one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lens.nn._module import Module


class Sequential(Module):
    """Applies ``layers`` in order; a tuple output is splatted, a dict passed as kwargs.

    Submodules are named ``layers_0``, ``layers_1``, ...
    """

    layers: Sequence[Callable[..., Any]]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the layers."""
        if not self.layers:
            raise ValueError(
                f"Empty Sequential module {self.name or ''}: give it at least one layer."
            )
        out = self.layers[0](*args, **kwargs)
        for layer in self.layers[1:]:
            if isinstance(out, tuple):
                out = layer(*out)
            elif isinstance(out, dict):
                out = layer(**out)
            else:
                out = layer(out)
        return out
