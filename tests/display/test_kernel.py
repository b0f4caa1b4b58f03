"""In a real IPython kernel, lens objects display with the expected MIME types."""

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

CODE = r"""
import os, jax, jax.numpy as jnp, lens
from lens import nn
from IPython.display import display
class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2, kernel_init=nn.with_partitioning(nn.initializers.ones, (None, "model")))(x)
v = MLP().init(jax.random.key(0), jnp.ones((1, 3)))
E = nn.vmap(MLP, variable_axes={"params": 0}, split_rngs={"params": True}, metadata_params={nn.PARTITION_NAME: "e"})
display(v)                                  # plain dict, before %load_ext
get_ipython().run_line_magic("load_ext", "lens")
display(v)                                  # a variable collection now
display(MLP().bind(v))
display(MLP())
display(v["params"]["Dense_0"]["kernel"])
display(lens.show_lifting(E(), jnp.ones((3, 1, 3))))
display(lens.diff(v, v))
"""


def _displays(code):
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        msg_id = kc.execute(code)
        bundles, error = [], None
        while True:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "display_data":
                bundles.append(set(msg["content"]["data"]))
            elif kind == "error":
                error = "\n".join(msg["content"]["traceback"])
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                break
        assert error is None, error
        return bundles
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_mime_types_in_a_real_kernel():
    b = _displays(CODE)
    assert len(b) == 7
    assert "text/html" not in b[0]  # plain dicts stay plain without %load_ext lens
    assert {"text/plain", "text/html"} <= b[1]
    assert {"text/plain", "text/html"} <= b[2] and {"text/plain", "text/html"} <= b[3]
    assert {"text/plain", "text/html"} <= b[4]
    assert b[5] == {"text/plain", "text/html", "application/vnd.lens.pack+json"}
    assert {"text/plain", "text/html"} <= b[6]


def _cells(cells):
    """Runs each cell in one kernel; per cell, the kinds of output it produced."""
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        out = []
        for code in cells:
            msg_id = kc.execute(code)
            kinds = []
            while True:
                msg = kc.get_iopub_msg(timeout=120)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                if kind in ("display_data", "execute_result"):
                    kinds.append(kind)
                elif kind == "error":
                    raise AssertionError("\n".join(msg["content"]["traceback"]))
                elif kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
            out.append(kinds)
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_show_returns_the_view_and_displays_it_once():
    setup = (
        "import numpy as np, lens\nd = {'params': {'w': np.zeros((2, 3), np.float32)}}"
    )
    out = _cells(
        [
            setup,
            "lens.show(d)",  # the cell's last line: shown once, not echoed again
            "v = lens.show(d)\nassert type(v).__name__ == 'VariablesView'",
            "v",  # a later cell shows the returned view normally
            "lens.show(d); lens.show(d)",  # two calls: two displays
            "lens.show(3)",  # no lens view: shown with its repr, returns None
        ]
    )
    assert out == [
        [],
        ["display_data"],
        ["display_data"],
        ["display_data"],
        ["display_data", "display_data"],
        ["display_data"],
    ]
