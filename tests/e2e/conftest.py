"""Start the real ``mindscape serve`` process (the console script, else ``python -m
companion``) with a temporary home, a free port, and the sample plugin installed the
way a distribution installs one: a ``.dist-info`` folder with ``entry_points.txt`` on
``PYTHONPATH``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mindscape_command() -> list[str]:
    """``$MINDSCAPE_BIN``, the venv's console script, or ``python -m companion``."""
    configured = os.environ.get("MINDSCAPE_BIN")
    if configured and Path(configured).exists():
        return [configured]
    script = Path(sys.executable).with_name("mindscape")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "companion"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def install_sample_plugin(site: Path) -> None:
    """A minimal installed distribution whose entry point names the sample plugin."""
    dist = site / "mindscape_sample-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mindscape-sample\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[mindscape.plugins]\nsample = tests.sample_plugin:PLUGIN\n", encoding="utf-8")


@dataclass
class Daemon:
    home: Path
    site: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None
    banner: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.site), str(ROOT)])
        env.pop("MINDSCAPE_HOME", None)
        return env

    def start(self) -> None:
        self.process = subprocess.Popen(
            [*mindscape_command(), "serve", "--home", str(self.home), "--port",
             str(self.port)], env=self.env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        deadline = time.monotonic() + 20
        self.banner = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"the daemon exited with {self.process.wait()}")
            self.banner.append(line)
            if line.startswith("Stop with"):
                return
        raise AssertionError("the daemon did not print its banner in time")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    @property
    def token(self) -> str:
        return (self.home / "token").read_text(encoding="utf-8").strip()

    def call(self, method: str, params: Any = None, timeout: float = 10) -> Any:
        """The whole JSON-RPC response object of one call."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
        if params is not None:
            message["params"] = params
        request = urllib.request.Request(
            f"{self.url}/rpc", data=json.dumps(message).encode(), method="POST",
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())

    def ok(self, method: str, params: Any = None) -> Any:
        answer = self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    site = tmp_path / "site"
    install_sample_plugin(site)
    d = Daemon(home=tmp_path / "home", site=site)
    d.start()
    try:
        yield d
    finally:
        if d.process is not None and d.process.poll() is None:
            d.kill()
        if d.process is not None and d.process.stdout is not None:
            d.process.stdout.close()
