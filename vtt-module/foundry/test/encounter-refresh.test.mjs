// Encounter combatants taken again from their sheets (`encounter.refresh`, API.md): the
// encounter keeps the copy read at `encounter.add`, so what changed on a sheet outside it
// (PSPs spent on a power, a stun from a single exchange) would be overwritten by the next
// write-back. "The Foundry module refreshes every sheet-backed combatant before it
// resolves a step" (API.md): before each resolve and before choices are asked, one call
// per combatant, in turn; a refusal stops the step. The panel and the macro API refresh
// on demand and say what changed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { actorUuidOfRef, encounterMethods, makeTable, renderModuleTemplate, revisedResult } from "../test-support/scenario.mjs";
import { FakeTokenDocument, tick } from "../test-support/fakes.mjs";
import { makeApi } from "../mindscape/scripts/api.js";
import { EncounterController, droppedReport, makeEncounterPanel, refreshReport, updatesOfStep } from "../mindscape/scripts/encounter.js";
import { AddRefusedError, DaemonHttpError, DaemonUnreachableError, RefreshRefusedError, describeError } from "../mindscape/scripts/errors.js";
import { hookTable } from "../mindscape/scripts/hooks.js";

const psp = (actor) => actor.flags.mindscape["revised-2e"].psp;
const calls = (t, from = 0) => t.daemon.calls.slice(from).filter((c) => c.method.startsWith("encounter."));

/**
 * The table of scenario.mjs over the daemon's encounter model: Ulcen (linked), Fenka and
 * the goblin (unlinked tokens) in encounter "enc1", Ulcen's ego whip declared at Fenka.
 */
async function encounter({ methods: wrap = (m) => m, dialogs, extraTokens } = {}) {
  const { methods, enc } = encounterMethods();
  const t = makeTable({ methods: wrap(methods), dialogs });
  const gm = t.clients.gm.svc;
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  await gm.encounters.create([ulcenToken.uuid, fenkaToken.uuid, goblinToken.uuid, ...(extraTokens?.(t) ?? [])], "Vault");
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  return { t, gm, ctl: gm.encounters, enc };
}

/**
 * Foundry deletes token document `token` (an unlinked one's own actor with it): every
 * client gets `deleteToken` (hooks.js). Resolves once the record is stored.
 */
function deleteToken(t, token) {
  t.world.docs.delete(token.uuid);
  if (!token.actorLink && token.actor?.isToken) t.world.docs.delete(token.actor.uuid);
  return Promise.all(Object.values(t.clients).map((c) => hookTable(c.svc).deleteToken(token)));
}

/**
 * Foundry deletes token document `token` and its actor (an unlinked token's own copy)
 * with no `deleteToken` heard by the module: the documents are simply not there any more.
 */
function removeDocs(t, token) {
  t.world.docs.delete(token.uuid);
  t.world.docs.delete(token.actor.uuid);
}

/** The GM's warnings given since `before` (a count of notices), each as [its words, whether it stays until dismissed]. */
function warningsSince(t, before) {
  return t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn").map((n) => [n.text, n.options?.permanent ?? false]);
}

/** `encounter`, with the companion's answer to each `encounter.resolve` put through `edit`, which returns the answer to give. */
function resolvingWith(edit, options = {}) {
  return encounter({ ...options, methods: (m) => ({ ...m, "encounter.resolve": (p) => edit(m["encounter.resolve"](p)) }) });
}

/**
 * `encounter`, whose companion, once it made its answer to an `encounter.resolve` (put
 * through `edit`), gives it only at `release()`; `asking` settles when it is made.
 */
async function resolveWaiting({ edit = (answer) => answer } = {}) {
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  let asked;
  const asking = new Promise((resolve) => { asked = resolve; });
  const table = await encounter({
    methods: (m) => ({ ...m, "encounter.resolve": async (p) => { const answer = m["encounter.resolve"](p); asked(); await answered; return edit(answer); } }),
  });
  return { ...table, asking, release };
}

/** What `encounter.refresh` is sent for each combatant: its sheet now, as encounter.add sent it. */
function refreshParams(t) {
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  const gm = t.clients.gm.svc;
  return [[ulcenToken, "ulcen"], [fenkaToken, "fenka-tokF"], [goblinToken, "goblin-tokG"]]
    .map(([token, cid]) => ({ id: "enc1", combatant_id: cid, combatant: gm.ref(token.actor, token, "foundry.dnd5e") }));
}

/** A resolve's answer as the companion gives it when it stored the step but could not write it back. */
function notWrittenBack(answer) {
  for (const r of answer.results) r.updates = [];
  return { ...answer, updates: [], updates_failed: { error_id: "e-42" } };
}

/** An encounter another GM's browser (or a macro) sets as the current one, a new object each time. */
const elsewhere = () => ({ id: "enc9", system: "revised-2e", name: "Elsewhere", combatants: {} });

/** What the tests of an encounter changed elsewhere set it to: none, or another one. */
const setElsewhereCases = () => [{}, elsewhere()];

/** Set the world's current encounter as another GM's browser or a macro does. */
function setElsewhere(t, next) {
  return t.clients.gm.svc.game.settings.set("mindscape", "encounter", next);
}

/**
 * `resolveWaiting`, with Fenka's sheet refusing writes of her PSPs (`lockPsp`) and a
 * resolve under way whose answer the companion made and gives at `release()`: the table
 * with `fenka` and `resolving`.
 */
async function resolvingFenkaLocked() {
  const table = await resolveWaiting();
  const fenka = table.t.tokens.fenkaToken.actor;
  lockPsp(fenka);
  const resolving = table.ctl.resolve();
  await table.asking;
  return { ...table, fenka, resolving };
}

test("before a resolve every combatant is taken again from its sheet, in turn, and the write-back starts from the sheets", async () => {
  let inFlight = 0;
  let most = 0;
  const { t, ctl, enc } = await encounter({
    methods: (m) => {
      const base = m["encounter.refresh"];
      return { ...m, "encounter.refresh": async (p) => { inFlight++; most = Math.max(most, inFlight); await tick(5); try { return base(p); } finally { inFlight--; } } };
    },
  });
  // Outside the encounter: Ulcen spends PSPs on a power, Fenka's own token loses some.
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 25 });
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 12 });
  const expected = refreshParams(t);
  const revision = enc.revision;
  const from = t.daemon.calls.length;
  await ctl.resolve();

  const made = calls(t, from);
  assert.deepEqual(made.map((c) => c.method), ["encounter.refresh", "encounter.refresh", "encounter.refresh", "encounter.resolve"]);
  assert.deepEqual(made.slice(0, 3).map((c) => c.params), expected, "one call per combatant, its sheet as it is now, no revision");
  assert.equal(most, 1, "one refresh at a time");
  // Two sheets changed: two refresh steps, then the resolve.
  assert.equal(enc.revision, revision + 3);
  // The ego whip costs Ulcen 8 of the 25 on the sheet (not of the 40 the encounter read at
  // encounter.add), and deals Fenka 11 of her 12.
  assert.equal(psp(t.actors.ulcen), 17);
  assert.equal(psp(t.tokens.fenkaToken.actor), 1);
  assert.equal(psp(t.actors.fenka), 30, "Fenka's base actor is not written");
  const hook = t.clients.gm.Hooks.called.find((h) => h.name === "mindscape.resolved").args[0];
  assert.deepEqual([hook.result.attacker.before.psp, hook.result.defender.before.psp], [25, 12]);
  // A refresh before a resolve is quiet: the card says what happened.
  assert.deepEqual(t.clients.gm.notes.info, []);
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
});

test("sheets that match the encounter change nothing: no step stored, the revision stays", async () => {
  const { t, ctl, enc } = await encounter();
  const revision = enc.revision;
  const refreshed = await ctl.refresh();
  assert.deepEqual(refreshed.map((r) => [r.combatantId, r.name, r.changed, r.revision]), [
    ["ulcen", "Ulcen of Tyr", [], revision], ["fenka-tokF", "Fenka", [], revision], ["goblin-tokG", "Goblin", [], revision],
  ]);
  assert.equal(enc.revision, revision);
  await ctl.resolve();
  assert.equal(enc.revision, revision + 1, "only the resolve is a step");
  assert.equal(psp(t.actors.ulcen), 32);
});

test("a combatant whose token was deleted is skipped, as it receives no updates either", async () => {
  const { t, ctl } = await encounter();
  const { goblinToken } = t.tokens;
  t.world.docs.delete(goblinToken.uuid);
  t.world.docs.delete(goblinToken.actor.uuid);
  const from = t.daemon.calls.length;
  await ctl.resolve();
  const made = calls(t, from);
  assert.deepEqual(made.map((c) => [c.method, c.params.combatant_id ?? null]), [["encounter.refresh", "ulcen"], ["encounter.refresh", "fenka-tokF"], ["encounter.resolve", null]]);
  assert.equal(psp(t.actors.ulcen), 32);
});

test("a sheet the companion refuses stops the resolve: nothing resolved, written or posted, and the GM is told whose sheet", async () => {
  const { t, ctl } = await encounter();
  // Fenka's token sheet now holds a profile the adapter refuses.
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": -1 });
  const from = t.daemon.calls.length;
  const error = await ctl.resolve().catch((e) => e);
  assert.ok(error instanceof RefreshRefusedError, String(error));
  assert.equal(error.data.name, "Fenka");
  assert.equal(error.cause.code, -32602);
  const text = describeError(error, t.clients.gm.svc.t);
  assert.match(text, /^Mindscape could not take Fenka again from the sheet into the encounter, so nothing was resolved or asked: /);
  assert.match(text, /\/combatant\/data\/actor\/flags\/mindscape\/revised-2e\/psp: must be at least 0, got -1/);
  // The goblin after her is not sent; the step is not resolved.
  assert.deepEqual(calls(t, from).map((c) => [c.method, c.params.combatant_id]), [["encounter.refresh", "ulcen"], ["encounter.refresh", "fenka-tokF"]]);
  assert.equal(t.actors.ulcen.updates.length, 0);
  assert.equal(psp(t.actors.ulcen), 40);
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.ok(!t.clients.gm.Hooks.called.some((h) => h.name === "mindscape.resolved"));
  // The queue is free again: once the sheet is fixed, the step resolves.
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 12 });
  await ctl.resolve();
  assert.equal(psp(t.tokens.fenkaToken.actor), 1);
});

test("an encounter the companion no longer knows (4004) is refused naming the first combatant", async () => {
  const { t, ctl, enc } = await encounter();
  enc.id = null; // deleted on the companion's side
  const error = await ctl.resolve().catch((e) => e);
  assert.ok(error instanceof RefreshRefusedError);
  assert.equal(error.data.name, "Ulcen of Tyr");
  assert.match(describeError(error, t.clients.gm.svc.t), /could not take Ulcen of Tyr again .*: The companion does not know "enc1"/);
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.resolve").length, 0);
});

test("the panel's Resolve shows a refusal to the GM as one error, naming the combatant", async () => {
  const { t, gm } = await encounter();
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": -1 });
  const panel = await openPanel(gm);
  await panel.options.actions.resolve.call(panel);
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.match(t.clients.gm.notes.error[0], /could not take Fenka again from the sheet/);
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.resolve").length, 0);
});

test("choices are asked against the sheets as they are now; a refusal asks nobody", async () => {
  const { t, ctl } = await encounter({
    dialogs: {
      p1: { encounterChoiceDialog: { attackMode: "ego-whip", target: "goblin-tokG", multiplier: "1", range: "short" } },
      p2: { encounterChoiceDialog: { defenseMode: "mind-blank" } },
      gm: { encounterChoiceDialog: { defenseMode: "" } },
    },
  });
  // Ulcen forgot mind thrust on his sheet after he joined the encounter.
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.attacks": ["ego-whip"] });
  await t.clients.gm.svc.rpc("encounter.resolve", { id: "enc1", force: true }); // a new round: everyone chooses
  const from = t.daemon.calls.length;
  await ctl.collectChoices();
  const made = calls(t, from).map((c) => c.method);
  assert.deepEqual(made.slice(0, 4), ["encounter.refresh", "encounter.refresh", "encounter.refresh", "encounter.get"]);
  const asked = t.clients.p1.dialogs.seen.find((s) => s.kind === "encounterChoiceDialog").arg.context;
  assert.deepEqual(asked.attacks.map((m) => m.id), ["ego-whip"], "only what the sheet still knows is offered");

  // Now Fenka's sheet is refused: nobody is asked, nothing declared.
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": -1 });
  await t.clients.gm.svc.rpc("encounter.resolve", { id: "enc1", force: true });
  const seen = Object.values(t.clients).map((c) => c.dialogs.seen.length);
  const again = t.daemon.calls.length;
  await assert.rejects(ctl.collectChoices(), (e) => e instanceof RefreshRefusedError && e.data.name === "Fenka");
  assert.deepEqual(Object.values(t.clients).map((c) => c.dialogs.seen.length), seen);
  assert.deepEqual(calls(t, again).map((c) => c.method), ["encounter.refresh", "encounter.refresh"]);
});

/**
 * `encounter()` whose single exchanges take a while and log their start and end, and
 * whose refreshes log whom they take (`order`), the GM answering defenses with none.
 */
async function encounterBesideAnExchange() {
  const order = [];
  const made = await encounter({
    methods: (m) => ({
      ...m,
      "exchange.resolve": async (params) => { order.push("exchange start"); await tick(30); order.push("exchange end"); return revisedResult(params); },
      "encounter.refresh": (p) => { order.push(`refresh ${p.combatant_id}`); return m["encounter.refresh"](p); },
    }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  return { ...made, order };
}

test("a resolve waits for a single exchange on one of its actors, then takes what that exchange wrote", async () => {
  const { t, ctl, order } = await encounterBesideAnExchange();
  // Fenka (an unlinked token of her own) is attacked outside the encounter by the goblin.
  const single = t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.goblinToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!order.length) await tick(1);
  await Promise.all([single, ctl.resolve()]);
  assert.deepEqual(order.slice(0, 3), ["exchange start", "exchange end", "refresh ulcen"]);
  // The encounter took Fenka at 30 - 11 = 19 and the goblin at 20 - 8 = 12; the ego whip
  // then deals Fenka 11 more.
  assert.equal(psp(t.tokens.fenkaToken.actor), 8);
  assert.equal(psp(t.tokens.goblinToken.actor), 12);
});

for (const [entry, run] of [
  ["Ask for choices", (t) => t.clients.gm.svc.encounters.collectChoices()],
  ["the panel's Refresh from sheets", async (t) => { const panel = await openPanel(t.clients.gm.svc); await panel.options.actions.refresh.call(panel); }],
  ["api.refreshEncounter", (t) => makeApi(t.clients.gm.svc).refreshEncounter()],
]) {
  test(`${entry} waits for a single exchange on one of the encounter's actors, then takes what that exchange wrote`, async () => {
    const { t, enc, order } = await encounterBesideAnExchange();
    // The goblin attacks Fenka outside the encounter while the GM refreshes it.
    const single = t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.goblinToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
    while (!order.length) await tick(1);
    await Promise.all([single, run(t)]);
    assert.deepEqual(order, ["exchange start", "exchange end", "refresh ulcen", "refresh fenka-tokF", "refresh goblin-tokG"]);
    // The encounter took Fenka at 30 - 11 = 19 and the goblin at 20 - 8 = 12.
    assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 19);
    assert.equal(enc.combatants.get("goblin-tokG").profile.psp, 12);
    assert.deepEqual(t.clients.gm.notes.error, []);
  });
}

test("API refreshEncounter: the GM is told which combatants changed which fields, or that every sheet matches", async () => {
  const { t, enc } = await encounter();
  const api = makeApi(t.clients.gm.svc);
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 25 });
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.revised-2e.psp": 12, "flags.mindscape.revised-2e.conditions": ["stunned"] });
  const revision = enc.revision;
  const refreshed = await api.refreshEncounter();
  assert.deepEqual(refreshed.map((r) => [r.name, r.changed]), [["Ulcen of Tyr", ["psp"]], ["Fenka", ["conditions", "psp"]], ["Goblin", []]]);
  assert.deepEqual(t.clients.gm.notes.info, ["Taken again from the sheets: Ulcen of Tyr (PSPs); Fenka (Conditions, PSPs)."]);
  assert.equal(enc.revision, revision + 2);
  assert.equal(enc.combatants.get("ulcen").profile.psp, 25);

  const again = await api.refreshEncounter();
  // Every combatant is still listed (api.js: `[{combatantId, name, changed, revision}]`), each with nothing changed.
  assert.deepEqual(again.map((r) => [r.name, r.changed]), [["Ulcen of Tyr", []], ["Fenka", []], ["Goblin", []]]);
  // Asked for, a refresh that changes nothing says so (the panel's button would seem dead).
  assert.deepEqual(t.clients.gm.notes.info.slice(1), ["Every sheet matches the encounter: nothing was taken again."]);
  assert.equal(enc.revision, revision + 2);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("a declared choice the refreshed sheet no longer allows is dropped: the GM is told whom to ask again, at a refresh and before a resolve", async () => {
  const { t, enc } = await encounter();
  const api = makeApi(t.clients.gm.svc);
  // Ulcen's sheet no longer knows the ego whip he declared.
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.attacks": ["mind-thrust"] });
  const refreshed = await api.refreshEncounter();
  assert.deepEqual(refreshed.find((r) => r.combatantId === "ulcen").dropped, ["ulcen"]);
  assert.equal(enc.choices.has("ulcen"), false);
  assert.deepEqual(t.clients.gm.notes.warn, ["The sheets no longer allow the choice these combatants declared; ask them again: Ulcen of Tyr."]);

  // Declared again and dropped again just before a resolve: said as the step goes on.
  await t.clients.gm.svc.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "mind-thrust", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.attacks": ["ego-whip"] });
  await t.clients.gm.svc.encounters.resolve({ force: true });
  assert.equal(t.clients.gm.notes.warn.length, 2);
  assert.match(t.clients.gm.notes.warn[1], /ask them again: Ulcen of Tyr/);
});

test("API refreshEncounter: a player is refused, also when asking the GM's client directly", async () => {
  const { t } = await encounter();
  const from = t.daemon.calls.length;
  assert.equal(await makeApi(t.clients.p1.svc).refreshEncounter(), null);
  assert.match(t.clients.p1.notes.error[0], /Only a GM may take the encounter's combatants again from their sheets/);
  const err = await t.clients.p1.svc.relay.toGM("refreshEncounter", {}).catch((e) => e);
  assert.equal(err.key, "MINDSCAPE.Error.RefreshGMOnly");
  assert.equal(calls(t, from).length, 0);
});

test("the panel has a Refresh from sheets button; it refreshes and reports", async () => {
  const { t, gm } = await encounter();
  const panel = await openPanel(gm);
  const html = renderModuleTemplate("encounter", panel.context);
  assert.match(html, /<button type="button" data-action="refresh"><i class="fas fa-sync-alt"><\/i> Refresh from sheets<\/button>/);
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 33 });
  const renders = panel.renders;
  await panel.options.actions.refresh.call(panel);
  assert.deepEqual(t.clients.gm.notes.info, ["Taken again from the sheets: Ulcen of Tyr (PSPs)."]);
  assert.equal(panel.renders, renders + 1, "the panel shows the refreshed state");
  assert.deepEqual(panel.context.combatants.map((c) => [c.name, c.summary]), [["Ulcen of Tyr", "PSP 33/40"], ["Fenka", "PSP 30/40"], ["Goblin", "PSP 20/20"]]);
  // The report names fields in the table's words, snake_case ones too.
  assert.equal(refreshReport([{ name: "A", changed: ["condition_rounds", "hp"] }], t.clients.gm.svc.t.label), "A (Condition rounds, Hit points)");
});

