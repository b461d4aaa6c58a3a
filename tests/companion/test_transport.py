"""POST /rpc as JSON-RPC 2.0 requires (API.md "Transport", "Errors", "Limits")."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import NoReturn

import pytest

import companion.rpc as rpc_module
from companion.app import create_app
from companion.settings import Limits, Settings

from .combatants import FENKA, ULCEN
from .conftest import ClientFactory, Rpc


async def test_single_call_answers_with_its_id(rpc: Rpc) -> None:
    answer = await rpc.raw({"jsonrpc": "2.0", "method": "companion.info", "id": "abc"})
    assert answer["jsonrpc"] == "2.0" and answer["id"] == "abc"
    assert answer["result"]["name"] == "mindscape"


async def test_notification_gets_204_and_an_empty_body(rpc: Rpc) -> None:
    """API.md: notifications (HTTP 204, empty body)."""
    response = await rpc.post({"jsonrpc": "2.0", "method": "companion.info"})
    assert response.status == 204
    assert await response.read() == b""


async def test_notification_of_an_unknown_method_is_not_answered(rpc: Rpc) -> None:
    response = await rpc.post({"jsonrpc": "2.0", "method": "no.such"})
    assert response.status == 204


async def test_a_notification_that_fails_is_not_answered_either(rpc: Rpc) -> None:
    """JSON-RPC 2.0: a notification is never answered, also when it names no method, has
    positional params, invalid params or faults; in a batch only the call is answered."""
    failing = [{"jsonrpc": "2.0", "method": "no.such"},
               {"jsonrpc": "2.0", "method": "dice.roll", "params": ["d6"]},
               {"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": 5}},
               {"jsonrpc": "2.0", "method": "faulty.boom", "params": {}}]
    for notification in failing:
        response = await rpc.post(notification)
        assert (response.status, await response.read()) == (204, b""), notification
    answer = await rpc.raw([*failing, {"jsonrpc": "2.0", "method": "systems.list", "id": 9}])
    assert [a["id"] for a in answer] == [9] and "result" in answer[0]


async def test_batch_answers_each_element_also_a_malformed_one(rpc: Rpc) -> None:
    """API.md: batches (one response per element ... also when one element is malformed)."""
    answer = await rpc.raw([
        {"jsonrpc": "2.0", "method": "systems.list", "id": 1},
        {"jsonrpc": "1.0", "method": "systems.list", "id": 2},
        42,
        {"jsonrpc": "2.0", "method": "companion.info"},
        {"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "d6", "seed": 1}, "id": 3},
    ])
    assert isinstance(answer, list) and len(answer) == 4
    ok_one, bad_version, bad_element, dice = answer
    assert ok_one["id"] == 1 and isinstance(ok_one["result"], list)
    assert bad_version["error"]["code"] == -32600 and bad_version["id"] == 2
    assert bad_element["error"]["code"] == -32600 and bad_element["id"] is None
    assert dice["id"] == 3 and 1 <= dice["result"]["total"] <= 6


async def test_batch_of_notifications_gets_204(rpc: Rpc) -> None:
    response = await rpc.post([{"jsonrpc": "2.0", "method": "companion.info"}] * 3)
    assert response.status == 204


async def test_empty_batch_is_one_invalid_request(rpc: Rpc) -> None:
    """JSON-RPC 2.0: an empty array is a single Invalid Request, not an empty array."""
    answer = await rpc.raw([])
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == -32600 and answer["id"] is None


async def test_batch_over_100_calls_is_refused_naming_the_limit(rpc: Rpc) -> None:
    """API.md "Limits": 100 calls per batch; exceeding a limit is -32602 naming it."""
    answer = await rpc.raw([{"jsonrpc": "2.0", "method": "companion.info", "id": i}
                            for i in range(101)])
    assert answer["error"]["code"] == -32602 and answer["id"] is None
    assert answer["error"]["data"]["errors"] == [
        {"path": "", "message": "a batch holds at most 100 calls, this one has 101"}]
    assert answer["error"]["data"]["limit"] == "max_batch"
    assert answer["error"]["data"]["max"] == 100
    full = await rpc.raw([{"jsonrpc": "2.0", "method": "companion.info", "id": i}
                          for i in range(100)])
    assert len(full) == 100


async def test_the_batch_limit_is_the_one_the_settings_give(
        aiohttp_client: ClientFactory, tmp_path: Path) -> None:
    """Limits.max_batch set lower is the limit a batch is held to, and the one
    companion.info states."""
    settings = Settings(home=tmp_path, limits=Limits(max_batch=2), log_stream=io.StringIO())
    rpc = Rpc(await aiohttp_client(create_app(settings)),
              settings.token_path.read_text().strip())
    calls = [{"jsonrpc": "2.0", "method": "companion.info", "id": i} for i in range(3)]
    answer = await rpc.raw(calls)
    assert answer["error"]["data"]["errors"] == [
        {"path": "", "message": "a batch holds at most 2 calls, this one has 3"}]
    assert (answer["error"]["data"]["limit"], answer["error"]["data"]["max"]) == (
        "max_batch", 2)
    answers = await rpc.raw(calls[:2])
    assert [a["result"]["limits"]["max_batch"] for a in answers] == [2, 2]


@pytest.mark.parametrize("body", [
    b"{", b"[1,", b"\xff\xfe", b"[" * 100_000,
    # an unpaired surrogate anywhere: in the id, the method, a params member or its name,
    # or in one element of a batch
    b'{"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "5"}, "id": "\\ud800"}',
    b'{"jsonrpc": "2.0", "method": "\\ud800", "id": 1}',
    b'{"jsonrpc": "2.0", "method": "encounter.get", "params": {"id": "\\udc00"}, "id": 1}',
    b'{"jsonrpc": "2.0", "method": "dice.roll", "params": {"expr": "5", "x\\ud800": 1}, '
    b'"id": 1}',
    b'[{"jsonrpc": "2.0", "method": "companion.info", "id": 1}, '
    b'{"jsonrpc": "2.0", "method": "companion.info", "id": "\\ud800"}]'])
async def test_parse_error(rpc: Rpc, body: bytes) -> None:
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    answer = await response.json()
    assert answer["error"]["code"] == -32700 and answer["id"] is None


async def test_a_parse_error_has_no_data_member(rpc: Rpc) -> None:
    """docs/API.md "Errors": -32700's data is "—": none at all, not null."""
    response = await rpc.client.post("/rpc", data=b"{", headers=rpc.auth)
    assert (await response.json())["error"] == {"code": -32700, "message": "Parse error"}


