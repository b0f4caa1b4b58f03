"""Starting and stopping a JupyterLab server for the browser tests."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest


def lab_settings(root: pathlib.Path) -> pathlib.Path:
    """A user-settings folder: every cell rendered (no windowing), no news prompt."""
    settings = root / ".settings"
    for ext, name, value in (
        ("notebook-extension", "tracker", {"windowingMode": "none"}),
        ("apputils-extension", "notification", {"fetchNews": "false"}),
    ):
        (settings / "@jupyterlab" / ext).mkdir(parents=True)
        (settings / "@jupyterlab" / ext / f"{name}.jupyterlab-settings").write_text(
            json.dumps(value)
        )
    return settings


def serve_lab(root: pathlib.Path, **env: str) -> Iterator[str]:
    """Runs JupyterLab over ``root`` (no token, settings from :func:`lab_settings`,
    ``env`` added to the environment); yields its URL, then stops it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The server's log goes to a file beside the root (not into it: the file
    # browser would list it). A pipe nobody reads fills after ~64 KB of request
    # and kernel logs, and the server then blocks on its next log line: every
    # request after that (a page, the REST API) hangs.
    log_path = root.parent / f"{root.name}-jupyterlab.log"
    log = log_path.open("wb")
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
            f"--LabApp.user_settings_dir={lab_settings(root)}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".jupyter"), **env),
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
        log.close()
        err = log_path.read_text(errors="replace")
        pytest.fail("JupyterLab did not start: " + err[-2000:])
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
