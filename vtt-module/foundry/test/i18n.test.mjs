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
