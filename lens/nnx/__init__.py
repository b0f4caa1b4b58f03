"""Eager modules with JAX-style transforms (``lens.nnx``).

Modules here are ordinary Python objects: built eagerly (``Linear(2, 3,
rngs=nnx.Rngs(0))`` holds its parameters), mutated in place, shared by reference.
``split``/``merge``/``state``/``update`` move between a module and its
:class:`State` (a pytree), and the transforms take modules as JAX transforms take
pytrees:

>>> import jax.numpy as jnp
>>> from lens import nnx
>>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
>>> grads = nnx.grad(lambda m, x: jnp.sum(m(x) ** 2))(model, jnp.ones((1, 2)))
>>> sorted(grads)
['bias', 'kernel']

``vmap``'s ``in_axes`` maps each module argument on its own axis, and the Lift types
refine that inside one module (``StateAxes``, ``DiffState``); ``split_rngs`` gives a
mapped call its own keys; every alias of one object must be lifted the same way.
"""

from typing import TYPE_CHECKING

from lens._lazy import lazy_exports

# The public names, each once, by home (one statement per module); at
# run time each loads on first use and ``__all__`` is these names (lens/_lazy.py),
# so `import lens.nnx` stays cheap.
if TYPE_CHECKING:
    # fmt: off
    # isort: off
    from lens.core.spmd import logical_axis_rules
    from lens.nn import (
        avg_pool, celu, combine_masks, elu, gelu, glu, hard_sigmoid, hard_silu,
        hard_swish, hard_tanh, leaky_relu, log_sigmoid, log_softmax, logsumexp,
        make_attention_mask, make_causal_mask, max_pool, min_pool, one_hot, pool, relu,
        relu6, selu, sigmoid, silu, soft_sign, softmax, softplus, standardize, swish,
        tanh,
    )
    from lens.nnx import (
        bridge, compat, extract, filterlib, graph, graphlib, helpers, ids, module, nn,
        proxy_caller, pytreelib, pytreelib as object, reprlib, rnglib, spmd, statelib,
        summary, training, transforms, traversals, variablelib, visualization,
    )
    from lens.nnx._graph.defs import GraphDef
    from lens.nnx._graph.graph_state import GraphState, PureState
    from lens.nnx._graph.mode import set_graph_mode, set_graph_updates
    from lens.nnx._graph.ops import (
        A, cached_partial, call, clone, find_duplicates, graphdef, iter_graph, map,
        merge, recursive_map, set_metadata, split, state, unpack, variables,
    )
    from lens.nnx._graph.update import pop, update
    from lens.nnx._graph.vars import as_pure, pure, vars_as, with_vars
    from lens.nnx._mirror.contexts import (
        current_update_context, flatten, merge_context, MergeContext, split_context,
        SplitContext, unflatten, update_context, UpdateContext,
    )
    from lens.nnx._mirror.extract_tree import prefix
    from lens.nnx._mirror.tree_states import from_tree, NodeStates, to_tree
    from lens.nnx._objects.containers import Dict, List, Sequential, TrainState
    from lens.nnx._objects.module import (
        capture, iter_children, iter_module_children, iter_modules, Module, view,
        view_info, with_attributes,
    )
    from lens.nnx._objects.object import (
        check_pytree, Data, data, dataclass, has_data, is_data, Object, Pytree,
        register_data_type, Static, static,
    )
    from lens.nnx._objects.rngs import (
        fork_rngs, reseed, restore_rngs, Rngs, RngStream, split_rngs, with_rngs,
    )
    from lens.nnx._transforms.autodiff import (
        checkpoint, grad, jvp, remat, value_and_grad, vjp,
    )
    from lens.nnx._transforms.branches import (
        checkify, cond, eval_shape, make_jaxpr, switch,
    )
    from lens.nnx._transforms.custom_gradients import custom_vjp, CustomVjp
    from lens.nnx._transforms.iteration import pmap, transform_metadata, vmap
    from lens.nnx._transforms.jit import jit, jit_partial
    from lens.nnx._transforms.loops import fori_loop, scan, while_loop
    from lens.nnx._transforms.scan_step import Carry
    from lens.nnx._transforms.sharding import shard_map, StateSharding
    from lens.nnx._transforms.specs import DiffState, StateAxes
    from lens.nnx._variables.defaults import (
        use_eager_sharding, using_eager_sharding, var_defaults,
    )
    from lens.nnx._variables.filters import (
        All, Any, Everything, Not, Nothing, OfType, PathContains, WithTag,
    )
    from lens.nnx._variables.hooks import VariableMetadata, with_metadata
    from lens.nnx._variables.names import (
        variable_name_from_type, variable_type_from_name,
    )
    from lens.nnx._variables.state import (
        filter_state, FlatState, from_flat_state, map_state, merge_state,
        replace_by_pure_dict, restore_int_paths, split_state, State, to_flat_state,
        to_pure_dict,
    )
    from lens.nnx._variables.variable import (
        BatchStat, Cache, Intermediate, OptState, Param, Perturbation,
        register_variable_name, RngCount, RngKey, RngState, Variable, VariableState,
    )
    from lens.nnx.bridge import wrappers
    from lens.nnx.nn import initializers
    from lens.nnx.nn.activations import identity, PReLU
    from lens.nnx.nn.attention import dot_product_attention, MultiHeadAttention
    from lens.nnx.nn.linear import (
        Conv, ConvTranspose, Einsum, Embed, Linear, LinearGeneral,
    )
    from lens.nnx.nn.lora import LoRA, LoRALinear, LoRAParam
    from lens.nnx.nn.normalization import (
        BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm, SpectralNorm,
        WeightNorm,
    )
    from lens.nnx.nn.recurrent import (
        Bidirectional, GRUCell, LSTMCell, OptimizedLSTMCell, RNN, RNNCellBase,
        SimpleCell,
    )
    from lens.nnx.nn.stochastic import Dropout
    from lens.nnx.proxy_caller import ApplyCaller
    from lens.nnx.spmd import (
        abstract_with_sharding, as_abstract, get_abstract_model, get_named_sharding,
        get_partition_spec, PARTITION_NAME, with_partitioning,
    )
    from lens.nnx.summary import tabulate
    from lens.nnx.training import metrics, optimizer
    from lens.nnx.training.ema import EMA
    from lens.nnx.training.metrics import Metric, MultiMetric
    from lens.nnx.training.optimizer import (
        ModelAndOptimizer, OptArray, Optimizer, OptVariable, to_opt_state,
    )
    from lens.nnx.visualization import display
    from lens.typing import Initializer
    # isort: on
    # fmt: on


# Hidden from type checkers, which would take any name for a lazy one.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
