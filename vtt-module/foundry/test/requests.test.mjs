// Request building and response mapping (API.md: exchange.resolve / exchange.odds params,
// COMBATANTS.md field names, RULES.md mode ids).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  adapterFor, allyDrawingModeIds, attackFieldsFor, attackFromForm, combatantRef, defenseFromChoice, exchangeParams,
  dealtView, dispositionOf, knownModes, mayJoinAsAlly, modesFromDescription, oddsParams, oddsView,
} from "../mindscape/scripts/requests.js";
import { renderModuleTemplate } from "../test-support/scenario.mjs";
import { makeI18n } from "../test-support/fakes.mjs";

test("each Foundry system is read by its adapter, others by foundry.generic", () => {
  assert.equal(adapterFor("dnd5e"), "foundry.dnd5e");
  assert.equal(adapterFor("ose"), "foundry.ose");
  assert.equal(adapterFor("ars"), "foundry.ars");
  assert.equal(adapterFor("pf2e"), "foundry.generic");
  // A daemon that has no such adapter: the generic one.
  assert.equal(adapterFor("dnd5e", [{ id: "foundry.generic" }]), "foundry.generic");
  assert.equal(adapterFor("add2e", [{ id: "foundry.add2e" }, { id: "foundry.generic" }]), "foundry.add2e");
  // ACKS II on the ARS base system is read as ARS.
  assert.equal(adapterFor("acks2-arsbase"), "foundry.ars");
});

test("a combatant is sent as {adapter, data: {actor, token: {uuid, actorLink}}} (the brief's shape)", () => {
  const actor = { toObject: () => ({ _id: "a1", name: "Zanna", system: { abilities: { int: { value: 17 } } } }) };
  const ref = combatantRef(actor, { uuid: "Scene.s.Token.t", actorLink: false }, "foundry.dnd5e");
  assert.deepEqual(ref, { adapter: "foundry.dnd5e", data: { actor: actor.toObject(), token: { uuid: "Scene.s.Token.t", actorLink: false } } });
  assert.equal(combatantRef(actor, null, "foundry.generic").data.token, null);
});

test("ability scores are sent as the sheet shows them (Active Effects applied to actor.system), the rest as stored", () => {
  // Foundry applies Active Effects to the prepared data only: toObject() keeps the stored 9.
  const stored = { _id: "r1", name: "Randal", system: { abilities: { int: { value: 9 }, wis: { value: 11 }, con: { value: 14 } }, attributes: { hp: { value: 12, max: 12 } } } };
  const actor = {
    toObject: () => structuredClone(stored),
    system: { abilities: { int: { value: 19, mod: 4 }, wis: { value: 11 }, con: { value: "x" } }, attributes: { hp: { value: 12, max: 20 } } },
  };
  const sent = combatantRef(actor, null, "foundry.dnd5e").data.actor.system;
  assert.deepEqual(sent.abilities, { int: { value: 19 }, wis: { value: 11 }, con: { value: 14 } });
  assert.deepEqual(sent.attributes.hp, { value: 12, max: 12 }, "only the scores come from the prepared data");
  // OSE keeps them under scores; a score the stored data lacks is not added.
  const ose = { toObject: () => ({ _id: "o1", system: { scores: { int: { value: 10 } } } }), system: { scores: { int: { value: 12 }, wis: { value: 15 } } } };
  assert.deepEqual(combatantRef(ose, null, "foundry.ose").data.actor.system.scores, { int: { value: 12 } });
  // A stand-in without prepared data sends what is stored.
  assert.deepEqual(combatantRef({ toObject: () => structuredClone(stored) }, null, "foundry.dnd5e").data.actor.system, stored.system);
});

