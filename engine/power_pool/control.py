"""Psionic control as pure functions over combatant JSON (RULES.md §3.4).

Seed 001: "psionic control over a creature may be maintained either by dedicating a
die from the controller's current power pool to it, or by the controller using an
action each round"; "A creature under psionic control has their current power pool
reduced to 0"; "Any psionic powers the creature is maintaining cease ... and dice used
to maintain them are expended"; Psionic Wave: "all defenders must be released
simultaneously".

Every function returns new objects and leaves its arguments alone. A control *link*
is one entry of ``controlling`` or, for a Psionic Wave, all entries sharing a
``wave`` label; a die kept for a link is a ``dedicated`` entry with purpose
``control`` and ``target`` = the link key.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..errors import InvalidInput, RulesViolation, json_text
from ..results import Event, copy_json
from ..system import JSON, is_down
from .combatant import CONTROL_PURPOSE, link_key

#: H-PP-RECOVERY choices: what a long rest gives back.
RECOVERY_ALL = "all"
RECOVERY_HALF = "half"


def ending_with_control(tables: Mapping[str, Any]) -> frozenset[str]:
    """Conditions a mode imposes that last only while control lasts (possessed)."""
    return frozenset(
        effect["condition"]
        for mode in tables["modes"].values()
        for effect in mode.get("on_success", [])
        if not effect["outlasts_control"])


def add_condition(c: Mapping[str, Any], condition: str, round_ends: int | None) -> JSON:
    """``c`` with ``condition``; timed for ``round_ends`` round ends (the longer timer
    wins when it already has one), untimed when ``None`` (an untimed one stays so)."""
    out = copy_json(dict(c))
    had = condition in out["conditions"]
    if not had:
        out["conditions"].append(condition)
    timers: dict[str, int] = out["condition_rounds"]
    if round_ends is None:
        timers.pop(condition, None)
    elif not had or condition in timers:
        timers[condition] = max(timers.get(condition, 0), round_ends)
    return out


def remove_condition(c: Mapping[str, Any], condition: str) -> JSON:
    """``c`` without ``condition`` and its timer."""
    out = copy_json(dict(c))
    out["conditions"] = [x for x in out["conditions"] if x != condition]
    out["condition_rounds"].pop(condition, None)
    return out


def round_passes(c: Mapping[str, Any]) -> tuple[JSON, list[Event]]:
    """``c`` at a round's end: each timed condition loses a round end and ends with
    none left (``condition-ended``)."""
    out = copy_json(dict(c))
    timers: dict[str, int] = out["condition_rounds"]
    events = []
    for cond in list(timers):
        timers[cond] -= 1
        if timers[cond] <= 0:
            del timers[cond]
            out["conditions"] = [x for x in out["conditions"] if x != cond]
            events.append(Event("condition-ended", str(out["id"]), {"condition": cond}))
    return out, events


def condition_ended(name: str, event: Event) -> str:
    """"Ix is no longer dazed." for a ``condition-ended`` event."""
    return f"{name} is no longer {event.data['condition']}."


def dice_count(n: int) -> str:
    """"1 die", "3 dice"."""
    return "1 die" if n == 1 else f"{n} dice"


def long_rest_lines(after: Mapping[str, Any], events: Sequence[Event]) -> list[str]:
    """The summary's sentences of ``long_rest`` (``after``: the creature after it)."""
    name = after["name"]
    lines = []
    for e in events:
        if e.type == "pool-regained":
            lines.append(f"{name} regains {dice_count(e.data['amount'])} "
                         f"({after['pool']} in the pool).")
        elif e.type == "powers-ended":
            lines.append(f"{name}'s maintained powers end.")
        else:
            lines.append(condition_ended(name, e))
    return lines


def long_rest(c: Mapping[str, Any], rule: str) -> tuple[JSON, list[Event]]:
    """``c`` after a long rest: ``recover`` (maintained powers end, dice return by
    H-PP-RECOVERY) and every timed condition runs out (its timer counts round ends, and
    a long rest outlasts them all). Its control kept by an action has ended as the rest
    began (``rest_upkeep``, which needs the puppets)."""
    out = recover(c, rule)
    cid = str(out["id"])
    events = []
    ended = len(c["dedicated"]) - len(out["dedicated"])
    if ended:
        events.append(Event("powers-ended", cid, {"dice": ended, "reason": "rest"}))
    if out["pool"] != c["pool"]:
        events.append(Event("pool-regained", cid, {"amount": out["pool"] - c["pool"]}))
    for cond in list(out["condition_rounds"]):
        out = remove_condition(out, cond)
        events.append(Event("condition-ended", cid, {"condition": cond}))
    return out, events


