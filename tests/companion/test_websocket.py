"""GET /ws: both ways of authenticating, JSON-RPC over the socket, encounter.changed
notifications (API.md "Transport")."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import random
import re
import socket
import struct
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web

from companion import hub as hub_module
from companion import status as status_module
from companion import ws as ws_module
from companion.app import create_app
from companion.hub import CLOSE_TIMEOUT, Peer
from companion.keys import HUB, SERVICES, TOKENS
from companion.logs import MAX_KEPT
from companion.settings import Settings
from companion.tokens import rotate_token

from .combatants import FENKA, ULCEN, duelist
from .conftest import Rpc
from .stalled_client import stalled


async def _connect(rpc: Rpc, **kwargs: Any) -> aiohttp.ClientWebSocketResponse:
    ws: aiohttp.ClientWebSocketResponse = await rpc.client.ws_connect("/ws", **kwargs)
    return ws


async def _call(ws: aiohttp.ClientWebSocketResponse, method: str, params: Any = None,
                request_id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
    if params is not None:
        message["params"] = params
    await ws.send_str(json.dumps(message))
    while True:
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
        if answer.get("id") == request_id:
            return answer


async def test_subprotocol_token_authenticates_and_only_the_protocol_is_echoed(
        rpc: Rpc) -> None:
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    assert ws.protocol == "mindscape.v1"
    answer = await _call(ws, "companion.info")
    assert answer["result"]["name"] == "mindscape"
    await ws.close()


async def test_wrong_subprotocol_token_is_401_before_the_upgrade(rpc: Rpc) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        await _connect(rpc, protocols=("mindscape.v1", "token.wrong"))
    assert caught.value.status == 401


async def test_any_subprotocol_token_in_force_authenticates(rpc: Rpc) -> None:
    """Every `token.<TOKEN>` offered is checked (a client may still offer an old
    pairing's token beside the new one); a subprotocol that merely contains `token.` is
    no token offered, so the socket authenticates by its first message instead."""
    ws = await _connect(rpc, protocols=("mindscape.v1", "token.wrong", f"token.{rpc.token}"))
    assert ws.protocol == "mindscape.v1"
    assert (await _call(ws, "companion.info"))["result"]["name"] == "mindscape"
    await ws.close()
    ws = await _connect(rpc, protocols=("mindscape.v1", "x-token.wrong"))
    assert (await _call(ws, "auth", {"token": rpc.token}))["result"]["authenticated"]
    await ws.close()


@pytest.mark.parametrize("request_id", [7, "seven", 7.5])
async def test_first_message_auth(rpc: Rpc, request_id: Any) -> None:
    """docs/API.md: the auth message needs an id, a string or a number (any number, as
    JSON-RPC allows and POST /rpc answers: 7.5 was refused as a wrong token)."""
    ws = await _connect(rpc, protocols=("mindscape.v1",))
    await ws.send_json({"jsonrpc": "2.0", "method": "auth", "params": {"token": rpc.token},
                        "id": request_id})
    answer = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
    assert answer == {"jsonrpc": "2.0", "id": request_id,
                      "result": {"authenticated": True, "protocol": "mindscape.v1"}}
    assert (await _call(ws, "systems.list", request_id=8))["result"]
    assert rpc.client.server.app[HUB].arriving == {}  # no longer one to close as such
    await ws.close()


async def test_first_message_with_a_wrong_token_closes_the_socket(rpc: Rpc) -> None:
    ws = await _connect(rpc)
    answer = await _call(ws, "auth", {"token": "wrong"}, request_id=1)
    assert answer["error"]["code"] == -32001
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 1008


async def test_a_message_of_exactly_1_mib_is_taken_as_a_request_body_is(rpc: Rpc) -> None:
    """API.md "Limits": 1 MiB per request; docs/API.md: per WebSocket message too."""
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    head = '{"jsonrpc": "2.0", "method": "companion.info", "id": 1}'
    await ws.send_str(head + " " * (1024 * 1024 - len(head)))
    answer = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
    assert answer["result"]["name"] == "mindscape"
    await ws.send_str(head + " " * (1024 * 1024 + 1 - len(head)))
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 1009


async def test_a_call_before_auth_is_refused(rpc: Rpc) -> None:
    ws = await _connect(rpc)
    answer = await _call(ws, "companion.info", request_id=1)
    assert answer["error"]["code"] == -32001 and "result" not in answer
    await asyncio.wait_for(ws.receive(), 5)
    assert ws.closed


async def test_silence_closes_the_socket_after_the_auth_timeout(rpc: Rpc) -> None:
    ws = await _connect(rpc)
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 1008


async def test_websocket_checks_host_and_origin(rpc: Rpc) -> None:
    for headers in ({"Origin": "https://evil.example"}, {"Host": "evil.example"}):
        with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
            await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"),
                           headers=headers)
        assert caught.value.status == 403


async def test_watch_sends_encounter_changed_to_the_watching_sockets(rpc: Rpc) -> None:
    """API.md: 'encounter.changed {id, revision} to every socket that called
    encounter.watch {id}'."""
    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    eid = created["id"]
    watcher = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    bystander = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    watched = await _call(watcher, "encounter.watch", {"id": eid})
    assert watched["result"] == {"id": eid, "revision": 0, "watching": True}
    await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("ann")})
    notice = json.loads(await asyncio.wait_for(watcher.receive_str(), 5))
    assert notice == {"jsonrpc": "2.0", "method": "encounter.changed",
                      "params": {"id": eid, "revision": 1}}
    # a change made over the socket itself is announced too
    await watcher.send_str(json.dumps({"jsonrpc": "2.0", "method": "encounter.add",
                                       "params": {"id": eid, "combatant": duelist("bob")},
                                       "id": 2}))
    received = [json.loads(await asyncio.wait_for(watcher.receive_str(), 5))
                for _ in range(2)]
    assert {"jsonrpc": "2.0", "method": "encounter.changed",
            "params": {"id": eid, "revision": 2}} in received
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(bystander.receive_str(), 0.2)
    await _call(watcher, "encounter.unwatch", {"id": eid}, request_id=3)
    await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("cy")})
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(watcher.receive_str(), 0.2)
    await watcher.close()
    await bystander.close()


