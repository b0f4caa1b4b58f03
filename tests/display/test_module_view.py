"""A bound module's HTML: its variables open when there are few, collapsed when many."""

import re

import jax
import jax.numpy as jnp

from lens import nn
from lens.display import ModuleView
from lens.display._module import OPEN_VARIABLES


def _variables_section(html: str) -> str:
    """The attributes of the <details> that holds the variables."""
    m = re.search(r"<details([^>]*)><summary[^>]*>variables <span", html)
    assert m is not None, html[:300]
    return m.group(1)


def test_a_small_bound_module_shows_its_variables_open():
    x = jnp.ones((1, 4))
    bound = nn.Dense(3).bind(nn.Dense(3).init(jax.random.key(0), x))
    html = ModuleView(bound).html()
    assert _variables_section(html).startswith(" open") and "· 2 arrays" in html


def test_a_large_bound_module_keeps_its_variables_collapsed():
    class Wide(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(OPEN_VARIABLES):
                x = nn.Dense(2)(x)
            return x

    x = jnp.ones((1, 2))
    bound = Wide().bind(Wide().init(jax.random.key(0), x))
    html = ModuleView(bound).html()
    assert f"· {2 * OPEN_VARIABLES} arrays" in html
    assert "open" not in _variables_section(html)
