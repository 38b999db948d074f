"""What the floors of `bench/` share (floor.py, idlefloor.py): Hypercorn's Trio worker configured
as the front door configures it (web/serve.py), and an ASGI lifespan that asks for nothing."""

from __future__ import annotations

import math
from typing import Any

from hypercorn.config import Config


def hypercorn_config(port: int) -> Config:
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.graceful_timeout = math.inf
    config.include_server_header = False
    config.keep_alive_max_requests = 2**62
    config.keep_alive_timeout = 30
    return config


async def lifespan(receive: Any, send: Any) -> None:
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})
