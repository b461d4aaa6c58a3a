// The attack flow across three clients (GM, two players) over the fakes: only the GM's
// client calls the daemon; the defender's owner is asked secretly; the daemon's updates
// land on the right documents; the card carries the daemon's dice in the world's roll mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultMethods, makeTable } from "../test-support/scenario.mjs";
import { FakeRoll, tick } from "../test-support/fakes.mjs";

const VARIANTS = [
  { generation: 12, passQuerySender: false, name: "v12 (module socket)" },
  { generation: 13, passQuerySender: true, name: "v13 (queries naming the sender)" },
  { generation: 13, passQuerySender: false, name: "v13 (queries, the sender named by the server's userQuery event)" },
  { generation: 13, passQuerySender: false, userQueryEvent: false, name: "v13 (queries whose sender nothing names: socket fallback)" },
];

for (const { generation, passQuerySender, userQueryEvent = true, name } of VARIANTS) {
  test(`${name}: a player's attack is resolved by the GM's client and written back to linked and unlinked actors`, async () => {
    const t = makeTable({
      generation,
      passQuerySender,
      userQueryEvent,
      dialogs: {
        p1: { attackDialog: { mode: "mind-thrust", multiplier: "4", range: "short", physical: false } },
        p2: { defenseDialog: { mode: "thought-shield", remember: true } },
      },
    });
    FakeRoll.made = [];
    const outcome = await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
    assert.equal(outcome.length, 1);
    assert.equal(outcome[0].outcome, "hit");

    // The player saw the exact odds the daemon computed, in the dialog.
    const shown = t.clients.p1.dialogs.seen.find((s) => s.kind === "attackDialog").arg.odds;
    assert.deepEqual(shown.outcomes.map((o) => [o.name, o.percent]), [["hit", "55.00%"], ["miss", "45.00%"]]);

    // Fenka's owner (p2) was asked, secretly: the attacker's client never saw the question.
    assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
    assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);

    const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
    assert.deepEqual(resolve.params.attack, { mode: "mind-thrust", multiplier: 4, range: "short" });
    assert.deepEqual(resolve.params.defense, { mode: "thought-shield" });
    assert.equal(resolve.params.attacker.adapter, "foundry.dnd5e");
    // The token's uuid and link address the write-back; its name names the combatant.
    assert.deepEqual(resolve.params.defender.data.token, { uuid: t.tokens.fenkaToken.uuid, actorLink: false, name: "Fenka" });

    // Linked attacker: the world actor changed. Unlinked defender: its synthetic actor
    // changed and the base actor (every other copy) did not.
    assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 32);
    assert.equal(t.tokens.fenkaToken.actor.flags.mindscape["revised-2e"].psp, 19);
    assert.equal(t.actors.fenka.flags.mindscape["revised-2e"].psp, 30);
    // The chosen defense is remembered on the defender for next time.
    assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense["revised-2e"], "thought-shield");

    // One chat card, created on the GM's client, with the daemon's dice as rolls.
    const [message] = t.clients.gm.ChatMessage.created;
    assert.equal(message.options.rollMode, "publicroll");
    assert.match(message.data.content, /Ulcen of Tyr/);
    assert.match(message.data.content, /Hit/);
    assert.deepEqual(FakeRoll.made.map((r) => r.formula), ["1d20", "2d6"]);
    assert.deepEqual(FakeRoll.made[1].terms[0].results.map((r) => r.result), [6, 5]);

    // The hook fired on the GM's client with the result and both actors.
    const hook = t.clients.gm.Hooks.called.find((c) => c.name === "mindscape.resolved");
    assert.equal(hook.args[0].result.outcome, "hit");
    assert.equal(hook.args[0].defender, t.tokens.fenkaToken.actor);

    // Players' clients never called the daemon (their fetch throws); the GM's did.
    assert.ok(t.daemon.calls.length > 0);
  });
}

test("an NPC defender is asked on the GM's client, and the world's roll mode is honoured", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  await t.clients.gm.game.settings.set("mindscape", "rollMode", "blindroll");
  const outcome = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "ego-whip", multiplier: 2, range: "medium" } });
  assert.equal(outcome[0].outcome, "hit");
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(t.clients.gm.ChatMessage.created[0].options.rollMode, "blindroll");
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolve.params.attack, { mode: "ego-whip", multiplier: 2, range: "medium" });
  assert.deepEqual(resolve.params.defense, { mode: "mind-blank" });
});

