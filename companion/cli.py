"""The ``mindscape`` command: ``serve``, ``call`` and ``token``.

This is the only place that reads the environment (``$MINDSCAPE_HOME``) and the command
line; everything below gets a ``Settings`` value. Imports stay lean: ``call`` and
``token`` never import aiohttp, and ``serve`` imports the app only once it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import ipaddress
import json
import os
import shlex
import signal
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .settings import (
    DEFAULT_HOST,
    DEFAULT_ORIGINS,
    DEFAULT_PORT,
    Settings,
    browser_origin,
    default_home,
    merge_origins,
)
from .tokens import TokenFileError, ensure_token, read_token, rotate_token

FOUNDRY_SETTING = "Game Settings › Configure Settings › Mindscape › Pair with the companion"
#: seconds ``mindscape call`` waits for an answer: longer than the daemon gives a
#: plugin's method (``rpc.PLUGIN_METHOD_TIMEOUT``, 30 s), so the daemon's own answer to
#: one that hangs ("did not answer within 30 s", with its error id) is what it prints
CALL_TIMEOUT = 40


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535; 0: any free "
                                         "port)")
    return port


def _origin(text: str) -> str:
    try:
        return browser_origin(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _home(args: argparse.Namespace) -> Path:
    return Path(args.home).expanduser() if args.home else default_home()


def _token_command(args: argparse.Namespace, home: Path) -> str:
    """``mindscape token``, with the ``--home`` the user gave (as the banner says it)."""
    return (f"mindscape token --home {shlex.quote(str(home))}" if args.home
            else "mindscape token")


def _fail(message: str, status: int) -> int:
    """Say what went wrong on one line of stderr; ``status`` is the exit status."""
    print(f"mindscape: {message}", file=sys.stderr)
    return status


def _not_a_folder(home: Path) -> str | None:
    """Why ``home`` cannot be the home folder (a file is in the way), or ``None``."""
    if home.exists() and not home.is_dir():
        return f"the home folder {home} is a file, not a folder; give --home a folder " \
               "(it is made when missing)"
    return None


def _bad_token(exc: TokenFileError, token_command: str) -> str:
    if exc.rewritable:
        return f"{exc}; run `{token_command} --rotate` to write a new one"
    return f"{exc}; move it aside, then `{token_command}` writes a new one"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mindscape", description=(
        "Mindscape psionic-combat companion: a local JSON-RPC daemon for virtual "
        "tabletops."))
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the daemon")
    serve.add_argument("--host", default=DEFAULT_HOST,
                       help="address to listen on (default 127.0.0.1: this computer only)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT,
                       help="default 39393; 0: any free port (the banner says which)")
    serve.add_argument("--home", help="folder of the store and the token "
                                      "(default $MINDSCAPE_HOME or the user data folder)")
    serve.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       type=_origin,
                       help="another browser origin allowed to call (repeatable); "
                            f"{' and '.join(DEFAULT_ORIGINS)} are always allowed")
    serve.add_argument("--log-level", default="info",
                       choices=["debug", "info", "warning", "error"])

    call = sub.add_parser("call", help="call one method and print its result as JSON")
    call.add_argument("method")
    call.add_argument("params", nargs="?", default=None, help="params as a JSON object")
    call.add_argument("--home")
    call.add_argument("--url", default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/rpc",
                      help="the daemon's JSON-RPC endpoint; the address `serve` prints "
                           "(without /rpc) works too")

    token = sub.add_parser("token", help="print the access token (created when missing)")
    token.add_argument("--rotate", action="store_true",
                       help="replace it with a new one (paired VTTs must be updated)")
    token.add_argument("--home")
    return parser


# -- serve ------------------------------------------------------------------------------
def _banner(settings: Settings, url: str, token_command: str) -> str:
    ws_url = "ws" + url.removeprefix("http")
    return "\n".join([
        f"Mindscape companion listening on {url} (JSON-RPC: {url}/rpc, WebSocket: "
        f"{ws_url}/ws)",
        f"Status page: {url}/",
        "Pair a virtual tabletop:",
        f"  1. the access token is in {settings.token_path}; show it with `{token_command}`",
        f"  2. Foundry VTT: {FOUNDRY_SETTING}: address {url}, paste the token, press "
        "Test the connection",
        f"  3. allowed browser origins: {', '.join(settings.allow_origins)} "
        "(add more with --allow-origin)",
        "Stop with Ctrl+C.",
    ])


async def _serve(settings: Settings, token_command: str) -> int:
    from aiohttp import web

    from .app import HomeInUse, create_app
    from .keys import TOKENS
    from .store import StoreError

    runner = web.AppRunner(create_app(settings), access_log=None, shutdown_timeout=5.0,
                           handle_signals=False,
                           keepalive_timeout=settings.limits.idle_timeout)
    try:
        await runner.setup()
    except HomeInUse as exc:
        await runner.cleanup()
        return _fail(f"{exc}; stop it first, or give this one another --home", 2)
    except TokenFileError as exc:
        await runner.cleanup()
        return _fail(_bad_token(exc, token_command), 2)
    except StoreError as exc:
        await runner.cleanup()
        return _fail(f"cannot open the store: {exc}", 2)
    except OSError as exc:
        # the home folder cannot be made or written (a typo, a read-only disk)
        await runner.cleanup()
        return _fail(f"cannot use the home folder {settings.home}: {exc.strerror or exc}", 2)
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        return _fail(f"cannot listen on {settings.host}:{settings.port}: "
                     f"{exc.strerror or exc}", 2)
    # what was found wrong with the token file and done about it (the log has it too)
    warning = runner.app[TOKENS].opened.warning(token_command)
    if warning is not None:
        print(f"mindscape: warning: {warning}", file=sys.stderr, flush=True)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    # the port bound, which --port 0 leaves to the system
    port = next((a[1] for a in runner.addresses if isinstance(a, tuple)), settings.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # before the banner: whoever reads it may stop the daemon at once, gracefully
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))
    print(_banner(settings, f"http://{host}:{port}", token_command), flush=True)
    await stop.wait()
    await runner.cleanup()
    return 0


def _addresses(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address] | None:
    """The addresses ``host`` is as a number (``0`` and ``127.1`` too, as the socket
    layer reads them), or ``None`` when it is a name."""
    try:
        found = socket.getaddrinfo(host.strip("[]"), None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None
    return {ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in found}


def _host_problem(host: str) -> tuple[str | None, str | None]:
    """``(refusal, warning)`` for listening on ``host``. A wildcard address is refused:
    the banner could name no address a browser may use, and the Host check accepts only
    the loopback names and the ``--host`` itself. Any other address that is not loopback
    is served, with a warning."""
    addresses = _addresses(host) if host.strip() else None
    if not host.strip() or (addresses and any(a.is_unspecified for a in addresses)):
        shown = host or "''"
        return (f"--host {shown} would listen on every address of this computer; name the "
                "one address to listen on (this computer's address on your network, such "
                "as 192.168.1.20, for a VTT on another computer; the default 127.0.0.1 "
                "for this one)"), None
    if host.lower() == "localhost" or (addresses and all(a.is_loopback for a in addresses)):
        return None, None
    return None, (f"warning: --host {host} exposes the daemon to the network in plain "
                  "HTTP: anyone who can reach that address can call it, and the access "
                  "token is the only guard of every encounter and its secret choices; "
                  "see docs/SECURITY.md")


def serve(args: argparse.Namespace) -> int:
    """``mindscape serve``: settings from the command line, logging, then the daemon.
    A failure to start is one line on stderr and exit status 2."""
    from . import logs

    refusal, warning = _host_problem(args.host)
    if refusal is not None:
        return _fail(refusal, 2)
    home = _home(args)
    problem = _not_a_folder(home)
    if problem is not None:
        return _fail(problem, 2)
    if warning is not None:
        print(f"mindscape: {warning}", file=sys.stderr, flush=True)
    # Files the daemon creates (store, write-ahead log, token) are the user's alone.
    os.umask(0o077)
    stream = logs.open_stderr()
    token_command = _token_command(args, home)
    settings = Settings(home=home, host=args.host, port=args.port,
                        allow_origins=merge_origins(args.allow_origin),
                        log_level=args.log_level, log_stream=stream,
                        token_command=token_command)
    logs.configure(settings.log_level, stream)
    return asyncio.run(_serve(settings, token_command))


# -- call -------------------------------------------------------------------------------
def rpc_url(url: str) -> str:
    """The JSON-RPC endpoint for ``url``: as given, or with ``/rpc`` added when it names
    only the daemon (``http://127.0.0.1:39393``, as ``serve`` prints it). ``ValueError``
    saying why for an address that is not one: not ``http://`` or ``https://`` (urllib
    would take ``ftp://`` elsewhere), no host, or a port that is not a number."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError("it does not start with http:// or https://")
    if not parts.hostname:
        raise ValueError("it names no host")
    try:
        parts.port  # noqa: B018 -- urllib checks the port only when it is read
    except ValueError:
        raise ValueError("its port is not a number from 0 to 65535") from None
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/rpc"))
    return url


def call(args: argparse.Namespace) -> int:
    """``mindscape call``: one request with the home's token; the result or the error.
    Every failure is one line on stderr and exit status 1."""
    from .jsontext import parse

    home = _home(args)
    problem = _not_a_folder(home)
    if problem is not None:
        return _fail(problem, 1)
    token_path = home / "token"
    try:
        token = read_token(token_path)
    except TokenFileError as exc:
        return _fail(_bad_token(exc, _token_command(args, home)), 1)
    if token is None:
        return _fail(f"no token in {token_path}; start `mindscape serve` once (or run "
                     f"`{_token_command(args, home)}`)", 1)
    params: Any = None
    if args.params is not None:
        try:
            # The daemon's own strict parser: NaN, Infinity, 1e999 are refused here.
            params = parse(args.params)
        except (ValueError, RecursionError) as exc:
            return _fail(f"the params are not JSON: {exc}", 1)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": args.method,
                               "id": int(time.time() * 1000)}
    if params is not None:
        message["params"] = params
    try:
        url = rpc_url(args.url)
    except ValueError as exc:
        return _fail(f"--url {args.url} is not the companion's address: {exc}; give one "
                     "such as http://127.0.0.1:39393", 1)
    try:
        request = urllib.request.Request(
            url, data=json.dumps(message).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        text = " ".join(exc.read().decode(errors="replace").split())
        return _fail(f"HTTP {exc.code} from {url}: {text[:300]}", 1)
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            return _fail(f"no answer from {url} within {CALL_TIMEOUT} s", 1)
        return _fail(f"the companion is not running at {url} ({exc.reason}); start it "
                     "with `mindscape serve`", 1)
    except TimeoutError:
        return _fail(f"no answer from {url} within {CALL_TIMEOUT} s", 1)
    except (http.client.HTTPException, ConnectionError) as exc:
        # (the server hung up without a word: RemoteDisconnected is both)
        return _fail(f"{url} closed the connection without an answer "
                     f"({type(exc).__name__}); is the companion running there?", 1)
    except OSError as exc:
        return _fail(f"cannot reach {url}: {exc.strerror or exc}", 1)
    except ValueError as exc:
        # an address urllib still cannot use (a host name it cannot encode ...)
        return _fail(f"--url {args.url} is not the companion's address ({exc}); give one "
                     "such as http://127.0.0.1:39393", 1)
    try:
        answer = json.loads(body or b"null")
    except ValueError:
        return _fail(f"the answer from {url} is not JSON; is the companion running "
                     "there?", 1)
    if isinstance(answer, dict) and "error" in answer:
        print(json.dumps(answer["error"], indent=2, ensure_ascii=False))
        return 1
    result = answer.get("result") if isinstance(answer, dict) else answer
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


# -- token ------------------------------------------------------------------------------
def token(args: argparse.Namespace) -> int:
    """``mindscape token``: print the token (made when missing), or a new one. Every
    failure is one line on stderr and exit status 1."""
    home = _home(args)
    problem = _not_a_folder(home)
    if problem is not None:
        return _fail(problem, 1)
    path = home / "token"
    warning = None
    try:
        if args.rotate:
            value = rotate_token(path)
        else:
            opened = ensure_token(path)
            value, warning = opened.token, opened.warning(_token_command(args, home))
    except TokenFileError as exc:
        return _fail(_bad_token(exc, _token_command(args, home)), 1)
    except OSError as exc:
        return _fail(f"cannot write the token to {path}: {exc.strerror or exc}", 1)
    print(value)
    if args.rotate:
        print(f"(new token written to {path}; paste it into every paired VTT)",
              file=sys.stderr)
    if warning is not None:
        print(f"mindscape: warning: {warning}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mindscape`` console script."""
    args = _parser().parse_args(argv)
    commands = {"serve": serve, "call": call, "token": token}
    try:
        return commands[args.command](args)
    except KeyboardInterrupt:
        # Ctrl+C before the daemon took SIGINT over, or while `call` waits: no traceback.
        return 130
    except BrokenPipeError:
        # The reader went away (`mindscape call companion.info | head`): what it read was
        # all it wanted. Point stdout at nothing so that the interpreter's own flush at
        # exit does not fail again, and exit as a program killed by SIGPIPE would (141;
        # Windows has no SIGPIPE to name).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
