"""combat-strength summaries: every condition the tables can give reads as a sentence.

Each condition of data/tables.json (the defenseless table's letters, RULES.md 2.6, and
the Psionic Wave effects, 2.7) is said through its ``predicate``: audit, "Vora is
permanent insanity." and "Quo is psionic wound: all psionic ability lost for 2 weeks."
were the table's noun phrases after "is". The sentences expected are written out here
in full, one per condition.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.combat_strength import SYSTEM
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
