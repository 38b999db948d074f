"""2026-07-28 clients on mcpapps beside supergateway, the peer gateway that speaks that era.

`../shared/bench/` compares mcpapps with mcp-proxy and supergateway for handshake-era clients
only (its load generator speaks that era alone). Of its peers, supergateway 4.0.0 also serves
2026-07-28 clients (sessionless requests beside its stateful sessions); mcp-proxy 0.13.0 does
not (it runs on `mcp` 1.30.0, which knows the handshake revisions only). This is that
comparison for the newer era: the bundled app `mcpapps/grocery-inventory` behind each of

- `direct`: the app's own Streamable HTTP endpoint (`server.py --http`): no gateway;
- `supergateway`: supergateway 4.0.0 (`--stdio ... --outputTransport streamableHttp --stateful`),
  the app on stdio;
- `mcpapps`: `/apps/mcp/grocery-inventory` of a real `mcpapps run`, the app on stdio;

each called by the MCP SDK's own clients (`mcp.Client`, one session per concurrent caller, every
session opened and warmed up first) at 1, 8 and 32 clients, the paths taking turns in short
batches with the order rotating every round. Per path and level: p50 and p99 latency, calls/s,
and CPU per call of the gateway process and of the app's process (from /proc). Then mcpapps
against supergateway. `--mode legacy` runs the same with handshake-era clients; `--mode both`
each gateway once per era in the same rounds.

supergateway serves a 2026-07-28 request by starting the app for it (through a shell, in the
app's folder) and ending it after the answer, without waiting for it: those apps' CPU is in no
process's accounts, so supergateway's app column is not timed, and after each batch the next
one waits until the apps it started have gone (found by their folder, a copy of the app's own).

supergateway comes from npm, pinned by `bench/peers/package-lock.json`, and is installed on first
use into `.tools/bench-peers` with the project's pinned Node (scripts/node-tools.sh).

Usage: python bench/peers.py [--seconds S] [--rounds R] [--quick] [--mode auto|legacy|both]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The helpers (`bench.support`, `bench.proxy`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp
import trio

from bench.proxy import (
    APP,
    CONCURRENCY,
    LEGACY,
    STATS_TOOL,
    Measured,
    Route,
    batch,
    client_session,
    result_json,
    round_options,
    run_rounds,
)
from bench.support import (
    GROCERY,
    ROOT,
    Child,
    bundled_http_app,
    environment,
    exit_on_signal,
    free_port,
)

PINS = ROOT / "bench" / "peers"  # package.json and package-lock.json: supergateway 4.0.0
TOOLS = ROOT / ".tools"
INSTALLED = TOOLS / "bench-peers"
NODE = TOOLS / "bootstrap" / "node" / "bin" / "node"
NPM = TOOLS / "bootstrap" / "npm" / "bin" / "npm-cli.js"
WARM_UP = 2  # untimed calls per client session before the rounds
SETTLE_S = 30  # the longest wait for a gateway's ended apps to go after a batch


def supergateway() -> list[str]:
    """The command that runs the pinned supergateway, installed first if it is not yet."""
    if not NODE.exists() or not NPM.exists():
        subprocess.run(["bash", str(ROOT / "scripts" / "node-tools.sh")], check=True)
    lock = (PINS / "package-lock.json").read_bytes()
    stamp = hashlib.sha256(lock).hexdigest()
    if (INSTALLED / ".stamp").exists() and (INSTALLED / ".stamp").read_text() == stamp:
        return [str(NODE), str(INSTALLED / "node_modules" / "supergateway" / "dist" / "index.js")]
    print(f"installing supergateway (bench/peers/package-lock.json) into {INSTALLED}")
    shutil.rmtree(INSTALLED, ignore_errors=True)
    INSTALLED.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PINS / name, INSTALLED / name)
    env = {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(
        [str(NODE), str(NPM), "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=INSTALLED,
        env=env,
        check=True,
    )
    (INSTALLED / ".stamp").write_text(stamp)
    return [str(NODE), str(INSTALLED / "node_modules" / "supergateway" / "dist" / "index.js")]


async def bench(args: argparse.Namespace) -> None:
    gateway_command = supergateway()
    with tempfile.TemporaryDirectory(prefix="mcpapps-peers-") as tmp:
        root = Path(tmp)
        app_dir = root / "apps" / APP
        shutil.copytree(GROCERY, app_dir, ignore=shutil.ignore_patterns("__pycache__"))
        peer_apps = root / "peer" / APP  # a copy of its own: its apps are found by their folder
        shutil.copytree(GROCERY, peer_apps, ignore=shutil.ignore_patterns("__pycache__"))
        (root / "config.toml").write_text(
            '[server]\nhost = "127.0.0.1"\n\n[apps]\ndiscovery_paths = ["./apps"]\n'
        )
        ours, theirs, direct_port = free_port(), free_port(), free_port()
        mcpapps = Child(
            "mcpapps run",
            [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"],
            root,
            {**environment(), "MCPAPPS_PORT": str(ours)},
        )
        peer = Child(
            "supergateway",
            [
                *gateway_command,
                "--stdio",
                f"{sys.executable} server.py",
                "--outputTransport",
                "streamableHttp",
                "--stateful",
                "--port",
                str(theirs),
                "--logLevel",
                "none",
            ],
            peer_apps,
            environment(),
        )
        direct = bundled_http_app("the direct app", app_dir, direct_port)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(exit_on_signal)
            try:
                for child in (mcpapps, peer, direct):
                    await child.start(nursery)
                await mcpapps.wait_for_log(rf"app {APP}: \S+ → Running")
                await mcpapps.wait_for_log(r"front door listening on")
                await peer.wait_for_port(theirs)
                await direct.wait_for_port(direct_port)
                paths = routes(args.mode, ours, theirs, direct_port, mcpapps, peer)
                await measure(args, paths, peer_apps)
            finally:
                for child in (mcpapps, peer, direct):
                    await child.stop()
                nursery.cancel_scope.cancel()


def routes(
    mode: str, ours: int, theirs: int, direct_port: int, mcpapps: Child, peer: Child
) -> dict[str, Route]:
    first = "auto" if mode == "both" else mode
    paths = {
        "direct": Route("direct", f"http://127.0.0.1:{direct_port}/mcp", "", mode=first),
        # Its apps (one per handshake-era session, one per 2026-07-28 request) are not timed:
        # it ends a request's app without waiting for it, so no process's CPU holds theirs.
        "supergateway": Route(
            "supergateway", f"http://127.0.0.1:{theirs}/mcp", "", peer.pid, mode=first
        ),
        "mcpapps": Route(
            "mcpapps", f"http://127.0.0.1:{ours}/apps/mcp/{APP}", "", mcpapps.pid, mode=first
        ),
    }
    if mode == "both":
        for name in ("supergateway", "mcpapps"):
            twin = dataclasses.replace(paths[name], name=name + LEGACY, mode="legacy")
            twin.clients, twin.response_types = [], collections.Counter()
            paths[name + LEGACY] = twin
    return paths


async def measure(args: argparse.Namespace, paths: dict[str, Route], peer_apps: Path) -> None:
    async with contextlib.AsyncExitStack() as stack:
        for path in paths.values():
            for _ in range(max(CONCURRENCY)):
                session = client_session(path.url, path.mode, path.response_types)
                path.clients.append(await stack.enter_async_context(session))
        # Every session lists the tools first, as `call_tool` would on its first call.
        print("protocol revision negotiated (client ↔ endpoint; the app's own session):")
        for name, path in paths.items():
            try:
                for client in path.clients:
                    await client.list_tools()
                stats = result_json(await path.clients[0].call_tool(STATS_TOOL, {}))
            except Exception as error:
                error.add_note(f"listing the tools on {name} ({path.url})")
                raise
            if name.startswith("supergateway"):
                path.app_pid = None
            else:
                path.app_pid = stats["pid"]
            eras = ", ".join(sorted({c.protocol_version for c in path.clients}))
            print(f"  {name:22s} {eras}; {stats['protocolVersion']}")
        # Two untimed calls per session, not bench/proxy.py's twenty: supergateway starts the
        # app anew for each 2026-07-28 call (about 1.5 s each here).
        for name, path in paths.items():
            try:
                async with trio.open_nursery() as nursery:
                    for client in path.clients:
                        nursery.start_soon(warm_up, client, path.tool)
            except BaseException as error:
                error.add_note(f"warming up {name} ({path.url})")
                raise
        measured = {(name, level): Measured() for name in paths for level in CONCURRENCY}
        names = list(paths)
        for level in CONCURRENCY:
            for turn in range(args.rounds):
                for name in names[turn % len(names) :] + names[: turn % len(names)]:
                    path = paths[name]
                    before = apps_in(peer_apps)
                    try:
                        await batch(path, level, args.seconds, {}, measured[name, level])
                    except Exception as error:
                        error.add_note(f"calling on {name} ({path.url}), {level} clients")
                        raise
                    await settled(peer_apps, before)
    report(args, paths, measured)


def apps_in(folder: Path) -> int:
    """How many processes run in `folder` (supergateway's apps run in a copy of their own)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                count += os.readlink(f"/proc/{entry}/cwd") == str(folder)
    return count


async def settled(folder: Path, apps: int) -> None:
    """Wait (up to `SETTLE_S`) until no more apps run in `folder` than before the batch: the
    apps supergateway starts per 2026-07-28 request go on after their answer, and the next
    batch must not share the cores with them."""
    with trio.move_on_after(SETTLE_S):
        while apps_in(folder) > apps:
            await trio.sleep(0.05)


async def warm_up(client: mcp.Client, tool: str) -> None:
    for _ in range(WARM_UP):
        result = await client.call_tool(tool, {})
        assert not result.is_error, result


def report(
    args: argparse.Namespace, paths: dict[str, Route], measured: dict[tuple[str, int], Measured]
) -> None:
    print(
        f"\n{args.rounds} rounds of {args.seconds:g} s per path and level, the paths taking"
        f" turns; {os.cpu_count()} cores. CPU per call in µs: gateway = supergateway's or"
        " mcpapps' process, app = the app's process (stdio behind a gateway, HTTP for direct;"
        " not timed behind supergateway, which ends its apps without waiting for them)"
    )
    print(
        f"  {'path':22s} {'clients':>7s} {'p50 ms':>8s} {'p99 ms':>8s} {'calls/s':>8s}"
        f" {'gateway':>8s} {'app':>6s}"
    )
    for level in CONCURRENCY:
        for name, path in paths.items():
            m = measured[name, level]
            gateway = f"{m.cpu_us('gateway'):8.0f}" if path.gateway_pid else f"{'-':>8s}"
            app = f"{m.cpu_us('app'):6.0f}" if path.app_pid else f"{'-':>6s}"
            print(
                f"  {name:22s} {level:7d} {m.p(50) * 1e3:8.2f} {m.p(99) * 1e3:8.2f}"
                f" {m.rate:8.0f} {gateway} {app}"
            )
    print(
        "\nmcpapps / supergateway, same clients (CPU: below 1 is less; calls/s: above 1 is more):"
    )
    eras = [("", "2026-07-28" if args.mode != "legacy" else "handshake-era")]
    if args.mode == "both":
        eras.append((LEGACY, "handshake-era"))
    for suffix, era in eras:
        for level in CONCURRENCY:
            ours, theirs = (
                measured["mcpapps" + suffix, level],
                measured["supergateway" + suffix, level],
            )
            print(
                f"  {era:13s} {level:2d} clients: gateway CPU per call"
                f" {ours.cpu_us('gateway'):6.0f} / {theirs.cpu_us('gateway'):6.0f} µs ="
                f" {ours.cpu_us('gateway') / theirs.cpu_us('gateway'):.2f}x"
                f"; calls/s {ours.rate / theirs.rate:.2f}x;"
                f" p50 {ours.p(50) / theirs.p(50):.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    round_options(parser, "each gateway")
    run_rounds(bench, parser.parse_args())


if __name__ == "__main__":
    main()
