"""File views benchmark (issue 28): what a read and a save of a workspace file cost through the view
door, the way the page makes them (`POST /apps/views/<viewId>/mcp`).

One `mcpapps run` hosting the bundled app with a workspace of CSV files, its views' approval off
(a save is not held for the person) and their rate limits out of the way. For each file size,
one file view reads the file (`resources/read`) and saves it with its ETag
(`openai/resources/write` with `ifMatch`, the ETag of its last save), one request at a time;
then four views save four files at once.
Printed: p50 and p95 of each, and saves per second. A save is a temporary file written,
`fsync`ed, renamed and the folder `fsync`ed, so the disk's flush time is most of it.

Usage: python bench/filesaves.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import trio
from support import GROCERY, admin_headers, exit_on_signal, supervisor

SIZES = {"4 KiB": 4 * 1024, "256 KiB": 256 * 1024, "1 MiB": 1024 * 1024}
PARALLEL = 4


def csv_of(size: int, version: int) -> str:
    row = f"SKU-{version:06d},Product {version},42\n"
    return "sku,product,on_hand\n" + row * max(1, size // len(row))


async def rpc(client: httpx2.AsyncClient, view: str, method: str, params: Any) -> Any:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post(f"/apps/views/{view}/mcp", json=message)
    answer = response.json()
    if "error" in answer:
        raise SystemExit(f"{method}: {answer['error']}")
    return answer["result"]


async def open_file(client: httpx2.AsyncClient, path: str) -> tuple[str, str]:
    response = await client.post("/apps/views", json={"file": path})
    if response.status_code != 201:
        raise SystemExit(f"the file view did not open: {response.text}")
    body = response.json()
    return body["viewId"], body["toolCall"]["arguments"]["file"]["resourceUri"]


async def read_and_save(
    client: httpx2.AsyncClient, path: str, size: int, rounds: int
) -> tuple[list[float], list[float]]:
    view, uri = await open_file(client, path)
    reads, saves = [], []
    read = await rpc(client, view, "resources/read", {"uri": uri})
    etag = read["contents"][0]["_meta"]["openai/resource"]["etag"]
    for n in range(rounds):
        began = time.perf_counter()
        await rpc(client, view, "resources/read", {"uri": uri})
        reads.append(time.perf_counter() - began)
        params = {"uri": uri, "text": csv_of(size, n), "ifMatch": etag}
        began = time.perf_counter()
        saved = await rpc(client, view, "openai/resources/write", params)
        saves.append(time.perf_counter() - began)
        if saved["outcome"] != "saved":
            raise SystemExit(f"a save was not made: {saved}")
        etag = saved["etag"]
    return reads, saves


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:7.2f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="20 rounds")
    options = parser.parse_args()
    rounds = 20 if options.quick else options.rounds
    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-files-") as temp:
        root = Path(temp)
        (root / "apps").symlink_to(GROCERY.parent)
        workspace = root / "workspace"
        workspace.mkdir()
        for label, size in SIZES.items():
            (workspace / f"{label.replace(' ', '')}.csv").write_text(csv_of(size, 0))
        for i in range(PARALLEL):
            (workspace / f"parallel{i}.csv").write_text(csv_of(SIZES["4 KiB"], 0))
        config = (
            '[apps]\ndiscovery_paths = ["./apps"]\n'
            '[apps.entries.grocery-inventory]\napproval = "never"\n'
            '[workspace]\nroot = "workspace"\n'
            # A view's rate limits are for pages, not for a benchmark's loop.
            "[views]\nmax_requests = 1000000\nwindow_s = 1\n"
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(exit_on_signal)
            async with (
                supervisor(root, config, nursery) as (child, base),
                httpx2.AsyncClient(base_url=base, headers=admin_headers(), timeout=60) as client,
            ):
                await child.wait_for_log(r"workspace: ")
                await child.wait_for_log(r"grocery-inventory: \S+ → Running")
                print(f"{'file':>8} {'read p50':>9} {'p95':>7} {'save p50':>9} {'p95':>7} saves/s")
                for label, size in SIZES.items():
                    path = f"{label.replace(' ', '')}.csv"
                    reads, saves = await read_and_save(client, path, size, rounds)
                    rate = len(saves) / sum(saves)
                    print(
                        f"{label:>8} {ms(reads, 0.5):>9} {ms(reads, 0.95)} {ms(saves, 0.5):>9}"
                        f" {ms(saves, 0.95)} {rate:7.0f}"
                    )
                began = time.perf_counter()
                every: list[float] = []

                async def one(i: int) -> None:
                    _, saves = await read_and_save(
                        client, f"parallel{i}.csv", SIZES["4 KiB"], rounds
                    )
                    every.extend(saves)

                async with trio.open_nursery() as views:
                    for i in range(PARALLEL):
                        views.start_soon(one, i)
                took = time.perf_counter() - began
                print(
                    f"{PARALLEL} views saving 4 KiB files at once: save p50 {ms(every, 0.5)} ms,"
                    f" p95 {ms(every, 0.95)} ms, {len(every) / took:.0f} saves/s in all"
                    f" (median of one view's {statistics.median(every) * 1000:.2f} ms)"
                )
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
