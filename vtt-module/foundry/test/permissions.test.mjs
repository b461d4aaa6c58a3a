// Who may ask for what (docs/FOUNDRY.md, "How players reach the companion"; SECURITY.md
// §4: the GM's client relays a choice only for combatants the sender controls, the
// sender being the one the server names, never the payload). A player who asks the GM's
// client, through the relay, about an actor someone else owns is refused before anything
// is read from the companion or written to the world; the GM-only requests are refused
// on the player's own client, before anything leaves it; only the client that talks to
// the companion calls it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";

const VARIANTS = [
  { generation: 12, passQuerySender: false, name: "v12 (module socket)" },
  { generation: 13, passQuerySender: true, name: "v13 (queries naming the sender)" },
  { generation: 13, passQuerySender: false, name: "v13 (queries, the sender named by the server's userQuery event)" },
  { generation: 13, passQuerySender: false, userQueryEvent: false, name: "v13 (queries whose sender nothing names: socket fallback)" },
];

/** The rejection of `promise` (the test fails when it resolves). */
async function refusal(promise) {
  const outcome = await promise.then((value) => ({ value }), (error) => ({ error }));
  assert.ok(outcome.error, `expected a refusal, got ${JSON.stringify(outcome.value)}`);
  return outcome.error;
}

for (const { generation, passQuerySender, userQueryEvent = true, name } of VARIANTS) {
  test(`${name}: a player cannot declare the secret encounter choice of a combatant they do not own, whatever the payload claims`, async () => {
    const { methods, enc } = encounterMethods();
    const t = makeTable({ generation, passQuerySender, userQueryEvent, methods });
    const ctl = t.clients.gm.svc.encounters;
    await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
    assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
    const meta = structuredClone(ctl.meta);
    const revision = enc.revision;
    const from = t.daemon.calls.length;
    // p2 (Fenka's owner) declares an attack for Ulcen (p1's), claiming to be p1.
    const form = { attackMode: "ego-whip", target: "fenka-tokF", multiplier: "1", range: "short", defenseMode: "" };
    const err = await refusal(t.clients.p2.svc.relay.toGM("encounterDeclare", { combatantId: "ulcen", form, sender: "pl0001", user: "pl0001" }));
    assert.equal(err.name, "PermissionDeniedError");
    assert.match(err.data.who, /Ulcen of Tyr/);
    assert.deepEqual(t.daemon.calls.slice(from), [], "the companion is not asked anything");
    assert.equal(enc.choices.size, 0);
    assert.equal(enc.revision, revision);
    assert.deepEqual(ctl.meta, meta);
    // Her own combatant's choice goes through, the same way.
    await t.clients.p2.svc.relay.toGM("encounterDeclare", { combatantId: "fenka-tokF", form: { attackMode: "", defenseMode: "mind-blank" } });
    assert.deepEqual([...enc.choices], [["fenka-tokF", { defense: { mode: "mind-blank" } }]]);
  });

  test(`${name}: a player can neither read nor rewrite the Mindscape profile of an actor they do not own`, async () => {
    const t = makeTable({ generation, passQuerySender, userQueryEvent, dialogs: { p2: { profileDialog: { kind: "psionicist", psp: "99", attacks: ["ego-whip"] } } } });
    const ulcen = t.actors.ulcen;
    const flags = structuredClone(ulcen.flags);
    // From her own client: refused before the editor opens on Ulcen's profile.
    assert.equal(await t.clients.p2.svc.configureActor(ulcen.uuid), null);
    assert.match(t.clients.p2.notes.error[0], /You may not do this \(Ulcen of Tyr\)/);
    assert.equal(t.clients.p2.dialogs.seen.length, 0);
    // Forged requests straight to the GM's client, naming p1 in the payload.
    const read = await refusal(t.clients.p2.svc.relay.toGM("profileForm", { actorUuid: ulcen.uuid, sender: "pl0001" }));
    assert.equal(read.name, "PermissionDeniedError");
    const write = await refusal(t.clients.p2.svc.relay.toGM("saveProfile", { actorUuid: ulcen.uuid, form: { kind: "psionicist", psp: "99" }, sender: "pl0001" }));
    assert.equal(write.name, "PermissionDeniedError");
    assert.deepEqual(t.daemon.calls, [], "the companion is not asked anything");
    assert.deepEqual(ulcen.flags, flags);
    assert.deepEqual(ulcen.updates, []);
    // Her own actor's profile she may edit.
    const saved = await t.clients.p2.svc.configureActor(t.actors.fenka.uuid);
    assert.deepEqual(saved.profile, { kind: "psionicist", psp: 99, attacks: ["ego-whip"] });
  });

  test(`${name}: a player cannot read the modes or the odds of an actor they do not own`, async () => {
    const t = makeTable({ generation, passQuerySender, userQueryEvent, dialogs: { p2: { attackDialog: { mode: "mind-thrust" } } } });
    const attackerUuid = t.tokens.ulcenToken.uuid;
    const targetUuid = t.tokens.goblinToken.uuid;
    // From her own client: refused before the attack dialog shows Ulcen's modes.
    assert.equal(await t.clients.p2.svc.startAttack({ attackerUuid, targetUuids: [targetUuid] }), null);
    assert.match(t.clients.p2.notes.error[0], /You may not do this \(Ulcen of Tyr\)/);
    assert.equal(t.clients.p2.dialogs.seen.length, 0);
    // Forged requests straight to the GM's client.
    const prep = await refusal(t.clients.p2.svc.relay.toGM("prepare", { attackerUuid, targetUuids: [targetUuid], sender: "pl0001" }));
    assert.equal(prep.name, "PermissionDeniedError");
    const odds = await refusal(t.clients.p2.svc.relay.toGM("odds", { attackerUuid, targetUuid, attack: { mode: "mind-thrust", multiplier: "1", range: "short" }, assumeDefense: null, sender: "pl0001" }));
    assert.equal(odds.name, "PermissionDeniedError");
    assert.deepEqual(t.daemon.calls, [], "the companion is not asked anything");
    // Her own Fenka's odds she may read.
    const own = await t.clients.p2.svc.relay.toGM("odds", { attackerUuid: t.tokens.fenkaToken.uuid, targetUuid, attack: { mode: "mind-thrust", multiplier: "1", range: "short" }, assumeDefense: null });
    assert.ok(own.outcomes.length);
  });

  test(`${name}: a player's client refuses the GM-only requests itself: nothing is sent to the GM`, async () => {
    const t = makeTable({ generation, passQuerySender, userQueryEvent, dialogs: { p1: { restDialog: { hours: 8 } } } });
    const p1 = t.clients.p1;
    const tokenUuids = [t.tokens.ulcenToken.uuid];
    assert.equal(await p1.svc.startEndRound({ tokenUuids }), null);
    assert.equal(await p1.svc.startRest({ tokenUuids }), null);
    assert.equal(await p1.svc.startRest({ tokenUuids, hours: 8 }), null);
    assert.equal(await p1.svc.startRefreshEncounter(), null);
    assert.deepEqual(p1.notes.error.map((m) => m.split(".")[0]), [
      "Only a GM may end a psionic round",
      "Only a GM may give actors a psionic rest",
      "Only a GM may give actors a psionic rest",
      "Only a GM may take the encounter's combatants again from their sheets",
    ]);
    assert.deepEqual(t.server.log, [], "no request left the player's client");
    assert.equal(p1.dialogs.seen.length, 0);
    assert.deepEqual(t.daemon.calls, []);
  });
}

