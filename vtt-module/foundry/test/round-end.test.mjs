// The end of a psionic round between single exchanges (`exchange.end_round`, API.md).
// Timed conditions written by exchanges (a stun with `condition_rounds`) must count down
// when the combat tracker moves on to a new round: the active GM's client ends the round
// of the tracker's psionic combatants, writes the companion's updates to exactly those
// tokens' actors and posts a card only when something happened. The macro API ends a
// round for chosen tokens.
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultMethods, encounterMethods, makeTable, revisedResult, roundEndResult } from "../test-support/scenario.mjs";
import { FakeRoll, tick } from "../test-support/fakes.mjs";
import { registerUiHooks } from "../mindscape/scripts/hooks.js";
import { makeApi } from "../mindscape/scripts/api.js";
import { endRoundParams, endedRound, hasProfile, roundParticipants } from "../mindscape/scripts/rounds.js";

const profile = (actor) => actor.flags.mindscape["revised-2e"];
const endRounds = (t) => t.daemon.calls.filter((c) => c.method === "exchange.end_round");

/**
 * The table of scenario.mjs with the UI hooks registered on every client, a stunned
 * goblin (its own token's actor: the stun ends at this round's end) and a second goblin
 * token, a second token of Ulcen's linked actor, a guard without a psionic profile, and a
 * combat holding all of them.
 */
function tracker(options = {}) {
  const t = makeTable(options);
  for (const c of Object.values(t.clients)) registerUiHooks(c.Hooks, c.svc);
  const { world } = t;
  const goblin2Token = world.token({ id: "tokG2", name: "Goblin 2", actor: t.actors.goblin, actorLink: false });
  const ulcen2Token = world.token({ id: "tokU2", name: "Ulcen (mirror)", actor: t.actors.ulcen, actorLink: true });
  const guard = world.actor({ id: "guard", name: "Guard", type: "npc" });
  const guardToken = world.token({ id: "tokX", name: "Guard", actor: guard, actorLink: true });
  const tokens = { ...t.tokens, goblin2Token, ulcen2Token, guardToken };
  const combat = world.combat({
    id: "cmb1",
    server: t.server,
    combatants: [tokens.ulcenToken, tokens.fenkaToken, tokens.goblinToken, goblin2Token, ulcen2Token, guardToken].map((token, i) => ({ id: `c${i}`, token })),
  });
  return { ...t, tokens, combat, guard };
}

/** Stun the goblin token's own actor; the stun has no round left after this one. */
async function stunGoblin(t, rounds = 0) {
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: rounds } });
}

/** Wait for every end of round the clients' `updateCombat` handlers started. */
async function settled(t) {
  const started = Object.values(t.clients).flatMap((c) => c.Hooks.called.filter((h) => h.name === "updateCombat").flatMap((h) => h.results));
  await Promise.all(started);
}

// ------------------------------------------------------------------ which update ends a round

test("a round ends when the tracker moves forward from a round that had begun, never at the start or going back", () => {
  const at = (round) => ({ previous: { round } });
  assert.equal(endedRound(at(1), { round: 2 }, { direction: 1 }), 1);
  assert.equal(endedRound(at(4), { round: 5, turn: 0 }, {}), 4); // a direct update forward
  assert.equal(endedRound(at(0), { round: 1, turn: 0 }, {}), null); // startCombat
  assert.equal(endedRound(at(3), { round: 2 }, { direction: -1 }), null); // previousRound
  assert.equal(endedRound(at(3), { round: 2 }, {}), null); // going back by hand
  assert.equal(endedRound(at(3), { round: 4 }, { direction: -1 }), null); // Foundry says it went back
  assert.equal(endedRound(at(3), { turn: 2 }, { direction: 1 }), null); // a turn, not a round
  assert.equal(endedRound(at(3), { round: 3 }, {}), null);
  assert.equal(endedRound(at(2), { round: 6 }, {}), 2); // a jump ends the round the tracker left
  assert.equal(endedRound(at(1), { round: 1.5 }, {}), null); // no whole round: no round
  // Without Foundry's record of the prior state, only the tracker's own advance counts.
  assert.equal(endedRound({}, { round: 3 }, { direction: 1 }), 2);
  assert.equal(endedRound({}, { round: 1 }, { direction: 1 }), null);
  assert.equal(endedRound({}, { round: 3 }, {}), null);
  assert.equal(endedRound({}, { round: 3 }, { direction: 0 }), null);
  assert.equal(endedRound(null, null, undefined), null);
});

