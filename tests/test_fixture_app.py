"""Sanity checks of tests/apps/fixture_app.py (each option does what it says) and of the Node tools.

Real subprocesses: the SDK client where a session is the point, raw JSON-RPC lines where the exit
code or the exact bytes on stdout are.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.support import forkserver
from tests.support.nodetools import server_everything_command

FIXTURE = str(Path(__file__).parent / "apps" / "fixture_app.py")
GUARD = 30  # seconds: a hang guard only, never an expectation
MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])


def fixture(*args: str, mode: str = "auto", **kwargs: Any) -> Client:
    # The whole environment, not the SDK's short default one (see test_grocery_app.stdio_app).
    # A grandchild must share the app's own process group: that app is not forked (as in
    # running.fixture_manifest).
    python = sys.executable if "--grandchild" in args else forkserver.python()
    params = StdioServerParameters(command=python, args=[FIXTURE, *args], env=dict(os.environ))
    return Client(params, mode=mode, **kwargs)  # type: ignore[arg-type]


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class Raw:
    """The fixture over raw JSON-RPC lines, for exit codes and exact stdout bytes."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(
            json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"
        )

    async def line(self) -> bytes | None:
        """The next stdout line, or None at end of file."""
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some()
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    async def response(self, request_id: int) -> dict[str, Any]:
        while (line := await self.line()) is not None:
            message = json.loads(line)
            if message.get("id") == request_id:
                return message
        raise AssertionError(f"stdout closed before the response to {request_id}")

    async def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        await self.send({"id": 0, "method": "initialize", "params": params})
        assert "result" in await self.response(0)
        await self.send({"method": "notifications/initialized"})

    async def call(self, request_id: int, name: str, **arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        await self.send({"id": request_id, "method": "tools/call", "params": params})


async def open_raw(nursery: trio.Nursery, *args: str) -> Raw:
    process = await nursery.start(
        lambda task_status: trio.run_process(
            [forkserver.python(), FIXTURE, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            check=False,
            task_status=task_status,
        )
    )
    return Raw(process)


@MODES
async def test_default_tools(mode: str) -> None:
    with trio.fail_after(GUARD):
        async with fixture("--name", "fx", mode=mode) as client:
            assert client.server_info is None or client.server_info.name == "fx"
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"echo", "add", "sleep", "pid", "crash", "freeze", "exit_clean", "fail"} <= names
            assert first_text(await client.call_tool("echo", {"text": "hi"})) == "hi"
            assert first_text(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
            assert first_text(await client.call_tool("sleep", {"seconds": 0.01})) == "slept"
            assert int(first_text(await client.call_tool("pid", {}))) > 0
            failure = await client.call_tool("fail", {})
            assert failure.is_error
            assert first_text(failure) == "fixture failure"
            if mode == "auto":
                assert client.protocol_version == "2026-07-28"


async def test_crash_at_start_exits_2_after_its_stderr_lines() -> None:
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [forkserver.python(), FIXTURE, "--stderr-lines", "3", "--crash-at-start"],
            stdin=b"",
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines[:3] == [f"fixture stderr line {i}" for i in (1, 2, 3)]
    assert "fixture: crashing at start" in lines


@pytest.mark.parametrize(
    ("args", "tool", "arguments", "code"),
    [
        (["--crash-after", "3"], "echo", {"text": "x"}, 3),
        ([], "crash", {"code": 7}, 7),
        ([], "crash", {}, 3),
        ([], "exit_clean", {}, 0),
    ],
)
async def test_exit_codes(args: list[str], tool: str, arguments: dict[str, Any], code: int) -> None:
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            raw = await open_raw(nursery, *args)
            await raw.initialize()
            if args:  # --crash-after 3: two calls are answered, the third kills the process
                for i in (1, 2):
                    await raw.call(i, "echo", text="x")
                    assert "result" in await raw.response(i)
            await raw.call(9, tool, **arguments)
            answers = []
            while (line := await raw.line()) is not None:
                answers.append(json.loads(line))
            assert [a["id"] for a in answers] == ([9] if tool == "exit_clean" else [])
            assert await raw.process.wait() == code


async def test_hang_at_start_and_freeze_answer_nothing() -> None:
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            raw = await open_raw(nursery, "--hang-at-start")
            await raw.send({"id": 1, "method": "initialize", "params": {}})
            with trio.move_on_after(0.5):
                await raw.line()
                raise AssertionError("--hang-at-start answered")
            raw.process.kill()

            raw = await open_raw(nursery)
            await raw.initialize()
            await raw.call(1, "freeze")
            await raw.send({"id": 2, "method": "ping"})
            with trio.move_on_after(0.5):
                await raw.line()
                raise AssertionError("a frozen fixture answered")
            raw.process.kill()


async def test_garbage_lines_do_not_break_a_session() -> None:
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            raw = await open_raw(nursery, "--garbage")
            assert await raw.line() == b"this is not json"
            raw.process.kill()
        async with fixture("--garbage", "--slow-start", "0.2") as client:
            for i in range(3):
                assert first_text(await client.call_tool("echo", {"text": str(i)})) == str(i)


@MODES
async def test_pagination(mode: str) -> None:
    async def collect(method: Any, field: str) -> tuple[list[Any], int]:
        items, pages, cursor = [], 0, None
        while True:
            page = await method(cursor=cursor)
            items += getattr(page, field)
            pages += 1
            if (cursor := page.next_cursor) is None:
                return items, pages

    with trio.fail_after(GUARD):
        async with fixture("--tools", "25", "--page-size", "10", mode=mode) as client:
            tools, pages = await collect(client.list_tools, "tools")
            assert pages == 4  # 8 default tools + 25
            assert [t.name for t in tools if t.name.startswith("tool_")] == [
                f"tool_{i:04d}" for i in range(25)
            ]
            assert first_text(await client.call_tool("tool_0024", {})) == "tool_0024"
            resources, _ = await collect(client.list_resources, "resources")
            assert [r.uri for r in resources] == [f"fixture://item/{i}" for i in range(25)]
            templates, _ = await collect(client.list_resource_templates, "resource_templates")
            prompts, _ = await collect(client.list_prompts, "prompts")
            assert (len(templates), len(prompts)) == (2, 2)


async def test_changing_tools_legacy_notification() -> None:
    changed = trio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with trio.fail_after(GUARD):
        async with fixture("--changing-tools", mode="legacy", message_handler=on_message) as c:
            assert c.server_capabilities.tools is not None
            assert c.server_capabilities.tools.list_changed
            assert first_text(await c.call_tool("add_tool", {"name": "extra"})) == "added extra"
            await changed.wait()
            await c.call_tool("remove_tool", {"name": "echo"})
            names = {t.name for t in (await c.list_tools()).tools}
            assert "extra" in names
            assert "echo" not in names


async def test_changing_tools_stateless_listen() -> None:
    with trio.fail_after(GUARD):
        async with fixture("--changing-tools", mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("add_tool", {"name": "extra"})
                async for _event in subscription:
                    break
            assert "extra" in {t.name for t in (await client.list_tools()).tools}


async def test_grandchild_pid_files(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    try:
        with trio.fail_after(GUARD):
            async with fixture("--grandchild", str(pidfile)) as client:
                own = int(first_text(await client.call_tool("pid", {})))
                grandchild = int(pidfile.read_text())
                assert int(Path(f"{pidfile}.self").read_text()) == own
                assert os.getpgid(grandchild) == os.getpgid(own)
    finally:
        # The fixture exits by itself on stdin EOF, so the SDK client never kills its group.
        if pidfile.exists():
            with suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


async def test_bad_schema_is_on_the_wire() -> None:
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            raw = await open_raw(nursery, "--bad-schema")
            await raw.initialize()
            await raw.send({"id": 1, "method": "tools/list", "params": {}})
            tools = {t["name"]: t for t in (await raw.response(1))["result"]["tools"]}
            assert tools["no_schema_tool"]["inputSchema"] == {"type": "string"}
            raw.process.kill()


async def test_app_only() -> None:
    with trio.fail_after(GUARD):
        async with fixture("--app-only", mode="auto") as client:
            assert "io.modelcontextprotocol/ui" in (client.server_capabilities.extensions or {})
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["app_only_tool"].meta == {"ui": {"visibility": ["app"]}}
            assert tools["ui_tool"].meta == {"ui": {"resourceUri": "ui://fixture/view.html"}}
            result = await client.call_tool("ui_tool", {})
            assert (first_text(result), result.structured_content) == ("ui shown", {"shown": True})
            resource = (await client.read_resource("ui://fixture/view.html")).contents[0]
            assert resource.mime_type == "text/html;profile=mcp-app"


@MODES
async def test_server_everything_lists_tools(mode: str) -> None:
    command, *args = server_everything_command()
    with trio.fail_after(GUARD):
        params = StdioServerParameters(command=command, args=args)
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            names = {t.name for t in (await client.list_tools()).tools}
            assert "echo" in names
            result = await client.call_tool("echo", {"message": "hi"})
            assert "hi" in first_text(result)


async def test_unknown_tool_is_a_protocol_error() -> None:
    with trio.fail_after(GUARD):
        async with fixture(mode="legacy") as client:
            with pytest.raises(MCPError):
                await client.call_tool("nope", {})
