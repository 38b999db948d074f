"""Start-up benchmark: how long apps take to reach Running, alone and all at once, and what each
running app costs the supervisor in memory.

Every app is the test fixture (`tests/apps/fixture_app.py`, a real stdio MCP server on the real
SDK), run by the real registry from manifests in a temp folder. In one run, side by side:

- one app alone, R times (default 5), each in a fresh registry: wall time from starting the
  registry to `WhenReady`, and the app's own Loaded → Running from `entered_at` (spawn,
  handshake, catalog); the slowest of the R counts, so the comparison below is not flattered;
- N apps (default 20) in one registry, all started at once: wall time until every one is
  Running, against that slowest single start;
- the CPU spent until Running, by the children (from /proc/<pid>/stat) and by this process (the
  supervisor): each child spends most of its start importing Python and the SDK, so the
  children's CPU over the cores is a floor for the all-at-once time that the supervisor does not
  set;
- the supervisor's own memory per app: this process's RSS (VmRSS) before the N apps and once they
  are all Running, over N. Children are separate processes and not in it; their summed RSS and PSS
  (shared pages split between sharers) are printed for context;
- how long stopping all N takes (`StopAll`, one app after another).

Usage: python bench/startup.py [--apps N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

# The helpers (`bench.support`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from actors.messages import AppStatus, StopAll
from actors.registry import Registry, WhenReady
from actors.runtime import ask
from bench.support import Project, environment, fixture_manifest
from supervisor.model.config import config_from_data
from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState

GUARD_S = 120  # a hang guard, not a speed claim


def proc_kib(path: str, field: str) -> int:
    """A `Field:   123 kB` line of a /proc file, in KiB (0 if the process is gone)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def cpu_s(pid: int) -> float:
    """User + system CPU a live process has used so far (fields 14 and 15 of /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loaded_to_running(status: AppStatus) -> float:
    return status.entered_at[AppState.RUNNING] - status.entered_at[AppState.LOADED]


async def start_apps(root: Path, count: int, env: dict[str, str]) -> dict:
    """Start `count` fixture apps in one fresh registry; time it; measure memory; stop them."""
    root.mkdir()
    project = Project(root)
    for i in range(count):
        project.manifest(f"apps/app-{i:03d}", fixture_manifest(f"app-{i:03d}"))
    data = {"apps": {"discovery_paths": ["./apps"]}}
    apps = discover(config_from_data(data, project.config_path, env), env).apps
    gc.collect()
    rss_before = proc_kib("/proc/self/status", "VmRSS")
    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            registry = Registry(apps, environ=env)
            started, cpu_started = time.perf_counter(), time.process_time()
            await nursery.start(registry.run)
            statuses = await ask(registry.mailbox, WhenReady)
            wall = time.perf_counter() - started
            own_cpu = time.process_time() - cpu_started
            assert all(s.state is AppState.RUNNING for s in statuses), statuses
            gc.collect()
            rss_after = proc_kib("/proc/self/status", "VmRSS")
            pids = [s.pid for s in statuses if s.pid is not None]
            children_rss = sum(proc_kib(f"/proc/{pid}/status", "VmRSS") for pid in pids)
            children_pss = sum(proc_kib(f"/proc/{pid}/smaps_rollup", "Pss") for pid in pids)
            children_cpu = sum(cpu_s(pid) for pid in pids)
            stopping = time.perf_counter()
            await ask(registry.mailbox, StopAll)
            stop_wall = time.perf_counter() - stopping
            nursery.cancel_scope.cancel()
    return {
        "wall": wall,
        "own": [loaded_to_running(s) for s in statuses],
        "own_cpu": own_cpu,
        "children_cpu": children_cpu,
        "rss_delta_kib": rss_after - rss_before,
        "children_rss_kib": children_rss,
        "children_pss_kib": children_pss,
        "stop_wall": stop_wall,
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.0f} ms"


async def bench(apps: int, repeat: int) -> None:
    env = environment()
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        # Alone, R times: the first run also pays this process's imports and caches, which is
        # one reason to keep the slowest rather than the first or the best.
        singles = [await start_apps(Path(tmp) / f"single-{k}", 1, env) for k in range(repeat)]
        slowest = max(singles, key=lambda r: r["wall"])
        walls = [r["wall"] for r in singles]
        owns = [r["own"][0] for r in singles]
        print(
            f"one app alone ({repeat} runs):  registry start → WhenReady"
            f"  slowest {ms(max(walls))}  best {ms(min(walls))}"
            f"   |  its Loaded → Running  slowest {ms(max(owns))}  best {ms(min(owns))}"
        )

        many = await start_apps(Path(tmp) / "many", apps, env)
        own = sorted(many["own"])
        print(
            f"{apps} apps at once:            registry start → WhenReady {ms(many['wall'])}"
            f"   |  their Loaded → Running  fastest {ms(own[0])}  median {ms(own[len(own) // 2])}"
            f"  slowest {ms(own[-1])}"
        )
        print(f"all {apps} / slowest single:   {many['wall'] / max(walls):.1f}x")

        # CPU used until Running: the children's CPU over the cores is the floor for the
        # all-at-once wall time, whatever the supervisor does.
        print(
            f"CPU until Running: one app alone: child {ms(slowest['children_cpu'])},"
            f" supervisor {ms(slowest['own_cpu'])}"
            f"   |  {apps} apps: children {ms(many['children_cpu'])}"
            f" ({ms(many['children_cpu'] / apps).strip()} each), supervisor {ms(many['own_cpu'])}"
            f" ({ms(many['own_cpu'] / apps).strip()} per app);"
            f" children's CPU / {cores} cores = {ms(many['children_cpu'] / cores).strip()}"
        )

        print(
            f"supervisor memory: RSS +{many['rss_delta_kib'] / 1024:.1f} MiB for {apps} running"
            f" apps = {many['rss_delta_kib'] / apps:,.0f} KiB per app"
            f"   |  children: RSS {many['children_rss_kib'] / 1024:,.0f} MiB in total"
            f" ({many['children_rss_kib'] / apps / 1024:.0f} MiB each),"
            f" PSS {many['children_pss_kib'] / 1024:,.0f} MiB"
            f" ({many['children_pss_kib'] / apps / 1024:.0f} MiB each)"
        )
        print(f"stopping all {apps} (one by one, reverse order): {ms(many['stop_wall'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trio.run(bench, args.apps, args.repeat)


if __name__ == "__main__":
    main()
