// Chat cards: what the card says (outcome, summary, facts, changes, dice), rendered from
// the real template, posted with the daemon's dice as rolls in the chosen roll mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cardAudience, chatCardContext, changesOf, effectiveRollMode, eventText, postChatCard } from "../mindscape/scripts/chat.js";
import { renderModuleTemplate } from "../test-support/scenario.mjs";
import { FakeRoll, makeChatMessage, makeI18n } from "../test-support/fakes.mjs";

const i18n = makeI18n();
const label = (k, f) => (i18n.has(k) ? i18n.localize(k) : f);

// The result of API.md's worked request (Ulcen's 4-step mind thrust against Fenka).
const result = {
  system: "revised-2e", outcome: "hit",
  attacker: { before: { id: "ulcen", psp: 40 }, after: { id: "ulcen", psp: 32 } },
  defender: { before: { id: "fenka", psp: 40, mind: { state: "closed" } }, after: { id: "fenka", psp: 28, mind: { state: "open" } } },
  rolls: [{ purpose: "attack", sides: 20, value: 20, by: "ulcen", follows: null }, { purpose: "damage", sides: 4, value: 4, by: "ulcen", follows: null }],
  events: [{ type: "psp-spent", combatant: "ulcen", amount: 8 }],
  summary: "Ulcen of Tyr lashes out with a mind thrust <b>and</b> hits.",
  hit: true, critical: true, needed: 12, roll: { natural: 20, modified: 23 }, psp_spent: 8, damage: 12, mind_opened: true, save: null,
  unused_dice: { save: [7] },
  updates: [],
};

test("the card context names both sides, the modes, the outcome and every system field", () => {
  const ctx = chatCardContext(result, { attackerName: "Ulcen of Tyr", defenderName: "Fenka", attack: { mode: "mind-thrust" }, defense: { mode: "mental-barrier" }, localize: label });
  assert.equal(ctx.outcomeLabel, "Hit");
  assert.equal(ctx.attackLabel, "Mind thrust");
  assert.equal(ctx.defenseLabel, "Mental barrier");
  assert.deepEqual(ctx.facts.map((f) => [f.field, f.value]), [["needed", "12"], ["roll", "20 → 23"], ["psp_spent", "8"], ["damage", "12"], ["critical", "yes"], ["mind_opened", "yes"]]);
  // The mind's state by its label (MINDSCAPE.Mind), not the companion's id.
  assert.deepEqual(ctx.changes.map((c) => [c.name, c.field, c.before, c.after]), [["Ulcen of Tyr", "psp", 40, 32], ["Fenka", "psp", 40, 28], ["Fenka", "mind", "Closed", "Open"]]);
  assert.equal(ctx.unusedDice, "Save: 7");
  assert.equal(ctx.good, true);
});

test("a card's fact that is false reads no, and a save says whether it succeeded: yes or no beside its roll, succeeds or fails in its event", () => {
  const info = { attackerName: "Ulcen of Tyr", defenderName: "Fenka", attack: { mode: "mind-thrust" }, defense: null, localize: label };
  const facts = (res) => Object.fromEntries(chatCardContext(res, info).facts.map((f) => [f.field, f.value]));
  const missed = { ...result, critical: false, mind_opened: false, save: { roll: 7, target: 12, success: false } };
  assert.deepEqual([facts(missed).critical, facts(missed).mind_opened, facts(missed).save], ["no", "no", "7 / 12 (no)"]);
  assert.equal(facts({ ...missed, save: { roll: 15, target: 12, success: true } }).save, "15 / 12 (yes)");
  const nameOf = (id) => ({ fenka: "Fenka" })[id] ?? id;
  assert.deepEqual([true, false].map((success) => eventText({ type: "save", combatant: "fenka", roll: 15, target: 12, success }, nameOf, label)),
    ["Fenka's save (15 against 12) succeeds", "Fenka's save (15 against 12) fails"]);
});

