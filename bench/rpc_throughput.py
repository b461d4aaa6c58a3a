"""Companion throughput, latency, start-up time and memory, against a bare aiohttp echo.

Not a test: it prints figures. Run ``.venv/bin/python bench/rpc_throughput.py`` (options:
``--duration 5 --connections 16``). The server under test and the load generator run on
separate cores (``os.sched_setaffinity``); load comes from ``wrk`` with a Lua script for
the POST body (Debian: ``apt-get install -y wrk``), or from an aiohttp client in its own
process when ``wrk`` is missing. Each figure is a ratio to the bare echo server measured
in the same run, so a busy machine moves both sides alike.

Start-up is timed as a GM's machine sees it, with Python's bytecode cache in place: the
child processes may write it (``PYTHONDONTWRITEBYTECODE`` is dropped from their
environment) and the first start, which writes it, is not counted. Without the cache
every start compiles the project's sources again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
PYTHON = sys.executable

from bench import children  # noqa: E402
from bench.arguments import number  # noqa: E402

INFO = {"jsonrpc": "2.0", "method": "companion.info", "id": 1}
ULCEN = {"id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 4, "psp": 40,
         "psp_max": 40, "int": 14, "wis": 13, "mac": 10, "attacks": ["mind-thrust"],
         "defenses": ["thought-shield"]}
FENKA = {"id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 3, "psp": 30,
         "psp_max": 30, "int": 12, "wis": 12, "mac": 10, "attacks": ["mind-thrust"],
         "defenses": ["mental-barrier"]}
RESOLVE = {"jsonrpc": "2.0", "method": "exchange.resolve", "id": 1, "params": {
    "system": "revised-2e", "attacker": ULCEN, "defender": FENKA,
    "attack": {"mode": "mind-thrust", "multiplier": 4, "range": "short"},
    "defense": {"mode": "mental-barrier"},
    "dice": {"attack": [20], "damage": [4, 4, 3, 1], "save": [7]}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cores() -> tuple[set[int], set[int]]:
    """(server cores, load-generator cores): the first CPU, and the others."""
    available = sorted(os.sched_getaffinity(0))
    if len(available) < 2:
        return set(available), set(available)
    return {available[0]}, set(available[1:])


def shared_cores_warning(server_cores: set[int], load_cores: set[int]) -> str | None:
    """What to say when the server and the load cannot have cores of their own."""
    if not server_cores & load_cores:
        return None
    return (f"warning: this process may use only CPU {sorted(server_cores)}: the server "
            "and the load share it, so these figures are not comparable with the README's "
            "(server and load on separate cores)")


def pinned(core_set: set[int]) -> Any:
    def pin() -> None:
        os.sched_setaffinity(0, core_set)
    return pin


def wait_ready(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"server at {url} did not come up")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, load: Any, *args: Any) -> dict[str, float]:
    """Run one load and add the server's CPU time per request (in µs): on a busy
    machine requests/s drop with the CPU share the server gets, CPU per request does
    not."""
    before = cpu_seconds(pid)
    figures = dict(load(*args))
    duration = args[4]
    requests = figures["rps"] * duration
    figures["cpu_us"] = (cpu_seconds(pid) - before) / requests * 1e6 if requests else 0.0
    return figures


def median_figures(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def checked(done: subprocess.CompletedProcess[str]) -> str:
    """The load generator's output; its own error output when it failed."""
    if done.returncode != 0:
        raise SystemExit(f"the load generator {done.args[0]} exited with "
                         f"{done.returncode}:\n{done.stderr[-2000:]}{done.stdout[-2000:]}")
    return done.stdout


# -- load generators -------------------------------------------------------------------
LUA = """
wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
{auth}
"""


def run_wrk(url: str, body: dict[str, Any], token: str | None, connections: int,
            duration: float, load_cores: set[int]) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        auth = f'wrk.headers["Authorization"] = "Bearer {token}"' if token else ""
        script.write(LUA.format(body=json.dumps(json.dumps(body)), auth=auth))
    try:
        out = checked(subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--latency", "-s",
             script.name, url + "/rpc"], capture_output=True, text=True,
            preexec_fn=pinned(load_cores)))
    finally:
        os.unlink(script.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"wrk saw {non2xx.group(1)} error responses:\n{out}")

    def percentile(label: str) -> float:
        match = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not match:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    return {"rps": rps, "p50": percentile("50"), "p99": percentile("99")}