@pytest.mark.parametrize(("request_body", "detail"), [
    ({"method": "companion.info", "id": 1}, 'jsonrpc must be "2.0"'),
    ({"jsonrpc": "2.0", "id": 1}, "method must be a string"),
    ({"jsonrpc": "2.0", "method": 7, "id": 1}, "method must be a string"),
    ({"jsonrpc": "2.0", "method": "companion.info", "params": "x", "id": 1},
     "params must be an object or an array"),
    ({"jsonrpc": "2.0", "method": "companion.info", "id": True},
     "id must be a string, a number or null"),
    ({"jsonrpc": "2.0", "method": "companion.info", "id": 1, "extra": 1},
     'unknown members ["extra"]'),
    # named in order, whatever order the client wrote them in
    ({"jsonrpc": "2.0", "method": "companion.info", "id": 1,
      **{name: 1 for name in ("zeta", "eta", "alpha", "mu", "delta", "kappa")}},
     'unknown members ["alpha", "delta", "eta", "kappa", "mu", "zeta"]'),
    ("companion.info", "a request must be a JSON object"),
])
async def test_invalid_request(rpc: Rpc, request_body: object, detail: str) -> None:
    """JSON-RPC 2.0: -32600; its data says what is wrong with the request."""
    answer = await rpc.raw(request_body)
    assert answer["error"] == {"code": -32600, "message": "Invalid request",
                               "data": {"detail": detail}}


@pytest.mark.parametrize("request_id", [True, {"n": 1}, [1]])
async def test_an_id_json_rpc_does_not_allow_is_answered_with_a_null_id(
        rpc: Rpc, request_id: object) -> None:
    """JSON-RPC 2.0: when the id cannot be read, the response's id is Null."""
    answer = await rpc.raw({"jsonrpc": "2.0", "method": "systems.list", "id": request_id})
    assert answer["id"] is None and answer["error"]["code"] == -32600


@pytest.mark.parametrize("request_id", ["abc", "", 0, -3, 1.5, None])
async def test_every_id_json_rpc_allows_is_answered_with_that_id(
        rpc: Rpc, request_id: object) -> None:
    """JSON-RPC 2.0: an id is a String, Number or Null (fractions and null discouraged,
    not forbidden); the response carries the same value (also when the result is text
    serialised once, companion.info's)."""
    answer = await rpc.raw({"jsonrpc": "2.0", "method": "systems.list", "id": request_id})
    assert answer["id"] == request_id and isinstance(answer["result"], list)
    info = await rpc.raw({"jsonrpc": "2.0", "method": "companion.info", "id": request_id})
    assert info["id"] == request_id and info["result"]["name"] == "mindscape"
    refused = await rpc.raw({"jsonrpc": "1.0", "method": "systems.list", "id": request_id})
    assert refused["id"] == request_id and refused["error"]["code"] == -32600


