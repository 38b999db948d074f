"""The front door's two error tables (web/errors.py), as pure functions: every kind of the family
a route or an endpoint raises has a row in each, and a row says what the client reads."""

from __future__ import annotations

import time

import mcp_types as types
import pytest
from mcp_types import ErrorData

from actors import asking
from actors.asking import BadAnswer, NoSuchQuestion, QuestionClosed
from actors.messages import (
    AppError,
    AppUnavailable,
    CallFailed,
    CallTimeout,
    SignInRefused,
    UnknownApp,
    UnknownTool,
)
from actors.runtime import AskTimeout, Overloaded
from actors.views import refusals
from actors.views.refusals import (
    BadDecision,
    BadParams,
    CallLost,
    Denied,
    Limited,
    NotAllowed,
    NotARequest,
    NotRun,
    UnknownApproval,
    UnknownMethod,
    UnknownQuestion,
    UnknownView,
    Unreadable,
    ViewRefusal,
)
from supervisor.model import errors
from supervisor.model.errors import (
    BadRequest,
    Conflict,
    InvalidParams,
    McpappsError,
    NotFound,
    Refusal,
    ResourceNotFound,
    Unauthorized,
    Unavailable,
)
from web.errors import (
    APP_ERROR,
    HTTP_ERRORS,
    RESOURCE_NOT_FOUND,
    RPC_ERRORS,
    http_answer,
    mcp_error,
    rpc_body,
    rpc_error,
)

# The table as a client reads it: the error, its HTTP status and code, its JSON-RPC code.
EXPECTED = [
    (errors.BadRequest("m"), 400, "bad_request", types.INVALID_REQUEST),
    (errors.InvalidParams("m"), 400, "bad_request", types.INVALID_PARAMS),
    (errors.Unparsable("m"), 400, "bad_request", types.PARSE_ERROR),
    (errors.UnsupportedVersion("m"), 400, "bad_request", types.UNSUPPORTED_PROTOCOL_VERSION),
    (errors.Unauthorized("m"), 401, "unauthorized", APP_ERROR),
    (errors.Forbidden("m"), 403, "refused", APP_ERROR),
    (errors.NotFound("m"), 404, "not_found", types.INVALID_REQUEST),
    (errors.ResourceNotFound("m"), 404, "not_found", RESOURCE_NOT_FOUND),
    (errors.BodyTooSlow("m"), 408, "body_timeout", APP_ERROR),
    (errors.Conflict("m"), 409, "conflict", APP_ERROR),
    (errors.BodyTooLarge("m"), 413, "body_too_large", APP_ERROR),
    (errors.WrongMediaType("m"), 415, "unsupported_media_type", APP_ERROR),
    (errors.WrongHost("m"), 421, "host_not_allowed", APP_ERROR),
    (errors.ClientGone("m"), 499, "client_closed", APP_ERROR),
    (errors.NotSupported("m"), 501, "not_implemented", APP_ERROR),
    (errors.Unavailable("m"), 503, "unavailable", APP_ERROR),
    (errors.UnusableAnswer("m"), 502, "unusable_answer", APP_ERROR),
    (UnknownApp("a", "m"), 404, "unknown_app", APP_ERROR),
    (UnknownTool(None, "m"), 404, "unknown_tool", types.INVALID_PARAMS),
    (SignInRefused("a", "m"), 409, "no_sign_in", APP_ERROR),
    (AppError("a", "m"), 500, "app_error", APP_ERROR),
    (CallFailed("a", "m"), 502, "call_failed", APP_ERROR),
    (AppUnavailable("a", "m"), 503, "app_unavailable", APP_ERROR),
    (CallTimeout("a", "m"), 504, "timeout", types.REQUEST_TIMEOUT),
    # A view's refusals: the JSON-RPC codes README's table of the view door lists.
    (ViewRefusal("m"), 403, "refused", APP_ERROR),
    (UnknownView("m"), 404, "unknown_view", -32001),
    (NotAllowed("m"), 403, "refused", -32002),
    (Limited("m"), 403, "refused", -32003),
    (Denied("m"), 403, "refused", -32004),
    (UnknownMethod("m"), 403, "refused", types.METHOD_NOT_FOUND),
    (BadParams("m"), 403, "refused", types.INVALID_PARAMS),
    (NotRun("m"), 403, "refused", APP_ERROR),
    (CallLost("m"), 403, "refused", types.INTERNAL_ERROR),
    (Unreadable("m"), 403, "refused", types.PARSE_ERROR),
    (NotARequest("m"), 403, "refused", types.INVALID_REQUEST),
    (UnknownApproval("m"), 404, "unknown_approval", APP_ERROR),
    (UnknownQuestion("m"), 404, "not_found", APP_ERROR),
    (BadDecision("m"), 400, "bad_request", APP_ERROR),
    # An answer to an app's question that is not taken (chat and views alike).
    (BadAnswer("m"), 400, "bad_request", types.INVALID_REQUEST),
    (NoSuchQuestion("m"), 404, "not_found", types.INVALID_REQUEST),
    (QuestionClosed("m"), 409, "conflict", APP_ERROR),
]


