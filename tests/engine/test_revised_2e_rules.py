"""revised-2e rules outside the seed's worked examples: combatant derivations (§1.1),
checks and refusals (§1.4), open minds (§1.5), recovery (§1.8), house rules and the
description the daemon serves."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine.dice import SuppliedDice
from engine.errors import InvalidCombatant, InvalidInput, RulesViolation
from engine.results import Event, FrozenDict, FrozenList, freeze
from engine.revised_2e import SYSTEM, Revised2e
from engine.revised_2e.exchange import attack
from engine.revised_2e.rules import (
    add_condition,
    best_save_paralyzation,
    close_mind,
    close_offer,
    editable,
    end_of_round,
    may_close_by_paying,
    price_closing,
    rest,
    save_paralyzation,
)
from engine.revised_2e.text import (
    IN_ENCOUNTERS,
    OUTSIDE_ENCOUNTERS,
    close_offer_line,
    may_close_line,
    rest_lines,
    unpriced_line,
)

JSON = dict[str, Any]


def psionicist(cid: str, **more: Any) -> JSON:
    c: JSON = {"id": cid, "kind": "psionicist", "level": 5, "psp_max": 50, "int": 14,
               "wis": 13, "attacks": ["mind-thrust", "ego-whip", "psychic-crush"],
               "defenses": ["thought-shield", "mental-barrier", "mind-blank"]}
    c.update(more)
    return c


def resolve(attacker: JSON, defender: JSON, declared: JSON, defense: JSON | None = None,
            options: JSON | None = None, **dice: list[int]) -> JSON:
    request: JSON = {"attacker": attacker, "defender": defender, "attack": declared,
                     "defense": defense}
    if options:
        request["options"] = options
    return SYSTEM.resolve(request, SuppliedDice(dice)).to_json()


# -- §1.1 combatant ---------------------------------------------------------------------
def test_combatant_defaults_nonpsionic_without_psp_max() -> None:
    c = SYSTEM.combatant({"name": "Templar Guard"})
    assert c["id"] == "templar-guard" and c["kind"] == "nonpsionic"
    assert c["psp"] == c["psp_max"] == 0 and c["mthac0"] is None
    assert c["mac"] == 10 and c["class_group"] == "warrior"
    assert c["save_paralyzation"] == 16  # level 0 (H-2E-SAVE-0)
    assert c["mind"]["state"] == "closed"


@pytest.mark.parametrize(("save_0", "target"), [(True, 16), (False, 14)])
def test_level_0_save_by_house_rule_h_2e_save_0(save_0: bool, target: int) -> None:
    """H-2E-SAVE-0: level 0 saves at 16; false, as level 1 of its class group (warrior
    1–2: 14). A level-1 warrior is the same either way."""
    options = {"H-2E-SAVE-0": save_0}
    guard = SYSTEM.combatant_under({"name": "Templar Guard"}, "", options)
    assert guard["level"] == 0 and guard["save_paralyzation"] == target
    veteran = SYSTEM.combatant_under({"name": "Veteran", "level": 1}, "", options)
    assert veteran["save_paralyzation"] == 14


def test_level_0_saves_as_level_1_of_a_gm_table_that_parts_it_from_level_2() -> None:
    """H-2E-SAVE-0 off: level 0 saves as level 1 of its class group, not as any later
    level of its first band: a GM's table giving level 1 a row of its own is read there
    (the shipped table puts levels 1 and 2 in one band everywhere)."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["save_paralyzation"]["groups"]["warrior"][:1] = [
        {"min": 1, "max": 1, "target": 15}, {"min": 2, "max": 2, "target": 14}]
    guard = Revised2e(raw).combatant_under({"name": "Templar Guard"}, "",
                                            {"H-2E-SAVE-0": False})
    assert guard["level"] == 0 and guard["save_paralyzation"] == 15


def test_combatant_derivations_for_a_psionicist() -> None:
    # psionicist 21 − level; MAC: Wis 17 base 8, Int 18 −2, one Mental Armor slot −2
    c = SYSTEM.combatant({"id": "p", "psp_max": 60, "level": 6, "int": 18, "wis": 17,
                          "mental_armor": 1})
    assert c["kind"] == "psionicist" and c["mthac0"] == 15
    assert c["mac"] == 8 - 2 - 2 and c["psp"] == 60
    assert c["save_paralyzation"] == 12  # rogue and psionicist 5–8


def test_a_character_of_several_classes_saves_with_the_best_of_them() -> None:
    """§1.7 for each class at its own level, the lowest taken (AD&D 2e multi-class): a
    warrior of 6 saves at 11, a psionicist of 4 at 13, a priest of 5 at 9; the index is
    the first class giving the best."""
    t = SYSTEM.tables
    assert best_save_paralyzation(t, [("warrior", 6), ("psionicist", 4)]) == (11, 0)
    assert best_save_paralyzation(t, [("psionicist", 4), ("warrior", 6), ("priest", 5)]) \
        == (9, 2)
    assert best_save_paralyzation(t, [("priest", 5), ("priest", 5)]) == (9, 0)


def test_any_psp_maximum_of_1_or_more_without_a_kind_makes_a_psionicist() -> None:
    """docs/COMBATANTS.md, ``kind``: nonpsionic when psp_max is 0 or absent; so a PSP
    maximum of 1, the smallest, already makes a psionicist."""
    c = SYSTEM.combatant({"id": "p", "psp_max": 1, "level": 1, "mac": 5})
    assert (c["kind"], c["psp"]) == ("psionicist", 1)


@pytest.mark.parametrize("kind", ["psionicist", "wild-talent"])
def test_a_psionic_kind_without_a_psp_maximum_is_refused_at_psp_max(kind: str) -> None:
    """RULES.md §1.1: a psionic mind has a PSP pool; a kind said psionic with a maximum
    of 0 (or none) is a mistake named at ``psp_max``, not a mind with no PSPs."""
    for more in ({"psp_max": 0}, {}):
        with pytest.raises(InvalidCombatant) as err:
            SYSTEM.combatant({"id": "p", "kind": kind, "level": 1, "mac": 5, **more},
                             "/attacker")
        assert [p.path for p in err.value.problems] == ["/attacker/psp_max"]


def test_a_mind_said_nonpsionic_is_refused_any_psps_at_each_field_that_gives_them() -> None:
    """RULES.md §1.1: a nonpsionic mind has no PSP pool; a sheet said nonpsionic that
    gives PSPs is told so at ``psp`` and at ``psp_max``, each one that gives them."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "g", "kind": "nonpsionic", "psp": 5, "psp_max": 5},
                         "/defender")
    assert [(p.path, p.message) for p in err.value.problems] == [
        (f"/defender/{field}", "a nonpsionic mind has no PSPs (give kind or psp_max > 0)")
        for field in ("psp", "psp_max")]


def test_a_nonpsionic_mind_is_refused_defense_modes_as_well_as_attack_modes() -> None:
    """RULES.md §1.1: without a PSP pool a mind knows no psionic mode, attack or
    defense; each list it gives is named."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "g", "defenses": ["thought-shield"]}, "/defender")
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/defender/defenses", "a nonpsionic mind knows no psionic modes")]


def test_mthac0_null_is_derived_for_a_psionic_mind_and_always_null_for_a_nonpsionic() -> None:
    """The combatant schema: MTHAC0 is psionicist 21 − level, and null for a nonpsionic;
    a psionic sheet giving null has it derived, and a nonpsionic sheet's figure is not
    kept, as it has no psionic attack to roll."""
    psionic = SYSTEM.combatant(psionicist("p", mthac0=None))
    assert psionic["mthac0"] == 21 - 5
    assert SYSTEM.combatant({"id": "g", "mthac0": 12})["mthac0"] is None


def test_a_save_vs_paralyzation_given_is_kept_not_derived() -> None:
    """RULES.md §1.1: class group and level (table 1.7) give the save's default; a
    sheet's own figure (a ring or a GM's ruling may change it) is kept."""
    assert SYSTEM.combatant(psionicist("p"))["save_paralyzation"] == 12
    assert SYSTEM.combatant(psionicist("p", save_paralyzation=7))["save_paralyzation"] == 7


def test_a_sheet_normalised_read_only_is_read_only_in_every_part_and_shares_nothing() -> None:
    """``Normaliser.normalise``: the answer shares nothing with what was given, and
    when ``frozen`` every container in it is read-only too (a frozen value's copy is
    itself, so a changeable part inside would be shared by every copy)."""
    raw = psionicist("p", conditions=["dazed"], condition_rounds={"dazed": 2},
                     lost_powers=[{"days": 2}], quick_mac={"intelligence": 9, "psionic": "low"},
                     mind={"state": "closed"})
    options = SYSTEM.options(None)
    plain = SYSTEM.normaliser.normalise(raw, "", options)
    frozen = SYSTEM.normaliser.normalise(raw, "", options, frozen=True)
    assert plain == frozen and isinstance(frozen, FrozenDict)
    for field in ("attacks", "defenses", "conditions", "lost_powers"):
        assert isinstance(frozen[field], FrozenList) and plain[field] is not raw[field]
    for field in ("mind", "condition_rounds", "quick_mac"):
        assert isinstance(frozen[field], FrozenDict) and plain[field] is not raw[field]
    assert isinstance(frozen["lost_powers"][0], FrozenDict)
    assert plain["lost_powers"][0] is not raw["lost_powers"][0]


def test_a_combatant_schema_answered_is_the_caller_s_own_copy() -> None:
    """``combatant_schema`` answers a copy: a caller that edits it (to embed it, as
    ``request_schema`` does) changes neither the next answer nor what is validated."""
    system = Revised2e()
    schema = system.combatant_schema()
    schema["properties"]["level"]["maximum"] = 3
    schema["properties"].clear()
    assert system.combatant_schema() == Revised2e().combatant_schema()
    assert system.combatant(psionicist("p", level=5))["level"] == 5


def test_wild_talent_mthac0_house_rule_h_2e_wt_mthac0() -> None:
    raw = {"id": "w", "kind": "wild-talent", "psp_max": 20, "level": 5, "int": 12, "wis": 12}
    assert SYSTEM.combatant(raw)["mthac0"] == 21 - 3
    assert SYSTEM.combatant(raw, options={"H-2E-WT-MTHAC0": False})["mthac0"] == 21 - 5


def test_invalid_combatant_names_every_field_under_the_prefix() -> None:
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "x", "psp": 5, "psp_max": 3, "kind": "psionicist"},
                         "/attacker")
    paths = {p.path for p in err.value.problems}
    assert paths == {"/attacker/psp", "/attacker/level", "/attacker/int", "/attacker/wis"}
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "x", "mac": 11, "attacks": ["mind-blast"]}, "/defender")
    assert {p.path for p in err.value.problems} == {"/defender/mac", "/defender/attacks/0"}