test("a refresh's report without the table's words writes a field as words; whom to ask again is named once, though two refreshes dropped the choice", () => {
  assert.equal(refreshReport([{ name: "A", changed: ["condition_rounds"] }]), "A (condition rounds)");
  assert.equal(droppedReport([
    { combatantId: "a", name: "Ann", dropped: ["a"] },
    { combatantId: "b", name: "Bo", dropped: ["a", "b"] },
  ]), "Ann, Bo");
});

test("the panel's log names refresh steps too", async () => {
  const { t, gm } = await encounter({
    methods: (m) => ({
      ...m,
      // `encounter.log` as the companion answers it: a refresh step's result names the combatant and the fields.
      "encounter.log": ({ id }) => ({ id, revision: 2, steps: [
        { revision: 1, kind: "add", params: {}, rolls: [], result: { combatant_id: "ulcen", warnings: [] }, created_at: "2026-01-01T00:00:00Z", undone_by: null },
        { revision: 2, kind: "refresh", params: {}, rolls: [], result: { combatant_id: "ulcen", changed: ["psp"], warnings: [] }, created_at: "2026-01-01T00:01:00Z", undone_by: null },
      ] }),
    }),
  });
  const panel = await openPanel(gm);
  await panel.options.actions.log.call(panel);
  assert.deepEqual(panel.context.log.map((l) => l.text), ["#1 added", "#2 refreshed"]);
  assert.match(renderModuleTemplate("encounter", panel.context), /#2 refreshed/);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

/** The encounter panel on the real service, over a minimal ApplicationV2 (no WebSocket opened). */
async function openPanel(svc) {
  class ApplicationV2 {
    constructor() { this.options = { ...this.constructor.DEFAULT_OPTIONS, actions: { ...this.constructor.DEFAULT_OPTIONS.actions } }; this.renders = 0; }
    async render() { this.renders++; this.context = await this._prepareContext(); this._onRender?.(); return this; }
    async close() { this.closed = true; }
  }
  class FakeWS { send() {} close() {} }
  svc.env.WebSocket = FakeWS;
  const Panel = makeEncounterPanel({ applications: { api: { ApplicationV2, HandlebarsApplicationMixin: (Base) => class extends Base {} } } }, svc);
  const panel = new Panel();
  await panel.render();
  return panel;
}

// ------------------------------------------------------------------ a write-back that missed the sheets

test("a step the companion stored but could not write back: the GM is told in a notice that stays until dismissed, and the sheets are not taken back into the encounter until the GM refreshes them", async () => {
  const { t, ctl } = await resolvingWith(notWrittenBack);
  const before = psp(t.actors.ulcen);
  await ctl.resolve();
  assert.equal(psp(t.actors.ulcen), before, "nothing was written");
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.match(t.clients.gm.notes.error[0], /^The companion stored the step but could not write it to the sheets \(error e-42; its log has the cause\)\..*keeps its own copy of Ulcen of Tyr, Fenka, Goblin until you bring their sheets in line and press Refresh from sheets\.$/);
  assert.deepEqual(t.clients.gm.notes.given.map((n) => [n.kind, n.options?.permanent ?? false]), [["error", true]]);
  assert.deepEqual(Object.keys(ctl.meta.held), ["ulcen", "fenka-tokF", "goblin-tokG"]);

  // The next step keeps the encounter's copies: no sheet is taken again.
  const from = t.daemon.calls.length;
  await ctl.resolve({ force: true });
  // (encounter.get: who was still to choose, to tell the GM whom the forced step went without.)
  assert.deepEqual(calls(t, from).map((c) => c.method), ["encounter.get", "encounter.resolve"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^Kept the encounter's own copy of Ulcen of Tyr, Fenka, Goblin: a write-back missed their sheets/);

  // The GM brings the sheets in line and refreshes: every sheet is taken, the hold ends.
  const panelFrom = t.daemon.calls.length;
  await makeApi(t.clients.gm.svc).refreshEncounter();
  assert.deepEqual(calls(t, panelFrom).map((c) => c.method), ["encounter.refresh", "encounter.refresh", "encounter.refresh"]);
  assert.equal(ctl.meta.held, undefined);
});

test("a sheet held because the companion could not write a step stays held when a later write to it misses too: only the GM's refresh ends that hold", async () => {
  let failOnce = true;
  const { t, ctl } = await resolvingWith((answer) => {
    if (!failOnce) return answer;
    failOnce = false;
    return notWrittenBack(answer);
  });
  await ctl.resolve();
  const lock = lockPsp(t.tokens.fenkaToken.actor);
  await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  await ctl.resolve({ force: true });
  lock.on = false;
  await ctl.refresh();
  assert.deepEqual(ctl.meta.held["fenka-tokF"], { write: null });
});

/**
 * An encounter of Ulcen and Fenka whose first resolve the companion stored but could not
 * write back (updates_failed): both held with nothing to try again. `answerWith` sets
 * what the companion answers the next resolve.
 */
async function heldWithNothingToTry() {
  const { methods, enc } = encounterMethods();
  let answer = (p) => notWrittenBack(methods["encounter.resolve"](p));
  const t = makeTable({ methods: { ...methods, "encounter.resolve": (p) => answer(p) } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
  await ctl.resolve({ force: true });
  return { t, ctl, enc, answerWith: (next) => { answer = next; } };
}

test("a write Foundry misses on a sheet the companion's hold already keeps is tried again by nothing: the GM is told the values to set by hand in a notice that stays, while a missed write on a sheet not so held is still tried again, in a notice that goes away", async () => {
  const { t, ctl, enc, answerWith } = await heldWithNothingToTry();
  const { fenkaToken, goblinToken } = t.tokens;
  assert.deepEqual(ctl.meta.held, { ulcen: { write: null }, "fenka-tokF": { write: null } }, "the companion's hold: nothing to try again");
  // The goblin joins after: its sheet is not held.
  await ctl.add([goblinToken.uuid]);
  const fenka = fenkaToken.actor;
  const goblin = goblinToken.actor;
  lockPsp(fenka);
  lockPsp(goblin);
  answerWith(() => ({
    round: 2, results: [], events: [], summary: "Round 2: defenses paid.", rolls: [], revision: ++enc.revision,
    updates: [{ uuid: fenka.uuid, update: { "flags.mindscape.revised-2e.psp": 26 } }, { uuid: goblin.uuid, update: { "flags.mindscape.revised-2e.psp": 17 } }],
  }));
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve({ force: true });
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn" && n.text.startsWith("The companion stored the step"));
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent ?? false]), [
    ["The companion stored the step, but writing it to the sheet of Goblin failed (" + goblin.uuid + ": the document is locked). The encounter keeps its own copy: the write is tried again before the next step (unless the sheet was changed meanwhile), and Refresh from sheets takes the sheet as it is.", false],
    ["The companion stored the step, but writing it to the sheet of Fenka failed (" + fenka.uuid + ": the document is locked). The encounter already holds its own copy of them with no write to try again (a write-back the companion could not make, or an answer lost), so nothing tries this one again either: put it right by hand (" + fenka.uuid + ": flags.mindscape.revised-2e.psp = 26), then press Refresh from sheets.", true],
  ]);
  assert.deepEqual(ctl.meta.held["fenka-tokF"], { write: null });
  assert.deepEqual(ctl.meta.held["goblin-tokG"].write.update, { "flags.mindscape.revised-2e.psp": 17 });
});

test("a write Foundry misses on a sheet the companion's hold already keeps, whose document is gone meanwhile, is not said to be tried again: the GM is told, in a notice that stays, the values nothing will write", async () => {
  const { t, ctl, enc, answerWith } = await heldWithNothingToTry();
  const { ulcenToken } = t.tokens;
  const ulcen = ulcenToken.actor;
  lockPsp(ulcen);
  // Its document is no longer found once the write failed (deleted meanwhile).
  const env = t.clients.gm.svc.env;
  const find = env.fromUuid.bind(env);
  env.fromUuid = async (uuid) => (uuid === ulcen.uuid ? null : find(uuid));
  answerWith(() => ({
    round: 2, results: [], events: [], summary: "Round 2: defenses paid.", rolls: [], revision: ++enc.revision,
    updates: [{ uuid: ulcen.uuid, update: { "flags.mindscape.revised-2e.psp": 26 } }],
  }));
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve({ force: true });
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn" && n.text.startsWith("The companion stored the step"));
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent ?? false]), [
    ["The companion stored the step, but writing it to the sheet of Ulcen of Tyr failed (" + ulcen.uuid + ": no document " + ulcen.uuid + "): that token or actor is gone (deleted), so nothing will write these values (" + ulcen.uuid + ": flags.mindscape.revised-2e.psp = 26).", true],
  ]);
  assert.deepEqual(ctl.meta.held.ulcen, { write: null });
});

test("a write Foundry misses on a sheet not held, whose token is deleted as it is written, is not said to be tried again: the GM is told, in a notice that stays, the values nothing will write", async () => {
  const { methods, enc } = encounterMethods();
  let answer = (p) => methods["encounter.resolve"](p);
  const t = makeTable({ methods: { ...methods, "encounter.resolve": (p) => answer(p) } });
  const ctl = t.clients.gm.svc.encounters;
  const { ulcenToken, goblinToken } = t.tokens;
  await ctl.create([ulcenToken.uuid, goblinToken.uuid], "Vault");
  const goblin = goblinToken.actor;
  // The GM deletes the goblin's token while the step writes it: Foundry refuses the write.
  goblin.update = async () => {
    t.world.docs.delete(goblinToken.uuid);
    t.world.docs.delete(goblin.uuid);
    throw new Error("the document was deleted");
  };
  answer = () => ({
    round: 2, results: [], events: [], summary: "Round 2: defenses paid.", rolls: [], revision: ++enc.revision,
    updates: [{ uuid: goblin.uuid, update: { "flags.mindscape.revised-2e.psp": 17 } }],
  });
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve({ force: true });
  assert.deepEqual(warningsSince(t, before), [
    ["The companion stored the step, but writing it to the sheet of Goblin failed (" + goblin.uuid + ": the document was deleted): that token or actor is gone (deleted), so nothing will write these values (" + goblin.uuid + ": flags.mindscape.revised-2e.psp = 17).", true],
  ]);
});

/** The words of a step written to no sheet for `names`, whose token or actor is gone (`UpdateSkippedGone`). */
const skippedWords = (names) => `The companion stored the step, but it was written to no sheet for ${names}: their token or actor is gone (deleted), so nothing will write it for them, nor any later step of this encounter while they stay gone (this is not told again, unless a refresh sees them back before they are deleted again).`;

test("a combatant whose token is deleted while the companion resolves gets no write-back: the GM is told, in a notice that stays, that the step was written to no sheet for it", async () => {
  const { t, ctl } = await resolvingWith((answer) => {
    // The GM deletes Fenka's token while the companion resolves (a dice dialog, the round trip).
    removeDocs(t, t.tokens.fenkaToken);
    return answer;
  });
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  assert.equal(psp(t.actors.ulcen), 32, "the sheet still there is written");
  assert.deepEqual(warningsSince(t, before), [[skippedWords("Fenka"), true]]);
  assert.equal(ctl.meta.held, undefined, "nothing to hold: no sheet to try again");
});

/** `encounter`, with the GM doing `during()` while the companion resolves (a dice dialog, the round trip). */
function whileResolving(during, options = {}) {
  return resolvingWith((answer) => { during(); return answer; }, options);
}

test("a combatant whose token the GM deleted is told once per encounter, not again at each later step that changes it: nothing writes that step or any later one for it", async () => {
  const { t, ctl, gm } = await encounter();
  // The GM removed Fenka's token on purpose, long before; the encounter still has her.
  removeDocs(t, t.tokens.fenkaToken);
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  const first = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(first.map((n) => [n.text, n.options?.permanent ?? false]), [[skippedWords("Fenka"), true]]);
  // The next round she is attacked again: the companion changes her, and nobody is told again.
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  const again = t.clients.gm.notes.given.length;
  const answer = await ctl.resolve();
  assert.ok(updatesOfStep(answer).some((u) => u.uuid.includes("tokF")), "the step changes Fenka again");
  assert.deepEqual(t.clients.gm.notes.given.slice(again).filter((n) => n.kind === "warn"), []);
  assert.deepEqual(ctl.meta.gone, ["fenka-tokF"], "kept with the encounter, so a reload does not tell it again");
});

test("a token the GM brings back (Foundry's undo) after a step was written to no sheet for it is held: the next refresh keeps the encounter's copy and says so, until the GM's Refresh from sheets", async () => {
  const { t, ctl, enc } = await encounter();
  const token = t.tokens.fenkaToken;
  const fenka = token.actor;
  t.world.docs.delete(token.uuid);
  t.world.docs.delete(fenka.uuid);
  await ctl.resolve();
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  assert.equal(psp(fenka), 30, "her sheet missed the step");
  // The GM undoes the deletion: the same token, with her sheet from before the step.
  t.world.docs.set(token.uuid, token);
  t.world.docs.set(fenka.uuid, fenka);
  const before = t.clients.gm.notes.given.length;
  const from = t.daemon.calls.length;
  t.clients.gm.svc.reportRefresh(await ctl.refresh(), { quiet: true });
  assert.ok(!calls(t, from).some((c) => c.params.combatant_id === "fenka-tokF"), "her stale sheet is not taken");
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, owed);
  assert.deepEqual(ctl.meta.held, { "fenka-tokF": { write: null } });
  assert.equal(ctl.meta.gone, undefined, "she is here again: should her token go again, that is told again");
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn").map((n) => n.text), [
    "Kept the encounter's own copy of Fenka: a write-back missed their sheets (Refresh from sheets takes them as they are).",
  ]);
  // The GM's Refresh from sheets takes her sheet as it is, and ends the hold.
  await ctl.refresh({ takeHeld: true });
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 30);
  assert.equal(ctl.meta.held, undefined);
});

test("a linked token deleted while the companion resolves (or moved to another scene) leaves its world actor, which holds its sheet: the step is written there, nothing is told as written to no sheet, and the next refresh reads that sheet", async () => {
  let during = () => {};
  const { t, ctl, gm, enc } = await whileResolving(() => during());
  const ulcen = t.actors.ulcen;
  during = () => deleteToken(t, t.tokens.ulcenToken);
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  assert.equal(psp(ulcen), 32, "the ego whip's cost is on Ulcen's sheet, his world actor");
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn"), []);
  // The GM spends Ulcen's PSPs by hand: the next step starts from his sheet, not the encounter's copy.
  await ulcen.update({ "flags.mindscape.revised-2e.psp": 20 });
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  const from = t.daemon.calls.length;
  await ctl.resolve();
  assert.ok(calls(t, from).some((c) => c.method === "encounter.refresh" && c.params.combatant_id === "ulcen"), "Ulcen's sheet is read again");
  assert.equal(enc.combatants.get("ulcen").profile.psp, 12);
  assert.equal(psp(ulcen), 12);
});

test("a linked token deleted while the companion resolves, its actor's unlinked token another combatant: the step's write for it goes to its world actor, not to that other combatant's sheet", async () => {
  let during = () => {};
  const { t, ctl, gm } = await whileResolving(() => during(), {
    extraTokens: (table) => [table.world.token({ id: "tokF2", name: "Fenka Prime", actor: table.actors.fenka, actorLink: true }).uuid],
  });
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } } });
  // The GM deletes Fenka Prime's token (her world actor stays) while the companion resolves.
  during = () => deleteToken(t, t.world.docs.get("Scene.scene1.Token.tokF2"));
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  assert.equal(psp(t.tokens.fenkaToken.actor), 30, "Fenka's own token, which nothing struck, keeps her PSPs");
  assert.equal(psp(t.actors.fenka), 19, "Fenka Prime's sheet, her world actor, takes the ego whip");
  assert.equal(psp(t.actors.ulcen), 32);
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn"), []);
});

test("a token whose actorLink the GM turned on or off since it was added, deleted while the companion resolves: the GM is told the step was written to no sheet for it", async () => {
  for (const link of [true, false]) {
    let during = () => {};
    const { t, ctl } = await whileResolving(() => during());
    const token = link ? t.tokens.fenkaToken : t.tokens.ulcenToken;
    const name = link ? "Fenka" : "Ulcen of Tyr";
    if (link) token.actor = t.actors.fenka;
    else {
      token.actor = new FakeTokenDocument({ id: token.id, name: token.name, actor: t.actors.ulcen, actorLink: false, world: t.world }).actor;
      token.actor.token = token;
      t.world.docs.set(token.actor.uuid, token.actor);
    }
    token.actorLink = link;
    // The sheet it fights through now differs, so the refresh before the resolve stores it: the companion writes there.
    await token.actor.update({ "flags.mindscape.revised-2e.psp": 28 });
    during = () => deleteToken(t, token);
    const before = t.clients.gm.notes.given.length;
    await ctl.resolve();
    const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
    assert.deepEqual(told.map((n) => [n.text, n.options?.permanent ?? false]), [[skippedWords(name), true]], `actorLink turned ${link ? "on" : "off"}`);
  }
});

test("a combatant whose linked token is deleted while the companion resolves, whose actor another combatant now fights through (actorLink turned on): that write lands on the actor, and nothing is told as written to no sheet", async () => {
  let during = () => {};
  const { t, ctl, gm } = await whileResolving(() => during(), {
    extraTokens: (table) => [table.world.token({ id: "tokF2", name: "Fenka Prime", actor: table.actors.fenka, actorLink: true }).uuid],
  });
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } } });
  const fenkaToken = t.tokens.fenkaToken;
  fenkaToken.actor = t.actors.fenka;
  fenkaToken.actorLink = true;
  during = () => deleteToken(t, t.world.docs.get("Scene.scene1.Token.tokF2"));
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  assert.equal(psp(t.actors.fenka), 19, "the ego whip's damage is on Fenka's sheet, which her token still shows");
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn"), []);
});

