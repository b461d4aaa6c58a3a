"""Plugins through real ``importlib.metadata.EntryPoint`` objects, the method table's
start-up checks, and a graceful shutdown."""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from companion.app import create_app
from companion.methods import CORE
from companion.plugins import load_plugins
from companion.registry import MethodRegistry, MethodSpec, RegistryError
from companion.services import Context
from companion.settings import Settings

from .conftest import GROUP, SAMPLE, with_plugins


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