def test_a_combatant_with_neither_id_nor_name_is_refused() -> None:
    """The combatant schema asks for an ``id`` or a ``name`` (an id is made from the name,
    a name defaults to the id); with neither there is nothing to call it by."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"psp_max": 10, "level": 1, "mac": 5}, "/attacker")
    assert [p.path for p in err.value.problems] == ["/attacker"]
    assert SYSTEM.combatant({"name": "Gith"})["id"] == "gith"
    assert SYSTEM.combatant({"id": "g-1"})["name"] == "g-1"


def test_a_name_with_no_letter_or_digit_makes_the_id_combatant() -> None:
    """docs/COMBATANTS.md: "a name with no letter or digit makes ``combatant`` in
    revised-2e"; an encounter makes the next one unique as it does any other."""
    c = SYSTEM.combatant({"name": "?!", "psp_max": 10, "level": 1, "mac": 5})
    assert (c["id"], c["name"]) == ("combatant", "?!")
    state, first = SYSTEM.encounter_add(SYSTEM.encounter_new(None), {"name": "--"})
    _, second = SYSTEM.encounter_add(state, {"name": "…"})
    assert (first, second) == ("combatant", "combatant-2")


def test_rounds_left_on_a_condition_the_combatant_does_not_have_are_refused() -> None:
    """docs/COMBATANTS.md: every key of ``condition_rounds`` must be among ``conditions``,
    as combat-strength and power-pool have it (the same path and words as power-pool's
    refusal); a key is one JSON Pointer token of the path (RFC 6901). Rounds on a
    condition it has, and a condition with no rounds, are taken."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({"id": "guard", "conditions": ["dazed"],
                          "condition_rounds": {"dazed": 1, "stunned": 2, "a/b~c": 1}},
                         "/defender")
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/defender/condition_rounds/stunned", '"stunned" is not among the conditions'),
        ("/defender/condition_rounds/a~1b~0c", '"a/b~c" is not among the conditions')]
    kept = SYSTEM.combatant({"id": "guard", "conditions": ["dazed", "stunned"],
                             "condition_rounds": {"stunned": 2}})
    assert (kept["conditions"], kept["condition_rounds"]) == (["dazed", "stunned"],
                                                             {"stunned": 2})


@pytest.mark.parametrize(("raw", "cause", "causes"), [
    ({"id": "guard"}, "zero-psp", "attack"),
    ({"id": "guard"}, "critical", "attack"),
    (psionicist("p"), "attack", "critical or zero-psp"),
])
def test_a_mind_opened_by_a_cause_of_another_kind_is_refused(
        raw: JSON, cause: str, causes: str) -> None:
    """§1.1: nonpsionic minds open by an attack and save to close; psionic ones open by a
    critical hit or at 0 PSPs and are locked, then check Wisdom (§1.5). A cause of the
    other kind would close the mind by the wrong procedure."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({**raw, "mind": {"state": "open", "opened_by": cause}}, "/defender")
    [problem] = err.value.problems
    assert problem.path == "/defender/mind/opened_by"
    assert problem.message.endswith(f"it opens by {causes} (RULES.md §1.1)")
    # its own kind's cause, none, or a closed mind's stale one are taken
    own = "attack" if causes == "attack" else "critical"
    for mind in ({"state": "open", "opened_by": own}, {"state": "open", "opened_by": None},
                 {"state": "closed", "opened_by": cause}):
        assert SYSTEM.combatant({**raw, "mind": mind})["mind"]["state"] == mind["state"]


def test_a_lost_power_holds_at_most_23_hours_of_its_next_day() -> None:
    """``lost_powers[].hours`` is the part of the next day already passed in rests: 23
    at most, as 24 would be a whole day (``rest`` counts it as one)."""
    kept = SYSTEM.combatant(psionicist("p", lost_powers=[{"days": 2, "hours": 23}]))
    assert kept["lost_powers"] == [{"days": 2, "hours": 23}]
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(psionicist("p", lost_powers=[{"days": 2, "hours": 24}]), "/defender")
    assert [p.path for p in err.value.problems] == ["/defender/lost_powers/0/hours"]


def test_known_modes_limited_by_level_house_rule_h_2e_mode_limits() -> None:
    raw = psionicist("p", level=2)
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(raw)
    assert {p.path for p in err.value.problems} == {"/attacks", "/defenses"}
    assert SYSTEM.combatant(raw, options={"H-2E-MODE-LIMITS": False})["level"] == 2
    assert SYSTEM.combatant({**raw, "class_group": "monster"})["level"] == 2


def test_a_wild_talent_knows_at_most_3_modes_of_each_whatever_its_level() -> None:
    """RULES.md §1.1: wild talents know at most 3 of each (H-2E-MODE-LIMITS), where a
    psionicist of level 9 knows 5."""
    attacks = ["mind-thrust", "ego-whip", "psychic-crush", "id-insinuation"]
    talent = psionicist("w", kind="wild-talent", level=9, defenses=["thought-shield"])
    assert len(SYSTEM.combatant({**talent, "attacks": attacks[:3]})["attacks"]) == 3
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant({**talent, "attacks": attacks})
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/attacks", "a level-9 wild-talent knows at most 3 attack mode(s), not 4 "
                     "(H-2E-MODE-LIMITS)")]
    assert SYSTEM.combatant(psionicist("p", level=9, attacks=attacks))["level"] == 9


def test_a_refusal_by_the_mode_limits_names_attack_or_defense_modes_and_the_count() -> None:
    """H-2E-MODE-LIMITS: each list over the level's limit is told what kind of mode it
    holds too many of, the limit and how many it gives."""
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(psionicist("p", level=2, defenses=["thought-shield", "mind-blank"]))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/attacks", "a level-2 psionicist knows at most 1 attack mode(s), not 3 "
                     "(H-2E-MODE-LIMITS)"),
        ("/defenses", "a level-2 psionicist knows at most 1 defense mode(s), not 2 "
                      "(H-2E-MODE-LIMITS)")]


@pytest.mark.parametrize(("level", "known"), [
    (1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (6, 3), (7, 4), (8, 4)])
def test_a_psionicist_knows_the_modes_of_its_level_s_band_and_no_more(
        level: int, known: int) -> None:
    """RULES.md §1.1: psionicists know 1/1 at levels 1–2, 2/2 at 3–4, 3/3 at 5–6, 4/4 at
    7–8 (H-2E-MODE-LIMITS): as many attacks and defenses as that are taken, one more of
    each is refused, at both ends of each band."""
    attacks = ["mind-thrust", "ego-whip", "psychic-crush", "id-insinuation", "psionic-blast"]
    defenses = ["thought-shield", "mental-barrier", "mind-blank", "intellect-fortress",
                "tower-of-iron-will"]
    taken = SYSTEM.combatant(psionicist("p", level=level, attacks=attacks[:known],
                                        defenses=defenses[:known]))
    assert len(taken["attacks"]) == len(taken["defenses"]) == known
    with pytest.raises(InvalidCombatant) as err:
        SYSTEM.combatant(psionicist("p", level=level, attacks=attacks[:known + 1],
                                    defenses=defenses[:known + 1]))
    assert {p.path for p in err.value.problems} == {"/attacks", "/defenses"}


# -- §1.4 checks ---------------------------------------------------------------------------
@pytest.mark.parametrize("attacker,declared,rule", [
    ({"id": "guard"}, {"mode": "mind-thrust"}, "nonpsionic-cannot-attack"),
    (psionicist("a"), {"mode": "psionic-blast"}, "attack-not-known"),
    (psionicist("a"), {"mode": "mind-thrust", "multiplier": 6}, "multiplier-above-level"),
    (psionicist("a", psp=15), {"mode": "psychic-crush", "multiplier": 2}, "not-enough-psp"),
    (psionicist("a"), {"mode": "psychic-crush", "range": "medium"}, "range-beyond-mode"),
    (psionicist("a", conditions=["dazed"]), {"mode": "mind-thrust"}, "attacker-cannot-act"),
])
def test_rules_refuse_the_attack(attacker: JSON, declared: JSON, rule: str) -> None:
    with pytest.raises(RulesViolation) as err:
        resolve(attacker, psionicist("d"), declared, attack=[10])
    assert err.value.rule == rule


def test_an_exchange_takes_a_multiplier_of_100_from_a_level_100_attacker() -> None:
    """API.md: an attack's ``multiplier`` is 1 to 100 in ``exchange.resolve``, and §1.4
    lets it reach the attacker's level: 100 steps from a level-100 mind are rolled (a
    natural 1 misses, so no damage die is needed)."""
    master = psionicist("a", level=100, psp_max=10_000, attacks=["mind-thrust"],
                        defenses=["thought-shield"])
    result = resolve(master, psionicist("d"), {"mode": "mind-thrust", "multiplier": 100},
                     attack=[1])
    assert result["multiplier"] == 100 and not result["hit"]


@pytest.mark.parametrize(("attacker", "declared", "defense", "detail"), [
    (psionicist("a"), {"mode": "mind-thrust", "multiplier": 6}, None,
     "multiplier 6 is above a's level 5"),
    (psionicist("a", psp=15), {"mode": "psychic-crush", "multiplier": 2}, None,
     "a declares 16 PSPs of psychic-crush but holds 15"),
    (psionicist("a", conditions=["stunned", "dazed"]), {"mode": "mind-thrust"}, None,
     "a is stunned, dazed"),
    (psionicist("a"), {"mode": "mind-thrust"}, {"mode": "mental-barrier"},
     "d needs 5 PSPs for mental-barrier but holds 4"),
])
def test_a_refusal_says_the_figures_that_break_the_rule(
        attacker: JSON, declared: JSON, defense: JSON | None, detail: str) -> None:
    """RULES.md §1.4 steps 1–2: a refused attack or defense says why in its own figures:
    the multiplier against the level, the PSPs declared or needed against those held,
    every condition that stops the attacker."""
    with pytest.raises(RulesViolation) as err:
        resolve(attacker, psionicist("d", psp=4), declared, defense, attack=[10])
    assert err.value.detail == detail


def test_a_refusal_for_range_names_the_bands_a_gm_table_gives_and_the_farthest() -> None:
    """RULES.md §1.2: a mode reaches only the range bands its table row gives; beyond
    them the refusal names those bands and the farthest reach in yards."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    del raw["attacks"]["mind-thrust"]["ranges"]["long"]
    request = {"attacker": psionicist("a"), "defender": psionicist("d"),
               "attack": {"mode": "mind-thrust", "range": "long"}}
    with pytest.raises(RulesViolation) as err:
        Revised2e(raw).resolve(request, SuppliedDice({"attack": [10]}))
    assert (err.value.rule, err.value.detail) == (
        "range-beyond-mode", "mind-thrust reaches only short, medium range (60 yards)")


def test_a_declaration_breaking_two_rules_is_refused_for_the_one_checked_first(
        ) -> None:
    """RULES.md §1.4 step 2: a combatant that cannot act declares nothing, so that is the
    refusal, before an unknown mode or a multiplier above its level; a declaration the
    rules forbid outright is refused for it before the PSPs are counted; a defender that
    cannot act is told so before what the defense costs."""
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a", conditions=["dazed"]), psionicist("d"),
                {"mode": "psionic-blast"}, attack=[10])
    assert err.value.rule == "attacker-cannot-act"
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a", psp=10), psionicist("d"),
                {"mode": "mind-thrust", "multiplier": 6}, attack=[10])
    assert err.value.rule == "multiplier-above-level"
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), psionicist("d", psp=4, conditions=["dazed"]),
                {"mode": "mind-thrust"}, {"mode": "mental-barrier"}, attack=[10])
    assert err.value.rule == "defender-cannot-act"


def test_a_stunned_attacker_attacks_only_when_house_rule_h_2e_stun_is_off() -> None:
    stunned = psionicist("a", conditions=["stunned"])
    with pytest.raises(RulesViolation) as err:
        resolve(stunned, psionicist("d"), {"mode": "mind-thrust"}, attack=[10])
    assert err.value.rule == "attacker-cannot-act" and "stunned" in err.value.detail
    result = resolve(stunned, psionicist("d"), {"mode": "mind-thrust"},
                     options={"H-2E-STUN": False}, attack=[17], damage=[2])
    assert result["hit"] is True
    # dazed still stops it, and is the one condition named: the stun is not counted
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a", conditions=["stunned", "dazed"]), psionicist("d"),
                {"mode": "mind-thrust"}, options={"H-2E-STUN": False}, attack=[10])
    assert (err.value.rule, err.value.detail) == ("attacker-cannot-act", "a is dazed")


def test_rules_refuse_an_attack_on_the_attacker_s_own_mind() -> None:
    """RULES.md §1.4: an attack is on another combatant's mind; a combatant cannot be
    its own target."""
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), psionicist("a"), {"mode": "mind-thrust"}, attack=[10])
    assert (err.value.rule, err.value.detail) == ("target-is-attacker",
                                                  "a cannot attack its own mind")


def test_rules_refuse_a_defense_raised_by_a_defender_who_cannot_act() -> None:
    """RULES.md §1.4 step 1: defenses are raised at the start of the round, an action a
    dazed defender cannot take; one already paid for this round still protects."""
    dazed = psionicist("d", conditions=["dazed"])
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), dazed, {"mode": "mind-thrust"}, {"mode": "mind-blank"},
                attack=[10])
    assert (err.value.rule, err.value.detail) == ("defender-cannot-act",
                                                  "d cannot raise a defense now")
    result = resolve(psionicist("a"), dazed, {"mode": "mind-thrust"},
                     {"mode": "mind-blank", "paid": True}, attack=[1])
    assert result["hit"] is False and result["defender"]["after"]["psp"] == 50


@pytest.mark.parametrize("stun_stops_attacks", [True, False])
def test_rules_refuse_a_defense_raised_by_a_stunned_defender_whatever_h_2e_stun_says(
        stun_stops_attacks: bool) -> None:
    """RULES.md §1.4 step 1: raising a defense is an action a stunned mind cannot take.
    H-2E-STUN speaks only of its attacks (off, they still happen), so either way the
    defense is refused, as an encounter's ``declare`` refuses it."""
    stunned = psionicist("d", conditions=["stunned"])
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), stunned, {"mode": "mind-thrust"}, {"mode": "mind-blank"},
                {"H-2E-STUN": stun_stops_attacks}, attack=[10])
    assert err.value.rule == "defender-cannot-act"