test("a step with a write whose token is deleted as it is written and a combatant whose token was deleted before is told in one notice that stays, naming both", async () => {
  let env;
  const { t, ctl } = await resolvingWith((answer) => {
    removeDocs(t, t.tokens.fenkaToken);
    return answer;
  });
  env = t.clients.gm.svc.env;
  const ulcen = t.actors.ulcen;
  // The GM deletes Ulcen as Foundry writes his sheet.
  const find = env.fromUuid.bind(env);
  ulcen.update = async () => {
    env.fromUuid = async (uuid) => (uuid === ulcen.uuid || uuid === t.tokens.ulcenToken.uuid ? null : find(uuid));
    throw new Error("the document was deleted");
  };
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent ?? false]), [[
    `The companion stored the step, but writing it to the sheet of Ulcen of Tyr failed (${ulcen.uuid}: the document was deleted): that token or actor is gone (deleted), so nothing will write these values (${ulcen.uuid}: flags.mindscape.revised-2e.psp = 32). It was written to no sheet for Fenka either: their token or actor is gone (deleted) too, so nothing will write any later step of this encounter for them while they stay gone (this is not told again, unless a refresh sees them back before they are deleted again).`,
    true,
  ]]);
});

test("End pressed while the companion resolves, and a combatant's token deleted then: the step is written to no sheet for it, told once in a notice that stays, and not by End", async () => {
  const { t, ctl, asking, release } = await resolveWaiting();
  const resolving = ctl.resolve();
  await asking;
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  removeDocs(t, t.tokens.fenkaToken);
  release();
  await resolving;
  assert.equal(psp(t.actors.ulcen), 32, "the step the companion stored is written where a sheet is left");
  assert.deepEqual(warningsSince(t, before), [[skippedWords("Fenka"), true]]);
  assert.equal(ctl.afterEnd.size, 0);
});

test("a step the companion could not write back, while a write Foundry missed earlier still waits: the hold it makes tries nothing again, so the error that stays names that write too (its values are known nowhere else)", async () => {
  let fail = false;
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(resolvingWith((answer) => (fail ? notWrittenBack(answer) : answer)));
  assert.ok(ctl.meta.held["fenka-tokF"].write, "Fenka's write waits");
  fail = true;
  await ctl.resolve({ force: true });
  assert.deepEqual(ctl.meta.held["fenka-tokF"], { write: null }, "the companion's hold: nothing is tried again");
  const error = t.clients.gm.notes.given.filter((n) => n.kind === "error");
  assert.equal(error.length, 1);
  assert.equal(error[0].options?.permanent, true);
  assert.match(error[0].text, /^The companion stored the step but could not write it to the sheets \(error e-42; /);
  assert.ok(error[0].text.endsWith(` and press Refresh from sheets. A write-back missed earlier by the sheet of Fenka will not be tried again now: put it right by hand as well (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`), error[0].text);
});

test("a resolve whose answer is lost, while a write Foundry missed earlier still waits: the notice that stays names that write too", async () => {
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
  const gm = t.clients.gm.svc;
  const fetch = gm.env.fetch;
  gm.env.fetch = async (url, init) => {
    if (JSON.parse(init.body).method === "encounter.resolve") throw new TypeError("Failed to fetch");
    return fetch(url, init);
  };
  await assert.rejects(ctl.resolve({ force: true }), DaemonUnreachableError);
  assert.deepEqual(ctl.meta.held["fenka-tokF"], { write: null });
  const lost = t.clients.gm.notes.given.filter((n) => n.kind === "warn" && n.text.startsWith("The companion's answer to the step was lost"));
  assert.equal(lost.length, 1);
  assert.ok(lost[0].text.endsWith(` A write-back missed earlier by the sheet of Fenka will not be tried again now: put it right by hand as well (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`), lost[0].text);
});

test("a write that fails in Foundry is held with its update, tried again before the next step (its notice goes away by itself), and the hold ends once it lands", async () => {
  const { t, ctl, enc } = await encounter();
  const fenka = t.tokens.fenkaToken.actor;
  const update = fenka.update.bind(fenka);
  let refuse = true;
  fenka.update = async (changes, options) => {
    if (refuse && "flags.mindscape.revised-2e.psp" in changes) throw new Error("the document is locked");
    return update(changes, options);
  };
  await ctl.resolve();
  assert.match(t.clients.gm.notes.warn.at(-1), /^The companion stored the step, but writing it to the sheet of Fenka failed \(.*the document is locked\)/);
  assert.equal(t.clients.gm.notes.given.at(-1).options?.permanent ?? false, false);
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);
  assert.notEqual(psp(fenka), enc.combatants.get("fenka-tokF").profile.psp, "the sheet is behind the encounter");

  // Still refused: the next step keeps the encounter's Fenka and takes the others again.
  let from = t.daemon.calls.length;
  await ctl.resolve({ force: true });
  assert.deepEqual(calls(t, from).filter((c) => c.method === "encounter.refresh").map((c) => c.params.combatant_id), ["ulcen", "goblin-tokG"]);
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);

  // The write goes through when tried again: Fenka's sheet catches up and is taken again.
  refuse = false;
  from = t.daemon.calls.length;
  await ctl.resolve({ force: true });
  assert.deepEqual(calls(t, from).filter((c) => c.method === "encounter.refresh").map((c) => c.params.combatant_id), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  assert.equal(ctl.meta.held, undefined);
});

test("ending the encounter while a write Foundry missed still waits tells the GM, in a notice that stays until dismissed, which sheet lacks what: nothing tries it again", async () => {
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
  assert.notEqual(psp(fenka), owed, "the sheet is behind the encounter");
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  assert.equal(ctl.meta.id, undefined);
  const told = t.clients.gm.notes.given.slice(before);
  assert.deepEqual(told.map((n) => [n.kind, n.options?.permanent ?? false]), [["warn", true]]);
  assert.equal(told[0].text, `The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`);
});

/** The words of the notice that stays for Fenka's write left waiting when a macro changed the encounter setting. */
const SET_ELSEWHERE_BEHIND = (writes) => `The encounter stopped being the current one without the encounter panel's End or Create (a macro or a script changed the world's encounter setting), before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${writes}).`;

test("a macro (not the panel's End or Create) ends or replaces the encounter while a write Foundry missed waits in it: the active GM's client tells which sheet lacks what, in a notice that stays, and no other client does", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
    assert.ok(ctl.meta.held?.["fenka-tokF"]?.write, "the write waits");
    const before = t.clients.gm.notes.given.length;
    await setElsewhere(t, next);
    await tick();
    assert.deepEqual(warningsSince(t, before), [[SET_ELSEWHERE_BEHIND(`${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}`), true]], next.id ?? "ended");
    for (const player of [t.clients.p1, t.clients.p2]) assert.deepEqual(player.notes.given, []);
  }
});

test("the panel's End or Create in another GM's browser (the change marked with the encounter it ends or replaces) is told there: the active GM's client does not tell its waiting write again", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl } = await encounter();
    lockPsp(t.tokens.fenkaToken.actor);
    await ctl.resolve();
    const id = ctl.meta.id;
    const before = t.clients.gm.notes.given.length;
    await t.clients.gm.svc.game.settings.set("mindscape", "encounter", next, { mindscape: { told: id } });
    await tick();
    assert.deepEqual(warningsSince(t, before), [], next.id ?? "ended");
  }
});

test("a macro changes the encounter setting while End or Create here is ending the encounter in the active GM's browser: its waiting write is told once, by End or Create, not also as set elsewhere", async () => {
  for (const by of ["end", "create"]) {
    for (const next of setElsewhereCases()) {
      const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
      assert.equal(t.clients.gm.svc.relay.isActiveGM, true);
      const before = t.clients.gm.notes.given.length;
      // A meta write under way (a hold's, a deleted token's record), which End and Create
      // wait for once they took the encounter; the macro's change lands meanwhile.
      const landing = (async () => { await tick(1); await setElsewhere(t, next); })();
      ctl.heldSaves.add(landing);
      landing.finally(() => ctl.heldSaves.delete(landing));
      if (by === "end") await ctl.end();
      else await ctl.create([t.tokens.ulcenToken.uuid], "Next");
      await tick();
      const words = by === "end" ? behindWords(fenka, owed) : replacedBehindWords(fenka, owed);
      assert.deepEqual(warningsSince(t, before), [[words, true]], `${by} ${next.id ?? "ended"}`);
    }
  }
});

test("End whose store of the ended encounter failed (the server refused it) leaves the encounter current: a macro's change of the setting later still tells its waiting write", async () => {
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  settings.set = (ns, key, value, options) => (key === "encounter" && !value?.id ? Promise.reject(new Error("the server refused the write")) : set(ns, key, value, options));
  await assert.rejects(ctl.end(), /the server refused the write/);
  assert.equal(ctl.meta.id, "enc1", "the encounter is still the current one");
  settings.set = set;
  const before = t.clients.gm.notes.given.length;
  await setElsewhere(t, elsewhere());
  await tick();
  assert.deepEqual(warningsSince(t, before), [[SET_ELSEWHERE_BEHIND(`${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}`), true]]);
});

test("a macro changes the encounter setting after a waiting write was put right on the sheet by hand: nothing is told of it", async () => {
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
  assert.deepEqual(Object.keys(ctl.meta.held["fenka-tokF"].write.update), ["flags.mindscape.revised-2e.psp"]);
  // The GM sets the value by hand (the sheet's lock is the module's writes only).
  fenka.flags.mindscape["revised-2e"].psp = owed;
  const before = t.clients.gm.notes.given.length;
  await setElsewhere(t, {});
  await tick();
  assert.deepEqual(warningsSince(t, before), []);
  assert.equal(psp(fenka), owed);
});

test("End tells a waiting write's Foundry deletion (-=key) as a field to remove, not as a value null to set", async () => {
  // The answer is changed once `t` is known: fenkaWriteWaits resolves before it gives `t`.
  const { t, ctl, enc } = await resolvingWith((answer) => {
    for (const u of answer.results.flatMap((r) => r.updates)) if (u.uuid === t.tokens.fenkaToken.actor.uuid) u.update["flags.mindscape.revised-2e.-=stunned"] = null;
    return answer;
  });
  const { fenka, owed } = await fenkaWriteWaits({ t, ctl, enc });
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  const told = t.clients.gm.notes.given.slice(before);
  assert.deepEqual(told.map((n) => n.text), [`The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}, remove flags.mindscape.revised-2e.stunned).`]);
});

test("End leaves out a waiting write whose token was deleted meanwhile (there is no sheet to put right), and says nothing when no other waits", async () => {
  const { t, ctl, enc } = await encounter();
  const { ulcenToken, fenkaToken } = t.tokens;
  lockPsp(t.actors.ulcen);
  lockPsp(fenkaToken.actor);
  await ctl.resolve();
  assert.deepEqual(Object.keys(ctl.meta.held).sort(), ["fenka-tokF", "ulcen"]);
  t.world.docs.delete(fenkaToken.uuid);
  t.world.docs.delete(fenkaToken.actor.uuid);
  const owed = enc.combatants.get("ulcen").profile.psp;
  let before = t.clients.gm.notes.given.length;
  await ctl.end();
  assert.deepEqual(t.clients.gm.notes.given.slice(before).map((n) => n.text), [`The encounter ended before a write-back missed by the sheet of Ulcen of Tyr could be tried again, so nothing will write it now: put it right by hand (${ulcenToken.actor.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`]);

  // Only the deleted one waits: nothing to tell.
  const again = await encounter();
  lockPsp(again.t.tokens.fenkaToken.actor);
  await again.ctl.resolve();
  again.t.world.docs.delete(again.t.tokens.fenkaToken.actor.uuid);
  before = again.t.clients.gm.notes.given.length;
  await again.ctl.end();
  assert.equal(again.t.clients.gm.notes.given.length, before);
});

test("ending an encounter that holds no waiting write says nothing", async () => {
  const { t, ctl } = await encounter();
  await ctl.resolve();
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  assert.equal(t.clients.gm.notes.given.length, before);
});

test("ending an encounter whose holds the companion made (its write-back failed: no write to try again) says nothing more: the error that stays told the GM", async () => {
  const { t, ctl } = await encounter({
    methods: (m) => ({ ...m, "encounter.resolve": (p) => ({ ...m["encounter.resolve"](p), results: [], updates: [], updates_failed: { error_id: "e-42" } }) }),
  });
  await ctl.resolve();
  assert.deepEqual(ctl.meta.held["fenka-tokF"], { write: null });
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  assert.equal(t.clients.gm.notes.given.length, before);
});

test("a double click on End while a write Foundry missed still waits ends the encounter once and tells the GM once", async () => {
  const { t, ctl } = await encounter();
  lockPsp(t.tokens.fenkaToken.actor);
  await ctl.resolve();
  const before = t.clients.gm.notes.given.length;
  const from = t.daemon.calls.length;
  await Promise.all([ctl.end(), ctl.end()]);
  const told = t.clients.gm.notes.given.slice(before);
  assert.deepEqual(told.map((n) => [n.kind, n.options?.permanent ?? false]), [["warn", true]]);
  assert.match(told[0].text, /^The encounter ended before a write-back missed by the sheet of Fenka/);
  assert.deepEqual(calls(t, from).map((c) => c.method), ["encounter.delete"]);
  assert.equal(ctl.meta.id, undefined);
});

test("a new encounter that replaces one whose write Foundry missed still waits (the companion no longer knows it, so the panel offers Create) tells the GM which sheet lacks what, as End does, in words of a replaced encounter (nobody ended it)", async () => {
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter());
  assert.ok(ctl.meta.held?.["fenka-tokF"]?.write, "the write waits");
  const before = t.clients.gm.notes.given.length;
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  assert.equal(ctl.meta.held, undefined, "the new encounter holds nothing");
  assert.deepEqual(warningsSince(t, before), [[`A write-back missed by the sheet of Fenka could not be tried again before a new encounter replaced the one it belonged to, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true]]);
});

test("Create pressed while End is still ending the encounter: End tells its waiting write once, in its own words, and the new encounter is kept (End does not wipe it)", async () => {
  let deleting;
  const deleted = new Promise((resolve) => { deleting = resolve; });
  let askedDelete;
  const deleteAsked = new Promise((resolve) => { askedDelete = resolve; });
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter({
    methods: (m) => ({ ...m, "encounter.delete": async () => { askedDelete(); await deleted; return true; } }),
  }));
  const before = t.clients.gm.notes.given.length;
  const ending = ctl.end();
  await deleteAsked;
  const creating = ctl.create([t.tokens.ulcenToken.uuid], "Next");
  await tick(5);
  deleting();
  await Promise.all([ending, creating]);
  const made = await creating;
  assert.equal(ctl.meta.id, made.id, "the new encounter is the current one");
  assert.notEqual(made.id, "enc1");
  assert.deepEqual(Object.values(ctl.meta.combatants).map((c) => c.name), ["Ulcen of Tyr"]);
  assert.deepEqual(warningsSince(t, before), [[
    `The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`,
    true,
  ]]);
});

test("End pressed while Create is under way: the waiting write is told once, and the new encounter is kept", async () => {
  for (const deleteFirst of [true, false]) {
    let slow = false;
    let answerCreate;
    const created = new Promise((resolve) => { answerCreate = resolve; });
    let answerDelete;
    const deleted = new Promise((resolve) => { answerDelete = resolve; });
    const { t, ctl } = await encounter({
      methods: (m) => ({
        ...m,
        "encounter.create": async (p) => { if (slow) await created; return m["encounter.create"](p); },
        "encounter.delete": async () => { if (slow) await deleted; return true; },
      }),
    });
    lockPsp(t.tokens.fenkaToken.actor);
    await ctl.resolve();
    slow = true;
    const before = t.clients.gm.notes.given.length;
    const creating = ctl.create([t.tokens.ulcenToken.uuid], "Next");
    await tick(5);
    const ending = ctl.end();
    // Either the companion answers End's delete first, or Create's create.
    for (const answer of deleteFirst ? [answerDelete, answerCreate] : [answerCreate, answerDelete]) {
      answer();
      await tick(5);
    }
    await Promise.all([ending, creating]);
    const made = await creating;
    assert.equal(ctl.meta.id, made.id, `the new encounter is kept (${deleteFirst ? "delete" : "create"} answered first)`);
    assert.deepEqual(Object.values(ctl.meta.combatants).map((c) => c.name), ["Ulcen of Tyr"]);
    const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
    assert.equal(told.length, 1, `told once (${deleteFirst ? "delete" : "create"} answered first)`);
    assert.match(told[0].text, /missed by the sheet of Fenka/);
  }
});

test("End pressed while a resolve writes back: a write Foundry misses after End read the encounter is told as End tells those still waiting, and no hold comes back into the ended encounter", async () => {
  const { t, ctl, enc } = await encounter();
  const fenka = t.tokens.fenkaToken.actor;
  const update = fenka.update.bind(fenka);
  let ended = null;
  fenka.update = async (changes, options) => {
    if ("flags.mindscape.revised-2e.psp" in changes) {
      // The GM presses End while Foundry is still writing Fenka's sheet, which then fails.
      ended = ctl.end();
      await ended;
      throw new Error("the document is locked");
    }
    return update(changes, options);
  };
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  await ended;
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  assert.deepEqual(ctl.meta, {}, "nothing stored into the ended encounter");
  assert.equal(psp(t.actors.ulcen), 32, "the other sheets are written");
  assert.deepEqual(warningsSince(t, before), [[`The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true]]);
});

test("End pressed while a resolve writes back a sheet whose token is then deleted: the write it missed is told, in a notice that stays, as one nothing will write, not as one to put right by hand", async () => {
  const { t, ctl, enc } = await encounter();
  const { fenkaToken } = t.tokens;
  const fenka = fenkaToken.actor;
  let ended = null;
  fenka.update = async () => {
    // The GM presses End, then deletes Fenka's token, while Foundry is still writing her sheet.
    ended = ctl.end();
    await ended;
    t.world.docs.delete(fenkaToken.uuid);
    t.world.docs.delete(fenka.uuid);
    throw new Error("the document was deleted");
  };
  const before = t.clients.gm.notes.given.length;
  await ctl.resolve();
  await ended;
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  assert.deepEqual(ctl.meta, {}, "nothing stored into the ended encounter");
  assert.deepEqual(warningsSince(t, before), [
    [`The companion stored the step, but writing it to the sheet of Fenka failed (${fenka.uuid}: the document was deleted): that token or actor is gone (deleted), so nothing will write these values (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true],
  ]);
});

test("End pressed while the companion resolves: the stored step is still written to the sheets, and a write Foundry misses is told as End tells those still waiting", async () => {
  const { t, ctl, enc, release, fenka, resolving } = await resolvingFenkaLocked();
  await ctl.end();
  const before = t.clients.gm.notes.given.length;
  release();
  await resolving;
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  assert.equal(psp(t.actors.ulcen), 32, "the step the companion stored is written");
  assert.deepEqual(ctl.meta, {});
  assert.deepEqual(warningsSince(t, before), [[`The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true]]);
});

