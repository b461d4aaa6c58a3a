"""The ``mindscape`` command without a running daemon: token, call's failures, settings
resolution (API.md "Running it")."""

from __future__ import annotations

import errno
import http.server
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


def test_allow_origin_adds_to_the_defaults() -> None:
    origins = merge_origins(["https://vtt.example/", "http://localhost:30000"])
    assert origins == (*DEFAULT_ORIGINS, "https://vtt.example")


@pytest.mark.parametrize(("given", "origin"), [
    ("HTTPS://Foundry.Example:443/join", "https://foundry.example"),
    ("http://vtt.example:80", "http://vtt.example"),
    ("https://vtt.example:8443/game?x=1#y", "https://vtt.example:8443"),
    ("http://[::1]:30000/", "http://[::1]:30000"),
    ("http://[0:0:0:0:0:0:0:1]:30000", "http://[::1]:30000"),
    ("https://bücher.example", "https://xn--bcher-kva.example")])
def test_an_allowed_origin_is_written_as_a_browser_sends_it(given: str, origin: str) -> None:
    """A GM may paste the address from the address bar: the browser's Origin header has
    the scheme and host in lower case, no default port and no path."""
    assert merge_origins([given])[-1] == origin


@pytest.mark.parametrize(("argv", "complaint"), [
    (["--allow-origin", "foundry.example.com"], "is not a web origin"),
    (["--allow-origin", "ftp://files.example"], "is not a web origin"),
    # no browser sends these: each would be listed and never match
    (["--allow-origin", "https://*.forge-vtt.com"], "wildcards are not supported"),
    (["--allow-origin", "http://exa mple.com"], "is no host name a browser could be at"),
    (["--allow-origin", "http://[::1"], "'http://[::1' is not a web origin"),
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


def test_a_daemon_not_running_there_says_to_start_it_or_give_the_address_it_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["token", "--home", str(tmp_path)])
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
