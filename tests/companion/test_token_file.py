"""The token file is trusted only as far as it deserves (companion/tokens.py;
SECURITY.md, threat 3 "Other users and programs on the same computer").

The auditor found: a token file others could write kept (another user may have chosen
its token), one they could read narrowed to 0600 without a word; a symbolic link
followed (the daemon adopted the target's contents and made the target 0600); a FIFO
waited on for ever at start; a link to /dev/zero read until memory ran out; any word,
even ``a``, taken as the token; and two rotations within one tick of the file system's
clock missed.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from companion import tokens
from companion.app import create_app
from companion.keys import TOKENS
from companion.settings import Settings
from companion.tokens import (
    MAX_TOKEN_FILE,
    TokenFileError,
    TokenKeeper,
    ensure_token,
    read_own_file,
    read_token,
    rotate_token,
    write_private_file,
)

from .conftest import ClientFactory

#: a token as `mindscape token --rotate` writes it
TOKEN = "Qx3vN0c8mRk2T6yWb1LdZs9EoPj5HhUaFi4Kg7Ce-_w"
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and FIFOs")


def token_file(folder: Path, content: str = TOKEN + "\n", mode: int = 0o600) -> Path:
    path = folder / "token"
    path.write_text(content)
    path.chmod(mode)
    return path


def test_a_new_token_is_what_rotate_writes(tmp_path: Path) -> None:
    opened = ensure_token(tmp_path / "home" / "token")
    assert read_token(tmp_path / "home" / "token") == opened.token
    assert len(opened.token) == len(TOKEN) == 43 and opened.problem is None


@pytest.mark.parametrize("content", ["a", "s3cret", TOKEN[:42], TOKEN + " x", TOKEN + ".",
                                     f"{TOKEN}\n{TOKEN}"])
def test_a_token_file_holding_something_else_than_a_token_is_refused(
        tmp_path: Path, content: str) -> None:
    """At least 43 letters, digits, - and _: a short word could be guessed, and the
    logs' redaction knows a token by that alphabet and length."""
    path = token_file(tmp_path, content)
    with pytest.raises(TokenFileError, match="does not hold a token") as refused:
        ensure_token(path)
    assert refused.value.rewritable and str(path) in str(refused.value)
    assert path.read_text() == content


def test_a_longer_token_of_the_same_alphabet_is_accepted(tmp_path: Path) -> None:
    assert read_token(token_file(tmp_path, TOKEN + "abc\n")) == TOKEN + "abc"


@POSIX_ONLY
@pytest.mark.parametrize("target", ["a token file elsewhere", "/dev/zero"])
def test_a_symbolic_link_in_the_token_files_place_is_not_followed(
        tmp_path: Path, target: str) -> None:
    """Neither adopted nor made private: the target is someone else's business (and
    /dev/zero, read whole, ran the daemon out of memory)."""
    if target == "/dev/zero":
        elsewhere = Path(target)
    else:
        (tmp_path / "elsewhere").mkdir()
        elsewhere = token_file(tmp_path / "elsewhere", mode=0o644)
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").symlink_to(elsewhere)
    mode = elsewhere.stat().st_mode
    for read in (ensure_token, read_token):
        with pytest.raises(TokenFileError, match="symbolic link") as refused:
            read(home / "token")
        assert refused.value.rewritable
    assert elsewhere.stat().st_mode == mode
    rotate_token(home / "token")  # the remedy replaces the link itself
    assert not (home / "token").is_symlink() and elsewhere.stat().st_mode == mode


def _write_into(fifo: Path, text: str) -> None:
    try:
        with fifo.open("w") as pipe:  # waits for a reader
            pipe.write(text)
    except BrokenPipeError:
        pass  # the reader came and went


