"""``exchange.end_round``, ``exchange.round_end_choices`` and ``combatants.rest``
through the real app: the end of a round, what may be chosen at it, and a rest for
combatants outside encounters, with write-backs for VTT sheets, and every way they
refuse."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import jsonschema
from aiohttp.test_utils import TestClient

from companion.app import create_app
from companion.settings import Limits, Settings

from .combatants import FENKA, ULCEN, duelist, pool_sheet, written_attributes
from .conftest import SAMPLE, ClientFactory, Rpc, with_plugins

JSON = dict[str, Any]

STUNNED = {**ULCEN, "conditions": ["stunned"], "condition_rounds": {"stunned": 0}}


async def refused_naming(rpc: Rpc, method: str, cases: list[tuple[JSON, str]]) -> None:
    """Each params of ``cases`` is -32602 naming its path among the errors."""
    for params, path in cases:
        error = await rpc.error(method, params)
        assert error["code"] == -32602, params
        assert path in [e["path"] for e in error["data"]["errors"]], (params, error)


async def test_end_round_ends_a_stun_so_the_next_exchange_takes_the_attacker(
        rpc: Rpc) -> None:
    attack = {"system": "revised-2e", "attacker": STUNNED, "defender": FENKA,
              "attack": {"mode": "mind-thrust"}, "seed": 3}
    refused = await rpc.error("exchange.resolve", attack)
    assert refused["code"] == 4001 and refused["data"]["rule"] == "attacker-cannot-act"
    ended = await rpc.ok("exchange.end_round", {"system": "revised-2e",
                                                "combatants": [STUNNED, FENKA]})
    assert [c["id"] for c in ended["combatants"]] == ["ulcen", "fenka"]
    ulcen = ended["combatants"][0]["after"]
    assert ulcen["conditions"] == [] and ended["updates"] == []
    assert ended["summary"] == "End of the round: Ulcen of Tyr is no longer stunned."
    assert "warnings" not in ended
    assert (await rpc.ok("exchange.resolve", {**attack, "attacker": ulcen}))["outcome"]


async def test_end_round_with_supplied_dice_and_a_close_choice(rpc: Rpc) -> None:
    opened = {**FENKA, "mind": {"state": "open", "opened_by": "critical", "rounds_open": 1,
                                "may_pay_to_close": True, "last_defense": "mental-barrier"}}
    locked = {**ULCEN, "mind": {"state": "open", "opened_by": "zero-psp", "rounds_open": 4}}
    result = await rpc.ok("exchange.end_round", {
        "system": "revised-2e", "combatants": [opened, locked],
        "choices": {"fenka": {"close": True}}, "dice": {"wisdom-check": [4, 9]}})
    fenka, ulcen = (c["after"] for c in result["combatants"])
    assert fenka["mind"]["state"] == "closed" and fenka["psp"] == 20
    assert ulcen["mind"]["state"] == "closed"
    assert result["unused_dice"] == {"wisdom-check": [9]}
    assert [(r["purpose"], r["value"]) for r in result["rolls"]] == [("wisdom-check", 4)]


async def test_end_round_refusals_carry_their_codes(rpc: Rpc) -> None:
    opened = {**FENKA, "mind": {"state": "open", "opened_by": "zero-psp", "rounds_open": 4}}
    needed = await rpc.error("exchange.end_round", {"system": "revised-2e",
                                                     "combatants": [opened], "dice": {}})
    assert needed["code"] == 4002 and needed["data"]["purpose"] == "wisdom-check"
    cannot = await rpc.error("exchange.end_round", {
        "system": "revised-2e", "combatants": [FENKA], "choices": {"fenka": {"close": True}}})
    assert cannot["code"] == 4001 and cannot["data"]["rule"] == "cannot-close"
    await refused_naming(rpc, "exchange.end_round", [
        ({"system": "revised-2e"}, ""),
        ({"system": "revised-2e", "combatants": []}, "/combatants"),
        ({"system": "revised-2e", "combatants": [FENKA], "attack": {}}, ""),
        ({"system": "revised-2e", "combatants": [FENKA, FENKA]}, "/combatants/1/id"),
        ({"system": "revised-2e", "combatants": [{**FENKA, "psp": 99}]},
         "/combatants/0/psp"),
        ({"system": "revised-2e", "combatants": [FENKA], "choices": {"x": {"close": True}}},
         "/choices/x"),
        ({"system": "combat-strength", "combatants": [{"id": "a", "attack_strength": 40,
                                                       "defense_strength": 40}],
          "choices": {"a": {}}}, ""),
        ({"system": "power-pool", "combatants": [{"id": "a", "hit_dice": 2, "die": 6}],
          "choices": {"a": {"release": [7]}}}, "/choices/a/release/0"),
        ({"system": "power-pool", "combatants": [{"id": "a", "hit_dice": 2, "die": 6}],
          "puppets": [{"id": "a", "hit_dice": 2, "die": 6}]}, "/puppets/0/id"),
        ({"system": "nope", "combatants": [FENKA]}, "/system"),
        ({"system": "sample-duel", "combatants": [duelist("a")]}, "/system"),
        ({"system": "revised-2e", "combatants": [{"adapter": "nope", "data": {}}]},
         "/combatants/0/adapter"),
    ])


async def test_round_end_choices_price_closing_as_the_end_of_round_charges_it(
        rpc: Rpc) -> None:
    """RULES.md §1.5 "closing costs 2 × the cost of the last defense it used (mental
    barrier 5 → 10)": asked before exchange.end_round, with nothing changed, the offer's
    cost is what the end of round then charges."""
    opened = {**FENKA, "mind": {"state": "open", "opened_by": "critical", "rounds_open": 1,
                                "may_pay_to_close": True, "last_defense": "mental-barrier"}}
    params = {"system": "revised-2e", "combatants": [opened, ULCEN]}
    offers = await rpc.ok("exchange.round_end_choices", params)
    assert offers["combatants"] == [
        {"id": "fenka", "name": "Fenka", "choices": {"close": {
            "cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 30,
            "payable": True, "reason": None}}},
        {"id": "ulcen", "name": "Ulcen of Tyr", "choices": {}}]
    assert offers["summary"] == ("Fenka may pay 10 PSPs (twice the mental barrier, the last "
                                 "defense it used) to close its mind.")
    assert "updates" not in offers and "warnings" not in offers
    ended = await rpc.ok("exchange.end_round", {**params, "choices": {"fenka": {"close": True}},
                                                "dice": {"open-duration": [2]}})
    assert ended["combatants"][0]["after"]["psp"] == 30 - 10
    poor = await rpc.ok("exchange.round_end_choices", {
        **params, "combatants": [{**opened, "psp": 10}],
        "options": {"H-2E-CLOSE-LAST-PSP": False}})
    assert poor["combatants"][0]["choices"]["close"]["payable"] is True


async def test_a_mind_a_critical_hit_opened_this_round_pays_to_close_at_its_end(
        rpc: Rpc) -> None:
    """Seed 004: it "can close its mind in the following round": at the end of the round
    the hit opened it in (stunned for that round), closing is offered and paid once the
    round's end has counted the stun out, so it starts the next round closed."""
    opened = {**FENKA, "conditions": ["stunned", "initiative-penalty"],
              "condition_rounds": {"stunned": 0, "initiative-penalty": 1},
              "mind": {"state": "open", "opened_by": "critical", "rounds_open": 0,
                       "last_defense": "mental-barrier"}}
    params = {"system": "revised-2e", "combatants": [opened]}
    offers = await rpc.ok("exchange.round_end_choices", params)
    assert offers["combatants"][0]["choices"]["close"] == {
        "cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 30,
        "payable": True, "reason": None}
    ended = await rpc.ok("exchange.end_round", {**params, "choices": {"fenka": {"close": True}}})
    fenka = ended["combatants"][0]["after"]
    assert fenka["mind"]["state"] == "closed" and fenka["psp"] == 30 - 10
    assert fenka["conditions"] == ["initiative-penalty"]
    assert ended["summary"] == ("End of the round: Fenka is no longer stunned. Fenka pays 10 "
                                "PSPs and closes its mind.")


