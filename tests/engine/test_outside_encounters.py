"""Combatants outside any encounter, whose state the VTT sheet carries between calls:
the end of a round (``System.end_round``, the engine side of ``exchange.end_round``: what
each system's encounter does at its round's end) and a rest (``System.rest``, of
``combatants.rest``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine import builtin_systems
from engine.dice import RandomDice, SuppliedDice
from engine.errors import DiceNeeded, InvalidInput, RulesViolation
from engine.results import Event
from engine.system import MAX_ROUND_COMBATANTS
from tests.sample_plugin import SampleDuel

JSON = dict[str, Any]
SYSTEMS = builtin_systems()
REVISED, STRENGTH, POOL = SYSTEMS["revised-2e"], SYSTEMS["combat-strength"], \
    SYSTEMS["power-pool"]


def psionicist(cid: str, **more: Any) -> JSON:
    c: JSON = {"id": cid, "name": cid.title(), "kind": "psionicist", "level": 5, "psp": 50,
               "psp_max": 50, "int": 14, "wis": 13, "attacks": ["mind-thrust"],
               "defenses": ["thought-shield", "mental-barrier"]}
    c.update(more)
    return c


def open_mind(**more: Any) -> JSON:
    mind: JSON = {"state": "open", "opened_by": "critical", "rounds_open": 0,
                  "last_defense": "mental-barrier"}
    mind.update(more)
    return mind


def after(result: JSON, cid: str) -> JSON:
    change = next(c for c in result["combatants"] if c["id"] == cid)
    after_: JSON = change["after"]
    return after_


# -- revised-2e (RULES.md §1.5) ---------------------------------------------------------
def test_revised_2e_stun_of_the_round_ends_and_the_attacker_may_attack_again() -> None:
    """A stun lasts the round it was given (condition_rounds 0): the single exchange
    refuses the stunned attacker until the round's end, and then takes it."""
    stunned = psionicist("kara", conditions=["stunned"], condition_rounds={"stunned": 0})
    attack = {"attacker": stunned, "defender": psionicist("vel"),
              "attack": {"mode": "mind-thrust"}}
    with pytest.raises(RulesViolation) as refused:
        REVISED.resolve(attack, SuppliedDice({"attack": [10]}))
    assert refused.value.rule == "attacker-cannot-act"
    result = REVISED.end_round({"combatants": [stunned]}, SuppliedDice({}))
    kara = after(result, "kara")
    assert kara["conditions"] == [] and kara["condition_rounds"] == {}
    assert result["events"] == [{"type": "condition-ended", "combatant": "kara",
                                 "condition": "stunned"}]
    assert result["summary"] == "End of the round: Kara is no longer stunned."
    assert REVISED.resolve({**attack, "attacker": kara}, RandomDice(5)).attacker.id == "kara"


def test_revised_2e_initiative_penalty_lasts_one_round_more() -> None:
    c = psionicist("kara", conditions=["initiative-penalty"],
                   condition_rounds={"initiative-penalty": 1})
    first = after(REVISED.end_round({"combatants": [c]}, SuppliedDice({})), "kara")
    assert first["conditions"] == ["initiative-penalty"]
    assert first["condition_rounds"] == {"initiative-penalty": 0}
    second = after(REVISED.end_round({"combatants": [first]}, SuppliedDice({})), "kara")
    assert second["conditions"] == []


def test_revised_2e_mind_opened_by_a_critical_may_pay_then_locks_open() -> None:
    """Opened by a critical hit: the end of that round tells it it may pay to close; if
    it has not paid by the next round's end, it stays open 1d4+1 rounds."""
    c = psionicist("kara", mind=open_mind())
    first = REVISED.end_round({"combatants": [c]}, SuppliedDice({}))
    kara = after(first, "kara")
    assert kara["mind"]["may_pay_to_close"] is True and first["rolls"] == []
    second = REVISED.end_round({"combatants": [kara]}, SuppliedDice({"open-duration": [3]}))
    locked = after(second, "kara")["mind"]
    assert locked["state"] == "open" and locked["locked_rounds"] == 4
    assert locked["may_pay_to_close"] is False
    assert second["summary"] == "End of the round: Kara's mind is locked open for 4 rounds."
    assert [(r["purpose"], r["value"], r["by"]) for r in second["rolls"]] == \
        [("open-duration", 3, "kara")]


def test_revised_2e_a_sheet_told_it_may_pay_locks_open_unpaid_whatever_its_rounds_open(
        ) -> None:
    """docs/COMBATANTS.md: ``may_pay_to_close`` is set by the end of the round a critical
    hit opened the mind in, so a sheet that says so (a hand-made one may keep
    ``rounds_open`` 0) is past that round: it is offered closing before the bookkeeping,
    and unpaid it is locked open 1d4+1 rounds, not told it may pay once more (survivor
    #67 of a revised-2e mutation audit)."""
    c = psionicist("kara", mind=open_mind(may_pay_to_close=True))
    offered = REVISED.round_end_choices({"combatants": [c]})
    assert offered["combatants"][0]["choices"]["close"]["cost"] == 10
    result = REVISED.end_round({"combatants": [c]}, SuppliedDice({"open-duration": [2]}))
    mind = after(result, "kara")["mind"]
    assert (mind["state"], mind["locked_rounds"], mind["may_pay_to_close"]) == ("open", 3, False)
    assert [e["type"] for e in result["events"]] == ["mind-locked"]
    paid = REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": True}}},
                             SuppliedDice({}))
    assert after(paid, "kara")["mind"]["state"] == "closed"


def test_revised_2e_close_choice_pays_twice_the_last_defense() -> None:
    """§1.5: closing costs twice the last defense used (mental barrier 5 → 10 PSPs)."""
    c = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True))
    result = REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": True}}},
                               SuppliedDice({}))
    kara = after(result, "kara")
    assert kara["mind"]["state"] == "closed" and kara["psp"] == 50 - 10
    assert result["summary"] == "End of the round: Kara pays 10 PSPs and closes its mind."
    assert [e["type"] for e in result["events"]] == ["psp-spent", "mind-closed"]


def test_revised_2e_a_mind_told_it_may_pay_pays_before_the_round_s_end_in_events_too(
        ) -> None:
    """§1.5: a mind the last round's end told it may pay closes before this round's
    bookkeeping; its events say so in that order, as its summary does."""
    c = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True),
                   conditions=["initiative-penalty"],
                   condition_rounds={"initiative-penalty": 0})
    result = REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": True}}},
                               SuppliedDice({}))
    assert [e["type"] for e in result["events"]] == [
        "psp-spent", "mind-closed", "condition-ended"]
    assert result["summary"] == ("End of the round: Kara pays 10 PSPs and closes its mind. "
                                 "Kara's initiative penalty ends.")


def test_revised_2e_close_is_refused_when_the_mind_may_not_pay() -> None:
    # locked open: the chance to pay ended with the round after the one it opened in
    c = psionicist("kara", mind=open_mind(rounds_open=2, locked_rounds=3))
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": True}}},
                          SuppliedDice({}))
    assert refused.value.rule == "cannot-close"
    assert refused.value.detail == ("Kara's mind is not one a critical hit opened this "
                                    "round or the last: it cannot pay to close it now.")
    stunned = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True),
                         conditions=["stunned"], condition_rounds={"stunned": 0})
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [stunned], "choices": {"kara": {"close": True}}},
                          SuppliedDice({}))
    assert refused.value.rule == "cannot-act"


def test_revised_2e_a_stun_stops_closing_by_paying_even_with_h_2e_stun_off() -> None:
    """H-2E-STUN off lets a stunned mind attack; closing is no attack, and a stun stops
    it as in an encounter's ``declare``: offered as ``cannot-act``, refused if chosen."""
    stunned = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True),
                         conditions=["stunned"], condition_rounds={"stunned": 0})
    options = {"H-2E-STUN": False}
    offered = REVISED.round_end_choices({"combatants": [stunned], "options": options})
    assert offered["combatants"][0]["choices"]["close"]["reason"] == "cannot-act"
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [stunned], "choices": {"kara": {"close": True}},
                           "options": options}, SuppliedDice({}))
    assert refused.value.rule == "cannot-act"


