"""lens has Flax's public API: every name, Flax's signatures, and Flax's errors.

``flax_public_api.json`` lists, per Flax module, the public names Flax 0.12
defines there (kept in the repository, so this runs without flax). With flax
installed, the list is checked to be current and each callable's parameters are
compared with Flax's.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pathlib
import pickle

import pytest

import lens.errors as errors

API = json.loads((pathlib.Path(__file__).parent / "flax_public_api.json").read_text())

# Names lens adds after Flax's parameters (all keyword, all optional).
LENS_EXTRA_PARAMETERS = {"*.remat_scan": {"metadata_params"}}
# Callables whose signature lens writes differently on purpose (same call forms).
SIGNATURE_EXEMPT = {
    "flax.linen.Module",  # dataclass base: fields come from subclasses
    "flax.linen.module.Module",
}


def lens_name(flax_module: str) -> str:
    """``flax.linen.x`` -> ``lens.nn.x``; ``flax.y`` -> ``lens.y``."""
    name = flax_module.replace("flax.linen", "lens.nn", 1)
    return name.replace("flax", "lens", 1)


@pytest.mark.parametrize("flax_module", sorted(API))
def test_every_flax_public_name_exists(flax_module):
    mod = importlib.import_module(lens_name(flax_module))
    missing = [n for n in API[flax_module] if not hasattr(mod, n)]
    assert not missing, f"{lens_name(flax_module)} lacks {missing}"


def _params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind) for p in sig.parameters.values()]


def _fields(cls):
    return [f.name for f in dataclasses.fields(cls) if f.init]


@pytest.mark.parametrize("flax_module", sorted(API))
def test_signatures_and_fields_match_flax(flax_module):
    fmod = pytest.importorskip(flax_module)
    lmod = importlib.import_module(lens_name(flax_module))
    assert sorted(n for n in API[flax_module]) == API[flax_module]
    now = [n for n in API[flax_module] if not hasattr(fmod, n)]
    assert not now, f"the stored list names what {flax_module} no longer has: {now}"
    diffs = []
    for n in API[flax_module]:
        qual = f"{flax_module}.{n}"
        f, lo = getattr(fmod, n), getattr(lmod, n)
        if qual in SIGNATURE_EXEMPT or inspect.ismodule(f):
            continue
        if inspect.isclass(f) and dataclasses.is_dataclass(f):
            if dataclasses.is_dataclass(lo) and _fields(f) != _fields(lo):
                diffs.append(f"{n}: fields {_fields(lo)} != Flax's {_fields(f)}")
            continue
        if not callable(f) or inspect.isclass(f):
            continue
        fp, lp = _params(f), _params(lo)
        if fp is None or lp is None:
            continue
        # lens may add keyword-only options (and the listed ones) after Flax's.
        extra = LENS_EXTRA_PARAMETERS.get(f"*.{n}", set())
        flax_names = {p[0] for p in fp}
        lp = [
            p
            for p in lp
            if p[0] in flax_names
            or (p[0] not in extra and p[1] is not inspect.Parameter.KEYWORD_ONLY)
        ]
        if fp != lp:
            diffs.append(f"{n}: {lp} != Flax's {fp}")
    assert not diffs, "\n".join(diffs)


FLAX_ERRORS = sorted(
    n for n in API["flax.errors"] if n[0].isupper() and n.endswith(("Error", "Found"))
)


@pytest.mark.parametrize("name", FLAX_ERRORS)
def test_every_flax_error_class_exists_and_pickles(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.LensError) and issubclass(cls, errors.FlaxError)
    try:
        err = cls.__new__(cls)
        Exception.__init__(err, "message")
    except TypeError:  # pragma: no cover - every lens error is an Exception
        pytest.fail(f"{name} cannot be built")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and str(again) == str(err)


def test_errors_start_with_flax_first_sentence_then_lens_lines():
    """The first line is Flax's message and the docs pointer; lens's lines follow."""
    err = errors.ScopeParamShapeError("kernel", "/dense", (3, 4), (2, 4))
    first, *rest = str(err).split("\n")
    assert first.startswith(
        'For parameter "kernel" in "/dense", the given initializer is expected to '
        "generate shape (2, 4), but the existing parameter it received has shape "
        "(3, 4)."
    )
    assert first.endswith("docs/errors.md#flax.errors.ScopeParamShapeError)")
    assert rest, "lens adds where and how to fix"
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err)
