// The GM relay protocol: v12 module socket with request ids and replies, v13 queries,
// the sender named by the server (never by the payload), and typed errors across.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Relay, unwrap } from "../mindscape/scripts/relay.js";
import { FakeServer, FakeUser, FakeWorld, makeClient, makeUsers, tick } from "../test-support/fakes.mjs";
import { RulesError } from "../mindscape/scripts/errors.js";
import { RELAY_TIMEOUT_MS } from "../mindscape/scripts/consts.js";

function table({ generation = 12, passQuerySender = false, userQueryEvent = true } = {}) {
  const server = new FakeServer({ passQuerySender, userQueryEvent });
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "GM", isGM: true });
  const p1 = new FakeUser({ id: "pl0001", name: "Ann" });
  const users = makeUsers([gm, p1]);
  const seen = [];
  const make = (user) => {
    const c = makeClient({ server, world, users, user, generation, worldSettings: new Map() });
    c.relay = new Relay({
      game: c.game, CONFIG: c.CONFIG, timeoutMs: 200,
      handlers: {
        whoAmI: { runsOn: "gm", fn: async (payload, { sender }) => { seen.push({ payload, sender: sender?.id }); return { sender: sender.id, echo: payload }; } },
        forbidden: { runsOn: "gm", fn: async () => { throw new RulesError({ rule: "psp", detail: "not enough PSPs" }); } },
        pick: { runsOn: "player", fn: async (payload) => ({ picked: payload.options[0], by: c.game.user.id }) },
        broken: { runsOn: "gm", fn: async () => { throw new TypeError("cannot read the sheet"); } },
      },
    });
    c.relay.register();
    return c;
  };
  return { server, gm: make(gm), p1: make(p1), seen };
}

test("v12: a player's request reaches the active GM over the module socket with the server's sender id", async () => {
  const t = table();
  const answer = await t.p1.relay.toGM("whoAmI", { claimedUser: "gm0000" });
  assert.deepEqual(answer, { sender: "pl0001", echo: { claimedUser: "gm0000" } });
  const request = t.server.log.find((l) => l.message?.type === "request");
  assert.equal(request.channel, "module.mindscape");
  assert.equal(request.message.to, "gm");
  assert.ok(request.message.id);
  const reply = t.server.log.find((l) => l.message?.type === "reply");
  assert.equal(reply.message.id, request.message.id);
  assert.equal(reply.message.to, "pl0001");
});

test("the GM's own request runs locally, without the socket", async () => {
  const t = table();
  const answer = await t.gm.relay.toGM("whoAmI", {});
  assert.equal(answer.sender, "gm0000");
  assert.equal(t.server.log.length, 0);
});

test("typed errors cross the relay intact", async () => {
  const t = table();
  const err = await t.p1.relay.toGM("forbidden", {}).catch((e) => e);
  assert.ok(err instanceof RulesError);
  assert.equal(err.data.detail, "not enough PSPs");
});

test("a reply from a client that was not asked is ignored", async () => {
  const t = table();
  // Stop the GM from answering, then forge a reply from another user id.
  t.gm.listeners.get("module.mindscape").length = 0;
  const pending = t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  await tick();
  const request = t.server.log.find((l) => l.message?.type === "request");
  for (const fn of t.p1.listeners.get("module.mindscape")) fn({ type: "reply", id: request.message.id, to: "pl0001", ok: true, value: { sender: "forged" } }, "pl0009");
  const outcome = await pending;
  assert.equal(outcome.name, "RelayTimeoutError");
});

test("with no GM connected the request fails with NoGMError at once", async () => {
  const t = table();
  Object.getPrototypeOf(t.p1.game.users.get("gm0000")).active = false;
  const err = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(err.name, "NoGMError");
  assert.equal(t.server.log.length, 0);
});

test("v13: requests go by CONFIG.queries and User#query when the core names the sender", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  assert.equal(typeof t.gm.CONFIG.queries["mindscape.whoAmI"], "function");
  const answer = await t.p1.relay.toGM("whoAmI", { x: 1 });
  assert.equal(answer.sender, "pl0001");
  assert.ok(t.server.log.some((l) => l.query === "mindscape.whoAmI"));
  assert.ok(!t.server.log.some((l) => l.message?.type === "request"));
});

