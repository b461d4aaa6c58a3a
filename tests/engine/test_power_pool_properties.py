"""power-pool invariants under Hypothesis (RULES.md §3, STYLE.md "Habits").

Pools never leave 0..hit_dice and dedicated dice are always accounted for (seed 001:
"dedicated (removed from the pool temporarily)"); every die shows one of its faces;
the same dice give the same result; any input resolves or raises an EngineError.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.dice import RandomDice, SuppliedDice
from engine.errors import EngineError
from engine.power_pool import SYSTEM
from engine.power_pool.combatant import CONDITIONS

from .test_power_pool_helpers import ALL_ATTACKS, ALL_DEFENSES

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

NAMES = ["Ulcen", "Fenka", "Mara", "Tor", "Ixi", "Bel"]
json_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 200), st.text(max_size=5),
                        st.lists(st.integers(-2, 12), max_size=3))


@st.composite
def combatants(draw: st.DrawFn, name: str, legal: bool = False) -> dict[str, Any]:
    """A mostly valid combatant; sometimes one field is replaced by junk (never when
    ``legal``)."""
    hit_dice = draw(st.integers(0, 8))
    pool = draw(st.integers(0, hit_dice))
    dedicated = draw(st.integers(0, hit_dice - pool))
    c: dict[str, Any] = {
        "id": name.lower(), "name": name, "hit_dice": hit_dice,
        "die": draw(st.sampled_from([4, 6, 8, 10, 12, 20])), "pool": pool,
        "dedicated": [{"purpose": "power"}] * dedicated,
        "psionic": draw(st.booleans()),
        "mindless": False,
        "attacks": draw(st.lists(st.sampled_from(ALL_ATTACKS), unique=True)),
        "defenses": draw(st.lists(st.sampled_from(ALL_DEFENSES), unique=True)),
        "conditions": draw(st.lists(st.sampled_from(CONDITIONS), unique=True, max_size=2)),
        "spell_levels": draw(st.lists(st.integers(1, 9), max_size=3)),
        "hp": draw(st.none() | st.integers(0, 40)),
        "blank_mind_save": draw(st.none() | st.integers(2, 20)),
    }
    if legal:
        return c
    if draw(st.integers(0, 19)) == 0:
        c["mindless"] = True
    if draw(st.integers(0, 15)) == 0:
        c[draw(st.sampled_from([*c, "pool_max", "controlled_by"]))] = draw(json_values)
    if not draw(st.integers(0, 5)):
        del c["pool"]
    return c


@st.composite
def defenses(draw: st.DrawFn, defender: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A defense; for a ``defender`` given, one it may make (legal)."""
    legal = defender is not None
    pool = defender["pool"] if defender is not None else 9
    if draw(st.booleans()):
        return None
    d: dict[str, Any] = {}
    if draw(st.booleans()):
        d["mode"] = draw(st.sampled_from(
            [*ALL_DEFENSES, None] if legal else
            [*ALL_DEFENSES, *ALL_DEFENSES, None, "ego-whip"]))
    if draw(st.integers(0, 3)) == 0:
        d["pool_dice"] = draw(st.integers(0, pool if legal else 9))
    if defender is not None:
        if d.get("mode") is not None:
            defender["psionic"] = True
            defender["defenses"] = list(dict.fromkeys([*defender["defenses"], d["mode"]]))
        if defender["spell_levels"] and draw(st.integers(0, 3)) == 0:
            d["sacrifice"] = draw(st.sampled_from(defender["spell_levels"]))
        if d.get("mode") != "cognitive-labyrinth":  # only it defends a mind unaware
            defender["conditions"] = [c for c in defender["conditions"]
                                      if c not in SYSTEM.tables["awareness_conditions"]]
    elif draw(st.integers(0, 3)) == 0:
        d["sacrifice"] = draw(st.integers(1, 9) | st.lists(st.integers(1, 9), max_size=2))
    return d


