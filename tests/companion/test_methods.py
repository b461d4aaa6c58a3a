"""The stateless methods of API.md's table: discovery, info, systems, adapters,
exchanges, odds and dice."""

from __future__ import annotations

import copy
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import companion.app as app_module
from companion.app import create_app
from companion.methods import CORE
from companion.methods.exchange import leave_out_unlikely
from companion.schemas import ADAPTER_REF
from companion.settings import Settings
from engine.dice import MAX_DICE_PER_POOL, MAX_PENETRATION_FOLLOW_UPS, MAX_SIDES

from .combatants import EXCHANGE, FENKA, ULCEN, pool_sheet
from .conftest import ClientFactory, Rpc

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
ULCEN_ROLL20 = json.loads((FIXTURES / "roll20" / "adnd2e-revised-ulcen.handmade.json")
                          .read_text(encoding="utf-8"))
BUILTIN = {"revised-2e", "combat-strength", "power-pool"}


async def test_rpc_discover_is_a_valid_openrpc_1_3_document(rpc: Rpc) -> None:
    """API.md: rpc.discover is 'OpenRPC 1.3 document of every method, with the params
    schemas actually used for validation'."""
    document = await rpc.ok("rpc.discover")
    structure = json.loads((HERE / "openrpc-1.3-structure.schema.json").read_text())
    jsonschema.Draft202012Validator(structure).validate(document)
    names = [m["name"] for m in document["methods"]]
    assert len(names) == len(set(names))
    # both ways of giving the token (a WebSocket sends no Authorization header)
    assert "Bearer" in document["info"]["description"]
    assert "token.<token>" in document["info"]["description"]
    assert document["info"]["title"] == "Mindscape companion"
    info = await rpc.ok("companion.info")
    plugin_methods = {m for p in info["plugins"] for m in p["methods"]}
    assert plugin_methods <= set(names)
    assert {"rpc.discover", "companion.info", "systems.list", "systems.describe",
            "systems.house_rules", "adapters.list", "adapters.import", "exchange.resolve",
            "exchange.odds",
            "encounter.create", "encounter.add", "encounter.declare", "encounter.resolve",
            "encounter.get", "encounter.log", "encounter.undo", "encounter.list",
            "encounter.delete", "encounter.watch", "dice.roll", "sample.echo"} <= set(names)
    for method in document["methods"]:
        for descriptor in [*method["params"], method["result"]]:
            jsonschema.Draft202012Validator.check_schema(descriptor["schema"])
        assert method["paramStructure"] == "by-name"


async def test_openrpc_params_schema_is_the_one_that_validates(rpc: Rpc) -> None:
    document = await rpc.ok("rpc.discover")
    roll = next(m for m in document["methods"] if m["name"] == "dice.roll")
    schema = roll["x-params-schema"]
    bad = {"expr": 3}
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
    assert (await rpc.error("dice.roll", bad))["code"] == -32602
    assert {p["name"]: p["required"] for p in roll["params"]} == {"expr": True, "seed": False}


async def test_companion_info(rpc: Rpc) -> None:
    info = await rpc.ok("companion.info")
    assert info["name"] == "mindscape" and info["api_version"] == "1"
    # the installed package's version (pyproject.toml), as the status page and the
    # OpenRPC document give it
    assert info["version"] == importlib.metadata.version("mindscape")
    assert info["version"] == (await rpc.ok("rpc.discover"))["info"]["version"]
    assert BUILTIN | {"sample-duel"} <= set(info["systems"])
    assert "roll20.adnd2e-revised" in info["adapters"]
    plugins = {p["name"]: p for p in info["plugins"]}
    assert plugins["sample"]["methods"] == ["sample.echo"] and plugins["sample"]["error"] is None
    assert plugins["revised-2e"]["builtin"] is True


