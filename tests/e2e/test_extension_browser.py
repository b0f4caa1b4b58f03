"""In a real browser: JupyterLab draws pack traces with the lens extension.

Starts JupyterLab (with --allow-root, token off, on a free local port) on a copy of
notebooks/02_lifting.ipynb plus a small extra notebook, then drives Debian's Chromium
with Playwright (extension/test/e2e.mjs). Needs the extension built and linked
(`make test` does it) and /usr/bin/chromium (`make test` installs it when missing).
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

ROOT = pathlib.Path(__file__).parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

EXTRA = [
    "from IPython.display import display\n"
    "display({'application/vnd.lens.pack+json': {'schema': 'not-lens', 'version': 1, 'packs': []},\n"
    "         'text/plain': 'broken'}, raw=True)",
    "import jax, jax.numpy as jnp, lens\nfrom lens import nn\n"
    "class Block(nn.Module):\n"
    "    @nn.compact\n"
    "    def __call__(self, c, _):\n"
    "        return nn.relu(nn.Dense(32)(c)), None\n"
    "class Deep(nn.Module):\n"
    "    @nn.compact\n"
    "    def __call__(self, x):\n"
    "        return nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=64)()(x, None)[0]\n"
    "lens.show_lifting(Deep(), jnp.ones((1, 32)))",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (ROOT / "extension" / "node_modules" / "playwright-core").exists():
        pytest.fail(
            "extension/node_modules is missing: run `make test` (it installs and builds the extension)"
        )
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)"
        )
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / "02_lifting.ipynb", root / "02_lifting.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src) for src in EXTRA]
    nbformat.write(nb, root / "e2e_extra.ipynb")
    # Render every cell (no windowing) and skip the news prompt.
    settings = root / ".settings"
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (
        settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    ).write_text(json.dumps({"windowingMode": "none"}))
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (
        settings
        / "@jupyterlab"
        / "apputils-extension"
        / "notification.jupyterlab-settings"
    ).write_text(json.dumps({"fetchNews": "false"}))
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".jupyter"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--LabApp.expose_app_in_browser=True",
            "--ServerApp.disable_check_xsrf=True",
            f"--LabApp.user_settings_dir={settings}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/lab", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("JupyterLab did not start: " + proc.stderr.read().decode()[-2000:])
    yield url, root
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_extension_draws_pack_traces_in_jupyterlab(lab, tmp_path):
    url, _ = lab
    shot = ROOT / "extension" / "test" / "e2e-screenshot.png"
    out = subprocess.run(
        ["node", str(ROOT / "extension" / "test" / "e2e.mjs")],
        cwd=ROOT / "extension",
        capture_output=True,
        text=True,
        timeout=540,
        env=dict(os.environ, LAB_URL=url, SCREENSHOT=str(shot), CHROMIUM=CHROMIUM),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        "browser report:", json.dumps(report)
    )  # shown with -s; the render time is noted
    assert report["renderers"] >= 3  # the notebook's three pack traces, re-run live
    assert report["stages"] == ["scopes", "groups", "inside", "repack", "commit"]
    assert report["paramsRows"] > 0
    assert "params: 0" in report["groupTexts"]
    assert report["title"].startswith("vmap at /mlp")
    assert set(report["highlighted"]) == {"repack", "commit"}
    assert report["htmlFallbackShown"] == 0  # the extension wins over text/html
    assert shot.exists() and shot.stat().st_size > 10_000
    assert "unknown schema" in report["errorText"]
    assert report["scanStages"] == 5
    assert report["scanRenderMs"] < 500, report["scanRenderMs"]
