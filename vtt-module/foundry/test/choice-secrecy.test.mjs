// A defense is secret until its exchange is resolved: nothing another player's client
// reads may tell it before then. An actor's data, flags included, reaches every client
// that has the actor (the attacker's player's too), so the defense remembered as the
// defender's default is written only once the exchange is resolved.
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultMethods, encounterMethods, makeTable, revisedResult } from "../test-support/scenario.mjs";

/**
 * The table, with a companion that notes, as `exchange.resolve` is called (the defense
 * chosen, the exchange not yet resolved), what the attacker's player's client reads of
 * Fenka's actor: its flags, and every update made to it so far.
 */
function watchedTable(overrides = {}) {
  const seen = [];
  let t = null;
  const methods = defaultMethods({
    "exchange.resolve": async (params) => {
      const actor = await t.clients.p1.fromUuid(t.tokens.fenkaToken.actor.uuid);
      seen.push({ flags: structuredClone(actor.flags), updates: structuredClone(actor.updates) });
      return revisedResult(params);
    },
    ...overrides,
  });
  t = makeTable({
    methods,
    dialogs: {
      p1: { attackDialog: { mode: "mind-thrust", multiplier: "4", range: "short", physical: false } },
      p2: { defenseDialog: { mode: "thought-shield", remember: true } },
    },
  });
  return { t, seen };
}

test("the defense chosen is not in the defender's actor data before its exchange is resolved; it is remembered after", async () => {
  const { t, seen } = watchedTable();
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  const resolve = t.daemon.calls.find((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolve.params.defense, { mode: "thought-shield" });
  assert.equal(seen.length, 1);
  // (the profile's list of the defenses it knows is no secret; the one chosen is)
  assert.equal(seen[0].flags.mindscape.defaultDefense, undefined, "the attacker's player could read the defense before the exchange was resolved");
  assert.deepEqual(seen[0].updates, []);
  // Once resolved, it is the defender's default for the next attack.
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense["revised-2e"], "thought-shield");
});

test("a defense whose exchange the companion refuses is never written to the defender's actor", async () => {
  const { t, seen } = watchedTable({
    "exchange.resolve": () => { throw { code: 4001, message: "Rules violation", data: { rule: "target-not-present", detail: "gone" } }; },
  });
  await t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } }).catch(() => null);
  assert.ok(t.daemon.calls.some((c) => c.method === "exchange.resolve"), "the defense was chosen and the exchange asked for");
  assert.deepEqual(t.tokens.fenkaToken.actor.updates, []);
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("an actor every player owns only by its default ownership is answered by the GM, not by the attacker's own player", async () => {
  const t = makeTable({
    dialogs: {
      gm: { defenseDialog: { mode: "mind-blank" } },
      p1: { defenseDialog: { mode: "thought-shield" } },
      p2: { defenseDialog: { mode: "thought-shield" } },
    },
  });
  // "All Players: Owner" on the goblin (and so on its unlinked token's actor).
  t.actors.goblin.ownership.default = 3;
  t.tokens.goblinToken.actor.ownership.default = 3;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  for (const player of ["p1", "p2"]) {
    assert.equal(t.clients[player].dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0, `${player} was asked the goblin's defense`);
  }
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a player the actor's ownership names as an owner is still asked its defense", async () => {
  const t = makeTable({ dialogs: { p2: { defenseDialog: { mode: "mind-blank" } } } });
  t.actors.fenka.ownership.default = 3;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a default that cannot be written after the exchange is resolved leaves the exchange resolved", async () => {
  const { t } = watchedTable();
  const actor = t.tokens.fenkaToken.actor;
  const update = actor.update.bind(actor);
  actor.update = async (data) => {
    if (Object.keys(data).some((key) => key.includes("defaultDefense"))) throw new Error("refused");
    return update(data);
  };
  const warned = [];
  const warn = console.warn;
  console.warn = (...args) => warned.push(args.join(" "));
  try {
    await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid] });
  } finally {
    console.warn = warn;
  }
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 1);
  assert.equal(t.clients.gm.ChatMessage.created.length, 1, "the exchange's card was posted");
  assert.equal(actor.flags.mindscape?.defaultDefense, undefined);
  assert.ok(warned.some((w) => w.includes("could not be kept as the default")), warned.join("\n"));
});