test("the rendered card escapes the summary and shows the dice", () => {
  const ctx = chatCardContext(result, { attackerName: "Ulcen of Tyr", defenderName: "Fenka", attack: { mode: "mind-thrust" }, defense: null, localize: label });
  const html = renderModuleTemplate("chat-card", ctx);
  assert.match(html, /class="mindscape-card outcome-hit good"/);
  assert.match(html, /lashes out with a mind thrust &lt;b&gt;and&lt;\/b&gt; hits/);
  assert.match(html, /No defense/);
  assert.match(html, /Attack<\/span> d20: <strong>20<\/strong>/);
  assert.match(html, /<th>Fenka<\/th><td>Mind<\/td><td>Closed/);
  // The event as a sentence, without the raw fields ("combatant: ulcen, amount: 8").
  assert.match(html, /<ul class="mindscape-events"><li data-event="psp-spent">Ulcen of Tyr spends PSPs: 8<\/li><\/ul>/);
  assert.doesNotMatch(html, /<code>|combatant:/);
});

test("changes ignore unchanged numbers and list new conditions", () => {
  assert.deepEqual(changesOf({ before: { psp: 3, conditions: [] }, after: { psp: 3, conditions: ["dazed"] } }), [{ field: "conditions", before: "—", after: "dazed" }]);
});

test("roll mode: the world's choice, or the roller's own chat mode for 'default'", () => {
  assert.equal(effectiveRollMode("gmroll", "publicroll"), "gmroll");
  assert.equal(effectiveRollMode("default", "selfroll"), "selfroll");
  assert.equal(effectiveRollMode("default", undefined), "publicroll");
});

test("roll mode 'default' of a player's attack: the player's chat mode, checked against the known modes", () => {
  // The GM's client posts the card; the player's own core.rollMode came with the request.
  assert.equal(effectiveRollMode("default", "publicroll", "gmroll"), "gmroll");
  assert.equal(effectiveRollMode("default", "gmroll", "selfroll"), "selfroll");
  // A fixed world setting wins over anybody's chat mode.
  assert.equal(effectiveRollMode("blindroll", "publicroll", "selfroll"), "blindroll");
  // An unknown value from a client (old, forged, or the setting's own "default") is not
  // a chat roll mode: the GM's mode is used.
  for (const bad of ["evilroll", "default", "", 3, { mode: "gmroll" }, ["gmroll"], null, undefined]) {
    assert.equal(effectiveRollMode("default", "blindroll", bad), "blindroll", `requester mode ${JSON.stringify(bad)}`);
  }
});

for (const rollMode of ["publicroll", "gmroll", "blindroll", "selfroll"]) {
  test(`the card is created with ChatMessage.create(data, {rollMode: "${rollMode}"}) and Roll.fromData rolls`, async () => {
    const ChatMessage = makeChatMessage();
    FakeRoll.made = [];
    const ctx = chatCardContext(result, { attackerName: "U", defenderName: "F", attack: { mode: "mind-thrust" }, defense: null, localize: label });
    const message = await postChatCard({
      result, context: ctx, rollMode, speaker: { alias: "U" },
      renderTemplate: async (_t, c) => renderModuleTemplate("chat-card", c), template: "chat-card",
      Roll: FakeRoll, ChatMessage, localizePurpose: (p) => p,
    });
    assert.equal(message.options.rollMode, rollMode);
    assert.equal(message.data.rolls.length, 2);
    assert.equal(message.data.rolls[0].data.terms[0].results[0].result, 20);
    assert.equal(message.data.flags.mindscape.outcome, "hit");
    assert.deepEqual(message.data.speaker, { alias: "U" });
  });
}

