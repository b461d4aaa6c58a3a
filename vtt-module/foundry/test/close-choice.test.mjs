// Paying to close a mind a critical hit opened, at the end of a round the combat tracker
// ends (revised-2e, RULES.md §1.5), at the price the companion gives
// (`exchange.round_end_choices`; its rules are tested in tests/engine): "Opened by a critical hit: closing costs 2 × the cost
// of the last defense it used (mental barrier 5 → 10). If it cannot or will not pay, it
// stays open 1d4+1 rounds." House default H-2E-NO-LAST-DEF: a mind that used no defense
// pays 2 × its cheapest known defense; H-2E-CLOSE-LAST-PSP: paying must leave at least
// 1 PSP. At the end of the round the mind opened in (and, when it did not pay then, at
// the end of the next), the GM's client asks whoever answers for it (its owner through
// the relay, the GM for an NPC) whether it pays, and sends the yes answers as
// `exchange.end_round`'s `choices` (API.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { combatantIdOfRef, defaultMethods, makeTable, revisedResult, roundEndChoicesResult, roundEndResult } from "../test-support/scenario.mjs";
import { tick } from "../test-support/fakes.mjs";
import { registerUiHooks } from "../mindscape/scripts/hooks.js";
import { makeApi } from "../mindscape/scripts/api.js";
import { mayPayToClose, roundCombatantId } from "../mindscape/scripts/rounds.js";

const profile = (actor) => actor.flags.mindscape["revised-2e"];
const endRounds = (t) => t.daemon.calls.filter((c) => c.method === "exchange.end_round");
const asked = (client) => client.dialogs.seen.filter((s) => s.kind === "closeDialog");

/** A mind a critical hit opened last round, announced as one that may pay to close now. */
const mayClose = (extra = {}) => ({ state: "open", opened_by: "critical", locked_rounds: 0, last_defense: null, used_power: false, may_pay_to_close: true, rounds_open: 1, ...extra });

/** The table of scenario.mjs with the UI hooks on every client and a combat of Ulcen, Fenka and the goblin. */
function tracker(options = {}) {
  const t = makeTable(options);
  for (const c of Object.values(t.clients)) registerUiHooks(c.Hooks, c.svc);
  const { ulcenToken, fenkaToken, goblinToken } = t.tokens;
  const combat = t.world.combat({ id: "cmb1", server: t.server, combatants: [ulcenToken, fenkaToken, goblinToken].map((token, i) => ({ id: `c${i}`, token })) });
  return { ...t, combat };
}

async function setMind(actor, mind, more = {}) {
  await actor.update({ "flags.mindscape.revised-2e.mind": mind, ...more });
}

/** Wait for every end of round the clients' `updateCombat` handlers started. */
async function settled(t) {
  const started = Object.values(t.clients).flatMap((c) => c.Hooks.called.filter((h) => h.name === "updateCombat").flatMap((h) => h.results));
  await Promise.all(started);
}

/** Start the combat and move the tracker on one round (round 1 ends). */
async function nextRound(t) {
  if (t.combat.round === 0) await t.combat.startCombat();
  await t.combat.nextRound();
  await settled(t);
}

// ------------------------------------------------------------------ the companion prices it

test("the price is the companion's: it is asked with the sheets and the world's house rules, and its offer is what the question shows", async () => {
  const methods = defaultMethods({
    "exchange.round_end_choices": (params) => ({
      system: "revised-2e",
      combatants: params.combatants.map((ref) => ({ id: combatantIdOfRef(ref), name: ref.data.actor.name, choices: { close: { cost: 7, defense: "mental-barrier", basis: "last", psp: 21, payable: true, reason: null } } })),
      summary: "",
    }),
  });
  const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: false, timedOut: false } } } });
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CLOSE-LAST-PSP": false } });
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  const [call] = t.daemon.calls.filter((c) => c.method === "exchange.round_end_choices");
  assert.deepEqual(call.params.combatants.map((ref) => [ref.adapter, ref.data.actor.name]), [["foundry.dnd5e", "Fenka"]], "only the minds that may pay, as sheets");
  assert.deepEqual(call.params.options, { "H-2E-CLOSE-LAST-PSP": false });
  const { context } = asked(t.clients.p2)[0].arg;
  assert.deepEqual([context.cost, context.psp, context.defenseLabel, context.lastDefense], [7, 21, "Mental barrier", true]);
  assert.ok(t.daemon.calls.findIndex((c) => c.method === "exchange.round_end_choices") < t.daemon.calls.findIndex((c) => c.method === "exchange.end_round"));
});

