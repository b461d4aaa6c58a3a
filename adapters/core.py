"""What every adapter shares: the combatant fields of the three systems, typed readers
that turn hostile VTT data into ``InvalidInput`` with JSON Pointer paths, the draft a
combatant is assembled in, and the diff that turns before/after into write-backs.

A *binding* records where a combatant field was read from (a Foundry dotted path or a
Roll20 attribute and its part), so ``updates`` writes a changed field back to exactly
that place and never to a place the adapter did not read.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from itertools import groupby
from typing import Any, Final

from engine.errors import EngineError, InvalidInput, json_text, pointer
from engine.revised_2e.rules import best_save_paralyzation
from engine.revised_2e.tables import Tables

from .base import Imported

SYSTEMS: Final = ("revised-2e", "combat-strength", "power-pool")

# Mode ids are fixed by RULES.md (§1.2, §2.2, §3.3); sheets hold free-text names.
ATTACKS: Final[dict[str, frozenset[str]]] = {
    "revised-2e": frozenset({"ego-whip", "id-insinuation", "mind-thrust", "psionic-blast",
                             "psychic-crush"}),
    "combat-strength": frozenset({"psionic-wave", "mind-thrust", "ego-whip", "id-insinuation",
                                  "psychic-implosion"}),
    "power-pool": frozenset({"mental-stab", "personality-invasion", "psionic-wave",
                             "subconscious-subversion", "synaptic-overload"}),
}
DEFENSES: Final[dict[str, frozenset[str]]] = {
    "revised-2e": frozenset({"intellect-fortress", "mental-barrier", "mind-blank",
                             "thought-shield", "tower-of-iron-will"}),
    "combat-strength": frozenset({"mind-blank", "shield-thoughts", "mental-barrier",
                                  "intellect-fortress", "tower-of-iron-will"}),
    "power-pool": frozenset({"barrier-mantra", "blank-mind", "cognitive-labyrinth",
                             "imagination-swarm", "pinnacle-of-will"}),
}
# Names the other editions print for the same mode (1e "psionic blast" is this
# system's psionic wave, RULES.md §2.2; "thought shield" is 1e "shield thoughts").
ALIASES: Final[dict[str, dict[str, str]]] = {
    "revised-2e": {"shield-thoughts": "thought-shield", "thoughtshield": "thought-shield"},
    "combat-strength": {"psionic-blast": "psionic-wave", "thought-shield": "shield-thoughts",
                        "psychic-crush": "psychic-implosion"},
    "power-pool": {},
}

KINDS: Final = ("psionicist", "wild-talent", "nonpsionic")
CLASS_GROUPS: Final = ("warrior", "priest", "rogue", "wizard", "psionicist", "monster")
DICE: Final = (4, 6, 8, 10, 12, 20)


# Class words (RULES.md table 1.7's groups), matched against the whole words of a name: a
# key ending in "*" is a stem that also matches the words it begins (psion → psionicist,
# priest → priestess), the others only the word itself or its plural with an "s" or,
# after an s, "es" ("Fighters", "Sorceresses"), so "bard" is not read in "Bombardier" nor
# "monk" in "Monkey Handler", and a compound or an irregular form is a word of its own
# ("archmage", "thieves", "svirfnebli"): an ending read as a class would read "Image" and
# "Damage" as mages. "magic user" is two words: the 1e books' "Magic User" and
# "Magic-User" read alike.
_CLASS_WORDS: Final = {
    "psion*": "psionicist",
    "fighter": "warrior", "barbarian": "warrior", "paladin": "warrior",
    "ranger": "warrior", "warrior": "warrior",
    "cleric": "priest", "druid": "priest", "priest*": "priest",
    "rogue": "rogue", "thief": "rogue", "bard": "rogue", "monk": "rogue",
    "assassin": "rogue",
    "wizard": "wizard", "magic user": "wizard", "mage": "wizard", "sorcerer": "wizard",
    "warlock": "wizard", "illusionist": "wizard", "artificer": "wizard",
    # the specialist wizards of the AD&D 2E Revised sheet's class list, and the Dark Sun
    # classes (the setting revised-2e comes from)
    "abjurer": "wizard", "conjurer": "wizard", "diviner": "wizard", "enchanter": "wizard",
    "invoker": "wizard", "necromancer": "wizard", "transmuter": "wizard",
    "defiler": "wizard", "preserver": "wizard",
    "gladiator": "warrior", "templar": "priest", "trader": "rogue",
    # the 1e Unearthed Arcana cavalier, a class of its own (a fighter subclass); 2e's
    # Cavalier is a kit of warriors only, so written beside a class ("Paladin
    # (Cavalier)") it adds no group the class lacks
    "cavalier": "warrior",
    # compounds and forms a GM writes for the classes above
    "archmage": "wizard", "battlemage": "wizard", "warmage": "wizard",
    "sorceress": "wizard", "enchantress": "wizard", "warpriest": "priest",
    "druidess": "priest", "thieves": "rogue",
}
# Titles: the knight, a BECMI fighter's title and a 2e warrior kit, but also a title or
# order any class is given ("Cleric (Knight)", "Knights Templar", "Mage (Knight of the
# Post)"), so a class only when no class word is written beside it.
_TITLE_WORDS: Final = {"knight": "warrior"}
# Races that are classes (BECMI, OSE and OSE Advanced Fantasy's drow, duergar, gnome,
# half-elf, half-orc and svirfneblin): a class only when no class word is written beside
# them, as in "Half-elf Cleric" the race is the elf and the class the cleric. Each fights
# as a fighter does, the elf's spells and the half-orc's thief skills aside: warriors.
_RACE_CLASS_WORDS: Final = {
    "dwarf": "warrior", "dwarves": "warrior", "elf": "warrior", "elves": "warrior",
    "halfling": "warrior", "drow": "warrior", "duergar": "warrior", "gnome": "warrior",
    "half orc": "warrior", "svirfneblin": "warrior", "svirfnebli": "warrior",
}


@cache
def shipped_tables() -> Tables:
    """revised-2e's shipped rules tables, loaded once: the figures an adapter derives
    or quotes are the engine's own (a GM's replacement tables, which only the daemon
    knows, aside)."""
    return Tables.load()


#: A class word as matched: its words, whether the last is a stem, and its group.
_Key = tuple[tuple[str, ...], bool, str]


def _keys(words: Mapping[str, str]) -> tuple[_Key, ...]:
    return tuple((tuple(key.removesuffix("*").split()), key.endswith("*"), group)
                 for key, group in words.items())


_CLASS_KEYS: Final = _keys(_CLASS_WORDS)
_TITLE_KEYS: Final = _keys(_TITLE_WORDS)
_RACE_CLASS_KEYS: Final = _keys(_RACE_CLASS_WORDS)


def _groups_written(words: list[str], keys: tuple[_Key, ...]) -> tuple[str, ...]:
    """The group of each key found in ``words``, in the order written."""
    found = []
    for at in range(len(words)):
        for key, stem, group in keys:
            here = tuple(words[at:at + len(key)])
            if len(here) == len(key) and here[:-1] == key[:-1] and (
                    here[-1].startswith(key[-1]) if stem else _written(here[-1], key[-1])):
                found.append(group)
                break
    return tuple(found)


def _written(word: str, key: str) -> bool:
    """Whether ``word`` is ``key`` or its plural: with an "s", or "es" after an s
    ("Sorceresses")."""
    return word in (key, key + "s") or (key.endswith("s") and word == key + "es")


def _letter_runs(text: str) -> list[str]:
    """The runs of letters (Unicode category L) in ``text``: digits, "²", "①" and "™"
    are none, though a regular expression's ``\\w`` takes some of them."""
    return ["".join(run) for letter, run in
            groupby(text, key=lambda ch: unicodedata.category(ch).startswith("L"))
            if letter]


