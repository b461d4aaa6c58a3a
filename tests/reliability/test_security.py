"""Security: who may call, from which page, and what nobody can read.

API.md "Transport": "Missing or wrong token: HTTP 401 with no JSON-RPC processing."
"CORS only for allow-listed origins; preflight answered; requests whose Host is not a
loopback name or the configured host get HTTP 403 (DNS rebinding)". "the token never
appears in a URL or a log line". API.md "Methods": "encounter.declare ... choices stay
hidden until resolution"; "encounter.get ... never another side's hidden choice".
"""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import stat
import subprocess
import time
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.plugins import Plugin
from companion.registry import MethodSpec

from .checks import assert_clean
from .conftest import DaemonFactory
from .daemon import Daemon, Reply, RpcFault, auth, mindscape_command, post_rpc, request, rpc
from .play import COMBATANTS

ROOT = Path(__file__).resolve().parents[2]
EXTRA_ORIGIN = "https://vtt.example.org"
DEFAULT_ORIGIN = "http://localhost:30000"
FOREIGN_ORIGINS = ["https://evil.example", "null", "http://localhost:30000.evil.example",
                   "http://localhost:30001", "https://localhost:30000",
                   "http://evil.example:30000", "https://vtt.example.org.evil.example"]
CALL = json.dumps({"jsonrpc": "2.0", "method": "encounter.create",
                   "params": {"system": "combat-strength", "name": "not allowed"},
                   "id": 1}).encode()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the module, allowing one more origin than the defaults."""
    base = tmp_path_factory.mktemp("security")
    started = Daemon(base / "home", base / "logs",
                     extra_args=("--allow-origin", EXTRA_ORIGIN)).start()
    yield started
    started.kill()


#: Every answer any test here received, checked for the token at the end of the module.
ANSWERS: list[str] = []


def keep(reply: Reply) -> Reply:
    """Remember ``reply`` for the token check at the end of the module."""
    ANSWERS.append(json.dumps(dict(reply.headers)) + reply.text)
    return reply


def refused_before_json_rpc(reply: Reply, status: int) -> None:
    """``reply`` is ``status``, with no JSON-RPC answer, no CORS grant, no leak."""
    keep(reply)
    assert reply.status == status, (reply.status, reply.text)
    assert b"jsonrpc" not in reply.body
    assert not any(h.startswith("access-control-allow") for h in reply.headers)
    assert_clean(reply.text)


def not_created(daemon: Daemon) -> None:
    """The refused ``CALL`` created no encounter."""
    assert all(e["name"] != "not allowed" for e in rpc(daemon, "encounter.list"))


# -- the token -----------------------------------------------------------------------------
def test_no_token_is_401_and_nothing_runs(daemon: Daemon) -> None:
    reply = request(daemon, "POST", "/rpc", CALL, {"Content-Type": "application/json"})
    refused_before_json_rpc(reply, 401)
    assert reply.headers.get("www-authenticate", "").lower().startswith("bearer")
    not_created(daemon)


@pytest.mark.parametrize("header", [
    "", "Bearer", "Bearer ", "Bearer x", "Bearer {t}x", "Bearer {t_short}", "{t}",
    "Basic {basic}", "Bearer {t_upper}", "Token {t}", "Bearer {t} {t}", "Bearer\t{t}x"])
def test_a_wrong_token_is_401_and_nothing_runs(daemon: Daemon, header: str) -> None:
    token = daemon.token
    value = header.format(t=token, t_short=token[:-1], t_upper=token.upper(),
                          basic=base64.b64encode(f"gm:{token}".encode()).decode())
    reply = request(daemon, "POST", "/rpc", CALL, {"Authorization": value})
    refused_before_json_rpc(reply, 401)
    not_created(daemon)


def _compares_a_token(node: ast.Compare) -> bool:
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute)]
    spelled = [n.id if isinstance(n, ast.Name) else n.attr for n in names]
    return (any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
            and any("token" in s.lower() for s in spelled))


def test_tokens_are_compared_in_constant_time_only() -> None:
    """A static check of companion/: the token is compared with hmac.compare_digest
    (or secrets.compare_digest), and never with == or != (which stop at the first
    differing character, so response times would spell the token out)."""
    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "companion").rglob("*.py")}
    assert any("compare_digest" in text for text in sources.values())
    offending = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare) and _compares_a_token(node):
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offending == [], f"token compared with ==/!= at {offending}"


def test_the_token_file_is_private(daemon: Daemon) -> None:
    mode = stat.S_IMODE((daemon.home / "token").stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert stat.S_IMODE(daemon.home.stat().st_mode) & 0o022 == 0


def test_the_store_is_private_even_in_a_home_others_can_enter(
        tmp_path: Path, start_daemon: DaemonFactory) -> None:
    """The store holds every pending secret choice: another local user must not read it,
    also when the GM made the home folder himself with the usual 0755."""
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    started = start_daemon(home)
    created = rpc(started, "encounter.create", {"system": "combat-strength"})
    rpc(started, "encounter.add", {"id": created["id"],
                                   "combatant": COMBATANTS["combat-strength"][0]})
    readable = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in home.iterdir()
                if stat.S_IMODE(p.stat().st_mode) & 0o077}
    home_open = stat.S_IMODE(home.stat().st_mode) & 0o077
    assert not readable or not home_open, f"readable by others: {readable}"


def test_a_token_file_readable_by_others_is_narrowed_at_start(
        tmp_path: Path, start_daemon: DaemonFactory) -> None:
    """Kept, but the start says the token may have been read, and how to replace it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / "token"
    token.write_text("a-token-that-was-left-readable-by-everyone-0123456789\n")
    token.chmod(0o644)
    started = start_daemon(home)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert started.token == "a-token-that-was-left-readable-by-everyone-0123456789"
    assert rpc(started, "dice.roll", {"expr": "1d6"})["total"] >= 1
    assert (f"mindscape: warning: the token file {token} was readable by other users "
            f"(mode 0644); it is private now (0600), but the token may have been read: run "
            f"`mindscape token --home {home} --rotate`") in started.output()


