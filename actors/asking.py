"""Questions an app asks in the middle of a tool call the chat's agent made.

An app may ask its client for input during a call: `elicitation/create` (a question for the
person) or `sampling/createMessage` (a completion from the host's model). When the agent made
the call, the client is the chat session: an elicitation becomes an `Elicitation` event on the
turn's stream and waits in the session's `Questions` until the person answers (`POST
/apps/chat/<sessionId>/answers`), the app's time runs out, or the turn ends (both a `cancel`).
A sampling request is answered by the agent's own model, when the app is allowed to spend it
(`sampling = true` in `[apps.entries.<id>]`) and the engine has a model.

Who asks is carried by a context variable: the session sets `CURRENT` for the turn it runs, the
tool bridge makes a `ChatCaller` of it for each call, and the registry fills in which app and
tool the call went to (`bind_caller`) before the app can ask anything.
"""

from __future__ import annotations

import collections
import contextvars
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

import attrs
import jsonschema
import trio

from actors.apps.upstream import ServerRequestRefused
from actors.catalog import Wire
from actors.messages import CallFailed
from actors.runtime import Reply
from supervisor.model.errors import BadRequest, Conflict, NotFound, Refusal

logger = logging.getLogger("mcpapps.chat")

ACTIONS = ("accept", "decline", "cancel")
CLOSED_KEPT = 200  # how many finished questions a session remembers, to say why they are gone
# The question gives up this much before the call's own deadline (at most), so that the app
# still has time to act on the `cancel` rather than the call timing out with it.
MARGIN_MAX_S = 1.0
MARGIN_SHARE = 0.2

Sampler = Callable[[Wire], Awaitable[tuple[Wire, str]]]  # params → (result, text for the event)


@attrs.frozen
class Elicitation:
    """A turn's event: an app asks the person (its own text, and its schema or its URL)."""

    request_id: str
    app: str
    tool: str
    message: str
    requested_schema: Wire | None
    url: str | None = None


@attrs.frozen
class Sampled:
    """A turn's event: the agent's model answered an app's sampling request."""

    app: str
    tool: str
    max_tokens: int | None
    text: str


class AnswerRefused(Refusal):
    """An answer that is not taken; its kind says why, and `status` is that reason as a number,
    which the replicas of a chat pass between them (`answer_refused` reads it back)."""

    status: ClassVar[int]


class BadAnswer(AnswerRefused, BadRequest):
    """The answer is malformed or does not match the question: the question still waits."""

    status = 400


class NoSuchQuestion(AnswerRefused, NotFound):
    """No question was asked under that id."""

    status = 404


class QuestionClosed(AnswerRefused, Conflict):
    """The question waits no more (answered, cancelled or timed out)."""

    status = 409


def answer_refused(status: int, message: str) -> AnswerRefused:
    """The refusal a replica reported by its `status`."""
    kinds: dict[int, type[AnswerRefused]] = {
        kind.status: kind for kind in (BadAnswer, NoSuchQuestion, QuestionClosed)
    }
    return kinds.get(status, BadAnswer)(message)


@attrs.define
class _Open:
    schema: Wire | None  # None for URL mode: no content is expected
    reply: Reply[Wire]


class Questions:
    """The questions waiting in one chat session for the person's answer, by request id.
    Owned by the session; its hub hands it the answers (`answer`), the callers of the turn's
    tool calls open and close questions (`ask`)."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._closed: collections.OrderedDict[str, str] = collections.OrderedDict()

    async def ask(self, request_id: str, schema: Wire | None, deadline: float) -> Wire:
        """Wait for the person's answer until `deadline`; then (or when cancelled) the
        question is closed and the answer is `cancel`."""
        question = _Open(schema, Reply())
        self._open[request_id] = question
        why = "the app stopped waiting for it (requestTimeoutSeconds), so it was cancelled"
        try:
            with trio.move_on_at(deadline):
                answer = await question.reply.wait()
                why = "it was answered already"
                return answer
            logger.info("question %s was not answered in time: cancel", request_id)
            return {"action": "cancel"}
        except trio.Cancelled:
            why = "its turn ended, so it was cancelled"
            raise
        finally:
            self._close(request_id, why)

    def answer(self, request_id: str, action: Any, content: Any) -> None:
        """Hand the person's answer to the question it is for, or say why it is not taken."""
        question = self._open.get(request_id)
        if question is None:
            if request_id in self._closed:
                raise QuestionClosed(
                    f"question '{request_id}' is not waiting any more: {self._closed[request_id]}",
                )
            raise NoSuchQuestion(f"this session asked no question '{request_id}'")
        question.reply.send(check_answer(question.schema, action, content))

    def cancel_all(self, why: str) -> None:
        """The turn is over: whatever still waits is answered `cancel`."""
        for request_id, question in list(self._open.items()):
            question.reply.send({"action": "cancel"})
            self._close(request_id, why)

    def cancel(self, request_id: str, why: str) -> None:
        """One question is answered `cancel` (its view went away)."""
        question = self._open.get(request_id)
        if question is not None:
            question.reply.send({"action": "cancel"})
            self._close(request_id, why)

    def waiting(self) -> list[str]:
        return list(self._open)

    def _close(self, request_id: str, why: str) -> None:
        if self._open.pop(request_id, None) is None:
            return
        self._closed[request_id] = why
        while len(self._closed) > CLOSED_KEPT:
            self._closed.popitem(last=False)


