"""power-pool: one exchange, every mode, control (RULES.md §3, seed 001_e8815498f41c4da8).

Each test names the rule it checks and quotes the seed sentence it comes from.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.dice import SuppliedDice
from engine.errors import (
    DiceNeeded,
    InvalidCombatant,
    InvalidInput,
    LimitExceeded,
    RulesViolation,
)
from engine.power_pool import SYSTEM, PowerPoolSystem
from engine.power_pool import control as ctl

from .test_power_pool_helpers import exchange, mundane, psionic

ENDING = ctl.ending_with_control(SYSTEM.tables)


def after(res: Any, cid: str) -> dict[str, Any]:
    return res.changes()[cid].to_json()["after"]  # type: ignore[no-any-return]


# -- step 4: each side rolls its pool; higher total wins; ties to the defender ------------

def test_higher_total_wins_and_defender_comes_under_control() -> None:
    """Seed: "Each side rolls their current power pool ... the higher total winning" and
    "If the attacker wins, the defender comes under their psionic control"."""
    res = exchange(psionic("Ulcen", 3, 6), psionic("Fenka", 2, 6), {"mode": "mental-stab"},
                   dice={"attack": [5, 5, 5], "defense": [6, 6]})
    out = res.to_json()
    assert out["attack_total"] == 15 and out["defense_total"] == 12
    assert out["winner"] == "attacker" and out["controlled"] is True
    assert out["blank_mind"] is None  # no Blank Mind, no saves
    fenka = after(res, "fenka")
    assert fenka["controlled_by"] == "ulcen" and fenka["pool"] == 0
    assert after(res, "ulcen")["controlling"] == [{"id": "fenka", "kept_by": "action",
                                                   "wave": None}]
    assert [r["purpose"] for r in out["rolls"]] == ["attack"] * 3 + ["defense"] * 2


def test_ties_go_to_the_defender() -> None:
    """RULES.md §3.2 step 4: "Ties go to the defender (H-PP-TIE)"."""
    res = exchange(psionic("A", 2, 4), psionic("B", 2, 4),
                   {"mode": "personality-invasion"}, dice={"attack": [3, 3], "defense": [2, 4]})
    out = res.to_json()
    assert out["attack_total"] == out["defense_total"] == 6
    assert out["winner"] == "defender" and out["tie"] is True and not out["controlled"]


def test_tie_rule_switched_gives_ties_to_the_attacker() -> None:
    """H-PP-TIE is a house default and can be switched per call."""
    res = exchange(psionic("A", 2, 4), psionic("B", 2, 4), {"mode": "personality-invasion"},
                   dice={"attack": [3, 3], "defense": [2, 4]}, options={"H-PP-TIE": "attacker"})
    assert res.to_json()["winner"] == "attacker"


def test_partial_pool_rolls_only_the_declared_dice() -> None:
    """Seed: "They may choose to only roll a portion of their available power pool"."""
    res = exchange(psionic("A", 5, 6), psionic("B", 4, 6), {"mode": "mental-stab", "pool_dice": 2},
                   {"pool_dice": 1}, dice={"attack": [1, 1], "defense": [1]})
    purposes = [r.purpose for r in res.rolls]
    assert purposes == ["attack", "attack", "defense"]
    assert after(res, "a")["pool"] == 5  # rolling does not expend dice


def test_pool_dice_above_the_pool_is_refused() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 6), psionic("B"), {"mode": "mental-stab", "pool_dice": 3})
    assert err.value.rule == "pool-dice-exceed-pool"


def test_a_side_may_roll_its_whole_pool_by_count() -> None:
    """Seed: a side rolls "their current power pool": pool_dice equal to the pool is the
    whole pool, not more than it."""
    res = exchange(psionic("A", 3, 6), psionic("B", 2, 6), {"mode": "mental-stab", "pool_dice": 3},
                   {"pool_dice": 2}, dice={"attack": [1, 1, 1], "defense": [2, 2]})
    out = res.to_json()
    assert (out["attack"]["dice"], out["attack_total"]) == (3, 3)
    assert out["defense"]["members"][0]["dice"] == 2 and out["defense_total"] == 4


def test_joining_dazes_the_attacker_and_expends_no_dice() -> None:
    """Seed: "Creatures attacking in psionic combat are dazed during the round" and
    "Participating in psionic combat ... does not cause dice used in it to be expended"."""
    res = exchange(psionic("A", 3, 6), psionic("B", 1, 4), {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1]})
    a = after(res, "a")
    assert "dazed" in a["conditions"] and a["pool"] == 3


# -- step 5: the defender wins -------------------------------------------------------------

def test_defender_win_costs_attacker_a_die_and_stuns_it() -> None:
    """Seed: "If the defender wins, the attacker loses a die from their power pool and is
    stunned for one round"."""
    res = exchange(psionic("A", 3, 6), psionic("B", 3, 6), {"mode": "mental-stab"},
                   dice={"attack": [1, 1, 1], "defense": [2, 2, 2]})
    a = after(res, "a")
    assert res.to_json()["winner"] == "defender"
    assert a["pool"] == 2 and "stunned" in a["conditions"]
    assert after(res, "b")["controlled_by"] is None


def test_defender_win_ends_all_control_the_attacker_holds() -> None:
    """Seed: "Any psionic control the attacker is exerting over other creatures ceases
    immediately." The die kept for one link returns before the lost die is taken."""
    attacker = psionic("A", 4, 6, pool=3,
                       dedicated=[{"purpose": "control", "target": "p1"}],
                       controlling=[{"id": "p1", "kept_by": "die"},
                                    {"id": "p2", "kept_by": "action"}])
    p1 = mundane("P1", controlled_by="a", conditions=["possessed", "frightened"])
    p2 = psionic("P2", controlled_by="a")
    res = exchange(attacker, psionic("B", 3, 6), {"mode": "mental-stab"},
                   dice={"attack": [1, 1, 1], "defense": [2, 2, 2]}, puppets=[p1, p2])
    a = after(res, "a")
    assert a["controlling"] == [] and a["dedicated"] == []
    assert a["pool"] == 3  # 3 + 1 returned - 1 lost
    freed = {c.id: c.to_json()["after"] for c in res.others}
    assert freed["p1"]["controlled_by"] is None and freed["p2"]["controlled_by"] is None
    # each change starts from the puppet's sheet as given
    assert [c.to_json()["before"]["controlled_by"] for c in res.others] == ["a", "a"]
    # possession lasts only with control; Fear from Subversion outlasts it
    assert freed["p1"]["conditions"] == ["frightened"]
    assert [e.combatant for e in res.events if e.type == "control-ended"] == ["p1", "p2"]


# -- control chains ---------------------------------------------------------------------------

def test_attack_on_a_controlled_creature_strikes_its_controller() -> None:
    """Seed: "Psionically attacking a creature under psionic control automatically attacks
    the controller, even if they cannot be seen". A controls B; C attacks B, strikes A."""
    a = psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 3, 6, controlled_by="a")
    c = psionic("C", 3, 6)
    res = exchange(c, b, {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1, 1]}, controller=a)
    out = res.to_json()
    assert out["defender"]["id"] == "a"
    assert out["redirected"] == [{"from": "b", "to": "a"}]
    assert res.summary.startswith("C strikes at B with Mental Stab. B is under A's control, "
                                  "so the attack strikes A instead.")
    assert after(res, "a")["controlled_by"] == "c"
    # A fell under control: the control it held ends, so B goes free
    assert after(res, "b")["controlled_by"] is None
    assert after(res, "c")["controlling"] == [{"id": "a", "kept_by": "action", "wave": None}]


@pytest.mark.parametrize("more", [{}, {"defenders": [psionic("A")]}])
def test_an_exchange_whose_target_is_the_attacker_is_refused_as_one_creature_given_twice(
        more: dict[str, Any]) -> None:
    """Seed 001: the attacker "picks a target"; a creature attacking itself is no
    exchange. A target with the attacker's id is that creature given again, refused at
    its place before any rule is read (an encounter says `target-self`)."""
    attack = {"mode": "psionic-wave"} if more else {"mode": "mental-stab"}
    target = psionic("B") if more else psionic("A")
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), target, attack, **more)
    place = "/defenders/0/name" if more else "/defender/name"
    assert [(p.path, p.message) for p in err.value.problems] == [(
        place, 'the id made from this name, "a", is already used at /attacker: give each '
               "creature an id of its own")]


def test_attack_on_controlled_creature_needs_the_controller() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("C"), psionic("B", controlled_by="a"), {"mode": "mental-stab"})
    assert err.value.rule == "controller-required"
    # the controller's id is quoted as JSON, as every id a refusal names (audit)
    assert err.value.detail == ('B is under the psionic control of "a", so the attack '
                                "strikes the controller; give it in /controller")


@pytest.mark.parametrize("place", ["allies", "defenders"])
def test_a_controller_whose_sheet_in_controller_shows_it_under_control_is_refused(
        place: str) -> None:
    """RULES.md §3.4: a creature under control holds no control (its own ended when it
    fell under it). X's first sheet (an ally, or a wave's target) lists B, so the links
    read both ways hold; its sheet in /controller, the one struck in B's place, shows it
    controlled by Z: that creature cannot be B's controller."""
    x = psionic("X", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 2, 6, controlled_by="x", pool=0)
    under = psionic("X", 2, 6, controlled_by="z", pool=0)
    more: dict[str, Any] = {"controller": under, place: [x]}
    if place == "allies":
        attack, defense = {"mode": "mental-stab"}, {"mode": "imagination-swarm"}
        more["defenses"] = {"x": {"mode": "imagination-swarm"}}
    else:
        attack, defense = {"mode": "psionic-wave"}, None
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6), b, attack, defense,
                 dice={"attack": [6, 6, 6], "defense": [1, 1]}, **more)
    assert (err.value.rule, err.value.combatant, err.value.detail) == (
        "controller-required", "x",
        "the controller X is itself under control and cannot hold control")


def test_a_wave_at_two_puppets_of_one_controller_strikes_it_once() -> None:
    """Seed: attacking a creature under psionic control "automatically attacks the
    controller": a Psionic Wave at two of A's puppets strikes A, once (RULES.md §3.3: a
    group rolls every member's dice, and A is one member)."""
    a = psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action", "wave": "w"},
                                        {"id": "c", "kept_by": "action", "wave": "w"}])
    res = exchange(psionic("X", 3, 6), psionic("B", controlled_by="a"), {"mode": "psionic-wave"},
                   defenders=[psionic("C", controlled_by="a")], controller=a,
                   dice={"attack": [6, 6, 6], "defense": [1, 1]})
    out = res.to_json()
    assert [m["id"] for m in out["defense"]["members"]] == ["a"]
    assert out["defense_total"] == 2
    assert out["redirected"] == [{"from": "b", "to": "a"}, {"from": "c", "to": "a"}]
    assert after(res, "x")["controlling"] == [{"id": "a", "kept_by": "action", "wave": "wave-a"}]


def test_an_attack_on_the_attacker_s_own_puppet_is_refused() -> None:
    """Seed: attacking a creature under psionic control "automatically attacks the
    controller": an attack on one's own puppet would strike oneself."""
    a = psionic("A", 2, 6, controlling=[{"id": "p", "kept_by": "action"}])
    with pytest.raises(RulesViolation) as err:
        exchange(a, psionic("P", controlled_by="a"), {"mode": "mental-stab"})
    assert err.value.rule == "target-own-puppet" and err.value.combatant == "p"


def test_falling_under_control_expends_maintained_powers() -> None:
    """Seed: "Any psionic powers the creature is maintaining cease when psionic control is
    established over it, and dice used to maintain them are expended"."""
    b = psionic("B", 4, 4, pool=2, dedicated=[{"purpose": "levitation"},
                                              {"purpose": "clairvoyance"}])
    res = exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1, 1]})
    bb = after(res, "b")
    assert bb["dedicated"] == [] and bb["pool"] == 0
    assert any(e.type == "dice-expended" and e.data["dice"] == 2 for e in res.events)


def test_falling_under_control_with_no_power_maintained_expends_nothing() -> None:
    """Seed: the dice "used to maintain" powers are expended: with none maintained, no
    die is, and no event says so."""
    res = exchange(psionic("A", 3, 6), psionic("B", 2, 4), {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1, 1]})
    assert after(res, "b")["controlled_by"] == "a"
    assert [e.type for e in res.events if e.type == "dice-expended"] == []


def test_a_controller_falling_under_control_sets_its_puppet_free() -> None:
    """Seed: "Any powers being maintained by the controlled creature end" (README: "any
    control it held ends"); the event says why: its controller was overcome."""
    b = psionic("B", 2, 4, controlling=[{"id": "p", "kept_by": "action"}])
    res = exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1, 1]},
                   puppets=[psionic("P", 1, 4, controlled_by="b")])
    ended = [e.to_json() for e in res.events if e.type == "control-ended"]
    assert ended == [{"type": "control-ended", "combatant": "p", "controller": "b",
                      "reason": "controller-overcome"}]
    assert res.others[0].to_json()["after"]["controlled_by"] is None


@pytest.mark.parametrize(("puppets", "field"), [
    ([{"id": "b", "name": "B2", "controlled_by": "a"}], "/puppets/0/id"),
    ([{"name": "P", "controlled_by": "b"}, {"name": "P", "controlled_by": "b"}],
     "/puppets/1/name"),
])
def test_a_puppet_given_twice_or_taking_part_is_refused_at_its_id(
        puppets: list[dict[str, Any]], field: str) -> None:
    """docs/API.md: ``puppets`` are the creatures either side controls, to be set free
    when that control ends, given once each, as ``exchange.end_round`` holds them. A
    second sheet of the defender there, or of another puppet, is refused at the field
    that names it, not dropped without a word."""
    b = psionic("B", 2, 4, controlling=[{"id": "p", "kept_by": "action"}])
    sheets = [psionic(p.pop("name"), 1, 4, **p) for p in puppets]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"},
                 dice={"attack": [6, 6, 6], "defense": [1, 1]}, puppets=sheets)
    [problem] = err.value.problems
    assert problem.path == field
    assert "is given already" in problem.message


@pytest.mark.parametrize(("given", "field"), [
    # a second sheet of the controller under another name, which the summary called it by
    ({"id": "a", "name": "Zed"}, "/puppets/0/id"),
    # one saying it is under another's control, against the sheet in /controller
    ({"name": "A", "controlled_by": "x"}, "/puppets/0/name"),
])
def test_a_puppet_given_with_a_controller_s_id_is_refused_at_its_id(
        given: dict[str, Any], field: str) -> None:
    """docs/API.md: ``puppets`` are the creatures either side controls, each given once.
    A sheet there with the id of the controller given in ``controller`` (the creature the
    attack strikes in its puppet's place) is a second sheet of it: refused at the field
    that names it, as a second sheet of a creature taking part is, not taken without a
    word."""
    controller = psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("X", 1, 6), psionic("B", controlled_by="a"), {"mode": "mental-stab"},
                 controller=controller, dice={"attack": [6], "defense": [1, 1]},
                 puppets=[{**psionic("A", 1, 4), **given}])
    [problem] = err.value.problems
    assert problem.path == field
    assert problem.message.endswith(
        'is given already: a creature given as a controller here is not among the '
        'puppets, and each puppet is given once')


def test_a_controller_given_again_with_another_sheet_is_refused_at_its_id() -> None:
    """RULES.md §3.4: control links are read on the sheets given. A controller given
    twice in /controllers with two sheets that differ was read for its links on the
    first and struck on the last: with a stale second sheet of C (Zed, holding nothing),
    A took C under control and B was left under C's control. The second sheet is now
    refused at its id (or the name the id was made from)."""
    c = psionic("C", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 2, 6, controlled_by="c")
    dice = {"attack": [6, 6, 6], "defense": [1, 1]}
    for zed, field, ident in (({**psionic("Zed", 1, 4), "id": "c"}, "/controllers/1/id",
                               'id "c"'),
                              (psionic("C", 1, 4), "/controllers/1/name",
                               'the id made from this name, "c",')):
        with pytest.raises(InvalidInput) as err:
            exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"}, controllers=[c, zed],
                     dice=dice)
        [problem] = err.value.problems
        assert (problem.path, problem.message) == (
            field, f"{ident} is given already at /controllers/0 with another sheet: a "
            "controller given more than once is given with the same sheet")
    # the same sheet again is the same creature: a wave on two puppets of C, as an
    # encounter gives it (and with assume_known naming its places, its odds)
    d = psionic("D", 1, 6, controlled_by="c")
    c2 = psionic("C", 2, 6, defenses=[], controlling=[{"id": "b", "kept_by": "action"},
                                                      {"id": "d", "kept_by": "action"}])
    wave = {"attacker": psionic("A", 3, 6), "defender": b, "defenders": [d],
            "attack": {"mode": "psionic-wave"}, "defense": {"mode": "blank-mind"},
            "controllers": [c2, c2]}
    res = SYSTEM.resolve({**wave, "defense": None}, SuppliedDice(dice))
    assert [m["id"] for m in res.to_json()["defense"]["members"]] == ["c"]
    assert {ch.id: ch.after["controlled_by"] for ch in res.changes().values()} == {
        "a": None, "b": None, "c": "a", "d": None}
    SYSTEM.odds(SYSTEM.assume_knowing(wave, ["/controllers/0", "/controllers/1"]))
    # naming one of its places names them all: it knows blank-mind in both
    known = SYSTEM.assume_knowing(wave, ["/controllers/0"])
    assert known["controllers"][0] == known["controllers"][1]
    assert known["controllers"][1]["defenses"] == ["blank-mind"]
    SYSTEM.odds(known)
    # a controller that is a target too is given with the same sheet there (below)
    odds = SYSTEM.odds(SYSTEM.assume_knowing(
        {**wave, "defenders": [c], "controllers": [c]}, ["/defenders/0", "/controllers/0"]))
    assert odds["outcomes"]["defender"] > 0