def test_rules_refuse_a_defense_it_cannot_pay_or_does_not_know() -> None:
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), psionicist("d", psp=4), {"mode": "mind-thrust"},
                {"mode": "mental-barrier"}, attack=[10])
    assert err.value.rule == "not-enough-psp-for-defense"
    result = resolve(psionicist("a"), psionicist("d", psp=4), {"mode": "mind-thrust"},
                     {"mode": "mental-barrier", "paid": True}, attack=[1])
    assert result["defender"]["after"]["psp"] == 4  # paid earlier this round
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust"},
                {"mode": "tower-of-iron-will"}, attack=[10])
    assert err.value.rule == "defense-not-known"
    with pytest.raises(RulesViolation) as err:
        resolve(psionicist("a"), {"id": "g"}, {"mode": "mind-thrust"},
                {"mode": "mind-blank"}, attack=[10])
    assert err.value.rule == "nonpsionic-cannot-defend"


def test_unknown_mode_is_invalid_input_at_its_path() -> None:
    with pytest.raises(InvalidInput) as err:
        resolve(psionicist("a"), psionicist("d"), {"mode": "mind-blast"}, attack=[10])
    assert [p.path for p in err.value.problems] == ["/attack/mode"]


def test_range_improves_mac_by_2_at_medium_and_5_at_long() -> None:
    # MTHAC0 16, MAC 10: needed 6 at short, 8 at medium, 11 at long
    a, d = psionicist("a"), psionicist("d", mac=10)
    needed = [resolve(a, d, {"mode": "mind-thrust", "range": r}, attack=[1])["needed"]
              for r in ("short", "medium", "long")]
    assert needed == [6, 8, 11]


def test_the_record_gives_the_range_the_attack_was_declared_at() -> None:
    """RULES.md §1.4 step 3: the range band declared sets the effective MAC, and the
    record says which band it was."""
    result = resolve(psionicist("a"), psionicist("d", mac=10),
                     {"mode": "mind-thrust", "range": "long"}, attack=[1])
    assert (result["range"], result["needed"]) == ("long", 11)


def test_two_combatants_of_one_name_with_their_own_ids_may_attack_each_other() -> None:
    """RULES.md §1.4: only an attack on the attacker's own mind is refused; that is the
    one id, not a name two creatures share (two templars, two of a monster)."""
    result = resolve(psionicist("t1", name="Templar"), psionicist("t2", name="Templar"),
                     {"mode": "mind-thrust"}, attack=[1])
    assert result["hit"] is False and result["attacker"]["after"]["psp"] == 49


def test_int_bonus_lowers_the_needed_roll() -> None:
    # Int 20: bonus 3 (RULES.md §1.4 step 3)
    result = resolve(psionicist("a", int=20), psionicist("d", mac=5),
                     {"mode": "mind-thrust"}, attack=[1])
    assert result["needed"] == 16 - 3 - 5


def test_natural_1_always_misses_and_natural_20_always_hits() -> None:
    easy = resolve(psionicist("a"), psionicist("d", mac=10), {"mode": "mind-thrust"},
                   {"mode": "mind-blank"}, attack=[1])
    assert easy["roll"]["modified"] >= easy["needed"] and not easy["hit"]
    hard = resolve(psionicist("a", level=1, attacks=["id-insinuation"], defenses=[], int=3),
                   psionicist("d", mac=-10), {"mode": "id-insinuation"},
                   {"mode": "mind-blank"}, attack=[20], damage=[1], save=[20])
    assert hard["roll"]["modified"] < hard["needed"] and hard["hit"]


def test_a_modified_roll_equal_to_the_needed_roll_hits_and_a_natural_19_does_not_always_hit(
) -> None:
    """RULES.md §1.4 step 4: natural 20 always hits; otherwise hit when modified ≥ needed,
    so a roll equal to the needed number hits and a natural 19 short of it misses."""
    # MTHAC0 16 vs MAC 10: needed 6, no defense, modifier 0
    equal = resolve(psionicist("a"), psionicist("d", mac=10), {"mode": "mind-thrust"},
                    attack=[6], damage=[3])
    assert (equal["roll"]["modified"], equal["needed"], equal["hit"]) == (6, 6, True)
    # MAC −10: needed 26; mind thrust vs mind blank +5: 19 + 5 = 24
    short = resolve(psionicist("a"), psionicist("d", mac=-10), {"mode": "mind-thrust"},
                    {"mode": "mind-blank"}, attack=[19])
    assert (short["roll"]["modified"], short["needed"], short["hit"]) == (24, 26, False)


def test_critical_on_modified_roll_house_rule_h_2e_crit_mods() -> None:
    # MTHAC0 16 vs MAC −2: needed 18. Mind thrust vs mind blank +5: 18 + 5 = 23.
    a, d = psionicist("a"), psionicist("d", mac=-2)
    on = resolve(a, d, {"mode": "mind-thrust"}, {"mode": "mind-blank"}, attack=[18],
                 damage=[4], save=[20])
    off = resolve(a, d, {"mode": "mind-thrust"}, {"mode": "mind-blank"},
                  {"H-2E-CRIT-MODS": False}, attack=[18], damage=[4], save=[20])
    assert on["critical"] and not off["critical"] and off["hit"]


def test_a_miss_is_no_critical_however_high_the_natural_roll() -> None:
    """RULES.md §1.4: a critical mental hit is a hit first. With a GM's table whose
    modifier is −6 and H-2E-CRIT-MODS off, a natural 18 beats the needed 13 by 5 while
    the modified 12 misses: no critical, no save, the mind stays closed."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["attack_vs_defense"]["mind-thrust"]["mind-blank"] = -6
    request = {"attacker": psionicist("a"), "defender": psionicist("d", mac=3),
               "attack": {"mode": "mind-thrust"}, "defense": {"mode": "mind-blank"},
               "options": {"H-2E-CRIT-MODS": False}}
    result = Revised2e(raw).resolve(request, SuppliedDice({"attack": [18]})).to_json()
    assert (result["roll"]["natural"], result["roll"]["modified"], result["needed"]) == (
        18, 12, 13)
    assert not result["hit"] and not result["critical"]
    assert "critical-hit" not in [e["type"] for e in result["events"]]
    assert result["defender"]["after"]["mind"]["state"] == "closed"
    # (47: the mind blank it raised, 3)
    assert result["defender"]["after"]["psp"] == 47 and result["outcome"] == "miss"


def test_a_critical_needs_one_of_the_naturals_a_gm_table_gives() -> None:
    """RULES.md §1.4 step 6: the naturals that can be critical come from the table; with
    a GM's table of 19 and 20 only, a natural 18 beating the needed number by 12 is a
    plain hit."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["critical"]["naturals"] = [19, 20]
    request = {"attacker": psionicist("a"), "defender": psionicist("d", mac=10),
               "attack": {"mode": "mind-thrust"}}
    result = Revised2e(raw).resolve(request, SuppliedDice({"attack": [18], "damage": [1]}))
    assert result.to_json()["hit"] and not result.to_json()["critical"]


def test_the_save_against_a_critical_hit_is_the_defender_s_roll() -> None:
    """RULES.md §1.4 step 6: on a critical hit that does not open the mind outright the
    target saves vs. paralyzation, so the ``save`` die is rolled by the defender."""
    # needed 18; mind thrust vs mind blank +5: natural 18 makes 23, critical; 4 < 25% of 50
    result = resolve(psionicist("a"), psionicist("d", mac=-2), {"mode": "mind-thrust"},
                     {"mode": "mind-blank"}, attack=[18], damage=[4], save=[20])
    assert [(r["purpose"], r["by"]) for r in result["rolls"]] == [
        ("attack", "a"), ("damage", "a"), ("save", "d")]
    assert result["save"] == {"target": 12, "roll": 20, "success": True}


def test_a_critical_hit_is_told_as_an_event_of_its_target() -> None:
    """RULES.md §1.4 step 6 and §4 (every event listed): a critical mental hit is an
    event of the mind it struck, naming the attacker, before the save it calls for."""
    result = resolve(psionicist("a"), psionicist("d", mac=-2), {"mode": "mind-thrust"},
                     {"mode": "mind-blank"}, attack=[18], damage=[4], save=[20])
    assert [e for e in result["events"] if e["type"] in ("critical-hit", "save")] == [
        {"type": "critical-hit", "combatant": "d", "by": "a"},
        {"type": "save", "combatant": "d", "target": 12, "roll": 20, "success": True}]


def test_a_miss_records_the_psps_declared_and_the_half_paid() -> None:
    """RULES.md §1.4 steps 2 and 5: 4 steps of mind thrust declare 8 PSPs; a miss pays
    half of them, 4, and the record keeps both figures."""
    result = resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust",
                                                        "multiplier": 4}, attack=[2])
    assert not result["hit"]
    assert (result["declared_psp"], result["psp_spent"]) == (8, 4)
    assert result["attacker"]["after"]["psp"] == 50 - 4


