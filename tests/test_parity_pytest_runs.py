"""parity's runs of other projects' tests: Flax's own (parity.flax_tests) and real
projects' (parity.projects) share one pytest command line and environment, and
`make projects` runs parity.projects."""

import collections
import dataclasses
import os
import pathlib
import re
import subprocess

import pytest

from parity import flax_tests, projects

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_the_lens_run_resolves_flax_to_lens_and_the_flax_run_does_not(tmp_path):
    junit = tmp_path / "out.xml"
    lens = flax_tests.pytest_command(["t"], junit, "lens", tb="short", extra=["-x"])
    flax = flax_tests.pytest_command(["t"], junit, "flax", tb="short", extra=["-x"])
    assert lens[:4] == flax[:4] and lens[3] == "t"
    assert lens[-2:] == ["-p", "parity.lens_as_flax"]
    assert "parity.lens_as_flax" not in flax
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
    assert ("parity.lens_as_flax" in proj_cmd) == (backend == "lens")
    assert set(project.tests) <= set(proj_cmd) and "--rootdir" in proj_cmd
    assert suite_env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
    assert suite_env["JAX_NUMPY_RANK_PROMOTION"] == "raise"  # as flax's CI
    assert proj_env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)


def test_make_projects_runs_parity_projects():
    out = subprocess.run(
        ["make", "-n", "projects", "PROJECTS=qwix"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m parity.projects --write qwix" in out


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
    assert "docs/porting.md" in purpose and "test_other" not in purpose
    assert "`tests/nnx/module_test.py::PytreeTest::test_other`" in to_fix
    assert flax_tests.failing_list("nnx", []) == ""


def test_a_project_imports_from_its_folders_with_its_own_packages_and_devices(
    monkeypatch, tmp_path
):
    calls = _captured(monkeypatch, tmp_path)
    ott = next(p for p in projects.PROJECTS if p.name == "ott")
    bonsai = next(p for p in projects.PROJECTS if p.name == "bonsai")
    projects.run_tests(ott, "lens", 1.0)
    projects.run_tests(bonsai, "flax", 1.0)
    (_, ott_env), (_, bonsai_env) = calls
    ott_path = ott_env["PYTHONPATH"].split(os.pathsep)
    assert ott_path[:3] == [
        str(tmp_path / "src"),
        str(REPO),
        str(projects.deps_dir(ott)),
    ]
    assert projects.deps_dir(ott) != projects.deps_dir(bonsai)
    assert ott_env.get("XLA_FLAGS") == os.environ.get("XLA_FLAGS")
    assert bonsai_env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8"
    assert bonsai_env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)


def test_install_deps_makes_one_folder_per_project_and_only_when_pins_change(
    monkeypatch, tmp_path
):
    installs = []
    monkeypatch.setattr(projects, "DEPS", tmp_path)
    monkeypatch.setattr(subprocess, "run", lambda cmd, **_: installs.append(cmd))
    a = projects.Project("a", "o/a", "0" * 40, "NNX", ("t",), deps=("x==2",))
    b = projects.Project("b", "o/b", "1" * 40, "NNX", ("t",), deps=("x==4",))
    assert projects.install_deps([a, b]) == {"a", "b"}
    assert [cmd[cmd.index("--target") + 1 :] for cmd in installs] == [
        [str(tmp_path / "a"), "x==2"],
        [str(tmp_path / "b"), "x==4"],
    ]
    (tmp_path / "a" / "stale.py").write_text("")
    assert projects.install_deps([a, b]) == set()  # the same pins: nothing to do
    a2 = dataclasses.replace(a, deps=("x==3",))
    assert projects.install_deps([a2, b]) == {"a"}
    assert not (tmp_path / "a" / "stale.py").exists()  # made anew
    assert installs[-1][-1] == "x==3" and len(installs) == 3


def test_write_keeps_the_rows_of_projects_with_no_results_here(tmp_path):
    ran, kept, moved = projects.PROJECTS[:3]
    rows = [
        projects.Row(ran, "abc", 10, 9, 9, 8, collections.Counter({"E: a/b": 1})),
        projects.Row(kept, "def", 7, 7, 5, 5, collections.Counter({"X: y": 2})),
        projects.Row(moved, "ghi", 3, 3, 3, 3, collections.Counter()),
    ]
    doc = tmp_path / "porting.md"
    doc.write_text(f"intro\n{projects.BEGIN}\n{projects.END}\nafter\n")
    projects.write_doc(projects.table(rows).replace(moved.commit[:10], "0" * 10), doc)
    got = projects.kept_rows(doc)
    assert set(got) == {ran.name, kept.name}  # moved: another commit of it
    assert projects.table([got[kept.name]]) == projects.table([rows[1]])
    assert got[ran.name].blocked == collections.Counter({"E: a/b": 1})
    assert doc.read_text().endswith(f"{projects.END}\nafter\n")


def test_the_projects_include_a_large_nnx_one_and_one_on_a_mesh():
    names = [p.name for p in projects.PROJECTS]
    assert len(names) >= 7 and len(set(names)) == len(names)
    assert {"tunix", "bonsai"} <= set(names)
    assert any(p.devices >= 8 and "NNX" in p.api for p in projects.PROJECTS)
    for p in projects.PROJECTS:
        assert re.fullmatch(r"[0-9a-f]{40}", p.commit), p.name
        assert all("==" in spec for spec in p.deps), p.name  # pinned


@pytest.mark.parametrize("backend", ["flax", "lens"])
def test_a_projects_plugins_load_in_both_runs_from_parity_plugins(
    monkeypatch, tmp_path, backend
):
    calls = _captured(monkeypatch, tmp_path)
    orbax = next(p for p in projects.PROJECTS if p.name == "orbax")
    assert orbax.plugins == ("single_process_distributed",)
    projects.run_tests(orbax, backend, 1.0)
    ((cmd, env),) = calls
    assert cmd[cmd.index("single_process_distributed") - 1] == "-p"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(projects.PLUGINS)
    assert (projects.PLUGINS / "single_process_distributed.py").is_file()


def test_the_single_process_plugin_gives_each_run_its_own_test_tmpdir(monkeypatch):
    import sys

    import jax

    monkeypatch.syspath_prepend(str(projects.PLUGINS))
    monkeypatch.delenv("TEST_TMPDIR", raising=False)
    plugin = __import__("single_process_distributed")
    started = []
    monkeypatch.setattr(
        jax.distributed, "initialize", lambda *a, **k: started.append((a, k))
    )
    try:
        plugin.pytest_configure(None)
        first = os.environ["TEST_TMPDIR"]
        plugin.pytest_configure(None)
        assert os.environ["TEST_TMPDIR"] != first and os.path.isdir(first)
        (address,), kwargs = started[0]
        assert address.startswith("localhost:")
        assert kwargs == {"num_processes": 1, "process_id": 0}
        plugin.pytest_unconfigure(None)
        assert not os.path.exists(first)
    finally:
        plugin._TMP.clear()
        sys.modules.pop("single_process_distributed", None)


def test_the_top_suite_runs_the_files_directly_in_tests(monkeypatch, tmp_path):
    calls = _captured(monkeypatch, tmp_path)
    flax_tests.run_suite(tmp_path, "top", "lens", 2, 1.0)
    ((cmd, _),) = calls
    assert "tests" in cmd
    for folder in ("nnx", "linen", "core"):
        assert f"--ignore=tests/{folder}" in cmd
    assert "tests/checkpoints_test.py::CheckpointsTest::" in "".join(
        flax_tests.ON_PURPOSE
    )


def test_flax_examples_run_per_folder_as_flaxs_ci_and_merge(monkeypatch, tmp_path):
    # one pytest run per example folder with tests, from the sdist's root, with
    # the interpreter given and flax CI's environment; one merged XML
    for folder in ("gemma", "mnist", "nlp_seq", "linen_design_test"):
        (tmp_path / "examples" / folder).mkdir(parents=True)
        if folder != "linen_design_test":  # its files are not tests
            (tmp_path / "examples" / folder / "a_test.py").write_text("")
    calls = []

    def run(cmd, cwd=None, env=None, **_):
        calls.append((cmd, cwd, env))
        junit = next(a for a in cmd if a.startswith("--junitxml=")).split("=", 1)[1]
        folder = next(a for a in cmd if a.startswith("examples/"))
        pathlib.Path(junit).write_text(
            f'<testsuites><testsuite><testcase classname="{folder}.t" name="a" '
            f'file="{folder}/t_test.py"/></testsuite></testsuites>'
        )

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(flax_tests, "CACHE", tmp_path / "cache")
    out = flax_tests.run_suite(tmp_path, "examples", "lens", 2, 1.0, python="/py")
    assert [c[0][3] for c in calls] == [
        "examples/gemma",
        "examples/mnist",
        "examples/nlp_seq",
    ]
    for cmd, cwd, env in calls:
        assert cmd[0] == "/py" and cwd == tmp_path and "parity.lens_as_flax" in cmd
        assert env["JAX_NUMPY_RANK_PROMOTION"] == "raise" and env["FLAX_PROFILE"] == "1"
    outcomes = flax_tests.read_outcomes(out, "examples")
    assert sorted(outcomes) == [
        f"examples/{f}/t_test.py" for f in ("gemma", "mnist", "nlp_seq")
    ]
