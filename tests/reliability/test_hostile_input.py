"""Hostile input: whatever arrives, the daemon answers in bounded time with a clean
JSON-RPC error, never a 5xx, a hang, a traceback or exception text.

API.md "Errors": "-32603 unexpected fault: an error id only; the traceback stays in the
daemon's log". API.md "Limits": "At most 100 dice in one expression or pool, 100
penetration follow-ups per die, 64 combatants per encounter, 1 MiB per request, 100
calls per batch. Exceeding a limit is -32602 naming the limit, never a hang."
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .checks import assert_clean
from .conftest import DaemonFactory
from .daemon import Daemon, auth, post_rpc, request, rpc
from .play import COMBATANTS

ROOT = Path(__file__).resolve().parents[2]
#: Every answer must come within this (seconds); a hang is a failure, not a wait.
ANSWER_WITHIN = 5.0
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _refuse_constant(name: str) -> Any:
    raise AssertionError(f"the answer is not strict JSON: it holds {name}")


def check_answer(status: int, body: bytes) -> Any:
    """The checks every answer to ``POST /rpc`` passes; the parsed body (or None)."""
    assert status in (200, 204), (status, body[:300])
    text = body.decode("utf-8")
    assert_clean(text)
    if status == 204:
        assert body == b""
        return None
    answer = json.loads(text, parse_constant=_refuse_constant)
    for one in answer if isinstance(answer, list) else [answer]:
        assert one.get("jsonrpc") == "2.0", one
        assert ("result" in one) != ("error" in one), one
        if "error" in one:
            error = one["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
            # Hostile input is the caller's fault: a -32603 means an exception escaped.
            assert error["code"] != -32603, f"an unexpected fault: {one}"
    return answer


def send(daemon: Daemon, body: bytes) -> Any:
    """POST ``body`` and apply ``check_answer``; the parsed answer."""
    started = time.monotonic()
    reply = post_rpc(daemon, body, timeout=ANSWER_WITHIN)
    assert time.monotonic() - started < ANSWER_WITHIN
    return check_answer(reply.status, reply.body)


# -- strategies -----------------------------------------------------------------------------
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=12) | st.sampled_from(["", "ulcen", "fenka", "../../etc/passwd",
                                                      "%s%n", "\x00", "1d6", "__proto__"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=16)


@pytest.fixture(scope="module")
def method_params(shared_daemon: Daemon) -> dict[str, list[str]]:
    """Each method's param names, from the daemon's own OpenRPC document."""
    document = rpc(shared_daemon, "rpc.discover")
    return {m["name"]: [p["name"] for p in m.get("params", [])]
            for m in document["methods"]}


@pytest.fixture(scope="module")
def encounter_id(shared_daemon: Daemon) -> str:
    """A real encounter with two combatants, so fuzzed calls reach past "unknown id"."""
    created = rpc(shared_daemon, "encounter.create", {"system": "combat-strength"})
    for combatant in COMBATANTS["combat-strength"]:
        rpc(shared_daemon, "encounter.add", {"id": created["id"], "combatant": combatant})
    return str(created["id"])


def envelopes(methods: list[str]) -> st.SearchStrategy[Any]:
    """Requests, batches and bare JSON values, around ``methods`` and junk names."""
    method = st.sampled_from([*methods, "auth", "rpc.", "__init__", "constructor"]) | scalars
    one = st.fixed_dictionaries({}, optional={
        "jsonrpc": st.just("2.0") | scalars, "method": method, "params": json_values,
        "id": scalars, "extra": scalars})
    return one | st.lists(one, max_size=5) | json_values


@SETTINGS
@given(data=st.data())
def test_any_envelope_gets_a_clean_answer(shared_daemon: Daemon,
                                          method_params: dict[str, list[str]],
                                          data: st.DataObject) -> None:
    payload = data.draw(envelopes(sorted(method_params)))
    send(shared_daemon, json.dumps(payload).encode())


@SETTINGS
@given(body=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_get_a_clean_answer(shared_daemon: Daemon, body: bytes) -> None:
    send(shared_daemon, body)


@SETTINGS
@given(data=st.data())
def test_any_params_of_a_known_method_get_a_clean_answer(
        shared_daemon: Daemon, method_params: dict[str, list[str]], encounter_id: str,
        data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(m for m in method_params
                                               if m != "encounter.delete")))
    names = method_params[method]
    value = (json_values | st.just(encounter_id) | st.sampled_from(
        ["ulcen", "fenka", "combat-strength", "revised-2e", "power-pool", "foundry.dnd5e"]))
    params = data.draw(st.dictionaries(st.sampled_from(names) if names else st.text(max_size=5),
                                       value, max_size=len(names) + 1))
    send(shared_daemon, json.dumps({"jsonrpc": "2.0", "method": method, "params": params,
                                    "id": 1}).encode())


dice_text = (st.text(alphabet="0123456789dDpP+-*/ ()kx.e", max_size=40)
             | st.from_regex(r"\A\d{1,7}d\d{1,8}p?([+-]\d{1,9}(d\d{1,4}p?)?){0,3}\Z"))


@SETTINGS
@given(expr=dice_text, seed=st.none() | st.integers(-(2**64), 2**64))
def test_any_dice_expression_is_rolled_or_refused_in_bounded_time(
        shared_daemon: Daemon, expr: str, seed: int | None) -> None:
    params: dict[str, Any] = {"expr": expr}
    if seed is not None:
        params["seed"] = seed
    answer = send(shared_daemon, json.dumps({"jsonrpc": "2.0", "method": "dice.roll",
                                             "params": params, "id": 1}).encode())
    if "result" in answer:
        rolls = answer["result"]["rolls"]
        # 100 dice per expression, each with at most 100 follow-ups.
        assert len(rolls) <= 100 * 101


def _fixtures() -> list[tuple[str, Any]]:
    out = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.json")):
        out.append((path.parent.parent.name + "." + path.parent.name,
                    json.loads(path.read_text(encoding="utf-8"))))
    return out


FIXTURES = _fixtures()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:20]):
            yield from _paths(inner, (*prefix, index))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(copy[path[0]], path[1:], new)
    return copy


#: (fixture index, [(path index, new value)]): small to print when a test fails.
mutations = st.tuples(st.integers(0, len(FIXTURES) - 1),
                      st.lists(st.tuples(st.integers(0), json_values), min_size=1,
                               max_size=4))


def mutated_actor(mutation: tuple[int, list[tuple[int, Any]]]) -> Any:
    """A real VTT export from tests/fixtures with a few values replaced by junk."""
    index, changes = mutation
    actor = FIXTURES[index][1]
    for path_index, value in changes:
        paths = list(_paths(actor))
        actor = _replace(actor, paths[path_index % len(paths)], value)
    return actor


@SETTINGS
@given(data=st.data())
def test_any_actor_data_is_imported_or_refused_cleanly(
        shared_daemon: Daemon, encounter_id: str, data: st.DataObject) -> None:
    adapters = [a["id"] for a in rpc(shared_daemon, "adapters.list")]
    adapter = data.draw(st.sampled_from(adapters))
    actor = (mutated_actor(data.draw(mutations)) if data.draw(st.booleans())
             else data.draw(json_values))
    system = data.draw(st.none() | st.sampled_from(["revised-2e", "combat-strength",
                                                    "power-pool"]))
    params: dict[str, Any] = {"adapter": adapter, "data": actor}
    if system is not None:
        params["system"] = system
    send(shared_daemon, json.dumps({"jsonrpc": "2.0", "method": "adapters.import",
                                    "params": params, "id": 1}).encode())
    # The same data as an encounter's combatant, and as a bare combatant object.
    send(shared_daemon, json.dumps([
        {"jsonrpc": "2.0", "method": "encounter.add", "id": 2,
         "params": {"id": encounter_id, "combatant": {"adapter": adapter, "data": actor}}},
        {"jsonrpc": "2.0", "method": "exchange.resolve", "id": 3,
         "params": {"system": system or "revised-2e", "attacker": actor,
                    "defender": COMBATANTS["revised-2e"][1],
                    "attack": {"mode": "mind-thrust"}}}]).encode())


# -- oversized, deep, many ----------------------------------------------------------------------
def test_a_body_over_one_mib_is_413(shared_daemon: Daemon) -> None:
    body = b'{"jsonrpc":"2.0","method":"dice.roll","params":{"expr":"' + b"1" * (1 << 20) \
        + b'"},"id":1}'
    reply = post_rpc(shared_daemon, body)
    assert reply.status == 413
    assert_clean(reply.text)


def raw_exchange(daemon: Daemon, data: bytes, timeout: float = ANSWER_WITHIN
                 ) -> tuple[int, bytes]:
    """Send ``data`` on a fresh connection (the daemon may answer and close before it
    has all of it), then read the answer: (status, whole answer)."""
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and b"Connection: close" not in answer \
                        and len(answer) > 4096:
                    break
        except (ConnectionResetError, TimeoutError):
            pass
    # aiohttp answers a request it could not parse as HTTP/1.0.
    assert answer.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")), answer[:200]
    return int(answer[9:12]), answer


def test_a_chunked_body_over_one_mib_is_413(shared_daemon: Daemon) -> None:
    # No Content-Length: the size is only known while reading.
    chunk = b"[" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(20)) + b"0\r\n\r\n"
    head = (f"POST /rpc HTTP/1.1\r\nHost: {shared_daemon.host_header}\r\n"
            f"Authorization: Bearer {shared_daemon.token}\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    status, answer = raw_exchange(shared_daemon, head + body)
    assert status == 413, answer[:300]
    assert_clean(answer.decode("utf-8", "replace"))


def test_a_body_of_one_mib_is_still_read(shared_daemon: Daemon) -> None:
    padding = " " * ((1 << 20) - 200)
    body = ('{"jsonrpc":"2.0","method":"dice.roll","params":{"expr":"1d6"},"id":1}'
            + padding).encode()
    assert len(body) <= 1 << 20
    answer = send(shared_daemon, body)
    assert "result" in answer


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    b'{"jsonrpc":"2.0","method":"dice.roll","params":{"expr":' + b"[" * 900 + b"]" * 900
    + b'},"id":1}',
    b'{"jsonrpc":"2.0","method":"adapters.import","params":{"adapter":"foundry.generic",'
    b'"data":' + b'{"system":' * 900 + b"1" + b"}" * 900 + b'},"id":1}',
    b'{"jsonrpc":"2.0","method":"exchange.resolve","params":{"system":"revised-2e",'
    b'"attacker":{"id":"x","name":' + b"[" * 900 + b"]" * 900 + b'}},"id":1}',
], ids=["100k nested arrays", "100k nested objects", "deep expr", "deep actor data",
        "deep combatant field"])
def test_deep_nesting_is_refused_cleanly(shared_daemon: Daemon, body: bytes) -> None:
    answer = send(shared_daemon, body)
    assert "error" in answer


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999",
                                     b"9" * 5000])
def test_numbers_json_cannot_hold_never_reach_the_store_or_the_answer(
        shared_daemon: Daemon, encounter_id: str, literal: bytes) -> None:
    calls = [
        b'{"jsonrpc":"2.0","method":"encounter.create","id":1,"params":{"system":'
        b'"revised-2e","options":{"H-2E-CRIT-MODS":%s}}}',
        b'{"jsonrpc":"2.0","method":"encounter.add","id":1,"params":{"id":"%s",'
        b'"combatant":{"id":"n","name":"N","attack_strength":3,"defense_strength":%%s}}}'
        % encounter_id.encode(),
        b'{"jsonrpc":"2.0","method":"encounter.declare","id":1,"params":{"id":"%s",'
        b'"combatant_id":"ulcen","choice":{"attack":{"mode":"ego-whip","target":"fenka",'
        b'"range":%%s}}}}' % encounter_id.encode(),
        b'{"jsonrpc":"2.0","method":"encounter.resolve","id":1,"params":{"id":"%s",'
        b'"dice":{"attack":[%%s]},"force":true}}' % encounter_id.encode(),
        b'{"jsonrpc":"2.0","method":"exchange.resolve","id":1,"params":{"system":'
        b'"combat-strength","attacker":{"id":"a","name":"A","attack_strength":10,'
        b'"defense_strength":%s},"defender":{"id":"b","name":"B","attack_strength":3,'
        b'"defense_strength":3},"attack":{"mode":"ego-whip"}}}',
        b'{"jsonrpc":"2.0","method":"adapters.import","id":1,"params":{"adapter":'
        b'"foundry.generic","system":"combat-strength","data":{"_id":"a1","name":"A",'
        b'"system":{"psp":%s}}}}',
        b'{"jsonrpc":"2.0","method":"dice.roll","id":1,"params":{"expr":"1d6","seed":%s}}',
        b'{"jsonrpc":"2.0","method":"dice.roll","id":%s,"params":{"expr":"1d6"}}',
    ]
    for call in calls:
        send(shared_daemon, call.replace(b"%s", literal))


def test_a_batch_of_101_is_refused_and_100_are_answered(shared_daemon: Daemon) -> None:
    def batch(n: int) -> bytes:
        return json.dumps([{"jsonrpc": "2.0", "method": "dice.roll",
                            "params": {"expr": "1d6"}, "id": i} for i in range(n)]).encode()

    refused = send(shared_daemon, batch(101))
    assert isinstance(refused, dict) and refused["error"]["code"] == -32602
    assert refused["error"]["data"]["limit"] == "max_batch"
    answered = send(shared_daemon, batch(100))
    assert sorted(a["id"] for a in answered) == list(range(100))
    # A huge batch (far past the limit, still under 1 MiB) is refused as fast, without
    # running any call.
    huge = send(shared_daemon, batch(5000))
    assert huge["error"]["code"] == -32602


@pytest.mark.parametrize("expr", ["100000d6", "100d100000", "1d1p", "100d1p", "100d2p",
                                  "99999999999999999999d6", "1d99999999999999999999",
                                  "0d6", "1d0", "1d1p+1d1p+1d1p"])
def test_dice_bombs_are_capped_or_refused_at_once(shared_daemon: Daemon, expr: str) -> None:
    # send() fails on an answer slower than ANSWER_WITHIN.
    answer = send(shared_daemon, json.dumps({"jsonrpc": "2.0", "method": "dice.roll",
                                             "params": {"expr": expr}, "id": 1}).encode())
    if "error" in answer:
        assert answer["error"]["code"] == -32602
    else:
        rolls = answer["result"]["rolls"]
        assert len(rolls) <= 100 * 101
        for roll in rolls:
            assert roll["value"] <= roll["sides"]
        if expr == "1d1p":
            # A one-sided die always penetrates: it stops after 100 follow-ups (API.md
            # "Limits") and says it was capped.
            assert len(rolls) == 101 and answer["result"].get("capped") is True


# -- slow senders ---------------------------------------------------------------------------
#: How long a client may take to send one request before the daemon gives up on it.
SLOW_SENDER_LIMIT = 15.0


def dribble(daemon: Daemon, head: bytes, rest: bytes, every: float,
            outcome: dict[str, float | None]) -> None:
    """Send ``head`` at once, then ``rest`` a byte every ``every`` seconds; record when
    the daemon closed the connection (or None if it never did)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=2) as sock:
        sock.sendall(head)
        for byte in rest:
            if time.monotonic() - started > SLOW_SENDER_LIMIT:
                outcome["closed_after"] = None
                return
            try:
                sock.sendall(bytes([byte]))
                sock.settimeout(every)
                if sock.recv(4096) == b"":
                    break
                # An answer (408 or similar) ends it too.
                break
            except TimeoutError:
                continue
            except OSError:
                break
        outcome["closed_after"] = time.monotonic() - started


