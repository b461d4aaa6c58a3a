"""Dice expressions for ``dice.roll``: ``3d6+2``, ``2d6p`` (penetrating), ``d20-1``.

Grammar (spaces allowed between tokens)::

    expr  := term (("+" | "-") term)*
    term  := [count] "d" sides ["p"] | number

Bounded: at most ``MAX_DICE_PER_POOL`` dice in the whole expression, at most
``MAX_PENETRATION_FOLLOW_UPS`` follow-ups per penetrating die, faces 1..1000.
A syntax error names the position (0-based) where it was found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dice import MAX_DICE_PER_POOL, MAX_SIDES, DiceSource
from .errors import DiceSyntaxError, LimitExceeded, Problem, json_text

MAX_EXPR_LENGTH = 200
MAX_CONSTANT = 1_000_000


@dataclass(frozen=True)
class DiceTerm:
    sign: int
    count: int
    sides: int
    penetrating: bool


@dataclass(frozen=True)
class ConstantTerm:
    sign: int
    value: int


Term = DiceTerm | ConstantTerm


def parse(expr: str) -> tuple[Term, ...]:
    """Parse ``expr`` into terms, or raise ``DiceSyntaxError``/``LimitExceeded``."""
    if len(expr) > MAX_EXPR_LENGTH:
        raise LimitExceeded(Problem("/expr", f"longer than {MAX_EXPR_LENGTH} characters"))
    parser = _Parser(expr)
    terms = parser.parse()
    dice = sum(t.count for t in terms if isinstance(t, DiceTerm))
    if dice > MAX_DICE_PER_POOL:
        raise LimitExceeded(Problem(
            "/expr", f"{dice} dice exceed the limit of {MAX_DICE_PER_POOL} dice per expression"))
    return terms


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> DiceSyntaxError:
        return DiceSyntaxError(self.text, self.pos, message)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def number(self) -> int | None:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isascii() and \
                self.text[self.pos].isdigit():
            self.pos += 1
        if start == self.pos:
            return None
        if self.pos - start > 7:
            self.pos = start
            raise self.error("number too large")
        return int(self.text[start:self.pos])

    def term(self, sign: int) -> Term:
        self.skip()
        start = self.pos
        count = self.number()
        if self.pos < len(self.text) and self.text[self.pos] in "dD":
            self.pos += 1
            sides = self.number()
            if sides is None:
                raise self.error("expected the number of sides after 'd'")
            if not 1 <= sides <= MAX_SIDES:
                self.pos = start
                raise self.error(f"a die has 1 to {MAX_SIDES} sides")
            penetrating = False
            if self.pos < len(self.text) and self.text[self.pos] in "pP":
                self.pos += 1
                penetrating = True
            n = 1 if count is None else count
            if n < 1:
                self.pos = start
                raise self.error("the number of dice must be at least 1")
            return DiceTerm(sign, n, sides, penetrating)
        if count is None:
            raise self.error("expected a number or a die such as 2d6")
        if count > MAX_CONSTANT:
            self.pos = start
            raise self.error(f"a constant is at most {MAX_CONSTANT}")
        return ConstantTerm(sign, count)

    def parse(self) -> tuple[Term, ...]:
        terms = [self.term(1)]
        while True:
            self.skip()
            if self.pos >= len(self.text):
                return tuple(terms)
            op = self.text[self.pos]
            if op not in "+-":
                raise self.error(f"unexpected {json_text(op)}")
            self.pos += 1
            terms.append(self.term(1 if op == "+" else -1))


def roll_expression(expr: str, dice: DiceSource, by: str | None = None) -> dict[str, Any]:
    """Roll ``expr`` with ``dice``: ``{expr, total, rolls, capped}``.

    Dice of an expression use the purpose ``expr``; penetrating follow-ups name the
    die they follow.
    """
    terms = parse(expr)
    start = dice.mark()
    total = 0
    capped = False
    for term in terms:
        if isinstance(term, ConstantTerm):
            total += term.sign * term.value
            continue
        for _ in range(term.count):
            if term.penetrating:
                die = dice.roll_penetrating("expr", term.sides, by)
                total += term.sign * die.total
                capped = capped or die.capped
            else:
                total += term.sign * dice.roll("expr", term.sides, by)
    return {
        "expr": expr,
        "total": total,
        "rolls": [r.to_json() for r in dice.rolls_since(start)],
        "capped": capped,
    }