test("participants: one per actor seen through the token, only actors with a profile for the system", () => {
  const t = tracker();
  const { ulcenToken, ulcen2Token, goblinToken, goblin2Token, guardToken } = t.tokens;
  const entries = [ulcenToken, goblinToken, ulcen2Token, goblin2Token, guardToken].map((token) => ({ token, actor: token.actor }));
  const picked = roundParticipants(entries, "revised-2e");
  // Two tokens of Ulcen's linked actor are one combatant; the two goblin tokens have
  // their own synthetic actors and stay two; the guard has no psionic profile.
  assert.deepEqual(picked.map((p) => p.token.uuid), [ulcenToken.uuid, goblinToken.uuid, goblin2Token.uuid]);
  assert.deepEqual(roundParticipants(entries, "power-pool"), []);
  // A profile is an object: a flag holding anything else is none.
  const odd = { token: null, actor: { id: "odd", uuid: "Actor.odd", flags: { mindscape: { "revised-2e": "yes" } } } };
  assert.deepEqual(roundParticipants([odd], "revised-2e"), []);
});

// What the companion's write-back leaves on an actor that had no profile (adapters/
// foundry.py, checked in tests/adapters/test_foundry.py): a psionic attack opens its mind,
// and the whole default closed mind once it closes again.
const OPENED_MIND = { state: "open", opened_by: "attack", locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: false, rounds_open: 0 };
const CLOSED_MIND = { state: "closed", opened_by: null, locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: false, rounds_open: 0 };

test("participants: a profile of only state at rest (the default closed mind or part of it, emptied state, null) is none; anything more, or a value the companion refuses, is one", () => {
  const actor = (profile) => ({ token: null, actor: { id: "a", uuid: "Actor.a", flags: { mindscape: { "revised-2e": profile } } } });
  const taking = (profile) => roundParticipants([actor(profile)], "revised-2e").length === 1;
  const reversed = Object.fromEntries(Object.entries(CLOSED_MIND).reverse());
  for (const profile of [{}, { mind: CLOSED_MIND }, { mind: reversed }, { mind: { state: "closed" } }, { mind: {} }, { mind: { ...OPENED_MIND, state: "closed", opened_by: null } },
    { mind: CLOSED_MIND, conditions: [], condition_rounds: {}, lost_powers: [] }, { condition_rounds: { stunned: null } }, { condition_rounds: { stunned: 2 } }, { mind: { state: "closed", rounds_open: null } },
    { dedicated: [], controlling: [], controlled_by: null }, { psp: null, mind: null }]) {
    assert.equal(taking(profile), false, JSON.stringify(profile));
  }
  for (const profile of [{ mind: OPENED_MIND }, { mind: { ...CLOSED_MIND, locked_rounds: 2 } }, { mind: { ...CLOSED_MIND, last_defense: "mind-blank" } },
    { mind: { ...CLOSED_MIND, used_power: 0 } }, { mind: { dazed: 0 } }, { mind: { toString: 0 } }, { mind: [] }, { mind: "closed" },
    { conditions: ["stunned"] }, { conditions: {} }, { lost_powers: ["ego-whip"] }, { controlled_by: "g1" },
    { mind: CLOSED_MIND, psp: 0 }, { kind: "nonpsionic" }, { psionic: false }, { attacks: [] }, { level: 1 }, { notes: "" }]) {
    assert.equal(taking(profile), true, JSON.stringify(profile));
  }
});

test("exchange.end_round's params hold choices, puppets and options only when they hold something, and a seed of 0 is a seed", () => {
  const combatants = [{ id: "ulcen" }];
  assert.deepEqual(endRoundParams({ system: "revised-2e", combatants, choices: {}, puppets: [], options: {}, dice: undefined, seed: null }), { system: "revised-2e", combatants });
  assert.deepEqual(endRoundParams({ system: "revised-2e", combatants, seed: 0 }), { system: "revised-2e", combatants, seed: 0 });
  const full = endRoundParams({ system: "power-pool", combatants, choices: { g: { release: ["f"] } }, puppets: [{ id: "f" }], options: { rule: true }, dice: [3], seed: 7 });
  assert.deepEqual(full, { system: "power-pool", combatants, choices: { g: { release: ["f"] } }, puppets: [{ id: "f" }], options: { rule: true }, dice: [3], seed: 7 });
});

// ------------------------------------------------------------------ the combat tracker