test("each combatant goes to the companion with its token's name, which an unlinked copy's own actor does not carry", async () => {
  // Foundry's synthetic actor of an unlinked token keeps its base actor's name: the
  // "Skum" on the scene is an actor named "Goblin". The companion names the combatant by
  // the token's name sent beside it (docs/ADAPTERS.md), so its summary names the Skum.
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  const skum = t.world.token({ id: "tokS", name: "Skum", actor: t.actors.goblin, actorLink: false });
  assert.equal(skum.actor.name, "Goblin");
  await t.clients.gm.svc.odds({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuid: skum.uuid, attack: { mode: "mind-thrust" } }, t.clients.gm.game.user);
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [skum.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  for (const method of ["exchange.odds", "exchange.resolve"]) {
    const { params } = t.daemon.calls.find((c) => c.method === method);
    assert.deepEqual(params.defender.data.token, { uuid: skum.uuid, actorLink: false, name: "Skum" }, method);
    assert.equal(params.defender.data.actor.name, "Goblin");
    assert.equal(params.attacker.data.token.name, "Ulcen of Tyr");
  }
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Skum/);
});

test("a defender who does not answer in time gets the remembered default", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: async () => { await tick(50); return { mode: "thought-shield" }; } } } });
  // The stored default is what the owner used last time; the timeout is short.
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 0);
  t.clients.gm.svc.defenseGraceMs = 10;
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolve.params.defense, { mode: "mind-blank" });
});

test("players may not start attacks when the world forbids it, and are told why", async () => {
  const t = makeTable({ dialogs: { p1: { attackDialog: { mode: "mind-thrust" } } } });
  await t.clients.gm.game.settings.set("mindscape", "playersMayAttack", false);
  const outcome = await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  assert.equal(outcome, null);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 0);
  // Ann owns Ulcen: the reason is the world setting, not ownership.
  assert.match(t.clients.p1.notes.error[0], /^The GM has not allowed players to start psionic attacks \(Ulcen of Tyr\)/);
  assert.doesNotMatch(t.clients.p1.notes.error[0], /owners/);
  // A player who does not own the attacker is still told about ownership.
  await t.clients.p2.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust" } });
  assert.match(t.clients.p2.notes.error[0], /Only the GM and the owners/);
  // The refusal is the player's to hear of.
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("a world that forbids players' attacks leaves the GM's own attacks alone", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  await t.clients.gm.game.settings.set("mindscape", "playersMayAttack", false);
  const outcome = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(outcome[0].outcome, "hit");
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("a player cannot attack with an actor they do not own, whatever the payload claims", async () => {
  const t = makeTable();
  // p2 asks the GM to attack with Ulcen (owned by p1) and claims to be p1 in the payload.
  const err = await t.clients.p2.svc.relay.toGM("attack", { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust" }, sender: "pl0001", user: "pl0001" }).catch((e) => e);
  assert.equal(err.name, "PermissionDeniedError");
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 0);
  // The refusal is the player's to hear of: the GM's browser shows nothing of it.
  assert.deepEqual(t.clients.gm.notes.error, []);
});

test("the GM's attack on several targets resolves them in turn with the attacker's current PSPs", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: null } }, gm: { defenseDialog: { mode: null } } } });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 4 } });
  const resolves = t.daemon.calls.filter((c) => c.method === "exchange.resolve");
  assert.equal(resolves.length, 2);
  // One exchange against each target, in the order given.
  assert.deepEqual(resolves.map((c) => c.params.defender.data.token.name), ["Fenka", "Goblin"]);
  assert.equal(resolves[0].params.attacker.data.actor.flags.mindscape["revised-2e"].psp, 40);
  assert.equal(resolves[1].params.attacker.data.actor.flags.mindscape["revised-2e"].psp, 32);
  assert.equal(resolves[0].params.defense, null);
  assert.equal(t.actors.ulcen.flags.mindscape["revised-2e"].psp, 24);
  assert.equal(t.clients.gm.ChatMessage.created.length, 2);
});

test("an attack sent without saying whether its dice are physical follows the world's setting: the GM types them", async () => {
  const { revisedResult } = await import("../test-support/scenario.mjs");
  const resolve = (params) => {
    if (!params.dice?.attack?.length) throw { code: 4002, message: "Dice needed", data: { purpose: "attack", sides: 20, needed: 1 } };
    return revisedResult(params);
  };
  const t = makeTable({ methods: defaultMethods({ "exchange.resolve": resolve }), dialogs: { gm: { defenseDialog: { mode: null }, diceDialog: [[17]] } } });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  const out = await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(out[0].outcome, "hit");
  assert.equal(t.clients.gm.dialogs.seen.filter((x) => x.kind === "diceDialog").length, 1);
  assert.deepEqual(t.daemon.calls.filter((c) => c.method === "exchange.resolve").at(-1).params.dice, { attack: [17] });
});

