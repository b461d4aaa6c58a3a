"""The ``mindscape`` command: ``serve``, ``call`` and ``token``.

This is the only place that reads the environment (``$MINDSCAPE_HOME``) and the command
line; everything below gets a ``Settings`` value. Imports stay lean: ``call`` and
``token`` never import aiohttp, ``serve`` imports the app only once it runs, and the
heavier standard modules (asyncio, urllib) are imported by the command that uses them,
so that ``main`` is catching Ctrl+C soon after the command is typed.

Exit statuses (docs/API.md "Running it"): 0 done; 1 the daemon answered ``call`` with a
JSON-RPC error (printed on stdout); 2 the command could not do its job, or was given
wrongly (one line on stderr says why); 130 interrupted (Ctrl+C); 141 the reader of the
output went away.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings import (
    DEFAULT_HOST,
    DEFAULT_ORIGINS,
    DEFAULT_PORT,
    Settings,
    browser_origin,
    default_home,
    merge_origins,
)
from .tokens import (
    TokenFileError,
    ensure_token,
    read_own_file,
    read_token,
    rotate_token,
    write_private_file,
)

if TYPE_CHECKING:
    import ipaddress

FOUNDRY_SETTING = "Game Settings › Configure Settings › Mindscape › Pair with the companion"
#: the Roll20 bridge's pairing, in the words its badge, its settings box and the Mod
#: script show (vtt-module/roll20/mindscape-bridge.user.js, Mindscape.js `!psi pair`)
ROLL20_PAIRING = ("click the Mindscape badge bottom left (the bridge userscript, GM's tab), "
                  "give Companion URL {url} and the token, Save and test; then type !psi "
                  "pair in the chat, paste the code it whispers under Pairing code, Save "
                  "and test")
#: seconds ``mindscape call`` waits for an answer: longer than the daemon gives a
#: plugin's method (``rpc.PLUGIN_METHOD_TIMEOUT``, 30 s), so the daemon's own answer to
#: one that hangs ("did not answer within 30 s", with its error id) is what it prints
CALL_TIMEOUT = 40
#: exit status of ``call`` when the daemon answered with a JSON-RPC error
REFUSED = 1
#: exit status of a command that could not do its job, or was given wrongly (as argparse)
FAILED = 2
#: what ``call``'s messages give as an example of params
PARAMS_EXAMPLE = """mindscape call dice.roll '{"expr": "2d6"}'"""


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


def _home(args: argparse.Namespace) -> Path | str:
    """The home folder the command uses, or why it cannot be one (a ``~user`` with no
    home folder on this computer, a file in the way)."""
    try:
        home = Path(args.home).expanduser() if args.home else default_home()
    except RuntimeError:  # expanduser and Path.home: no such user, or no home at all
        if args.home or os.environ.get("MINDSCAPE_HOME"):
            where = f"--home {args.home}" if args.home \
                else f"$MINDSCAPE_HOME {os.environ['MINDSCAPE_HOME']}"
            return f"{where}: no user on this computer has that home folder (~user); " \
                   "give the folder itself"
        return "this user has no home folder to keep the store and the token in; give " \
               "--home a folder"
    problem = _not_a_folder(home)
    return home if problem is None else problem


def _token_command(args: argparse.Namespace, home: Path) -> str:
    """``mindscape token``, with the ``--home`` the user gave (as the banner says it)."""
    return (f"mindscape token --home {shlex.quote(str(home))}" if args.home
            else "mindscape token")


def _shown_arg(text: str) -> str:
    """``text`` from the command line as a message shows it: each byte that is not UTF-8
    (which Python keeps as a lone surrogate, U+DC80 to U+DCFF) as ``\\xNN``, the byte
    itself, and any other lone surrogate as ``\\uNNNN``; the rest as it is. One form
    wherever such a byte is named (a method name, params, a host)."""
    return "".join(
        (f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else f"\\u{ord(c):04x}")
        if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _fail(message: str, status: int) -> int:
    """Say what went wrong on one line of stderr; ``status`` is the exit status."""
    print(f"mindscape: {message}", file=sys.stderr)
    return status


class Unwritable(Exception):
    """stdout refused what a command had to say (a full disk, ``> /dev/full``; stdout
    closed, ``>&-``): the text is why."""


def _say(text: str) -> None:
    """``text`` and a new line on stdout, flushed, so that a write that fails, fails here
    rather than at exit: a reader that went away is ``BrokenPipeError`` (``main`` ends
    as SIGPIPE would), any other failure ``Unwritable``; either way stdout is silenced
    first."""
    if sys.stdout is None:
        raise Unwritable("stdout is closed")
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _silence_stdout()
        raise
    except OSError as exc:
        _silence_stdout()
        raise Unwritable(exc.strerror or str(exc)) from None


def _silence_stdout() -> None:
    """Point stdout at nothing, so that the interpreter's own flush at exit does not fail
    again on what could not be written."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):
        pass  # (no stdout to point anywhere)
    finally:
        os.close(devnull)


