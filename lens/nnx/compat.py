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

from lens.nnx import spmd
from lens.nnx._graph import ops as graph_ops
from lens.nnx._mirror.contexts import flatten as _flatten
from lens.nnx._objects import module
from lens.nnx._objects import rngs as rnglib
from lens.nnx._transforms import autodiff, custom_gradients, iteration, loops, sharding
from lens.nnx._transforms import branches as transforms
from lens.nnx._transforms import jit as compilation


def _graph_mode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with ``graph=True`` (and ``graph_updates=True`` where it takes it)."""
    params = inspect.signature(fn).parameters
    flags = {k: True for k in ("graph", "graph_updates") if k in params}
    return functools.partial(fn, **flags)


# graphlib
split = _graph_mode(graph_ops.split)
state = _graph_mode(graph_ops.state)
clone = _graph_mode(graph_ops.clone)
graphdef = _graph_mode(graph_ops.graphdef)
flatten = _graph_mode(_flatten)
iter_graph = _graph_mode(graph_ops.iter_graph)
recursive_map = _graph_mode(graph_ops.recursive_map)
cached_partial = _graph_mode(graph_ops.cached_partial)

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
