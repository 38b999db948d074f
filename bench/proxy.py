"""Gateway benchmark: what the front door adds to a tool call, against the app's own HTTP endpoint.

Four ways to call the same tool of the bundled app `mcpapps/grocery-inventory` (copied into a
temp project), the first three with the MCP SDK's Streamable HTTP client, one client session per
concurrent caller, every session opened and warmed up before anything is timed:

- `/apps/mcp`: `/apps/mcp/grocery-inventory` of a real `mcpapps run` (a subprocess on a free
  port), which passes each request to the app's one upstream session (the app on stdio);
- `/mcp`: the aggregated endpoint of the same supervisor, the tool under its public name
  (`grocery.get_categories`), routed by the registry to the same app;
- `direct`: the same app's own Streamable HTTP endpoint (`server.py --http`, a process of its
  own), which is what a client would call without mcpapps;
- `stdio`: the same app on stdio (a process of its own) called by this process with the SDK's
  stdio client, one session shared by every caller as the gateway shares its upstream session:
  no HTTP at all. It is the hop the gateway adds behind its own HTTP endpoint, measured alone,
  and so a floor for the gateway paths' extra cost over `direct`.

For 1, 8 and 32 concurrent clients, the four paths take turns in short batches (the order
rotates every round) so machine noise hits them alike; each batch is `--seconds` long, every
caller calling in a loop. Per path and level: latency p50/p99, calls/s, and the CPU per call
in each process: "client" (this process, the SDK clients), "gateway" (the supervisor) and "app"
(the app's process: the supervisor's stdio child, the direct HTTP server, or the stdio app), from
/proc/<pid>/stat. Then each path against direct for latency (above 1: slower) and throughput
(below 1: fewer calls/s).

Last, the budget that follows for a gateway at one client (what HTTP costs the app more than
stdio, in CPU per call) beside what the supervisor spends, and what Hypercorn alone spends per
request when it answers a fixed reply with nothing behind it (a process of its own, POSTed the
same body one request at a time).

Printed too: the protocol revision each path's client negotiated, the one the app's upstream
session speaks (the tool `get_server_stats` tells), and how each endpoint answers a POST
(plain JSON or an SSE stream), seen on the wire by an httpx2 response hook.

With `--mode both` the two gateway paths are measured for both kinds of client in the same
run, the four taking turns with direct and stdio: `auto` clients (2026-07-28, which the SDK's
clients pick when the server offers it) and `legacy` ones (the handshake era), and the
supervisor's CPU per call of the first is printed against the second's (issue 32's target: at
most 1.1x at 1, 8 and 32 clients).

With `--pin` the supervisor runs alone on the first core this process may use, and this process
(the clients), the apps and every other process it starts on the others. Unpinned, the clients
share the supervisor's cores and caches, and a 2026-07-28 client spends more CPU per call than a
handshake-era one: at 32 clients on 2 cores that shows in the supervisor's CPU per call as well.

Usage: python bench/proxy.py [--seconds S] [--rounds R] [--quick] [--mode auto|legacy|both]
       [--arguments JSON] [--profile FILE] [--pin]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

# The helpers (`bench.support`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
import mcp
import mcp_types as types
import trio
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bench.support import GROCERY, alive, environment, free_port, wait_for_port

APP = "grocery-inventory"
LEGACY = "·legacy"  # the name of a gateway path's handshake-era twin (--mode both)
TOOL = "get_categories"
STATS_TOOL = "get_server_stats"  # the app's pid and the protocol revision it was called in
PREFIX = "grocery."  # the app's toolNamePrefix: its public names on /mcp
CONCURRENCY = (1, 8, 32)  # 32 is also the default max_concurrent_calls of an app
WARM_UP = 20  # untimed calls per client session before the rounds
GUARD_S = 60  # a hang guard for starting and stopping processes, not a speed claim
STOP_GRACE_S = 15  # SIGTERM, then this long, then SIGKILL
LOG_TAIL = 200

# Run the supervisor under cProfile (--profile), timing CPU rather than wall time: `mcpapps run`
# returns on SIGTERM, so the profile is written on the way out.
PROFILED_RUN = """\
import cProfile, sys, time
from supervisor.process.cli import main
profile = cProfile.Profile(time.process_time)  # CPU time: waits for a core are not the code's
code = profile.runcall(main, ["run", "--config", "config.toml"])
profile.dump_stats(sys.argv[1])
sys.exit(code)
"""

# Hypercorn's Trio worker serving an ASGI app that answers every POST with a fixed JSON-RPC
# result: what any gateway built on it pays per request before doing anything of its own.
BARE_HYPERCORN = """\
import sys, trio, hypercorn.trio
from hypercorn.config import Config
BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}'
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive()).get("more_body"):
        pass
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})
config = Config()
config.bind = [f"127.0.0.1:{sys.argv[1]}"]
config.accesslog = None
trio.run(hypercorn.trio.serve, app, config)
"""
BARE_CALLS = 2000


def cpu_s(pid: int | None) -> float:
    """User + system CPU a live process has used so far (fields 14 and 15 of /proc/<pid>/stat)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Child:
    """A process this benchmark starts: its stderr read as it comes (the last lines kept, all
    counted), and stopped with SIGTERM, then SIGKILL if it lingers."""

    def __init__(self, name: str, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.name = name
        self.command = command
        self.cwd = cwd
        self.env = env
        self.process: trio.Process | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL)
        self.lines = 0
        self._partial = ""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def start(self, nursery: trio.Nursery) -> None:
        self.process = await trio.lowlevel.open_process(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        nursery.start_soon(self._read)

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            async for chunk in self.process.stderr:
                *complete, self._partial = (self._partial + chunk.decode(errors="replace")).split(
                    "\n"
                )
                self.tail.extend(complete)
                self.lines += len(complete)

    def log(self) -> str:
        return "\n".join([*self.tail, self._partial])

    async def wait_for_log(self, pattern: str) -> re.Match[str]:
        with trio.fail_after(GUARD_S):
            while True:
                if (found := re.search(pattern, self.log())) is not None:
                    return found
                self.check_running()
                await trio.sleep(0.02)

    async def wait_for_port(self, port: int) -> None:
        try:
            await wait_for_port(port, self.process, GUARD_S)
        except AssertionError:
            self.check_running()  # says why, with the log
            raise

    def check_running(self) -> None:
        assert self.process is not None
        if self.process.returncode is not None:
            raise RuntimeError(
                f"{self.name} exited with status {self.process.returncode}:\n{self.log()}"
            )

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after `STOP_GRACE_S`. Safe to call on a process already gone."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        with trio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with trio.move_on_after(STOP_GRACE_S):
                await process.wait()
                return
            print(f"note: {self.name} ignored SIGTERM for {STOP_GRACE_S} s; killing it")
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


@dataclasses.dataclass
class Route:
    """One way to call the tool, its client sessions, and what was measured on it."""

    name: str
    url: str
    prefix: str  # of the tool names on this path
    gateway_pid: int | None = None  # the supervisor, on the two gateway paths
    app_pid: int | None = None
    shared: bool = False  # one client session for every caller (stdio), not one each
    mode: str = "auto"  # the clients' negotiation (`mcp.Client(mode=...)`)
    clients: list[mcp.Client] = dataclasses.field(default_factory=list)
    response_types: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter
    )

    @property
    def tool(self) -> str:
        return self.prefix + TOOL


