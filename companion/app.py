"""``create_app(settings)``: the one composition root of the daemon.

Resources are opened and closed in ``cleanup_ctx`` (token, plugins and adapters, the
store, the WebSocket hub, then the services that bind them), so a test's
``aiohttp_client(create_app(settings))`` runs exactly what ``mindscape serve`` runs.
Shutdown closes the WebSockets first (1001), then the store.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version

from aiohttp import web

import adapters as adapters_package
from adapters.base import Adapter

from .hub import Hub
from .keys import ACCESS_LOG, DISPATCHER, OUTCOME, SERVICES, SETTINGS, TOKENS
from .logs import AccessLog
from .methods import CORE
from .plugins import load_plugins
from .rpc import Dispatcher, Outcome
from .security import Guard
from .services import Services
from .settings import Settings
from .status import healthz, status_page
from .store import SQLiteStore
from .tokens import TokenKeeper
from .ws import websocket

log = logging.getLogger("mindscape.app")


def daemon_version() -> str:
    """The installed distribution's version."""
    try:
        return version("mindscape")
    except PackageNotFoundError:
        return "0.0.0+unknown"


def load_adapters() -> dict[str, Adapter]:
    """The adapters package's registry; empty (and logged) when it cannot be read."""
    try:
        return adapters_package.registry()
    except Exception:
        log.warning("adapters.registry() failed: no adapters", exc_info=True)
        return {}


async def rpc_endpoint(request: web.Request) -> web.Response:
    """``POST /rpc``: one JSON-RPC request, notification or batch."""
    app = request.app
    services = app[SERVICES]
    if request.content.is_eof():
        # The whole body is here already (the usual case): no timer needed.
        body = await request.read()
    else:
        try:
            async with asyncio.timeout(services.settings.limits.read_timeout):
                body = await request.read()
        except TimeoutError:
            return web.json_response({"error": "the request body came too slowly"},
                                     status=408, headers={"Connection": "close"})
    outcome = Outcome()
    request[OUTCOME] = outcome
    answer = await app[DISPATCHER].handle(body, services.http_context, outcome)
    services.hub.seen(request, outcome.calls[0][0] if outcome.calls else None)
    if answer is None:
        return web.Response(status=204)
    return web.Response(text=answer, content_type="application/json")


ROUTES = {"/": "GET, HEAD", "/healthz": "GET, HEAD", "/rpc": "POST", "/ws": "GET"}


async def elsewhere(request: web.Request) -> web.Response:
    """404 for unknown paths, 405 (with ``Allow``) for a known path's other methods."""
    allowed = ROUTES.get(request.path)
    if allowed is not None:
        return web.json_response({"error": f"use {allowed} on {request.path}"},
                                 status=405, headers={"Allow": allowed})
    return web.json_response({"error": "not found"}, status=404)


def _make_private(settings: Settings) -> None:
    """The home holds the token and every pending secret choice: other local users must
    not read it, also when the folder was made by hand with the usual 0755."""
    if os.name != "posix":
        return
    mode = settings.home.stat().st_mode & 0o777
    if mode & 0o077:
        settings.home.chmod(mode & 0o700)
        log.warning("home folder %s was readable by others; narrowed to %o",
                    settings.home, mode & 0o700)


async def _services(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    _make_private(settings)
    app[TOKENS] = TokenKeeper(settings.token_path)
    plugins = load_plugins(settings.plugins(), CORE)
    store = SQLiteStore(settings.store_path)
    await store.open()
    hub = Hub()
    services = Services(settings=settings, version=daemon_version(), store=store,
                        plugins=plugins, adapters=load_adapters(), hub=hub)
    app[SERVICES] = services
    app[DISPATCHER] = Dispatcher(plugins.methods, settings.limits.max_batch)
    try:
        yield
    finally:
        await hub.close_all()
        await store.close()
        app[ACCESS_LOG].flush()


async def _close_sockets(app: web.Application) -> None:
    # on_shutdown runs before cleanup: sockets get 1001 while the store is still open.
    if SERVICES in app:
        await app[SERVICES].hub.close_all()


def create_app(settings: Settings) -> web.Application:
    """The daemon's aiohttp application for ``settings``."""
    app = web.Application(client_max_size=settings.limits.max_body)
    guard = Guard(settings, lambda request: request.app[TOKENS])
    app[SETTINGS] = settings
    app[ACCESS_LOG] = AccessLog(settings.log_stream,
                                enabled=settings.log_level.lower() in ("debug", "info"))
    app.cleanup_ctx.append(_services)
    app.on_shutdown.append(_close_sockets)
    app.router.add_get("/", guard(status_page))
    app.router.add_get("/healthz", guard(healthz))
    app.router.add_post("/rpc", guard(rpc_endpoint, token=True))
    app.router.add_get("/ws", guard(websocket))
    # Everything else (other paths, other methods, preflights) passes the guard too.
    app.router.add_route("*", "/{tail:.*}", guard(elsewhere))
    return app
