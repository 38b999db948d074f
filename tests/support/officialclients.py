"""Drive the official MCP clients against a Streamable HTTP endpoint, from Trio tests.

- `ts_client(url, headers)`: one long-lived client of the TypeScript SDK (`Client` +
  `StreamableHTTPClientTransport`, tests/clients/ts_client.mjs) that a test sends commands to and
  keeps across whatever happens upstream (e.g. an app restart behind the supervisor).
- `inspector_cli(url, method, ...)`: one run of `@modelcontextprotocol/inspector --cli`.
- `HttpRecorder`: a loopback relay in front of a server that records each HTTP request the
  clients send (method, path, headers, body), and can hold chosen requests back for a while.

Both clients come from the pinned Node tools (tests/support/nodetools.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from tests.support.nodetools import inspector_command, node_binary, ts_sdk_dir

TS_CLIENT_SCRIPT = Path(__file__).parent.parent / "clients" / "ts_client.mjs"
START_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 10.0
STDERR_KEEP = 16_000  # characters of a client's stderr kept for error messages


class OfficialClientError(RuntimeError):
    """An official client failed: it could not start, it went away, or a request failed."""


def _header_lines(headers: Mapping[str, str] | None) -> list[str]:
    return [f"{name}: {value}" for name, value in (headers or {}).items()]


def _with_stderr(message: str, stderr: str) -> str:
    stderr = stderr.strip()
    return f"{message}\n--- stderr ---\n{stderr}" if stderr else message


def _lone(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The single exception inside (possibly nested) one-member groups, else None."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1:
            return None
        error = error.exceptions[0]
    return error


# --- The TypeScript SDK client -------------------------------------------------------------------


class TsClient:
    """A running tests/clients/ts_client.mjs. Made by `ts_client()`; see there."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.ready: dict[str, Any] = {}  # the ready line: protocolVersion, serverInfo, sessionId...
        self.notifications: list[dict[str, Any]] = []  # {"method": ..., "params": ...}, in order
        # The other lines: {"transportError": ...}, {"getStream": {"status": ...}}, {"closed": true}
        self.events: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._send_lock = trio.Lock()  # trio streams refuse two concurrent send_all calls
        self._news = trio.Event()  # set (and replaced) whenever a line arrives or stdout ends
        self._ready_line: dict[str, Any] | None = None
        self._stdout_ended = False

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", errors="replace")

    async def request(
        self, op: str, *, timeout: float = REQUEST_TIMEOUT_S, **fields: Any
    ) -> dict[str, Any]:
        """Send one command (`op` plus its fields, e.g. name=, arguments=, uri=, timeout_ms=) and
        return its answer: `{"id", "ok": True, "result"}` or `{"id", "ok": False, "error",
        "code"?, "httpStatus"?, ...}`. Any number may be in flight at once."""
        if self._stdout_ended:
            raise self._gone(f"cannot send {op}: the client has ended")
        request_id = next(self._ids)
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[request_id] = send
        try:
            line = json.dumps({**fields, "id": request_id, "op": op}) + "\n"
            try:
                async with self._send_lock:
                    await self.process.stdin.send_all(line.encode())  # type: ignore[union-attr]
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise self._gone(f"cannot send {op}: the client's stdin is closed") from exc
            with trio.move_on_after(timeout) as scope:
                answer = await receive.receive()
            if scope.cancelled_caught:
                raise OfficialClientError(
                    _with_stderr(f"no answer to {op} within {timeout} s", self.stderr)
                )
            if answer.get("gone"):
                raise self._gone(f"the client ended before answering {op}")
            return answer
        finally:
            del self._waiting[request_id]

    async def result(self, op: str, **fields: Any) -> dict[str, Any]:
        """`request`, but return the result alone and raise `OfficialClientError` if not ok."""
        answer = await self.request(op, **fields)
        if not answer["ok"]:
            raise OfficialClientError(f"{op} failed: {json.dumps(answer)}")
        return answer["result"]

    async def wait_for_notification(
        self, method: str, *, after: int = 0, timeout: float = REQUEST_TIMEOUT_S
    ) -> dict[str, Any]:
        """The first notification `method` among `notifications[after:]`, waiting if needed."""
        with trio.fail_after(timeout):
            while True:
                for notification in self.notifications[after:]:
                    if notification["method"] == method:
                        return notification
                if self._stdout_ended:
                    raise self._gone(f"the client ended while waiting for {method}")
                await self._news.wait()

    async def wait_for_event(
        self, check: Callable[[dict[str, Any]], bool], *, timeout: float = REQUEST_TIMEOUT_S
    ) -> dict[str, Any]:
        """The first of `events` (transportError / closed lines) for which `check` holds."""
        with trio.fail_after(timeout):
            while True:
                for event in self.events:
                    if check(event):
                        return event
                if self._stdout_ended:
                    raise self._gone("the client ended while waiting for an event")
                await self._news.wait()

    async def get_stream(self, *, timeout: float = REQUEST_TIMEOUT_S) -> int:
        """Wait until the SDK's background GET (SSE) stream got its response; return its HTTP
        status (200: open). Before that, a server notification not tied to a request is lost."""
        event = await self.wait_for_event(lambda e: "getStream" in e, timeout=timeout)
        return event["getStream"]["status"]

    def _gone(self, message: str) -> OfficialClientError:
        code = self.process.returncode
        status = f" (exit code {code})" if code is not None else ""
        return OfficialClientError(_with_stderr(message + status, self.stderr))

    def _wake(self) -> None:
        self._news.set()
        self._news = trio.Event()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._stderr += b"[stdout, not JSON] " + line + b"\n"
            return
        if "notification" in message:
            self.notifications.append(message["notification"])
        elif "ready" in message and self._ready_line is None:
            self._ready_line = message
        elif "id" in message and "ok" in message:
            waiter = self._waiting.get(message["id"])
            if waiter is not None:
                waiter.send_nowait(message)
            else:  # e.g. an answer to an unparsable command (id null)
                self.events.append(message)
        else:
            self.events.append(message)
        self._wake()

    async def _read_stdout(self) -> None:
        buffer = b""
        try:
            async for chunk in self.process.stdout:  # type: ignore[union-attr]
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._dispatch(line)
        finally:
            self._stdout_ended = True
            for waiter in self._waiting.values():
                with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                    waiter.send_nowait({"gone": True})
            self._wake()

    async def _read_stderr(self) -> None:
        async for chunk in self.process.stderr:  # type: ignore[union-attr]
            self._stderr += chunk
            del self._stderr[:-STDERR_KEEP]

    async def _wait_ready(self, timeout: float) -> None:
        with trio.move_on_after(timeout) as scope:
            while self._ready_line is None and not self._stdout_ended:
                await self._news.wait()
        line = self._ready_line
        if scope.cancelled_caught:
            raise OfficialClientError(
                _with_stderr(f"the TS client was not ready within {timeout} s", self.stderr)
            )
        if line is None or not line.get("ready"):
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                await self.process.wait()  # for its exit code and last stderr
            raise self._gone(f"the TS client could not connect: {json.dumps(line)}")
        self.ready = line

    async def _close(self, timeout: float) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            async with self._send_lock:
                await self.process.stdin.aclose()  # type: ignore[union-attr]
        with trio.move_on_after(timeout):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