test("the current encounter changed elsewhere (another GM's End or Create, a macro) while the companion resolves: a write Foundry misses is told as one to put right by hand, without saying that the encounter ended; for a macro's change, in the words of the notice of the writes it left waiting", async () => {
  for (const macro of [false, true]) {
    for (const next of setElsewhereCases()) {
      const { t, ctl, enc, release, fenka, resolving } = await resolvingFenkaLocked();
      // Another GM's End or Create marks its change with the encounter it ends or replaces.
      await t.clients.gm.svc.game.settings.set("mindscape", "encounter", next, macro ? {} : { mindscape: { told: "enc1" } });
      const before = t.clients.gm.notes.given.length;
      release();
      await resolving;
      await tick();
      const owed = enc.combatants.get("fenka-tokF").profile.psp;
      assert.equal(psp(t.actors.ulcen), 32, "the step the companion stored is written");
      assert.deepEqual(ctl.meta, next, "the current encounter is left as it was set");
      const words = macro
        ? SET_ELSEWHERE_BEHIND(`${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}`)
        : `The encounter was no longer the current one when the step finished (ended or replaced elsewhere: in another browser, by a macro or a script), so a write-back missed by the sheet of Fenka will not be tried again: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`;
      assert.deepEqual(warningsSince(t, before), [[words, true]], `${macro ? "macro" : "End or Create"} ${next.id ?? "ended"}`);
    }
  }
});

test("End pressed while an undo waits for the companion: the cards of the step it took back are still marked undone (they are the ended encounter's)", async () => {
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  let asked;
  const asking = new Promise((resolve) => { asked = resolve; });
  let undone;
  const { t, ctl, enc } = await encounter({
    methods: (m) => ({ ...m, "encounter.undo": async () => { asked(); await answered; enc.revision++; return { revision: enc.revision, undone, updates: [] }; } }),
  });
  await ctl.resolve();
  const [card] = t.clients.gm.ChatMessage.created;
  undone = card.flags.mindscape.revision;
  const undoing = ctl.undo();
  await asking;
  await ctl.end();
  release();
  await undoing;
  assert.deepEqual(card.updates, [{ "flags.mindscape.undone": true }]);
});