async def test_every_kind_of_step_is_announced_to_the_watchers(rpc: Rpc) -> None:
    """API.md encounter.watch: "receive encounter.changed {id, revision} after every
    change of this encounter": a declaration, a resolve, an undo and a refresh as much
    as an add. The watch answers the revision it starts from."""
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": ULCEN})
    watcher = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    watched = await _call(watcher, "encounter.watch", {"id": eid})
    assert watched["result"] == {"id": eid, "revision": 1, "watching": True}
    changes: list[tuple[str, dict[str, Any]]] = [
        ("encounter.add", {"combatant": FENKA}),
        ("encounter.declare", {"combatant_id": "ulcen", "choice": {"attack": {
            "mode": "mind-thrust", "target": "fenka", "multiplier": 1}}}),
        ("encounter.declare", {"combatant_id": "fenka", "choice": {"defense": None}}),
        ("encounter.resolve", {"seed": 2}), ("encounter.undo", {}),
        ("encounter.refresh", {"combatant_id": "fenka", "combatant": {**FENKA, "psp": 12}})]
    for revision, (method, params) in enumerate(changes, start=2):
        assert (await rpc.ok(method, {"id": eid, **params}))["revision"] == revision
        notice = json.loads(await asyncio.wait_for(watcher.receive_str(), 5))
        assert notice == {"jsonrpc": "2.0", "method": "encounter.changed",
                          "params": {"id": eid, "revision": revision}}, method
    await watcher.close()


