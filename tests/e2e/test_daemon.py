"""End to end: the real ``mindscape`` process, killed with SIGKILL mid-encounter and
restarted, keeps every step it acknowledged (API.md: 'Every step is stored before the
call answers')."""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import stat
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, Daemon, free_port, mindscape_command

ULCEN = {"id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 4,
         "psp": 40, "psp_max": 40, "int": 14, "wis": 13, "mac": 10,
         "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}
FENKA = {"id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 3, "psp": 30,
         "psp_max": 30, "int": 12, "wis": 12, "mac": 10, "attacks": ["mind-thrust"],
         "defenses": ["mental-barrier"]}


def test_banner_token_file_and_plugin_from_a_dist_info(daemon: Daemon) -> None:
    banner = "".join(daemon.banner)
    assert daemon.url in banner and "mindscape token" in banner
    assert str(daemon.home / "token") in banner and daemon.token not in banner
    assert stat.S_IMODE((daemon.home / "token").stat().st_mode) == 0o600
    info = daemon.ok("companion.info")
    plugins = {p["name"]: p for p in info["plugins"]}
    assert plugins["sample"]["version"] == "1.0" and plugins["sample"]["error"] is None
    assert "sample-duel" in info["systems"]
    assert daemon.ok("sample.echo", {"text": "hi"})["echo"] == "hi"


def test_every_acknowledged_step_survives_sigkill(daemon: Daemon) -> None:
    eid = daemon.ok("encounter.create", {"system": "revised-2e", "name": "kill test"})["id"]
    daemon.ok("encounter.add", {"id": eid, "combatant": ULCEN})
    daemon.ok("encounter.add", {"id": eid, "combatant": FENKA})
    acknowledged: list[int] = []
    for round_number in range(2):
        daemon.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
            "attack": {"mode": "mind-thrust", "target": "fenka"}}})
        daemon.ok("encounter.declare", {"id": eid, "combatant_id": "fenka", "choice": {
            "defense": {"mode": "mental-barrier"}}})
        acknowledged.append(daemon.ok("encounter.resolve", {"id": eid,
                                                            "seed": round_number})["revision"])
    before_kill = daemon.ok("encounter.log", {"id": eid})

    # More encounters keep writing while the process is killed: whatever was answered
    # must be there after the restart.
    other = daemon.ok("encounter.create", {"system": "sample-duel"})["id"]
    answered: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            try:
                result = daemon.ok("encounter.add", {
                    "id": other, "combatant": {"id": f"c{n}", "name": f"C{n}"}})
            except (urllib.error.URLError, ConnectionError, OSError):
                return
            if n < 60:
                answered.append(result["combatant_id"])
            n += 1
            if n >= 60:
                return

    thread = threading.Thread(target=writer)
    thread.start()
    while len(answered) < 20 and thread.is_alive():
        thread.join(0.01)
    daemon.kill()
    stop.set()
    thread.join(10)

    daemon.start()
    after = daemon.ok("encounter.log", {"id": eid})
    assert after == before_kill
    view = daemon.ok("encounter.get", {"id": other})
    assert set(answered) <= set(view["combatants"])
    assert len(answered) >= 20
    assert view["revision"] >= len(answered)
    # and the encounter goes on where it stopped
    daemon.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka"}}})
    daemon.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                    "choice": {"defense": None}})
    step = daemon.ok("encounter.resolve", {"id": eid, "seed": 9})
    assert step["revision"] == acknowledged[-1] + 3
    assert daemon.stop() == 0


