"""``combat-strength``: attack and defense strength, ten segments a round, penetrating
damage dice (RULES.md section 2, seed 000).

``SYSTEM`` is the instance the daemon loads; ``CombatStrength(tables)`` builds one
with a GM's replacement tables (same schema as ``data/tables.json``).
"""

from __future__ import annotations

from .system import CombatStrength

SYSTEM = CombatStrength()

__all__ = ["SYSTEM", "CombatStrength"]
