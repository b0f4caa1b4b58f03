"""The table of facades: each module at one of Flax's paths whose names live elsewhere.

lens answers at Flax's module paths (``flax.nnx.variablelib``, ``flax.linen.module``,
``flax.core.scope``...) so that a port is an import change, but its code lives where
its idea is: the object graph in ``lens/nnx/_graph``, variables and state in
``lens/nnx/_variables``, objects, modules and Rngs in ``lens/nnx/_objects``, the
transform recipe in ``lens/nnx/_transforms``, what exists only for Flax's API in
``lens/nnx/_mirror``, Linen's modules in ``lens/nn/_*.py``, the core in
``lens/core/_*.py``. Each facade module is three lines: its docstring names its
homes, and :func:`lens._lazy.facade_exports` serves the names below, each loaded
from its home on first use. This table is the one list of what each path
re-exports; tests/test_facades.py checks that every name resolves, that each name
has one home, that the docstrings name the homes, and that no lens module imports
through a facade.

An entry maps a facade to ``{home module: "name name ..."}``; ``alias=name`` gives
a name under Flax's spelling; an entry that is a string is another facade's table
(``graph`` is ``graphlib`` under its other name).
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from typing import Any

FACADES: dict[str, dict[str, str] | str] = {
    "lens.core.axes_scan": {
        "lens.core.lift._axes_scan": "build_shaped_array scan ScanAxis",
        "lens.core.lift._util": "broadcast",
    },
    "lens.core.frozen_dict": {
        "lens._frozen_dict": (
            "copy freeze FrozenDict FrozenKeysView FrozenValuesView pop pretty_repr "
            "unfreeze"
        ),
    },
    "lens.core.meta": {
        "lens.core._meta": (
            "add_axis AxisMetadata get_global_mesh get_partition_spec "
            "global_mesh_defined is_axis_metadata map_axis_meta raw_value remove_axis "
            "replace_boxed TAxisMetadata unbox"
        ),
        "lens.core._partitioning": (
            "current_mesh get_sharding PARTITION_NAME Partitioned with_partitioning"
        ),
        "lens.typing": "LogicalNames",
    },
    "lens.core.pack_trace": {
        "lens.core._lanes": "describe",
        "lens.core._trace": "active MIME_TYPE PackTrace Recorder recorder trace_packs",
    },
    "lens.core.partial_eval": {
        "lens.core._partial_eval": "lazy_init",
    },
    "lens.core.scope": {
        "lens._frozen_dict": "freeze FrozenDict unfreeze",
        "lens.core._entry": (
            "_is_valid_rng _is_valid_rngs _is_valid_variables _unfreeze_variables apply "
            "bind init lazy_init"
        ),
        "lens.core._filters": (
            "CollectionFilter DenyList Filter filter_to_set group_collections "
            "in_filter intersect_filters is_filter_empty PRNGSequenceFilter "
            "subtract_filters union_filters"
        ),
        "lens.core._rng": "is_key is_valid_rng LazyRng",
        "lens.core._scope": "child_rng_token no_flag Scope",
        "lens.core._variable": "Variable",
        "lens.typing": (
            "Array Collection FrozenVariableDict MutableCollection "
            "MutableVariableDict PRNGFoldable PRNGKey RNGSequences VariableDict"
        ),
    },
    "lens.core.tracers": {
        "lens.core._tracers": "check_trace_level current_trace",
    },
    "lens.core.variables": {
        "lens.core._variable": "Variable",
    },
    "lens.nn.activation": {
        "lens.nn._activation": (
            "celu elu gelu glu hard_sigmoid hard_silu hard_swish hard_tanh leaky_relu "
            "log_sigmoid log_softmax logsumexp normalize one_hot PReLU relu relu6 "
            "selu sigmoid silu soft_sign softmax softplus standardize swish tanh"
        ),
        "lens.nn._module": "Module",
        "lens.nn._module_support": "compact",
    },
    "lens.nn.attention": {
        "lens.nn._attention": (
            "combine_masks dot_product_attention dot_product_attention_weights "
            "make_attention_mask make_causal_mask MultiHeadAttention "
            "MultiHeadDotProductAttention SelfAttention"
        ),
    },
    "lens.nn.combinators": {
        "lens.nn._combinators": "Sequential",
    },
    "lens.nn.dtypes": {
        "lens._kernels.dtypes": "canonicalize_dtype promote_dtype",
    },
    "lens.nn.initializers": {
        "lens.core.nn.initializers": (
            "constant delta_orthogonal glorot_normal glorot_uniform he_normal "
            "he_uniform Initializer kaiming_normal kaiming_uniform lecun_normal "
            "lecun_uniform normal ones ones_init orthogonal truncated_normal uniform "
            "variance_scaling xavier_normal xavier_uniform zeros zeros_init"
        ),
    },
    "lens.nn.linear": {
        "lens._kernels.dtypes": "promote_dtype",
        "lens._kernels.linear": (
            "Array canonicalize_padding _canonicalize_tuple=canonicalize_tuple "
            "_conv_dimension_numbers=conv_dimension_numbers "
            "_normalize_axes=normalize_axes"
        ),
        "lens.nn._conv": "_Conv Conv ConvLocal ConvTranspose",
        "lens.nn._linear": (
            "default_embed_init default_kernel_init Dense DenseGeneral Einsum Embed"
        ),
        "lens.typing": (
            "ConvGeneralDilatedT DotGeneralT Dtype Initializer LaxPadding PaddingLike "
            "PrecisionLike PRNGKey PromoteDtypeFn Shape"
        ),
    },
    "lens.nn.module": {
        "lens._kernels.dtypes": "merge_param",
        "lens.core._variable": "Variable",
        "lens.ids": "FlaxId=ModuleId uuid",
        "lens.nn._context": (
            "_context=flax_context current_module disable_named_call "
            "enable_named_call override_named_call"
        ),
        "lens.nn._module": (
            "_derive_profiling_name=_profiling_name _map_submodules CompactNameScope "
            "Module TestScope"
        ),
        "lens.nn._module_base": "module_field ModuleBase",
        "lens.nn._module_entry": "apply init init_with_output",
        "lens.nn._module_support": (
            "_get_fn_name _get_unbound_fn _get_unspecified_parent _ModuleInternalState "
            "_Sentinel _unspecified_parent Args "
            "capture_call_intermediates compact compact_name_scope "
            "create_descriptor_wrapper Descriptor DescriptorWrapper intercept_methods "
            "Interceptor InterceptorContext Kwargs NextGetter nowrap ParentDescriptor "
            "run_interceptors SetupState ThreadLocalStack tuple_init tuple_reduce "
            "wrap_descriptor_once wrap_method_once"
        ),
        "lens.nn._module_tree": (
            "_freeze_attr _get_local_method_names _get_suffix_value_pairs "
            "_map_over_modules_in_tree"
        ),
        "lens.nn._share_scope": "share_scope",
        "lens.nn._summary": "_CallInfo _CallInfoContext _tabulate_context",
    },
    "lens.nn.normalization": {
        "dataclasses": "field",
        "lens._kernels.dtypes": "canonicalize_dtype merge_param",
        "lens._kernels.norm": (
            "_abs_sq=abs_sq _canonicalize_axes=canonicalize_axes "
            "_compute_stats=compute_stats"
        ),
        "lens.nn._module": "Module",
        "lens.nn._module_support": "compact",
        "lens.nn._normalization": (
            "_normalize Array Axes BatchNorm Dtype GroupNorm Initializer InstanceNorm "
            "LayerNorm RMSNorm"
        ),
        "lens.nn._transforms": "map_variables",
        "lens.nn._weight_norms": "_l2_normalize SpectralNorm WeightNorm",
    },
    "lens.nn.pooling": {
        "lens.nn._pooling": "avg_pool max_pool min_pool pool",
    },
    "lens.nn.recurrent": {
        "lens._kernels.sequences": (
            "Array flip_sequences _concatenate _expand_dims_like=expand_dims_like "
            "_select_last_carry=select_last_carry"
        ),
        "lens.nn._recurrent": (
            "Carry CarryHistory ConvLSTMCell DenseParams GRUCell LSTMCell MGUCell "
            "OptimizedLSTMCell Output RNNCellBase sigmoid SimpleCell tanh"
        ),
        "lens.nn._rnn": "Bidirectional RNN RNNBase",
    },
    "lens.nn.stochastic": {
        "lens.nn._stochastic": "Dropout",
    },
    "lens.nn.summary": {
        "lens.nn._summary": (
            "_get_call_flops _get_flops _get_module_table _get_module_variables "
            "_get_path_variables _process_inputs Row Table tabulate"
        ),
        "lens.nn._summary_render": (
            "_ArrayRepresentation _as_yaml_str _bytes_repr _from_value_representation "
            "_get_value_representation _maybe_render _normalize_structure "
            "_ObjectRepresentation _PartitionedArrayRepresentation _represent_tree "
            "_size_and_bytes _size_and_bytes_repr _summary_tree_map "
            "_ValueRepresentation"
        ),
    },
    "lens.nn.transforms": {
        "lens.nn._lifting": (
            "clean_clone decorator_lift_transform decorator_lift_transform_cached "
            "fork_rngs get_module_scopes InstancePlaceholder lift_direct_transform "
            "lift_transform lift_transform_cached module_class_lift_transform "
            "module_class_lift_transform_cached set_module_scopes VariablePlaceholder"
        ),
        "lens.nn._module_hash": "_HashableProxy",
        "lens.nn._transforms": (
            "add_metadata_axis checkpoint cond custom_jvp custom_vjp fold_rngs grad "
            "jit jvp map_variables named_call remat remat_scan scan switch Target "
            "TransformTarget value_and_grad vjp vmap while_loop"
        ),
    },
    "lens.nnx.extract": {
        "lens.nnx._mirror.extract_prefix": (
            "broadcast_prefix broadcast_prefix2 broadcast_prefix_map extract "
            "ExtractIndex filter_kwargs find Index insert KeyPath labeled Leaf Mask "
            "mask_at OrderedDict Prefix PrefixMapping replace_at slice_at"
        ),
        "lens.nnx._mirror.extract_tree": (
            "check_consistent_aliasing2 check_prefix from_tree2 GraphDefState Opaque "
            "prefix to_tree2 TreeState"
        ),
        "lens.nnx._mirror.extract_updates": (
            "apply_updates check_no_aliases check_same_variables copy_var_structure "
            "get_updates KeepFn snapshot to_masked treemap_copy_args "
            "update_carry_variables Updates variable_changed"
        ),
        "lens.nnx._mirror.tree_states": (
            "check_consistent_aliasing clear_non_graph_nodes default_split_fn "
            "from_tree is_tree_node merge_tree_node Missing NodeStates to_tree"
        ),
        "lens.nnx._transforms.prefix_axes": "PrefixAxes tree_prefix_axes",
    },
    "lens.nnx.filterlib": {
        "lens.nnx._variables.filters": (
            "All Any Everything Filter FilterLiteral filters_to_predicates HasTag Not "
            "Nothing OfType PathContains PathIn Predicate to_predicate WithTag"
        ),
    },
    "lens.nnx.graph": "lens.nnx.graphlib",  # flax's other name for the same module
    "lens.nnx.graphlib": {
        "lens.nnx._graph.defs": (
            "ArrayRefDef ArrayRefOutput AttrType GraphDef LEAF_ATTR LeafAttr "
            "NO_UPDATE NODE_ATTR NodeAttr NodeDef NodeDefType NodeRef NoUpdate "
            "Repeated REPEATED Static TreeNodeDef VariableDef"
        ),
        "lens.nnx._graph.graph_state": "GraphState Node PureState",
        "lens.nnx._graph.mode": "set_graph_mode set_graph_updates",
        "lens.nnx._graph.ops": (
            "A ApplyCaller cached_partial call clone find_duplicates graphdef "
            "iter_graph map merge recursive_map set_metadata split state unpack "
            "variables"
        ),
        "lens.nnx._graph.registry": (
            "_flatten_pytree _key_path_to_key _unflatten_pytree AuxData DataElem "
            "GenericPytree get_node_impl get_node_impl_for_type GRAPH_REGISTRY "
            "GraphNodeImpl IndexesPytreeDef is_node is_node_leaf is_node_module "
            "is_node_type is_pytree_node JAX_PYTREE_REGISTRY jax_to_nnx_path Leaf "
            "NodeImpl NodeImplBase PYTREE_NODE_IMPL PYTREE_REGISTRY PytreeNodeImpl "
            "register_graph_node_type register_pytree_node_type StaticElem"
        ),
        "lens.nnx._graph.update": (
            "graph_pop iter_children iter_module_children pop update"
        ),
        "lens.nnx._graph.vars": "as_pure pure vars_as with_vars",
        "lens.nnx._graph.walk": "is_graph_node Path",
        "lens.nnx._mirror.contexts": (
            "current_update_context flatten GraphFlatState Index IndexMap LeafType "
            "merge_context MergeContext Names PythonRefMap=RefMap RefMap "
            "split_context SplitContext unflatten update_context UpdateContext "
            "UpdateContextManager"
        ),
        "lens.nnx._mirror.graph_context": (
            "GRAPH_CONTEXT GraphContext static_cache StaticCache"
        ),
        "lens.nnx._objects.object": "Object",
        "lens.nnx._variables.state": "FlatState map_state State",
        "lens.nnx._variables.variable": "Variable",
        "lens.typing": (
            "BaseConfigContext HA HashableMapping HB is_key_like Key PathParts"
        ),
    },
    "lens.nnx.helpers": {
        "lens.nnx._graph.ops": "ApplyCaller",
        "lens.nnx._objects.containers": (
            "A Dict has_keyword_arg K List M M_co ModuleDefApply Sequential "
            "TrainState V"
        ),
        "lens.nnx._objects.module": "Module",
        "lens.nnx._variables.state": "State",
    },
    "lens.nnx.module": {
        "lens.nnx._graph.update": "iter_children iter_module_children",
        "lens.nnx._objects.module": (
            "_add_capturing _extract_captures A capture first_from iter_modules "
            "Module ModuleMeta P StateMapping tuple_init tuple_reduce view view_info "
            "with_attributes"
        ),
        "lens.nnx._variables.state": "split_state State",
    },
    "lens.nnx.nn.initializers": {
        "lens.core.nn.initializers": (
            "constant delta_orthogonal glorot_normal glorot_uniform he_normal "
            "he_uniform Initializer kaiming_normal kaiming_uniform lecun_normal "
            "lecun_uniform normal ones ones_init orthogonal truncated_normal uniform "
            "variance_scaling xavier_normal xavier_uniform zeros zeros_init"
        ),
        "lens.typing": "DtypeLikeInexact",
    },
    "lens.nnx.pytreelib": {
        "lens.nnx._objects.object": (
            "A attribute_is_data AttributeStatus BUILDING_DOCS check_pytree "
            "check_trace data Data DATA_REGISTRY DataAnnotation dataclass declared "
            "has_data is_data node_items Object ObjectMeta private_attributes "
            "Pytree PytreeMeta=ObjectMeta register_data_type Static static "
            "StaticAnnotation unmark"
        ),
        "lens.nnx._objects.repr": (
            "ArrayRepr MutableArrayRepr OBJECT_CONTEXT ObjectContext VariableRepr"
        ),
        "lens.nnx._objects.state": "PytreeState",
        "lens.nnx._variables.variable": "Variable",
    },
    "lens.nnx.rnglib": {
        "lens.nnx._objects.rng_types": (
            "AxesValue Counts Fargs KeylessInitializer NotKey OutShardingType "
            "RngValue SplitPattern StreamBackup"
        ),
        "lens.nnx._objects.rngs": (
            "_match_shape _scalars_only backup_keys fork_rngs reseed restore_rngs "
            "Rngs RngStream split_rngs SplitBackups with_rngs"
        ),
        "lens.nnx._variables.variable": "RngCount RngKey RngState",
    },
    "lens.nnx.statelib": {
        "lens.nnx._variables.state": (
            "create_path_filters diff ExtractValueFn filter_state FlatState "
            "from_flat_state map_state merge_state NestedStateRepr partition_flat "
            "replace_by_pure_dict restore_int_paths SetValueFn split_state State "
            "state_flatten to_flat_state to_pure_dict V"
        ),
    },
    "lens.nnx.transforms.autodiff": {
        "lens.nnx._transforms.autodiff": "checkpoint grad jvp remat value_and_grad vjp",
        "lens.nnx._transforms.custom_gradients": (
            "custom_vjp CustomVjp CustomVjpFnWrapper SimpleCustomVjp"
        ),
        "lens.nnx._transforms.signatures": (
            "AxisName BwdFn FwdFn GradFn SimpleBwdFn SimpleCustomVjpFn SimpleFwdFn "
            "SimpleGradFn SimpleJvpFn SimpleRematFn SimpleVjpFn"
        ),
        "lens.nnx._transforms.specs": "DiffState",
        "lens.nnx._variables.state": "State",
    },
    "lens.nnx.transforms.compilation": {
        "lens.nnx._transforms.jit": (
            "jit jit_partial JitPartial=SimpleJitPartialWrapped JitWrapped P R "
            "SimpleJitPartialWrapped SimpleJitWrapped Specs"
        ),
        "lens.nnx._transforms.jit_stages": (
            "Compiled Lowered SimpleCompiled=Compiled SimpleLowered=Lowered "
            "SimplePartialCompiled=Compiled SimplePartialLowered=Lowered "
            "SimplePartialTraced SimpleTraced Stage Traced"
        ),
        "lens.nnx._transforms.sharding": "shard_map StateSharding",
        "lens.nnx._transforms.signatures": (
            "AxisName JitFn ShardMapFn SimpleJitFn SimpleJitPartialFn SimpleShardMapFn"
        ),
    },
    "lens.nnx.transforms.general": {
        "lens.nnx._mirror.split_merge": "merge_inputs split_inputs",
        "lens.nnx._transforms.modes": (
            "active_mode check_graph_flags check_no_aliases check_prefix "
            "check_returned_inputs reject_bound_method resolve_kwargs transform_mode "
            "TransformMode variables_with_paths with_calling_conventions"
        ),
        "lens.nnx._transforms.recipe": (
            "added_attributes apply_graph_updates call_changing call_inside "
            "changed_structure check_structure check_unmapped_additions diff_resolver "
            "lift_args merge_outputs pure_of rebuild split_all split_args "
            "split_outputs write_back"
        ),
        "lens.nnx._transforms.specs": (
            "axes_resolver Carrier DiffSpec DiffState Entry GraphArg GraphSlot "
            "LeafSlot Skeleton Slot StateAxes StaticSlot wrap_objects"
        ),
    },
    "lens.nnx.transforms.iteration": {
        "lens.nnx._transforms.iteration": (
            "mapped_body per_argument pmap StructureChanged transform_metadata vmap"
        ),
        "lens.nnx._transforms.lifted": "Broadcasted",
        "lens.nnx._transforms.loops": "fori_loop scan while_loop",
        "lens.nnx._transforms.scan_step": "Carry",
        "lens.nnx._transforms.signatures": (
            "AxisFn AxisName ForiLoopBodyFn Index Leaves PmapFn ScanFn "
            "SimpleForiLoopBodyFn SimplePmapFn SimpleScanFn SimpleVmapFn "
            "SimpleWhileLoopBodyFn SimpleWhileLoopCondFn VmapFn WhileLoopBodyFn "
            "WhileLoopCondFn"
        ),
        "lens.nnx._transforms.specs": "StateAxes",
    },
    "lens.nnx.transforms.transforms": {
        "lens.nnx._transforms.branches": "checkify cond eval_shape make_jaxpr switch",
        "lens.nnx._transforms.lifted": "LiftedModule ValueMetadata",
        "lens.nnx._transforms.modes": "resolve_kwargs",
        "lens.nnx._transforms.signatures": (
            "AxisName CheckifyFn Index Leaves SimpleCheckifyFn SimpleCondFn "
            "SimpleEvalShapeFn SimpleMakeJaxprFn"
        ),
    },
    "lens.nnx.variablelib": {
        "lens.nnx._variables.defaults": (
            "_remap_sharding_metadata use_eager_sharding using_eager_sharding "
            "var_defaults VarDefaults VarDefaultsContext VARIABLE_CONTEXT "
            "VariableContext"
        ),
        "lens.nnx._variables.hijax": (
            "AbstractVariable get_variable_p GetVariable HijaxVariable "
            "HijaxVariableMeta Leaf new_variable_p NewVariable PyTreeDef "
            "set_variable_p SetVariable variable_effect VariableEffect VariableMeta "
            "VariableQDD"
        ),
        "lens.nnx._variables.hooks": (
            "AddAxisHook AxisIndex AxisName CreateValueHook GetValueHook "
            "RemoveAxisHook SetValueHook VariableMetadata with_metadata"
        ),
        "lens.nnx._variables.names": (
            "register_variable_name variable_name_from_type variable_type_from_name "
            "VariableTypeCache"
        ),
        "lens.nnx._variables.refs": "is_array_ref Ref",
        "lens.nnx._variables.static": "freeze_metadata StaticValue",
        "lens.nnx._variables.variable": (
            "A BatchStat Cache F Intermediate new_variable OptState Param "
            "Perturbation RngCount RngKey RngState Variable VariableState=Variable"
        ),
    },
}


# Where each home's classes and functions say they live (their ``__module__``): the
# Flax path Flax defines them at, so ``repr(nnx.Param)`` reads
# ``<class 'lens.nnx.variablelib.Param'>`` as flax's reads ``flax.nnx.variablelib``,
# and a pickle names a path that lasts. Per home, then per name where Flax defines
# one of a home's names elsewhere (lens/nnx's own helpers keep their home). Linen's
# and lens.core's homes too: ``repr(nn.Dense)`` reads ``lens.nn.linear.Dense``.
SHOWN_AT: dict[str, str] = {
    "lens._frozen_dict": "lens.core.frozen_dict",
    "lens.core._entry": "lens.core.scope",
    "lens.core._filters": "lens.core.scope",
    "lens.core._meta": "lens.core.meta",
    "lens.core._partial_eval": "lens.core.partial_eval",
    "lens.core._partitioning": "lens.core.meta",
    "lens.core._rng": "lens.core.scope",
    "lens.core._scope": "lens.core.scope",
    "lens.core._tracers": "lens.core.tracers",
    "lens.core._variable": "lens.core.scope",
    "lens.core.lift._axes_scan": "lens.core.axes_scan",
    "lens.nn._activation": "lens.nn.activation",
    "lens.nn._attention": "lens.nn.attention",
    "lens.nn._combinators": "lens.nn.combinators",
    "lens.nn._context": "lens.nn.module",
    "lens.nn._conv": "lens.nn.linear",
    "lens.nn._lifting": "lens.nn.transforms",
    "lens.nn._linear": "lens.nn.linear",
    "lens.nn._module": "lens.nn.module",
    "lens.nn._module_base": "lens.nn.module",
    "lens.nn._module_entry": "lens.nn.module",
    "lens.nn._module_hash": "lens.nn.transforms",
    "lens.nn._module_support": "lens.nn.module",
    "lens.nn._module_tree": "lens.nn.module",
    "lens.nn._normalization": "lens.nn.normalization",
    "lens.nn._pooling": "lens.nn.pooling",
    "lens.nn._recurrent": "lens.nn.recurrent",
    "lens.nn._rnn": "lens.nn.recurrent",
    "lens.nn._share_scope": "lens.nn.module",
    "lens.nn._stochastic": "lens.nn.stochastic",
    "lens.nn._summary": "lens.nn.summary",
    "lens.nn._summary_render": "lens.nn.summary",
    "lens.nn._transforms": "lens.nn.transforms",
    "lens.nn._weight_norms": "lens.nn.normalization",
    "lens.nnx._graph.defs": "lens.nnx.graphlib",
    "lens.nnx._graph.graph_state": "lens.nnx.graphlib",
    "lens.nnx._graph.mode": "lens.nnx.graphlib",
    "lens.nnx._graph.ops": "lens.nnx.graphlib",
    "lens.nnx._graph.registry": "lens.nnx.graphlib",
    "lens.nnx._graph.update": "lens.nnx.graphlib",
    "lens.nnx._graph.vars": "lens.nnx.graphlib",
    "lens.nnx._graph.walk": "lens.nnx.graphlib",
    "lens.nnx._mirror.contexts": "lens.nnx.graphlib",
    "lens.nnx._mirror.extract_prefix": "lens.nnx.extract",
    "lens.nnx._mirror.extract_tree": "lens.nnx.extract",
    "lens.nnx._mirror.extract_updates": "lens.nnx.extract",
    "lens.nnx._mirror.graph_context": "lens.nnx.graphlib",
    "lens.nnx._mirror.split_merge": "lens.nnx.transforms.general",
    "lens.nnx._mirror.tree_states": "lens.nnx.extract",
    "lens.nnx._objects.containers": "lens.nnx.helpers",
    "lens.nnx._objects.module": "lens.nnx.module",
    "lens.nnx._objects.object": "lens.nnx.pytreelib",
    "lens.nnx._objects.repr": "lens.nnx.pytreelib",
    "lens.nnx._objects.rng_types": "lens.nnx.rnglib",
    "lens.nnx._objects.rngs": "lens.nnx.rnglib",
    "lens.nnx._objects.state": "lens.nnx.pytreelib",
    "lens.nnx._transforms.autodiff": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.branches": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.custom_gradients": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.iteration": "lens.nnx.transforms.iteration",
    "lens.nnx._transforms.jit": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.jit_stages": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.lifted": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.loops": "lens.nnx.transforms.iteration",
    "lens.nnx._transforms.modes": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.scan_step": "lens.nnx.transforms.iteration",
    "lens.nnx._transforms.sharding": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures": "lens.nnx.transforms.iteration",
    "lens.nnx._transforms.specs": "lens.nnx.transforms.autodiff",
    "lens.nnx._variables.defaults": "lens.nnx.variablelib",
    "lens.nnx._variables.filters": "lens.nnx.filterlib",
    "lens.nnx._variables.hijax": "lens.nnx.variablelib",
    "lens.nnx._variables.hooks": "lens.nnx.variablelib",
    "lens.nnx._variables.names": "lens.nnx.variablelib",
    "lens.nnx._variables.refs": "lens.nnx.variablelib",
    "lens.nnx._variables.state": "lens.nnx.statelib",
    "lens.nnx._variables.variable": "lens.nnx.variablelib",
}
SHOWN_AT_NAME: dict[str, str] = {
    "lens.nnx._transforms.lifted.Broadcasted": "lens.nnx.transforms.iteration",
    "lens.nnx._transforms.signatures.BwdFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.CheckifyFn": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.signatures.FwdFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.GradFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.JitFn": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures.ShardMapFn": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures.SimpleBwdFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleCheckifyFn": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.signatures.SimpleCondFn": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.signatures.SimpleCustomVjpFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleEvalShapeFn": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.signatures.SimpleFwdFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleGradFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleJitFn": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures.SimpleJitPartialFn": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures.SimpleJvpFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleMakeJaxprFn": "lens.nnx.transforms.transforms",
    "lens.nnx._transforms.signatures.SimpleRematFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.signatures.SimpleShardMapFn": "lens.nnx.transforms.compilation",
    "lens.nnx._transforms.signatures.SimpleVjpFn": "lens.nnx.transforms.autodiff",
    "lens.nnx._transforms.specs.StateAxes": "lens.nnx.transforms.iteration",
    "lens.nnx._variables.variable.RngCount": "lens.nnx.rnglib",
    "lens.nnx._variables.variable.RngKey": "lens.nnx.rnglib",
    "lens.nnx._variables.variable.RngState": "lens.nnx.rnglib",
}


def show_at_flax_paths(home: str) -> None:
    """Gives the classes and functions defined in ``home`` (a module being
    imported) the path Flax shows them at, where a facade serves them under
    their own name (numpy's and JAX's ``__module__`` practice)."""
    namespace = sys.modules[home].__dict__
    shown: set[str] = set()
    for name, value in list(namespace.items()):
        if not isinstance(value, (type, types.FunctionType)):
            continue
        if value.__module__ != home or value.__qualname__ != name:
            continue
        facade = SHOWN_AT_NAME.get(f"{home}.{name}") or SHOWN_AT.get(home)
        if facade is not None and exports_of(facade).get(name) == (home, name):
            if isinstance(value, type):
                _resolve_annotations(value, namespace)
            # where its source and doctests are (conftest.py's doctest finder)
            value.__lens_home__ = home  # pyright: ignore[reportFunctionMemberAccess]
            value.__module__ = facade
            shown.add(facade)
    # The facades are loaded too (they are a few lines each): pickle finds a
    # class or function by reference at ``sys.modules[obj.__module__]``, and
    # cloudpickle (Ray, multiprocessing pools, JAX's helpers) does not import a
    # module to look: it would pickle ``nn.Dense`` by value, a copy of the class.
    for facade in sorted(shown - sys.modules.keys()):
        importlib.import_module(facade)


def _resolve_annotations(cls: type, namespace: dict[str, Any]) -> None:
    """Evaluates ``cls``'s own string annotations in its home's namespace.

    ``typing.get_type_hints(cls)`` evaluates them in the namespace of the module
    ``cls.__module__`` names; once that is a facade (whose names load on first
    use, not into its ``__dict__``) they would not resolve. Evaluated now, where
    they were written, they read as Flax's do (objects, not strings). A name that
    does not resolve yet (a forward reference) stays a string.
    """
    own = cls.__dict__.get("__annotations__")
    if not own:
        return
    for key, hint in list(own.items()):
        if isinstance(hint, str):
            try:
                own[key] = eval(hint, namespace, dict(vars(cls)))  # noqa: S307
            except Exception:
                continue


@functools.cache
def exports_of(facade: str) -> dict[str, tuple[str, str]]:
    """``{name: (home module, attribute)}`` for ``facade``.

    Example:
        >>> exports_of("lens.core.variables")
        {'Variable': ('lens.core._variable', 'Variable')}
    """
    entry = FACADES[facade]
    if isinstance(entry, str):
        return exports_of(entry)
    table: dict[str, tuple[str, str]] = {}
    for home, names in entry.items():
        for name in names.split():
            alias, _, attr = name.partition("=")
            table[alias] = (home, attr or alias)
    return table