test("v13: the core calls a query handler with {timeout} only; the relay takes the sender from the server's userQuery event, and nothing goes over the socket", async () => {
  const t = table({ generation: 13, passQuerySender: false });
  const answer = await t.p1.relay.toGM("whoAmI", { x: 1 });
  assert.deepEqual(answer, { sender: "pl0001", echo: { x: 1 } });
  const question = await t.gm.relay.toUser("pl0001", "pick", { options: ["mind-blank"] });
  assert.deepEqual(question, { picked: "mind-blank", by: "pl0001" });
  assert.deepEqual(t.server.log.map((l) => l.query ?? l.message?.type), ["mindscape.whoAmI", "mindscape.pick"]);
  // A player's question dressed as the GM's is refused: the event names its real sender.
  const forged = await t.p1.game.users.get("gm0000").query("mindscape.whoAmI", { payload: {} }, {});
  assert.deepEqual(forged, { ok: true, value: { sender: "pl0001", echo: {} } });
  const asPlayer = await t.server.query("pl0001", "pl0001", "mindscape.pick", { payload: { options: ["x"] } }, {});
  assert.equal(asPlayer.error.name, "PermissionDeniedError");
});

test("v13: a handler called outside a userQuery event (or for other data) learns no sender from an earlier one", async () => {
  const t = table({ generation: 13, passQuerySender: false });
  await t.p1.relay.toGM("whoAmI", {});
  const direct = await t.gm.CONFIG.queries["mindscape.whoAmI"]({ payload: {} }, { timeout: 100 });
  assert.deepEqual(direct, { relay: "sender-unknown" });
});

test("v13: a query's own options never name its sender: a player who claims to be the GM is answered as the player", async () => {
  // The core hands a handler {timeout} only (fakes.mjs FakeServer#query), whatever the
  // caller passed: were the caller's options forwarded, a player could forge the GM.
  for (const passQuerySender of [false, true]) {
    const t = table({ generation: 13, passQuerySender });
    const gmUser = t.p1.game.users.get("gm0000");
    for (const claim of [{ user: "gm0000" }, { sender: "gm0000" }, { userId: "gm0000" }, { user: gmUser }]) {
      const answer = await gmUser.query("mindscape.whoAmI", { payload: {} }, { ...claim, timeout: 100 });
      assert.deepEqual(answer, { ok: true, value: { sender: "pl0001", echo: {} } }, `${JSON.stringify(Object.keys(claim))} passQuerySender ${passQuerySender}`);
    }
    assert.deepEqual(t.seen.map((s) => s.sender), ["pl0001", "pl0001", "pl0001", "pl0001"]);
  }
});

test("v13: a core that names the sender in the handler's options, with no userQuery event to read: queries go through, nothing over the socket", async () => {
  const t = table({ generation: 13, passQuerySender: true, userQueryEvent: false });
  assert.deepEqual(await t.p1.relay.toGM("whoAmI", { x: 1 }), { sender: "pl0001", echo: { x: 1 } });
  assert.deepEqual(await t.gm.relay.toUser("pl0001", "pick", { options: ["mind-blank"] }), { picked: "mind-blank", by: "pl0001" });
  assert.deepEqual(t.server.log.map((l) => l.query ?? l.message?.type), ["mindscape.whoAmI", "mindscape.pick"]);
  assert.equal(t.p1.relay.useSocketForGM, false);
  assert.equal(t.gm.relay.useSocketForUsers, false);
  // A player's question dressed as the GM's is still refused: the core names its real sender.
  const asPlayer = await t.server.query("pl0001", "pl0001", "mindscape.pick", { payload: { options: ["x"] } }, {});
  assert.equal(asPlayer.error.name, "PermissionDeniedError");
});

test("v13: a userQuery event is the sender only of the query whose data it carries: a handler called with other data after it learns none", async () => {
  const t = table({ generation: 13, passQuerySender: false });
  // The server delivers the event of a query of this module no handler answers (its
  // name unknown here), and nothing consumes it ...
  for (const fn of t.gm.listeners.get("userQuery")) fn("pl0001", "q1", "mindscape.nosuch", { payload: {} }, { timeout: 100 }, () => {});
  // ... then a handler is called with other data, outside any event.
  const direct = await t.gm.CONFIG.queries["mindscape.whoAmI"]({ payload: {} }, { timeout: 100 });
  assert.deepEqual(direct, { relay: "sender-unknown" });
  assert.deepEqual(t.seen, []);
});