test("End pressed while the companion resolves a step it then cannot write back: the error that stays speaks of no copy kept and no Refresh, and does not name again a waiting write End's notice names", async () => {
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  let asked;
  const asking = new Promise((resolve) => { asked = resolve; });
  let slow = false;
  const { t, ctl, enc, fenka, owed } = await fenkaWriteWaits(encounter({
    methods: (m) => ({
      ...m,
      "encounter.resolve": async (p) => {
        const answer = m["encounter.resolve"](p);
        if (!slow) return answer;
        asked();
        await answered;
        return notWrittenBack(answer);
      },
    }),
  }));
  slow = true;
  const resolving = ctl.resolve({ force: true });
  await asking;
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  release();
  await resolving;
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind !== "info");
  assert.deepEqual(told.map((n) => [n.kind, n.text, n.options?.permanent]), [
    ["warn", `The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true],
    ["error", "The companion stored the step but could not write it to the sheets (error e-42; its log has the cause), and the encounter has ended since: nothing will write it now, so the sheets of Ulcen of Tyr, Fenka, Goblin show the state before it until you put them right by hand.", true],
  ]);
  assert.deepEqual(ctl.meta, {});
});

test("a new encounter created while the companion resolves a step it then cannot write back: the error that stays says a new encounter replaced the one it was asked of, not that it ended", async () => {
  const { t, ctl, asking, release } = await resolveWaiting({ edit: notWrittenBack });
  const resolving = ctl.resolve({ force: true });
  await asking;
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  assert.equal(ctl.meta.id, "enc2");
  const before = t.clients.gm.notes.given.length;
  release();
  await resolving;
  assert.equal(ctl.meta.held, undefined, "the new encounter holds nothing for the old one's step");
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
    ["The companion stored the step but could not write it to the sheets (error e-42; its log has the cause), and a new encounter has replaced the one it was asked of since: nothing will write it now, so the sheets of Ulcen of Tyr, Fenka, Goblin show the state before it until you put them right by hand.", true],
  ]);
});

test("the current encounter changed elsewhere (another GM's End or Create, a macro) while the companion resolves a step it then cannot write back: the error that stays says only that the encounter is no longer the current one, not that it ended", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, asking, release } = await resolveWaiting({ edit: notWrittenBack });
    const resolving = ctl.resolve({ force: true });
    await asking;
    await setElsewhere(t, next);
    const before = t.clients.gm.notes.given.length;
    release();
    await resolving;
    assert.deepEqual(ctl.meta, next, "the current encounter is left as it was set: nothing is held in it for the old one's step");
    const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error");
    assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
      ["The companion stored the step but could not write it to the sheets (error e-42; its log has the cause), and the encounter it was asked of is no longer the current one (ended or replaced elsewhere: in another browser, by a macro or a script): nothing will write it now, so the sheets of Ulcen of Tyr, Fenka, Goblin show the state before it until you put them right by hand.", true],
    ], next.id ?? "ended");
  }
});

/**
 * `encounter()` where Fenka's sheet missed the first resolve's write (her PSPs, `owed`)
 * and a second resolve, at her again, waits in the companion until `release()`; End
 * waits in the companion's `encounter.delete` until `deleted()`, when `slowDelete`.
 * `finish()` lets that resolve finish (its write lands on Fenka's sheet when `lands`,
 * else it misses it too) and gives her PSPs after it, as the companion holds them.
 */
async function endWhileResolving({ slowDelete = false } = {}) {
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  let asked;
  const asking = new Promise((resolve) => { asked = resolve; });
  let deleted;
  const deleting = new Promise((resolve) => { deleted = resolve; });
  let askedDelete;
  const deleteAsked = new Promise((resolve) => { askedDelete = resolve; });
  let slow = false;
  const table = await encounter({
    methods: (m) => ({
      ...m,
      "encounter.resolve": async (p) => { const answer = m["encounter.resolve"](p); if (slow) { asked(); await answered; } return answer; },
      "encounter.delete": async () => { askedDelete(); if (slowDelete) await deleting; return true; },
    }),
  });
  const { t, ctl, enc } = table;
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  await t.clients.gm.svc.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  slow = true;
  const resolving = ctl.resolve({ force: true });
  await asking;
  const finish = async ({ lands = false } = {}) => {
    if (lands) lock.on = false;
    release();
    await resolving;
    return enc.combatants.get("fenka-tokF").profile.psp;
  };
  return { ...table, fenka, owed, finish, deleted, deleteAsked };
}

test("a macro changes the encounter setting while a step of it is under way here: its waiting write is told once the step finished, without a field the step wrote, and with the newer value of a field the step missed too", async () => {
  for (const lands of [false, true]) {
    for (const next of setElsewhereCases()) {
      const { t, fenka, owed, finish } = await endWhileResolving();
      const before = t.clients.gm.notes.given.length;
      await setElsewhere(t, next);
      await tick();
      assert.deepEqual(warningsSince(t, before), [], "nothing is told while the step is under way");
      const now = await finish({ lands });
      await tick();
      assert.notEqual(now, owed);
      assert.deepEqual(warningsSince(t, before), lands ? [] : [[SET_ELSEWHERE_BEHIND(`${fenka.uuid}: flags.mindscape.revised-2e.psp = ${now}`), true]], `${lands} ${next.id ?? "ended"}`);
    }
  }
});

test("a macro changes the encounter setting while a step of it is under way here, which then misses a write too: one notice that stays tells the waiting writes and the step's, as set outside End and Create, not a second one saying the encounter was ended or replaced in another browser", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, fenka, finish } = await endWhileResolving();
    const goblin = t.tokens.goblinToken.actor;
    // A write Foundry missed on the goblin's sheet waits too (the step does not touch that sheet).
    const path = "flags.mindscape.revised-2e.psp";
    await ctl.saveMeta({ ...ctl.meta, held: { ...ctl.meta.held, "goblin-tokG": { write: { uuid: goblin.uuid, update: { [path]: 3 }, expect: { [path]: psp(goblin) } } } } });
    const before = t.clients.gm.notes.given.length;
    await setElsewhere(t, next);
    const now = await finish();
    await tick();
    assert.deepEqual(warningsSince(t, before), [[
      `The encounter stopped being the current one without the encounter panel's End or Create (a macro or a script changed the world's encounter setting), before a write-back missed by the sheet of Fenka, Goblin could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: ${path} = ${now}; ${goblin.uuid}: ${path} = 3).`,
      true,
    ]], next.id ?? "ended");
  }
});

test("a macro changes the encounter setting while a step of it is under way here and a step of another encounter too (an earlier one's resolve still waiting for the GM's physical dice): its waiting writes are told once its own step finished, not after the other's", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, fenka, finish } = await endWhileResolving();
    // The other encounter's step, under way until the GM rolls the dice.
    let roll;
    const rolled = new Promise((resolve) => { roll = resolve; });
    const other = ctl.stepOf("enc0", () => rolled);
    const before = t.clients.gm.notes.given.length;
    await setElsewhere(t, next);
    const now = await finish();
    await tick();
    assert.deepEqual(warningsSince(t, before), [[SET_ELSEWHERE_BEHIND(`${fenka.uuid}: flags.mindscape.revised-2e.psp = ${now}`), true]], next.id ?? "ended");
    roll();
    await other;
    await tick();
    assert.equal(warningsSince(t, before).length, 1, "told once");
  }
});

test("End told a waiting write by hand, and a step finishing after End then writes that field: the GM is told, in a notice that stays, that it is written now and needs no hand", async () => {
  const { t, ctl, fenka, owed, finish } = await endWhileResolving();
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  const now = await finish({ lands: true });
  assert.notEqual(now, owed);
  assert.equal(psp(fenka), now, "the step wrote her sheet");
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
    [`The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}).`, true],
    [`After the encounter ended, the step wrote the sheet of Fenka after all (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${now}): these fields are up to date, so leave them as they are rather than setting what the notice of the ended encounter named.`, true],
  ]);
});

test("a step finishing while End is ending the encounter writes a waiting write's field: End leaves it out of what it tells to put right", async () => {
  const { t, ctl, enc, fenka, finish, deleted, deleteAsked } = await endWhileResolving({ slowDelete: true });
  const before = t.clients.gm.notes.given.length;
  const ending = ctl.end();
  await deleteAsked;
  await finish({ lands: true });
  deleted();
  await ending;
  assert.equal(psp(fenka), enc.combatants.get("fenka-tokF").profile.psp);
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn"), [], "nothing to put right, nothing to take back");
});

const behindWords = (fenka, value) => `The encounter ended before a write-back missed by the sheet of Fenka could be tried again, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${value}).`;

test("a step finishing while End is ending misses a waiting write's field too: End tells the step's newer value only, never the older one after it", async () => {
  const { t, ctl, fenka, owed, finish, deleted, deleteAsked } = await endWhileResolving({ slowDelete: true });
  const before = t.clients.gm.notes.given.length;
  const ending = ctl.end();
  await deleteAsked;
  const now = await finish();
  deleted();
  await ending;
  assert.notEqual(now, owed);
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [[behindWords(fenka, now), true]]);
});

test("a step finishing while End is ending misses a write, whose token is then deleted before End tells: End leaves it out (no sheet to put right), as it does a waiting write's", async () => {
  const { t, ctl, enc, fenka, finish, deleted, deleteAsked } = await endWhileResolving({ slowDelete: true });
  const ulcen = t.actors.ulcen;
  lockPsp(ulcen);
  const before = t.clients.gm.notes.given.length;
  const ending = ctl.end();
  await deleteAsked;
  await finish();
  // The step missed Fenka's and Ulcen's writes; the GM deletes Fenka's token before End tells.
  t.world.docs.delete(t.tokens.fenkaToken.uuid);
  t.world.docs.delete(fenka.uuid);
  deleted();
  await ending;
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [[
    `The encounter ended before a write-back missed by the sheet of Ulcen of Tyr could be tried again, so nothing will write it now: put it right by hand (${ulcen.uuid}: flags.mindscape.revised-2e.psp = ${enc.combatants.get("ulcen").profile.psp}).`,
    true,
  ]]);
  assert.equal(ctl.afterEnd.size, 0);
});

test("a waiting write whose token is deleted while End looks up the documents of a step that finished as it was ending is left out too (no sheet to put right)", async () => {
  const { t, ctl, finish, deleted, deleteAsked } = await endWhileResolving({ slowDelete: true });
  const { ulcen } = t.actors;
  const goblin = t.tokens.goblinToken.actor;
  // A write Foundry missed on the goblin's sheet waits too (the step does not touch that sheet).
  const path = "flags.mindscape.revised-2e.psp";
  await ctl.saveMeta({ ...ctl.meta, held: { ...ctl.meta.held, "goblin-tokG": { write: { uuid: goblin.uuid, update: { [path]: 3 }, expect: { [path]: psp(goblin) } } } } });
  lockPsp(ulcen);
  const before = t.clients.gm.notes.given.length;
  const ending = ctl.end();
  await deleteAsked;
  await finish();
  // The GM deletes the goblin's token while End looks up the sheet of Ulcen's missed write.
  const env = t.clients.gm.svc.env;
  const find = env.fromUuid.bind(env);
  env.fromUuid = async (uuid) => {
    if (uuid === ulcen.uuid) {
      t.world.docs.delete(t.tokens.goblinToken.uuid);
      t.world.docs.delete(goblin.uuid);
    }
    return find(uuid);
  };
  deleted();
  await ending;
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.equal(told.length, 1);
  assert.match(told[0].text, /^The encounter ended before a write-back missed by the sheet of (Fenka, Ulcen of Tyr|Ulcen of Tyr, Fenka) could be tried again/);
  assert.doesNotMatch(told[0].text, /Goblin|tokG/);
  assert.equal(ctl.afterEnd.size, 0);
});

test("a step finishing after End misses a field End told to put right: its notice says its value replaces the one End told", async () => {
  const { t, ctl, fenka, owed, finish } = await endWhileResolving();
  const before = t.clients.gm.notes.given.length;
  await ctl.end();
  const now = await finish();
  assert.notEqual(now, owed);
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
    [behindWords(fenka, owed), true],
    [`${behindWords(fenka, now)} These values are newer than what an earlier notice of the ended encounter named for the same fields (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}): set these instead.`, true],
  ]);
});

/** The words of a write Foundry missed that a new encounter (Create, not End) left to make by hand (`ReplacedBehind`). */
const replacedBehindWords = (fenka, value) => `A write-back missed by the sheet of Fenka could not be tried again before a new encounter replaced the one it belonged to, so nothing will write it now: put it right by hand (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${value}).`;

test("a new encounter created while a step of the one it replaced is under way, the step then writing a field the new encounter's notice named: the GM is told it is written, in words of a replaced encounter, not an ended one", async () => {
  const { t, ctl, fenka, owed, finish } = await endWhileResolving();
  const before = t.clients.gm.notes.given.length;
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  const now = await finish({ lands: true });
  assert.notEqual(now, owed);
  assert.equal(psp(fenka), now, "the step wrote her sheet");
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
    [replacedBehindWords(fenka, owed), true],
    [`After a new encounter replaced the one it was asked of, the step wrote the sheet of Fenka after all (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${now}): these fields are up to date, so leave them as they are rather than setting what the notice of the replaced encounter named.`, true],
  ]);
});

test("a new encounter created while a step of the one it replaced is under way, the step then missing a field the new encounter's notice named: its notice says its newer value replaces that one, in words of a replaced encounter", async () => {
  const { t, ctl, fenka, owed, finish } = await endWhileResolving();
  const before = t.clients.gm.notes.given.length;
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  const now = await finish();
  assert.notEqual(now, owed);
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [
    [replacedBehindWords(fenka, owed), true],
    [`${replacedBehindWords(fenka, now)} These values are newer than what an earlier notice of the replaced encounter named for the same fields (${fenka.uuid}: flags.mindscape.revised-2e.psp = ${owed}): set these instead.`, true],
  ]);
});

test("an ended encounter's record of what to make by hand is dropped once End told it and no step asked of it is under way (nothing can reach it then), not before", async () => {
  const { ctl, finish } = await endWhileResolving();
  await ctl.end();
  assert.deepEqual([...ctl.afterEnd.keys()], ["enc1"], "the resolve under way may still change what End told");
  await finish({ lands: true });
  assert.equal(ctl.afterEnd.size, 0);
  assert.equal(ctl.endedIds.size, 0);

  // End with no step under way drops it at once: resolves, undos and declarations that
  // finished, or failed, are no longer counted as under way.
  const again = await encounter();
  lockPsp(again.t.tokens.fenkaToken.actor);
  await again.ctl.resolve();
  await assert.rejects(again.ctl.undo()); // this table's companion has no encounter.undo
  await again.ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  assert.equal(again.ctl.stepsUnderWay.size, 0);
  await again.ctl.end();
  assert.equal(again.ctl.afterEnd.size, 0);
  assert.equal(again.ctl.endedIds.size, 0);
});

test("two steps of an ended encounter finishing after End, the older landing on a field and the newer missing it: the newer's miss is told (the older landing takes nothing off it)", async () => {
  const { t, ctl } = await encounter();
  const fenka = t.tokens.fenkaToken.actor;
  // The encounter the steps were asked of, as it was then (applyStep's `meta`).
  const asked = structuredClone(ctl.meta);
  // Both steps are under way (`stepOf`) when End is pressed, and write back after its notice.
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  const PSP = "flags.mindscape.revised-2e.psp";
  const write = (value) => ctl.applyStep({ updates: [{ uuid: fenka.uuid, update: { [PSP]: value } }] }, { meta: asked });
  const older = ctl.stepOf(asked.id, async () => { await answered; return write(8); });
  const newer = ctl.stepOf(asked.id, async () => { await older; lockPsp(fenka); return write(5); });
  await ctl.end();
  const before = t.clients.gm.notes.given.length;
  answer();
  await newer;
  assert.equal(psp(fenka), 8);
  const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(told.map((n) => [n.text, n.options?.permanent]), [[behindWords(fenka, 5), true]]);
});

/**
 * `encounter()` with an undo in the fake companion that restores the profiles from before
 * the last resolve and answers their write-back, as API.md's encounter.undo does.
 */
async function encounterWithUndo({ extraTokens, slowRefreshOf } = {}) {
  const { methods, enc } = encounterMethods();
  let snapshot = null;
  const resolve = methods["encounter.resolve"];
  methods["encounter.resolve"] = (p) => {
    snapshot = new Map([...enc.combatants].map(([cid, c]) => [cid, structuredClone(c.profile)]));
    return resolve(p);
  };
  methods["encounter.undo"] = () => {
    const updates = [];
    for (const [cid, profile] of snapshot) {
      const c = enc.combatants.get(cid);
      if (JSON.stringify(c.profile) === JSON.stringify(profile)) continue;
      c.profile = profile;
      updates.push({ uuid: actorUuidOfRef(c.ref), update: { "flags.mindscape.revised-2e.psp": profile.psp } });
    }
    enc.revision++;
    return { revision: enc.revision, undone: enc.revision - 1, updates };
  };
  const refresh = methods["encounter.refresh"];
  const slow = { on: false };
  methods["encounter.refresh"] = async (p) => { if (slow.on && p.combatant_id === slowRefreshOf) await tick(20); return refresh(p); };
  const t = makeTable({ methods });
  const gm = t.clients.gm.svc;
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  await gm.encounters.create([ulcenToken.uuid, fenkaToken.uuid, goblinToken.uuid, ...(extraTokens?.(t) ?? [])], "Vault");
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  return { t, gm, ctl: gm.encounters, enc, slow };
}

/** Make `actor` refuse writes of its PSPs while `lock.on`. */
function lockPsp(actor) {
  const update = actor.update.bind(actor);
  const lock = { on: true };
  actor.update = async (changes, options) => {
    if (lock.on && "flags.mindscape.revised-2e.psp" in changes) throw new Error("the document is locked");
    return update(changes, options);
  };
  return lock;
}

/**
 * The encounter `opened` (a promise of `encounter()` or a variant's `{ t, ctl, enc }`),
 * resolved once with Fenka's sheet refusing its PSPs: her write waits, held. Gives the
 * encounter with `fenka` (her actor) and `owed`, the PSPs the companion has and her sheet lacks.
 */
async function fenkaWriteWaits(opened) {
  const ready = await opened;
  const fenka = ready.t.tokens.fenkaToken.actor;
  lockPsp(fenka);
  await ready.ctl.resolve();
  return { ...ready, fenka, owed: ready.enc.combatants.get("fenka-tokF").profile.psp };
}

test("an undo that lands on a held sheet ends the hold: the failed write is not tried again over it", async () => {
  const { t, ctl, enc } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  assert.equal(psp(fenka), 30);
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 19);
  lock.on = false;
  await ctl.undo();
  assert.equal(psp(fenka), 30);
  assert.equal(ctl.meta.held, undefined, "the undo wrote every field the failed write held");
  await ctl.refresh();
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 30, "the undo stays undone");
  assert.equal(psp(fenka), 30);
});

test("a macro changes the encounter setting while an undo of it is under way here, the undo then writing a waiting write's field back to what the sheet showed when that write missed: nothing is told of it (the undo's value is the one to keep)", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, gm } = await encounterWithUndo();
    const fenka = t.tokens.fenkaToken.actor;
    const lock = lockPsp(fenka);
    await ctl.resolve();
    assert.equal(psp(fenka), 30);
    assert.deepEqual(ctl.meta.held["fenka-tokF"].write.expect, { "flags.mindscape.revised-2e.psp": 30 });
    lock.on = false;
    // The companion takes the undo, and answers once the macro's change landed.
    const rpc = gm.rpc.bind(gm);
    let release;
    const released = new Promise((resolve) => { release = resolve; });
    let asked;
    const asking = new Promise((resolve) => { asked = resolve; });
    gm.rpc = async (method, params) => {
      if (method === "encounter.undo") { asked(); await released; }
      return rpc(method, params);
    };
    const undoing = ctl.undo();
    await asking;
    const before = t.clients.gm.notes.given.length;
    await setElsewhere(t, next);
    release();
    await undoing;
    await tick();
    assert.equal(psp(fenka), 30, "the undo wrote Fenka's PSPs back");
    assert.deepEqual(warningsSince(t, before), [], next.id ?? "ended");
  }
});

test("a later write that lands on some of a held write's fields leaves the others waiting, and they land when tried again", async () => {
  const C = "flags.mindscape.revised-2e.conditions";
  const { t, ctl, enc } = await encounter({
    methods: (m) => ({
      ...m,
      "encounter.resolve": (p) => {
        const answer = m["encounter.resolve"](p);
        for (const r of answer.results) r.updates = [];
        const fenka = enc.combatants.get("fenka-tokF").profile.psp;
        return { ...answer, updates: [{ uuid: t.tokens.fenkaToken.actor.uuid, update: { "flags.mindscape.revised-2e.psp": fenka, [C]: ["stunned"] } }] };
      },
      "encounter.undo": () => ({ revision: ++enc.revision, undone: enc.revision - 1, updates: [{ uuid: t.tokens.fenkaToken.actor.uuid, update: { [C]: [] } }] }),
    }),
  });
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  await ctl.undo();
  assert.deepEqual(ctl.meta.held["fenka-tokF"].write.update, { "flags.mindscape.revised-2e.psp": enc.combatants.get("fenka-tokF").profile.psp });
  lock.on = false;
  await ctl.refresh();
  assert.equal(psp(fenka), enc.combatants.get("fenka-tokF").profile.psp);
  assert.deepEqual(fenka.flags.mindscape["revised-2e"].conditions, []);
  assert.equal(ctl.meta.held, undefined);
});

/**
 * `encounter()` whose resolves also write Ulcen's `mind` object, the first as the
 * companion writes a key dropped from it ({a: 1} and a deletion of b), the later ones
 * with b again ({a: 1, b: 3}); Ulcen's sheet refuses any write whose keys match `locked`.
 */
async function encounterWritingMind() {
  const M = "flags.mindscape.revised-2e.mind";
  let n = 0;
  const table = await resolvingWith((answer) => {
    const update = ++n === 1 ? { [M]: { a: 1 }, [`${M}.-=b`]: null } : { [M]: { a: 1, b: 3 } };
    answer.updates.push({ uuid: table.t.actors.ulcen.uuid, update });
    return answer;
  });
  const ulcen = table.t.actors.ulcen;
  await ulcen.update({ [M]: { a: 0, b: 2 } });
  const update = ulcen.update.bind(ulcen);
  const lock = { locked: null };
  ulcen.update = async (changes, options) => {
    if (lock.locked && Object.keys(changes).some((k) => lock.locked.test(k))) throw new Error("the document is locked");
    return update(changes, options);
  };
  return { ...table, ulcen, lock, mind: () => ulcen.flags.mindscape["revised-2e"].mind };
}

test("a later write of an object that lands takes off a waiting deletion of one of its keys (-=b): tried again, it would delete the b the later write set", async () => {
  const { ctl, ulcen, lock, mind } = await encounterWritingMind();
  lock.locked = /-=b/;
  await ctl.resolve({ force: true });
  assert.ok("flags.mindscape.revised-2e.mind.-=b" in ctl.meta.held.ulcen.write.update);
  // The next step: the retry still fails, its own write of mind (with b) lands.
  await ctl.resolve({ force: true });
  assert.deepEqual(mind(), { a: 1, b: 3 });
  assert.deepEqual(Object.keys(ctl.meta.held?.ulcen?.write?.update ?? {}).filter((k) => k.includes("revised-2e.mind")), [], "nothing of mind waits");
  lock.locked = null;
  await ctl.refresh();
  assert.deepEqual(mind(), { a: 1, b: 3 });
  assert.equal(psp(ulcen), 32, "the rest of the waiting write lands");
});

test("a later write that misses too waits without the older entries it supersedes: Foundry applies keys in order, so an older -=b kept after the later object would delete its b", async () => {
  const { ctl, lock, mind } = await encounterWritingMind();
  lock.locked = /revised-2e\.mind/;
  await ctl.resolve({ force: true });
  await ctl.resolve({ force: true });
  assert.deepEqual(ctl.meta.held.ulcen.write.update["flags.mindscape.revised-2e.mind"], { a: 1, b: 3 });
  assert.ok(!("flags.mindscape.revised-2e.mind.-=b" in ctl.meta.held.ulcen.write.update));
  lock.locked = null;
  await ctl.refresh();
  assert.deepEqual(mind(), { a: 1, b: 3 });
  assert.equal(ctl.meta.held, undefined);
});

test("a sheet the GM put right by hand is not written over: Refresh from sheets takes it, and an automatic refresh leaves it alone", async () => {
  const { t, ctl, enc } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  lock.on = false;
  // From the card: 19, less 4 spent on a power since.
  await fenka.update({ "flags.mindscape.revised-2e.psp": 15 });
  await ctl.refresh();
  assert.equal(psp(fenka), 15, "the automatic refresh does not write the old value over the GM's");
  assert.match(t.clients.gm.notes.warn.at(-1), /^The sheet of Fenka changed since a write-back missed it/);
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);
  await makeApi(t.clients.gm.svc).refreshEncounter();
  assert.equal(psp(fenka), 15);
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 15);
  assert.equal(ctl.meta.held, undefined);
});

test("a sheet the GM put right by hand with the very values the write held lets the write land: the hold ends", async () => {
  const { t, ctl, enc } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  const waiting = ctl.meta.held["fenka-tokF"].write;
  assert.equal(waiting.update["flags.mindscape.revised-2e.psp"], 19);
  lock.on = false;
  // From the card: the GM types 19, what the failed write held.
  await fenka.update({ "flags.mindscape.revised-2e.psp": 19 });
  const warned = t.clients.gm.notes.warn.length;
  await ctl.refresh();
  assert.equal(psp(fenka), 19);
  assert.equal(ctl.meta.held, undefined, "the write landed: nothing is held");
  assert.equal(t.clients.gm.notes.warn.length, warned, "no warning that the sheet changed");
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 19);
});

test("a refresh stopped by a refused sheet keeps what it did before: a held write that landed is held no more", async () => {
  const { t, ctl } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  lock.on = false;
  await t.tokens.goblinToken.actor.update({ "flags.mindscape.revised-2e.psp": -1 });
  await assert.rejects(ctl.refresh(), RefreshRefusedError);
  assert.equal(psp(fenka), 19);
  assert.equal(ctl.meta.held, undefined);
});

test("a refresh tells the GM what the companion warned of a sheet, by the token's name as it is now", async () => {
  const { t, ctl } = await encounter({
    methods: (m) => ({ ...m, "encounter.refresh": (p) => ({ ...m["encounter.refresh"](p), warnings: p.combatant_id === "goblin-tokG" ? ["read as 0"] : [] }) }),
  });
  t.tokens.goblinToken.name = "Goblin chief";
  const refreshed = await ctl.refresh();
  assert.equal(refreshed.at(-1).name, "Goblin chief");
  assert.match(t.clients.gm.notes.warn.join("\n"), /Goblin chief: read as 0/);
});

test("an undo whose write misses a held sheet too waits with the undo's values: they are what lands; the GM is told it was the undo's write", async () => {
  const { t, ctl, enc } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  assert.match(t.clients.gm.notes.warn.at(-1), /^The companion stored the step, but writing it to the sheet of Fenka failed/);
  await ctl.undo();
  assert.match(t.clients.gm.notes.warn.at(-1), /^The companion stored the undo, but writing it to the sheet of Fenka failed/);
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);
  lock.on = false;
  await ctl.refresh();
  assert.equal(psp(fenka), 30, "the undo's 30, not the step's 19 it took back");
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 30);
  assert.equal(ctl.meta.held, undefined);
});

test("a held sheet the GM changed by hand is not written over when a later write misses it too: it waits for the GM", async () => {
  const { t, ctl } = await encounterWithUndo();
  const fenka = t.tokens.fenkaToken.actor;
  const lock = lockPsp(fenka);
  await ctl.resolve();
  lock.on = false;
  await fenka.update({ "flags.mindscape.revised-2e.psp": 25 });
  lock.on = true;
  await ctl.undo();
  lock.on = false;
  await ctl.refresh();
  assert.equal(psp(fenka), 25, "the GM's figure stays");
  assert.match(t.clients.gm.notes.warn.at(-1), /^The sheet of Fenka changed since a write-back missed it/);
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);
});

test("a failed write to a world actor holds that actor's combatant only, not an unlinked token made from it", async () => {
  const { t, ctl, gm } = await encounterWithUndo({
    extraTokens: (table) => [table.world.token({ id: "tokF2", name: "Fenka Prime", actor: table.actors.fenka, actorLink: true }).uuid],
  });
  lockPsp(t.actors.fenka);
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka" } } });
  await ctl.resolve();
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka"]);
});

test("an undo waits for a refresh under way, so its hold is not lost when the refresh ends", async () => {
  const { t, ctl, enc, slow } = await encounterWithUndo({ slowRefreshOf: "ulcen" });
  await ctl.resolve();
  const fenka = t.tokens.fenkaToken.actor;
  assert.equal(psp(fenka), 19);
  lockPsp(fenka);
  slow.on = true;
  const running = ctl.refresh();
  await tick(2);
  await Promise.all([running, ctl.undo()]);
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 30, "the undo is kept in the encounter");
  assert.deepEqual(Object.keys(ctl.meta.held), ["fenka-tokF"]);
  await ctl.refresh();
  assert.equal(enc.combatants.get("fenka-tokF").profile.psp, 30, "the held sheet (19) is not taken back");
});

test("a held combatant whose token is deleted is let go of", async () => {
  const { t, ctl } = await encounter({
    methods: (m) => ({ ...m, "encounter.resolve": (p) => ({ ...m["encounter.resolve"](p), results: [], updates: [], updates_failed: { error_id: "e-7" } }) }),
  });
  await ctl.resolve();
  assert.equal(Object.keys(ctl.meta.held).length, 3);
  t.world.docs.delete(t.tokens.goblinToken.uuid);
  t.world.docs.delete(t.tokens.goblinToken.actor.uuid);
  await ctl.refresh();
  assert.deepEqual(Object.keys(ctl.meta.held), ["ulcen", "fenka-tokF"]);
});

test("a resolve whose answer is lost after the sheets were taken holds everyone, in a notice that stays until dismissed: the companion may have stored it", async () => {
  const { t, ctl } = await encounter();
  const gm = t.clients.gm.svc;
  const fetch = gm.env.fetch;
  // The refreshes reach the companion; the resolve's connection breaks.
  gm.env.fetch = async (url, init) => {
    if (JSON.parse(init.body).method === "encounter.resolve") throw new TypeError("Failed to fetch");
    return fetch(url, init);
  };
  await assert.rejects(ctl.resolve(), (e) => e instanceof DaemonUnreachableError && e.data.cause === "Failed to fetch");
  assert.deepEqual(Object.keys(ctl.meta.held), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^The companion's answer to the step was lost: it may have stored it all the same.*look at the Log/);
  assert.deepEqual(t.clients.gm.notes.given.filter((n) => n.kind === "warn").map((n) => n.options), [{ permanent: true }]);
});

test("a resolve answered by something between instead of the companion (an HTTP error) holds everyone too: the companion may have stored it", async () => {
  const { t, ctl } = await encounter();
  const gm = t.clients.gm.svc;
  const fetch = gm.env.fetch;
  gm.env.fetch = async (url, init) => (JSON.parse(init.body).method === "encounter.resolve" ? new Response("Bad gateway", { status: 502 }) : fetch(url, init));
  await assert.rejects(ctl.resolve(), DaemonHttpError);
  assert.deepEqual(Object.keys(ctl.meta.held), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  assert.match(t.clients.gm.notes.warn.at(-1), /^The companion's answer to the step was lost/);
});

/** Make the GM's `encounter.resolve` calls hang until `fail()`, then fail as a broken connection. */
function losingResolve(t) {
  const gm = t.clients.gm.svc;
  const fetch = gm.env.fetch;
  let fail;
  const failing = new Promise((resolve) => { fail = resolve; });
  let asked;
  const asking = new Promise((resolve) => { asked = resolve; });
  gm.env.fetch = async (url, init) => {
    if (JSON.parse(init.body).method === "encounter.resolve") { asked(); await failing; throw new TypeError("Failed to fetch"); }
    return fetch(url, init);
  };
  return { asking, fail };
}

const UNCERTAIN_REPLACED = (names) => `The companion's answer to the step was lost after a new encounter replaced the one it was asked of: it may have stored it all the same, but what it did is not known here, and the panel no longer shows that encounter's Log. The sheets of ${names} may lack it, and nothing will write it now: check them by hand if it matters.`;
const UNCERTAIN_ELSEWHERE = (names) => `The companion's answer to the step was lost, and the encounter it was asked of is no longer the current one (ended or replaced elsewhere: in another browser, by a macro or a script): it may have stored it all the same, but what it did is not known here, and the panel no longer shows that encounter's Log. The sheets of ${names} may lack it, and nothing will write it now: check them by hand if it matters.`;
const UNCERTAIN_ENDED = (names) => `The companion's answer to the step was lost after the encounter ended: it may have stored it all the same, but what it did is not known here, and the panel no longer shows that encounter's Log. The sheets of ${names} may lack it, and nothing will write it now: check them by hand if it matters.`;

test("a resolve whose answer is lost after a new encounter replaced its own holds nothing in the new one, and the notice that stays says so (not that the encounter ended), naming the old one's combatants and that nothing will write the step", async () => {
  const { t, ctl } = await encounter();
  const { asking, fail } = losingResolve(t);
  const resolving = ctl.resolve({ force: true });
  await asking;
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  assert.equal(ctl.meta.id, "enc2");
  fail();
  await assert.rejects(resolving, DaemonUnreachableError);
  assert.equal(ctl.meta.held, undefined, "the new encounter holds nothing for the old one's step");
  const lost = t.clients.gm.notes.given.filter((n) => n.text.startsWith("The companion's answer"));
  assert.deepEqual(lost.map((n) => [n.kind, n.text, n.options?.permanent]), [["warn", UNCERTAIN_REPLACED("Ulcen of Tyr, Fenka, Goblin"), true]]);
});

test("a resolve whose answer is lost after End and a new encounter created since: the notice says the encounter ended, as it did (End, not the new encounter, put it out)", async () => {
  const { t, ctl } = await encounter();
  const { asking, fail } = losingResolve(t);
  const resolving = ctl.resolve({ force: true });
  await asking;
  await ctl.end();
  await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  assert.equal(ctl.meta.id, "enc2");
  fail();
  await assert.rejects(resolving, DaemonUnreachableError);
  const lost = t.clients.gm.notes.given.filter((n) => n.text.startsWith("The companion's answer"));
  assert.deepEqual(lost.map((n) => n.text), [UNCERTAIN_ENDED("Ulcen of Tyr, Fenka, Goblin")]);
});

test("a resolve whose answer is lost after End: the notice that stays names the ended encounter's combatants and says nothing will write the step (no Log, no Refresh to point to)", async () => {
  const { t, ctl } = await encounter();
  const { asking, fail } = losingResolve(t);
  const resolving = ctl.resolve({ force: true });
  await asking;
  await ctl.end();
  fail();
  await assert.rejects(resolving, DaemonUnreachableError);
  assert.deepEqual(ctl.meta, {});
  const lost = t.clients.gm.notes.given.filter((n) => n.text.startsWith("The companion's answer"));
  assert.deepEqual(lost.map((n) => n.text), [UNCERTAIN_ENDED("Ulcen of Tyr, Fenka, Goblin")]);
});

test("a resolve whose answer is lost after the current encounter changed elsewhere (another GM's End or Create, a macro): the notice that stays says only that the encounter is no longer the current one, not that it ended, and nothing is held in the one set", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl } = await encounter();
    const { asking, fail } = losingResolve(t);
    const resolving = ctl.resolve({ force: true });
    await asking;
    await setElsewhere(t, next);
    fail();
    await assert.rejects(resolving, DaemonUnreachableError);
    assert.deepEqual(ctl.meta, next, "the current encounter is left as it was set");
    const lost = t.clients.gm.notes.given.filter((n) => n.text.startsWith("The companion's answer"));
    assert.deepEqual(lost.map((n) => [n.kind, n.text, n.options?.permanent]), [["warn", UNCERTAIN_ELSEWHERE("Ulcen of Tyr, Fenka, Goblin"), true]], next.id ?? "ended");
  }
});

test("a resolve whose answer is lost while End is ending the encounter: a write Foundry missed earlier is told once, by End, not also as replaced", async () => {
  let deleted;
  const deleting = new Promise((resolve) => { deleted = resolve; });
  let asked;
  const askedDelete = new Promise((resolve) => { asked = resolve; });
  const { t, ctl } = await encounter({ methods: (m) => ({ ...m, "encounter.delete": async () => { asked(); await deleting; return true; } }) });
  lockPsp(t.tokens.fenkaToken.actor);
  await ctl.resolve();
  const { asking, fail } = losingResolve(t);
  const resolving = ctl.resolve({ force: true });
  await asking;
  const ending = ctl.end();
  await askedDelete;
  fail();
  await assert.rejects(resolving, DaemonUnreachableError);
  deleted();
  await ending;
  const texts = t.clients.gm.notes.given.map((n) => n.text);
  assert.equal(texts.filter((x) => x.includes("flags.mindscape.revised-2e.psp =")).length, 1, texts.join("\n"));
  assert.ok(texts.some((x) => x.startsWith("The encounter ended before a write-back missed by the sheet of Fenka")));
  assert.ok(texts.includes(UNCERTAIN_ENDED("Ulcen of Tyr, Fenka, Goblin")));
});

test("an undo with the companion not running holds nobody: nothing can have been undone", async () => {
  const { t, ctl } = await encounter();
  const gm = t.clients.gm.svc;
  gm.env.fetch = async () => { throw new TypeError("Failed to fetch"); };
  await assert.rejects(ctl.undo(), (e) => e instanceof DaemonUnreachableError && e.data.cause === "Failed to fetch");
  assert.equal(ctl.meta.held, undefined);
});

test("a token made unlinked since it was added, then deleted (its world actor stays): the next refresh neither holds it as brought back nor reads its world actor, and a later step is not told again", async () => {
  let during = () => {};
  const { t, ctl, gm, enc } = await whileResolving(() => during());
  const token = t.tokens.ulcenToken;
  token.actor = new FakeTokenDocument({ id: token.id, name: token.name, actor: t.actors.ulcen, actorLink: false, world: t.world }).actor;
  token.actor.token = token;
  t.world.docs.set(token.actor.uuid, token.actor);
  token.actorLink = false;
  await token.actor.update({ "flags.mindscape.revised-2e.psp": 28 });
  during = () => { t.world.docs.delete(token.uuid); t.world.docs.delete(token.actor.uuid); };
  await ctl.resolve();
  during = () => {};
  assert.deepEqual(ctl.meta.gone, ["ulcen"]);
  const owed = enc.combatants.get("ulcen").profile.psp;
  const before = t.clients.gm.notes.given.length;
  const from = t.daemon.calls.length;
  t.clients.gm.svc.reportRefresh(await ctl.refresh(), { quiet: true });
  assert.ok(!calls(t, from).some((c) => c.params.combatant_id === "ulcen"), "his world actor, the base of his own copy, is not taken as his sheet");
  assert.equal(enc.combatants.get("ulcen").profile.psp, owed);
  assert.equal(ctl.meta.held, undefined, "his token is not back: nothing to hold");
  assert.deepEqual(ctl.meta.gone, ["ulcen"], "still gone: not told again");
  // The next round Ulcen attacks again: the step changes him, and nobody is told again.
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  await ctl.resolve();
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn").map((n) => n.text), []);
  assert.equal(psp(t.actors.ulcen), 40, "the base actor of his deleted copy is not written");
});

test("a linked token deleted (its world actor stays): Ask for choices asks for it as for the others, through that actor, rather than failing for the whole table", async () => {
  const { t, ctl } = await encounter({
    dialogs: {
      p1: { encounterChoiceDialog: { attackMode: "ego-whip", target: "goblin-tokG", multiplier: "1", range: "short" } },
      p2: { encounterChoiceDialog: { defenseMode: "mind-blank" } },
      gm: { encounterChoiceDialog: { defenseMode: "" } },
    },
  });
  await t.clients.gm.svc.rpc("encounter.resolve", { id: "enc1", force: true }); // a new round: everyone chooses
  await deleteToken(t, t.tokens.ulcenToken);
  await ctl.collectChoices();
  assert.ok(t.clients.p1.dialogs.seen.some((s) => s.kind === "encounterChoiceDialog"), "Ulcen's owner is asked, as his world actor's");
  assert.ok(t.daemon.calls.some((c) => c.method === "encounter.declare" && c.params.combatant_id === "ulcen"));
});

test("a linked token deleted (its world actor stays) is taken again from that actor under its token's name, so the companion does not rename the combatant after its actor", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  ulcenToken.name = "Skum";
  await ctl.create([ulcenToken.uuid, fenkaToken.uuid, goblinToken.uuid], "Vault");
  await deleteToken(t, ulcenToken);
  const from = t.daemon.calls.length;
  await ctl.refresh();
  const sent = calls(t, from).find((c) => c.method === "encounter.refresh" && c.params.combatant_id === "ulcen").params.combatant;
  assert.equal(sent.data.actor._id, "ulcen", "his world actor's sheet");
  assert.deepEqual(sent.data.token, { uuid: ulcenToken.uuid, actorLink: true, name: "Skum" }, "as his linked token named him (the adapter names a combatant by its token)");
});

test("End and Create pressed together while Foundry stores the encounter setting (a round trip to the server): the waiting write is told once, and the new encounter is kept", async () => {
  // Foundry's game.settings.set changes the value once the server answered: the meta read
  // meanwhile is the one before. First Create's new meta is slow (End pressed once
  // encounter.create answered), then End's {} (Create's encounter.create answered while
  // End stored it).
  for (const slow of ["create", "end"]) {
    let answerCreate;
    const created = new Promise((resolve) => { answerCreate = resolve; });
    let holdCreate = false;
    const { t, ctl } = await encounter({
      methods: (m) => ({ ...m, "encounter.create": async (p) => { if (holdCreate) await created; return m["encounter.create"](p); } }),
    });
    lockPsp(t.tokens.fenkaToken.actor);
    await ctl.resolve();
    const settings = t.clients.gm.svc.game.settings;
    const set = settings.set.bind(settings);
    // Stored in the order asked, each after a round trip, as the server does.
    let last = Promise.resolve();
    settings.set = (ns, key, value, options) => {
      const delayed = key === "encounter" && (slow === "create" ? value?.name === "Next" : !value?.id);
      const done = last.then(async () => { if (delayed) await tick(20); return set(ns, key, value, options); });
      last = done.catch(() => null);
      return done;
    };
    const before = t.clients.gm.notes.given.length;
    let creating;
    let ending;
    if (slow === "create") {
      creating = ctl.create([t.tokens.ulcenToken.uuid], "Next");
      await tick(5);
      ending = ctl.end();
    } else {
      holdCreate = true;
      creating = ctl.create([t.tokens.ulcenToken.uuid], "Next");
      await tick(5);
      ending = ctl.end();
      await tick(5);
      answerCreate();
    }
    await Promise.all([ending, creating]);
    const made = await creating;
    assert.equal(ctl.meta.id, made.id, `the new encounter is kept (${slow}'s meta slow)`);
    const told = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
    assert.equal(told.length, 1, `told once (${slow}'s meta slow): ${told.map((n) => n.text).join(" | ")}`);
  }
});

