"""The access token: ``DIR/token``, created on first start with mode 0600.

Lean on purpose (no aiohttp): ``mindscape token`` and ``mindscape call`` import it.

A token file holds one line of printable ASCII (``secrets.token_urlsafe`` writes
URL-safe characters): anything else (a second line, a byte that is not ASCII, a
control character) could not be sent in an ``Authorization`` header or a WebSocket
subprotocol, so it is refused with ``TokenFileError`` rather than shown or adopted.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import time
from pathlib import Path

TOKEN_BYTES = 32
#: one line of printable ASCII, without leading or trailing blanks
_TOKEN = re.compile(rb"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")

log = logging.getLogger("mindscape.tokens")


class TokenFileError(Exception):
    """The token file exists but cannot be read or holds no usable token. ``problem``
    completes a sentence that starts with the file's path; ``rewritable`` when writing a
    new token (``mindscape token --rotate``) mends it."""

    def __init__(self, path: Path, problem: str, rewritable: bool = False) -> None:
        super().__init__(f"the token file {path} {problem}")
        self.path = path
        self.problem = problem
        self.rewritable = rewritable


def _write_token(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, (token + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        # (a folder where the token file should be, a full disk: leave no stray copy)
        tmp.unlink(missing_ok=True)
        raise


def read_token(path: Path) -> str | None:
    """The token in ``path``, or ``None`` when the file is missing or empty;
    ``TokenFileError`` when it cannot be read or is not one line of printable ASCII."""
    try:
        data = path.read_bytes().strip()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise TokenFileError(path, "is a folder, not a file") from None
    except OSError as exc:
        raise TokenFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not data:
        return None
    if not _TOKEN.fullmatch(data):
        raise TokenFileError(path, "does not hold one line of printable ASCII",
                             rewritable=True)
    return data.decode("ascii")


def ensure_token(path: Path) -> str:
    """The token in ``path``; created (``secrets.token_urlsafe(32)``, mode 0600) when
    missing. A token file readable by others is narrowed to 0600. ``TokenFileError``
    (from ``read_token``) when the file holds no usable token."""
    token = read_token(path)
    if token is None:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        _write_token(path, token)
    elif os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return token


def rotate_token(path: Path) -> str:
    """Replace the token with a new one; a running daemon notices within a second."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    _write_token(path, token)
    return token


def same_token(given: str, token: str) -> bool:
    """Constant-time comparison (no early exit that would time the token out)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


class TokenKeeper:
    """The current token, re-read when the file changes (checked at most once a second,
    and again whenever a token given does not match), so ``mindscape token --rotate``
    needs no restart and the new token works at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._token = ensure_token(path)
        self._bytes = self._token.encode()
        self._mtime = self._stat()
        self._checked = time.monotonic()
        self._generation = 0

    def _stat(self) -> float:
        try:
            return self.path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def _refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._checked >= 1.0:
            self._checked = now
            mtime = self._stat()
            if mtime != self._mtime:
                self._mtime = mtime
                try:
                    token = read_token(self.path) or self._token
                except TokenFileError as exc:
                    # Not adopted: the token in force stays, until a good one is written.
                    log.warning("%s; the token in force is kept (run `mindscape token "
                                "--rotate` to write a new one)", exc)
                    return
                if not same_token(token, self._token):
                    self._token = token
                    self._bytes = token.encode()
                    self._generation += 1

    def current(self) -> str:
        """The token now in force."""
        self._refresh()
        return self._token

    def generation(self) -> int:
        """How many times the token changed since the daemon started: a WebSocket
        authenticated under an older generation is closed."""
        self._refresh()
        return self._generation

    def current_bytes(self) -> bytes:
        """``current()`` as bytes, for ``hmac.compare_digest``."""
        self._refresh()
        return self._bytes

    def accepts(self, given: object) -> bool:
        """True when ``given`` is the token in force. A token that does not match has
        the file looked at again first: one just rotated works at once, not a second
        later (a stat, and a read only when the file changed)."""
        if not isinstance(given, str):
            return False
        raw = given.encode("utf-8", "replace")
        if hmac.compare_digest(raw, self.current_bytes()):
            return True
        before = self._generation
        self._refresh(force=True)
        return self._generation != before and hmac.compare_digest(raw, self._bytes)

    def accepts_bearer(self, header: str | None) -> bool:
        """True when ``header`` is ``Bearer <the token>`` (the scheme in any case)."""
        if not header or header[:7].lower() != "bearer ":
            return False
        return self.accepts(header[7:].strip())
