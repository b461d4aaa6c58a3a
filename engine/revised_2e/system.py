"""The ``revised-2e`` system object: describe, combatants, one exchange, odds, rounds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.dice import DiceSource
from engine.errors import InvalidInput, RulesViolation
from engine.options import HouseRule
from engine.results import Change, Event, Resolution
from engine.system import System, id_source

from ..results import copy_json
from . import encounter, house
from .chances import exact, odds_json
from .combatants import Normaliser, stopping_conditions
from .exchange import (
    AttackOutcome,
    attack,
    check_attack,
    check_defense,
    close_by_paying,
    is_psionic,
    raise_defense,
)
from .rules import (
    MAX_REST_MIND_ROUNDS,
    attacks_allowed,
    close_offer,
    count_down_conditions,
    editable,
    end_of_round,
    opened_by_critical_this_round,
    price_closing,
    recover,
    rest,
    roll_quick_mac,
    settle_mac,
)
from .tables import Tables
from .text import (
    OUTSIDE_ENCOUNTERS,
    attack_summary,
    close_offer_line,
    closes_by_paying,
    rest_lines,
    round_end_lines,
)

JSON = dict[str, Any]

SOURCE = ("AD&D 2nd edition, DARK SUN revised psionics: seed 004 (psionic combat update for "
          "The Way of the Psionicist), with Player's Option: Skills & Powers tables")


class Revised2e(System):
    """AD&D 2e Dark Sun revised psionic combat (RULES.md §1).

    ``tables`` replaces the shipped ``data/tables.json`` (a GM's own table file); it is
    checked against ``data/tables.schema.json`` here.
    """

    id = "revised-2e"
    name = "AD&D 2e — Dark Sun revised psionics"
    source = SOURCE
    schemas_tested = True

    def __init__(self, tables: Any | None = None) -> None:
        self.tables = Tables.load(tables)
        self.normaliser = Normaliser(self.tables)

    # -- description ---------------------------------------------------------------
    def house_rules(self) -> Sequence[HouseRule]:
        """The H-2E-… house defaults (``house.HOUSE_RULES``)."""
        return house.HOUSE_RULES

    def combatant_schema(self) -> JSON:
        """JSON Schema of a combatant as callers may give it (built from the tables)."""
        return copy_json(self.normaliser.schema)

    def request_schema(self) -> JSON:
        """JSON Schema of an exchange request; embeds the combatant schema."""
        combatant = self.combatant_schema()
        combatant.pop("$schema", None)
        attack_ids = sorted(self.tables.attacks)
        defense_ids = sorted(self.tables.defenses)
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "revised-2e exchange request",
            "type": "object",
            "additionalProperties": False,
            "required": ["attacker", "defender", "attack"],
            "properties": {
                "system": {"const": self.id},
                "attacker": {"$ref": "#/$defs/combatant"},
                "defender": {"$ref": "#/$defs/combatant"},
                "attack": {
                    "type": "object", "additionalProperties": False, "required": ["mode"],
                    "properties": {
                        "mode": {"enum": attack_ids},
                        "multiplier": {"type": "integer", "minimum": 1, "maximum": 100,
                                       "default": 1,
                                       "description": "steps declared before the roll, "
                                                      "1 to the attacker's level"},
                        "range": {"enum": ["short", "medium", "long"], "default": "short"},
                    },
                },
                # null (no defense) or an object; one schema so errors point inside it
                "defense": {"type": ["object", "null"], "additionalProperties": False,
                            "required": ["mode"],
                            "properties": {"mode": {"enum": defense_ids},
                                           "paid": {"type": "boolean", "default": False,
                                                    "description": "already paid this "
                                                                   "round"}}},
                "options": {"type": "object"},
                "dice": {"type": "object"},
                "seed": {"type": "integer"},
            },
            "$defs": {"combatant": combatant},
        }

    def dice_purposes(self) -> list[JSON]:
        """Every dice purpose this system rolls, with its die and what it is for."""
        t = self.tables
        damage = {m: int(a["damage"]["sides"]) for m, a in t.attacks.items()}
        effects = t.open_mind["effects"]

        def effect_sides(kind: set[str]) -> dict[str, int]:
            return {m: int(e["sides"]) for m, e in effects.items() if e["type"] in kind}

        def entry(purpose: str, sides: int | Mapping[str, int], text: str,
                  summed: bool = False) -> JSON:
            if isinstance(sides, int):
                return {"purpose": purpose, "sides": sides, "summed": summed, "text": text}
            values = set(sides.values())
            return {"purpose": purpose, "sides": values.pop() if len(values) == 1 else None,
                    "sides_by_mode": dict(sides), "summed": summed, "text": text}

        quick = t.raw["quick_mac"]
        widths = {r["high"] - r["low"] + 1 for r in quick["base"]}
        return [
            entry("attack", int(t.attack_roll["sides"]),
                  "the attacker's MTHAC0 roll (natural 1 misses, 20 hits)"),
            entry("damage", damage, "one die per step of the declared multiplier",
                  summed=True),
            entry("save", t.save_die, "save vs. paralyzation: after a critical hit below 25% of "
                              "the PSP maximum, and each round for an open nonpsionic mind"),
            entry("effect-duration", effect_sides({"dazed", "confused"}),
                  "rounds an open mind stays dazed (ego whip) or confused (id insinuation)",
                  summed=True),
            entry("lost-power", effect_sides({"lost-power"}),
                  "days an open mind loses one power to a mind thrust", summed=True),
            entry("hp-damage", effect_sides({"hp-damage"}),
                  "hit points an open mind loses, one die per step (psionic blast, "
                  "psychic crush)", summed=True),
            entry("open-duration", int(t.open_mind["duration"]["sides"]),
                  "rounds a forced-open mind stays locked open (1d4+1)", summed=True),
            entry("wisdom-check", int(t.open_mind["wisdom_check"]["sides"]),
                  "Wisdom check at −3 to close an open mind after its locked rounds"),
            {"purpose": "mac-base", "sides": None, "sides_by_range": sorted(widths),
             "summed": False,
             "text": "Quick MAC: a die the size of the Intelligence range picks the base "
                     "(H-2E-QUICKMAC-PICK)"},
            entry("mac-modifier", int(quick["modifier_die"]),
                  "Quick MAC: modifier on the high- or low-psionic table"),
            entry("initiative", int(t.raw["initiative"]["sides"]),
                  "encounter order when H-2E-ORDER is 'initiative' (+2 for a mind forced "
                  "open last round)"),
        ]

    def describe(self) -> JSON:
        """What ``systems.describe`` serves: modes, tables, schemas, dice purposes,
        house rules and how an encounter round runs."""
        t = self.tables
        return {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "modes": {
                "attacks": [{"id": m, "name": a["name"], "cost": a["cost"],
                             "damage": f"1d{a['damage']['sides']}"
                                       + (f"+{a['damage']['bonus']}" if a["damage"]["bonus"]
                                          else ""),
                             "ranges": dict(a["ranges"])}
                            for m, a in t.attacks.items()],
                "defenses": [{"id": m, "name": d["name"], "cost": d["cost"]}
                             for m, d in t.defenses.items()],
            },
            "tables": copy_json(dict(t.raw)),
            "combatant_schema": self.combatant_schema(),
            "request_schema": self.request_schema(),
            "choice_schema": encounter.choice_schema(self),
            "dice_purposes": self.dice_purposes(),
            "house_rules": [r.to_json() for r in self.house_rules()],
            "encounter": {
                "step": "one round",
                "order": "defenses raised and paid first (once per round), minds closed by "
                         "paying, then attacks one at a time in the order of H-2E-ORDER, each "
                         "seeing the state the earlier ones left; then the end-of-round "
                         "bookkeeping of open minds and conditions",
                "choice": {"attack": "{mode, multiplier, range, target}",
                           "attacks": "[attack, ...] when more than one is allowed (§1.8)",
                           "defense": "{mode}", "close": "true to pay to close an open mind"},
            },
        }

    # -- combatants -------------------------------------------------------------------
    def combatant(self, raw: Mapping[str, Any], path: str = "",
                  options: Mapping[str, Any] | None = None) -> JSON:
        """Validate ``raw`` and fill defaults and derivations (RULES.md §1.1) under the
        house rules ``options``. A monster's ``quick_mac`` leaves ``mac`` null until a
        resolution rolls it (``roll_mac``)."""
        return self.normaliser.normalise(raw, path, self.options(options))

    def roll_mac(self, combatant: Mapping[str, Any], dice: DiceSource,
                 options: Mapping[str, Any] | None = None) -> JSON:
        """``combatant`` (full) with a pending Quick MAC rolled now."""
        return settle_mac(self.tables, combatant, dice, self.options(options))

    def quick_mac(self, intelligence: int, psionic: str, dice: DiceSource,
                  options: Mapping[str, Any] | None = None) -> int:
        """A monster's MAC by the seed's Quick MAC tables (purposes ``mac-base`` and
        ``mac-modifier``)."""
        if psionic not in ("high", "low"):
            raise InvalidInput.at("/quick_mac/psionic", "must be 'high' or 'low'")
        return roll_quick_mac(self.tables, intelligence, psionic, dice,
                              self.options(options)[house.QUICKMAC_PICK])

    def recover(self, combatant: Mapping[str, Any], hours: int) -> JSON:
        """``combatant`` (full) after ``hours`` full hours of sleep or meditation."""
        return recover(self.tables, combatant, hours)

    def attacks_per_round(self, combatant: Mapping[str, Any], round_number: int,
                          options: Mapping[str, Any] | None = None) -> int:
        """Attacks ``combatant`` (full) may make in encounter round ``round_number``."""
        return attacks_allowed(self.tables, combatant["kind"], combatant["level"],
                               round_number, self.options(options)[house.THREE_PER_TWO])

    def end_of_round(self, combatant: Mapping[str, Any], dice: DiceSource,
                     options: Mapping[str, Any] | None = None) -> tuple[JSON, list[Event]]:
        """The open mind and conditions from one round to the next (RULES.md §1.5)."""
        return end_of_round(self.tables, combatant, dice, self.options(options))

    def combatant_under(self, raw: Mapping[str, Any], path: str = "",
                        options: Mapping[str, Any] | None = None) -> JSON:
        """``combatant`` under the house rules ``options`` (they derive MTHAC0 and saves)."""
        return self.combatant(raw, path, options)

    # -- the end of a round outside any encounter ------------------------------------------
    def round_end_choice_schema(self) -> JSON:
        """At the end of the round a critical hit opened a mind in, it may pay to close
        (§1.5, "in the following round"), so that it starts that round closed, as an
        encounter's ``close`` choice paid at the start of the round leaves it."""
        return {"type": "object", "additionalProperties": False, "properties": {
            "close": {"type": "boolean",
                      "description": "pay to close a mind a critical hit opened: one "
                                     "it opened this round pays once this round's end "
                                     "is counted, and starts the next round closed; "
                                     "one the last round's end told it may pay "
                                     "(may_pay_to_close) pays before it"}}}

    def _closing_terms(self, c: Mapping[str, Any], options: Mapping[str, Any]
                       ) -> tuple[JSON, list[str], bool] | None:
        """What closing ``c``'s mind by paying at this round's end costs (§1.5), the
        conditions that stop it then, and whether it pays after this round's
        bookkeeping; ``None`` when it has no such choice.

        A mind a critical hit opened this round pays after the bookkeeping, so it is
        priced and checked on the mind as that leaves it: a stun of this round has
        ended, a daze that lasts still stops it. A mind the last round's end already told
        it may pay (``may_pay_to_close``: one that did not pay then, a state saved by an
        older companion, or one taken from an encounter) still may, before the
        bookkeeping that would lock it open."""
        offer = close_offer(self.tables, c, options)
        if offer is not None:
            return offer, stopping_conditions(c, stun_stops=True), False
        if not opened_by_critical_this_round(c):
            return None
        # the bookkeeping of the opening round changes only the conditions that matter
        # here (not the PSPs or defenses that price it): no need to roll it
        later = editable(c)
        count_down_conditions(later)
        return price_closing(self.tables, later, options), \
            stopping_conditions(later, stun_stops=True), True

    def round_end_offer(self, combatant: JSON, options: Mapping[str, Any]
                        ) -> tuple[JSON, list[str]]:
        """A mind a critical hit opened this round (or one told at the last round's end
        that it may pay) may pay to close (§1.5, ``_closing_terms``): ``close`` is
        ``{cost, defense, basis, psp, payable, reason}`` (``rules.price_closing``;
        ``reason`` ``cannot-act`` when a condition stops it)."""
        terms = self._closing_terms(combatant, options)
        if terms is None:
            return {}, []
        offer, stopped, _ = terms
        if stopped:
            offer |= {"payable": False, "reason": "cannot-act"}
        return {"close": offer}, [close_offer_line(self.tables, combatant["name"], offer,
                                                   OUTSIDE_ENCOUNTERS, stopped)]

    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """``end_of_round`` (§1.5), with closing by paying when chosen: after the
        bookkeeping for a mind a critical hit opened this round, so that it starts the
        next round closed; before it for one told at the last round's end that it may
        pay (``_closing_terms``). A choice the rules refuse raises and changes nothing."""
        c = combatant
        if not choice.get("close"):
            after, events = end_of_round(self.tables, c, dice, options)
            return after, events, round_end_lines(after["name"], events, OUTSIDE_ENCOUNTERS,
                                                  close_offer(self.tables, after, options))
        terms = self._closing_terms(c, options)
        if terms is None:
            raise RulesViolation("cannot-close", close_offer_line(
                self.tables, c["name"], None, OUTSIDE_ENCOUNTERS))
        offer, stopped, after_bookkeeping = terms
        if stopped:
            raise RulesViolation("cannot-act", f"{c['name']} cannot close its mind "
                                               f"({', '.join(stopped)})")
        if not offer["payable"]:
            raise RulesViolation("cannot-close", close_offer_line(
                self.tables, c["name"], offer, OUTSIDE_ENCOUNTERS))
        paid = closes_by_paying(c["name"], offer["cost"])
        if not after_bookkeeping:
            events = close_by_paying(c, offer["cost"])
            after, more = end_of_round(self.tables, c, dice, options)
            return after, events + more, [paid, *round_end_lines(after["name"], more,
                                                                 OUTSIDE_ENCOUNTERS)]
        after, events = end_of_round(self.tables, c, dice, options)
        # it pays now: the summary does not also tell it it may pay later
        said = [e for e in events if e.type != "mind-may-close"]
        events += close_by_paying(after, offer["cost"])
        return after, events, [*round_end_lines(after["name"], said, OUTSIDE_ENCOUNTERS), paid]

    # -- rest outside any encounter ---------------------------------------------------------
    def rest_members(self) -> JSON:
        """A rest lasts whole hours (§1.8: only full hours of sleep or meditation count)."""
        return {"hours": {"type": "integer", "minimum": 1, "maximum": 1000,
                          "description": "full hours of sleep or meditation: ceil(psp_max "
                                         "/ 8) PSPs an hour, never above the maximum"},
                "required": ["hours"]}

    def combatant_rest(self, combatant: JSON, request: Mapping[str, Any], dice: DiceSource,
                       options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """PSPs back by §1.8, an open mind through its rounds, conditions timed in rounds
        run out (``rules.rest``)."""
        after, events = rest(self.tables, combatant, int(request["hours"]), dice, options)
        return after, events, rest_lines(after["name"], combatant, after, events,
                                         MAX_REST_MIND_ROUNDS)

    # -- one exchange ---------------------------------------------------------------------
    def _prepare(self, request: Mapping[str, Any]
                 ) -> tuple[dict[str, Any], JSON, JSON, str | None, bool]:
        self.validate_request(request)
        options = self.options(request.get("options"))
        # Frozen once: the record's "before" as it is, the rules' copies share it.
        attacker = self.normaliser.normalise(request["attacker"], "/attacker", options, True,
                                             frozen=True)
        defender = self.normaliser.normalise(request["defender"], "/defender", options, True,
                                             frozen=True)
        if attacker["id"] == defender["id"] and attacker != defender:
            # two creatures given one id: a mistake in the params, not a self-attack
            field, ident = id_source(request["defender"], "/defender", defender["id"])
            raise InvalidInput.at(field, f"{ident} is the attacker's too: give each "
                                         "combatant its own")
        check_attack(self.tables, attacker, defender, request["attack"],
                     options[house.STUN])
        defense = request.get("defense")
        mode = defense["mode"] if defense else None
        paid = bool(defense.get("paid", False)) if defense else False
        if mode is not None:
            check_defense(self.tables, defender, mode, paid)
        return options, attacker, defender, mode, paid

    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        """One attack (RULES.md §1.4): checks, the defense's cost unless ``paid``, the d20,
        costs, damage, critical hits, saves, opening and open-mind effects."""
        self.check_dice(dice)
        options, attacker, defender, mode, paid = self._prepare(request)
        start = dice.mark()
        events: list[Event] = []
        d = settle_mac(self.tables, defender, dice, options)
        if mode is not None:
            events += raise_defense(self.tables, d, mode, paid)
        outcome = attack(self.tables, options, attacker, d, request["attack"], mode, dice)
        defense_psp = self.tables.defense_cost(mode) if mode is not None and not paid else 0
        return self.resolution(attacker, defender, outcome, events, dice, start,
                               dice.unused(), {"defense_psp": defense_psp})

    def resolution(self, attacker: Mapping[str, Any], defender: Mapping[str, Any],
                   outcome: AttackOutcome, before_events: Sequence[Event], dice: DiceSource,
                   start: int, unused: Mapping[str, Sequence[int]],
                   extra: Mapping[str, Any] | None = None) -> Resolution:
        """The ``Resolution`` record of ``outcome`` (used by exchanges and rounds);
        ``extra`` adds result fields."""
        fields = {**outcome.fields, **(extra or {})}
        return Resolution(
            system=self.id,
            outcome="hit" if fields["hit"] else "miss",
            attacker=Change(attacker["id"], attacker, outcome.attacker),
            defender=Change(defender["id"], defender, outcome.defender),
            rolls=dice.rolls_since(start),
            events=(*before_events, *outcome.events),
            summary=attack_summary(self.tables, attacker, defender, fields, outcome.attacker,
                                   outcome.defender),
            fields=fields,
            unused_dice={k: tuple(v) for k, v in unused.items()},
        )

    def odds(self, request: Mapping[str, Any]) -> JSON:
        """Exact chances of the exchange (floats only in this JSON): outcomes {hit, miss},
        critical, mind_opened (save and 25% rule included), damage and psp_spent."""
        options, attacker, defender, mode, paid = self._prepare(request)
        cost = self.tables.defense_cost(mode) if mode is not None and not paid else 0
        return odds_json(self.tables, options, attacker, defender, request["attack"], mode,
                         cost)

    def defending_places(self, request: Mapping[str, Any]) -> dict[str, list[str]]:
        """The defender, with the defense the request gives it."""
        defense = request.get("defense")
        return {"/defender": [defense["mode"]] if defense else []}

    def knowing(self, combatant: JSON, modes: Sequence[str], request: Mapping[str, Any]
                ) -> JSON:
        """A psionic mind knowing ``modes`` and only them (no list a house rule's limit
        could refuse), given the PSPs to pay for them unless the defense is ``paid``:
        when it holds fewer, it holds as many more as the cost, as far as its maximum
        allows (raised only when the cost alone is above it), so it pays and is left, as
        near as its maximum lets it, as it was. A mind without psionics stays as it is
        (no defense is open to it, whatever it knows)."""
        if not modes or not is_psionic(combatant):
            return combatant
        out = {**combatant, "defenses": list(modes)}
        defense = request.get("defense") or {}
        cost = 0 if defense.get("paid") else sum(self.tables.defense_cost(m) for m in modes)
        if out["psp"] < cost:
            out["psp"] = max(cost, min(out["psp"] + cost, out["psp_max"]))
            out["psp_max"] = max(out["psp_max"], out["psp"])
        return out

    def exact_odds(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """As ``odds`` with exact ``Fraction``s (hit, critical, mind_opened, damage ...)."""
        options, attacker, defender, mode, paid = self._prepare(request)
        cost = self.tables.defense_cost(mode) if mode is not None and not paid else 0
        return exact(self.tables, options, attacker, defender, request["attack"], mode, cost)

    # -- encounters ----------------------------------------------------------------------------
    rounds = encounter

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return encounter.pending_choices(state)
