"""``exchange.odds`` ``assume_known``: the odds a caller who may not see a defender's
sheet can be told. Without it, odds for a defense the mind does not know, or cannot pay
for, are a refusal that says so (revised-2e §1.4: a defense is "known" and "costs" PSPs),
which tells a player the secret; with it, every mind named knows the defense the request
gives it and can pay, so the answer is the same whichever it knows, and the true odds
when it does know the defense and can pay."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine import builtin_systems
from engine.errors import InvalidInput, RulesViolation
from engine.system import System
from tests.sample_plugin.coin_duel import SYSTEM as COIN_DUEL

JSON = dict[str, Any]
SYSTEMS = builtin_systems()
REVISED, STRENGTH, POOL = (SYSTEMS[s] for s in ("revised-2e", "combat-strength",
                                                "power-pool"))

ULCEN: JSON = {"id": "ulcen", "name": "Ulcen", "kind": "psionicist", "level": 4, "psp": 40,
               "psp_max": 40, "int": 14, "wis": 13, "mac": 10, "attacks": ["mind-thrust"],
               "defenses": []}
FENKA: JSON = {"id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 3, "psp": 30,
               "psp_max": 30, "int": 12, "wis": 12, "mac": 10, "attacks": [],
               "defenses": ["mind-blank"]}
#: mind-blank costs 0 in the 2e tables, so tower-of-iron-will (cost > 0) tests payment
TOWER = "tower-of-iron-will"
THRUST: JSON = {"attacker": ULCEN, "attack": {"mode": "mind-thrust", "multiplier": 2}}


def revised(defender: JSON, mode: str = TOWER, **defense: Any) -> JSON:
    return {**THRUST, "defender": defender, "defense": {"mode": mode, **defense}}


def odds_of(system: System, request: JSON, places: list[str]) -> JSON:
    return dict(system.odds(system.assume_knowing(request, places)))


def test_revised_2e_a_defense_the_mind_lacks_or_cannot_pay_for_is_refused_without_it() -> None:
    """The secret assume_known keeps: the refusal names it."""
    cost = REVISED.tables.defense_cost(TOWER)
    assert cost > 0
    with pytest.raises(RulesViolation) as err:
        REVISED.odds(revised(FENKA))
    assert err.value.rule == "defense-not-known"
    with pytest.raises(RulesViolation) as err:
        REVISED.odds(revised({**FENKA, "defenses": [TOWER], "psp": cost - 1}))
    assert err.value.rule == "not-enough-psp-for-defense"


def test_revised_2e_assumed_odds_are_alike_whatever_it_knows_and_true_when_it_can_pay() -> None:
    cost = REVISED.tables.defense_cost(TOWER)
    knows = {**FENKA, "defenses": [TOWER, "mind-blank"]}
    true_odds = dict(REVISED.odds(revised(knows)))
    assert odds_of(REVISED, revised(knows), ["/defender"]) == true_odds
    assert odds_of(REVISED, revised(FENKA), ["/defender"]) == true_odds
    # too few PSPs: given the cost on top of what it holds, so it pays and is left as it
    # was; its maximum rises only when the cost alone is above it
    poor = {**knows, "psp": cost - 1}
    assert odds_of(REVISED, revised(poor), ["/defender"]) == dict(REVISED.odds(revised(
        {**poor, "psp": 2 * cost - 1})))
    assumed = REVISED.assume_knowing(revised({**FENKA, "psp": 1, "psp_max": 2}),
                                     ["/defender"])["defender"]
    assert (assumed["psp"], assumed["psp_max"], assumed["defenses"]) == (cost, cost, [TOWER])
    # a defense already paid this round needs no PSPs
    paid = REVISED.assume_knowing(revised({**FENKA, "psp": 0}, paid=True), ["/defender"])
    assert (paid["defender"]["psp"], paid["defender"]["defenses"]) == (0, [TOWER])


def test_revised_2e_a_mind_without_psionics_stays_as_it_is() -> None:
    """§1.2: a nonpsionic mind raises no defense, whatever it is assumed to know."""
    goblin = {"id": "goblin", "name": "Goblin", "int": 8, "wis": 8}
    request = revised(goblin)
    assert REVISED.assume_knowing(request, ["/defender"])["defender"] == \
        REVISED.combatant(goblin)
    with pytest.raises(RulesViolation) as err:
        odds_of(REVISED, request, ["/defender"])
    assert err.value.rule == "nonpsionic-cannot-defend"


def test_revised_2e_no_defense_assumes_nothing_of_the_mind() -> None:
    """API.md: 'A missing ``defense`` (or ``null``) means no defense mode': a request
    that gives the defender none takes its sheet as it is (the defenses it knows
    kept), and the odds are those of the request itself."""
    for request in ({**THRUST, "defender": FENKA}, {**THRUST, "defender": FENKA,
                                                    "defense": None}):
        assert REVISED.defending_places(request) == {"/defender": []}
        assumed = REVISED.assume_knowing(request, ["/defender"])
        assert assumed["defender"] == REVISED.combatant(FENKA)
        assert odds_of(REVISED, request, ["/defender"]) == dict(REVISED.odds(request))


def test_assume_known_changes_nothing_it_is_given() -> None:
    """Nor a list of minds in it: a power-pool wave's ``defenders`` stay as given."""
    request = revised({**FENKA, "psp": 1})
    before = copy.deepcopy(request)
    REVISED.assume_knowing(request, ["/defender"])
    assert request == before
    wave = {"attacker": pool_mind("ixi"), "defender": pool_mind("tor"),
            "defenders": [pool_mind("mara")], "attack": {"mode": "psionic-wave"},
            "defenses": {"mara": {"mode": "barrier-mantra"}}}
    before = copy.deepcopy(wave)
    assumed = POOL.assume_knowing(wave, ["/defenders/0"])
    assert assumed["defenders"][0]["defenses"] == ["barrier-mantra"]
    assert wave == before


