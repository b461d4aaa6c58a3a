"""Structured logs: one JSON object per line on stderr.

Two writers share one buffered stream:

- ``logging`` records (start-up, plugins, internal errors with their traceback) are
  formatted by ``JsonLines`` and flushed at once;
- request lines (one per HTTP request or WebSocket message: method, duration, outcome)
  go through ``AccessLog``, which keeps them as dicts and writes them in one go within
  ``FLUSH_AFTER`` seconds. A ``logging`` record, a formatter call and a system call per
  request cost more than many small calls themselves; batching keeps a line per request
  without that. A process killed with SIGKILL may lose its last fraction of a second of
  request lines, never a warning or an error.

Nothing logs a token or an ``Authorization`` header: the security code never passes
either to a logger.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any, TextIO

FLUSH_AFTER = 0.2


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


def open_stderr() -> TextIO:
    """A block-buffered text stream on fd 2 (``sys.stderr`` is line-buffered)."""
    # Kept open for the life of the process; closefd=False leaves fd 2 alone.
    return open(sys.stderr.fileno(), "w", buffering=1 << 16, encoding="utf-8",
                errors="replace", closefd=False)


def configure(level: str, stream: TextIO) -> None:
    """Send every ``logging`` record at ``level`` or above to ``stream`` as JSON lines."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class AccessLog:
    """Request lines for one app, written to ``stream`` in batches (see the module)."""

    def __init__(self, stream: TextIO | None, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and stream is not None
        self._lines: list[dict[str, Any]] = []
        self._pending = False

    def line(self, fields: dict[str, Any]) -> None:
        """Queue one request line (``fields`` become members of the JSON object)."""
        if not self.enabled:
            return
        fields["ts"] = time.time()
        self._lines.append(fields)
        if not self._pending:
            self._pending = True
            try:
                asyncio.get_running_loop().call_later(FLUSH_AFTER, self.flush)
            except RuntimeError:
                self.flush()

    def flush(self) -> None:
        """Write every queued line now."""
        self._pending = False
        lines, self._lines = self._lines, []
        if not lines or self.stream is None:
            return
        text = "".join(
            json.dumps({"ts": round(f.pop("ts"), 3), "level": "info",
                        "logger": "mindscape.access", "msg": "request", **f},
                       default=str, ensure_ascii=False) + "\n"
            for f in lines)
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            # stderr gone (a closed terminal): the daemon goes on without request lines.
            self.enabled = False