def _not_a_folder(home: Path) -> str | None:
    """Why ``home`` cannot be the home folder (a file is in the way: itself, or one of the
    folders it would be made in), or ``None``."""
    if home.exists() and not home.is_dir():
        return f"the home folder {home} is a file, not a folder; give --home a folder " \
               "(it is made when missing)"
    blocker = next((p for p in home.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return f"the home folder {home} cannot be made: {blocker} is a file, not a " \
               "folder; give --home a folder (it is made when missing)"
    return None


def _bad_token(exc: TokenFileError, token_command: str) -> str:
    if exc.rewritable:
        return f"{exc}; run `{token_command} --rotate` to write a new one"
    return f"{exc}; move it aside, then `{token_command}` writes a new one"


HOME_HELP = ("folder of the store and the token (default: $MINDSCAPE_HOME, else the "
             "user data folder, such as ~/.local/share/mindscape)")
LOG_LEVELS = ("debug", "info", "warning", "error")


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``mindscape`` parser and its commands' parsers by name. Options are never
    taken by a prefix (``--rot`` is no ``--rotate``): a typo is an error that names the
    option meant (``main``)."""
    parser = argparse.ArgumentParser(prog="mindscape", allow_abbrev=False, description=(
        "Mindscape psionic-combat companion: a local JSON-RPC daemon for virtual "
        "tabletops. Start it with `mindscape serve`, paste the output of `mindscape "
        "token` into the VTT."), epilog="`mindscape COMMAND --help` says more of each.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve", help="run the daemon until Ctrl+C or its terminal closes", allow_abbrev=False,
        description="Run the daemon: it prints where it listens and how to pair a VTT, "
                    "and runs until Ctrl+C, SIGTERM or SIGHUP (its terminal closed). When "
                    "it cannot start it says why on stderr and exits with status 2.")
    serve.add_argument("--host", default=DEFAULT_HOST,
                       help="the address to listen on (default: 127.0.0.1, this computer "
                            "only; another address puts the daemon on the network, with "
                            "a warning)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT,
                       help=f"the port to listen on (default: {DEFAULT_PORT}; 0: any free "
                            "port, which the banner names)")
    serve.add_argument("--home", metavar="DIR",
                       help=HOME_HELP + "; one daemon at a time may use it")
    serve.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       type=_origin,
                       help="another browser origin allowed to call, such as "
                            "https://foundry.example.com (repeatable); "
                            f"{' and '.join(DEFAULT_ORIGINS)} are always allowed")
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS, type=str.lower,
                       metavar="LEVEL",
                       help=f"{', '.join(LOG_LEVELS)}: the least severe log lines written "
                            "to stderr (default: info, one line per request; warning "
                            "drops those)")

    call = sub.add_parser(
        "call", help="call one method and print its result as JSON", allow_abbrev=False,
        description="Call one method of the running daemon with the token of the home "
                    "folder and print the result as JSON on stdout (exit status 0). A "
                    "JSON-RPC error is printed on stdout as well, with exit status 1; "
                    "anything else that goes wrong is one line on stderr, exit status 2.",
        epilog=f"Example: {PARAMS_EXAMPLE}")
    call.add_argument("method", metavar="METHOD",
                      help="the method's name, such as companion.info")
    call.add_argument("params", nargs="?", default=None, metavar="PARAMS",
                      help="the params: one JSON object, in single quotes")
    call.add_argument("--home", metavar="DIR", help=HOME_HELP)
    call.add_argument("--url", default=None,
                      help="the daemon's address as `serve` prints it (/rpc is added), or "
                           "its JSON-RPC endpoint (default: the address the daemon of the "
                           f"home folder listens on, else http://{DEFAULT_HOST}:"
                           f"{DEFAULT_PORT})")

    token = sub.add_parser(
        "token", help="print the access token (created when missing)", allow_abbrev=False,
        description="Print the access token to paste into a VTT, alone on stdout; it is "
                    "created (mode 0600) when the home folder has none yet.")
    token.add_argument("--rotate", action="store_true",
                       help="replace it with a new one: a running daemon takes it at once "
                            "and refuses the old one, so every paired VTT must be given "
                            "the new one")
    token.add_argument("--home", metavar="DIR", help=HOME_HELP)
    return parser, {"serve": serve, "call": call, "token": token}


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
        f"  3. Roll20: {ROLL20_PAIRING.format(url=url)}",
        f"  4. allowed browser origins: {', '.join(settings.allow_origins)} "
        "(add more with --allow-origin)",
        "Stop with Ctrl+C.",
    ])


def _url_host(host: str) -> str:
    """``host`` as it stands in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _direct_opener() -> Any:
    """A urllib opener that goes straight to the address it is given: no proxy from the
    environment (``http_proxy`` would have it carry the token to the proxy, or ask the
    proxy whether the daemon runs), and no redirect followed (urllib would repeat a POST
    as a GET elsewhere, with the token): a 3xx answer is an ``HTTPError``."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)


def _answers_as_mindscape(host: str, port: int) -> bool:
    """Whether a mindscape daemon answers ``GET /healthz`` at ``host:port``."""
    import json

    try:
        with _direct_opener().open(f"http://{_url_host(host)}:{port}/healthz",
                                   timeout=1) as response:
            return bool(json.loads(response.read(200)) == {"status": "ok"})
    except (OSError, ValueError):
        return False


def _cannot_listen(settings: Settings, exc: OSError) -> str:
    """Why ``serve`` cannot listen on its ``--host`` and ``--port``, and what to do."""
    import socket

    port = settings.port
    # an IPv6 address in brackets, as in a URL: [::1]:39393
    where = f"[{settings.host}]:{port}" if ":" in settings.host else f"{settings.host}:{port}"
    if isinstance(exc, socket.gaierror):
        return (f"cannot listen on {where}: --host {settings.host} is not a name this "
                f"computer can look up ({exc.strerror or exc}); give an address, such as "
                "the default 127.0.0.1")
    if exc.errno == errno.EADDRINUSE:
        holder = ("another mindscape daemon (of another home folder)"
                  if _answers_as_mindscape(settings.host, port) else "another program")
        return (f"cannot listen on {where}: port {port} is in use by {holder}; stop it, or "
                "give this one another --port (0: any free port)")
    # Python 3.13's asyncio drops an address the system cannot assign (EADDRNOTAVAIL,
    # taken for a family not enabled) and, with none left, raises an OSError without an
    # errno: "could not bind on any address out of [...]".
    if exc.errno == errno.EADDRNOTAVAIL or (
            exc.errno is None and "could not bind on any address" in str(exc)):
        return (f"cannot listen on {where}: {settings.host} is not an address of this "
                "computer; give --host one of its own (the default 127.0.0.1: this "
                "computer only)")
    if exc.errno == errno.EACCES:
        return (f"cannot listen on {where}: this user may not open port {port} (ports "
                f"below 1024 need administrator rights); give --port another, such as the "
                f"default {DEFAULT_PORT}")
    return f"cannot listen on {where}: {exc.strerror or exc}"


#: the file in the home folder that holds the address the running daemon listens on, so
#: that ``call`` finds a daemon started with another ``--port`` (or ``--port 0``)
ADDRESS_FILE = "daemon.address"


def _write_address(home: Path, url: str) -> None:
    """Record ``url`` in ``home/daemon.address`` (mode 0600, replaced whole). A home that
    cannot take it only costs ``call`` its default: nothing is said."""
    with contextlib.suppress(OSError):
        write_private_file(home / ADDRESS_FILE, url)


def _forget_address(home: Path, url: str) -> None:
    """Remove ``home/daemon.address`` when it still holds ``url`` (this daemon's)."""
    if _recorded_address(home) == url:
        (home / ADDRESS_FILE).unlink(missing_ok=True)


def _recorded_address(home: Path) -> str | None:
    """The address ``home/daemon.address`` holds, when it is the user's small regular
    file holding one ``http://`` address; else ``None``."""
    try:
        data = read_own_file(home / ADDRESS_FILE, 201)
    except TokenFileError:
        return None
    if data is None or len(data) > 200:
        return None
    text = data.decode("ascii", errors="replace").strip()
    return text if text.startswith("http://") and " " not in text else None


async def _serve(settings: Settings, token_command: str) -> int:
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # First of all: Ctrl+C or SIGTERM during the start is then a graceful stop once the
    # start is done, never a KeyboardInterrupt that leaves the store's thread running
    # behind a closed event loop (a traceback on stderr). So is SIGHUP, which closing the
    # terminal sends (it killed the daemon outright), unless it was ignored when the
    # daemon started (`nohup mindscape serve`: it is to outlive its terminal).
    stopping = [signal.SIGINT, signal.SIGTERM]
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        stopping.append(hangup)
    for sig in stopping:
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))

    from aiohttp import web

    from .app import HomeInUse, HomeUnlockable, create_app
    from .keys import TOKENS
    from .store import StoreError

    runner = web.AppRunner(create_app(settings), access_log=None, shutdown_timeout=5.0,
                           handle_signals=False,
                           keepalive_timeout=settings.limits.idle_timeout)
    try:
        await runner.setup()
    except HomeInUse as exc:
        await runner.cleanup()
        return _fail(f"{exc}; stop it first, or give this one another --home", FAILED)
    except HomeUnlockable as exc:
        await runner.cleanup()
        return _fail(f"{exc}, which keeps a second daemon out of it; give --home a folder "
                     "this user can read and write", FAILED)
    except TokenFileError as exc:
        await runner.cleanup()
        return _fail(_bad_token(exc, token_command), FAILED)
    except StoreError as exc:
        await runner.cleanup()
        return _fail(f"cannot open the store: {exc}", FAILED)
    except OSError as exc:
        # the home folder cannot be made or written (a typo, a read-only disk)
        await runner.cleanup()
        return _fail(f"cannot use the home folder {settings.home}: {exc.strerror or exc}; "
                     "give --home a folder this user can write (it is made when missing)",
                     FAILED)
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        if not stop.is_set():
            await site.start()
    except OSError as exc:
        await runner.cleanup()
        return _fail(_cannot_listen(settings, exc), FAILED)
    if stop.is_set():
        # stopped while starting: nothing was announced, so nothing more is said
        await runner.cleanup()
        return 0
    # what was found wrong with the token file and done about it (the log has it too)
    warning = runner.app[TOKENS].opened.warning(token_command)
    if warning is not None:
        print(f"mindscape: warning: {warning}", file=sys.stderr, flush=True)
    # the port bound, which --port 0 leaves to the system
    port = next((a[1] for a in runner.addresses if isinstance(a, tuple)), settings.port)
    address = f"http://{_url_host(settings.host)}:{port}"
    # written before the banner: whoever read the banner finds it
    _write_address(settings.home, address)
    try:
        _say(_banner(settings, address, token_command))
    except (Unwritable, BrokenPipeError) as exc:
        # whoever started it cannot be told where it listens: it stops rather than run
        # unseen
        _forget_address(settings.home, address)
        await runner.cleanup()
        why = "the reader went away" if isinstance(exc, BrokenPipeError) else str(exc)
        return _fail(f"cannot write the address it listens on to stdout ({why}); "
                     "stopped", FAILED)
    await stop.wait()
    _forget_address(settings.home, address)
    await runner.cleanup()
    return 0


def _addresses(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address] | None:
    """The addresses ``host`` is as a number (``0`` and ``127.1`` too, as the socket
    layer reads them), or ``None`` when it is a name."""
    import ipaddress
    import socket

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
    try:
        # what the socket layer does with a name before it looks it up
        host.encode("utf-8")
        host.encode("idna")
    except UnicodeError as exc:
        # a byte that is not UTF-8 said as call says it, not as the codec's '\udcff'
        not_utf8 = isinstance(exc, UnicodeEncodeError) and exc.encoding == "utf-8"
        why = "it holds bytes that are not UTF-8" if not_utf8 else exc
        return (f"--host {_shown_arg(host)} is not a name this computer can look up "
                f"({why}); give an address, such as the default 127.0.0.1"), None
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
        return _fail(refusal, FAILED)
    home = _home(args)
    if isinstance(home, str):
        return _fail(home, FAILED)
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
    import asyncio

    return asyncio.run(_serve(settings, token_command))


# -- call -------------------------------------------------------------------------------
def rpc_url(url: str) -> str:
    """The JSON-RPC endpoint for ``url``: as given, or with ``/rpc`` added when it names
    only the daemon (``http://127.0.0.1:39393``, as ``serve`` prints it). ``ValueError``
    saying why for an address that is not one: not ``http://`` or ``https://`` (urllib
    would take ``ftp://`` elsewhere), no host, or a port that is not a number."""
    import urllib.parse

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


def _params(text: str) -> dict[str, Any] | str:
    """``call``'s params argument as a JSON object, or why it is not one."""
    from .jsontext import parse

    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A byte of the command line that is not UTF-8, which Python keeps as a lone
        # surrogate (U+DC80 to U+DCFF): the parser would name an unpaired surrogate,
        # which the user never typed, not the byte.
        return (f"the params are not text (they hold bytes that are not UTF-8: the first, "
                f"{_shown_arg(text[exc.start])}, is character {exc.start + 1}); give one "
                f"JSON object in single quotes, as in {PARAMS_EXAMPLE}")
    try:
        # The daemon's own strict parser: NaN, Infinity, 1e999 are refused here.
        params = parse(text)
    except (ValueError, RecursionError) as exc:
        return (f"the params are not JSON ({exc}); give one JSON object in single quotes, "
                f"as in {PARAMS_EXAMPLE}")
    if not isinstance(params, dict):
        kind = {list: "an array", str: "a string", bool: "true or false",
                type(None): "null"}.get(type(params), "a number")
        return (f"the params must be a JSON object (the daemon takes them by name), not "
                f"{kind}; as in {PARAMS_EXAMPLE}")
    return params


def _unreachable(url: str, reason: object) -> str:
    """Why nothing answered at ``url`` (``URLError.reason``), and what to do."""
    import socket
    import ssl
    import urllib.parse

    host = urllib.parse.urlsplit(url).hostname
    if isinstance(reason, TimeoutError):
        return f"no answer from {url} within {CALL_TIMEOUT} s"
    if isinstance(reason, socket.gaierror):
        return (f"cannot find the host {host} of --url {url} ({reason.strerror or reason}); "
                "give the address `mindscape serve` printed, such as "
                f"http://{DEFAULT_HOST}:{DEFAULT_PORT}")
    if isinstance(reason, ssl.SSLError):
        return (f"no HTTPS at {url} ({reason.reason or reason}); the companion itself "
                "speaks plain http://, as `mindscape serve` prints its address")
    shown = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
    return (f"the companion is not running at {url} ({shown}); start it with `mindscape "
            "serve`, or give --url the address it printed")


def call(args: argparse.Namespace) -> int:
    """``mindscape call``: one request with the home's token; the result (exit status 0)
    or the JSON-RPC error (1) on stdout. Every other failure is one line on stderr and
    exit status 2."""
    import http.client
    import json
    import time
    import urllib.error
    import urllib.request

    try:
        args.method.encode("utf-8")
    except UnicodeEncodeError:
        # A byte of the command line that is not UTF-8 (Python keeps it as a lone
        # surrogate): sent, it made JSON that the daemon refuses as a parse error, which
        # named neither the method nor the byte.
        return _fail(f"the method name {_shown_arg(args.method)} is not text (it holds "
                     "bytes that are not UTF-8); give a method's name, such as "
                     "companion.info", FAILED)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": args.method,
                               "id": int(time.time() * 1000)}
    if args.params is not None:
        params = _params(args.params)
        if isinstance(params, str):
            return _fail(params, FAILED)
        message["params"] = params
    home = _home(args)
    if isinstance(home, str):
        return _fail(home, FAILED)
    # Without --url: where the daemon of this home folder said it listens, else the default.
    recorded = None if args.url is not None else _recorded_address(home)
    given = args.url or recorded or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
    try:
        url = rpc_url(given)
    except ValueError as exc:
        return _fail(f"--url {given} is not the companion's address: {exc}; give one "
                     "such as http://127.0.0.1:39393", FAILED)
    # a daemon killed without its clean stop leaves its address behind
    source = (f" (the address the last `mindscape serve` of this home folder wrote in "
              f"{home / ADDRESS_FILE})") if recorded else ""
    token_path = home / "token"
    try:
        token = read_token(token_path)
    except TokenFileError as exc:
        return _fail(_bad_token(exc, _token_command(args, home)), FAILED)
    if token is None:
        return _fail(f"no token in {token_path}; start `mindscape serve` once (or run "
                     f"`{_token_command(args, home)}`)", FAILED)
    try:
        request = urllib.request.Request(
            url, data=json.dumps(message).encode(), method="POST",
            headers={"Content-Type": "application/json",
                     "Authorization": f"Bearer {token}"})
        with _direct_opener().open(request, timeout=CALL_TIMEOUT) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = " ".join(str(exc.headers.get("Location", "")).split())[:200]
            return _fail(f"{url} answered with a redirect (HTTP {exc.code}"
                         f"{' to ' + where if where else ''}), which the companion never "
                         "sends and call does not follow: something else listens there; "
                         "give --url the companion's address, and rotate the token "
                         f"(`{_token_command(args, home)} --rotate`) once it runs",
                         FAILED)
        if exc.code == 401:
            return _fail(f"{url} refused the token of {token_path} (HTTP 401): a companion "
                         "there was started with another home folder; give call the "
                         "--home it uses", FAILED)
        text = " ".join(exc.read().decode(errors="replace").split())
        return _fail(f"HTTP {exc.code} from {url}: {text[:300]}", FAILED)
    except urllib.error.URLError as exc:
        return _fail(_unreachable(url, exc.reason) + source, FAILED)
    except TimeoutError:
        return _fail(f"no answer from {url} within {CALL_TIMEOUT} s", FAILED)
    except (http.client.HTTPException, ConnectionError) as exc:
        # (the server hung up without a word: RemoteDisconnected is both)
        return _fail(f"{url} closed the connection without an answer "
                     f"({type(exc).__name__}); is the companion running there?", FAILED)
    except OSError as exc:
        return _fail(f"cannot reach {url}: {exc.strerror or exc}", FAILED)
    except ValueError as exc:
        # an address urllib still cannot use (a host name it cannot encode ...)
        return _fail(f"--url {given} is not the companion's address ({exc}); give one "
                     "such as http://127.0.0.1:39393", FAILED)
    try:
        answer = json.loads(body)
    except ValueError:
        # (an empty body too: a request with an id always has an answer)
        return _fail(f"the answer from {url} is not JSON; is the companion running "
                     "there?", FAILED)
    if not isinstance(answer, dict) or not ("result" in answer or "error" in answer):
        return _fail(f"the answer from {url} is JSON but no JSON-RPC answer (neither a "
                     "result nor an error); is the companion running there?", FAILED)
    shown = "error" if "error" in answer else "result"
    try:
        _say(json.dumps(answer[shown], indent=2, ensure_ascii=False))
    except Unwritable as exc:
        return _fail(f"cannot write the {shown} of {args.method} to stdout ({exc}); the "
                     "call was made", FAILED)
    return REFUSED if shown == "error" else 0