def test_a_place_that_is_no_defending_mind_is_refused_by_its_index() -> None:
    with pytest.raises(InvalidInput) as err:
        REVISED.assume_knowing(revised(FENKA), ["/defender", "/attacker", "/defenders/0"])
    assert [p.path for p in err.value.problems] == ["/assume_known/1", "/assume_known/2"]
    assert '"/attacker" is not a mind that may defend in this exchange (one of /defender)' \
        in err.value.problems[0].message


def test_revised_2e_the_mind_is_taken_under_the_request_s_house_rules() -> None:
    """RULES.md: a house default is "overridable per call": with H-2E-MODE-LIMITS off a
    level-1 mind may know five defenses, in ``assume_knowing`` as in the odds."""
    many = ["mind-blank", "thought-shield", "mental-barrier", "intellect-fortress", TOWER]
    request = revised({**FENKA, "level": 1, "defenses": many})
    with pytest.raises(InvalidInput) as err:
        REVISED.assume_knowing(request, ["/defender"])
    assert err.value.problems[0].path == "/defender/defenses"
    unlimited = {**request, "options": {"H-2E-MODE-LIMITS": False}}
    assumed = REVISED.assume_knowing(unlimited, ["/defender"])
    assert assumed["defender"]["defenses"] == [TOWER]
    assert REVISED.odds(assumed)["outcomes"] == REVISED.odds(unlimited)["outcomes"]


def test_a_request_that_fails_its_schema_is_refused_before_anything_is_assumed() -> None:
    """``assume_knowing`` takes a request valid under ``request_schema``: one without a
    defender, or with an attack the schema does not take, is invalid params naming
    every problem, not a place it cannot find."""
    with pytest.raises(InvalidInput) as err:
        REVISED.assume_knowing(THRUST, ["/defender"])
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("", '"defender" is a required property')]
    with pytest.raises(InvalidInput) as err:
        REVISED.assume_knowing({**revised(FENKA), "attack": {"mode": 7}}, ["/defender"])
    assert [p.path for p in err.value.problems] == ["/attack/mode"]


def test_combat_strength_a_defense_the_mind_lacks_is_assumed_known() -> None:
    ann = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 100,
           "attacks": ["mind-thrust"]}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 50, "defense_strength": 50,
          "defenses": ["mind-blank"]}
    request = {"attacker": ann, "defender": bo, "attack": {"mode": "mind-thrust"},
               "defense": {"mode": "mental-barrier"}}
    with pytest.raises(RulesViolation) as err:
        STRENGTH.odds(request)
    assert err.value.rule == "defense-mode-not-known"
    knows = {**request, "defender": {**bo, "defenses": ["mental-barrier"]}}
    assert odds_of(STRENGTH, request, ["/defender"]) == dict(STRENGTH.odds(knows))
    # "knowing the defense modes (and only them)": what it really knows is not kept
    assumed = STRENGTH.assume_knowing(request, ["/defender"])["defender"]
    assert assumed["defenses"] == ["mental-barrier"]


def test_combat_strength_no_defense_assumes_nothing_of_the_mind() -> None:
    """API.md: 'A missing `defense` (or `null`) means no defense mode', as does a defense
    whose mode is null (the request schema takes `{"mode": null}`): a request that gives
    the defender none assumes it knows none, and the odds are those of the request
    as it is (the defenseless table, RULES.md 2.4)."""
    ann = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 100,
           "attacks": ["mind-thrust"]}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 50, "defense_strength": 50,
          "defenses": ["mind-blank"]}
    for defense in (None, {"mode": None}):
        request = {"attacker": ann, "defender": bo, "attack": {"mode": "mind-thrust"},
                   "defense": defense}
        assert STRENGTH.defending_places(request) == {"/defender": []}
        assert STRENGTH.assume_knowing(request, ["/defender"])["defender"]["defenses"] == [
            "mind-blank"]
        odds = odds_of(STRENGTH, request, ["/defender"])
        assert odds == dict(STRENGTH.odds(request)) and odds["table"] == "defenseless"