@pytest.mark.parametrize("puppet_first", [True, False])
@pytest.mark.parametrize(("other", "field", "ident", "differ"), [
    # C's sheet as controller from before it took B: with it struck, A took C under
    # control and B was left under the control of C, itself under A's
    (psionic("C", 2, 6), "/controllers/0/name", 'the id made from this name, "c",',
     "differing in its controlling"),
    ({**psionic("Cee", 2, 6, pool=1, controlling=[{"id": "b", "kept_by": "action"}]),
      "id": "c"}, "/controllers/0/id", 'id "c"', "differing in its name and pool"),
])
def test_a_controller_that_is_a_target_too_is_given_with_one_sheet(
        puppet_first: bool, other: dict[str, Any], field: str, ident: str,
        differ: str) -> None:
    """RULES.md §3.4: control links are read on the sheets given. A psionic wave at B and
    at its controller C gives C twice, as a target and as B's controller: two sheets that
    differ were read for the links on the target's and struck on whichever came first,
    so a stale one left B under the control of a C that A took. A sheet there that
    differs is refused at the controller's id (or the name the id was made from), naming
    what differs."""
    c = psionic("C", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 2, 6, controlled_by="c")
    targets = [b, c] if puppet_first else [c, b]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6), targets[0], {"mode": "psionic-wave"},
                 defenders=targets[1:], controllers=[other],
                 dice={"attack": [6, 6, 6], "defense": [1, 1]})
    at = "/defenders/0" if puppet_first else "/defender"
    assert [(p.path, p.message) for p in err.value.problems] == [(
        field, f"{ident} is given already at {at} with another sheet, {differ}: a "
        "controller that is a target too is given with the same sheet in both places, "
        "its defenses too")]


@pytest.mark.parametrize("puppet_first", [True, False])
def test_sheets_of_one_controller_listing_its_modes_in_another_order_are_one_sheet(
        puppet_first: bool) -> None:
    """RULES.md §3.4: a controller's attacks, defenses and conditions are sets (each
    item once). Two sheets of C listing them in other orders are the same sheet: a wave
    at B and at its controller C, or at B and D both under C, is taken (it was refused
    as "differing in its attacks and defenses") and resolved as with one list."""
    c = psionic("C", 2, 6, controlling=[{"id": "b", "kept_by": "action"},
                                        {"id": "d", "kept_by": "action"}],
                conditions=["frightened", "possessed"])
    again = {**c, "attacks": c["attacks"][::-1], "defenses": c["defenses"][::-1],
             "conditions": c["conditions"][::-1]}
    b = psionic("B", 2, 6, controlled_by="c")
    d = psionic("D", 1, 6, controlled_by="c")
    dice = {"attack": [6, 6, 6], "defense": [1, 1]}

    def controlled_after(**more: Any) -> dict[str, Any]:
        res = exchange(psionic("A", 3, 6), b if puppet_first else c,
                       {"mode": "psionic-wave"}, None, dice=dict(dice),
                       **more)
        return {ch.id: ch.after["controlled_by"] for ch in res.changes().values()}

    as_target = controlled_after(defenders=[c if puppet_first else b], controllers=[again])
    assert as_target == controlled_after(defenders=[c if puppet_first else b],
                                         controllers=[c])
    assert as_target["c"] == "a"
    if puppet_first:
        twice = controlled_after(defenders=[d], controllers=[c, again])
        assert twice == controlled_after(defenders=[d], controllers=[c, c])
        assert twice["c"] == "a"


@pytest.mark.parametrize("puppet_first", [True, False])
@pytest.mark.parametrize("given_id", [False, True])
def test_a_controller_that_is_a_target_too_knows_the_same_defenses_in_both_places(
        puppet_first: bool, given_id: bool) -> None:
    """RULES.md §3.4: a wave at B and at its controller C strikes C once, on the sheet
    given first. Two sheets of C that differed in their defenses alone were taken, so
    the defense C raises was taken or refused by the order of the targets: not knowing
    blank-mind as a target but knowing it as B's controller, C defended with it when B
    came first and was refused ("does not know blank-mind") when C came first. Such a
    sheet is now refused at the controller's id (or name) whichever comes first."""
    ident = {"id": "c"} if given_id else {}
    c = psionic("C", 2, 6, defenses=[], controlling=[{"id": "b", "kept_by": "action"}],
                **ident)
    b = psionic("B", 2, 6, controlled_by="c")
    targets = [b, c] if puppet_first else [c, b]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6), targets[0], {"mode": "psionic-wave"},
                 {"mode": "blank-mind"}, defenders=targets[1:],
                 controllers=[{**c, "defenses": ["blank-mind"]}],
                 options={"H-PP-BLANK-SAVE": 2},
                 dice={"save": [20], "attack": [6, 6, 6], "defense": [1, 1]})
    at = "/defenders/0" if puppet_first else "/defender"
    field, who = (("/controllers/0/id", 'id "c"') if given_id else
                  ("/controllers/0/name", 'the id made from this name, "c",'))
    assert [(p.path, p.message) for p in err.value.problems] == [(
        field, f"{who} is given already at {at} with another sheet, differing in its "
        "defenses: a controller that is a target too is given with the same sheet in both "
        "places, its defenses too")]


@pytest.mark.parametrize("puppet_first", [True, False])
def test_assume_known_gives_a_controller_that_is_a_target_too_one_sheet(
        puppet_first: bool) -> None:
    """exchange.odds' assume_known, for a player who may not see C's sheet: naming any
    place of a controller that is a target too makes it know, in every place it is given,
    the defenses the request gives it in any of them, so its sheets stay one and the
    odds are those of the request giving that knowing sheet in both places."""
    c = psionic("C", 2, 6, defenses=[], controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 2, 6, controlled_by="c")
    targets = [b, c] if puppet_first else [c, b]
    wave = {"attacker": psionic("A", 3, 6), "defender": targets[0],
            "defenders": targets[1:], "attack": {"mode": "psionic-wave"},
            "defense": {"mode": "blank-mind"}, "controllers": [c]}
    where = "/defenders/0" if puppet_first else "/defender"
    knowing = SYSTEM.combatant({**c, "defenses": ["blank-mind"]})
    placed = [knowing if t is c else t for t in targets]
    expected = dict(SYSTEM.odds({**wave, "defender": placed[0], "defenders": placed[1:],
                                 "controllers": [knowing]}))
    assert expected["outcomes"]["defender"] > 0
    for places in ([where], ["/controllers/0"], [where, "/controllers/0"]):
        known = SYSTEM.assume_knowing(wave, places)
        assert dict(SYSTEM.odds(known)) == expected
        as_target = known["defenders"][0] if puppet_first else known["defender"]
        assert as_target == known["controllers"][0] == knowing
    # its own defense, as a target struck after another, is known as controller too
    x = psionic("X", 2, 6, defenses=["barrier-mantra"])
    wave = {**wave, "defender": x, "defenders": targets, "defense": {"mode": "barrier-mantra"},
            "defenses": {"c": {"mode": "blank-mind"}}}
    knowing = SYSTEM.combatant({**c, "defenses": ["blank-mind", "barrier-mantra"]})
    known = SYSTEM.assume_knowing(wave, ["/defenders/" + ("1" if puppet_first else "0")])
    assert known["defenders"][1 if puppet_first else 0] == known["controllers"][0] == knowing
    assert dict(SYSTEM.odds(known)) == dict(SYSTEM.odds(
        {**wave, "defenders": [knowing if t is c else t for t in targets],
         "controllers": [knowing]}))


def test_control_kept_by_a_die_dedicates_one() -> None:
    """Seed: control "may be maintained either by dedicating a die from the controller's
    current power pool to it, or by the controller using an action each round"."""
    res = exchange(psionic("A", 3, 6), psionic("B", 1, 4),
                   {"mode": "mental-stab", "keep_by": "die"},
                   dice={"attack": [6, 6, 6], "defense": [1]})
    a = after(res, "a")
    assert a["pool"] == 2 and a["dedicated"] == [{"purpose": "control", "target": "b"}]
    assert a["controlling"][0]["kept_by"] == "die"
    SYSTEM.combatant(a)  # the after-state is a valid combatant


# -- attack modes ---------------------------------------------------------------------------

@pytest.mark.parametrize("die,upgraded", [(4, 8), (6, 10), (8, 12), (10, 20), (12, 20),
                                          (20, 20)])
def test_mental_stab_upgrades_attacker_die_two_steps(die: int, upgraded: int) -> None:
    """Seed: "The die type used by the attacker is upgraded by two using the following scale.
    1d4 – 1d6 – 1d8 – 1d10 – 1d12 – 1d20" (upgrades stop at d20)."""
    res = exchange(psionic("A", 1, die), psionic("B", 1, 4), {"mode": "mental-stab"},
                   dice={"attack": [1], "defense": [1]})
    assert res.rolls[0].sides == upgraded
    assert res.rolls[1].sides == 4


def test_personality_invasion_possesses_the_target() -> None:
    """Seed: "Upon a successful mental attack the target is mentally possessed"."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "personality-invasion"},
                   dice={"attack": [6, 6], "defense": [1]})
    b = after(res, "b")
    assert "possessed" in b["conditions"] and b["controlled_by"] == "a"
    assert {"effect": "possessed", "combatant": "b", "outlasts_control": False} in \
        res.to_json()["effects"]
    # possession ends with the control
    _, freed, _ = ctl.release(after(res, "a"), "b", {"b": b}, ENDING)
    assert "possessed" not in freed["b"]["conditions"] and freed["b"]["controlled_by"] is None


def test_subconscious_subversion_frightens_beyond_control() -> None:
    """Seed: "the attacker may choose to frighten the opponent ... This effect persists even
    after the attacker ceases psionic control"."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "subconscious-subversion"},
                   dice={"attack": [6, 6], "defense": [1]})
    b = after(res, "b")
    assert "frightened" in b["conditions"]
    _, freed, _ = ctl.release(after(res, "a"), "b", {"b": b}, ENDING)
    assert "frightened" in freed["b"]["conditions"]


def test_synaptic_overload_damage_is_the_defenders_own_dice() -> None:
    """Seed: "the defender takes damage equal to the sum of the dice it rolled to defend
    itself" (the spell bonus is not a die)."""
    res = exchange(psionic("A", 3, 8), psionic("B", 2, 6, hp=20, spell_levels=[3]),
                   {"mode": "synaptic-overload"}, {"sacrifice": [3]},
                   dice={"attack": [8, 8, 8], "defense": [4, 5]})
    assert res.to_json()["damage"] == 9
    assert after(res, "b")["hp"] == 11


def test_synaptic_overload_does_nothing_when_the_attack_fails() -> None:
    res = exchange(psionic("A", 1, 4), psionic("B", 2, 6, hp=20), {"mode": "synaptic-overload"},
                   dice={"attack": [1], "defense": [4, 5]})
    assert res.to_json()["damage"] == 0 and after(res, "b")["hp"] == 20


def test_psionic_wave_attacks_several_as_one_group() -> None:
    """Seed: "The attacker may attack multiple opponents simultaneously. The defenders count
    as conducting a group psionic operation." One action keeps all; all released together."""
    res = exchange(psionic("A", 4, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("C", 1, 4), mundane("D", 1, 6)],
                   dice={"attack": [8, 8, 8, 8], "defense": [4, 4, 6]})
    out = res.to_json()
    assert out["defense_total"] == 14 and out["winner"] == "attacker"
    assert [m["role"] for m in out["defense"]["members"]] == ["defender", "wave-target",
                                                              "wave-target"]
    a = after(res, "a")
    assert {e["id"] for e in a["controlling"]} == {"b", "c", "d"}
    assert len({e["wave"] for e in a["controlling"]}) == 1
    states = {cid: after(res, cid) for cid in "bcd"}
    assert all(s["controlled_by"] == "a" for s in states.values())
    _, freed, _ = ctl.release(a, "c", states, ENDING)
    assert set(freed) == {"b", "c", "d"}


def test_psionic_wave_kept_by_dice_takes_a_die_for_each_creature() -> None:
    """Seed 001: control is kept "by dedicating a die from the controller's current power
    pool to it"; for a wave only the action is shared ("a single action to maintain
    psionic control of all of the defenders"; RULES.md 3.4: "kept by one action for
    all"). Three creatures held by dice take three; a pool of two cannot hold three, so
    the attack is refused before any die is rolled."""
    wave = {"mode": "psionic-wave", "keep_by": "die"}
    res = exchange(psionic("A", 4, 8), psionic("B", 1, 4), wave,
                   defenders=[psionic("C", 1, 4), mundane("D", 1, 6)],
                   dice={"attack": [8, 8, 8, 8], "defense": [4, 4, 6]})
    a = after(res, "a")
    key = a["controlling"][0]["wave"]
    assert {e["kept_by"] for e in a["controlling"]} == {"die"}
    assert a["pool"] == 1 and a["dedicated"] == [{"purpose": "control", "target": key}] * 3
    assert "(kept by a dedicated die each)" in res.summary
    freed, _, _ = ctl.release(a, "d", {}, ENDING)
    assert (freed["pool"], freed["dedicated"]) == (4, [])
    # a mind using Barrier Mantra is stunned instead of held: it needs no die
    res = exchange(psionic("A", 2, 8), psionic("B", 1, 4), wave, {"mode": "barrier-mantra"},
                   defenders=[psionic("C", 1, 4), mundane("D", 1, 6)],
                   dice={"attack": [8, 8], "defense": [1, 1, 1]})
    assert [e["id"] for e in after(res, "a")["controlling"]] == ["c", "d"]
    assert after(res, "a")["pool"] == 0
    # a pool of three holds three, its last die included
    res = exchange(psionic("A", 3, 8), psionic("B", 1, 4), wave,
                   defenders=[psionic("C", 1, 4), mundane("D", 1, 6)],
                   dice={"attack": [8, 8, 8], "defense": [4, 4, 6]})
    assert after(res, "a")["pool"] == 0
    assert {e["kept_by"] for e in after(res, "a")["controlling"]} == {"die"}
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 8), psionic("B", 1, 4), wave,
                 defenders=[psionic("C", 1, 4), mundane("D", 1, 6)])
    assert err.value.rule == "no-die-to-dedicate" and err.value.combatant == "a"
    with pytest.raises(InvalidCombatant) as bad:
        SYSTEM.combatant(psionic("A", 4, 8, pool=3, controlling=[
            {"id": "b", "kept_by": "die", "wave": "w"},
            {"id": "c", "kept_by": "die", "wave": "w"}],
            dedicated=[{"purpose": "control", "target": "w"}]))
    assert "1 die dedicated with purpose 'control', 2 needed" in str(bad.value)


def test_a_new_wave_s_link_is_named_apart_from_the_links_held() -> None:
    """RULES.md 3.4: a wave's creatures are one link, released all together: a new wave
    whose name is taken, and taken again with a count, gets the next count."""
    a = psionic("A", 4, 6, controlling=[{"id": "c", "kept_by": "action", "wave": "wave-b"},
                                        {"id": "d", "kept_by": "action", "wave": "wave-b-2"}])
    res = exchange(a, psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("E", 1, 4)], dice={"attack": [6] * 4, "defense": [1, 1]})
    assert [e["wave"] for e in after(res, "a")["controlling"]] == [
        "wave-b", "wave-b-2", "wave-b-3", "wave-b-3"]