def critical_hit_on_kara() -> JSON:
    """An exchange in which Ulcen's mind thrust ×2 (natural 20 − 2 = 18 against 6) is a
    critical mental hit through Kara's mental barrier, and Kara fails her save (3
    against 12): her mind is forced open and she is stunned for the rest of the round."""
    request = {"attacker": psionicist("ulcen", attacks=["mind-thrust", "ego-whip"]),
               "defender": psionicist("kara"),
               "attack": {"mode": "mind-thrust", "multiplier": 2},
               "defense": {"mode": "mental-barrier"}}
    hit = REVISED.resolve(request, SuppliedDice({"attack": [20], "damage": [1, 1],
                                                 "save": [3]})).to_json()
    assert hit["critical"] and hit["opened_by"] == "critical"
    assert hit["defender"]["after"]["conditions"] == ["stunned", "initiative-penalty"]
    return hit


def test_revised_2e_a_mind_a_critical_hit_opened_pays_to_close_at_that_round_s_end(
        ) -> None:
    """Seed 004: a mind opened by a critical mental hit "can close its mind in the
    following round by spending PSPs equal to double the cost of the last defense it
    used" (mental barrier 5 → 10). An encounter takes that payment at the start of the
    following round, before any attack; outside encounters it is offered and taken at the
    end of the round the hit opened the mind in, once that round's end has counted the
    stun out, so the mind meets the next round's attacks closed."""
    hit = critical_hit_on_kara()
    kara = hit["defender"]["after"]
    offers = REVISED.round_end_choices({"combatants": [kara]})
    assert offers["combatants"][0]["choices"] == {"close": {
        "cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 50 - 5 - 2,
        "payable": True, "reason": None}}
    assert offers["summary"] == ("Kara may pay 10 PSPs (twice the mental barrier, the last "
                                 "defense it used) to close its mind.")
    ended = REVISED.end_round({"combatants": [kara], "choices": {"kara": {"close": True}}},
                              SuppliedDice({}))
    closed = after(ended, "kara")
    assert closed["psp"] == 43 - 10
    assert closed["mind"] == {"state": "closed", "opened_by": None, "locked_rounds": 0,
                              "last_defense": "mental-barrier", "used_power": False,
                              "may_pay_to_close": False, "rounds_open": 0}
    # the +2 on initiative lasts into the next round; the stun has ended
    assert closed["conditions"] == ["initiative-penalty"]
    assert [e["type"] for e in ended["events"]] == [
        "mind-may-close", "condition-ended", "psp-spent", "mind-closed"]
    assert ended["summary"] == ("End of the round: Kara is no longer stunned. Kara pays 10 "
                                "PSPs and closes its mind.")
    # The next round's ego whip meets a closed mind: no +2 and no daze.
    whip = REVISED.resolve({"attacker": hit["attacker"]["after"], "defender": closed,
                            "attack": {"mode": "ego-whip"}},
                           SuppliedDice({"attack": [15], "damage": [2]})).to_json()
    assert whip["hit"] and not whip["target_was_open"] and whip["effect"] is None
    assert whip["roll"]["modifier"] == 0


def test_revised_2e_a_mind_that_did_not_pay_at_once_still_may_at_the_next_round_s_end(
        ) -> None:
    """§1.5 "in the following round": a mind a critical hit opened that did not pay at
    the end of that round (or whose state comes from an encounter, or was saved before
    closing was offered then) is still offered it at the end of the next round, and pays
    before that round's end would lock it open."""
    kara = after(REVISED.end_round({"combatants": [critical_hit_on_kara()["defender"][
        "after"]]}, SuppliedDice({})), "kara")
    assert kara["mind"]["may_pay_to_close"] and kara["conditions"] == ["initiative-penalty"]
    offers = REVISED.round_end_choices({"combatants": [kara]})
    assert offers["combatants"][0]["choices"]["close"]["payable"] is True
    ended = REVISED.end_round({"combatants": [kara], "choices": {"kara": {"close": True}}},
                              SuppliedDice({}))
    assert after(ended, "kara")["mind"]["state"] == "closed"
    assert after(ended, "kara")["psp"] == 43 - 10
    assert ended["summary"] == ("End of the round: Kara pays 10 PSPs and closes its mind. "
                                "Kara's initiative penalty ends.")


def test_revised_2e_a_daze_that_outlasts_the_opening_round_stops_closing_at_its_end(
        ) -> None:
    """A stun lasts the round it was given, so it no longer stops a mind paying to close
    at that round's end; a daze that lasts into the next round still does: the offer says
    ``cannot-act``, and end_round refuses the choice and changes nothing."""
    dazed = psionicist("kara", mind=open_mind(), conditions=["stunned", "dazed"],
                       condition_rounds={"stunned": 0, "dazed": 1})
    offers = REVISED.round_end_choices({"combatants": [dazed]})
    close = offers["combatants"][0]["choices"]["close"]
    assert (close["cost"], close["payable"], close["reason"]) == (10, False, "cannot-act")
    assert offers["summary"] == "Kara cannot close its mind (dazed)."
    request = {"combatants": [dazed], "choices": {"kara": {"close": True}}}
    kept = copy.deepcopy(request)
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round(request, SuppliedDice({}))
    assert (refused.value.rule, refused.value.detail) == (
        "cannot-act", "Kara cannot close its mind (dazed)")
    assert request == kept
    poor = psionicist("kara", psp=10, mind=open_mind())
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [poor], "choices": {"kara": {"close": True}}},
                          SuppliedDice({}))
    assert refused.value.rule == "cannot-close" and "its last PSPs" in refused.value.detail


def test_revised_2e_round_end_choices_price_closing_before_the_round_ends() -> None:
    """§1.5 "closing costs 2 × the cost of the last defense it used (mental barrier 5 →
    10)": asked before the round's end, each mind that may pay is offered closing at that
    price, and the offer is what end_round then charges."""
    kara = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True))
    vel = psionicist("vel", psp=10, mind=open_mind(rounds_open=1, may_pay_to_close=True))
    calm = psionicist("calm")
    request = {"combatants": [kara, vel, calm]}
    offers = REVISED.round_end_choices(request)
    assert [(c["id"], c["name"]) for c in offers["combatants"]] == [
        ("kara", "Kara"), ("vel", "Vel"), ("calm", "Calm")]
    close = [c["choices"].get("close") for c in offers["combatants"]]
    assert close[0] == {"cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 50,
                        "payable": True, "reason": None}
    assert (close[1]["payable"], close[1]["reason"]) == (False, "last-psp")
    assert close[2] is None
    assert offers["summary"] == (
        "Kara may pay 10 PSPs (twice the mental barrier, the last defense it used) to close "
        "its mind. Closing Vel's mind would cost 10 PSPs (twice the mental barrier, the "
        "last defense it used), its last PSPs: a mind with none is open, so it cannot pay "
        "(H-2E-CLOSE-LAST-PSP).")
    assert request == {"combatants": [kara, vel, calm]} and offers["system"] == "revised-2e"
    paid = REVISED.end_round({"combatants": [kara], "choices": {"kara": {"close": True}}},
                             SuppliedDice({}))
    assert after(paid, "kara")["psp"] == 50 - close[0]["cost"]
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [vel], "choices": {"vel": {"close": True}}},
                          SuppliedDice({}))
    assert refused.value.rule == "cannot-close" and "its last PSPs" in refused.value.detail


def test_revised_2e_round_end_choices_follow_the_house_rules_and_conditions() -> None:
    unpriced = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True,
                                                 last_defense=None))
    on = REVISED.round_end_choices({"combatants": [unpriced]})["combatants"][0]
    assert (on["choices"]["close"]["cost"], on["choices"]["close"]["basis"]) == (
        4, "cheapest")  # H-2E-NO-LAST-DEF: twice the thought shield
    off = REVISED.round_end_choices({"combatants": [unpriced],
                                     "options": {"H-2E-NO-LAST-DEF": False}})
    assert off["combatants"][0]["choices"]["close"]["reason"] == "no-last-defense"
    assert "H-2E-NO-LAST-DEF is off" in off["summary"]
    stunned = {**unpriced, "conditions": ["stunned"], "condition_rounds": {"stunned": 1}}
    held = REVISED.round_end_choices({"combatants": [stunned]})
    assert held["combatants"][0]["choices"]["close"]["reason"] == "cannot-act"
    assert held["summary"] == "Kara cannot close its mind (stunned)."


