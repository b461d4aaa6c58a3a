// Which defenses a defender is offered, and what is remembered. The daemon's rule per
// system when a combatant has no `defenses` list (COMBATANTS.md): revised-2e and
// power-pool know none, a psionic combat-strength creature knows all five; a non-psionic
// mind knows none anywhere. Defenses in revised-2e are raised without knowing the attack
// (RULES.md §1.4), so only power-pool's prompt names the attack mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isPsionic, knownModeIds, knownModes, modesFromDescription } from "../mindscape/scripts/requests.js";
import { makeTable, defaultMethods, renderModuleTemplate } from "../test-support/scenario.mjs";
import { tick } from "../test-support/fakes.mjs";

test("known defenses follow the daemon's rule for each system when the list is absent", () => {
  assert.deepEqual(knownModeIds("revised-2e", { kind: "psionicist", psp_max: 20 }, "defenses"), []);
  assert.deepEqual(knownModeIds("revised-2e", { psp_max: 20, defenses: ["mind-blank"] }, "defenses"), ["mind-blank"]);
  assert.deepEqual(knownModeIds("revised-2e", { kind: "nonpsionic" }, "defenses"), []);
  assert.deepEqual(knownModeIds("revised-2e", {}, "defenses"), [], "kind is nonpsionic when psp_max is absent");
  assert.equal(knownModeIds("combat-strength", { attack_strength: 20, defense_strength: 20 }, "defenses"), null, "all five");
  assert.deepEqual(knownModeIds("combat-strength", {}, "defenses"), []);
  assert.deepEqual(knownModeIds("combat-strength", { psionic: false, defense_strength: 0 }, "defenses"), []);
  assert.deepEqual(knownModeIds("power-pool", { hit_dice: 3, die: 8, psionic: true }, "defenses"), []);
  assert.deepEqual(knownModeIds("power-pool", { hit_dice: 3, die: 8, psionic: false, defenses: ["blank-mind"] }, "defenses"), []);
  assert.deepEqual(knownModeIds("power-pool", { hit_dice: 3, die: 8, defenses: ["blank-mind"] }, "defenses"), ["blank-mind"]);
  assert.equal(knownModeIds("revised-2e", null, "defenses"), null, "unknown: the daemon decides");
  assert.equal(isPsionic("revised-2e", { kind: "wild-talent", psp_max: 0 }), true);
  const all = modesFromDescription("combat-strength", {}).defenses;
  assert.equal(knownModes(all, knownModeIds("combat-strength", { defense_strength: 10 }, "defenses")).length, 5);
});

test("a mind is psionic by its own system's measure: revised-2e's PSPs above 0, either combat-strength strength, either power-pool list; a plugin's unless it says not", () => {
  assert.equal(isPsionic("revised-2e", { psp_max: 0 }), false);
  assert.equal(isPsionic("revised-2e", { psp_max: 12 }), true);
  assert.equal(isPsionic("combat-strength", { attack_strength: 30 }), true);
  assert.equal(isPsionic("combat-strength", { defense_strength_max: 30, defense_strength: 0 }), true);
  assert.equal(isPsionic("combat-strength", { psionic: true }), true);
  assert.equal(isPsionic("power-pool", { defenses: ["blank-mind"] }), true);
  assert.equal(isPsionic("power-pool", { attacks: ["mental-stab"], psionic: false }), false);
  assert.equal(isPsionic("my-plugin", {}), true);
  assert.equal(isPsionic("my-plugin", { kind: "nonpsionic" }), false);
  assert.equal(isPsionic("my-plugin", { psionic: false }), false);
});

test("modes listed with their type or role, singular maps, or an empty list from the companion, are read as the others are", () => {
  const byRole = modesFromDescription("revised-2e", { modes: [{ id: "mind-thrust", role: "attack" }, { id: "mind-blank", type: "defense" }] });
  assert.deepEqual(byRole, { attacks: [{ id: "mind-thrust", role: "attack" }], defenses: [{ id: "mind-blank", type: "defense" }] });
  const empty = modesFromDescription("revised-2e", { modes: { attacks: [], defenses: [] } });
  assert.equal(empty.attacks.length, 5, "the fixed ids");
  assert.equal(empty.defenses.length, 5);
  const singular = modesFromDescription("my-plugin", { modes: { attack: { zap: 2 }, defense: ["ward", 7] } });
  assert.deepEqual(singular, { attacks: [{ cost: 2, id: "zap" }], defenses: [{ id: "ward" }] });
});

function setProfile(t, token, profile) {
  token.actor.flags.mindscape["revised-2e"] = profile;
}

test("a non-psionic defender is not asked and raises no defense; its stale default is not used", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  setProfile(t, t.tokens.goblinToken, { kind: "nonpsionic" });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.equal(resolve.params.defense, null);
});

