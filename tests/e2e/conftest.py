"""One JupyterLab server for the browser tests that can share it.

test_extension_browser.py, test_live_browser.py and test_trust_browser.py use the
same server (starting one costs seconds of CPU); tests/conftest.py schedules the
three files on one pytest-xdist worker, so the package-scoped fixture starts it once.
"""

import pytest

from tests.e2e.test_extension_browser import start_lab


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    """(url, folder) of a running JupyterLab; see ``start_lab``."""
    yield from start_lab(tmp_path_factory)
