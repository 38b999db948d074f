"""The shape of the view subsystem that `lint-imports` cannot say: the view routes import no
private name (`_x`) of another module, so they use only what a module offers (the view hub is
reached by its messages; `pyproject.toml`'s contracts keep them off the hub's parts)."""

from __future__ import annotations

import ast
from pathlib import Path

import web.views

VIEW_ROUTES = Path(web.views.__file__).parent


def private_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_the_view_routes_import_no_private_names() -> None:
    modules = sorted(VIEW_ROUTES.glob("*.py"))
    assert {m.name for m in modules} >= {"routes.py", "framing.py", "history.py"}
    for module in modules:
        assert private_imports(module.read_text()) == [], module.name


def test_a_private_import_is_seen() -> None:
    assert private_imports("from actors.views.calls import _Trip, serve\n") == [
        "actors.views.calls._Trip"
    ]