def test_a_token_file_others_could_write_is_replaced_at_start(
        tmp_path: Path, start_daemon: DaemonFactory) -> None:
    """Its token may be one another user chose: a new one is written, and the start
    says so."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / "token"
    chosen = "a-token-another-user-chose-for-this-daemon-0123456789"
    token.write_text(chosen + "\n")
    token.chmod(0o666)
    started = start_daemon(home)
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and started.token != chosen
    assert request(started, "POST", "/rpc", json.dumps(
        {"jsonrpc": "2.0", "method": "companion.info", "id": 1}).encode(),
        {"Authorization": f"Bearer {chosen}"}).status == 401
    assert rpc(started, "dice.roll", {"expr": "1d6"})["total"] >= 1
    assert (f"mindscape: warning: the token file {token} was writable by other users "
            "(mode 0666): another user may have chosen its token, so a new one was "
            "written") in started.output()


def test_a_rotated_token_replaces_the_old_one_without_a_restart(
        start_daemon: DaemonFactory) -> None:
    """`mindscape token --rotate`: the new token works at once (a token that does not
    match has the daemon look at the file again), the old one stops working within a
    few seconds (the daemon re-reads the file at most once a second otherwise), the file
    stays 0600."""
    started = start_daemon()
    old = started.token
    body = json.dumps({"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "1d6"},
                       "id": 1}).encode()
    rotated = subprocess.run([*mindscape_command(), "token", "--rotate", "--home",
                              str(started.home)], capture_output=True, text=True,
                             timeout=30, check=True)
    new = rotated.stdout.strip().splitlines()[0]
    assert new != old and new == started.token
    assert stat.S_IMODE((started.home / "token").stat().st_mode) == 0o600
    assert request(started, "POST", "/rpc", body,
                   {"Authorization": f"Bearer {new}"}).status == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if request(started, "POST", "/rpc", body, {"Authorization": f"Bearer {old}"}
                   ).status == 401:
            break
        time.sleep(0.2)
    assert request(started, "POST", "/rpc", body,
                   {"Authorization": f"Bearer {old}"}).status == 401
    assert request(started, "POST", "/rpc", body,
                   {"Authorization": f"Bearer {new}"}).status == 200
    assert old not in started.output() and new not in started.output()


# -- Host and Origin -------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/rpc", "/", "/healthz", "/ws"])
@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}",
                                  "127.0.0.1.evil.example:{port}", "localhost.evil.example",
                                  "127.0.0.2:{port}", "0.0.0.0:{port}", "", "{port}"])
def test_a_foreign_host_is_403_dns_rebinding(daemon: Daemon, host: str, path: str) -> None:
    headers = {**auth(daemon), "Host": host.format(port=daemon.port)}
    method, body = ("POST", CALL) if path == "/rpc" else ("GET", None)
    refused_before_json_rpc(request(daemon, method, path, body, headers), 403)
    not_created(daemon)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}",
                                  "LOCALHOST:{port}", "127.0.0.1", "localhost"])
def test_loopback_hosts_are_served(daemon: Daemon, host: str) -> None:
    headers = {**auth(daemon), "Host": host.format(port=daemon.port)}
    body = json.dumps({"jsonrpc": "2.0", "method": "dice.roll",
                       "params": {"expr": "1d6"}, "id": 1}).encode()
    reply = keep(request(daemon, "POST", "/rpc", body, headers))
    assert reply.status == 200 and "result" in reply.json()


@pytest.mark.parametrize("path", ["/rpc", "/", "/ws"])
@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_a_foreign_origin_is_403_without_cors_headers(daemon: Daemon, origin: str,
                                                      path: str) -> None:
    headers = {**auth(daemon), "Origin": origin}
    method, body = ("POST", CALL) if path == "/rpc" else ("GET", None)
    refused_before_json_rpc(request(daemon, method, path, body, headers), 403)
    not_created(daemon)


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_a_preflight_from_a_foreign_origin_gets_no_cors_allowance(daemon: Daemon,
                                                                  origin: str) -> None:
    reply = keep(request(daemon, "OPTIONS", "/rpc", None, {
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"}))
    assert reply.status >= 400
    assert not any(h.startswith("access-control-") for h in reply.headers), reply.headers


@pytest.mark.parametrize("origin", [DEFAULT_ORIGIN, "http://127.0.0.1:30000", EXTRA_ORIGIN])
def test_allowed_origins_get_cors_headers_and_answers(daemon: Daemon, origin: str) -> None:
    preflight = keep(request(daemon, "OPTIONS", "/rpc", None, {
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"}))
    assert preflight.status in (200, 204)
    assert preflight.headers["access-control-allow-origin"] == origin
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    body = json.dumps({"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "1d6"},
                       "id": 1}).encode()
    reply = keep(request(daemon, "POST", "/rpc", body, {**auth(daemon), "Origin": origin}))
    assert reply.status == 200
    assert reply.headers["access-control-allow-origin"] == origin
    assert "origin" in reply.headers.get("vary", "").lower()
    # Never a wildcard, never credentials-with-wildcard.
    assert reply.headers["access-control-allow-origin"] != "*"


# -- WebSocket authentication ------------------------------------------------------------------
async def ws_session(daemon: Daemon, protocols: tuple[str, ...] = ("mindscape.v1",),
                     path: str = "/ws", headers: dict[str, str] | None = None
                     ) -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
    session = aiohttp.ClientSession()
    try:
        ws = await session.ws_connect(daemon.url + path, protocols=protocols,
                                      headers=headers or {})
    except BaseException:
        await session.close()
        raise
    return session, ws


async def test_a_websocket_with_the_token_subprotocol_is_served_and_only_the_protocol_echoed(
        daemon: Daemon) -> None:
    session, ws = await ws_session(daemon, ("mindscape.v1", f"token.{daemon.token}"))
    async with session, ws:
        assert ws.protocol == "mindscape.v1"
        await ws.send_json({"jsonrpc": "2.0", "method": "dice.roll",
                            "params": {"expr": "1d6"}, "id": 1})
        answer = await ws.receive_json(timeout=5)
        ANSWERS.append(json.dumps(answer))
        assert "result" in answer


async def test_a_websocket_with_a_wrong_token_subprotocol_is_refused_at_the_upgrade(
        daemon: Daemon) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        await ws_session(daemon, ("mindscape.v1", f"token.{daemon.token}x"))
    assert caught.value.status == 401


@pytest.mark.parametrize("first", [
    {"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "1d6"}, "id": 1},
    {"jsonrpc": "2.0", "method": "auth", "params": {"token": "wrong"}, "id": 1},
    {"jsonrpc": "2.0", "method": "auth", "params": {}, "id": 1},
    [{"jsonrpc": "2.0", "method": "auth", "params": {"token": "{t}"}, "id": 1}],
    "not json",
])
async def test_a_websocket_whose_first_message_is_not_a_valid_auth_is_closed_unserved(
        daemon: Daemon, first: Any) -> None:
    text = first if isinstance(first, str) else json.dumps(first).replace("{t}", daemon.token)
    session, ws = await ws_session(daemon)
    async with session, ws:
        await ws.send_str(text)
        seen: list[Any] = []
        while True:
            message = await ws.receive(timeout=10)
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            seen.append(json.loads(message.data))
        assert ws.close_code == 1008
        assert all("result" not in m for m in seen), seen
        ANSWERS.extend(json.dumps(m) for m in seen)


async def test_a_token_in_the_websocket_url_does_not_authenticate(daemon: Daemon) -> None:
    session, ws = await ws_session(daemon, path=f"/ws?token={daemon.token}")
    async with session, ws:
        await ws.send_json({"jsonrpc": "2.0", "method": "encounter.list", "id": 1})
        message = await ws.receive(timeout=10)
        while message.type == aiohttp.WSMsgType.TEXT:
            assert "result" not in json.loads(message.data)
            message = await ws.receive(timeout=10)
        assert ws.close_code == 1008


async def test_the_first_message_auth_serves_the_socket(daemon: Daemon) -> None:
    session, ws = await ws_session(daemon)
    async with session, ws:
        await ws.send_json({"jsonrpc": "2.0", "method": "auth",
                            "params": {"token": daemon.token}, "id": 7})
        answer = await ws.receive_json(timeout=5)
        ANSWERS.append(json.dumps(answer))
        assert answer["id"] == 7 and answer["result"]["authenticated"] is True
        await ws.send_json({"jsonrpc": "2.0", "method": "dice.roll",
                            "params": {"expr": "1d6"}, "id": 8})
        assert "result" in await ws.receive_json(timeout=5)


@pytest.mark.parametrize("headers", [{"Origin": "https://evil.example"},
                                     {"Host": "evil.example"}])
async def test_a_websocket_from_a_foreign_page_is_refused_even_with_the_token(
        daemon: Daemon, headers: dict[str, str]) -> None:
    """Cross-site WebSocket hijacking: the browser sends the page's Origin."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        await ws_session(daemon, ("mindscape.v1", f"token.{daemon.token}"),
                         headers=headers)
    assert caught.value.status == 403


