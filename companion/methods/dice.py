"""``dice.roll``: a dice expression (``3d6+2``, ``2d6p``) rolled by the daemon."""

from __future__ import annotations

from typing import Any

from engine.dice import RandomDice
from engine.expr import roll_expression

from ..registry import MethodSpec
from ..schemas import SEED
from ..services import Context


async def dice_roll(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``dice.roll``: roll an expression with the daemon's dice (seedable)."""
    return roll_expression(params["expr"], RandomDice(params.get("seed")))


METHODS = [
    MethodSpec("dice.roll",
               {"type": "object", "required": ["expr"], "additionalProperties": False,
                "properties": {"expr": {"type": "string", "minLength": 1, "maxLength": 200,
                                        "description": "NdS[p] terms and numbers joined "
                                                       "by + or -, at most 100 dice of 1 "
                                                       "to 1000 sides"},
                               "seed": SEED}},
               dice_roll,
               "Roll a dice expression: {expr, total, rolls, capped}.",
               result={"type": "object", "required": ["total", "rolls"]}),
]
