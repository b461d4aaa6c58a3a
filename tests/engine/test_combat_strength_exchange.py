"""combat-strength: one exchange (RULES.md 2.2-2.7, seed 000 steps iii-v)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.combat_strength import SYSTEM
from engine.combat_strength.exchange import Effect, apply_effects
from engine.combat_strength.system import CombatStrength
from engine.dice import RandomDice, SuppliedDice
from engine.errors import DiceNeeded, InvalidCombatant, InvalidInput, RulesViolation

from .test_combat_strength_tables import ATTACKS, DEFENSES, TABLE_A


def psionic(cid: str, attack: int, defense: int, **more: Any) -> dict[str, Any]:
    return {"id": cid, "name": cid.title(), "attack_strength": attack,
            "defense_strength": defense, **more}


def request(attacker: dict[str, Any], defender: dict[str, Any], mode: str,
            defense: str | None = None, range_: str = "short", **more: Any) -> dict[str, Any]:
    return {"attacker": attacker, "defender": defender,
            "attack": {"mode": mode, "range": range_},
            "defense": None if defense is None else {"mode": defense}, **more}


def test_penetration_example_6_6_1_is_11_through_resolve() -> None:
    """Seed 000 iv: 'a six ... followed by a six and a one ... 6+(6-1)+(1-1) = 11'."""
    # Combat Strength 30 + 10 = 40: one bonus die; ego whip vs shield thoughts is 3 (table A)
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip", "shield-thoughts")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [6, 6, 1]}))
    data = res.to_json()
    assert data["bonus_dice"] == 1
    assert data["bonus_rolls"] == [11]
    assert data["damage"] == 3 + 11
    assert [(r["value"], r["follows"]) for r in data["rolls"]] == [(6, None), (6, 0), (1, 1)]
    assert all(r["purpose"] == "damage" for r in data["rolls"])
    assert data["defender"]["after"]["defense_strength"] == 40 - 14
    assert data["table"] == "combat" and data["attack_cost"] == 7
    assert data["capped"] is False


@pytest.mark.parametrize("strength,dice", [(24, 0), (25, 1), (49, 1), (50, 2), (99, 3),
                                           (124, 4), (125, 5), (400, 5)])
def test_bonus_dice_one_per_full_25_combat_strength_at_most_five(strength: int,
                                                                  dice: int) -> None:
    """Seed iii: 'an additional 1d6 ... for every full 25 points of the current Combat
    Strength of the attacker, up to a maximum of +5d6'."""
    attacker = psionic("ann", strength - strength // 2, strength // 2)
    req = request(attacker, psionic("bo", 10, 100), "mind-thrust", "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [1] * 10}))
    assert res.fields["bonus_dice"] == dice
    assert res.fields["damage"] == 12 + dice  # mind thrust vs mind blank: 12 (table A)


@pytest.mark.parametrize("strength,range_,dice", [(60, "medium", 1), (60, "long", 0),
                                                  (130, "long", 3), (30, "long", 0)])
def test_range_costs_one_die_medium_two_long_never_below_zero(strength: int, range_: str,
                                                              dice: int) -> None:
    """Seed iii: 'Medium range attacks deal 1d6 less damage, and at long range 2d6 less'."""
    req = request(psionic("ann", strength, 0), psionic("bo", 10, 50), "ego-whip",
                  "mind-blank", range_)
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [2] * 10}))
    assert res.fields["bonus_dice"] == dice


@pytest.mark.parametrize("range_,dice", [("short", 5), ("medium", 4), ("long", 3)])
def test_range_counts_from_the_five_dice_cap_not_from_the_uncapped_count(range_: str,
                                                                         dice: int) -> None:
    """Seed iii: '1d6 for every full 25 points ... up to a maximum of +5d6. Medium range
    attacks deal 1d6 less damage, and at long range deal 2d6 less'; RULES.md 2.4 in that
    order: 'at most +5d6; -1d6 at medium range, -2d6 at long range'. Combat Strength 200
    has eight full 25s, capped at five dice, so long range leaves 3 (not 8 - 2 = 6, capped
    at 5)."""
    req = request(psionic("ann", 100, 100), psionic("bo", 10, 100), "mind-thrust",
                  "mind-blank", range_)
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [1] * 5}))
    assert res.fields["bonus_dice"] == dice
    assert res.fields["damage"] == 12 + dice  # table A 01-25: mind thrust vs mind blank


def test_attack_strength_pays_cost_and_defense_strength_takes_damage_not_below_zero() -> None:
    """Seed v: attack strength -= cost, defense strength -= damage; RULES 2.3.4: not below
    0, and damage from the combat table beyond it is lost."""
    req = request(psionic("ann", 20, 0), psionic("bo", 30, 5), "mind-thrust", "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert res.fields["damage"] == 12
    assert res.attacker.after["attack_strength"] == 16
    assert res.defender.after["defense_strength"] == 0
    assert res.defender.after["attack_strength"] == 30
    assert any(e.type == "defenses-down" for e in res.events)


def test_attack_strength_below_cost_is_refused() -> None:
    """RULES 2.3.3.ii: only a combatant with attack strength >= the mode's cost attacks."""
    req = request(psionic("ann", 6, 30), psionic("bo", 30, 30), "ego-whip", "mind-blank")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.rule == "attack-strength-too-low"


def test_unknown_mode_is_invalid_input_naming_the_field() -> None:
    req = request(psionic("ann", 60, 30), psionic("bo", 30, 30), "mind-bullet")
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert [p.path for p in err.value.problems] == ["/attack/mode"]


@pytest.mark.parametrize("defense,path,message", [
    ({"mode": "tower"}, "/defense/mode", '"tower" is not one of'),
    ({}, "/defense", '"mode" is a required property'),
    ({"mode": "mind-blank", "paid": True}, "/defense", '["paid"]: not allowed here'),
])
def test_a_malformed_defense_is_invalid_input_naming_the_member_and_the_rule(
        defense: dict[str, Any], path: str, message: str) -> None:
    """Bad input gets an error naming the field and the rule: a defense mode the
    system does not have is named at `/defense/mode` with the modes it has, as an
    unknown attack mode is at `/attack/mode`, not as the whole `/defense` object
    matching "none of the given schemas"."""
    req = request(psionic("ann", 60, 30), psionic("bo", 30, 30), "mind-thrust")
    req["defense"] = defense
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert [p.path for p in err.value.problems] == [path]
    assert message in err.value.problems[0].message
    if path == "/defense/mode":
        assert '"mind-blank"' in err.value.problems[0].message


def test_a_defense_of_null_or_a_null_mode_is_no_defense() -> None:
    """API.md: 'A missing `defense` (or `null`) means no defense mode'; `{"mode": null}`
    is no defense too. Table B, band 26-50, EW vs 60-109: 30."""
    for defense in (None, {"mode": None}):
        req = request(psionic("ann", 30, 30), psionic("bo", 50, 50), "ego-whip")
        req["defense"] = defense
        res = SYSTEM.resolve(req, SuppliedDice({}))
        assert (res.fields["table"], res.fields["damage"]) == ("defenseless", 30)


def test_mode_the_attacker_does_not_know_is_refused() -> None:
    req = request(psionic("ann", 60, 30, attacks=["mind-thrust"]), psionic("bo", 30, 30),
                  "ego-whip", "mind-blank")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.rule == "attack-mode-not-known"


def test_no_defense_mode_uses_the_defenseless_table_and_spills_into_attack_strength() -> None:
    """RULES 2.4: 'a number there reduces the target's defense strength and what exceeds
    it ... reduces attack strength'; no bonus dice (H-CS-DEFENSELESS). Table B: band 26-50,
    EW against original ability 60-109 is 30."""
    attacker = psionic("ann", 30, 100)  # Combat Strength 130 would give 5 bonus dice
    defender = psionic("bo", 40, 10, attack_strength_max=50, defense_strength_max=50)
    res = SYSTEM.resolve(request(attacker, defender, "ego-whip"), SuppliedDice({}))
    assert res.fields["table"] == "defenseless"
    assert (res.fields["band"], res.fields["defender_band"]) == ("26-50", "60-109")
    assert res.fields["bonus_dice"] == 0 and res.fields["damage"] == 30
    assert res.defender.after["defense_strength"] == 0
    assert res.defender.after["attack_strength"] == 40 - 20
    moves = [(e.type, e.combatant, e.data.get("amount")) for e in res.events]
    assert ("attack-strength-spent", "ann", 7) in moves
    assert ("defense-strength-lost", "bo", 10) in moves
    assert ("attack-strength-lost", "bo", 20) in moves


def test_defenseless_bonus_dice_when_h_cs_defenseless_is_off() -> None:
    """H-CS-DEFENSELESS false: the bonus dice are added to the table B number."""
    req = request(psionic("ann", 30, 100), psionic("bo", 40, 10, attack_strength_max=50,
                                                      defense_strength_max=50), "ego-whip",
                  options={"H-CS-DEFENSELESS": False})
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [1, 1, 1, 1, 1]}))
    assert res.fields["bonus_dice"] == 5 and res.fields["damage"] == 35


