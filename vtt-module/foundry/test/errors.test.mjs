// Error classification: every failure becomes a typed error whose message tells the user
// how to fix it (STYLE.md: "the companion is not running at …; start it with `mindscape serve`").
import { test } from "node:test";
import assert from "node:assert/strict";
import { DaemonClient } from "../mindscape/scripts/rpc.js";
import * as E from "../mindscape/scripts/errors.js";
import { fakeDaemon, makeI18n } from "../test-support/fakes.mjs";

const i18n = makeI18n();
const client = (fetch, token = "secret-token") => new DaemonClient({ url: "http://127.0.0.1:39393/", token, fetch, origin: "http://localhost:30000" });

test("a refused connection says to start the daemon, check the address, allow local network access and the origin", async () => {
  const err = await client(async () => { throw new TypeError("Failed to fetch"); }).call("companion.info").catch((e) => e);
  assert.ok(err instanceof E.DaemonUnreachableError);
  const text = E.describeError(err, i18n);
  assert.match(text, /at http:\/\/127\.0\.0\.1:39393\./);
  // A notice is plain text: the language file's code marks are dropped, the command stays.
  assert.match(text, /Start it on the GM's computer with mindscape serve \(/);
  assert.doesNotMatch(text, /`/);
  assert.match(text, /local network access/);
  assert.match(text, /--allow-origin http:\/\/localhost:30000/);
});

test("a wrong token (HTTP 401) says to run `mindscape token` and pair again", async () => {
  const { fetch } = fakeDaemon({}, { token: "right" });
  const err = await client(fetch, "wrong").call("companion.info").catch((e) => e);
  assert.ok(err instanceof E.DaemonAuthError);
  assert.match(E.describeError(err, i18n), /Run mindscape token on the GM's computer.*Pair with the companion/);
});

test("no token at all says the module is not paired, without calling the daemon", async () => {
  let called = false;
  const err = await client(async () => { called = true; }, "").call("companion.info").catch((e) => e);
  assert.ok(err instanceof E.NotPairedError);
  assert.equal(called, false);
});

test("HTTP 403 and non-JSON answers are told apart", async () => {
  const forbidden = await client(async () => ({ status: 403, ok: false, json: async () => ({}) })).call("x").catch((e) => e);
  assert.ok(forbidden instanceof E.DaemonForbiddenError);
  const html = await client(async () => ({ status: 502, ok: false, json: async () => { throw new SyntaxError("<html>"); } })).call("x").catch((e) => e);
  assert.ok(html instanceof E.DaemonHttpError);
  assert.match(E.describeError(html, i18n), /HTTP 502/);
});

test("the companion is called without following a redirect (something else answers there: the token goes nowhere further)", async () => {
  let init = null;
  await client(async (_url, given) => { init = given; return { status: 200, ok: true, json: async () => ({ jsonrpc: "2.0", id: 1, result: {} }) }; }).call("companion.info");
  assert.equal(init.redirect, "error");
  assert.equal(init.method, "POST");
});

test("a request the companion refuses before JSON-RPC (413, 415) reads its own words, not an unexpected failure", async () => {
  // As the companion answers a body over 1 MiB (docs/API.md, Limits).
  const said = "the request body exceeds 1048576 bytes";
  const big = await client(async () => ({ status: 413, ok: false, json: async () => ({ error: said }) })).call("exchange.end_round", {}).catch((e) => e);
  assert.ok(big instanceof E.DaemonHttpError);
  assert.equal(E.describeError(big, i18n), `The Mindscape companion at http://127.0.0.1:39393 refused the request (HTTP 413: ${said}). Nothing was changed.`);
  // An HTTP error whose body is no such answer is told as before.
  const other = await client(async () => ({ status: 404, ok: false, json: async () => ({ error: { nested: true } }) })).call("x").catch((e) => e);
  assert.match(E.describeError(other, i18n), /answered HTTP 404 instead of a JSON-RPC reply/);
});

test("the companion's own words for a refused request are quoted up to 300 characters", async () => {
  const said = "x".repeat(1000);
  const big = await client(async () => ({ status: 413, ok: false, json: async () => ({ error: said }) })).call("exchange.end_round", {}).catch((e) => e);
  assert.equal(big.data.said, "x".repeat(300));
});

test("a token pasted with spaces or a line break around it is sent without them, and each request has its own id", async () => {
  const daemon = fakeDaemon({ "companion.info": () => ({ name: "mindscape" }) });
  const ids = [];
  const fetch = async (url, init) => { ids.push(JSON.parse(init.body).id); return daemon.fetch(url, init); };
  const paired = client(fetch, "  secret-token\n");
  assert.deepEqual(await paired.call("companion.info"), { name: "mindscape" });
  assert.deepEqual(await paired.info(), { name: "mindscape" });
  assert.deepEqual(ids, [1, 2]);
});

test("JSON-RPC error codes map to their classes (API.md error table)", () => {
  assert.ok(E.errorFromRpc({ code: -32602, message: "bad", data: { errors: [{ path: "/attack/multiplier", message: "above level" }] } }) instanceof E.InvalidParamsError);
  assert.ok(E.errorFromRpc({ code: 4001, data: { rule: "psp", detail: "d" } }) instanceof E.RulesError);
  assert.ok(E.errorFromRpc({ code: 4002, data: { purpose: "damage", sides: 4, needed: 2 } }) instanceof E.DiceNeededError);
  assert.ok(E.errorFromRpc({ code: 4004, data: { id: "enc" } }) instanceof E.NotFoundError);
  assert.ok(E.errorFromRpc({ code: 4009, data: { revision: 3 } }) instanceof E.StaleRevisionError);
  assert.ok(E.errorFromRpc({ code: -32603, data: { id: "e1" } }) instanceof E.DaemonFaultError);
  assert.ok(E.errorFromRpc({ code: 5003, data: { error_id: "e2", retry: true } }) instanceof E.StoreUnavailableError);
});

test("a JSON-RPC error whose data is null maps to its class as one without data", () => {
  const err = E.errorFromRpc({ code: 4004, message: "Unknown encounter", data: null });
  assert.ok(err instanceof E.NotFoundError);
  assert.equal(err.data.id, "");
  assert.equal(err.data.message, "Unknown encounter");
});

test("a -32602 about what was asked (attack, defense, choices, hours) does not send the user to the actor's profile; one about a sheet does", () => {
  const asked = E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/attack/multiplier", message: "999 is greater than the maximum of 100" }] } });
  assert.equal(E.describeError(asked, i18n), "The companion rejected what was asked: /attack/multiplier: 999 is greater than the maximum of 100. Correct the macro's attack, defense or choices; nothing was changed.");
  const sheet = E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/attack/mode", message: "x" }, { path: "/defender/data/actor/flags/mindscape/revised-2e/psp", message: "must be at least 0" }] } });
  assert.match(E.describeError(sheet, i18n), /Check the actor's psionic profile/);
});

test("what was asked is the attack, the defense, a round's choices and the hours, whole or in part; a sheet's field named alike is still the sheet", () => {
  const told = (path) => E.describeError(E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path, message: "bad" }] } }), i18n);
  for (const path of ["/attack", "/defense/mode", "/choices/0/mode", "/hours"]) assert.match(told(path), /^The companion rejected what was asked/, path);
  for (const path of ["/defender/data/actor/flags/mindscape/combat-strength/defense", "/hoursLeft", "/attacker/data"]) assert.match(told(path), /Check the actor's psionic profile/, path);
});