/** Ulcen's token made unlinked since it was added (its own copy holds 28 PSPs; his world actor, the base of copies, 40). */
function unlinkUlcen(t) {
  const token = t.tokens.ulcenToken;
  token.actor = new FakeTokenDocument({ id: token.id, name: token.name, actor: t.actors.ulcen, actorLink: false, world: t.world }).actor;
  token.actor.token = token;
  t.world.docs.set(token.actor.uuid, token.actor);
  token.actorLink = false;
  return token.actor.update({ "flags.mindscape.revised-2e.psp": 28 });
}

test("a token made unlinked since it was added, deleted between steps (told to the module or not): its world actor is not taken as its sheet, nothing is written there, and the next step that changes it is told as written to no sheet", async () => {
  for (const told of [true, false]) {
    const { t, ctl, gm, enc } = await encounter();
    await unlinkUlcen(t);
    await ctl.refresh();
    assert.equal(enc.combatants.get("ulcen").profile.psp, 28, "his own copy's sheet");
    // The GM deletes his token between steps; with no GM connected, no client hears of it.
    if (told) await deleteToken(t, t.tokens.ulcenToken);
    else { t.world.docs.delete(t.tokens.ulcenToken.actor.uuid); t.world.docs.delete(t.tokens.ulcenToken.uuid); }
    const from = t.daemon.calls.length;
    await ctl.refresh();
    assert.ok(!calls(t, from).some((c) => c.params.combatant_id === "ulcen"), `his world actor's 40 PSPs are not taken as his (${told ? "told" : "not told"})`);
    assert.equal(enc.combatants.get("ulcen").profile.psp, 28);
    await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
    const before = t.clients.gm.notes.given.length;
    await ctl.resolve();
    assert.equal(psp(t.actors.ulcen), 40, "the base of unlinked copies is never written");
    const warned = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
    assert.deepEqual(warned.map((n) => [n.text, n.options?.permanent ?? false]), [[skippedWords("Ulcen of Tyr"), true]]);
  }
});

test("a linked token deleted when no GM's client heard of it is taken as gone: its world actor is neither read nor written, and the GM is told", async () => {
  const { t, ctl, gm } = await encounter();
  t.world.docs.delete(t.tokens.ulcenToken.uuid);
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "ulcen", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } } });
  const before = t.clients.gm.notes.given.length;
  const from = t.daemon.calls.length;
  await ctl.resolve();
  assert.ok(!calls(t, from).some((c) => c.params.combatant_id === "ulcen"));
  assert.equal(psp(t.actors.ulcen), 40);
  const warned = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "warn");
  assert.deepEqual(warned.map((n) => n.text), [skippedWords("Ulcen of Tyr")]);
});

test("a linked token's deletion is stored with the encounter by the active GM's client only, and lasts through a reload: its world actor is still its sheet then", async () => {
  const { t, ctl } = await encounter();
  const token = t.tokens.ulcenToken;
  t.world.docs.delete(token.uuid);
  assert.equal(hookTable(t.clients.p1.svc).deleteToken(token), null, "a player's client stores nothing");
  await hookTable(t.clients.gm.svc).deleteToken(token);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true);
  // A reload: a new controller, which heard of no deletion itself.
  const fresh = new EncounterController(t.clients.gm.svc);
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.psp": 25 });
  const refreshed = await fresh.refresh();
  assert.deepEqual(refreshed.find((r) => r.combatantId === "ulcen").changed, ["psp"], "read from his world actor");
  // Brought back (Foundry's undo), made unlinked, deleted again: the record follows.
  t.world.docs.set(token.uuid, token);
  await unlinkUlcen(t);
  await deleteToken(t, token);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, undefined);
});

/**
 * Foundry makes token document `token` again under its old id (its undo of the deletion):
 * every client gets `createToken` (hooks.js). Resolves once the record is stored.
 */
function recreateToken(t, token) {
  t.world.docs.set(token.uuid, token);
  if (token.actor?.isToken) t.world.docs.set(token.actor.uuid, token.actor);
  return Promise.all(Object.values(t.clients).map((c) => hookTable(c.svc).createToken(token)));
}

test("the active GM's client changing between a linked token's deletion and its undo (the old one's record of the deletion still on its way to the server): the record does not stay on the token that is back", async () => {
  const { t, ctl } = await encounter();
  // Ann becomes a second GM; gm0000's client is the active GM's for now.
  Object.getPrototypeOf(t.clients.p1.game.user).isGM = true;
  const token = t.tokens.ulcenToken;
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  let arrive;
  const arrived = new Promise((resolve) => { arrive = resolve; });
  settings.set = async (ns, key, value, options) => { if (key === "encounter") await arrived; return set(ns, key, value, options); };
  const deleting = deleteToken(t, token);
  await tick(2);
  // gm0000 steps away: Ann's client is the active GM's, and it hears the undo first.
  Object.getPrototypeOf(t.clients.gm.game.user).active = false;
  assert.equal(t.clients.p1.svc.relay.isActiveGM, true);
  await recreateToken(t, token);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, undefined, "nothing stored yet to clear");
  arrive();
  await deleting;
  await tick();
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, undefined, "the late record is cleared by the active GM's client");
});

test("a linked token deleted, brought back (Foundry's undo), made unlinked and deleted again while no GM's client heard of it: the first deletion's record was cleared when it came back, so it is gone, its world actor neither read nor written, also after a reload", async () => {
  const { t, ctl, gm } = await encounter();
  const token = t.tokens.ulcenToken;
  await deleteToken(t, token);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true);
  await recreateToken(t, token);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, undefined, "the record is cleared in the encounter's meta");
  for (const [who, c] of Object.entries(t.clients)) assert.equal(c.svc.encounters.deletedTokens.has(token.uuid), false, `and on ${who}'s client`);
  assert.equal(hookTable(t.clients.p1.svc).createToken(token), null, "a player's client stores nothing");
  await unlinkUlcen(t);
  await ctl.refresh();
  // With no GM connected, no client hears of this deletion.
  removeDocs(t, token);
  // The same session, and a reload (a new controller, which heard of no deletion itself).
  for (const [when, c] of [["same session", ctl], ["after a reload", new EncounterController(gm)]]) {
    const from = t.daemon.calls.length;
    await c.refresh();
    assert.ok(!calls(t, from).some((x) => x.params.combatant_id === "ulcen"), `his world actor is not taken as his sheet (${when})`);
  }
  await gm.rpc("encounter.declare", { id: "enc1", combatant_id: "fenka-tokF", choice: { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "ulcen" } } });
  await ctl.resolve();
  assert.equal(psp(t.actors.ulcen), 40, "the base of unlinked copies is never written");
});

test("a token made again with the uuid of no combatant (a new token): no meta write", async () => {
  const { t, ctl } = await encounter();
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  let writes = 0;
  settings.set = (ns, key, value, options) => { if (key === "encounter") writes++; return set(ns, key, value, options); };
  const other = t.world.token({ id: "tokN", name: "Newcomer", actor: t.actors.fenka, actorLink: true });
  assert.equal(hookTable(t.clients.gm.svc).createToken(other), null);
  assert.equal(writes, 0);
  assert.equal(ctl.heldSaves.size, 0);
});

test("a token deleted while a hold is being stored (a round trip to the server): the hold and the deletion's record are both kept, in either order", async () => {
  for (const first of ["hold", "deletion"]) {
    const { t, ctl } = await encounter();
    const settings = t.clients.gm.svc.game.settings;
    const set = settings.set.bind(settings);
    settings.set = async (ns, key, value, options) => { await tick(10); return set(ns, key, value, options); };
    const hold = () => ctl.saveHeld(new Map([["fenka-tokF", { write: null }]]), { id: "enc1" });
    const del = () => { t.world.docs.delete(t.tokens.ulcenToken.uuid); return hookTable(t.clients.gm.svc).deleteToken(t.tokens.ulcenToken); };
    const a = first === "hold" ? hold() : del();
    await tick(2);
    const b = first === "hold" ? del() : hold();
    await Promise.all([a, b]);
    assert.deepEqual(ctl.meta.held, { "fenka-tokF": { write: null } }, first);
    assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true, first);
  }
});

/**
 * A table whose companion's `encounter.add` is slow from its `from`th call on (counted
 * from 1; Infinity: never, until `from` is set): each waits for `answer()` before it
 * answers. `ctl` is the GM's controller.
 */
function slowAdds(from) {
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  const gate = { from, answer: () => answer() };
  let count = 0;
  const { methods } = encounterMethods();
  const t = makeTable({ methods: { ...methods, "encounter.add": async (p) => { if (++count >= gate.from) await answered; return methods["encounter.add"](p); } } });
  return { t, ctl: t.clients.gm.svc.encounters, gate, count: () => count };
}

test("End pressed while Create's encounter.add is on its way (the first token's or a later one's): the companion, which forgot the encounter, refuses it, Create ends quietly (End told the GM), and the ended encounter's meta does not come back", async () => {
  for (const from of [1, 2]) {
    const { t, ctl, gate, count } = slowAdds(from);
    const before = t.clients.gm.notes.given.length;
    const creating = ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
    for (let i = 0; i < 20 && count() < from; i++) await tick(1);
    assert.equal(count(), from, `token ${from}'s encounter.add is on its way`);
    await ctl.end();
    gate.answer();
    const made = await creating;
    assert.equal(made.id, "enc1", `token ${from}`);
    assert.deepEqual(ctl.meta, {}, `no encounter: End ended it (token ${from})`);
    const said = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error" || n.kind === "warn");
    assert.deepEqual(said, [], `nothing said after the GM's own End (token ${from})`);
  }
});

// The test companion keeps one encounter, so its Create forgets the one before; the real
// companion keeps both, and refuses the replaced one's tokens only when it had lost it
// already (the case in which the panel offers Create).
test("Create pressed while add's encounter.add is on its way, the companion not knowing the encounter the new one replaces: add ends quietly, the new encounter kept", async () => {
  const { t, ctl, gate, count } = slowAdds(Infinity);
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  gate.from = count() + 1;
  const before = t.clients.gm.notes.given.length;
  const adding = ctl.add([t.tokens.fenkaToken.uuid]);
  await tick(5);
  gate.from = Infinity;
  const made = await ctl.create([t.tokens.goblinToken.uuid], "Next");
  gate.answer();
  await adding;
  assert.equal(ctl.meta.id, made.id);
  assert.deepEqual(Object.values(ctl.meta.combatants).map((c) => c.tokenUuid), [t.tokens.goblinToken.uuid], "the new encounter, as Create made it");
  const said = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error");
  assert.deepEqual(said, []);
});

/** The notice naming tokens the companion added to an encounter set elsewhere meanwhile, with no encounter current now (`none`) or another (`other`). */
const addedElsewhere = {
  none: (names) => `The encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) while the companion added ${names} to it, and no encounter is current now: to have them fight, select their tokens and make a new one (Create from selected tokens).`,
  other: (names) => `The encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) while the companion added ${names} to it, and another encounter is current now: to have them fight in it, select their tokens and add them again (Add selected).`,
};

/** The notice naming tokens add did not send to an encounter set elsewhere meanwhile, as the companion took none. */
const notAddedElsewhere = {
  none: (names) => `Not added: ${names}. The encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) before the companion took them, and no encounter is current now: to have them fight, select their tokens and make a new one (Create from selected tokens).`,
  other: (names) => `Not added: ${names}. The encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) before the companion took them, and another encounter is current now: to have them fight in it, select their tokens and add them (Add selected).`,
};

/** The sentence of those notices naming selected tokens add skipped as already in that encounter. */
const alreadyElsewhere = (names) => `Already in that encounter, so not sent again: ${names}; select their tokens too.`;

