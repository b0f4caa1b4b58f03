"""Flax 0.12.8's public surface is lens's: every module, name, generic and
parameter name at the same path, less the reasoned exclusions
(``compat/surface_exclusions.toml``). One case per flax module, so a gap shows
where it is; ``make api-diff`` prints the same findings as a table.

The gaps lens still has are listed in ``compat/surface_known_gaps.txt`` (the
work list, not exclusions): a gap not listed fails (a regression), and so does a
listed gap that is gone (the list must shrink as the surface is built).
"""

import inspect

import pytest

pytest.importorskip("flax")

from compat import surface  # noqa: E402

MODULES = surface.flax_modules()


@pytest.mark.parametrize("flax_module", MODULES)
def test_flax_module_is_in_lens(flax_module):
    found = {surface.gap_line(g) for g in surface.check_module(flax_module)}
    known = surface.known_gaps().get(flax_module, set())
    new, closed = sorted(found - known), sorted(known - found)
    assert not new, "new gaps (build them):\n" + "\n".join(new)
    assert not closed, (
        "closed gaps still listed: remove them from compat/surface_known_gaps.txt "
        "(python -m compat.surface --write-known-gaps):\n" + "\n".join(closed)
    )


def test_the_walk_finds_flax_public_modules_only():
    assert {"flax", "flax.linen", "flax.core.meta", "flax.nnx.nn.linear"} <= set(
        MODULES
    )
    assert not [m for m in MODULES if "._" in m or "test" in m]
    import flax.core.meta as meta
    import flax.linen as linen

    names = surface.public_names(meta)
    assert "AxisMetadata" in names and "Partitioned" in names
    assert "TypeVar" not in names and "annotations" not in names
    assert "linear" not in surface.public_names(linen)  # submodules walk on their own


def test_exclusions_are_few_reasoned_and_real():
    excluded = surface.exclusions()
    assert len(excluded) <= 10
    for path, reason in excluded.items():
        assert len(reason.split()) >= 5, f"{path}: give a reason"
        module, _, name = path.partition(":")
        assert module in MODULES, f"{module} is not a flax public module"
        if name:
            assert name in surface.public_names(__import__(module, fromlist=["_"]))


def flax_like(a, b=1, *, c=2): ...


@pytest.mark.parametrize(
    ("lens_like", "gaps"),
    [
        (lambda a, b=1, *, c=2, d=3: None, []),
        (lambda a, b=1, **kw: None, []),
        (lambda *args, **kwargs: None, []),
        (lambda x, b=1, *, c=2: None, ["a (lens: x)"]),
        (lambda a, *, b=1, c=2: None, ["b (keyword-only in lens)"]),
        (lambda a, b=1: None, ["c"]),
        (lambda a, /, b=1, *, c=2: None, ["a (positional-only in lens)"]),
    ],
)
def test_signature_gaps_compare_flax_names_and_positions(lens_like, gaps):
    assert surface.signature_gaps(flax_like, lens_like) == gaps


def test_generic_classes_must_stay_generic():
    class Plain:
        pass

    flax_generic = inspect.getattr_static(
        __import__("flax.core.meta", fromlist=["_"]), "AxisMetadata"
    )
    assert surface._subscriptable(flax_generic)
    assert not surface._subscriptable(Plain)
