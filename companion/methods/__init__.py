"""The core methods, one module per namespace (``encounter.add`` is in ``encounter.py``).

``CORE`` is built at import: a duplicate name or a schema that does not compile stops
the daemon here, not on some later request.
"""

from __future__ import annotations

from ..registry import MethodRegistry
from . import adapters, companion, dice, encounter, exchange, rpc, systems

CORE = MethodRegistry([
    *rpc.METHODS,
    *companion.METHODS,
    *systems.METHODS,
    *adapters.METHODS,
    *exchange.METHODS,
    *encounter.METHODS,
    *dice.METHODS,
])
