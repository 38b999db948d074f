"""MCP Tasks (2025-11-25) through `/apps/mcp/<appId>`: the official TypeScript SDK
client runs tasks of the reference server `server-everything`, which declares them, with the
supervisor between the two (the app on stdio, the client on Streamable HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.frontdoor import everything_manifest
from tests.support.helpers import Project
from tests.support.officialclients import TsClient, ts_client
from tests.support.running import FAST, Supervisor, supervisor_running

RESEARCH = "simulate-research-query"  # server-everything's tool that runs only as a task


@pytest.fixture
async def supervisor(project: Project) -> AsyncIterator[Supervisor]:
    project.manifest("apps/everything", everything_manifest())
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(f'[apps]\ndiscovery_paths = ["./apps"]\n\n[supervision]\n{supervision}\n')
    async with supervisor_running(project) as running:
        yield running


@pytest.fixture
async def client(supervisor: Supervisor) -> AsyncIterator[TsClient]:
    async with ts_client(supervisor.url("/apps/mcp/everything")) as connected:
        yield connected


async def test_a_task_runs_to_its_result(client: TsClient) -> None:
    # The endpoint announces the app's task support, as the app does.
    tasks = client.ready["capabilities"]["tasks"]
    assert tasks["requests"]["tools"]["call"] == {}
    assert {"list", "cancel"} <= set(tasks)
    listed = await client.result("list_tools")
    research = next(t for t in listed["tools"] if t["name"] == RESEARCH)
    assert research["execution"]["taskSupport"] == "required"

    # The SDK's task stream: tools/call answered with a task, tasks/get polled until it is
    # done, then tasks/result, each one a request through the front door.
    stream = await client.result("call_tool_task", name=RESEARCH, arguments={"topic": "gateways"})
    kinds = [m["type"] for m in stream["messages"]]
    assert kinds[0] == "taskCreated", stream
    assert "taskStatus" in kinds, stream
    assert kinds[-1] == "result", stream
    task_id = stream["messages"][0]["task"]["taskId"]
    report = stream["messages"][-1]["result"]["content"][0]["text"]
    assert "Research Report: gateways" in report

    listed_tasks = await client.result("list_tasks")
    done = next(t for t in listed_tasks["tasks"] if t["taskId"] == task_id)
    assert done["status"] == "completed"
    again = await client.result("get_task_result", taskId=task_id)
    assert again["content"][0]["text"] == report


async def test_a_task_is_cancelled_and_bad_task_requests_get_the_apps_errors(
    client: TsClient,
) -> None:
    created = await client.result("start_tool_task", name=RESEARCH, arguments={"topic": "x"})
    task_id = created["task"]["taskId"]
    assert created["task"]["status"] == "working"
    listed = await client.result("list_tasks")
    assert task_id in {t["taskId"] for t in listed["tasks"]}

    cancelled = await client.result("cancel_task", taskId=task_id)
    assert cancelled["status"] == "cancelled"
    assert (await client.result("get_task", taskId=task_id))["status"] == "cancelled"

    # The app's own refusal comes back as it is, a malformed task call gets the front door's
    # -32602 naming the field, and the session goes on working.
    unknown = await client.request("get_task", taskId="no-such-task")
    assert not unknown["ok"]
    assert unknown["code"] == -32602, unknown
    assert "Task not found" in unknown["error"]
    nameless = await client.request("start_tool_task", name=None)
    assert not nameless["ok"]
    assert nameless["code"] == -32602, nameless
    assert "name: Input should be a valid string" in nameless["error"]
    echoed = await client.result("call_tool", name="echo", arguments={"message": "still here"})
    assert echoed["content"][0]["text"] == "Echo: still here"