@contextlib.asynccontextmanager
async def ts_client(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    terminate_on_close: bool = False,
    answers: Mapping[str, Any] | None = None,
    start_timeout: float = START_TIMEOUT_S,
    close_timeout: float = CLOSE_TIMEOUT_S,
) -> AsyncIterator[TsClient]:
    """A TypeScript SDK client connected to `url` (Streamable HTTP), sending `headers` (e.g.
    `{"Authorization": "Bearer x"}`) with every request.

        async with ts_client(url) as client:
            tools = await client.result("list_tools")
            answer = await client.request("call_tool", name="get_stores", arguments={})

    Connected (initialize done) on entry; `client.ready` holds protocolVersion, serverInfo,
    capabilities and sessionId. With `answers` (`{"sampling": result, "elicitation": result}`)
    it declares those capabilities and answers the server's requests with them. Leaving closes
    its stdin: the SDK client closes (no DELETE unless `terminate_on_close`), the process
    exits; it is killed if it takes longer than `close_timeout`. A failed start raises
    `OfficialClientError` with the client's stderr.
    """
    command = [str(node_binary()), str(TS_CLIENT_SCRIPT), url]
    for line in _header_lines(headers):
        command += ["--header", line]
    if terminate_on_close:
        command.append("--terminate-on-close")
    if answers:
        command += ["--answers", json.dumps(answers)]
    env = {**os.environ, "MCP_TS_SDK_DIR": str(ts_sdk_dir())}
    process = await trio.lowlevel.open_process(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    client = TsClient(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client._read_stdout)
            nursery.start_soon(client._read_stderr)
            try:
                await client._wait_ready(start_timeout)
                yield client
            finally:
                with trio.CancelScope(shield=True):
                    await client._close(close_timeout)
    except BaseExceptionGroup as group:
        # The readers never raise: a lone error is the caller's (or the start's). Let it out
        # as itself, so `pytest.raises` and the test report see it, not a group around it.
        only = _lone(group)
        if only is None:
            raise
        raise only from None
    finally:
        if process.returncode is None:
            with trio.CancelScope(shield=True):
                process.kill()
                await process.wait()


# --- The Inspector CLI ---------------------------------------------------------------------------


class InspectorError(OfficialClientError):
    """The Inspector CLI exited non-zero. `output` is what it printed on stdout, parsed (for a tool
    that returned isError it is the result, with exit code 5); `envelope` is its stderr's JSON
    error envelope `{"error": {"code", "message", ...}}` when there is one."""

    def __init__(
        self,
        message: str,
        *,
        returncode: int,
        stderr: str,
        output: Any = None,
        envelope: Any = None,
    ) -> None:
        super().__init__(_with_stderr(message, stderr))
        self.returncode = returncode
        self.stderr = stderr
        self.output = output
        self.envelope = envelope


def _json_or_none(text: str) -> Any:
    for candidate in (text.strip(), *reversed(text.strip().splitlines())):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def inspector_args(
    url: str,
    method: str,
    *,
    tool_name: str | None = None,
    tool_args: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    uri: str | None = None,
    prompt_name: str | None = None,
    prompt_args: Mapping[str, str] | None = None,
    protocol_era: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The Inspector CLI's arguments (after `inspector_command()`) for one request."""
    args = ["--format", "json", "-q", url, "--transport", "http", "--method", method]
    for line in _header_lines(headers):
        args += ["--header", line]  # one flag per header; the flag accumulates
    if tool_name is not None:
        args += ["--tool-name", tool_name]
    if tool_args is not None:
        args += ["--tool-args-json", json.dumps(tool_args)]
    if uri is not None:
        args += ["--uri", uri]
    if prompt_name is not None:
        args += ["--prompt-name", prompt_name]
    for key, value in (prompt_args or {}).items():
        args += ["--prompt-args", f"{key}={value}"]
    if protocol_era is not None:
        args += ["--protocol-era", protocol_era]  # legacy (its default here), auto or modern
    return [*args, *extra_args]


async def inspector_cli(
    url: str,
    method: str,
    *,
    timeout: float = START_TIMEOUT_S,
    **options: Any,
) -> dict[str, Any]:
    """Run `inspector --cli --format json -q <url> --transport http --method <method> ...` once
    and return the JSON it prints: `{"result": <the method's result>}`. `options` are those of
    `inspector_args` (tool name and arguments, headers, uri, prompt, protocol era).

    Each run connects afresh (initialize, the request, then it exits); `headers` go with every
    request (`--header 'Name: value'`). HOME and MCP_CATALOG_PATH point into a temp folder, so
    its catalog and storage files never touch the real home. Raises `InspectorError` (with its
    stderr, exit code and any parsed output) on a non-zero exit: 5 for a tool that answered
    isError or is not found, 4 for an unreachable server, 1 for an HTTP error status.
    """
    args = inspector_args(url, method, **options)
    with tempfile.TemporaryDirectory(prefix="inspector-") as home:
        env = {
            **os.environ,
            "HOME": home,
            "MCP_CATALOG_PATH": str(Path(home) / "mcp.json"),
            "MCP_CLIENT_CONFIG_PATH": str(Path(home) / "client.json"),
            "NO_COLOR": "1",
        }
        with trio.fail_after(timeout):
            done = await trio.run_process(
                [*inspector_command(), *args],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=env,
                cwd=home,
            )
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    output = _json_or_none(stdout)
    if done.returncode != 0:
        raise InspectorError(
            f"inspector --method {method} exited with {done.returncode}",
            returncode=done.returncode,
            stderr=stderr,
            output=output,
            envelope=_json_or_none(stderr),
        )
    if not isinstance(output, dict):
        raise InspectorError(
            f"inspector --method {method} printed no JSON object: {stdout[:2000]!r}",
            returncode=done.returncode,
            stderr=stderr,
        )
    return output


# --- Seeing what the clients send ----------------------------------------------------------------

_HEAD_END = b"\r\n\r\n"
_REQUEST_LINE = re.compile(rb"^([A-Z]+) (\S+) HTTP/1\.[01]$")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; a repeated header's values joined with ", "
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class HttpRecorder:
    """A loopback relay to `upstream_port` that records every HTTP/1.1 request passing through.

    `hold(request) -> seconds` may delay a request before it is forwarded (the connection's
    later requests wait with it; other connections do not). Run it with
    `await nursery.start(recorder.serve)`, then point clients at `recorder.url()`.
    """

    upstream_port: int
    hold: Callable[[RecordedRequest], float] | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def methods(self) -> list[str]:
        return [r.method for r in self.requests]

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, downstream: trio.SocketStream) -> None:
        try:
            upstream = await trio.open_tcp_stream("127.0.0.1", self.upstream_port)
        except OSError:
            await downstream.aclose()
            return
        async with downstream, upstream, trio.open_nursery() as nursery:

            async def requests_up() -> None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._requests(downstream, upstream)
                nursery.cancel_scope.cancel()

            async def responses_down() -> None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    async for chunk in upstream:
                        await downstream.send_all(chunk)
                nursery.cancel_scope.cancel()

            nursery.start_soon(requests_up)
            nursery.start_soon(responses_down)

    async def _requests(self, source: trio.SocketStream, sink: trio.SocketStream) -> None:
        buffer = b""

        async def more() -> bool:
            nonlocal buffer
            chunk = await source.receive_some(65536)
            buffer += chunk
            return bool(chunk)

        while True:
            while _HEAD_END not in buffer:
                if not await more():
                    return
            head, _, buffer = buffer.partition(_HEAD_END)
            lines = head.decode("latin-1").split("\r\n")
            match = _REQUEST_LINE.match(lines[0].encode("latin-1"))
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                headers[name] = (
                    f"{headers[name]}, {value.strip()}" if name in headers else value.strip()
                )
            if "chunked" in headers.get("transfer-encoding", "").lower() or match is None:
                # Not framed the simple way: pass everything on unrecorded from here.
                await sink.send_all(head + _HEAD_END + buffer)
                async for chunk in source:
                    await sink.send_all(chunk)
                return
            length = int(headers.get("content-length", "0") or 0)
            while len(buffer) < length:
                if not await more():
                    return
            body, buffer = buffer[:length], buffer[length:]
            request = RecordedRequest(
                match.group(1).decode(), match.group(2).decode(), headers, body
            )
            self.requests.append(request)
            delay = self.hold(request) if self.hold is not None else 0
            if delay:
                await trio.sleep(delay)
            await sink.send_all(head + _HEAD_END + body)
