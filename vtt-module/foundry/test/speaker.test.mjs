// Who a card speaks as. Foundry's ChatMessage.getSpeaker, given no token or actor, falls
// back to the posting client's controlled token, then to its user's assigned character
// (client/documents/chat-message.mjs, CASE 4 and 5), and given a world actor picks one of
// its tokens on the scene that client views: a round's end, a rest or an encounter card
// posted by the GM would then speak as a creature unrelated to it. The cards carry their
// own speaker instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { makeTable } from "../test-support/scenario.mjs";
import { cardSpeaker } from "../mindscape/scripts/chat.js";

const attack = { mode: "mind-thrust", multiplier: 1, range: "short" };

/** The GM's client controls the goblin token and is assigned Fenka as its character. */
function busyGM(t) {
  t.world.canvas.controlled = [t.tokens.goblinToken.object];
  Object.getPrototypeOf(t.clients.gm.game.user).character = t.actors.fenka;
}

test("the stand-in's getSpeaker falls back as Foundry's does, to the controlled token then to the assigned character", () => {
  const t = makeTable();
  busyGM(t);
  assert.equal(t.clients.gm.ChatMessage.getSpeaker({ alias: "x" }).token, "tokG");
  t.world.canvas.controlled = [];
  assert.equal(t.clients.gm.ChatMessage.getSpeaker({ alias: "x" }).actor, "fenka");
});

test("an end of round's card speaks as nobody but its title, whatever token the GM controls or character the GM plays", async () => {
  const t = makeTable();
  busyGM(t);
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  const done = await t.clients.gm.svc.startEndRound({ tokenUuids: [t.tokens.goblinToken.uuid] });
  assert.ok(done?.messageId, JSON.stringify(t.clients.gm.notes));
  const [card] = t.clients.gm.ChatMessage.created;
  assert.deepEqual(card.data.speaker, { scene: null, actor: null, token: null, alias: "End of the psionic round" });
});

test("a rest's card speaks as nobody but its title, whatever token the GM controls or character the GM plays", async () => {
  const t = makeTable();
  busyGM(t);
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  const done = await t.clients.gm.svc.startRest({ tokenUuids: [t.tokens.goblinToken.uuid], hours: 2 });
  assert.ok(done?.messageId, JSON.stringify(t.clients.gm.notes));
  const [card] = t.clients.gm.ChatMessage.created;
  assert.deepEqual(card.data.speaker, { scene: null, actor: null, token: null, alias: "Psionic rest" });
});

test("an attack's card speaks as the attacking token, not as what the GM controls", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  busyGM(t);
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
  const [card] = t.clients.gm.ChatMessage.created;
  assert.deepEqual(card.data.speaker, { scene: "scene1", token: "tokF", actor: "fenka", alias: "Fenka" });
});

test("cardSpeaker: a token's speaker as Foundry builds it, an actor without a token, or the alias alone", () => {
  const t = makeTable();
  assert.deepEqual(cardSpeaker({ token: t.tokens.goblinToken, actor: t.tokens.goblinToken.actor }), { scene: "scene1", token: "tokG", actor: "goblin", alias: "Goblin" });
  assert.deepEqual(cardSpeaker({ actor: t.actors.ulcen }), { scene: null, actor: "ulcen", token: null, alias: "Ulcen of Tyr" });
  assert.deepEqual(cardSpeaker({ alias: "Psionic rest" }), { scene: null, actor: null, token: null, alias: "Psionic rest" });
});