test("when the companion cannot price closing, the GM is told why, nobody is asked and the round still ends", async () => {
  // An older companion without the method, say.
  const methods = defaultMethods({ "exchange.round_end_choices": () => { throw { code: -32601, message: "Method not found" }; } });
  const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.p2).length, 0);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /^The companion could not say what closing a mind costs, so nobody was asked and the round ends without anyone paying: /);
  assert.equal(endRounds(t).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(profile(t.tokens.fenkaToken.actor).mind.locked_rounds, 2);
});

test("a world read through a generic mapping lets the companion say whose mind may pay: everyone of the round is sent", async () => {
  const t = tracker({ dialogs: { p2: { closeDialog: { close: false, timedOut: false } } } });
  t.clients.gm.svc.adaptersCache = [];
  t.clients.gm.game.system.id = "pf2e";
  assert.equal(await t.clients.gm.svc.adapterId(), "foundry.generic");
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  const [call] = t.daemon.calls.filter((c) => c.method === "exchange.round_end_choices");
  assert.deepEqual(call.params.combatants.map((ref) => [ref.adapter, ref.data.actor.name]), [["foundry.generic", "Ulcen of Tyr"], ["foundry.generic", "Fenka"], ["foundry.generic", "Goblin"]]);
  assert.equal(asked(t.clients.p2).length, 1);
});

test("in combat-strength nobody is asked to pay to close, even in a world read through a generic mapping", async () => {
  const t = tracker({ dialogs: { gm: { closeDialog: { close: true, timedOut: false } } } });
  t.clients.gm.svc.adaptersCache = [];
  t.clients.gm.game.system.id = "pf2e";
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", "combat-strength");
  t.actors.ulcen.flags.mindscape["combat-strength"] = { psionic: true };
  await nextRound(t);
  assert.equal(endRounds(t).length, 1);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.round_end_choices").length, 0);
});

test("a mind a condition stops is not asked; the GM is told", async () => {
  const t = tracker({ dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }), { "flags.mindscape.revised-2e.conditions": ["dazed"], "flags.mindscape.revised-2e.condition_rounds": { dazed: 1 } });
  await nextRound(t);
  assert.equal(asked(t.clients.p2).length, 0);
  assert.deepEqual(t.clients.gm.notes.info, ["Not asked to pay to close their minds, which stay open: Fenka (a condition stops it acting)."]);
  assert.equal(endRounds(t)[0].params.choices, undefined);
});

test("the companion's reasons a mind may not pay are told with its price, one reason it does not name as no defense; a mind it offers nothing is neither asked nor named", async () => {
  const offers = { "fenka-tokF": { cost: 10, defense: "thought-shield", basis: "last", psp: 4, payable: false, reason: "psp" }, "goblin-tokG": { cost: null, defense: null, basis: null, psp: 9, payable: false, reason: "a-reason-yet-unknown" } };
  const methods = defaultMethods({
    "exchange.round_end_choices": (params) => ({
      system: "revised-2e",
      combatants: params.combatants.map((ref) => ({ id: combatantIdOfRef(ref), name: ref.data.actor.name, choices: offers[combatantIdOfRef(ref)] ? { close: offers[combatantIdOfRef(ref)] } : {} })),
      summary: "",
    }),
  });
  const t = tracker({ methods, dialogs: { p1: { closeDialog: { close: true, timedOut: false } }, p2: { closeDialog: { close: true, timedOut: false } }, gm: { closeDialog: { close: true, timedOut: false } } } });
  await setMind(t.actors.ulcen, mayClose({ last_defense: "thought-shield" }));
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.deepEqual([t.clients.p1, t.clients.p2, t.clients.gm].map((c) => asked(c).length), [0, 0, 0]);
  assert.deepEqual(t.clients.gm.notes.info, ["Not asked to pay to close their minds, which stay open: Fenka (needs 10 PSPs and has 4); Goblin (it used no defense and knows none)."]);
  assert.equal(endRounds(t)[0].params.choices, undefined);
});

