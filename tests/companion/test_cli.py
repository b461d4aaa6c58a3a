"""The ``mindscape`` command without a running daemon: token, call's failures, settings
resolution (API.md "Running it")."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

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
