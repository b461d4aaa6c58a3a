"""Every request the VTT clients send in their own tests is one the real companion takes.

The Foundry module's and the Roll20 Mod script's unit tests talk to fakes, which accept
whatever they are sent. With MINDSCAPE_CLIENT_REQUESTS naming a file, those fakes record
every request (vtt-module/test-support/record.mjs); scripts/test.sh runs the JS suites so
before pytest. Here each recorded call is checked against the params schema the companion
itself validates with (rpc.discover's x-params-schema, with each system's request schema):
a member the companion does not know, a wrong type or nesting, a member a system does not
take, or a method it does not have fails here, naming the test file that sent it."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from .conftest import Rpc

RECORDED = os.environ.get("MINDSCAPE_CLIENT_REQUESTS")
#: scripts/test.sh: the recording must be there (as the browser tests must run)
REQUIRED = os.environ.get("MINDSCAPE_REQUIRE_E2E") == "1"

#: Test files that send what the companion refuses on purpose, and which methods.
ON_PURPOSE: dict[tuple[str, str], str] = {
    ("dice.test.mjs", "exchange.resolve"):
        "physical dice prompts driven by calls made by hand, with no combatants",
    ("dice.test.mjs", "combatants.rest"):
        "physical dice prompts driven by calls made by hand, with no combatants",
}


def recorded_calls(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(client, test file, call) for every call recorded, batches taken apart."""
    calls = []
    # One JSON text a line; split at "\n" alone: str.splitlines() also splits at U+0085,
    # U+2028 and the like, which JSON.stringify leaves as they are inside a sheet's value.
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        entry = json.loads(line)
        body = entry["body"]
        for call in body if isinstance(body, list) else [body]:
            calls.append((entry["client"], entry["file"], call))
    return calls


def problems_of(document: dict[str, Any],
                calls: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Each call the companion's schemas refuse, but for those ON_PURPOSE, in words."""
    validators = {m["name"]: jsonschema.Draft202012Validator(m["x-params-schema"])
                  for m in document["methods"]}
    found = []
    for client, file, call in calls:
        method = call.get("method")
        if (file, method) in ON_PURPOSE:
            continue
        if call.get("jsonrpc") != "2.0" or not isinstance(method, str):
            found.append(f"{client} {file}: not a JSON-RPC 2.0 call: {json.dumps(call)[:200]}")
            continue
        if method not in validators:
            found.append(f"{client} {file}: no method {method}")
            continue
        error = jsonschema.exceptions.best_match(
            validators[method].iter_errors(call.get("params", {})))
        if error is not None:
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            found.append(f"{client} {file}: {method} {where}: {error.message[:300]}")
    return found


async def test_every_request_the_vtt_clients_send_is_one_the_companion_takes(
        rpc: Rpc) -> None:
    if not RECORDED or not Path(RECORDED).is_file():
        if REQUIRED:
            pytest.fail("MINDSCAPE_CLIENT_REQUESTS names no recording: run the JS suites "
                        "first with it set, as scripts/test.sh does")
        pytest.skip("no recording of the VTT clients' requests (scripts/test.sh makes one)")
    calls = recorded_calls(Path(RECORDED))
    by_client = Counter(client for client, _file, _call in calls)
    # the recording is real: both clients, many calls, most methods
    assert by_client["foundry"] > 1000 and by_client["roll20"] > 300, by_client
    assert len({call.get("method") for _c, _f, call in calls}) >= 15
    document = await rpc.ok("rpc.discover")
    problems = problems_of(document, calls)
    assert problems == [], f"{len(problems)} refused: " + "; ".join(sorted(set(problems))[:30])


async def test_the_check_refuses_what_the_companion_refuses(rpc: Rpc) -> None:
    """The check itself: a member the companion does not know, a member of another system
    and a method it does not have are each reported; a good call is not."""
    document = await rpc.ok("rpc.discover")
    good = {"jsonrpc": "2.0", "id": 1, "method": "exchange.round_end_choices",
            "params": {"system": "revised-2e", "combatants": [{"id": "a", "psp_max": 10}]}}
    unknown = {**good, "params": {**good["params"], "extra": 1}}
    other_system = {**good, "method": "combatants.rest",
                    "params": {"system": "power-pool", "combatants": [], "hours": 8}}
    missing = {**good, "method": "exchange.nothing"}
    calls = [("foundry", "a.test.mjs", good), ("foundry", "b.test.mjs", unknown),
             ("roll20", "c.test.mjs", other_system), ("roll20", "d.test.mjs", missing),
             ("foundry", "dice.test.mjs", {**unknown, "method": "exchange.resolve"})]
    problems = problems_of(document, calls)
    assert [p.split(":")[0] for p in problems] == [
        "foundry b.test.mjs", "roll20 c.test.mjs", "roll20 d.test.mjs"]
