"""Plugins through real ``importlib.metadata.EntryPoint`` objects, the method table's
start-up checks, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from importlib.metadata import EntryPoint, PathDistribution
from pathlib import Path
from types import MappingProxyType
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient
from jsonschema import Draft202012Validator

import adapters as adapters_package
import companion.plugins as plugins_module
import companion.rpc as rpc_module
import tests.sample_plugin as sample_plugin
from companion.app import create_app
from companion.keys import DISPATCHER, SERVICES
from companion.methods import CORE
from companion.plugins import MethodError, Plugin, load_plugins, runs_encounters
from companion.registry import (
    NO_RETRIEVAL,
    MethodRegistry,
    MethodSpec,
    RegistryError,
    SchemaUnusable,
    compile_schema,
    schema_problem,
)
from companion.schemas import ADAPTER_REF
from companion.services import Context
from companion.settings import Limits, Settings, installed_plugins
from engine import DiceSource, Event
from engine.schemacheck import Validator
from engine.system import JSON, System
from tests.sample_plugin import (
    GOOD_SCHEMAS,
    WRONG_SCHEMAS,
    _deep,
    with_result_schema,
    with_schema,
)
from tests.sample_plugin.coin_duel import REQUEST, CoinDuel

from .combatants import duelist
from .conftest import GROUP, SAMPLE, Rpc, with_plugins


def ep(name: str, target: str) -> EntryPoint:
    return EntryPoint(name, target, GROUP)


BROKEN = {
    "not-a-plugin": ep("not-a-plugin", "tests.sample_plugin:NOT_A_PLUGIN"),
    "bad-schema": ep("bad-schema", "tests.sample_plugin:BAD_SCHEMA"),
    "colliding": ep("colliding", "tests.sample_plugin:COLLIDING"),
    "flat": ep("flat", "tests.sample_plugin:NOT_NAMESPACED"),
    "failing": ep("failing", "tests.sample_plugin:failing_factory"),
    "missing": ep("missing", "tests.no_such_module:PLUGIN"),
    "missing-attr": ep("missing-attr", "tests.sample_plugin:NOPE"),
    # (named to load after "sample": plugins load sorted by name, the first one wins)
    "twin-system": ep("twin-system", "tests.sample_plugin:SYSTEM"),
}


async def _noop(ctx: Context, params: dict[str, Any]) -> None:
    return None


def test_sample_plugin_loads_through_an_entry_point() -> None:
    loaded = load_plugins([SAMPLE, ep("factory", "tests.sample_plugin:make_plugin")], CORE)
    assert "sample-duel" in loaded.systems
    assert "sample.echo" in loaded.methods and "factory.ping" in loaded.methods
    assert [r.error for r in loaded.reports] == [None, None]


def test_every_broken_plugin_is_reported_and_skipped() -> None:
    loaded = load_plugins([SAMPLE, *BROKEN.values()], CORE)
    reports = {r.name: r for r in loaded.reports}
    assert reports["sample"].error is None
    for name in BROKEN:
        assert reports[name].error, name
    assert reports["not-a-plugin"].error == ("loads to an object of type int, not an "
                                             "engine.System or a companion.plugins.Plugin")
    assert reports["bad-schema"].error == ("method bad.method: the params schema does not "
                                           "compile (the meta-schema refuses the value at "
                                           "/properties/x/type)")
    assert "core namespace" in str(reports["colliding"].error)
    assert "namespace.verb" in str(reports["flat"].error)
    assert "already provided" in str(reports["twin-system"].error)
    # the plugin's own exception text never becomes part of a report
    assert "secret" not in json.dumps([r.to_json() for r in loaded.reports])
    assert "bad.method" not in loaded.methods and "encounter.steal" not in loaded.methods
    assert set(loaded.methods.names()) == set(CORE.names()) | {"sample.echo"}


async def test_broken_plugins_show_in_companion_info_and_the_daemon_runs(
        aiohttp_client: Any, tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, plugins=with_plugins(SAMPLE, *BROKEN.values()))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    response = await client.post("/rpc", json={"jsonrpc": "2.0", "method": "companion.info",
                                               "id": 1},
                                 headers={"Authorization": f"Bearer {token}"})
    info = (await response.json())["result"]
    plugins = {p["name"]: p for p in info["plugins"]}
    assert plugins["missing"]["error"] and plugins["missing"]["methods"] == []
    assert {"revised-2e", "combat-strength", "power-pool", "sample-duel"} <= \
        set(info["systems"])
    page = await (await client.get("/")).text()
    assert "<b>missing</b>" in page and "skipped: could not be loaded" in page
    assert "secret" not in page


def test_registry_refuses_a_duplicate_name() -> None:
    spec = MethodSpec("x.y", {"type": "object"}, _noop, "x")
    with pytest.raises(RegistryError):
        MethodRegistry([spec, spec])


def test_registry_adds_a_plugins_methods_all_or_none_and_keeps_their_order() -> None:
    """``add_all`` refuses a name already in the table or listed twice, adding none of the
    plugin's methods; a copy is extended without changing its original."""
    core = MethodRegistry([_spec(name="b.x"), _spec(name="a.x")])
    assert core.names() == ["b.x", "a.x"] and "a.x" in core and "c.x" not in core
    table = core.copy()
    for clash in ([_spec(name="c.x"), _spec(name="a.x")],
                  [_spec(name="c.x"), _spec(name="c.y"), _spec(name="c.x")]):
        with pytest.raises(RegistryError, match="already registered"):
            table.add_all(clash, plugin=True)
        assert table.names() == ["b.x", "a.x"]
    table.add_all([_spec(name="c.x")], plugin=True)
    assert table.names() == ["b.x", "a.x", "c.x"] and core.names() == ["b.x", "a.x"]
    assert [registered.spec.name for registered in table] == ["b.x", "a.x", "c.x"]


def test_a_method_namespace_is_the_name_before_its_first_dot() -> None:
    """A verb may hold dots of its own (``namespace.verb``): ``a.b.c`` is in ``a``."""
    assert MethodRegistry([_spec(name="a.b.c"), _spec(name="d.e")]).namespaces() == \
        {"a", "d"}


def test_registry_refuses_a_schema_that_does_not_compile() -> None:
    with pytest.raises(RegistryError):
        MethodRegistry([MethodSpec("x.y", {"type": "object", "required": 3}, _noop, "x")])


def test_only_the_core_table_skips_checking_its_schemas() -> None:
    """A table that is not the core's checks every schema (a $ref to nothing is refused
    at once); the core's are checked by the tests instead of at each start."""
    dangling = _spec(params=WRONG_SCHEMAS["dangling-ref"])
    with pytest.raises(RegistryError, match="resolves nowhere"):
        MethodRegistry([dangling])
    assert "a.x" in MethodRegistry([dangling], core=True)


def test_registry_refuses_a_handler_that_is_not_async() -> None:
    def sync(ctx: Context, params: dict[str, Any]) -> None:
        return None

    with pytest.raises(RegistryError):
        MethodRegistry([MethodSpec("x.y", {"type": "object"}, sync, "x")])  # type: ignore[arg-type]


def _spec(**changed: Any) -> MethodSpec:
    """A valid plugin method spec with ``changed`` members."""
    return MethodSpec(**{"name": "a.x", "params": {"type": "object"}, "handler": _noop,
                         "description": "x", **changed})


class _NamedLikeAMethod:
    """Not a name, though it reads as one."""

    def __str__(self) -> str:
        return "a.x"

    def __repr__(self) -> str:
        return "_NamedLikeAMethod()"


@pytest.mark.parametrize(("spec", "problem"), [
    ("a.x", "lists a str among its methods, not a MethodSpec"),
    (_spec(name=_NamedLikeAMethod()),
     "method name _NamedLikeAMethod() is not of the form namespace.verb"),
    (_spec(name="no_namespace"), 'method name "no_namespace" is not of the form namespace.verb'),
    (_spec(params={"type": "array"}), "method a.x: the params schema must describe an object"),
    (_spec(description=None), "method a.x: the description must be a string"),
    (_spec(result=[1]), "method a.x: the result schema must be an object (or None)"),
    (_spec(errors=(4100, True)), "method a.x: errors must be a tuple of integer error codes"),
    (_spec(errors={4100}), "method a.x: errors must be a tuple of integer error codes"),
    (_spec(checked_by_system="yes"), "method a.x: checked_by_system must be true or false"),
    (_spec(system_schema="combatant_schema"),
     "method a.x: system_schema must be one of request_schema, end_round_schema, "
     "round_end_choices_schema, rest_schema")])
def test_registry_says_which_member_of_a_method_is_wrong(spec: Any, problem: str) -> None:
    """docs/PLUGINS.md: a plugin's method of the wrong shape is refused at load, saying
    why."""
    with pytest.raises(RegistryError) as refused:
        MethodRegistry().add_all([spec], plugin=True)
    assert str(refused.value) == problem


def test_core_table_compiled_every_method_once() -> None:
    assert len(CORE) == len(set(CORE.names()))
    for registered in CORE:
        assert registered.spec.handler.__code__.co_flags & 0x80  # CO_COROUTINE


async def test_shutdown_closes_websockets_with_going_away(aiohttp_client: Any,
                                                          settings: Settings) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    # The client reads while the server shuts down, as a browser would.
    closing = asyncio.create_task(client.server.close())
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 1001
    await closing


async def test_a_stopped_app_leaves_no_task_of_its_own_running(aiohttp_client: Any,
                                                               settings: Settings) -> None:
    """STYLE.md: every resource is opened and closed in a cleanup_ctx; the app's own
    tasks (the watch for sockets of a rotated token) end with it."""
    before = asyncio.all_tasks()
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    token = settings.token_path.read_text().strip()
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    await ws.close()
    await client.close()
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() - before if not t.done()] == []


