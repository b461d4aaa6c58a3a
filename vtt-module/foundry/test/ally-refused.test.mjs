// power-pool: the companion refuses a single attack's exchange because of one ally (a
// 4001 whose `combatant` names it: `ally-psionic`, `ally-mindless`, `defender-unaware`
// for a joiner now asleep, …). Over the fakes: that ally is left out and the exchange
// resolved once more with the others and the dice already typed, the GM (and the owner
// of a creature that joined by its own choice) told who and why; a second refusal, or
// one about the attacker or without a `combatant`, fails the attack as before.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RulesError } from "../mindscape/scripts/errors.js";
import { combatantIdOfRef, defaultMethods, makeTable, poolImport } from "../test-support/scenario.mjs";

const POOL = "power-pool";
const SWARM = "imagination-swarm";
const DEFENSES = [{ id: "pinnacle-of-will" }, { id: SWARM, draws_allies: true }];
const describe = ({ system }) => ({
  id: system,
  modes: { attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true }], defenses: DEFENSES },
  tables: { awareness_conditions: ["asleep"] },
  combatant_schema: { type: "object", properties: {} },
  house_rules: [],
});
const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab"], defenses: ["pinnacle-of-will"], ...extra });
const refIds = (refs) => (refs ?? []).map(combatantIdOfRef);
const refuse = (rule, combatant) => ({ code: 4001, message: "The rules forbid it", data: { rule, detail: `refused ${combatant ?? "it"}`, ...(combatant ? { combatant } : {}) } });
const resolved = { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] };

// Ulcen (Ann's) attacks the goblin (the GM's NPC), who knows the swarm and draws Skum
// (non-psionic) in; Turncoat (Bo's, psionic) joins by its own choice and brings its
// thrall along as a puppet. `resolve(params, n)` answers the n-th `exchange.resolve`.
async function table(resolve) {
  const calls = [];
  const methods = defaultMethods({
    "systems.describe": describe,
    "adapters.import": poolImport,
    "exchange.resolve": (params) => { calls.push(structuredClone(params)); return resolve(params, calls.length); },
  });
  const t = makeTable({
    methods,
    dialogs: {
      gm: { defenseDialog: (arg) => ({ mode: SWARM, allies: arg.context.allies.map((a) => a.uuid), timedOut: false }), diceDialog: [[5]] },
      p2: { joinDialog: { join: "0", timedOut: false } },
    },
  });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  t.actors.ulcen.flags.mindscape[POOL] = pool();
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool();
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool({ defenses: [SWARM] });
  const place = (name, profile, { owner = null, disposition = -1 } = {}) => {
    const id = name.toLowerCase();
    const actor = t.world.actor({ id, name, type: "npc", disposition, ownership: owner ? { [t[owner].id]: 3 } : {}, flags: { mindscape: { [POOL]: profile } } });
    t.world.token({ id: `tok${id}`, name, actor, actorLink: true });
  };
  place("Skum", { psionic: false, hit_dice: 2, die: 8 });
  place("Turncoat", pool({ hit_dice: 2, die: 6, pool: 2, defenses: [SWARM], controlling: [{ id: "thrall", kept_by: "action" }] }), { owner: "p2" });
  place("Thrall", pool({ controlled_by: "turncoat" }), { disposition: 1 });
  const gm = t.clients.gm;
  const attack = () => gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mental-stab" } }, gm.game.user);
  return { t, gm, calls, attack };
}

const resolvedHooks = (gm) => gm.Hooks.called.filter((c) => c.name === "mindscape.resolved");
const settle = () => new Promise((r) => setTimeout(r, 20));