def test_a_creature_held_on_its_own_whose_id_is_a_wave_s_name_is_a_link_of_its_own() -> None:
    """RULES.md 3.4: a wave's creatures are one link, released all together; any other
    creature is a link of its own. A controller holding the wave "wave-b" that takes on
    its own a creature whose id is "wave-b" holds two links: the wave is named anew
    (the next count, as a new wave would be), so releasing or keeping the one leaves
    the other as it was."""
    a = psionic("A", 4, 6, controlling=[{"id": "b", "kept_by": "action", "wave": "wave-b"},
                                        {"id": "c", "kept_by": "action", "wave": "wave-b"}])
    res = exchange(a, psionic("Wave B", 1, 4), {"mode": "mental-stab", "keep_by": "die"},
                   dice={"attack": [6] * 4, "defense": [1]})
    assert after(res, "wave-b")["controlled_by"] == "a"
    held = after(res, "a")
    assert held["controlling"] == [{"id": "b", "kept_by": "action", "wave": "wave-b-2"},
                                   {"id": "c", "kept_by": "action", "wave": "wave-b-2"},
                                   {"id": "wave-b", "kept_by": "die", "wave": None}]
    assert held["dedicated"] == [{"purpose": "control", "target": "wave-b"}]
    assert SYSTEM.combatant(held) == held  # a sheet that reads back as it is
    assert ctl.links(held) == [
        {"targets": ["b", "c"], "kept_by": "action", "wave": "wave-b-2"},
        {"targets": ["wave-b"], "kept_by": "die", "wave": None}]
    let_go, _, events = ctl.release(held, "wave-b", {}, ENDING)
    assert [e.combatant for e in events] == ["wave-b"]
    assert [e["id"] for e in let_go["controlling"]] == ["b", "c"] and let_go["pool"] == 4
    by_action = ctl.keep_by(held, "wave-b", "action")
    assert [e["kept_by"] for e in by_action["controlling"]] == ["action"] * 3
    assert by_action["dedicated"] == [] and by_action["pool"] == 4
    by_dice = ctl.keep_by(held, "b", "die")
    assert [e["kept_by"] for e in by_dice["controlling"]] == ["die"] * 3
    assert by_dice["pool"] == 1 and SYSTEM.combatant(by_dice) == by_dice
    # establishing several on their own, the wave's new name passes by each of them
    both = ctl.establish(SYSTEM.combatant(a), ["wave-b", "wave-b-2"], "action", None)
    assert [e["wave"] for e in both["controlling"]] == ["wave-b-3", "wave-b-3", None, None]
    # a wave the sheet named by hand is named anew as the engine names a wave
    hand = SYSTEM.combatant(psionic("A", 4, 6, controlling=[
        {"id": "y", "kept_by": "action", "wave": "w"}, {"id": "z", "kept_by": "action",
                                                        "wave": "w"}]))
    assert [e["wave"] for e in ctl.establish(hand, ["w"], "action", None)["controlling"]] == [
        "wave-y", "wave-y", None]


def test_a_new_wave_is_named_apart_from_a_creature_held_on_its_own() -> None:
    """RULES.md 3.4: a new wave whose name is the id of a creature held on its own is
    named with the next count, so the two stay two links."""
    a = psionic("A", 4, 6, controlling=[{"id": "wave-b", "kept_by": "action"}])
    res = exchange(a, psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("E", 1, 4)], dice={"attack": [6] * 4, "defense": [1, 1]})
    assert [e["wave"] for e in after(res, "a")["controlling"]] == [None, "wave-b-2",
                                                                   "wave-b-2"]


def test_psionic_wave_group_loses_together() -> None:
    res = exchange(psionic("A", 2, 4), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("C", 1, 4)], dice={"attack": [2, 2], "defense": [3, 2]})
    assert res.to_json()["winner"] == "defender"
    assert all(after(res, c)["controlled_by"] is None for c in "bc")


def test_only_psionic_wave_takes_several_targets() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"}, defenders=[psionic("C")])
    assert err.value.rule == "one-target"


# -- defense modes ----------------------------------------------------------------------------

def test_pinnacle_of_will_upgrades_defender_die_one_step() -> None:
    """Seed: "The die type used by the defender is upgraded by one"."""
    res = exchange(psionic("A", 1, 4), psionic("B", 2, 12), {"mode": "mental-stab"},
                   {"mode": "pinnacle-of-will"}, dice={"attack": [1], "defense": [1, 1]})
    assert [r.sides for r in res.rolls] == [8, 20, 20]


def test_barrier_mantra_stuns_instead_of_control() -> None:
    """Seed: "If the defender loses ... they are stunned for one round instead of falling
    under the psionic control of the attacker"."""
    res = exchange(psionic("A", 3, 6), psionic("B", 1, 4), {"mode": "personality-invasion"},
                   {"mode": "barrier-mantra"}, dice={"attack": [6, 6, 6], "defense": [1]})
    out = res.to_json()
    b = after(res, "b")
    assert out["winner"] == "attacker" and out["controlled"] is False
    assert out["outcome"] == "attacker" and out["outcome_detail"] == "won-without-control"
    assert b["controlled_by"] is None and "stunned" in b["conditions"]
    # "for one round": this round's end and the next (README: Timers)
    assert b["condition_rounds"]["stunned"] == 2
    assert "possessed" not in b["conditions"]  # possession needs control
    assert after(res, "a")["controlling"] == []


@pytest.mark.parametrize("mode", ["synaptic-overload", "subconscious-subversion"])
def test_barrier_mantra_spares_control_but_not_effects_that_need_none(mode: str) -> None:
    """Seed: Barrier Mantra's loser is "stunned for one round instead of falling under the
    psionic control": only control is replaced, and the attack still won. So Synaptic
    Overload's "damage equal to the sum of the dice it rolled" (2 + 3) and Subversion's
    Fear, which "persists even after the attacker ceases psionic control", still land
    (tables: neither effect has requires_control)."""
    res = exchange(psionic("A", 2, 6), psionic("B", 2, 6, hp=10), {"mode": mode},
                   {"mode": "barrier-mantra"}, dice={"attack": [6, 6], "defense": [2, 3]})
    out = res.to_json()
    b = after(res, "b")
    assert out["outcome_detail"] == "won-without-control"
    assert b["controlled_by"] is None and "stunned" in b["conditions"]
    if mode == "synaptic-overload":
        assert out["damage"] == 5 and b["hp"] == 5
    else:
        assert "frightened" in b["conditions"] and out["damage"] == 0


def test_blank_mind_failed_save_fails_the_attack_and_costs_a_die() -> None:
    """Seed: "The attacker must make a saving throw. If they fail the saving throw, the
    attack automatically fails, and they lose a die from their current power pool"."""
    res = exchange(psionic("A", 3, 6, blank_mind_save=12), psionic("B", 1, 4),
                   {"mode": "mental-stab"}, {"mode": "blank-mind"},
                   dice={"save": [11], "attack": [6, 6, 6], "defense": [1]})
    out = res.to_json()
    assert out["winner"] == "defender" and out["attack_total"] is None
    assert out["outcome_detail"] == "blank-mind-save-failed"
    assert [r["purpose"] for r in out["rolls"]] == ["save"]
    assert out["unused_dice"] == {"attack": [6, 6, 6], "defense": [1]}
    assert out["defense"]["members"][0]["rolled"] is None  # no die was rolled, not a 0
    assert after(res, "a")["pool"] == 2
    # the attack had no roll, so the spells the defender would have given up are kept
    res = exchange(psionic("A", 3, 6, blank_mind_save=12), psionic("B", 1, 4, spell_levels=[3]),
                   {"mode": "mental-stab"}, {"mode": "blank-mind", "sacrifice": 3},
                   dice={"save": [11]})
    assert after(res, "b")["spell_levels"] == [3]
    assert all(e.type != "spells-sacrificed" for e in res.events)


def test_the_first_failed_blank_mind_save_ends_the_attack() -> None:
    """Seed: "If they fail the saving throw, the attack automatically fails": a wave at
    two minds using Blank Mind makes no second save after the first fails."""
    res = exchange(psionic("A", 3, 6, blank_mind_save=12), psionic("B", 1, 4),
                   {"mode": "psionic-wave"}, {"mode": "blank-mind"},
                   defenders=[psionic("C", 1, 4)], defenses={"c": {"mode": "blank-mind"}},
                   dice={"save": [11, 20]})
    out = res.to_json()
    assert out["blank_mind"] == [{"against": "b", "target": 12, "roll": 11, "success": False}]
    assert [r["purpose"] for r in out["rolls"]] == ["save"]
    assert out["unused_dice"] == {"save": [20]}


def test_blank_mind_passed_save_lets_the_contest_go_on() -> None:
    res = exchange(psionic("A", 3, 6), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "blank-mind"}, dice={"save": [15], "attack": [6, 6, 6],
                                                 "defense": [1]})
    out = res.to_json()
    assert out["blank_mind"] == [{"against": "b", "target": 15, "roll": 15, "success": True}]
    assert out["winner"] == "attacker"


def test_blank_mind_save_target_is_the_attacker_s_own_before_the_house_default() -> None:
    """blank_mind_save 12 (the attacker's own save) makes 13 a success, where the house
    default (H-PP-BLANK-SAVE 15) would fail it."""
    res = exchange(psionic("A", 3, 6, blank_mind_save=12), psionic("B", 1, 4),
                   {"mode": "mental-stab"}, {"mode": "blank-mind"},
                   dice={"save": [13], "attack": [6, 6, 6], "defense": [1]})
    out = res.to_json()
    assert out["blank_mind"] == [{"against": "b", "target": 12, "roll": 13, "success": True}]
    assert out["winner"] == "attacker"


def test_blank_mind_save_target_house_default() -> None:
    """H-PP-BLANK-SAVE: with no blank_mind_save the target is the option (default 15)."""
    res = exchange(psionic("A", 1, 6), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "blank-mind"}, dice={"save": [10], "attack": [6], "defense": [1]},
                   options={"H-PP-BLANK-SAVE": 10})
    assert res.to_json()["blank_mind"][0]["success"] is True


@pytest.mark.parametrize("condition", ["unaware", "surprised", "stunned", "asleep",
                                       "unconscious"])
def test_awareness_rule_unaware_defender_rolls_nothing(condition: str) -> None:
    """Seed: "If the defender is not aware of the attacker, is surprised, stunned, asleep,
    unconscious, etc., they may only defend themselves if they possess the Cognitive
    Labyrinth defense mode." Without it the defender rolls nothing."""
    res = exchange(psionic("A", 1, 4), psionic("B", 3, 6, conditions=[condition]),
                   {"mode": "mental-stab"}, dice={"attack": [1]})
    out = res.to_json()
    assert out["defense_total"] == 0 and out["winner"] == "attacker"


def test_awareness_rule_forbids_other_defense_modes() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", conditions=["asleep"]), {"mode": "mental-stab"},
                 {"mode": "pinnacle-of-will"})
    assert err.value.rule == "defender-unaware"


def test_an_unaware_defender_cannot_choose_how_many_dice_to_roll() -> None:
    """Seed: an unaware defender "may only defend" with Cognitive Labyrinth: without it
    it rolls nothing, so pool_dice is refused, not quietly rolled as none."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", conditions=["asleep"]), {"mode": "mental-stab"},
                 {"pool_dice": 2})
    assert err.value.rule == "defender-unaware" and err.value.combatant == "b"


@pytest.mark.parametrize(("defense", "where", "why"), [
    ({"pool_dice": 2}, "/defense/pool_dice", "no dice to roll"),
    ({"sacrifice": 1}, "/defense/sacrifice", "cannot sacrifice spells"),
])
def test_an_unaware_defender_s_refused_choice_names_its_field(
        defense: dict[str, Any], where: str, why: str) -> None:
    """An unaware defender "may only defend" with Cognitive Labyrinth (seed): the refusal
    of its pool_dice or sacrifice names that field and says why. Audit: both said it
    "cannot sacrifice spells", with no field, when only pool_dice was given."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", conditions=["asleep"], spell_levels=[1]),
                 {"mode": "mental-stab"}, defense)
    assert err.value.rule == "defender-unaware"
    assert err.value.detail.startswith(f"{where}: B is asleep: it rolls nothing")
    assert why in err.value.detail


def test_an_unaware_wave_target_s_refused_pool_dice_names_its_place() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 6), psionic("B", 2, 4), {"mode": "psionic-wave"},
                 defenders=[psionic("C", 1, 4, conditions=["stunned"])],
                 defenses={"c": {"pool_dice": 1}})
    assert err.value.detail.startswith("/defenses/c/pool_dice: C is stunned")


def test_cognitive_labyrinth_defends_while_unaware() -> None:
    """Seed: "The defender may defend even when unconscious, surprised, resting, asleep,
    dazed, etc. so long as they are not already under psionic control"."""
    res = exchange(psionic("A", 1, 4), psionic("B", 2, 6, conditions=["unconscious"]),
                   {"mode": "mental-stab"}, {"mode": "cognitive-labyrinth"},
                   dice={"attack": [8], "defense": [5, 4]})
    assert res.to_json()["defense_total"] == 9 and res.to_json()["winner"] == "defender"


def test_a_mind_under_control_never_defends_with_cognitive_labyrinth() -> None:
    """Seed: Cognitive Labyrinth defends an unaware mind "so long as they are not already
    under psionic control", and "psionically attacking a creature under psionic control
    automatically attacks the controller". A puppet asleep that knows the labyrinth
    never defends: the defense given is its controller's, which it does not know, and
    one joining as an ally is refused for being under control."""
    b = psionic("B", 2, 6, conditions=["asleep"], controlled_by="c")
    c = psionic("C", 2, 6, defenses=["pinnacle-of-will"],
                controlling=[{"id": "b", "kept_by": "action"}])
    labyrinth = {"mode": "cognitive-labyrinth"}
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"}, labyrinth, controller=c)
    assert (err.value.rule, err.value.combatant) == ("mode-not-known", "c")
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6), psionic("D"), {"mode": "psionic-wave"}, None,
                 defenders=[b], controller=c, defenses={"c": labyrinth})
    assert (err.value.rule, err.value.combatant) == ("mode-not-known", "c")
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6), psionic("D"), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[b],
                 defenses={"b": labyrinth})
    assert (err.value.rule, err.value.combatant) == ("ally-controlled", "b")


def test_a_controller_asleep_defends_its_puppet_with_cognitive_labyrinth() -> None:
    """Seed: the labyrinth defends a mind asleep that is not under control; a controller
    is not (RULES.md §3.4), so struck in its puppet's place it defends with it."""
    res = exchange(psionic("A", 1, 4), psionic("B", 2, 6, controlled_by="c"),
                   {"mode": "mental-stab"}, {"mode": "cognitive-labyrinth"},
                   controller=psionic("C", 2, 6, conditions=["asleep"], controlling=[
                       {"id": "b", "kept_by": "action"}]),
                   dice={"attack": [8], "defense": [5, 4]})
    [member] = res.to_json()["defense"]["members"]
    assert (member["id"], member["mode"], member["rolled"]) == ("c", "cognitive-labyrinth", 9)
    assert res.to_json()["winner"] == "defender"


def test_imagination_swarm_draws_non_psionic_allies_in_as_a_group() -> None:
    """Seed: "The defender may choose draw allied non-psionic creatures into the psionic
    combat. The defenders count as conducting a group psionic operation. The allies are
    dazed for one round. If the attack is still successful, then the attack affects all
    equally." H-PP-GROUP: a non-psionic ally adds one die of its hit-die type."""
    allies = [mundane("Guard", 3, 8), mundane("Dog", 1, 6)]
    res = exchange(psionic("A", 3, 8), psionic("B", 1, 4), {"mode": "subconscious-subversion"},
                   {"mode": "imagination-swarm"}, allies=allies,
                   dice={"attack": [8, 8, 8], "defense": [2, 7, 5]})
    out = res.to_json()
    assert [r["sides"] for r in out["rolls"] if r["purpose"] == "defense"] == [4, 8, 6]
    assert out["defense_total"] == 14 and out["winner"] == "attacker"
    for cid in ("b", "guard", "dog"):
        s = after(res, cid)
        assert s["controlled_by"] == "a" and "frightened" in s["conditions"]
    assert "dazed" in after(res, "guard")["conditions"]


def test_imagination_swarm_group_that_wins_protects_all() -> None:
    res = exchange(psionic("A", 2, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8)],
                   dice={"attack": [1, 1], "defense": [1, 8]})
    assert res.to_json()["winner"] == "defender"
    assert after(res, "guard")["controlled_by"] is None
    assert "dazed" in after(res, "guard")["conditions"]


def test_group_rule_switched_to_all_dice() -> None:
    """H-PP-GROUP 'all-dice': a non-psionic ally rolls its whole pool."""
    res = exchange(psionic("A", 1, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8)],
                   dice={"attack": [1], "defense": [1, 1, 1, 1]},
                   options={"H-PP-GROUP": "all-dice"})
    assert res.to_json()["defense_total"] == 4


def test_psionic_ally_joins_with_imagination_swarm() -> None:
    """Seed: "Psionically active creatures may also use this defence mode to participate in
    a psionic combat that is targeting an ally they can see." It rolls its own pool, and
    joins by its own choice: its defense is given, it is not drafted by the defender
    ("The defender may choose draw allied non-psionic creatures")."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "mental-stab"}, None,
                   allies=[psionic("Seer", 2, 6)],
                   defenses={"seer": {"mode": "imagination-swarm"}},
                   dice={"attack": [1, 1], "defense": [1, 3, 3]})
    out = res.to_json()
    assert out["defense_total"] == 7
    assert out["defense"]["members"][1]["mode"] == "imagination-swarm"
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[psionic("Seer", 2, 6)])
    assert err.value.rule == "ally-psionic" and "/defenses/seer" in err.value.detail
    # "use this defence mode to participate": another mode joins nothing
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "mental-stab"}, None,
                 allies=[psionic("Seer", 2, 6)], defenses={"seer": {"mode": "pinnacle-of-will"}})
    assert err.value.rule == "ally-needs-imagination-swarm" and err.value.combatant == "seer"


def test_non_psionic_allies_need_imagination_swarm() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"}, None,
                 allies=[mundane("Guard")])
    assert err.value.rule == "ally-needs-imagination-swarm"


@pytest.mark.parametrize(("ally", "rule"), [
    (mundane("Zombie", mindless=True), "ally-mindless"),
    (mundane("Thrall", controlled_by="x"), "ally-controlled"),
])
def test_a_mindless_or_controlled_creature_cannot_be_drawn_in(ally: dict[str, Any],
                                                              rule: str) -> None:
    """Seed: "Creatures must have minds" to take part in psionic combat, and a creature
    under psionic control is its controller's to command, not the defender's ally."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[ally])
    assert err.value.rule == rule and err.value.combatant == ally["name"].lower()


