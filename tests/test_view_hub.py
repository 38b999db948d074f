"""The view hub by its messages alone, with no HTTP: a real app under a real registry, and the
typed events a view's request is answered with (the front door only frames them)."""

from __future__ import annotations

from typing import Any

import trio

from actors.runtime import Abandonment, ask
from actors.views.hub import ViewHub
from actors.views.messages import (
    AnswerApproval,
    Answered,
    ApprovalAsked,
    Failed,
    OpenView,
    Succeeded,
    TakeModelContexts,
    ViewEvent,
    ViewRequest,
)
from actors.views.refusals import Denied, UnknownMethod, UnknownView
from supervisor.model.lifecycle import AppState
from tests.support.helpers import Project
from tests.support.running import GUARD_S, fixture_manifest, running, wait_for


async def request(
    hub: ViewHub, view_id: str, method: str, params: dict[str, Any]
) -> trio.MemoryReceiveChannel[ViewEvent]:
    events_in, events = trio.open_memory_channel[ViewEvent](8)
    await hub.mailbox.send(ViewRequest(view_id, method, params, events_in, Abandonment()))
    return events


def outcome(events: list[ViewEvent]) -> Any:
    """The one event of a request answered at once: its outcome."""
    [answer] = events
    assert isinstance(answer, Answered), answer
    return answer.outcome


async def test_a_view_s_requests_are_answered_with_typed_events(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    async with running(project) as registry, trio.open_nursery() as nursery:
        await wait_for(registry, "fx", AppState.RUNNING)
        hub = ViewHub(registry.mailbox, approvals={"fx": "always"})
        await nursery.start(hub.run)
        with trio.fail_after(GUARD_S):
            opened = await ask(hub.mailbox, lambda r: OpenView("fx", "s1", None, False, r))
            assert (opened.app_id, opened.chat_session, opened.approval) == ("fx", "s1", "always")

            # Refused in the hub's mailbox, typed: the page reads the kind's code.
            unknown = await request(hub, "no-such-view", "tools/list", {})
            refused = outcome([event async for event in unknown])
            assert isinstance(refused, Failed)
            assert isinstance(refused.error, UnknownView)
            asked = await request(hub, opened.view_id, "prompts/list", {})
            refused = outcome([event async for event in asked])
            assert isinstance(refused, Failed)
            assert isinstance(refused.error, UnknownMethod)

            # Held for the person, then run once they allow it.
            call = {"name": "echo", "arguments": {"text": "hi"}}
            events = await request(hub, opened.view_id, "tools/call", call)
            held = await events.receive()
            assert isinstance(held, ApprovalAsked)
            assert (held.app_id, held.tool, held.arguments) == ("fx", "echo", {"text": "hi"})
            await ask(
                hub.mailbox, lambda r: AnswerApproval(opened.view_id, held.approval_id, "once", r)
            )
            ran = outcome([event async for event in events])
            assert isinstance(ran, Succeeded)
            assert ran.result["content"][0]["text"] == "hi"

            # Denied: a typed refusal, and the app never asked.
            events = await request(hub, opened.view_id, "tools/call", call)
            held = await events.receive()
            assert isinstance(held, ApprovalAsked)
            await ask(
                hub.mailbox, lambda r: AnswerApproval(opened.view_id, held.approval_id, "deny", r)
            )
            refused = outcome([event async for event in events])
            assert isinstance(refused, Failed)
            assert isinstance(refused.error, Denied)
            assert "the person denied it" in str(refused.error)
        nursery.cancel_scope.cancel()


async def test_a_view_s_model_context_goes_to_its_chat_s_next_turn_once(project: Project) -> None:
    project.manifest("apps/fx", fixture_manifest("fx"))
    async with running(project) as registry, trio.open_nursery() as nursery:
        await wait_for(registry, "fx", AppState.RUNNING)
        hub = ViewHub(registry.mailbox)
        await nursery.start(hub.run)
        with trio.fail_after(GUARD_S):
            opened = await ask(hub.mailbox, lambda r: OpenView("fx", "s1", None, False, r))
            context = {"content": [{"type": "text", "text": "3 apples chosen"}]}
            events = await request(hub, opened.view_id, "ui/update-model-context", context)
            [answered] = [event async for event in events]
            assert isinstance(answered, Answered)
            assert isinstance(answered.outcome, Succeeded)
            update_id = answered.outcome.result["_meta"]["openai/modelContext"]["updateId"]
            assert update_id.startswith("update-")
            taken = await ask(hub.mailbox, lambda r: TakeModelContexts("s1", r))
            assert taken == (
                {"app": "fx", "content": [{"type": "text", "text": "3 apples chosen"}]},
            )
            assert await ask(hub.mailbox, lambda r: TakeModelContexts("s1", r)) == ()
        nursery.cancel_scope.cancel()
