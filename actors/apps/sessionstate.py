"""What an app's clients asked of its one session, which they all share: the log level (the last
one set wins, as on the app) and the resource subscriptions (a reference count per client, so
that the app hears the first subscribe and the last unsubscribe of a resource, and one client
cannot end another's). Kept across restarts (handed to the actor of the app's new definition when
a reload changes it) and given to each new session in the era it speaks:
in the handshake era as the requests themselves, on 2026-07-28 (which has neither method) as the
per-request log level and the resources named on the `subscriptions/listen` stream.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import trio

from actors.apps.subscriptions import Subscriptions
from actors.apps.upstream import Upstream, error_text
from actors.catalog import Wire
from actors.messages import SessionSnapshot, UpstreamRequest
from actors.runtime import Answer
from supervisor.model.era import Era
from supervisor.model.errors import UpstreamLost, UpstreamRejected

logger = logging.getLogger("mcpapps.app")

AGENT_OWNER = "mcpapps"  # who subscribes when a request has no client behind it
_SUBSCRIPTION_METHODS = ("resources/subscribe", "resources/unsubscribe")


def _owner(message: UpstreamRequest) -> str:
    return getattr(message.caller, "owner", None) or AGENT_OWNER


class SessionState:
    def __init__(self, app_id: str, request_timeout_s: float) -> None:
        self.app_id = app_id
        self._timeout = request_timeout_s
        self.log_level: str | None = None
        self.subscriptions = Subscriptions()
        # Resource → the clients whose subscribe the app is being asked: an app may send an
        # update right after agreeing, before its answer is read here, and that update is theirs.
        self._asking: dict[str, set[str]] = {}
        self._resubscribe = trio.Event()  # set (and replaced) when the subscribed set changes
        self._awaiting_listen: list[Answer[Any]] = []

    def handle(self, message: UpstreamRequest, upstream: Upstream) -> bool:
        """Answer a request about the session here, if it is one that must be (on 2026-07-28,
        or a subscribe the app has already been asked for); True if answered here."""
        params = message.params or {}
        if message.method == "logging/setLevel" and isinstance(params.get("level"), str):
            self.log_level = upstream.log_level = params["level"]
            if upstream.era is Era.STATELESS:
                message.reply.send({})
                return True
            return False
        uri = params.get("uri")
        if message.method not in _SUBSCRIPTION_METHODS or not isinstance(uri, str):
            return False  # anything wrong with it, the app says
        if upstream.era is Era.STATELESS and not upstream.capabilities.resources:
            return False  # an app without resources says so itself
        owner, table = _owner(message), self.subscriptions
        if message.method == "resources/subscribe":
            if not table.is_wanted(uri) and upstream.era is Era.HANDSHAKE:
                # The app is asked; `answered` records the owner if it agrees, `done` forgets
                # the asking however the request ends.
                self._asking.setdefault(uri, set()).add(owner)
                return False
            if table.add(uri, owner):
                # Answered once the app watches the resource, so no update can be missed.
                self._listen_again(message.reply)
                return True
        elif table.remove(uri, owner):
            if upstream.era is Era.HANDSHAKE:
                return False  # the app hears that its last subscriber left
            self._listen_again()
        message.reply.send({})
        return True

    def answered(self, message: UpstreamRequest) -> None:
        """The app answered a request it was sent: if it agreed to a subscribe, the client is a
        subscriber now."""
        if message.method == "resources/subscribe":
            self.subscriptions.add(str((message.params or {})["uri"]), _owner(message))

    def done(self, message: UpstreamRequest) -> None:
        """A request sent to the app has ended, whichever way (after `answered`, if it was)."""
        uri = (message.params or {}).get("uri")
        if message.method != "resources/subscribe" or not isinstance(uri, str):
            return
        if (asking := self._asking.get(uri)) is not None:
            asking.discard(_owner(message))
            if not asking:
                del self._asking[uri]

    def subscribers(self, uri: str) -> frozenset[str]:
        """The clients an update of `uri` is for: its subscribers, and those whose subscribe
        the app is being asked."""
        owners = self.subscriptions.owners(uri)
        asking = self._asking.get(uri)
        return owners | asking if asking else owners

    def release(
        self, owner: str, upstream: Upstream | None, start: Callable[..., None] | None
    ) -> None:
        """A client is gone: its subscriptions end; a resource nobody wants any more is
        unsubscribed from (with `start`, a task of the incarnation, in the handshake era)."""
        for uri in self.subscriptions.release(owner):
            if upstream is not None and upstream.era is Era.STATELESS:
                self._listen_again()
            elif upstream is not None and start is not None:
                start(self._unsubscribe_quietly, upstream, uri)

    async def _unsubscribe_quietly(self, upstream: Upstream, uri: str) -> None:
        with contextlib.suppress(Exception):
            await upstream.send("resources/unsubscribe", {"uri": uri}, timeout=self._timeout)

    def _listen_again(self, reply: Answer[Any] | None = None) -> None:
        """The set of subscribed resources changed: the listen stream (2026-07-28) is opened
        again with the new set; `reply` gets `{}` once the app has acknowledged it."""
        if reply is not None:
            self._awaiting_listen.append(reply)
        self._resubscribe.set()
        self._resubscribe = trio.Event()

    def _listening(self) -> None:
        for reply in self._awaiting_listen:
            reply.send({})
        self._awaiting_listen.clear()

    async def watch(
        self,
        upstream: Upstream,
        on_list_change: Callable[[], None],
        on_resource_updated: Callable[[str], None],
    ) -> None:
        """Follow the app's change notifications on 2026-07-28 (`Upstream.watch_changes`),
        naming the subscribed resources."""
        await upstream.watch_changes(
            on_list_change,
            on_resource_updated,
            lambda: tuple(self.subscriptions),
            lambda: self._resubscribe,
            self._listening,
        )

    def snapshot(self) -> SessionSnapshot:
        """The clients' requests as a value, for the actor of the app's new definition."""
        return SessionSnapshot(self.log_level, self.subscriptions.items())

    def inherit(self, snapshot: SessionSnapshot) -> None:
        """The clients' requests of the app's predecessor actor are this one's too (a level
        set here already is the later one, and wins)."""
        if self.log_level is None:
            self.log_level = snapshot.log_level
        for uri, owners in snapshot.subscriptions:
            for owner in owners:
                self.subscriptions.add(uri, owner)

    async def restore(self, upstream: Upstream) -> None:
        """A new session (after a restart) gets the log level and the resource subscriptions
        the clients asked of the old one; on 2026-07-28 the listen stream and the per-request
        log level carry them instead.

        What the new session refuses (the app answers with an error: a new version may no
        longer offer logging, subscriptions or that resource) is forgotten, so that a client
        that asks again is answered by the app, not told by us that it is subscribed. No
        answer in time is not a refusal: it is kept, and given again after the next restart."""
        if upstream.era is Era.STATELESS:
            return
        if (level := self.log_level) is not None:
            why = await self._refusal(upstream, "logging/setLevel", {"level": level})
            if why is not None and self.log_level == level:
                self.log_level = upstream.log_level = None
                logger.warning(
                    "app %s: its new session refused the log level %s the clients set (%s);"
                    " it is forgotten",
                    self.app_id,
                    level,
                    why,
                )
        for uri in tuple(self.subscriptions):
            why = await self._refusal(upstream, "resources/subscribe", {"uri": uri})
            if why is not None and (owners := self.subscriptions.forget(uri)):
                logger.warning(
                    "app %s: its new session refused the subscription to %s (%s); its %d"
                    " subscriber(s) are subscribed no more, and a new subscribe asks the app",
                    self.app_id,
                    uri,
                    why,
                    len(owners),
                )

    async def _refusal(self, upstream: Upstream, method: str, params: Wire) -> str | None:
        """Send a request again on a new session: why the app refused it, or None."""
        try:
            await upstream.send(method, params, timeout=self._timeout)
        except UpstreamLost:
            raise
        except UpstreamRejected as error:
            return error_text(error)
        except Exception as error:
            logger.warning(
                "app %s: could not restore %s: %s", self.app_id, method, error_text(error)
            )
        return None
