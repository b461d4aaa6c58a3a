"""Authentication, DNS-rebinding and CORS guards, body limit, token file (API.md
"Transport": authentication and browser safety)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import html
import io
import json
import logging
import os
import re
import secrets
import socket
import stat
import time
import zlib
from importlib.metadata import EntryPoint
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp.http_parser import HttpRequestParserPy
from aiohttp.test_utils import TestClient

import tests.sample_plugin as sample_plugin
from companion import status as status_module
from companion import ws as ws_module
from companion.app import create_app
from companion.hub import RECENT_CLIENTS
from companion.keys import ACCESS_LOG, HUB, SERVICES, TOKENS
from companion.logs import MAX_AIOHTTP_MESSAGE, MAX_KEPT, JsonLines, ServerLog, redact
from companion.plugins import Plugin
from companion.settings import Settings
from companion.status import SHOWN
from companion.store import StoreError
from companion.tokens import TokenKeeper, ensure_token, rotate_token
from tests.sample_plugin import SampleDuel

from .conftest import GROUP, ClientFactory, Rpc, with_plugins

INFO = {"jsonrpc": "2.0", "method": "companion.info", "id": 1}
CREATE = {"jsonrpc": "2.0", "method": "encounter.create",
          "params": {"system": "sample-duel"}, "id": 1}


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic x", "Bearer", "bearer "])
async def test_missing_or_wrong_token_is_401_before_any_json_rpc(
        rpc: Rpc, header: str | None) -> None:
    """API.md: 'Missing or wrong token: HTTP 401 with no JSON-RPC processing'."""
    headers = {} if header is None else {"Authorization": header}
    response = await rpc.client.post("/rpc", json=CREATE, headers=headers)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    body = await response.json()
    assert "jsonrpc" not in body
    assert await rpc.ok("encounter.list") == []


async def test_no_response_names_the_server_software_or_its_version(rpc: Rpc) -> None:
    """SECURITY.md: a probing page learns no aiohttp or Python version from any answer."""
    async def streamed() -> Any:
        for _ in range(20):
            yield b" " * 65536

    origin = {"Origin": "http://localhost:30000"}
    answers = [await rpc.post(INFO), await rpc.client.post("/rpc", json=INFO),
               await rpc.client.get("/"), await rpc.client.get("/healthz"),
               await rpc.client.get("/nowhere", headers=rpc.auth),
               await rpc.client.get("/rpc", headers=rpc.auth),
               await rpc.client.get("/", headers={"Host": "evil.example"}),
               await rpc.client.options("/rpc", headers=origin),
               await rpc.post(INFO, headers=origin),
               # aiohttp raises this one while the body is read
               await rpc.client.post("/rpc", data=streamed(), headers=rpc.auth),
               await rpc.client.get("/ws", headers={"Sec-WebSocket-Protocol":
                                                    "mindscape.v1, token.wrong"})]
    assert [a.status for a in answers] == [200, 401, 200, 200, 404, 405, 403, 204, 200,
                                           413, 401]
    for answer in answers:
        assert answer.headers["Server"] == "mindscape"
    handshake = await rpc.client.get("/ws", headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": f"mindscape.v1, token.{rpc.token}"})
    assert handshake.status == 101 and handshake.headers["Server"] == "mindscape"
    handshake.close()


async def test_token_is_accepted_in_any_case_of_bearer(rpc: Rpc) -> None:
    response = await rpc.client.post("/rpc", json=INFO,
                                     headers={"Authorization": f"bearer {rpc.token}"})
    assert response.status == 200


@pytest.mark.parametrize("host", ["evil.example:39393", "evil.example", "127.0.0.1.nip.io",
                                  "localhost.evil", "127.0.0.1:x", "",
                                  "localhost:\u0661\u0662", "127.0.0.1:\uff18"])
async def test_foreign_host_is_403(rpc: Rpc, host: str) -> None:
    """API.md: requests whose Host is not a loopback name ... get HTTP 403."""
    response = await rpc.post(INFO, headers={"Host": host})
    assert response.status == 403
    assert (await rpc.client.get("/healthz", headers={"Host": host})).status == 403


async def test_a_request_without_a_host_is_403(rpc: Rpc) -> None:
    """HTTP/1.0 may leave Host out (aiohttp's parser requires it of 1.1 alone): no Host
    is no loopback name either, so the request is refused as a foreign Host is."""
    for path in (b"/healthz", b"/"):
        reader, writer = await _opened(rpc, b"GET " + path + b" HTTP/1.0\r\n\r\n")
        answer = await _answer(reader)
        writer.close()
        assert answer.startswith(b"HTTP/1.0 403 "), answer[:80]
        assert b'{"error": "this Host is not allowed' in answer


@pytest.mark.parametrize("host", ["localhost:39393", "127.0.0.1:8", "[::1]:39393",
                                  "LOCALHOST", "127.0.0.1"])
async def test_loopback_hosts_are_accepted(rpc: Rpc, host: str) -> None:
    response = await rpc.post(INFO, headers={"Host": host})
    assert response.status == 200


async def test_allowed_origin_gets_cors_headers(rpc: Rpc) -> None:
    response = await rpc.post(INFO, headers={"Origin": "http://localhost:30000"})
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:30000"
    response = await rpc.post(INFO, headers={"Origin": "http://127.0.0.1:30000"})
    assert response.headers["Access-Control-Allow-Origin"] == "http://127.0.0.1:30000"


async def test_allowed_origin_sees_the_401(rpc: Rpc) -> None:
    response = await rpc.client.post("/rpc", json=INFO,
                                     headers={"Origin": "http://localhost:30000"})
    assert response.status == 401
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:30000"


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://localhost:3000",
                                    "", "http://[::1]:30000"])
async def test_foreign_origin_is_refused_without_cors_headers(rpc: Rpc, origin: str) -> None:
    """docs/API.md "Security": allowed are `http://localhost:30000`,
    `http://127.0.0.1:30000` and every `--allow-origin`; nothing else by default, not
    even Foundry's port on another loopback name."""
    response = await rpc.post(INFO, headers={"Origin": origin})
    assert response.status == 403
    assert "Access-Control-Allow-Origin" not in response.headers


async def test_preflight_of_an_allowed_origin(rpc: Rpc) -> None:
    response = await rpc.client.options("/rpc", headers={
        "Origin": "http://localhost:30000", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert response.status == 204
    headers = response.headers
    assert headers["Access-Control-Allow-Origin"] == "http://localhost:30000"
    assert "POST" in headers["Access-Control-Allow-Methods"]
    allowed = {h.strip().lower() for h in headers["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert int(headers["Access-Control-Max-Age"]) > 0


async def test_a_preflight_names_the_methods_of_its_path_and_an_unknown_path_is_404(
        rpc: Rpc) -> None:
    """The preflight's Allow agrees with the 405 the path answers to other methods."""
    origin = {"Origin": "http://localhost:30000", "Access-Control-Request-Method": "GET"}
    response = await rpc.client.options("/", headers=origin)
    assert response.status == 204 and response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert response.headers["Access-Control-Allow-Methods"] == "GET, HEAD"
    response = await rpc.client.get("/rpc")
    assert response.status == 405 and response.headers["Allow"] == "POST"
    response = await rpc.client.options("/nowhere", headers=origin)
    assert response.status == 404
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:30000"


async def test_preflight_of_a_foreign_origin_is_403_without_cors_headers(rpc: Rpc) -> None:
    response = await rpc.client.options("/rpc", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert response.status == 403
    assert not any(h.lower().startswith("access-control-") for h in response.headers)


async def test_more_origins_by_setting(aiohttp_client: Any, tmp_path: Path) -> None:
    from companion.app import create_app
    from companion.settings import merge_origins

    settings = Settings(home=tmp_path, allow_origins=merge_origins(["https://vtt.example/"]))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    response = await client.options("/rpc", headers={"Origin": "https://vtt.example"})
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == "https://vtt.example"


async def test_a_userscript_managers_extension_origin_can_be_allowed(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """D10 (docs/ROLL20.md): a userscript manager may send its extension's origin on the
    bridge's requests; `--allow-origin moz-extension://<id>` lets it through (with CORS),
    and another extension stays refused."""
    from companion.app import create_app
    from companion.settings import merge_origins

    origin = "moz-extension://0d3c2a6e-8f11-4c55-9c1b-6b0f3c1e2a77"
    settings = Settings(home=tmp_path, allow_origins=merge_origins([origin + "/"]))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    response = await client.post("/rpc", json=INFO, headers={
        "Origin": origin, "Authorization": f"Bearer {token}"})
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == origin
    assert (await response.json())["result"]["name"] == "mindscape"
    other = await client.post("/rpc", json=INFO, headers={
        "Origin": "moz-extension://another-id", "Authorization": f"Bearer {token}"})
    assert other.status == 403


async def test_an_extension_origin_is_matched_in_its_own_case(aiohttp_client: Any,
                                                             tmp_path: Path) -> None:
    """SECURITY.md 1: an extension's id is kept as given (Safari's are upper-case UUIDs)
    and the Origin must match the allowed one exactly: the same id in another case is
    another origin."""
    from companion.app import create_app
    from companion.settings import merge_origins

    origin = "safari-web-extension://6F1C7B2E-3A4D-4E5F-8A9B-0C1D2E3F4A5B"
    settings = Settings(home=tmp_path, allow_origins=merge_origins([origin]))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    response = await client.options("/rpc", headers={"Origin": origin})
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == origin
    other = await client.options("/rpc", headers={"Origin": origin.lower()})
    assert other.status == 403
    assert "Access-Control-Allow-Origin" not in other.headers


async def test_body_over_1_mib_is_413(rpc: Rpc) -> None:
    """API.md "Limits": 1 MiB per request."""
    body = b'{"jsonrpc":"2.0","method":"companion.info","id":1,"params":{"x":"' + \
        b"a" * (1024 * 1024) + b'"}}'
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    assert response.status == 413


async def test_without_the_token_a_body_over_1_mib_or_compressed_is_401(rpc: Rpc) -> None:
    """The Guard's order (docs/SECURITY.md 1, API.md "Transport"): the token is checked
    before the body, so a caller without it learns nothing of what the daemon would
    take; its answer is the 401 of any request without the token."""
    big = await rpc.client.post("/rpc", data=_body_of(1024 * 1024 + 1))
    squeezed = await rpc.client.post("/rpc", data=gzip.compress(json.dumps(INFO).encode()),
                                     headers={"Content-Encoding": "gzip"})
    for response in (big, squeezed):
        assert response.status == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="mindscape"'


async def test_body_over_1_mib_without_a_length_is_413(rpc: Rpc, settings: Settings) -> None:
    async def chunks() -> Any:
        for _ in range(20):
            yield b" " * 65536
        yield b"{}"

    response = await rpc.client.post("/rpc", data=chunks(), headers=rpc.auth)
    assert response.status == 413
    # our JSON and wording, not aiohttp's text (issue: no exception text reaches a client)
    assert await response.json() == {"error": "the request body exceeds 1048576 bytes"}
    assert response.headers["Server"] == "mindscape"
    # logged as answered, not as the 500 of a fault
    assert [(line["path"], line["status"]) for line in _access_lines(rpc, settings)] == [
        ("/rpc", 413)]


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "GZIP"])
async def test_a_compressed_body_is_415_and_never_inflated(rpc: Rpc, encoding: str) -> None:
    """A compressed body is refused as it is: inflating it on the event loop (aiohttp's
    default) lets a small bomb stall every client, token or no token. A valid call
    compressed is refused too, so it is not inflated first and run."""
    body = (gzip.compress(json.dumps(INFO).encode()) if encoding.lower() == "gzip"
            else zlib.compress(json.dumps(INFO).encode()))
    response = await rpc.client.post("/rpc", data=body, headers={
        **rpc.auth, "Content-Encoding": encoding, "Content-Type": "application/json"})
    assert response.status == 415
    assert await response.json() == {
        "error": "compressed request bodies are not accepted (Content-Encoding): send plain JSON"}
    assert response.headers["Server"] == "mindscape"
    # without the token it is 401, as any call
    anonymous = await rpc.client.post("/rpc", data=body, headers={"Content-Encoding": encoding})
    assert anonymous.status == 401
    for identity in ("identity", "IDENTITY", "Identity"):  # any case (RFC 9110 8.4.1)
        plain = await rpc.client.post("/rpc", json=INFO, headers={
            **rpc.auth, "Content-Encoding": identity})
        assert (await plain.json())["result"]["name"] == "mindscape"


async def test_a_compressed_body_without_a_length_is_415_too(rpc: Rpc) -> None:
    """As above, sent in chunks (no Content-Length): the encoding alone refuses it."""
    async def chunks() -> Any:
        yield gzip.compress(json.dumps(INFO).encode())

    response = await rpc.client.post("/rpc", data=chunks(), headers={
        **rpc.auth, "Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert response.status == 415
    assert await response.json() == {
        "error": "compressed request bodies are not accepted (Content-Encoding): send plain JSON"}


async def test_a_request_to_ws_that_is_no_websocket_handshake_gets_our_json(
        rpc: Rpc, settings: Settings) -> None:
    """aiohttp's handshake refusals quote its own messages; the daemon answers JSON."""
    plain = await rpc.client.get("/ws")
    assert plain.status == 400 and plain.headers["Server"] == "mindscape"
    assert "WebSocket client" in (await plain.json())["error"]
    broken = await rpc.client.get("/ws", headers={
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "bad"})
    assert broken.status == 400
    assert "bad" not in (await broken.json())["error"]
    assert [(line["path"], line["status"]) for line in _access_lines(rpc, settings)] == [
        ("/ws", 400), ("/ws", 400)]


async def test_ws_takes_get_alone_as_its_preflight_says(rpc: Rpc) -> None:
    """ROUTES and API.md: `GET /ws`. aiohttp adds HEAD to every GET route; on /ws a HEAD
    with a valid handshake would be switched to a socket. It is a 405 like any other
    method there, while / and /healthz keep their HEAD."""
    handshake = {
        "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": f"mindscape.v1, token.{rpc.token}"}
    for headers in (handshake, rpc.auth):
        response = await rpc.client.head("/ws", headers=headers)
        assert response.status == 405 and response.headers["Allow"] == "GET"
    for path in ("/", "/healthz"):
        assert (await rpc.client.head(path, headers=rpc.auth)).status == 200


async def test_healthz_needs_no_token_and_says_nothing_more(rpc: Rpc) -> None:
    response = await rpc.client.get("/healthz")
    assert response.status == 200 and await response.json() == {"status": "ok"}


async def test_status_page_shows_pairing_help_but_never_the_token(rpc: Rpc,
                                                                  settings: Settings) -> None:
    info = await rpc.ok("companion.info")
    response = await rpc.client.get("/")
    assert response.status == 200 and response.content_type == "text/html"
    page = await response.text()
    assert rpc.token not in page
    # API.md "Running it": the status page gives the version, systems and pairing help
    assert f"Version {info['version']}, API {info['api_version']}" in page
    assert "mindscape token" in page and str(settings.token_path) in page
    for system in ("revised-2e", "combat-strength", "power-pool", "sample-duel"):
        assert system in page
    assert "Recent HTTP clients" in page and "companion.info" in page


@pytest.mark.parametrize(("command", "shown"), [
    (None, "<code>mindscape token</code>"),
    ("mindscape token --home '/g m'", "<code>mindscape token --home &#x27;/g m&#x27;</code>")])
async def test_status_page_names_the_command_that_shows_the_token_as_given(
        aiohttp_client: Any, tmp_path: Path, command: str | None, shown: str) -> None:
    """Settings.token_command: ``mindscape token`` unless the CLI gives another (with the
    ``--home`` the daemon was started with), shown on the page as it is to be typed."""
    settings = Settings(home=tmp_path / "home")
    if command is not None:
        settings = Settings(home=tmp_path / "home", token_command=command)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    response = await client.get("/")
    assert response.status == 200 and shown in await response.text()


async def test_status_page_may_load_nothing_but_its_own_style(rpc: Rpc) -> None:
    """docs/SECURITY.md "Reading the status page": its Content-Security-Policy allows
    its one style sheet (by its hash) and nothing else: no script, no frame around it."""
    response = await rpc.client.get("/")
    page = await response.text()
    policy = dict(part.strip().split(" ", 1)
                  for part in response.headers["Content-Security-Policy"].split(";"))
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    assert style is not None and page.count("<style") == 1
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert policy == {"default-src": "'none'", "style-src": f"'sha256-{digest}'",
                      "base-uri": "'none'", "form-action": "'none'",
                      "frame-ancestors": "'none'"}
    assert "<script" not in page and " style=" not in page and "<img" not in page
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["Cache-Control"] == "no-store"


def test_token_file_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "home" / "token"
    token = ensure_token(path).token
    assert len(token) >= 43 and ensure_token(path).token == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    ensure_token(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_rotated_token_is_picked_up_without_restart(tmp_path: Path) -> None:
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    old = keeper.current()
    new = rotate_token(path)
    os.utime(path, (1, 1))
    keeper._checked -= 2.0  # the keeper re-reads the file at most once a second
    assert keeper.current() == new != old
    assert keeper.accepts_bearer(f"Bearer {new}") and not keeper.accepts_bearer(
        f"Bearer {old}")


def test_a_rotated_token_works_at_once_and_the_old_one_stops(tmp_path: Path) -> None:
    """The keeper looks at the file again when a token does not match: right after
    `mindscape token --rotate` the new token is accepted (it was refused for up to a
    second), and the old one is refused from then on."""
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    old = keeper.current()
    assert keeper.accepts(old)
    new = rotate_token(path)
    os.utime(path, (1, 1))
    assert keeper.accepts(new) and keeper.accepts_bearer(f"Bearer {new}")
    assert not keeper.accepts(old) and not keeper.accepts_bearer(f"Bearer {old}")
    assert not keeper.accepts(None) and not keeper.accepts("")
    assert keeper.generation() == 1


@pytest.mark.parametrize("content", [b"one\ntwo\n", b"\xff\xfe\n", "t\u00f6ken".encode()])
async def test_a_token_file_rewritten_with_no_usable_token_is_not_adopted(
        rpc: Rpc, settings: Settings, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    """A token file replaced while the daemon runs by something that is not one line of
    printable ASCII: the token in force stays, and the log says why (the daemon adopted
    a two-line token before, one no header could carry)."""
    settings.token_path.write_bytes(content)
    os.utime(settings.token_path, (1, 1))
    # The keeper re-reads the file at most once a second: its clock moves on two.
    later = SimpleNamespace(monotonic=lambda: time.monotonic() + 2)
    monkeypatch.setattr("companion.tokens.time", later)
    with caplog.at_level(logging.WARNING, logger="mindscape.tokens"):
        assert await rpc.ok("companion.info")
    [record] = [r for r in caplog.records if r.name == "mindscape.tokens"]
    assert "does not hold a token" in record.getMessage() and "kept" in record.getMessage()
    first_line = content.splitlines()[0].decode("latin-1")
    response = await rpc.client.post("/rpc", json=INFO, headers={
        "Authorization": f"Bearer {first_line}"})
    assert response.status == 401


async def test_logs_never_carry_the_token(rpc: Rpc, settings: Settings,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """API.md: 'the token never appears in a URL or a log line'; one line per request
    with method, duration and outcome."""
    with caplog.at_level(logging.DEBUG):
        await rpc.ok("companion.info")
        await rpc.client.post("/rpc", json=INFO, headers={"Authorization": "Bearer nope"})
        await rpc.error("faulty.boom", {})
    rpc.client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    lines = [json.loads(line) for line in settings.log_stream.getvalue().splitlines()]
    records = [r.getMessage() + repr(getattr(r, "fields", "")) for r in caplog.records]
    for text in [*map(json.dumps, lines), *records]:
        assert rpc.token not in text and "nope" not in text
    assert [(line["status"], line.get("methods"), line.get("outcome")) for line in lines] == [
        (200, ["companion.info"], "ok"), (401, None, None),
        (200, ["faulty.boom"], "error")]
    assert all(line["logger"] == "mindscape.access" and line["duration_ms"] >= 0
               for line in lines)
    assert lines[2]["errors"] == [-32603]


#: One call of each kind in one batch, and how the request log names it: the method (none
#: for an element that is no request) and the error code of each call that failed.
LOGGED_BATCH = [
    {"jsonrpc": "2.0", "method": "companion.info", "id": 1},
    {"jsonrpc": "2.0", "method": "dice.roll", "params": ["d6"], "id": 2},
    {"jsonrpc": "2.0", "method": "no.such", "id": 3},
    {"jsonrpc": "1.0", "method": "companion.info", "id": 4},
    {"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": 5}, "id": 5},
    {"jsonrpc": "2.0", "method": "companion.info"},
    # a result JSON cannot hold: its -32603 is found while the answer is written
    {"jsonrpc": "2.0", "method": "faulty.unserialisable", "params": {}, "id": 6},
]
LOGGED_METHODS = ["companion.info", "dice.roll", "no.such", None, "dice.roll", "companion.info",
                  "faulty.unserialisable"]
LOGGED_ERRORS = [-32602, -32601, -32600, -32602, -32603]


def _access_lines(rpc: Rpc, settings: Settings) -> list[dict[str, Any]]:
    rpc.client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    return [json.loads(line) for line in settings.log_stream.getvalue().splitlines()]


async def test_the_request_log_has_the_path_never_the_query(rpc: Rpc,
                                                            settings: Settings) -> None:
    """SECURITY.md 3: 'The request log has the path (never the query)', also for a
    request refused at its expectation."""
    assert (await rpc.client.get("/healthz?who=gm-notes")).status == 200
    assert (await rpc.client.post("/rpc?who=gm-notes", json=INFO, headers=rpc.auth)
            ).status == 200
    head = _rpc_head(rpc, 5_000_000, more=b"Connection: close\r\n")
    reader, writer = await _opened(rpc, head.replace(b"/rpc ", b"/rpc?who=gm-notes ", 1))
    answer = await _answer(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]
    assert [(line["path"], line["status"]) for line in _access_lines(rpc, settings)] == [
        ("/healthz", 200), ("/rpc", 200), ("/rpc", 413)]
    assert "gm-notes" not in settings.log_stream.getvalue()  # type: ignore[union-attr]


async def test_the_request_log_names_each_call_of_a_batch_and_each_error_code(
        rpc: Rpc, settings: Settings) -> None:
    """One line per request: the methods called and the error codes answered, also for
    a body that is no JSON, an empty batch and a batch over the limit."""
    await rpc.raw(LOGGED_BATCH)
    await rpc.client.post("/rpc", data=b"{", headers=rpc.auth)
    await rpc.raw([])
    await rpc.raw([INFO] * 101)
    assert [(line["methods"], line["errors"], line["outcome"])
            for line in _access_lines(rpc, settings)] == [
        (LOGGED_METHODS, LOGGED_ERRORS, "error"), ([None], [-32700], "error"),
        ([None], [-32600], "error"), ([None], [-32602], "error")]


async def test_a_batch_calling_methods_named_as_its_request_is_one_json_line_too(
        rpc: Rpc, settings: Settings) -> None:
    """The request log keeps the JSON of what its lines repeat: the start of a line
    (``"http":"POST","path":"/rpc"``) and a batch's list of methods were kept under one
    key, so a batch calling methods named "POST" and "/rpc" (a client's choice) was
    written with the one in the other's place, and its line was no JSON."""
    await rpc.raw([{"jsonrpc": "2.0", "method": "POST", "id": 1},
                   {"jsonrpc": "2.0", "method": "/rpc", "id": 2}])
    await rpc.ok("companion.info")
    assert [(line["http"], line["path"], line["methods"], line["errors"])
            for line in _access_lines(rpc, settings)] == [
        ("POST", "/rpc", ["POST", "/rpc"], [-32601, -32601]),
        ("POST", "/rpc", ["companion.info"], [])]


async def test_the_request_log_names_each_call_of_a_websocket_message(
        rpc: Rpc, settings: Settings) -> None:
    ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{rpc.token}"))
    await ws.send_json(LOGGED_BATCH)
    assert len(await ws.receive_json()) == 6
    await ws.send_json(INFO)
    assert "result" in await ws.receive_json()
    await ws.close()
    assert [(line["methods"], line["errors"], line["outcome"])
            for line in _access_lines(rpc, settings) if "ws" in line] == [
        (LOGGED_METHODS, LOGGED_ERRORS, "error"), (["companion.info"], [], "ok")]


async def test_a_websocket_messages_log_line_gives_its_duration_in_milliseconds(
        rpc: Rpc, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like an HTTP request's line, a WebSocket message's says how long it took in
    ``duration_ms`` (its clock stubbed here: 0.25 s between receipt and answer)."""
    ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{rpc.token}"))
    monkeypatch.setattr(ws_module, "time", SimpleNamespace(perf_counter=iter([10.0, 10.25])
                                                           .__next__))
    await ws.send_json(INFO)
    assert "result" in await ws.receive_json()
    await ws.close()
    assert [line["duration_ms"] for line in _access_lines(rpc, settings)
            if "ws" in line] == [250.0]


async def test_every_path_and_method_passes_the_guard(rpc: Rpc) -> None:
    assert (await rpc.client.get("/nope", headers={"Host": "evil.example"})).status == 403
    assert (await rpc.client.get("/nope", headers={"Origin": "https://evil.example"})
            ).status == 403
    assert (await rpc.client.get("/nope")).status == 404
    wrong_method = await rpc.client.get("/rpc", headers=rpc.auth)
    assert wrong_method.status == 405 and wrong_method.headers["Allow"] == "POST"


async def test_a_known_path_asked_with_another_method_says_which_to_use(rpc: Rpc) -> None:
    """A 405 tells the caller how to ask instead: the method the path takes, in its body
    as in its Allow header."""
    for method, path, allowed in (("GET", "/rpc", "POST"), ("POST", "/healthz",
                                                             "GET, HEAD")):
        response = await rpc.client.request(method, path, headers=rpc.auth)
        assert response.status == 405 and response.headers["Allow"] == allowed
        assert await response.json() == {"error": f"use {allowed} on {path}"}


async def test_a_body_that_comes_too_slowly_is_408(aiohttp_client: Any, tmp_path: Path) -> None:
    from companion.app import create_app
    from companion.settings import Limits

    settings = Settings(home=tmp_path, limits=Limits(read_timeout=0.3))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()

    async def dribble() -> Any:
        yield b'{"jsonrpc":"2.0",'
        await asyncio.sleep(2)
        yield b'"method":"companion.info","id":1}'

    response = await client.post("/rpc", data=dribble(),
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status == 408
    assert response.headers["Connection"] == "close"  # docs/SECURITY.md: and closed
    assert await response.json() == {"error": "the request body came too slowly"}


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701], ids=oct)
async def test_the_home_folder_is_made_private(aiohttp_client: Any, tmp_path: Path,
                                              mode: int) -> None:
    """The home holds the token and pending secret choices (docs/SECURITY.md): no other
    local user may read it, neither by its group nor as anyone."""
    from companion.app import create_app

    home = tmp_path / "home"
    home.mkdir()
    home.chmod(mode)
    await aiohttp_client(create_app(Settings(home=home)))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@pytest.mark.parametrize(("mode", "narrowed"), [(0o355, 0o300), (0o500, None)])
def test_making_the_home_private_takes_away_only_the_rights_of_others(
        mode: int, narrowed: int | None, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The home is narrowed, never widened: the group's and others' rights go, the
    owner's stay as they were (a right the owner took away is not given back), and the
    log says which folder was narrowed to what; a private one is left as it is, unlogged."""
    from companion.app import _make_private

    home = tmp_path / "home"
    home.mkdir()
    home.chmod(mode)
    try:
        with caplog.at_level(logging.WARNING, logger="mindscape.app"):
            _make_private(Settings(home=home))
        assert stat.S_IMODE(home.stat().st_mode) == (narrowed or mode)
    finally:
        home.chmod(0o700)
    assert [r.getMessage() for r in caplog.records] == ([] if narrowed is None else [
        f"home folder {home} was readable by others; narrowed to {narrowed:o}"])


async def test_a_stopped_daemon_leaves_its_home_to_the_next_one(aiohttp_client: Any,
                                                                tmp_path: Path) -> None:
    """docs/API.md: one daemon per home folder, held locked while it runs; once it has
    stopped, the next one starts on the same home."""
    from companion.app import create_app

    settings = Settings(home=tmp_path / "home", log_stream=io.StringIO())
    first: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    await first.close()
    second: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    assert (await second.get("/healthz")).status == 200


async def test_a_home_folder_whose_parents_are_missing_is_made_with_them(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """The home folder is made when missing (`serve --help`), the folders above it too,
    and it is private."""
    from companion.app import create_app

    home = tmp_path / "new" / "config" / "home"
    client: TestClient[Any, Any] = await aiohttp_client(create_app(Settings(
        home=home, log_stream=io.StringIO())))
    assert (await client.get("/healthz")).status == 200
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


async def test_a_fault_outside_every_handler_shows_no_traceback_in_debug_mode(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault past the guard (here in writing the access log) is aiohttp's plain 500,
    without the traceback aiohttp would add while the event loop runs in debug mode
    (``python -X dev``): the daemon's handlers never run in aiohttp's debug mode."""
    from companion.app import create_app
    from companion.logs import AccessLog

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret-in-the-message")

    settings = Settings(home=tmp_path / "home", log_stream=io.StringIO())
    asyncio.get_running_loop().set_debug(True)
    try:
        client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
        monkeypatch.setattr(AccessLog, "http", broken)
        response = await client.get("/healthz")
        text = await response.text()
    finally:
        asyncio.get_running_loop().set_debug(False)
    assert response.status == 500
    for leak in ("Traceback", "secret-in-the-message", "RuntimeError", ".py"):
        assert leak not in text


async def test_a_fault_in_a_handler_is_a_500_with_an_error_id_only(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 5: 'no exception text or traceback ever reaches a client (an error id does,
    and the log has the rest)', also when the event loop runs in debug mode, where
    aiohttp's own 500 page would show the traceback."""
    import companion.app as app_module

    async def broken(request: Any) -> Any:
        raise RuntimeError("secret-in-the-message /home/gm/.mindscape")

    monkeypatch.setattr(app_module, "status_page", broken)
    asyncio.get_running_loop().set_debug(True)
    try:
        settings = Settings(home=tmp_path / "home", log_stream=io.StringIO())
        client: TestClient[Any, Any] = await aiohttp_client(app_module.create_app(settings))
        with caplog.at_level(logging.ERROR, logger="mindscape.http"):
            response = await client.get("/?who=gm-notes", headers={
                "Accept": "text/html", "Origin": "http://localhost:30000"})
            text = await response.text()
    finally:
        asyncio.get_running_loop().set_debug(False)
    assert response.status == 500
    assert response.headers["Server"] == "mindscape"
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:30000"
    body = json.loads(text)
    assert set(body) == {"error", "error_id"} and body["error_id"] in body["error"]
    for leak in ("Traceback", "secret-in-the-message", "RuntimeError", ".py", "/home/gm"):
        assert leak not in text
    [record] = [r for r in caplog.records if r.name == "mindscape.http"]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert record.fields == {"error_id": body["error_id"], "path": "/"}  # type: ignore[attr-defined]
    assert (await client.get("/healthz")).status == 200


async def test_a_token_offered_only_as_a_websocket_subprotocol_stays_out_of_the_log(
        rpc: Rpc, caplog: pytest.LogCaptureFixture) -> None:
    """API.md: 'the token never appears in a URL or a log line'. aiohttp warns about
    offered subprotocols that are not ours, quoting them: ``token.<token>`` among them."""
    with caplog.at_level(logging.DEBUG):
        ws = await rpc.client.ws_connect("/ws", protocols=(f"token.{rpc.token}",))
        await ws.close()
    assert caplog.records, "aiohttp no longer warns: this test checks nothing"
    formatter = JsonLines()
    for record in caplog.records:
        assert rpc.token not in formatter.format(record)


async def test_the_subprotocols_a_websocket_offered_are_logged_cut_short(
        rpc: Rpc, caplog: pytest.LogCaptureFixture) -> None:
    """aiohttp warns about offered subprotocols that are not ours, quoting them all: a
    header of up to 8190 bytes, so any program could have each handshake write a
    warning of 10 KB (at any log level). JsonLines cuts aiohttp's messages."""
    offered = [f"p{i}" for i in range(1300)]
    with caplog.at_level(logging.DEBUG, logger="aiohttp.websocket"):
        ws = await rpc.client.ws_connect("/ws", protocols=offered)
        await ws.close()
    [record] = [r for r in caplog.records if r.name == "aiohttp.websocket"]
    assert len(record.getMessage()) > 8000, "aiohttp no longer quotes them: check nothing"
    message = json.loads(JsonLines().format(record))["msg"]
    assert len(message) == MAX_AIOHTTP_MESSAGE and message.endswith("…")
    assert "Client protocols ['p0', 'p1'" in message


@pytest.mark.parametrize("text", [
    "b'Authorization: Bearer {t}\\x0b'", "Got more than 8190 bytes: b'bearer {t} aaaa'",
    "Client protocols ['token.{t}'] don't overlap", "POST /rpc/{t}", '["{t}"]',
    "GET /rpc/x{t}", '"method": "A{t}_b"'])
def test_anything_shaped_like_the_token_is_redacted_from_log_lines(text: str) -> None:
    token = secrets.token_urlsafe(32)
    redacted = redact(text.format(t=token))
    assert token not in redacted and "[redacted]" in redacted


@pytest.mark.parametrize("text", [
    '{"error_id": "0123456789abcdef", "id": "AbCdEfGhIjK", '
    '"msg": "a message long enough to be looked at"}',
    'File "/home/gm/mindscape/companion/tokens.py", line 112, in _open',
    "the Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen encounter"])
def test_error_ids_encounter_ids_and_long_words_are_not_redacted(text: str) -> None:
    """Only a token's alphabet (ASCII) makes a token: a long word with other letters in
    it is none, nor is a name that merely starts with "token"."""
    assert redact(text) == text


@pytest.mark.parametrize("text", [
    "b'Authorization: Bearer  {t}\\x0b'", "b'authorization: BEARER {t}\\x0b'",
    "Client protocols ['token.{t}', 'mindscape.v0'] don't overlap",
    "Bearer {t}", "token.{t}"])
def test_what_follows_bearer_or_token_dot_is_redacted_even_short_of_a_token(
        text: str) -> None:
    """A token a client cut short or mistyped is most of the token: what follows
    "Bearer " (in any case, after any spaces) or "token." is taken out whatever its
    length, up to a quote, a comma or a backslash (the JSON around it stays JSON); also
    in a text shorter than a token (a user agent of "Bearer " and 35 of its 43
    characters was shown whole on the status page)."""
    secret = secrets.token_urlsafe(32)[:35]
    assert redact(text.format(t=secret)) == text.format(t="[redacted]")
    assert redact(text.format(t="x")) == text.format(t="[redacted]")


@pytest.mark.parametrize("text", ["", "token.", "Bearer", "companion.info", "x" * 42])
def test_a_short_text_with_nothing_after_bearer_or_token_dot_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("text", ["the client sent no token.", "Authorization: Bearer ",
                                  "b'Authorization: Bearer \\x0b'", 'the token. "Bearer "'])
def test_bearer_or_token_dot_with_nothing_after_them_is_kept(text: str) -> None:
    """What is taken out is what follows them: at the end of a text, or before a quote,
    a comma or a backslash, there is nothing to take out."""
    assert redact(text) == text


async def test_the_request_log_redacts_a_token_put_in_a_path_or_a_method_name(
        rpc: Rpc, settings: Settings) -> None:
    await rpc.client.post(f"/rpc/{rpc.token}", json=INFO, headers=rpc.auth)
    await rpc.error(rpc.token)
    await rpc.client.post(f"/rpc/x{rpc.token}", json=INFO, headers=rpc.auth)
    rpc.client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    log = settings.log_stream.getvalue()
    assert rpc.token not in log and log.count("[redacted]") == 3


async def test_a_websocket_call_of_a_method_named_the_token_is_logged_redacted(
        rpc: Rpc, settings: Settings) -> None:
    """A socket's request lines are redacted as those of HTTP requests are, and a text
    of exactly a token's length (the token alone) is looked at too."""
    ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{rpc.token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": rpc.token, "id": 1})
    assert (await ws.receive_json())["error"]["code"] == -32601
    await ws.close()
    [line] = [line for line in _access_lines(rpc, settings) if "ws" in line]
    assert line["methods"] == ["[redacted]"] and line["ts"] == round(line["ts"], 3)


async def test_a_long_method_name_is_redacted_before_it_is_cut(
        rpc: Rpc, settings: Settings) -> None:
    """logs.shortened: a cut through a token would leave a part of it that redaction no
    longer knows, so the text is redacted first; and what then fits is not cut."""
    fits = "m " * ((MAX_KEPT - len("[redacted]")) // 2) + "[redacted]"
    assert len(fits) == MAX_KEPT
    assert (await rpc.call(fits.replace("[redacted]", rpc.token)))["error"]["code"] == -32601
    [line] = _access_lines(rpc, settings)
    assert line["methods"] == [fits]


async def test_a_method_name_of_max_kept_characters_is_logged_whole_a_longer_one_cut(
        rpc: Rpc, settings: Settings) -> None:
    """logs.kept: a client's text of at most MAX_KEPT characters is kept as it is; one
    character more and it is cut to MAX_KEPT, the last being the mark of the cut."""
    whole = "m." * (MAX_KEPT // 2)
    for name in (whole, whole + "x"):
        assert (await rpc.call(name))["error"]["code"] == -32601
    assert [line["methods"] for line in _access_lines(rpc, settings)] == [
        [whole], [whole[:-1] + "…"]]
    assert len(whole) == MAX_KEPT


async def test_rotating_the_token_closes_the_websockets_opened_with_the_old_one(
        rpc: Rpc, settings: Settings) -> None:
    """docs/SECURITY.md: after ``mindscape token --rotate`` the old token is refused: a
    socket opened with it (by subprotocol or by its first message) is closed too."""
    by_protocol = await rpc.client.ws_connect(
        "/ws", protocols=("mindscape.v1", f"token.{rpc.token}"))
    by_message = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1",))
    await by_message.send_json({"jsonrpc": "2.0", "method": "auth", "id": 1,
                                "params": {"token": rpc.token}})
    assert (await asyncio.wait_for(by_message.receive_json(), 5))["result"]
    rotate_token(settings.token_path)
    for ws in (by_protocol, by_message):
        message = await asyncio.wait_for(ws.receive(), 5)
        assert message.type == aiohttp.WSMsgType.CLOSE and message.data == 1008
        assert message.extra == "token rotated"


@pytest.mark.parametrize("by", ["protocol", "message"])
async def test_a_socket_whose_old_token_is_rotated_away_while_it_opens_is_closed_too(
        rpc: Rpc, settings: Settings, monkeypatch: pytest.MonkeyPatch, by: str) -> None:
    """docs/SECURITY.md: a socket opened with a token that was rotated away is closed.
    The token may be rotated, and taken by another client, between the check of this
    socket's token and the socket joining the hub (the upgrade and the auth answer
    are written in between): it still authenticated with the old one."""
    keeper = rpc.client.server.app[TOKENS]
    old = rpc.token

    def rotated_meanwhile() -> None:
        new = rotate_token(settings.token_path)
        assert keeper.accepts(new)  # another client, already with the new token

    if by == "protocol":
        prepare = aiohttp.web.WebSocketResponse.prepare

        async def prepare_while_rotating(ws: Any, request: Any) -> Any:
            rotated_meanwhile()
            return await prepare(ws, request)

        monkeypatch.setattr(aiohttp.web.WebSocketResponse, "prepare",
                            prepare_while_rotating)
        ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{old}"))
    else:
        send_str = aiohttp.web.WebSocketResponse.send_str

        async def answer_while_rotating(ws: Any, data: str, *args: Any) -> None:
            if '"authenticated"' in data:
                rotated_meanwhile()
            await send_str(ws, data, *args)

        monkeypatch.setattr(aiohttp.web.WebSocketResponse, "send_str",
                            answer_while_rotating)
        ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1",))
        await ws.send_json({"jsonrpc": "2.0", "method": "auth", "id": 1,
                            "params": {"token": old}})
        assert (await asyncio.wait_for(ws.receive_json(), 5))["result"]["authenticated"]
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type == aiohttp.WSMsgType.CLOSE and message.data == 1008
    assert message.extra == "token rotated"


async def test_a_token_just_rotated_opens_every_door_at_once(
        rpc: Rpc, settings: Settings) -> None:
    """Right after ``mindscape token --rotate`` (well within the keeper's second), the
    new token is taken by POST /rpc, a WebSocket subprotocol and an ``auth`` message."""
    new = rotate_token(settings.token_path)
    os.utime(settings.token_path, (1, 1))
    response = await rpc.client.post("/rpc", json=INFO,
                                     headers={"Authorization": f"Bearer {new}"})
    assert response.status == 200 and "result" in await response.json()
    new = rotate_token(settings.token_path)
    os.utime(settings.token_path, (2, 2))
    by_protocol = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1",
                                                                f"token.{new}"))
    assert by_protocol.protocol == "mindscape.v1"
    await by_protocol.close()
    new = rotate_token(settings.token_path)
    os.utime(settings.token_path, (3, 3))
    by_message = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1",))
    await by_message.send_json({"jsonrpc": "2.0", "method": "auth", "id": 1,
                                "params": {"token": new}})
    assert (await asyncio.wait_for(by_message.receive_json(), 5))["result"]
    await by_message.close()


async def _answer(reader: asyncio.StreamReader) -> bytes:
    """One HTTP answer: its head, and its body by its Content-Length (the server may
    keep the connection open a while to drain a body it refused)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head + await asyncio.wait_for(reader.readexactly(length), 5)


async def _expecting(rpc: Rpc, head: bytes, body: bytes) -> bytes:
    """Send ``head`` (request line and headers, asking Expect: 100-continue) and wait
    for the server's first answer before any body; then the body if it said continue.
    Everything the server answered."""
    server = rpc.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(head + b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await _answer(reader)
    if answer.startswith(b"HTTP/1.1 100 "):
        writer.write(body)
        await writer.drain()
        answer += await _answer(reader)
    writer.close()
    return answer


async def test_expect_100_continue_gets_the_refusal_instead_of_an_invitation_to_send_the_body(
        rpc: Rpc) -> None:
    """curl asks Expect: 100-continue for any body over 1 MiB. aiohttp answered 100
    Continue before any check, so the whole body was sent to be refused after: a body
    over the limit, or without the token, is refused at once, and nothing but an
    acceptable request is invited (API.md: 413 before the body is read)."""
    body = json.dumps(INFO).encode()

    def head(length: int, auth: bool = True, host: bytes = b"127.0.0.1") -> bytes:
        token = b"Authorization: Bearer " + rpc.token.encode() + b"\r\n" if auth else b""
        return (b"POST /rpc HTTP/1.1\r\nHost: " + host + b"\r\n" + token
                + b"Content-Type: application/json\r\nContent-Length: "
                + str(length).encode() + b"\r\n")

    for request, status in ((head(5_000_000), b"413"), (head(len(body), auth=False), b"401"),
                            (head(len(body), host=b"evil.example"), b"403")):
        answer = await _expecting(rpc, request, body)
        assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:80]
        assert b"100 Continue" not in answer
        assert b"Server: mindscape" in answer
    # Acceptable: invited, and answered.
    answer = await _expecting(rpc, head(len(body)), body)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), answer[:80]
    assert b'"result"' in answer
    # Another expectation is refused in our words, not aiohttp's.
    server = rpc.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: a-miracle\r\n"
                 b"Connection: close\r\n\r\n")
    await writer.drain()
    refused = await _answer(reader)
    writer.close()
    assert refused.startswith(b"HTTP/1.1 417 ") and b"only 100-continue" in refused


async def test_a_user_agent_that_is_not_utf_8_does_not_break_the_status_page(
        rpc: Rpc) -> None:
    server = rpc.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    body = json.dumps(INFO).encode()
    writer.write(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                 + rpc.token.encode() + b"\r\nUser-Agent: caf\xe9 \xff\r\n"
                 b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    await writer.drain()
    assert b" 200 " in (await reader.read()).split(b"\r\n", 1)[0]
    writer.close()
    response = await rpc.client.get("/")
    assert response.status == 200
    assert "(caf? ?)" in await response.text()  # shown, the bytes that are not UTF-8 as ?


async def test_a_token_that_is_not_utf_8_is_a_401_not_a_fault(rpc: Rpc) -> None:
    """aiohttp hands a header's bytes that are not UTF-8 on as lone surrogates, which
    UTF-8 cannot encode: such a token is as wrong as any other (TokenKeeper.accepts)."""
    body = json.dumps(INFO).encode()
    reader, writer = await _opened(rpc, (
        b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer caf\xe9\xff\r\n"
        b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n" + body))
    assert (await reader.read()).startswith(b"HTTP/1.1 401 ")
    writer.close()


async def test_what_a_client_sends_is_redacted_and_cut_short_on_the_status_page(
        rpc: Rpc) -> None:
    """GET / needs no token: a method name or a user agent carrying the token (a client
    may put it anywhere) is shown as the log shows it, and a long one cut short (and
    kept short: a thousand calls naming a 1 MiB method were all held)."""
    long_agent, long_method = "agent " * 1000, "y." * 50_000
    for method, headers in ((f"x.{rpc.token}", {"User-Agent": f"ua/{rpc.token}"}),
                            (long_method, {"User-Agent": long_agent})):
        response = await rpc.post({"jsonrpc": "2.0", "method": method, "id": 1}, headers)
        assert (await response.json())["error"]["code"] == -32601
    page = await (await rpc.client.get("/")).text()
    assert rpc.token not in page
    assert "(ua/[redacted]): 1 call(s), last x.[redacted] " in page
    assert long_agent[:200] not in page and long_method[:200] not in page
    assert f"({long_agent[:SHOWN - 1]}…): 1 call(s), last {long_method[:SHOWN - 1]}… " in page
    hub = rpc.client.server.app[HUB]
    assert all(len(text or "") <= MAX_KEPT for call in hub._calls for text in call[1:])


async def test_status_page_lists_recent_clients_most_recent_first_with_their_calls(
        rpc: Rpc) -> None:
    """docs/API.md: the status page lists the recent clients; each is an address,
    origin and user agent (two user agents from one address are two clients), with
    how many calls it made and the last method it called, the most recent first."""
    async def call(method: str, agent: str, origin: str | None = None) -> None:
        headers = {"User-Agent": agent, **({"Origin": origin} if origin else {})}
        response = await rpc.post({"jsonrpc": "2.0", "method": method, "id": 1}, headers)
        assert "result" in await response.json()

    await call("companion.info", "gm-a", "http://localhost:30000")
    await call("adapters.list", "gm-b")
    await call("companion.info", "gm-c")
    for _ in range(10):
        await call("companion.info", "gm-a", "http://localhost:30000")
    await call("systems.list", "gm-a", "http://localhost:30000")
    page = await (await rpc.client.get("/")).text()
    lines = [re.search(pattern, page) for pattern in (
        r"http://localhost:30000 \(gm-a\): 12 call\(s\), last systems\.list \d+ s ago",
        r"127\.0\.0\.1 \(gm-c\): 1 call\(s\), last companion\.info \d+ s ago",
        r"127\.0\.0\.1 \(gm-b\): 1 call\(s\), last adapters\.list \d+ s ago")]
    assert all(lines), lines
    places = [line.start() for line in lines if line]
    assert places == sorted(places)


async def test_status_page_says_a_batch_s_last_method_as_the_last_called(rpc: Rpc) -> None:
    """docs/API.md: the status page shows "the last method called": a batch's elements
    run in order, so that is the last element's that names one (it showed the first)."""
    batch: list[object] = [
        {"jsonrpc": "2.0", "method": method, "id": n}
        for n, method in enumerate(("companion.info", "adapters.list", "systems.list"))]
    batch.append({"jsonrpc": "2.0", "id": 9})  # no method: -32600, and nothing called
    response = await rpc.post(batch, {"User-Agent": "batcher"})
    assert len(await response.json()) == 4
    page = await (await rpc.client.get("/")).text()
    assert re.search(r"\(batcher\): 1 call\(s\), last systems\.list \d+ s ago", page), page


async def test_status_page_lists_only_the_most_recent_clients(rpc: Rpc) -> None:
    """The status page keeps to the last callers (RECENT_CLIENTS of them): with one
    client more, the first one is no longer listed, and every later one is."""
    for n in range(RECENT_CLIENTS + 1):
        response = await rpc.post(INFO, {"User-Agent": f"client-{n}-"})
        assert response.status == 200
    page = await (await rpc.client.get("/")).text()
    assert [n for n in range(RECENT_CLIENTS + 1) if f"(client-{n}-)" in page] == list(
        range(1, RECENT_CLIENTS + 1))


def _clock_at(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    """The status page's clock (its own ``time``) stopped at ``now``."""
    monkeypatch.setattr(status_module, "time", SimpleNamespace(
        time=lambda: now, strftime=time.strftime, localtime=time.localtime))


async def test_status_page_says_how_long_ago_in_seconds_below_two_minutes_then_minutes(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client's last call is "N s ago" below two minutes, then whole minutes; a clock
    set back since says 0 s, never a negative time."""
    assert (await rpc.post(INFO, {"User-Agent": "clocked"})).status == 200
    [seen] = [c.last_seen for c in rpc.client.server.app[HUB].recent_clients()
              if c.user_agent == "clocked"]
    for later, said in ((-30, "0 s"), (0, "0 s"), (119.5, "119 s"), (120.5, "2 min"),
                        (179.5, "2 min"), (180.5, "3 min"), (3600.5, "60 min")):
        _clock_at(monkeypatch, seen + later)
        page = await (await rpc.client.get("/")).text()
        assert f"(clocked): 1 call(s), last companion.info {said} ago" in page, later


async def test_status_page_shows_a_missing_user_agent_as_a_question_mark(rpc: Rpc) -> None:
    response = await rpc.client.post("/rpc", json=INFO, headers=rpc.auth,
                                     skip_auto_headers=["User-Agent"])
    assert response.status == 200
    page = await (await rpc.client.get("/")).text()
    assert "127.0.0.1 (?): 1 call(s), last companion.info " in page


async def test_status_page_shows_at_most_120_characters_of_what_a_client_sent(
        rpc: Rpc) -> None:
    """docs/API.md "GET /": what clients sent is shown "at most 120 characters": 120
    whole, 121 as the first 119 and an ellipsis."""
    whole, cut = ("ab " * 40)[:-1] + "c", "cd " * 40 + "e"
    assert (len(whole), len(cut)) == (120, 121)
    for agent in (whole, cut):
        assert (await rpc.post(INFO, {"User-Agent": agent})).status == 200
    page = await (await rpc.client.get("/")).text()
    assert f"({whole}): 1 call(s)" in page
    assert f"({cut[:119]}…): 1 call(s)" in page


async def test_status_page_says_none_where_nothing_is_connected(rpc: Rpc) -> None:
    page = await (await rpc.client.get("/")).text()
    assert "<h3>WebSockets</h3><p>none</p>" in page
    assert "<h3>Recent HTTP clients</h3><p>none</p>" in page


async def test_status_page_gives_the_time_the_daemon_started(rpc: Rpc) -> None:
    started = 1_000_000_000.0
    rpc.client.server.app[SERVICES].started_at = started
    page = await (await rpc.client.get("/")).text()
    when = time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(started))
    assert f"running since\n{when}." in page


async def test_status_page_names_every_allowed_origin(rpc: Rpc) -> None:
    """docs/API.md lists the two origins allowed by default; the pairing help names both."""
    page = await (await rpc.client.get("/")).text()
    assert "other pages than <code>http://localhost:30000, http://127.0.0.1:30000</code>" \
        in page


async def test_status_page_lists_systems_with_name_and_source_and_adapters_described(
        rpc: Rpc) -> None:
    """docs/API.md "GET /": the page gives the systems and adapters, as systems.list and
    adapters.list name them."""
    page = await (await rpc.client.get("/")).text()
    for system in await rpc.ok("systems.list"):
        assert (f"<b>{system['id']}</b> — {html.escape(system['name'])} "
                f"<small>({html.escape(system['source'])})</small>") in page
    adapters = await rpc.ok("adapters.list")
    assert adapters
    for adapter in adapters:
        assert f"<b>{adapter['id']}</b> — {html.escape(adapter['description'])}" in page


class MarkupDuel(SampleDuel):
    """A plugin system whose name and source are markup."""

    id = "markup-duel"
    name = "<i>Markup</i> & co"
    source = "<b>The Book</b>"


class MarkupId(SampleDuel):
    id = "<script>alert(1)</script>"


async def test_status_page_shows_markup_from_plugins_and_clients_as_text(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/SECURITY.md "Reading the status page": a plugin's names, the error quoting a
    wrong system id, and a client's user agent are shown escaped, never as markup."""
    monkeypatch.setattr(sample_plugin, "MARKUP", Plugin(
        name="<em>markup</em>", version="<s>1</s>", systems=(MarkupDuel(),)), raising=False)
    monkeypatch.setattr(sample_plugin, "MARKUP_ID", Plugin(
        name="markup-id", version="1", systems=(MarkupId(),)), raising=False)
    settings = Settings(home=tmp_path, log_stream=io.StringIO(), plugins=with_plugins(
        EntryPoint("markup", "tests.sample_plugin:MARKUP", GROUP),
        EntryPoint("<u>markup-id</u>", "tests.sample_plugin:MARKUP_ID", GROUP)))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    rpc = Rpc(client, settings.token_path.read_text().strip())
    assert (await rpc.post(INFO, {"User-Agent": "<u>agent</u>"})).status == 200
    page = await (await client.get("/")).text()
    for shown in ("<b>markup-duel</b> — &lt;i&gt;Markup&lt;/i&gt; &amp; co "
                  "<small>(&lt;b&gt;The Book&lt;/b&gt;)</small>",
                  "<b>&lt;em&gt;markup&lt;/em&gt;</b> &lt;s&gt;1&lt;/s&gt;",
                  "<b>&lt;u&gt;markup-id&lt;/u&gt;</b>  — <span class=err>skipped: system id "
                  "&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot; must be kebab-case",
                  "(&lt;u&gt;agent&lt;/u&gt;): 1 call(s)"):
        assert shown in page, shown
    assert not re.search(r"<i>Markup|<(em|s|u|script)>", page)


@pytest.mark.parametrize("header", ["Bearer {token}", "Bearer {token} " + "a " * 4000],
                         ids=["short", "8-kb"])
async def test_a_malformed_request_is_one_line_in_the_log_without_a_traceback(
        rpc: Rpc, caplog: pytest.LogCaptureFixture, header: str) -> None:
    """aiohttp logged each one as an error with its whole traceback: anyone could fill
    the log. (aiohttp's parser answers 400 before any handler runs; its message quotes
    the line, up to 8190 bytes of it, below a line of its own, and the line may hold
    the token: the log line is redacted, cut short and one line.)"""
    server = rpc.client.server
    with caplog.at_level(logging.DEBUG, logger="aiohttp.server"):
        reader, writer = await asyncio.open_connection(server.host, server.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     + header.format(token=rpc.token).encode() + b"\r\n\r\n")
        await writer.drain()
        assert (await reader.read()).startswith(b"HTTP/1.0 400 ")
        writer.close()
    [record] = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert record.levelno == logging.INFO and record.exc_info is None
    line = JsonLines().format(record)
    assert "refused with 400: Invalid header token" in line
    assert rpc.token not in line and "\n" not in record.getMessage()
    assert len(record.getMessage()) < 300


async def test_a_fault_in_aiohttp_keeps_its_traceback(caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    """Only the parser's refusals are shortened: any other exception aiohttp logs is
    still an error with its traceback."""
    log = ServerLog(logging.getLogger("aiohttp.server"))
    with caplog.at_level(logging.DEBUG, logger="aiohttp.server"):
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            log.exception("Error handling request from %s", "127.0.0.1", exc_info=exc)
    [record] = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert record.getMessage() == "Error handling request from 127.0.0.1"


async def test_a_client_that_hangs_up_mid_body_is_no_fault(
        rpc: Rpc, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    """Nobody is left to answer: a request line with 499, no error and no traceback."""
    server = rpc.client.server
    with caplog.at_level(logging.INFO):
        _reader, writer = await asyncio.open_connection(server.host, server.port)
        writer.write(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                     + rpc.token.encode() + b"\r\nContent-Length: 1000\r\n\r\n{\"json")
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.close()
        await asyncio.sleep(0.2)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    rpc.client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    assert '"status":499' in settings.log_stream.getvalue()


async def test_a_request_target_that_is_no_path_passes_the_guard(rpc: Rpc) -> None:
    """OPTIONS * matched no route and got aiohttp's own 404, naming its version, without
    the Host check (docs/SECURITY.md "Fingerprinting")."""
    def exchange(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"OPTIONS * HTTP/1.1\r\nHost: evil.example\r\n"
                         b"Connection: close\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer and (chunk := sock.recv(65536)):
                answer += chunk
        return answer
    head = (await asyncio.to_thread(exchange, rpc.client.server.port)).split(b"\r\n\r\n")[0]
    assert head.startswith(b"HTTP/1.1 403") and b"Server: mindscape" in head, head


async def test_method_names_no_method_has_are_logged_and_kept_cut_short(
        rpc: Rpc, settings: Settings) -> None:
    """The request log kept up to 512 method names whole, and their JSON, and wrote each
    whole: calls naming 1 MB methods held hundreds of MB and filled the log."""
    access = rpc.client.server.app[ACCESS_LOG]
    for i in range(5):
        answer = await rpc.call(f"{i:04d} " + "m " * 250_000)
        assert answer["error"]["code"] == -32601
    access.flush()
    kept = sum(len(text) + sum(len(part) for part in (key if isinstance(key, tuple) else (key,))
                               if isinstance(part, str))
               for key, text in access._texts.items())
    assert kept < 10_000
    lines = settings.log_stream.getvalue().splitlines()  # type: ignore[union-attr]
    assert len(lines) >= 5 and max(map(len, lines)) < 2_000


def _assert_logged_cut_short(rpc: Rpc, settings: Settings, field: str,
                             starts: list[str]) -> None:
    """Each access line's ``field`` begins as in ``starts``, is cut to ``MAX_KEPT`` with
    an ellipsis, and the log and the kept heads stay small."""
    lines = _access_lines(rpc, settings)
    assert [line[field][:len(starts[0])] for line in lines] == starts
    assert all(len(line[field]) == MAX_KEPT and line[field].endswith("…")
               for line in lines), lines
    assert max(map(len, settings.log_stream.getvalue().splitlines())) < 2 * MAX_KEPT  # type: ignore[union-attr]
    heads = rpc.client.server.app[ACCESS_LOG]._heads
    kept = sum(len(text) + sum(map(len, key)) for key, text in heads.items())
    assert kept < 10 * 2 * MAX_KEPT


async def test_long_paths_are_logged_and_kept_cut_short(rpc: Rpc,
                                                       settings: Settings) -> None:
    """Any web page can make the GM's browser ask for a path of 8 KB (a GET with no
    ``Origin``, or refused for its ``Origin``: logged either way); the request log wrote
    each whole, a line of 8 KB where a usual one is 150 bytes, and kept up to 512 of them
    as they were. A path is cut as a method name no method has is (``logs.kept``)."""
    for i in range(5):
        path = f"/{i:04d}" + "a." * 4000
        answer = await rpc.client.get(path, headers={"Origin": "https://evil.example"}
                                      if i % 2 else None)
        assert answer.status == (403 if i % 2 else 404)
    _assert_logged_cut_short(rpc, settings, "path", [f"/{i:04d}" for i in range(5)])


async def test_a_long_http_method_is_logged_and_kept_cut_short(
        rpc: Rpc, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """aiohttp's parser without its C extension (``AIOHTTP_NO_EXTENSIONS``, or where no
    wheel has it) takes any token as a method, up to its 8190-byte request line; the
    request log wrote such a method whole (the C parser knows its methods by name). It
    is cut as a path is (``logs.kept``)."""
    monkeypatch.setattr("aiohttp.web_protocol.HttpRequestParser", HttpRequestParserPy)
    for i in range(3):
        method = f"M{i}" + ".m" * 3000  # (dots: no run of a token's alphabet to redact)
        reader, writer = await _opened(rpc, method.encode() + b" /healthz HTTP/1.1\r\n"
                                       b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 405 "), answer[:80]
    _assert_logged_cut_short(rpc, settings, "http", ["M0", "M1", "M2"])


async def test_a_fault_on_a_long_path_logs_the_path_cut_short(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A fault's log line (``security._fault``) named the request's path whole: a path of
    8 KB, which any web page can have the GM's browser ask for, made an error line of
    8 KB each time a handler failed on it. It is cut as the request line's is."""
    import companion.app as app_module

    async def broken(request: Any) -> Any:
        raise RuntimeError("a fault")

    monkeypatch.setattr(app_module, "elsewhere", broken)
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream)
    client: TestClient[Any, Any] = await aiohttp_client(app_module.create_app(settings))
    path = "/nope/" + "a." * 4000
    with caplog.at_level(logging.ERROR, logger="mindscape.http"):
        response = await client.get(path)
    assert response.status == 500
    [record] = [r for r in caplog.records if r.name == "mindscape.http"]
    fields = record.fields  # type: ignore[attr-defined]
    assert fields["path"] == path[:MAX_KEPT - 1] + "…"
    assert json.loads(JsonLines().format(record))["path"] == fields["path"]


async def _opened(rpc: Rpc, request: bytes
                  ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    server = rpc.client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(request)
    await writer.drain()
    return reader, writer


def _post_lines(rpc: Rpc, length: int, *, version: bytes = b"1.1",
                auth: bool = True) -> bytes:
    """The request line and headers of a POST /rpc of ``length`` bytes."""
    token = b"Authorization: Bearer " + rpc.token.encode() + b"\r\n" if auth else b""
    return (b"POST /rpc HTTP/" + version + b"\r\nHost: 127.0.0.1\r\n" + token
            + b"Content-Type: application/json\r\nContent-Length: " + str(length).encode()
            + b"\r\n")


def _rpc_head(rpc: Rpc, length: int, *, version: bytes = b"1.1", auth: bool = True,
              expect: bytes = b"100-continue", more: bytes = b"") -> bytes:
    """The head of a POST /rpc with ``Expect: expect`` (no Connection: close)."""
    return (_post_lines(rpc, length, version=version, auth=auth)
            + b"Expect: " + expect + b"\r\n" + more + b"\r\n")


async def test_expect_100_continue_is_understood_in_any_case(rpc: Rpc) -> None:
    """RFC 9110: the expectation is case-insensitive; curl and browsers write it
    lower-case, other clients "100-Continue"."""
    body = json.dumps(INFO).encode()
    for spelled in (b"100-Continue", b"100-CONTINUE"):
        reader, writer = await _opened(rpc, _rpc_head(rpc, len(body), expect=spelled))
        answer = await _answer(reader)
        assert answer == b"HTTP/1.1 100 Continue\r\n\r\n", answer[:80]
        writer.write(body)
        await writer.drain()
        answer = await _answer(reader)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200 ") and b'"result"' in answer, answer[:80]


async def test_an_http_1_0_request_asking_expect_is_not_sent_100_continue(rpc: Rpc) -> None:
    """RFC 9110 10.1.1: a server must not send a 100 (Continue) to an HTTP/1.0 client,
    which sends its body without waiting for one."""
    body = json.dumps(INFO).encode()
    reader, writer = await _opened(rpc, _rpc_head(rpc, len(body), version=b"1.0") + body)
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert b"100 Continue" not in answer
    assert answer.startswith(b"HTTP/1.0 200 ") or answer.startswith(b"HTTP/1.1 200 "), \
        answer[:80]
    assert b'"result"' in answer


async def test_a_preflight_asking_expect_is_answered_as_a_preflight(rpc: Rpc) -> None:
    """A preflight is answered by the guard without the checks of a request's token and
    body (a browser sends it with neither): asking Expect, it is invited and answered
    204 with the CORS headers, as without, not refused at its expectation (here for
    the Content-Encoding that a request proper would be refused 415 for)."""
    preflight = (b"OPTIONS /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Origin: http://localhost:30000\r\nAccess-Control-Request-Method: POST\r\n"
                 b"Access-Control-Request-Headers: authorization, content-type\r\n"
                 b"Content-Encoding: gzip\r\nContent-Length: 0\r\n")
    reader, writer = await _opened(rpc, preflight + b"Connection: close\r\n\r\n")
    plain = await _answer(reader)
    writer.close()
    assert plain.startswith(b"HTTP/1.1 204 "), plain[:80]
    reader, writer = await _opened(rpc, preflight + b"Expect: 100-continue\r\n"
                                               b"Connection: close\r\n\r\n")
    answer = await _answer(reader)
    assert answer == b"HTTP/1.1 100 Continue\r\n\r\n", answer[:80]
    answer = await _answer(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 204 "), answer[:80]
    assert b"Access-Control-Allow-Origin: http://localhost:30000" in answer


async def test_a_refusal_of_an_expectation_closes_the_connection(rpc: Rpc) -> None:
    """The body the client was told not to send may come anyway: the connection is
    closed after the refusal, not read on as the next request."""
    for head, status in ((_rpc_head(rpc, 10, auth=False), b"401"),
                         (_rpc_head(rpc, 10, expect=b"a-miracle"), b"417"),
                         (_rpc_head(rpc, 10, expect=b"100-continued"), b"417"),
                         (_rpc_head(rpc, 5_000_000), b"413")):
        reader, writer = await _opened(rpc, head)
        answer = await _answer(reader)
        assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:80]
        assert b"Connection: close" in answer.split(b"\r\n\r\n")[0]
        if status != b"413":
            # the body sent anyway, then a request that would be answered
            writer.write(b"x" * 10 + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 15) == b""
        writer.close()


async def test_a_foreign_host_refused_at_its_expectation_gets_no_cors_headers(
        rpc: Rpc) -> None:
    """As any 403 of a foreign Host: no Access-Control-* header, even for an Origin
    that is allowed (it would let the page read the refusal)."""
    reader, writer = await _opened(rpc, (
        b"POST /rpc HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://localhost:30000\r\n"
        b"Authorization: Bearer " + rpc.token.encode() + b"\r\n"
        b"Content-Length: 10\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"))
    answer = await _answer(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:80]
    assert b"access-control-" not in answer.lower()


async def test_a_refusal_at_the_expectation_is_in_the_access_log(rpc: Rpc,
                                                                  settings: Settings) -> None:
    """One line per request, also for one refused before its body was invited."""
    reader, writer = await _opened(rpc, _rpc_head(rpc, 5_000_000,
                                                  more=b"Connection: close\r\n"))
    answer = await _answer(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]
    rpc.client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    lines = [json.loads(line) for line in settings.log_stream.getvalue().splitlines()]
    assert [(line["logger"], line["status"]) for line in lines] == [("mindscape.access", 413)]


def _body_of(size: int) -> bytes:
    """A companion.info request padded to exactly ``size`` bytes."""
    bare = b'{"jsonrpc":"2.0","method":"companion.info","id":1,"params":{"x":""}}'
    padding = size - len(bare)
    return bare[:-3] + b"a" * padding + bare[-3:]


async def test_a_body_of_exactly_1_mib_is_accepted_and_one_byte_more_is_413(
        rpc: Rpc) -> None:
    """API.md "Limits": 1 MiB per request, that much included; asked with Expect too."""
    limit = 1024 * 1024
    assert len(_body_of(limit)) == limit
    response = await rpc.client.post("/rpc", data=_body_of(limit), headers=rpc.auth)
    assert response.status == 200
    response = await rpc.client.post("/rpc", data=_body_of(limit + 1), headers=rpc.auth)
    assert response.status == 413
    answer = await _expecting(rpc, _post_lines(rpc, limit), _body_of(limit))
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), answer[:80]
    answer = await _expecting(rpc, _post_lines(rpc, limit + 1), _body_of(limit + 1))
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:80]


async def test_the_body_limit_of_the_settings_is_the_one_applied(aiohttp_client: Any,
                                                                 tmp_path: Path) -> None:
    """The body limit is Limits.max_body, also when set above 1 MiB: aiohttp's own limit
    (client_max_size, 1 MiB unless told) does not refuse first."""
    from companion.app import create_app
    from companion.settings import Limits

    limit = 2 * 1024 * 1024
    settings = Settings(home=tmp_path / "home", limits=Limits(max_body=limit),
                        log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    auth = {"Authorization": f"Bearer {settings.token_path.read_text().strip()}"}
    response = await client.post("/rpc", data=_body_of(limit), headers=auth)
    assert response.status == 200
    response = await client.post("/rpc", data=_body_of(limit + 1), headers=auth)
    assert response.status == 413
    assert await response.json() == {"error": f"the request body exceeds {limit} bytes"}

    async def unsized() -> Any:
        yield _body_of(limit + 1)

    response = await client.post("/rpc", data=unsized(), headers=auth)
    assert response.status == 413
    assert await response.json() == {"error": f"the request body exceeds {limit} bytes"}


@pytest.mark.parametrize("path", [b"/", b"/healthz", b"/ws", b"/no-such-path"])
async def test_every_path_asked_with_an_expectation_gets_our_answer(
        rpc: Rpc, path: bytes) -> None:
    """GET / has the guard's expect handler too, as every other path (/healthz, /ws, and
    those no route names): an unknown expectation is refused in our words, and a
    foreign Host is 403 at once."""
    reader, writer = await _opened(rpc, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                        b"Expect: a-miracle\r\nConnection: close\r\n\r\n")
    refused = await _answer(reader)
    writer.close()
    assert refused.startswith(b"HTTP/1.1 417 ") and b"only 100-continue" in refused
    reader, writer = await _opened(rpc, b"GET " + path + b" HTTP/1.1\r\n"
                                        b"Host: evil.example\r\n"
                                        b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
    refused = await _answer(reader)
    writer.close()
    assert refused.startswith(b"HTTP/1.1 403 ") and b"this Host is not allowed" in refused
    assert b"100 Continue" not in refused


@pytest.mark.parametrize(("configured", "host"), [
    ("fd00::1", "[fd00::1]:39393"), ("fd00::1", "[FD00::1]"), ("[fd00::1]", "[fd00::1]:8"),
    ("Box.LAN", "box.lan:39393"), ("Box.LAN", "BOX.lan")])
async def test_the_configured_host_is_accepted_with_or_without_a_port(
        aiohttp_client: Any, tmp_path: Path, configured: str, host: str) -> None:
    """API.md "Transport": a Host that is 'a loopback name or the configured host' is
    served. An IPv6 address is written in brackets in Host (given to --host with them or
    without), and a name in any case (RFC 9110 4.2.3: the host is case-insensitive)."""
    from companion.app import create_app

    settings = Settings(home=tmp_path, host=configured, port=39393)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    assert (await client.get("/healthz", headers={"Host": host})).status == 200
    assert (await client.get("/healthz", headers={"Host": "fd00::2"})).status == 403


@pytest.mark.parametrize("configured", ["localhost", "::1", "box.lan"])
async def test_the_loopback_names_stay_accepted_whatever_host_is_configured(
        aiohttp_client: Any, tmp_path: Path, configured: str) -> None:
    """SECURITY.md 2: 403 for a Host name that is not `localhost`, `127.0.0.1`, `[::1]`
    *or* the configured --host: configuring a host adds a name, it takes none away
    (the default host is 127.0.0.1, which hid a loopback name missing from the list)."""
    from companion.app import create_app

    settings = Settings(home=tmp_path, host=configured, port=39393)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    for host in ("127.0.0.1", "127.0.0.1:39393", "localhost:8", "[::1]"):
        assert (await client.get("/healthz", headers={"Host": host})).status == 200, host


@pytest.mark.parametrize("host", ["[::1", "[::1]]", "[::1]x", "[::1]:", "[::1]:80]",
                                  "[::1]]:39393", "[::1]x39393"])
async def test_a_bracketed_host_with_anything_but_a_port_after_it_is_403(
        rpc: Rpc, host: str) -> None:
    """security.host_name: after an IPv6 name's closing bracket only ':<digits>' may
    follow; anything else is not a Host our own address would make a browser send."""
    response = await rpc.post(INFO, headers={"Host": host})
    assert response.status == 403
    assert await response.json() == {
        "error": "this Host is not allowed (use 127.0.0.1 or localhost)"}


async def test_an_answer_for_an_allowed_origin_says_it_varies_by_origin(rpc: Rpc) -> None:
    """Fetch standard, "CORS protocol and HTTP caches": an answer whose
    Access-Control-Allow-Origin names the request's Origin says `Vary: Origin`, so a
    cache never hands it to a page of another origin."""
    origin = "http://localhost:30000"
    for response in (await rpc.post(INFO, headers={"Origin": origin}),
                     await rpc.client.options("/rpc", headers={"Origin": origin}),
                     await rpc.client.post("/rpc", json=INFO, headers={"Origin": origin})):
        assert response.headers["Access-Control-Allow-Origin"] == origin
        assert response.headers["Vary"] == "Origin"
    assert "Vary" not in (await rpc.post(INFO)).headers


async def test_a_401_names_the_bearer_scheme_and_says_how_to_get_the_token(rpc: Rpc) -> None:
    """RFC 6750 3: a 401 for a missing or wrong bearer token carries a WWW-Authenticate
    challenge of the Bearer scheme (here with the daemon's realm); the body says what
    to send and where the token comes from."""
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = await rpc.client.post("/rpc", json=INFO, headers=headers)
        assert response.status == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="mindscape"'
        assert await response.json() == {"error": "missing or wrong token: send "
                                         "Authorization: Bearer <token> (see `mindscape "
                                         "token`)"}


@pytest.mark.parametrize(("path", "methods"), [("/rpc", "POST"), ("/", "GET, HEAD"),
                                               ("/healthz", "GET, HEAD"), ("/ws", "GET")])
async def test_a_preflight_answers_with_exactly_the_headers_api_md_names(
        rpc: Rpc, path: str, methods: str) -> None:
    """docs/API.md "Security" 3: 204 with the path's methods in
    Access-Control-Allow-Methods (`Allow` adds OPTIONS), `Access-Control-Allow-Headers:
    Authorization, Content-Type` and `Access-Control-Max-Age: 600`."""
    origin = "http://127.0.0.1:30000"
    response = await rpc.client.options(path, headers={
        "Origin": origin, "Access-Control-Request-Method": "GET"})
    assert response.status == 204
    assert {k: v for k, v in response.headers.items()
            if k.startswith("Access-Control-") or k in ("Allow", "Vary")} == {
        "Allow": f"{methods}, OPTIONS", "Access-Control-Allow-Methods": methods,
        "Access-Control-Allow-Headers": "Authorization, Content-Type",
        "Access-Control-Max-Age": "600", "Access-Control-Allow-Origin": origin,
        "Vary": "Origin"}
    # without an Origin it is no CORS preflight: Allow alone
    plain = await rpc.client.options(path)
    assert plain.status == 204 and plain.headers["Allow"] == f"{methods}, OPTIONS"
    assert not any(k.startswith("Access-Control-") for k in plain.headers)


async def test_a_fault_in_a_handler_after_100_continue_is_still_our_json_500(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """security.py: 'A fault in a handler becomes a JSON 500 with an error id ... never
    aiohttp's page'. The interim 100 Continue is not the answer proper: it must not make
    the guard think an answer is on the wire already and leave the fault to aiohttp."""
    import companion.app as app_module

    async def broken(request: Any) -> Any:
        raise RuntimeError("secret-in-the-message")

    monkeypatch.setattr(app_module, "status_page", broken)
    settings = Settings(home=tmp_path / "home", log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(app_module.create_app(settings))
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n"
                 b"Connection: close\r\n\r\n")
    await writer.drain()
    assert await _answer(reader) == b"HTTP/1.1 100 Continue\r\n\r\n"
    answer = await _answer(reader)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 500 "), answer[:80]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert set(body) == {"error", "error_id"} and body["error_id"] in body["error"]
    assert b"secret-in-the-message" not in answer


async def test_a_fault_in_a_websocket_after_its_handshake_closes_the_connection(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """security.py: once the 101 is on the wire, a fault cannot be answered with our JSON
    500 (its bytes would follow the handshake, where the client reads WebSocket frames):
    aiohttp closes the connection, and the request line says 500."""
    import companion.app as app_module
    import companion.ws as ws_module

    async def broken(*args: Any) -> Any:
        raise RuntimeError("secret-in-the-message")

    monkeypatch.setattr(ws_module, "_authenticate", broken)
    log = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=log)
    app = app_module.create_app(settings)
    client: TestClient[Any, Any] = await aiohttp_client(app)
    reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                 b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 b"Sec-WebSocket-Protocol: mindscape.v1\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 101 "), answer[:80]
    assert answer.count(b"HTTP/1.1") == 1 and b"secret" not in answer, answer
    app[ACCESS_LOG].flush()
    assert [json.loads(line)["status"] for line in log.getvalue().splitlines()
            if '"mindscape.access"' in line] == [500]


async def test_the_token_may_follow_bearer_after_more_than_one_space(rpc: Rpc) -> None:
    """RFC 6750 2.1: credentials = "Bearer" 1*SP b64token: one space or more."""
    response = await rpc.client.post("/rpc", json=INFO, headers={
        "Authorization": f"Bearer   {rpc.token}"})
    assert response.status == 200
    assert (await response.json())["result"]["name"] == "mindscape"


@pytest.mark.parametrize("glued", ["Bearer:{token}", "BearerX{token}", "Bearer\t{token}"])
async def test_a_token_not_parted_from_bearer_by_a_space_is_401(
        rpc: Rpc, glued: str) -> None:
    """RFC 6750 2.1: the scheme and the token are parted by spaces (1*SP); "Bearer"
    followed by anything else is no bearer credential."""
    response = await rpc.client.post("/rpc", json=INFO, headers={
        "Authorization": glued.format(token=rpc.token)})
    assert response.status == 401


async def test_a_connection_reset_in_a_handler_is_a_499_in_the_log_and_no_fault(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """security.Guard.guard: a client that hung up is no fault of ours; the request line
    says 499 (nginx's code), and no error with a traceback is logged."""
    import companion.app as app_module

    async def hung_up(request: Any) -> Any:
        raise ConnectionResetError("Connection lost")

    monkeypatch.setattr(app_module, "status_page", hung_up)
    settings = Settings(home=tmp_path / "home", log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(app_module.create_app(settings))
    with caplog.at_level(logging.INFO):
        response = await client.get("/")
    assert response.status == 499
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    client.server.app[ACCESS_LOG].flush()
    assert isinstance(settings.log_stream, io.StringIO)
    [line] = [json.loads(line) for line in settings.log_stream.getvalue().splitlines()
              if json.loads(line).get("path") == "/"]
    assert line["status"] == 499


@pytest.mark.parametrize("name", ["mindscape.sqlite3", "mindscape.sqlite3-wal"])
async def test_a_link_put_in_the_stores_place_is_refused_and_nothing_is_written_through_it(
        aiohttp_client: ClientFactory, settings: Settings, tmp_path: Path,
        name: str) -> None:
    """A home that others could write before the start made it private (a group-writable
    folder): one of them put there a link to a file of theirs, named as the store or its
    write-ahead log. SQLite followed it and wrote every secret choice where they could
    read it; the start narrowed the folder, saying only that it was readable."""
    settings.home.mkdir(mode=0o770)
    settings.home.chmod(0o770)
    theirs = tmp_path / "theirs"
    theirs.write_bytes(b"")
    (settings.home / name).symlink_to(theirs)
    with pytest.raises(StoreError,
                       match=f"{name} is a symbolic link; .* move it out of the folder"):
        await aiohttp_client(create_app(settings))
    assert theirs.read_bytes() == b""
    assert stat.S_IMODE(settings.home.stat().st_mode) == 0o700


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root can give a file to another user")
async def test_a_store_file_of_another_user_is_refused(
        aiohttp_client: ClientFactory, settings: Settings) -> None:
    """A file another user made in the store's place may still be open in a process of
    theirs, reading what the daemon writes."""
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    await client.close()
    other = os.geteuid() + 12345
    os.chown(settings.store_path, other, -1)
    with pytest.raises(StoreError, match=f"sqlite3 belongs to another user \\(uid {other}\\)"):
        await aiohttp_client(create_app(settings))