def test_in_a_wave_the_refusal_of_allies_names_the_mind_struck_first() -> None:
    """A wave's group draws allies in through the mind struck first (README: Groups).
    Audit: when another mind struck used imagination-swarm the refusal said allies are
    drawn in only by a defender using it, which that mind was."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 4, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                 {"mode": "pinnacle-of-will"}, defenders=[psionic("D", 1, 4)],
                 defenses={"d": {"mode": "imagination-swarm"}}, allies=[mundane("W")])
    assert err.value.rule == "ally-needs-imagination-swarm"
    assert err.value.detail == ("/allies/0: in a psionic wave only the mind struck first, "
                                "B, draws non-psionic allies into the group's defense, "
                                "and it does not use imagination-swarm")


def test_a_non_psionic_ally_gives_no_defense_of_its_own() -> None:
    """Only "Psionically active creatures" join by their own choice: a non-psionic one is
    drawn in, and a defense given for it is refused rather than ignored."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[mundane("Guard")],
                 defenses={"guard": {"mode": "imagination-swarm"}})
    assert err.value.rule == "ally-not-psionic" and "/defenses/guard" in err.value.detail


@pytest.mark.parametrize("key", ["b", "nobody"])
def test_a_defense_for_no_further_defender_or_ally_is_refused(key: str) -> None:
    """The mind struck first defends by /defense; /defenses names the others only, and a
    defense given for someone else is refused rather than ignored."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"},
                 defenses={key: {"mode": "pinnacle-of-will"}})
    assert err.value.problems[0].path == f"/defenses/{key}"


# -- who may fight ------------------------------------------------------------------------------

def test_mindless_target_is_immune() -> None:
    """Seed: "Constructs, unintelligent undead, and most plants are immune to psionic
    combat." """
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("Golem", mindless=True), {"mode": "mental-stab"})
    assert err.value.rule == "target-mindless"


def test_the_attackers_own_means_are_refused_before_anything_about_its_target() -> None:
    """An attack refused for the attacker's sake says so whatever it aims at: a VTT checks
    the attack this way before asking the defender for a secret choice (docs/FOUNDRY.md,
    docs/ROLL20.md). Pool dice beyond the pool, at a mindless target, is the attacker's
    refusal, naming it; so is keeping control by a die with none in the pool."""
    golem = mundane("Golem", mindless=True)
    for pool, attack, rule in (
            (3, {"mode": "mental-stab", "pool_dice": 9}, "pool-dice-exceed-pool"),
            (0, {"mode": "mental-stab", "keep_by": "die"}, "no-die-to-dedicate")):
        with pytest.raises(RulesViolation) as err:
            exchange(psionic("A", pool=pool), golem, attack)
        assert (err.value.rule, err.value.combatant) == (rule, "a")


def test_attacker_must_be_psionic_know_the_mode_and_perceive() -> None:
    """Seed: "a psionically active creature must have line of sight, or must be able to
    perceive the creature through some other means"."""
    cases = [
        (mundane("A"), {"mode": "mental-stab"}, "attacker-not-psionic"),
        (psionic("A", attacks=["psionic-wave"]), {"mode": "mental-stab"}, "mode-not-known"),
        (psionic("A"), {"mode": "mental-stab", "perceives": False}, "target-not-perceived"),
    ]
    for attacker, attack, rule in cases:
        with pytest.raises(RulesViolation) as err:
            exchange(attacker, psionic("B"), attack)
        assert err.value.rule == rule


def test_defender_must_know_its_defense_mode() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", defenses=[]), {"mode": "mental-stab"},
                 {"mode": "pinnacle-of-will"})
    assert err.value.rule == "mode-not-known"


def test_unknown_mode_id_is_invalid_input_naming_the_field() -> None:
    """An unknown mode, or one of the other kind, is refused by the request schema (made
    from the tables) at its place, before any rule reads it."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "ego-whip"})
    assert err.value.problems[0].path == "/attack/mode"
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "barrier-mantra"})
    assert [p.path for p in err.value.problems] == ["/attack/mode"]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"}, {"mode": "mental-stab"})
    assert err.value.problems[0].path.startswith("/defense")
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "psionic-wave"},
                 defenders=[psionic("C")], defenses={"c": {"mode": "mental-stab"}})
    assert [p.path for p in err.value.problems] == ["/defenses/c/mode"]


def test_no_pool_defender_rolls_its_hit_dice_without_modes() -> None:
    """H-PP-NO-POOL: "a creature with a mind but no power pool defends with its hit dice but
    no defense modes"."""
    res = exchange(psionic("A", 1, 4), mundane("Ogre", 4, 8), {"mode": "mental-stab"},
                   dice={"attack": [8], "defense": [1, 2, 3, 4]})
    assert res.to_json()["defense_total"] == 10
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("Ogre", defenses=["pinnacle-of-will"]),
                 {"mode": "mental-stab"}, {"mode": "pinnacle-of-will"})
    assert (err.value.rule, err.value.combatant) == ("mode-not-known", "ogre")
    assert "no defense modes (H-PP-NO-POOL)" in err.value.detail
    res = exchange(psionic("A", 1, 4), mundane("Ogre", 4, 8), {"mode": "mental-stab"},
                   dice={"attack": [1]}, options={"H-PP-NO-POOL": False})
    assert res.to_json()["defense_total"] == 0


# -- spell sacrifice ---------------------------------------------------------------------------

def test_spell_sacrifice_adds_total_levels_and_spends_the_spells() -> None:
    """Seed: "Spellcasters with memorised spells may choose to sacrifice memorised spells to
    add a bonus to their defense roll equal to the total level of memorised spells
    sacrificed." """
    res = exchange(psionic("A", 2, 6), mundane("Mage", 2, 4, spell_levels=[1, 1, 3]),
                   {"mode": "mental-stab"}, {"sacrifice": [1, 3]},
                   dice={"attack": [5, 5], "defense": [3, 3]})
    out = res.to_json()
    assert out["defense_total"] == 10 and out["winner"] == "defender"
    assert after(res, "mage")["spell_levels"] == [1]
    assert ("Mage defends with no defense mode (2d4) plus 4 for sacrificed spells, a total "
            "of 10.") in res.summary
    res = exchange(psionic("A", 2, 6), mundane("Mage", 2, 4, spell_levels=[2]),
                   {"mode": "mental-stab"}, {"sacrifice": 2},
                   dice={"attack": [5, 5], "defense": [3, 3]})
    assert res.to_json()["defense_total"] == 8


def test_a_sacrifice_is_of_a_spell_level_from_1_to_9() -> None:
    """Seed: "sacrifice memorised spells", a bonus equal to their "total level": a spell
    has a level 1 to 9, so 0 is invalid input at the field, not a spell missing."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), mundane("Mage", spell_levels=[1]), {"mode": "mental-stab"},
                 {"sacrifice": 0})
    assert err.value.problems[0].path == "/defense/sacrifice"


@pytest.mark.parametrize("sacrifice,path,message", [
    (10, "/defense/sacrifice", "10 is greater than the maximum of 9"),
    (0, "/defense/sacrifice", "0 is less than the minimum of 1"),
    ([1, 12], "/defense/sacrifice/1", "12 is greater than the maximum of 9"),
    ([1, "2"], "/defense/sacrifice/1", '"2" is not of type "integer"'),
    ("3", "/defense/sacrifice", '"3" is not of type "integer" or "array"'),
    ([1] * 201, "/defense/sacrifice", "has 201 items; at most 200 are allowed"),
])
def test_a_malformed_sacrifice_is_named_at_the_value_that_is_wrong_with_the_rule(
        sacrifice: Any, path: str, message: str) -> None:
    """Bad input gets an error naming the field and the rule: a spell level outside 1 to
    9 is named where it is (an item of a list at its index) with the bound it breaks,
    not as the whole sacrifice being "not valid under any of the given schemas"."""
    with pytest.raises(InvalidInput) as err:
        SYSTEM.validate_request({"attacker": psionic("A"),
                                 "defender": mundane("Mage", spell_levels=[1]),
                                 "attack": {"mode": "mental-stab"},
                                 "defense": {"sacrifice": sacrifice}})
    [problem] = err.value.problems
    assert (problem.path, problem.message[:len(message)]) == (path, message)


def test_only_memorised_spells_can_be_sacrificed() -> None:
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("Mage", spell_levels=[1]), {"mode": "mental-stab"},
                 {"sacrifice": [1, 1]})
    assert err.value.rule == "spell-not-memorised"
    # The defender's own choice: a VTT asks it again, knowing whom to ask.
    assert err.value.combatant == "mage"


# -- limits, dice, combatants -------------------------------------------------------------------

def test_more_than_100_dice_in_a_pool_is_a_limit() -> None:
    with pytest.raises(LimitExceeded) as err:
        exchange(psionic("A", 101, 6), psionic("B"), {"mode": "mental-stab"})
    assert err.value.problems[0].path == "/attack/pool_dice"
    # the whole pool was asked for by giving no pool_dice: the message says how to roll fewer
    assert "give pool_dice of at most 100" in err.value.problems[0].message
    with pytest.raises(LimitExceeded) as err:
        exchange(psionic("A"), psionic("B", 101, 4), {"mode": "mental-stab"})
    assert err.value.problems[0].path == "/defense/pool_dice"
    assert "give pool_dice of at most 100" in err.value.problems[0].message
    with pytest.raises(LimitExceeded):
        exchange(psionic("A"), psionic("B", 60, 4), {"mode": "psionic-wave"},
                 defenders=[psionic("C", 60, 4)])


def test_a_group_of_exactly_100_dice_is_within_the_limit() -> None:
    """API.md limits: at most 100 dice in a pool; a wave's group of exactly 100 rolls them
    all, and nothing is said to be capped."""
    res = exchange(psionic("A", 1, 6), psionic("B", 60, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("C", 40, 4)], dice={"attack": [6], "defense": [1] * 100})
    out = res.to_json()
    assert out["defense_total"] == 100
    assert [m["dice"] for m in out["defense"]["members"]] == [60, 40]
    assert all(e.type != "group-dice-capped" for e in res.events)
    assert "over the limit" not in res.summary


def test_missing_supplied_dice_name_purpose_and_count() -> None:
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 6), psionic("B", 3, 6), {"mode": "personality-invasion"},
                 dice={"attack": [1, 2], "defense": [1]})
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("defense", 6, 2)


def test_missing_defense_dice_of_a_group_name_the_member_die_that_is_short() -> None:
    """A swarm of a d4 psionic and a d8 guard: with the d4 supplied, the guard's d8 is
    what is still needed (not another d4)."""
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8)],
                 dice={"attack": [1, 1], "defense": [1]})
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("defense", 8, 1)
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8)],
                 dice={"attack": [1, 1], "defense": []})
    assert (err.value.sides, err.value.needed) == (4, 1)
    # the run of one die ends at the first member rolling another: a d4 after the d8 is
    # asked for with the d8, not counted with the first d4
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                 {"mode": "imagination-swarm"},
                 allies=[mundane("Guard", 3, 8), mundane("Dog", 1, 4)],
                 dice={"attack": [1, 1], "defense": []})
    assert (err.value.sides, err.value.needed) == (4, 1)


def test_missing_defense_dice_of_a_wave_count_every_member_with_that_die() -> None:
    """RULES.md 4: "too few supplied dice is the 'dice needed' error naming the purpose,
    sides and count still needed": a psionic wave at three 2d6 minds with one d6 given
    still needs five, not the first mind's one."""
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 4), psionic("B", 2, 6), {"mode": "psionic-wave"},
                 defenders=[psionic("C", 2, 6), psionic("D", 2, 6)],
                 dice={"attack": [1, 1], "defense": [1]})
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("defense", 6, 5)


def test_combatant_defaults() -> None:
    """docs/COMBATANTS.md: pool defaults to hit_dice − dedicated; id from the name."""
    c = SYSTEM.combatant({"name": "Mind Flayer of Ur", "hit_dice": 8, "die": 10,
                          "dedicated": [{"purpose": "levitation"}], "attacks": ["mental-stab"]})
    assert c["id"] == "mind-flayer-of-ur" and c["pool"] == 7 and c["psionic"] is True
    assert c["mindless"] is False and c["controlled_by"] is None
    assert c["blank_mind_save"] is None and c["conditions"] == []
    # psionic by default when it knows any mode, a defense mode alone included
    guard = {"name": "G", "hit_dice": 2, "die": 6}
    assert SYSTEM.combatant({**guard, "defenses": ["blank-mind"]})["psionic"] is True
    assert SYSTEM.combatant(guard)["psionic"] is False


