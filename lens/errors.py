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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def path_text(path: Sequence[Any] | str) -> str:
    """Renders a scope path as ``/a/b`` (``/`` for the root); strings pass through."""
    if isinstance(path, str):
        return path
    return "/" + "/".join(str(p) for p in path)


def _doc_pointer(cls: type) -> str:
    return (
        f"(docs: help(lens.errors.{cls.__name__}), "
        f"docs/errors.md#{cls.__name__.lower()})"
    )


def _rebuild(cls: type[Exception], message: str) -> Exception:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    return err


class LensError(Exception):
    """Base class of every error lens raises on purpose.

    The message is built by each subclass's constructor; ``__reduce__`` rebuilds
    an error from its message, so errors pickle whatever their constructor takes.
    """

    def __init__(self, message: str = ""):
        # Like Flax's "<message> (<link>)": the pointer ends the first line, so a
        # pattern written for Flax's first line still matches; lens's lines on
        # where and how to fix follow.
        pointer = _doc_pointer(type(self))
        if pointer not in message:
            first, sep, rest = message.partition("\n")
            message = f"{first} {pointer}{sep}{rest}" if first else pointer + sep + rest
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), str(self)))

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0]) if self.args else ""


FlaxError = LensError
"""Flax's name for the base class: ``except errors.FlaxError`` keeps working."""


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


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


class BranchStructureMismatchError(LensError, ValueError):
    """The branches of ``cond``/``switch`` create or mutate different variables.

    Under ``cond``/``switch`` all branches are traced, and each must return the same
    variable structure. Wrong::

        lift.cond(pred, lambda s: dense(s.push("a"), x), lambda s: x, scope)

    Right: create the variables in every branch (e.g. call each submodule once
    before the cond, or use the same submodules in both branches).
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


# ------------------------------------------------------------------------ modules


class SetAttributeInModuleSetupError(LensError, AttributeError):
    """A construction attribute (a dataclass field) was assigned in ``setup``.

    Construction attributes are fixed; ``setup`` may add new attributes only.
    Wrong::

        def setup(self):
            self.features = 3      # a field

    Right: compute into a new attribute (``self.width = self.features * 2``).
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Module construction attributes are frozen.",
                "setup() may add attributes but not change the dataclass fields; "
                "store the derived value under a new name.",
            )
        )


class SetAttributeFrozenModuleError(LensError, AttributeError):
    """A module attribute was set outside ``setup``.

    Modules are frozen dataclasses: construction attributes are fixed, and new
    attributes (submodules, variables) are assigned in ``setup`` only. Wrong::

        def __call__(self, x):
            self.count = 1

    Right: keep state in a variable (``self.variable("state", "count", ...)``),
    or assign in ``setup``.
    """

    def __init__(self, module_cls: str, attr_name: str, attr_val: Any):
        super().__init__(
            _join(
                f"Can't set {attr_name}={attr_val} for Module of type {module_cls}: "
                "Module instance is frozen outside of setup method.",
                "Assign submodules and derived attributes in setup(), and keep "
                "changing state in variables (self.variable(...)).",
            )
        )


class AssignSubModuleError(LensError, AttributeError):
    """A submodule was created outside ``setup`` and outside a ``@compact`` method.

    Wrong::

        def __call__(self, x):            # not @compact
            return Dense(3)(x)

    Right: decorate the method with ``@nn.compact``, or create the submodule in
    ``setup``.
    """

    def __init__(self, cls: str, *, parent: str | None = None):
        where = f" of {parent}" if parent else ""
        super().__init__(
            _join(
                f"Submodule {cls} must be defined in `setup()` or in a method "
                "wrapped in `@compact`",
                f"Decorate the method{where} with @nn.compact, or assign the "
                "submodule in setup().",
            )
        )


class MultipleMethodsCompactError(LensError, TypeError):
    """A module has more than one ``@compact`` method.

    Wrong::

        class M(nn.Module):
            @nn.compact
            def __call__(self, x): ...
            @nn.compact
            def encode(self, x): ...

    Right: one ``@compact`` method; put other submodules in ``setup``.
    """

    def __init__(self, detail: str = "") -> None:
        super().__init__(_join("Only one method per class can be @compact", detail))


class ReservedModuleAttributeError(LensError, TypeError):
    """A module declared a field whose name is reserved (``parent``, ``name``).

    Wrong::

        class M(nn.Module):
            name: str

    Right: pick another field name (``label: str``).
    """

    def __init__(self, annotations: Any):
        super().__init__(
            _join(
                f"properties `parent` and `name` are reserved: {annotations}",
                "Rename the field (e.g. name -> label).",
            )
        )


