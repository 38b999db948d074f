"""What the vendored AppBridge (web/static/app-bridge.js) costs the control page: its size, raw
and gzipped, and the time headless Chromium takes to compile and run it, against the view host's
own modules (web/static/js/host/) alone.

Each run uses a fresh browser context (no code or HTTP cache): app-bridge.js is evaluated from
its text, as a <script> tag would run it; the view host's modules are preloaded from a loopback
HTTP server as the control page preloads them (`<link rel="modulepreload">`), then its entry is
imported, which links and runs them all: the time the host's own code costs, without the
network. Each is timed with `performance.now()`; the median of the runs is printed. Figures go
in docs/decisions.md.

Usage: python bench/app_bridge_load.py [--runs N]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import statistics
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import Route, sync_playwright

STATIC = Path(__file__).resolve().parents[1] / "web" / "static"
HOST = STATIC / "js" / "host"
CHROMIUM = "/usr/bin/chromium"


def page_text() -> str:
    """A page with the sandbox origin the host reads, that preloads the host's modules."""
    modules = [*sorted(HOST.glob("*.js")), STATIC / "js" / "dom.js", STATIC / "js" / "sse.js"]
    links = "".join(
        f'<link rel="modulepreload" href="{path.relative_to(STATIC).as_posix()}">'
        for path in modules
    )
    return (
        f"<!doctype html><head>{links}</head>"
        '<body data-sandbox="http://127.0.0.1:1"><div id="canvas"></div></body>'
    )


# Compile and run one script's text, as a <script> tag would: the milliseconds it took.
RUN = (
    "(source) => { const t0 = performance.now(); (0, eval)(source);"
    " return performance.now() - t0; }"
)
# Import the view host's entry (its modules preloaded): the milliseconds it took.
IMPORT = (
    "async () => { const t0 = performance.now(); await import('./js/host/host.js');"
    " return performance.now() - t0; }"
)


class _Quiet(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server

    def log_message(self, format: str, *args: object) -> None:
        pass


def measure(runs: int) -> dict[str, float]:
    """Median milliseconds of app-bridge.js and of the view host (which needs it), each run in
    a fresh browser context."""
    bridge = (STATIC / "app-bridge.js").read_text()
    times: dict[str, list[float]] = {"app-bridge.js": [], "js/host/": []}
    handler = functools.partial(_Quiet, directory=str(STATIC))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    html = page_text()

    def page_html(route: Route) -> None:
        route.fulfill(body=html, content_type="text/html")

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            for _ in range(runs):
                context = browser.new_context()
                page = context.new_page()
                page.route(f"{base}/bench", page_html)
                page.goto(f"{base}/bench", wait_until="load")  # the preloads are in
                times["app-bridge.js"].append(page.evaluate(RUN, bridge))
                times["js/host/"].append(page.evaluate(IMPORT))
                context.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return {name: statistics.median(each) for name, each in times.items()}


def size(name: str) -> bytes:
    if name == "js/host/":
        return b"".join(path.read_bytes() for path in sorted(HOST.glob("*.js")))
    return (STATIC / name).read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    for name, ms in measure(runs).items():
        raw = size(name)
        print(
            f"{name}: {len(raw) / 1024:.0f} KiB, {len(gzip.compress(raw)) / 1024:.0f} KiB gzipped;"
            f" compile and run {ms:.1f} ms (median of {runs})"
        )


if __name__ == "__main__":
    main()
