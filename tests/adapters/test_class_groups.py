"""docs/ADAPTERS.md "What every adapter does": a class name a GM types gives its 2e class
group (RULES.md table 1.7 reads the save vs. paralyzation by it) by its whole words
(accents dropped, a word or its plural), the first class written, with a race that is
a class (dwarf, elf, halfling, gnome ...) only when no class is written beside it."""

from __future__ import annotations

import pytest

from adapters.core import class_group, class_groups

# The Roll20 AD&D 2E Revised sheet's own lists (html/components/datalists.html: "classes"
# and "class-groups"), the Dark Sun classes (the setting revised-2e comes from), and the
# other classes the adapters have always read.
SHEET_CLASSES = {
    "Fighter": "warrior", "Paladin": "warrior", "Ranger": "warrior",
    "Mage": "wizard", "Abjurer": "wizard", "Conjurer": "wizard", "Diviner": "wizard",
    "Enchanter": "wizard", "Illusionist": "wizard", "Invoker": "wizard",
    "Necromancer": "wizard", "Transmuter": "wizard",
    "Cleric": "priest", "Druid": "priest", "Thief": "rogue", "Bard": "rogue",
    "Warrior": "warrior", "Wizard": "wizard", "Priest": "priest", "Rogue": "rogue",
    "Psion": "psionicist",
}
DARK_SUN_CLASSES = {
    "Gladiator": "warrior", "Templar": "priest", "Trader": "rogue", "Defiler": "wizard",
    "Preserver": "wizard", "Psionicist": "psionicist",
}
OTHER_CLASSES = {
    "Barbarian": "warrior", "Monk": "rogue", "Assassin": "rogue", "Sorcerer": "wizard",
    "Warlock": "wizard", "Artificer": "wizard", "Magic-User": "wizard",
    # race as class (BECMI, OSE): only when no class is written beside it
    "Dwarf": "warrior", "Elf": "warrior", "Halfling": "warrior", "Half-Elf": "warrior",
}
# Names the substring search read wrong: what each is now, with what it was in a comment.
READ_AS_WORDS = {
    # the race before the class
    "Half-elf Cleric": "priest",  # was warrior ("elf")
    "Half-Elf Thief": "rogue",  # was warrior
    "Half-Elf Ranger/Thief": "warrior",  # the ranger, written first
    "Elf Magic-User": "wizard",  # was warrior
    "Dwarf Cleric": "priest",  # was warrior
    "Dwarven Fighter": "warrior",
    "Halfling Thief": "rogue",  # was warrior
    # as 1e books print it
    "Magic User": "wizard",  # was none
    "magic user/thief": "wizard",  # was rogue
    # a key inside another word
    "Bombardier": None,  # was rogue ("bard")
    "Monkey Handler": None,  # was rogue ("monk")
    "Shelf-keeper": None,  # was warrior ("elf")
    "Shelf-keeper Thief": "rogue",  # was warrior
    # several classes in one box: the first written
    "Cleric/Fighter": "priest",  # was warrior (fighter came first in the table)
    "Fighter-Thief": "warrior",
    "Thief/Fighter": "rogue",  # was warrior
    "Mage-Thief": "wizard",  # was rogue
    "Fighter/Psionicist": "warrior",  # was psionicist (psion came first in the table)
    # stems: a word starting with the key
    "Priestess": "priest",
    "Psionic Fighter": "psionicist",
    # letters only: case, digits and punctuation split words
    "FIGHTER": "warrior", "Thief (Acrobat)": "rogue", "cleric2": "priest",
    "Cleric of Ra": "priest", "": None, "Mystic": None, "Magic": None, "User": None,
}
# Compounds, plurals, feminine forms and accents a GM writes: each was None.
WRITTEN_FORMS = {
    "Archmage": "wizard", "Battlemage": "wizard", "Warmage": "wizard",
    "Warpriest": "priest", "Druidess": "priest", "Sorceress": "wizard",
    "Enchantress": "wizard",
    "Fighters": "warrior", "Clerics": "priest", "Mages": "wizard", "Bards": "rogue",
    "Thieves": "rogue", "Magic-Users": "wizard", "Psiónicist": "psionicist",
    "Mágo/Thíef": "rogue", "Clérigo": None,
    # the plural "es" after an s, and the svirfneblin's own (each was None)
    "Sorceresses": "wizard", "Enchantresses": "wizard", "Druidesses": "priest",
    "Svirfnebli": "warrior", "Priestesses": "priest",
    # still not classes: a class word at the end of another word, or with more than an s
    "Image": None, "Damage": None, "Bombardiers": None, "Monkeys": None, "Bardic": None,
    "Thievery": None, "Bardes": None, "Magees": None,
}
# The 1e Unearthed Arcana cavalier (a fighter subclass), the knight (a 2e warrior kit, a
# BECMI fighter's title) and OSE Advanced Fantasy's races that are classes: each was None.
# "Mystic" (a BECMI monk, an OSE Advanced cleric-like class) and "Wild Talent" (2e: no
# class, a gift any character may have) stay without a group.
MORE_CLASSES = {
    "Cavalier": "warrior", "Knight": "warrior", "Knight of Solamnia": "warrior",
    "Gnome": "warrior", "Drow": "warrior", "Duergar": "warrior", "Half-Orc": "warrior",
    "Svirfneblin": "warrior", "Dwarves": "warrior", "Elves": "warrior",
    "Half-Orc Thief": "rogue", "Gnome Illusionist": "wizard", "Drow Cleric": "priest",
    "Orc": None, "Wild Talent": None,
}