def test_zero_defense_strength_is_defenseless_even_with_a_defense_named() -> None:
    """Seed iii: 'Those with no remaining Psionic Defense Strength ... are attacked
    according to the ... Defenseless ... table'."""
    req = request(psionic("ann", 20, 20), psionic("bo", 30, 0, defense_strength_max=20),
                  "mind-thrust", "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [2]}))
    assert res.fields["table"] == "defenseless"
    assert res.fields["table_value"] == "W"  # band 01-25, MT vs <=59: W
    assert res.fields["condition"]["id"] == "psionic-wound"
    assert res.fields["condition"]["duration"] == {"amount": 2, "unit": "weeks"}
    assert res.fields["condition"]["rounds"] is None  # weeks outlast the encounter


def test_letter_condition_gets_its_rolled_duration() -> None:
    """Table B, band 01-25, PB vs <=59 is D: dazed 1d4 rounds (purpose condition-duration)."""
    req = request(psionic("ann", 25, 0), psionic("bo", 10, 10), "psionic-wave")
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [3]}))
    assert res.outcome == "condition"
    assert res.fields["condition"]["duration"] == {"amount": 3, "unit": "rounds"}
    assert list(res.defender.after["conditions"]) == ["dazed"]
    assert res.defender.after["condition_rounds"] == {"dazed": 3}
    assert res.defender.after["defense_strength"] == 10


def test_sleep_for_turns_counts_ten_rounds_a_turn() -> None:
    """Table B, band 26-50, PB vs <=59 is S: asleep 1d4 turns."""
    req = request(psionic("ann", 30, 0), psionic("bo", 10, 10), "psionic-wave")
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [2]}))
    assert res.defender.after["condition_rounds"] == {"asleep": 20}


def test_psychic_implosion_crushes_on_d100_at_or_below_the_table_value() -> None:
    """H-CS-IMPLOSION: bonus dice only, table value a percentage: band 01-25 vs mind
    blank is 2 (%); d100 <= 2 drops defense strength to 0."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "psychic-implosion",
                  "mind-blank")
    crushed = SYSTEM.resolve(req, SuppliedDice({"damage": [4], "implosion": [2]}))
    assert crushed.outcome == "crushed" and crushed.fields["crushed"] is True
    assert crushed.fields["damage"] == 4  # the bonus die only
    assert crushed.defender.after["defense_strength"] == 0
    spared = SYSTEM.resolve(req, SuppliedDice({"damage": [4], "implosion": [3]}))
    assert spared.fields["crushed"] is False
    assert spared.defender.after["defense_strength"] == 56


def test_psychic_implosion_dash_rolls_no_d100() -> None:
    """Table A band 01-25: psychic crush against thought shield is '—' (no effect). The
    bonus dice are still dealt (H-CS-IMPLOSION: 'deals the bonus dice only'): Combat
    Strength 30 gives one, here 4."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "psychic-implosion",
                  "shield-thoughts")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [4], "implosion": [1]}))
    assert res.fields["crush_chance"] == 0 and res.fields["implosion_roll"] is None
    assert res.unused_dice == {"implosion": [1]}
    assert res.fields["damage"] == 4 and res.defender.after["defense_strength"] == 56


def test_psychic_implosion_as_points_when_h_cs_implosion_is_off() -> None:
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "psychic-implosion",
                  "mind-blank", options={"H-CS-IMPLOSION": False})
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [4]}))
    assert res.fields["damage"] == 2 + 4 and res.fields["crushed"] is False


def test_psychic_implosion_on_a_defenseless_target_is_a_chance_of_death() -> None:
    """Table B: 'the psychic-implosion row is a percentage chance of death'
    (band 01-25 vs <=59: 72)."""
    req = request(psionic("ann", 20, 0), psionic("bo", 10, 10), "psychic-implosion")
    dead = SYSTEM.resolve(req, SuppliedDice({"implosion": [72]}))
    assert dead.fields["condition"]["id"] == "dead"
    assert dead.defender.after["defense_strength"] == 0
    alive = SYSTEM.resolve(req, SuppliedDice({"implosion": [73]}))
    assert alive.outcome == "no-effect" and list(alive.defender.after["conditions"]) == []


