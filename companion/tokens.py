"""The access token: ``DIR/token``, created on first start with mode 0600.

Lean on purpose (no aiohttp): ``mindscape token`` and ``mindscape call`` import it.

A token is what ``mindscape token --rotate`` writes: one line of at least 43 letters,
digits, ``-`` and ``_`` (``secrets.token_urlsafe(32)``). A token file holding anything
else (a short word, a second line, a byte that is not ASCII) is refused with
``TokenFileError`` rather than shown or adopted: a short token could be guessed, and the
logs' redaction (``logs.redact``) recognises a token by that alphabet and length.

The file itself must be a regular file of the user's own, read without following a
symbolic link (another local user could point one at a file of their choosing, or at
``/dev/zero``) and at most 4 KiB of it; a FIFO is refused instead of waited on. At
start (``ensure_token``) a file that other users could write holds a token one of them
may have chosen: a new one is written in its place. One they could only read is made
private and kept, with a warning that the token may be known (``TokenFile.warning``).
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

TOKEN_BYTES = 32
#: what ``secrets.token_urlsafe(TOKEN_BYTES)`` writes: 43 characters of this alphabet
_TOKEN = re.compile(rb"[A-Za-z0-9_-]{43,}")
#: most bytes read from a token file (a token is 43, a line feed 1)
MAX_TOKEN_FILE = 4096
#: not following a symbolic link in the last step of the path, and not waiting for a
#: writer to a FIFO; Windows has neither flag (``_open`` checks for a link first there)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)

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


@dataclass(frozen=True)
class TokenFile:
    """The token ``ensure_token`` found or wrote, and what it found wrong with the file's
    permissions: ``problem`` completes a sentence that starts with the file's path
    (``None`` when nothing was wrong); ``rotated`` when a new token replaced the one the
    file held."""

    token: str
    path: Path
    problem: str | None = None
    rotated: bool = False

    def warning(self, token_command: str) -> str | None:
        """What to tell the user about ``problem`` and what to do (``token_command``:
        the command that shows the token, as the banner names it), or ``None``."""
        if self.problem is None:
            return None
        if self.rotated:
            return (f"the token file {self.path} {self.problem}: another user may have "
                    f"chosen its token, so a new one was written (mode 0600); paste it "
                    f"into every paired VTT (`{token_command}` shows it)")
        return (f"the token file {self.path} {self.problem}; it is private now (0600), "
                f"but the token may have been read: run `{token_command} --rotate` and "
                "paste the new token into every paired VTT")


def write_private_file(path: Path, text: str) -> None:
    """Replace ``path`` whole with the line ``text``, mode 0600 (its folder made 0700 when
    missing); ``OSError`` when it cannot be written, with no stray copy left."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, (text + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        # (a folder where the file should be, a full disk: leave no stray copy)
        tmp.unlink(missing_ok=True)
        raise


def _link_error(path: Path) -> TokenFileError:
    return TokenFileError(path, "is a symbolic link; the token must be in a regular file "
                                "of your own, not behind a link", rewritable=True)


def _open(path: Path) -> int | None:
    """A descriptor for reading the token file, or ``None`` when there is none;
    ``TokenFileError`` for a link, a folder, or a file that cannot be opened."""
    try:
        if path.is_symlink():
            raise _link_error(path)
        return os.open(path, os.O_RDONLY | _NO_FOLLOW | _NO_WAIT)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise TokenFileError(path, "is a folder, not a file") from None
    except OSError as exc:
        if _is_link(path):
            # (made a link between the check and the open: O_NOFOLLOW refused it)
            raise _link_error(path) from None
        raise TokenFileError(path, f"cannot be read ({exc.strerror or exc})") from None