test("an ally the companion refuses (4001 naming it) is left out, and the exchange resolves once more with the others and the dice already typed", async () => {
  // The first call asks for the defense die, then refuses the joiner (asleep since it joined).
  const { t, gm, calls, attack } = await table((params, n) => {
    if (!params.dice?.defense) throw { code: 4002, message: "Dice needed", data: { purpose: "defense", sides: 8, needed: 1 } };
    if (refIds(params.allies).includes("turncoat")) throw refuse("defender-unaware", "turncoat");
    return { ...resolved, summary: `Rebuffed on call ${n}.` };
  });
  await gm.game.settings.set("mindscape", "physicalDice", true);
  const [outcome] = await attack();
  assert.equal(outcome.summary, "Rebuffed on call 3.");
  assert.equal(calls.length, 3);
  assert.deepEqual(refIds(calls[1].allies), ["skum", "turncoat"]);
  assert.deepEqual(calls[1].defenses, { turncoat: { mode: SWARM } });
  assert.deepEqual(refIds(calls[1].puppets), ["thrall"]);
  // Without the joiner: its defense and the puppet only it brought go too; the die typed is used again.
  assert.deepEqual(refIds(calls[2].allies), ["skum"]);
  assert.equal(calls[2].defenses, undefined);
  assert.equal(calls[2].puppets, undefined);
  assert.deepEqual(calls[2].dice, { defense: [5] });
  assert.equal(gm.dialogs.seen.filter((s) => s.kind === "diceDialog").length, 1);
  // One card and one hook, for the exchange that was resolved, with the allies it had.
  assert.equal(resolvedHooks(gm).length, 1);
  assert.deepEqual(resolvedHooks(gm)[0].args[0].allies.map((a) => a.name), ["Skum"]);
  assert.equal(gm.ChatMessage.created.length, 1);
  assert.deepEqual(gm.notes.warn, ["The companion refused Turncoat as an ally of Goblin (defender-unaware: refused turncoat), so the exchange was resolved without Turncoat."]);
  // Bo, whose creature joined by its own choice, is told on his own client: the
  // companion's reason, not its rule's id (that is for the GM).
  await settle();
  assert.deepEqual(t.clients.p2.notes.warn, ["The companion refused Turncoat in the defense of Goblin (refused turncoat), so Turncoat did not join: the exchange was resolved without it."]);
  assert.deepEqual(t.clients.p1.notes.warn, []);
});

