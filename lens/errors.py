"""Errors raised by lens.

Every error is a :class:`LensError` and also the builtin exception that matches its
meaning (a shape mismatch is a ``ValueError``, a missing variable a ``LookupError``),
so ``except ValueError`` keeps working for code ported from Flax.

A message says what happened, where (the scope path such as ``/encoder/Dense_0`` and
the collection) and how to fix it. The class docstring holds the longer story, with
the wrong and the right code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def path_text(path: Sequence[Any]) -> str:
    """Renders a scope path as ``/a/b`` (``/`` for the root)."""
    return "/" + "/".join(str(p) for p in path)


class LensError(Exception):
    """Base class of every error lens raises on purpose."""


# --------------------------------------------------------------------------- scope


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

    def __init__(self, path: Sequence[Any]):
        super().__init__(
            f"The scope at {path_text(path)} was used after the init/apply that created "
            "it returned.\nScopes only live inside init/apply; return values from the "
            "function instead, or use bind(variables) for a long-lived scope."
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

    def __init__(self, name: str, path: Sequence[Any], expected: Any, actual: Any):
        super().__init__(
            f'Parameter "{name}" in {path_text(path)} (collection "params") has shape '
            f"{actual}, but its initializer makes shape {expected}.\n"
            "The hyper-parameters or input shape differ from those used at init; use "
            "the same ones, or re-initialise the variables."
        )


class ScopeParamNotFoundError(LensError, LookupError):
    """A parameter is read in ``apply`` but the variables given have none.

    Wrong::

        model.apply({"params": {}}, x)       # params were never initialised

    Right::

        variables = model.init(key, x)
        model.apply(variables, x)
    """

    def __init__(self, name: str, path: Sequence[Any], hint: str = ""):
        msg = (
            f'No parameter "{name}" in {path_text(path)} (collection "params"), and '
            '"params" is not mutable here, so it cannot be created.\n'
        )
        msg += hint or (
            "Pass the variables returned by init to apply, or make the collection "
            'mutable (mutable=["params"]) to create it.'
        )
        super().__init__(msg)

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0])


class ScopeVariableNotFoundError(LensError, LookupError):
    """A variable is read but does not exist and cannot be created here.

    Wrong::

        apply(fn)(variables)   # fn reads "batch_stats" that init never created

    Right: create it first (run init, or make the collection mutable).
    """

    def __init__(self, name: str, col: str, path: Sequence[Any], hint: str = ""):
        msg = (
            f'No variable "{name}" in collection "{col}" at {path_text(path)}, and '
            f'"{col}" is not mutable here, so it cannot be created.\n'
        )
        msg += hint or (
            f'Pass variables that contain it, or make "{col}" mutable '
            f'(mutable=["{col}"]) so that it can be initialised.'
        )
        super().__init__(msg)

    def __str__(self) -> str:
        return str(self.args[0])


class ModifyScopeVariableError(LensError, ValueError):
    """A variable was written in a collection that is not mutable.

    Wrong::

        y = model.apply(variables, x)                 # BatchNorm updates batch_stats

    Right::

        y, updates = model.apply(variables, x, mutable=["batch_stats"])
    """

    def __init__(self, col: str, name: str, path: Sequence[Any], hint: str = ""):
        msg = (
            f'Cannot write variable "{name}" in {path_text(path)}: collection "{col}" '
            "is not mutable here.\n"
        )
        msg += hint or (
            f'Make it mutable in apply (mutable=["{col}"]), or do not write to it.'
        )
        super().__init__(msg)


class NameInUseError(LensError, ValueError):
    """Two variables, or a variable and a submodule, got the same name in one scope.

    Wrong::

        scope.param("w", init, (2,))
        scope.param("w", init, (2,))     # same name twice in one call

    Right: give each variable or submodule its own name.
    """

    def __init__(self, kind: str, name: str, path: Sequence[Any]):
        super().__init__(
            f'Could not create {kind} "{name}" in {path_text(path)}: the name is '
            "already used by a variable or submodule of this scope.\n"
            "Give it a different name."
        )


class InvalidRngError(LensError, ValueError):
    """``make_rng`` asked for a stream that was not given to init/apply.

    Wrong::

        model.apply(variables, x)                         # Dropout needs "dropout"

    Right::

        model.apply(variables, x, rngs={"dropout": jax.random.key(1)})
    """

    def __init__(self, stream: str, path: Sequence[Any], hint: str = ""):
        msg = (
            f'{path_text(path)} needs the rng stream "{stream}", which was not given.\n'
        )
        msg += hint or (
            f'Pass it to init/apply: rngs={{"{stream}": jax.random.key(0)}}.'
        )
        super().__init__(msg)


class ApplyScopeInvalidVariablesTypeError(LensError, TypeError):
    """The variables given to apply are not a mapping of collections.

    Wrong::

        model.apply(params, x)             # the bare params dict

    Right::

        model.apply({"params": params}, x)
    """

    def __init__(self, got: Any):
        super().__init__(
            "The variables given to apply must be a dict of collections "
            f'{{"params": {{...}}, ...}}, got {type(got).__name__}.\n'
            'Wrap parameters as {"params": params}.'
        )


class ApplyScopeInvalidVariablesStructureError(LensError, ValueError):
    """The variables look like a bare params dict instead of ``{"params": ...}``.

    Wrong::

        model.apply(variables["params"], x)

    Right::

        model.apply({"params": variables["params"]}, x)
    """

    def __init__(self, keys: Sequence[str]):
        super().__init__(
            "The variables given to apply look like a bare params dict (top-level keys "
            f"{list(keys)[:4]}) but should be keyed by collection.\n"
            'Wrap them as {"params": params}.'
        )


class InvalidFilterError(LensError, TypeError):
    """A collection filter is not one of the supported forms.

    A filter is ``True``, ``False``, a collection name, a list/tuple/set of names, or
    ``DenyList(filter)``. Wrong: ``mutable=3``. Right: ``mutable=["batch_stats"]``.
    """

    def __init__(self, got: Any):
        super().__init__(
            f"Invalid collection filter {got!r}.\nUse True, False, a collection name, "
            'a list of names (["params", "batch_stats"]) or DenyList(filter).'
        )


# ------------------------------------------------------------------------- lifting


class CollectionNotLiftedError(LensError, LookupError):
    """A collection is used inside a lifted transform that did not lift it.

    Each transform only passes the collections its filters match (for ``vmap`` the
    keys of ``variable_axes``). Wrong::

        nn.vmap(MLP, variable_axes={"params": 0})        # BatchNorm needs batch_stats

    Right::

        nn.vmap(MLP, variable_axes={"params": 0, "batch_stats": 0})
    """

    def __init__(
        self, col: str, name: str, path: Sequence[Any], transform: str, fix: str
    ):
        super().__init__(
            f'Collection "{col}" (variable "{name}" at {path_text(path)}) is not lifted '
            f"into {transform}, so it is invisible inside it.\n{fix}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class RngNotLiftedError(LensError, LookupError):
    """An rng stream is used inside a lifted transform that did not lift it.

    Wrong::

        nn.vmap(Model, variable_axes={"params": 0}, split_rngs={"params": True})
        # ... Model uses Dropout, which needs the "dropout" stream

    Right::

        nn.vmap(Model, variable_axes={"params": 0},
                split_rngs={"params": True, "dropout": True})
    """

    def __init__(self, stream: str, path: Sequence[Any], transform: str, fix: str):
        super().__init__(
            f'The rng stream "{stream}" is used at {path_text(path)} but is not lifted '
            f"into {transform}.\n{fix}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


class TransformTargetError(LensError, TypeError):
    """A lifted transform was given something it cannot transform."""


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


class JaxTransformError(LensError, TypeError):
    """A module or scope was passed straight into a plain JAX transform.

    Wrong::

        jax.vmap(lambda mdl, x: mdl(x))(mlp, xs)

    Right: use the lifted transform, ``nn.vmap(MLP, variable_axes=..., ...)``.
    """


# ----------------------------------------------------------------------- metadata


class PartitionNameMissingError(LensError, ValueError):
    """A transform added an axis to a ``Partitioned`` box without naming it.

    Wrong::

        nn.scan(Block, variable_axes={"params": 0}, length=8)

    Right::

        nn.scan(Block, variable_axes={"params": 0}, length=8,
                metadata_params={nn.PARTITION_NAME: "layers"})
    """


# --------------------------------------------------------------------- modules


class SetAttributeFrozenModuleError(LensError, AttributeError):
    """A module attribute was set outside ``setup``.

    Modules are frozen dataclasses: construction attributes are fixed, and new
    attributes (submodules, variables) are assigned in ``setup`` only. Wrong::

        def __call__(self, x):
            self.count = 1

    Right: keep state in a variable (``self.variable("state", "count", ...)``),
    or assign in ``setup``.
    """

    def __init__(self, module: str, attr: str, path: str):
        super().__init__(
            f'Cannot set attribute "{attr}" of {module} at {path}: modules are frozen '
            "outside setup().\nAssign submodules and derived attributes in setup(), and "
            "keep changing state in variables (self.variable(...))."
        )


class CallCompactUnboundModuleError(LensError, RuntimeError):
    """A method of a module that has no variables (an unbound module) was called.

    Wrong::

        Dense(3)(x)

    Right::

        variables = Dense(3).init(key, x)
        y = Dense(3).apply(variables, x)        # or Dense(3).bind(variables)(x)
    """

    def __init__(self, module: str, method: str):
        super().__init__(
            f"Cannot call {module}.{method}: the module is unbound (it has no variables).\n"
            f"Use init/apply (variables = m.init(key, x); m.apply(variables, x)) or "
            "bind (m.bind(variables)) to call it."
        )


class AssignSubModuleError(LensError, AttributeError):
    """A submodule was created outside ``setup`` and outside a ``@compact`` method.

    Wrong::

        def __call__(self, x):            # not @compact
            return Dense(3)(x)

    Right: decorate the method with ``@nn.compact``, or create the submodule in
    ``setup``.
    """

    def __init__(self, cls: str, parent: str):
        super().__init__(
            f"Submodule {cls} must be created in setup() or in a method wrapped in "
            f"@compact of {parent}.\nDecorate the method with @nn.compact, or assign the "
            "submodule in setup()."
        )


class MultipleMethodsCompactError(LensError, TypeError):
    """A module has more than one ``@compact`` method, or both ``@compact`` and ``setup``.

    Wrong::

        class M(nn.Module):
            def setup(self): ...
            @nn.compact
            def __call__(self, x): ...

    Right: one ``@compact`` method, or ``setup`` with plain methods.
    """


class ReservedModuleAttributeError(LensError, TypeError):
    """A module declared a field whose name lens reserves (``parent``, ``name``, ``scope``...).

    Wrong::

        class M(nn.Module):
            name: str

    Right: pick another field name (``label: str``).
    """


class ApplyModuleInvalidMethodError(LensError, TypeError):
    """``method=`` in ``init``/``apply`` names no method of the module.

    Wrong: ``model.apply(v, x, method="encdoe")``. Right: ``method="encode"``, a
    function ``Model.encode``, or ``lambda m, x: m.encoder(x)``.
    """


class TransformedMethodReturnValueError(LensError, TypeError):
    """A transformed method returned a module; modules cannot leave a transform.

    Wrong::

        nn.vmap(lambda mdl, x: mdl, ...)

    Right: return arrays (e.g. ``mdl(x)``), or create the module outside.
    """


# ------------------------------------------------------------------ serialization


class SerializationError(LensError, ValueError):
    """Bytes or a state dict could not be restored into the target.

    The target gives the structure (e.g. ``model.init(...)`` or the variables
    saved earlier). Wrong: restoring bytes of another model, or truncated bytes.
    Right: ``from_bytes(variables_like_the_saved_ones, data)``.
    """


# -------------------------------------------------------------------- lens.nnx


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
