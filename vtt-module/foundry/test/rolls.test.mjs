// The daemon's dice as Foundry Roll data (VTT.md: Roll.fromData with evaluated Die terms),
// so Dice So Nice shows exactly the faces the daemon used.
import { test } from "node:test";
import assert from "node:assert/strict";
import { groupRolls, rollDataForGroup, rollDataFromDaemon } from "../mindscape/scripts/rolls.js";

const rolls = [
  { purpose: "attack", sides: 20, value: 20, by: "ulcen", follows: null },
  { purpose: "damage", sides: 4, value: 4, by: "ulcen", follows: null },
  { purpose: "damage", sides: 4, value: 4, by: "ulcen", follows: null },
  { purpose: "damage", sides: 4, value: 3, by: "ulcen", follows: null },
  { purpose: "damage", sides: 4, value: 1, by: "ulcen", follows: null },
  { purpose: "save", sides: 20, value: 7, by: "fenka", follows: null },
];

test("dice are grouped per purpose and roller, in rolling order (API.md example: attack, 4 damage, save)", () => {
  const groups = groupRolls(rolls);
  assert.deepEqual(groups.map((g) => [g.purpose, g.by, g.dice.map((d) => d.value)]), [
    ["attack", "ulcen", [20]], ["damage", "ulcen", [4, 4, 3, 1]], ["save", "fenka", [7]],
  ]);
});

test("each group is an evaluated Roll whose Die results are the daemon's values", () => {
  const [attack, damage] = rollDataFromDaemon(rolls, (p) => `purpose:${p}`);
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
    { purpose: "damage", sides: 6, value: 6, by: "a", follows: null },
    { purpose: "damage", sides: 6, value: 6, by: "a", follows: 0 },
    { purpose: "damage", sides: 6, value: 1, by: "a", follows: 1 },
    { purpose: "damage", sides: 6, value: 3, by: "a", follows: null },
  ];
  const [roll] = rollDataFromDaemon(pen);
  assert.equal(roll.formula, "4d6");
  assert.deepEqual(roll.terms[0].results.map((r) => r.result), [6, 6, 1, 3]);
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