# -- token ------------------------------------------------------------------------------
def token(args: argparse.Namespace) -> int:
    """``mindscape token``: print the token (made when missing), or a new one. Every
    failure is one line on stderr and exit status 2."""
    home = _home(args)
    if isinstance(home, str):
        return _fail(home, FAILED)
    path = home / "token"
    warning = None
    try:
        if args.rotate:
            value = rotate_token(path)
        else:
            opened = ensure_token(path)
            value, warning = opened.token, opened.warning(_token_command(args, home))
    except TokenFileError as exc:
        return _fail(_bad_token(exc, _token_command(args, home)), FAILED)
    except OSError as exc:
        return _fail(f"cannot write the token to {path}: {exc.strerror or exc}", FAILED)
    try:
        _say(value)
    except Unwritable as exc:
        which = "the new token" if args.rotate else "it"
        return _fail(f"cannot write the token to stdout ({exc}); {which} is in {path}",
                     FAILED)
    if args.rotate:
        print(f"(new token written to {path}; paste it into every paired VTT)",
              file=sys.stderr)
    if warning is not None:
        print(f"mindscape: warning: {warning}", file=sys.stderr)
    return 0


def _unrecognized(extra: list[str], command: argparse.ArgumentParser) -> str:
    """argparse's complaint about ``extra``, with the option meant by a typo in it
    (``-port`` too: a long option written with one dash)."""
    options = [o for action in command._actions for o in action.option_strings
               if o.startswith("--")]
    meant = [f"{given} (did you mean {close[0]}?)" if close else given
             for given in extra
             for close in [difflib.get_close_matches(_as_long(given), options, 1)]]
    return f"unrecognized arguments: {' '.join(meant)}"


