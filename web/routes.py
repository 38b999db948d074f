"""The front door's plain HTTP routes (Quart-Trio): `/apps/health`, `/login`, and the
blueprints of `/apps/chat` (`web.chat.stream`), `/apps/views` (`web.views.routes`) and the admin
API (`web.admin.api`).
Auth, Host and Origin are checked before a request gets here (`web.asgi`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import attrs
from quart import redirect, request
from quart.json.provider import DefaultJSONProvider
from quart_trio import QuartTrio

from actors.files.messages import WorkspaceMessage
from actors.messages import AppStatus, HubMessage, RegistryMessage, Snapshot
from actors.metrics import Metrics
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.views.messages import ViewMessage
from supervisor.model import jsonout
from supervisor.model.errors import Unauthorized
from supervisor.model.lifecycle import AppState
from supervisor.model.reload import Reload
from web.admin.api import admin_blueprint
from web.admin.cluster import cluster_blueprint
from web.admin.sessions import sessions_blueprint
from web.chat.answers import answers_blueprint
from web.chat.stream import chat_blueprint
from web.control import control_blueprint, ui_shown
from web.errors import register
from web.files.routes import files_blueprint
from web.plugins.entryroutes import entrypoints_blueprint
from web.plugins.mentionroutes import mentions_blueprint
from web.plugins.onboarding import onboarding_blueprint
from web.plugins.settingsroutes import settings_blueprint
from web.security import SESSION_COOKIE, AccessPolicy, session_value, token_matches
from web.signin import signin_blueprint
from web.views.contextroutes import model_context_blueprint
from web.views.fileroutes import file_views_blueprint
from web.views.routes import model_contexts, views_blueprint
from web.views.tools import view_tools_blueprint


class FiniteJSONProvider(DefaultJSONProvider):
    """Quart's JSON, with every float that is not finite written as null (`jsonout`): an
    answer holding NaN or Infinity would not parse."""

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("default", self.default)
        kwargs.setdefault("ensure_ascii", self.ensure_ascii)
        kwargs.setdefault("sort_keys", self.sort_keys)
        return jsonout.dumps(obj, **kwargs)


def create_app(
    registry: Mailbox[RegistryMessage],
    policy: AccessPolicy,
    sandbox_origin: str | None,
    *,
    chats: Mailbox[HubMessage],
    metrics: Metrics,
    reload: Reload | None = None,
    public_url: str | None = None,
    views: Mailbox[ViewMessage] | None = None,
    files: Mailbox[WorkspaceMessage] | None = None,
    ui_settings: Callable[[str], Mapping[str, Any]] | None = None,
    app_frames: str | None = None,
) -> Any:
    """`public_url` (no trailing slash), when set, is the base of every URL handed out: the
    request's own Host and any X-Forwarded-* headers are never trusted for that."""
    # No static folder of Quart's own: its default route would serve any file under the working
    # directory's `static/`; the page's files are web/control.py's, and only those.
    app = QuartTrio("mcpapps", static_folder=None)
    app.json = FiniteJSONProvider(app)
    contexts = functools.partial(model_contexts, views) if views is not None else None
    app.register_blueprint(chat_blueprint(chats, contexts))
    app.register_blueprint(answers_blueprint(chats, registry))
    if views is not None:
        workspace = files is not None
        app.register_blueprint(views_blueprint(views, registry, chats, ui_settings, workspace))
        app.register_blueprint(file_views_blueprint(views))
        app.register_blueprint(model_context_blueprint(views))
        app.register_blueprint(view_tools_blueprint(views))
    app.register_blueprint(admin_blueprint(registry, metrics, reload=reload))
    app.register_blueprint(sessions_blueprint(chats))
    app.register_blueprint(settings_blueprint(registry))
    app.register_blueprint(mentions_blueprint(registry))
    app.register_blueprint(entrypoints_blueprint(registry))
    app.register_blueprint(onboarding_blueprint(registry, chats))
    app.register_blueprint(cluster_blueprint(chats))
    app.register_blueprint(
        control_blueprint(sandbox_origin, app_frames, workspace=files is not None)
    )
    app.register_blueprint(signin_blueprint(registry, public_url))
    app.register_blueprint(files_blueprint(files, registry))

    @app.get("/apps/health")
    async def health() -> Any:
        statuses = await ask(registry, Snapshot, ASK_TIMEOUT_S)
        # What the catalogs of the Running apps show, not only what the manifests claim.
        shown = await ui_shown(registry, statuses)
        statuses = tuple(attrs.evolve(s, has_ui=shown.get(s.id, s.has_ui)) for s in statuses)
        base = public_url or request.host_url.rstrip("/")
        return health_body(statuses, base, sandbox_origin, request.args.get("app"))

    @app.get("/login")
    async def login() -> Any:
        """Trade the token for a session cookie, so that a browser can use the control UI."""
        token = request.args.get("token")
        if policy.require_auth and not token_matches(policy, token):
            raise Unauthorized("the token is missing or wrong")
        response = redirect(f"{public_url or ''}{landing(request.args)}", 303)
        if policy.token is not None and token_matches(policy, token):
            value = session_value(policy.token)
            response.set_cookie(SESSION_COOKIE, value, httponly=True, samesite="Strict", path="/")
        return response

    register(app)
    return app


# The page's link parameters that travel through /login.
LINK_KEYS = ("open", "args", "app", "file", "with", "entry", "path", "session", "tab")


def landing(args: Any) -> str:
    """Where `/login` sends the browser: the control page, keeping a view's link (`open`,
    `args`), a file's (`file`, `with`), an app's (`app`) or an entry point's (`entry`, `path`;
    `session`, `tab`) so that a shared or bookmarked link survives logging in."""
    kept = {key: args[key] for key in LINK_KEYS if args.get(key)}
    return f"/?{urlencode(kept)}" if kept else "/"


def health_body(
    statuses: tuple[AppStatus, ...], base: str, sandbox_origin: str | None, wanted: str | None
) -> tuple[dict[str, Any], int]:
    """The selected app is `?app=` if given, else the first Running app with a UI, else the
    first Running app. An `?app=` that names no app is not an error (the page still loads, on
    the default app), but `warning` says so, so that a mistyped link does not pass unseen."""
    running = [s for s in statuses if s.state is AppState.RUNNING]
    selected = next((s for s in statuses if s.id == wanted), None) if wanted else None
    warning = None
    if selected is None:
        selected = next((s for s in running if s.has_ui), None) or next(iter(running), None)
        if wanted:
            instead = f"; selected '{selected.id}' instead" if selected else ""
            warning = f"there is no app '{wanted}'{instead}"
    body: dict[str, Any] = {
        "ok": bool(running),
        "name": selected.id if selected else None,
        "mcp": f"{base}/apps/mcp/{selected.id}" if selected else None,
        "sandbox": f"{sandbox_origin}/sandbox" if sandbox_origin else None,
        "apps": [
            {
                "id": s.id,
                "state": s.state.value,
                "hasUi": s.has_ui,
                "mcp": f"{base}/apps/mcp/{s.id}",
            }
            for s in statuses
        ],
    }
    if warning is not None:
        body["warning"] = warning
    return body, 200 if running else 503
