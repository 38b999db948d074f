"""Chat-turn benchmark (issue 32, point 5): what a direct-engine chat turn that calls one tool
costs the supervisor, against an `/admin/call` of the same tool; and 100 sessions taking turns
at once, each keeping its order.

One `mcpapps run` with the bundled app (stdio, copied to a temp folder) and the default `direct`
engine. Side by side, in alternating batches of `--calls` requests, one at a time on one kept-alive
connection each:

- `chat`: `POST /apps/chat` with `/call grocery.get_categories {}` in a session of its own per
  turn, the SSE stream read to its end (the turn is over and saved when it ends);
- `admin`: `POST /admin/call` of `grocery.get_categories` with `{}`.

Printed: the supervisor's CPU per request (/proc/<pid>/stat) and p50 of each, and chat / admin
against the target (at most 2x). Then `--sessions` sessions (default 100) at once, each sending
`--turns` turns (default 5) one after the other (the next as soon as the previous one's stream
has begun, so that turns queue in the session): every session's saved user messages must come
back in the order they were sent.

Usage: python bench/chatturns.py [--calls N] [--rounds R] [--sessions S] [--turns T] [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx2
import trio
from support import GROCERY, admin_headers, cpu_s, exit_on_signal, supervisor

APP = "grocery-inventory"
TOOL = "grocery.get_categories"
TARGET = 2.0
WARM_UP = 20


async def chat_turn(http: httpx2.AsyncClient, session_id: str, text: str) -> list[str]:
    """One turn, its SSE stream read to the end: the event names it carried."""
    body = {"message": text, "sessionId": session_id}
    events = []
    async with http.stream("POST", "/apps/chat", json=body, headers=admin_headers()) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                events.append(line.split(":", 1)[1].strip())
    return events


async def admin_call(http: httpx2.AsyncClient) -> None:
    body = {"name": TOOL, "arguments": {}}
    response = await http.post("/admin/call", json=body, headers=admin_headers())
    assert response.status_code == 200, response.text
    assert not response.json().get("isError"), response.text


async def cost(args: argparse.Namespace, base: str, pid: int) -> None:
    seq = iter(range(10**9))

    async def chat(http: httpx2.AsyncClient) -> None:
        events = await chat_turn(http, f"bench-{next(seq)}", f"/call {TOOL} {{}}")
        assert events == ["session", "tool", "result", "done"], events  # one call, no error

    routes = {"chat": chat, "admin": admin_call}
    samples: dict[str, list[float]] = {name: [] for name in routes}
    cpu = dict.fromkeys(routes, 0.0)
    async with httpx2.AsyncClient(base_url=base, timeout=60.0) as http:
        for call in routes.values():
            for _ in range(WARM_UP):
                await call(http)
        for round_ in range(args.rounds):
            for name in list(routes) if round_ % 2 == 0 else list(routes)[::-1]:
                before = cpu_s(pid)
                for _ in range(args.calls):
                    start = time.perf_counter()
                    await routes[name](http)
                    samples[name].append(time.perf_counter() - start)
                cpu[name] += cpu_s(pid) - before
    per = {name: cpu[name] / len(samples[name]) * 1e6 for name in routes}
    print(
        f"{TOOL} {{}} one request at a time, {args.rounds} alternating rounds of {args.calls}"
        " per route; supervisor CPU per request:"
    )
    for name in routes:
        p50 = statistics.median(samples[name]) * 1e3
        print(f"  {name:5s}  {per[name]:6.0f} µs   p50 {p50:6.2f} ms")
    ratio = per["chat"] / per["admin"]
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"  chat / admin: {ratio:.2f}x (target ≤ {TARGET}x) {verdict}")


async def order(args: argparse.Namespace, base: str) -> None:
    sent: dict[str, list[str]] = {}

    async def session(k: int) -> None:
        session_id = f"order-{k:03d}"
        # The same call each turn, told apart by the spaces inside the (empty) arguments.
        texts = [f"/call {TOOL} {{{' ' * j}}}" for j in range(args.turns)]
        sent[session_id] = texts
        async with (
            httpx2.AsyncClient(base_url=base, timeout=120.0) as http,
            trio.open_nursery() as n,
        ):
            for text in texts:
                begun = trio.Event()

                async def turn(text: str = text, begun: trio.Event = begun) -> None:
                    body = {"message": text, "sessionId": session_id}
                    async with http.stream(
                        "POST", "/apps/chat", json=body, headers=admin_headers()
                    ) as response:
                        assert response.status_code == 200, await response.aread()
                        begun.set()
                        async for _ in response.aiter_bytes():
                            pass

                n.start_soon(turn)
                await begun.wait()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for k in range(args.sessions):
            nursery.start_soon(session, k)
    took = time.perf_counter() - start
    wrong = []
    async with httpx2.AsyncClient(base_url=base, timeout=60.0) as http:
        for session_id, texts in sent.items():
            page = await http.get(
                f"/apps/chat/{session_id}", params={"limit": 100}, headers=admin_headers()
            )
            assert page.status_code == 200, page.text
            users = [m["content"] for m in page.json()["messages"] if m.get("role") == "user"]
            if users != texts:
                wrong.append((session_id, users))
    print(
        f"{args.sessions} sessions at once, {args.turns} turns each ({args.sessions * args.turns}"
        f" turns, each calling {TOOL}) in {took:.1f} s: {args.sessions - len(wrong)} of"
        f" {args.sessions} sessions saved their turns in the order sent"
        + ("" if not wrong else f"; out of order: {json.dumps(wrong[:3])}")
    )


async def bench(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        root = Path(tmp)
        shutil.copytree(GROCERY, root / "apps" / APP, ignore=shutil.ignore_patterns("__pycache__"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(exit_on_signal)
            try:
                config = '[apps]\ndiscovery_paths = ["./apps"]\n'
                async with supervisor(root, config, nursery) as (process, base):
                    await process.wait_for_log(rf"app {APP}: \S+ → Running")
                    await cost(args, base, process.pid)
                    await order(args, base)
            finally:
                nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="requests per batch")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 20, 20 sessions")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.rounds, args.sessions = 20, 2, 20
    trio.run(bench, args)


if __name__ == "__main__":
    main()
