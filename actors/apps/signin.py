"""Signing in to an http app's authorization server (`auth = "oauth"`), with the MCP SDK's own
OAuth client (`mcp.client.auth.OAuthClientProvider`, an httpx auth on the app's HTTP client).

The SDK does the flow: discovery (RFC 9728 protected-resource metadata, RFC 8414 / OpenID
authorization-server metadata), dynamic client registration or a client ID metadata document,
PKCE S256, the `resource` parameter, the token exchange and refresh. What is ours:

- `TokenFile`, the SDK's `TokenStorage`: one JSON file per app in the state dir, mode 0600,
  with the token, when it expires, and the client registration. A configured client
  (`client_id`, `client_secret`) is given to the SDK as its registration and never written.
- `AppAuth`, the SDK's provider with four small additions the SDK leaves to its caller: the
  token's expiry read back from the file (the SDK keeps only `expires_in`, so after a restart
  it would take an expired token for a good one), a refresh a little before expiry rather than
  after, one refresh when the server refuses a token the clock still calls good (on 401), and
  the words of a refused refresh, kept for the person.
- `SignInFlow`, the SDK's redirect and callback handlers as messages: the redirect handler
  tells the app actor where the person must sign in (`SignInNeeded`), and the callback handler
  waits for the answer the front door's callback route brings to the actor (`SignInCallback`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import attrs
import httpx2
import trio
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import ValidationError

from actors.messages import SIGN_IN_CALLBACK, AppMessage, SignInAnswer, SignInNeeded
from supervisor import __version__

logger = logging.getLogger("mcpapps.app")

SIGN_IN_FOLDER = "signin"
# Refresh this long before the token expires (at most a tenth of its life): a request sent
# with a token about to expire would reach the server expired.
REFRESH_EARLY_S = 30.0


@attrs.frozen
class SignInPlace:
    """Where sign-ins are kept and answered: the folder of token files (in the state dir) and
    the front door's base URL (`public_url` when set), under which the callback is."""

    folder: Path
    base_url: str

    def callback_url(self, app_id: str) -> str:
        return f"{self.base_url}{SIGN_IN_CALLBACK}{quote(app_id, safe='')}"

    def token_path(self, app_id: str) -> Path:
        return self.folder / f"{app_id}.json"


@attrs.frozen
class Client:
    """A client registered by hand with the authorization server (`client_id`, and
    `client_secret` already expanded)."""

    client_id: str
    client_secret: str | None = None


class TokenFile:
    """The SDK's `TokenStorage` for one app: `{"token", "expiresAt", "client"}` in one JSON
    file, written whole (a temporary file renamed over it), mode 0600 in a 0700 folder. The
    files are small and written rarely, so plain file calls are used."""

    def __init__(self, path: Path, redirect_uri: str, client: Client | None = None) -> None:
        self.path = path
        self._redirect_uri = redirect_uri
        self._client = client

    # ---- the SDK's TokenStorage --------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        data = self._read().get("token")
        try:
            return None if data is None else OAuthToken.model_validate(data)
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + int(tokens.expires_in)
        data = self._read()
        data.update(token=tokens.model_dump(mode="json", exclude_none=True), expiresAt=expires_at)
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._client is not None:
            return OAuthClientInformationFull(
                client_id=self._client.client_id,
                client_secret=self._client.client_secret,
                redirect_uris=[self._redirect_uri],  # type: ignore[list-item]  # pydantic parses
                token_endpoint_auth_method=(
                    "client_secret_post" if self._client.client_secret else "none"
                ),
            )
        data = self._read().get("client")
        try:
            client = None if data is None else OAuthClientInformationFull.model_validate(data)
        except ValidationError:
            return None
        # Registered for another callback (the front door moved): register again.
        if client is None or self._redirect_uri not in [str(u) for u in client.redirect_uris or ()]:
            return None
        return client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._client is not None:
            return  # the configured client is the config's, not the file's
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    # ---- ours ----------------------------------------------------------------------------------

    def expires_at(self) -> float | None:
        value = self._read().get("expiresAt")
        return float(value) if isinstance(value, int | float) else None

    def forget_tokens(self) -> None:
        """The token is no longer good: drop it, keep the client registration."""
        data = self._read()
        if data.pop("token", None) is not None:
            data.pop("expiresAt", None)
            self._write(data)

    def forget(self) -> bool:
        """Forget the sign-in altogether (`mcpapps logout`); whether there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            # Never the content in the log: it holds the token.
            logger.warning("sign-in file %s cannot be read (%s); sign in again", self.path, error)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(temporary, self.path)


class _AskedScopes(OAuthClientMetadata):
    """Client metadata whose scope stays the one the person configured (`scopes`): the SDK
    would otherwise replace it with the scopes the server names, before registering."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "scope":
            super().__setattr__(name, value)


