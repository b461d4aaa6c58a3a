"""``systems.describe`` ``dice_purposes``: each purpose says whether the rules add its
dice up into one figure (``summed``: revised-2e's damage, one die per step of the
multiplier; a power-pool side's pool; combat-strength's penetrating damage dice) or each
die is a figure of its own (a check, a save, a d100 on a table). A VTT shows a summed
purpose's dice of one roller as one roll and every other die as a roll of its own, so it
must not guess which is which."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import builtin_systems
from engine.dice import PenetratingDie, RandomDice, SuppliedDice
from engine.errors import EngineError
from engine.system import System

from . import test_combat_strength_properties as cs_props
from . import test_power_pool_properties as pp_props
from . import test_revised_2e_properties as r2_props

JSON = dict[str, Any]
SYSTEMS = builtin_systems()
SOME = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def summed(system: System) -> dict[str, bool]:
    return {p["purpose"]: p["summed"] for p in system.describe()["dice_purposes"]}


def test_every_purpose_of_every_system_says_whether_its_dice_are_summed() -> None:
    assert summed(SYSTEMS["revised-2e"]) == {
        "attack": False, "damage": True, "save": False, "effect-duration": True,
        "lost-power": True, "hp-damage": True, "open-duration": True, "wisdom-check": False,
        "mac-base": False, "mac-modifier": False, "initiative": False}
    assert summed(SYSTEMS["combat-strength"]) == {
        "damage": True, "implosion": False, "save": False, "wave-effect": False,
        "condition-duration": True}
    assert summed(SYSTEMS["power-pool"]) == {"attack": True, "defense": True, "save": False}


class HowRolled(RandomDice):
    """Random dice that note how the engine asked for each purpose: as several dice of
    one figure (``roll_many``, a penetrating die and its follow-ups) or one die alone."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.ways: dict[str, set[str]] = {}
        self._within = 0

    def _note(self, purpose: str, way: str) -> None:
        self.ways.setdefault(purpose, set()).add(way)

    def roll(self, purpose: str, sides: int, by: str | None = None,
             follows: int | None = None) -> int:
        if not self._within:
            self._note(purpose, "alone")
        return super().roll(purpose, sides, by, follows)

    @contextmanager
    def _summing(self, purpose: str) -> Iterator[None]:
        """The dice rolled inside are one figure's (not noted one by one)."""
        self._note(purpose, "summed")
        self._within += 1
        try:
            yield
        finally:
            self._within -= 1

    def roll_many(self, purpose: str, sides: int, count: int,
                  by: str | None = None) -> list[int]:
        with self._summing(purpose):
            return super().roll_many(purpose, sides, count, by)

    def roll_penetrating(self, purpose: str, sides: int, by: str | None = None,
                         cap: int = 100) -> PenetratingDie:
        with self._summing(purpose):
            return super().roll_penetrating(purpose, sides, by, cap)


def check_ways(system: System, request: JSON, seed: int) -> None:
    dice = HowRolled(seed)
    try:
        system.resolve(request, dice)
    except EngineError:
        return
    flags = summed(system)
    for purpose, ways in dice.ways.items():
        assert ways == {"summed" if flags[purpose] else "alone"}, (purpose, ways)


@SOME
@given(r2_props.legal_requests(), st.integers(0, 2**32))
def test_revised_2e_rolls_summed_purposes_as_sums_and_the_others_one_die_at_a_time(
        request: JSON, seed: int) -> None:
    check_ways(SYSTEMS["revised-2e"], request, seed)


@SOME
@given(cs_props.requests(), st.integers(0, 2**32))
def test_combat_strength_rolls_summed_purposes_as_sums_and_the_others_one_die_at_a_time(
        request: JSON, seed: int) -> None:
    check_ways(SYSTEMS["combat-strength"], request, seed)


@SOME
@given(pp_props.requests(), st.integers(0, 2**32))
def test_power_pool_rolls_summed_purposes_as_sums_and_the_others_one_die_at_a_time(
        request: JSON, seed: int) -> None:
    check_ways(SYSTEMS["power-pool"], request, seed)


def test_revised_2e_damage_is_the_sum_of_its_dice() -> None:
    """§1.4: "one die per step of the declared multiplier"; the damage is their sum."""
    system = SYSTEMS["revised-2e"]
    ulcen = {"id": "ulcen", "name": "Ulcen", "kind": "psionicist", "level": 4, "psp": 40,
             "psp_max": 40, "int": 14, "wis": 13, "mac": 10, "attacks": ["mind-thrust"],
             "defenses": []}
    fenka = {**ulcen, "id": "fenka", "name": "Fenka"}
    bonus = int(system.tables.attacks["mind-thrust"]["damage"]["bonus"])
    result = system.resolve({"attacker": ulcen, "defender": fenka,
                             "attack": {"mode": "mind-thrust", "multiplier": 3}},
                            SuppliedDice({"attack": [19], "damage": [1, 2, 3],
                                          "save": [20]})).to_json()
    assert [r["value"] for r in result["rolls"] if r["purpose"] == "damage"] == [1, 2, 3]
    assert result["damage"] == 6 + 3 * bonus


def test_power_pool_totals_are_the_sums_of_each_sides_pool() -> None:
    """RULES.md §3: each side rolls its pool and adds it up."""
    system = SYSTEMS["power-pool"]
    ulcen = {"id": "ulcen", "name": "Ulcen", "hit_dice": 3, "die": 6, "psionic": True,
             "attacks": ["mental-stab"], "defenses": []}
    fenka = {**ulcen, "id": "fenka", "name": "Fenka", "hit_dice": 2}
    result = system.resolve({"attacker": ulcen, "defender": fenka,
                             "attack": {"mode": "mental-stab"}},
                            SuppliedDice({"attack": [1, 2, 3], "defense": [4, 6]})).to_json()
    assert (result["attack_total"], result["defense_total"]) == (6, 10)


def test_combat_strength_damage_adds_every_penetrating_die() -> None:
    """The seed's bonus damage dice penetrate: a 6 adds a die that counts one less, and
    the damage is every die added up."""
    system = SYSTEMS["combat-strength"]
    ann = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 100}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 50, "defense_strength": 50}
    request = {"attacker": ann, "defender": bo, "attack": {"mode": "mind-thrust"},
               "defense": {"mode": "mind-blank"}}
    plain = system.resolve(request, SuppliedDice({"damage": [1] * 5})).to_json()
    bonus = [6, 6, 1, 3, 2, 2, 2]  # 6+5+0, then 3, 2, 2, 2
    result = system.resolve(request, SuppliedDice({"damage": bonus})).to_json()
    assert result["bonus_dice"] == plain["bonus_dice"] == 5
    assert result["damage"] - plain["damage"] == (6 + 5 + 0 + 3 + 2 + 2 + 2) - 5
