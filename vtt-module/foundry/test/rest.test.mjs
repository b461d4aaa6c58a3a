// A psionic rest outside encounters (`combatants.rest`, API.md): revised-2e gives
// ceil(psp_max / 8) PSPs for each full hour of sleep or meditation (RULES.md §1.8) and
// lets conditions timed in rounds run out; power-pool is one long rest with no hours;
// combat-strength has no rest rule. Only a GM rests actors, from the sheet header or the
// macro API; the write-back goes to the tokens' own actors, and a card is posted only
// when something happened.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RESENDS, combatantIdOfRef, defaultMethods, encounterMethods, makeTable, patient, poolImport, renderModuleTemplate, restResult, revisedResult } from "../test-support/scenario.mjs";
import { FakeRoll, makeI18n, tick } from "../test-support/fakes.mjs";
import { hookTable, ATTACK_ACTION, PROFILE_ACTION, REST_ACTION } from "../mindscape/scripts/hooks.js";
import { makeApi } from "../mindscape/scripts/api.js";
import { restDialog } from "../mindscape/scripts/dialogs.js";
import { restHours, restParams, restSpec, restsIn } from "../mindscape/scripts/rest.js";

const profile = (actor, system = "revised-2e") => actor.flags.mindscape[system];
const pp = (actor) => profile(actor, "power-pool");
const rests = (t) => t.daemon.calls.filter((c) => c.method === "combatants.rest");

/** The table with a second token of Ulcen's linked actor and a guard without a psionic profile. */
function table(options = {}) {
  const t = makeTable(options);
  const ulcen2Token = t.world.token({ id: "tokU2", name: "Ulcen (mirror)", actor: t.actors.ulcen, actorLink: true });
  const guard = t.world.actor({ id: "guard", name: "Guard", type: "npc" });
  const guardToken = t.world.token({ id: "tokX", name: "Guard", actor: guard, actorLink: true });
  return { ...t, tokens: { ...t.tokens, ulcen2Token, guardToken }, guard };
}

/** Switch the world to power-pool and give the goblin token a spent pool and a timed daze. */
async function powerPool(t) {
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "power-pool");
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.power-pool": { hit_dice: 4, die: 8, pool: 1, conditions: ["dazed"], condition_rounds: { dazed: 2 } } });
}

// ------------------------------------------------------------------ pure parts

test("what a rest asks comes from the system's rest_schema: hours in its range, nothing, or no rest", () => {
  assert.deepEqual(restSpec({ rest_schema: { properties: { combatants: {}, hours: { type: "integer", minimum: 1, maximum: 1000 } } } }), { hours: { min: 1, max: 1000 } });
  assert.deepEqual(restSpec({ rest_schema: { properties: { combatants: {}, options: {} } } }), { hours: null });
  assert.equal(restSpec({ id: "combat-strength" }), null);
  assert.deepEqual([restsIn("revised-2e"), restsIn("power-pool"), restsIn("combat-strength")], [true, true, false]);
  const range = { min: 1, max: 1000 };
  assert.deepEqual(["8", 8, " 12 ", "1000", "1"].map((v) => restHours(v, range)), [8, 8, 12, 1000, 1]);
  assert.deepEqual(["", "0", "1001", "2.5", "8h", null, undefined, true, -3].map((v) => restHours(v, range)), Array(9).fill(null));
  assert.deepEqual(restParams({ system: "power-pool", combatants: [1], options: {}, hours: null }), { system: "power-pool", combatants: [1] });
  assert.deepEqual(restParams({ system: "revised-2e", combatants: [1], options: { "H-X": false }, hours: 2 }), { system: "revised-2e", combatants: [1], options: { "H-X": false }, hours: 2 });
  // power-pool's puppets only when there are some: the companion refuses them elsewhere.
  assert.deepEqual(restParams({ system: "power-pool", combatants: [1], puppets: [2] }), { system: "power-pool", combatants: [1], puppets: [2] });
  assert.deepEqual(restParams({ system: "power-pool", combatants: [1], puppets: [] }), { system: "power-pool", combatants: [1] });
  // A schema without bounds rests 1 to 1000 hours; a rest_schema that is no object is no rest.
  assert.deepEqual(restSpec({ rest_schema: { properties: { hours: { type: "integer" } } } }), { hours: { min: 1, max: 1000 } });
  assert.equal(restSpec({ rest_schema: true }), null);
  // Where a rest may last 0 hours, blanks are still no hours and 0 is sent as given.
  assert.deepEqual(["  ", "0"].map((v) => restHours(v, { min: 0, max: 10 })), [null, 0]);
  assert.deepEqual(restParams({ system: "x", combatants: [1], hours: 0 }), { system: "x", combatants: [1], hours: 0 });
});

// ------------------------------------------------------------------ the sheet header