def set_free(puppet: Mapping[str, Any], ending: Iterable[str]) -> JSON:
    """The puppet once control over it ends: no controller, and conditions that last
    only while controlled (possession) gone. A psionic creature's pool stays as it is (0)
    until it recovers: control expended it. A creature without psionics has no power
    pool to expend: its ``pool`` is the hit dice it defends with (H-PP-NO-POOL), 0 only
    while it is controlled, and they are its own again."""
    out = copy_json(dict(puppet))
    out["controlled_by"] = None
    if not out["psionic"]:
        out["pool"] = out["hit_dice"] - len(out["dedicated"])
    for condition in ending:
        if condition in out["conditions"]:
            out = remove_condition(out, condition)
    return out


def release_links(controller: Mapping[str, Any], keys: Iterable[str],
                  puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str],
                  reason: str) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """End the control links ``keys`` of ``controller``.

    Dice kept for them return to its pool. Puppets given in ``puppets`` (by id) are
    set free and returned; the others are named in the events only.
    """
    keys = set(keys)
    ending = tuple(ending)
    out = copy_json(dict(controller))
    ended = [e for e in out["controlling"] if link_key(e) in keys]
    out["controlling"] = [e for e in out["controlling"] if link_key(e) not in keys]
    kept = [d for d in out["dedicated"]
            if not (d["purpose"] == CONTROL_PURPOSE and d["target"] in keys)]
    returned = len(out["dedicated"]) - len(kept)
    out["dedicated"] = kept
    out["pool"] = min(out["pool"] + returned, out["hit_dice"] - len(kept))
    freed: dict[str, JSON] = {}
    events: list[Event] = []
    for entry in ended:
        pid = entry["id"]
        puppet = puppets.get(pid)
        if puppet is not None and puppet.get("controlled_by") == out["id"]:
            freed[pid] = set_free(puppet, ending)
        events.append(Event("control-ended", pid, {"controller": out["id"], "reason": reason}))
    return out, freed, events


def release(controller: Mapping[str, Any], target_id: str,
            puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str]
            ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """The controller lets ``target_id`` go; a Psionic Wave's targets all go together."""
    for entry in controller["controlling"]:
        if entry["id"] == target_id:
            return release_links(controller, {link_key(entry)}, puppets, ending, "released")
    raise RulesViolation("not-controlling",
                         f"{controller['name']} does not control {json_text(target_id)}")