async def test_companion_info_of_a_daemon_not_installed_gives_an_unknown_version(
        aiohttp_client: ClientFactory, settings: Settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a source tree with no installed distribution, the daemon still answers,
    with a version that says it is unknown."""
    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(app_module, "version", not_installed)
    client = await aiohttp_client(create_app(settings))
    rpc = Rpc(client, settings.token_path.read_text().strip())
    assert (await rpc.ok("companion.info"))["version"] == "0.0.0+unknown"


async def test_systems_list_names_the_three_systems_and_plugins(rpc: Rpc) -> None:
    systems = {s["id"]: s for s in await rpc.ok("systems.list")}
    assert BUILTIN | {"sample-duel"} <= set(systems)
    for entry in systems.values():
        assert entry["name"] and entry["source"]
    assert systems["sample-duel"]["plugin"] == "sample"
    # API.md systems.list [{id, name, source, ...}]: each as systems.describe gives it
    for system in BUILTIN:
        described = await rpc.ok("systems.describe", {"system": system})
        listed = systems[system]
        assert (listed["name"], listed["source"]) == (described["name"], described["source"])


async def test_systems_describe(rpc: Rpc) -> None:
    for system in BUILTIN:
        described = await rpc.ok("systems.describe", {"system": system})
        assert described["id"] == system
        jsonschema.Draft202012Validator.check_schema(described["combatant_schema"])
        for rule in described["house_rules"]:
            assert {"id", "text", "default"} <= set(rule)


async def test_systems_house_rules_are_those_of_systems_describe(rpc: Rpc) -> None:
    """The Roll20 bridge relays answers through the chat: systems.house_rules gives the
    house rules alone, the same list systems.describe holds."""
    for system in BUILTIN:
        described = await rpc.ok("systems.describe", {"system": system})
        lean = await rpc.ok("systems.house_rules", {"system": system})
        assert lean == {"system": system, "house_rules": described["house_rules"]}
        rules = lean["house_rules"]
        assert rules and all(r["default"] in r["choices"] for r in rules)
    error = await rpc.error("systems.house_rules", {"system": "gurps"})
    assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/system"
    error = await rpc.error("systems.house_rules", {"system": "revised-2e", "all": True})
    assert error["code"] == -32602


async def test_unknown_system_is_invalid_params_at_system(rpc: Rpc) -> None:
    error = await rpc.error("systems.describe", {"system": "gurps"})
    assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/system"
    # Values in messages are JSON, as the caller writes them.
    assert error["data"]["errors"][0]["message"].startswith(
        'unknown system "gurps"; known: ["combat-strength", ')


@pytest.mark.parametrize(("method", "params", "path", "said"), [
    ("companion.info", {"x": 1}, "", "unexpected member"),
    ("systems.describe", {"system": ""}, "/system", "should be non-empty"),
    ("systems.describe", {"system": "x" * 101}, "/system", "is too long"),
    ("encounter.get", {"id": "x" * 101}, "/id", "is too long"),
    ("dice.roll", {"expr": "1d6", "seed": 2**63}, "/seed", "greater than the maximum"),
    ("encounter.add", {"id": "e", "combatant": {}, "revision": -1}, "/revision",
     "less than the minimum of 0"),
    ("encounter.refresh", {"id": "e", "combatant_id": "c" * 201, "combatant": {}},
     "/combatant_id", "is too long"),
    ("exchange.end_round", {"system": "revised-2e", "combatants": []}, "/combatants",
     "should be non-empty"),
    ("combatants.rest", {"system": "revised-2e", "combatants": []}, "/combatants",
     "should be non-empty"),
    ("exchange.odds", {"system": "revised-2e", "assume_known": ["/defenders/01"]},
     "/assume_known/0", "does not match"),
    # a pattern's "$" is the end of the string (ECMA-262), not before a final newline
    ("exchange.odds", {"system": "revised-2e", "assume_known": ["/defender\n"]},
     "/assume_known/0", "does not match")])
async def test_params_outside_the_shared_schemas_are_invalid_at_their_place(
        rpc: Rpc, method: str, params: dict[str, Any], path: str, said: str) -> None:
    """companion/schemas.py: no params where none are taken; a system or encounter id of
    1 to 100 characters, a combatant id of at most 200, a revision from 0, a seed within
    64 bits, someone whose round ends or who rests, an index in a pointer of
    assume_known written as JSON Pointer writes it (nothing after it, a final newline
    neither); checked before the method runs."""
    error = await rpc.error(method, params)
    assert error["code"] == -32602
    assert any(e["path"] == path and said in e["message"] for e in error["data"]["errors"])


async def test_openrpc_results_name_the_members_always_present(rpc: Rpc) -> None:
    """schemas.answer: a result schema lists the members every answer has."""
    document = await rpc.ok("rpc.discover")
    results = {m["name"]: m["result"]["schema"] for m in document["methods"]}
    assert results["encounter.create"]["required"] == ["id", "revision", "system", "name"]
    assert results["encounter.list"]["items"]["required"] == [
        "id", "system", "name", "revision", "created_at", "updated_at"]


async def test_adapters_list_and_import(rpc: Rpc) -> None:
    listed = {a["id"]: a for a in await rpc.ok("adapters.list")}
    assert {"id", "vtt", "system", "description"} <= set(listed["roll20.adnd2e-revised"])
    imported = await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                 "data": ULCEN_ROLL20, "system": "revised-2e"})
    assert imported["combatant"]["name"] == "Ulcen of Tyr"
    assert isinstance(imported["warnings"], list)


async def test_adapters_import_without_a_system_takes_the_adapter_s_default(
        rpc: Rpc) -> None:
    """API.md: adapters.import {adapter, data, system?}: an AD&D 2E sheet assumes
    revised-2e; an adapter that assumes nothing needs the system named."""
    listed = {a["id"]: a for a in await rpc.ok("adapters.list")}
    assert listed["roll20.adnd2e-revised"]["default_system"] == "revised-2e"
    assert listed["foundry.dnd5e"]["default_system"] is None
    imported = await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                 "data": ULCEN_ROLL20})
    named = await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                              "data": ULCEN_ROLL20, "system": "revised-2e"})
    assert imported == named and imported["system"] == "revised-2e"


async def test_adapter_errors_name_the_field(rpc: Rpc) -> None:
    error = await rpc.error("adapters.import", {"adapter": "nope", "data": {}})
    assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/adapter"
    assert error["data"]["errors"][0]["message"].startswith('unknown adapter "nope"; known: ["')
    # an adapter that assumes no system: the caller is told to name one
    error = await rpc.error("adapters.import", {"adapter": "foundry.dnd5e", "data": {}})
    assert error["code"] == -32602 and error["data"]["errors"] == [{
        "path": "/system",
        "message": "adapter foundry.dnd5e serves any system and assumes none: name one"}]


async def test_an_unknown_adapter_lists_the_known_ones_sorted(rpc: Rpc) -> None:
    """The known adapters are listed in order of their ids, not in the registry's order
    (which puts foundry.dnd5e first)."""
    error = await rpc.error("adapters.import", {"adapter": "nope", "data": {}})
    known = sorted(await rpc.ok("adapters.list"), key=lambda a: a["id"])
    assert error["data"]["errors"] == [{
        "path": "/adapter", "message": 'unknown adapter "nope"; known: ['
                                       + ", ".join(f'"{a["id"]}"' for a in known) + "]"}]


async def test_an_adapter_named_by_no_string_is_invalid_params_at_its_place(
        rpc: Rpc) -> None:
    """An ``{adapter, data}`` combatant whose adapter is a list or an object is -32602
    naming it, not a -32603 fault from looking it up."""
    for adapter in (["foundry.dnd5e"], {"id": "foundry.dnd5e"}):
        error = await rpc.error("exchange.resolve", {
            "system": "revised-2e", "attacker": {"adapter": adapter, "data": {}},
            "defender": FENKA, "attack": {"mode": "mind-thrust"}})
        assert error["code"] == -32602, adapter
        assert [e["path"] for e in error["data"]["errors"]] == ["/attacker/adapter"]
        assert error["data"]["errors"][0]["message"].startswith("unknown adapter ")


@pytest.mark.parametrize(("system", "attacker", "defender", "mode"), [
    ("revised-2e", {"kind": "psionicist", "psp_max": 20, "level": 3, "int": 12, "wis": 12,
                    "attacks": ["mind-thrust"]}, {}, "mind-thrust"),
    ("combat-strength", {"attack_strength": 10}, {"defense_strength": 10}, "mind-thrust"),
    ("power-pool", {"hit_dice": 2, "die": 8, "attacks": ["mental-stab"]},
     {"hit_dice": 2, "die": 8}, "mental-stab"),
])
async def test_an_empty_name_is_refused_at_it_in_every_system(
        rpc: Rpc, system: str, attacker: dict[str, Any], defender: dict[str, Any],
        mode: str) -> None:
    """docs/COMBATANTS.md: the name is "shown in summaries and chat cards; when absent,
    the id". An empty one would name no one there: combat-strength took it and told
    " attacks Bob with Mind Thrust; ... spends 4 attack strength"; every system now
    refuses it at its place, as revised-2e and power-pool did."""
    error = await rpc.error("exchange.resolve", {
        "system": system, "attacker": {"id": "al", "name": "", **attacker},
        "defender": {"id": "bob", "name": "Bob", **defender}, "attack": {"mode": mode},
        "seed": 1})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{"path": "/attacker/name",
                                        "message": '"" should be non-empty'}]


async def test_exchange_resolve_the_api_example(rpc: Rpc) -> None:
    """API.md "exchange.resolve": the example request and the result's members."""
    result = await rpc.ok("exchange.resolve", EXCHANGE)
    assert result["system"] == "revised-2e" and result["updates"] == []
    for member in ("outcome", "attacker", "defender", "rolls", "events", "summary", "hit",
                   "critical", "needed", "roll", "psp_spent", "damage", "mind_opened",
                   "save"):
        assert member in result
    assert result["rolls"][0] == {"purpose": "attack", "sides": 20, "value": 20,
                                  "by": "ulcen", "follows": None}
    # API.md: warnings are for {adapter, data} combatants; these are combatant objects
    assert "warnings" not in result


async def test_exchange_with_too_few_dice_is_4002(rpc: Rpc) -> None:
    params = {**EXCHANGE, "dice": {"attack": [20]}}
    error = await rpc.error("exchange.resolve", params)
    assert error["code"] == 4002
    assert set(error["data"]) == {"purpose", "sides", "needed"}


async def test_exchange_the_rules_forbid_is_4001(rpc: Rpc) -> None:
    """API.md 4001: 'not enough PSPs, multiplier above level ...'."""
    params = copy.deepcopy(EXCHANGE)
    params["attacker"]["psp"] = 0
    error = await rpc.error("exchange.resolve", params)
    assert error["code"] == 4001 and set(error["data"]) == {"rule", "detail"}


async def test_a_refusal_writes_the_modes_known_as_json(rpc: Rpc) -> None:
    """STYLE.md: values in messages are JSON. power-pool's mode-not-known names the
    modes the combatant knows as a JSON array (["blank-mind"]), not Python's list."""
    duel = {"system": "power-pool",
            "attacker": {"id": "a", "hit_dice": 3, "die": 6,
                         "attacks": ["mental-stab", "psionic-wave"]},
            "defender": {"id": "b", "hit_dice": 2, "die": 6, "defenses": ["blank-mind"]},
            "attack": {"mode": "synaptic-overload"}, "seed": 1}
    error = await rpc.error("exchange.resolve", duel)
    assert (error["code"], error["data"]["rule"]) == (4001, "mode-not-known")
    assert error["data"]["detail"].endswith('(knows ["mental-stab", "psionic-wave"])')
    duel["attack"] = {"mode": "mental-stab"}
    error = await rpc.error("exchange.resolve", {**duel, "defense": {"mode": "pinnacle-of-will"}})
    assert (error["code"], error["data"]["rule"]) == (4001, "mode-not-known")
    assert error["data"]["detail"].endswith('(knows ["blank-mind"])')


async def test_a_pattern_refused_is_named_as_json(rpc: Rpc) -> None:
    """A value refused by a schema's pattern: the value and the pattern as JSON strings,
    in double quotes, not Python's 'x'."""
    error = await rpc.error("exchange.odds", {"system": "revised-2e",
                                              "assume_known": ["/defenders/01"]})
    [problem] = [e for e in error["data"]["errors"] if e["path"] == "/assume_known/0"]
    assert problem["message"].startswith('"/defenders/01" does not match "')
    assert "'" not in problem["message"]


async def test_die_value_outside_its_faces_is_32602(rpc: Rpc) -> None:
    params = {**EXCHANGE, "dice": {"attack": [21]}}
    error = await rpc.error("exchange.resolve", params)
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["path"].startswith("/dice/attack")


async def test_exchange_with_an_adapter_combatant_carries_updates(rpc: Rpc) -> None:
    """API.md: '{"adapter": ID, "data": RAW}' ... 'the result also carries updates'."""
    params = {**EXCHANGE, "attacker": {"adapter": "roll20.adnd2e-revised",
                                       "data": ULCEN_ROLL20}}
    params["attack"] = {"mode": "mind-thrust", "multiplier": 1, "range": "short"}
    params["dice"] = {"attack": [20], "damage": [4, 4, 3, 1], "save": [7]}
    result = await rpc.ok("exchange.resolve", params)
    assert result["updates"], "the attacker paid PSPs: the sheet must be written back"
    update = result["updates"][0]
    assert update["character_id"] == ULCEN_ROLL20.get("id", update["character_id"])
    assert any(w.startswith("/attacker: ") for w in result["warnings"])
    # the odds of the same exchange change nothing: nothing is to be written ([])
    odds = await rpc.ok("exchange.odds", {k: v for k, v in params.items() if k != "dice"})
    assert odds["updates"] == [] and odds["warnings"] == result["warnings"]


async def test_every_combatant_member_takes_a_sheet(rpc: Rpc) -> None:
    """API.md: every combatant member (attacker, defender, defenders, allies,
    controller, controllers, puppets, combatants) may be {adapter, data}: the daemon
    imports each (an unknown adapter is refused at its place), items of a list by index."""
    ix = {"id": "ix", "hit_dice": 2, "die": 6}
    duel = {"system": "power-pool",
            "attacker": {"id": "a", "hit_dice": 3, "die": 6, "attacks": ["mental-stab"]},
            "defender": {"id": "b", "hit_dice": 2, "die": 6},
            "attack": {"mode": "mental-stab"}, "seed": 1}
    sheet = {"adapter": "no.such-adapter", "data": {}}
    for member in ("attacker", "defender", "controller"):
        error = await rpc.error("exchange.resolve", {**duel, member: sheet})
        assert [e["path"] for e in error["data"]["errors"]] == [f"/{member}/adapter"]
    for member in ("defenders", "allies", "controllers", "puppets"):
        error = await rpc.error("exchange.resolve", {**duel, member: [ix, sheet]})
        assert [e["path"] for e in error["data"]["errors"]] == [f"/{member}/1/adapter"]
    for method in ("exchange.end_round", "combatants.rest"):
        error = await rpc.error(method, {"system": "power-pool", "combatants": [ix, sheet]})
        assert [e["path"] for e in error["data"]["errors"]] == ["/combatants/1/adapter"]


async def test_a_sheet_with_another_member_is_a_combatant_object_not_a_sheet(
        rpc: Rpc) -> None:
    """{adapter, data} and nothing else is a sheet; with a member besides, the object is
    checked as a combatant (and refused), not imported."""
    sheet = {"adapter": "roll20.adnd2e-revised", "data": ULCEN_ROLL20}
    error = await rpc.error("exchange.resolve", {**EXCHANGE, "attacker": {**sheet,
                                                                          "note": "x"}})
    assert error["code"] == -32602
    assert {e["path"] for e in error["data"]["errors"]} == {"/attacker"}


async def test_a_sheet_refused_by_its_adapter_is_refused_where_it_was_given(
        rpc: Rpc) -> None:
    """An adapter's problems point into the data, under the member that gave it."""
    bad = pool_sheet("-Mix", "Ix", psi_die=("seven", ""))
    error = await rpc.error("exchange.resolve", {
        "system": "power-pool", "defender": bad, "attack": {"mode": "mental-stab"},
        "attacker": {"id": "a", "hit_dice": 3, "die": 6, "attacks": ["mental-stab"]}})
    assert [e["path"] for e in error["data"]["errors"]] == [
        "/defender/data/attribs/1/current"]


async def test_exchange_seed_makes_random_dice_reproducible(rpc: Rpc) -> None:
    params: dict[str, Any] = {k: v for k, v in EXCHANGE.items() if k != "dice"}
    params["seed"] = 99
    first = await rpc.ok("exchange.resolve", params)
    second = await rpc.ok("exchange.resolve", params)
    assert first["rolls"] == second["rolls"]
    others = [(await rpc.ok("exchange.resolve", {**params, "seed": seed}))["rolls"]
              for seed in range(5)]
    assert any(rolls != first["rolls"] for rolls in others), "the seed must matter"


async def test_exchange_odds(rpc: Rpc) -> None:
    params = {k: v for k, v in EXCHANGE.items() if k != "dice"}
    odds = await rpc.ok("exchange.odds", params)
    assert abs(sum(odds["outcomes"].values()) - 1) < 1e-9
    assert {"mean", "distribution", "truncated_mass"} <= set(odds["damage"])
    error = await rpc.error("exchange.odds", {**params, "dice": {"attack": [3]}})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{"path": "/dice", "message": "not allowed here"}]


