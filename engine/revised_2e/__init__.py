"""``revised-2e``: AD&D 2nd edition Dark Sun revised psionic combat (RULES.md §1).

``SYSTEM`` is the instance the daemon loads; ``Revised2e(tables)`` builds one with a
GM's replacement for ``data/tables.json`` (checked against ``data/tables.schema.json``).

Besides the ``System`` interface, ``SYSTEM`` offers pure helpers on full combatants:
``recover(c, hours)``, ``attacks_per_round(c, round)``, ``end_of_round(c, dice)``,
``roll_mac(c, dice)`` and ``quick_mac(intelligence, "high"|"low", dice)``, and
``exact_odds(request)`` (the odds as ``Fraction``s).

Module map: ``tables`` (look-ups over the data), ``house`` (H-2E-… defaults),
``combatants`` (schema and derivations), ``rules`` (pure rule functions and the open mind
from round to round), ``exchange`` (one attack), ``chances`` (exact odds), ``encounter``
(rounds), ``text`` (summaries), ``system`` (the ``System`` subclass).
"""

from __future__ import annotations

from .system import Revised2e

SYSTEM = Revised2e()

__all__ = ["SYSTEM", "Revised2e"]
