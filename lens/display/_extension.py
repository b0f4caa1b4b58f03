"""Is the JupyterLab extension (the interactive pack diagram) installed and enabled?"""

from __future__ import annotations

import json
import pathlib
from typing import Any

EXTENSION = "lens-pack"


def extension_status() -> dict[str, Any]:
    """Where the ``lens-pack`` labextension is installed, and whether it is enabled.

    Returns:
      ``{"installed": bool, "enabled": bool, "path": str | None, "version": str | None}``.
      Without the extension, pack traces still show their static HTML diagram.
    """
    try:
        from jupyter_core.paths import jupyter_config_path, jupyter_path
    except ImportError:
        return {"installed": False, "enabled": False, "path": None, "version": None}
    found = None
    for base in jupyter_path("labextensions"):
        pkg = pathlib.Path(base) / EXTENSION / "package.json"
        if pkg.exists():
            found = pkg
            break
    if found is None:
        return {"installed": False, "enabled": False, "path": None, "version": None}
    version = json.loads(found.read_text()).get("version")
    disabled = False
    for base in jupyter_config_path():
        cfg = pathlib.Path(base) / "labconfig" / "page_config.json"
        if cfg.exists():
            try:
                off = json.loads(cfg.read_text()).get("disabledExtensions", {})
            except json.JSONDecodeError:
                continue
            if (isinstance(off, dict) and off.get(EXTENSION)) or (
                isinstance(off, list) and EXTENSION in off
            ):
                disabled = True
    return {
        "installed": True,
        "enabled": not disabled,
        "path": str(found.parent),
        "version": version,
    }


def extension_active() -> bool:
    """True when the JupyterLab extension is installed and enabled."""
    status = extension_status()
    return bool(status["installed"] and status["enabled"])