# A knight is a BECMI fighter's title and a 2e warrior kit, but also a title or an order
# of any class: it is a class only when no class is written beside it. Each of the first
# three was a priest or a wizard and a warrior, "Knights Templar" a warrior first.
KNIGHTS = {
    "Cleric (Knight)": ("priest",), "Mage (Knight of the Post)": ("wizard",),
    "Cleric/Knight of the Rose": ("priest",), "Knights Templar": ("priest",),
    "Knight": ("warrior",), "Knights of Solamnia": ("warrior",), "Elf Knight": ("warrior",),
    # the cavalier is a class of its own (1e) and a warrior's kit (2e): read as written
    "Paladin (Cavalier)": ("warrior", "warrior"),
}


@pytest.mark.parametrize(("name", "groups"), KNIGHTS.items())
def test_a_knight_is_a_class_only_when_no_class_is_written_beside_it(
        name: str, groups: tuple[str, ...]) -> None:
    assert class_groups(name) == groups


# A symbol beside a word is no letter of it, though its compatibility form (NFKD, NFKC)
# writes letters ("™" is "TM", "№" is "No"), and a word in another form is read in its
# plain one (the ligature "ﬁ", full-width letters, Turkish dotted capital I): the first
# three had no group when the whole name was decomposed.
SYMBOLS_AND_FORMS = {
    "Fighter™": "warrior", "Mage№2": "wizard", "Fighter℠": "warrior",
    "Cleric㈠": "priest", "Fighter²": "warrior", "Fighter ①": "warrior",
    "ﬁghter": "warrior", "ＦＩＧＨＴＥＲ": "warrior", "İllusionist": "wizard",
}


@pytest.mark.parametrize(("name", "group"), [
    *SHEET_CLASSES.items(), *DARK_SUN_CLASSES.items(), *OTHER_CLASSES.items(),
    *READ_AS_WORDS.items(), *WRITTEN_FORMS.items(), *MORE_CLASSES.items(),
    *SYMBOLS_AND_FORMS.items()])
def test_a_class_name_gives_the_group_of_its_first_class_word(name: str,
                                                              group: str | None) -> None:
    assert class_group(name) == group


# Characters that a name shows as part of a word, or as no character at all: a format
# character (Unicode category Cf: the soft hyphen a word processor leaves at a break,
# the zero-width joiner and non-joiner, a direction mark) inside a word joins its two
# halves, where it split them ("fight" and "er"); the Turkish dotless ı is read as the
# i it stands for (a Turkish keyboard's "FIGHTER" in lower case is "fıghter"); a symbol
# that is one letter in its compatibility form (the circled "Ⓕ", NFKC "F") is that
# letter. Each of these inside a word had no group. The zero-width space still parts two
# words, and a symbol of several letters ("™", "TM") is still none of the word's (these,
# and a direction mark before a word, read so before as well).
INVISIBLE_AND_LETTER_LIKE = {
    "Fight\u00ader": "warrior", "Psi\u00adon\u00adi\u00adcist": "psionicist",
    "Fight\u200der": "warrior", "Fight\u200cer": "warrior", "\u200eCleric": "priest",
    "Cle\u200fric": "priest",
    "Fıghter": "warrior", "FIGHTER".lower().replace("i", "ı"): "warrior",
    "Ⓕighter": "warrior", "ⓂⒶⒼⒺ": "wizard", "Bard\u200bFighter": "rogue",
    "Fighter\u00ad™": "warrior", "Ⓕighter™": "warrior",
    # a number is no letter, though the Roman numeral one's NFKC form is "I"
    "MageⅠ": "wizard",
}


@pytest.mark.parametrize(("name", "group"), INVISIBLE_AND_LETTER_LIKE.items())
def test_an_invisible_character_or_a_letter_like_symbol_reads_as_the_word_shows(
        name: str, group: str) -> None:
    assert class_group(name) == group


def test_every_class_written_gives_its_group_in_order() -> None:
    """The psionicist's class is the one naming a psionicist anywhere (its level is the
    one the psionic rules count), though its group is that of the first class written."""
    assert class_groups("Fighter/Psionicist") == ("warrior", "psionicist")
    assert class_groups("Half-Elf Ranger/Thief") == ("warrior", "rogue")
    assert class_groups("Elf") == ("warrior",)
    assert class_groups("Bard\u200bFighter") == ("rogue", "warrior")  # a zero-width space
    assert class_groups("Bard\u2063Fighter") == ("rogue", "warrior")  # an invisible separator
    assert class_groups("Bombardier") == ()