@POSIX_ONLY
def test_a_fifo_in_the_token_files_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Reading a FIFO waits for a writer: the start hung. Here a writer does come (so
    the old reading returned, and adopted what it wrote); the FIFO is refused first."""
    fifo = tmp_path / "token"
    os.mkfifo(fifo, 0o600)
    writer = threading.Thread(target=_write_into, args=(fifo, TOKEN + "\n"), daemon=True)
    writer.start()
    try:
        with pytest.raises(TokenFileError, match="not a regular file"):
            ensure_token(fifo)
    finally:
        # a reader lets the writer go if ours came before it
        release = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join()
        os.close(release)


def test_a_token_file_over_4_kib_is_refused_unread(tmp_path: Path) -> None:
    path = token_file(tmp_path, "A" * (MAX_TOKEN_FILE + 1))
    with pytest.raises(TokenFileError, match=f"larger than {MAX_TOKEN_FILE} bytes"):
        read_token(path)


@POSIX_ONLY
def test_a_token_file_of_another_user_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = token_file(tmp_path)
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(TokenFileError, match=f"belongs to another user \\(uid {owner}\\)"):
        ensure_token(path)


def test_a_home_folder_this_user_may_not_enter_is_a_token_file_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home made by `sudo mindscape serve` (root's, 0700): every look inside it is
    refused, the check for a link as well as the open, and the second refusal was a
    traceback out of `mindscape call` with status 1 (the status of a JSON-RPC error)
    instead of one line with status 2. (As root here, the refusals are made up.)"""
    path = token_file(tmp_path)

    def refused(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "is_symlink", refused)
    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(TokenFileError, match=r"cannot be read \(Permission denied\)"):
        read_token(path)


@POSIX_ONLY
@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602], ids=oct)
def test_a_token_file_others_could_write_gets_a_new_token(tmp_path: Path, mode: int) -> None:
    """Its token may be one another user chose: it is not kept."""
    path = token_file(tmp_path, mode=mode)
    opened = ensure_token(path)
    assert opened.token != TOKEN and opened.rotated
    assert read_token(path) == opened.token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert opened.warning("mindscape token") == (
        f"the token file {path} was writable by other users (mode {mode:04o}): another "
        "user may have chosen its token, so a new one was written (mode 0600); paste it "
        "into every paired VTT (`mindscape token` shows it)")


@POSIX_ONLY
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604], ids=oct)
def test_a_token_file_others_could_read_is_made_private_with_a_warning(
        tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, mode=mode)
    opened = ensure_token(path)
    assert opened.token == TOKEN and not opened.rotated
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert opened.warning("mindscape token --home H") == (
        f"the token file {path} was readable by other users (mode {mode:04o}); it is "
        "private now (0600), but the token may have been read: run `mindscape token "
        "--home H --rotate` and paste the new token into every paired VTT")
    assert ensure_token(path).warning("mindscape token") is None


@POSIX_ONLY
async def test_the_daemon_logs_what_it_found_wrong_with_the_token_file(
        aiohttp_client: ClientFactory, settings: Settings,
        caplog: pytest.LogCaptureFixture) -> None:
    settings.home.mkdir(mode=0o700)
    token_file(settings.home, mode=0o644)
    with caplog.at_level(logging.WARNING, logger="mindscape.app"):
        client = await aiohttp_client(create_app(settings))
    keeper: TokenKeeper = client.server.app[TOKENS]
    assert keeper.current() == TOKEN
    [record] = [r for r in caplog.records if r.name == "mindscape.app"]
    assert record.getMessage() == keeper.opened.warning("mindscape token")
    assert "was readable by other users (mode 0644)" in record.getMessage()


