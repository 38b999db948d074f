"""What the vendored AppBridge (web/static/app-bridge.js) costs the control page: its size, raw
and gzipped, and the time headless Chromium takes to compile and run it, against host.js alone.

Each run evaluates the scripts' text in a fresh page (no network, no code cache) and times it
with `performance.now()`; the median of the runs is printed. Figures go in docs/decisions.md.

Usage: python bench/app_bridge_load.py [--runs N]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
from pathlib import Path

from playwright.sync_api import sync_playwright

STATIC = Path(__file__).resolve().parents[1] / "web" / "static"
CHROMIUM = "/usr/bin/chromium"
PAGE = '<!doctype html><body data-sandbox="http://127.0.0.1:1"><div id="canvas"></div></body>'
# Compile and run one script's text, as a <script> tag would: the milliseconds it took.
RUN = (
    "(source) => { const t0 = performance.now(); (0, eval)(source);"
    " return performance.now() - t0; }"
)


def measure(runs: int) -> dict[str, float]:
    """Median milliseconds of each script, app-bridge.js first (host.js needs it), each run on
    a fresh page (no code cache)."""
    texts = {name: (STATIC / name).read_text() for name in ("app-bridge.js", "host.js")}
    times: dict[str, list[float]] = {name: [] for name in texts}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for _ in range(runs):
            page = browser.new_page()
            page.set_content(PAGE)
            for name, text in texts.items():
                times[name].append(page.evaluate(RUN, text))
            page.close()
        browser.close()
    return {name: statistics.median(each) for name, each in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    for name, ms in measure(runs).items():
        raw = (STATIC / name).read_bytes()
        print(
            f"{name}: {len(raw) / 1024:.0f} KiB, {len(gzip.compress(raw)) / 1024:.0f} KiB gzipped;"
            f" compile and run {ms:.1f} ms (median of {runs})"
        )


if __name__ == "__main__":
    main()