def _is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link; ``False`` when that cannot even be looked at
    (a folder this user may not enter: the open's own error then says so)."""
    try:
        return path.is_symlink()
    except OSError:
        return False


def _regular_file_of_ours(path: Path, fd: int) -> os.stat_result:
    """The open file's status, or ``TokenFileError`` when it is not a regular file (a
    FIFO, a device) or belongs to another user."""
    status = os.fstat(fd)
    if stat.S_ISDIR(status.st_mode):
        raise TokenFileError(path, "is a folder, not a file")
    if not stat.S_ISREG(status.st_mode):
        raise TokenFileError(path, "is not a regular file (a FIFO or a device, say)",
                             rewritable=True)
    if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        raise TokenFileError(path, f"belongs to another user (uid {status.st_uid}); the "
                                   "token must be in a file of your own", rewritable=True)
    return status


def _token_in(path: Path, fd: int) -> str | None:
    """The token the open file holds, ``None`` when it is empty (or blank), or
    ``TokenFileError`` when it holds something else."""
    data = b""
    while len(data) <= MAX_TOKEN_FILE:
        chunk = os.read(fd, MAX_TOKEN_FILE + 1 - len(data))
        if not chunk:
            break
        data += chunk
    if len(data) > MAX_TOKEN_FILE:
        raise TokenFileError(path, f"is larger than {MAX_TOKEN_FILE} bytes: it holds no "
                                   "token", rewritable=True)
    data = data.strip()
    if not data:
        return None
    if not _TOKEN.fullmatch(data):
        raise TokenFileError(path, "does not hold a token (one line of 43 or more "
                                   "letters, digits, - and _, as `mindscape token "
                                   "--rotate` writes)", rewritable=True)
    return data.decode("ascii")


def read_own_file(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``path``, ``None`` when it is missing; ``TokenFileError``
    when it is not a regular file of the user's own (a link is not followed, a FIFO not
    waited on), as for the token file."""
    fd = _open(path)
    if fd is None:
        return None
    try:
        _regular_file_of_ours(path, fd)
        return os.read(fd, limit)
    finally:
        os.close(fd)


def read_token(path: Path) -> str | None:
    """The token in ``path``, or ``None`` when the file is missing or empty;
    ``TokenFileError`` when it is not a regular file of the user's own, or holds no
    token (see the module)."""
    fd = _open(path)
    if fd is None:
        return None
    try:
        _regular_file_of_ours(path, fd)
        return _token_in(path, fd)
    finally:
        os.close(fd)


def ensure_token(path: Path) -> TokenFile:
    """The token in ``path``; created (``secrets.token_urlsafe(32)``, mode 0600) when
    missing or empty. On POSIX, a token file others could write is replaced by a new
    token (its token may be another user's choice); one they could read is narrowed to
    0600 and kept; either is named in ``TokenFile.problem``. ``TokenFileError`` (as
    ``read_token``) when the file cannot be used."""
    fd = _open(path)
    if fd is None:
        return TokenFile(rotate_token(path), path)
    try:
        mode = stat.S_IMODE(_regular_file_of_ours(path, fd).st_mode)
        if os.name == "posix" and mode & 0o022:
            return TokenFile(rotate_token(path), path,
                             f"was writable by other users (mode {mode:04o})", rotated=True)
        token = _token_in(path, fd)
        if token is None:
            return TokenFile(rotate_token(path), path)
        if os.name == "posix" and mode & 0o077:
            # (by the descriptor: the file read, never what a link might point at)
            os.fchmod(fd, 0o600)
            if mode & 0o044:
                return TokenFile(token, path,
                                 f"was readable by other users (mode {mode:04o})")
        return TokenFile(token, path)
    finally:
        os.close(fd)


def rotate_token(path: Path) -> str:
    """Replace the token with a new one; a running daemon notices within a second."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    write_private_file(path, token)
    return token


def same_token(given: str, token: str) -> bool:
    """Constant-time comparison (no early exit that would time the token out)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


#: what tells one version of the token file from another: a rotation writes a new file
#: (another inode) and changes the times and usually nothing else, and two rotations
#: within one tick of the file system's clock share their modification time
FileVersion = tuple[int, int, int, int]


class TokenKeeper:
    """The current token, re-read when the file changes (checked at most once a second,
    and again whenever a token given does not match), so ``mindscape token --rotate``
    needs no restart and the new token works at once. ``opened`` is what
    ``ensure_token`` found at start."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened = ensure_token(path)
        self._token = self.opened.token
        self._bytes = self._token.encode()
        self._version = self._stat()
        self._checked = time.monotonic()
        self._generation = 0

    def _stat(self) -> FileVersion | None:
        try:
            # lstat: a link put in the file's place is a change (and then refused)
            status = self.path.lstat()
        except FileNotFoundError:
            return None
        return (status.st_ino, status.st_mtime_ns, status.st_ctime_ns, status.st_size)

    def _refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._checked >= 1.0:
            self._checked = now
            version = self._stat()
            if version != self._version:
                self._version = version
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

    def generation_accepting(self, given: object) -> int | None:
        """The generation (``generation``) whose token ``given`` is, when it is the token
        in force, else ``None``. Read with the check itself: a WebSocket that keeps it
        is closed after any rotation that follows the check, also one made while the
        socket is still being opened."""
        return self._generation if self.accepts(given) else None

    def accepts_bearer(self, header: str | None) -> bool:
        """True when ``header`` is ``Bearer <the token>`` (the scheme in any case)."""
        if not header or header[:7].lower() != "bearer ":
            return False
        return self.accepts(header[7:].strip())