def check_answer(schema: Wire | None, action: Any, content: Any) -> Wire:
    """The `ElicitResult` an answer makes, or `BadAnswer` saying what is wrong. Only an
    accepted form answer has content, and it must match the app's schema."""
    if action not in ACTIONS:
        raise BadAnswer(f"'action' must be one of {', '.join(ACTIONS)}, not {action!r}")
    if action != "accept":
        return {"action": action}
    if schema is None:  # URL mode: accepting means the person agreed to open the link
        return {"action": "accept"}
    if content is None:
        content = {}
    if not isinstance(content, Mapping):
        raise BadAnswer("'content' must be an object: the form's fields by name")
    # The app's SDK parses the answer as MCP's `ElicitResult`, which takes no other values: one
    # it cannot parse would fail the whole call and use up the question. Every field is checked,
    # declared by the schema or not: a schema allows fields it does not name unless it says not.
    problems = _carriage_problems(content)
    if problems:
        raise BadAnswer(
            "the answer has values MCP cannot carry (a field may be a string, a number, a"
            f" boolean, null or a list of strings): {'; '.join(problems[:5])}",
        )
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(dict(content)), key=lambda e: list(e.absolute_path))
    if errors:
        said = "; ".join(_where(error) + error.message for error in errors[:5])
        raise BadAnswer(f"the answer does not match the question's schema: {said}")
    return {"action": "accept", "content": dict(content)}


def _carriage_problems(content: Mapping[str, Any]) -> list[str]:
    """What is wrong with each field of an answer whose value MCP cannot carry."""
    problems: list[str] = []
    for name, value in content.items():
        if value is None or isinstance(value, str | int | float):  # a bool is an int
            continue
        if not isinstance(value, list):
            problems.append(f"{name!r} is {_kind(value)}")
        elif wrong := [item for item in value if not isinstance(item, str)]:
            problems.append(f"{name!r} is a list holding {_kind(wrong[0])}")
    return problems