for (const generation of [12, 13]) {
  test(`v${generation}: the tracker's next round ends the psionic round once, on the active GM's client, with the refs of the attack flow`, async () => {
    const t = tracker({ generation, passQuerySender: generation >= 13 });
    await stunGoblin(t);
    await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CRIT-MODS": false } });
    const gm = t.clients.gm.svc;
    const { ulcenToken, fenkaToken, goblinToken, goblin2Token } = t.tokens;
    const expected = [ulcenToken, fenkaToken, goblinToken, goblin2Token].map((tk) => gm.ref(tk.actor, tk, "foundry.dnd5e"));

    await t.combat.startCombat();
    await settled(t);
    assert.equal(endRounds(t).length, 0, "starting the combat (round 0 → 1) ends no round");

    await t.combat.nextRound();
    await settled(t);
    const calls = endRounds(t);
    assert.equal(calls.length, 1);
    // Exactly the psionic combatants, as {adapter, data} refs built as for an exchange,
    // with the world's house rules; no choices when nobody chose.
    assert.deepEqual(calls[0].params, { system: "revised-2e", combatants: expected, options: { "H-2E-CRIT-MODS": false } });
    // No psionic control outside power-pool: no sheet is read for it, no puppets go along.
    assert.deepEqual(t.daemon.calls.filter((c) => c.method === "adapters.import"), []);

    // The stun ended on the goblin token's own actor only, as the companion said.
    assert.deepEqual(profile(goblinToken.actor).conditions, []);
    // (an unlinked token: the ended stun masked as null, not deleted, adapters/foundry.py)
    assert.deepEqual(profile(goblinToken.actor).condition_rounds, { stunned: null });
    assert.equal(profile(t.actors.goblin).conditions, undefined, "the base goblin actor is not written");
    assert.equal(goblin2Token.actor.updates.length, 0);
    assert.equal(t.actors.ulcen.updates.length, 0);

    // One card, on the GM's client, with the companion's summary under the tokens' names.
    const [message] = t.clients.gm.ChatMessage.created;
    assert.equal(t.clients.gm.ChatMessage.created.length, 1);
    assert.match(message.data.content, /End of psionic round 1/);
    assert.match(message.data.content, /End of the round: Goblin is no longer stunned\./);
    assert.match(message.data.content, /<li data-event="condition-ended">Goblin: Stunned ends<\/li>/);
    assert.deepEqual(message.data.flags.mindscape, { card: "round-end", system: "revised-2e", round: 1 });
    assert.equal(message.data.speaker.alias, "End of the psionic round");
    assert.equal(message.options.rollMode, "publicroll");
    for (const p of ["p1", "p2"]) assert.equal(t.clients[p].ChatMessage.created.length, 0);

    // The hook, on the GM's client only, with the round, the actors and the plan applied.
    const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
    assert.equal(hook.round, 1);
    assert.equal(hook.combat, t.combat);
    assert.equal(hook.message, message);
    assert.deepEqual(hook.actors, [ulcenToken.actor, fenkaToken.actor, goblinToken.actor, goblin2Token.actor]);
    assert.deepEqual(hook.updates.map((u) => u.uuid), [goblinToken.actor.uuid]);
    assert.equal(hook.result.summary, "End of the round: Goblin is no longer stunned.");
    for (const p of ["p1", "p2"]) assert.ok(!t.clients[p].Hooks.called.some((h) => h.name === "mindscape.roundEnded"));

    // The round is recorded on the combat, for every GM's client to see.
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
  });
}

test("a guard with no profile whose mind a psionic attack opened takes part in the tracker's round's ends until the companion writes it closed, and is left out after", async () => {
  const t = tracker();
  const { guardToken } = t.tokens;
  await guardToken.actor.update({ "flags.mindscape.revised-2e": { mind: OPENED_MIND } });
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  const sent = (i) => endRounds(t)[i].params.combatants.map((ref) => ref.data.actor._id);
  assert.ok(sent(0).includes("guard"));
  // The companion's write-back once the mind closes: the whole default closed mind.
  await guardToken.actor.update({ "flags.mindscape.revised-2e.mind": CLOSED_MIND });
  assert.deepEqual(profile(guardToken.actor), { mind: CLOSED_MIND });
  await t.combat.nextRound();
  await settled(t);
  assert.equal(endRounds(t).length, 2);
  assert.ok(!sent(1).includes("guard"));
  assert.deepEqual(sent(1), sent(0).filter((id) => id !== "guard"));
});

