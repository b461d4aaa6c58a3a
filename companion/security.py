"""The access token and the one security middleware.

Order of checks for every request (cheapest refusal first, before any JSON-RPC):
1. ``Host`` must be a loopback name or the configured host (with or without the port),
   else 403: a page on another domain re-pointed at 127.0.0.1 (DNS rebinding) carries
   its own name in ``Host``.
2. A request with an ``Origin`` not on the allow-list is refused with 403 and no CORS
   headers; an allowed origin gets ``Access-Control-Allow-Origin`` on every answer.
3. ``OPTIONS`` is a CORS preflight: answered here (methods, headers, max-age).
4. ``/rpc`` needs ``Authorization: Bearer <token>`` (compared in constant time), else 401.
   ``/ws`` authenticates itself (the browser cannot set headers on a WebSocket).
5. A declared body over the limit is 413 before it is read; ``client_max_size`` catches
   bodies without a length.
Then one JSON line is logged per request: path, status, duration and, for ``/rpc``, the
methods called and their outcome. Never the token, never the ``Authorization`` header.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Middleware

from .logs import request_line
from .settings import Settings

TOKEN_BYTES = 32
PREFLIGHT_MAX_AGE = "600"
ALLOW_METHODS = "GET, POST, OPTIONS"
ALLOW_HEADERS = "Authorization, Content-Type"
#: Paths that need the bearer token; ``/ws`` authenticates in its handler.
PROTECTED = frozenset({"/rpc"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# -- the token file ---------------------------------------------------------------------
def _write_token(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_token(path: Path) -> str | None:
    """The token in ``path``, or ``None`` when there is no usable one."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return token or None


def ensure_token(path: Path) -> str:
    """The token in ``path``; created (``secrets.token_urlsafe(32)``, mode 0600) when
    missing. A token file readable by others is narrowed to 0600."""
    token = read_token(path)
    if token is None:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        _write_token(path, token)
    elif os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return token


def rotate_token(path: Path) -> str:
    """Replace the token with a new one; a running daemon notices within a second."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    _write_token(path, token)
    return token


def same_token(given: str, token: str) -> bool:
    """Constant-time comparison (no early exit that would time the token out)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


class TokenKeeper:
    """The current token, re-read when the file changes (checked at most once a second),
    so ``mindscape token --rotate`` needs no restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = ensure_token(path)
        self._mtime = self._stat()
        self._checked = time.monotonic()

    def _stat(self) -> float:
        try:
            return self.path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def current(self) -> str:
        now = time.monotonic()
        if now - self._checked >= 1.0:
            self._checked = now
            mtime = self._stat()
            if mtime != self._mtime:
                self._mtime = mtime
                self._token = read_token(self.path) or self._token
        return self._token

    def accepts_bearer(self, header: str | None) -> bool:
        """True when ``header`` is ``Bearer <the token>``."""
        if not header or header[:7].lower() != "bearer ":
            return False
        return same_token(header[7:].strip(), self.current())


# -- host and origin ----------------------------------------------------------------------
def allowed_hosts(settings: Settings) -> frozenset[str]:
    """Every ``Host`` header value accepted: loopback names and the configured host,
    each alone and with the port."""
    names = {"localhost", "127.0.0.1", "[::1]"}
    host = settings.host.lower()
    names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    out = set(names)
    for name in names:
        out.add(f"{name}:{settings.port}")
    return frozenset(out)


def _refuse(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


def security_middleware(settings: Settings,
                        tokens: Callable[[web.Request], TokenKeeper]) -> Middleware:
    """The single middleware that guards every request and logs it."""
    hosts = allowed_hosts(settings)
    origins = frozenset(settings.allow_origins)
    max_body = settings.limits.max_body

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        response: web.StreamResponse | None = None
        status = 500
        try:
            response = await _guarded(request, handler)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            origin = request.headers.get("Origin")
            if origin is not None and origin in origins:
                exc.headers["Access-Control-Allow-Origin"] = origin
                exc.headers["Vary"] = "Origin"
            raise
        finally:
            fields: dict[str, object] = {
                "http": request.method, "path": request.path, "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3)}
            outcome = request.get("outcome")
            if outcome is not None:
                fields["methods"] = outcome.methods
                fields["errors"] = outcome.errors
                fields["outcome"] = "error" if outcome.errors else "ok"
            request_line(fields)

    async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        # The raw header: ``request.host`` would fall back to the machine's name.
        if request.headers.get("Host", "").lower() not in hosts:
            return _refuse(403, "this Host is not allowed (use 127.0.0.1 or localhost)")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in origins:
            return _refuse(403, "this Origin is not allowed; start the daemon with "
                                "--allow-origin ORIGIN to allow it")
        response: web.StreamResponse
        if request.method == "OPTIONS":
            response = web.Response(status=204)
            response.headers["Allow"] = ALLOW_METHODS
            if origin is not None:
                response.headers.update({
                    "Access-Control-Allow-Methods": ALLOW_METHODS,
                    "Access-Control-Allow-Headers": ALLOW_HEADERS,
                    "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
                })
        elif request.path in PROTECTED and not tokens(request).accepts_bearer(
                request.headers.get("Authorization")):
            response = _refuse(401, "missing or wrong token: send Authorization: Bearer "
                                    "<token> (see `mindscape token`)")
            response.headers["WWW-Authenticate"] = 'Bearer realm="mindscape"'
        elif request.content_length is not None and request.content_length > max_body:
            response = _refuse(413, f"the request body exceeds {max_body} bytes")
        else:
            response = await handler(request)
        if origin is not None and not response.prepared:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Vary"] = "Origin"
        return response

    return guard
