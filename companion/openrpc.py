"""The OpenRPC 1.3 document, generated from the method table that validates calls.

Every method is ``paramStructure: by-name``; each member of its params schema becomes one
content descriptor (with that member's own schema and whether it is required), and the
whole params schema, exactly as compiled for validation, is given as ``x-params-schema``
(OpenRPC allows ``x-`` extensions on a method object).

``exchange.resolve`` and ``exchange.odds`` check their params twice: against the method's
schema, then (``{adapter, data}`` combatants imported) against the named system's
``request_schema`` (``exchange.end_round``, ``exchange.round_end_choices`` and
``combatants.rest`` against its ``end_round_schema``, ``round_end_choices_schema`` and
``rest_schema``). Their ``x-params-schema`` says both: the
method's schema and, for each installed system that takes the method, ``if`` the
``system`` is that one ``then`` its schema, with
every combatant member of a built-in system also allowed as ``{adapter, data}`` (the
adapters build combatants for those alone: the daemon refuses a sheet for a plugin's
system); each such schema carries an ``$id``, so its ``#/$defs/...`` references resolve
inside it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from adapters.core import SYSTEMS as ADAPTED_SYSTEMS
from engine.system import System

from . import API_VERSION
from .combatants import COMBATANT_MEMBERS
from .errors import INVALID_PARAMS, JSONRPC_RESERVED, MESSAGES
from .plugins import ends_rounds, rests
from .registry import MethodRegistry, MethodSpec
from .schemas import ADAPTER_REF

log = logging.getLogger("mindscape.openrpc")

OPENRPC_VERSION = "1.3.2"
#: The message of an error code a plugin's method lists that the daemon does not know
#: (a plugin may define its own codes; its handler writes the message it sends).
PLUGIN_ERROR_MESSAGE = "Error defined by the plugin"


#: Which systems a ``system_schema`` applies to: a system without an end of round or a
#: rest outside encounters is refused by those methods whatever its params.
_TAKES: dict[str, Callable[[System], bool]] = {
    "request_schema": lambda system: True,
    "end_round_schema": ends_rounds,
    "round_end_choices_schema": ends_rounds,
    "rest_schema": rests,
}


#: Members a method's params take besides the system's request: its own schema checks them
#: (``exchange.odds``' ``assume_known`` and ``least_chance`` are taken out before the
#: system's check).
_METHOD_MEMBERS = ("system", "dice", "seed", "assume_known", "least_chance")


def _as_called(system: System, which: str, method: Mapping[str, Any]) -> dict[str, Any]:
    """``system``'s schema ``which`` (``MethodSpec.system_schema``) as a caller may meet
    it: each combatant member (or item of a list of them) of a system the adapters serve
    may also be ``{adapter, data}``, and ``system``, ``dice`` and ``seed`` are left to
    the ``method``'s own params schema: allowed here when it has them, refused here as
    there when it does not (``exchange.round_end_choices`` rolls no die,
    ``exchange.odds`` takes none)."""
    schema = copy.deepcopy(dict(getattr(system, which)()))
    schema.pop("$schema", None)
    suffix = "request" if which == "request_schema" else which.removesuffix("_schema")
    # its own base (so that references inside it resolve in it), unless it has one
    schema.setdefault("$id", f"urn:mindscape:system:{system.id}:{suffix}")
    properties = schema.setdefault("properties", {})
    listed = properties.get("combatants")
    if isinstance(listed, dict) and listed.get("items") == {"type": "object"}:
        # the round's and the rest's schemas leave each combatant to the system's own
        # check (under the call's house rules): the document gives that schema
        combatant = copy.deepcopy(dict(system.combatant_schema()))
        combatant.pop("$schema", None)
        # its own base, so references inside a plugin's combatant schema resolve in it
        combatant.setdefault("$id", f"urn:mindscape:system:{system.id}:combatant")
        listed["items"] = combatant  # (with {adapter, data} beside it below)
    sheets = COMBATANT_MEMBERS if system.id in ADAPTED_SYSTEMS else frozenset()
    for name, member in properties.items():
        if name not in sheets or not isinstance(member, dict):
            continue
        if member.get("type") == "array" and isinstance(member.get("items"), dict):
            member["items"] = {"anyOf": [ADAPTER_REF, member["items"]]}
        else:
            properties[name] = {"anyOf": [ADAPTER_REF, member]}
    own = method.get("properties") or {}
    for name in _METHOD_MEMBERS:
        if name in own:
            properties[name] = {}
        else:
            properties.pop(name, None)
    return schema


def _params_schema(spec: MethodSpec, systems: Mapping[str, System]) -> dict[str, Any]:
    if not spec.checked_by_system or not systems:
        return dict(spec.params)
    branches = []
    for system_id, system in sorted(systems.items()):
        if not _TAKES[spec.system_schema](system):
            continue
        try:
            then = _as_called(system, spec.system_schema, spec.params)
        except Exception:
            # a plugin's broken schema: its calls fail too, and say so
            log.warning("request schema of system %s not documented", system_id,
                        exc_info=True)
            continue
        branches.append({"if": {"properties": {"system": {"const": system_id}},
                                "required": ["system"]},
                         "then": then})
    return {"allOf": [dict(spec.params), *branches]}


def _method(spec: MethodSpec, systems: Mapping[str, System]) -> dict[str, Any]:
    required = set(spec.params.get("required", ()))
    params = [
        {"name": name, "schema": schema, "required": name in required}
        for name, schema in (spec.params.get("properties") or {}).items()
    ]
    # Each code once; of JSON-RPC's own, only -32602: a plugin's MethodError with
    # another (-32000 ...) is never answered as such (it is -32603, which every method
    # may answer and none lists).
    codes = dict.fromkeys(c for c in (INVALID_PARAMS, *spec.errors)
                          if c == INVALID_PARAMS or c not in JSONRPC_RESERVED)
    errors = [{"code": code, "message": MESSAGES.get(code, PLUGIN_ERROR_MESSAGE)}
              for code in codes]
    return {
        "name": spec.name,
        "summary": spec.description.split(". ")[0].rstrip("."),
        "description": spec.description,
        "paramStructure": "by-name",
        "params": params,
        "result": {"name": f"{spec.name} result",
                   "schema": dict(spec.result) if spec.result is not None else {}},
        "errors": errors,
        "x-params-schema": _params_schema(spec, systems),
    }


def document(methods: MethodRegistry, version: str,
             systems: Mapping[str, System] | None = None) -> dict[str, Any]:
    """The OpenRPC document of ``methods`` for daemon ``version`` (with the request
    schemas of ``systems`` for the methods they check)."""
    return {
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "Mindscape companion",
            "version": version,
            "description": "Psionic-combat companion for virtual tabletops (JSON-RPC 2.0 "
                           f"over POST /rpc and GET /ws; API version {API_VERSION}). "
                           "Every call needs the token of `mindscape token`: "
                           "Authorization: Bearer <token> on POST /rpc; on GET /ws the "
                           "subprotocol token.<token> or a first auth message.",
            "license": {"name": "MIT"},
        },
        "methods": [_method(r.spec, systems or {}) for r in methods],
        "x-notifications": [{
            "name": "encounter.changed",
            "description": "sent over /ws to sockets that called encounter.watch",
            "params": {"id": "encounter id", "revision": "new revision (null when deleted)",
                       "deleted": "true, only when the encounter was deleted"},
        }],
    }
