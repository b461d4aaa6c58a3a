// Every visible string is an i18n key present in lang/en.json; every template renders.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { EN, MODULE_DIR, makeI18n } from "../test-support/fakes.mjs";
import { renderModuleTemplate } from "../test-support/scenario.mjs";
import { pairingTexts } from "../mindscape/scripts/dialogs.js";
import { compile as compileLite } from "../test-support/handlebars-lite.mjs";

const i18n = makeI18n();
const scripts = readdirSync(path.join(MODULE_DIR, "scripts")).map((f) => readFileSync(path.join(MODULE_DIR, "scripts", f), "utf8")).join("\n");
const templates = Object.fromEntries(readdirSync(path.join(MODULE_DIR, "templates")).map((f) => [f, readFileSync(path.join(MODULE_DIR, "templates", f), "utf8")]));

test("every i18n key named in the scripts and templates exists in en.json", () => {
  const keys = new Set();
  for (const m of scripts.matchAll(/"(MINDSCAPE\.[A-Za-z]+(?:\.[A-Za-z0-9-]+)+)"/g)) keys.add(m[1]);
  for (const src of Object.values(templates)) for (const m of src.matchAll(/localize "([^"]+)"/g)) keys.add(m[1]);
  const missing = [...keys].filter((k) => !i18n.has(k));
  assert.deepEqual(missing, []);
  assert.ok(keys.size > 60);
});

test("every setting has a name and hint, every mode id a label", () => {
  for (const key of ["daemonUrl", "daemonToken", "physicalDice", "ruleSystem", "houseRules", "genericMapping", "playersMayAttack", "rollMode", "defenseTimeout", "endRoundWithTracker", "encounter"]) {
    assert.ok(i18n.has(`MINDSCAPE.Setting.${key}.Name`) && i18n.has(`MINDSCAPE.Setting.${key}.Hint`), key);
  }
  const modes = Object.keys(EN.MINDSCAPE.Mode);
  for (const id of ["ego-whip", "id-insinuation", "mind-thrust", "psionic-blast", "psychic-crush", "psionic-wave", "psychic-implosion", "mental-stab", "pinnacle-of-will", "shield-thoughts", "tower-of-iron-will"]) assert.ok(modes.includes(id), id);
});

test("templates carry no hard-coded English outside {{localize}} (labels, buttons, headings)", () => {
  for (const [name, src] of Object.entries(templates)) {
    const text = src.replace(/{{[^}]*}}/g, "").replace(/<[^>]*>/g, " ");
    const words = text.split(/\s+/).filter((w) => /[A-Za-z]{3,}/.test(w));
    assert.deepEqual(words, [], name);
  }
});