test("the sheet header offers Psionic rest to GMs only, and never in a combat-strength world", async () => {
  const t = table();
  const { ulcen } = t.actors;
  const v1 = (client, actor) => { const buttons = []; hookTable(client.svc).getActorSheetHeaderButtons({ actor }, buttons); return buttons; };
  const v2 = (client, actor) => { const controls = []; const app = { document: actor, options: { actions: {} } }; hookTable(client.svc).getHeaderControlsActorSheetV2(app, controls); return { controls, app }; };

  assert.deepEqual(v1(t.clients.gm, ulcen).map((b) => b.class), [PROFILE_ACTION, ATTACK_ACTION, REST_ACTION]);
  assert.deepEqual(v2(t.clients.gm, ulcen).controls.map((c) => c.action), [ATTACK_ACTION, PROFILE_ACTION, REST_ACTION]);
  assert.equal(typeof v2(t.clients.gm, ulcen).app.options.actions[REST_ACTION], "function");
  // Ann owns Ulcen: she gets his attack and profile, not the rest.
  assert.deepEqual(v1(t.clients.p1, ulcen).map((b) => b.class), [PROFILE_ACTION, ATTACK_ACTION]);
  const player = v2(t.clients.p1, ulcen);
  assert.deepEqual(player.controls.map((c) => c.action), [ATTACK_ACTION, PROFILE_ACTION]);
  assert.equal(player.app.options.actions[REST_ACTION], undefined);

  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  assert.ok(!v1(t.clients.gm, ulcen).some((b) => b.class === REST_ACTION));
  assert.ok(!v2(t.clients.gm, ulcen).controls.some((c) => c.action === REST_ACTION));
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "power-pool");
  assert.ok(v1(t.clients.gm, ulcen).some((b) => b.class === REST_ACTION));
});

test("the header's rest on an unlinked token's sheet asks the hours and rests that token's own actor", async () => {
  const t = table({ dialogs: { gm: { restDialog: { hours: 2 } } } });
  const { fenkaToken } = t.tokens;
  await fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 5 });
  const controls = [];
  hookTable(t.clients.gm.svc).getHeaderControlsActorSheetV2({ document: fenkaToken.actor }, controls);
  const done = await controls.find((c) => c.action === REST_ACTION).onClick();
  assert.equal(done.summary, "After the rest: Fenka regains 10 PSPs (15 of 40).");
  assert.equal(profile(fenkaToken.actor).psp, 15);
  assert.equal(profile(t.actors.fenka).psp, 30, "the base actor (every other copy) is not written");
  assert.deepEqual(rests(t)[0].params.combatants.map((c) => c.data.token), [{ uuid: fenkaToken.uuid, actorLink: false, name: fenkaToken.name }]);
});

// ------------------------------------------------------------------ revised-2e

test("revised-2e: the dialog's hours go to combatants.rest; PSPs and timed conditions are written back and a card posted", async () => {
  const t = table({ dialogs: { gm: { restDialog: { hours: 3 } } } });
  const { ulcenToken, fenkaToken, ulcen2Token } = t.tokens;
  const gm = t.clients.gm.svc;
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 10 });
  await fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 5, "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 30 } });
  const expected = [gm.ref(t.actors.ulcen, ulcenToken, "foundry.dnd5e"), gm.ref(fenkaToken.actor, fenkaToken, "foundry.dnd5e")];

  const done = await makeApi(gm).rest({ tokenUuids: [ulcenToken, fenkaToken.uuid, ulcen2Token] });

  // The dialog asked the whole hours, 8 first, for the two actors that rest.
  const [asked] = t.clients.gm.dialogs.seen;
  assert.equal(asked.kind, "restDialog");
  assert.deepEqual(
    (({ askHours, min, max, value, names, several, system, systemLabel }) => ({ askHours, min, max, value, names, several, system, systemLabel }))(asked.arg.context),
    { askHours: true, min: 1, max: 1000, value: 8, names: "Ulcen of Tyr, Fenka", several: true, system: "revised-2e", systemLabel: "AD&D 2e revised psionics (MTHAC0/MAC)" },
  );
  // Ulcen's two linked tokens are one combatant; no options when the world has no house rules.
  assert.equal(rests(t).length, 1);
  assert.deepEqual(rests(t)[0].params, { system: "revised-2e", combatants: expected, hours: 3 });

  // 5 PSPs an hour (ceil(40 / 8)) for 3 hours; 180 rounds pass, the 30-round stun ends.
  assert.equal(profile(t.actors.ulcen).psp, 25);
  assert.equal(profile(fenkaToken.actor).psp, 20);
  assert.deepEqual(profile(fenkaToken.actor).conditions, []);
  // Fenka's is an unlinked token: the ended stun is masked (null, read as absent), not
  // deleted, so that its base actor's could not show through (adapters/foundry.py).
  assert.deepEqual(profile(fenkaToken.actor).condition_rounds, { stunned: null });
  assert.equal(profile(t.actors.fenka).psp, 30);

  const summary = "After the rest: Ulcen of Tyr regains 15 PSPs (25 of 40). Fenka regains 15 PSPs (20 of 40). Fenka is no longer stunned.";
  const [message] = t.clients.gm.ChatMessage.created;
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
  assert.match(message.data.content, /class="mindscape-card mindscape-round-card mindscape-rest-card"/);
  assert.match(message.data.content, /<i class="fas fa-bed"><\/i>\s*<div>\s*<h3>Psionic rest<\/h3>/);
  assert.ok(message.data.content.includes(summary));
  assert.match(message.data.content, /<th>Fenka<\/th><td>PSPs<\/td><td>5 <i class="fas fa-long-arrow-alt-right"><\/i> <strong>20<\/strong>/);
  // Each event as a sentence (en.json MINDSCAPE.Event), the creature by its token's name.
  assert.match(message.data.content, /<li data-event="condition-ended">Fenka: Stunned ends<\/li>/);
  assert.match(message.data.content, /<li data-event="psp-regained">Ulcen of Tyr regains PSPs: 15<\/li>/);
  assert.deepEqual(message.data.flags.mindscape, { card: "rest", system: "revised-2e", hours: 3 });
  assert.equal(message.data.speaker.alias, "Psionic rest");
  assert.deepEqual(message.data.rolls, []);

  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.rested").args[0];
  assert.deepEqual(Object.keys(hook).sort(), ["actors", "message", "puppets", "result", "system", "updates"]);
  assert.equal(hook.system, "revised-2e");
  assert.deepEqual(hook.actors, [t.actors.ulcen, fenkaToken.actor]);
  assert.deepEqual(hook.puppets, []);
  assert.equal(hook.message, message);
  assert.equal(hook.result.summary, summary);
  assert.deepEqual(hook.updates.map((u) => u.uuid), ["Actor.ulcen", fenkaToken.actor.uuid]);
  assert.deepEqual(done, { summary, updates: hook.updates, messageId: message.id });
  for (const p of ["p1", "p2"]) assert.ok(!t.clients[p].Hooks.called.some((h) => h.name === "mindscape.rested"));
});

