"""Connected WebSockets, who watches which encounter, and recent HTTP clients.

The hub sends server notifications (``encounter.changed``) to the sockets that asked
for them, and gives the status page a picture of what is connected. It never holds a
token: peers are described by address, origin and user agent only.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_websocket import WSCloseCode

from .logs import kept

RECENT_CLIENTS = 20
RECENT_CALLS = 1000
#: A socket that cannot take a notice within this many seconds is closed.
NOTIFY_TIMEOUT = 5.0
#: A socket that cannot take its close (and what was queued before it) within this many
#: seconds is cut off: a client that stopped reading must not hold up a token
#: rotation or a shutdown.
CLOSE_TIMEOUT = 2.0


async def close_socket(ws: web.WebSocketResponse, transport: asyncio.Transport | None,
                       code: int, message: bytes) -> None:
    """Close ``ws`` with ``code``; when the client does not take the close within
    ``CLOSE_TIMEOUT`` seconds, or the connection fails, abort the connection under it
    (aiohttp's ``close`` waits for the client to read what is queued, without end)."""
    try:
        await asyncio.wait_for(ws.close(code=code, message=message), CLOSE_TIMEOUT)
        return
    except (TimeoutError, ConnectionError, RuntimeError):
        pass
    if transport is not None:
        transport.abort()  # also when closing: a close waits to flush what it cannot


@dataclass(eq=False)
class Peer:
    """One authenticated WebSocket connection."""

    ws: web.WebSocketResponse
    number: int
    remote: str | None
    origin: str | None
    user_agent: str | None
    #: the generation of the token it authenticated with (``TokenKeeper.generation``)
    epoch: int = 0
    #: the connection under the socket, cut off when the client does not take a close
    transport: asyncio.Transport | None = None
    connected_at: float = field(default_factory=time.time)
    watching: set[str] = field(default_factory=set)

    async def send_or_close(self, text: str, seconds: float) -> bool:
        """Send ``text``; a socket that cannot take it within ``seconds`` (its client
        stopped reading) is closed (1008 "too slow") and ``False`` returned."""
        try:
            async with asyncio.timeout(seconds):  # (no task of its own, as wait_for's)
                await self.ws.send_str(text)
        except TimeoutError:
            await self.close(WSCloseCode.POLICY_VIOLATION, b"too slow")
            return False
        return True

    async def notify_or_close(self, method: str, params: dict[str, Any]) -> None:
        """Send a JSON-RPC notification (no id), closing a socket that does not take it
        within ``NOTIFY_TIMEOUT`` seconds or fails to."""
        if self.ws.closed:
            return
        text = json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
        try:
            await self.send_or_close(text, NOTIFY_TIMEOUT)
        except (ConnectionError, RuntimeError):
            await self.close(WSCloseCode.POLICY_VIOLATION, b"too slow")

    async def close(self, code: int, message: bytes) -> None:
        """Close the socket (``close_socket``: a client that does not read is cut off)."""
        await close_socket(self.ws, self.transport, code, message)

    def to_json(self) -> dict[str, Any]:
        """For the status page (never a token)."""
        return {"number": self.number, "remote": self.remote, "origin": self.origin,
                "user_agent": self.user_agent, "connected_at": self.connected_at,
                "watching": sorted(self.watching)}


@dataclass
class Client:
    """A recent HTTP caller (by address, origin and user agent)."""

    remote: str | None
    origin: str | None
    user_agent: str | None
    last_seen: float
    last_method: str | None
    calls: int = 0

    def to_json(self) -> dict[str, Any]:
        """For the status page (never a token)."""
        return {"remote": self.remote, "origin": self.origin, "user_agent": self.user_agent,
                "last_seen": self.last_seen, "last_method": self.last_method,
                "calls": self.calls}


class Hub:
    """Peers, watches and recent clients for one app."""

    def __init__(self) -> None:
        self.peers: set[Peer] = set()
        #: sockets upgraded but not yet authenticated, with their connections (closed
        #: too at shutdown)
        self.arriving: dict[web.WebSocketResponse, asyncio.Transport | None] = {}
        self._watchers: dict[str, set[Peer]] = {}
        self._numbers = itertools.count(1)
        #: (time, remote, origin, user agent, method) of the last HTTP calls
        self._calls: deque[tuple[float, str | None, str | None, str | None, str | None]] = (
            deque(maxlen=RECENT_CALLS))
        self._sending: set[asyncio.Task[None]] = set()

    def connect(self, ws: web.WebSocketResponse, request: web.Request,
                epoch: int = 0) -> Peer:
        """Register an authenticated socket."""
        peer = Peer(ws, next(self._numbers), request.remote,
                    request.headers.get("Origin"), kept(request.headers.get("User-Agent")),
                    epoch, request.transport)
        self.peers.add(peer)
        return peer

    async def close_stale(self, epoch: int) -> None:
        """Close (1008) every socket authenticated with a token that was rotated away:
        rotating a leaked token must shut out a socket opened with it."""
        stale = [p for p in self.peers if p.epoch != epoch]
        await asyncio.gather(*(p.close(WSCloseCode.POLICY_VIOLATION, b"token rotated")
                               for p in stale), return_exceptions=True)
        for peer in stale:
            self.disconnect(peer)

    def disconnect(self, peer: Peer) -> None:
        """Forget a socket and everything it watched."""
        self.peers.discard(peer)
        for encounter_id in peer.watching:
            watchers = self._watchers.get(encounter_id)
            if watchers is not None:
                watchers.discard(peer)
                if not watchers:
                    del self._watchers[encounter_id]
        peer.watching.clear()

    def watch(self, peer: Peer, encounter_id: str) -> None:
        """Send ``encounter.changed`` for ``encounter_id`` to ``peer`` from now on."""
        peer.watching.add(encounter_id)
        self._watchers.setdefault(encounter_id, set()).add(peer)

    def unwatch(self, peer: Peer, encounter_id: str) -> None:
        """Stop the notices of ``encounter_id`` to ``peer``."""
        peer.watching.discard(encounter_id)
        watchers = self._watchers.get(encounter_id)
        if watchers is not None:
            watchers.discard(peer)
            if not watchers:
                del self._watchers[encounter_id]

    def forget(self, encounter_id: str) -> None:
        """No socket watches ``encounter_id`` any more (it was deleted: its notice is
        the last one, and a socket that lives on must not hold it for ever)."""
        for peer in self._watchers.pop(encounter_id, ()):
            peer.watching.discard(encounter_id)

    def watchers(self, encounter_id: str) -> list[Peer]:
        """The sockets watching ``encounter_id``."""
        return list(self._watchers.get(encounter_id, ()))

    async def encounter_changed(self, encounter_id: str, revision: int | None,
                                **extra: Any) -> None:
        """Tell every socket watching ``encounter_id`` that it moved to ``revision``.

        The notices are sent in tasks: the write that triggered them answers at once,
        and a slow or vanished socket can neither delay nor fail it.
        """
        params = {"id": encounter_id, "revision": revision, **extra}
        for peer in self.watchers(encounter_id):
            task = asyncio.create_task(peer.notify_or_close("encounter.changed", params))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    def seen(self, request: web.Request, method: str | None) -> None:
        """Remember an authenticated HTTP call for the status page (one append: this is
        on every call's path; the status page does the counting)."""
        headers = request.headers
        self._calls.append((time.time(), request.remote, headers.get("Origin"),
                            kept(headers.get("User-Agent")), kept(method)))

    def recent_clients(self) -> list[Client]:
        """The last callers (by address, origin, user agent), most recent first."""
        clients: OrderedDict[tuple[str | None, str | None, str | None], Client] = (
            OrderedDict())
        for when, remote, origin, agent, method in self._calls:
            key = (remote, origin, agent)
            client = clients.pop(key, None) or Client(remote, origin, agent, when, method)
            client.last_seen, client.last_method = when, method
            client.calls += 1
            clients[key] = client
        return list(reversed(clients.values()))[:RECENT_CLIENTS]

    async def close_all(self) -> None:
        """Close every socket with 1001 (going away), for a graceful shutdown."""
        for task in list(self._sending):
            task.cancel()
        peers = list(self.peers)
        sockets = [(p.ws, p.transport) for p in peers] + list(self.arriving.items())
        await asyncio.gather(*(close_socket(ws, transport, WSCloseCode.GOING_AWAY,
                                            b"server shutting down")
                               for ws, transport in sockets), return_exceptions=True)
        for peer in peers:
            self.disconnect(peer)