test("going back a round and forward again does not end a round twice; turns within a round end none", async () => {
  const t = tracker();
  await t.combat.startCombat();
  await t.combat.nextTurn();
  await settled(t);
  assert.equal(endRounds(t).length, 0);
  await t.combat.nextRound(); // 1 → 2: round 1 ends
  await t.combat.previousRound(); // 2 → 1
  await settled(t);
  assert.equal(endRounds(t).length, 1);
  await t.combat.nextRound(); // 1 → 2 again: round 1 already ended
  await settled(t);
  assert.equal(endRounds(t).length, 1);
  // The last turn of round 2 wraps to round 3: round 2 ends.
  for (let i = 0; i < t.combat.combatants.size; i++) await t.combat.nextTurn();
  await settled(t);
  assert.equal(t.combat.round, 3);
  assert.equal(endRounds(t).length, 2);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 2);
});

test("a round the combat's flag records as ended (by another GM's client, or before a reload) is not ended again", async () => {
  const t = tracker();
  await stunGoblin(t);
  await t.combat.setFlag("mindscape", "roundEnded", 1);
  await t.combat.startCombat();
  await t.combat.nextRound(); // 1 → 2: round 1 was ended already
  await settled(t);
  assert.equal(endRounds(t).length, 0);
  assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, ["stunned"]);
  await t.combat.nextRound(); // 2 → 3: round 2 ends
  await settled(t);
  assert.equal(endRounds(t).length, 1);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 2);
});

test("going back and forward again while the round's end is still under way does not end it twice", async () => {
  const t = tracker({ methods: defaultMethods({ "exchange.end_round": async (params) => { await tick(30); return roundEndResult(params); } }) });
  await stunGoblin(t);
  await t.combat.startCombat();
  await t.combat.nextRound(); // 1 → 2: round 1 ends, slowly
  await t.combat.previousRound();
  await t.combat.nextRound(); // 1 → 2 again before the first end is written
  await settled(t);
  assert.equal(endRounds(t).length, 1);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
});

test("a linked token deleted while its end of round waits in the queue is left out, though its actor remains in the world", async () => {
  let release;
  const t = tracker({
    methods: defaultMethods({ "exchange.resolve": async (params) => { await new Promise((r) => { release = r; }); return revisedResult(params); } }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const gm = t.clients.gm.svc;
  const { ulcenToken, goblinToken, fenkaToken } = t.tokens;
  const attack = gm.startAttack({ attackerUuid: ulcenToken.uuid, targetUuids: [goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!release) await tick(1);
  const ending = makeApi(gm).endRound({ tokenUuids: [ulcenToken, fenkaToken] });
  await tick(5);
  t.world.docs.delete(ulcenToken.uuid);
  release();
  await Promise.all([attack, ending]);
  assert.deepEqual(endRounds(t).map((c) => c.params.combatants.map((ref) => ref.data.token.uuid)), [[fenkaToken.uuid]]);
});

test("a round where nothing happens posts no card; a countdown alone is written back without one", async () => {
  const t = tracker();
  // Ulcen is stunned for one more round after this one: this round only counts it down.
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 1 } });
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  assert.deepEqual(profile(t.actors.ulcen).condition_rounds, { stunned: 0 });
  assert.deepEqual(profile(t.actors.ulcen).conditions, ["stunned"]);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0];
  assert.equal(hook.message, null);
  assert.equal(hook.result.summary, "End of the round: nothing changes.");

  // The next round ends the stun, and that is worth a card.
  await t.combat.nextRound();
  await settled(t);
  assert.deepEqual(profile(t.actors.ulcen).conditions, []);
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Ulcen of Tyr is no longer stunned/);
  // A stunned revised-2e attacker is free again after its stun ran out.
  assert.equal(endRounds(t).length, 2);
});

test("with the world setting off the tracker ends no round", async () => {
  const t = tracker();
  await stunGoblin(t);
  await t.clients.gm.game.settings.set("mindscape", "endRoundWithTracker", false);
  await t.combat.startCombat();
  await t.combat.nextRound();
  await t.combat.nextRound();
  await settled(t);
  assert.equal(endRounds(t).length, 0);
  assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, ["stunned"]);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
});

test("a combat without psionic combatants calls nothing and records no round", async () => {
  const t = makeTable();
  for (const c of Object.values(t.clients)) registerUiHooks(c.Hooks, c.svc);
  const guard = t.world.actor({ id: "guard", name: "Guard", type: "npc" });
  const combat = t.world.combat({ id: "cmb2", server: t.server, combatants: [{ token: t.world.token({ id: "tokX", name: "Guard", actor: guard, actorLink: true }) }] });
  await combat.startCombat();
  await combat.nextRound();
  await settled(t);
  assert.equal(endRounds(t).length, 0);
  assert.deepEqual(t.clients.gm.notes.error, []);
  assert.equal(combat.getFlag("mindscape", "roundEnded"), undefined, "no round is recorded on the combat");
});