def test_nonpsionic_mind_opens_on_any_hit_without_damage_dice() -> None:
    # Seed: "When attacking a nonpsionic mind ... one successful attack opens the mind."
    result = resolve(psionicist("a"), {"id": "guard"}, {"mode": "ego-whip", "multiplier": 2},
                     attack=[11])
    assert result["hit"] and result["mind_opened"] and result["opened_by"] == "attack"
    assert result["damage"] == 0 and [r["purpose"] for r in result["rolls"]] == ["attack"]
    assert result["defender"]["after"]["conditions"] == ["stunned", "initiative-penalty"]


def test_psionic_mind_opens_when_its_psps_reach_0() -> None:
    # Seed: "that mind remains closed until it is reduced to 0 PSPs"
    result = resolve(psionicist("a"), psionicist("d", psp=3), {"mode": "mind-thrust"},
                     attack=[15], damage=[4])
    assert result["damage"] == 4 and result["psp_lost"] == 3
    assert result["defender"]["after"]["psp"] == 0
    assert result["mind_opened"] and result["opened_by"] == "zero-psp"


def test_the_damage_event_gives_the_psps_lost_no_more_than_the_target_held() -> None:
    """RULES.md §1.4 step 5: the target loses the damage in PSPs, not below 0: 4 points
    on a mind holding 3 lose it 3, and the event says both."""
    result = resolve(psionicist("a"), psionicist("d", psp=3), {"mode": "mind-thrust"},
                     attack=[15], damage=[4])
    assert [e for e in result["events"] if e["type"] == "damage"] == [
        {"type": "damage", "combatant": "d", "amount": 4, "psp_lost": 3}]


def test_attacker_spending_its_last_psps_opens_its_own_mind() -> None:
    # Errata: "A mind with 0 PSPs is open"
    result = resolve(psionicist("a", psp=4), psionicist("d"),
                     {"mode": "mind-thrust", "multiplier": 2}, attack=[15], damage=[1, 1])
    after = result["attacker"]["after"]
    assert after["psp"] == 0 and after["mind"]["state"] == "open"
    assert after["mind"]["opened_by"] == "zero-psp" and "stunned" not in after["conditions"]


def test_a_mind_opened_by_its_own_last_psps_is_told_as_not_forced() -> None:
    """RULES.md §1.5: only a mind forced open by an attack is stunned; one its own
    payment opens (errata: "a mind with 0 PSPs is open") is told as opened, not forced."""
    result = resolve(psionicist("a", psp=4), psionicist("d"),
                     {"mode": "mind-thrust", "multiplier": 2}, attack=[15], damage=[1, 1])
    assert [e for e in result["events"] if e["type"] == "mind-opened"] == [
        {"type": "mind-opened", "combatant": "a", "by": "zero-psp", "forced": False}]


@pytest.mark.parametrize("mode,dice,effect,field", [
    ("ego-whip", {"damage": [2], "effect-duration": [3]}, {"type": "dazed", "rounds": 3},
     "conditions"),
    ("psychic-crush", {"damage": [2, 3], "hp-damage": [4, 5]},
     {"type": "hp-damage", "amount": 9}, "hp"),
    ("mind-thrust", {"damage": [2], "lost-power": [6]}, {"type": "lost-power", "days": 6},
     "lost_powers"),
])
def test_attack_on_open_mind_is_at_plus_2_with_its_effect(mode: str, dice: JSON,
                                                         effect: JSON, field: str) -> None:
    # RULES.md §1.5: "An attack on an open mind is still rolled, at +2, and has these effects"
    open_mind = psionicist("d", hp=30, mind={"state": "open", "opened_by": "critical"})
    m = len(dice["damage"])
    result = resolve(psionicist("a"), open_mind, {"mode": mode, "multiplier": m},
                     attack=[12], **dice)
    assert result["roll"]["modifier"] == 2 and result["effect"] == effect
    after = result["defender"]["after"]
    assert {"conditions": "dazed" in after["conditions"], "hp": after["hp"] == 21,
            "lost_powers": after["lost_powers"] == [{"days": 6}]}[field]
    assert after["mind"]["used_power"] is True and not result["mind_opened"]


def test_an_ego_whip_of_several_steps_on_an_open_mind_dazes_for_one_d4() -> None:
    """RULES.md §1.5: ego whip on an open mind dazes 1d4 rounds, one die whatever the
    multiplier (only psionic blast and psychic crush count their dice per PSPs)."""
    open_mind = psionicist("d", mind={"state": "open", "opened_by": "critical"})
    result = resolve(psionicist("a"), open_mind, {"mode": "ego-whip", "multiplier": 3},
                     attack=[12], damage=[1, 2, 3], **{"effect-duration": [4]})
    assert result["effect"] == {"type": "dazed", "rounds": 4}
    assert [r["purpose"] for r in result["rolls"]].count("effect-duration") == 1
    assert result["defender"]["after"]["condition_rounds"]["dazed"] == 4


def test_id_insinuation_on_an_open_mind_confuses_for_1d4_rounds() -> None:
    """RULES.md §1.5: id insinuation on an open mind confuses it 1d4 rounds, counted from
    the next round; no hit points are lost."""
    open_mind = psionicist("d", hp=30, attacks=["id-insinuation"], mind={
        "state": "open", "opened_by": "critical"})
    attacker = psionicist("a", attacks=["id-insinuation"])
    result = resolve(attacker, open_mind, {"mode": "id-insinuation"}, attack=[12],
                     damage=[1], **{"effect-duration": [3]})
    assert result["effect"] == {"type": "confused", "rounds": 3}
    after = result["defender"]["after"]
    assert after["conditions"] == ["confused"] and after["condition_rounds"] == {"confused": 3}
    assert after["hp"] == 30


