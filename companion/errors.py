"""The daemon's own exceptions and the one place where exceptions become JSON-RPC errors.

API.md "Errors": invalid params -32602 ``{errors: [{path, message}], left_off?}``, rules 4001
``{rule, detail}``, dice needed 4002 ``{purpose, sides, needed}``, unknown encounter or
combatant 4004 ``{id}``, stale revision 4009 ``{revision}``; ours: the store could not
write 5003 ``{error_id, retry}``, nothing changed (``retry`` false when only a restart
helps: the store's files were deleted or replaced while the daemon ran);
anything else is -32603 with an error id only. A plugin method's ``MethodError`` is
answered with its own code, message and data when the method declares that code and
the rest is within bounds (``plugin_error``). Exception text never reaches a client:
every ``data`` below is built from structured fields, and unexpected faults are logged
with their traceback under the id the client sees.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import DiceNeeded, InvalidInput, Problem, RulesViolation, UnknownCombatant

from .jsontext import encode, parse
from .registry import MethodError
from .store import NothingToUndo, StaleRevision, StoreUnavailable, UnknownEncounter

log = logging.getLogger("mindscape.rpc")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RULES_VIOLATION = 4001
DICE_NEEDED = 4002
NOT_FOUND = 4004
STALE_REVISION = 4009
STORE_UNAVAILABLE = 5003
#: The codes JSON-RPC 2.0 reserves for itself: a plugin's ``MethodError`` cannot use them.
JSONRPC_RESERVED = range(-32768, -32000 + 1)
#: Most characters of a plugin's ``MethodError`` message, and most bytes of its
#: ``data`` as JSON: an error is a short answer, not a channel for bulk data.
MAX_PLUGIN_ERROR_MESSAGE = 500
MAX_PLUGIN_ERROR_DATA = 4096
#: Most problems one -32602 answer lists: a request with fifty thousand bad values got
#: an answer of 9.5 MB. (The schema check itself stops looking after
#: ``engine.schemacheck.MAX_ERRORS``.)
MAX_LISTED_PROBLEMS = 50

#: code -> message, for the OpenRPC document and the docs.
MESSAGES: dict[int, str] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    RULES_VIOLATION: "The rules forbid it",
    DICE_NEEDED: "Dice needed",
    NOT_FOUND: "Not found",
    STALE_REVISION: "Stale revision",
    STORE_UNAVAILABLE: "Store unavailable: nothing was written",
}


@dataclass(frozen=True)
class RpcError:
    """A JSON-RPC error object: ``code``, ``message`` and structured ``data``."""

    code: int
    message: str
    data: Any = None

    def to_json(self) -> dict[str, Any]:
        """The error object of a JSON-RPC response."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


def invalid_params(problems: list[Problem], **data: Any) -> RpcError:
    """-32602 listing the problems by JSON Pointer path, at most ``MAX_LISTED_PROBLEMS``
    of them: ``left_off`` then counts the others (``data`` adds members, such as the
    limit a batch exceeded)."""
    listed = problems[:MAX_LISTED_PROBLEMS]
    answer: dict[str, Any] = {"errors": [p.to_json() for p in listed], **data}
    if len(problems) > len(listed):
        answer["left_off"] = len(problems) - len(listed)
    return RpcError(INVALID_PARAMS, MESSAGES[INVALID_PARAMS], answer)


def logged_error_id(logger: logging.Logger, message: str, *args: Any, exc_info: bool = True,
                    **fields: Any) -> str:
    """A fresh error id, logged with ``message`` (and the traceback being handled): the
    client gets the id, the log has the rest."""
    error_id = secrets.token_hex(8)
    logger.error(message, *args, exc_info=exc_info,
                 extra={"fields": {"error_id": error_id, **fields}})
    return error_id


def internal_error(method: str | None = None, message: str = "internal error",
                   *args: Any) -> RpcError:
    """-32603 with a fresh error id; ``message`` (with ``args``) and the traceback are
    logged under that id."""
    error_id = logged_error_id(log, message, *args, method=method)
    return RpcError(INTERNAL_ERROR, MESSAGES[INTERNAL_ERROR], {"error_id": error_id})


