"""The combat-strength tables (data, checked at load) and the house defaults.

Every number lives in ``data/tables.json``; this module only reads it. The
schema fixes the shape and the mode ids; ``Tables`` adds the cross-checks a JSON
Schema cannot express (every band has a row, every letter has a reading, ...), so
a GM's replacement table fails at load with a path instead of mid-combat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput, Problem, json_text
from ..options import HouseRule
from ..tables import load_tables

PACKAGE = "engine.combat_strength"

#: The stances of the intent phase (RULES.md 2.3 step 1).
STANCES: tuple[str, ...] = ("trance", "discipline", "wave", "normal")
RANGES: tuple[str, ...] = ("short", "medium", "long")

#: The one mode the seed lets a non-psionic be attacked with, and the one defense
#: allowed outside trance or while attacking with psychic-implosion (seed step 3.i).
WAVE_MODE = "psionic-wave"
IMPLOSION_MODE = "psychic-implosion"
SHIELD_MODE = "shield-thoughts"

#: Ids of the house defaults (RULES.md section 2).
H_TABLE = "H-CS-TABLE"
H_DEFENSELESS = "H-CS-DEFENSELESS"
H_IMPLOSION = "H-CS-IMPLOSION"
H_PEN_CAP = "H-CS-PEN-CAP"
H_WAVE_ROUND = "H-CS-WAVE-ROUND"

TABLE_BONUS_DICE = "bonus-dice"
TABLE_FULL_MATRIX = "full-matrix"

HOUSE_RULES: tuple[HouseRule, ...] = (
    HouseRule(
        H_TABLE,
        "Psionic combat table: 'bonus-dice' uses the 1e matrix band 01-25 plus the seed's "
        "bonus dice; 'full-matrix' uses the band of the attacker's Combat Strength and no "
        "bonus dice (range then changes no damage; a Psionic Wave's save against a "
        "non-psionic still counts it).",
        TABLE_BONUS_DICE, (TABLE_BONUS_DICE, TABLE_FULL_MATRIX)),
    HouseRule(
        H_DEFENSELESS,
        "Defenseless targets use the 1e defenseless table as printed, letters read as "
        "conditions (tables: defenseless.letters), no bonus dice; false adds the bonus "
        "dice to its numbers.",
        True),
    HouseRule(
        H_IMPLOSION,
        "Psychic Implosion is 1e psychic crush: it deals the bonus dice only and its table "
        "value is the percentage chance (d100) to crush the mind (defense strength to 0); "
        "false reads its combat table value as points like the other modes (against a "
        "defenseless mind its row is always the chance of death the table prints).",
        True),
    HouseRule(
        H_PEN_CAP,
        "Penetrating damage dice stop after this many follow-up dice per die (0-100); the "
        "result says when the cap was reached.",
        100, tuple(range(0, 101))),
    HouseRule(
        H_WAVE_ROUND,
        "A combatant in the 'wave' stance makes one Psionic Wave against non-psionic "
        "targets per round, in the segment it chooses; false allows one per segment.",
        True),
)


@dataclass(frozen=True)
class Mode:
    """An attack or defense mode: id, display name, cost in attack strength."""

    id: str
    name: str
    cost: int
    equivalent_1e: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "cost": self.cost,
                "equivalent_1e": self.equivalent_1e}


@dataclass(frozen=True)
class Duration:
    """How long a letter condition lasts: ``count`` d``sides`` ``unit``."""

    count: int
    sides: int
    unit: str


@dataclass(frozen=True)
class Letter:
    """The reading of one letter code of the defenseless table."""

    letter: str
    condition: str
    duration: Duration | None


def _band_problems(bands: Sequence[Mapping[str, Any]], path: str) -> list[Problem]:
    problems = []
    ids = [b["id"] for b in bands]
    if len(set(ids)) != len(ids):
        problems.append(Problem(path, "band ids must be unique"))
    last: int | None = None
    for i, band in enumerate(bands):
        top = band["max"]
        if top is None and i != len(bands) - 1:
            problems.append(Problem(f"{path}/{i}/max", "only the last band may be open (null)"))
        if top is not None and last is not None and top <= last:
            problems.append(Problem(f"{path}/{i}/max", "band maxima must increase"))
        if top is not None:
            last = top
    return problems


def _percent_problems(path: str, cells: Iterable[tuple[int | str, Any]]) -> list[Problem]:
    """A percent row's cells (``(key, cell)`` under ``path``) that are not percentages: a
    d100 chance above 100 would always succeed, so table A and table B refuse it alike."""
    return [Problem(f"{path}/{key}", "a percentage is at most 100")
            for key, cell in cells if isinstance(cell, int) and cell > 100]


def find_band(bands: Sequence[Mapping[str, Any]], value: int) -> int:
    """Index of the band holding ``value``: the first whose max is ≥ it (or open).

    A value beyond a closed last band counts as the last band.
    """
    for i, band in enumerate(bands):
        if band["max"] is None or value <= band["max"]:
            return i
    return len(bands) - 1


class Tables:
    """Typed, cross-checked access to the combat-strength tables."""

    def __init__(self, data: Any | None = None) -> None:
        raw = load_tables(PACKAGE, data)
        self.data: dict[str, Any] = raw
        self.attacks: dict[str, Mode] = {
            m["id"]: Mode(m["id"], m["name"], m["cost"], m["equivalent_1e"])
            for m in raw["modes"]["attacks"]}
        self.defenses: dict[str, Mode] = {
            m["id"]: Mode(m["id"], m["name"], m["cost"], m["equivalent_1e"])
            for m in raw["modes"]["defenses"]}
        bonus = raw["bonus_dice"]
        self.bonus_per: int = bonus["per"]
        self.bonus_max: int = bonus["max"]
        self.bonus_sides: int = bonus["sides"]
        self.range_penalty: dict[str, int] = dict(bonus["range_penalty"])
        self.bands: list[dict[str, Any]] = raw["bands"]
        self.combat: dict[str, Any] = raw["combat"]
        self.defenseless: dict[str, Any] = raw["defenseless"]
        self.wave: dict[str, Any] = raw["wave"]
        self.conditions: dict[str, Any] = raw["conditions"]
        self.duration_units: dict[str, int | None] = raw["duration_units"]
        self.letters: dict[str, Letter] = {
            k: Letter(k, v["condition"], None if v["duration"] is None else Duration(
                v["duration"]["count"], v["duration"]["sides"], v["duration"]["unit"]))
            for k, v in raw["defenseless"]["letters"].items()}
        problems = self._cross_check()
        if problems:
            raise InvalidInput(problems)

    def _cross_check(self) -> list[Problem]:
        p: list[Problem] = []
        for kind in ("attacks", "defenses"):
            ids = [m["id"] for m in self.data["modes"][kind]]
            if len(set(ids)) != len(ids):
                p.append(Problem(f"/tables/modes/{kind}", "mode ids must be unique"))
        band_ids = [b["id"] for b in self.bands]
        p += _band_problems(self.bands, "/tables/bands")
        p += _band_problems(self.defenseless["defender_bands"],
                            "/tables/defenseless/defender_bands")
        p += _band_problems(self.wave["int_wis_bands"], "/tables/wave/int_wis_bands")
        if self.combat["default_band"] not in band_ids:
            p.append(Problem("/tables/combat/default_band",
                             f"must be one of {json_text(band_ids)}"))
        for name in ("combat", "defenseless"):
            if sorted(self.data[name]["matrix"]) != sorted(band_ids):
                p.append(Problem(f"/tables/{name}/matrix",
                                 f"needs exactly the bands {json_text(band_ids)}"))
        width = len(self.defenseless["defender_bands"])
        percent = self.defenseless["percent_modes"]
        for band, rows in self.defenseless["matrix"].items():
            for mode, row in rows.items():
                path = f"/tables/defenseless/matrix/{band}/{mode}"
                if len(row) != width:
                    p.append(Problem(path, f"needs {width} values, one per defender band"))
                for i, cell in enumerate(row):
                    if isinstance(cell, str) and cell not in self.letters:
                        p.append(Problem(f"{path}/{i}", f"letter {json_text(cell)} has no reading"))
                if mode in percent:
                    p += _percent_problems(path, enumerate(row))
        for band, rows in self.combat["matrix"].items():
            for mode in self.combat["percent_modes"]:
                p += _percent_problems(f"/tables/combat/matrix/{band}/{mode}",
                                       rows.get(mode, {}).items())
        for mode, letter in percent.items():
            if letter not in self.letters:
                p.append(Problem(f"/tables/defenseless/percent_modes/{mode}",
                                 f"letter {json_text(letter)} has no reading"))
        for key, letter in self.letters.items():
            path = f"/tables/defenseless/letters/{key}"
            if letter.condition not in self.conditions:
                p.append(Problem(f"{path}/condition",
                                 f"unknown condition {json_text(letter.condition)}"))
            if letter.duration is not None and letter.duration.unit not in self.duration_units:
                p.append(Problem(f"{path}/duration/unit", "unknown unit"))
        wave_ids = sorted(b["id"] for b in self.wave["int_wis_bands"])
        for part in ("save", "effects"):
            if sorted(self.wave[part]) != wave_ids:
                p.append(Problem(f"/tables/wave/{part}",
                                 f"needs exactly the bands {json_text(wave_ids, 200)}"))
        for band, effects in self.wave["effects"].items():
            tops = [e["max"] for e in effects]
            if tops != sorted(set(tops)) or tops[-1] != 100:
                p.append(Problem(f"/tables/wave/effects/{band}",
                                 "maxima must increase and end at 100"))
            for i, e in enumerate(effects):
                if e["condition"] not in self.conditions:
                    p.append(Problem(f"/tables/wave/effects/{band}/{i}/condition",
                                     f"unknown condition {json_text(e['condition'])}"))
        return p

    # -- lookups ----------------------------------------------------------------------
    def band(self, value: int) -> str:
        """The attacker band (01-25 ...) holding ``value``."""
        return str(self.bands[find_band(self.bands, value)]["id"])

    def combat_value(self, band: str, mode: str, defense: str) -> int:
        """Table A: points (or a percentage for a percent mode); the dash reads 0."""
        cell = self.combat["matrix"][band][mode][defense]
        return 0 if cell is None else int(cell)

    def combat_percent(self, mode: str) -> bool:
        return mode in self.combat["percent_modes"]

    def defender_band(self, original_total: int) -> tuple[int, str]:
        bands = self.defenseless["defender_bands"]
        i = find_band(bands, original_total)
        return i, str(bands[i]["id"])

    def defenseless_value(self, band: str, mode: str, column: int) -> int | str:
        """Table B: points, a letter, or (percent modes) a percentage."""
        cell = self.defenseless["matrix"][band][mode][column]
        return cell if isinstance(cell, str) else int(cell)

    def defenseless_percent_letter(self, mode: str) -> str | None:
        letter = self.defenseless["percent_modes"].get(mode)
        return None if letter is None else str(letter)

    def wave_band(self, int_wis: int) -> str:
        bands = self.wave["int_wis_bands"]
        return str(bands[find_band(bands, int_wis)]["id"])

    def wave_save(self, band: str, range_: str) -> int:
        return int(self.wave["save"][band][range_])

    def wave_effects(self, band: str) -> list[tuple[int, str]]:
        """Table C effects: (highest d100 roll, condition) in order."""
        return [(int(e["max"]), str(e["condition"])) for e in self.wave["effects"][band]]

    def wave_effect(self, band: str, roll: int) -> str:
        for top, condition in self.wave_effects(band):
            if roll <= top:
                return condition
        return self.wave_effects(band)[-1][1]

    def incapacitates(self, condition: str) -> bool:
        info = self.conditions.get(condition)
        return bool(info and info["incapacitates"])

    def kills(self, condition: str) -> bool:
        """Whether ``condition`` means the creature is dead (its ``kills`` flag): a
        replacement file written before the flag, or a condition the tables do not know,
        kills nobody."""
        info = self.conditions.get(condition)
        return bool(info and info.get("kills", False))

    def condition_clause(self, name: str, condition: str) -> str:
        """``name`` with ``condition``, in the table's words (its ``predicate``): "Vora
        suffers permanent insanity", "Orm is in a coma"; one the tables do not know
        (another system's) reads "Orm is stunned"."""
        return f"{name} {self._predicate(condition)}"

    def condition_ended(self, name: str, condition: str) -> str:
        """The summary's sentence for ``condition`` ending, in the table's words: "Orm is
        no longer dazed.", "Orm is no longer in a coma.", "Orm's temporary insanity
        ends."."""
        predicate = self._predicate(condition)
        if predicate.startswith("is "):
            return f"{name} is no longer {predicate.removeprefix('is ')}."
        return f"{name}'s {self.conditions[condition]['text']} ends."

    def _predicate(self, condition: str) -> str:
        info = self.conditions.get(condition)
        if not info:
            return f"is {condition}"
        # a replacement file written before predicates: "is" and the condition's text
        return str(info.get("predicate") or f"is {info['text']}")

    def unit_rounds(self, unit: str) -> int | None:
        return self.duration_units.get(unit)

    def duration_sides(self) -> list[int]:
        return sorted({d.duration.sides for d in self.letters.values() if d.duration})
