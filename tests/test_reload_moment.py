"""The moment an app goes down by request (a restart, a stop, a reload's restart): its tools are
never unknown while it is still Running. A call in that moment hears that the app is not
available (JSON-RPC -32000 on `/mcp`, 503 on `/admin/call`), never "unknown tool" (-32602,
404).

Deterministic: a call is put in the registry's mailbox right behind each fact the app actor
tells, so it is answered exactly as things stand once the registry has heard that fact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from actors.catalog import Catalog
from actors.messages import (
    AppFact,
    AppUnavailable,
    CallPublicTool,
    CatalogChanged,
    Restart,
    StateChanged,
    Stop,
    ToApp,
    UnknownTool,
)
from actors.registry import Registry, _Facts
from actors.runtime import Reply, ask
from supervisor.model.config import config_from_data
from supervisor.model.discovery import discover
from supervisor.model.lifecycle import AppState
from tests.support.helpers import Project
from tests.support.running import GUARD_S, config_data, environment, fixture_manifest, wait_for


class _CallBehindEachFact(_Facts):
    """An app actor's voice that, while `armed`, puts a call of `fx.echo` in the registry's
    mailbox right behind each fact it tells; `calls` holds (the fact, the call's reply)."""

    armed = False

    def __init__(self, registry: ProbedRegistry, app_id: str) -> None:
        super().__init__(registry.mailbox, app_id)
        self._probed = registry

    def tell(self, message: AppFact) -> None:
        super().tell(message)
        if self.armed:
            reply: Reply[Any] = Reply()
            self._probed.mailbox.tell(CallPublicTool("fx.echo", {"text": "hi"}, reply))
            self._probed.calls.append((_said(message), reply))


def _said(fact: AppFact) -> str:
    match fact:
        case StateChanged(status):
            return f"state {status.state}"
        case CatalogChanged(_, catalog):
            return "catalog emptied" if catalog == Catalog() else "catalog"
        case _:
            return type(fact).__name__


class ProbedRegistry(Registry):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls: list[tuple[str, Reply[Any]]] = []
        self.voices: list[_CallBehindEachFact] = []
        super().__init__(*args, **kwargs)

    def _voice(self, app_id: str) -> _Facts:
        voice = _CallBehindEachFact(self, app_id)
        self.voices.append(voice)
        return voice


@pytest.mark.parametrize("command", [Restart, Stop], ids=["restart", "stop"])
async def test_a_tool_of_an_app_going_down_is_not_available_never_unknown(
    project: Project, command: Callable[[Reply[Any]], Any]
) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    env = environment()
    config = config_from_data(config_data(), project.config_path, env)
    registry = ProbedRegistry(discover(config, env).apps, environ=env)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await wait_for(registry, "fx", AppState.RUNNING)
        registry.voices[0].armed = True
        await ask(registry.mailbox, lambda r: ToApp("fx", command(r)), GUARD_S)
        after = AppState.RUNNING if command is Restart else AppState.STOPPED
        await wait_for(registry, "fx", after)
        registry.voices[0].armed = False
        answers: list[tuple[str, str]] = []
        with trio.fail_after(GUARD_S):
            for said, reply in registry.calls:
                try:
                    await reply.wait()
                    answers.append((said, "answered"))
                except (AppUnavailable, UnknownTool) as error:
                    answers.append((said, type(error).__name__))
        await ask(registry.mailbox, lambda r: ToApp("fx", Stop(r)), GUARD_S)
        nursery.cancel_scope.cancel()
    assert ("catalog emptied", "AppUnavailable") in answers
    assert [a for a in answers if a[1] == "UnknownTool"] == [], answers
