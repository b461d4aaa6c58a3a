"""combat-strength summaries: every condition the tables can give reads as a sentence.

Each condition of data/tables.json (the defenseless table's letters, RULES.md 2.6, and
the Psionic Wave effects, 2.7) is said through its ``predicate``: audit, "Vora is
permanent insanity." and "Quo is psionic wound: all psionic ability lost for 2 weeks."
were the table's noun phrases after "is". The sentences expected are written out here
in full, one per condition.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.combat_strength import SYSTEM, CombatStrength
from engine.dice import SuppliedDice
from engine.errors import RulesViolation

JSON = dict[str, Any]
T = SYSTEM.tables

#: what the summary says of Quo when the condition strikes (duration left out)
STRUCK = {
    "dead": "Quo is dead",
    "idiocy": "Quo suffers permanent idiocy",
    "permanent-insanity": "Quo suffers permanent insanity",
    "controlled": "Quo is a 'robot' under the attacker's control",
    "psionic-wound": "Quo suffers a psionic wound (all psionic ability lost)",
    "asleep": "Quo is asleep",
    "dazed": "Quo is dazed",
    "confused": "Quo is confused",
    "coma": "Quo is in a coma",
    "stunned": "Quo is stunned",
    "enraged": "Quo is enraged",
    "panicked": "Quo is panicked",
    "feebleminded": "Quo is feebleminded",
    "temporary-insanity": "Quo suffers temporary insanity",
    "mild-insanity": "Quo suffers mild insanity",
}
#: the summary's sentence when it ends (a timed one; exchange.end_round, a segment)
ENDED = {
    "dead": "Quo is no longer dead.",
    "idiocy": "Quo's permanent idiocy ends.",
    "permanent-insanity": "Quo's permanent insanity ends.",
    "controlled": "Quo is no longer a 'robot' under the attacker's control.",
    "psionic-wound": "Quo's psionic wound (all psionic ability lost) ends.",
    "asleep": "Quo is no longer asleep.",
    "dazed": "Quo is no longer dazed.",
    "confused": "Quo is no longer confused.",
    "coma": "Quo is no longer in a coma.",
    "stunned": "Quo is no longer stunned.",
    "enraged": "Quo is no longer enraged.",
    "panicked": "Quo is no longer panicked.",
    "feebleminded": "Quo is no longer feebleminded.",
    "temporary-insanity": "Quo's temporary insanity ends.",
    "mild-insanity": "Quo's mild insanity ends.",
}


def in_band(bands: list[JSON], i: int) -> int:
    """A value in band ``i`` (its maximum; one past the last maximum for the open end)."""
    top = bands[i]["max"]
    return int(top) if top is not None else int(bands[i - 1]["max"]) + 1


def letter_cells() -> dict[str, tuple[str, str, int]]:
    """For each letter, the first defenseless-table cell (attacker band, mode, defender
    column) that gives it."""
    cells: dict[str, tuple[str, str, int]] = {}
    for band, rows in T.defenseless["matrix"].items():
        for mode, row in rows.items():
            for column, cell in enumerate(row):
                if isinstance(cell, str):
                    cells.setdefault(cell, (band, mode, column))
    return cells


def wave_cases() -> dict[str, tuple[int, int]]:
    """For each Psionic Wave effect, an Int + Wis and a d100 roll that give it after a
    failed save (a natural 1 at short range; a band whose save a 1 makes is left out)."""
    cases: dict[str, tuple[int, int]] = {}
    bands = T.wave["int_wis_bands"]
    for i, band in enumerate(bands):
        if T.wave_save(band["id"], "short") <= 1:
            continue
        low = 1
        for top, condition in T.wave_effects(band["id"]):
            cases.setdefault(condition, (in_band(bands, i), low))
            low = top + 1
    return cases


def test_every_condition_has_its_sentences_here() -> None:
    assert set(STRUCK) == set(ENDED) == set(T.conditions)
    reachable = {T.letters[k].condition for k in letter_cells()} | set(wave_cases())
    assert reachable == set(T.conditions)


@pytest.mark.parametrize("letter", sorted(T.letters))
def test_a_defenseless_table_letter_reads_as_a_sentence(letter: str) -> None:
    """Table B (RULES.md 2.6): a letter is a condition; a timed one says for how long
    (1d4, rolled 2 here; "weeks" and "turns" as the table names them)."""
    band, mode, column = letter_cells()[letter]
    reading = T.letters[letter]
    attack = in_band(T.bands, [b["id"] for b in T.bands].index(band))
    total = in_band(T.defenseless["defender_bands"], column)
    attacker = {"id": "ann", "name": "Ann", "attack_strength": attack, "defense_strength": 0}
    defender = {"id": "quo", "name": "Quo", "attack_strength": total - 10,
                "defense_strength": 10}
    res = SYSTEM.resolve({"attacker": attacker, "defender": defender,
                          "attack": {"mode": mode}, "defense": None},
                         SuppliedDice({"condition-duration": [2] * 4, "implosion": [100]}))
    assert res.fields["condition"]["id"] == reading.condition
    lasting = "" if reading.duration is None else f" for 2 {reading.duration.unit}"
    sentence = f" - {STRUCK[reading.condition]}{lasting}. Ann spends "
    assert sentence in res.summary, res.summary


@pytest.mark.parametrize("condition", sorted(wave_cases()))
def test_a_psionic_wave_effect_reads_as_a_sentence(condition: str) -> None:
    """Table C (RULES.md 2.7): after a failed save the d100 effect is a condition."""
    int_wis, roll = wave_cases()[condition]
    attacker = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 0}
    defender = {"id": "quo", "name": "Quo", "int": int_wis // 2, "wis": int_wis - int_wis // 2}
    res = SYSTEM.resolve({"attacker": attacker, "defender": defender,
                          "attack": {"mode": "psionic-wave"}, "defense": None},
                         SuppliedDice({"save": [1], "wave-effect": [roll]}))
    assert res.fields["condition"]["id"] == condition
    assert f"and fails: {STRUCK[condition]} (d100 {roll}). Ann spends " in res.summary, \
        res.summary


def test_a_duration_of_one_is_singular() -> None:
    """Letter W (1d4 weeks) rolled 1: "for 1 week", not "for 1 weeks"."""
    attacker = {"id": "ann", "name": "Ann", "attack_strength": 20, "defense_strength": 0}
    defender = {"id": "quo", "name": "Quo", "attack_strength": 20, "defense_strength": 20}
    res = SYSTEM.resolve({"attacker": attacker, "defender": defender,
                          "attack": {"mode": "mind-thrust"}, "defense": None},
                         SuppliedDice({"condition-duration": [1]}))
    assert (" - Quo suffers a psionic wound (all psionic ability lost) for 1 week. "
            in res.summary), res.summary


@pytest.mark.parametrize("condition", sorted(T.conditions))
def test_a_condition_ending_reads_as_a_sentence(condition: str) -> None:
    assert T.condition_ended("Quo", condition) == ENDED[condition]


@pytest.mark.parametrize("condition", sorted(c for c in T.conditions if T.incapacitates(c)))
def test_an_incapacitating_condition_reads_as_a_sentence_where_it_stops_an_attack(
        condition: str) -> None:
    """The defender that cannot use its defense (the summary), or a dead one that
    cannot be attacked (the refusal), and the attacker that cannot attack (the refusal)
    are told with the same words."""
    quo = {"id": "quo", "name": "Quo", "attack_strength": 50, "defense_strength": 50,
           "conditions": [condition]}
    ann = {"id": "ann", "name": "Ann", "attack_strength": 50, "defense_strength": 50}
    on_quo = {"attacker": ann, "defender": quo, "attack": {"mode": "ego-whip"},
              "defense": {"mode": "mind-blank"}}
    if T.kills(condition):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.resolve(on_quo, SuppliedDice({}))
        assert err.value.detail == (f"{STRUCK[condition]}: there is no mind left to attack "
                                    "(/defender)")
    else:
        res = SYSTEM.resolve(on_quo, SuppliedDice({}))
        assert res.summary.startswith(f"{STRUCK[condition]} and cannot use Mind Blank: "
                                      "defenseless. ")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.resolve({"attacker": quo, "defender": ann, "attack": {"mode": "ego-whip"}},
                       SuppliedDice({}))
    assert err.value.detail == f"{STRUCK[condition]} and cannot attack"


def psionic(cid: str, attack: int, defense: int) -> JSON:
    return {"id": cid, "name": cid.capitalize(), "attack_strength": attack,
            "defense_strength": defense}


def summary(attack: int, defense_strength: int, mode: str, defense: str | None,
            dice: dict[str, list[int]], **options: Any) -> str:
    r: JSON = {"attacker": psionic("ann", attack, 0),
               "defender": psionic("bo", 20, defense_strength),
               "attack": {"mode": mode}, "defense": None if defense is None else {"mode": defense}}
    if options:
        r["options"] = options
    return SYSTEM.resolve(r, SuppliedDice(dice)).summary


def test_a_combat_attack_reads_its_table_value_each_bonus_die_and_the_cap() -> None:
    """Table A 01-25: Ego Whip on Shield Thoughts is 3; Combat Strength 60 earns two
    penetrating d6, each told by its own total (6 + 5 of a chain stopped at the cap of 1
    counts 11)."""
    assert summary(60, 40, "ego-whip", "shield-thoughts", {"damage": [2, 3]}) == (
        "Ann attacks Bo with Ego Whip against Shield Thoughts (band 01-25): 3 + 2d6 (2 + 3)"
        " = 8 damage. Ann spends 7 attack strength (60 → 53); Bo's defense strength "
        "40 → 32.")
    assert summary(60, 40, "ego-whip", "shield-thoughts", {"damage": [6, 6, 4]},
                   **{"H-CS-PEN-CAP": 1}) == (
        "Ann attacks Bo with Ego Whip against Shield Thoughts (band 01-25): 3 + 2d6 (11 + 4)"
        " = 18 damage (penetration stopped at the cap). Ann spends 7 attack strength "
        "(60 → 53); Bo's defense strength 40 → 22.")


def test_an_attack_without_bonus_dice_reads_its_table_value_alone_and_a_strength_kept() -> None:
    """Table A 01-25: Mind Thrust on Mental Barrier is 0, and Combat Strength 10 earns
    no bonus die: no sum to show, and Bo's defense strength stays where it was."""
    assert summary(10, 7, "mind-thrust", "mental-barrier", {}) == (
        "Ann attacks Bo with Mind Thrust against Mental Barrier (band 01-25): 0 damage. "
        "Ann spends 4 attack strength (10 → 6); Bo's defense strength stays at 7.")