def test_psionic_wave_against_a_non_psionic_saves_then_effect_table() -> None:
    """RULES 2.7 / table C: Int + Wis 11 (10-13) at medium range saves on 15; a failed
    save rolls d100 on the effect table (10-13: <=15 coma)."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 5, "wis": 6}
    req = request(psionic("ann", 40, 10), ogre, "psionic-wave", range_="medium")
    saved = SYSTEM.resolve(req, SuppliedDice({"save": [15]}))
    assert saved.outcome == "saved" and saved.fields["save"]["target"] == 15
    assert saved.attacker.after["attack_strength"] == 20
    failed = SYSTEM.resolve(req, SuppliedDice({"save": [14], "wave-effect": [15]}))
    assert failed.fields["table"] == "wave"
    assert failed.fields["condition"]["id"] == "coma"
    assert list(failed.defender.after["conditions"]) == ["coma"]


def test_full_matrix_leaves_range_in_the_wave_save_of_a_non_psionic() -> None:
    """H-CS-TABLE 'full-matrix' takes range out of the damage (no bonus dice) but not out
    of table C: Int + Wis 11 saves on 15 at medium range and on 14 at long (RULES 2.7), as
    the house rule's text says."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 5, "wis": 6}
    targets = {}
    for range_ in ("medium", "long"):
        req = request(psionic("ann", 40, 10), ogre, "psionic-wave", range_=range_,
                      options={"H-CS-TABLE": "full-matrix"})
        res = SYSTEM.resolve(req, SuppliedDice({"save": [20]}))
        targets[range_] = res.fields["save"]["target"]
    assert targets == {"medium": 15, "long": 14}


@pytest.mark.parametrize("defender,mode,defense", [
    (psionic("bo", 30, 30, conditions=["dead"]), "mind-thrust", "mind-blank"),
    ({"id": "bo", "name": "Bo", "int": 5, "wis": 6, "conditions": ["dazed", "dead"]},
     "psionic-wave", None),
])
def test_a_dead_mind_cannot_be_attacked_again(defender: dict[str, Any], mode: str,
                                              defense: str | None) -> None:
    """Table B letter K and table C's death (H-CS-DEFENSELESS: the condition `dead`, marked
    `kills` in the tables) leave no mind: audit, a killed Bo attacked again "is dead", then
    "suffers a psionic wound ... for 4 weeks". The attack is refused, naming Bo and where
    the request names it; its odds too."""
    req = request(psionic("ann", 60, 30), defender, mode, defense)
    before = copy.deepcopy(req)
    for call in (lambda: SYSTEM.resolve(req, RandomDice(1)), lambda: SYSTEM.odds(req)):
        with pytest.raises(RulesViolation) as err:
            call()
        assert (err.value.rule, err.value.combatant) == ("target-dead", "bo")
        assert err.value.detail == "Bo is dead: there is no mind left to attack (/defender)"
    assert req == before


def test_the_attackers_own_strength_is_refused_before_a_dead_target() -> None:
    """An attack refused for the attacker's sake says so whatever it aims at (a VTT checks
    the attack this way before asking the defender for a secret choice): too little
    attack strength for Mind Thrust (RULES.md 2.3 step 3.ii) at a dead Bo is refused for
    the strength."""
    req = request(psionic("ann", 1, 30), psionic("bo", 30, 30, conditions=["dead"]),
                  "mind-thrust", "mind-blank")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.rule == "attack-strength-too-low"


def test_only_psionic_wave_affects_a_non_psionic_and_only_from_the_wave_stance() -> None:
    """Seed step 2: Psionic Wave against non-psionic opponents is its own stance."""
    ogre = {"id": "ogre", "int": 5, "wis": 6}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(request(psionic("ann", 40, 10), ogre, "ego-whip"), RandomDice(1))
    assert err.value.rule == "non-psionic-target-psionic-wave-only"
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(request(psionic("ann", 40, 10), ogre, "psionic-wave",
                               stance="trance"), RandomDice(1))
    assert err.value.rule == "wave-stance-for-non-psionic-targets"


@pytest.mark.parametrize("stance", ["discipline", "normal"])
def test_a_psionic_wave_on_a_non_psionic_from_any_stance_but_wave_is_refused(
        stance: str) -> None:
    """Seed step 2: one using a Discipline or acting normally 'cannot enter this trance'
    and makes no attack this round; only the wave stance sends a Psionic Wave at a
    non-psionic opponent."""
    ogre = {"id": "ogre", "int": 5, "wis": 6}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(request(psionic("ann", 40, 10), ogre, "psionic-wave", stance=stance),
                       RandomDice(1))
    assert err.value.rule == "wave-stance-for-non-psionic-targets"


def test_attack_outside_trance_is_refused() -> None:
    """Seed ii: 'Anyone using a Discipline ... cannot use an Attack Mode'."""
    req = request(psionic("ann", 40, 10), psionic("bo", 10, 10), "mind-thrust",
                  stance="discipline")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.rule == "attack-requires-trance"


CASES = [(band, attack, defense, TABLE_A[band][i][j], low)
         for band, low in [("01-25", 20), ("26-50", 26), ("51-75", 75), ("76-100", 76),
                           ("101-125", 125), ("126+", 126)]
         for i, attack in enumerate(ATTACKS) for j, defense in enumerate(DEFENSES)]


@pytest.mark.parametrize("band,attack,defense,value,strength", CASES)
def test_h_cs_table_full_matrix_gives_the_banded_values(band: str, attack: str, defense: str,
                                                        value: int | None,
                                                        strength: int) -> None:
    """H-CS-TABLE 'full-matrix': table A by the attacker's Combat Strength band, no bonus
    dice (research-tables.md A)."""
    attacker = psionic("ann", strength, 0)
    req = request(attacker, psionic("bo", 10, 200), attack, defense,
                  options={"H-CS-TABLE": "full-matrix"})
    res = SYSTEM.resolve(req, SuppliedDice({"implosion": [100]}))
    assert res.fields["band"] == band and res.fields["bonus_dice"] == 0
    if attack == "psychic-implosion":
        assert res.fields["crush_chance"] == (value or 0) and res.fields["damage"] == 0
    else:
        assert res.fields["damage"] == (value or 0)


