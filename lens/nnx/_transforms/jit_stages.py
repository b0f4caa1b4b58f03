"""``nnx.jit``'s ahead-of-time stages (flax.nnx's ``Lowered(lowered, jit_wrapped)``
and ``Compiled(compiled, jit_wrapped)``):
``f.lower(m, x).compile()`` is called as ``f`` is, with the objects themselves,
and their updates come back into them as after a ``f(m, x)`` call.
"""

from __future__ import annotations

from typing import Any

from lens._facades import show_at_flax_paths


class Stage:
    """What the stages of an ``nnx.jit`` function have in common (flax.nnx's
    ``Stage``): ``JitWrapped.trace`` gives a :class:`Traced`, its ``lower()`` a
    :class:`Lowered`, whose ``compile()`` gives a :class:`Compiled` called with the
    objects. ``in_tree``, ``in_avals`` and ``donate_argnums`` are those of the JAX
    stage inside."""

    args_info: Any  # a pytree of ArgInfo, the JAX stage's

    @property
    def _inner_obj(self) -> Any:
        """The JAX stage inside (``jax.stages.Traced``, ``Lowered`` or ``Compiled``)."""
        raise NotImplementedError(f"{type(self).__name__} holds no JAX stage")

    @property
    def in_tree(self) -> Any:
        """The JAX stage's input pytree structure."""
        return self._inner_obj.in_tree

    @property
    def in_avals(self) -> Any:
        """The JAX stage's abstract inputs."""
        return self._inner_obj.in_avals

    @property
    def donate_argnums(self) -> Any:
        """The JAX stage's donated argument positions."""
        return self._inner_obj.donate_argnums


class Lowered(Stage):
    """What ``JitWrapped.lower`` returns: ``jax.stages.Lowered`` of the function of
    the arguments' state (its ``as_text``, ``cost_analysis``, ... are JAX's), and
    ``compile()`` giving a :class:`Compiled` that takes the objects."""

    def __init__(self, lowered: Any, jit_wrapped: Any, bound: tuple[Any, ...] = ()):
        self.lowered = lowered
        self.jit_wrapped = jit_wrapped
        self.bound = bound  # jit_partial's bound arguments

    @property
    def _inner_obj(self) -> Any:
        return self.lowered

    def compile(self, *args: Any, **kwargs: Any) -> Compiled:
        compiled = self.lowered.compile(*args, **kwargs)
        return Compiled(compiled, self.jit_wrapped, self.bound)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lowered, name)


class Compiled(Stage):
    """A compiled ``nnx.jit`` function: call it with the arguments the jitted
    function takes (objects included); ``as_text``, ``cost_analysis``, ... are
    ``jax.stages.Compiled``'s."""

    def __init__(self, compiled: Any, jit_wrapped: Any, bound: tuple[Any, ...] = ()):
        self.compiled = compiled
        self.jit_wrapped = jit_wrapped
        self.bound = bound

    @property
    def _inner_obj(self) -> Any:
        return self.compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self.compiled

        def run(_statics: Any, donated: Any, kept: Any) -> Any:
            return compiled(donated, kept)  # the statics are compiled in

        return self.jit_wrapped.call_with(run, (*self.bound, *args), kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)


class Traced(Stage):
    """What ``JitWrapped.trace`` returns (flax.nnx's ``Traced(traced,
    jit_wrapped)``): ``jax.stages.Traced`` of the function of the arguments'
    state (its ``jaxpr``, ``out_info``, ... are JAX's), and ``lower()`` giving a
    :class:`Lowered` whose ``compile()`` takes the objects."""

    def __init__(self, traced: Any, jit_wrapped: Any, bound: tuple[Any, ...] = ()):
        self.traced = traced
        self.jit_wrapped = jit_wrapped
        self.bound = bound  # jit_partial's bound arguments

    @property
    def _inner_obj(self) -> Any:
        return self.traced

    @property
    def out_info(self) -> Any:
        return self.traced.out_info

    def lower(self, *, lowering_platforms: tuple[str, ...] | None = None) -> Lowered:
        """Lowers to compiler input, as ``jax.stages.Traced.lower``."""
        lowered = self.traced.lower(lowering_platforms=lowering_platforms)
        return Lowered(lowered, self.jit_wrapped, self.bound)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.traced, name)


class SimpleTraced(Traced):
    """flax.nnx's tree-mode ``SimpleTraced(traced, jit_wrapped)``: lens runs every
    mode through one wrapper, so it is a :class:`Traced`."""


class SimplePartialTraced(Traced):
    """flax.nnx's ``SimplePartialTraced(traced, jit_wrapped)`` (a
    ``jit_partial``'s trace): a :class:`Traced` whose compiled form takes the
    arguments after the bound ones."""


show_at_flax_paths(__name__)  # Flax's paths in reprs and pickles (lens/_facades.py)