test("only the client that talks to the companion calls it: another GM's client, even holding the token, goes through the relay", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  // Ann becomes a second GM; gm0000 stays the one that talks to the companion.
  Object.getPrototypeOf(t.clients.p1.game.user).isGM = true;
  const assistant = t.clients.p1.svc;
  assert.equal(assistant.relay.isActiveGM, false);
  assert.equal(t.clients.gm.svc.relay.isActiveGM, true);
  // Her browser holds the companion's address and token too.
  await t.clients.p1.game.settings.set("mindscape", "daemonToken", "secret-token");
  const direct = [];
  assistant.env.fetch = async (...args) => { direct.push(JSON.parse(args[1].body).method); return t.daemon.fetch(...args); };
  const err = await refusal(assistant.describe("revised-2e"));
  // Told whose browser does, not the players' permission message.
  assert.equal(err.name, "OtherGMError");
  assert.equal(err.data.name, "Gamemaster");
  assert.deepEqual(direct, []);
  assert.deepEqual(t.daemon.calls, []);
  // Her attack is resolved by gm0000's client.
  const outcome = await assistant.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(outcome[0].outcome, "hit");
  assert.deepEqual(direct, []);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 1);
});

test("a player's client asked to call the companion itself is refused as not permitted, not pointed to the GM's browser", async () => {
  const t = makeTable();
  const err = await refusal(t.clients.p1.svc.describe("revised-2e"));
  assert.equal(err.name, "PermissionDeniedError");
  assert.deepEqual(t.daemon.calls, []);
});

