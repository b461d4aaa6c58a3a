"""Request lines (companion/logs.py ``AccessLog``): one JSON line per request, written
in batches; and the JSON lines of ``logging`` records (``JsonLines``, ``configure``)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from companion import logs as logs_module
from companion.app import create_app
from companion.logs import FLUSH_AFTER, FLUSH_LINES, AccessLog, configure, open_stderr
from companion.settings import Settings

INFO = {"jsonrpc": "2.0", "method": "companion.info", "id": 1}


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_a_few_lines_are_written_together_within_the_flush_delay() -> None:
    stream = io.StringIO()
    log = AccessLog(stream)
    log.http("POST", "/rpc", 200, 0.001, [("companion.info", None)])
    log.line({"ws": 1, "methods": ["dice.roll"], "errors": [], "outcome": "ok"})
    await asyncio.sleep(0)
    assert stream.getvalue() == ""
    await asyncio.sleep(FLUSH_AFTER + 0.1)
    first, second = _lines(stream)
    assert (first["http"], first["path"], first["status"], first["duration_ms"],
            first["methods"], first["outcome"]) == (
        "POST", "/rpc", 200, 1.0, ["companion.info"], "ok")
    assert second["ws"] == 1 and second["logger"] == "mindscape.access"


def test_every_request_line_has_the_same_head_the_time_to_the_millisecond(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP request's line and a WebSocket message's start alike: ``ts`` in seconds
    to the millisecond, level info, logger mindscape.access, msg request; the duration
    is in milliseconds to the microsecond (the clock stubbed here)."""
    monkeypatch.setattr(logs_module, "time", SimpleNamespace(time=lambda: 1700000000.1236))
    stream = io.StringIO()
    log = AccessLog(stream)
    log.http("GET", "/healthz", 200, 0.000_25, None)
    log.line({"ws": 1, "methods": ["companion.info"], "errors": [], "outcome": "ok",
              "duration_ms": 0.25})
    head = {"ts": 1700000000.124, "level": "info", "logger": "mindscape.access",
            "msg": "request"}
    for line in _lines(stream):
        assert {key: line[key] for key in (*head, "duration_ms")} == {
            **head, "duration_ms": 0.25}


async def test_without_a_stream_the_request_log_is_off_and_keeps_nothing() -> None:
    """Settings.log_stream None: request lines go nowhere, so none is queued either."""
    log = AccessLog(None)
    log.http("GET", "/healthz", 200, 0.0, None)
    log.line({"ws": 1, "methods": [], "errors": [], "outcome": "ok"})
    assert not log.enabled and log._lines == [] and log._flush is None


async def test_a_full_batch_is_written_on_the_next_turn_of_the_loop() -> None:
    """A batch is at most FLUSH_LINES long, so writing it never holds the event loop up
    for long (it was the p99 latency at one connection)."""
    stream = io.StringIO()
    log = AccessLog(stream)
    for n in range(FLUSH_LINES):
        log.http("POST", "/rpc", 200, n / 1000, [("companion.info", None)])
    assert stream.getvalue() == ""  # not in the request that filled it
    await asyncio.sleep(0)
    assert len(_lines(stream)) == FLUSH_LINES
    log.http("POST", "/rpc", 401, 0.001, None)
    await asyncio.sleep(0)
    assert len(_lines(stream)) == FLUSH_LINES  # the next batch waits for its timer
    log.flush()
    assert _lines(stream)[-1]["status"] == 401
    await asyncio.sleep(FLUSH_AFTER + 0.1)
    assert len(_lines(stream)) == FLUSH_LINES + 1  # the cancelled timer wrote nothing


def test_without_an_event_loop_a_line_is_written_at_once() -> None:
    stream = io.StringIO()
    AccessLog(stream).http("GET", "/healthz", 200, 0.0, None)
    [line] = _lines(stream)
    assert line["path"] == "/healthz" and "methods" not in line