def test_penetration_cap_is_reported_when_reached() -> None:
    """RULES 2.3.4 / H-CS-PEN-CAP: every unbounded mechanic has a cap and says so."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "mind-thrust",
                  "mental-barrier", options={"H-CS-PEN-CAP": 2})
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [6, 6, 6, 6]}))
    assert res.fields["capped"] is True and res.fields["damage"] == 0 + 6 + 5 + 5
    assert [e.data["cap"] for e in res.events if e.type == "penetration-capped"] == [2]
    assert res.unused_dice == {"damage": [6]}


def test_missing_supplied_dice_names_purpose_sides_and_count() -> None:
    """RULES 4: too few supplied dice is the dice-needed error."""
    req = request(psionic("ann", 60, 40), psionic("bo", 30, 60), "mind-thrust", "mind-blank")
    with pytest.raises(DiceNeeded) as err:
        SYSTEM.resolve(req, SuppliedDice({"damage": [6, 2]}))
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("damage", 6, 3)


def test_supplied_die_outside_its_faces_is_invalid() -> None:
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "mind-thrust", "mind-blank")
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, SuppliedDice({"damage": [7]}))
    assert err.value.problems[0].path == "/dice/damage/0"


def test_unknown_house_rule_is_invalid_input() -> None:
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "mind-thrust", "mind-blank",
                  options={"H-CS-NOPE": True})
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.problems[0].path == "/options/H-CS-NOPE"


def test_combatant_defaults_per_combatants_md() -> None:
    """docs/COMBATANTS.md: maxima default to the current values, original_total to their
    sum, psionic when a maximum is above 0, all modes known, int and wis 10."""
    c = SYSTEM.combatant({"name": "Korr the Red", "attack_strength": 40,
                          "defense_strength_max": 50})
    assert c["id"] == "korr-the-red"
    assert (c["attack_strength_max"], c["defense_strength"]) == (40, 50)
    assert c["original_total"] == 90 and c["psionic"] is True
    assert c["attacks"] == ATTACKS and c["defenses"] == DEFENSES
    assert (c["int"], c["wis"], c["conditions"]) == (10, 10, [])
    ogre = SYSTEM.combatant({"id": "ogre"})
    assert ogre["psionic"] is False and ogre["attacks"] == [] and ogre["original_total"] == 0
    # an original total given (abilities lost since) is kept, not made again
    worn = SYSTEM.combatant({"id": "worn", "attack_strength": 10, "original_total": 180})
    assert worn["original_total"] == 180


@pytest.mark.parametrize("raw,path", [
    ({"id": "a", "attack_strength": 50, "attack_strength_max": 40}, "/x/attack_strength"),
    ({"id": "a", "attack_strength": "lots"}, "/x/attack_strength"),
    ({"id": "a", "attack_strength": -1}, "/x/attack_strength"),
    ({"id": "a", "psionic": False, "defense_strength": 4}, "/x/psionic"),
    ({"id": "a", "attacks": ["mind-bullet"]}, "/x/attacks/0"),
    ({"id": "a", "speed": 4}, "/x"),
    ({"attack_strength": 3}, "/x"),
    ({"name": "!!!"}, "/x/name"),
    ({"id": "a", "conditions": ["dazed"], "condition_rounds": {"asleep": 2}},
     "/x/condition_rounds/asleep"),
    ({"id": "a", "psionic": False, "attacks": ["ego-whip"]}, "/x/psionic"),
    ({"id": "a", "psionic": False, "defenses": ["mind-blank"]}, "/x/psionic"),
])
def test_invalid_combatant_names_the_field(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(raw, "/x")
    assert path in [p.path for p in err.value.problems]


def _conditions(n: int) -> dict[str, Any]:
    names = [f"hex-{i}" for i in range(n)]
    return {"conditions": names, "condition_rounds": dict.fromkeys(names, 1)}


@pytest.mark.parametrize("edge,over,path", [
    ({"attack_strength": 100_000}, {"attack_strength": 100_001}, "/x/attack_strength"),
    ({"defense_strength_max": 100_000}, {"defense_strength_max": 100_001},
     "/x/defense_strength_max"),
    ({"int": 25, "wis": 0}, {"int": 26, "wis": 0}, "/x/int"),
    ({"name": "n" * 200}, {"name": "n" * 201}, "/x/name"),
    ({"attack_strength": 7, "attacks": ["ego-whip"]},
     {"attack_strength": 7, "attacks": ["ego-whip", "ego-whip"]}, "/x/attacks"),
    ({"conditions": ["x"]}, {"conditions": [""]}, "/x/conditions/0"),
    (_conditions(64), _conditions(65), "/x/conditions"),
    (_conditions(64), _conditions(65), "/x/condition_rounds"),
    ({"conditions": ["dazed"], "condition_rounds": {"dazed": 0}},
     {"conditions": ["dazed"], "condition_rounds": {"dazed": -1}},
     "/x/condition_rounds/dazed"),
])
def test_a_combatant_s_limits_sit_exactly_at_their_edges(edge: dict[str, Any],
                                                          over: dict[str, Any],
                                                          path: str) -> None:
    """engine/combat_strength/combatant.py: strengths up to 100000, int and wis 0-25, a
    name of up to 200 characters, each mode known once, up to 64 conditions of at least
    one character with up to 64 timed (0 rounds left is a round still to come): the
    value at the edge is taken, the next one beyond it refused at its field."""
    SYSTEM.combatant({"id": "a", **edge}, "/x")
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "a", **over}, "/x")
    assert path in [p.path for p in err.value.problems]


def test_a_psionic_that_lists_only_its_attacks_or_defenses_knows_all_of_the_other() -> None:
    """docs/COMBATANTS.md: attacks and defenses are "all five of each for a psionic
    creature when absent": each list on its own."""
    c = SYSTEM.combatant({"id": "a", "attack_strength": 10, "attacks": ["ego-whip"]})
    assert c["attacks"] == ["ego-whip"] and c["defenses"] == DEFENSES
    c = SYSTEM.combatant({"id": "a", "attack_strength": 10, "defenses": ["mind-blank"]})
    assert c["attacks"] == ATTACKS and c["defenses"] == ["mind-blank"]


@pytest.mark.parametrize("not_an_object", ["Korr", 7, ["a"]])
def test_a_combatant_that_is_not_an_object_is_refused_as_such(not_an_object: Any) -> None:
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(not_an_object, "/x")
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/x", "a combatant must be an object")]


def test_describe_lists_modes_tables_purposes_and_house_rules() -> None:
    d = SYSTEM.describe()
    assert d["id"] == "combat-strength"
    assert {r["id"] for r in d["house_rules"]} >= {"H-CS-TABLE", "H-CS-DEFENSELESS",
                                                   "H-CS-IMPLOSION", "H-CS-PEN-CAP"}
    assert all(r["text"] for r in d["house_rules"])
    assert [p["purpose"] for p in d["dice_purposes"]] == [
        "damage", "implosion", "save", "wave-effect", "condition-duration"]
    assert all(p["text"] for p in d["dice_purposes"])  # each says what its dice are for
    assert [m["id"] for m in d["modes"]["attacks"]] == ATTACKS
    assert [m["id"] for m in d["modes"]["defenses"]] == DEFENSES
    # RULES.md 2.3 step 3.ii: the range bands an attack picks from
    assert d["modes"]["ranges"] == ["short", "medium", "long"]
    assert d["tables"]["combat"]["matrix"]["01-25"]["mind-thrust"]["mind-blank"] == 12
    assert d["combatant_schema"]["type"] == "object" and "request_schema" in d


