"""The type names flax.nnx's ``rnglib`` declares (re-exported there): what a
stream seed, a split pattern, a keyless initializer and a stream backup are, and
the ``NotKey`` filter (RNG state other than keys: the counters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ParamSpec, Protocol, TypeAlias, Union, runtime_checkable

import jax

from lens._facades import show_at_flax_paths
from lens.nnx._variables import filters as filterlib
from lens.nnx._variables.variable import RngKey, RngState

Counts = list[int]
AxesValue = Union[int, None]  # noqa: UP007 - a runtime alias, as flax's
SplitPattern = Union[AxesValue, tuple[AxesValue, ...]]  # noqa: UP007
OutShardingType: TypeAlias = (
    jax.sharding.NamedSharding | jax.sharding.PartitionSpec | None
)
Fargs = ParamSpec("Fargs")
RngValue = Union[int, jax.Array]  # noqa: UP007 - a seed: an int or a key

# (stream, key) or (stream, key, count): what split_rngs/fork_rngs replaced.
StreamBackup = tuple[Any, jax.Array, jax.Array] | tuple[Any, jax.Array]

# RNG state that is not a key (the streams' counters).
NotKey = filterlib.All(RngState, filterlib.Not(RngKey))


@runtime_checkable
class KeylessInitializer(Protocol):
    """An initializer whose key is already bound: ``rngs.params.lecun_normal()``
    returns one, called with ``(shape, dtype=None, out_sharding=None)``."""

    def __call__(
        self,
        shape: Sequence[int],
        dtype: Any | None = None,
        out_sharding: OutShardingType = None,
    ) -> jax.Array: ...


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
