// Every control of the module's dialogs is named by its label: a `<label for>` that
// points at it (clicking the label reaches it, a screen reader reads it), a label
// around it, or an aria name; the ids are unique in the page (each dialog renders with
// its own prefix, dialogs.js `dialogUid`). A house rule's control is described by the
// rule's text. The cards' "Dice and events" is a button that says whether it is open.
import { test } from "node:test";
import assert from "node:assert/strict";
import { renderModuleTemplate } from "../test-support/scenario.mjs";
import { dialogUid } from "../mindscape/scripts/dialogs.js";
import { onRenderChatMessage } from "../mindscape/scripts/hooks.js";

/** The problems of an HTML form's controls: each unnamed control, each `for` without its control, each id used twice. */
function labelProblems(html) {
  const problems = [];
  const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
  for (const id of new Set(ids)) if (ids.filter((x) => x === id).length > 1) problems.push(`id ${id} used twice`);
  const fors = new Set([...html.matchAll(/<label[^>]*\sfor="([^"]+)"/g)].map((m) => m[1]));
  for (const f of fors) if (!ids.includes(f)) problems.push(`label for ${f} names no control`);
  for (const m of html.matchAll(/<(input|select|textarea)\b[^>]*>/g)) {
    const tag = m[0];
    if (/type="hidden"/.test(tag)) continue;
    const id = /\sid="([^"]+)"/.exec(tag)?.[1];
    if (id && fors.has(id)) continue;
    if (/aria-label="[^"]+"|aria-labelledby="[^"]+"/.test(tag)) continue;
    // Inside a <label>: the last label opened before it is not closed before it.
    const before = html.slice(0, m.index);
    if (before.lastIndexOf("<label") > before.lastIndexOf("</label>")) continue;
    problems.push(`unnamed ${tag}`);
  }
  return problems;
}

const defense = { id: "mind-blank", label: "Mind blank", cost: 3 };
const CONTEXTS = {
  "attack-dialog": { attackerName: "A", targetNames: "B, C", attacks: [{ id: "mind-thrust", label: "Mind thrust", selected: true }], multipliers: [{ value: 1 }], ranges: [{ value: "short", label: "Short" }], poolDice: [{ value: 1 }], keepBy: true, declinable: [{ value: "frightened", label: "Spare the Fear" }], targets: [{ uuid: "u", name: "B" }], defenses: [defense], warnings: [] },
  "defense-dialog": { attackerName: "A", defenderName: "B", defenses: [defense], sacrifice: true, allies: [{ uuid: "u", name: "Skum" }], allyModes: "imagination-swarm", allyModeLabels: "Imagination swarm", seconds: 30 },
  "close-dialog": { name: "B", cost: 6, psp: 30, defenseLabel: "Mind blank", seconds: 30 },
  "control-dialog": { name: "G", links: [{ index: 0, names: "F", kept: "k", choices: [{ value: "hold", label: "Keep", checked: true }, { value: "release", label: "Release" }] }], seconds: 30 },
  "join-dialog": { name: "S", allies: "F", modeLabel: "Imagination swarm", groups: [{ value: "0", names: "F", checked: true }, { value: "1", names: "G" }], several: true, seconds: 30 },
  "dice-prompt": { needed: 2, sides: 4, purposeLabel: "Damage", slots: [{ index: 1 }, { index: 2 }] },
  "pairing": { url: "http://127.0.0.1:39393", token: "", help: {} },
  "profile": { actorName: "A", systemLabel: "S", advanced: "", fields: [
    { key: "psp", label: "PSPs", isNumber: true, value: 3 }, { key: "name", label: "Name", isText: true }, { key: "wild", label: "Wild", isCheckbox: true },
    { key: "kind", label: "Kind", isSelect: true, options: [{ value: "psionicist", label: "Psionicist" }] },
    { key: "attacks", label: "Attacks", isMulti: true, options: [{ value: "ego-whip", label: "Ego whip" }] },
  ] },
  "encounter-action": { combatantName: "A", phase: "attack", canPass: true, controlled: [{ id: "c", name: "C" }] },
  "rest-dialog": { askHours: true, names: "A", min: 1, max: 1000, value: 8 },
  "house-rules": { systemLabel: "S", rules: [
    { id: "H-1", text: "the roll is the modified roll", isBoolean: true, checked: true },
    { id: "H-2", text: "how allies join", choices: [{ value: "one", selected: true }, { value: "all" }] },
    { id: "H-3", text: "a number", value: 3 },
  ] },
};
const CHOICES = {
  intent: { combatantName: "A", intent: true, stances: [{ value: "trance", label: "Trance" }] },
  revised: { combatantName: "A", attacks: [defense], targets: [{ id: "b", name: "B" }], defenses: [defense], multipliers: [{ value: 1 }], ranges: [{ value: "short", label: "Short" }], poolDice: [], sacrifice: true, close: { cost: 6, psp: 30, defenseLabel: "Mind blank" } },
  revisedTwoAttacks: { combatantName: "A", attacks: [defense], targets: [{ id: "b", name: "B" }], defenses: [defense], multipliers: [{ value: 1 }], ranges: [{ value: "short", label: "Short" }], poolDice: [], furtherAttacks: [{ n: "2", label: "Attack 2" }] },
  poolAttack: { combatantName: "A", attacks: [defense], targets: [{ id: "b", name: "B" }], defenses: [], poolDice: [{ value: 1 }], pool: { defensePhase: false, controlled: [{ id: "c", name: "C" }], others: [{ id: "c", name: "C" }], waveModes: "psionic-wave", declinable: [{ value: "frightened", label: "Spare the Fear" }], declineModes: "subconscious-subversion:frightened" } },
  poolDefense: { combatantName: "A", attacks: [], targets: [], defenses: [defense], poolDice: [], pool: { defensePhase: true, allies: [{ id: "c", name: "C" }], controlled: [], others: [] } },
};