def test_round_end_choices_where_nobody_has_a_choice_say_so() -> None:
    quiet = REVISED.round_end_choices({"combatants": [psionicist("kara")]})
    assert quiet["combatants"] == [{"id": "kara", "name": "Kara", "choices": {}}]
    assert quiet["summary"] == "Nobody has anything to choose at the end of this round."
    pool = POOL.round_end_choices({"combatants": [{"id": "ix", "hit_dice": 4, "die": 8}]})
    assert pool["combatants"][0]["choices"] == {}
    with pytest.raises(InvalidInput) as bad:
        SampleDuel().round_end_choices({"combatants": [{"id": "a"}]})
    assert bad.value.problems[0].path == "/system"
    with pytest.raises(InvalidInput) as bad:
        REVISED.round_end_choices({"combatants": [psionicist("a")], "dice": {}})
    assert bad.value.problems[0].path == ""


def test_revised_2e_after_the_lock_a_wisdom_check_closes_the_mind() -> None:
    """d20 ≤ wis − 3 closes it (wis 13: 10 or less)."""
    c = psionicist("kara", mind=open_mind(opened_by="zero-psp", rounds_open=3))
    stays = REVISED.end_round({"combatants": [c]}, SuppliedDice({"wisdom-check": [11]}))
    assert after(stays, "kara")["mind"]["state"] == "open"
    assert stays["summary"] == ("End of the round: Kara's mind stays open (Wisdom check "
                                "10, rolled 11).")
    closes = REVISED.end_round({"combatants": [c]}, SuppliedDice({"wisdom-check": [10]}))
    assert after(closes, "kara")["mind"]["state"] == "closed"


def test_revised_2e_derives_under_the_house_rules_given() -> None:
    """The combatants are read under ``options`` as ``resolve`` reads them."""
    c = psionicist("kara", kind="wild-talent")
    default = after(REVISED.end_round({"combatants": [c]}, SuppliedDice({})), "kara")
    off = {"H-2E-WT-MTHAC0": False}
    other = after(REVISED.end_round({"combatants": [c], "options": off}, SuppliedDice({})),
                  "kara")
    assert default == REVISED.combatant(c)
    assert other == REVISED.combatant(c, options=off)
    assert default["mthac0"] != other["mthac0"]


def test_supplied_dice_that_run_out_and_dice_left_over() -> None:
    c = psionicist("kara", mind=open_mind(opened_by="zero-psp", rounds_open=3))
    with pytest.raises(DiceNeeded) as out:
        REVISED.end_round({"combatants": [c]}, SuppliedDice({}))
    assert (out.value.purpose, out.value.sides, out.value.needed) == ("wisdom-check", 20, 1)
    left = REVISED.end_round({"combatants": [c]},
                             SuppliedDice({"wisdom-check": [5], "attack": [3]}))
    assert left["unused_dice"] == {"attack": [3]}


# -- combat-strength --------------------------------------------------------------------
def test_combat_strength_timed_conditions_lose_a_round_each_end() -> None:
    c = {"id": "orm", "attack_strength": 40, "defense_strength": 40,
         "conditions": ["dazed", "confused", "asleep"],
         "condition_rounds": {"dazed": 1, "confused": 3}}
    result = STRENGTH.end_round({"combatants": [c]}, SuppliedDice({}))
    orm = after(result, "orm")
    assert orm["conditions"] == ["confused", "asleep"]  # asleep has no timer
    assert orm["condition_rounds"] == {"confused": 2}
    assert result["summary"] == "End of the round: orm is no longer dazed."
    assert orm["attack_strength"] == 40 and orm["defense_strength"] == 40


def test_combat_strength_daze_of_an_exchange_ends_after_its_rounds() -> None:
    """A daze a single exchange gave ends after as many round ends as it lasts."""
    c = {"id": "orm", "attack_strength": 40, "defense_strength": 40,
         "conditions": ["dazed"], "condition_rounds": {"dazed": 2}}
    once = after(STRENGTH.end_round({"combatants": [c]}, RandomDice(1)), "orm")
    assert once["conditions"] == ["dazed"]
    twice = after(STRENGTH.end_round({"combatants": [once]}, RandomDice(1)), "orm")
    assert twice["conditions"] == [] and twice["condition_rounds"] == {}


# -- power-pool -------------------------------------------------------------------------
def test_power_pool_daze_and_stun_count_round_ends() -> None:
    """Seed 001: an attacker is dazed for the round (1 round end), a loser stunned for
    two; possession has no timer and stays."""
    c = {"id": "ix", "hit_dice": 4, "die": 8, "conditions": ["dazed", "stunned"],
         "condition_rounds": {"dazed": 1, "stunned": 2}}
    first = POOL.end_round({"combatants": [c]}, SuppliedDice({}))
    ix = after(first, "ix")
    assert ix["conditions"] == ["stunned"] and ix["condition_rounds"] == {"stunned": 1}
    assert first["events"] == [{"type": "condition-ended", "combatant": "ix",
                                "condition": "dazed"}]
    second = after(POOL.end_round({"combatants": [ix]}, SuppliedDice({})), "ix")
    assert second["conditions"] == [] and second["condition_rounds"] == {}


def test_an_end_of_round_that_changes_nothing_says_so() -> None:
    c = {"id": "ix", "hit_dice": 4, "die": 8}
    result = POOL.end_round({"combatants": [c]}, SuppliedDice({}))
    assert result["summary"] == "End of the round: nothing changes."
    assert result["combatants"][0]["before"] == result["combatants"][0]["after"]
    assert result["events"] == [] and result["rolls"] == []


def controller(**more: Any) -> JSON:
    """Ix, holding Zed by an action and the wave of Ay and Bo by a die each (RULES.md
    §3.4: only the action is one for all)."""
    c: JSON = {"id": "ix", "name": "Ix", "hit_dice": 5, "die": 8, "pool": 2, "psionic": True,
               "controlling": [{"id": "zed", "kept_by": "action"},
                               {"id": "ay", "kept_by": "die", "wave": "w"},
                               {"id": "bo", "kept_by": "die", "wave": "w"}],
               "dedicated": [{"purpose": "control", "target": "w"}] * 2}
    c.update(more)
    return c


def puppet(cid: str, **more: Any) -> JSON:
    c: JSON = {"id": cid, "name": cid.title(), "hit_dice": 2, "die": 6, "pool": 0,
               "psionic": True, "controlled_by": "ix"}
    c.update(more)
    return c


def test_power_pool_offers_a_controller_each_way_to_keep_or_end_its_control() -> None:
    """Seed 001: control is kept by a die dedicated from the pool (until released) or by
    an action each round, the controller perceiving the creature; a Psionic Wave's
    creatures are one link. Only the links kept by an action can be lost from sight, and
    a die is offered only from a pool that has one."""
    offers = POOL.round_end_choices({"combatants": [controller(), puppet("zed")]})
    ix, zed = offers["combatants"]
    zed_link = {"targets": ["zed"], "kept_by": "action", "wave": None}
    wave = {"targets": ["ay", "bo"], "kept_by": "die", "wave": "w"}
    assert ix["choices"] == {"release": [zed_link, wave],
                             "keep": [{**zed_link, "by": "die"}, {**wave, "by": "action"}],
                             "cannot_perceive": [zed_link]}
    assert zed["choices"] == {}
    assert offers["summary"] == (
        "Ix controls one creature by an action each round; it may release it, keep it by a "
        "die instead or lose sight of it. Ix controls 2 creatures of one psionic wave by a "
        "die each from its pool; it may release them or keep them by an action instead (the "
        "dice return).")
    empty = POOL.round_end_choices({"combatants": [controller(pool=0)]})
    assert empty["combatants"][0]["choices"]["keep"] == [{**wave, "by": "action"}]
    assert empty["summary"].startswith("Ix controls one creature by an action each round; "
                                       "it may release it or lose sight of it.")
    # the pool's last die is one to keep Zed by
    last = POOL.round_end_choices({"combatants": [controller(pool=1)]})
    assert last["combatants"][0]["choices"]["keep"] == [{**zed_link, "by": "die"},
                                                        {**wave, "by": "action"}]
    assert last["summary"].startswith("Ix controls one creature by an action each round; it "
                                      "may release it, keep it by a die instead or lose sight "
                                      "of it.")


