"""``rpc.discover``: the OpenRPC document of every method, from the same table and
schemas that validate calls."""

from __future__ import annotations

from typing import Any

from ..openrpc import document
from ..registry import MethodSpec, PreparedJSON
from ..schemas import NO_PARAMS
from ..services import Context


async def rpc_discover(ctx: Context, params: dict[str, Any]) -> PreparedJSON:
    """``rpc.discover``: the OpenRPC document (prepared once)."""
    services = ctx.services
    cached = services.cache.get("rpc.discover")
    if cached is None:
        cached = PreparedJSON(document(services.plugins.methods, services.version,
                                       services.systems))
        services.cache["rpc.discover"] = cached
    assert isinstance(cached, PreparedJSON)
    return cached


METHODS = [
    MethodSpec("rpc.discover", NO_PARAMS, rpc_discover,
               "The OpenRPC 1.3 document of this daemon: every method with the params "
               "schemas used to validate its calls.",
               result={"type": "object", "required": ["openrpc", "info", "methods"]}),
]
