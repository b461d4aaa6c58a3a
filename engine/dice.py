"""Dice sources and the record of every die rolled.

A resolution never calls ``random`` itself: it asks a ``DiceSource`` for dice by
*purpose* (``attack``, ``damage``, ``save`` ...). The source either rolls them
(``RandomDice``, seedable, with its own ``random.Random``) or hands out the values
the table rolled with physical dice (``SuppliedDice``). Either way every die is
recorded as a ``Roll`` so that a chat card can show exactly what happened.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .errors import DiceNeeded, EngineError, InvalidInput, LimitExceeded, Problem, pointer

#: The die-type ladder shared by the systems (power-pool upgrades climb it).
LADDER: tuple[int, ...] = (4, 6, 8, 10, 12, 20)

#: API.md limits.
MAX_DICE_PER_POOL = 100
MAX_PENETRATION_FOLLOW_UPS = 100
#: Supplied dice are consumed in order; more than this many in one call is refused.
MAX_SUPPLIED_DICE = 10_000
MAX_SIDES = 1000


@dataclass(frozen=True)
class Roll:
    """One die: what it was for, its faces, what it showed, who rolled it.

    ``follows`` is the index (in the resolution's ``rolls`` list) of the die a
    penetration follow-up die was rolled after; ``None`` for an ordinary die.
    """

    purpose: str
    sides: int
    value: int
    by: str | None = None
    follows: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "purpose": self.purpose,
            "sides": self.sides,
            "value": self.value,
            "by": self.by,
            "follows": self.follows,
        }


def step_die(sides: int, steps: int) -> int:
    """Move ``sides`` ``steps`` places along the ladder, stopping at both ends."""
    if sides not in LADDER:
        raise InvalidInput.at("/die", f"d{sides} is not on the die ladder {list(LADDER)}")
    index = min(max(LADDER.index(sides) + steps, 0), len(LADDER) - 1)
    return LADDER[index]


def check_pool_size(count: int) -> None:
    """Refuse a pool of more than ``MAX_DICE_PER_POOL`` dice."""
    if count > MAX_DICE_PER_POOL:
        raise LimitExceeded(Problem(
            "/pool_dice", f"{count} dice exceed the limit of {MAX_DICE_PER_POOL} dice per pool"))


class DiceSource(ABC):
    """Base of all dice sources: hands out values by purpose and records every die."""

    def __init__(self) -> None:
        self._rolls: list[Roll] = []

    # -- what subclasses provide -------------------------------------------------
    @abstractmethod
    def _value(self, purpose: str, sides: int) -> int:
        """The next value for a d``sides`` of ``purpose`` (checked against its faces)."""

    def available(self, purpose: str) -> int | None:
        """How many values are left for ``purpose``; ``None`` means unlimited."""
        return None

    # -- the public interface ----------------------------------------------------
    @property
    def rolls(self) -> tuple[Roll, ...]:
        """Every die rolled through this source so far, in rolling order."""
        return tuple(self._rolls)

    def mark(self) -> int:
        """A position in the record, to slice the rolls of one step later."""
        return len(self._rolls)

    def rolls_since(self, mark: int) -> tuple[Roll, ...]:
        """The rolls from ``mark`` on, a follow-up's ``follows`` counted in this list
        (a resolution's rolls begin at its own mark, not at the source's first die)."""
        if not mark:
            return tuple(self._rolls)
        return tuple(r if r.follows is None else replace(r, follows=r.follows - mark)
                     for r in self._rolls[mark:])

    def roll(self, purpose: str, sides: int, by: str | None = None,
             follows: int | None = None) -> int:
        """Roll one d``sides`` for ``purpose`` and record it."""
        if sides < 1 or sides > MAX_SIDES:
            raise InvalidInput.at("/dice", f"a die must have 1 to {MAX_SIDES} sides, not {sides}")
        value = self._value(purpose, sides)
        self._rolls.append(Roll(purpose, sides, value, by, follows))
        return value

    def roll_many(self, purpose: str, sides: int, count: int, by: str | None = None) -> list[int]:
        """Roll ``count`` ordinary dice; with supplied dice, all must be there first."""
        check_pool_size(count)
        left = self.available(purpose)
        if left is not None and left < count:
            raise DiceNeeded(purpose, sides, count - left)
        return [self.roll(purpose, sides, by) for _ in range(count)]

    def roll_penetrating(self, purpose: str, sides: int, by: str | None = None,
                         cap: int = MAX_PENETRATION_FOLLOW_UPS) -> PenetratingDie:
        """Roll one penetrating die: a maximum adds another die that counts its value − 1.

        The chain stops after ``cap`` follow-ups (house default H-CS-PEN-CAP);
        ``capped`` says when that happened.
        """
        first_index = len(self._rolls)
        value = self.roll(purpose, sides, by)
        total = value
        follow_ups = 0
        last = value
        while last == sides and follow_ups < cap:
            last = self.roll(purpose, sides, by, follows=first_index + follow_ups)
            total += last - 1
            follow_ups += 1
        return PenetratingDie(total, follow_ups, capped=last == sides and follow_ups >= cap)

    def unused(self) -> dict[str, list[int]]:
        """Supplied values the resolution did not need, by purpose."""
        return {}

    def check_faces(self, largest: Mapping[str, int]) -> None:
        """Refuse, before any die is rolled, every supplied value that no die of its
        purpose has as a face: below 1, or above ``largest[purpose]`` (the largest die the
        system rolls for it; ``MAX_SIDES`` for a purpose not in ``largest``), whether the
        resolution would use it or not. A value used is checked again against the
        faces of the very die it is used for."""
        return  # a source that rolls its own dice has no values to check


@dataclass(frozen=True)
class PenetratingDie:
    total: int
    follow_ups: int
    capped: bool


class RandomDice(DiceSource):
    """Dice from a private ``random.Random``: reproducible when ``seed`` is given."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__()
        self.seed = seed
        self._random = random.Random(seed)

    def _value(self, purpose: str, sides: int) -> int:
        return self._random.randint(1, sides)


class SuppliedDice(DiceSource):
    """Values rolled at the table, handed out per purpose in the order given.

    Every value must be a face of some die (1 to ``MAX_SIDES``) from the start, and
    ``check_faces`` holds each purpose to the largest die a system rolls for it, so a
    value no resolution could use is refused rather than reported as unused. A value
    used is checked against the faces of the die it is used for; running out raises
    ``DiceNeeded``. What was not used is reported by ``unused()``.
    """

    def __init__(self, supplied: Mapping[str, Sequence[int]]) -> None:
        super().__init__()
        for purpose, values in supplied.items():
            if not isinstance(purpose, str) or not isinstance(values, Sequence) or isinstance(
                    values, str):
                raise InvalidInput.at(pointer("/dice", purpose), "must be a list of die values")
        total = sum(len(values) for values in supplied.values())
        if total > MAX_SUPPLIED_DICE:
            raise LimitExceeded(
                Problem("/dice", f"{total} supplied dice exceed the limit of {MAX_SUPPLIED_DICE}"))
        queues = {purpose: list(values) for purpose, values in supplied.items()}
        # a value no die has as a face is refused now, used or not (RULES.md §4)
        problems = [p for purpose, queue in queues.items()
                    for p in _face_problems(purpose, queue, MAX_SIDES, None)]
        if problems:
            raise InvalidInput(problems)
        self._queues = queues
        self._next: dict[str, int] = {p: 0 for p in queues}

    def available(self, purpose: str) -> int:
        return len(self._queues.get(purpose, ())) - self._next.get(purpose, 0)

    def _value(self, purpose: str, sides: int) -> int:
        if self.available(purpose) <= 0:
            raise DiceNeeded(purpose, sides, 1)
        i = self._next[purpose]
        value = self._queues[purpose][i]
        if not 1 <= value <= sides:
            raise InvalidInput.at(
                pointer("/dice", purpose, i), f"{value} is not a face of a d{sides} (1 to {sides})")
        self._next[purpose] = i + 1
        return value

    def unused(self) -> dict[str, list[int]]:
        return {p: q[self._next[p]:] for p, q in self._queues.items() if self._next[p] < len(q)}

    def check_faces(self, largest: Mapping[str, int]) -> None:
        # every value is a face of some die already (``__init__``)
        problems = [p for purpose, queue in self._queues.items() if purpose in largest
                    for p in _face_problems(purpose, queue, largest[purpose], purpose)]
        if problems:
            raise InvalidInput(problems)


def _face_problems(purpose: str, queue: Sequence[Any], top: int, rolled_for: str | None
                   ) -> list[Problem]:
    """A problem for each value of ``queue`` that is not a whole number from 1 to
    ``top`` (``rolled_for``: the purpose whose largest die ``top`` is, or ``None`` for
    the engine's largest); none, quickly, when every value is one."""
    top = min(top, MAX_SIDES)
    if not queue or (all(type(v) is int for v in queue)
                     and min(queue) >= 1 and max(queue) <= top):
        return []
    problems = []
    for i, v in enumerate(queue):
        if isinstance(v, bool) or not isinstance(v, int):
            problems.append(Problem(pointer("/dice", purpose, i), "a die value must be an integer"))
        elif not 1 <= v <= top:
            problems.append(Problem(pointer("/dice", purpose, i), (
                f"{v} is not a face of a d{top} (1 to {top}), the largest die rolled for "
                f"{rolled_for}" if rolled_for is not None
                else f"{v} is not a face of any die (1 to {MAX_SIDES})")))
    return problems


class LowestDice(DiceSource):
    """Every die shows 1 (so none penetrates but a d1, whose 1 is its highest): run
    through steps to count the dice they ask for at least (``still_needed``)."""

    def _value(self, purpose: str, sides: int) -> int:
        return 1


def still_needed(short: DiceNeeded, later: Iterable[Callable[[DiceSource], object]]
                 ) -> DiceNeeded:
    """``short`` (one step's missing dice) with the dice of its purpose and sides that the
    ``later`` steps of the same call ask for at least, so a caller supplying physical
    dice is asked for all of them at once. A later step the rules refuse ends the count:
    that refusal comes once the dice are there."""
    counter = LowestDice()
    for step in later:
        try:
            step(counter)
        except EngineError:
            break
    extra = sum(1 for r in counter.rolls if (r.purpose, r.sides) == (short.purpose, short.sides))
    return DiceNeeded(short.purpose, short.sides, short.needed + extra)


def largest_faces(purposes: Iterable[Any]) -> dict[str, int]:
    """The largest die each purpose is rolled on, from a system's ``dice_purposes`` (as
    ``systems.describe`` lists them): the largest of ``sides`` (a number or a list),
    ``sides_by_mode`` and ``sides_by_range``. A purpose given no size is left out, and so
    is anything that is not such an entry (a plugin's ``describe()`` is not checked):
    its values are then held to the engine's largest die only."""
    largest: dict[str, int] = {}
    for entry in purposes:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("purpose"), str):
            continue
        sizes: list[Any] = []
        for key in ("sides", "sides_by_mode", "sides_by_range"):
            value = entry.get(key)
            if isinstance(value, Mapping):
                sizes += value.values()
            elif isinstance(value, list | tuple):
                sizes += value
            else:
                sizes.append(value)
        sides = [n for n in sizes if isinstance(n, int) and not isinstance(n, bool) and n > 0]
        if sides:
            largest[entry["purpose"]] = max(sides)
    return largest


def dice_source(dice: Mapping[str, Sequence[int]] | None, seed: int | None) -> DiceSource:
    """The source a call asks for: supplied dice when given, else random (seeded or not)."""
    if dice is not None:
        return SuppliedDice(dice)
    return RandomDice(seed)
