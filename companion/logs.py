"""Structured logs: one JSON object per line on stderr.

Two writers share one buffered stream:

- ``logging`` records (start-up, plugins, internal errors with their traceback) are
  formatted by ``JsonLines`` and flushed at once;
- request lines (one per HTTP request or WebSocket message: method, duration, outcome)
  go through ``AccessLog``, which keeps them as tuples or dicts and writes them in one
  go within ``FLUSH_AFTER`` seconds, or as soon as ``FLUSH_LINES`` are waiting (so one
  flush never holds the event loop up for long). A ``logging`` record, a formatter call
  and a system call per request cost more than many small calls themselves; batching
  keeps a line per request without that. A process killed with SIGKILL may lose its last
  fraction of a second of request lines, never a warning or an error.

Nothing logs a token or an ``Authorization`` header: the security code never passes
either to a logger, and ``redact`` takes out anything shaped like one that another part
puts in a message: aiohttp quotes a malformed header line in its error, and names the
subprotocols a WebSocket offered (``token.<token>``) when none is ours; a client may put
a token in a path or a method name. Nor can a client's text break a line, reach a
terminal as an escape sequence or reorder what a line shows: what JSON leaves raw of
such characters is escaped (``_escaped``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import time
from typing import Any, TextIO, overload

from aiohttp.http_exceptions import HttpProcessingError

FLUSH_AFTER = 0.2
#: Formatting a batch holds the event loop up for 1 to 2 µs a line. At thousands of
#: requests a second, a batch of 0.2 s held it up for milliseconds: the p99 latency at
#: one connection was 2 ms with request lines and 0.2 ms without. 100 lines are 0.2 ms.
FLUSH_LINES = 100

#: (time, HTTP method, path, status, seconds, [(rpc method, error code)] or None)
HttpLine = tuple[float, str, str, int, float, list[tuple[str | None, int | None]] | None]


#: what follows "Bearer " or "token.", or a run of a token's alphabet at least a token's
#: length (secrets.token_urlsafe(32)): a token glued to other such characters too
_SECRET = re.compile(r"(?i)(bearer\s+|token\.)[^\s\"',\\]+|[\w-]{43,}", re.ASCII)
#: the shortest text that can hold part of a secret: "token." and one character
_SHORTEST = len("token.") + 1


#: What JSON writes as it is (``ensure_ascii=False``) but a log line must not hold raw:
#: DEL and the C1 controls (a terminal may take U+009B for the start of an escape
#: sequence, as it does ESC, which JSON escapes), the line and paragraph separators,
#: which Python's ``str.splitlines`` (U+0085 too, a C1 control) takes for the end of a
#: line, and the bidirectional controls (U+061C, U+200E, U+200F, U+202A to U+202E,
#: U+2066 to U+2069), with which a line shows its text in another order than it holds
#: it ("Trojan Source"). A client chooses such text: a path ``/%C2%9B...`` or
#: ``/%E2%80%A8...`` (any web page can have the GM's browser ask for one), a method name
#: ``"\u2028"``.
_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escaped(text: str) -> str:
    """JSON ``text`` with the characters of ``_UNSAFE`` written as ``\\u`` escapes:
    the same JSON values (JSON holds them only inside strings), safe to print or split
    into lines, and read in the order it is written."""
    # DEL is ASCII: the fast path is only for ASCII text without it
    if text.isascii() and "\x7f" not in text:
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def redact(text: str) -> str:
    """``text`` with every token-like secret replaced by ``[redacted]``; a short text too,
    as what follows "Bearer " or "token." may be a token cut short."""
    if len(text) < _SHORTEST:
        return text
    return _SECRET.sub(lambda m: (m.group(1) or "") + "[redacted]", text)


#: Most characters kept of a text a client chose (a user agent, an unknown method name)
#: where it outlives the request (the status page, the request log's cache): a thousand
#: calls each naming a 1 MiB method must not be held in memory or written out whole.
MAX_KEPT = 200


@overload
def kept(text: str) -> str: ...
@overload
def kept(text: None) -> None: ...
def kept(text: str | None) -> str | None:
    """``text`` as kept beyond its request: at most ``MAX_KEPT`` characters, redacted
    when cut (the length compared first: this is on every call's path)."""
    return text if text is None or len(text) <= MAX_KEPT else shortened(text, MAX_KEPT)


def shortened(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters (``…`` marks a cut). In that
    order: a cut could leave part of a token, and ``redact`` finds whole ones only."""
    text = redact(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


class ServerLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger, for the daemon's connections (``create_app`` hands it to
    aiohttp). A request aiohttp's parser refuses (malformed HTTP, a line over 8190 bytes:
    answered 400 before any handler runs) is the client's doing: one info line saying
    what was wrong, instead of an error with aiohttp's whole traceback, which anyone
    could have fill the log. Any other exception keeps its traceback."""

    def exception(self, msg: object, *args: object, exc_info: Any = True,
                  **kwargs: Any) -> None:
        """As ``Logger.exception``, but one line for a malformed request (see above)."""
        if isinstance(exc_info, HttpProcessingError):
            problem = shortened(" ".join(str(exc_info.message).split()), 200)
            self.info(f"{msg} (refused with {exc_info.code}: %s)", *args, problem,
                      **kwargs)
        else:
            super().exception(msg, *args, exc_info=exc_info, **kwargs)

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        """``msg`` and ``kwargs`` as given (the adapter adds no context)."""
        return msg, kwargs


#: Most characters written of a message of aiohttp's: it may quote what a client sent
#: (the subprotocols a WebSocket offered, a header of up to 8190 bytes: a warning of
#: 10 KB for each handshake, at any log level).
MAX_AIOHTTP_MESSAGE = 500


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "msg", ...fields}``; ``exc`` holds a traceback. A
    message of aiohttp's is cut to ``MAX_AIOHTTP_MESSAGE`` characters."""

    def format(self, record: logging.LogRecord) -> str:
        """One JSON line for ``record``."""
        message = record.getMessage()
        if record.name.startswith("aiohttp.") and len(message) > MAX_AIOHTTP_MESSAGE:
            message = shortened(message, MAX_AIOHTTP_MESSAGE)
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": message,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _escaped(redact(json.dumps(line, default=str, ensure_ascii=False)))


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
        self._lines: list[dict[str, Any] | HttpLine] = []
        #: the flush to come (a timer, or a callback when the batch is full)
        self._flush: asyncio.Handle | None = None
        #: JSON text of the strings every line repeats ("POST", "/rpc", method lists)
        self._texts: dict[Any, str] = {}
        #: the start of a request line by (HTTP method, path): not in ``_texts``, where a
        #: batch calling methods named "POST" and "/rpc" has that same key
        self._heads: dict[tuple[str, str], str] = {}

    def line(self, fields: dict[str, Any]) -> None:
        """Queue one request line (``fields`` become members of the JSON object)."""
        if self.enabled:
            fields["ts"] = time.time()
            self._queue(fields)

    def http(self, method: str, path: str, status: int, seconds: float,
             calls: list[tuple[str | None, int | None]] | None) -> None:
        """Queue the line of one HTTP request: kept as a tuple, formatted at flush. The
        path and the HTTP method are the client's text, cut as a method name is
        (``kept``): any web page can have the GM's browser ask for a path of 8 KB, again
        and again; and aiohttp's own parser (without its C extension) takes any token as
        a method, up to its 8190-byte request line."""
        if self.enabled:
            self._queue((time.time(), kept(method), kept(path), status, seconds, calls))

    def _queue(self, line: dict[str, Any] | HttpLine) -> None:
        self._lines.append(line)
        if self._flush is None:
            try:
                self._flush = asyncio.get_running_loop().call_later(FLUSH_AFTER, self.flush)
            except RuntimeError:
                self.flush()
        elif len(self._lines) == FLUSH_LINES:
            # Soon, not now: the request that filled the batch is still being answered.
            self._flush.cancel()
            self._flush = asyncio.get_running_loop().call_soon(self.flush)

    def _text(self, value: Any) -> str:
        text = self._texts.get(value)
        if text is None:
            # paths and method names come from clients
            text = redact(json.dumps(list(value) if isinstance(value, tuple) else value,
                                     ensure_ascii=False))
            if len(self._texts) < 512:
                self._texts[value] = text
        return text

    def _format(self, line: dict[str, Any] | HttpLine) -> str:
        if isinstance(line, dict):
            methods = line.get("methods")
            if methods:
                # method names come from clients
                line["methods"] = [redact(m) if isinstance(m, str) else m for m in methods]
            return json.dumps({"ts": round(line.pop("ts"), 3), "level": "info",
                               "logger": "mindscape.access", "msg": "request", **line},
                              default=str, ensure_ascii=False)
        ts, method, path, status, seconds, calls = line
        head = self._heads.get((method, path))
        if head is None:
            head = f'"http":{self._text(method)},"path":{self._text(path)}'
            if len(self._heads) < 512:
                self._heads[(method, path)] = head
        text = (f'{{"ts":{ts:.3f},"level":"info","logger":"mindscape.access",'
                f'"msg":"request",{head},"status":{status},"duration_ms":{seconds * 1000:.3f}')
        if calls is not None:
            if len(calls) == 1:
                name, code = calls[0]
                methods = self._text((name,))
                errors = "[]" if code is None else f"[{code}]"
            else:
                methods = self._text(tuple(m for m, _ in calls))
                errors = json.dumps([c for _, c in calls if c is not None])
            text += (f',"methods":{methods},"errors":{errors},'
                     f'"outcome":"{"ok" if errors == "[]" else "error"}"')
        return text + "}"

    def flush(self) -> None:
        """Write every queued line now."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        lines, self._lines = self._lines, []
        if not lines or self.stream is None:
            return
        text = _escaped("".join(self._format(line) + "\n" for line in lines))
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            # stderr gone (a closed terminal): the daemon goes on without request lines.
            self.enabled = False