def _unaccented(text: str) -> str:
    """``text`` in lower case, its letters decomposed (NFD) and their accents (nonspacing
    marks) dropped: "Psiónicist" → "psionicist"; the Turkish dotless "ı" is "i" (the
    dotted "İ" is "i" and a dot above, dropped)."""
    return "".join(ch for ch in unicodedata.normalize("NFD", text.lower().replace("ı", "i"))
                   if unicodedata.category(ch) != "Mn")


def _shown(ch: str) -> str:
    """``ch`` as a reader sees it in a class name: a format character (Unicode category
    Cf: the soft hyphen, the zero-width joiner and non-joiner, a direction mark) is
    invisible, so nothing, and parts no word, but the zero-width space and the invisible
    separator (U+2063), there to part two words, are a space; a symbol whose
    compatibility form (NFKC) is one letter (the circled "Ⓕ", "F") is that letter. A
    symbol of several letters ("™", "TM") or a number (the Roman numeral "Ⅰ") stays as
    it is, none of a word's letters."""
    category = unicodedata.category(ch)
    if ch in ("\u200b", "\u2063"):
        return " "
    if category == "Cf":
        return ""
    if category == "So":
        plain = unicodedata.normalize("NFKC", ch)
        if len(plain) == 1 and unicodedata.category(plain).startswith("L"):
            return plain
    return ch


def _words(name: str) -> list[str]:
    """The words of a class name as it shows (``_shown``): its runs of letters without
    accents, each then in its compatibility form (NFKC: the ligature "ﬁghter" is
    "fighter"). The compatibility form is taken of a word only: of the whole name it
    would make letters of symbols beside a word and join them to it ("Fighter™" would be
    "fightertm", "Mage№2" "mageno")."""
    shown = "".join(_shown(ch) for ch in name)
    return [word for run in _letter_runs(_unaccented(shown))
            for word in _letter_runs(_unaccented(unicodedata.normalize("NFKC", run)))]


def class_groups(name: str) -> tuple[str, ...]:
    """The 2e class group (saving throw table 1.7) of each class a class name writes, in
    the order written, read by whole words (``_words``: runs of letters, accents
    dropped); a title (knight) counts only when no class is written, and a race that is
    a class (dwarf, elf, gnome ...) only when neither is."""
    words = _words(name)
    return (_groups_written(words, _CLASS_KEYS) or _groups_written(words, _TITLE_KEYS)
            or _groups_written(words, _RACE_CLASS_KEYS))


def class_group(name: str) -> str | None:
    """The 2e class group (saving throw table 1.7) a class name belongs to, if known: that
    of the first class it writes (``class_groups``)."""
    return next(iter(class_groups(name)), None)


@dataclass(frozen=True)
class FieldType:
    """How a combatant field is decoded from VTT data and encoded back."""

    kind: str  # int, bool, enum, modes, strings, object, array, ints, ref
    lo: int | None = None
    hi: int | None = None
    choices: tuple[Any, ...] = ()
    modes: str = ""  # "attacks" or "defenses" for kind "modes"


# PSPs and combat strengths: the combatants' own 0-100000 (MAX_PSP, the strengths' schema)
_INT0 = FieldType("int", 0, 100_000)
_SCORE = FieldType("int", 1, 25)
_HP = FieldType("int", -10_000, 1_000_000)
_MODES_A = FieldType("modes", modes="attacks")
_MODES_D = FieldType("modes", modes="defenses")
_STRINGS = FieldType("strings")
_BOOL = FieldType("bool")