test("revised-2e: hours given to the macro skip the dialog; a rest where a condition only counts down is written back without a card", async () => {
  const t = table();
  // Ulcen is at full PSPs; his long stun only counts down (no event).
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 600 } });
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken], hours: 8 });
  assert.equal(t.clients.gm.dialogs.seen.length, 0);
  assert.equal(rests(t)[0].params.hours, 8);
  assert.deepEqual(profile(t.actors.ulcen).condition_rounds, { stunned: 120 });
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.deepEqual(done, { summary: "After the rest: what still lasts counts down.", updates: [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.condition_rounds": { stunned: 120 } } }], messageId: null });
  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.rested").args[0];
  assert.equal(hook.message, null);
});

test("revised-2e: hours that are not whole hours from 1 to 1000 are refused before the companion is called", async () => {
  const t = table();
  const api = makeApi(t.clients.gm.svc);
  for (const hours of [0, 2.5, 1001, "8h"]) assert.equal(await api.rest({ tokenUuids: [t.tokens.ulcenToken], hours }), null);
  assert.equal(t.clients.gm.notes.error.length, 4);
  for (const e of t.clients.gm.notes.error) assert.equal(e, "A rest in AD&D 2e revised psionics (MTHAC0/MAC) takes whole hours from 1 to 1000: pass hours as a whole number (for example 8).");
  // Without the dialog, no hours at all is refused too.
  assert.equal(await api.rest({ tokenUuids: [t.tokens.ulcenToken], dialog: false }), null);
  assert.equal(rests(t).length, 0);
});

test("a cancelled rest dialog rests nobody", async () => {
  const t = table({ dialogs: { gm: { restDialog: null } } });
  assert.equal(await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken] }), null);
  assert.equal(t.clients.gm.dialogs.seen.length, 1);
  assert.equal(rests(t).length, 0);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("revised-2e: an open mind goes through its rounds during the rest; the card shows the dice the companion rolled", async () => {
  const t = table();
  const { goblinToken } = t.tokens;
  // The goblin's mind opened when its PSPs ran out; its Wisdom is 13 (checks at 10).
  await goblinToken.actor.update({ "flags.mindscape.revised-2e.psp": 0, "flags.mindscape.revised-2e.wis": 13, "flags.mindscape.revised-2e.mind": { state: "open", opened_by: "zero-psp" } });
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], hours: 1 });
  assert.ok(!("dice" in rests(t)[0].params), "the companion rolls: no dice are sent");
  const summary = "After the rest: Goblin regains 3 PSPs (3 of 20). Goblin's mind closes during the rest (Wisdom check 10, rolled 8, after 1 try).";
  assert.equal(done.summary, summary);
  assert.equal(profile(goblinToken.actor).mind.state, "closed");
  assert.equal(profile(t.actors.goblin).mind, undefined, "the base actor is not written");
  const [message] = t.clients.gm.ChatMessage.created;
  assert.match(message.data.content, /<span class="purpose">Open duration<\/span> d4: <strong>1<\/strong> <span class="by">\(Goblin\)<\/span>/);
  assert.match(message.data.content, /<span class="purpose">Wisdom check<\/span> d20: <strong>8<\/strong> <span class="by">\(Goblin\)<\/span>/);
  assert.match(message.data.content, /<li data-event="mind-locked">Goblin&#x27;s mind stays open, rounds: 2<\/li>/);
  assert.match(message.data.content, /<th>Goblin<\/th><td>Mind<\/td><td>Open <i class="fas fa-long-arrow-alt-right"><\/i> <strong>Closed<\/strong>/);
  assert.doesNotMatch(message.data.content, /Resolved with physical dice/);
  assert.equal(message.data.rolls.length, 2);
  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.rested").args[0];
  assert.deepEqual(hook.result.rolls.map((r) => [r.purpose, r.sides, r.value, r.by]), [["open-duration", 4, 1, "goblin-tokG"], ["wisdom-check", 20, 8, "goblin-tokG"]]);
  assert.deepEqual(hook.result.unused_dice, {});
});

