"""Every benchmark that starts a daemon stops it, and removes its throw-away home, when
it is stopped with SIGTERM (a harness's time limit, ``kill``) as on Ctrl+C."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bench.processes import benchmark

ROOT = Path(__file__).resolve().parents[2]


def _home(command: str) -> Path | None:
    """The home folder a child was started on (``--home DIR`` or ``--serve DIR PORT``)."""
    for flag in ("--home ", "--serve "):
        if flag in command:
            return Path(command.split(flag, 1)[1].split()[0])
    return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("script", [
    ["soak.py", "--seconds", "60", "--rate", "20"],
    ["encounter_log.py", "--steps", "100000"],
    ["sheet_data.py", "--encounters", "100000"],
])
def test_sigterm_stops_the_daemon_and_removes_its_home(script: list[str]) -> None:
    with benchmark(*script) as run:
        run.wait_for(lambda seen: any(map(_home, seen.values())))
        time.sleep(2)  # (the daemon is up and being called)
        homes = [h for h in map(_home, run.seen.values()) if h is not None]
        assert run.process.poll() is None and homes and all(h.exists() for h in homes)
        run.process.terminate()
        # A daemon that does not stop on SIGTERM gets 30 s before the script kills it
        # (``children.stop(grace=30)``): the script is waited for longer than that.
        run.process.wait(60)
        assert run.still_running() == []
        assert [h for h in homes if h.exists()] == []


@pytest.mark.parametrize("command", [
    ["echo_server.py"], ["echo_server.py", "port"],
    ["soak.py", "--seconds", "0"], ["soak.py", "--rate", "-5"],
    ["encounter_log.py", "--rounds", "0"], ["encounter_log.py", "--steps", "0"],
])
def test_an_option_it_cannot_run_with_is_refused_before_a_daemon_starts(
        command: list[str]) -> None:
    """These ended in a traceback (echo_server.py without a port; encounter_log.py with no
    round, after building its encounter) or printed figures of no call at all (the soak
    at a rate or for a time of zero or less)."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / command[0]), *command[1:]],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "usage:" in done.stderr and "Traceback" not in done.stderr