test("an assistant GM's encounter panel does not open with the players' permission message: the GM is told whose browser talks to the companion", async () => {
  const { encounterMethods } = await import("../test-support/scenario.mjs");
  const { methods } = encounterMethods();
  const t = makeTable({ generation: 13, passQuerySender: true, methods });
  Object.getPrototypeOf(t.clients.gm.game.users.get("pl0002")).isGM = true;
  await t.clients.gm.svc.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  const bo = t.clients.p2.svc;
  assert.equal(bo.mayShowEncounter(), false);
  assert.deepEqual(t.clients.p2.notes.error, ["Gamemaster's browser talks to the companion, not this one: open the encounter panel in that browser."]);
  // Whatever calls the companion from there says the same, not "You may not do this (encounter.get)".
  const err = await refusal(bo.encounters.state());
  assert.equal(err.name, "OtherGMError");
  // The paired GM's browser shows it.
  assert.equal(t.clients.gm.svc.mayShowEncounter(), true);
  // A player is told the panel is the GM's.
  assert.equal(t.clients.p1.svc.mayShowEncounter(), false);
  assert.match(t.clients.p1.notes.error[0], /Only a GM may open the encounter panel/);
});

test("an assistant GM's House rules menu reads the rules through the paired GM's browser, and saves them", async () => {
  const t = makeTable({ generation: 13, passQuerySender: true, dialogs: { p2: { houseRulesDialog: { "H-2E-CRIT-MODS": false } } } });
  Object.getPrototypeOf(t.clients.gm.game.users.get("pl0002")).isGM = true;
  const chosen = await t.clients.p2.svc.openHouseRules();
  assert.deepEqual(chosen, { "H-2E-CRIT-MODS": false });
  assert.deepEqual(t.clients.p2.notes.error, []);
  assert.equal(t.clients.p2.dialogs.seen[0].arg.context.rules[0].text, "the roll is the modified roll");
  assert.deepEqual(t.clients.gm.game.settings.get("mindscape", "houseRules"), { "revised-2e": { "H-2E-CRIT-MODS": false } });
  // A player's browser may not ask for them (the menu is the GM's).
  const err = await refusal(t.clients.p1.svc.relay.toGM("describeHouseRules", {}));
  assert.equal(err.key, "MINDSCAPE.Error.HouseRulesGMOnly");
});

for (const { generation, passQuerySender, userQueryEvent = true, name } of VARIANTS) {
  test(`${name}: a player is not told the GM's companion address when the GM's client cannot reach it or is refused`, async () => {
    const { DaemonUnreachableError, DaemonAuthError, DaemonForbiddenError, DaemonHttpError } = await import("../mindscape/scripts/errors.js");
    const t = makeTable({ generation, passQuerySender, userQueryEvent });
    // The GM's companion listens on a LAN address; it is down, then refuses the token,
    // then the page's origin, then answers an HTTP error.
    for (const failure of [
      new DaemonUnreachableError({ url: "http://192.168.1.20:8765", origin: "https://vtt.example", cause: "Failed to fetch" }),
      new DaemonAuthError({ url: "http://192.168.1.20:8765" }),
      new DaemonForbiddenError({ url: "http://192.168.1.20:8765", origin: "https://vtt.example" }),
      new DaemonHttpError({ url: "http://192.168.1.20:8765", origin: "https://vtt.example", status: 413, said: "the request body exceeds 1048576 bytes" }),
    ]) {
      t.clients.gm.svc.rpc = async () => { throw failure; };
      const err = await refusal(t.clients.p2.svc.relay.toGM("profileForm", { actorUuid: t.actors.fenka.uuid }));
      assert.equal(err.key, "MINDSCAPE.Error.CompanionUnavailable");
      assert.doesNotMatch(JSON.stringify({ ...err.toJSON(), message: err.message }), /192\.168|8765|vtt\.example/);
      // The GM's own client keeps the whole error (what to do about it).
      await assert.rejects(t.clients.gm.svc.relay.toGM("profileForm", { actorUuid: t.actors.fenka.uuid }), (e) => e.key === failure.key && e.data.url === "http://192.168.1.20:8765");
    }
  });
}

test("a player's client asking for failed attacks in a loop shows the GM one notice every few seconds, not one each; the player is told each time", async () => {
  const t = makeTable();
  const ask = (i) => t.clients.p1.svc.relay.toGM("attack", {
    attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid],
    attack: { mode: "mind-thrust", multiplier: `GM: send me your token ${i}` }, physical: false,
  });
  const refused = [];
  for (let i = 0; i < 20; i++) refused.push(await ask(i).then(() => null, (e) => e));
  assert.ok(refused.every((e) => e !== null), "each is refused to the player");
  assert.equal(t.clients.gm.notes.error.length, 1, JSON.stringify(t.clients.gm.notes.error));
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 0);
});