async def test_exchange_odds_assume_known_with_a_defense_of_no_mode_assumes_none(
        rpc: Rpc) -> None:
    """API.md: a missing or null defense means no defense mode, and combat-strength's
    request takes `{"mode": null}` as one: assume_known ["/defender"] assumes nothing
    then, and the odds are the defenseless table's, as without it (it was refused,
    "null is not one of" the defenses, at /defender/defenses/0)."""
    ann = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 100,
           "attacks": ["mind-thrust"]}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 50, "defense_strength": 50,
          "defenses": ["mind-blank"]}
    params = {"system": "combat-strength", "attacker": ann, "defender": bo,
              "attack": {"mode": "mind-thrust"}, "defense": {"mode": None}}
    plain = await rpc.ok("exchange.odds", params)
    assert plain["table"] == "defenseless"
    assert await rpc.ok("exchange.odds", {**params, "assume_known": ["/defender"]}) == plain


@pytest.mark.parametrize("method", ["exchange.resolve", "exchange.odds"])
async def test_a_combat_strength_defense_mode_it_lacks_is_named_at_defense_mode(
        rpc: Rpc, method: str) -> None:
    """API.md -32602: params that fail the method's schema, or an unknown mode id, with
    `data.errors` naming the path; the unknown defense mode is named at /defense/mode
    with the modes there are (it was "/defense: ... is not valid under any of the given
    schemas")."""
    params = {"system": "combat-strength",
              "attacker": {"id": "ann", "attack_strength": 30, "defense_strength": 30},
              "defender": {"id": "bo", "attack_strength": 30, "defense_strength": 30},
              "attack": {"mode": "mind-thrust"}, "defense": {"mode": "tower"}}
    error = await rpc.error(method, params)
    assert error["code"] == -32602
    (problem,) = error["data"]["errors"]
    assert problem["path"] == "/defense/mode"
    assert problem["message"].startswith('"tower" is not one of ["mind-blank", ')


