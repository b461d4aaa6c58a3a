"""The ``mindscape`` command without a running daemon: token, call's failures, settings
resolution (API.md "Running it")."""

from __future__ import annotations

import errno
import http.server
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import companion.app as app_module
import companion.cli as cli_module
from companion.cli import main, rpc_url
from companion.settings import DEFAULT_ORIGINS, Settings, default_home, merge_origins


def test_token_is_created_printed_and_rotated(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    assert main(["token", "--home", str(home)]) == 0
    first = capsys.readouterr().out.strip()
    assert first == (home / "token").read_text().strip() and len(first) >= 43
    assert stat.S_IMODE((home / "token").stat().st_mode) == 0o600
    assert main(["token", "--home", str(home)]) == 0
    assert capsys.readouterr().out.strip() == first
    assert main(["token", "--rotate", "--home", str(home)]) == 0
    rotated = capsys.readouterr().out.strip()
    assert rotated != first and rotated == (home / "token").read_text().strip()


def test_call_without_a_token_file_says_how_to_get_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "companion.info", "--home", str(tmp_path)]) == 2
    assert "mindscape serve" in capsys.readouterr().err


def test_call_without_a_daemon_says_it_is_not_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    code = main(["call", "companion.info", "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9/rpc"])
    assert code == 2
    assert "not running" in capsys.readouterr().err


