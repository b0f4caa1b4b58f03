"""The node scripts that drive Debian's Chromium (through Playwright) for the browser
tests: where they find their tools, where their screenshots go, and how they run.

Screenshots are for a person to look at; no check reads them. They are taken only
when asked for: ``LENS_SCREENSHOTS=1 make test`` (or the same before ``pytest
tests/e2e``) writes them to extension/test/screenshots/ (git-ignored). Without it,
every script measures exactly as with it, and ~25 s of one worker are saved.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
MODULES = ROOT / "extension" / "node_modules"
SCREENSHOTS = ROOT / "extension" / "test" / "screenshots"


def screenshots() -> pathlib.Path | None:
    """The screenshot folder when ``LENS_SCREENSHOTS`` asks for them, else None."""
    if os.environ.get("LENS_SCREENSHOTS", "") in ("", "0"):
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def require_tools() -> None:
    """Fails (not skips: `make test` provides both) without Playwright or Chromium."""
    if not (MODULES / "playwright-core").exists():
        pytest.fail(
            "extension/node_modules is missing: run `make test` (it installs and builds the extension)"
        )
    if not os.path.exists(CHROMIUM):
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)"
        )


@dataclass
class BrowserRun:
    """A node script started in the background; :meth:`report` waits for its JSON
    report. Its output goes to files, so scripts that run side by side never block
    on a full pipe."""

    name: str
    proc: subprocess.Popen
    stdout: pathlib.Path
    stderr: pathlib.Path
    timeout: float

    def report(self) -> dict:
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.stderr.read_text()[-3000:]
        assert self.proc.returncode == 0, f"{self.name} failed:\n{err}"
        return json.loads(self.stdout.read_text().strip().splitlines()[-1])


def start(
    script: pathlib.Path,
    folder: pathlib.Path,
    *,
    cwd: pathlib.Path | None = None,
    timeout: float = 540,
    **env: str,
) -> BrowserRun:
    """Starts ``node script`` with Playwright, Chromium, the shared measures, the
    screenshot folder (if asked for) and ``env`` in its environment; its output goes
    to ``folder``."""
    require_tools()
    shots = screenshots()
    full = dict(
        os.environ,
        CHROMIUM=CHROMIUM,
        PLAYWRIGHT=(MODULES / "playwright-core" / "index.mjs").as_uri(),
        MEASURE=(ROOT / "extension" / "test" / "measure.mjs").as_uri(),
        **env,
    )
    full.pop("SHOTS", None)
    if shots is not None:
        full["SHOTS"] = str(shots)
    out, err = folder / f"{script.stem}.out", folder / f"{script.stem}.err"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            ["node", str(script)], cwd=cwd, stdout=o, stderr=e, env=full
        )
    return BrowserRun(script.stem, proc, out, err, timeout)