@pytest.mark.parametrize("raw,path", [
    ({"name": "X", "hit_dice": 2, "die": 6, "pool": 3}, "/attacker/pool"),
    ({"name": "X", "hit_dice": 2, "die": 6, "pool": 2, "dedicated": [{"purpose": "p"}]},
     "/attacker/dedicated"),
    ({"name": "X", "hit_dice": 2, "die": 7}, "/attacker/die"),
    ({"name": "X", "die": 6}, "/attacker"),
    ({"name": "X", "hit_dice": 2, "die": 6, "attacks": ["blank-mind"]}, "/attacker/attacks/0"),
    ({"name": "X", "hit_dice": 2, "die": 6,
      "controlling": [{"id": "y", "kept_by": "die"}]}, "/attacker/dedicated"),
    ({"name": "X", "hit_dice": 2, "die": 6, "controlled_by": "y", "pool": 1}, "/attacker/pool"),
    ({"name": "X", "hit_dice": 2, "die": 6, "controlled_by": "x"}, "/attacker/controlled_by"),
    ({"name": "X", "hit_dice": 2, "die": 6, "controlling": [{"id": "x", "kept_by": "action"}]},
     "/attacker/controlling/0/id"),
    ({"name": "X", "hit_dice": 2, "die": 6, "condition_rounds": {"dazed": 1}},
     "/attacker/condition_rounds/dazed"),
])
def test_invalid_combatant_names_the_field(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(raw, "/attacker")
    assert path in [p.path for p in err.value.problems]


def refusals(raw: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(raw, "/attacker")
    return [(p.path, p.message) for p in err.value.problems]


def test_a_combatant_named_only_by_id_or_by_no_word_gets_a_name_and_an_id() -> None:
    """docs/COMBATANTS.md: the name defaults to the id, and an id made from a name with
    no letter or digit is "combatant"."""
    c = SYSTEM.combatant({"id": "imp-2", "hit_dice": 2, "die": 6})
    assert (c["id"], c["name"]) == ("imp-2", "imp-2")
    c = SYSTEM.combatant({"name": "???", "hit_dice": 2, "die": 6})
    assert (c["id"], c["name"]) == ("combatant", "???")


def test_a_combatant_sheet_s_bounds_are_its_schema_s() -> None:
    """combatant_schema: 0 to 1000 hit dice, spell levels 1 to 9, a Blank Mind save of
    2 to 20, timers of at least one round, a controller named by a non-empty id, and an
    object at all."""
    x = {"name": "X", "hit_dice": 2, "die": 6}
    assert SYSTEM.combatant({**x, "hit_dice": 1000})["pool"] == 1000
    assert SYSTEM.combatant({**x, "hit_dice": 0})["pool"] == 0
    assert SYSTEM.combatant({**x, "spell_levels": [1, 9], "blank_mind_save": 2})[
        "spell_levels"] == [1, 9]
    assert refusals({**x, "hit_dice": 1001}) == [
        ("/attacker/hit_dice", "1001 is greater than the maximum of 1000")]
    assert refusals({**x, "spell_levels": [10]}) == [
        ("/attacker/spell_levels/0", "10 is greater than the maximum of 9")]
    assert refusals({**x, "blank_mind_save": 1}) == [
        ("/attacker/blank_mind_save", "1 is less than the minimum of 2")]
    assert refusals({**x, "conditions": ["dazed"], "condition_rounds": {"dazed": 0}}) == [
        ("/attacker/condition_rounds/dazed", "0 is less than the minimum of 1")]
    assert refusals({**x, "controlled_by": "", "pool": 0}) == [
        ("/attacker/controlled_by", '"" should be non-empty')]
    assert refusals(["X"]) == [("/attacker", "a combatant must be an object")]


def test_a_combatant_sheet_refuses_what_its_schema_does_not_name() -> None:
    """combatant_schema: an id or a name (a name of at most 200 characters), at most
    1000 dedicated dice, only the members, conditions and ways to keep control it lists,
    each defense once, hp an integer or null, psionic a boolean, and no empty name,
    purpose or id held, nor a negative pool."""
    x = {"name": "X", "hit_dice": 2, "die": 6}
    assert SYSTEM.combatant({**x, "name": "n" * 200})["name"] == "n" * 200
    many = {**x, "hit_dice": 1000, "pool": 0}
    assert len(SYSTEM.combatant({**many, "dedicated": [{"purpose": "p"}] * 1000})[
        "dedicated"]) == 1000
    refused = [
        ({**x, "name": "n" * 201}, "/attacker/name"),
        ({**many, "dedicated": [{"purpose": "p"}] * 1001}, "/attacker/dedicated"),
        ({"hit_dice": 2, "die": 6}, "/attacker"),
        ({**x, "colour": "red"}, "/attacker"),
        ({**x, "conditions": ["sleepy"]}, "/attacker/conditions/0"),
        ({**x, "conditions": ["dazed"], "condition_rounds": {"sleepy": 2}},
         "/attacker/condition_rounds"),
        ({**x, "controlling": [{"id": "y", "kept_by": "spell"}]},
         "/attacker/controlling/0/kept_by"),
        ({**x, "defenses": ["blank-mind", "blank-mind"]}, "/attacker/defenses"),
        ({**x, "hp": "many"}, "/attacker/hp"),
        ({**x, "psionic": "yes"}, "/attacker/psionic"),
        ({**x, "name": ""}, "/attacker/name"),
        ({**x, "pool": -1}, "/attacker/pool"),
        ({**x, "dedicated": [{"purpose": ""}]}, "/attacker/dedicated/0/purpose"),
        ({**x, "controlling": [{"id": "", "kept_by": "action"}]}, "/attacker/controlling/0/id"),
    ]
    for raw, path in refused:
        assert [p for p, _ in refusals(raw)] == [path], raw
    # by its length alone, before any die is counted against the hit dice
    assert refusals({**many, "dedicated": [{"purpose": "p"}] * 1001}) == [
        ("/attacker/dedicated", "has 1001 items; at most 1000 are allowed (maxItems)")]


def test_dedicated_dice_beyond_the_hit_dice_are_refused_once_whatever_the_pool() -> None:
    """RULES.md §3.1: pool + dedicated never exceeds hit_dice. A pool left out is not
    made negative to fit; a pool already too large is told once, at /pool."""
    x = {"name": "X", "hit_dice": 2, "die": 6}
    assert refusals({**x, "dedicated": [{"purpose": "levitation"}] * 3}) == [
        ("/attacker/dedicated", "pool 0 plus 3 dedicated dice exceed hit_dice 2")]
    assert refusals({**x, "pool": 3, "dedicated": [{"purpose": "levitation"}]}) == [
        ("/attacker/pool", "pool 3 exceeds hit_dice 2")]


def test_a_sheet_s_own_control_links_are_refused_when_they_disagree() -> None:
    """RULES.md §3.4: a creature is held once; a Psionic Wave's creatures are kept the
    same way; a die dedicated to control holds a creature listed as kept by a die."""
    x = {"name": "X", "hit_dice": 2, "die": 6}
    held = {"id": "y", "kept_by": "action"}
    assert refusals({**x, "controlling": [held, held]}) == [
        ("/attacker/controlling/1/id", '"y" is listed twice')]
    assert refusals({**x, "pool": 1, "dedicated": [{"purpose": "control", "target": "w"}],
                     "controlling": [{"id": "y", "kept_by": "die", "wave": "w"},
                                     {"id": "z", "kept_by": "action", "wave": "w"}]}) == [
        ("/attacker/controlling/1/kept_by", "a Psionic Wave's control is kept one way for all")]
    # a wave named with the id of a creature held on its own would make the two one link
    assert refusals({**x, "controlling": [{"id": "w", "kept_by": "action"},
                                          {"id": "y", "kept_by": "action", "wave": "w"},
                                          {"id": "z", "kept_by": "action", "wave": "w"}]}) == [
        ("/attacker/controlling/1/wave", 'wave label "w" is also the id of a creature held on '
         "its own in the same controlling: a wave's name must differ from every such id, or "
         "the two links would be one (rename the wave, and the target of each die dedicated "
         "to it)")]
    # ids of a wave's own creatures may be anything, its own name included
    c = SYSTEM.combatant({**x, "controlling": [{"id": "w", "kept_by": "action", "wave": "w"},
                                               {"id": "v", "kept_by": "action", "wave": "u"}]})
    assert [link["wave"] for link in ctl.links(c)] == ["w", "u"]
    # an empty wave label is no wave: each creature is its own link
    c = SYSTEM.combatant({**x, "pool": 1, "dedicated": [{"purpose": "control", "target": "y"}],
                          "controlling": [{"id": "y", "kept_by": "die", "wave": ""},
                                          {"id": "z", "kept_by": "action", "wave": ""}]})
    assert [e["id"] for e in c["controlling"]] == ["y", "z"]
    assert refusals({**x, "pool": 1,
                     "dedicated": [{"purpose": "control", "target": "y"}]}) == [
        ("/attacker/dedicated", "control of \"y\": 1 die dedicated with purpose 'control', "
         "0 needed (kept_by 'die' needs one die per creature held)")]


def test_describe_lists_modes_tables_and_house_rules() -> None:
    d = SYSTEM.describe()
    assert d["id"] == "power-pool"
    assert [m["id"] for m in d["modes"]["attacks"]] == [
        "mental-stab", "personality-invasion", "psionic-wave", "subconscious-subversion",
        "synaptic-overload"]
    assert [m["id"] for m in d["modes"]["defenses"]] == [
        "barrier-mantra", "blank-mind", "cognitive-labyrinth", "imagination-swarm",
        "pinnacle-of-will"]
    assert d["modes"]["attacks"][0]["die_steps"] == 2
    assert d["tables"]["ladder"] == [4, 6, 8, 10, 12, 20]
    assert {r["id"] for r in d["house_rules"]} == {
        "H-PP-TIE", "H-PP-GROUP", "H-PP-BLANK-SAVE", "H-PP-NO-POOL", "H-PP-RECOVERY"}
    assert all(r["text"] and "default" in r for r in d["house_rules"])
    assert {p["purpose"] for p in d["dice_purposes"]} == {"attack", "defense", "save"}
    assert d["combatant_schema"]["type"] == "object" and "request_schema" in d


def test_unknown_house_rule_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"}, options={"H-XX": 1})
    assert err.value.problems[0].path == "/options/H-XX"


def test_replacement_tables_change_the_ladder() -> None:
    """RULES.md: "A GM may load a replacement table file" — a ladder stopping at d12."""
    tables = dict(SYSTEM.tables)
    tables["ladder"] = [4, 6, 8, 10, 12]
    system = PowerPoolSystem(tables)
    res = system.resolve({"attacker": psionic("A", 1, 10), "defender": psionic("B", 1, 4),
                          "attack": {"mode": "mental-stab"}},
                         SuppliedDice({"attack": [1], "defense": [1]}))
    assert res.rolls[0].sides == 12
    with pytest.raises(InvalidInput):
        PowerPoolSystem({"ladder": "d4"})


@pytest.mark.parametrize("where,path", [
    (("exchange", "attacker_dazed_round_ends"), "/tables/exchange/attacker_dazed_round_ends"),
    (("exchange", "loser_stunned_round_ends"), "/tables/exchange/loser_stunned_round_ends"),
    (("modes", "barrier-mantra", "instead_of_control", "round_ends"),
     "/tables/modes/barrier-mantra/instead_of_control/round_ends"),
    (("modes", "imagination-swarm", "ally_dazed_round_ends"),
     "/tables/modes/imagination-swarm/ally_dazed_round_ends")])
def test_a_replacement_table_lasting_a_condition_no_round_end_is_refused(
        where: tuple[str, ...], path: str) -> None:
    """A condition of 0 round ends was given all the same, with a timer of 0 that the
    combatant schema refuses: the sheet written back stopped every later exchange of
    that creature. The table is refused where it says so."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    place = tables
    for key in where[:-1]:
        place = place[key]
    place[where[-1]] = 0
    with pytest.raises(InvalidInput) as err:
        PowerPoolSystem(tables)
    assert path in [p.path for p in err.value.problems]


def test_a_replacement_table_taking_no_die_from_a_rebuffed_attacker_says_so() -> None:
    """loser_pool_dice_lost 0: the rebuffed attacker keeps its pool, and the summary
    says it loses no die (not that its pool has none to lose)."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["exchange"]["loser_pool_dice_lost"] = 0
    lost = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("Ix", 3, 6), "defender": psionic("B", 3, 6),
         "attack": {"mode": "mental-stab"}},
        SuppliedDice({"attack": [1, 1, 1], "defense": [6, 6, 6]}))
    assert lost.summary.endswith("B holds: Ix loses no die and is stunned for a round.")
    assert after(lost, "ix")["pool"] == 3
    assert not [e for e in lost.events if e.type == "pool-die-lost"]


def test_a_replacement_table_taking_no_die_for_a_failed_blank_mind_save_says_so() -> None:
    """blank_mind_pool_dice_lost 0: the attacker whose save failed keeps its full pool,
    and the summary says no die is lost, not that its pool (3 dice) has none to lose;
    as for a rebuffed attacker, no pool-die-lost event tells of a loss the tables skip."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["exchange"]["blank_mind_pool_dice_lost"] = 0
    failed = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("Ix", 3, 6), "defender": psionic("B", 3, 6),
         "attack": {"mode": "mental-stab"}, "defense": {"mode": "blank-mind"}},
        SuppliedDice({"save": [1]}))
    assert failed.summary.endswith("Ix fails the save against B's Blank Mind (needed 15, "
                                   "rolled 1): the attack fails outright and no die of the "
                                   "pool is lost.")
    assert after(failed, "ix")["pool"] == 3
    assert not [e for e in failed.events if e.type == "pool-die-lost"]


# -- control as pure functions -----------------------------------------------------------------

def test_keep_by_switches_between_die_and_action() -> None:
    a = SYSTEM.combatant(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"}]))
    by_die = ctl.keep_by(a, "b", "die")
    assert by_die["pool"] == 2 and by_die["dedicated"] == [{"purpose": "control",
                                                            "target": "b"}]
    back = ctl.keep_by(by_die, "b", "action")
    assert back["pool"] == 3 and back["dedicated"] == []
    assert a["pool"] == 3  # arguments untouched
    # kept the way it is already kept: no second die is dedicated
    assert ctl.keep_by(by_die, "b", "die") == by_die
    # the pool's last die may keep it
    assert ctl.keep_by({**a, "pool": 1}, "b", "die")["pool"] == 0


def test_keep_by_knows_only_die_and_action() -> None:
    """Seed 001 names two ways to keep control, "dedicating a die" or "using an action
    each round": any other is invalid input, not a third way that returns the dice."""
    a = SYSTEM.combatant(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "die"}],
                                 pool=2, dedicated=[{"purpose": "control", "target": "b"}]))
    with pytest.raises(InvalidInput) as err:
        ctl.keep_by(a, "b", "dice")
    assert err.value.problems[0].path == "/keep/by"


def test_keeping_a_wave_by_dice_dedicates_a_die_to_each_creature_and_back() -> None:
    """README "Groups": a Psionic Wave kept by dice takes "a die ... dedicated to it"
    for each creature, all on the one link; by an action again, they all return."""
    a = SYSTEM.combatant(psionic("A", 3, 6, controlling=[
        {"id": "v", "kept_by": "action", "wave": "w"},
        {"id": "x", "kept_by": "action", "wave": "w"}]))
    by_dice = ctl.keep_by(a, "x", "die")
    assert by_dice["pool"] == 1
    assert by_dice["dedicated"] == [{"purpose": "control", "target": "w"}] * 2
    assert [e["kept_by"] for e in by_dice["controlling"]] == ["die", "die"]
    SYSTEM.combatant(by_dice)  # one die per creature held, as a sheet must show it
    assert ctl.keep_by(by_dice, "v", "action") == a


def test_establishing_a_wave_by_dice_needs_a_die_for_each_creature() -> None:
    """Seed 001: control is kept "by dedicating a die from the controller's current power
    pool to it"; a Psionic Wave's link kept by dice takes one for each creature
    (README "Groups"), so a pool of 1 cannot keep 2 that way."""
    a = SYSTEM.combatant(psionic("A", 3, 6, pool=1, dedicated=[{"purpose": "levitation"}] * 2))
    with pytest.raises(RulesViolation) as err:
        ctl.establish(a, ["v", "x"], "die", "wave-v")
    assert err.value.rule == "no-die-to-dedicate"
    kept = ctl.establish(a, ["v"], "die", "wave-v")
    assert (kept["pool"], kept["dedicated"][-1]) == (0, {"purpose": "control",
                                                         "target": "wave-v"})


def test_action_kept_control_ends_when_the_target_is_not_perceived() -> None:
    """Seed: "If the controller is dedicating an action to maintain the control, they must
    remain able to perceive the creature each round, but if a die is dedicated to it, the
    link will be maintained until the controller chooses to relinquish it." """
    a = SYSTEM.combatant(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"}]))
    b = SYSTEM.combatant(psionic("B", controlled_by="a"))
    kept, freed, _ = ctl.maintain_by_action(a, "b", False, {"b": b}, ENDING)
    assert kept["controlling"] == [] and freed["b"]["controlled_by"] is None
    by_die = ctl.keep_by(a, "b", "die")
    kept, freed, _ = ctl.maintain_by_action(by_die, "b", False, {"b": b}, ENDING)
    assert kept["controlling"] and not freed


def test_recovery_returns_all_dice_after_a_long_rest() -> None:
    """H-PP-RECOVERY: all dice back after a long rest, or half the hit dice (rounded up);
    seed: "Powers can't be maintained when a creature rests", and their dice were only
    "dedicated (removed from the pool temporarily)", so they come back under either rule."""
    c = SYSTEM.combatant(psionic("A", 6, 6, pool=1, dedicated=[{"purpose": "levitation"}]))
    assert ctl.recover(c, "all")["pool"] == 6
    assert ctl.recover(c, "half")["pool"] == 1 + 1 + 3
    busy = SYSTEM.combatant(psionic("A", 6, 6, pool=1, dedicated=[{"purpose": "power"}] * 5))
    assert ctl.recover(busy, "half")["pool"] == 6
    puppet = SYSTEM.combatant(psionic("P", 4, 6, controlled_by="a"))
    assert ctl.recover(puppet, "all")["pool"] == 0


def test_recovery_by_a_rule_h_pp_recovery_does_not_have_is_invalid_input() -> None:
    """H-PP-RECOVERY is "all" or "half"; another word gives back no dice silently."""
    c = SYSTEM.combatant(psionic("A", 6, 6, pool=1))
    with pytest.raises(InvalidInput) as err:
        ctl.recover(c, "most")
    assert err.value.problems[0].path == "/options/H-PP-RECOVERY"


def test_swarm_group_kept_by_dice_while_the_pool_lasts() -> None:
    """Seed: for Imagination Swarm "the attack affects all equally"; each controlled
    creature is its own link, so dice keep as many as the pool holds, actions the rest."""
    res = exchange(psionic("A", 2, 8), psionic("B", 1, 4), {"mode": "mental-stab",
                                                            "keep_by": "die"},
                   {"mode": "imagination-swarm"}, allies=[mundane("G1", 1, 4),
                                                          mundane("G2", 1, 4)],
                   dice={"attack": [8, 8], "defense": [1, 1, 1]})
    a = after(res, "a")
    assert [(e["id"], e["kept_by"]) for e in a["controlling"]] == [
        ("b", "die"), ("g1", "die"), ("g2", "action")]
    assert a["pool"] == 0 and len(a["dedicated"]) == 2
    SYSTEM.combatant(a)


# -- audit: who can act, drawn-in allies that cannot defend, an effect that may be declined --

@pytest.mark.parametrize("more,why", [
    ({"conditions": ["asleep"]}, "is asleep"),
    ({"conditions": ["unconscious"]}, "is unconscious"),
    ({"hp": -5}, "is down"),
    ({"controlled_by": "z"}, "is under the psionic control"),
])
def test_an_attacker_that_cannot_act_cannot_attack(more: dict[str, Any], why: str) -> None:
    """Seed 001: an asleep or unconscious creature, one at 0 hit points (down) or a puppet
    under another's control does not attack; an encounter refuses it, and so does a single
    exchange."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 2, 6, **more), psionic("B", 1, 4), {"mode": "mental-stab"},
                 dice={"attack": [5, 5], "defense": [1]})
    assert err.value.rule == "attacker-cannot-act" and why in str(err.value)


def test_a_single_exchange_does_not_time_the_round_long_daze_and_stun() -> None:
    """Dazed and stunned last a round or two (RULES.md §3.2); a single exchange cannot
    tell whether that round is over, so it lets the attacker act (an encounter, which
    counts rounds, refuses it)."""
    res = exchange(psionic("A", 2, 6, conditions=["dazed", "stunned"],
                           condition_rounds={"dazed": 1, "stunned": 2}),
                   psionic("B", 1, 4), {"mode": "mental-stab"},
                   dice={"attack": [5, 5], "defense": [1]})
    assert res.to_json()["winner"] == "attacker"


def test_a_daze_already_lasting_longer_keeps_its_longer_timer() -> None:
    """RULES.md §3.2: "the attacker is dazed for the round" (table
    `attacker_dazed_round_ends` 1); one still dazed for this round and the next (drawn in
    by Imagination Swarm, `ally_dazed_round_ends` 2) stays dazed that long: a condition
    taken again keeps the longer timer."""
    res = exchange(psionic("A", 2, 6, conditions=["dazed"], condition_rounds={"dazed": 2}),
                   psionic("B", 1, 4), {"mode": "mental-stab"},
                   dice={"attack": [5, 5], "defense": [1]})
    assert after(res, "a")["condition_rounds"] == {"dazed": 2}


def test_a_daze_without_end_stays_without_end_when_dazed_again() -> None:
    """A condition taken again keeps the longer timer, and a condition with no timer
    lasts longer than any: the attacker "dazed for the round" stays dazed untimed."""
    res = exchange(psionic("A", 2, 6, conditions=["dazed"]), psionic("B", 1, 4),
                   {"mode": "mental-stab"}, dice={"attack": [5, 5], "defense": [1]})
    a = after(res, "a")
    assert a["conditions"] == ["dazed"] and a["condition_rounds"] == {}


def test_frightened_by_subversion_loses_the_timer_it_had() -> None:
    """Seed 001, Subconscious Subversion: the fear "persists even after the attacker
    ceases psionic control", with no end of its own: a creature frightened for a round
    already is frightened untimed."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4, conditions=["frightened"],
                                               condition_rounds={"frightened": 1}),
                   {"mode": "subconscious-subversion"},
                   dice={"attack": [6, 6], "defense": [1]})
    b = after(res, "b")
    assert "frightened" in b["conditions"] and b["condition_rounds"] == {}