class ApplyModuleInvalidMethodError(LensError, TypeError):
    """``method=`` in ``init``/``apply`` is not a method of the module.

    Wrong: ``model.apply(v, x, method="encdoe")``. Right: ``method="encode"``, a
    function ``Model.encode``, or ``lambda m, x: m.encoder(x)``.
    """

    def __init__(self, method: Any, *, detail: str = ""):
        super().__init__(
            _join(
                f"Cannot call apply(): {method} is not a valid function for apply().",
                detail
                or "Pass the name of a method, a function f(module, *args), or a "
                "method of the module.",
            )
        )


class CallCompactUnboundModuleError(LensError, RuntimeError):
    """A compact method of a module with no variables (unbound) was called.

    Wrong::

        Dense(3)(x)

    Right::

        variables = Dense(3).init(key, x)
        y = Dense(3).apply(variables, x)        # or Dense(3).bind(variables)(x)
    """

    def __init__(self, module: str | None = None, method: str | None = None):
        what = f" ({module}.{method})" if module and method else ""
        super().__init__(
            _join(
                "Can't call compact methods on unbound modules",
                f"The module{what} has no variables: use init/apply "
                "(variables = m.init(key, x); m.apply(variables, x)) or "
                "m.bind(variables).",
            )
        )


class CallSetupUnboundModuleError(LensError, RuntimeError):
    """``setup`` was called by hand on an unbound module.

    ``setup`` runs lazily once the module is bound (by init, apply or bind). Wrong::

        MyModule().setup()

    Right::

        MyModule().bind(variables).submodule     # setup runs on access
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Can't call compact methods on unbound modules",
                "setup() runs by itself once the module is bound: use "
                "m.bind(variables) or init/apply.",
            )
        )


class CallUnbindOnUnboundModuleError(LensError, RuntimeError):
    """``unbind()`` was called on a module that is not bound.

    Wrong: ``MyModule().unbind()``. Right: ``MyModule().bind(variables).unbind()``.
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Can't call `unbind()` on unbound modules",
                "Only a bound module (from bind, or inside init/apply) has variables "
                "to unbind.",
            )
        )


class CallShareScopeOnUnboundModuleError(LensError, RuntimeError):
    """``nn.share_scope`` was called with an unbound module.

    Call it in ``setup`` (or a compact method) of the parent of both modules.
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Can't call `share_scope` on unbound modules",
                "Call nn.share_scope(self, other) from setup() of a bound module.",
            )
        )


class InvalidInstanceModuleError(LensError, TypeError):
    """``init``/``apply`` was called on the Module class instead of an instance.

    Wrong: ``MLP.init(key, x)``. Right: ``MLP().init(key, x)``.
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Can only call init, init_with_output or apply methods on an "
                "instance of the Module class, not the Module class itself",
                "Construct the module first: MLP(...).init(key, x).",
            )
        )


