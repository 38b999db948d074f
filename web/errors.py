"""The front door's error body: `{"error": {"code": "...", "message": "..."}}`."""

from __future__ import annotations

import time
from typing import Any

from quart import Response, jsonify


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def json_error(status: int, code: str, message: str, **extra: Any) -> Response:
    response = jsonify(error_body(code, message, **extra))
    response.status_code = status
    return response


def retry_after(at: float | None) -> list[tuple[bytes, bytes]]:
    """The `Retry-After` header for a restart due at `at` (epoch seconds), if one is due: whole
    seconds, at least 1 (a client told 0 would ask again at once, before the restart)."""
    if at is None:
        return []
    return [(b"retry-after", str(max(1, round(at - time.time()))).encode())]
