// Request building and response mapping (API.md: exchange.resolve / exchange.odds params,
// COMBATANTS.md field names, RULES.md mode ids).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  adapterFor, allyDrawingModeIds, attackFieldsFor, attackFromForm, combatantRef, defenseFromChoice, exchangeParams,
  dispositionOf, knownModes, mayJoinAsAlly, modesFromDescription, oddsParams, oddsView,
} from "../mindscape/scripts/requests.js";

test("each Foundry system is read by its adapter, others by foundry.generic", () => {
  assert.equal(adapterFor("dnd5e"), "foundry.dnd5e");
  assert.equal(adapterFor("ose"), "foundry.ose");
  assert.equal(adapterFor("ars"), "foundry.ars");
  assert.equal(adapterFor("pf2e"), "foundry.generic");
  // A daemon that has no such adapter: the generic one.
  assert.equal(adapterFor("dnd5e", [{ id: "foundry.generic" }]), "foundry.generic");
  assert.equal(adapterFor("add2e", [{ id: "foundry.add2e" }, { id: "foundry.generic" }]), "foundry.add2e");
});

test("a combatant is sent as {adapter, data: {actor, token: {uuid, actorLink}}} (the brief's shape)", () => {
  const actor = { toObject: () => ({ _id: "a1", name: "Zanna", system: { abilities: { int: { value: 17 } } } }) };
  const ref = combatantRef(actor, { uuid: "Scene.s.Token.t", actorLink: false }, "foundry.dnd5e");
  assert.deepEqual(ref, { adapter: "foundry.dnd5e", data: { actor: actor.toObject(), token: { uuid: "Scene.s.Token.t", actorLink: false } } });
  assert.equal(combatantRef(actor, null, "foundry.generic").data.token, null);
});

test("revised-2e attacks carry mode, multiplier and range (API.md example)", () => {
  assert.deepEqual(attackFromForm("revised-2e", { mode: "mind-thrust", multiplier: "4", range: "short", physical: true }), { mode: "mind-thrust", multiplier: 4, range: "short" });
  assert.deepEqual(attackFromForm("revised-2e", { mode: "ego-whip" }), { mode: "ego-whip", multiplier: 1, range: "short" });
});

test("combat-strength attacks carry mode and range; power-pool attacks mode and pool_dice", () => {
  assert.deepEqual(attackFromForm("combat-strength", { mode: "psionic-wave", range: "long", multiplier: "3" }), { mode: "psionic-wave", range: "long" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", pool_dice: "3" }), { mode: "mental-stab", pool_dice: 3 });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", pool_dice: "" }), { mode: "mental-stab" });
});

test("no defense is null; power-pool defenses may sacrifice spell levels; revised-2e may say paid", () => {
  assert.equal(defenseFromChoice("revised-2e", null), null);
  assert.equal(defenseFromChoice("revised-2e", { mode: "" }), null);
  assert.deepEqual(defenseFromChoice("power-pool", { mode: "pinnacle-of-will", sacrifice: "3" }), { mode: "pinnacle-of-will", sacrifice: 3 });
  assert.deepEqual(defenseFromChoice("revised-2e", { mode: "mental-barrier", paid: true }), { mode: "mental-barrier", paid: true });
});

test("exchange.odds takes the resolve params without dice or seed", () => {
  const params = exchangeParams({ system: "revised-2e", attacker: { id: "a" }, defender: { id: "d" }, attack: { mode: "mind-thrust" }, defense: null, options: { "H-2E-CRIT-MODS": false }, dice: { attack: [20] }, seed: 7 });
  assert.deepEqual(params.options, { "H-2E-CRIT-MODS": false });
  assert.deepEqual(oddsParams(params), { system: "revised-2e", attacker: { id: "a" }, defender: { id: "d" }, attack: { mode: "mind-thrust" }, defense: null, options: { "H-2E-CRIT-MODS": false } });
  assert.equal("options" in exchangeParams({ system: "x", attacker: {}, defender: {}, attack: {}, options: {} }), false);
});

test("modes are read from systems.describe in list or map form, else the fixed ids", () => {
  const listed = modesFromDescription("revised-2e", { modes: [{ id: "mind-thrust", kind: "attack", cost: 2 }, { id: "mind-blank", kind: "defense", cost: 3 }] });
  assert.deepEqual(listed, { attacks: [{ id: "mind-thrust", kind: "attack", cost: 2 }], defenses: [{ id: "mind-blank", kind: "defense", cost: 3 }] });
  const mapped = modesFromDescription("revised-2e", { modes: { attacks: { "ego-whip": { cost: 4 } }, defenses: { "thought-shield": 2 } } });
  assert.deepEqual(mapped, { attacks: [{ cost: 4, id: "ego-whip" }], defenses: [{ cost: 2, id: "thought-shield" }] });
  const fallback = modesFromDescription("power-pool", {});
  assert.ok(fallback.attacks.some((m) => m.id === "mental-stab"));
  assert.ok(fallback.defenses.some((m) => m.id === "pinnacle-of-will"));
  assert.deepEqual(knownModes(fallback.attacks, ["mental-stab"]).map((m) => m.id), ["mental-stab"]);
  // An empty list knows none; only an unknown list (null) offers every mode.
  assert.equal(knownModes(fallback.attacks, []).length, 0);
  assert.equal(knownModes(fallback.attacks, null).length, fallback.attacks.length);
});

