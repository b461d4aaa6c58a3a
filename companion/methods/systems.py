"""``systems.list`` and ``systems.describe``."""

from __future__ import annotations

from typing import Any

from ..registry import MethodSpec, PreparedJSON
from ..schemas import NO_PARAMS, SYSTEM_ID
from ..services import Context


async def systems_list(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """``systems.list``: every rule system, the plugin that gave it and whether it runs
    encounters."""
    plugins = ctx.services.plugins
    return [{"id": s.id, "name": s.name, "source": s.source,
             "plugin": plugins.system_plugin.get(s.id),
             "encounters": s.id in plugins.encounter_systems}
            for s in plugins.systems.values()]


async def systems_describe(ctx: Context, params: dict[str, Any]) -> PreparedJSON:
    """``systems.describe``: a system's own description (prepared once per system)."""
    system = ctx.services.system(params["system"])
    key = f"systems.describe:{system.id}"
    cached = ctx.services.cache.get(key)
    if cached is None:
        cached = PreparedJSON(system.describe())
        ctx.services.cache[key] = cached
    assert isinstance(cached, PreparedJSON)
    return cached


METHODS = [
    MethodSpec("systems.list", NO_PARAMS, systems_list,
               "Every rule system: [{id, name, source, plugin, encounters}] (encounters: "
               "whether encounter.create takes it).",
               result={"type": "array", "items": {"type": "object",
                                                  "required": ["id", "name", "source",
                                                               "encounters"]}}),
    MethodSpec("systems.describe",
               {"type": "object", "required": ["system"], "additionalProperties": False,
                "properties": {"system": SYSTEM_ID}},
               systems_describe,
               "A system's modes with costs, tables, combatant JSON Schema, dice purposes "
               "and house rules [{id, text, default}].",
               result={"type": "object"}),
]
