"""`GET /apps/oauth/callback/<app>`: where the authorization server sends the person's browser
back after a sign-in. The route owns nothing: the answer (code and state, or error) goes to the
app's actor (`SignInCallback`), which checks the state against the sign-in in progress and
hands the code to the app's OAuth client. The person gets a short page saying what happened.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from quart import Blueprint, Response, request

from actors.messages import (
    SIGN_IN_CALLBACK,
    AppError,
    AppUnavailable,
    RegistryMessage,
    SignInCallback,
    SignInRefused,
    ToApp,
    UnknownApp,
)
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, Overloaded, ask

_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    # The address holds the code: it must not leave in a Referer.
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
}


def signin_blueprint(registry: Mailbox[RegistryMessage], public_url: str | None) -> Blueprint:
    signin = Blueprint("signin", __name__)

    @signin.get(f"{SIGN_IN_CALLBACK}<app_id>")
    async def callback(app_id: str) -> Any:
        args = request.args
        control = f"{public_url or ''}/?app={quote(app_id, safe='')}"

        def answer(reply: Any) -> ToApp:
            return ToApp(
                app_id,
                SignInCallback(
                    state=args.get("state"),
                    reply=reply,
                    code=args.get("code"),
                    iss=args.get("iss"),
                    error=_error(args),
                ),
            )

        try:
            await ask(registry, answer, ASK_TIMEOUT_S)
        except (UnknownApp, AppUnavailable):
            return page(404, "No such app", f"There is no app '{app_id}' that signs in.", control)
        except SignInRefused as error:
            return page(400, "Sign-in refused", error.message, control)
        except (AppError, AskTimeout, Overloaded) as error:
            return page(503, "Sign-in not taken", f"The server could not take it: {error}", control)
        said = f"You are signed in to '{app_id}'. The app is starting; you can close this tab."
        return page(200, "Signed in", said, control)

    return signin


def _error(args: Any) -> str | None:
    """The authorization server's error (RFC 6749 §4.1.2.1), with its description."""
    error = args.get("error")
    if error is None:
        return None
    description = args.get("error_description")
    return f"{error}: {description[:200]}" if description else str(error)


def page(status: int, title: str, text: str, control: str) -> Response:
    html = (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>{escape(title)} · mcpapps</title>"
        "<body style='font-family:system-ui,sans-serif;max-width:40em;margin:3em auto'>"
        f"<h1 id=title>{escape(title)}</h1><p id=message>{escape(text)}</p>"
        f"<p><a href='{escape(control)}'>Back to the control page</a></p></body></html>"
    )
    return Response(html, status=status, content_type="text/html; charset=utf-8", headers=_HEADERS)