test("a sheet warning the companion gives for a place in the exchange names the creature there", async () => {
  const { revisedResult } = await import("../test-support/scenario.mjs");
  const t = makeTable({
    methods: defaultMethods({ "exchange.resolve": (params) => ({ ...revisedResult(params), warnings: ["/defender: no Wisdom on the sheet; 10 assumed"] }) }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /Goblin: no Wisdom on the sheet; 10 assumed/);
});

test("a request with no GM online gets a clear message", async () => {
  const t = makeTable({ dialogs: { p1: { attackDialog: { mode: "mind-thrust" } } } });
  Object.getPrototypeOf(t.clients.p1.game.users.get("gm0000")).active = false;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  assert.match(t.clients.p1.notes.error[0], /No GM is connected/);
});

test("a failed adapters.list is not cached: the next call asks again and uses the answer", async () => {
  let fail = true;
  const t = makeTable({
    methods: (await import("../test-support/scenario.mjs")).defaultMethods({
      "adapters.list": () => { if (fail) throw { code: -32603, message: "not ready" }; return [{ id: "foundry.dnd5e", vtt: "foundry" }, { id: "foundry.ose", vtt: "foundry" }]; },
    }),
  });
  t.clients.gm.game.system.id = "ose";
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.ose");
  fail = false;
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.ose");
  fail = true;
  // Once answered, the list is kept for the session.
  t.clients.gm.game.system.id = "pf2e";
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.generic");
  assert.equal(t.daemon.calls.filter((c) => c.method === "adapters.list").length, 2);
  assert.deepEqual(t.clients.gm.svc.adaptersCache.map((a) => a.id), ["foundry.dnd5e", "foundry.ose"]);
});

test("the attack dialog offers the attacks the attacker knows, names the attacker's and targets' tokens, lets the multiplier go up to its level and shows the companion's warnings about its sheet", async () => {
  const base = defaultMethods();
  const t = makeTable({
    methods: defaultMethods({ "adapters.import": (p) => ({ ...base["adapters.import"](p), warnings: ["no Wisdom on the sheet: 10 assumed"] }) }),
    dialogs: { p1: { attackDialog: null } },
  });
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.attacks": ["ego-whip"] });
  t.tokens.ulcenToken.name = "Ulcen on the wall";
  t.tokens.fenkaToken.name = "Fenka in the mist";
  assert.equal(await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] }), null);
  const { context } = t.clients.p1.dialogs.seen.find((s) => s.kind === "attackDialog").arg;
  assert.deepEqual(context.attacks.map((m) => m.id), ["ego-whip"]);
  assert.equal(context.attackerName, "Ulcen on the wall");
  assert.deepEqual(context.targets, [{ uuid: t.tokens.fenkaToken.uuid, name: "Fenka in the mist" }]);
  assert.deepEqual(context.multipliers.map((m) => m.value), [1, 2, 3, 4]);
  assert.deepEqual(context.warnings, ["no Wisdom on the sheet: 10 assumed"]);
});

test("an attacker that knows no attack mode, or an attack prepared with no target, is refused before the dialog opens", async () => {
  const t = makeTable({ dialogs: { p1: { attackDialog: null } } });
  const refused = (payload) => t.clients.p1.svc.relay.toGM("prepare", payload).then(() => null, (error) => error.key);
  assert.equal(await refused({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [] }), "MINDSCAPE.Error.NoTarget");
  await t.actors.ulcen.update({ "flags.mindscape.revised-2e.attacks": [] });
  assert.equal(await refused({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] }), "MINDSCAPE.Error.NoAttackModes");
  assert.equal(t.clients.p1.dialogs.seen.length, 0);
});

test("odds asked with targetUuids null take it as no list, as prepare and attack do: the odds against targetUuid, or no target refused", async () => {
  const t = makeTable();
  const odds = (payload) => t.clients.p1.svc.relay.toGM("odds", { attackerUuid: t.tokens.ulcenToken.uuid, attack: { mode: "mind-thrust", multiplier: "1", range: "short" }, ...payload });
  const view = await odds({ targetUuid: t.tokens.fenkaToken.uuid, targetUuids: null });
  assert.deepEqual(view.outcomes.map((o) => o.name), ["hit", "miss"]);
  const sent = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.equal(sent.length, 1);
  assert.equal(sent[0].params.defender.data.token.uuid, t.tokens.fenkaToken.uuid);
  assert.equal(await odds({ targetUuids: null }).then(() => null, (error) => error.key), "MINDSCAPE.Error.NoTarget");
  assert.equal(await t.clients.p1.svc.relay.toGM("prepare", { attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: null }).then(() => null, (error) => error.key), "MINDSCAPE.Error.NoTarget");
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.odds").length, 1);
});