class IncorrectPostInitOverrideError(LensError, TypeError):
    """A module overrides ``__post_init__`` without calling ``super().__post_init__()``.

    Right::

        def __post_init__(self):
            super().__post_init__()
            ...
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Overrode `.__post_init__()` without calling `super().__post_init__()`",
                "Call super().__post_init__() first in your __post_init__.",
            )
        )


class DescriptorAttributeError(LensError):
    """A property of a module read an attribute that does not exist.

    The property's own ``AttributeError`` would otherwise look like the property
    itself is missing. (Not an ``AttributeError``, so that Python does not fall
    back to ``__getattr__`` and hide it.)
    """

    def __init__(self) -> None:
        super().__init__(
            _join(
                "Trying to access a property that is accessing a non-existent "
                "attribute.",
                "See the chained exception for the attribute the property read.",
            )
        )


class ImmutableVariableError(LensError, ValueError):
    """A variable marked immutable was written."""

    def __init__(self, message: str):
        super().__init__(message)


# -------------------------------------------------------------- checkpoints, io


class InvalidCheckpointError(LensError, ValueError):
    """A checkpoint older than the newest one was about to be saved."""

    def __init__(self, path: Any, step: Any):
        super().__init__(
            f'Trying to save an outdated checkpoint at step: "{step}" and path: '
            f'"{path}".'
        )


class MPACheckpointingRequiredError(LensError, ValueError):
    """A multi-process array must be saved with a multi-process checkpointer."""

    def __init__(self, path: Any, step: Any):
        super().__init__(
            f'Checkpoint failed at step: "{step}" and path: "{path}": Target '
            "contains a multiprocess array should be saved/restored with a "
            "GlobalAsyncCheckpointManager."
        )


class MPARestoreTargetRequiredError(LensError, ValueError):
    """A multi-process array can only be restored into a target of pre-made arrays."""

    def __init__(self, path: Any, step: Any, key: Any = None):
        at = f' at key "{key}"' if key is not None else ""
        super().__init__(
            f'Restore checkpoint failed at step: "{step}" and path: "{path}": '
            "Checkpoints containing a multiprocess array need to be restored with "
            f"a target with pre-created arrays{at}."
        )


class MPARestoreDataCorruptedError(LensError, ValueError):
    """The saved multi-process array has no commit marker (its save was cut off)."""

    def __init__(self, step: Any, path: Any):
        super().__init__(
            f'Restore checkpoint failed at step: "{step}" on multiprocess array at '
            f' "{path}": No "commit_success.txt" found on this "_gda" directory. '
            "Was its save halted before completion?"
        )


class AlreadyExistsError(LensError, FileExistsError):
    """A file was about to be overwritten."""

    def __init__(self, path: Any):
        super().__init__(f'Trying overwrite an existing file: "{path}".')


class CursorFindError(LensError, ValueError):
    """A cursor search found no object, or more than one."""

    def __init__(self, cursor: Any = None, cursor2: Any = None):
        if cursor is not None and cursor2 is not None:
            msg = (
                "More than one object found given the conditions of the cond_fn. "
                "The first two objects found have the following paths: "
                f"{getattr(cursor, '_path', cursor)} and "
                f"{getattr(cursor2, '_path', cursor2)}"
            )
        else:
            msg = "No object found given the conditions of the cond_fn."
        super().__init__(msg)


class TraverseTreeError(LensError, ValueError):
    """Exactly one of ``update_fn`` and ``cond_fn`` must be given."""

    def __init__(self, update_fn: Any, cond_fn: Any):
        if update_fn is None and cond_fn is None:
            msg = (
                "Both update_fn and cond_fn are None. Exactly one of them must be None."
            )
        else:
            msg = (
                "Both update_fn and cond_fn are not None. Exactly one of them must be "
                "not None."
            )
        super().__init__(msg)


class SerializationError(LensError, ValueError):
    """Bytes or a state dict could not be restored into the target.

    The target gives the structure (e.g. ``model.init(...)`` or the variables
    saved earlier). Wrong: restoring bytes of another model, or truncated bytes.
    Right: ``from_bytes(variables_like_the_saved_ones, data)``.
    """


# ---------------------------------------------------------------------- lens.nnx


class InconsistentAliasingError(LensError, ValueError):
    """One object reached a ``lens.nnx`` transform with two different specifications.

    Objects have reference semantics, so every alias of one object (the same module
    passed twice, a submodule shared by two arguments, an input returned as an
    output) must be lifted the same way. Wrong::

        @nnx.vmap(in_axes=(0, 1))
        def f(m1, m2): ...
        f(m, m)                       # m is mapped on axis 0 and on axis 1

        @nnx.vmap(in_axes=0, out_axes=1)
        def g(m): return m            # m goes in on axis 0 and out on axis 1

    Right: give every alias the same axes (``in_axes=(0, 0)``, ``out_axes=0``), or
    pass the object once.
    """


class CapturedOutputError(LensError, ValueError):
    """A ``lens.nnx`` transform returned an object it captured from outside.

    Only arguments are split and tracked; returning a captured object would hand
    back a silent copy. Wrong::

        m = Linear(2, 3, rngs=rngs)

        @nnx.vmap(axis_size=5)
        def f():
            return m

    Right: pass ``m`` as an argument (it comes back as itself), or create the object
    inside the function.
    """


class TraceContextError(LensError, RuntimeError):
    """An object created outside a ``lens.nnx`` transform was mutated inside it.

    Inside the transform the values are tracers; writing them into a captured object
    would leak them. Wrong::

        count = Counter()

        @nnx.jit
        def f(x):
            count.n.value += 1        # count was captured, not passed

    Right: pass the object as an argument, ``f(count, x)``; its changes come back.
    """


class GraphStructureError(LensError, ValueError):
    """The object graph of a ``lens.nnx`` argument changed shape inside a transform,
    or a split/merge was given states that do not fit its graph.

    Transforms carry values across, not structure: create submodules and variables
    before the transform (e.g. in ``__init__``), and only update their values in it.
    """
