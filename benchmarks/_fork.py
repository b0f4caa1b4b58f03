"""Many fresh processes for the price of one: fork a child per job.

``forked(preamble, jobs)`` starts one interpreter that runs ``preamble`` (its imports,
and a function ``job(item)`` that returns something JSON can hold), then forks a
child per item of ``jobs``. Each child starts where a fresh
``python -c "<preamble>"`` would be, without paying ~1 s to start Python and import
jax again: the benchmarks time cold imports and first compiles this way, and
tests/test_fresh_imports.py imports each public lens module first in one. The
preamble must not start a JAX backend (nothing traced or computed): a child of a
process whose XLA threads run would inherit locks, not threads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

FORKER = r"""
import json, os, sys, traceback
exec(sys.argv[1])  # the preamble: imports, and def job(item)
results = []
for item in json.loads(sys.argv[2]):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the job, report, and never return
        os.close(read)
        try:
            report, code = json.dumps(job(item)), 0
        except BaseException:
            report, code = traceback.format_exc(limit=-3), 1
        os.write(write, report.encode())
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        report = f.read()
    _, status = os.waitpid(pid, 0)
    if status:
        sys.exit(f"{item!r} failed in a fresh process:\n{report}")
    results.append(json.loads(report))
print(json.dumps(results))
"""


def forked(
    preamble: str,
    jobs: list[Any],
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> list[Any]:
    """``job(item)`` for each item of ``jobs``, in order, each in a child forked from
    one interpreter that ran ``preamble`` (with ``env``, default this process's).
    Raises RuntimeError with the failing child's traceback."""
    out = subprocess.run(
        [sys.executable, "-c", FORKER, preamble, json.dumps(jobs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])