def test_the_checks_need_no_posix_only_flag(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows has no O_NOFOLLOW, O_NONBLOCK or geteuid: the token is read all the same
    (and a link is still refused, by a look before the open)."""
    monkeypatch.setattr("companion.tokens._NO_FOLLOW", 0)
    monkeypatch.setattr("companion.tokens._NO_WAIT", 0)
    monkeypatch.delattr(os, "geteuid", raising=False)
    assert ensure_token(token_file(tmp_path)).token == TOKEN
    if hasattr(os, "symlink") and os.name == "posix":
        (tmp_path / "link").symlink_to(tmp_path / "token")
        with pytest.raises(TokenFileError, match="symbolic link"):
            read_token(tmp_path / "link")


def _same_times_as(path: Path, before: os.stat_result) -> None:
    """``path`` given ``before``'s modification time, as a file system whose clock
    ticks coarsely gives two writes within one tick."""
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_two_rotations_within_one_clock_tick_are_both_seen(tmp_path: Path) -> None:
    """/tmp/sec/rot2.py: the second token was refused and the first kept working while
    the file's modification time stayed that of the first rotation."""
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    first = rotate_token(path)
    assert keeper.accepts(first)
    written = path.stat()
    second = rotate_token(path)
    _same_times_as(path, written)
    assert path.stat().st_mtime_ns == written.st_mtime_ns
    assert keeper.accepts(second) and not keeper.accepts(first)
    assert keeper.generation() == 2


def test_a_link_put_in_the_token_files_place_while_running_is_not_adopted(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    keeper = TokenKeeper(tmp_path / "home" / "token")
    old = keeper.current()
    elsewhere = token_file(tmp_path)
    (tmp_path / "home" / "token").unlink()
    (tmp_path / "home" / "token").symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger="mindscape.tokens"):
        assert not keeper.accepts(TOKEN) and keeper.accepts(old)
    assert any("symbolic link" in r.getMessage() for r in caplog.records)


@POSIX_ONLY
def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path: Path) -> None:
    """The module: 'a FIFO is refused instead of waited on'. With nobody ever writing
    into it, opening it for reading without O_NONBLOCK waits for ever (the start hung)."""
    fifo = tmp_path / "token"
    os.mkfifo(fifo, 0o600)
    refusals: list[BaseException] = []

    def read() -> None:
        try:
            ensure_token(fifo)
        except TokenFileError as exc:
            refusals.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    waited = reader.is_alive()
    if waited:  # let it go: a writer opens the FIFO and closes it unwritten
        os.close(os.open(fifo, os.O_WRONLY))
        reader.join()
    assert not waited
    assert [str(exc) for exc in refusals] == [
        f"the token file {fifo} is not a regular file (a FIFO or a device, say)"]


@POSIX_ONLY
def test_the_folder_a_new_token_is_written_in_is_made_private(tmp_path: Path) -> None:
    """write_private_file: the token's folder, when missing, is made 0700 (the home
    holds the token and pending secret choices: docs/SECURITY.md)."""
    old = os.umask(0o022)  # (a folder made without a mode would be 0755)
    try:
        opened = ensure_token(tmp_path / "home" / "token")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700
    assert stat.S_IMODE(opened.path.stat().st_mode) == 0o600


