"""Tool-call benchmark: what the registry adds to a tool call, against the SDK client alone.

Two processes of the same fixture app (`tests/apps/fixture_app.py`, same arguments) run side by
side in one Trio run: one under the real registry, called through `ToolBridge.call_raw` (registry
actor → app actor → our stdio transport → the SDK session), and one behind a plain
`mcp.Client` session over the SDK's own stdio client. Both are warmed up first; then, side by side:

- latency of `echo` one call at a time, p50 and p99, in alternating blocks of calls so that
  machine noise hits both routes alike, and the ratio registry / direct;
- calls per second with 1, 8 and 32 concurrent callers, each route in turn for a short fixed
  time, over several alternating rounds;
- with each, the CPU per call in this process ("here": the supervisor, or the bare SDK client)
  and in the app's process (/proc/<pid>/stat), which says where the time goes.

The benchmark process is both the supervisor and the direct client, and each app is a process
of its own, so the two routes compete for the same cores in the same way. Not quite like for
like: `call_raw` returns the result as raw JSON, while `mcp.Client.call_tool` also validates it
into the SDK's model, a cost only the direct route pays.

Usage: python bench/calls.py [--calls N] [--seconds S]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

# The helpers (`bench.support`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp
import mcp_types as types
import trio
from mcp import StdioServerParameters

from actors.chat.bridge import ToolBridge
from actors.registry import WhenReady
from actors.runtime import ask
from bench.support import FIXTURE_APP, Project, environment, fixture_manifest, running

APP = "bench"
BLOCK = 100  # calls per alternating latency block
WARM_UP = 200
ROUNDS = 8  # alternating rounds per concurrency level: short ones, so noise hits both routes
CONCURRENCY = (1, 8, 32)  # 32 is also the default max_concurrent_calls of an app

Call = Callable[[], Awaitable[object]]


def cpu_s(pid: int) -> float:
    """User + system CPU a live process has used so far (fields 14 and 15 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Route:
    """One way to call `echo`, and the CPU its calls used: in this process (the supervisor, or
    the bare SDK client) and in the app's process. Where the time goes is the point."""

    call: Call
    app_pid: int
    here_s: float = 0.0
    app_s: float = 0.0
    calls: int = 0

    @contextlib.asynccontextmanager
    async def metered(self) -> AsyncIterator[None]:
        here, app = time.process_time(), cpu_s(self.app_pid)
        yield
        self.here_s += time.process_time() - here
        self.app_s += cpu_s(self.app_pid) - app

    def cpu(self) -> str:
        here, app = self.here_s / self.calls * 1e6, self.app_s / self.calls * 1e6
        return f"CPU per call: here {here:4.0f} µs, app {app:4.0f} µs"


async def latencies(route: Route, count: int) -> list[float]:
    samples = []
    async with route.metered():
        for _ in range(count):
            start = time.perf_counter()
            await route.call()
            samples.append(time.perf_counter() - start)
    route.calls += count
    return samples


async def throughput(route: Route, callers: int, seconds: float) -> float:
    """`callers` concurrent loops calling for about `seconds`; the exact time they took."""
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        while time.perf_counter() < deadline:
            await route.call()
            route.calls += 1

    start = time.perf_counter()
    async with route.metered(), trio.open_nursery() as nursery:
        for _ in range(callers):
            nursery.start_soon(caller)
    return time.perf_counter() - start


def p(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def text(result: object) -> str:
    """The text of an echo result: a raw wire dict (registry) or the SDK's model (direct)."""
    if isinstance(result, tuple):
        _, raw = result
        assert not raw.get("isError"), raw
        return raw["content"][0]["text"]
    assert isinstance(result, types.CallToolResult), result
    assert not result.is_error, result
    assert isinstance(result.content[0], types.TextContent)
    return result.content[0].text


async def bench(calls: int, seconds: float) -> None:
    env = environment()
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        project = Project(Path(tmp))
        project.manifest(f"apps/{APP}", fixture_manifest(APP))
        data = {"apps": {"discovery_paths": ["./apps"]}}  # default supervision: pings every 20 s
        direct_params = StdioServerParameters(
            command=sys.executable, args=[str(FIXTURE_APP), "--name", APP]
        )
        async with (
            running(project, data, env) as registry,
            mcp.Client(direct_params, mode="auto") as client,
        ):
            (status,) = await ask(registry.mailbox, WhenReady)
            bridge = ToolBridge(registry.mailbox)
            direct_pid = int(text(await client.call_tool("pid", {})))
            routes = {
                "registry": Route(
                    lambda: bridge.call_raw(f"{APP}.echo", {"text": "hello"}), status.pid
                ),
                "direct": Route(lambda: client.call_tool("echo", {"text": "hello"}), direct_pid),
            }
            # Both answer the same thing: the benchmark measures real calls, not errors.
            for route in routes.values():
                assert text(await route.call()) == "hello"
            print(
                f"protocol: registry {status.protocol_version}, direct {client.protocol_version};"
                " 'here' is this process (the supervisor, or the bare SDK client)"
            )

            for route in routes.values():
                await latencies(route, WARM_UP)
                route.here_s = route.app_s = route.calls = 0

            samples: dict[str, list[float]] = {name: [] for name in routes}
            for block in range(max(1, calls // BLOCK)):
                # Alternate which route goes first, so neither always follows the other.
                order = list(routes) if block % 2 == 0 else list(reversed(routes))
                for name in order:
                    samples[name] += await latencies(routes[name], BLOCK)
            n = len(samples["registry"])
            print(f"echo latency, one call at a time ({n} calls per route, blocks of {BLOCK}):")
            for name, s in samples.items():
                print(
                    f"  {name:9s} p50 {p(s, 50) * 1e3:6.3f} ms   p99 {p(s, 99) * 1e3:6.3f} ms"
                    f"   mean {statistics.fmean(s) * 1e3:6.3f} ms   {routes[name].cpu()}"
                )
            r, d = samples["registry"], samples["direct"]
            print(
                f"  registry / direct: p50 {p(r, 50) / p(d, 50):.2f}x"
                f"   p99 {p(r, 99) / p(d, 99):.2f}x"
                f"   (the registry adds {(p(r, 50) - p(d, 50)) * 1e3:.3f} ms at p50)"
            )

            print(f"calls/s ({ROUNDS} alternating rounds of {seconds:g} s per route and level):")
            for callers in CONCURRENCY:
                took = dict.fromkeys(routes, 0.0)
                for route in routes.values():
                    route.here_s = route.app_s = route.calls = 0
                for round_ in range(ROUNDS):
                    order = list(routes) if round_ % 2 == 0 else list(reversed(routes))
                    for name in order:
                        took[name] += await throughput(routes[name], callers, seconds)
                rate = {name: routes[name].calls / took[name] for name in routes}
                print(
                    f"  {callers:2d} caller{'s' if callers > 1 else ' '}:  registry / direct"
                    f" {rate['registry'] / rate['direct']:.2f}x"
                )
                for name, route in routes.items():
                    print(f"     {name:9s} {rate[name]:7,.0f}/s   {route.cpu()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="latency calls per path")
    parser.add_argument("--seconds", type=float, default=0.75, help="per throughput measurement")
    args = parser.parse_args()
    trio.run(bench, args.calls, args.seconds)


if __name__ == "__main__":
    main()
