"""The apps' questions to the views' pages: `ViewCaller` is the client of a view's call as the app
may reach it while the call runs. An elicitation goes to the page that made the call (a
`QuestionAsked` event of its request) and waits in `PageQuestions` for the person's answer
(`AnswerPageQuestion`); a sampling request goes to the agent's model under the chat's rule (the
app allowed, a model to ask)."""

from __future__ import annotations

import secrets
from typing import Any

import trio

from actors import richforms
from actors.apps.upstream import ServerRequestRefused
from actors.asking import Questions
from actors.catalog import Wire
from actors.messages import HubMessage, SampleForView
from actors.runtime import Mailbox, ask
from actors.views.leases import Lease
from actors.views.messages import QuestionAsked, ViewEvent
from actors.views.refusals import UnknownQuestion

SAMPLING_TIMEOUT_S = 600.0  # a local model may be slow; the app's own timeout bounds it too


class PageQuestions:
    """The questions waiting for a page, each with the view it is for."""

    def __init__(self) -> None:
        self.questions = Questions()
        self.asked: dict[str, str] = {}  # a waiting question's request id → its view's id

    def answer(self, view_id: str, request_id: str, action: Any, content: Any) -> None:
        """Hand the person's answer to the question, or say why it is not taken
        (`UnknownQuestion`, `AnswerRefused`)."""
        if self.asked.get(request_id, view_id) != view_id:
            raise UnknownQuestion(f"this view asked no question '{request_id}'")
        self.questions.answer(request_id, action, content)

    def cancel_view(self, view_id: str, why: str) -> None:
        """The view ended: its questions are answered `cancel` (the app ends its call as it
        chooses)."""
        for request_id, owner in list(self.asked.items()):
            if owner == view_id:
                self.questions.cancel(request_id, why)


class ViewCaller:
    """The `Caller` of a view's request: an elicitation is a `QuestionAsked` event on the
    request's channel, answered from `PageQuestions`; a sampling request goes to the chat hub."""

    on_progress = None

    def __init__(
        self,
        lease: Lease,
        questions: PageQuestions,
        chats: Mailbox[HubMessage] | None,
        answer_s: float,
        events: trio.MemorySendChannel[ViewEvent] | None = None,
        tool: Any = "",
        sampling: bool = False,
    ) -> None:
        self.owner = f"view-{lease.id}"
        self._lease = lease
        self._questions = questions
        self._chats = chats
        self._events = events
        self.tool = str(tool)
        self.sampling = sampling
        # The person has as long to answer as an approval gives them (`answer_s`); the app's
        # own request timeout still bounds the call.
        self.deadline = trio.current_time() + answer_s

    async def ask(self, method: str, params: Wire) -> Wire:
        if method == "sampling/createMessage":
            if self._chats is None:
                raise ServerRequestRefused("this server has no agent to answer sampling")
            app_id, allowed = self._lease.app_id, self.sampling
            return await ask(
                self._chats,
                lambda r: SampleForView(app_id, allowed, dict(params), r),
                SAMPLING_TIMEOUT_S,
            )
        if method not in ("elicitation/create", richforms.METHOD) or self._events is None:
            raise ServerRequestRefused(f"an app view cannot answer {method}")
        form = richforms.form_of(method, params)  # a rich form that cannot be shown: refused
        request_id = "q-" + secrets.token_urlsafe(12)
        question: Wire = {
            "requestId": request_id,
            "app": self._lease.app_id,
            "tool": self.tool,
            "message": form.message,
        }
        if form.url is not None:
            question["url"] = form.url
        else:
            question["requestedSchema"] = form.schema
        if form.rich:
            question["richForm"] = True
        self._questions.asked[request_id] = self._lease.id
        try:
            await self._events.send(QuestionAsked(question))
            return await self._questions.questions.ask(request_id, form.schema, self.deadline)
        finally:
            self._questions.asked.pop(request_id, None)
