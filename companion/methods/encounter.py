"""``encounter.*``: encounters advanced in steps and stored before every answer.

Writes to one encounter are serialised by a lock and name the revision they read, so a
write never lands on a state it did not see; a caller's own ``revision`` is checked too
(4009). The system owns the state and its round logic; this module only sequences,
stores and hides: a declared choice is never echoed, ``encounter.get`` shows the system's
view (which holds no pending choice) and ``encounter.log`` masks a declaration until a
resolve step that is still in effect has used it, unless the system calls it a public
action (one that changes the state when declared).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from adapters.base import Imported
from engine.dice import dice_source
from engine.errors import InvalidInput, LimitExceeded, Problem, UnknownCombatant, json_text
from engine.system import System

from ..combatants import (
    ImportedRef,
    import_ref,
    is_adapter_ref,
    kept_data,
    normaliser,
    refused_where_read,
)
from ..errors import (
    DICE_NEEDED,
    NOT_FOUND,
    RULES_VIOLATION,
    STALE_REVISION,
    STORE_UNAVAILABLE,
    logged_error_id,
)
from ..jsontext import encode
from ..registry import MethodSpec, PreparedJSON
from ..schemas import (
    COMBATANT,
    COMBATANT_ID,
    COMBATANT_IDS,
    DICE,
    ENCOUNTER_ID,
    ENCOUNTER_NAME,
    ENCOUNTER_SUMMARY,
    LOGGED_STEP,
    NO_PARAMS,
    OPTIONS,
    REVISION,
    REVISION_NOW,
    ROLLS,
    SEED,
    SYSTEM_ID,
    UPDATES,
    UPDATES_FAILED,
    WARNINGS,
    answer,
)
from ..services import Context, Services
from ..store import EncounterRecord, StaleRevision, StepRecord

log = logging.getLogger("mindscape.encounters")

WRITE_ERRORS = (NOT_FOUND, STALE_REVISION, RULES_VIOLATION, STORE_UNAVAILABLE)
#: How many encounters' pending choices ``encounter.log`` keeps (``PendingMemo``); the
#: least recently read goes first. One of 2 000 steps and 64 combatants takes 1 to 2 MiB.
PENDING_MEMO_ENCOUNTERS = 16
#: How many encounters' ``{adapter, data}`` combatants the write-backs keep
#: (``_adapter_refs``); the least recently used goes first. What an adapter reads of a
#: sheet is kept (``kept_data``): one of 64 real Foundry actors takes about 1 MiB.
ADAPTER_REF_ENCOUNTERS = 16


def _expect(record: EncounterRecord, params: Mapping[str, Any]) -> None:
    expected = params.get("revision")
    if expected is not None and expected != record.revision:
        raise StaleRevision(record.id, record.revision, expected)


def _combatant_ids(view: Mapping[str, Any]) -> set[str]:
    combatants = view.get("combatants") or {}
    if isinstance(combatants, Mapping):
        return {str(k) for k in combatants}
    return {str(c.get("id")) for c in combatants if isinstance(c, Mapping)}


def _combatant(view: Mapping[str, Any], combatant_id: str) -> Any:
    combatants = view.get("combatants") or {}
    if isinstance(combatants, Mapping):
        return combatants.get(combatant_id)
    for c in combatants:
        if isinstance(c, Mapping) and str(c.get("id")) == combatant_id:
            return c
    return None


async def _load(ctx: Context, params: Mapping[str, Any]) -> tuple[EncounterRecord, System]:
    record = await ctx.services.store.get(params["id"])
    return record, ctx.services.encounter_system(record.system, "/id")


_T = TypeVar("_T")


def _remember(cache: OrderedDict[str, _T], key: str, value: _T, limit: int) -> None:
    """``value`` as the most recently used entry of ``cache`` for ``key``; the least
    recently used dropped beyond ``limit`` entries."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)


async def _adapter_refs(ctx: Context, record: EncounterRecord, system: System
                        ) -> dict[str, ImportedRef]:
    """The combatants of ``record`` that were added as ``{adapter, data}`` of an
    installed adapter, by id.

    Read from the log once and then kept up to date by ``encounter.add`` and
    ``encounter.refresh`` (reading the log at every resolve would make a long fight
    slower step by step), for the ``ADAPTER_REF_ENCOUNTERS`` encounters used last.
    """
    services = ctx.services
    cache = services.adapter_refs
    known = cache.get(record.id)
    if known is None:
        known = await _read_adapter_refs(services, record, system)
    _remember(cache, record.id, known, ADAPTER_REF_ENCOUNTERS)
    return {combatant_id: ImportedRef("/combatant", "combatant",
                                      services.adapters[adapter_id], data, {}, ())
            for combatant_id, (adapter_id, data) in known.items()
            if adapter_id in services.adapters}