# -- hidden choices ------------------------------------------------------------------------------
#: Two different valid choices for the first combatant, per system.
SECRET_CHOICES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "revised-2e": (
        {"attack": {"mode": "mind-thrust", "multiplier": 1, "range": "short",
                    "target": "fenka"}, "defense": {"mode": "thought-shield"}},
        {"attack": {"mode": "ego-whip", "range": "short", "target": "fenka"},
         "defense": {"mode": "mental-barrier"}}),
    "combat-strength": ({"stance": "trance"}, {"stance": "discipline"}),
    "power-pool": ({"attack": {"mode": "mental-stab", "target": "fenka"}},
                   {"attack": {"mode": "personality-invasion", "target": "fenka"}}),
}


def _combatants(system: str) -> tuple[dict[str, Any], ...]:
    first, second = COMBATANTS[system]
    if system == "power-pool":
        first = {**first, "attacks": ["mental-stab", "personality-invasion"]}
    return first, second


def _scrub(value: Any, ids: set[str]) -> Any:
    """``value`` without what differs between two encounters anyway: ids and times."""
    if isinstance(value, dict):
        return {k: _scrub(v, ids) for k, v in value.items()
                if k not in ("created_at", "updated_at")}
    if isinstance(value, list):
        return [_scrub(v, ids) for v in value]
    if isinstance(value, str) and value in ids:
        return "<encounter>"
    return value