def test_an_acknowledged_undo_delete_refresh_and_create_survive_sigkill_at_once(
        daemon: Daemon) -> None:
    """API.md: 'Every step is stored before the call answers', and every write is one
    (docs/RELIABILITY.md: create, add, refresh, declare, resolve, undo, delete): the
    process is killed the moment the last answer arrives, with nothing after it."""
    kept = daemon.ok("encounter.create", {"system": "revised-2e"})["id"]
    for combatant in (ULCEN, FENKA):
        daemon.ok("encounter.add", {"id": kept, "combatant": combatant})
    daemon.ok("encounter.declare", {"id": kept, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka"}}})
    before = daemon.ok("encounter.get", {"id": kept})
    daemon.ok("encounter.resolve", {"id": kept, "force": True, "seed": 4})
    undone = daemon.ok("encounter.undo", {"id": kept})
    refreshed = daemon.ok("encounter.refresh", {"id": kept, "combatant_id": "fenka",
                                                "combatant": {**FENKA, "psp": 12}})
    gone = daemon.ok("encounter.create", {"system": "sample-duel"})["id"]
    daemon.ok("encounter.delete", {"id": gone})
    last = daemon.ok("encounter.create", {"system": "power-pool", "name": "last"})["id"]
    daemon.kill()
    daemon.start()
    view = daemon.ok("encounter.get", {"id": kept})
    assert view["revision"] == refreshed["revision"] == undone["revision"] + 1
    assert view["combatants"]["fenka"]["psp"] == 12
    assert {k: v for k, v in view.items() if k not in ("revision", "combatants")} == \
        {k: v for k, v in before.items() if k not in ("revision", "combatants")}
    log = daemon.ok("encounter.log", {"id": kept})["steps"]
    assert [(s["kind"], s["undone_by"]) for s in log] == [
        ("add", None), ("add", None), ("declare", None), ("resolve", undone["revision"]),
        ("undo", None), ("refresh", None)]
    assert daemon.call("encounter.get", {"id": gone})["error"]["code"] == 4004
    assert [(e["id"], e["name"]) for e in daemon.ok("encounter.list")] == [
        (kept, None), (last, "last")]
    assert daemon.stop() == 0


def test_mindscape_call_and_token_commands(daemon: Daemon) -> None:
    base = [*mindscape_command()]
    home = ["--home", str(daemon.home)]
    token = subprocess.run([*base, "token", *home], capture_output=True, text=True,
                           env=daemon.env, check=True)
    assert token.stdout.strip() == daemon.token
    ok = subprocess.run([*base, "call", "dice.roll", '{"expr": "2d6", "seed": 1}', *home,
                         "--url", f"{daemon.url}/rpc"], capture_output=True, text=True,
                        env=daemon.env)
    assert ok.returncode == 0
    result: dict[str, Any] = json.loads(ok.stdout)
    assert len(result["rolls"]) == 2
    # The address the banner prints, without /rpc, works as well.
    failed = subprocess.run([*base, "call", "encounter.get", '{"id": "nope"}', *home,
                             "--url", daemon.url], capture_output=True, text=True,
                            env=daemon.env)
    assert failed.returncode == 1
    assert json.loads(failed.stdout) == {"code": 4004, "message": "Not found",
                                         "data": {"id": "nope"}}
    old = daemon.token
    rotated = subprocess.run([*base, "token", "--rotate", *home], capture_output=True,
                             text=True, env=daemon.env, check=True)
    assert rotated.stdout.strip() == daemon.token != old
    assert daemon.stop() == 0


def test_a_store_that_is_not_ours_stops_the_start_and_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    store = home / "mindscape.sqlite3"
    store.write_bytes(b"this is not a database" * 10)
    done = subprocess.run([*mindscape_command(), "serve", "--home", str(home), "--port",
                           str(free_port())], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "cannot open the store" in done.stderr
    assert store.read_bytes() == b"this is not a database" * 10


def test_a_port_in_use_is_reported(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*mindscape_command(), "serve", "--home", str(tmp_path),
                               "--port", str(port)], capture_output=True, text=True,
                              timeout=30)
    assert done.returncode == 2
    assert done.stderr == (f"mindscape: cannot listen on 127.0.0.1:{port}: port {port} is "
                           "in use by another program; stop it, or give this one another "
                           "--port (0: any free port)\n")


def test_a_port_another_mindscape_listens_on_is_reported_as_such(daemon: Daemon,
                                                                tmp_path: Path) -> None:
    """A second daemon of another home on the first one's port: said to be another
    mindscape daemon (it answers /healthz), not some other program."""
    done = subprocess.run([*mindscape_command(), "serve", "--home", str(tmp_path / "other"),
                           "--port", str(daemon.port)], capture_output=True, text=True,
                          timeout=30, env=daemon.env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"mindscape: cannot listen on 127.0.0.1:{daemon.port}: port "
                           f"{daemon.port} is in use by another mindscape daemon (of "
                           "another home folder); stop it, or give this one another --port "
                           "(0: any free port)\n")
    assert daemon.ok("companion.info")["name"] == "mindscape"


def _interrupting_plugin(tmp_path: Path, sig: str) -> dict[str, str]:
    """The environment of a daemon whose plugin sends it ``sig`` while it loads
    (tests/e2e/interrupting_plugin.py, installed as a dist-info under ``tmp_path``)."""
    site = tmp_path / "site"
    dist = site / "mindscape_interrupting-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mindscape-interrupting\nVersion: 1.0\n",
        encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[mindscape.plugins]\ninterrupting = tests.e2e.interrupting_plugin:PLUGIN\n",
        encoding="utf-8")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
            "MINDSCAPE_TEST_SIGNAL": sig}


