"""The encounter store: every encounter's current state and its append-only log of steps.

An encounter row (table ``encounters``) holds the system's JSON state after the latest
step and its ``revision``; table ``steps`` holds one row per step (revision 1..n) with the
params, the dice rolled, the result and the state after the step, so ``encounter.log``
can replay it and ``encounter.undo`` can return exactly to the state before a resolve.

Durability: the file runs in WAL journal mode with ``synchronous=FULL``. In that mode
SQLite fsyncs the write-ahead log at every commit, so a step whose ``append`` returned
survives a killed process and a power cut alike (``NORMAL`` would survive only the
former). A DELETE (rollback) journal with ``FULL`` is as durable, but pays about three
fsyncs per commit (journal, database, folder) and blocks readers while it writes; WAL
pays one. WAL needs every user of the file on one machine (shared memory, no network
folders), which is the companion's case, and while the store is open it keeps
``<store>-wal`` and ``<store>-shm`` beside the file: they are part of the store (copy the
store while the daemon is stopped, or copy all three).

Concurrency: one aiosqlite connection, and an ``asyncio.Lock`` around every
transaction, so tasks of one daemon never interleave statements on it. Writes run as
``BEGIN IMMEDIATE`` (read the revision, compare, insert the step, update the encounter,
``COMMIT``), which also serialises two processes sharing the file; a busy timeout makes
the second one wait instead of failing at once. Each transaction runs in its own task
shielded from the caller's cancellation: a write is either wholly committed or wholly
rolled back, never left open on the shared connection. ``step_states`` reads state
snapshots a few per transaction and parses one per turn of the event loop, so a long
log's states never hold the lock or the other clients up for long; ``steps`` parses the
rows it read after its transaction, giving the other clients a turn after every
``PARSE_SLICE`` characters, and ``step_details`` parses (or first reads, a few per
transaction) the steps a reader of an outline of the log needs in full, the same way,
one at a time, so that reader never holds them all parsed.

Errors: everything raised on purpose derives from ``StoreError``. A file that is not a
valid store is ``StoreCorrupt`` and is never touched, deleted or recreated; so is damage
found while the daemon runs (a malformed page, a text column that is not UTF-8): retrying
cannot mend it, and its message never quotes the stored text (a state snapshot holds the
secret choices). A write the disk refuses (full, read-only, I/O error, locked past the
timeout) is ``StoreUnavailable`` after the transaction was rolled back, so the caller
must not acknowledge it.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
import pathlib
import re
import secrets
import sqlite3
import struct
from abc import ABC, abstractmethod
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Sequence,
)
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, BinaryIO, Literal, NoReturn, Self, TypeVar

import aiosqlite

T = TypeVar("T")

# aiosqlite logs every statement with its parameters, and every error's text, at DEBUG:
# the state snapshots in them hold the secret choices, so that logger never says more
# than INFO, whatever level the daemon logs at (``mindscape serve --log-level debug``).
logging.getLogger("aiosqlite").setLevel(logging.INFO)

#: ``PRAGMA application_id`` of a Mindscape store ("MSCP"), so another program's SQLite
#: file is recognised as such instead of being written into.
APPLICATION_ID = 0x4D534350
#: How long a write waits for another process holding the file's write lock.
BUSY_TIMEOUT_SECONDS = 5.0
#: The first bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: SQLite's file header is 100 bytes; a non-empty file shorter than that is cut off.
SQLITE_HEADER_SIZE = 100
#: a write-ahead log's own header; a log no longer than it holds no frame (no step)
WAL_HEADER_SIZE = 32
#: A write-ahead log's first four bytes: its checksums read the file as little-endian
#: (…82) or big-endian (…83) 32-bit words (https://www.sqlite.org/fileformat.html, "WAL
#: File Format").
WAL_MAGIC = {0x377F0682: "<", 0x377F0683: ">"}
WAL_VERSION = 3007000
WAL_FRAME_HEADER_SIZE = 24
#: Committed transactions found past where SQLite stops reading a damaged log that stop
#: the start. A power cut in the middle of a commit can leave one behind, unacknowledged
#: (its frames written out of order); damage to acknowledged steps leaves one for each.
LOST_COMMITS_REFUSED = 2
#: Lines of ``PRAGMA quick_check`` output a start that finds damage shows.
QUICK_CHECK_LINES = 5
#: Python's sqlite3 error for a text value that is not UTF-8 (it quotes the value).
_NOT_UTF8 = re.compile(r"Could not decode to UTF-8 column '(.*?)' with text", re.DOTALL)
#: SQLite's words for a damaged file, for an error that lacks its code.
_DAMAGED = re.compile(r"database disk image is malformed|file is not a database")
#: How many state snapshots ``SQLiteStore.step_states`` reads in one transaction.
STATES_PER_READ = 64
#: How many steps ``SQLiteStore.step_details`` reads in one transaction.
STEPS_PER_READ = 64
#: How many characters of stored JSON are parsed in one turn of the event loop (a
#: single row longer than that is still parsed in one go): about a millisecond's work.
PARSE_SLICE = 64 * 1024
#: What making a step of a row costs besides its JSON, in characters of JSON parsed in
#: the same time (about 40 µs: a short log of a large encounter is many small rows)
ROW_COST = 2048
#: The kind of step ``undo`` reverts, and the kind of step it appends.
RESOLVE = "resolve"
UNDO = "undo"

# Schema migrations: MIGRATIONS[n] takes the schema from version n to n + 1. Never edit
# a released entry; append a new one. JSON columns hold compact JSON text.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE encounters (
            id            TEXT PRIMARY KEY,
            system        TEXT NOT NULL,
            name          TEXT,
            options       TEXT NOT NULL,
            initial_state TEXT NOT NULL,
            state         TEXT NOT NULL,
            revision      INTEGER NOT NULL,
            created_at    TEXT NOT NULL,
            updated_at    TEXT NOT NULL
        ) STRICT
        """,
        """
        CREATE TABLE steps (
            encounter_id TEXT NOT NULL REFERENCES encounters (id) ON DELETE CASCADE,
            revision     INTEGER NOT NULL,
            kind         TEXT NOT NULL,
            params       TEXT NOT NULL,
            rolls        TEXT NOT NULL,
            result       TEXT,
            state        TEXT NOT NULL,
            created_at   TEXT NOT NULL,
            undone_by    INTEGER,
            PRIMARY KEY (encounter_id, revision)
        ) STRICT, WITHOUT ROWID
        """,
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


