"""The supervisor's tag on the MCP session ids it gives out (web/mcpdoor/affinity.py), against a
real `mcpapps run`: the tag is on every id it answers with and off the id the SDK sees, and an id
without it (another supervisor's, or one no supervisor made) is the spec's 404 for an unknown
session, so the client initializes again."""

from __future__ import annotations

import re
import socket
from typing import Any

from tests.support.frontdoor import http, open_session
from tests.support.helpers import Project
from tests.support.running import FAST, Supervisor, fixture_manifest, supervisor_running
from web.mcpdoor.affinity import SessionTags, session_tag

ECHO = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo"}}


def write(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')


def tag_of(supervisor: Supervisor) -> str:
    return session_tag(f"{socket.gethostname()}:{supervisor.port}")


def echo(text: str) -> dict[str, Any]:
    return {**ECHO, "params": {"name": "echo", "arguments": {"text": text}}}


def test_a_tag_is_short_plain_and_only_its_own_is_stripped() -> None:
    tag = session_tag("host:8789")
    assert re.fullmatch(r"r[0-9a-f]{8}-", tag)
    assert tag == session_tag("host:8789") != session_tag("host:8790")
    tags = SessionTags("host:8789")
    assert tags.strip(tag + "abc") == "abc"
    assert tags.strip(session_tag("host:8790") + "abc") is None
    assert tags.strip("abc") is None


async def test_session_ids_carry_this_supervisor_s_tag(project: Project) -> None:
    write(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        tag = tag_of(supervisor)
        assert f"its MCP session ids start with {tag}" in supervisor.log
        session = await open_session(client, "/apps/mcp/fx", {})
        tagged = session["mcp-session-id"]
        # The SDK's own id (uuid4().hex) behind the tag: the SDK never saw the tag.
        assert re.fullmatch(re.escape(tag) + "[0-9a-f]{32}", tagged)
        # The lean path and the SDK's path both answer with the tagged id.
        for capabilities in ({}, {"sampling": {}}):
            session = await open_session(client, "/apps/mcp/fx", capabilities)
            answered = await client.post("/apps/mcp/fx", json=echo("hi"), headers=session)
            assert answered.status_code == 200, answered.text
            assert answered.headers["mcp-session-id"] == session["mcp-session-id"]
            assert '"hi"' in answered.text

        # Another supervisor's tag on the same SDK id, or no tag: the spec's 404.
        sdk_id = tagged[len(tag) :]
        for foreign in (f"r00000000-{sdk_id}", sdk_id):
            refused = await client.post(
                "/apps/mcp/fx", json=echo("x"), headers={**session, "mcp-session-id": foreign}
            )
            assert refused.status_code == 404
            error = refused.json()["error"]
            assert error["message"].startswith("Session not found: the session id")
            assert f"its ids start with '{tag}'" in error["message"]
            assert refused.json()["id"] == 3

        # The aggregate endpoint too, and DELETE ends the tagged session.
        aggregate = await open_session(client, "/mcp", {})
        assert aggregate["mcp-session-id"].startswith(tag)
        ended = await client.delete("/mcp", headers=aggregate)
        assert ended.status_code == 200
        gone = await client.post("/mcp", json=echo("x"), headers=aggregate)
        assert gone.status_code == 404
        assert gone.json()["error"]["message"] == "Session not found"


async def test_a_session_s_stream_is_tagged_too(project: Project) -> None:
    write(project)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        session = await open_session(client, "/mcp", {})
        headers = {**session, "accept": "text/event-stream"}
        async with client.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["mcp-session-id"] == session["mcp-session-id"]
        foreign = {**headers, "mcp-session-id": "r00000000-" + "0" * 32}
        refused = await client.get("/mcp", headers=foreign)
        assert refused.status_code == 404
