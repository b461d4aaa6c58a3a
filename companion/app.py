"""``create_app(settings)``: the one composition root of the daemon.

Resources are opened and closed in ``cleanup_ctx`` (the home folder's lock and token,
plugins and adapters, the store, the WebSocket hub, then the services that bind them),
so a test's ``aiohttp_client(create_app(settings))`` runs exactly what ``mindscape
serve`` runs.
Shutdown closes the WebSockets first (1001), then the store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from aiohttp import web
from aiohttp.log import server_logger

import adapters as adapters_package
from adapters.base import Adapter

from .hub import Hub
from .keys import (
    ACCESS_LOG,
    ADAPTERS,
    DISPATCHER,
    HUB,
    PLUGINS,
    SERVICES,
    SETTINGS,
    STORE,
    TOKENS,
)
from .logs import AccessLog, ServerLog
from .methods import CORE
from .plugins import load_plugins
from .rpc import Dispatcher, Outcome
from .security import ROUTES, Guard
from .services import Services
from .settings import Settings
from .status import healthz, status_page
from .store import SQLiteStore, StoreError
from .tokens import TokenKeeper
from .ws import websocket

log = logging.getLogger("mindscape.app")

#: seconds between checks for sockets authenticated with a rotated token (the token file
#: itself is re-read at most once a second)
TOKEN_CHECK_INTERVAL = 0.5
#: the file in the home folder a running daemon holds locked on Windows (``HomeLock``)
LOCK_FILE = "daemon.lock"


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


class RpcEndpoint:
    """``POST /rpc``: one JSON-RPC request, notification or batch. Made by
    ``create_app`` for its app; takes the services from the app's state on the first
    request (they exist once the app has started)."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self._ready: tuple[Services, Dispatcher] | None = None

    async def __call__(self, request: web.Request, outcome: Outcome) -> web.Response:
        ready = self._ready
        if ready is None:
            ready = self._ready = (self.app[SERVICES], self.app[DISPATCHER])
        services, dispatcher = ready
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
        answer = await dispatcher.handle(body, services.http_context, outcome)
        services.hub.seen(request, outcome.last_method)
        if answer is None:
            return web.Response(status=204)
        return web.Response(body=answer, content_type="application/json")


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


#: the files SQLite keeps beside the store: its write-ahead log, its shared memory, and
#: the rollback journal of a store that was never switched to write-ahead logging
STORE_SIDE_FILES = ("-wal", "-shm", "-journal")


def _store_files_of_ours(store: Path) -> None:
    """``StoreError`` when the store, or a file SQLite keeps beside it, is a symbolic
    link, is not a regular file, or belongs to another user. SQLite follows links and
    opens what it finds: in a home others could write before it was made private (a
    group-writable folder, say), one of them may have put there a link to a file of
    theirs, or a file of their own they hold open, to read every secret choice."""
    for path in (store, *(store.with_name(store.name + s) for s in STORE_SIDE_FILES)):
        try:
            status = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(status.st_mode):
            problem = "is a symbolic link"
        elif not stat.S_ISREG(status.st_mode):
            problem = "is not a regular file"
        elif hasattr(os, "geteuid") and status.st_uid != os.geteuid():
            problem = f"belongs to another user (uid {status.st_uid})"
        else:
            continue
        raise StoreError(
            f"{path} {problem}; the store and the files SQLite keeps beside it must be "
            "regular files of your own, and another user may have put it there while "
            "the home folder was open to others: move it out of the folder and check "
            "what else is in it")


class HomeInUse(Exception):
    """Another daemon holds the lock of this home folder."""

    def __init__(self, home: Path) -> None:
        super().__init__(f"another mindscape daemon is using the home folder {home}")
        self.home = home


if sys.platform == "win32":  # pragma: no cover - the daemon runs on Linux/macOS mainly
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class HomeUnlockable(Exception):
    """The home folder cannot be locked, so a second daemon could not be kept out."""

    def __init__(self, home: Path, reason: str) -> None:
        super().__init__(f"cannot lock the home folder {home} ({reason})")
        self.home = home


