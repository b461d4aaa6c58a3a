"""House defaults: named, described, switchable per call or per encounter.

Every decision RULES.md marks ``H-…`` is a ``HouseRule``. A system lists its
house rules; callers pass ``options: {"H-…": value}`` to switch them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput, Problem, pointer


@dataclass(frozen=True)
class HouseRule:
    """One house default: its RULES.md id, a one-line text, and its default value.

    ``choices`` lists the allowed values when the rule is more than on/off.
    """

    id: str
    text: str
    default: bool | str | int
    choices: tuple[bool | str | int, ...] = (True, False)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "default": self.default,
                "choices": list(self.choices)}


def resolve_options(rules: Sequence[HouseRule],
                    options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every house rule's value: the default unless ``options`` switches it.

    Unknown ids and values outside a rule's choices are invalid input naming
    ``/options/<id>``.
    """
    known = {r.id: r for r in rules}
    values: dict[str, Any] = {r.id: r.default for r in rules}
    problems: list[Problem] = []
    for key, value in (options or {}).items():
        rule = known.get(key)
        if rule is None:
            problems.append(Problem(pointer("/options", key),
                                    f"unknown house rule; known: "
                                    f"{json.dumps(sorted(known))}"))
        elif value not in rule.choices or type(value) is not type(rule.default):
            problems.append(Problem(pointer("/options", key), f"must be {_choices_text(rule)}"))
        else:
            values[key] = value
    if problems:
        raise InvalidInput(problems)
    return values


def _choices_text(rule: HouseRule) -> str:
    """What ``rule`` accepts, in JSON terms: a range of integers by its ends."""
    choices = list(rule.choices)
    numbers = [c for c in choices if type(c) is int]
    if len(numbers) == len(choices) > 10 and numbers == list(range(numbers[0],
                                                                   numbers[-1] + 1)):
        return f"an integer from {numbers[0]} to {numbers[-1]}"
    return f"one of {json.dumps(choices)}"
