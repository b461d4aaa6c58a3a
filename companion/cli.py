"""The ``mindscape`` command: ``serve``, ``call`` and ``token``.

This is the only place that reads the environment (``$MINDSCAPE_HOME``) and the command
line; everything below gets a ``Settings`` value. Imports stay lean: ``call`` and
``token`` never import aiohttp, and ``serve`` imports the app only once it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .settings import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    Settings,
    browser_origin,
    default_home,
    merge_origins,
)

FOUNDRY_SETTING = "Game Settings › Configure Settings › Mindscape › Pair with the companion"


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
                            "http://localhost:30000 is always allowed")
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

    from .app import create_app
    from .store import StoreError

    runner = web.AppRunner(create_app(settings), access_log=None, shutdown_timeout=5.0,
                           handle_signals=False,
                           keepalive_timeout=settings.limits.idle_timeout)
    try:
        await runner.setup()
    except StoreError as exc:
        print(f"mindscape: cannot open the store: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # the home folder cannot be made or written (a typo, a read-only disk)
        print(f"mindscape: cannot use the home folder {settings.home}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        await runner.cleanup()
        return 2
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError as exc:
        print(f"mindscape: cannot listen on {settings.host}:{settings.port}: "
              f"{exc.strerror}", file=sys.stderr)
        await runner.cleanup()
        return 2
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


def serve(args: argparse.Namespace) -> int:
    """``mindscape serve``: settings from the command line, logging, then the daemon."""
    from . import logs

    # Files the daemon creates (store, write-ahead log, token) are the user's alone.
    os.umask(0o077)
    stream = logs.open_stderr()
    settings = Settings(home=_home(args), host=args.host, port=args.port,
                        allow_origins=merge_origins(args.allow_origin),
                        log_level=args.log_level, log_stream=stream)
    logs.configure(settings.log_level, stream)
    token_command = (f"mindscape token --home {shlex.quote(str(settings.home))}"
                     if args.home else "mindscape token")
    return asyncio.run(_serve(settings, token_command))


# -- call -------------------------------------------------------------------------------
def rpc_url(url: str) -> str:
    """The JSON-RPC endpoint for ``url``: as given, or with ``/rpc`` added when it names
    only the daemon (``http://127.0.0.1:39393``, as ``serve`` prints it)."""
    parts = urllib.parse.urlsplit(url)
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit(parts._replace(path="/rpc"))
    return url


def call(args: argparse.Namespace) -> int:
    """``mindscape call``: one request with the home's token; the result or the error."""
    from .tokens import read_token

    token_path = _home(args) / "token"
    token = read_token(token_path)
    if token is None:
        print(f"mindscape: no token in {token_path}; start `mindscape serve` once (or run "
              "`mindscape token`)", file=sys.stderr)
        return 1
    params: Any = None
    if args.params is not None:
        try:
            params = json.loads(args.params)
        except ValueError as exc:
            print(f"mindscape: the params are not JSON: {exc}", file=sys.stderr)
            return 1
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": args.method,
                               "id": int(time.time() * 1000)}
    if params is not None:
        message["params"] = params
    url = rpc_url(args.url)
    request = urllib.request.Request(
        url, data=json.dumps(message).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        print(f"mindscape: HTTP {exc.code} from {url}: {exc.read().decode(errors='replace')}",
              file=sys.stderr)
        return 1
    except urllib.error.URLError as exc:
        print(f"mindscape: the companion is not running at {url} ({exc.reason}); start "
              "it with `mindscape serve`", file=sys.stderr)
        return 1
    if isinstance(answer, dict) and "error" in answer:
        print(json.dumps(answer["error"], indent=2, ensure_ascii=False))
        return 1
    result = answer.get("result") if isinstance(answer, dict) else answer
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


# -- token ------------------------------------------------------------------------------
def token(args: argparse.Namespace) -> int:
    """``mindscape token``: print the token (made when missing), or a new one."""
    from .tokens import ensure_token, rotate_token

    path = _home(args) / "token"
    print(rotate_token(path) if args.rotate else ensure_token(path))
    if args.rotate:
        print(f"(new token written to {path}; paste it into every paired VTT)",
              file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mindscape`` console script."""
    args = _parser().parse_args(argv)
    commands = {"serve": serve, "call": call, "token": token}
    return commands[args.command](args)
