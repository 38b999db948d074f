"""A project whose apps are built with the OpenAI extensions SDK (tests/apps/extensions_app.py):
`ext` on the handshake era, `ext26` on 2026-07-28, and one app per hostile offer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import forkserver
from tests.support.frontdoor import write_config
from tests.support.helpers import Project

EXTENSIONS_APP = Path(__file__).parents[1] / "apps" / "extensions_app.py"


def extensions_manifest(app_id: str, *options: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": app_id,
        "command": forkserver.python(),
        "arguments": [str(EXTENSIONS_APP), *options],
        "toolNamePrefix": f"{app_id}.",
        **fields,
    }


def extensions_project(project: Project, *hostile: str) -> None:
    """`ext`, `ext26` and an app `bad-<kind>` for each hostile kind given."""
    project.manifest("apps/ext", extensions_manifest("ext"))
    project.manifest("apps/ext26", extensions_manifest("ext26"))
    for kind in hostile:
        project.manifest(f"apps/bad-{kind}", extensions_manifest(f"bad-{kind}", "--hostile", kind))
    write_config(project, {"ext26": {"protocol": "stateless"}})
