"""``bench/children.py``: a SIGTERM that lands while a benchmark starts a child acts only
once the child is known, so the clean-up stops it. The signal is sent from inside a
stand-in for ``subprocess.Popen`` after the real process started, the moment a
harness's time limit could hit by bad luck; here it always does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from bench import children

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
REAL_POPEN = subprocess.Popen


@pytest.fixture
def handled() -> Iterator[list[int]]:
    """``children.handle_termination()`` in force, seen through a spy that lists each
    signal it handled; afterwards no child runs and the handlers are as they were."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    children.handle_termination()
    assert signal.getsignal(signal.SIGTERM) is children.terminated
    assert signal.getsignal(signal.SIGHUP) is children.terminated
    seen: list[int] = []

    def spy(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)
        children.terminated(signum, frame)

    for signum in before:
        signal.signal(signum, spy)
    try:
        yield seen
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        children.stop_all()


def signalled(signum: int, seen: list[int]) -> None:
    """Send this process ``signum`` and return once its handler has run, so a handler
    that raises does so here, inside the caller (Python runs it at its next check for
    signals: at once, or when the sleep is interrupted)."""
    os.kill(os.getpid(), signum)
    for _ in range(1000):
        if seen:
            return
        time.sleep(0.01)
    raise AssertionError("the signal's handler never ran")


class SignalledPopen:
    """``subprocess.Popen`` that, once the real process has started and before it returns,
    has this process receive ``signum``; it keeps what it started."""

    def __init__(self, seen: list[int]) -> None:
        self.signum: int = signal.SIGTERM
        self.seen = seen
        self.started: list[subprocess.Popen[Any]] = []
        self.returned = False

    def __call__(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        process: subprocess.Popen[Any] = REAL_POPEN(*args, **kwargs)
        self.started.append(process)
        signalled(self.signum, self.seen)
        self.returned = True
        return process


@pytest.fixture
def popen(handled: list[int], monkeypatch: pytest.MonkeyPatch) -> Iterator[SignalledPopen]:
    """``SignalledPopen`` in place of ``subprocess.Popen``; what it started is killed
    afterwards, should a failed test have lost it."""
    signalling = SignalledPopen(handled)
    monkeypatch.setattr(subprocess, "Popen", signalling)
    try:
        yield signalling
    finally:
        for process in signalling.started:
            process.kill()
            process.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_inside_popen_acts_once_the_child_is_in_running(
        signum: int, handled: list[int], popen: SignalledPopen) -> None:
    """Raised inside ``Popen`` (after the fork, before it returns), the ``SystemExit``
    left the new process unknown to the script and running after it exited."""
    popen.signum = signum
    with pytest.raises(SystemExit) as exit_:
        children.launch(SLEEPER)
    assert handled == [signum]  # the handler ran inside Popen...
    assert popen.returned  # ...and did not raise there,
    assert exit_.value.code == 128 + signum  # but once launch had put the child
    [child] = popen.started
    assert [child] == children.RUNNING  # where the clean-up finds it.
    children.stop_all()
    assert children.RUNNING == []
    assert child.poll() == -signal.SIGTERM


def test_a_sigterm_in_a_deferred_block_acts_when_the_block_ends(
        handled: list[int], popen: SignalledPopen) -> None:
    """A block that starts a child through other code (the soak's ``Daemon.start()``
    keeps it in ``daemon.process``) runs to its end, so whoever keeps the child has it
    by the time the signal acts."""
    kept: list[subprocess.Popen[Any]] = []
    reached = []
    with pytest.raises(SystemExit) as exit_, children.deferred():
        kept.append(subprocess.Popen(SLEEPER))
        reached.append("after Popen")
    assert handled == [signal.SIGTERM] and popen.returned
    assert reached == ["after Popen"]
    assert exit_.value.code == 128 + signal.SIGTERM
    assert kept == popen.started and kept[0].poll() is None


def test_nested_deferred_blocks_act_when_the_outermost_ends(handled: list[int]) -> None:
    """``launch`` and ``stop_all`` defer inside blocks that defer too (the clean-up of
    ``temporary_folder``): the inner end must not act before the outer block is done."""
    reached = []
    with pytest.raises(SystemExit) as exit_, children.deferred():
        with children.deferred():
            signalled(signal.SIGTERM, handled)
        reached.append("after the inner block")
    assert reached == ["after the inner block"]
    assert exit_.value.code == 128 + signal.SIGTERM


def test_a_sigterm_outside_a_deferred_block_acts_at_once(handled: list[int]) -> None:
    reached = []
    with pytest.raises(SystemExit) as exit_:
        signalled(signal.SIGTERM, handled)
        reached.append("after the signal")
    assert reached == []
    assert exit_.value.code == 128 + signal.SIGTERM
    with children.deferred():  # (nothing is left held for a later block)
        pass


def test_stop_kills_a_child_that_ignores_sigterm() -> None:
    child = children.launch([sys.executable, "-c", "import signal, sys, time; "
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print(flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE)
    assert child.stdout is not None
    child.stdout.readline()  # (its SIGTERM handler is set)
    children.stop(child, grace=0.1)
    assert child.returncode == -signal.SIGKILL
    assert children.RUNNING == []
    child.stdout.close()


def test_the_temporary_folder_is_removed_after_its_children_are_stopped(
        handled: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A child may still write in the folder (a daemon's store in its home): removed
    first, the folder could be made again, or not be removable."""
    started: list[subprocess.Popen[Any]] = []
    still_running: list[subprocess.Popen[Any]] = []
    real_rmtree = shutil.rmtree

    def rmtree(path: Path, **options: Any) -> None:
        still_running.extend(p for p in started if p.poll() is None)
        real_rmtree(path, **options)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    with pytest.raises(SystemExit), \
            children.temporary_folder("mindscape-test-children-") as folder:
        started.append(children.launch(SLEEPER, cwd=folder))
        signalled(signal.SIGTERM, handled)
    assert still_running == []
    assert not folder.exists()
    assert children.RUNNING == [] and started[0].returncode == -signal.SIGTERM