@pytest.mark.parametrize("more", [{"conditions": ["asleep"]}, {"conditions": ["unconscious"]},
                                  {"hp": -3}, {"pool": 0}])
def test_a_drawn_in_ally_that_cannot_defend_adds_no_die(more: dict[str, Any]) -> None:
    """Seed 001: a creature that is "asleep, unconscious, etc." may defend only with
    cognitive-labyrinth, which a non-psionic ally has not; one down is as unconscious, and
    an emptied pool has no die to give (H-PP-GROUP one-die). It is still drawn in."""
    res = exchange(psionic("A", 2, 4), psionic("B", 2, 4), {"mode": "mental-stab"},
                   {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8, **more)],
                   dice={"attack": [2, 2], "defense": [1, 1]})
    out = res.to_json()
    assert [r["sides"] for r in out["rolls"] if r["purpose"] == "defense"] == [4, 4]
    guard = next(m for m in out["defense"]["members"] if m["id"] == "guard")
    assert guard["dice"] == 0
    assert out["winner"] == "attacker" and after(res, "guard")["controlled_by"] == "a"


def test_the_attacker_may_choose_not_to_frighten() -> None:
    """Seed 001, Subconscious Subversion: "the attacker may choose to frighten the
    opponent"; attack.decline ["frightened"] spares it."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4),
                   {"mode": "subconscious-subversion", "decline": ["frightened"]},
                   dice={"attack": [6, 6], "defense": [1]})
    b = after(res, "b")
    assert b["controlled_by"] == "a" and "frightened" not in b["conditions"]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 2, 6), psionic("B", 1, 4),
                 {"mode": "mental-stab", "decline": ["frightened"]},
                 dice={"attack": [6, 6], "defense": [1]})
    assert err.value.problems[0].path == "/attack/decline/0"
    # possession is no choice: only an effect the tables mark optional may be declined
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 2, 6), psionic("B", 1, 4),
                 {"mode": "personality-invasion", "decline": ["possessed"]},
                 dice={"attack": [6, 6], "defense": [1]})
    assert err.value.problems[0].path == "/attack/decline/0"


# -- input that tells two stories ---------------------------------------------------------
def test_the_defender_or_the_attacker_given_again_as_an_ally_is_refused_by_the_rules() -> None:
    """Seed 001, Imagination Swarm: the defender "may choose draw allied non-psionic
    creatures into the psionic combat"; the defender defends already, and the attacker
    is no ally. Given again among the allies with its own id, it is that creature named
    twice (4001 at the ally's place), not a clash of ids (-32602 "give each creature an
    id of its own"), which stays for two creatures whose ids were made from one name."""
    a, dog = psionic("A", 3, 6, id="a"), mundane("Dog", 2, 6, id="dog")
    wave = {"mode": "psionic-wave"}
    for ally, rule, words in ((dog, "ally-struck", "Dog is struck by this attack and "
                               "defends itself; it cannot also be drawn in"),
                              (a, "ally-attacker", "A is the attacker; it cannot be drawn "
                               "into the defense against its own attack")):
        with pytest.raises(RulesViolation) as err:
            exchange(a, psionic("B", 1, 4), wave, {"mode": "imagination-swarm"},
                     defenders=[dog], allies=[mundane("Cat", 1, 4), ally])
        assert (err.value.rule, err.value.detail, err.value.combatant) == (
            rule, f"/allies/1: {words}", ally["id"])
    with pytest.raises(InvalidInput) as bad:
        exchange(a, psionic("B", 1, 4), wave, {"mode": "imagination-swarm"},
                 defenders=[mundane("Dog", 2, 6)], allies=[mundane("Dog", 2, 6)])
    assert bad.value.problems[0].path == "/allies/0/name"


def test_a_controller_struck_in_its_puppet_s_place_is_not_also_drawn_in_as_an_ally() -> None:
    """RULES.md §3.3 (H-PP-GROUP): "every member's dice are rolled and summed": X, struck
    in B's place, defends with its own pool once; drawn in again it would roll it twice."""
    x = psionic("X", 2, 6, controlling=[{"id": "b", "kept_by": "action"}])
    b = psionic("B", 2, 6, controlled_by="x", pool=0)
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"}, {"mode": "imagination-swarm"},
                 controller=x, allies=[x], defenses={"x": {"mode": "imagination-swarm"}},
                 dice={"attack": [1, 1, 1], "defense": [6, 6, 6, 6]})
    assert (err.value.rule, err.value.combatant) == ("ally-struck", "x")


@pytest.mark.parametrize("attack", [{"mode": "psionic-wave", "target": "b"},
                                    {"mode": "psionic-wave", "targets": ["c", "d"]}])
def test_an_exchange_names_its_targets_by_defender_and_defenders_only(
        attack: dict[str, Any]) -> None:
    """attack.target(s) belong to an encounter's declaration; an exchange given them
    would strike its defender alone, so they are refused, not ignored."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6), psionic("B", 1, 4), attack,
                 dice={"attack": [6, 6, 6], "defense": [1]})
    assert err.value.problems[0].path == "/attack"


def test_control_links_the_two_sheets_tell_differently_are_refused() -> None:
    """RULES.md §3.4: a controller's `controlling` and its puppet's `controlled_by` name
    each other; when one sheet is stale, acting on it would control a creature twice or
    free the wrong one."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                 psionic("B", 1, 4), {"mode": "mental-stab"},
                 dice={"attack": [6, 6, 6], "defense": [1]})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/attacker/controlling/0/id",
        "A controls B here, but B's controlled_by (/defender) is null")]
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("C", 3, 6), psionic("B", 3, 6, controlled_by="a", pool=0),
                 {"mode": "mental-stab"}, controller=psionic("A", 2, 6),
                 dice={"attack": [6, 6, 6], "defense": [1, 1]})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/defender/controlled_by",
        "B is under A's control here, but A's controlling (/controller) does not list it")]
    # the end of a round checks its puppets the same way
    with pytest.raises(InvalidInput) as err:
        SYSTEM.end_round({"combatants": [psionic("A", 2, 6, controlling=[
            {"id": "b", "kept_by": "action"}])], "puppets": [psionic("B", 1, 4)]},
            SuppliedDice({}))
    assert err.value.problems[0].path == "/combatants/0/controlling/0/id"


def test_an_ally_given_the_attacker_s_own_id_is_refused_as_the_attacker_not_by_its_links(
        ) -> None:
    """combatant.link_problems reads each id's first sheet: an ally naming the attacker
    again (its own id given) is the attacker, refused as such (ally-attacker), and its
    copy without A's control of P does not make P's link look stale."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 3, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                 psionic("B", 2, 6), {"mode": "mental-stab"},
                 allies=[psionic("A", 2, 6, id="a")],
                 puppets=[psionic("P", 2, 6, controlled_by="a", pool=0)],
                 dice={"attack": [6, 6, 6], "defense": [1, 1]})
    assert err.value.rule == "ally-attacker"


@pytest.mark.parametrize(("more", "paths"), [
    ({"controlling": [{"id": "q", "kept_by": "action"}]}, ["/controlling"]),
    ({"dedicated": [{"purpose": "levitation"}]}, ["/dedicated"]),
])
def test_a_creature_under_control_holds_no_control_and_no_powers(
        more: dict[str, Any], paths: list[str]) -> None:
    """Seed 001: "Any powers being maintained by the controlled creature end and the power
    dice used to maintain them are expended"; any control it held ended with them."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(psionic("P", 3, 6, pool=0, controlled_by="x", **more))
    assert [p.path for p in err.value.problems] == paths


def test_the_summary_says_what_falling_under_control_takes_and_no_die_lost_that_is_not(
        ) -> None:
    """RULES.md §4: the summary tells what the events do. B, overcome, loses its own
    control of P (whose sheet was not given) and the die its power kept; A, rebuffed with
    every die maintaining a power, has no die to lose."""
    b = psionic("B", 2, 6, controlling=[{"id": "p", "kept_by": "action"}],
                dedicated=[{"purpose": "levitation"}], pool=1)
    won = exchange(psionic("A", 3, 6), b, {"mode": "mental-stab"},
                   dice={"attack": [6, 6, 6], "defense": [1]}).to_json()
    assert won["summary"].endswith(
        "B's own psionic control of \"p\" ends. \"p\" was not given: its sheet still shows "
        "it under B's control until it is changed. B's maintained powers end and the die it "
        "kept for them is expended.")
    spent = psionic("A", 2, 6, pool=0,
                    dedicated=[{"purpose": "levitation"}, {"purpose": "clairvoyance"}])
    lost = exchange(spent, psionic("B", 1, 4), {"mode": "mental-stab"},
                    dice={"attack": [], "defense": [3]}).to_json()
    assert lost["summary"].endswith("B holds: A has no die in its pool to lose and is "
                                    "stunned for a round.")
    # two members of a wave overcome: each is told of its own puppet, not the other's
    b = psionic("B", 1, 4, controlling=[{"id": "p1", "kept_by": "action"}])
    c = psionic("C", 1, 4, controlling=[{"id": "p2", "kept_by": "action"}])
    wave = exchange(psionic("X", 3, 6), b, {"mode": "psionic-wave"}, defenders=[c],
                    dice={"attack": [6, 6, 6], "defense": [1, 1]})
    assert wave.summary.endswith(
        "B's own psionic control of \"p1\" ends. \"p1\" was not given: its sheet still "
        "shows it under B's control until it is changed. C's own psionic control of \"p2\" "
        "ends. \"p2\" was not given: its sheet still shows it under C's control until it is "
        "changed.")


# -- audit: the puppets given are checked too; each summary line is about its own creature --

def test_a_puppet_given_whose_sheet_names_no_controller_is_refused() -> None:
    """RULES.md §3.4: the puppets given are sheets too; A's `controlling` names P, P's
    `controlled_by` (given in /puppets) is null: one of the two is stale."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A", 3, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                 psionic("B", 1, 4), {"mode": "mental-stab"},
                 dice={"attack": [6, 6, 6], "defense": [1]}, puppets=[psionic("P", 1, 4)])
    assert [p.path for p in err.value.problems] == ["/attacker/controlling/0/id"]
    assert "/puppets/0" in err.value.problems[0].message


def test_a_failed_blank_mind_save_with_an_empty_pool_loses_no_die() -> None:
    """Seed: a failed save against Blank Mind costs "a die from their current power pool";
    a pool whose every die maintains a power has none to lose, and the summary says so."""
    spent = psionic("A", 2, 6, pool=0, blank_mind_save=12,
                    dedicated=[{"purpose": "levitation"}, {"purpose": "clairvoyance"}])
    res = exchange(spent, psionic("B", 1, 4), {"mode": "mental-stab"}, {"mode": "blank-mind"},
                   dice={"save": [11], "defense": [1]})
    assert res.summary.endswith("A fails the save against B's Blank Mind (needed 12, rolled "
                                "11): the attack fails outright and its pool has no die to "
                                "lose.")
    assert [e.data["dice"] for e in res.events if e.type == "pool-die-lost"] == [0]
    assert after(res, "a")["pool"] == 0


def test_a_rebuffed_attacker_s_summary_names_the_puppets_not_given() -> None:
    """Seed: "Any psionic control the attacker is exerting over other creatures ceases
    immediately." P's sheet was not given, so the summary says it still shows control."""
    attacker = psionic("A", 3, 6, controlling=[{"id": "p", "kept_by": "action"}])
    res = exchange(attacker, psionic("B", 3, 6), {"mode": "mental-stab"},
                   dice={"attack": [1, 1, 1], "defense": [2, 2, 2]})
    assert res.summary.endswith(
        "Every psionic control A held ends. \"p\" was not given: its sheet still shows it "
        "under A's control until it is changed.")


def test_a_rebuffed_attacker_s_summary_is_silent_about_the_puppets_given() -> None:
    """As above with P given among the puppets: its freed sheet is in the result."""
    attacker = psionic("A", 3, 6, controlling=[{"id": "p", "kept_by": "action"}])
    res = exchange(attacker, psionic("B", 3, 6), {"mode": "mental-stab"},
                   dice={"attack": [1, 1, 1], "defense": [2, 2, 2]},
                   puppets=[psionic("P", 1, 4, controlled_by="a", pool=0)])
    assert res.summary.endswith("Every psionic control A held ends.")
    assert "was not given" not in res.summary


def test_a_wave_s_summary_names_each_creature_s_own_expended_dice() -> None:
    """Seed: "Any psionic powers the creature is maintaining cease when psionic control is
    established over it, and dice used to maintain them are expended": B kept one die,
    C two, and each sentence counts its own."""
    b = psionic("B", 2, 4, pool=1, dedicated=[{"purpose": "levitation"}])
    c = psionic("C", 3, 4, pool=1, dedicated=[{"purpose": "levitation"},
                                              {"purpose": "clairvoyance"}])
    res = exchange(psionic("A", 4, 8), b, {"mode": "psionic-wave"}, defenders=[c],
                   dice={"attack": [8, 8, 8, 8], "defense": [1, 1]})
    assert "B's maintained powers end and the die it kept for them is expended." \
        in res.summary
    assert "C's maintained powers end and the 2 dice it kept for them are expended." \
        in res.summary


# -- audit: the summary says per creature how control is kept, from the tables' numbers ----

def test_a_swarm_group_whose_dice_run_out_is_told_how_each_link_is_kept() -> None:
    """Seed 001: control is kept "by dedicating a die from the controller's current power
    pool to it, or by the controller using an action each round"; an Imagination Swarm
    group's creatures are a link each (README: "dedicates dice while the pool lasts, the
    rest by action"). One die for three: Bob by the die, Al and Cal by an action, and the
    summary and each `controlled` effect say so (`attack.keep_by` stays as asked)."""
    res = exchange(psionic("Ix", 1, 20), psionic("Bob", 1, 4), {
        "mode": "mental-stab", "keep_by": "die"}, {"mode": "imagination-swarm"},
        allies=[mundane("Al", 1, 4), mundane("Cal", 1, 4)],
        dice={"attack": [20], "defense": [1, 1, 1]})
    out = res.to_json()
    assert "Ix wins: Bob, Al and Cal fall under its psionic control, each a link of its own: " \
        "Bob kept by a dedicated die, and Al and Cal by an action each round (the pool has " \
        "no die left for them)." in res.summary
    assert [(e["combatant"], e["kept_by"]) for e in out["effects"]] == [
        ("bob", "die"), ("al", "action"), ("cal", "action")]
    assert out["attack"]["keep_by"] == "die"
    assert [(e["id"], e["kept_by"]) for e in after(res, "ix")["controlling"]] == [
        ("bob", "die"), ("al", "action"), ("cal", "action")]


def test_a_group_kept_by_actions_is_told_as_one_link_per_creature() -> None:
    """An Imagination Swarm group that lost: each creature its own link (released one by
    one); a Psionic Wave's creatures are one link, which one action keeps (seed 001: "a
    single action to maintain psionic control of all of the defenders")."""
    swarm = exchange(psionic("Ix", 2, 8), psionic("Bob", 1, 4), {"mode": "mental-stab"},
                     {"mode": "imagination-swarm"}, allies=[mundane("Al", 1, 4)],
                     dice={"attack": [8, 8], "defense": [1, 1]})
    assert "Ix wins: Bob and Al fall under its psionic control, each a link of its own " \
        "kept by an action each round." in swarm.summary
    wave = exchange(psionic("Ix", 2, 8), psionic("Bob", 1, 4), {"mode": "psionic-wave"},
                    defenders=[psionic("Cy", 1, 4)], dice={"attack": [8, 8], "defense": [1, 1]})
    assert "Ix wins: Bob and Cy fall under its psionic control as one link (kept by one " \
        "action each round for them all)." in wave.summary
    assert [e["kept_by"] for e in wave.to_json()["effects"]] == ["action", "action"]