test("revised-2e: with physical dice the GM types each die the rest needs, and the card says so", async () => {
  const t = table({ dialogs: { gm: { diceDialog: [[3], [18], [5]] } } });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  const { goblinToken } = t.tokens;
  await goblinToken.actor.update({ "flags.mindscape.revised-2e.psp": 0, "flags.mindscape.revised-2e.wis": 13, "flags.mindscape.revised-2e.mind": { state: "open", opened_by: "zero-psp" } });
  FakeRoll.made = [];
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], hours: 1 });
  // The companion names each die it still needs (4002); the GM's answers go with the next call.
  assert.deepEqual(rests(t).map((c) => c.params.dice), [{}, { "open-duration": [3] }, { "open-duration": [3], "wisdom-check": [18] }, { "open-duration": [3], "wisdom-check": [18, 5] }]);
  const asked = t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").map((s) => [s.arg.purpose, s.arg.sides, s.arg.needed, s.arg.purposeLabel]);
  assert.deepEqual(asked, [["open-duration", 4, 1, "Open duration"], ["wisdom-check", 20, 1, "Wisdom check"], ["wisdom-check", 20, 1, "Wisdom check"]]);
  assert.equal(done.summary, "After the rest: Goblin regains 3 PSPs (3 of 20). Goblin's mind closes during the rest (Wisdom check 10, rolled 5, after 2 tries).");
  assert.equal(profile(goblinToken.actor).mind.state, "closed");
  const [message] = t.clients.gm.ChatMessage.created;
  assert.match(message.data.content, /Resolved with physical dice/);
  assert.deepEqual(FakeRoll.made.map((r) => [r.formula, r.terms[0].results.map((x) => x.result)]), [["1d4", [3]], ["1d20", [18]], ["1d20", [5]]]);
  // A macro may roll them instead, whatever the setting.
  await goblinToken.actor.update({ "flags.mindscape.revised-2e.mind": { state: "open", opened_by: "zero-psp" } });
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], hours: 1, physical: false });
  assert.ok(!("dice" in rests(t).at(-1).params));
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").length, 3);
});

test("a world actor and its unlinked token rest side by side: each rest is written to its own actor", async () => {
  const t = table();
  const { goblin } = t.actors;
  const { goblinToken } = t.tokens;
  // The world goblin (every copy's prototype) has spent PSPs; its token's own goblin is full.
  await goblin.update({ "flags.mindscape.revised-2e.psp": 2, "flags.mindscape.revised-2e.psp_max": 40 });
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblin.uuid, goblinToken.uuid], hours: 1 });
  assert.deepEqual(rests(t)[0].params.combatants.map((c) => c.data.token), [null, { uuid: goblinToken.uuid, actorLink: false, name: goblinToken.name }]);
  assert.deepEqual(done.updates, [{ uuid: "Actor.goblin", update: { "flags.mindscape.revised-2e.psp": 7 } }]);
  assert.equal(profile(goblin).psp, 7);
  assert.equal(profile(goblinToken.actor).psp, 20);
  assert.equal(goblinToken.actor.updates.length, 0);
});

