"""``nnx.Object`` is flax.nnx's: a ``Pytree`` subclass that is never a JAX pytree
(flax's pytree guide: ``class Foo(nnx.Object)`` instead of ``class Foo(nnx.Pytree,
pytree=False)``), while ``nnx.Pytree`` and ``nnx.Module`` subclasses are pytrees."""

import jax
import jax.numpy as jnp
import pytest

from lens import nnx


class Foo(nnx.Object):
    def __init__(self):
        self.a = [jnp.array(1), jnp.array(2)]  # no data/static checks
        self.b = "hello"
        self.b = jnp.array(3)  # a static string replaced by an array: accepted


def test_an_object_is_a_leaf_to_jax_and_a_graph_node_to_nnx():
    foo = Foo()
    assert jax.tree_util.all_leaves([foo])
    assert jax.tree.leaves(foo) == [foo]

    @nnx.jit
    def double(foo: Foo):
        foo.a = [x * 2 for x in foo.a]
        foo.b *= 2

    double(foo)
    state = nnx.state(foo)
    assert [int(x) for x in jax.tree.leaves(state)] == [2, 4, 6]


def test_object_pytree_and_module_are_related_as_in_flax():
    assert nnx.Object is not nnx.Pytree and issubclass(nnx.Object, nnx.Pytree)
    assert (nnx.Object.__name__, nnx.Pytree.__name__) == ("Object", "Pytree")
    assert nnx.Object.__module__ == nnx.Pytree.__module__ == "lens.nnx.pytreelib"
    linear = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    assert isinstance(linear, nnx.Pytree) and not isinstance(linear, nnx.Object)
    assert not jax.tree_util.all_leaves([linear])  # a Module is a pytree

    class P(nnx.Pytree):
        def __init__(self):
            self.w = jnp.ones(2)

    assert len(jax.tree.leaves(P())) == 1


def test_an_object_subclass_cannot_ask_to_be_a_pytree():
    with pytest.raises(ValueError, match=r"^Object is not a pytree, but 'pytree' was"):

        class Bad(nnx.Object, pytree=True):
            pass

    class Fine(nnx.Object, pytree=False):  # saying so is allowed
        pass

    assert jax.tree_util.all_leaves([Fine()])


def test_an_object_displays_its_variables():
    class Counter(nnx.Object):
        def __init__(self):
            self.count = nnx.Variable(jnp.array(0))

    text = Counter()._repr_mimebundle_()["text/plain"]
    assert text.startswith("Counter: 1 collection") and "count  i32[]" in text