test("v13: when nothing names a query's sender, the player's client resends over the socket", async () => {
  const t = table({ generation: 13, passQuerySender: false, userQueryEvent: false });
  const answer = await t.p1.relay.toGM("whoAmI", {});
  assert.equal(answer.sender, "pl0001");
  assert.ok(t.server.log.some((l) => l.query === "mindscape.whoAmI"));
  assert.ok(t.server.log.some((l) => l.message?.type === "request"));
  // ... and remembers it: the next request goes straight to the socket.
  const before = t.server.log.filter((l) => l.query).length;
  await t.p1.relay.toGM("whoAmI", {});
  assert.equal(t.server.log.filter((l) => l.query).length, before);
});

for (const generation of [12, 13]) {
  test(`v${generation}: the GM asks a player a question and gets the player's answer`, async () => {
    const t = table({ generation });
    const answer = await t.gm.relay.toUser("pl0001", "pick", { options: ["mind-blank"] });
    assert.deepEqual(answer, { picked: "mind-blank", by: "pl0001" });
  });
}

test("a player's client refuses a question sent by another player", async () => {
  const t = table();
  const err = await t.p1.relay.toUser("pl0001", "pick", { options: ["x"] }).then(() => null);
  assert.equal(err, null, "asking oneself runs locally");
  // A forged question from a non-GM over the socket is answered with a refusal.
  const gmAsPlayer = t.gm.game.users.get("gm0000");
  Object.getPrototypeOf(gmAsPlayer).isGM = false;
  const refused = await t.gm.relay.toUser("pl0001", "pick", { options: ["x"] }).catch((e) => e);
  assert.equal(refused.name, "PermissionDeniedError");
});

test("unwrap rejects a malformed envelope", () => {
  assert.throws(() => unwrap({ nonsense: true }), (e) => e.key === "MINDSCAPE.Error.Remote" && e.data.message === "malformed relay answer");
});

test("a handler's own failure (no error of the module's) reaches the asking client as a remote error with its message", async () => {
  const t = table();
  const err = await t.p1.relay.toGM("broken", {}).catch((e) => e);
  assert.equal(err.key, "MINDSCAPE.Error.Remote");
  assert.equal(err.data.message, "cannot read the sheet");
});

test("a request this client has no handler for is refused by name, also when run locally", async () => {
  const t = table();
  const err = await t.gm.relay.toGM("nosuch", {}).catch((e) => e);
  assert.equal(err.key, "MINDSCAPE.Error.UnknownRequest");
  assert.equal(err.data.request, "nosuch");
});

test("the relay waits the world's timeout, and RELAY_TIMEOUT_MS when that reads as none, 0, negative or without end", () => {
  const relayFor = (timeoutMs) => new Relay({ game: {}, CONFIG: null, handlers: {}, timeoutMs });
  assert.equal(relayFor(() => 1234).timeoutMs, 1234);
  for (const ms of [0, -5, NaN, Infinity, undefined]) assert.equal(relayFor(() => ms).timeoutMs, RELAY_TIMEOUT_MS, String(ms));
});

test("a Foundry that names no release is taken for v12: no queries, whatever CONFIG holds", () => {
  const relayFor = (release) => new Relay({ game: { release }, CONFIG: { queries: {} }, handlers: {} });
  assert.equal(relayFor(undefined).hasQueries, false);
  assert.equal(relayFor({ generation: 13 }).hasQueries, true);
});

test("v12: a question to a player who is not connected fails at once naming the player, and nothing is sent", async () => {
  const t = table();
  Object.getPrototypeOf(t.gm.game.users.get("pl0001")).active = false;
  const err = await t.gm.relay.toUser("pl0001", "pick", { options: ["x"] }).catch((e) => e);
  assert.equal(err.name, "RelayTimeoutError");
  assert.equal(err.data.user, "Ann");
  assert.equal(t.server.log.length, 0);
});

