"""``adapters.list`` and ``adapters.import``."""

from __future__ import annotations

from typing import Any

from engine.errors import InvalidInput

from ..combatants import import_ref
from ..registry import MethodSpec
from ..schemas import NO_PARAMS, SYSTEM_ID
from ..services import Context


async def adapters_list(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """``adapters.list``: every adapter's id, VTT, system and description."""
    return [a.to_json() for a in ctx.services.adapters.values()]


async def adapters_import(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``adapters.import``: raw VTT data to a combatant, with the adapter's warnings."""
    services = ctx.services
    adapter = services.adapter(params["adapter"])
    system_id = params.get("system") or adapter.system or adapter.default_system
    if system_id is None:
        raise InvalidInput.at("/system", f"adapter {adapter.id} serves any system and "
                                         "assumes none: name one")
    services.system(system_id)
    ref = import_ref(services, {"adapter": adapter.id, "data": params["data"]}, system_id,
                     "", "combatant")
    return {"combatant": ref.combatant, "warnings": list(ref.warnings),
            "system": system_id}


METHODS = [
    MethodSpec("adapters.list", NO_PARAMS, adapters_list,
               "Every adapter: [{id, vtt, system, description}].",
               result={"type": "array"}),
    MethodSpec("adapters.import",
               {"type": "object", "required": ["adapter", "data"],
                "additionalProperties": False,
                "properties": {"adapter": {"type": "string"},
                               "data": {"description": "raw VTT JSON"},
                               "system": SYSTEM_ID}},
               adapters_import,
               "Turn raw VTT data into a combatant: {combatant, warnings, system}.",
               result={"type": "object", "required": ["combatant", "warnings"]}),
]
