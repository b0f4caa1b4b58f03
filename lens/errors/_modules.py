"""Errors of modules, checkpoints and serialization, and lens.nnx."""

from __future__ import annotations

from typing import Any

from lens.errors._base import LensError, _join

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

    Strict mode (``lens.strict``) raises it also for a field set on an unbound
    module after construction (Flax allows that). Wrong::

        dense = nn.Dense(3)
        dense.features = 5       # a shared or already-adopted Dense changes too

    Right: ``dense = dense.clone(features=5)``.
    """

    def __init__(
        self, module_cls: str, attr_name: str, attr_val: Any, unbound: bool = False
    ):
        if unbound:
            fix = _join(
                f"Make a changed copy instead: module.clone({attr_name}=...).",
                "lens strict mode reports this (Flax allows it on an unbound module).",
            )
        else:
            fix = (
                "Assign submodules and derived attributes in setup(), and keep "
                "changing state in variables (self.variable(...))."
            )
        super().__init__(
            _join(
                f"Can't set {attr_name}={attr_val} for Module of type {module_cls}: "
                "Module instance is frozen outside of setup method.",
                fix,
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


class InvalidHyperparameterError(LensError, ValueError, TypeError):
    """A layer was built with a hyperparameter that describes no layer.

    Wrong::

        nn.Dense(features=-1)
        nn.Dropout(rate=1.5)            # a probability is in [0, 1]
        nn.MultiHeadDotProductAttention(num_heads=0)

    Right: ``nn.Dense(features=16)``, ``nn.Dropout(rate=0.1)``,
    ``nn.MultiHeadDotProductAttention(num_heads=4)``. Flax accepts these and
    fails later inside JAX (a negative shape, a division by zero), or never.
    It is a ``ValueError`` and, as JAX's error for a negative shape, a
    ``TypeError``; for a size of 0, where Flax divides by it (an initializer's
    fan), also a ``ZeroDivisionError``, so an ``except`` written for Flax's
    error catches lens's.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> InvalidHyperparameterError:
        value = args[2] if len(args) > 2 else kwargs.get("value")
        made: type[InvalidHyperparameterError] = cls
        if cls is InvalidHyperparameterError and _is_zero(value):
            made = ZeroSizeHyperparameterError
        return Exception.__new__(made, *args, **kwargs)

    def __init__(
        self, layer: str, field: str, value: Any, wanted: str = "", example: str = ""
    ):
        super().__init__(
            _join(
                f"{layer}: {field}={value!r} is not {wanted or 'a valid value'}.",
                f"Build the layer with a value that works, e.g. {example}."
                if example
                else "",
            )
        )


def _is_zero(value: Any) -> bool:
    """Whether ``value`` is a size of 0 (or a tuple with one)."""
    values = value if isinstance(value, tuple | list) else (value,)
    return any(type(v) is int and v == 0 for v in values)


class ZeroSizeHyperparameterError(InvalidHyperparameterError, ZeroDivisionError):
    """A layer was built with a size of 0; raised as InvalidHyperparameterError.

    Wrong::

        nn.Dense(features=0)
        nnx.Linear(0, 16, rngs=rngs)
        nn.Conv(16, kernel_size=0)

    Right: a positive size, ``nn.Dense(features=16)``. Flax divides by the size
    in the initializer (a fan of 0) and raises ``ZeroDivisionError``; this error
    is that class too, so code written against Flax catches it.
    """


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


class CheckpointCorruptedError(LensError, ValueError):
    """A checkpoint's bytes differ from the ones saved (its checksum does not match).

    ``save_checkpoint(..., checksum=True)`` stores a SHA-256 of the file's contents
    with it; ``restore_checkpoint`` checks it and raises this error instead of
    restoring values that a disk, a copy or a network changed. Wrong: restoring
    the file anyway. Right: restore an earlier step
    (``restore_checkpoint(d, target, step=...)``) or the file from a backup.
    """

    def __init__(self, path: Any, detail: str = ""):
        super().__init__(
            f'Checkpoint at "{path}" is corrupted: its contents do not match the '
            f"checksum saved with it.{' ' + detail if detail else ''}\nRestore an "
            "earlier step (restore_checkpoint(ckpt_dir, target, step=...)) or a copy "
            "of the file from elsewhere."
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

    The message is Flax's ``ValueError`` message, word for word (Flax's tests
    compare it literally); lens's lines on where and how to fix are its notes,
    shown after it in a traceback.
    """

    flax_literal_message = True


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

    Only arguments are split and tracked. Where outputs have axes or shardings
    (``jit``, ``vmap``, ``pmap``, ``scan``, ``shard_map``), and in the simple
    modes (``graph=False``, ``graph_updates=False``) everywhere but
    ``eval_shape``, returning a captured object is refused, as flax.nnx refuses
    it. Wrong::

        m = Linear(2, 3, rngs=rngs)

        @nnx.vmap(axis_size=5)
        def f():
            return m

    Right: pass ``m`` as an argument (it comes back as itself), or create the object
    inside the function. ``nnx.eval_shape(lambda: m)`` (an abstract copy of ``m``),
    and in the full graph mode ``cond``, ``switch``, ``remat``, ``checkify``,
    ``grad``'s aux and ``custom_vjp``, return a copy of it, as flax.nnx does.
    """