def release_all(controller: Mapping[str, Any], puppets: Mapping[str, Mapping[str, Any]],
                ending: Iterable[str], reason: str
                ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """Every control the creature holds ends at once (it lost a psionic combat, or fell
    under control itself)."""
    keys = {link_key(e) for e in controller["controlling"]}
    return release_links(controller, keys, puppets, ending, reason)


def wave_label(first_id: str, taken: Collection[str]) -> str:
    """The name of a new Psionic Wave link whose first creature is ``first_id``:
    ``wave-<first_id>``, or with the first count from 2 on (``wave-<first_id>-2``) that
    is not among ``taken`` (the link keys held, and ids about to be held on their own)."""
    label, n = f"wave-{first_id}", 2
    while label in taken:
        label, n = f"wave-{first_id}-{n}", n + 1
    return label


def establish(controller: Mapping[str, Any], puppet_ids: Iterable[str], kept_by: str,
              wave: str | None) -> JSON:
    """Record control over ``puppet_ids``, kept by an action each round or by a die
    dedicated from the pool.

    A Psionic Wave's targets (``wave`` given) form one link, kept one way for all: one
    action keeps them all (seed 001), or a die dedicated to each (the pool must hold one
    for each: ``no-die-to-dedicate``). Otherwise each creature is its own link (an
    Imagination Swarm group that lost together); kept by dice, each takes one while the
    pool lasts and the rest are kept by action. A creature held on its own is keyed by
    its id, so a wave the controller holds already under the name of such a creature is
    named anew first (``wave_label`` after its first creature, its dice following it):
    the two stay two links.
    """
    out = copy_json(dict(controller))
    ids = list(puppet_ids)
    if not ids:
        return out
    if wave is None:
        _rename_waves(out, ids)
    if kept_by == "die" and out["pool"] < (len(ids) if wave is not None else 1):
        raise RulesViolation("no-die-to-dedicate",
                             f"{out['name']} has too few dice in its pool to keep control with")
    if wave is not None:
        for pid in ids:
            out["controlling"].append({"id": pid, "kept_by": kept_by, "wave": wave})
            if kept_by == "die":
                out["pool"] -= 1
                out["dedicated"].append({"purpose": CONTROL_PURPOSE, "target": wave})
        return out
    for pid in ids:
        by = kept_by if kept_by == "action" or out["pool"] >= 1 else "action"
        out["controlling"].append({"id": pid, "kept_by": by, "wave": None})
        if by == "die":
            out["pool"] -= 1
            out["dedicated"].append({"purpose": CONTROL_PURPOSE, "target": pid})
    return out


def _rename_waves(out: JSON, ids: Sequence[str]) -> None:
    """Name anew, in ``out``, each wave whose name is one of ``ids`` (creatures about to
    be held on their own), with the dice dedicated to it."""
    clashing = {e["wave"] for e in out["controlling"] if e.get("wave") and e["wave"] in ids}
    for old in sorted(clashing):
        first = next(e["id"] for e in out["controlling"] if e.get("wave") == old)
        taken = {link_key(e) for e in out["controlling"]} | set(ids)
        new = wave_label(first, taken)
        for e in out["controlling"]:
            if e.get("wave") == old:
                e["wave"] = new
        for d in out["dedicated"]:
            if d["purpose"] == CONTROL_PURPOSE and d["target"] == old:
                d["target"] = new


def keep_by(controller: Mapping[str, Any], target_id: str, by: str) -> JSON:
    """Switch how the link holding ``target_id`` is kept: ``die`` dedicates one die from
    the pool for each creature of it (kept until released), ``action`` returns them (an
    action every round keeps them all)."""
    if by not in ("die", "action"):
        raise InvalidInput.at("/keep/by", "must be 'die' or 'action'")
    out = copy_json(dict(controller))
    entries = [e for e in out["controlling"] if e["id"] == target_id]
    if not entries:
        raise RulesViolation("not-controlling",
                             f"{out['name']} does not control {json_text(target_id)}")
    key = link_key(entries[0])
    current = entries[0]["kept_by"]
    if current == by:
        return out
    held = 0
    for e in out["controlling"]:
        if link_key(e) == key:
            e["kept_by"] = by
            held += 1
    if by == "die":
        if out["pool"] < held:
            raise RulesViolation("no-die-to-dedicate", (
                f"{out['name']} has {dice_count(out['pool'])} in its pool, too few to keep "
                f"control of {held} creatures by a die each" if held > 1 else
                f"{out['name']} has no die in its pool to keep control with"))
        out["pool"] -= held
        out["dedicated"] += [{"purpose": CONTROL_PURPOSE, "target": key}] * held
    else:
        kept = [d for d in out["dedicated"]
                if not (d["purpose"] == CONTROL_PURPOSE and d["target"] == key)]
        out["pool"] += len(out["dedicated"]) - len(kept)
        out["dedicated"] = kept
    return out


def unable_to_act(tables: Mapping[str, Any], c: Mapping[str, Any]) -> str | None:
    """Why ``c`` cannot act (a condition of ``cannot_act_conditions``, or ``down`` at 0
    hit points or fewer), or ``None``."""
    if is_down(c):
        return "down"
    return next((x for x in c["conditions"] if x in tables["cannot_act_conditions"]), None)


def unable_words(tables: Mapping[str, Any], c: Mapping[str, Any]) -> str | None:
    """``unable_to_act`` as the summary says it ("unconscious", "at 0 hit points or
    fewer"), or ``None``."""
    why = unable_to_act(tables, c)
    return "at 0 hit points or fewer" if why == "down" else why


def check_may_keep(tables: Mapping[str, Any], controller: Mapping[str, Any]) -> None:
    """Changing how a link is kept (a die dedicated to it, or an action each round taken
    up for it) is something the controller does: one that cannot act (``unable_to_act``)
    keeps its control as it is, and its links kept by an action end as the round ends
    (``action_upkeep``). ``RulesViolation`` ``controller-cannot-act``."""
    state = unable_words(tables, controller)
    if state is not None:
        raise RulesViolation("controller-cannot-act", (
            f"{controller['name']} is {state} and cannot act: it cannot change how it keeps "
            "its control (one kept by an action ends as the round ends)"),
            combatant=str(controller["id"]))


def release_kept_by_action(controller: Mapping[str, Any],
                           puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str],
                           reason: str) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """End every link ``controller`` keeps by an action (``release_links`` with
    ``reason``); links kept by a die hold."""
    keys = {link_key(e) for e in controller["controlling"] if e["kept_by"] == "action"}
    if not keys:
        return copy_json(dict(controller)), {}, []
    return release_links(controller, keys, puppets, ending, reason)


