"""The stored notebook outputs hold on other CPUs, not just the one that saved them.

``make test`` runs the notebooks with nbval, and the root ``conftest.py`` gives
nbval's kernels XLA's CPU code generation changed as another machine would change it
(an older instruction set, reassociating fast math). Here: that the kernels really
get it, that nbval compares every cell, and that the sanitizer hides only digits.
"""

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CONFTEST = ROOT / "conftest.py"


def _notebooks_conftest():
    spec = importlib.util.spec_from_file_location("lens_notebooks_conftest", CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_other_cpu_environment_is_set_then_restored(monkeypatch):
    conf = _notebooks_conftest()
    assert "--xla_cpu_max_isa=SSE4_2" in conf.KERNEL_ENV["XLA_FLAGS"]
    assert "--xla_cpu_enable_fast_math=true" in conf.KERNEL_ENV["XLA_FLAGS"]
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    with conf.other_cpu_environment():
        assert os.environ["XLA_FLAGS"] == conf.KERNEL_ENV["XLA_FLAGS"]
        assert os.environ["JAX_PLATFORMS"] == "cpu"
    assert os.environ["XLA_FLAGS"] == "--xla_backend_optimization_level=0"
    assert "JAX_PLATFORMS" not in os.environ


def test_nbval_kernels_run_as_another_cpu(tmp_path):
    """A notebook beside a copy of the root conftest.py whose stored output is the
    kernel's XLA_FLAGS: nbval passes only if the kernel got the other CPU's flags
    (this process's own flags, the suite's compile-speed ones, would not match)."""
    conf = _notebooks_conftest()
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    cell = nbformat.v4.new_code_cell("import os\nprint(os.environ['XLA_FLAGS'])")
    cell.execution_count = 1
    cell.outputs = [
        nbformat.v4.new_output(
            "stream", name="stdout", text=conf.KERNEL_ENV["XLA_FLAGS"] + "\n"
        )
    ]
    nb.cells = [cell]
    nbformat.write(nb, tmp_path / "flags.ipynb")
    env = dict(os.environ, XLA_FLAGS="--xla_backend_optimization_level=0")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval"]
    run = subprocess.run(
        [*cmd, "flags.ipynb"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:]


def test_every_notebook_cell_is_compared():
    """No cell opts out of nbval (a skipped cell would store digits unchecked)."""
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            tags = cell.get("metadata", {}).get("tags", [])
            assert "NBVAL_SKIP" not in source, (path.name, source[:80])
            assert "nbval-skip" not in tags, (path.name, source[:80])


def test_notebooks_folder_holds_notebooks_only():
    """JupyterLab opens on notebooks/: no tooling beside the notebooks."""
    tracked = subprocess.run(
        ["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    assert tracked and all(p.endswith(".ipynb") for p in tracked), tracked


def test_notebooks_open_clean_in_jupyterlab():
    """What JupyterLab writes on opening a notebook is what is stored, so opening
    one does not mark it modified: its kernelspec as the python3 kernel names it."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    for path in NOTEBOOKS:
        meta = json.loads(path.read_text())["metadata"]
        assert meta["kernelspec"] == {
            "display_name": spec.display_name,
            "language": spec.language,
            "name": "python3",
        }, path.name
        assert meta["language_info"]["name"] == "python", path.name


def test_sanitizer_keeps_structure():
    """The sanitizer hides statistics' digits only: names, shapes, sizes stay compared."""
    cfg = (ROOT / "tests" / "nbval_sanitize.cfg").read_text()
    rules = re.findall(r"regex: (.*)\nreplace: (.*)", cfg)
    line = "  kernel  f32[4,16]  64 (256 B)  mean 0.0217 std 0.46 [-1.06, 1.06]"
    diff = "  ~ params:/head/kernel f32[16,3] max|d| 0.197 rel 0.57"
    for pattern, repl in rules:
        line = re.sub(pattern, repl, line)
        diff = re.sub(pattern, repl, diff)
    assert line == "  kernel  f32[4,16]  64 (256 B)  mean ~ std ~ [~, ~]"
    assert diff == "  ~ params:/head/kernel f32[16,3] max|d| ~ rel ~"
