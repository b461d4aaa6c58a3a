// A defense the companion refuses for the defender's own choice (a 4001 of a defense
// rule: too few PSPs for it, a mind that cannot act; in power-pool one naming the mind
// that chose: asleep, pool dice beyond its pool, a spell it has not memorised) does not
// lose the attack. Over the fakes: nothing was written, the defender's owner is asked
// again (told why, nothing preselected, no defense without an answer, nothing
// remembered) and the exchange is resolved with the new choice; the GM is told. A refusal
// about the attacker, or one a defense does not mend, still fails the attack.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RulesError } from "../mindscape/scripts/errors.js";
import { combatantIdOfRef, defaultMethods, makeTable, poolImport, renderModuleTemplate, revisedResult } from "../test-support/scenario.mjs";

const refuse = (rule, detail, combatant) => ({ code: 4001, message: "The rules forbid it", data: { rule, detail, ...(combatant ? { combatant } : {}) } });
const defenseDialogs = (client) => client.dialogs.seen.filter((s) => s.kind === "defenseDialog");
// The GM's own attack (`attack`, not `startAttack`, which tells the GM of a failure instead of throwing it).
const attackFenka = (t, attack = { mode: "mind-thrust", multiplier: 1 }) => {
  const gm = t.clients.gm;
  return gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack }, gm.game.user);
};

test("revised-2e: a defense the defender cannot pay for is chosen again by its owner, told why; the exchange resolves with the new choice", async () => {
  const calls = [];
  const methods = defaultMethods({
    "exchange.resolve": (params) => {
      calls.push(structuredClone(params));
      if (params.defense?.mode === "mind-blank") throw refuse("not-enough-psp-for-defense", "Fenka needs 3 PSPs for mind-blank but holds 2");
      return revisedResult(params);
    },
  });
  const t = makeTable({ methods, dialogs: { p2: { defenseDialog: [{ mode: "mind-blank" }, { mode: "thought-shield" }] } } });
  await t.tokens.fenkaToken.actor.update({ "flags.mindscape.defaultDefense.revised-2e": "mind-blank" });
  const [outcome] = await attackFenka(t);
  assert.equal(outcome.outcome, "hit");
  assert.deepEqual(calls.map((c) => c.defense), [{ mode: "mind-blank" }, { mode: "thought-shield" }]);
  // Fenka's owner was asked twice; the second time told why, with nothing preselected.
  const [first, again] = defenseDialogs(t.clients.p2).map((s) => s.arg);
  assert.equal(first.context.refused, null);
  assert.equal(first.fallback, "mind-blank");
  assert.equal(first.context.fallbackLabel, "Mind blank");
  assert.equal(again.context.refused, "The companion could not use the defense chosen for Fenka: Fenka needs 3 PSPs for mind-blank but holds 2. Nothing was written; choose again.");
  assert.equal(again.fallback, null);
  assert.equal(again.context.fallbackLabel, null);
  assert.equal(again.context.noneSelected, true);
  assert.ok(again.context.defenses.every((d) => !d.selected));
  // The answer given again is not remembered: the default stays the owner's last free choice.
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense["revised-2e"], "mind-blank");
  // The GM is told; the attacker's player is not, and nothing of it reached the attacker's client.
  assert.deepEqual(t.clients.gm.notes.warn, ["The companion refused the defense chosen for Fenka (not-enough-psp-for-defense: Fenka needs 3 PSPs for mind-blank but holds 2); its owner chooses again."]);
  assert.deepEqual(t.clients.p1.notes.warn, []);
  assert.equal(defenseDialogs(t.clients.p1).length, 0);
  // One card, for the exchange resolved.
  assert.equal(t.clients.gm.ChatMessage.created.length, 1);
});

test("the dialog asked again shows why and says that no defense is raised without an answer", () => {
  const html = renderModuleTemplate("defense-dialog", {
    attackerName: "Ulcen", defenderName: "Fenka", defenses: [{ id: "thought-shield", label: "Thought Shield" }], noneSelected: true, seconds: 30,
    refused: "The companion could not use the defense chosen for Fenka: too few PSPs. Nothing was written; choose again.", fallbackLabel: null,
  });
  assert.match(html, /<p class="mindscape-warning">The companion could not use the defense chosen for Fenka: too few PSPs\./);
  assert.match(html, /Only you and the GM see this\. Without an answer, no defense is raised in <span class="mindscape-countdown">30<\/span> s/);
  const first = renderModuleTemplate("defense-dialog", { attackerName: "Ulcen", defenderName: "Fenka", defenses: [], noneSelected: true, seconds: 30 });
  assert.doesNotMatch(first, /mindscape-warning/);
});

