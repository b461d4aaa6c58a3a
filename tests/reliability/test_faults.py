"""Faults: a killed daemon, a damaged store file, a full disk, a read-only home.

companion/store.py: "a step whose append returned survives a killed process and a power
cut alike"; "A file that is not a valid store is StoreCorrupt and is never touched,
deleted or recreated; a write the disk refuses (full, read-only, I/O error, locked past
the timeout) is StoreUnavailable after the transaction was rolled back, so the caller
must not acknowledge it."
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import resource
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unwritable import unwritable

from .checks import assert_clean
from .conftest import DaemonFactory
from .daemon import Daemon, request
from .play import Client, Fault, Ledger, comparable, new_encounter, play, replay, run_all, step
from .test_load import check_log_holds_every_ack

KILL_AFTER = 1.5
CLIENTS = 8


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file's SHA-256 in ``folder``: proof that nothing was touched."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_a_daemon_stopped_mid_load_loses_no_acknowledged_step_and_the_log_replays(
        start_daemon: DaemonFactory, stop: signal.Signals) -> None:
    """SIGKILL: nothing runs after it, so only what was committed survives. SIGTERM: the
    graceful stop (exit status 0) lets writes in flight finish or fail; either way no
    acknowledged step is missing afterwards."""
    daemon = start_daemon()
    ledger = Ledger()
    clients = [Client(daemon.url, daemon.token, ledger, timeout=10) for _ in range(CLIENTS)]

    async def killer() -> None:
        await asyncio.sleep(KILL_AFTER)
        # Mid-way through the writes of eight clients, with no warning.
        os.kill(daemon.pid, stop)

    try:
        deadline = time.monotonic() + 30
        systems = ("combat-strength", "revised-2e", "power-pool")
        await run_all(killer(), *(
            play(c, systems[i % 3], deadline, f"killed {i}", until_unreachable=True)
            for i, c in enumerate(clients)))
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    assert daemon.process is not None
    assert daemon.process.wait(timeout=10) == (-signal.SIGKILL if stop == signal.SIGKILL
                                               else 0), daemon.output()[-2000:]
    assert ledger.faults == []
    encounters = sorted({a.encounter for a in ledger.acks})
    assert len(encounters) == CLIENTS and len(ledger.acks) > 3 * CLIENTS

    daemon.start()
    unacknowledged = 0
    async with Client(daemon.url, daemon.token, ledger) as client:
        for encounter in encounters:
            log = await check_log_holds_every_ack(client, encounter, ledger, False)
            # Each client had at most one write in flight when the daemon died: at most
            # one step per encounter is stored without having been acknowledged.
            assert len(log) - len(ledger.acked(encounter)) in (0, 1)
            unacknowledged += len(log) - len(ledger.acked(encounter))
            copy = await replay(client, encounter, ledger.sent_choices)
            assert comparable(await client.call("encounter.get", {"id": copy})) == \
                comparable(await client.call("encounter.get", {"id": encounter}))
        # And the restarted daemon carries on with the same encounters.
        await step(client, "combat-strength", encounters[0], 1)
    print(f"\n{stop.name} after {KILL_AFTER} s: {len(ledger.acks)} acknowledged writes in "
          f"{len(encounters)} encounters, all stored; {unacknowledged} stored but not "
          "acknowledged (in flight at the kill); every log replayed to the same state")


# -- a damaged store file ----------------------------------------------------------------
def _truncate_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:60])


def _truncate_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    # Keep the 100-byte header (so SQLite opens it), scribble over every page after the
    # first: the schema and the rows are gone.
    for offset in range(4096, len(data), 7):
        data[offset] = (data[offset] * 31 + 7) % 256
    path.write_bytes(bytes(data))


def _not_sqlite(path: Path) -> None:
    path.write_bytes(b"these are the GM's notes, not a database\n" * 200)


def _other_program(path: Path) -> None:
    path.unlink()
    subprocess.run(["python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                    "c.execute('create table notes (t text)'); c.commit()", str(path)],
                   check=True)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated inside the header": _truncate_header,
    "truncated to half its pages": _truncate_half,
    "pages overwritten": _garbage_pages,
    "not a SQLite file": _not_sqlite,
    "another program's database": _other_program,
}


@pytest.fixture(scope="module")
def filled_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose store holds a few encounters (daemon stopped cleanly)."""
    base = tmp_path_factory.mktemp("filled")
    daemon = Daemon(base / "home", base / "logs").start()

    async def fill() -> None:
        async with Client(daemon.url, daemon.token) as client:
            await run_all(*(play(client, system, time.monotonic() + 0.5)
                            for system in ("combat-strength", "revised-2e", "power-pool")))

    try:
        asyncio.run(fill())
    finally:
        daemon.stop()
    return daemon.home


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_stops_the_daemon_with_a_message_naming_the_file_untouched(
        damage: str, filled_home: Path, tmp_path: Path, start_daemon: DaemonFactory) -> None:
    home = tmp_path / "home"
    shutil.copytree(filled_home, home)
    path = home / "mindscape.sqlite3"
    assert path.stat().st_size > 8192
    DAMAGE[damage](path)
    before = fingerprint(home)
    daemon = start_daemon(home, wait=False)
    daemon.launch()
    status = daemon.wait_exit(timeout=20)
    output = daemon.output()
    assert status != 0, output
    assert str(path) in output
    assert "Traceback" not in output
    # Never a silent reset: the file (and everything beside it) is as it was.
    assert fingerprint(home) == before