def _as_long(word: str) -> str:
    """``word`` as the long option it may stand for: ``--prot=1`` and ``-prot`` are
    ``--prot``; a value (no dash) or a lone ``-x`` stands for none."""
    name = word.partition("=")[0]
    if name.startswith("--"):
        return name
    return "-" + name if name.startswith("-") and len(name) > 2 else ""


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line, or a usage error (exit status 2) that the command's own usage
    explains. ``call``'s params may come after its options; params the shell split in
    two (the JSON not in single quotes) are said to be so."""
    parser, commands = _parsers()
    given = sys.argv[1:] if argv is None else argv
    if not given:
        parser.print_help(sys.stderr)
        raise SystemExit(FAILED)
    args, extra = parser.parse_known_args(given)
    if not extra:
        return args
    command = commands[args.command]
    words = [e for e in extra if not e.startswith("-")]
    if args.command == "call" and words == extra:
        if args.params is None and len(words) == 1:
            args.params = words[0]
            return args
        parts = [args.params, *words] if args.params is not None else words
        command.error(f"call takes the params as one argument, but got {len(parts)} "
                      f"({' '.join(parts)}): put the whole JSON in single quotes, as in "
                      f"{PARAMS_EXAMPLE}")
    command.error(_unrecognized(extra, command))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mindscape`` console script."""
    commands = {"serve": serve, "call": call, "token": token}
    try:
        args = _parse(argv)
        return commands[args.command](args)
    except KeyboardInterrupt:
        # Ctrl+C before the daemon took SIGINT over, or while `call` waits: no traceback.
        return 130
    except BrokenPipeError:
        # The reader went away (`mindscape call companion.info | head`): what it read was
        # all it wanted (argparse's --help too). Exit as a program killed by SIGPIPE would
        # (141; Windows has no SIGPIPE to name).
        _silence_stdout()
        return 141
