// The encounter panel's buttons say what they did when nothing visible happens (Add
// selected with creatures already in, Resolve anyway with no choices, Undo step with
// nothing to undo), and an undo marks the chat cards of the step it took back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";
import { onRenderChatMessage } from "../mindscape/scripts/hooks.js";
import { followTarget } from "../mindscape/scripts/dialogs.js";

async function encounter(overrides = {}) {
  const { methods, enc } = encounterMethods(overrides);
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
  return { t, ctl, enc };
}

const adds = (t) => t.daemon.calls.filter((c) => c.method === "encounter.add");

test("Add selected: a creature already in the encounter is not sent again (the companion refuses it); the GM is told whom, a creature selected by two tokens of its linked actor named once", async () => {
  const { t, ctl } = await encounter();
  assert.equal(adds(t).length, 2);
  // Another token of Ulcen's linked actor is Ulcen himself.
  const ulcenAgain = t.world.token({ id: "tokU2", name: "Ulcen of Tyr", actor: t.actors.ulcen, actorLink: true });
  await ctl.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid, ulcenAgain.uuid]);
  assert.deepEqual(adds(t).slice(2).map((c) => c.params.combatant.data.actor.name), ["Goblin"]);
  assert.deepEqual(Object.keys(ctl.meta.combatants), ["ulcen", "fenka-tokF", "goblin-tokG"]);
  assert.deepEqual(t.clients.gm.notes.info, ["Already in the encounter, so not added again: Ulcen of Tyr, Fenka."]);
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("Add selected with every creature already in the encounter stores nothing: the meta, unchanged, is not written again (each write goes to the server and every client)", async () => {
  const { t, ctl } = await encounter();
  const settings = t.clients.gm.svc.game.settings;
  const set = settings.set.bind(settings);
  const written = [];
  settings.set = (ns, key, value, options) => { if (key === "encounter") written.push(value); return set(ns, key, value, options); };
  await ctl.add([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid]);
  assert.deepEqual(written, []);
  assert.deepEqual(t.clients.gm.notes.info, ["Already in the encounter, so not added again: Ulcen of Tyr, Fenka."]);
  // One creature new: the meta is written, once.
  await ctl.add([t.tokens.ulcenToken.uuid, t.tokens.goblinToken.uuid]);
  assert.deepEqual(written.map((m) => Object.keys(m.combatants)), [["ulcen", "fenka-tokF", "goblin-tokG"]]);
});

test("Create sends the world's house rules of the system and keeps the name the GM gave; without a name the companion is given the default one", async () => {
  const { methods } = encounterMethods();
  const t = makeTable({ methods });
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CRIT-MODS": false }, "power-pool": { other: true } });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid], "Vault");
  const created = t.daemon.calls.filter((c) => c.method === "encounter.create");
  assert.deepEqual(created[0].params, { system: "revised-2e", name: "Vault", options: { "H-2E-CRIT-MODS": false } });
  assert.equal(ctl.meta.name, "Vault");
  await ctl.create([t.tokens.ulcenToken.uuid]);
  assert.equal(t.daemon.calls.filter((c) => c.method === "encounter.create")[1].params.name, "Psionic combat");
});

test("without an encounter, Add selected sends nothing and says there is none, and the companion is not asked for its state", async () => {
  const t = makeTable({ methods: encounterMethods().methods });
  await assert.rejects(t.clients.gm.svc.encounters.add([t.tokens.ulcenToken.uuid]), (e) => e.key === "MINDSCAPE.Error.NoEncounter");
  assert.equal(adds(t).length, 0);
  assert.equal(await t.clients.gm.svc.encounters.state(), null);
  assert.deepEqual(t.daemon.calls.filter((c) => c.method.startsWith("encounter.")), []);
});

test("Add selected names a creature already in by its token, and tells the GM what the companion warned of a sheet it added, by the token's name", async () => {
  const { t, ctl } = await encounter({ "encounter.add": ({ combatant }) => ({ combatant_id: combatant.data.actor._id, revision: 1, warnings: ["read as 0"] }) });
  const warned = t.clients.gm.notes.warn.length;
  const double = t.world.token({ id: "tokU3", name: "Ulcen's double", actor: t.actors.ulcen, actorLink: true });
  await ctl.add([double.uuid, t.tokens.goblinToken.uuid]);
  assert.equal(t.clients.gm.notes.info.at(-1), "Already in the encounter, so not added again: Ulcen's double.");
  assert.match(t.clients.gm.notes.warn.slice(warned).join("\n"), /Goblin: read as 0/);
});