@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_during_the_start_stops_it_quietly(sig: str, tmp_path: Path
                                                             ) -> None:
    """A signal while the daemon starts (here: while its plugins load) was a
    KeyboardInterrupt that could leave the store's thread behind a closed event loop, a
    traceback on stderr (Ctrl+C), or killed it without closing the store (SIGTERM). Now
    the start finishes, the daemon closes what it opened and exits 0 without a banner,
    and the home can be used again at once."""
    env = _interrupting_plugin(tmp_path, sig)
    # a SIGINT that the shell running the tests ignores stays ignored in its children
    done = subprocess.run([*mindscape_command(), "serve", "--home", str(tmp_path / "home"),
                           "--port", str(free_port())], capture_output=True, text=True,
                          timeout=30, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    again = _serve(tmp_path / "home", "--port", "70000")  # refused at once, but not locked
    assert "is not a port" in again.stderr
    assert (tmp_path / "home" / "token").exists()


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP")
@pytest.mark.parametrize("nohup", [False, True])
def test_closing_its_terminal_stops_it_gracefully_unless_started_under_nohup(
        nohup: bool, tmp_path: Path) -> None:
    """SIGHUP (the GM's terminal closed) killed the daemon outright, its store left
    unclosed; now it is a graceful stop like SIGTERM (exit 0, address file removed, the
    store closed and its write-ahead log folded in). Ignored when the daemon started
    (nohup), it stays ignored."""
    home = tmp_path / "home"
    process = subprocess.Popen(
        [*mindscape_command(), "serve", "--home", str(home), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP,
                                         signal.SIG_IGN if nohup else signal.SIG_DFL))
    try:
        assert process.stdout is not None
        while not process.stdout.readline().startswith("Stop with"):
            pass
        call = [*mindscape_command(), "call", "encounter.create", '{"system": "power-pool"}',
                "--home", str(home)]
        assert subprocess.run(call, capture_output=True, timeout=30).returncode == 0
        process.send_signal(signal.SIGHUP)
        if nohup:
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(timeout=1.5)
            info = [*mindscape_command(), "call", "companion.info", "--home", str(home)]
            assert subprocess.run(info, capture_output=True, timeout=30).returncode == 0
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not (home / "daemon.address").exists()
    assert not (home / "mindscape.sqlite3-wal").exists()
    assert process.stderr is not None and "Traceback" not in process.stderr.read()


def test_a_home_folder_that_cannot_be_made_is_reported(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = subprocess.run([*mindscape_command(), "serve", "--home", str(blocker / "home"),
                           "--port", str(free_port())], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2
    assert done.stderr == (f"mindscape: the home folder {blocker / 'home'} cannot be made: "
                           f"{blocker} is a file, not a folder; give --home a folder (it is "
                           "made when missing)\n")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_home_folder_the_system_refuses_is_reported_with_the_remedy(tmp_path: Path
                                                                      ) -> None:
    """No folder can be made in /proc, whoever asks (root too, which a read-only folder
    would not stop)."""
    done = _serve(Path("/proc/mindscape-home"))
    assert done.returncode == 2
    assert done.stderr == ("mindscape: cannot use the home folder /proc/mindscape-home: No "
                           "such file or directory; give --home a folder this user can "
                           "write (it is made when missing)\n")


def test_port_0_listens_on_a_free_port_and_the_banner_says_which(tmp_path: Path) -> None:
    process = subprocess.Popen([*mindscape_command(), "serve", "--home", str(tmp_path),
                                "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        port = int(first.split("http://127.0.0.1:", 1)[1].split(" ", 1)[0])
        assert port != 0
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def _serve(home: Path, *extra: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """``mindscape serve`` (of this source tree) that is expected to stop by itself."""
    if env is None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*mindscape_command(), "serve", "--home", str(home), "--port",
                           str(free_port()), *extra], capture_output=True, text=True,
                          timeout=30, env=env)


def test_a_second_daemon_on_the_same_home_is_refused_and_the_lock_goes_with_the_first(
        daemon: Daemon) -> None:
    """Two daemons on one home would each keep their own watchers and caches of one
    store: the second is refused (exit 2, one line naming the home);
    the lock goes with the first process, also when it is killed with SIGKILL."""
    assert daemon.process is not None
    second = _serve(daemon.home, env=daemon.env)
    assert second.returncode == 2, second.stderr
    [line] = second.stderr.strip().splitlines()
    assert f"another mindscape daemon is using the home folder {daemon.home}; stop it " \
           "first" in line
    assert second.stdout == ""
    assert daemon.ok("companion.info")["name"] == "mindscape"
    # the lock is on the folder: no lock file to delete (or to be another user's)
    stray = daemon.home / "daemon.lock"
    stray.unlink(missing_ok=True)
    assert _serve(daemon.home, env=daemon.env).returncode == 2
    daemon.kill()
    daemon.start()
    assert daemon.ok("companion.info")["name"] == "mindscape"
    assert daemon.stop() == 0
    again = subprocess.Popen([*mindscape_command(), "serve", "--home", str(daemon.home),
                              "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=daemon.env)
    try:
        assert again.stdout is not None
        assert again.stdout.readline().startswith("Mindscape companion listening on")
    finally:
        again.terminate()
        assert again.wait(timeout=10) == 0
        if again.stdout is not None:
            again.stdout.close()


def test_the_status_page_names_the_token_command_of_the_banner(daemon: Daemon) -> None:
    """D9: started with --home, the banner says `mindscape token --home DIR`; so must the
    status page, or the token it shows is another home's."""
    command = f"mindscape token --home {daemon.home}"
    assert command in "".join(daemon.banner)
    with urllib.request.urlopen(f"{daemon.url}/", timeout=10) as response:
        page = response.read().decode()
    assert f"<code>{command}</code>" in page
    assert daemon.stop() == 0


@pytest.mark.parametrize("content", [b"\xff\xfe\n", b"one\ntwo\n", "t\u00f6ken".encode(),
                                     b"a\n"])
def test_a_token_file_the_daemon_cannot_use_stops_the_start_with_the_remedy(
        content: bytes, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "token").write_bytes(content)
    done = _serve(home)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert str(home / "token") in line and "does not hold a token" in line
    assert f"`mindscape token --home {home} --rotate`" in line
    assert (home / "token").read_bytes() == content


@pytest.mark.skipif(os.name != "posix", reason="symbolic links and FIFOs")
@pytest.mark.parametrize(("kind", "problem"), [("link", "is a symbolic link"),
                                               ("fifo", "is not a regular file")])
def test_a_token_file_that_is_a_link_or_a_fifo_stops_the_start_with_the_remedy(
        kind: str, problem: str, tmp_path: Path) -> None:
    """A link was followed (the target's token adopted, the target made 0600), a FIFO
    hung the start: both stop it at once, saying what to run."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    if kind == "link":
        target = tmp_path / "elsewhere"
        target.write_text("a-token-in-a-file-somebody-else-points-us-at-0123456789\n")
        target.chmod(0o644)
        (home / "token").symlink_to(target)
    else:
        os.mkfifo(home / "token", 0o600)
    done = _serve(home)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert f"the token file {home / 'token'} {problem}" in line
    assert f"`mindscape token --home {home} --rotate`" in line
    if kind == "link":
        assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_host_that_is_not_loopback_is_warned_about(tmp_path: Path) -> None:
    """SECURITY.md: listening on a network address exposes the daemon with the token as
    its only guard; `serve` says so on stderr before it listens. (198.51.100.7 is a
    documentation address no machine has, so the start then stops: it cannot listen.)"""
    done = _serve(tmp_path / "home", "--host", "198.51.100.7")
    assert done.returncode == 2
    warning, failure = done.stderr.strip().splitlines()
    assert warning.startswith("mindscape: warning: --host 198.51.100.7 exposes the daemon "
                              "to the network")
    assert "the access token is the only guard" in warning
    assert failure.startswith("mindscape: cannot listen on 198.51.100.7:")
    assert failure.endswith(": 198.51.100.7 is not an address of this computer; give --host "
                            "one of its own (the default 127.0.0.1: this computer only)")


def test_call_finds_the_daemon_of_its_home_on_whatever_port_it_listens(
        tmp_path: Path) -> None:
    """docs/API.md "Running it": `serve --port 0` writes the address it listens on to the
    home folder's `daemon.address`, which `call` without --url goes to; the clean stop
    removes it, and a daemon killed leaves it, which `call` then names as the source of
    the address it could not reach."""
    home = tmp_path / "home"
    serve = [*mindscape_command(), "serve", "--home", str(home), "--port", "0"]
    call = [*mindscape_command(), "call", "companion.info", "--home", str(home)]
    for stop in (signal.SIGTERM, signal.SIGKILL):
        process = subprocess.Popen(serve, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        try:
            assert process.stdout is not None
            port = int(process.stdout.readline().split("http://127.0.0.1:", 1)[1]
                       .split(" ", 1)[0])
            while not process.stdout.readline().startswith("Stop with"):
                pass
            address = home / "daemon.address"
            assert address.read_text() == f"http://127.0.0.1:{port}\n"
            assert address.stat().st_mode & 0o777 == 0o600
            done = subprocess.run(call, capture_output=True, text=True, timeout=30)
            assert done.returncode == 0 and json.loads(done.stdout)["name"] == "mindscape"
        finally:
            process.send_signal(stop)
            process.wait(timeout=10)
        if stop == signal.SIGTERM:
            assert not address.exists()
    # killed: the address stays, and call says where it read it
    assert address.exists()
    done = subprocess.run(call, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert str(address) in done.stderr and f"127.0.0.1:{port}" in done.stderr


# -- found by a mutation audit of companion/cli.py --------------------------------------
def _until_stop_line(process: subprocess.Popen[str]) -> list[str]:
    """The banner's lines, read up to "Stop with Ctrl+C."."""
    assert process.stdout is not None
    lines = [process.stdout.readline().rstrip("\n")]
    while not lines[-1].startswith("Stop with") and lines[-1]:
        lines.append(process.stdout.readline().rstrip("\n"))
    return lines


@pytest.mark.parametrize(("host", "in_url"), [("127.0.0.1", "127.0.0.1"),
                                              ("::1", "[::1]"),
                                              ("LOCALHOST", "LOCALHOST")])
def test_the_banner_says_where_to_call_and_how_to_pair_and_loopback_is_not_warned_about(
        host: str, in_url: str, tmp_path: Path) -> None:
    """docs/API.md "Start": the daemon "prints where it listens and how to pair a VTT
    (token file, `mindscape token`, Foundry's ... Pair with the companion)": the
    endpoint, the WebSocket, the status page and every allowed origin, an IPv6 address
    in brackets; `daemon.address` holds the same address. A loopback address (any
    spelling of localhost) is not warned about."""
    home = tmp_path / "home"
    process = subprocess.Popen(
        [*mindscape_command(), "serve", "--home", str(home), "--port", "0", "--host", host,
         "--allow-origin", "https://vtt.example", "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = _until_stop_line(process)
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert process.stderr is not None and process.stderr.read() == ""
    url = banner[0].split(" ", 4)[4].split(" ", 1)[0]
    assert url.startswith(f"http://{in_url}:") and not url.endswith(":0")
    assert banner == [
        f"Mindscape companion listening on {url} (JSON-RPC: {url}/rpc, WebSocket: "
        f"ws{url.removeprefix('http')}/ws)",
        f"Status page: {url}/",
        "Pair a virtual tabletop:",
        f"  1. the access token is in {home / 'token'}; show it with `mindscape token "
        f"--home {home}`",
        "  2. Foundry VTT: Game Settings › Configure Settings › Mindscape › Pair with the "
        f"companion: address {url}, paste the token, press Test the connection",
        "  3. Roll20: click the Mindscape badge bottom left (the bridge userscript, GM's "
        f"tab), give Companion URL {url} and the token, Save and test; then type !psi "
        "pair in the chat, paste the code it whispers under Pairing code, Save and test",
        "  4. allowed browser origins: http://localhost:30000, http://127.0.0.1:30000, "
        "https://vtt.example (add more with --allow-origin)",
        "Stop with Ctrl+C."]


class _NotMindscape(http.server.BaseHTTPRequestHandler):
    """Another web server: a page, whatever the path (/healthz included)."""

    def do_GET(self) -> None:
        body = b"<html>a wiki</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_port_another_web_server_listens_on_is_another_program(tmp_path: Path) -> None:
    """docs/API.md "Start": a port in use says whether another mindscape daemon ("it
    answers `/healthz`") or another program holds it: a web server whose /healthz is
    a page, not JSON, is another program (and no traceback)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotMindscape)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        done = subprocess.run([*mindscape_command(), "serve", "--home", str(tmp_path),
                               "--port", str(port)], capture_output=True, text=True,
                              timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"mindscape: cannot listen on 127.0.0.1:{port}: port {port} is "
                           "in use by another program; stop it, or give this one another "
                           "--port (0: any free port)\n")


def test_a_home_that_cannot_take_the_address_file_still_serves(tmp_path: Path) -> None:
    """docs/API.md: `daemon.address` is for `mindscape call` only: a home where it
    cannot be written (a folder in its place) costs `call` its default, not the start
    (the daemon serves, and stops cleanly)."""
    home = tmp_path / "home"
    (home / "daemon.address").mkdir(parents=True)
    process = subprocess.Popen([*mindscape_command(), "serve", "--home", str(home),
                                "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        banner = _until_stop_line(process)
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert banner[0].startswith("Mindscape companion listening on http://127.0.0.1:")
    assert banner[-1] == "Stop with Ctrl+C."
    assert (home / "daemon.address").is_dir()
    assert process.stderr is not None and "Traceback" not in process.stderr.read()


def test_a_host_name_is_warned_about_and_one_not_found_is_said_as_such(
        tmp_path: Path) -> None:
    """docs/API.md "--host": "a host name other than `localhost`" is served with a
    warning (docs/SECURITY.md); a name this computer cannot look up then stops the
    start, said as such."""
    done = _serve(tmp_path / "home", "--host", "nosuch.invalid")
    assert (done.returncode, done.stdout) == (2, "")
    warning, failure = done.stderr.strip().splitlines()
    assert warning == ("mindscape: warning: --host nosuch.invalid exposes the daemon to the "
                       "network in plain HTTP: anyone who can reach that address can call "
                       "it, and the access token is the only guard of every encounter and "
                       "its secret choices; see docs/SECURITY.md")
    assert failure.startswith("mindscape: cannot listen on nosuch.invalid:")
    # the reason is the resolver's ("Name or service not known" with glibc)
    assert ": --host nosuch.invalid is not a name this computer can look up (" in failure
    assert failure.endswith("); give an address, such as the default 127.0.0.1")


def test_the_clean_stop_removes_only_its_own_address(tmp_path: Path) -> None:
    """`daemon.address` is removed at the clean stop when it still holds the address
    this daemon wrote; one written over since (by hand, here) is someone else's and
    stays."""
    home = tmp_path / "home"
    process = subprocess.Popen([*mindscape_command(), "serve", "--home", str(home),
                                "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        _until_stop_line(process)
        (home / "daemon.address").write_text("http://127.0.0.1:1\n")
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert (home / "daemon.address").read_text() == "http://127.0.0.1:1\n"


def test_every_file_the_daemon_makes_in_its_home_is_the_users_alone(daemon: Daemon
                                                                    ) -> None:
    """docs/API.md "Home folder": the daemon "creates its files with umask 077 (0600)":
    the store and its write-ahead files as well as the token and daemon.address."""
    daemon.ok("encounter.create", {"system": "power-pool"})
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in daemon.home.iterdir()}
    assert {"mindscape.sqlite3", "token", "daemon.address"} <= set(modes)
    assert modes == dict.fromkeys(modes, "0o600")


@pytest.mark.parametrize(("level", "logged"), [(None, {"warning", "info"}),
                                               ("error", set())])
def test_the_log_level_decides_which_json_lines_go_to_stderr(
        level: str | None, logged: set[str], tmp_path: Path) -> None:
    """`serve --help`: --log-level is "the least severe log lines written to stderr
    (default: info, one line per request; warning drops those)", each a JSON line. A
    token file others could read is logged as a warning (docs/API.md) besides the
    `mindscape: warning:` line, which is said whatever the level."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "token").write_text("a-token-that-was-left-readable-by-everyone-0123456789\n")
    (home / "token").chmod(0o644)
    process = subprocess.Popen(
        [*mindscape_command(), "serve", "--home", str(home), "--port", "0",
         *(["--log-level", level] if level else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _until_stop_line(process)
        call = subprocess.run([*mindscape_command(), "call", "companion.info", "--home",
                               str(home)], capture_output=True, text=True, timeout=30)
        assert call.returncode == 0
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert process.stderr is not None
    lines = process.stderr.read().splitlines()
    [said] = [line for line in lines if line.startswith("mindscape: ")]
    assert said.startswith(f"mindscape: warning: the token file {home / 'token'} was "
                           "readable by other users")
    records = [json.loads(line) for line in lines if line != said]
    assert {r["level"] for r in records} == logged
    if level is None:
        assert any(r["level"] == "warning" and r["logger"] == "mindscape.app"
                   for r in records)
        assert any(r.get("methods") == ["companion.info"] for r in records)


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_a_start_interrupted_does_not_try_to_listen(tmp_path: Path) -> None:
    """docs/API.md "Start": a signal "that comes while it starts ... stops it as soon as
    the start is done, without a banner": it does not go on to listen, so a port taken
    meanwhile is no failure to report (exit 0, nothing said)."""
    env = _interrupting_plugin(tmp_path, "SIGTERM")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run([*mindscape_command(), "serve", "--home", str(tmp_path / "home"),
                               "--port", str(taken.getsockname()[1])], capture_output=True,
                              text=True, timeout=30, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