async def test_concurrent_writes_to_one_encounter_are_serialised_and_each_announced_once(
        rpc: Rpc) -> None:
    """API.md "Encounters": writes to one encounter are serialised, a revision grows by
    one per step; "encounter.changed {id, revision} to every socket that called
    encounter.watch". Sixty adds, declarations, resolves and undos sent at once: each
    stored step has a revision of its own, in order, and each watcher hears every
    revision once."""
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    watchers = [await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
                for _ in range(2)]
    for ws in watchers:
        assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"]
    rng = random.Random(5)
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(60):
        kind = rng.choice(["add", "add", "declare", "resolve", "undo"])
        if kind == "add":
            calls.append(("encounter.add", {"id": eid, "combatant": dict(
                ULCEN if i % 2 else FENKA, id=f"c{i}", name=f"C{i}")}))
        elif kind == "declare":
            calls.append(("encounter.declare", {"id": eid, "combatant_id": "c1", "choice": {
                "defense": {"mode": "thought-shield"}}}))
        elif kind == "resolve":
            calls.append(("encounter.resolve", {"id": eid, "force": True, "seed": i}))
        else:
            calls.append(("encounter.undo", {"id": eid}))
    answers = await asyncio.gather(*(rpc.raw({"jsonrpc": "2.0", "method": method,
                                              "params": params, "id": n})
                                     for n, (method, params) in enumerate(calls)))
    revisions = sorted(a["result"]["revision"] for a in answers if "result" in a)
    log = await rpc.ok("encounter.log", {"id": eid})
    assert revisions == [s["revision"] for s in log["steps"]] == \
        list(range(1, log["revision"] + 1))
    for ws in watchers:
        heard = []
        with pytest.raises(asyncio.TimeoutError):
            while True:
                heard.append(json.loads(await asyncio.wait_for(ws.receive_str(), 0.5)))
        assert [n["params"]["revision"] for n in heard
                if n.get("method") == "encounter.changed"] == revisions
        await ws.close()


async def test_an_encounter_deleted_while_watched_is_announced_once_and_forgotten(
        rpc: Rpc) -> None:
    """docs/API.md: after encounter.delete the watchers get `"revision": null,
    "deleted": true`. That is the last notice of it: the socket no longer counts as
    watching it (the status page said "watching 1 encounter(s)" of a deleted one for as
    long as the socket lived, and the hub kept every deleted id a socket had watched)."""
    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    eid = created["id"]
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"] is True
    assert await rpc.ok("encounter.delete", {"id": eid}) == {"id": eid, "deleted": True}
    notice = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
    assert notice == {"jsonrpc": "2.0", "method": "encounter.changed",
                      "params": {"id": eid, "revision": None, "deleted": True}}
    hub = rpc.client.server.app[HUB]
    assert hub.watchers(eid) == [] and [p.watching for p in hub.peers] == [set()]
    assert "watching 0 encounter(s)" in await (await rpc.client.get("/")).text()
    assert (await _call(ws, "encounter.watch", {"id": eid}, 2))["error"] == {
        "code": 4004, "message": "Not found", "data": {"id": eid}}
    await ws.close()


async def test_one_socket_unwatching_leaves_the_others_watching(rpc: Rpc) -> None:
    """API.md: 'each socket that called encounter.watch {id} receives' the notice;
    encounter.unwatch stops them for the socket that calls it, not for the others."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    leaving, staying = [await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
                        for _ in range(2)]
    for ws in (leaving, staying):
        assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"]
    assert (await _call(leaving, "encounter.unwatch", {"id": eid}, 2))["result"] == {
        "id": eid, "watching": False}
    await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("ann")})
    notice = json.loads(await asyncio.wait_for(staying.receive_str(), 5))
    assert notice["params"] == {"id": eid, "revision": 1}
    # the next thing the socket that left hears is the answer to its own call
    await leaving.send_str(json.dumps({"jsonrpc": "2.0", "method": "companion.info",
                                       "id": 3}))
    assert json.loads(await asyncio.wait_for(leaving.receive_str(), 5))["id"] == 3
    await leaving.close()
    await staying.close()


async def test_the_notices_sent_leave_nothing_behind_in_the_hub(rpc: Rpc) -> None:
    """Each notice is sent in a task the hub keeps until it is done (so a shutdown can
    cancel it): a done one is let go, or a long-running daemon would hold every notice
    it ever sent (docs/RELIABILITY.md: memory does not grow under steady load)."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"]
    for n in range(3):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(f"c{n}")})
        assert json.loads(await asyncio.wait_for(ws.receive_str(), 5))["params"] == {
            "id": eid, "revision": n + 1}
    hub = rpc.client.server.app[HUB]
    for _ in range(100):
        if not hub._sending:
            break
        await asyncio.sleep(0.05)
    assert not hub._sending
    await ws.close()


