// Every string is an i18n key (STYLE.md). Keys written in the code must exist, and the
// keys the code builds from the daemon's names (MINDSCAPE.Purpose.<purpose>,
// MINDSCAPE.Outcome.<outcome>, MINDSCAPE.Field.<combatant field>) exist for every name the
// shipped systems use. The lists below are those of `systems.describe` (dice_purposes,
// outcomes, combatant_schema) and docs/COMBATANTS.md; e2e.test.mjs checks them against a
// real companion too.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { EN, MODULE_DIR } from "../test-support/fakes.mjs";
import { codeHtml, escapeHtml, fill, filled, htmlText, plainText, spaced } from "../mindscape/scripts/labels.js";
import { elementOf, generation, i18n, readForm, renderTemplate, sightBlocked } from "../mindscape/scripts/foundry.js";

const has = (key) => typeof key.split(".").reduce((o, k) => o?.[k], EN) === "string";

const DAEMON_NAMES = {
  "revised-2e": {
    purposes: ["attack", "damage", "save", "effect-duration", "lost-power", "hp-damage", "open-duration", "wisdom-check", "mac-base", "mac-modifier", "initiative"],
    outcomes: ["hit", "miss"],
    fields: ["kind", "level", "class_group", "psp", "psp_max", "mthac0", "int", "wis", "con", "mac", "quick_mac", "mental_armor", "save_paralyzation", "attacks", "defenses", "mind", "conditions", "condition_rounds", "hp", "lost_powers"],
  },
  "combat-strength": {
    purposes: ["damage", "implosion", "save", "wave-effect", "condition-duration"],
    outcomes: ["damage", "no-effect", "crushed", "condition", "saved"],
    fields: ["attack_strength", "attack_strength_max", "defense_strength", "defense_strength_max", "original_total", "psionic", "int", "wis", "attacks", "defenses", "conditions", "condition_rounds"],
  },
  "power-pool": {
    purposes: ["attack", "defense", "save"],
    outcomes: ["attacker", "defender"],
    fields: ["hit_dice", "die", "pool", "dedicated", "psionic", "mindless", "attacks", "defenses", "conditions", "condition_rounds", "controlled_by", "controlling", "spell_levels", "blank_mind_save", "hp"],
  },
};

/** The keys a system's names need, from a `systems.describe` answer or the lists above. */
function keysFor(names) {
  return [
    ...names.purposes.map((p) => `MINDSCAPE.Purpose.${p}`),
    ...names.outcomes.map((o) => `MINDSCAPE.Outcome.${o}`),
    ...names.fields.map((f) => `MINDSCAPE.Field.${f}`),
  ];
}

for (const [system, names] of Object.entries(DAEMON_NAMES)) {
  test(`${system}: every purpose, outcome and combatant field the daemon names has a label`, () => {
    assert.deepEqual(keysFor(names).filter((k) => !has(k)), []);
  });
}

test("every key written in the scripts and templates exists, and no key is left unused at the top", () => {
  const files = [
    ...readdirSync(path.join(MODULE_DIR, "scripts")).map((f) => path.join(MODULE_DIR, "scripts", f)),
    ...readdirSync(path.join(MODULE_DIR, "templates")).map((f) => path.join(MODULE_DIR, "templates", f)),
  ];
  const missing = [];
  const used = new Set();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/MINDSCAPE\.[A-Za-z0-9_.-]*[A-Za-z0-9_-](\$\{)?/g)) {
      if (m[1]) continue; // built from a name: checked above
      used.add(m[0]);
      const isGroup = typeof m[0].split(".").reduce((o, k) => o?.[k], EN) === "object";
      if (!has(m[0]) && !isGroup) missing.push(`${path.basename(file)}: ${m[0]}`);
    }
  }
  assert.deepEqual(missing, []);
  // Top-level strings must be used somewhere (MINDSCAPE.Title was not).
  const unused = Object.entries(EN.MINDSCAPE).filter(([, v]) => typeof v === "string").map(([k]) => `MINDSCAPE.${k}`).filter((k) => !used.has(k));
  assert.deepEqual(unused, []);
});

