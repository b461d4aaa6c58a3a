"""Fixtures that start real ``mindscape serve`` processes on 127.0.0.1 (see daemon.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .daemon import Daemon

DaemonFactory = Callable[..., Daemon]


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[DaemonFactory]:
    """Start daemons (each with its own home unless one is given); all stopped after."""
    started: list[Daemon] = []

    def start(home: Path | None = None, *, wait: bool = True, **options: Any) -> Daemon:
        """A daemon (started and ready unless ``wait`` is false)."""
        number = len(started) + 1
        daemon = Daemon(home if home is not None else tmp_path / f"home{number}",
                        tmp_path / f"logs{number}", **options)
        started.append(daemon)
        return daemon.start() if wait else daemon

    yield start
    for daemon in started:
        daemon.kill()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for a whole module of tests that do not need a fresh one."""
    base = tmp_path_factory.mktemp("daemon")
    daemon = Daemon(base / "home", base / "logs").start()
    yield daemon
    daemon.kill()