def test_a_gm_table_s_daze_by_steps_lasts_the_sum_of_its_dice() -> None:
    """RULES.md §1.5 with a GM's table that counts ego whip's daze per step: 3 steps roll
    3d4 rounds, added up."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["open_mind"]["effects"]["ego-whip"]["per_step"] = True
    request = {"attacker": psionicist("a"),
               "defender": psionicist("d", mind={"state": "open", "opened_by": "critical"}),
               "attack": {"mode": "ego-whip", "multiplier": 3}}
    dice = SuppliedDice({"attack": [12], "damage": [1, 1, 1], "effect-duration": [1, 4, 2]})
    result = Revised2e(raw).resolve(request, dice).to_json()
    assert result["effect"] == {"type": "dazed", "rounds": 7}


@pytest.mark.parametrize(("mode", "dice", "event"), [
    ("ego-whip", {"damage": [1], "effect-duration": [3]}, ("dazed", {"rounds": 3})),
    ("id-insinuation", {"damage": [1], "effect-duration": [3]},
     ("confused", {"rounds": 3})),
    ("mind-thrust", {"damage": [1], "lost-power": [6]}, ("lost-power", {"days": 6})),
    ("psychic-crush", {"damage": [1, 1], "hp-damage": [4, 5]},
     ("hp-damage", {"amount": 9})),
])
def test_each_open_mind_effect_is_an_event_that_says_what_it_did(
        mode: str, dice: JSON, event: tuple[str, JSON]) -> None:
    """RULES.md §1.5 and §4 (every event listed): a hit on an open mind is told as its
    effect, with the rounds, days or hit points the dice gave."""
    modes = ["ego-whip", "id-insinuation", "mind-thrust", "psychic-crush"]
    target = psionicist("d", hp=30, mind={"state": "open", "opened_by": "critical"})
    result = resolve(psionicist("a", level=7, attacks=modes), target,
                     {"mode": mode, "multiplier": len(dice["damage"])}, attack=[12], **dice)
    assert [(e["type"], {k: v for k, v in e.items() if k not in ("type", "combatant")})
            for e in result["events"] if e["combatant"] == "d"
            and e["type"] != "damage"] == [event]


def test_the_dice_of_a_hit_on_an_open_mind_are_the_attacker_s() -> None:
    """RULES.md §1.5: the effect of a hit on an open mind is the attacking power's, so
    its dice (here psychic crush's 1d6 hit points per 8 PSPs) are recorded as the
    attacker's, like the attack and damage dice."""
    target = psionicist("d", hp=30, mind={"state": "open", "opened_by": "critical"})
    result = resolve(psionicist("a"), target, {"mode": "psychic-crush"}, attack=[12],
                     damage=[1], **{"hp-damage": [4]})
    assert [(r["purpose"], r["by"]) for r in result["rolls"]] == [
        ("attack", "a"), ("damage", "a"), ("hp-damage", "a")]


def test_attack_leaves_the_combatants_it_is_given_as_they_were() -> None:
    """``exchange.attack`` returns new combatants and never changes its inputs, plain
    ones included (an encounter's state), even where it changes the mind, conditions
    and PSPs of the target."""
    attacker = SYSTEM.combatant(psionicist("a"))
    target = SYSTEM.combatant(psionicist("d", mind={"state": "open", "opened_by": "critical"}))
    kept = copy.deepcopy((attacker, target))
    outcome = attack(SYSTEM.tables, SYSTEM.options(None), attacker, target,
                     {"mode": "ego-whip"}, None,
                     SuppliedDice({"attack": [12], "damage": [3], "effect-duration": [2]}))
    assert outcome.defender["conditions"] == ["dazed"]
    assert outcome.defender["mind"]["used_power"] is True
    assert (attacker, target) == kept


def test_a_hit_on_an_open_mind_by_a_mode_without_an_effect_uses_no_power_on_it() -> None:
    """RULES.md §1.5: a nonpsionic mind saves at −4 when a power was used on it
    successfully; a hit by a mode a GM's table gives no open-mind effect has none, so
    the mind's next save is at its own target."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    del raw["open_mind"]["effects"]["mind-thrust"]
    gm = Revised2e(raw)
    guard = {"id": "g", "mind": {"state": "open", "opened_by": "attack", "rounds_open": 1}}
    request = {"attacker": psionicist("a"), "defender": guard,
               "attack": {"mode": "mind-thrust"}}
    result = gm.resolve(request, SuppliedDice({"attack": [12]})).to_json()
    assert result["hit"] and result["effect"] is None
    after = result["defender"]["after"]
    assert after["mind"]["used_power"] is False
    _, events = gm.end_of_round(after, SuppliedDice({"save": [16]}))
    assert events[0].data == {"target": 16, "roll": 16, "success": True}


def test_a_free_defense_raised_at_0_psps_pays_nothing_and_leaves_the_mind_closed() -> None:
    """Errata, "a mind with 0 PSPs is open": a mind opens when a payment leaves it at 0
    PSPs; raising a defense a GM's table makes free takes none, so a mind already at 0
    with its sheet saying closed is not opened by it."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["defenses"]["mind-blank"]["cost"] = 0
    request = {"attacker": psionicist("a"), "defender": psionicist("d", psp=0),
               "attack": {"mode": "mind-thrust"}, "defense": {"mode": "mind-blank"}}
    result = Revised2e(raw).resolve(request, SuppliedDice({"attack": [1]})).to_json()
    assert result["defender"]["after"]["mind"]["state"] == "closed"
    assert "mind-opened" not in [e["type"] for e in result["events"]]


def test_an_attacker_whose_mind_a_critical_hit_opened_keeps_its_cause_at_0_psps() -> None:
    """Errata (RULES.md §1.4): a mind with 0 PSPs is open. An attacker's mind already open
    is not opened again by spending its last PSPs: it keeps its cause and its lock."""
    mind = {"state": "open", "opened_by": "critical", "locked_rounds": 3, "rounds_open": 2}
    result = resolve(psionicist("a", psp=4, mind=mind), psionicist("d"),
                     {"mode": "mind-thrust", "multiplier": 2}, attack=[15], damage=[1, 1])
    after = result["attacker"]["after"]
    assert after["psp"] == 0
    assert (after["mind"]["opened_by"], after["mind"]["locked_rounds"],
            after["mind"]["rounds_open"]) == ("critical", 3, 2)
    assert "mind-opened" not in [e["type"] for e in result["events"]
                                 if e["combatant"] == "a"]


def test_the_summary_counts_in_the_singular_and_tells_a_defense_that_opened_the_mind(
        ) -> None:
    # Two PSPs left: raising thought shield (2) takes them and opens the mind first.
    weak = psionicist("d", name="Fenka", psp=2, attacks=[], defenses=["thought-shield"])
    result = resolve(psionicist("a", name="Ulcen"), weak, {"mode": "ego-whip"},
                     {"mode": "thought-shield"}, attack=[15], damage=[2],
                     **{"effect-duration": [1]})
    assert result["target_was_open"] and result["effect"] == {"type": "dazed", "rounds": 1}
    assert result["summary"].startswith(
        "Raising the thought shield (2 PSPs) takes Fenka's last PSPs and opens Fenka's "
        "mind. ")
    assert "is dazed for 1 round." in result["summary"]


def test_the_summary_does_not_say_a_defense_opened_a_mind_already_open() -> None:
    """Errata, "a mind with 0 PSPs is open": only a payment that empties the pool opens
    the mind; one a critical hit opened earlier, with PSPs to spare, just raises it."""
    fenka = psionicist("d", name="Fenka", mind={"state": "open", "opened_by": "critical"})
    result = resolve(psionicist("a", name="Ulcen"), fenka, {"mode": "mind-thrust"},
                     {"mode": "mental-barrier"}, attack=[12], damage=[2],
                     **{"lost-power": [1]})
    assert result["target_was_open"]
    assert result["summary"].startswith("Fenka raises the mental barrier (5 PSPs). ")


def test_the_summary_says_what_the_defense_costs_so_the_psps_add_up() -> None:
    """RULES.md §1.4 step 1: the defender pays for its defense unless it paid this round
    already (``paid``). Fenka's 50 less the barrier's 5 and the 16 she loses is 29; the
    summary says both, and says no cost for a defense paid before."""
    fenka = psionicist("d", name="Fenka")
    attack = {"mode": "mind-thrust", "multiplier": 4}
    dice = {"attack": [12], "damage": [4, 4, 4, 4]}
    result = resolve(psionicist("a", name="Ulcen"), fenka, attack, {"mode": "mental-barrier"},
                     **dice)
    assert result["defender"]["after"]["psp"] == 50 - 5 - 16 and result["defense_psp"] == 5
    assert result["summary"] == (
        "Fenka raises the mental barrier (5 PSPs). Ulcen's mind thrust ×4 strikes Fenka "
        "through the mental barrier (needed 6, rolled 12 − 2 = 10). Fenka loses 16 PSPs. "
        "Ulcen pays 8 PSPs.")
    paid = resolve(psionicist("a", name="Ulcen"), fenka, attack,
                   {"mode": "mental-barrier", "paid": True}, **dice)
    assert paid["defender"]["after"]["psp"] == 50 - 16 and paid["defense_psp"] == 0
    assert paid["summary"].startswith("Ulcen's mind thrust ×4 strikes Fenka through")


@pytest.mark.parametrize(("hp", "said"), [
    (4, "Fenka is down (−2 hit points)."), (6, "Fenka is down (0 hit points)."),
    (7, None), (-1, None)])
def test_the_summary_says_when_hit_point_damage_takes_the_target_down(
        hp: int, said: str | None) -> None:
    """Dark Sun revised (RULES.md §1.5): psychic crush on an open mind costs 1d6 hit
    points a step; at 0 or fewer the target is down (the ``down`` event), and the summary
    says so once, when the blow takes it there (not for one down already)."""
    fenka = psionicist("d", name="Fenka", hp=hp, mind={"state": "open",
                                                        "opened_by": "critical"})
    result = resolve(psionicist("a", name="Ulcen"), fenka, {"mode": "psychic-crush"},
                     attack=[12], damage=[2], **{"hp-damage": [6]})
    assert result["defender"]["after"]["hp"] == hp - 6
    down = [e for e in result["events"] if e["type"] == "down"]
    assert result["summary"] == (
        "Ulcen's psychic crush strikes Fenka (needed 6, rolled 12 + 2 = 14). Fenka loses 5 "
        "PSPs. Fenka's open mind takes 6 hit points of damage. "
        + (f"{said} " if said else "") + "Ulcen pays 8 PSPs.")
    assert len(down) == (1 if said else 0)


def test_the_summary_shows_an_unmodified_roll_alone_and_names_a_range_and_a_natural_1(
        ) -> None:
    """RULES.md §1.4: a roll nothing modifies is shown as rolled; a range other than
    short is named (any range improves the MAC), and a natural 1, which always misses,
    says so."""
    ulcen = psionicist("a", name="Ulcen")
    hit = resolve(ulcen, psionicist("d", name="Fenka", mac=10), {"mode": "mind-thrust"},
                  attack=[12], damage=[2])
    assert hit["summary"] == ("Ulcen's mind thrust strikes Fenka (needed 6, rolled 12). "
                              "Fenka loses 2 PSPs. Ulcen pays 2 PSPs.")
    miss = resolve(ulcen, psionicist("d", name="Fenka"),
                   {"mode": "mind-thrust", "range": "medium"}, attack=[1])
    assert miss["summary"] == ("Ulcen's mind thrust at medium range misses Fenka (needed 8, "
                               "rolled 1) — a natural 1. Ulcen pays 1 PSP.")


@pytest.mark.parametrize(("defender", "dice", "said"), [
    ({"id": "g", "name": "Fenka"}, {"attack": [12]},
     "Fenka's mind is forced open (one successful attack opens a nonpsionic mind)"),
    (psionicist("d", name="Fenka", psp=2), {"attack": [12], "damage": [3]},
     "Fenka loses 2 PSPs (of 3 damage). Fenka's mind is forced open (no PSPs left)"),
    (psionicist("d", name="Fenka"), {"attack": [20], "damage": [1], "save": [20]},
     "Fenka saves and keeps the mind closed (save vs. paralyzation 12, rolled 20)."),
    (psionicist("d", name="Fenka"), {"attack": [20], "damage": [1], "save": [2]},
     "Fenka fails the save (save vs. paralyzation 12, rolled 2). Fenka's mind is forced "
     "open (critical mental hit) and Fenka is stunned."),
])
def test_the_summary_says_whether_the_save_was_made_and_why_the_mind_opened(
        defender: JSON, dice: dict[str, list[int]], said: str) -> None:
    """RULES.md §1.4: one successful attack opens a nonpsionic mind, a psionic one opens
    at 0 PSPs or by a critical hit whose save vs. paralyzation fails."""
    result = resolve(psionicist("a", name="Ulcen"), defender, {"mode": "mind-thrust"}, **dice)
    assert said in result["summary"]
    assert result["mind_opened"] == ("forced open" in said)


def test_the_summary_says_when_the_attacker_s_last_psps_open_its_own_mind() -> None:
    """Errata (seed 004): "A mind with 0 PSPs is open": the attacker's too."""
    attack = {"mode": "mind-thrust", "multiplier": 2}
    result = resolve(psionicist("a", name="Ulcen", psp=4), psionicist("d", name="Fenka"),
                     attack, attack=[15], damage=[1, 1])
    assert result["attacker"]["after"]["mind"]["state"] == "open"
    assert result["summary"].endswith("Fenka loses 2 PSPs. Ulcen pays 4 PSPs. That was "
                                      "Ulcen's last PSPs: Ulcen's mind is open.")
    rich = resolve(psionicist("a", name="Ulcen"), psionicist("d", name="Fenka"), attack,
                   attack=[15], damage=[1, 1])
    assert rich["summary"].endswith("Fenka loses 2 PSPs. Ulcen pays 4 PSPs.")


def test_the_summary_tells_no_last_psps_of_an_attacker_whose_mind_was_already_open(
        ) -> None:
    """Errata (seed 004): "A mind with 0 PSPs is open": a mind a critical hit opened
    before the attack, with PSPs left after paying, was not opened by paying."""
    opened = psionicist("a", name="Ulcen", psp=20,
                        mind={"state": "open", "opened_by": "critical"})
    result = resolve(opened, psionicist("d", name="Fenka"),
                     {"mode": "mind-thrust", "multiplier": 2}, attack=[15], damage=[1, 1])
    assert result["attacker"]["after"]["psp"] == 16
    assert result["summary"].endswith("Fenka loses 2 PSPs. Ulcen pays 4 PSPs.")
    assert "last PSPs" not in result["summary"]


def test_quick_mac_is_rolled_for_the_exchange_and_kept() -> None:
    beast = {"id": "beast", "quick_mac": {"intelligence": 3, "psionic": "low"}}
    assert SYSTEM.combatant(beast)["mac"] is None
    result = resolve(psionicist("a"), beast, {"mode": "mind-thrust"},
                     **{"mac-base": [1], "mac-modifier": [10], "attack": [5]})
    # Semi- (2–4): 7–8, d2 of 1 → 7; low-psionic 10 → −3
    assert result["defender"]["after"]["mac"] == 4 and result["needed"] == 16 - 4
    assert [r["purpose"] for r in result["rolls"]] == ["mac-base", "mac-modifier", "attack"]


def test_a_quick_mac_monster_s_int_is_its_intelligence_and_at_least_1() -> None:
    """RULES.md §1.6 Quick MACs: a monster given by its Intelligence has that Int; one
    of Intelligence 0 (non-intelligent) has Int 1, the least a sheet holds, so its
    sheet is taken again as it was given back."""
    assert SYSTEM.combatant({"id": "beast", "quick_mac": {
        "intelligence": 3, "psionic": "low"}})["int"] == 3
    ooze = SYSTEM.combatant({"id": "ooze", "quick_mac": {"intelligence": 0, "psionic": "low"}})
    assert ooze["int"] == 1
    assert SYSTEM.combatant(ooze) == ooze


def test_a_quick_mac_monster_s_wis_and_con_are_the_tables_default_not_its_int() -> None:
    """Only Int comes from a Quick MAC's Intelligence; Wis and Con not given are the
    tables' ``default_ability`` (10), as for any combatant."""
    beast = SYSTEM.combatant({"id": "beast", "quick_mac": {
        "intelligence": 3, "psionic": "low"}})
    assert (beast["int"], beast["wis"], beast["con"]) == (3, 10, 10)


def test_a_quick_mac_s_dice_are_the_defender_s() -> None:
    """RULES.md §1.6 Quick MACs: the monster's MAC is rolled for it, so its ``mac-base``
    and ``mac-modifier`` dice are recorded as the defender's, the d20 as the attacker's."""
    beast = {"id": "beast", "quick_mac": {"intelligence": 3, "psionic": "low"}}
    result = resolve(psionicist("a"), beast, {"mode": "mind-thrust"},
                     **{"mac-base": [1], "mac-modifier": [10], "attack": [5]})
    assert [(r["purpose"], r["by"]) for r in result["rolls"]] == [
        ("mac-base", "beast"), ("mac-modifier", "beast"), ("attack", "a")]


def test_a_quick_mac_once_rolled_is_not_rolled_again() -> None:
    """RULES.md §1.6 Quick MACs: a monster's MAC is rolled when first needed and kept for
    good; its sheet after the exchange, ``quick_mac`` still on it, attacks with that MAC."""
    beast = {"id": "beast", "quick_mac": {"intelligence": 3, "psionic": "low"}}
    first = resolve(psionicist("a"), beast, {"mode": "mind-thrust"},
                    **{"mac-base": [1], "mac-modifier": [10], "attack": [5]})
    again = resolve(psionicist("a"), first["defender"]["after"], {"mode": "mind-thrust"},
                    attack=[5])
    assert again["defender"]["after"]["mac"] == 4 and again["needed"] == 16 - 4
    assert [r["purpose"] for r in again["rolls"]] == ["attack"]


def test_a_quick_mac_rolled_to_0_is_kept_as_well() -> None:
    """RULES.md §1.6 Quick MACs: MAC 0 is a MAC like any other (10 to −10): Supra-
    Intelligence 4–5, rolled 4, high-psionic 10 (−4) gives 0, kept for good."""
    beast = {"id": "beast", "quick_mac": {"intelligence": 19, "psionic": "high"}}
    first = resolve(psionicist("a"), beast, {"mode": "mind-thrust"},
                    **{"mac-base": [1], "mac-modifier": [10], "attack": [5]})
    assert first["defender"]["after"]["mac"] == 0
    again = resolve(psionicist("a"), first["defender"]["after"], {"mode": "mind-thrust"},
                    attack=[5])
    assert again["defender"]["after"]["mac"] == 0 and again["needed"] == 16
    assert [r["purpose"] for r in again["rolls"]] == ["attack"]


def test_unused_supplied_dice_are_reported() -> None:
    result = resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust"},
                     attack=[2, 7], save=[3])
    assert result["unused_dice"] == {"attack": [7], "save": [3]}


