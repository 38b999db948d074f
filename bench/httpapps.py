"""HTTP-app benchmark (issue 32, point 2): what an app reached over Streamable HTTP costs the
supervisor per tool call, against the same app over stdio.

One `mcpapps run` hosts the bundled app (`mcpapps/grocery-inventory`, copied to a temp folder)
twice, as two inline apps: `grocery-stdio` (its child over stdio) and `grocery-http` (the same
server.py started by this benchmark with `--http`, reached at its URL by the supervisor's pooled
httpx2 client: one client per upstream session, kept-alive connections, no per-call setup).
Clients are SDK sessions over Streamable HTTP on `/apps/mcp/<id>`, one per concurrent caller,
all opened and warmed up before anything is timed. For 1, 8 and 32 clients the two apps take
turns in short batches (the order alternating every round), so machine noise hits both alike.

Printed per app and level: p50, calls/s, CPU per call of the supervisor and of the app process;
then the supervisor's CPU per call over HTTP / over stdio, against the target (at most 1.2x).
Last, the floor: what the HTTP hop costs a client alone (httpx2's, httpcore2's connection, h11
bare) beside a stdio line, in this process, and the best ratio each client would leave.

Usage: python bench/httpapps.py [--seconds S] [--rounds R] [--quick] [--mode auto|legacy]
       [--only stdio|http] [--levels 1 8 32]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import h11
import httpcore2
import httpx2
import mcp
import trio
from mcp.client.streamable_http import streamable_http_client
from support import (
    GROCERY,
    Child,
    bundled_http_app,
    cpu_s,
    environment,
    exit_on_signal,
    free_port,
    supervisor,
)

from actors.apps.onewrite import OneWriteBackend

TOOL = "get_categories"
CONCURRENCY = (1, 8, 32)
WARM_UP = 20
TARGET = 1.2


@dataclasses.dataclass
class Path_:
    app_id: str
    app_pid: int = 0
    clients: list[mcp.Client] = dataclasses.field(default_factory=list)
    samples: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    seconds: dict[int, float] = dataclasses.field(default_factory=dict)
    gateway_s: dict[int, float] = dataclasses.field(default_factory=dict)
    app_s: dict[int, float] = dataclasses.field(default_factory=dict)


async def batch(path: Path_, level: int, seconds: float, gateway_pid: int) -> None:
    deadline = time.perf_counter() + seconds
    samples: list[float] = []

    async def caller(client: mcp.Client) -> None:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            result = await client.call_tool(TOOL, {})
            samples.append(time.perf_counter() - start)
            assert not result.is_error, result

    gateway, app, start = cpu_s(gateway_pid), cpu_s(path.app_pid), time.perf_counter()
    async with trio.open_nursery() as nursery:
        for client in path.clients[:level]:
            nursery.start_soon(caller, client)
    path.seconds[level] = path.seconds.get(level, 0.0) + time.perf_counter() - start
    path.gateway_s[level] = path.gateway_s.get(level, 0.0) + cpu_s(gateway_pid) - gateway
    path.app_s[level] = path.app_s.get(level, 0.0) + cpu_s(path.app_pid) - app
    path.samples.setdefault(level, []).extend(samples)


async def bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        root = Path(tmp)
        app_dir = root / "grocery"
        shutil.copytree(GROCERY, app_dir, ignore=shutil.ignore_patterns("__pycache__"))
        http_port = free_port()
        config = (
            "[apps]\ndiscovery_paths = []\n\n"
            "[apps.inline.grocery-stdio]\n"
            f'transport = "stdio"\ncommand = "{sys.executable}"\narguments = ["server.py"]\n'
            f'working_directory = "{app_dir}"\n\n'
            "[apps.inline.grocery-http]\n"
            f'transport = "http"\nurl = "http://127.0.0.1:{http_port}/mcp"\n'
        )
        http_app = bundled_http_app("the HTTP app", app_dir, http_port)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(exit_on_signal)
            await http_app.start(nursery)
            try:
                await http_app.wait_for_port(http_port)
                async with supervisor(root, config, nursery) as (gateway, base):
                    for app_id in ("grocery-stdio", "grocery-http"):
                        await gateway.wait_for_log(rf"app {app_id}: \S+ → Running")
                    eras = {
                        m.group(1): m.group(2)
                        for app_id in ("grocery-stdio", "grocery-http")
                        if (
                            m := await gateway.wait_for_log(
                                rf"app ({app_id}): \S+ → Running \(.*; protocol (\S+)\)"
                            )
                        )
                    }
                    await measure(args, base, gateway, http_app, eras)
                    if args.only is None:
                        report_floor(args.paths, await floors(http_port, app_dir))
            finally:
                await http_app.stop()
                nursery.cancel_scope.cancel()


async def measure(
    args: argparse.Namespace, base: str, gateway: Child, http_app: Child, eras: dict[str, str]
) -> None:
    paths = {name: Path_(name) for name in ("grocery-stdio", "grocery-http")}
    async with contextlib.AsyncExitStack() as stack:
        for path in paths.values():
            for _ in range(max(CONCURRENCY)):
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0))
                )
                transport = streamable_http_client(
                    f"{base}/apps/mcp/{path.app_id}", http_client=http
                )
                client = await stack.enter_async_context(mcp.Client(transport, mode=args.mode))  # type: ignore[arg-type]
                await client.list_tools()
                path.clients.append(client)
            stats = await path.clients[0].call_tool("get_server_stats", {})
            path.app_pid = json.loads(stats.content[0].text)["pid"]  # type: ignore[union-attr]
        assert paths["grocery-http"].app_pid == http_app.pid
        answers = {
            json.dumps((await p.clients[0].call_tool(TOOL, {})).structured_content, sort_keys=True)
            for p in paths.values()
        }
        assert len(answers) == 1, answers  # the same answer both ways: real calls, not errors
        async with trio.open_nursery() as nursery:
            for path in paths.values():
                for client in path.clients:

                    async def warm(c: mcp.Client = client) -> None:
                        for _ in range(WARM_UP):
                            await c.call_tool(TOOL, {})

                    nursery.start_soon(warm)

        names = [n for n in paths if args.only is None or n.endswith(args.only)]
        for level in args.levels:
            for round_ in range(args.rounds):
                for name in names if round_ % 2 == 0 else names[::-1]:
                    await batch(paths[name], level, args.seconds, gateway.pid)
    if args.only is None:
        report(args, paths, eras)
    args.paths = paths


FLOOR_CALLS = 1000
FLOOR_ROUNDS = 5
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "floor", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": TOOL}}


async def floors(http_port: int, app_dir: Path) -> dict[str, float]:
    """The client side of each hop alone, in this process, one call at a time: CPU per call of
    a call to the HTTP app (a session opened first, a kept-alive connection, the JSON answer
    parsed) by three clients, and of a bare line written to and read from the same app on stdio.
    A client's cost above the stdio line is what the HTTP hop must cost the supervisor more than
    stdio with that client. The four take turns in `FLOOR_ROUNDS` rounds (noise hits all alike):

    - `httpx2`: a POST of httpx2's client, what the SDK's transport runs on;
    - `httpcore2`: httpx2's connection layer without its client or pool: one HTTP/1.1
      connection of httpcore2's own, each request in one write (actors/apps/onewrite.py), the
      leanest client a well-kept library offers;
    - `h11`: the HTTP/1.1 state machine alone (the library under both) on a trio socket: not
      a client (no timeouts, pool, redirects or TLS), the least any client on it would spend."""
    url = f"http://127.0.0.1:{http_port}/mcp"
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30.0))
        opened = await http.post(url, json=INITIALIZE, headers=HEADERS)
        session = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = "2025-11-25"
        await http.post(url, json=INITIALIZED, headers=session)

        async def httpx2_call(i: int) -> bytes:
            return (await http.post(url, content=json.dumps(call(i)), headers=session)).content

        core = HttpcoreLink(http_port, session)
        stack.push_async_callback(core.aclose)
        bare = H11Link(http_port, session)
        stack.push_async_callback(bare.aclose)
        stdio = await stack.enter_async_context(StdioLink.open(app_dir))
        clients = {
            "httpx2": httpx2_call,
            "httpcore2": core.call,
            "h11": bare.call,
            "stdio": stdio.call,
        }
        spent = dict.fromkeys(clients, 0.0)
        for name, client in clients.items():
            for i in range(WARM_UP):
                assert "error" not in json.loads(await client(i)), name
        for _ in range(FLOOR_ROUNDS):
            for name, client in clients.items():
                before = time.process_time()
                for i in range(FLOOR_CALLS // FLOOR_ROUNDS):
                    assert "error" not in json.loads(await client(i)), name
                spent[name] += time.process_time() - before
    return {name: s / FLOOR_CALLS * 1e6 for name, s in spent.items()}


class HttpcoreLink:
    """One kept-alive HTTP/1.1 connection of httpcore2's own (`AsyncHTTP11Connection`), each
    request in one write, opened again when the server ends it (its keep-alive limit)."""

    def __init__(self, http_port: int, session: dict[str, str]) -> None:
        self._port = http_port
        self._url = f"http://127.0.0.1:{http_port}/mcp"
        self._headers = [(k.encode(), v.encode()) for k, v in session.items()]
        self._origin = httpcore2.Origin(b"http", b"127.0.0.1", http_port)
        self._backend = OneWriteBackend(httpcore2.TrioBackend())
        self._connection: httpcore2.AsyncHTTP11Connection | None = None

    async def call(self, request_id: int) -> bytes:
        if self._connection is None or self._connection.is_closed():
            stream = await self._backend.connect_tcp("127.0.0.1", self._port)
            self._connection = httpcore2.AsyncHTTP11Connection(self._origin, stream)
        body = json.dumps(call(request_id)).encode()
        head = [*self._headers, (b"content-length", str(len(body)).encode())]
        answer = await self._connection.request("POST", self._url, headers=head, content=body)
        return answer.content

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()


class H11Link:
    """h11 alone on one kept-alive trio socket: each request one write, the answer parsed by
    h11; no pool, no URL handling, no timeouts."""

    def __init__(self, http_port: int, session: dict[str, str]) -> None:
        self._port = http_port
        self._headers = [("host", f"127.0.0.1:{http_port}"), *session.items()]
        self._stream: trio.SocketStream | None = None
        self._connection = h11.Connection(h11.CLIENT)

    async def call(self, request_id: int) -> bytes:
        if self._stream is None:
            self._stream = await trio.open_tcp_stream("127.0.0.1", self._port)
            self._connection = h11.Connection(h11.CLIENT)
        connection, stream = self._connection, self._stream
        body = json.dumps(call(request_id)).encode()
        head = [*self._headers, ("content-length", str(len(body)))]
        request = connection.send(h11.Request(method="POST", target="/mcp", headers=head))
        request += connection.send(h11.Data(data=body))
        await stream.send_all(request + connection.send(h11.EndOfMessage()))
        chunks = []
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        if connection.our_state is h11.MUST_CLOSE:  # the server's keep-alive limit
            await self.aclose()
        else:
            connection.start_next_cycle()
        return b"".join(chunks)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()
            self._stream = None


class StdioLink:
    """The same app on stdio, initialized, one JSON line per request."""

    def __init__(self, process: trio.Process) -> None:
        self._process = process
        self._buffered = b""

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, app_dir: Path) -> Any:
        process = await trio.lowlevel.open_process(
            [sys.executable, "server.py"],
            cwd=app_dir,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        link = cls(process)
        try:
            await link.send(INITIALIZE)
            await link.line()
            await link.send(INITIALIZED)
            yield link
        finally:
            process.kill()
            await process.wait()

    async def send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send_all(json.dumps(message).encode() + b"\n")

    async def line(self) -> bytes:
        assert self._process.stdout is not None
        while b"\n" not in self._buffered:
            self._buffered += await self._process.stdout.receive_some()
        first, _, self._buffered = self._buffered.partition(b"\n")
        return first

    async def call(self, request_id: int) -> bytes:
        await self.send(call(request_id))
        return await self.line()


def report(args: argparse.Namespace, paths: dict[str, Path_], eras: dict[str, str]) -> None:
    print(
        f"tool {TOOL}, client mode {args.mode!r}, one SDK session per client on /apps/mcp/<id>;"
        f" upstream protocol: {', '.join(f'{k} {v}' for k, v in eras.items())}"
    )
    print(
        f"{args.rounds} alternating rounds of {args.seconds:g} s per app and level; CPU per call"
        " in µs (gateway = the supervisor, app = the app's process)"
    )
    print(
        f"  {'app':14s} {'clients':>7s} {'p50 ms':>7s} {'calls/s':>8s} {'gateway':>8s} {'app':>6s}"
    )
    ratios = {}
    for level in CONCURRENCY:
        per_call = {}
        for name, path in paths.items():
            n = len(path.samples[level])
            per_call[name] = path.gateway_s[level] / n * 1e6
            print(
                f"  {name:14s} {level:7d} {statistics.median(path.samples[level]) * 1e3:7.2f}"
                f" {n / path.seconds[level]:8,.0f} {per_call[name]:8.0f}"
                f" {path.app_s[level] / n * 1e6:6.0f}"
            )
        ratios[level] = per_call["grocery-http"] / per_call["grocery-stdio"]
    print(f"supervisor CPU per call, HTTP app / stdio app (target ≤ {TARGET}x):")
    for level, ratio in ratios.items():
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"  {level:2d} clients: {ratio:.2f}x  ({ratio / TARGET:.2f} of the target) {verdict}")


# The clients of the floor, leanest last; what each is says `floors`.
FLOOR_CLIENTS = {
    "httpx2": "httpx2's client (the SDK's transport runs on it)",
    "httpcore2": "httpcore2's HTTP/1.1 connection alone (no client, no pool), one write",
    "h11": "h11 alone on a socket (a protocol state machine, not a client)",
}


def report_floor(paths: dict[str, Path_], floor: dict[str, float]) -> None:
    stdio = paths["grocery-stdio"]
    print(
        f"floor: CPU per call in this process, one call at a time, {FLOOR_CALLS} calls each in"
        f" {FLOOR_ROUNDS} interleaved rounds: a stdio line {floor['stdio']:.0f} µs;"
    )
    for name, what in FLOOR_CLIENTS.items():
        extra = floor[name] - floor["stdio"]
        print(f"  {name:9s} {floor[name]:5.0f} µs, {extra:5.0f} µs more than stdio: {what}")
    print(
        "best HTTP / stdio ratio of the supervisor with each client (its stdio CPU per call plus"
        f" the client's extra, over its stdio CPU per call; target ≤ {TARGET}x):"
    )
    for level in CONCURRENCY:
        per_call = stdio.gateway_s[level] / len(stdio.samples[level]) * 1e6
        best = ", ".join(
            f"{name} {(per_call + floor[name] - floor['stdio']) / per_call:.2f}x"
            for name in FLOOR_CLIENTS
        )
        print(f"  {level:2d} clients (stdio {per_call:4.0f} µs per call): {best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.25 s")
    parser.add_argument("--mode", choices=["auto", "legacy"], default="legacy")
    parser.add_argument(
        "--only", choices=["stdio", "http"], help="time one app only (to profile it); no report"
    )
    parser.add_argument("--levels", type=int, nargs="+", default=list(CONCURRENCY))
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.25, 2
    trio.run(bench, args)


if __name__ == "__main__":
    main()