async def test_round_end_choices_refusals_name_the_field(rpc: Rpc) -> None:
    await refused_naming(rpc, "exchange.round_end_choices", [
        ({"system": "revised-2e"}, ""),
        ({"system": "revised-2e", "combatants": []}, "/combatants"),
        ({"system": "revised-2e", "combatants": [FENKA], "choices": {}}, ""),
        ({"system": "revised-2e", "combatants": [FENKA], "seed": 1}, ""),
        ({"system": "revised-2e", "combatants": [FENKA, FENKA]}, "/combatants/1/id"),
        ({"system": "revised-2e", "combatants": [FENKA], "options": {"H-NOPE": 1}},
         "/options/H-NOPE"),
        ({"system": "sample-duel", "combatants": [duelist("a")]}, "/system"),
        ({"system": "revised-2e", "combatants": [{"adapter": "nope", "data": {}}]},
         "/combatants/0/adapter"),
    ])


async def test_a_controller_releases_at_the_round_s_end_and_both_sheets_are_written(
        rpc: Rpc) -> None:
    """power-pool outside encounters (RULES.md §3.4): the controller is offered its
    control before the round ends; releasing sets the puppet free on its sheet, given
    in ``puppets`` when its own round does not end here (answered in ``others``)."""
    controlling = '[{"id": "-Mb", "kept_by": "die", "wave": null}]'
    ix = pool_sheet("-Ma", "Ix", psi_pool=("2", "3"), psi_controlling=(controlling, ""),
                    psi_dedicated=('[{"purpose": "control", "target": "-Mb"}]', ""))
    zed = pool_sheet("-Mb", "Zed", psi_pool=("0", "3"), psi_controlled_by=("-Ma", ""))
    offers = await rpc.ok("exchange.round_end_choices", {"system": "power-pool",
                                                         "combatants": [ix]})
    link = {"targets": ["-Mb"], "kept_by": "die", "wave": None}
    assert offers["combatants"][0]["choices"] == {
        "release": [link], "keep": [{**link, "by": "action"}], "cannot_perceive": []}
    assert offers["summary"] == ("Ix controls one creature by a die from its pool; it may "
                                 "release it or keep it by an action instead (the die "
                                 "returns).")
    ended = await rpc.ok("exchange.end_round", {
        "system": "power-pool", "combatants": [ix], "puppets": [zed],
        "choices": {"-Ma": {"release": ["-Mb"]}}})
    assert ended["summary"] == "End of the round: Ix releases Zed."
    assert [o["id"] for o in ended["others"]] == ["-Mb"]
    written = written_attributes(ended["updates"])
    assert written[("-Mb", "psi_controlled_by")] == ""
    assert (written[("-Ma", "psi_controlling")], written[("-Ma", "psi_pool")]) == ("[]", 3)
    kept = await rpc.ok("exchange.end_round", {
        "system": "power-pool", "combatants": [ix, zed],
        "choices": {"-Ma": {"keep": [{"target": "-Mb", "by": "action"}]}}})
    assert "others" not in kept
    assert written_attributes(kept["updates"])[("-Ma", "psi_pool")] == 3
    assert ("-Mb", "psi_controlled_by") not in written_attributes(kept["updates"])
    refused = await rpc.error("exchange.end_round", {
        "system": "power-pool", "combatants": [zed], "choices": {"-Mb": {"release": ["-Ma"]}}})
    assert refused["code"] == 4001 and refused["data"]["rule"] == "not-controlling"


