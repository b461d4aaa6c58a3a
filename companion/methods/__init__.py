"""The core methods, one module per namespace (``encounter.add`` is in ``encounter.py``).

``CORE`` is built at import: a duplicate name or a handler that is not ``async`` stops
the daemon here, not on some later request. Its schemas are checked against the
meta-schema by the tests (``tests/companion/test_methods.py``), not at every start.
"""

from __future__ import annotations

from ..registry import MethodRegistry
from . import adapters, combatants, companion, dice, encounter, exchange, rpc, systems

CORE = MethodRegistry([
    *rpc.METHODS,
    *companion.METHODS,
    *systems.METHODS,
    *adapters.METHODS,
    *exchange.METHODS,
    *combatants.METHODS,
    *encounter.METHODS,
    *dice.METHODS,
], core=True)