async def _read_adapter_refs(services: Services, record: EncounterRecord, system: System
                             ) -> dict[str, tuple[str, Any]]:
    """``_adapter_refs`` from the log: the latest ``add`` or ``refresh`` in effect of
    each combatant (a step an undo took away gave the encounter nothing), read newest
    first, and only those in full. A step stored before encounters kept only what an
    adapter reads holds the whole sheet: only that part of it is kept (``kept_data``)."""
    store = services.store
    outline = await store.steps(record.id, states=False, details=())
    taken = [s for s in reversed(outline)
             if s.kind in ("add", "refresh") and s.undone_by is None]
    known: dict[str, tuple[str, Any]] = {}
    seen: set[str] = set()
    async for step in store.step_details(record.id, taken):
        if not step.result:
            continue
        combatant_id = str(step.result.get("combatant_id"))
        if combatant_id in seen:
            continue  # an earlier step of a combatant whose latest was read already
        seen.add(combatant_id)
        raw = step.params.get("combatant")
        # else the id was given (again, after an undo) to a plain combatant
        if isinstance(raw, dict) and is_adapter_ref(raw) \
                and str(raw["adapter"]) in services.adapters:
            adapter = services.adapters[str(raw["adapter"])]
            known[combatant_id] = (adapter.id, kept_data(adapter, raw["data"], system.id))
    return known


async def _updates(ctx: Context, record: EncounterRecord, system: System,
                   before_state: Mapping[str, Any], after_state: Mapping[str, Any]
                   ) -> list[dict[str, Any]]:
    refs = await _adapter_refs(ctx, record, system)
    if not refs:
        return []
    before = system.encounter_view(before_state)
    after = system.encounter_view(after_state)
    normalise = normaliser(system, record.options)
    updates: list[dict[str, Any]] = []
    for combatant_id, ref in refs.items():
        old, new = _combatant(before, combatant_id), _combatant(after, combatant_id)
        if isinstance(old, Mapping) and isinstance(new, Mapping) and old != new:
            updates.extend(ref.adapter.updates(ref.data, system.id, old, new,
                                               normalise=normalise))
    return updates


