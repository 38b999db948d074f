"""Chaos soak: apps killed with `kill -9` under concurrent load, through the front door.

A real `mcpapps run` (a subprocess on a free loopback port) serves `--apps` copies of the test
fixture app (a temp project; fast restarts, no give-up). Half of the apps are *victims*, the
others *bystanders* that are never killed. `--concurrency` callers call a tool in a loop, each
on one app and one route (`/apps/mcp/<id>` through an MCP session, or `/admin/call`), for two
phases of `--seconds` each:

- before: no faults;
- during: every `--kill-every` seconds a victim's process gets SIGKILL.

Every call has a hang guard (`--hang-s`): a call not answered by then counts as hung. When both
phases are over the supervisor is stopped with SIGTERM, and every app process ever seen is
checked: one still alive is an orphan.

Printed: per phase, calls, ok share, p50/p99 of the ok answers and of the error answers (the
error answers are the fail-fast path: a call to an app that is down); errors by kind; the
bystanders' ok share during chaos; hung calls; orphans; and how many log lines are errors,
tracebacks or "unexpected error". It stops by itself and touches nothing but loopback and a
temp folder.

Usage: python bench/chaos.py [--apps N] [--concurrency C] [--seconds S] [--kill-every S]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
import trio

from bench.support import FIXTURE_APP, alive, environment, free_port, wait_for_port

GUARD_S = 60  # a hang guard for starting and stopping the supervisor
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "chaos", "version": "0"},
    },
}


def write_project(root: Path, apps: int) -> list[str]:
    ids = [f"c{i}" for i in range(apps)]
    for app_id in ids:
        folder = root / "apps" / app_id
        folder.mkdir(parents=True)
        manifest = {
            "id": app_id,
            "command": sys.executable,
            "arguments": [str(FIXTURE_APP), "--name", app_id],
            "toolNamePrefix": f"{app_id}.",
        }
        (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    (root / "config.toml").write_text(
        '[sandbox]\nenabled = false\n[apps]\ndiscovery_paths = ["./apps"]\n'
        "[supervision]\nbackoff_initial_s = 0.1\nbackoff_max_s = 0.5\nintensity = 100000\n"
        "period_s = 1\n"
    )
    return ids


class Soak:
    def __init__(self, args: argparse.Namespace, port: int, ids: list[str]) -> None:
        self.args = args
        self.port = port
        self.ids = ids
        self.victims = ids[: len(ids) // 2]
        self.bystanders = ids[len(ids) // 2 :]
        self.phase = "before"
        self.stop = trio.Event()
        # (phase, app, route, outcome, seconds)
        self.calls: list[tuple[str, str, str, str, float]] = []
        self.hung = 0
        self.kills = 0
        self.pids: set[int] = set()

    async def caller(self, client: httpx2.AsyncClient, app_id: str, route: str) -> None:
        session: dict[str, str] | None = None
        n = 0
        while not self.stop.is_set():
            n += 1
            began = time.perf_counter()
            phase = self.phase
            with trio.move_on_after(self.args.hang_s) as guard:
                try:
                    if route == "/apps/mcp":
                        if session is None:
                            session = await self.open_session(client, app_id)
                        outcome = await self.mcp_call(client, app_id, session, n)
                        if outcome in ("404", "session gone"):
                            session = None
                    else:
                        outcome = await self.admin_call(client, app_id)
                except httpx2.TransportError as error:
                    outcome = f"transport: {type(error).__name__}"
                    session = None
                except SessionRefused as refused:
                    outcome = str(refused)
            if guard.cancelled_caught:
                self.hung += 1
                outcome = "hung"
                session = None
            self.calls.append((phase, app_id, route, outcome, time.perf_counter() - began))

    async def open_session(self, client: httpx2.AsyncClient, app_id: str) -> dict[str, str]:
        path = f"/apps/mcp/{app_id}"
        opened = await client.post(path, json=INITIALIZE, headers=MCP_HEADERS)
        if opened.status_code != 200:
            raise SessionRefused(kind(opened))
        session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await client.post(path, json=note, headers=session)
        return session

    async def mcp_call(
        self, client: httpx2.AsyncClient, app_id: str, session: dict[str, str], n: int
    ) -> str:
        message = {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
        }
        response = await client.post(f"/apps/mcp/{app_id}", json=message, headers=session)
        if response.status_code != 200:
            return kind(response)
        # Either framing the client accepts: one JSON body (the lean path), or an event stream.
        if response.headers.get("content-type", "").startswith("application/json"):
            answers = [response.json()]
        else:
            answers = [
                json.loads(line[5:])
                for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
        final = next((a for a in answers if a.get("id") == n), None)
        if final is None:
            return "no answer on the stream"
        if "error" in final:
            return f"JSON-RPC {final['error']['code']}"
        return "error result" if final["result"].get("isError") else "ok"

    async def admin_call(self, client: httpx2.AsyncClient, app_id: str) -> str:
        call = {"name": f"{app_id}.echo", "arguments": {"text": "hi"}}
        response = await client.post("/admin/call", json=call)
        if response.status_code != 200:
            return kind(response)
        return "error result" if response.json()["isError"] else "ok"

    async def killer(self, client: httpx2.AsyncClient) -> None:
        rng = random.Random(1)
        while not self.stop.is_set():
            await trio.sleep(self.args.kill_every)
            if self.phase != "during":
                continue
            apps = {a["id"]: a for a in (await client.get("/admin/apps")).json()["apps"]}
            victim = apps[rng.choice(self.victims)]
            if victim.get("pid"):
                try:
                    os.kill(victim["pid"], signal.SIGKILL)
                    self.kills += 1
                except ProcessLookupError:
                    pass

    async def watch_pids(self, client: httpx2.AsyncClient) -> None:
        while not self.stop.is_set():
            for app in (await client.get("/admin/apps")).json()["apps"]:
                if app.get("pid"):
                    self.pids.add(app["pid"])
            await trio.sleep(0.1)


class SessionRefused(Exception):
    pass


def kind(response: httpx2.Response) -> str:
    try:
        error = response.json().get("error", {})
    except ValueError:
        return str(response.status_code)
    code = error.get("code") if isinstance(error, dict) else None
    data = error.get("data") if isinstance(error, dict) else None
    if isinstance(data, dict) and data.get("reason"):  # a JSON-RPC error says it in its data
        code = data["reason"]
    return f"{response.status_code} {code}" if code is not None else str(response.status_code)


def quantile(values: list[float], q: float) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0] * 1000:.1f}"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[q - 1] * 1000:.1f}"


def report(soak: Soak, log: str, orphans: list[int]) -> None:
    print(
        f"apps {len(soak.ids)} ({len(soak.victims)} victims), concurrency"
        f" {soak.args.concurrency}, {soak.args.seconds:g} s per phase,"
        f" a kill every {soak.args.kill_every:g} s: {soak.kills} kills"
    )
    print(
        f"{'phase':8} {'calls':>7} {'ok %':>6} {'ok p50':>8} {'ok p99':>8}"
        f" {'err p50':>8} {'err p99':>8}  (ms)"
    )
    for phase in ("before", "during"):
        rows = [c for c in soak.calls if c[0] == phase]
        ok = [c[4] for c in rows if c[3] == "ok"]
        err = [c[4] for c in rows if c[3] not in ("ok", "hung")]
        share = 100 * len(ok) / len(rows) if rows else 0
        print(
            f"{phase:8} {len(rows):7} {share:6.1f} {quantile(ok, 50):>8} {quantile(ok, 99):>8}"
            f" {quantile(err, 50):>8} {quantile(err, 99):>8}"
        )
    for route in ("/apps/mcp", "/admin/call"):
        rows = [c for c in soak.calls if c[0] == "during" and c[2] == route]
        ok = [c[4] for c in rows if c[3] == "ok"]
        err = [c[4] for c in rows if c[3] not in ("ok", "hung")]
        print(
            f"during, {route}: ok p50 {quantile(ok, 50)} ms ({len(ok)}),"
            f" error p50 {quantile(err, 50)} ms ({len(err)})"
        )
    kinds = collections.Counter((c[2], c[3]) for c in soak.calls if c[3] != "ok")
    print("errors by kind (route, outcome: count):")
    for (route, outcome), count in kinds.most_common():
        print(f"  {route:10} {outcome}: {count}")
    bystander = [c for c in soak.calls if c[0] == "during" and c[1] in soak.bystanders]
    ok = sum(1 for c in bystander if c[3] == "ok")
    print(f"bystanders during chaos: {ok}/{len(bystander)} ok")
    print(f"hung calls: {soak.hung}; app processes seen: {len(soak.pids)}; orphans: {len(orphans)}")
    lines = log.splitlines()
    print(
        f"log: {sum(' ERROR ' in line for line in lines)} ERROR lines,"
        f" {log.count('Traceback')} tracebacks,"
        f" {log.count('unexpected error')} 'unexpected error'"
    )


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="mcpapps-chaos-"))
    port = free_port()
    ids = write_project(root, args.apps)
    command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
    log_path = root / "supervisor.log"
    try:
        with open(log_path, "wb") as log_file:
            process = await trio.lowlevel.open_process(
                command,
                cwd=root,
                env={**environment(), "MCPAPPS_PORT": str(port)},
                stdout=subprocess.DEVNULL,
                stderr=log_file,
            )
            try:
                await wait_for_port(port, process, GUARD_S)
                soak = Soak(args, port, ids)
                limits = httpx2.Limits(max_connections=args.concurrency + 4)
                async with httpx2.AsyncClient(
                    base_url=f"http://127.0.0.1:{port}", timeout=args.hang_s + 5, limits=limits
                ) as client:
                    with trio.fail_after(GUARD_S):
                        while any(
                            a["state"] != "Running"
                            for a in (await client.get("/admin/apps")).json()["apps"]
                        ):
                            await trio.sleep(0.1)
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(soak.watch_pids, client)
                        nursery.start_soon(soak.killer, client)
                        for i in range(args.concurrency):
                            route = "/apps/mcp" if i % 2 == 0 else "/admin/call"
                            nursery.start_soon(soak.caller, client, ids[i % len(ids)], route)
                        await trio.sleep(args.seconds)
                        soak.phase = "during"
                        await trio.sleep(args.seconds)
                        soak.stop.set()
            finally:
                process.send_signal(signal.SIGTERM)
                with trio.move_on_after(GUARD_S):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
        await trio.sleep(0.5)
        orphans = [pid for pid in soak.pids if alive(pid)]
        report(soak, log_path.read_text(errors="replace"), orphans)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--kill-every", type=float, default=1.0)
    parser.add_argument("--hang-s", type=float, default=20.0, help="a call slower is hung")
    return parser.parse_args()


if __name__ == "__main__":
    trio.run(main, parse_args())