def test_power_pool_release_frees_the_puppets_given_and_returns_the_die() -> None:
    """Naming one creature of a wave releases the wave (seed: "all defenders must be
    released simultaneously"); a puppet given is set free and its possession ends, one
    not given is named; the round's own countdown still follows. Zed, still held, is
    not among the changed others."""
    ix = controller(conditions=["dazed"], condition_rounds={"dazed": 1})
    result = POOL.end_round({"combatants": [ix], "puppets": [puppet("ay", conditions=[
        "possessed"]), puppet("zed")], "choices": {"ix": {"release": ["bo"]}}},
        SuppliedDice({}))
    freed = after(result, "ix")
    assert freed["controlling"] == [{"id": "zed", "kept_by": "action", "wave": None}]
    assert (freed["pool"], freed["dedicated"], freed["conditions"]) == (4, [], [])
    assert result["others"] == [{"id": "ay", "before": POOL.combatant(
        puppet("ay", conditions=["possessed"])), "after": POOL.combatant(puppet(
            "ay", controlled_by=None))}]
    assert result["summary"] == (
        "End of the round: Ix releases Ay. Ix releases \"bo\". \"bo\" was not given: its "
        "sheet still shows it under Ix's control until it is changed. Ix is no longer dazed.")
    assert [e["type"] for e in result["events"]] == ["control-ended", "control-ended",
                                                     "condition-ended"]


@pytest.mark.parametrize(("state", "said"), [
    ({"conditions": ["unconscious"]}, "unconscious"),
    ({"conditions": ["stunned"], "condition_rounds": {"stunned": 2}}, "stunned"),
    ({"hp": 0}, "at 0 hit points or fewer"),
])
def test_power_pool_a_controller_that_cannot_act_keeps_only_control_kept_by_a_die(
        state: JSON, said: str) -> None:
    """Seed 001: control "maintained ... by the controller using an action each round";
    one that cannot act spends no action and the link ends at the round's end, its
    puppet given set free. A die dedicated keeps the wave "until the controller chooses
    to relinquish it". The daze of its own attack is no bar (test above)."""
    result = POOL.end_round({"combatants": [controller(**state)], "puppets": [
        puppet("zed")]}, SuppliedDice({}))
    assert [e["id"] for e in after(result, "ix")["controlling"]] == ["ay", "bo"]
    assert result["others"][0]["after"]["controlled_by"] is None
    assert result["events"][0] == {"type": "control-ended", "combatant": "zed",
                                   "controller": "ix", "reason": "controller-cannot-act"}
    assert result["summary"].startswith(
        f"End of the round: Ix is {said} and cannot spend the action that keeps its "
        "control of Zed: the control ends.")


def test_power_pool_a_controller_that_cannot_act_loses_its_links_in_one_sentence() -> None:
    """Every link kept by an action ends together at the round's end, and the summary
    names their creatures in one sentence."""
    ix = controller(conditions=["unconscious"], pool=5, dedicated=[],
                    controlling=[{"id": "zed", "kept_by": "action"},
                                 {"id": "kay", "kept_by": "action"}])
    result = POOL.end_round({"combatants": [ix], "puppets": [puppet("zed"), puppet("kay")]},
                            SuppliedDice({}))
    assert result["summary"] == (
        "End of the round: Ix is unconscious and cannot spend the action that keeps its "
        "control of Zed and Kay: the control ends.")


def test_power_pool_a_controller_that_cannot_act_is_offered_no_switch_and_refused_one(
        ) -> None:
    """Changing how a link is kept is the controller's doing: unconscious, Ix is offered
    release (and losing sight) only, and a switch sent all the same is refused
    (controller-cannot-act, at its choice) with nothing changed."""
    out = controller(conditions=["unconscious"])
    offers = POOL.round_end_choices({"combatants": [out]})
    assert offers["combatants"][0]["choices"]["keep"] == []
    assert offers["combatants"][0]["choices"]["ends"] == [
        {"targets": ["zed"], "kept_by": "action", "wave": None}]
    assert "ends" not in POOL.round_end_choices({"combatants": [controller()]})[
        "combatants"][0]["choices"]
    assert offers["summary"] == (
        "Ix controls one creature by an action each round but is unconscious and cannot "
        "spend it: the control ends as this round ends. Ix controls 2 creatures of one "
        "psionic wave by a die each from its pool; it may release them (it is unconscious "
        "and cannot act: it keeps them by a die each).")
    request = {"combatants": [out], "choices": {"ix": {"keep": [
        {"target": "ay", "by": "action"}]}}}
    kept = copy.deepcopy(request)
    with pytest.raises(RulesViolation) as refused:
        POOL.end_round(request, SuppliedDice({}))
    assert refused.value.rule == "controller-cannot-act"
    assert refused.value.detail.endswith("(/choices/ix)")
    assert request == kept


def test_power_pool_a_creature_without_psionics_set_free_defends_with_its_hit_dice(
        ) -> None:
    """H-PP-NO-POOL: a mind without a power pool defends with its hit dice; under control
    its pool is 0 (seed 001), but it had none to expend: set free, it rolls them again,
    alone or drawn in as an ally (H-PP-GROUP: one die)."""
    def mind(cid: str, hit_dice: int) -> JSON:
        return {"id": cid, "name": cid.title(), "hit_dice": hit_dice, "die": 6,
                "attacks": ["mental-stab"]}

    won = POOL.resolve({"attacker": mind("a", 3), "defender": {
        "id": "g", "name": "G", "hit_dice": 3, "die": 8, "psionic": False},
        "attack": {"mode": "mental-stab"}}, SuppliedDice({"attack": [10] * 3,
                                                          "defense": [1] * 3})).to_json()
    assert won["defender"]["after"]["pool"] == 0
    ended = POOL.end_round({"combatants": [won["attacker"]["after"],
                                           won["defender"]["after"]],
                            "choices": {"a": {"release": ["g"]}}}, SuppliedDice({}))
    g = after(ended, "g")
    assert (g["controlled_by"], g["pool"]) == (None, 3)
    odds = POOL.odds({"attacker": mind("d", 1), "defender": g,
                      "attack": {"mode": "mental-stab"}})
    assert odds["outcomes"]["defender"] > 0.5


def test_power_pool_lost_sight_ends_only_a_link_kept_by_an_action() -> None:
    result = POOL.end_round({"combatants": [controller(), puppet("zed")],
                             "choices": {"ix": {"cannot_perceive": ["zed", "ay"]}}},
                            SuppliedDice({}))
    assert after(result, "zed")["controlled_by"] is None
    assert [e["id"] for e in after(result, "ix")["controlling"]] == ["ay", "bo"]
    assert result["events"] == [{"type": "control-ended", "combatant": "zed",
                                 "controller": "ix", "reason": "not-perceived"}]
    assert result["summary"] == (
        "End of the round: Ix loses sight of Zed: the control ends. Ix cannot perceive "
        "\"ay\", but keeps control of it by a die, which needs no sight.")


def test_power_pool_keep_switches_between_a_die_and_an_action() -> None:
    result = POOL.end_round({"combatants": [controller()], "choices": {"ix": {"keep": [
        {"target": "zed", "by": "die"}, {"target": "ay", "by": "action"}]}}}, SuppliedDice({}))
    ix = after(result, "ix")
    assert [(e["id"], e["kept_by"]) for e in ix["controlling"]] == [
        ("zed", "die"), ("ay", "action"), ("bo", "action")]
    assert ix["dedicated"] == [{"purpose": "control", "target": "zed"}] and ix["pool"] == 3
    assert [(e["type"], e["targets"]) for e in result["events"]] == [
        ("control-kept", ["zed"]), ("control-kept", ["ay", "bo"])]
    assert result["summary"] == (
        "End of the round: Ix keeps control of \"zed\" by a die from its pool from now on "
        "(1 left). Ix keeps control of \"ay\" and \"bo\" by an action each round from now "
        "on; the dice return (3 in the pool).")
    same = POOL.end_round({"combatants": [controller()], "choices": {"ix": {"keep": [
        {"target": "zed", "by": "action"}]}}}, SuppliedDice({}))
    assert same["events"] == [] and same["summary"] == "End of the round: nothing changes."


