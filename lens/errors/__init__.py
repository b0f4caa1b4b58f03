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

# fmt: off
# isort: off
from lens.errors._base import FlaxError, LensError, path_text
from lens.errors._compile_time import CompileTimeStageError, CompileTimeTargetError
from lens.errors._modules import (
    AlreadyExistsError, ApplyModuleInvalidMethodError, AssignSubModuleError,
    CallCompactUnboundModuleError, CallSetupUnboundModuleError,
    CallShareScopeOnUnboundModuleError, CallUnbindOnUnboundModuleError,
    CapturedOutputError, CheckpointCorruptedError, CursorFindError,
    DescriptorAttributeError, GradientShapeError, GraphStructureError,
    ImmutableVariableError, LoopCarryStructureError,
    InconsistentAliasingError, IncorrectPostInitOverrideError, InvalidCheckpointError,
    InvalidHyperparameterError, InvalidInstanceModuleError, InvalidStateFilterError,
    MPACheckpointingRequiredError, MPARestoreDataCorruptedError,
    MPARestoreTargetRequiredError, MultipleMethodsCompactError,
    ReservedModuleAttributeError, SerializationError, SetAttributeFrozenModuleError,
    SetAttributeInModuleSetupError, TangentStructureError, TraceContextError,
    TraverseTreeError, VariableInPlaceError, ZeroSizeHyperparameterError,
)
from lens.errors._scope import (
    ApplyScopeInvalidVariablesStructureError, ApplyScopeInvalidVariablesTypeError,
    BranchStructureMismatchError, DuplicateScopeNameError, InvalidFilterError,
    InvalidRngError, InvalidScopeError, JaxTransformError, LazyInitError,
    LoopBroadcastDependenceError, ModifyScopeVariableError, NameInUseError,
    PartitioningUnspecifiedError, PartitionNameMissingError, PartitionAxisMismatchError, ScopeCollectionNotFound,
    ScopeParamNotFoundError, ScopeParamShapeError, ScopeVariableNotFoundError,
    TracerLeakError, TransformAxisSizeError, TransformedMethodReturnValueError,
    TransformTargetError, UnusedVariablesWarning,
)
from lens.errors._strict import (
    BytesCorruptedError, CheckpointNotFoundError, CheckpointStepTypeError,
    JitArgnumsError, StrictModeWarning, UnusedGradientsError, UnusedVariablesError,
)
from lens.errors._tabulate import TabulateCostError, TabulateOptionError
# isort: on
# fmt: on