@pytest.mark.parametrize(("error", "status", "code", "rpc_code"), EXPECTED)
def test_each_kind_reads_as_its_row(
    error: Exception, status: int, code: str, rpc_code: int
) -> None:
    answer = http_answer(error)
    assert (answer.status, answer.body) == (status, {"error": {"code": code, "message": "m"}})
    assert rpc_error(error) == ErrorData(code=rpc_code, message="m")
    assert mcp_error(error).error == ErrorData(code=rpc_code, message="m")


def test_every_kind_of_refusal_and_of_app_error_has_rows_of_its_own_or_its_parents() -> None:
    kinds = [
        k
        for module in (errors, refusals, asking)
        for k in vars(module).values()
        if isinstance(k, type) and issubclass(k, Refusal)
    ]
    kinds += [AppError, UnknownApp, UnknownTool, AppUnavailable, CallTimeout, CallFailed]
    kinds += [SignInRefused, AskTimeout, Overloaded]
    tabled = {type(error) for error, *_ in EXPECTED} | {AskTimeout, Overloaded, Refusal}
    # AnswerRefused is never raised itself, only its kinds; TooManyViews has a test of its own.
    tabled |= {asking.AnswerRefused, refusals.TooManyViews}
    assert set(kinds) <= tabled, "a kind of the family is missing from EXPECTED"
    for kind in kinds:
        # A row of the kind itself or of a parent of it (Refusal and AnswerRefused themselves
        # are never raised).
        assert any(k in HTTP_ERRORS for k in kind.__mro__) or kind in (
            Refusal,
            asking.AnswerRefused,
        )
        assert any(k in RPC_ERRORS for k in kind.__mro__)


def test_a_busy_actor_is_said_in_each_protocol_s_words() -> None:
    for busy in (AskTimeout("the registry did not answer within 5 s"), Overloaded("full")):
        answer = http_answer(busy)
        assert answer.status == 503
        assert answer.body["error"] == {
            "code": "busy",
            "message": f"the supervisor could not answer: {busy}",
        }
        assert rpc_error(busy) == ErrorData(
            code=APP_ERROR, message=f"mcpapps could not pass the request on: {busy}"
        )


def test_what_an_error_carries_goes_to_the_client() -> None:
    # A more precise machine code, and data: fields of the HTTP body, the JSON-RPC `data`.
    busy = Conflict("session 's' has a turn running", code="session_busy", data={"id": "s"})
    assert http_answer(busy).body == {
        "error": {"code": "session_busy", "message": "session 's' has a turn running", "id": "s"}
    }
    assert rpc_error(busy) == ErrorData(
        code=APP_ERROR, message="session 's' has a turn running", data={"id": "s"}
    )
    # When to try again: Retry-After in whole seconds, at least 1.
    later = Unavailable("not now", retry_at=time.time() + 30)
    assert http_answer(later).headers == ((b"retry-after", b"30"),)
    soon = AppUnavailable("a", "restarting", retry_at=time.time() - 5)
    assert http_answer(soon).headers == ((b"retry-after", b"1"),)
    # Every 401 says how to authenticate.
    assert http_answer(Unauthorized("no token")).headers == ((b"www-authenticate", b"Bearer"),)


def test_an_error_the_app_answered_with_passes_through_as_it_is() -> None:
    theirs = ErrorData(code=-32099, message="the app's own words", data={"x": 1})
    assert rpc_error(CallFailed("a", "the call failed", theirs)) is theirs
    assert http_answer(CallFailed("a", "the call failed", theirs)).status == 502


def test_an_error_with_no_row_is_a_bug_raised_again() -> None:
    class Unplanned(McpappsError):
        pass

    with pytest.raises(LookupError):
        http_answer(Unplanned("?"))
    with pytest.raises(Unplanned):
        mcp_error(Unplanned("?"))
    with pytest.raises(ZeroDivisionError):
        mcp_error(ZeroDivisionError())


def test_a_json_rpc_error_body_answers_its_request() -> None:
    error = rpc_error(InvalidParams("bad cursor"))
    assert rpc_body(error, 3) == (
        b'{"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad cursor"}}'
    )
    with_data = rpc_error(ResourceNotFound("no resource", data={"uri": "ui://x"}))
    assert b'"data": {"uri": "ui://x"}' in rpc_body(with_data)


def test_the_most_precise_row_wins() -> None:
    # A subclass without a row of its own reads as its parent; one with a row reads as itself.
    class Stale(NotFound):
        pass

    assert http_answer(Stale("gone")).status == 404
    assert rpc_error(ResourceNotFound("x")).code == RESOURCE_NOT_FOUND
    assert rpc_error(Stale("x")).code == types.INVALID_REQUEST
    assert rpc_error(BadRequest("x")).code == types.INVALID_REQUEST


def test_too_many_views_says_when_to_try_again() -> None:
    answer = http_answer(refusals.TooManyViews("m", retry_after_s=30))
    assert (answer.status, answer.body) == (
        503,
        {"error": {"code": "too_many_views", "message": "m"}},
    )
    [(name, seconds)] = answer.headers
    assert name == b"retry-after"
    assert 29 <= int(seconds) <= 30
