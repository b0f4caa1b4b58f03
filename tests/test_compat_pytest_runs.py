"""compat's runs of other projects' tests: Flax's own (compat.flax_tests) and real
projects' (compat.projects) share one pytest command line and environment, and
`make projects` runs compat.projects."""

import os
import pathlib
import subprocess

import pytest

from compat import flax_tests, projects

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_the_lens_run_resolves_flax_to_lens_and_the_flax_run_does_not(tmp_path):
    junit = tmp_path / "out.xml"
    lens = flax_tests.pytest_command(["t"], junit, "lens", tb="short", extra=["-x"])
    flax = flax_tests.pytest_command(["t"], junit, "flax", tb="short", extra=["-x"])
    assert lens[:4] == flax[:4] and lens[3] == "t"
    assert lens[-2:] == ["-p", "compat.lens_as_flax"]
    assert "compat.lens_as_flax" not in flax
    for cmd in (lens, flax):
        assert f"--junitxml={junit}" in cmd and "--tb=short" in cmd and "-x" in cmd
        assert "--continue-on-collection-errors" in cmd


def test_the_environment_puts_lens_on_the_path_only_for_lens(monkeypatch):
    monkeypatch.setenv("LENS_AS_FLAX", "1")
    monkeypatch.setenv("PYTHONPATH", "mine")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    lens = flax_tests.pytest_env("lens", first=["root"], last=["deps"])
    flax = flax_tests.pytest_env("flax", first=["root"], last=["deps"])
    sep = os.pathsep
    assert lens["PYTHONPATH"] == sep.join(["root", str(REPO), "deps", "mine"])
    assert flax["PYTHONPATH"] == sep.join(["root", "deps", "mine"])
    for env in (lens, flax):
        assert "LENS_AS_FLAX" not in env and env["JAX_PLATFORMS"] == "cpu"


def _captured(monkeypatch, tmp_path):
    calls = []

    def run(cmd, cwd=None, env=None, **_):
        calls.append((cmd, env))

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(projects, "source", lambda p: tmp_path)
    monkeypatch.setattr(projects, "lens_commit", lambda: "abc")
    monkeypatch.setattr(projects, "PROJECTS_CACHE", tmp_path / "cache")
    monkeypatch.setattr(flax_tests, "CACHE", tmp_path / "cache")
    return calls


@pytest.mark.parametrize("backend", ["flax", "lens"])
def test_flax_tests_and_projects_build_the_same_command(monkeypatch, tmp_path, backend):
    calls = _captured(monkeypatch, tmp_path)
    project = projects.PROJECTS[0]
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own settings
    flax_tests.run_suite(tmp_path, "nnx", backend, 1, 1.0)
    projects.run_tests(project, backend, 1.0)
    (suite_cmd, suite_env), (proj_cmd, proj_env) = calls
    assert suite_cmd[:3] == proj_cmd[:3]
    shared = set(flax_tests.pytest_command([], tmp_path, backend, tb="x")) - {
        f"--junitxml={tmp_path}",
        "--tb=x",
    }
    assert shared <= set(suite_cmd) and shared <= set(proj_cmd)
    assert ("compat.lens_as_flax" in proj_cmd) == (backend == "lens")
    assert set(project.tests) <= set(proj_cmd) and "--rootdir" in proj_cmd
    assert suite_env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
    assert proj_env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)


def test_make_projects_runs_compat_projects():
    out = subprocess.run(
        ["make", "-n", "projects", "PROJECTS=qwix"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m compat.projects --write qwix" in out


def test_the_report_lists_the_tests_lens_fails_on_purpose_apart():
    on_purpose = "tests/nnx/module_test.py::PytreeTest::test_assing_pytree_with_data"
    assert on_purpose in flax_tests.ON_PURPOSE
    file = "tests/nnx/module_test.py"
    cls = "tests.nnx.module_test.PytreeTest"
    flax = {
        file: flax_tests.FileCounts(
            {
                f"{cls}::test_assing_pytree_with_data": "passed",
                f"{cls}::test_other": "passed",
                f"{cls}::test_both": "passed",
            }
        )
    }
    lens = {
        file: flax_tests.FileCounts(
            {
                f"{cls}::test_assing_pytree_with_data": "failed",
                f"{cls}::test_other": "failed",
                f"{cls}::test_both": "passed",
            }
        )
    }
    failing = flax_tests.not_passing(flax, lens)
    assert failing == [on_purpose, "tests/nnx/module_test.py::PytreeTest::test_other"]
    text = flax_tests.failing_list("nnx", failing)
    purpose, to_fix = text.split("Still to fix:")
    assert f"`{on_purpose}`: lenient containers" in purpose
    assert "docs/porting-from-flax.md" in purpose and "test_other" not in purpose
    assert "`tests/nnx/module_test.py::PytreeTest::test_other`" in to_fix
    assert flax_tests.failing_list("nnx", []) == ""