test("texts that send the GM to a settings menu name its button as Foundry shows it", () => {
  // Foundry lists a module's menus under Configure Settings › <module title> by their
  // `label` (the button); a text naming a menu that does not exist leaves the GM looking.
  const labels = new Set([EN.MINDSCAPE.Pairing.MenuLabel, EN.MINDSCAPE.HouseRules.MenuLabel]);
  const texts = [];
  const walk = (node) => {
    for (const value of Object.values(node)) {
      if (typeof value === "string") texts.push(value);
      else walk(value);
    }
  };
  walk(EN);
  const routes = texts.flatMap((text) => text.split("Mindscape › ").slice(1));
  assert.ok(routes.length >= 6, "the pairing notices name the menu");
  for (const route of routes) {
    assert.ok([...labels].some((label) => route.startsWith(label)), `no settings menu is labelled as in "${route}"`);
  }
  const paths = texts.flatMap((text) => [...text.matchAll(/Game Settings › ([^›]+) › Mindscape/g)].map((m) => m[1]));
  for (const tab of paths) assert.equal(tab, "Configure Settings");
});

// ------------------------------------------------------------------ the companion's ids shown to people

const ENGINE = path.resolve(MODULE_DIR, "../../../engine");
const engineFiles = (dir = ENGINE) => readdirSync(dir, { withFileTypes: true })
  .flatMap((e) => (e.isDirectory() ? engineFiles(path.join(dir, e.name)) : [path.join(dir, e.name)]));
const tables = (system) => JSON.parse(readFileSync(path.join(ENGINE, system, "data/tables.json"), "utf8"));

/**
 * Every event type the three systems emit: each `Event("<type>"` in engine/, and the
 * types a table names (revised-2e's open-mind effects, power-pool's conditions won
 * instead of control or on success).
 */
