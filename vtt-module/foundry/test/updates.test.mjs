// Update routing (VTT.md: resolve the actor from the token used; an unlinked token has its
// own synthetic actor; updating the base actor would change every copy).
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyPlan, participantOf, planUpdates } from "../mindscape/scripts/updates.js";
import { FakeWorld } from "../test-support/fakes.mjs";

function world() {
  const w = new FakeWorld();
  const hero = w.actor({ id: "hero", name: "Hero", flags: { mindscape: { "revised-2e": { psp: 40 } } } });
  const orc = w.actor({ id: "orc", name: "Orc", flags: { mindscape: { "revised-2e": { psp: 12 } } } });
  const heroToken = w.token({ id: "t1", name: "Hero", actor: hero, actorLink: true });
  const orcA = w.token({ id: "t2", name: "Orc A", actor: orc, actorLink: false });
  const orcB = w.token({ id: "t3", name: "Orc B", actor: orc, actorLink: false });
  return { w, hero, orc, heroToken, orcA, orcB };
}

test("an update for a linked token's actor goes to the world actor", async () => {
  const { w, hero, heroToken } = world();
  const { plan } = planUpdates([{ uuid: "Actor.hero", update: { "flags.mindscape.revised-2e.psp": 32 } }], [participantOf(heroToken, hero)]);
  assert.deepEqual(plan, [{ uuid: "Actor.hero", update: { "flags.mindscape.revised-2e.psp": 32 } }]);
  const report = await applyPlan(plan, w.fromUuid);
  assert.deepEqual(report, [{ uuid: "Actor.hero", ok: true }]);
  assert.equal(hero.flags.mindscape["revised-2e"].psp, 32);
});

test("an update for an unlinked token lands on its synthetic actor only", async () => {
  const { w, orc, orcA, orcB } = world();
  const parts = [participantOf(orcA, orcA.actor)];
  const { plan } = planUpdates([{ uuid: `${orcA.uuid}.Actor.orc`, update: { "flags.mindscape.revised-2e.psp": 1 } }], parts);
  await applyPlan(plan, w.fromUuid);
  assert.equal(orcA.actor.flags.mindscape["revised-2e"].psp, 1);
  assert.equal(orcB.actor.flags.mindscape["revised-2e"].psp, 12);
  assert.equal(orc.flags.mindscape["revised-2e"].psp, 12);
});

test("an update addressed to an unlinked token's base actor is redirected to the synthetic actor", () => {
  const { orcA } = world();
  const { plan } = planUpdates([{ uuid: "Actor.orc", update: { "system.attributes.hp.value": 3 } }], [participantOf(orcA, orcA.actor)]);
  assert.deepEqual(plan, [{ uuid: `${orcA.uuid}.Actor.orc`, update: { "system.attributes.hp.value": 3 } }]);
});

test("an update addressed to a base actor that is itself a participant is that actor's own, whichever comes first", () => {
  const { orc, orcA } = world();
  // A world actor and one of its unlinked tokens in one call (a rest of both, a tracker
  // combatant without a token beside a token of the same actor).
  const updates = [
    { uuid: "Actor.orc", update: { "flags.mindscape.revised-2e.psp": 17 } },
    { uuid: `${orcA.uuid}.Actor.orc`, update: { "flags.mindscape.revised-2e.psp": 4 } },
  ];
  for (const parts of [[participantOf(null, orc), participantOf(orcA, orcA.actor)], [participantOf(orcA, orcA.actor), participantOf(null, orc)]]) {
    const { plan, refused } = planUpdates(updates, parts);
    assert.deepEqual(plan, [
      { uuid: "Actor.orc", update: { "flags.mindscape.revised-2e.psp": 17 } },
      { uuid: `${orcA.uuid}.Actor.orc`, update: { "flags.mindscape.revised-2e.psp": 4 } },
    ]);
    assert.deepEqual(refused, []);
  }
});

test("an update addressed to the base actor of two unlinked participants is refused: whose it is cannot be told", () => {
  const { orcA, orcB } = world();
  const parts = [participantOf(orcA, orcA.actor), participantOf(orcB, orcB.actor)];
  const { plan, refused } = planUpdates([
    { uuid: "Actor.orc", update: { "system.attributes.hp.value": 3 } },
    { uuid: `${orcB.uuid}.Actor.orc`, update: { "system.attributes.hp.value": 5 } },
  ], parts);
  assert.deepEqual(plan, [{ uuid: `${orcB.uuid}.Actor.orc`, update: { "system.attributes.hp.value": 5 } }]);
  assert.deepEqual(refused.map((u) => u.uuid), ["Actor.orc"]);
});

test("an update addressed to the token document goes to the token's actor", () => {
  const { heroToken, hero } = world();
  const { plan } = planUpdates([{ uuid: heroToken.uuid, update: { "flags.mindscape.x": 1 } }], [participantOf(heroToken, hero)]);
  assert.equal(plan[0].uuid, "Actor.hero");
});

test("updates outside the exchange are refused, and several updates to one actor merge in order", () => {
  const { heroToken, hero } = world();
  const { plan, refused } = planUpdates([
    { uuid: "Actor.hero", update: { a: 1, b: 1 } },
    { uuid: "Actor.someone-else", update: { a: 9 } },
    { uuid: "Actor.hero", update: { b: 2 } },
    { uuid: "Actor.hero" },
  ], [participantOf(heroToken, hero)]);
  assert.deepEqual(plan, [{ uuid: "Actor.hero", update: { a: 1, b: 2 } }]);
  assert.equal(refused.length, 2);
});

test("a failed update is reported, not thrown, so the rest still apply", async () => {
  const { w } = world();
  const report = await applyPlan([{ uuid: "Actor.gone", update: { a: 1 } }, { uuid: "Actor.hero", update: { "flags.x": 1 } }], w.fromUuid);
  assert.equal(report[0].ok, false);
  assert.equal(report[1].ok, true);
});

test("a participant is the actor as seen through its token: the token's own actor, its base actor by id when Foundry gives no baseActor, and an actor without token is linked", () => {
  const { orc, hero, orcA } = world();
  assert.deepEqual(participantOf(orcA, orc), { tokenUuid: orcA.uuid, actorUuid: orcA.actor.uuid, actorLink: false, baseActorUuid: "Actor.orc" });
  const bare = { uuid: "Scene.s.Token.t9", actorLink: false, actorId: "orc", actor: { uuid: "Scene.s.Token.t9.Actor.orc" } };
  assert.equal(participantOf(bare, bare.actor).baseActorUuid, "Actor.orc");
  assert.deepEqual(participantOf(null, hero), { tokenUuid: null, actorUuid: "Actor.hero", actorLink: true, baseActorUuid: "Actor.hero" });
});

test("a missing document and an update the document refuses are reported with why, the update awaited", async () => {
  const locked = { update: async () => { throw new Error("the sheet is locked"); } };
  const report = await applyPlan([{ uuid: "Actor.gone", update: { a: 1 } }, { uuid: "Actor.locked", update: { a: 1 } }], async (uuid) => (uuid === "Actor.locked" ? locked : null));
  assert.deepEqual(report, [{ uuid: "Actor.gone", ok: false, error: "no document Actor.gone" }, { uuid: "Actor.locked", ok: false, error: "the sheet is locked" }]);
});