async def test_the_lines_still_waiting_are_written_when_the_daemon_stops(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """Only a process killed with SIGKILL may lose its last request lines (this module's
    docstring): a graceful stop writes the lines still waiting for their timer."""
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level="info")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    response = await client.post("/rpc", json=INFO,
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    await client.close()
    assert [line["methods"] for line in _lines(stream) if "http" in line] == [
        ["companion.info"]]


async def test_each_batch_is_written_by_a_timer_of_its_own() -> None:
    """A flush leaves no timer behind it: the lines that come after it get their own
    (they waited for a hundred more lines)."""
    stream = io.StringIO()
    log = AccessLog(stream)
    for status in (200, 201):
        log.http("GET", "/healthz", status, 0.0, None)
        await asyncio.sleep(FLUSH_AFTER + 0.1)
        assert _lines(stream)[-1]["status"] == status


async def test_a_flush_and_a_full_batch_cancel_the_timer_they_make_needless() -> None:
    """A timer left behind would write a later batch before its time: the flush that
    writes the lines, or the batch filled before its timer, cancels it."""
    log = AccessLog(io.StringIO())
    log.http("GET", "/healthz", 200, 0.0, None)
    timer = log._flush
    log.flush()
    assert timer is not None and timer.cancelled()
    for _ in range(FLUSH_LINES - 1):
        log.http("GET", "/healthz", 200, 0.0, None)
    timer = log._flush
    log.http("GET", "/healthz", 200, 0.0, None)
    assert timer is not None and timer.cancelled()
    log.flush()


def test_the_lines_are_flushed_out_of_the_streams_buffer() -> None:
    """stderr is block-buffered (``open_stderr``): a batch is flushed out of it when
    written, not when 64 KiB have gathered."""
    written = io.BytesIO()
    stream = io.TextIOWrapper(written, encoding="utf-8")
    AccessLog(stream).http("GET", "/healthz", 200, 0.0, None)
    assert json.loads(written.getvalue())["path"] == "/healthz"


class _Gone(io.StringIO):
    """stderr after its terminal closed: every write fails."""

    def __init__(self, failure: Exception) -> None:
        super().__init__()
        self.failure = failure
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise self.failure


@pytest.mark.parametrize("failure", [OSError(5, "Input/output error"),
                                     ValueError("I/O operation on closed file")],
                         ids=["os-error", "closed"])
def test_without_a_stream_to_write_to_the_daemon_goes_on_without_request_lines(
        failure: Exception) -> None:
    stream = _Gone(failure)
    log = AccessLog(stream)
    for _ in range(3):
        log.http("GET", "/healthz", 200, 0.0, None)
    assert stream.writes == 1 and not log.enabled


def test_what_is_kept_of_clients_texts_is_at_most_512_of_each_kind() -> None:
    """Paths and method names come from clients: a thousand different ones do not grow
    what the request log keeps for its next lines."""
    stream = io.StringIO()
    log = AccessLog(stream)
    for n in range(1000):
        log.http("GET", f"/nope/{n}", 404, 0.0, [(f"no.such.{n}", -32601)])
    assert [line["path"] for line in _lines(stream)][-1] == "/nope/999"
    assert len(log._texts) <= 512 and len(log._heads) <= 512


async def test_a_log_level_above_info_writes_no_request_lines(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """`serve --help`: "--log-level ... (default: info, one line per request)": at
    warning, neither an HTTP request nor a WebSocket message is written."""
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level="warning")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    response = await client.post("/rpc", json=INFO, headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    await ws.send_json(INFO)
    assert "result" in await ws.receive_json()
    await ws.close()
    await client.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize("level", ["INFO", "Debug"])
async def test_a_log_level_in_capitals_writes_request_lines_as_in_small_letters(
        aiohttp_client: Any, tmp_path: Path, level: str) -> None:
    """Settings.log_level is read as logs.configure reads it, in any case: info or debug
    written in capitals still gives one line per request."""
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level=level)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    assert (await client.get("/healthz")).status == 200
    await client.close()
    assert [line["path"] for line in _lines(stream)] == ["/healthz"]


@contextlib.contextmanager
def _configured(level: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """``configure(level)`` writing to a fresh stream; the root logger's level and
    handlers are put back afterwards."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [logging.NullHandler()])  # pytest's come back
    stream = io.StringIO()
    saved = root.level
    try:
        configure(level, stream)
        yield stream
    finally:
        root.setLevel(saved)


def test_a_logging_record_is_one_json_line_with_its_fields_and_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """configure: every record at the level given (as `serve --log-level` gives it, in
    small letters) or above, and only those, as one JSON object a line: the level in
    small letters, the logger, the message, the fields it was given and the traceback
    of its exception; in place of any handler the root logger had."""
    with _configured("error", monkeypatch) as stream:
        log = logging.getLogger("mindscape.test")
        log.warning("below the level")
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            log.exception("failed %s", "here", extra={"fields": {"error_id": "ab12"}})
        assert len(logging.getLogger().handlers) == 1
    [line] = _lines(stream)
    assert {key: line[key] for key in ("level", "logger", "msg", "error_id")} == {
        "level": "error", "logger": "mindscape.test", "msg": "failed here",
        "error_id": "ab12"}
    exc, ts = line["exc"], line["ts"]
    assert isinstance(exc, str) and exc.startswith("Traceback")
    assert exc.endswith("RuntimeError: boom")
    assert isinstance(ts, float) and ts == round(ts, 3)


def test_a_logging_records_fields_that_are_no_json_are_written_as_text_and_letters_as_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """JsonLines: a field no JSON value holds (a path, an exception) is written as its
    text, not lost with the record; letters outside ASCII are written as themselves (the
    stream is UTF-8, read by people), not as ``\\u`` escapes."""
    with _configured("info", monkeypatch) as stream:
        logging.getLogger("mindscape.test").warning(
            "Gedankenstoß at %s", "Zaña", extra={"fields": {
                "home": Path("/srv/mindscape"), "cause": OSError(28, "no space")}})
    text = stream.getvalue()
    assert '"msg": "Gedankenstoß at Zaña"' in text
    [line] = _lines(stream)
    assert (line["home"], line["cause"]) == ("/srv/mindscape", "[Errno 28] no space")


#: Characters JSON leaves as they are that a client may put in a path or a method name:
#: a C1 control (U+009B starts an escape sequence in a terminal, as ESC does) and the
#: line ends of Python's ``str.splitlines`` that JSON does not escape.
UNSAFE = "\x9b31m\x85forged\u2028{\"msg\": \"x\"}\u2029\x80"


def _one_line(text: str) -> dict[str, Any]:
    """The one JSON line ``text`` holds, checked to hold none of ``UNSAFE`` raw."""
    assert not any(c in text for c in "\x9b\x85\u2028\u2029\x80"), repr(text)
    [line] = [json.loads(part) for part in text.splitlines()]
    assert isinstance(line, dict)
    return line


async def test_a_client_cannot_forge_a_line_or_an_escape_sequence_in_the_request_log(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """A path (any web page can have the GM's browser ask for ``/%C2%9B...``) and a
    method name are written with those characters as ``\\u`` escapes: one line,
    which reads back as the client's text; letters outside ASCII stay as they are."""
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level="info")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    path = "/Zaña" + UNSAFE
    assert (await client.get(urllib.parse.quote(path))).status == 404
    await client.close()
    line = _one_line(stream.getvalue())
    assert line["path"] == path and "Zaña" in stream.getvalue()

    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level="info")
    client = await aiohttp_client(create_app(settings))
    response = await client.post("/rpc", json={"jsonrpc": "2.0", "method": UNSAFE, "id": 1},
                                 headers={"Authorization": f"Bearer {token}"})
    assert (await response.json())["error"]["code"] == -32601
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": UNSAFE, "id": 2})
    assert (await ws.receive_json())["error"]["code"] == -32601
    await ws.close()
    await client.close()
    lines = [_one_line(text) for text in stream.getvalue().split("\n")[:-1]]
    assert [(line.get("http"), line["methods"]) for line in lines if "methods" in line] == [
        ("POST", [UNSAFE]), (None, [UNSAFE])]


#: DEL and the bidirectional controls, with which a line shows its text in another order
#: than it holds it ("Trojan Source"): U+202E shows what follows it right to left.
REORDERING = "\x7f\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


async def test_a_client_cannot_reorder_what_a_request_line_shows_nor_send_del(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """DEL and the bidirectional controls in a method name or a path are written as
    ``\\u`` escapes, and read back as the client's text; DEL in a line that is otherwise
    all ASCII too (DEL is ASCII, so the ASCII-only shortcut must not pass it raw)."""
    stream = io.StringIO()
    settings = Settings(home=tmp_path / "home", log_stream=stream, log_level="info")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    for method in ("rm\x7f", "user" + REORDERING + "nimda"):
        response = await client.post(
            "/rpc", json={"jsonrpc": "2.0", "method": method, "id": 1},
            headers={"Authorization": f"Bearer {token}"})
        assert (await response.json())["error"]["code"] == -32601
    path = "/admin" + REORDERING
    assert (await client.get(urllib.parse.quote(path))).status == 404
    await client.close()
    text = stream.getvalue()
    assert not any(c in text for c in REORDERING), repr(text)
    assert "\\u007f" in text and "\\u202e" in text
    lines = [json.loads(part) for part in text.splitlines()]
    assert [line["methods"] for line in lines if "methods" in line] == [
        ["rm\x7f"], ["user" + REORDERING + "nimda"]]
    assert [line["path"] for line in lines if line.get("http") == "GET"] == [path]


def test_a_logging_record_holding_such_characters_is_one_line_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """JsonLines: a record's message and fields (a fault's path, ``security._fault``)
    are escaped the same way."""
    with _configured("info", monkeypatch) as stream:
        logging.getLogger("mindscape.test").warning(
            "at %s", UNSAFE, extra={"fields": {"path": "/" + UNSAFE}})
    line = _one_line(stream.getvalue())
    assert (line["msg"], line["path"]) == ("at " + UNSAFE, "/" + UNSAFE)


def test_a_logging_record_is_escaped_of_del_and_bidirectional_controls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """JsonLines: DEL (in a record all ASCII besides, written on its own) and the
    bidirectional controls are ``\\u`` escapes too, read back as they were."""
    for text in ("at /rm\x7f", "at /" + REORDERING):
        with _configured("info", monkeypatch) as stream:
            logging.getLogger("mindscape.test").warning(text)
        written = stream.getvalue()
        assert not any(c in written for c in REORDERING), repr(written)
        [line] = _lines(stream)
        assert line["msg"] == text


def test_stderr_takes_what_is_not_utf_8_as_a_question_mark(
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """open_stderr: aiohttp hands on a client's bytes that are not UTF-8 as lone
    surrogates; written as ``?``, not a failure (which ends the request lines)."""
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    stream = open_stderr()
    try:
        log = AccessLog(stream)
        log.http("GET", "/caf\udce9", 404, 0.0, None)
    finally:
        stream.close()
    assert log.enabled and '"path":"/caf?"' in capfd.readouterr().err


def test_closing_the_stderr_stream_leaves_the_file_descriptor_open(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """open_stderr: the stream is only a buffer over stderr's descriptor; closing it (or
    its being collected) must not close stderr under the process."""
    with open(tmp_path / "stderr", "w") as stderr:
        monkeypatch.setattr(sys, "stderr", stderr)
        stream = open_stderr()
        stream.write("written")
        stream.close()
        os.fstat(stderr.fileno())  # OSError (EBADF) once the descriptor is closed
    assert (tmp_path / "stderr").read_text() == "written"
