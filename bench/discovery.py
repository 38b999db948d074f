"""Discovery benchmark: manifests per second for `discover()` and its peak memory.

Generates N manifests (default 10,000) in a temp folder, a fixed mix of valid, invalid and
nested ones, then measures side by side in one run:

- walking the folders alone (`find_manifests`) against the whole `discover()`;
- parsing a plain-JSON manifest against the same manifest with comments (the JSON5 path);
- peak Python memory of one `discover()` (tracemalloc) and the process's max RSS.

Usage: python bench/discovery.py [--count N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from supervisor.model.config import AppsConfig, load_config
from supervisor.model.discovery import discover, find_manifests
from supervisor.model.manifest import ManifestSyntaxError, parse_manifest_text

MANIFEST = AppsConfig().manifest_name


def manifest(i: int) -> dict:
    return {
        "id": f"app-{i:05d}",
        "name": f"Benchmark app {i}",
        "description": "A generated app for the discovery benchmark.",
        "version": "1.0.0",
        "transport": "stdio",
        "command": "python3",
        "arguments": ["server.py", "--port", str(i)],
        "environment": {"APP_INDEX": str(i)},
        "toolNamePrefix": f"b{i}.",
        "tags": ["bench", "generated"],
    }


def with_comments(data: dict) -> str:
    lines = json.dumps(data, indent=2).splitlines()
    return "// generated with comments\n" + "\n".join(lines[:-1]) + ",\n  /* trailing */\n}\n"


# Of every 20 manifests: 14 plain valid, 2 with comments, 1 nested deeper, 3 invalid.
KINDS = ["plain"] * 14 + ["commented"] * 2 + ["nested", "bad-rules", "bad-json", "bad-types"]


def generate(root: Path, count: int) -> dict[str, int]:
    made: dict[str, int] = {}
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        made[kind] = made.get(kind, 0) + 1
        folder = root / f"group-{i // 100:03d}" / f"app-{i:05d}"
        data = manifest(i)
        if kind == "nested":
            folder = folder / "packages" / "server" / "dist"
        if kind == "bad-rules":
            del data["command"]
        if kind == "bad-types":
            data["arguments"] = "--port 1"
            data["startupTimeoutSeconds"] = 0
        folder.mkdir(parents=True)
        if kind == "commented":
            text = with_comments(data)
        elif kind == "bad-json":
            text = json.dumps(data)[:-10]
        else:
            text = json.dumps(data)
        (folder / MANIFEST).write_text(text)
    return made


def _parse(text: str) -> object:
    try:
        return parse_manifest_text(text)
    except ManifestSyntaxError as error:
        return error


def best_and_median(samples: list[float]) -> str:
    return (
        f"best {min(samples) * 1000:8.1f} ms   median {statistics.median(samples) * 1000:8.1f} ms"
    )


def time_it(fn, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mcpapps-bench-") as tmp:
        root = Path(tmp)
        made = generate(root / "apps", args.count)
        (root / "config.toml").write_text('[apps]\ndiscovery_paths = ["apps"]\n')
        config = load_config(root / "config.toml", {})

        discovery = discover(config, {})
        valid = sum(app.valid for app in discovery.apps)
        print(
            f"manifests: {len(discovery.apps)} ({valid} valid, {len(discovery.apps) - valid}"
            f" invalid); mix: {made}"
        )

        walk = time_it(lambda: find_manifests(config.apps.discovery_paths, MANIFEST), args.repeat)
        whole = time_it(lambda: discover(config, {}), args.repeat)
        n = len(discovery.apps)
        print(
            f"walk only (find_manifests): {best_and_median(walk)}"
            f"   {n / min(walk):10,.0f} manifests/s"
        )
        print(
            f"discover():                 {best_and_median(whole)}"
            f"   {n / min(whole):10,.0f} manifests/s"
        )
        print(f"walking is {min(walk) / min(whole):.0%} of discover()")

        plain = json.dumps(manifest(1))
        commented = with_comments(manifest(1))
        broken = plain[:-10]
        per = {}
        for label, text, rounds in [
            ("plain JSON", plain, 1000),
            ("with comments", commented, 1000),
            ("invalid (error worded)", broken, 1000),
        ]:
            best = min(time_it(lambda t=text, r=rounds: [_parse(t) for _ in range(r)], 3))
            per[label] = best / rounds * 1e6
        base = per["plain JSON"]
        print(
            "parse one manifest: "
            + "   ".join(f"{label} {us:,.1f} µs ({us / base:,.1f}x)" for label, us in per.items())
        )

        tracemalloc.start()
        discover(config, {})
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            f"peak traced memory of discover(): {peak / 2**20:.1f} MiB"
            f" ({peak / n / 1024:.2f} KiB per manifest); process max RSS {rss_kib / 1024:.0f} MiB"
        )


if __name__ == "__main__":
    main()
