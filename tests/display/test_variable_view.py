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


def test_a_diff_names_rng_streams_that_moved_on_apart_from_changes():
    model = nnx.Sequential(
        nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))
    )
    before = nnx.clone(model)
    model(jnp.ones((1, 2)))  # draws from the dropout stream: its counter moves
    model.layers[0].bias.value = model.layers[0].bias.value + 1.0
    d = lens.diff(before, model)
    lines = d.text().splitlines()
    assert lines[0] == "Diff: 1 changed, 2 unchanged, 0 added, 0 removed"
    assert lines[1] == "  ~ Param:/layers/0/bias f32[2] max|d| 1 (was all 0)"
    assert lines[2].startswith("  rng streams moved on (not counted): RngCount:/")
    assert len(lines) == 3
