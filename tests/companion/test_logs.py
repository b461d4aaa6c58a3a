"""Request lines (companion/logs.py ``AccessLog``): one JSON line per request, written
in batches."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from companion.app import create_app
from companion.logs import FLUSH_AFTER, FLUSH_LINES, AccessLog
from companion.settings import Settings


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
    assert (first["http"], first["path"], first["status"], first["methods"],
            first["outcome"]) == ("POST", "/rpc", 200, ["companion.info"], "ok")
    assert second["ws"] == 1 and second["logger"] == "mindscape.access"


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
    response = await client.post("/rpc", json={"jsonrpc": "2.0", "method": "companion.info",
                                                "id": 1},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    await client.close()
    assert [line["methods"] for line in _lines(stream) if "http" in line] == [
        ["companion.info"]]
