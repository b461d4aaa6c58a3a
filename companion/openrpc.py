"""The OpenRPC 1.3 document, generated from the method table that validates calls.

Every method is ``paramStructure: by-name``; each member of its params schema becomes one
content descriptor (with that member's own schema and whether it is required), and the
whole params schema, exactly as compiled for validation, is given as ``x-params-schema``
(OpenRPC allows ``x-`` extensions on a method object).
"""

from __future__ import annotations

from typing import Any

from . import API_VERSION
from .errors import INVALID_PARAMS, MESSAGES
from .registry import MethodRegistry, MethodSpec

OPENRPC_VERSION = "1.3.2"


def _method(spec: MethodSpec) -> dict[str, Any]:
    required = set(spec.params.get("required", ()))
    params = [
        {"name": name, "schema": schema, "required": name in required}
        for name, schema in (spec.params.get("properties") or {}).items()
    ]
    errors = [{"code": code, "message": MESSAGES[code]}
              for code in (INVALID_PARAMS, *spec.errors)]
    return {
        "name": spec.name,
        "summary": spec.description.split(". ")[0].rstrip("."),
        "description": spec.description,
        "paramStructure": "by-name",
        "params": params,
        "result": {"name": f"{spec.name} result",
                   "schema": dict(spec.result) if spec.result is not None else {}},
        "errors": errors,
        "x-params-schema": dict(spec.params),
    }


def document(methods: MethodRegistry, version: str) -> dict[str, Any]:
    """The OpenRPC document of ``methods`` for daemon ``version``."""
    return {
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "Mindscape companion",
            "version": version,
            "description": "Psionic-combat companion for virtual tabletops (JSON-RPC 2.0 "
                           f"over POST /rpc and GET /ws; API version {API_VERSION}). "
                           "Every call needs Authorization: Bearer <token>.",
            "license": {"name": "MIT"},
        },
        "methods": [_method(r.spec) for r in methods],
        "x-notifications": [{
            "name": "encounter.changed",
            "description": "sent over /ws to sockets that called encounter.watch",
            "params": {"id": "encounter id", "revision": "new revision (null when deleted)"},
        }],
    }
