// The macro API (`game.modules.get("mindscape").api`) and the module's own hooks, as a
// macro author meets them: every call docs/FOUNDRY.md names exists and nothing else,
// every `mindscape.*` hook the code fires is documented, bad input is told in words that
// say how to fix it (the call resolves to null, nothing is asked or written), and the
// encounter's writes (a step, an undo, a public action) are told to other modules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { makeApi } from "../mindscape/scripts/api.js";
import { MODULE_DIR } from "../test-support/fakes.mjs";
import { encounterMethods, makeTable } from "../test-support/scenario.mjs";

const DOCS = readFileSync(path.resolve(MODULE_DIR, "../../../docs/FOUNDRY.md"), "utf8");
const SCRIPTS = readdirSync(path.join(MODULE_DIR, "scripts")).map((f) => readFileSync(path.join(MODULE_DIR, "scripts", f), "utf8")).join("\n");

/** The docs' "Macro API" section, up to the next "## " heading. */
const macroSection = () => DOCS.slice(DOCS.indexOf("## Macro API"), DOCS.indexOf("\n## ", DOCS.indexOf("## Macro API") + 5));

const apiOf = (client, openEncounter = () => "panel") => makeApi(client.svc, { openEncounter });

test("the API has exactly the calls docs/FOUNDRY.md's Macro API shows, and the service", () => {
  const t = makeTable();
  const api = apiOf(t.clients.gm);
  const documented = new Set([...macroSection().matchAll(/\bapi\.([a-zA-Z]+)\(/g)].map((m) => m[1]));
  const functions = Object.keys(api).filter((k) => typeof api[k] === "function");
  assert.deepEqual([...documented].sort(), functions.sort());
  assert.ok(api.service === t.clients.gm.svc);
  assert.match(macroSection(), /`api\.service`/);
});

test("every mindscape.* hook the module fires is documented in the Macro API's hooks, and every documented one is fired", () => {
  const fired = new Set([...SCRIPTS.matchAll(/callAll\(\s*["'`](mindscape\.[a-zA-Z]+)["'`]/g)].map((m) => m[1]));
  // boot.js fires the ready hook under the module id.
  assert.match(SCRIPTS, /callAll\(`\$\{MODULE_ID\}\.ready`/);
  fired.add("mindscape.ready");
  const documented = new Set([...macroSection().matchAll(/Hooks\.on\("(mindscape\.[a-zA-Z]+)"/g)].map((m) => m[1]));
  assert.deepEqual([...documented].sort(), [...fired].sort());
});

test("resolve with no attacker given or controlled shows how to fix it and resolves to null, where it threw before", async () => {
  const t = makeTable();
  const gm = t.clients.gm;
  assert.equal(await apiOf(gm).resolve({ targets: [t.tokens.fenkaToken] }), null);
  assert.deepEqual(gm.notes.error, ["Select the attacking token first, or pass attacker to the macro."]);
  assert.equal(t.daemon.calls.length, 0);
});

test("an unknown or malformed uuid is named, whatever Foundry's fromUuid does with it", async () => {
  const t = makeTable();
  const gm = t.clients.gm;
  // Foundry's fromUuid throws for some malformed uuids instead of answering null.
  const fromUuid = gm.svc.env.fromUuid;
  gm.svc.env.fromUuid = async (uuid) => { if (!String(uuid).includes(".")) throw new Error(`Invalid uuid ${uuid}`); return fromUuid(uuid); };
  const api = apiOf(gm);
  assert.equal(await api.resolve({ attacker: "Scene.scene1.Token.gone", targets: [t.tokens.fenkaToken] }), null);
  assert.equal(await api.resolve({ attacker: t.tokens.ulcenToken, targets: ["garbage"] }), null);
  assert.deepEqual(gm.notes.error, [
    'No token or actor has the uuid "Scene.scene1.Token.gone": it was deleted, or it is not the uuid of a token or an actor. Pass a token, a token document, an actor or one of their uuids.',
    'No token or actor has the uuid "garbage": it was deleted, or it is not the uuid of a token or an actor. Pass a token, a token document, an actor or one of their uuids.',
  ]);
  assert.ok(!t.daemon.calls.some((c) => c.method === "exchange.resolve"));
});

test("targets may be game.user.targets itself (a Set of tokens), as a macro most often has them", async () => {
  const t = makeTable();
  const gm = t.clients.gm;
  const targets = new Set([{ document: t.tokens.fenkaToken }]);
  const outcomes = await apiOf(gm).resolve({ attacker: t.tokens.ulcenToken, targets, attack: { mode: "mind-thrust", multiplier: 2, range: "short" } });
  assert.equal(outcomes.length, 1);
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.equal(resolve.params.defender.data.token.uuid, t.tokens.fenkaToken.uuid);
  assert.deepEqual(gm.notes.error, []);
});

test("an attack a macro gets wrong is refused by field and rule before any defender is asked; the dialog's own values pass", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } }, p2: { defenseDialog: { mode: "mind-blank" } } } });
  const gm = t.clients.gm;
  const api = apiOf(gm);
  const cases = [
    [{ mode: "mind-thrust", multiplier: 2, range: "far" }, 'The attack was not made: attack.range must be "short", "medium" or "long" (got "far").'],
    [{ mode: "mind-thrust", multiplier: "two" }, 'The attack was not made: attack.multiplier must be a whole number from 1 (revised-2e) (got "two").'],
    [{ mode: "mind-thrust", multiplier: 0 }, "The attack was not made: attack.multiplier must be a whole number from 1 (revised-2e) (got 0)."],
    [{ multiplier: 2 }, 'The attack was not made: attack.mode must name the attack mode, for example "mind-thrust" (got nothing).'],
    ["mind-thrust", 'The attack was not made: attack must be an object such as { mode: "mind-thrust", multiplier: 2, range: "short" } (got "mind-thrust").'],
    // A typo, or another system's field, would be dropped and another attack made.
    [{ mode: "mind-thrust", multipler: 3 }, "The attack was not made: attack.multipler is not a field of an attack in this world's rule system (its fields: mode, multiplier, range) (got 3)."],
    [{ mode: "mind-thrust", pool_dice: 3 }, "The attack was not made: attack.pool_dice is not a field of an attack in this world's rule system (its fields: mode, multiplier, range) (got 3)."],
  ];
  for (const [attack, message] of cases) {
    gm.notes.error.length = 0;
    assert.equal(await api.resolve({ attacker: t.tokens.ulcenToken, targets: [t.tokens.fenkaToken], attack }), null, JSON.stringify(attack));
    assert.equal(gm.notes.error.length, 1);
    assert.ok(gm.notes.error[0].startsWith(message), gm.notes.error[0]);
  }
  assert.equal(t.clients.p2.dialogs.seen.length, 0, "no defender was asked");
  assert.ok(!t.daemon.calls.some((c) => c.method === "exchange.resolve"));
  // The values the dialog sends (strings from its form) pass.
  gm.notes.error.length = 0;
  const done = await api.resolve({ attacker: t.tokens.ulcenToken, targets: [t.tokens.fenkaToken], attack: { mode: "mind-thrust", multiplier: "3", range: "medium" } });
  assert.equal(done.length, 1);
  assert.deepEqual(gm.notes.error, []);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.attack, { mode: "mind-thrust", multiplier: 3, range: "medium" });
});

test("odds: called without arguments, without a target or with a bad attack, it says what is missing and resolves to null; a player's goes through the GM", async () => {
  const t = makeTable();
  const { gm, p1 } = t.clients;
  const api = apiOf(gm);
  assert.equal(await api.odds(), null);
  assert.equal(await api.odds({ attacker: t.tokens.ulcenToken, attack: { mode: "ego-whip" } }), null);
  assert.equal(await api.odds({ attacker: t.tokens.ulcenToken, target: t.tokens.fenkaToken, attack: { mode: "ego-whip", range: "near" } }), null);
  assert.deepEqual(gm.notes.error, [
    "Select the attacking token first, or pass attacker to the macro.",
    "Target at least one token first (hover a token and press T, or right-click › target).",
    'The attack was not made: attack.range must be "short", "medium" or "long" (got "near"). Nothing was asked or written; correct the macro\'s attack and try again.',
  ]);
  assert.ok(!t.daemon.calls.some((c) => c.method === "exchange.odds"));
  // Ann's macro: the GM's browser computes the odds, and the refusal of a bad attack
  // comes back to Ann's screen, not the GM's.
  gm.notes.error.length = 0;
  const view = await apiOf(p1).odds({ attacker: t.tokens.ulcenToken, target: t.tokens.fenkaToken, attack: { mode: "ego-whip", range: "short" }, assumeDefense: "mind-blank" });
  assert.ok(Array.isArray(view.outcomes) && view.outcomes.length > 0);
  assert.equal(await apiOf(p1).odds({ attacker: t.tokens.ulcenToken, target: t.tokens.fenkaToken, attack: { mode: "" } }), null);
  assert.match(p1.notes.error[0], /^The attack was not made: attack\.mode must name the attack mode/);
  assert.deepEqual(gm.notes.error, []);
  // A defense assumed that is no defense mode is Ann's own mistake, told as such: not
  // blamed on the mind struck, and nothing asked of the companion.
  const oddsCalls = t.daemon.calls.filter((c) => c.method === "exchange.odds").length;
  for (const assumeDefense of ["mind-blnak", { mode: "mind-blank" }]) {
    assert.equal(await apiOf(p1).odds({ attacker: t.tokens.ulcenToken, target: t.tokens.fenkaToken, attack: { mode: "ego-whip" }, assumeDefense }), null);
    assert.match(p1.notes.error.at(-1), /^The macro's assumeDefense must name one of this world's defense modes \(.*mind-blank.*\), or be left out for no defense \(got /);
  }
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.odds").length, oddsCalls);
});

test("a macro's argument the API cannot take is refused naming it, before anything is done: no throw, no call, no dialog", async () => {
  const t = makeTable();
  const { gm } = t.clients;
  const api = apiOf(gm);
  const said = [];
  const refused = async (call, text) => {
    assert.equal(await call(), null);
    said.push(text);
  };
  const [ulcen, fenka] = [t.tokens.ulcenToken, t.tokens.fenkaToken];
  for (const name of ["resolve", "odds", "endRound", "rest"]) {
    await refused(() => api[name](null), null);
    await refused(() => api[name]("Ulcen"), 'The macro\'s argument must be an object of named arguments, such as { attacker, targets, attack } (got "Ulcen"). Nothing was done; correct the macro and try again.');
  }
  await refused(() => api.resolve({ attacker: ulcen, targets: [fenka, null], attack: { mode: "mind-thrust" } }), "The macro's targets[1] must be a token, a token document, an actor or a uuid (got null). Nothing was done; correct the macro and try again.");
  await refused(() => api.resolve({ attacker: ulcen, targets: [fenka], attack: { mode: "mind-thrust" }, physical: "false" }), 'The macro\'s physical must be true or false (got "false"). Nothing was done; correct the macro and try again.');
  await refused(() => api.odds({ attacker: {}, target: fenka, attack: { mode: "mind-thrust" } }), "The macro's attacker[0] must be a token, a token document, an actor or a uuid (got {}). Nothing was done; correct the macro and try again.");
  await refused(() => api.endRound({ tokenUuids: [ulcen, 5] }), "The macro's tokenUuids[1] must be a token, a token document, an actor or a uuid (got 5). Nothing was done; correct the macro and try again.");
  await refused(() => api.endRound({ tokenUuids: [ulcen], choices: "close" }), 'The macro\'s choices must be an object of choices keyed by combatant id (got "close"). Nothing was done; correct the macro and try again.');
  await refused(() => api.rest({ tokenUuids: [ulcen, {}], hours: 8 }), "The macro's tokenUuids[1] must be a token, a token document, an actor or a uuid (got {}). Nothing was done; correct the macro and try again.");
  await refused(() => api.rest({ tokenUuids: [ulcen], hours: 8, dialog: "no" }), 'The macro\'s dialog must be true or false (got "no"). Nothing was done; correct the macro and try again.');
  // null is no argument at all: as a call without one (no attacker selected, no token).
  assert.deepEqual(gm.notes.error.filter((m) => m.startsWith("The macro's")), said.filter(Boolean));
  assert.deepEqual(t.daemon.calls.filter((c) => c.method.startsWith("exchange.") || c.method.startsWith("combatants.")), []);
  assert.deepEqual(Object.values(t.clients).flatMap((c) => c.dialogs.seen), []);
});

test("a player's macro may not read the odds of an actor it does not own: refused by the GM's browser, told on the player's", async () => {
  const t = makeTable();
  const { p1 } = t.clients;
  assert.equal(await apiOf(p1).odds({ attacker: t.tokens.goblinToken, target: t.tokens.fenkaToken, attack: { mode: "ego-whip" } }), null);
  assert.match(p1.notes.error[0], /^You may not do this \(Goblin\)/);
  assert.ok(!t.daemon.calls.some((c) => c.method === "exchange.odds"));
});

test("configureActor without an actor, and openEncounter from a player, say what to do and resolve to null", async () => {
  const t = makeTable();
  const { gm, p1 } = t.clients;
  assert.equal(await apiOf(gm).configureActor(), null);
  assert.deepEqual(gm.notes.error, ["Pass the actor whose psionic profile to edit (an actor, a token or one of their uuids) to configureActor."]);
  let opened = 0;
  assert.equal(apiOf(p1, () => { opened += 1; return "panel"; }).openEncounter(), null);
  assert.equal(opened, 0);
  assert.match(p1.notes.error[0], /^Only a GM may open the encounter panel\./);
  assert.equal(apiOf(gm, () => { opened += 1; return "panel"; }).openEncounter(), "panel");
  assert.equal(opened, 1);
});

// ------------------------------------------------------------------ the encounter's hooks

async function encounter(overrides = {}, system = null) {
  const { methods, enc } = encounterMethods(overrides);
  const t = makeTable({ methods });
  if (system) await t.clients.gm.game.settings.set("mindscape", "ruleSystem", system);
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
  return { t, ctl, enc };
}

const updatedHooks = (t) => t.clients.gm.Hooks.called.filter((h) => h.name === "mindscape.encounterUpdated").map((h) => h.args[0]);

test("mindscape.encounterUpdated: once per resolved step, with its cards, also for a step without an exchange", async () => {
  const { t, ctl } = await encounter();
  await ctl.declare("ulcen", { attack: { mode: "ego-whip", multiplier: 1, range: "short", target: "fenka-tokF" } });
  await ctl.declare("fenka-tokF", {});
  assert.deepEqual(updatedHooks(t), [], "a hidden choice is not told");
  const answer = await ctl.resolve();
  const [step] = updatedHooks(t);
  assert.equal(step.kind, "step");
  assert.equal(step.encounter, "enc1");
  assert.equal(step.system, "revised-2e");
  assert.equal(step.revision, answer.revision);
  assert.equal(step.result, answer);
  assert.deepEqual(step.messages.map((m) => m.id), t.clients.gm.ChatMessage.created.map((m) => m.id));
  assert.ok(Array.isArray(step.updates));
  // The per-exchange hook still fires for each exchange.
  assert.equal(t.clients.gm.Hooks.called.filter((h) => h.name === "mindscape.resolved").length, 1);

  const quiet = await encounter({ "encounter.resolve": () => ({ round: 1, results: [], events: [], summary: "Round 1: nothing happens.", rolls: [], updates: [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.psp": 36 } }], revision: 3 }) });
  await quiet.ctl.resolve({ force: true });
  const [only] = updatedHooks(quiet.t);
  assert.equal(only.kind, "step");
  assert.deepEqual(only.messages, []);
  assert.deepEqual(only.updates, [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.psp": 36 } }]);
  assert.equal(quiet.t.actors.ulcen.flags.mindscape["revised-2e"].psp, 36);
});

test("mindscape.encounterUpdated: an undo, with the revision it took back and the write-back that restored the sheets", async () => {
  const restore = [{ uuid: "Actor.ulcen", update: { "flags.mindscape.revised-2e.psp": 40 } }];
  const { t, ctl } = await encounter({ "encounter.undo": () => ({ revision: 9, undone: 5, updates: restore }) });
  await ctl.undo();
  const [undo] = updatedHooks(t);
  assert.equal(undo.kind, "undo");
  assert.equal(undo.undone, 5);
  assert.equal(undo.revision, 9);
  assert.deepEqual(undo.updates, restore);
  assert.deepEqual(undo.messages, []);
});

test("mindscape.encounterUpdated: a power-pool public action, with who declared it", async () => {
  const writes = [{ uuid: "Actor.ulcen", update: { "flags.mindscape.power-pool.controlling": [] } }];
  const { t, ctl } = await encounter({ "encounter.declare": () => ({ revision: 8, waiting_for: [], summary: "Ulcen of Tyr releases Fenka.", updates: writes }) }, "power-pool");
  await ctl.declare("ulcen", { release: "fenka-tokF" });
  const [action] = updatedHooks(t);
  assert.equal(action.kind, "action");
  assert.equal(action.combatant, "ulcen");
  assert.equal(action.system, "power-pool");
  assert.deepEqual(action.updates, writes);
  // A hidden attack declared in power-pool is not told.
  await ctl.declare("fenka-tokF", { attack: { mode: "ego-whip", target: "ulcen" } });
  assert.equal(updatedHooks(t).length, 1);
});

test("mindscape.encounterUpdated: a step, undo or public action that finishes after End, or after a new encounter replaced its own, names the encounter it was asked of", async () => {
  // The companion answers `method` only once the GM has pressed End (or created another encounter).
  const slowly = async (method, system, answer, meanwhile) => {
    let release;
    const answered = new Promise((resolve) => { release = resolve; });
    let asked;
    const asking = new Promise((resolve) => { asked = resolve; });
    const { methods } = encounterMethods();
    const base = methods[method];
    const t = makeTable({ methods: { ...methods, [method]: async (p) => { const out = answer ? answer() : base(p); asked(); await answered; return out; } } });
    if (system) await t.clients.gm.game.settings.set("mindscape", "ruleSystem", system);
    const ctl = t.clients.gm.svc.encounters;
    await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Vault");
    return { t, ctl, asking, release, meanwhile: () => meanwhile(t, ctl) };
  };
  const end = (t, ctl) => ctl.end();
  const replace = async (t, ctl) => {
    await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
    await ctl.create([t.tokens.ulcenToken.uuid], "Next");
  };
  const cases = [
    ["a step, End", "encounter.resolve", null, null, end, (ctl) => ctl.resolve({ force: true })],
    ["a step, a new encounter", "encounter.resolve", null, null, replace, (ctl) => ctl.resolve({ force: true })],
    ["an undo, End", "encounter.undo", null, () => ({ revision: 9, undone: 5, updates: [] }), end, (ctl) => ctl.undo()],
    ["an undo, a new encounter", "encounter.undo", null, () => ({ revision: 9, undone: 5, updates: [] }), replace, (ctl) => ctl.undo()],
    ["a public action, End", "encounter.declare", "power-pool", () => ({ revision: 8, waiting_for: [], summary: "Ulcen of Tyr releases Fenka.", updates: [] }), end, (ctl) => ctl.declare("ulcen", { release: "fenka-tokF" })],
    ["a public action, a new encounter", "encounter.declare", "power-pool", () => ({ revision: 8, waiting_for: [], summary: "Ulcen of Tyr releases Fenka.", updates: [] }), replace, (ctl) => ctl.declare("ulcen", { release: "fenka-tokF" })],
  ];
  for (const [name, method, system, answer, meanwhile, run] of cases) {
    const s = await slowly(method, system, answer, meanwhile);
    const running = run(s.ctl);
    await s.asking;
    await s.meanwhile();
    s.release();
    await running;
    const told = updatedHooks(s.t);
    assert.deepEqual(told.map((h) => [h.encounter, h.system]), [["enc1", system ?? "revised-2e"]], name);
  }
});
