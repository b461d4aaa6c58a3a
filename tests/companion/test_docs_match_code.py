"""README.md, docs/ and the OpenRPC document say what the code does: the project rule
"Keep README.md, docs/ and the OpenRPC document true to the code", checked through the
real app. docs/API.md's method table against ``rpc.discover``, its error table against
the codes the daemon defines and the methods list, its limits against
``companion.info``, and every ``mindscape COMMAND --option`` the docs write against the
CLI's own parsers.

The docs are parsed simply, by their tables and a few fixed phrases: a test that fails
here because a sentence was reworded says so, and the phrase (or the small mapping
below) is updated with it."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from companion import cli, hub, logs, status, ws
from companion.errors import (
    MAX_LISTED_PROBLEMS,
    MAX_PLUGIN_ERROR_DATA,
    MAX_PLUGIN_ERROR_MESSAGE,
    MESSAGES,
)
from companion.methods.encounter import ADAPTER_REF_ENCOUNTERS, PENDING_MEMO_ENCOUNTERS
from companion.openrpc import PLUGIN_ERROR_MESSAGE
from companion.plugins import MAX_SYSTEM_ID
from companion.registry import METHOD_NAME
from companion.rpc import PLUGIN_METHOD_TIMEOUT
from companion.settings import DEFAULT_HOST, DEFAULT_ORIGINS, DEFAULT_PORT, Limits, Settings
from companion.store import PARSE_SLICE
from companion.tokens import MAX_TOKEN_FILE, TOKEN_BYTES
from engine.dice import MAX_SUPPLIED_DICE
from engine.schemacheck import MAX_ERRORS

from .conftest import Rpc

ROOT = Path(__file__).resolve().parents[2]
API = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
#: Every file a user reads for how to run the daemon.
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) up to the next heading of its level."""
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells. A ``|`` inside a code span (`` `"die"|"action"` ``)
    does not end a cell; ``\\|`` is an escaped one."""
    cells, cell, in_code, previous = [], "", False, ""
    for char in row.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and previous != "\\":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
        previous = char
    return [*cells, cell.strip()]


def _table(section: str, header: str) -> list[list[str]]:
    """The rows (as cells) of the table in ``section`` whose header row is ``header``."""
    lines = section.splitlines()
    start = lines.index(header)
    assert set(lines[start + 1]) <= set("|-: "), "a table's header is followed by |---|"
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def _prose(text: str) -> str:
    """``text`` with its lines joined: prose wraps anywhere, a phrase across two lines."""
    return " ".join(text.split())


def _one(pattern: str, text: str) -> re.Match[str]:
    """The one match of ``pattern``: a phrase the docs reworded, or wrote twice with two
    figures, fails here rather than being read wrongly."""
    matches = list(re.finditer(pattern, text))
    assert len(matches) == 1, f"{pattern!r} is in the docs {len(matches)} times, not once"
    return matches[0]


def _number(text: str) -> int:
    return int(text.replace(" ", "").replace("\u2009", ""))


# -- the method table -------------------------------------------------------------------
METHODS = _table(_section(API, "## Methods"), "| method | params | result |")


@dataclass(frozen=True)
class Member:
    """One params member as a params cell writes it."""

    name: str
    optional: bool


@dataclass(frozen=True)
class Params:
    """A params cell read: its members, and whether it says there are more (``...``)."""

    members: tuple[Member, ...]
    more: bool


#: Cells written as prose, not as ``{member, ...}``: what each says, as a cell would
#: write it. The cell is kept beside its reading, so a changed cell fails until its
#: reading here is changed too (a regex wide enough for such prose would read the next
#: rewording wrongly without a word).
PROSE_PARAMS: dict[str, tuple[str, str]] = {
    "exchange.odds": (
        "as `exchange.resolve`, without `dice`/`seed`; `assume_known?: [pointer]`, "
        "`least_chance?: number` (below)",
        "`{system, attacker, defender, attack, defense?, options?, assume_known?, "
        "least_chance?, ...}`"),
}


def _top_level(text: str, separator: str = ",") -> Iterator[str]:
    """``text`` split at each ``separator`` outside brackets."""
    depth, start = 0, 0
    for index, char in enumerate(text):
        depth += (char in "{[(") - (char in "}])")
        if char == separator and depth == 0:
            yield text[start:index].strip()
            start = index + 1
    yield text[start:].strip()


def _read_params(method: str, cell: str) -> Params:
    """The members a params cell names. ``—``: none. Else a code span ``{a, b?, c:
    [type], ...}`` (``?`` optional, ``...`` more than these), and after it, in prose,
    code spans of single names a system adds (``(revised-2e also `hours`, required;
    power-pool also `puppets?`)``), read as optional: the table says when a system
    requires one, the schema's top level does not."""
    if cell == "—":
        return Params((), more=False)
    if method in PROSE_PARAMS:
        written, reading = PROSE_PARAMS[method]
        assert cell == written, (
            f"the params of {method} in docs/API.md changed: update PROSE_PARAMS")
        cell = reading
    braces = re.match(r"`\{(.*?)\}`(.*)", cell)
    assert braces is not None, f"params of {method} are neither — nor `{{...}}`: {cell!r}"
    members, more = [], False
    for written in _top_level(braces.group(1)):
        if written == "...":
            more = True
            continue
        name = written.split(":")[0].strip()
        assert re.fullmatch(r"[a-z_]+\??", name), f"{method}: member {written!r}"
        members.append(Member(name.rstrip("?"), name.endswith("?")))
    for name in re.findall(r"`([a-z_]+)\??`", braces.group(2)):
        members.append(Member(name, optional=True))
    return Params(tuple(members), more)