def test_a_slow_sender_is_cut_off_by_a_server_timeout(shared_daemon: Daemon) -> None:
    """A client that sends the headers, then dribbles (slowloris) must not hold a
    connection for ever: the daemon's read timeout closes it."""
    body = json.dumps({"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "1d6"},
                       "id": 1}).encode() + b" " * 200
    token = shared_daemon.token
    head = (f"POST /rpc HTTP/1.1\r\nHost: {shared_daemon.host_header}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    body_outcome: dict[str, float | None] = {}
    header_outcome: dict[str, float | None] = {}
    threads = [
        threading.Thread(target=dribble, args=(shared_daemon, head, body, 0.5, body_outcome)),
        threading.Thread(target=dribble, args=(shared_daemon, head[:20], head[20:] + body,
                                               0.5, header_outcome)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SLOW_SENDER_LIMIT + 10)
    held = [what for what, outcome in (("a body", body_outcome), ("headers", header_outcome))
            if outcome.get("closed_after") is None]
    assert not held, (f"{' and '.join(held)} dribbled a byte every 0.5 s still held the "
                      f"connection after {SLOW_SENDER_LIMIT} s")


def test_many_slow_senders_do_not_starve_other_clients(shared_daemon: Daemon) -> None:
    head = (f"POST /rpc HTTP/1.1\r\nHost: {shared_daemon.host_header}\r\n"
            f"Authorization: Bearer {shared_daemon.token}\r\n"
            "Content-Length: 1000\r\n\r\n{").encode()
    sockets = []
    try:
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", shared_daemon.port), timeout=2)
            sock.sendall(head)
            sockets.append(sock)
        started = time.monotonic()
        assert request(shared_daemon, "GET", "/healthz", timeout=ANSWER_WITHIN).status == 200
        assert rpc(shared_daemon, "dice.roll", {"expr": "3d6"},
                   timeout=ANSWER_WITHIN)["total"] >= 3
        assert time.monotonic() - started < ANSWER_WITHIN
    finally:
        for sock in sockets:
            sock.close()


# -- WebSocket floods --------------------------------------------------------------------------
async def test_a_websocket_flood_leaves_the_daemon_responsive_and_memory_bounded(
        shared_daemon: Daemon) -> None:
    import aiohttp

    daemon = shared_daemon
    messages = 5000
    rss_before = daemon.rss_kib()
    probes: list[float] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(
            daemon.url + "/ws", protocols=("mindscape.v1", f"token.{daemon.token}"),
            max_msg_size=0) as ws:
        flood = json.dumps({"jsonrpc": "2.0", "method": "dice.roll",
                            "params": {"expr": "10d6"}, "id": 1})

        async def send_all() -> None:
            for _ in range(messages):
                await ws.send_str(flood)

        async def probe() -> None:
            # Another client, while the flood runs.
            for _ in range(5):
                started = time.monotonic()
                async with session.post(daemon.url + "/rpc", headers=auth(daemon),
                                        json={"jsonrpc": "2.0", "method": "dice.roll",
                                              "params": {"expr": "1d6"}, "id": 1}
                                        ) as response:
                    assert response.status == 200
                    await response.read()
                probes.append(time.monotonic() - started)

        import asyncio
        sender = asyncio.ensure_future(send_all())
        await asyncio.wait_for(probe(), timeout=20)
        answered = 0
        while answered < messages:
            message = await asyncio.wait_for(ws.receive(), timeout=20)
            assert message.type == aiohttp.WSMsgType.TEXT, message
            check_answer(200, message.data.encode())
            answered += 1
        await sender
    rss_after = daemon.rss_kib()
    assert max(probes) < ANSWER_WITHIN, probes
    # Bounded: 5000 answered messages leave at most a few MiB behind.
    assert rss_after - rss_before < 64 * 1024, (rss_before, rss_after)


async def test_a_websocket_that_never_reads_its_answers_is_held_back_not_buffered(
        shared_daemon: Daemon) -> None:
    """A client that floods requests and never reads the answers: the daemon stops
    reading when its answers cannot be sent (back-pressure), so its memory stays
    bounded, and other clients are served meanwhile."""
    import asyncio

    import aiohttp

    daemon = shared_daemon
    # An answer much larger than its request: the odds of a big pool.
    flood = json.dumps({"jsonrpc": "2.0", "method": "dice.roll", "id": 1,
                        "params": {"expr": "100d100p"}})
    rss_before = daemon.rss_kib()
    sent = 0
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(
            daemon.url + "/ws", protocols=("mindscape.v1", f"token.{daemon.token}"),
            max_msg_size=0)
        try:
            started = time.monotonic()
            while sent < 20_000 and time.monotonic() - started < 8:
                try:
                    await asyncio.wait_for(ws.send_str(flood), 1.0)
                except TimeoutError:
                    break  # the daemon stopped reading: held back
                sent += 1
            answer = rpc(daemon, "dice.roll", {"expr": "1d6"}, timeout=ANSWER_WITHIN)
            assert answer["total"] >= 1
            rss_during = daemon.rss_kib()
        finally:
            with contextlib.suppress(TimeoutError):
                # The closing handshake cannot get through answers nobody reads.
                await asyncio.wait_for(ws.close(), 0.5)
    print(f"\n{sent} requests flooded; daemon RSS {rss_before} -> {rss_during} KiB")
    assert request(daemon, "GET", "/healthz").status == 200
    # 20 000 answers of ~10 KiB would be ~200 MiB if they were all kept.
    assert rss_during - rss_before < 64 * 1024, (sent, rss_before, rss_during)


async def test_a_websocket_message_over_one_mib_closes_the_socket(
        shared_daemon: Daemon) -> None:
    import aiohttp

    daemon = shared_daemon
    async with aiohttp.ClientSession() as session, session.ws_connect(
            daemon.url + "/ws", protocols=("mindscape.v1", f"token.{daemon.token}")) as ws:
        try:
            await ws.send_str('{"jsonrpc":"2.0","method":"dice.roll","params":{"expr":"'
                              + "1" * (2 << 20) + '"},"id":1}')
        except ConnectionError:
            # the daemon dropped the connection while the client was still pushing its
            # 2 MiB (seen once in a full run): the send itself saw it go
            dropped = True
        else:
            dropped = False
        message = await ws.receive(timeout=10)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                                aiohttp.WSMsgType.CLOSING), message
        # The daemon answers 1009 (message too big) and drops the connection; while the
        # client is still pushing its 2 MiB the drop can reach it before the close frame,
        # which the client then reports as 1006 (or, dropped during the send, no code).
        # Either way the socket is gone.
        assert ws.close_code in ((1009, 1006, None) if dropped else (1009, 1006)), \
            ws.close_code
    assert request(daemon, "GET", "/healthz").status == 200


# -- memory that grows with what callers name ------------------------------------------------
def _calls_naming(daemon: Daemon, ids: Iterator[str], batches: int) -> None:
    for _ in range(batches):
        body = json.dumps([{"jsonrpc": "2.0", "method": "encounter.resolve",
                            "params": {"id": next(ids)}, "id": i} for i in range(100)])
        answers = json.loads(post_rpc(daemon, body.encode()).body)
        assert {a["error"]["code"] for a in answers} == {4004}


def test_calls_naming_unknown_encounters_leave_no_memory_behind(
        start_daemon: DaemonFactory) -> None:
    """Every write names an encounter id; ids that name nothing must not be remembered
    (5000 different unknown ids must cost no more than 5000 calls naming one)."""
    daemon = start_daemon()
    same = iter(lambda: "no-such-encounter", None)
    fresh = (f"{n:08d}-{'x' * 40}" for n in itertools.count())
    _calls_naming(daemon, same, 30)  # warm up: the allocator's arenas reach steady size
    start = daemon.rss_kib()
    _calls_naming(daemon, same, 50)
    after_same = daemon.rss_kib()
    _calls_naming(daemon, fresh, 50)
    after_fresh = daemon.rss_kib()
    growth_same, growth_fresh = after_same - start, after_fresh - after_same
    assert growth_fresh - growth_same < 512, (
        f"5000 unknown ids grew the daemon by {growth_fresh} KiB (the same id 5000 "
        f"times: {growth_same} KiB)")


# -- the HTTP layer itself -------------------------------------------------------------------
@pytest.mark.parametrize("what", ["long URL", "long header", "many headers", "bad method",
                                  "bad version", "no Host"])
def test_malformed_or_oversized_http_is_refused_without_a_5xx(shared_daemon: Daemon,
                                                              what: str) -> None:
    host = f"Host: {shared_daemon.host_header}\r\n"
    heads = {
        "long URL": f"GET /{'a' * 100_000} HTTP/1.1\r\n{host}\r\n",
        "long header": f"GET / HTTP/1.1\r\n{host}X-Junk: {'b' * 100_000}\r\n\r\n",
        "many headers": f"GET / HTTP/1.1\r\n{host}"
                        + "".join(f"X-{i}: {i}\r\n" for i in range(1000)) + "\r\n",
        "bad method": f"FROB /rpc HTTP/1.1\r\n{host}\r\n",
        "bad version": f"GET / HTTP/9.9\r\n{host}\r\n",
        "no Host": "GET /healthz HTTP/1.1\r\n\r\n",
    }
    status, answer = raw_exchange(shared_daemon, heads[what].encode())
    assert 400 <= status < 500, answer[:300]
    assert_clean(answer.decode("utf-8", "replace"))
    assert request(shared_daemon, "GET", "/healthz").status == 200


async def test_unauthenticated_websockets_are_closed_and_do_not_pile_up(
        shared_daemon: Daemon) -> None:
    """Sockets that never send ``auth`` are closed after the 5 s the daemon gives them
    (ws.py), and while 50 of them wait, other clients are served."""
    import asyncio

    import aiohttp

    daemon = shared_daemon
    async with aiohttp.ClientSession() as session:
        sockets = await asyncio.gather(*(session.ws_connect(
            daemon.url + "/ws", protocols=("mindscape.v1",)) for _ in range(50)))
        started = time.monotonic()
        assert rpc(daemon, "dice.roll", {"expr": "1d6"}, timeout=ANSWER_WITHIN)["total"] >= 1
        closes = await asyncio.gather(*(asyncio.wait_for(ws.receive(), 15)
                                        for ws in sockets))
        waited = time.monotonic() - started
        assert all(m.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                   for m in closes), closes[:3]
        assert {ws.close_code for ws in sockets} == {1008}
        assert waited < 5 + ANSWER_WITHIN
        for ws in sockets:
            await ws.close()