def test_power_pool_upkeep_refusals_name_the_rule_or_the_field() -> None:
    def refused(choice: JSON, puppets: list[JSON] | None = None,
                combatant: JSON | None = None) -> Exception:
        request: JSON = {"combatants": [combatant or controller()], "choices": {"ix": choice}}
        if puppets is not None:
            request["puppets"] = puppets
        with pytest.raises((InvalidInput, RulesViolation)) as bad:
            POOL.end_round(request, SuppliedDice({}))
        return bad.value

    def path(error: Exception) -> str:
        assert isinstance(error, InvalidInput)
        return error.problems[0].path

    def rule(error: Exception) -> str:
        assert isinstance(error, RulesViolation)
        return error.rule

    assert rule(refused({"release": ["kara"]})) == "not-controlling"
    no_die = refused({"keep": [{"target": "zed", "by": "die"}]}, combatant=controller(pool=0))
    assert rule(no_die) == "no-die-to-dedicate" and "(/choices/ix)" in str(no_die)
    assert path(refused({"release": ["ay", "bo"]})) == "/choices/ix/release/1"
    # a link named a third time is told where it was named first
    thrice = refused({"release": ["ay", "bo"], "keep": [{"target": "ay", "by": "action"}]})
    assert isinstance(thrice, InvalidInput)
    assert [p.path for p in thrice.problems] == ["/choices/ix/release/1",
                                                 "/choices/ix/keep/0/target"]
    assert all("held by the control /choices/ix/release/0 already" in p.message
               for p in thrice.problems)
    assert path(refused({"release": ["zed"], "keep": [{"target": "zed", "by": "die"}]})) \
        == "/choices/ix/keep/0/target"
    assert path(refused({"release": ["zed"]}, [puppet("ix", controlled_by=None)])) \
        == "/puppets/0/id"
    assert path(refused({"release": ["zed"]}, [puppet("zed"), puppet("zed")])) \
        == "/puppets/1/id"
    assert path(refused({"release": ["zed"]}, [{"id": "zed", "hit_dice": 0}])) \
        .startswith("/puppets/0")
    assert path(refused({"pass": True})) == "/choices/ix"
    request = {"combatants": [controller()], "puppets": [puppet("zed")],
               "choices": {"ix": {"release": ["zed"]}}}
    POOL.end_round(request, SuppliedDice({}))
    assert request["puppets"] == [puppet("zed")] and request["combatants"] == [controller()]


def test_power_pool_a_creature_named_twice_in_one_upkeep_list_is_refused_at_the_list() -> None:
    """round_end_choice_schema: each creature once in release (or cannot_perceive): a
    name repeated is refused at the list, before the rules look at the links."""
    with pytest.raises(InvalidInput) as err:
        POOL.end_round({"combatants": [controller()],
                        "choices": {"ix": {"release": ["zed", "zed"]}}}, SuppliedDice({}))
    assert [p.path for p in err.value.problems] == ["/choices/ix/release"]


def test_power_pool_sight_lost_of_a_creature_is_checked_like_a_release() -> None:
    """round_end_choice_schema: cannot_perceive names creatures the controller holds,
    each link once, as release does; a keep says how (by)."""
    def refused(choice: JSON) -> Exception:
        with pytest.raises((InvalidInput, RulesViolation)) as bad:
            POOL.end_round({"combatants": [controller()], "choices": {"ix": choice}},
                           SuppliedDice({}))
        return bad.value

    stranger = refused({"cannot_perceive": ["kara"]})
    assert isinstance(stranger, RulesViolation) and stranger.rule == "not-controlling"
    assert "(/choices/ix/cannot_perceive/0)" in stranger.detail
    twice = refused({"cannot_perceive": ["ay", "bo"]})
    assert isinstance(twice, InvalidInput)
    assert [p.path for p in twice.problems] == ["/choices/ix/cannot_perceive/1"]
    no_how = refused({"keep": [{"target": "zed"}]})
    assert isinstance(no_how, InvalidInput)
    assert [p.path for p in no_how.problems] == ["/choices/ix/keep/0"]


@pytest.mark.parametrize("method", ["end_round", "rest"])
def test_power_pool_takes_at_most_as_many_puppets_as_combatants(method: str) -> None:
    """API.md limits: 64 combatants per encounter; the puppets going along are as many."""
    many = [puppet(f"p{i}") for i in range(MAX_ROUND_COMBATANTS + 1)]
    with pytest.raises(InvalidInput) as bad:
        getattr(POOL, method)({"combatants": [controller()], "puppets": many},
                              SuppliedDice({}))
    assert [p.path for p in bad.value.problems] == ["/puppets"]


# -- the request ------------------------------------------------------------------------
def test_every_combatant_is_answered_in_the_order_given() -> None:
    cs = [psionicist("b"), psionicist("a"), psionicist("c")]
    result = REVISED.end_round({"combatants": cs}, SuppliedDice({}))
    assert [c["id"] for c in result["combatants"]] == ["b", "a", "c"]
    assert result["system"] == "revised-2e"


@pytest.mark.parametrize(("request_", "path"), [
    ({}, ""),
    ({"combatants": []}, "/combatants"),
    ({"combatants": [psionicist("a")] * (MAX_ROUND_COMBATANTS + 1)}, "/combatants"),
    ({"combatants": [psionicist("a"), {**psionicist("b"), "id": "", "name": "A"}]},
     "/combatants/1/id"),
    ({"combatants": [psionicist("a")], "choices": {"b": {"close": True}}}, "/choices/b"),
    ({"combatants": [psionicist("a")], "choices": {"a": {"shut": True}}}, "/choices/a"),
    ({"combatants": [psionicist("a")], "attack": {}}, ""),
    ({"combatants": [{"id": "a", "level": "five"}]}, "/combatants/0/level"),
    ({"combatants": [psionicist("a")], "options": {"H-NOPE": True}}, "/options/H-NOPE"),
])
def test_bad_requests_name_the_field(request_: JSON, path: str) -> None:
    with pytest.raises(InvalidInput) as bad:
        REVISED.end_round(request_, SuppliedDice({}))
    assert path in [p.path for p in bad.value.problems]


@pytest.mark.parametrize(("system", "good", "bad", "field"), [
    (STRENGTH, {"id": "a", "attack_strength": 40, "defense_strength": 40},
     {"id": "b", "attack_strength": "many", "defense_strength": 40}, "attack_strength"),
    (POOL, {"id": "a", "hit_dice": 2, "die": 6}, {"id": "b", "hit_dice": "many", "die": 6},
     "hit_dice"),
])
def test_a_bad_combatant_is_named_at_its_place_in_the_request(
        system: Any, good: JSON, bad: JSON, field: str) -> None:
    """API.md −32602: each error has the ``path`` of the field in the params
    (``/attack/multiplier``): the second combatant's field is under ``/combatants/1``,
    in every system."""
    with pytest.raises(InvalidInput) as err:
        system.end_round({"combatants": [good, bad]}, SuppliedDice({}))
    assert [p.path for p in err.value.problems] == [f"/combatants/1/{field}"]


def test_end_round_takes_at_most_64_combatants() -> None:
    """API.md Limits: "64 combatants per encounter", and one end of a round takes as
    many; the 65th is invalid params naming the limit."""
    many = [psionicist(f"c{i}") for i in range(64)]
    assert len(REVISED.end_round({"combatants": many}, SuppliedDice({}))["combatants"]) == 64
    with pytest.raises(InvalidInput) as err:
        REVISED.end_round({"combatants": [*many, psionicist("c64")]}, SuppliedDice({}))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/combatants", "has 65 items; at most 64 are allowed (maxItems)")]
    # as many choices, each by a combatant's id: 65 are refused as one problem
    with pytest.raises(InvalidInput) as err:
        REVISED.end_round({"combatants": many, "choices": {f"c{i}": {} for i in range(65)}},
                          SuppliedDice({}))
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/choices", "has 65 members; at most 64 are allowed (maxProperties)")]


def test_a_dice_source_used_before_gives_only_this_round_s_end_its_rolls() -> None:
    """``rolls`` are the dice this end of the round rolled, as a resolution's are (an
    encounter's segments share one source): not those an earlier exchange rolled."""
    dice = RandomDice(5)
    REVISED.resolve({"attacker": psionicist("kara"), "defender": psionicist("vel"),
                     "attack": {"mode": "mind-thrust"}}, dice)
    assert dice.rolls
    result = REVISED.end_round({"combatants": [psionicist("kara")]}, dice)
    assert result["rolls"] == [] and result["unused_dice"] == {}