def pool_mind(cid: str, **more: Any) -> JSON:
    return {"id": cid, "name": cid.title(), "hit_dice": 3, "die": 6, "psionic": True,
            "attacks": ["psionic-wave"], "defenses": [], **more}


def test_power_pool_every_mind_a_wave_strikes_and_a_controller_struck_in_a_puppets_place() -> None:
    """RULES.md §3: a psionic wave's targets each defend with their own mode; an attack on
    a controlled creature strikes its controller (seed 001)."""
    request = {"attacker": pool_mind("ixi"),
               "defender": pool_mind("tor", controlled_by="bel"),
               "defenders": [pool_mind("mara")],
               "controller": pool_mind("bel", controlling=[
                   {"id": "tor", "kept_by": "action"}]),
               "attack": {"mode": "psionic-wave"},
               "defense": {"mode": "blank-mind"},
               "defenses": {"mara": {"mode": "barrier-mantra"}}}
    assert POOL.defending_places(request) == {
        "/defender": ["blank-mind"], "/defenders/0": ["barrier-mantra"],
        "/controller": ["blank-mind"]}
    # one of /controllers may be struck in the place of the mind struck first as well
    listed = {k: v for k, v in request.items() if k != "controller"}
    listed["controllers"] = [request["controller"]]
    assert POOL.defending_places(listed)["/controllers/0"] == ["blank-mind"]
    # a creature given by name only has the id made from it
    unnamed = {**request, "defenders": [{k: v for k, v in pool_mind("mara").items()
                                         if k != "id"}]}
    assert POOL.defending_places(unnamed)["/defenders/0"] == ["barrier-mantra"]
    with pytest.raises(RulesViolation) as err:
        POOL.odds(request)
    assert err.value.rule == "mode-not-known"
    assumed = POOL.assume_knowing(request, ["/defenders/0", "/controller"])
    assert assumed["defenders"][0]["defenses"] == ["barrier-mantra"]
    assert assumed["controller"]["defenses"] == ["blank-mind"]
    knows = {**request, "defenders": [{**pool_mind("mara"), "defenses": ["barrier-mantra"]}],
             "controller": {**request["controller"], "defenses": ["blank-mind"]}}
    assert dict(POOL.odds(assumed)) == dict(POOL.odds(knows))


def test_power_pool_a_creature_without_a_pool_stays_as_it_is() -> None:
    request = {"attacker": pool_mind("ixi"), "defender": pool_mind("tor", psionic=False),
               "attack": {"mode": "psionic-wave"}, "defense": {"mode": "blank-mind"}}
    with pytest.raises(RulesViolation) as err:
        odds_of(POOL, request, ["/defender"])
    assert err.value.rule == "mode-not-known"


def test_a_system_that_names_no_defending_mind_assumes_nothing() -> None:
    """A plugin's system keeps the default: every place is refused, naming the system."""
    request = {"attacker": {"id": "a", "name": "A"}, "defender": {"id": "b", "name": "B"},
               "attack": {"call": "heads"}}
    with pytest.raises(InvalidInput) as err:
        COIN_DUEL.assume_knowing(request, ["/defender"])
    assert [p.path for p in err.value.problems] == ["/assume_known/0"]
    assert "none: coin-duel assumes nothing" in err.value.problems[0].message


def test_revised_2e_a_mind_holding_exactly_the_cost_is_assumed_as_it_is() -> None:
    """Only a mind holding fewer PSPs than the defense costs is given more: one holding
    exactly the cost pays it as it stands, so it is assumed with the PSPs it has."""
    cost = REVISED.tables.defense_cost(TOWER)
    exact = REVISED.assume_knowing(revised({**FENKA, "psp": cost}), ["/defender"])
    assert (exact["defender"]["psp"], exact["defender"]["psp_max"]) == (cost, 30)


def test_power_pool_a_controller_given_the_same_mode_twice_has_it_once() -> None:
    """A controller struck in its puppet's place may defend by /defense and by its own
    /defenses entry: the same mode given both ways is one mode to know."""
    request = {"attacker": pool_mind("ixi"),
               "defender": pool_mind("tor", controlled_by="bel"),
               "controllers": [pool_mind("bel", controlling=[
                   {"id": "tor", "kept_by": "action"}])],
               "attack": {"mode": "mental-stab"},
               "defense": {"mode": "blank-mind"},
               "defenses": {"bel": {"mode": "blank-mind"}}}
    assert POOL.defending_places(request)["/controllers/0"] == ["blank-mind"]
