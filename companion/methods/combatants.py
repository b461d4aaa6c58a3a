"""``combatants.rest``: rest for combatants outside any encounter, with write-backs."""

from __future__ import annotations

from typing import Any

from ..combatants import answer_with_updates
from ..errors import DICE_NEEDED
from ..registry import MethodSpec
from ..schemas import REST, UPDATES
from ..services import Context


async def combatants_rest(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``combatants.rest``: what a rest gives back (PSPs, pool dice), plus write-backs."""
    system = ctx.services.rest_system(params["system"])
    return answer_with_updates(ctx.services, params, system, system.rest, "rest_schema")


METHODS = [
    MethodSpec("combatants.rest", REST, combatants_rest,
               "Rest for combatants outside any encounter, as the system's source says "
               "strength comes back (revised-2e: hours of sleep or meditation give PSPs; "
               "power-pool: a long rest gives back pool dice by H-PP-RECOVERY and ends "
               "maintained powers and control kept by an action). Conditions run out as "
               "the rest's rounds pass (power-pool: every timed condition; revised-2e: "
               "one without rounds counted as well); revised-2e powers lost to mind "
               "thrust count down by the rest's hours, carried over from rest to rest; "
               "a revised-2e open mind goes through its rounds until it "
               "closes (dice as in exchange.resolve). The result: {system, combatants: "
               "[{id, before, after}], events, rolls, summary, unused_dice, others?} "
               "(others: power-pool puppets set free) and updates for {adapter, data} "
               "combatants and puppets.",
               result={"type": "object", "required": ["system", "combatants", "events",
                                                      "rolls", "summary", "updates"],
                       "properties": {"updates": UPDATES}},
               errors=(DICE_NEEDED,), checked_by_system=True, system_schema="rest_schema"),
]
