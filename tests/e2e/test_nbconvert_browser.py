"""In a real browser: the notebooks as nbconvert's static HTML (GitHub, a docs site).

notebooks/02_lifting.ipynb (Linen transforms) and notebooks/06_nnx.ipynb (lens.nnx)
are converted by `jupyter nbconvert --to html`, light and dark, and opened in
Debian's Chromium at 600 and 1200 px (tests/e2e/nbconvert_browser.mjs; no
JupyterLab, no extension: what a reader sees before installing anything). Every
lens output keeps its look: the page never scrolls sideways (a wide output scrolls
inside itself), each pack picture has its header, no text is clipped or squeezed
into one-letter lines, every text reads at WCAG AA contrast. Screenshots:
extension/test/screenshots/nbconvert-*.png.
"""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
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
    modules = ROOT / "extension" / "node_modules"
    if not (modules / "playwright-core").exists():
        pytest.fail("extension/node_modules is missing: run `make test`")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    converted = _convert(tmp_path)
    shots = ROOT / "extension" / "test" / "screenshots"
    shots.mkdir(exist_ok=True)
    out = subprocess.run(
        ["node", str(pathlib.Path(__file__).with_name("nbconvert_browser.mjs"))],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(
            os.environ,
            SHOTS=str(shots),
            CHROMIUM=CHROMIUM,
            PLAYWRIGHT=(modules / "playwright-core" / "index.mjs").as_uri(),
            MEASURE=(ROOT / "extension" / "test" / "measure.mjs").as_uri(),
            NBCONVERT=json.dumps([str(p) for p in converted]),
        ),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
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
            assert (shots / f"nbconvert-{path.stem}-{width}.png").stat().st_size > 5_000
