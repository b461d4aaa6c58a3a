// The fakes' Document#update behaves as Foundry's (expandObject, then mergeObject with
// performDeletions), so write-backs are tested against what Foundry really stores; and
// the profile editor leaves the sheet's own fields (hp) to the sheet.
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyDotted as fakesApply, FakeWorld } from "../test-support/fakes.mjs";
import { applyDotted as standinApply } from "../test-support/standin.mjs";
import { profileFields, profileFromForm, SKIP } from "../mindscape/scripts/profile.js";

const KEY = "flags.mindscape.power-pool.condition_rounds";

for (const [name, apply] of [["fakes", fakesApply], ["standin", standinApply]]) {
  test(`${name}: an object written over a stored one is merged key by key, as Foundry does`, () => {
    const data = { flags: { mindscape: { "power-pool": { condition_rounds: { dazed: 1, stunned: 2 }, psionic: true } } } };
    apply(data, { [KEY]: { stunned: 1 } });
    assert.deepEqual(data.flags.mindscape["power-pool"], { condition_rounds: { dazed: 1, stunned: 1 }, psionic: true });
  });

  test(`${name}: "-=key" after its object's value deletes the key; before it, the value overwrites the deletion`, () => {
    const data = { flags: { mindscape: { "power-pool": { condition_rounds: { dazed: 1, stunned: 2 } } } } };
    apply(data, { [KEY]: { stunned: 1 }, [`${KEY}.-=dazed`]: null });
    assert.deepEqual(data.flags.mindscape["power-pool"].condition_rounds, { stunned: 1 });
    const early = { flags: { mindscape: { "power-pool": { condition_rounds: { dazed: 1, stunned: 2 } } } } };
    apply(early, { [`${KEY}.-=dazed`]: null, [KEY]: { stunned: 1 } });
    assert.deepEqual(early.flags.mindscape["power-pool"].condition_rounds, { dazed: 1, stunned: 1 });
  });

  test(`${name}: arrays and numbers replace; a deleted system profile is gone before the new one is set`, () => {
    const data = { flags: { mindscape: { "revised-2e": { attacks: ["ego-whip", "mind-thrust"], psp: 3, kind: "psionicist" } } } };
    apply(data, { "flags.mindscape.revised-2e.attacks": ["mind-thrust"], "flags.mindscape.revised-2e.psp": 1 });
    assert.deepEqual(data.flags.mindscape["revised-2e"], { attacks: ["mind-thrust"], psp: 1, kind: "psionicist" });
    apply(data, { "flags.mindscape.-=revised-2e": null });
    apply(data, { "flags.mindscape.revised-2e": { psp: 5 } });
    assert.deepEqual(data.flags.mindscape, { "revised-2e": { psp: 5 } });
  });
}

test("a fake actor's update merges flags as Foundry does and keeps the value given unchanged", async () => {
  const world = new FakeWorld();
  const actor = world.actor({ id: "a1", name: "A", flags: { mindscape: { "power-pool": { condition_rounds: { dazed: 1 } } } } });
  const value = { stunned: 1 };
  await actor.update({ [KEY]: value, [`${KEY}.-=dazed`]: null });
  assert.deepEqual(actor.flags.mindscape["power-pool"].condition_rounds, { stunned: 1 });
  assert.deepEqual(value, { stunned: 1 });
});

test("the profile editor does not offer hp: hit points live on the game system's sheet", () => {
  const schema = { type: "object", properties: { id: { type: "string" }, psp: { type: "integer" }, hp: { type: ["integer", "null"] } } };
  const { fields, advanced } = profileFields(schema, { psp: 3, hp: 9 });
  assert.deepEqual(fields.map((f) => f.key), ["psp"]);
  assert.equal(advanced, "");
  assert.ok(SKIP.has("hp"));
  // saving replaces the whole profile, so a stale stored hp is dropped
  assert.deepEqual(profileFromForm(fields, { psp: "4" }), { psp: 4 });
});