def client_metadata(redirect_uri: str, scopes: tuple[str, ...]) -> OAuthClientMetadata:
    kind = _AskedScopes if scopes else OAuthClientMetadata
    return kind(
        client_name="mcpapps",
        software_id="mcpapps",
        software_version=__version__,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses it
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=" ".join(scopes) or None,
    )


class AppAuth(OAuthClientProvider):
    """The SDK's OAuth client for one incarnation of one app, with the additions the module
    docstring lists. `refused` is why the authorization server last refused a refresh."""

    def __init__(
        self, server_url: str, metadata: OAuthClientMetadata, file: TokenFile, flow: SignInFlow
    ) -> None:
        super().__init__(
            server_url,
            metadata,
            file,
            redirect_handler=flow.redirect,
            callback_handler=flow.callback,
        )
        self._file = file
        self.refused: str | None = None

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._file.expires_at()

    def _refresh_soon(self) -> None:
        """Count the token as expired a little early (so that it is refreshed first)."""
        context = self.context
        expiry, token = context.token_expiry_time, context.current_tokens
        if expiry is None or token is None or token.expires_in is None:
            return
        early = min(REFRESH_EARLY_S, 0.1 * int(token.expires_in))
        if time.time() >= expiry - early:
            context.token_expiry_time = time.time() - 1

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow; when the server refuses (401) a token the clock still calls good,
        that flow is left before it sends the person to sign in, and run once more with the
        token counted as expired: it refreshes first."""
        retried = False
        while True:
            self._refresh_soon()
            flow = super()._auth_flow(request)
            retry = False
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if (
                        outgoing is request
                        and response.status_code == 401
                        and not retried
                        and "authorization" in request.headers
                        and self.context.can_refresh_token()
                    ):
                        retry = True
                        break
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
            if not retry:
                return
            retried = True
            self.context.token_expiry_time = time.time() - 1
            del request.headers["authorization"]

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code != 200:
            self.refused = refusal_text(response.status_code, await response.aread())
            self._file.forget_tokens()  # it cannot be renewed: the person signs in again
        return await super()._handle_refresh_response(response)


def refusal_text(status: int, body: bytes) -> str:
    """How a refused refresh reads: the OAuth error and its description, never the body
    whole."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        said = data["error"]
        if isinstance(data.get("error_description"), str):
            said += f": {data['error_description'][:200]}"
        return f"the authorization server refused to renew the sign-in (HTTP {status}, {said})"
    return f"the authorization server refused to renew the sign-in (HTTP {status})"


class SignInFlow:
    """The SDK's redirect and callback handlers for one incarnation: the first tells the app
    actor where the person must go, the second waits for the answer the actor passes on."""

    def __init__(self, tell: Callable[[AppMessage], None], incarnation: object) -> None:
        self._tell = tell
        self._incarnation = incarnation
        self._answers_in, self._answers = trio.open_memory_channel[SignInAnswer](1)
        self.auth: AppAuth | None = None

    async def redirect(self, url: str) -> None:
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        why = self.auth.refused if self.auth is not None else None
        self._tell(SignInNeeded(url, state, self._answers_in, self._incarnation, why))

    async def callback(self) -> AuthorizationCodeResult:
        answer = await self._answers.receive()
        return AuthorizationCodeResult(code=answer.code, state=answer.state, iss=answer.iss)


def app_auth(
    url: str,
    file: TokenFile,
    redirect_uri: str,
    scopes: tuple[str, ...],
    flow: SignInFlow,
) -> AppAuth:
    auth = AppAuth(url, client_metadata(redirect_uri, scopes), file, flow)
    flow.auth = auth
    return auth