@pytest.mark.parametrize("method", ["exchange.resolve", "exchange.odds"])
async def test_a_power_pool_sacrifice_out_of_range_is_named_at_the_level_with_its_bound(
        rpc: Rpc, method: str) -> None:
    """API.md -32602: `data.errors` names the path and the rule. A spell level given up
    outside 1 to 9 is named where it is, at /defense/sacrifice or the list's item, with
    the bound (it was the whole sacrifice, "not valid under any of the given
    schemas")."""
    params = {"system": "power-pool",
              "attacker": {"id": "a", "hit_dice": 2, "die": 8,
                           "attacks": ["mental-stab"]},
              "defender": {"id": "mage", "hit_dice": 2, "die": 4, "psionic": False,
                           "spell_levels": [1, 2]},
              "attack": {"mode": "mental-stab"}}
    for sacrifice, path, message in [
            (10, "/defense/sacrifice", "10 is greater than the maximum of 9"),
            ([1, 12], "/defense/sacrifice/1", "12 is greater than the maximum of 9"),
            ("2", "/defense/sacrifice", '"2" is not of type "integer" or "array"')]:
        error = await rpc.error(method, {**params, "defense": {"sacrifice": sacrifice}})
        assert error["code"] == -32602
        assert error["data"]["errors"] == [{"path": path, "message": message}]


async def test_exchange_odds_assume_known_answers_alike_whatever_the_defender_knows(
        rpc: Rpc) -> None:
    """A defense the defender does not know is refused by its rule (the secret a player
    who may not see the sheet must not learn); with assume_known ["/defender"] the odds
    are those of a defender that knows it and can pay, for a sheet given as {adapter,
    data} too (imported first)."""
    params = {k: v for k, v in EXCHANGE.items() if k != "dice"}
    params["defense"] = {"mode": "tower-of-iron-will"}
    refused = await rpc.error("exchange.odds", params)
    assert (refused["code"], refused["data"]["rule"]) == (4001, "defense-not-known")
    knowing = {**params, "defender": {**FENKA, "defenses": ["tower-of-iron-will"]}}
    true_odds = await rpc.ok("exchange.odds", knowing)
    for defender in (FENKA, {**FENKA, "defenses": ["tower-of-iron-will"]}):
        assumed = {**params, "defender": defender, "assume_known": ["/defender"]}
        assert await rpc.ok("exchange.odds", assumed) == true_odds
    sheet = {"adapter": "roll20.adnd2e-revised", "data": ULCEN_ROLL20}
    imported = (await rpc.ok("adapters.import", {**sheet, "system": "revised-2e"}))["combatant"]
    fenka = {**FENKA, "level": 4}
    from_sheet = await rpc.ok("exchange.odds", {**params, "attacker": fenka,
                                                "defender": sheet,
                                                "assume_known": ["/defender"]})
    as_known = await rpc.ok("exchange.odds", {**params, "attacker": fenka, "defender": {
        **imported, "defenses": ["tower-of-iron-will"]}})
    assert {k: v for k, v in from_sheet.items() if k != "warnings"} == as_known
    # only on odds, and only where a mind may defend
    error = await rpc.error("exchange.resolve", {**knowing, "assume_known": ["/defender"]})
    assert error["code"] == -32602
    for places, path in ((["/attacker"], "/assume_known/0"),
                         (["/defender", "defender"], "/assume_known/1"),
                         (["/defender", "/defender"], "/assume_known")):
        error = await rpc.error("exchange.odds", {**params, "assume_known": places})
        assert error["code"] == -32602
        assert [e["path"] for e in error["data"]["errors"]] == [path]


