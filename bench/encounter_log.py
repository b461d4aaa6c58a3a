"""``encounter.log`` on a long encounter, before and after its pending choices were
remembered (``PendingMemo`` in companion/methods/encounter.py): the audit's case, 64
revised-2e combatants (about 48 KB of state) and about 2 000 steps of declarations.

    .venv/bin/python bench/encounter_log.py [--steps 2064] [--rounds 3] [--home DIR]

Serves the real app (``create_app``) in a child process on 127.0.0.1 with a free port,
and a throw-away home unless ``--home`` names one to keep (building the encounter takes
about a minute; a kept home's encounter is used again). The child also serves
``bench.old_log``, the old path kept as the tests' oracle
(tests/companion/masking_oracle.py: every state read and parsed on the event loop at
every call), and ``bench.forget``, which drops what ``encounter.log`` remembered. Each
round times, on the same encounter: the old path, the new one with nothing remembered
(as after a restart) and the new one again; a thread polls ``GET /healthz`` meanwhile,
and its slowest answer during a call is how long every other client waited. It prints
figures; it checks only that the old and the new answers are equal.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import children  # noqa: E402
from bench.arguments import number  # noqa: E402
from companion.plugins import MethodSpec, Plugin  # noqa: E402
from companion.services import Context  # noqa: E402

HOST = "127.0.0.1"
PSIONICIST = {"kind": "psionicist", "level": 4, "psp": 40, "psp_max": 40, "int": 14,
              "wis": 13, "mac": 10, "attacks": ["mind-thrust"],
              "defenses": ["thought-shield", "mental-barrier"]}
COMBATANTS = 64
BATCH = 100


# -- the child: the app, plus the old path -------------------------------------------------
async def old_log(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``bench.old_log``: ``encounter.log`` as it was (every state, on the event loop)."""
    from tests.companion.masking_oracle import old_log as oracle

    store = ctx.services.store
    record = await store.get(params["id"])
    return await oracle(store, record.id, ctx.services.systems.get(record.system),
                        params.get("since", 0))


