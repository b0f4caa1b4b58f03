"""Pure nnx modules and Linen modules as submodules of a ``bridge.Module``
(flax.nnx's ``bridge.interop``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lens import nn as linen
from lens.nnx._graph.ops import state
from lens.nnx._graph.update import update
from lens.nnx._objects.module import Module
from lens.nnx._objects.rngs import Rngs
from lens.nnx._transforms.branches import eval_shape
from lens.nnx._transforms.jit import jit
from lens.nnx._variables.variable import RngState
from lens.nnx.bridge import module as bdg_module
from lens.nnx.bridge._context import auto_submodule_name
from lens.nnx.bridge.wrappers import ToNNX, set_initializing


def _running(fn_name: str) -> tuple[bdg_module.ModuleStackEntry, bdg_module.Module]:
    ctx = bdg_module.current_context()
    scope = None if ctx is None else vars(ctx.module).get("scope")
    if ctx is None or scope is None:
        raise ValueError(
            f"{fn_name}() only needed inside bridge Module\nCall it in setup() or "
            "a @bridge.compact method of a bridge.Module run by init/apply."
        )
    return ctx, ctx.module


def _attach(
    ctx: bdg_module.ModuleStackEntry, module: Any, name: str | None, cls: type
) -> None:
    """In a compact method the submodule is attached to the running module (in
    setup the caller assigns it)."""
    if ctx.in_compact:
        if name is None:
            name = auto_submodule_name(ctx, cls)
        setattr(ctx.module, name, module)


def nnx_in_bridge_mdl(
    factory: Callable[[Rngs], Module], name: str | None = None
) -> Module:
    """An nnx module made by ``factory(rngs)`` as a submodule of the running
    bridge module: built in ``init``; in ``apply`` built abstractly (its
    variables come from the applied ones, its rng state is made for real).

    Args:
      factory: makes the nnx module from an ``nnx.Rngs``.
      name: its attribute name in a ``@compact`` method (``<Class>_<n>`` when
        None); in ``setup`` assign it yourself.
    """
    ctx, parent = _running("nnx_in_bridge_mdl")
    rngs = vars(parent)["scope"].rngs
    if parent.is_initializing():
        module = factory(rngs)
    else:
        has_streams = bool(rngs.streams())
        module = eval_shape(factory, rngs if has_streams else Rngs(7), graph=True)
        if has_streams:

            @jit
            def rng_state(rngs: Rngs) -> Any:
                return state(factory(rngs), RngState, graph=True)

            update(module, rng_state(rngs))
    _attach(ctx, module, name, type(module))
    return module


def linen_in_bridge_mdl(linen_module: linen.Module, name: str | None = None) -> Module:
    """A Linen module (through :class:`ToNNX`) as a submodule of the running
    bridge module; ``name`` as in :func:`nnx_in_bridge_mdl`."""
    ctx, parent = _running("linen_in_bridge_mdl")
    module = ToNNX(linen_module, vars(parent)["scope"].rngs)
    set_initializing(module, parent.is_initializing())
    _attach(ctx, module, name, type(linen_module))
    return module
