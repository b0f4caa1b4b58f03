"""An nnx Variable shown by lens (``lens.show``, ``nnx.display``): one line."""

import jax.numpy as jnp
import numpy as np

import lens
from lens import nnx
from lens.display import BoxView


def test_a_variable_shows_its_type_shape_count_and_statistics():
    kernel = nnx.Param(jnp.arange(6, dtype=jnp.float32).reshape(2, 3))
    view = lens.show(kernel)
    assert isinstance(view, BoxView)
    assert view.text() == "Param f32[2,3] · 6 values · mean 2.5 std 1.71 [0, 5]"
    assert "Param f32[2,3] · 6 values" in view.html()


def test_a_variable_shows_metadata_set_by_the_user_not_the_defaults():
    v = nnx.BatchStat(np.zeros(3, np.float32), note="running mean")
    text = BoxView(v).text()
    assert text.startswith("BatchStat f32[3] note='running mean' · 3 values")
    assert "hijax" not in text and "eager_sharding" not in text