async def _watched(daemon: Daemon, encounter: str) -> tuple[aiohttp.ClientSession,
                                                            aiohttp.ClientWebSocketResponse]:
    session, ws = await ws_session(daemon, ("mindscape.v1", f"token.{daemon.token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": "encounter.watch",
                        "params": {"id": encounter}, "id": 1})
    assert "result" in await ws.receive_json(timeout=5)
    return session, ws


async def _drain(ws: aiohttp.ClientWebSocketResponse) -> list[Any]:
    seen: list[Any] = []
    while True:
        try:
            message = await ws.receive(timeout=0.5)
        except TimeoutError:
            return seen
        if message.type != aiohttp.WSMsgType.TEXT:
            return seen
        seen.append(json.loads(message.data))


async def _everything_readable(daemon: Daemon, encounter: str) -> dict[str, Any]:
    """What any method shows about ``encounter`` right now."""
    listed = [e for e in rpc(daemon, "encounter.list") if e["id"] == encounter]
    batch = post_rpc(daemon, [
        {"jsonrpc": "2.0", "method": "encounter.get", "params": {"id": encounter}, "id": 1},
        {"jsonrpc": "2.0", "method": "encounter.log", "params": {"id": encounter}, "id": 2},
    ]).json()
    return {"get": rpc(daemon, "encounter.get", {"id": encounter}),
            "log": rpc(daemon, "encounter.log", {"id": encounter}),
            "list": listed, "batch": sorted(batch, key=lambda a: a["id"])}