test("v13: when nothing names the GM as a question's sender, the GM's client asks over the socket, and then keeps to it", async () => {
  const t = table({ generation: 13, passQuerySender: false, userQueryEvent: false });
  assert.deepEqual(await t.gm.relay.toUser("pl0001", "pick", { options: ["a"] }), { picked: "a", by: "pl0001" });
  assert.deepEqual(await t.gm.relay.toUser("pl0001", "pick", { options: ["b"] }), { picked: "b", by: "pl0001" });
  assert.equal(t.server.log.filter((l) => l.query).length, 1, "one query, then the socket");
  assert.equal(t.server.log.filter((l) => l.message?.type === "request").length, 2);
});

test("v13: a player whose QUERY_USER the GM takes away while a request is sent gets the answer over the module socket", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  const gm = t.p1.game.users.get("gm0000");
  const query = gm.query;
  gm.query = async (...args) => { t.p1.game.user.permissions.QUERY_USER = false; return query(...args); };
  assert.deepEqual(await t.p1.relay.toGM("whoAmI", { x: 1 }), { sender: "pl0001", echo: { x: 1 } });
  assert.ok(t.server.log.some((l) => l.message?.type === "request" && l.channel === "module.mindscape"));
});

test("v12: a request that reaches the GM's client over the socket before ready is answered RelayNotReadyError, not run", async () => {
  const t = table();
  t.gm.relay.register({ untilReady: true });
  const early = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(early.name, "RelayNotReadyError");
  assert.deepEqual(t.seen, []);
});

test("a socket request whose sender the server names as no user of the world is not answered", async () => {
  const t = table();
  for (const fn of t.gm.listeners.get("module.mindscape")) await fn({ type: "request", id: "r1", name: "whoAmI", to: "gm", payload: {} }, "nobody");
  await tick();
  assert.deepEqual(t.seen, []);
  assert.equal(t.server.log.length, 0);
});

test("v13: a player's client answers no question whose sender nothing names", async () => {
  const t = table({ generation: 13, passQuerySender: false, userQueryEvent: false });
  // A query straight to the player's handler, as any client could send it: not answered.
  const direct = await t.p1.CONFIG.queries["mindscape.pick"]({ payload: { options: ["x"] } }, {});
  assert.deepEqual(direct, { relay: "sender-unknown" });
  // A named non-GM sender is refused.
  const byPlayer = await t.p1.CONFIG.queries["mindscape.pick"]({ payload: { options: ["x"] } }, { user: t.p1.game.users.get("pl0001") });
  assert.equal(byPlayer.ok, false);
  assert.equal(byPlayer.error.name, "PermissionDeniedError");
  // The GM's real question still arrives: it falls back to the socket, which names the GM.
  const answer = await t.gm.relay.toUser("pl0001", "pick", { options: ["mind-blank"] });
  assert.deepEqual(answer, { picked: "mind-blank", by: "pl0001" });
  assert.ok(t.server.log.some((l) => l.message?.type === "request" && l.message.to === "pl0001"));
});

test("the relay waits at least as long as the longest attack flow (the defense questions, each asked again after a refusal, with their grace, + margin)", async () => {
  const { RELAY_TIMEOUT_MS, relayTimeoutMs, DEFENSE_TIMEOUT_MAX_S, DEFENSE_GRACE_MS, DEFENSE_REASKS } = await import("../mindscape/scripts/consts.js");
  assert.equal(DEFENSE_REASKS, 2);
  assert.ok(RELAY_TIMEOUT_MS > (DEFENSE_TIMEOUT_MAX_S * 1000 + DEFENSE_GRACE_MS) * 3);
  assert.ok(relayTimeoutMs(30) > (30000 + DEFENSE_GRACE_MS) * 3);
  // A setting that is no time (negative, not a number) waits as long as the longest allowed.
  assert.deepEqual([relayTimeoutMs(-5), relayTimeoutMs("soon")], [RELAY_TIMEOUT_MS, RELAY_TIMEOUT_MS]);
  assert.equal(relayTimeoutMs(0), DEFENSE_GRACE_MS * 3 + (RELAY_TIMEOUT_MS - (DEFENSE_TIMEOUT_MAX_S * 1000 + DEFENSE_GRACE_MS) * 3));
  const { makeTable } = await import("../test-support/scenario.mjs");
  const tbl = makeTable();
  await tbl.clients.gm.game.settings.set("mindscape", "defenseTimeout", 300);
  assert.equal(tbl.clients.p1.svc.relay.timeoutMs, relayTimeoutMs(300));
  assert.ok(tbl.clients.p1.svc.relay.timeoutMs > 300000 + DEFENSE_GRACE_MS);
});

