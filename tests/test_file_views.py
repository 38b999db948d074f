"""File views over the view door of a running supervisor, on real files in a temporary workspace:
a view opened on a file (`POST /apps/views {"file", "tool"}`) gets an opaque host resource; the
host reads it (text, blob), saves it (atomic, conditional, under the app's approval policy),
tells a subscribed view when it changes on disk, refuses what is not that view's, outside the
workspace, too large or read-only, and amends the view's tool calls with the file's path; none
of these requests ever reaches the app's server. A kill -9 in the middle of saves leaves each
file old or new, never torn.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import trio

from tests.support import forkserver
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import FAST, GUARD_S, supervisor_running
from tests.support.views import call, open_view, rpc

EDITOR_APP = Path(__file__).parent / "apps" / "editor_app.py"
HEX_URI = r"host-resource://[0-9a-f]{32}"


def editor_project(
    project: Project, workspace: str = "", entries: str = "", *, with_workspace: bool = True
) -> Path:
    project.manifest(
        "apps/editor",
        {
            "id": "editor",
            "command": forkserver.python(),
            "arguments": [str(EDITOR_APP)],
            "toolNamePrefix": "editor.",
        },
    )
    root = project.root / "workspace"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.txt").write_text("first version\n")
    (root / "data.bin").write_bytes(bytes(range(256)))
    (root / "huge.txt").write_bytes(b"x" * 4096)
    os.mkfifo(root / "pipe.txt")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    table = (
        f'[workspace]\nroot = "workspace"\nmax_read_bytes = 1024\nmax_write_bytes = 64\n{workspace}'
        if with_workspace
        else ""
    )
    project.config(
        f'[apps]\ndiscovery_paths = ["./apps"]\n{entries}[supervision]\n{supervision}\n{table}'
    )
    return root


async def open_file(client: httpx2.AsyncClient, path: str, **extra: Any) -> dict[str, Any]:
    response = await client.post("/apps/views", json={"file": path, **extra})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def save(
    client: httpx2.AsyncClient, view_id: str, params: dict[str, Any], decision: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`openai/resources/write` as the page sends it: when the save waits for the person
    (`approval`), `decision` is their answer. The JSON-RPC answer and the approvals asked."""
    message = {"jsonrpc": "2.0", "id": 7, "method": "openai/resources/write", "params": params}
    asked: list[dict[str, Any]] = []
    url = f"/apps/views/{view_id}/mcp"
    async with client.stream("POST", url, json=message) as response:
        if response.headers["content-type"].startswith("application/json"):
            return json.loads(await response.aread()), asked
        event = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "approval":
                approval = json.loads(line.removeprefix("data: "))
                asked.append(approval)
                assert decision is not None, f"the save was held for approval: {approval}"
                posted = await client.post(
                    f"/apps/views/{view_id}/approvals/{approval['approvalId']}",
                    json={"decision": decision},
                )
                assert posted.status_code == 200, posted.text
            elif line.startswith("data: ") and event == "message":
                return json.loads(line.removeprefix("data: ")), asked
    raise AssertionError("the save was never answered")


@contextlib.asynccontextmanager
async def listening(client: httpx2.AsyncClient, view_id: str) -> AsyncIterator[Any]:
    """The page's stream of the view's notifications, once the server says it listens."""
    async with client.stream("GET", f"/apps/views/{view_id}/events") as response:
        assert response.status_code == 200
        lines = response.aiter_lines()
        async for line in lines:
            if line == "event: ready":
                break
        yield lines


async def next_notice(lines: Any) -> dict[str, Any]:
    event = ""
    async for line in lines:
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: ") and event == "message":
            notice: dict[str, Any] = json.loads(line.removeprefix("data: "))
            return notice
    raise AssertionError("the stream ended")