def test_describe_and_the_combatant_schema_are_the_caller_s_copies() -> None:
    """A caller that changes what it was given (a GM's tool editing the tables it was
    shown) changes neither the system's tables nor its combatant schema."""
    system = CombatStrength()
    d = system.describe()
    d["tables"]["combat"]["matrix"]["01-25"]["mind-thrust"]["mind-blank"] = 99
    system.combatant_schema()["properties"]["int"]["maximum"] = 99
    d["combatant_schema"]["properties"]["wis"]["maximum"] = 99
    again = system.describe()
    assert again["tables"]["combat"]["matrix"]["01-25"]["mind-thrust"]["mind-blank"] == 12
    assert again["combatant_schema"]["properties"]["int"]["maximum"] == 25
    assert system.combatant_schema()["properties"]["wis"]["maximum"] == 25
    req = request(psionic("ann", 20, 0), psionic("bo", 30, 40), "mind-thrust", "mind-blank")
    assert system.resolve(req, SuppliedDice({})).fields["damage"] == 12


def test_summary_tells_the_table_what_happened() -> None:
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip", "shield-thoughts")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [6, 6, 1]}))
    assert "Ann attacks Bo with Ego Whip against Shield Thoughts" in res.summary
    assert "= 14 damage" in res.summary and "40 → 26" in res.summary


def test_an_incapacitated_mind_cannot_attack() -> None:
    """Table B letters read as conditions (H-CS-DEFENSELESS): asleep takes a mind out."""
    req = request(psionic("ann", 30, 30, conditions=["asleep"]), psionic("bo", 30, 30),
                  "mind-thrust", "mind-blank")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert err.value.rule == "attacker-incapacitated"
    # of two conditions that stop it, the first it has is the one told
    for first, second in (("asleep", "stunned"), ("stunned", "asleep")):
        req["attacker"]["conditions"] = [first, second]
        with pytest.raises(RulesViolation) as err:
            SYSTEM.resolve(req, RandomDice(1))
        assert f"Ann is {first} and cannot attack" in str(err.value)


def test_an_incapacitated_mind_is_refused_for_its_condition_before_its_modes() -> None:
    """exchange.check_attacker: a condition that stops the attacker is told before a mode
    it does not know: asleep, Ann attacks with nothing, whatever she picked."""
    req = request(psionic("ann", 30, 30, conditions=["asleep"], attacks=["mind-thrust"]),
                  psionic("bo", 30, 30), "ego-whip", "mind-blank")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert (err.value.rule, err.value.detail) == ("attacker-incapacitated",
                                                  "Ann is asleep and cannot attack")


@pytest.mark.parametrize("condition", ["asleep", "psionic-wound", "controlled"])
def test_an_incapacitated_defender_cannot_use_its_defense_and_is_defenseless(
        condition: str) -> None:
    """Seed 000 iii: 'Those with no remaining Psionic Defense Strength (or who were unable
    to use a Defense Mode for any reason) are attacked according to the Psionic Attacks vs.
    Defenseless Psionic Targets table'. Table B, band 26-50, EW vs 60-109 is 30. (A dead
    defender is not attacked at all: test_a_dead_mind_cannot_be_attacked_again.)"""
    defender = psionic("bo", 40, 10, attack_strength_max=50, defense_strength_max=50,
                       conditions=[condition])
    req = request(psionic("ann", 30, 100), defender, "ego-whip", "intellect-fortress")
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert res.fields["table"] == "defenseless" and res.fields["damage"] == 30
    unusable = [e for e in res.events if e.type == "defense-unusable"]
    assert [(e.combatant, dict(e.data)) for e in unusable] == [
        ("bo", {"mode": "intellect-fortress", "condition": condition})]
    # in the table's words (test_combat_strength_summary: every condition's sentence)
    assert res.summary.startswith(f"{SYSTEM.tables.condition_clause('Bo', condition)} and "
                                  "cannot use Intellect Fortress: defenseless.")
    odds = SYSTEM.odds(req)
    assert odds["table"] == "defenseless"
    assert odds["outcomes"] == SYSTEM.odds({**req, "defense": None})["outcomes"]


def test_summary_names_the_bonus_dice_of_a_replacement_table() -> None:
    """RULES.md: 'A GM may load a replacement table file'; its bonus dice may be d8s."""
    data = copy.deepcopy(SYSTEM.tables.data)
    data["bonus_dice"]["sides"] = 8
    system = CombatStrength(data)
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip", "shield-thoughts")
    res = system.resolve(req, SuppliedDice({"damage": [8, 2, 3]}))
    assert "1d8 (" in res.summary and "d6" not in res.summary


def test_h_cs_table_full_matrix_bands_by_combat_strength_not_attack_strength() -> None:
    """H-CS-TABLE 'full-matrix' uses 'the band of the attacker's Combat Strength' (RULES.md
    2.1: attack + defense strength): 20 + 40 = 60 reads band 51-75, where mind thrust vs
    mind blank is 18 (research-tables.md A), not band 01-25's 12."""
    req = request(psionic("ann", 20, 40), psionic("bo", 10, 200), "mind-thrust", "mind-blank",
                  options={"H-CS-TABLE": "full-matrix"})
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert (res.fields["band"], res.fields["bonus_dice"]) == ("51-75", 0)
    assert res.fields["damage"] == 18


def test_a_combat_table_hit_tells_exactly_what_each_side_lost() -> None:
    """RULES.md 2.3 step 3.4: the attacker spends the mode's cost (Mind Thrust 4), the
    defender loses defense strength (12 points against 5: 5) and its defenses go down; no
    event says nothing was lost."""
    req = request(psionic("ann", 20, 0), psionic("bo", 30, 5), "mind-thrust", "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert [(e.type, e.combatant, dict(e.data)) for e in res.events] == [
        ("attack", "ann", {"target": "bo", "mode": "mind-thrust", "range": "short",
                           "defense": "mind-blank", "table": "combat"}),
        ("attack-strength-spent", "ann", {"amount": 4}),
        ("defense-strength-lost", "bo", {"amount": 5}),
        ("defenses-down", "bo", {})]


def test_defenses_already_down_do_not_go_down_again() -> None:
    """RULES.md 2.4: once defense strength is 0 a defenseless number takes all of it from
    attack strength (table B, band 26-50, EW vs 60-109: 30); Bo's defenses were down
    before the attack, so no `defenses-down` and no defense strength lost."""
    defender = psionic("bo", 40, 0, attack_strength_max=50, defense_strength_max=50)
    res = SYSTEM.resolve(request(psionic("ann", 30, 100), defender, "ego-whip"),
                         SuppliedDice({}))
    assert [(e.type, e.combatant, dict(e.data)) for e in res.events][1:] == [
        ("attack-strength-spent", "ann", {"amount": 7}),
        ("attack-strength-lost", "bo", {"amount": 30})]
    assert res.defender.after["attack_strength"] == 10