# -- errors ------------------------------------------------------------------------------
class StoreError(Exception):
    """Root of the store's errors. ``str()`` is safe to log; never show it to clients."""


class UnknownEncounter(StoreError):
    """No encounter has this id (API error 4004)."""

    def __init__(self, id: str) -> None:
        super().__init__(f"no encounter with id {id!r}")
        self.id = id


class StaleRevision(StoreError):
    """The caller expected another revision than the current one (API error 4009)."""

    def __init__(self, id: str, revision: int, expected: int | None = None) -> None:
        super().__init__(
            f"encounter {id!r} is at revision {revision}, the write expected {expected}")
        self.id = id
        #: the encounter's current revision
        self.revision = revision
        self.expected = expected


class NothingToUndo(StoreError):
    """The encounter has no resolve step that is not undone already."""

    def __init__(self, id: str) -> None:
        super().__init__(f"encounter {id!r} has no resolved step left to undo")
        self.id = id


class StoreCorrupt(StoreError):
    """The file is not a valid Mindscape store. It was left exactly as it was."""

    def __init__(self, path: pathlib.Path | str, problem: str,
                 remedy: str = "move it aside (or restore a backup) to start with an "
                               "empty store") -> None:
        super().__init__(
            f"{path} is not a usable Mindscape store: {problem}. It was left untouched; "
            f"{remedy}.")
        self.path = str(path)
        self.problem = problem


class StoreUnavailable(StoreError):
    """The disk refused (full, read-only, I/O error, locked) or the store is closed.

    Whatever was being written was rolled back: the caller must not acknowledge it.
    ``retry`` says whether the same write may work later while the daemon runs (room
    made on the disk, say); it is false when only a restart can help.
    """

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


# -- values ----------------------------------------------------------------------------
@dataclass(frozen=True)
class EncounterRecord:
    """An encounter as stored: its current state at ``revision`` (0 when new)."""

    id: str
    system: str
    name: str | None
    options: dict[str, Any]
    state: dict[str, Any]
    revision: int
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class StepRecord:
    """One step of an encounter's log; ``state`` is the encounter's state after it
    (``None`` when the log was read with ``states=False``). In an outline of the log
    (``steps`` with ``details``) ``rolls`` is ``[]`` and ``result`` ``None``, and a step
    of another kind than those asked for has ``params`` ``{}`` (``step_details`` reads
    the step in full).

    ``undone_by`` is the revision of the ``undo`` step that reverted this step, if any
    (the resolve it undid, or a step logged after that resolve).
    """

    encounter_id: str
    revision: int
    kind: str
    params: dict[str, Any]
    rolls: list[Any]
    result: dict[str, Any] | None
    state: dict[str, Any] | None
    created_at: str
    undone_by: int | None
    #: the stored JSON text of params, rolls and result, when an outline read with
    #: ``texts_after`` kept it for ``step_details`` to parse
    texts: tuple[str, str, str | None] | None = field(default=None, compare=False,
                                                      repr=False)