def _names(cell: str) -> list[str]:
    """The methods a row names (one row may name several)."""
    return re.findall(r"`([a-z_-]+\.[a-z_]+)`", cell)


@dataclass(frozen=True)
class ParamsSchema:
    """What an ``x-params-schema`` says of its members. ``exchange.*`` and
    ``combatants.rest`` add each system's own (power-pool's ``allies``, revised-2e's
    ``hours``) in an ``if {system} then`` branch of ``allOf``; the top level (or the
    first ``allOf`` element) is the method's own schema."""

    own: frozenset[str]
    required: frozenset[str]
    by_some_system: frozenset[str]
    required_by_every_system: frozenset[str]

    @classmethod
    def of(cls, schema: dict[str, Any]) -> ParamsSchema:
        top = schema["allOf"][0] if "allOf" in schema else schema
        branches = [branch["then"] for branch in schema.get("allOf", [])[1:]]
        return cls(own=frozenset(top.get("properties", {})),
                   required=frozenset(top.get("required", [])),
                   by_some_system=frozenset(name for then in branches
                                            for name in then.get("properties", {})),
                   required_by_every_system=frozenset.intersection(
                       *(frozenset(then.get("required", [])) for then in branches))
                   if branches else frozenset())


async def _discover(rpc: Rpc) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The OpenRPC methods by name, and the names of those a plugin brings."""
    document = await rpc.ok("rpc.discover")
    info = await rpc.ok("companion.info")
    plugins = {name for plugin in info["plugins"] for name in plugin["methods"]}
    return {m["name"]: m for m in document["methods"]}, plugins


async def test_api_md_gives_the_openrpc_and_api_versions_rpc_discover_states(
        rpc: Rpc) -> None:
    """docs/API.md: rpc.discover is an "OpenRPC 1.3.2 document"; its info names the
    API version companion.info gives and the licence the package has."""
    document = await rpc.ok("rpc.discover")
    [row] = [row for row in METHODS if "rpc.discover" in _names(row[0])]
    assert _one(r"OpenRPC (\d+\.\d+\.\d+) document", row[2]).group(1) == document["openrpc"]
    info = await rpc.ok("companion.info")
    assert f"API version {info['api_version']})" in document["info"]["description"]
    license_ = importlib.metadata.metadata("mindscape")["License-Expression"]
    assert document["info"]["license"] == {"name": license_}


async def test_api_md_method_table_names_every_core_method_and_no_other(rpc: Rpc) -> None:
    """docs/API.md "Methods": one row per method of the daemon. A plugin's methods are
    not in it: the test app's are test fixtures (``sample.echo``, ``faulty.*``), a real
    plugin's are its author's to document (docs/PLUGINS.md does the coin duel's, checked
    by test_plugin_guide.py), and API.md is the core's interface, the same whichever
    plugins a GM installed."""
    methods, plugins = await _discover(rpc)
    documented = [name for row in METHODS for name in _names(row[0])]
    assert len(documented) == len(set(documented)), "a method has two rows"
    assert set(documented) == set(methods) - plugins
    assert not set(documented) & plugins


async def test_api_md_params_cells_name_the_params_schemas_members(rpc: Rpc) -> None:
    """Each row's params cell names members of that method's params schema
    (``x-params-schema``, its ``allOf`` branches included), writes a member without
    ``?`` exactly when a call must give it (the method's schema, or every system's,
    requires it), and, unless it ends in ``...``, names every member of the method's
    own schema."""
    methods, _ = await _discover(rpc)
    for row in METHODS:
        for method in _names(row[0]):
            assert method in methods, f"docs/API.md has a row for {method}, no method"
            params = _read_params(method, row[1])
            schema = ParamsSchema.of(methods[method]["x-params-schema"])
            written = {m.name for m in params.members}
            known = schema.own | schema.by_some_system
            assert written <= known, (
                f"{method}: docs/API.md names {sorted(written - known)}, which its params "
                f"schema does not have")
            bare = {m.name for m in params.members if not m.optional}
            must = schema.required | schema.required_by_every_system
            assert must <= bare, f"{method}: required {sorted(must - bare)} written with ?"
            assert bare <= must, f"{method}: optional {sorted(bare - must)} written without ?"
            if not params.more:
                assert schema.own <= written, (
                    f"{method}: docs/API.md does not name {sorted(schema.own - written)}")


def test_params_cells_are_read_member_by_member() -> None:
    """The reader of params cells sees each member, its ``?`` and the ``...``: on docs
    that match the code the comparison above passes, and would pass as well with a
    reader that saw nothing but ``...``."""
    params = _read_params("x.y", "`{system, combatants: [combatant], dice?, ...}` "
                                 "(revised-2e also `hours`, required)")
    assert params.members == (Member("system", False), Member("combatants", False),
                              Member("dice", True), Member("hours", True))
    assert params.more
    assert _read_params("x.y", "—") == Params((), more=False)
    assert _cells("| `a` | `{\"die\"|\"action\"}` | b \\| c |") == [
        "`a`", "`{\"die\"|\"action\"}`", "b \\| c"]


# -- errors ----------------------------------------------------------------------------
ERRORS = _table(_section(API, "## Errors"), "| code | message | when | `data` |")
#: The row of the codes a plugin's method declares for itself (``MethodSpec.errors``):
#: no one number, so it stands for every code the OpenRPC document lists with
#: ``PLUGIN_ERROR_MESSAGE``.
PLUGINS_OWN = "a plugin's own"


def _error_rows() -> dict[int, str]:
    """code -> message of docs/API.md's error table (the plugins' row left out)."""
    rows = {}
    for code, message, *_ in ERRORS:
        if code == PLUGINS_OWN:
            continue
        rows[int(code.replace("\u2212", "-"))] = message
    return rows


async def _websocket_refusal(rpc: Rpc) -> dict[str, Any]:
    """The error a socket gets for a first message that is not ``auth``."""
    socket: aiohttp.ClientWebSocketResponse = await rpc.client.ws_connect("/ws")
    try:
        await socket.send_str(json.dumps({"jsonrpc": "2.0", "method": "companion.info",
                                          "id": 1}))
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(socket.receive_str(), 5))
    finally:
        await socket.close()
    error: dict[str, Any] = answer["error"]
    return error


async def test_api_md_error_table_is_the_daemons_codes(rpc: Rpc) -> None:
    """docs/API.md "Errors": the codes the daemon answers with (companion/errors.py's
    ``MESSAGES``, and the WebSocket's refusal of a first message that is not ``auth``),
    each with the message it sends, and nothing else; and every code the OpenRPC
    document lists for a method is one of them, or a plugin's own."""
    rows = _error_rows()
    refusal = await _websocket_refusal(rpc)
    assert refusal["code"] == ws.UNAUTHORIZED
    assert rows == {**MESSAGES, ws.UNAUTHORIZED: refusal["message"]}
    assert [row[0] for row in ERRORS].count(PLUGINS_OWN) == 1
    methods, plugins = await _discover(rpc)
    for name, method in methods.items():
        for error in method["errors"]:
            if error["code"] in rows:
                assert error["message"] == rows[error["code"]], (name, error)
            else:
                assert name in plugins and error["message"] == PLUGIN_ERROR_MESSAGE, (
                    f"{name} lists error {error['code']}, which docs/API.md does not")


# -- limits ----------------------------------------------------------------------------
LIMITS = _prose(_section(API, "## Limits"))
#: The phrase of API.md "Limits" that states each of ``companion.info``'s limits, and
#: the unit it is written in.
LIMIT_PHRASES: dict[str, tuple[str, int]] = {
    "max_dice": (r"At most (\d+) dice in one expression or pool", 1),
    "max_sides": (r"(\d+) sides per die", 1),
    "max_combatants": (r"(\d+) combatants per encounter", 1),
    "max_batch": (r"(\d+) calls per batch", 1),
    "max_body": (r"A request body over (\d+) MiB is refused", 1024 * 1024),
    "max_penetration": (r"Penetration follow-ups are capped at (\d+) per die", 1),
}

#: The same limits where API.md says what exceeding them does: (section, phrase, unit,
#: limit).
REPEATED_LIMITS: list[tuple[str, str, int, str]] = [
    ("## Endpoints", r"More than \*\*(\d+)\*\* elements", 1, "max_batch"),
    ("## Endpoints", r'"limit": "max_batch", "max": (\d+)', 1, "max_batch"),
    ("## Security", r"a `Content-Length` over \*\*(\d+) MiB\*\*", 1024 * 1024, "max_body"),
]


async def test_api_md_limits_are_companion_infos(rpc: Rpc) -> None:
    """docs/API.md "Limits" states each limit ``companion.info`` lists, with its figure
    (as do "POST /rpc" and "Security" where they say what exceeding one does), and names
    the same ``limits`` members (there and in the method table)."""
    limits = (await rpc.ok("companion.info"))["limits"]
    assert set(LIMIT_PHRASES) == set(limits)
    for name, (phrase, unit) in LIMIT_PHRASES.items():
        assert _number(_one(phrase, LIMITS).group(1)) * unit == limits[name], name
    listed = _one(r"`companion.info` lists the limits under `limits` \(([^)]*)\)", LIMITS)
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == set(limits)
    for section, phrase, unit, name in REPEATED_LIMITS:
        figure = _one(phrase, _prose(_section(API, section))).group(1)
        assert _number(figure) * unit == limits[name], (section, name)
    result = next(row[2] for row in METHODS if _names(row[0]) == ["companion.info"])
    assert set(_one(r"limits: \{([^}]*)\}", result).group(1).replace(" ", "").split(",")) \
        == set(limits)


#: The times docs/API.md gives a client, the phrase that states each, and the figure the
#: daemon started by ``mindscape serve`` (default ``Limits``) uses.
TIMEOUT_PHRASES: list[tuple[str, str, float]] = [
    ("## Endpoints", r"send, within \*\*(\d+) seconds\*\*:", Limits().ws_auth_timeout),
    ("## Endpoints", r"or an answer within (\d+) s \(it must not", ws.ANSWER_TIMEOUT),
    ("## Security", r"a body that takes over (\d+) s to arrive is \*\*408\*\*",
     Limits().read_timeout),
    ("## Security", r"sends no complete request for (\d+) s is closed", Limits().idle_timeout),
]


def test_api_md_timeouts_are_the_daemons() -> None:
    """docs/API.md's times (an `auth` message within 5 s, an answer taken within 30 s, a
    body within 10 s, a complete request within 10 s) are the ones the daemon keeps."""
    for section, phrase, seconds in TIMEOUT_PHRASES:
        assert _number(_one(phrase, _prose(_section(API, section))).group(1)) == seconds, \
            phrase


async def test_api_md_limits_of_supplied_dice_problems_and_plugins_are_the_codes(
        rpc: Rpc) -> None:
    """The other figures of docs/API.md "Limits": supplied dice (the engine's total, the
    ``dice`` schema's purposes and values), the problems a -32602 lists and looks for,
    and a plugin method's time."""
    methods, _ = await _discover(rpc)
    dice = methods["exchange.resolve"]["x-params-schema"]["allOf"][0]["properties"]["dice"]
    supplied = _one(r"([\d ]+) supplied dice values in one call \(`dice`: at most (\d+) "
                    r"purposes, (\d+) values each\)", LIMITS)
    assert [_number(figure) for figure in supplied.groups()] == [
        MAX_SUPPLIED_DICE, dice["maxProperties"], dice["additionalProperties"]["maxItems"]]
    problems = _one(r"A -32602 lists at most (\d+) problems \(see Errors: `left_off`\), "
                    r"found among the first (\d+)\.", LIMITS)
    assert [int(figure) for figure in problems.groups()] == [MAX_LISTED_PROBLEMS, MAX_ERRORS]
    assert int(_one(r"A plugin's method gets (\d+) seconds", LIMITS).group(1)) \
        == PLUGIN_METHOD_TIMEOUT


def _branch(method: dict[str, Any], system: str) -> dict[str, Any]:
    """The ``then`` schema an ``x-params-schema`` applies to ``system``'s calls."""
    then: dict[str, Any] = next(
        branch["then"] for branch in method["x-params-schema"]["allOf"][1:]
        if branch["if"]["properties"]["system"]["const"] == system)
    return then


async def test_openrpc_descriptions_state_the_daemons_limits(rpc: Rpc) -> None:
    """The figures the OpenRPC document's hand-written descriptions give (and API.md's
    hours of rest) are the ones the daemon enforces: ``companion.info``'s limits, and
    revised-2e's rest schema for ``hours``."""
    limits = (await rpc.ok("companion.info"))["limits"]
    methods, _ = await _discover(rpc)
    add = _one(r"At most (\d+) combatants", methods["encounter.add"]["description"])
    assert int(add.group(1)) == limits["max_combatants"]
    [expr] = [p for p in methods["dice.roll"]["params"] if p["name"] == "expr"]
    dice = _one(r"at most (\d+) dice of 1 to (\d+) sides", expr["schema"]["description"])
    assert [int(figure) for figure in dice.groups()] == [limits["max_dice"],
                                                         limits["max_sides"]]
    rest = methods["combatants.rest"]
    hours = _branch(rest, "revised-2e")["properties"]["hours"]
    bounds = [hours["minimum"], hours["maximum"]]
    [described] = [p for p in rest["params"] if p["name"] == "hours"]
    said = _one(r"\((\d+) to (\d+)\)", described["schema"]["description"])
    assert [int(figure) for figure in said.groups()] == bounds
    in_api = _one(r"`revised-2e` needs `hours` \((\d+)–(\d+) full hours", _prose(API))
    assert [int(figure) for figure in in_api.groups()] == bounds


# -- the command line ------------------------------------------------------------------
#: ``mindscape`` then its command, where the docs write a command line: at the start of
#: a code span or line (or after a ``$ `` prompt), or after ``$(`` or a path in one
#: (``TOKEN=$(mindscape token)``, ``.venv/bin/mindscape serve``). Not after a space: a
#: quoted message such as "mindscape: another mindscape daemon is using ..." is no
#: command line.
COMMAND = re.compile(r"(?:^|^\$ |\$\(|/)mindscape ([A-Za-z][\w-]*)([^;|&)]*)")


def _code(text: str) -> Iterator[str]:
    """Each code span of ``text`` (its lines joined: a span may wrap) and each line of
    its fenced code blocks (a ``\\`` line continued)."""
    prose = re.sub(r"```.*?```", " ", text, flags=re.S)
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        yield from block.replace("\\\n", " ").splitlines()
    yield from re.findall(r"`([^`]+)`", _prose(prose))


def _command_lines() -> Iterator[tuple[str, str, list[str]]]:
    """(file, command, options) of every ``mindscape COMMAND ...`` in README.md and
    docs/*.md. Options written alone (`` `--rotate` `` in prose) are not read: nothing
    says whose they are, and Roll20's ``!psi`` commands have ``--`` options of their
    own."""
    for path in DOCS:
        for code in _code(path.read_text(encoding="utf-8")):
            for line in COMMAND.finditer(code.strip()):
                yield path.name, line.group(1), re.findall(r"--[a-z][a-z-]*", line.group(2))


def test_every_mindscape_command_line_in_the_docs_is_one_the_cli_takes() -> None:
    """README.md and docs/*.md write only commands and options ``mindscape`` has (its
    parsers, as ``main`` builds them; ``COMMAND`` stands for any command)."""
    _, commands = cli._parsers()
    options = {name: {o for action in parser._actions for o in action.option_strings}
               for name, parser in commands.items()}
    seen = set()
    for path, command, written in _command_lines():
        takes = set.intersection(*options.values()) if command == "COMMAND" \
            else options.get(command)
        assert takes is not None, f"{path}: `mindscape {command}` is no command"
        assert set(written) <= takes, (
            f"{path}: `mindscape {command}` has no {sorted(set(written) - takes)}")
        seen |= {(command, option) for option in written}
    # the reader finds what the docs write (the guard against it finding nothing)
    assert {("serve", "--allow-origin"), ("token", "--rotate"), ("call", "--url"),
            ("COMMAND", "--help")} <= seen


# -- combatant fields ------------------------------------------------------------------
COMBATANTS = (ROOT / "docs" / "COMBATANTS.md").read_text(encoding="utf-8")


def _field_rows(text: str) -> dict[str, list[str]]:
    """The rows of a docs/COMBATANTS.md field table by field name: a row naming several
    fields (`` `psp`, `psp_max` ``) stands for each."""
    rows = {}
    for cells in _table(text, next(line for line in text.splitlines()
                                   if line.startswith("| field |"))):
        for name in re.findall(r"`(\w+)`", cells[0]):
            rows[name] = cells
    return rows


def _combatant_tables() -> dict[str, dict[str, list[str]]]:
    """Each system's field table in docs/COMBATANTS.md, with the fields every combatant
    has (the table above the systems' sections) added to each."""
    common, *sections = re.split(r"\n## ", COMBATANTS)
    shared = _field_rows(common)
    tables = {}
    for section in sections:
        heading = re.match(r"`([a-z0-9-]+)`", section)
        assert heading is not None, f"a COMBATANTS.md section names no system: {section[:40]!r}"
        tables[heading.group(1)] = {**shared, **_field_rows(section)}
    return tables


def _span(text: str) -> list[int]:
    """The bounds of the one range ``text`` writes (``1–25``, ``−10..10``)."""
    found = _one(r"(−?\d+)(?:–|\.\.)(−?\d+)", text)
    return [int(bound.replace("−", "-")) for bound in found.groups()]


def _bounds(schema: dict[str, Any]) -> list[int]:
    return [schema["minimum"], schema["maximum"]]


#: Figures and choices docs/COMBATANTS.md writes in a field's row: (system, field, the
#: cell (1 type, 2 default or meaning), how it is read, what the system's combatant
#: schema says (its ``properties``)). The cell holds the figure once: a second range in
#: the same cell fails here.
FIELD_FIGURES: list[tuple[str, str, int, Any, Any]] = [
    ("revised-2e", "id", 1, _span, lambda p: [p["id"]["minLength"], p["id"]["maxLength"]]),
    ("revised-2e", "int", 1, _span, lambda p: _bounds(p["int"])),
    ("revised-2e", "wis", 1, _span, lambda p: _bounds(p["wis"])),
    ("revised-2e", "con", 1, _span, lambda p: _bounds(p["con"])),
    ("revised-2e", "mac", 1, _span, lambda p: _bounds(p["mac"])),
    ("revised-2e", "save_paralyzation", 1, _span,
     lambda p: _bounds(p["save_paralyzation"])),
    ("revised-2e", "condition_rounds", 2, _span,
     lambda p: _bounds(p["condition_rounds"]["additionalProperties"])),
    ("revised-2e", "quick_mac", 1, _span,
     lambda p: _bounds(p["quick_mac"]["properties"]["intelligence"])),
    ("revised-2e", "lost_powers", 2, _span,
     lambda p: _bounds(p["lost_powers"]["items"]["properties"]["hours"])),
    ("revised-2e", "kind", 1, lambda cell: re.findall(r"`([a-z-]+)`", cell),
     lambda p: p["kind"]["enum"]),
    ("revised-2e", "class_group", 1, lambda cell: re.findall(r"`([a-z-]+)`", cell),
     lambda p: p["class_group"]["enum"]),
    ("power-pool", "die", 1, lambda cell: [int(n) for n in cell.split(" / ")],
     lambda p: p["die"]["enum"]),
    ("power-pool", "conditions", 2, lambda cell: re.findall(r"`([a-z-]+)`", cell),
     lambda p: p["conditions"]["items"]["enum"]),
    ("power-pool", "condition_rounds", 2, _span,
     lambda p: _bounds(p["condition_rounds"]["additionalProperties"])),
    ("power-pool", "blank_mind_save", 1, _span, lambda p: _bounds(p["blank_mind_save"])),
    # the name every combatant has, and each bound a system sets on a number
    *[(system, "name", 1, _span, lambda p: [p["name"]["minLength"], p["name"]["maxLength"]])
      for system in ("revised-2e", "combat-strength", "power-pool")],
    ("revised-2e", "level", 1, _span, lambda p: _bounds(p["level"])),
    ("revised-2e", "psp", 1, _span, lambda p: _bounds(p["psp"])),
    ("revised-2e", "psp_max", 1, _span, lambda p: _bounds(p["psp_max"])),
    ("revised-2e", "mthac0", 1, _span, lambda p: _bounds(p["mthac0"])),
    ("revised-2e", "mental_armor", 1, _span, lambda p: _bounds(p["mental_armor"])),
    ("revised-2e", "hp", 1, _span, lambda p: _bounds(p["hp"])),
    *[("combat-strength", field, 1, _span, lambda p, f=field: _bounds(p[f]))
      for field in ("attack_strength", "attack_strength_max", "defense_strength",
                    "defense_strength_max", "original_total", "int", "wis")],
    ("combat-strength", "condition_rounds", 2, _span,
     lambda p: _bounds(p["condition_rounds"]["additionalProperties"])),
    ("power-pool", "hit_dice", 1, _span, lambda p: _bounds(p["hit_dice"])),
    ("power-pool", "spell_levels", 1, _span, lambda p: _bounds(p["spell_levels"]["items"])),
]


async def test_combatants_md_names_every_field_of_each_systems_combatant(rpc: Rpc) -> None:
    """docs/COMBATANTS.md has a section for each built-in system, whose table (with the
    fields every combatant has) names exactly the members of that system's combatant
    schema, as ``systems.describe`` serves it."""
    tables = _combatant_tables()
    assert set(tables) == {"revised-2e", "combat-strength", "power-pool"}
    for system, rows in tables.items():
        described = await rpc.ok("systems.describe", {"system": system})
        assert set(rows) == set(described["combatant_schema"]["properties"]), system


async def test_combatants_md_figures_and_choices_are_the_schemas(rpc: Rpc) -> None:
    """The ranges and choices docs/COMBATANTS.md writes (``int`` 1–25, ``die`` 4 / 6 /
    ... / 20, power-pool's conditions, ...) are those of the combatant schemas, and
    ``blank_mind_save``'s default is H-PP-BLANK-SAVE's."""
    tables = _combatant_tables()
    for system, field, cell, read, schema in FIELD_FIGURES:
        described = await rpc.ok("systems.describe", {"system": system})
        properties = described["combatant_schema"]["properties"]
        assert read(tables[system][field][cell]) == schema(properties), (system, field)
    power_pool = await rpc.ok("systems.describe", {"system": "power-pool"})
    [rule] = [r for r in power_pool["house_rules"] if r["id"] == "H-PP-BLANK-SAVE"]
    said = _one(r"H-PP-BLANK-SAVE\), default (\d+)", tables["power-pool"]["blank_mind_save"][2])
    assert int(said.group(1)) == rule["default"]


# -- figures of PLUGINS.md, SECURITY.md and RELIABILITY.md -----------------------------
def _doc(name: str) -> str:
    """``docs/NAME``'s prose, its lines joined."""
    return _prose((ROOT / "docs" / name).read_text(encoding="utf-8"))


async def test_plugins_md_names_the_core_namespaces(rpc: Rpc) -> None:
    """docs/PLUGINS.md "Load order and clashes": the namespaces a plugin's method may not
    use are those of the daemon's own methods (``rpc`` included), as ``rpc.discover``
    names them."""
    methods, plugins = await _discover(rpc)
    core = {name.split(".", 1)[0] for name in methods if name not in plugins}
    listed = _one(r"one of its methods is in a core namespace: ([^;]*);", _doc("PLUGINS.md"))
    assert set(re.findall(r"`([a-z]+)`", listed.group(1))) == core


def test_plugins_and_security_md_state_the_bounds_a_plugin_is_held_to() -> None:
    """The bounds docs/PLUGINS.md (and SECURITY.md, threat 5) give a plugin: a system id
    of at most 100 characters, a method name's two parts, and a ``MethodError`` of a
    code that is none of the daemon's own, a message of 1 to 500 characters and data
    of at most 4096 bytes; and the problems a -32602 lists."""
    plugins, security = _doc("PLUGINS.md"), _doc("SECURITY.md")
    for phrase in (r"a system id that is not kebab-case of at most (\d+) characters",
                   r"joined by `-`, at most (\d+) characters; any other is skipped"):
        assert int(_one(phrase, plugins).group(1)) == MAX_SYSTEM_ID
    assert int(_one(r"a system id must be kebab-case of at most (\d+) characters",
                    security).group(1)) == MAX_SYSTEM_ID
    namespace = _one(r"a lower-case namespace \(`([^`]+)`\), a dot, and a verb that starts "
                     r"with a lower-case letter \(`([^`]+)`\)", plugins)
    assert rf"{namespace.group(1)}\.{namespace.group(2)}" == METHOD_NAME.pattern
    own = _one(r"nor one of the daemon's own \(([\d, ]+)\)", plugins).group(1)
    assert [int(code) for code in own.split(", ")] == sorted(
        code for code in MESSAGES if code > 0)
    assert int(_one(r"its message is a string of 1 to (\d+) characters", plugins)
               .group(1)) == MAX_PLUGIN_ERROR_MESSAGE
    assert int(_one(r"a JSON object of at most (\d+) bytes as JSON", plugins)
               .group(1)) == MAX_PLUGIN_ERROR_DATA
    assert int(_one(r"a JSON object of at most (\d+) KiB as data", security)
               .group(1)) * 1024 == MAX_PLUGIN_ERROR_DATA
    listed = re.findall(r"\(at most (\d+) listed", plugins)
    assert listed and {int(figure) for figure in listed} == {MAX_LISTED_PROBLEMS}


def test_security_md_states_the_daemons_defaults_and_bounds() -> None:
    """docs/SECURITY.md's figures: the origins allowed by default, the address, the
    token's size and the bytes read of its file, the length at which log lines redact
    a run of the token's alphabet, what the status page and the hub keep of what a
    client sent, and the time a socket gets to take its close."""
    security = _doc("SECURITY.md")
    defaults = _one(r"\(([^()]*) by default, more with `--allow-origin`\)", security)
    assert tuple(re.findall(r"`([^`]+)`", defaults.group(1))) == DEFAULT_ORIGINS
    assert _one(r"answers JSON-RPC on `([\d.]+:\d+)`", security).group(1) \
        == f"{DEFAULT_HOST}:{DEFAULT_PORT}"
    assert int(_one(r"The token\*\* is (\d+) random bytes", security).group(1)) \
        == TOKEN_BYTES
    assert int(_one(r"at most (\d+) KiB of it is read", security).group(1)) * 1024 \
        == MAX_TOKEN_FILE
    length = len(secrets.token_urlsafe(TOKEN_BYTES))
    assert int(_one(r"one line of at least (\d+) letters", security).group(1)) == length
    assert int(_one(r"at least a token's length \((\d+)\)", security).group(1)) == length
    assert logs.redact("a" * length) == "[redacted]"
    assert logs.redact("a" * (length - 1)) == "a" * (length - 1)
    assert int(_one(r"is cut to (\d+) characters; the hub keeps", security).group(1)) \
        == status.SHOWN
    assert int(_one(r"the hub keeps at most (\d+) characters of each", security)
               .group(1)) == logs.MAX_KEPT
    assert float(_one(r"take its close within (\d+) s \(`hub.close_socket`\)", security)
                 .group(1)) == hub.CLOSE_TIMEOUT


def test_reliability_md_states_what_the_daemon_keeps_and_reads_at_a_time() -> None:
    """docs/RELIABILITY.md (and SECURITY.md): the sheets of the 16 encounters used last
    are kept for write-backs, the pending choices of the 16 read last, and the log is
    parsed with a turn for other clients after every 64 KiB."""
    reliability, security = _doc("RELIABILITY.md"), _doc("SECURITY.md")
    for text in (reliability, security):
        assert int(_one(r"(\d+) encounters used last \(`ADAPTER_REF_ENCOUNTERS`", text)
                   .group(1)) == ADAPTER_REF_ENCOUNTERS
        assert int(_one(r"after every (\d+) KiB of JSON", text).group(1)) * 1024 \
            == PARSE_SLICE
    assert int(_one(r"remembered for the (\d+) encounters read last", reliability)
               .group(1)) == PENDING_MEMO_ENCOUNTERS


def test_readme_gives_serves_defaults() -> None:
    """README.md "Using the daemon" writes ``serve``'s defaults in its synopsis
    (``[--host 127.0.0.1] [--port 39393]``), as does the set-up line ("listens on
    127.0.0.1:39393"): they are the parser's."""
    readme = _prose((ROOT / "README.md").read_text(encoding="utf-8"))
    _, commands = cli._parsers()
    defaults = {action.option_strings[0]: action.default
                for action in commands["serve"]._actions if action.option_strings}
    synopsis = _one(r"`mindscape serve \[--host ([\d.]+)\] \[--port (\d+)\]", readme)
    assert [synopsis.group(1), int(synopsis.group(2))] == [defaults["--host"],
                                                           defaults["--port"]]
    assert _one(r"listens on ([\d.]+:\d+)\)", readme).group(1) \
        == f"{defaults['--host']}:{defaults['--port']}"


#: What the Foundry module and the Roll20 bridge show a GM who pairs them.
FOUNDRY_LANG = ROOT / "vtt-module" / "foundry" / "mindscape" / "lang" / "en.json"
ROLL20_BRIDGE = ROOT / "vtt-module" / "roll20" / "mindscape-bridge.user.js"
ROLL20_MOD = ROOT / "vtt-module" / "roll20" / "Mindscape.js"


async def test_the_pairing_steps_of_the_banner_and_status_page_name_what_the_vtts_show(
        rpc: Rpc) -> None:
    """The pairing steps ``serve`` prints and the status page shows name the Foundry
    menu and button by their en.json labels, and cover Roll20 whole: the badge's settings
    box (Companion URL, Pairing code, Save and test), ``!psi pair`` as the Mod script
    takes it, and the badge's "connected". Roll20's step once lacked the pairing code,
    without which the bridge relays nothing, and the banner had no Roll20 step."""
    pairing = json.loads(FOUNDRY_LANG.read_text(encoding="utf-8"))["MINDSCAPE"]["Pairing"]
    assert cli.FOUNDRY_SETTING.rsplit(" › ", 1) == [
        "Game Settings › Configure Settings › Mindscape", pairing["MenuLabel"]]
    bridge = ROLL20_BRIDGE.read_text(encoding="utf-8")
    mod = ROLL20_MOD.read_text(encoding="utf-8")
    assert "!psi pair" in mod and "'Mindscape: ${state}'" in bridge.replace("`", "'")
    labels = ["Companion URL", "Pairing code", "Save and test"]
    for label in labels:
        assert f"'{label}" in bridge, label
    assert "connected:" in bridge
    banner = cli._banner(Settings(home=Path("/nowhere")), "http://127.0.0.1:1",
                         "mindscape token")
    roll20 = _one(r"  \d\. Roll20: [^\n]*", banner).group(0)
    assert all(label in roll20 for label in [*labels, "!psi pair", "http://127.0.0.1:1"])
    assert f"press {pairing['Test']}" in banner
    page = await (await rpc.client.get("/")).text()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    assert f"{cli.FOUNDRY_SETTING}; check the address" in text
    assert f"press {pairing['Test']}" in text
    roll20 = text[text.index("Roll20 (with"):text.index("Browsers on other pages")]
    assert all(label in roll20 for label in [*labels, "!psi pair", "Mindscape: connected"])


def test_the_foundry_pairing_help_names_every_origin_the_daemon_allows_by_default() -> None:
    """The Foundry pairing dialog's help on origins (en.json ``HelpOrigin``) names each
    origin the daemon allows without ``--allow-origin``: it once named localhost only,
    and a GM on http://127.0.0.1:30000 was told to add an origin already allowed."""
    pairing = json.loads(FOUNDRY_LANG.read_text(encoding="utf-8"))["MINDSCAPE"]["Pairing"]
    named = re.findall(r"https?://[\w.-]+:\d+",
                       pairing["HelpOrigin"].split("by default")[0])
    assert sorted(named) == sorted(DEFAULT_ORIGINS)