test("only the client that talks to the companion ends the round; the players' clients leave it alone", async () => {
  const t = tracker();
  // The players' clients get the hook too; their fetch throws if they ever call the daemon.
  await stunGoblin(t);
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  const results = (c) => c.Hooks.called.filter((h) => h.name === "updateCombat").flatMap((h) => h.results);
  for (const p of ["p1", "p2"]) {
    const seen = await Promise.all(results(t.clients[p]));
    assert.ok(seen.length >= 2 && seen.every((r) => r === null), `${p}: ${JSON.stringify(seen)}`);
  }
  assert.equal(endRounds(t).length, 1);
  assert.deepEqual(t.clients.p1.notes.error, []);
});

test("the companion down: one error for the GM, no unhandled rejection, and the round can be retried", async () => {
  const t = tracker();
  await stunGoblin(t);
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const gm = t.clients.gm.svc;
    const fetch = gm.env.fetch;
    gm.env.fetch = async () => { throw new TypeError("Failed to fetch"); };
    await t.combat.startCombat();
    await t.combat.nextRound();
    await settled(t);
    await tick(20);
    assert.equal(t.clients.gm.notes.error.length, 1);
    assert.match(t.clients.gm.notes.error[0], /not answering at http:\/\/127\.0\.0\.1:39393/);
    assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, ["stunned"]);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined, "a failed round is not recorded");
    assert.equal(gm.exchanges.busy(t.tokens.goblinToken.actor.uuid), false);

    // The companion is back: going back and forward again ends the round after all.
    gm.env.fetch = fetch;
    await t.combat.previousRound();
    await t.combat.nextRound();
    await settled(t);
    assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, []);
    assert.equal(t.clients.gm.notes.error.length, 1);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("the GM's browser not paired at three rounds' ends: the first error stays until dismissed, the same words at the next rounds go away by themselves", async () => {
  const t = tracker();
  await stunGoblin(t);
  t.clients.gm.game.settings.values.delete("mindscape.daemonToken");
  await t.combat.startCombat();
  for (let i = 0; i < 3; i++) {
    await t.combat.nextRound();
    await settled(t);
  }
  const errors = t.clients.gm.notes.given.filter((n) => n.kind === "error");
  assert.equal(errors.length, 3);
  assert.ok(errors.every((n) => n.text.startsWith("Mindscape is not paired with its companion yet.")));
  assert.deepEqual(errors.map((n) => n.options?.permanent ?? false), [true, false, false]);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined, "no round was ended");
});

test("updates the companion addresses outside the round's combatants are refused", async () => {
  const t = tracker({
    methods: defaultMethods({
      "exchange.end_round": (params) => {
        const result = roundEndResult(params);
        // A faulty adapter writing to the guard (not a psionic combatant of the round).
        result.updates.push({ uuid: "Actor.guard", update: { "flags.mindscape.revised-2e.psp": 99 } });
        return result;
      },
    }),
  });
  await stunGoblin(t);
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  assert.equal(t.guard.updates.length, 0);
  assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, []);
});

test("physical dice: the GM types the Wisdom check the companion asks for, and the card shows that die", async () => {
  const t = tracker({ dialogs: { gm: { diceDialog: [[15]] } } });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  // The goblin's mind was opened by a critical hit; its Wisdom is 17.
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open" }, "flags.mindscape.revised-2e.wis": 17 });
  FakeRoll.made = [];
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  const calls = endRounds(t);
  assert.deepEqual(calls.map((c) => c.params.dice), [{}, { "wisdom-check": [15] }]);
  const asked = t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").map((s) => [s.arg.purpose, s.arg.sides, s.arg.needed, s.arg.purposeLabel]);
  assert.deepEqual(asked, [["wisdom-check", 20, 1, "Wisdom check"]]);
  assert.equal(profile(t.tokens.goblinToken.actor).mind.state, "closed");
  const [message] = t.clients.gm.ChatMessage.created;
  assert.match(message.data.content, /Wisdom check<\/span> d20: <strong>15<\/strong> <span class="by">\(Goblin\)<\/span>/);
  assert.match(message.data.content, /Resolved with physical dice/);
  assert.deepEqual(FakeRoll.made.map((r) => [r.formula, r.terms[0].results.map((x) => x.result)]), [["1d20", [15]]]);
});