async def test_exchange_odds_least_chance_leaves_out_the_unlikely_entries(rpc: Rpc) -> None:
    """least_chance: combat-strength's penetrating damage (hundreds of values, in
    outcomes and in damage.distribution) comes down to the values at least that likely;
    what was left out is summed in left_out, and the mean and dealt figures are the
    whole answer's. 0 leaves out nothing; a bad value is −32602 at /least_chance."""
    params = {"system": "combat-strength",
              "attacker": {"id": "a", "attack_strength": 60, "defense_strength": 40},
              "defender": {"id": "b", "attack_strength": 10, "defense_strength": 30},
              "attack": {"mode": "psychic-implosion", "range": "short"},
              "defense": {"mode": "mind-blank"}}
    whole = await rpc.ok("exchange.odds", params)
    assert "left_out" not in whole and len(whole["damage"]["distribution"]) > 500
    assert 0 < whole["outcomes"]["crushed"] < 1
    short = await rpc.ok("exchange.odds", {**params, "least_chance": 0.001})
    kept = {str(v): p for v, p in whole["damage"]["distribution"] if p >= 0.001}
    assert short["outcomes"] == {**kept, "crushed": whole["outcomes"]["crushed"]}
    assert short["damage"]["distribution"] == [
        pair for pair in whole["damage"]["distribution"] if pair[1] >= 0.001]
    assert 0 < len(kept) < 50
    gone = sum(p for _, p in whole["damage"]["distribution"] if p < 0.001)
    assert short["left_out"]["outcomes"] == pytest.approx(gone, abs=1e-12)
    assert short["left_out"]["distribution"] == pytest.approx(gone, abs=1e-12)
    for member in ("mean", "truncated_mass", "dealt"):
        assert short["damage"][member] == whole["damage"][member]
    assert {k: v for k, v in short.items() if k not in ("outcomes", "damage", "left_out")} \
        == {k: v for k, v in whole.items() if k not in ("outcomes", "damage")}
    assert whole["damage"]["dealt"]["least"] <= whole["damage"]["dealt"]["median"] \
        <= whole["damage"]["dealt"]["p90"] < whole["damage"]["dealt"]["most"]
    nothing = await rpc.ok("exchange.odds", {**params, "least_chance": 0})
    assert nothing == {**whole, "left_out": {"outcomes": 0.0, "distribution": 0.0}}
    # the crush (2 %) beside the damage values stays below a line above it, and is not
    # summed with the damage values left out (it comes with one of them)
    above = await rpc.ok("exchange.odds", {**params, "least_chance": 0.05})
    assert whole["crushed"] < 0.05
    assert above["outcomes"]["crushed"] == above["crushed"] == whole["crushed"]
    assert above["left_out"]["outcomes"] == pytest.approx(
        above["left_out"]["distribution"], abs=1e-12)
    assert above["left_out"]["outcomes"] == pytest.approx(
        sum(p for _, p in whole["damage"]["distribution"] if p < 0.05), abs=1e-12)
    # revised-2e's two outcomes: one below the line goes, the other stays
    revised = {k: v for k, v in EXCHANGE.items() if k != "dice"}
    both = (await rpc.ok("exchange.odds", revised))["outcomes"]
    line = (min(both.values()) + max(both.values())) / 2
    one = await rpc.ok("exchange.odds", {**revised, "least_chance": line})
    assert one["outcomes"] == {k: p for k, p in both.items() if p >= line}
    for bad in (-0.1, 1.5, "0.1", None):
        error = await rpc.error("exchange.odds", {**params, "least_chance": bad})
        assert error["code"] == -32602
        assert [e["path"] for e in error["data"]["errors"]] == ["/least_chance"]
    error = await rpc.error("exchange.resolve", {**params, "least_chance": 0.1})
    assert error["data"]["errors"] == [
        {"path": "", "message": 'unexpected member(s) ["least_chance"]: not allowed here'}]


def test_least_chance_keeps_what_is_no_number() -> None:
    """A plugin's odds may hold anything where a chance should be: such an entry stays,
    and an answer without the lists gets left_out all the same."""
    odds = {"outcomes": {"hit": 0.01, "miss": 0.99, "note": "tails", "flag": True},
            "damage": {"mean": 0.5, "distribution": [[0, 0.99], [1, 0.01], [2, "x"], 3]}}
    assert leave_out_unlikely(odds, 0.05) == {
        "outcomes": {"miss": 0.99, "note": "tails", "flag": True},
        "damage": {"mean": 0.5, "distribution": [[0, 0.99], [2, "x"], 3]},
        "left_out": {"outcomes": 0.01, "distribution": 0.01}}
    hit_beside = {**odds, "outcomes": {"hit": 0.01, "miss": 0.99}}
    assert leave_out_unlikely(hit_beside, 0.05, frozenset({"hit"}))["outcomes"] == {
        "hit": 0.01, "miss": 0.99}
    assert leave_out_unlikely({"outcomes": "none"}, 0.5) == {
        "outcomes": "none", "left_out": {"outcomes": 0.0, "distribution": 0.0}}
    # a boolean is no chance either, false as much as true
    assert leave_out_unlikely({"outcomes": {"hit": 0.01, "flag": False}}, 0.05) == {
        "outcomes": {"flag": False}, "left_out": {"outcomes": 0.01, "distribution": 0.0}}


def test_least_chance_leaves_out_only_what_is_less_likely() -> None:
    """API.md exchange.odds: least_chance leaves out "the entries of outcomes and
    damage.distribution less likely than that": one exactly as likely stays."""
    odds = {"outcomes": {"hit": 0.25, "miss": 0.75},
            "damage": {"mean": 0.25, "distribution": [[0, 0.75], [1, 0.25]]}}
    assert leave_out_unlikely(odds, 0.25) == {
        "outcomes": {"hit": 0.25, "miss": 0.75},
        "damage": {"mean": 0.25, "distribution": [[0, 0.75], [1, 0.25]]},
        "left_out": {"outcomes": 0.0, "distribution": 0.0}}


async def test_dice_roll(rpc: Rpc) -> None:
    result = await rpc.ok("dice.roll", {"expr": "3d6+2", "seed": 7})
    assert len(result["rolls"]) == 3
    assert result["total"] == sum(r["value"] for r in result["rolls"]) + 2
    assert await rpc.ok("dice.roll", {"expr": "3d6+2", "seed": 7}) == result
    others = [await rpc.ok("dice.roll", {"expr": "3d6+2", "seed": seed}) for seed in range(5)]
    assert len({tuple(r["value"] for r in o["rolls"]) for o in [result, *others]}) > 1


