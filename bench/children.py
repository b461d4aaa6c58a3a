"""The processes a benchmark starts (daemons, an echo server), stopped on any exit.

A benchmark is often ended by SIGTERM: a harness's time limit, ``kill``. Python raises
from a signal handler at whatever line runs, and one raised inside ``subprocess.Popen``,
after the fork and before ``Popen`` returns, leaves the new process unknown to the
script: it runs on after the script exits, in a throw-away home the script then
removes. So while a child is being started SIGTERM (and SIGHUP) only takes note, and
acts once the child is in ``RUNNING``, where the script's clean-up finds it.

Ctrl+C is left as it is: the terminal sends SIGINT to the children too, so none is lost.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

#: Every child started by ``launch`` and not yet stopped.
RUNNING: list[subprocess.Popen[Any]] = []


class _Held:
    """How many ``deferred`` blocks are running, and the signal that came meanwhile."""

    depth = 0
    signum: int | None = None


def terminated(signum: int, _frame: FrameType | None) -> None:
    """The SIGTERM and SIGHUP handler: ``SystemExit(128 + signum)``, as a shell reports a
    process ended by the signal, so the script's ``finally`` blocks run as on Ctrl+C; in a
    ``deferred`` block it is raised when the block ends."""
    if _Held.depth:
        _Held.signum = signum
        return
    _Held.signum = None
    raise SystemExit(128 + signum)


def handle_termination() -> None:
    """Install ``terminated`` for SIGTERM and SIGHUP (a closed terminal)."""
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block with SIGTERM and SIGHUP held until it ends, then act on one that
    came. For code that starts a child itself (``Daemon.start()`` of the reliability
    tests), so the child is known by the time the signal acts, and for clean-up that a
    second signal should not cut short. Blocks may nest: the outermost one acts."""
    _Held.depth += 1
    try:
        yield
    finally:
        _Held.depth -= 1
        if not _Held.depth and _Held.signum is not None:
            signum, _Held.signum = _Held.signum, None
            raise SystemExit(128 + signum)


def launch(command: list[str], **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(command, **options)``, in ``RUNNING`` before any SIGTERM acts."""
    with deferred():
        process: subprocess.Popen[Any] = subprocess.Popen(command, **options)
        RUNNING.append(process)
    return process


def stop(process: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """SIGTERM (a daemon stops gracefully), SIGKILL if it still runs after ``grace``
    seconds; waited for, and out of ``RUNNING``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process in RUNNING:
        RUNNING.remove(process)


def stop_all() -> None:
    """Stop every child in ``RUNNING``; a SIGTERM meanwhile acts once they are stopped."""
    with deferred():
        for process in list(RUNNING):
            stop(process)


@contextmanager
def temporary_folder(prefix: str) -> Iterator[Path]:
    """A new folder in the system's temporary folder, for the children's homes; however
    the block ends, every child is stopped first (one may still be writing there) and
    then the folder is removed, with SIGTERM held until both are done."""
    folder: Path | None = None
    try:
        with deferred():  # (a signal inside ``mkdtemp`` would leave the folder unnamed)
            folder = Path(tempfile.mkdtemp(prefix=prefix))
        yield folder
    finally:
        with deferred():
            stop_all()
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
