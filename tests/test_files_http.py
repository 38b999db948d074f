"""`GET /apps/files` of a running supervisor: the workspace listed a folder at a time, folders
first, hidden and special files left out, each file with the app views that open it (the file
viewers of the Running apps in discovery order, matched on extension without regard to case);
a path leading out of the workspace refused."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx2
import trio
from quart_trio import QuartTrio

from actors.runtime import Mailbox
from tests.support import forkserver
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import FAST, GROCERY, GUARD_S, supervisor_running
from web import errors
from web.files.routes import files_blueprint

FILES_APP = Path(__file__).parent / "apps" / "files_app.py"
SHEET = {"app": "files", "tool": "files.sheet", "title": "Sheet"}
NOTES = {"app": "files", "tool": "files.notes", "title": "notes"}
GROCERY_SHEET = {
    "app": "grocery-inventory",
    "tool": "grocery.open_inventory_file",
    "title": "Inventory sheet",
}


def workspace_project(project: Project) -> Path:
    shutil.copytree(GROCERY, project.root / "apps" / "grocery-inventory")
    project.manifest(
        "apps/files",
        {
            "id": "files",
            "command": forkserver.python(),
            "arguments": [str(FILES_APP)],
            "toolNamePrefix": "files.",
        },
    )
    root = project.root / "workspace"
    (root / "inventory" / "archive").mkdir(parents=True)
    (root / "inventory" / "stock.csv").write_text("sku,on_hand\nA,1\n")
    (root / "inventory" / "LEGACY.CSV").write_text("x\n")
    (root / "inventory" / "report.tar.gz").write_bytes(b"\x1f\x8b")
    (root / "notes.md").write_text("# notes\n")
    (root / "photo.jpg").write_bytes(b"\xff\xd8")
    (root / "Zebra").mkdir()
    (root / ".hidden.csv").write_text("secret\n")
    (root / ".git").mkdir()
    (root / "etc").symlink_to("/etc")
    (root / "stock-link.csv").symlink_to(root / "inventory" / "stock.csv")
    os.mkfifo(root / "pipe.csv")  # listed, it would have to be stat'ed, never opened
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        f'[supervision]\n{supervision}\n[workspace]\nroot = "workspace"\n'
    )
    return root


async def test_the_listing_names_the_viewers_of_each_file(project: Project) -> None:
    root = workspace_project(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await supervisor.wait_for_log("workspace: ")
        with trio.fail_after(GUARD_S):
            top = (await client.get("/apps/files")).json()
            inner = await client.get("/apps/files", params={"path": "inventory"})
            refusals = {
                path: await client.get("/apps/files", params={"path": path})
                for path in ("..", "/etc", "etc", "inventory/stock.csv", "missing", "pipe.csv")
            }
            changed = await a_change_as_the_pane_hears_it(client, root)

    assert top["path"] == ""
    assert [(e["name"], e["type"]) for e in top["entries"]] == [
        ("inventory", "folder"),
        ("Zebra", "folder"),
        ("notes.md", "file"),
        ("photo.jpg", "file"),
        ("stock-link.csv", "file"),
    ]
    by_name = {e["name"]: e for e in top["entries"]}
    assert by_name["notes.md"]["viewers"] == [NOTES]
    assert by_name["notes.md"]["size"] == len("# notes\n")
    assert by_name["photo.jpg"]["viewers"] == []
    assert by_name["stock-link.csv"]["viewers"] == [SHEET, GROCERY_SHEET]
    assert "viewers" not in by_name["inventory"]

    assert inner.status_code == 200
    listing = inner.json()
    assert listing["path"] == "inventory"
    assert [(e["path"], e.get("viewers")) for e in listing["entries"]] == [
        ("inventory/archive", None),
        ("inventory/LEGACY.CSV", [SHEET, GROCERY_SHEET]),
        ("inventory/report.tar.gz", [NOTES]),
        ("inventory/stock.csv", [SHEET, GROCERY_SHEET]),
    ]

    codes = {path: (r.status_code, r.json()["error"]["code"]) for path, r in refusals.items()}
    assert codes == {
        "..": (403, "outside_workspace"),
        "/etc": (403, "outside_workspace"),
        "etc": (403, "outside_workspace"),
        "inventory/stock.csv": (400, "not_a_folder"),
        "missing": (404, "not_found"),
        "pipe.csv": (400, "not_a_folder"),
    }
    assert "climbs out" in refusals[".."].json()["error"]["message"]
    assert changed == {"type": "changed", "paths": ["inventory/new.csv"]}


async def a_change_as_the_pane_hears_it(client: httpx2.AsyncClient, root: Path) -> Any:
    """The first batch `/apps/files/events` sends once a file is added (hidden files, which no
    listing shows, are not told either)."""
    async with client.stream("GET", "/apps/files/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.aiter_lines()
        async for line in lines:
            if line.startswith("data:"):
                assert json.loads(line[5:]) == {"type": "ready"}
                break
        (root / ".scratch").write_text("hidden\n")
        (root / "inventory" / "new.csv").write_text("sku\n")
        async for line in lines:
            if line.startswith("data:"):
                return json.loads(line[5:])
    return None


async def test_without_a_workspace_the_listing_says_how_to_set_one() -> None:
    app = QuartTrio("test")
    errors.register(app)  # the front door's one error table, as create_app registers it
    app.register_blueprint(files_blueprint(None, Mailbox()))
    response = await app.test_client().get("/apps/files")
    assert response.status_code == 404
    body = await response.get_json()
    assert body["error"]["code"] == "no_workspace"
    assert "[workspace]" in body["error"]["message"]
