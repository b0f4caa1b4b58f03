"""``Sequential``: apply layers one after the other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lens._facades import show_at_flax_paths
from lens.nn._module import Module
from lens.nn._module_support import compact


class Sequential(Module):
    """Applies ``layers`` in order; a tuple output is splatted, a dict passed as kwargs.

    ``__call__`` is ``@compact``, so a layer may be a function that builds a module
    inline (``lambda x: nn.Dense(x.shape[-1])(x)``). Submodules given in ``layers``
    are named ``layers_0``, ``layers_1``, ...

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from lens import nn
        >>> mlp = Sequential([nn.Dense(4), nn.relu, nn.Dense(2)])
        >>> variables = mlp.init(jax.random.key(0), jnp.ones((1, 3)))
        >>> sorted(variables["params"])
        ['layers_0', 'layers_2']

    Raises:
      ValueError: if ``layers`` is not a sequence.
    """

    layers: Sequence[Callable[..., Any]]

    def __post_init__(self) -> None:
        if not isinstance(self.layers, Sequence):
            raise ValueError(
                f"'layers' must be a sequence, got '{type(self.layers).__name__}'.\n"
                "Pass a list of layers: Sequential([nn.Dense(4), nn.relu])."
            )
        super().__post_init__()

    @compact
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the layers."""
        if not self.layers:
            raise ValueError(
                f"Empty Sequential module {self.name}.\nGive it at least one layer."
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


show_at_flax_paths(__name__)