test("a companion that cannot describe the round's system still gets the round's card posted, its die shown alone", async () => {
  const t = tracker({ methods: defaultMethods({ "systems.describe": () => { throw { code: -32603, message: "Internal error" }; } }) });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open" }, "flags.mindscape.revised-2e.wis": 17 });
  FakeRoll.made = [];
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  assert.equal(t.daemon.calls.filter((c) => c.method === "systems.describe").length, 1);
  const [message] = t.clients.gm.ChatMessage.created;
  assert.match(message.data.content, /Wisdom check/);
  assert.deepEqual(FakeRoll.made.map((r) => r.formula), ["1d20"]);
});

test("an end of round waits for an exchange on one of its actors, then reads what that exchange wrote", async () => {
  const order = [];
  const t = tracker({
    methods: defaultMethods({
      "exchange.resolve": async (params) => { order.push("resolve start"); await tick(30); order.push("resolve end"); return revisedResult(params); },
      "exchange.end_round": (params) => { order.push("end_round"); return roundEndResult(params); },
    }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  await t.combat.startCombat();
  const attack = t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!order.length) await tick(1);
  await t.combat.nextRound();
  await Promise.all([attack, settled(t)]);
  assert.deepEqual(order, ["resolve start", "resolve end", "end_round"]);
  const goblin = endRounds(t)[0].params.combatants.find((c) => c.data.token.uuid === t.tokens.goblinToken.uuid);
  assert.equal(goblin.data.actor.flags.mindscape["revised-2e"].psp, 9, "the goblin as the exchange left it (20 - 11)");
});

test("the current encounter's combatants are left out of the tracker's end of round: the encounter counts their rounds itself", async () => {
  const { methods, enc } = encounterMethods();
  const t = tracker({ methods });
  const gm = t.clients.gm.svc;
  const { ulcenToken, fenkaToken, goblinToken, goblin2Token } = t.tokens;
  // Ulcen is stunned for 3 more rounds; he and Fenka fight in the encounter panel.
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 3 } });
  await gm.encounters.create([ulcenToken.uuid, fenkaToken.uuid]);
  await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
  // Only the goblins, outside the encounter, end their round here; Ulcen's second linked
  // token is Ulcen, and stays out with him.
  const [call] = endRounds(t);
  assert.equal(endRounds(t).length, 1);
  assert.deepEqual(call.params.combatants.map((c) => c.data.token.uuid), [goblinToken.uuid, goblin2Token.uuid]);
  assert.deepEqual(profile(t.actors.ulcen).condition_rounds, { stunned: 3 });
  // So the encounter takes nothing from the sheet that it would count down a second time.
  const revision = enc.revision;
  const refreshed = await gm.encounters.refresh();
  assert.deepEqual(refreshed.map((r) => [r.name, r.changed]), [["Ulcen of Tyr", []], ["Fenka", []]]);
  assert.equal(enc.revision, revision);
  assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);

  // With every psionic combatant in the encounter, the tracker calls nothing.
  await gm.encounters.add([goblinToken.uuid, goblin2Token.uuid]);
  await t.combat.nextRound();
  await settled(t);
  assert.equal(endRounds(t).length, 1);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("a tracker combatant whose token was deleted no longer fights: neither it nor its base actor ends a round", async () => {
  const t = tracker();
  // The goblins' world actor carries a spent stun, as a GM may have left it on its sheet.
  await t.actors.goblin.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  await t.combat.startCombat();
  t.world.docs.delete(t.tokens.goblinToken.uuid);
  t.world.docs.delete(t.tokens.goblinToken.actor.uuid);
  await t.combat.nextRound();
  await settled(t);
  const [call] = endRounds(t);
  assert.deepEqual(call.params.combatants.map((c) => c.data.token?.uuid ?? null), [t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblin2Token.uuid]);
  assert.deepEqual(profile(t.actors.goblin).conditions, ["stunned"], "the base actor (every copy's prototype) is not written");
  assert.equal(t.actors.goblin.updates.length, 1);
});

