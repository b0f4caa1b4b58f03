"""Every lens error pickles, unpickles and deep-copies with its message.

STYLE.md: "Every error pickles with its message, so worker processes can report
it". The walk covers every class that lens.errors exports and every LensError
subclass defined anywhere in lens (a class defined outside lens.errors must keep its
own ``__module__``, or pickle looks for it in the wrong module).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle

import pytest

import lens.errors as errors

for _mod in ("lens", "lens.core", "lens.nn", "lens.nnx", "lens.training", "lens.io"):
    importlib.import_module(_mod)
import lens.training.checkpoints  # noqa: E402,F401  (its errors)


def _all_subclasses(cls):
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _all_subclasses(sub)
    return out


def _error_classes():
    exported = {
        v
        for v in vars(errors).values()
        if inspect.isclass(v) and issubclass(v, BaseException)
    }
    found = {c for c in _all_subclasses(errors.LensError) if c.__module__ != __name__}
    return sorted(exported | found, key=lambda c: (c.__module__, c.__qualname__))


ERRORS = _error_classes()

# Placeholder values tried for each required constructor argument, in turn.
_ATTEMPTS = ("x", 1, ("a", "b"), None)


def _instance(cls):
    """An instance built by the class's own constructor where one can be."""
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        required = [
            p
            for p in list(sig.parameters.values())[1:]
            if p.default is p.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        for value in _ATTEMPTS:
            try:
                return cls(*[value] * len(required))
            except Exception:
                continue
    err = cls.__new__(cls)
    Exception.__init__(err, "a message")
    return err


def test_the_walk_finds_the_errors():
    names = {c.__name__ for c in ERRORS}
    assert len(ERRORS) > 40
    assert {"ScopeParamShapeError", "DuplicateScopeNameError", "LensError"} <= names


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__qualname__)
def test_error_round_trips_through_pickle(cls):
    err = _instance(cls)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls
    assert str(again) == str(err)
    assert str(copy.deepcopy(err)) == str(err)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__qualname__)
def test_error_module_names_where_the_class_lives(cls):
    mod = importlib.import_module(cls.__module__)
    assert getattr(mod, cls.__qualname__, None) is cls, (
        f"{cls.__qualname__} says it lives in {cls.__module__}, but is not there"
    )


def test_a_user_subclass_of_lens_error_keeps_its_module_and_pickles():
    global UserError

    class UserError(errors.LensError, ValueError):
        pass

    UserError.__qualname__ = "UserError"
    assert UserError.__module__ == __name__
    again = pickle.loads(pickle.dumps(UserError("boom")))
    assert type(again) is UserError and "boom" in str(again)
