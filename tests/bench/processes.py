"""Running a benchmark script as a process and watching the servers it starts (read
from ``/proc``), for the tests of what the benchmarks leave behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> dict[int, str]:
    """The live processes whose parent is ``pid``, with their command lines."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and alive(int(stat.parent.name)):
            found[int(stat.parent.name)] = command
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Run:
    """A benchmark running, and every server of its seen so far (pid → command line)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.seen: dict[int, str] = {}

    def wait_for(self, ready: Callable[[dict[int, str]], bool], within: float = 60) -> None:
        """Watch its servers until ``ready`` says yes of them (or ``within`` seconds)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and not ready(self.seen):
            self.seen = children(self.process.pid)
            time.sleep(0.1)

    def still_running(self) -> list[str]:
        """The servers seen that still run, a moment after it ended."""
        time.sleep(0.2)
        return [c for p, c in self.seen.items() if alive(p)]


@contextmanager
def benchmark(script: str, *options: str) -> Iterator[Run]:
    """``bench/<script> options`` run from the checkout; on the way out it is killed if it
    still runs, and so is any server of its a failed test left."""
    run = Run(subprocess.Popen([sys.executable, str(ROOT / "bench" / script), *options],
                               cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL))
    try:
        yield run
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
        for pid in run.seen:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