test("a token deleted while its end of round waits in the queue is left out; with none left nothing is called", async () => {
  let release;
  const t = tracker({
    methods: defaultMethods({ "exchange.resolve": async (params) => { await new Promise((r) => { release = r; }); return revisedResult(params); } }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const gm = t.clients.gm.svc;
  const api = makeApi(gm);
  const { ulcenToken, goblinToken, fenkaToken } = t.tokens;
  // Ulcen's attack on the goblin holds both in the queue.
  const attack = gm.startAttack({ attackerUuid: ulcenToken.uuid, targetUuids: [goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!release) await tick(1);
  const both = api.endRound({ tokenUuids: [goblinToken, fenkaToken] });
  const alone = api.endRound({ tokenUuids: [goblinToken] });
  await tick(5);
  t.world.docs.delete(goblinToken.uuid);
  t.world.docs.delete(goblinToken.actor.uuid);
  release();
  await attack;
  const [done, none] = await Promise.all([both, alone]);
  assert.equal(endRounds(t).length, 1);
  assert.deepEqual(endRounds(t)[0].params.combatants.map((c) => c.data.token.uuid), [fenkaToken.uuid]);
  assert.equal(done.summary, "End of the round: nothing changes.");
  assert.equal(none, null);
  assert.deepEqual(t.clients.gm.notes.error, [
    "Every token of this request was deleted before its turn came, so nothing was done. Select tokens that are still on the scene and try again.",
  ]);
});

// ------------------------------------------------------------------ the macro API

test("API endRound: the GM ends a round for chosen tokens, choices passed through by combatant id", async () => {
  const t = tracker();
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open" } });
  const api = makeApi(t.clients.gm.svc);
  const done = await api.endRound({ tokenUuids: [t.tokens.goblinToken, t.tokens.ulcenToken.uuid, t.tokens.ulcen2Token], choices: { "goblin-tokG": { close: true } } });
  const [call] = endRounds(t);
  // Unlinked token: `<actor id>-<token id>`; Ulcen's two linked tokens are one combatant.
  assert.deepEqual(call.params.choices, { "goblin-tokG": { close: true } });
  assert.deepEqual(call.params.combatants.map((c) => c.data.token.uuid), [t.tokens.goblinToken.uuid, t.tokens.ulcenToken.uuid]);
  assert.equal(profile(t.tokens.goblinToken.actor).psp, 19);
  assert.equal(profile(t.tokens.goblinToken.actor).mind.state, "closed");
  assert.equal(done.summary, "End of the round: Goblin pays to close its mind.");
  assert.deepEqual(done.updates, [{ uuid: t.tokens.goblinToken.actor.uuid, update: { "flags.mindscape.revised-2e.psp": 19, "flags.mindscape.revised-2e.mind": { state: "closed" } } }]);
  assert.equal(done.messageId, t.clients.gm.ChatMessage.created[0].id);
  // A macro's round has no tracker round to name.
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /<h3>End of the psionic round<\/h3>/);
  assert.equal(t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.roundEnded").args[0].round, null);
});

test("API endRound: a choice the rules refuse is shown to the GM and changes nothing", async () => {
  const t = tracker();
  const api = makeApi(t.clients.gm.svc);
  const done = await api.endRound({ tokenUuids: [t.tokens.goblinToken], choices: { "goblin-tokG": { close: true } } });
  assert.equal(done, null);
  assert.equal(t.clients.gm.notes.error[0], "The rules forbid this: Goblin cannot pay to close its mind this round");
  assert.equal(t.tokens.goblinToken.actor.updates.length, 0);
});

test("API endRound: tokens without a profile are refused with a message that says why", async () => {
  const t = tracker();
  const done = await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.guardToken] });
  assert.equal(done, null);
  assert.match(t.clients.gm.notes.error[0], /None of these tokens has a psionic profile for AD&D 2e revised psionics/);
  assert.equal(endRounds(t).length, 0);
});

test("API endRound: a player is refused, also when asking the GM's client directly", async () => {
  const t = tracker();
  await stunGoblin(t);
  const done = await makeApi(t.clients.p1.svc).endRound({ tokenUuids: [t.tokens.ulcenToken.uuid] });
  assert.equal(done, null);
  assert.match(t.clients.p1.notes.error[0], /Only a GM may end a psionic round/);
  // A forged request over the relay: the GM's client trusts the sender the server names.
  const err = await t.clients.p1.svc.relay.toGM("endRound", { tokenUuids: [t.tokens.goblinToken.uuid] }).catch((e) => e);
  assert.equal(err.key, "MINDSCAPE.Error.EndRoundGMOnly");
  assert.equal(endRounds(t).length, 0);
  assert.deepEqual(profile(t.tokens.goblinToken.actor).conditions, ["stunned"]);
});

test("API endRound: tokens of the current encounter's combatants are left out and named; with only those, nothing is called", async () => {
  const { methods } = encounterMethods();
  const t = tracker({ methods });
  const gm = t.clients.gm.svc;
  const { ulcenToken, ulcen2Token, fenkaToken, goblinToken } = t.tokens;
  await gm.encounters.create([ulcenToken.uuid, fenkaToken.uuid]);
  const api = makeApi(gm);
  const done = await api.endRound({ tokenUuids: [ulcen2Token, goblinToken, fenkaToken] });
  assert.deepEqual(endRounds(t).map((c) => c.params.combatants.map((x) => x.data.token.uuid)), [[goblinToken.uuid]]);
  assert.deepEqual(done.leftOut, ["Ulcen (mirror)", "Fenka"]);
  assert.deepEqual(t.clients.gm.notes.info, ["Left out, as the encounter ends their rounds itself: Ulcen (mirror), Fenka."]);

  assert.equal(await api.endRound({ tokenUuids: [ulcenToken] }), null);
  assert.equal(t.clients.gm.notes.error[0], "No round was ended for Ulcen of Tyr: the current psionic encounter ends their rounds itself. Resolve their steps in the encounter panel, or end the encounter first.");
  assert.equal(endRounds(t).length, 1);

  // Once the encounter is over, they end their rounds here again.
  await gm.encounters.end();
  await api.endRound({ tokenUuids: [ulcenToken] });
  assert.equal(endRounds(t).length, 2);
});

test("API endRound: physical dice asked for are typed though the world rolls them", async () => {
  const t = tracker({ dialogs: { gm: { diceDialog: [[15]] } } });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open" }, "flags.mindscape.revised-2e.wis": 17 });
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken], physical: true });
  assert.deepEqual(endRounds(t).map((c) => c.params.dice), [{}, { "wisdom-check": [15] }]);
  assert.deepEqual(t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").map((s) => s.arg.purpose), ["wisdom-check"]);
});