@pytest.mark.parametrize("system", sorted(SECRET_CHOICES))
async def test_no_method_tells_two_different_hidden_choices_apart_before_resolution(
        daemon: Daemon, system: str) -> None:
    """Two encounters with the same history, differing only in one secret choice: every
    read (get, log, list, a batch, the watchers' notifications) and the declare answer
    itself are identical until the step is resolved; after it, the log tells them apart
    (so the comparison would have seen a leak)."""
    encounters = []
    for _ in range(2):
        created = rpc(daemon, "encounter.create", {"system": system})
        for combatant in _combatants(system):
            rpc(daemon, "encounter.add", {"id": created["id"], "combatant": combatant})
        encounters.append(str(created["id"]))
    ids = set(encounters)
    watchers = [await _watched(daemon, e) for e in encounters]
    try:
        before = [_scrub(await _everything_readable(daemon, e), ids) for e in encounters]
        declared = [rpc(daemon, "encounter.declare", {"id": e, "combatant_id": "ulcen",
                                                      "choice": choice})
                    for e, choice in zip(encounters, SECRET_CHOICES[system], strict=True)]
        # The same batch trick a player might relay: declare, then read in one request.
        tricks = [post_rpc(daemon, [
            {"jsonrpc": "2.0", "method": "encounter.declare", "id": 1,
             "params": {"id": e, "combatant_id": "ulcen", "choice": choice}},
            {"jsonrpc": "2.0", "method": "encounter.get", "params": {"id": e}, "id": 2},
            {"jsonrpc": "2.0", "method": "encounter.log", "params": {"id": e}, "id": 3}]).json()
            for e, choice in zip(encounters, SECRET_CHOICES[system], strict=True)]
        after = [_scrub(await _everything_readable(daemon, e), ids) for e in encounters]
        notices = [_scrub(await _drain(ws), ids) for _, ws in watchers]
        assert declared[0] == declared[1]
        assert _scrub(tricks[0], ids) == _scrub(tricks[1], ids)
        assert after[0] == after[1]
        assert notices[0] == notices[1] and notices[0], notices
        for notice in notices[0]:
            assert set(notice["params"]) <= {"id", "revision"}, notice
        # Only the public bookkeeping moved: the revision, who is waited for, who declared
        # (and, in power-pool, whose turn it is: an attack is answered by a defense, and
        # the minds it strikes, whose defense others may join).
        for key in set(after[0]["get"]) | set(before[0]["get"]):
            if key not in ("revision", "waiting_for", "declared", "phase", "acted", "struck"):
                assert after[0]["get"].get(key) == before[0]["get"].get(key), key
        for entry in after[0]["log"]["steps"]:
            if entry["kind"] == "declare":
                assert entry["params"]["choice"] is None and entry["params"]["hidden"]
        for e in encounters:
            rpc(daemon, "encounter.resolve", {"id": e, "force": True, "seed": 1})
        revealed = [rpc(daemon, "encounter.log", {"id": e}) for e in encounters]
        assert _scrub(revealed[0], ids) != _scrub(revealed[1], ids)
    finally:
        for session, ws in watchers:
            await ws.close()
            await session.close()


def _resolve_with_dice_asked_for(daemon: Daemon, encounter: str) -> dict[str, list[int]]:
    """Resolve ``encounter``'s step (force) with dice the GM types: each 4002 tells the
    purpose, sides and count still needed (API.md), which are then supplied (the
    highest face). The dice supplied."""
    dice: dict[str, list[int]] = {}
    for _ in range(20):
        try:
            rpc(daemon, "encounter.resolve", {"id": encounter, "force": True, "dice": dice})
        except RpcFault as fault:
            assert fault.code == 4002, fault
            need = fault.data
            dice.setdefault(need["purpose"], []).extend([need["sides"]] * need["needed"])
            continue
        return dice
    raise AssertionError(f"still asking for dice after {dice}")


