"""A view's lease ends however it ends (closed by its page, expired unused, its app restarted
with a changed definition or stopped by a reload), and whatever waited on it ends with it: a
call held for the person's approval is answered at once with an error that says why, and an
approval posted for it afterwards is for no call (404). Also the held calls' own cap, which
leaves the view's other requests their in-flight room, an app that is not running, and the
opening call that only exactly that call uses up. A real `mcpapps run` with fixture apps."""

from __future__ import annotations

import json
import shutil
from typing import Any

import httpx2
import trio

from tests.support.asking import asking_project
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import GUARD_S, fixture_manifest, supervisor_running
from tests.support.views import call, open_view, rpc
from web.mcpdoor.relay import APP_ERROR

# The JSON-RPC codes a view reads for each kind of refusal (README, "Views on the server").
DENIED, LIMITED, UNKNOWN_VIEW = -32004, -32003, -32001

# Every call of `fx` and `other` waits for the person; `free` never does. No answer for far
# longer than the tests' hang guard: a held call that is not ended waits that long.
APPS = ("fx", ("--gates",)), ("other", ()), ("free", ("--gates",))
ENTRIES = (
    '[apps.entries.fx]\napproval = "always"\n'
    '[apps.entries.other]\napproval = "always"\n'
    '[apps.entries.free]\napproval = "never"\n'
)
LONG = "[views]\napproval_timeout_s = 300\n"


class HeldCall:
    """A view's tool call read as server-sent events: `asked` is set once its `approval` (then
    named by `approval_id`) or `elicitation` event came, `done` once its final `message` did."""

    def __init__(self, view_id: str, name: str, arguments: dict[str, Any], rpc_id: int = 7):
        self.view_id, self.name, self.arguments, self.rpc_id = view_id, name, arguments, rpc_id
        self.asked, self.done = trio.Event(), trio.Event()
        self.approval_id = ""
        self.answer: dict[str, Any] = {}

    async def read(self, client: httpx2.AsyncClient) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": self.rpc_id,
            "method": "tools/call",
            "params": {"name": self.name, "arguments": self.arguments},
        }
        kind = ""
        async with client.stream("POST", f"/apps/views/{self.view_id}/mcp", json=message) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            async for line in r.aiter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind in ("approval", "elicitation"):
                    self.approval_id = json.loads(line[6:]).get("approvalId", "")
                    self.asked.set()
                elif line.startswith("data: ") and kind == "message":
                    self.answer = json.loads(line[6:])
                    assert self.answer["id"] == self.rpc_id
                    self.done.set()
                    return

    async def decide(self, client: httpx2.AsyncClient, decision: str) -> int:
        url = f"/apps/views/{self.view_id}/approvals/{self.approval_id}"
        return (await client.post(url, json={"decision": decision})).status_code


async def ended(
    client: httpx2.AsyncClient, nursery: trio.Nursery, view_id: str, end: Any
) -> dict[str, Any]:
    """A call of `echo` held on the view; `end()` ends the view; the call's error, once the
    call is answered (an approval posted afterwards must find no call)."""
    held = HeldCall(view_id, "echo", {"text": "held"})
    nursery.start_soon(held.read, client)
    await held.asked.wait()
    await end()
    await held.done.wait()
    assert await held.decide(client, "once") == 404
    assert "result" not in held.answer
    error: dict[str, Any] = held.answer["error"]
    return error