async def test_unknown_method(rpc: Rpc) -> None:
    error = await rpc.error("no.such")
    assert error["code"] == -32601 and error["data"] == {"method": "no.such"}


async def test_invalid_params_name_every_path(rpc: Rpc) -> None:
    """API.md: -32602 data {errors: [{path, message}]} with JSON Pointer paths."""
    error = await rpc.error("dice.roll", {"expr": 5, "seed": "x", "extra": 1})
    assert error["code"] == -32602
    paths = {e["path"] for e in error["data"]["errors"]}
    assert {"/expr", "/seed", ""} <= paths
    assert all(isinstance(e["message"], str) for e in error["data"]["errors"])


@pytest.mark.parametrize("params", [None, {}])
@pytest.mark.parametrize(("method", "member"), [("dice.roll", "expr"), ("encounter.get", "id"),
                                                ("systems.describe", "system")])
async def test_a_call_without_its_required_params_is_invalid_params(
        rpc: Rpc, params: dict[str, object] | None, method: str, member: str) -> None:
    """No params at all, like an empty object, is checked against the method's schema."""
    error = await rpc.error(method, params)
    assert error == {"code": -32602, "message": "Invalid params", "data": {"errors": [
        {"path": "", "message": f'"{member}" is a required property'}]}}


@pytest.mark.parametrize(("system", "sheet"), [
    ("revised-2e", {"kind": "nonpsionic", "int": 8, "wis": 9}),
    ("combat-strength", {"attack_strength": 10, "defense_strength": 10}),
    ("power-pool", {"hit_dice": 2, "die": 6}),
])
async def test_a_combatant_with_neither_id_nor_name_is_told_to_give_one(
        rpc: Rpc, system: str, sheet: dict[str, object]) -> None:
    """docs/COMBATANTS.md: a combatant gives ``id``, ``name`` or both (each made from the
    other); with neither, the problem says which to give, not jsonschema's "is not valid
    under any of the given schemas"."""
    eid = (await rpc.ok("encounter.create", {"system": system}))["id"]
    error = await rpc.error("encounter.add", {"id": eid, "combatant": sheet})
    assert error["data"] == {"errors": [
        {"path": "/combatant", "message": 'give "id" or "name": at least one is required'}]}


@pytest.mark.parametrize(("method", "params"), [("dice.roll", ["d6"]),
                                                ("companion.info", [])])
async def test_positional_params_are_invalid_params(rpc: Rpc, method: str,
                                                    params: list[object]) -> None:
    """docs/API.md: 'Positional params are -32602', an empty array too."""
    error = await rpc.error(method, params)
    assert error["code"] == -32602


@pytest.mark.parametrize("depth", [900, 1000, 1020])
async def test_params_nested_nearly_as_deep_as_the_parser_allows_are_invalid_params(
        rpc: Rpc, depth: int) -> None:
    """Deep but valid JSON: checking it must not end in -32603 (a fault)."""
    body = ('{"jsonrpc":"2.0","method":"dice.roll","params":{"expr":"1d6","seed":'
            + "[" * depth + "]" * depth + '},"id":7}')
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    answer = await response.json()
    assert (answer["id"], answer["error"]["code"]) == (7, -32602)


async def test_a_combatant_nested_nearly_as_deep_as_the_parser_allows_is_invalid_params(
        rpc: Rpc) -> None:
    """A combatant is checked against its system's schema by the method itself, after
    the params schema passed it: deep nesting there is -32602 too, not a fault."""
    attacker = json.dumps(ULCEN)[:-1] + ', "conditions": ' + "[" * 990 + "]" * 990 + "}"
    body = ('{"jsonrpc":"2.0","method":"exchange.resolve","params":{"system":"revised-2e",'
            f'"attacker":{attacker},"defender":{json.dumps(FENKA)},'
            '"attack":{"mode":"mind-thrust"},"seed":1},"id":7}')
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    answer = await response.json()
    assert answer["error"] == {"code": -32602, "message": "Invalid params", "data": {
        "errors": [{"path": "", "message": "the params are nested too deeply to check"}]}}