def test_a_system_without_choices_refuses_them() -> None:
    with pytest.raises(InvalidInput) as bad:
        STRENGTH.end_round({"combatants": [{"id": "orm", "attack_strength": 40,
                                            "defense_strength": 40}],
                            "choices": {"orm": {}}},
                           SuppliedDice({}))
    assert "choices" in bad.value.problems[0].message


def test_a_system_without_a_round_end_is_refused_naming_the_system() -> None:
    duel = SampleDuel()
    assert not duel.ends_rounds and REVISED.ends_rounds
    with pytest.raises(InvalidInput) as bad:
        duel.end_round({"combatants": [{"id": "a"}]}, SuppliedDice({}))
    assert bad.value.problems[0].path == "/system"


def test_the_request_is_not_changed() -> None:
    c = psionicist("kara", conditions=["stunned"], condition_rounds={"stunned": 0})
    request = {"combatants": [c]}
    REVISED.end_round(request, SuppliedDice({}))
    assert c["conditions"] == ["stunned"] and c["condition_rounds"] == {"stunned": 0}


# -- rest -------------------------------------------------------------------------------
def test_revised_2e_rest_gives_ceil_a_eighth_of_the_maximum_an_hour() -> None:
    """RULES.md §1.8: ceil(psp_max / 8) an hour (50 → 7), never above the maximum."""
    c = psionicist("kara", psp=10)
    three = REVISED.rest({"combatants": [c], "hours": 3}, SuppliedDice({}))
    assert after(three, "kara")["psp"] == 31
    assert three["events"] == [{"type": "psp-regained", "combatant": "kara", "amount": 21,
                                "hours": 3}]
    assert three["summary"] == "After the rest: Kara regains 21 PSPs (31 of 50)."
    eight = REVISED.rest({"combatants": [c], "hours": 8}, SuppliedDice({}))
    assert after(eight, "kara")["psp"] == 50
    full = REVISED.rest({"combatants": [psionicist("kara")], "hours": 1}, SuppliedDice({}))
    assert full["summary"] == "After the rest: nothing changes."


def test_revised_2e_rest_runs_out_conditions_timed_in_rounds() -> None:
    """An hour is 60 rounds of a minute: a condition of the rest of its round and 100
    more has 41 left after an hour (40 more after the current one). One without rounds
    counted lasts its round, as at a round's end (COMBATANTS.md), so a rest ends it."""
    c = psionicist("kara", conditions=["stunned", "confused", "dazed"],
                   condition_rounds={"stunned": 0, "confused": 100})
    rested = REVISED.rest({"combatants": [c], "hours": 1}, SuppliedDice({}))
    kara = after(rested, "kara")
    assert kara["conditions"] == ["confused"]
    assert kara["condition_rounds"] == {"confused": 40}
    assert [e["condition"] for e in rested["events"]
            if e["type"] == "condition-ended"] == ["stunned", "dazed"]
    assert after(REVISED.end_round({"combatants": [c]}, SuppliedDice({})),
                 "kara")["conditions"] == ["confused"]
    two = after(REVISED.rest({"combatants": [kara], "hours": 1}, SuppliedDice({})), "kara")
    assert two["conditions"] == []


def test_revised_2e_rest_of_an_hour_ends_a_condition_of_59_more_rounds_not_one_of_60() -> None:
    """An hour is 60 rounds: a condition of the rest of its round and 59 more ends as
    the hour's last round ends; one of 60 more is left with the rest of the next round."""
    c = psionicist("kara", conditions=["dazed", "confused"],
                   condition_rounds={"dazed": 59, "confused": 60})
    rested = REVISED.rest({"combatants": [c], "hours": 1}, SuppliedDice({}))
    kara = after(rested, "kara")
    assert kara["conditions"] == ["confused"]
    assert kara["condition_rounds"] == {"confused": 0}
    assert [e["condition"] for e in rested["events"]
            if e["type"] == "condition-ended"] == ["dazed"]


def test_revised_2e_rest_counts_the_rounds_of_an_open_mind_s_checks_once() -> None:
    """§1.5 in a rest: the round whose Wisdom check closes the mind is one of the hour's
    60, so a condition of 70 more rounds has 10 left after the hour, as without the
    check (the open mind's rounds are not counted again after it closes)."""
    c = psionicist("kara", psp=0, mind=open_mind(opened_by="zero-psp", rounds_open=3),
                   conditions=["confused"], condition_rounds={"confused": 70})
    rested = REVISED.rest({"combatants": [c], "hours": 1},
                          SuppliedDice({"wisdom-check": [1]}))
    kara = after(rested, "kara")
    assert kara["mind"]["state"] == "closed"
    assert kara["conditions"] == ["confused"] and kara["condition_rounds"] == {"confused": 10}


def test_revised_2e_rest_takes_an_open_mind_through_its_rounds_until_it_closes() -> None:
    """§1.5 round by round: opened by reaching 0 PSPs, locked 1d4+1 rounds (rolled 1: 2
    rounds), then a Wisdom check at −3 each round (wis 13: 10 or less) until one closes
    it; the rounds it took count for the conditions too."""
    c = psionicist("kara", psp=0, mind=open_mind(opened_by="zero-psp"),
                   conditions=["confused"], condition_rounds={"confused": 10})
    result = REVISED.rest({"combatants": [c], "hours": 1},
                          SuppliedDice({"open-duration": [1], "wisdom-check": [15, 12, 4]}))
    kara = after(result, "kara")
    assert kara["mind"]["state"] == "closed" and kara["psp"] == 7
    assert kara["conditions"] == []
    assert [r["purpose"] for r in result["rolls"]] == ["open-duration"] + ["wisdom-check"] * 3
    assert result["summary"] == ("After the rest: Kara regains 7 PSPs (7 of 50). Kara's mind "
                                 "closes during the rest (Wisdom check 10, rolled 4, after 3 "
                                 "tries). Kara is no longer confused.")


def test_revised_2e_rest_rolls_at_most_100_rounds_of_mind_checks_and_says_so() -> None:
    """RULES.md §4: the cap is reached and said. Wis 3 needs 0 or less on a d20: the
    mind never closes by its checks."""
    c = psionicist("kara", wis=3, mac=10, mind=open_mind(opened_by="zero-psp", rounds_open=9))
    long = REVISED.rest({"combatants": [c], "hours": 8}, RandomDice(3))
    assert len(long["rolls"]) == 100
    assert long["events"][-1] == {"type": "mind-checks-capped", "combatant": "kara",
                                  "rounds": 100}
    assert long["summary"].endswith("Kara's mind is still open after the rest: 100 rounds of "
                                    "checks are the most a rest rolls; end rounds to go on.")
    short = REVISED.rest({"combatants": [c], "hours": 1}, RandomDice(3))
    assert len(short["rolls"]) == 60
    assert "mind-checks-capped" not in [e["type"] for e in short["events"]]
    assert short["summary"].endswith("Kara's mind is still open after the rest.")


def test_power_pool_long_rest_by_the_house_rule() -> None:
    """H-PP-RECOVERY: all dice return (maintained powers end), or the dice of the ended
    powers and half the hit dice rounded up; a die that keeps control stays dedicated;
    timed conditions end."""
    c = {"id": "ix", "name": "Ix", "hit_dice": 5, "die": 8, "pool": 0,
         "dedicated": [{"purpose": "power", "target": None}],
         "conditions": ["stunned"], "condition_rounds": {"stunned": 2}}
    rested = POOL.rest({"combatants": [c]}, SuppliedDice({}))
    ix = after(rested, "ix")
    assert (ix["pool"], ix["dedicated"], ix["conditions"]) == (5, [], [])
    assert rested["summary"] == ("After the rest: Ix's maintained powers end. Ix regains 5 "
                                 "dice (5 in the pool). Ix is no longer stunned.")
    half = after(POOL.rest({"combatants": [c], "options": {"H-PP-RECOVERY": "half"}},
                              SuppliedDice({})), "ix")
    assert half["pool"] == 1 + 3


def test_power_pool_long_rest_ends_timed_conditions_only() -> None:
    """A long rest outlasts every timer; a condition without one has no end a rest could
    reach (Subconscious Subversion's fear "persists even after the attacker ceases
    psionic control")."""
    c = {"id": "ix", "name": "Ix", "hit_dice": 5, "die": 8,
         "conditions": ["frightened", "stunned"], "condition_rounds": {"stunned": 2}}
    rested = POOL.rest({"combatants": [c]}, SuppliedDice({}))
    assert after(rested, "ix")["conditions"] == ["frightened"]
    assert rested["summary"] == "After the rest: Ix is no longer stunned."


