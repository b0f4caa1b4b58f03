"""lens.typing.BaseConfigContext behaves as flax.typing's: set, ``with``, decorator."""

import pytest

from lens import typing as lens_typing

flax_typing = pytest.importorskip("flax.typing")


def make(base):
    class Mode(base):
        stack: list = []

        @classmethod
        def get_default(cls):
            return "default"

        @classmethod
        def get_stack(cls):
            return cls.stack

    return Mode


def script(Mode):
    seen = [Mode.current_value()]
    with Mode("a"):
        seen.append(Mode.current_value())
        with Mode("b"):
            seen.append(Mode.current_value())
        seen.append(Mode.current_value())
    seen.append(Mode.current_value())
    Mode("set")  # a plain call sets it from then on
    seen.append(Mode.current_value())

    @Mode("deco")
    def f():
        return Mode.current_value()

    seen += [Mode.current_value(), f(), Mode.current_value()]
    with Mode("c"):
        seen.append(Mode.current_value())
    seen += [Mode.current_value(), list(Mode.stack)]
    return seen


def test_base_config_context_matches_flax():
    got = script(make(lens_typing.BaseConfigContext))
    assert got == script(make(flax_typing.BaseConfigContext))
    assert got[:5] == ["default", "a", "b", "a", "default"]
