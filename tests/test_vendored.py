"""The vendored AppBridge (web/static/app-bridge.js) is exactly what scripts/vendor-app-bridge.sh
builds from the pins of tools/package.json: a changed pin without a rebuilt file fails here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.nodetools import PROJECT, TOOLS, node_binary


def test_the_vendored_app_bridge_is_what_the_pins_build(tmp_path: Path) -> None:
    node_binary()  # the pinned tools are installed (else: the command that installs them)
    out = tmp_path / "app-bridge.js"
    subprocess.run(
        ["bash", str(PROJECT / "scripts" / "vendor-app-bridge.sh")],
        env={"PATH": "/usr/bin:/bin", "APP_BRIDGE_OUT": str(out), "NODE_TOOLS_DIR": str(TOOLS)},
        check=True,
        capture_output=True,
        timeout=300,
    )
    checked_in = PROJECT / "web" / "static" / "app-bridge.js"
    assert out.read_bytes() == checked_in.read_bytes(), (
        "web/static/app-bridge.js is not what the pins build: run `make app-bridge` and commit it"
    )
