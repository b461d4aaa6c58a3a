"""The access token: ``DIR/token``, created on first start with mode 0600.

Lean on purpose (no aiohttp): ``mindscape token`` and ``mindscape call`` import it.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from pathlib import Path

TOKEN_BYTES = 32


def _write_token(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_token(path: Path) -> str | None:
    """The token in ``path``, or ``None`` when there is no usable one."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return token or None


def ensure_token(path: Path) -> str:
    """The token in ``path``; created (``secrets.token_urlsafe(32)``, mode 0600) when
    missing. A token file readable by others is narrowed to 0600."""
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
    """The current token, re-read when the file changes (checked at most once a second),
    so ``mindscape token --rotate`` needs no restart."""

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

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked >= 1.0:
            self._checked = now
            mtime = self._stat()
            if mtime != self._mtime:
                self._mtime = mtime
                token = read_token(self.path) or self._token
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

    def accepts_bearer(self, header: str | None) -> bool:
        """True when ``header`` is ``Bearer <the token>`` (the scheme in any case)."""
        if not header or header[:7].lower() != "bearer ":
            return False
        return hmac.compare_digest(header[7:].strip().encode("utf-8", "replace"),
                                   self.current_bytes())