@pytest.mark.parametrize("system", sorted(SECRET_CHOICES))
async def test_an_undone_resolve_in_the_log_does_not_tell_the_hidden_choices_by_its_dice(
        daemon: Daemon, system: str) -> None:
    """A resolve with dice the GM supplied, then undone: its choices are hidden again,
    and so are the dice it was given (how many, of which sides, tell the choices: a
    mind thrust's d4 damage against an ego whip's d6). The two logs are identical."""
    encounters = []
    supplied = []
    for choice in SECRET_CHOICES[system]:
        created = rpc(daemon, "encounter.create", {"system": system})
        for combatant in _combatants(system):
            rpc(daemon, "encounter.add", {"id": created["id"], "combatant": combatant})
        rpc(daemon, "encounter.declare", {"id": created["id"], "combatant_id": "ulcen",
                                          "choice": choice})
        supplied.append(_resolve_with_dice_asked_for(daemon, created["id"]))
        rpc(daemon, "encounter.undo", {"id": created["id"]})
        encounters.append(str(created["id"]))
    ids = set(encounters)
    logs = [_scrub(rpc(daemon, "encounter.log", {"id": e}), ids) for e in encounters]
    assert logs[0] == logs[1]
    resolve = next(s for s in logs[0]["steps"] if s["kind"] == "resolve")
    assert resolve["hidden"] is True and "dice" not in resolve["params"], resolve
    if system != "combat-strength":
        # (combat-strength's intent phase rolls nothing: there the dice tell nothing)
        assert supplied[0] != supplied[1], supplied


crafted_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=30)
    | st.sampled_from(["fenka", "ulcen", "mind-thrust", "__proto__", "pending", "<script>"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["mode", "target", "multiplier", "range", "paid",
                                       "pending", "choice", "hidden", "state", "x"]),
                      inner, max_size=4), max_leaves=10)
crafted_choices = st.dictionaries(
    st.sampled_from(["stance", "attack", "defense", "pending", "revision", "combatant_id",
                     "__proto__"]), crafted_values, max_size=4)


