"""Idle-session benchmark (issue 32, point 3): what a thousand idle MCP sessions cost the
supervisor, in memory and in the speed of the sessions that are busy.

Two `mcpapps run`, side by side, each hosting the bundled app (stdio) with `[limits]
max_sessions` raised above the count: "idle" gets N idle sessions (default 1,000) on
`/apps/mcp/grocery-inventory` and N on `/mcp`, "bare" none. An idle session is opened as a
2025-11-25 client opens one (`initialize`, then `notifications/initialized`, by plain HTTP on a
few pooled connections) and then never used; with `--streams` each also holds its GET stream
open, as the SDK's client does.

Measured, in one run:
- the idle supervisor's memory per idle session: its RSS (VmRSS) after opening them, less before,
  over the sessions (target: at most 64 KiB);
- nothing wakes up on a timer: both supervisors left quiet for `--quiet` seconds, their CPU and
  context switches (/proc/<pid>/status) side by side;
- then 32 active SDK sessions on `/apps/mcp/grocery-inventory` of each supervisor, calling a tool
  in a loop, the two supervisors taking turns in short batches (alternating order): p50 and
  calls/s of "idle" against "bare" (target: within 10 %).

With `--floor`, a third process gets the same idle sessions: `bench/idlefloor.py`, the SDK's
session manager on Hypercorn with nothing of mcpapps, its GET streams held by the least there is.
Its memory per session is what an idle session costs before anything mcpapps adds.

Usage: python bench/idle.py [--sessions N] [--seconds S] [--rounds R] [--quick] [--streams]
                            [--floor]
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import mcp
import trio
from mcp.client.streamable_http import streamable_http_client
from support import (
    GROCERY,
    Child,
    cpu_s,
    environment,
    exit_on_signal,
    free_port,
    proc_kib,
    supervisor,
)

APP = "grocery-inventory"
TOOL = "get_categories"
ACTIVE = 32
WARM_UP = 20
MEMORY_TARGET_KIB = 64
SPEED_TARGET = 0.10
OPENERS = 16  # concurrent openers of idle sessions (each its own pooled HTTP client)
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "idle", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def switches(pid: int) -> int:
    return proc_kib(pid, "voluntary_ctxt_switches") + proc_kib(pid, "nonvoluntary_ctxt_switches")


async def open_idle(
    base: str,
    count: int,
    streams: bool,
    nursery: trio.Nursery,
    stack: contextlib.AsyncExitStack,
    paths: tuple[str, ...] = (f"/apps/mcp/{APP}", "/mcp"),
) -> None:
    """`count` sessions on each of the two endpoints, opened and left alone (their GET streams
    held open in `nursery` with `streams`)."""
    todo = [(path, i) for path in paths for i in range(count)]
    clients = [
        await stack.enter_async_context(
            httpx2.AsyncClient(base_url=base, timeout=60.0, limits=httpx2.Limits(max_connections=4))
        )
        for _ in range(OPENERS)
    ]
    stream_client = None
    if streams:
        stream_client = await stack.enter_async_context(
            httpx2.AsyncClient(
                base_url=base,
                timeout=httpx2.Timeout(60.0, read=None),
                limits=httpx2.Limits(max_connections=None, max_keepalive_connections=0),
            )
        )

    async def hold(path: str, session: dict[str, str]) -> None:
        assert stream_client is not None
        headers = {**session, "accept": "text/event-stream"}
        # The stream ends when the benchmark closes its client at the end: not an error.
        with contextlib.suppress(httpx2.ReadError, httpx2.RemoteProtocolError):
            async with stream_client.stream("GET", path, headers=headers) as response:
                assert response.status_code == 200, response.status_code
                async for _ in response.aiter_bytes():
                    pass

    async def opener(client: httpx2.AsyncClient) -> None:
        while todo:
            path, _ = todo.pop()
            opened = await client.post(path, json=INITIALIZE, headers=HEADERS)
            assert opened.status_code == 200, opened.text
            session = {
                **HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            done = await client.post(path, json=INITIALIZED, headers=session)
            assert done.status_code == 202, done.text
            if streams:
                nursery.start_soon(hold, path, session)

    async with trio.open_nursery() as openers:
        for client in clients:
            openers.start_soon(opener, client)


async def batch(clients: list[mcp.Client], seconds: float) -> tuple[list[float], float]:
    deadline = time.perf_counter() + seconds
    samples: list[float] = []

    async def caller(client: mcp.Client) -> None:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            result = await client.call_tool(TOOL, {})
            samples.append(time.perf_counter() - start)
            assert not result.is_error, result

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(caller, client)
    return samples, time.perf_counter() - start


async def active_clients(base: str, stack: contextlib.AsyncExitStack) -> list[mcp.Client]:
    clients = []
    for _ in range(ACTIVE):
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0))
        )
        transport = streamable_http_client(f"{base}/apps/mcp/{APP}", http_client=http)
        client = await stack.enter_async_context(mcp.Client(transport, mode="legacy"))
        await client.list_tools()
        clients.append(client)
    return clients


async def bench(args: argparse.Namespace) -> None:
    limits = args.sessions + ACTIVE + 100
    config = (
        '[apps]\ndiscovery_paths = ["./apps"]\n\n'
        f"[limits]\nmax_sessions = {limits}\n"  # per endpoint; the default is 1,000
    )
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        roots = {}
        for name in ("idle", "bare"):
            roots[name] = Path(tmp) / name
            shutil.copytree(
                GROCERY, roots[name] / "apps" / APP, ignore=shutil.ignore_patterns("__pycache__")
            )
        async with trio.open_nursery() as nursery, contextlib.AsyncExitStack() as stack:
            nursery.start_soon(exit_on_signal)
            try:
                started: dict[str, tuple[Child, str]] = {}
                for name, root in roots.items():
                    started[name] = await stack.enter_async_context(
                        supervisor(root, config, nursery, f"mcpapps run ({name})")
                    )
                    await started[name][0].wait_for_log(rf"app {APP}: \S+ → Running")
                if args.floor:
                    await measure_floor(args, Path(tmp), nursery, stack)
                await measure(args, started, nursery, stack)
            finally:
                await stack.aclose()
                nursery.cancel_scope.cancel()


async def measure(
    args: argparse.Namespace,
    started: dict[str, tuple[Child, str]],
    nursery: trio.Nursery,
    stack: contextlib.AsyncExitStack,
) -> None:
    (idle, idle_base), (bare, bare_base) = started["idle"], started["bare"]
    active = {
        "idle": await active_clients(idle_base, stack),
        "bare": await active_clients(bare_base, stack),
    }
    for clients in active.values():
        for client in clients:
            for _ in range(WARM_UP):
                await client.call_tool(TOOL, {})

    await trio.sleep(1.0)
    rss_before = proc_kib(idle.pid, "VmRSS")
    opening = time.perf_counter()
    await open_idle(idle_base, args.sessions, args.streams, nursery, stack)
    opened_in = time.perf_counter() - opening
    await trio.sleep(1.0)
    rss_after = proc_kib(idle.pid, "VmRSS")
    sessions = 2 * args.sessions
    per_session = (rss_after - rss_before) / sessions

    # Quiet: no calls anywhere. What each supervisor does on its own, side by side.
    quiet_before = {p.pid: (cpu_s(p.pid), switches(p.pid)) for p in (idle, bare)}
    await trio.sleep(args.quiet)
    quiet = {pid: (cpu_s(pid) - cpu, switches(pid) - n) for pid, (cpu, n) in quiet_before.items()}

    samples: dict[str, list[float]] = {"idle": [], "bare": []}
    took = dict.fromkeys(samples, 0.0)
    for round_ in range(args.rounds):
        for name in ("idle", "bare") if round_ % 2 == 0 else ("bare", "idle"):
            got, seconds = await batch(active[name], args.seconds)
            samples[name] += got
            took[name] += seconds

    streams = " each holding its GET stream open," if args.streams else ""
    print(
        f"{args.sessions:,} idle sessions on /apps/mcp/{APP} and {args.sessions:,} on /mcp"
        f" ({sessions:,} in all,{streams} opened in {opened_in:.1f} s)"
    )
    print(
        f"idle supervisor RSS: {rss_before / 1024:.1f} MiB before, {rss_after / 1024:.1f} MiB"
        f" after: {per_session:.1f} KiB per idle session (target ≤ {MEMORY_TARGET_KIB} KiB:"
        f" {per_session / MEMORY_TARGET_KIB:.2f} of it)"
    )
    print(f"quiet for {args.quiet:g} s, no calls anywhere (CPU, context switches):")
    for name, process in (("idle", idle), ("bare", bare)):
        cpu, n = quiet[process.pid]
        print(f"  {name}: {cpu * 1e3:6.0f} ms CPU, {n:5d} context switches")
    print(
        f"{ACTIVE} active SDK sessions on /apps/mcp/{APP}, {args.rounds} alternating rounds of"
        f" {args.seconds:g} s per supervisor:"
    )
    rate = {name: len(samples[name]) / took[name] for name in samples}
    p50 = {name: statistics.median(samples[name]) for name in samples}
    for name in samples:
        print(f"  {name}: p50 {p50[name] * 1e3:7.2f} ms   {rate[name]:7,.0f} calls/s")
    p50_ratio, rate_ratio = p50["idle"] / p50["bare"], rate["idle"] / rate["bare"]
    ok = abs(p50_ratio - 1) <= SPEED_TARGET and abs(rate_ratio - 1) <= SPEED_TARGET
    print(
        f"  idle / bare: p50 {p50_ratio:.2f}x, calls/s {rate_ratio:.2f}x"
        f" (target: within {SPEED_TARGET:.0%}) {'met' if ok else 'MISSED'}"
    )


async def measure_floor(
    args: argparse.Namespace, tmp: Path, nursery: trio.Nursery, stack: contextlib.AsyncExitStack
) -> None:
    """The same idle sessions on `bench/idlefloor.py`, and its memory per session."""
    port = free_port()
    script = Path(__file__).with_name("idlefloor.py")
    command = [sys.executable, str(script), "--port", str(port)]
    floor = Child("idlefloor.py", command, tmp, environment())
    await floor.start(nursery)
    stack.push_async_callback(floor.stop)
    await floor.wait_for_port(port)
    base = f"http://127.0.0.1:{port}"
    async with httpx2.AsyncClient(base_url=base) as warm:  # one session first: lazy imports
        opened = await warm.post("/mcp", json=INITIALIZE, headers=HEADERS)
        assert opened.status_code == 200, opened.text
    await trio.sleep(1.0)
    rss_before = proc_kib(floor.pid, "VmRSS")
    await open_idle(base, args.sessions, args.streams, nursery, stack, ("/mcp", "/mcp"))
    await trio.sleep(1.0)
    per_session = (proc_kib(floor.pid, "VmRSS") - rss_before) / (2 * args.sessions)
    held = " each holding its GET stream open" if args.streams else " without a GET stream"
    print(
        f"floor (bench/idlefloor.py: the SDK's session manager on Hypercorn, nothing of mcpapps):"
        f" {2 * args.sessions:,} idle sessions{held}: {per_session:.1f} KiB per idle session"
        f" (target ≤ {MEMORY_TARGET_KIB} KiB: {per_session / MEMORY_TARGET_KIB:.2f} of it)"
    )


def raise_descriptor_limit(needed: int) -> None:
    """Each idle session with its stream is a connection at both ends (the supervisor, started
    by this process, inherits the limit): the soft limit is raised to what is needed, as far as
    the hard limit lets it (systemd's default soft limit is 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < needed:
        raise SystemExit(f"idle.py needs {needed} file descriptors; the hard limit is {hard}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="idle sessions per endpoint")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=8)
    # Twice the keep-alive period of the standing streams, so their pings are counted.
    parser.add_argument("--quiet", type=float, default=30.0, help="seconds left quiet")
    parser.add_argument("--streams", action="store_true", help="idle sessions hold a GET stream")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.25 s, 2 s quiet")
    parser.add_argument(
        "--floor", action="store_true", help="the same sessions on bench/idlefloor.py too"
    )
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds, args.quiet = 0.25, 2, 2.0
    # Per idle session with its stream, a socket here and one in the supervisor; then the
    # active sessions, the pooled openers, the apps' pipes and the processes' own.
    raise_descriptor_limit((3 if args.floor else 2) * 2 * args.sessions + 2048)
    trio.run(bench, args)


if __name__ == "__main__":
    main()