async def test_shutdown_closes_a_websocket_still_authenticating(aiohttp_client: Any,
                                                                 tmp_path: Any) -> None:
    """docs/API.md: a shutdown closes every WebSocket (1001), one that has not sent its
    auth message yet too, at once rather than at its authentication timeout."""
    settings = Settings(home=tmp_path / "home", limits=Limits(ws_auth_timeout=60.0),
                        log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1",))
    closing = asyncio.create_task(client.server.close())
    message = await asyncio.wait_for(ws.receive(), 5)
    assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 1001
    await asyncio.wait_for(closing, 5)


async def test_adapters_that_cannot_be_read_leave_none_and_the_daemon_runs(
        aiohttp_client: Any, settings: Settings, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """An adapters registry that fails (``load_adapters``) leaves the daemon without
    adapters, said in the log, not stopped: the rules still answer."""
    def broken() -> Any:
        raise RuntimeError("adapters broken")

    monkeypatch.setattr(adapters_package, "registry", broken)
    with caplog.at_level(logging.WARNING, logger="mindscape.app"):
        client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    rpc = Rpc(client, settings.token_path.read_text().strip())
    assert await rpc.ok("adapters.list") == []
    assert "revised-2e" in (await rpc.ok("companion.info"))["systems"]
    assert "adapters.registry() failed: no adapters" in caplog.text


# -- wrongly built plugins (issue text: "A broken plugin is reported and skipped, never
# takes the daemon down"; API.md "Plugins": "The daemon always starts.") ---------------
WRONGLY_BUILT = {name: ep(name.replace("_", "-"), f"tests.sample_plugin:WRONGLY_BUILT.{name}")
                 for name in vars(sample_plugin.WRONGLY_BUILT)}
EXITS_AT_IMPORT = ep("exits-at-import", "tests.sample_plugin.exits_at_import:PLUGIN")


async def _info_discover_systems_page(client: TestClient[Any, Any], token: str
                                      ) -> tuple[Any, Any, Any, int]:
    """companion.info, rpc.discover, systems.list (results) and GET /'s status."""
    out = []
    for n, method in enumerate(("companion.info", "rpc.discover", "systems.list")):
        response = await client.post("/rpc", json={"jsonrpc": "2.0", "method": method,
                                                   "id": n},
                                     headers={"Authorization": f"Bearer {token}"})
        answer = await response.json()
        assert "result" in answer, (method, answer)
        out.append(answer["result"])
    return out[0], out[1], out[2], (await client.get("/")).status


async def test_a_wrongly_built_plugin_is_reported_and_skipped_and_every_endpoint_works(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """A Plugin whose members have the wrong types (systems not a tuple, a MethodSpec
    whose name, params, description, result or errors are not what they must be, a name
    or version that is not text or is blank, a system without a name or source, or with
    an id that is no kebab-case, one listed twice, a property that raises, also a
    BaseException of its own), a module that calls exit() at import: each is one skipped
    plugin with an error, and companion.info, rpc.discover, systems.list and the status
    page work."""
    broken = [*WRONGLY_BUILT.values(), EXITS_AT_IMPORT]
    settings = Settings(home=tmp_path, plugins=with_plugins(SAMPLE, *broken))
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    info, discover, systems, page = await _info_discover_systems_page(
        client, settings.token_path.read_text().strip())
    reports = {p["name"]: p for p in info["plugins"]}
    for entry in broken:
        report = reports[entry.name]
        assert report["error"], entry.name
        assert report["systems"] == [] and report["methods"] == []
    assert reports["sample"]["error"] is None
    assert "could not be loaded (SystemExit)" in reports["exits-at-import"]["error"]
    assert "could not be checked (RuntimeError)" in reports["system-id-raises"]["error"]
    assert "could not be checked (PropertyAbort)" in reports["system-name-aborts"]["error"]
    assert reports["system-not-a-system"]["error"] == "lists a str among its systems"
    assert reports["methods-none"]["error"] == \
        "its Plugin methods must be a tuple (got a NoneType)"
    assert reports["method-name-none"]["error"] == "has a method whose name is a NoneType"
    assert reports["method-not-a-spec"]["error"] == "lists a str among its methods"
    assert "secret" not in json.dumps(info)
    assert {s["id"] for s in systems} == {"revised-2e", "combat-strength", "power-pool",
                                          "sample-duel"}
    assert {m["name"] for m in discover["methods"]} == set(CORE.names()) | {"sample.echo"}
    assert page == 200


class CallableCoin(CoinDuel):
    """A system that can also be called: an entry point loading to it loads a system,
    not a factory."""

    def __call__(self) -> None:
        return None


def test_a_system_that_can_be_called_is_loaded_as_a_system(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: an entry point names a System instance, a Plugin, or a function
    returning either; a System is taken as it is, also when it can be called."""
    monkeypatch.setattr(sample_plugin, "CALLABLE_COIN", CallableCoin(), raising=False)
    loaded = load_plugins([ep("callable-coin", "tests.sample_plugin:CALLABLE_COIN")], CORE)
    assert [(r.name, r.systems, r.error) for r in loaded.reports] == [
        ("callable-coin", ("coin-duel",), None)]


def test_a_system_id_of_at_most_100_characters_loads(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    """docs/PLUGINS.md: a system id is kebab-case of at most 100 characters (SYSTEM_ID);
    one of exactly 100 loads (101 do not: WRONGLY_BUILT.system_id_too_long)."""
    plugin = Plugin(name="longest", version="1", systems=(sample_plugin.LongestId(),))
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    assert [r.error for r in loaded.reports] == [None]
    assert "d" * 100 in loaded.systems


@pytest.mark.parametrize("name", sorted(WRONG_SCHEMAS))
def test_a_schema_that_cannot_work_is_reported_at_load(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A params or result schema that passes the meta-schema but fails every call that
    reaches the fault (a $ref to nothing, a loop of $ref, nesting too deep to check) is
    a plugin error at load, not a -32603 (or a crash) later."""
    for make in (with_schema, with_result_schema):
        plugin = make(WRONG_SCHEMAS[name])
        loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
        [report] = loaded.reports
        assert report.error and "schema" in report.error, (name, make, report)
        assert "schema.x" not in loaded.methods


@pytest.mark.parametrize("name", sorted(GOOD_SCHEMAS))
def test_schemas_whose_references_resolve_load(name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_plugins([_entry_point_to(with_schema(GOOD_SCHEMAS[name]), monkeypatch)],
                          CORE)
    assert loaded.reports[0].error is None
    registered = loaded.methods.get("schema.x")
    assert registered is not None and registered.problems({}) == []


def test_a_params_subschema_with_its_own_id_is_judged_by_its_own_definitions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``#/$defs/b`` inside a subschema with its own ``$id`` is that subschema's ``b`` (a
    string here), not the root's (an integer): the quick check must not read it against
    the root and pass params that jsonschema refuses."""
    schema = {"type": "object", "$defs": {"b": {"type": "integer"}},
              "properties": {"x": {"$id": "https://plugin.example/x",
                                   "$defs": {"b": {"type": "string"}}, "$ref": "#/$defs/b"}}}
    loaded = load_plugins([_entry_point_to(with_schema(schema), monkeypatch)], CORE)
    assert loaded.reports[0].error is None
    registered = loaded.methods.get("schema.x")
    assert registered is not None and registered.fast is None
    assert registered.problems({"x": "s"}) == []
    assert [p.path for p in registered.problems({"x": 5})] == ["/x"]


def test_a_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin schema's $ref to a web address is refused at load; nothing is fetched
    (jsonschema's default registry would fetch it, on some later call)."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/schema.json"
        plugin = with_schema({"type": "object", "properties": {"x": {"$ref": url}}})
        loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
        [report] = loaded.reports
        assert report.error and "resolves nowhere" in report.error
    finally:
        server.shutdown()
        server.server_close()
    assert asked == []


def _entry_point_to(plugin: Plugin, monkeypatch: pytest.MonkeyPatch) -> EntryPoint:
    """An entry point that loads to ``plugin`` (put, for the test, where the loader can
    import it)."""
    monkeypatch.setattr(sample_plugin, "MADE_FOR_THE_TEST", plugin, raising=False)
    return ep("schema", "tests.sample_plugin:MADE_FOR_THE_TEST")


# -- a plugin's method cannot stop the daemon or hang its caller -------------------------
UNRULY = ep("unruly", "tests.sample_plugin:UNRULY")


@pytest.fixture
async def unruly(aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 request: pytest.FixtureRequest) -> tuple[TestClient[Any, Any], str]:
    """The app with the unruly plugin; its methods get 0.3 s (or the test's param)."""
    timeout = getattr(request, "param", 0.3)
    monkeypatch.setattr(rpc_module, "PLUGIN_METHOD_TIMEOUT", timeout, raising=False)
    settings = Settings(home=tmp_path, plugins=with_plugins(UNRULY),
                        log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    return client, settings.token_path.read_text().strip()


async def _post(client: TestClient[Any, Any], token: str, method: str) -> Any:
    response = await client.post("/rpc", json={"jsonrpc": "2.0", "method": method, "id": 7},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    return await response.json()


@pytest.mark.parametrize(("method", "raised"), [
    ("unruly.exit", SystemExit), ("unruly.interrupt", KeyboardInterrupt),
    ("unruly.cancel", asyncio.CancelledError), ("unruly.own-timeout", TimeoutError),
    # any BaseException: one let out dropped the connection and its batch's answers
    ("unruly.own-base", sample_plugin.OwnBaseException),
    ("unruly.generator-exit", GeneratorExit),
    # its own runaway recursion, which was answered -32602 as params nested too deep
    ("unruly.recursion", RecursionError)])
async def test_a_method_that_raises_exit_interrupt_or_cancel_is_answered_minus_32603(
        unruly: tuple[TestClient[Any, Any], str], caplog: pytest.LogCaptureFixture,
        method: str, raised: type[BaseException]) -> None:
    """A plugin handler raising SystemExit (exit()), KeyboardInterrupt or a
    CancelledError of its own is a fault like any other: -32603 with an error id, the
    traceback logged under it, and the daemon answers the next call."""
    client, token = unruly
    with caplog.at_level(logging.ERROR, logger="mindscape.rpc"):
        answer = await _post(client, token, method)
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32603
    assert set(answer["error"]["data"]) == {"error_id"}
    [record] = [r for r in caplog.records if r.name == "mindscape.rpc"]
    assert record.exc_info is not None and record.exc_info[0] is raised
    assert record.fields["error_id"] == answer["error"]["data"]["error_id"]  # type: ignore[attr-defined]
    assert "result" in await _post(client, token, "companion.info")


async def test_a_method_that_cancels_itself_keeps_the_websocket(
        unruly: tuple[TestClient[Any, Any], str]) -> None:
    client, token = unruly
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": "unruly.cancel", "id": 1})
    answer = await asyncio.wait_for(ws.receive_json(), 5)
    assert answer["error"]["code"] == -32603
    await ws.send_json({"jsonrpc": "2.0", "method": "companion.info", "id": 2})
    assert "result" in await asyncio.wait_for(ws.receive_json(), 5)
    await ws.close()


@pytest.mark.parametrize(("unruly", "said"), [(0.3, "0.3 s"), (1.0, "1 s")],
                         indirect=["unruly"])
async def test_a_plugin_method_that_never_answers_times_out(
        unruly: tuple[TestClient[Any, Any], str], said: str) -> None:
    """API.md "Plugins": a plugin method gets PLUGIN_METHOD_TIMEOUT seconds, then the
    call is -32603 saying so (here 0.3 s or 1 s instead of 30; whole seconds are said
    without a fraction, as "30 s")."""
    client, token = unruly
    answer = await asyncio.wait_for(_post(client, token, "unruly.hang"), 5)
    error = answer["error"]
    assert error["code"] == -32603
    assert error["message"] == ("Internal error: the plugin method unruly.hang did not "
                                f"answer within {said}")
    assert set(error["data"]) == {"error_id"}


async def test_plugin_params_nested_too_deep_to_check_are_invalid_params(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking a plugin method's params that run out of stack is -32602 as for a core
    method: only the plugin handler's own runaway recursion is its fault (-32603)."""
    nested = {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}},
              "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}
    rpc = await rpc_with(_entry_point_to(with_schema(nested), monkeypatch))
    body = '{"jsonrpc":"2.0","method":"schema.x","params":{"x":' + "[" * 990 + "]" * 990 + \
        '},"id":7}'
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    assert (await response.json())["error"] == {
        "code": -32602, "message": "Invalid params", "data": {"errors": [
            {"path": "", "message": "the params are nested too deeply to check"}]}}


async def test_a_string_over_its_max_length_is_refused_without_its_pattern(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin's ``pattern`` runs on Python's backtracking ``re``: ``[a-z]+:[0-9]+``
    takes time in the square of a string it does not match (100 000 letters: seconds,
    1 MiB: minutes, the daemon answering no one meanwhile). A string over the schema's
    ``maxLength`` is refused by that alone, so only strings the plugin allows reach its
    pattern (docs/PLUGINS.md "A method"); a short one still meets it."""
    schema = {"type": "object", "properties": {
        "code": {"type": "string", "maxLength": 20, "pattern": "[a-z]+:[0-9]+"}}}
    rpc = await rpc_with(_entry_point_to(with_schema(schema), monkeypatch))
    too_long = await rpc.error("schema.x", {"code": "a" * 100_000})
    assert [e["path"] for e in too_long["data"]["errors"]] == ["/code"]
    assert too_long["data"]["errors"][0]["message"].endswith(" is too long")
    unmatched = await rpc.error("schema.x", {"code": "abc"})
    assert [e["path"] for e in unmatched["data"]["errors"]] == ["/code"]
    assert "does not match" in unmatched["data"]["errors"][0]["message"]


async def test_a_call_cancelled_while_its_plugin_method_runs_ends_cancelled(
        unruly: tuple[TestClient[Any, Any], str], caplog: pytest.LogCaptureFixture) -> None:
    """Only a CancelledError of the handler's own is answered: the request's own
    cancellation (its client gone, a shutdown) goes on, unanswered and logged as no
    fault."""
    client, _ = unruly
    app = client.server.app
    call = asyncio.ensure_future(app[DISPATCHER].handle(
        b'{"jsonrpc": "2.0", "method": "unruly.hang", "id": 1}', app[SERVICES].http_context))
    await asyncio.sleep(0.05)
    with caplog.at_level(logging.ERROR, logger="mindscape.rpc"):
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    assert [r for r in caplog.records if r.name == "mindscape.rpc"] == []


# -- a plugin's metadata cannot break shared endpoints -----------------------------------
async def test_a_plugin_error_code_of_its_own_is_documented_generically(rpc_with: Any
                                                                       ) -> None:
    """API.md "Plugins": a method lists ``errors=(...)``, its own codes too;
    rpc.discover names such a code with a generic message instead of failing."""
    rpc = await rpc_with(ep("own", "tests.sample_plugin:OWN_ERROR_CODE"))
    document = await rpc.ok("rpc.discover")
    method = next(m for m in document["methods"] if m["name"] == "owncode.ping")
    assert {"code": 4100, "message": "Error defined by the plugin"} in method["errors"]


async def test_rpc_discover_lists_only_the_codes_a_plugin_method_can_answer_with(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md "Errors": a MethodError with a code JSON-RPC reserves is -32603
    even when the method lists it, so rpc.discover does not promise it; and -32602,
    which every method answers, is listed once even when the method lists it too."""
    listing = Plugin(name="listing", version="1", methods=(
        MethodSpec("listing.x", {"type": "object"}, _raises, "lists reserved codes",
                   errors=(4777, -32000, -32602, 4001, -32603, 4777)),))
    rpc = await rpc_with(_entry_point_to(listing, monkeypatch))
    document = await rpc.ok("rpc.discover")
    [method] = [m for m in document["methods"] if m["name"] == "listing.x"]
    assert [e["code"] for e in method["errors"]] == [-32602, 4777, 4001]
    assert await rpc.error("listing.x", {"code": 4777}) == {
        "code": 4777, "message": "Out of coins", "data": {}}


async def test_a_system_without_round_logic_refuses_encounters_with_invalid_params(
        rpc_with: Any) -> None:
    """A plugin system that has neither ``rounds`` nor encounter hooks of its own:
    encounter.create is -32602 naming the system (not a -32603 fault), and systems.list
    says which systems run encounters."""
    rpc = await rpc_with(SAMPLE, ep("no-encounters", "tests.sample_plugin:NO_ENCOUNTERS"))
    error = await rpc.error("encounter.create", {"system": "no-encounters"})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{
        "path": "/system", "message": "system no-encounters does not run encounters "
                                      "(systems.list: encounters false)"}]
    assert await rpc.ok("encounter.list") == []
    listed = {s["id"]: s["encounters"] for s in await rpc.ok("systems.list")}
    assert listed == {"revised-2e": True, "combat-strength": True, "power-pool": True,
                      "sample-duel": True, "no-encounters": False}
    # exchanges still work for it
    result = await rpc.ok("exchange.odds", {"system": "no-encounters",
                                            "attacker": {"id": "a", "name": "A"},
                                            "defender": {"id": "b", "name": "B"},
                                            "attack": {"mode": "jab"}})
    assert set(result["outcomes"]) == {"hit", "miss"}


class SomeEncounterHooks(sample_plugin.NoEncounters):
    """A system without round logic that defines one encounter hook, not all six."""

    id = "some-hooks"

    def encounter_new(self, options: Mapping[str, Any] | None) -> JSON:
        return {"phase": "declare"}


def test_a_system_with_some_encounter_hooks_does_not_run_encounters() -> None:
    """docs/API.md "Plugins": a system runs encounters when it has round logic or
    defines every encounter hook itself; with only some, the others would fail."""
    assert not runs_encounters(SomeEncounterHooks())
    assert not runs_encounters(sample_plugin.NO_ENCOUNTERS)
    assert runs_encounters(sample_plugin.SYSTEM)


async def test_a_plugin_encounter_that_still_waits_is_not_resolved_unless_forced(
        rpc_with: Any) -> None:
    """API.md: resolve "once waiting_for is empty, or with force". A plugin system whose
    resolve forgets to refuse is refused by the daemon, as the built-in systems refuse,
    and nothing is stored."""
    rpc = await rpc_with(ep("careless", "tests.sample_plugin:CARELESS"))
    eid = (await rpc.ok("encounter.create", {"system": "careless-duel"}))["id"]
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": {"mode": "jab", "target": "bob"}}})
    before = await rpc.ok("encounter.get", {"id": eid})
    error = await rpc.error("encounter.resolve", {"id": eid, "seed": 1})
    assert error == {"code": 4001, "message": "The rules forbid it", "data": {
        "rule": "choices-missing",
        "detail": "still waiting for bob (or resolve with force)"}}
    assert await rpc.ok("encounter.get", {"id": eid}) == before
    forced = await rpc.ok("encounter.resolve", {"id": eid, "seed": 1, "force": True})
    assert forced["revision"] == before["revision"] + 1


@pytest.fixture
def rpc_with(aiohttp_client: Any, tmp_path: Path) -> Any:
    async def make(*entry_points: EntryPoint) -> Rpc:
        settings = Settings(home=tmp_path, plugins=with_plugins(*entry_points),
                            log_stream=io.StringIO())
        client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
        return Rpc(client, settings.token_path.read_text().strip())

    return make


# -- a plugin system's requests and schemas (docs/PLUGINS.md "Requests") -----------------
COIN = ep("coin-duel", "tests.sample_plugin.coin_duel:PLUGIN")
COIN_REQUEST = {"system": "coin-duel", "attacker": {"id": "a", "name": "A"},
                "defender": {"id": "b", "name": "B"}, "attack": {"call": "heads"}}


async def test_a_plugin_systems_request_with_two_faults_is_refused_naming_both(
        rpc_with: Any) -> None:
    """Services.check_request: invalid params naming every problem of the request, not
    only the first found."""
    rpc = await rpc_with(COIN)
    error = await rpc.error("exchange.resolve", {**COIN_REQUEST, "bogus": 1,
                                                 "attack": {"call": "edge"}})
    assert error["code"] == -32602
    assert sorted(e["path"] for e in error["data"]["errors"]) == ["", "/attack/call"]


@pytest.mark.parametrize("method", ["exchange.resolve", "exchange.odds"])
async def test_a_plugin_systems_request_is_checked_against_its_request_schema(
        rpc_with: Any, method: str) -> None:
    """API.md "Plugins": the params of exchange.resolve and exchange.odds are checked
    against the named system's request schema, for a plugin system that does not check
    them itself (the coin duel leaves it to the daemon) as for the built-in ones."""
    rpc = await rpc_with(COIN)
    assert {"outcome", "outcomes"} & set(await rpc.ok(method, COIN_REQUEST))
    error = await rpc.error(method, {**COIN_REQUEST, "bogus": 1})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [
        {"path": "", "message": 'unexpected member(s) ["bogus"]: not allowed here'}]
    error = await rpc.error(method, {**COIN_REQUEST, "attack": {"call": "edge"}})
    assert error["data"]["errors"] == [
        {"path": "/attack/call", "message": '"edge" is not one of ["heads", "tails"]'}]


class GuardedCoin(CoinDuel):
    """The coin duel with a defense written as anyOf null or an object, as a plugin's
    author may write it."""

    def request_schema(self) -> JSON:
        guard = {"type": "object", "required": ["guard"], "additionalProperties": False,
                 "properties": {"guard": {"enum": ["high", "low"]}}}
        return {**REQUEST, "properties": {**REQUEST["properties"],
                                          "defense": {"anyOf": [{"type": "null"}, guard]}}}


@pytest.mark.parametrize("method", ["exchange.resolve", "exchange.odds"])
async def test_a_plugin_schemas_any_of_null_or_object_is_named_inside_the_object(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """API.md -32602: `data.errors` name the path and the rule, for a plugin system's
    request schema too: a defense that is anyOf null or an object, given an object with
    a wrong member, is named at that member with its rule (it was the whole /defense,
    "not valid under any of the given schemas")."""
    monkeypatch.setattr(sample_plugin, "GUARDED_COIN", GuardedCoin(), raising=False)
    rpc = await rpc_with(ep("guarded-coin", "tests.sample_plugin:GUARDED_COIN"))
    error = await rpc.error(method, {**COIN_REQUEST, "defense": {"guard": "middle"}})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [
        {"path": "/defense/guard", "message": '"middle" is not one of ["high", "low"]'}]
    error = await rpc.error(method, {**COIN_REQUEST, "defense": {}})
    assert error["data"]["errors"] == [
        {"path": "/defense", "message": '"guard" is a required property'}]


async def test_an_unknown_system_lists_the_known_ones_sorted_plugins_among_them(
        rpc_with: Any) -> None:
    """The known systems are listed in order of their ids, a plugin's among the built-in
    ones (coin-duel first), not in the order they were loaded (built-in ones first)."""
    rpc = await rpc_with(COIN)
    error = await rpc.error("systems.describe", {"system": "gurps"})
    assert error["data"]["errors"] == [{
        "path": "/system", "message": 'unknown system "gurps"; known: ["coin-duel", '
                                      '"combat-strength", "power-pool", "revised-2e"]'}]


async def test_a_plugin_systems_request_gets_no_dice_or_seed_to_check(rpc_with: Any) -> None:
    """API.md: exchange.resolve takes dice? and seed? for every system; the daemon rolls
    with them, and the system's request schema (the coin duel's allows no other member)
    sees the request without them."""
    rpc = await rpc_with(COIN)
    seeded = await rpc.ok("exchange.resolve", {**COIN_REQUEST, "seed": 3})
    assert await rpc.ok("exchange.resolve", {**COIN_REQUEST, "seed": 3}) == seeded
    supplied = await rpc.ok("exchange.resolve", {**COIN_REQUEST, "dice": {"attack": [1]}})
    assert [r["value"] for r in supplied["rolls"]] == [1]


COIN_ODDS: JSON = {"outcomes": {"right": 0.5, "wrong": 0.5, "edge": 0.001}}


class RememberingCoin(CoinDuel):
    """The coin duel answering its odds from one table it keeps (as a plugin that
    works them out once may)."""

    id = "remembering-coin"

    def odds(self, request: Mapping[str, Any]) -> JSON:
        return COIN_ODDS


async def test_least_chance_leaves_a_plugin_systems_own_odds_as_they_were(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md exchange.odds: least_chance trims the answer. The odds a plugin system
    gives back are its own: a call with least_chance leaves them whole for the next."""
    plugin = Plugin(name="remembering", version="1.0", systems=(RememberingCoin(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    request = {**COIN_REQUEST, "system": "remembering-coin"}
    short = await rpc.ok("exchange.odds", {**request, "least_chance": 0.01})
    assert short["outcomes"] == {"right": 0.5, "wrong": 0.5}
    whole = await rpc.ok("exchange.odds", request)
    assert whole == {"outcomes": {"right": 0.5, "wrong": 0.5, "edge": 0.001},
                     "updates": []}


class OwnEndOfRound(CoinDuel):
    """A system that ends rounds with an ``end_round`` of its own, checking nothing."""

    id = "own-end-of-round"

    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        return combatant, [], []

    def end_round(self, request: Mapping[str, Any], dice: DiceSource) -> JSON:
        return {"system": self.id, "combatants": [], "events": [], "rolls": [],
                "summary": "nothing", "unused_dice": {}}


async def test_a_plugin_systems_own_end_round_gets_a_checked_request(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every method the daemon routes to a system's request checks it against the
    schema rpc.discover gives: exchange.end_round against end_round_schema, also when
    the system's end_round is its own (System's checks it)."""
    plugin = Plugin(name="own", version="1", systems=(OwnEndOfRound(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    params = {"system": "own-end-of-round", "combatants": [{"id": "a", "name": "A"}]}
    assert (await rpc.ok("exchange.end_round", params))["summary"] == "nothing"
    error = await rpc.error("exchange.end_round", {**params, "puppets": []})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [
        {"path": "", "message": 'unexpected member(s) ["puppets"]: not allowed here'}]


class CheckingNothing(OwnEndOfRound):
    """A system whose round_end_choices and rest are its own, checking nothing, and
    whose schemas of them take one combatant at a time."""

    id = "checking-nothing"

    def round_end_choices_schema(self) -> JSON:
        return {"type": "object", "additionalProperties": False, "properties": {
            "combatants": {"type": "array", "maxItems": 1}, "options": {"type": "object"}}}

    def rest_schema(self) -> JSON:
        return self.round_end_choices_schema()

    def round_end_choices(self, request: Mapping[str, Any]) -> JSON:
        return {"system": self.id, "combatants": [], "summary": "nothing"}

    def combatant_rest(self, combatant: JSON, request: Mapping[str, Any], dice: DiceSource,
                       options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        return combatant, [], []

    def rest(self, request: Mapping[str, Any], dice: DiceSource) -> JSON:
        return {"system": self.id, "combatants": [], "events": [], "rolls": [],
                "summary": "nothing", "unused_dice": {}}


@pytest.mark.parametrize("method", ["exchange.round_end_choices", "combatants.rest"])
async def test_a_plugin_systems_own_round_end_choices_and_rest_get_checked_requests(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """docs/API.md "Plugins": the params of exchange.round_end_choices and
    combatants.rest are checked against the system's round_end_choices_schema() and
    rest_schema() before the system sees them, also when its methods are its own."""
    plugin = Plugin(name="own", version="1", systems=(CheckingNothing(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    one = {"system": "checking-nothing", "combatants": [{"id": "a", "name": "A"}]}
    assert (await rpc.ok(method, one))["summary"] == "nothing"
    two = {**one, "combatants": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}]}
    error = await rpc.error(method, two)
    assert error["code"] == -32602
    assert [e["path"] for e in error["data"]["errors"]] == ["/combatants"]
    # rpc.discover says the same: its schema's combatants, not the combatant schema's
    [documented] = [m for m in (await rpc.ok("rpc.discover"))["methods"]
                    if m["name"] == method]
    validator = Validator(documented["x-params-schema"], registry=NO_RETRIEVAL)
    unchecked = {**one, "combatants": [{"id": "a", "mood": "calm"}]}
    assert "result" in await rpc.call(method, unchecked)
    assert validator.is_valid(one) and validator.is_valid(unchecked)
    assert not validator.is_valid(two)


class NamesByReference(OwnEndOfRound):
    """A system that ends rounds, whose combatant schema refers to its own ``$defs``."""

    id = "names-by-reference"

    def combatant_schema(self) -> JSON:
        return {"type": "object", "required": ["id"],
                "$defs": {"name": {"type": "string", "maxLength": 20}},
                "properties": {"id": {"type": "string"}, "name": {"$ref": "#/$defs/name"}}}


class NamesByItsOwnId(OwnEndOfRound):
    """As ``NamesByReference``, with an ``$id`` of its own and absolute references."""

    id = "names-by-its-own-id"

    def combatant_schema(self) -> JSON:
        base = "https://plugin.example/named-combatant"
        return {"$id": base, "type": "object", "required": ["id"],
                "$defs": {"name": {"type": "string", "maxLength": 20}},
                "properties": {"id": {"type": "string"},
                               "name": {"$ref": base + "#/$defs/name"}}}


@pytest.mark.parametrize("system", [NamesByReference(), NamesByItsOwnId()],
                         ids=lambda system: system.id)
async def test_rpc_discover_resolves_a_plugin_combatant_schemas_own_references(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch, system: System) -> None:
    """exchange.end_round's x-params-schema gives the system's combatant schema for each
    of ``combatants``, as its own resource (under its own ``$id`` when it has one): its
    references resolve in it, not in the end of round's schema around it."""
    plugin = Plugin(name="own", version="1", systems=(system,))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    params = {"system": system.id, "combatants": [{"id": "a", "name": "A"}]}
    assert "result" in await rpc.call("exchange.end_round", params)
    [end_round] = [m for m in (await rpc.ok("rpc.discover"))["methods"]
                   if m["name"] == "exchange.end_round"]
    validator = Validator(end_round["x-params-schema"], registry=NO_RETRIEVAL)
    assert validator.is_valid(params)
    assert not validator.is_valid({**params, "combatants": [{"id": "a", "name": "A" * 21}]})


class LooseCombatantMembers(CoinDuel):
    """A coin duel whose request takes any defender (its schema ``true``) and a list of
    defenders without saying what is in it."""

    id = "loose-combatant-members"

    def request_schema(self) -> JSON:
        return {**REQUEST, "properties": {**REQUEST["properties"], "defender": True,
                                          "defenders": {"type": "array", "maxItems": 1}}}


async def test_rpc_discover_documents_combatant_members_of_any_schema(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A combatant member whose schema is ``true``, or a list with no ``items`` schema,
    is documented as it is, not left out with the system's whole branch."""
    plugin = Plugin(name="own", version="1", systems=(LooseCombatantMembers(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    [resolve] = [m for m in (await rpc.ok("rpc.discover"))["methods"]
                 if m["name"] == "exchange.resolve"]
    assert "loose-combatant-members" in [
        b["if"]["properties"]["system"]["const"] for b in resolve["x-params-schema"]["allOf"]
        if "if" in b]
    validator = Validator(resolve["x-params-schema"], registry=NO_RETRIEVAL)
    call = {**COIN_REQUEST, "system": "loose-combatant-members"}
    assert validator.is_valid({**call, "defenders": [{"id": "c", "name": "C"}]})
    assert not validator.is_valid({**call, "defenders": [{"id": "c"}, {"id": "d"}]})


async def test_rpc_discover_allows_no_sheet_for_a_plugin_systems_combatants(
        rpc_with: Any) -> None:
    """The adapters build combatants for the built-in systems alone, and the daemon
    refuses an {adapter, data} combatant for a plugin's system: its branch of
    exchange.resolve's x-params-schema gives the system's combatant members as the
    system wrote them, with no {adapter, data} beside them (revised-2e's have it)."""
    rpc = await rpc_with(COIN)
    refused = await rpc.call("exchange.resolve", {
        **COIN_REQUEST, "attacker": {"adapter": "foundry-dnd5e", "data": {}}})
    assert refused["error"]["code"] == -32602
    assert "/attacker/adapter" in json.dumps(refused["error"]["data"])
    [resolve] = [m for m in (await rpc.ok("rpc.discover"))["methods"]
                 if m["name"] == "exchange.resolve"]
    branches = {b["if"]["properties"]["system"]["const"]: b["then"]["properties"]
                for b in resolve["x-params-schema"]["allOf"][1:]}
    for member in ("attacker", "defender"):
        assert branches["coin-duel"][member] == REQUEST["properties"][member]
        assert ADAPTER_REF in branches["revised-2e"][member]["anyOf"]


class ForgetsItsSchema(CoinDuel):
    """A coin duel whose request schema can be read at load and never again (a file
    it was read from gone, say)."""

    id = "forgets-its-schema"

    def __init__(self) -> None:
        self.asked = 0

    def request_schema(self) -> JSON:
        self.asked += 1
        if self.asked > 1:
            raise OSError("the schema is gone")
        return REQUEST


async def test_rpc_discover_leaves_out_a_system_schema_that_fails_after_load(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin system's schema that fails when rpc.discover asks for it: the document
    is still given, without that system's branch (the daemon log says why)."""
    plugin = Plugin(name="own", version="1", systems=(ForgetsItsSchema(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    assert "forgets-its-schema" in {s["id"] for s in await rpc.ok("systems.list")}
    document = await rpc.ok("rpc.discover")
    for method in document["methods"]:
        if method["name"] in ("exchange.resolve", "exchange.odds"):
            documented = [b["if"]["properties"]["system"]["const"]
                          for b in method["x-params-schema"]["allOf"][1:]]
            assert "forgets-its-schema" not in documented
            assert {"revised-2e", "combat-strength", "power-pool"} <= set(documented)


async def test_rpc_discover_leaves_a_plugin_systems_own_schemas_as_they_were(
        rpc_with: Any) -> None:
    """rpc.discover builds each branch from a copy: the coin duel's request schema (one
    object, given each time, which the daemon checks its calls with) is unchanged after
    it, as systems.describe gives it."""
    before = json.loads(json.dumps(REQUEST))
    rpc = await rpc_with(COIN)
    await rpc.ok("rpc.discover")
    assert before == REQUEST
    described = await rpc.ok("systems.describe", {"system": "coin-duel"})
    assert described["request_schema"] == before


def test_the_daemon_checks_only_third_party_systems_requests() -> None:
    """The built-in systems check their own requests (validate_request; exchange.resolve
    is benchmarked): the daemon keeps no schema to check them again. A plugin system's
    schemas are compiled at load for the daemon's checks (Services.check_request)."""
    loaded = load_plugins([*installed_plugins(), COIN], CORE)
    assert set(loaded.request_schemas) == {"coin-duel"}
    assert {"combatant_schema", "request_schema"} <= set(loaded.request_schemas["coin-duel"])


def _system_with(which: str, schema: Any) -> Plugin:
    """A plugin whose coin duel's ``which`` (a System method) returns ``schema``."""
    system = CoinDuel()
    object.__setattr__(system, which, lambda: schema)
    return Plugin(name="schemas", version="1", systems=(system,), methods=(
        MethodSpec("schemas.x", {"type": "object"}, _noop, "x"),))


UNUSABLE_SYSTEM_SCHEMAS: dict[str, Any] = {
    "does-not-compile": {"type": "object", "properties": {"x": {"type": 12}}},
    "not-an-object": [{"type": "object"}],
    **WRONG_SCHEMAS,
}


def test_a_schema_that_does_not_compile_is_reported_with_the_place_it_fails() -> None:
    """docs/PLUGINS.md "Schemas": the report names where the meta-schema refuses the
    schema, as a JSON Pointer into it (``~`` and ``/`` in a key escaped), so its author
    can find it; not the meta-schema's words, which quote the plugin's values."""
    schema = {"type": "object", "properties": {"a/b~": {"minimum": "secret"}}}
    assert schema_problem(schema) == ("does not compile (the meta-schema refuses the "
                                      "value at /properties/a~1b~0/minimum)")


@pytest.mark.parametrize(("key", "place"), [
    ("k" * 80, "/properties/" + "k" * 80 + "/minimum"),
    ("k" * 81, "/properties/" + "k" * 81 + "/minim…")])
def test_the_place_a_schema_fails_is_said_in_at_most_100_characters(
        key: str, place: str) -> None:
    """A pointer of 100 characters is said whole; a longer one, its first 99 and "…"."""
    schema = {"type": "object", "properties": {key: {"minimum": "secret"}}}
    assert schema_problem(schema) == (
        f"does not compile (the meta-schema refuses the value at {place})")


def test_a_schema_nested_too_deep_to_check_says_so() -> None:
    """Checked, or compiled unchecked (as the core methods' schemas are)."""
    assert schema_problem(WRONG_SCHEMAS["nested-400-deep"]) == "is nested too deeply to check"
    with pytest.raises(SchemaUnusable, match=r"^is nested too deeply to check$"):
        compile_schema({"type": "object", "properties": {"x": _deep(2000)}}, check=False)


def test_a_schema_deeper_than_its_quick_check_compiles_is_still_usable() -> None:
    """30 levels of arrays are past what Python compiles as the quick check's source
    (20 nested blocks), not past what jsonschema checks: the schema is used, without a
    quick check (it was refused as "cannot be used (SyntaxError)")."""
    schema: dict[str, Any] = {"type": "string"}
    deep: Any = "s"
    for _ in range(30):
        schema, deep = {"type": "array", "items": schema}, [deep]
    compiled = compile_schema({"type": "object", "properties": {"x": schema}})
    assert compiled.fast is None
    assert compiled.validator.is_valid({"x": deep})
    assert not compiled.validator.is_valid({"x": [1]})


def test_a_ref_that_resolves_nowhere_is_named_by_its_first_100_characters() -> None:
    ref = "#/$defs/" + "n" * 200
    schema = {"type": "object", "properties": {"x": {"$ref": ref}}}
    assert schema_problem(schema) == (
        f'has a $ref that resolves nowhere ("{ref[:100]}"; remote schemas are never '
        "fetched)")


def test_a_schema_compiled_unchecked_that_fails_its_first_use_cannot_be_used() -> None:
    """``compile_schema`` tries the schema on {} at once: a fault there is said by the
    exception's type, as SchemaUnusable."""
    with pytest.raises(SchemaUnusable, match=r"^cannot be used \(TypeError\)$"):
        compile_schema({"type": 12}, check=False)


def test_a_schema_the_meta_schema_refuses_whole_is_said_to_fail_as_itself() -> None:
    """No JSON Pointer to show: the place is "the schema itself"."""
    assert schema_problem(5) == ("does not compile (the meta-schema refuses the schema "
                                 "itself)")


def test_a_schema_the_reference_library_cannot_follow_is_reported_not_raised() -> None:
    """A $ref that indexes a list by a name makes the reference library raise a
    ValueError of its own: still the plugin's schema at fault, said by the exception's
    type, and a method with it is refused when it is registered."""
    schema = {"type": "object", "prefixItems": [{}], "$ref": "#/prefixItems/x"}
    assert schema_problem(schema) == "cannot be checked (ValueError)"
    with pytest.raises(RegistryError, match=r"^method a\.x: the params schema cannot be "
                                            r"checked \(ValueError\)$"):
        MethodRegistry([MethodSpec("a.x", schema, _noop, "x")])


@pytest.mark.parametrize("which", ["request_schema", "combatant_schema"])
@pytest.mark.parametrize("name", sorted(UNUSABLE_SYSTEM_SCHEMAS))
def test_a_plugin_system_whose_schema_cannot_be_used_is_skipped_at_load(
        which: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin system's request or combatant schema that fails the meta-schema, has a
    $ref to nothing or a loop of them, or nests too deeply is checked as a plugin
    method's schemas are: the plugin is skipped whole, its report says why."""
    plugin = _system_with(which, UNUSABLE_SYSTEM_SCHEMAS[name])
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    [report] = loaded.reports
    assert report.error and report.error.startswith(f"system coin-duel: its {which}() ")
    assert "coin-duel" not in loaded.systems and "schemas.x" not in loaded.methods


@pytest.mark.parametrize("which", ["combatant_schema", "request_schema"])
def test_a_plugin_system_schema_that_is_no_json_object_is_said_so(
        which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema is a JSON object: a system whose schema method returns a list is skipped
    with a report that says so, in our words."""
    plugin = _system_with(which, [{"type": "object"}])
    [report] = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE).reports
    assert report.error == f"system coin-duel: its {which}() must return a JSON object, " \
        "not a list"


async def test_rpc_discover_stays_a_valid_schema_with_a_broken_plugin_system(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """rpc.discover embeds each system's request schema in x-params-schema: with a
    plugin system whose request schema does not compile, the plugin is skipped (listed
    with its error in companion.info) and every x-params-schema is still a schema."""
    plugin = _system_with("request_schema", UNUSABLE_SYSTEM_SCHEMAS["does-not-compile"])
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    reports = {p["name"]: p for p in (await rpc.ok("companion.info"))["plugins"]}
    # where, so the plugin's author can find it (docs/PLUGINS.md "Schemas")
    assert reports["schema"]["error"] == (
        "system coin-duel: its request_schema() does not compile (the meta-schema "
        "refuses the value at /properties/x/type)")
    for method in (await rpc.ok("rpc.discover"))["methods"]:
        Draft202012Validator.check_schema(method["x-params-schema"])
    assert "coin-duel" not in {s["id"] for s in await rpc.ok("systems.list")}


def test_the_built_in_systems_schemas_are_not_checked_again_at_load(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Start-up stays fast: the built-in systems' schemas are checked by their tests
    (System.schemas_tested), not each time the daemon loads them."""
    def refuse(schema: Any, check: bool = True) -> None:
        raise AssertionError("checked again")

    monkeypatch.setattr(plugins_module, "compile_schema", refuse)
    loaded = load_plugins(installed_plugins(), CORE)
    assert [r.error for r in loaded.reports] == [None, None, None]


# -- a plugin method's own error codes (MethodError) --------------------------------------
#: ``data`` the params name, as the params themselves cannot carry it
def _nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for _ in range(depth):
        data = {"d": data}
    return data


_DATA: dict[str, Any] = {"big": {"big": "x" * 5000}, "not-json": {"value": object()},
                         # too deep for the standard library's encoder on every Python
                         # (3.13's writes 5000 levels)
                         "deep": _nested(100_000),
                         # {"x":"yy..."} of 4096 and 4097 bytes as JSON
                         "4096-bytes": {"x": "y" * 4088}, "4097-bytes": {"x": "y" * 4089},
                         "whole-float": {"share": 2.0, "left": (0, 1)},
                         # a Mapping, as MethodError's data is typed, but no dict
                         "read-only": MappingProxyType({"left": 3})}


async def _raises(ctx: Context, params: dict[str, Any]) -> Any:
    """Raise the MethodError the params describe."""
    data = params.get("data")
    if isinstance(data, str):
        data = _DATA[data]
    raise MethodError(params["code"], params.get("message", "Out of coins"), data)


RAISES = Plugin(name="raises", version="1", methods=(
    MethodSpec("raises.error", {"type": "object"}, _raises, "raises a MethodError",
               errors=(4777, 4001, -32000, -32768, -32769, 1)),
    MethodSpec("raises.undeclared", {"type": "object"}, _raises, "declares nothing"),
))


async def test_a_declared_method_error_is_answered_with_its_code_message_and_data(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md "Plugins": a handler raising MethodError(code, message, data) with a code
    its MethodSpec declares is answered with that code, message and data."""
    rpc = await rpc_with(_entry_point_to(RAISES, monkeypatch))
    error = await rpc.error("raises.error", {"code": 4777, "data": {"left": [0, None]}})
    assert error == {"code": 4777, "message": "Out of coins", "data": {"left": [0, None]}}
    # without data, as every error the daemon answers: an empty object
    assert await rpc.error("raises.error", {"code": 4777}) == {
        "code": 4777, "message": "Out of coins", "data": {}}
    # answered as a copy read back from its JSON text: a whole float is written as
    # every answer writes one (2, not 2.0), a tuple as a list
    whole = await rpc.error("raises.error", {"code": 4777, "data": "whole-float"})
    assert whole["data"] == {"share": 2, "left": [0, 1]}
    assert type(whole["data"]["share"]) is int
    # any Mapping, as MethodError's data is typed, not only a dict
    assert (await rpc.error("raises.error", {"code": 4777, "data": "read-only"}))[
        "data"] == {"left": 3}
    # a message of 500 characters and data of 4096 bytes are within bounds
    assert await rpc.error("raises.error", {"code": 4777, "message": "m" * 500,
                                            "data": "4096-bytes"}) == {
        "code": 4777, "message": "m" * 500, "data": _DATA["4096-bytes"]}
    # just below the codes JSON-RPC reserves (-32768 to -32000): the plugin's to use
    assert (await rpc.error("raises.error", {"code": -32769}))["code"] == -32769


@pytest.mark.parametrize(("method", "params"), [
    ("raises.error", {"code": 4778}),  # not declared
    ("raises.undeclared", {"code": 4777}),  # declared by another method only
    ("raises.error", {"code": 4001}),  # declared, but a core code
    ("raises.error", {"code": -32000}),  # declared, but reserved by JSON-RPC
    ("raises.error", {"code": -32768}),  # (the lowest code it reserves)
    ("raises.error", {"code": True}),  # no code, though it equals the declared 1
    ("raises.error", {"code": 4777, "data": "big"}),
    ("raises.error", {"code": 4777, "data": "not-json"}),
    ("raises.error", {"code": 4777, "data": "deep"}),  # too deep to encode
    ("raises.error", {"code": 4777, "data": ["a", "list"]}),
    ("raises.error", {"code": 4777, "message": ""}),
    ("raises.error", {"code": 4777, "message": "secret " * 100}),
    ("raises.error", {"code": 4777, "message": "m" * 501}),
    ("raises.error", {"code": 4777, "data": "4097-bytes"}),
])
async def test_a_method_error_out_of_bounds_is_minus_32603_with_a_logged_error_id(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        method: str, params: dict[str, Any]) -> None:
    """A MethodError whose code the method does not declare (or is the daemon's own or
    JSON-RPC's), whose message is not short text or whose data is not a JSON object of
    at most 4096 bytes: -32603 with an error id, the reason and traceback logged under
    it, nothing of the plugin's text sent."""
    rpc = await rpc_with(_entry_point_to(RAISES, monkeypatch))
    with caplog.at_level(logging.ERROR, logger="mindscape.rpc"):
        error = await rpc.error(method, params)
    assert error["code"] == -32603 and error["message"] == "Internal error"
    assert set(error["data"]) == {"error_id"}
    [record] = [r for r in caplog.records if r.name == "mindscape.rpc"]
    assert record.fields == {"error_id": error["data"]["error_id"],  # type: ignore[attr-defined]
                             "method": method}
    assert record.exc_info is not None


@pytest.mark.parametrize(("data", "why"), [
    ("deep", "the data is not a JSON object"),
    ("not-json", "the data is not a JSON object"),
    ("4097-bytes", "the data is over 4096 bytes as JSON")])
async def test_the_log_says_why_a_method_errors_data_was_not_answered(
        data: str, why: str, rpc_with: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Data nested too deep to write is not JSON either: said so, as other data that
    is not (a RecursionError of the encoder's own is no fault of the daemon's)."""
    rpc = await rpc_with(_entry_point_to(RAISES, monkeypatch))
    with caplog.at_level(logging.ERROR, logger="mindscape.rpc"):
        error = await rpc.error("raises.error", {"code": 4777, "data": data})
    assert error["code"] == -32603
    [record] = [r for r in caplog.records if r.name == "mindscape.rpc"]
    assert record.getMessage() == f"plugin method error 4777 not answered: {why}"


class RaisingCoin(CoinDuel):
    id = "raising-coin"

    def odds(self, request: Mapping[str, Any]) -> JSON:
        raise MethodError(4777, "not from a method of the plugin's own")


async def test_a_method_error_from_a_plugin_system_is_minus_32603(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """exchange.odds declares no plugin code: a plugin system raising MethodError in it
    is a fault, -32603."""
    rpc = await rpc_with(_entry_point_to(
        Plugin(name="raising", version="1", systems=(RaisingCoin(),)), monkeypatch))
    error = await rpc.error("exchange.odds", {**COIN_REQUEST, "system": "raising-coin"})
    assert error["code"] == -32603 and set(error["data"]) == {"error_id"}


# -- load order and clashes ---------------------------------------------------------------
def _distribution(tmp_path: Path, name: str, entry_points: dict[str, str]
                  ) -> list[EntryPoint]:
    """The entry points of an installed distribution ``name`` (a .dist-info in
    ``tmp_path``), each knowing its distribution as importlib.metadata gives them."""
    info = tmp_path / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n" + "".join(f"{n} = {t}\n" for n, t in entry_points.items()))
    return list(PathDistribution(info).entry_points)


TWIN = Plugin(name="twin", version="1", systems=(CoinDuel(),))


def test_third_party_plugins_load_sorted_by_distribution_then_entry_point_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which of two plugins with the same system id loads does not depend on the order
    the environment lists them: built-ins first, then by distribution name (as pip
    compares them), then by entry point name; the first keeps the id."""
    monkeypatch.setattr(sample_plugin, "TWIN", TWIN, raising=False)
    zeta = _distribution(tmp_path, "Zeta_Coins", {"a-coin": COIN.value})
    alpha = _distribution(tmp_path, "alpha-coins", {"z-twin": "tests.sample_plugin:TWIN"})
    for entry_points in ([*zeta, *alpha, *installed_plugins()],
                         [*installed_plugins(), *alpha, *zeta]):
        loaded = load_plugins(entry_points, CORE)
        assert [r.entry_point for r in loaded.reports][3:] == [
            "tests.sample_plugin:TWIN", COIN.value]
        assert [r.builtin for r in loaded.reports] == [True] * 3 + [False] * 2
        assert loaded.system_plugin["coin-duel"] == "twin"
        assert loaded.reports[4].error == "system coin-duel is already provided by twin"
    same_dist = _distribution(tmp_path, "both", {"b": COIN.value,
                                                 "a": "tests.sample_plugin:TWIN"})
    assert load_plugins(same_dist, CORE).system_plugin["coin-duel"] == "twin"


def test_a_dot_in_a_distribution_name_sorts_as_a_dash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: distribution names are compared as pip compares them, runs of
    `-`, `_` and `.` not counting: `coins.a` is `coins-a`, which loads before `coins-z`
    (a dot compared as itself sorts after every dash)."""
    monkeypatch.setattr(sample_plugin, "TWIN", TWIN, raising=False)
    entry_points = [*_distribution(tmp_path, "coins-z", {"a-coin": COIN.value}),
                    *_distribution(tmp_path, "coins.a", {"z-twin": "tests.sample_plugin:TWIN"})]
    loaded = load_plugins(entry_points, CORE)
    assert loaded.system_plugin["coin-duel"] == "twin"
    assert [r.entry_point for r in loaded.reports] == ["tests.sample_plugin:TWIN", COIN.value]


def test_a_second_plugin_with_the_same_name_is_skipped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample_plugin, "SAME_NAME", Plugin(name="sample", version="2"),
                        raising=False)
    loaded = load_plugins([ep("z-same", "tests.sample_plugin:SAME_NAME"), SAMPLE], CORE)
    reports = {r.entry_point: r for r in loaded.reports}
    assert reports[SAMPLE.value].error is None
    assert reports["tests.sample_plugin:SAME_NAME"].error == \
        "its Plugin name sample is already taken by a plugin loaded before it"


def test_a_method_namespace_belongs_to_the_first_plugin_that_uses_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another plugin's method in a namespace already used is a clash: that plugin is
    skipped whole (its other methods too)."""
    later = Plugin(name="later", version="1", methods=(
        MethodSpec("later.own", {"type": "object"}, _noop, "x"),
        MethodSpec("sample.more", {"type": "object"}, _noop, "x")))
    monkeypatch.setattr(sample_plugin, "LATER", later, raising=False)
    loaded = load_plugins([ep("z-later", "tests.sample_plugin:LATER"), SAMPLE], CORE)
    [_, report] = loaded.reports
    assert report.error == ("method sample.more: the namespace sample belongs to the "
                            "plugin sample, loaded before it")
    assert "later.own" not in loaded.methods and "sample.more" not in loaded.methods
    assert loaded.namespaces == {"sample": "sample"}


@pytest.mark.parametrize("name", ["x.y\n", "x.y\r", "\nx.y", "X.y", "xY.z", "x", "x.Y",
                                  "x.1", "x._y"])
def test_a_method_name_is_namespace_verb_exactly(name: str) -> None:
    with pytest.raises(RegistryError, match=r"namespace\.verb"):
        MethodRegistry([MethodSpec(name, {"type": "object"}, _noop, "x")])


@pytest.mark.parametrize("name", ["coin.house_rule", "x-2.y", "x.yZ9-_", "x.y.z"])
def test_a_method_name_of_the_documented_form_is_registered(name: str) -> None:
    """docs/PLUGINS.md: a lower-case namespace (``[a-z][a-z0-9-]*``), a dot and a verb
    ``[a-z][a-zA-Z0-9_.-]*``."""
    assert MethodRegistry([MethodSpec(name, {"type": "object"}, _noop, "x")]).names() == [name]


async def test_a_vtt_sheet_for_a_plugins_system_is_refused_at_its_adapter(rpc: Rpc) -> None:
    """No adapter builds combatants for a plugin's system (docs/PLUGINS.md): a sheet given
    as {adapter, data} is refused at the adapter the caller chose, not somewhere inside
    the VTT data, where nothing is wrong."""
    sheet = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "roll20" /
                        "adnd2e-revised-ulcen.handmade.json").read_text())
    error = await rpc.error("exchange.resolve", {
        "system": "sample-duel",
        "attacker": {"adapter": "roll20.adnd2e-revised", "data": sheet},
        "defender": duelist("bo"), "attack": {"mode": "jab"}})
    assert error["code"] == -32602
    [problem] = error["data"]["errors"]
    assert problem["path"] == "/attacker/adapter"
    assert "not sample-duel" in problem["message"]


@pytest.mark.parametrize("method", ["unruly.own-base", "unruly.too-deep"])
async def test_a_fault_leaves_the_rest_of_a_batch_and_the_websocket_answered(
        unruly: tuple[TestClient[Any, Any], str], method: str) -> None:
    """A plugin's own BaseException, or a result nested deeper than JSON can be written,
    is -32603 for that call only: the batch's other answers come (they were lost with
    the connection, or an HTTP 500), and the WebSocket stays open."""
    client, token = unruly
    response = await client.post("/rpc", json=[
        {"jsonrpc": "2.0", "method": "companion.info", "id": 1},
        {"jsonrpc": "2.0", "method": method, "id": 2}],
        headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    info, fault = await response.json()
    assert "result" in info and fault["error"]["code"] == -32603
    assert "secret" not in json.dumps(fault)
    ws = await client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{token}"))
    await ws.send_json({"jsonrpc": "2.0", "method": method, "id": 3})
    assert (await asyncio.wait_for(ws.receive_json(), 5))["error"]["code"] == -32603
    await ws.send_json({"jsonrpc": "2.0", "method": "companion.info", "id": 4})
    assert "result" in await asyncio.wait_for(ws.receive_json(), 5)
    await ws.close()


@pytest.mark.parametrize("keyboard", [False, True])
def test_a_base_exception_at_import_is_reported_under_serve(keyboard: bool) -> None:
    """A plugin module raising a BaseException of its own at import, or
    KeyboardInterrupt while the daemon holds SIGINT (as `mindscape serve` does before
    plugins load), is a skipped plugin: the start stopped with a traceback or exit 130.
    (In a child process: a KeyboardInterrupt let out would stop pytest itself.)"""
    code = ("import signal; signal.signal(signal.SIGINT, lambda *_: None)\n"
            "from importlib.metadata import EntryPoint\n"
            "from companion.methods import CORE\n"
            "from companion.plugins import load_plugins\n"
            "[report] = load_plugins([EntryPoint('aborts', 'tests.sample_plugin."
            "aborts_at_import:PLUGIN', 'mindscape.plugins')], CORE).reports\n"
            "print(report.error)")
    env = {**os.environ, **({"KEYBOARD": "1"} if keyboard else {})}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], env=env, timeout=60,
                          check=False)
    raised = "KeyboardInterrupt" if keyboard else "PluginAbort"
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == f"could not be loaded ({raised}); see the daemon log"


@pytest.mark.parametrize("target", ["tests.sample_plugin.aborts_at_import:PLUGIN",
                                    "tests.sample_plugin:interrupted_factory"],
                         ids=["import", "factory"])
def test_a_keyboard_interrupt_at_import_stops_a_load_python_would_stop(target: str) -> None:
    """Without a SIGINT handler of the caller's, a KeyboardInterrupt (while the plugin
    is imported or its factory runs) may be the user's Ctrl+C: it goes on, and stops
    the load as Python stops on it."""
    # Python's own handler, as at a terminal (a shell's background job inherits SIGINT
    # ignored, and then a KeyboardInterrupt cannot be the user's)
    code = ("import signal\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from importlib.metadata import EntryPoint\n"
            "from companion.methods import CORE\n"
            "from companion.plugins import load_plugins\n"
            f"load_plugins([EntryPoint('aborts', {target!r}, 'mindscape.plugins')], CORE)\n"
            "print('loaded')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, "KEYBOARD": "1"}, timeout=60, check=False)
    assert done.returncode != 0 and "loaded" not in done.stdout
    assert done.stderr.rstrip().endswith("KeyboardInterrupt")


async def test_rpc_discover_keeps_a_plugin_schemas_own_id(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A system's request schema with its own $id and absolute $refs to it: the daemon
    checks calls with it as it is, and rpc.discover's schema (which replaced the $id)
    resolved those references nowhere."""
    base = "https://plugin.example/coin-request"
    request = {**REQUEST, "$id": base, "$defs": {"call": {"enum": ["heads", "tails"]}},
               "properties": {**REQUEST["properties"], "attack": {
                   "type": "object", "properties": {"call": {"$ref": base + "#/$defs/call"}}}}}

    class OwnId(CoinDuel):
        id = "coin-own-id"

        def request_schema(self) -> JSON:
            return request

    monkeypatch.setattr(sample_plugin, "MADE", Plugin(name="own-id", version="1",
                                                      systems=(OwnId(),)), raising=False)
    rpc = await rpc_with(ep("own-id", "tests.sample_plugin:MADE"))
    call = {"system": "coin-own-id", "attacker": {"id": "a", "name": "A"},
            "defender": {"id": "b", "name": "B"}, "attack": {"call": "heads"}}
    assert "result" in await rpc.call("exchange.odds", call)
    [odds] = [m for m in (await rpc.ok("rpc.discover"))["methods"]
              if m["name"] == "exchange.odds"]
    assert Validator(odds["x-params-schema"], registry=NO_RETRIEVAL).is_valid(call)


def test_a_skipped_plugin_claims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: 'A skipped plugin claims nothing: the next plugin may take the
    names it wanted': its Plugin name, its system ids, its method namespaces."""
    def coin_plugin(*extra: MethodSpec) -> Plugin:
        return Plugin(name="coins", version="1", systems=(CoinDuel(),), methods=(
            MethodSpec("coins.flip", {"type": "object"}, _noop, "x"), *extra))

    monkeypatch.setattr(sample_plugin, "GREEDY", coin_plugin(
        MethodSpec("encounter.steal", {"type": "object"}, _noop, "x")), raising=False)
    monkeypatch.setattr(sample_plugin, "MODEST", coin_plugin(), raising=False)
    # (the skipped one is listed under its entry point's name: the same name here)
    loaded = load_plugins([ep("modest", "tests.sample_plugin:MODEST"),
                           ep("coins", "tests.sample_plugin:GREEDY")], CORE)
    assert [(r.entry_point, r.error is None) for r in loaded.reports] == [
        ("tests.sample_plugin:GREEDY", False), ("tests.sample_plugin:MODEST", True)]
    assert loaded.system_plugin == {"coin-duel": "coins"}
    assert loaded.namespaces == {"coins": "coins"}
    assert "coins.flip" in loaded.methods and "encounter.steal" not in loaded.methods


def test_a_plugin_is_reported_with_its_distributions_version(tmp_path: Path) -> None:
    """docs/PLUGINS.md: a system alone is a plugin named as its entry point, its version
    the distribution's; a skipped one is listed with the version of the distribution it
    came from (null for an entry point without one)."""
    entry_points = [*_distribution(tmp_path, "coin-pack", {
        "alone": "tests.sample_plugin.coin_duel:SYSTEM", "gone": "tests.sample_plugin:NOPE"}),
        ep("gone-too", "tests.sample_plugin:NOPE")]
    reports = [(r.name, r.version, r.systems, r.error is None)
               for r in load_plugins(entry_points, CORE).reports]
    assert reports == [("gone-too", None, (), False), ("alone", "1.0", ("coin-duel",), True),
                       ("gone", "1.0", (), False)]


class ListedDuel(sample_plugin.SampleDuel):
    """The sample duel whose encounter view lists its combatants (``[{id, ...}]``) and
    that takes a combatant again (``encounter.refresh``)."""

    id = "listed-duel"

    def encounter_view(self, state: Mapping[str, Any]) -> JSON:
        return {**super().encounter_view(state),
                "combatants": [state["combatants"][cid] for cid in state["order"]]}

    def encounter_replace(self, state: Mapping[str, Any], combatant_id: str,
                          combatant: Mapping[str, Any]) -> JSON:
        full = self.combatant({**combatant, "id": combatant_id}, "/combatant")
        return {**state, "combatants": {**state["combatants"], combatant_id: full}}


async def test_a_plugin_encounter_view_may_list_its_combatants(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: ``combatants`` is "the current combatants by id (``{id:
    combatant}``, or a list of combatants with their ``id``): the daemon reads the ids
    from it". A listed combatant declares and is a target; one not listed is 4004; a
    refresh finds the fields of the combatant it names, not of another listed one."""
    plugin = Plugin(name="listed", version="1.0", systems=(ListedDuel(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    eid = (await rpc.ok("encounter.create", {"system": "listed-duel"}))["id"]
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    declared = await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann",
                                                  "choice": {"attack": {
                                                      "mode": "jab", "target": "bob"}}})
    assert declared["waiting_for"] == ["bob"]
    error = await rpc.error("encounter.declare", {"id": eid, "combatant_id": "bob",
                                                  "choice": {"attack": {
                                                      "mode": "jab", "target": "cat"}}})
    assert error["code"] == 4004 and error["data"] == {"id": "cat"}
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "bob",
                                                   "combatant": duelist("bob", focus=1)})
    assert refreshed["changed"] == ["focus"] and refreshed["revision"] == 4


class TrustingDuel(sample_plugin.SampleDuel):
    """The sample duel whose ``encounter_new`` keeps its options unchecked."""

    id = "trusting-duel"

    def encounter_new(self, options: Mapping[str, Any] | None) -> JSON:
        return {"round": 1, "options": dict(options or {}), "combatants": {},
                "order": [], "pending": {}}


async def test_encounter_create_checks_the_options_of_a_system_that_does_not(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: "an unknown id or a value outside a rule's choices raises
    InvalidInput at /options/<id>"; encounter.create checks the options itself, so an
    encounter never runs under house rules its system does not have."""
    plugin = Plugin(name="trusting", version="1.0", systems=(TrustingDuel(),))
    rpc = await rpc_with(_entry_point_to(plugin, monkeypatch))
    error = await rpc.error("encounter.create", {"system": "trusting-duel",
                                                 "options": {"H-NOPE": True}})
    assert error["code"] == -32602
    assert [e["path"] for e in error["data"]["errors"]] == ["/options/H-NOPE"]
    assert await rpc.ok("encounter.list") == []


# -- found by a mutation audit ------------------------------------------------------------
def test_entry_points_of_one_name_load_in_the_order_of_their_targets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two entry points of one name and no distribution: the target decides which loads
    first (and keeps the system id), not the order the environment lists them in."""
    monkeypatch.setattr(sample_plugin, "TWIN", TWIN, raising=False)
    both = [ep("coins", "tests.sample_plugin:TWIN"), ep("coins", COIN.value)]
    for entry_points in (both, both[::-1]):
        loaded = load_plugins(entry_points, CORE)
        assert [r.entry_point for r in loaded.reports] == [COIN.value,
                                                           "tests.sample_plugin:TWIN"]
        assert loaded.system_plugin["coin-duel"] == "coin-duel"


def _raising_factory(raised: BaseException) -> Any:
    def factory() -> Plugin:
        raise raised
    return factory


@pytest.mark.parametrize(("name", "error"), [
    ("name_none", "its Plugin name must be a non-empty string"),
    ("name_not_text", "its Plugin name must be a non-empty string"),
    ("name_blank", "its Plugin name must be a non-empty string"),
    ("version_not_text", "its Plugin version must be a non-empty string"),
    ("version_blank", "its Plugin version must be a non-empty string"),
    ("systems_not_a_tuple", "its Plugin systems must be a tuple (got a SampleDuel)"),
    ("system_without_source", "system without-source has no source (a string)"),
    ("system_source_none", "system no-source has no source (a string)"),
    ("system_name_none", "system nameless-duel has no name (a string)")])
def test_a_plugin_member_of_the_wrong_type_is_named_in_its_report(name: str, error: str
                                                                  ) -> None:
    """docs/PLUGINS.md: a skipped plugin is listed with "the reason in our words": which
    member is wrong and what it must be."""
    [report] = load_plugins([WRONGLY_BUILT[name]], CORE).reports
    assert report.error == error


@pytest.mark.parametrize("raised", [RuntimeError("secret"),
                                    sample_plugin.OwnBaseException("secret")],
                         ids=["error", "own-base-exception"])
def test_a_factory_that_raises_is_said_to_have_failed(
        raised: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md "When a plugin is skipped": a factory that fails, with an error or
    a BaseException of its own, is a skipped plugin whose report says its factory
    failed and what it raised, in our words."""
    monkeypatch.setattr(sample_plugin, "RAISING_FACTORY", _raising_factory(raised),
                        raising=False)
    [report] = load_plugins([ep("raising", "tests.sample_plugin:RAISING_FACTORY")],
                            CORE).reports
    assert report.error == (f"its factory failed ({type(raised).__name__}); see the daemon "
                            "log")


def test_a_plugins_systems_and_methods_may_be_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Plugin whose systems and methods are lists, not tuples, loads as the tuples
    would."""
    plugin = Plugin(name="listed", version="1", systems=[CoinDuel()],  # type: ignore[arg-type]
                    methods=[MethodSpec("listed.x", {"type": "object"}, _noop, "x")])  # type: ignore[arg-type]
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    assert [(r.systems, r.methods, r.error) for r in loaded.reports] == [
        (("coin-duel",), ("listed.x",), None)]
    assert "coin-duel" in loaded.systems and "listed.x" in loaded.methods


@pytest.mark.parametrize("system_id", [None, "", 42], ids=["none", "empty", "not-text"])
def test_a_system_whose_id_is_missing_or_empty_is_said_to_have_none(
        system_id: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoId(CoinDuel):
        id = system_id

    plugin = Plugin(name="no-id", version="1", systems=(NoId(),))
    [report] = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE).reports
    assert report.error == "has a system without an id"


@pytest.mark.parametrize(("system_id", "shown"), [
    ("Coin-Duel", '"Coin-Duel"'),
    ("d" * 101, '"' + "d" * 40 + '"')], ids=["upper-case", "too-long"])
def test_a_system_id_that_is_no_kebab_case_is_quoted_by_its_first_40_characters(
        system_id: str, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: a system id is kebab-case (lower-case letters and digits) of at
    most 100 characters; the report quotes at most 40 of a wrong one, as a JSON string."""
    class WrongId(CoinDuel):
        id = system_id

    plugin = Plugin(name="wrong-id", version="1", systems=(WrongId(),))
    [report] = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE).reports
    assert report.error == (f"system id {shown} must be kebab-case (lower-case letters and "
                            'digits joined by "-"), at most 100 characters')


@pytest.mark.parametrize("raised", [RuntimeError("secret"),
                                    sample_plugin.OwnBaseException("secret")],
                         ids=["error", "own-base-exception"])
def test_a_plugin_system_whose_schema_method_raises_is_skipped_saying_which(
        raised: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    """A system's schema method that raises (an error or a BaseException of its own) is
    the plugin's fault: skipped, the report naming the method and what it raised."""
    def fails() -> Any:
        raise raised

    plugin = _system_with("request_schema", None)
    object.__setattr__(plugin.systems[0], "request_schema", fails)
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    [report] = loaded.reports
    assert report.error == (f"system coin-duel: its request_schema() failed "
                            f"({type(raised).__name__}); see the daemon log")
    assert "coin-duel" not in loaded.systems


def test_a_keyboard_interrupt_from_a_schema_method_stops_a_load_python_would_stop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With Python's own Ctrl+C handler in place, a KeyboardInterrupt while a system's
    schemas are read may be the user's: it goes on, as at import."""
    def interrupted() -> Any:
        raise KeyboardInterrupt

    plugin = _system_with("request_schema", None)
    object.__setattr__(plugin.systems[0], "request_schema", interrupted)
    entry_point = _entry_point_to(plugin, monkeypatch)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            load_plugins([entry_point], CORE)
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(("name", "namespace"), [
    ("rpc.mine", "rpc"), ("encounter.steal.more", "encounter")])
def test_a_method_in_a_core_namespace_is_refused_whatever_follows_it(
        name: str, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: `rpc` is a core namespace, and a method's namespace is what comes
    before its first dot."""
    plugin = Plugin(name="greedy", version="1", methods=(
        MethodSpec(name, {"type": "object"}, _noop, "x"),))
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    [report] = loaded.reports
    assert report.error == f"method {name} collides with the core namespace {namespace}"
    assert name not in loaded.methods


def test_a_namespace_is_what_comes_before_the_first_dot(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``sample.deep.more`` is in the sample plugin's namespace ``sample``."""
    later = Plugin(name="later", version="1", methods=(
        MethodSpec("sample.deep.more", {"type": "object"}, _noop, "x"),))
    monkeypatch.setattr(sample_plugin, "LATER", later, raising=False)
    loaded = load_plugins([ep("z-later", "tests.sample_plugin:LATER"), SAMPLE], CORE)
    assert loaded.reports[1].error == ("method sample.deep.more: the namespace sample "
                                       "belongs to the plugin sample, loaded before it")


class RoundsRaise(CoinDuel):
    """A system whose round logic is a property that fails."""

    id = "rounds-raise"

    @property
    def rounds(self) -> Any:  # type: ignore[override]
        raise RuntimeError("secret detail from a property")


def test_a_plugin_that_fails_after_its_methods_were_checked_adds_none_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin skipped by a check that runs after its methods were compiled (whether
    its system runs encounters) leaves the method table as it was."""
    plugin = Plugin(name="late", version="1", systems=(RoundsRaise(),), methods=(
        MethodSpec("late.x", {"type": "object"}, _noop, "x"),))
    loaded = load_plugins([_entry_point_to(plugin, monkeypatch)], CORE)
    [report] = loaded.reports
    assert report.error == "could not be checked (RuntimeError); see the daemon log"
    assert "late.x" not in loaded.methods and set(loaded.methods.names()) == set(CORE.names())


#: docs/API.md "Plugins": the hooks a system without round logic defines to run encounters
ENCOUNTER_HOOKS = ("encounter_new", "encounter_add", "encounter_view",
                   "encounter_waiting_for", "encounter_declare", "encounter_resolve")


@pytest.mark.parametrize("missing", ENCOUNTER_HOOKS)
def test_a_system_that_lacks_any_one_encounter_hook_does_not_run_encounters(
        missing: str) -> None:
    """docs/API.md "Plugins": without round logic a system runs encounters only when it
    defines every encounter hook itself."""
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        return {}

    hooks = {name: hook for name in ENCOUNTER_HOOKS}
    assert runs_encounters(type("AllHooks", (sample_plugin.NoEncounters,), hooks)())
    del hooks[missing]
    assert not runs_encounters(type("AllButOne", (sample_plugin.NoEncounters,), hooks)())


def test_a_loaded_plugin_is_reported_by_its_own_name_and_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: a loaded one has "its Plugin name and version"; a skipped one
    (one that could not be checked too) the entry point's name and the distribution's
    version; an entry point of the built-in distribution is reported built in, loaded
    or not."""
    monkeypatch.setattr(sample_plugin, "TWIN", TWIN, raising=False)
    raising = Plugin(name="raises", version="7", systems=(sample_plugin.IdRaises(),))
    monkeypatch.setattr(sample_plugin, "ID_RAISES", raising, raising=False)
    entry_points = [
        *_distribution(tmp_path, "coin-pack", {"named-otherwise": "tests.sample_plugin:TWIN",
                                               "unchecked": "tests.sample_plugin:ID_RAISES"}),
        *_distribution(tmp_path, plugins_module.BUILTIN_DISTRIBUTION,
                       {"gone": "tests.sample_plugin:NOPE"})]
    reports = [(r.name, r.version, r.builtin, r.error is None)
               for r in load_plugins(entry_points, CORE).reports]
    assert reports == [("gone", "1.0", True, False), ("twin", "1", False, True),
                       ("unchecked", "1.0", False, False)]


async def test_status_page_lists_each_plugin_with_its_version_and_methods_or_why_skipped(
        rpc_with: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md: "The status page (`GET /`) shows the same list" as companion.info:
    a loaded plugin with its version and every method, a skipped one (no distribution,
    so no version) with the reason."""
    two = Plugin(name="two", version="2.1", methods=(
        MethodSpec("two.a", {"type": "object"}, _noop, "x"),
        MethodSpec("two.b", {"type": "object"}, _noop, "x")))
    rpc = await rpc_with(_entry_point_to(two, monkeypatch), BROKEN["missing"])
    page = await (await rpc.client.get("/")).text()
    assert "<li><b>two</b> 2.1 — methods two.a, two.b</li>" in page
    assert ("<li><b>missing</b>  — <span class=err>skipped: could not be loaded "
            "(ModuleNotFoundError); see the daemon log</span></li>") in page
