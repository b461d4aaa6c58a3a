"""The daemon's settings: one frozen value built by the CLI (or a test) and handed to
``create_app``. Nothing below the CLI reads the environment."""

from __future__ import annotations

import ipaddress
import os
import re
import sys
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 39393
#: Foundry's default address; ``http://127.0.0.1:30000`` is allowed alongside it.
DEFAULT_ORIGINS: tuple[str, ...] = ("http://localhost:30000", "http://127.0.0.1:30000")
PLUGIN_GROUP = "mindscape.plugins"


@dataclass(frozen=True)
class Limits:
    """API.md "Limits". ``max_dice``, ``max_sides`` and the penetration cap are enforced by
    the engine; they are listed here so ``companion.info`` can state them."""

    max_body: int = 1024 * 1024
    max_batch: int = 100
    max_dice: int = 100
    #: sides of one die (``engine.dice.MAX_SIDES``)
    max_sides: int = 1000
    max_penetration: int = 100
    max_combatants: int = 64
    ws_auth_timeout: float = 5.0
    #: seconds a request body may take to arrive (slow senders are cut off: 408)
    read_timeout: float = 10.0
    #: seconds a connection may sit without a complete request (headers included)
    idle_timeout: float = 10.0


def installed_plugins() -> Iterable[EntryPoint]:
    """Every entry point of the ``mindscape.plugins`` group in the running environment."""
    # imported here: the CLI imports this module, and importlib.metadata is slow to load
    from importlib.metadata import entry_points

    return entry_points(group=PLUGIN_GROUP)


@dataclass(frozen=True)
class Settings:
    """Everything ``create_app`` needs. ``plugins`` is injectable so tests can hand in
    their own entry points."""

    home: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_origins: tuple[str, ...] = DEFAULT_ORIGINS
    log_level: str = "info"
    limits: Limits = field(default_factory=Limits)
    plugins: Callable[[], Iterable[EntryPoint]] = installed_plugins
    #: where request lines go (``None``: nowhere); the CLI passes its stderr stream
    log_stream: TextIO | None = None
    #: the command that shows the token, as the banner and the status page name it
    #: (the CLI adds ``--home DIR`` when the daemon was started with one)
    token_command: str = "mindscape token"

    @property
    def token_path(self) -> Path:
        """``home/token``."""
        return self.home / "token"

    @property
    def store_path(self) -> Path:
        """``home/mindscape.sqlite3``."""
        return self.home / "mindscape.sqlite3"


def default_home(environ: dict[str, str] | None = None) -> Path:
    """``$MINDSCAPE_HOME``, else the platform's per-user data folder + ``mindscape``.

    Called by the CLI only.
    """
    env = dict(os.environ) if environ is None else environ
    if env.get("MINDSCAPE_HOME"):
        return Path(env["MINDSCAPE_HOME"]).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    return base / "mindscape"


_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Browser extensions' origins: a userscript manager may send its own on the requests
#: it makes for a script (GM_xmlhttpRequest), ``moz-extension://<uuid>`` and the like.
EXTENSION_SCHEMES = frozenset({"moz-extension", "chrome-extension", "safari-web-extension"})
_EXTENSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


_ORIGIN_FORM = ("give the scheme and the host, as in https://foundry.example.com or "
                "http://localhost:30000 (or a userscript manager's moz-extension://<id>)")
#: a host name as a browser sends it in an Origin (IDNs in their xn-- form): labels of
#: letters, digits, ``-`` and ``_`` (a browser takes a hyphen at either end), and the one
#: dot of a fully qualified name at the end, which a browser keeps
_HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?")
#: the last label of a name the URL Standard reads as an IPv4 address ("ends in a
#: number"), in lower case as ``_browser_host`` reads it
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
#: one part of such an address: hexadecimal after 0x, octal after 0, else decimal
_IPV4_PART = re.compile(r"0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*")