@dataclasses.dataclass
class Measured:
    """What the batches of one path at one level added up to."""

    samples: list[float] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    cpu: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"client": 0.0, "gateway": 0.0, "app": 0.0}
    )
    log_lines: int = 0
    # The gateway's CPU per call of each batch, in µs: one per round, so that two paths measured
    # in the same rounds can be compared round by round (the machine's speed drifts in a run).
    gateway_rounds: list[float] = dataclasses.field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.samples) / self.seconds

    def p(self, q: int) -> float:
        return statistics.quantiles(self.samples, n=100, method="inclusive")[q - 1]

    def cpu_us(self, process: str) -> float:
        return self.cpu[process] / len(self.samples) * 1e6

    def cpu_us_total(self) -> float:
        return sum(self.cpu.values()) / len(self.samples) * 1e6


@contextlib.asynccontextmanager
async def client_session(
    url: str, mode: str, seen: collections.Counter[str]
) -> AsyncIterator[mcp.Client]:
    """An SDK client on its own httpx2 client (as `mcp.Client(url)` makes one), whose response
    hook counts the content types the endpoint answers POSTs with."""

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            kind = response.headers.get("content-type", "-").split(";")[0]
            seen[f"{kind} ({response.status_code})"] += 1

    # The SDK's own defaults (`create_mcp_http_client`): 30 s, and 300 s to read.
    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(30.0, read=300.0), event_hooks={"response": [on_response]}
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with mcp.Client(transport, mode=mode) as client:
            yield client