def action_upkeep(tables: Mapping[str, Any], controller: Mapping[str, Any],
                  puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str]
                  ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """A round ends. Control kept "by the controller using an action each round" (seed
    001) needs an action: a controller that cannot act (``unable_to_act``: asleep,
    unconscious, stunned, down) spent none, so its links kept by an action end
    (``control-ended``, reason ``controller-cannot-act``; puppets given are set free as
    in ``release_links``). Links kept by a die hold."""
    if unable_to_act(tables, controller) is None:
        return copy_json(dict(controller)), {}, []
    return release_kept_by_action(controller, puppets, ending, "controller-cannot-act")


def rest_upkeep(controller: Mapping[str, Any], puppets: Mapping[str, Mapping[str, Any]],
                ending: Iterable[str]) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """A controller starts a long rest. Seed 001: "Powers can't be maintained when a
    creature rests", and a resting creature spends no action each round, so its links
    kept by an action end (``control-ended``, reason ``rest``; puppets given are set
    free as in ``release_links``). A link kept by a die is not a power and holds, as in
    ``recover``."""
    return release_kept_by_action(controller, puppets, ending, "rest")


def maintain_by_action(controller: Mapping[str, Any], target_id: str, perceives: bool,
                       puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str]
                       ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """A round's upkeep of an action-kept link: the controller "must remain able to
    perceive the creature each round"; if it cannot, the link ends. Die-kept links
    need nothing."""
    for entry in controller["controlling"]:
        if entry["id"] == target_id:
            if entry["kept_by"] == "die" or perceives:
                return copy_json(dict(controller)), {}, []
            return release_links(controller, {link_key(entry)}, puppets, ending,
                                 "not-perceived")
    raise RulesViolation("not-controlling",
                         f"{controller['name']} does not control {json_text(target_id)}")


def upkeep(controller: Mapping[str, Any], choice: Mapping[str, Any],
           puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str]
           ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """A round's end outside an encounter, as the controller chooses (the power-pool
    ``round_end`` choice): the links of ``cannot_perceive`` kept by an action end, those
    of ``release`` end, and those of ``keep`` change how they are kept, in that order.
    Any creature of a link names it. Puppets given are set free as in ``release_links``.
    Without a choice every link simply holds: kept by an action, the controller spent
    this round's action on it."""
    out: JSON = copy_json(dict(controller))
    freed: dict[str, JSON] = {}
    events: list[Event] = []
    for target in choice.get("cannot_perceive", []):
        out, more, happened = maintain_by_action(out, target, False, puppets, ending)
        freed.update(more)
        events += happened
    for target in choice.get("release", []):
        out, more, happened = release(out, target, puppets, ending)
        freed.update(more)
        events += happened
    for keep in choice.get("keep", []):
        was = out
        out = keep_by(was, keep["target"], keep["by"])
        if out["controlling"] != was["controlling"]:
            key = next(link_key(e) for e in out["controlling"] if e["id"] == keep["target"])
            events.append(Event("control-kept", keep["target"], {
                "controller": out["id"], "by": keep["by"], "pool": out["pool"],
                "targets": [e["id"] for e in out["controlling"] if link_key(e) == key]}))
    return out, freed, events


def links(controller: Mapping[str, Any]) -> list[JSON]:
    """The control links ``controller`` holds, in the order taken: ``{targets: [id],
    kept_by, wave}`` (a Psionic Wave's targets form one link)."""
    found: dict[str, JSON] = {}
    for entry in controller["controlling"]:
        link = found.setdefault(link_key(entry), {
            "targets": [], "kept_by": entry["kept_by"], "wave": entry.get("wave")})
        link["targets"].append(entry["id"])
    return list(found.values())


def fall_under_control(puppet: Mapping[str, Any], controller_id: str,
                       its_puppets: Mapping[str, Mapping[str, Any]], ending: Iterable[str]
                       ) -> tuple[JSON, dict[str, JSON], list[Event]]:
    """The creature comes under ``controller_id``'s control: its pool drops to 0, every
    power it maintained ends with its dice expended, and any control it held ends."""
    freed_self, freed, events = release_all(puppet, its_puppets, ending, "controller-overcome")
    out = copy_json(freed_self)
    expended = len(out["dedicated"])
    out["dedicated"] = []
    out["pool"] = 0
    out["controlled_by"] = controller_id
    if expended:
        events.append(Event("dice-expended", out["id"], {"dice": expended,
                                                         "reason": "fell under control"}))
    return out, freed, events