def test_psychic_implosion_reads_its_crush_chance_its_d100_and_a_crushed_mind() -> None:
    """H-CS-IMPLOSION: 2% (01-25 vs Mind Blank) to crush on d100; the bonus dice are
    told after the roll, and only when there are any."""
    assert summary(30, 7, "psychic-implosion", "mind-blank",
                   {"damage": [3], "implosion": [1]}) == (
        "Ann attacks Bo with Psychic Implosion against Mind Blank (band 01-25): 2% to "
        "crush, d100 1, 1d6 (3) = 3 damage; Bo's mind is crushed. Ann spends 14 attack "
        "strength (30 → 16); Bo's defense strength 7 → 0.")
    assert summary(20, 7, "psychic-implosion", "mind-blank", {"implosion": [50]}) == (
        "Ann attacks Bo with Psychic Implosion against Mind Blank (band 01-25): 2% to "
        "crush, d100 50. Ann spends 14 attack strength (20 → 6); Bo's defense strength "
        "stays at 7.")
    # the dash (01-25 vs Shield Thoughts) reads 0%: no d100 is rolled
    assert summary(20, 7, "psychic-implosion", "shield-thoughts", {}) == (
        "Ann attacks Bo with Psychic Implosion against Shield Thoughts (band 01-25): 0% to "
        "crush, no roll. Ann spends 14 attack strength (20 → 6); Bo's defense strength "
        "stays at 7.")


