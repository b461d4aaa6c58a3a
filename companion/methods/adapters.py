"""``adapters.list`` and ``adapters.import``."""

from __future__ import annotations

from typing import Any

from engine.errors import InvalidInput, Problem

from ..combatants import ImportedRef, import_ref, normaliser
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
        raise type(exc)([Problem(_source_of(ref, p.path), p.message)
                         for p in exc.problems]) from None
    return {"combatant": ref.combatant, "warnings": list(ref.warnings),
            "system": system_id}


def _source_of(ref: ImportedRef, path: str) -> str:
    """A problem's path in the combatant (``/<field>...``) as the place in ``/data`` the
    adapter read the field from (``/<field>/<key>...`` below it when the value was
    taken as it stands there, an object in Foundry flags); ``/combatant/<field>...``
    when it was derived or defaulted."""
    field, _, rest = path[1:].partition("/") if path.startswith("/") else ("", "", "")
    source = ref.sources.get(field)
    if source is None:
        return f"/combatant{path}"
    if rest and field in ref.combatant and _at(ref.data, source) == ref.combatant[field]:
        return f"/data{source}/{rest}"
    return f"/data{source}"


_MISSING = object()


def _at(data: Any, path: str) -> Any:
    """The value at JSON Pointer ``path`` in ``data``, or ``_MISSING``."""
    node = data
    for token in path.split("/")[1:]:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isascii() and key.isdigit() \
                and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


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
