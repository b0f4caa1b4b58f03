"""What ``lens.compile_time`` raises when it cannot measure a function."""

from __future__ import annotations

from lens.errors._base import LensError, _join

_HOW = (
    "Pass the function, then its arguments: lens.compile_time(train_step, state, "
    "batch) (a jax.jit, nnx.jit or plain function; lens jits a plain one)."
)


class CompileTimeTargetError(LensError, TypeError):
    """``lens.compile_time`` was given something that is not a function.

    It measures tracing, lowering and compiling one call, so its first argument is
    the function and the rest are that call's arguments. Wrong::

        lens.compile_time(train_step(state, batch))   # the result, already run

    Right::

        lens.compile_time(train_step, state, batch)
    """

    def __init__(self, got: str = "", type_name: str = ""):
        super().__init__(
            _join(
                "lens.compile_time measures compiling a function, but it was given "
                f"a {type_name or 'value'}: {got}.",
                _HOW,
            )
        )


class CompileTimeStageError(LensError, RuntimeError):
    """A stage of the call ``lens.compile_time`` measures failed: tracing (the
    function raised with these arguments), lowering or compiling.

    The message names the function, where it is defined and the stage; the
    function's own error is chained (``__cause__``), with its traceback. The
    usual cause is a call that would fail as a jitted call too: a Python value
    that must be static, or arrays of the wrong shape. Wrong::

        lens.compile_time(jax.jit(step), state, batch, 0.1)   # lr used in Python

    Right::

        lens.compile_time(jax.jit(step, static_argnums=3), state, batch, 0.1)
    """

    def __init__(
        self,
        function: str = "",
        stage: str = "trace",
        where: str = "",
        error: str = "",
        arguments: str = "",
    ):
        at = f" ({where})" if where else ""
        super().__init__(
            _join(
                f"lens.compile_time could not {stage} {function}{at}: {error}",
                f"with the arguments {arguments}." if arguments else "",
                f"Check that the jitted call {function}(...) runs with these "
                "arguments (the error above shows the failing line); Python "
                "values the function branches on must be static (static_argnums).",
            )
        )
