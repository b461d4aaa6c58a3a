"""The ``mindscape`` command without a running daemon: token, call's failures, settings
resolution (API.md "Running it")."""

from __future__ import annotations

import http.server
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import companion.cli as cli_module
from companion.cli import main, rpc_url
from companion.settings import DEFAULT_ORIGINS, default_home, merge_origins


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
    assert main(["call", "companion.info", "--home", str(tmp_path)]) == 1
    assert "mindscape serve" in capsys.readouterr().err


def test_call_without_a_daemon_says_it_is_not_running(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    code = main(["call", "companion.info", "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9/rpc"])
    assert code == 1
    assert "not running" in capsys.readouterr().err


def test_call_with_params_that_are_not_json(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "--home", str(tmp_path)])
    assert main(["call", "dice.roll", "{expr", "--home", str(tmp_path)]) == 1
    assert "not JSON" in capsys.readouterr().err


def test_home_comes_from_mindscape_home_else_the_data_folder(tmp_path: Path) -> None:
    assert default_home({"MINDSCAPE_HOME": str(tmp_path)}) == tmp_path
    assert default_home({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "mindscape"


def test_allow_origin_adds_to_the_defaults() -> None:
    origins = merge_origins(["https://vtt.example/", "http://localhost:30000"])
    assert origins == (*DEFAULT_ORIGINS, "https://vtt.example")


@pytest.mark.parametrize(("given", "origin"), [
    ("HTTPS://Foundry.Example:443/join", "https://foundry.example"),
    ("http://vtt.example:80", "http://vtt.example"),
    ("https://vtt.example:8443/game?x=1#y", "https://vtt.example:8443"),
    ("http://[::1]:30000/", "http://[::1]:30000")])
def test_an_allowed_origin_is_written_as_a_browser_sends_it(given: str, origin: str) -> None:
    """A GM may paste the address from the address bar: the browser's Origin header has
    the scheme and host in lower case, no default port and no path."""
    assert merge_origins([given])[-1] == origin


@pytest.mark.parametrize(("argv", "complaint"), [
    (["--allow-origin", "foundry.example.com"], "is not a web origin"),
    (["--allow-origin", "ftp://files.example"], "is not a web origin"),
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
    how to write a new one, exit 1."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").write_bytes(content)
    assert main([*command, "--home", str(home)]) == 1
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
    assert main([*command, "--home", str(tmp_path)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert str(tmp_path / "token") in line
    assert [p.name for p in tmp_path.iterdir()] == ["token"]  # no stray temporary copy


@pytest.mark.parametrize(("command", "status"), [
    (["token"], 1), (["token", "--rotate"], 1), (["call", "companion.info"], 1),
    (["serve", "--port", "0"], 2)])
def test_a_home_that_is_a_file_is_reported(command: list[str], status: int, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    assert main([*command, "--home", str(home)]) == status
    line = _one_line(capsys.readouterr().err)
    assert f"the home folder {home} is a file" in line


@pytest.mark.parametrize("params", ['{"expr": NaN}', '{"expr": "1d6", "seed": Infinity}',
                                    '{"seed": 1e999}', '{"expr": "\\ud800"}'])
def test_call_refuses_params_the_daemon_would_refuse_before_sending(
        params: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`call` parses its params with the daemon's strict parser (companion/jsontext.py):
    NaN, Infinity, 1e999 and lone surrogates are not JSON, said here, nothing sent."""
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "dice.roll", params, "--home", str(tmp_path), "--url",
                 "http://127.0.0.1:9/rpc"]) == 1
    assert "the params are not JSON" in _one_line(capsys.readouterr().err)


class _Misbehaving(http.server.BaseHTTPRequestHandler):
    """A server at the --url that is not the companion, or fails mid-answer."""

    mode = "close"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.mode == "html":
            body = b"<html>not the companion</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.mode == "slow":
            time.sleep(1.5)
        # "close": no answer at all, the connection is closed

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def misbehaving() -> Iterator[Callable[[str], str]]:
    servers: list[http.server.HTTPServer] = []

    def start(mode: str) -> str:
        handler = type("Handler", (_Misbehaving,), {"mode": mode})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}/rpc"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("mode", "said"), [
    ("close", "closed the connection without an answer"),
    ("html", "is not JSON"),
    ("slow", "no answer from")])
def test_call_says_what_went_wrong_with_the_answer(
        mode: str, said: str, misbehaving: Callable[[str], str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that hangs up without answering, answers 200 with something that is not
    JSON, or takes longer than `call` waits (40 s; 0.5 s here): one line, exit 1."""
    monkeypatch.setattr(cli_module, "CALL_TIMEOUT", 0.5, raising=False)
    url = misbehaving(mode)
    main(["token", "--home", str(tmp_path)])
    capsys.readouterr()
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 1
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
    assert main(["call", "companion.info", "--home", str(tmp_path), "--url", url]) == 1
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
                                   "moz-extension://user@id", "moz-extension:///path"])
def test_an_extension_origin_without_a_plain_id_is_refused(
        given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--home", str(tmp_path), "--allow-origin", given])
    assert done.value.code == 2 and "is not an extension origin" in capsys.readouterr().err


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    """`mindscape token | head -c 0`, `mindscape call ... | head`: the output's reader
    closed the pipe, so the write fails; the command stops quietly with SIGPIPE's status
    (141), stderr empty."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from companion.cli import main; "
                                   "sys.exit(main(sys.argv[1:]))",
             "token", "--home", str(tmp_path / "home")],
            stdout=write_end, stderr=subprocess.PIPE, timeout=60, check=False)
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
