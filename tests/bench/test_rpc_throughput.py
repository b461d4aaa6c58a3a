"""The plumbing of ``bench/rpc_throughput.py`` (what it runs, its options, its clean-up).
No figure is checked here: the benchmark prints them (README "Performance")."""

from __future__ import annotations

import subprocess
import sys
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