# -- §1.5 the open mind over rounds ---------------------------------------------------------
def _opened_by_critical(c: dict[str, Any], **mind: Any) -> dict[str, Any]:
    """``c`` with a mind a critical hit opened last round, free to pay to close now."""
    return {**c, "mind": {**c["mind"], "state": "open", "opened_by": "critical",
                          "may_pay_to_close": True, "rounds_open": 1, **mind}}


def test_close_costs_twice_the_last_defense_else_the_cheapest_house_rule_h_2e_no_last_def(
        ) -> None:
    # §1.5: "closing costs 2 × the cost of the last defense it used (mental barrier 5 → 10)"
    c = SYSTEM.combatant(psionicist("p", psp=30))
    on, off = SYSTEM.options(None), SYSTEM.options({"H-2E-NO-LAST-DEF": False})
    last = price_closing(SYSTEM.tables, {**c, "mind": {**c["mind"],
                                                       "last_defense": "mental-barrier"}}, on)
    assert last == {"cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 30,
                    "payable": True, "reason": None}
    cheapest = price_closing(SYSTEM.tables, c, on)
    assert (cheapest["cost"], cheapest["defense"], cheapest["basis"]) == (
        2 * 2, "thought-shield", "cheapest")
    assert price_closing(SYSTEM.tables, c, off) | {"psp": 0} == {
        "cost": None, "defense": None, "basis": None, "psp": 0, "payable": False,
        "reason": "no-last-defense"}
    assert price_closing(SYSTEM.tables, {**c, "defenses": []}, on)["reason"] == "no-defense"


def test_paying_to_close_must_leave_a_psp_house_rule_h_2e_close_last_psp() -> None:
    base = SYSTEM.combatant(psionicist("p"))
    barrier = {**base["mind"], "last_defense": "mental-barrier"}
    on, off = SYSTEM.options(None), SYSTEM.options({"H-2E-CLOSE-LAST-PSP": False})
    offers = {psp: price_closing(SYSTEM.tables, {**base, "psp": psp, "mind": barrier}, on)
              for psp in (11, 10, 9)}
    assert [(o["payable"], o["reason"]) for o in offers.values()] == [
        (True, None), (False, "last-psp"), (False, "psp")]
    assert [price_closing(SYSTEM.tables, {**base, "psp": psp, "mind": barrier}, off)[
        "payable"] for psp in (11, 10, 9)] == [True, True, False]


def test_the_words_of_a_closing_offer_name_what_stops_it_the_psps_held_and_a_free_price(
        ) -> None:
    """§1.5: the offer to close by paying says what the mind holds when it cannot pay,
    the one condition that stops it acting, and a price a GM's free defense makes 0;
    with no reason given, a mind with no price knows no defense."""
    barrier = {"cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 9,
               "payable": False, "reason": "psp"}
    assert close_offer_line(SYSTEM.tables, "Kara", barrier, OUTSIDE_ENCOUNTERS) == (
        "Closing Kara's mind would cost 10 PSPs (twice the mental barrier, the last "
        "defense it used), more than the 9 PSPs it holds.")
    assert may_close_line("Kara", 10, barrier, IN_ENCOUNTERS) == (
        "Closing Kara's mind in the next round would cost 10 PSPs, more than the 9 PSPs "
        "it holds.")
    assert close_offer_line(SYSTEM.tables, "Kara", barrier, OUTSIDE_ENCOUNTERS,
                            ("stunned",)) == "Kara cannot close its mind (stunned)."
    free = {**barrier, "cost": 0, "basis": "cheapest", "payable": True, "reason": None}
    assert close_offer_line(SYSTEM.tables, "Kara", free, OUTSIDE_ENCOUNTERS) == (
        "Kara may pay 0 PSPs (twice the mental barrier, its cheapest defense) to close "
        "its mind.")
    assert may_close_line("Kara", 10, {**barrier, "psp": 10, "reason": "last-psp"},
                          IN_ENCOUNTERS) == (
        "Closing Kara's mind in the next round would cost 10 PSPs, its last PSPs: a mind "
        "with none is open, so it cannot pay (H-2E-CLOSE-LAST-PSP).")
    assert may_close_line("Kara", 0, free, IN_ENCOUNTERS) == (
        "Kara may pay 0 PSPs to close its mind in the next round.")
    assert unpriced_line("Kara", None) == unpriced_line("Kara", "no-defense") == (
        "Kara's mind cannot close by paying: it has no defense to price it.")


def test_only_a_mind_a_critical_hit_opened_last_round_is_offered_closing() -> None:
    c = SYSTEM.combatant(psionicist("p", psp=30))
    on = SYSTEM.options(None)
    assert close_offer(SYSTEM.tables, c, on) is None  # closed
    assert close_offer(SYSTEM.tables, _opened_by_critical(c), on) is not None
    assert close_offer(SYSTEM.tables, _opened_by_critical(c, may_pay_to_close=False),
                       on) is None  # the round it opened
    assert close_offer(SYSTEM.tables, _opened_by_critical(c, opened_by="zero-psp"),
                       on) is None
    assert may_close_by_paying(SYSTEM.tables, _opened_by_critical(c), on) == 4
    assert may_close_by_paying(SYSTEM.tables, _opened_by_critical({**c, "psp": 4}),
                               on) is None


def test_a_closed_mind_whose_sheet_keeps_a_critical_hit_s_offer_is_offered_no_closing(
        ) -> None:
    """RULES.md §1.5: paying to close is for an open mind; a closed one whose sheet still
    says a critical hit opened it and it may pay has nothing to close."""
    c = SYSTEM.combatant(psionicist("p", psp=30, mind={
        "state": "closed", "opened_by": "critical", "may_pay_to_close": True}))
    on = SYSTEM.options(None)
    assert close_offer(SYSTEM.tables, c, on) is None
    assert may_close_by_paying(SYSTEM.tables, c, on) is None


def test_a_mind_that_knows_no_defense_has_no_price_or_basis_for_closing() -> None:
    """RULES.md §1.5: with no last defense and none known, no defense prices closing."""
    c = SYSTEM.combatant(psionicist("p", psp=30, defenses=[]))
    assert price_closing(SYSTEM.tables, c, SYSTEM.options(None)) == {
        "cost": None, "defense": None, "basis": None, "psp": 30, "payable": False,
        "reason": "no-defense"}


def test_end_of_round_counts_conditions_down() -> None:
    c = SYSTEM.combatant(psionicist("p", conditions=["dazed", "stunned"],
                                    condition_rounds={"dazed": 2, "stunned": 0}))
    options = SYSTEM.options(None)
    c, events = end_of_round(SYSTEM.tables, c, SuppliedDice({}), options)
    assert c["conditions"] == ["dazed"] and c["condition_rounds"] == {"dazed": 1}
    assert [e.type for e in events] == ["condition-ended"]


def test_a_condition_given_again_keeps_the_longer_of_its_durations() -> None:
    """RULES.md §1.5: a dazed mind dazed again stays dazed as long as the longer of the
    two; a shorter new duration does not cut the old one."""
    c = editable(SYSTEM.combatant(psionicist("p")))
    add_condition(c, "dazed", 3)
    add_condition(c, "dazed", 1)
    assert c["conditions"] == ["dazed"] and c["condition_rounds"] == {"dazed": 3}
    add_condition(c, "dazed", 4)
    assert c["condition_rounds"] == {"dazed": 4}


def test_editable_gives_a_frozen_combatant_the_parts_the_rules_change_as_its_own() -> None:
    """``editable``: a frozen combatant (as an exchange holds its two sides) is copied
    with its mind, conditions, their rounds and its lost powers, so the rules can change
    each of them in the copy while the frozen one stays as it was."""
    raw = psionicist("p", conditions=["dazed"], condition_rounds={"dazed": 1},
                     lost_powers=[{"days": 2}])
    frozen = freeze(SYSTEM.combatant(raw))
    c = editable(frozen)
    add_condition(c, "dazed", 3)
    add_condition(c, "confused", 2)
    c["lost_powers"].append({"days": 1})
    c["mind"]["last_defense"] = "mind-blank"
    assert c["conditions"] == ["dazed", "confused"]
    assert c["condition_rounds"] == {"dazed": 3, "confused": 2}
    assert c["lost_powers"] == [{"days": 2}, {"days": 1}]
    assert frozen == SYSTEM.combatant(raw)


def test_a_closed_mind_keeps_its_last_defense() -> None:
    """RULES.md §1.5: closing costs 2 × the last defense the mind used, which closing the
    mind does not forget."""
    c = editable(SYSTEM.combatant(psionicist(
        "p", mind={"state": "open", "opened_by": "critical", "last_defense": "mind-blank"})))
    event = close_mind(c, "paid")
    assert c["mind"]["state"] == "closed" and c["mind"]["last_defense"] == "mind-blank"
    assert (event.type, event.data) == ("mind-closed", {"how": "paid"})


