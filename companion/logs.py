"""Structured logs: one JSON object per line on stderr.

Request lines carry method, duration and outcome. Nothing logs a token or an
``Authorization`` header: the security code never passes either to a logger.
"""

from __future__ import annotations

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


def configure(level: str = "info") -> None:
    """Send every ``mindscape.*`` (and aiohttp) record to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.Formatter.converter = time.gmtime


access = logging.getLogger("mindscape.access")


def request_line(fields: dict[str, Any]) -> None:
    """One line per HTTP request or WebSocket message."""
    if access.isEnabledFor(logging.INFO):
        access.info("request", extra={"fields": fields})