async def test_systems_say_which_end_rounds_and_rest_and_with_what(rpc: Rpc) -> None:
    systems = {s["id"]: s for s in await rpc.ok("systems.list")}
    assert {k: (systems[k]["round_end"], systems[k]["rest"]) for k in
            ("revised-2e", "combat-strength", "power-pool", "sample-duel")} == {
        "revised-2e": (True, True), "combat-strength": (True, False),
        "power-pool": (True, True), "sample-duel": (False, False)}
    revised = await rpc.ok("systems.describe", {"system": "revised-2e"})
    for key in ("round_end_schema", "rest_schema"):
        jsonschema.Draft202012Validator.check_schema(revised[key])
    assert set(revised["round_end_schema"]["properties"]) == {"combatants", "options",
                                                              "choices"}
    assert revised["rest_schema"]["required"] == ["combatants", "hours"]
    pool = await rpc.ok("systems.describe", {"system": "power-pool"})
    assert set(pool["round_end_schema"]["properties"]) == {"combatants", "options",
                                                           "choices", "puppets"}
    assert set(pool["round_end_schema"]["properties"]["choices"]["additionalProperties"][
        "properties"]) == {"release", "keep", "cannot_perceive"}
    assert set(pool["rest_schema"]["properties"]) == {"combatants", "options", "puppets"}
    strength = await rpc.ok("systems.describe", {"system": "combat-strength"})
    assert "rest_schema" not in strength and "round_end_schema" in strength
    duel = await rpc.ok("systems.describe", {"system": "sample-duel"})
    assert "round_end_schema" not in duel and "rest_schema" not in duel


