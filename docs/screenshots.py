"""Takes the screenshots in docs/images: ``.venv/bin/python docs/screenshots.py [set ...]``.

Sets: ``side-by-side`` (docs/side_by_side.ipynb run in JupyterLab: lens beside
treescope and matplotlib), ``notebooks`` (outputs stored in notebooks/0*.ipynb, and
notebook 01 run for the explorer's widget), ``nbconvert`` (notebook 02 as
``jupyter nbconvert --to html`` shows it). No set named: all three. The live view
while it runs (live-running.png, live-compiling.png) comes from the browser test:
``LENS_SCREENSHOTS=1 .venv/bin/python -m pytest tests/e2e/test_live_browser.py``.

Needs what ``make test`` installs: the extension built and linked, Playwright in
extension/node_modules, Debian's Chromium at /usr/bin/chromium (Playwright drives
it; it cannot download a browser here). JupyterLab runs on a free local port over a
temporary copy of the notebooks; ``docs/screenshots.mjs`` drives the browser.
``--out DIR`` writes elsewhere; ``--all-sizes`` takes the side-by-side shots at
600 and 1200 px in both themes (the docs show 1200 light and 600 dark).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.lab_server import serve_lab  # noqa: E402

MODULES = ROOT / "extension" / "node_modules"
SIDE_BY_SIDE = (
    "linen-lens",
    "linen-treescope",
    "linen-treescope-kernel",
    "nnx-lens",
    "nnx-treescope",
    "ensemble-lens",
    "ensemble-treescope",
    "live",
    "matplotlib",
)
DOC_SIZES = ("1200-light", "600-dark")
ALL_SIZES = ("600-light", "600-dark", "1200-light", "1200-dark")

# Each docs image: the notebook, the cell (index in the .ipynb), the size and file.
NOTEBOOK_SHOTS = {
    "03_scan_and_vmap_axes.ipynb": [
        (3, "1200-light", "variables-1200-light.png"),
        (5, "600-dark", "diff-600-dark.png"),
        (17, "600-light", "live-final-600.png"),
        (17, "1200-light", "live-final-1200.png"),
        (17, "1200-dark", "live-final-1200-dark.png"),
    ],
    "06_nnx.ipynb": [
        (19, "1200-dark", "state-1200-dark.png"),
        (21, "1200-light", "pack-ensemble-1200-light.png"),
        (21, "600-light", "pack-ensemble-600-light.png"),
        (27, "1200-light", "pack-nnx-1200-light.png"),
        (27, "600-dark", "pack-nnx-600-dark.png"),
    ],
    "02_lifting.ipynb": [(12, "600-dark", "pack-linen-600-dark.png")],
    "01_tour.ipynb": [(8, "1200-dark", "module-1200-dark.png")],
}
EXPLORER = ("01_tour.ipynb", 18, "1200-dark", "explorer-1200-dark.png")
NBCONVERT = (
    "02_lifting",
    12,
    {
        "light": ("1200", "html-pack-1200-light.png"),
        "dark": ("600", "html-pack-600-dark.png"),
    },
)


def _shots(cells: list[tuple[int | str, str, str]]) -> list[dict]:
    """``(cell, size, file)`` rows as the node script's shots: one per cell."""
    out: dict[int | str, dict] = {}
    for cell, size, name in cells:
        out.setdefault(cell, {"cell": cell, "files": {}})["files"][size] = name
    return list(out.values())


def plan(sets: list[str], all_sizes: bool, work: pathlib.Path) -> list[dict]:
    """What docs/screenshots.mjs takes, and the notebooks it needs copied to ``work``."""
    jobs: list[dict] = []
    if "side-by-side" in sets:
        shutil.copy(ROOT / "docs" / "side_by_side.ipynb", work)
        sizes = ALL_SIZES if all_sizes else DOC_SIZES
        cells = [
            (f"# shot: {name}", size, f"side-{name}-{size}.png")
            for name in SIDE_BY_SIDE
            for size in sizes
        ]
        jobs.append(
            {
                "notebook": "side_by_side.ipynb",
                "run": True,
                "wait": 4000,
                "shots": _shots(cells),
            }
        )
    if "notebooks" in sets:
        for name, cells in NOTEBOOK_SHOTS.items():
            shutil.copy(ROOT / "notebooks" / name, work)
            jobs.append({"notebook": name, "shots": _shots(cells)})
        name, cell, size, file = EXPLORER
        jobs.append(
            {
                "notebook": name,
                "run": True,
                "wait": 3000,
                "shots": _shots([(cell, size, file)]),
            }
        )
    if "nbconvert" in sets:
        from nbconvert import HTMLExporter

        name, cell, themes = NBCONVERT
        for theme, (width, file) in themes.items():
            page = work / f"{name}-{theme}.html"
            body, _ = HTMLExporter(theme=theme).from_filename(
                str(ROOT / "notebooks" / f"{name}.ipynb")
            )
            page.write_text(body, encoding="utf-8")
            jobs.append(
                {
                    "html": str(page),
                    "shots": [{"cell": cell, "files": {f"{width}-{theme}": file}}],
                }
            )
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sets", nargs="*", default=["side-by-side", "notebooks", "nbconvert"]
    )
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "images")
    parser.add_argument("--all-sizes", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        jobs = plan(args.sets, args.all_sizes, work)
        env = dict(
            os.environ,
            PLAN=json.dumps(jobs),
            OUT=str(args.out.resolve()),
            PLAYWRIGHT=(MODULES / "playwright-core" / "index.mjs").as_uri(),
            MEASURE=(ROOT / "extension" / "test" / "measure.mjs").as_uri(),
            CHROMIUM=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        )
        lab = serve_lab(work)
        env["LAB_URL"] = next(lab)
        try:
            done = subprocess.run(
                ["node", str(ROOT / "docs" / "screenshots.mjs")],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
        finally:
            next(lab, None)  # stops JupyterLab
    if done.returncode:
        sys.exit(f"docs/screenshots.mjs failed:\n{done.stderr[-3000:]}")
    taken = json.loads(done.stdout.strip().splitlines()[-1])
    for file, (w, h) in taken.items():
        size = (args.out / file).stat().st_size
        print(f"{file}: {w}x{h} px, {size // 1024} KB")


if __name__ == "__main__":
    main()
