"""Flax 0.12.8's public surface is lens's: every module, name, generic and
parameter name at the same path, less the reasoned exclusions
(``parity/surface_exclusions.toml``). One case per flax module, so a gap shows
where it is; ``make api-diff`` prints the same findings as a table.

The gaps lens still has are listed in ``parity/surface_known_gaps.txt`` (the
work list, not exclusions): a gap not listed fails (a regression), and so does a
listed gap that is gone (the list must shrink as the surface is built).
"""

import collections.abc
import importlib
import inspect
import typing

import pytest

pytest.importorskip("flax")

from parity import surface  # noqa: E402

MODULES = surface.flax_modules()


@pytest.mark.parametrize("flax_module", MODULES)
def test_flax_module_is_in_lens(flax_module):
    found = {surface.gap_line(g) for g in surface.check_module(flax_module)}
    known = surface.known_gaps().get(flax_module, set())
    new, closed = sorted(found - known), sorted(known - found)
    assert not new, "new gaps (build them):\n" + "\n".join(new)
    assert not closed, (
        "closed gaps still listed: remove them from parity/surface_known_gaps.txt "
        "(python -m parity.surface --write-known-gaps):\n" + "\n".join(closed)
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
    # a submodule the package's import loads is one of its attributes
    assert "linear" in surface.public_names(linen)
    assert "jax" not in surface.public_names(linen)  # other libraries are not API


def test_the_walk_sees_what_a_users_import_sees():
    import flax.nnx
    import flax.nnx.graphlib
    import flax.nnx.nn.activations
    import flax.training

    # __all__: the JAX functions flax.nnx.nn.activations re-exports
    assert {"gelu", "relu", "one_hot", "tanh", "PReLU"} <= set(
        surface.public_names(flax.nnx.nn.activations)
    )
    # a package's attributes after fresh imports: `import flax.nnx` loads
    # flax.training.train_state, so it is an attribute of flax.training
    assert "train_state" in surface.public_names(flax.training)
    assert surface.package_submodules(flax.training) == {
        "train_state": "flax.training.train_state"
    }
    # flax.nnx.object is flax.nnx.pytreelib under another name
    assert surface.package_submodules(flax.nnx)["object"] == "flax.nnx.pytreelib"
    # values with no home of their own: a bool, JAX's registry dict
    configurations = importlib.import_module("flax.configurations")  # `del`-ed
    assert "TYPE_CHECKING" in surface.public_names(configurations)
    assert "JAX_PYTREE_REGISTRY" in surface.public_names(flax.nnx.graphlib)
    # `from flax.nnx.graphlib import *` makes graphlib's names graph's
    graph = importlib.import_module("flax.nnx.graph")
    assert "GraphDef" in surface.public_names(graph)


def test_lens_submodule_attributes_count_when_loaded_on_first_use():
    import lens.training

    found = surface._lens_submodule("flax.training", lens.training, "train_state")
    assert found is not None and found.__name__ == "lens.training.train_state"
    assert surface._lens_submodule("flax.training", lens.training, "nope") is None
    # lens's fresh imports leave their own packages' attributes, under flax's keys
    bridge = surface.fresh_package_attributes(alias=True)["flax.nnx.bridge"]
    assert bridge["wrappers"] == "lens.nnx.bridge.wrappers"
    # `import flax.core.nn` binding nn on flax.core says nothing of flax.core's own
    assert "nn" not in surface.fresh_package_attributes()["flax.core"]


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


def flax_positional_only(collection_filter, /): ...


def flax_forwarding(*args, **kwargs): ...


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


def test_positional_only_names_are_compared_too():
    assert surface.signature_gaps(flax_positional_only, lambda f, /: None) == [
        "collection_filter (lens: f)"
    ]
    assert (
        surface.signature_gaps(flax_positional_only, lambda collection_filter: 0) == []
    )


def test_a_forwarding_signature_needs_lens_to_take_arguments():
    assert surface.signature_gaps(flax_forwarding, lambda: None) == ["*args, **kwargs"]
    assert surface.signature_gaps(flax_forwarding, lambda x: None) == []

    class DropsThem:  # __new__ takes and drops them: nothing to forward
        def __new__(cls, *args, **kwargs):
            return super().__new__(cls)

    assert surface.signature_gaps(DropsThem, lambda: None) == []


def test_generic_classes_must_stay_generic():
    class Plain:
        pass

    flax_generic = inspect.getattr_static(
        __import__("flax.core.meta", fromlist=["_"]), "AxisMetadata"
    )
    assert surface._subscriptable(flax_generic)
    assert not surface._subscriptable(Plain)

    class Pair(typing.NamedTuple):  # subscriptable as a tuple is
        a: int

    class Table(collections.abc.Mapping):  # and as a Mapping is
        pass

    assert surface._subscriptable(Pair) and surface._subscriptable(Table)
    assert not surface._subscriptable(Pair(1))


def test_a_flax_class_must_be_a_class_in_lens():
    assert surface._kind(int) == "class"
    assert surface._kind(int | str) == "other"
    assert surface._kind(inspect) == "module"
