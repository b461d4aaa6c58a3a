// The daemon's dice as Foundry Roll data (VTT.md: Roll.fromData with evaluated Die terms),
// so Dice So Nice shows exactly the faces the daemon used.
import { test } from "node:test";
import assert from "node:assert/strict";
import { groupRolls, rollDataForGroup, rollDataFromDaemon, summedPurposes } from "../mindscape/scripts/rolls.js";
import { rollAdditions } from "../mindscape/scripts/chat.js";
import { DICE_PURPOSES } from "../test-support/scenario.mjs";

/** One of the daemon's rolls (API.md: `{purpose, sides, value, by, follows}`). */
const die = (purpose, sides, value, by, follows = null) => ({ purpose, sides, value, by, follows });

const rolls = [
  die("attack", 20, 20, "ulcen"),
  die("damage", 4, 4, "ulcen"), die("damage", 4, 4, "ulcen"), die("damage", 4, 3, "ulcen"), die("damage", 4, 1, "ulcen"),
  die("save", 20, 7, "fenka"),
];

// `systems.describe` answers as the companion gives them (test-support DICE_PURPOSES,
// which the browser tests check against the real companion's).
const DESCRIBED = Object.fromEntries(Object.entries(DICE_PURPOSES).map(([system, purposes]) => [system, { dice_purposes: purposes }]));
const R2E = { summed: summedPurposes(DESCRIBED["revised-2e"]) };

test("dice are grouped per purpose and roller, in rolling order (API.md example: attack, 4 damage, save)", () => {
  const groups = groupRolls(rolls, summedPurposes(DESCRIBED["revised-2e"]));
  assert.deepEqual(groups.map((g) => [g.purpose, g.by, g.dice.map((d) => d.value)]), [
    ["attack", "ulcen", [20]], ["damage", "ulcen", [4, 4, 3, 1]], ["save", "fenka", [7]],
  ]);
});

test("checks and saves are a roll each, never one roll of their sum: only the dice the rules add up are grouped", () => {
  // The real companion's rest (combatants.rest, seed 3): four Wisdom checks of an open
  // mind, one per round; its summary says "Wisdom check 5, rolled 5, after 4 tries".
  const checks = [8, 19, 18, 5].map((value) => die("wisdom-check", 20, value, "z"));
  const made = rollDataFromDaemon(checks, (p) => p, R2E);
  assert.deepEqual(made.map((r) => [r.formula, r.total]), [["1d20", 8], ["1d20", 19], ["1d20", 18], ["1d20", 5]]);
  // power-pool: each Blank Mind save (all `by` the attacker) alone, each side's pool summed.
  const pool = [
    die("save", 20, 12, "a"), die("save", 20, 4, "a"),
    die("attack", 8, 5, "a"), die("attack", 8, 7, "a"),
    die("defense", 6, 3, "b"), die("defense", 6, 6, "b"), die("defense", 8, 2, "c"),
  ];
  assert.deepEqual(rollDataFromDaemon(pool, (p) => p, { summed: summedPurposes(DESCRIBED["power-pool"]) }).map((r) => [r.options.flavor, r.formula, r.total]), [
    ["save", "1d20", 12], ["save", "1d20", 4], ["attack", "2d8", 12], ["defense", "2d6", 9], ["defense", "1d8", 2],
  ]);
  // The same purpose is summed in one system and not in another; a plugin's purpose that
  // does not say, or no description at all (the companion could not be asked), shows
  // each die alone.
  assert.equal(rollDataFromDaemon(pool.slice(2, 4), (p) => p, R2E).length, 2);
  const plugin = { dice_purposes: [{ purpose: "damage", sides: [4] }, { purpose: "attack", sides: [20], summed: "yes" }] };
  assert.equal(rollDataFromDaemon(rolls, (p) => p, { summed: summedPurposes(plugin) }).length, rolls.length);
  for (const none of [null, undefined, {}, { dice_purposes: { damage: { summed: true } } }]) {
    assert.equal(rollDataFromDaemon(rolls, (p) => p, { summed: summedPurposes(none) }).length, rolls.length);
  }
});

test("each group is an evaluated Roll whose Die results are the daemon's values", () => {
  const [attack, damage] = rollDataFromDaemon(rolls, (p) => `purpose:${p}`, R2E);
  assert.equal(attack.class, "Roll");
  assert.equal(attack.evaluated, true);
  assert.equal(attack.formula, "1d20");
  assert.equal(attack.total, 20);
  assert.equal(damage.formula, "4d4");
  assert.equal(damage.total, 12);
  const die = damage.terms[0];
  assert.equal(die.class, "Die");
  assert.equal(die.faces, 4);
  assert.equal(die.number, 4);
  assert.equal(die.evaluated, true);
  assert.deepEqual(die.results, [4, 4, 3, 1].map((v) => ({ result: v, active: true })));
  assert.equal(damage.options.flavor, "purpose:damage");
});

test("penetrating follow-ups stay beside the die they follow (API.md: [6, 6, 1, 3])", () => {
  const pen = [
    die("damage", 6, 6, "a"),
    die("damage", 6, 6, "a", 0),
    die("damage", 6, 1, "a", 1),
    die("damage", 6, 3, "a"),
  ];
  const [roll] = rollDataFromDaemon(pen, (p) => p, { summed: summedPurposes(DESCRIBED["combat-strength"]) });
  // Each follow-up counts its value − 1 (engine/dice.py): the roll says so, and its total
  // is what the dice are worth (6 + 5 + 0 + 3), not the faces' sum.
  assert.equal(roll.formula, "4d6 - 2");
  assert.deepEqual(roll.terms[0].results.map((r) => r.result), [6, 6, 1, 3]);
  assert.deepEqual(roll.terms.slice(1).map((t) => t.class), ["OperatorTerm", "NumericTerm"]);
  assert.equal(roll.total, 14);
});

