"""``adapters.list`` and ``adapters.import``."""

from __future__ import annotations

from typing import Any

from engine.errors import InvalidInput

from ..combatants import import_ref, normaliser, refused_where_read
from ..registry import MethodSpec
from ..schemas import NO_PARAMS, OPTIONS, SYSTEM_ID, WARNINGS, answer
from ..services import Context


async def adapters_list(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """``adapters.list``: every adapter's id, VTT, system and description."""
    return [a.to_json() for a in ctx.services.adapters.values()]


async def adapters_import(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``adapters.import``: raw VTT data to a combatant, with the adapter's warnings.
    A combatant the system would refuse (under the house rules ``options``) is refused
    here too, with paths into ``/data`` where the adapter read each field."""
    services = ctx.services
    adapter = services.adapter(params["adapter"])
    system_id = params.get("system") or adapter.system or adapter.default_system
    if system_id is None:
        raise InvalidInput.at("/system", f"adapter {adapter.id} serves any system and "
                                         "assumes none: name one")
    system = services.system(system_id)
    options = params.get("options")
    system.options(options)
    ref = import_ref(services, {"adapter": adapter.id, "data": params["data"]}, system_id,
                     "", "combatant", options)
    # The Foundry module validates a profile with this call before saving it: a
    # combatant the engine would refuse is refused here, at the place it was read.
    try:
        normaliser(system, options)(ref.combatant)
    except InvalidInput as exc:
        raise refused_where_read(ref, exc) from None
    return {"combatant": ref.combatant, "warnings": list(ref.warnings),
            "system": system_id}


METHODS = [
    MethodSpec("adapters.list", NO_PARAMS, adapters_list,
               "Every adapter: [{id, vtt, system, default_system, description}].",
               result={"type": "array", "items": answer(
                   ["id", "vtt", "system", "description"], id={"type": "string"},
                   vtt={"type": "string", "description": "foundry or roll20"},
                   system={"type": ["string", "null"],
                           "description": "the one system it reads, or null for any"},
                   default_system={"type": ["string", "null"]},
                   description={"type": "string"})}),
    MethodSpec("adapters.import",
               {"type": "object", "required": ["adapter", "data"],
                "additionalProperties": False,
                "properties": {"adapter": {"type": "string"},
                               "data": {"description": "raw VTT JSON"},
                               "system": SYSTEM_ID,
                               "options": OPTIONS}},
               adapters_import,
               "Turn raw VTT data into a combatant the system accepts (under the house "
               "rules options): {combatant, warnings, system}.",
               result=answer(["combatant", "warnings", "system"],
                             combatant={"type": "object"}, warnings=WARNINGS,
                             system=SYSTEM_ID)),
]
