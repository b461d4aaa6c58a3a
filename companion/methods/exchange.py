"""``exchange.resolve`` and ``exchange.odds``: one exchange outside any encounter."""

from __future__ import annotations

from typing import Any

from engine.dice import dice_source

from ..combatants import answer_with_updates, exchange_updates, import_combatants, warnings_of
from ..errors import DICE_NEEDED, RULES_VIOLATION
from ..registry import MethodSpec
from ..schemas import END_ROUND, EXCHANGE, ODDS, UPDATES
from ..services import Context


async def exchange_resolve(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.resolve``: one exchange with supplied or random dice, plus write-backs."""
    system = ctx.services.system(params["system"])
    request, refs = import_combatants(ctx.services, params, system.id)
    dice = dice_source(request.pop("dice", None), request.pop("seed", None))
    request.pop("system")
    result = system.resolve(request, dice).to_json()
    result["updates"] = exchange_updates(refs, system.id, result)
    if refs:
        result["warnings"] = warnings_of(refs)
    return result


async def exchange_odds(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.odds``: the exact odds of one exchange."""
    system = ctx.services.system(params["system"])
    request, refs = import_combatants(ctx.services, params, system.id)
    request.pop("system")
    result = dict(system.odds(request))
    # Odds change nothing: there is never anything to write back.
    result["updates"] = []
    if refs:
        result["warnings"] = warnings_of(refs)
    return result


async def exchange_end_round(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.end_round``: the end of a round for combatants of single exchanges
    (timed conditions, open minds), plus write-backs."""
    system = ctx.services.round_end_system(params["system"])
    return answer_with_updates(ctx.services, params, system, system.end_round)


METHODS = [
    MethodSpec("exchange.resolve", EXCHANGE, exchange_resolve,
               "Resolve one exchange: the result (system, outcome, attacker/defender "
               "before and after, rolls, events, summary, the system's own fields, "
               "unused_dice) and updates for {adapter, data} combatants.",
               result={"type": "object", "required": ["system", "outcome", "attacker",
                                                      "defender", "rolls", "events",
                                                      "summary", "updates"],
                       "properties": {"updates": UPDATES}},
               errors=(RULES_VIOLATION, DICE_NEEDED), checked_by_system=True),
    MethodSpec("exchange.odds", ODDS, exchange_odds,
               "Exact odds of an exchange: {outcomes: {name: p}, damage: {mean, "
               "distribution, truncated_mass}} and the system's own chances.",
               result={"type": "object", "required": ["outcomes"]},
               errors=(RULES_VIOLATION,), checked_by_system=True),
    MethodSpec("exchange.end_round", END_ROUND, exchange_end_round,
               "End a round for combatants fighting single exchanges (no encounter): "
               "timed conditions count down and open minds are checked as an encounter "
               "does at its round's end. The result: {system, combatants: [{id, before, "
               "after}], events, rolls, summary, unused_dice} and updates for {adapter, "
               "data} combatants.",
               result={"type": "object", "required": ["system", "combatants", "events",
                                                      "rolls", "summary", "updates"],
                       "properties": {"updates": UPDATES}},
               errors=(RULES_VIOLATION, DICE_NEEDED), checked_by_system=True,
               system_schema="end_round_schema"),
]