for (const [rollMode, whisper, blind] of [["gmroll", ["gm0000"], false], ["blindroll", ["gm0000"], true], ["selfroll", ["pl0001"], false], ["publicroll", [], false]]) {
  test(`a card without dice keeps the ${rollMode} mode: ChatMessage.applyRollMode sets whisper and blind on the data`, async () => {
    // Foundry applies options.rollMode only to roll messages (ChatMessage#_preCreate).
    const ChatMessage = makeChatMessage({ gmIds: ["gm0000"], selfId: "pl0001" });
    const noDice = { ...result, rolls: [] };
    const ctx = chatCardContext(noDice, { attackerName: "U", defenderName: "F", attack: { mode: "mind-thrust" }, defense: null, localize: label });
    const message = await postChatCard({
      result: noDice, context: ctx, rollMode, speaker: { alias: "U" },
      renderTemplate: async (_t, c) => renderModuleTemplate("chat-card", c), template: "chat-card",
      Roll: FakeRoll, ChatMessage, localizePurpose: (p) => p,
    });
    assert.equal(message.data.rolls.length, 0);
    assert.deepEqual(message.data.whisper, whisper);
    assert.equal(message.data.blind, blind);
  });
}

test("power-pool: the card names the allies drawn into an imagination swarm and how each defended, and what changed for them (seed 001)", () => {
  const swarm = {
    system: "power-pool", outcome: "defender", winner: "defender", summary: "The group holds.", rolls: [], events: [],
    attacker: { id: "ulcen", before: { pool: 3 }, after: { pool: 2 } },
    defender: { id: "fenka-tokF", before: { pool: 3 }, after: { pool: 3 } },
    defense: { mode: "imagination-swarm", members: [
      { id: "fenka-tokF", role: "defender", mode: "imagination-swarm", dice: 3, sides: 6, rolls: true },
      { id: "porter", role: "ally", mode: null, dice: 1, sides: 4, rolls: true },
      { id: "seer-tokS", role: "ally", mode: "imagination-swarm", dice: 2, sides: 6, rolls: true },
      { id: "sleeper", role: "ally", mode: null, dice: 0, sides: 6, rolls: false },
    ] },
    others: [
      { id: "porter", before: { name: "Porter", conditions: [] }, after: { name: "Porter", conditions: ["dazed"] } },
      { id: "sleeper", before: { name: "Sleeper (actor)", conditions: ["asleep"] }, after: { name: "Sleeper (actor)", conditions: ["asleep", "dazed"] } },
    ],
  };
  // The table's names (tokens) win over the names the companion read (actors).
  const names = new Map([["seer-tokS", "Seer"], ["sleeper", "Sleeper"]]);
  const ctx = chatCardContext(swarm, { attackerName: "Ulcen", defenderName: "Fenka", attack: { mode: "mental-stab" }, defense: { mode: "imagination-swarm" }, names, localize: label });
  assert.deepEqual(ctx.allies, [
    { name: "Porter", how: "drawn in, dazed, 1d4" },
    { name: "Seer", how: "Imagination swarm, 2d6" },
    { name: "Sleeper", how: "drawn in, dazed, rolls nothing" },
  ]);
  assert.deepEqual(ctx.changes.map((c) => [c.name, c.field, c.after]), [["Ulcen", "pool", 2], ["Porter", "conditions", "Dazed"], ["Sleeper", "conditions", "Asleep, Dazed"]]);
  // Other systems' results have no members: no line.
  assert.deepEqual(chatCardContext(result, { attackerName: "U", defenderName: "F", attack: { mode: "mind-thrust" }, defense: null, localize: label }).allies, []);
});

