"""Ids made from names, in every system (docs/COMBATANTS.md: `id` is "generated from
`name` when absent"): letters of any script are kept, and a clash of an id the caller
did not give is refused at the name it was made from, a field the caller wrote."""

from __future__ import annotations

from typing import Any

import pytest

from engine.combat_strength import SYSTEM as COMBAT_STRENGTH
from engine.dice import RandomDice
from engine.errors import InvalidInput, RulesViolation
from engine.power_pool import SYSTEM as POWER_POOL
from engine.revised_2e import SYSTEM as REVISED
from engine.system import System, slug

JSON = dict[str, Any]


def cs(name: str, **more: Any) -> JSON:
    return {"name": name, "attack_strength": 30, "defense_strength": 30, **more}


def r2(name: str, **more: Any) -> JSON:
    return {"name": name, "kind": "psionicist", "level": 5, "psp_max": 50, "int": 14,
            "wis": 13, "attacks": ["mind-thrust"], "defenses": ["thought-shield"], **more}


def pp(name: str, **more: Any) -> JSON:
    return {"name": name, "hit_dice": 2, "die": 6, "attacks": ["mental-stab"], **more}


SYSTEMS: list[tuple[System, Any, JSON]] = [
    (COMBAT_STRENGTH, cs, {"mode": "mind-thrust"}),
    (REVISED, r2, {"mode": "mind-thrust"}),
    (POWER_POOL, pp, {"mode": "mental-stab"}),
]


@pytest.mark.parametrize("name,made", [
    ("Korr the Red", "korr-the-red"), ("  Cave_Goblin #2 ", "cave-goblin-2"),
    ("Zoë", "zoë"), ("Zoé", "zoé"), ("Zoe\u0308", "zoë"), ("影", "影"), ("霧", "霧"),
    ("Pê O'Neil", "pê-o-neil"), ("हिन्दी नाम", "हिन्दी-नाम"), ("---", ""),
    ("x" * 63 + " yz", "x" * 63), ("Ｋｏｒｒ ﬁre", "korr-fire"),
])
def test_an_id_made_from_a_name_keeps_letters_of_any_script(name: str, made: str) -> None:
    """Lower case, letters, marks and digits of any script, hyphens between words, at
    most 64 characters; NFKC, so "Zoë" typed with a combining diaeresis is the same
    id (and full-width "Ｋｏｒｒ" or the ligature "ﬁ" the letters they stand for), but
    accents are kept: "Zoë" and "Zoé" are two creatures. ASCII names give the ids they
    always gave."""
    assert slug(name) == made


@pytest.mark.parametrize("name", ["\u0301", "\u0301\u0308\u20dd", "- \u0301 -", "\u093f"])
def test_a_name_of_marks_alone_makes_no_id_as_one_with_no_letter_or_digit(name: str) -> None:
    """docs/COMBATANTS.md: "a name with no letter or digit makes ``combatant`` in
    revised-2e and power-pool, and is −32602 at ``name`` in combat-strength". Combining
    marks (an acute, a diaeresis, an enclosing circle, a Devanagari vowel sign) with no
    letter to sit on are no letter: they made an id of those marks, which shows as
    nothing or stacks on what a chat card prints before it. A mark on a letter is kept."""
    assert slug(name) == ""
    assert REVISED.combatant({"name": name})["id"] == "combatant"
    assert POWER_POOL.combatant({"name": name, "hit_dice": 1, "die": 4})["id"] == "combatant"
    with pytest.raises(InvalidInput) as err:
        COMBAT_STRENGTH.combatant({"name": name})
    assert [p.path for p in err.value.problems] == ["/name"]
    assert slug("e\u0301") == "é" and slug("\u0915\u093f") == "\u0915\u093f"


@pytest.mark.parametrize(("name", "made"), [
    ("\u0301 Bob", "bob"), ("\u0301\u0308Bob \u0301Ann", "bob-ann"),
    ("Bob \u20dd", "bob"), ("Zoe\u0301 \u0301", "zoé"), ("9\u20e3 lives", "9\u20e3-lives"),
])
def test_a_mark_with_no_letter_or_digit_before_it_is_left_out_of_the_id(
        name: str, made: str) -> None:
    """A combining mark first in a word has nothing to sit on: in an id it shows as
    nothing or stacks on what a chat card prints before it, as a name of marks alone
    would. It is left out; one on a letter or digit stays."""
    assert slug(name) == made


@pytest.mark.parametrize("system,make,attack", SYSTEMS)
@pytest.mark.parametrize("first,second", [("Zoë", "Zoé"), ("影", "霧")])
def test_two_names_in_other_scripts_make_two_ids_in_an_exchange(
        system: System, make: Any, attack: JSON, first: str, second: str) -> None:
    """They were both "zo" (or "combatant"): power-pool and revised-2e refused the
    exchange at /defender/id, which the caller never wrote; combat-strength took Zoë
    and Zoé for one creature and refused 影 (no id could be made)."""
    res = system.resolve({"attacker": make(first), "defender": make(second),
                          "attack": attack}, RandomDice(1))
    assert (res.attacker.id, res.defender.id) == (slug(first), slug(second))