test("a round's end where no mind may pay asks the companion no price", async () => {
  const t = tracker();
  await nextRound(t);
  assert.equal(t.daemon.calls.filter((c) => c.method === "exchange.round_end_choices").length, 0);
  assert.equal(endRounds(t).length, 1);
});

test("the question and the companion's warnings about the sheets it priced name a mind by its token", async () => {
  const methods = defaultMethods({ "exchange.round_end_choices": (params) => ({ ...roundEndChoicesResult(params), warnings: ["/combatants/0: psp_max assumed from psp"] }) });
  const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: false, timedOut: false } } } });
  t.tokens.fenkaToken.name = "Fenka in the mask";
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.p2)[0].arg.context.name, "Fenka in the mask");
  assert.ok(t.clients.gm.notes.warn.includes("The companion reading the sheets: Fenka in the mask: psp_max assumed from psp"), JSON.stringify(t.clients.gm.notes.warn));
});

test("a token deleted while whoever answers for it was asked is left out of the round's end with its choice; with none left nothing is called", async () => {
  const deleteGoblin = (table) => {
    table.world.docs.delete(table.tokens.goblinToken.uuid);
    table.world.docs.delete(table.tokens.goblinToken.actor.uuid);
    return { close: true, timedOut: false };
  };
  let t;
  t = tracker({ dialogs: { p2: { closeDialog: { close: true, timedOut: false } }, gm: { closeDialog: () => deleteGoblin(t) } } });
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 1);
  assert.equal(endRounds(t).length, 1);
  assert.deepEqual(endRounds(t)[0].params.combatants.map((ref) => ref.data.actor.name), ["Ulcen of Tyr", "Fenka"]);
  assert.deepEqual(endRounds(t)[0].params.choices, { "fenka-tokF": { close: true } });

  // A combat of the goblin alone: nobody is left to end the round of.
  let u;
  u = makeTable({ dialogs: { gm: { closeDialog: () => deleteGoblin(u) } } });
  for (const c of Object.values(u.clients)) registerUiHooks(c.Hooks, c.svc);
  u.combat = u.world.combat({ id: "cmb2", server: u.server, combatants: [{ id: "c0", token: u.tokens.goblinToken }] });
  await setMind(u.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(u);
  assert.equal(asked(u.clients.gm).length, 1);
  assert.equal(endRounds(u).length, 0);
  assert.deepEqual(u.clients.gm.notes.error, []);
});

test("a choice refused by name: the others' round's end names minds by their tokens; when that end fails for another cause, the GM sees the error and the round is not recorded", async () => {
  for (const other of [null, { code: -32603, message: "Internal error" }]) {
    const methods = defaultMethods({
      "exchange.end_round": (params) => {
        if (params.choices?.["fenka-tokF"]) throw { code: 4001, message: "The rules forbid it", data: { rule: "cannot-close", combatant: "fenka-tokF", detail: "Fenka is stunned" } };
        if (params.choices && other) throw other;
        return roundEndResult(params);
      },
    });
    const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: true, timedOut: false } }, gm: { closeDialog: { close: true, timedOut: false } } } });
    t.tokens.fenkaToken.name = "Fenka in the mask";
    await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
    await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
    await nextRound(t);
    assert.deepEqual(endRounds(t).slice(0, 2).map((c) => c.params.choices), [{ "fenka-tokF": { close: true }, "goblin-tokG": { close: true } }, { "goblin-tokG": { close: true } }]);
    if (!other) {
      assert.deepEqual(t.clients.gm.notes.warn, ["The companion refused to let Fenka in the mask pay to close (cannot-close: Fenka is stunned), so the round ended without Fenka in the mask paying; Goblin paid as chosen."]);
      assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    } else {
      assert.equal(endRounds(t).length, 2);
      assert.equal(t.clients.gm.notes.error.length, 1);
      assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
    }
  }
});