test("a token deleted while its rest waits in the queue is left out; with none left the GM is told and nothing is called", async () => {
  let release;
  const t = table({
    methods: defaultMethods({ "exchange.resolve": async (params) => { await new Promise((r) => { release = r; }); return revisedResult(params); } }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const gm = t.clients.gm.svc;
  const { ulcenToken, goblinToken, fenkaToken } = t.tokens;
  await fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 10 });
  const attack = gm.startAttack({ attackerUuid: ulcenToken.uuid, targetUuids: [goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!release) await tick(1);
  const both = makeApi(gm).rest({ tokenUuids: [goblinToken, fenkaToken], hours: 1 });
  const alone = makeApi(gm).rest({ tokenUuids: [goblinToken], hours: 1 });
  await tick(5);
  t.world.docs.delete(goblinToken.uuid);
  t.world.docs.delete(goblinToken.actor.uuid);
  release();
  await attack;
  const [done, none] = await Promise.all([both, alone]);
  assert.equal(rests(t).length, 1);
  assert.deepEqual(rests(t)[0].params.combatants.map((c) => c.data.token.uuid), [fenkaToken.uuid]);
  assert.equal(done.summary, "After the rest: Fenka regains 5 PSPs (15 of 40).");
  assert.equal(none, null);
  assert.deepEqual(t.clients.gm.notes.error, ["Every token of this request was deleted before its turn came, so nothing was done. Select tokens that are still on the scene and try again."]);
});

test("the current encounter's actors are left out of a rest, as of an end of round: the GM is told who; with only those, nobody rests", async () => {
  // The encounter keeps its own copy of its combatants and takes their sheets again
  // before each resolve: a rest written to their sheets meanwhile is not its to count.
  const { methods } = encounterMethods();
  const t = table({ methods, dialogs: { gm: { restDialog: { hours: 2 } } } });
  const gm = t.clients.gm.svc;
  const { ulcenToken, ulcen2Token, fenkaToken, goblinToken } = t.tokens;
  await gm.encounters.create([ulcenToken.uuid, fenkaToken.uuid]);
  await goblinToken.actor.update({ "flags.mindscape.revised-2e.psp": 4 });
  await fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 10 });
  const api = makeApi(gm);
  const done = await api.rest({ tokenUuids: [ulcen2Token, goblinToken, fenkaToken] });
  // The dialog names only who rests; Ulcen's second linked token is Ulcen, and stays out with him.
  assert.equal(t.clients.gm.dialogs.seen[0].arg.context.names, "Goblin");
  assert.deepEqual(rests(t).map((c) => c.params.combatants.map((x) => x.data.token.uuid)), [[goblinToken.uuid]]);
  assert.deepEqual(t.clients.gm.notes.info, ["Left out of the rest, as the current encounter keeps its own copy of them: Ulcen (mirror), Fenka."]);
  assert.equal(done.summary, "After the rest: Goblin regains 6 PSPs (10 of 20).");
  assert.equal(profile(fenkaToken.actor).psp, 10);

  // Only the encounter's actors: nobody rests, and the GM is told why.
  assert.equal(await api.rest({ tokenUuids: [ulcenToken], hours: 8 }), null);
  assert.deepEqual(t.clients.gm.notes.error, ["Nobody rested: the current psionic encounter keeps its own copy of Ulcen of Tyr. End the encounter first, then let them rest."]);
  assert.equal(rests(t).length, 1);

  // Once the encounter is over, they rest again.
  await gm.encounters.end();
  await api.rest({ tokenUuids: [ulcenToken], hours: 1 });
  assert.equal(rests(t).length, 2);
});

// ------------------------------------------------------------------ power-pool, combat-strength

test("power-pool: the dialog confirms one long rest, no hours are sent, the pool comes back", async () => {
  const t = table({ dialogs: { gm: { restDialog: {} } } });
  await powerPool(t);
  const { goblinToken } = t.tokens;
  const expected = t.clients.gm.svc.ref(goblinToken.actor, goblinToken, "foundry.dnd5e");
  // The default is the controlled tokens.
  globalThis.canvas = { tokens: { controlled: [goblinToken.object, t.tokens.ulcenToken.object] } };
  try {
    await makeApi(t.clients.gm.svc).rest();
  } finally {
    delete globalThis.canvas;
  }
  const asked = t.clients.gm.dialogs.seen[0].arg.context;
  assert.deepEqual([asked.askHours, asked.hours, asked.value, asked.names, asked.several], [false, null, null, "Goblin", false], "Ulcen has no power-pool profile");
  assert.deepEqual(rests(t)[0].params, { system: "power-pool", combatants: [expected] });
  assert.equal(profile(goblinToken.actor, "power-pool").pool, 4);
  assert.deepEqual(profile(goblinToken.actor, "power-pool").conditions, []);
  assert.equal(t.actors.goblin.flags.mindscape["power-pool"], undefined);
  const [message] = t.clients.gm.ChatMessage.created;
  assert.ok(message.data.content.includes("After the rest: Goblin regains 3 dice (4 in the pool). Goblin is no longer dazed."));
  assert.deepEqual(message.data.flags.mindscape, { card: "rest", system: "power-pool", hours: null });
});

/**
 * power-pool with the sheets read as the companion reads them (`poolImport`): the goblin
 * token keeps Fenka's token and a creature found nowhere ("ghost") by an action, and the
 * thrall (a world actor) by a die; Fenka is possessed.
 */
async function goblinControls(t) {
  await powerPool(t);
  const { goblinToken, fenkaToken } = t.tokens;
  const thrall = t.world.actor({ id: "thrall", name: "Thrall", type: "npc", flags: { mindscape: { "power-pool": { hit_dice: 2, die: 8, pool: 0, controlled_by: "goblin-tokG" } } } });
  await goblinToken.actor.update({
    "flags.mindscape.power-pool.controlling": [{ id: "fenka-tokF", kept_by: "action" }, { id: "thrall", kept_by: "die" }, { id: "ghost", kept_by: "action" }],
    "flags.mindscape.power-pool.dedicated": [{ purpose: "control", target: "thrall" }],
  });
  await fenkaToken.actor.update({ "flags.mindscape.power-pool": { hit_dice: 3, die: 8, pool: 0, psionic: true, controlled_by: "goblin-tokG", conditions: ["possessed"] } });
  return thrall;
}

test("power-pool: a resting controller's control kept by an action ends; the creature it holds so goes as a puppet and its own sheet is freed, a link kept by a die holds", async () => {
  // Seed 001: "Powers can't be maintained when a creature rests".
  const t = table({ methods: defaultMethods({ "adapters.import": poolImport }) });
  const thrall = await goblinControls(t);
  const { goblinToken, fenkaToken } = t.tokens;
  const gm = t.clients.gm.svc;
  const fenka = gm.ref(fenkaToken.actor, fenkaToken, "foundry.dnd5e");
  const done = await makeApi(gm).rest({ tokenUuids: [goblinToken], dialog: false });

  // Only Fenka goes along, as an attack sends it: the thrall is kept by a die, and "ghost" is found nowhere.
  const [call] = rests(t);
  assert.deepEqual(call.params.puppets, [fenka]);
  assert.deepEqual(call.params.combatants.map(combatantIdOfRef), ["goblin-tokG"]);
  assert.deepEqual(t.clients.gm.notes.warn, ["Creatures under psionic control here are not on this scene or in this world (ghost): if that control ends, their sheets will not show it."]);

  // Fenka's token's own actor is freed (its possession ends with the control); the goblin keeps the thrall and its die.
  assert.deepEqual([pp(fenkaToken.actor).controlled_by, pp(fenkaToken.actor).conditions, pp(fenkaToken.actor).pool], [null, [], 0]);
  assert.equal(t.actors.fenka.updates.length, 0, "Fenka's base actor is not written");
  assert.deepEqual(pp(goblinToken.actor).controlling, [{ id: "thrall", kept_by: "die", wave: null }]);
  assert.deepEqual([pp(goblinToken.actor).pool, pp(goblinToken.actor).dedicated], [3, [{ purpose: "control", target: "thrall" }]]);
  assert.equal(pp(thrall).controlled_by, "goblin-tokG");
  assert.equal(thrall.updates.length, 0);
  assert.deepEqual(done.updates.map((u) => u.uuid), [goblinToken.actor.uuid, fenkaToken.actor.uuid]);
  assert.deepEqual(done.updates[1].update, { "flags.mindscape.power-pool.conditions": [], "flags.mindscape.power-pool.controlled_by": null });

  // The card says so, naming Fenka by its token; the hook names the puppets sent.
  const summary = "After the rest: Goblin rests and spends no action to keep its control of Fenka and \"ghost\": the control ends. \"ghost\" was not given: its sheet still shows it under Goblin's control until it is changed. Goblin regains 2 dice (3 in the pool). Goblin is no longer dazed.";
  assert.equal(done.summary, summary);
  const [message] = t.clients.gm.ChatMessage.created;
  assert.match(message.data.content, /<li data-event="control-ended">Fenka is free of Goblin&#x27;s control<\/li>/);
  assert.match(message.data.content, /<th>Fenka<\/th><td>Conditions<\/td><td>Possessed <i class="fas fa-long-arrow-alt-right"><\/i> <strong>—<\/strong>/);
  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.rested").args[0];
  assert.deepEqual(hook.puppets, [fenkaToken.actor]);
  assert.deepEqual(hook.actors, [goblinToken.actor]);
  assert.deepEqual(hook.result.others.map((o) => o.id), ["fenka-tokF"]);
});


/** The companion's rest refusing Fenka's sheet (its die a 7) while Fenka goes as a puppet. */
const refusingFenka = (answer = restResult) => defaultMethods({
  "adapters.import": poolImport,
  "combatants.rest": patient((params) => {
    const i = (params.puppets ?? []).findIndex((ref) => ref.data.actor.name === "Fenka");
    if (i >= 0) throw { code: -32602, message: "Invalid params", data: { errors: [{ path: `/puppets/${i}/data/actor/flags/mindscape/power-pool/die`, message: "7 is not one of [4, 6, 8, 10, 12, 20]" }] } };
    return answer(params);
  }),
});

test("power-pool: a creature held by an action whose sheet the companion refuses is left out of its controller's rest, and the GM is told whose and why", RESENDS, async () => {
  const methods = refusingFenka();
  const t = table({ methods });
  await goblinControls(t);
  const { goblinToken, fenkaToken } = t.tokens;
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], dialog: false });
  assert.deepEqual(rests(t).map((c) => (c.params.puppets ?? []).map(combatantIdOfRef)), [["fenka-tokF"], []]);
  // The rest happened: the goblin's control by an action ends, Fenka's sheet is as it was.
  assert.match(done.summary, /^After the rest: Goblin rests and spends no action to keep its control of "fenka-tokF" and "ghost": the control ends\. "fenka-tokF" was not given/);
  assert.deepEqual(pp(goblinToken.actor).controlling, [{ id: "thrall", kept_by: "die", wave: null }]);
  assert.equal(pp(fenkaToken.actor).controlled_by, "goblin-tokG");
  assert.equal(t.clients.gm.notes.warn[1], "The companion refused the sheets of creatures under psionic control that went along (Fenka "
    + "(/data/actor/flags/mindscape/power-pool/die: 7 is not one of [4, 6, 8, 10, 12, 20])), so they were left out: if that control ends, "
    + "their sheets will not show it. Mend their psionic profiles (sheet header › Psionic profile).");
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("power-pool: the GM is told of a refused creature's sheet by its token's name, where the token was renamed", RESENDS, async () => {
  const t = table({ methods: refusingFenka() });
  await goblinControls(t);
  const { goblinToken, fenkaToken } = t.tokens;
  fenkaToken.name = "Masked Stranger";
  assert.equal(fenkaToken.actor.name, "Fenka");
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], dialog: false });
  assert.equal(rests(t).length, 2);
  assert.match(t.clients.gm.notes.warn[1], /went along \(Masked Stranger \(\/data\/actor\/flags\/mindscape\/power-pool\/die: 7 is not one of/);
  assert.doesNotMatch(t.clients.gm.notes.warn[1], /Fenka/);
});

