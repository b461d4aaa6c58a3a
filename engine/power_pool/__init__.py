"""``power-pool``: power pool dice contests (RULES.md §3, seed 001_e8815498f41c4da8).

Each side rolls its current pool of hit-die-type dice; the higher total wins, ties
go to the defender; the winner takes psionic control of the loser's mind.
"""

from __future__ import annotations

from .core import PowerPoolSystem

SYSTEM = PowerPoolSystem()

__all__ = ["SYSTEM", "PowerPoolSystem"]