def test_refusals_count_one_die_as_a_die() -> None:
    """A refusal a player reads says "1 die", not "1 dice", and "0 dice", not "0 die"."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("B", 1, 6), psionic("C"), {"mode": "mental-stab", "pool_dice": 2})
    assert err.value.detail == "B has 1 die in its pool, not 2"
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", 1, 6), {"mode": "mental-stab"}, {"pool_dice": 2})
    assert err.value.detail == "B has 1 die to roll, not 2"
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 1, 6), psionic("B", 1, 4), {"mode": "psionic-wave",
                                                          "keep_by": "die"},
                 defenders=[psionic("C", 1, 4)])
    assert err.value.detail == ("A would keep 2 creatures of the wave by a die each but has "
                                "1 die in its pool: keep them by an action")
    a = SYSTEM.combatant(psionic("A", 3, 6, pool=1, controlling=[
        {"id": "v", "kept_by": "action", "wave": "w"},
        {"id": "x", "kept_by": "action", "wave": "w"}]))
    with pytest.raises(RulesViolation) as err:
        ctl.keep_by(a, "v", "die")
    assert err.value.detail == ("A has 1 die in its pool, too few to keep control of 2 "
                                "creatures by a die each")
    with pytest.raises(RulesViolation) as err:
        ctl.keep_by({**a, "pool": 0}, "v", "die")
    assert err.value.detail == ("A has 0 dice in its pool, too few to keep control of 2 "
                                "creatures by a die each")
    with pytest.raises(RulesViolation) as err:
        ctl.keep_by({**a, "pool": 0, "controlling": a["controlling"][:1]}, "v", "die")
    assert err.value.detail == "A has no die in its pool to keep control with"


def test_a_sacrifice_short_of_spells_says_the_count_not_the_level() -> None:
    """Seed: spellcasters "may choose to sacrifice memorised spells": with [1, 3, 3]
    memorised, three level-3 spells are one too many, though level 3 is memorised."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("B", spell_levels=[1, 3, 3]), {"mode": "mental-stab"},
                 {"sacrifice": [3, 3, 3]})
    assert err.value.detail == ("/defense/sacrifice: B sacrifices 3 level-3 spells but has "
                                "only 2 memorised (memorised: [1, 3, 3])")
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("B", spell_levels=[1, 3, 3]), {"mode": "mental-stab"},
                 {"sacrifice": [3, 2, 3, 3]})
    assert err.value.detail == ("/defense/sacrifice: B sacrifices a level-2 spell but has "
                                "none memorised, and sacrifices 3 level-3 spells but has only "
                                "2 memorised (memorised: [1, 3, 3])")


def test_the_summary_takes_its_numbers_and_names_from_replacement_tables() -> None:
    """RULES.md: a GM may load replacement tables. The loser loses 2 dice and is stunned
    for 3 round ends (2 rounds after this one), and Barrier Mantra is renamed: the
    summary says what the events and state say."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["exchange"].update(loser_pool_dice_lost=2, loser_stunned_round_ends=3)
    tables["modes"]["barrier-mantra"]["name"] = "Mantra Wall"
    tables["modes"]["barrier-mantra"]["instead_of_control"]["round_ends"] = 1
    system = PowerPoolSystem(tables)
    lost = system.resolve({"attacker": psionic("Ix", 3, 6), "defender": psionic("B", 3, 6),
                           "attack": {"mode": "mental-stab"}},
                          SuppliedDice({"attack": [1, 1, 1], "defense": [6, 6, 6]}))
    assert lost.summary.endswith("B holds: Ix loses 2 dice from its pool and is stunned for "
                                 "2 rounds.")
    assert after(lost, "ix")["pool"] == 1
    won = system.resolve({"attacker": psionic("Ix", 3, 6), "defender": psionic("B", 3, 6),
                          "attack": {"mode": "mental-stab"},
                          "defense": {"mode": "barrier-mantra"}},
                         SuppliedDice({"attack": [6, 6, 6], "defense": [1, 1, 1]}))
    assert won.summary.endswith("B defends with Mantra Wall (3d6), a total of 3. Ix wins, "
                                "but Mantra Wall leaves B stunned until this round ends "
                                "instead of controlled.")
    tables["exchange"].update(blank_mind_pool_dice_lost=2)
    saved = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("Ix", 3, 6), "defender": psionic("B", 3, 6),
         "attack": {"mode": "mental-stab"}, "defense": {"mode": "blank-mind"}},
        SuppliedDice({"save": [1]}))
    assert saved.summary.endswith("the attack fails outright and 2 dice of the pool are lost.")
    assert after(saved, "ix")["pool"] == 1


def test_a_wave_s_barrier_mantras_are_each_told() -> None:
    """Seed: Barrier Mantra: "stunned for one round instead of falling under the psionic
    control"; in a wave every member using it is named, whether or not another fell."""
    res = exchange(psionic("Ix", 3, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   {"mode": "barrier-mantra"}, defenders=[psionic("C", 1, 4)],
                   defenses={"c": {"mode": "barrier-mantra"}},
                   dice={"attack": [8, 8, 8], "defense": [1, 1]})
    assert res.summary.endswith("Ix wins, but Barrier Mantra leaves B and C stunned for a "
                                "round instead of controlled.")


def test_a_passed_blank_mind_save_is_told_with_its_roll() -> None:
    """Seed: against Blank Mind "The attacker must make a saving throw": passed, the
    contest goes on, and the summary says so with the target and the roll."""
    res = exchange(psionic("Ix", 3, 6), psionic("Bel", 1, 4), {"mode": "mental-stab"},
                   {"mode": "blank-mind"}, dice={"save": [17], "attack": [6, 6, 6],
                                                 "defense": [1]})
    assert res.summary.startswith("Ix strikes at Bel with Mental Stab. Ix saves against "
                                  "Bel's Blank Mind (needed 15, rolled 17). Ix rolls 3d10 "
                                  "for 18.")


def test_no_dice_is_told_as_rolling_nothing() -> None:
    """An attacker with no die in its pool, and a mind without a pool under H-PP-NO-POOL
    false: each rolls nothing (not "0d10 for 0", "no defense mode (0d8)")."""
    res = exchange(psionic("Ix", 2, 6, pool=0, dedicated=[{"purpose": "levitation"}] * 2),
                   psionic("B", 1, 4), {"mode": "mental-stab"}, dice={"defense": [1]})
    assert "Ix rolls nothing. B defends with no defense mode (1d4), a total of 1." \
        in res.summary
    res = exchange(psionic("Ix", 1, 6), mundane("Ogre", 4, 8), {"mode": "mental-stab"},
                   dice={"attack": [1]}, options={"H-PP-NO-POOL": False})
    assert "Ix rolls 1d10 for 1. Ogre rolls nothing, a total of 0." in res.summary
    res = exchange(psionic("Ix", 1, 6), psionic("B", 2, 4), {"mode": "mental-stab"},
                   {"mode": "pinnacle-of-will", "pool_dice": 0}, dice={"attack": [1]})
    assert "B defends with Pinnacle of Will but rolls nothing, a total of 0." in res.summary


def test_synaptic_overload_says_no_damage_and_who_it_brings_down() -> None:
    """Seed: Synaptic Overload: "damage equal to the sum of their own defense dice". A
    member that rolled nothing takes no damage; one brought to 0 hit points or fewer is
    down (the `down` event)."""
    res = exchange(psionic("Ix", 2, 6), psionic("B", 2, 4, hp=3), {"mode": "synaptic-overload"},
                   {"mode": "imagination-swarm"},
                   allies=[mundane("Al", 2, 4, conditions=["asleep"])],
                   dice={"attack": [6, 6], "defense": [1, 3]})
    assert res.summary.endswith("B takes 4 damage. B is down (0 hit points or fewer). Al "
                                "takes no damage.")
    assert [e.combatant for e in res.events if e.type == "down"] == ["b"]
    # one already down (defending with Cognitive Labyrinth) is not brought down again
    res = exchange(psionic("Ix", 3, 8), psionic("B", 2, 6, hp=0), {"mode": "synaptic-overload"},
                   {"mode": "cognitive-labyrinth"}, dice={"attack": [8, 8, 8], "defense": [2, 3]})
    assert after(res, "b")["hp"] == -5
    assert all(e.type != "down" for e in res.events)
    assert res.summary.endswith("B takes 5 damage.")


def test_spells_sacrificed_by_other_members_of_the_group_are_told() -> None:
    """Seed: spellcasters "may choose to sacrifice memorised spells to add a bonus to their
    defense roll": a wave target's sacrifice counts in the group's total and is named."""
    res = exchange(psionic("Ix", 2, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[mundane("Mage", 1, 4, spell_levels=[3])],
                   defenses={"mage": {"sacrifice": 3}},
                   dice={"attack": [8, 8], "defense": [1, 1]})
    assert "B defends with no defense mode (1d4); with Mage (plus 3 for sacrificed spells) " \
        "the group totals 5." in res.summary


# -- audit (mutation): a ladder stepped down, counts and names told as they are ---------------

def test_a_replacement_mode_stepping_the_die_down_stops_at_the_ladder_s_foot() -> None:
    """RULES.md §3.3: "upgrades stop at d20"; a GM's table may step a die down
    (die_steps from -10), and that stops at the ladder's first die, d4, as well."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["modes"]["pinnacle-of-will"]["die_steps"] = -1
    system = PowerPoolSystem(tables)
    for die in (4, 6):
        res = system.resolve({"attacker": psionic("A", 1, 6), "defender": psionic("B", 1, die),
                              "attack": {"mode": "personality-invasion"},
                              "defense": {"mode": "pinnacle-of-will"}},
                             SuppliedDice({"attack": [1], "defense": [1]}))
        assert [r.sides for r in res.rolls] == [6, 4]


def test_a_sacrifice_of_two_spells_too_many_says_two() -> None:
    """Seed: spellcasters "may choose to sacrifice memorised spells": two level-3 spells
    asked of one memorised are counted as two, not "a level-3 spell"."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("B", spell_levels=[3]), {"mode": "mental-stab"},
                 {"sacrifice": [3, 3]})
    assert err.value.detail == ("/defense/sacrifice: B sacrifices 2 level-3 spells but has "
                                "only 1 memorised (memorised: [3])")


def test_an_attack_pool_dice_over_the_limit_is_a_limit_even_above_the_pool() -> None:
    """API.md limits: at most 100 dice in a pool. pool_dice of 101 is over the limit
    whatever the pool holds (LimitExceeded at the field, without the hint for a whole
    pool), not a rule of the pool."""
    with pytest.raises(LimitExceeded) as err:
        exchange(psionic("A", 3, 6), psionic("B"), {"mode": "mental-stab", "pool_dice": 101})
    assert err.value.problems[0].path == "/attack/pool_dice"
    assert "give pool_dice" not in err.value.problems[0].message


def test_a_psionic_ally_joining_does_not_make_the_refusal_of_allies_speak_of_a_wave() -> None:
    """A psionic ally joining with imagination-swarm is not a mind struck: a non-psionic
    ally without the defender's imagination-swarm is refused for the defender alone."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab"}, None,
                 allies=[psionic("Seer"), mundane("W")],
                 defenses={"seer": {"mode": "imagination-swarm"}})
    assert err.value.rule == "ally-needs-imagination-swarm"
    assert err.value.detail == ("/allies/1: non-psionic allies are drawn in only by a "
                                "defender using imagination-swarm")


def test_a_wave_s_summary_names_every_creature_attacked() -> None:
    """Seed: Psionic Wave: "The attacker may attack multiple opponents simultaneously":
    the summary names them all."""
    res = exchange(psionic("A", 4, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("C", 1, 4), mundane("D", 1, 6)],
                   dice={"attack": [8, 8, 8, 8], "defense": [4, 4, 6]})
    assert res.summary.startswith("A strikes at B, C and D with Psionic Wave.")


def test_missing_defense_dice_are_counted_after_the_members_they_cover() -> None:
    """RULES.md 4: the "dice needed" error names the count still needed: a wave at 1d6,
    2d6 and 2d6 minds with two d6 given covers the first mind, and the other two still
    need three."""
    with pytest.raises(DiceNeeded) as err:
        exchange(psionic("A", 2, 4), psionic("B", 1, 6), {"mode": "psionic-wave"},
                 defenders=[psionic("C", 2, 6), psionic("D", 2, 6)],
                 dice={"attack": [1, 1], "defense": [1, 1]})
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("defense", 6, 3)


def test_two_spells_of_one_level_sacrificed_are_both_spent() -> None:
    """Seed: the bonus is "the total level of memorised spells sacrificed": two level-3
    spells add 6, and both are gone from the memorised spells."""
    res = exchange(psionic("A", 2, 6), mundane("Mage", 2, 4, spell_levels=[3, 1, 3]),
                   {"mode": "mental-stab"}, {"sacrifice": [3, 3]},
                   dice={"attack": [5, 5], "defense": [1, 1]})
    assert res.to_json()["defense_total"] == 8
    assert after(res, "mage")["spell_levels"] == [1]


def test_an_ally_drawn_in_is_dazed_even_when_blank_mind_stops_the_attack() -> None:
    """Seed: allies drawn in by Imagination Swarm "are dazed": they are drawn in when the
    defense is chosen, before the attacker's save against another mind's Blank Mind, so
    the save failing does not spare them."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   {"mode": "imagination-swarm"}, defenders=[psionic("C", 1, 4)],
                   defenses={"c": {"mode": "blank-mind"}}, allies=[mundane("W")],
                   dice={"save": [1]})
    assert res.to_json()["outcome_detail"] == "blank-mind-save-failed"
    assert "dazed" in after(res, "w")["conditions"]
    assert [e.combatant for e in res.events if e.type == "dazed"] == ["a", "w"]


def test_a_die_lost_is_told_as_a_die() -> None:
    """RULES.md §3.2 step 5: the rebuffed attacker "loses one pool die", and so does one
    failing its save against Blank Mind: one die is "a die", and it "is" lost."""
    rebuffed = exchange(psionic("A", 2, 6), psionic("B", 2, 6), {"mode": "mental-stab"},
                        dice={"attack": [1, 1], "defense": [6, 6]})
    assert rebuffed.summary.endswith("B holds: A loses a die from its pool and is stunned "
                                     "for a round.")
    saved = exchange(psionic("A", 2, 6), psionic("B", 2, 6), {"mode": "mental-stab"},
                     {"mode": "blank-mind"}, dice={"save": [1]})
    assert saved.summary.endswith("the attack fails outright and a die of the pool is lost.")


def test_a_defender_rolling_nothing_is_told_why_by_its_awareness_condition() -> None:
    """Seed: "If the defender is not aware of the attacker, is surprised, stunned, asleep,
    unconscious" it rolls nothing: the summary names that condition, not another one
    (frightened) the defender also has."""
    res = exchange(psionic("A", 1, 6), psionic("B", 2, 6, conditions=["frightened", "asleep"]),
                   {"mode": "mental-stab"}, dice={"attack": [1]})
    assert "B, asleep, rolls nothing, a total of 0." in res.summary


def test_a_level_1_spell_sacrificed_is_told() -> None:
    """Seed: the bonus is "the total level of memorised spells sacrificed": a single
    level-1 spell adds 1 and is told, for the mind struck first and for another member."""
    res = exchange(psionic("Ix", 2, 8), mundane("Mage", 1, 4, spell_levels=[1]),
                   {"mode": "mental-stab"}, {"sacrifice": 1},
                   dice={"attack": [8, 8], "defense": [1]})
    assert "Mage defends with no defense mode (1d4) plus 1 for sacrificed spells, a total " \
        "of 2." in res.summary
    res = exchange(psionic("Ix", 2, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[mundane("Mage", 1, 4, spell_levels=[1])],
                   defenses={"mage": {"sacrifice": 1}},
                   dice={"attack": [8, 8], "defense": [1, 1]})
    assert "with Mage (plus 1 for sacrificed spells) the group totals 3." in res.summary


def test_a_wave_s_barrier_mantra_is_told_beside_the_control_it_won() -> None:
    """Seed: Barrier Mantra: "stunned for one round instead of falling under the psionic
    control": in a wave where another mind falls, the one using it is told as well."""
    res = exchange(psionic("Ix", 3, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   defenders=[psionic("C", 1, 4)], defenses={"c": {"mode": "barrier-mantra"}},
                   dice={"attack": [8, 8, 8], "defense": [1, 1]})
    assert res.summary.endswith("Ix wins: B falls under its psionic control (kept by an "
                                "action each round). Barrier Mantra leaves C stunned for a "
                                "round instead of controlled.")


def test_one_creature_kept_by_a_die_is_told_so() -> None:
    """Seed: control "may be maintained either by dedicating a die ... or by the
    controller using an action each round": the summary says which was chosen."""
    res = exchange(psionic("A", 3, 6), psionic("B", 1, 4),
                   {"mode": "mental-stab", "keep_by": "die"},
                   dice={"attack": [6, 6, 6], "defense": [1]})
    assert res.summary.endswith("A wins: B falls under its psionic control (kept by a "
                                "dedicated die).")


def test_a_mode_s_condition_and_one_damage_bringing_a_mind_down_are_told() -> None:
    """Seed: Personality Invasion: "the target is mentally possessed"; Synaptic Overload
    deals "damage equal to the sum of their own defense dice": the summary says each,
    and a single point that brings the defender to 0 is told as bringing it down."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4), {"mode": "personality-invasion"},
                   dice={"attack": [6, 6], "defense": [1]})
    assert res.summary.endswith("(kept by an action each round). B is possessed.")
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4, hp=1), {"mode": "synaptic-overload"},
                   dice={"attack": [6, 6], "defense": [1]})
    assert res.summary.endswith("B takes 1 damage. B is down (0 hit points or fewer).")


def test_a_wave_at_two_puppets_tells_each_redirection() -> None:
    """Seed: attacking a creature under psionic control "automatically attacks the
    controller": each puppet struck is told as striking its controller instead."""
    a = psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action", "wave": "w"},
                                        {"id": "c", "kept_by": "action", "wave": "w"}])
    res = exchange(psionic("X", 3, 6), psionic("B", controlled_by="a"), {"mode": "psionic-wave"},
                   defenders=[psionic("C", controlled_by="a")], controller=a,
                   dice={"attack": [6, 6, 6], "defense": [1, 1]})
    assert res.summary.startswith(
        "X strikes at B and C with Psionic Wave. B is under A's control, so the attack "
        "strikes A instead. C is under A's control, so the attack strikes A instead.")