test("a defense timeout the world's settings cannot give (no number, or not registered yet) is the default one: the relay waits as long as for it", async () => {
  const { DEFENSE_TIMEOUT_MS, relayTimeoutMs } = await import("../mindscape/scripts/consts.js");
  const { makeTable } = await import("../test-support/scenario.mjs");
  const tbl = makeTable();
  await tbl.clients.gm.game.settings.set("mindscape", "defenseTimeout", undefined);
  assert.equal(tbl.clients.p1.svc.relay.timeoutMs, relayTimeoutMs(DEFENSE_TIMEOUT_MS / 1000));
  tbl.clients.p1.game.settings.registered.delete("mindscape.defenseTimeout");
  assert.equal(tbl.clients.p1.svc.relay.timeoutMs, relayTimeoutMs(DEFENSE_TIMEOUT_MS / 1000));
});

/** Two GMs and a player; `ran` records which client ran a request (its user id). */
function twoGMs({ generation = 12, passQuerySender = false } = {}) {
  const server = new FakeServer({ passQuerySender });
  const world = new FakeWorld();
  const gm = new FakeUser({ id: "gm0000", name: "GM", isGM: true });
  const assistant = new FakeUser({ id: "gm0001", name: "Assistant", isGM: true });
  const p1 = new FakeUser({ id: "pl0001", name: "Ann" });
  const users = makeUsers([gm, assistant, p1]);
  const ran = [];
  const make = (user) => {
    const c = makeClient({ server, world, users, user, generation, worldSettings: new Map() });
    c.relay = new Relay({ game: c.game, CONFIG: c.CONFIG, timeoutMs: 200, handlers: {
      whoAnswers: { runsOn: "gm", fn: async () => { ran.push(c.game.user.id); return c.game.user.id; } },
    } });
    c.relay.register();
    return c;
  };
  return { users: { gm, assistant }, gm: make(gm), assistant: make(assistant), p1: make(p1), ran };
}

test("with Foundry's active GM unpaired, the connected paired GM first by id talks to the companion; a player's paired flag counts for nothing", async () => {
  const users = ["gm0000", "gm0002", "gm0001"].map((id) => new FakeUser({ id, name: id, isGM: true }));
  const player = new FakeUser({ id: "gm0000a", name: "Ann" });
  await Promise.all([users[1], users[2], player].map((u) => u.setFlag("mindscape", "paired", true)));
  const relay = new Relay({ game: { users: makeUsers([...users, player]), user: player }, CONFIG: null, handlers: {} });
  assert.equal(relay.activeGM.id, "gm0001");
});

test("requests go to a connected GM whose browser is paired when Foundry's active GM is not", async () => {
  const t = twoGMs();
  await t.users.assistant.setFlag("mindscape", "paired", true);
  assert.equal(t.p1.relay.activeGM.id, "gm0001");
  assert.equal(await t.p1.relay.toGM("whoAnswers", {}), "gm0001");
  // Every client names the same GM: the unpaired GM's own requests go there too.
  assert.equal(t.gm.relay.isActiveGM, false);
  assert.equal(t.assistant.relay.isActiveGM, true);
  assert.equal(await t.gm.relay.toGM("whoAnswers", {}), "gm0001");
});

test("a paired GM who is not connected is passed over; with no paired GM Foundry's active GM answers", async () => {
  const t = twoGMs();
  assert.equal(await t.p1.relay.toGM("whoAnswers", {}), "gm0000");
  await t.users.assistant.setFlag("mindscape", "paired", true);
  Object.getPrototypeOf(t.p1.game.users.get("gm0001")).active = false;
  assert.equal(await t.p1.relay.toGM("whoAnswers", {}), "gm0000");
  // Both paired: Foundry's active GM keeps the role.
  Object.getPrototypeOf(t.p1.game.users.get("gm0001")).active = true;
  await t.users.gm.setFlag("mindscape", "paired", true);
  assert.equal(await t.p1.relay.toGM("whoAnswers", {}), "gm0000");
});