test("who may pay: a mind a critical hit opened this round, or before with the last round's end's word that it still may; ids as the adapters give them", () => {
  assert.equal(mayPayToClose({ mind: mayClose() }), true);
  assert.equal(mayPayToClose({ mind: mayClose({ may_pay_to_close: false, rounds_open: 0 }) }), true, "the round it opened");
  assert.equal(mayPayToClose({ mind: { state: "open", opened_by: "critical" } }), true, "no rounds_open is 0, as the companion reads it");
  assert.equal(mayPayToClose({ mind: mayClose({ may_pay_to_close: false, rounds_open: 2, locked_rounds: 3 }) }), false, "locked open");
  assert.equal(mayPayToClose({ mind: mayClose({ may_pay_to_close: false, rounds_open: 1 }) }), false, "opened last round, and the last round's end said no");
  assert.equal(mayPayToClose({ mind: mayClose({ opened_by: "zero-psp" }) }), false);
  assert.equal(mayPayToClose({ mind: { ...mayClose(), state: "closed" } }), false);
  assert.equal(mayPayToClose({}), false);
  const t = makeTable();
  assert.equal(roundCombatantId(t.tokens.ulcenToken, t.tokens.ulcenToken.actor), "ulcen");
  assert.equal(roundCombatantId(t.tokens.fenkaToken, t.tokens.fenkaToken.actor), "fenka-tokF");
  assert.equal(roundCombatantId(null, t.actors.goblin), "goblin");
});

// ------------------------------------------------------------------ the tracker asks

for (const generation of [12, 13]) {
  test(`v${generation}: the owner is asked through the relay, with twice the last defense's cost; a yes is sent as choices and paid`, async () => {
    const t = tracker({ generation, passQuerySender: generation >= 13, dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
    const { fenkaToken } = t.tokens;
    await setMind(fenkaToken.actor, mayClose({ last_defense: "mind-blank" }));
    await nextRound(t);

    // Only Fenka's owner was asked, once, on her own client.
    assert.equal(asked(t.clients.p2).length, 1);
    assert.equal(asked(t.clients.gm).length + asked(t.clients.p1).length, 0);
    const { context, timeoutMs } = asked(t.clients.p2)[0].arg;
    assert.deepEqual(
      (({ name, cost, defenseLabel, lastDefense, psp, seconds }) => ({ name, cost, defenseLabel, lastDefense, psp, seconds }))(context),
      { name: "Fenka", cost: 6, defenseLabel: "Mind blank", lastDefense: true, psp: 30, seconds: 30 },
    );
    assert.equal(timeoutMs, 30000);
    if (generation >= 13) assert.ok(t.server.log.some((l) => l.query === "mindscape.chooseClose" && l.toUserId === "pl0002"));
    else assert.ok(t.server.log.some((l) => l.message?.type === "request" && l.message.name === "chooseClose" && l.message.to === "pl0002"));

    // Her yes went to the companion under her combatant id (an unlinked token's), and she paid.
    assert.equal(endRounds(t).length, 1);
    assert.deepEqual(endRounds(t)[0].params.choices, { "fenka-tokF": { close: true } });
    assert.equal(profile(fenkaToken.actor).psp, 24);
    assert.equal(profile(fenkaToken.actor).mind.state, "closed");
    assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Fenka pays 6 PSPs and closes its mind/);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    assert.deepEqual([t.clients.gm.notes.warn, t.clients.gm.notes.error, t.clients.p2.notes.error], [[], [], []]);
  });
}

test("an NPC is asked of the GM; without a last defense it pays twice its cheapest known (H-2E-NO-LAST-DEF on by default)", async () => {
  const t = tracker({ dialogs: { gm: { closeDialog: { close: true, timedOut: false } } } });
  const { goblinToken } = t.tokens;
  await setMind(goblinToken.actor, mayClose());
  await nextRound(t);
  const [question] = asked(t.clients.gm);
  assert.equal(asked(t.clients.gm).length, 1);
  assert.equal(asked(t.clients.p1).length + asked(t.clients.p2).length, 0);
  // The goblin knows thought shield (2) and mind blank (3): 2 × 2.
  assert.deepEqual([question.arg.context.name, question.arg.context.cost, question.arg.context.defenseLabel, question.arg.context.lastDefense], ["Goblin", 4, "Thought shield", false]);
  assert.deepEqual(endRounds(t)[0].params.choices, { "goblin-tokG": { close: true } });
  assert.equal(profile(goblinToken.actor).psp, 16);
  assert.equal(profile(goblinToken.actor).mind.state, "closed");
});

test("with H-2E-NO-LAST-DEF off a mind that used no defense is not asked; the GM is told why and it is locked open", async () => {
  const t = tracker({ dialogs: { gm: { closeDialog: { close: true, timedOut: false } } } });
  await t.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-NO-LAST-DEF": false } });
  const { goblinToken } = t.tokens;
  await setMind(goblinToken.actor, mayClose());
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 0);
  assert.deepEqual(t.clients.gm.notes.info, ["Not asked to pay to close their minds, which stay open: Goblin (it used no defense, and the house rule H-2E-NO-LAST-DEF is off)."]);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(profile(goblinToken.actor).mind.locked_rounds, 2);
});

