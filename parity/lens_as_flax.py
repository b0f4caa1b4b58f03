"""pytest plugin: ``flax`` resolves to lens for the whole session.

``pytest -p parity.lens_as_flax`` loads it before any test module, so Flax's own
tests import lens wherever they say ``flax`` (``lens.alias_flax``). pytest-xdist
workers are started with the same ``-p`` option and load it too.
"""

import lens

lens.alias_flax()
