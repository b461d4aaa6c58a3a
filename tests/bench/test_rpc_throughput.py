"""The plumbing of ``bench/rpc_throughput.py`` (what it runs, its options, its clean-up).
No figure is checked here: the benchmark prints them (README "Performance")."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import rpc_throughput
from tests.bench.processes import benchmark

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


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigterm_stops_the_servers_and_removes_the_throw_away_home() -> None:
    """A SIGTERM (a harness's timeout, ``kill``) left the echo server and the daemon
    running, and their temporary home on disk."""
    with benchmark("rpc_throughput.py", "--load", "aiohttp", "--startups", "1",
                   "--duration", "30", "--rounds", "1") as run:
        # Until both servers run (the load is being measured).
        run.wait_for(lambda seen: any("echo_server.py" in c for c in seen.values())
                     and any(" serve " in c for c in seen.values()))
        assert run.process.poll() is None, "the benchmark ended before both servers ran"
        homes = {Path(c.split("--home ", 1)[1].split()[0]).parent
                 for c in run.seen.values() if "--home " in c}
        assert homes
        run.process.terminate()
        assert run.process.wait(30) == 128 + signal.SIGTERM
        assert run.still_running() == []
        assert [h for h in homes if h.exists()] == []

