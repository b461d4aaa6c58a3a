"""``revised-2e``: AD&D 2nd edition Dark Sun revised psionic combat (RULES.md §1).

``SYSTEM`` is the instance the daemon loads; ``Revised2e(tables)`` builds one with a
GM's replacement tables.
"""

from __future__ import annotations

from .system import Revised2e

SYSTEM = Revised2e()

__all__ = ["SYSTEM", "Revised2e"]