test("a creature added by one of its linked actor's tokens is that token: the panel and a refresh name it as the token is named", async () => {
  const t = makeTable({ methods: encounterMethods().methods });
  const ctl = t.clients.gm.svc.encounters;
  const double = t.world.token({ id: "tokU3", name: "Ulcen's double", actor: t.actors.ulcen, actorLink: true });
  await ctl.create([double.uuid], "Vault");
  const { encounterView } = await import("../mindscape/scripts/encounter.js");
  assert.deepEqual(encounterView(await ctl.state(), ctl.meta).combatants.map((c) => c.name), ["Ulcen's double"]);
  assert.deepEqual((await ctl.refresh()).map((r) => r.name), ["Ulcen's double"]);
});

test("Add selected with no token selected says to select them", async () => {
  const { t, ctl } = await encounter();
  await ctl.add([]);
  assert.equal(adds(t).length, 2);
  assert.deepEqual(t.clients.gm.notes.info, ["Select the tokens to add first."]);
});

test("Resolve anyway says whom it went without, and a step with no exchange (no card) what the companion did", async () => {
  const { t, ctl } = await encounter({
    "encounter.resolve": () => ({ round: 1, results: [], events: [], summary: "Round 1: nothing happens.", rolls: [], updates: [], revision: 3 }),
  });
  await ctl.resolve({ force: true });
  assert.equal(t.clients.gm.ChatMessage.created.length, 0);
  assert.deepEqual(t.clients.gm.notes.info, [
    "Resolved without waiting for Ulcen of Tyr, Fenka: a missing choice counts as no attack and no defense.",
    "No exchange to post: Round 1: nothing happens.",
  ]);
});

test("a resolve with every choice made and an exchange to post says nothing more: the card says it", async () => {
  const { t, ctl } = await encounter();
  await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  await ctl.declare("fenka-tokF", {});
  await ctl.resolve();
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
  assert.deepEqual(t.clients.gm.notes.info, []);
});

test("Resolve anyway asks the companion to go on without the missing choices; Resolve does not", async () => {
  const { t, ctl } = await encounter();
  await ctl.resolve({ force: true });
  await ctl.declare("ulcen", {});
  await ctl.declare("fenka-tokF", {});
  await ctl.resolve();
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "encounter.resolve").map((c) => c.params.force ?? false), [true, false]);
});

test("an undo the rules refuse for another reason is not told as nothing to undo: the refusal goes on to the GM", async () => {
  const { t, ctl } = await encounter({
    "encounter.undo": () => { throw { code: 4001, message: "The rules forbid it", data: { rule: "undo-blocked", detail: "a later step depends on it" } }; },
  });
  await assert.rejects(ctl.undo(), (error) => error.data?.rule === "undo-blocked");
  assert.deepEqual(t.clients.gm.notes.info, []);
});

