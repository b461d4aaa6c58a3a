"""Plugins through real ``importlib.metadata.EntryPoint`` objects, the method table's
start-up checks, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import logging
import threading
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

import companion.rpc as rpc_module
import tests.sample_plugin as sample_plugin
from companion.app import create_app
from companion.methods import CORE
from companion.plugins import Plugin, load_plugins
from companion.registry import MethodRegistry, MethodSpec, RegistryError
from companion.services import Context
from companion.settings import Limits, Settings
from tests.sample_plugin import GOOD_SCHEMAS, WRONG_SCHEMAS, with_result_schema, with_schema

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
    "duplicate-system": ep("duplicate-system", "tests.sample_plugin:SYSTEM"),
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
    assert "not a System" in str(reports["not-a-plugin"].error) or \
        "not an engine.System" in str(reports["not-a-plugin"].error)
    assert "does not compile" in str(reports["bad-schema"].error)
    assert "core namespace" in str(reports["colliding"].error)
    assert "namespace.verb" in str(reports["flat"].error)
    assert "already provided" in str(reports["duplicate-system"].error)
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


def test_registry_refuses_a_schema_that_does_not_compile() -> None:
    with pytest.raises(RegistryError):
        MethodRegistry([MethodSpec("x.y", {"type": "object", "required": 3}, _noop, "x")])


def test_registry_refuses_a_handler_that_is_not_async() -> None:
    def sync(ctx: Context, params: dict[str, Any]) -> None:
        return None

    with pytest.raises(RegistryError):
        MethodRegistry([MethodSpec("x.y", {"type": "object"}, sync, "x")])  # type: ignore[arg-type]


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
    or version that is not text, a system without a name or source, a property that
    raises), a module that calls exit() at import: each is one skipped plugin with an
    error, and companion.info, rpc.discover, systems.list and the status page work."""
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
    assert "secret" not in json.dumps(info)
    assert {s["id"] for s in systems} == {"revised-2e", "combat-strength", "power-pool",
                                          "sample-duel"}
    assert {m["name"] for m in discover["methods"]} == set(CORE.names()) | {"sample.echo"}
    assert page == 200


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
async def unruly(aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[TestClient[Any, Any], str]:
    monkeypatch.setattr(rpc_module, "PLUGIN_METHOD_TIMEOUT", 0.3, raising=False)
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
    ("unruly.cancel", asyncio.CancelledError), ("unruly.own-timeout", TimeoutError)])
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


async def test_a_plugin_method_that_never_answers_times_out(
        unruly: tuple[TestClient[Any, Any], str]) -> None:
    """API.md "Plugins": a plugin method gets PLUGIN_METHOD_TIMEOUT seconds, then the
    call is -32603 saying so (here 0.3 s instead of 30)."""
    client, token = unruly
    answer = await asyncio.wait_for(_post(client, token, "unruly.hang"), 5)
    error = answer["error"]
    assert error["code"] == -32603 and "did not answer within 0.3 s" in error["message"]
    assert set(error["data"]) == {"error_id"}


# -- a plugin's metadata cannot break shared endpoints -----------------------------------
async def test_a_plugin_error_code_of_its_own_is_documented_generically(rpc_with: Any
                                                                       ) -> None:
    """API.md "Plugins": a method lists ``errors=(...)``, its own codes too;
    rpc.discover names such a code with a generic message instead of failing."""
    rpc = await rpc_with(ep("own", "tests.sample_plugin:OWN_ERROR_CODE"))
    document = await rpc.ok("rpc.discover")
    method = next(m for m in document["methods"] if m["name"] == "owncode.ping")
    assert {"code": 4100, "message": "Error defined by the plugin"} in method["errors"]


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


@pytest.fixture
def rpc_with(aiohttp_client: Any, tmp_path: Path) -> Any:
    async def make(*entry_points: EntryPoint) -> Rpc:
        settings = Settings(home=tmp_path, plugins=with_plugins(*entry_points),
                            log_stream=io.StringIO())
        client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
        return Rpc(client, settings.token_path.read_text().strip())

    return make