test("the encounter ended or replaced elsewhere (another GM's End or Create, a macro) after add's last encounter.add was sent: the tokens the companion took are named in a notice that stays, saying whether another encounter is current now, and what was set elsewhere stays", async () => {
  for (const [next, words] of [[elsewhere(), addedElsewhere.other], [{}, addedElsewhere.none]]) {
    const { t, ctl, gate, count } = slowAdds(Infinity);
    await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
    gate.from = count() + 1;
    const before = t.clients.gm.notes.given.length;
    const adding = ctl.add([t.tokens.fenkaToken.uuid]);
    for (let i = 0; i < 20 && count() < gate.from; i++) await tick(1);
    assert.equal(count(), gate.from, "fenka's encounter.add is on its way");
    // Set elsewhere; the companion still knows enc1, so it takes Fenka.
    await setElsewhere(t, next);
    gate.answer();
    await adding;
    assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[words("Fenka"), true]], next.id ?? "none current");
  }
});

/**
 * A table whose companion answers the `encounter.add` of the goblin's token with `fail(p,
 * methods)` (by default the test companion's answer; a failure throws, as the companion's
 * refusal), after `meanwhile(t)` ran; `ctl` is the GM's controller, the encounter made
 * with Ulcen.
 */
async function failingGoblinAdd({ fail = (p, methods) => methods["encounter.add"](p), meanwhile = async () => {} } = {}) {
  const { methods } = encounterMethods();
  const t = makeTable({
    methods: {
      ...methods,
      "encounter.add": async (p) => {
        if (p.combatant.data.token?.uuid !== t.tokens.goblinToken.uuid) return methods["encounter.add"](p);
        await meanwhile(t);
        return fail(p, methods);
      },
    },
  });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  return { t, ctl };
}

/**
 * The ways the companion's `encounter.add` of a token may fail, each with what the GM's
 * error is: a refused sheet names the goblin's token (`AddRefusedError`, the companion's
 * own error its `cause`); an encounter the companion does not know is its error as it is.
 */
const ADD_FAILURES = {
  "a sheet the rules refuse (RulesError)": { fail: () => { throw { code: 4001, message: "Refused", data: { rule: "psp-at-most-max", detail: "psp above psp_max" } }; }, is: (e) => e instanceof AddRefusedError && e.data.name === "Goblin" && e.cause.key === "MINDSCAPE.Error.Rules" && e.cause.data.rule === "psp-at-most-max" },
  "a sheet the companion's schema refuses (InvalidParams)": { fail: () => { throw { code: -32602, message: "Invalid params", data: { errors: [{ path: "/combatant/profile/psp", message: "-3 is less than 0" }] } }; }, is: (e) => e instanceof AddRefusedError && e.data.name === "Goblin" && e.cause.key === "MINDSCAPE.Error.InvalidParams" },
  "an encounter the companion no longer knows, which nobody here ended (NotFound)": { fail: (p) => { throw { code: 4004, message: "Not found", data: { id: p.id } }; }, is: (e) => e.key === "MINDSCAPE.Error.NotFound" && e.data.id === "enc1" },
};

test("one token's encounter.add failing (the companion refusing its sheet, an encounter it no longer knows): the tokens the companion took before it are stored, and the error reaches the GM (a refused sheet's naming its token)", async () => {
  for (const [name, { fail, is }] of Object.entries(ADD_FAILURES)) {
    const { t, ctl } = await failingGoblinAdd({ fail });
    await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), is, name);
    const stored = t.clients.gm.svc.game.settings.get("mindscape", "encounter");
    assert.deepEqual(Object.values(stored.combatants).map((c) => c.tokenUuid), [t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], name);
    assert.equal(stored.combatants["fenka-tokF"].name, "Fenka", name);
    // Added again, Fenka is known to be in already: not sent to the companion, which would refuse it.
    const asked = calls(t).length;
    await ctl.add([t.tokens.fenkaToken.uuid]);
    assert.equal(calls(t).length, asked, name);
    assert.equal(t.clients.gm.notes.given.at(-1).text, "Already in the encounter, so not added again: Fenka.", name);
  }
});

test("a token's sheet the companion refuses when tokens are added (power-pool's wave label equal to a creature held on its own, at the place in the sheet it was read): the GM's error names that token, as the other add notices do, with the companion's words", async () => {
  const problem = { path: "/combatant/data/actor/flags/mindscape/power-pool/controlling/1/wave", message: 'wave label "skum" is also the id of a creature held on its own in the same controlling' };
  const { t, ctl } = await failingGoblinAdd({ fail: () => { throw { code: -32602, message: "Invalid params", data: { errors: [problem] } }; } });
  // Named by its token, whose name is not its actor's.
  t.tokens.goblinToken.name = "Goblin Scout";
  const error = await ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]).catch((e) => e);
  assert.ok(error instanceof AddRefusedError, String(error));
  assert.deepEqual([error.data.name, error.cause.code], ["Goblin Scout", -32602]);
  const gm = t.clients.gm.svc;
  const before = t.clients.gm.notes.given.length;
  gm.notifyError(error);
  assert.deepEqual(t.clients.gm.notes.given.slice(before).map((n) => [n.kind, n.text]), [["error",
    `Mindscape could not add Goblin Scout to the encounter: The companion rejected the request: /combatant/data/actor/flags/mindscape/power-pool/controlling/1/wave: wave label "skum" is also the id of a creature held on its own in the same controlling. Check the actor's psionic profile (sheet header › Psionic profile).`]]);
  // Fenka, taken before it, is stored first.
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
  // Create from selected tokens adds them so too.
  const created = await ctl.create([t.tokens.goblinToken.uuid], "Again").catch((e) => e);
  assert.ok(created instanceof AddRefusedError && created.data.name === "Goblin Scout", String(created));
});

test("a token the companion refuses when tokens are added as the encounter holds max_combatants already (−32602 at /combatant, not at its sheet): the GM's error names that token, and does not say its sheet was refused", async () => {
  // What the companion answers (encounter.add's limit, methods/encounter.py): the whole combatant, no field of the sheet.
  const full = { path: "/combatant", message: "an encounter holds at most 64 combatants (limit max_combatants)" };
  const { t, ctl } = await failingGoblinAdd({ fail: () => { throw { code: -32602, message: "Invalid params", data: { errors: [full] } }; } });
  const error = await ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]).catch((e) => e);
  assert.ok(error instanceof AddRefusedError && error.data.name === "Goblin", String(error));
  const before = t.clients.gm.notes.given.length;
  t.clients.gm.svc.notifyError(error);
  const [told] = t.clients.gm.notes.given.slice(before);
  const said = "Mindscape could not add Goblin to the encounter: The companion refused this for the encounter as a whole, not for a sheet: /combatant: an encounter holds at most 64 combatants (limit max_combatants).";
  assert.deepEqual([told.kind, told.text], ["error", said]);
});

test("a token's encounter.add failing for what is not its sheet (an encounter the companion does not know, the connection lost, the companion's own fault) is not told as its sheet refused", async () => {
  const failures = {
    "NotFound": () => { throw { code: 4004, message: "Not found", data: { id: "enc1" } }; },
    "a fault of the companion": () => { throw { code: -32603, message: "Internal error", data: { error_id: "e-1" } }; },
  };
  for (const [name, fail] of Object.entries(failures)) {
    const { t, ctl } = await failingGoblinAdd({ fail });
    const error = await ctl.add([t.tokens.goblinToken.uuid]).catch((e) => e);
    assert.ok(!(error instanceof AddRefusedError) && error.code === (name === "NotFound" ? 4004 : -32603), name);
  }
});

test("the connection to the companion lost at one token's encounter.add: the tokens the companion took before it are stored, and the GM is told the companion could not be reached", async () => {
  const { t, ctl } = await failingGoblinAdd();
  const gm = t.clients.gm.svc;
  const fetch = gm.env.fetch;
  gm.env.fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    if (body.method === "encounter.add" && body.params.combatant.data.token?.uuid === t.tokens.goblinToken.uuid) throw new TypeError("Failed to fetch");
    return fetch(url, init);
  };
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), (e) => e instanceof DaemonUnreachableError && e.data.cause === "Failed to fetch");
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
});

/**
 * `failingGoblinAdd`, whose GM's link to the companion loses the answer to each request
 * `lose(body)` picks (the companion has handled it, and stored what it stores) in the way
 * `how` names (the ways `answerMayBeLost` counts).
 */
const LOST_ANSWERS = {
  "the connection broken": () => { throw new TypeError("Failed to fetch"); },
  "a proxy's page instead of the answer": () => ({ ok: false, status: 502, json: async () => { throw new SyntaxError("Unexpected token <"); } }),
  "the companion's own fault after it stored the add": () => ({ ok: true, status: 200, json: async () => ({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "Internal error", data: { error_id: "e-1" } } }) }),
};

function losingAnswers(gm, lose, how = LOST_ANSWERS["the connection broken"]) {
  const fetch = gm.env.fetch;
  gm.env.fetch = async (url, init) => {
    const answer = await fetch(url, init);
    return lose(JSON.parse(init.body)) ? how() : answer;
  };
  return () => { gm.env.fetch = fetch; };
}

const isGoblinAdd = (t) => (body) => body.method === "encounter.add" && body.params.combatant.data.token?.uuid === t.tokens.goblinToken.uuid;

test("the answer to a token's encounter.add lost after the companion stored it (the connection broken, a proxy's page, the companion's fault): the companion's log shows it took the token, so the panel has it as if the answer had come, the GM is told, and the tokens after it are added", async () => {
  for (const [name, how] of Object.entries(LOST_ANSWERS)) {
    const { t, ctl } = await failingGoblinAdd();
    const gm = t.clients.gm.svc;
    losingAnswers(gm, isGoblinAdd(t), how);
    const before = t.clients.gm.notes.given.length;
    await ctl.add([t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid]);
    assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "goblin-tokG", "fenka-tokF"], name);
    assert.deepEqual(ctl.meta.combatants["goblin-tokG"], { tokenUuid: t.tokens.goblinToken.uuid, actorUuid: t.tokens.goblinToken.actor.uuid, name: "Goblin", disposition: -1 }, `${name}: as a normal add records it, hostile as its token`);
    assert.deepEqual(t.clients.gm.notes.given.slice(before).map((n) => [n.kind, n.text]), [["info", "The companion's answer to adding Goblin was lost, but its encounter has Goblin: the panel shows it now."]], name);
  }
});

test("the answer to a token's encounter.add lost before the companion took it: its log does not hold it, so the failure reaches the GM as before and the panel does not have it", async () => {
  const { t, ctl } = await failingGoblinAdd({ fail: () => { throw { code: -32603, message: "Internal error", data: { error_id: "e-2" } }; } });
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), (e) => e.code === -32603);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
  assert.ok(calls(t).some((c) => c.method === "encounter.log"), "the log was looked at");
});

test("the answer to a token's encounter.add lost before the companion took it, its log holding another creature of the same actor (another unlinked token of it, or the actor through a linked token): that one is not taken for it, as the adapter gives each its own id", async () => {
  // The goblin's unlinked token tokG, a second unlinked token tokG2 and a linked one tokL:
  // three creatures, `goblin-tokG`, `goblin-tokG2` and `goblin` (adapters/foundry.py unwrap).
  for (const [adding, held] of [["tokG2", "tokG"], ["tokL", "tokG"], ["tokG", "tokL"]]) {
    const { methods } = encounterMethods();
    const t = makeTable({
      methods: {
        ...methods,
        "encounter.add": (p) => {
          if (p.combatant.data.token?.uuid === tokens[adding].uuid) throw { code: -32603, message: "Internal error", data: { error_id: "e-3" } };
          return methods["encounter.add"](p);
        },
      },
    });
    const goblin = t.actors.goblin;
    const tokens = { tokG: t.tokens.goblinToken, tokG2: t.world.token({ id: "tokG2", name: "Goblin 2", actor: goblin, actorLink: false }), tokL: t.world.token({ id: "tokL", name: "Goblin chief", actor: goblin, actorLink: true }) };
    const gm = t.clients.gm.svc;
    const ctl = gm.encounters;
    await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
    const { combatant_id: heldId } = await gm.rpc("encounter.add", { id: ctl.meta.id, combatant: gm.ref(goblin, tokens[held], await gm.adapterId()) });
    const before = t.clients.gm.notes.given.length;
    await assert.rejects(ctl.add([tokens[adding].uuid]), (e) => e.code === -32603, adding);
    assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen"], `${adding}: ${heldId} not taken for it`);
    assert.ok(calls(t).some((c) => c.method === "encounter.log"), `${adding}: the log was looked at`);
    assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "info"), [], adding);
  }
});

test("a token the companion's encounter holds but the panel does not (an add whose answer was lost) added again: the companion refuses it as in already, and the panel takes it from the companion's log instead of telling the GM it was refused", async () => {
  const { t, ctl } = await failingGoblinAdd();
  const gm = t.clients.gm.svc;
  // The companion took the goblin, and the panel never heard of it.
  await gm.rpc("encounter.add", { id: ctl.meta.id, combatant: gm.ref(t.tokens.goblinToken.actor, t.tokens.goblinToken, await gm.adapterId()) });
  const before = t.clients.gm.notes.given.length;
  await ctl.add([t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid]);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "goblin-tokG", "fenka-tokF"]);
  assert.equal(ctl.meta.combatants["goblin-tokG"].tokenUuid, t.tokens.goblinToken.uuid);
  assert.deepEqual(t.clients.gm.notes.given.slice(before).map((n) => [n.kind, n.text]), [["info", "The companion's encounter had Goblin already, though the panel did not show it (an earlier add whose answer was lost, or one a macro or a script made): the panel shows it now."]]);
});

test("a refusal at /combatant/id for a creature the companion's log does not hold stays the GM's refusal", async () => {
  const refused = { path: "/combatant/id", message: '"goblin-tokG" is already in the encounter' };
  const { t, ctl } = await failingGoblinAdd({ fail: () => { throw { code: -32602, message: "Invalid params", data: { errors: [refused] } }; } });
  await assert.rejects(ctl.add([t.tokens.goblinToken.uuid]), (e) => e instanceof AddRefusedError && e.data.name === "Goblin");
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen"]);
});

test("the answer to a token's encounter.add lost, and the companion's log out of reach too: the GM gets the failure and a notice that stays, saying the token may have been taken and to add it again once the companion answers; that add then finds it in the companion's encounter", async () => {
  const { t, ctl } = await failingGoblinAdd();
  const gm = t.clients.gm.svc;
  const restore = losingAnswers(gm, (body) => isGoblinAdd(t)(body) || body.method === "encounter.log");
  const before = t.clients.gm.notes.given.length;
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), (e) => e instanceof DaemonUnreachableError);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
  assert.deepEqual(warningsSince(t, before), [["The companion may have added Goblin though its answer was lost, and it cannot be asked now. Once it answers again, select Goblin and press Add selected: either way the panel then shows it.", true]]);
  restore();
  await ctl.add([t.tokens.goblinToken.uuid]);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  assert.match(t.clients.gm.notes.given.at(-1).text, /had Goblin already/);
});

test("one token's encounter.add refused, and storing the tokens taken before it failing too: the GM is told of both, and the companion's refusal is what add throws", async () => {
  const { t, ctl } = await failingGoblinAdd({ fail: ADD_FAILURES["a sheet the rules refuse (RulesError)"].fail });
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  settings.set = (ns, key, value, options) => (key === "encounter" ? Promise.reject(new Error("the server lost the write")) : set(ns, key, value, options));
  const before = t.clients.gm.notes.given.length;
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), ADD_FAILURES["a sheet the rules refuse (RulesError)"].is);
  const errors = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error").map((n) => n.text);
  assert.equal(errors.length, 1);
  assert.match(errors[0], /the server lost the write/);
});

test("a selected token deleted while the companion takes the one before it: the token it took is stored, and the GM is told the deleted one is not found", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({
    methods: {
      ...methods,
      "encounter.add": (p) => {
        if (p.combatant.data.token?.uuid === t.tokens.fenkaToken.uuid) removeDocs(t, t.tokens.goblinToken);
        return methods["encounter.add"](p);
      },
    },
  });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  const goblin = t.tokens.goblinToken.uuid;
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, goblin]), (e) => e.key === "MINDSCAPE.Error.NoDocument" && e.data.uuid === goblin);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF"]);
  assert.equal(ctl.meta.combatants["fenka-tokF"].tokenUuid, t.tokens.fenkaToken.uuid);
});

test("the encounter ended or replaced elsewhere while tokens are added, the companion then refusing the next token (NotFound): one notice that stays names the tokens it took and those it never got, no error contradicts it, and what was set elsewhere stays", async () => {
  for (const [next, words] of [[elsewhere(), addedElsewhere.other], [{}, addedElsewhere.none]]) {
    // Another GM's End (it deletes the encounter in the companion), then maybe their Create.
    const meanwhile = async (t) => {
      await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
      await setElsewhere(t, next);
    };
    const { t, ctl } = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
    // A token after the goblin, which add never sends.
    const prime = t.world.token({ id: "tokF2", name: "Fenka Prime", actor: t.actors.fenka, actorLink: true });
    const before = t.clients.gm.notes.given.length;
    await ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid, prime.uuid]);
    assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
    const unsent = "Not added, as the companion no longer knows that encounter: Goblin, Fenka Prime; select their tokens too.";
    assert.deepEqual(warningsSince(t, before), [[`${words("Fenka")} ${unsent}`, true]], next.id ?? "none current");
    const errors = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error");
    assert.deepEqual(errors, [], next.id ?? "none current");
  }
});

/** Link Fenka's token to her actor, and give her a second linked token, which it gives back. */
function fenkaLinkedTwice(t) {
  const again = t.world.token({ id: "tokF3", name: "Fenka", actor: t.actors.fenka });
  for (const token of [t.tokens.fenkaToken, again]) {
    token.actor = t.actors.fenka;
    token.actorLink = true;
  }
  return again;
}

test("the encounter replaced elsewhere while tokens are added, the companion then refusing the next token (NotFound): the tokens never sent are named once each, without those whose creature is in the encounter already, which add would not have sent: those are named as already in it (as the tokens skipped before the refusal are), but for a creature the companion took in this add", async () => {
  const next = elsewhere();
  const meanwhile = async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, next);
  };
  const { t, ctl } = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
  // Fenka's token again, and Ulcen's, whom Create put in the encounter: both would be skipped as already in.
  const again = fenkaLinkedTwice(t);
  const before = t.clients.gm.notes.given.length;
  await ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid, again.uuid, t.tokens.ulcenToken.uuid, t.tokens.goblinToken.uuid]);
  const unsent = "Not added, as the companion no longer knows that encounter: Goblin; select their tokens too.";
  assert.deepEqual(warningsSince(t, before), [[`${addedElsewhere.other("Fenka")} ${unsent} ${alreadyElsewhere("Ulcen of Tyr")}`, true]]);
});