async def test_status_page_counts_the_encounters_each_socket_watches(rpc: Rpc) -> None:
    """API.md: the status page lists the connected WebSockets; each says how many
    encounters it watches, counting a watch and taking off an unwatch."""
    ids = [(await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
           for _ in range(2)]
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    for n, eid in enumerate(ids, 1):
        assert (await _call(ws, "encounter.watch", {"id": eid}, n))["result"]["watching"]
    assert "watching 2 encounter(s)" in await (await rpc.client.get("/")).text()
    await _call(ws, "encounter.unwatch", {"id": ids[0]}, 3)
    assert "watching 1 encounter(s)" in await (await rpc.client.get("/")).text()
    await ws.close()


async def test_a_socket_that_closed_is_no_watcher_any_more(rpc: Rpc) -> None:
    """A socket's watches end with it: the hub keeps no closed socket among the
    watchers of an encounter that lives on (each would be held for as long as it)."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"]
    hub = rpc.client.server.app[HUB]
    assert len(hub.watchers(eid)) == 1
    await ws.close()
    for _ in range(100):
        if not hub.peers:
            break
        await asyncio.sleep(0.05)
    assert not hub.peers
    assert hub.watchers(eid) == []


class _FakeSocket:
    """A socket whose client takes what is sent after a moment (``taking``), never
    (``stopped-reading``) or whose connection is lost (``connection-lost``); what it
    took and its closes are kept."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.closed = False
        self.taken: list[str] = []
        self.closes: list[tuple[int, bytes]] = []

    async def send_str(self, text: str) -> None:
        if self.client == "connection-lost":
            raise ConnectionResetError
        if self.client == "stopped-reading":
            await asyncio.Event().wait()
        await asyncio.sleep(0.01)
        self.taken.append(text)

    async def close(self, *, code: int, message: bytes) -> bool:
        self.closes.append((code, message))
        self.closed = True
        return True


@pytest.mark.parametrize("client", ["stopped-reading", "connection-lost"])
async def test_a_socket_that_does_not_take_a_notice_is_closed_as_too_slow(
        monkeypatch: pytest.MonkeyPatch, client: str) -> None:
    """docs/API.md: a socket is closed with 1008 "too slow" when it has not taken an
    encounter.changed notice within 5 s (NOTIFY_TIMEOUT, shortened here), so that it
    holds up no other socket's notices; one whose send fails is closed the same way."""
    monkeypatch.setattr(hub_module, "NOTIFY_TIMEOUT", 0.1)
    ws = _FakeSocket(client)
    peer = Peer(cast(web.WebSocketResponse, ws), 1, "127.0.0.1", None, None)
    await asyncio.wait_for(peer.notify_or_close("encounter.changed",
                                                {"id": "x", "revision": 1}), 10)
    assert ws.closes == [(1008, b"too slow")]


async def test_a_socket_that_takes_its_notice_after_a_moment_keeps_it() -> None:
    """docs/API.md: only a notice not taken within 5 s closes the socket; one that
    waits a moment for a busy client is delivered, whole, and the socket stays."""
    ws = _FakeSocket("taking")
    peer = Peer(cast(web.WebSocketResponse, ws), 1, "127.0.0.1", None, None)
    await asyncio.wait_for(peer.notify_or_close("encounter.changed",
                                                {"id": "x", "revision": 1}), 10)
    assert [json.loads(t) for t in ws.taken] == [{
        "jsonrpc": "2.0", "method": "encounter.changed",
        "params": {"id": "x", "revision": 1}}]
    assert ws.closes == []


async def test_watching_an_unknown_encounter_is_4004(rpc: Rpc) -> None:
    """API.md: 4004 for an unknown encounter, and the socket is left watching nothing
    (encounter.watch makes it a watcher before it reads the encounter, and takes that
    back when the read fails)."""
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    answer = await _call(ws, "encounter.watch", {"id": "nope"})
    assert answer["error"]["code"] == 4004
    hub = rpc.client.server.app[HUB]
    assert hub.watchers("nope") == [] and [p.watching for p in hub.peers] == [set()]
    await ws.close()


async def test_a_failed_rewatch_keeps_the_watch_the_socket_held(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second encounter.watch of the same encounter whose read fails (the store
    unreadable for a moment) takes back only what it added: the socket still gets the
    notices its first call asked for."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    assert (await _call(ws, "encounter.watch", {"id": eid}))["result"]["watching"]
    store = rpc.client.server.app[SERVICES].store

    async def unreadable(id: str) -> Any:
        raise OSError("the disk went away")

    monkeypatch.setattr(store, "get", unreadable)
    assert (await _call(ws, "encounter.watch", {"id": eid}, 2))["error"]["code"] == -32603
    monkeypatch.undo()
    assert len(rpc.client.server.app[HUB].watchers(eid)) == 1
    await ws.close()


async def test_a_change_stored_while_watch_reads_the_encounter_is_not_lost(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """encounter.watch makes the socket a watcher before it reads the encounter: a
    change stored between that read and the answer is told to the socket (the answer
    has the revision read, the notice the one after). The store's read is wrapped to
    store such a change right after it, as another client's call would; were the
    socket made a watcher only after the read, the notice would go to nobody, and
    only the order in which the store's calls run kept that from happening."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    hub = rpc.client.server.app[HUB]
    store = rpc.client.server.app[SERVICES].store
    read = store.get
    watching_at_read: list[int] = []

    async def read_then_change(id: str) -> Any:
        record = await read(id)
        if not watching_at_read:
            watching_at_read.append(len(hub.watchers(eid)))
            monkeypatch.setattr(store, "get", read)
            await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("ann")})
        return record

    monkeypatch.setattr(store, "get", read_then_change)
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": "encounter.watch", "params": {"id": eid},
                        "id": 1})
    # the notice may come before the answer: it is sent as soon as the change is stored
    got = [json.loads(await asyncio.wait_for(ws.receive_str(), 5)) for _ in range(2)]
    assert sorted(got, key=lambda m: "id" not in m) == [
        {"jsonrpc": "2.0", "id": 1, "result": {"id": eid, "revision": 0, "watching": True}},
        {"jsonrpc": "2.0", "method": "encounter.changed",
         "params": {"id": eid, "revision": 1}}]
    assert watching_at_read == [1]
    await ws.close()


async def test_batches_and_errors_over_the_socket(rpc: Rpc) -> None:
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    await ws.send_str(json.dumps([{"jsonrpc": "2.0", "method": "companion.info", "id": 1},
                                  {"jsonrpc": "2.0", "method": "nope", "id": 2}]))
    answer = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
    assert [("result" in a, a.get("error", {}).get("code")) for a in answer] == [
        (True, None), (False, -32601)]
    await ws.send_str("{")
    assert json.loads(await ws.receive_str())["error"]["code"] == -32700
    # An unpaired surrogate is refused like any text that is not JSON; the socket stays.
    await ws.send_str('{"jsonrpc": "2.0", "method": "companion.info", "id": "\\ud800"}')
    assert json.loads(await ws.receive_str())["error"]["code"] == -32700
    # a notification is run and not answered: the next answer is the next call's
    await ws.send_str(json.dumps({"jsonrpc": "2.0", "method": "companion.info"}))
    await ws.send_str(json.dumps({"jsonrpc": "2.0", "method": "companion.info", "id": 3}))
    assert json.loads(await ws.receive_str())["id"] == 3
    # a binary message is taken as the same text would be
    await ws.send_bytes(json.dumps({"jsonrpc": "2.0", "method": "companion.info",
                                    "id": 4}).encode())
    assert json.loads(await asyncio.wait_for(ws.receive_str(), 5))["id"] == 4
    await ws.close()


async def test_the_auth_message_may_be_binary_as_every_request_after_it_may(rpc: Rpc) -> None:
    """docs/API.md: a binary message holding UTF-8 JSON is read as the same text would be,
    the first one too; it was refused as no `auth` while later ones were answered."""
    ws = await _connect(rpc, protocols=("mindscape.v1",))
    await ws.send_bytes(json.dumps({"jsonrpc": "2.0", "method": "auth",
                                    "params": {"token": rpc.token}, "id": "a"}).encode())
    assert json.loads(await asyncio.wait_for(ws.receive_str(), 5)) == {
        "jsonrpc": "2.0", "id": "a",
        "result": {"authenticated": True, "protocol": "mindscape.v1"}}
    assert "result" in await _call(ws, "companion.info")
    await ws.close()


async def test_status_page_lists_connected_sockets(rpc: Rpc) -> None:
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"),
                        headers={"Origin": "http://localhost:30000"})
    await _call(ws, "companion.info")
    page = await (await rpc.client.get("/")).text()
    assert "#1 from http://localhost:30000" in page
    await ws.close()


async def test_status_page_says_how_long_ago_each_socket_connected(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """In seconds below two minutes, then in whole minutes, as for HTTP clients."""
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    await _call(ws, "companion.info")
    [peer] = rpc.client.server.app[HUB].peers
    for later, said in ((5.5, "5 s"), (200.5, "3 min")):
        monkeypatch.setattr(status_module, "time", SimpleNamespace(
            time=lambda now=peer.connected_at + later: now, strftime=time.strftime,
            localtime=time.localtime))
        page = await (await rpc.client.get("/")).text()
        assert f"connected {said} ago, watching 0 encounter(s)" in page
    await ws.close()


async def test_status_page_lists_sockets_in_the_order_they_connected(rpc: Rpc) -> None:
    """The hub keeps its sockets in a set: listed as they came, #1 to #8 read as a jumble."""
    sockets = [await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"),
                              headers={"Origin": "http://localhost:30000"})
               for _ in range(8)]
    for ws in sockets:
        await _call(ws, "companion.info")
    page = await (await rpc.client.get("/")).text()
    places = [page.index(f"#{n} from ") for n in range(1, 9)]
    assert places == sorted(places)
    for ws in sockets:
        await ws.close()


async def test_a_sockets_long_user_agent_is_kept_short(rpc: Rpc) -> None:
    """docs/API.md: what clients sent is shown redacted, at most 120 characters; the
    hub keeps no more of a socket's user agent than of an HTTP client's (MAX_KEPT),
    not the whole header for as long as the socket lives."""
    agent = "agent " * 1000
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"),
                        headers={"User-Agent": agent})
    await _call(ws, "companion.info")
    [peer] = rpc.client.server.app[HUB].peers
    assert peer.user_agent is not None and peer.user_agent.startswith("agent agent")
    assert len(peer.user_agent) <= MAX_KEPT
    await ws.close()


async def test_status_page_says_the_time_zone_of_its_start(rpc: Rpc) -> None:
    """"running since 2026-12-03 10:06:36" said nothing of where; the offset says it."""
    page = await (await rpc.client.get("/")).text()
    assert re.search(r"running since\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\.", page)


async def test_status_page_says_the_daemon_runs_since_it_started(
        aiohttp_client: Any, settings: Settings) -> None:
    """"running since" is the time this daemon started (to the second), not some time
    before it."""
    before = time.time()
    client = await aiohttp_client(create_app(settings))
    after = time.time()
    page = await (await client.get("/")).text()
    found = re.search(r"running since\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4})\.",
                      page)
    assert found is not None
    shown = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S %z").timestamp()
    assert int(before) <= shown <= after


async def test_status_page_gives_the_websocket_address_with_its_scheme(rpc: Rpc) -> None:
    """The page gave the socket as ``http://HOST/ws``, which a WebSocket client refuses;
    the banner of ``mindscape serve`` says ``ws://HOST/ws``."""
    page = await (await rpc.client.get("/")).text()
    host = f"{rpc.client.host}:{rpc.client.port}"
    assert f"<code>http://{host}/rpc</code> and <code>ws://{host}/ws</code>" in page


@pytest.mark.parametrize(("message", "answered_id"), [
    ({"method": "auth", "params": {"token": "{t}"}, "id": 1}, 1),  # no "jsonrpc": "2.0"
    # a notification: nothing could answer it
    ({"jsonrpc": "2.0", "method": "auth", "params": {"token": "{t}"}}, None),
    # not JSON-RPC ids (a boolean is neither a string nor a number)
    ({"jsonrpc": "2.0", "method": "auth", "params": {"token": "{t}"}, "id": {"a": [1, 2]}},
     None),
    ({"jsonrpc": "2.0", "method": "auth", "params": {"token": "{t}"}, "id": True}, None),
    # the token handed to another method, or to auth by position rather than by name
    ({"jsonrpc": "2.0", "method": "companion.info", "params": {"token": "{t}"}, "id": 1}, 1),
    ({"jsonrpc": "2.0", "method": "auth", "params": ["{t}"], "id": 1}, 1),
    # nested deeper than the JSON parser goes (RecursionError), and a binary message
    ("[" * 100_000 + "]" * 100_000, None), (b"\x00 not json", None),
])
async def test_the_auth_message_is_a_json_rpc_request_like_any_other(
        rpc: Rpc, message: Any, answered_id: int | None) -> None:
    """docs/SECURITY.md: a first message (text or binary) that is not a good `auth` gets
    a -32001 error (with its id when it had a usable one, else null) and the socket is
    closed with 1008; the token somewhere in it is not enough."""
    ws = await _connect(rpc, protocols=("mindscape.v1",))
    if isinstance(message, bytes):
        await ws.send_bytes(message)
    else:
        text = message if isinstance(message, str) else json.dumps(message)
        await ws.send_str(text.replace("{t}", rpc.token))
    answer = json.loads(await asyncio.wait_for(ws.receive_str(), 5))
    assert answer == {"jsonrpc": "2.0", "id": answered_id, "error": {
        "code": -32001, "message": "Unauthorized",
        "data": {"detail": "send auth with the token of `mindscape token` first"}}}
    closing = await asyncio.wait_for(ws.receive(), 5)
    assert (closing.type, closing.data) == (aiohttp.WSMsgType.CLOSE, 1008)


async def test_a_socket_opened_with_the_new_token_stays_when_the_old_ones_go(
        rpc: Rpc, settings: Settings) -> None:
    """docs/API.md: 1008 "token rotated" after `mindscape token --rotate` for a socket
    that authenticated with the old token; one opened with the new token stays, whether
    it offered it as a subprotocol or sent it in its `auth` message."""
    old = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    token = rotate_token(settings.token_path)
    new = await _connect(rpc, protocols=("mindscape.v1", f"token.{token}"))
    by_message = await _connect(rpc, protocols=("mindscape.v1",))
    assert (await _call(by_message, "auth", {"token": token}))["result"]["authenticated"]
    app = rpc.client.server.app
    closing = asyncio.create_task(app[HUB].close_stale(app[TOKENS].generation()))
    message = await asyncio.wait_for(old.receive(), 5)
    await closing
    assert (message.type, message.data, message.extra) == (
        aiohttp.WSMsgType.CLOSE, 1008, "token rotated")
    for ws in (new, by_message):
        assert (await _call(ws, "companion.info", request_id=2))["result"]["name"] == \
            "mindscape"
        await ws.close()


async def test_a_failed_check_for_rotated_tokens_does_not_end_the_checks(
        rpc: Rpc, settings: Settings, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """docs/API.md: a socket of the old token is closed within about a second of every
    rotation; a check that fails for a reason no one foresaw is logged, and the next
    checks still run."""
    hub = rpc.client.server.app[HUB]
    close_stale = hub.close_stale
    failed: list[int] = []

    async def failing_once(epoch: int) -> None:
        if not failed:
            failed.append(epoch)
            raise RuntimeError("unforeseen")
        await close_stale(epoch)

    monkeypatch.setattr(hub, "close_stale", failing_once)
    ws = await _connect(rpc, protocols=("mindscape.v1", f"token.{rpc.token}"))
    for _ in range(100):
        if failed:
            break
        await asyncio.sleep(0.05)
    assert failed
    rotate_token(settings.token_path)
    message = await asyncio.wait_for(ws.receive(), 10)
    assert (message.type, message.data, message.extra) == (
        aiohttp.WSMsgType.CLOSE, 1008, "token rotated")
    assert "closing the sockets of a rotated token failed" in caplog.text


async def _serving(tmp_path: Path) -> tuple[web.AppRunner, int, Settings]:
    settings = Settings(home=tmp_path / "home", port=0, log_stream=io.StringIO())
    runner = web.AppRunner(create_app(settings), access_log=None, shutdown_timeout=5.0,
                           handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    return runner, port, settings


async def test_a_client_that_stops_reading_does_not_stop_a_later_rotation(
        tmp_path: Path) -> None:
    """docs/SECURITY.md: a socket opened with a rotated token is closed within about a
    second. A client whose queue is full made the first rotation's close wait for ever,
    and every later rotation with it."""
    runner, port, settings = await _serving(tmp_path)
    staller = await asyncio.to_thread(stalled, "127.0.0.1", port,
                                      settings.token_path.read_text().strip())
    try:
        await asyncio.sleep(1.0)
        token = rotate_token(settings.token_path)  # the staller's socket goes
        await asyncio.sleep(2.0 + CLOSE_TIMEOUT)
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws",
                                          protocols=("mindscape.v1", f"token.{token}"))
            rotate_token(settings.token_path)
            message = await ws.receive(timeout=4)
            assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
            assert ws.close_code == 1008
    finally:
        staller.close()
        await asyncio.wait_for(runner.cleanup(), 20)


def _read_to_the_end(sock: socket.socket) -> bytes:
    """All that reaches ``sock`` until its connection ends (closed or reset; a
    connection still open after 30 s of silence fails the test instead of hanging it)."""
    sock.settimeout(30)
    received = bytearray()
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return bytes(received)


async def test_a_client_that_does_not_take_its_close_has_its_connection_dropped(
        tmp_path: Path) -> None:
    """docs/API.md: 'A close that the client does not take within 2 s (it stopped
    reading ...) is cut short: the connection is dropped'. So the close of a rotated
    token's socket, queued behind what the client did not read, never reaches it: the
    connection ends before."""
    runner, port, settings = await _serving(tmp_path)
    staller = await asyncio.to_thread(stalled, "127.0.0.1", port,
                                      settings.token_path.read_text().strip())
    try:
        hub = runner.app[HUB]
        assert len(hub.peers) == 1
        rotate_token(settings.token_path)
        for _ in range(200):  # the close, its timeout and the drop, then it is forgotten
            if not hub.peers:
                break
            await asyncio.sleep(0.1)
        assert not hub.peers
        received = await asyncio.to_thread(_read_to_the_end, staller)
        assert b"token rotated" not in received
    finally:
        staller.close()
        await asyncio.wait_for(runner.cleanup(), 20)


async def test_shutdown_is_not_held_up_by_a_client_that_stops_reading(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """docs/API.md: the daemon stops on SIGTERM, closing every WebSocket; a client that
    does not read is cut off after CLOSE_TIMEOUT (it kept the daemon, and the home's
    lock, until it hung up), and its lost connection is no error in the log."""
    runner, port, settings = await _serving(tmp_path)
    staller = await asyncio.to_thread(stalled, "127.0.0.1", port,
                                      settings.token_path.read_text().strip())
    try:
        await asyncio.sleep(1.0)
        with caplog.at_level(logging.INFO):
            await asyncio.wait_for(runner.cleanup(), CLOSE_TIMEOUT + 8)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        staller.close()


async def test_a_client_that_hangs_up_while_its_answer_waits_is_no_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A client gone while its answer was queued is no fault of the daemon's
    (docs/SECURITY.md): aiohttp logged "Error handling request" with a traceback."""
    runner, port, settings = await _serving(tmp_path)
    try:
        with caplog.at_level(logging.INFO):
            staller = await asyncio.to_thread(stalled, "127.0.0.1", port,
                                              settings.token_path.read_text().strip())
            await asyncio.sleep(1.0)
            staller.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            staller.close()  # a reset, not a goodbye
            await asyncio.sleep(1.0)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        await asyncio.wait_for(runner.cleanup(), 20)


async def test_a_client_that_does_not_take_its_answers_is_cut_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A socket whose answers wait longer than ANSWER_TIMEOUT to be taken is closed,
    not kept open (and listed on the status page) for as long as its client lives."""
    monkeypatch.setattr(ws_module, "ANSWER_TIMEOUT", 1.0)
    runner, port, settings = await _serving(tmp_path)
    staller = await asyncio.to_thread(stalled, "127.0.0.1", port,
                                      settings.token_path.read_text().strip())
    try:
        hub = runner.app[HUB]
        for _ in range(100):
            await asyncio.sleep(0.1)
            if not hub.peers:
                break
        assert not hub.peers
    finally:
        staller.close()
        await asyncio.wait_for(runner.cleanup(), 20)