async def test_dice_roll_penetrates_as_2d6p_says(rpc: Rpc) -> None:
    """API.md dice.roll: `2d6p` (penetrating) and "a penetrating die's follow-up dice
    come right after the die they follow" (6, 6, 1 is 6 + 5 + 0): the daemon's answer
    lists each follow-up after a 6, names that die in `follows`, and counts it one less."""
    for seed in range(200):
        result = await rpc.ok("dice.roll", {"expr": "2d6p", "seed": seed})
        rolls = result["rolls"]
        if len(rolls) > 2:
            break
    else:
        pytest.fail("no seed below 200 made a 6 in 2d6p")
    assert sum(r["follows"] is None for r in rolls) == 2
    for index, roll in enumerate(rolls):
        if roll["follows"] is not None:
            assert roll["follows"] == index - 1 and rolls[index - 1]["value"] == 6
    assert result["total"] == sum(r["value"] - (r["follows"] is not None) for r in rolls)
    assert result["capped"] is False


async def test_dice_roll_limit_is_32602_naming_the_limit(rpc: Rpc) -> None:
    """API.md "Limits": at most 100 dice in one expression ... −32602 naming the limit."""
    error = await rpc.error("dice.roll", {"expr": "101d6"})
    assert error["code"] == -32602
    assert "100" in error["data"]["errors"][0]["message"]
    assert error["data"]["errors"][0]["path"] == "/expr"


async def test_a_dice_expression_that_does_not_parse_is_32602_at_expr_naming_the_position(
        rpc: Rpc) -> None:
    """API.md "Errors": invalid params name the field; a syntax error is the
    expression's, at the character where reading it stopped."""
    error = await rpc.error("dice.roll", {"expr": "3d"})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [
        {"path": "/expr", "message": "expected the number of sides after 'd' at position 2"}]


async def test_companion_info_states_every_dice_limit_the_engine_enforces(rpc: Rpc) -> None:
    """API.md "Limits": at most 100 dice per expression, 1000 sides per die, 100
    penetration follow-ups; "companion.info lists them under limits" (D11: the sides
    were missing), and the OpenRPC description of dice.roll's expr says them too."""
    limits = (await rpc.ok("companion.info"))["limits"]
    assert (limits["max_dice"], limits["max_sides"], limits["max_penetration"]) == (
        MAX_DICE_PER_POOL, MAX_SIDES, MAX_PENETRATION_FOLLOW_UPS)
    error = await rpc.error("dice.roll", {"expr": f"1d{MAX_SIDES + 1}"})
    assert error["code"] == -32602 and str(MAX_SIDES) in error["data"]["errors"][0]["message"]
    assert (await rpc.ok("dice.roll", {"expr": f"1d{MAX_SIDES}"}))["total"] >= 1
    document = await rpc.ok("rpc.discover")
    roll = next(m for m in document["methods"] if m["name"] == "dice.roll")
    description = roll["x-params-schema"]["properties"]["expr"]["description"]
    assert f"at most {MAX_DICE_PER_POOL} dice of 1 to {MAX_SIDES} sides" in description


async def test_openrpc_notification_names_every_member_the_daemon_sends(rpc: Rpc) -> None:
    """API.md: encounter.changed carries {id, revision}, and `"revision": null,
    "deleted": true` after encounter.delete (D12: deleted was missing)."""
    document = await rpc.ok("rpc.discover")
    [changed] = document["x-notifications"]
    assert changed["name"] == "encounter.changed"
    assert set(changed["params"]) == {"id", "revision", "deleted"}


async def test_plugin_method_runs(rpc: Rpc) -> None:
    result = await rpc.ok("sample.echo", {"text": "hello"})
    assert result["echo"] == "hello" and "sample-duel" in result["systems"]


async def test_sample_system_resolves_through_the_daemon(rpc: Rpc) -> None:
    result = await rpc.ok("exchange.resolve", {
        "system": "sample-duel", "attacker": {"id": "a", "name": "A"},
        "defender": {"id": "b", "name": "B"}, "attack": {"mode": "jab"},
        "dice": {"attack": [5]}})
    assert result["outcome"] == "hit" and result["defender"]["after"]["focus"] == 2