test("the countdown says what happens without an answer: the defense remembered, by name, or none; to the GM answering for an NPC, that players do not see it", () => {
  const base = { attackerName: "Ulcen", defenderName: "Fenka", defenses: [{ id: "mind-blank", label: "Mind blank", selected: true }], seconds: 30 };
  const remembered = renderModuleTemplate("defense-dialog", { ...base, fallbackLabel: "Mind blank" });
  assert.match(remembered, /Only you and the GM see this\. Without an answer, Mind blank \(its last choice\) is raised in <span class="mindscape-countdown">30<\/span> s/);
  // Nothing remembered (a first attack on it): no "last defense" to speak of.
  const none = renderModuleTemplate("defense-dialog", { ...base, fallbackLabel: null });
  assert.match(none, /Without an answer, no defense is raised in/);
  assert.doesNotMatch(none, /last/);
  // The GM's own client asks for an NPC: nobody but the GM sees it.
  const npc = renderModuleTemplate("defense-dialog", { ...base, fallbackLabel: null, askedHere: true });
  assert.match(npc, /The players do not see this\. Without an answer, no defense is raised in/);
  assert.doesNotMatch(npc, /Only you/);
});

test("revised-2e: without an answer the second time, no defense is raised; a defense refused every time fails the attack after two more choices", async () => {
  const calls = [];
  const methods = defaultMethods({
    "exchange.resolve": (params) => {
      calls.push(structuredClone(params));
      if (params.defense) throw refuse("defender-cannot-act", "Fenka cannot act (stunned): it raises no defense");
      return revisedResult(params);
    },
  });
  // The timeout's answer is the dialog's fallback: null when asked again.
  const t = makeTable({ methods, dialogs: { p2: { defenseDialog: [{ mode: "thought-shield" }, (arg) => ({ mode: arg.fallback, timedOut: true })] } } });
  const [outcome] = await attackFenka(t);
  assert.equal(outcome.outcome, "hit");
  assert.deepEqual(calls.map((c) => c.defense), [{ mode: "thought-shield" }, null]);
  assert.equal(defenseDialogs(t.clients.p2).length, 2);

  const again = [];
  const stubborn = defaultMethods({ "exchange.resolve": (params) => { again.push(params); throw refuse("defender-cannot-act", "Fenka cannot act (stunned)"); } });
  const t2 = makeTable({ methods: stubborn, dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } } });
  await assert.rejects(attackFenka(t2), (e) => e instanceof RulesError && e.data.rule === "defender-cannot-act");
  assert.equal(again.length, 3, "asked at the attack, then twice more");
  assert.equal(defenseDialogs(t2.clients.p2).length, 3);
  assert.equal(t2.clients.gm.ChatMessage.created.length, 0);
  // No exchange resolved: none of the choices is remembered as the default.
  assert.equal(t2.tokens.fenkaToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("revised-2e: the questions asked again are counted for the whole attack, not per target, so that the attacker's wait stays bounded", async () => {
  const calls = [];
  const methods = defaultMethods({ "exchange.resolve": (params) => { calls.push(params); throw refuse("defender-cannot-act", "cannot act"); } });
  const t = makeTable({ methods, dialogs: { p2: { defenseDialog: { mode: "thought-shield" } }, gm: { defenseDialog: { mode: "thought-shield" } } } });
  const gm = t.clients.gm;
  const attack = gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } }, gm.game.user);
  await assert.rejects(attack, (e) => e instanceof RulesError);
  // Fenka is asked again twice and the attack fails there: the goblin's exchange is never tried.
  assert.equal(calls.length, 3);
  assert.equal(defenseDialogs(t.clients.p2).length, 3);
  assert.equal(defenseDialogs(t.clients.gm).length, 1);
});

test("revised-2e: a refusal about the attacker (not-enough-psp) or naming another creature fails the attack at once, as before", async () => {
  for (const [rule, combatant] of [["not-enough-psp", undefined], ["not-enough-psp-for-defense", "somebody-else"]]) {
    const calls = [];
    const methods = defaultMethods({ "exchange.resolve": (params) => { calls.push(params); throw refuse(rule, "refused", combatant); } });
    const t = makeTable({ methods, dialogs: { p2: { defenseDialog: { mode: "thought-shield" } } } });
    await assert.rejects(attackFenka(t), (e) => e instanceof RulesError && e.data.rule === rule);
    assert.equal(calls.length, 1, rule);
    assert.equal(defenseDialogs(t.clients.p2).length, 1, rule);
    assert.deepEqual(t.clients.gm.notes.warn, [], rule);
  }
});