#: Every combatant field an adapter reads or writes, per system (docs/COMBATANTS.md).
FIELDS: Final[dict[str, dict[str, FieldType]]] = {
    "revised-2e": {
        "kind": FieldType("enum", choices=KINDS),
        "level": FieldType("int", 0, 100),
        "class_group": FieldType("enum", choices=CLASS_GROUPS),
        "psp": _INT0, "psp_max": _INT0,
        "mthac0": FieldType("int", -100, 100),
        "int": _SCORE, "wis": _SCORE, "con": _SCORE,
        "mac": FieldType("int", -10, 10),
        "mental_armor": FieldType("int", 0, 20),
        "save_paralyzation": FieldType("int", 1, 20),
        "attacks": _MODES_A, "defenses": _MODES_D,
        "mind": FieldType("object"),
        "conditions": _STRINGS,
        "condition_rounds": FieldType("object"),
        "lost_powers": FieldType("array"),
        "quick_mac": FieldType("object"),
        "hp": _HP,
    },
    "combat-strength": {
        "attack_strength": _INT0, "attack_strength_max": _INT0,
        "defense_strength": _INT0, "defense_strength_max": _INT0,
        "original_total": _INT0,
        "psionic": _BOOL,
        # 0 too, as its combatant takes: Int + Wis of 5 or less is a band of the Psionic
        # Wave table (RULES.md §2.7)
        "int": FieldType("int", 0, 25), "wis": FieldType("int", 0, 25),
        "attacks": _MODES_A, "defenses": _MODES_D,
        "conditions": _STRINGS,
        "condition_rounds": FieldType("object"),
    },
    "power-pool": {
        "hit_dice": FieldType("int", 0, 1000),
        "die": FieldType("enum", choices=DICE),
        "pool": FieldType("int", 0, 1000),
        "dedicated": FieldType("array"),
        "psionic": _BOOL, "mindless": _BOOL,
        "attacks": _MODES_A, "defenses": _MODES_D,
        "conditions": _STRINGS,
        "condition_rounds": FieldType("object"),
        "controlled_by": FieldType("ref"),
        "controlling": FieldType("array"),
        "spell_levels": FieldType("ints", 1, 9),
        "blank_mind_save": FieldType("int", 2, 20),
        "hp": _HP,
    },
}
ALL_FIELDS: Final = tuple(sorted({name for fields in FIELDS.values() for name in fields}))

#: Fields written back only where they were read (never into the psionic state store),
#: because they belong to the VTT system's own data.
SHEET_ONLY: Final = frozenset({"hp"})

_INT_TEXT = re.compile(r"[+-]?\d{1,9}")
# Matched against text with all whitespace removed: no backtracking over runs of spaces.
# Hit Dice as rule books print them: "18d10+36", "4+1", "11+" (more than 11), "3*" (a
# special ability, for experience), "1/2" or "½" (less than one die).
_HD_TEXT = re.compile(
    r"(?:(?P<count>\d{1,4})|(?P<num>\d{1,3})/(?P<den>\d{1,3})|(?P<glyph>[½¼¾⅓⅔⅛])"
    r"|(?P<dec>0?\.\d{1,3}))(?:[dD](?P<die>\d{1,3}))?(?P<extra>[+-]\d{1,6})?"
    r"(?P<plus>\+)?(?P<stars>\*{1,3})?")
_DIE_TEXT = re.compile(r"\d{0,4}[dD](\d{1,3})(?:[+-]\d{1,6})?")
# One term of a roll formula as Foundry stores one (``(18d10) + 36``, ``2d8 + 1d6``,
# ``4d8 + @abilities.con.mod``), matched one at a time from the left: linear in the text.
_ROLL_TERM = re.compile(r"(?P<count>\d{0,4})[dD](?P<sides>\d{1,3})(?![0-9])"
                        r"|\d{1,9}(?:\.\d{1,3})?|@[A-Za-z0-9_.-]{1,100}|[-+*/()]")
_FRACTIONS: Final = {"½": Fraction(1, 2), "¼": Fraction(1, 4), "¾": Fraction(3, 4),
                     "⅓": Fraction(1, 3), "⅔": Fraction(2, 3), "⅛": Fraction(1, 8)}
_SPACE = re.compile(r"\s+")
MAX_TEXT = 100_000  # longest JSON text accepted in one Roll20 attribute


def check_system(system: Any, adapter_id: str) -> str:
    """``system`` if it is one an adapter can build; otherwise InvalidInput at /system."""
    if system not in SYSTEMS:
        raise InvalidInput.at("/system", f"adapter {adapter_id} builds combatants for "
                              f"{json_text(list(SYSTEMS))}, not {json_text(system)}")
    return str(system)


def type_name(value: Any) -> str:
    """A JSON name for the type of ``value`` (for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def need_object(value: Any, path: str) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else InvalidInput at ``path``."""
    if not isinstance(value, Mapping):
        raise InvalidInput.at(path, f"expected an object, got {type_name(value)}")
    return value


def need_list(value: Any, path: str) -> list[Any]:
    """``value`` if it is a JSON array, else InvalidInput at ``path``."""
    if not isinstance(value, list):
        raise InvalidInput.at(path, f"expected an array, got {type_name(value)}")
    return value


def dig(root: Mapping[str, Any], dotted: str, path: str = "") -> tuple[Any, str]:
    """The value at a dotted path under ``root`` (``None`` when any step is missing or
    null) and its JSON Pointer. A step that exists but is not an object is invalid."""
    value: Any = root
    for key in dotted.split("."):
        if value is None:
            return None, path
        value = need_object(value, path).get(key)
        path = pointer(path, key)
    return value, path


_ABSENT: Final = object()


def project(root: Mapping[str, Any], paths: Iterable[str]) -> dict[str, Any]:
    """What ``dig`` reads of ``root`` at each of the dotted ``paths``: a copy holding the
    objects along each path (with only the keys on a path) and the value at its end,
    whole. A path stops where a step is missing; a step that is not an object (null,
    or a value ``dig`` refuses) is kept as it is, so ``dig`` finds the same there.
    ``root`` is not changed; the values at the ends are shared with it."""
    out: dict[str, Any] = {}
    for dotted in paths:
        source: Mapping[str, Any] = root
        target = out
        *steps, last = dotted.split(".")
        for key in steps:
            if key not in source:
                break
            value = source[key]
            held = target.get(key, _ABSENT)
            if held is value:
                break  # kept whole by another path already
            if not isinstance(value, Mapping):
                target[key] = value
                break
            if not isinstance(held, dict):
                held = target[key] = {}
            source, target = value, held
        else:
            if last in source:
                target[last] = source[last]
    return out