@pytest.mark.parametrize("puppet_rests", [False, True])
def test_power_pool_long_rest_ends_control_kept_by_an_action_only(puppet_rests: bool) -> None:
    """Seed 001: "Powers can't be maintained when a creature rests", and a resting
    controller spends no action each round: its link kept by an action ends as the rest
    begins, the puppet set free wherever it is given (and, resting too, it rests free:
    its pool comes back). The wave kept by a die each holds, its dice still dedicated."""
    zed = puppet("zed", conditions=["possessed"])
    request: JSON = ({"combatants": [controller(), zed]} if puppet_rests
                     else {"combatants": [controller()], "puppets": [zed]})
    result = POOL.rest(request, SuppliedDice({}))
    ix = after(result, "ix")
    assert [e["id"] for e in ix["controlling"]] == ["ay", "bo"]
    assert ix["dedicated"] == [{"purpose": "control", "target": "w"}] * 2
    assert ix["pool"] == 3
    freed = after(result, "zed") if puppet_rests else result["others"][0]["after"]
    assert (freed["controlled_by"], freed["conditions"]) == (None, [])
    assert freed["pool"] == (2 if puppet_rests else 0)
    assert "others" not in result if puppet_rests else len(result["others"]) == 1
    assert result["events"][0] == {"type": "control-ended", "combatant": "zed",
                                   "controller": "ix", "reason": "rest"}
    assert result["summary"].startswith(
        "After the rest: Ix rests and spends no action to keep its control of Zed: the "
        "control ends. Ix regains 1 die (3 in the pool).")


def test_power_pool_long_rest_names_a_puppet_not_given_and_refuses_one_given_twice() -> None:
    result = POOL.rest({"combatants": [controller()]}, SuppliedDice({}))
    assert "others" not in result
    assert after(result, "ix")["controlling"][0]["id"] == "ay"
    assert (
        "\"zed\" was not given: its sheet still shows it under Ix's control until it is "
        "changed.") in result["summary"]
    with pytest.raises(InvalidInput) as twice:
        POOL.rest({"combatants": [controller(), puppet("zed")], "puppets": [puppet("zed")]},
                  SuppliedDice({}))
    assert twice.value.problems[0].path == "/puppets/0/id"
    assert "a creature that rests here is not among the puppets" in \
        twice.value.problems[0].message


def test_rest_is_refused_where_the_source_has_no_rule_for_it() -> None:
    """combat-strength's seed says nothing of how strength comes back."""
    assert not STRENGTH.rests and REVISED.rests and POOL.rests
    with pytest.raises(InvalidInput) as bad:
        STRENGTH.rest({"combatants": [{"id": "orm", "attack_strength": 5,
                                       "defense_strength": 5}]}, SuppliedDice({}))
    assert bad.value.problems[0].path == "/system"
    with pytest.raises(InvalidInput) as bad:
        REVISED.rest({"combatants": [psionicist("kara")]}, SuppliedDice({}))
    assert "hours" in bad.value.problems[0].message


# -- what the summary says ----------------------------------------------------------------
def test_the_round_a_mind_may_pay_to_close_is_announced_with_its_cost() -> None:
    """§1.5: a mind a critical hit opened may pay to close "in the following round"
    (twice the mental barrier's 5 PSPs). One that did not pay at the end of the round it
    opened in still may at the end of the next: the event and the summary say so, so a
    VTT's card tells the player when."""
    result = REVISED.end_round({"combatants": [psionicist("kara", mind=open_mind())]},
                               SuppliedDice({}))
    assert result["events"] == [{"type": "mind-may-close", "combatant": "kara", "cost": 10}]
    assert result["summary"] == ("End of the round: Kara may pay 10 PSPs to close its mind "
                                 "at the end of the next round.")


def test_a_mind_with_no_defense_to_price_its_closing_is_told_it_cannot_pay() -> None:
    """§1.5 with H-2E-NO-LAST-DEF: twice the cheapest known defense; a mind that knows
    none cannot pay, and the summary says so rather than that timers count down."""
    bare = psionicist("kara", defenses=[], mind=open_mind(last_defense=None))
    result = REVISED.end_round({"combatants": [bare]}, SuppliedDice({}))
    assert result["events"] == [{"type": "mind-may-close", "combatant": "kara", "cost": None}]
    assert result["summary"] == ("End of the round: Kara's mind cannot close by paying: it "
                                 "has no defense to price it.")


@pytest.mark.parametrize(("psp", "options", "said"), [
    (3, {}, "Closing Kara's mind at the end of the next round would cost 10 PSPs, more "
            "than the 3 PSPs it holds."),
    (10, {}, "Closing Kara's mind at the end of the next round would cost 10 PSPs, its last "
             "PSPs: a mind with none is open, so it cannot pay (H-2E-CLOSE-LAST-PSP)."),
    (10, {"H-2E-CLOSE-LAST-PSP": False}, "Kara may pay 10 PSPs to close its mind at the end "
                                         "of the next round."),
])
def test_the_round_a_mind_opens_says_when_it_cannot_pay_to_close(
        psp: int, options: JSON, said: str) -> None:
    """§1.5: "If it cannot or will not pay, it stays open 1d4+1 rounds": a mind that holds
    too few PSPs (or only its last ones, H-2E-CLOSE-LAST-PSP) is not told it may pay; the
    event still gives the price."""
    result = REVISED.end_round({"combatants": [psionicist("kara", psp=psp, mind=open_mind())],
                                "options": options}, SuppliedDice({}))
    assert result["events"] == [{"type": "mind-may-close", "combatant": "kara", "cost": 10}]
    assert result["summary"] == f"End of the round: {said}"


def test_a_mind_that_used_no_defense_is_told_why_it_cannot_pay_when_h_2e_no_last_def_is_off(
        ) -> None:
    bare = psionicist("kara", mind=open_mind(last_defense=None))
    result = REVISED.end_round({"combatants": [bare], "options": {"H-2E-NO-LAST-DEF": False}},
                               SuppliedDice({}))
    assert result["summary"] == ("End of the round: Kara's mind cannot close by paying: it "
                                 "has used no defense to price it (H-2E-NO-LAST-DEF is off).")


def test_a_round_that_only_counts_down_does_not_say_nothing_changes() -> None:
    c = {"id": "orm", "name": "Orm", "attack_strength": 40, "defense_strength": 40,
         "conditions": ["confused"], "condition_rounds": {"confused": 3}}
    result = STRENGTH.end_round({"combatants": [c]}, SuppliedDice({}))
    assert result["summary"] == "End of the round: what still lasts counts down."
    # one combatant counting down is enough, beside one that nothing changes
    calm = {"id": "ada", "name": "Ada", "attack_strength": 40, "defense_strength": 40}
    result = STRENGTH.end_round({"combatants": [calm, c]}, SuppliedDice({}))
    assert result["summary"] == "End of the round: what still lasts counts down."
    locked = psionicist("kara", mind=open_mind(opened_by="zero-psp", locked_rounds=3,
                                               rounds_open=2))
    assert REVISED.end_round({"combatants": [locked]}, SuppliedDice({}))["summary"] == \
        "End of the round: what still lasts counts down."


@pytest.mark.parametrize(("system", "condition", "said"), [
    (REVISED, "initiative-penalty", "Kara's initiative penalty ends."),
    (REVISED, "dazed", "Kara is no longer dazed."),
    (STRENGTH, "temporary-insanity", "Kara's temporary insanity ends."),
    (STRENGTH, "coma", "Kara is no longer in a coma."),
    (STRENGTH, "dazed", "Kara is no longer dazed."),
])
def test_a_condition_that_ends_is_said_in_words(system: Any, condition: str, said: str
                                                ) -> None:
    c: JSON = ({"id": "kara", "name": "Kara", "attack_strength": 9, "defense_strength": 9}
               if system is STRENGTH else psionicist("kara"))
    c.update(conditions=[condition], condition_rounds={condition: 0 if system is REVISED
                                                       else 1})
    assert system.end_round({"combatants": [c]}, SuppliedDice({}))["summary"] == \
        f"End of the round: {said}"