async def test_a_file_view_reads_saves_and_hears_of_changes(project: Project) -> None:
    root = editor_project(project)
    a_txt = root / "notes" / "a.txt"
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await supervisor.wait_for_log("workspace: ")
        with trio.fail_after(GUARD_S * 3):
            first = await open_file(client, "notes/a.txt", tool="editor.edit")
            second = await open_file(client, "notes/a.txt")  # the first viewer that opens it
            v1, v2 = first["viewId"], second["viewId"]
            file1 = first["toolCall"]["arguments"]["file"]
            file2 = second["toolCall"]["arguments"]["file"]
            # The opening call, as the page makes it: run once without approval.
            opening = await call(client, v1, "edit", first["toolCall"]["arguments"])

            read1 = await rpc(client, v1, "resources/read", {"uri": file1["resourceUri"]})
            read2 = await rpc(client, v2, "resources/read", {"uri": file2["resourceUri"]})
            as_blob = await rpc(
                client,
                v1,
                "resources/read",
                {
                    "uri": file1["resourceUri"],
                    "_meta": {"openai/resource": {"representation": "blob"}},
                },
            )
            etag0 = read1["result"]["contents"][0]["_meta"]["openai/resource"]["etag"]

            # Two views of one file: the first saves (allowed while open), the second saves
            # over the version it read and is told of the conflict.
            saved, asked1 = await save(
                client,
                v1,
                {"uri": file1["resourceUri"], "text": "second version\n", "ifMatch": etag0},
                "while-open",
            )
            on_disk_after_save = a_txt.read_text()
            conflict, asked2 = await save(
                client,
                v2,
                {"uri": file2["resourceUri"], "text": "lost\n", "ifMatch": etag0},
                "once",
            )
            on_disk_after_conflict = a_txt.read_text()
            denied, _ = await save(
                client, v2, {"uri": file2["resourceUri"], "text": "denied\n"}, "deny"
            )
            # Allowed while open: no second question.
            again, asked3 = await save(
                client, v1, {"uri": file1["resourceUri"], "text": "third version\n"}, None
            )
            too_large, _ = await save(
                client, v1, {"uri": file1["resourceUri"], "text": "y" * 100}, None
            )
            other_uri, _ = await save(client, v1, {"uri": file2["resourceUri"], "text": "x"}, None)

            # An edit on disk, by another program, reaches the subscribed view.
            async with listening(client, v1) as notices:
                subscribed = await rpc(
                    client, v1, "resources/subscribe", {"uri": file1["resourceUri"]}
                )
                a_txt.write_text("edited on disk\n")
                notice = await next_notice(notices)

            # The view's tool calls carry the file's path, whatever the view put there; another
            # view's carry none.
            forged = {"openai/resource": {"path": "/etc/passwd"}}
            inspected = await rpc(
                client, v1, "tools/call", {"name": "inspect", "arguments": {}, "_meta": forged}
            )
            plain = await open_view(client, "editor")
            not_a_file_view = await rpc(
                client, plain, "tools/call", {"name": "inspect", "arguments": {}, "_meta": forged}
            )

            opened_blob = await open_file(client, "data.bin")
            blob_file = opened_blob["toolCall"]["arguments"]["file"]
            blob = await rpc(
                client, opened_blob["viewId"], "resources/read", {"uri": blob_file["resourceUri"]}
            )
            files_open = await rpc(
                client, v1, "openai/files/open", {"path": str(root / "data.bin")}
            )
            files_open_outside = await rpc(client, v1, "openai/files/open", {"path": "/etc/passwd"})

            # The lease ends: its URI is no one's any more.
            await client.delete(f"/apps/views/{v2}")
            after_end = await rpc(client, v1, "resources/read", {"uri": file2["resourceUri"]})

            refused = {
                path: await client.post("/apps/views", json={"file": path, "tool": "editor.edit"})
                for path in (
                    "../outside.txt",
                    "/etc/secret.txt",
                    "passwd.txt",
                    "pipe.txt",
                    "huge.txt",
                )
            }
            no_viewer = await client.post("/apps/views", json={"file": "notes", "tool": "x.y"})
            seen = (await call(client, v1, "seen"))["result"]["structuredContent"]["seen"]
            metrics = (await client.get("/metrics")).text

    uri = file1["resourceUri"]
    assert re.fullmatch(HEX_URI, uri)
    assert file1["name"] == "a.txt"
    assert "a.txt" not in uri
    assert "notes" not in uri
    assert file2["resourceUri"] != uri  # a URI per view's lease
    assert first["toolCall"]["publicName"] == "editor.edit"
    assert first["toolCall"]["file"] == "notes/a.txt"
    assert "error" not in opening, opening

    content = read1["result"]["contents"][0]
    assert content["text"] == "first version\n"
    assert content["uri"] == uri
    assert content["mimeType"] == "text/plain"
    assert content["_meta"]["openai/resource"]["writable"] is True
    assert read2["result"]["contents"][0]["_meta"]["openai/resource"]["etag"] == etag0
    blob_of_text = as_blob["result"]["contents"][0]["blob"]
    assert base64.b64decode(blob_of_text) == b"first version\n"

    assert saved["result"]["outcome"] == "saved"
    assert saved["result"]["etag"] != etag0
    assert [a["tool"] for a in asked1] == ["openai/resources/write"]
    assert asked1[0]["arguments"] == {"file": "notes/a.txt"}
    assert on_disk_after_save == "second version\n"
    assert conflict["result"] == {"outcome": "conflict", "etag": saved["result"]["etag"]}
    assert len(asked2) == 1
    assert on_disk_after_conflict == "second version\n"  # the first save is kept
    assert denied["error"]["code"] == -32004, denied
    assert again["result"]["outcome"] == "saved"
    assert asked3 == []
    assert too_large["result"] == {"outcome": "too-large", "maxBytes": 64}
    assert other_uri["error"]["code"] == -32002, other_uri  # not this view's URI

    assert subscribed == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert notice == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": uri},
    }

    told = inspected["result"]["structuredContent"]
    assert told["resource"] == {"path": str(a_txt.resolve())}
    assert told["content"] == "edited on disk\n"  # the app's server read the file itself
    assert not_a_file_view["result"]["structuredContent"]["resource"] == {}

    blob_content = blob["result"]["contents"][0]
    assert base64.b64decode(blob_content["blob"]) == bytes(range(256))
    assert files_open["result"] == {"_meta": {"mcpapps/file": "data.bin"}}
    assert "outside" in files_open_outside["error"]["message"], files_open_outside
    assert after_end["error"]["code"] == -32002, after_end

    assert refused["../outside.txt"].status_code == 403
    assert refused["/etc/secret.txt"].status_code == 403
    assert refused["passwd.txt"].status_code == 403  # a symlink out of the workspace
    assert refused["pipe.txt"].status_code == 400  # a FIFO, never opened
    assert refused["huge.txt"].status_code == 413
    assert "1024" in refused["huge.txt"].json()["error"]["message"]
    assert no_viewer.status_code == 404
    assert no_viewer.json()["error"]["code"] == "no_viewer"

    # The host's requests never reached the app: only its own, and one opening call.
    assert not any((s["uri"] or "").startswith("host-resource://") for s in seen), seen
    assert not any(s["method"].startswith("openai/") for s in seen), seen
    assert [s["name"] for s in seen if s["method"] == "tools/call"].count("edit") == 1

    assert 'mcpapps_file_saves_total{outcome="saved"} 2.0' in metrics
    assert 'mcpapps_file_saves_total{outcome="conflict"} 1.0' in metrics
    assert "save of notes/a.txt by view" in supervisor.log


