"""The collection colours are one palette: lens/display/palette.json, which the
JupyterLab extension ships a copy of (extension/src/palette.json). The extension's
unit test checks that it colours the names in extension/test/fixtures/colors.json
as lens.display does; this checks that the fixture is what lens draws today."""

import importlib.util
import json
import pathlib

from lens.display import _pack

REPO = pathlib.Path(__file__).parents[2]


def _maker():
    path = REPO / "extension" / "test" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extension_ships_the_same_palette():
    shipped = json.loads((REPO / "lens" / "display" / "palette.json").read_text())
    copy = json.loads((REPO / "extension" / "src" / "palette.json").read_text())
    assert copy == shipped


def test_colors_fixture_is_what_lens_draws():
    stored = json.loads(
        (REPO / "extension" / "test" / "fixtures" / "colors.json").read_text("utf-8")
    )
    assert stored == _maker().colors(), (
        "colors.json is stale: run .venv/bin/python extension/test/make_fixtures.py"
    )


def test_colors_come_from_the_palette():
    palette = json.loads((REPO / "lens" / "display" / "palette.json").read_text())
    for name, colour in palette["fixed"].items():
        assert _pack.color(name) == colour
    seen = {_pack.color(f"collection_{i}") for i in range(64)}
    assert seen == set(palette["others"])  # every other colour is reachable
    assert _pack.PALETTE == list(palette["fixed"].values()) + palette["others"]
