"""Typed look-ups over the revised-2e rules tables (``data/tables.json``).

The tables are data a GM may replace; this module only reads them. Every figure the
rules use comes through here, so no number of RULES.md §1 lives in code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from engine.errors import InvalidInput, Problem
from engine.tables import load_tables

PACKAGE = "engine.revised_2e"


def band_lookup(bands: Sequence[Mapping[str, Any]], value: int, path: str) -> Mapping[str, Any]:
    """The band of ``bands`` holding ``value``; a gap in a GM's table is invalid input."""
    for band in bands:
        top = band["max"]
        if band["min"] <= value and (top is None or value <= top):
            return band
    raise InvalidInput.at(path, f"{value} is not covered by the rules table")


@dataclass(frozen=True)
class Tables:
    """The loaded tables (``raw`` is the validated JSON) with the look-ups the rules need."""

    raw: Mapping[str, Any]

    @staticmethod
    def load(data: Any | None = None) -> Tables:
        """Load the shipped tables, or ``data`` (a GM's replacement), and check them."""
        raw = load_tables(PACKAGE, data)
        tables = Tables(raw)
        tables._check_cross_references()
        return tables

    def _check_cross_references(self) -> None:
        # What JSON Schema cannot say: every attack meets every defense in Table 76.
        problems = []
        for attack in self.attacks:
            row = self.raw["attack_vs_defense"].get(attack)
            if row is None:
                problems.append(Problem(f"/tables/attack_vs_defense/{attack}",
                                        "missing row for this attack mode"))
                continue
            for defense in self.defenses:
                if defense not in row:
                    problems.append(Problem(f"/tables/attack_vs_defense/{attack}/{defense}",
                                            "missing modifier for this defense mode"))
        if self.raw["save_paralyzation"]["monster_group"] not in self.raw[
                "save_paralyzation"]["groups"]:
            problems.append(Problem("/tables/save_paralyzation/monster_group",
                                    "names no group of the table"))
        if problems:
            raise InvalidInput(problems)

    # -- modes ----------------------------------------------------------------------
    @property
    def attacks(self) -> Mapping[str, Any]:
        """Attack modes by id (cost, damage, failed cost, ranges)."""
        return self.raw["attacks"]  # type: ignore[no-any-return]

    @property
    def defenses(self) -> Mapping[str, Any]:
        """Defense modes by id (cost per round)."""
        return self.raw["defenses"]  # type: ignore[no-any-return]

    def attack_cost(self, mode: str) -> int:
        """PSPs per step of attack ``mode``."""
        return int(self.attacks[mode]["cost"])

    def defense_cost(self, mode: str) -> int:
        """PSPs per round of defense ``mode``."""
        return int(self.defenses[mode]["cost"])

    def damage_die(self, mode: str) -> tuple[int, int]:
        """(sides, bonus) of one step of ``mode``'s damage."""
        damage = self.attacks[mode]["damage"]
        return int(damage["sides"]), int(damage["bonus"])

    def failed_cost(self, mode: str, declared: int) -> int:
        """PSPs paid for a missed attack: the mode's fraction of the declared PSPs, rounded
        down (all shipped costs are even, so half is exact)."""
        fraction = self.attacks[mode]["failed_cost"]
        return declared * int(fraction["numerator"]) // int(fraction["denominator"])

    def ranges(self, mode: str) -> Mapping[str, int]:
        """Range bands of ``mode`` in yards (psychic crush has one)."""
        return self.attacks[mode]["ranges"]  # type: ignore[no-any-return]

    def modifier(self, attack: str, defense: str | None) -> int:
        """Table 76: added to the attacker's d20; 0 when no defense is raised."""
        if defense is None:
            return 0
        return int(self.raw["attack_vs_defense"][attack][defense])

    def mode_name(self, mode: str) -> str:
        """The words for a mode id in summaries ("mind thrust")."""
        entry = self.attacks.get(mode) or self.defenses.get(mode)
        return str(entry["name"]) if entry else mode

    # -- the attack roll ---------------------------------------------------------------
    @property
    def attack_roll(self) -> Mapping[str, Any]:
        """The d20 roll: faces, automatic miss/hit, open-mind bonus, range steps."""
        return self.raw["attack_roll"]  # type: ignore[no-any-return]

    def range_improvement(self, band: str) -> int:
        """How much the target's MAC improves at range ``band``."""
        return int(self.attack_roll["range_mac_improvement"][band])

    @property
    def critical_naturals(self) -> frozenset[int]:
        """Natural rolls that can be critical mental hits (18–20)."""
        return frozenset(int(n) for n in self.raw["critical"]["naturals"])

    @property
    def critical_margin(self) -> int:
        """By how much the roll must beat the needed number (5)."""
        return int(self.raw["critical"]["margin"])

    @property
    def open_without_save(self) -> Fraction:
        """Share of the PSP maximum that opens a mind with no save (1/4)."""
        f = self.raw["critical"]["open_without_save"]
        return Fraction(int(f["numerator"]), int(f["denominator"]))

    # -- abilities -------------------------------------------------------------------------
    def int_bonus(self, intelligence: int, path: str = "/int") -> int:
        """MTHAC0 bonus for Intelligence ``intelligence``."""
        return int(band_lookup(self.raw["int_bonus"], intelligence, path)["bonus"])

    def ability_row(self, score: int, path: str) -> Mapping[str, Any]:
        """The Table 74 row for an ability score."""
        return band_lookup(self.raw["abilities"], score, path)

    def clamp_mac(self, mac: int) -> int:
        """A MAC kept between the best (−10) and worst (10) values."""
        limits = self.raw["mac_limits"]
        return max(int(limits["best"]), min(int(limits["worst"]), mac))

    # -- saves, rates, known modes ---------------------------------------------------------
    def save_rows(self, group: str) -> Sequence[Mapping[str, Any]]:
        """Save bands of a class group (monsters use the monster group)."""
        groups = self.raw["save_paralyzation"]["groups"]
        if group == "monster":
            group = self.raw["save_paralyzation"]["monster_group"]
        return groups[group]  # type: ignore[no-any-return]

    @property
    def save_die(self) -> int:
        """Faces of the save vs. paralyzation die (d20)."""
        return int(self.raw["save_paralyzation"]["sides"])

    @property
    def open_mind(self) -> Mapping[str, Any]:
        """Figures of the open mind: durations, closing costs, checks, effects."""
        return self.raw["open_mind"]  # type: ignore[no-any-return]

    def effect(self, mode: str) -> Mapping[str, Any] | None:
        """The effect of ``mode`` on a mind already open, if any."""
        return self.open_mind["effects"].get(mode)  # type: ignore[no-any-return]
