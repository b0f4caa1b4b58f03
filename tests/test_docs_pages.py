"""The pages a user reads first work as pasted, link only what exists, and the
set-up respects the user's machine."""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if "_build" not in p.parts]


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


# Pages a tool writes, linked before the tool's first committed run. Each entry
# is a known gap: commit the generated page and remove it from here.
NOT_YET_GENERATED = {"flax-tests.md"}  # parity/flax_tests.py (make flax-tests)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_dead_relative_links(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path in NOT_YET_GENERATED:
            continue
        if path and not (page.parent / path).exists():
            dead.append(target)
    assert not dead, f"{page.name} links files that do not exist: {dead}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_line_magics_take_no_trailing_comment(page):
    """IPython passes the comment to the magic: `%load_ext lens  # x` fails."""
    bad = [
        line
        for block in _blocks(page)
        for line in block.splitlines()
        if re.match(r"\s*%[a-z_]+\s.*#", line)
    ]
    assert not bad, f"{page.name}: {bad}"


def test_getting_started_runs_as_pasted_in_ipython():
    """Each python block, magics included, in one IPython shell, in order."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        for block in _blocks(ROOT / "docs" / "getting-started.md"):
            result = shell.run_cell(block, silent=True)
            assert result.success, (
                block,
                result.error_before_exec or result.error_in_exec,
            )
    finally:
        InteractiveShell.clear_instance()


def test_the_bad_magic_line_really_fails():
    """The check above can fail: the old line does not run."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        result = shell.run_cell("%load_ext lens  # comment", silent=True)
        assert not result.success or "No module named" in str(result.error_in_exec)
    finally:
        InteractiveShell.clear_instance()


def _recipe_env(target_var):
    """The value of an environment variable inside a make recipe."""
    extra = f'_show_env:\n\t@echo "[$${target_var}]"\n'
    env = {
        k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "XLA_FLAGS")
    }
    out = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", "-", "_show_env"],
        input=extra,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_make_recipes_leave_jax_to_find_its_accelerator():
    """`make lab` (every recipe but the tests) does not force the CPU."""
    assert _recipe_env("JAX_PLATFORMS") == "[]"
    assert "device_count" not in _recipe_env("XLA_FLAGS")


def test_make_test_forces_cpu_and_fake_devices():
    out = subprocess.run(
        ["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    line = next(x for x in out.splitlines() if "pytest" in x)
    assert "JAX_PLATFORMS=cpu" in line and "device_count=8" in line
