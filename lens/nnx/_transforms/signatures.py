"""The function types flax.nnx's transform modules name (``GradFn``,
``VmapFn``, ...): callable Protocols for annotations, and the small aliases
(``AxisName``, ``Index``, ``Leaves``). lens runs every mode through one wrapper, so
the ``Simple*`` names (flax's tree-mode variants) are the same Protocols.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from lens._facades import show_at_flax_paths

AxisName = Hashable
Index = int
Leaves = list[Any]


# transforms.autodiff


class GradFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``GradFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleGradFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleGradFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleVjpFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleVjpFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleJvpFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleJvpFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleCustomVjpFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleCustomVjpFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleFwdFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleFwdFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleBwdFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleBwdFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class FwdFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``FwdFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class BwdFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``BwdFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleRematFn(Protocol):
    """A function as ``transforms.autodiff`` takes or returns it (flax.nnx's ``SimpleRematFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


# transforms.compilation


class JitFn(Protocol):
    """A function as ``transforms.compilation`` takes or returns it (flax.nnx's ``JitFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleJitFn(Protocol):
    """A function as ``transforms.compilation`` takes or returns it (flax.nnx's ``SimpleJitFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleJitPartialFn(Protocol):
    """A function as ``transforms.compilation`` takes or returns it (flax.nnx's ``SimpleJitPartialFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class ShardMapFn(Protocol):
    """A function as ``transforms.compilation`` takes or returns it (flax.nnx's ``ShardMapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleShardMapFn(Protocol):
    """A function as ``transforms.compilation`` takes or returns it (flax.nnx's ``SimpleShardMapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


# transforms.iteration


class AxisFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``AxisFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class VmapFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``VmapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleVmapFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimpleVmapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class PmapFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``PmapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimplePmapFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimplePmapFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class ScanFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``ScanFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleScanFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimpleScanFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class WhileLoopBodyFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``WhileLoopBodyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class WhileLoopCondFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``WhileLoopCondFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleWhileLoopBodyFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimpleWhileLoopBodyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleWhileLoopCondFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimpleWhileLoopCondFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class ForiLoopBodyFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``ForiLoopBodyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleForiLoopBodyFn(Protocol):
    """A function as ``transforms.iteration`` takes or returns it (flax.nnx's ``SimpleForiLoopBodyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


# transforms.transforms


class CheckifyFn(Protocol):
    """A function as ``transforms.transforms`` takes or returns it (flax.nnx's ``CheckifyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleCheckifyFn(Protocol):
    """A function as ``transforms.transforms`` takes or returns it (flax.nnx's ``SimpleCheckifyFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleCondFn(Protocol):
    """A function as ``transforms.transforms`` takes or returns it (flax.nnx's ``SimpleCondFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleEvalShapeFn(Protocol):
    """A function as ``transforms.transforms`` takes or returns it (flax.nnx's ``SimpleEvalShapeFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class SimpleMakeJaxprFn(Protocol):
    """A function as ``transforms.transforms`` takes or returns it (flax.nnx's ``SimpleMakeJaxprFn``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