async def test_rest_gives_back_psps_and_pool_dice_with_write_backs(rpc: Rpc) -> None:
    """RULES.md §1.8: ceil(psp_max / 8) PSPs an hour (Fenka: 30 → 4 an hour); §3.4
    H-PP-RECOVERY: all dice after a long rest, or half the hit dice with "half"."""
    tired = {**FENKA, "psp": 3, "conditions": ["stunned"], "condition_rounds": {"stunned": 0}}
    rested = await rpc.ok("combatants.rest", {"system": "revised-2e", "combatants": [tired],
                                              "hours": 2})
    fenka = rested["combatants"][0]["after"]
    assert (fenka["psp"], fenka["conditions"]) == (11, [])
    assert rested["summary"] == ("After the rest: Fenka regains 8 PSPs (11 of 30). Fenka "
                                 "is no longer stunned.")
    assert rested["updates"] == [] and rested["rolls"] == []
    spent = {"id": "ix", "name": "Ix", "hit_dice": 5, "die": 8, "pool": 1}
    half = await rpc.ok("combatants.rest", {"system": "power-pool", "combatants": [spent],
                                            "options": {"H-PP-RECOVERY": "half"}})
    assert half["combatants"][0]["after"]["pool"] == 4
    assert half["events"] == [{"type": "pool-regained", "combatant": "ix", "amount": 3}]


async def test_a_long_rest_ends_control_kept_by_an_action_on_both_sheets(rpc: Rpc) -> None:
    """Seed 001: "Powers can't be maintained when a creature rests": the controller's
    link kept by an action ends, and the puppet given in ``puppets`` (it does not rest)
    is set free on its sheet too (``others``, ``updates``)."""
    controlling = '[{"id": "-Mb", "kept_by": "action", "wave": null}]'
    ix = pool_sheet("-Ma", "Ix", psi_pool=("1", "3"), psi_controlling=(controlling, ""))
    zed = pool_sheet("-Mb", "Zed", psi_pool=("0", "3"), psi_controlled_by=("-Ma", ""))
    rested = await rpc.ok("combatants.rest", {"system": "power-pool", "combatants": [ix],
                                              "puppets": [zed]})
    assert rested["summary"] == ("After the rest: Ix rests and spends no action to keep its "
                                 "control of Zed: the control ends. Ix regains 2 dice (3 in "
                                 "the pool).")
    assert [o["id"] for o in rested["others"]] == ["-Mb"]
    assert rested["events"][0] == {"type": "control-ended", "combatant": "-Mb",
                                   "controller": "-Ma", "reason": "rest"}
    written = written_attributes(rested["updates"])
    assert written[("-Mb", "psi_controlled_by")] == ""
    assert (written[("-Ma", "psi_controlling")], written[("-Ma", "psi_pool")]) == ("[]", 3)


async def test_rest_refusals_name_the_field(rpc: Rpc) -> None:
    await refused_naming(rpc, "combatants.rest", [
        ({"system": "revised-2e", "combatants": [FENKA]}, ""),
        ({"system": "revised-2e", "combatants": [FENKA], "hours": 0}, "/hours"),
        ({"system": "revised-2e", "combatants": [FENKA], "hours": 1.5}, "/hours"),
        ({"system": "revised-2e", "combatants": [FENKA], "hours": 1, "seed": "3"}, "/seed"),
        ({"system": "revised-2e", "combatants": [FENKA], "hours": 1, "days": 3}, ""),
        ({"system": "power-pool", "combatants": [{"id": "a", "hit_dice": 2, "die": 6}],
          "hours": 8}, ""),
        ({"system": "combat-strength", "combatants": [{"id": "a"}]}, "/system"),
        ({"system": "sample-duel", "combatants": [duelist("a")]}, "/system"),
    ])