test("power-pool: the card's effects name each creature as the table does, not by its id", () => {
  const won = {
    system: "power-pool", outcome: "attacker", winner: "attacker", summary: "Zanna wins.", rolls: [], events: [],
    attacker: { id: "zanna", before: { pool: 4 }, after: { pool: 3 } },
    defender: { id: "scene-tokAboleth", before: { pool: 3 }, after: { pool: 0 } },
    others: [{ id: "randal", before: { name: "Randal (Human Fighter)", pool: 1 }, after: { name: "Randal (Human Fighter)", pool: 1 } }],
    effects: [
      { effect: "controlled", combatant: "scene-tokAboleth", controller: "zanna" },
      { effect: "possessed", combatant: "scene-tokAboleth", outlasts_control: false },
      { effect: "stunned", combatant: "randal", round_ends: 2, instead_of_control: true },
      { effect: "damage", combatant: "randal", amount: 7 },
    ],
  };
  const ctx = chatCardContext(won, { attackerName: "Zanna", defenderName: "Aboleth", attack: { mode: "mental-stab" }, defense: null, localize: label });
  assert.equal(ctx.facts.find((f) => f.field === "effects").value,
    "Aboleth: under Zanna's control; Aboleth: Possessed; Randal (Human Fighter): Stunned (instead of control); Randal (Human Fighter): 7 damage");
  const none = chatCardContext({ ...won, effects: [] }, { attackerName: "Zanna", defenderName: "Aboleth", attack: { mode: "mental-stab" }, defense: null, localize: label });
  assert.equal(none.facts.some((f) => f.field === "effects"), false);
});

// The companion's answers (engine/power_pool, as `exchange.resolve` gives them; the
// creatures' fields cut to those the card reads). Seed 001: "Psionically attacking a
// creature under psionic control automatically attacks the controller": Zanna aims at
// Bravo, whom Ix controls, and strikes Ix (`redirected`).
const side = (id, name, before, after) => ({
  id,
  before: { id, name, conditions: [], controlled_by: null, controlling: [], ...before },
  after: { id, name, conditions: [], controlled_by: null, controlling: [], ...after },
});
const redirected = {
  system: "power-pool", outcome: "attacker",
  attacker: side("zanna", "Zanna (Gnome Wizard)", { pool: 3 }, { pool: 3, conditions: ["dazed"], controlling: [{ id: "ix", kept_by: "action", wave: null }] }),
  defender: side("ix", "Ix (Aboleth)", { pool: 2, controlling: [{ id: "bravo-tokB", kept_by: "action", wave: null }] }, { pool: 0, controlled_by: "zanna" }),
  rolls: [
    ...[6, 6, 6].map((value) => ({ purpose: "attack", sides: 10, value, by: "zanna", follows: null })),
    ...[1, 1].map((value) => ({ purpose: "defense", sides: 6, value, by: "ix", follows: null })),
  ],
  events: [
    { type: "dazed", combatant: "zanna", round_ends: 1, reason: "attacked in psionic combat" },
    { type: "control-ended", combatant: "bravo-tokB", controller: "ix", reason: "controller-overcome" },
    { type: "control-established", combatant: "ix", controller: "zanna" },
  ],
  summary: "Zanna (Gnome Wizard) strikes at Bravo (Fighter) with Mental Stab. Bravo (Fighter) is under Ix (Aboleth)'s control, so the attack strikes Ix (Aboleth) instead.",
  unused_dice: {},
  others: [side("bravo-tokB", "Bravo (Fighter)", { pool: 0, controlled_by: "ix" }, { pool: 0 })],
  attack_total: 18, defense_total: 2, winner: "attacker", controlled: true, outcome_detail: "control",
  effects: [{ effect: "controlled", combatant: "ix", controller: "zanna" }],
  attack: { mode: "mental-stab", dice: 3, sides: 10, keep_by: "action" },
  defense: { mode: null, members: [{ id: "ix", role: "defender", mode: null, dice: 2, sides: 6, rolled: 2, sacrifice: [], bonus: 0, rolls: true }] },
  tie: false, blank_mind: null, redirected: [{ from: "bravo-tokB", to: "ix" }], damage: 0, updates: [],
};
// A psionic wave at Alpha and Bravo: one exchange, Alpha the defender, Bravo in `others`.
const wave = {
  system: "power-pool", outcome: "attacker",
  attacker: side("zanna", "Zanna (Gnome Wizard)", { pool: 3 }, { pool: 3, conditions: ["dazed"] }),
  defender: side("orc-tokA", "Alpha (Orc)", { pool: 2 }, { pool: 0, controlled_by: "zanna" }),
  rolls: [
    ...[6, 6, 6].map((value) => ({ purpose: "attack", sides: 6, value, by: "zanna", follows: null })),
    ...["orc-tokA", "orc-tokA", "bravo-tokB", "bravo-tokB"].map((by) => ({ purpose: "defense", sides: 6, value: 1, by, follows: null })),
  ],
  events: [
    { type: "control-established", combatant: "orc-tokA", controller: "zanna" },
    { type: "control-established", combatant: "bravo-tokB", controller: "zanna" },
  ],
  summary: "Zanna (Gnome Wizard) strikes at Alpha (Orc) and Bravo (Fighter) with Psionic Wave.",
  unused_dice: {},
  others: [side("bravo-tokB", "Bravo (Fighter)", { pool: 2 }, { pool: 0, controlled_by: "zanna" })],
  winner: "attacker", controlled: true,
  effects: [{ effect: "controlled", combatant: "orc-tokA", controller: "zanna" }, { effect: "controlled", combatant: "bravo-tokB", controller: "zanna" }],
  attack: { mode: "psionic-wave", dice: 3, sides: 6, keep_by: "action" },
  defense: { mode: null, members: [
    { id: "orc-tokA", role: "defender", mode: null, dice: 2, sides: 6, rolled: 2, rolls: true },
    { id: "bravo-tokB", role: "wave-target", mode: null, dice: 2, sides: 6, rolled: 2, rolls: true },
  ] },
  redirected: [], damage: 0, updates: [],
};
const tableNames = new Map([["zanna", "Zanna"], ["ix", "Ix"], ["bravo-tokB", "Bravo"], ["orc-tokA", "Alpha"]]);
const cardOf = (res, defenderName, names) => chatCardContext(res, { attackerName: "Zanna", defenderName, attack: { mode: res.attack.mode }, defense: null, names, localize: label });

