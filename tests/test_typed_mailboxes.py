"""Each actor's mailbox takes only its own messages: mypy (as `make test` runs it) refuses a
message sent to the wrong actor, told or asked, and an actor's `match` that leaves a message of
its union without a case, rather than leaving either to an "unknown message" log line at run
time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MISROUTED = """
from actors.messages import GetSession, HubMessage, RegistryMessage, Snapshot, StopAll
from actors.runtime import Mailbox, Reply, ask, unhandled


async def misrouted(registry: Mailbox[RegistryMessage], chats: Mailbox[HubMessage]) -> None:
    await ask(registry, lambda reply: GetSession("s", reply))  # line 7: a hub message
    chats.tell(StopAll(Reply()))  # line 8: a registry message
    await ask(registry, Snapshot)  # line 9: the registry's own: fine


def handle(message: HubMessage) -> None:
    match message:
        case GetSession():
            pass
        case _:
            unhandled("hub", message)  # line 17: the hub's other messages have no case
"""


def test_mypy_refuses_a_message_sent_to_the_wrong_actor(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(MISROUTED)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(probe)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    # By the file's name: mypy's cache may replay a report under the path of an earlier run.
    lines = {
        int(line.split(":")[1])
        for line in run.stdout.splitlines()
        if line.split(":")[0].endswith(probe.name)
    }
    assert lines == {7, 8, 17}, run.stdout
