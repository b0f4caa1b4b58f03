"""``flax`` resolved to lens from interpreter start (:mod:`parity.projects`).

On ``PYTHONPATH`` for the lens runs of projects whose pytest configuration imports
flax before any ``-p`` plugin loads: a ``filterwarnings`` entry naming a warning
class of the project (``ignore::netket.errors.SomeWarning``) makes pytest import
the project, and so flax, while it reads its settings. pytest-xdist's workers
inherit the environment, so they start aliased too.
"""

import lens

lens.alias_flax()