test("PSPs that do not suffice under H-2E-CLOSE-LAST-PSP: not asked, the GM is told; with the rule off the last PSPs may pay", async () => {
  const t = tracker({ dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
  const { fenkaToken } = t.tokens;
  // Mind blank costs 3: closing costs 6, and Fenka has exactly 6.
  await setMind(fenkaToken.actor, mayClose({ last_defense: "mind-blank" }), { "flags.mindscape.revised-2e.psp": 6 });
  await nextRound(t);
  assert.equal(asked(t.clients.p2).length, 0);
  assert.deepEqual(t.clients.gm.notes.info, ["Not asked to pay to close their minds, which stay open: Fenka (needs 6 PSPs and has 6: paying must leave at least 1)."]);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(profile(fenkaToken.actor).mind.state, "open");

  const u = tracker({ dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
  await u.clients.gm.game.settings.set("mindscape", "houseRules", { "revised-2e": { "H-2E-CLOSE-LAST-PSP": false } });
  await setMind(u.tokens.fenkaToken.actor, mayClose({ last_defense: "mind-blank" }), { "flags.mindscape.revised-2e.psp": 6 });
  await nextRound(u);
  assert.equal(asked(u.clients.p2).length, 1);
  assert.equal(profile(u.tokens.fenkaToken.actor).psp, 0);
  assert.equal(profile(u.tokens.fenkaToken.actor).mind.state, "closed");
});

test("a mind a critical hit opened this round is asked at its end, the round's stun over: a yes closes it before the next round", async () => {
  // Seed 004: it "can close its mind in the following round", as an encounter's close is paid at that round's start.
  const t = tracker({ dialogs: { p1: { closeDialog: { close: true, timedOut: false } } } });
  const { ulcenToken, goblinToken } = t.tokens;
  await setMind(t.actors.ulcen, mayClose({ may_pay_to_close: false, rounds_open: 0, last_defense: "thought-shield" }), { "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  await setMind(goblinToken.actor, mayClose({ opened_by: "zero-psp", may_pay_to_close: false }));
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 0, "the goblin's mind, opened by its last PSPs, is not asked");
  assert.equal(asked(t.clients.p1).length, 1);
  assert.equal(asked(t.clients.p1)[0].arg.context.cost, 4);
  assert.deepEqual(endRounds(t)[0].params.choices, { ulcen: { close: true } });
  assert.equal(profile(t.actors.ulcen).psp, 36);
  assert.deepEqual(profile(t.actors.ulcen).conditions, []);
  assert.equal(ulcenToken.actor.flags.mindscape["revised-2e"].mind.state, "closed");
});

test("a mind that does not pay at the end of the round it opened in is asked again at the next round's end", async () => {
  const answers = [{ close: false, timedOut: false }, { close: true, timedOut: false }];
  const t = tracker({ dialogs: { p1: { closeDialog: () => answers.shift() } } });
  await setMind(t.actors.ulcen, mayClose({ may_pay_to_close: false, rounds_open: 0, last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.p1).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(profile(t.actors.ulcen).mind.may_pay_to_close, true);
  // The card's events read as sentences (en.json MINDSCAPE.Event), not as the event's raw fields.
  assert.match(t.clients.gm.ChatMessage.created[0].data.content, /Ulcen of Tyr may pay to close its mind, PSPs: 4/);

  await t.combat.nextRound();
  await settled(t);
  assert.equal(asked(t.clients.p1).length, 2);
  assert.deepEqual(endRounds(t)[1].params.choices, { ulcen: { close: true } });
  assert.equal(profile(t.actors.ulcen).psp, 36);
  assert.equal(profile(t.actors.ulcen).mind.state, "closed");
});

test("a no, a closed dialog or no answer in time sends no choice: the round still ends and the mind is locked open", async () => {
  const answers = [{ close: false, timedOut: false }, { close: false, timedOut: false, cancelled: true }, null];
  for (const answer of answers) {
    const t = tracker({ dialogs: { p2: { closeDialog: answer } } });
    await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
    await nextRound(t);
    assert.equal(asked(t.clients.p2).length, 1);
    assert.equal(endRounds(t)[0].params.choices, undefined, JSON.stringify(answer));
    assert.equal(profile(t.tokens.fenkaToken.actor).psp, 30);
    assert.equal(profile(t.tokens.fenkaToken.actor).mind.locked_rounds, 2);
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
  }
});

test("an owner who never answers cannot hold the round: after the world's defense timeout it does not pay", async () => {
  const t = tracker({ dialogs: { p2: { closeDialog: () => new Promise(() => {}) } } });
  await t.clients.gm.game.settings.set("mindscape", "defenseTimeout", 0);
  t.clients.gm.svc.defenseGraceMs = 20;
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.p2).length, 1);
  assert.equal(endRounds(t).length, 1);
  assert.equal(endRounds(t)[0].params.choices, undefined);
  assert.equal(profile(t.tokens.fenkaToken.actor).mind.locked_rounds, 2);
});

test("with the owner not connected the GM answers for the mind", async () => {
  const t = tracker({ dialogs: { gm: { closeDialog: { close: true, timedOut: false } } } });
  t.p2.active = false;
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(asked(t.clients.gm).length, 1);
  assert.equal(asked(t.clients.p2).length, 0);
  assert.deepEqual(endRounds(t)[0].params.choices, { "fenka-tokF": { close: true } });
});

test("every mind that may pay is asked at once, not one after another", async () => {
  let open = 0;
  let most = 0;
  const slow = async () => { open++; most = Math.max(most, open); await tick(20); open--; return { close: true, timedOut: false }; };
  const t = tracker({ dialogs: { p1: { closeDialog: slow }, p2: { closeDialog: slow }, gm: { closeDialog: slow } } });
  await setMind(t.actors.ulcen, mayClose({ last_defense: "thought-shield" }));
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
  await nextRound(t);
  assert.equal(most, 3);
  assert.deepEqual(endRounds(t)[0].params.choices, { ulcen: { close: true }, "fenka-tokF": { close: true }, "goblin-tokG": { close: true } });
});

// ------------------------------------------------------------------ the companion refuses

for (const rule of ["cannot-act", "cannot-close"]) {
  test(`a 4001 ${rule} for a choice: the round is ended again without choices and the GM told once`, async () => {
    const methods = defaultMethods({
      "exchange.end_round": (params) => {
        // The companion sees what the sheet does not show the module (a stun here, as
        // it refuses cannot-act; or any reason it may not pay).
        if (params.choices) throw { code: 4001, message: "The rules forbid it", data: { rule, detail: `Fenka cannot close its mind (${rule})` } };
        return roundEndResult(params);
      },
    });
    const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
    await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
    await nextRound(t);
    assert.deepEqual(endRounds(t).map((c) => c.params.choices), [{ "fenka-tokF": { close: true } }, undefined]);
    assert.deepEqual(t.clients.gm.notes.warn, [`The companion refused to let Fenka pay to close (${rule}: Fenka cannot close its mind (${rule})), so the round ended without anyone paying.`]);
    assert.deepEqual(t.clients.gm.notes.error, []);
    assert.equal(profile(t.tokens.fenkaToken.actor).psp, 30);
    assert.equal(profile(t.tokens.fenkaToken.actor).mind.locked_rounds, 2);
    // The round is ended, recorded once, and one card tells what happened.
    assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    assert.equal(t.clients.gm.Hooks.called.filter((h) => h.name === "mindscape.roundEnded").length, 1);
    assert.equal(t.clients.gm.ChatMessage.created.length, 1);
    await t.combat.previousRound();
    await t.combat.nextRound();
    await settled(t);
    assert.equal(endRounds(t).length, 2, "going back and forward again ends no round twice");
  });
}

test("a stunned mind's choice refused after physical dice were typed: the round ends again with those dice, none asked twice", async () => {
  // The companion offered Fenka closing (its offer and the end of round are two calls: a
  // stun written in between, say); the end of round refuses it.
  const free = (params) => {
    const offers = roundEndChoicesResult(params);
    for (const c of offers.combatants) if (c.choices.close) c.choices.close = { ...c.choices.close, payable: true, reason: null };
    return offers;
  };
  const t = tracker({ methods: defaultMethods({ "exchange.round_end_choices": free }), dialogs: { p2: { closeDialog: { close: true, timedOut: false } }, gm: { diceDialog: [[15], [3]] } } });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  // Ulcen's mind is open without a cause: a Wisdom check (before Fenka, in the combat's order).
  await setMind(t.actors.ulcen, { state: "open" }, { "flags.mindscape.revised-2e.wis": 17 });
  await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }), { "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  await nextRound(t);
  assert.deepEqual(endRounds(t).map((c) => [c.params.choices ?? null, c.params.dice]), [
    [{ "fenka-tokF": { close: true } }, {}],
    [{ "fenka-tokF": { close: true } }, { "wisdom-check": [15] }],
    [null, { "wisdom-check": [15] }],
    [null, { "wisdom-check": [15], "open-duration": [3] }],
  ]);
  assert.deepEqual(t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").map((s) => s.arg.purpose), ["wisdom-check", "open-duration"]);
  assert.equal(t.clients.gm.notes.warn.length, 1);
  assert.match(t.clients.gm.notes.warn[0], /cannot-act/);
  assert.equal(profile(t.tokens.fenkaToken.actor).mind.locked_rounds, 4);
  assert.deepEqual(profile(t.tokens.fenkaToken.actor).conditions, []);
  assert.equal(profile(t.actors.ulcen).mind.state, "closed");
});

test("two dice of one purpose typed before a choice is refused both go with the round's end again, and neither is asked twice", async () => {
  const free = (params) => {
    const offers = roundEndChoicesResult(params);
    for (const c of offers.combatants) if (c.choices.close) c.choices.close = { ...c.choices.close, payable: true, reason: null };
    return offers;
  };
  const t = tracker({ methods: defaultMethods({ "exchange.round_end_choices": free }), dialogs: { gm: { closeDialog: { close: true, timedOut: false }, diceDialog: [[15], [12], [3]] } } });
  await t.clients.gm.game.settings.set("mindscape", "physicalDice", true);
  // Ulcen's and Fenka's minds are open without a cause: a Wisdom check each, before the
  // goblin's choice (in the combat's order), which the companion refuses.
  await setMind(t.actors.ulcen, { state: "open" }, { "flags.mindscape.revised-2e.wis": 17 });
  await setMind(t.tokens.fenkaToken.actor, { state: "open" }, { "flags.mindscape.revised-2e.wis": 17 });
  await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }), { "flags.mindscape.revised-2e.conditions": ["stunned"], "flags.mindscape.revised-2e.condition_rounds": { stunned: 0 } });
  await nextRound(t);
  assert.deepEqual(endRounds(t).find((c) => !c.params.choices).params.dice, { "wisdom-check": [15, 12] });
  assert.deepEqual(t.clients.gm.dialogs.seen.filter((s) => s.kind === "diceDialog").map((s) => s.arg.purpose), ["wisdom-check", "wisdom-check", "open-duration"]);
});

test("a −32602 at one mind's choice itself leaves out that choice only; one that names no problem fails the round's end unrecorded", async () => {
  for (const errors of [[{ path: "/choices/fenka-tokF", message: "is not valid" }], []]) {
    const methods = defaultMethods({
      "exchange.end_round": (params) => {
        if (params.choices?.["fenka-tokF"]) throw { code: -32602, message: "Invalid params", data: { errors } };
        return roundEndResult(params);
      },
    });
    const t = tracker({ methods, dialogs: { p2: { closeDialog: { close: true, timedOut: false } }, gm: { closeDialog: { close: true, timedOut: false } } } });
    await setMind(t.tokens.fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
    await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
    await nextRound(t);
    if (errors.length) {
      assert.deepEqual(endRounds(t).map((c) => c.params.choices), [{ "fenka-tokF": { close: true }, "goblin-tokG": { close: true } }, { "goblin-tokG": { close: true } }]);
      assert.equal(t.combat.getFlag("mindscape", "roundEnded"), 1);
    } else {
      assert.equal(endRounds(t).length, 1);
      assert.equal(t.clients.gm.notes.error.length, 1);
      assert.equal(t.combat.getFlag("mindscape", "roundEnded"), undefined);
    }
  }
});

test("a refusal at one mind's choice is that mind's only, not one whose id begins its id: a linked goblin (goblin) beside an unlinked one (goblin-tokG)", async () => {
  // Both tokens are of the goblin actor: the linked one's combatant id is the actor's,
  // a prefix of the unlinked one's. The companion refuses the unlinked goblin's choice,
  // by the path of a field in it or by a 4001 that quotes that path.
  const refusals = [
    { code: -32602, message: "Invalid params", data: { errors: [{ path: "/choices/goblin-tokG/close", message: "is not valid" }] } },
    { code: 4001, message: "The rules forbid it", data: { rule: "cannot-close", detail: "Goblin cannot pay to close (/choices/goblin-tokG/close)" } },
  ];
  for (const refusal of refusals) {
    const methods = defaultMethods({
      "exchange.end_round": (params) => {
        if (params.choices?.["goblin-tokG"]) throw refusal;
        return roundEndResult(params);
      },
    });
    const t = makeTable({ methods, dialogs: { gm: { closeDialog: { close: true, timedOut: false } } } });
    for (const c of Object.values(t.clients)) registerUiHooks(c.Hooks, c.svc);
    const linked = t.world.token({ id: "tokL", name: "Goblin chief", actor: t.actors.goblin, actorLink: true });
    const combat = t.world.combat({ id: "cmb1", server: t.server, combatants: [linked, t.tokens.goblinToken].map((token, i) => ({ id: `c${i}`, token })) });
    await setMind(t.actors.goblin, mayClose({ last_defense: "thought-shield" }));
    await setMind(t.tokens.goblinToken.actor, mayClose({ last_defense: "thought-shield" }));
    await nextRound({ ...t, combat });
    assert.deepEqual(endRounds(t).map((c) => c.params.choices), [{ goblin: { close: true }, "goblin-tokG": { close: true } }, { goblin: { close: true } }], refusal.message);
    assert.equal(t.clients.gm.notes.warn.length, 1);
    assert.match(t.clients.gm.notes.warn[0], /^The companion refused to let Goblin pay to close \(.*\), so the round ended without Goblin paying; Goblin chief paid as chosen\.$/, refusal.message);
  }
});

// ------------------------------------------------------------------ the queue and the macro API

test("the question waits in the queue behind an exchange on that actor, and shows the PSPs it left", async () => {
  const order = [];
  const t = tracker({
    methods: defaultMethods({
      "exchange.resolve": async (params) => { order.push("resolve"); await tick(30); return revisedResult(params); },
      "exchange.end_round": (params) => { order.push("end_round"); return roundEndResult(params); },
    }),
    dialogs: { gm: { defenseDialog: { mode: null } }, p2: { closeDialog: (arg) => { order.push(`asked ${arg.context.psp}`); return { close: true, timedOut: false }; } } },
  });
  const { fenkaToken, goblinToken } = t.tokens;
  await setMind(fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await t.combat.startCombat();
  // Fenka attacks the goblin: 8 PSPs spent, so 22 are left when she is asked.
  const attack = t.clients.gm.svc.startAttack({ attackerUuid: fenkaToken.uuid, targetUuids: [goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
  while (!order.length) await tick(1);
  await t.combat.nextRound();
  await Promise.all([attack, settled(t)]);
  assert.deepEqual(order, ["resolve", "asked 22", "end_round"]);
  assert.equal(profile(fenkaToken.actor).psp, 18);
});

test("api.endRound keeps its explicit choices and asks nobody", async () => {
  const t = tracker({ dialogs: { p2: { closeDialog: { close: true, timedOut: false } } } });
  const { fenkaToken } = t.tokens;
  await setMind(fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  const api = makeApi(t.clients.gm.svc);
  await api.endRound({ tokenUuids: [fenkaToken], choices: { "fenka-tokF": { close: true } } });
  assert.equal(asked(t.clients.p2).length, 0);
  assert.equal(profile(fenkaToken.actor).psp, 26);
  // Without choices, the macro does not ask either: the mind is locked open.
  await setMind(fenkaToken.actor, mayClose({ last_defense: "thought-shield" }));
  await api.endRound({ tokenUuids: [fenkaToken] });
  assert.equal(asked(t.clients.p2).length, 0);
  assert.equal(endRounds(t)[1].params.choices, undefined);
  assert.equal(profile(fenkaToken.actor).mind.locked_rounds, 2);
});
