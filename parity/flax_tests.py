"""Flax's own tests, run unchanged on real flax and on lens; a per-file table.

``make flax-tests`` (or ``python -m parity.flax_tests``) downloads the flax sdist
(``pip download flax==0.12.8 --no-binary :all: --no-deps``) into ``parity/.cache``,
unpacks its ``tests/`` and its pytest settings, and runs a suite (``tests/nnx`` by
default) twice with pytest: once with the installed flax (the oracle; its results
are cached per flax version, ``--rerun-flax`` runs it again) and once with ``flax``
resolved to lens (``-p parity.lens_as_flax``, see ``lens.alias_flax``). Each run
writes a junit XML; the per-file counts go to ``docs/flax-tests.md``.

Every run has the environment Flax's CI gives its tests (``tests/run_all_tests.sh``):
``JAX_NUMPY_RANK_PROMOTION=raise`` (an implicit broadcast of a lower-rank operand is
an error) and ``FLAX_PROFILE=1``.

The ``examples`` suite runs the tests of Flax's example models (``examples/`` in the
sdist) as Flax's CI does: one pytest run per example folder, from the sdist's
root. (Flax's CI skips the folders with a ``_`` in their name,
ogbg_molpcba and nlp_seq among them; they are run here too.) Their input pipelines
need TensorFlow and TensorFlow Datasets, which the dev environment does not carry:
``make flax-examples`` builds ``parity/.cache/examples-venv`` (the dev venv's
packages plus those) and passes its interpreter as ``--python``.

Example:
    python -m parity.flax_tests --suite nnx --suite linen -n 2
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import pathlib
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence

FLAX_VERSION = "0.12.8"
REPO = pathlib.Path(__file__).resolve().parent.parent
CACHE = REPO / "parity" / ".cache"
DEFAULT_OUT = REPO / "docs" / "flax-tests.md"
SUITES = {
    "nnx": "tests/nnx",
    "linen": "tests/linen",
    "core": "tests/core",
    "top": "tests",  # the files directly in tests/: checkpoints, serialization, ...
    "examples": "examples",  # the example models' tests, one run per folder
}
# What a suite's pytest run leaves out (``top`` is tests/ without its three folders).
SUITE_ARGS = {
    "top": ("--ignore=tests/nnx", "--ignore=tests/linen", "--ignore=tests/core")
}
BACKENDS = ("flax", "lens")
# What Flax's CI exports before it runs its tests and examples (run_all_tests.sh).
FLAX_CI_ENV = {"JAX_NUMPY_RANK_PROMOTION": "raise", "FLAX_PROFILE": "1"}


def sdist_root(version: str = FLAX_VERSION) -> pathlib.Path:
    """The unpacked sdist's ``tests/``, ``examples/`` and ``pyproject.toml``
    (downloaded once).

    Only the tests, the examples and the pytest settings are unpacked: the
    sdist's ``flax/`` package stays in the archive, so neither run can import it
    by accident.
    """
    root = CACHE / f"flax-{version}"
    if (root / "tests").is_dir() and (root / "examples").is_dir():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / f"flax-{version}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"flax=={version}"]
            + ["--no-binary", ":all:", "--no-deps", "--quiet", "-d", str(CACHE)],
            check=True,
        )
    prefix = f"flax-{version}/"
    with tarfile.open(archive) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name.startswith((prefix + "tests/", prefix + "examples/"))
            or m.name == prefix + "pyproject.toml"
        ]
        tar.extractall(CACHE, members=members, filter="data")
    return root


# Modules Flax's tests import besides flax and JAX (a missing one makes whole files
# fail under both runs, and hides them from the comparison).
TEST_DEPENDENCIES = ("absl", "cloudpickle", "optax", "orbax.checkpoint")


def _missing_test_dependencies(
    python: str = sys.executable, modules: Sequence[str] = TEST_DEPENDENCIES
) -> list[str]:
    code = (
        "import importlib.util as u, sys; "
        "print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"
    )
    out = subprocess.run(
        [python, "-c", code, *modules],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.split()


def _installed_flax_version(python: str = sys.executable) -> str | None:
    code = "import importlib.metadata as m; print(m.version('flax'))"
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() or None


def xml_path(suite: str, backend: str, version: str = FLAX_VERSION) -> pathlib.Path:
    """Where one run's junit XML is kept."""
    return CACHE / f"results-{version}" / f"{suite}-{backend}.xml"