test("revised-2e: a psionic defender without a defenses list knows none and is not offered the five", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } } });
  setProfile(t, t.tokens.fenkaToken, { kind: "psionicist", psp: 30, psp_max: 40 });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.p2.dialogs.seen.length, 0);
  assert.equal(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, null);
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("only known defenses are offered; an answer outside them is not used and never remembered", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "tower-of-iron-will" } } } });
  setProfile(t, t.tokens.fenkaToken, { kind: "psionicist", psp: 30, psp_max: 40, defenses: ["mind-blank"] });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const asked = t.clients.p2.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.deepEqual(asked.defenses.map((d) => d.id), ["mind-blank"]);
  assert.equal(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, null);
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("a player's client that adds paid: true to its defense answer raises nothing for free: only what the dialog answers is taken", async () => {
  // revised-2e's `paid` (the defense was paid earlier this round) lets a mind at 0 PSPs,
  // or a stunned one, raise its defense for nothing: no dialog ever sends it.
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "mind-blank", paid: true, psp: 99, extra: { x: 1 } } } } });
  setProfile(t, t.tokens.fenkaToken, { kind: "psionicist", psp: 0, psp_max: 40, defenses: ["mind-blank"] });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a remembered default the defender no longer knows is not preselected nor used at the timeout", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: (arg) => ({ mode: arg.fallback, timedOut: true }) } } });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "tower-of-iron-will" });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const arg = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg;
  assert.equal(arg.fallback, null);
  assert.equal(arg.context.noneSelected, true);
  assert.equal(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, null);
});

test("the question says who sees it: asked on the GM's own client (an NPC), that players do not; asked on an owner's, that only they and the GM do", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } }, p2: { defenseDialog: { mode: "thought-shield" } } } });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const npc = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  const owned = t.clients.p2.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.equal(npc.askedHere, true);
  assert.equal(owned.askedHere, undefined);
  assert.match(renderModuleTemplate("defense-dialog", npc), /The players do not see this\./);
  assert.match(renderModuleTemplate("defense-dialog", owned), /Only you and the GM see this\./);
});

test("combat-strength: a psionic defender without a list is offered all five defenses", async () => {
  const methods = defaultMethods({
    "systems.describe": ({ system }) => ({ id: system, modes: {} }),
    "adapters.import": ({ data }) => ({ combatant: { name: data.actor.name, attack_strength: 30, defense_strength: 30 } }),
    "exchange.resolve": () => ({ system: "combat-strength", outcome: "damage", attacker: {}, defender: {}, rolls: [], events: [], summary: "", updates: [] }),
  });
  const t = makeTable({ methods, dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", range: "short" } });
  const arg = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg;
  assert.equal(arg.context.defenses.length, 5);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("revised-2e: the defense prompt does not name the attack mode; power-pool's does", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "ego-whip", multiplier: 1 } });
  const context = t.clients.gm.dialogs.seen.find((s) => s.kind === "defenseDialog").arg.context;
  assert.equal(context.attackLabel, null);
  const html = renderModuleTemplate("defense-dialog", context);
  assert.doesNotMatch(html, /Ego whip/i);
  assert.match(html, /Ulcen of Tyr attacks Goblin psionically/);
  const pp = renderModuleTemplate("defense-dialog", { ...context, system: "power-pool", attackLabel: "Mental stab" });
  assert.match(pp, /with Mental stab/);
});

test("the GM's own defense prompt cannot hang the attack: the timeout gives the default", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: () => new Promise(() => {}) } } });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 0);
  t.clients.gm.svc.defenseGraceMs = 20;
  const out = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(out[0].outcome, "hit");
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a player's defense that reaches the GM after the dialog's own timeout, within the grace, is the one raised", async () => {
  const t = makeTable({ dialogs: { p1: { defenseDialog: async () => { await tick(30); return { mode: "mind-blank" }; } } } });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 0);
  const out = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.goblinToken.uuid, targetUuids: [t.tokens.ulcenToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(out[0].outcome, "hit");
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a mind owned by two connected players is defended by the one whose character it is", async () => {
  const t = makeTable({ dialogs: { p1: { defenseDialog: { mode: "thought-shield" } }, p2: { defenseDialog: { mode: "mind-blank" } } } });
  t.actors.ulcen.ownership.pl0002 = 3;
  t.p2.character = t.actors.ulcen;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.goblinToken.uuid, targetUuids: [t.tokens.ulcenToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a defense answer marked cancelled is not remembered: the defender's default stays as it was", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null, cancelled: true } } } });
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(t.tokens.goblinToken.actor.flags.mindscape.defaultDefense["revised-2e"], "mind-blank");
});

test("a player asked for a defense against an attacker whose token is hidden reads \"An unseen mind\", not its name; the GM answering for an NPC reads the name", async () => {
  const t = makeTable({ dialogs: { p1: { defenseDialog: { mode: null } }, gm: { defenseDialog: { mode: null } } } });
  t.tokens.goblinToken.hidden = true;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.goblinToken.uuid, targetUuids: [t.tokens.ulcenToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  const [asked] = t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog");
  assert.equal(asked.arg.context.attackerName, "An unseen mind");
  assert.doesNotMatch(JSON.stringify(asked.arg.context), /Goblin/);
  // Fenka, her token hidden too, attacks the goblin: the GM, answering for the NPC, reads her name.
  t.tokens.fenkaToken.hidden = true;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  const [gm] = t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog");
  assert.equal(gm.arg.context.attackerName, "Fenka");
});

test("a defense dialog closed or timed out does not change the defense remembered for next time", async () => {
  for (const answer of [{ mode: null, cancelled: true }, { mode: "thought-shield", timedOut: true }]) {
    const t = makeTable({ dialogs: { p2: { defenseDialog: answer } } });
    await t.tokens.fenkaToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
    await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
    assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
    assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense["revised-2e"], "mind-blank", JSON.stringify(answer));
  }
});
