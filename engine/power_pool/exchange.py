"""One exchange of power-pool psionic combat (RULES.md §3.2-§3.4, seed 001).

``build_plan`` checks a request against the rules and works out who rolls how many
dice of which type; it rolls nothing, so ``odds`` uses it too. ``resolve_plan``
rolls the dice and applies the outcome.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..dice import MAX_DICE_PER_POOL, DiceSource
from ..errors import (
    DiceNeeded,
    InvalidInput,
    LimitExceeded,
    Problem,
    RulesViolation,
    json_text,
    pointer,
)
from ..options import HouseRule, resolve_options
from ..results import Change, Event, Resolution
from ..system import JSON, id_given, id_source, is_down
from . import control
from .combatant import link_key, link_problems

SYSTEM_ID = "power-pool"

HOUSE_RULES: tuple[HouseRule, ...] = (
    HouseRule("H-PP-TIE", "Equal totals go to the defender ('attacker' gives ties to the "
              "attacker).", "defender", ("defender", "attacker")),
    HouseRule("H-PP-GROUP", "A group rolls every member's dice into one total; a non-psionic "
              "ally drawn in adds one die of its hit-die type ('all-dice': its whole pool).",
              "one-die", ("one-die", "all-dice")),
    HouseRule("H-PP-BLANK-SAVE", "The save against Blank Mind is the host game's save vs. "
              "spells: d20 at or above the attacker's blank_mind_save; a combatant that "
              "gives none uses this target.", 15, tuple(range(2, 21))),
    HouseRule("H-PP-NO-POOL", "A creature with a mind but no power pool defends with its hit "
              "dice but no defense modes (false: it rolls nothing).", True),
    HouseRule("H-PP-RECOVERY", "All dice return to the pool after a long rest ('half': half "
              "the hit dice, rounded up, per long rest).", "all", ("all", "half")),
)

#: How an exchange ended (result field ``outcome_detail``; ``outcome`` is the winner).
OUTCOME_CONTROL = "control"
OUTCOME_NO_CONTROL = "won-without-control"
OUTCOME_REBUFFED = "rebuffed"
OUTCOME_BLANK_MIND = "blank-mind-save-failed"

Normalizer = Callable[[Mapping[str, Any], str], JSON]


@dataclass(frozen=True)
class Side:
    """One defending member: what it rolls and with which mode."""

    id: str
    combatant: JSON
    role: str  # "defender", "wave-target", "ally"
    mode: str | None
    dice: int
    sides: int
    bonus: int
    sacrifice: tuple[int, ...]
    rolls: bool
    drawn_in: bool = False  # a non-psionic ally drawn in by Imagination Swarm


@dataclass(frozen=True)
class Plan:
    """Everything an exchange will roll and who it can touch, checked against the rules."""

    options: Mapping[str, Any]
    attacker: JSON
    mode: str
    attack_dice: int
    attack_sides: int
    keep_by: str
    members: tuple[Side, ...]
    saves: tuple[str, ...]  # one Blank Mind save per member using it, in order
    save_target: int
    tie_to: str
    targets: tuple[str, ...] = ()  # names of the creatures attacked, as declared
    redirected: tuple[tuple[str, str], ...] = ()
    bystanders: Mapping[str, JSON] = field(default_factory=dict)
    puppets: Mapping[str, JSON] = field(default_factory=dict)
    declined: frozenset[str] = frozenset()  # optional effects the attacker chose not to use

    @property
    def principal(self) -> Side:
        """The struck defender (the target, or its controller in its place)."""
        return self.members[0]


def step(ladder: Sequence[int], sides: int, steps: int) -> int:
    """Move ``sides`` ``steps`` places up (or down) the table's die ladder, stopping at
    its ends ("upgrades stop at d20")."""
    if sides not in ladder:
        raise InvalidInput.at("/die", f"d{sides} is not on the die ladder {list(ladder)}")
    i = min(max(ladder.index(sides) + steps, 0), len(ladder) - 1)
    return int(ladder[i])


def _mode(tables: Mapping[str, Any], mode_id: str, kind: str) -> Mapping[str, Any]:
    """The mode ``mode_id`` of ``kind`` (attack, defense). The request schema, made from
    the same tables (``PowerPoolSystem.request_schema``), admits no other at that place:
    an unknown mode, or one of the other kind, is refused there first."""
    mode = tables["modes"][mode_id]
    assert mode["kind"] == kind, (mode_id, kind)
    return mode  # type: ignore[no-any-return]


def _check_dice(count: int, path: str, whole_pool: bool = False) -> None:
    if count > MAX_DICE_PER_POOL:
        whole = (f" (the whole pool, as pool_dice is not given: give pool_dice of at most "
                 f"{MAX_DICE_PER_POOL})") if whole_pool else ""
        raise LimitExceeded(Problem(
            path, f"{count} dice exceed the limit of {MAX_DICE_PER_POOL} dice per pool"
                  f"{whole}"))


def _sacrifice(c: Mapping[str, Any], given: Any, path: str) -> tuple[int, ...]:
    """The spell levels given up; an integer is shorthand for one spell of that level."""
    if given is None:
        return ()
    levels = (given,) if isinstance(given, int) else tuple(given)
    wanted, memorised = Counter(levels), Counter(c["spell_levels"])
    short = [_too_few_spells(level, wanted[level], memorised[level])
             for level in sorted(wanted) if wanted[level] > memorised[level]]
    if short:
        raise RulesViolation(
            "spell-not-memorised",
            f"{path}: {c['name']} {', and '.join(short)} "
            f"(memorised: {sorted(c['spell_levels'])})", combatant=c["id"])
    return levels


def _too_few_spells(level: int, wanted: int, memorised: int) -> str:
    """Why ``wanted`` spells of ``level`` cannot be sacrificed: "sacrifices 3 level-3
    spells but has only 2 memorised" (the count is short, not the level)."""
    spells = f"a level-{level} spell" if wanted == 1 else f"{wanted} level-{level} spells"
    had = "has none memorised" if memorised == 0 else f"has only {memorised} memorised"
    return f"sacrifices {spells} but {had}"


def unaware_of(tables: Mapping[str, Any], c: Mapping[str, Any]) -> list[str]:
    """The conditions that leave ``c`` unaware of an attack (seed 001: "not aware of the
    attacker, is surprised, stunned, asleep, unconscious")."""
    return [x for x in c["conditions"] if x in tables["awareness_conditions"]]


def unable_to_attack(tables: Mapping[str, Any], c: Mapping[str, Any], *,
                     round_conditions: bool = True) -> str | None:
    """Why ``c`` cannot attack, or ``None``: under another's control, down (0 hit points
    or fewer), or a condition of ``cannot_attack_conditions``. Without
    ``round_conditions``, dazed and stunned (conditions of one round or two, which a
    single exchange cannot tell are over) are not counted."""
    if c["controlled_by"]:
        return f"is under the psionic control of {json_text(c['controlled_by'])}"
    if is_down(c):
        return "is down (0 hit points or fewer)"
    for cond in c["conditions"]:
        if cond in tables["cannot_attack_conditions"] and (
                round_conditions or cond not in tables["round_conditions"]):
            return f"is {cond}"
    return None


