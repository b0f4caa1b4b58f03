"""flax.nnx's ``compat``: the graph API and the transforms with ``graph=True`` (and
``graph_updates=True``) as their default, whatever ``set_graph_mode`` says.

Code written for flax.nnx's graph mode ports unchanged::

    graphdef, state = nnx.compat.split(model)

    @nnx.compat.jit
    def train_step(model, optimizer, x, y): ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from lens.nnx import graphlib, module, rnglib, spmd
from lens.nnx._transforms import custom_gradients, loops, sharding
from lens.nnx.transforms import autodiff, compilation, iteration, transforms


def _graph_mode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with ``graph=True`` (and ``graph_updates=True`` where it takes it)."""
    params = inspect.signature(fn).parameters
    flags = {k: True for k in ("graph", "graph_updates") if k in params}
    return functools.partial(fn, **flags)


# graphlib
split = _graph_mode(graphlib.split)
state = _graph_mode(graphlib.state)
clone = _graph_mode(graphlib.clone)
graphdef = _graph_mode(graphlib.graphdef)
flatten = _graph_mode(graphlib.flatten)
iter_graph = _graph_mode(graphlib.iter_graph)
recursive_map = _graph_mode(graphlib.recursive_map)
cached_partial = _graph_mode(graphlib.cached_partial)

# module
view = _graph_mode(module.view)
view_info = _graph_mode(module.view_info)
iter_modules = _graph_mode(module.iter_modules)
iter_children = _graph_mode(module.iter_children)

# rnglib
split_rngs = _graph_mode(rnglib.split_rngs)
fork_rngs = _graph_mode(rnglib.fork_rngs)
reseed = _graph_mode(rnglib.reseed)

# transforms
jit = _graph_mode(compilation.jit)
shard_map = _graph_mode(sharding.shard_map)
grad = _graph_mode(autodiff.grad)
value_and_grad = _graph_mode(autodiff.value_and_grad)
custom_vjp = _graph_mode(custom_gradients.custom_vjp)
vjp = _graph_mode(autodiff.vjp)
jvp = _graph_mode(autodiff.jvp)
remat = _graph_mode(autodiff.remat)
vmap = _graph_mode(iteration.vmap)
pmap = _graph_mode(iteration.pmap)
scan = _graph_mode(loops.scan)
while_loop = _graph_mode(loops.while_loop)
fori_loop = _graph_mode(loops.fori_loop)
eval_shape = _graph_mode(transforms.eval_shape)
cond = _graph_mode(transforms.cond)
switch = _graph_mode(transforms.switch)
checkify = _graph_mode(transforms.checkify)
get_abstract_model = _graph_mode(spmd.get_abstract_model)