@pytest.fixture(scope="module")
def crafted_encounter(daemon: Daemon) -> str:
    """A revised-2e encounter with two combatants, for the crafted choices."""
    created = rpc(daemon, "encounter.create", {"system": "revised-2e"})
    for combatant in COMBATANTS["revised-2e"]:
        rpc(daemon, "encounter.add", {"id": created["id"], "combatant": combatant})
    return str(created["id"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(choice=crafted_choices)
def test_a_crafted_choice_is_stored_as_a_valid_choice_or_changes_nothing(
        daemon: Daemon, crafted_encounter: str, choice: dict[str, Any]) -> None:
    """Choices relayed by the GM's client from a player are untrusted input."""
    encounter = crafted_encounter
    before = rpc(daemon, "encounter.get", {"id": encounter})
    reply = post_rpc(daemon, {"jsonrpc": "2.0", "method": "encounter.declare", "id": 1,
                              "params": {"id": encounter, "combatant_id": "ulcen",
                                         "choice": choice}})
    keep(reply)
    assert reply.status == 200
    assert_clean(reply.text)
    answer = reply.json()
    after = rpc(daemon, "encounter.get", {"id": encounter})
    if "error" in answer:
        assert answer["error"]["code"] in (-32602, 4001, 4004), answer
        assert after == before
    else:
        assert after["revision"] == before["revision"] + 1
        # A secret choice is never echoed, nor does it write anything.
        assert answer["result"] == {"revision": after["revision"],
                                    "waiting_for": answer["result"]["waiting_for"],
                                    "updates": []}


# -- the token is in no answer and no log line ------------------------------------------------
def test_the_token_is_in_no_answer_and_no_log_line(daemon: Daemon) -> None:
    """Runs last in this module: every answer collected above, plus a tour of every
    public page and error, and the daemon's whole output."""
    token = daemon.token
    tour = [
        request(daemon, "GET", "/"), request(daemon, "GET", "/healthz"),
        request(daemon, "GET", "/nowhere"), request(daemon, "GET", f"/rpc?token={token}"),
        request(daemon, "GET", f"/?token={token}"),
        request(daemon, "POST", f"/rpc?token={token}", CALL),
        post_rpc(daemon, {"jsonrpc": "2.0", "method": "rpc.discover", "id": 1}),
        post_rpc(daemon, {"jsonrpc": "2.0", "method": "companion.info", "id": 1}),
        post_rpc(daemon, {"jsonrpc": "2.0", "method": "no.such", "id": 1}),
        post_rpc(daemon, b"{"),
        request(daemon, "POST", "/rpc", b"x", {**auth(daemon),
                                               "Content-Length": str(2 << 20)}),
    ]
    # A caller that puts the token into params gets it echoed in its own error (the id
    # it asked for), but it must not reach the log.
    echoed = post_rpc(daemon, {"jsonrpc": "2.0", "method": "encounter.get",
                               "params": {"id": token}, "id": 1})
    assert echoed.json()["error"]["code"] == 4004
    for reply in tour:
        keep(reply)
    assert tour[0].status == 200 and "mindscape token" in tour[0].text
    for answer in ANSWERS:
        assert token not in answer
    output = daemon.output()
    assert output, "the daemon logged nothing"
    assert token not in output


# -- hostile plugin metadata (in-process app) ------------------------------------------------
EVIL = "<script>alert('mindscape')</script>"


async def _evil_method(context: Any, params: dict[str, Any]) -> Any:
    return {"nan": float("nan"), "text": EVIL}


def evil_plugin() -> Plugin:
    """A plugin whose every name is markup, and a method that answers NaN."""
    return Plugin(name=EVIL, version="<img src=x onerror=alert(1)>", methods=(
        MethodSpec("evil.answer", {"type": "object"}, _evil_method, EVIL),))


def colliding_plugin() -> Plugin:
    """A plugin that tries to replace a core method."""
    return Plugin(name="hijack", version="1", methods=(
        MethodSpec("encounter.get", {"type": "object"}, _evil_method, "hijack"),))


def broken_plugin() -> Plugin:
    """A plugin factory that fails, with a path and a secret in its message."""
    raise RuntimeError("/home/gm/secret/path.py exploded with a token abc123")


def _entry_points() -> list[EntryPoint]:
    group = "mindscape.plugins"
    here = "tests.reliability.test_security"
    return [EntryPoint(name=EVIL, value=f"{here}:evil_plugin", group=group),
            EntryPoint(name="hijack", value=f"{here}:colliding_plugin", group=group),
            EntryPoint(name="broken", value=f"{here}:broken_plugin", group=group)]


async def test_hostile_plugin_metadata_is_escaped_contained_and_cannot_replace_core_methods(
        aiohttp_client: Any, tmp_path: Path) -> None:
    from companion.app import create_app
    from companion.settings import Settings

    settings_ = Settings(home=tmp_path / "home", plugins=_entry_points)
    client = await aiohttp_client(create_app(settings_))
    token = (tmp_path / "home" / "token").read_text().strip()
    headers = {"Host": "127.0.0.1", "Authorization": f"Bearer {token}"}

    async def call(method: str, params: Any = None) -> tuple[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
        if params is not None:
            message["params"] = params
        response = await client.post("/rpc", json=message, headers=headers)
        text = await response.text()
        return text, json.loads(text, parse_constant=lambda name: f"<{name}>")

    page = await (await client.get("/", headers={"Host": "127.0.0.1"})).text()
    assert "<script>" not in page and "<img" not in page
    _, info = await call("companion.info")
    reports = {p["name"]: p for p in info["result"]["plugins"]}
    assert reports["hijack"]["error"] and "collides" in reports["hijack"]["error"]
    assert reports["broken"]["error"]
    assert "secret" not in json.dumps(info) and "abc123" not in json.dumps(info)
    assert_clean(json.dumps(info))
    # The core method is still the core one.
    _, got = await call("encounter.get", {"id": "nope"})
    assert got["error"]["code"] == 4004
    # A plugin answering NaN does not make the daemon send something that is not JSON.
    text, _ = await call("evil.answer", {})
    assert "NaN" not in text, text
    assert json.loads(text)["result"]["nan"] is None  # orjson writes it as null
    await asyncio.sleep(0)
