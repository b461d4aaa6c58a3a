"""Files made unwritable for the daemon under test, for the tests of a home it cannot
write (a full or read-only disk, a folder whose rights changed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unwritable(*paths: Path, held_open: bool = False) -> Iterator[None]:
    """Make ``paths`` (those that exist) unwritable, or skip the test. Rights do not stop
    root, nor a write to a file already open (``held_open``: a running daemon's store),
    so then they are made immutable (``chattr +i``, which stops both; only root may set
    it, and a filesystem without that attribute skips the test). Otherwise, for anyone
    but root (the daemon runs as the same user), the write rights are taken away."""
    existing = [p for p in paths if p.exists()]
    restore: Callable[[], None]
    if os.geteuid() == 0 or held_open:
        chattr = shutil.which("chattr")
        names = [str(p) for p in existing]
        if chattr is None or subprocess.run([chattr, "+i", *names],
                                            capture_output=True).returncode != 0:
            if chattr is not None:
                subprocess.run([chattr, "-i", *names], capture_output=True)
            pytest.skip("cannot make files immutable here (chattr +i): as root, or with "
                        "the files open, nothing else stops a write")

        def restore() -> None:
            subprocess.run([chattr, "-i", *names], check=True)
    else:
        modes = {p: p.stat().st_mode for p in existing}
        for p in existing:
            p.chmod(0o555 if p.is_dir() else 0o444)

        def restore() -> None:
            for p, mode in modes.items():
                p.chmod(mode)
    try:
        yield
    finally:
        restore()