def result_json(result: types.CallToolResult) -> Any:
    assert not result.is_error, result
    assert isinstance(result.content[0], types.TextContent), result
    return json.loads(result.content[0].text)


async def batch(
    path: Route, clients: int, seconds: float, arguments: dict[str, Any], measured: Measured
) -> None:
    """`clients` sessions calling in a loop for about `seconds`; latencies and CPU recorded."""
    deadline = time.perf_counter() + seconds
    samples: list[float] = []

    async def caller(client: mcp.Client) -> None:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            result = await client.call_tool(path.tool, arguments)
            samples.append(time.perf_counter() - start)
            assert not result.is_error, result

    cpu_before = (time.process_time(), cpu_s(path.gateway_pid), cpu_s(path.app_pid))
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for client in path.clients[:clients]:
            nursery.start_soon(caller, client)
    measured.seconds += time.perf_counter() - start
    measured.samples += samples
    here, gateway, app = cpu_before
    measured.cpu["client"] += time.process_time() - here
    gateway_s = cpu_s(path.gateway_pid) - gateway
    measured.cpu["gateway"] += gateway_s
    measured.cpu["app"] += cpu_s(path.app_pid) - app
    if samples:
        measured.gateway_rounds.append(gateway_s / len(samples) * 1e6)


async def bench(args: argparse.Namespace) -> None:
    arguments = json.loads(args.arguments)
    clients_needed = max(CONCURRENCY)
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        root = Path(tmp)
        shutil.copytree(GROCERY, root / "apps" / APP, ignore=shutil.ignore_patterns("__pycache__"))
        (root / "config.toml").write_text(
            '[server]\nhost = "127.0.0.1"\n\n[apps]\ndiscovery_paths = ["./apps"]\n'
        )
        port, direct_port = free_port(), free_port()
        env = {**environment(), "MCPAPPS_PORT": str(port)}
        command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
        # Before any process starts: every one inherits the cores left to the clients.
        supervisor_core = keep_first_core() if args.pin else None
        if args.profile:
            (root / "profiled_run.py").write_text(PROFILED_RUN)
            command = [sys.executable, "profiled_run.py", str(Path(args.profile).resolve())]
            env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
        supervisor = Child("mcpapps run", command, root, env)
        direct = Child(
            "the direct app",
            [sys.executable, "server.py", "--http", "--port", str(direct_port)],
            root / "apps" / APP,
            environment(),
        )
        stdio_app_pid: int | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(exit_on_signal)
            try:
                await supervisor.start(nursery)
                await direct.start(nursery)
                await supervisor.wait_for_log(r"ready: ")
                await supervisor.wait_for_log(r"front door listening on")
                running = await supervisor.wait_for_log(
                    rf"app {APP}: \S+ → Running \((.*); protocol (\S+)\)"
                )
                await direct.wait_for_port(direct_port)
                if supervisor_core is not None and supervisor.pid is not None:
                    pin(supervisor.pid, supervisor_core)
                gateway = f"http://127.0.0.1:{port}"
                mode = "auto" if args.mode == "both" else args.mode
                paths = {
                    "/apps/mcp": Route(
                        "/apps/mcp", f"{gateway}/apps/mcp/{APP}", "", supervisor.pid, mode=mode
                    ),
                    "/mcp": Route("/mcp", f"{gateway}/mcp", PREFIX, supervisor.pid, mode=mode),
                    "direct": Route("direct", f"http://127.0.0.1:{direct_port}/mcp", "", mode=mode),
                    "stdio": Route("stdio", "", "", shared=True, mode=mode),
                }
                if args.mode == "both":
                    for name in ("/apps/mcp", "/mcp"):
                        era = dataclasses.replace(paths[name], name=name + LEGACY, mode="legacy")
                        era.clients, era.response_types = [], collections.Counter()
                        paths[name + LEGACY] = era
                async with contextlib.AsyncExitStack() as stack:
                    for path in paths.values():
                        if path.shared:
                            app = StdioServerParameters(
                                command=sys.executable,
                                args=["server.py"],
                                cwd=str(root / "apps" / APP),
                                env=environment(),
                            )
                            stdio = await stack.enter_async_context(mcp.Client(app, mode=path.mode))
                            path.clients = [stdio] * clients_needed
                            continue
                        for _ in range(clients_needed):
                            path.clients.append(
                                await stack.enter_async_context(
                                    client_session(path.url, path.mode, path.response_types)
                                )
                            )
                    stdio_app_pid = await measure(args, arguments, paths, supervisor, running)
            finally:
                await supervisor.stop()
                await direct.stop()
                # The supervisor stops its app; should it have been killed, the app goes too.
                if stdio_app_pid is not None and alive(stdio_app_pid):
                    print(f"note: the supervisor left its app (pid {stdio_app_pid}); killing it")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(stdio_app_pid, signal.SIGKILL)
                nursery.cancel_scope.cancel()
        if args.profile:
            print(f"supervisor profile written to {args.profile} (python -m pstats {args.profile})")