test("a player's attack that the struck mind's defense stops: the GM sees the companion's reason, the attacker's player only that a mind struck stopped it", async () => {
  const cases = [
    // A defense's rule: the detail tells Fenka's PSPs, which Ulcen's player may not know.
    { error: refuse("not-enough-psp-for-defense", "Fenka needs 3 PSPs for mind-blank but holds 2"), hidden: true },
    // Naming the mind struck (whatever the rule).
    { error: refuse("target-mindless", "Fenka has no mind", "fenka-tokF"), hidden: true },
    // A defense the attack allows only in part (combat-strength: thought shield alone).
    { error: refuse("defense-shield-thoughts-only", "Fenka may raise only thought shield against this attack"), hidden: true },
    // A dead mind: the whole table sees the body, so the attacker's player is told why.
    { error: refuse("target-dead", "Fenka is dead: there is no mind left to attack", "fenka-tokF"), hidden: false },
    // The defender's sheet refused.
    { error: { code: -32602, message: "Invalid params", data: { errors: [{ path: "/defender/psp", message: "9 is more than psp_max 2" }] } }, hidden: true },
    // About the attacker: its own player may know it.
    { error: refuse("not-enough-psp", "Ulcen needs 8 PSPs but holds 5"), hidden: false },
    { error: { code: -32602, message: "Invalid params", data: { errors: [{ path: "/attack/multiplier", message: "4 is above the level" }] } }, hidden: false },
  ];
  for (const { error, hidden } of cases) {
    const methods = defaultMethods({ "exchange.resolve": () => { throw error; } });
    const t = makeTable({ methods, dialogs: { p2: { defenseDialog: { mode: "mind-blank" } } } });
    const done = await t.clients.p1.svc.startAttack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid], attack: { mode: "mind-thrust", multiplier: 1 } });
    assert.equal(done, null);
    const detail = error.data.detail ?? error.data.errors[0].message;
    const label = JSON.stringify(error.data.rule ?? error.data.errors[0].path);
    // The GM runs the table: it sees the whole refusal, once.
    assert.equal(t.clients.gm.notes.error.length, 1, label);
    assert.ok(t.clients.gm.notes.error[0].includes(detail), label);
    assert.equal(t.clients.p1.notes.error.length, 1, label);
    if (hidden) {
      assert.equal(t.clients.p1.notes.error[0], "The companion could not resolve this attack because of a mind it struck (its defense, its sheet or its state). Nothing was written; the GM has been told why.", label);
    } else {
      assert.ok(t.clients.p1.notes.error[0].includes(detail), label);
    }
    assert.equal(t.clients.gm.ChatMessage.created.length, 0, label);
  }
});

// power-pool: Ulcen (Ann's) attacks; Fenka (Bo's, an unlinked token) and the goblin (the
// GM's) are the minds struck.
const POOL = "power-pool";
const SWARM = "imagination-swarm";
const pool = (extra = {}) => ({ hit_dice: 3, die: 8, pool: 3, psionic: true, attacks: ["mental-stab", "psionic-wave"], defenses: ["pinnacle-of-will", SWARM], ...extra });
const refIds = (refs) => (refs ?? []).map(combatantIdOfRef);
const resolved = { system: POOL, winner: "defender", outcome: "defender", summary: "Rebuffed.", rolls: [], events: [], updates: [] };

async function poolTable(resolve, dialogs) {
  const calls = [];
  const methods = defaultMethods({
    "systems.describe": ({ system }) => ({
      id: system,
      modes: { attacks: [{ id: "mental-stab" }, { id: "psionic-wave", several_targets: true }], defenses: [{ id: "pinnacle-of-will" }, { id: SWARM, draws_allies: true }] },
      tables: { awareness_conditions: ["asleep"] },
      combatant_schema: { type: "object", properties: {} },
      house_rules: [],
    }),
    "adapters.import": poolImport,
    "exchange.resolve": (params) => { calls.push(structuredClone(params)); return resolve(params, calls.length); },
  });
  const t = makeTable({ methods, dialogs });
  await t.clients.gm.game.settings.set("mindscape", "ruleSystem", POOL);
  t.actors.ulcen.flags.mindscape[POOL] = pool();
  t.tokens.fenkaToken.actor.flags.mindscape[POOL] = pool();
  t.tokens.goblinToken.actor.flags.mindscape[POOL] = pool();
  // Skum: a non-psionic creature on Fenka's side, which her swarm may draw in.
  const skum = t.world.actor({ id: "skum", name: "Skum", type: "npc", disposition: 1, flags: { mindscape: { [POOL]: { psionic: false, hit_dice: 2, die: 8 } } } });
  t.world.token({ id: "tokskum", name: "Skum", actor: skum, actorLink: true });
  return { t, calls };
}