@st.composite
def requests(draw: st.DrawFn, legal: bool = False) -> dict[str, Any]:
    """Requests with enough mistakes mixed in to reach every refusal (most are
    refused); ``legal``, requests made without those mistakes, so that most resolve
    and the invariants below get exercised."""
    attacker = draw(combatants(NAMES[0], legal))
    mode = draw(st.sampled_from(ALL_ATTACKS if legal else [*ALL_ATTACKS, "ego-whip"]))
    if (legal or draw(st.integers(0, 3))) and isinstance(attacker.get("attacks"), list):
        attacker["psionic"] = True
        attacker["attacks"] = sorted({*attacker["attacks"], mode} & set(ALL_ATTACKS))
    if legal:  # able to attack: up, and not asleep or unconscious
        attacker["conditions"] = [c for c in attacker["conditions"]
                                  if c not in ("asleep", "unconscious")]
        attacker["hp"] = attacker["hp"] and max(attacker["hp"], 1)
    attack: dict[str, Any] = {"mode": mode}
    if draw(st.booleans()):
        attack["pool_dice"] = draw(st.integers(0, attacker["pool"] if legal else 9))
    if draw(st.booleans()):
        attack["keep_by"] = draw(st.sampled_from(
            ["die", "action"] if not legal or attacker["pool"] else ["action"]))
    request: dict[str, Any] = {
        "attacker": attacker, "defender": draw(combatants(NAMES[1], legal)),
        "attack": attack, "defense": None,
    }
    request["defense"] = draw(defenses(request["defender"] if legal else None))
    defender, defense = request["defender"], request["defense"]
    if defense and defense.get("mode") in ALL_DEFENSES and draw(st.integers(0, 3)) and \
            isinstance(defender.get("defenses"), list):
        defender["psionic"] = True
        defender["defenses"] = list(dict.fromkeys([*defender["defenses"], defense["mode"]]))
    if mode == "psionic-wave" and draw(st.booleans()):
        request["defenders"] = [draw(combatants(NAMES[2], legal))]
    if draw(st.integers(0, 3)) == 0:
        request["allies"] = [draw(combatants(NAMES[3], legal))]
        if legal:  # a defender draws in only non-psionic allies (seed 001)
            request["allies"][0]["psionic"] = False
        if legal or draw(st.integers(0, 3)):
            request["defense"] = {"mode": "imagination-swarm"}
            request["defender"]["defenses"] = ["imagination-swarm"]
            if legal:  # a mind aware of the attack, psionic, draws its allies in
                request["defender"]["psionic"] = True
                request["defender"]["conditions"] = [
                    c for c in request["defender"]["conditions"]
                    if c not in SYSTEM.tables["awareness_conditions"]]
    if draw(st.integers(0, 3)) == 0:
        request["options"] = draw(st.fixed_dictionaries({}, optional={
            "H-PP-TIE": st.sampled_from(["defender", "attacker"]),
            "H-PP-GROUP": st.sampled_from(["one-die", "all-dice"]),
            "H-PP-NO-POOL": st.booleans(),
            "H-PP-BLANK-SAVE": st.integers(2, 20) if legal else st.integers(0, 25)}))
    return request


def _resolve(request: dict[str, Any], seed: int) -> dict[str, Any] | None:
    try:
        return SYSTEM.resolve(request, RandomDice(seed)).to_json()
    except EngineError:
        return None


def _resolved(request: dict[str, Any], seed: int) -> dict[str, Any]:
    """The resolution of ``request``; one the rules still refuse (a few legal requests
    are) is no example at all (``assume``), so each invariant is checked on as many
    resolutions as SETTINGS asks for, not on the few that happen to resolve."""
    out = _resolve(request, seed)
    assume(out is not None)
    assert out is not None
    return out


@SETTINGS
@given(requests(), st.integers(0, 2**32))
def test_any_input_resolves_or_raises_an_engine_error(request: dict[str, Any],
                                                      seed: int) -> None:
    """Bad input is a clear EngineError, never a crash (API.md "Errors")."""
    _resolve(request, seed)
    try:
        out = SYSTEM.odds(request)
    except EngineError:
        return
    assert abs(out["outcomes"]["attacker"] + out["outcomes"]["defender"] - 1) < 1e-9
    assert 0 <= out["control"] <= out["outcomes"]["attacker"] + 1e-12


