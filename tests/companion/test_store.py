"""The encounter store (companion/store.py).

API.md "Encounters": "Every step is stored before the call answers, with the dice used,
so `encounter.log` can replay it and `encounter.undo` reverts it exactly. Calls that
change an encounter may name the `revision` they expect (4009 if it moved on)."
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import hashlib
import json
import logging
import os
import pathlib
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import textwrap
import threading
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import pytest

from companion import store as store_module
from companion.settings import Settings
from companion.store import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    WAL_HEADER_SIZE,
    EncounterRecord,
    NothingToUndo,
    SQLiteStore,
    StaleRevision,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
    UnknownEncounter,
)
from tests.unwritable import unwritable

from .conftest import Rpc

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
async def store(tmp_path: pathlib.Path) -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "store.sqlite3")
    await opened.open()
    yield opened
    await opened.close()


async def step(store: SQLiteStore, id: str, kind: str, n: int,
               expected: int | None = None) -> EncounterRecord:
    """Append a recognisable step: its state is ``{"n": n}``."""
    return await store.append(id, expected_revision=expected, kind=kind,
                              params={"n": n}, rolls=[{"purpose": "attack", "value": n}],
                              result={"n": n} if kind == "resolve" else None,
                              state={"n": n})


async def pragma(store: SQLiteStore, name: str) -> object:
    """The value of ``PRAGMA name`` on the store's own connection."""
    assert store._db is not None
    async with store._db.execute(f"PRAGMA {name}") as cursor:
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


def fingerprint(folder: pathlib.Path) -> dict[str, str]:
    """Every file in ``folder`` with a hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if p.is_file()}


async def filled_store(path: pathlib.Path) -> str:
    """A closed store at ``path`` holding one encounter with a few steps."""
    async with SQLiteStore(path) as store:
        record = await store.create("revised-2e", "filler", {}, {"n": 0})
        for n in range(1, 40):
            await store.append(record.id, expected_revision=None, kind="declare",
                               params={"padding": "x" * 400}, rolls=[], result=None,
                               state={"n": n})
        return record.id


# -- create, get, append, steps, list, delete ----------------------------------------------
async def test_create_starts_at_revision_zero_with_a_short_url_safe_id(
        store: SQLiteStore) -> None:
    record = await store.create("power-pool", "Duel at dusk", {"H-PP-X": True}, {"n": 0})
    assert record.revision == 0
    # 64 random bits (companion/store.py ``_new_id``): 11 URL-safe characters
    assert re.fullmatch(r"[A-Za-z0-9_-]{11}", record.id)
    assert await store.get(record.id) == record
    assert await store.steps(record.id) == []
    other = await store.create("power-pool", None, {}, {"n": 0})
    assert other.id != record.id and other.name is None


async def test_append_moves_the_revision_on_and_logs_the_step_with_its_dice(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    first = await step(store, record.id, "declare", 1, expected=0)
    second = await step(store, record.id, "resolve", 2, expected=1)
    assert (first.revision, second.revision) == (1, 2)
    assert await store.get(record.id) == second
    assert second.state == {"n": 2} and second.created_at == record.created_at
    log = await store.steps(record.id)
    assert [(s.revision, s.kind, s.state, s.undone_by) for s in log] == [
        (1, "declare", {"n": 1}, None), (2, "resolve", {"n": 2}, None)]
    assert log[1].rolls == [{"purpose": "attack", "value": 2}]
    assert log[1].result == {"n": 2} and log[0].result is None
    assert log[1].params == {"n": 2} and log[1].encounter_id == record.id


async def test_create_and_append_answer_the_state_as_read_back_not_the_callers_values(
        store: SQLiteStore) -> None:
    """The record a write answers is the one ``get`` reads afterwards: values as JSON
    holds them (a tuple as a list, a number key as text), and a copy that the caller's
    later changes to its own dicts leave alone."""
    options: dict[str, Any] = {"house_rules": ("H-PP-X",)}
    state: dict[Any, Any] = {"round": 1, "psp": {1: 40}}
    stored = {"round": 1, "psp": {"1": 40}}
    record = await store.create("revised-2e", None, options, state)
    assert (record.options, record.state) == ({"house_rules": ["H-PP-X"]}, stored)
    moved = await store.append(record.id, expected_revision=0, kind="declare", params={},
                               rolls=[], result=None, state=state)
    assert moved == await store.get(record.id) and moved.state == stored
    state["round"], options["house_rules"] = 2, ()
    assert (record.options, record.state, moved.state) == (
        {"house_rules": ["H-PP-X"]}, stored, stored)


async def test_a_new_id_that_is_taken_already_is_drawn_again(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """companion/store.py ``_new_id``: "a collision is retried anyway"."""
    drawn = iter(["taken-id-01", "taken-id-01", "fresh-id-02"])
    monkeypatch.setattr(store_module, "_new_id", lambda: next(drawn))
    first = await store.create("revised-2e", "first", {}, {"n": 0})
    second = await store.create("revised-2e", "second", {}, {"n": 1})
    assert (first.id, second.id) == ("taken-id-01", "fresh-id-02")
    assert [(r.id, r.name) for r in await store.list()] == [
        ("taken-id-01", "first"), ("fresh-id-02", "second")]


async def test_timestamps_are_utc_iso_8601_to_the_millisecond(store: SQLiteStore) -> None:
    """docs/API.md ``encounter.list`` and ``encounter.log``: ``created_at`` and
    ``updated_at`` are ISO 8601 in UTC (companion/schemas.py), each write's own time: the
    step's ``created_at`` is the encounter's ``updated_at`` after it."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    moved = await step(store, record.id, "resolve", 1)
    undone, _ = await store.undo(record.id, expected_revision=None)
    log = await store.steps(record.id)
    assert (moved.updated_at, undone.updated_at) == (log[0].created_at, log[1].created_at)
    assert await store.get(record.id) == undone
    stamps = [record.created_at, record.updated_at, *(s.created_at for s in log)]
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    assert stamps == sorted(stamps)


async def test_the_log_can_be_read_without_the_state_snapshots(store: SQLiteStore) -> None:
    """``encounter.log`` needs no state: reading it without them keeps every other column."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1, expected=0)
    await step(store, record.id, "resolve", 2, expected=1)
    full = await store.steps(record.id)
    light = await store.steps(record.id, states=False)
    assert [s.state for s in light] == [None, None]
    assert [dataclasses.replace(s, state=None) for s in full] == light


async def states_of(store: SQLiteStore, id: str, revisions: Iterable[int]
                    ) -> list[tuple[int, dict[str, Any]]]:
    return [item async for item in store.step_states(id, revisions)]


async def test_the_states_asked_for_come_in_revision_order_a_few_reads_at_a_time(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``encounter.log`` reads only the states it compares: each revision asked for
    once (also one asked for more times than a read takes), in order, one the log does
    not hold left out, however many reads it takes."""
    monkeypatch.setattr(store_module, "STATES_PER_READ", 2)
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 8):
        await step(store, record.id, "declare", n)
    assert await states_of(store, record.id, [7, 2, 3, 3, 3, 5, 99, 1]) == [
        (1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3}), (5, {"n": 5}), (7, {"n": 7})]
    assert await states_of(store, record.id, []) == []
    with pytest.raises(UnknownEncounter):
        await states_of(store, "nope", [1])


async def test_states_and_steps_in_full_are_the_encounters_own_not_anothers(
        store: SQLiteStore) -> None:
    """Two encounters' logs hold the same revisions: each reader of one of them gets
    that one's states and steps, never the other's."""
    mine = await store.create("revised-2e", None, {}, {"n": 0})
    other = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 4):
        await step(store, other.id, "declare", 10 * n)
        await step(store, mine.id, "declare", n)
    assert await states_of(store, mine.id, [1, 2, 3]) == [
        (n, {"n": n}) for n in range(1, 4)]
    outline = await store.steps(mine.id, states=False, details=())
    assert [s.params async for s in store.step_details(mine.id, outline)] == [
        {"n": n} for n in range(1, 4)]


async def test_states_of_an_encounter_deleted_while_they_are_read_are_unknown(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """No transaction is open between two states a reader takes, so a delete may come
    in between: the next read says the encounter is gone."""
    monkeypatch.setattr(store_module, "STATES_PER_READ", 2)
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 6):
        await step(store, record.id, "declare", n)
    states = store.step_states(record.id, range(1, 6))
    assert await anext(states) == (1, {"n": 1})
    await asyncio.wait_for(store.delete(record.id), 5)
    rest = []
    with pytest.raises(UnknownEncounter):
        async for item in states:
            rest.append(item)
    assert rest == [(2, {"n": 2})]  # read with 1, before the delete