function engineEventTypes() {
  const types = new Set();
  for (const file of engineFiles().filter((f) => f.endsWith(".py"))) {
    for (const m of readFileSync(file, "utf8").matchAll(/Event\("([a-z-]+)"/g)) types.add(m[1]);
  }
  for (const effect of Object.values(tables("revised_2e").open_mind.effects)) types.add(effect.type);
  for (const mode of Object.values(tables("power_pool").modes)) {
    if (mode.instead_of_control) types.add(mode.instead_of_control.condition);
    for (const e of mode.on_success ?? []) types.add(e.condition);
  }
  return types;
}

/**
 * One event of each type as the engine gives it (its data fields: engine/*), to check
 * that each reads as a whole sentence.
 */
const SAMPLE_EVENTS = [
  { type: "psp-spent", combatant: "a", amount: 2, for: "attack" },
  { type: "psp-regained", combatant: "a", amount: 10, hours: 2 },
  { type: "defense-raised", combatant: "b", mode: "mind-blank", paid_before: false },
  { type: "damage", combatant: "b", amount: 4, psp_lost: 4 },
  { type: "hp-damage", combatant: "b", amount: 6 },
  { type: "critical-hit", combatant: "b", by: "a" },
  { type: "save", combatant: "b", target: 13, roll: 3, success: false },
  { type: "down", combatant: "b", hp: -2 },
  { type: "mind-opened", combatant: "b", by: "critical", forced: true },
  { type: "mind-closed", combatant: "b", how: "paid" },
  { type: "mind-locked", combatant: "b", rounds: 3 },
  { type: "mind-may-close", combatant: "b", cost: 6 },
  { type: "mind-save", combatant: "b", target: 13, roll: 15, success: true },
  { type: "wisdom-check", combatant: "b", target: 9, roll: 12, success: false },
  { type: "mind-checks-capped", combatant: "b", rounds: 1000 },
  { type: "powers-return", combatant: "b", count: 2, days: 3 },
  { type: "lost-power", combatant: "b", days: 4 },
  { type: "dazed", combatant: "b", rounds: 2 },
  { type: "confused", combatant: "b", rounds: 3 },
  { type: "stunned", combatant: "a", round_ends: 1, reason: "rebuffed" },
  { type: "possessed", combatant: "b", by: "a" },
  { type: "frightened", combatant: "b", by: "a" },
  { type: "condition", combatant: "b", id: "mild-insanity", letter: "C", roll: 40, duration: null, rounds: null, text: "mild insanity" },
  { type: "condition-ended", combatant: "b", condition: "initiative-penalty" },
  { type: "initiative", combatant: "a", roll: 4, total: 6 },
  { type: "mac-rolled", combatant: "b", mac: 7 },
  { type: "attack-lost", combatant: "a", target: "b", reason: "stunned" },
  { type: "attack", combatant: "a", target: "b", mode: "ego-whip", range: "short", defense: null, table: "combat" },
  { type: "defense-unusable", combatant: "b", mode: "mind-blank", condition: "stunned" },
  { type: "stance", combatant: "a", stance: "trance", combat_strength: 110 },
  { type: "round-ended", combatant: null, round: 2 },
  { type: "attack-strength-spent", combatant: "a", amount: 7 },
  { type: "attack-strength-lost", combatant: "a", amount: 3 },
  { type: "defense-strength-lost", combatant: "b", amount: 12 },
  { type: "defenses-down", combatant: "b" },
  { type: "penetration-capped", combatant: "a", cap: 100 },
  { type: "mind-crushed", combatant: "b", chance: 25, roll: 12 },
  { type: "blank-mind-save", combatant: "a", against: "b", roll: 12, target: 15, success: false },
  { type: "spells-sacrificed", combatant: "b", levels: [3, 2], bonus: 5 },
  { type: "pool-die-lost", combatant: "a", dice: 1, reason: "rebuffed" },
  { type: "pool-regained", combatant: "a", amount: 2 },
  { type: "control-established", combatant: "b", controller: "a" },
  { type: "control-ended", combatant: "c", controller: "b", reason: "controller-overcome" },
  { type: "control-kept", combatant: "c", controller: "a", by: "die", pool: 2, targets: ["c"] },
  { type: "powers-ended", combatant: "a", dice: 2, reason: "rest" },
  { type: "dice-expended", combatant: "b", dice: 1, reason: "fell under control" },
  { type: "kept-by-action-instead", combatant: "a", asked: "die", creatures: 4, pool: 3 },
  { type: "group-dice-capped", combatant: null, dice: 110, limit: 100, cut: [{ id: "c", dice: 25, of: 35 }] },
];

test("every event the three systems emit reads as a sentence on the cards, with no raw field or id left", async () => {
  const { eventText } = await import("../mindscape/scripts/chat.js");
  const label = (k, f) => (has(k) ? k.split(".").reduce((o, x) => o[x], EN) : f);
  const names = new Map([["a", "Zanna"], ["b", "Aboleth"], ["c", "Randal"]]);
  const nameOf = (id) => (names.has(id) ? names.get(id) : id);
  const types = engineEventTypes();
  assert.ok(types.size >= 45, `found ${types.size} event types in engine/`);
  assert.deepEqual([...types].filter((type) => !has(`MINDSCAPE.Event.${type}`)).sort(), []);
  assert.deepEqual([...types].filter((type) => !SAMPLE_EVENTS.some((e) => e.type === type)).sort(), [], "a sample of each");
  for (const event of SAMPLE_EVENTS) {
    const text = eventText(event, nameOf, label);
    assert.doesNotMatch(text, /[{}?]|undefined|null|\b[a-z]+-[a-z]+\b|_/, `${event.type}: ${text}`);
  }
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "defense-raised"), nameOf, label), "Aboleth raises Mind blank");
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "save"), nameOf, label), "Aboleth's save (3 against 13) fails");
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "condition-ended"), nameOf, label), "Aboleth: Initiative penalty ends");
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "condition"), nameOf, label), "Aboleth: Mild insanity");
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "control-kept"), nameOf, label), "Zanna keeps control of Randal");
  assert.equal(eventText(SAMPLE_EVENTS.find((e) => e.type === "blank-mind-save"), nameOf, label), "Zanna's save against Aboleth's Blank Mind (12 against 15) fails");
});

test("an event a plugin system adds reads as its name and whom it is about, without its raw fields", async () => {
  const { eventText } = await import("../mindscape/scripts/chat.js");
  const label = (k, f) => (has(k) ? k.split(".").reduce((o, x) => o[x], EN) : f);
  assert.equal(eventText({ type: "mind-frozen", combatant: "b", rounds: 2, by: "a" }, (id) => ({ a: "Zanna", b: "Aboleth" })[id] ?? id, label), "Aboleth: mind frozen");
  assert.equal(eventText({ type: "storm-passes", combatant: null }, (id) => id, label), "storm passes");
});

