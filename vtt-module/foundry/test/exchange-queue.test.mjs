// Simultaneous exchanges against one actor. The daemon's write-backs are absolute values
// ("flags.mindscape.revised-2e.psp": 9) computed from the actors' data as sent, so the GM's
// client resolves exchanges that share an actor one after another, each with the data the
// previous write-back left; exchanges between other actors, and the wait for defenders'
// secret choices, are not held up.
import { test } from "node:test";
import assert from "node:assert/strict";
import { KeyedQueue } from "../mindscape/scripts/queue.js";
import { defaultMethods, makeTable, revisedResult } from "../test-support/scenario.mjs";
import { tick } from "../test-support/fakes.mjs";

const attack = { mode: "mind-thrust", multiplier: 1, range: "short" };
const psp = (actor) => actor.flags.mindscape["revised-2e"].psp;

/** Daemon methods whose exchange.resolve takes `ms` and records how many overlap. */
function slowResolve(ms = 20) {
  const seen = { inFlight: 0, most: 0, order: [] };
  const methods = defaultMethods({
    "exchange.resolve": async (params) => {
      seen.inFlight += 1;
      seen.most = Math.max(seen.most, seen.inFlight);
      seen.order.push(`${params.attacker.data.actor.name} -> ${params.defender.data.actor.name}`);
      await tick(ms);
      seen.inFlight -= 1;
      return revisedResult(params);
    },
  });
  return { seen, methods };
}

// ------------------------------------------------------------------ the queue itself

test("queue: tasks on one key run one after another, in the order they were queued", async () => {
  const q = new KeyedQueue();
  const log = [];
  const task = (name, ms) => async () => { log.push(`${name} start`); await tick(ms); log.push(`${name} end`); return name; };
  const results = await Promise.all([q.run(["Actor.goblin", "Actor.ulcen"], task("a", 20)), q.run(["Actor.goblin", "Actor.fenka"], task("b", 1)), q.run(["Actor.goblin"], task("c", 1))]);
  assert.deepEqual(results, ["a", "b", "c"]);
  assert.deepEqual(log, ["a start", "a end", "b start", "b end", "c start", "c end"]);
  assert.equal(q.busy("Actor.goblin"), false);
  // A task queued while the second of two on its key runs waits for that second one.
  const later = [];
  const first = q.run(["Actor.goblin"], task("d", 1));
  const second = q.run(["Actor.goblin"], async () => { later.push("e start"); await tick(20); later.push("e end"); });
  assert.equal(q.busy("Actor.goblin"), true);
  await first;
  await tick(1);
  await q.run(["Actor.goblin"], () => later.push("f"));
  await second;
  assert.deepEqual(later, ["e start", "e end", "f"]);
});

test("queue: tasks with no key in common run side by side", async () => {
  const q = new KeyedQueue();
  const log = [];
  const task = (name) => async () => { log.push(`${name} start`); await tick(10); log.push(`${name} end`); };
  await Promise.all([q.run(["Actor.ulcen", "Actor.goblin"], task("a")), q.run(["Actor.fenka", "Actor.orc"], task("b"))]);
  assert.deepEqual(log, ["a start", "b start", "a end", "b end"]);
});

test("queue: a failed task reaches its caller and does not stop the next one", async () => {
  const q = new KeyedQueue();
  const failed = q.run(["Actor.goblin"], async () => { throw new Error("daemon down"); });
  const next = q.run(["Actor.goblin"], async () => "ran");
  await assert.rejects(failed, /daemon down/);
  assert.equal(await next, "ran");
});

test("queue: keys taken in opposite orders never wait for each other (no deadlock)", async () => {
  const q = new KeyedQueue();
  const a = q.run(["Actor.ulcen", "Actor.goblin"], () => tick(5).then(() => "a"));
  const b = q.run(["Actor.goblin", "Actor.ulcen"], () => "b");
  const c = q.run(["Actor.ulcen", "Actor.ulcen", null, undefined], () => "c");
  assert.deepEqual(await Promise.race([Promise.all([a, b, c]), tick(500).then(() => "stuck")]), ["a", "b", "c"]);
});

// ------------------------------------------------------------------ the attack flow