class HomeLock:
    """An exclusive lock on the home folder, held while the daemon runs, so that a
    second daemon on the same home refuses to start (two would each keep their own
    watchers and caches of one store, and both go stale). ``flock`` belongs to the open
    folder: the kernel drops it when the process ends, also by ``kill -9``, so a crashed
    daemon never leaves a stale lock; nothing in the home is made or changed for it, and
    no file of it can be deleted or be another user's while the daemon runs (a lock file
    could: each was a way for two daemons to share a home). Windows, which opens no
    folder as a file, locks ``home/daemon.lock`` instead. A home that cannot be locked
    stops the start (``HomeUnlockable``)."""

    def __init__(self, home: Path) -> None:
        self._fd = -1
        try:
            if sys.platform == "win32":  # pragma: no cover
                fd = os.open(home / LOCK_FILE, os.O_RDONLY | os.O_CREAT, 0o600)
            else:
                fd = os.open(home, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise HomeUnlockable(home, exc.strerror or str(exc)) from None
        try:
            locked = _try_lock(fd)
        except OSError as exc:
            # (a file system without flock)
            os.close(fd)
            raise HomeUnlockable(home, exc.strerror or str(exc)) from None
        except BaseException:
            os.close(fd)
            raise
        if not locked:
            os.close(fd)
            raise HomeInUse(home)
        self._fd = fd

    def release(self) -> None:
        """Let go of the lock (calling it twice is harmless)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            _unlock(fd)
            os.close(fd)


async def _home(app: web.Application) -> AsyncIterator[None]:
    """The home folder (private), its lock, and the token in it."""
    settings = app[SETTINGS]
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    _make_private(settings)
    lock = HomeLock(settings.home)
    try:
        keeper = TokenKeeper(settings.token_path)
        warning = keeper.opened.warning(settings.token_command)
        if warning is not None:
            log.warning("%s", warning)
        app[TOKENS] = keeper
        yield
    finally:
        lock.release()


async def _plugins(app: web.Application) -> AsyncIterator[None]:
    """Rule systems and plugin methods from entry points; the adapters."""
    app[PLUGINS] = load_plugins(app[SETTINGS].plugins(), CORE)
    app[ADAPTERS] = load_adapters()
    yield


async def _store(app: web.Application) -> AsyncIterator[None]:
    """The encounter store, open while the app runs."""
    _store_files_of_ours(app[SETTINGS].store_path)
    store = SQLiteStore(app[SETTINGS].store_path)
    await store.open()
    app[STORE] = store
    try:
        yield
    finally:
        await store.close()


async def _hub(app: web.Application) -> AsyncIterator[None]:
    """The WebSocket hub; every socket is closed (1001) before the store closes. While
    the app runs, sockets authenticated with a token that was rotated away are closed
    within about a second (``mindscape token --rotate`` after a leak)."""
    hub = Hub()
    app[HUB] = hub
    watch = asyncio.create_task(_close_sockets_of_old_tokens(app[TOKENS], hub))
    try:
        yield
    finally:
        watch.cancel()
        await hub.close_all()


async def _close_sockets_of_old_tokens(tokens: TokenKeeper, hub: Hub) -> None:
    while True:
        await asyncio.sleep(TOKEN_CHECK_INTERVAL)
        if hub.peers:
            try:
                await hub.close_stale(tokens.generation())
            except Exception:
                log.exception("closing the sockets of a rotated token failed")


async def _services(app: web.Application) -> AsyncIterator[None]:
    """What handlers see: the services bound together, and the dispatcher."""
    settings = app[SETTINGS]
    plugins = app[PLUGINS]
    app[SERVICES] = Services(settings=settings, version=daemon_version(), store=app[STORE],
                             plugins=plugins, adapters=app[ADAPTERS], hub=app[HUB])
    app[DISPATCHER] = Dispatcher(plugins.methods, settings.limits.max_batch)
    try:
        yield
    finally:
        app[ACCESS_LOG].flush()


async def _close_sockets(app: web.Application) -> None:
    # on_shutdown runs before cleanup: sockets get 1001 while the store is still open.
    if HUB in app:
        await app[HUB].close_all()


def create_app(settings: Settings) -> web.Application:
    """The daemon's aiohttp application for ``settings``."""
    # debug=False: aiohttp's own error pages would otherwise show tracebacks whenever
    # the event loop runs in debug mode (``python -X dev``, PYTHONASYNCIODEBUG).
    # auto_decompress=False: aiohttp would inflate a gzip or deflate body on the event
    # loop as it arrives, before any check and even after a refusal (a small bomb stalls
    # every client for seconds); the Guard refuses compressed bodies instead.
    # logger: a malformed request is one line, not an error with a traceback (ServerLog)
    app = web.Application(client_max_size=settings.limits.max_body,
                          handler_args={"debug": False, "auto_decompress": False,
                                        "logger": ServerLog(server_logger)})
    app[SETTINGS] = settings
    access = AccessLog(settings.log_stream,
                       enabled=settings.log_level.lower() in ("debug", "info"))
    app[ACCESS_LOG] = access
    guard = Guard(settings, app, access)
    # Opened in this order, closed in the reverse one.
    app.cleanup_ctx.extend([_home, _plugins, _store, _hub, _services])
    app.on_shutdown.append(_close_sockets)
    # (expect_handler: a refusal instead of aiohttp's unconditional 100 Continue)
    app.router.add_get("/", guard(status_page), expect_handler=guard.expect())
    app.router.add_get("/healthz", guard(healthz), expect_handler=guard.expect())
    app.router.add_post("/rpc", guard.rpc(RpcEndpoint(app)),
                        expect_handler=guard.expect(token=True))
    # (allow_head=False: HEAD is no handshake; it gets the 405 of ROUTES)
    app.router.add_get("/ws", guard(websocket), expect_handler=guard.expect(),
                       allow_head=False)
    # Everything else (other paths, other methods, preflights, targets that are no
    # path) passes the guard too.
    anything = _AnyTarget("/{tail:.*}")
    app.router.register_resource(anything)
    anything.add_route("*", guard(elsewhere), expect_handler=guard.expect())
    return app


class _AnyTarget(web.DynamicResource):
    """The catch-all resource: it matches every request target, also those that are no
    path (``OPTIONS *``, ``CONNECT host:port``), which no path pattern matches and which
    would otherwise get aiohttp's own 404, past the guard. Registered last, it is only
    tried when no other route matched."""

    def _match(self, path: str) -> dict[str, str] | None:
        return {"tail": path}