def test_a_defenseless_mind_reads_both_bands_and_the_points_or_the_chance() -> None:
    """Table B: attacker band 26-50 against a total of 60-109 is 30 points for Ego Whip,
    with the bonus dice only when H-CS-DEFENSELESS is off; Psychic Implosion from band
    01-25 against 59 or less is a 72% chance of death on d100."""
    assert summary(30, 40, "ego-whip", None, {}) == (
        "Ann attacks Bo with Ego Whip; Bo is defenseless (defenseless table, attacker band "
        "26-50, defender band 60-109): 30 points. Ann spends 7 attack strength (30 → 23); "
        "Bo's defense strength 40 → 10.")
    # 35 points against a total of 59 or less: what defense strength cannot take comes
    # off attack strength
    assert summary(30, 10, "ego-whip", None, {}).endswith(
        ": 35 points. Ann spends 7 attack strength (30 → 23); Bo's defense strength 10 → 0, "
        "attack strength 20 → 0.")
    assert summary(30, 40, "ego-whip", None, {"damage": [4]},
                   **{"H-CS-DEFENSELESS": False}) == (
        "Ann attacks Bo with Ego Whip; Bo is defenseless (defenseless table, attacker band "
        "26-50, defender band 60-109): 30 + 1d6 (4) = 34 points. Ann spends 7 attack "
        "strength (30 → 23); Bo's defense strength 40 → 6.")
    assert summary(20, 10, "psychic-implosion", None, {"implosion": [90]}) == (
        "Ann attacks Bo with Psychic Implosion; Bo is defenseless (defenseless table, "
        "attacker band 01-25, defender band ..59): 72% chance, d100 90. Ann spends 14 "
        "attack strength (20 → 6); Bo's defense strength stays at 10.")