def test_call_with_params_that_are_not_json(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "--home", str(tmp_path)])
    assert main(["call", "dice.roll", "{expr", "--home", str(tmp_path)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_home_comes_from_mindscape_home_else_the_data_folder(tmp_path: Path) -> None:
    assert default_home({"MINDSCAPE_HOME": str(tmp_path)}) == tmp_path
    assert default_home({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "mindscape"
    # an empty variable counts as unset (`MINDSCAPE_HOME= mindscape serve`), not as "."
    assert default_home({"MINDSCAPE_HOME": "", "XDG_DATA_HOME": str(tmp_path)}) == \
        tmp_path / "mindscape"


@pytest.mark.parametrize(("platform", "environ", "home"), [
    ("linux", {}, "~/.local/share/mindscape"),
    ("linux", {"XDG_DATA_HOME": ""}, "~/.local/share/mindscape"),
    ("darwin", {}, "~/Library/Application Support/mindscape"),
    ("win32", {"LOCALAPPDATA": "/users/gm/Local", "APPDATA": "/users/gm/Roaming"},
     "/users/gm/Local/mindscape"),
    ("win32", {}, "~/AppData/Local/mindscape")])
def test_home_is_the_platforms_per_user_data_folder(
        platform: str, environ: dict[str, str], home: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/API.md "Running it": `$XDG_DATA_HOME/mindscape`, else
    `~/.local/share/mindscape`, on Linux (the XDG Base Directory specification: "If
    $XDG_DATA_HOME is either not set or empty, a default equal to $HOME/.local/share
    should be used"); `~/Library/Application Support/mindscape` on macOS;
    `%LOCALAPPDATA%\\mindscape` on Windows."""
    monkeypatch.setattr(sys, "platform", platform)
    assert default_home(environ) == Path(home).expanduser()


def test_allow_origin_adds_to_the_defaults() -> None:
    origins = merge_origins(["https://vtt.example/", "http://localhost:30000"])
    assert origins == (*DEFAULT_ORIGINS, "https://vtt.example")


@pytest.mark.parametrize(("given", "origin"), [
    ("HTTPS://Foundry.Example:443/join", "https://foundry.example"),
    ("http://vtt.example:80", "http://vtt.example"),
    ("https://vtt.example:8443/game?x=1#y", "https://vtt.example:8443"),
    ("http://[::1]:30000/", "http://[::1]:30000"),
    ("http://[0:0:0:0:0:0:0:1]:30000", "http://[::1]:30000"),
    ("https://bücher.example", "https://xn--bcher-kva.example"),
    # another scheme's default port is no default here
    ("http://vtt.example:443", "http://vtt.example:443"),
    ("https://vtt.example:80", "https://vtt.example:80"),
    # an IPv4-mapped address in the URL standard's hexadecimal pieces
    ("http://[::ffff:192.168.1.20]:30000", "http://[::ffff:c0a8:114]:30000"),
    # "::" stands for the first of the longest runs of zeros, one at the end too, never
    # for a single zero
    ("http://[1:0:0:1:0:0:1:1]", "http://[1::1:0:0:1:1]"),
    ("http://[1:1:1:1:1:1:0:0]", "http://[1:1:1:1:1:1::]"),
    ("http://[1:0:1:1:1:1:1:1]", "http://[1:0:1:1:1:1:1:1]"),
    ("https://vtt.example \n", "https://vtt.example"),  # pasted with what followed it
    # a fully qualified name keeps its dot, and a label may start or end with a hyphen
    ("http://VTT.Example.:30000", "http://vtt.example.:30000"),
    ("https://-vtt-.example", "https://-vtt-.example"),
    # a name ending in a number is an IPv4 address, written in four decimal bytes
    ("http://127.1:30000", "http://127.0.0.1:30000"),
    ("http://0x7F.0.0.1", "http://127.0.0.1"),
    ("http://0300.0250.1.024.", "http://192.168.1.20"),
    ("http://3232235796:30000", "http://192.168.1.20:30000"),
    # 0X as 0x, a bare 0x as 0, 255 in any byte, and 0.0.0.0 (all zeros) is an address
    ("http://0X7F.0x.0.1", "http://127.0.0.1"),
    ("http://\uff10\uff38\uff17\uff26.\uff11", "http://127.0.0.1"),  # full-width 0X7F.1
    ("http://255.255.255.255", "http://255.255.255.255"),
    ("http://0.0.0.0:30000", "http://0.0.0.0:30000"),
    # the longest name DNS has room for: 253 characters
    ("https://" + ".".join(["a" * 63] * 3 + ["b" * 61]), "https://" + ".".join(
        ["a" * 63] * 3 + ["b" * 61])),
    # and its dot at the end is not counted
    ("https://" + ".".join(["a" * 63] * 3 + ["b" * 61]) + ".", "https://" + ".".join(
        ["a" * 63] * 3 + ["b" * 61]) + ".")])
def test_an_allowed_origin_is_written_as_a_browser_sends_it(given: str, origin: str) -> None:
    """A GM may paste the address from the address bar: the browser's Origin header has
    the scheme and host in lower case, no default port and no path."""
    assert merge_origins([given])[-1] == origin


@pytest.mark.parametrize(("argv", "complaint"), [
    (["--allow-origin", "foundry.example.com"], "is not a web origin"),
    (["--allow-origin", "ftp://files.example"], "is not a web origin"),
    # no browser sends these: each would be listed and never match
    (["--allow-origin", "https://*.forge-vtt.com"], "wildcards are not supported"),
    (["--allow-origin", "https://vtt.*.example"], "wildcards are not supported"),
    (["--allow-origin", "http://exa mple.com"], "is no host name a browser could be at"),
    (["--allow-origin", "http://vtt..example"], "is no host name a browser could be at"),
    # a name ending in a number that is no IPv4 address: a browser opens no such address
    (["--allow-origin", "http://vtt.30000"], "is no IPv4 address"),
    (["--allow-origin", "http://192.168.1.256"], "is no IPv4 address"),
    (["--allow-origin", "http://1.2.3.4.5"], "is no IPv4 address"),
    (["--allow-origin", "http://1.2.3.4.0"], "is no IPv4 address"),  # five parts
    (["--allow-origin", "http://10.08"], "is no IPv4 address"),
    # a label too long for IDNA, and a name longer than DNS's 253 characters
    (["--allow-origin", f"http://{'ü' * 64}.example"], "is no host name a browser could be at"),
    (["--allow-origin", f"http://{'ü' * 64}.1"], "is no host name a browser could be at"),
    (["--allow-origin", "https://" + ".".join(["a" * 63] * 3 + ["b" * 62])],
     "is no host name a browser could be at"),
    (["--allow-origin", "http://[::1"], "'http://[::1' is not a web origin"),
    (["--allow-origin", "http://"], "'http://' is not a web origin"),
    (["--allow-origin", "http://vtt.example:99999"], "has no valid port"),
    (["--port", "70000"], "is not a port"), (["--port", "web"], "is not a port")])
def test_serve_refuses_what_it_cannot_use_before_starting(
        argv: list[str], complaint: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--home", str(tmp_path), *argv])
    assert done.value.code == 2 and complaint in capsys.readouterr().err


@pytest.mark.parametrize(("given", "used"), [
    ("http://127.0.0.1:39393", "http://127.0.0.1:39393/rpc"),
    ("http://127.0.0.1:39393/", "http://127.0.0.1:39393/rpc"),
    ("http://localhost:4000/rpc", "http://localhost:4000/rpc"),
    ("http://[::1]:39393", "http://[::1]:39393/rpc")])
def test_call_accepts_the_address_serve_prints(given: str, used: str) -> None:
    assert rpc_url(given) == used


# -- every failure of the CLI is one line and an exit status, never a traceback ---------
BAD_TOKENS = {
    "not-utf-8": b"\xff\xfe token \x80\n",
    "two-lines": b"first-line\nsecond-line\n",
    "not-latin-1": "t\u00f6ken\u2603".encode(),
    "control-character": b"tok\x07en\n",
    "too-short": b"s3cret\n",
}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mindscape: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("content", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
@pytest.mark.parametrize("command", [["token"], ["call", "companion.info", "--url",
                                                 "http://127.0.0.1:9/rpc"]])
def test_a_token_file_that_holds_no_token_is_refused_with_the_remedy(
        content: bytes, command: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A token file with bytes that are not UTF-8, two lines, characters outside ASCII,
    a control character or a short word is not shown (`token`) or sent (`call`: a header
    cannot carry the others, and a short word could be guessed): one line saying so and
    how to write a new one, exit 2."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").write_bytes(content)
    assert main([*command, "--home", str(home)]) == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert out == ""
    assert str(home / "token") in line and "does not hold a token" in line
    assert f"mindscape token --home {home} --rotate" in line
    assert main(["token", "--rotate", "--home", str(home)]) == 0
    assert main(["token", "--home", str(home)]) == 0


@pytest.mark.parametrize("command", [["token"], ["token", "--rotate"],
                                     ["call", "companion.info"]])
def test_a_token_path_that_is_a_folder_is_reported(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "token").mkdir()
    assert main([*command, "--home", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(tmp_path / "token") in line
    assert [p.name for p in tmp_path.iterdir()] == ["token"]  # no stray temporary copy


@pytest.mark.parametrize(("command", "status"), [
    (["token"], 2), (["token", "--rotate"], 2), (["call", "companion.info"], 2),
    (["serve", "--port", "0"], 2)])
def test_a_home_that_is_a_file_is_reported(command: list[str], status: int, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    assert main([*command, "--home", str(home)]) == status
    line = _one_line(capsys.readouterr().err)
    assert f"the home folder {home} is a file" in line


@pytest.mark.parametrize("command", [["token"], ["call", "companion.info"],
                                     ["serve", "--port", "0"]])
def test_a_home_under_an_unknown_users_folder_is_one_line(
        command: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell leaves ~gm/x as it is when there is no user gm: expanduser raised, with
    a traceback; $MINDSCAPE_HOME the same."""
    assert main([*command, "--home", "~no-such-user-here/x"]) == 2
    assert "--home ~no-such-user-here/x: no user on this computer has that home folder" \
        in _one_line(capsys.readouterr().err)
    monkeypatch.setenv("MINDSCAPE_HOME", "~no-such-user-here")
    assert main(command) == 2
    assert "$MINDSCAPE_HOME ~no-such-user-here: no user" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("params", ['{"expr": NaN}', '{"expr": "1d6", "seed": Infinity}',
                                    '{"seed": 1e999}', '{"expr": "\\ud800"}'])
def test_call_refuses_params_the_daemon_would_refuse_before_sending(
        params: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`call` parses its params with the daemon's strict parser (companion/jsontext.py):
    NaN, Infinity, 1e999 and lone surrogates are not JSON, said here, nothing sent."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "dice.roll", params, "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9/rpc"]) == 2
    assert "the params are not JSON" in _one_line(capsys.readouterr().err)


def _reply(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes = b"",
           content_type: str = "application/json", **headers: str) -> None:
    """Answer ``status`` with ``body`` (and any further ``headers``)."""
    handler.send_response(status)
    for name, value in {"Content-Type": content_type, **headers}.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def serving() -> Iterator[Callable[[type[http.server.BaseHTTPRequestHandler]], str]]:
    """Start a server on a free loopback port with a handler class; its base address."""
    servers: list[http.server.HTTPServer] = []

    def start(handler: type[http.server.BaseHTTPRequestHandler]) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class _Misbehaving(http.server.BaseHTTPRequestHandler):
    """A server at the --url that is not the companion, or fails mid-answer."""

    mode = "close"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.mode == "html":
            _reply(self, 200, b"<html>not the companion</html>", "text/html")
        elif self.mode == "slow":
            time.sleep(1.5)
        elif self.mode == "401":  # as the companion answers a token not its own
            _reply(self, 401, b'{"error": "missing or wrong token"}')
        # "close": no answer at all, the connection is closed

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def misbehaving(serving: Callable[[type[http.server.BaseHTTPRequestHandler]], str]
                ) -> Callable[[str], str]:
    def start(mode: str) -> str:
        return serving(type("Handler", (_Misbehaving,), {"mode": mode})) + "/rpc"

    return start


@pytest.mark.parametrize(("mode", "said"), [
    ("close", "closed the connection without an answer"),
    ("html", "is not JSON"),
    ("slow", "no answer from")])
def test_call_says_what_went_wrong_with_the_answer(
        mode: str, said: str, misbehaving: Callable[[str], str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that hangs up without answering, answers 200 with something that is not
    JSON, or takes longer than `call` waits (40 s; 0.5 s here): one line, exit 2."""
    monkeypatch.setattr(cli_module, "CALL_TIMEOUT", 0.5, raising=False)
    url = misbehaving(mode)
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 2
    out, err = capsys.readouterr()
    assert said in _one_line(err) and out == ""


def test_call_waits_longer_than_a_plugin_method_may_take() -> None:
    """docs/PLUGINS.md "A method": a plugin method that does not answer within 30 s is
    answered -32603 "did not answer within 30 s", with the error id that finds it in the
    log. `call` waits long enough to print that answer, not a timeout of its own without
    the error id (when both waited 30 s, `mindscape call` on a hanging method said "no
    answer ... within 30 s")."""
    from companion.rpc import PLUGIN_METHOD_TIMEOUT

    assert cli_module.CALL_TIMEOUT >= PLUGIN_METHOD_TIMEOUT + 5


@pytest.mark.parametrize(("url", "why"), [
    ("127.0.0.1:39393", "it does not start with http:// or https://"),
    ("ftp://127.0.0.1/rpc", "it does not start with http:// or https://"),
    ("http://127.0.0.1:port/rpc", "its port is not a number from 0 to 65535"),
    ("http://127.0.0.1:99999", "its port is not a number from 0 to 65535"),
    ("http://:39393", "it names no host"),
])
def test_call_with_an_address_it_cannot_use(url: str, why: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Said as such before anything is sent (urllib would call an ftp:// address with FTP,
    and takes the others for a companion that is not running)."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"mindscape: --url {url} is not the companion's address: {why}; give one such as "
        "http://127.0.0.1:39393")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "0", ""])
def test_serve_refuses_a_wildcard_address_and_says_to_name_one(
        host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SECURITY.md: listening on every address would print no usable address and the
    Host check would refuse the names it is reached by: name the address instead."""
    assert main(["serve", "--host", host, "--home", str(tmp_path / "home")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "name the one address to listen on" in line
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("given", "origin"), [
    ("moz-extension://0d3c2a6e-8f11-4c55-9c1b-6b0f3c1e2a77",
     "moz-extension://0d3c2a6e-8f11-4c55-9c1b-6b0f3c1e2a77"),
    ("Chrome-Extension://dhdgffkkebhmkfjojejmpbldmpobfkfo/",
     "chrome-extension://dhdgffkkebhmkfjojejmpbldmpobfkfo"),
    ("safari-web-extension://E5A1B2C3-0000-4C55-9C1B-6B0F3C1E2A77/page.html",
     "safari-web-extension://E5A1B2C3-0000-4C55-9C1B-6B0F3C1E2A77")])
def test_a_userscript_managers_extension_origin_may_be_allowed(given: str,
                                                              origin: str) -> None:
    """docs/ROLL20.md: a userscript manager may send its own extension origin on
    GM_xmlhttpRequest; --allow-origin takes it (scheme in lower case, the id as the
    browser writes it, any path dropped)."""
    assert merge_origins([given])[-1] == origin


@pytest.mark.parametrize("given", ["moz-extension://", "chrome-extension://id:80",
                                   "moz-extension://user@id", "moz-extension:///path",
                                   "moz-extension://.hidden"])
def test_an_extension_origin_without_a_plain_id_is_refused(
        given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--home", str(tmp_path), "--allow-origin", given])
    assert done.value.code == 2 and "is not an extension origin" in capsys.readouterr().err


#: the ``mindscape`` command run as its own process
MINDSCAPE = [sys.executable, "-c", "import sys; from companion.cli import main; "
                                   "sys.exit(main(sys.argv[1:]))"]
#: the environment of those runs: stdout buffered, as in a user's shell (with
#: PYTHONUNBUFFERED every print is written at once, and a failure to write that only
#: the interpreter's flush at exit would meet is never seen)
BUFFERED = {name: value for name, value in os.environ.items()
            if name != "PYTHONUNBUFFERED"}
#: how stdout may refuse what is written: a full disk, and no stdout at all (``>&-``)
UNWRITABLE = {"/dev/full": "No space left on device", "closed": "stdout is closed"}


def _unwritable(stdout: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``mindscape argv`` with ``stdout`` (a key of ``UNWRITABLE``) as its stdout."""
    if stdout == "closed":
        return subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *MINDSCAPE, *argv],
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              env=BUFFERED)
    with open(stdout, "w") as out:
        return subprocess.run([*MINDSCAPE, *argv], stdout=out, stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False, env=BUFFERED)


needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")


@needs_dev_full
@pytest.mark.parametrize("stdout", UNWRITABLE)
@pytest.mark.parametrize("rotate", [[], ["--rotate"]])
def test_a_token_that_cannot_be_written_to_stdout_is_said_to_be_in_its_file(
        stdout: str, rotate: list[str], tmp_path: Path) -> None:
    """docs/API.md "Exit statuses": a command that could not do its job is one line on
    stderr with status 2. Writing the token to a full disk ended in a traceback with
    status 1, which `call` uses for a JSON-RPC error."""
    home = tmp_path / "home"
    done = _unwritable(stdout, ["token", "--home", str(home), *rotate])
    which = "the new token" if rotate else "it"
    assert (done.returncode, done.stderr) == (
        2, f"mindscape: cannot write the token to stdout ({UNWRITABLE[stdout]}); {which} "
           f"is in {home / 'token'}\n")
    assert (home / "token").exists()


@needs_dev_full
@pytest.mark.parametrize("stdout", UNWRITABLE)
@pytest.mark.parametrize(("body", "shown"), [
    (b'{"jsonrpc": "2.0", "id": 1, "result": {"psp": 40}}', "result"),
    (b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 4004, "message": "Not found"}}',
     "error")])
def test_an_answer_that_cannot_be_written_to_stdout_says_the_call_was_made(
        stdout: str, body: bytes, shown: str, answering: Callable[..., str],
        tmp_path: Path) -> None:
    """The call reached the daemon, which may have changed an encounter: the one line
    says so, rather than a traceback with status 1 (a JSON-RPC error's status)."""
    home = tmp_path / "home"
    main(["token", "--home", str(home)])
    done = _unwritable(stdout, ["call", "companion.info", "--home", str(home),
                                "--url", answering(body=body)])
    assert (done.returncode, done.stderr) == (
        2, f"mindscape: cannot write the {shown} of companion.info to stdout "
           f"({UNWRITABLE[stdout]}); the call was made\n")


@needs_dev_full
@pytest.mark.parametrize("stdout", UNWRITABLE)
def test_serve_that_cannot_print_where_it_listens_stops_and_leaves_no_address(
        stdout: str, tmp_path: Path) -> None:
    """The banner is how whoever started the daemon learns its address and pairing steps:
    one that cannot be written (a full disk) stops it cleanly, status 2, one line, no
    `daemon.address` left for `call` to find; it ended in a traceback with the home's
    address left behind."""
    home = tmp_path / "home"
    done = _unwritable(stdout, ["serve", "--home", str(home), "--port", "0"])
    assert (done.returncode, done.stderr) == (
        2, "mindscape: cannot write the address it listens on to stdout "
           f"({UNWRITABLE[stdout]}); stopped\n")
    assert sorted(p.name for p in home.iterdir()) == ["mindscape.sqlite3", "token"]


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    """`mindscape token | head -c 0`, `mindscape call ... | head`: the output's reader
    closed the pipe, so the write fails; the command stops quietly with SIGPIPE's status
    (141), stderr empty."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run([*MINDSCAPE, "token", "--home", str(tmp_path / "home")],
                              stdout=write_end, stderr=subprocess.PIPE, timeout=60,
                              check=False, env=BUFFERED)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")
    assert (tmp_path / "home" / "token").exists()


def test_serve_help_names_every_origin_always_allowed(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for origin in DEFAULT_ORIGINS:
        assert origin in text


# -- the GM at the terminal: typos, usage and what each failure says -------------------
def test_a_mistyped_option_is_refused_with_the_one_meant_and_never_taken_as_a_prefix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mindscape token --rotat` rotated the token (argparse took the prefix) and paired
    VTTs lost the connection; `serve --prot 1` was refused with the usage of `mindscape`
    rather than of `serve`. Now both are usage errors (exit 2) of their own command that
    name the option meant, and nothing is done."""
    home = tmp_path / "home"
    with pytest.raises(SystemExit) as done:
        main(["token", "--rotat", "--home", str(home)])
    assert done.value.code == 2 and not home.exists()
    err = capsys.readouterr().err
    assert "usage: mindscape token" in err
    assert "unrecognized arguments: --rotat (did you mean --rotate?)" in err
    with pytest.raises(SystemExit) as done:
        main(["serve", "--prot", "1", "--home", str(home)])
    assert done.value.code == 2 and not home.exists()
    err = capsys.readouterr().err
    assert "usage: mindscape serve" in err and "--prot (did you mean --port?)" in err


def test_mindscape_alone_prints_its_help_on_stderr(capsys: pytest.CaptureFixture[str]
                                                  ) -> None:
    with pytest.raises(SystemExit) as done:
        main([])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    for command in ("serve", "call", "token"):
        assert f"    {command} " in err


def test_the_log_level_may_be_given_in_capitals() -> None:
    parser, _ = cli_module._parsers()
    assert parser.parse_args(["serve", "--log-level", "DEBUG"]).log_level == "debug"


@pytest.mark.parametrize("option", ["--home", "--url"])
def test_call_takes_its_params_after_its_options(
        option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mindscape call dice.roll --url URL '{...}'` was refused as an unrecognised
    argument; the params are read wherever they stand (here: refused as not an object,
    which shows they were read)."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    value = {"--home": str(tmp_path), "--url": "http://127.0.0.1:9"}[option]
    argv = ["call", "dice.roll", option, value, "[1]"]
    if option == "--url":
        argv += ["--home", str(tmp_path)]
    assert main(argv) == 2
    assert "the params must be a JSON object" in _one_line(capsys.readouterr().err)


def test_params_the_shell_split_say_to_use_single_quotes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mindscape call dice.roll {"expr": "2d6"}` without quotes reaches the command as
    two words, `{expr:` and `2d6}`."""
    with pytest.raises(SystemExit) as done:
        main(["call", "dice.roll", "{expr:", "2d6}", "--home", str(tmp_path)])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "usage: mindscape call" in err
    assert ("call takes the params as one argument, but got 2 ({expr: 2d6}): put the "
            "whole JSON in single quotes, as in mindscape call dice.roll "
            """'{"expr": "2d6"}'""") in err


@pytest.mark.parametrize(("params", "kind"), [
    ("[1]", "an array"), ("5", "a number"), ('"2d6"', "a string"), ("null", "null"),
    ("true", "true or false")])
def test_params_that_are_not_an_object_are_refused_before_sending(
        params: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every method takes its params by name: anything but an object is said here, in
    the GM's words, rather than as the daemon's -32600 or -32602."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "dice.roll", params, "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and _one_line(err) == (
        "mindscape: the params must be a JSON object (the daemon takes them by name), not "
        f"""{kind}; as in mindscape call dice.roll '{{"expr": "2d6"}}'""")


def test_a_home_that_cannot_be_made_under_a_file_says_which_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`token --home FILE/sub` said the token file could not be read and to move it
    aside: there is no token file, a file stands where a folder must be made."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["token", "--home", str(blocker / "home")]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"mindscape: the home folder {blocker / 'home'} cannot be made: {blocker} is a "
        "file, not a folder; give --home a folder (it is made when missing)")


def test_a_daemon_that_refuses_the_token_is_said_to_use_another_home(
        misbehaving: Callable[[str], str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = misbehaving("401")
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and _one_line(err) == (
        f"mindscape: {url} refused the token of {tmp_path / 'token'} (HTTP 401): a "
        "companion there was started with another home folder; give call the --home it "
        "uses")


class _Recording(http.server.BaseHTTPRequestHandler):
    """Records every request it gets (method, path, Authorization); answers a redirect
    to ``elsewhere`` when that is set, else 200 with a JSON-RPC result."""

    seen: list[tuple[str, str, str]]
    elsewhere = ""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        if self.elsewhere:
            _reply(self, 302, Location=self.elsewhere)
        else:
            _reply(self, 200, b'{"jsonrpc": "2.0", "id": 1, "result": "from elsewhere"}')

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recording(serving: Callable[[type[http.server.BaseHTTPRequestHandler]], str]
              ) -> Callable[[str], tuple[str, list[tuple[str, str, str]]]]:
    def start(elsewhere: str = "") -> tuple[str, list[tuple[str, str, str]]]:
        seen: list[tuple[str, str, str]] = []
        return serving(type("Handler", (_Recording,), {"seen": seen,
                                                       "elsewhere": elsewhere})), seen

    return start


def test_call_follows_no_redirect_and_sends_the_token_nowhere_else(
        recording: Callable[[str], tuple[str, list[tuple[str, str, str]]]],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SECURITY.md: `mindscape call` follows no redirect. Audit: urllib turned a 302 to
    the POST into a GET to the new address, with the Authorization header, and printed
    what answered there."""
    other, reached = recording("")
    listener, asked = recording(f"{other}/x")
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path),
                 "--url", listener]) == 2
    out, err = capsys.readouterr()
    assert out == "" and reached == [] and len(asked) == 1
    assert _one_line(err).startswith(
        f"mindscape: {listener}/rpc answered with a redirect (HTTP 302 to {other}/x), "
        "which the companion never sends and call does not follow")


def test_a_method_name_that_is_not_utf8_is_refused_before_sending(
        recording: Callable[[str], tuple[str, list[tuple[str, str, str]]]],
        tmp_path: Path) -> None:
    """docs/API.md: what `call` cannot send as asked is one line on stderr, exit 2,
    nothing sent. Audit: a method name with a byte that is not UTF-8 (`mindscape call
    $'dice\\xff'`) was sent as a lone surrogate, which the daemon's parser refuses:
    the user got `{"code": -32700, "message": "Parse error"}` and status 1, naming
    neither the method nor the byte."""
    listener, asked = recording("")
    home = str(tmp_path)
    subprocess.run([*MINDSCAPE, "token", "--home", home], capture_output=True,
                   check=True, timeout=60)
    done = subprocess.run([*MINDSCAPE, "call", b"dice\xff", "--home", home,
                           "--url", listener], capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, asked) == (2, b"", [])
    assert done.stderr == (b"mindscape: the method name dice\\xff is not text (it holds "
                           b"bytes that are not UTF-8); give a method's name, such as "
                           b"companion.info\n")


def test_params_that_are_not_utf8_are_refused_naming_the_byte(
        recording: Callable[[str], tuple[str, list[tuple[str, str, str]]]],
        tmp_path: Path) -> None:
    """docs/API.md: params that are not a JSON object are one line on stderr, exit 2,
    nothing sent. Review of 042072c: params with a byte that is not UTF-8 (`mindscape
    call dice.roll $'{"expr": "2d6\\xff"}'`) were refused, but as holding 'an unpaired
    surrogate (\\ud800 to \\udfff alone)', which the user never typed: the refusal now
    names the byte and where it is."""
    listener, asked = recording("")
    home = str(tmp_path)
    subprocess.run([*MINDSCAPE, "token", "--home", home], capture_output=True,
                   check=True, timeout=60)
    done = subprocess.run([*MINDSCAPE, "call", "dice.roll", b'{"expr": "2d6\xff"}',
                           "--home", home, "--url", listener], capture_output=True,
                          timeout=60)
    assert (done.returncode, done.stdout, asked) == (2, b"", [])
    assert done.stderr == (b"mindscape: the params are not text (they hold bytes that are "
                           b"not UTF-8: the first, \\xff, is character 14); give one JSON "
                           b"object in single quotes, as in mindscape call dice.roll "
                           b"'{\"expr\": \"2d6\"}'\n")


def test_call_goes_straight_to_the_companion_whatever_proxy_the_environment_names(
        recording: Callable[[str], tuple[str, list[tuple[str, str, str]]]],
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy in http_proxy (with no no_proxy for loopback) would get the request and
    its token: call and serve's check of a daemon already running ignore it."""
    proxy, proxied = recording("")
    companion, asked = recording("")
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    # as in a new process: urlopen keeps the opener it first built, proxies and all
    monkeypatch.setattr(urllib.request, "_opener", None)
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", companion]) == 0
    assert capsys.readouterr().out.strip() == '"from elsewhere"'
    port = int(companion.rsplit(":", 1)[1])
    cli_module._answers_as_mindscape("127.0.0.1", port)
    assert proxied == [] and [a[:2] for a in asked] == [("POST", "/rpc"), ("GET", "/healthz")]


def test_https_to_the_companion_says_it_speaks_plain_http(
        misbehaving: Callable[[str], str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """It said "the companion is not running" with an SSL error number."""
    url = misbehaving("close").replace("http://", "https://")
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"mindscape: no HTTPS at {url}")
    assert line.endswith("the companion itself speaks plain http://, as `mindscape serve` "
                         "prints its address")
    # the SSL library's short reason, not Python's text around it
    assert "[SSL" not in line and "_ssl.c" not in line


@pytest.mark.parametrize("recorded", [False, True], ids=["no-address-file", "address-file"])
def test_a_daemon_not_running_there_says_to_start_it_or_give_the_address_it_printed(
        recorded: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --url, the line names that address and no file, also when daemon.address
    holds another (found by a mutation audit)."""
    main(["token", "--home", str(tmp_path)])
    if recorded:
        (tmp_path / "daemon.address").write_text(RECORDED + "\n")
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "mindscape: the companion is not running at http://127.0.0.1:9/rpc (Connection "
        "refused); start it with `mindscape serve`, or give --url the address it printed")


def _settings(tmp_path: Path, host: str = "127.0.0.1", port: int = 80) -> Settings:
    return Settings(home=tmp_path, host=host, port=port)


@pytest.mark.parametrize(("error", "said"), [
    (OSError(errno.EACCES, "Permission denied"),
     "this user may not open port 80 (ports below 1024 need administrator rights); give "
     "--port another, such as the default 39393"),
    (OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"),
     "127.0.0.1 is not an address of this computer; give --host one of its own (the "
     "default 127.0.0.1: this computer only)"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
     "--host 127.0.0.1 is not a name this computer can look up (Name or service not "
     "known); give an address, such as the default 127.0.0.1")])
def test_what_serve_says_when_it_cannot_listen(error: OSError, said: str,
                                               tmp_path: Path) -> None:
    """(A port below 1024 cannot be refused to root, the test's user, for real.)"""
    assert cli_module._cannot_listen(_settings(tmp_path), error) == (
        f"cannot listen on 127.0.0.1:80: {said}")


def test_the_home_folder_itself_is_locked_and_one_that_cannot_be_stops_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    """One daemon per home folder (docs/API.md): the lock is on the folder, so no lock
    file can be deleted, or be another user's, to let a second daemon in (each did); and
    a home that cannot be locked stops the start with one line, where the daemon used to
    warn and run unguarded."""
    first = app_module.HomeLock(tmp_path)
    with pytest.raises(app_module.HomeInUse):
        app_module.HomeLock(tmp_path)
    first.release()
    app_module.HomeLock(tmp_path).release()
    assert list(tmp_path.iterdir()) == []

    def no_locks(fd: int) -> bool:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(app_module, "_try_lock", no_locks)
    home = tmp_path / "home"
    assert main(["serve", "--home", str(home), "--port", "0"]) == 2
    assert capfd.readouterr().err == (
        f"mindscape: cannot lock the home folder {home} (No locks available), which keeps "
        "a second daemon out of it; give --home a folder this user can read and write\n")


def _open_descriptors() -> set[str]:
    for folder in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(folder):
            return set(os.listdir(folder))
    pytest.skip("no folder lists this process's open descriptors")


def test_a_home_lock_refused_for_any_reason_leaves_no_descriptor_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder opened to be locked is closed again whenever the lock is not taken: a
    home in use, a file system without locks, an interrupt while locking. A process that
    tries again and again (a test suite, a supervisor's retries) keeps no descriptor."""
    first = app_module.HomeLock(tmp_path)
    before = _open_descriptors()
    with pytest.raises(app_module.HomeInUse):
        app_module.HomeLock(tmp_path)
    assert _open_descriptors() == before
    first.release()

    def no_locks(fd: int) -> bool:
        raise OSError(errno.ENOLCK, "No locks available")

    def interrupted(fd: int) -> bool:
        raise KeyboardInterrupt

    for refusal, raised in ((no_locks, app_module.HomeUnlockable),
                            (interrupted, KeyboardInterrupt)):
        monkeypatch.setattr(app_module, "_try_lock", refusal)
        before = _open_descriptors()
        with pytest.raises(raised):
            app_module.HomeLock(tmp_path)
        assert _open_descriptors() == before, raised


def test_releasing_a_home_lock_twice_is_harmless_to_descriptors_opened_since(
        tmp_path: Path) -> None:
    """HomeLock.release: calling it twice is harmless, also when the descriptor it held
    was given to another file in between: that file stays open."""
    lock = app_module.HomeLock(tmp_path)
    lock.release()
    with open(tmp_path / "other", "w") as other:
        lock.release()
        other.write("still open")
    assert (tmp_path / "other").read_text() == "still open"


def test_a_home_lock_taken_as_descriptor_0_is_released(tmp_path: Path) -> None:
    """A daemon started with its stdin closed opens its home as descriptor 0: releasing
    that lock lets the next daemon in too."""
    saved = os.dup(0)
    os.close(0)
    try:
        lock = app_module.HomeLock(tmp_path)
        lock.release()
        app_module.HomeLock(tmp_path).release()
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def test_a_home_folder_that_cannot_be_opened_cannot_be_locked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock is taken on the open folder: one this user cannot open (no read right,
    root aside) is a home that cannot be locked, said with the reason, not a crash."""
    real_open = os.open

    def no_entry(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == tmp_path:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_entry)
    with pytest.raises(app_module.HomeUnlockable) as caught:
        app_module.HomeLock(tmp_path)
    assert caught.value.home == tmp_path
    assert str(caught.value) == f"cannot lock the home folder {tmp_path} (Permission denied)"


# -- found by a mutation audit of companion/cli.py --------------------------------------
@pytest.mark.parametrize("port", ["0", "65535"])
def test_serve_takes_every_port_from_0_to_65535(port: str) -> None:
    """`serve --help`: "the port to listen on (0: any free port, which the banner
    names)": both ends of the range are ports."""
    parser, _ = cli_module._parsers()
    assert parser.parse_args(["serve", "--port", port]).port == int(port)


@pytest.mark.parametrize("port", ["-1", "65536", "web"])
def test_a_port_outside_0_to_65535_is_refused_saying_the_range(
        port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--home", str(tmp_path), "--port", port])
    assert done.value.code == 2
    assert (f"argument --port: {port!r} is not a port (0 to 65535; 0: any free port)"
            in capsys.readouterr().err)


def test_serve_listens_on_127_0_0_1_port_39393_and_logs_each_request_by_default() -> None:
    """docs/API.md "Start": "the daemon binds `127.0.0.1:39393` by default"; `serve
    --help`: "--log-level ... (default: info, one line per request)"."""
    parser, _ = cli_module._parsers()
    args = parser.parse_args(["serve"])
    assert (args.host, args.port, args.log_level) == ("127.0.0.1", 39393, "info")


def test_a_log_level_that_is_none_of_the_four_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`serve --help`: --log-level is one of debug, info, warning, error."""
    with pytest.raises(SystemExit) as done:
        main(["serve", "--home", str(tmp_path), "--log-level", "loud"])
    assert done.value.code == 2
    assert "argument --log-level: invalid choice: 'loud'" in capsys.readouterr().err
    assert not (tmp_path / "token").exists()


@pytest.mark.parametrize(("argv", "meant"), [
    (["serve", "--hos", "0.0.0.0"], "--host"), (["call", "companion.info", "--ur",
                                                  "http://127.0.0.1:9"], "--url"),
    (["token", "--hom", "elsewhere"], "--home")])
def test_no_command_takes_an_option_by_a_prefix(
        argv: list[str], meant: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md "Running it": "Options are written in full (`--rotat` is refused,
    naming `--rotate`, rather than taken for it)", for every command."""
    with pytest.raises(SystemExit) as done:
        main([*argv, "--home", str(tmp_path / "home")] if argv[0] != "token" else argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: mindscape {argv[0]}" in err and f"(did you mean {meant}?)" in err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("argv", "shown"), [
    (["serve", "-port", "39393"], "-port (did you mean --port?) 39393"),
    (["serve", "-prot=39393"], "-prot=39393 (did you mean --port?)"),
    (["token", "-rotate"], "-rotate (did you mean --rotate?)"),
    (["call", "-url", "http://127.0.0.1:9", "companion.info"],
     "-url (did you mean --url?)"),
    (["serve", "-q"], "-q")])
def test_a_long_option_written_with_one_dash_names_the_one_meant(
        argv: list[str], shown: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`-port 39393` is refused as `--prot` is, naming `--port`; a short word (`-q`) that
    stands for no option is only named."""
    monkeypatch.setenv("MINDSCAPE_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"usage: mindscape {argv[0]}" in err
    assert f"unrecognized arguments: {shown}\n" in err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("argv", [["--he"], ["--home", "somewhere"]])
def test_mindscape_without_a_command_is_a_usage_error(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A command is required: `mindscape --he` is no `--help` (options are written in
    full, docs/API.md), and options without a command are a usage error (status 2),
    never a traceback."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    assert "usage: mindscape" in err and "Traceback" not in err


def test_a_mistyped_option_with_its_value_after_an_equals_sign_names_the_one_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--prot=39393", "--home", str(tmp_path / "home")])
    assert done.value.code == 2
    assert "unrecognized arguments: --prot=39393 (did you mean --port?)" \
        in capsys.readouterr().err


def test_a_word_too_many_after_token_is_a_usage_error_of_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["token", "--home", str(tmp_path / "home"), "rotate"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "usage: mindscape token" in err and "unrecognized arguments: rotate" in err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("argv", [
    ["call", "dice.roll", '{"expr": "2d6"}', "--home", "HOME", "3"],
    ["call", "dice.roll", "--home", "HOME", '{"expr": "2d6"}', "3"]])
def test_a_word_after_calls_params_is_said_to_make_two_params(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: "The params are one argument ... before or after the options"; a
    second word is not taken in place of the params, nor dropped."""
    with pytest.raises(SystemExit) as done:
        main([str(tmp_path) if word == "HOME" else word for word in argv])
    assert done.value.code == 2
    assert """call takes the params as one argument, but got 2 ({"expr": "2d6"} 3)""" \
        in capsys.readouterr().err


def test_a_user_with_no_home_folder_is_told_to_give_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A user with no $HOME and no entry in the password database (a container's
    random uid) has no data folder: one line saying to give --home."""
    import pwd

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    for name in ("HOME", "MINDSCAPE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert main(["token"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "mindscape: this user has no home folder to keep the store and the token in; "
        "give --home a folder")


def test_a_home_that_cannot_be_made_under_a_file_further_up_says_which_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    home = blocker / "campaigns" / "home"
    assert main(["token", "--home", str(home)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"mindscape: the home folder {home} cannot be made: {blocker} is a file, not a "
        "folder; give --home a folder (it is made when missing)")


def test_a_home_several_folders_deep_is_made(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: the home folder "is made when missing", the folders it is in too."""
    home = tmp_path / "games" / "dark-sun" / "home"
    assert main(["token", "--home", str(home)]) == 0
    assert capsys.readouterr().out.strip() == (home / "token").read_text().strip()


def test_the_remedy_quotes_a_home_with_a_space_as_a_shell_needs_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command the line says to run is pasted into a shell: a home with a space
    is quoted."""
    home = tmp_path / "my games"
    home.mkdir()
    (home / "token").write_bytes(b"s3cret\n")
    assert main(["token", "--home", str(home)]) == 2
    assert f"run `mindscape token --home '{home}' --rotate` to write a new one" \
        in _one_line(capsys.readouterr().err)


def test_token_warns_on_stderr_when_others_could_read_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: `serve` and `token` make a token file others could only read private
    (0600) and keep it, and say so on stderr and what to do; stdout is the token
    alone."""
    token = tmp_path / "token"
    token.write_text("a-token-that-was-left-readable-by-everyone-0123456789\n")
    token.chmod(0o644)
    assert main(["token", "--home", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "a-token-that-was-left-readable-by-everyone-0123456789\n"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert _one_line(err) == (
        f"mindscape: warning: the token file {token} was readable by other users (mode "
        "0644); it is private now (0600), but the token may have been read: run "
        f"`mindscape token --home {tmp_path} --rotate` and paste the new token into every "
        "paired VTT")


def test_rotate_says_on_stderr_where_the_new_token_was_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: "`--rotate` says on stderr where the new one was written"."""
    assert main(["token", "--rotate", "--home", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == (tmp_path / "token").read_text()
    assert err == (f"(new token written to {tmp_path / 'token'}; paste it into every "
                   "paired VTT)\n")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_token_that_cannot_be_written_is_one_line(capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    """No folder can be made in /proc, whoever asks."""
    assert main(["token", "--home", "/proc/mindscape-home"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "mindscape: cannot write the token to /proc/mindscape-home/token: No such file or "
        "directory")


@pytest.mark.parametrize("params", ["", "[" * 100_000])
def test_call_says_params_that_are_empty_or_nested_too_deep_are_not_json(
        params: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty argument (`'$PARAMS'` unset) is no params left out, and nesting deeper
    than the parser goes is no traceback: both are said not to be JSON, with an
    example, and nothing is sent."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "dice.roll", params, "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("mindscape: the params are not JSON (")
    assert line.endswith("); give one JSON object in single quotes, as in mindscape call "
                         """dice.roll '{"expr": "2d6"}'""")


@pytest.mark.parametrize("command", [["token"], ["call", "companion.info"]])
def test_a_token_path_that_is_a_folder_says_to_move_it_aside_and_what_then_to_run(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: a token file "that cannot be read (a folder, no permission)" is
    refused "with a message that says to move it aside, after which `mindscape token`
    writes a new one": the one for the --home given."""
    (tmp_path / "token").mkdir()
    assert main([*command, "--home", str(tmp_path)]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"mindscape: the token file {tmp_path / 'token'} is a folder, not a file; move it "
        f"aside, then `mindscape token --home {tmp_path}` writes a new one")


def test_an_empty_host_is_shown_as_two_quotes_in_the_refusal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--host ""` (an unset variable) is a wildcard too, said so the GM can see it."""
    assert main(["serve", "--host", "", "--home", str(tmp_path / "home")]) == 2
    assert _one_line(capsys.readouterr().err).startswith(
        "mindscape: --host '' would listen on every address of this computer; name the "
        "one address to listen on")


@pytest.mark.parametrize(("host", "said"), [
    ("a..b", "--host a..b is not a name this computer can look up ("),
    ("x" * 64, f"--host {'x' * 64} is not a name this computer can look up ("),
    # a byte that is no UTF-8 in the command line (Python gives it as a surrogate)
    ("\udcff", "--host \\xff is not a name this computer can look up (it holds bytes "
                "that are not UTF-8)")])
def test_a_host_no_lookup_could_take_is_refused_before_anything_is_made(
        host: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: a failure to start is one line on stderr and exit 2. A host with an
    empty or over-long label, or not UTF-8, cannot even be asked for (it ended in a
    traceback and status 1 once the home was made); it is refused before the home
    folder is made."""
    home = tmp_path / "home"
    assert main(["serve", "--host", host, "--home", str(home), "--port", "0"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"mindscape: {said}")
    assert line.endswith("); give an address, such as the default 127.0.0.1")
    assert not home.exists()


@pytest.mark.parametrize("argv", [
    ["call", "dice\udcff"],
    ["call", "dice.roll", '{"expr": "2d6\udcff"}'],
    ["serve", "--host", "local\udcffhost", "--port", "0"]],
    ids=["method name", "params", "host"])
def test_a_byte_that_is_not_utf8_is_shown_as_backslash_x_wherever_it_is(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: a byte of the command line that is not UTF-8 (0xFF here; Python
    gives it as the lone surrogate U+DCFF) is named as ``\\xff`` in each refusal, the
    method name's, the params' and the host's alike: the host's said ``\\udcff``, a
    character the user never typed, where the others said ``\\xff``. Nothing is made."""
    home = tmp_path / "home"
    assert main([*argv, "--home", str(home)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "\\xff" in line and "bytes that are not UTF-8" in line, line
    assert "\\udcff" not in line and "\udcff" not in line, line
    assert not home.exists()


def test_a_method_name_holding_another_lone_surrogate_is_refused_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A lone surrogate that stands for no byte (U+D800, as a Windows command line may
    hold) is shown as ``\\ud800``: a refusal, not the traceback ``os.fsencode`` raised
    on it."""
    assert main(["call", "dice\ud800", "--home", str(tmp_path / "home")]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "mindscape: the method name dice\\ud800 is not text (it holds bytes that are not "
        "UTF-8); give a method's name, such as companion.info")


class _Answering(http.server.BaseHTTPRequestHandler):
    """Answers every POST with ``status``, ``body`` and ``headers_out``, or with ``raw``
    bytes when set (something that is not HTTP at all)."""

    status = 200
    body = b""
    headers_out: ClassVar[dict[str, str]] = {}
    raw = b""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.raw:
            self.wfile.write(self.raw)
        else:
            _reply(self, self.status, self.body, **self.headers_out)
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def answering(serving: Callable[[type[http.server.BaseHTTPRequestHandler]], str]
              ) -> Callable[..., str]:
    """Start an ``_Answering`` server with the given class attributes; its /rpc."""
    def start(**attributes: Any) -> str:
        return serving(type("Handler", (_Answering,), attributes)) + "/rpc"

    return start


def _call(url: str, home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`mindscape call companion.info --url URL` with a token in ``home``: (status, out,
    err)."""
    main(["token", "--home", str(home)])
    capsys.readouterr()
    status = main(["call", "companion.info", "--home", str(home), "--url", url])
    out, err = capsys.readouterr()
    return status, out, err


def test_call_prints_the_result_as_indented_json_with_its_letters_as_they_are(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: `call` "prints the result as JSON on stdout": for a GM to read,
    indented, and a name such as Zanna Mérë's as written, not as \\u escapes."""
    url = answering(body='{"jsonrpc": "2.0", "id": 1, "result": {"name": "Zanna Mérë", '
                         '"psp": 40}}'.encode())
    assert _call(url, tmp_path, capsys) == (
        0, '{\n  "name": "Zanna Mérë",\n  "psp": 40\n}\n', "")


def test_call_prints_a_json_rpc_error_as_indented_json_with_status_1(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md "Exit statuses": 1, "the daemon answered with a JSON-RPC error", "the
    error object as JSON on stdout", laid out as a result is."""
    url = answering(body=b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 4004, '
                         b'"message": "Not found"}}')
    assert _call(url, tmp_path, capsys) == (
        1, '{\n  "code": 4004,\n  "message": "Not found"\n}\n', "")


@pytest.mark.parametrize("body", [b"", b"[]", b"42", b'{"jsonrpc": "2.0", "id": 1}'])
def test_an_answer_that_is_empty_or_no_json_rpc_answer_is_one_line(
        body: bytes, answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: a server that "answers something that is not JSON" is one line on
    stderr and exit 2, nothing on stdout. An empty 200 is not JSON (it was printed as
    `null` with exit 0), and JSON with neither a result nor an error is no answer to
    the call either (it was printed as if it were the result)."""
    url = answering(body=body)
    code, out, err = _call(url, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert _one_line(err) == (
        f"mindscape: the answer from {url} is not JSON; is the companion running there?"
        if not body else
        f"mindscape: the answer from {url} is JSON but no JSON-RPC answer (neither a "
        "result nor an error); is the companion running there?")


def test_an_answer_with_both_a_result_and_an_error_is_taken_as_the_error(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """JSON-RPC 2.0 never has both; should a server send both, the call did not
    succeed for certain: the error is printed, with status 1."""
    url = answering(body=b'{"jsonrpc": "2.0", "id": 1, "result": 7, "error": '
                         b'{"code": 4004, "message": "Not found"}}')
    assert _call(url, tmp_path, capsys) == (
        1, '{\n  "code": 4004,\n  "message": "Not found"\n}\n', "")


def test_a_null_result_is_printed_as_null(answering: Callable[..., str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A result of `null` is a result: printed, exit 0."""
    url = answering(body=b'{"jsonrpc": "2.0", "id": 1, "result": null}')
    assert _call(url, tmp_path, capsys) == (0, "null\n", "")


@pytest.mark.parametrize(("status", "location", "said"), [
    (300, "", "answered with a redirect (HTTP 300), which the companion never sends"),
    (301, "http://elsewhere.example/" + "x" * 300,
     "answered with a redirect (HTTP 301 to http://elsewhere.example/" + "x" * 175
     + "), which the companion never sends")])
def test_every_3xx_is_a_redirect_call_does_not_follow(
        status: int, location: str, said: str, answering: Callable[..., str],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SECURITY.md: `mindscape call` follows no redirect. 300 is one too; the line
    names where it pointed, when it did (at most 200 characters of it)."""
    url = answering(status=status, headers_out={"Location": location} if location else {})
    code, out, err = _call(url, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert _one_line(err).startswith(f"mindscape: {url} {said} and call does not follow")


def test_another_http_error_is_one_line_with_the_start_of_what_it_said(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 400 (no redirect) from whatever listens there: its status and at most 300
    characters of its body, on one line."""
    body = ("Bad   request!\n" * 40).encode()
    url = answering(status=400, body=body)
    code, out, err = _call(url, tmp_path, capsys)
    assert (code, out) == (2, "")
    said = " ".join(body.decode().split())[:300]
    assert _one_line(err) == f"mindscape: HTTP 400 from {url}: {said}"


@pytest.fixture
def resetting() -> Iterator[str]:
    """A listener that takes one request whole and then resets the connection; its
    /rpc."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def reset_one() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(10)
            request = b""
            while b"\r\n\r\n" not in request or not request.endswith(b"}"):
                request += connection.recv(65536)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                  struct.pack("ii", 1, 0))

    thread = threading.Thread(target=reset_one, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/rpc"
    thread.join(10)
    listener.close()


def test_a_connection_reset_after_the_request_is_one_line(
        resetting: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/API.md: "a server that hangs up" is one line on stderr and exit 2, also when
    it resets the connection rather than closing it."""
    code, out, err = _call(resetting, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert _one_line(err) == (f"mindscape: {resetting} closed the connection without an "
                              "answer (ConnectionResetError); is the companion running "
                              "there?")


def test_an_answer_that_is_not_http_is_one_line(
        answering: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Another service on the port (here one that greets as SSH does): one line, exit 2,
    never a traceback."""
    url = answering(raw=b"SSH-2.0-OpenSSH_9.6\r\n")
    code, out, err = _call(url, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert _one_line(err) == (f"mindscape: {url} closed the connection without an answer "
                              "(BadStatusLine); is the companion running there?")


def test_a_companion_that_does_not_accept_the_connection_in_time_is_no_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/API.md: a server that does "not answer within 40 s" (0.5 s here) is one line;
    also when the connection itself is not accepted in time (a listener whose backlog
    is full), rather than "not running" with "timed out"."""
    monkeypatch.setattr(cli_module, "CALL_TIMEOUT", 0.5, raising=False)
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        queued = [socket.socket() for _ in range(2)]
        try:
            for waiting in queued:
                waiting.setblocking(False)
                waiting.connect_ex(full.getsockname())
            url = f"http://127.0.0.1:{full.getsockname()[1]}/rpc"
            code, out, err = _call(url, tmp_path, capsys)
        finally:
            for waiting in queued:
                waiting.close()
    assert (code, out) == (2, "")
    assert _one_line(err) == f"mindscape: no answer from {url} within 0.5 s"


@pytest.mark.parametrize(("url", "said", "then"), [
    ("http://nosuch.invalid:39393",
     "cannot find the host nosuch.invalid of --url http://nosuch.invalid:39393/rpc (",
     "give the address `mindscape serve` printed, such as http://127.0.0.1:39393"),
    ("http://a..b:39393",
     "--url http://a..b:39393 is not the companion's address (",
     "); give one such as http://127.0.0.1:39393")])
def test_a_host_that_cannot_be_found_or_written_is_said_as_such(
        url: str, said: str, then: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in --url's host: said as a host not found (with the address to give) or
    an address urllib cannot use (the reason in the words of Python's IDNA codec, which
    change between versions), not as a companion that is not running."""
    code, out, err = _call(url, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert _one_line(err).startswith(f"mindscape: {said}")
    assert _one_line(err).endswith(then)


def test_a_host_not_found_is_said_in_the_resolvers_words_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reason is the resolver's own text, without Python's "[Errno -2]"."""
    code, _, err = _call("http://nosuch.invalid:39393", tmp_path, capsys)
    assert code == 2 and "[Errno" not in err and "(" in _one_line(err)


def test_call_without_home_or_token_names_the_token_command_without_home(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The command the line says to run is the one for the home folder used: with
    $MINDSCAPE_HOME and no --home, plain `mindscape token`."""
    monkeypatch.setenv("MINDSCAPE_HOME", str(tmp_path))
    assert main(["call", "companion.info"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"mindscape: no token in {tmp_path / 'token'}; start `mindscape serve` once (or "
        "run `mindscape token`)")


class _Holding(http.server.BaseHTTPRequestHandler):
    """Takes the request, says so on ``arrived``, and does not answer for a while."""

    arrived: threading.Event

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.arrived.set()
        time.sleep(5)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_ctrl_c_while_call_waits_is_status_130_and_nothing_more(
        serving: Callable[[type[http.server.BaseHTTPRequestHandler]], str],
        tmp_path: Path) -> None:
    """docs/API.md "Exit statuses": 130, "interrupted by Ctrl+C while `call` waits",
    output "nothing"."""
    arrived = threading.Event()
    url = serving(type("Handler", (_Holding,), {"arrived": arrived}))
    main(["token", "--home", str(tmp_path)])
    process = subprocess.Popen(
        [*MINDSCAPE, "call", "companion.info", "--home", str(tmp_path), "--url", url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert arrived.wait(30)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, out, err) == (130, b"", b"")


#: an address in a home's daemon.address where nothing listens
RECORDED = "http://127.0.0.1:9/from-the-file"


def _call_with_address(written: str, home: Path, capsys: pytest.CaptureFixture[str],
                       monkeypatch: pytest.MonkeyPatch) -> str:
    """`mindscape call companion.info` without --url from a home whose daemon.address
    holds ``written`` (the default port 1 here, where nothing listens): the one line it
    says, once it has exited 2."""
    monkeypatch.setattr(cli_module, "DEFAULT_PORT", 1)
    main(["token", "--home", str(home)])
    (home / "daemon.address").write_text(written)
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(home)]) == 2
    return _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("written", [
    RECORDED + "\n", RECORDED + "e" * (200 - len(RECORDED))])  # 200 bytes: the most
def test_call_without_url_goes_to_the_address_in_daemon_address(
        written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/API.md: "Without `--url`, `call` goes where the daemon of its home folder
    listens" (`daemon.address`, one line as `serve` writes it), and says the address
    came from there when nothing answers."""
    assert _call_with_address(written, tmp_path, capsys, monkeypatch) == (
        f"mindscape: the companion is not running at {written.strip()} (Connection "
        "refused); start it with `mindscape serve`, or give --url the address it printed "
        "(the address the last `mindscape serve` of this home folder wrote in "
        f"{tmp_path / 'daemon.address'})")


@pytest.mark.parametrize("written", [
    RECORDED + "e" * (201 - len(RECORDED)),  # no address serve writes is so long
    RECORDED.replace("http://", "https://"),  # serve writes its http:// address only
    RECORDED + " and-more"])
def test_a_daemon_address_that_is_not_one_http_address_is_not_gone_to(
        written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`call` takes from `daemon.address` only what `serve` writes there, one
    http:// address; anything else sends it to http://127.0.0.1:39393 (port 1 here)."""
    assert _call_with_address(written, tmp_path, capsys, monkeypatch) == (
        "mindscape: the companion is not running at http://127.0.0.1:1/rpc (Connection "
        "refused); start it with `mindscape serve`, or give --url the address it printed")


@pytest.mark.parametrize(("error", "said"), [
    # Python 3.13's asyncio, when it dropped every address it could not assign
    (OSError("could not bind on any address out of [('127.0.0.1', 80)]"),
     "127.0.0.1 is not an address of this computer; give --host one of its own (the "
     "default 127.0.0.1: this computer only)"),
    (OSError(errno.EINVAL, "Invalid argument"), "Invalid argument"),
    (OSError("something else went wrong"), "something else went wrong")])
def test_what_serve_says_of_other_failures_to_listen(error: OSError, said: str,
                                                    tmp_path: Path) -> None:
    """Any other failure is said with the system's reason; one without an errno with
    its message, never "None"."""
    assert cli_module._cannot_listen(_settings(tmp_path), error) == (
        f"cannot listen on 127.0.0.1:80: {said}")


@pytest.mark.parametrize("given", ["-xh", "--xh"])
def test_the_option_meant_is_a_long_one_even_when_a_short_one_is_nearer(
        given: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--xh (and -xh, read as --xh) is nearer -h than --home, but only long options are
    named; and --xh is just near enough --home to name it."""
    with pytest.raises(SystemExit):
        main(["token", given])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"mindscape token: error: unrecognized arguments: {given} (did you mean --home?)")


class _Healthy(http.server.BaseHTTPRequestHandler):
    """Answers GET /healthz as a mindscape daemon does."""

    def do_GET(self) -> None:
        _reply(self, 200, b'{"status": "ok"}')

    def log_message(self, *args: Any) -> None:
        pass


class _ServerV6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6")
def test_a_port_in_use_asks_the_daemon_at_the_host_given_whether_it_is_mindscape(
        tmp_path: Path) -> None:
    """--host ::1: the question goes to [::1], where the other daemon listens (nothing
    answers at 127.0.0.1 on that port)."""
    try:
        server = _ServerV6(("::1", 0), _Healthy)
    except OSError:
        pytest.skip("no ::1 on this computer")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        said = cli_module._cannot_listen(_settings(tmp_path, "::1", port),
                                         OSError(errno.EADDRINUSE, "in use"))
    finally:
        server.shutdown()
        server.server_close()
    assert said.startswith(f"cannot listen on [::1]:{port}: port {port} is in use by "
                           "another mindscape daemon (of another home folder)")
