"""revised-2e: every table cell of RULES.md §1.2–1.8 against the shipped data file.

The expected values are copied from RULES.md here, so a change to tables.json that
drifts from the rules reference fails a test naming the cell.
"""

from __future__ import annotations

import pytest

from engine.dice import SuppliedDice
from engine.revised_2e import SYSTEM
from engine.revised_2e.rules import (
    attacks_allowed,
    derive_mac,
    quick_mac_modifier,
    quick_mac_range,
    roll_quick_mac,
    save_paralyzation,
)

T = SYSTEM.tables

# RULES.md §1.2 (seed 004: "Ego Whip inflicts 2-7 points ... (1d6+1) for every 4 PSPs")
MODES = {
    "ego-whip": (4, 6, 1, {"short": 40, "medium": 80, "long": 120}),
    "id-insinuation": (6, 8, 2, {"short": 60, "medium": 120, "long": 180}),
    "mind-thrust": (2, 4, 0, {"short": 30, "medium": 60, "long": 90}),
    "psionic-blast": (10, 12, 4, {"short": 20, "medium": 40, "long": 60}),
    "psychic-crush": (8, 10, 3, {"short": 50}),
}
DEFENSES = {"intellect-fortress": 4, "mental-barrier": 5, "mind-blank": 3,
            "thought-shield": 2, "tower-of-iron-will": 6}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_attack_mode_cost_damage_and_ranges_table_1_2(mode: str) -> None:
    cost, sides, bonus, ranges = MODES[mode]
    assert T.attack_cost(mode) == cost
    assert T.damage_die(mode) == (sides, bonus)
    assert dict(T.ranges(mode)) == ranges
    assert T.failed_cost(mode, cost * 3) == cost * 3 // 2  # "one-half of the declared PSPs"


@pytest.mark.parametrize("mode", sorted(DEFENSES))
def test_defense_cost_table_1_2(mode: str) -> None:
    assert T.defense_cost(mode) == DEFENSES[mode]


# RULES.md §1.3, Table 76 as the seed uses it (modifier added to the attacker's roll)
DEFENSE_COLUMNS = ("mind-blank", "thought-shield", "mental-barrier", "intellect-fortress",
                   "tower-of-iron-will")
TABLE_76 = {
    "mind-thrust": (5, 3, -2, -3, -5),
    "ego-whip": (3, 4, 2, -4, -3),
    "id-insinuation": (-5, -3, -1, 2, 5),
    "psychic-crush": (1, -4, 4, -1, -2),
    "psionic-blast": (-3, 2, -5, 4, 3),
}


@pytest.mark.parametrize("attack,defense,modifier", [
    (a, d, row[i]) for a, row in TABLE_76.items() for i, d in enumerate(DEFENSE_COLUMNS)])
def test_table_76_attack_vs_defense_modifier(attack: str, defense: str, modifier: int) -> None:
    assert T.modifier(attack, defense) == modifier


def test_table_76_no_defense_is_zero() -> None:
    assert all(T.modifier(a, None) == 0 for a in MODES)


# RULES.md §1.4 step 3: "Int ≤15: 0; 16–17: 1; 18–19: 2; 20–22: 3; 23+: 4."
INT_BONUS = {**dict.fromkeys(range(1, 16), 0), 16: 1, 17: 1, 18: 2, 19: 2, 20: 3, 21: 3,
             22: 3, 23: 4, 24: 4, 25: 4}


@pytest.mark.parametrize("score", sorted(INT_BONUS))
def test_int_bonus_bands(score: int) -> None:
    assert T.int_bonus(score) == INT_BONUS[score]


# RULES.md §1.6 (S&P Table 74): score -> (base MAC by Wis, MAC modifier by Int, PSP bonus)
TABLE_74 = {**{s: (10, 0, 0) for s in range(1, 16)},
            16: (9, -1, 1), 17: (8, -1, 2), 18: (7, -2, 3), 19: (6, -2, 4), 20: (5, -3, 5),
            21: (4, -3, 6), 22: (3, -3, 7), 23: (2, -4, 8), 24: (1, -4, 9), 25: (0, -4, 10)}


@pytest.mark.parametrize("score", sorted(TABLE_74))
def test_mac_and_psp_bonus_table_1_6(score: int) -> None:
    row = T.ability_row(score, "/wis")
    assert (row["base_mac"], row["mac_modifier"], row["psp_bonus"]) == TABLE_74[score]


def test_mac_derivation_wis_base_plus_int_modifier_minus_mental_armor() -> None:
    """RULES.md 1.1: "minus Mental Armor slots (1 each for nonpsionics, 2 each for
    psionicists)". Wis 18 (base 7), Int 20 (−3), 1 slot; a wild talent is no
    psionicist (seed 004 ranks it with nonpsionic beings for monsters' MACs)."""
    assert derive_mac(T, 18, 20, 1, kind="psionicist") == 7 - 3 - 2
    assert derive_mac(T, 18, 20, 1, kind="wild-talent") == 7 - 3 - 1
    assert derive_mac(T, 18, 20, 1, kind="nonpsionic") == 7 - 3 - 1
    assert derive_mac(T, 25, 25, 20, kind="psionicist") == -10  # never better than −10


# Seed 004 "Quick MACs for Monsters": Intelligence -> base MAC range
QUICK_BASE = {0: (5, 6), 1: (5, 6), 2: (7, 8), 4: (7, 8), 5: (8, 9), 7: (8, 9), 8: (8, 10),
              10: (8, 10), 11: (8, 9), 12: (8, 9), 13: (7, 8), 14: (7, 8), 15: (6, 7),
              16: (6, 7), 17: (5, 6), 18: (5, 6), 19: (4, 5), 20: (4, 5), 21: (2, 3),
              25: (2, 3)}