test("every control of every dialog is named by its label, and the ids are unique in the page", () => {
  for (const [name, context] of Object.entries(CONTEXTS)) {
    assert.deepEqual(labelProblems(renderModuleTemplate(name, { ...context, uid: dialogUid() })), [], name);
  }
  for (const [name, context] of Object.entries(CHOICES)) {
    assert.deepEqual(labelProblems(renderModuleTemplate("encounter-choice", { ...context, uid: dialogUid() })), [], `encounter-choice (${name})`);
  }
  // Two dialogs open at once never share an id.
  const a = renderModuleTemplate("attack-dialog", { ...CONTEXTS["attack-dialog"], uid: dialogUid() });
  const b = renderModuleTemplate("attack-dialog", { ...CONTEXTS["attack-dialog"], uid: dialogUid() });
  assert.deepEqual(labelProblems(a + b), []);
  // "Type physical dice" is the label of its checkbox: clicking the words ticks it.
  assert.match(a, /<label for="(mindscape-\d+-physical)">Type physical dice<\/label>\s*<input type="checkbox" id="\1" name="physical"/);
});

test("a house rule's control is described by the rule's text, not named by its id alone", () => {
  const html = renderModuleTemplate("house-rules", { ...CONTEXTS["house-rules"], uid: "u1" });
  for (const [i, text] of ["the roll is the modified roll", "how allies join", "a number"].entries()) {
    assert.match(html, new RegExp(`id="u1-${i}"[^>]*aria-describedby="u1-${i}-text"|aria-describedby="u1-${i}-text"[^>]*id="u1-${i}"|id="u1-${i}" name="H-${i + 1}"[^>]*aria-describedby="u1-${i}-text"`));
    assert.match(html, new RegExp(`<p class="hint" id="u1-${i}-text">${text}</p>`));
  }
});

test("the cards' Dice and events is a button (keyboard and screen readers reach it) that says whether the details are open", () => {
  for (const name of ["chat-card", "round-card"]) {
    const html = renderModuleTemplate(name, { outcome: "hit", facts: [], changes: [], dice: [], events: [] });
    assert.match(html, /<button type="button" class="mindscape-toggle" data-mindscape-toggle aria-expanded="false">/, name);
    assert.doesNotMatch(html, /<a\b/, name);
  }
  const classes = new Set();
  let click = null;
  const toggle = { attributes: { "aria-expanded": "false" }, setAttribute(k, v) { this.attributes[k] = v; }, addEventListener: (_type, fn) => { click = fn; } };
  const card = {
    dataset: {},
    classList: { add: (c) => classes.add(c), toggle: (c) => (classes.has(c) ? (classes.delete(c), false) : (classes.add(c), true)) },
    querySelectorAll: () => [toggle],
  };
  onRenderChatMessage({ t: { localize: (k) => k } }, { flags: {} }, { querySelector: () => card });
  click({ preventDefault() {} });
  assert.equal(toggle.attributes["aria-expanded"], "true");
  assert.ok(classes.has("expanded"));
  click({ preventDefault() {} });
  assert.equal(toggle.attributes["aria-expanded"], "false");
  assert.ok(!classes.has("expanded"));
});

test("a card rendered again (an undo marks it, or a core fires both chat hooks) opens and closes once per click", () => {
  const classes = new Set();
  const clicks = [];
  const toggle = { attributes: {}, setAttribute(k, v) { this.attributes[k] = v; }, addEventListener: (_type, fn) => clicks.push(fn) };
  const card = {
    dataset: {},
    classList: { add: (c) => classes.add(c), toggle: (c) => (classes.has(c) ? (classes.delete(c), false) : (classes.add(c), true)) },
    querySelectorAll: () => [toggle],
  };
  onRenderChatMessage({ t: { localize: (k) => k } }, { flags: {} }, { querySelector: () => card });
  onRenderChatMessage({ t: { localize: (k) => k } }, { flags: {} }, { querySelector: () => card });
  for (const fn of clicks) fn({ preventDefault() {} });
  assert.equal(toggle.attributes["aria-expanded"], "true");
  assert.ok(classes.has("expanded"));
});