class VariableInPlaceError(LensError, NotImplementedError):
    """An augmented assignment (``+=``, ``*=``, ...) on an ``nnx.Variable`` itself.

    ``v += 1`` would rebind ``v`` (or ``self.count``) to a plain array and drop
    the Variable from the model's state, so flax.nnx refuses it, and so does lens.
    Wrong::

        self.count += 1

    Right: update the value the Variable holds, ``self.count[...] += 1`` (or
    ``self.count.value += 1``).
    """

    def __init__(self, variable: Any, op: str):
        kind = type(variable).__name__
        super().__init__(
            "In-place operations are no longer supported for Variable.\n"
            f"`{op}` on a {kind} would replace the {kind} with a plain array and "
            f"drop it from the model's state. Use `variable[...] {op} x` (or "
            f"`variable.value {op} x`) instead: it updates the value the {kind} "
            "holds."
        )


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


class InvalidStateFilterError(LensError, TypeError, ValueError):
    """An ``nnx`` state filter is not one of the supported forms.

    A filter is a Variable type (``nnx.Param``), a tag string, ``...`` or
    ``True`` (everything), ``False`` or ``None`` (nothing), a tuple of filters,
    ``nnx.Not``/``All``/``Any`` of filters, or a function ``(path, value) ->
    bool``. Wrong: ``nnx.state(model, 3)``. Right: ``nnx.state(model,
    nnx.Param)``. Flax means a ``TypeError`` here and, for a number, raises a
    ``ValueError`` (its message's format fails); this error is both.
    """

    def __init__(self, filter_like: Any):
        super().__init__(
            _join(
                f"Invalid collection filter: {filter_like!r}.",
                "Use a Variable type (nnx.Param), a tag string, ..., a tuple of "
                "filters, or a function (path, value) -> bool.",
            )
        )


class GraphStructureError(LensError, ValueError):
    """The object graph of a ``lens.nnx`` argument changed shape inside a transform,
    or a split/merge was given states that do not fit its graph.

    Transforms carry values across, not structure: create submodules and variables
    before the transform (e.g. in ``__init__``), and only update their values in it.
    """


class GradientShapeError(LensError, TypeError, ValueError):
    """``Optimizer.update`` was given a gradient whose shape is not its
    Variable's.

    Wrong::

        grads = nnx.grad(loss)(nnx.Linear(3, 5, rngs=rngs))  # another model
        optimizer.update(model, grads)                       # model: Linear(3, 4)

    Right: take the gradients of the model being updated, with the optimizer's
    filter: ``nnx.grad(loss, argnums=nnx.DiffState(0, wrt))(model)``. Flax fails
    inside optax's arithmetic with JAX's ``TypeError`` (incompatible shapes for
    broadcasting) and no path; this error names the path first, and is a
    ``TypeError`` as flax's is (and a ``ValueError``, as lens's was).
    """


class TangentStructureError(LensError, TypeError, ValueError):
    """The backward pass of ``nnx.custom_vjp`` returned tangents of another
    structure than the differentiated arguments.

    ``bwd(res, g)`` returns a tuple with one tangent per differentiated argument:
    a State for an object (as ``nnx.state(model)`` gives), an array (or the same
    pytree) otherwise. In the full graph mode ``g`` is a pair, the cotangent of
    the arguments' updates and the output's. Wrong::

        f.defvjp(fwd, lambda res, g: (g * 2,))   # g is (updates_g, out_g)

    Right::

        def bwd(res, g):
            _, out_g = g
            return (out_g * 2,)

    flax.nnx leaves the check to JAX, whose ``TypeError`` (a tuple of the right
    length but another structure) or ``ValueError`` (another length) names no
    argument; this error is both, and says which tangent is wrong.
    """


class LoopCarryStructureError(GraphStructureError, TypeError):
    """The body of ``nnx.scan``, ``nnx.fori_loop`` or ``nnx.while_loop`` returned
    a carry of another structure than it was given: another pytree, or an object
    that gained or lost a submodule or Variable.

    Wrong::

        nnx.while_loop(lambda c: c.sum() < 9, lambda c: (c, c), x)

        def body(i, model):
            model.extra = nnx.Param(jnp.zeros(3))  # created inside the loop
            return model

    Right: return the carry in the form it came in (``lambda c: c * 2``), and
    create submodules and Variables before the loop, only updating their values
    in it. JAX raises ``TypeError`` for a loop carry that changes structure (and
    flax.nnx a ``ValueError`` for a scan carry); this error is both classes, so
    code written against either catches it.
    """
