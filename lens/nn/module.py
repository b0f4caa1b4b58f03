"""The Module system (``lens.nn.module``, like ``flax.linen.module``)."""

from collections.abc import Callable
from typing import Any

from lens._kernels.dtypes import merge_param as merge_param
from lens.core.variables import Variable as Variable
from lens.ids import FlaxId as FlaxId
from lens.nn._context import current_module as current_module
from lens.nn._context import disable_named_call as disable_named_call
from lens.nn._context import enable_named_call as enable_named_call
from lens.nn._context import override_named_call as override_named_call
from lens.nn._module import CompactNameScope as CompactNameScope
from lens.nn._module import Module as Module
from lens.nn._module import TestScope as TestScope
from lens.nn._module import _map_submodules as _map_submodules
from lens.nn._module_base import ModuleBase as ModuleBase
from lens.nn._module_base import module_field as module_field
from lens.nn._module_entry import apply as apply
from lens.nn._module_entry import init as init
from lens.nn._module_entry import init_with_output as init_with_output
from lens.nn._module_support import Descriptor as Descriptor
from lens.nn._module_support import DescriptorWrapper as DescriptorWrapper
from lens.nn._module_support import InterceptorContext as InterceptorContext
from lens.nn._module_support import ParentDescriptor as ParentDescriptor
from lens.nn._module_support import SetupState as SetupState
from lens.nn._module_support import ThreadLocalStack as ThreadLocalStack
from lens.nn._module_support import _get_unbound_fn as _get_unbound_fn
from lens.nn._module_support import _ModuleInternalState as _ModuleInternalState
from lens.nn._module_support import _unspecified_parent as _unspecified_parent
from lens.nn._module_support import (
    capture_call_intermediates as capture_call_intermediates,
)
from lens.nn._module_support import compact as compact
from lens.nn._module_support import compact_name_scope as compact_name_scope
from lens.nn._module_support import (
    create_descriptor_wrapper as create_descriptor_wrapper,
)
from lens.nn._module_support import intercept_methods as intercept_methods
from lens.nn._module_support import nowrap as nowrap
from lens.nn._module_support import run_interceptors as run_interceptors
from lens.nn._module_support import tuple_init as tuple_init
from lens.nn._module_support import tuple_reduce as tuple_reduce
from lens.nn._module_support import wrap_descriptor_once as wrap_descriptor_once
from lens.nn._module_support import wrap_method_once as wrap_method_once
from lens.nn._module_tree import _freeze_attr as _freeze_attr
from lens.nn._module_tree import _get_local_method_names as _get_local_method_names
from lens.nn._module_tree import _get_suffix_value_pairs as _get_suffix_value_pairs
from lens.nn._module_tree import (
    _map_over_modules_in_tree as _map_over_modules_in_tree,
)
from lens.nn._share_scope import share_scope as share_scope

Args = tuple[Any]
"""The positional arguments an interceptor sees."""
Kwargs = dict[str, Any]
"""The keyword arguments an interceptor sees."""
NextGetter = Callable[..., Any]
"""What an interceptor calls to run the method (or the next interceptor)."""
Interceptor = Callable[[NextGetter, Args, Kwargs, InterceptorContext], Any]
"""A function given to :func:`intercept_methods`."""


class _ContextView:
    """Flax's ``module._context``, read from lens's contextvars (for ported code)."""

    @property
    def module_stack(self) -> list:
        from lens.nn import _context as c

        return list(c._module_stack.get())

    @property
    def capture_stack(self) -> list:
        from lens.nn import _context as c

        return list(c._capture_stack.get())

    @property
    def call_info_stack(self) -> list:
        from lens.nn import _context as c

        return list(c._call_info.get())


_context = _ContextView()
