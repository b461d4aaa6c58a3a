// Physical dice (API.md: with `dice` given and a purpose exhausted, the call fails with
// 4002 {purpose, sides, needed}): prompt for exactly that, retry, until it resolves.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DaemonClient, callWithPhysicalDice, checkDieValues } from "../mindscape/scripts/rpc.js";
import { CancelledError, UsageError } from "../mindscape/scripts/errors.js";
import { MAX_DICE_PROMPTS } from "../mindscape/scripts/consts.js";
import { fakeDaemon } from "../test-support/fakes.mjs";
import { makeTable } from "../test-support/scenario.mjs";

// A daemon that needs one d20 for "attack", then two d4 for "damage".
function needy() {
  return fakeDaemon({
    "exchange.resolve": (params) => {
      const dice = params.dice ?? {};
      if ((dice.attack ?? []).length < 1) throw { code: 4002, message: "dice needed", data: { purpose: "attack", sides: 20, needed: 1 - (dice.attack ?? []).length } };
      if ((dice.damage ?? []).length < 2) throw { code: 4002, message: "dice needed", data: { purpose: "damage", sides: 4, needed: 2 - (dice.damage ?? []).length } };
      return { outcome: "hit", used: dice };
    },
  });
}

test("each dice-needed error prompts for exactly that purpose, sides and count, then retries", async () => {
  const daemon = needy();
  const client = new DaemonClient({ url: "http://127.0.0.1:1", token: "secret-token", fetch: daemon.fetch });
  const asked = [];
  const { result, dice } = await callWithPhysicalDice((m, p) => client.call(m, p), "exchange.resolve", { system: "revised-2e" }, async (need) => {
    asked.push([need.purpose, need.sides, need.needed]);
    return need.purpose === "attack" ? [17] : [4, 2];
  });
  assert.deepEqual(asked, [["attack", 20, 1], ["damage", 4, 2]]);
  assert.deepEqual(dice, { attack: [17], damage: [4, 2] });
  assert.deepEqual(result.used, { attack: [17], damage: [4, 2] });
  // The first call already sent `dice` (empty), so the daemon asked instead of rolling.
  assert.deepEqual(daemon.calls[0].params.dice, {});
});

test("dice asked again for the same purpose are added to those already typed, as numbers, and the caller's dice are left as given", async () => {
  // A daemon that needs two d20 for "attack" and asks for them one at a time.
  const daemon = fakeDaemon({
    "exchange.resolve": (params) => {
      const have = params.dice?.attack ?? [];
      if (have.length < 2) throw { code: 4002, message: "dice needed", data: { purpose: "attack", sides: 20, needed: 1 } };
      return { used: params.dice };
    },
  });
  const client = new DaemonClient({ url: "http://127.0.0.1:1", token: "secret-token", fetch: daemon.fetch });
  const given = { dice: { damage: [3] } };
  const typed = ["7", "12"];
  const { result, dice } = await callWithPhysicalDice((m, p) => client.call(m, p), "exchange.resolve", given, async () => [typed.shift()]);
  assert.deepEqual(result.used, { damage: [3], attack: [7, 12] });
  assert.deepEqual(dice, { damage: [3], attack: [7, 12] });
  assert.deepEqual(given, { dice: { damage: [3] } });
});

test("closing the dice prompt cancels the resolution", async () => {
  const daemon = needy();
  const client = new DaemonClient({ url: "http://127.0.0.1:1", token: "secret-token", fetch: daemon.fetch });
  await assert.rejects(callWithPhysicalDice((m, p) => client.call(m, p), "exchange.resolve", {}, async () => null), CancelledError);
});

test("at most MAX_DICE_PROMPTS prompts: the next need stops the call with a reason, before asking once more", async () => {
  // A rest whose open mind needs a Wisdom check a round, for ever.
  const endless = fakeDaemon({
    "combatants.rest": () => {
      throw { code: 4002, message: "dice needed", data: { purpose: "wisdom-check", sides: 20, needed: 1 } };
    },
  });
  const client = new DaemonClient({ url: "http://127.0.0.1:1", token: "secret-token", fetch: endless.fetch });
  let prompts = 0;
  const stopped = await callWithPhysicalDice((m, p) => client.call(m, p), "combatants.rest", {}, async (need) => { prompts += 1; return Array(need.needed).fill(20); })
    .then(() => null, (error) => error);
  assert.ok(stopped instanceof UsageError, String(stopped));
  assert.equal(stopped.key, "MINDSCAPE.Error.TooManyDicePrompts");
  assert.equal(prompts, MAX_DICE_PROMPTS, "every die typed was sent: none asked for and thrown away");
  assert.equal(endless.calls.length, MAX_DICE_PROMPTS + 1);
});

test("a rest whose open mind needs a dozen rounds' Wisdom checks gets every one typed and finishes", async () => {
  const rest = fakeDaemon({
    "combatants.rest": (params) => {
      const typed = params.dice?.["wisdom-check"] ?? [];
      if (typed.length < 12) throw { code: 4002, message: "dice needed", data: { purpose: "wisdom-check", sides: 20, needed: 1 } };
      return { rested: typed.length };
    },
  });
  const client = new DaemonClient({ url: "http://127.0.0.1:1", token: "secret-token", fetch: rest.fetch });
  let prompts = 0;
  const done = await callWithPhysicalDice((m, p) => client.call(m, p), "combatants.rest", {}, async () => { prompts += 1; return [3]; });
  assert.deepEqual([done.result.rested, done.dice["wisdom-check"].length, prompts], [12, 12, 12]);
});

test("typed values are checked against the die's faces and the count needed", () => {
  assert.equal(checkDieValues([1, 4], 4, 2), null);
  assert.equal(checkDieValues([5], 4, 1), "MINDSCAPE.Dice.OutOfRange");
  assert.equal(checkDieValues([0], 4, 1), "MINDSCAPE.Dice.OutOfRange");
  assert.equal(checkDieValues([1.5], 4, 1), "MINDSCAPE.Dice.OutOfRange");
  assert.equal(checkDieValues([1], 4, 2), "MINDSCAPE.Dice.WrongCount");
});

test("with physical dice on, the GM's client prompts on 4002 and the attack resolves with those dice", async () => {
  const table = makeTable({
    methods: {
      ...(await import("../test-support/scenario.mjs")).defaultMethods(),
      "exchange.resolve": (params) => {
        if (!params.dice?.attack?.length) throw { code: 4002, message: "dice needed", data: { purpose: "attack", sides: 20, needed: 1 } };
        return { system: "revised-2e", outcome: "miss", attacker: {}, defender: {}, rolls: [{ purpose: "attack", sides: 20, value: params.dice.attack[0], by: "a" }], events: [], summary: "missed", updates: [] };
      },
    },
    dialogs: { gm: { diceDialog: (need) => (need.purpose === "attack" && need.sides === 20 && need.needed === 1 ? [3] : null), defenseDialog: { mode: null } } },
  });
  const out = await table.clients.gm.svc.startAttack({ attackerUuid: table.tokens.ulcenToken.uuid, targetUuids: [table.tokens.goblinToken.uuid], attack: { mode: "mind-thrust" }, physical: true });
  assert.equal(out[0].outcome, "miss");
  const asked = table.clients.gm.dialogs.seen.find((s) => s.kind === "diceDialog").arg;
  assert.equal(asked.purposeLabel, "Attack");
  assert.match(table.clients.gm.ChatMessage.created[0].data.content, /Resolved with physical dice/);
});