async def forget(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``bench.forget``: ``encounter.log`` remembers nothing (as after a restart)."""
    ctx.services.pending_memos.clear()
    return {}


PLUGIN = Plugin(name="bench", version="0", methods=(
    MethodSpec("bench.old_log", {"type": "object"}, old_log, "the old encounter.log"),
    MethodSpec("bench.forget", {"type": "object"}, forget, "forget pending choices")))


def serve(home: Path, port: int) -> None:
    from aiohttp import web

    from companion.app import create_app
    from companion.settings import PLUGIN_GROUP, Settings, installed_plugins

    def plugins() -> list[EntryPoint]:
        return [*installed_plugins(),
                EntryPoint("bench", "bench.encounter_log:PLUGIN", PLUGIN_GROUP)]

    settings = Settings(home=home, host=HOST, port=port, plugins=plugins)
    web.run_app(create_app(settings), host=HOST, port=port, print=None, access_log=None)


# -- the parent: build, time, print ----------------------------------------------------------
class Client:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.connection = http.client.HTTPConnection(HOST, port, timeout=600)

    def rpc(self, payload: Any) -> Any:
        self.connection.request("POST", "/rpc", json.dumps(payload), {
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        return json.loads(self.connection.getresponse().read())

    def call(self, method: str, params: dict[str, Any]) -> Any:
        answer = self.rpc({"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
        if "error" in answer:
            raise SystemExit(f"{method}: {answer['error']}")
        return answer["result"]


class HealthProbe(threading.Thread):
    """``GET /healthz`` every few milliseconds: (sent at, answer took) of each."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection(HOST, self.port, timeout=600)
        while not self.stop.is_set():
            sent = time.perf_counter()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            self.samples.append((sent, time.perf_counter() - sent))
            time.sleep(0.005)

    def worst(self, start: float, end: float) -> float:
        """The slowest answer to a probe sent while [start, end] lasted."""
        return max((took for sent, took in self.samples if start <= sent <= end),
                   default=0.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def wait_ready(port: int, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit("the app did not start")
        try:
            connection = http.client.HTTPConnection(HOST, port, timeout=1)
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the app did not come up")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(client: Client, steps: int) -> str:
    """The audit's encounter: 64 combatants (200-character names), then declarations
    round the table until the log has ``steps`` steps."""
    for encounter in client.call("encounter.list", {}):
        if encounter["system"] == "revised-2e" and encounter["revision"] >= steps:
            print(f"using encounter {encounter['id']} (revision {encounter['revision']})")
            return str(encounter["id"])
    eid = str(client.call("encounter.create", {"system": "revised-2e", "name": "bench"})["id"])
    started = time.perf_counter()
    for n in range(COMBATANTS):
        client.call("encounter.add", {"id": eid, "combatant": {
            **PSIONICIST, "id": f"c{n}", "name": "N" * 200}})
    revision = COMBATANTS
    while revision < steps:
        batch = [{"jsonrpc": "2.0", "method": "encounter.declare", "id": n, "params": {
            "id": eid, "combatant_id": f"c{(revision + n) % COMBATANTS}",
            "choice": {"defense": {"mode": "thought-shield"}}}}
            for n in range(min(BATCH, steps - revision))]
        client.rpc(batch)
        revision += len(batch)
    print(f"built encounter {eid}: {revision} steps in {time.perf_counter() - started:.0f} s")
    return eid


def timed(probe: HealthProbe, call: Callable[[], Any]) -> tuple[float, float, Any]:
    start = time.perf_counter()
    answer = call()
    end = time.perf_counter()
    time.sleep(0.05)  # the probe sent during the call has answered
    return end - start, probe.worst(start, end), answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=number(int, above=0), default=2064)
    parser.add_argument("--rounds", type=number(int, above=0), default=3)
    parser.add_argument("--home", type=Path, help="a home to keep (and use again)")
    parser.add_argument("--serve", nargs=2, metavar=("HOME", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]))
        return
    # SIGTERM (a time limit, ``kill``) stops the child and removes the home as Ctrl+C does.
    children.handle_termination()
    # On the way out the child is stopped, and then the folder removed (with it the
    # throw-away home; a home given with --home is elsewhere, and kept).
    with children.temporary_folder("mindscape-bench-log-") as scratch:
        measure(args, args.home or scratch)


def measure(args: argparse.Namespace, home: Path) -> None:
    """Serve the app on ``home`` in a child process, build the encounter, time the calls
    and print the figures."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = children.launch([sys.executable, __file__, "--serve", str(home), str(port)],
                            cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    client: Client | None = None
    try:
        wait_ready(port, child)
        client = Client(port, (home / "token").read_text().strip())
        eid = build(client, args.steps)
        state = client.call("encounter.get", {"id": eid})
        print(f"state (encounter.get) {len(json.dumps(state)) / 1000:.0f} KB, "
              f"revision {state['revision']}")
        since = {"id": eid, "since": state["revision"] - 1}
        probe = HealthProbe(port)
        probe.start()
        figures: dict[str, list[tuple[float, float]]] = {
            "old path (every state parsed, on the loop)": [],
            "new, nothing remembered (after a restart)": [],
            "new, remembered (every later call)": []}
        series = list(figures.values())
        rss = {"start": rss_mib(child.pid)}
        equal = True
        for _ in range(args.rounds):
            client.call("bench.forget", {})
            took, worst, cold = timed(probe, lambda: client.call("encounter.log", since))
            series[1].append((took, worst))
            took, worst, warm = timed(probe, lambda: client.call("encounter.log", since))
            series[2].append((took, worst))
            rss.setdefault("new", rss_mib(child.pid))  # before the old path ever ran
            took, worst, old = timed(probe, lambda: client.call("bench.old_log", since))
            series[0].append((took, worst))
            rss["old"] = max(rss.get("old", 0.0), rss_mib(child.pid))
            equal = equal and old == cold == warm
        whole = timed(probe, lambda: client.call("encounter.log", {"id": eid}))
        probe.stop.set()
        probe.join()
        print(f"\nencounter.log since the last step, median of {args.rounds} rounds "
              "(alternating):")
        print(f"{'path':46} {'answer s':>9} {'/healthz waited s':>18}")
        medians = {}
        for name, runs in figures.items():
            medians[name] = statistics.median(t for t, _ in runs)
            print(f"{name:46} {medians[name]:9.3f} "
                  f"{statistics.median(w for _, w in runs):18.3f}")
        old, cold, warm = medians.values()
        print(f"\nratio old / new: {old / warm:.0f}x remembered, {old / cold:.1f}x "
              "with nothing remembered")
        print(f"the whole log (new, remembered): {whole[0]:.3f} s, /healthz waited "
              f"{whole[1]:.3f} s")
        print(f"daemon RSS: {rss['start']:.0f} MiB at the start, {rss['new']:.0f} MiB after "
              f"the new path, {rss['old']:.0f} MiB after the old one too")
        print(f"answers equal: {'yes' if equal else 'NO'}")
    finally:
        if client is not None:
            # A request that SIGTERM cut off mid-body would keep the child's graceful
            # stop waiting for the rest of it (run_app's shutdown timeout, 60 s).
            client.connection.close()
        children.stop(child, grace=30)


if __name__ == "__main__":
    main()