test("the encounter ended or replaced elsewhere while tokens are added: selected tokens skipped as already in that encounter are named in the same notice that stays (not in an AlreadyIn notice), without a creature the companion took in this add", async () => {
  for (const [next, words] of [[elsewhere(), addedElsewhere.other], [{}, addedElsewhere.none]]) {
    // The companion takes the goblin (the encounter set elsewhere meanwhile), then refuses nothing.
    const { t, ctl } = await failingGoblinAdd({ meanwhile: (t) => setElsewhere(t, next) });
    // Fenka linked, and a second token of hers after the goblin: skipped, as the companion took her just now.
    const again = fenkaLinkedTwice(t);
    const before = t.clients.gm.notes.given.length;
    await ctl.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid, again.uuid]);
    assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[`${words("Fenka, Goblin")} ${alreadyElsewhere("Ulcen of Tyr")}`, true]], next.id ?? "none current");
    assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "info"), [], next.id ?? "none current");
  }
  // With the next token refused as the companion no longer knows the encounter: taken, not added, already in.
  const next = elsewhere();
  const meanwhile = async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, next);
  };
  const { t, ctl } = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
  const before = t.clients.gm.notes.given.length;
  await ctl.add([t.tokens.fenkaToken.uuid, t.tokens.ulcenToken.uuid, t.tokens.goblinToken.uuid]);
  const unsent = "Not added, as the companion no longer knows that encounter: Goblin; select their tokens too.";
  assert.deepEqual(warningsSince(t, before), [[`${addedElsewhere.other("Fenka")} ${unsent} ${alreadyElsewhere("Ulcen of Tyr")}`, true]]);
});

/** The notice naming selected tokens all already in an encounter set elsewhere while add read them, nothing sent. */
const alreadyAllElsewhere = {
  none: (names) => `Already in the encounter, so not added again: ${names}. But it stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) meanwhile, and no encounter is current now: to have them fight, select their tokens and make a new one (Create from selected tokens).`,
  other: (names) => `Already in the encounter, so not added again: ${names}. But it stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) meanwhile, and another encounter is current now: to have them fight in it, select their tokens and add them (Add selected).`,
};

test("every selected creature already in the encounter, which stopped being the current one elsewhere while add read the tokens: a notice that stays names them and says what to do (not the AlreadyIn notice, nor nothing), and what was set elsewhere stays", async () => {
  for (const [next, words] of [[elsewhere(), alreadyAllElsewhere.other], [{}, alreadyAllElsewhere.none]]) {
    const { methods } = encounterMethods();
    const t = makeTable({ methods });
    const gm = t.clients.gm.svc;
    await gm.encounters.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
    // Set elsewhere once add read the last token (a linked second one of Ulcen's).
    const again = t.world.token({ id: "tokU2", name: "Ulcen of Tyr", actor: t.actors.ulcen, actorLink: true });
    const docs = gm.docs.bind(gm);
    gm.docs = async (uuid, options) => {
      const found = await docs(uuid, options);
      if (uuid === again.uuid) await setElsewhere(t, next);
      return found;
    };
    const before = t.clients.gm.notes.given.length;
    const asked = calls(t).length;
    await gm.encounters.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, again.uuid]);
    assert.equal(calls(t).length, asked, "nothing sent");
    assert.deepEqual(gm.encounters.meta, next, "what was set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[words("Ulcen of Tyr, Fenka"), true]], next.id ?? "none current");
    assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind !== "warn"), [], next.id ?? "none current");
  }
});

/**
 * failingGoblinAdd whose encounter.add of the goblin, on its way, meets the encounter
 * ended in the companion and `next` set elsewhere, and the goblin's token
 * deleted: the companion refuses it as it no longer knows the encounter (NotFound).
 */
const goblinLostElsewhere = (next) => failingGoblinAdd({
  fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail,
  meanwhile: async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, next);
    removeDocs(t, t.tokens.goblinToken);
  },
});

test("the encounter ended or replaced elsewhere while add's first encounter.add is on its way, the companion refusing it (NotFound) and its token deleted meanwhile: no NotFound error (its 'start a new encounter' untrue with another current), and the tokens skipped as already in that encounter are named in a notice that stays", async () => {
  for (const [next, words] of [[elsewhere(), alreadyAllElsewhere.other], [{}, alreadyAllElsewhere.none]]) {
    const { t, ctl } = await goblinLostElsewhere(next);
    const before = t.clients.gm.notes.given.length;
    await ctl.add([t.tokens.ulcenToken.uuid, t.tokens.goblinToken.uuid]);
    assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[words("Ulcen of Tyr"), true]], next.id ?? "none current");
    assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind !== "warn"), [], next.id ?? "none current");
  }
});

test("the encounter ended or replaced elsewhere while add's encounter.add of the only selected token is on its way, the companion refusing it (NotFound) and the token deleted meanwhile: the GM is told that nothing was added and why, not nothing at all, and no NotFound error", async () => {
  for (const next of [elsewhere(), {}]) {
    const { t, ctl } = await goblinLostElsewhere(next);
    const before = t.clients.gm.notes.given.length;
    await ctl.add([t.tokens.goblinToken.uuid]);
    assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
    // Nothing is left to select or add: a notice that goes away.
    assert.deepEqual(warningsSince(t, before), [["Nothing was added: the encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) before the companion took the selected tokens, and they have been deleted since.", false]], next.id ?? "none current");
    assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind !== "warn"), [], next.id ?? "none current");
  }
});

/** The sentence of those notices naming the creatures among them in the encounter current now. */
const inCurrent = (names) => `Already in the encounter current now, so not to be added to it: ${names}.`;

/** An encounter set elsewhere as the current one with the creatures of `tokens` in it (another GM's Create from the same tokens). */
const elsewhereWith = (...tokens) => ({ ...elsewhere(), combatants: Object.fromEntries(tokens.map((tok, i) => [`c${i}`, { tokenUuid: tok.uuid, actorUuid: tok.actor.uuid, name: tok.name, disposition: 0 }])) });

test("the encounter replaced elsewhere by one holding some of the same creatures (another GM's Create from the same tokens) while tokens are added: the notice that stays names those as in the current encounter already, as adding them there, which it says to do, would only be refused", async () => {
  // The companion, which still knows the encounter, takes Fenka and the goblin; Ulcen is skipped.
  const { t, ctl, gate, count } = slowAdds(Infinity);
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  gate.from = count() + 1;
  const next = elsewhereWith(t.tokens.fenkaToken, t.tokens.ulcenToken);
  const before = t.clients.gm.notes.given.length;
  const adding = ctl.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]);
  for (let i = 0; i < 20 && count() < gate.from; i++) await tick(1);
  await setElsewhere(t, next);
  gate.answer();
  await adding;
  assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
  assert.deepEqual(warningsSince(t, before), [[`${addedElsewhere.other("Fenka, Goblin")} ${alreadyElsewhere("Ulcen of Tyr")} ${inCurrent("Fenka, Ulcen of Tyr")}`, true]], "taken");
  // The companion, which no longer knows the encounter, refuses the goblin, the first token sent.
  const meanwhile = async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, elsewhereWith(t.tokens.goblinToken));
  };
  const refused = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
  const from = refused.t.clients.gm.notes.given.length;
  await refused.ctl.add([refused.t.tokens.goblinToken.uuid, refused.t.tokens.fenkaToken.uuid]);
  assert.deepEqual(warningsSince(refused.t, from), [[`${notAddedElsewhere.other("Goblin, Fenka")} ${inCurrent("Goblin")}`, true]], "none taken");
  // With none current now, none is named so.
  const none = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile: async (t) => { await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" }); await setElsewhere(t, {}); } });
  const at = none.t.clients.gm.notes.given.length;
  await none.ctl.add([none.t.tokens.goblinToken.uuid]);
  assert.deepEqual(warningsSince(none.t, at), [[notAddedElsewhere.none("Goblin"), true]], "none current");
});

test("the encounter replaced elsewhere by one holding every creature add was adding (another GM's Create from the same tokens): the GM is told only that they are in the current encounter already, not told to add them and then not to", async () => {
  const all = (names) => `The encounter stopped being the current one (ended or replaced elsewhere: in another browser, by a macro or a script) while ${names} were being added to it, but the encounter current now has them already: there is nothing more to add.`;
  // The companion, which still knows the encounter, takes Fenka; Ulcen is skipped as in it.
  const { t, ctl, gate, count } = slowAdds(Infinity);
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  gate.from = count() + 1;
  const next = elsewhereWith(t.tokens.fenkaToken, t.tokens.ulcenToken);
  let before = t.clients.gm.notes.given.length;
  const adding = ctl.add([t.tokens.fenkaToken.uuid, t.tokens.ulcenToken.uuid]);
  for (let i = 0; i < 20 && count() < gate.from; i++) await tick(1);
  await setElsewhere(t, next);
  gate.answer();
  await adding;
  assert.deepEqual(ctl.meta, next, "what was set elsewhere stays");
  assert.deepEqual(t.clients.gm.notes.given.slice(before).map((n) => [n.kind, n.text, n.options?.permanent ?? false]), [["info", all("Fenka, Ulcen of Tyr"), false]], "taken");
  // The companion, which no longer knows the encounter, refuses the goblin, the first token sent.
  const meanwhile = async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, elsewhereWith(t.tokens.goblinToken, t.tokens.ulcenToken));
  };
  const refused = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
  before = refused.t.clients.gm.notes.given.length;
  await refused.ctl.add([refused.t.tokens.goblinToken.uuid, refused.t.tokens.ulcenToken.uuid]);
  assert.deepEqual(refused.t.clients.gm.notes.given.slice(before).map((n) => [n.kind, n.text]), [["info", all("Goblin, Ulcen of Tyr")]], "none taken");
});

test("the encounter ended or replaced elsewhere while tokens are added, the companion refusing the first token sent as it no longer knows it: a selected token after that one whose creature is already in that encounter is named as such, as one before it would be", async () => {
  const meanwhile = async (t) => {
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, elsewhere());
  };
  const { t, ctl } = await failingGoblinAdd({ fail: ADD_FAILURES["an encounter the companion no longer knows, which nobody here ended (NotFound)"].fail, meanwhile });
  const before = t.clients.gm.notes.given.length;
  // The goblin's is the first encounter.add; Ulcen, whom Create put in the encounter, comes after it.
  await ctl.add([t.tokens.goblinToken.uuid, t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid]);
  assert.deepEqual(warningsSince(t, before), [[`${notAddedElsewhere.other("Goblin, Fenka")} ${alreadyElsewhere("Ulcen of Tyr")}`, true]]);
});

test("the encounter replaced elsewhere while tokens are added, the companion then refusing the next one's sheet: the notice names the tokens it took, and the refusal still reaches the GM", async () => {
  const { is, fail } = ADD_FAILURES["a sheet the rules refuse (RulesError)"];
  const next = elsewhere();
  const { t, ctl } = await failingGoblinAdd({ fail, meanwhile: (t) => setElsewhere(t, next) });
  const before = t.clients.gm.notes.given.length;
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]), is);
  assert.deepEqual(warningsSince(t, before), [[addedElsewhere.other("Fenka"), true]]);
});

/**
 * The GM's game.settings.set of the encounter setting for which `slow(value)` holds waits
 * for the returned `release()` (Foundry's round trip to the server, made long); `storing`
 * settles once such a write is asked.
 */
function slowEncounterSet(t, slow) {
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  let asked;
  const storing = new Promise((resolve) => { asked = resolve; });
  settings.set = async (ns, key, value, options) => {
    if (key === "encounter" && slow(value)) {
      asked();
      await released;
    }
    return set(ns, key, value, options);
  };
  return { storing, release };
}

test("Add selected pressed while Create here stores its new encounter (after the companion made it): add waits for it and adds the tokens to the new encounter, not the one it replaced", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  const { storing, release } = slowEncounterSet(t, (value) => value?.name === "Next");
  const before = t.clients.gm.notes.given.length;
  const creating = ctl.create([t.tokens.goblinToken.uuid], "Next");
  await storing;
  const adding = ctl.add([t.tokens.fenkaToken.uuid]);
  await tick(5);
  release();
  const made = await creating;
  await adding;
  assert.equal(ctl.meta.id, made.id);
  assert.deepEqual(Object.values(ctl.meta.combatants).map((c) => c.tokenUuid), [t.tokens.goblinToken.uuid, t.tokens.fenkaToken.uuid], "Fenka in the new encounter");
  assert.deepEqual(calls(t).filter((c) => c.method === "encounter.add").map((c) => c.params.id), ["enc1", "enc2", "enc2"]);
  assert.deepEqual(t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error" || n.kind === "warn"), []);
});

test("Add selected pressed while End here is ending the encounter: add waits for it and is refused as with no encounter, sending nothing", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  const { storing, release } = slowEncounterSet(t, (value) => !value?.id);
  const ending = ctl.end();
  await storing;
  const asked = calls(t).length;
  const adding = ctl.add([t.tokens.fenkaToken.uuid]);
  await tick(5);
  release();
  await ending;
  await assert.rejects(adding, (e) => e.key === "MINDSCAPE.Error.NoEncounter");
  assert.equal(calls(t).length, asked, "no encounter.add sent");
  assert.deepEqual(ctl.meta, {});
});

test("Create pressed here while add's encounter.add is on its way, the companion still knowing the encounter the new one replaces and taking the token: add ends quietly (no notice of an encounter replaced elsewhere), the new encounter kept", async () => {
  const { methods } = encounterMethods();
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  let slow = false;
  let sent = null;
  const t = makeTable({
    methods: {
      ...methods,
      "encounter.add": async (p) => {
        if (!slow) return methods["encounter.add"](p);
        sent = p.id;
        await answered;
        // The real companion keeps the replaced encounter, and takes the token into it.
        return { combatant_id: "fenka-tokF", revision: 2, warnings: [], updates: [] };
      },
    },
  });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  slow = true;
  const adding = ctl.add([t.tokens.fenkaToken.uuid]);
  for (let i = 0; i < 20 && !sent; i++) await tick(1);
  assert.equal(sent, "enc1", "fenka's encounter.add is on its way");
  slow = false;
  const before = t.clients.gm.notes.given.length;
  const made = await ctl.create([t.tokens.goblinToken.uuid], "Next");
  answer();
  await adding;
  assert.equal(ctl.meta.id, made.id);
  assert.deepEqual(Object.values(ctl.meta.combatants).map((c) => c.tokenUuid), [t.tokens.goblinToken.uuid], "the new encounter, as Create made it");
  const said = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error" || n.kind === "warn");
  assert.deepEqual(said, [], "the GM's own Create replaced it: nothing to tell");
});

test("End pressed (or the encounter set) elsewhere while add's first encounter.add is on its way, the companion, which forgot the encounter, refusing it (NotFound): a notice that stays names the tokens not added, and those skipped as already in that encounter, and says what to do; no error contradicts it, and what was set elsewhere stays", async () => {
  for (const [next, words] of [[elsewhere(), notAddedElsewhere.other], [{}, notAddedElsewhere.none]]) {
    const { t, ctl, gate, count } = slowAdds(Infinity);
    await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
    gate.from = count() + 1;
    const before = t.clients.gm.notes.given.length;
    // Ulcen, whom Create put in the encounter, is skipped; Fenka's is the first encounter.add.
    const adding = ctl.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid]);
    for (let i = 0; i < 20 && count() < gate.from; i++) await tick(1);
    assert.equal(count(), gate.from, "fenka's encounter.add is on its way");
    // Another GM's End (it deletes the encounter in the companion), then maybe their Create.
    await t.clients.gm.svc.rpc("encounter.delete", { id: "enc1" });
    await setElsewhere(t, next);
    gate.answer();
    await adding;
    assert.deepEqual(ctl.meta, next, "the encounter set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[`${words("Fenka, Goblin")} ${alreadyElsewhere("Ulcen of Tyr")}`, true]], next.id ?? "none current");
    const errors = t.clients.gm.notes.given.slice(before).filter((n) => n.kind === "error");
    assert.deepEqual(errors, [], next.id ?? "none current");
  }
});

test("an encounter nobody ended that the companion no longer knows (its store lost): add's refusal (NotFound) still reaches the GM", async () => {
  const { methods } = encounterMethods();
  let forget = false;
  const t = makeTable({ methods: { ...methods, "encounter.add": (p) => { if (forget) throw { code: 4004, message: "Not found", data: { id: p.id } }; return methods["encounter.add"](p); } } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  forget = true;
  await assert.rejects(ctl.add([t.tokens.fenkaToken.uuid]), (e) => e.key === "MINDSCAPE.Error.NotFound" && e.data.id === "enc1");
  assert.equal(ctl.meta.id, "enc1", "the meta stays as it was");
});

test("a linked token deleted while tokens are being added to the encounter: its record is kept, with the combatants added", async () => {
  let slow = false;
  const { t, ctl } = await encounter({
    methods: (m) => ({ ...m, "encounter.add": async (p) => { if (slow) { await deleteToken(t, t.tokens.ulcenToken); await tick(5); } return m["encounter.add"](p); } }),
  });
  const prime = t.world.token({ id: "tokF2", name: "Fenka Prime", actor: t.actors.fenka, actorLink: true });
  slow = true;
  await ctl.add([prime.uuid]);
  assert.equal(ctl.meta.combatants.ulcen.deletedLinked, true, "the deletion's record stays");
  assert.ok(Object.values(ctl.meta.combatants).some((c) => c.tokenUuid === prime.uuid), "Fenka Prime is added");
});

test("End pressed here while the encounter is set elsewhere (another GM's End or Create, a macro) and a resolve is under way: the write Foundry misses is still told, and the encounter set elsewhere stays", async () => {
  for (const next of setElsewhereCases()) {
    const { t, ctl, enc, release, fenka, resolving } = await resolvingFenkaLocked();
    const ending = ctl.end();
    await setElsewhere(t, next);
    await ending;
    const before = t.clients.gm.notes.given.length;
    release();
    await resolving;
    const owed = enc.combatants.get("fenka-tokF").profile.psp;
    assert.deepEqual(ctl.meta, next, "the encounter set elsewhere stays");
    assert.deepEqual(warningsSince(t, before), [[behindWords(fenka, owed), true]], next.id ?? "ended");
    assert.equal(ctl.afterEnd.size, 0, "the ended encounter's record is dropped once told");
    assert.equal(ctl.endedIds.size, 0);
  }
});

test("Create pressed here while a meta write lands and the encounter is set elsewhere meanwhile, a resolve of the one it replaced under way: the write the resolve then misses is still told, in words of a replaced encounter", async () => {
  const { t, ctl, enc, release, fenka, resolving } = await resolvingFenkaLocked();
  const other = elsewhere();
  // A meta write under way (a hold's, a deleted token's record), Create waiting for it,
  // while the encounter is set elsewhere.
  const landing = (async () => { await tick(1); await setElsewhere(t, other); })();
  ctl.heldSaves.add(landing);
  landing.finally(() => ctl.heldSaves.delete(landing));
  const made = await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  const before = t.clients.gm.notes.given.length;
  release();
  await resolving;
  const owed = enc.combatants.get("fenka-tokF").profile.psp;
  assert.equal(ctl.meta.id, made.id, "the new encounter is the current one");
  assert.deepEqual(warningsSince(t, before), [[replacedBehindWords(fenka, owed), true]]);
  assert.equal(ctl.afterEnd.size, 0, "the replaced encounter's record is dropped once told");
  assert.equal(ctl.endedIds.size, 0);
});
