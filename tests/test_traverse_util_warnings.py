"""Deprecation warnings in lens.traverse_util start with Flax's words, so warning
filters written for Flax (its own pytest settings ignore "`flax.traverse_util.
Traversal` will be deprecated.*") match them."""

import re
import warnings

from lens import traverse_util


def test_model_param_traversal_warns_in_flaxs_words_and_still_selects():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traversal = traverse_util.ModelParamTraversal(lambda path, _: "kernel" in path)
    (w,) = caught
    assert w.category is DeprecationWarning
    assert re.match(
        r"`flax.traverse_util.Traversal` will be deprecated.*", str(w.message)
    )
    params = {"Dense_0": {"kernel": 1, "bias": 2}}
    assert list(traversal.iterate(params)) == [1]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=DeprecationWarning, module=__name__)
        warnings.filterwarnings(
            "ignore", "`flax.traverse_util.Traversal` will be deprecated.*"
        )
        traverse_util.ModelParamTraversal(lambda *_: True)  # Flax's filter silences it