def recover(c: Mapping[str, Any], rule: str) -> JSON:
    """A long rest (H-PP-RECOVERY): maintained powers end (seed: "Powers can't be
    maintained when a creature rests") and dice return: ``all`` of them, or ``half``
    the hit dice (rounded up) on top of the pool and the dice the ended powers held (they
    were set aside, not spent). Control kept by a die is not a power and stays; a
    creature under control recovers nothing."""
    out = copy_json(dict(c))
    out["dedicated"] = [d for d in out["dedicated"] if d["purpose"] == CONTROL_PURPOSE]
    if out["controlled_by"]:
        return out
    room = out["hit_dice"] - len(out["dedicated"])
    freed = len(c["dedicated"]) - len(out["dedicated"])
    if rule == RECOVERY_ALL:
        out["pool"] = room
    elif rule == RECOVERY_HALF:
        out["pool"] = min(room, out["pool"] + freed + (out["hit_dice"] + 1) // 2)
    else:
        raise InvalidInput.at("/options/H-PP-RECOVERY", f"unknown recovery rule {json_text(rule)}")
    return out


def name_of(combatants: Mapping[str, Mapping[str, Any]], cid: str) -> str:
    """The name of ``cid`` when it is among ``combatants``, else its id in quotes."""
    c = combatants.get(cid)
    return str(c["name"]) if c is not None else json_text(cid)


def not_given_line(target: str, controller: str) -> str:
    """The summary's sentence for a creature set free whose sheet was not given."""
    return (f"{target} was not given: its sheet still shows it under {controller}'s "
            "control until it is changed.")


def die_words(count: int) -> tuple[str, str]:
    """How a link of ``count`` creatures is kept by dice, and how they come back: a
    Psionic Wave's takes a die for each."""
    return ("a die", "the die returns") if count == 1 else ("a die each", "the dice return")


def action_upkeep_lines(tables: Mapping[str, Any], controller: Mapping[str, Any],
                        events: Sequence[Event], creatures: Mapping[str, Mapping[str, Any]]
                        ) -> list[str]:
    """The summary's sentences of ``action_upkeep`` (``creatures``: those given,
    after it)."""
    return _action_ended_lines(controller, events, creatures,
                               f"is {unable_words(tables, controller)} and cannot spend the "
                               "action that keeps")


def rest_upkeep_lines(controller: Mapping[str, Any], events: Sequence[Event],
                      creatures: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The summary's sentences of ``rest_upkeep`` (``creatures``: those given, after
    it)."""
    return _action_ended_lines(controller, events, creatures,
                               "rests and spends no action to keep")


def _action_ended_lines(controller: Mapping[str, Any], events: Sequence[Event],
                        creatures: Mapping[str, Mapping[str, Any]], doing: str) -> list[str]:
    """"<controller> <doing> its control of <targets>: the control ends.", and a sentence
    for each creature set free whose sheet was not given; nothing without ``events``."""
    if not events:
        return []
    name = controller["name"]
    targets = " and ".join(name_of(creatures, str(e.combatant)) for e in events)
    lines = [f"{name} {doing} its control of {targets}: the control ends."]
    lines += [not_given_line(name_of(creatures, str(e.combatant)), name)
              for e in events if str(e.combatant) not in creatures]
    return lines


def upkeep_lines(controller: Mapping[str, Any], choice: Mapping[str, Any],
                 events: Sequence[Event], creatures: Mapping[str, Mapping[str, Any]]
                 ) -> list[str]:
    """The summary's sentences of a controller's upkeep at a round's end (``creatures``:
    those given, after it)."""
    name = controller["name"]
    lines = []
    for e in events:
        target = name_of(creatures, str(e.combatant))
        if e.type == "control-ended":
            lines.append(f"{name} loses sight of {target}: the control ends."
                         if e.data["reason"] == "not-perceived" else
                         f"{name} releases {target}.")
            if str(e.combatant) not in creatures:
                lines.append(not_given_line(target, name))
        elif e.type == "control-kept":
            target = " and ".join(name_of(creatures, str(t)) for t in e.data["targets"])
            die, dice = die_words(len(e.data["targets"]))
            lines.append(f"{name} keeps control of {target} by {die} from its pool from now "
                         f"on ({e.data['pool']} left)." if e.data["by"] == "die" else
                         f"{name} keeps control of {target} by an action each round from now "
                         f"on; {dice} ({e.data['pool']} in the pool).")
    ended = {e.combatant for e in events}
    lines += [f"{name} cannot perceive {name_of(creatures, t)}, but keeps control of it by a "
              "die, which needs no sight." for t in choice.get("cannot_perceive", [])
              if t not in ended]
    return lines