async def test_internal_error_carries_an_error_id_and_no_text(
        rpc: Rpc, caplog: pytest.LogCaptureFixture) -> None:
    """API.md: -32603 'an error id only; the traceback stays in the daemon's log'."""
    with caplog.at_level(logging.ERROR):
        error = await rpc.error("faulty.boom", {})
    assert error["code"] == -32603
    assert set(error["data"]) == {"error_id"}
    assert "secret" not in json.dumps(error)
    logged = [r for r in caplog.records if getattr(r, "fields", {}).get("error_id")
              == error["data"]["error_id"]]
    assert logged and logged[0].exc_info is not None


async def test_a_fault_in_mapping_an_error_is_answered_without_its_text(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonrpcserver copies exception text into its own answers: one that comes back
    from it (here the mapping of exceptions fails itself) is scrubbed to an error id."""
    def broken(*_: object) -> NoReturn:
        raise RuntimeError("secret")

    monkeypatch.setattr(rpc_module, "to_rpc_error", broken)
    error = await rpc.error("faulty.boom", {})
    assert error["code"] == -32603 and set(error["data"]) == {"error_id"}
    assert "secret" not in json.dumps(error)


async def test_a_result_json_cannot_hold_is_an_internal_error(rpc: Rpc) -> None:
    error = await rpc.error("faulty.unserialisable", {})
    assert error["code"] == -32603 and set(error["data"]) == {"error_id"}


async def test_faults_inside_a_batch_stay_inside_their_element(rpc: Rpc) -> None:
    answer = await rpc.raw([
        {"jsonrpc": "2.0", "method": "faulty.boom", "params": {}, "id": 1},
        {"jsonrpc": "2.0", "method": "companion.info", "id": 2},
    ])
    assert answer[0]["error"]["code"] == -32603 and "result" in answer[1]


@pytest.mark.parametrize("body", [b'{"jsonrpc":"2.0","method":"companion.info","id":Infinity}',
                                  b'{"jsonrpc":"2.0","method":"dice.roll","id":1,'
                                  b'"params":{"expr":"d6","seed":NaN}}',
                                  # a whole number no double holds (a JavaScript client
                                  # reads Infinity): it was echoed back as the id
                                  b'{"jsonrpc":"2.0","method":"companion.info","id":1'
                                  + b"0" * 400 + b"}"])
async def test_nan_and_infinity_are_not_json(rpc: Rpc, body: bytes) -> None:
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    text = await response.text()
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text)["error"]["code"] == -32700


async def test_a_store_that_cannot_write_answers_5003_and_changes_nothing(rpc: Rpc) -> None:
    """docs/API.md: 5003 'Store unavailable: nothing was written' {error_id, retry}; the
    write is not acknowledged and the encounter stays where it was."""
    from companion.keys import STORE
    from companion.store import SQLiteStore

    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    store = rpc.client.app[STORE]
    assert isinstance(store, SQLiteStore) and store._db is not None
    # Tests run as root, where chmod does not stop writes: SQLite's own read-only switch
    # gives the same SQLITE_READONLY a read-only home would.
    await store._db.execute("PRAGMA query_only = ON")
    try:
        error = await rpc.error("encounter.add", {
            "id": created["id"], "combatant": {"id": "ann", "name": "Ann"}})
    finally:
        await store._db.execute("PRAGMA query_only = OFF")
    assert error["code"] == 5003 and error["data"]["retry"] is True
    assert set(error["data"]) == {"error_id", "retry"}
    assert (await rpc.ok("encounter.get", {"id": created["id"]}))["revision"] == 0


async def test_a_store_that_cannot_write_is_logged_under_its_error_id_without_a_traceback(
        rpc: Rpc, caplog: pytest.LogCaptureFixture) -> None:
    """The 5003 answer's error id (16 hexadecimal digits, as docs/API.md shows one) names
    one log line with the method: an expected failure of the disk, no fault of ours, so
    no traceback."""
    from companion.keys import STORE
    from companion.store import SQLiteStore

    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    store = rpc.client.app[STORE]
    assert isinstance(store, SQLiteStore) and store._db is not None
    await store._db.execute("PRAGMA query_only = ON")
    try:
        with caplog.at_level(logging.ERROR, logger="mindscape.rpc"):
            error = await rpc.error("encounter.add", {
                "id": created["id"], "combatant": {"id": "ann", "name": "Ann"}})
    finally:
        await store._db.execute("PRAGMA query_only = OFF")
    error_id = error["data"]["error_id"]
    assert len(error_id) == 16 and set(error_id) <= set("0123456789abcdef")
    [record] = [r for r in caplog.records if r.name == "mindscape.rpc"]
    assert record.fields == {"error_id": error_id,  # type: ignore[attr-defined]
                             "method": "encounter.add"}
    assert not record.exc_info and record.getMessage().startswith("store unavailable: ")
