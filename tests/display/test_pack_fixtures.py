"""The extension's golden pack-trace payloads are what lens writes today.

extension/test/fixtures/*.json feed the extension's unit and browser tests; if lens's
trace format or lanes change, this fails until the fixtures are rewritten with
``.venv/bin/python extension/test/make_fixtures.py``. Record ids (a process-wide
counter) are left out of the comparison; everything else is exact.
"""

import functools
import importlib.util
import json
import pathlib

import jsonschema
import pytest

from lens.core import _trace

FIXTURES = pathlib.Path(__file__).parents[2] / "extension" / "test"


def _load_maker():
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", FIXTURES / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_ids(x):
    if isinstance(x, dict):
        return {k: _without_ids(v) for k, v in x.items() if k != "id"}
    if isinstance(x, list):
        return [_without_ids(v) for v in x]
    return x


# The stored payloads (colors.json is test_palette.py's, glossed.json
# test_glossary.py's). The fresh ones are traced on first use, not at collection:
# every pytest-xdist worker collects this file.
STORED = sorted(
    p.name
    for p in (FIXTURES / "fixtures").glob("*.json")
    if p.name not in ("colors.json", "glossed.json")
)


@functools.cache
def _payloads() -> dict:
    return _load_maker().payloads()


@pytest.mark.parametrize("name", STORED)
def test_golden_payload_is_current_and_valid(name):
    assert sorted(_payloads()) == STORED, (
        "payloads and stored files differ: "
        "run .venv/bin/python extension/test/make_fixtures.py"
    )
    stored = json.loads((FIXTURES / "fixtures" / name).read_text())
    fresh = json.loads(json.dumps(_payloads()[name]))
    assert _without_ids(fresh) == _without_ids(stored), (
        f"{name} is stale: run .venv/bin/python extension/test/make_fixtures.py"
    )
    jsonschema.validate(fresh, _trace.schema())