test("an adapter the companion lists without naming its VTT is one Foundry may use; one for another VTT is not", async () => {
  const t = makeTable({
    methods: defaultMethods({ "adapters.list": () => [{ id: "foundry.pf2e" }, { id: "foundry.ose", vtt: "roll20" }] }),
  });
  t.clients.gm.game.system.id = "pf2e";
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.pf2e");
  t.clients.gm.game.system.id = "ose";
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.generic");
});

test("a world read through foundry.generic sends the world's mapping with each combatant", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  t.clients.gm.game.system.id = "pf2e";
  const mapping = { version: 1, fields: { level: "system.details.level.value" } };
  await t.clients.gm.game.settings.set("mindscape", "genericMapping", mapping);
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1, range: "short" } });
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.equal(resolve.params.attacker.adapter, "foundry.generic");
  assert.deepEqual(resolve.params.attacker.data.mapping, mapping);
  assert.deepEqual(resolve.params.defender.data.mapping, mapping);
});

test("an attack without target uuids strikes the tokens this user targets; with none targeted the user is told to target one and nothing is sent", async () => {
  const t = makeTable({ dialogs: { gm: { defenseDialog: { mode: null } } } });
  const gm = t.clients.gm;
  gm.game.user.targets = new Set();
  assert.equal(await gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, attack: { mode: "mind-thrust", multiplier: 1 } }), null);
  assert.deepEqual(gm.notes.error, ["Target at least one token first (hover a token and press T, or right-click › target)."]);
  assert.equal(t.daemon.calls.filter((c) => c.method.startsWith("exchange.")).length, 0);
  // Foundry's targets are the tokens' placeables, whose documents have the uuids.
  gm.game.user.targets = new Set([{ document: t.tokens.goblinToken }]);
  await gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, attack: { mode: "mind-thrust", multiplier: 1 } });
  const [resolve] = t.daemon.calls.filter((c) => c.method === "exchange.resolve");
  assert.equal(resolve.params.defender.data.token.uuid, t.tokens.goblinToken.uuid);
});

test("the attack dialog names every target, and its odds are for the target it names", async () => {
  const dialogs = { p1: { attackDialog: null } };
  const t = makeTable({ dialogs });
  dialogs.p1.attackForm = { mode: "mind-thrust", multiplier: "1", range: "short", target: t.tokens.goblinToken.uuid };
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid] });
  assert.equal(t.clients.p1.dialogs.seen.find((s) => s.kind === "attackDialog").arg.context.targetNames, "Fenka, Goblin");
  const odds = t.daemon.calls.filter((c) => c.method === "exchange.odds");
  assert.equal(odds.length, 1);
  assert.equal(odds[0].params.defender.data.token.uuid, t.tokens.goblinToken.uuid);
});

test("the attack dialog opens on the first mode, a multiplier of 1, the first range, and physical dice as this client rolls them", async () => {
  const t = makeTable({ dialogs: { p1: { attackDialog: null } } });
  await t.clients.p1.game.settings.set("mindscape", "physicalDice", true);
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid] });
  const { context } = t.clients.p1.dialogs.seen.find((s) => s.kind === "attackDialog").arg;
  assert.deepEqual(context.attacks.map((m) => [m.id, m.selected]), [["mind-thrust", true], ["ego-whip", false]]);
  assert.deepEqual(context.multipliers.map((m) => m.value), Array.from({ length: context.multipliers.length }, (_, i) => i + 1));
  assert.deepEqual(context.multipliers.filter((m) => m.selected).map((m) => m.value), [1]);
  assert.deepEqual(context.ranges.filter((r) => r.selected).map((r) => r.value), [context.ranges[0].value]);
  assert.equal(context.physical, true);
  // The defenses the odds may assume, by their names.
  assert.deepEqual(context.defenses.map((m) => [m.id, m.label]), [["thought-shield", "Thought shield"], ["mind-blank", "Mind blank"]]);
});

test("a player's attack with physical dice ticked in the dialog is resolved with physical dice", async () => {
  for (const physical of [true, false]) {
    const t = makeTable({ dialogs: { p1: { attackDialog: { mode: "mind-thrust", multiplier: "1", range: "short", physical } }, gm: { defenseDialog: { mode: null } } } });
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid] });
    const [resolve] = t.daemon.calls.filter((c) => c.method === "exchange.resolve");
    assert.deepEqual(resolve.params.dice, physical ? {} : undefined, String(physical));
  }
});
