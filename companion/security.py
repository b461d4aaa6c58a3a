"""The one security layer (``Guard``), wrapped around every route.

Order of checks for every request (cheapest refusal first, before any JSON-RPC):
1. ``Host`` must be a loopback name or the configured host (with or without a port),
   else 403: a page on another domain re-pointed at 127.0.0.1 (DNS rebinding) carries
   its own name in ``Host``.
2. A request with an ``Origin`` not on the allow-list is refused with 403 and no CORS
   headers; an allowed origin gets ``Access-Control-Allow-Origin`` on every answer.
3. ``OPTIONS`` is a CORS preflight: answered here (methods, headers, max-age).
4. ``/rpc`` needs ``Authorization: Bearer <token>`` (compared in constant time), else 401.
   ``/ws`` authenticates itself (the browser cannot set headers on a WebSocket); ``/``
   and ``/healthz`` need no token.
5. A declared body over the limit is 413 before it is read; ``client_max_size`` catches
   bodies without a length.
A request that asks ``Expect: 100-continue`` gets its refusal instead of ``100 Continue``
(``Guard.expect``): its body is never invited only to be refused.
Every answer says ``Server: mindscape``. A fault in a handler becomes a JSON 500 with
an error id (the log has the traceback under it), never aiohttp's page with the
exception's text.
Then one JSON line is logged per request: path, status, duration and, for ``/rpc``, the
methods called and their outcome. Never the token, never the ``Authorization`` header.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping

from aiohttp import HttpVersion11, web

from .errors import logged_error_id
from .keys import TOKENS
from .logs import AccessLog, kept
from .rpc import Outcome
from .settings import Settings
from .tokens import TokenKeeper

#: The ``Server`` header of every answer: aiohttp's default names itself and the Python
#: version, and a page probing for versions should learn only what this is.
SERVER = "mindscape"
PREFLIGHT_MAX_AGE = "600"
ALLOW_HEADERS = "Authorization, Content-Type"
#: Every path the daemon serves and the methods it takes there (``OPTIONS`` aside): a
#: preflight is answered for these, the rest is 404 (``app.elsewhere``).
ROUTES = {"/": "GET, HEAD", "/healthz": "GET, HEAD", "/rpc": "POST", "/ws": "GET"}

log = logging.getLogger("mindscape.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RpcHandler = Callable[[web.Request, Outcome], Awaitable[web.StreamResponse]]


# -- host and origin ----------------------------------------------------------------------
def allowed_host_names(settings: Settings) -> frozenset[str]:
    """Host names accepted in ``Host``: the loopback names and the configured host."""
    host = settings.host.lower()
    configured = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return frozenset({"localhost", "127.0.0.1", "[::1]", configured})


def host_name(header: str) -> str | None:
    """The name part of a ``Host`` header (``[::1]`` keeps its brackets); ``None`` when
    what follows the name is not ``:<digits>``. Any port is fine: a page that reached
    us through another name (DNS rebinding) cannot make its browser send ours."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[:end + 1], value[end + 1:]
    else:
        name, sep, port = value.partition(":")
        rest = sep + port
    # (ASCII digits only: str.isdigit takes "١٢" too)
    if rest and not (rest[0] == ":" and rest[1:].isascii() and rest[1:].isdigit()):
        return None
    return name


