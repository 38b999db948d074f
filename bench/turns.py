"""Chat turns per second: SQLite against PostgreSQL, and one supervisor against two sharing one
PostgreSQL, on one machine.

Each setup runs real `mcpapps run` processes (the direct engine, so no model: a turn is one
`/call fx.echo …`, the fixture app's echo) and a real PostgreSQL (Debian's, started as the tests
start it, bench/support.py). Clients post turns over HTTP for a fixed time, each to its
own chat session (turns of one session run one at a time by design; a many-sessions load is what
several supervisors are for), alternating between the supervisors when there are two. A turn
counts once its `done` frame arrived, so it was saved.

On one machine two supervisors share its cores: the figure says what the shared store and the
turn lock cost, not what a second host adds.

Usage: python bench/turns.py [--seconds S] [--clients N]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

# The helpers (`bench.support`) are not installed: run from the root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2
import trio

from bench.support import Project, Supervisor, postgres_server, supervisor_running, write

DATABASE = '[state]\ndatabase = "${env:CHAT_DATABASE_URL}"\n'
WARM_UP_TURNS = 20


@contextlib.asynccontextmanager
async def supervisors(
    root: Path, count: int, database_url: str | None
) -> AsyncIterator[list[Supervisor]]:
    env = {"CHAT_DATABASE_URL": database_url} if database_url else None
    async with contextlib.AsyncExitStack() as stack:
        started = []
        for n in range(count):
            folder = root / f"s{n}"
            folder.mkdir()
            project = Project(folder)
            extra = DATABASE if database_url else ""
            write(project, "", ("fx", ()), extra=extra)
            started.append(await stack.enter_async_context(supervisor_running(project, env)))
        yield started


async def turn(client: httpx2.AsyncClient, session_id: str, n: int) -> None:
    message = f"/call fx.echo {json.dumps({'text': str(n)})}"
    payload = {"message": message, "sessionId": session_id}
    async with client.stream("POST", "/apps/chat", json=payload) as response:
        body = (await response.aread()).decode()
    if "event: done" not in body or "event: error" in body:
        raise RuntimeError(f"a turn failed: {body[-300:]}")


async def measure(urls: list[str], clients: int, seconds: float) -> float:
    """Turns per second with `clients` concurrent sessions, spread over `urls`."""
    done = 0
    async with contextlib.AsyncExitStack() as stack:
        https = [
            await stack.enter_async_context(httpx2.AsyncClient(base_url=u, timeout=60))
            for u in urls
        ]
        for n in range(WARM_UP_TURNS):
            await turn(https[n % len(https)], f"warm-{n}", n)
        deadline = time.monotonic() + seconds

        async def client(c: int) -> None:
            nonlocal done
            for n in itertools.count():
                if time.monotonic() >= deadline:
                    return
                # Each session's turns go alternately to every supervisor.
                await turn(https[(c + n) % len(https)], f"bench-{c}", n)
                done += 1

        started = time.monotonic()
        async with trio.open_nursery() as nursery:
            for c in range(clients):
                nursery.start_soon(client, c)
        elapsed = time.monotonic() - started
    return done / elapsed


async def main(seconds: float, clients: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, postgres_server() as postgres:
        for name, count, pg in (
            ("SQLite, 1 supervisor", 1, False),
            ("PostgreSQL, 1 supervisor", 1, True),
            ("PostgreSQL, 2 supervisors", 2, True),
        ):
            root = Path(tmp) / name.replace(" ", "").replace(",", "-")
            root.mkdir()
            url = postgres.new_database() if pg else None
            async with supervisors(root, count, url) as running:
                rate = await measure([s.url() for s in running], clients, seconds)
            print(f"{name:28} {rate:7.1f} turns/s", flush=True)
    print(f"\n{clients} clients, {seconds:g} s each, one session per client")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    trio.run(main, args.seconds, args.clients)
