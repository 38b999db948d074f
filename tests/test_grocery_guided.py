"""The grocery app's guided tools (`guided_restock`, `confirm_adjustment`), which ask the person
as they go: from the chat (the app on either protocol era) and from `/apps/mcp/grocery-inventory`
with the TypeScript SDK client answering the elicitation."""

from __future__ import annotations

import pytest

from tests.support.asking import answer, command, result_text, turn
from tests.support.frontdoor import grocery_project, http
from tests.support.helpers import Project
from tests.support.officialclients import ts_client
from tests.support.running import supervisor_running

# Store 1 (Downtown) starts with two products at or below their threshold: 3 and 7.
LOW_AT_STORE_1 = {"p3", "p7"}


@pytest.mark.parametrize("protocol", [None, "stateless"])
async def test_guided_restock_and_confirm_adjustment_from_the_chat(
    project: Project, protocol: str | None
) -> None:
    """Handshake era (the default): the app asks in the middle of the call. 2026-07-28: each
    question is an `input_required` result and the chat sends the call again."""
    grocery_project(project, protocol)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        async with turn(client, {**command("grocery.guided_restock", {}), "sessionId": "g"}) as t:
            store = await t.until("elicitation")
            assert store["app"] == "grocery-inventory"
            assert store["tool"] == "grocery.guided_restock"
            choices = store["requestedSchema"]["properties"]["storeId"]["oneOf"]
            assert {"const": "1", "title": "Downtown Market (Portland, OR)"} in choices
            ok = await answer(client, "g", store["requestId"], "accept", content={"storeId": "1"})
            assert ok.status_code == 200, ok.text
            quantities = await t.until("elicitation")
            fields = quantities["requestedSchema"]["properties"]
            assert set(fields) == LOW_AT_STORE_1
            assert fields["p3"]["default"] == 22  # twice the threshold, less what is on hand
            bad = await answer(client, "g", quantities["requestId"], "accept", content={"p3": -1})
            assert bad.status_code == 400
            content = {"p3": 30, "p7": 0}
            ok = await answer(client, "g", quantities["requestId"], "accept", content=content)
            assert ok.status_code == 200, ok.text
            events = await t.rest()
        text = result_text(events)
        assert text.startswith("Draft purchase order for Downtown Market: 1 supplier(s)")
        assert "30 x " in text

        large = command("grocery.confirm_adjustment", {"storeId": 1, "productId": 1, "delta": -60})
        async with turn(client, {**large, "sessionId": "g"}) as t:
            asked = await t.until("elicitation")
            assert "by -60 units (from 120 to 60)" in asked["message"]
            assert (await answer(client, "g", asked["requestId"], "decline")).status_code == 200
            events = await t.rest()
        said = "Not applied (decline): Gala Apples at Downtown Market stays at 120."
        assert result_text(events).startswith(said)

        small = command("grocery.confirm_adjustment", {"storeId": 1, "productId": 1, "delta": 5})
        async with turn(client, {**small, "sessionId": "g"}) as t:
            events = await t.rest()
        assert not [e for e in events if e["type"] == "elicitation"]
        assert result_text(events).startswith("Applied: ")
        assert "is now 125" in result_text(events)


async def test_guided_tools_through_the_front_door_with_the_typescript_client(
    project: Project,
) -> None:
    grocery_project(project)
    url_path = "/apps/mcp/grocery-inventory"
    restock = {"elicitation": {"action": "accept", "content": {"p3": 4, "p7": 6}}}
    confirm = {"elicitation": {"action": "accept", "content": {"confirm": True}}}
    async with supervisor_running(project) as supervisor:
        async with ts_client(supervisor.url(url_path), answers=restock) as client:
            drafted = await client.result(
                "call_tool", name="guided_restock", arguments={"storeId": 1}
            )
            assert not drafted.get("isError"), drafted
            orders = drafted["structuredContent"]["orders"]
            quantities = {
                line["productId"]: line["quantity"] for o in orders for line in o["lines"]
            }
            assert quantities == {3: 4, 7: 6}
        async with ts_client(supervisor.url(url_path), answers=confirm) as client:
            applied = await client.result(
                "call_tool",
                name="confirm_adjustment",
                arguments={"storeId": 2, "productId": 2, "delta": 100},
            )
            assert applied["structuredContent"]["applied"] is True
            assert applied["structuredContent"]["item"]["quantityOnHand"] == 290
