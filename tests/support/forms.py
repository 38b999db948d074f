"""A project whose app asks with rich forms (tests/apps/forms_app.py, built with the OpenAI
extensions SDK): `forms` on the handshake era (`openai/elicitation/create`), `forms26` on
2026-07-28 (`input_required` with the schema in `_meta`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import forkserver
from tests.support.frontdoor import write_config
from tests.support.helpers import Project

FORMS_APP = Path(__file__).parents[1] / "apps" / "forms_app.py"
ERAS = ("forms", "forms26")


def forms_manifest(app_id: str) -> dict[str, Any]:
    return {
        "id": app_id,
        "command": forkserver.python(),
        "arguments": [str(FORMS_APP)],
        "toolNamePrefix": f"{app_id}.",
    }


def forms_project(project: Project) -> None:
    """Both apps; a view's calls to them run without asking the person first."""
    for app_id in ERAS:
        project.manifest(f"apps/{app_id}", forms_manifest(app_id))
    never = {"approval": "never"}
    write_config(project, {"forms": never, "forms26": {"protocol": "stateless", **never}})