def test_the_condition_event_names_the_defender() -> None:
    """Table B, band 01-25, PB vs <=59 is D: the `condition` event is about Bo, who is
    dazed, not about Ann."""
    req = request(psionic("ann", 25, 0), psionic("bo", 10, 10), "psionic-wave")
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [3]}))
    assert [(e.combatant, e.data["id"]) for e in res.events if e.type == "condition"] == [
        ("bo", "dazed")]


def test_mind_crushed_event_gives_the_chance_and_the_d100_rolled() -> None:
    """H-CS-IMPLOSION: band 01-25 vs mind blank is 2 (%); a d100 of 1 crushes Bo, and the
    event tells both figures."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "psychic-implosion",
                  "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [4], "implosion": [1]}))
    assert [(e.combatant, dict(e.data)) for e in res.events if e.type == "mind-crushed"] == [
        ("bo", {"chance": 2, "roll": 1})]


def test_the_result_names_the_defense_mode_it_was_looked_up_against() -> None:
    """RULES.md 2.5: table A is read by attack and defense mode; the result says which
    defense (Shield Thoughts), and none for the defenseless table."""
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip", "shield-thoughts")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [2]}))
    assert res.fields["defense_mode"] == "shield-thoughts"
    assert res.to_json()["defense_mode"] == "shield-thoughts"
    open_mind = SYSTEM.resolve(request(psionic("ann", 30, 10), psionic("bo", 20, 40),
                                       "ego-whip"), SuppliedDice({}))
    assert open_mind.fields["defense_mode"] is None


def test_an_open_ended_condition_is_not_shortened_by_a_timed_one() -> None:
    """Table B, band 01-25, PB vs 60-109 is C (confused 1d4 rounds); Bo is already confused
    with no end (its sheet gives no rounds), and stays so: an open-ended condition
    outlasts any timed one."""
    defender = psionic("bo", 30, 40, conditions=["confused"])
    res = SYSTEM.resolve(request(psionic("ann", 25, 0), defender, "psionic-wave"),
                         SuppliedDice({"condition-duration": [3]}))
    assert res.fields["table_value"] == "C" and res.fields["condition"]["rounds"] == 3
    assert list(res.defender.after["conditions"]) == ["confused"]
    assert res.defender.after["condition_rounds"] == {}


def test_an_open_ended_condition_replaces_the_same_timed_one() -> None:
    """Table C, Int + Wis 11 (10-13): a failed save and a d100 of 100 is confusion, with no
    end; the ogre's 2 rounds of confusion no longer run out."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 5, "wis": 6, "conditions": ["confused"],
            "condition_rounds": {"confused": 2}}
    req = request(psionic("ann", 40, 10), ogre, "psionic-wave", stance="wave")
    res = SYSTEM.resolve(req, SuppliedDice({"save": [1], "wave-effect": [100]}))
    assert res.fields["condition"]["id"] == "confused"
    assert list(res.defender.after["conditions"]) == ["confused"]
    assert res.defender.after["condition_rounds"] == {}


@pytest.mark.parametrize("supplied,needed", [([3], 1), ([], 2)])
def test_missing_condition_duration_dice_counts_only_those_still_needed(
        supplied: list[int], needed: int) -> None:
    """RULES 4: too few supplied dice is the dice-needed error, for the dice still
    missing: a replacement table's dazed lasting 2d4 rounds needs one more d4 when one is
    supplied, both when none is."""
    data = copy.deepcopy(SYSTEM.tables.data)
    data["defenseless"]["letters"]["D"]["duration"]["count"] = 2
    system = CombatStrength(data)
    req = request(psionic("ann", 25, 0), psionic("bo", 10, 10), "psionic-wave")
    with pytest.raises(DiceNeeded) as err:
        system.resolve(req, SuppliedDice({"condition-duration": supplied}))
    assert (err.value.purpose, err.value.sides, err.value.needed) == (
        "condition-duration", 4, needed)


@pytest.mark.parametrize("first", [0, 1])
def test_a_crush_among_simultaneous_effects_drops_defense_strength_to_zero(first: int) -> None:
    """H-CS-IMPLOSION and seed step iii: two implosions on Bo in one segment, one of them
    crushing; in either order his defense strength drops to 0."""
    bo = SYSTEM.combatant(psionic("bo", 30, 60))
    hits = [Effect(damage=4), Effect(damage=3, crushed=True)]
    after = apply_effects(bo, hits[first:] + hits[:first])
    assert (after["defense_strength"], after["attack_strength"]) == (0, 30)


@pytest.mark.parametrize("mode,dice", [("psionic-wave", {"condition-duration": [3]}),
                                       ("psychic-implosion", {"implosion": [73]})])
def test_h_cs_defenseless_off_adds_no_bonus_dice_to_a_letter_or_a_chance(
        mode: str, dice: dict[str, list[int]]) -> None:
    """H-CS-DEFENSELESS false 'adds the bonus dice to its numbers': table B's letters and
    its psychic-implosion percentages are not points (band 01-25 vs <=59: PB is D, PsC
    72%), so Ann's one bonus die (Combat Strength 25) is not rolled."""
    req = request(psionic("ann", 25, 0), psionic("bo", 10, 10), mode,
                  options={"H-CS-DEFENSELESS": False})
    res = SYSTEM.resolve(req, SuppliedDice({**dice, "damage": [5]}))
    assert (res.fields["bonus_dice"], res.fields["damage"]) == (0, 0)
    assert res.defender.after["defense_strength"] == 10
    assert res.unused_dice == {"damage": [5]}


def test_the_save_against_a_psionic_wave_is_the_targets_roll_and_event() -> None:
    """RULES.md 2.7: the target saves on d20 (purpose save): the die and the `save` event
    are the ogre's; the d100 on the effect table is the attacker's."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 5, "wis": 6}
    req = request(psionic("ann", 40, 10), ogre, "psionic-wave", range_="medium")
    res = SYSTEM.resolve(req, SuppliedDice({"save": [14], "wave-effect": [15]}))
    assert [(r["purpose"], r["by"]) for r in res.to_json()["rolls"]] == [
        ("save", "ogre"), ("wave-effect", "ann")]
    assert [(e.combatant, dict(e.data)) for e in res.events if e.type == "save"] == [
        ("ogre", {"target": 15, "roll": 14, "success": False})]


def test_the_penetration_cap_event_is_the_attackers() -> None:
    """H-CS-PEN-CAP: the capped dice are Ann's damage dice, so the event names Ann."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "mind-thrust",
                  "mental-barrier", options={"H-CS-PEN-CAP": 2})
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [6, 6, 6]}))
    assert [(e.combatant, dict(e.data)) for e in res.events
            if e.type == "penetration-capped"] == [("ann", {"cap": 2})]