def test_an_open_nonpsionic_mind_saves_without_the_minus_4_when_no_power_was_used() -> None:
    """RULES.md §1.5: a nonpsionic mind saves vs. paralyzation each round from the next
    one, at −4 only if a power was used on it successfully."""
    guard = SYSTEM.combatant({"id": "g", "mind": {"state": "open", "opened_by": "attack",
                                                  "rounds_open": 1}})
    out, events = end_of_round(SYSTEM.tables, guard, SuppliedDice({"save": [16]}),
                               SYSTEM.options(None))
    assert (events[0].type, events[0].data) == (
        "mind-save", {"target": 16, "roll": 16, "success": True})
    assert out["mind"]["state"] == "closed"


def test_an_open_nonpsionic_mind_given_without_a_cause_saves_to_close() -> None:
    """RULES.md §1.5: a nonpsionic mind closes by a save vs. paralyzation each round (no
    Wisdom check), also when its sheet gives it open without saying what opened it."""
    guard = SYSTEM.combatant({"id": "g", "mind": {"state": "open", "rounds_open": 1}})
    out, events = end_of_round(SYSTEM.tables, guard, SuppliedDice({"save": [16]}),
                               SYSTEM.options(None))
    assert [e.type for e in events] == ["mind-save", "mind-closed"]
    assert out["mind"]["state"] == "closed"


def test_a_mind_that_closes_forgets_its_lock_and_the_power_used_on_it_and_says_how() -> None:
    """RULES.md §1.5: a closed mind has no power used on it and no lock; closing forgets
    both (a sheet may carry a lock on a nonpsionic mind), and the event says how it
    closed."""
    guard = SYSTEM.combatant({"id": "g", "mind": {
        "state": "open", "opened_by": "attack", "rounds_open": 2, "used_power": True,
        "locked_rounds": 2}})
    out, events = end_of_round(SYSTEM.tables, guard, SuppliedDice({"save": [20]}),
                               SYSTEM.options(None))
    assert out["mind"] == {"state": "closed", "opened_by": None, "locked_rounds": 0,
                           "last_defense": None, "used_power": False,
                           "may_pay_to_close": False, "rounds_open": 0}
    assert (events[1].type, events[1].data) == ("mind-closed", {"how": "save"})


def test_an_open_nonpsionic_mind_saves_on_the_save_die_of_a_gm_table() -> None:
    """RULES.md §1.5 and §1.7: the save vs. paralyzation that closes a nonpsionic mind is
    rolled on the table's save die (a GM's table may give a d12)."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["save_paralyzation"]["sides"] = 12
    gm = Revised2e(raw)
    guard = gm.combatant({"id": "g", "level": 1, "mind": {
        "state": "open", "opened_by": "attack", "rounds_open": 1}})
    dice = SuppliedDice({"save": [12]})
    gm.end_of_round(guard, dice)
    assert [(r.purpose, r.sides) for r in dice.rolls] == [("save", 12)]


def test_a_closed_mind_counts_no_rounds_open() -> None:
    """RULES.md §1.5: ``rounds_open`` counts the rounds of an open mind; a mind that is
    closed, or closes at this round's end, has none."""
    closed = SYSTEM.combatant(psionicist("p"))
    out, _ = end_of_round(SYSTEM.tables, closed, SuppliedDice({}), SYSTEM.options(None))
    assert out["mind"]["state"] == "closed" and out["mind"]["rounds_open"] == 0
    guard = SYSTEM.combatant({"id": "g", "mind": {"state": "open", "opened_by": "attack",
                                                  "rounds_open": 2}})
    out, _ = end_of_round(SYSTEM.tables, guard, SuppliedDice({"save": [20]}),
                          SYSTEM.options(None))
    assert out["mind"]["state"] == "closed" and out["mind"]["rounds_open"] == 0


def test_a_mind_opened_again_starts_its_own_opening_round_whatever_its_sheet_kept() -> None:
    """RULES.md §1.5: a mind reaching 0 PSPs is locked open 1d4+1 rounds from the end of
    the round it opened in. A closed mind whose sheet still holds a lock and rounds open
    from an earlier opening starts afresh: its new lock is rolled, not the old one
    counted down nor a Wisdom check rolled."""
    stale = psionicist("d", psp=1, mind={"state": "closed", "locked_rounds": 3,
                                         "rounds_open": 4})
    hit = resolve(psionicist("a"), stale, {"mode": "mind-thrust"}, attack=[15], damage=[2])
    opened = hit["defender"]["after"]
    assert (opened["mind"]["opened_by"], opened["mind"]["locked_rounds"],
            opened["mind"]["rounds_open"]) == ("zero-psp", 0, 0)
    dice = SuppliedDice({"open-duration": [1]})
    _, events = SYSTEM.end_of_round(opened, dice)
    assert ("mind-locked", {"rounds": 2}) in [(e.type, e.data) for e in events]


def test_a_nonpsionic_mind_opened_again_saves_without_a_power_used_when_last_open() -> None:
    """RULES.md §1.5: a nonpsionic mind saves at −4 only if a power was used on it
    successfully while open. A closed mind whose sheet still says so from an earlier
    opening, opened again by a plain hit, saves at its own target from the next round."""
    guard = {"id": "g", "mind": {"state": "closed", "used_power": True}}
    hit = resolve(psionicist("a"), guard, {"mode": "mind-thrust"}, attack=[15])
    assert hit["opened_by"] == "attack"
    opening, _ = SYSTEM.end_of_round(hit["defender"]["after"], SuppliedDice({}))
    _, events = SYSTEM.end_of_round(opening, SuppliedDice({"save": [16]}))
    assert (events[0].type, events[0].data) == (
        "mind-save", {"target": 16, "roll": 16, "success": True})


def test_the_open_mind_s_dice_at_a_round_s_end_are_its_own() -> None:
    """RULES.md §1.5: the 1d4+1 rounds of its lock and its Wisdom checks are the open
    mind's own dice, recorded as rolled by it."""
    locking = SYSTEM.combatant(psionicist("p", psp=0, mind={
        "state": "open", "opened_by": "zero-psp"}))
    checking = SYSTEM.combatant(psionicist("q", psp=0, mind={
        "state": "open", "opened_by": "zero-psp", "rounds_open": 3}))
    dice = SuppliedDice({"open-duration": [2], "wisdom-check": [15]})
    SYSTEM.end_of_round(locking, dice)
    SYSTEM.end_of_round(checking, dice)
    assert [(r.purpose, r.by) for r in dice.rolls] == [
        ("open-duration", "p"), ("wisdom-check", "q")]


# -- §1.8 recovery ---------------------------------------------------------------------------
def test_recovery_is_ceil_max_over_8_per_full_hour_never_above_max() -> None:
    c = SYSTEM.combatant(psionicist("p", psp_max=41, psp=10))
    assert SYSTEM.recover(c, 1)["psp"] == 10 + 6
    assert SYSTEM.recover(c, 3)["psp"] == 10 + 18
    assert SYSTEM.recover(c, 9)["psp"] == 41
    assert SYSTEM.recover(c, 0)["psp"] == 10
    with pytest.raises(InvalidInput):
        SYSTEM.recover(c, -1)


def test_a_rest_that_closes_the_mind_at_its_first_check_says_after_1_try() -> None:
    """§1.8: an open mind keeps checking during a rest; one check that closes it is
    told in the singular."""
    closed = {"mind": {"state": "closed"}}
    events = [Event("wisdom-check", "k", {"target": 10, "roll": 4, "success": True}),
              Event("mind-closed", "k")]
    assert rest_lines("Kara", {"mind": {"state": "open"}}, closed, events, 10) == [
        "Kara's mind closes during the rest (Wisdom check 10, rolled 4, after 1 try)."]


def test_a_rest_of_negative_hours_is_invalid_input_at_hours() -> None:
    c = SYSTEM.combatant(psionicist("p", psp=10))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.recover(c, -1)
    assert [p.path for p in err.value.problems] == ["/hours"]


# -- description, options and tables --------------------------------------------------------
def test_powers_that_return_in_one_rest_report_the_longest_loss() -> None:
    """RULES.md §1.5: mind thrust on an open mind loses a power for 1d6 days; a rest of
    3 days brings back those lost 3 days or fewer, the event telling the longest."""
    c = SYSTEM.combatant(psionicist("p", lost_powers=[{"days": 1}, {"days": 3}, {"days": 5}]))
    out, events = rest(SYSTEM.tables, c, 72, SuppliedDice({}), SYSTEM.options(None))
    assert out["lost_powers"] == [{"days": 2}]
    assert [(e.type, e.data) for e in events] == [("powers-return", {"count": 2, "days": 3})]


def test_describe_lists_modes_purposes_and_house_rules() -> None:
    d = SYSTEM.describe()
    json.dumps(d)
    assert d["id"] == "revised-2e"
    assert {a["id"]: a["cost"] for a in d["modes"]["attacks"]}["psionic-blast"] == 10
    assert {x["id"]: x["cost"] for x in d["modes"]["defenses"]}["tower-of-iron-will"] == 6
    ids = {h["id"] for h in d["house_rules"]}
    assert {"H-2E-CRIT-MODS", "H-2E-WT-MTHAC0", "H-2E-NO-LAST-DEF", "H-2E-QUICKMAC-PICK",
            "H-2E-SAVE-0"} <= ids
    assert all(h["text"] for h in d["house_rules"])
    purposes = {p["purpose"] for p in d["dice_purposes"]}
    assert purposes == {"attack", "damage", "save", "effect-duration", "lost-power",
                        "hp-damage", "open-duration", "wisdom-check", "mac-base",
                        "mac-modifier", "initiative"}
    assert d["combatant_schema"]["properties"]["quick_mac"]["description"]
    assert "target" in d["choice_schema"]["properties"]["attack"]["properties"]


def test_unknown_house_rule_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as err:
        resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust"},
                options={"H-2E-NOPE": True}, attack=[2])
    assert err.value.problems[0].path == "/options/H-2E-NOPE"


def test_a_gm_replacement_table_is_used_and_checked() -> None:
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["attacks"]["mind-thrust"]["cost"] = 3
    raw["attack_vs_defense"]["mind-thrust"]["mind-blank"] = 7
    gm = Revised2e(raw)
    request = {"attacker": psionicist("a"), "defender": psionicist("d"),
               "attack": {"mode": "mind-thrust", "multiplier": 2},
               "defense": {"mode": "mind-blank", "paid": True}}
    result = gm.resolve(request, SuppliedDice({"attack": [10], "damage": [1, 1]})).to_json()
    assert result["psp_spent"] == 6 and result["roll"]["modifier"] == 7
    del raw["attack_vs_defense"]["ego-whip"]["mind-blank"]
    raw["defenses"]["mind-blank"]["cost"] = -1
    with pytest.raises(InvalidInput) as err:
        Revised2e(raw)
    assert {p.path for p in err.value.problems} == {"/tables/defenses/mind-blank/cost"}
    raw["defenses"]["mind-blank"]["cost"] = 3
    with pytest.raises(InvalidInput) as err:
        Revised2e(raw)
    assert {p.path for p in err.value.problems} == {
        "/tables/attack_vs_defense/ego-whip/mind-blank"}