def defend_side(tables: Mapping[str, Any], options: Mapping[str, Any], c: JSON,
                defense: Mapping[str, Any] | None, path: str, role: str,
                capped_later: bool = False) -> Side:
    """What ``c`` rolls in defense, checking the awareness rule and its choices.
    ``capped_later``: nobody chose these dice (a struck mind of an encounter that has not
    answered rolls its whole pool), so a pool over the dice limit is not refused here but
    capped with the group when resolved (``group-dice-capped``).

    ``c`` is never under psionic control: ``build_plan`` strikes a controlled target's
    controller in its place (seed 001: attacking such a creature "automatically attacks
    the controller") and refuses a controller or an ally under control first. So the
    seed's Cognitive Labyrinth works while unaware "so long as they are not already
    under psionic control" without a refusal of its own: no mind under control defends."""
    assert not c["controlled_by"], c["id"]
    defense = defense or {}
    mode_id = defense.get("mode")
    mode: Mapping[str, Any] = {}
    if mode_id is not None:
        mode = _mode(tables, mode_id, "defense")
        if not c["psionic"]:
            raise RulesViolation("mode-not-known", (
                f"{c['name']} is not psionic: a creature without a power pool uses no "
                "defense modes (H-PP-NO-POOL)"), combatant=c["id"])
        if mode_id not in c["defenses"]:
            known = json_text(list(c["defenses"]), 500)
            raise RulesViolation("mode-not-known",
                                 f"{c['name']} does not know {mode_id} (knows {known})",
                                 combatant=c["id"])
    # At 0 hit points or fewer a creature is as unconscious (slain or dying): it rolls
    # nothing unless its mode works while unaware.
    unaware = unaware_of(tables, c) + (["down"] if is_down(c) else [])
    rolls = True
    if unaware and not mode.get("defends_while_unaware"):
        if mode_id is not None:
            raise RulesViolation("defender-unaware", (
                f"{c['name']} is {unaware[0]}: it may defend only with a mode that works "
                "while unaware (cognitive-labyrinth), otherwise it rolls nothing"),
                combatant=c["id"])
        rolls = False
    sacrifice = _sacrifice(c, defense.get("sacrifice"), f"{path}/sacrifice")
    pool_dice = defense.get("pool_dice")
    if not rolls and pool_dice:
        raise RulesViolation("defender-unaware", (
            f"{path}/pool_dice: {c['name']} is {unaware[0]}: it rolls nothing, so it has "
            "no dice to roll"), combatant=c["id"])
    if not rolls and sacrifice:
        raise RulesViolation("defender-unaware", (
            f"{path}/sacrifice: {c['name']} is {unaware[0]}: it rolls nothing and cannot "
            "sacrifice spells"), combatant=c["id"])
    # H-PP-NO-POOL: a mind without a power pool still defends with its hit dice
    available = c["pool"] if c["psionic"] or options["H-PP-NO-POOL"] else 0
    if not rolls:
        dice = 0
    elif pool_dice is None:
        dice = available
        if not capped_later:
            _check_dice(dice, f"{path}/pool_dice", whole_pool=True)
    else:
        _check_dice(pool_dice, f"{path}/pool_dice")
        if pool_dice > available:
            raise RulesViolation("pool-dice-exceed-pool", (
                f"{c['name']} has {control.dice_count(available)} to roll, not {pool_dice}"),
                combatant=c["id"])
        dice = pool_dice
    sides = step(tables["ladder"], c["die"], int(mode.get("die_steps", 0)))
    return Side(c["id"], c, role, mode_id, dice, sides, sum(sacrifice), sacrifice, rolls)


