// The "Companion address" client setting (VTT.md: daemon URL and token client-scope).
// An address that is not an absolute http(s) address of the companion is refused by
// name before anything is sent: a browser resolves `127.0.0.1:39393` or "" against the
// Foundry page, and the bearer token would go to the Foundry server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DaemonClient, checkDaemonUrl } from "../mindscape/scripts/rpc.js";
import { BadDaemonUrlError, describeError } from "../mindscape/scripts/errors.js";
import { makeI18n } from "../test-support/fakes.mjs";
import { makeTable } from "../test-support/scenario.mjs";

const i18n = makeI18n();

test("an address without a scheme, empty, of another scheme, or with a path, query or user name is refused before any request", async () => {
  const bad = ["", "   ", "127.0.0.1:39393", "localhost:39393", "//127.0.0.1:39393", "ftp://127.0.0.1:39393", "http://", "http://127.0.0.1:39393/rpc", "http://127.0.0.1:39393/?x=1", "http://127.0.0.1:39393/#a", "http://me:pw@127.0.0.1:39393", "http://me@127.0.0.1:39393", "http://:pw@127.0.0.1:39393", "http://127.0.0.1:39393/?", "http://127.0.0.1:39393?", "http://127.0.0.1:39393/#", "http://127.0.0.1:39393#"];
  for (const url of bad) {
    const sent = [];
    const client = new DaemonClient({ url, token: "secret-token", fetch: async (to, init) => { sent.push([to, init]); return { status: 200, ok: true, json: async () => ({ result: {} }) }; } });
    const error = await client.call("companion.info").catch((e) => e);
    assert.ok(error instanceof BadDaemonUrlError, `${JSON.stringify(url)}: ${error}`);
    assert.deepEqual(sent, [], `${JSON.stringify(url)}: nothing is sent, the token least of all`);
  }
});

test("the refusal names the setting and the address, says what an address looks like and where to correct it", () => {
  const error = (() => { try { return checkDaemonUrl("127.0.0.1:39393"); } catch (e) { return e; } })();
  const text = describeError(error, i18n);
  assert.match(text, /^The Companion address "127\.0\.0\.1:39393" is not an address/);
  assert.match(text, /http:\/\/ or https:\/\//);
  assert.match(text, /for example http:\/\/127\.0\.0\.1:39393, which mindscape serve prints/);
  assert.match(text, /Nothing was sent\. Correct it in Mindscape › Pair with the companion\.$/);
});

test("good addresses pass as they are, without their trailing slash", async () => {
  for (const [url, want] of [["http://127.0.0.1:39393", "http://127.0.0.1:39393"], [" http://localhost:39393/ ", "http://localhost:39393"], ["https://[::1]:8443", "https://[::1]:8443"], ["HTTP://127.0.0.1:39393", "HTTP://127.0.0.1:39393"], ["http://127.0.0.1:39393//", "http://127.0.0.1:39393"]]) {
    assert.equal(checkDaemonUrl(url), want);
  }
  const sent = [];
  for (const url of ["http://127.0.0.1:39393/", "http://127.0.0.1:39393//"]) {
    const client = new DaemonClient({ url, token: "secret-token", fetch: async (to) => { sent.push(to); return { status: 200, ok: true, json: async () => ({ result: { name: "mindscape" } }) }; } });
    assert.deepEqual(await client.call("companion.info"), { name: "mindscape" });
  }
  assert.deepEqual(sent, ["http://127.0.0.1:39393/rpc", "http://127.0.0.1:39393/rpc"]);
});

test("the pairing dialog does not save an address it cannot call: the GM is told, the dialog opens again with what was typed, and only a good address is saved", async () => {
  const answers = [{ url: "127.0.0.1:40000", token: "new-token" }, { url: "http://127.0.0.1:40000/", token: "new-token" }];
  const t = makeTable({ dialogs: { gm: { pairingDialog: answers } } });
  const gm = t.clients.gm;
  const form = await gm.svc.openPairing();
  assert.equal(form.url, "http://127.0.0.1:40000/");
  const opened = gm.dialogs.seen.filter((d) => d.kind === "pairingDialog").map((d) => [d.arg.url, d.arg.token]);
  assert.deepEqual(opened, [["http://127.0.0.1:39393", "secret-token"], ["127.0.0.1:40000", "new-token"]]);
  assert.equal(gm.notes.error.length, 1);
  assert.match(gm.notes.error[0], /^The Companion address "127\.0\.0\.1:40000"/);
  assert.equal(gm.game.settings.get("mindscape", "daemonUrl"), "http://127.0.0.1:40000");
  assert.equal(gm.game.settings.get("mindscape", "daemonToken"), "new-token");
});

test("a bad address cancelled in the pairing dialog changes nothing", async () => {
  const t = makeTable({ dialogs: { gm: { pairingDialog: [{ url: "localhost", token: "other" }, null] } } });
  const gm = t.clients.gm;
  assert.equal(await gm.svc.openPairing(), null);
  assert.equal(gm.game.settings.get("mindscape", "daemonUrl"), "http://127.0.0.1:39393");
  assert.equal(gm.game.settings.get("mindscape", "daemonToken"), "secret-token");
});

test("an address set from a macro that cannot be called fails every request with that message, and calls nothing", async () => {
  const t = makeTable();
  const gm = t.clients.gm;
  await gm.game.settings.set("mindscape", "daemonUrl", "127.0.0.1:39393");
  gm.game.user.targets = new Set([{ document: t.tokens.fenkaToken }]);
  assert.equal(await gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid }), null);
  assert.equal(t.daemon.calls.length, 0);
  assert.match(gm.notes.error[0], /^The Companion address "127\.0\.0\.1:39393" is not an address Mindscape can call/);
});

test("a pasted token is saved without the spaces or line break around it", async () => {
  const t = makeTable({ dialogs: { gm: { pairingDialog: { url: "http://127.0.0.1:39393", token: "  fresh-token\n" } } } });
  await t.clients.gm.svc.openPairing();
  assert.equal(t.clients.gm.game.settings.get("mindscape", "daemonToken"), "fresh-token");
});

test("Test the connection names the companion, its version and its systems", async () => {
  let tested;
  const t = makeTable({ dialogs: { gm: { pairingDialog: async ({ test: check }) => { tested = await check("http://127.0.0.1:39393", "secret-token"); return null; } } } });
  await t.clients.gm.svc.openPairing();
  assert.match(tested, /mindscape/);
  assert.match(tested, /0\.1\.0/);
  assert.match(tested, /revised-2e, combat-strength, power-pool/);
});

test("the pairing dialog knows when Foundry is served over https, where a browser may refuse a plain http companion", async () => {
  const had = Object.getOwnPropertyDescriptor(globalThis, "location");
  try {
    for (const [origin, hosted] of [["https://vtt.example.org", true], ["http://localhost:30000", false]]) {
      Object.defineProperty(globalThis, "location", { value: { origin }, configurable: true, writable: true });
      const t = makeTable({ dialogs: { gm: { pairingDialog: null } } });
      await t.clients.gm.svc.openPairing();
      assert.deepEqual(t.clients.gm.dialogs.seen[0].arg.context, { origin, hosted });
    }
  } finally {
    if (had) Object.defineProperty(globalThis, "location", had);
    else delete globalThis.location;
  }
});
