"""The front door's error body: `{"error": {"code": "...", "message": "..."}}`."""

from __future__ import annotations

from typing import Any

from quart import Response, jsonify


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def json_error(status: int, code: str, message: str, **extra: Any) -> Response:
    response = jsonify(error_body(code, message, **extra))
    response.status_code = status
    return response