async def test_a_system_without_the_rule_says_so_and_where_to_look(rpc: Rpc) -> None:
    """API.md systems.list: round_end says whether exchange.end_round (and so
    exchange.round_end_choices) takes a system, rest whether combatants.rest does; a
    system without the rule is refused at /system, naming that flag."""
    combatants = [duelist("a")]
    for method, extra, message in (
            ("exchange.end_round", {}, "has no end of round outside an encounter "
                                       "(systems.list: round_end false)"),
            ("exchange.round_end_choices", {}, "has no end of round outside an encounter "
                                               "(systems.list: round_end false)"),
            ("combatants.rest", {"hours": 1}, "has no rule for resting (systems.list: "
                                              "rest false)")):
        error = await rpc.error(method, {"system": "sample-duel", "combatants": combatants,
                                         **extra})
        assert error["data"]["errors"] == [
            {"path": "/system", "message": f"system sample-duel {message}"}], method


async def test_a_system_that_ends_rounds_but_has_no_rest_refuses_a_rest(rpc: Rpc) -> None:
    """systems.list: combat-strength says round_end true and rest false; a rest for it is
    refused at /system by that flag, not let through by the round_end one."""
    error = await rpc.error("combatants.rest", {"system": "combat-strength",
                                                "combatants": [duelist("a")], "hours": 1})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{
        "path": "/system", "message": "system combat-strength has no rule for resting "
                                      "(systems.list: rest false)"}]


async def test_more_combatants_than_the_limit_are_refused_naming_it(rpc: Rpc) -> None:
    many = [{**FENKA, "id": f"f{i}"} for i in range(65)]
    for method, extra in (("exchange.end_round", {}), ("exchange.round_end_choices", {}),
                          ("combatants.rest", {"hours": 1})):
        error = await rpc.error(method, {"system": "revised-2e", "combatants": many, **extra})
        assert error["code"] == -32602
        assert "max_combatants" in error["data"]["errors"][0]["message"], error


async def test_a_rest_with_supplied_dice_that_run_out_is_4002(rpc: Rpc) -> None:
    opened = {**FENKA, "mind": {"state": "open", "opened_by": "zero-psp", "rounds_open": 4}}
    error = await rpc.error("combatants.rest", {"system": "revised-2e", "hours": 1,
                                                "combatants": [opened],
                                                "dice": {"wisdom-check": [20]}})
    assert error["code"] == 4002 and error["data"]["purpose"] == "wisdom-check"
    discovered = await rpc.ok("rpc.discover")
    [rest] = [m for m in discovered["methods"] if m["name"] == "combatants.rest"]
    assert 4002 in [e["code"] for e in rest["errors"]]