def _ipv6_text(address: ipaddress.IPv6Address) -> str:
    """``address`` as a browser writes it (the URL Standard's IPv6 serializer): eight
    pieces in hexadecimal, the first of the longest runs of two or more zero pieces as
    ``::``, and never an IPv4 tail, which Python 3.13 writes for an IPv4-mapped address
    (``::ffff:192.168.1.20`` is ``::ffff:c0a8:114``)."""
    value = int(address)  # (3.13's ``exploded`` has the IPv4 tail too)
    pieces = [format(value >> shift & 0xFFFF, "x") for shift in range(112, -1, -16)]
    start, length = 0, 0
    for i in range(8):
        run = 0
        while i + run < 8 and pieces[i + run] == "0":
            run += 1
        if run > length:
            start, length = i, run
    if length < 2:
        return ":".join(pieces)
    return ":".join(pieces[:start]) + "::" + ":".join(pieces[start + length:])


def _browser_host(text: str, hostname: str) -> str:
    """``hostname`` as a browser writes it in an Origin, or ``ValueError``: a wildcard
    or a name no browser could be at would never match a request."""
    if "*" in hostname:
        raise ValueError(f"{text!r}: wildcards are not supported; give each origin with "
                         "its own --allow-origin")
    if ":" in hostname:
        try:
            return _ipv6_text(ipaddress.IPv6Address(hostname))
        except ValueError:
            raise ValueError(f"{text!r} is not a web origin: {hostname!r} is no IPv6 "
                             "address") from None
    try:
        host = hostname.lower() if hostname.isascii() else hostname.encode("idna").decode()
    except UnicodeError:
        host = ""
    if _NUMERIC_LABEL.fullmatch(host.removesuffix(".").rpartition(".")[2]):
        address = _ipv4_number(host)
        if address is None:
            raise ValueError(f"{text!r} is not a web origin: {hostname!r} is no IPv4 "
                             "address, and a name ending in a number is read as one")
        return str(ipaddress.IPv4Address(address))
    if not _HOST_NAME.fullmatch(host) or len(host.removesuffix(".")) > 253:
        raise ValueError(f"{text!r} is not a web origin: {hostname!r} is no host name a "
                         "browser could be at")
    return host


def _ipv4_number(host: str) -> int | None:
    """The address a browser reads in ``host`` (the URL Standard's IPv4 parser: one to
    four parts, each decimal, octal after a ``0`` or hexadecimal after ``0x``, the last
    filling the bytes left; ``127.1`` is 127.0.0.1), or None where it reads none.
    ``host`` is in lower case, as ``_browser_host`` gives it (``0X7F`` comes as ``0x7f``)."""
    parts = host.removesuffix(".").split(".")
    if len(parts) > 4 or not all(map(_IPV4_PART.fullmatch, parts)):
        return None
    numbers = [int(part[2:] or "0", 16) if part[:2] == "0x"
               else int(part, 8 if part[0] == "0" else 10) for part in parts]
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    return last + sum(number << 8 * (3 - i) for i, number in enumerate(leading))


def browser_origin(text: str) -> str:
    """``text`` as the origin a browser sends (``https://foundry.example.com``): scheme and
    host in lower case, no default port, no path (an address pasted from the address bar,
    ``https://Foundry.Example:443/join``, works); ``ValueError`` naming what is missing.

    A browser extension's origin (``moz-extension://<id>``, ``chrome-extension://<id>``,
    ``safari-web-extension://<id>``) is taken too: the scheme in lower case, the id as
    given (a browser does not change the case of an extension's id), no port, any path
    dropped."""
    try:
        parts = urllib.parse.urlsplit(text.strip())
    except ValueError:  # an unclosed IPv6 bracket
        raise ValueError(f"{text!r} is not a web origin: {_ORIGIN_FORM}") from None
    scheme = parts.scheme.lower()
    if scheme in EXTENSION_SCHEMES:
        if not _EXTENSION_ID.fullmatch(parts.netloc):
            raise ValueError(f"{text!r} is not an extension origin: give the scheme and the "
                             f"extension's id, as in {scheme}://<id>")
        return f"{scheme}://{parts.netloc}"
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{text!r} is not a web origin: {_ORIGIN_FORM}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r} has no valid port") from None
    host = _browser_host(text, parts.hostname)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + ("" if port in (None, _DEFAULT_PORTS[scheme])
                                    else f":{port}")


def merge_origins(extra: Iterable[str]) -> tuple[str, ...]:
    """The default origins plus ``extra`` (each as ``browser_origin`` writes it), in
    order."""
    out = list(DEFAULT_ORIGINS)
    for origin in map(browser_origin, extra):
        if origin not in out:
            out.append(origin)
    return tuple(out)