def _refuse(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


def _finish(headers: MutableMapping[str, str], origin: str | None) -> None:
    """What every answer carries: our ``Server``, and CORS for an allowed origin."""
    headers["Server"] = SERVER
    if origin is not None:
        headers["Access-Control-Allow-Origin"] = origin
        headers["Vary"] = "Origin"


def _fault(path: str) -> web.Response:
    """500 for a fault in a handler, logged with its traceback under an error id. Not
    aiohttp's page: that carries the exception's text, and its traceback when the event
    loop runs in debug mode (``python -X dev``). The path is the client's text, cut as
    the request line's is (``kept``)."""
    error_id = logged_error_id(log, "internal error", path=kept(path))
    return web.json_response({"error": f"internal error {error_id}: the daemon's log has "
                                       "the details", "error_id": error_id}, status=500)


class Guard:
    """The one security layer, wrapped around every route's handler (a catch-all route
    included, so no request escapes it). A wrapper, not a middleware: aiohttp's
    middleware chain costs a measurable share of a small call, and one layer is all we
    need. Made by ``create_app`` for its app; it takes the token keeper from the app's
    state on the first request (the keeper exists once the app has started)."""

    def __init__(self, settings: Settings, app: web.Application, access: AccessLog) -> None:
        self.hosts = allowed_host_names(settings)
        # The usual Host values, looked up whole before any parsing.
        self.exact_hosts = self.hosts | {f"{h}:{settings.port}" for h in self.hosts}
        self.origins = frozenset(settings.allow_origins)
        self.max_body = settings.limits.max_body
        self.app = app
        self.access = access
        self._tokens: TokenKeeper | None = None

    def __call__(self, handler: Handler) -> Handler:
        """``handler`` behind the checks but the token's: the routes other than /rpc (the
        status page and /healthz show nothing secret; /ws checks the token itself, in a
        subprotocol or its first message, ``companion/ws.py``)."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            return await self.guard(request, handler, False, None)

        return guarded

    def rpc(self, handler: RpcHandler) -> Handler:
        """A JSON-RPC endpoint behind the checks and the token; it gets the ``Outcome``
        the request line reports."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            return await self.guard(request, handler, True, Outcome())

        return guarded

    def _refusal(self, status: int, path: str) -> str:
        """What to say for an ``HTTPException`` aiohttp raised in a handler."""
        if status == 413:
            return f"the request body exceeds {self.max_body} bytes"
        if path == "/ws" and status in (400, 405):
            return ("not a WebSocket handshake: connect to /ws with a WebSocket client "
                    "(GET with Upgrade: websocket)")
        return f"the request was refused ({status})"

    def tokens(self) -> TokenKeeper:
        """The app's token keeper."""
        keeper = self._tokens
        if keeper is None:
            keeper = self._tokens = self.app[TOKENS]
        return keeper

    def _foreign(self, headers: Mapping[str, str], origin: str | None) -> web.Response | None:
        """The 403 of a ``Host`` or an ``Origin`` not allowed, or None."""
        # The raw header: ``request.host`` would fall back to the machine's name.
        host = headers.get("Host", "")
        if host not in self.exact_hosts and host_name(host) not in self.hosts:
            return _refuse(403, "this Host is not allowed (use 127.0.0.1 or localhost)")
        if origin is not None and origin not in self.origins:
            return _refuse(403, "this Origin is not allowed; start the daemon with "
                                "--allow-origin ORIGIN to allow it")
        return None

    def _unfit(self, request: web.Request, token: bool) -> web.Response | None:
        """The 401 of a missing or wrong token (with ``token``), the 413 of a declared
        body over the limit, the 415 of a compressed one, or None."""
        headers = request.headers
        if token and not self.tokens().accepts_bearer(headers.get("Authorization")):
            response = _refuse(401, "missing or wrong token: send Authorization: "
                                    "Bearer <token> (see `mindscape token`)")
            response.headers["WWW-Authenticate"] = 'Bearer realm="mindscape"'
            return response
        if (length := request.content_length) is not None and length > self.max_body:
            return _refuse(413, f"the request body exceeds {self.max_body} bytes")
        if headers.get("Content-Encoding", "").lower() not in ("", "identity"):
            return _refuse(415, "compressed request bodies are not accepted (Content-"
                                "Encoding): send plain JSON")
        return None

    def expect(self, *, token: bool = False) -> Callable[[web.Request], Awaitable[
               web.StreamResponse | None]]:
        """The ``expect_handler`` of a route guarded with ``token``: a request that asks
        ``Expect: 100-continue`` is told to send its body only once every check the
        headers decide passes; else it gets the refusal at once (and the connection is
        closed), never a ``100 Continue`` inviting a body to be refused after it was
        sent. Another expectation is 417."""

        async def expect(request: web.Request) -> web.StreamResponse | None:
            started = time.perf_counter()
            origin = request.headers.get("Origin")
            response = self._foreign(request.headers, origin)
            if response is not None:
                origin = None
            elif request.method != "OPTIONS":
                response = self._unfit(request, token)
            if response is None:
                if request.headers.get("Expect", "").lower() == "100-continue":
                    if request.version == HttpVersion11:
                        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                        # (the answer proper has not begun)
                        request.writer.output_size = 0
                    return None
                response = _refuse(417, "unknown expectation (Expect): only 100-continue "
                                        "is understood")
            response.force_close()
            _finish(response.headers, origin)
            self.access.http(request.method, request.path, response.status,
                             time.perf_counter() - started, None)
            return response

        return expect

    async def guard(self, request: web.Request, handler: Callable[..., Awaitable[
                    web.StreamResponse]], token: bool, outcome: Outcome | None
                    ) -> web.StreamResponse:
        """Check, run ``handler``, log one line (one coroutine: this is every call's
        path)."""
        started = time.perf_counter()
        status = 500
        headers = request.headers
        origin = headers.get("Origin")
        try:
            response: web.StreamResponse | None = self._foreign(headers, origin)
            if response is not None:
                origin = None
            elif request.method == "OPTIONS" and request.path not in ROUTES:
                response = _refuse(404, "not found")
            elif request.method == "OPTIONS":
                methods = ROUTES[request.path]
                response = web.Response(status=204)
                response.headers["Allow"] = f"{methods}, OPTIONS"
                if origin is not None:
                    response.headers.update({
                        "Access-Control-Allow-Methods": methods,
                        "Access-Control-Allow-Headers": ALLOW_HEADERS,
                        "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
                    })
            elif (response := self._unfit(request, token)) is not None:
                pass
            elif outcome is None:
                response = await handler(request)
            else:
                response = await handler(request, outcome)
            if not response.prepared:
                # (A WebSocket is prepared by its handler, which sets ``Server`` itself.)
                _finish(response.headers, origin)
            status = response.status
            return response
        except web.HTTPException as exc:
            # aiohttp's own refusals inside a handler (a body without a length over the
            # limit, a WebSocket handshake that is none): our JSON and wording, never
            # aiohttp's text
            response = _refuse(exc.status, self._refusal(exc.status, request.path))
            response.headers.update({k: v for k, v in exc.headers.items()
                                     if k in ("Allow", "Connection")})
            _finish(response.headers, origin)
            status = response.status
            return response
        except ConnectionResetError:
            # The client hung up (mid-body, say): nobody is left to answer, and it is no
            # fault of ours. 499 is the request line's way of saying so (nginx's code).
            status = 499
            return web.Response(status=499)
        except asyncio.CancelledError:
            # the same, where aiohttp cancels the handler of a lost connection
            status = 499
            raise
        except Exception:
            if request.writer.output_size > 0:
                # An answer (a WebSocket handshake) is on the wire already: aiohttp
                # closes the connection.
                raise
            response = _fault(request.path)
            _finish(response.headers, origin)
            status = response.status
            return response
        finally:
            self.access.http(request.method, request.path, status,
                             time.perf_counter() - started,
                             None if outcome is None or not outcome.calls else outcome.calls)
