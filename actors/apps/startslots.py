"""How many app processes start at once.

Starting an app is mostly CPU: a Python app spends about a second importing the MCP SDK before
it answers `initialize`. Started all at once, a hundred such apps share the cores a hundred
ways, so each takes the whole batch's time to start, every one of them later than its
`startupTimeoutSeconds` (15 s by default): they would all fail, be restarted and fail again.
A start slot is held from the spawn until the app is Running or has failed; with about as
many slots as cores (twice, so that one app's waits for its disk or its handshake leave no
core idle) each app starts in about its own time and the whole batch still finishes when the
cores have done its work. The start-up deadline counts from the moment the slot is taken.

An app that is slow to start for other reasons (a download, a remote service) holds its slot
until it is Running or its deadline passes, which delays the apps behind it by as much: set
`[apps] max_starting` higher for many of those. Apps at a URL take no slot: their start costs
this machine almost nothing.
"""

from __future__ import annotations

import os

import trio


def start_slots(configured: int | None = None) -> trio.CapacityLimiter:
    """The slots every app actor of one supervisor shares: `configured`, else twice the cores
    this process may run on."""
    return trio.CapacityLimiter(configured or 2 * len(os.sched_getaffinity(0)))
