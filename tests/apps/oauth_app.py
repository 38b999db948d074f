"""A protected MCP server and its own authorization server, in one process on loopback, built
from the MCP SDK's server-side auth (`mcp.server.auth`: `AuthSettings`, an
`OAuthAuthorizationServerProvider`, the SDK's metadata, registration, authorize, token and
revocation routes, and its bearer-token check in front of `/mcp`).

What the tests need of a real one: protected-resource metadata pointing at the authorization
server, dynamic client registration (and, with `--client ID:SECRET`, a client registered by
hand), a consent page with an "Approve" button, PKCE, the `resource` binding of tokens, access
tokens that expire after `--token-seconds`, refresh tokens (rotated on use), and a few test
routes to revoke tokens and count what happened (`/test/...`, unauthenticated).

    python oauth_app.py --port 8123 [--token-seconds 3600] [--client ID:SECRET --redirect URI]
"""

from __future__ import annotations

import argparse
import html
import logging
import secrets
import signal
import time

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

SCOPES = ["notes", "extra"]


class Provider:
    """An authorization server that keeps everything in memory and signs in one person."""

    def __init__(self, base: str, token_seconds: int) -> None:
        self.base = base
        self.token_seconds = token_seconds
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.waiting: dict[str, str | None] = {}  # code → state, until the person approves
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {
            "registrations": 0,
            "authorizations": 0,
            "refreshes": 0,
            "resources": [],
            "scopes": [],
        }

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        self.waiting[code.code] = params.state
        return f"{self.base}/consent?code={code.code}"

    def approve(self, code: str) -> str:
        state = self.waiting.pop(code)
        issued = self.codes[code]
        self.stats["resources"].append(issued.resource)
        self.stats["scopes"].append(issued.scopes)
        return construct_redirect_uri(str(issued.redirect_uri), code=code, state=state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.stats["authorizations"] += 1
        return self._issue(client, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: each is used once
        self.stats["refreshes"] += 1
        return self._issue(client, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        client_id = client.client_id or ""
        expires = int(time.time()) + self.token_seconds
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.token_seconds,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


def build(
    port: int, token_seconds: int, client: str | None, redirect: str | None = None
) -> tuple[MCPServer, Provider]:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(base, token_seconds)
    if client is not None:
        client_id, _, secret = client.partition(":")
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret or None,
            redirect_uris=[redirect] if redirect else None,  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_post" if secret else "none",
            scope=" ".join(SCOPES),
        )
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["notes"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["notes"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers (only for a signed-in client)."""
        return a + b

    @server.custom_route("/consent", methods=["GET"])
    async def consent(request: Request) -> Response:
        code = html.escape(request.query_params.get("code", ""))
        return HTMLResponse(
            "<!doctype html><title>Sign in to the fixture</title><h1>Let mcpapps in?</h1>"
            f"<form method=post action=/consent><input type=hidden name=code value='{code}'>"
            "<button id=approve type=submit>Approve</button></form>"
        )

    @server.custom_route("/consent", methods=["POST"])
    async def approved(request: Request) -> Response:
        form = await request.form()
        return RedirectResponse(provider.approve(str(form["code"])), status_code=302)

    @server.custom_route("/test/approve", methods=["POST"])
    async def approve_for_test(request: Request) -> Response:
        """What the consent page's button does, for a test without a browser: the callback
        URL the person's browser would be sent to."""
        body = await request.json()
        return JSONResponse({"callback": provider.approve(body["code"])})

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(
            {
                **provider.stats,
                "accessTokens": sorted(provider.access),
                "refreshTokens": sorted(provider.refresh),
            }
        )

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        """`{"access": true, "refresh": true}`: forget every such token."""
        body = await request.json()
        if body.get("access"):
            provider.access.clear()
        if body.get("refresh"):
            provider.refresh.clear()
        return JSONResponse({"ok": True})

    return server, provider


async def serve(port: int, token_seconds: int, client: str | None, redirect: str | None) -> None:
    server, _ = build(port, token_seconds, client, redirect)
    hosts = [f"127.0.0.1:{port}", f"localhost:{port}"]
    app = server.streamable_http_app(
        json_response=True,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[]
        ),
    )
    config = HypercornConfig()
    config.bind = [f"127.0.0.1:{port}"]
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = 75.0
    stop = trio.Event()

    async def on_signal() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                stop.set()
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_signal)
        await hypercorn_serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-seconds", type=int, default=3600)
    parser.add_argument("--client", default=None, help="a client registered by hand, ID:SECRET")
    parser.add_argument("--redirect", default=None, help="that client's redirect URI")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, force=True)
    trio.run(serve, args.port, args.token_seconds, args.client, args.redirect)


if __name__ == "__main__":
    main()
