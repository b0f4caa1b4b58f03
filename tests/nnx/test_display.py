"""Eager modules and States display like Linen variables: grouped by variable type,
as text, script-free HTML and treescope, without warnings."""

import warnings

import jax.numpy as jnp

from lens import nnx


class Net(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(2, 3, rngs=rngs)
        self.bn = nnx.BatchNorm(3, rngs=rngs)
        self.rngs = rngs


def test_module_and_state_bundles_group_by_variable_type():
    net = Net(nnx.Rngs(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bundle = net._repr_mimebundle_()
        sbundle = nnx.state(net)._repr_mimebundle_()
    text = bundle["text/plain"]
    assert text.startswith("Net: 4 collections")
    for kind in ("Param", "BatchStat", "RngKey", "RngCount"):
        assert kind in text and kind in bundle["text/html"]
    assert "kernel  f32[2,3]" in text
    assert "<script" not in bundle["text/html"]
    assert sbundle["text/plain"].startswith("State: 4 collections")


def test_treescope_renders_a_module():
    import treescope

    text = treescope.render_to_text(Net(nnx.Rngs(0)))
    assert "'Param'" in text and "'kernel'" in text and "'BatchStat'" in text
    assert treescope.render_to_html(Net(nnx.Rngs(0)))


def test_print_shows_the_structure():
    text = repr(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    # flax.nnx's layout: a size comment per node; inside an object an array of
    # more than one element shows as its shape and dtype, a Variable alone as
    # its values
    assert text.startswith("Linear( # Param: 9 (36 B)")
    assert (
        "  kernel=Param( # 6 (24 B)\n    value=Array(shape=(2, 3), "
        "dtype=dtype('float32'))\n  )," in text
    )
    assert "0.7567299" in repr(nnx.Linear(2, 3, rngs=nnx.Rngs(0)).kernel)
    assert repr(nnx.Param(jnp.zeros(()))) == (
        "Param( # 1 (4 B)\n  value=Array(0., dtype=float32)\n)"
    )


def test_nnx_display_prints_outside_a_notebook(capsys, monkeypatch):
    import IPython

    # another test in this process may have started an IPython shell
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    v = nnx.Param(jnp.arange(3.0))
    nnx.display(v, "second")
    out = capsys.readouterr().out
    assert out == f"{v}\nsecond\n"
    assert "0., 1., 2." in out  # the values, not only the shape


def test_nnx_display_prints_beside_a_bare_interactive_shell(capsys):
    # A shell some library or test made in a plain Python process (no kernel,
    # not a terminal IPython) shows nothing: nnx.display prints there.
    from IPython.core.interactiveshell import InteractiveShell

    had_shell = InteractiveShell.initialized()
    InteractiveShell.instance()
    try:
        nnx.display(nnx.Param(1.0))
    finally:
        if not had_shell:
            InteractiveShell.clear_instance()
    assert capsys.readouterr().out == f"{nnx.Param(1.0)}\n"


def test_nnx_display_in_a_notebook_shows_lens_views(monkeypatch):
    import IPython
    import IPython.display

    class Kernel:  # a Jupyter kernel's shell has a kernel
        kernel = object()

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: Kernel())
    monkeypatch.setattr(IPython.display, "display", shown.append)
    net = Net(nnx.Rngs(0))
    nnx.display(net, nnx.state(net), 3)
    assert [type(x).__name__ for x in shown] == [
        "VariablesView",
        "VariablesView",
        "int",
    ]
    assert shown[0].text().startswith("Net: 4 collections")
    assert shown[1].text().startswith("State: 4 collections")


def test_a_state_of_shapes_shows_each_shape_as_its_python_value():
    # jax.tree.map(jnp.shape, state): flax's repr shows value=(2, 3); a tuple of
    # Python ints is one row holding that text, not ints counted as 4-byte arrays
    import jax

    shapes = jax.tree.map(jnp.shape, nnx.state(nnx.Linear(2, 3, rngs=nnx.Rngs(0))))
    assert shapes._repr_mimebundle_()["text/plain"] == (
        "State: 1 collection, 2 Python values\n"
        "Param · 2 Python values\n"
        "  bias    tuple  (3,)\n"
        "  kernel  tuple  (2, 3)"
    )


def test_python_values_beside_arrays_are_counted_apart():
    class M(nnx.Module):
        def __init__(self):
            self.count = nnx.Variable(0)
            self.opt = nnx.Variable({"mu": jnp.ones(3), "n": 1})

    lines = M()._repr_mimebundle_()["text/plain"].splitlines()
    assert lines[0] == "M: 1 collection, 1 array, 3 values (12 B), 2 Python values"
    assert lines[1] == "Variable · 3 (12 B) + 2 Python values"
    assert "  count  int  0" in lines and "    mu  f32[3]  3 (12 B)  [1, 1, 1]" in lines
