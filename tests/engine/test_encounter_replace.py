"""``System.encounter_replace`` (the engine side of ``encounter.refresh``): a combatant
taken again, for each built-in system, without touching anything else."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine import builtin_systems
from engine.errors import InvalidInput, UnknownCombatant

JSON = dict[str, Any]
SYSTEMS = builtin_systems()

#: Two combatants per system, and a field the sheet changed with its new value.
CASES: dict[str, tuple[JSON, JSON, str, Any]] = {
    "revised-2e": ({"id": "kara", "kind": "psionicist", "level": 3, "psp_max": 30, "int": 14,
                    "wis": 13, "attacks": ["mind-thrust"]},
                   {"id": "vel", "kind": "nonpsionic", "int": 10, "wis": 10}, "psp", 12),
    "combat-strength": ({"id": "kara", "attack_strength": 40, "defense_strength": 40},
                        {"id": "vel", "attack_strength": 20, "defense_strength": 20},
                        "attack_strength", 15),
    "power-pool": ({"id": "kara", "hit_dice": 4, "die": 8},
                   {"id": "vel", "hit_dice": 2, "die": 6}, "pool", 1),
}


def _encounter(system_id: str) -> tuple[Any, JSON]:
    system = SYSTEMS[system_id]
    first, second, _, _ = CASES[system_id]
    state = system.encounter_new(None)
    for c in (first, second):
        state, _ = system.encounter_add(state, c)
    return system, state


@pytest.mark.parametrize("system_id", sorted(CASES))
def test_replace_takes_the_new_values_under_the_same_id(system_id: str) -> None:
    system, state = _encounter(system_id)
    first, _, field, value = CASES[system_id]
    kept = copy.deepcopy(state)
    new = system.encounter_replace(state, "kara", {**first, "id": "other", field: value})
    assert state == kept, "the state given is not changed"
    view, old_view = system.encounter_view(new), system.encounter_view(state)
    assert view["combatants"]["kara"][field] == value
    assert view["combatants"]["vel"] == old_view["combatants"]["vel"]
    assert sorted(view["combatants"]) == ["kara", "vel"]


@pytest.mark.parametrize("system_id", sorted(CASES))
def test_replace_refuses_an_unknown_id_and_an_invalid_combatant(system_id: str) -> None:
    system, state = _encounter(system_id)
    first, _, field, _ = CASES[system_id]
    with pytest.raises(UnknownCombatant):
        system.encounter_replace(state, "nobody", first)
    with pytest.raises(InvalidInput) as bad:
        system.encounter_replace(state, "kara", {**first, field: "many"})
    assert [p.path for p in bad.value.problems] == [f"/combatant/{field}"]