test("power-pool: a defense refused for the mind struck (the companion naming it) is chosen again, allies drawn in anew; one about the attacker fails the attack", async () => {
  const fenka = "fenka-tokF";
  const { t, calls } = await poolTable((params, n) => {
    if (n === 1) throw refuse("spell-not-memorised", "/defense/sacrifice: Fenka sacrifices a level-3 spell but has none memorised (memorised: [1])", fenka);
    return resolved;
  }, {
    p2: {
      defenseDialog: [
        (arg) => ({ mode: SWARM, sacrifice: "3", allies: arg.context.allies.map((a) => a.uuid) }),
        (arg) => ({ mode: SWARM, allies: arg.context.allies.map((a) => a.uuid) }),
      ],
    },
  });
  const [outcome] = await attackFenka(t, { mode: "mental-stab" });
  assert.equal(outcome.summary, "Rebuffed.");
  assert.deepEqual(calls.map((c) => c.defense), [{ mode: SWARM, sacrifice: 3 }, { mode: SWARM }]);
  assert.deepEqual(calls.map((c) => refIds(c.allies)), [["skum"], ["skum"]]);
  const again = defenseDialogs(t.clients.p2)[1].arg.context;
  assert.match(again.refused, /^The companion could not use the defense chosen for Fenka: Fenka sacrifices a level-3 spell but has none memorised \(memorised: \[1\]\)/);
  assert.deepEqual(again.allies.map((a) => a.name), ["Skum"], "the allies are offered again");

  // pool-dice-exceed-pool about the attacker: no defense mends it.
  const { t: t2, calls: calls2 } = await poolTable(() => { throw refuse("pool-dice-exceed-pool", "Ulcen of Tyr has 3 dice in its pool, not 5", "ulcen"); }, { p2: { defenseDialog: { mode: "pinnacle-of-will" } } });
  await assert.rejects(attackFenka(t2, { mode: "mental-stab" }), (e) => e instanceof RulesError && e.data.combatant === "ulcen");
  assert.equal(calls2.length, 1);
  assert.equal(defenseDialogs(t2.clients.p2).length, 1);
});

test("power-pool waves: only the mind the refusal names chooses again; the other minds' choices stand", async () => {
  const goblin = "goblin-tokG";
  const { t, calls } = await poolTable((params, n) => {
    if (n === 1) throw refuse("defender-unaware", "Goblin is asleep: it may defend only with a mode that works while unaware", goblin);
    return resolved;
  }, {
    p2: { defenseDialog: { mode: "pinnacle-of-will" } },
    gm: { defenseDialog: [{ mode: "pinnacle-of-will" }, { mode: null }] },
  });
  const gm = t.clients.gm;
  await gm.svc.attack({ attackerUuid: t.tokens.ulcenToken.uuid, targetUuids: [t.tokens.fenkaToken.uuid, t.tokens.goblinToken.uuid], attack: { mode: "psionic-wave" } }, gm.game.user);
  assert.equal(calls.length, 2);
  assert.deepEqual(calls.map((c) => c.defense), [{ mode: "pinnacle-of-will" }, { mode: "pinnacle-of-will" }]);
  assert.deepEqual(calls.map((c) => c.defenses), [{ [goblin]: { mode: "pinnacle-of-will" } }, { [goblin]: {} }]);
  assert.equal(defenseDialogs(t.clients.p2).length, 1, "Fenka is not asked again");
  const asked = defenseDialogs(t.clients.gm);
  assert.equal(asked.length, 2);
  assert.match(asked[1].arg.context.refused, /Goblin is asleep/);
  assert.match(t.clients.gm.notes.warn.at(-1), /refused the defense chosen for Goblin \(defender-unaware/);
  // Once the wave is resolved, the choice that stood is Fenka's default; the Goblin's,
  // refused and then asked again, is not remembered.
  assert.equal(t.tokens.fenkaToken.actor.flags.mindscape.defaultDefense?.[POOL], "pinnacle-of-will");
  assert.equal(t.tokens.goblinToken.actor.flags.mindscape.defaultDefense, undefined);
});

test("power-pool: a creature under control found nowhere is told to the GM once for the exchange, also when the mind struck chooses its defense again", async () => {
  const { t, calls } = await poolTable((params, n) => {
    if (n === 1) throw refuse("pool-dice-exceed-pool", "Fenka has 3 dice in her pool, not 5", "fenka-tokF");
    return resolved;
  }, { p2: { defenseDialog: { mode: "pinnacle-of-will" } } });
  // Ulcen, the attacker, holds "ghost", which is on no scene and not in the world.
  t.actors.ulcen.flags.mindscape[POOL].controlling = [{ id: "ghost", kept_by: "action" }];
  await attackFenka(t, { mode: "mental-stab" });
  assert.equal(calls.length, 2);
  assert.equal(defenseDialogs(t.clients.p2).length, 2);
  assert.deepEqual(t.clients.gm.notes.warn.filter((w) => w.includes("(ghost)")), [
    "Creatures under psionic control here are not on this scene or in this world (ghost): if that control ends, their sheets will not show it.",
  ]);
});