test("an undo whose card cannot be marked (deleted meanwhile) still takes the step back", async () => {
  const { t, ctl } = await encounter({ "encounter.undo": () => ({ revision: 9, undone: 5, updates: [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.psp": 40 } }] }) });
  await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  await ctl.declare("fenka-tokF", {});
  await ctl.resolve();
  const [card] = t.clients.gm.ChatMessage.created;
  card.update = async () => { throw new Error("no such message"); };
  const warn = console.warn;
  console.warn = () => {};
  try {
    assert.equal((await ctl.undo()).undone, 5);
  } finally {
    console.warn = warn;
  }
  assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 40);
});

test("a resolve asked for with or without physical dice goes so, whatever the world's setting", async () => {
  const { t, ctl } = await encounter();
  await ctl.resolve({ force: true, physical: true });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  await ctl.resolve({ force: true, physical: false });
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "encounter.resolve").map((c) => c.params.dice ?? null), [{}, null]);
});

test("Undo step with nothing to undo says so, not that the rules forbid it", async () => {
  const { t, ctl } = await encounter({
    "encounter.undo": () => { throw { code: 4001, message: "The rules forbid it", data: { rule: "undo-needs-a-resolved-step", detail: "the encounter has no resolved step left to undo" } }; },
  });
  // The rule's id is kept for the GM's console (never shown in a notice).
  const logged = [];
  const info = console.info;
  console.info = (...args) => logged.push(args.join(" "));
  try {
    assert.equal(await ctl.undo(), null);
  } finally {
    console.info = info;
  }
  assert.deepEqual(t.clients.gm.notes.info, ["Nothing to undo: no resolved step is left to take back."]);
  assert.deepEqual(t.clients.gm.notes.error, []);
  assert.deepEqual(logged, ["mindscape | encounter.undo refused by the rule undo-needs-a-resolved-step: the encounter has no resolved step left to undo"]);
});

test("an undo marks the cards of the step it took back, and only those; the card then shows it is undone", async () => {
  const { t, ctl, enc } = await encounter({ "encounter.undo": () => ({ revision: 9, undone: 5, updates: [] }) });
  const step = async () => {
    await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
    await ctl.declare("fenka-tokF", {});
    await ctl.resolve();
  };
  await step();
  await step();
  const [first, second] = t.clients.gm.ChatMessage.created;
  // Each card names its encounter and the revision of its step.
  assert.deepEqual(first.flags.mindscape, { card: "exchange", system: "revised-2e", outcome: "hit", encounter: "enc1", revision: 5 });
  assert.equal(second.flags.mindscape.revision, enc.revision);
  await ctl.undo();
  assert.deepEqual(first.updates, [{ "flags.mindscape.undone": true }]);
  assert.deepEqual(second.updates, []);
  assert.equal(first.flags.mindscape.undone, true);

  // Rendered (on every client), the marked card says it was undone; the other does not.
  const shown = (message) => {
    const card = fakeCard();
    onRenderChatMessage(t.clients.gm.svc, message, { querySelector: (s) => (s === ".mindscape-card" ? card : null) });
    return card;
  };
  const marked = shown(first);
  assert.ok(marked.classList.has("undone"));
  assert.deepEqual(marked.prepended.map((p) => [p.className, p.textContent]), [["mindscape-undone", "Undone: the GM took this step back (Undo step)."]]);
  const kept = shown(second);
  assert.equal(kept.classList.has("undone"), false);
  assert.deepEqual(kept.prepended, []);
});

/** Just enough of a card element for the chat hook (and `document.createElement` for its mark). */
function fakeCard() {
  globalThis.document ??= { createElement: () => ({ className: "", textContent: "" }) };
  const classes = new Set();
  return {
    dataset: {}, prepended: [],
    classList: { add: (c) => classes.add(c), has: (c) => classes.has(c), toggle: (c) => (classes.has(c) ? classes.delete(c) : classes.add(c)) },
    querySelectorAll: () => [],
    prepend(el) { this.prepended.push(el); },
  };
}

test("a psionic wave's further targets leave out the creature chosen as its target, following the target select", () => {
  const listeners = [];
  const target = { value: "b", addEventListener: (type, fn) => listeners.push([type, fn]) };
  const boxes = ["b", "c"].map((value) => {
    const label = { hidden: false };
    return { value, checked: value === "b", label, closest: () => label };
  });
  const list = { hidden: false, querySelectorAll: () => boxes };
  const root = { querySelector: (s) => ({ "select[name=target]": target, ".mindscape-wave-targets": list })[s] ?? null };
  followTarget(root);
  assert.deepEqual(boxes.map((b) => [b.value, b.label.hidden, b.checked]), [["b", true, false], ["c", false, false]]);
  assert.equal(list.hidden, false);
  target.value = "c";
  for (const [type, fn] of listeners) if (type === "change") fn();
  assert.deepEqual(boxes.map((b) => [b.value, b.label.hidden]), [["b", false], ["c", true]]);
  // Only two others, the target one of them: nobody else is left to strike, no list.
  boxes.pop();
  target.value = "b";
  followTarget(root);
  assert.equal(list.hidden, true);
});