test("the actor sent is what an adapter may read: no other items, effects or other modules' flags; a generic mapping's own paths kept", () => {
  const raw = {
    _id: "a1", name: "Zanna", type: "character", _stats: { systemId: "dnd5e", createdTime: 1 }, system: { abilities: { int: { value: 17 } } },
    flags: { mindscape: { "revised-2e": { psp: 30 } }, tracker: { psp: 12, notes: "long" }, other: { x: 1 } },
    items: [{ _id: "c1", name: "Wizard", type: "class", system: { levels: 5, hd: { denomination: "d6" }, description: { value: "long text" } } }, { _id: "s1", name: "Fireball", type: "spell", system: {} }],
    effects: [{ _id: "e1" }], prototypeToken: { name: "Zanna" }, ownership: { default: 0 },
  };
  const actor = { toObject: () => structuredClone(raw) };
  const kept = {
    _id: "a1", name: "Zanna", type: "character", _stats: { systemId: "dnd5e" }, system: raw.system, flags: { mindscape: raw.flags.mindscape },
    items: [{ _id: "c1", name: "Wizard", type: "class", system: { levels: 5, hd: { denomination: "d6" } } }],
  };
  assert.deepEqual(combatantRef(actor, null, "foundry.dnd5e").data.actor, kept);
  // foundry.generic: every path the mapping names, in `fields` or a system's own.
  const mapping = { fields: { psp: { path: "flags.tracker.psp", default: 0 }, int: "system.abilities.int.value" }, systems: { "power-pool": { hp: "flags.other.x" } } };
  const generic = combatantRef(actor, null, "foundry.generic", mapping).data;
  assert.deepEqual(generic.actor.flags, { mindscape: raw.flags.mindscape, tracker: { psp: 12 }, other: { x: 1 } });
  assert.deepEqual(generic.mapping, mapping);
  // A mapping that reads an item gets the items whole.
  const itemMapped = combatantRef(actor, null, "foundry.generic", { fields: { level: "items.0.system.levels" } }).data.actor;
  assert.deepEqual(itemMapped.items, raw.items);
});

test("a class item is sent with every field an adapter reads of it (level, hit dice, identifier, advancement, ranks), nothing else", () => {
  const wizard = { _id: "c1", name: "Wizard", type: "class", system: { levels: 5, hitDice: "d6", hd: 6, identifier: "wizard", advancement: [{ type: "HitPoints" }], ranks: 2, description: { value: "long" }, spells: {} } };
  const actor = { toObject: () => ({ _id: "a1", name: "Zanna", system: {}, items: [structuredClone(wizard)] }) };
  const { description: _d, spells: _s, ...read } = wizard.system;
  assert.deepEqual(combatantRef(actor, null, "foundry.ars").data.actor.items, [{ ...wizard, system: read }]);
});