async def test_end_round_is_held_to_max_combatants(aiohttp_client: ClientFactory,
                                                   tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", plugins=with_plugins(SAMPLE),
                        limits=Limits(max_combatants=2), log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    rpc = Rpc(client, settings.token_path.read_text().strip())
    three = [{**FENKA, "id": f"f{i}"} for i in range(3)]
    error = await rpc.error("exchange.end_round", {"system": "revised-2e",
                                                   "combatants": three})
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["path"] == "/combatants"
    assert "max_combatants" in error["data"]["errors"][0]["message"]
    await rpc.ok("exchange.end_round", {"system": "revised-2e", "combatants": three[:2]})


async def test_openrpc_gives_each_system_s_own_schema_for_end_round_and_rest(
        rpc: Rpc) -> None:
    """API.md: rpc.discover has the schemas actually used for validation: the engine's
    end_round_schema and rest_schema of each system that takes the method."""
    document = await rpc.ok("rpc.discover")
    methods = {m["name"]: m for m in document["methods"]}
    end_round = jsonschema.Draft202012Validator(
        methods["exchange.end_round"]["x-params-schema"])
    rest = jsonschema.Draft202012Validator(methods["combatants.rest"]["x-params-schema"])
    offers = jsonschema.Draft202012Validator(
        methods["exchange.round_end_choices"]["x-params-schema"])
    ix = {"id": "ix", "hit_dice": 4, "die": 8}
    cases = [
        (end_round, "exchange.end_round", {"system": "revised-2e", "combatants": [FENKA],
                                           "choices": {"fenka": {}}, "seed": 1}, True),
        (end_round, "exchange.end_round", {"system": "power-pool", "combatants": [ix],
                                           "choices": {"ix": {"pass": True}}}, False),
        (end_round, "exchange.end_round", {"system": "combat-strength",
                                           "combatants": [{"id": "a", "attack_strength": 4,
                                                           "defense_strength": 4}],
                                           "choices": {}}, False),
        (end_round, "exchange.end_round", {"system": "power-pool", "combatants": [ix],
                                           "puppets": [{**ix, "id": "zed"}]}, True),
        (end_round, "exchange.end_round", {"system": "revised-2e", "combatants": [FENKA],
                                           "puppets": []}, False),
        (end_round, "exchange.end_round", {"system": "revised-2e", "combatants": [FENKA],
                                           "choices": {"fenka": {"shut": True}}}, False),
        (offers, "exchange.round_end_choices", {"system": "power-pool",
                                                "combatants": [ix]}, True),
        (offers, "exchange.round_end_choices", {"system": "revised-2e",
                                                "combatants": [FENKA], "dice": {}}, False),
        (rest, "combatants.rest", {"system": "revised-2e", "combatants": [FENKA],
                                   "hours": 2}, True),
        (rest, "combatants.rest", {"system": "revised-2e", "combatants": [FENKA],
                                   "hours": 0}, False),
        (rest, "combatants.rest", {"system": "power-pool", "combatants": [ix]}, True),
        (rest, "combatants.rest", {"system": "power-pool", "combatants": [ix],
                                   "hours": 8}, False),
        (rest, "combatants.rest", {"system": "power-pool", "combatants": [ix],
                                   "puppets": [{**ix, "id": "zed"}]}, True),
        (rest, "combatants.rest", {"system": "revised-2e", "combatants": [FENKA],
                                   "hours": 2, "puppets": []}, False),
        # each combatant by the system's own combatant schema (audit: the document took
        # any object)
        (end_round, "exchange.end_round", {"system": "revised-2e",
                                           "combatants": [{**FENKA, "psp": "lots"}]}, False),
        (offers, "exchange.round_end_choices", {"system": "power-pool",
                                                "combatants": [{**ix, "die": 7}]}, False),
        (rest, "combatants.rest", {"system": "power-pool",
                                   "combatants": [{**ix, "pool": -1}]}, False),
        (rest, "combatants.rest", {"system": "power-pool",
                                   "combatants": [pool_sheet("-Mix", "Ix")]}, True),
        # a list member other than combatants takes sheets too
        (end_round, "exchange.end_round", {"system": "power-pool", "combatants": [ix],
                                           "puppets": [pool_sheet("-Mzed", "Zed")]}, True),
        (rest, "combatants.rest", {"system": "power-pool", "combatants": [ix],
                                   "puppets": [pool_sheet("-Mzed", "Zed")]}, True),
    ]
    for validator, method, params, valid in cases:
        assert validator.is_valid(params) is valid, (method, params)
        answer = await rpc.call(method, params)
        assert ("result" in answer) is valid, (method, params, answer)


async def test_a_refusal_about_one_creature_names_it_in_the_error_data(rpc: Rpc) -> None:
    """A VTT tells (or leaves out) the creature a refusal is about by its id, not by
    reading the text: a psionic ally that did not choose to join (seed 001: "The defender
    may choose draw allied non-psionic creatures")."""
    seer = {"id": "-Ms", "name": "Goblin", "hit_dice": 2, "die": 6, "psionic": True,
            "defenses": ["imagination-swarm"]}
    refused = await rpc.error("exchange.resolve", {
        "system": "power-pool",
        "attacker": {"id": "-Ma", "name": "Goblin", "hit_dice": 3, "die": 8,
                     "psionic": True, "attacks": ["mental-stab"]},
        "defender": {"id": "-Mb", "name": "Fenka", "hit_dice": 2, "die": 6, "psionic": True,
                     "defenses": ["imagination-swarm"]},
        "attack": {"mode": "mental-stab"}, "defense": {"mode": "imagination-swarm"},
        "allies": [seer]})
    assert refused["code"] == 4001
    assert (refused["data"]["rule"], refused["data"]["combatant"]) == ("ally-psionic", "-Ms")
    plain = await rpc.error("exchange.end_round", {
        "system": "revised-2e", "combatants": [FENKA], "choices": {"fenka": {"close": True}}})
    assert "combatant" not in plain["data"]
