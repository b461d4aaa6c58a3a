"""Load: many clients at once lose nothing they were told was stored.

API.md "Encounters": "Every step is stored before the call answers, with the dice used,
so encounter.log can replay it and encounter.undo reverts it exactly. Calls that change
an encounter may name the revision they expect (4009 if it moved on)."
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from .conftest import DaemonFactory
from .daemon import Daemon
from .play import (
    STALE,
    SYSTEMS,
    Client,
    Fault,
    Ledger,
    comparable,
    new_encounter,
    play,
    replay,
    run_all,
)

CLIENTS = 16
RACERS = 4
SECONDS = 5.0


async def check_log_holds_every_ack(client: Client, encounter: str, ledger: Ledger,
                                    every_step_acknowledged: bool) -> list[dict[str, Any]]:
    """The log is revisions 1..n, n is the current revision, and each acknowledged
    write is the step of its revision; the log."""
    view = await client.call("encounter.get", {"id": encounter})
    log = (await client.call("encounter.log", {"id": encounter}))["steps"]
    assert [s["revision"] for s in log] == list(range(1, len(log) + 1))
    assert view["revision"] == len(log)
    by_revision = {s["revision"]: s["kind"] for s in log}
    acks = ledger.acked(encounter)
    assert len({a.revision for a in acks}) == len(acks), "two writes acknowledged one revision"
    for ack in acks:
        assert by_revision.get(ack.revision) == ack.kind, (encounter, ack)
    if every_step_acknowledged:
        assert len(acks) == len(log)
    return list(log)


async def test_sixteen_clients_and_racers_lose_no_acknowledged_step(
        shared_daemon: Daemon) -> None:
    daemon = shared_daemon
    ledger = Ledger()
    clients = [Client(daemon.url, daemon.token, ledger) for _ in range(CLIENTS + RACERS)]
    try:
        shared = await new_encounter(clients[0], "combat-strength", "shared")
        watched_from = (await clients[0].call("encounter.get", {"id": shared}))["revision"]
        watcher = asyncio.ensure_future(watch(daemon, shared, SECONDS + 1))
        await asyncio.sleep(0.2)
        deadline = time.monotonic() + SECONDS
        games = [play(clients[i], SYSTEMS[i % len(SYSTEMS)], deadline, f"solo {i}")
                 for i in range(CLIENTS)]
        games += [play(clients[CLIENTS + i], "combat-strength", deadline, encounter=shared)
                  for i in range(RACERS)]
        encounters = await run_all(*games)
        solo = encounters[:CLIENTS]
        assert ledger.faults == []
        kinds = Counter(a.kind for a in ledger.acks)
        assert kinds["declare"] > 0 and kinds["resolve"] > 0 and kinds["undo"] > 0
        for encounter in solo:
            assert encounter is not None
            await check_log_holds_every_ack(clients[0], encounter, ledger, True)
        # Racers only write with the revision they read, so each committed step was
        # acknowledged to exactly one of them; the others got 4009.
        log = await check_log_holds_every_ack(clients[0], shared, ledger, True)
        assert ledger.stale > 0
        # A socket watching the shared encounter heard of every revision it went through
        # ("encounter.changed {id, revision} to every socket that called encounter.watch").
        notified = await watcher
        assert sorted(set(notified)) == list(range(watched_from + 1, len(log) + 1))
        print(f"\nwatcher: {len(notified)} notices, in order: {notified == sorted(notified)}")
        # The log alone rebuilds the state (one encounter of each system, and the
        # shared one).
        for encounter in [*solo[: len(SYSTEMS)], shared]:
            assert encounter is not None
            copy = await replay(clients[0], encounter, ledger.sent_choices)
            assert comparable(await clients[0].call("encounter.get", {"id": copy})) == \
                comparable(await clients[0].call("encounter.get", {"id": encounter}))
        latencies = sorted(ledger.latencies)
        print(f"\n{len(ledger.acks)} acknowledged writes by {CLIENTS + RACERS} clients in "
              f"{SECONDS} s; {len(latencies)} calls, p50 "
              f"{latencies[len(latencies) // 2] * 1000:.1f} ms, p99 "
              f"{latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms; "
              f"{ledger.stale} stale")
    finally:
        await asyncio.gather(*(c.close() for c in clients))


async def watch(daemon: Daemon, encounter: str, seconds: float) -> list[int]:
    """The revisions ``encounter.changed`` announced to one watching socket."""
    revisions: list[int] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(
            daemon.url + "/ws", protocols=("mindscape.v1", f"token.{daemon.token}")) as ws:
        await ws.send_json({"jsonrpc": "2.0", "method": "encounter.watch",
                            "params": {"id": encounter}, "id": 1})
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await ws.receive(timeout=min(left, 1.0))
            except TimeoutError:
                continue
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            data = json.loads(message.data)
            if data.get("method") == "encounter.changed":
                assert data["params"]["id"] == encounter
                revisions.append(int(data["params"]["revision"]))
    return revisions


async def race(clients: list[Client], method: str,
               params: list[dict[str, Any]]) -> tuple[list[Any], list[Fault]]:
    """Send one write per client at the same moment; (results, faults)."""
    answers = await asyncio.gather(*(c.call(method, p) for c, p in zip(clients, params,
                                                                           strict=True)),
                                   return_exceptions=True)
    results = [a for a in answers if not isinstance(a, BaseException)]
    faults = [a for a in answers if isinstance(a, Fault)]
    assert len(results) + len(faults) == len(answers), answers
    return results, faults


async def test_writers_racing_on_one_revision_exactly_one_wins_the_rest_get_4009(
        shared_daemon: Daemon) -> None:
    daemon = shared_daemon
    clients = [Client(daemon.url, daemon.token) for _ in range(8)]
    try:
        encounter = await new_encounter(clients[0], "combat-strength", "race")
        for round_number in range(10):
            revision = (await clients[0].call("encounter.get", {"id": encounter}))["revision"]
            if round_number % 2 == 0:
                method = "encounter.add"
                params = [{"id": encounter, "revision": revision,
                           "combatant": {"id": f"r{round_number}c{i}", "name": f"C{i}",
                                         "attack_strength": 10, "defense_strength": 10}}
                          for i in range(len(clients))]
            else:
                method = "encounter.resolve"
                params = [{"id": encounter, "revision": revision, "force": True, "seed": i}
                          for i in range(len(clients))]
            results, faults = await race(clients, method, params)
            assert len(results) == 1, (method, results, faults)
            assert [f.code for f in faults] == [STALE] * (len(clients) - 1)
            assert all(f.data == {"revision": revision + 1} for f in faults)
            assert results[0]["revision"] == revision + 1
            log = (await clients[0].call("encounter.log", {"id": encounter}))["steps"]
            assert len(log) == revision + 1
    finally:
        await asyncio.gather(*(c.close() for c in clients))


def cpu_seconds(daemon: Daemon) -> float:
    """CPU time the daemon process has used (user + system, all its threads)."""
    fields = Path(f"/proc/{daemon.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_a_resolve_costs_the_same_early_and_late_in_a_long_encounter(
        start_daemon: DaemonFactory) -> None:
    """A long fight (combat-strength: ten segments a round) must not slow down with
    every step: the CPU a resolve costs 300 steps in is within twice its cost in the
    first 100. Measured as the daemon's CPU time, not wall time, so other load on the
    machine does not count."""
    daemon = start_daemon()
    async with Client(daemon.url, daemon.token) as client:
        encounter = await new_encounter(client, "combat-strength", "long")

        async def resolves(count: int, first_seed: int) -> float:
            started = cpu_seconds(daemon)
            for seed in range(first_seed, first_seed + count):
                await client.call("encounter.resolve", {"id": encounter, "force": True,
                                                        "seed": seed})
            return (cpu_seconds(daemon) - started) / count

        # 100 at a time: the kernel counts CPU time in ticks of 10 ms.
        early = await resolves(100, 0)
        await resolves(200, 100)
        late = await resolves(100, 300)
    assert late < 2 * early, (f"a resolve cost {early * 1000:.1f} ms of CPU in the first 100 "
                              f"steps and {late * 1000:.1f} ms in steps 300 to 400")
