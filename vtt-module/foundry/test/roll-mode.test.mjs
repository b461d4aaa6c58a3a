// The world's roll mode "default" (= the roller's own chat roll mode) for an attack a
// player started: the GM's client posts the card, so the player's `core.rollMode` travels
// with the attack request and the GM's client uses it; the GM's own attack uses the GM's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { makeTable } from "../test-support/scenario.mjs";

const VARIANTS = [
  { generation: 12, passQuerySender: false, name: "v12 (module socket)" },
  { generation: 13, passQuerySender: true, name: "v13 (queries naming the sender)" },
  { generation: 13, passQuerySender: false, name: "v13 (queries, the sender named by the server's userQuery event)" },
  { generation: 13, passQuerySender: false, userQueryEvent: false, name: "v13 (queries whose sender nothing names: socket fallback)" },
];
const attack = { mode: "mind-thrust", multiplier: 1, range: "short" };

for (const { generation, passQuerySender, userQueryEvent = true, name } of VARIANTS) {
  test(`${name}: with roll mode 'default', a player's attack card uses the player's chat roll mode, not the GM's`, async () => {
    const t = makeTable({ generation, passQuerySender, userQueryEvent, dialogs: { gm: { defenseDialog: { mode: null } }, p1: { attackDialog: { mode: "mind-thrust", multiplier: "1", range: "short" } } } });
    assert.equal(t.clients.gm.game.settings.get("mindscape", "rollMode"), "default");
    await t.clients.gm.game.settings.set("core", "rollMode", "publicroll");
    await t.clients.p1.game.settings.set("core", "rollMode", "gmroll");
    // Through the dialog ...
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid] });
    // ... and from a macro (attack given, no dialog), after the player changed their mode.
    await t.clients.p1.game.settings.set("core", "rollMode", "blindroll");
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
    const cards = t.clients.gm.ChatMessage.created;
    assert.deepEqual(cards.map((m) => m.options.rollMode), ["gmroll", "blindroll"]);
    assert.deepEqual(cards.map((m) => [m.data.whisper, m.data.blind]), [[["gm0000"], false], [["gm0000"], true]]);
    assert.equal(t.clients.p1.ChatMessage.created.length, 0);
  });
}

test("with roll mode 'default', the GM's own attack uses the GM's chat roll mode as the card is posted", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  await t.clients.p1.game.settings.set("core", "rollMode", "publicroll");
  await t.clients.gm.game.settings.set("core", "rollMode", "selfroll");
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
  assert.equal(t.clients.gm.ChatMessage.created[0].options.rollMode, "selfroll");
});

test("a fixed world roll mode wins over the player's chat roll mode", async () => {
  const t = makeTable({ generation: 13, passQuerySender: true, dialogs: { gm: { defenseDialog: { mode: null } } } });
  await t.clients.gm.game.settings.set("mindscape", "rollMode", "publicroll");
  await t.clients.p1.game.settings.set("core", "rollMode", "selfroll");
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
  assert.equal(t.clients.gm.ChatMessage.created[0].options.rollMode, "publicroll");
});

for (const sent of ["evilroll", "default", { toString: "gmroll" }, 42]) {
  test(`a player's request with an unknown roll mode (${JSON.stringify(sent)}) gets the GM's chat roll mode`, async () => {
    const t = makeTable({ generation: 13, passQuerySender: true, dialogs: { gm: { defenseDialog: { mode: null } } } });
    await t.clients.gm.game.settings.set("core", "rollMode", "gmroll");
    // A client that writes the request itself (an old or altered module).
    const outcome = await t.clients.p1.svc.relay.toGM("attack", { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack, rollMode: sent });
    assert.equal(outcome[0].outcome, "hit");
    assert.equal(t.clients.gm.ChatMessage.created[0].options.rollMode, "gmroll");
  });
}
