"""Long soak: a steady mixed load on a real `mcpapps run`, for `--minutes` (30 by default),
watching whether the supervisor holds: memory, file descriptors, threads, children, the state
dir, and connections its clients closed (CLOSE_WAIT).

The supervisor serves three copies of the bundled app `mcpapps/grocery-inventory` (a temp
project on free loopback ports; fast restarts, no give-up; view leases of 30 s, MCP sessions
idle 120 s closed). Beside it, at once and all the time:

- MCP SDK clients of both protocol eras (`mode="legacy"`, the handshake, and `2026-07-28`) on
  `/mcp` and on `/apps/mcp/<id>`, ten calls a session, then closed (DELETE for the handshake);
- handshake-era sessions opened on the wire and abandoned without DELETE (left to time out);
- chat turns (`/call` of the direct engine) in 20 sessions per worker; every fourth stream is
  dropped as soon as its turn started;
- view leases opened with one call through them, then closed, kept alive and closed, or left
  to expire;
- `/admin/call`;
- a reload every minute (every other one changes an app's environment, so it restarts);
- `kill -9` of one app every 45 s.

Every 10 s the supervisor's RSS, open fds, threads, child processes, state-dir size and the
sockets on its front door (established, CLOSE_WAIT) are sampled from /proc. At the end the load
stops, every chat session is read back (turns saved against turns sent), the supervisor gets
SIGTERM, and every app process ever seen is checked: one still alive is an orphan.

Printed: the samples (one a minute), the slope of RSS and of fds over the second half (per 10
minutes), requests by kind and outcome, the requests unanswered (no HTTP answer within
`--hang-s`, or the connection dropped without one), 5xx answers, chat turns lost, the
supervisor's exit status, orphans, and the log's ERROR lines and tracebacks. Loopback and a temp
folder only; it stops by itself. Self-contained: nothing is imported from tests/.

Usage: python bench/soak.py [--minutes M] [--scale N] [--hang-s S] [--keep] [--only LOADS]
[--history-turns N]
(`--only chat,reload` runs only those loads, to find which one a trend comes from.)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import httpx2
import mcp
import trio
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
GROCERY = ROOT / "mcpapps" / "grocery-inventory"
APPS = ("g0", "g1", "g2")
GUARD_S = 60.0  # starting and stopping the supervisor
SAMPLE_S = 10.0
RELOAD_S = 60.0
KILL_S = 45.0
LEASE_S = 30  # [views] lease_s: leases left alone expire within the run
SESSION_IDLE_S = 120  # [limits] session_idle_s: abandoned MCP sessions are closed
CHAT_SESSIONS = 20  # per chat worker
LOADS = ("mcp", "abandon", "chat", "views", "admin", "reload", "kill")  # --only chooses
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "soak", "version": "0"},
    },
}
TCP_STATES = {"01": "established", "08": "close_wait"}
APP_DOWN = frozenset({"HTTP 503 app_unavailable", "HTTP 503 -32000"})


def free_port_pair() -> int:
    """A loopback port P with P + 1 free too (the sandbox listener's), below the ephemeral range."""
    while True:
        port = random.randrange(20000, 32000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


def write_project(
    root: Path, port: int, *, restart_env: str | None = None, history_turns: int | None = None
) -> None:
    for app_id in APPS:
        folder = root / "apps" / app_id
        if not folder.exists():
            shutil.copytree(GROCERY, folder, ignore=shutil.ignore_patterns("__pycache__"))
            (folder / "openclaw.mcpapp.json").unlink()
            manifest = {
                "id": app_id,
                "command": sys.executable,
                "arguments": ["server.py"],
                "toolNamePrefix": f"{app_id}.",
                "hasUi": True,
            }
            (folder / "openclaw.mcpapp.json").write_text(json.dumps(manifest))
    entries = "".join(f'[apps.entries.{a}]\napproval = "never"\n' for a in APPS)
    if restart_env is not None:
        entries += f'[apps.entries.g2.environment]\nSOAK = "{restart_env}"\n'
    (root / "config.toml").write_text(
        f"[server]\nport = {port}\n[sandbox]\nport = {port + 1}\n"
        '[apps]\ndiscovery_paths = ["./apps"]\n'
        f"{entries}"
        "[supervision]\nbackoff_initial_s = 0.1\nbackoff_max_s = 0.5\nintensity = 100000\n"
        "period_s = 1\n"
        f"[views]\nlease_s = {LEASE_S}\n"
        f"[limits]\nsession_idle_s = {SESSION_IDLE_S}\n"
        "[state]\nchat_sessions_max_count = 1000\n"
        + ("" if history_turns is None else f"[agent]\nhistory_turns = {history_turns}\n")
    )


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


# ---- what is sampled ------------------------------------------------------------------------


@attrs.frozen
class Sample:
    t: float  # seconds since the load started
    rss_mb: float
    fds: int
    threads: int
    children: int
    state_kb: float
    established: int
    close_wait: int


def status_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def children_of(pid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rfind(b")") + 2 :].split()[1]) == pid:
            count += 1
    return count


def front_door_sockets(port: int) -> collections.Counter[str]:
    """The server side's TCP sockets on the front door port, by state (from /proc/net/tcp*)."""
    states: collections.Counter[str] = collections.Counter()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] in TCP_STATES:
                    states[TCP_STATES[fields[3]]] += 1
    return states