def pytest_command(
    tests: Sequence[str],
    junit: pathlib.Path,
    backend: str,
    *,
    tb: str = "line",
    extra: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """The pytest command line of one run (Flax's tests here, a project's in
    :mod:`parity.projects`): quiet, no cache, a junit XML at ``junit``, and
    ``flax`` resolved to lens when ``backend`` is ``"lens"``."""
    cmd = [python, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider"]
    cmd += ["-o", "junit_family=xunit1", f"--junitxml={junit}", f"--tb={tb}"]
    # A file lens cannot import is one failed file, not a stopped run.
    cmd += ["--continue-on-collection-errors", *extra]
    if backend == "lens":
        cmd += ["-p", "parity.lens_as_flax"]
    return cmd


def pytest_env(
    backend: str, first: Sequence[str] = (), last: Sequence[str] = ()
) -> dict[str, str]:
    """The environment of one run: JAX on the CPU unless told, no
    ``LENS_AS_FLAX`` (the backend decides), and ``PYTHONPATH`` = ``first``, this
    repository (lens runs only), ``last``, then the caller's own."""
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.pop("LENS_AS_FLAX", None)
    lens = [str(REPO)] if backend == "lens" else []
    parts = [*first, *lens, *last, env.get("PYTHONPATH", "")]
    if any(parts):
        env["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)
    return env


def run_suite(
    root: pathlib.Path,
    suite: str,
    backend: str,
    workers: int,
    timeout: float,
    python: str = sys.executable,
) -> pathlib.Path:
    """Runs one suite under one backend; returns its junit XML."""
    out = xml_path(suite, backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    if suite == "examples":
        return _run_examples(root, backend, timeout, python, out)
    extra = ["-n", str(workers)] if workers > 1 else []
    extra += SUITE_ARGS.get(suite, ())
    cmd = pytest_command([SUITES[suite]], out, backend, tb="line", extra=extra)
    env = pytest_env(backend) | FLAX_CI_ENV
    # Flax's CI runs its tests with 4 host devices (tests/run_all_tests.sh).
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    print(f"[flax-tests] {backend}: {' '.join(cmd[2:])}", flush=True)
    try:
        subprocess.run(cmd, cwd=root, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        print(f"[flax-tests] {backend} {suite}: stopped after {timeout:.0f} s")
    return out


# Modules the example folders' tests import besides the dev environment's.
EXAMPLE_DEPENDENCIES = ("tensorflow", "tensorflow_datasets", "tensorboard")


def example_folders(root: pathlib.Path) -> list[str]:
    """The example folders with test files (Flax's CI runs those without a
    ``_`` in their name; ogbg_molpcba and nlp_seq have tests too)."""
    return sorted(
        d.name
        for d in (root / "examples").iterdir()
        if d.is_dir() and any(d.glob("*test*.py"))
    )


def _run_examples(
    root: pathlib.Path, backend: str, timeout: float, python: str, out: pathlib.Path
) -> pathlib.Path:
    """One pytest run per example folder (their module names collide), from the
    sdist's root as Flax's CI runs them; the runs' XMLs merged into ``out``."""
    merged = ET.Element("testsuites")
    for folder in example_folders(root):
        part = out.with_name(f"examples-{folder}-{backend}.xml")
        part.unlink(missing_ok=True)
        cmd = pytest_command([f"examples/{folder}"], part, backend, python=python)
        env = pytest_env(backend) | FLAX_CI_ENV
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        print(f"[flax-tests] {backend}: {' '.join(cmd[2:])}", flush=True)
        try:
            subprocess.run(cmd, cwd=root, env=env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            print(
                f"[flax-tests] {backend} examples/{folder}: stopped after {timeout:.0f} s"
            )
        if part.exists():
            merged.extend(ET.parse(part).getroot().iter("testsuite"))
    ET.ElementTree(merged).write(out, encoding="unicode")
    return out


# Flax tests that fail on lens on purpose, by id (``file::Class::test``), with
# the reason; the report lists them apart from the ones still to fix. The
# differences themselves are described in docs/porting.md.
_LENIENT_CONTAINERS = (
    "lenient containers (docs/porting.md): a plain list of Variables, "
    "Modules or arrays is state on lens, as in flax.nnx before 0.12; flax.nnx "
    "0.12 raises 'Found data on value of type list'."
)
_MSGPACK_CHECKPOINTS = (
    "msgpack checkpoints (docs/porting.md): lens's restore gives what Flax's "
    "default Orbax path gives, but it writes Flax's legacy format, which also "
    "saves {what}; Flax's Orbax path refuses that with a ValueError."
)
ON_PURPOSE: dict[str, str] = {
    "tests/checkpoints_test.py::CheckpointsTest::"
    "test_save_restore_checkpoints_target_empty0": _MSGPACK_CHECKPOINTS.format(
        what="an empty tree"
    ),
    "tests/checkpoints_test.py::CheckpointsTest::"
    "test_save_restore_checkpoints_target_singular0": _MSGPACK_CHECKPOINTS.format(
        what="a single array"
    ),
    "tests/nnx/module_test.py::PytreeTest::test_assing_pytree_with_data": (
        _LENIENT_CONTAINERS
    ),
    "tests/nnx/module_test.py::TestModuleDataclass::test_module_in_static_list": (
        _LENIENT_CONTAINERS
    ),
    "tests/nnx/module_test.py::TestModuleDataclass::test_variable_in_static_list": (
        _LENIENT_CONTAINERS
    ),
    "tests/nnx/graph_utils_test.py::TestGraphUtils::test_data_after_init": (
        _LENIENT_CONTAINERS.replace("'Found data", "'Found unexpected data")
    ),
}


@dataclasses.dataclass
class FileCounts:
    """Outcomes of one test file's tests (by test id)."""

    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)

    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}


def _file_of(case: ET.Element, suite_dir: str) -> str:
    file = case.get("file")
    if file:
        return file
    classname = case.get("classname") or case.get("name") or "?"
    parts = classname.split(".")
    while (
        parts and not parts[-1].endswith("test") and not parts[-1].startswith("test_")
    ):
        parts.pop()
    return "/".join(parts) + ".py" if parts else classname


def read_outcomes(xml: pathlib.Path, suite: str) -> dict[str, FileCounts]:
    """``{test file: outcomes}`` from a junit XML (empty when the run wrote none)."""
    files: dict[str, FileCounts] = {}
    if not xml.exists():
        return files
    for case in ET.parse(xml).iter("testcase"):
        file = _file_of(case, SUITES[suite])
        test_id = f"{case.get('classname')}::{case.get('name')}"
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        files.setdefault(file, FileCounts()).outcomes[test_id] = outcome
    return files


def _relative(file: str, suite: str) -> str:
    prefix = SUITES[suite] + "/"
    return file[len(prefix) :] if file.startswith(prefix) else file


def table(suite: str, flax: dict[str, FileCounts], lens: dict[str, FileCounts]) -> str:
    """The markdown table of one suite: per file, passes under flax and under lens."""
    lines = [
        f"### `{SUITES[suite]}`",
        "",
        "| file | tests | flax passed | lens passed | lens passed of flax's | % |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    totals = [0, 0, 0, 0]
    for file in sorted(set(flax) | set(lens)):
        f = flax.get(file, FileCounts())
        lo = lens.get(file, FileCounts())
        both = len(f.passed() & lo.passed())
        row = [len(f.outcomes), len(f.passed()), len(lo.passed()), both]
        totals = [a + b for a, b in zip(totals, row)]
        pct = f"{100 * both / row[1]:.0f}" if row[1] else "-"
        cells = [f"`{_relative(file, suite)}`", *map(str, row), pct]
        lines.append("| " + " | ".join(cells) + " |")
    pct = f"{100 * totals[3] / totals[1]:.0f}" if totals[1] else "-"
    cells = ["**total**", *(f"**{n}**" for n in totals), f"**{pct}**"]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _readable(file: str, test_id: str) -> str:
    """``tests/nnx/module_test.py::PytreeTest::test_x`` from a junit test id
    (``tests.nnx.module_test.PytreeTest::test_x``)."""
    classname, _, name = test_id.partition("::")
    module = file.removesuffix(".py").replace("/", ".")
    inner = classname[len(module) + 1 :] if classname.startswith(module) else ""
    return "::".join(part for part in (file, inner, name) if part)


def not_passing(flax: dict[str, FileCounts], lens: dict[str, FileCounts]) -> list[str]:
    """The tests that pass under flax and not under lens (readable ids)."""
    out = []
    for file in sorted(flax):
        lost = flax[file].passed() - lens.get(file, FileCounts()).passed()
        out += sorted(_readable(file, t) for t in lost)
    return out


def failing_list(suite: str, failing: list[str]) -> str:
    """The markdown list of the tests that pass on flax and fail on lens: those
    failing on purpose (with the reason), then the ones still to fix."""
    if not failing:
        return ""
    on_purpose = [t for t in failing if t in ON_PURPOSE]
    to_fix = [t for t in failing if t not in ON_PURPOSE]
    lines = [f"#### `{SUITES[suite]}`: passing on flax, failing on lens", ""]
    if on_purpose:
        lines += ["On purpose:", ""]
        lines += [f"- `{t}`: {ON_PURPOSE[t]}" for t in on_purpose]
        lines.append("")
    if to_fix:
        lines += ["Still to fix:", ""]
        lines += [f"- `{t}`" for t in to_fix]
        lines.append("")
    return "\n".join(lines)


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "lens")
    return head + (" (lens/ has uncommitted changes)" if dirty else "")


def report(suites: Sequence[str]) -> str:
    """``docs/flax-tests.md``: the tables of the suites whose XMLs exist."""
    examples = list(suites) == ["examples"]
    parts = [
        "# Flax's example models on lens" if examples else "# Flax's own tests on lens",
        "",
        f"Flax {FLAX_VERSION}'s test files, run unchanged (with Flax CI's "
        "`JAX_NUMPY_RANK_PROMOTION=raise` and `FLAX_PROFILE=1`): once with flax "
        "(the oracle) and once with `flax` resolved to lens (`lens.alias_flax`). "
        "*lens passed of flax's* counts the tests that pass under both; % is that "
        "share of flax's passes. A file that fails to import under lens counts "
        "no passes.",
        "",
        f"Generated by `make {'flax-examples' if examples else 'flax-tests'}` "
        f"(`python -m parity.flax_tests`) on "
        f"{datetime.date.today().isoformat()}, lens at {_commit()}.",
        "",
    ]
    for suite in suites:
        flax = read_outcomes(xml_path(suite, "flax"), suite)
        lens = read_outcomes(xml_path(suite, "lens"), suite)
        parts += [table(suite, flax, lens), ""]
        if flax and lens:
            listed = failing_list(suite, not_passing(flax, lens))
            if listed:
                parts.append(listed)
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> str:
    """Runs the suites asked for and writes the report; returns its text."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--suite", action="append", choices=sorted(SUITES))
    parser.add_argument("-n", "--workers", type=int, default=2)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument(
        "--rerun-flax", action="store_true", help="run the oracle again"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the table from the XMLs"
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs the tests (make flax-examples: one with "
        "TensorFlow for the examples suite)",
    )
    args = parser.parse_args(argv)
    if os.sep in args.python:  # the runs start in the sdist's folder; a venv's
        args.python = os.path.abspath(args.python)  # python is a link: not resolved
    suites = args.suite or ["nnx"]
    if not args.report_only:
        root = sdist_root()
        installed = _installed_flax_version(args.python)
        needed = TEST_DEPENDENCIES
        if "examples" in suites:
            needed += EXAMPLE_DEPENDENCIES
        missing = _missing_test_dependencies(args.python, needed)
        if missing:
            print(
                f"[flax-tests] warning: {', '.join(missing)} not installed; the "
                "test files that import them fail under flax and lens alike"
            )
        for suite in suites:
            if args.rerun_flax or not xml_path(suite, "flax").exists():
                if installed != FLAX_VERSION:
                    raise SystemExit(
                        f"the oracle run needs flax=={FLAX_VERSION} installed "
                        f"(found {installed})"
                    )
                run_suite(root, suite, "flax", args.workers, args.timeout, args.python)
            run_suite(root, suite, "lens", args.workers, args.timeout, args.python)
    text = report(suites)
    args.out.write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    main()