test("a -32602 about the encounter as a whole (every problem at exactly /combatant: a full encounter, a system that cannot take a combatant again) does not send the user to the actor's profile; one below /combatant still does", () => {
  const told = (...problems) => E.describeError(E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: problems } }), i18n);
  const full = { path: "/combatant", message: "an encounter holds at most 64 combatants (limit max_combatants)" };
  const again = { path: "/combatant", message: "system x cannot take a combatant again during an encounter" };
  assert.equal(told(full), "The companion refused this for the encounter as a whole, not for a sheet: /combatant: an encounter holds at most 64 combatants (limit max_combatants).");
  assert.equal(told(full, again), "The companion refused this for the encounter as a whole, not for a sheet: /combatant: an encounter holds at most 64 combatants (limit max_combatants); /combatant: system x cannot take a combatant again during an encounter.");
  for (const path of ["/combatant/id", "/combatant/data/actor/flags/mindscape/revised-2e/psp", "/combatants", "/combatantX"]) assert.match(told({ path, message: "bad" }), /^The companion rejected the request: .*Check the actor's psionic profile/, path);
  assert.match(told(full, { path: "/combatant/mthac0", message: "must be at most 20" }), /Check the actor's psionic profile/);
});

test("an unexpected failure is told by its message alone", () => {
  assert.equal(E.describeError(new TypeError("x is not a function"), i18n), "Mindscape failed: x is not a function");
  assert.equal(E.describeError("lost", i18n), "Mindscape failed: lost");
});