CLIENT = textwrap.dedent("""
    import asyncio, json, sys, time
    import aiohttp
    url, body, token, connections, duration = sys.argv[1], sys.argv[2], sys.argv[3], \
        int(sys.argv[4]), float(sys.argv[5])
    headers = {"Content-Type": "application/json"}
    if token != "-":
        headers["Authorization"] = "Bearer " + token
    async def worker(session, stop, latencies):
        n = 0
        while time.perf_counter() < stop:
            t = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as r:
                await r.read()
                assert r.status == 200, r.status
            latencies.append(time.perf_counter() - t)
            n += 1
        return n
    async def main():
        latencies = []
        async with aiohttp.ClientSession() as session:
            stop = time.perf_counter() + duration
            counts = await asyncio.gather(*(worker(session, stop, latencies)
                                            for _ in range(connections)))
        latencies.sort()
        print(json.dumps({"rps": sum(counts) / duration,
                          "p50": latencies[len(latencies) // 2] * 1000,
                          "p99": latencies[int(len(latencies) * 0.99)] * 1000}))
    asyncio.run(main())
""")


def run_client(url: str, body: dict[str, Any], token: str | None, connections: int,
               duration: float, load_cores: set[int]) -> dict[str, float]:
    out = checked(subprocess.run([PYTHON, "-c", CLIENT, url + "/rpc", json.dumps(body),
                                  token or "-", str(connections), str(duration)],
                                 capture_output=True, text=True,
                                 preexec_fn=pinned(load_cores)))
    result: dict[str, float] = json.loads(out)
    return result


