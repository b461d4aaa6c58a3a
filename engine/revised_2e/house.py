"""The house defaults of revised-2e (RULES.md §1): ids, texts, defaults.

Every decision no source settles is one of these, switchable per call or per
encounter through ``options: {"H-2E-…": value}``.
"""

from __future__ import annotations

from engine.options import HouseRule

CRIT_MODS = "H-2E-CRIT-MODS"
WT_MTHAC0 = "H-2E-WT-MTHAC0"
NO_LAST_DEF = "H-2E-NO-LAST-DEF"
QUICKMAC_PICK = "H-2E-QUICKMAC-PICK"
SAVE_0 = "H-2E-SAVE-0"
ORDER = "H-2E-ORDER"
THREE_PER_TWO = "H-2E-THREE-PER-TWO"
MODE_LIMITS = "H-2E-MODE-LIMITS"
STUN = "H-2E-STUN"
CLOSE_LAST_PSP = "H-2E-CLOSE-LAST-PSP"

HOUSE_RULES: tuple[HouseRule, ...] = (
    HouseRule(CRIT_MODS, "A critical mental hit is judged on the modified roll (natural + "
              "Table 76 + open-mind bonus) beating the needed number by 5 or more; "
              "false: on the natural roll.", True),
    HouseRule(WT_MTHAC0, "A wild talent's MTHAC0 is 21 − ceil(level / 2); false: 21 − level "
              "as a psionicist.", True),
    HouseRule(NO_LAST_DEF, "A mind opened by a critical hit that used no defense yet closes by "
              "paying 2 × its cheapest known defense; false: it cannot pay and stays open "
              "1d4+1 rounds.", True),
    HouseRule(QUICKMAC_PICK, "Quick MACs: the base MAC inside the Intelligence range is chosen "
              "by a die of the range's size (purpose mac-base); false: the worst (highest) "
              "value of the range, no die.", True),
    HouseRule(SAVE_0, "Level 0 saves vs. paralyzation at 16 and monsters save as warriors of "
              "their Hit Dice; false: level 0 uses the class group's level-1 row (monsters "
              "still save as warriors: the rules give them no other row).", True),
    HouseRule(ORDER, "Order of attacks in an encounter round: 'listed' = the order combatants "
              "were added; 'initiative' = d10 each (purpose initiative, +2 for a mind forced "
              "open last round), lowest first, ties in listed order. Each attack sees the "
              "state the earlier ones left.", "listed", ("listed", "initiative")),
    HouseRule(THREE_PER_TWO, "Three attacks per two rounds (levels 7–12): one attack in odd "
              "encounter rounds, two in even rounds; false: two in odd rounds, one in even.",
              True),
    HouseRule(MODE_LIMITS, "Known attack and defense modes are limited by level (psionicist "
              "1/1 at levels 1–2 … 5/5 at 9+, wild talent at most 3 each; monsters exempt); "
              "false: any number.", True),
    HouseRule(STUN, "A mind forced open is stunned for the rest of that round: its attacks "
              "not yet made that round are lost; false: they still happen.", True),
    HouseRule(CLOSE_LAST_PSP, "Paying to close a mind opened by a critical hit must leave at "
              "least 1 PSP (errata: a mind with 0 PSPs is open), so closing for 10 needs 11; "
              "false: a mind may pay its last PSPs to close (the seed's 'enough PSPs').",
              True),
)