test("an ally drawn in that the companion refuses is left out, and nobody but the GM is told, not even its owner", async () => {
  const { t, gm, calls, attack } = await table((params) => {
    if (refIds(params.allies).includes("skum")) throw refuse("ally-psionic", "skum");
    return resolved;
  });
  // Ann owns Skum: drawn in by the goblin's choice, not its own, it is not hers to hear of.
  t.world.docs.get("Actor.skum").ownership.pl0001 = 3;
  await attack();
  assert.equal(calls.length, 2);
  assert.deepEqual(refIds(calls[1].allies), ["turncoat"]);
  assert.deepEqual(calls[1].defenses, { turncoat: { mode: SWARM } });
  assert.deepEqual(refIds(calls[1].puppets), ["thrall"]);
  assert.equal(gm.notes.warn.length, 1);
  assert.match(gm.notes.warn[0], /refused Skum as an ally of Goblin \(ally-psionic/);
  await settle();
  assert.deepEqual(t.clients.p2.notes.warn, []);
  assert.deepEqual(t.clients.p1.notes.warn, []);
});

test("when the exchange without that ally is refused too, the attack fails as before and nothing is resolved", async () => {
  // Refuses whichever ally comes first: the one drawn in, then the joiner.
  const { gm, calls, attack } = await table((params) => { throw refuse("ally-mindless", refIds(params.allies)[0]); });
  await assert.rejects(attack(), (e) => e instanceof RulesError && e.data.combatant === "turncoat");
  assert.equal(calls.length, 2, "one retry only");
  assert.deepEqual(calls.map((p) => refIds(p.allies)), [["skum", "turncoat"], ["turncoat"]]);
  assert.equal(resolvedHooks(gm).length, 0);
  assert.equal(gm.ChatMessage.created.length, 0);
  assert.deepEqual(gm.notes.warn, []);
});

test("a refusal naming the attacker, the mind struck, or nobody fails the attack at once, as before", async () => {
  for (const combatant of ["ulcen", "goblin-tokG", undefined]) {
    const { gm, calls, attack } = await table(() => { throw refuse("ally-controlled", combatant); });
    await assert.rejects(attack(), (e) => e instanceof RulesError && e.data.combatant === combatant);
    assert.equal(calls.length, 1, String(combatant));
    assert.equal(gm.ChatMessage.created.length, 0);
    assert.deepEqual(gm.notes.warn, []);
  }
});

test("a joiner left out stays out when the defender then chooses again (a refusal of its own choice)", async () => {
  const { gm, calls, attack } = await table((params) => {
    if (refIds(params.allies).includes("turncoat")) throw refuse("defender-unaware", "turncoat");
    if (!params.defense?.pool_dice && calls.length === 2) throw refuse("pool-dice-exceed-pool", "goblin-tokG");
    return resolved;
  });
  await attack();
  assert.equal(calls.length, 3);
  // The goblin was asked again after the joiner was left out; Turncoat did not come back.
  assert.equal(gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 2);
  assert.deepEqual(calls.map((p) => refIds(p.allies)), [["skum", "turncoat"], ["skum"], ["skum"]]);
  assert.equal(calls[2].defenses, undefined);
  assert.equal(calls[2].puppets, undefined);
  assert.equal(gm.ChatMessage.created.length, 1);
  assert.deepEqual(gm.notes.warn.map((w) => w.split(" (")[0]), ["The companion refused the defense chosen for Goblin", "The companion refused Turncoat as an ally of Goblin"]);
});

test("a mind asked again is not offered the ally the companion refused", async () => {
  const { gm, calls, attack } = await table((params) => {
    if (refIds(params.allies).includes("skum")) throw refuse("ally-mindless", "skum");
    if (calls.length === 2) throw refuse("pool-dice-exceed-pool", "goblin-tokG");
    return resolved;
  });
  await attack();
  assert.deepEqual(calls.map((p) => refIds(p.allies)), [["skum", "turncoat"], ["turncoat"], ["turncoat"]]);
  const asked = gm.dialogs.seen.filter((s) => s.kind === "defenseDialog");
  assert.deepEqual(asked.map((s) => s.arg.context.allies.map((a) => a.name)), [["Skum"], []]);
  assert.equal(gm.ChatMessage.created.length, 1);
});

test("in a psionic wave too, the mind asked again is not offered the ally the companion refused", async () => {
  const { t, gm, calls } = await table((params) => {
    if (refIds(params.allies).includes("skum")) throw refuse("ally-mindless", "skum");
    if (calls.length === 2) throw refuse("pool-dice-exceed-pool", "goblin-tokG");
    return resolved;
  });
  t.actors.ulcen.flags.mindscape[POOL] = pool({ attacks: ["psionic-wave"] });
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid], attack: { mode: "psionic-wave" } }, gm.game.user);
  assert.deepEqual(calls.map((p) => refIds(p.allies)), [["skum", "turncoat"], ["turncoat"], ["turncoat"]]);
  const asked = gm.dialogs.seen.filter((s) => s.kind === "defenseDialog" && s.arg.context.defenderName === "Goblin");
  assert.deepEqual(asked.map((s) => s.arg.context.allies.map((a) => a.name)), [["Skum"], []]);
  assert.equal(gm.ChatMessage.created.length, 1);
});

test("a creature under control found nowhere is told to the GM once for the exchange, also when an ally refused makes it resolve once more", async () => {
  const { t, gm, calls, attack } = await table((params) => {
    if (refIds(params.allies).includes("skum")) throw refuse("ally-psionic", "skum");
    return resolved;
  });
  // The goblin, the mind struck, holds "ghost", which is on no scene and not in the world.
  t.tokens.goblinToken.actor.flags.mindscape[POOL].controlling = [{ id: "ghost", kept_by: "action" }];
  await attack();
  assert.equal(calls.length, 2);
  assert.deepEqual(gm.notes.warn.filter((w) => w.includes("(ghost)")), [
    "Creatures under psionic control here are not on this scene or in this world (ghost): if that control ends, their sheets will not show it.",
  ]);
});
