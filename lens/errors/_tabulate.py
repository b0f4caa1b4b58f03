"""What ``nn.tabulate`` and ``nnx.tabulate`` raise about their cost columns."""

from __future__ import annotations

from lens.errors._base import LensError, _join


class TabulateOptionError(LensError, TypeError):
    """A cost option of ``tabulate`` was given something other than True or False.

    ``compute_flops``, ``compute_vjp_flops`` and lens's ``compute_cost`` each add
    columns; they take a bool. Wrong::

        nn.tabulate(model, key, compute_cost="bytes")(x)

    Right::

        nn.tabulate(model, key, compute_flops=True, compute_cost=True)(x)
    """

    def __init__(self, tool: str = "tabulate", option: str = "", got: str = ""):
        super().__init__(
            _join(
                f"{tool}: {option} must be True or False, got {got}.",
                "compute_flops and compute_vjp_flops add Flax's FLOPs columns; "
                "compute_cost=True adds bytes accessed, parameter and activation "
                f"bytes (and units): pass {option}=True.",
            )
        )


class TabulateCostError(LensError, RuntimeError):
    """``tabulate`` could not lower one module call to measure its cost.

    With ``compute_flops``, ``compute_vjp_flops`` or ``compute_cost``, each call
    in the table is lowered alone (``jax.jit(call).lower(...)``), and its VJP for
    ``compute_vjp_flops``. A call that JAX cannot lower or differentiate alone
    stops the table; the message names the call (its module path and method) and
    chains JAX's error. The usual cause is a VJP through an operation JAX cannot
    reverse-differentiate (a ``lax.while_loop``, an integer output). Wrong::

        nn.tabulate(ModelWithWhileLoop(), key, compute_vjp_flops=True)(x)

    Right (the forward costs only)::

        nn.tabulate(ModelWithWhileLoop(), key, compute_flops=True,
                    compute_cost=True)(x)
    """

    def __init__(
        self,
        tool: str = "tabulate",
        where: str = "",
        option: str = "compute_flops",
        error: str = "",
    ):
        vjp = option == "compute_vjp_flops"
        what = "differentiate and lower" if vjp else "lower"
        fix = (
            "Pass compute_vjp_flops=False (the forward columns still work)."
            if vjp
            else "Pass depth= above this module to leave its row out (its "
            "parent's row counts it), or compute_flops=False and compute_cost=False."
        )
        super().__init__(
            _join(
                f"{tool}: could not {what} the call {where} for {option}: {error}",
                "Each call is lowered alone (jax.jit(call).lower) to read XLA's cost "
                "analysis. " + fix,
            )
        )