test("v13: a GM's request sent straight to a GM's client that does not talk to the companion is refused there, not run", async () => {
  const t = twoGMs({ generation: 13, passQuerySender: true });
  assert.equal(t.assistant.relay.isActiveGM, false);
  // Any client may query any user: Ann asks the assistant GM, whose client is not the active GM's.
  const envelope = await t.p1.game.users.get("gm0001").query("mindscape.whoAnswers", { payload: {} }, {});
  assert.equal(envelope.ok, false);
  assert.equal(envelope.error.name, "PermissionDeniedError");
  assert.deepEqual(t.ran, []);
  // The same request through the relay reaches the active GM, who runs it.
  assert.equal(await t.p1.relay.toGM("whoAnswers", {}), "gm0000");
  assert.deepEqual(t.ran, ["gm0000"]);
});

// v13's User#query refuses to send (a player without QUERY_USER, an inactive recipient),
// and its receiving client never answers a query it has no handler for (a GM reloading):
// the player reads the module's own words, never Foundry's raw error, and never waits
// forever.

test("v13: a player whose QUERY_USER permission the GM took away sends requests over the module socket, not by query", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  t.p1.game.user.permissions.QUERY_USER = false;
  const answer = await t.p1.relay.toGM("whoAmI", { x: 1 });
  assert.deepEqual(answer, { sender: "pl0001", echo: { x: 1 } });
  assert.equal(t.server.log.filter((l) => l.query).length, 0);
  assert.ok(t.server.log.some((l) => l.message?.type === "request" && l.channel === "module.mindscape"));
});

test("v13: a query to a GM's client that has not registered its handlers yet (reloading) ends in RelayTimeoutError, not in a wait without end", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  delete t.gm.CONFIG.queries["mindscape.whoAmI"];
  const started = Date.now();
  const error = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(error.name, "RelayTimeoutError");
  assert.equal(error.key, "MINDSCAPE.Error.RelayTimeout");
  assert.equal(t.server.unanswered, 1);
  assert.ok(Date.now() - started < 5000);
});

test("v13: a query Foundry rejects (a plain Error) reaches the player as the module's RelayTimeoutError; to a GM gone meanwhile as NoGMError", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  t.server.rejectQueries = "Something failed on the server";
  const error = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(error.name, "RelayTimeoutError");
  // The GM leaves after the player's client picked it: Foundry's "User [id] is not active".
  t.server.rejectQueries = null;
  const gm = t.p1.game.users.get("gm0000");
  const query = gm.query;
  gm.query = async (...args) => { Object.getPrototypeOf(gm).active = false; return query(...args); };
  const gone = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(gone.name, "NoGMError");
});

test("v13: a question to a player whose client rejects it reaches the GM as RelayTimeoutError naming the player", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  t.server.rejectQueries = "boom";
  const error = await t.gm.relay.toUser("pl0001", "pick", { options: ["x"] }).catch((e) => e);
  assert.equal(error.name, "RelayTimeoutError");
});

test("v13: the handlers registered at init answer a request that arrives before ready with RelayNotReadyError, and run it after ready", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  t.gm.relay.register({ untilReady: true });
  const early = await t.p1.relay.toGM("whoAmI", {}).catch((e) => e);
  assert.equal(early.name, "RelayNotReadyError");
  assert.equal(early.key, "MINDSCAPE.Error.NotReady");
  assert.deepEqual(t.seen, []);
  t.gm.relay.accept();
  assert.equal((await t.p1.relay.toGM("whoAmI", {})).sender, "pl0001");
});

test("the stand-in's User#query is Foundry v13's: refused before sending without QUERY_USER, to an inactive user, or for a query not registered here", async () => {
  const t = table({ generation: 13, passQuerySender: true });
  const gm = t.p1.game.users.get("gm0000");
  await assert.rejects(gm.query("mindscape.nothing", {}, {}), /is not registered/);
  t.p1.game.user.permissions.QUERY_USER = false;
  await assert.rejects(gm.query("mindscape.whoAmI", {}, {}), /do not have permission to query users/);
  t.p1.game.user.permissions.QUERY_USER = true;
  Object.getPrototypeOf(gm).active = false;
  await assert.rejects(gm.query("mindscape.whoAmI", {}, {}), /is not active/);
  assert.equal(t.server.log.filter((l) => l.query).length, 0);
});