def test_an_ally_drawn_in_is_dazed_for_the_swarm_s_rounds_not_the_attacker_s() -> None:
    """Seed: the allies drawn in by Imagination Swarm "are dazed for one round": the
    table's ally_dazed_round_ends (2: this round's end and the next), where joining
    dazes the attacker only until this round ends."""
    res = exchange(psionic("A", 3, 8), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8)],
                   dice={"attack": [1, 1, 1], "defense": [4, 8]})
    assert after(res, "guard")["condition_rounds"] == {"dazed": 2}
    assert after(res, "a")["condition_rounds"]["dazed"] == 1


# -- audit (mutation): the request schema and describe as published ----------------------

def test_the_request_schema_offers_each_kind_of_mode_where_it_belongs() -> None:
    """A VTT builds its choices from the published request schema: attack modes for the
    attack, defense modes (or null, no mode) for a defense; never one of the other kind."""
    schema = SYSTEM.request_schema()
    attack = schema["properties"]["attack"]["properties"]["mode"]["enum"]
    defense = schema["$defs"]["defense"]["properties"]["mode"]["enum"]
    assert sorted(attack) == sorted(m for m, d in SYSTEM.tables["modes"].items()
                                    if d["kind"] == "attack")
    assert sorted(defense, key=str) == sorted(
        [None, *(m for m, d in SYSTEM.tables["modes"].items() if d["kind"] == "defense")],
        key=str)


def test_a_defense_with_a_null_mode_is_no_defense_mode() -> None:
    """API.md: a defense's mode may be null, as an encounter's {"mode": null} is: the
    defender rolls its pool with no mode."""
    res = exchange(psionic("A", 1, 6), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": None}, dice={"attack": [1], "defense": [4]})
    assert res.to_json()["defense"]["mode"] is None and res.outcome == "defender"


def test_a_wave_takes_at_most_63_further_defenders() -> None:
    """A wave's further targets (and the allies, and the controllers given) are at most
    63, with the defender 64, an encounter's combatants (API.md limits)."""
    many = [psionic(f"C{i}", 1, 4) for i in range(64)]
    request = {"attacker": psionic("A"), "defender": psionic("B"),
               "attack": {"mode": "psionic-wave"}}
    SYSTEM.validate_request({**request, "defenders": many[:63]})
    for member in ("defenders", "allies", "controllers"):
        with pytest.raises(InvalidInput) as err:
            SYSTEM.validate_request({**request, member: many})
        assert err.value.problems[0].path == f"/{member}"


def test_an_effect_declined_twice_is_refused() -> None:
    """attack.decline names each effect the attacker chooses not to use once."""
    with pytest.raises(InvalidInput) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "subconscious-subversion",
                                              "decline": ["frightened", "frightened"]})
    assert err.value.problems[0].path == "/attack/decline"


def test_describe_s_modes_are_copies_the_caller_may_change() -> None:
    """describe answers data: a caller changing its modes changes no exchange after."""
    system = PowerPoolSystem()
    mantra = system.describe()["modes"]["defenses"][0]
    assert mantra["id"] == "barrier-mantra"
    mantra["instead_of_control"]["round_ends"] = 9
    assert system.tables["modes"]["barrier-mantra"]["instead_of_control"]["round_ends"] == 2


@pytest.mark.parametrize(("more", "path", "message"), [
    ({"attack": {"mode": "subconscious-subversion", "decline": ["x" * 65]}},
     "/attack/decline/0", "is too long"),
    ({"attack": {"mode": "mental-stab", "keep_by": None}}, "/attack/keep_by",
     'null is not one of ["action", "die"]'),
    ({"seed": 1.5}, "/seed", 'is not of type "integer"'),
    ({"system": "revised-2e"}, "/system", 'is not "power-pool"'),
    ({"defense": {"mode": None, "foo": 1}}, "/defense", 'unexpected member(s) ["foo"]'),
    ({"attack": {"mode": "mental-stab", "perceives": "no"}}, "/attack/perceives",
     'is not of type "boolean"'),
    ({"options": 1}, "/options", 'is not of type "object"'),
    ({"defenses": {"c": {"pool_dice": -1}}}, "/defenses/c/pool_dice", "less than the minimum"),
])
def test_the_request_schema_refuses_what_no_exchange_takes(more: dict[str, Any], path: str,
                                                           message: str) -> None:
    """API.md: invalid params name the field: an effect's name over 64 characters, a
    keep_by other than action or die, a seed that is not an integer, another system's
    id, a member a defense does not have, perceives not a boolean, options not an
    object, a further defense as no defense is."""
    request = {"attacker": psionic("A"), "defender": psionic("B"),
               "attack": {"mode": "mental-stab"}, **more}
    with pytest.raises(InvalidInput) as err:
        SYSTEM.validate_request(request)
    [problem] = err.value.problems
    assert problem.path == path and message in problem.message


def test_a_defender_may_sacrifice_up_to_200_spells() -> None:
    """The request schema takes as many spells sacrificed as a sheet memorises (200)."""
    res = exchange(psionic("A", 1, 6), mundane("Mage", 1, 4, spell_levels=[1] * 200),
                   {"mode": "mental-stab"}, {"sacrifice": [1] * 200},
                   dice={"attack": [1], "defense": [1]})
    assert res.to_json()["defense_total"] == 201
    with pytest.raises(InvalidInput) as err:
        SYSTEM.validate_request({"attacker": psionic("A"), "defender": psionic("B"),
                                 "attack": {"mode": "mental-stab"},
                                 "defense": {"sacrifice": [1] * 201}})
    assert err.value.problems[0].path == "/defense/sacrifice"


def test_describe_lists_the_conditions_and_outcomes_and_its_tables_are_a_copy() -> None:
    """describe answers data: every condition a sheet may have, both outcomes an
    exchange may have, and tables a caller may change without changing the system."""
    system = PowerPoolSystem()
    d = system.describe()
    assert d["conditions"] == ["unaware", "surprised", "stunned", "asleep", "unconscious",
                               "dazed", "frightened", "possessed"]
    assert d["outcomes"] == ["attacker", "defender"]
    d["tables"]["modes"]["barrier-mantra"]["instead_of_control"]["round_ends"] = 9
    assert system.tables["modes"]["barrier-mantra"]["instead_of_control"]["round_ends"] == 2


def test_a_replacement_ladder_is_the_combatant_s_dice() -> None:
    """RULES.md: a GM may load a replacement table: with a ladder stopping at d12 a d20
    creature is refused at its die."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["ladder"] = [4, 6, 8, 10, 12]
    with pytest.raises(InvalidCombatant) as err:
        PowerPoolSystem(tables).combatant(psionic("A", 2, 20))
    assert err.value.problems[0].path == "/die"


def test_a_replacement_mode_that_works_while_unaware_defends_an_unaware_mind() -> None:
    """RULES.md §3.2 step 2: an unaware defender "may defend only with" a mode that works
    while unaware: the table's defends_while_unaware says which, whatever its id."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["modes"]["pinnacle-of-will"]["defends_while_unaware"] = True
    res = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("A", 1, 6), "defender": psionic("B", 1, 4, conditions=["asleep"]),
         "attack": {"mode": "personality-invasion"}, "defense": {"mode": "pinnacle-of-will"}},
        SuppliedDice({"attack": [1], "defense": [6]}))
    assert res.to_json()["defense_total"] == 6 and res.outcome == "defender"


def test_an_attacker_knowing_no_attack_mode_cannot_attack() -> None:
    """Seed 001: a psionic creature attacks with the modes it knows: none, no attack."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", attacks=[]), psionic("B"), {"mode": "mental-stab"})
    assert err.value.rule == "mode-not-known"


def test_each_die_says_who_rolled_it_and_only_this_exchange_s_dice_are_given() -> None:
    """RULES.md 4: "Every resolution returns every die rolled (sides, value, purpose, who
    rolled it ...)": each member's defense dice are its own, and a dice source used for
    an exchange before gives this exchange only the dice rolled for it."""
    dice = SuppliedDice({"attack": [1, 8], "defense": [2, 3, 4]})
    request = {"attacker": psionic("A", 1, 8), "defender": psionic("B", 1, 4),
               "defenders": [psionic("C", 1, 6)], "attack": {"mode": "psionic-wave"}}
    first = SYSTEM.resolve(request, dice)
    assert [(r.purpose, r.by) for r in first.rolls] == [
        ("attack", "a"), ("defense", "b"), ("defense", "c")]
    second = SYSTEM.resolve({**request, "defenders": []}, dice)
    assert [(r.purpose, r.value) for r in second.rolls] == [("attack", 8), ("defense", 4)]


def test_the_save_against_blank_mind_is_rolled_on_the_table_s_die() -> None:
    """RULES.md: a GM may load replacement tables; a save on a d12 is rolled on a d12."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["save"]["sides"] = 12
    res = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("A", 1, 6, blank_mind_save=10), "defender": psionic("B", 1, 4),
         "attack": {"mode": "mental-stab"}, "defense": {"mode": "blank-mind"}},
        SuppliedDice({"save": [12], "attack": [1], "defense": [4]}))
    assert (res.rolls[0].purpose, res.rolls[0].sides) == ("save", 12)


def test_a_wave_s_defense_mode_is_the_mind_struck_first_s() -> None:
    """Result field defense: {mode, members}: mode is that of the mind struck first; each
    member's own is in members."""
    res = exchange(psionic("A", 2, 8), psionic("B", 1, 4), {"mode": "psionic-wave"},
                   {"mode": "pinnacle-of-will"}, defenders=[psionic("C", 1, 4)],
                   defenses={"c": {"mode": "barrier-mantra"}},
                   dice={"attack": [1, 1], "defense": [6, 4]})
    out = res.to_json()["defense"]
    assert out["mode"] == "pinnacle-of-will"
    assert [m["mode"] for m in out["members"]] == ["pinnacle-of-will", "barrier-mantra"]


def test_refusals_of_a_defense_say_what_the_defender_has() -> None:
    """H-PP-NO-POOL false: a mind without a pool "rolls nothing", so it has no die to roll
    whatever its hit dice; an unaware defender is told by the first condition it has."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), mundane("Ogre", 3, 8), {"mode": "mental-stab"},
                 {"pool_dice": 1}, options={"H-PP-NO-POOL": False})
    assert err.value.detail == "Ogre has 0 dice to roll, not 1"
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B", conditions=["asleep", "surprised"]),
                 {"mode": "mental-stab"}, {"mode": "pinnacle-of-will"})
    assert err.value.detail.startswith("B is asleep: it may defend only with a mode that "
                                       "works while unaware")


def test_a_target_not_perceived_is_the_creature_the_refusal_is_about() -> None:
    """API.md 4001: combatant is "the creature the refusal is about": the one the attacker
    cannot perceive."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A"), psionic("B"), {"mode": "mental-stab", "perceives": False})
    assert (err.value.rule, err.value.combatant) == ("target-not-perceived", "b")


def test_a_rebuffed_attack_on_a_puppet_is_held_by_its_controller() -> None:
    """Seed: an attack on a controlled creature "automatically attacks the controller":
    when it fails, the summary says the controller held, not the puppet."""
    res = exchange(psionic("X", 1, 6), psionic("B", controlled_by="a"), {"mode": "mental-stab"},
                   controller=psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                   dice={"attack": [1], "defense": [6, 6]})
    assert res.summary.endswith("A holds: X loses a die from its pool and is stunned for a "
                                "round.")


def test_each_mode_standing_in_for_control_is_told_in_one_sentence() -> None:
    """RULES.md: a GM's replacement table may give another defense mode an effect instead
    of control: the summary names each mode's effect, joined with "and"."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["modes"]["pinnacle-of-will"]["instead_of_control"] = {"condition": "dazed",
                                                                 "round_ends": 1}
    res = PowerPoolSystem(tables).resolve(
        {"attacker": psionic("Ix", 3, 8), "defender": psionic("B", 1, 4),
         "defenders": [psionic("C", 1, 4)], "attack": {"mode": "psionic-wave"},
         "defense": {"mode": "barrier-mantra"}, "defenses": {"c": {"mode": "pinnacle-of-will"}}},
        SuppliedDice({"attack": [8, 8, 8], "defense": [1, 1]}))
    assert res.summary.endswith(
        "Ix wins, but Barrier Mantra leaves B stunned for a round instead of controlled and "
        "Pinnacle of Will leaves C dazed until this round ends instead of controlled.")


def test_spells_sacrificed_are_an_event_of_the_one_who_gave_them_up() -> None:
    """Seed: a spellcaster "may choose to sacrifice memorised spells": the event names it."""
    res = exchange(psionic("A", 2, 6), mundane("Mage", 2, 4, spell_levels=[1, 3]),
                   {"mode": "mental-stab"}, {"sacrifice": [3]},
                   dice={"attack": [5, 5], "defense": [3, 3]})
    [event] = [e for e in res.events if e.type == "spells-sacrificed"]
    assert (event.combatant, event.data) == ("mage", {"levels": [3], "bonus": 3})


def test_describe_s_choice_schema_is_a_copy_the_caller_may_change() -> None:
    """describe answers data: changing the encounter choice schema it gives changes no
    later answer."""
    d = SYSTEM.describe()
    d["choice_schema"]["properties"]["attack"]["required"].append("extra")
    assert SYSTEM.describe()["choice_schema"]["properties"]["attack"]["required"] == [
        "mode", "target"]


def test_the_dice_purposes_follow_the_tables() -> None:
    """dice_purposes: the dice a caller supplies are the table's ladder (a GM's ladder
    stopping at d12 has no d20), and the save is the one against Blank Mind."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["ladder"] = [4, 6, 8, 10, 12]
    purposes = {p["purpose"]: p for p in PowerPoolSystem(tables).dice_purposes()}
    assert purposes["attack"]["sides"] == purposes["defense"]["sides"] == [4, 6, 8, 10, 12]
    assert "Blank Mind" in purposes["save"]["text"]


def test_control_may_be_kept_by_a_die_of_the_pool_not_rolled() -> None:
    """Seed: a side "may choose to only roll a portion of their available power pool",
    and control is kept "by dedicating a die from the controller's current power pool":
    an attacker rolling none of its 2 dice still has one to dedicate."""
    res = exchange(psionic("A", 2, 6), psionic("B", 1, 4),
                   {"mode": "mental-stab", "pool_dice": 0, "keep_by": "die"},
                   {"pool_dice": 0}, options={"H-PP-TIE": "attacker"})
    assert after(res, "a")["controlling"] == [{"id": "b", "kept_by": "die", "wave": None}]


def test_without_h_pp_no_pool_a_psionic_mind_still_rolls_its_pool() -> None:
    """H-PP-NO-POOL false takes the dice of a mind without a power pool only: a psionic
    defender rolls its pool."""
    res = exchange(psionic("A", 1, 6), psionic("B", 2, 4), {"mode": "mental-stab"},
                   dice={"attack": [1], "defense": [2, 3]}, options={"H-PP-NO-POOL": False})
    assert res.to_json()["defense_total"] == 5


def test_with_all_dice_an_ally_rolls_its_pool_not_its_hit_dice() -> None:
    """H-PP-GROUP 'all-dice': a non-psionic ally drawn in rolls "its whole pool", the dice
    it has now, not its hit dice."""
    res = exchange(psionic("A", 1, 4), psionic("B", 1, 4), {"mode": "mental-stab"},
                   {"mode": "imagination-swarm"}, allies=[mundane("Guard", 3, 8, pool=1)],
                   dice={"attack": [1], "defense": [1, 1]},
                   options={"H-PP-GROUP": "all-dice"})
    assert [m["dice"] for m in res.to_json()["defense"]["members"]] == [1, 1]


def test_a_wave_at_one_mind_with_an_ally_drawn_in_needs_a_die_for_each_to_keep_by_dice() -> None:
    """Seed 001: control kept by "dedicating a die ... to it" is a die for each creature:
    a Psionic Wave at one mind whose Imagination Swarm draws an ally in would control two,
    so an attacker with one die is refused keeping them by dice."""
    with pytest.raises(RulesViolation) as err:
        exchange(psionic("A", 1, 6), psionic("B", 1, 4),
                 {"mode": "psionic-wave", "keep_by": "die"}, {"mode": "imagination-swarm"},
                 allies=[mundane("W")])
    assert err.value.rule == "no-die-to-dedicate"