test("a generic mapping's path to a maximum (|max) sends the value it names; a path through a list is not rebuilt as an object; the mapping goes only with foundry.generic", () => {
  const raw = { _id: "a1", name: "Zanna", system: {}, flags: { tracker: { psp: 12, list: [{ v: 1 }] }, other: { y: 2 } } };
  const actor = { toObject: () => structuredClone(raw) };
  const mapping = { fields: { psp: "flags.tracker.psp|max", hp: "flags.tracker.list.0.v" } };
  const generic = combatantRef(actor, null, "foundry.generic", mapping).data;
  assert.deepEqual(generic.actor.flags, { tracker: { psp: 12 } });
  const dnd = combatantRef(actor, null, "foundry.dnd5e", mapping).data;
  assert.equal("mapping" in dnd, false);
  assert.equal("tracker" in (dnd.actor.flags ?? {}), false);
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

test("an attack as a macro sends it is checked before it is read: a blank mode, a multiplier or pool that is no whole number of at least 1, a range another system's attack has not", async () => {
  const { attackProblem } = await import("../mindscape/scripts/requests.js");
  const problem = (system, attack) => attackProblem(system, attack);
  // The dialog's own fields pass beside the attack's; empty values are not given.
  assert.equal(problem("revised-2e", { mode: "mind-thrust", multiplier: " 3 ", range: "long", target: "t1", assumeDefense: "mind-blank", physical: true }), null);
  assert.equal(problem("revised-2e", { mode: "mind-thrust", multiplier: null, range: "" }), null);
  assert.deepEqual(problem("revised-2e", {}), { field: "attack.mode", rule: "MINDSCAPE.Error.AttackRule.mode", got: "nothing" });
  assert.equal(problem("revised-2e", { mode: "  " })?.field, "attack.mode");
  assert.deepEqual(problem("revised-2e", { mode: "mind-thrust", multiplier: "2.5" }), { field: "attack.multiplier", rule: "MINDSCAPE.Error.AttackRule.multiplier", got: '"2.5"' });
  assert.equal(problem("combat-strength", { mode: "psionic-wave", range: "far" })?.field, "attack.range");
  assert.equal(problem("power-pool", { mode: "mental-stab", pool_dice: "0" })?.field, "attack.pool_dice");
  assert.equal(problem("power-pool", { mode: "mental-stab", pool_dice: 2, keep_by: "die" }), null);
});

test("the dialog's attack: a multiplier below 1 is 1, a combat-strength range not given is short, no pool of 0 dice, a keep-by only as the rules name it, no empty decline; another system's fields as given, empty ones left out", () => {
  assert.equal(attackFromForm("revised-2e", { mode: "ego-whip", multiplier: "-2" }).multiplier, 1);
  assert.deepEqual(attackFromForm("combat-strength", { mode: "psionic-wave" }), { mode: "psionic-wave", range: "short" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "mental-stab", pool_dice: "0", keep_by: "round", decline: [] }), { mode: "mental-stab" });
  assert.deepEqual(attackFromForm("power-pool", { mode: "subconscious-subversion", keep_by: "die", decline: ["frightened", ""] }), { mode: "subconscious-subversion", keep_by: "die", decline: ["frightened"] });
  assert.deepEqual(attackFromForm("my-plugin", { mode: "zap", power: 3, note: "", extra: null }), { mode: "zap", power: 3 });
});

test("no defense is null; power-pool defenses may sacrifice spell levels; revised-2e may say paid", () => {
  assert.equal(defenseFromChoice("revised-2e", null), null);
  assert.equal(defenseFromChoice("revised-2e", { mode: "" }), null);
  assert.deepEqual(defenseFromChoice("power-pool", { mode: "pinnacle-of-will", sacrifice: "3" }), { mode: "pinnacle-of-will", sacrifice: 3 });
  // power-pool: no mode still rolls the pool, and a spell sacrificed with it is kept.
  assert.deepEqual(defenseFromChoice("power-pool", { mode: "", sacrifice: "2" }), { sacrifice: 2 });
  assert.equal(defenseFromChoice("power-pool", { mode: "", sacrifice: "0" }), null);
  assert.equal(defenseFromChoice("revised-2e", { mode: "", sacrifice: "2", paid: true }), null);
  assert.deepEqual(defenseFromChoice("revised-2e", { mode: "mental-barrier", paid: true }), { mode: "mental-barrier", paid: true });
  // A sacrifice of 0 is none, and only revised-2e pays ahead.
  assert.deepEqual(defenseFromChoice("power-pool", { mode: "blank-mind", sacrifice: "0", paid: true }), { mode: "blank-mind" });
});

test("exchange.odds takes the resolve params without dice or seed", () => {
  const params = exchangeParams({ system: "revised-2e", attacker: { id: "a" }, defender: { id: "d" }, attack: { mode: "mind-thrust" }, defense: null, options: { "H-2E-CRIT-MODS": false }, dice: { attack: [20] }, seed: 7 });
  assert.deepEqual(params.options, { "H-2E-CRIT-MODS": false });
  assert.deepEqual(oddsParams(params), { system: "revised-2e", attacker: { id: "a" }, defender: { id: "d" }, attack: { mode: "mind-thrust" }, defense: null, options: { "H-2E-CRIT-MODS": false } });
  assert.equal("options" in exchangeParams({ system: "x", attacker: {}, defender: {}, attack: {}, options: {} }), false);
  // No defense given is null; a seed of 0 is a seed.
  const bare = exchangeParams({ system: "x", attacker: {}, defender: {}, attack: {}, seed: 0 });
  assert.equal(bare.defense, null);
  assert.equal(bare.seed, 0);
  assert.deepEqual(exchangeParams({ system: "x", attacker: {}, defender: {}, attack: {}, dice: { attack: [4] } }).dice, { attack: [4] });
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
  // No pool stored: the Hit Dice less the dice dedicated, as the engine defaults it.
  assert.equal(attackFieldsFor("power-pool", { hit_dice: 4 }).maxPool, 4);
  assert.equal(attackFieldsFor("power-pool", { hit_dice: 4, dedicated: [{ purpose: "control", target: "ox" }] }).maxPool, 3);
  assert.equal(attackFieldsFor("power-pool", { pool: 5 }).keepBy, true);
  assert.equal(attackFieldsFor("combat-strength", {}).multiplier, false);
  // A level that reads below 1 (a sheet typed wrong) still offers the multiplier 1.
  assert.equal(attackFieldsFor("revised-2e", { level: -2 }).maxMultiplier, 1);
});

test("exact odds become rows with percentages, the mean damage and the system's own chances", () => {
  const view = oddsView({ outcomes: { hit: 0.5875, miss: 0.4125 }, critical: 0.05, mind_opened: 0.0125, damage: { mean: 6.25, distribution: [[0, 0.4125], [10, 0.5875]], truncated_mass: 0 } });
  assert.deepEqual(view.outcomes.map((o) => o.percent), ["58.75%", "41.25%"]);
  assert.deepEqual(view.extras.map((e) => [e.name, e.percent]), [["critical", "5.00%"], ["mind_opened", "1.25%"]]);
  assert.deepEqual(view.damage, { mean: 6.25, max: 10, truncated: false });
  assert.equal(oddsView({ outcomes: {}, damage: { mean: 1, distribution: [], truncated_mass: 0.001 } }).damage.truncated, true);
  // Asked with least_chance, the distribution is short: the greatest damage is dealt's, and
  // a dealt of null (none ever dealt) means no damage line.
  const short = { outcomes: { hit: 0.9 }, damage: { mean: 5, distribution: [[5, 0.9]], truncated_mass: 0, dealt: { chance: 0.9, mean: 5.5, p10: 5, median: 5, p90: 5, least: 5, most: 40 } }, left_out: { outcomes: 0.1, distribution: 0.1 } };
  assert.deepEqual(oddsView(short).damage, { mean: 5, max: 40, truncated: false });
  assert.deepEqual(oddsView(short).extras, []);
  assert.equal(oddsView({ outcomes: { hit: 1 }, damage: { mean: 0, distribution: [], truncated_mass: 0, dealt: null } }).damage, null);
});

test("odds' edge cases: a count of 1 is no chance, a damage cut off at the cap is a line (its greatest 0 when nothing is listed), as is a mean above 0; a combat-strength row of 0% is left out, and a damage of one value is fixed", () => {
  const view = oddsView({ outcomes: {}, rounds: 1, critical: 0.05 });
  assert.deepEqual(view.extras.map((e) => [e.name, e.percent]), [["critical", "5.00%"]]);
  assert.deepEqual(oddsView({ outcomes: {}, damage: { mean: 1, distribution: [], truncated_mass: 0.001 } }).damage, { mean: 1, max: 0, truncated: true });
  assert.deepEqual(oddsView({ outcomes: {}, damage: { mean: 0, distribution: [], truncated_mass: 0.001, dealt: null } }).damage, { mean: 0, max: 0, truncated: true });
  assert.deepEqual(oddsView({ outcomes: {}, damage: { mean: 2, distribution: [] } }).damage, { mean: 2, max: 0, truncated: false });
  assert.deepEqual(oddsView({ outcomes: {}, damage: { mean: 0, distribution: [[0, 0.9]], truncated_mass: 0.1 } }).damage, { mean: 0, max: 0, truncated: true });
  const strength = oddsView({ outcome: { damage: 0.5, saved: 0.5, crushed: 0 }, conditions: { dazed: 0.25, stunned: 0 }, defense_zero: 0, damage: { dealt: { chance: 0.5, mean: 4, p10: 4, median: 4, p90: 4, least: 4, most: 4 } } }, undefined, "combat-strength");
  assert.deepEqual(strength.outcomes.map((o) => o.name), ["damage", "saved"]);
  assert.deepEqual(strength.conditions.map((c) => c.name), ["dazed"]);
  assert.equal(strength.spread.fixed, true);
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

/**
 * combat-strength's damage as `exchange.odds` answers it (engine/combat_strength/odds.py
 * `bonus_damage(count, 6, cap).shift(points)`): `count` penetrating d6 (a 6 adds a die
 * counting its value − 1, at most `cap` follow-ups) plus the table's points, as
 * `[[value, p]]` and as the `outcomes` keyed by the damage.
 */
function strengthDamage(count, points, cap = 100) {
  let die = new Map([1, 2, 3, 4, 5, 6].map((v) => [v, 1 / 6]));
  for (let k = 0; k < cap; k++) {
    const next = new Map([1, 2, 3, 4, 5].map((v) => [v, 1 / 6]));
    for (const [v, p] of die) next.set(6 + v - 1, (next.get(6 + v - 1) ?? 0) + p / 6);
    die = next;
  }
  let sum = new Map([[points, 1]]);
  for (let i = 0; i < count; i++) {
    const next = new Map();
    for (const [a, pa] of sum) for (const [b, pb] of die) next.set(a + b, (next.get(a + b) ?? 0) + pa * pb);
    sum = next;
  }
  const distribution = [...sum].sort((x, y) => x[0] - y[0]);
  return { distribution, outcomes: Object.fromEntries(distribution.map(([v, p]) => [String(v), p])) };
}

test("combat-strength odds are a few rows, not one per damage value: its results, conditions and a line on the damage", () => {
  // A psionic wave against Mind Blank (table A, 3 points + 4 penetrating d6): the
  // companion's outcomes hold 2,021 damage values.
  const { distribution, outcomes } = strengthDamage(4, 3);
  assert.equal(Object.keys(outcomes).length, 2021);
  // dealt as the companion computes it (engine/odds.py Dist.dealt, exactly)
  const dealt = { chance: 1, mean: 19, p10: 13, median: 18, p90: 27, least: 7, most: 2027 };
  const odds = { outcomes, damage: { mean: 19, distribution, truncated_mass: 0, dealt }, crushed: 0, defense_zero: 0.00022570056356796897, conditions: {}, save: null, outcome: { damage: 1 }, table: "combat", band: "01-25", defender_band: null, table_value: 3, bonus_dice: 4, attack_cost: 20 };
  const i18n = makeI18n();
  const label = (k, f) => (i18n.has(k) ? i18n.localize(k) : f);
  const view = oddsView(odds, label, "combat-strength");
  assert.deepEqual(view.outcomes.map((o) => [o.label, o.percent]), [["Damage", "100.00%"]]);
  assert.deepEqual(view.conditions, []);
  assert.deepEqual(view.extras.map((e) => [e.label, e.percent]), [["Defense strength falls to 0", "0.02%"]]);
  // Mean 3 + 4 × 4 = 19; the 10th, 50th and 90th percentiles as the companion gives them.
  assert.deepEqual(view.spread, { chance: "100.00%", mean: 19, median: 18, low: 13, high: 27, fixed: false });
  // The same from an answer asked with least_chance: the lists are short, the line the same.
  const short = { ...odds, outcomes: { 13: 0.06 }, damage: { ...odds.damage, distribution: [[13, 0.06]] }, left_out: { outcomes: 0.94, distribution: 0.94 } };
  assert.deepEqual(oddsView(short, label, "combat-strength"), view);
  const html = renderModuleTemplate("odds", view);
  assert.equal(html.match(/<tr /g).length, 2);
  assert.match(html, /When it deals damage \(100\.00%\): 19 on average, median 18, 8 times in 10 from 13 to 27\./);
  assert.doesNotMatch(html, /defense zero|MINDSCAPE\./);
});

test("combat-strength odds without a defense show the condition the companion names, not a damage of 0", () => {
  // The companion's answer to a psionic wave at a defenseless psionic mind (table B, letter D).
  const odds = { outcomes: { 0: 1 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0, dealt: null }, crushed: 0, defense_zero: 0, conditions: { dazed: 1 }, save: null, outcome: { condition: 1 }, table: "defenseless", band: "51-75", defender_band: "110-159", table_value: "D", bonus_dice: 0, attack_cost: 20 };
  const i18n = makeI18n();
  const view = oddsView(odds, (k, f) => (i18n.has(k) ? i18n.localize(k) : f), "combat-strength");
  assert.deepEqual(view.outcomes.map((o) => [o.label, o.percent]), [["Condition", "100.00%"]]);
  assert.deepEqual(view.conditions.map((c) => [c.name, c.label, c.percent]), [["dazed", "Dazed", "100.00%"]]);
  assert.deepEqual(view.extras, []);
  assert.equal(view.spread, null);
  const html = renderModuleTemplate("odds", view);
  assert.match(html, /<tr class="condition condition-dazed"><th>Dazed<\/th>/);
  assert.doesNotMatch(html, /<th>0<\/th>|Mean damage/);
  // A non-psionic mind's save against the wave, and the condition when it fails.
  const wave = oddsView({ outcomes: { 0: 1 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 }, crushed: 0, defense_zero: 1, conditions: { asleep: 0.0055, stunned: 0.077, confused: 0.4125, enraged: 0.0495, panicked: 0.0055 }, save: 0.45, outcome: { saved: 0.45, condition: 0.55 } }, (k, f) => (i18n.has(k) ? i18n.localize(k) : f), "combat-strength");
  assert.deepEqual(wave.outcomes.map((o) => [o.label, o.percent]), [["Saved", "45.00%"], ["Condition", "55.00%"]]);
  assert.deepEqual(wave.conditions.map((c) => c.label), ["Asleep", "Stunned", "Confused", "Enraged", "Panicked"]);
  // A psychic implosion's crush, with the death it brings.
  const crush = oddsView({ outcomes: { 0: 1, crushed: 0.55 }, damage: { mean: 0, distribution: [[0, 1]], truncated_mass: 0 }, crushed: 0.55, defense_zero: 0.55, conditions: { dead: 0.55 }, outcome: { crushed: 0.55, "no-effect": 0.45 } }, (k, f) => (i18n.has(k) ? i18n.localize(k) : f), "combat-strength");
  assert.deepEqual([...crush.outcomes, ...crush.conditions, ...crush.extras].map((r) => [r.label, r.percent]),
    [["Mind crushed", "55.00%"], ["No effect", "45.00%"], ["Dead", "55.00%"], ["Defense strength falls to 0", "55.00%"]]);
});

test("the damage line reads the companion's dealt, and a single value reads as itself", () => {
  assert.equal(dealtView(null), null);
  assert.equal(dealtView(undefined), null);
  assert.deepEqual(dealtView({ chance: 0.5, mean: 6, p10: 4, median: 4, p90: 8, least: 4, most: 8 }), { chance: "50.00%", mean: 6, median: 4, low: 4, high: 8, fixed: false });
  const fixed = dealtView({ chance: 1, mean: 12, p10: 12, median: 12, p90: 12, least: 12, most: 12 });
  assert.deepEqual(fixed, { chance: "100.00%", mean: 12, median: 12, low: 12, high: 12, fixed: true });
  assert.match(renderModuleTemplate("odds", { outcomes: [], conditions: [], extras: [], spread: fixed }), /When it deals damage \(100\.00%\): 12\./);
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

test("odds that never deal damage (power-pool's mental stab, the real companion's answer) show no damage line, not \"Mean damage: 0\"", async () => {
  const { renderModuleTemplate } = await import("../test-support/scenario.mjs");
  const odds = { outcomes: { attacker: 0.6313657407407407, defender: 0.36863425925925924 }, control: 0.6313657407407407, tie: 0.06147119341563786, blank_mind_save: null,
    damage: { mean: 0.0, distribution: [[0, 1.0]], truncated_mass: 0.0 }, attack_total: { mean: 13.0 }, defense_total: { mean: 10.5 }, updates: [] };
  const view = oddsView(odds, (_k, f) => f, "power-pool");
  assert.equal(view.damage, null);
  assert.doesNotMatch(await renderModuleTemplate("odds", view), /Mean damage/);
  // Synaptic Overload's damage is shown.
  const overload = oddsView({ ...odds, damage: { mean: 1.5, distribution: [[0, 0.5], [3, 0.5]], truncated_mass: 0 } }, (_k, f) => f, "power-pool");
  assert.deepEqual(overload.damage, { mean: 1.5, max: 3, truncated: false });
  assert.match(await renderModuleTemplate("odds", overload), /Mean damage: <strong>1.5<\/strong>/);
});

test("assumedPlaces: the minds a user may not see, as their places in the odds' params (the defender, a wave's further defenders, the controllers struck)", async () => {
  const { assumedPlaces } = await import("../mindscape/scripts/requests.js");
  const [a, b, c, x, y] = ["a", "b", "c", "x", "y"].map((id) => ({ id }));
  assert.deepEqual(assumedPlaces([a, b, c], [x, y], [a, c, y]), ["/defender", "/defenders/1", "/controllers/1"]);
  assert.deepEqual(assumedPlaces([a], [], [b]), []);
  assert.deepEqual(assumedPlaces([a, b], [x], [b, x]), ["/defenders/0", "/controllers/0"]);
});

test("a Constitution raised by an Active Effect is sent as the sheet shows it, like Intelligence and Wisdom; no score is added where the stored data has none", () => {
  const stored = { _id: "r1", name: "Randal", system: { abilities: { int: { value: 9 }, wis: { value: 11 }, con: { value: 12 } } } };
  const actor = { toObject: () => structuredClone(stored), system: { abilities: { int: { value: 9 }, wis: { value: 11 }, con: { value: 16, mod: 3 } } } };
  assert.deepEqual(combatantRef(actor, null, "foundry.dnd5e").data.actor.system.abilities, { int: { value: 9 }, wis: { value: 11 }, con: { value: 16 } });
  // OSE's scores too.
  const ose = { toObject: () => ({ _id: "o1", system: { scores: { con: { value: 10 } } } }), system: { scores: { con: { value: 13 } } } };
  assert.deepEqual(combatantRef(ose, null, "foundry.ose").data.actor.system.scores, { con: { value: 13 } });
  // A stored ability without a value (only a proficiency, say) gets none from the prepared data.
  const partial = {
    toObject: () => ({ _id: "p1", system: { abilities: { int: { proficient: 1 }, wis: {}, con: { value: 8 } } } }),
    system: { abilities: { int: { value: 18, proficient: 1 }, wis: { value: 14 }, con: { value: 8 } } },
  };
  assert.deepEqual(combatantRef(partial, null, "foundry.dnd5e").data.actor.system.abilities, { int: { proficient: 1 }, wis: {}, con: { value: 8 } });
});

test("power-pool: an attack whose decline list is partly malformed is refused, by the check and when relayed", async () => {
  const { attackProblem } = await import("../mindscape/scripts/requests.js");
  const { poolTable } = await import("../test-support/pool-table.mjs");
  const mode = "subconscious-subversion";
  assert.equal(attackProblem("power-pool", { mode, decline: ["frightened"] }), null);
  for (const decline of [["frightened", ""], ["frightened", 3], [null, "frightened"]]) {
    assert.equal(attackProblem("power-pool", { mode, decline })?.field, "attack.decline", JSON.stringify(decline));
  }
  const { t, calls } = await poolTable();
  const from = t.daemon.calls.length;
  const refused = await t.clients.p1.svc.relay.toGM("attack", {
    attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode, decline: ["frightened", 7] }, physical: false,
  }).then(() => null, (e) => e);
  assert.ok(refused, "the attack is refused");
  assert.equal(refused.key, "MINDSCAPE.Error.BadAttack");
  assert.equal(refused.data.field, "attack.decline");
  assert.deepEqual(calls, [], "nothing is resolved");
  assert.deepEqual(t.daemon.calls.slice(from).filter((c) => c.method === "exchange.resolve"), []);
});

test("an effect two modes may spare is one box naming both; what is ticked goes with the attack only for the mode chosen, and nothing ticked sends no decline", async () => {
  const { declineBoxes, withDeclined } = await import("../mindscape/scripts/requests.js");
  const i18n = makeI18n();
  const t = { label: (key, fallback) => (i18n.has(key) ? i18n.localize(key) : fallback), format: i18n.format };
  const attacks = [
    { id: "subconscious-subversion", on_success: [{ condition: "frightened", optional: true }] },
    { id: "mental-stab", on_success: [{ condition: "frightened", optional: true }, { condition: "stunned", optional: true }] },
  ];
  const boxes = declineBoxes(attacks, t);
  assert.deepEqual(boxes.declinable.map((b) => b.value), ["frightened", "stunned"]);
  assert.match(boxes.declinable[0].label, /\(Subconscious subversion, Mental stab:/);
  assert.match(boxes.declinable[1].label, /\(Mental stab:/);
  assert.deepEqual(withDeclined({ mode: "subconscious-subversion", decline: ["frightened", "stunned"] }, attacks), { mode: "subconscious-subversion", decline: ["frightened"] });
  assert.deepEqual(withDeclined({ mode: "mental-stab", decline: "stunned" }, attacks), { mode: "mental-stab", decline: ["stunned"] });
  assert.deepEqual(withDeclined({ mode: "psionic-wave", decline: ["frightened"] }, attacks), { mode: "psionic-wave" });
});

test("only the effects a mode marks optional are offered as boxes to spare; a mandatory one is not", async () => {
  const { declinableOf, declineBoxes } = await import("../mindscape/scripts/requests.js");
  const i18n = makeI18n();
  const t = { label: (key, fallback) => (i18n.has(key) ? i18n.localize(key) : fallback), format: i18n.format };
  const mode = {
    id: "subconscious-subversion",
    on_success: [
      { condition: "frightened", optional: true },
      { condition: "stunned" },
      { condition: "dazed", optional: false },
      { condition: "confused", optional: "yes" },
      { condition: "charmed", optional: 1 },
    ],
  };
  assert.deepEqual(declinableOf(mode), ["frightened"]);
  const boxes = declineBoxes([mode, { id: "mental-stab", on_success: [{ condition: "stunned" }] }], t);
  assert.deepEqual(boxes.declinable.map((b) => b.value), ["frightened"]);
  assert.equal(boxes.declineModes, "subconscious-subversion:frightened");
});
