"""``GET /ws``: JSON-RPC 2.0 over a WebSocket, with server notifications.

A browser cannot set ``Authorization`` on a WebSocket and the token must never be in a
URL, so the socket authenticates in one of two ways:

1. subprotocols: offer ``Sec-WebSocket-Protocol: mindscape.v1, token.<TOKEN>``
   (``new WebSocket(url, ["mindscape.v1", "token." + token])``); the server checks the
   token before the upgrade (401 when wrong) and echoes only ``mindscape.v1``;
2. first message: connect with ``mindscape.v1`` (or no subprotocol) and send
   ``{"jsonrpc": "2.0", "method": "auth", "params": {"token": TOKEN}, "id": 1}`` within
   5 seconds; the answer is ``{"result": {"authenticated": true, "protocol":
   "mindscape.v1"}}``, or error -32001 and the socket is closed with 1008 (policy
   violation); silence closes it the same way.

After that every message (text, or binary holding UTF-8 JSON; the ``auth`` message too)
is a JSON-RPC request or batch, answered on the socket;
``encounter.watch`` subscribes the socket to ``encounter.changed`` notifications.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import WSMsgType, web
from aiohttp.http_websocket import WSCloseCode

from .hub import close_socket
from .jsontext import parse
from .keys import ACCESS_LOG, DISPATCHER, SERVICES, TOKENS
from .rpc import Outcome
from .security import SERVER
from .services import Context
from .tokens import TokenKeeper

PROTOCOL = "mindscape.v1"
#: Seconds a client has to take an answer (beyond what the connection buffers) before
#: it is cut off: one that stopped reading must not hold its socket open for ever.
ANSWER_TIMEOUT = 30.0
TOKEN_PREFIX = "token."
UNAUTHORIZED = -32001


def _offered(request: web.Request) -> list[str]:
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    return [p.strip() for p in header.split(",") if p.strip()]


def _auth_message(text: str | bytes, tokens: TokenKeeper) -> tuple[int | None, Any]:
    """The token generation a valid ``auth`` request (JSON-RPC 2.0, with an id to
    answer) authenticates under (``TokenKeeper.generation_accepting``; ``None`` when it
    is not one), and the id to answer with (``None`` when it has no valid one)."""
    try:
        message = parse(text)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(message, dict):
        return None, None
    request_id = message.get("id")
    if not (isinstance(request_id, str | int | float) and not isinstance(request_id, bool)):
        # a notification, a null id or one JSON-RPC does not allow: nothing to echo back
        return None, None
    if message.get("jsonrpc") != "2.0" or message.get("method") != "auth":
        return None, request_id
    params = message.get("params")
    token = params.get("token") if isinstance(params, dict) else None
    return tokens.generation_accepting(token), request_id


async def _authenticate(ws: web.WebSocketResponse, transport: asyncio.Transport | None,
                        tokens: TokenKeeper, timeout: float) -> int | None:
    """The token generation the socket's first message authenticated under, or ``None``
    (the socket is then closed)."""
    try:
        message = await asyncio.wait_for(ws.receive(), timeout)
    except TimeoutError:
        await close_socket(ws, transport, WSCloseCode.POLICY_VIOLATION,
                           b"authentication timeout")
        return None
    if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
        # closed or broken before a word: nothing to answer
        await close_socket(ws, transport, WSCloseCode.POLICY_VIOLATION, b"unauthorized")
        return None
    # a binary message is read as UTF-8 JSON, as every request after it is
    epoch, request_id = _auth_message(message.data, tokens)
    if epoch is not None:
        await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                      "result": {"authenticated": True,
                                                 "protocol": PROTOCOL}}))
        return epoch
    if not ws.closed:
        await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
            "code": UNAUTHORIZED, "message": "Unauthorized",
            "data": {"detail": "send auth with the token of `mindscape token` first"}}}))
        await close_socket(ws, transport, WSCloseCode.POLICY_VIOLATION, b"unauthorized")
    return None


async def websocket(request: web.Request) -> web.StreamResponse:
    """Upgrade, authenticate, then serve JSON-RPC until the socket closes."""
    app = request.app
    services = app[SERVICES]
    tokens = app[TOKENS]
    offered = _offered(request)
    given = [p[len(TOKEN_PREFIX):] for p in offered if p.startswith(TOKEN_PREFIX)]
    by_protocol = bool(given)
    # The generation of the token the socket authenticated with, taken with the check:
    # a rotation while the socket is upgraded or answered must close it too.
    epoch = next((e for e in map(tokens.generation_accepting, given) if e is not None),
                 None)
    if by_protocol and epoch is None:
        return web.json_response({"error": "wrong token in the WebSocket subprotocol"},
                                 status=401)
    # aiohttp refuses a message of max_msg_size bytes or more; the limit allows max_body
    ws = web.WebSocketResponse(protocols=(PROTOCOL,), heartbeat=30.0,
                               max_msg_size=services.settings.limits.max_body + 1)
    ws.headers["Server"] = SERVER
    await ws.prepare(request)
    if not by_protocol:
        # a shutdown closes a socket still authenticating too
        services.hub.arriving[ws] = request.transport
        try:
            epoch = await _authenticate(ws, request.transport, tokens,
                                        services.settings.limits.ws_auth_timeout)
        finally:
            services.hub.arriving.pop(ws, None)
    if epoch is None:
        return ws  # refused by its first message (a wrong subprotocol token got 401)
    dispatcher = app[DISPATCHER]
    access = app[ACCESS_LOG]
    peer = services.hub.connect(ws, request, epoch)
    context = Context(services, peer)
    try:
        async for message in ws:
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            started = time.perf_counter()
            outcome = Outcome()
            answer = await dispatcher.handle(message.data, context, outcome)
            access.line({"ws": peer.number, "methods": outcome.methods,
                          "errors": outcome.errors,
                          "outcome": "error" if outcome.errors else "ok",
                          "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
            # an answer not taken within ANSWER_TIMEOUT s ends the socket
            if answer is not None and \
                    not await peer.send_or_close(answer.decode("utf-8"), ANSWER_TIMEOUT):
                break
    except ConnectionError:
        pass  # the client hung up while its answer was on its way: no fault of ours
    finally:
        services.hub.disconnect(peer)
    return ws