def _plugin_error_problem(error: MethodError) -> str | None:
    """Why a declared ``MethodError`` cannot be answered as it is, or ``None``."""
    if error.code in MESSAGES or error.code in JSONRPC_RESERVED:
        return "the code is one of the daemon's own or reserved by JSON-RPC"
    if not isinstance(error.message, str) or not 0 < len(error.message) \
            <= MAX_PLUGIN_ERROR_MESSAGE:
        return f"the message is not text of 1 to {MAX_PLUGIN_ERROR_MESSAGE} characters"
    return None


def plugin_error(error: MethodError, method: str | None = None) -> RpcError:
    """The answer to a ``MethodError`` whose code the plugin method declares: that code,
    message and data (a plain copy), or -32603 with an error id when the code is a
    reserved or core one, the message is not short text, or the data is not a JSON
    object within ``MAX_PLUGIN_ERROR_DATA`` bytes (the log says which)."""
    problem = _plugin_error_problem(error)
    data = error.data
    if problem is None and data is not None:
        try:
            text = encode(dict(data)) if isinstance(data, Mapping) else None
        except (TypeError, ValueError, RecursionError):
            text = None
        if text is None:
            problem = "the data is not a JSON object"
        elif len(text) > MAX_PLUGIN_ERROR_DATA:
            problem = f"the data is over {MAX_PLUGIN_ERROR_DATA} bytes as JSON"
        else:
            data = parse(text)
    if problem is not None:
        return internal_error(method, "plugin method error %s not answered: %s",
                              error.code, problem)
    return RpcError(error.code, error.message, data)


def to_rpc_error(exc: BaseException, method: str | None = None,
                 declared: Collection[int] = ()) -> RpcError:
    """Map any exception raised by a method to the error a client may see; ``declared``:
    the codes of a plugin's own that the method (a plugin's) may answer with
    (``MethodSpec.errors``), for a ``MethodError``."""
    if isinstance(exc, InvalidInput):
        return invalid_params(list(exc.problems))
    if isinstance(exc, RulesViolation):
        data: dict[str, Any] = {"rule": exc.rule, "detail": exc.detail}
        if exc.combatant is not None:
            data["combatant"] = exc.combatant
        return RpcError(RULES_VIOLATION, MESSAGES[RULES_VIOLATION], data)
    if isinstance(exc, DiceNeeded):
        return RpcError(DICE_NEEDED, MESSAGES[DICE_NEEDED],
                        {"purpose": exc.purpose, "sides": exc.sides, "needed": exc.needed})
    if isinstance(exc, UnknownEncounter | UnknownCombatant):
        return RpcError(NOT_FOUND, MESSAGES[NOT_FOUND], {"id": str(exc.id)})
    if isinstance(exc, NothingToUndo):
        return RpcError(RULES_VIOLATION, MESSAGES[RULES_VIOLATION],
                        {"rule": "undo-needs-a-resolved-step",
                         "detail": "the encounter has no resolved step left to undo"})
    if isinstance(exc, StaleRevision):
        return RpcError(STALE_REVISION, MESSAGES[STALE_REVISION], {"revision": exc.revision})
    if isinstance(exc, RecursionError):
        # JSON nested nearly as deep as the parser allows: checking it ran out of stack.
        return invalid_params([Problem("", "the params are nested too deeply to check")])
    if isinstance(exc, StoreUnavailable):
        # The store rolled back: the caller may retry once the disk has room again, but
        # not while the store's files are gone from under the daemon (exc.retry false).
        error_id = logged_error_id(log, "store unavailable: %s", exc, exc_info=False,
                                   method=method)
        return RpcError(STORE_UNAVAILABLE, MESSAGES[STORE_UNAVAILABLE],
                        {"error_id": error_id, "retry": exc.retry})
    if isinstance(exc, MethodError) and type(exc.code) is int and exc.code in declared:
        return plugin_error(exc, method)
    if isinstance(exc, MethodError):
        # A code the method does not declare, or raised where no method declares any
        # (a plugin system's resolve): a fault of the plugin's.
        return internal_error(method, "plugin method error %r not answered: the method "
                                      "does not declare it (MethodSpec.errors)", exc.code)
    return internal_error(method)
