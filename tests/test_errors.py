"""One error family: every exception class of ours is a `McpappsError`, so a caller can catch
what mcpapps refuses in one clause and still tell the kinds apart."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from actors.runtime import AskTimeout, Overloaded
from supervisor.model.errors import ActorUnavailable, McpappsError

PACKAGES = ("supervisor", "actors", "web")


def _our_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if info.name.endswith("__main__"):
                continue
            loaded = importlib.import_module(info.name)
            for name, value in vars(loaded).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == info.name
                    and not name.startswith("_")  # a module's private signal, never raised out
                ):
                    found[f"{info.name}.{name}"] = value
    return found


def test_every_error_of_ours_is_in_the_family() -> None:
    found = _our_exceptions()
    assert len(found) > 10, sorted(found)  # the walk did find them
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, McpappsError))
    assert outside == []


def test_an_actor_that_is_gone_or_behind_is_one_kind() -> None:
    assert issubclass(AskTimeout, ActorUnavailable)
    assert issubclass(Overloaded, ActorUnavailable)
