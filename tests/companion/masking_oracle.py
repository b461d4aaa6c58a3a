"""``encounter.log``'s masking as it was before ``PendingMemo``: every stored state read
and its pending choices worked out again at every call. The walk that decides what to
mask is the daemon's own (``masked_log``, ``_Secrets``); what differs is where the
pending choices come from, which is what the memo changed. The oracle the remembered
pending choices must agree with, and ``bench/encounter_log.py``'s "before". Not used
by the daemon.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from companion.methods.encounter import PendingMemo, masked_log
from companion.store import EncounterStore, StepRecord
from engine.system import System


async def old_log(store: EncounterStore, id: str, system: System | None,
                  since: int = 0) -> dict[str, Any]:
    """``encounter.log``'s answer as the old path gave it."""
    record = await store.get(id)
    steps = await store.steps(record.id, states=system is not None)
    memo = None if system is None else everything_read(steps, system, record.created_at)
    logged = [s for s in masked_log(steps, system, memo) if s["revision"] > since]
    return {"id": record.id, "revision": record.revision, "steps": logged}


def everything_read(steps: list[StepRecord], system: System, created_at: str) -> PendingMemo:
    """A memo filled from every step's state at once, undone ones included: the
    pending choices after each declaration, for its combatant, and before each resolve."""
    memo = PendingMemo(system, created_at)
    first = next((s.state for s in steps if s.state is not None), None)
    memo.gives = first is not None and system.encounter_pending_choices(first) is not None
    if not memo.gives:
        return memo
    after: dict[int, Mapping[str, Any]] = {s.revision: memo.pending(s.state or {})
                                           for s in steps}
    for step in steps:
        if step.kind == "declare":
            memo.declared[step.revision] = after[step.revision].get(
                str(step.params.get("combatant_id")))
        elif step.kind == "resolve":
            memo.found[step.revision] = after.get(step.revision - 1, {})
    return memo
