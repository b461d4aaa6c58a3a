"""The real daemon as a process, and plain clients for it.

The reliability tests and ``bench/soak.py`` start ``mindscape serve`` on 127.0.0.1 with
a free port and a throw-away ``--home``, exactly as a user would, so a SIGKILL, a corrupt
file or a full disk hits the same code a user runs. Output goes to files outside the
home so the tests can read every log line afterwards (the token must be in none).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"


def mindscape_command() -> list[str]:
    """How to run the ``mindscape`` console script (``$MINDSCAPE_BIN`` when set, as in
    ``scripts/test.sh``; else the one beside this interpreter; else ``-m companion``)."""
    given = os.environ.get("MINDSCAPE_BIN")
    if given:
        return [given]
    beside = Path(sys.executable).with_name("mindscape")
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-m", "companion"]


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


class DaemonExited(RuntimeError):
    """The daemon process ended while it was expected to serve."""


@dataclass
class Daemon:
    """One ``mindscape serve`` process; ``output()`` is everything it printed."""

    home: Path
    logs: Path
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    #: run in the child before exec (resource limits for the fault tests)
    preexec: Callable[[], None] | None = None
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        """Where the daemon listens."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def host_header(self) -> str:
        """The ``Host`` header a local client sends."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        """The running process's id."""
        assert self.process is not None
        return self.process.pid

    def command(self) -> list[str]:
        """The command line that starts this daemon."""
        return [*mindscape_command(), "serve", "--host", LOOPBACK, "--port", str(self.port),
                "--home", str(self.home), "--log-level", "info", *self.extra_args]

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for it (output appended to the log files)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        out = (self.logs / f"stdout.{self.starts}.log").open("wb")
        err = (self.logs / f"stderr.{self.starts}.log").open("wb")
        try:
            self.process = subprocess.Popen(
                self.command(), cwd=ROOT, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                preexec_fn=self.preexec)
        finally:
            out.close()
            err.close()
        return self.process

    def listening(self) -> bool:
        """Whether this start's process printed that it listens: it does once it holds
        the port, so a ``/healthz`` answered before that came from another process that
        took the port between ``free_port`` and the bind."""
        log = self.logs / f"stdout.{self.starts}.log"
        return "listening on" in log.read_text(encoding="utf-8", errors="replace")

    def start(self, timeout: float = 20.0) -> Daemon:
        """Start and wait until it says it listens and ``/healthz`` answers;
        ``DaemonExited`` when it stops."""
        process = self.launch()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise DaemonExited(f"mindscape serve exited with {process.returncode}:\n"
                                   + self.output())
            try:
                if self.listening() and \
                        request(self, "GET", "/healthz", timeout=1.0).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"mindscape serve did not answer within {timeout} s:\n"
                           + self.output())

    def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait for the process to end on its own; its exit status."""
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM (a graceful stop), then SIGKILL if it takes too long."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, like a power cut for the process."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    @property
    def token(self) -> str:
        """The access token from ``HOME/token``."""
        return (self.home / "token").read_text(encoding="utf-8").strip()

    def output(self) -> str:
        """Everything every start of this daemon wrote to stdout and stderr."""
        parts = []
        for path in sorted(self.logs.glob("std*.log")):
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "".join(parts)

    def rss_kib(self) -> int:
        """The process's resident set size (``VmRSS`` in ``/proc/<pid>/status``)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS line")


# -- plain HTTP ------------------------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", errors="replace")


def request(daemon: Daemon, method: str, path: str, body: bytes | None = None,
            headers: Mapping[str, str] | None = None, timeout: float = 10.0) -> Reply:
    """One HTTP request with exactly the headers given (``Host`` defaults to the
    daemon's own address; pass ``Host`` to override it)."""
    connection = http.client.HTTPConnection(LOOPBACK, daemon.port, timeout=timeout)
    try:
        given = dict(headers or {})
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if "Host" not in given:
            given["Host"] = daemon.host_header
        if body is not None and "Content-Length" not in given:
            given["Content-Length"] = str(len(body))
        for name, value in given.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return Reply(response.status,
                     {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def auth(daemon: Daemon) -> dict[str, str]:
    """Headers that carry the daemon's token."""
    return {"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"}


def post_rpc(daemon: Daemon, payload: Any, timeout: float = 10.0) -> Reply:
    """POST ``payload`` (bytes as they are, anything else as JSON) to ``/rpc`` with the
    token."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return request(daemon, "POST", "/rpc", body, auth(daemon), timeout=timeout)


class RpcFault(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(f"{error.get('code')} {error.get('message')}: {error.get('data')}")
        self.code = int(error.get("code", 0))
        self.data = error.get("data")


def rpc(daemon: Daemon, method: str, params: Any = None, timeout: float = 10.0) -> Any:
    """Call ``method``; its result, or ``RpcFault``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": 1}
    if params is not None:
        message["params"] = params
    reply = post_rpc(daemon, message, timeout)
    assert reply.status == 200, (reply.status, reply.text)
    answer = reply.json()
    if "error" in answer:
        raise RpcFault(answer["error"])
    return answer["result"]
