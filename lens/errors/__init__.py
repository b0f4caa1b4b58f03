"""Errors raised by lens.

Every error is a :class:`LensError` (also reachable as ``FlaxError``) and, where one
fits, the builtin exception that matches its meaning (a shape mismatch is a
``ValueError``), so ``except ValueError`` keeps working.

Errors that Flax also raises keep Flax's class name, constructor arguments and the
first sentence of Flax's message, so code and tests written against Flax match on
them. lens then adds where it happened (the scope path such as ``/encoder/Dense_0``
and the collection) and how to fix it, and a pointer to the longer explanation:
each class docstring, with the wrong and the right code (``help(lens.errors.X)``,
or ``docs/errors.md``).

Every error pickles, unpickles and deep-copies with its message, so a worker
process can report it.

Strict mode (``lens.strict``) raises some of these where Flax is silent, and warns
:class:`StrictModeWarning` where the code may mean what it does.
"""

from lens.errors._base import FlaxError as FlaxError
from lens.errors._base import LensError as LensError
from lens.errors._base import path_text as path_text
from lens.errors._compile_time import (
    CompileTimeStageError as CompileTimeStageError,
)
from lens.errors._compile_time import (
    CompileTimeTargetError as CompileTimeTargetError,
)
from lens.errors._modules import AlreadyExistsError as AlreadyExistsError
from lens.errors._modules import (
    ApplyModuleInvalidMethodError as ApplyModuleInvalidMethodError,
)
from lens.errors._modules import AssignSubModuleError as AssignSubModuleError
from lens.errors._modules import (
    CallCompactUnboundModuleError as CallCompactUnboundModuleError,
)
from lens.errors._modules import (
    CallSetupUnboundModuleError as CallSetupUnboundModuleError,
)
from lens.errors._modules import (
    CallShareScopeOnUnboundModuleError as CallShareScopeOnUnboundModuleError,
)
from lens.errors._modules import (
    CallUnbindOnUnboundModuleError as CallUnbindOnUnboundModuleError,
)
from lens.errors._modules import CapturedOutputError as CapturedOutputError
from lens.errors._modules import (
    CheckpointCorruptedError as CheckpointCorruptedError,
)
from lens.errors._modules import CursorFindError as CursorFindError
from lens.errors._modules import DescriptorAttributeError as DescriptorAttributeError
from lens.errors._modules import GraphStructureError as GraphStructureError
from lens.errors._modules import ImmutableVariableError as ImmutableVariableError
from lens.errors._modules import InconsistentAliasingError as InconsistentAliasingError
from lens.errors._modules import (
    IncorrectPostInitOverrideError as IncorrectPostInitOverrideError,
)
from lens.errors._modules import InvalidCheckpointError as InvalidCheckpointError
from lens.errors._modules import (
    InvalidHyperparameterError as InvalidHyperparameterError,
)
from lens.errors._modules import (
    InvalidInstanceModuleError as InvalidInstanceModuleError,
)
from lens.errors._modules import (
    MPACheckpointingRequiredError as MPACheckpointingRequiredError,
)
from lens.errors._modules import (
    MPARestoreDataCorruptedError as MPARestoreDataCorruptedError,
)
from lens.errors._modules import (
    MPARestoreTargetRequiredError as MPARestoreTargetRequiredError,
)
from lens.errors._modules import (
    MultipleMethodsCompactError as MultipleMethodsCompactError,
)
from lens.errors._modules import (
    ReservedModuleAttributeError as ReservedModuleAttributeError,
)
from lens.errors._modules import SerializationError as SerializationError
from lens.errors._modules import (
    SetAttributeFrozenModuleError as SetAttributeFrozenModuleError,
)
from lens.errors._modules import (
    SetAttributeInModuleSetupError as SetAttributeInModuleSetupError,
)
from lens.errors._modules import TraceContextError as TraceContextError
from lens.errors._modules import TraverseTreeError as TraverseTreeError
from lens.errors._scope import (
    ApplyScopeInvalidVariablesStructureError as ApplyScopeInvalidVariablesStructureError,
)
from lens.errors._scope import (
    ApplyScopeInvalidVariablesTypeError as ApplyScopeInvalidVariablesTypeError,
)
from lens.errors._scope import (
    BranchStructureMismatchError as BranchStructureMismatchError,
)
from lens.errors._scope import DuplicateScopeNameError as DuplicateScopeNameError
from lens.errors._scope import InvalidFilterError as InvalidFilterError
from lens.errors._scope import InvalidRngError as InvalidRngError
from lens.errors._scope import InvalidScopeError as InvalidScopeError
from lens.errors._scope import JaxTransformError as JaxTransformError
from lens.errors._scope import LazyInitError as LazyInitError
from lens.errors._scope import (
    LoopBroadcastDependenceError as LoopBroadcastDependenceError,
)
from lens.errors._scope import ModifyScopeVariableError as ModifyScopeVariableError
from lens.errors._scope import NameInUseError as NameInUseError
from lens.errors._scope import (
    PartitioningUnspecifiedError as PartitioningUnspecifiedError,
)
from lens.errors._scope import (
    PartitionNameMissingError as PartitionNameMissingError,
)
from lens.errors._scope import ScopeCollectionNotFound as ScopeCollectionNotFound
from lens.errors._scope import ScopeParamNotFoundError as ScopeParamNotFoundError
from lens.errors._scope import ScopeParamShapeError as ScopeParamShapeError
from lens.errors._scope import ScopeVariableNotFoundError as ScopeVariableNotFoundError
from lens.errors._scope import TracerLeakError as TracerLeakError
from lens.errors._scope import TransformAxisSizeError as TransformAxisSizeError
from lens.errors._scope import (
    TransformedMethodReturnValueError as TransformedMethodReturnValueError,
)
from lens.errors._scope import TransformTargetError as TransformTargetError
from lens.errors._scope import UnusedVariablesWarning as UnusedVariablesWarning
from lens.errors._strict import BytesCorruptedError as BytesCorruptedError
from lens.errors._strict import CheckpointNotFoundError as CheckpointNotFoundError
from lens.errors._strict import CheckpointStepTypeError as CheckpointStepTypeError
from lens.errors._strict import StrictModeWarning as StrictModeWarning
from lens.errors._strict import UnusedGradientsError as UnusedGradientsError
from lens.errors._strict import UnusedVariablesError as UnusedVariablesError
from lens.errors._tabulate import TabulateCostError as TabulateCostError
from lens.errors._tabulate import TabulateOptionError as TabulateOptionError