test("every condition, mind state, encounter phase and fact value the systems give has a label", () => {
  const conditions = new Set(["stunned", "dazed", "confused", "initiative-penalty"]); // revised-2e (engine/revised_2e/rules.py, exchange.py)
  for (const c of Object.keys(tables("combat_strength").conditions)) conditions.add(c);
  const pool = readFileSync(path.join(ENGINE, "power_pool/combatant.py"), "utf8");
  for (const m of /CONDITIONS: tuple\[str, \.\.\.\] = \(([^)]*)\)/.exec(pool)[1].matchAll(/"([a-z-]+)"/g)) conditions.add(m[1]);
  assert.ok(conditions.size >= 21, `found ${conditions.size} conditions`);
  const keys = [
    ...[...conditions].map((c) => `MINDSCAPE.Condition.${c}`),
    ...["open", "closed"].map((s) => `MINDSCAPE.Mind.${s}`),
    // encounter.get's `phase`: revised-2e round, combat-strength intent and segment, power-pool attack and defense.
    ...["round", "intent", "segment", "attack", "defense"].map((p) => `MINDSCAPE.Phase.${p}`),
    // The card's facts that are ids: power-pool's winner, combat-strength's table (API.md).
    ...["attacker", "defender"].map((w) => `MINDSCAPE.Value.winner.${w}`),
    ...["combat", "defenseless", "wave"].map((t) => `MINDSCAPE.Value.table.${t}`),
    // exchange.odds chances beside the outcomes (CHANCE_NAMES).
    ...Object.values(CHANCE_NAMES).flat().map((c) => `MINDSCAPE.Chance.${c}`),
    // The panel's figures of each shipped system.
    ...["revised-2e", "combat-strength", "power-pool"].map((s) => `MINDSCAPE.Encounter.Summary.${s}`),
  ];
  assert.deepEqual(keys.filter((k) => !has(k)), []);
});

test("texts shown as they are (settings' hints, Foundry renders them) carry no code marks", () => {
  const plain = [EN.MINDSCAPE.Pairing.MenuHint, EN.MINDSCAPE.HouseRules.MenuHint, ...Object.values(EN.MINDSCAPE.Setting).flatMap((s) => [s.Name, s.Hint])];
  assert.deepEqual(plain.filter((text) => text.includes("`")), []);
});

// ------------------------------------------------------------------ both directions, placeholders

const SOURCES = () => [
  ...readdirSync(path.join(MODULE_DIR, "scripts")).map((f) => path.join(MODULE_DIR, "scripts", f)),
  ...readdirSync(path.join(MODULE_DIR, "templates")).map((f) => path.join(MODULE_DIR, "templates", f)),
].map((file) => ({ file: path.basename(file), text: readFileSync(file, "utf8") }));

/** Every string key of en.json, dotted. */
function leafKeys(node = EN, prefix = "") {
  return Object.entries(node).flatMap(([k, v]) => (typeof v === "string" ? [`${prefix}${k}`] : leafKeys(v, `${prefix}${k}.`)));
}