async def test_a_read_only_workspace_refuses_saves(project: Project) -> None:
    editor_project(
        project,
        workspace="writable = false\n",
        entries='[apps.entries.editor]\napproval = "never"\n',
    )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await supervisor.wait_for_log("workspace: ")
        with trio.fail_after(GUARD_S):
            opened = await open_file(client, "notes/a.txt")
            view, file = opened["viewId"], opened["toolCall"]["arguments"]["file"]
            read = await rpc(client, view, "resources/read", {"uri": file["resourceUri"]})
            saved, _ = await save(client, view, {"uri": file["resourceUri"], "text": "no\n"}, None)
    assert read["result"]["contents"][0]["_meta"]["openai/resource"]["writable"] is False
    assert "not read as writable" in saved["error"]["message"], saved
    assert (project.root / "workspace" / "notes" / "a.txt").read_text() == "first version\n"


async def test_without_a_workspace_no_file_is_opened_and_no_host_resource_reaches_the_app(
    project: Project,
) -> None:
    editor_project(project, with_workspace=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        await supervisor.wait_for_log("ready: ")
        with trio.fail_after(GUARD_S):
            listing = await client.get("/apps/files")
            opened = await client.post("/apps/views", json={"file": "notes/a.txt"})
            view = await open_view(client, "editor")
            uri = "host-resource://00112233445566778899aabbccddeeff"
            read = await rpc(client, view, "resources/read", {"uri": uri})
            write = await rpc(client, view, "openai/resources/write", {"uri": uri, "text": "x"})
            seen = (await call(client, view, "seen"))["result"]["structuredContent"]["seen"]
    assert listing.status_code == 404
    assert listing.json()["error"]["code"] == "no_workspace"
    assert opened.status_code == 404
    assert "no workspace is set" in read["error"]["message"], read
    assert "no workspace is set" in write["error"]["message"], write
    assert not any((s["uri"] or "").startswith("host-resource://") for s in seen), seen


async def test_a_kill_in_the_middle_of_saves_leaves_each_file_old_or_new(project: Project) -> None:
    """Saves of several files run at once, over and over, until the supervisor is killed with
    SIGKILL: every file is then one whole version, the old or one of the new."""
    root = editor_project(
        project,
        workspace="",
        entries='[apps.entries.editor]\napproval = "never"\n',
    )
    size = 256 * 1024
    config = project.root / "config.toml"
    config.write_text(
        config.read_text()
        .replace("max_read_bytes = 1024", f"max_read_bytes = {size * 2}")
        .replace("max_write_bytes = 64", f"max_write_bytes = {size * 2}")
    )
    names = [f"big{i}.txt" for i in range(4)]
    versions = [c * size for c in "abcdefgh"]
    for name in names:
        (root / name).write_text(versions[0])
    supervisor_box: list[Any] = []
    saves = 0

    async def keep_saving(client: httpx2.AsyncClient, name: str) -> None:
        nonlocal saves
        opened = await open_file(client, name)
        view, uri = opened["viewId"], opened["toolCall"]["arguments"]["file"]["resourceUri"]
        await rpc(client, view, "resources/read", {"uri": uri})
        n = 1
        while True:
            with contextlib.suppress(httpx2.HTTPError):
                await save(client, view, {"uri": uri, "text": versions[n % len(versions)]}, None)
                saves += 1
            n += 1

    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        supervisor_box.append(supervisor)
        await supervisor.wait_for_log("workspace: ")
        with trio.fail_after(GUARD_S * 2):
            async with trio.open_nursery() as nursery:
                for name in names:
                    nursery.start_soon(keep_saving, client, name)
                while saves < 12:
                    await trio.sleep(0.01)
                assert supervisor.process is not None
                supervisor.process.send_signal(signal.SIGKILL)
                await supervisor.wait()
                nursery.cancel_scope.cancel()

    for name in names:
        assert (root / name).read_text() in versions, f"{name} is torn"


def test_a_file_link_survives_logging_in() -> None:
    from web.routes import landing

    kept = landing({"file": "inventory/count.csv", "with": "grocery.open_inventory_file"})
    assert kept == "/?file=inventory%2Fcount.csv&with=grocery.open_inventory_file"