test("power-pool: a rest refused with −32602 that names no problem (errors [], or none given) is sent once, and the GM sees the error", RESENDS, async () => {
  for (const data of [{ errors: [] }, {}, undefined]) {
    const methods = defaultMethods({
      "adapters.import": poolImport,
      "combatants.rest": patient(() => { throw { code: -32602, message: "Invalid params", ...(data ? { data } : {}) }; }),
    });
    const t = table({ methods });
    await goblinControls(t);
    const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.goblinToken], dialog: false });
    assert.equal(done, null);
    assert.equal(rests(t).length, 1, JSON.stringify(data));
    assert.equal(t.clients.gm.notes.error.length, 1);
    // Only the warning that "ghost" is found nowhere.
    assert.equal(t.clients.gm.notes.warn.length, 1);
    assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, "goblin-tokG");
  }
});

test("power-pool: after a creature is left out of a rest, the companion's warnings at /puppets/0 name the creature sent there", RESENDS, async () => {
  const answer = (params) => ({ ...restResult(params), warnings: ["/puppets/0: no psionic profile; treated as non-psionic"] });
  const t = table({ methods: refusingFenka(answer) });
  const thrall = await goblinControls(t);
  const { goblinToken } = t.tokens;
  // The goblin holds the thrall by an action too: Fenka goes first and is refused, the thrall then goes alone.
  await goblinToken.actor.update({ "flags.mindscape.power-pool.controlling": [{ id: "fenka-tokF", kept_by: "action" }, { id: "thrall", kept_by: "action" }], "flags.mindscape.power-pool.dedicated": [] });
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken], dialog: false });
  assert.deepEqual(rests(t).map((c) => (c.params.puppets ?? []).map(combatantIdOfRef)), [["fenka-tokF", "thrall"], ["thrall"]]);
  assert.equal(pp(thrall).controlled_by, null);
  assert.equal(pp(t.tokens.fenkaToken.actor).controlled_by, "goblin-tokG");
  const sheet = t.clients.gm.notes.warn.filter((w) => /treated as non-psionic/.test(w));
  assert.equal(sheet.length, 1);
  assert.match(sheet[0], /Thrall: no psionic profile; treated as non-psionic/);
  assert.doesNotMatch(sheet[0], /Fenka/);
});