def test_a_timed_condition_is_in_the_after_state_only() -> None:
    """Table B, band 01-25, PB vs <=59 is D (dazed 1d4 rounds): the result's before state
    is Bo as he was, without the condition or its rounds."""
    req = request(psionic("ann", 25, 0), psionic("bo", 10, 10), "psionic-wave")
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [3]}))
    assert (list(res.defender.before["conditions"]),
            res.defender.before["condition_rounds"]) == ([], {})
    assert (list(res.defender.after["conditions"]),
            res.defender.after["condition_rounds"]) == (["dazed"], {"dazed": 3})


@pytest.mark.parametrize("change,path", [
    ({"attack": {"mode": "ego-whip", "multiplier": 4}}, "/attack"),
    ({"defense": {"mode": "mind-blank", "paid": True}}, "/defense"),
    ({"initiative": 3}, ""),
])
def test_a_field_combat_strength_does_not_have_is_invalid_input(change: dict[str, Any],
                                                                path: str) -> None:
    """API.md exchange.resolve: the `attack` and `defense` objects are system-specific,
    and `combat-strength` has `mode` and `range` (revised-2e's `multiplier` and `paid`
    are not its own); a member no schema names is refused where it was given."""
    req = {**request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip",
                     "shield-thoughts"), **change}
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert [p.path for p in err.value.problems] == [path]


def test_a_request_without_an_attack_is_invalid_input() -> None:
    """API.md exchange.resolve: an exchange is one attack; without `attack` the request
    is refused, not half resolved."""
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip")
    del req["attack"]
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("", '"attack" is a required property')]


def test_a_defense_whose_mode_is_null_is_no_defense() -> None:
    """API.md: 'A missing `defense` (or `null`) means no defense mode'; a `defense` object
    whose `mode` is null says the same: the defenseless table (RULES.md 2.4)."""
    req = request(psionic("ann", 30, 10), psionic("bo", 20, 40), "ego-whip")
    req["defense"] = {"mode": None}
    res = SYSTEM.resolve(req, SuppliedDice({"condition-duration": [1, 1, 1]}))
    assert res.fields["table"] == "defenseless"


def test_the_result_names_the_mode_and_the_range_band_of_the_attack() -> None:
    """RULES.md 2.3 step 3.ii: the attacker picks an attack mode and a range band; the
    result says which (Combat Strength 60 at long range: no bonus die)."""
    req = request(psionic("ann", 30, 30), psionic("bo", 20, 40), "ego-whip", "mind-blank",
                  "long")
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert (res.fields["mode"], res.fields["range"], res.fields["bonus_dice"]) == (
        "ego-whip", "long", 0)
    # the attack event, the one a chat card reads, says the same, and the table used
    attack = res.to_json()["events"][0]
    assert {k: attack[k] for k in ("type", "mode", "range", "defense", "table")} == {
        "type": "attack", "mode": "ego-whip", "range": "long", "defense": "mind-blank",
        "table": "combat"}
    res = SYSTEM.resolve(request(psionic("ann", 30, 30), psionic("bo", 20, 40), "ego-whip",
                                 None, "medium"), SuppliedDice({}))
    attack = res.to_json()["events"][0]
    assert (attack["range"], attack["defense"], attack["table"]) == (
        "medium", None, "defenseless")


def test_an_attack_without_a_range_is_at_short_range_as_the_schema_says() -> None:
    """Seed iii: 'Medium range attacks deal 1d6 less damage, and at long range 2d6
    less'; an attack that names no range band is at short range, and the request and
    choice schemas of systems.describe say so. Combat Strength 60: two bonus dice."""
    req = request(psionic("ann", 30, 30), psionic("bo", 20, 40), "ego-whip", "mind-blank")
    del req["attack"]["range"]
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [1, 1]}))
    assert res.fields["bonus_dice"] == 2
    d = SYSTEM.describe()
    assert d["request_schema"]["properties"]["attack"]["properties"]["range"]["default"] \
        == "short"
    attack = d["choice_schema"]["properties"]["attack"]
    assert attack["type"] == ["object", "null"]
    assert attack["properties"]["range"]["default"] == "short"


def test_an_incapacitated_defender_that_named_no_defense_is_simply_defenseless() -> None:
    """Seed 000 iii: those 'unable to use a Defense Mode' are attacked on the defenseless
    table; one that named no defense has none to be refused: no `defense-unusable`
    event, and the summary starts with the attack. Table B, band 26-50, EW vs 60-109
    is 30."""
    defender = psionic("bo", 40, 10, attack_strength_max=50, defense_strength_max=50,
                       conditions=["asleep"])
    res = SYSTEM.resolve(request(psionic("ann", 30, 100), defender, "ego-whip"),
                         SuppliedDice({}))
    assert res.fields["table"] == "defenseless" and res.fields["damage"] == 30
    assert not [e for e in res.events if e.type == "defense-unusable"]
    assert res.summary.startswith("Ann attacks Bo with Ego Whip")


def test_a_defense_the_defender_cannot_use_is_told_before_the_attack() -> None:
    """Seed 000 iii: a defender 'unable to use a Defense Mode for any reason' is attacked
    as defenseless: the events tell first that its defense was refused, then the attack
    looked up without it, in the order the summary tells them."""
    defender = psionic("bo", 40, 10, conditions=["asleep"])
    res = SYSTEM.resolve(request(psionic("ann", 30, 100), defender, "ego-whip",
                                 "mind-blank"), SuppliedDice({"condition-duration": [1]}))
    assert [e.type for e in res.events][:2] == ["defense-unusable", "attack"]
    assert res.events[1].data["defense"] is None


def test_describe_names_the_four_stances_and_every_outcome_a_result_may_have() -> None:
    """RULES.md 2.3 step 1: the stances `trance`, `discipline`, `wave` and `normal`;
    API.md systems.describe: what a caller needs to build requests and read results. A
    Psionic Wave a non-psionic saves against is the outcome `saved` (RULES.md 2.7)."""
    d = SYSTEM.describe()
    assert d["modes"]["stances"] == ["trance", "discipline", "wave", "normal"]
    assert d["outcomes"] == ["damage", "no-effect", "crushed", "condition", "saved"]
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 3}
    res = SYSTEM.resolve(request(psionic("ann", 60, 30), ogre, "psionic-wave"),
                         SuppliedDice({"save": [20]}))
    assert res.outcome == "saved" and res.outcome in d["outcomes"]


@pytest.mark.parametrize("not_an_object", [[], "ann attacks bo", None])
def test_a_request_that_is_not_an_object_is_invalid_input(not_an_object: Any) -> None:
    """API.md exchange.resolve: the request is an object; anything else is refused as
    such, before any of its members is looked at."""
    with pytest.raises(InvalidInput) as err:
        SYSTEM.resolve(not_an_object, RandomDice(1))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("", "the request must be an object")]