async def encounter_create(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.create``: a new encounter of a system, at revision 0."""
    system = ctx.services.encounter_system(params["system"])
    options = dict(params.get("options") or {})
    system.options(options)
    state = system.encounter_new(options)
    record = await ctx.services.store.create(system.id, params.get("name"), options, state)
    return {"id": record.id, "revision": record.revision, "system": record.system,
            "name": record.name}


@dataclass(frozen=True)
class _Given:
    """The combatant ``params["combatant"]`` gives, imported when it is ``{adapter,
    data}`` (``ref``), and the adapter's warnings."""

    raw: Any
    combatant: Any
    warnings: list[str]
    ref: ImportedRef | None = None

    def stored(self, system: System) -> Any:
        """``raw`` as the step stores it: an ``{adapter, data}``'s data cut down to what
        the adapter reads (``kept_data``). A whole actor is mostly what no import or
        write-back reads (a Foundry actor's items, other modules' flags: 100 to 160
        KB, or whatever a player puts in its flags), and every refresh stored it again,
        read it back for each write-back cache and ``encounter.log`` answer, and kept
        it in memory."""
        if self.ref is None:
            return self.raw
        whole = Imported(self.ref.combatant, self.ref.warnings)
        return {"adapter": self.raw["adapter"],
                "data": kept_data(self.ref.adapter, self.ref.data, system.id, whole)}

    @contextmanager
    def refused_where_read(self) -> Iterator[None]:
        """The system's refusal of an ``{adapter, data}`` combatant (its paths under
        ``/combatant``) reported at the place in the sheet each field was read from,
        as ``adapters.import`` reports it (``refused_where_read``): the combatant the
        adapter built is not what the caller sent. A combatant object's is left as it
        is."""
        try:
            yield
        except InvalidInput as exc:
            if self.ref is None:
                raise
            raise refused_where_read(self.ref, exc, "/combatant") from None


def _given(services: Services, raw: Any, system: System) -> _Given:
    """The combatant ``params["combatant"]`` gives (``_Given``)."""
    if not is_adapter_ref(raw):
        return _Given(raw, raw, [])
    ref = import_ref(services, raw, system.id, "/combatant", "combatant")
    return _Given(raw, ref.combatant, list(ref.warnings), ref)


async def encounter_add(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.add``: a combatant (or ``{adapter, data}``) joins; stored as a step."""
    services = ctx.services
    async with services.encounter_lock(params["id"]):
        record, system = await _load(ctx, params)
        _expect(record, params)
        given = _given(services, params["combatant"], system)
        warnings = given.warnings
        limit = services.settings.limits.max_combatants
        if len(_combatant_ids(system.encounter_view(record.state))) >= limit:
            raise LimitExceeded(Problem(
                "/combatant", f"an encounter holds at most {limit} combatants (limit "
                              "max_combatants)"))
        with given.refused_where_read():
            state, combatant_id = system.encounter_add(record.state, given.combatant)
        stored = given.stored(system)
        new = await services.store.append(
            record.id, expected_revision=record.revision, kind="add",
            params={"combatant": stored}, rolls=[],
            result={"combatant_id": combatant_id, "warnings": warnings}, state=state)
        _remember_ref(services, record.id, combatant_id, stored)
    await services.hub.encounter_changed(new.id, new.revision)
    return {"combatant_id": combatant_id, "revision": new.revision, "warnings": warnings,
            "updates": []}


async def encounter_refresh(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.refresh``: a combatant taken again from its sheet (or a combatant
    object), after changes made outside the encounter; stored as a step when a field
    changed, a choice was dropped or the write-backs now go to another sheet
    (``Adapter.written_to``: a Foundry token placed again, actorLink turned on or off)."""
    services = ctx.services
    combatant_id = params["combatant_id"]
    async with services.encounter_lock(params["id"]):
        record, system = await _load(ctx, params)
        _expect(record, params)
        given = _given(services, params["combatant"], system)
        warnings = given.warnings
        named = given.raw.get("id") if isinstance(given.raw, Mapping) and given.ref is None \
            else None
        if isinstance(named, str) and named != combatant_id:
            # Its id stays, as a refresh promises; but a combatant object written with
            # another's id is most often the wrong one sent: say so to the caller.
            warnings = [*warnings, f"the combatant given names the id {json_text(named, 60)}; "
                                   f"it was taken as {json_text(combatant_id, 60)}, whose id "
                                   "stays"]
        with given.refused_where_read():
            state = system.encounter_replace(record.state, combatant_id, given.combatant)
        before = _combatant(system.encounter_view(record.state), combatant_id)
        after = _combatant(system.encounter_view(state), combatant_id)
        changed = _changed_fields(before, after)
        dropped = _dropped_choices(system, record.state, state)
        held = (await _adapter_refs(ctx, record, system)).get(combatant_id)
        # Another sheet with the same stats (a Foundry token placed again, actorLink
        # turned on or off) is stored too: write-backs go where it was last taken from.
        # (The sheet as the write-backs left it is the same one.)
        moved = _written_to(given.ref, system) != _written_to(held, system)
        if not changed and not dropped and not moved:
            # the sheet says what the encounter holds: nothing to store or announce
            return {"combatant_id": combatant_id, "revision": record.revision,
                    "changed": [], "dropped_choices": [], "warnings": warnings}
        stored = given.stored(system)
        new = await services.store.append(
            record.id, expected_revision=record.revision, kind="refresh",
            params={"combatant_id": combatant_id, "combatant": stored}, rolls=[],
            result={"combatant_id": combatant_id, "changed": changed,
                    "dropped_choices": dropped, "warnings": warnings}, state=state)
        _remember_ref(services, record.id, combatant_id, stored)
    await services.hub.encounter_changed(new.id, new.revision)
    return {"combatant_id": combatant_id, "revision": new.revision, "changed": changed,
            "dropped_choices": dropped, "warnings": warnings}


def _changed_fields(before: Any, after: Any) -> list[str]:
    """The fields of a combatant that differ between two views of it."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return []
    return sorted(k for k in {*before, *after} if before.get(k) != after.get(k))


def _dropped_choices(system: System, before: Mapping[str, Any],
                     after: Mapping[str, Any]) -> list[str]:
    """Who had a declared choice in ``before`` that ``after`` no longer holds (the rules
    threw it away when a combatant was taken again): they must declare again. Empty
    when the system does not say which choices it holds."""
    held, kept = (system.encounter_pending_choices(before),
                  system.encounter_pending_choices(after))
    if held is None or kept is None:
        return []
    return [cid for cid in held if cid not in kept]


def _written_to(ref: ImportedRef | None, system: System) -> tuple[str, Any] | None:
    """Where the write-backs of the sheet ``ref`` go: its adapter and what
    ``Adapter.written_to`` says; ``None`` for a combatant object (no write-backs)."""
    return None if ref is None else (ref.adapter.id, ref.adapter.written_to(ref.data, system.id))


def _remember_ref(services: Services, encounter_id: str, combatant_id: str,
                  stored: Any) -> None:
    """Keep the cached ``{adapter, data}`` of the encounter's combatants up to date
    (``_adapter_refs``) after ``stored`` was stored for ``combatant_id``."""
    known = services.adapter_refs.get(encounter_id)
    if known is None:
        return
    if is_adapter_ref(stored) and str(stored["adapter"]) in services.adapters:
        known[combatant_id] = (str(stored["adapter"]), stored["data"])
    else:
        known.pop(combatant_id, None)


async def encounter_declare(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.declare``: record a secret choice; answer only who is still awaited.
    A public action (a system's choice that applies when declared: power-pool's release,
    keep, rest ...) changes combatants at once, so its answer carries what it did
    (``System.encounter_action``: events and a summary, stored in the step's result too)
    and their write-backs, as a step's does; a secret choice's answer carries none."""
    services = ctx.services
    async with services.encounter_lock(params["id"]):
        record, system = await _load(ctx, params)
        _expect(record, params)
        ids = _combatant_ids(system.encounter_view(record.state))
        combatant_id = params["combatant_id"]
        if combatant_id not in ids:
            raise UnknownCombatant(combatant_id)
        choice = params["choice"]
        listed = choice.get("attacks")
        # (a system checks the shape of the whole choice: ``attacks`` may be anything)
        attacks = [choice.get("attack"), *(listed if isinstance(listed, list) else [])]
        for attack in attacks:
            if isinstance(attack, Mapping) and attack.get("target") is not None \
                    and str(attack["target"]) not in ids:
                raise UnknownCombatant(str(attack["target"]))
        public = system.encounter_choice_is_public(choice)
        said: dict[str, Any] = {}
        if public:
            state, said = system.encounter_action(record.state, combatant_id, choice)
        else:
            state = system.encounter_declare(record.state, combatant_id, choice)
        waiting_for = system.encounter_waiting_for(state)
        new = await services.store.append(
            record.id, expected_revision=record.revision, kind="declare",
            params={"combatant_id": combatant_id, "choice": choice}, rolls=[],
            result={"waiting_for": waiting_for, **said}, state=state)
        updates: dict[str, Any] = {"updates": []}
        if public:
            updates = await _stored_updates(ctx, record, system, record.state, state,
                                            new.revision)
    await services.hub.encounter_changed(new.id, new.revision)
    # A secret choice is never echoed: its answer is the same whatever was chosen. A
    # public action's says what it did (its events and summary).
    return {"revision": new.revision, "waiting_for": waiting_for, **said, **updates}


async def encounter_resolve(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.resolve``: resolve the current step, store it with its dice."""
    services = ctx.services
    async with services.encounter_lock(params["id"]):
        record, system = await _load(ctx, params)
        _expect(record, params)
        force = bool(params.get("force", False))
        services.check_resolvable(system, record.state, force)
        dice = dice_source(params.get("dice"), params.get("seed"))
        state, step = system.encounter_resolve(record.state, dice, force)
        rolls = [r.to_json() for r in dice.rolls]
        # The answer is made before the step is stored, and once it is stored nothing
        # turns the call into an error: an error answer always means nothing happened.
        result = _step_answer(system, step)
        result.setdefault("rolls", rolls)
        stored_params: dict[str, Any] = {k: params[k] for k in ("dice", "seed", "force")
                                         if k in params}
        new = await services.store.append(
            record.id, expected_revision=record.revision, kind="resolve",
            params=stored_params, rolls=rolls, result=step, state=state)
        result.update(await _stored_updates(ctx, record, system, record.state, state,
                                            new.revision))
    await services.hub.encounter_changed(new.id, new.revision)
    result["revision"] = new.revision
    return result


async def _stored_updates(ctx: Context, record: EncounterRecord, system: System,
                          before_state: Mapping[str, Any], after_state: Mapping[str, Any],
                          revision: int) -> dict[str, Any]:
    """``{"updates": [...]}`` for a step already stored; if the write-back cannot be
    made, ``{"updates": [], "updates_failed": {error_id}}``: the step is done, and the
    client is told that the sheets were not, the log has the cause."""
    try:
        return {"updates": await _updates(ctx, record, system, before_state, after_state)}
    except Exception:
        error_id = logged_error_id(log, "write-back of a stored step failed",
                                   encounter=record.id, revision=revision)
        return {"updates": [], "updates_failed": {"error_id": error_id}}


def _step_answer(system: System, step: Any) -> dict[str, Any]:
    """The answer's object for a system's step: the step itself, or ``{"results": [...]}``
    for a system that gives a list of exchange results (API.md: "the resolved step ...
    or a list of them")."""
    if isinstance(step, Mapping):
        return dict(step)
    if isinstance(step, list | tuple):
        return {"results": list(step)}
    raise TypeError(f"system {system.id} resolved a step of type {type(step).__name__}")


async def encounter_undo(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.undo``: revert the last resolved step exactly."""
    services = ctx.services
    async with services.encounter_lock(params["id"]):
        record, system = await _load(ctx, params)
        _expect(record, params)
        new, undone = await services.store.undo(record.id, expected_revision=record.revision)
        # The undo may take away adds and refreshes: their sheets are read from the log
        # again when next needed.
        services.adapter_refs.pop(record.id, None)
        updates = await _stored_updates(ctx, record, system, record.state, new.state,
                                        new.revision)
    await services.hub.encounter_changed(new.id, new.revision)
    return {"revision": new.revision, "undone": undone.revision, **updates}


async def encounter_get(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.get``: the system's public view and the encounter's revision."""
    record, system = await _load(ctx, params)
    view = dict(system.encounter_view(record.state))
    view.update({"id": record.id, "system": record.system, "name": record.name,
                 "revision": record.revision})
    view.setdefault("options", record.options)
    return view


def _voided(steps: list[StepRecord]) -> set[int]:
    """Revisions whose effect an undo took away: the steps between the undone resolve
    and the undo (their declarations were never resolved)."""
    out: set[int] = set()
    for step in steps:
        if step.kind == "undo":
            undoes = int(step.params.get("undoes", step.revision))
            out.update(range(undoes + 1, step.revision))
    return out


@dataclass(eq=False)
class PendingMemo:
    """What ``_Secrets`` compares of one encounter's stored states, kept between
    ``encounter.log`` calls: the pending choices (``encounter_pending_choices``) after
    each declaration, for its combatant, and before each resolve. A stored state never
    changes (an undo appends a step and only marks earlier ones ``undone_by``), and a
    system's pending choices depend on the state alone, so what the system made of a
    state holds for good: each call reads only the states of the steps logged since the
    last one, and no state is kept.
    """

    system: System
    #: the encounter's ``created_at``: an id used again never gets another's memo
    created_at: str
    #: whether the system gives pending choices (of the first state); ``None``: not read
    gives: bool | None = None
    #: declare revision -> its combatant's pending choice after it (``None``: none)
    declared: dict[int, Any] = field(default_factory=dict)
    #: resolve revision -> the pending choices after the step before it
    found: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    #: one call reads the states at a time; another waits, then finds them known
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def pending(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        """The pending choices ``state`` holds (none when the system does not say)."""
        known = self.system.encounter_pending_choices(state) if state else None
        return known if known is not None else {}


async def _pending_memo(services: Services, record: EncounterRecord, system: System,
                        steps: list[StepRecord]) -> PendingMemo:
    """The encounter's ``PendingMemo``, brought up to ``steps`` (the whole log)."""
    memos = services.pending_memos
    memo = memos.get(record.id)
    if memo is None or memo.system is not system or memo.created_at != record.created_at:
        memo = PendingMemo(system, record.created_at)
    _remember(memos, record.id, memo, PENDING_MEMO_ENCOUNTERS)
    store = services.store
    async with memo.lock:
        if memo.gives is None and steps:
            async for _, first in store.step_states(record.id, [steps[0].revision]):
                memo.gives = system.encounter_pending_choices(first) is not None
        if not memo.gives:
            return memo
        by_revision = {s.revision: s for s in steps}
        # Only the states masking reads: after a declaration still in effect (an undone
        # one is hidden for good) and before a resolve.
        wanted = {s.revision for s in steps if s.kind == "declare" and s.undone_by is None
                  and s.revision not in memo.declared}
        for step in steps:
            if step.kind == "resolve" and step.revision not in memo.found:
                if step.revision - 1 in by_revision:
                    wanted.add(step.revision - 1)
                else:
                    memo.found[step.revision] = {}
        async for revision, state in store.step_states(record.id, wanted):
            pending = memo.pending(state)
            step = by_revision[revision]
            if step.kind == "declare":
                memo.declared[revision] = pending.get(str(step.params.get("combatant_id")))
            after = by_revision.get(revision + 1)
            if after is not None and after.kind == "resolve":
                memo.found[after.revision] = pending
    return memo


class _Secrets:
    """Which declarations and undone resolves ``encounter.log`` may show, worked out from
    the pending choices of the stored states (``PendingMemo``).

    A declaration is shown once a resolve still in effect used it: walking on from it,
    the first such resolve found the same choice pending for that combatant (an undone
    resolve on the way is stepped over to its undo, after which the choice is pending
    again). A later declaration by the same combatant replaces it, and a choice the
    rules threw away never reaches a resolve: either way it stays hidden for good. An
    undone resolve's dice and result show the choices it used, so they are shown only
    once every one of those choices is.
    """

    def __init__(self, steps: list[StepRecord], memo: PendingMemo) -> None:
        self.steps = {s.revision: s for s in steps}
        self.system = memo.system
        self.memo = memo
        #: undone resolve revision -> {combatant id: the declaration it used, if shown}
        self._used: dict[int, dict[str, bool]] = {}
        self.shown = {s.revision for s in steps
                      if s.kind == "declare" and self._declaration_shown(s)}

    def found(self, resolve: int) -> Mapping[str, Any]:
        """The pending choices the resolve at revision ``resolve`` found."""
        return self.memo.found.get(resolve, {})

    def _declaration_shown(self, declare: StepRecord) -> bool:
        if declare.undone_by is not None:
            return False  # taken away by an undo before any resolve used it
        combatant_id = declare.params.get("combatant_id")
        choice = self.memo.declared.get(declare.revision)
        if choice is None:
            # Nothing pending came of it: a public action, or a choice the rules dropped.
            return self.system.encounter_choice_is_public(declare.params.get("choice") or {})
        undone: list[int] = []
        revision = declare.revision + 1
        while (step := self.steps.get(revision)) is not None:
            if step.kind == "declare" and step.params.get("combatant_id") == combatant_id:
                shown = False  # replaced before any resolve in effect used it
                break
            if step.kind == "resolve":
                used = self.found(revision).get(str(combatant_id)) == choice
                if step.undone_by is None:
                    shown = used
                    break
                if used:
                    undone.append(revision)
                revision = step.undone_by
            revision += 1
        else:
            shown = False  # still pending
        for resolve in undone:
            self._used.setdefault(resolve, {})[str(combatant_id)] = shown
        return shown

    def resolve_shown(self, resolve: StepRecord) -> bool:
        """Whether an undone resolve's dice and result may be shown."""
        used = self._used.get(resolve.revision, {})
        return all(used.get(cid, False) for cid in self.found(resolve.revision))


#: The kinds of step whose params masking reads (``_Secrets``, ``_voided``,
#: ``PendingMemo``): an outline of the log with only their params is enough to mask.
MASKING_DETAILS = ("declare", "undo")


class _Masking:
    """What ``encounter.log`` hides of each step, decided on the whole log (or its
    outline with ``MASKING_DETAILS``): no stored state, no declaration's choice before
    a resolve still in effect used it (``_Secrets``, from ``memo`` brought up to
    ``steps``), and no undone resolve's dice (rolled or supplied, nor its seed) and
    result while they would show a choice that is hidden. A system that does not give
    its pending choices (``encounter_pending_choices`` is ``None``), or one no longer
    installed, gets a coarser rule: a declaration is shown once any resolve in effect
    followed it, unless voided; an undone resolve's dice and result never are."""

    def __init__(self, steps: list[StepRecord], system: System | None,
                 memo: PendingMemo | None) -> None:
        self.system = system
        self.secrets = None
        if system is not None and memo is not None and memo.gives:
            self.secrets = _Secrets(steps, memo)
        self.voided = _voided(steps)
        self.last_resolve = max((s.revision for s in steps
                                 if s.kind == "resolve" and s.undone_by is None
                                 and s.revision not in self.voided), default=0)
        #: undo revision -> the first resolve it took away whose result is hidden
        self.hidden_undone: dict[int, int] = {}
        for s in steps:
            if s.kind == "resolve" and s.undone_by is not None and self.hidden(s):
                first = self.hidden_undone.get(s.undone_by, s.revision)
                self.hidden_undone[s.undone_by] = min(first, s.revision)

    def hidden(self, step: StepRecord) -> bool:
        """Whether ``step`` (of the log masking was decided on) is masked."""
        if step.kind == "resolve":
            return step.undone_by is not None and (
                self.secrets is None or not self.secrets.resolve_shown(step))
        if step.kind == "refresh":
            # a sheet taken after a hidden resolve holds what it wrote (PSPs spent, the
            # defense raised): the choices it used, again pending
            first = self.hidden_undone.get(step.undone_by or 0)
            return first is not None and step.revision > first
        if step.kind != "declare":
            return False
        if self.secrets is not None:
            return step.revision not in self.secrets.shown
        if step.revision <= self.last_resolve and step.revision not in self.voided:
            return False
        return self.system is None or not self.system.encounter_choice_is_public(
            step.params.get("choice") or {})

    def entry(self, step: StepRecord) -> dict[str, Any]:
        """``step`` (in full) as the log shows it."""
        params: dict[str, Any] = dict(step.params)
        entry: dict[str, Any] = {"revision": step.revision, "kind": step.kind,
                                 "params": params, "rolls": step.rolls,
                                 "result": step.result, "created_at": step.created_at,
                                 "undone_by": step.undone_by}
        if self.hidden(step):
            if step.kind == "declare":
                entry["params"] = {"combatant_id": params.get("combatant_id"),
                                   "choice": None, "hidden": True}
            else:
                # The dice a GM supplied (and the seed they came from) would tell the
                # hidden choices apart as well as the rolls: how many of which sides.
                entry.update(params={k: v for k, v in params.items()
                                     if k not in ("dice", "seed", "combatant")},
                             rolls=None, result=None, hidden=True)
        return entry


def masked_log(steps: list[StepRecord], system: System | None,
               memo: PendingMemo | None) -> list[dict[str, Any]]:
    """The whole log ``steps`` as a player may see it (``_Masking``)."""
    masking = _Masking(steps, system, memo)
    return [masking.entry(step) for step in steps]


async def encounter_log(ctx: Context, params: dict[str, Any]) -> PreparedJSON:
    """``encounter.log``: every step (or those after ``since``), secret declarations
    masked until resolved.

    Masking needs the whole log (a later resolve reveals an earlier declaration), but
    only its outline (``MASKING_DETAILS``), read with the stored text of the steps to
    answer; each of those is then parsed and written as JSON text at once, so the
    answer's steps are never all held parsed (a long log of whole VTT sheets took a
    gigabyte)."""
    store = ctx.services.store
    record = await store.get(params["id"])
    # The log stays readable when the encounter's system is no longer installed.
    system = ctx.services.systems.get(record.system)
    # ``since`` only trims the answer. A client that keeps a copy must re-read a masked
    # step once it is resolved: it then asks from the oldest step still masked.
    since = params.get("since", 0)
    outline = await store.steps(record.id, states=False, details=MASKING_DETAILS,
                                texts_after=since)
    # Masking compares the pending choices of the stored states (``_Secrets``), read
    # once per step and remembered: a long log's states are far larger than the log.
    memo = None if system is None else await _pending_memo(ctx.services, record, system,
                                                           outline)
    masking = _Masking(outline, system, memo)
    # each step as masking saw it (an undo stored meanwhile is not in this answer)
    parts = [encode(masking.entry(step)) async for step in store.step_details(
        record.id, (step for step in outline if step.revision > since))]
    return PreparedJSON.written(b'{"id":%s,"revision":%d,"steps":[%s]}' % (
        encode(record.id), record.revision, b",".join(parts)))


async def encounter_list(ctx: Context, params: dict[str, Any]) -> list[dict[str, Any]]:
    """``encounter.list``: every encounter's id, system, name and revision."""
    return [{"id": r.id, "system": r.system, "name": r.name, "revision": r.revision,
             "created_at": r.created_at, "updated_at": r.updated_at}
            for r in await ctx.services.store.list()]


async def encounter_delete(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.delete``: remove an encounter and its log; tell its watchers."""
    services = ctx.services
    async with services.encounter_lock(params["id"]):
        record = await services.store.get(params["id"])
        _expect(record, params)
        await services.store.delete(record.id)
        services.adapter_refs.pop(record.id, None)
        services.pending_memos.pop(record.id, None)
    await services.hub.encounter_changed(record.id, None, deleted=True)
    services.hub.forget(record.id)
    return {"id": record.id, "deleted": True}


def _peer(ctx: Context, method: str) -> Any:
    if ctx.peer is None:
        raise InvalidInput.at("", f"{method} needs a WebSocket connection (GET /ws); over "
                                  "HTTP, poll encounter.get")
    return ctx.peer


async def encounter_watch(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.watch``: notices of this encounter's changes to the calling socket,
    from the revision it answers on. The socket is a watcher before the encounter is
    read, so a change stored meanwhile is in the answer or sent as a notice (both at
    worst), never lost; a read that fails (an unknown encounter) leaves it no watch it
    did not hold before."""
    peer = _peer(ctx, "encounter.watch")
    hub = ctx.services.hub
    encounter_id = params["id"]
    held = encounter_id in peer.watching
    hub.watch(peer, encounter_id)
    try:
        record = await ctx.services.store.get(encounter_id)
    except BaseException:
        if not held:
            hub.unwatch(peer, encounter_id)
        raise
    return {"id": record.id, "revision": record.revision, "watching": True}


async def encounter_unwatch(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``encounter.unwatch``: no more notices of this encounter to the calling socket."""
    peer = _peer(ctx, "encounter.unwatch")
    ctx.services.hub.unwatch(peer, params["id"])
    return {"id": params["id"], "watching": False}


def _params(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": properties}


_ID_ONLY = _params(["id"], id=ENCOUNTER_ID)
CHOICE = {
    "type": "object",
    "description": "the common members; a system may accept more (revised-2e: attacks, "
                   "close; power-pool: the public actions pass, release, keep, "
                   "cannot_perceive, rest) and checks the whole choice against its own "
                   "rules",
    "properties": {
        "stance": {"type": "string", "description": "combat-strength stance"},
        "attack": {"type": ["object", "null"],
                   "description": "as exchange.resolve's attack, plus target: combatant_id",
                   "properties": {"target": COMBATANT_ID}},
        "defense": {"type": ["object", "null"],
                    "description": "as exchange.resolve's defense"},
    },
}

METHODS = [
    MethodSpec("encounter.create",
               _params(["system"], system=SYSTEM_ID,
                       name={"type": "string", "maxLength": 200}, options=OPTIONS),
               encounter_create, "Start an encounter: {id, revision, system, name}.",
               result=answer(["id", "revision", "system", "name"], id=ENCOUNTER_ID,
                             revision=REVISION_NOW, system=SYSTEM_ID, name=ENCOUNTER_NAME),
               errors=(STORE_UNAVAILABLE,)),
    MethodSpec("encounter.add",
               _params(["id", "combatant"], id=ENCOUNTER_ID, combatant=COMBATANT,
                       revision=REVISION),
               encounter_add,
               "Add a combatant (or {adapter, data}): {combatant_id, revision, warnings, "
               "updates}. At most 64 combatants.",
               result=answer(["combatant_id", "revision", "warnings", "updates"],
                             combatant_id=COMBATANT_ID, revision=REVISION_NOW,
                             warnings=WARNINGS, updates=UPDATES,
                             updates_failed=UPDATES_FAILED),
               errors=WRITE_ERRORS),
    MethodSpec("encounter.refresh",
               _params(["id", "combatant_id", "combatant"], id=ENCOUNTER_ID,
                       combatant_id=COMBATANT_ID, combatant=COMBATANT, revision=REVISION),
               encounter_refresh,
               "Take a combatant again from its sheet ({adapter, data}) or a combatant "
               "object, after changes made outside the encounter (a sword blow's hit "
               "points, PSPs spent on a power): {combatant_id, revision, changed, "
               "dropped_choices, warnings}; changed names the fields that differ, and when "
               "none does, no choice is dropped and the write-backs would go to the same "
               "sheet (not another token, nor with actorLink turned on or off), nothing is "
               "stored and the revision stays. Its id stays. Every "
               "declared choice is checked again; dropped_choices names who must declare "
               "again because the rules no longer allow theirs. Undoing a resolve before "
               "it takes it away too.",
               result=answer(["combatant_id", "revision", "changed", "dropped_choices",
                              "warnings"],
                             combatant_id=COMBATANT_ID, revision=REVISION_NOW,
                             changed={"type": "array", "items": {"type": "string"},
                                      "description": "the combatant's fields that differ"},
                             dropped_choices=COMBATANT_IDS | {
                                 "description": "who must declare again"},
                             warnings=WARNINGS),
               errors=WRITE_ERRORS),
    MethodSpec("encounter.declare",
               _params(["id", "combatant_id", "choice"], id=ENCOUNTER_ID,
                       combatant_id=COMBATANT_ID, choice=CHOICE, revision=REVISION),
               encounter_declare,
               "Record a combatant's secret choice for the current step: {revision, "
               "waiting_for, updates}. The choice stays hidden until the step is "
               "resolved (updates is then empty); a system's public actions (power-pool: "
               "pass, release, keep, cannot_perceive, rest) apply, and show in "
               "encounter.log, at once; the answer then also says what the action did "
               "(events, summary; stored in the step's result too), and updates holds the "
               "write-backs of the combatants they changed (with updates_failed "
               "{error_id} when those cannot be made), as a resolve's does.",
               result=answer(["revision", "waiting_for", "updates"],
                             revision=REVISION_NOW,
                             waiting_for=COMBATANT_IDS | {
                                 "description": "who must still choose"},
                             updates=UPDATES, updates_failed=UPDATES_FAILED,
                             events={"type": "array", "items": {"type": "object"},
                                     "description": "a public action's events"},
                             summary={"type": "string",
                                      "description": "what a public action did"}),
               errors=WRITE_ERRORS),
    MethodSpec("encounter.resolve",
               _params(["id"], id=ENCOUNTER_ID, dice=DICE, seed=SEED,
                       force={"type": "boolean",
                              "description": "treat a missing choice as no attack and no "
                                             "defense"},
                       revision=REVISION),
               encounter_resolve,
               "Resolve the current step once nobody is waited for (or with force): the "
               "system's step result, revision, rolls and updates.",
               result=answer(["revision", "updates", "rolls"],
                             revision=REVISION_NOW, updates=UPDATES,
                             updates_failed=UPDATES_FAILED, rolls=ROLLS,
                             summary={"type": "string",
                                      "description": "the step in words (the built-in "
                                                     "systems)"},
                             results={"type": "array", "items": {"type": "object"},
                                      "description": "the step's exchanges, each as "
                                                     "exchange.resolve answers"}),
               errors=(*WRITE_ERRORS, DICE_NEEDED)),
    MethodSpec("encounter.get", _ID_ONLY, encounter_get,
               "The encounter as anyone may see it: phase, combatants, waiting_for, "
               "revision (never a pending choice).",
               result=answer(["id", "system", "name", "revision", "phase",
                              "combatants", "waiting_for", "options"],
                             id=ENCOUNTER_ID, system=SYSTEM_ID, name=ENCOUNTER_NAME,
                             revision=REVISION_NOW,
                             phase={"type": "string", "description": "the system's "
                                    "phase (combat-strength: intent or segment)"},
                             combatants={"type": "object",
                                         "additionalProperties": {"type": "object"},
                                         "description": "current state by combatant id"},
                             waiting_for=COMBATANT_IDS, options=OPTIONS),
               errors=(NOT_FOUND,)),
    MethodSpec("encounter.log",
               _params(["id"], id=ENCOUNTER_ID, since={
                   "type": "integer", "minimum": 0,
                   "description": "only the steps after this revision (default 0: all)"}),
               encounter_log,
               "Every step (or those after `since`) with its params, dice and result; "
               "declarations masked until resolved, and so are an undone resolve whose "
               "choices are secret again and a refresh it took away.",
               result=answer(["id", "revision", "steps"], id=ENCOUNTER_ID,
                             revision=REVISION_NOW,
                             steps={"type": "array", "items": LOGGED_STEP}),
               errors=(NOT_FOUND,)),
    MethodSpec("encounter.undo", _params(["id"], id=ENCOUNTER_ID, revision=REVISION),
               encounter_undo,
               "Revert the last resolved step exactly: {revision, undone, updates}.",
               result=answer(["revision", "undone", "updates"], revision=REVISION_NOW,
                             undone={"type": "integer", "minimum": 1,
                                     "description": "the revision of the step reverted"},
                             updates=UPDATES, updates_failed=UPDATES_FAILED),
               errors=WRITE_ERRORS),
    MethodSpec("encounter.list", NO_PARAMS, encounter_list,
               "Every encounter: [{id, system, name, revision, created_at, updated_at}].",
               result={"type": "array", "items": ENCOUNTER_SUMMARY}),
    MethodSpec("encounter.delete", _params(["id"], id=ENCOUNTER_ID, revision=REVISION),
               encounter_delete, "Delete an encounter and its log: {id, deleted}.",
               result=answer(["id", "deleted"], id=ENCOUNTER_ID, deleted={"const": True}),
               errors=(NOT_FOUND, STALE_REVISION, STORE_UNAVAILABLE)),
    MethodSpec("encounter.watch", _ID_ONLY, encounter_watch,
               "WebSocket only: receive encounter.changed {id, revision} after every "
               "change of this encounter: {id, revision, watching}. It watches from "
               "before it reads the encounter: a notice may come before this answer (one "
               "of a revision not above the answer's says nothing new).",
               result=answer(["id", "revision", "watching"], id=ENCOUNTER_ID,
                             revision=REVISION_NOW, watching={"const": True}),
               errors=(NOT_FOUND,)),
    MethodSpec("encounter.unwatch", _ID_ONLY, encounter_unwatch,
               "WebSocket only: stop encounter.changed notices for this encounter: "
               "{id, watching: false}.",
               result=answer(["id", "watching"], id=ENCOUNTER_ID,
                             watching={"const": False})),
]