def _kind(value: Any) -> str:
    """A JSON value's kind, as a person reads it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _where(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    return f"{path}: " if path else ""


class TurnAsker:
    """What a turn offers the apps its tool calls reach: its person (through `questions` and
    the turn's events) and its engine's model (`sampler`, None when the engine has none)."""

    def __init__(
        self,
        session_id: str,
        questions: Questions,
        emit: Callable[[Any], None],
        sampler: Sampler | None,
        engine: str,
    ) -> None:
        self.session_id = session_id
        self.questions = questions
        self.emit = emit
        self.sampler = sampler
        self.engine = engine


CURRENT: contextvars.ContextVar[TurnAsker | None] = contextvars.ContextVar(
    "mcpapps_turn_asker", default=None
)


def current_caller() -> ChatCaller | None:
    """A caller for one tool call of the running chat turn; None outside a turn."""
    asker = CURRENT.get()
    return ChatCaller(asker) if asker is not None else None


class ChatCaller:
    """The chat session as the client of one tool call (the app actor's `Caller`)."""

    on_progress = None  # a chat turn shows no progress

    def __init__(self, asker: TurnAsker) -> None:
        self.owner = f"chat-{asker.session_id}"
        self._asker = asker
        self.app: str | None = None
        self.tool = ""
        self.sampling = False
        self.deadline = trio.current_time()

    def bind(self, app_id: str, tool: str, timeout_s: float, sampling: bool) -> None:
        """Where the call goes, set by the registry as it routes the call (before the app can
        ask anything): the question's deadline is the call's own, less a margin."""
        self.app, self.tool, self.sampling = app_id, tool, sampling
        margin = min(MARGIN_MAX_S, timeout_s * MARGIN_SHARE)
        self.deadline = trio.current_time() + timeout_s - margin

    async def ask(self, method: str, params: Wire) -> Wire:
        if self.app is None:
            raise ServerRequestRefused(f"nothing says which app asked {method}")
        if method == "elicitation/create":
            return await self._elicit(params)
        if method == "sampling/createMessage":
            return await self._sample(params)
        raise ServerRequestRefused(f"the chat cannot answer {method}")

    async def _elicit(self, params: Wire) -> Wire:
        assert self.app is not None
        url = params.get("url") if params.get("mode") == "url" else None
        schema = None if url is not None else (params.get("requestedSchema") or {})
        request_id = "q-" + secrets.token_urlsafe(12)
        self._asker.emit(
            Elicitation(
                request_id, self.app, self.tool, str(params.get("message", "")), schema, url
            )
        )
        return await self._asker.questions.ask(request_id, schema, self.deadline)

    async def _sample(self, params: Wire) -> Wire:
        assert self.app is not None
        asker = self._asker
        result, text = await sample(self.app, self.sampling, asker.sampler, asker.engine, params)
        max_tokens = params.get("maxTokens")
        self._asker.emit(
            Sampled(self.app, self.tool, max_tokens if isinstance(max_tokens, int) else None, text)
        )
        return result


async def sample(
    app_id: str, allowed: bool, sampler: Sampler | None, engine: str, params: Wire
) -> tuple[Wire, str]:
    """An app's sampling request answered by the agent's model, or `ServerRequestRefused`
    saying why not: the app is not allowed to (the default), or the engine has no model."""
    if not allowed:
        raise ServerRequestRefused(
            f"app '{app_id}' may not use the agent's model: sampling is off for it"
            f" (set sampling = true in [apps.entries.{app_id}] of config.toml to allow it)"
        )
    if sampler is None:
        raise ServerRequestRefused(
            f"the {engine} agent engine has no model to answer sampling"
            ' requests (use engine = "openai" in [agent])'
        )
    return await sampler(params)


def bind_caller(caller: Any, app_id: str, tool: str, timeout_s: float, sampling: bool) -> None:
    """The registry routes a call: a chat caller learns where it goes."""
    if isinstance(caller, ChatCaller):
        caller.bind(app_id, tool, timeout_s, sampling)


async def answer_input_required(
    caller: ChatCaller,
    tool: Any,
    result: Wire,
    retry: Callable[[Wire], Awaitable[tuple[Any, Wire]]],
) -> Wire:
    """A 2026-07-28 app asks by answering `input_required`: each question goes to the chat
    caller as a handshake-era app's would, and the call (`tool`, a `PublicTool`) is sent again
    with the answers, until the app gives its result. A question nobody may answer (sampling
    not allowed) fails the call with a `CallFailed` that says why."""

    async def again(resumed: Wire) -> Wire:
        return (await retry(resumed))[1]

    try:
        return await until_complete(caller.ask, None, result, again)
    except ServerRequestRefused as refused:
        why = f"tool '{tool.public_name}' of app '{tool.app_id}' asked for input: {refused}"
        raise CallFailed(tool.app_id, why) from None


async def until_complete(
    ask: Callable[[str, Wire], Awaitable[Wire]],
    params: Wire | None,
    result: Wire,
    retry: Callable[[Wire], Awaitable[Wire]],
) -> Wire:
    """The one loop of a 2026-07-28 app's questions: while its answer is `input_required`, each
    of its `inputRequests` is put to `ask`, and the request is sent again (`params`, with the
    answers as `inputResponses` and the app's `requestState`) until the app gives its result.
    An app that asks more than MAX_ROUNDS times is refused (`InputRoundsExceeded`): it would
    otherwise hold its asker for ever."""
    rounds = 0
    while result.get("resultType") == "input_required":
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise InputRoundsExceeded(f"it asked for input more than {MAX_ROUNDS} times")
        responses: Wire = {}
        for key, request in (result.get("inputRequests") or {}).items():
            responses[key] = await ask(request["method"], request.get("params") or {})
        resumed = dict(params or {})
        resumed["inputResponses"] = responses
        if result.get("requestState") is not None:
            resumed["requestState"] = result["requestState"]
        result = await retry(resumed)
    return result


class InputRoundsExceeded(ServerRequestRefused):
    """An app went on answering `input_required` past MAX_ROUNDS."""


MAX_ROUNDS = 10
