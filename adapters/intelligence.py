"""Monster Intelligence given as words, as stat blocks print it ("Average (8-10)", "Semi-",
"21+ (Godlike)"), read as a score.

The bands and the words naming them are data (``adapters/data/intelligence.json``,
checked against its schema when first loaded). The rule, docs/ADAPTERS.md: a number the
text states is used (a range's lowest: "8-10" is 8, "21+" is 21); else the lowest score of
the band it names (of the lower band when it names two, "Low to average" is 5). The
lowest, because it is the one score the stat block promises every creature of the kind,
and a whole number in every band; a GM who wants another sets the creature's own
``int`` in the psionic state store.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

from engine.errors import json_text
from engine.schemacheck import Validator

from .core import FIELDS, Binding, Draft, to_text

#: longest text read as an Intelligence (a stat block's line, not a description)
MAX_INT_TEXT: Final = 200
# One number or range a stat block states: "8-10", "8 to 10", "21+", "0".
_NUMBERS = re.compile(r"(\d{1,3})\s*(?:(?:-|to)\s*(\d{1,3})|(\+))?")
_DASHES = re.compile("[\u2010-\u2015\u2212]")
_PUNCTUATION = re.compile(r"[(),;/:.]")
_WORD = re.compile(r"[a-z-]{1,60}")


@dataclass(frozen=True)
class Band:
    """One row of the Intelligence table: its name and lowest and highest score."""

    name: str
    lo: int
    hi: int

    def __str__(self) -> str:
        span = str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"
        return f"{self.name} ({span})"


@dataclass(frozen=True)
class _Table:
    words: dict[str, Band]
    fillers: frozenset[str]


@cache
def _table() -> _Table:
    """The Intelligence table, checked against its schema; a word naming two bands, or a
    band whose lowest score is above its highest, is refused at load."""
    folder = resources.files(__package__).joinpath("data")
    raw: Any = json.loads(folder.joinpath("intelligence.json").read_text(encoding="utf-8"))
    schema = json.loads(folder.joinpath("intelligence.schema.json").read_text(encoding="utf-8"))
    Validator.check_schema(schema)
    Validator(schema).validate(raw)
    words: dict[str, Band] = {}
    for row in raw["bands"]:
        band = Band(row["band"], row["min"], row["max"])
        if band.lo > band.hi:
            raise ValueError(f"intelligence.json: band {band.name} has min above max")
        for word in row["words"]:
            if word in words or word in raw["fillers"]:
                raise ValueError(f"intelligence.json: the word {word!r} names two things")
            words[word] = band
    return _Table(words, frozenset(raw["fillers"]))


def _bands(text: str) -> list[Band] | None:
    """The bands the words of ``text`` name, in order; ``None`` when a word is neither a
    band's nor a filler. Hyphens are dropped ("Supra-genius", "Semi-"), and a hyphenated
    word no band has is read as its parts ("low-average")."""
    table = _table()
    found: list[Band] = []
    for token in text.split():
        if not _WORD.fullmatch(token):
            return None
        joined = token.replace("-", "")
        parts = [joined] if joined in table.words or joined in table.fillers \
            else [part for part in token.split("-") if part]
        for part in parts:
            band = table.words.get(part)
            if band is None and part not in table.fillers:
                return None
            if band is not None and band not in found:
                found.append(band)
    return found


def read_intelligence(text: str) -> tuple[int, str] | None:
    """The score a stat block's Intelligence text gives and how it was read ("the lowest
    of the stated 8-10"); ``None`` when the text is not such an Intelligence (a word no
    band has, two numbers, more than two bands)."""
    if len(text) > MAX_INT_TEXT:
        return None
    compact = _DASHES.sub("-", text.strip().lower())
    numbers = list(_NUMBERS.finditer(compact))
    if len(numbers) > 1:
        return None
    rest = compact
    if numbers:
        rest = compact[:numbers[0].start()] + " " + compact[numbers[0].end():]
    bands = _bands(_PUNCTUATION.sub(" ", rest))
    if bands is None or len(bands) > 2 or not (bands or numbers):
        return None
    if numbers:
        first, second, plus = numbers[0].groups()
        lo = int(first)
        if plus:
            return lo, f"the lowest of the stated {lo}+"
        if second is None:
            return lo, f"the stated {lo}"
        hi = int(second)
        return min(lo, hi), f"the lowest of the stated {first}-{second}"
    low = min(bands, key=lambda band: band.lo)
    if len(bands) == 1:
        what = f"the band {low}" if low.lo == low.hi else f"the lowest of the band {low}"
        return low.lo, what
    return low.lo, f"the lowest of the bands {bands[0]} to {bands[1]}"


def intelligence_score(draft: Draft, value: Any, path: str, where: str) -> int | None:
    """The score a monster's Intelligence text gives (``value`` at ``path``, kept by the
    sheet in ``where``), with a warning saying what it was read as. ``None`` for empty
    text, and for text that is no Intelligence, which is warned about (the caller falls
    back to the sheet's score). Text too long for any sheet, or a value that is not
    text, is ``InvalidInput``."""
    text = to_text(value, path)
    if text is None or not text.strip():
        return None
    shown = json_text(text.strip(), 60)
    found = read_intelligence(text)
    if found is None:
        draft.warn(f"{where} {shown} is not an Intelligence this adapter reads (a number, "
                   "a range such as 8-10, or the Monstrous Manual's words non-, animal, "
                   "semi-, low, average, very, high, exceptional, genius, supra-genius, "
                   "godlike); not read")
        return None
    number, how = found
    # the lowest score the system's combatant has: 1 in revised-2e, 0 in combat-strength
    # (its Psionic Wave counts Int + Wis from 0, RULES.md §2.7), where 0 stays 0
    score = FIELDS[draft.system].get("int")
    lowest = 1 if score is None or score.lo is None else score.lo
    if number > 25:
        how += ", above the tables' 25: used as 25"
        number = 25
    elif number < lowest:
        how += f", used as {lowest}: the lowest score a {draft.system} combatant has"
        number = lowest
    draft.warn(f"Int {number} read from {where} {shown}: {how} ({draft.store('int')} "
               "sets it)")
    return number


def text_intelligence(draft: Draft, value: Any, path: str, where: str) -> bool:
    """Read a monster's Intelligence text into the draft's ``int`` (``intelligence_score``);
    true when it was read."""
    if "int" not in FIELDS[draft.system]:
        return False
    number = intelligence_score(draft, value, path, where)
    if number is None:
        return False
    draft.put("int", number, Binding("", writable=False))
    return True