test("every key in en.json is used: written out in a script or template, or under a group the code builds keys in", () => {
  const text = SOURCES().map((s) => s.text).join("\n");
  // Groups the code builds keys in from a name: `MINDSCAPE.Mode.${id}`, idLabel(label, "Condition", id).
  const groups = new Set();
  for (const m of text.matchAll(/MINDSCAPE\.([A-Za-z0-9_.-]+\.)\$\{/g)) groups.add(`MINDSCAPE.${m[1]}`);
  for (const m of text.matchAll(/idLabel\([^,()]+,\s*["`]([A-Za-z]+)(\.)?/g)) groups.add(`MINDSCAPE.${m[1]}.`);
  const unused = leafKeys().filter((k) => !text.includes(k) && ![...groups].some((g) => k.startsWith(g)));
  assert.deepEqual(unused, []);
});

/**
 * The chances the odds panel shows beside the outcomes, by system: those `exchange.odds`
 * answers that `oddsView` reads as chances (engine/revised_2e/chances.py `odds_json`:
 * critical, mind_opened, save_rolled; engine/power_pool: control, tie, blank_mind_save),
 * and combat-strength's one row (`strengthOddsView`: defense_zero).
 */
const CHANCE_NAMES = {
  "revised-2e": ["critical", "mind_opened", "save_rolled"],
  "power-pool": ["control", "tie", "blank_mind_save"],
  "combat-strength": ["defense_zero"],
};

/** encounter.get's `phase` in each system (each engine's encounter.py): revised-2e round, combat-strength intent and segment, power-pool attack and defense. */
const PHASE_NAMES = ["round", "intent", "segment", "attack", "defense"];

test("the groups whose keys the code builds from the companion's names hold exactly those names: none missing, none dead", () => {
  const all = (field) => [...new Set(Object.values(DAEMON_NAMES).flatMap((names) => names[field]))].sort();
  const groups = {
    Purpose: all("purposes"),
    Outcome: all("outcomes"),
    Chance: [...new Set(Object.values(CHANCE_NAMES).flat())].sort(),
    Phase: [...PHASE_NAMES].sort(),
  };
  for (const [group, names] of Object.entries(groups)) assert.deepEqual(Object.keys(EN.MINDSCAPE[group]).sort(), names, `MINDSCAPE.${group}`);
});

test("the keys of groups built from the module's own lists are exactly those lists (no dead or missing key)", async () => {
  const { SETTINGS } = await import("../mindscape/scripts/settings.js");
  const { ROLL_MODES, RULE_SYSTEMS } = await import("../mindscape/scripts/consts.js");
  const { RANGES, attackProblem } = await import("../mindscape/scripts/requests.js");
  const M = EN.MINDSCAPE;
  assert.deepEqual(Object.keys(M.Setting).sort(), Object.keys(SETTINGS).sort());
  for (const key of Object.keys(SETTINGS)) assert.ok(M.Setting[key].Name && M.Setting[key].Hint, key);
  assert.deepEqual(Object.keys(M.RollMode).sort(), [...ROLL_MODES].sort());
  assert.deepEqual(Object.keys(M.System).sort(), [...RULE_SYSTEMS].sort());
  assert.deepEqual(Object.keys(M.Range).sort(), [...RANGES].sort());
  // Every rule attackProblem names has its text, and every text is a rule it names.
  const bad = [
    ["revised-2e", null], ["revised-2e", {}], ["revised-2e", { mode: "m", multiplier: 0 }], ["revised-2e", { mode: "m", range: "x" }],
    ["power-pool", { mode: "m", pool_dice: -1 }], ["power-pool", { mode: "m", keep_by: "x" }], ["power-pool", { mode: "m", decline: "frightened" }], ["revised-2e", { mode: "m", multipler: 2 }],
  ];
  const rules = new Set(bad.map(([system, attack]) => attackProblem(system, attack).rule));
  assert.deepEqual([...rules].sort(), Object.keys(M.Error.AttackRule).map((k) => `MINDSCAPE.Error.AttackRule.${k}`).sort());
});

test("every {placeholder} of a message the code formats with a key written out is filled by the data it passes", () => {
  const problems = [];
  for (const { file, text } of SOURCES()) {
    if (file.endsWith(".js")) {
      for (const m of text.matchAll(/format\(\s*"(MINDSCAPE\.[^"$]+)"\s*,\s*\{/g)) {
        // The object literal's top-level keys (shorthand or key: value); a spread fills anything.
        let depth = 0;
        let end = m.index + m[0].length - 1;
        for (; end < text.length; end++) {
          if ("{[(".includes(text[end])) depth++;
          else if ("}])".includes(text[end]) && --depth === 0) break;
        }
        const body = text.slice(m.index + m[0].length, end);
        if (body.includes("...")) continue;
        const given = new Set();
        let d = 0;
        let part = "";
        for (const ch of `${body},`) {
          if ("{[(".includes(ch)) d++;
          if ("}])".includes(ch)) d--;
          if (ch === "," && d === 0) { const k = /^\s*([A-Za-z_$][\w$]*)/.exec(part); if (k) given.add(k[1]); part = ""; } else part += ch;
        }
        const message = m[1].split(".").reduce((o, k) => o?.[k], EN);
        if (typeof message !== "string") { problems.push(`${file}: ${m[1]} has no text`); continue; }
        for (const p of message.matchAll(/\{([^}]+)\}/g)) if (!given.has(p[1])) problems.push(`${file}: ${m[1]} leaves {${p[1]}} unfilled`);
      }
    } else {
      for (const m of text.matchAll(/\{\{\s*localize\s+"(MINDSCAPE\.[^"]+)"([^}]*)\}\}/g)) {
        const message = m[1].split(".").reduce((o, k) => o?.[k], EN);
        const given = new Set([...m[2].matchAll(/(\w+)=/g)].map((x) => x[1]));
        for (const p of String(message).matchAll(/\{([^}]+)\}/g)) if (!given.has(p[1])) problems.push(`${file}: ${m[1]} leaves {${p[1]}} unfilled`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test("an id the language file does not know reads as words; placeholders are filled as Foundry's format does, a missing one marked only when asked", () => {
  assert.deepEqual(["mind-blank", "psionic_sense", "tower--of_-iron-will", null].map(spaced), ["mind blank", "psionic sense", "tower of iron will", ""]);
  assert.equal(fill("{name} holds {psp} PSPs", { name: "Ulcen", psp: 0 }), "Ulcen holds 0 PSPs");
  assert.equal(fill("{name} holds {psp} PSPs", { name: "Ulcen", psp: null }), "Ulcen holds {psp} PSPs");
  assert.equal(fill("{name} holds {psp} PSPs", { name: "Ulcen" }, "?"), "Ulcen holds ? PSPs");
  const label = (key, fallback) => ({ "MINDSCAPE.Known": "{who} rests" })[key] ?? fallback;
  assert.equal(filled(label, "MINDSCAPE.Known", {}, "someone"), "someone rests");
  assert.equal(filled(label, "MINDSCAPE.Plugin.x", {}), null);
});

test("texts placed in HTML are escaped: all five characters in an attribute's reach, only & < > in an element's text; commands as code, their marks dropped in plain text", () => {
  assert.equal(escapeHtml(`<a title="Tom's">&</a>`), "&lt;a title=&quot;Tom&#39;s&quot;&gt;&amp;&lt;/a&gt;");
  assert.equal(htmlText(`<b>"Tom's" & co</b>`), `&lt;b&gt;"Tom's" &amp; co&lt;/b&gt;`);
  assert.equal(codeHtml("Run `mindscape <serve>` & wait"), "Run <code>mindscape &lt;serve&gt;</code> &amp; wait");
  assert.equal(plainText("Run `mindscape serve`"), "Run mindscape serve");
});

test("Foundry's surface: the generation (12 unless told), a hook's element from jQuery or an application, v13's renderTemplate first, a missing key's fallback", async () => {
  assert.deepEqual([generation({}), generation({ release: { generation: 13 } })], [12, 13]);
  const el = { tagName: "DIV" };
  assert.deepEqual([elementOf({ 0: el, length: 1 }), elementOf({ element: el }), elementOf(el), elementOf(null)], [el, el, el, null]);
  const saved = [globalThis.foundry, globalThis.renderTemplate];
  const used = [];
  globalThis.foundry = { applications: { handlebars: { renderTemplate: async (p) => used.push(["v13", p]) } } };
  globalThis.renderTemplate = async (p) => used.push(["v12", p]);
  try {
    await renderTemplate("odds", {});
  } finally {
    [globalThis.foundry, globalThis.renderTemplate] = saved;
  }
  assert.deepEqual(used, [["v13", "modules/mindscape/templates/odds.hbs"]]);
  const game = { i18n: { has: (k) => k === "MINDSCAPE.Known", localize: (k) => (k === "MINDSCAPE.Known" ? "Known" : k) } };
  assert.deepEqual([i18n(game).label("MINDSCAPE.Known", "x"), i18n(game).label("MINDSCAPE.Unknown", "fallback")], ["Known", "fallback"]);
});

test("a form is read by its named fields: one checkbox of a list is a list, a multiple select its chosen values, buttons and unnamed fields left out", () => {
  const saved = globalThis.CSS;
  globalThis.CSS = { escape: (s) => s };
  const elements = [
    { name: "allies", type: "checkbox", value: "Actor.skum", checked: true, dataset: { list: "" } },
    { name: "targets", type: "select-multiple", tagName: "SELECT", multiple: true, selectedOptions: [{ value: "a" }, { value: "c" }] },
    { name: "go", type: "submit", value: "ok" },
    { name: "help", type: "button", value: "?" },
    { name: "", type: "text", value: "stray" },
    { name: "psp", type: "number", value: "4" },
  ];
  const form = { elements, querySelectorAll: (sel) => elements.filter((e) => e.type === "checkbox" && sel.includes(`"${e.name}"`)) };
  try {
    assert.deepEqual(readForm(form), { allies: ["Actor.skum"], targets: ["a", "c"], psp: "4" });
  } finally {
    globalThis.CSS = saved;
  }
});

test("sight between tokens is Foundry's sight backend's word: on one scene only, asked for sight, and unknown when it fails", () => {
  const asked = [];
  const backend = { testCollision: (a, b, o) => { asked.push(o.type); return true; } };
  const CONFIG = { Canvas: { polygonBackends: { sight: backend } } };
  const token = (x, scene = "s1") => ({ parent: { id: scene }, object: { center: { x, y: 0 } } });
  assert.equal(sightBlocked(CONFIG, token(0), token(10)), true);
  assert.deepEqual(asked, ["sight"]);
  assert.equal(sightBlocked(CONFIG, token(0), token(10, "s2")), null);
  backend.testCollision = () => { throw new Error("no walls yet"); };
  assert.equal(sightBlocked(CONFIG, token(0), token(10)), null);
});
