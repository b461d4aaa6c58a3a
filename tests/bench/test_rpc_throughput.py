"""The plumbing of ``bench/rpc_throughput.py`` (what it runs, its options, its clean-up).
No figure is checked here: the benchmark prints them (README "Performance")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import rpc_throughput

ROOT = Path(__file__).resolve().parents[2]


def test_the_servers_import_this_checkout_not_an_installed_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``mindscape`` script beside the interpreter imports ``companion`` from
    wherever it is installed (an editable install of another checkout, or a ``pip
    install .`` made before the change being measured); a script outside the checkout
    stands in for it here."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    script = tmp_path / "which.py"
    script.write_text("import companion\nprint(companion.__file__)\n")
    out = subprocess.run([sys.executable, str(script)], env=rpc_throughput.child_environment(),
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == ROOT / "companion" / "__init__.py"


@pytest.mark.parametrize("option", [["--duration", "0"], ["--duration", "nan"],
                                    ["--connections", "0"], ["--rounds", "0"],
                                    ["--startups", "0"], ["--rounds", "two"]])
def test_an_option_it_cannot_run_with_is_refused_before_anything_starts(
        option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """These used to start servers, measure for a while and end in a traceback (a
    division by zero in the load client, the median of no round or no start)."""
    with pytest.raises(SystemExit) as exit_:
        rpc_throughput.parse_args(option)
    assert exit_.value.code == 2
    assert f"argument {option[0]}" in capsys.readouterr().err


def test_one_cpu_is_said_to_be_shared() -> None:
    assert rpc_throughput.shared_cores_warning({0}, {1}) is None
    warning = rpc_throughput.shared_cores_warning({0}, {0})
    assert warning is not None and "share" in warning


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``, with their command lines."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            found[int(stat.parent.name)] = command
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_stops_the_servers_and_removes_the_throw_away_home() -> None:
    """A SIGTERM (a harness's timeout, ``kill``) left the echo server and the daemon
    running, and their temporary home on disk."""
    seen: dict[int, str] = {}
    bench = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "rpc_throughput.py"), "--load", "aiohttp",
         "--startups", "1", "--duration", "30", "--rounds", "1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        # Until both servers run (the load is being measured).
        while time.monotonic() < deadline and not (
                any("echo_server.py" in c for c in seen.values())
                and any(" serve " in c for c in seen.values())):
            seen = {p: c for p, c in _children(bench.pid).items() if _alive(p)}
            time.sleep(0.1)
        assert bench.poll() is None, "the benchmark ended before both servers ran"
        homes = {Path(c.split("--home ", 1)[1].split()[0]).parent
                 for c in seen.values() if "--home " in c}
        assert homes
        bench.terminate()
        assert bench.wait(30) == 128 + signal.SIGTERM
        time.sleep(0.2)
        assert [c for p, c in seen.items() if _alive(p)] == []
        assert [h for h in homes if h.exists()] == []
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        for pid in seen:  # (what a failed run left)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_sigterm_while_a_server_is_started_does_not_lose_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM that lands inside ``Popen`` (after the fork, before it returns: likely
    on a busy machine, as the benchmark starts seven servers) raised there, and the new
    process was never stopped."""
    real = subprocess.Popen

    def signalled(*args: object, **kwargs: object) -> subprocess.Popen[str]:
        process = real(*args, **kwargs)  # type: ignore[call-overload]
        try:
            rpc_throughput.terminated(signal.SIGTERM, None)  # as the handler would run
        except SystemExit:
            process.kill()
            process.wait()
            raise
        return process  # type: ignore[no-any-return]

    monkeypatch.setattr(rpc_throughput.subprocess, "Popen", signalled)
    with pytest.raises(SystemExit) as exit_:
        rpc_throughput.launch([sys.executable, "-c", "import time; time.sleep(30)"])
    monkeypatch.undo()
    try:
        assert exit_.value.code == 128 + signal.SIGTERM
        assert len(rpc_throughput.RUNNING) == 1
    finally:
        rpc_throughput.stop_all()
        rpc_throughput.DEFERRED["signal"] = None
    assert rpc_throughput.RUNNING == []
