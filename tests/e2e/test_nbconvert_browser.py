"""In a real browser: the notebooks as nbconvert's static HTML (GitHub, a docs site).

notebooks/02_lifting.ipynb (Linen transforms) and notebooks/06_nnx.ipynb (lens.nnx)
are converted by `jupyter nbconvert --to html`, light and dark, and opened in
Debian's Chromium at 600 and 1200 px (tests/e2e/nbconvert_browser.mjs; no
JupyterLab, no extension: what a reader sees before installing anything). Every
lens output keeps its look: the page never scrolls sideways (a wide output scrolls
inside itself), each pack picture has its header, no text is clipped or squeezed
into one-letter lines, every text reads at WCAG AA contrast. With
LENS_SCREENSHOTS=1: extension/test/screenshots/nbconvert-*.png.
"""

import json
import pathlib

from tests.e2e import browser
from tests.e2e.browser import ROOT

NOTEBOOKS = ("02_lifting", "06_nnx")


def _convert(where: pathlib.Path) -> list[pathlib.Path]:
    """Each notebook as ``jupyter nbconvert --to html --HTMLExporter.theme=...``
    writes it (the same exporter, run in this process)."""
    from nbconvert import HTMLExporter

    out = []
    for name in NOTEBOOKS:
        for theme in ("light", "dark"):
            target = where / f"{name}-{theme}.html"
            body, _ = HTMLExporter(theme=theme).from_filename(
                str(ROOT / "notebooks" / f"{name}.ipynb")
            )
            target.write_text(body, encoding="utf-8")
            out.append(target)
    return out


def test_converted_notebooks_keep_every_lens_picture_readable(tmp_path):
    browser.require_tools()
    converted = _convert(tmp_path)
    report = browser.start(
        pathlib.Path(__file__).with_name("nbconvert_browser.mjs"),
        tmp_path,
        timeout=300,
        NBCONVERT=json.dumps([str(p) for p in converted]),
    ).report()
    shots = browser.screenshots()
    for path in converted:
        for width in (600, 1200):
            got = report[f"{path.stem}@{width}"]
            where = (path.name, width)
            assert got["outputs"] >= 3 and got["packs"] >= 1, (where, got)
            assert got["headers"] == got["packs"], (where, got)
            assert not got["docScroll"] and got["scrollable"], (where, got)
            assert got["checked"] > 50 and got["low"] == [], (where, got)
            assert got["clipped"] == [] and got["narrow"] == [], (where, got)
            if path.stem.startswith("06_nnx"):
                # lens.nnx's pictures: the ensemble's pack and its Params' tables
                assert got["packs"] >= 2 and got["nnx"] >= 3, (where, got)
            if shots:
                png = shots / f"nbconvert-{path.stem}-{width}.png"
                assert png.stat().st_size > 5_000