test("a player who owns an actor only by its default ownership cannot declare its encounter choice; a player its ownership names can", async () => {
  const { methods, enc } = encounterMethods();
  const t = makeTable({ methods });
  const ctl = t.clients.gm.svc.encounters;
  await ctl.create([t.tokens.ulcenToken.uuid, t.tokens.fenkaToken.uuid], "Duel");
  // "All Players: Owner" on Fenka (and so on her unlinked token's actor): Ann (p1, Ulcen's
  // player) owns her too, but is not asked her choices, and may not declare them either.
  t.actors.fenka.ownership.default = 3;
  t.tokens.fenkaToken.actor.ownership.default = 3;
  const revision = enc.revision;
  const from = t.daemon.calls.length;
  const form = { attackMode: "", defenseMode: "mind-blank" };
  const outcome = await t.clients.p1.svc.relay.toGM("encounterDeclare", { combatantId: "fenka-tokF", form }).then((value) => ({ value }), (error) => ({ error }));
  assert.equal(outcome.error?.name, "PermissionDeniedError", `Ann declared Fenka's choice: ${JSON.stringify(outcome.value)}`);
  assert.deepEqual(t.daemon.calls.slice(from), [], "the companion is not asked anything");
  assert.equal(enc.choices.size, 0);
  assert.equal(enc.revision, revision);
  // Bo (p2), whom her ownership names, still declares it.
  await t.clients.p2.svc.relay.toGM("encounterDeclare", { combatantId: "fenka-tokF", form });
  assert.deepEqual([...enc.choices], [["fenka-tokF", { defense: { mode: "mind-blank" } }]]);
});

test("a defender the attacker's own player co-owns is asked of its other owner, not of the attacker's player", async () => {
  const t = makeTable({
    dialogs: {
      p1: { defenseDialog: { mode: "thought-shield" } },
      p2: { defenseDialog: { mode: "mind-blank" } },
    },
  });
  // Ann (p1, Ulcen's player, first among the users) and Bo (p2) both own Fenka.
  t.actors.fenka.ownership.pl0001 = 3;
  t.tokens.fenkaToken.actor.ownership.pl0001 = 3;
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0, "the attacker's player chose the defense against its own attack");
  assert.equal(t.clients.p2.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});

test("a defender whose only owner is the attacker's own player is still asked of that player", async () => {
  const t = makeTable({ dialogs: { p1: { defenseDialog: { mode: "thought-shield" } }, gm: { defenseDialog: { mode: "mind-blank" } } } });
  t.actors.fenka.ownership = { pl0001: 3 };
  t.tokens.fenkaToken.actor.ownership = { pl0001: 3 };
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "thought-shield" });
});

test("a defender every player owns by its default ownership, and the attacker's own player by name, is asked of the GM, not of the attacker's player", async () => {
  const t = makeTable({ dialogs: { p1: { defenseDialog: { mode: "thought-shield" } }, gm: { defenseDialog: { mode: "mind-blank" } } } });
  t.actors.fenka.ownership = { default: 3, pl0001: 3 };
  t.tokens.fenkaToken.actor.ownership = { default: 3, pl0001: 3 };
  await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  assert.equal(t.clients.p1.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 0, "the attacker's player chose the defense against its own attack");
  assert.equal(t.clients.gm.dialogs.seen.filter((s) => s.kind === "defenseDialog").length, 1);
  assert.deepEqual(t.daemon.calls.find((c) => c.method === "exchange.resolve").params.defense, { mode: "mind-blank" });
});