async def test_exchange_resolve_in_every_built_in_system(rpc: Rpc) -> None:
    """API.md: per-system fields of the result (combat-strength: table, bonus_dice,
    damage, attack_cost; power-pool: attack_total, defense_total, winner, controlled,
    effects)."""
    combat_strength = await rpc.ok("exchange.resolve", {
        "system": "combat-strength",
        "attacker": {"id": "a", "name": "A", "attack_strength": 200,
                     "defense_strength": 200},
        "defender": {"id": "b", "name": "B", "attack_strength": 200,
                     "defense_strength": 200},
        "attack": {"mode": "ego-whip", "range": "short"},
        "defense": {"mode": "mental-barrier"}, "seed": 1})
    for member in ("table", "bonus_dice", "damage", "attack_cost", "updates"):
        assert member in combat_strength
    power_pool = await rpc.ok("exchange.resolve", {
        "system": "power-pool",
        "attacker": {"id": "a", "name": "A", "hit_dice": 8, "die": 8, "psionic": True,
                     "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
        "defender": {"id": "b", "name": "B", "hit_dice": 8, "die": 8, "psionic": True,
                     "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
        "attack": {"mode": "mental-stab"}, "defense": {"mode": "blank-mind"}, "seed": 1})
    for member in ("attack_total", "defense_total", "winner", "controlled", "effects"):
        assert member in power_pool
    assert power_pool["winner"] in ("attacker", "defender")


async def test_openrpc_gives_each_system_s_request_schema_for_the_exchange_methods(
        rpc: Rpc) -> None:
    """API.md: rpc.discover has 'the params schemas actually used for validation':
    exchange.resolve checks the system's request schema too, with {adapter, data}
    combatants imported first. What the document allows the daemon runs, and what it
    refuses the daemon refuses."""
    document = await rpc.ok("rpc.discover")
    methods = {m["name"]: m for m in document["methods"]}
    resolve = jsonschema.Draft202012Validator(methods["exchange.resolve"]["x-params-schema"])
    odds = jsonschema.Draft202012Validator(methods["exchange.odds"]["x-params-schema"])
    sheet = json.loads((HERE.parent / "fixtures" / "roll20"
                        / "adnd2e-revised-ulcen.handmade.json").read_text())
    good = [EXCHANGE, {**EXCHANGE, "attacker": {"adapter": "roll20.adnd2e-revised",
                                                "data": sheet}},
            {"system": "power-pool", "attacker": {"id": "a", "hit_dice": 3, "die": 6,
                                                  "attacks": ["mental-stab"]},
             "defender": {"id": "b", "hit_dice": 2, "die": 6}, "seed": 3,
             "attack": {"mode": "mental-stab"}, "defense": None},
            {"system": "combat-strength", "attacker": {"id": "a", "attack_strength": 100,
                                                       "defense_strength": 100},
             "defender": {"id": "b", "attack_strength": 50, "defense_strength": 50},
             "attack": {"mode": "mind-thrust"}, "dice": {"damage": [3, 3, 3, 3, 3]}}]
    for params in good:
        assert resolve.is_valid(params), params["system"]
        assert "result" in await rpc.call("exchange.resolve", params)
    without_dice = {k: v for k, v in EXCHANGE.items() if k != "dice"}
    assert odds.is_valid(without_dice) and not odds.is_valid(EXCHANGE)
    # the odds' own members, which the method takes out before the system's check
    for extra in ({"assume_known": ["/defender"]}, {"least_chance": 0.01}):
        assert odds.is_valid({**without_dice, **extra}), extra
        assert "result" in await rpc.call("exchange.odds", {**without_dice, **extra}), extra
    bad = [{"system": "revised-2e"}, {**EXCHANGE, "extra": 1},
           {**EXCHANGE, "attacker": {**ULCEN, "extra": 1}},
           {**EXCHANGE, "defense": {}}, {**EXCHANGE, "attack": {"mode": "ego-whap"}},
           {**EXCHANGE, "attacker": {"adapter": "roll20.adnd2e-revised"}}]
    for params in bad:
        assert not resolve.is_valid(params), params
        assert (await rpc.error("exchange.resolve", params))["code"] == -32602, params


async def test_openrpc_gives_a_branch_to_each_system_that_takes_the_method(
        rpc: Rpc) -> None:
    """API.md: one ``if {"system": ID} then`` branch per installed system; for
    exchange.end_round and exchange.round_end_choices per system that ends rounds, for
    combatants.rest per system that rests (systems.list's round_end and rest)."""
    systems = await rpc.ok("systems.list")
    every = {s["id"] for s in systems}
    ending = {s["id"] for s in systems if s["round_end"]}
    resting = {s["id"] for s in systems if s["rest"]}
    # the sample duel neither ends rounds nor rests, combat-strength ends rounds only
    assert "sample-duel" in every - ending and "combat-strength" in ending - resting
    document = await rpc.ok("rpc.discover")
    methods = {m["name"]: m for m in document["methods"]}
    expected = {"exchange.resolve": every, "exchange.odds": every,
                "exchange.end_round": ending, "exchange.round_end_choices": ending,
                "combatants.rest": resting}
    for name, ids in expected.items():
        branches = methods[name]["x-params-schema"]["allOf"][1:]
        assert [b["if"]["properties"]["system"]["const"] for b in branches] == sorted(ids)


async def test_openrpc_allows_a_sheet_once_for_each_combatant_of_a_round_or_rest(
        rpc: Rpc) -> None:
    """Each of ``combatants`` is {adapter, data} or the system's combatant: the sheet is
    allowed once, beside the combatant schema, not once more inside it."""
    document = await rpc.ok("rpc.discover")
    for method in document["methods"]:
        if method["name"] not in ("exchange.end_round", "exchange.round_end_choices",
                                  "combatants.rest"):
            continue
        for branch in method["x-params-schema"]["allOf"][1:]:
            sheet, combatant = branch["then"]["properties"]["combatants"]["items"]["anyOf"]
            assert sheet == ADAPTER_REF, method["name"]
            assert ADAPTER_REF not in combatant.get("anyOf", []), method["name"]
            assert combatant["$id"].endswith(":combatant"), method["name"]


async def test_openrpc_embeds_each_system_schema_without_a_dialect_of_its_own(
        rpc: Rpc) -> None:
    """The systems' schemas name their dialect (``$schema``); embedded in an
    x-params-schema they are read as the document is, so none is left inside."""
    document = await rpc.ok("rpc.discover")
    for method in document["methods"]:
        assert "$schema" not in json.dumps(method["x-params-schema"]), method["name"]


async def test_openrpc_summarises_each_method_by_its_first_sentence_and_gives_its_result(
        rpc: Rpc) -> None:
    """OpenRPC: a method's summary is short; ours is the first sentence of its
    description, without its full stop. Its result descriptor, named after the method,
    has the result schema of the method table."""
    document = await rpc.ok("rpc.discover")
    methods = {m["name"]: m for m in document["methods"]}
    assert methods["rpc.discover"]["summary"] == (
        "The OpenRPC 1.3 document of this daemon: every method with the params schemas "
        "used to validate its calls")
    assert methods["encounter.add"]["summary"] == (
        "Add a combatant (or {adapter, data}): {combatant_id, revision, warnings, updates}")
    for method in methods.values():
        assert method["description"].startswith(method["summary"]), method["name"]
        assert not method["summary"].endswith("."), method["name"]
    for registered in CORE:
        result = methods[registered.spec.name]["result"]
        assert result == {"name": f"{registered.spec.name} result",
                          "schema": registered.spec.result}


async def test_only_combatant_members_are_read_as_sheets(rpc: Rpc) -> None:
    """API.md: 'every combatant member also allowed as {adapter, data}'. Audit: any member
    outside a fixed list of others was taken for one, so combat-strength's stance, a
    power-pool defenses map and a rest's hours given as {adapter, data} went through an
    adapter (-32602 at /stance/data/mapping) and the document allowed them. Now neither
    the document nor the daemon reads them as sheets: the system's own schema refuses
    them where they stand."""
    document = await rpc.ok("rpc.discover")
    methods = {m["name"]: m for m in document["methods"]}
    resolve = jsonschema.Draft202012Validator(methods["exchange.resolve"]["x-params-schema"])
    rest = jsonschema.Draft202012Validator(methods["combatants.rest"]["x-params-schema"])
    sheet = {"adapter": "roll20.generic", "data": {}}
    duel = {"system": "combat-strength",
            "attacker": {"id": "a", "attack_strength": 100, "defense_strength": 100},
            "defender": {"id": "b", "attack_strength": 50, "defense_strength": 50},
            "attack": {"mode": "mind-thrust"}, "seed": 1}
    assert resolve.is_valid(duel)
    assert not resolve.is_valid({**duel, "stance": sheet})
    error = await rpc.error("exchange.resolve", {**duel, "stance": sheet})
    paths = [e["path"] for e in error["data"]["errors"]]
    assert error["code"] == -32602 and paths and all(p.startswith("/stance") for p in paths)
    assert not any(p.startswith("/stance/data") for p in paths), paths
    resting = {"system": "revised-2e", "combatants": [FENKA]}
    assert rest.is_valid({**resting, "hours": 8})
    assert not rest.is_valid({**resting, "hours": sheet})
    error = await rpc.error("combatants.rest", {**resting, "hours": sheet})
    assert error["code"] == -32602
    assert [e["path"] for e in error["data"]["errors"]] == ["/hours"]
    # Every combatant member still takes a sheet, in the document as in the daemon.
    sheet_ref = {"adapter": "roll20.adnd2e-revised", "data": json.loads(
        (FIXTURES / "roll20" / "adnd2e-revised-ulcen.handmade.json").read_text())}
    assert rest.is_valid({"system": "revised-2e", "combatants": [sheet_ref], "hours": 8})
    rested = await rpc.ok("combatants.rest", {"system": "revised-2e",
                                              "combatants": [sheet_ref], "hours": 8})
    assert "updates" in rested and rested["combatants"][0]["before"]["name"] == "Ulcen of Tyr"


async def test_openrpc_round_end_choices_schema_takes_no_dice_or_seed_as_the_daemon(
        rpc: Rpc) -> None:
    """API.md: exchange.round_end_choices takes {combatants, options?} (it rolls no die).
    Audit: each system's branch of its x-params-schema listed dice and seed, which the
    method's own schema and the daemon refuse (-32602 "unexpected member(s)")."""
    document = await rpc.ok("rpc.discover")
    method = next(m for m in document["methods"] if m["name"] == "exchange.round_end_choices")
    schema = method["x-params-schema"]
    whole = jsonschema.Draft202012Validator(schema)
    branches = {b["if"]["properties"]["system"]["const"]: jsonschema.Draft202012Validator(
        b["then"]) for b in schema["allOf"][1:]}
    assert set(branches) >= BUILTIN
    combatants = {"revised-2e": [FENKA], "power-pool": [{"id": "ix", "hit_dice": 4, "die": 8}],
                  "combat-strength": [{"id": "a", "attack_strength": 4,
                                       "defense_strength": 4}]}
    for system, listed in combatants.items():
        params: dict[str, Any] = {"system": system, "combatants": listed}
        assert whole.is_valid(params) and branches[system].is_valid(params), system
        assert "result" in await rpc.call("exchange.round_end_choices", params), system
        for extra in ({"seed": 1}, {"dice": {"save": [5]}}):
            refused = {**params, **extra}
            assert not whole.is_valid(refused), (system, extra)
            assert not branches[system].is_valid(refused), (system, extra)
            error = await rpc.error("exchange.round_end_choices", refused)
            assert error["code"] == -32602, (system, extra)


async def test_two_combatants_with_one_id_are_invalid_params_not_a_self_attack(
        rpc: Rpc) -> None:
    """revised-2e: a combatant attacking its own mind breaks a rule (4001); two different
    combatants that share an id are a mistake in the params (-32602 at /defender/id)."""
    fenka_as_ulcen = {**EXCHANGE["defender"], "id": "ulcen"}
    error = await rpc.error("exchange.resolve", {**EXCHANGE, "defender": fenka_as_ulcen})
    assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/defender/id"
    error = await rpc.error("exchange.resolve", {**EXCHANGE, "defender": ULCEN})
    assert (error["code"], error["data"]["rule"]) == (4001, "target-is-attacker")
    # combat-strength refuses one id on both sides as it is, also for one combatant
    one = {"id": "a", "attack_strength": 100, "defense_strength": 100}
    cs = {"system": "combat-strength", "attacker": one, "attack": {"mode": "mind-thrust"}}
    for defender in ({**one, "int": 5}, one):
        error = await rpc.error("exchange.resolve", {**cs, "defender": defender})
        assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/defender/id"


async def test_every_method_answers_what_its_openrpc_result_schema_says(rpc: Rpc) -> None:
    """API.md: rpc.discover documents every method; what it says a method answers (its
    `result` schema) must hold for a real answer of each, built-in and plugin alike."""
    document = await rpc.ok("rpc.discover")
    schemas = {m["name"]: m["result"]["schema"] for m in document["methods"]}
    answers: dict[str, Any] = {}

    async def sample(method: str, params: Any = None) -> Any:
        answers[method] = result = await rpc.ok(method, params)
        return result

    for method in ("rpc.discover", "companion.info", "systems.list", "adapters.list",
                   "encounter.list"):
        await sample(method)
    await sample("systems.describe", {"system": "revised-2e"})
    await sample("systems.house_rules", {"system": "revised-2e"})
    await sample("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                     "data": ULCEN_ROLL20})
    await sample("exchange.resolve", EXCHANGE)
    await sample("exchange.odds", {k: v for k, v in EXCHANGE.items() if k != "dice"})
    await sample("exchange.end_round", {"system": "revised-2e", "combatants": [FENKA]})
    await sample("exchange.round_end_choices", {"system": "revised-2e",
                                                "combatants": [FENKA]})
    await sample("combatants.rest", {"system": "revised-2e", "combatants": [FENKA],
                                     "hours": 1})
    await sample("dice.roll", {"expr": "2d6p+1", "seed": 1})
    await sample("sample.echo", {"text": "hi"})
    eid = (await sample("encounter.create", {"system": "revised-2e"}))["id"]
    for combatant in (ULCEN, FENKA):
        await sample("encounter.add", {"id": eid, "combatant": combatant})
    await sample("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                       "combatant": {**FENKA, "psp": 29}})
    await sample("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "mind-thrust", "multiplier": 1, "range": "short",
                   "target": "fenka"}}})
    await sample("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    await sample("encounter.get", {"id": eid})
    await sample("encounter.log", {"id": eid})
    await sample("encounter.undo", {"id": eid})
    ws = await rpc.client.ws_connect("/ws", protocols=("mindscape.v1", f"token.{rpc.token}"))
    for number, method in enumerate(("encounter.watch", "encounter.unwatch"), 1):
        await ws.send_json({"jsonrpc": "2.0", "method": method, "params": {"id": eid},
                            "id": number})
        answers[method] = (await ws.receive_json(timeout=5))["result"]
    await ws.close()
    await sample("encounter.delete", {"id": eid})
    # The views and steps of the other systems, the sample plugin's among them, are theirs
    # to shape: what the document promises of them must hold too.
    for system in ("combat-strength", "power-pool", "sample-duel"):
        other = (await rpc.ok("encounter.create", {"system": system}))["id"]
        checked = {"systems.describe": await rpc.ok("systems.describe", {"system": system}),
                   "encounter.resolve": await rpc.ok("encounter.resolve", {
                       "id": other, "force": True, "seed": 1}),
                   "encounter.get": await rpc.ok("encounter.get", {"id": other}),
                   "encounter.log": await rpc.ok("encounter.log", {"id": other})}
        for method, answer in checked.items():
            errors = [e.message for e in
                      jsonschema.Draft202012Validator(schemas[method]).iter_errors(answer)]
            assert errors == [], (system, method)
    # (the faulty plugin's methods fail on purpose: tests/sample_plugin)
    assert set(answers) == {m for m in schemas if not m.startswith("faulty.")}
    for method, answer in answers.items():
        errors = [e.message for e in
                  jsonschema.Draft202012Validator(schemas[method]).iter_errors(answer)]
        assert errors == [], method