test("every template renders with a plausible context", () => {
  const contexts = {
    "attack-dialog.hbs": { attackerName: "A", targetNames: "B", attacks: [{ id: "mind-thrust", label: "Mind thrust", cost: 2, selected: true }], multipliers: [{ value: 1, selected: true }], ranges: [{ value: "short", label: "Short" }], defenses: [{ id: "mind-blank", label: "Mind blank" }], targets: [], poolDice: [] },
    "odds.hbs": { outcomes: [{ name: "hit", label: "Hit", percent: "50.00%" }], extras: [], damage: { mean: 2, max: 4 } },
    "defense-dialog.hbs": { attackerName: "A", defenderName: "B", attackLabel: "Ego whip", defenses: [{ id: "mind-blank", label: "Mind blank", cost: 3 }], noneSelected: true, seconds: 30 },
    "dice-prompt.hbs": { needed: 2, sides: 4, purposeLabel: "Damage", slots: [{ index: 1 }, { index: 2 }] },
    "pairing.hbs": { url: "http://127.0.0.1:39393", token: "", origin: "https://x.example", hosted: true, ...pairingTexts("https://x.example", makeI18n()) },
    "profile.hbs": { actorName: "A", systemLabel: "S", fields: [{ key: "psp", label: "PSPs", isNumber: true, value: 3 }, { key: "attacks", label: "Attacks", isMulti: true, options: [{ value: "ego-whip", label: "Ego whip", checked: true }] }], advanced: "" },
    "house-rules.hbs": { systemLabel: "S", rules: [{ id: "H-1", text: "t", isBoolean: true, checked: true }] },
    "encounter.hbs": { active: true, name: "E", combatants: [{ id: "a", name: "A", summary: "PSP 1/2", waiting: true }], waitingNames: "A" },
    "encounter-action.hbs": { combatantName: "A", phase: "attack", canPass: true, controlled: [{ id: "t", name: "Thrall" }] },
    "encounter-choice.hbs": { combatantName: "A", attacks: [{ id: "ego-whip", label: "Ego whip" }], targets: [{ id: "b", name: "B" }], defenses: [], multipliers: [{ value: 1 }], ranges: [], poolDice: [] },
    "chat-card.hbs": { outcome: "hit", outcomeLabel: "Hit", attackerName: "A", defenderName: "B", facts: [], changes: [], dice: [] },
    "close-dialog.hbs": { name: "Fenka", cost: 6, psp: 30, defenseLabel: "Mind blank", lastDefense: true, seconds: 30 },
    "control-dialog.hbs": {
      name: "Goblin",
      links: [
        { index: 0, names: "Fenka", kept: "Goblin holds it by an action each round, and must perceive it.", together: false, choices: [{ value: "hold", label: "Keep it as it is", checked: true }, { value: "release", label: "Release it" }, { value: "cannot_perceive", label: "Lost sight of it: the control ends" }] },
        { index: 1, names: "Thrall, Ox", kept: "Goblin holds it by a die from its pool (a psionic wave: one for each creature), until released; no action, no sight needed.", together: true, choices: [{ value: "hold", label: "Keep it as it is", checked: true }, { value: "keep", label: "Keep it by an action each round instead (its dice return to the pool)" }] },
      ],
      seconds: 30,
    },
    "join-dialog.hbs": { name: "Seer", attackerName: "Ulcen", attackLabel: "Mental stab", allies: "Fenka", modeLabel: "Imagination swarm", groups: [{ value: "0", names: "Fenka", checked: true }], several: false, seconds: 30 },
    "rest-dialog.hbs": { askHours: true, names: "Ulcen, Fenka", min: 1, max: 1000, value: 8, systemLabel: "S", problem: "Type a whole number." },
    "round-card.hbs": { round: 3, icon: "fa-hourglass-end", summary: "End of the round: A is no longer stunned.", changes: [{ name: "A", label: "Conditions", before: "Stunned", after: "—" }], hasChanges: true, dice: [{ purposeLabel: "Save", sides: 20, value: 12, by: "A" }], events: [{ type: "condition-ended", text: "A: Stunned ends" }], systemLabel: "S" },
  };
  for (const name of Object.keys(templates)) {
    assert.ok(contexts[name], `a context for ${name}`);
    const html = renderModuleTemplate(name.replace(/\.hbs$/, ""), contexts[name]);
    assert.doesNotMatch(html, /MINDSCAPE\./, `${name} has an unknown key`);
  }
  assert.match(renderModuleTemplate("dice-prompt", contexts["dice-prompt.hbs"]), /name="die-2" min="1" max="4"/);
  // The commands to type show as code, never as backticks.
  const pairing = renderModuleTemplate("pairing", contexts["pairing.hbs"]);
  assert.match(pairing, /<code>mindscape serve --allow-origin https:\/\/x\.example<\/code>/);
  assert.match(pairing, /Start the companion on this computer with <code>mindscape serve<\/code>, print its token with <code>mindscape token<\/code>/);
  assert.doesNotMatch(pairing, /`|&#x60;/);
  // The end-of-round card names the round the tracker left, or none for a macro's round.
  assert.match(renderModuleTemplate("round-card", contexts["round-card.hbs"]), /<h3>End of psionic round 3<\/h3>/);
  assert.match(renderModuleTemplate("round-card", { ...contexts["round-card.hbs"], round: null }), /<h3>End of the psionic round<\/h3>/);
  // A rest's card is the same card under its own title.
  assert.match(renderModuleTemplate("round-card", { ...contexts["round-card.hbs"], title: "Psionic rest", cardClass: "mindscape-rest-card" }), /mindscape-round-card mindscape-rest-card[\s\S]*<h3>Psionic rest<\/h3>/);
  // The close dialog shows the cost and where it comes from: the last defense, or the cheapest known.
  const close = renderModuleTemplate("close-dialog", contexts["close-dialog.hbs"]);
  assert.match(close, /Pay 6 PSPs to close the mind of Fenka/);
  assert.match(close, /twice the cost of Mind blank, the last defense it used/);
  assert.match(renderModuleTemplate("close-dialog", { ...contexts["close-dialog.hbs"], lastDefense: false }), /twice the cost of Mind blank, the cheapest defense it knows/);
  // Who sees the question: the owner and the GM, or, asked on the GM's own client for an
  // NPC (`askedHere`), nobody else.
  assert.match(close, /Only you and the GM see this\. Without an answer, it does not pay, in <span class="mindscape-countdown">30<\/span> s/);
  assert.match(renderModuleTemplate("close-dialog", { ...contexts["close-dialog.hbs"], askedHere: true }), /The players do not see this\. Without an answer, it does not pay, in/);
  const joinQuestion = renderModuleTemplate("join-dialog", contexts["join-dialog.hbs"]);
  assert.match(joinQuestion, /Only you and the GM see this\. Without an answer, Seer stays out, in <span class="mindscape-countdown">30<\/span> s/);
  assert.match(renderModuleTemplate("join-dialog", { ...contexts["join-dialog.hbs"], askedHere: true }), /The players do not see this\. Without an answer, Seer stays out, in/);
  // The control question: one group of choices per link, named by its creatures, the
  // first (keep it as it is) checked; a wave's creatures are one link, said to go together.
  const control = renderModuleTemplate("control-dialog", contexts["control-dialog.hbs"]);
  assert.match(control, /What becomes of the creatures under Goblin&#x27;s control\?/);
  assert.match(control, /<legend>Fenka<\/legend>[\s\S]*name="link-0" value="hold" checked> Keep it as it is[\s\S]*name="link-0" value="release"> Release it[\s\S]*name="link-0" value="cannot_perceive"> Lost sight/);
  assert.match(control, /<legend>Thrall, Ox<\/legend>[\s\S]*One psionic wave[\s\S]*name="link-1" value="keep"> Keep it by an action/);
  assert.equal(control.match(/One psionic wave/g).length, 1);
  assert.match(control, /every control holds as it is, in <span class="mindscape-countdown">30<\/span> s/);
  // power-pool's choice: the attack with a wave's further targets and how control is
  // kept, or in the defense phase the defense with a swarm's allies; the public actions
  // instead, those on a controlled creature only when it controls one.
  const others = [{ id: "b", name: "B" }, { id: "c", name: "C" }];
  const pool = { ...contexts["encounter-choice.hbs"], system: "power-pool", phase: "attack", phaseLabel: "Attack", poolDice: [{ value: 3, selected: true }], pool: { defensePhase: false, controlled: [], others, allies: others.slice(0, 1), waveModes: "psionic-wave" } };
  const attackPhase = renderModuleTemplate("encounter-choice", pool);
  assert.match(attackPhase, /name="attackMode"><option value="">No attack \(pass this round\)/);
  assert.match(attackPhase, /Also strike \(psionic wave\)[\s\S]*name="waveTargets" value="b" data-list> B[\s\S]*name="waveTargets" value="c" data-list> C/);
  // How control is kept reads, is ordered and defaults as in the attack dialog (below).
  assert.match(attackPhase, /If it wins, keep control by[\s\S]*name="attackKeepBy"><option value="action" selected>An action each round<\/option><option value="die">A pool die \(a psionic wave: one for each creature held; until released\)<\/option><\/select>/);
  // The phase by its label, not its id.
  assert.match(attackPhase, /<strong>A<\/strong> <span class="mindscape-system">Attack<\/span>/);
  // The phase the dialog was made for, and the modes that strike several targets.
  assert.match(attackPhase, /<input type="hidden" name="phase" value="attack">/);
  assert.match(attackPhase, /<input type="hidden" name="waveModes" value="psionic-wave">/);
  assert.doesNotMatch(attackPhase, /name="defenseMode"|name="multiplier"|name="range"|name="controlTarget"|value="release"/);
  assert.match(attackPhase, /<option value="pass">Pass: no attack this round<\/option>\s*<option value="rest">A long rest<\/option>\s*<\/select>/);
  const controlling = renderModuleTemplate("encounter-choice", { ...pool, pool: { ...pool.pool, controlled: [{ id: "t", name: "Thrall" }] } });
  assert.match(controlling, /value="release">Release a controlled creature[\s\S]*name="controlTarget"><option value="t">Thrall/);
  // The defense phase: the defense and the allies, and nothing public (those wait
  // until the exchange is resolved).
  const defending = renderModuleTemplate("encounter-choice", { ...pool, pool: { ...pool.pool, defensePhase: true, controlled: [{ id: "t", name: "Thrall" }] } });
  assert.match(defending, /name="defenseMode"/);
  assert.match(defending, /Draw in \(imagination swarm\)[\s\S]*name="allies" value="b" data-list/);
  assert.doesNotMatch(defending, /name="allies" value="c"/);
  assert.doesNotMatch(defending, /name="attackMode"|name="waveTargets"|name="action"|name="controlTarget"/);
  // power-pool's single attack: how control is kept if it wins; the defense dialog's
  // allies of an imagination swarm (enabled only with a mode that draws them in); the
  // card's line of the allies drawn in and how each defended.
  const keepBy = renderModuleTemplate("attack-dialog", { ...contexts["attack-dialog.hbs"], keepBy: true });
  assert.match(keepBy, /If it wins, keep control by[\s\S]*name="keep_by">\s*<option value="action" selected>An action each round<\/option>\s*<option value="die">A pool die \(a psionic wave: one for each creature held; until released\)<\/option>\s*<\/select>/);
  assert.doesNotMatch(renderModuleTemplate("attack-dialog", contexts["attack-dialog.hbs"]), /name="keep_by"/);
  const swarm = renderModuleTemplate("defense-dialog", { ...contexts["defense-dialog.hbs"], allies: [{ uuid: "Scene.s.Token.p", name: "Porter" }, { uuid: "Scene.s.Token.h", name: "Hound" }], allyModes: "imagination-swarm", allyModeLabels: "Imagination swarm" });
  assert.match(swarm, /<fieldset class="mindscape-pool-list mindscape-defense-allies" data-ally-modes="imagination-swarm">\s*<legend>Draw in non-psionic allies \(with Imagination swarm\)<\/legend>/);
  assert.match(swarm, /name="allies" value="Scene.s.Token.p" data-list> Porter<\/label><label><input type="checkbox" name="allies" value="Scene.s.Token.h" data-list> Hound<\/label>/);
  // Seed 001: a psionic creature joins by its own choice; the dialog says why none is listed.
  assert.match(swarm, /A psionic creature is never drawn in: it joins only by its own choice\./);
  assert.doesNotMatch(renderModuleTemplate("defense-dialog", contexts["defense-dialog.hbs"]), /name="allies"/);
  const allied = renderModuleTemplate("chat-card", { ...contexts["chat-card.hbs"], allies: [{ name: "Porter", how: "drawn in, dazed, 1d4" }] });
  assert.match(allied, /<p class="modes mindscape-allies">Allies: <span class="ally">Porter \(drawn in, dazed, 1d4\)<\/span><\/p>/);
  const two = renderModuleTemplate("chat-card", { ...contexts["chat-card.hbs"], allies: [{ name: "Porter", how: "drawn in, dazed, 1d4" }, { name: "Seer", how: "Imagination swarm, 2d6" }] });
  assert.match(two, /Porter \(drawn in, dazed, 1d4\)<\/span>, <span class="ally">Seer/);
  assert.doesNotMatch(renderModuleTemplate("chat-card", contexts["chat-card.hbs"]), /mindscape-allies/);
  // Seed 001: a psionic creature joins an ally's defense by its own choice. The question
  // says who is attacked (and, in a single attack, by whom and how); with one defense to
  // join it goes with the form, with several the creature picks one.
  const join = renderModuleTemplate("join-dialog", contexts["join-dialog.hbs"]);
  assert.match(join, /Ulcen attacks Fenka with Mental stab\./);
  assert.match(join, /Does Seer join the defense with Imagination swarm, by its own choice\?/);
  assert.match(join, /<input type="hidden" name="join" value="0">/);
  assert.match(join, /Without an answer, Seer stays out, in <span class="mindscape-countdown">30<\/span> s/);
  assert.doesNotMatch(join, /type="radio"/);
  const unseen = renderModuleTemplate("join-dialog", { ...contexts["join-dialog.hbs"], attackerName: null, attackLabel: null });
  assert.match(unseen, /A psionic attack strikes Fenka\./);
  assert.doesNotMatch(unseen, /Ulcen|Mental stab/);
  const several = renderModuleTemplate("join-dialog", { ...contexts["join-dialog.hbs"], allies: "Fenka, Bravo", several: true, groups: [{ value: "0", names: "Fenka", checked: true }, { value: "1", names: "Bravo" }] });
  assert.match(several, /<legend>Join the defense of<\/legend>[\s\S]*name="join" value="0" checked> Fenka[\s\S]*name="join" value="1"> Bravo/);
  // The rest dialog asks whole hours in the system's range, or confirms one long rest.
  assert.match(renderModuleTemplate("rest-dialog", contexts["rest-dialog.hbs"]), /name="hours" min="1" max="1000" step="1" value="8"/);
  assert.doesNotMatch(renderModuleTemplate("rest-dialog", { ...contexts["rest-dialog.hbs"], askHours: false }), /name="hours"/);
});

// The test renderer stands in for Foundry's Handlebars: what it cannot read as
// Handlebars does must fail a test, not render otherwise (audit of 2026-12-03: a
// subexpression, `./`, `@root`, a single-quoted hash value, `else if`, `#each` over a
// Map and `#with 0` all rendered differently, silently).
test("handlebars-lite refuses what it would render otherwise than Handlebars", () => {
  const helpers = { localize: (key, { hash }) => `${key}${Object.keys(hash).length ? JSON.stringify(hash) : ""}` };
  for (const source of [
    '{{localize (concat "A." x)}}',
    "{{./name}}",
    "{{@root.name}}",
    "{{> part}}",
    "{{#if x}}a{{else if y}}b{{/if}}",
    "{{#if x includeZero=true}}a{{/if}}",
  ]) {
    assert.throws(() => compileLite(source, helpers)({ x: 1, y: 1, name: "n" }), /handlebars-lite: unsupported|takes one argument/, source);
  }
  assert.throws(() => compileLite("{{#each m}}{{this}}{{/each}}")({ m: new Map([["a", 1]]) }), /Map or a Set/);
});

test("handlebars-lite reads as Handlebars does: quoted hash values of both kinds, #with 0, #if 0 and []", () => {
  const helpers = { localize: (key, { hash }) => `${key}:${hash.a}` };
  assert.equal(compileLite("{{localize \"K\" a='q'}}|{{localize 'K' a=\"r\"}}", helpers)({}), "K:q|K:r");
  assert.equal(compileLite("{{#with n}}[{{this}}]{{else}}none{{/with}}")({ n: 0 }), "[0]");
  assert.equal(compileLite("{{#with n}}[{{this}}]{{else}}none{{/with}}")({ n: [] }), "none");
  assert.equal(compileLite("{{#if n}}yes{{else}}no{{/if}}|{{#if l}}yes{{else}}no{{/if}}")({ n: 0, l: [] }), "no|no");
});
