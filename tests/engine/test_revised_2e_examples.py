"""revised-2e: every worked example of seed 004 (RULES.md §1.4, last paragraph)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.dice import SuppliedDice
from engine.errors import RulesViolation
from engine.revised_2e import SYSTEM


def psionicist(cid: str, name: str, level: int, **more: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"id": cid, "name": name, "kind": "psionicist", "level": level,
                         "psp_max": 40, "int": 14, "wis": 13,
                         "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}
    c.update(more)
    return c


def target(mac: int, **more: Any) -> dict[str, Any]:
    return psionicist("target", "Target", 1, mac=mac, **more)


def exchange(attacker: dict[str, Any], defender: dict[str, Any], mode: str = "mind-thrust",
             multiplier: int = 1, defense: str | None = None, **dice: list[int]
             ) -> dict[str, Any]:
    request = {"attacker": attacker, "defender": defender,
               "attack": {"mode": mode, "multiplier": multiplier, "range": "short"},
               "defense": {"mode": defense} if defense else None}
    return SYSTEM.resolve(request, SuppliedDice(dice)).to_json()


# "A 3rd-level psionicist with an MTHAC0 of 18 can achieve a critical mental hit against
#  a target with a MAC 3, since he can roll a 20 and hit that target with 5 to spare.
#  He can't achieve a critical mental hit against a target with a MAC 2 (or better)."
def test_critical_needs_five_to_spare_mthac0_18_vs_mac_3() -> None:
    attacker = psionicist("psi", "Psionicist", 3)
    assert SYSTEM.combatant(attacker)["mthac0"] == 18
    result = exchange(attacker, target(3), attack=[20], damage=[4], save=[20])
    assert result["needed"] == 15
    assert result["roll"]["natural"] == 20 and result["critical"] is True


@pytest.mark.parametrize("natural", [18, 19, 20])
def test_critical_impossible_mthac0_18_vs_mac_2(natural: int) -> None:
    result = exchange(psionicist("psi", "Psionicist", 3), target(2), attack=[natural],
                      damage=[4], save=[20])
    assert result["needed"] == 16
    assert result["critical"] is False
    assert SYSTEM.exact_odds({"attacker": psionicist("psi", "Psionicist", 3),
                              "defender": target(2),
                              "attack": {"mode": "mind-thrust"}})["critical"] == 0


# "A 3rd-level wild talent with an MTHAC0 of 19 can achieve a critical mental hit against a
#  target with a MAC 4 ... She can't achieve a critical mental hit against a target with a
#  MAC 3 (or better), however."
def test_critical_wild_talent_mthac0_19_vs_mac_4_and_not_mac_3() -> None:
    talent = psionicist("wt", "Wild talent", 3, kind="wild-talent")
    assert SYSTEM.combatant(talent)["mthac0"] == 19
    assert exchange(talent, target(4), attack=[20], damage=[4], save=[20])["critical"]
    for natural in (18, 19, 20):
        assert not exchange(talent, target(3), attack=[natural], damage=[4],
                            save=[20])["critical"]


# "Fenka has a maximum of 40 PSPs ... Ulcen must inflict enough mental damage to cause Fenka
#  to lose 25% of her PSP maximum in a single attack (10 or more PSPs) for Fenka's mind to
#  become opened. Fenka can attempt a save if the damage is less than 25% ..."
ULCEN = psionicist("ulcen", "Ulcen of Tyr", 4)
FENKA = psionicist("fenka", "Fenka of Raam", 4, mac=3, attacks=["psychic-crush"])


def test_critical_with_quarter_of_psp_max_opens_without_save() -> None:
    # mind thrust ×4 with natural 20: needed 14, crit; 4 + 3 + 2 + 1 = 10 = 25% of 40
    result = exchange(ULCEN, FENKA, multiplier=4, attack=[20], damage=[4, 3, 2, 1])
    assert result["critical"] and result["damage"] == 10
    assert result["save"] is None
    assert result["mind_opened"] and result["opened_by"] == "critical"
    assert result["defender"]["after"]["mind"]["state"] == "open"
    assert not any(r["purpose"] == "save" for r in result["rolls"])


@pytest.mark.parametrize("save_roll,opened", [(13, False), (12, True)])
def test_critical_below_quarter_allows_save_vs_paralyzation(save_roll: int,
                                                            opened: bool) -> None:
    # 9 damage is below 25% of 40: Fenka saves vs. paralyzation (psionicist level 4: 13)
    result = exchange(ULCEN, FENKA, multiplier=4, attack=[20], damage=[3, 3, 2, 1],
                      save=[save_roll])
    assert result["damage"] == 9
    assert result["save"] == {"target": 13, "roll": save_roll, "success": not opened}
    assert result["mind_opened"] is opened


@pytest.mark.parametrize("damage,saves", [([4, 3, 2, 1], True), ([4, 4, 2, 1], False)])
def test_a_quarter_of_a_psp_max_not_divisible_by_4_is_not_rounded_down(
        damage: list[int], saves: bool) -> None:
    # 25% of 41 is 10.25: 10 damage falls short of it and Fenka saves; 11 opens her mind
    # without a save ("If the damage is 25% or more of the PSP maximum, no saving throw")
    fenka = {**FENKA, "psp_max": 41}
    result = exchange(ULCEN, fenka, multiplier=4, attack=[20], damage=damage, save=[20])
    assert result["critical"] and result["damage"] == sum(damage)
    assert (result["save"] is not None) is saves
    assert result["mind_opened"] is not saves


# "Ego Whip ... a 3rd-level psionicist can spend up to 12 PSPs (cost x level--4x3 =12) for
#  3d6+3 points of damage."
def test_ego_whip_third_level_declares_at_most_12_psps_for_3d6_plus_3() -> None:
    whip = psionicist("psi", "Psionicist", 3, attacks=["ego-whip"])
    result = exchange(whip, target(10), mode="ego-whip", multiplier=3, attack=[15],
                      damage=[6, 1, 4])
    assert result["hit"] and result["psp_spent"] == 12
    assert result["damage"] == (6 + 1) + (1 + 1) + (4 + 1)
    assert [r["sides"] for r in result["rolls"] if r["purpose"] == "damage"] == [6, 6, 6]
    odds = SYSTEM.exact_odds({"attacker": whip, "defender": target(10),
                              "attack": {"mode": "ego-whip", "multiplier": 3}})
    on_hit = {v: p / odds["hit"] for v, p in odds["damage"].items() if v}
    assert min(on_hit) == 6 and max(on_hit) == 21
    with pytest.raises(RulesViolation) as err:
        exchange(whip, target(10), mode="ego-whip", multiplier=4, attack=[15])
    assert err.value.rule == "multiplier-above-level"


# "The base cost of a mind thrust is 2, so if the attack succeeds Ulcen will pay 8 PSPs
#  (2x4=8) for 4d4 points of psionic damage. If the attack fails, the cost to Ulcen is
#  4 PSPs (8/2=4)."
def test_ulcen_mind_thrust_four_steps_pays_8_on_hit_4_on_miss() -> None:
    hit = exchange(ULCEN, FENKA, multiplier=4, attack=[15], damage=[1, 2, 3, 4])
    assert hit["hit"] and hit["psp_spent"] == 8 and hit["damage"] == 10
    assert [r["sides"] for r in hit["rolls"] if r["purpose"] == "damage"] == [4] * 4
    assert hit["attacker"]["after"]["psp"] == 40 - 8
    miss = exchange(ULCEN, FENKA, multiplier=4, attack=[5])
    assert not miss["hit"] and miss["psp_spent"] == 4 and miss["damage"] == 0
    assert miss["attacker"]["after"]["psp"] == 40 - 4


# "Fenka attacks Ulcen with a psychic crush. Ulcen defends with a thought shield. The
#  resulting modifier is -4 ... She needs a 14 or better. She rolls a 16. 16-4=12.
#  Ulcen's defense holds and Fenka's attack fails."
def test_psychic_crush_vs_thought_shield_fenka_needs_14_rolls_16_gets_12() -> None:
    result = exchange(FENKA, {**ULCEN, "mac": 3}, mode="psychic-crush",
                      defense="thought-shield", attack=[16])
    assert result["needed"] == 14
    assert result["roll"] == {"natural": 16, "modifier": -4, "modified": 12}
    assert result["hit"] is False
    assert result["summary"] == (
        "Ulcen of Tyr raises the thought shield (2 PSPs). Fenka of Raam's psychic crush "
        "breaks against Ulcen of Tyr's thought shield (needed 14, rolled 16 − 4 = 12). "
        "Fenka of Raam pays 4 PSPs.")
    # half of the declared 8 PSPs for the failed attack, 2 for the shield
    assert result["attacker"]["after"]["psp"] == 40 - 4
    assert result["defender"]["after"]["psp"] == 40 - 2 and result["defense_psp"] == 2