async def test_an_outline_of_the_log_has_only_the_params_of_the_kinds_asked_for(
        store: SQLiteStore) -> None:
    """``steps(details=...)``: masking needs the params of declarations and undos only;
    no step comes with its rolls and result, no other step with its params."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for kind, n in (("add", 1), ("declare", 2), ("resolve", 3)):
        await store.append(record.id, expected_revision=None, kind=kind,
                           params={"n": n}, rolls=[n], result={"n": n}, state={"n": n})
    await store.undo(record.id, expected_revision=None)
    full = await store.steps(record.id, states=False)
    outline = await store.steps(record.id, states=False, details=("declare", "undo"))
    assert [(s.kind, s.params, s.rolls, s.result) for s in outline] == [
        ("add", {}, [], None), ("declare", {"n": 2}, [], None),
        ("resolve", {}, [], None), ("undo", {"undoes": 3}, [], None)]
    assert [dataclasses.replace(s, params={}, rolls=[], result=None) for s in full] == [
        dataclasses.replace(s, params={}, rolls=[], result=None) for s in outline]
    assert [s.params for s in await store.steps(record.id, details=())] == [{}] * 4


def count_detail_reads(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
                       ) -> list[list[int]]:
    """The revisions of each read ``step_details`` makes from now on, in order."""
    reads: list[list[int]] = []
    rows = store._detail_rows

    async def counting(id: str, revisions: list[int]) -> Any:
        reads.append(revisions)
        return await rows(id, revisions)

    monkeypatch.setattr(store, "_detail_rows", counting)
    return reads


async def test_step_details_come_in_the_order_asked_a_few_reads_at_a_time(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step asked for once (the first given of its revision), in the order asked,
    one the log does not hold left out; each read transaction takes ``STEPS_PER_READ`` of
    them; the rest of each step (``undone_by``) is the outline's."""
    monkeypatch.setattr(store_module, "STEPS_PER_READ", 2)
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 8):
        await step(store, record.id, "declare", n)
    reads = count_detail_reads(store, monkeypatch)
    full = {s.revision: s for s in await store.steps(record.id, states=False)}
    outline = {s.revision: s for s in await store.steps(record.id, states=False,
                                                        details=())}
    outline[2] = dataclasses.replace(outline[2], undone_by=42)
    asked = [outline[r] for r in (7, 2, 3, 3)] + [
        dataclasses.replace(outline[1], revision=99), outline[1],
        dataclasses.replace(outline[2], undone_by=7)]
    got = [s async for s in store.step_details(record.id, asked)]
    assert got == [full[7], dataclasses.replace(full[2], undone_by=42), full[3], full[1]]
    assert reads == [[7, 2], [3, 99], [1]]
    assert [s async for s in store.step_details(record.id, [])] == []
    with pytest.raises(UnknownEncounter):
        [s async for s in store.step_details("nope", [outline[1]])]


