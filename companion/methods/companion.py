"""``companion.info``: who this daemon is and what it offers (cached: it never changes
while the daemon runs)."""

from __future__ import annotations

from typing import Any

from .. import API_VERSION
from ..registry import MethodSpec, PreparedJSON
from ..schemas import NO_PARAMS
from ..services import Context


def info(ctx: Context) -> PreparedJSON:
    """The ``companion.info`` answer, computed and serialised once per app."""
    services = ctx.services
    cached = services.cache.get("companion.info")
    if cached is None:
        cached = PreparedJSON({
            "name": "mindscape",
            "version": services.version,
            "api_version": API_VERSION,
            "systems": sorted(services.systems),
            "adapters": sorted(services.adapters),
            "plugins": [r.to_json() for r in services.plugins.reports],
            "limits": {
                "max_body": services.settings.limits.max_body,
                "max_batch": services.settings.limits.max_batch,
                "max_dice": services.settings.limits.max_dice,
                "max_sides": services.settings.limits.max_sides,
                "max_penetration": services.settings.limits.max_penetration,
                "max_combatants": services.settings.limits.max_combatants,
            },
        })
        services.cache["companion.info"] = cached
    assert isinstance(cached, PreparedJSON)
    return cached


async def companion_info(ctx: Context, params: dict[str, Any]) -> PreparedJSON:
    """``companion.info`` (prepared once)."""
    cached = ctx.services.cache.get("companion.info")
    return cached if isinstance(cached, PreparedJSON) else info(ctx)


METHODS = [
    MethodSpec(
        "companion.info", NO_PARAMS, companion_info,
        "The daemon's name, version, API version, systems, adapters, plugins (with the "
        "error of any that failed to load) and limits; rpc.discover lists the methods.",
        result={"type": "object",
                "required": ["name", "version", "api_version", "systems", "adapters",
                             "plugins"]}),
]