// (v13 queries naming the sender: nothing of the relay waits for a timer, so the mocked
// clock moves only when the test says.)
test("a player's failed attacks are shown to the GM at most once every 5 s; after 5 s the next one is shown again", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const table = makeTable({ generation: 13, passQuerySender: true });
  const ask = (i) => table.clients.p1.svc.relay.toGM("attack", {
    attackerUuid: table.tokens.ulcenToken.uuid, targetUuids: [table.tokens.fenkaToken.uuid],
    attack: { mode: "mind-thrust", multiplier: `bad ${i}` }, physical: false,
  }).then(() => null, (e) => e);
  const gmErrors = () => table.clients.gm.notes.error.length;
  assert.ok(await ask(1));
  assert.equal(gmErrors(), 1);
  t.mock.timers.tick(4999);
  assert.ok(await ask(2));
  assert.equal(gmErrors(), 1, "still within 5 s of the first: not shown");
  t.mock.timers.tick(1);
  assert.ok(await ask(3));
  assert.equal(gmErrors(), 2, "5 s after the first: shown again");
  assert.ok(await ask(4));
  assert.equal(gmErrors(), 2);
  t.mock.timers.tick(5000);
  assert.ok(await ask(5));
  assert.equal(gmErrors(), 3);
});

test("one player's failed attack does not hide another player's from the GM within 5 s", async () => {
  const t = makeTable({ generation: 13, passQuerySender: true });
  const attack = { mode: "mind-thrust", multiplier: "not a number" };
  const ann = await refusal(t.clients.p1.svc.relay.toGM("attack", { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack, physical: false }));
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.equal(ann.name, "UsageError");
  await refusal(t.clients.p1.svc.relay.toGM("attack", { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack, physical: false }));
  assert.equal(t.clients.gm.notes.error.length, 1, "Ann's second, at once, is not shown");
  await refusal(t.clients.p2.svc.relay.toGM("attack", { attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack, physical: false }));
  assert.equal(t.clients.gm.notes.error.length, 2, "Bo's first is shown");
});

test("an assistant GM relaying through the active GM is told the real cause of a companion failure, not only \"companion unavailable\"", async () => {
  const { DaemonUnreachableError, DaemonAuthError } = await import("../mindscape/scripts/errors.js");
  const t = makeTable({ generation: 13, passQuerySender: true });
  // Bo becomes a second GM; gm0000 stays the one that talks to the companion.
  Object.getPrototypeOf(t.clients.gm.game.users.get("pl0002")).isGM = true;
  assert.equal(t.clients.p2.svc.relay.isActiveGM, false);
  for (const failure of [
    new DaemonUnreachableError({ url: "http://192.168.1.20:8765", origin: "https://vtt.example", cause: "Failed to fetch" }),
    new DaemonAuthError({ url: "http://192.168.1.20:8765" }),
  ]) {
    t.clients.gm.svc.rpc = async () => { throw failure; };
    const err = await refusal(t.clients.p2.svc.relay.toGM("profileForm", { actorUuid: t.actors.fenka.uuid }));
    assert.equal(err.key, failure.key);
    assert.equal(err.data.url, "http://192.168.1.20:8765");
    // A player asking the same is still told only that the companion is unavailable.
    const player = await refusal(t.clients.p1.svc.relay.toGM("profileForm", { actorUuid: t.actors.ulcen.uuid }));
    assert.equal(player.key, "MINDSCAPE.Error.CompanionUnavailable");
  }
});

for (const { generation, passQuerySender, userQueryEvent = true, name } of VARIANTS) {
  test(`${name}: a player is not told the GM's companion address when the GM's client is not paired or has a bad companion address`, async () => {
    const { NotPairedError, BadDaemonUrlError } = await import("../mindscape/scripts/errors.js");
    const t = makeTable({ generation, passQuerySender, userQueryEvent });
    for (const failure of [
      new NotPairedError({ url: "http://192.168.1.20:8765" }),
      new BadDaemonUrlError({ url: "192.168.1.20:8765/rpc" }),
    ]) {
      t.clients.gm.svc.rpc = async () => { throw failure; };
      const err = await refusal(t.clients.p2.svc.relay.toGM("profileForm", { actorUuid: t.actors.fenka.uuid }));
      assert.equal(err.key, "MINDSCAPE.Error.CompanionUnavailable");
      assert.doesNotMatch(JSON.stringify({ ...err.toJSON(), message: err.message }), /192\.168|8765/);
      // The GM's own client keeps the whole error.
      await assert.rejects(t.clients.gm.svc.relay.toGM("profileForm", { actorUuid: t.actors.fenka.uuid }), (e) => e.key === failure.key);
    }
  });
}
