"""Tools that measure how much of Flax lens covers (not part of the lens package).

- :mod:`parity.surface`: flax's public modules and names looked up in lens
  (``make api-diff``; ``tests/test_flax_surface.py`` runs it as a test).
- :mod:`parity.flax_tests`: Flax's own test suite run on real flax and on lens
  (``make flax-tests``, writes ``docs/flax-tests.md``).
- :mod:`parity.lens_as_flax`: the pytest plugin that resolves ``flax`` to lens.
"""