test("power-pool: a creature that rests with its controller is not sent as a puppet: it is set free first and rests free; a controller's own sheet says whom to read", async () => {
  const t = table({ methods: defaultMethods({ "adapters.import": poolImport }) });
  await goblinControls(t);
  const { goblinToken, fenkaToken } = t.tokens;
  await goblinToken.actor.update({ "flags.mindscape.power-pool.controlling": [{ id: "fenka-tokF", kept_by: "action" }] });
  const done = await makeApi(t.clients.gm.svc).rest({ tokenUuids: [goblinToken, fenkaToken], dialog: false });
  assert.equal(rests(t)[0].params.puppets, undefined);
  assert.deepEqual(t.clients.gm.notes.warn, []);
  assert.deepEqual([pp(fenkaToken.actor).controlled_by, pp(fenkaToken.actor).pool], [null, 3]);
  assert.match(done.summary, /^After the rest: Goblin rests and spends no action to keep its control of Fenka: the control ends\. .* Fenka regains 3 dice \(3 in the pool\)\.$/);
  // Fenka controls nobody: only the goblin's sheet was read for its control.
  const read = t.daemon.calls.filter((c) => c.method === "adapters.import").map((c) => c.params.data.actor.name);
  assert.deepEqual(read, ["Goblin"]);
});

test("power-pool: hours from a macro are refused, as the companion would", async () => {
  const t = table();
  await powerPool(t);
  assert.equal(await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.goblinToken], hours: 8 }), null);
  assert.equal(t.clients.gm.notes.error[0], "A rest in Power pool dice contests is one long rest and takes no hours: leave hours out.");
  assert.equal(rests(t).length, 0);
  // The fake companion refuses them too (API.md): the module never sends them.
  assert.throws(() => restResult({ system: "power-pool", combatants: [], hours: 8 }), (e) => e.code === -32602);
});

test("combat-strength has no rest: the GM is told so and the companion is not called", async () => {
  const t = table({ dialogs: { gm: { restDialog: { hours: 8 } } } });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  assert.equal(await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken] }), null);
  assert.match(t.clients.gm.notes.error[0], /^Attack and defense strength \(ten segments\) has no rule for resting/);
  assert.equal(t.clients.gm.dialogs.seen.length, 0);
  assert.equal(rests(t).length, 0);
});

test("tokens without a profile for the system rest nobody, with a message that says why", async () => {
  const t = table();
  assert.equal(await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.guardToken], hours: 8 }), null);
  assert.match(t.clients.gm.notes.error[0], /None of these tokens has a psionic profile for AD&D 2e revised psionics/);
  assert.equal(rests(t).length, 0);
});

test("a guard with no profile rests while a psionic attack's mind is open on it; once the companion wrote it closed and emptied its conditions, it rests no more", async () => {
  const t = table();
  const { guardToken, ulcenToken } = t.tokens;
  const api = makeApi(t.clients.gm.svc);
  const sent = () => rests(t).at(-1).params.combatants.map((ref) => ref.data.actor._id);
  await t.guard.update({ "flags.mindscape.revised-2e": { mind: { state: "open", opened_by: "attack", locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: false, rounds_open: 1 } } });
  await api.rest({ tokenUuids: [ulcenToken, guardToken], hours: 8 });
  assert.deepEqual(sent(), ["ulcen", "guard"]);
  // What the companion's write-back leaves (adapters/foundry.py): the whole default closed
  // mind, and conditions emptied once a daze ended.
  const closed = { state: "closed", opened_by: null, locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: false, rounds_open: 0 };
  await t.guard.update({ "flags.mindscape.revised-2e": { mind: closed, conditions: [], condition_rounds: {} } });
  await api.rest({ tokenUuids: [ulcenToken, guardToken], hours: 8 });
  assert.equal(rests(t).length, 2);
  assert.deepEqual(sent(), ["ulcen"]);
  assert.equal(await api.rest({ tokenUuids: [guardToken], hours: 8 }), null);
  assert.match(t.clients.gm.notes.error[0], /None of these tokens has a psionic profile for AD&D 2e revised psionics/);
  assert.equal(rests(t).length, 2);
});

// ------------------------------------------------------------------ who may, and failures

test("a player is refused, on their own client and when asking the GM's client directly", async () => {
  const t = table({ dialogs: { p1: { restDialog: { hours: 8 } } } });
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 10 });
  assert.equal(await makeApi(t.clients.p1.svc).rest({ tokenUuids: [t.tokens.ulcenToken.uuid] }), null);
  assert.match(t.clients.p1.notes.error[0], /Only a GM may give actors a psionic rest/);
  assert.equal(t.clients.p1.dialogs.seen.length, 0);
  // Forged requests over the relay: the GM's client trusts the sender the server names.
  for (const name of ["prepareRest", "rest"]) {
    const err = await t.clients.p1.svc.relay.toGM(name, { tokenUuids: [t.tokens.ulcenToken.uuid], hours: 8 }).catch((e) => e);
    assert.equal(err.key, "MINDSCAPE.Error.RestGMOnly", name);
  }
  assert.equal(rests(t).length, 0);
  assert.equal(profile(t.actors.ulcen).psp, 10);
});