@SETTINGS
@given(requests(legal=True), st.integers(0, 2**32))
def test_pools_stay_within_hit_dice_and_dedicated_dice_are_accounted_for(
        request: dict[str, Any], seed: int) -> None:
    """docs/COMBATANTS.md: pool within 0..hit_dice; pool + dedicated ≤ hit_dice."""
    out = _resolved(request, seed)
    changes = [out["attacker"], out["defender"], *out.get("others", [])]
    for change in changes:
        c = change["after"]
        assert 0 <= c["pool"] <= c["hit_dice"]
        assert c["pool"] + len(c["dedicated"]) <= c["hit_dice"]
        SYSTEM.combatant(c)  # every after-state is itself a valid combatant


@SETTINGS
@given(requests(legal=True), st.integers(0, 2**32))
def test_every_die_shows_one_of_its_faces(request: dict[str, Any], seed: int) -> None:
    out = _resolved(request, seed)
    for roll in out["rolls"]:
        assert 1 <= roll["value"] <= roll["sides"]


@SETTINGS
@given(requests(legal=True), st.integers(0, 2**32))
def test_same_dice_same_result(request: dict[str, Any], seed: int) -> None:
    """Replaying the same seed, or the same dice as physical dice, gives the same result."""
    out = _resolved(request, seed)
    assert _resolve(request, seed) == out
    supplied: dict[str, list[int]] = defaultdict(list)
    for roll in out["rolls"]:
        supplied[roll["purpose"]].append(roll["value"])
    replay = SYSTEM.resolve(request, SuppliedDice(supplied)).to_json()
    assert replay == out


# Attacks, defenses and resolutions drawn most, each mostly with a mode of its own kind
# (a mode of the other kind now and then, to be refused), and sequences long enough
# that exchanges are fought and controls taken, kept and released.
_MODES = {"attack": [*ALL_ATTACKS, *ALL_ATTACKS, *ALL_DEFENSES, None],
          "defense": [*ALL_DEFENSES, *ALL_DEFENSES, *ALL_ATTACKS, None]}
actions = st.lists(st.sampled_from(
    ["attack", "attack", "defense", "defense", "pass", "resolve", "resolve", "force",
     "release", "keep", "rest"]).flatmap(lambda kind: st.tuples(
        st.just(kind), st.sampled_from(NAMES[:4]), st.sampled_from(NAMES[:4]),
        st.sampled_from(_MODES.get(kind, [None])), st.integers(0, 2**32))),
    min_size=8, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 6), min_size=4, max_size=4), actions)
def test_encounter_steps_keep_every_combatant_valid(hit_dice: list[int],
                                                     plan: list[tuple[Any, ...]]) -> None:
    """Any sequence of declarations and resolutions either applies or raises an
    EngineError, and every combatant stays a valid combatant (pools within hit dice,
    dedicated dice accounted for)."""
    state = SYSTEM.encounter_new(None)
    for name, hd in zip(NAMES[:4], hit_dice, strict=True):
        state, _ = SYSTEM.encounter_add(state, {
            "name": name, "hit_dice": hd, "die": 6, "attacks": list(ALL_ATTACKS),
            "defenses": list(ALL_DEFENSES)})
    for kind, who, other, mode, seed in plan:
        me, them = who.lower(), other.lower()
        choice: dict[str, Any] = {
            "attack": {"attack": {"mode": mode, "target": them, "keep_by": "die"}},
            "defense": {"defense": {"mode": mode}},
            "pass": {"pass": True},
            "release": {"release": them},
            "keep": {"keep": {"target": them, "by": "die"}},
            "rest": {"rest": True},
        }.get(kind, {})
        try:
            if kind in ("resolve", "force"):
                state, step = SYSTEM.encounter_resolve(state, RandomDice(seed),
                                                       force=kind == "force")
                assert isinstance(step["summary"], str)
            else:
                state = SYSTEM.encounter_declare(state, me, choice)
        except EngineError:
            continue
        view = SYSTEM.encounter_view(state)
        assert "pending" not in view
        for c in view["combatants"].values():
            assert SYSTEM.combatant(c) == c
