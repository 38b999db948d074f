"""Gateways side by side with their sessions kept open: the peer harness's load, in steady state.

The shared peer harness (`../shared/bench/run_peers.sh`) opens new sessions for every round of
every level. Some gateways pay for a session when it opens (supergateway's stateful mode starts
a new app process for each), so its figures include their first, cold calls. This script runs
the same client (the harness's `loadgen.py`: same requests, same parsing, same clock) against
endpoints that are already running, opens each endpoint's sessions once per level, warms them
up, and then takes turns in interleaved rounds (the order alternates), so what it measures is a
gateway whose sessions are warm.

    python bench/steady.py [--levels 1,8] [--rounds 6] [--calls 400] \
        [--watch NAME=PID ...] NAME=URL [NAME=URL ...]

Per level and endpoint: latency p50/p90/mean (ms), calls/s (the median round), and with
`--watch` the CPU ms per call of that process tree; then each endpoint against the first.
`--loadgen` names the harness's load generator (default: ../shared/bench/loadgen.py beside
the project). Run it with a Python that has httpx, anyio and trio (the harness's own venv,
`${TMPDIR:-/tmp}/benchpeers/venv`, does).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
DEFAULT_LOADGEN = HERE.parent.parent / "shared" / "bench" / "loadgen.py"


def load_loadgen(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("loadgen", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no load generator at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["loadgen"] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


async def open_sessions(lg: ModuleType, url: str, level: int, proto: str) -> list[Any]:
    import httpx

    sessions = []
    for _ in range(level):  # one client, one kept-alive connection per session, as the harness
        client = lg.new_client(httpx.Limits(max_connections=1, max_keepalive_connections=1), 30)
        session, _ = await lg.open_session(client, url, proto, 30)
        sessions.append(session)
    return sessions


async def batch(lg: ModuleType, sessions: list[Any], calls: int, text: str) -> tuple[list, float]:
    left = [calls]
    latencies: list[float] = []

    async def worker(session: Any) -> None:
        while left[0] > 0:
            left[0] -= 1
            latencies.append(await lg.call_echo(session, text, 30))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(worker, session)
    return latencies, time.perf_counter() - started


async def level_run(lg: ModuleType, args: argparse.Namespace, level: int) -> dict[str, dict]:
    endpoints = args.endpoints
    sessions = {name: await open_sessions(lg, url, level, args.proto) for name, url in endpoints}
    text = "x" * args.payload_bytes
    for name, _ in endpoints:  # warm-up, not counted
        await batch(lg, sessions[name], 50 * level, text)
    figures = {name: {"lat": [], "rates": [], "cpu": 0.0} for name, _ in endpoints}
    for round_number in range(args.rounds):
        order = endpoints if round_number % 2 == 0 else endpoints[::-1]
        for name, _ in order:
            pid = args.watch.get(name)
            cpu_before = lg.tree_cpu(pid) if pid else 0.0
            latencies, wall = await batch(lg, sessions[name], args.calls * level, text)
            if pid:
                figures[name]["cpu"] += lg.tree_cpu(pid) - cpu_before
            figures[name]["lat"] += latencies
            figures[name]["rates"].append(len(latencies) / wall)
    for name, _ in endpoints:
        for session in sessions[name]:
            await lg.close_session(session, 10)
            await session.client.aclose()
    return figures


def report(level: int, figures: dict[str, dict], watched: dict[str, int]) -> None:
    rows = {}
    for name, f in figures.items():
        lat = sorted(f["lat"])
        rows[name] = {
            "p50": lat[len(lat) // 2] * 1000,
            "p90": lat[len(lat) * 9 // 10] * 1000,
            "mean": statistics.fmean(lat) * 1000,
            "rate": statistics.median(f["rates"]),
            "cpu": f["cpu"] * 1000 / len(lat) if name in watched else None,
        }
    for name, r in rows.items():
        cpu = f"  CPU ms/call {r['cpu']:.2f}" if r["cpu"] is not None else ""
        print(
            f"{level:3d} {name:14s} p50 {r['p50']:7.2f}  p90 {r['p90']:7.2f}  "
            f"mean {r['mean']:7.2f}  calls/s {r['rate']:6.0f}{cpu}"
        )
    base_name = next(iter(rows))
    base = rows[base_name]
    for name, r in list(rows.items())[1:]:
        print(
            f"    {name} vs {base_name}: p50 x{r['p50'] / base['p50']:.2f}  "
            f"mean x{r['mean'] / base['mean']:.2f}  calls/s x{r['rate'] / base['rate']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("endpoints", nargs="+", metavar="NAME=URL")
    parser.add_argument("--levels", default="1,8")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=400, help="calls per session per round")
    parser.add_argument("--payload-bytes", type=int, default=32)
    parser.add_argument("--proto", default="2025-11-25")
    parser.add_argument("--watch", action="append", default=[], metavar="NAME=PID")
    parser.add_argument("--loadgen", type=Path, default=DEFAULT_LOADGEN)
    args = parser.parse_args()
    args.endpoints = [tuple(e.split("=", 1)) for e in args.endpoints]
    args.watch = {name: int(pid) for name, pid in (w.split("=", 1) for w in args.watch)}
    lg = load_loadgen(args.loadgen)

    async def run() -> None:
        for level in (int(x) for x in args.levels.split(",")):
            report(level, await level_run(lg, args, level), args.watch)

    anyio.run(run, backend="trio")


if __name__ == "__main__":
    main()
