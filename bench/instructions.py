"""Instructions per call in the supervisor: a 2026-07-28 `tools/call` against a handshake-era one.

Issue 32, point 1 asks that a 2026-07-28 `tools/call` that needs no round trip cost the
supervisor at most 1.1x the CPU of a handshake-era call. `bench/proxy.py --mode both` compares
the two by the supervisor's CPU time, which on a shared 2-core machine moves by up to 0.2
between runs of the same code. Here the supervisor runs under Valgrind's callgrind, its
instrumentation switched on only while calls are measured, and what is compared is the count of
instructions it executes per call, which does not depend on how fast the machine runs at the
time. The count is of user-space instructions only; the kernel's share is the system calls,
the same ones per call for both eras (sendto, recvfrom, read, write, epoll; counted with
strace), so at the same speed per instruction the CPU ratio is no larger than this one.

The same four client paths as `bench/proxy.py --mode both`: `/apps/mcp/grocery-inventory` and
`/mcp`, each with 2026-07-28 clients (`auto`) and handshake-era ones (`legacy`), every SDK
client session opened and warmed up before anything is counted. For each round, level (1, 8,
32 clients) and path, in an order that rotates each round: the counters are zeroed, `--calls`
calls are made by that many clients, and the counters are dumped and read. Printed: the median
instructions per call of each path and level over the rounds, and each era's ratio, pooled
and round by round. Under callgrind the supervisor runs some 50 times slower, so at 8 and 32
clients more requests wait together than they would: both eras alike. What the supervisor
does besides the calls (a garbage collection, say) lands in whichever batch is running: one
round's ratio stood out by up to 0.1 in the runs here, which is why the figures are medians
of rounds.

Needs `valgrind` (Debian's package). Usage:
    python bench/instructions.py [--calls N] [--rounds R] [--clients 1,8,32]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

# The helpers (`bench.support`, `bench.proxy`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp
import trio

from bench.proxy import APP, PREFIX, TOOL, Child, client_session
from bench.support import GROCERY, environment, free_port

TARGET = 1.1
ERAS = {"auto": "2026-07-28", "legacy": "handshake era"}


async def callgrind(command: str, pid: int) -> None:
    """`callgrind_control --<command> <pid>`: waits until the supervisor has done it."""
    await trio.run_process(
        ["callgrind_control", f"--{command}", str(pid)],
        capture_stdout=True,
        capture_stderr=True,
    )


def dumped_instructions(folder: Path, seen: set[Path]) -> int:
    """The instructions counted in the dumps written since `seen` (one per dump request)."""
    total = 0
    for dump in sorted(set(folder.glob("callgrind.out.*")) - seen):
        seen.add(dump)
        for line in dump.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total


async def calls(clients: list[mcp.Client], tool: str, count: int) -> None:
    """`count` calls of `tool`, taken in turn by `clients` each calling in a loop."""
    left = count

    async def caller(client: mcp.Client) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            result = await client.call_tool(tool, {})
            assert not result.is_error, result

    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(caller, client)


async def bench(args: argparse.Namespace) -> None:
    levels = [int(level) for level in args.clients.split(",")]
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        root = Path(tmp)
        shutil.copytree(GROCERY, root / "apps" / APP, ignore=shutil.ignore_patterns("__pycache__"))
        (root / "config.toml").write_text(
            '[server]\nhost = "127.0.0.1"\n\n[apps]\ndiscovery_paths = ["./apps"]\n'
        )
        dumps = root / "dumps"
        dumps.mkdir()
        port = free_port()
        env = {**environment(), "MCPAPPS_PORT": str(port)}
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",  # counted only between --instr=on and the dumps
            f"--callgrind-out-file={dumps}/callgrind.out.%p",
            str(Path(sys.executable).parent / "mcpapps"),
            *("run", "--config", "config.toml"),
        ]
        supervisor = Child("mcpapps run (under callgrind)", command, root, env)
        gateway = f"http://127.0.0.1:{port}"
        routes = {
            "/apps/mcp": (f"{gateway}/apps/mcp/{APP}", TOOL),
            "/mcp": (f"{gateway}/mcp", PREFIX + TOOL),
        }
        counted: dict[tuple[str, str, int], list[float]] = collections.defaultdict(list)
        async with trio.open_nursery() as nursery:
            try:
                await supervisor.start(nursery)
                await supervisor.wait_for_log(rf"app {APP}: \S+ → Running")
                pid = supervisor.pid
                assert pid is not None
                async with contextlib.AsyncExitStack() as stack:
                    clients: dict[tuple[str, str], list[mcp.Client]] = {}
                    for name, (url, _) in routes.items():
                        for mode in ERAS:
                            clients[name, mode] = [
                                await stack.enter_async_context(
                                    client_session(url, mode, collections.Counter())
                                )
                                for _ in range(max(levels))
                            ]
                    paths = list(clients)
                    # Warm up natively, then instrumented (callgrind translates the code again
                    # once its instrumentation is on).
                    for instrumented in (False, True):
                        if instrumented:
                            await callgrind("instr=on", pid)
                        for name, mode in paths:
                            await calls(clients[name, mode], routes[name][1], 2 * max(levels))
                    seen = set(dumps.glob("callgrind.out.*"))
                    for round_ in range(args.rounds):
                        order = paths[round_ % len(paths) :] + paths[: round_ % len(paths)]
                        for level in levels:
                            for name, mode in order:
                                # A call per client first, not counted: Hypercorn closes
                                # a connection idle for 5 s, and under callgrind the other
                                # paths' batches take longer than that.
                                await calls(clients[name, mode][:level], routes[name][1], level)
                                await callgrind("zero", pid)
                                await calls(
                                    clients[name, mode][:level], routes[name][1], args.calls
                                )
                                await callgrind("dump", pid)
                                per_call = dumped_instructions(dumps, seen) / args.calls
                                counted[name, mode, level].append(per_call)
                        print(f"round {round_ + 1} of {args.rounds} done", flush=True)
            finally:
                await supervisor.stop()
                nursery.cancel_scope.cancel()
    report(counted, levels, args)


def report(
    counted: dict[tuple[str, str, int], list[float]], levels: list[int], args: argparse.Namespace
) -> None:
    print(
        f"\nsupervisor instructions per call (callgrind; {args.calls} calls per path, level and"
        f" round; {args.rounds} rounds; median of the rounds):"
    )
    for level in levels:
        for name in ("/apps/mcp", "/mcp"):
            for mode, era in ERAS.items():
                median = statistics.median(counted[name, mode, level])
                print(f"  {name:<9} {level:>2} clients, {era:<13} {median:>12,.0f}")
    print(f"\n2026-07-28 / handshake era (target ≤ {TARGET}x):")
    for level in levels:
        for name in ("/apps/mcp", "/mcp"):
            modern, legacy = counted[name, "auto", level], counted[name, "legacy", level]
            pooled = statistics.median(modern) / statistics.median(legacy)
            by_round = statistics.median(m / h for m, h in zip(modern, legacy, strict=True))
            spread = [f"{m / h:.3f}" for m, h in zip(modern, legacy, strict=True)]
            verdict = "met" if max(pooled, by_round) <= TARGET else "MISSED"
            print(
                f"  {name:<9} {level:>2} clients: {pooled:.3f}x; round by round {by_round:.3f}x"
                f" ({', '.join(spread)}) {verdict}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per path, level and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="1,8,32", help="the levels, comma-separated")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("bench/instructions.py needs valgrind (Debian: apt-get install valgrind)")
    trio.run(bench, args)


if __name__ == "__main__":
    main()