def test_revised_2e_rest_counts_lost_powers_down_by_the_hours_carried_over() -> None:
    """Powers lost to mind thrust for days (RULES.md 1.5: 1d6 days) come back as the
    rests' hours make up those days: a part of a day is kept in the power's `hours` for
    the next rest. Only whole days were counted, so nightly 8-hour rests never gave a
    power back."""
    c = psionicist("kara", lost_powers=[{"days": 1}, {"days": 3}])
    result = REVISED.rest({"combatants": [c], "hours": 47}, SuppliedDice({}))
    assert after(result, "kara")["lost_powers"] == [{"days": 2, "hours": 23}]
    assert {"type": "powers-return", "combatant": "kara", "count": 1, "days": 1} in \
        result["events"]
    assert "Kara regains a power lost to mind thrust." in result["summary"]
    short = REVISED.rest({"combatants": [c], "hours": 23}, SuppliedDice({}))
    assert after(short, "kara")["lost_powers"] == [{"days": 1, "hours": 23},
                                                    {"days": 3, "hours": 23}]
    nights = [psionicist("kara", lost_powers=[{"days": 1}])]
    for night in range(3):
        rested = REVISED.rest({"combatants": nights, "hours": 8}, SuppliedDice({}))
        nights = [after(rested, "kara")]
        assert nights[0]["lost_powers"] == ([] if night == 2 else
                                            [{"days": 1, "hours": 8 * (night + 1)}])
    assert any(e["type"] == "powers-return" for e in rested["events"])


def test_revised_2e_powers_returning_in_one_rest_are_told_with_the_longest_days() -> None:
    """Three lost powers (1, 3 and 2 days) all come back in one 72-hour rest: one
    powers-return event counts them and gives the most days any of them was lost for."""
    c = psionicist("kara", lost_powers=[{"days": 1}, {"days": 3}, {"days": 2}])
    result = REVISED.rest({"combatants": [c], "hours": 72}, SuppliedDice({}))
    assert after(result, "kara")["lost_powers"] == []
    assert [e for e in result["events"] if e["type"] == "powers-return"] == [
        {"type": "powers-return", "combatant": "kara", "count": 3, "days": 3}]


def test_revised_2e_a_critical_opened_mind_given_already_locked_open_is_not_offered_closing(
        ) -> None:
    """A mind a critical hit opened whose sheet comes already locked open (locked_rounds,
    carried over from an earlier fight) is past its opening round even with rounds_open
    0: the round's end offers it no closing and refuses one asked for."""
    c = psionicist("kara", mind=open_mind(rounds_open=0, locked_rounds=3))
    offers = REVISED.round_end_choices({"combatants": [c]})
    assert offers["combatants"][0]["choices"] == {}
    with pytest.raises(RulesViolation) as refused:
        REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": True}}},
                          SuppliedDice({}))
    assert refused.value.rule == "cannot-close"
    ended = REVISED.end_round({"combatants": [c]}, SuppliedDice({}))
    assert after(ended, "kara")["mind"]["state"] == "open"
    assert after(ended, "kara")["mind"]["locked_rounds"] == 2
    assert not any(e["type"] == "mind-may-close" for e in ended["events"])


def test_a_plugin_system_whose_combatant_takes_options_gets_them() -> None:
    """``combatant_under`` hands house rules to a system's own ``combatant(..., options)``
    when it takes them, so write-back round trips derive as its resolutions do."""
    class WithOptions(SampleDuel):
        def combatant(self, raw: Any, path: str = "", options: Any = None) -> JSON:
            return {**super().combatant(raw, path), "seen": dict(options or {})}

    duel = WithOptions()
    raw = {"id": "a", "name": "A"}
    assert duel.combatant_under(raw, "", {"H-X": 1})["seen"] == {"H-X": 1}
    assert "seen" not in SampleDuel().combatant_under(raw, "", {"H-X": 1})

    # given none (or none switched), its own default stands
    class OwnDefaults(SampleDuel):
        def combatant(self, raw: Any, path: str = "", options: Any = "its own") -> JSON:
            return {**super().combatant(raw, path), "seen": options}

    assert OwnDefaults().combatant_under(raw)["seen"] == "its own"
    assert OwnDefaults().combatant_under(raw, "", {})["seen"] == "its own"


class Tiring(SampleDuel):
    """A plugin's system whose combatants each lose a focus at a round's end (changing
    the copy ``round_end`` is given, as it may)."""

    def round_end(self, combatant: JSON, choice: Any, dice: Any, options: Any
                  ) -> tuple[JSON, list[Event], list[str]]:
        combatant["focus"] -= 1
        return combatant, [Event("tired", combatant["id"], {"focus": combatant["focus"]})], []


class Belled(Tiring):
    """... and whose round's end first rings a bell that wakes a judge."""

    def round_end_between(self, combatants: Any, choices: Any, request: Any, options: Any
                          ) -> tuple[list[Event], list[str], list[JSON]]:
        return ([Event("bell")], ["The bell rings."],
                [{"id": "judge", "before": {"awake": False}, "after": {"awake": True}}])


def test_a_plugin_system_s_round_end_is_answered_as_the_built_in_ones_are() -> None:
    """API.md ``exchange.end_round``: ``{system, combatants: [{id, before, after}], events,
    rolls, summary, unused_dice, others?}``: ``before`` as given, what happens between
    combatants first, ``others`` only when the round's end changed another creature."""
    a = {"id": "a", "name": "A"}
    tired = Tiring().end_round({"combatants": [a]}, SuppliedDice({}))
    assert tired == {
        "system": "sample-duel",
        "combatants": [{"id": "a", "before": {**a, "focus": 3}, "after": {**a, "focus": 2}}],
        "events": [{"type": "tired", "combatant": "a", "focus": 2}],
        "summary": "End of the round: what still lasts counts down.",
        "rolls": [], "unused_dice": {}}
    belled = Belled().end_round({"combatants": [a]}, SuppliedDice({}))
    assert belled["events"] == [{"type": "bell", "combatant": None},
                                {"type": "tired", "combatant": "a", "focus": 2}]
    assert belled["summary"] == "End of the round: The bell rings."
    assert belled["others"] == [{"id": "judge", "before": {"awake": False},
                                 "after": {"awake": True}}]
    assert belled["combatants"] == tired["combatants"]


def test_round_end_choices_name_a_combatant_without_a_name_by_its_id() -> None:
    """``round_end_choices`` answers ``{id, name, choices}`` for each combatant; a plugin's
    combatant that keeps no name is named by its id."""
    class Nameless(Tiring):
        def combatant(self, raw: Any, path: str = "") -> JSON:
            return {k: v for k, v in super().combatant(raw, path).items() if k != "name"}

    assert Nameless().round_end_choices({"combatants": [{"id": "a", "name": "A"}]}) == {
        "system": "sample-duel", "combatants": [{"id": "a", "name": "a", "choices": {}}],
        "summary": "Nobody has anything to choose at the end of this round."}


def test_combat_strength_every_timed_condition_that_runs_out_ends_together() -> None:
    """COMBATANTS.md condition_rounds: rounds left on timed conditions, one per
    exchange.end_round; two that run out at the same round's end both end, each said."""
    c = {"id": "orm", "name": "Orm", "attack_strength": 40, "defense_strength": 40,
         "conditions": ["dazed", "confused"], "condition_rounds": {"dazed": 1, "confused": 1}}
    result = STRENGTH.end_round({"combatants": [c]}, SuppliedDice({}))
    orm = after(result, "orm")
    assert (orm["conditions"], orm["condition_rounds"]) == ([], {})
    assert [e["condition"] for e in result["events"] if e["type"] == "condition-ended"] \
        == ["dazed", "confused"]


def test_revised_2e_a_close_choice_of_false_pays_nothing() -> None:
    """§1.5: "If it cannot or will not pay, it stays open 1d4+1 rounds": ``close: false``
    is a mind that will not pay, as if it had said nothing."""
    c = psionicist("kara", mind=open_mind(rounds_open=1, may_pay_to_close=True))
    result = REVISED.end_round({"combatants": [c], "choices": {"kara": {"close": False}}},
                               SuppliedDice({"open-duration": [2]}))
    kara = after(result, "kara")
    assert kara["psp"] == 50 and kara["mind"]["state"] == "open"
    assert "psp-spent" not in [e["type"] for e in result["events"]]