test("a store that cannot write says nothing changed and what to do", () => {
  const err = E.errorFromRpc({ code: 5003, message: "Store unavailable: nothing was written", data: { error_id: "ab12", retry: true } });
  const text = E.describeError(err, i18n);
  assert.match(text, /ab12/);
  assert.match(text, /Nothing was changed/);
});

test("a 5003 with retry: false (the store's files deleted or replaced while the companion ran) says to restart mindscape serve, not to free space; retry true or absent keeps the full-disk message", () => {
  const told = (data) => E.describeError(E.errorFromRpc({ code: 5003, message: "Store unavailable: nothing was written", data }), i18n);
  assert.equal(told({ error_id: "ab12", retry: false }), "The companion's store files were moved or deleted while it ran, so nothing was saved (error id ab12). Put them back if they were moved, then restart mindscape serve on the GM's computer (without them it starts a new, empty store); its log under that error id says more.");
  const full = "The companion could not save (error id ab12): its disk may be full or its folder read-only. Nothing was changed; free some space on the GM's computer and try again.";
  assert.equal(told({ error_id: "ab12", retry: true }), full);
  assert.equal(told({ error_id: "ab12" }), full);
  // Only the boolean false says the files are gone: anything else keeps the full-disk story.
  for (const retry of ["false", 0, null]) assert.equal(told({ error_id: "ab12", retry }), full, `retry ${JSON.stringify(retry)}`);
  assert.match(told(undefined), /^The companion could not save \(error id \): its disk may be full/);
  // A player's client rebuilds the GM's error from the relay and says the same.
  const relayed = E.errorFromJSON(JSON.parse(JSON.stringify(E.errorFromRpc({ code: 5003, data: { error_id: "ab12", retry: false } }))));
  assert.ok(relayed instanceof E.StoreUnavailableError);
  assert.match(E.describeError(relayed, i18n), /^The companion's store files were moved or deleted .*restart mindscape serve/);
});

test("invalid params name the JSON Pointer path of each problem", () => {
  const err = E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/attack/multiplier", message: "5 is above level 4" }] } });
  assert.match(E.describeError(err, i18n), /\/attack\/multiplier: 5 is above level 4/);
});

test("a stale encounter names the revision it is at now, and an unexpected failure the companion's error id, by either name", () => {
  assert.equal(E.describeError(E.errorFromRpc({ code: 4009, message: "Stale revision", data: { revision: 7 } }), i18n), "The encounter changed meanwhile (now at revision 7). The panel has been refreshed; try again.");
  assert.match(E.describeError(E.errorFromRpc({ code: -32603, message: "Internal error", data: { error_id: "c0ffee" } }), i18n), /\(error id c0ffee\)/);
  assert.match(E.describeError(E.errorFromRpc({ code: -32603, message: "Internal error", data: { id: "beef01" } }), i18n), /\(error id beef01\)/);
});

test("a value the companion gives as null is left out of the message, never printed as null", () => {
  // As encounter.js refuses a stale write when the encounter has no revision.
  const text = E.describeError(new E.StaleRevisionError({ code: 4009, message: "Stale revision", revision: null }), i18n);
  assert.equal(text, "The encounter changed meanwhile (now at revision ). The panel has been refreshed; try again.");
});

test("a problem with the params as a whole (an empty JSON Pointer) is named at /", () => {
  const err = E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path: "", message: "'system' is a required property" }] } });
  assert.match(E.describeError(err, i18n), /: \/: 'system' is a required property/);
});

test("invalid params list several problems apart by semicolons, and without a list say the companion's message", () => {
  const two = E.errorFromRpc({ code: -32602, message: "Invalid params", data: { errors: [{ path: "/attacker/data", message: "a" }, { path: "/defender/data", message: "b" }] } });
  assert.match(E.describeError(two, i18n), /: \/attacker\/data: a; \/defender\/data: b\. Check/);
  const bare = E.errorFromRpc({ code: -32602, message: "params must be an object" });
  assert.equal(E.describeError(bare, i18n), "The companion rejected the request: params must be an object. Check the actor's psionic profile (sheet header › Psionic profile).");
});

