"""Structured logs: one JSON object per line on stderr.

Request lines carry method, duration and outcome. Nothing logs a token or an
``Authorization`` header: the security code never passes either to a logger.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "msg", ...fields}``; ``exc`` holds a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class BatchedStream(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes lines into a buffer flushed within ``FLUSH_AFTER`` seconds (by a timer on
    the running event loop), at once for warnings and errors, and at exit.

    A line per request written and flushed on its own costs a system call per request,
    a large part of a small call's time; batching keeps the line per request without it.
    A process killed with SIGKILL may lose the last fraction of a second of request
    lines, never a warning or an error.
    """

    FLUSH_AFTER = 0.2

    def __init__(self) -> None:
        # Kept open for the life of the process (closefd=False: fd 2 stays ours).
        stream = open(sys.stderr.fileno(), "w", buffering=1 << 16, encoding="utf-8",  # noqa: SIM115
                      errors="replace", closefd=False)
        super().__init__(stream)
        self._pending = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)
            return
        if record.levelno >= logging.WARNING:
            self.flush()
            return
        if not self._pending:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._pending = True
            loop.call_later(self.FLUSH_AFTER, self._flush_pending)

    def _flush_pending(self) -> None:
        self._pending = False
        self.flush()


def configure(level: str = "info") -> None:
    """Send every ``mindscape.*`` (and aiohttp) record to stderr as JSON lines."""
    handler = BatchedStream()
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.Formatter.converter = time.gmtime
    # No thread or process names in our lines: skip gathering them for every record.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


access = logging.getLogger("mindscape.access")


def request_line(fields: dict[str, Any]) -> None:
    """One line per HTTP request or WebSocket message."""
    if access.isEnabledFor(logging.INFO):
        # Built by hand: ``Logger.info`` would walk the stack for a caller we never log.
        record = logging.LogRecord(access.name, logging.INFO, __file__, 0, "request",
                                   None, None)
        record.fields = fields
        access.handle(record)