def _check_ids_unique(request: Mapping[str, Any],
                      taking_part: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Each creature taking part has an id of its own. A clash is refused at a field the
    caller wrote: the id, or the name the id was made from (``id_source``)."""
    seen: dict[str, str] = {}
    for path, c in taking_part:
        if c["id"] in seen:
            field, ident = id_source(_raw_at(request, path), path, c["id"])
            raise InvalidInput.at(field, f"{ident} is already used at {seen[c['id']]}: "
                                         "give each creature an id of its own")
        seen[c["id"]] = path


def puppet_given_again(raw: Any, path: str, cid: str, which: str) -> InvalidInput:
    """The refusal of the puppet ``raw`` at ``path`` whose id ``cid`` was given already,
    by a creature ``which`` ("taking part", "whose round ends") or by another
    puppet: every call holds its puppets apart and once each, since a second sheet of a
    creature would otherwise be dropped without a word."""
    field, ident = id_source(raw, path, cid)
    return InvalidInput.at(field, f"{ident} is given already: a creature {which} here is "
                                  "not among the puppets, and each puppet is given once")


def _check_puppets_apart(request: Mapping[str, Any],
                         others: Sequence[tuple[str, Mapping[str, Any]]],
                         puppets: Sequence[tuple[str, Mapping[str, Any]]],
                         which: str = "taking part") -> None:
    """``puppets`` are creatures the exchange may set free, none of them one of
    ``others`` (creatures ``which``), each given once (``puppet_given_again``)."""
    seen = {c["id"] for _, c in others}
    for path, p in puppets:
        if p["id"] in seen:
            raise puppet_given_again(_raw_at(request, path), path, p["id"], which)
        seen.add(p["id"])


def _check_controllers_agree(request: Mapping[str, Any],
                             targets: Sequence[tuple[str, Mapping[str, Any]]],
                             controlling: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """A controller given more than once is given with one sheet: its control links are
    read on the first sheet given (``link_problems``), and the attack may strike another
    (the last in ``controller``/``controllers``, or its sheet as a target when that
    target comes first), so a second sheet that differs in anything, its defenses too, is
    refused at its id (or the name the id was made from); the order its attacks,
    defenses and conditions are listed in is no difference (``_as_compared``). In
    ``controller``/``controllers`` (an encounter gives it once for each of its puppets a
    wave strikes) the sheets are the same. A controller that is a target too (``defender``,
    ``defenders``: a wave at a puppet and at its controller) has the same sheet in both
    places, its defenses too (known in one place and not in the other, the defense it
    raises would be taken or refused by the order of the targets); that refusal names
    the fields that differ. ``exchange.odds``' ``assume_known`` makes one creature know
    the same defenses in every place it is given (``PowerPoolSystem.assume_knowing``).
    ``build_plan`` checks this once the controllers are known able to hold control, so
    that a second sheet showing one under control is refused for that
    (``controller-required``)."""
    seen: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for path, c in controlling:
        first = seen.setdefault(c["id"], (path, c))
        if _as_compared(first[1]) != _as_compared(c):
            field, ident = id_source(_raw_at(request, path), path, c["id"])
            raise InvalidInput.at(field, (
                f"{ident} is given already at {first[0]} with another sheet: a controller "
                "given more than once is given with the same sheet"))
    as_target = {c["id"]: (path, c) for path, c in targets}
    for path, c in controlling:
        if c["id"] not in as_target:
            continue
        where, target = as_target[c["id"]]
        mine, theirs = _as_compared(c), _as_compared(target)
        differ = [k for k in mine if mine[k] != theirs[k]]
        if differ:
            field, ident = id_source(_raw_at(request, path), path, c["id"])
            raise InvalidInput.at(field, (
                f"{ident} is given already at {where} with another sheet, differing in "
                f"its {_names(differ)}: a controller that is a target too is given with "
                "the same sheet in both places, its defenses too"))


def _as_compared(c: Mapping[str, Any]) -> dict[str, Any]:
    """The full combatant ``c`` as two sheets of one creature are compared: its
    ``attacks``, ``defenses`` and ``conditions`` are sets (each item once, in any order),
    so sheets listing them in other orders are the same sheet."""
    return {**c, **{k: sorted(c[k]) for k in ("attacks", "defenses", "conditions")}}


def _raw_at(request: Mapping[str, Any], path: str) -> Any:
    """The member of ``request`` at ``path`` ("/defender", "/allies/2") as given."""
    key, _, index = path[1:].partition("/")
    given = request[key]
    return given[int(index)] if index else given


def build_plan(tables: Mapping[str, Any], normalize: Normalizer,
               request: Mapping[str, Any], *, secret_choices: bool = False) -> Plan:
    """Check ``request`` against the rules and say what each side will roll.

    ``secret_choices``: the sides chose apart and in secret (an encounter), so what only
    their choices together make is not refused: a defending group over the dice limit
    (a struck mind that has not answered, whole pool and all) and a wave kept by a die
    each with too few dice are settled when the exchange is resolved (``resolve_plan``:
    ``group-dice-capped``, ``kept-by-action-instead``)."""
    options = resolve_options(HOUSE_RULES, request.get("options"))
    attacker = normalize(request["attacker"], "/attacker")
    target = normalize(request["defender"], "/defender")
    extra = [normalize(r, f"/defenders/{i}") for i, r in enumerate(request.get("defenders") or [])]
    allies = [normalize(r, f"/allies/{i}") for i, r in enumerate(request.get("allies") or [])]
    # the controllers an attack may strike instead of their puppets, and the puppets
    raw = [("/controller", request["controller"])] if request.get("controller") is not None \
        else []
    raw += [(f"/controllers/{i}", r) for i, r in enumerate(request.get("controllers") or [])]
    controlling = [(path, normalize(r, path)) for path, r in raw]
    given_puppets = [(f"/puppets/{i}", normalize(r, f"/puppets/{i}"))
                     for i, r in enumerate(request.get("puppets") or [])]
    controllers = {c["id"]: c for _, c in controlling}
    puppets = {c["id"]: c for _, c in given_puppets}

    # an ally given the attacker's or a target's own id names that creature again: the
    # rules refuse it below (ally-attacker, ally-struck), not as a clash of ids
    again = {i for i, c in enumerate(allies)
             if c["id"] in {t["id"] for t in (attacker, target, *extra)}
             and id_given(_raw_at(request, f"/allies/{i}"))}
    taking_part = ([("/attacker", attacker), ("/defender", target)]
                   + [(f"/defenders/{i}", c) for i, c in enumerate(extra)])
    _check_ids_unique(request, taking_part + [(f"/allies/{i}", c) for i, c in
                                              enumerate(allies) if i not in again])
    taking_part += [(f"/allies/{i}", c) for i, c in enumerate(allies)]
    _check_puppets_apart(request, taking_part, given_puppets)
    # RULES.md §3.4: whom a controller holds, as both sheets say it
    problems = link_problems(taking_part + controlling + given_puppets)
    if problems:
        raise InvalidInput(problems)
    # Nor is a controller among the puppets: a sheet there with a controller's id is a
    # second sheet of it, which the exchange would ignore but for its name (the summary
    # would call the controller by it). This comes after the links are checked: an
    # encounter gives every controlled creature not taking part as a puppet, so a
    # target's controller that is itself under control (stale sheets) is there too, and
    # is refused above for what is wrong with it, its link to the target.
    _check_puppets_apart(request, controlling, given_puppets, "given as a controller")

    attack = request["attack"]
    mode_id = attack["mode"]
    mode = _mode(tables, mode_id, "attack")
    # seed 001: "Any psionically active creature may engage in psionic combat"
    if not attacker["psionic"]:
        raise RulesViolation("attacker-not-psionic",
                             f"{attacker['name']} is not psionically active",
                             combatant=attacker["id"])
    if mode_id not in attacker["attacks"]:
        known = json_text(list(attacker["attacks"]), 500)
        raise RulesViolation("mode-not-known",
                             f"{attacker['name']} does not know {mode_id} (knows {known})",
                             combatant=attacker["id"])
    why = unable_to_attack(tables, attacker, round_conditions=False)
    if why:
        raise RulesViolation("attacker-cannot-act", f"{attacker['name']} {why}",
                             combatant=attacker["id"])
    # The attacker's own means are checked before anything about its targets: a refusal
    # the attacker alone causes is told as such whatever the targets are (a VTT checks an
    # attack this way before asking any defender for a secret choice).
    pool_dice = attack.get("pool_dice")
    if pool_dice is None:
        _check_dice(attacker["pool"], "/attack/pool_dice", whole_pool=True)
        attack_dice = attacker["pool"]
    else:
        _check_dice(pool_dice, "/attack/pool_dice")
        if pool_dice > attacker["pool"]:
            raise RulesViolation("pool-dice-exceed-pool", (
                f"{attacker['name']} has {control.dice_count(attacker['pool'])} in its pool, "
                f"not {pool_dice}"),
                combatant=attacker["id"])
        attack_dice = pool_dice
    keep_by = attack.get("keep_by", "action")
    if keep_by == "die" and attacker["pool"] < 1:
        raise RulesViolation("no-die-to-dedicate",
                             f"{attacker['name']} has no die in its pool to keep control with",
                             combatant=attacker["id"])
    # seed 001, Subconscious Subversion: "the attacker may choose to frighten the opponent"
    optional = {e["condition"] for e in mode.get("on_success", []) if e.get("optional")}
    declined = attack.get("decline", [])
    for i, condition in enumerate(declined):
        if condition not in optional:
            raise InvalidInput.at(f"/attack/decline/{i}", (
                f"{mode_id} has no effect {json_text(condition)} the attacker may decline"
                f"; it may decline: {json_text(sorted(optional))}"))
    if extra and not mode.get("several_targets"):
        raise RulesViolation("one-target", f"{mode_id} attacks one target; only a mode that "
                                           "attacks several (psionic-wave) takes /defenders")
    # seed 001: "must have line of sight, or must be able to perceive the creature"
    if attack.get("perceives", True) is False:
        raise RulesViolation("target-not-perceived",
                             f"{attacker['name']} must perceive {target['name']} to attack it",
                             combatant=target["id"])

    members: list[JSON] = []
    roles: list[str] = []
    redirected: list[tuple[str, str]] = []
    bystanders: dict[str, JSON] = {}
    # (no target is the attacker: _check_ids_unique refused a target with its id)
    for t in [target, *extra]:
        # seed 001: "Creatures must have minds ... Constructs, unintelligent undead,
        # and most plants are immune to psionic combat."
        if t["mindless"]:
            raise RulesViolation("target-mindless",
                                 f"{t['name']} has no mind and is immune to psionic combat",
                                 combatant=t["id"])
        struck = t
        if t["controlled_by"]:
            cid = t["controlled_by"]
            if cid == attacker["id"]:
                raise RulesViolation("target-own-puppet", (
                    f"{t['name']} is under {attacker['name']}'s own control; an attack on "
                    "it would strike its controller"), combatant=t["id"])
            # seed 001: "Psionically attacking a creature under psionic control
            # automatically attacks the controller"
            ctrl = controllers.get(cid)
            if ctrl is None:
                raise RulesViolation("controller-required", (
                    f"{t['name']} is under the psionic control of {json_text(cid)}, so the attack "
                    "strikes the controller; give it in /controller"), combatant=t["id"])
            if ctrl["controlled_by"]:
                raise RulesViolation("controller-required", (
                    f"the controller {ctrl['name']} is itself under control and cannot "
                    "hold control"), combatant=ctrl["id"])
            redirected.append((t["id"], cid))
            bystanders[t["id"]] = t
            struck = ctrl
        if all(m["id"] != struck["id"] for m in members):
            members.append(struck)
            roles.append("defender" if not members[1:] else "wave-target")

    # after the controllers' own standing above, which a stale sheet of one is told by
    _check_controllers_agree(request, [("/defender", target)] + [
        (f"/defenders/{i}", c) for i, c in enumerate(extra)], controlling)

    defenses = request.get("defenses") or {}
    sides: list[Side] = []
    for i, m in enumerate(members):
        if i == 0:
            defense, path = request.get("defense"), "/defense"
        else:
            defense, path = defenses.get(m["id"]), pointer("/defenses", m["id"])
        sides.append(defend_side(tables, options, m, defense, path, roles[i],
                                 capped_later=secret_choices and defense is None))

    principal_mode = tables["modes"].get(sides[0].mode or "", {})
    struck_ids = {m["id"] for m in members}
    targets = {t["id"]: t for t in (target, *extra)}
    for i, ally in enumerate(allies):
        path, defense_path = f"/allies/{i}", pointer("/defenses", ally["id"])
        if i in again and ally["id"] == attacker["id"]:
            raise RulesViolation("ally-attacker", (
                f"{path}: {ally['name']} is the attacker; it cannot be drawn into the "
                "defense against its own attack"), combatant=ally["id"])
        if i in again and targets[ally["id"]]["controlled_by"]:
            raise RulesViolation("ally-struck", (
                f"{path}: {ally['name']} is a target of this attack, which strikes its "
                "controller in its place; it cannot also be drawn in"), combatant=ally["id"])
        if ally["id"] in struck_ids:
            # drawn in again, a member of the group would roll its pool twice ("every
            # member's dice", RULES.md §3.3): a target, or a controller struck in its
            # puppet's place
            where = "" if ally["id"] in targets else " (in the place of a creature it controls)"
            raise RulesViolation("ally-struck", (
                f"{path}: {ally['name']} is struck by this attack{where} and defends "
                "itself; it cannot also be drawn in"), combatant=ally["id"])
        if ally["mindless"]:
            raise RulesViolation("ally-mindless", f"{ally['name']} has no mind to draw in",
                                 combatant=ally["id"])
        if ally["controlled_by"]:
            raise RulesViolation("ally-controlled",
                                 f"{ally['name']} is under psionic control and cannot join",
                                 combatant=ally["id"])
        if ally["psionic"]:
            # "Psionically active creatures may also use this defence mode to participate
            # in a psionic combat that is targeting an ally they can see": they join by
            # their own choice, which is their own defense; the defender "may choose to
            # draw allied non-psionic creatures" only.
            if ally["id"] not in defenses:
                raise RulesViolation("ally-psionic", (
                    f"{ally['name']} is psionic: it joins by its own choice, with its own "
                    f"defense in {defense_path} (imagination-swarm); a defender "
                    "draws in only non-psionic creatures"), combatant=ally["id"])
            d = dict(defenses[ally["id"]])
            mode_ally = tables["modes"].get(d.get("mode") or "", {})
            if not mode_ally.get("draws_allies"):
                raise RulesViolation("ally-needs-imagination-swarm", (
                    f"{ally['name']} joins the combat only with a mode that draws allies in "
                    "(imagination-swarm)"), combatant=ally["id"])
            sides.append(defend_side(tables, options, ally, d, defense_path, "ally"))
        else:
            if ally["id"] in defenses:
                raise RulesViolation("ally-not-psionic", (
                    f"{ally['name']} is not psionic: it joins no psionic combat by its own "
                    "choice and has no defense mode; only a defender using "
                    f"imagination-swarm draws it in (without {defense_path})"),
                    combatant=ally["id"])
            if not principal_mode.get("draws_allies"):
                others_draw = any(tables["modes"].get(side.mode or "", {}).get("draws_allies")
                                  for side in sides[1:len(members)])
                raise RulesViolation("ally-needs-imagination-swarm", (
                    f"{path}: in a psionic wave only the mind struck first, "
                    f"{members[0]['name']}, draws non-psionic allies into the group's "
                    "defense, and it does not use imagination-swarm") if others_draw else (
                    f"{path}: non-psionic allies are drawn in only by a defender using "
                    "imagination-swarm"), combatant=ally["id"])
            # An ally that is unaware (asleep, unconscious ...) or down is still drawn into
            # the group but rolls nothing, as such a defender would (seed 001: it "may only
            # defend" with cognitive-labyrinth); an emptied pool gives no die either.
            rolls = not (unaware_of(tables, ally) or is_down(ally))
            dice = (min(1, ally["pool"]) if options["H-PP-GROUP"] == "one-die"
                    else ally["pool"]) if rolls else 0
            sides.append(Side(ally["id"], ally, "ally", None, dice, ally["die"], 0, (), rolls,
                              drawn_in=True))
    for key in defenses:
        if all(s.id != key for s in sides[1:]):
            raise InvalidInput.at(pointer("/defenses", key),
                                  "not a further defender or ally of this exchange")
    total = sum(s.dice for s in sides)
    if total > MAX_DICE_PER_POOL and not secret_choices:
        raise LimitExceeded(Problem("/defense", (
            f"the defending group would roll {total} dice; the limit is {MAX_DICE_PER_POOL}")))

    if keep_by == "die" and mode.get("several_targets") and not secret_choices:
        # a die "dedicated ... to it" for each creature; only the action is shared
        # (seed 001; RULES.md 3.4: "Psionic Wave control is kept by one action for all")
        held = sum(1 for s in sides
                   if tables["modes"].get(s.mode or "", {}).get("instead_of_control") is None)
        if held > attacker["pool"]:
            raise RulesViolation("no-die-to-dedicate", (
                f"{attacker['name']} would keep {held} creatures of the wave by a die each "
                f"but has {control.dice_count(attacker['pool'])} in its pool: keep them by an "
                "action"),
                combatant=attacker["id"])
    saves = tuple(s.id for s in sides
                  if tables["modes"].get(s.mode or "", {}).get("attacker_save"))
    save_target = attacker["blank_mind_save"] or options["H-PP-BLANK-SAVE"]
    for pid in bystanders:
        puppets.setdefault(pid, bystanders[pid])
    return Plan(
        options=options, attacker=attacker, mode=mode_id, attack_dice=attack_dice,
        attack_sides=step(tables["ladder"], attacker["die"], int(mode.get("die_steps", 0))),
        keep_by=keep_by, members=tuple(sides), saves=saves, save_target=int(save_target),
        tie_to=options["H-PP-TIE"], targets=tuple(t["name"] for t in [target, *extra]),
        redirected=tuple(redirected), bystanders=bystanders,
        puppets=puppets, declined=frozenset(declined))


def _name(tables: Mapping[str, Any], mode_id: str | None) -> str:
    return str(tables["modes"][mode_id]["name"]) if mode_id else "no defense mode"


def _within_dice_limit(plan: Plan) -> tuple[Plan, Event | None]:
    """``plan`` with its defending group rolling at most ``MAX_DICE_PER_POOL`` dice, and
    the ``group-dice-capped`` event saying so (``None`` when it was within). Only a plan
    of secret choices gets here over the limit (``build_plan`` refuses another): no side
    chose the total, so it is capped, not refused, as a penetration chain is at its cap.
    The members' dice are counted in their order, the mind struck first first, then the
    others struck, then the allies in the order drawn in or joined: the members the
    total reaches last roll fewer dice (seed 001: a side "may choose to only roll a
    portion of their available power pool")."""
    total = sum(s.dice for s in plan.members)
    if total <= MAX_DICE_PER_POOL:
        return plan, None
    left = MAX_DICE_PER_POOL
    members: list[Side] = []
    cut: list[JSON] = []
    for side in plan.members:
        dice = min(side.dice, left)
        left -= dice
        if dice < side.dice:
            cut.append({"id": side.id, "dice": dice, "of": side.dice})
        members.append(replace(side, dice=dice))
    return replace(plan, members=tuple(members)), Event(
        "group-dice-capped", None, {"dice": total, "limit": MAX_DICE_PER_POOL, "cut": cut})


def resolve_plan(tables: Mapping[str, Any], plan: Plan, dice: DiceSource) -> Resolution:
    """Roll the exchange ``plan`` describes and apply its outcome."""
    plan, capped = _within_dice_limit(plan)
    start = dice.mark()
    attacker = plan.attacker
    aid = attacker["id"]
    mode = tables["modes"][plan.mode]
    ex = tables["exchange"]
    ending = control.ending_with_control(tables)
    events: list[Event] = []
    effects: list[JSON] = []
    now: dict[str, JSON] = {aid: attacker}
    for side in plan.members:
        now[side.id] = side.combatant

    # Blank Mind: the attacker saves first (purpose `save`); a failure ends the attack.
    saves: list[JSON] = []
    failed = False
    for against in plan.saves:
        roll = dice.roll(tables["save"]["purpose"], tables["save"]["sides"], by=aid)
        success = roll >= plan.save_target
        saves.append({"against": against, "target": plan.save_target, "roll": roll,
                      "success": success})
        events.append(Event("blank-mind-save", aid, {"against": against, "roll": roll,
                                                     "target": plan.save_target,
                                                     "success": success}))
        if not success:
            failed = True
            break

    attack_total: int | None = None
    defense_total: int | None = None
    sums: dict[str, int] = {}
    if not failed:
        attack_rolls = dice.roll_many("attack", plan.attack_sides, plan.attack_dice, by=aid)
        attack_total = sum(attack_rolls)
        left = dice.available("defense")
        if left is not None:
            # Dice are used member by member, in one queue: name the dice missing from
            # the first member short of them through the members after it that roll the
            # same die; a group may mix d6 and d8 pools, and the next call asks for the
            # other die.
            for i, member in enumerate(plan.members):
                if member.dice > left:
                    needed = member.dice - left
                    for later in plan.members[i + 1:]:
                        if later.sides != member.sides:
                            break
                        needed += later.dice
                    raise DiceNeeded("defense", member.sides, needed)
                left -= member.dice
        for side in plan.members:
            sums[side.id] = sum(dice.roll_many("defense", side.sides, side.dice, by=side.id))
        defense_total = sum(sums.values()) + sum(s.bonus for s in plan.members)
        if capped is not None:
            events.append(capped)

    # Joining psionic combat dazes the attacker for the round (seed 001).
    now[aid] = control.add_condition(now[aid], "dazed", ex["attacker_dazed_round_ends"])
    events.append(Event("dazed", aid, {"round_ends": ex["attacker_dazed_round_ends"],
                                       "reason": "attacked in psionic combat"}))
    for side in plan.members:
        # spells are given up for the roll; an attack Blank Mind stopped has no roll
        if side.sacrifice and not failed:
            c = dict(now[side.id])
            left_levels = list(c["spell_levels"])
            for level in side.sacrifice:
                left_levels.remove(level)
            c["spell_levels"] = left_levels
            now[side.id] = c
            events.append(Event("spells-sacrificed", side.id,
                                {"levels": list(side.sacrifice), "bonus": side.bonus}))
        if side.drawn_in:
            rounds = tables["modes"][plan.principal.mode]["ally_dazed_round_ends"]
            now[side.id] = control.add_condition(now[side.id], "dazed", rounds)
            events.append(Event("dazed", side.id, {"round_ends": rounds,
                                                   "reason": "drawn in by imagination-swarm"}))

    freed: dict[str, JSON] = {}
    controlled: list[str] = []
    if failed:
        winner = "defender"
        outcome = OUTCOME_BLANK_MIND
        lost = min(ex["blank_mind_pool_dice_lost"], now[aid]["pool"])
        now[aid] = {**now[aid], "pool": now[aid]["pool"] - lost}
        if ex["blank_mind_pool_dice_lost"]:
            events.append(Event("pool-die-lost", aid, {"dice": lost, "reason": "blank-mind"}))
    else:
        assert attack_total is not None and defense_total is not None
        if attack_total != defense_total:
            winner = "attacker" if attack_total > defense_total else "defender"
        else:
            winner = plan.tie_to
        if winner == "attacker":
            for side in plan.members:
                c = now[side.id]
                instead = tables["modes"].get(side.mode or "", {}).get("instead_of_control")
                is_controlled = instead is None
                if instead is not None:
                    c = control.add_condition(c, instead["condition"], instead["round_ends"])
                    effects.append({"effect": instead["condition"], "combatant": side.id,
                                    "round_ends": instead["round_ends"],
                                    "instead_of_control": True})
                    events.append(Event(instead["condition"], side.id,
                                        {"round_ends": instead["round_ends"],
                                         "reason": f"{side.mode}: instead of control"}))
                else:
                    its = {p: now.get(p, q) for p, q in plan.puppets.items()}
                    c, released, evs = control.fall_under_control(c, aid, its, ending)
                    freed.update(released)
                    events.extend(evs)
                    controlled.append(side.id)
                    effects.append({"effect": "controlled", "combatant": side.id,
                                    "controller": aid})
                    events.append(Event("control-established", side.id, {"controller": aid}))
                for effect in mode.get("on_success", []):
                    if effect["requires_control"] and not is_controlled:
                        continue
                    if effect["condition"] in plan.declined:
                        continue
                    c = control.add_condition(c, effect["condition"], None)
                    effects.append({"effect": effect["condition"], "combatant": side.id,
                                    "outlasts_control": effect["outlasts_control"]})
                    events.append(Event(effect["condition"], side.id, {"by": aid}))
                if mode.get("damage") == "own-defense-dice":
                    amount = sums[side.id]
                    was_down = is_down(c)
                    if c["hp"] is not None:
                        c = {**c, "hp": c["hp"] - amount}
                    effects.append({"effect": "damage", "combatant": side.id,
                                    "amount": amount})
                    events.append(Event("damage", side.id, {"amount": amount,
                                                            "source": plan.mode}))
                    if is_down(c) and not was_down:
                        events.append(Event("down", side.id, {"hp": c["hp"]}))
                now[side.id] = c
            wave = None
            if mode.get("several_targets") and controlled:
                wave = control.wave_label(
                    controlled[0], {link_key(e) for e in now[aid]["controlling"]})
            kept_by = plan.keep_by
            if wave is not None and kept_by == "die" and now[aid]["pool"] < len(controlled):
                # Only secret choices get here (build_plan refuses another): joins the
                # attacker could not foresee outgrew its dice. The seed's own way of
                # keeping a wave, "a single action ... of all of the defenders", keeps
                # it whole, as one link kept one way (released all together).
                kept_by = "action"
                events.append(Event("kept-by-action-instead", aid, {
                    "asked": "die", "creatures": len(controlled), "pool": now[aid]["pool"]}))
            now[aid] = control.establish(now[aid], controlled, kept_by, wave)
            _say_how_kept(effects, now[aid])
            outcome = OUTCOME_CONTROL if controlled else OUTCOME_NO_CONTROL
        else:
            outcome = OUTCOME_REBUFFED
            # seed 001: "Any psionic control the attacker is exerting over other
            # creatures ceases immediately."
            its = {p: now.get(p, q) for p, q in plan.puppets.items()}
            a, released, evs = control.release_all(now[aid], its, ending, "rebuffed")
            freed.update(released)
            events.extend(evs)
            lost = min(ex["loser_pool_dice_lost"], a["pool"])
            a = {**a, "pool": a["pool"] - lost}
            if ex["loser_pool_dice_lost"]:
                events.append(Event("pool-die-lost", aid, {"dice": lost,
                                                           "reason": "rebuffed"}))
            a = control.add_condition(a, "stunned", ex["loser_stunned_round_ends"])
            events.append(Event("stunned", aid, {"round_ends": ex["loser_stunned_round_ends"],
                                                 "reason": "rebuffed"}))
            now[aid] = a
    # Only puppets and bystanders are set free: nobody rolling here is under control (an
    # attacker under control may not attack, a controlled target is struck through its
    # controller, a controlled ally or controller is refused), and the one taking control
    # here, the attacker, frees nobody when it wins.
    assert freed.keys().isdisjoint(now), sorted(freed.keys() & now.keys())
    now.update(freed)

    principal = plan.principal
    others: list[Change] = []
    listed = {aid, principal.id}
    for side in plan.members[1:]:
        others.append(Change(side.id, side.combatant, now[side.id]))
        listed.add(side.id)
    for pid, c in {**plan.bystanders, **freed}.items():
        if pid not in listed:
            before = plan.puppets.get(pid, plan.bystanders.get(pid, c))
            others.append(Change(pid, before, now.get(pid, c)))
            listed.add(pid)

    member_json = [{
        "id": s.id, "role": s.role, "mode": s.mode, "dice": s.dice, "sides": s.sides,
        "rolled": sums.get(s.id), "sacrifice": list(s.sacrifice), "bonus": s.bonus,
        "rolls": s.rolls} for s in plan.members]
    fields: JSON = {
        "attack_total": attack_total,
        "defense_total": defense_total,
        "winner": winner,
        "controlled": bool(controlled),
        "outcome_detail": outcome,
        "effects": effects,
        "attack": {"mode": plan.mode, "dice": plan.attack_dice, "sides": plan.attack_sides,
                   "keep_by": plan.keep_by},
        "defense": {"mode": principal.mode, "members": member_json},
        "tie": attack_total is not None and attack_total == defense_total,
        "blank_mind": saves or None,
        "redirected": [{"from": a, "to": b} for a, b in plan.redirected],
        "damage": sum(e["amount"] for e in effects if e["effect"] == "damage"),
    }
    summary = _summary(tables, plan, attack_total, defense_total, winner, failed,
                       controlled, effects, events)
    return Resolution(
        # the outcome is the winner, as exchange.odds names its outcomes (API.md)
        system=SYSTEM_ID, outcome=winner,
        attacker=Change(aid, attacker, now[aid]),
        defender=Change(principal.id, principal.combatant, now[principal.id]),
        rolls=dice.rolls_since(start), events=tuple(events), summary=summary,
        fields=fields, others=tuple(others),
        unused_dice={k: tuple(v) for k, v in dice.unused().items()})


def _say_how_kept(effects: list[JSON], controller: Mapping[str, Any]) -> None:
    """Add to each ``controlled`` effect how ``controller`` (after ``control.establish``)
    keeps that creature: ``kept_by`` die or action. An Imagination Swarm group's dice
    can run out part way (``attack.keep_by`` is what was asked), so each says its own."""
    kept = {e["id"]: e["kept_by"] for e in controller["controlling"]}
    for effect in effects:
        if effect["effect"] == "controlled":
            effect["kept_by"] = kept[effect["combatant"]]


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _summary(tables: Mapping[str, Any], plan: Plan, attack_total: int | None,
             defense_total: int | None, winner: str, failed: bool, controlled: list[str],
             effects: list[JSON], events: Sequence[Event]) -> str:
    """One paragraph for the table: who struck whom with what, the rolls, what came of it
    (``events``: the exchange's, for the saves, the dice and the control it took).
    Numbers and names come from the tables and the events, so a GM's replacement tables
    are told as they were played."""
    a = plan.attacker["name"]
    names = {s.id: s.combatant["name"] for s in plan.members}
    names.update({k: v["name"] for k, v in plan.puppets.items()})
    parts = [f"{a} strikes at {_names(plan.targets)} with {_name(tables, plan.mode)}."]
    for t, c in plan.redirected:
        parts.append(f"{plan.bystanders[t]['name']} is under {names.get(c, c)}'s control, so "
                     f"the attack strikes {names.get(c, c)} instead.")
    parts += _save_lines(tables, plan, events, names)
    if failed:
        return " ".join(parts)
    if plan.attack_dice:
        parts.append(f"{a} rolls {plan.attack_dice}d{plan.attack_sides} for {attack_total}.")
    else:
        parts.append(f"{a} rolls nothing.")
    parts.append(_defense_line(tables, plan, defense_total))
    parts += _capped_lines(events, names)
    if attack_total == defense_total:
        parts.append(f"A tie goes to the {winner}.")
    if winner == "attacker":
        parts += _won_lines(tables, plan, controlled, effects, events, names)
    else:
        parts.append(f"{plan.principal.combatant['name']} holds: {a} "
                     f"{_rebuffed_cost(events, plan.attacker['id'])}.")
        if plan.attacker["controlling"]:
            parts.append(f"Every psionic control {a} held ends.")
            parts += _not_given(plan, plan.attacker, events, names)
    return " ".join(parts)


def _for_rounds(round_ends: int) -> str:
    """How long a condition lasting ``round_ends`` round ends is, counted as the seed
    counts it: the round end now coming is this round's, so 2 is "for a round" (seed:
    "stunned for one round"), 1 "until this round ends"."""
    if round_ends <= 1:
        return "until this round ends"
    return "for a round" if round_ends == 2 else f"for {round_ends - 1} rounds"


def _some_dice(n: int) -> str:
    """"a die", "2 dice"."""
    return "a die" if n == 1 else control.dice_count(n)


def _dice_lost(events: Sequence[Event]) -> int:
    """The pool dice the attacker lost (a pool already spent, its dice maintaining
    powers, has none to lose)."""
    return sum(int(e.data["dice"]) for e in events if e.type == "pool-die-lost")


def _pool_loss(events: Sequence[Event]) -> str:
    """"a die of the pool is lost", "2 dice of the pool are lost", for a pool whose
    every die is spent (maintaining powers) "its pool has no die to lose", and, with no
    pool-die-lost event at all (tables taking no die: blank_mind_pool_dice_lost 0), "no
    die of the pool is lost"."""
    lost = _dice_lost(events)
    if lost:
        return f"{_some_dice(lost)} of the pool {'is' if lost == 1 else 'are'} lost"
    if any(e.type == "pool-die-lost" for e in events):
        return "its pool has no die to lose"
    return "no die of the pool is lost"


def _save_lines(tables: Mapping[str, Any], plan: Plan, events: Sequence[Event],
                names: Mapping[str, str]) -> list[str]:
    """A sentence for each save the attacker made against Blank Mind, passed or failed,
    with the target and the roll; a failure ends the attack and says what it cost."""
    a = plan.attacker["name"]
    modes = {s.id: s.mode for s in plan.members}
    lines = []
    for e in events:
        if e.type != "blank-mind-save":
            continue
        against = f"{names[e.data['against']]}'s {_name(tables, modes[e.data['against']])}"
        numbers = f"(needed {e.data['target']}, rolled {e.data['roll']})"
        if e.data["success"]:
            lines.append(f"{a} saves against {against} {numbers}.")
        else:
            lines.append(f"{a} fails the save against {against} {numbers}: the attack fails "
                         f"outright and {_pool_loss(events)}.")
    return lines


def _defense_line(tables: Mapping[str, Any], plan: Plan, defense_total: int | None) -> str:
    """What the struck defender rolls (nothing, when unaware, down or without dice),
    the spells each member sacrificed, and the total."""
    p = plan.principal
    pname = p.combatant["name"]
    if not p.rolls:
        why = next((x for x in p.combatant["conditions"]
                    if x in tables["awareness_conditions"]), "down")
        defends = f"{pname}, {why}, rolls nothing"
    elif not p.dice:
        defends = f"{pname} defends with {_name(tables, p.mode)} but rolls nothing" \
            if p.mode else f"{pname} rolls nothing"
    else:
        defends = f"{pname} defends with {_name(tables, p.mode)} ({p.dice}d{p.sides})"
    if p.bonus:
        defends += f" {_sacrificed(p)}"
    if len(plan.members) == 1:
        return f"{defends}, a total of {defense_total}."
    others = [s.combatant["name"] + (f" ({_sacrificed(s)})" if s.bonus else "")
              for s in plan.members[1:]]
    return f"{defends}; with {_names(others)} the group totals {defense_total}."


def _capped_lines(events: Sequence[Event], names: Mapping[str, str]) -> list[str]:
    """What the dice limit cut from the defending group (``group-dice-capped``): "The
    group would roll 110 dice, over the limit of 100, so the first 100 are rolled, the
    minds struck first, then the allies in the order they came in: Kay rolls 25 of its
    35 dice, and Jay none." A mind rolling alone is named: "Lee would roll 120 dice, over
    the limit of 100, so it rolls the first 100." """
    lines = []
    for e in events:
        if e.type != "group-dice-capped":
            continue
        if [c["of"] for c in e.data["cut"]] == [e.data["dice"]]:
            # one mind rolling alone: there is no group to speak of
            alone = e.data["cut"][0]
            lines.append(f"{names[alone['id']]} would roll {e.data['dice']} dice, over the "
                         f"limit of {e.data['limit']}, so it rolls the first {alone['dice']}.")
            continue
        some = [f"{names[c['id']]} rolls {c['dice']} of its {control.dice_count(c['of'])}"
                for c in e.data["cut"] if c["dice"]]
        none = [names[c["id"]] for c in e.data["cut"] if not c["dice"]]
        if none:
            some.append(f"{_names(none)} none" if some else
                        f"{_names(none)} {'rolls' if len(none) == 1 else 'roll'} none")
        lines.append(f"The group would roll {e.data['dice']} dice, over the limit of "
                     f"{e.data['limit']}, so the first {e.data['limit']} are rolled, the "
                     "minds struck first, then the allies in the order they came in: "
                     f"{', and '.join(some)}.")
    return lines


def _sacrificed(side: Side) -> str:
    """"plus 4 for sacrificed spells": what a member's sacrificed spells add."""
    return f"plus {side.bonus} for sacrificed spells"


def _rebuffed_cost(events: Sequence[Event], attacker_id: str) -> str:
    """What a rebuffed attacker pays, as the events say: "loses a die from its pool and
    is stunned for a round"."""
    lost = _dice_lost(events)
    # no pool-die-lost event at all: the tables take no die (loser_pool_dice_lost 0)
    ruled = any(e.type == "pool-die-lost" for e in events)
    loss = f"loses {_some_dice(lost)} from its pool" if lost else \
        "has no die in its pool to lose" if ruled else "loses no die"
    stun = next(e for e in events if e.type == "stunned" and e.combatant == attacker_id)
    return f"{loss} and is stunned {_for_rounds(int(stun.data['round_ends']))}"


def _won_lines(tables: Mapping[str, Any], plan: Plan, controlled: Sequence[str],
               effects: Sequence[JSON], events: Sequence[Event],
               names: Mapping[str, str]) -> list[str]:
    """The sentences of an attack that won: who falls under control and how each link
    is kept, what Barrier Mantra gives instead, what falling under control takes, and
    the mode's effects (damage, and who that brings down)."""
    a = plan.attacker["name"]
    instead = _instead_of_control(tables, plan, effects, names)
    if controlled:
        lines = [_control_line(tables, plan, controlled, effects, names)]
        lines += [f"{a} asked to keep them by a die each, but its pool holds "
                  f"{control.dice_count(int(e.data['pool']))} for {e.data['creatures']} "
                  "creatures." for e in events if e.type == "kept-by-action-instead"]
        lines += [f"{x}." for x in instead]
    else:
        lines = [f"{a} wins, but {' and '.join(instead)}."]
    lines += _taken_from_the_controlled(plan, controlled, events, names)
    down = {e.combatant for e in events if e.type == "down"}
    for e in effects:
        name = names[e["combatant"]]
        if e["effect"] == "controlled" or e.get("instead_of_control"):
            continue
        if e["effect"] == "damage":
            lines.append(f"{name} takes {e['amount']} damage." if e["amount"] else
                         f"{name} takes no damage.")
            if e["combatant"] in down:
                lines.append(f"{name} is down (0 hit points or fewer).")
        else:
            lines.append(f"{name} is {e['effect']}.")
    return lines


#: How a single creature's control is kept, for the summary.
_KEPT_BY = {"die": "a dedicated die", "action": "an action each round"}


def _control_line(tables: Mapping[str, Any], plan: Plan, controlled: Sequence[str],
                  effects: Sequence[JSON], names: Mapping[str, str]) -> str:
    """"Ix wins: B falls under its psionic control (kept by a dedicated die).", saying
    how each link is kept: a Psionic Wave's creatures are one link; an Imagination Swarm
    group's are a link each, kept by dice while the pool lasts and by actions after."""
    kept = {e["combatant"]: e["kept_by"] for e in effects if e["effect"] == "controlled"}
    held = f"{_names([names[c] for c in controlled])} " \
           f"{'falls' if len(controlled) == 1 else 'fall'} under its psionic control"
    head = f"{plan.attacker['name']} wins: {held}"
    by = {how: [names[c] for c in controlled if kept[c] == how] for how in ("die", "action")}
    if len(controlled) == 1:
        return f"{head} (kept by {_KEPT_BY[kept[controlled[0]]]})."
    if tables["modes"][plan.mode].get("several_targets"):
        how = "a dedicated die each" if by["die"] else "one action each round for them all"
        return f"{head} as one link (kept by {how})."
    if not by["action"]:
        return f"{head}, each a link of its own kept by a dedicated die."
    if not by["die"]:
        return f"{head}, each a link of its own kept by an action each round."
    return (f"{head}, each a link of its own: {_names(by['die'])} kept by a dedicated die"
            f"{' each' if len(by['die']) > 1 else ''}, and {_names(by['action'])} by an "
            "action each round (the pool has no die left for them).")


def _instead_of_control(tables: Mapping[str, Any], plan: Plan, effects: Sequence[JSON],
                        names: Mapping[str, str]) -> list[str]:
    """"Barrier Mantra leaves B and C stunned for a round instead of controlled", one
    clause for each mode and effect that stood in for control (names and timers from
    the tables)."""
    modes = {s.id: s.mode for s in plan.members}
    groups: dict[tuple[str | None, str, int], list[str]] = {}
    for e in effects:
        if e.get("instead_of_control"):
            key = (modes[e["combatant"]], str(e["effect"]), int(e["round_ends"]))
            groups.setdefault(key, []).append(names[e["combatant"]])
    return [f"{_name(tables, mode)} leaves {_names(who)} {effect} {_for_rounds(ends)} "
            "instead of controlled" for (mode, effect, ends), who in groups.items()]


def _not_given(plan: Plan, controller: Mapping[str, Any], events: Sequence[Event],
               names: Mapping[str, str]) -> list[str]:
    """A sentence for each creature ``controller``'s control of ended whose sheet was
    not given (not in the exchange, nor among its puppets)."""
    given = {*names, plan.attacker["id"]}
    return [control.not_given_line(json_text(e.combatant), controller["name"])
            for e in events if e.type == "control-ended"
            and e.data["controller"] == controller["id"] and e.combatant not in given]


def _taken_from_the_controlled(plan: Plan, controlled: Sequence[str], events: Sequence[Event],
                               names: Mapping[str, str]) -> list[str]:
    """What falling under control took from each creature now controlled (seed 001: "Any
    powers being maintained by the controlled creature end and the power dice used to
    maintain them are expended"; the control it held ends too)."""
    lines: list[str] = []
    for side in plan.members:
        if side.id not in controlled:
            continue
        c = side.combatant
        ended = [e for e in events if e.type == "control-ended"
                 and e.data["controller"] == side.id]
        if ended:
            held = _names([names.get(str(e.combatant), json_text(e.combatant)) for e in ended])
            lines.append(f"{c['name']}'s own psionic control of {held} ends.")
            lines += _not_given(plan, c, events, names)
        spent = sum(int(e.data["dice"]) for e in events
                    if e.type == "dice-expended" and e.combatant == side.id)
        if spent:
            dice = "the die it kept for them is" if spent == 1 else \
                f"the {spent} dice it kept for them are"
            lines.append(f"{c['name']}'s maintained powers end and {dice} expended.")
    return lines