def to_int(value: Any, path: str, lo: int | None = None, hi: int | None = None) -> int | None:
    """A whole number from a JSON number or numeric text; ``None`` for null or empty
    text. Booleans, fractions and other text are invalid."""
    if value is None:
        return None
    number: int
    if isinstance(value, bool):
        raise InvalidInput.at(path, "expected a whole number, got boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise InvalidInput.at(path, f"expected a whole number, got {json_text(value)}")
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not _INT_TEXT.fullmatch(text):
            raise InvalidInput.at(path, f"expected a whole number, got {json_text(value, 40)}")
        number = int(text)
    else:
        raise InvalidInput.at(path, f"expected a whole number, got {type_name(value)}")
    if lo is not None and number < lo:
        raise InvalidInput.at(path, f"must be at least {lo}, got {number}")
    if hi is not None and number > hi:
        raise InvalidInput.at(path, f"must be at most {hi}, got {number}")
    return number


def to_text(value: Any, path: str, limit: int = 1000) -> str | None:
    """Text from a string (or a number, as Roll20 stores them); ``None`` for null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput.at(path, f"expected text, got {type_name(value)}")
    text = str(value)
    if len(text) > limit:
        raise InvalidInput.at(path, f"text longer than {limit} characters")
    return text


def to_bool(value: Any, path: str) -> bool | None:
    """A boolean from JSON true/false, 1/0 or the texts Roll20 checkboxes store."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    raise InvalidInput.at(path, f"expected true or false, got {json_text(value, 40)}")


def _hit_dice_text(value: Any, path: str) -> tuple[str, re.Match[str]] | None:
    """Hit Dice text and its match (``None`` for null or empty text), else invalid."""
    text = to_text(value, path)
    if text is None or not text.strip():
        return None
    match = _HD_TEXT.fullmatch(_SPACE.sub("", text))
    if not match:
        raise InvalidInput.at(path, "expected Hit Dice like '3', '4+1', '11+', '3*', '1/2' "
                              f"or a formula like '18d10 + 36', got {json_text(text, 40)}")
    return text.strip(), match


def roll_dice(text: str) -> list[tuple[int, int]] | None:
    """The dice terms (count, sides) of a roll formula as a VTT stores one (``(18d10) +
    36``, ``2d8 + 1d6``, ``4d8 + @abilities.con.mod``); ``None`` when the text is not
    such a formula or rolls no die. Only numbers, dice, ``@`` references, ``+ - * /``
    and parentheses are read."""
    compact = _SPACE.sub("", text)
    dice: list[tuple[int, int]] = []
    pos, operand = 0, False  # operand: the last term was a value (two in a row: not read)
    while pos < len(compact):
        match = _ROLL_TERM.match(compact, pos)
        if match is None:
            return None
        term = match.group()
        is_operand = term not in ("+", "-", "*", "/", "(")
        if is_operand and term != ")" and operand:
            return None
        if match["sides"] is not None:
            dice.append((int(match["count"] or 1), int(match["sides"])))
        operand = is_operand
        pos = match.end()
    return dice or None


def hit_dice_count(value: Any, path: str, warn: Callable[[str], None] | None = None,
                   warn_die: Callable[[str], None] | None = None) -> int | None:
    """The number of Hit Dice in a formula such as ``18d10 + 36``, ``4+1`` or ``3``.

    Less than one die (``1/2``, ``½``, ``0.5``) counts as 1; marks after the count
    (``11+``, ``11+3``, ``3*``) are ignored. A roll formula (``(18d10) + 36``,
    ``2d8 + 1d6``) counts every die it rolls. Each assumption about the count goes to
    ``warn``. Of a formula of several die sizes, the die taken (``hit_die``) is said
    apart, to ``warn_die``, where the caller reads the die from the same text: the
    psionic state store may set the count or the die without the other, and each
    withdraws only the warning about itself."""
    note = warn if warn is not None else (lambda _text: None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and 0 < value < 1:
            note(f"Hit Dice {json_text(value)} are less than one die; counted as 1")
            return 1
        return to_int(value, path, 0, 1000)
    text = to_text(value, path) or ""
    dice = None if _HD_TEXT.fullmatch(_SPACE.sub("", text)) else roll_dice(text)
    if dice is not None:
        count = sum(n for n, _ in dice)
        if len({sides for _, sides in dice}) > 1:
            sizes = f"Hit Dice {json_text(text.strip(), 40)} roll dice of several sizes"
            note(f"{sizes}; counted as {count}, the dice of every size")
            main = _main_die(dice)
            if warn_die is not None and main in DICE:
                # a die off the ladder is not taken: the caller's ``hit_die`` refuses it
                warn_die(f"{sizes}; the die taken is d{main}, {_main_die_why(dice)}")
        return count
    found = _hit_dice_text(value, path)
    if found is None:
        return None
    text, match = found
    if match["count"] is not None:
        count = int(match["count"])
    else:
        if match["glyph"] is not None:
            below = _FRACTIONS[match["glyph"]]
        elif match["dec"] is not None:
            below = Fraction(match["dec"])
        else:
            den = int(match["den"])
            below = Fraction(int(match["num"]), den) if den else Fraction(0)
        if not 0 < below < 1:
            raise InvalidInput.at(path, "a fraction of a Hit Die must be above 0 and below 1, "
                                  f"got {json_text(text, 40)}")
        note(f"Hit Dice {json_text(text, 40)} are less than one die; counted as 1")
        count = 1
    ignored = []
    if match["extra"] is not None and match["die"] is None:
        # "4+1": hit points added to the dice ("18d10+36" is a formula: nothing ignored)
        ignored.append(f"{match['extra']} (hit points)")
    if match["plus"] is not None:
        ignored.append("the trailing + (more than that)")
    if match["stars"] is not None:
        ignored.append(f"{match['stars']} (special abilities)")
    if ignored:
        note(f"Hit Dice {json_text(text, 40)} read as {count}; ignored {', '.join(ignored)}")
    return count


def _die_counts(dice: list[tuple[int, int]]) -> dict[int, int]:
    """How many dice of each size a formula rolls, the sizes in the order they come."""
    counts: dict[int, int] = {}
    for count, sides in dice:
        counts[sides] = counts.get(sides, 0) + count
    return counts


def _main_die(dice: list[tuple[int, int]]) -> int:
    """The size of the die a formula rolls most of (the first such on a tie)."""
    counts = _die_counts(dice)
    return max(counts, key=lambda sides: counts[sides])


def _main_die_why(dice: list[tuple[int, int]]) -> str:
    """Why ``_main_die`` took its die, as a warning says it: the size rolled most, or
    on a tie the first of those."""
    counts = _die_counts(dice)
    most = max(counts.values())
    if sum(1 for n in counts.values() if n == most) > 1:
        return "the first of the sizes it rolls most of"
    return "the size it rolls most of"


def hit_die(value: Any, path: str) -> int | None:
    """The die size in ``d6``, ``1d8`` or ``18d10 + 36`` (in a roll formula such as
    ``2d8 + 1d6``, the die it rolls most of); ``None`` when the text names no die
    (``4+1``, ``3*``, ``1/2``). Sizes outside d4..d20 of the ladder are invalid."""
    text = to_text(value, path)
    if text is None or not text.strip():
        return None
    compact = _SPACE.sub("", text)
    match = _DIE_TEXT.fullmatch(compact) or _HD_TEXT.fullmatch(compact)
    named: str | None
    if match:
        named = match.group(1) if match.re is _DIE_TEXT else match["die"]
    else:
        dice = roll_dice(compact)
        if dice is None:
            raise InvalidInput.at(path, "expected a hit die like 'd8', got "
                                  f"{json_text(text, 40)}")
        named = str(_main_die(dice))
    if named is None:
        return None
    sides = int(named)
    if sides not in DICE:
        raise InvalidInput.at(path, f"hit die d{sides} is not one of d4, d6, d8, d10, "
                              "d12, d20")
    return sides


def mode_id(name: str) -> str:
    """The kebab-case id of a mode name as a sheet prints it ("Mind Thrust"); the name
    is NFKC-normalised first, so full-width "ＥＧＯ ＷＨＩＰ" is ego-whip."""
    text = unicodedata.normalize("NFKC", name).strip().lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def split_names(value: Any, path: str) -> list[tuple[str, str]]:
    """(text, pointer) pairs from a JSON array of strings or a comma-separated text."""
    if value is None:
        return []
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            text = to_text(item, pointer(path, i), limit=200)
            if text is not None and text.strip():
                out.append((text, pointer(path, i)))
        return out
    text = to_text(value, path, limit=10_000)
    if text is None:
        return []
    return [(part, path) for part in re.split(r"[,;\n]", text) if part.strip()]


def parse_json_text(value: Any, path: str) -> Any:
    """A JSON value stored as text (Roll20 attributes) or given directly (Foundry)."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    if len(value) > MAX_TEXT:
        raise InvalidInput.at(path, f"text longer than {MAX_TEXT} characters")
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput.at(path, f"expected JSON text: {str(exc)[:80]}") from None


def plain_json(value: Any, path: str, depth: int = 0) -> Any:
    """A copy of ``value`` as plain JSON (objects, arrays, text, numbers, booleans, null),
    at most 16 levels deep, so hostile structures cannot reach the engine."""
    if depth > 16:
        raise InvalidInput.at(path, "nested more than 16 levels")
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput.at(path, "numbers must be finite")
        return value
    if isinstance(value, list):
        return [plain_json(v, pointer(path, i), depth + 1) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput.at(path, "object keys must be text")
            out[key] = plain_json(item, pointer(path, key), depth + 1)
        return out
    raise InvalidInput.at(path, f"not JSON: {type_name(value)}")


@dataclass(frozen=True)
class Binding:
    """Where a field was read: a Foundry dotted path, or a Roll20 attribute name and
    part (``current``/``max``). ``writable`` is false for values derived from data the
    field is not stored in (a level summed from class items)."""

    target: str
    part: str = "current"
    writable: bool = True


@dataclass
class Draft:
    """A combatant being assembled: fields, where each came from, and warnings."""

    system: str
    fields: dict[str, Any] = field(default_factory=dict)
    bindings: dict[str, Binding] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: JSON Pointer (inside the data) of a value that came from somewhere other than
    #: its binding's place (a mapping's ``default``), so a refusal points at it
    origins: dict[str, str] = field(default_factory=dict)
    #: where the VTT's psionic state store keeps a field (``flags.mindscape.<system>.
    #: <field>``, ``psi_<field>``), for warnings that tell the GM what to fill in
    store: Callable[[str], str] = str
    #: fields ``finish`` assumed because the data holds none (a PSP maximum taken as the
    #: current PSPs, a kind taken from it)
    assumed: set[str] = field(default_factory=set)
    #: a character's classes (name, level), each at its own level, when the sheet gives
    #: several, or its one class (whose name may write several, "Mage/Psionicist"):
    #: ``finish`` takes its save vs. paralyzation as the best of theirs
    classes: tuple[tuple[str, int], ...] = ()
    #: how a warning names one of ``classes``: as it stands by default (a Foundry item's
    #: name, as the Foundry adapters' other warnings give it); Roll20 quotes the text of
    #: its class boxes, as its other warnings do
    class_text: Callable[[str], str] = str
    #: why no class group was read, as ``finish``'s warning gives it: the adapters that
    #: know a sheet read it from a class name; a mapping reads ``class_group`` from the
    #: path it names, if any (``Mapping.class_unread``)
    class_unread: str = "no class name it knows"
    #: the warnings ``warn_for`` gave about how the sheet's data gave a field (a hit die
    #: assumed, or chosen among classes), by field: ``read_state`` withdraws them when
    #: the psionic state store sets that field, as none of that is then used
    derivations: dict[str, list[str]] = field(default_factory=dict)
    #: why the sheet's data for a field could not be read (a class's hit die off the
    #: ladder), by field (``refuse_for``): ``finish`` refuses the import with it unless
    #: the psionic state store set that field (``withdraw``), as it is then not used
    unreadable: dict[str, InvalidInput] = field(default_factory=dict)

    def put(self, name: str, value: Any, binding: Binding | None = None, *,
            origin: str | None = None) -> None:
        """Set ``name`` (ignored when the system has no such field or value is None);
        ``origin`` is where the value was taken from when that is not ``binding``'s
        place."""
        if value is None or name not in FIELDS[self.system]:
            return
        self.fields[name] = value
        if binding is not None:
            self.bindings[name] = binding
        else:
            self.bindings.pop(name, None)
        if origin is not None:
            self.origins[name] = origin
        else:
            self.origins.pop(name, None)

    def bind(self, name: str, binding: Binding) -> None:
        """Record where the sheet keeps ``name`` although it is empty there (a PSP
        maximum left blank), so a value assumed for it is written back to that place."""
        if name in FIELDS[self.system] and name not in self.fields:
            self.bindings[name] = binding

    def assume(self, name: str, value: Any) -> None:
        """Set ``name`` to a value the data does not hold (``finish``'s defaults)."""
        self.fields[name] = value
        self.assumed.add(name)

    def unread(self) -> list[str]:
        """The system's fields the data does not hold: those assumed first, then those
        left to the engine."""
        return [*(name for name in FIELDS[self.system] if name in self.assumed),
                *(name for name in FIELDS[self.system] if name not in self.fields)]

    def warn(self, text: str) -> None:
        """Record an assumption the caller should see."""
        self.warnings.append(text)

    def warn_for(self, name: str, text: str) -> None:
        """Record an assumption about how the sheet gives field ``name``, when the system
        has that field (a hit die assumed says nothing to a system that rolls none); it
        is withdrawn if the psionic state store then sets the field (``withdraw``)."""
        if name in FIELDS[self.system]:
            self.warnings.append(text)
            self.derivations.setdefault(name, []).append(text)

    def warn_level(self, text: str) -> None:
        """Record an assumption about how the sheet gives the level or Hit Dice (a level
        taken as 1, one class's of several, Hit Dice read from odd text), for the field
        the system counts them in: revised-2e's ``level``, power-pool's ``hit_dice``
        (combat-strength has neither, so it is told nothing); withdrawn, as ``warn_for``'s
        are, when the psionic state store sets that field. What else the same reading
        gives (the class group of the class whose level is taken) is said in a warning
        of its own (``warn_class_group``), withdrawn by the store's value for that field."""
        for name in ("level", "hit_dice"):
            self.warn_for(name, text)

    def warn_die(self, text: str) -> None:
        """Record an assumption about how the sheet gives the hit die (``warn_for``)."""
        self.warn_for("die", text)

    def refuse_for(self, name: str, error: InvalidInput) -> None:
        """Record that the sheet's data for field ``name`` cannot be read (``error``, at
        its place), when the system has that field (a die the system does not roll
        refuses nothing); ``finish`` raises the first such error unless the psionic state
        store sets the field (``withdraw``)."""
        if name in FIELDS[self.system]:
            self.unreadable.setdefault(name, error)

    def withdraw(self, name: str) -> None:
        """Drop the warnings ``warn_for`` gave about field ``name`` and the error
        ``refuse_for`` kept for it: its value is not the one they explain."""
        self.unreadable.pop(name, None)
        for text in self.derivations.pop(name, ()):
            self.warnings.remove(text)  # that one: the same words warned otherwise stay

    def imported(self, combatant_id: str, name: str,
                 sources: Mapping[str, str] | None = None) -> Imported:
        """The finished ``Imported``: id and name first, then the fields; the warnings
        without repeats and at most ``MAX_WARNINGS`` of them."""
        return Imported({"id": combatant_id, "name": name, **self.fields},
                        tidy_warnings(self.warnings), dict(sources or {}))


#: Most warnings one import reports (50,000 unknown mode rows must not make an answer of
#: megabytes); the rest are counted in one last line.
MAX_WARNINGS: Final = 50


def tidy_warnings(warnings: Iterable[str]) -> tuple[str, ...]:
    """``warnings`` in order without repeats, cut to ``MAX_WARNINGS`` and a count."""
    unique = list(dict.fromkeys(warnings))
    if len(unique) <= MAX_WARNINGS:
        return tuple(unique)
    more = len(unique) - MAX_WARNINGS
    return (*unique[:MAX_WARNINGS], f"… and {more} more warning{'s' if more > 1 else ''}")


def score(draft: Draft, name: str, value: Any, path: str, *, default: int | None = None,
          unset_zero: bool = False, where: str = "") -> None:
    """An ability score from the sheet (read-only), kept within 1..25 as the combatant
    allows; a missing score (or OSE's unset 0) takes ``default`` with a warning naming
    ``where`` the sheet keeps it (a dotted path, an attribute), so the GM can fill it."""
    number = score_value(draft, name, value, path, unset_zero=unset_zero)
    if name not in FIELDS[draft.system]:
        return  # checked, but this system has no use for it
    if number is None or number == 0:
        if default is None:
            return
        draft.warn(f"no {name} score{f' in {where}' if where else ''}; assumed {default}")
        number = default
    draft.put(name, number, Binding("", writable=False))


#: The ability scores a combatant may have (1..25, as the tables go; combat-strength's
#: int and wis from 0, FIELDS).
SCORES: Final = frozenset({"int", "wis", "con"})


def score_value(draft: Draft, name: str, value: Any, path: str, *,
                unset_zero: bool = False) -> int | None:
    """An ability score as a whole number, one above the tables' 25 used as 25 with a
    warning; 0 is invalid unless ``unset_zero`` (OSE's unset score), ``None`` if absent."""
    number = to_int(value, path, 0, 1000)
    if number == 0 and not unset_zero:
        raise InvalidInput.at(path, "an ability score must be at least 1")
    if number is not None and number > 25:
        if name in FIELDS[draft.system]:
            draft.warn(f"{name} {number} is above the tables' 25; used as 25")
        number = 25
    return number


def decode(system: str, name: str, value: Any, path: str, draft: Draft) -> Any:
    """A field value from VTT data (native JSON or Roll20 text), checked against the
    field's type; unknown mode names are dropped with a warning."""
    ftype = FIELDS[system][name]
    kind = ftype.kind
    if kind == "int":
        return to_int(value, path, ftype.lo, ftype.hi)
    if kind == "bool":
        return to_bool(value, path)
    if kind == "enum":
        if value is None or value == "":
            return None
        choice: Any = value
        if ftype.choices and isinstance(ftype.choices[0], int):
            # a die is given as 8 or as "d8"
            choice = (hit_die(value, path) if isinstance(value, str)
                      and value.strip().lower().startswith("d") else to_int(value, path))
        elif isinstance(value, str):
            choice = value.strip().lower()
        if choice not in ftype.choices:
            raise InvalidInput.at(path, f"expected one of {json_text(list(ftype.choices), 200)}, "
                                  f"got {json_text(value, 40)}")
        return choice
    if kind == "modes":
        known = ATTACKS[system] if ftype.modes == "attacks" else DEFENSES[system]
        return modes(system, known, split_names(value, path), draft, ftype.modes)
    if kind == "strings":
        return [text.strip() for text, _ in split_names(value, path)]
    if kind == "ref":
        text = to_text(value, path, limit=64)
        return text.strip() if text and text.strip() else None
    if kind == "ints":
        items = parse_json_text(value, path) if isinstance(value, str) and \
            value.strip().startswith("[") else value
        return [n for n in (to_int(text, p, ftype.lo, ftype.hi)
                            for text, p in split_names(items, path)) if n is not None]
    parsed = plain_json(parse_json_text(value, path), path)
    if parsed is None:
        return None
    if kind == "object":
        need_object(parsed, path)
    else:
        need_list(parsed, path)
    return parsed


def modes(system: str, known: frozenset[str], names: Iterable[tuple[str, str]],
          draft: Draft, which: str) -> list[str]:
    """Mode ids for sheet names, in order, without repeats; unknown names warned."""
    out: list[str] = []
    for text, _path in names:
        ident = mode_id(text)
        ident = ALIASES[system].get(ident, ident)
        if ident in known:
            if ident not in out:
                out.append(ident)
        elif text.strip():
            draft.warn(f"{which}: {json_text(text.strip(), 60)} is not a {system} mode; ignored")
    return out


def read_state(draft: Draft, lookup: Callable[[str], tuple[Any, str, Binding] | None],
               ) -> None:
    """Read every field of the draft's system that ``lookup`` finds in the psionic
    state store (Foundry flags, Roll20 attributes); it overrides what the sheet gave,
    and the warnings about how the sheet gave it are withdrawn."""
    for name in FIELDS[draft.system]:
        found = lookup(name)
        if found is None:
            continue
        value, path, binding = found
        decoded = decode(draft.system, name, value, path, draft)
        if decoded is not None:
            draft.withdraw(name)  # how the sheet would have given it no longer matters
        draft.put(name, decoded, binding)


def finish(draft: Draft, npc: bool) -> None:
    """Defaults every adapter applies once the sheet and the state store are read; first,
    InvalidInput for sheet data the combatant needs and the store did not replace
    (``Draft.refuse_for``)."""
    refused = next(iter(draft.unreadable.values()), None)
    if refused is not None:
        raise refused
    f = draft.fields
    rounds, conditions = f.get("condition_rounds"), f.get("conditions", [])
    if isinstance(rounds, Mapping) and isinstance(conditions, list):
        # Rounds left on a condition the creature does not have count nothing down, and
        # every system refuses them; a store written before write-backs dropped an ended
        # condition's rounds (or a Foundry token's profile merged key by key) may hold
        # such a key. Dropped here, so the sheet still plays, and the write-back then
        # clears it from the store.
        stale = [key for key in rounds if key not in conditions]
        for key in stale:
            draft.warn(f"condition_rounds {json_text(key, 40)}: rounds left on a condition "
                       "it does not have (not among conditions); ignored")
        if stale:
            draft.fields["condition_rounds"] = {k: v for k, v in rounds.items()
                                                if k not in stale}
    if draft.system == "revised-2e":
        if "psp" in f and "psp_max" not in f:
            # A sheet's PSP box often has no maximum filled in: the current PSPs are the
            # best guess, and the round trip of ``updates`` then writes it back.
            draft.assume("psp_max", f["psp"])
            draft.warn(f"no PSP maximum recorded; taken as the current PSPs, {f['psp']}")
        if "kind" not in f:
            if f.get("psp_max", 0) > 0:
                draft.assume("kind", "psionicist")
                draft.warn("kind not recorded; a mind with PSPs is taken as a psionicist")
            else:
                draft.assume("kind", "nonpsionic")
                draft.warn("no psionic state recorded; taken as nonpsionic")
        best = not npc and best_class_save(draft)
        if "class_group" not in f and npc:
            draft.assume("class_group", "monster")
        elif "class_group" not in f and not best:
            # The engine then takes psionicist for a psionicist, else warrior: say so, as
            # the group sets the saving throw (and so the open mind's save) it uses.
            draft.warn(f"no class group read from the sheet ({draft.class_unread}); the "
                       "engine takes psionicist for a psionicist, else warrior (for its "
                       f"save vs. paralyzation); {draft.store('class_group')} sets it")
    elif draft.system == "combat-strength":
        if "psionic" not in f:
            strengths = (f.get("attack_strength_max", f.get("attack_strength", 0))
                         + f.get("defense_strength_max", f.get("defense_strength", 0)))
            draft.assume("psionic", strengths > 0)
            if strengths == 0:
                draft.warn("no attack or defense strength recorded; taken as non-psionic")
    elif draft.system == "power-pool" and "psionic" not in f:
        # As the engine's own default: a creature that knows a psionic mode is psionic.
        draft.assume("psionic", bool(f.get("attacks") or f.get("defenses")))
        if not f["psionic"]:
            draft.warn("not recorded as psionic; it defends with its Hit Dice only "
                       "(H-PP-NO-POOL)")


def pool_die(draft: Draft, levels: int, dice: Sequence[tuple[str, int]]) -> int | None:
    """The hit die a character's power pool rolls, of ``dice``: (a class as a warning
    names it, its hit die) for each class at the level the pool takes (``levels``, the
    most of any class), those whose die is known. The pool is dice of one type, as many
    as the Hit Dice (seed 001), and a multi-class character rolls each class's: of
    several, the largest, whatever the order they come in, with a warning naming each
    class's die when they differ (only a warning about the die, ``Draft.warn_for``).
    ``None`` when no class's die is known."""
    if not dice:
        return None
    die = max(d for _, d in dice)
    if len({d for _, d in dice}) > 1:
        listed = ", ".join(f"{name} d{d}" for name, d in dice)
        draft.warn_for("die", f"classes at level {levels} with different hit dice "
                       f"({listed}); the pool rolls the largest, d{die}")
    return die


def warn_class_group(draft: Draft, several: str, name: str, shown: str, *,
                     psionicist: bool, tied: bool) -> None:
    """Say where the class group comes from when it is the group of class ``name`` (as
    a warning shows it: ``shown``) of several (``several``, "several classes (Thief 4,
    Fighter 6)"), the class whose level is taken: the psionicist class, else the class
    of the highest level, ``tied`` when others have as many levels (the first is then
    taken). Given only when a group is known for ``name``, and apart from the warning on
    the level: each is withdrawn when the psionic state store sets what it explains
    (``Draft.warn_for``), and a system with no class group is told nothing."""
    group = class_group(name)
    if group is None:
        return
    whose = (f"the first of the {'psionicist ' if psionicist else ''}classes of the "
             "highest level" if tied else "the psionicist class" if psionicist
             else "the class of the highest level")
    draft.warn_for("class_group", f"{several}; class group {group} taken from {whose} "
                   f"({shown}); {draft.store('class_group')} sets it")


def best_class_save(draft: Draft) -> bool:
    """A multi-class character's save vs. paralyzation: the best (lowest) of its classes'
    (``draft.classes``), each by its class group at its own level: the engine's rule
    (``best_save_paralyzation``); a class name writing several, "Mage/Psionicist",
    counts each of them at its level. Set, with a warning, only when the sheet gives
    several classes (or one writing several), the data no save, and the psionic state
    store neither the class group nor the level (the GM's own reading: the engine then
    derives the save from those, as for one class). A class of no known group is left
    out, and said. Never written back: it is derived from the class levels, as the
    level is. True when it set the save."""
    f = draft.fields

    def stored(name: str) -> bool:
        binding = draft.bindings.get(name)
        return binding is not None and binding.target == draft.store(name)

    if not draft.classes or "save_paralyzation" in f \
            or stored("class_group") or stored("level"):
        return False
    counted: list[tuple[str, int, str, str]] = []  # (group, level, name, "as a" words)
    unknown = []
    shown = draft.class_text
    named: list[str] = []
    for name, level in draft.classes:
        # a name may write several classes at one level ("Mage/Psionicist"): each counts
        groups = tuple(dict.fromkeys(class_groups(name)))
        several = f" as a {' or a '.join(groups)}" if len(groups) > 1 else ""
        named.append(f"{shown(name)} {level}{several}")
        if not groups:
            unknown.append(f"{shown(name)} {level}")
        counted += [(group, level, name, f" as a {group}" if several else "")
                    for group in groups]
    if not counted or (len(counted) < 2 and len(draft.classes) < 2):
        return False  # one class of one group: the engine derives the save as ever
    save, at = best_save_paralyzation(shipped_tables(),
                                      [(group, level) for group, level, _, _ in counted])
    _, level, name, as_group = counted[at]
    draft.put("save_paralyzation", save, Binding("", writable=False))
    listed = " / ".join(named)
    left = (f"{', '.join(unknown)} left out: no class group known for "
            f"{'it' if len(unknown) == 1 else 'them'}; " if unknown else "")
    draft.warn(f"save vs. paralyzation {save} from {shown(name)} {level}{as_group}, the "
               f"best of {listed} ({left}{draft.store('save_paralyzation')} sets it)")
    return True


def diff_fields(system: str, before: Mapping[str, Any], after: Mapping[str, Any],
                ) -> list[tuple[str, Any]]:
    """(field, new value) for each field of ``system`` whose value changed."""
    return [(name, after[name]) for name in FIELDS[system]
            if name in after and (name not in before or before[name] != after[name])]


def check_states(before: Any, after: Any) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """``before`` and ``after`` as plain JSON objects (InvalidInput at /before, /after
    otherwise, or where one nests too deep to compare)."""
    return (need_object(plain_json(before, "/before"), "/before"),
            need_object(plain_json(after, "/after"), "/after"))


#: Fields the engine derives from others (a pool from the Hit Dice less the dedicated
#: dice, MTHAC0 from the level ...): a round trip tries them last, so that writing what
#: they are derived from keeps them derived (a later level-up on the sheet still counts).
DERIVED: Final = ("pool", "original_total", "mthac0", "mac", "save_paralyzation")


def settle(system: str, after: Mapping[str, Any],
           write: Callable[[str, Any], bool],
           reimport: Callable[[], Mapping[str, Any]],
           unread: Sequence[str] = ()) -> None:
    """Complete a write-back by round trips: ``reimport`` gives the combatant the data
    holds once the write-back so far is applied (normalised); ``write(field, value)``
    adds a field to the write-back and says whether that changed anything. Each round
    writes the first field of ``after`` that the re-import does not reproduce (fields
    in ``DERIVED`` last), until the re-import gives ``after`` or nothing more can be
    written (at most two rounds per field). A re-import the adapter or the engine
    refuses (a default the data left to the adapter no longer fits ``after``: PSPs at 0
    with no maximum recorded make a maximum of 0) writes the first field of ``after``
    that changes the write-back, those the data did not hold first (``unread``, in its
    order: the adapter's assumptions, then what it left to the engine; ``DERIVED`` still
    last), and tries again; when none does, the write-back stays as it is (a write-back
    never fails over this)."""
    names = sorted(FIELDS[system], key=lambda name: name in DERIVED)
    rank = {name: i for i, name in reversed(list(enumerate(unread)))}
    refused = sorted(names, key=lambda name: (name in DERIVED, rank.get(name, len(rank))))
    for _ in range(2 * len(names)):
        try:
            again: Mapping[str, Any] | None = reimport()
        except EngineError:
            again = None
        for name in names if again is not None else refused:
            if name in after and (again is None or again.get(name) != after[name]):
                try:
                    if write(name, after[name]):
                        break
                except EngineError:
                    continue  # a value the adapter cannot store: leave that field be
        else:
            return
