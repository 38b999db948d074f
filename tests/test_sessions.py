"""Saved chat sessions against a real `mcpapps run`: `[state]` retention applied at start,
`GET /admin/sessions` and `DELETE /admin/sessions/<id>`, and `mcpapps sessions` (list and
delete) as a user runs them, a session with a turn running refused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time

import trio

from actors.chat.chatstore import ChatStore
from actors.chat.hub import CHAT_DATABASE
from tests.support.chatting import body, chat_stream
from tests.support.frontdoor import http, write
from tests.support.helpers import Project, run_mcpapps
from tests.support.running import GUARD_S, supervisor_running

SLOW = '/call fx.sleep {"seconds": 60}'
DAY_S = 86_400


async def mcpapps(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a thread, so that the supervisor's log keeps being read meanwhile."""
    return await trio.to_thread.run_sync(lambda: run_mcpapps(*args, cwd=project.root))


async def test_retention_at_start_and_sessions_listed_and_deleted(project: Project) -> None:
    write(project, "", ("fx", ()), grocery=False)
    project.config(
        project.config_path.read_text()
        + "\n[state]\nchat_sessions_max_age_days = 30\nchat_sessions_max_count = 3\n"
    )
    path = project.root / ".mcpapps" / CHAT_DATABASE
    store = ChatStore(path)
    await store.open()
    try:
        for session_id in ("ancient", "a", "b", "c", "d"):
            await store.save_turn(session_id, [{"role": "user", "content": session_id}])
    finally:
        await store.close()
    with sqlite3.connect(path) as db:  # its last turn was 100 days ago
        db.execute(
            "UPDATE sessions SET updated_at = ? WHERE id = 'ancient'", (time.time() - 100 * DAY_S,)
        )
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        # At start: the one too old, and the one beyond the newest three.
        with trio.fail_after(GUARD_S):
            while len((listed := (await client.get("/admin/sessions")).json())["sessions"]) > 3:
                await trio.sleep(0.05)
        assert [s["id"] for s in listed["sessions"]] == ["d", "c", "b"]
        assert "deleted 2 chat sessions that [state] no longer keeps" in supervisor.log
        assert (await client.get("/apps/chat/a")).status_code == 404
        first = listed["sessions"][0]
        assert (first["turns"], first["running"]) == (1, False)
        assert first["createdAt"] <= first["updatedAt"] <= time.time()

        async with chat_stream(client, body(SLOW, "c")) as frames:
            async for frame in frames:
                if frame.event == "tool":
                    break
            # A session with a turn running is listed as such, and is not deleted.
            listed = (await client.get("/admin/sessions")).json()
            assert {s["id"]: s["running"] for s in listed["sessions"]} == {
                "d": False,
                "c": True,
                "b": False,
            }
            refused = await client.delete("/admin/sessions/c")
            assert refused.status_code == 409
            assert refused.json()["error"] == {
                "code": "session_busy",
                "message": "session 'c' has a turn running: cancel it (POST"
                " /apps/chat/c/cancel) or wait for it to end, then delete the session",
            }
            result = await mcpapps(project, "sessions", "delete", "c")
            assert result.returncode == 1
            assert result.stderr == (
                "mcpapps: error: session 'c' has a turn running: cancel it (POST"
                " /apps/chat/c/cancel) or wait for it to end, then delete the session\n"
            )
            table = await mcpapps(project, "sessions")
            assert table.returncode == 0, table.stderr
            lines = table.stdout.splitlines()
            assert lines[0].split() == ["ID", "TURNS", "LAST", "TURN", "STARTED", "RUNNING"]
            assert [line.split()[0] for line in lines[1:4]] == ["d", "c", "b"]
            assert [line.split()[-1] for line in lines[1:4]] == ["-", "yes", "-"]
            assert lines[-1] == "3 sessions, 3 turns"
            await client.post("/apps/chat/c/cancel")
            async for _ in frames:
                pass  # the turn is over, and saved, when its stream ends
        deleted = await mcpapps(project, "sessions", "delete", "c")
        assert (deleted.returncode, deleted.stdout) == (0, "deleted session c\n")
        assert (await client.get("/apps/chat/c")).status_code == 404
        assert (await client.delete("/admin/sessions/b")).json() == {"deleted": "b"}
        gone = await client.delete("/admin/sessions/b")
        assert gone.status_code == 404
        assert gone.json()["error"]["message"] == "there is no saved session 'b'"
        assert (await client.delete("/admin/sessions/bad%20id")).status_code == 400
        listed = json.loads((await mcpapps(project, "sessions", "--json")).stdout)
        assert [s["id"] for s in listed["sessions"]] == ["d"]
        # An option given before `delete` holds as well as one given after it.
        answer = await mcpapps(project, "sessions", "--json", "delete", "d")
        assert json.loads(answer.stdout) == {"deleted": "d"}
        missing = await mcpapps(project, "sessions", "delete", "nobody")
        assert missing.returncode == 1
        assert missing.stderr == "mcpapps: error: there is no saved session 'nobody'\n"