@pytest.mark.parametrize("system,make,attack", SYSTEMS)
def test_a_clash_of_ids_made_from_names_is_refused_at_the_name(
        system: System, make: Any, attack: JSON) -> None:
    """Two creatures named "Orc" without ids: the defender's id was made from its name,
    so the refusal points there and says so; an id the caller gave is named as before."""
    with pytest.raises(InvalidInput) as err:
        system.resolve({"attacker": make("Orc"), "defender": make("orc!"),
                        "attack": attack}, RandomDice(1))
    [problem] = err.value.problems
    assert problem.path == "/defender/name"
    assert problem.message.startswith('the id made from this name, "orc", is ')
    with pytest.raises(InvalidInput) as err:
        system.resolve({"attacker": make("Orc"), "defender": make("X", id="orc"),
                        "attack": attack}, RandomDice(1))
    assert err.value.problems[0].path == "/defender/id"
    assert err.value.problems[0].message.startswith('id "orc" is ')


def test_power_pool_names_where_the_made_id_is_used_already() -> None:
    """An Imagination Swarm ally named like the defender."""
    request = {"attacker": pp("Ix", defenses=["imagination-swarm"]),
               "defender": pp("Bob", defenses=["imagination-swarm"]),
               "attack": {"mode": "mental-stab"}, "defense": {"mode": "imagination-swarm"},
               "allies": [{"name": "BOB", "hit_dice": 1, "die": 4}]}
    with pytest.raises(InvalidInput) as err:
        POWER_POOL.resolve(request, RandomDice(1))
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/allies/0/name", 'the id made from this name, "bob", is already used at /defender: '
                          "give each creature an id of its own")]


def test_revised_2e_still_calls_one_sheet_on_both_sides_a_self_attack() -> None:
    """RULES.md §1.4: the same combatant on both sides attacks its own mind (4001), made
    id or not; only two different creatures sharing an id are a mistake in the params."""
    with pytest.raises(RulesViolation) as err:
        REVISED.resolve({"attacker": r2("Orc"), "defender": r2("Orc"),
                         "attack": {"mode": "mind-thrust"}}, RandomDice(1))
    assert err.value.rule == "target-is-attacker"


@pytest.mark.parametrize("system,make", [(s, m) for s, m, _ in SYSTEMS])
def test_end_round_refuses_a_made_id_clash_at_the_name(system: System, make: Any) -> None:
    """``exchange.end_round`` takes each combatant once: "Goblin" and "goblin!" both
    make "goblin"."""
    with pytest.raises(InvalidInput) as err:
        system.end_round({"combatants": [make("Goblin"), make("goblin!")]}, RandomDice(1))
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/combatants/1/name", 'the id made from this name, "goblin", is combatant 0\'s '
                              "too: give each combatant its own")]


def test_end_round_names_the_first_combatant_with_the_id_for_every_later_one() -> None:
    """Three goblins: the second and the third are each told the id is combatant 0's."""
    with pytest.raises(InvalidInput) as err:
        REVISED.end_round({"combatants": [r2("Goblin"), r2("goblin!"), r2("GOBLIN")]},
                          RandomDice(1))
    assert [(p.path, p.message) for p in err.value.problems] == [
        (f"/combatants/{i}/name", 'the id made from this name, "goblin", is combatant 0\'s '
                                  "too: give each combatant its own") for i in (1, 2)]


def test_power_pool_refuses_a_puppet_whose_made_id_is_a_combatant_s_at_its_name() -> None:
    with pytest.raises(InvalidInput) as err:
        POWER_POOL.end_round({"combatants": [pp("Goblin")], "puppets": [pp("GOBLIN")]},
                             RandomDice(1))
    assert err.value.problems[0].path == "/puppets/0/name"


def test_combat_strength_encounter_refuses_a_made_id_clash_at_the_name() -> None:
    """combat-strength adds no -2 suffix (the other systems do): a second "Orc" without
    an id is refused at its name; an id given twice is "already in the encounter" at
    /combatant/id, the words the Roll20 Mod script reads as a replayed add."""
    state, cid = COMBAT_STRENGTH.encounter_add(COMBAT_STRENGTH.encounter_new(None), cs("Orc"))
    assert cid == "orc"
    with pytest.raises(InvalidInput) as err:
        COMBAT_STRENGTH.encounter_add(state, cs("ORC"))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/combatant/name", 'the id made from this name, "orc", is already in the encounter')]
    with pytest.raises(InvalidInput) as err:
        COMBAT_STRENGTH.encounter_add(state, cs("Other", id="orc"))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/combatant/id", 'id "orc" is already in the encounter')]


@pytest.mark.parametrize("system,make", [(REVISED, r2), (POWER_POOL, pp)])
def test_encounters_give_names_of_other_scripts_their_own_ids(system: System,
                                                             make: Any) -> None:
    state = system.encounter_new(None)
    ids = []
    for name in ("影", "霧", "Zoë", "Zoé", "Zoë"):
        state, cid = system.encounter_add(state, make(name))
        ids.append(cid)
    assert ids == ["影", "霧", "zoë", "zoé", "zoë-2"]


@pytest.mark.parametrize("system,make", [(REVISED, r2), (POWER_POOL, pp)])
def test_an_encounter_s_second_made_id_of_a_long_name_stays_within_64(system: System,
                                                                       make: Any) -> None:
    """An id is at most 64 characters (a choice's ids are too); the id made from a long
    name takes its number by giving up its last letters."""
    state = system.encounter_new(None)
    state, first = system.encounter_add(state, make("x" * 70))
    state, second = system.encounter_add(state, make("x" * 70))
    assert (first, second) == ("x" * 64, "x" * 62 + "-2")
