"""pytest plugin for suites written to run as several processes, run as one.

orbax's ``MultiProcessTest`` waits at a barrier of JAX's distributed client in
``setUp``: with JAX's distributed runtime started for one process (a coordinator
on a free local port), each test runs as the only process. absltest names its
temporary folders by test, so each run (and each xdist worker) gets a fresh
``TEST_TMPDIR``, removed at the end: a second run would find the first's folders.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from typing import Any

_TMP: list[str] = []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def pytest_configure(config: Any) -> None:
    import jax

    _TMP.append(tempfile.mkdtemp(prefix="absl-test-"))
    os.environ["TEST_TMPDIR"] = _TMP[-1]
    jax.distributed.initialize(
        f"localhost:{_free_port()}", num_processes=1, process_id=0
    )


def pytest_unconfigure(config: Any) -> None:
    for path in _TMP:
        shutil.rmtree(path, ignore_errors=True)