test("power-pool: an attack aimed at a puppet strikes its controller, and the card names the controller for what happened to it (seed 001)", () => {
  const ctx = cardOf(redirected, "Bravo", tableNames);
  // The header says what was aimed at; the summary says who was struck instead.
  assert.equal(ctx.defenderName, "Bravo");
  // Everything else is the controller's, by its token's name.
  assert.deepEqual(ctx.changes.map((c) => [c.name, c.field, c.before, c.after]), [["Zanna", "conditions", "—", "Dazed"], ["Ix", "pool", 2, 0]]);
  assert.equal(ctx.facts.find((f) => f.field === "effects").value, "Ix: under Zanna's control");
  assert.deepEqual(ctx.dice.map((d) => d.by), ["Zanna", "Zanna", "Zanna", "Ix", "Ix"]);
  assert.deepEqual(ctx.events.map((e) => e.text), [
    "Zanna is dazed",
    "Bravo is free of Ix's control",
    "Ix falls under Zanna's control",
  ]);
  const html = renderModuleTemplate("chat-card", ctx);
  assert.match(html, /<th>Ix<\/th><td>Pool<\/td>/);
  assert.doesNotMatch(html, /<th>Bravo<\/th>/);
  // Without the table's names the struck controller keeps the companion's name, never the header's.
  const bare = cardOf(redirected, "Bravo", undefined);
  assert.deepEqual(bare.changes.map((c) => c.name), ["Zanna", "Ix (Aboleth)"]);
  assert.equal(bare.facts.find((f) => f.field === "effects").value, "Ix (Aboleth): under Zanna's control");
});

test("power-pool: a psionic wave's card names each target by itself, the header all of them", () => {
  const ctx = cardOf(wave, "Alpha, Bravo", tableNames);
  assert.equal(ctx.defenderName, "Alpha, Bravo");
  assert.deepEqual(ctx.changes.map((c) => [c.name, c.field, c.after]), [["Zanna", "conditions", "Dazed"], ["Alpha", "pool", 0], ["Bravo", "pool", 0]]);
  assert.equal(ctx.facts.find((f) => f.field === "effects").value, "Alpha: under Zanna's control; Bravo: under Zanna's control");
  assert.deepEqual(ctx.dice.map((d) => d.by), ["Zanna", "Zanna", "Zanna", "Alpha", "Alpha", "Bravo", "Bravo"]);
  assert.deepEqual(ctx.events.map((e) => e.text), ["Alpha falls under Zanna's control", "Bravo falls under Zanna's control"]);
  const bare = cardOf(wave, "Alpha, Bravo", undefined);
  assert.deepEqual(bare.changes.map((c) => c.name), ["Zanna", "Alpha (Orc)", "Bravo (Fighter)"]);
});

