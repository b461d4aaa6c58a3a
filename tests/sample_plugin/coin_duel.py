"""Coin duel: the worked example of docs/PLUGINS.md, a whole plugin in one module.

The attacker spends one point of luck to call heads or tails and flips a coin (a d2:
1 is heads). A right call costs the defender one point of luck (two under the house
rule H-COIN-DOUBLE). Not a real psionics system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator

from companion.plugins import MethodError, MethodSpec, Plugin
from engine import (
    Change,
    DiceSource,
    Event,
    HouseRule,
    InvalidCombatant,
    Resolution,
    RulesViolation,
    System,
    schema_problems,
)

COMBATANT: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name"],
    "additionalProperties": False,
    "properties": {"id": {"type": "string", "minLength": 1},
                   "name": {"type": "string"},
                   "luck": {"type": "integer", "minimum": 0, "maximum": 10}},
}
REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["attacker", "defender", "attack"],
    "additionalProperties": False,
    "properties": {"attacker": {"type": "object"},
                   "defender": {"type": "object"},
                   "attack": {"type": "object", "required": ["call"],
                              "additionalProperties": False,
                              "properties": {"call": {"enum": ["heads", "tails"]}}},
                   "defense": {"type": "null"},
                   "options": {"type": "object"}},
}
_COMBATANT = Draft202012Validator(COMBATANT)


class CoinDuel(System):
    """Call heads or tails; a right call costs the defender luck."""

    id = "coin-duel"
    name = "Coin duel"
    source = "docs/PLUGINS.md"

    def house_rules(self) -> Sequence[HouseRule]:
        return [HouseRule("H-COIN-DOUBLE", "A right call costs 2 luck instead of 1.",
                          False)]

    def combatant_schema(self) -> dict[str, Any]:
        return COMBATANT

    def request_schema(self) -> dict[str, Any]:
        return REQUEST

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "source": self.source,
                "modes": {"heads": {"cost": 1}, "tails": {"cost": 1}}, "tables": {},
                "combatant_schema": COMBATANT, "request_schema": REQUEST,
                "dice_purposes": [{"purpose": "attack", "sides": [2], "summed": False,
                                   "text": "the coin: 1 is heads, 2 is tails"}],
                "house_rules": [rule.to_json() for rule in self.house_rules()]}

    def combatant(self, raw: Mapping[str, Any], path: str = "") -> dict[str, Any]:
        problems = schema_problems(_COMBATANT, raw, path)
        if problems:
            raise InvalidCombatant(problems)
        return {"luck": 3, **raw}

    def _sides(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The full attacker and defender; the rules refuse an attacker without luck."""
        attacker = self.combatant(request["attacker"], "/attacker")
        defender = self.combatant(request["defender"], "/defender")
        if attacker["luck"] < 1:
            raise RulesViolation("coin-needs-luck", f"{attacker['name']} has no luck "
                                 "left to call with", attacker["id"])
        return attacker, defender

    def _loss(self, request: Mapping[str, Any], defender: Mapping[str, Any]) -> int:
        """The luck a right call takes from ``defender``."""
        options = self.options(request.get("options"))
        loss: int = min(2 if options["H-COIN-DOUBLE"] else 1, defender["luck"])
        return loss

    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        # The daemon has checked the request against request_schema; supplied dice
        # are checked here, used or not (a "heads" of 3 is refused).
        self.check_dice(dice)
        attacker, defender = self._sides(request)
        mark = dice.mark()
        face = "heads" if dice.roll("attack", 2, attacker["id"]) == 1 else "tails"
        call = request["attack"]["call"]
        lost = self._loss(request, defender) if face == call else 0
        spent = {**attacker, "luck": attacker["luck"] - 1}
        hurt = {**defender, "luck": defender["luck"] - lost}
        events = [Event("luck-spent", attacker["id"], {"amount": 1})]
        if lost:
            events.append(Event("luck-lost", defender["id"], {"amount": lost}))
        return Resolution(
            system=self.id, outcome="right" if face == call else "wrong",
            attacker=Change(attacker["id"], attacker, spent),
            defender=Change(defender["id"], defender, hurt),
            rolls=dice.rolls_since(mark), events=tuple(events),
            summary=f"{attacker['name']} calls {call}; the coin shows {face}.",
            fields={"face": face}, unused_dice=dice.unused())

    def odds(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _, defender = self._sides(request)
        lost = self._loss(request, defender)
        distribution = [[0, 0.5], [lost, 0.5]] if lost else [[0, 1.0]]
        return {"outcomes": {"right": 0.5, "wrong": 0.5},
                "damage": {"mean": lost / 2, "distribution": distribution,
                           "truncated_mass": 0.0}}


SYSTEM = CoinDuel()
#: The error code coin.house_rule answers for a house rule the system does not have.
NO_SUCH_RULE = 4710


async def house_rule(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``coin.house_rule``: one house rule of the coin duel, by id."""
    for rule in SYSTEM.house_rules():
        if rule.id == params["id"]:
            return rule.to_json()
    raise MethodError(NO_SUCH_RULE, "No such house rule",
                      {"id": params["id"], "known": [r.id for r in SYSTEM.house_rules()]})


PLUGIN = Plugin(name="coin-duel", version="1.0", systems=(SYSTEM,), methods=(
    MethodSpec("coin.house_rule",
               {"type": "object", "required": ["id"], "additionalProperties": False,
                "properties": {"id": {"type": "string", "maxLength": 100}}},
               house_rule, "One house rule of the coin duel: {id, text, default, choices}.",
               result={"type": "object"}, errors=(NO_SUCH_RULE,)),
))