# -- the interface -----------------------------------------------------------------------
class EncounterStore(ABC):
    """Where encounters live. A server database could implement this later.

    Every method that writes has committed durably when it returns, or raised.
    """

    @abstractmethod
    async def open(self) -> None:
        """Make the store ready (create it when absent); ``StoreCorrupt`` when invalid."""

    @abstractmethod
    async def close(self) -> None:
        """Finish writes in flight and release the store; calling it twice is harmless."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    @abstractmethod
    async def create(self, system: str, name: str | None, options: dict[str, Any],
                     state: dict[str, Any]) -> EncounterRecord:
        """A new encounter at revision 0 with a short random URL-safe id."""

    @abstractmethod
    async def get(self, id: str) -> EncounterRecord:
        """The encounter's current record; ``UnknownEncounter`` when there is none."""

    @abstractmethod
    async def append(self, id: str, *, expected_revision: int | None, kind: str,
                     params: dict[str, Any], rolls: builtins.list[Any],
                     result: dict[str, Any] | None, state: dict[str, Any]
                     ) -> EncounterRecord:
        """Log one step and make ``state`` current at revision + 1.

        ``StaleRevision`` when ``expected_revision`` is given and is not the current one.
        ``kind`` ``"undo"`` is reserved for ``undo``.
        """

    @abstractmethod
    async def steps(self, id: str, *, states: bool = True,
                    details: Collection[str] | None = None,
                    texts_after: int | None = None) -> builtins.list[StepRecord]:
        """The whole log in order (revision 1..n); with ``states=False`` without each
        step's state snapshot (the largest column, which readers of the log rarely need).

        With ``details``, an outline of the log: every step without its rolls and
        result (``[]`` and ``None``), and with its params only when it is of one of those
        kinds (else ``{}``); ``step_details`` gives in full the steps a reader needs.
        With ``texts_after`` too, the steps after that revision keep their params, rolls
        and result as stored text (``StepRecord.texts``), which ``step_details`` parses
        instead of reading the steps again: a reader that needs those steps in full then
        reads the log once (a row of a long encounter holds a large state, and reading
        it costs even when the state is not asked for).
        """

    @abstractmethod
    def step_details(self, id: str, steps: Iterable[StepRecord]
                     ) -> AsyncIterator[StepRecord]:
        """Each of ``steps`` (of an outline: ``steps`` with ``details``) with its params,
        rolls and result, parsed from its ``texts`` or else read, in the order given,
        each revision once; the rest of each is the outline's, ``undone_by`` included,
        so a reader sees them as it decided on them (a step's params, rolls and result
        never change once written). A step the log does not hold is left out.
        ``UnknownEncounter`` when there is no such encounter, also when it is deleted
        while this runs.

        They come a few at a time, as ``step_states`` gives states, for a reader that
        keeps little of each (``encounter.log`` writes each as JSON text at once).
        """

    @abstractmethod
    def step_states(self, id: str, revisions: Iterable[int]
                    ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """``(revision, state after that step)`` for each of ``revisions`` the log holds,
        in revision order; a revision it does not hold is left out. ``UnknownEncounter``
        when there is no such encounter, also when it is deleted while this runs.

        For a reader that needs little of each state (``encounter.log`` needs only the
        pending choices of some): a long log's states together are far larger than the
        rest of it, so they come a few at a time and a reader that keeps only what it
        needs of each never holds them all. A step's state never changes once written
        (``undo`` appends a step and only sets ``undone_by`` on earlier ones), so the
        states need not come from one snapshot of the store, writers are not held up
        until the last one is read, and a reader may keep what it made of them.
        """

    @abstractmethod
    async def undo(self, id: str, *, expected_revision: int | None
                   ) -> tuple[EncounterRecord, StepRecord]:
        """Revert the latest ``resolve`` step not undone yet.

        Appends a step of kind ``undo`` (params ``{"undoes": revision}``) whose state is
        the state just before that resolve step, and returns the new record and the
        undone step (as now marked). Steps logged after the undone resolve (declarations
        for the next step, added combatants, ...) lose their effect with it: the state is
        exactly the one before the resolve, whose declarations are pending again. The
        resolve and those later steps are all marked ``undone_by`` the new revision, so
        the steps not so marked are exactly the ones the state is made of.
        ``NothingToUndo`` when there is no such step.
        """

    @abstractmethod
    async def list(self) -> builtins.list[EncounterRecord]:
        """Every encounter, oldest first."""

    @abstractmethod
    async def delete(self, id: str) -> None:
        """Remove the encounter and its log; ``UnknownEncounter`` when there is none."""


# -- helpers -------------------------------------------------------------------------------
def _dump(value: Any) -> str:
    """Compact JSON text; NaN and infinities are refused since JSON has none."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _new_id() -> str:
    # 64 random bits in 11 URL-safe characters: short enough to type, and a collision
    # is retried anyway.
    return secrets.token_urlsafe(8)


def _check_header(path: pathlib.Path) -> None:
    """Refuse, before SQLite sees it, a file that cannot be a SQLite database.

    A missing or empty file is a new store (SQLite treats an empty file as an empty
    database, and it cannot hold anything to lose), unless a write-ahead log lies
    beside it (``_check_no_log``).
    """
    try:
        with path.open("rb") as file:
            head = file.read(SQLITE_HEADER_SIZE)
    except FileNotFoundError:
        _check_no_log(path, "missing")
        return
    except OSError as error:
        raise StoreUnavailable(f"cannot read {path}: {error}") from error
    if not head:
        _check_no_log(path, "empty")
        return
    if not head.startswith(SQLITE_HEADER) and not SQLITE_HEADER.startswith(head):
        raise StoreCorrupt(path, "it is not a SQLite database (its first bytes are not "
                                 "the SQLite header)")
    if len(head) < SQLITE_HEADER_SIZE:
        raise StoreCorrupt(path, f"it is truncated: {len(head)} bytes, shorter than the "
                                 f"{SQLITE_HEADER_SIZE}-byte SQLite header")


def _wal_checksum(data: bytes, order: str, sums: tuple[int, int]) -> tuple[int, int]:
    """SQLite's running checksum of a write-ahead log, carried on over ``data``."""
    s1, s2 = sums
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s1 = (s1 + words[i] + s2) & 0xFFFFFFFF
        s2 = (s2 + words[i + 1] + s1) & 0xFFFFFFFF
    return s1, s2


def _lost_commits(file: BinaryIO) -> tuple[int, int]:
    """The number of the first frame of the write-ahead log ``file`` that SQLite does
    not take, and how many commit frames with the header's salts lie from it on
    (``(0, 0)`` for a log SQLite reads whole or ignores); see ``_check_log_frames``."""
    header = file.read(WAL_HEADER_SIZE)
    if len(header) < WAL_HEADER_SIZE:
        return 0, 0
    magic, version, page_size, _, salt1, salt2, sum1, sum2 = struct.unpack(">8I", header)
    order = WAL_MAGIC.get(magic)
    # The whole size, 65536 included: unlike the store's own header, the log's has room
    # for it, and SQLite ignores a log whose header says 1 (below 512) as any other.
    if order is None or version != WAL_VERSION or not 512 <= page_size <= 65536 \
            or page_size & (page_size - 1) \
            or _wal_checksum(header[:24], order, (0, 0)) != (sum1, sum2):
        return 0, 0
    sums: tuple[int, int] | None = (sum1, sum2)
    number = broken = lost = 0
    while len(head := file.read(WAL_FRAME_HEADER_SIZE)) == WAL_FRAME_HEADER_SIZE:
        number += 1
        page, commit, frame_salt1, frame_salt2, check1, check2 = struct.unpack(">6I", head)
        ours = (frame_salt1, frame_salt2) == (salt1, salt2)
        if sums is not None:
            data = file.read(page_size)
            if len(data) < page_size:
                break  # a frame cut short is past the end for SQLite too
            if ours and page:
                sums = _wal_checksum(head[:8], order, sums)
                sums = _wal_checksum(data, order, sums)
                if sums == (check1, check2):
                    continue
            sums, broken = None, number
        elif len(file.read(page_size)) < page_size:
            # past the damage only the frame headers matter, but a whole frame counts
            break
        if ours and commit:
            lost += 1
    return broken, lost


def _check_log_frames(path: pathlib.Path) -> None:
    """Refuse a write-ahead log beside ``path`` that is damaged before transactions it
    committed: SQLite reads a log up to its first frame whose checksum fails and takes
    that as the end, so the acknowledged steps after it would be dropped without a word,
    and written over by the next step.

    Read as SQLite recovers a log (https://www.sqlite.org/fileformat.html, "WAL File
    Format"): a frame counts while its salts are the header's and its checksum carries
    on from the frame before. Past the first that does not, the commit frames with the
    header's salts (a restarted log keeps older frames, with other salts, past its end)
    are transactions lost; a power cut mid-commit can leave one, so it takes
    ``LOST_COMMITS_REFUSED``. A log whose own header is not valid is left to SQLite,
    which ignores it as a whole."""
    wal = _beside(path, "-wal")
    try:
        with wal.open("rb") as file:
            # A frame at a time: a log may be far larger than memory should hold.
            broken, lost = _lost_commits(file)
    except FileNotFoundError:
        return
    except OSError as error:
        raise StoreUnavailable(f"cannot read {wal}: {error}") from error
    if lost >= LOST_COMMITS_REFUSED:
        raise StoreCorrupt(path, (
            f"its write-ahead log {wal.name} is damaged at frame {broken}: SQLite would "
            f"read it only up to there and drop the {lost} transactions it committed "
            "after it (acknowledged steps), then write over them (moving only the log "
            "aside keeps the store as it was at its last checkpoint)"))


def _beside(path: pathlib.Path, end: str) -> pathlib.Path:
    """The file SQLite keeps beside the store ``path``: its ``-wal`` or ``-shm``."""
    return path.with_name(path.name + end)


def _identity(path: pathlib.Path) -> tuple[int, int] | None:
    """Which file ``path`` names (device and inode), ``None`` when it names none."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def _check_writable(path: pathlib.Path) -> None:
    """Refuse a store file (or its -wal or -shm beside it) that this user cannot write.
    SQLite opens it all the same, read only: the daemon would start, serve reads and
    refuse every write, and make its -wal and -shm as unwritable as the store, which
    then stop the next start once the store itself is put right."""
    for file in (path, _beside(path, "-wal"), _beside(path, "-shm")):
        try:
            os.close(os.open(file, os.O_RDWR))
        except FileNotFoundError:
            continue
        except OSError as error:
            raise StoreUnavailable(
                f"cannot write {file} ({error.strerror or error}): the store's files must "
                "be writable by this user (one made by another user or under sudo, or "
                "made read-only, is not); nothing was changed") from error


def _check_no_log(path: pathlib.Path, state: str) -> None:
    """Refuse a missing or empty store (``state``) with a write-ahead log beside it that
    holds frames: those are steps written since the last checkpoint, acknowledged, and
    the file that gave them a meaning was lost (cut to nothing or deleted after a crash).
    SQLite would open it as a new database and delete the log."""
    wal = _beside(path, "-wal")
    try:
        size = wal.stat().st_size
    except FileNotFoundError:
        return
    except OSError as error:
        raise StoreUnavailable(f"cannot read {wal}: {error}") from error
    if size > WAL_HEADER_SIZE:
        raise StoreCorrupt(path, (
            f"it is {state}, yet the write-ahead log {wal.name} beside it holds {size} "
            "bytes: steps written since the last checkpoint, which a new store would "
            "delete (move the log aside with it)"))


async def _migrate(db: aiosqlite.Connection, version: int) -> int:
    """Bring the schema from ``version`` to ``SCHEMA_VERSION`` inside the caller's
    transaction; returns the new version."""
    for statements in MIGRATIONS[version:]:
        for statement in statements:
            await db.execute(statement)
    await db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    await db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return SCHEMA_VERSION


async def _one(db: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
               ) -> sqlite3.Row | None:
    async with db.execute(sql, params) as cursor:
        row: sqlite3.Row | None = await cursor.fetchone()
        return row


async def _all(db: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()
               ) -> builtins.list[sqlite3.Row]:
    async with db.execute(sql, params) as cursor:
        return builtins.list(await cursor.fetchall())


_ENCOUNTER_COLUMNS = ("id, system, name, options, state, revision, created_at, "
                      "updated_at, initial_state")
_STEP_COLUMNS = ("encounter_id, revision, kind, params, rolls, result, state, created_at, "
                 "undone_by")


# -- SQLite -------------------------------------------------------------------------------
class SQLiteStore(EncounterStore):
    """The companion's store: one SQLite file (module docstring: durability, locking)."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        # Transactions in flight, kept referenced so a cancelled caller's shielded write
        # is neither garbage-collected nor cut off by close().
        self._running: set[asyncio.Task[Any]] = set()
        # The store file and its write-ahead log as opened (``_check_files``).
        self._files: dict[pathlib.Path, tuple[int, int] | None] = {}

    # -- opening ---------------------------------------------------------------------
    async def open(self) -> None:
        """Open (creating the folder and file when absent), check and migrate the store.

        ``StoreCorrupt`` when the file is not a SQLite database, is truncated, fails
        ``PRAGMA quick_check``, belongs to another program or has a schema version this
        code does not know; ``StoreUnavailable`` when it cannot be opened for writing.
        """
        if self._db is not None:
            raise RuntimeError("the store is already open")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreUnavailable(f"cannot create the folder of {self.path}: {error}"
                                   ) from error
        _check_header(self.path)
        _check_log_frames(self.path)
        _check_writable(self.path)
        try:
            db = await aiosqlite.connect(self.path, isolation_level=None,
                                         timeout=BUSY_TIMEOUT_SECONDS)
        except sqlite3.Error as error:
            self._fail(error, "opening the store")
        try:
            db.row_factory = sqlite3.Row
            await self._prepare(db)
        except BaseException:
            await db.close()
            raise
        self._files = {file: _identity(file)
                       for file in (self.path, _beside(self.path, "-wal"))}
        self._db = db

    async def _prepare(self, db: aiosqlite.Connection) -> None:
        try:
            # Every check reads only: a file found wanting is left byte for byte as is.
            problems = [str(row[0]) for row in await _all(db, "PRAGMA quick_check")]
            if problems != ["ok"]:
                # One row may hold many lines (one per damaged page): a few say enough.
                lines = [line for p in problems for line in p.splitlines() if line.strip()]
                more = len(lines) - QUICK_CHECK_LINES
                raise StoreCorrupt(self.path, "PRAGMA quick_check found: "
                                   + "; ".join(lines[:QUICK_CHECK_LINES])
                                   + (f" (and {more} more lines)" if more > 0 else ""))
            await self._check_identity(db)
            mode = await _one(db, "PRAGMA journal_mode = WAL")
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreUnavailable(f"{self.path}: the file system does not allow the "
                                       "WAL journal the store needs")
            await db.execute("PRAGMA synchronous = FULL")
            await db.execute("PRAGMA foreign_keys = ON")
            await db.execute("BEGIN IMMEDIATE")
            try:
                # Read again under the write lock: another process may have migrated.
                version = await self._check_identity(db)
                if version < SCHEMA_VERSION:
                    await _migrate(db, version)
                await db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    await db.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            self._fail(error, "opening the store")

    async def _check_identity(self, db: aiosqlite.Connection) -> int:
        """The schema version, after making sure the file is (or may become) ours."""
        application_id = await _one(db, "PRAGMA application_id")
        user_version = await _one(db, "PRAGMA user_version")
        app = int(application_id[0]) if application_id else 0
        version = int(user_version[0]) if user_version else 0
        if app == 0 and version == 0:
            tables = await _all(db, "SELECT name FROM sqlite_schema")
            if tables:
                raise StoreCorrupt(self.path, "it is a SQLite database of another program "
                                              "(it has tables but no Mindscape schema)")
            return 0
        if app != APPLICATION_ID:
            raise StoreCorrupt(self.path, f"it is a SQLite database of another program "
                                          f"(application_id {app:#x})")
        if version > SCHEMA_VERSION:
            # Not damage: moving the store aside would hide the user's encounters.
            raise StoreCorrupt(
                self.path, f"a newer version of Mindscape wrote it (its schema version is "
                           f"{version}, this version of Mindscape knows 1 to "
                           f"{SCHEMA_VERSION})",
                "update Mindscape to use it, or start with another home folder (--home) "
                "for a new store")
        if version < 1:
            raise StoreCorrupt(self.path, f"its schema version is {version}, this version "
                                          f"of Mindscape knows 1 to {SCHEMA_VERSION}")
        return version

    async def close(self) -> None:
        """Let writes in flight finish, then close the connection (idempotent)."""
        db, self._db = self._db, None
        if db is None:
            return
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
        async with self._lock:
            await db.close()

    # -- transactions ----------------------------------------------------------------
    def _failure(self, error: sqlite3.Error, doing: str) -> StoreError:
        """``StoreCorrupt`` when the file's content is damaged (retrying cannot help),
        else ``StoreUnavailable``. The message never quotes stored data."""
        code = getattr(error, "sqlite_errorcode", None)
        name = getattr(error, "sqlite_errorname", type(error).__name__)
        not_utf8 = _NOT_UTF8.match(str(error))
        if not_utf8 is not None:
            # Python's own error, and it quotes the column's text: a state snapshot,
            # which holds the secret choices. Only the column's name is kept.
            return StoreCorrupt(self.path, f"{doing} failed: column {not_utf8[1]!r} holds "
                                           "text that is not UTF-8")
        if (isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_CORRUPT,
                                                      sqlite3.SQLITE_NOTADB)) \
                or _DAMAGED.search(str(error)):
            return StoreCorrupt(self.path, f"{doing} failed: {error}")
        return StoreUnavailable(f"{doing} in {self.path} failed ({name}): {error}; "
                                "nothing was changed")

    def _fail(self, error: sqlite3.Error, doing: str) -> NoReturn:
        """Raise ``_failure(error)``, chained to ``error`` unless its text quotes data
        (a logged traceback shows the cause's text too)."""
        failure = self._failure(error, doing)
        if _NOT_UTF8.match(str(error)):
            raise failure from None
        raise failure from error

    async def _transaction(self, doing: str, mode: Literal["IMMEDIATE", "DEFERRED"],
                           body: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``body`` in one transaction, committed before this returns.

        ``IMMEDIATE`` takes the write lock at once, so the revision read inside the body
        cannot move before the commit. ``DEFERRED`` gives reads one consistent snapshot.
        """
        db = self._db
        if db is None:
            raise StoreUnavailable(f"{doing}: the store {self.path} is not open")

        async def run() -> T:
            async with self._lock:
                try:
                    await db.execute(f"BEGIN {mode}")
                    try:
                        result = await body(db)
                        if mode == "IMMEDIATE":
                            self._check_files(doing)
                        await db.execute("COMMIT")
                    except BaseException:
                        # A failed COMMIT may already have ended the transaction.
                        if db.in_transaction:
                            await db.execute("ROLLBACK")
                        raise
                except sqlite3.Error as error:
                    self._fail(error, doing)
                except ValueError as error:
                    # aiosqlite's word for a connection closed under us.
                    raise StoreUnavailable(f"{doing}: {error}") from error
                return result

        task = asyncio.ensure_future(run())
        self._running.add(task)
        task.add_done_callback(self._finished)
        # The caller may be cancelled (a client hung up); the transaction still ends
        # with COMMIT or ROLLBACK, never half done on the shared connection.
        try:
            return await asyncio.shield(task)
        finally:
            # A failed task holds its exception, whose traceback holds this frame: kept,
            # ``task`` made every refused call (an unknown id, say) a reference cycle of
            # a dozen frames, its request's included, left for the garbage collector.
            del task

    def _check_files(self, doing: str) -> None:
        """``StoreUnavailable`` when the store file or its write-ahead log no longer has
        its name (deleted, or another file moved over it) since the store was opened.

        SQLite keeps writing to the files it opened, whatever their names now: a step
        committed then would be acknowledged and lost with the file, at the daemon's
        stop or at a kill (a deleted log takes every step since the last checkpoint
        with it). So the write is rolled back instead, like any the disk refuses."""
        for file, opened in self._files.items():
            try:
                now = _identity(file)
            except OSError as error:
                raise StoreUnavailable(f"{doing}: cannot look at {file}: {error}; nothing "
                                       "was written") from error
            if opened is not None and now != opened:
                raise StoreUnavailable(
                    f"{doing}: {file} was deleted or replaced while the daemon ran, and "
                    "SQLite would write to the file it opened, which no longer has that "
                    "name: nothing was written. Stop the daemon and start it again "
                    "(with the store's files put back, or moved aside for a new store)",
                    retry=False)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)
        # Retrieved so that a write whose caller was cancelled does not log "exception
        # never retrieved"; the caller that is still waiting gets it through shield().
        if not task.cancelled():
            task.exception()

    # -- decoding ----------------------------------------------------------------------
    def _json(self, row: sqlite3.Row, column: str, where: str) -> Any:
        return self._parse(row[column], column, where)

    def _parse(self, text: str | None, column: str, where: str) -> Any:
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError as error:
            raise StoreCorrupt(self.path, f"{where}: column {column} is not JSON") from error

    def _encounter(self, row: sqlite3.Row) -> EncounterRecord:
        where = f"encounter {row['id']!r}"
        return EncounterRecord(
            id=row["id"], system=row["system"], name=row["name"],
            options=self._json(row, "options", where), state=self._json(row, "state", where),
            revision=row["revision"], created_at=row["created_at"],
            updated_at=row["updated_at"])

    def _step(self, row: sqlite3.Row) -> StepRecord:
        where = f"encounter {row['encounter_id']!r} step {row['revision']}"
        return StepRecord(
            encounter_id=row["encounter_id"], revision=row["revision"], kind=row["kind"],
            params=self._json(row, "params", where), rolls=self._json(row, "rolls", where),
            result=self._json(row, "result", where),
            state=None if row["state"] is None else self._json(row, "state", where),
            created_at=row["created_at"], undone_by=row["undone_by"])

    @staticmethod
    async def _encounter_row(db: aiosqlite.Connection, id: str) -> sqlite3.Row:
        row = await _one(db, f"SELECT {_ENCOUNTER_COLUMNS} FROM encounters WHERE id = ?",
                         (id,))
        if row is None:
            raise UnknownEncounter(id)
        return row

    @staticmethod
    async def _check_encounter(db: aiosqlite.Connection, id: str) -> None:
        """``UnknownEncounter`` unless there is an encounter ``id``. A read of steps
        needs nothing of its row, whose state may be large: it is not read."""
        if await _one(db, "SELECT 1 FROM encounters WHERE id = ?", (id,)) is None:
            raise UnknownEncounter(id)

    @staticmethod
    def _check_revision(id: str, row: sqlite3.Row, expected: int | None) -> int:
        current = int(row["revision"])
        if expected is not None and expected != current:
            raise StaleRevision(id, current, expected)
        return current

    # -- the interface -------------------------------------------------------------------
    async def create(self, system: str, name: str | None, options: dict[str, Any],
                     state: dict[str, Any]) -> EncounterRecord:
        """A new encounter at revision 0 with a short random URL-safe id."""
        options_json, state_json = _dump(options), _dump(state)

        async def body(db: aiosqlite.Connection) -> EncounterRecord:
            now = _now()
            while True:
                id = _new_id()
                if await _one(db, "SELECT 1 FROM encounters WHERE id = ?", (id,)) is None:
                    break
            await db.execute(
                f"INSERT INTO encounters ({_ENCOUNTER_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)",
                (id, system, name, options_json, state_json, now, now, state_json))
            return EncounterRecord(id=id, system=system, name=name,
                                   options=json.loads(options_json),
                                   state=json.loads(state_json), revision=0,
                                   created_at=now, updated_at=now)

        return await self._transaction("creating an encounter", "IMMEDIATE", body)

    async def get(self, id: str) -> EncounterRecord:
        """The encounter's current record; ``UnknownEncounter`` when there is none."""
        async def body(db: aiosqlite.Connection) -> EncounterRecord:
            return self._encounter(await self._encounter_row(db, id))

        return await self._transaction(f"reading encounter {id!r}", "DEFERRED", body)

    async def append(self, id: str, *, expected_revision: int | None, kind: str,
                     params: dict[str, Any], rolls: builtins.list[Any],
                     result: dict[str, Any] | None, state: dict[str, Any]
                     ) -> EncounterRecord:
        """Log one step and make ``state`` current at revision + 1, durably.

        ``UnknownEncounter``; ``StaleRevision`` when ``expected_revision`` is given and is
        not the current revision; ``StoreUnavailable`` when the disk refuses (nothing
        written). ``kind`` ``"undo"`` is reserved for ``undo`` (``ValueError``).
        """
        if kind == UNDO:
            raise ValueError("steps of kind 'undo' are written by EncounterStore.undo")
        # Serialise before taking the lock: a value JSON cannot hold fails here, at once.
        texts = (_dump(params), _dump(rolls), None if result is None else _dump(result),
                 _dump(state))

        async def body(db: aiosqlite.Connection) -> EncounterRecord:
            row = await self._encounter_row(db, id)
            revision = self._check_revision(id, row, expected_revision) + 1
            now = _now()
            await db.execute(
                f"INSERT INTO steps ({_STEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (id, revision, kind, *texts, now))
            await db.execute(
                "UPDATE encounters SET state = ?, revision = ?, updated_at = ? WHERE id = ?",
                (texts[3], revision, now, id))
            return replace(self._encounter(row), state=json.loads(texts[3]),
                           revision=revision, updated_at=now)

        return await self._transaction(f"appending a step to encounter {id!r}", "IMMEDIATE",
                                       body)

    async def steps(self, id: str, *, states: bool = True,
                    details: Collection[str] | None = None,
                    texts_after: int | None = None) -> builtins.list[StepRecord]:
        """The whole log in order (revision 1..n), or its outline (``details``: see
        ``EncounterStore.steps``); ``UnknownEncounter``.

        The rows are read in one transaction and parsed after it, a slice at a time
        (``PARSE_SLICE``): a long log took seconds to parse, and every other client
        waited that long.
        """
        state = "state" if states else "NULL AS state"
        bound: tuple[Any, ...] = ()
        if details is None:
            columns = "params, rolls, result"
        else:
            kinds = tuple(sorted(set(details)))
            test = f"kind IN ({', '.join('?' * len(kinds))})" if kinds else "0"
            columns = f"CASE WHEN {test} THEN params ELSE '{{}}' END AS params, " \
                      "'[]' AS rolls, NULL AS result"
            bound = kinds
            if texts_after is not None:
                columns += ", " + ", ".join(
                    f"CASE WHEN revision > ? THEN {column} END AS {column}_text"
                    for column in ("params", "rolls", "result"))
                bound += (texts_after,) * 3

        async def body(db: aiosqlite.Connection) -> builtins.list[sqlite3.Row]:
            await self._check_encounter(db, id)
            return await _all(db, f"SELECT encounter_id, revision, kind, {columns}, {state}, "
                                  "created_at, undone_by FROM steps WHERE encounter_id = ? "
                                  "ORDER BY revision", (*bound, id))

        rows = await self._transaction(f"reading the log of encounter {id!r}", "DEFERRED",
                                       body)
        parse = self._step if texts_after is None or details is None else self._outlined
        return [step async for step in self._sliced(rows, parse, lambda row: sum(
            len(row[column] or "") for column in ("params", "rolls", "result", "state")))]

    def _outlined(self, row: sqlite3.Row) -> StepRecord:
        """A step of an outline, keeping the texts read with it (``texts_after``)."""
        step = self._step(row)
        if row["params_text"] is None:
            return step
        return replace(step, texts=(row["params_text"], row["rolls_text"],
                                    row["result_text"]))

    async def step_details(self, id: str, steps: Iterable[StepRecord]
                           ) -> AsyncIterator[StepRecord]:
        """``steps`` in full (see ``EncounterStore.step_details``): those without their
        texts read ``STEPS_PER_READ`` at a time, in one short read transaction each; all
        parsed a slice at a time as the caller takes them."""
        wanted: dict[int, StepRecord] = {}
        for step in steps:
            wanted.setdefault(step.revision, step)
        order = builtins.list(wanted)
        for start in range(0, len(order), STEPS_PER_READ):
            chunk = order[start:start + STEPS_PER_READ]
            unread = [revision for revision in chunk if wanted[revision].texts is None]
            rows = {int(row["revision"]): row
                    for row in (await self._detail_rows(id, unread) if unread else [])}
            found: builtins.list[tuple[StepRecord, tuple[str, str, str | None]]] = []
            for revision in chunk:
                step = wanted[revision]
                if step.texts is not None:
                    found.append((step, step.texts))
                elif revision in rows:
                    row = rows[revision]
                    found.append((step, (row["params"], row["rolls"], row["result"])))
            async for detailed in self._sliced(
                    found, self._detailed,
                    lambda pair: sum(len(text or "") for text in pair[1])):
                yield detailed

    async def _detail_rows(self, id: str, revisions: builtins.list[int]
                           ) -> builtins.list[sqlite3.Row]:
        low, high = min(revisions), max(revisions)
        if high - low + 1 == len(revisions):
            # a run of revisions: a range reads each row once, an IN list looks each up
            # (about twice the cost)
            which, bound = "BETWEEN ? AND ?", [low, high]
        else:
            which, bound = f"IN ({', '.join('?' * len(revisions))})", revisions

        async def body(db: aiosqlite.Connection) -> builtins.list[sqlite3.Row]:
            await self._check_encounter(db, id)
            return await _all(db, "SELECT revision, params, rolls, result FROM steps "
                                  f"WHERE encounter_id = ? AND revision {which}",
                              (id, *bound))

        return await self._transaction(f"reading steps of encounter {id!r}", "DEFERRED",
                                       body)

    def _detailed(self, pair: tuple[StepRecord, tuple[str, str, str | None]]
                  ) -> StepRecord:
        """A step of an outline with its params, rolls and result parsed from ``texts``."""
        step, (params, rolls, result) = pair
        where = f"encounter {step.encounter_id!r} step {step.revision}"
        return replace(step, params=self._parse(params, "params", where),
                       rolls=self._parse(rolls, "rolls", where),
                       result=self._parse(result, "result", where), texts=None)

    @staticmethod
    async def _sliced(items: Iterable[T], parse: Callable[[T], StepRecord],
                      size: Callable[[T], int]) -> AsyncIterator[StepRecord]:
        """``parse`` of each item, with a turn of the event loop for the other clients
        after every ``PARSE_SLICE`` characters of JSON (``size``; ``ROW_COST`` each)."""
        parsed = 0
        for item in items:
            if parsed >= PARSE_SLICE:
                parsed = 0
                await asyncio.sleep(0)
            parsed += ROW_COST + size(item)
            yield parse(item)

    async def step_states(self, id: str, revisions: Iterable[int]
                          ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """The states after ``revisions`` (see ``EncounterStore.step_states``).

        Each ``STATES_PER_READ`` of them are one short read transaction; each is parsed
        only when the caller takes it, in its own turn of the event loop. Parsing a long
        log's states in one go took seconds, and every other client waited that long;
        parsed in a worker thread and handed over, they took twice as long to parse
        (measured with bench/encounter_log.py). No transaction is open while the caller
        has a state, so a caller that stops early leaves nothing behind.
        """
        wanted = sorted(set(revisions))
        for start in range(0, len(wanted), STATES_PER_READ):
            rows = await self._state_rows(id, wanted[start:start + STATES_PER_READ])
            for row in rows:
                await asyncio.sleep(0)  # let other clients in between two states
                yield int(row["revision"]), self._state(id, row)

    async def _state_rows(self, id: str, revisions: builtins.list[int]
                          ) -> builtins.list[sqlite3.Row]:
        async def body(db: aiosqlite.Connection) -> builtins.list[sqlite3.Row]:
            await self._check_encounter(db, id)
            marks = ", ".join("?" * len(revisions))
            return await _all(db, "SELECT revision, state FROM steps WHERE encounter_id = ? "
                                  f"AND revision IN ({marks}) ORDER BY revision",
                              (id, *revisions))

        return await self._transaction(f"reading states of encounter {id!r}", "DEFERRED",
                                       body)

    def _state(self, id: str, row: sqlite3.Row) -> dict[str, Any]:
        where = f"encounter {id!r} step {row['revision']}"
        state = self._json(row, "state", where)
        if not isinstance(state, dict):
            raise StoreCorrupt(self.path, f"{where}: column state is not a JSON object")
        return state

    async def undo(self, id: str, *, expected_revision: int | None
                   ) -> tuple[EncounterRecord, StepRecord]:
        """Revert the latest ``resolve`` step not undone yet (see ``EncounterStore.undo``)."""
        async def body(db: aiosqlite.Connection) -> tuple[EncounterRecord, StepRecord]:
            row = await self._encounter_row(db, id)
            revision = self._check_revision(id, row, expected_revision) + 1
            target = await _one(
                db, f"SELECT {_STEP_COLUMNS} FROM steps WHERE encounter_id = ? "
                    "AND kind = ? AND undone_by IS NULL ORDER BY revision DESC LIMIT 1",
                (id, RESOLVE))
            if target is None:
                raise NothingToUndo(id)
            undone = int(target["revision"])
            if undone == 1:
                before = str(row["initial_state"])
            else:
                previous = await _one(db, "SELECT state FROM steps WHERE encounter_id = ? "
                                          "AND revision = ?", (id, undone - 1))
                if previous is None:
                    raise StoreCorrupt(self.path, f"encounter {id!r} has no step "
                                                  f"{undone - 1} in its log")
                before = str(previous["state"])
            now = _now()
            await db.execute(
                f"INSERT INTO steps ({_STEP_COLUMNS}) VALUES (?, ?, ?, ?, '[]', NULL, ?, ?, "
                "NULL)", (id, revision, UNDO, _dump({"undoes": undone}), before, now))
            # The resolve and every step after it that is still in effect: the state
            # goes back to before the resolve, so none of them counts any more.
            await db.execute("UPDATE steps SET undone_by = ? WHERE encounter_id = ? "
                             "AND revision >= ? AND revision < ? AND undone_by IS NULL",
                             (revision, id, undone, revision))
            await db.execute(
                "UPDATE encounters SET state = ?, revision = ?, updated_at = ? WHERE id = ?",
                (before, revision, now, id))
            record = replace(self._encounter(row),
                             state=self._parse(before, "state", f"encounter {id!r}"),
                             revision=revision, updated_at=now)
            return record, replace(self._step(target), undone_by=revision)

        return await self._transaction(f"undoing a step of encounter {id!r}", "IMMEDIATE",
                                       body)

    async def list(self) -> builtins.list[EncounterRecord]:
        """Every encounter, oldest first."""
        async def body(db: aiosqlite.Connection) -> builtins.list[EncounterRecord]:
            rows = await _all(db, f"SELECT {_ENCOUNTER_COLUMNS} FROM encounters "
                                  "ORDER BY rowid")
            return [self._encounter(row) for row in rows]

        return await self._transaction("listing encounters", "DEFERRED", body)

    async def delete(self, id: str) -> None:
        """Remove the encounter and every step of its log; ``UnknownEncounter``."""
        async def body(db: aiosqlite.Connection) -> None:
            await self._check_encounter(db, id)
            # Explicit, not only ON DELETE CASCADE: the log goes even on a connection
            # where foreign keys were left off.
            await db.execute("DELETE FROM steps WHERE encounter_id = ?", (id,))
            await db.execute("DELETE FROM encounters WHERE id = ?", (id,))

        await self._transaction(f"deleting encounter {id!r}", "IMMEDIATE", body)