test("facts that are ids read by their labels: power-pool's winner, combat-strength's table (a plugin's id as words)", () => {
  const pool = { system: "power-pool", outcome: "attacker", winner: "attacker", attack_total: 14, defense_total: 12, controlled: true, rolls: [], events: [], summary: "" };
  const facts = (res) => Object.fromEntries(chatCardContext(res, { attackerName: "Zanna", defenderName: "Aboleth", attack: { mode: "mental-stab" }, defense: null, localize: label }).facts.map((f) => [f.label, f.value]));
  assert.deepEqual(facts(pool), { "Attack total": "14", "Defense total": "12", Winner: "The attacker", Controlled: "yes" });
  const cs = { system: "combat-strength", outcome: "damage", table: "combat", bonus_dice: 1, damage: 9, attack_cost: 4, rolls: [], events: [], summary: "" };
  assert.equal(facts(cs).Table, "Psionic combat");
  assert.equal(facts({ ...cs, table: "wave" }).Table, "Psionic wave on a non-psionic");
  assert.equal(facts({ ...cs, table: "mind-storm" }).Table, "mind storm");
});

test("cardAudience: a card for a roller on another client is that roller's, whispered as Foundry whispers the roller's own roll; the rollMode option only where the posting GM re-applying it changes nothing", () => {
  const who = { requesterId: "pl0001", gmIds: ["gm0000", "gm0002"], hasRolls: true };
  assert.equal(cardAudience("gmroll", { gmIds: ["gm0000"] }), null, "no requester: the posting client's own card");
  assert.deepEqual(cardAudience("publicroll", who), { data: { whisper: [], blind: false, author: "pl0001" }, options: { rollMode: "publicroll" } });
  assert.deepEqual(cardAudience("gmroll", who), { data: { whisper: ["gm0000", "gm0002"], blind: false, author: "pl0001" }, options: { rollMode: "gmroll" } });
  assert.deepEqual(cardAudience("blindroll", who), { data: { whisper: ["gm0000", "gm0002"], blind: true, author: "pl0001" }, options: { rollMode: "blindroll" } });
  // Re-applied by the GM's client, selfroll would whisper to the GM.
  assert.deepEqual(cardAudience("selfroll", who), { data: { whisper: ["pl0001"], blind: false, author: "pl0001" }, options: {} });
  // A blind card without dice stays the GM's: its author would read it in full.
  assert.deepEqual(cardAudience("blindroll", { ...who, hasRolls: false }), { data: { whisper: ["gm0000", "gm0002"], blind: true }, options: { rollMode: "blindroll" } });
});

test("the typed dice a result did not need are named by their purposes' labels (a plugin's purpose by its id)", async () => {
  const { roundCardContext } = await import("../mindscape/scripts/chat.js");
  const { EN } = await import("../test-support/fakes.mjs");
  const L = (k, f) => { const v = k.split(".").reduce((o, x) => o?.[x], EN); return typeof v === "string" ? v : f; };
  const result = { system: "revised-2e", combatants: [], rolls: [{ purpose: "wisdom-check", sides: 20, value: 5, by: "z" }], unused_dice: { "wisdom-check": [12], "open-duration": [3], "plugin-die": [2] }, summary: "" };
  assert.equal(roundCardContext(result, { names: new Map(), localize: L }).unusedDice, "Wisdom check: 12; Open duration: 3; plugin-die: 2");
  assert.equal(chatCardContext({ ...result, unused_dice: { save: [7] } }, { attackerName: "a", defenderName: "b", localize: L }).unusedDice, "Save: 7");
});