def keep_first_core() -> int:
    """`--pin`: this process (and so every process it starts) leaves its first core to the
    supervisor, which `pin` puts there once it is running; that core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        sys.exit("--pin needs at least 2 cores: one for the supervisor, one for the rest")
    os.sched_setaffinity(0, cores[1:])
    return cores[0]


def pin(pid: int, core: int) -> None:
    """Every thread of `pid` on `core` alone (the threads it starts later inherit it; its app,
    started already, stays with the clients)."""
    for thread in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(thread), {core})


async def exit_on_signal() -> None:
    """SIGTERM or SIGHUP end the benchmark as Ctrl-C does: through the `finally` that stops
    every process it started."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


async def measure(
    args: argparse.Namespace,
    arguments: dict[str, Any],
    paths: dict[str, Route],
    supervisor: Child,
    running: re.Match[str],
) -> int | None:
    """Check the paths agree, print what each negotiated, then the rounds and the table.
    Returns the pid of the supervisor's stdio app (for cleanup)."""
    # Every session lists the tools first, as `call_tool` would on its first call (it checks
    # results against the listed output schema).
    for path in paths.values():
        for client in path.clients:
            await client.list_tools()
    first = {name: path.clients[0] for name, path in paths.items()}
    # The same answer on every path: the benchmark measures real calls, not errors.
    answers = {
        name: result_json(await c.call_tool(paths[name].tool, arguments))
        for name, c in first.items()
    }
    assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1, answers
    stats = {
        name: result_json(await c.call_tool(paths[name].prefix + STATS_TOOL, {}))
        for name, c in first.items()
    }
    assert all(stats[n]["pid"] == stats["/mcp"]["pid"] for n, p in paths.items() if p.gateway_pid)
    for name, path in paths.items():
        path.app_pid = stats[name]["pid"]

    print(
        f"tool: {TOOL} with arguments {json.dumps(arguments)}"
        f" ({len(json.dumps(answers['direct']))} bytes of JSON);"
        f" client mode {args.mode!r}, one SDK client session per concurrent caller over HTTP"
    )
    print("protocol revision negotiated:")
    for name, path in paths.items():
        eras = ", ".join(sorted({c.protocol_version for c in path.clients}))
        print(f"  {name:16s} client ↔ {'gateway' if path.gateway_pid else 'app':7s} {eras}")
    print(f"  {'':16s} (stdio: one session, {len(paths['stdio'].clients)} callers share it)")
    print(
        f"  {'':16s} gateway ↔ app     {stats['/apps/mcp']['protocolVersion']} (stdio; the"
        f" supervisor logged: {running.group(2)})"
    )

    # Warm up every session, untimed.
    async with trio.open_nursery() as nursery:
        for path in paths.values():
            for client in path.clients[:1] if path.shared else path.clients:
                nursery.start_soon(warm_up, client, path.tool, arguments)
    for path in paths.values():
        path.response_types.clear()

    measured: dict[tuple[str, int], Measured] = {}
    names = list(paths)
    for level in CONCURRENCY:
        for name in names:
            measured[name, level] = Measured()
        for round_ in range(args.rounds):
            # Rotate the order, so that no path always follows the same one.
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                lines = supervisor.lines
                await batch(paths[name], level, args.seconds, arguments, measured[name, level])
                measured[name, level].log_lines += supervisor.lines - lines

    bare_us = await bare_hypercorn_cpu_us(arguments)
    report(args, paths, measured, bare_us)
    return stats["/apps/mcp"]["pid"]