// The auditor's reproduction (/tmp/audit-foundry/repro/race.test.mjs): before the queue,
// both exchanges imported the goblin at 20 PSP and both wrote back 20 - 11 = 9.
test("two attacks on one NPC at once: the second is resolved with the PSPs the first left", async () => {
  const t = makeTable({ generation: 13, passQuerySender: true, dialogs: { gm: { defenseDialog: { mode: "mind-blank" } } } });
  const g = t.tokens.goblinToken;
  const [a, b] = await Promise.all([
    t.clients.gm.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [g.uuid], attack }),
    t.clients.p2.svc.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [g.uuid], attack }),
  ]);
  assert.deepEqual([a[0].outcome, b[0].outcome], ["hit", "hit"]);
  assert.equal(psp(g.actor), 0); // 20 - 11 - 11, never below 0
  const resolves = t.daemon.calls.filter((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolves.map((r) => psp(r.params.defender.data.actor)), [20, 9]);
  // The attackers' own write-backs are not lost either.
  assert.equal(psp(t.actors.ulcen), 32);
  assert.equal(psp(t.tokens.fenkaToken.actor), 22);
  // One card per exchange, in the order the write-backs happened.
  assert.deepEqual(t.clients.gm.ChatMessage.created.map((m) => m.data.flags.mindscape.outcome), ["hit", "hit"]);
});

test("exchanges sharing an actor do not overlap at the daemon; exchanges between other actors do", async () => {
  const { seen, methods } = slowResolve();
  const t = makeTable({ methods, dialogs: { gm: { defenseDialog: { mode: null } }, p2: { defenseDialog: { mode: null } } } });
  const orc = t.world.actor({ id: "orc", name: "Orc", type: "npc", flags: { mindscape: { "revised-2e": { psp: 30, psp_max: 30 } } } });
  const orcToken = t.world.token({ id: "tokO", name: "Orc", actor: orc, actorLink: true });
  const gm = t.clients.gm.svc;

  // Ulcen -> goblin and Fenka -> orc share nothing: both are at the daemon at once.
  await Promise.all([
    gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack }),
    gm.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [orcToken.uuid], attack }),
  ]);
  assert.equal(seen.most, 2);

  // Two attacks by Ulcen on different targets share the attacker: one at a time, the
  // second with Ulcen's PSPs after the first (40 - 8 - 8 - 8).
  seen.most = 0;
  await Promise.all([
    gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack }),
    gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [orcToken.uuid], attack }),
  ]);
  assert.equal(seen.most, 1);
  assert.equal(psp(t.actors.ulcen), 16);
  assert.equal(psp(orc), 8); // 30 - 11 - 11
});

test("a slow defender does not hold up another exchange, even one with the same attacker", async () => {
  const t = makeTable({
    dialogs: {
      gm: { defenseDialog: { mode: null } },
      // Fenka's owner takes a while to choose.
      p2: { defenseDialog: async () => { await tick(80); return { mode: "thought-shield" }; } },
    },
  });
  const gm = t.clients.gm.svc;
  const slow = gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack });
  await tick(10);
  const fast = await gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack });
  // The goblin's exchange was resolved and written back while Fenka's owner was choosing.
  assert.equal(fast[0].outcome, "hit");
  assert.equal(psp(t.tokens.goblinToken.actor), 9);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.resolve").length, 1);
  await slow;
  const resolves = t.daemon.calls.filter((c) => c.method === "exchange.resolve");
  assert.deepEqual(resolves.map((r) => r.params.defender.data.actor.name), ["Goblin", "Fenka"]);
  // The later exchange read Ulcen after the earlier one's write-back.
  assert.equal(psp(resolves[1].params.attacker.data.actor), 32);
  assert.equal(psp(t.actors.ulcen), 24);
});

test("a failed exchange does not block the next exchange against the same actor", async () => {
  let fail = true;
  const t = makeTable({
    methods: defaultMethods({ "exchange.resolve": (params) => { if (fail) { fail = false; throw { code: -32603, message: "boom" }; } return revisedResult(params); } }),
    dialogs: { gm: { defenseDialog: { mode: null } } },
  });
  const gm = t.clients.gm.svc;
  const [first, second] = await Promise.all([
    gm.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack }),
    gm.startAttack({ attackerUuid: t.tokens.fenkaToken.uuid, targetUuids: [t.tokens.goblinToken.uuid], attack }),
  ]);
  assert.equal(first, null); // the error was shown to the GM
  assert.equal(t.clients.gm.notes.error.length, 1);
  assert.equal(second[0].outcome, "hit");
  assert.equal(psp(t.tokens.goblinToken.actor), 9);
  assert.equal(gm.exchanges.busy(t.tokens.goblinToken.actor.uuid), false);
});
