"""Soak: a steady stream of mixed JSON-RPC calls against a daemon this script starts.

    .venv/bin/python bench/soak.py --seconds 60 --rate 200

Starts ``mindscape serve`` on 127.0.0.1 with a throw-away home, sends ``--rate`` calls a
second for ``--seconds`` (an open loop: calls are sent on schedule whether or not the
earlier ones were answered, so a slow daemon shows up as latency, not as a lower
rate), and prints throughput, latency percentiles by method, errors, and the daemon's
resident memory (``VmRSS`` in ``/proc/<pid>/status``) every few seconds, so growth
without bound would show. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import aiohttp

# Run as a script from anywhere: the daemon harness lives with the reliability tests.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import children  # noqa: E402
from bench.arguments import number  # noqa: E402
from tests.reliability.daemon import Daemon  # noqa: E402
from tests.reliability.play import COMBATANTS  # noqa: E402

#: (weight, method): the mix of one VTT session (mostly reads and rolls, some writes).
MIX: tuple[tuple[int, str], ...] = (
    (25, "dice.roll"),
    (20, "encounter.get"),
    (15, "encounter.resolve"),
    (10, "encounter.declare"),
    (10, "exchange.resolve"),
    (5, "exchange.odds"),
    (5, "encounter.log"),
    (5, "encounter.list"),
    (5, "systems.list"),
)
ENCOUNTERS = 16
MAX_IN_FLIGHT = 256


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank), in the same unit."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Soak:
    """The schedule, the calls and what they measured."""

    def __init__(self, daemon: Daemon, seconds: float, rate: float, seed: int,
                 without: tuple[str, ...] = ()) -> None:
        self.daemon = daemon
        self.seconds = seconds
        self.rate = rate
        self.random = random.Random(seed)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[str] = Counter()
        self.sent = 0
        self.skipped = 0
        self.in_flight = 0
        self.encounters: list[str] = []
        self.rss: list[tuple[float, int]] = []
        mix = [(w, m) for w, m in MIX if m not in without]
        self.methods = [m for _, m in mix]
        self.weights = [w for w, _ in mix]
        self._ids = 0

    def params(self, method: str) -> dict[str, Any] | None:
        """Params for one call of ``method`` (random dice, encounters, seeds)."""
        pick = self.random
        first, second = COMBATANTS["revised-2e"]
        exchange = {"system": "revised-2e", "attacker": first, "defender": second,
                    "attack": {"mode": "mind-thrust", "multiplier": 1, "range": "short"},
                    "defense": {"mode": "thought-shield"}}
        if method == "dice.roll":
            return {"expr": pick.choice(["1d20", "3d6+2", "2d6p", "10d10", "1d4p+1d6p"])}
        if method in ("encounter.get", "encounter.log"):
            return {"id": pick.choice(self.encounters)}
        if method == "encounter.resolve":
            return {"id": pick.choice(self.encounters), "force": True,
                    "seed": pick.randrange(1 << 30)}
        if method == "encounter.declare":
            return {"id": pick.choice(self.encounters), "combatant_id": "ulcen",
                    "choice": {"stance": "trance"}}
        if method == "exchange.resolve":
            return {**exchange, "seed": pick.randrange(1 << 30)}
        if method == "exchange.odds":
            return exchange
        return None

    async def call(self, session: aiohttp.ClientSession, method: str,
                   params: dict[str, Any] | None) -> Any:
        """The parsed answer to one call (``RuntimeError`` on an HTTP error status)."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._ids}
        if params is not None:
            message["params"] = params
        async with session.post(self.daemon.url + "/rpc", json=message) as response:
            body = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}")
            return json.loads(body)

    async def one(self, session: aiohttp.ClientSession, method: str) -> None:
        """One call, timed; errors counted by method and code."""
        self.in_flight += 1
        started = time.perf_counter()
        try:
            answer = await self.call(session, method, self.params(method))
            if "error" in answer:
                code = answer["error"]["code"]
                # A declare between an intent and a segment is refused by the rules
                # (4001): expected in this mix, counted apart from real errors.
                key = f"{method} {code}"
                self.errors[key] += 1
        except (aiohttp.ClientError, RuntimeError, TimeoutError) as error:
            self.errors[f"{method} {type(error).__name__}"] += 1
        finally:
            self.latencies[method].append(time.perf_counter() - started)
            self.in_flight -= 1

    async def sample_rss(self, stop: asyncio.Event, started: float) -> None:
        """Record the daemon's RSS once a second until ``stop``."""
        while not stop.is_set():
            self.rss.append((time.monotonic() - started, self.daemon.rss_kib()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    async def run(self) -> float:
        """Send the schedule; the seconds it took until every call was answered."""
        headers = {"Authorization": f"Bearer {self.daemon.token}"}
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(headers=headers, connector=connector,
                                         timeout=aiohttp.ClientTimeout(total=30)) as session:
            for number in range(ENCOUNTERS):
                system = "combat-strength"
                created = await self.call(session, "encounter.create",
                                          {"system": system, "name": f"soak {number}"})
                encounter = created["result"]["id"]
                for combatant in COMBATANTS[system]:
                    await self.call(session, "encounter.add",
                                    {"id": encounter, "combatant": combatant})
                self.encounters.append(encounter)
            stop = asyncio.Event()
            started = time.monotonic()
            sampler = asyncio.ensure_future(self.sample_rss(stop, started))
            tasks: set[asyncio.Task[None]] = set()
            total = int(self.seconds * self.rate)
            for number in range(total):
                due = started + number / self.rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if self.in_flight >= MAX_IN_FLIGHT:
                    self.skipped += 1
                    continue
                method = self.random.choices(self.methods, self.weights)[0]
                task = asyncio.ensure_future(self.one(session, method))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                self.sent += 1
            if tasks:
                await asyncio.gather(*tasks)
            elapsed = time.monotonic() - started
            stop.set()
            await sampler
            return elapsed

    def report(self, elapsed: float) -> str:
        """The figures as text."""
        everything = [x for values in self.latencies.values() for x in values]
        lines = [
            f"soak: {self.sent} calls in {elapsed:.1f} s at a target of {self.rate:g}/s "
            f"-> {len(everything) / elapsed:.1f} answered/s; {self.skipped} not sent "
            f"(over {MAX_IN_FLIGHT} in flight)",
            f"latency all: p50 {percentile(everything, 0.5) * 1000:.1f} ms, "
            f"p90 {percentile(everything, 0.9) * 1000:.1f} ms, "
            f"p99 {percentile(everything, 0.99) * 1000:.1f} ms, "
            f"max {max(everything, default=0) * 1000:.1f} ms",
        ]
        for method in sorted(self.latencies):
            values = self.latencies[method]
            lines.append(f"  {method:<18} {len(values):>6} calls  p50 "
                         f"{percentile(values, 0.5) * 1000:7.1f} ms  p99 "
                         f"{percentile(values, 0.99) * 1000:7.1f} ms")
        errors = sum(self.errors.values())
        lines.append(f"error answers: {errors}"
                     + (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(self.errors.items()))
                        + ")" if errors else ""))
        if self.rss:
            series = [f"{t:.0f}s {kib / 1024:.1f}" for t, kib in self.rss[:: max(1, len(
                self.rss) // 12)]]
            half = [kib for t, kib in self.rss if t >= elapsed / 2]
            lines.append("daemon RSS MiB: " + ", ".join(series))
            lines.append(f"RSS start {self.rss[0][1] / 1024:.1f} MiB, max "
                         f"{max(k for _, k in self.rss) / 1024:.1f} MiB, end "
                         f"{self.rss[-1][1] / 1024:.1f} MiB; second half "
                         f"{min(half, default=0) / 1024:.1f}..{max(half, default=0) / 1024:.1f}"
                         " MiB")
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the options, start a daemon, soak it, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--seconds", type=number(float, above=0), default=60.0,
                        help="how long (default 60)")
    parser.add_argument("--rate", type=number(float, above=0), default=200.0,
                        help="calls a second (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="for the mix of calls")
    parser.add_argument("--home", help="daemon home (default: a new temporary folder)")
    parser.add_argument("--without", action="append", default=[], metavar="METHOD",
                        choices=[m for _, m in MIX],
                        help="leave METHOD out of the mix (repeatable), to see what a "
                             "trend in latency or memory comes from")
    args = parser.parse_args(argv)
    # SIGTERM (a time limit, ``kill``) stops the daemon and removes the home as Ctrl+C does.
    children.handle_termination()
    # The daemon is the ``mindscape`` script beside this interpreter: put this checkout
    # first on its import path, or it runs whatever copy of ``companion`` is installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    with children.temporary_folder("mindscape-soak-") as scratch:
        home = Path(args.home) if args.home else scratch / "home"
        daemon = Daemon(home, scratch / "logs")
        try:
            # ``start`` runs ``Popen`` and waits until the daemon answers (about a
            # second, 20 s at most): a SIGTERM meanwhile acts once ``daemon.process``
            # is set, so the ``finally`` below stops it.
            with children.deferred():
                daemon.start()
            soak = Soak(daemon, args.seconds, args.rate, args.seed, tuple(args.without))
            elapsed = asyncio.run(soak.run())
            store = home / "mindscape.sqlite3"
            wal = home / "mindscape.sqlite3-wal"
            print(soak.report(elapsed))
            print(f"store {store.stat().st_size / 1024:.0f} KiB, WAL "
                  f"{wal.stat().st_size / 1024 if wal.exists() else 0:.0f} KiB")
        finally:
            with children.deferred():
                daemon.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
