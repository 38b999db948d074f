"""The control page's files as a browser gets them: the page loads `static/js/main.js` as an ES
module, and every module reached from it by its imports is served with a JavaScript type (a
browser refuses to run a module served as anything else); every module of `web/static/js` is
reached, their imports have no cycle, and the route serves nothing else. The page runs under a
CSP that allows only its own files."""

from __future__ import annotations

import posixpath
import re
from graphlib import TopologicalSorter
from typing import Any

from quart_trio import QuartTrio

from tests.support.helpers import csp_directives
from web.control import PAGE_MODULES, control_blueprint
from web.errors import register

MODULE_SCRIPT = re.compile(r'<script type="module" src="static/([^"]+)"></script>')
PRELOAD = re.compile(r'<link rel="modulepreload" href="static/([^"]+)">')
IMPORT = re.compile(r'^(?:import|export)\s[^;]*?from\s+"(\.{1,2}/[^"]+)";', re.MULTILINE)


def client() -> Any:
    app = QuartTrio("control-page", static_folder=None)  # as create_app builds it
    app.register_blueprint(control_blueprint("http://127.0.0.1:1"))
    register(app)  # the front door's one error table, as create_app registers it
    return app.test_client()


async def test_every_module_the_page_imports_is_served_as_javascript() -> None:
    page = await client().get("/")
    html = await page.get_data(as_text=True)
    assert MODULE_SCRIPT.findall(html) == ["js/main.js"]
    imports: dict[str, list[str]] = {}
    todo = ["js/main.js"]
    while todo:
        path = todo.pop()
        if path in imports:
            continue
        response = await client().get(f"/static/{path}")
        assert response.status_code == 200, path
        assert response.mimetype == "text/javascript", path
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        source = await response.get_data(as_text=True)
        imports[path] = [
            posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            for target in IMPORT.findall(source)
        ]
        todo.extend(imports[path])
    assert set(imports) == {f"js/{name}" for name in PAGE_MODULES}
    # The page names them all up front, so the browser need not find them one level at a time.
    assert set(PRELOAD.findall(html)) == set(imports)
    # No cycle: each module's imports are evaluated before it, whatever the order of the lines.
    order = list(TopologicalSorter(imports).static_order())
    assert order[-1] == "js/main.js"


async def test_only_the_page_s_files_are_served() -> None:
    for path in (
        "/static/js/nope.js",
        "/static/app.js",
        "/static/js/..%2Fapp-bridge.js",
        "/static/js/host/../../index.html",
        "/static/js/host/..%2F..%2Findex.html",
        "/static/js/host/nope.js",
        "/static/host.js",
    ):
        assert (await client().get(path)).status_code == 404, path
    assert (await client().get("/static/app-bridge.js")).mimetype == "text/javascript"
    assert (await client().get("/static/js/host/host.js")).mimetype == "text/javascript"


async def test_the_page_runs_only_its_own_scripts_and_frames_only_the_sandbox() -> None:
    page = await client().get("/")
    directives = csp_directives(page.headers["Content-Security-Policy"])
    assert directives["script-src"] == "script-src 'self'"  # no inline script, no eval
    assert directives["connect-src"] == "connect-src 'self'"
    assert directives["frame-src"] == "frame-src http://127.0.0.1:1"
    assert directives["default-src"] == "default-src 'none'"