async def bare_hypercorn_cpu_us(arguments: dict[str, Any]) -> float:
    """CPU per request of Hypercorn alone (`BARE_HYPERCORN`), POSTed the same tools/call body one
    at a time from one connection."""
    port = free_port()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": TOOL, "arguments": arguments},
        }
    )
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        script = Path(tmp) / "bare_hypercorn.py"
        script.write_text(BARE_HYPERCORN)
        server = Child(
            "bare Hypercorn", [sys.executable, str(script), str(port)], Path(tmp), environment()
        )
        async with trio.open_nursery() as nursery:
            await server.start(nursery)
            try:
                await server.wait_for_port(port)
                async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                    headers = {"content-type": "application/json"}
                    for _ in range(WARM_UP):
                        (await http.post("/mcp", content=body, headers=headers)).raise_for_status()
                    before = cpu_s(server.pid)
                    for _ in range(BARE_CALLS):
                        (await http.post("/mcp", content=body, headers=headers)).raise_for_status()
                    return (cpu_s(server.pid) - before) / BARE_CALLS * 1e6
            finally:
                await server.stop()
                nursery.cancel_scope.cancel()


async def warm_up(client: mcp.Client, tool: str, arguments: dict[str, Any]) -> None:
    for _ in range(WARM_UP):
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result


def report(
    args: argparse.Namespace,
    paths: dict[str, Route],
    measured: dict[tuple[str, int], Measured],
    bare_us: float,
) -> None:
    print("responses to the timed POSTs (content type, status):")
    for name, path in paths.items():
        if path.shared:
            continue  # no HTTP
        kinds = ", ".join(f"{kind} x{n:,}" for kind, n in path.response_types.most_common())
        print(f"  {name:16s} {kinds}")
    gateway_sse = any(
        kind.startswith("text/event-stream")
        for name in ("/apps/mcp", "/mcp")
        for kind in paths[name].response_types
    )
    direct_json = any(
        kind.startswith("application/json") for kind in paths["direct"].response_types
    )
    if gateway_sse and direct_json:
        print(
            "  note: not like for like on the wire: the gateway answers each POST with an SSE"
            " stream (json_response=False, so that the app's sampling, elicitation and"
            " progress can reach the caller), the app's own endpoint with plain JSON"
            " (json_response=True)."
        )
    elif not gateway_sse:
        print(
            "  note: both answer plain JSON here: on 2026-07-28 the SDK's endpoint with"
            " json_response=False (the gateway's) still answers JSON when nothing is sent"
            " before the result, which it finds out by running the handler in a task of its own."
        )

    cores = len(os.sched_getaffinity(0))
    where = (
        f"the supervisor alone on 1 core, the clients and the apps on {cores}"
        if args.pin
        else f"{cores} cores"
    )
    print(
        f"\n{args.rounds} rounds of {args.seconds:g} s per path and level, the paths taking turns;"
        f" {where}. CPU per call in µs: client = this process (the SDK clients), gateway ="
        " the supervisor, app = the app's process; log = supervisor log lines per call"
    )
    print(
        f"  {'path':16s} {'clients':>7s} {'p50 ms':>8s} {'p99 ms':>8s} {'calls/s':>9s}"
        f"   {'client':>6s} {'gateway':>7s} {'app':>6s} {'total':>6s}   log"
    )
    for level in CONCURRENCY:
        for name, path in paths.items():
            m = measured[name, level]
            gateway = f"{m.cpu_us('gateway'):7.0f}" if path.gateway_pid else f"{'-':>7s}"
            lines = f"{m.log_lines / len(m.samples):.2f}" if path.gateway_pid else "-"
            print(
                f"  {name:16s} {level:7d} {m.p(50) * 1e3:8.2f} {m.p(99) * 1e3:8.2f}"
                f" {m.rate:9,.0f}   {m.cpu_us('client'):6.0f} {gateway} {m.cpu_us('app'):6.0f}"
                f" {m.cpu_us_total():6.0f}   {lines}"
            )

    print(
        "\neach path / direct (latency: above 1 is slower; calls/s: below 1 is fewer; CPU: all"
        " its processes per call)"
    )
    print(f"  {'path':16s} {'clients':>7s} {'p50':>7s} {'p99':>7s} {'calls/s':>8s} {'CPU':>7s}")
    for level in CONCURRENCY:
        d = measured["direct", level]
        for name in [n for n in paths if n != "direct"]:
            m = measured[name, level]
            print(
                f"  {name:16s} {level:7d} {m.p(50) / d.p(50):6.2f}x {m.p(99) / d.p(99):6.2f}x"
                f" {m.rate / d.rate:7.2f}x {m.cpu_us_total() / d.cpu_us_total():6.2f}x"
            )

    print(
        "\nwhat the gateway adds to direct at p50, beside the stdio hop alone (the app's SDK"
        " answering on stdio, no HTTP): the gateway path is an HTTP endpoint like direct's,"
        " plus that hop"
    )
    for level in CONCURRENCY:
        d, stdio = measured["direct", level], measured["stdio", level]
        added = measured["/apps/mcp", level].p(50) - d.p(50)
        print(
            f"  {level:2d} clients: /apps/mcp adds {added * 1e3:+6.2f} ms;"
            f" the stdio hop alone takes {stdio.p(50) * 1e3:6.2f} ms"
        )

    if args.mode == "both":
        report_eras(paths, measured)

    # One call at a time, the path's processes work one after the other: the gateway path can
    # match direct only if the gateway costs no more than what HTTP costs the app over stdio.
    d, stdio = measured["direct", 1], measured["stdio", 1]
    budget = max(0.0, d.cpu_us("app") - stdio.cpu_us("app"))
    print(
        f"\nat 1 client the app spends {d.cpu_us('app'):.0f} µs of CPU per call on HTTP and"
        f" {stdio.cpu_us('app'):.0f} µs on stdio: a gateway in front of its stdio could cost"
        f" about {budget:.0f} µs per call to match direct; the supervisor spends"
        f" {measured['/apps/mcp', 1].cpu_us('gateway'):.0f} µs, and Hypercorn alone, answering a"
        f" fixed reply with nothing behind it, {bare_us:.0f} µs per request"
    )