def folder_kb(path: Path) -> float:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(folder, name)).st_size
    return total / 1024


def sample(pid: int, port: int, state_dir: Path, t: float) -> Sample:
    sockets = front_door_sockets(port)
    return Sample(
        t=t,
        rss_mb=status_field(pid, "VmRSS") / 1024,
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        threads=status_field(pid, "Threads"),
        children=children_of(pid),
        state_kb=folder_kb(state_dir),
        established=sockets["established"],
        close_wait=sockets["close_wait"],
    )


def slope_per_10_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of value over time, per 10 minutes."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return float("nan")
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 600


# ---- the load -------------------------------------------------------------------------------


class Unanswered(Exception):
    """No HTTP answer came: the connection failed or was dropped without one."""


def outcome_of(error: BaseException) -> str:
    """A failure, named; a transport failure anywhere inside it is an unanswered request."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]  # what happened, not the nurseries it went through
    seen: list[BaseException] = [error]
    while seen:
        current = seen.pop()
        if isinstance(current, httpx2.TransportError | Unanswered):
            return f"unanswered: {type(current).__name__}"
        if isinstance(current, BaseExceptionGroup):
            seen.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                seen.append(linked)
    text = str(error).splitlines()[0][:80] if str(error) else ""
    return f"{type(error).__name__}: {text}"


def http_outcome(response: httpx2.Response) -> str:
    if response.status_code < 400:
        return "ok"
    try:
        error = response.json().get("error", {})
        code = error.get("code") if isinstance(error, dict) else None
    except ValueError:
        code = None
    return f"HTTP {response.status_code} {code or ''}".rstrip()


class Soak:
    def __init__(self, args: argparse.Namespace, port: int, root: Path) -> None:
        self.args = args
        self.port = port
        self.root = root
        self.base = f"http://127.0.0.1:{port}"
        self.stop = trio.Event()
        self.outcomes: collections.Counter[tuple[str, str]] = collections.Counter()
        self.samples: list[Sample] = []
        self.pids: set[int] = set()
        self.started = time.monotonic()
        self.kills = 0
        self.reloads: collections.Counter[str] = collections.Counter()
        self.turns_sent: collections.Counter[str] = collections.Counter()

    def note(self, kind: str, outcome: str) -> None:
        self.outcomes[kind, outcome] += 1

    async def guarded(self, kind: str, request: Callable[[], Awaitable[str]]) -> str:
        """One request (or exchange) with a hang guard; its outcome noted."""
        outcome = "unanswered: no answer within --hang-s"
        with trio.move_on_after(self.args.hang_s):
            try:
                outcome = await request()
            except Exception as error:
                outcome = outcome_of(error)
        self.note(kind, outcome)
        return outcome

    async def pause(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            await self.stop.wait()

    # -- MCP through the SDK, both eras ---------------------------------------------------------

    async def sdk_worker(self, mode: str, n: int) -> None:
        rng = random.Random(n)
        era = "handshake" if mode == "legacy" else "2026-07-28"
        while not self.stop.is_set():
            app_id = rng.choice(APPS)
            aggregate = rng.random() < 0.5
            url = f"{self.base}/mcp" if aggregate else f"{self.base}/apps/mcp/{app_id}"
            tool = f"{app_id}.get_categories" if aggregate else "get_categories"
            kind = f"sdk {era} {'/mcp' if aggregate else '/apps/mcp'}"
            try:
                async with sdk_client(url, mode) as client:
                    for _ in range(10):
                        if self.stop.is_set():
                            break

                        async def call(client: mcp.Client = client, tool: str = tool) -> str:
                            result = await client.call_tool(tool, {})
                            return "error result" if result.is_error else "ok"

                        if (await self.guarded(kind, call)).startswith("unanswered"):
                            break
            except Exception as error:  # opening (or closing) the session failed
                self.note(f"{kind} session", outcome_of(error))
            await self.pause(0.2)

    # -- handshake sessions abandoned without DELETE --------------------------------------------

    async def abandoner(self, client: httpx2.AsyncClient) -> None:
        rng = random.Random(7)
        n = 0
        while not self.stop.is_set():
            n += 1
            app_id = rng.choice(APPS)
            aggregate = n % 2 == 0
            path = "/mcp" if aggregate else f"/apps/mcp/{app_id}"
            tool = f"{app_id}.get_stores" if aggregate else "get_stores"

            async def abandon(path: str = path, tool: str = tool) -> str:
                opened = await client.post(path, json=INITIALIZE, headers=MCP_HEADERS)
                if opened.status_code != 200:
                    return http_outcome(opened)
                session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await client.post(path, json=note, headers=session)
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {}},
                }
                answered = await client.post(path, json=call, headers=session)
                return http_outcome(answered)  # and no DELETE

            await self.guarded("abandoned session", abandon)
            await self.pause(1.0)

    # -- chat turns, some streams dropped -------------------------------------------------------

    async def chatter(self, client: httpx2.AsyncClient, worker: int) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            session_id = f"soak-{worker}-{n % CHAT_SESSIONS}"
            app_id = APPS[n % len(APPS)]
            drop = n % 4 == 0
            body = {"message": f"/call {app_id}.get_categories {{}}", "sessionId": session_id}

            async def turn(body: dict[str, Any] = body, drop: bool = drop) -> str:
                async with client.stream("POST", "/apps/chat", json=body) as response:
                    if response.status_code != 200:
                        await response.aread()
                        return http_outcome(response)
                    self.turns_sent[body["sessionId"]] += 1
                    kinds = []
                    async for event in httpx2.EventSource(response):
                        kinds.append(event.event)
                        if drop and event.event == "tool":
                            return "dropped mid-turn"
                    if not kinds or kinds[-1] != "done":
                        raise Unanswered("the stream ended before done")
                    return "error event" if "error" in kinds else "ok"

            await self.guarded("chat turn", turn)
            await self.pause(0.3)

    # -- view leases ----------------------------------------------------------------------------

    async def viewer(self, client: httpx2.AsyncClient) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            app_id = APPS[n % len(APPS)]
            ending = ("closed", "kept alive, closed", "left to expire")[n % 3]

            async def lease(app_id: str = app_id, ending: str = ending) -> str:
                opened = await client.post("/apps/views", json={"appId": app_id})
                if opened.status_code != 201:
                    return http_outcome(opened)
                view_id = opened.json()["viewId"]
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "get_store_dashboard_data", "arguments": {}},
                }
                answered = await client.post(f"/apps/views/{view_id}/mcp", json=call)
                outcome = http_outcome(answered)
                if ending == "kept alive, closed":
                    await client.post(f"/apps/views/{view_id}/keepalive")
                if ending != "left to expire":
                    await client.delete(f"/apps/views/{view_id}")
                if outcome == "ok" and "error" in answered.json():
                    outcome = f"JSON-RPC {answered.json()['error'].get('code')}"
                return outcome

            await self.guarded(f"view lease ({ending})", lease)
            await self.pause(1.5)

    # -- /admin/call, reloads, kills ------------------------------------------------------------

    async def admin_caller(self, client: httpx2.AsyncClient) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            name = f"{APPS[n % len(APPS)]}.get_stores"

            async def call(name: str = name) -> str:
                return http_outcome(await client.post("/admin/call", json={"name": name}))

            await self.guarded("/admin/call", call)
            await self.pause(0.3)

    async def reloader(self, client: httpx2.AsyncClient) -> None:
        n = 0
        while True:
            await self.pause(RELOAD_S)
            if self.stop.is_set():
                return
            n += 1
            # Every other reload changes g2's environment: it restarts with the new one.
            write_project(
                self.root,
                self.port,
                restart_env=str(n) if n % 2 else None,
                history_turns=self.args.history_turns,
            )

            async def reload() -> str:
                response = await client.post("/admin/reload", timeout=GUARD_S * 5)
                if response.status_code != 200:
                    return http_outcome(response)
                restarted = response.json()["restarted"]
                return f"ok, restarted {restarted}" if restarted else "ok"

            self.reloads[await self.guarded("reload", reload)] += 1

    async def killer(self, client: httpx2.AsyncClient) -> None:
        n = 0
        while True:
            await self.pause(KILL_S)
            if self.stop.is_set():
                return
            victim = APPS[n % len(APPS)]
            n += 1
            with contextlib.suppress(httpx2.TransportError, ValueError, KeyError):
                apps = {a["id"]: a for a in (await client.get("/admin/apps")).json()["apps"]}
                if (pid := apps[victim].get("pid")) is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        self.kills += 1

    async def watch_pids(self, client: httpx2.AsyncClient) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(httpx2.TransportError, ValueError, KeyError):
                for app in (await client.get("/admin/apps")).json()["apps"]:
                    if app.get("pid"):
                        self.pids.add(app["pid"])
            await self.pause(1.0)

    async def sampler(self, pid: int) -> None:
        state_dir = self.root / ".mcpapps"
        while not self.stop.is_set():
            t = time.monotonic() - self.started
            try:
                taken = await trio.to_thread.run_sync(sample, pid, self.port, state_dir, t)
                self.samples.append(taken)
            except (OSError, ValueError) as error:
                print(f"note: no sample at {t:.0f} s: {error!r}", file=sys.stderr)
            await self.pause(SAMPLE_S)


@contextlib.asynccontextmanager
async def sdk_client(url: str, mode: str) -> AsyncIterator[mcp.Client]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=120.0)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with mcp.Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


async def chat_turns_saved(client: httpx2.AsyncClient, soak: Soak) -> tuple[int, int]:
    """Turns sent and turns saved, over every chat session of the run."""
    sent = saved = 0
    for session_id, count in soak.turns_sent.items():
        response = await client.get(f"/apps/chat/{session_id}", params={"limit": 1})
        sent += count
        saved += response.json()["turns"] if response.status_code == 200 else 0
    return sent, saved


# ---- the run --------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="mcpapps-soak-"))
    port = free_port_pair()
    write_project(root, port, history_turns=args.history_turns)
    command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
    log_path = root / "supervisor.log"
    soak = Soak(args, port, root)
    print(f"soak: {args.minutes:g} min on port {port}, project {root}", flush=True)
    with open(log_path, "wb") as log_file:
        process = await trio.lowlevel.open_process(
            command, cwd=root, env=environment(), stdout=subprocess.DEVNULL, stderr=log_file
        )
    exit_status: int | None = None
    sent = saved = 0
    try:
        limits = httpx2.Limits(max_connections=64)
        async with httpx2.AsyncClient(base_url=soak.base, timeout=60.0, limits=limits) as client:
            with trio.fail_after(GUARD_S):
                while True:
                    with contextlib.suppress(httpx2.TransportError):
                        apps = (await client.get("/admin/apps")).json()["apps"]
                        if all(a["state"] == "Running" for a in apps):
                            break
                    if process.returncode is not None:
                        raise RuntimeError(f"mcpapps run exited: {log_path.read_text()}")
                    await trio.sleep(0.2)
            soak.started = time.monotonic()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(soak.sampler, process.pid)
                nursery.start_soon(soak.watch_pids, client)
                only = args.only
                if "kill" in only:
                    nursery.start_soon(soak.killer, client)
                if "reload" in only:
                    nursery.start_soon(soak.reloader, client)
                for i in range(args.scale):
                    if "mcp" in only:
                        for mode in ("legacy", "2026-07-28"):
                            for j in range(2):
                                nursery.start_soon(soak.sdk_worker, mode, 10 * i + j)
                    if "abandon" in only:
                        nursery.start_soon(soak.abandoner, client)
                    if "chat" in only:
                        nursery.start_soon(soak.chatter, client, 2 * i)
                        nursery.start_soon(soak.chatter, client, 2 * i + 1)
                    if "views" in only:
                        nursery.start_soon(soak.viewer, client)
                    if "admin" in only:
                        nursery.start_soon(soak.admin_caller, client)
                await trio.sleep(args.minutes * 60)
                soak.stop.set()
            await trio.sleep(2)  # the turns of dropped streams end and are saved
            sent, saved = await chat_turns_saved(client, soak)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with trio.move_on_after(GUARD_S):
            exit_status = await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    await trio.sleep(0.5)
    orphans = sorted(pid for pid in soak.pids if alive(pid))
    report(soak, log_path.read_text(errors="replace"), exit_status, orphans, sent, saved)
    if args.keep:
        print(f"kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


def report(
    soak: Soak, log: str, exit_status: int | None, orphans: list[int], sent: int, saved: int
) -> None:
    print(f"\nload: {soak.args.minutes:g} min, scale {soak.args.scale}; {soak.kills} kill -9")
    print(
        f"{'t (s)':>6} {'RSS MB':>7} {'fds':>5} {'thr':>4} {'kids':>4} {'state KB':>9}"
        f" {'estab':>5} {'CLOSE_WAIT':>10}"
    )
    shown = -1
    for s in soak.samples:
        if s.t // 60 > shown or s is soak.samples[-1]:  # the first of each minute, and the last
            shown = int(s.t // 60)
            print(
                f"{s.t:6.0f} {s.rss_mb:7.1f} {s.fds:5} {s.threads:4} {s.children:4}"
                f" {s.state_kb:9.0f} {s.established:5} {s.close_wait:10}"
            )
    half = soak.args.minutes * 60 / 2
    second = [s for s in soak.samples if s.t >= half]
    print(
        f"second half ({len(second)} samples): RSS"
        f" {slope_per_10_min([(s.t, s.rss_mb) for s in second]):+.2f} MB per 10 min, fds"
        f" {slope_per_10_min([(s.t, s.fds) for s in second]):+.1f} per 10 min, threads"
        f" {slope_per_10_min([(s.t, s.threads) for s in second]):+.1f} per 10 min"
    )
    if soak.samples:
        print(
            f"CLOSE_WAIT on the front door: max {max(s.close_wait for s in soak.samples)},"
            f" last {soak.samples[-1].close_wait}; fds max {max(s.fds for s in soak.samples)}"
        )
    total = sum(soak.outcomes.values())
    unanswered = sum(n for (_, o), n in soak.outcomes.items() if o.startswith("unanswered"))
    # A 503 is the answer for an app that is down (killed, or restarting): `app_unavailable`
    # on the admin API, a JSON-RPC -32000 error on an MCP endpoint.
    server_errors = sum(
        n for (_, o), n in soak.outcomes.items() if o.startswith("HTTP 5") and o not in APP_DOWN
    )
    print(
        f"\nrequests: {total}; unanswered: {unanswered}; 5xx answers (other than an app's"
        f" down): {server_errors}; samples: {len(soak.samples)}"
    )
    for (kind, outcome), count in sorted(soak.outcomes.items()):
        print(f"  {kind:34} {outcome:48} {count:7}")
    print(f"reloads: {dict(soak.reloads)}")
    print(f"chat turns: {sent} sent, {saved} saved, {sent - saved} lost")
    lines = log.splitlines()
    print(
        f"supervisor: exit status {exit_status}; app processes seen {len(soak.pids)}; orphans"
        f" {orphans or 0}; log: {sum(' ERROR ' in line for line in lines)} ERROR lines,"
        f" {log.count('Traceback')} tracebacks"
    )
    for line in lines:
        if " ERROR " in line:
            print(f"  {line[:300]}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the load runs")
    parser.add_argument("--scale", type=int, default=1, help="how many of each worker")
    parser.add_argument("--hang-s", type=float, default=60.0, help="a request slower is unanswered")
    parser.add_argument("--keep", action="store_true", help="keep the temp project and its log")
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default=set(LOADS),
        help=f"the loads that run, comma-separated (all by default): {','.join(LOADS)}",
    )
    parser.add_argument(
        "--history-turns",
        type=int,
        help="[agent] history_turns (its default unless given); a low one reaches the steady state"
        " of busy chat sessions within a short run",
    )
    args = parser.parse_args()
    if unknown := args.only - set(LOADS):
        parser.error(f"unknown loads: {','.join(sorted(unknown))}; known: {','.join(LOADS)}")
    return args


if __name__ == "__main__":
    # The SDK client logs what its own closing breaks (a session ended mid-stream): noise here,
    # where every request's outcome is counted.
    logging.basicConfig(level=logging.CRITICAL)
    trio.run(main, parse_args())