async def test_a_held_call_ends_with_its_view(project: Project) -> None:
    write(project, "", *APPS, extra=ENTRIES + LONG, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            async with trio.open_nursery() as nursery:
                # Closed by its page.
                view = await open_view(client, "fx")

                async def close() -> None:
                    assert (await client.delete(f"/apps/views/{view}")).json() == {"closed": True}

                error = await ended(client, nursery, view, close)
                assert error == {
                    "code": UNKNOWN_VIEW,
                    "message": "the view ended (its page closed it): the call of 'echo' was not"
                    " run; open it again",
                }

                # Its app restarted by a reload with a changed definition: the call never
                # reaches the new process.
                view = await open_view(client, "fx")
                before = (await client.get("/admin/apps/fx")).json()["pid"]

                async def restart() -> None:
                    project.manifest("apps/fx", fixture_manifest("fx", "--gates", "--app-only"))
                    assert (await client.post("/admin/reload")).json()["restarted"] == ["fx"]

                error = await ended(client, nursery, view, restart)
                assert error["code"] == UNKNOWN_VIEW
                assert error["message"] == (
                    "the view ended (a reload restarted its app 'fx' with a changed definition):"
                    " the call of 'echo' was not run; open it again"
                )
                assert (await client.get("/admin/apps/fx")).json()["pid"] != before
                gone = await call(client, view, "echo", {"text": "after"})
                assert gone["error"]["code"] == UNKNOWN_VIEW

                # Its app removed by a reload.
                view = await open_view(client, "other")

                async def remove() -> None:
                    shutil.rmtree(project.root / "apps" / "other")
                    assert (await client.post("/admin/reload")).json()["stopped"] == ["other"]

                error = await ended(client, nursery, view, remove)
                assert error["message"] == (
                    "the view ended (a reload stopped its app 'other'): the call of 'echo' was"
                    " not run; open it again"
                )
        assert "tools/call echo: ended" in supervisor.log
        metrics = (await client.get("/metrics")).text
        assert 'decision="deny"' not in metrics  # nobody denied anything


async def test_a_held_call_ends_when_its_lease_expires(project: Project) -> None:
    write(project, "", *APPS, extra=ENTRIES + LONG + "lease_s = 1\n", grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            async with trio.open_nursery() as nursery:
                # No page keeps the view alive: its lease expires while the call waits, and
                # the call is answered then, not when the view is next used.
                view = await open_view(client, "fx")

                async def unused() -> None:
                    pass

                error = await ended(client, nursery, view, unused)
                assert error == {
                    "code": UNKNOWN_VIEW,
                    "message": "the view ended (it was not used for 1 s, so its lease expired):"
                    " the call of 'echo' was not run; open it again",
                }
                assert (await client.post(f"/apps/views/{view}/keepalive")).status_code == 404

            # A call that runs longer than the lease keeps its view in use.
            view = await open_view(client, "free")
            gate = project.root / "gate-open"
            answer: list[dict[str, Any]] = []

            async def gated() -> None:
                answer.append(await call(client, view, "gate", {"path": str(gate)}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(gated)
                await trio.sleep(1.5)  # past the lease, with no keepalive
                gate.write_text("")
            assert answer[0]["result"]["content"][0]["text"] == "opened"
            assert (await client.post(f"/apps/views/{view}/keepalive")).status_code == 200


async def test_held_calls_have_their_own_cap(project: Project) -> None:
    """Calls waiting for the person leave the view's in-flight room to its other requests; at
    most as many as may be in flight wait at once."""
    write(project, "", *APPS, extra=ENTRIES + LONG, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            view = await open_view(client, "fx")
            held = [HeldCall(view, "echo", {"text": str(n)}, rpc_id=n) for n in range(4)]
            async with trio.open_nursery() as nursery:
                for one in held:
                    nursery.start_soon(one.read, client)
                    await one.asked.wait()
                listed = await rpc(client, view, "tools/list")
                assert "echo" in {t["name"] for t in listed["result"]["tools"]}
                fifth = await call(client, view, "echo", {"text": "5"})
                assert fifth["error"]["code"] == LIMITED
                assert fifth["error"]["data"] == {"limit": 4, "kind": "held"}
                assert "4 calls waiting for the person's approval" in fifth["error"]["message"]
                assert await held[0].decide(client, "deny") == 200
                await held[0].done.wait()
                assert held[0].answer["error"]["code"] == DENIED
                again = HeldCall(view, "echo", {"text": "again"}, rpc_id=9)
                nursery.start_soon(again.read, client)
                await again.asked.wait()  # room for one more held now
                for one in (*held[1:], again):
                    assert await one.decide(client, "once") == 200
            assert again.answer["result"]["content"][0]["text"] == "again"


async def test_a_stopped_app_and_the_opening_call(project: Project) -> None:
    write(project, "", *APPS, extra=ENTRIES + LONG, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            # A view of a stopped app is told the app is not running, not that it has no tool.
            assert (await client.post("/admin/apps/free/stop")).status_code == 200
            view = await open_view(client, "free")
            stopped = await call(client, view, "echo", {"text": "x"})
            assert stopped["error"] == {
                "code": APP_ERROR,
                "message": "app 'free' is not running (it is Stopped), so its tool 'echo' cannot"
                " be called: call it again once the app is Running",
            }
            assert (await call(client, view, "nope"))["error"]["code"] == APP_ERROR

            # The opening call runs once without a question; another call first does not use
            # it up.
            opening = {"toolName": "echo", "arguments": {"text": "a"}}
            view = await open_view(client, "fx", toolCall=opening, run=True)
            async with trio.open_nursery() as nursery:
                other = HeldCall(view, "echo", {"text": "b"})
                nursery.start_soon(other.read, client)
                await other.asked.wait()
                assert await other.decide(client, "deny") == 200
            first = await call(client, view, "echo", {"text": "a"})
            assert first["result"]["content"][0]["text"] == "a"
            async with trio.open_nursery() as nursery:
                again = HeldCall(view, "echo", {"text": "a"})  # used up now: asked
                nursery.start_soon(again.read, client)
                await again.asked.wait()
                assert await again.decide(client, "deny") == 200


async def test_a_call_between_rounds_ends_with_its_view(project: Project) -> None:
    """A 2026-07-28 app's call asks the page between its rounds (no request at the app): a
    reload that restarts the app ends the view, and the call with it, rather than sending its
    next round to the new process."""
    asking_project(project, entries={"cf": {"protocol": "stateless", "approval": "never"}})
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        with trio.fail_after(GUARD_S):
            view = await open_view(client, "cf")
            asking = HeldCall(view, "test_elicitation", {"message": "who are you?"})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(asking.read, client)
                await asking.asked.wait()
                manifest = project.root / "apps" / "cf" / "openclaw.mcpapp.json"
                changed = json.loads(manifest.read_text())
                changed["requestTimeoutSeconds"] += 1
                manifest.write_text(json.dumps(changed))
                assert (await client.post("/admin/reload")).json()["restarted"] == ["cf"]
        assert asking.answer["error"] == {
            "code": UNKNOWN_VIEW,
            "message": "the view ended (a reload restarted its app 'cf' with a changed"
            " definition) before the call of 'test_elicitation' was finished: it was cancelled",
        }