test("the multiplier is offered up to the attacker's level (RULES.md §1.4: 1 ≤ m ≤ level)", () => {
  assert.deepEqual(attackFieldsFor("revised-2e", { level: 4 }), { multiplier: true, maxMultiplier: 4, range: true, poolDice: false, maxPool: 0, keepBy: false });
  assert.equal(attackFieldsFor("power-pool", { pool: 5 }).maxPool, 5);
  assert.equal(attackFieldsFor("power-pool", { pool: 5 }).keepBy, true);
  assert.equal(attackFieldsFor("combat-strength", {}).multiplier, false);
});

test("exact odds become rows with percentages, the mean damage and the system's own chances", () => {
  const view = oddsView({ outcomes: { hit: 0.5875, miss: 0.4125 }, critical: 0.05, mind_opened: 0.0125, damage: { mean: 6.25, distribution: [[0, 0.4125], [10, 0.5875]], truncated_mass: 0 } });
  assert.deepEqual(view.outcomes.map((o) => o.percent), ["58.75%", "41.25%"]);
  assert.deepEqual(view.extras.map((e) => [e.name, e.percent]), [["critical", "5.00%"], ["mind_opened", "1.25%"]]);
  assert.deepEqual(view.damage, { mean: 6.25, max: 10, truncated: false });
  assert.equal(oddsView({ outcomes: {}, damage: { mean: 1, distribution: [], truncated_mass: 0.001 } }).damage.truncated, true);
});

test("the daemon's revised-2e odds: counts beside the chances (needed, modifier, PSP costs) are not shown as chances", () => {
  // The shape `exchange.odds` answers for a 1-step mind thrust (needed 11, no defense).
  const odds = { outcomes: { hit: 0.5, miss: 0.5 }, critical: 0.15, mind_opened: 0.015, save_rolled: 0.15, needed: 11, needed_distribution: [[11, 1.0]], modifier: 0, damage: { mean: 1.25, distribution: [[0, 0.5], [1, 0.125], [4, 0.125]], truncated_mass: 0.0 }, psp_spent: { mean: 1.5 }, defense_psp: 0, target_open: false, effect: null, warnings: [] };
  const view = oddsView(odds);
  assert.deepEqual(view.extras.map((e) => e.name), ["critical", "mind_opened", "save_rolled"]);
  assert.deepEqual(view.damage, { mean: 1.25, max: 4, truncated: false });
  // A known chance of exactly 0 is still a chance.
  assert.deepEqual(oddsView({ outcomes: {}, critical: 0 }).extras.map((e) => e.percent), ["0.00%"]);
});

test("foundry.generic combatants carry the world's mapping file; the others do not", () => {
  const actor = { toObject: () => ({ _id: "x", name: "X" }) };
  const mapping = { version: 1, fields: { int: "system.abilities.int.value" } };
  assert.deepEqual(combatantRef(actor, null, "foundry.generic", mapping).data.mapping, mapping);
  assert.equal("mapping" in combatantRef(actor, null, "foundry.dnd5e", mapping).data, false);
});

test("power-pool: how control is kept if the attack wins goes as attack.keep_by, a die or an action (RULES.md §3.4); the default is left to the companion", () => {
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", pool_dice: "2", keep_by: "die" }), { mode: "mental-stab", pool_dice: 2, keep_by: "die" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", keep_by: "action" }), { mode: "mental-stab", keep_by: "action" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", keep_by: "" }), { mode: "mental-stab" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", keep_by: "forever" }), { mode: "mental-stab" });
  // Other systems have no control to keep.
  assert.equal("keep_by" in attackFromForm("revised-2e", { mode: "mind-thrust", keep_by: "die" }), false);
});

test("power-pool: who a defender may draw into an imagination swarm (seed 001: \"allied non-psionic creatures\"; a psionic one joins by its own choice)", () => {
  assert.deepEqual(allyDrawingModeIds([{ id: "pinnacle-of-will" }, { id: "imagination-swarm", draws_allies: true }]), ["imagination-swarm"]);
  assert.equal(mayJoinAsAlly({ hit_dice: 2, die: 4 }), true, "a non-psionic creature adds a die");
  assert.equal(mayJoinAsAlly({ hit_dice: 2, die: 4, psionic: false }), true);
  assert.equal(mayJoinAsAlly({ hit_dice: 2, die: 4, mindless: true }), false);
  assert.equal(mayJoinAsAlly({ hit_dice: 2, die: 4, controlled_by: "ulcen" }), false);
  // The companion refuses a psionic creature drafted as an ally (rule ally-psionic).
  assert.equal(mayJoinAsAlly({ psionic: true, defenses: ["imagination-swarm"] }), false);
  assert.equal(mayJoinAsAlly({ attacks: ["mental-stab"] }), false, "a profile listing modes is psionic");
  assert.equal(mayJoinAsAlly(null), false, "a sheet the companion cannot read");
});

test("which side a creature is on: its token's disposition, a world actor's prototype token's, else unknown", () => {
  const actor = { prototypeToken: { disposition: 1 } };
  assert.equal(dispositionOf({ token: { disposition: -1 }, actor }), -1, "the token placed wins over the prototype");
  assert.equal(dispositionOf({ token: { disposition: -2 }, actor }), -2);
  assert.equal(dispositionOf({ token: null, actor }), 1);
  assert.equal(dispositionOf({ token: null, actor: { prototypeToken: { disposition: 0 } } }), 0);
  assert.equal(dispositionOf({ token: null, actor: {} }), null);
  assert.equal(dispositionOf({ token: {}, actor }), null, "a token that does not say");
});
