"""One JupyterLab server, and the browser scripts that share it running side by side.

test_extension_browser.py, test_live_browser.py and test_trust_browser.py use the
same server (starting one costs seconds of CPU); tests/conftest.py schedules the
three files on one pytest-xdist worker, so the package-scoped fixture starts it once.

Their node scripts spend much of their time waiting (on a kernel to run a notebook,
on a live loop's sleeps, on JupyterLab to lay out a page), so ``browser_runs``
starts the selected tests' scripts together, and each test waits for its own
report: the three take about as long as the slowest one, not their sum.
"""

import pathlib
from collections.abc import Iterator

import pytest

from tests.e2e import (
    test_extension_browser,
    test_live_browser,
    test_open_clean_browser,
    test_trust_browser,
)
from tests.e2e.browser import BrowserRun
from tests.e2e.test_extension_browser import start_lab

SHARING = (
    test_extension_browser,
    test_live_browser,
    test_open_clean_browser,
    test_trust_browser,
)
"""The modules whose scripts run on the shared server, each with its
``start_browser(lab, folder) -> BrowserRun``; the trust test's starts last (it runs
a notebook in a kernel first, while the other two are already under way)."""


@pytest.fixture(scope="package")
def lab(tmp_path_factory):
    """(url, folder) of a running JupyterLab; see ``start_lab``."""
    yield from start_lab(tmp_path_factory)


@pytest.fixture(scope="package")
def browser_runs(lab, request, tmp_path_factory) -> Iterator[dict[str, BrowserRun]]:
    """The started scripts of the sharing modules that have a test in this session
    (keyed by the module's short name)."""
    selected = {pathlib.Path(str(item.path)).name for item in request.session.items}
    folder = tmp_path_factory.mktemp("browser")
    runs: dict[str, BrowserRun] = {}
    try:
        for module in SHARING:
            name = module.__name__.rsplit(".", 1)[-1]
            if f"{name}.py" in selected:
                runs[name] = module.start_browser(lab, folder)
        yield runs
    finally:
        for run in runs.values():
            if run.proc.poll() is None:  # a test failed before reading its report
                run.proc.kill()
                run.proc.wait()