QUICK_HIGH = {1: 1, 2: 1, 3: 0, 4: 0, 5: -1, 6: -1, 7: -2, 8: -2, 9: -3, 10: -4}
QUICK_LOW = {1: 2, 2: 1, 3: 1, 4: 0, 5: 0, 6: -1, 7: -1, 8: -1, 9: -2, 10: -3}


@pytest.mark.parametrize("intelligence", sorted(QUICK_BASE))
def test_quick_mac_base_range_by_intelligence(intelligence: int) -> None:
    assert quick_mac_range(T, intelligence) == QUICK_BASE[intelligence]


@pytest.mark.parametrize("roll", range(1, 11))
def test_quick_mac_modifier_high_and_low_psionic(roll: int) -> None:
    assert quick_mac_modifier(T, "high", roll) == QUICK_HIGH[roll]
    assert quick_mac_modifier(T, "low", roll) == QUICK_LOW[roll]


def test_quick_mac_rolls_base_die_of_range_size_then_d10() -> None:
    # Average (8–10): a d3 picks 8, 9 or 10; high-psionic d10 of 9 is −3
    dice = SuppliedDice({"mac-base": [2], "mac-modifier": [9]})
    assert roll_quick_mac(T, 9, "high", dice) == 9 - 3
    assert [(r.purpose, r.sides) for r in dice.rolls] == [("mac-base", 3), ("mac-modifier", 10)]
    # H-2E-QUICKMAC-PICK off: the worst value of the range, no base die
    dice = SuppliedDice({"mac-modifier": [1]})
    assert roll_quick_mac(T, 9, "low", dice, pick_with_die=False) == 10  # 10 + 2, MAC 10 at worst


def test_quick_mac_without_the_base_die_takes_the_worst_of_the_range() -> None:
    """RULES.md §1.6 Quick MACs, H-2E-QUICKMAC-PICK off: the base is the worst (highest)
    MAC of the Intelligence range, here Average 8–10 giving 10, below the MAC limit so
    the d10 modifier shows it (high-psionic 9: −3)."""
    dice = SuppliedDice({"mac-modifier": [9]})
    assert roll_quick_mac(T, 9, "high", dice, pick_with_die=False) == 10 - 3
    assert [r.purpose for r in dice.rolls] == ["mac-modifier"]


# RULES.md §1.7: save vs. paralyzation by class group and level
SAVES = {
    "warrior": {1: 14, 2: 14, 3: 13, 4: 13, 5: 11, 6: 11, 7: 10, 8: 10, 9: 8, 10: 8, 11: 7,
                12: 7, 13: 5, 14: 5, 15: 4, 16: 4, 17: 3, 25: 3},
    "priest": {1: 10, 3: 10, 4: 9, 6: 9, 7: 7, 9: 7, 10: 6, 12: 6, 13: 5, 15: 5, 16: 4,
               18: 4, 19: 2, 30: 2},
    "rogue": {1: 13, 4: 13, 5: 12, 8: 12, 9: 11, 12: 11, 13: 10, 16: 10, 17: 9, 20: 9,
              21: 8, 30: 8},
    "psionicist": {1: 13, 4: 13, 5: 12, 8: 12, 9: 11, 12: 11, 13: 10, 16: 10, 17: 9, 20: 9,
                   21: 8, 30: 8},
    "wizard": {1: 14, 5: 14, 6: 13, 10: 13, 11: 11, 15: 11, 16: 10, 20: 10, 21: 8, 30: 8},
}


@pytest.mark.parametrize("group,level,target", [
    (g, lv, t) for g, row in SAVES.items() for lv, t in row.items()])
def test_save_vs_paralyzation_table_1_7(group: str, level: int, target: int) -> None:
    assert save_paralyzation(T, group, level, save_0=True) == target


def test_save_level_0_and_monsters_house_default_h_2e_save_0() -> None:
    assert save_paralyzation(T, "rogue", 0, save_0=True) == 16
    assert save_paralyzation(T, "rogue", 0, save_0=False) == 13
    assert all(save_paralyzation(T, "monster", hd, True) == t
               for hd, t in SAVES["warrior"].items())


# RULES.md §1.8: "levels 1–6 one; 7–12 three per two rounds; 13+ two; wild talents one."
@pytest.mark.parametrize("level,rounds", [
    (1, [1, 1, 1, 1]), (6, [1, 1, 1, 1]), (7, [1, 2, 1, 2]), (12, [1, 2, 1, 2]),
    (13, [2, 2, 2, 2]), (20, [2, 2, 2, 2])])
def test_attacks_per_round_by_level(level: int, rounds: list[int]) -> None:
    assert [attacks_allowed(T, "psionicist", level, r) for r in (1, 2, 3, 4)] == rounds
    assert [attacks_allowed(T, "wild-talent", level, r) for r in (1, 2, 3, 4)] == [1] * 4


def test_three_per_two_rounds_house_default_h_2e_three_per_two_off() -> None:
    assert [attacks_allowed(T, "psionicist", 9, r, False) for r in (1, 2, 3, 4)] == [2, 1, 2, 1]


def test_attacks_per_round_below_level_1_and_before_round_1() -> None:
    """Callers validate level and round, so these are the rules' own floors: no level
    means no psionic attack (also for a nonpsionic kind); a round before the first counts
    as the first, so the extra attack of 3-per-2 is not handed out early."""
    assert [attacks_allowed(T, kind, 0, 1) for kind in ("psionicist", "wild-talent")] == [0, 0]
    assert attacks_allowed(T, "nonpsionic", 9, 1) == 0
    assert [attacks_allowed(T, "psionicist", 9, r) for r in (0, -3)] == [1, 1]
    assert [attacks_allowed(T, "psionicist", 9, r, False) for r in (0, -3)] == [2, 2]
