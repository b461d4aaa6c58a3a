"""What VTT sheets given as ``{adapter, data}`` cost an encounter: memory, log size, and
how long other clients wait while the daemon reads them back (the audit's four cases).

    .venv/bin/python bench/sheet_data.py [--before DIR] [--encounters 60] [--refreshes 200]

Each case starts ``mindscape serve`` from this checkout (and, with ``--before``, from
another checkout too, e.g. one made by ``git worktree add ../before HEAD~1``) in a
throw-away home on 127.0.0.1, and a thread polls ``GET /healthz`` meanwhile: its slowest
answer during a call is how long every other client waited. Memory is the daemon's
``VmRSS`` (``VmHWM`` for a peak) from ``/proc``. The cases:

- ``cache``: encounters of 6 real Foundry actors (tests/fixtures/foundry/dnd5e, 116 and
  162 KB), each resolved once: what the daemon keeps for their write-backs.
- ``junk adds``: 16 actors of about 1 MiB whose flags hold ``[{},{},...]``, then a resolve.
- ``long fight``: ``--refreshes`` refreshes of the 162 KB actor, then ``encounter.log``;
  then the daemon is restarted and the first resolve timed.
- ``junk refreshes``: 40 refreshes of the 1 MiB actor, then ``encounter.log``.

With ``--before``, the long fight's home (written by the other checkout's code) is also
served by this checkout's: reading steps stored in the old shape. It prints figures and
the ratios before / after; it asserts nothing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import children  # noqa: E402

HOST = "127.0.0.1"
FIXTURES = ROOT / "tests" / "fixtures" / "foundry" / "dnd5e"
ZANNA = json.loads((FIXTURES / "zanna-gnome-wizard.json").read_text())
RANDAL = json.loads((FIXTURES / "randal-human-fighter.json").read_text())
MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def memory(pid: int) -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


class Daemon:
    """``mindscape serve`` from the checkout ``code`` on ``home``."""

    def __init__(self, code: Path, home: Path) -> None:
        self.code, self.home = code, home
        self.port = free_port()
        # (made before the daemon, so that ``stop`` always has it to close)
        self.connection = http.client.HTTPConnection(HOST, self.port, timeout=600)
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.process = children.launch(
            [sys.executable, "-m", "companion", "serve", "--home", str(home),
             "--port", str(self.port), "--log-level", "warning"],
            cwd=code, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()  # (a daemon that did not answer in time, or an interruption)
            raise
        self.token = (home / "token").read_text().strip()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon of {self.code} did not start")
            try:
                connection = http.client.HTTPConnection(HOST, self.port, timeout=1)
                connection.request("GET", "/healthz")
                connection.getresponse().read()
                return
            except OSError:
                time.sleep(0.05)

    def raw(self, text: str) -> tuple[bytes, float]:
        """The answer to a request's text and how long it took."""
        start = time.perf_counter()
        self.connection.request("POST", "/rpc", text.encode(), {
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        body = self.connection.getresponse().read()
        return body, time.perf_counter() - start

    def call(self, method: str, params: dict[str, Any]) -> Any:
        return self.call_text(request(method, params))

    def call_text(self, text: str) -> Any:
        body, _ = self.raw(text)
        answer = json.loads(body)
        if "error" in answer:
            raise SystemExit(f"{text[:60]}...: {answer['error']}")
        return answer["result"]

    def memory(self) -> dict[str, float]:
        return memory(self.process.pid)

    def stop(self) -> None:
        # A request that SIGTERM cut off mid-body would keep the daemon's graceful stop
        # waiting for the rest of it (its shutdown timeout): it is closed first.
        self.connection.close()
        children.stop(self.process, grace=30)


class Probe(threading.Thread):
    """``GET /healthz`` every few milliseconds; the slowest answer while it ran."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.worst = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection(HOST, self.port, timeout=600)
        while not self.done.is_set():
            sent = time.perf_counter()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            self.worst = max(self.worst, time.perf_counter() - sent)
            time.sleep(0.005)


@contextmanager
def probed(daemon: Daemon) -> Iterator[Probe]:
    probe = Probe(daemon.port)
    probe.start()
    time.sleep(0.02)
    try:
        yield probe
    finally:
        time.sleep(0.05)  # the probe sent during the call has answered
        probe.done.set()
        probe.join()


def request(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": 1})


def sheet(actor: dict[str, Any], ident: str | None = None, hp: int | None = None,
          token: str | None = None) -> dict[str, Any]:
    actor = json.loads(json.dumps(actor))
    if ident is not None:
        actor["_id"] = ident
    if hp is not None:
        actor["system"]["attributes"]["hp"]["value"] = hp
    envelope = None if token is None else {"uuid": f"Scene.s.Token.{token}",
                                           "actorLink": False}
    return {"adapter": "foundry.dnd5e", "data": {"actor": actor, "token": envelope}}


def junk_request(method: str, params: dict[str, Any]) -> str:
    """``params``' actor with flags holding ``[{},{},...]`` up to a 1 MiB request."""
    params["combatant"]["data"]["actor"].setdefault("flags", {})["junk"] = "@@JUNK@@"
    text = request(method, params)
    room = MIB - len(text) - 200
    return text.replace('"@@JUNK@@"', "[" + ",".join(["{}"] * (room // 3)) + "]")


Figures = dict[str, float]


def timed_call(daemon: Daemon, text: str) -> tuple[float, float, int, Any]:
    """(seconds, others waited, answer bytes, result) of one call."""
    with probed(daemon) as probe:
        body, took = daemon.raw(text)
    answer = json.loads(body)
    if "error" in answer:
        raise SystemExit(f"{text[:60]}...: {answer['error']}")
    return took, probe.worst, len(body), answer["result"]


def case_cache(daemon: Daemon, encounters: int) -> Figures:
    start = daemon.memory()["VmRSS"]
    ids = []
    for _ in range(encounters):
        eid = daemon.call("encounter.create", {"system": "revised-2e"})["id"]
        ids.append(eid)
        for j in range(6):
            daemon.call("encounter.add", {"id": eid, "combatant": sheet(
                ZANNA if j % 2 else RANDAL, f"id{j:014d}", token=f"t{j}")})
    added = daemon.memory()["VmRSS"]
    for eid in ids:
        daemon.call("encounter.resolve", {"id": eid, "force": True})
    resolved = daemon.memory()["VmRSS"]
    return {"RSS growth over the adds, MiB": added - start,
            "RSS growth over the resolves, MiB": resolved - added}


def case_junk_adds(daemon: Daemon) -> Figures:
    eid = daemon.call("encounter.create", {"system": "revised-2e"})["id"]
    for j in range(16):
        daemon.call_text(junk_request("encounter.add", {"id": eid, "combatant": sheet(
            RANDAL, f"id{j:014d}")}))
    before = daemon.memory()["VmRSS"]
    took, waited, _, _ = timed_call(daemon, request("encounter.resolve",
                                                    {"id": eid, "force": True}))
    after = daemon.memory()
    return {"resolve, s": took, "others waited, s": waited,
            "RSS before the resolve, MiB": before, "RSS after, MiB": after["VmRSS"]}


def refreshes(daemon: Daemon, actor: dict[str, Any], count: int,
              make: Callable[[str, dict[str, Any]], str]) -> str:
    eid = daemon.call("encounter.create", {"system": "revised-2e"})["id"]
    cid = daemon.call_text(make("encounter.add", {"id": eid, "combatant": sheet(
        actor, hp=8)}))["combatant_id"]
    for i in range(count):
        daemon.call_text(make("encounter.refresh", {
            "id": eid, "combatant_id": cid, "combatant": sheet(actor, hp=1 + i % 7)}))
    return str(eid)


def read_log(daemon: Daemon, eid: str) -> Figures:
    before = daemon.memory()["VmRSS"]
    took, waited, size, _ = timed_call(daemon, request("encounter.log", {"id": eid}))
    peak = daemon.memory()["VmHWM"]
    return {"encounter.log, s": took, "others waited, s": waited,
            "log answer, MiB": size / MIB, "RSS peak over the log, MiB": peak - before}


def first_resolve(daemon: Daemon, eid: str) -> Figures:
    took, waited, _, _ = timed_call(daemon, request("encounter.resolve",
                                                    {"id": eid, "force": True}))
    return {"first resolve after a start, s": took, "others waited, s ": waited}


def db_size(home: Path) -> float:
    return sum(p.stat().st_size for p in home.glob("mindscape.sqlite3*")) / MIB


def run(code: Path, args: argparse.Namespace, keep: Path) -> dict[str, Figures]:
    results: dict[str, Figures] = {}

    def fresh(name: str) -> tuple[Daemon, Path]:
        home = Path(tempfile.mkdtemp(prefix=f"mindscape-bench-{name}-", dir=keep))
        return Daemon(code, home), home

    daemon, _ = fresh("cache")
    try:
        results["cache"] = case_cache(daemon, args.encounters)
    finally:
        daemon.stop()
    daemon, _ = fresh("junk-adds")
    try:
        results["junk adds"] = case_junk_adds(daemon)
    finally:
        daemon.stop()
    daemon, home = fresh("fight")
    try:
        eid = refreshes(daemon, ZANNA, args.refreshes, request)
        results["long fight"] = read_log(daemon, eid)
    finally:
        daemon.stop()
    results["long fight"]["store on disk, MiB"] = db_size(home)
    (keep / f"{code.name}-fight").write_text(f"{home}\n{eid}\n")
    daemon = Daemon(code, home)
    try:
        results["long fight"].update(first_resolve(daemon, eid))
    finally:
        daemon.stop()
    daemon, _ = fresh("junk-refresh")
    try:
        eid = refreshes(daemon, RANDAL, 40, junk_request)
        results["junk refreshes"] = read_log(daemon, eid)
    finally:
        daemon.stop()
    return results


def old_shape(code: Path, keep: Path, before: Path) -> Figures:
    """This checkout's code on the long fight stored by the other checkout's."""
    home_text, eid = (keep / f"{before.name}-fight").read_text().split()
    home = Path(tempfile.mkdtemp(prefix="mindscape-bench-old-", dir=keep))
    shutil.rmtree(home)
    shutil.copytree(home_text, home)
    daemon = Daemon(code, home)
    try:
        figures = first_resolve(daemon, eid)
        figures.update(read_log(daemon, eid))
    finally:
        daemon.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--encounters", type=int, default=60)
    parser.add_argument("--refreshes", type=int, default=200)
    args = parser.parse_args()
    # SIGTERM (a time limit, ``kill``) stops the daemon and removes the homes as Ctrl+C does.
    children.handle_termination()
    with children.temporary_folder("mindscape-bench-sheets-") as keep:
        codes = [ROOT] if args.before is None else [args.before.resolve(), ROOT]
        runs = {code: run(code, args, keep) for code in codes}
        extra = old_shape(ROOT, keep, codes[0]) if args.before is not None else None
    after = runs[ROOT]
    before = runs.get(codes[0]) if args.before is not None else None
    if before is None:
        # one checkout: its figures alone, no empty columns to compare with
        print(f"{'case':16} {'figure':38} {'value':>9}")
    else:
        print(f"{'case':16} {'figure':38} {'before':>9} {'after':>9} {'before/after':>13}")
    for case, figures in after.items():
        for name, value in figures.items():
            if before is None:
                print(f"{case:16} {name:38} {value:9.3f}")
                continue
            old = before[case][name]
            ratio = f"{old / value:12.1f}x" if value else ""
            print(f"{case:16} {name:38} {old:9.3f} {value:9.3f} {ratio:>13}")
    if extra is not None:
        print(f"\nthis checkout's code on the long fight stored by {codes[0]}:")
        for name, value in extra.items():
            print(f"  {name:38} {value:9.3f}")


if __name__ == "__main__":
    main()