test("API endRound: a world actor named beside a token is taken through its token on that token's scene, not the active one", async () => {
  const t = tracker();
  t.world.token({ id: "tokU", sceneId: "copy", name: "Ulcen of Tyr", actor: t.actors.ulcen, actorLink: true });
  t.world.activeSceneId = "copy";
  await makeApi(t.clients.gm.svc).endRound({ tokenUuids: [t.tokens.goblinToken.uuid, "Actor.ulcen"] });
  assert.deepEqual(endRounds(t)[0].params.combatants.map((c) => c.data.token.uuid), [t.tokens.goblinToken.uuid, t.tokens.ulcenToken.uuid]);
});

test("what the companion warns about a sheet is shown to the GM with the name, once a session, not at every round", async () => {
  const warned = (params) => ({ ...roundEndResult(params), warnings: ["/combatants/0: no PSP maximum recorded; taken as the current PSPs, 40", "/combatants/1: no psionic state recorded; taken as nonpsionic"] });
  const t = tracker({ methods: defaultMethods({ "exchange.end_round": warned }) });
  const api = makeApi(t.clients.gm.svc);
  await api.endRound({ tokenUuids: [t.tokens.ulcenToken, t.tokens.fenkaToken] });
  // One notice for the answer, naming each sheet.
  assert.deepEqual(t.clients.gm.notes.warn, [
    "The companion reading the sheets: Ulcen of Tyr: no PSP maximum recorded; taken as the current PSPs, 40; Fenka: no psionic state recorded; taken as nonpsionic",
  ]);
  await api.endRound({ tokenUuids: [t.tokens.ulcenToken, t.tokens.fenkaToken] });
  assert.equal(t.clients.gm.notes.warn.length, 1, "the same lines are not shown again");
  // A bare warning (encounter.add's) is shown with the name given for it.
  t.clients.gm.svc.sheetWarnings(["no class items; level taken as 1"], { "": "Goblin" });
  assert.equal(t.clients.gm.notes.warn.at(-1), "The companion reading the sheets: Goblin: no class items; level taken as 1");
});

test("rounds left only on conditions a profile does not hold are state at rest, as the adapters leave such keys out", () => {
  // docs/ADAPTERS.md: a store written before write-backs took an ended condition's rounds
  // away may hold them; the companion ignores them with a warning, so they make no profile
  const actor = (profile) => ({ flags: { mindscape: { "revised-2e": profile } } });
  assert.equal(hasProfile(actor({ condition_rounds: { stunned: 2 } }), "revised-2e"), false);
  assert.equal(hasProfile(actor({ conditions: [], condition_rounds: { stunned: 0 }, mind: { state: "closed" } }), "revised-2e"), false);
  assert.equal(hasProfile(actor({ conditions: ["stunned"], condition_rounds: { stunned: 2 } }), "revised-2e"), true);
  assert.equal(hasProfile(actor({ conditions: null, condition_rounds: { dazed: 1 } }), "revised-2e"), false);
});