def report_eras(paths: dict[str, Route], measured: dict[tuple[str, int], Measured]) -> None:
    """The supervisor's CPU per call for a 2026-07-28 client against a handshake-era one, on
    each gateway path, measured in the same rounds."""
    print(
        "\nsupervisor CPU per call, 2026-07-28 clients / handshake-era clients (same rounds;"
        " target ≤ 1.1x):"
    )
    for name in ("/apps/mcp", "/mcp"):
        for level in CONCURRENCY:
            modern, legacy = measured[name, level], measured[name + LEGACY, level]
            ratio = modern.cpu_us("gateway") / legacy.cpu_us("gateway")
            verdict = "met" if ratio <= 1.1 else "MISSED"
            pairs = zip(modern.gateway_rounds, legacy.gateway_rounds, strict=True)
            by_round = statistics.median(m / h for m, h in pairs)
            print(
                f"  {name:9s} {level:2d} clients: {modern.cpu_us('gateway'):6.0f} µs /"
                f" {legacy.cpu_us('gateway'):6.0f} µs = {ratio:.2f}x {verdict}"
                f"; round by round, median {by_round:.2f}x"
                f" ({'met' if by_round <= 1.1 else 'MISSED'})"
            )


def round_options(parser: argparse.ArgumentParser, each: str) -> None:
    """The options of a benchmark whose paths take turns in rounds (this one, bench/peers.py);
    `each`: what `--mode both` measures twice."""
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one batch")
    parser.add_argument("--rounds", type=int, default=6, help="batches per path and level")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds, 0.25 s")
    parser.add_argument(
        "--mode",
        choices=["auto", "legacy", "both"],
        default="auto",
        help="the clients' negotiation: auto (2026-07-28 when offered), legacy (initialize), or"
        f" both ({each} twice, one per era, in the same rounds)",
    )


def run_rounds(bench: Callable[[argparse.Namespace], Awaitable[None]], args: Any) -> None:
    """Run `bench` with the options of `round_options`; an error is shown as itself."""
    if args.quick:
        args.seconds, args.rounds = 0.25, 2
    try:
        trio.run(bench, args)
    except BaseException as raised:
        # Ninety-six client sessions nest an error many groups deep: show the error itself.
        error = raised
        while isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
        if isinstance(error, KeyboardInterrupt):
            sys.exit(f"interrupted ({error or 'SIGINT'}); every process it started is stopped")
        traceback.print_exception(error)
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    round_options(parser, "each gateway path")
    parser.add_argument(
        "--arguments", default="{}", metavar="JSON", help=f"the arguments of {TOOL} ({{}})"
    )
    parser.add_argument("--profile", metavar="FILE", help="run the supervisor under cProfile")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the supervisor alone on one core, everything else on the others",
    )
    run_rounds(bench, parser.parse_args())


if __name__ == "__main__":
    main()