def test_an_attack_beyond_short_range_says_its_range() -> None:
    """RULES.md 2.3: range changes the bonus dice; the summary names a range other than
    short (Combat Strength 40 earns none at medium range)."""
    r: JSON = {"attacker": psionic("ann", 40, 0), "defender": psionic("bo", 20, 40),
               "attack": {"mode": "ego-whip", "range": "medium"},
               "defense": {"mode": "shield-thoughts"}}
    assert SYSTEM.resolve(r, SuppliedDice({})).summary.startswith(
        "Ann attacks Bo with Ego Whip at medium range against Shield Thoughts (band 01-25): "
        "3 damage.")


def test_a_defenseless_chance_of_0_in_a_gm_s_table_reads_no_roll() -> None:
    """A GM's table B may give Psychic Implosion 0%: no d100 is rolled for it."""
    data = copy.deepcopy(T.data)
    data["defenseless"]["matrix"]["01-25"]["psychic-implosion"][0] = 0
    r: JSON = {"attacker": psionic("ann", 20, 0), "defender": psionic("bo", 10, 10),
               "attack": {"mode": "psychic-implosion"}, "defense": None}
    assert CombatStrength(data).resolve(r, SuppliedDice({})).summary == (
        "Ann attacks Bo with Psychic Implosion; Bo is defenseless (defenseless table, "
        "attacker band 01-25, defender band ..59): 0% chance, no roll. Ann spends 14 "
        "attack strength (20 → 6); Bo's defense strength stays at 10.")