# -- servers ------------------------------------------------------------------------------
def start_echo(server_cores: set[int]) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = children.launch(
        [PYTHON, str(ROOT / "bench" / "echo_server.py"), str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        env=child_environment(), cwd=ROOT, preexec_fn=pinned(server_cores))
    url = f"http://127.0.0.1:{port}"
    wait_ready_echo(url)
    return process, url


def wait_ready_echo(url: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url + "/rpc", data=b"{}", method="POST")
            with urllib.request.urlopen(request, timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit("echo server did not come up")


def mindscape_command() -> list[str]:
    script = Path(PYTHON).with_name("mindscape")
    return [str(script)] if script.exists() else [PYTHON, "-m", "companion"]


def child_environment() -> dict[str, str]:
    """The servers' environment: this checkout first on the import path (the
    ``mindscape`` script beside the interpreter would otherwise run whatever copy of
    ``companion`` is installed, such as another checkout's editable install or a
    ``pip install .`` made before the last change), and the bytecode cache allowed (see
    the module's docstring)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return environment


def start_companion(home: Path, server_cores: set[int], log_level: str
                    ) -> tuple[subprocess.Popen[str], str, float]:
    """Start ``mindscape serve``; also returns the seconds until it printed its banner."""
    port = free_port()
    environment = child_environment()
    started = time.perf_counter()
    process = children.launch(
        [*mindscape_command(), "serve", "--home", str(home), "--port", str(port),
         "--log-level", log_level],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment,
        cwd=ROOT, preexec_fn=pinned(server_cores))
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Stop with"):
            break
    if process.poll() is not None:
        raise SystemExit(f"mindscape serve exited with {process.returncode} before its "
                         f"banner (try: {' '.join(mindscape_command())} serve --home {home})")
    ready = time.perf_counter() - started
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    return process, url, ready


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=number(float, least=1), default=10.0,
                        help="seconds of load per figure and server (at least 1)")
    parser.add_argument("--connections", type=number(int, least=1), default=16)
    parser.add_argument("--log-level", default="info",
                        help="the daemon's log level (info logs one line per request)")
    parser.add_argument("--startups", type=number(int, least=1), default=5)
    parser.add_argument("--load", choices=["auto", "wrk", "aiohttp"], default="auto",
                        help="load generator (auto: wrk when installed)")
    parser.add_argument("--rounds", type=number(int, least=1), default=5,
                        help="alternating rounds per figure (the duration is split)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # SIGTERM (a time limit, ``kill``) or SIGHUP ends the run as Ctrl+C does: servers
    # stopped, the throw-away home removed.
    children.handle_termination()
    try:
        run(args)
    except KeyboardInterrupt:
        print("interrupted: no figures", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        children.stop_all()


def run(args: argparse.Namespace) -> None:
    server_cores, load_cores = cores()
    have_wrk = shutil.which("wrk") is not None
    if args.load == "wrk" and not have_wrk:
        raise SystemExit("wrk is not installed: sudo apt-get install -y wrk")
    if args.load == "aiohttp":
        have_wrk = False
    load = run_wrk if have_wrk else run_client
    if not have_wrk and args.load == "auto":
        print("wrk not found: using an aiohttp client instead (install wrk for better "
              "figures: sudo apt-get install -y wrk)")
    # Alternate the two servers in short rounds and keep the medians, so a change in the
    # machine's load hits both sides alike. wrk runs whole seconds.
    per_round = max(1.0, args.duration / args.rounds)
    one_connection = min(args.duration, 3)
    if have_wrk:
        per_round, one_connection = float(round(per_round)), float(round(one_connection))
    print(f"server on CPU {sorted(server_cores)}, load on CPU {sorted(load_cores)}, "
          f"{args.connections} connections, {args.rounds} alternating rounds of "
          f"{per_round:g} s per figure, load by {'wrk' if have_wrk else 'aiohttp client'}, "
          f"daemon log level {args.log_level}")
    warning = shared_cores_warning(server_cores, load_cores)
    if warning:
        print(warning)

    # Servers are stopped before their home is removed, whatever ends the run.
    with children.temporary_folder("mindscape-bench-rpc-") as tmp:
        home = tmp / "home"
        startups = []
        # The first start writes the bytecode cache (and the token): not counted.
        children.stop(start_companion(home, server_cores, args.log_level)[0])
        for _ in range(args.startups):
            process, _url, ready = start_companion(home, server_cores, args.log_level)
            startups.append(ready)
            children.stop(process)

        echo, echo_url = start_echo(server_cores)
        companion, url, _ = start_companion(home, server_cores, args.log_level)
        token = (home / "token").read_text().strip()
        rest_kib = rss_kib(companion.pid)
        try:
            rows = []
            for label, body in (("companion.info", INFO), ("exchange.resolve", RESOLVE)):
                load(url, body, token, 2, 1.0, load_cores)  # warm up
                load(echo_url, body, None, 2, 1.0, load_cores)
                bases, ours_all = [], []
                for _ in range(args.rounds):
                    bases.append(measured(echo.pid, load, echo_url, body, None,
                                          args.connections, per_round, load_cores))
                    ours_all.append(measured(companion.pid, load, url, body, token,
                                             args.connections, per_round, load_cores))
                base, ours = median_figures(bases), median_figures(ours_all)
                base1 = load(echo_url, body, None, 1, one_connection, load_cores)
                ours1 = load(url, body, token, 1, one_connection, load_cores)
                rows.append((label, base, ours, base1, ours1))
            loaded_kib = rss_kib(companion.pid)
        finally:
            children.stop(companion)
            children.stop(echo)

    print()
    print(f"{'call':<18}{'echo req/s':>11}{'companion req/s':>16}{'ratio':>7}"
          f"{'CPU us/req (echo/comp)':>24}{'CPU ratio':>10}"
          f"{'p50 ms (echo/comp)':>20}{'p99 ms (echo/comp)':>20}")
    targets = {"companion.info": 0.7, "exchange.resolve": 0.45}
    for label, base, ours, base1, ours1 in rows:
        ratio = ours["rps"] / base["rps"]
        cpu_ratio = base["cpu_us"] / ours["cpu_us"] if ours["cpu_us"] else float("nan")
        print(f"{label:<18}{base['rps']:>11.0f}{ours['rps']:>16.0f}{ratio:>7.2f}"
              f"{base['cpu_us']:>13.0f}/{ours['cpu_us']:<10.0f}{cpu_ratio:>10.2f}"
              f"{base1['p50']:>10.2f}/{ours1['p50']:<9.2f}"
              f"{base1['p99']:>10.2f}/{ours1['p99']:<9.2f}"
              f"  (target >= {targets[label]})")
    print("ratio = companion req/s over echo req/s; CPU ratio = echo CPU per request over "
          "the companion's (the same figure, independent of how busy the machine is)")
    print()
    print(f"start-up to banner: median {statistics.median(startups):.3f} s "
          f"(min {min(startups):.3f}, max {max(startups):.3f}, {len(startups)} starts)")
    print(f"memory (RSS): {rest_kib / 1024:.1f} MiB at rest, {loaded_kib / 1024:.1f} MiB "
          "after the load")
    print(f"machine load average while measuring: {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