def test_the_request_schema_names_its_dialect_once_at_its_root() -> None:
    """API.md systems.describe: the request JSON Schema (draft 2020-12), whose attacker
    and defender are the combatant schema; a subschema that is no resource of its own
    names no `$schema`, so the combatant definition is that schema without it."""
    schema = SYSTEM.describe()["request_schema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    combatant = schema["$defs"]["combatant"]
    assert combatant == {k: v for k, v in SYSTEM.combatant_schema().items()
                         if k != "$schema"}
    assert "$schema" not in combatant


def test_shield_thoughts_is_refused_to_a_defender_that_does_not_know_it() -> None:
    """RULES.md 2.1: `defenses` are the modes a combatant knows. Shield Thoughts, the one
    defense allowed outside a trance (seed step 3.i), has to be known like the others."""
    defender = psionic("bo", 30, 30, defenses=["mind-blank"])
    req = request(psionic("ann", 60, 30), defender, "mind-thrust", "shield-thoughts")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve(req, RandomDice(1))
    assert (err.value.rule, err.value.detail) == ("defense-mode-not-known",
                                                  "Bo does not know Shield Thoughts")


def test_a_letter_in_a_replacement_psychic_implosion_row_is_read_as_that_letter() -> None:
    """A GM's table B may print a letter in Psychic Implosion's row of percentages (any
    cell of table B may be a letter): the letter's condition follows, as in every other
    row, and no d100 is rolled. Here P, permanent insanity, at band 01-25 vs <=59."""
    data = copy.deepcopy(SYSTEM.tables.data)
    data["defenseless"]["matrix"]["01-25"]["psychic-implosion"][0] = "P"
    system = CombatStrength(data)
    req = request(psionic("ann", 20, 0), psionic("bo", 10, 10), "psychic-implosion")
    res = system.resolve(req, SuppliedDice({"implosion": [1]}))
    assert res.outcome == "condition" and res.fields["table_value"] == "P"
    assert res.fields["condition"]["id"] == "permanent-insanity"
    assert (res.fields["implosion_roll"], res.fields["crushed"]) == (None, False)
    assert res.unused_dice == {"implosion": [1]}


def test_a_timed_condition_given_again_for_more_rounds_lasts_the_longer() -> None:
    """Table B, band 01-25, PB vs <=59 is D (dazed 1d4 rounds): Bo, dazed one more round,
    is dazed again for 3; he is dazed once, for the 3 rounds."""
    defender = psionic("bo", 10, 10, conditions=["dazed"], condition_rounds={"dazed": 1})
    res = SYSTEM.resolve(request(psionic("ann", 25, 0), defender, "psionic-wave"),
                         SuppliedDice({"condition-duration": [3]}))
    assert list(res.defender.after["conditions"]) == ["dazed"]
    assert res.defender.after["condition_rounds"] == {"dazed": 3}


def test_the_bonus_die_and_the_implosion_d100_are_the_attackers_rolls() -> None:
    """RULES.md 2.4: bonus dice, and 'd100 (purpose implosion) <= value crushes the mind';
    RULES.md 4: every die says who rolled it. Ann rolls both (a defender rolls only its
    save against a Psionic Wave), and the result gives the d100 beside the chance (table A
    01-25, psychic crush vs mind blank: 2%; Combat Strength 30: one bonus die)."""
    req = request(psionic("ann", 30, 0), psionic("bo", 30, 60), "psychic-implosion",
                  "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [3], "implosion": [50]}))
    assert [(r["purpose"], r["value"], r["by"]) for r in res.to_json()["rolls"]] == [
        ("damage", 3, "ann"), ("implosion", 50, "ann")]
    assert (res.fields["crush_chance"], res.fields["implosion_roll"]) == (2, 50)
    assert res.outcome == "damage" and res.fields["damage"] == 3


def test_a_condition_the_tables_do_not_know_neither_stops_nor_kills() -> None:
    """A sheet may carry another system's condition ("hexed"): these tables do not say it
    incapacitates or kills, so Ann still attacks and Bo is still a mind to attack."""
    attacker = psionic("ann", 30, 10, conditions=["hexed"])
    defender = psionic("bo", 20, 40, conditions=["hexed"])
    req = request(attacker, defender, "ego-whip", "shield-thoughts")
    res = SYSTEM.resolve(req, SuppliedDice({"damage": [2]}))
    assert res.fields["table"] == "combat" and res.fields["damage"] == 3 + 2
    assert list(res.defender.after["conditions"]) == ["hexed"]


@pytest.mark.parametrize("req,dice,condition,rolled_by", [
    # table B, band 01-25, MT vs <=59 is W: a psionic wound for 1d4 weeks
    (request(psionic("ann", 20, 0), psionic("bo", 10, 10), "mind-thrust"),
     {"condition-duration": [2]},
     {"id": "psionic-wound", "letter": "W", "roll": None,
      "duration": {"amount": 2, "unit": "weeks"}, "rounds": None,
      "text": "psionic wound (all psionic ability lost)"},
     [("condition-duration", "ann")]),
    # table C, Int + Wis 6 (6-9): a failed save and a d100 of 50 is a coma
    (request(psionic("ann", 40, 10), {"id": "ogre", "name": "Ogre", "int": 3, "wis": 3},
             "psionic-wave"),
     {"save": [1], "wave-effect": [50]},
     {"id": "coma", "letter": None, "roll": 50, "duration": None, "rounds": None,
      "text": "in a coma"},
     [("save", "ogre"), ("wave-effect", "ann")]),
])
def test_the_condition_field_gives_its_letter_or_d100_and_the_tables_text(
        req: dict[str, Any], dice: dict[str, list[int]], condition: dict[str, Any],
        rolled_by: list[tuple[str, str]]) -> None:
    """systems.describe's result_fields: condition is `{id, letter, roll, duration, rounds,
    text}`: table B's letter, or table C's d100, and the condition in the tables' words.
    The attacker rolls the condition's dice; the target only its save (RULES.md 4: every
    die says who rolled it)."""
    res = SYSTEM.resolve(req, SuppliedDice(dice))
    assert res.to_json()["condition"] == condition
    assert [(r["purpose"], r["by"]) for r in res.to_json()["rolls"]] == rolled_by


def test_a_defense_named_with_no_defense_strength_left_is_not_looked_up() -> None:
    """Seed iii: those with no remaining defense strength are attacked on the defenseless
    table, whatever defense they name: the result and the attack event say no defense
    was looked up (table B, band 01-25, EW vs <=59: 30)."""
    req = request(psionic("ann", 20, 20), psionic("bo", 30, 0, defense_strength_max=20),
                  "ego-whip", "mind-blank")
    res = SYSTEM.resolve(req, SuppliedDice({}))
    assert (res.fields["table"], res.fields["damage"]) == ("defenseless", 30)
    assert res.fields["defense_mode"] is None
    assert [e.data["defense"] for e in res.events if e.type == "attack"] == [None]
