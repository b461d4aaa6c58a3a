"""``systems.list``, ``systems.describe`` and ``systems.house_rules``."""

from __future__ import annotations

from typing import Any

from ..registry import MethodSpec, PreparedJSON
from ..schemas import JSON, NO_PARAMS, SYSTEM_ID, answer
from ..services import Context


async def systems_list(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """``systems.list``: every rule system, the plugin that gave it, whether it runs
    encounters, and whether it ends rounds and rests combatants outside them."""
    plugins = ctx.services.plugins
    return [{"id": s.id, "name": s.name, "source": s.source,
             "plugin": plugins.system_plugin.get(s.id),
             "encounters": s.id in plugins.encounter_systems,
             "round_end": s.id in plugins.round_end_systems,
             "rest": s.id in plugins.rest_systems}
            for s in plugins.systems.values()]


async def systems_describe(ctx: Context, params: dict[str, Any]) -> PreparedJSON:
    """``systems.describe``: a system's own description (prepared once per system)."""
    system = ctx.services.system(params["system"])
    key = f"systems.describe:{system.id}"
    cached = ctx.services.cache.get(key)
    if cached is None:
        description = dict(system.describe())
        # The engine's own request schemas of exchange.end_round and combatants.rest
        # (without system, dice and seed), for the systems that take them.
        if system.id in ctx.services.plugins.round_end_systems:
            description.setdefault("round_end_schema", system.end_round_schema())
        if system.id in ctx.services.plugins.rest_systems:
            description.setdefault("rest_schema", system.rest_schema())
        cached = PreparedJSON(description)
        ctx.services.cache[key] = cached
    assert isinstance(cached, PreparedJSON)
    return cached


async def systems_house_rules(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``systems.house_rules``: the house rules a system checks ``options`` against (the
    list ``systems.describe`` holds), alone, for a caller that relays every answer
    through a narrow channel (the Roll20 chat)."""
    system = ctx.services.system(params["system"])
    return {"system": system.id, "house_rules": [r.to_json() for r in system.house_rules()]}


#: ``house_rules`` as systems.describe and systems.house_rules give them.
HOUSE_RULES: JSON = {"type": "array", "items": answer(
    ["id", "text", "default", "choices"],
    id={"type": "string"}, text={"type": "string"},
    default={"type": ["boolean", "string", "integer"]},
    choices={"type": "array", "minItems": 1})}

METHODS = [
    MethodSpec("systems.list", NO_PARAMS, systems_list,
               "Every rule system: [{id, name, source, plugin, encounters, round_end, rest}] "
               "(encounters: whether encounter.create takes it; round_end: whether "
               "exchange.end_round does; rest: whether combatants.rest does).",
               result={"type": "array", "items": {"type": "object",
                                                  "required": ["id", "name", "source",
                                                               "encounters",
                                                               "round_end", "rest"]}}),
    MethodSpec("systems.describe",
               {"type": "object", "required": ["system"], "additionalProperties": False,
                "properties": {"system": SYSTEM_ID}},
               systems_describe,
               "A system's modes with costs, tables, combatant JSON Schema, dice purposes "
               "and house rules [{id, text, default, choices}]; round_end_schema and rest_schema: "
               "the system's own schemas of exchange.end_round and combatants.rest params "
               "(without system, dice, seed), for a system that takes them.",
               result=answer(["id", "name", "source", "modes", "tables", "combatant_schema",
                              "dice_purposes", "house_rules"],
                             id=SYSTEM_ID, name={"type": "string"},
                             source={"type": "string", "description": "the text it is "
                                                                      "read from"},
                             modes={"type": "object", "description": "the system's attack "
                                    "and defense modes (built-in systems: {attacks, "
                                    "defenses}, each a list of {id, name, ...})"},
                             tables={"type": "object"},
                             combatant_schema={"type": "object",
                                               "description": "a JSON Schema"},
                             dice_purposes={
                                 "type": ["array", "object"],
                                 "description": "[{purpose, sides, summed, text}]: sides a "
                                 "number, a list or null beside sides_by_mode or "
                                 "sides_by_range; summed: whether one roller's dice of the "
                                 "purpose add up into one figure (damage dice, a pool) "
                                 "rather than each being a check, save or table roll of "
                                 "its own (a plugin's may leave it out: not summed)"},
                             house_rules=HOUSE_RULES,
                             round_end_schema={"type": "object"},
                             rest_schema={"type": "object"})),
    MethodSpec("systems.house_rules",
               {"type": "object", "required": ["system"], "additionalProperties": False,
                "properties": {"system": SYSTEM_ID}},
               systems_house_rules,
               "A system's house rules alone, as in systems.describe: {system, house_rules: "
               "[{id, text, default, choices}]}; the values a call's options may give each.",
               result=answer(["system", "house_rules"], system=SYSTEM_ID,
                             house_rules=HOUSE_RULES)),
]