# -- the disk refuses writes ----------------------------------------------------------------
#: RLIMIT_FSIZE for the daemon: the kernel refuses to grow any file past it. Every file
#: the daemon writes grows (the WAL by a few pages per step), so writes start failing a
#: few dozen steps in, the way they do on a full disk.
FILE_SIZE_LIMIT = 1024 * 1024


def limit_file_size() -> None:
    """Run in the daemon's process before exec (Python ignores SIGXFSZ, so a write past
    the limit fails with EFBIG instead of killing the process)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


async def write_until_refused(daemon: Daemon, ledger: Ledger, encounter: str,
                              steps: int = 400) -> list[Fault]:
    """Resolve steps until the daemon refuses some; the refusals (a few after the first,
    to see that each one is clean and the daemon does not hang)."""
    refusals: list[Fault] = []
    async with Client(daemon.url, daemon.token, ledger, timeout=20) as client:
        for number in range(steps):
            try:
                await step(client, "combat-strength", encounter, number)
            except Fault as fault:
                refusals.append(fault)
                if len(refusals) >= 5:
                    break
            if refusals and number % 2:
                # A read still works while writes fail.
                await client.call("encounter.get", {"id": encounter})
    return refusals


def check_refusal(fault: Fault) -> None:
    """A refused write is an error answer with no revision and no exception text."""
    # 5003, the store's own code ("nothing was written", an error id, retry), never a
    # rules, params or revision answer that would suggest something was decided.
    assert fault.code == 5003, fault.error
    assert set(fault.data or {}) == {"error_id", "retry"}, fault.error
    assert "revision" not in (fault.data or {}), fault.error
    assert_clean(str(fault.error))


async def test_a_full_disk_fails_writes_cleanly_and_acknowledges_nothing_it_lost(
        start_daemon: DaemonFactory) -> None:
    daemon = start_daemon(preexec=limit_file_size)
    ledger = Ledger()
    async with Client(daemon.url, daemon.token, ledger) as client:
        encounter = await new_encounter(client, "combat-strength", "full disk")
    refusals = await write_until_refused(daemon, ledger, encounter)
    assert refusals, "the file size limit never made a write fail"
    print(f"\nfile size limit {FILE_SIZE_LIMIT} bytes: {len(ledger.acks)} writes "
          f"acknowledged, then {len(refusals)} refused with {refusals[0].error}")
    for fault in refusals:
        check_refusal(fault)
        assert (fault.data or {})["retry"] is True, fault.error  # once there is room
    assert request(daemon, "GET", "/healthz").status == 200
    daemon.stop()
    daemon.preexec = None
    daemon.start()
    async with Client(daemon.url, daemon.token, ledger) as client:
        await check_log_holds_every_ack(client, encounter, ledger, True)
        await step(client, "combat-strength", encounter, 1)


async def test_a_read_only_home_fails_writes_cleanly_and_acknowledges_nothing(
        start_daemon: DaemonFactory) -> None:
    daemon = start_daemon()
    ledger = Ledger()
    async with Client(daemon.url, daemon.token, ledger) as client:
        encounter = await new_encounter(client, "combat-strength", "read-only")
        await step(client, "combat-strength", encounter, 0)
    files = [daemon.home, *daemon.home.iterdir()]
    with unwritable(*files, held_open=True):
        refusals = await write_until_refused(daemon, ledger, encounter, steps=5)
        assert len(refusals) == 5
        for fault in refusals:
            check_refusal(fault)
        assert request(daemon, "GET", "/healthz").status == 200
    # Writable again: the daemon carries on without a restart.
    async with Client(daemon.url, daemon.token, ledger) as client:
        await step(client, "combat-strength", encounter, 7)
        await check_log_holds_every_ack(client, encounter, ledger, True)


def test_a_read_only_home_at_start_stops_the_daemon_with_a_message_naming_the_file(
        filled_home: Path, tmp_path: Path, start_daemon: DaemonFactory) -> None:
    home = tmp_path / "home"
    shutil.copytree(filled_home, home)
    before = fingerprint(home)
    with unwritable(home, *home.iterdir()):
        daemon = start_daemon(home, wait=False)
        daemon.launch()
        status = daemon.wait_exit(timeout=20)
    output = daemon.output()
    assert status != 0, output
    assert str(home / "mindscape.sqlite3") in output
    assert "Traceback" not in output
    assert fingerprint(home) == before


# -- the store's files taken away while the daemon runs --------------------------------------
def _copy_over(path: Path) -> None:
    """Another file moved over the store (a backup put back while the daemon runs)."""
    copy = path.with_name("copy")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


TAKEN_AWAY: dict[str, Callable[[Path], None]] = {
    "store deleted": lambda path: path.unlink(),
    "write-ahead log deleted": lambda path: path.with_name(path.name + "-wal").unlink(),
    "store replaced": _copy_over,
}


@pytest.mark.parametrize("taken", sorted(TAKEN_AWAY))
async def test_a_store_file_deleted_or_replaced_while_running_refuses_writes(
        taken: str, start_daemon: DaemonFactory) -> None:
    """SQLite goes on writing to the files it opened, whatever their names now: each
    write would be acknowledged into a file that no name leads to, and lost with it at
    the stop (a deleted write-ahead log, at the next kill). Before this was checked, all
    of them were acknowledged (and after a deleted log and a SIGKILL, the restarted
    daemon knew nothing of the encounter). Now each is refused like a write the disk
    refuses, and reads go on."""
    daemon = start_daemon()
    ledger = Ledger()
    async with Client(daemon.url, daemon.token, ledger) as client:
        encounter = await new_encounter(client, "combat-strength", "taken away")
        await step(client, "combat-strength", encounter, 0)
    acknowledged = len(ledger.acks)
    TAKEN_AWAY[taken](daemon.home / "mindscape.sqlite3")
    refusals = await write_until_refused(daemon, ledger, encounter, steps=3)
    assert len(refusals) == 3
    for fault in refusals:
        check_refusal(fault)
        # Retrying cannot help until a restart: the answer says so.
        assert (fault.data or {})["retry"] is False, fault.error
    assert len(ledger.acks) == acknowledged
    assert request(daemon, "GET", "/healthz").status == 200
    assert "was deleted or replaced while the daemon ran" in daemon.output()


# -- a damaged write-ahead log ------------------------------------------------------------
@pytest.fixture(scope="module")
def killed_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    """A home whose daemon was SIGKILLed after 20 rounds: its write-ahead log holds
    every step (none checkpointed yet), and the ledger what was acknowledged."""
    base = tmp_path_factory.mktemp("killed")
    daemon = Daemon(base / "home", base / "logs").start()
    ledger = Ledger()

    async def fill() -> None:
        async with Client(daemon.url, daemon.token, ledger) as client:
            encounter = await new_encounter(client, "combat-strength", "logged")
            for number in range(20):
                await step(client, "combat-strength", encounter, number)

    try:
        asyncio.run(fill())
    finally:
        daemon.kill()
    return daemon.home, ledger


def commit_frames(wal: Path) -> list[int]:
    """The offsets of the commit frames of a write-ahead log (a frame header's second
    word is the database's size in pages after a commit, else 0)."""
    data = wal.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    frame = 24 + page_size
    return [offset for offset in range(32, len(data) - frame + 1, frame)
            if struct.unpack(">I", data[offset + 4:offset + 8])[0]]


def flip_page(wal: Path, frame_offset: int) -> None:
    """Turn over 64 bytes inside the page of the frame at ``frame_offset``."""
    data = bytearray(wal.read_bytes())
    for offset in range(frame_offset + 24 + 100, frame_offset + 24 + 164):
        data[offset] ^= 0xFF
    wal.write_bytes(bytes(data))


def test_a_write_ahead_log_damaged_before_committed_steps_stops_the_daemon_untouched(
        killed_home: tuple[Path, Ledger], tmp_path: Path,
        start_daemon: DaemonFactory) -> None:
    """SQLite reads a log up to the first frame whose checksum fails and takes that for
    its end: before this was checked, the daemon started without a word with the
    encounter at revision 31 of 60 acknowledged, and its next write went over the rest."""
    home = tmp_path / "home"
    shutil.copytree(killed_home[0], home)
    wal = home / "mindscape.sqlite3-wal"
    commits = commit_frames(wal)
    assert len(commits) > 40
    flip_page(wal, commits[len(commits) // 2])
    before = fingerprint(home)
    daemon = start_daemon(home, wait=False)
    daemon.launch()
    status = daemon.wait_exit(timeout=20)
    output = daemon.output()
    assert status == 2, output
    assert str(home / "mindscape.sqlite3") in output
    assert "write-ahead log mindscape.sqlite3-wal is damaged" in output
    assert "Traceback" not in output
    assert fingerprint(home) == before


async def test_a_write_ahead_log_damaged_in_its_last_commit_is_recovered_as_sqlite_does(
        killed_home: tuple[Path, Ledger], tmp_path: Path,
        start_daemon: DaemonFactory) -> None:
    """What a power cut in the middle of the last commit can leave (its frames written
    out of order) is not refused: SQLite drops that one transaction, and the rest is
    there."""
    home = tmp_path / "home"
    shutil.copytree(killed_home[0], home)
    wal = home / "mindscape.sqlite3-wal"
    commits = commit_frames(wal)
    flip_page(wal, commits[-1])
    daemon = start_daemon(home)
    ledger = killed_home[1]
    acks = ledger.acks[:-1]
    async with Client(daemon.url, daemon.token) as client:
        log = (await client.call("encounter.log", {"id": acks[0].encounter}))["steps"]
    assert [(s["revision"], s["kind"]) for s in log] == [(a.revision, a.kind) for a in acks]
