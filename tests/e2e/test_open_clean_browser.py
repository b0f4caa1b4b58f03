"""In a real browser: every notebook in notebooks/ opens in JupyterLab unmodified.

A notebook whose stored metadata differs from what JupyterLab writes when its kernel
starts (the kernelspec's display name, the language info) is marked modified as it
opens: the user is asked to save a notebook they never touched, and a git checkout
shows a change. tests/e2e/open_clean_browser.mjs opens each tour notebook on the
shared JupyterLab (tests/e2e/conftest.py), waits for its kernel, and reads the
document's dirty flag.
"""

import json
import pathlib
import shutil

from tests.e2e import browser

ROOT = pathlib.Path(__file__).parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def start_browser(lab, folder: pathlib.Path) -> browser.BrowserRun:
    """Copies the tour notebooks into the shared JupyterLab's folder and starts the
    script (``browser_runs`` in tests/e2e/conftest.py)."""
    url, root = lab
    (root / "tour").mkdir(exist_ok=True)
    for path in NOTEBOOKS:
        shutil.copy(path, root / "tour" / path.name)
    return browser.start(
        pathlib.Path(__file__).with_name("open_clean_browser.mjs"),
        folder,
        LAB_URL=url,
        NOTEBOOKS=json.dumps([f"tour/{p.name}" for p in NOTEBOOKS]),
    )


def test_each_notebook_opens_clean(browser_runs):
    report = browser_runs["test_open_clean_browser"].report()
    assert sorted(report) == [f"tour/{p.name}" for p in NOTEBOOKS]
    for name, seen in report.items():
        assert seen["kernel"] == "python3", (name, seen)
        assert seen["dirty"] is False, f"{name} opens marked modified: {seen}"