test("a follow-up stays with the die it follows (the first die's index, 0, included) in a purpose not summed; a summed flag that is not true sums nothing", () => {
  const checks = [die("check", 6, 6, "a"), die("check", 6, 2, "a", 0), die("check", 6, 4, "a")];
  assert.deepEqual(rollDataFromDaemon(checks, (p) => p).map((r) => [r.formula, r.total]), [["2d6 - 1", 7], ["1d6", 4]]);
  const plugin = { dice_purposes: [{ purpose: "attack", sides: [20], summed: "yes" }] };
  assert.equal(rollDataFromDaemon([die("attack", 20, 3, "a"), die("attack", 20, 9, "a")], (p) => p, { summed: summedPurposes(plugin) }).length, 2);
});

test("points the rules take from the dice are shown as a subtraction, and each roll's flavor names its roller", () => {
  const damage = [die("damage", 4, 3, "ulcen"), die("damage", 4, 2, "ulcen"), die("damage", 4, 4, "fenka")];
  const made = rollDataFromDaemon(damage, (p, by) => `${p} of ${by}`, { ...R2E, addedTo: { damage: -2 }, labels: { added: "table" } });
  assert.deepEqual(made.map((r) => [r.options.flavor, r.formula, r.total]), [["damage of ulcen", "2d4 - 2[table]", 3], ["damage of fenka", "1d4 - 2[table]", 2]]);
});

test("combat-strength: the damage roll adds the table's points and the penetration's −1, so its total is the card's damage", () => {
  // A mind thrust on table A: 12 points + 4 penetrating d6 (6 → 4, 2, 1, 5): 12 + 9 + 2 + 1 + 5 = 29.
  const result = {
    system: "combat-strength", damage: 29, bonus_rolls: [9, 2, 1, 5],
    rolls: [
      die("damage", 6, 6, "a"),
      die("damage", 6, 4, "a", 0),
      die("damage", 6, 2, "a"),
      die("damage", 6, 1, "a"),
      die("damage", 6, 5, "a"),
    ],
  };
  const additions = rollAdditions(result, (key, fallback) => (key === "MINDSCAPE.Roll.TableValue" ? "table A" : fallback), DESCRIBED["combat-strength"]);
  assert.deepEqual(additions.addedTo, { damage: 12 });
  const [roll] = rollDataFromDaemon(result.rolls, (p) => p, additions);
  assert.equal(roll.formula, "5d6 - 1[penetration] + 12[table A]");
  assert.equal(roll.total, result.damage);
  assert.deepEqual(roll.terms.filter((t) => t.class === "NumericTerm").map((t) => [t.number, t.options.flavor]), [[1, "penetration"], [12, "table A"]]);
  // No damage dice, nothing to add to them.
  assert.deepEqual(rollAdditions({ system: "revised-2e", damage: 8, rolls: [] }).addedTo, {});
});

test("revised-2e: a damage roll adds the mode's bonus for each step, so its total is the card's damage (the real companion's ego whip ×2)", () => {
  // engine/revised_2e/exchange.py: damage = sum(dice) + bonus × multiplier; ego whip 1d6+1 a step.
  const result = {
    system: "revised-2e", outcome: "hit", damage: 8, mode: "ego-whip", multiplier: 2,
    rolls: [
      die("attack", 20, 11, "z"),
      die("damage", 6, 2, "z"),
      die("damage", 6, 4, "z"),
    ],
  };
  const additions = rollAdditions(result, undefined, DESCRIBED["revised-2e"]);
  assert.deepEqual(additions.addedTo, { damage: 2 });
  const damage = rollDataFromDaemon(result.rolls, (p) => p, additions).find((r) => r.options.flavor === "damage");
  assert.equal(damage.formula, "2d6 + 2[damage bonus]");
  assert.equal(damage.total, result.damage);
  // Psionic blast ×3 (1d12+4 a step): 12 points on top of the dice.
  const blast = { ...result, mode: "psionic-blast", multiplier: 3, damage: 5 + 7 + 1 + 12, rolls: [5, 7, 1].map((value) => die("damage", 12, value, "z")) };
  const [roll] = rollDataFromDaemon(blast.rolls, (p) => p, rollAdditions(blast, undefined, DESCRIBED["revised-2e"]));
  assert.equal(roll.formula, "3d12 + 12[damage bonus]");
  assert.equal(roll.total, 25);
  // A mode without a bonus (mind thrust) is its dice alone.
  const thrust = { ...result, mode: "mind-thrust", damage: 6 };
  assert.equal(rollDataFromDaemon(thrust.rolls, (p) => p, rollAdditions(thrust, undefined, DESCRIBED["revised-2e"])).find((r) => r.options.flavor === "damage").formula, "2d6");
});

test("mixed faces in one group become Die terms joined by +", () => {
  const data = rollDataForGroup({ purpose: "mac-base", by: null, dice: [{ sides: 2, value: 1 }, { sides: 10, value: 7 }] }, "MAC");
  assert.equal(data.formula, "1d2 + 1d10");
  assert.deepEqual(data.terms.map((t) => t.class), ["Die", "OperatorTerm", "Die"]);
  assert.equal(data.total, 8);
});

test("no dice, no rolls", () => {
  assert.deepEqual(rollDataFromDaemon([]), []);
  assert.deepEqual(rollDataFromDaemon(undefined), []);
});