test("a refusal by the rules says why in the companion's words, without the rule's id (kept for the GM's console)", () => {
  const err = E.errorFromRpc({ code: 4001, message: "rules", data: { rule: "psp", detail: "Ulcen has 3 PSPs, needs 8" } });
  assert.equal(E.describeError(err, i18n), "The rules forbid this: Ulcen has 3 PSPs, needs 8");
  assert.equal(err.data.rule, "psp");
});

test("a refusal by the rules without a detail or a rule says the companion's message, with an empty rule", () => {
  const err = E.errorFromRpc({ code: 4001, message: "Ulcen cannot attack while stunned" });
  assert.deepEqual(err.data, { code: 4001, message: "Ulcen cannot attack while stunned", rule: "", detail: "Ulcen cannot attack while stunned" });
  assert.equal(E.describeError(err, i18n), "The rules forbid this: Ulcen cannot attack while stunned");
});

test("a refusal about one creature keeps its id (API.md: 4001 data `combatant`), and one about nobody has none", () => {
  const about = E.errorFromRpc({ code: 4001, message: "rules", data: { rule: "no-die-to-dedicate", detail: "Goblin has no die", combatant: "goblin-tokG" } });
  assert.equal(about.data.combatant, "goblin-tokG");
  assert.equal(E.describeError(about, i18n), "The rules forbid this: Goblin has no die");
  assert.equal(E.errorFromJSON(JSON.parse(JSON.stringify(about))).data.combatant, "goblin-tokG", "across the relay too");
  assert.ok(!("combatant" in E.errorFromRpc({ code: 4001, data: { rule: "psp", detail: "d" } }).data));
});

test("every error class has a message in en.json and none prints 'undefined'", () => {
  const samples = [
    new E.DaemonUnreachableError({ url: "u" }), new E.DaemonAuthError({ url: "u" }), new E.DaemonForbiddenError({ url: "u" }),
    new E.DaemonHttpError({ url: "u", status: 500 }), new E.NotPairedError(), new E.NoGMError(), new E.RelayTimeoutError(),
    new E.PermissionDeniedError({}), new E.CancelledError(), new E.NotFoundError({}), new E.StaleRevisionError({}), new E.DaemonFaultError({}),
  ];
  for (const err of samples) {
    assert.ok(i18n.has(err.key), err.key);
    assert.doesNotMatch(E.describeError(err, i18n), /undefined/, err.key);
  }
  assert.match(E.describeError(new Error("boom"), i18n), /boom/);
});

test("errors rebuilt from relay JSON keep their class and data, and unknown names stay plain", () => {
  const back = E.errorFromJSON(new E.RulesError({ rule: "r", detail: "d" }).toJSON());
  assert.ok(back instanceof E.RulesError);
  assert.equal(back.data.detail, "d");
  const odd = E.errorFromJSON({ name: "Function", key: 3, data: null });
  assert.equal(odd.constructor, E.MindscapeError);
  assert.equal(odd.key, "MINDSCAPE.Error.Remote");
  // Data that is no object (a peer's text) is none.
  assert.deepEqual(E.errorFromJSON({ name: "RulesError", key: "MINDSCAPE.Error.Rules", data: "not enough PSPs" }).data, {});
});

test("every error the module throws crosses the relay as its own class, so a player's client tells it apart as the GM's would", () => {
  // (RpcError itself is never thrown: errorFromRpc makes its subclasses.)
  const classes = Object.values(E).filter((Cls) => typeof Cls === "function" && Cls.prototype instanceof E.MindscapeError && Cls !== E.RpcError);
  assert.ok(classes.length >= 20);
  for (const Cls of classes) {
    const back = E.errorFromJSON(JSON.parse(JSON.stringify({ name: Cls.name, key: "MINDSCAPE.Error.Remote", data: { detail: "d" } })));
    assert.ok(back instanceof Cls, Cls.name);
    assert.equal(back.name, Cls.name);
    assert.equal(back.data.detail, "d");
  }
});