test("the companion down: one error for the GM, no unhandled rejection, and the actors free for the next call", async () => {
  const t = table();
  const gm = t.clients.gm.svc;
  await gm.describe("revised-2e");
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const fetch = gm.env.fetch;
    gm.env.fetch = async () => { throw new TypeError("Failed to fetch"); };
    assert.equal(await makeApi(gm).rest({ tokenUuids: [t.tokens.ulcenToken], hours: 2 }), null);
    await tick(10);
    assert.equal(t.clients.gm.notes.error.length, 1);
    assert.match(t.clients.gm.notes.error[0], /not answering at http:\/\/127\.0\.0\.1:39393/);
    assert.equal(gm.exchanges.busy(t.actors.ulcen.uuid), false);
    gm.env.fetch = fetch;
    await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 30 });
    assert.ok(await makeApi(gm).rest({ tokenUuids: [t.tokens.ulcenToken], hours: 2 }));
    assert.equal(profile(t.actors.ulcen).psp, 40);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("a rest waits for an exchange on one of its actors, then rests from what that exchange wrote", async () => {
  const order = [];
  const t = table({
    methods: defaultMethods({
      "exchange.resolve": async (params) => { order.push("resolve start"); await tick(30); order.push("resolve end"); return revisedResult(params); },
      "combatants.rest": (params) => { order.push("rest"); return restResult(params); },
    }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const gm = t.clients.gm.svc;
  const attack = gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!order.length) await tick(1);
  await Promise.all([attack, makeApi(gm).rest({ tokenUuids: [t.tokens.ulcenToken], hours: 1 })]);
  assert.deepEqual(order, ["resolve start", "resolve end", "rest"]);
  assert.equal(rests(t)[0].params.combatants[0].data.actor.flags.mindscape["revised-2e"].psp, 32, "Ulcen as the exchange left him (40 - 8)");
  assert.equal(profile(t.actors.ulcen).psp, 37);
});

// ------------------------------------------------------------------ the dialog itself

test("the rest dialog asks again until the hours are whole hours in range; a long rest is only confirmed", async () => {
  const forms = [{ hours: "0" }, { hours: "2.5" }, { hours: "5" }];
  const shown = [];
  globalThis.game = { i18n: makeI18n() };
  globalThis.foundry = {
    applications: {
      handlebars: { renderTemplate: async (file, ctx) => renderModuleTemplate(file.split("/").pop().replace(/\.hbs$/, ""), ctx) },
      api: {
        DialogV2: {
          wait: async ({ content, buttons }) => {
            shown.push(content);
            const form = forms.shift() ?? {};
            const elements = Object.entries(form).map(([name, value]) => ({ name, value, type: "number" }));
            return buttons.find((b) => b.action === "ok").callback({}, { form: { elements } });
          },
        },
      },
    },
  };
  try {
    const context = { askHours: true, min: 1, max: 1000, value: 8, names: "Ulcen of Tyr", systemLabel: "AD&D 2e revised psionics (MTHAC0/MAC)" };
    assert.deepEqual(await restDialog({ context }), { hours: 5 });
    assert.equal(shown.length, 3);
    // One creature: "does"; several (restDialogContext's `several`): "do".
    assert.match(shown[0], /How many full hours does Ulcen of Tyr sleep or meditate\?/);
    assert.match(shown[0], /name="hours" min="1" max="1000" step="1" value="8"/);
    assert.doesNotMatch(shown[0], /mindscape-status error/);
    assert.match(shown[1], /value="0"[\s\S]*Type a whole number of hours from 1 to 1000\./);
    assert.match(shown[2], /value="2\.5"/);
    assert.deepEqual(await restDialog({ context: { askHours: false, names: "Goblin", systemLabel: "Power pool dice contests" } }), {});
    assert.match(shown[3], /Goblin takes one long rest\./);
    assert.doesNotMatch(shown[3], /name="hours"/);
    forms.push({ hours: "8" }, {});
    await restDialog({ context: { ...context, names: "Ulcen of Tyr, Fenka", several: true } });
    assert.match(shown[4], /How many full hours do Ulcen of Tyr, Fenka sleep or meditate\?/);
    await restDialog({ context: { askHours: false, names: "Goblin, Fenka", several: true, systemLabel: "Power pool dice contests" } });
    assert.match(shown[5], /Goblin, Fenka take one long rest\./);
  } finally {
    delete globalThis.foundry;
    delete globalThis.game;
  }
});

test("the rest dialog names who rests by their tokens", async () => {
  const t = table({ dialogs: { gm: { restDialog: { hours: 2 } } } });
  t.tokens.fenkaToken.name = "Fenka in the mask";
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken, t.tokens.fenkaToken] });
  assert.equal(t.clients.gm.dialogs.seen[0].arg.context.names, "Ulcen of Tyr, Fenka in the mask");
});

test("a world actor named beside a token rests through its token on that token's scene, not the active one", async () => {
  const t = table();
  t.world.token({ id: "tokU", sceneId: "copy", name: "Ulcen of Tyr", actor: t.actors.ulcen, actorLink: true });
  t.world.activeSceneId = "copy";
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.goblinToken.uuid, "Actor.ulcen"], hours: 8 });
  assert.deepEqual(rests(t)[0].params.combatants.map((c) => c.data.token?.uuid ?? null), [t.tokens.goblinToken.uuid, t.tokens.ulcenToken.uuid]);
});

test("a rest goes to the companion with the world's house rules for its system", async () => {
  const t = table();
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CLOSE-LAST-PSP": false } });
  await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken], hours: 8 });
  assert.deepEqual(rests(t)[0].params.options, { "H-2E-CLOSE-LAST-PSP": false });
});

test("hours given with the dialog are its first value, kept within the system's range", async () => {
  for (const [hours, value] of [[3, 3], [2000, 1000], [0, 1]]) {
    const t = table({ dialogs: { gm: { restDialog: null } } });
    await makeApi(t.clients.gm.svc).rest({ tokenUuids: [t.tokens.ulcenToken], hours, dialog: true });
    assert.equal(t.clients.gm.dialogs.seen[0].arg.context.value, value, String(hours));
    assert.equal(rests(t).length, 0);
  }
});
