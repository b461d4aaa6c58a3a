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

test("with roll mode 'default', the GM's own attack's card takes the chat roll mode the GM changed to while the defense was chosen", async () => {
  let t = null;
  const switching = async () => { await t.clients.gm.game.settings.set("core", "rollMode", "gmroll"); return { mode: null }; };
  t = makeTable({ dialogs: { gm: { defenseDialog: switching } } });
  await t.clients.gm.game.settings.set("core", "rollMode", "publicroll");
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
  assert.equal(t.clients.gm.ChatMessage.created[0].options.rollMode, "gmroll");
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

// Who reads a card, as Foundry's chat log shows it to each user (`visible`,
// `isContentVisible`): "content", "private" ("<author> rolled privately") or "hidden".
// The roller of a player's attack is the player, whose client did not post the card.
const SEEN = {
  // Foundry's own rolls of that mode by its roller: a private roll's author reads it; a
  // blind roll's author does not (unless a GM); a self roll only its roller reads.
  player: {
    publicroll: { pl0001: "content", gm0000: "content", pl0002: "content" },
    gmroll: { pl0001: "content", gm0000: "content", pl0002: "private" },
    blindroll: { pl0001: "private", gm0000: "content", pl0002: "private" },
    selfroll: { pl0001: "content", gm0000: "private", pl0002: "private" },
  },
  gm: {
    publicroll: { pl0001: "content", gm0000: "content", pl0002: "content" },
    gmroll: { pl0001: "private", gm0000: "content", pl0002: "private" },
    blindroll: { pl0001: "private", gm0000: "content", pl0002: "private" },
    selfroll: { pl0001: "private", gm0000: "content", pl0002: "private" },
  },
};
const seenByAll = (message) => Object.fromEntries(["pl0001", "gm0000", "pl0002"].map((id) => [id, message.seenBy(id)]));

for (const { generation, passQuerySender, name } of VARIANTS.slice(0, 3)) {
  for (const mode of ["publicroll", "gmroll", "blindroll", "selfroll"]) {
    test(`${name}: a player's attack in ${mode} is the player's own card: the player is its author and reads it as Foundry shows that player's ${mode}, whatever the GM's own mode`, async () => {
      const t = makeTable({ generation, passQuerySender, dialogs: { gm: { defenseDialog: { mode: null } } } });
      // The GM's own chat mode must not leak into the player's card (v12's _preCreate
      // applies the posting client's mode to a roll whispered to nobody).
      await t.clients.gm.game.settings.set("core", "rollMode", mode === "selfroll" ? "gmroll" : "selfroll");
      await t.clients.p1.game.settings.set("core", "rollMode", mode);
      await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
      const [card] = t.clients.gm.ChatMessage.created;
      assert.equal(card.author, "pl0001");
      assert.ok(card.data.rolls.length > 0);
      assert.deepEqual(seenByAll(card), SEEN.player[mode]);
      assert.deepEqual(t.clients.gm.ChatMessage.deprecations, [], "no deprecated `user` field");
    });

    test(`${name}: the GM's own attack in ${mode} stays the GM's card, read as Foundry shows the GM's ${mode}`, async () => {
      const t = makeTable({ generation, passQuerySender, dialogs: { gm: { defenseDialog: { mode: null } } } });
      await t.clients.p1.game.settings.set("core", "rollMode", "publicroll");
      await t.clients.gm.game.settings.set("core", "rollMode", mode);
      await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
      const [card] = t.clients.gm.ChatMessage.created;
      assert.equal(card.author, "gm0000");
      assert.deepEqual(seenByAll(card), SEEN.gm[mode]);
    });
  }

  test(`${name}: a player's blind attack whose card has no dice is not shown to the player (Foundry shows a whisper without rolls to its author in full)`, async () => {
    const t = makeTable({ generation, passQuerySender, dialogs: { gm: { defenseDialog: { mode: null } } } });
    await t.clients.gm.game.settings.set("mindscape", "rollMode", "blindroll");
    // The companion answered without dice.
    const resolveOf = t.clients.gm.svc.callDice.bind(t.clients.gm.svc);
    t.clients.gm.svc.callDice = async (...args) => ({ ...(await resolveOf(...args)), rolls: [] });
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
    const [card] = t.clients.gm.ChatMessage.created;
    assert.equal(card.data.rolls.length, 0);
    assert.deepEqual(seenByAll(card), { pl0001: "hidden", gm0000: "content", pl0002: "hidden" });
  });
}

for (const generation of [12, 13]) {
  test(`v${generation}: an assistant GM's end of round (a macro) in self roll is that GM's card, which only that GM sees`, async () => {
    const t = makeTable({ generation, passQuerySender: generation >= 13 });
    // Bo is an assistant GM here; the GM's client (paired) answers Bo's request.
    Object.getPrototypeOf(t.clients.gm.game.users.get("pl0002")).isGM = true;
    await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
    await t.clients.gm.game.settings.set("core", "rollMode", "publicroll");
    await t.clients.p2.game.settings.set("core", "rollMode", "selfroll");
    const done = await t.clients.p2.svc.startEndRound({ tokenUuids: [t.tokens.goblinToken.uuid] });
    assert.ok(done?.messageId, JSON.stringify(t.clients.p2.notes));
    const [card] = t.clients.gm.ChatMessage.created;
    assert.equal(card.author, "pl0002");
    // A card without dice, whispered: only its author and those it is whispered to see it.
    assert.equal(card.data.rolls.length, 0);
    assert.deepEqual(seenByAll(card), { pl0001: "hidden", gm0000: "hidden", pl0002: "content" });
  });
}

test("blind roll mode: the player's client (and its macro) gets only the card's id, never the summary or the defender's write-back", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank", remember: false } } } });
  await t.clients.gm.game.settings.set("mindscape", "rollMode", "blindroll");
  const request = { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack };
  const results = await t.clients.p1.svc.startAttack(request);
  const [card] = t.clients.gm.ChatMessage.created;
  assert.equal(card.seenBy("pl0001"), "private");
  assert.deepEqual(results, [{ messageId: card.id }]);
  // Through the relay too: nothing else crossed to the player's browser.
  const answered = t.server.log.filter((l) => l.message?.type === "reply" && l.message.to === "pl0001" && l.message.ok);
  assert.ok(answered.length > 0 && answered.every((l) => !/goblin|summary|updates|psp/i.test(JSON.stringify(l.message.value))));
  // The player's own blind chat mode under "default" hides it just as well.
  await t.clients.gm.game.settings.set("mindscape", "rollMode", "default");
  await t.clients.p1.game.settings.set("core", "rollMode", "blindroll");
  assert.deepEqual(Object.keys((await t.clients.p1.svc.startAttack(request))[0]), ["messageId"]);
  // The GM's own attack, and a player's in another mode, keep the whole answer.
  await t.clients.p1.game.settings.set("core", "rollMode", "gmroll");
  assert.ok((await t.clients.p1.svc.startAttack(request))[0].summary);
  await t.clients.gm.game.settings.set("core", "rollMode", "blindroll");
  assert.ok((await t.clients.gm.svc.startAttack(request))[0].summary);
});

for (const generation of [12, 13]) {
  test(`v${generation}: an assistant GM's rest (a macro) in self roll is that GM's card, which only that GM sees`, async () => {
    const t = makeTable({ generation, passQuerySender: generation >= 13 });
    Object.getPrototypeOf(t.clients.gm.game.users.get("pl0002")).isGM = true;
    await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.psp": 5 });
    await t.clients.gm.game.settings.set("core", "rollMode", "publicroll");
    await t.clients.p2.game.settings.set("core", "rollMode", "selfroll");
    const done = await t.clients.p2.svc.startRest({ tokenUuids: [t.tokens.goblinToken.uuid], hours: 8 });
    assert.ok(done?.messageId, JSON.stringify(t.clients.p2.notes));
    const [card] = t.clients.gm.ChatMessage.created;
    assert.equal(card.author, "pl0002");
    assert.deepEqual(seenByAll(card), { pl0001: "hidden", gm0000: "hidden", pl0002: "content" });
  });
}