async def test_an_outline_with_texts_needs_no_second_read(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``texts_after``: the steps after that revision come with their stored text, and
    ``step_details`` parses it instead of reading them again."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 6):
        await step(store, record.id, "resolve" if n % 2 else "declare", n)
    full = await store.steps(record.id, states=False)
    outline = await store.steps(record.id, states=False, details=("declare",),
                                texts_after=3)
    assert [s.texts is not None for s in outline] == [False, False, False, True, True]
    assert outline == await store.steps(record.id, states=False, details=("declare",))
    # texts are kept for an outline only: the whole log has its steps parsed already
    whole = await store.steps(record.id, states=False, texts_after=3)
    assert whole == full and [s.texts for s in whole] == [None] * 5
    reads = count_detail_reads(store, monkeypatch)
    detailed = [s async for s in store.step_details(record.id, outline)]
    assert detailed == full and reads == [[1, 2, 3]]
    # a step given in full keeps no text: it would hold the step twice
    assert [s.texts for s in detailed] == [None] * 5


async def runs_of_parsing(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch,
                          read: Callable[[], Awaitable[object]]) -> list[int]:
    """How many rows (steps or states) ``read`` parses in each run between two turns of
    another client."""
    events: list[str] = []

    def noting(parse: Any) -> Any:
        def parsing(*args: Any) -> Any:
            events.append("parse")
            return parse(*args)
        return parsing

    for name in ("_step", "_detailed", "_state"):
        monkeypatch.setattr(store, name, noting(getattr(store, name)))
    done = asyncio.Event()

    async def other_client() -> None:
        while not done.is_set():
            events.append("turn")
            await asyncio.sleep(0)

    other = asyncio.ensure_future(other_client())
    await asyncio.sleep(0)
    await read()
    done.set()
    await other
    return [len(run) for run in
            "".join("p" if e == "parse" else " " for e in events).split()]


@pytest.mark.parametrize("read", ["steps", "steps with states", "step_details"])
async def test_a_long_log_is_parsed_a_slice_at_a_time(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, read: str) -> None:
    """Other clients get a turn of the event loop after every ``PARSE_SLICE``
    characters of JSON parsed: steps of 0.4 slices (in their params, or in their states
    when those are read) are parsed three at a time at most (the third crosses the
    slice), never the whole log in one go."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    text = "x" * int(store_module.PARSE_SLICE * 0.4)
    in_state = read == "steps with states"
    for n in range(1, 13):
        await store.append(record.id, expected_revision=None, kind="add",
                           params={} if in_state else {"text": text}, rolls=[],
                           result=None, state={"n": n, "text": text} if in_state else {"n": n})
    outline = await store.steps(record.id, states=False, details=())

    async def reading() -> None:
        if read == "step_details":
            assert len([s async for s in store.step_details(record.id, outline)]) == 12
        else:
            assert len(await store.steps(record.id, states=in_state)) == 12

    assert await runs_of_parsing(store, monkeypatch, reading) == [3] * 4


async def test_a_slice_ends_once_it_is_full_and_each_row_costs_its_making_too(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps of exactly half a slice (``ROW_COST`` and their JSON) are parsed two at a
    time; a long log of small steps is parsed ``PARSE_SLICE // ROW_COST`` at a time at
    most, not in one go."""
    half = await store.create("revised-2e", None, {}, {"n": 0})
    # a row's JSON: {"text":"x..."} and [] (no result, no state read)
    text = "x" * (store_module.PARSE_SLICE // 2 - store_module.ROW_COST - 11 - 2)
    small = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 41):
        if n <= 12:
            await store.append(half.id, expected_revision=None, kind="add",
                               params={"text": text}, rolls=[], result=None, state={})
        await store.append(small.id, expected_revision=None, kind="add", params={},
                           rolls=[], result=None, state={})
    assert await runs_of_parsing(
        store, monkeypatch, lambda: store.steps(half.id, states=False)) == [2] * 6
    runs = await runs_of_parsing(
        store, monkeypatch, lambda: store.steps(small.id, states=False))
    assert sum(runs) == 40
    assert max(runs) <= store_module.PARSE_SLICE // store_module.ROW_COST


async def test_each_state_is_parsed_in_its_own_turn_of_the_event_loop(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``step_states``: other clients get a turn between any two states parsed."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 6):
        await step(store, record.id, "declare", n)

    async def reading() -> None:
        assert len(await states_of(store, record.id, range(1, 6))) == 5

    assert await runs_of_parsing(store, monkeypatch, reading) == [1] * 5


async def test_a_stored_state_that_is_not_an_object_is_corrupt(store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1)
    assert store._db is not None
    await store._db.execute("UPDATE steps SET state = '[1]'")
    with pytest.raises(StoreCorrupt, match="step 1: column state is not a JSON object"):
        await states_of(store, record.id, [1])


async def test_json_columns_are_compact_json_text(store: SQLiteStore) -> None:
    """Compact, and a name's letters beyond ASCII kept as they are, not as \\u escapes of
    six characters each."""
    state = {"combatants": {"ulcen": {"psp": 40, "name": "Ulcën of Tyr"}}, "round": 1}
    record = await store.create("revised-2e", None, {}, state)
    await store.append(record.id, expected_revision=0, kind="resolve", params={"a": [1, 2]},
                       rolls=[], result={"outcome": "hit"}, state=state)
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        texts = raw.execute("SELECT params, rolls, result, state FROM steps").fetchone()
    values: list[object] = [{"a": [1, 2]}, [], {"outcome": "hit"}, state]
    compact = [json.dumps(value, separators=(",", ":"), ensure_ascii=False)
               for value in values]
    assert list(texts) == compact
    # the encounter's current state is the step's state, not any other column of it
    assert (await store.get(record.id)).state == state
    # a step without a result has none (SQL NULL), not the JSON text null
    await store.append(record.id, expected_revision=1, kind="declare", params={},
                       rolls=[], result=None, state=state)
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        assert raw.execute("SELECT result FROM steps WHERE revision = 2").fetchone() == (
            None,)


async def test_unknown_encounters_raise_unknown_encounter(store: SQLiteStore) -> None:
    for call in (store.get("nope"), store.steps("nope"), store.delete("nope"),
                 store.undo("nope", expected_revision=None),
                 step(store, "nope", "declare", 1)):
        with pytest.raises(UnknownEncounter) as caught:
            await call
        assert caught.value.id == "nope"


async def test_list_gives_every_encounter_oldest_first(store: SQLiteStore) -> None:
    ids = [(await store.create("combat-strength", f"e{i}", {}, {"n": i})).id
           for i in range(5)]
    await step(store, ids[0], "declare", 1)
    listed = await store.list()
    assert [r.id for r in listed] == ids
    assert listed[0].revision == 1 and listed[0].state == {"n": 1}


async def test_delete_removes_the_encounter_and_its_whole_log(store: SQLiteStore) -> None:
    keep = await store.create("revised-2e", None, {}, {"n": 0})
    gone = await store.create("revised-2e", None, {}, {"n": 0})
    for n in range(1, 4):
        await step(store, gone.id, "declare", n)
        await step(store, keep.id, "declare", n)
    await store.delete(gone.id)
    with pytest.raises(UnknownEncounter):
        await store.get(gone.id)
    assert [r.id for r in await store.list()] == [keep.id]
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        orphans = raw.execute("SELECT count(*) FROM steps WHERE encounter_id = ?",
                              (gone.id,)).fetchone()[0]
    assert orphans == 0
    assert len(await store.steps(keep.id)) == 3


async def test_values_json_cannot_hold_are_refused_before_anything_is_written(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    with pytest.raises(ValueError, match="not JSON compliant"):
        await store.append(record.id, expected_revision=0, kind="declare", params={},
                           rolls=[], result=None, state={"n": float("nan")})
    assert (await store.get(record.id)).revision == 0
    assert await store.steps(record.id) == []


async def test_an_undo_step_is_written_only_by_undo(store: SQLiteStore) -> None:
    """An undo step names the step it reverts (``EncounterStore.undo``); appended as a
    plain step it would revert nothing the log could replay."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    with pytest.raises(ValueError, match=re.escape(
            "steps of kind 'undo' are written by EncounterStore.undo")):
        await step(store, record.id, "undo", 1)
    assert (await store.get(record.id)).revision == 0
    assert await store.steps(record.id) == []


# -- revisions and concurrency --------------------------------------------------------------
async def test_a_write_naming_an_older_revision_is_stale_and_changes_nothing(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1, expected=0)
    with pytest.raises(StaleRevision) as caught:
        await step(store, record.id, "declare", 2, expected=0)
    assert (caught.value.id, caught.value.revision, caught.value.expected) == (
        record.id, 1, 0)
    assert str(caught.value) == (
        f"encounter {record.id!r} is at revision 1, the write expected 0")
    with pytest.raises(StaleRevision):
        await step(store, record.id, "declare", 2, expected=5)
    current = await store.get(record.id)
    assert (current.revision, current.state) == (1, {"n": 1})
    assert len(await store.steps(record.id)) == 1


async def test_twenty_racing_writers_on_one_revision_exactly_one_wins(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    outcomes = await asyncio.gather(
        *(step(store, record.id, "declare", n, expected=0) for n in range(1, 21)),
        return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, EncounterRecord)]
    losers = [o for o in outcomes if isinstance(o, StaleRevision)]
    assert len(winners) == 1 and len(losers) == 19
    assert all(loser.revision == 1 for loser in losers)
    log = await store.steps(record.id)
    assert len(log) == 1 and log[0].state == winners[0].state


async def test_racing_writers_in_two_connections_on_one_file_exactly_one_wins(
        tmp_path: pathlib.Path) -> None:
    # Two daemons sharing the file: BEGIN IMMEDIATE plus the busy timeout serialise them.
    path = tmp_path / "store.sqlite3"
    async with SQLiteStore(path) as first, SQLiteStore(path) as second:
        record = await first.create("revised-2e", None, {}, {"n": 0})
        outcomes = await asyncio.gather(
            *(step(first if n % 2 else second, record.id, "declare", n, expected=0)
              for n in range(1, 21)),
            return_exceptions=True)
        assert sum(isinstance(o, EncounterRecord) for o in outcomes) == 1
        assert sum(isinstance(o, StaleRevision) for o in outcomes) == 19
        assert len(await second.steps(record.id)) == 1


async def test_racing_creates_and_undos_in_two_connections_on_one_file_all_land(
        tmp_path: pathlib.Path) -> None:
    """Every write takes the file's write lock at once (``BEGIN IMMEDIATE``): creates
    from two daemons sharing the file all land, and racing undos each undo a resolve
    of their own until none is left, none refused as busy."""
    path = tmp_path / "store.sqlite3"
    async with SQLiteStore(path) as first, SQLiteStore(path) as second:
        created = await asyncio.gather(
            *((first if n % 2 else second).create("revised-2e", f"e{n}", {}, {"n": 0})
              for n in range(20)))
        assert len({r.id for r in created}) == 20 and len(await first.list()) == 20
        id = created[0].id
        for n in range(1, 5):
            await step(first, id, "resolve", n)
        outcomes = await asyncio.gather(
            *((first if n % 2 else second).undo(id, expected_revision=None)
              for n in range(8)),
            return_exceptions=True)
        assert sorted(o[1].revision for o in outcomes if isinstance(o, tuple)) == [1, 2, 3, 4]
        assert sum(isinstance(o, NothingToUndo) for o in outcomes) == 4
        assert (await second.get(id)).state == {"n": 0}


async def test_racing_deletes_and_appends_in_two_connections_on_one_file_all_land(
        tmp_path: pathlib.Path) -> None:
    """A delete takes the file's write lock at once (``BEGIN IMMEDIATE``) as well: while
    the other daemon sharing the file writes, it waits its turn instead of finding its
    read out of date and being refused as busy."""
    path = tmp_path / "store.sqlite3"
    async with SQLiteStore(path) as first, SQLiteStore(path) as second:
        ids = [(await first.create("revised-2e", None, {}, {"n": 0})).id
               for _ in range(20)]
        await asyncio.gather(
            *((first if n % 2 else second).delete(id) for n, id in enumerate(ids[:10])),
            *(step(second if n % 2 else first, id, "declare", 1)
              for n, id in enumerate(ids[10:])))
        assert [(r.id, r.revision) for r in await second.list()] == [
            (id, 1) for id in ids[10:]]


async def test_a_new_stores_schema_is_made_under_the_files_write_lock(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``open`` reads the schema version again and migrates under the file's write lock
    (``BEGIN IMMEDIATE``): a second daemon opening the same new file meanwhile waits for
    it, then finds the schema made, instead of reading version 0 too and making the
    tables a second time."""
    path = tmp_path / "store.sqlite3"
    migrate = store_module._migrate
    others: list[str] = []

    async def watched(db: Any, version: int) -> int:
        # what another process trying to write the file finds while the schema is made
        with contextlib.closing(sqlite3.connect(path, timeout=0,
                                                isolation_level=None)) as other:
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                others.append("could write")
            except sqlite3.OperationalError as error:
                others.append(str(error))
        return await migrate(db, version)

    monkeypatch.setattr(store_module, "_migrate", watched)
    async with SQLiteStore(path) as store:
        assert await store.list() == []
    assert others == ["database is locked"]


async def test_concurrent_appends_to_different_encounters_all_land(
        store: SQLiteStore) -> None:
    ids = [(await store.create("power-pool", None, {}, {"n": 0})).id for _ in range(10)]

    async def writer(id: str) -> None:
        for n in range(1, 11):
            await step(store, id, "declare", n, expected=n - 1)

    await asyncio.gather(*(writer(id) for id in ids))
    for id in ids:
        log = await store.steps(id)
        assert [s.state["n"] for s in log] == list(range(1, 11))
        assert (await store.get(id)).revision == 10
    assert store._running == set()  # a finished transaction is not kept


async def test_a_cancelled_caller_leaves_the_write_whole_and_the_store_usable(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    task = asyncio.ensure_future(step(store, record.id, "declare", 1, expected=0))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The write was either committed whole or not at all, and nothing was left open.
    current = await store.get(record.id)
    assert len(await store.steps(record.id)) == current.revision
    after = await step(store, record.id, "declare", 2, expected=current.revision)
    assert after.revision == current.revision + 1


async def test_a_write_begun_before_its_caller_was_cancelled_is_committed_whole(
        store: SQLiteStore) -> None:
    """Module docstring: each transaction runs in its own task shielded from the
    caller's cancellation (a client hung up), so once begun it ends with COMMIT."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    task = asyncio.ensure_future(step(store, record.id, "declare", 1, expected=0))
    while not store._lock.locked():  # the transaction has begun
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    current = await store.get(record.id)
    assert (current.revision, current.state) == (1, {"n": 1})
    assert [s.state for s in await store.steps(record.id)] == [{"n": 1}]


@pytest.mark.parametrize(("expected", "revision"), [(0, 1), (5, 0)],
                         ids=["taken", "refused"])
async def test_closing_first_finishes_the_write_of_a_cancelled_caller(
        tmp_path: pathlib.Path, expected: int, revision: int) -> None:
    """``close``: "Finish writes in flight and release the store", a write whose caller
    was cancelled before its transaction began included; a refused one (a stale
    revision) too, without raising that write's error (no caller is left to take it)
    or leaving the store open."""
    path = tmp_path / "store.sqlite3"
    store = SQLiteStore(path)
    await store.open()
    record = await store.create("revised-2e", None, {}, {"n": 0})
    task = asyncio.ensure_future(step(store, record.id, "declare", 1, expected=expected))
    await asyncio.sleep(0)  # the write is handed to its own task, which has not run yet
    task.cancel()
    await store.close()
    with pytest.raises(asyncio.CancelledError):
        await task
    # closed: SQLite folded its write-ahead log into the file and removed it
    assert not pathlib.Path(f"{path}-wal").exists()
    with pytest.raises(StoreUnavailable, match="is not open"):
        await store.list()
    async with SQLiteStore(path) as again:
        assert (await again.get(record.id)).revision == revision


async def test_a_refused_write_of_a_cancelled_caller_logs_no_unretrieved_exception(
        store: SQLiteStore, caplog: pytest.LogCaptureFixture) -> None:
    """The shielded task's StaleRevision reaches no caller: it is retrieved all the same,
    so asyncio does not log "Task exception was never retrieved" as a fault."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    task = asyncio.ensure_future(step(store, record.id, "declare", 1, expected=5))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await store.get(record.id)).revision == 0  # the refused write has ended
    del task
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


# -- undo ---------------------------------------------------------------------------------------
async def test_undo_returns_exactly_to_the_state_before_the_resolve(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1)
    await step(store, record.id, "resolve", 2)
    before_resolve = (await store.steps(record.id))[0].state
    undone_record, undone = await store.undo(record.id, expected_revision=2)
    assert undone_record.revision == 3
    assert undone_record.state == before_resolve == {"n": 1}
    assert await store.get(record.id) == undone_record
    assert (undone.revision, undone.kind, undone.undone_by) == (2, "resolve", 3)
    log = await store.steps(record.id)
    assert log[1].undone_by == 3
    assert (log[2].kind, log[2].params, log[2].state, log[2].rolls) == (
        "undo", {"undoes": 2}, {"n": 1}, [])


async def test_undo_twice_in_a_row_undoes_two_resolves_then_nothing_is_left(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "resolve", 1)
    await step(store, record.id, "declare", 2)
    await step(store, record.id, "resolve", 3)
    first, undone_first = await store.undo(record.id, expected_revision=None)
    assert (first.state, undone_first.revision) == ({"n": 2}, 3)
    second, undone_second = await store.undo(record.id, expected_revision=None)
    # A resolve at revision 1 goes back to the state the encounter was created with.
    assert (second.state, undone_second.revision, second.revision) == ({"n": 0}, 1, 5)
    with pytest.raises(NothingToUndo):
        await store.undo(record.id, expected_revision=None)
    # The second undo reverts everything from revision 1 on, the first undo included.
    assert [s.undone_by for s in await store.steps(record.id)] == [5, 5, 4, 5, None]


async def test_undo_discards_declarations_made_after_the_resolve(store: SQLiteStore) -> None:
    # Documented: the state is exactly the one before the resolve, so the declarations
    # that resolve consumed are pending again and later ones are gone with it.
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1)
    await step(store, record.id, "resolve", 2)
    await step(store, record.id, "declare", 3)
    await step(store, record.id, "declare", 4)
    reverted, undone = await store.undo(record.id, expected_revision=4)
    assert reverted.state == {"n": 1} and undone.revision == 2
    # The later declarations are marked too: their effect is gone with the resolve.
    assert [s.undone_by for s in await store.steps(record.id)] == [None, 5, 5, 5, None]
    # A new resolve after the undo can be undone in its turn, back to the same state.
    await step(store, record.id, "resolve", 6)
    again, undone_again = await store.undo(record.id, expected_revision=6)
    assert again.state == {"n": 1} and undone_again.revision == 6


async def test_undo_over_a_log_missing_the_step_before_the_resolve_is_corrupt(
        store: SQLiteStore) -> None:
    """The state to go back to is the one after the step before the resolve: a log
    without that step is damaged, and nothing is written."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1)
    await step(store, record.id, "resolve", 2)
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        raw.execute("DELETE FROM steps WHERE revision = 1")
        raw.commit()
    with pytest.raises(StoreCorrupt, match=f"encounter '{record.id}' has no step 1 in its log"):
        await store.undo(record.id, expected_revision=2)
    assert (await store.get(record.id)).revision == 2
    assert [(s.revision, s.undone_by) for s in await store.steps(record.id)] == [(2, None)]


async def test_undo_with_nothing_resolved_or_a_stale_revision_changes_nothing(
        store: SQLiteStore) -> None:
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "declare", 1)
    with pytest.raises(NothingToUndo) as nothing:
        await store.undo(record.id, expected_revision=1)
    assert nothing.value.id == record.id
    await step(store, record.id, "resolve", 2)
    with pytest.raises(StaleRevision) as caught:
        await store.undo(record.id, expected_revision=1)
    assert caught.value.revision == 2
    assert (await store.get(record.id)).revision == 2
    assert [s.undone_by for s in await store.steps(record.id)] == [None, None]


# -- lifetime -----------------------------------------------------------------------------------
async def test_opening_creates_the_folder_and_a_durable_wal_store(
        tmp_path: pathlib.Path) -> None:
    path = tmp_path / "deep" / "er" / "store.sqlite3"
    async with SQLiteStore(path) as store:
        assert path.is_file()
        # The durability choice of the module docstring, as the connection runs it.
        assert await pragma(store, "journal_mode") == "wal"
        assert await pragma(store, "synchronous") == 2  # FULL
    with contextlib.closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # "MSCP": a store made by any earlier version is recognised as one
        assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID == (
            int.from_bytes(b"MSCP", "big"))


async def test_reopening_after_close_keeps_everything(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.sqlite3"
    async with SQLiteStore(path) as store:
        record = await store.create("power-pool", "kept", {"x": 1}, {"n": 0})
        await step(store, record.id, "resolve", 1)
        await step(store, record.id, "declare", 2)
        await store.undo(record.id, expected_revision=None)
        before = (await store.list(), await store.steps(record.id))
    async with SQLiteStore(path) as store:
        assert (await store.list(), await store.steps(record.id)) == before
        assert (await step(store, record.id, "declare", 4, expected=3)).revision == 4


async def test_opening_a_store_that_is_open_already_is_refused(store: SQLiteStore) -> None:
    db = store._db
    with pytest.raises(RuntimeError, match="the store is already open"):
        await store.open()
    assert store._db is db
    assert await store.list() == []


async def test_a_connection_closed_under_the_store_gives_store_unavailable(
        store: SQLiteStore) -> None:
    """aiosqlite answers ValueError on a closed connection: the store's word for it is
    StoreUnavailable, as for every refused call."""
    assert store._db is not None
    await store._db.close()
    with pytest.raises(StoreUnavailable, match="listing encounters: "):
        await store.list()


async def test_a_refused_open_leaves_the_store_closed_and_to_be_opened_again(
        tmp_path: pathlib.Path) -> None:
    """StoreCorrupt says to move the file aside: done, the same store opens, and until
    then it is a store that is not open, not one holding the refused connection."""
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + b"\xa5" * 4080)
    store = SQLiteStore(path)
    with pytest.raises(StoreCorrupt):
        await store.open()
    with pytest.raises(StoreUnavailable, match="is not open"):
        await store.list()
    path.rename(tmp_path / "aside.sqlite3")
    await store.open()
    try:
        assert await store.list() == []
    finally:
        await store.close()


async def test_a_closed_store_refuses_calls(tmp_path: pathlib.Path) -> None:
    store = SQLiteStore(tmp_path / "store.sqlite3")
    await store.open()
    await store.close()
    await store.close()
    with pytest.raises(StoreUnavailable):
        await store.list()


# -- files that are not stores ---------------------------------------------------------------
@pytest.mark.parametrize("cut", ["magic", "header", "half"])
async def test_a_truncated_file_is_corrupt_and_left_untouched(
        tmp_path: pathlib.Path, cut: str) -> None:
    path = tmp_path / "store.sqlite3"
    await filled_store(path)
    size = path.stat().st_size
    os.truncate(path, {"magic": 10, "header": 50, "half": size // 2}[cut])
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert caught.value.path == str(path)
    assert str(caught.value) == (
        f"{path} is not a usable Mindscape store: {caught.value.problem}. It was left "
        "untouched; move it aside (or restore a backup) to start with an empty store.")
    if cut != "half":
        # docs/RELIABILITY.md: a file cut inside its header, even inside the first 16
        # bytes ("SQLite format 3"), is named truncated, with its size
        assert caught.value.problem.startswith(
            f"it is truncated: {path.stat().st_size} bytes, shorter than the 100-byte")
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("loss", ["cut to nothing", "deleted"])
async def test_a_lost_store_beside_its_write_ahead_log_is_corrupt_and_left_untouched(
        tmp_path: pathlib.Path, loss: str) -> None:
    """RELIABILITY.md: never a silent reset. After a kill -9 the steps since the last
    checkpoint are in the -wal file; a store file then cut to 0 bytes or deleted would
    open as a new store, and SQLite would delete that log with them."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    crashed.mkdir()
    store = SQLiteStore(live / "store.sqlite3")
    await store.open()
    try:
        record = await store.create("revised-2e", None, {}, {"n": 0})
        await step(store, record.id, "declare", 1)
        # the files as a kill -9 leaves them: the connection never closed
        for name in ("store.sqlite3", "store.sqlite3-wal"):
            shutil.copyfile(live / name, crashed / name)
    finally:
        await store.close()
    assert (crashed / "store.sqlite3-wal").stat().st_size > WAL_HEADER_SIZE
    path = crashed / "store.sqlite3"
    saved = path.read_bytes()
    if loss == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"")
    before = fingerprint(crashed)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert caught.value.problem.startswith(
        f"it is {'missing' if loss == 'deleted' else 'empty'}, yet the write-ahead log "
        "store.sqlite3-wal beside it holds ")
    assert fingerprint(crashed) == before
    # put back, the two files hold the acknowledged step
    path.write_bytes(saved)
    async with SQLiteStore(path) as again:
        assert (await again.get(record.id)).revision == 1


async def _a_wal_header(tmp_path: pathlib.Path) -> bytes:
    """The first 32 bytes of a real write-ahead log: its header, no frames."""
    live = tmp_path / "live"
    store = SQLiteStore(live / "store.sqlite3")
    await store.open()
    try:
        record = await store.create("revised-2e", None, {}, {"n": 0})
        await step(store, record.id, "declare", 1)
        header = (live / "store.sqlite3-wal").read_bytes()[:32]
    finally:
        await store.close()
    assert len(header) == 32
    return header


@pytest.mark.parametrize("loss", ["cut to nothing", "deleted"])
async def test_a_lost_store_beside_a_write_ahead_log_of_only_its_header_opens_as_new(
        tmp_path: pathlib.Path, loss: str) -> None:
    """A -wal of exactly its 32-byte header holds no frames: no step is lost with the
    store, which opens as a new one; a byte more is refused as a log with frames."""
    header = await _a_wal_header(tmp_path)
    assert WAL_HEADER_SIZE == 32
    folder = tmp_path / "home"
    folder.mkdir()
    path, wal = folder / "store.sqlite3", folder / "store.sqlite3-wal"
    if loss == "cut to nothing":
        path.write_bytes(b"")
    wal.write_bytes(header + b"\0")
    before = fingerprint(folder)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert "yet the write-ahead log store.sqlite3-wal beside it holds 33 bytes" in (
        caught.value.problem)
    assert fingerprint(folder) == before
    wal.write_bytes(header)
    async with SQLiteStore(path) as store:
        assert await store.list() == []
        record = await store.create("revised-2e", None, {}, {"n": 0})
    async with SQLiteStore(path) as again:
        assert (await again.get(record.id)).revision == 0


async def test_a_write_ahead_log_that_cannot_be_looked_at_is_store_unavailable(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside a missing store, a -wal whose size cannot be read (not for being missing)
    stops the open: whether it holds frames is unknown."""
    folder = tmp_path / "home"
    folder.mkdir()
    path = folder / "store.sqlite3"
    real_stat = pathlib.Path.stat

    def stat(self: pathlib.Path, **kwargs: Any) -> os.stat_result:
        if self.name == "store.sqlite3-wal":
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, **kwargs)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    with pytest.raises(StoreUnavailable) as caught:
        await SQLiteStore(path).open()
    assert f"cannot read {folder / 'store.sqlite3-wal'}: " in str(caught.value)
    assert "Permission denied" in str(caught.value)
    monkeypatch.undo()
    assert not path.exists()


async def test_a_store_path_that_cannot_be_read_or_made_is_store_unavailable(
        tmp_path: pathlib.Path) -> None:
    """A folder where the store file should be, or a file where its folder should be:
    the disk refuses, and nothing is changed."""
    folder = tmp_path / "store.sqlite3"
    folder.mkdir()
    with pytest.raises(StoreUnavailable, match=re.escape(f"cannot read {folder}: ")):
        await SQLiteStore(folder).open()
    blocker = tmp_path / "home"
    blocker.write_bytes(b"a file, not a folder")
    with pytest.raises(StoreUnavailable, match="cannot create the folder of "):
        await SQLiteStore(blocker / "store.sqlite3").open()
    assert list(folder.iterdir()) == [] and blocker.read_bytes() == b"a file, not a folder"


async def test_a_file_with_the_sqlite_header_sqlite_cannot_read_is_corrupt_untouched(
        tmp_path: pathlib.Path) -> None:
    """Past the check of its first bytes, SQLite itself says "file is not a database"
    (SQLITE_NOTADB): damage retrying cannot mend, so StoreCorrupt, not StoreUnavailable."""
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + b"\xa5" * 4080)
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt, match="file is not a database"):
        await SQLiteStore(path).open()
    assert fingerprint(tmp_path) == before


async def test_a_garbage_file_is_corrupt_and_left_untouched(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"these are not the tables you are looking for\n" * 200)
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert "not a SQLite database" in caught.value.problem
    assert fingerprint(tmp_path) == before


async def test_a_store_failing_quick_check_is_corrupt_and_left_untouched(
        tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.sqlite3"
    await filled_store(path)
    with path.open("r+b") as file:
        # Scribble over the second page: a b-tree page of the schema's tables.
        file.seek(4096)
        file.write(b"\xa5" * 4096)
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt):
        await SQLiteStore(path).open()
    assert fingerprint(tmp_path) == before


async def test_a_store_whose_schema_is_malformed_is_corrupt_and_left_untouched(
        tmp_path: pathlib.Path) -> None:
    """SQLite says SQLITE_CORRUPT in words of its own here ("malformed database schema"):
    the code, not only the usual wording, makes it StoreCorrupt, never a retryable
    StoreUnavailable."""
    path = tmp_path / "store.sqlite3"
    await filled_store(path)
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA writable_schema = ON")
        raw.execute("UPDATE sqlite_schema SET sql = 'CREATE TABLE steps (' "
                    "WHERE name = 'steps'")
        raw.commit()
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt, match="malformed database schema"):
        await SQLiteStore(path).open()
    assert fingerprint(tmp_path) == before


async def test_another_programs_database_or_an_unknown_schema_is_corrupt(
        tmp_path: pathlib.Path) -> None:
    foreign = tmp_path / "foreign.sqlite3"
    with contextlib.closing(sqlite3.connect(foreign)) as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")
        raw.commit()
    future = tmp_path / "future.sqlite3"
    await filled_store(future)
    with contextlib.closing(sqlite3.connect(future)) as raw:
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    threads = set(threading.enumerate())
    for path, problem in ((foreign, "another program"), (future, "schema version")):
        before = fingerprint(tmp_path)
        with pytest.raises(StoreCorrupt) as caught:
            await SQLiteStore(path).open()
        assert problem in caught.value.problem
        assert fingerprint(tmp_path) == before
    # a newer Mindscape's store is no damage: the user is told to update, not to move
    # their encounters aside
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(future).open()
    assert str(caught.value) == (
        f"{future} is not a usable Mindscape store: a newer version of Mindscape wrote it "
        f"(its schema version is {SCHEMA_VERSION + 1}, this version of Mindscape knows 1 "
        f"to {SCHEMA_VERSION}). It was left untouched; update Mindscape to use it, or "
        "start with another home folder (--home) for a new store.")
    # the connection a refused open made is closed (its thread would keep the daemon
    # from exiting)
    for thread in set(threading.enumerate()) - threads:
        thread.join(timeout=5)
        assert not thread.is_alive()


@pytest.mark.parametrize("user_version", [0, 1])
async def test_a_database_with_another_programs_application_id_is_corrupt(
        tmp_path: pathlib.Path, user_version: int) -> None:
    """``PRAGMA application_id`` names the program a SQLite file belongs to: one of
    another program's is never written into, even empty or at our schema version."""
    path = tmp_path / "theirs.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA application_id = 305419896")  # 0x12345678
        raw.execute(f"PRAGMA user_version = {user_version}")
        raw.commit()
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert caught.value.problem == (
        "it is a SQLite database of another program (application_id 0x12345678)")
    assert fingerprint(tmp_path) == before


async def test_a_store_whose_schema_version_was_reset_to_zero_is_corrupt(
        tmp_path: pathlib.Path) -> None:
    """Our application id with schema version 0 is no schema this code knows: it is
    refused as such, not migrated over the tables it holds."""
    path = tmp_path / "store.sqlite3"
    await filled_store(path)
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA user_version = 0")
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert caught.value.problem == (
        f"its schema version is 0, this version of Mindscape knows 1 to {SCHEMA_VERSION}")
    assert fingerprint(tmp_path) == before


async def test_a_file_system_refusing_the_wal_journal_gives_store_unavailable(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The durability of the module docstring needs WAL: where SQLite keeps another
    journal mode (it answers the mode it kept), the store does not open."""
    one = store_module._one

    async def refusing_wal(db: Any, sql: str, params: Any = ()) -> Any:
        if sql == "PRAGMA journal_mode = WAL":
            return ("delete",)
        return await one(db, sql, params)

    monkeypatch.setattr(store_module, "_one", refusing_wal)
    path = tmp_path / "store.sqlite3"
    with pytest.raises(StoreUnavailable, match="does not allow the WAL journal"):
        await SQLiteStore(path).open()


# -- the disk refuses ------------------------------------------------------------------------------
async def test_a_read_only_database_gives_store_unavailable_and_changes_nothing(
        store: SQLiteStore) -> None:
    # Tests run as root, where chmod does not stop writes; PRAGMA query_only makes
    # SQLite itself refuse every write with SQLITE_READONLY, as a read-only file would.
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "resolve", 1)
    before = (await store.get(record.id), await store.steps(record.id))
    db = store._db
    assert db is not None
    await db.execute("PRAGMA query_only = ON")
    with pytest.raises(StoreUnavailable) as caught:
        await step(store, record.id, "declare", 2, expected=1)
    assert "READONLY" in str(caught.value)
    # chained to SQLite's own error (its text quotes nothing stored), which a logged
    # traceback shows
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    for write in (store.undo(record.id, expected_revision=1), store.delete(record.id),
                  store.create("revised-2e", None, {}, {})):
        with pytest.raises(StoreUnavailable):
            await write
    assert (await store.get(record.id), await store.steps(record.id)) == before
    assert len(await store.list()) == 1
    # Rolled back, not left open: once writable again the next revision follows on.
    await db.execute("PRAGMA query_only = OFF")
    assert (await step(store, record.id, "declare", 2, expected=1)).revision == 2


async def test_a_full_disk_gives_store_unavailable_and_changes_nothing(
        store: SQLiteStore) -> None:
    # PRAGMA max_page_count caps the file where it is: SQLite answers SQLITE_FULL,
    # exactly as on a full disk.
    record = await store.create("revised-2e", None, {}, {"n": 0})
    db = store._db
    assert db is not None
    pages = await pragma(store, "page_count")
    await db.execute(f"PRAGMA max_page_count = {pages}")
    big = {"n": 1, "padding": "x" * 200_000}
    with pytest.raises(StoreUnavailable) as caught:
        await store.append(record.id, expected_revision=0, kind="declare", params={},
                           rolls=[], result=None, state=big)
    assert "FULL" in str(caught.value)
    assert (await store.get(record.id)).revision == 0
    assert await store.steps(record.id) == []
    await db.execute("PRAGMA max_page_count = 1073741823")
    assert (await store.append(record.id, expected_revision=0, kind="declare", params={},
                               rolls=[], result=None, state=big)).revision == 1


async def test_a_read_only_folder_gives_store_unavailable_and_changes_nothing(
        tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "home"
    path = folder / "store.sqlite3"
    await filled_store(path)
    before = fingerprint(folder)
    with unwritable(path, folder):
        with pytest.raises(StoreUnavailable):
            await SQLiteStore(path).open()
        assert fingerprint(folder) == before


async def test_a_new_store_in_a_read_only_folder_gives_store_unavailable(
        tmp_path: pathlib.Path) -> None:
    """No store yet, and a folder SQLite cannot make it in: the connection itself is
    refused, and that is StoreUnavailable as well."""
    folder = tmp_path / "home"
    folder.mkdir()
    with unwritable(folder):
        with pytest.raises(StoreUnavailable, match=re.escape(
                "opening the store in ")):
            await SQLiteStore(folder / "store.sqlite3").open()
        assert list(folder.iterdir()) == []


@pytest.mark.parametrize("name", ["store.sqlite3", "store.sqlite3-wal"])
async def test_a_store_file_this_user_cannot_write_is_refused_at_open_untouched(
        tmp_path: pathlib.Path, name: str) -> None:
    """A store file another user made (or sudo did) in a folder of ours: SQLite opened it
    read only, so the daemon started, then refused every write, and its -wal and -shm,
    made as unwritable, stopped the next start after the store was put right, naming the
    store. Now the open is refused, naming the file that is not writable and why."""
    folder = tmp_path / "home"
    path = folder / "store.sqlite3"
    await filled_store(path)
    (folder / "store.sqlite3-wal").write_bytes(b"")
    before = fingerprint(folder)
    with unwritable(folder / name):
        with pytest.raises(StoreUnavailable) as caught:
            await SQLiteStore(path).open()
        # the system's short reason, without its errno or the file's name said again
        assert re.search(re.escape(f"cannot write {folder / name} (") + r"[A-Z][a-z ]+\): ",
                         str(caught.value))
        assert fingerprint(folder) == before


@pytest.mark.parametrize("wal", [True, False], ids=["with a -wal", "without a -wal"])
async def test_an_unwritable_shared_memory_file_is_refused_at_open_untouched(
        tmp_path: pathlib.Path, wal: bool) -> None:
    """The -shm beside the store is checked too, also when there is no -wal beside it:
    SQLite would open the store read only, and the daemon refuse every write."""
    folder = tmp_path / "home"
    path = folder / "store.sqlite3"
    await filled_store(path)
    if wal:
        (folder / "store.sqlite3-wal").write_bytes(b"")
    shm = folder / "store.sqlite3-shm"
    shm.write_bytes(b"")
    before = fingerprint(folder)
    with unwritable(shm):
        with pytest.raises(StoreUnavailable) as caught:
            await SQLiteStore(path).open()
        assert f"cannot write {shm} (" in str(caught.value)
        assert fingerprint(folder) == before


@pytest.mark.parametrize("damaged", ["every third overflow page", "one near the end"])
async def test_a_store_failing_quick_check_shows_at_most_five_lines_of_it(
        tmp_path: pathlib.Path, damaged: str) -> None:
    """quick_check answers one row holding a line per damaged page (hundreds in a large
    store): the message, shown on one line at start, keeps five and counts the rest; a
    report of five lines is shown whole."""
    path = tmp_path / "store.sqlite3"
    async with SQLiteStore(path) as opened:
        record = await opened.create("revised-2e", None, {}, {"n": 0})
        for n in range(20):
            await opened.append(record.id, expected_revision=None, kind="declare",
                                params={}, rolls=[], result=None,
                                state={"n": n, "padding": "y" * 20000})
    with contextlib.closing(sqlite3.connect(path)) as db:
        try:
            overflow = [page for (page,) in db.execute(
                "SELECT pageno FROM dbstat WHERE pagetype = 'overflow' ORDER BY pageno")]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table")
    with path.open("r+b") as file:
        # one near the end: the chain's last three pages are left unused, five lines
        for page in overflow[::3] if damaged == "every third overflow page" else overflow[-4:-3]:
            # each one's pointer to the next overflow page: to a page far past the end
            file.seek(4096 * (page - 1))
            file.write(b"\x7f\xa5\xa5\xa5")
    with contextlib.closing(sqlite3.connect(path)) as db:
        [[found]] = db.execute("PRAGMA quick_check").fetchall()
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    problem = caught.value.problem
    assert "\n" not in problem
    if damaged == "one near the end":
        lines = found.splitlines()
        assert len(lines) == 5
        assert problem == "PRAGMA quick_check found: " + "; ".join(lines)
        return
    assert len(found.splitlines()) > 10
    shown, more = re.fullmatch(r"PRAGMA quick_check found: (.*) \(and (\d+) more lines\)",
                               problem).groups()  # type: ignore[union-attr]
    assert len(shown.split("; ")) == 5
    assert 5 + int(more) == len([line for line in found.splitlines() if line.strip()])


async def test_a_store_failing_quick_check_in_many_rows_shows_lines_of_each(
        tmp_path: pathlib.Path) -> None:
    """quick_check also answers a row per value that breaks its column's NOT NULL: the
    message takes its five lines from all the rows, not from the first alone, and counts
    the rest."""
    path = tmp_path / "store.sqlite3"
    await filled_store(path)
    with contextlib.closing(sqlite3.connect(path)) as raw:
        [schema] = raw.execute("SELECT sql FROM sqlite_schema WHERE name = 'steps'"
                               ).fetchone()
        nullable = schema.replace("kind         TEXT NOT NULL", "kind TEXT").replace(
            "state        TEXT NOT NULL", "state TEXT")
        assert nullable.count("NOT NULL") == schema.count("NOT NULL") - 2
        for sql in (nullable, schema):  # the NULLs written past the schema's rule
            raw.execute("PRAGMA writable_schema = ON")
            raw.execute("UPDATE sqlite_schema SET sql = ? WHERE name = 'steps'", (sql,))
            raw.commit()
            raw.execute("PRAGMA writable_schema = RESET")
            if sql == nullable:
                raw.execute("UPDATE steps SET kind = NULL, state = NULL WHERE revision <= 3")
                raw.commit()
        rows = raw.execute("PRAGMA quick_check").fetchall()
    assert rows == [("NULL value in steps.kind",), ("NULL value in steps.state",)] * 3
    before = fingerprint(tmp_path)
    with pytest.raises(StoreCorrupt) as caught:
        await SQLiteStore(path).open()
    assert caught.value.problem == "PRAGMA quick_check found: " + "; ".join(
        ["NULL value in steps.kind", "NULL value in steps.state"] * 2
        + ["NULL value in steps.kind"]) + " (and 1 more lines)"
    assert fingerprint(tmp_path) == before


SECRET = "SECRET-CHOICE-mind-thrust-at-fenka"


async def _not_utf_8(path: pathlib.Path, sql: str, *args: object) -> None:
    """Run ``sql`` with the text ``SECRET`` plus a byte that is not UTF-8 as its first
    parameter, from a second connection (as damage on disk would have it)."""
    text = ('{"pending":{"ulcen":"' + SECRET + '"}}').encode() + b"\xff"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(sql, (text, *args))
        db.commit()


async def test_a_stored_column_that_is_not_json_is_corrupt(store: SQLiteStore) -> None:
    """Named by its step, whether the log is read whole or a step in full after its
    outline."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "resolve", 1)
    outline = await store.steps(record.id, details=())
    with contextlib.closing(sqlite3.connect(store.path)) as raw:
        raw.execute("UPDATE steps SET params = '{\"n\": 1'")
        raw.commit()
    damaged = re.escape(f"encounter '{record.id}' step 1: column params is not JSON")
    with pytest.raises(StoreCorrupt, match=damaged):
        await store.steps(record.id)
    with pytest.raises(StoreCorrupt, match=damaged):
        [s async for s in store.step_details(record.id, outline)]


@pytest.mark.parametrize("read", ["get", "steps", "step_states", "list", "undo"])
async def test_stored_text_that_is_not_utf_8_is_corrupt_and_never_quoted(
        store: SQLiteStore, read: str) -> None:
    """Python's sqlite3 error for such text quotes it, and a state snapshot holds the
    secret choices: the store reports StoreCorrupt (retrying cannot mend it; not
    StoreUnavailable, which clients may retry), naming the column only, with no cause
    chained that would put the text in a logged traceback."""
    record = await store.create("revised-2e", None, {}, {"n": 0})
    await step(store, record.id, "resolve", 1)
    await step(store, record.id, "declare", 2)
    await _not_utf_8(store.path, "UPDATE encounters SET state = CAST(? AS TEXT)")
    await _not_utf_8(store.path, "UPDATE steps SET state = CAST(? AS TEXT)")
    calls = {"get": lambda: store.get(record.id), "steps": lambda: store.steps(record.id),
             "step_states": lambda: states_of(store, record.id, [1, 2]),
             "list": store.list, "undo": lambda: store.undo(record.id,
                                                           expected_revision=None)}
    with pytest.raises(StoreCorrupt) as caught:
        await calls[read]()
    error = caught.value
    assert "column 'state' holds text that is not UTF-8" in str(error)
    assert error.__cause__ is None and error.__suppress_context__
    assert SECRET not in str(error)


async def test_damage_found_while_running_is_not_a_retryable_answer_nor_logged_text(
        rpc: Rpc, settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    """API.md "Errors": 5003 means "the change was rolled back and may be retried";
    damaged content is no such case. A state that is not UTF-8 is -32603 with an error
    id, and no log line quotes the stored text (the secret choice in it), not even at
    DEBUG, where aiosqlite would log every statement with its parameters."""
    with caplog.at_level(logging.DEBUG):
        created = await rpc.ok("encounter.create", {"system": "sample-duel"})
        await rpc.ok("encounter.add", {"id": created["id"], "combatant": {
            "id": "a", "name": SECRET}})
        await _not_utf_8(settings.store_path, "UPDATE encounters SET state = "
                                              "CAST(? AS TEXT) WHERE id = ?", created["id"])
        error = await rpc.error("encounter.get", {"id": created["id"]})
    assert error["code"] == -32603 and set(error["data"]) == {"error_id"}
    logged = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    assert error["data"]["error_id"] in json.dumps([getattr(r, "fields", None)
                                                    for r in caplog.records])
    assert "not UTF-8" in logged and SECRET not in logged


async def test_a_stopped_daemon_leaves_its_store_whole_in_one_file(
        rpc: Rpc, settings: Settings) -> None:
    """docs/API.md: the -wal and -shm are beside the store while the daemon runs; once it
    has stopped, the store is closed and the one file holds every step (it may be copied
    alone)."""
    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    await rpc.ok("encounter.add", {"id": created["id"], "combatant": {"id": "a",
                                                                      "name": "A"}})
    path = settings.store_path
    assert pathlib.Path(f"{path}-wal").exists()
    await rpc.client.close()
    assert not pathlib.Path(f"{path}-wal").exists()
    assert not pathlib.Path(f"{path}-shm").exists()
    copy = path.parent / "copy.sqlite3"
    shutil.copyfile(path, copy)
    with contextlib.closing(sqlite3.connect(copy)) as db:
        assert db.execute("SELECT revision FROM encounters").fetchall() == [(1,)]


async def test_store_errors_share_one_root() -> None:
    for error in (UnknownEncounter, StaleRevision, NothingToUndo, StoreCorrupt,
                  StoreUnavailable):
        assert issubclass(error, StoreError)


# -- a killed daemon loses nothing it acknowledged ------------------------------------------------
WRITER = textwrap.dedent("""
    import asyncio, pathlib, sys
    from companion.store import SQLiteStore

    async def main() -> None:
        store = SQLiteStore(pathlib.Path(sys.argv[1]))
        await store.open()
        record = await store.create("revised-2e", None, {}, {"n": 0})
        print("id", record.id, flush=True)
        n = 0
        while True:
            n += 1
            record = await store.append(
                record.id, expected_revision=n - 1, kind="declare", params={"n": n},
                rolls=[n], result=None, state={"n": n})
            print("ack", record.revision, flush=True)

    asyncio.run(main())
""")


async def test_every_acknowledged_step_survives_sigkill(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines: list[list[str]] = []
    try:
        for line in process.stdout:
            lines.append(line.split())
            if line.startswith("ack 25"):
                # Killed right after an acknowledgement, mid-way through the next write.
                os.kill(process.pid, signal.SIGKILL)
                break
        # Acknowledgements printed before the kill but not read yet count as well.
        lines.extend(line.split() for line in process.stdout)
    finally:
        process.kill()
        process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    id = lines[0][1]
    acknowledged = [int(words[1]) for words in lines[1:] if words[0] == "ack"]
    assert acknowledged[:25] == list(range(1, 26))
    async with SQLiteStore(path) as store:
        record = await store.get(id)
        log = await store.steps(id)
    assert record.revision >= acknowledged[-1]
    assert [s.state for s in log[: acknowledged[-1]]] == [
        {"n": n} for n in range(1, acknowledged[-1] + 1)]
    assert len(log) == record.revision and record.state == {"n": record.revision}


def _snapshot_with_log(folder: pathlib.Path, restart: bool) -> pathlib.Path:
    """A store file and its write-ahead log copied while a connection still has them
    open (as a kill leaves them): 30 commits; with ``restart``, 40 commits checkpointed
    and then 3 more, written from the log's start over the older frames, which stay
    past them with other salts. The copy of the store file."""
    live = folder / "live.sqlite3"
    db = sqlite3.connect(live, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE t (x TEXT)")
    for number in range(40 if restart else 30):
        db.execute("INSERT INTO t VALUES (?)", (str(number) * 500,))
    if restart:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        for number in range(3):
            db.execute("INSERT INTO t VALUES (?)", (str(number),))
    copy = folder / "copy.sqlite3"
    shutil.copyfile(live, copy)
    shutil.copyfile(folder / "live.sqlite3-wal", folder / "copy.sqlite3-wal")
    db.close()
    return copy


@pytest.mark.parametrize("restart", [False, True], ids=["one run", "restarted log"])
def test_a_sound_write_ahead_log_is_not_taken_for_a_damaged_one(
        tmp_path: pathlib.Path, restart: bool) -> None:
    """The frames of a log all count (and a restarted log's older frames, with other
    salts, are none of its own): SQLite's checksum as ``_check_log_frames`` reads it
    agrees with SQLite."""
    copy = _snapshot_with_log(tmp_path, restart)
    store_module._check_log_frames(copy)
    rows = sqlite3.connect(copy).execute("SELECT count(*) FROM t").fetchone()[0]
    assert rows == (43 if restart else 30)


def test_a_write_ahead_log_damaged_before_commits_is_refused_untouched(
        tmp_path: pathlib.Path) -> None:
    copy = _snapshot_with_log(tmp_path, False)
    wal = tmp_path / "copy.sqlite3-wal"
    data = bytearray(wal.read_bytes())
    data[32 + 24 + 200] ^= 0xFF  # in the page of the first frame
    wal.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt, match=re.escape(
            "write-ahead log copy.sqlite3-wal is damaged at frame 1: SQLite would read it "
            "only up to there and drop the 31 transactions")):  # the table and 30 rows
        store_module._check_log_frames(copy)
    assert wal.read_bytes() == bytes(data)


def test_a_large_write_ahead_log_is_checked_a_frame_at_a_time(
        tmp_path: pathlib.Path) -> None:
    """A log grows past any size while checkpoints cannot run: reading it whole took as
    much memory as the log (149 MB for a 149 MB log). A frame at a time, the check of a
    4 MB log damaged half-way takes a small fraction of that, and still counts every
    commit past the damage."""
    live = tmp_path / "live.sqlite3"
    db = sqlite3.connect(live, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE t (x TEXT)")
    for number in range(150):
        db.execute("INSERT INTO t VALUES (?)", (str(number) * 9000,))
    copy = tmp_path / "copy.sqlite3"
    shutil.copyfile(live, copy)
    wal = tmp_path / "copy.sqlite3-wal"
    shutil.copyfile(tmp_path / "live.sqlite3-wal", wal)
    db.close()
    data = bytearray(wal.read_bytes())
    assert len(data) > 4_000_000
    page_size = struct.unpack(">I", data[8:12])[0]
    frames = (len(data) - 32) // (24 + page_size)
    commits = [number for number in range(1, frames + 1) if struct.unpack(
        ">I", data[32 + (number - 1) * (24 + page_size) + 4:][:4])[0]]
    middle = frames // 2
    data[32 + (middle - 1) * (24 + page_size) + 24 + 100] ^= 0xFF
    wal.write_bytes(bytes(data))
    lost = len([number for number in commits if number >= middle])
    del data
    tracemalloc.start()
    try:
        with pytest.raises(StoreCorrupt, match=re.escape(
                f"damaged at frame {middle}: SQLite would read it only up to there and "
                f"drop the {lost} transactions")):
            store_module._check_log_frames(copy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak


def test_a_write_ahead_log_header_saying_page_size_1_is_left_to_sqlite(
        tmp_path: pathlib.Path) -> None:
    """A log's header holds its page size as a whole 32-bit number (65536 as 65536):
    SQLite ignores a log whose header says 1, as any size below 512, and keeps the
    store as it is. So must the check, not read it as 64 KiB frames and refuse the
    commits it would find in them (https://www.sqlite.org/fileformat.html, "WAL File
    Format"; sqlite's wal.c, walIndexRecover)."""
    path = tmp_path / "store.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA journal_mode = WAL")  # the log is read, the store says so
        raw.execute("CREATE TABLE t (x TEXT)")
        raw.execute("INSERT INTO t VALUES ('kept')")
        raw.commit()
    salts = (7, 9)
    head = struct.pack(">6I", 0x377F0683, 3007000, 1, 0, *salts)
    header = head + struct.pack(">2I", *store_module._wal_checksum(head, ">", (0, 0)))
    # three 64 KiB frames with the header's salts: the first with a checksum that
    # fails, then two commits
    frames = b"".join(struct.pack(">6I", 2, commit, *salts, 0, 0) + bytes(65536)
                      for commit in (0, 2, 2))
    wal = tmp_path / "store.sqlite3-wal"
    wal.write_bytes(header + frames)
    store_module._check_log_frames(path)
    with contextlib.closing(sqlite3.connect(path)) as raw:
        assert raw.execute("SELECT x FROM t").fetchall() == [("kept",)]


async def test_checkpoints_and_log_restarts_keep_the_files_a_write_checks(
        tmp_path: pathlib.Path) -> None:
    """SQLite empties its write-ahead log in place (a log restarted after the automatic
    checkpoint, a checkpoint's TRUNCATE, journal_size_limit), so the path keeps the
    inode ``_check_files`` took at the open: a long run of writes across all of these
    is never refused, and a log deleted after them still is."""
    path = tmp_path / "store.sqlite3"
    wal = tmp_path / "store.sqlite3-wal"
    async with SQLiteStore(path) as store:
        opened = store_module._identity(wal)
        assert opened is not None  # made by the open
        db = store._db
        assert db is not None
        record = await store.create("revised-2e", "long run", {}, {"n": 0})
        salts, sizes = set(), set()
        for n in range(1, 801):
            if n == 401:
                await db.execute("PRAGMA journal_size_limit = 0")
            record = await store.append(record.id, expected_revision=None, kind="declare",
                                        params={"padding": "x" * 4000}, rolls=[],
                                        result=None, state={"n": n})
            header = wal.read_bytes()[:32]
            salts.add(header[16:20])
            sizes.add(wal.stat().st_size)
            if n > 400 and n % 50 == 0:
                await db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                assert wal.stat().st_size == 0
            if n % 150 == 0:
                other = await store.create("revised-2e", None, {}, {"n": 0})
                await store.delete(other.id)
        assert store_module._identity(wal) == opened
        assert record.revision == 800
        # the first 400 grew the log past the automatic checkpoint's 1000 pages and
        # restarted it (new salts) more than once
        assert max(sizes) > 1000 * 4096 and len(salts) > 3
        wal.unlink()
        with pytest.raises(StoreUnavailable, match="was deleted or replaced") as caught:
            await store.append(record.id, expected_revision=None, kind="declare",
                               params={}, rolls=[], result=None, state={"n": 801})
        assert caught.value.retry is False
        assert (await store.get(record.id)).revision == 800  # reads go on


async def test_every_write_checks_the_files_and_no_read_does(
        store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_check_files`` runs once before every COMMIT of a write (create, append, undo,
    delete) and never for a read, which a missing file does not endanger."""
    calls: list[str] = []
    check = store._check_files
    monkeypatch.setattr(store, "_check_files",
                        lambda doing: (calls.append(doing), check(doing))[1])
    record = await store.create("revised-2e", None, {}, {"n": 0})
    record = await store.append(record.id, expected_revision=None, kind="resolve",
                                params={}, rolls=[], result=None, state={"n": 1})
    await store.undo(record.id, expected_revision=None)
    writes = len(calls)
    assert writes == 3
    await store.get(record.id)
    steps = await store.steps(record.id)
    assert len([detailed async for detailed in store.step_details(record.id, steps)]) == 2
    assert len([state async for state in store.step_states(record.id, [1, 2])]) == 2
    await store.list()
    assert len(calls) == writes
    await store.delete(record.id)
    assert len(calls) == writes + 1