@POSIX_ONLY
@pytest.mark.parametrize("mode", [0o610, 0o601, 0o611], ids=oct)
def test_a_token_file_others_could_only_execute_is_made_private_without_a_warning(
        tmp_path: Path, mode: int) -> None:
    """ensure_token: any right of other users is taken away (0600), but only one that
    let them read or write the token is worth a warning."""
    path = token_file(tmp_path, mode=mode)
    opened = ensure_token(path)
    assert (opened.token, opened.problem, opened.rotated) == (TOKEN, None, False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@POSIX_ONLY
def test_only_a_refusal_that_a_new_token_mends_says_to_rotate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TokenFileError.rewritable: `mindscape token --rotate` replaces a FIFO, a link, a
    file of another user or one over 4 KiB (os.replace puts a new file in its place),
    but cannot replace a folder: that one must be moved aside."""
    (tmp_path / "folder" / "token").mkdir(parents=True)
    os.mkfifo(tmp_path / "fifo", 0o600)
    big = token_file(tmp_path, "A" * (MAX_TOKEN_FILE + 1))
    cases = [(tmp_path / "folder" / "token", "is a folder, not a file", False),
             (tmp_path / "fifo", "is not a regular file", True),
             (big, "is larger than 4096 bytes", True)]
    for path, problem, rewritable in cases:
        with pytest.raises(TokenFileError) as refused:
            read_token(path)
        assert problem in refused.value.problem
        assert refused.value.rewritable is rewritable, path
    owner = big.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(TokenFileError, match="belongs to another user") as refused:
        read_token(token_file(tmp_path))
    assert refused.value.rewritable


@POSIX_ONLY
def test_a_link_made_between_the_check_and_the_open_is_refused_all_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The module: the file is 'read without following a symbolic link'. A link put in
    the token file's place right after the look for one (simulated: that first look says
    no link) is still not followed (O_NOFOLLOW), and the refusal says what it is."""
    elsewhere = token_file(tmp_path)
    (tmp_path / "home").mkdir()
    link = tmp_path / "home" / "token"
    link.symlink_to(elsewhere)
    real = Path.is_symlink
    looks: list[Path] = []

    def first_look_misses(path: Path) -> bool:
        looks.append(path)
        return False if len(looks) == 1 else real(path)

    monkeypatch.setattr(Path, "is_symlink", first_look_misses)
    with pytest.raises(TokenFileError, match="is a symbolic link") as refused:
        read_token(link)
    assert refused.value.rewritable and looks[0] == link


def test_a_token_file_of_exactly_4_kib_is_read(tmp_path: Path) -> None:
    """MAX_TOKEN_FILE is the most a token file may hold, not the least it may not."""
    token = "A" * (MAX_TOKEN_FILE - 1)
    path = token_file(tmp_path, token + "\n")
    assert path.stat().st_size == MAX_TOKEN_FILE
    assert read_token(path) == token


@pytest.mark.parametrize("content", ["", "\n", "  \n\n"])
def test_an_empty_token_file_gets_a_new_token(tmp_path: Path, content: str) -> None:
    """ensure_token: the token is 'created ... when missing or empty'; an empty or blank
    file is no problem to warn about."""
    path = token_file(tmp_path, content)
    opened = ensure_token(path)
    assert len(opened.token) == 43 and opened.problem is None and not opened.rotated
    assert path.read_text() == opened.token + "\n"


def test_a_token_file_emptied_while_running_keeps_the_token_in_force(tmp_path: Path) -> None:
    """TokenKeeper: an emptied file holds no token to adopt (read_token says None); the
    token in force stays, and an empty one opens nothing."""
    keeper = TokenKeeper(tmp_path / "token")
    old = keeper.current()
    (tmp_path / "token").write_text("")
    assert not keeper.accepts("") and not keeper.accepts_bearer("Bearer ")
    assert keeper.accepts(old) and keeper.generation() == 0


def test_a_bad_token_file_is_warned_about_once_not_at_every_wrong_token(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """TokenKeeper.accepts: a token that does not match has the file looked at again,
    'a stat, and a read only when the file changed': a file left bad is read (and
    warned about) once, not again for every wrong token a client sends."""
    keeper = TokenKeeper(tmp_path / "token")
    old = keeper.current()
    (tmp_path / "token").write_text("short\n")
    with caplog.at_level(logging.WARNING, logger="mindscape.tokens"):
        for _ in range(3):
            assert not keeper.accepts("wrong")
        keeper._checked -= 2.0  # the once-a-second look too
        assert keeper.current() == old
    assert [r.getMessage().count("does not hold a token") for r in caplog.records] == [1]


def test_a_token_file_rewritten_in_place_within_one_clock_tick_is_seen(
        tmp_path: Path) -> None:
    """FileVersion: a token written into the same file (same inode: an editor saving in
    place) with the same size and modification time is told apart by its change time."""
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    old = keeper.current()
    written = path.stat()
    new = TOKEN
    with path.open("r+") as file:  # in place: the inode stays
        file.write(new + "\n")
    _same_times_as(path, written)
    assert path.stat().st_ino == written.st_ino and path.stat().st_size == written.st_size
    assert keeper.accepts(new) and not keeper.accepts(old)


@POSIX_ONLY
def test_read_own_file_reads_at_most_its_limit_and_only_a_regular_file_of_ours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_own_file (`mindscape call` reads daemon.address with it): at most ``limit``
    bytes, None for a missing file, and the token file's refusals for a link or a FIFO,
    or a file of another user."""
    path = tmp_path / "daemon.address"
    path.write_text("http://127.0.0.1:39393\n")
    assert read_own_file(path, 7) == b"http://"
    assert read_own_file(tmp_path / "missing", 7) is None
    os.mkfifo(tmp_path / "fifo", 0o600)
    with pytest.raises(TokenFileError, match="is not a regular file"):
        read_own_file(tmp_path / "fifo", 7)
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(TokenFileError, match="is a symbolic link"):
        read_own_file(tmp_path / "link", 7)
    owner = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(TokenFileError, match="belongs to another user"):
        read_own_file(path, 7)


def test_a_token_file_read_in_pieces_is_refused_one_byte_over_4_kib(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """_token_in reads on until one byte past MAX_TOKEN_FILE: a read may return less than
    it was asked for, and a file one byte over must not pass for 4 KiB of token."""
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: real(fd, min(size, 1024)))
    with pytest.raises(TokenFileError, match=f"larger than {MAX_TOKEN_FILE} bytes"):
        read_token(token_file(tmp_path, "A" * (MAX_TOKEN_FILE + 1)))
    token = "A" * (MAX_TOKEN_FILE - 1)
    assert read_token(token_file(tmp_path, token + "\n")) == token


def test_a_folder_the_system_will_not_even_open_is_refused_as_a_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows refuses to open a folder (IsADirectoryError) where POSIX opens it and its
    status tells: either way the refusal says it is a folder, which `--rotate` cannot
    mend (it must be moved aside), not that the file 'cannot be read'."""
    path = token_file(tmp_path)

    def refused(*_: object, **__: object) -> None:
        raise IsADirectoryError(21, "Is a directory")

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(TokenFileError) as refusal:
        read_token(path)
    assert (refusal.value.problem, refusal.value.rewritable) == (
        "is a folder, not a file", False)


@POSIX_ONLY
def test_a_link_put_in_place_after_the_open_does_not_have_its_target_made_private(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure_token narrows the file it read, by its descriptor: a link put in the
    token file's place between the open and the narrowing does not have its target
    (a file of someone else's choosing) made 0600."""
    path = token_file(tmp_path, mode=0o644)
    (tmp_path / "elsewhere").mkdir()
    elsewhere = token_file(tmp_path / "elsewhere", mode=0o644)
    real = tokens._token_in

    def swapped_once_read(file: Path, fd: int) -> str | None:
        token = real(file, fd)
        path.unlink()
        path.symlink_to(elsewhere)
        return token

    monkeypatch.setattr(tokens, "_token_in", swapped_once_read)
    assert ensure_token(path).problem == "was readable by other users (mode 0644)"
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644


def test_a_token_file_deleted_while_running_keeps_the_token_in_force(
        tmp_path: Path) -> None:
    """TokenKeeper: a missing file holds no token to adopt, as an emptied one; a wrong
    token still has it looked at, and is refused, not a fault."""
    keeper = TokenKeeper(tmp_path / "token")
    old = keeper.current()
    (tmp_path / "token").unlink()
    assert not keeper.accepts("wrong")
    assert keeper.accepts(old) and keeper.generation() == 0


def test_the_token_file_is_looked_at_at_most_once_a_second(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TokenKeeper: 'checked at most once a second' (not a system call more on every
    request); a token given that does not match is what has it looked at sooner."""
    keeper = TokenKeeper(tmp_path / "token")
    looks: list[Path] = []
    real = Path.lstat

    def counted(path: Path) -> os.stat_result:
        looks.append(path)
        return real(path)

    monkeypatch.setattr(Path, "lstat", counted)
    keeper._checked -= 2.0  # a second has gone by
    for _ in range(3):
        assert keeper.accepts(keeper.current())
    assert len(looks) == 1
    assert not keeper.accepts("wrong") and len(looks) == 2


@dataclass(frozen=True)
class _TimelessStatus:
    """What ``lstat`` says where every write falls within one tick of the clock."""

    st_mode: int
    st_ino: int
    st_size: int
    st_mtime_ns: int = 0
    st_ctime_ns: int = 0


def test_a_change_within_one_tick_of_both_times_is_still_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FileVersion: where the change time ticks as coarsely as the modification time,
    a rotation is told apart by its new file (inode), and a token rewritten in place
    (the same inode) by its length."""
    real = Path.lstat

    def timeless(path: Path) -> _TimelessStatus:
        status = real(path)
        return _TimelessStatus(status.st_mode, status.st_ino, status.st_size)

    monkeypatch.setattr(Path, "lstat", timeless)
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    new = rotate_token(path)
    assert keeper.accepts(new)
    longer = TOKEN + "abc"
    with path.open("r+") as file:  # in place: the inode stays
        file.write(longer + "\n")
    assert keeper.accepts(longer) and not keeper.accepts(new)


def test_blanks_around_the_token_in_its_file_are_not_part_of_it(tmp_path: Path) -> None:
    """_token_in: a token file edited by hand (spaces before the token, a Windows line
    end after it) still holds the token, not a refusal."""
    assert read_token(token_file(tmp_path, f"  \t{TOKEN} \r\n")) == TOKEN


@POSIX_ONLY
@pytest.mark.parametrize("content", ["s3cret", f"{TOKEN}\n{TOKEN}"])
def test_a_token_file_others_could_write_gets_a_new_token_whatever_it_holds(
        tmp_path: Path, content: str) -> None:
    """ensure_token: a file others could write is replaced before it is read, so what
    another user put there (a token of their choosing or not one at all) is neither
    adopted nor a refusal that stops the start."""
    path = token_file(tmp_path, content, mode=0o666)
    opened = ensure_token(path)
    assert opened.rotated and opened.problem == "was writable by other users (mode 0666)"
    assert read_token(path) == opened.token


FDS = Path("/proc/self/fd")


@pytest.mark.skipif(not FDS.is_dir(), reason="needs /proc/self/fd to count descriptors")
def test_reading_the_token_file_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """read_token, ensure_token and read_own_file close what they open, whether they
    read the file or refuse it: the daemon reads the token file again at every change,
    and a descriptor left open at each would run it out of them."""
    good = token_file(tmp_path)
    (tmp_path / "bad").mkdir()
    bad = token_file(tmp_path / "bad", "short\n")
    (tmp_path / "open").mkdir()
    readable = token_file(tmp_path / "open", mode=0o644)
    before = sorted(os.listdir(FDS))
    for _ in range(3):
        assert read_token(good) == TOKEN and ensure_token(good).token == TOKEN
        assert ensure_token(readable).token == TOKEN
        assert read_own_file(good, 7) == TOKEN[:7].encode()
        for read in (read_token, ensure_token):
            with pytest.raises(TokenFileError, match="does not hold a token"):
                read(bad)
    assert sorted(os.listdir(FDS)) == before


def test_a_token_rewritten_in_place_is_seen_where_the_change_time_never_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FileVersion: on Windows ``st_ctime`` is when the file was made, and a token
    written into the same file (same inode) with the same length is told apart by its
    modification time alone."""
    real = Path.lstat

    def creation_time(path: Path) -> _TimelessStatus:
        status = real(path)
        return _TimelessStatus(status.st_mode, status.st_ino, status.st_size,
                               st_mtime_ns=status.st_mtime_ns)

    monkeypatch.setattr(Path, "lstat", creation_time)
    path = tmp_path / "token"
    keeper = TokenKeeper(path)
    old = keeper.current()
    written = path.stat()
    with path.open("r+") as file:  # in place: the inode and the length stay
        file.write(TOKEN + "\n")
    os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns + 1_000_000_000))
    assert keeper.accepts(TOKEN) and not keeper.accepts(old)


def test_a_token_given_with_a_lone_surrogate_is_refused_not_a_fault(tmp_path: Path) -> None:
    """TokenKeeper.accepts: JSON may carry "\\ud800", which no UTF-8 encodes; such a
    token given (in a WebSocket's auth message, say) is a wrong token like any other."""
    keeper = TokenKeeper(tmp_path / "token")
    for given in ("\ud800", keeper.current()[:-1] + "\udcff"):
        assert not keeper.accepts(given) and keeper.generation_accepting(given) is None
        assert not keeper.accepts_bearer(f"Bearer {given}")


def test_a_write_interrupted_by_ctrl_c_leaves_the_old_file_and_no_stray_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_private_file: whatever stops the write (here Ctrl-C while the new token is
    flushed to disk), the file keeps its old token and no half-written copy is left
    beside it."""
    path = token_file(tmp_path)

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_private_file(path, "another")
    assert os.listdir(tmp_path) == ["token"] and read_token(path) == TOKEN


def test_a_token_file_made_where_there_was_none_is_no_rotation(tmp_path: Path) -> None:
    """TokenFile.rotated: only a token replaced (the file others could write) is a
    rotation; the first token, written where there was no file, replaced nothing."""
    opened = ensure_token(tmp_path / "token")
    assert (opened.problem, opened.rotated) == (None, False)


def test_two_writes_of_the_same_file_at_once_both_land(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_private_file: each write goes through a copy of its own, so a second
    `mindscape token --rotate` run while the first is still writing does not fail on
    the first one's copy; the file ends up holding the last write whole."""
    path = tmp_path / "token"
    real = os.fsync
    inner: list[str] = []

    def another_write_meanwhile(fd: int) -> None:
        if not inner:
            inner.append("second")
            write_private_file(path, "second")
        real(fd)

    monkeypatch.setattr(os, "fsync", another_write_meanwhile)
    write_private_file(path, "first")
    assert path.read_text() == "first\n" and os.listdir(tmp_path) == ["token"]
