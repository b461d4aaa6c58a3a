"""``exchange.resolve`` and ``exchange.odds``: one exchange outside any encounter."""

from __future__ import annotations

from typing import Any

from engine.dice import dice_source

from ..combatants import (
    answer_with_updates,
    combatants_request,
    exchange_updates,
    import_combatants,
    warnings_of,
)
from ..errors import DICE_NEEDED, RULES_VIOLATION
from ..registry import MethodSpec
from ..schemas import END_ROUND, EXCHANGE, ODDS, ROUND_END_CHOICES, UPDATES
from ..services import Context


async def exchange_resolve(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.resolve``: one exchange with supplied or random dice, plus write-backs."""
    system = ctx.services.system(params["system"])
    request, refs = import_combatants(ctx.services, params, system.id)
    dice = dice_source(request.pop("dice", None), request.pop("seed", None))
    request.pop("system")
    ctx.services.check_request(system, "request_schema", request)
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
    places = request.pop("assume_known", None)
    least = request.pop("least_chance", None)
    ctx.services.check_request(system, "request_schema", request)
    if places:
        request = system.assume_knowing(request, places)
    result = dict(system.odds(request))
    if least is not None:
        result = leave_out_unlikely(result, least, system.odds_beside_outcomes)
    # Odds change nothing: there is never anything to write back.
    result["updates"] = []
    if refs:
        result["warnings"] = warnings_of(refs)
    return result


def leave_out_unlikely(result: dict[str, Any], least: float,
                       beside: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``result`` without the entries of ``outcomes`` and ``damage.distribution`` less
    likely than ``least``, and ``left_out``: the chance each list left out in all. An
    entry whose chance is no number (a plugin's odds may hold anything) is kept, as are
    the outcomes named in ``beside`` (the system's ``odds_beside_outcomes``), which
    exclude none of the others and so could not be summed with them."""

    def unlikely(p: Any) -> bool:
        return isinstance(p, (int, float)) and not isinstance(p, bool) and p < least

    def goes(name: str, p: Any) -> bool:
        return name not in beside and unlikely(p)

    def chance(pair: Any) -> Any:
        return pair[1] if isinstance(pair, list) and len(pair) == 2 else None

    left_out = {"outcomes": 0.0, "distribution": 0.0}
    outcomes = result.get("outcomes")
    if isinstance(outcomes, dict):
        left_out["outcomes"] = sum((p for k, p in outcomes.items() if goes(k, p)), 0.0)
        result["outcomes"] = {k: p for k, p in outcomes.items() if not goes(k, p)}
    damage = result.get("damage")
    if isinstance(damage, dict) and isinstance(damage.get("distribution"), list):
        pairs = damage["distribution"]
        left_out["distribution"] = sum(
            (chance(pair) for pair in pairs if unlikely(chance(pair))), 0.0)
        result["damage"] = {**damage, "distribution": [
            pair for pair in pairs if not unlikely(chance(pair))]}
    result["left_out"] = left_out
    return result


async def exchange_end_round(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.end_round``: the end of a round for combatants of single exchanges
    (timed conditions, open minds), plus write-backs."""
    system = ctx.services.round_end_system(params["system"])
    return answer_with_updates(ctx.services, params, system, system.end_round,
                               "end_round_schema")


async def exchange_round_end_choices(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``exchange.round_end_choices``: what each combatant may choose at the end of this
    round and on what terms (revised-2e: paying to close a mind), changing nothing."""
    system = ctx.services.round_end_system(params["system"])
    request, refs = combatants_request(ctx.services, params, system)
    ctx.services.check_request(system, "round_end_choices_schema", request)
    result = system.round_end_choices(request)
    if refs:
        result["warnings"] = warnings_of(refs)
    return result


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
               "distribution, truncated_mass, dealt}} and the system's own chances. With "
               "assume_known, as if the minds it names knew their defense and could "
               "pay for it; with least_chance, without the entries of outcomes and "
               "damage.distribution less likely than that (summed in left_out).",
               result={"type": "object", "required": ["outcomes"]},
               errors=(RULES_VIOLATION,), checked_by_system=True),
    MethodSpec("exchange.end_round", END_ROUND, exchange_end_round,
               "End a round for combatants fighting single exchanges (no encounter): "
               "timed conditions count down and open minds are checked as an encounter "
               "does at its round's end; power-pool controllers keep or release their "
               "control as they choose. The result: {system, combatants: [{id, before, "
               "after}], events, rolls, summary, unused_dice, others?} (others: power-pool "
               "puppets set free) and updates for {adapter, data} combatants and puppets.",
               result={"type": "object", "required": ["system", "combatants", "events",
                                                      "rolls", "summary", "updates"],
                       "properties": {"updates": UPDATES}},
               errors=(RULES_VIOLATION, DICE_NEEDED), checked_by_system=True,
               system_schema="end_round_schema"),
    MethodSpec("exchange.round_end_choices", ROUND_END_CHOICES, exchange_round_end_choices,
               "What each combatant may choose at the end of this round, asked before "
               "exchange.end_round (revised-2e: whether a mind a critical hit opened this "
               "round, or one told at the last round's end that it still may, may pay to "
               "close, and the cost the end of round will charge). "
               "Changes nothing and rolls no die. The result: {system, combatants: [{id, "
               "name, choices}], summary}; choices by name (systems.describe "
               "round_end_schema), revised-2e close: {cost, defense, basis, psp, payable, "
               "reason}; power-pool release, keep (with by) and cannot_perceive: lists "
               "of control links {targets, kept_by, wave}.",
               result={"type": "object", "required": ["system", "combatants", "summary"],
                       "properties": {"combatants": {"type": "array", "items": {
                           "type": "object", "required": ["id", "name", "choices"]}}}},
               errors=(), checked_by_system=True,
               system_schema="round_end_choices_schema"),
]