def test_a_gm_table_s_monster_group_gives_monsters_saves_and_a_missing_table_76_row_is_named(
        ) -> None:
    """RULES.md §1.7: monsters save as the table's ``monster_group`` (warriors as
    shipped), so a GM's table naming priests makes a 4 HD monster save at 9; a table
    with no Table 76 row for an attack is refused at that row."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["save_paralyzation"]["monster_group"] = "priest"
    gm = Revised2e(raw)
    assert save_paralyzation(gm.tables, "monster", 4, True) == 9
    del raw["attack_vs_defense"]["ego-whip"]
    with pytest.raises(InvalidInput) as err:
        Revised2e(raw)
    assert [p.path for p in err.value.problems] == ["/tables/attack_vs_defense/ego-whip"]


def test_describe_gives_one_die_size_only_where_every_mode_rolls_the_same() -> None:
    """RULES.md §1.2: damage per step is 1d6+1, 1d8+2, 1d4, 1d12+4 or 1d10+3 by mode, so
    the ``damage`` purpose has no one die size; mind thrust's lost power (1d6 days) has.
    A VTT reads ``sides_by_mode`` where ``sides`` is null."""
    purposes = {p["purpose"]: p for p in SYSTEM.describe()["dice_purposes"]}
    assert purposes["damage"]["sides"] is None
    assert purposes["damage"]["sides_by_mode"] == {
        "ego-whip": 6, "id-insinuation": 8, "mind-thrust": 4, "psionic-blast": 12,
        "psychic-crush": 10}
    assert purposes["hp-damage"]["sides"] is None
    assert purposes["lost-power"]["sides"] == 6


def test_describe_gives_the_dice_of_a_gm_s_table_for_saves_and_effect_durations() -> None:
    """``dice_purposes`` reads the tables in use: a GM's table rolling the save on a d4
    and id insinuation's confusion on a d6 is described so; the shipped one gives the
    d20 and 1d4 rounds for both ego whip and id insinuation (RULES.md §1.5)."""
    def purposes(system: Revised2e) -> dict[str, JSON]:
        return {p["purpose"]: p for p in system.describe()["dice_purposes"]}

    shipped = purposes(SYSTEM)
    assert shipped["save"]["sides"] == 20
    assert (shipped["effect-duration"]["sides"], shipped["effect-duration"]["sides_by_mode"]
            ) == (4, {"ego-whip": 4, "id-insinuation": 4})
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["save_paralyzation"]["sides"] = 4
    raw["open_mind"]["effects"]["id-insinuation"]["sides"] = 6
    gm = purposes(Revised2e(raw))
    assert gm["save"]["sides"] == 4
    assert (gm["effect-duration"]["sides"], gm["effect-duration"]["sides_by_mode"]) == (
        None, {"ego-whip": 4, "id-insinuation": 6})


def test_the_tables_described_are_the_caller_s_own_copy() -> None:
    """``describe`` serves the tables in use; a caller that edits what it was given
    changes neither the next description nor the rules (mind thrust still costs 2)."""
    system = Revised2e()
    described = system.describe()["tables"]
    described["attacks"]["mind-thrust"]["cost"] = 99
    described["defenses"].clear()
    assert system.describe()["tables"] == Revised2e().describe()["tables"]
    assert system.tables.attack_cost("mind-thrust") == 2


def test_an_exchange_without_an_attack_is_invalid_input() -> None:
    """API.md ``exchange.resolve``: ``attacker``, ``defender`` and ``attack`` are given;
    a request without its attack is invalid params, not an error of the engine."""
    for call in (SYSTEM.resolve, lambda r, _: SYSTEM.odds(r)):
        with pytest.raises(InvalidInput):
            call({"attacker": psionicist("a"), "defender": psionicist("d")},
                 SuppliedDice({}))


def test_the_request_schema_s_defaults_are_what_an_exchange_does_without_them() -> None:
    """The request schema tells a VTT the defaults (a multiplier of 1, short range, a
    defense not paid this round); an exchange that leaves them out resolves as one that
    gives them."""
    schema = SYSTEM.request_schema()["properties"]
    attack = {k: v["default"] for k, v in schema["attack"]["properties"].items()
              if "default" in v}
    defense = {k: v["default"] for k, v in schema["defense"]["properties"].items()
               if "default" in v}
    assert (attack, defense) == ({"multiplier": 1, "range": "short"}, {"paid": False})
    dice = {"attack": [15], "damage": [3]}
    bare = resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust"},
                   {"mode": "mental-barrier"}, **dice)
    given = resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust", **attack},
                    {"mode": "mental-barrier", **defense}, **dice)
    assert bare == given and bare["defense_psp"] == 5


def test_an_exchange_request_naming_another_system_is_refused_at_system() -> None:
    """API.md ``exchange.resolve``: a request may say its ``system``; one that names
    another system is invalid params at ``/system``, not read as revised-2e's."""
    request = {"attacker": psionicist("a"), "defender": psionicist("d"),
               "attack": {"mode": "mind-thrust"}}
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.resolve({**request, "system": "power-pool"}, SuppliedDice({"attack": [1]}))
    assert [p.path for p in bad.value.problems] == ["/system"]
    own = SYSTEM.resolve({**request, "system": "revised-2e"}, SuppliedDice({"attack": [1]}))
    assert own.outcome == "miss"


def test_an_exchange_request_s_dice_must_be_an_object_of_purposes() -> None:
    """API.md: supplied ``dice`` are an object of values by purpose; a request giving
    a bare list is invalid params at ``/dice``."""
    request = {"attacker": psionicist("a"), "defender": psionicist("d"),
               "attack": {"mode": "mind-thrust"}, "dice": [4]}
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.resolve(request, SuppliedDice({"attack": [4]}))
    assert [p.path for p in bad.value.problems] == ["/dice"]


def test_describe_gives_each_attack_s_damage_and_ranges_as_the_table_has_them() -> None:
    """RULES.md §1.2: damage per step and range in yards (S/M/L), psychic crush one band
    of 50; a mode with no bonus shows none."""
    attacks = {a["id"]: a for a in SYSTEM.describe()["modes"]["attacks"]}
    assert {m: a["damage"] for m, a in attacks.items()} == {
        "ego-whip": "1d6+1", "id-insinuation": "1d8+2", "mind-thrust": "1d4",
        "psionic-blast": "1d12+4", "psychic-crush": "1d10+3"}
    assert attacks["mind-thrust"]["ranges"] == {"short": 30, "medium": 60, "long": 90}
    assert attacks["psychic-crush"]["ranges"] == {"short": 50}


def test_quick_mac_takes_the_worst_of_the_range_without_a_die_when_h_2e_quickmac_pick_is_off(
        ) -> None:
    """H-2E-QUICKMAC-PICK off: Average Int (8–10) gives its worst base, 10, with no
    ``mac-base`` die; the d10 of 10 on the high-psionic table is −4."""
    dice = SuppliedDice({"mac-modifier": [10]})
    assert SYSTEM.quick_mac(9, "high", dice, {"H-2E-QUICKMAC-PICK": False}) == 6
    assert [r.purpose for r in dice.rolls_since(0)] == ["mac-modifier"]


def test_quick_mac_reads_the_high_or_low_psionic_table_and_no_other() -> None:
    """Seed 004 Quick MAC: Average Int (8–10) picks 10 with a 3; a d10 of 10 is −4 on the
    high-psionic table and −3 on the low-psionic one. There is no third table."""
    def roll(psionic: str) -> int:
        return SYSTEM.quick_mac(9, psionic, SuppliedDice({"mac-base": [3],
                                                          "mac-modifier": [10]}))

    assert (roll("high"), roll("low")) == (6, 7)
    with pytest.raises(InvalidInput) as err:
        roll("medium")
    assert err.value.problems[0].path == "/quick_mac/psionic"


def test_attacks_per_round_follows_house_rule_h_2e_three_per_two() -> None:
    """RULES.md §1.8: 7–12 three per two rounds; H-2E-THREE-PER-TWO puts the extra
    attack in even rounds (1, 2, 1), off in odd ones (2, 1, 2)."""
    vet = SYSTEM.combatant(psionicist("vet", level=7))
    assert [SYSTEM.attacks_per_round(vet, r) for r in (1, 2, 3)] == [1, 2, 1]
    assert [SYSTEM.attacks_per_round(vet, r, {"H-2E-THREE-PER-TWO": False})
            for r in (1, 2, 3)] == [2, 1, 2]


def test_an_exchange_records_the_defense_raised_and_paid_before_the_attack() -> None:
    """RULES.md §1.4 step 1: the defense is raised and paid (mental barrier, 5 PSPs)
    before the attack is rolled; §4: the result lists every event, in that order."""
    result = SYSTEM.resolve({"attacker": psionicist("a"), "defender": psionicist("d"),
                             "attack": {"mode": "mind-thrust"},
                             "defense": {"mode": "mental-barrier"}},
                            SuppliedDice({"attack": [2]})).to_json()
    assert result["events"] == [
        {"type": "defense-raised", "combatant": "d", "mode": "mental-barrier",
         "paid_before": False},
        {"type": "psp-spent", "combatant": "d", "amount": 5, "for": "defense"},
        {"type": "psp-spent", "combatant": "a", "amount": 1, "for": "attack"}]
    assert result["defense_psp"] == 5


def test_a_defense_paid_earlier_this_round_is_recorded_as_paid_before() -> None:
    """RULES.md §1.4 step 1: a defense is paid once a round; raised again against a later
    attack it costs nothing, and the record says it was paid before."""
    result = resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust"},
                     {"mode": "mental-barrier", "paid": True}, attack=[2])
    assert result["events"][0] == {"type": "defense-raised", "combatant": "d",
                                   "mode": "mental-barrier", "paid_before": True}
    assert result["defense_psp"] == 0 and result["defender"]["after"]["psp"] == 50


def test_a_multiplier_below_1_is_invalid_input_at_its_path() -> None:
    """RULES.md §1.4 step 2: the multiplier is 1 ≤ m ≤ level; none of 0 steps."""
    with pytest.raises(InvalidInput) as err:
        resolve(psionicist("a"), psionicist("d"), {"mode": "mind-thrust", "multiplier": 0},
                attack=[10])
    assert [p.path for p in err.value.problems] == ["/attack/multiplier"]


def test_roll_mac_follows_house_rule_h_2e_quickmac_pick() -> None:
    """H-2E-QUICKMAC-PICK off: the worst value of the Intelligence range, no die. Low
    Int (5–7) is 8–9, so 9; a d10 of 3 on the high-psionic table adds 0."""
    beast = SYSTEM.combatant({"id": "beast", "kind": "psionicist", "level": 2,
                              "psp_max": 10, "class_group": "monster",
                              "quick_mac": {"intelligence": 5, "psionic": "high"}})
    dice = SuppliedDice({"mac-modifier": [3]})
    assert SYSTEM.roll_mac(beast, dice, {"H-2E-QUICKMAC-PICK": False})["mac"] == 9
    assert [r.purpose for r in dice.rolls_since(0)] == ["mac-modifier"]


def test_end_of_round_prices_closing_under_house_rule_h_2e_no_last_def() -> None:
    """§1.5: a mind a critical hit opened is told at its round's end what closing costs:
    2 × its cheapest known defense when it used none (H-2E-NO-LAST-DEF), no price with
    the house rule off."""
    c = SYSTEM.combatant(psionicist("p", defenses=["thought-shield"], mind={
        "state": "open", "opened_by": "critical", "rounds_open": 0}))
    told = [SYSTEM.end_of_round(c, SuppliedDice({}), options)[1][0].data
            for options in (None, {"H-2E-NO-LAST-DEF": False})]
    assert told == [{"cost": 4}, {"cost": None}]
