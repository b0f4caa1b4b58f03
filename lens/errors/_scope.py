"""Errors of scopes, lifting (pack and the transforms) and axis metadata."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lens.errors._base import LensError, _join, path_text

# ------------------------------------------------------------------------- scope


class InvalidScopeError(LensError, RuntimeError):
    """A scope (or the module bound to it) was used after its ``apply`` returned.

    Scopes only live while ``init``/``apply`` runs, so that ``apply`` stays a pure
    function. Wrong::

        leaked = []
        apply(lambda s: leaked.append(s))(variables)
        leaked[0].param(...)            # the scope is gone

    Right: return what you need from the function, or use ``bind`` for a scope with
    an unlimited lifetime.
    """

    def __init__(self, scope_name: Any, *, path: Sequence[Any] | str | None = None):
        where = f" (at {path_text(path)})" if path is not None else ""
        super().__init__(
            _join(
                f'The scope "{scope_name}" is no longer valid.',
                f"It was used after the init/apply (or transform) that made it "
                f"returned{where}.",
                "Return values from the function instead, or use bind(variables) for "
                "a long-lived scope.",
            )
        )


class DuplicateScopeNameError(LensError, ValueError):
    """Two children or variables of one scope got the same name.

    Wrong::

        dense(scope.push("a"), x, 2)
        dense(scope.push("a"), x, 2)      # "a" again

    Right: ``scope.push("a", reuse=True)`` to reuse the child, or another name.
    """

    def __init__(self, name: str, path: tuple[Any, ...] | str = ()):
        super().__init__(
            f'Duplicate use of scope name: "{name}"\n'
            f"In scope {path_text(path)} a child or variable already has this "
            "name; pick another, or push(name, reuse=True) to reuse the child."
        )


class ScopeParamShapeError(LensError, ValueError):
    """An existing parameter has a different shape than its initializer would make.

    This usually means the hyper-parameters (e.g. ``features``) or the input shape
    changed between ``init`` and ``apply``. Wrong::

        variables = Dense(3).init(key, jnp.ones((1, 4)))
        Dense(5).apply(variables, jnp.ones((1, 4)))   # kernel is (4, 3), not (4, 5)

    Right: apply with the same hyper-parameters and input feature size as at init,
    or re-initialise.
    """

    def __init__(
        self,
        param_name: str,
        scope_path: Sequence[Any] | str,
        value_shape: Any,
        init_shape: Any,
    ):
        super().__init__(
            _join(
                f'For parameter "{param_name}" in "{path_text(scope_path)}", the '
                f"given initializer is expected to generate shape {init_shape}, but "
                f"the existing parameter it received has shape {value_shape}.",
                'Collection "params": the hyper-parameters or the input shape differ '
                "from those used at init.",
                "Apply with the same ones, or re-initialise the variables.",
            )
        )


class ScopeParamNotFoundError(LensError, LookupError):
    """A parameter is read in ``apply`` but the variables given have none.

    Wrong::

        model.apply({"params": {}}, x)       # params were never initialised

    Right::

        variables = model.init(key, x)
        model.apply(variables, x)
    """

    def __init__(
        self, param_name: str, scope_path: Sequence[Any] | str, *, hint: str = ""
    ):
        super().__init__(
            _join(
                f'Could not find parameter named "{param_name}" in scope '
                f'"{path_text(scope_path)}".',
                hint
                or 'Collection "params" is not mutable here, so it cannot be created: '
                "pass the variables returned by init to apply, or make it mutable "
                '(mutable=["params"]).',
            )
        )


class ScopeCollectionNotFound(LensError, LookupError):
    """A variable is read from a collection that has no variables at all here.

    Wrong::

        model.apply({"params": params}, x)   # the model also reads "batch_stats"

    Right::

        model.apply({"params": params, "batch_stats": stats}, x)
    """

    def __init__(
        self,
        col_name: str,
        var_name: str,
        scope_path: Sequence[Any] | str,
        *,
        hint: str = "",
    ):
        super().__init__(
            _join(
                f'Tried to access "{var_name}" from collection "{col_name}" in '
                f'"{path_text(scope_path)}" but the collection is empty.',
                hint
                or f'Pass variables that contain "{col_name}" (as returned by init), '
                f'or make it mutable (mutable=["{col_name}"]) so it can be created.',
            )
        )


class ScopeVariableNotFoundError(LensError, LookupError):
    """A variable is read but does not exist and cannot be created here.

    Wrong::

        apply(fn)(variables)   # fn reads a "state" variable that init never created

    Right: create it first (run init, or make the collection mutable).
    """

    def __init__(
        self, name: str, col: str, scope_path: Sequence[Any] | str, *, hint: str = ""
    ):
        super().__init__(
            _join(
                f'No Variable named "{name}" for collection "{col}" exists in '
                f'"{path_text(scope_path)}".',
                hint
                or f'Pass variables that contain it, or make "{col}" mutable '
                f'(mutable=["{col}"]) and give an init function.',
            )
        )


class ModifyScopeVariableError(LensError, ValueError):
    """A variable was written in a collection that is not mutable.

    Wrong::

        y = model.apply(variables, x)                 # BatchNorm updates batch_stats

    Right::

        y, updates = model.apply(variables, x, mutable=["batch_stats"])
    """

    def __init__(
        self,
        col: str,
        variable_name: str,
        scope_path: Sequence[Any] | str,
        *,
        hint: str = "",
    ):
        super().__init__(
            _join(
                f'Cannot update variable "{variable_name}" in '
                f'"{path_text(scope_path)}" because collection "{col}" is immutable.',
                hint
                or f'Make it mutable in apply (mutable=["{col}"]), or do not write '
                "to it.",
            )
        )


class NameInUseError(LensError, ValueError):
    """A submodule, parameter or variable was given a name that is already used.

    Submodules, parameters and variables share one namespace per module. Wrong::

        self.param("w", init, (2,))
        self.param("w", init, (2,))     # same name twice

    Right: give each its own name; share a submodule by passing the instance.
    """

    def __init__(
        self,
        key_type: str,
        value: str,
        module_name: str,
        *,
        path: Sequence[Any] | str | None = None,
    ):
        where = f" at {path_text(path)}" if path is not None else ""
        super().__init__(
            _join(
                f'Could not create {key_type} "{value}" in Module {module_name}: '
                "Name in use.",
                f"Another submodule, parameter or variable of this module{where} "
                "already has that name; give it a different name.",
            )
        )


class InvalidRngError(LensError, ValueError):
    """An rng stream that was not given (or not lifted) was asked for.

    Wrong::

        model.apply(variables, x)                         # Dropout needs "dropout"

    Right::

        model.apply(variables, x, rngs={"dropout": jax.random.key(1)})
    """

    def __init__(self, msg: str):
        super().__init__(msg)


class ApplyScopeInvalidVariablesTypeError(LensError, TypeError):
    """The variables given to apply are not a mapping of collections.

    Wrong::

        model.apply(params, x)             # the bare params array tree

    Right::

        model.apply({"params": params}, x)
    """

    def __init__(self, got: Any = None):
        detail = ""
        if isinstance(got, Mapping):
            bad = [
                k
                for k, v in got.items()
                if not isinstance(k, str) or not isinstance(v, Mapping)
            ]
            if bad:
                k = bad[0]
                detail = (
                    f"Got {type(got).__name__} whose entry {k!r} is a "
                    f"{type(got[k]).__name__}, not a collection dict (bare params?)."
                )
        elif got is not None:
            detail = f"Got {type(got).__name__}."
        super().__init__(
            _join(
                "The first argument passed to an apply function should be a "
                "dictionary of collections. Each collection should be a dictionary "
                "with string keys.",
                detail,
                'Pass {"params": params, ...} as returned by init.',
            )
        )


class ApplyScopeInvalidVariablesStructureError(LensError, ValueError):
    """The variables have an extra ``params`` layer: ``{"params": {"params": ...}}``.

    Wrong::

        model.apply({"params": variables}, x)

    Right::

        model.apply(variables, x)             # or {"params": variables["params"]}
    """

    def __init__(self, variables: Any = None):
        super().__init__(
            _join(
                "Expect the `variables` (first argument) passed to apply() to be a "
                'dict with the structure {"params": ...}, but got a dict with an '
                'extra params layer, i.e.  {"params": {"params": ... } }. You should '
                'instead pass in your dict\'s ["params"].',
            )
        )


class InvalidFilterError(LensError, TypeError):
    """A collection filter is not one of the supported forms.

    A filter is ``True``, ``False``, a collection name, a list/tuple/set of names, or
    ``DenyList(filter)``. Wrong: ``mutable=3``. Right: ``mutable=["batch_stats"]``.
    """

    def __init__(self, filter_like: Any):
        super().__init__(
            _join(
                f'Invalid Filter: "{filter_like}"',
                "Use True, False, a collection name, a list of names "
                '(["params", "batch_stats"]) or DenyList(filter).',
            )
        )


class LazyInitError(LensError, ValueError):
    """``lazy_init`` got an input whose value the initial variables depend on.

    Inputs given as ``jax.ShapeDtypeStruct`` have shapes but no values. Wrong::

        k = self.param("kernel", lambda _: x)     # the param is the input itself

    Right: initialise from shapes and dtypes only, or pass a real array.
    """

    def __init__(self, partial_val: Any):
        if hasattr(partial_val, "shape") and hasattr(partial_val, "dtype"):
            # as JAX writes an abstract value (float32[2,3]), and Flax with it
            dims = ",".join(map(str, partial_val.shape))
            partial_val = f"{partial_val.dtype}[{dims}]"
        super().__init__(
            _join(
                "Lazy init encountered a value that could with the given inputs "
                f"(shape: {partial_val}).",
                "A variable's initial value depends on an input given only as a "
                "ShapeDtypeStruct; initialise from shapes, or pass a real array.",
            )
        )


# ------------------------------------------------------------------------ lifting


class JaxTransformError(LensError, TypeError):
    """JAX transforms and lens modules were mixed.

    JAX's transforms take pure functions of arrays; a module or a closure over one
    is invisible to them. Wrong::

        jax.vmap(lambda mdl, x: mdl(x))(mlp, xs)

    Right: use the lifted transform, ``nn.vmap(MLP, variable_axes=..., ...)``, and
    pass modules as pytrees (the ``Partial`` trick) rather than in closures.
    """

    def __init__(self, detail: str = ""):
        super().__init__(
            _join("Jax transforms and Flax models cannot be mixed.", detail)
        )


class TransformTargetError(LensError, TypeError):
    """A lifted transform was given something it cannot transform.

    Wrong::

        nn.vmap(nn.Dense(3))               # an instance

    Right::

        nn.vmap(nn.Dense, ...)(3)          # the class
        nn.vmap(lambda mdl, x: mdl(x), ...)(nn.Dense(3), x)
    """

    def __init__(self, target: Any, *, detail: str = ""):
        super().__init__(
            _join(
                "Linen transformations must be applied to Modules classes or "
                "functions taking a Module instance as the first argument. The "
                f"provided target is not a Module class or callable: {target}",
                detail,
            )
        )


class TransformedMethodReturnValueError(LensError, TypeError):
    """A transformed method returned a module or variable; they cannot leave a transform.

    Wrong::

        nn.vmap(lambda mdl, x: mdl, ...)

    Right: return arrays (e.g. ``mdl(x)``), or create the module outside.
    """

    def __init__(self, name: str):
        super().__init__(
            _join(
                f"Transformed module method {name} cannot return Modules or Variables.",
                "Return arrays (e.g. the module's output) instead.",
            )
        )


class TransformAxisSizeError(LensError, ValueError):
    """A mapped or scanned transform cannot tell how many elements to map over.

    Wrong::

        lift.vmap(fn, variable_axes={"params": 0}, split_rngs={"params": True})(scope)

    Right: pass a mapped argument, or the size::

        lift.vmap(fn, ..., axis_size=4)(scope)
    """


class BranchStructureMismatchError(LensError, ValueError, TypeError):
    """The branches of ``cond``/``switch`` create or mutate different variables.

    Under ``cond``/``switch`` all branches are traced, and each must return the same
    variable structure. Wrong::

        lift.cond(pred, lambda s: dense(s.push("a"), x), lambda s: x, scope)

    Right: create the variables in every branch (e.g. call each submodule once
    before the cond, or use the same submodules in both branches).

    A ``TypeError`` (and a ``ValueError``), as JAX's error for branches of
    different output types, which Flax raises here.
    """


class LoopBroadcastDependenceError(LensError, ValueError):
    """A broadcast variable of ``scan``/``while_loop`` depends on the loop.

    Broadcast variables are initialised once, before the loop, so their initial
    value must not depend on the carry or the scanned inputs. Wrong::

        self.param("w", lambda rng: carry * 2)

    Right: initialise from shapes and rngs only, or make the collection a scanned
    (``variable_axes``) or carried (``variable_carry``) one.
    """


class TracerLeakError(LensError, RuntimeError):
    """A lifted transform would have returned a JAX tracer as a variable.

    A value created inside a transform's trace cannot leave it. This is a lens
    guard: report it with the model that triggers it.
    """


# ----------------------------------------------------------------------- metadata


class PartitioningUnspecifiedError(LensError, ValueError):
    """A transform added or removed an axis of a ``Partitioned`` box without naming it.

    Wrong::

        nn.scan(Block, variable_axes={"params": 0}, length=8)

    Right::

        nn.scan(Block, variable_axes={"params": 0}, length=8,
                metadata_params={nn.PARTITION_NAME: "layers"})
    """

    def __init__(self, target: Any):
        super().__init__(
            _join(
                'Trying to transform a Partitioned variable but "partition_name" is '
                f"not specified in metadata_params: {target}",
                "Pass metadata_params={nn.PARTITION_NAME: 'layers'} (or None) to the "
                "vmap/scan that adds the axis.",
            )
        )


PartitionNameMissingError = PartitioningUnspecifiedError


class PartitionAxisMismatchError(LensError, ValueError, AssertionError):
    """A transform removed an axis of a ``Partitioned`` box that carries another
    name there than the transform's ``metadata_params`` give.

    The axis a ``vmap``/``scan`` added at init (named by its
    ``metadata_params={nn.PARTITION_NAME: ...}``) is the one it removes at
    apply, so the two must name it alike. Wrong::

        nn.scan(Block, variable_axes={"params": 0}, length=8,
                metadata_params={nn.PARTITION_NAME: "layers"})   # at init
        nn.scan(Block, variable_axes={"params": 0}, length=8,
                metadata_params={nn.PARTITION_NAME: "blocks"})   # at apply

    Right: the same ``metadata_params`` for both. Flax checks this with a bare
    ``assert``; this error is an ``AssertionError`` and a ``ValueError``.
    """

    def __init__(self, index: int, found: Any, expected: Any):
        super().__init__(
            f"Partitioned: axis {index} is named {found!r} but the transform that "
            f"removes it names it {expected!r}.\nUse the same metadata_params "
            "({nn.PARTITION_NAME: ...}) as the transform that added the axis."
        )


class UnusedVariablesWarning(UserWarning):
    """``apply`` was given variables that no module read.

    A typo'd or renamed name trains nothing: the module reads the name it
    declares, and the extra value is ignored. Wrong::

        params["Dense_0"]["kernal"] = pretrained   # the layer reads "kernel"
        model.apply({"params": params}, x)

    Right: use the names ``model.init`` returns (``jax.tree_util.tree_map``
    over both trees shows a mismatch), or drop what the model does not use. To
    silence it on purpose: ``warnings.filterwarnings("ignore",
    category=lens.errors.UnusedVariablesWarning)``.
    """

    def __init__(self, paths: Sequence[str] = (), count: int | None = None):
        count = len(paths) if count is None else count
        more = f" (and {count - len(paths)} more)" if count > len(paths) else ""
        super().__init__(
            f"apply was given {count} variable(s) that no module read: "
            f"{', '.join(paths)}{more}.\nA typo'd or renamed name trains nothing; "
            "compare the names with those model.init returns."
        )
        self.paths = tuple(paths)
        self.count = count

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.paths, self.count))


UnusedVariablesWarning.__module__ = "lens.errors"  # where users find it
